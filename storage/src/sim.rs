//! [`SimStore`]: the production [`SledStore`] behind a simulated disk with injectable faults, for
//! the deterministic simulator and crash tests (docs/architecture.md §10); and [`SimGuardDir`], the
//! simulated directory of a signing guard file (a POSIX-like model of file contents, directory
//! entries and their fsyncs; its own docs).
//!
//! # Model
//!
//! Every mutating [`Store`] call that succeeds is one *operation*: a finalized commit, a stored
//! block, a view certificate, a prune, an evidence record, the genesis binding. sled applies each
//! of them atomically (transactions and batches), and its log is checksummed and replayed as a
//! prefix on recovery, so after a crash the database holds every operation made durable by a
//! [`Store::flush`] plus some **prefix** of the ones after it: never a later operation without an
//! earlier one, never half of one. `SimStore` models exactly that:
//!
//! - reads see every successful operation (sled serves unflushed writes from memory);
//! - [`Store::flush`] makes every operation so far durable;
//! - [`SimStore::crash`] keeps the durable operations plus a chosen prefix of the rest
//!   ([`Crash::Torn`]), or none of the rest ([`Crash::LoseUnflushed`]), and rebuilds the database
//!   from them, as a restarted process would find it.
//!
//! Faults are armed by the caller (the simulator draws them from its seeded RNG, so runs stay
//! reproducible): [`SimStore::fail_next_writes`] makes operations fail with
//! [`StoreError::Backend`] before anything is written (a failed write), and
//! [`SimStore::fail_next_flushes`] makes flushes fail, leaving the operations undurable (a failed
//! fsync). A crash disarms both: they belong to the process that died.
//! [`SimStore::lie_on_next_flushes`] plants a disk that acknowledges a flush it did not do, for
//! tests that check the simulator catches a lost final block.
//!
//! The database underneath is a real temporary [`SledStore`], so the simulator runs the same
//! storage code (transactions, ordering checks, evidence bounds) as a validator.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use quasar_crypto::hash::Hash;

use crate::evidence::EvidenceRecord;
use crate::guard::GuardDir;
use crate::store::{FinalizedBlock, SledStore, Store, StoreError, StoredBlock};

/// How much of the unflushed work survives [`SimStore::crash`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crash {
    /// Every operation since the last successful flush is lost.
    LoseUnflushed,
    /// The first `keep` operations since the last successful flush survive (all of them if there
    /// are fewer), the rest are lost: a write torn by the crash.
    Torn {
        /// Unflushed operations that reached the disk, in order.
        keep: usize,
    },
}

/// One successful mutation, kept so the database can be rebuilt after a crash.
#[derive(Debug, Clone)]
enum Operation {
    Commit(FinalizedBlock),
    Checkpoint(FinalizedBlock),
    PruneHistory(u64, u64, usize),
    PutBlock(u64, Hash, Vec<u8>),
    PutSeal(Hash, Vec<u8>),
    BindGenesis(Hash),
    PutViewCertificate(u64, u8, Vec<u8>),
    PruneViewCertificates(u64),
    PutEvidence(EvidenceRecord),
    PruneEvidence(u64),
    PutQuasarCert(u64, Vec<u8>),
    ClaimSession(u64, Hash),
    PruneSessions(u64),
}

impl Operation {
    fn apply(&self, store: &SledStore) -> Result<(), StoreError> {
        match self {
            Operation::Commit(block) => store.commit_finalized(block),
            Operation::Checkpoint(block) => store.commit_checkpoint(block),
            Operation::PruneHistory(below, keep, max) => {
                store.prune_history(*below, *keep, *max).map(|_| ())
            }
            Operation::PutBlock(height, hash, block) => store.put_block(*height, hash, block),
            Operation::PutSeal(hash, block) => store.put_seal(hash, block),
            Operation::BindGenesis(genesis) => store.bind_genesis(genesis),
            Operation::PutViewCertificate(view, kind, bytes) => {
                store.put_view_certificate(*view, *kind, bytes)
            }
            Operation::PruneViewCertificates(below) => store.prune_view_certificates(*below),
            Operation::PutEvidence(record) => store.put_evidence(record).map(|_| ()),
            Operation::PruneEvidence(below) => store.prune_evidence(*below).map(|_| ()),
            Operation::PutQuasarCert(height, bytes) => {
                store.put_quasar_cert(*height, bytes).map(|_| ())
            }
            Operation::ClaimSession(height, id) => store.claim_session(*height, id).map(|_| ()),
            Operation::PruneSessions(below) => store.prune_sessions(*below).map(|_| ()),
        }
    }
}

struct Disk {
    /// What reads see: every successful operation applied.
    live: SledStore,
    /// Operations a crash cannot take back, in order.
    durable: Vec<Operation>,
    /// Operations since the last successful flush, in order.
    pending: Vec<Operation>,
    failing_writes: u32,
    failing_flushes: u32,
    lying_flushes: u32,
}

/// A [`Store`] over a simulated disk; see the module docs. Clones share one disk.
#[derive(Clone)]
pub struct SimStore {
    disk: Arc<Mutex<Disk>>,
}

fn injected(what: &str) -> StoreError {
    StoreError::Backend(sled::Error::Io(std::io::Error::other(format!(
        "injected fault: {what}"
    ))))
}

impl SimStore {
    /// An empty store on a fresh simulated disk.
    ///
    /// Errors: [`StoreError::Backend`] if the temporary sled database cannot be created.
    pub fn new() -> Result<SimStore, StoreError> {
        Ok(SimStore {
            disk: Arc::new(Mutex::new(Disk {
                live: SledStore::temporary()?,
                durable: Vec::new(),
                pending: Vec::new(),
                failing_writes: 0,
                failing_flushes: 0,
                lying_flushes: 0,
            })),
        })
    }

    fn disk(&self) -> MutexGuard<'_, Disk> {
        // A panic while holding the lock can only come from sled itself; the state is still
        // consistent (operations are recorded after they succeed), so keep going.
        self.disk
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The next `count` mutating calls fail with [`StoreError::Backend`] and write nothing.
    /// `0` disarms.
    pub fn fail_next_writes(&self, count: u32) {
        self.disk().failing_writes = count;
    }

    /// The next `count` calls to [`Store::flush`] fail with [`StoreError::Backend`]; the
    /// operations they would have made durable stay pending. `0` disarms.
    pub fn fail_next_flushes(&self, count: u32) {
        self.disk().failing_flushes = count;
    }

    /// A disk that lies: the next `count` calls to [`Store::flush`] report success but make
    /// nothing durable. No correct node survives this; it exists so tests can plant a lost
    /// final block and check that the simulator notices. `0` disarms.
    pub fn lie_on_next_flushes(&self, count: u32) {
        self.disk().lying_flushes = count;
    }

    /// Operations since the last successful flush (what a crash may lose).
    pub fn unflushed(&self) -> usize {
        self.disk().pending.len()
    }

    /// Simulates a crash of the process using this store: keeps the durable operations and what
    /// `crash` lets through, rebuilds the database from them, and disarms every fault.
    ///
    /// Errors: [`StoreError::Backend`] if the rebuilt temporary database cannot be created;
    /// any error of replaying the kept operations (which succeeded once, so a failure here is a
    /// bug in the store and is reported rather than hidden).
    pub fn crash(&self, crash: Crash) -> Result<(), StoreError> {
        let mut disk = self.disk();
        let keep = match crash {
            Crash::LoseUnflushed => 0,
            Crash::Torn { keep } => keep.min(disk.pending.len()),
        };
        let survivors: Vec<Operation> = disk.pending.drain(..keep).collect();
        disk.durable.extend(survivors);
        disk.pending.clear();
        disk.failing_writes = 0;
        disk.failing_flushes = 0;
        disk.lying_flushes = 0;
        let live = SledStore::temporary()?;
        for operation in &disk.durable {
            operation.apply(&live)?;
        }
        disk.live = live;
        Ok(())
    }

    /// Runs `operation` against the live database unless a write fault is armed, and records it
    /// when it succeeds.
    fn write<T>(
        &self,
        operation: Operation,
        run: impl FnOnce(&SledStore) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut disk = self.disk();
        if disk.failing_writes > 0 {
            disk.failing_writes -= 1;
            return Err(injected("write failed"));
        }
        let out = run(&disk.live)?;
        disk.pending.push(operation);
        Ok(out)
    }
}

impl Store for SimStore {
    fn commit_finalized(&self, block: &FinalizedBlock) -> Result<(), StoreError> {
        self.write(Operation::Commit(block.clone()), |s| {
            s.commit_finalized(block)
        })
    }

    fn commit_checkpoint(&self, block: &FinalizedBlock) -> Result<(), StoreError> {
        self.write(Operation::Checkpoint(block.clone()), |s| {
            s.commit_checkpoint(block)
        })
    }

    fn history_floor(&self) -> Result<u64, StoreError> {
        self.disk().live.history_floor()
    }

    fn prune_history(
        &self,
        below_height: u64,
        keep_every: u64,
        max_entries: usize,
    ) -> Result<u64, StoreError> {
        self.write(
            Operation::PruneHistory(below_height, keep_every, max_entries),
            |s| s.prune_history(below_height, keep_every, max_entries),
        )
    }

    fn finalized_tip(&self) -> Result<Option<(u64, Hash)>, StoreError> {
        self.disk().live.finalized_tip()
    }

    fn block_by_height(&self, height: u64) -> Result<Option<StoredBlock>, StoreError> {
        self.disk().live.block_by_height(height)
    }

    fn block_by_hash(&self, hash: &Hash) -> Result<Option<Vec<u8>>, StoreError> {
        self.disk().live.block_by_hash(hash)
    }

    fn put_block(&self, height: u64, hash: &Hash, block: &[u8]) -> Result<(), StoreError> {
        self.write(Operation::PutBlock(height, *hash, block.to_vec()), |s| {
            s.put_block(height, hash, block)
        })
    }

    fn put_seal(&self, hash: &Hash, block: &[u8]) -> Result<(), StoreError> {
        self.write(Operation::PutSeal(*hash, block.to_vec()), |s| {
            s.put_seal(hash, block)
        })
    }

    fn tx_height(&self, tx_hash: &Hash) -> Result<Option<u64>, StoreError> {
        self.disk().live.tx_height(tx_hash)
    }

    fn flush(&self) -> Result<(), StoreError> {
        let mut disk = self.disk();
        if disk.failing_flushes > 0 {
            disk.failing_flushes -= 1;
            return Err(injected("flush (fsync) failed"));
        }
        if disk.lying_flushes > 0 {
            disk.lying_flushes -= 1;
            return Ok(());
        }
        let flushed: Vec<Operation> = disk.pending.drain(..).collect();
        disk.durable.extend(flushed);
        Ok(())
    }

    fn bind_genesis(&self, genesis: &Hash) -> Result<(), StoreError> {
        // sled's binding flushes; replaying it after a crash is a check that cannot fail.
        self.write(Operation::BindGenesis(*genesis), |s| {
            s.bind_genesis(genesis)
        })?;
        self.flush()
    }

    fn is_empty(&self) -> Result<bool, StoreError> {
        self.disk().live.is_empty()
    }

    fn put_view_certificate(
        &self,
        view: u64,
        kind: u8,
        certificate: &[u8],
    ) -> Result<(), StoreError> {
        self.write(
            Operation::PutViewCertificate(view, kind, certificate.to_vec()),
            |s| s.put_view_certificate(view, kind, certificate),
        )
    }

    fn view_certificates(&self) -> Result<Vec<Vec<u8>>, StoreError> {
        self.disk().live.view_certificates()
    }

    fn prune_view_certificates(&self, below_view: u64) -> Result<(), StoreError> {
        self.write(Operation::PruneViewCertificates(below_view), |s| {
            s.prune_view_certificates(below_view)
        })
    }

    fn put_evidence(&self, record: &EvidenceRecord) -> Result<bool, StoreError> {
        self.write(Operation::PutEvidence(record.clone()), |s| {
            s.put_evidence(record)
        })
    }

    fn evidence(&self, limit: usize, from_view: u64) -> Result<Vec<EvidenceRecord>, StoreError> {
        self.disk().live.evidence(limit, from_view)
    }

    fn evidence_count(&self) -> Result<u64, StoreError> {
        self.disk().live.evidence_count()
    }

    fn prune_evidence(&self, below_view: u64) -> Result<u64, StoreError> {
        self.write(Operation::PruneEvidence(below_view), |s| {
            s.prune_evidence(below_view)
        })
    }

    fn put_quasar_cert(&self, height: u64, certificate: &[u8]) -> Result<bool, StoreError> {
        self.write(
            Operation::PutQuasarCert(height, certificate.to_vec()),
            |s| s.put_quasar_cert(height, certificate),
        )
    }

    fn quasar_cert_from(&self, height: u64) -> Result<Option<(u64, Vec<u8>)>, StoreError> {
        self.disk().live.quasar_cert_from(height)
    }

    fn claim_session(&self, height: u64, session: &Hash) -> Result<bool, StoreError> {
        self.write(Operation::ClaimSession(height, *session), |s| {
            s.claim_session(height, session)
        })
    }

    fn quasar_tip(&self) -> Result<Option<u64>, StoreError> {
        self.disk().live.quasar_tip()
    }

    fn prune_sessions(&self, below_height: u64) -> Result<u64, StoreError> {
        self.write(Operation::PruneSessions(below_height), |s| {
            s.prune_sessions(below_height)
        })
    }
}

/// The files of a directory on a simulated disk: what the running process sees, or what a
/// crash keeps. Contents belong to inodes, so a rename moves a file without copying it and a
/// file's contents and its directory entry become durable separately, as on a POSIX file
/// system.
#[derive(Debug, Clone, Default)]
struct Files {
    /// Directory entries: name → inode.
    names: BTreeMap<String, u64>,
    /// Inode contents (an inode missing here is empty).
    data: BTreeMap<u64, Vec<u8>>,
}

#[derive(Debug, Default)]
struct GuardDisk {
    /// What reads see: every write, rename and truncation so far.
    live: Files,
    /// What a crash keeps: file contents as of their last fsync, entries as of the last
    /// directory fsync.
    durable: Files,
    /// A lying disk's ([`SimGuardDir::lagging`]) state after the last fsync it acknowledged,
    /// which it makes durable only at the next one.
    ahead: Option<Files>,
    lagging: bool,
    next_inode: u64,
    /// [`SimGuardDir::fail_operation`]: operations to let through before one fails.
    fail_after: Option<u32>,
}

impl GuardDisk {
    /// Applies one fsync (`sync` to a durable state): at once on an honest disk, one fsync late
    /// on a lagging one.
    fn sync(&mut self, sync: impl FnOnce(&mut Files, &Files)) {
        if self.lagging {
            // This fsync's effect waits for the next one; the previous one's lands now.
            let mut next = self.ahead.clone().unwrap_or_else(|| self.durable.clone());
            sync(&mut next, &self.live);
            if let Some(previous) = self.ahead.replace(next) {
                self.durable = previous;
            }
        } else {
            sync(&mut self.durable, &self.live);
        }
    }

    /// Counts one file operation against an armed fault: `Err` for the one that fails.
    fn operation(&mut self) -> std::io::Result<()> {
        match self.fail_after {
            Some(0) => {
                self.fail_after = None;
                Err(std::io::Error::other(
                    "injected fault: the guard file operation failed",
                ))
            }
            Some(left) => {
                self.fail_after = Some(left - 1);
                Ok(())
            }
            None => Ok(()),
        }
    }

    fn inode(&self, name: &str) -> std::io::Result<u64> {
        self.live.names.get(name).copied().ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("{name}: no such file"),
            )
        })
    }
}

/// A [`GuardDir`] on a simulated disk, for the simulator's signing guards: the guard's real
/// write path (tmp file, fsync, rename, directory fsync, [`crate::SigningGuard`]) runs against
/// it, and [`SimGuardDir::crash`] keeps only what those fsyncs made durable, plus, for
/// [`Crash::Torn`], a prefix of each file written since its last fsync (a torn write). A new
/// one is an empty directory (a new or wiped data directory). Clones share one disk, so the
/// directory outlives the guard that a crashed process held.
#[derive(Debug, Clone, Default)]
pub struct SimGuardDir {
    disk: Arc<Mutex<GuardDisk>>,
}

impl SimGuardDir {
    /// An empty directory on an honest disk.
    pub fn new() -> SimGuardDir {
        SimGuardDir::default()
    }

    /// An empty directory on a disk that acknowledges each fsync before it is done and makes
    /// it durable only at the next one, so a crash loses the last write that was reported
    /// durable. No guard is safe on it; it exists so tests can show the simulator's checker
    /// catches a lost guard record.
    pub fn lagging() -> SimGuardDir {
        let dir = SimGuardDir::default();
        dir.disk().lagging = true;
        dir
    }

    fn disk(&self) -> MutexGuard<'_, GuardDisk> {
        self.disk
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Fault injection: after `after` more successful file operations (write, fsync, rename,
    /// directory fsync; reads do not count), the next one fails with an I/O error and does
    /// nothing, as a failed write, fsync or rename does. A crash disarms it.
    pub fn fail_operation(&self, after: u32) {
        self.disk().fail_after = Some(after);
    }

    /// Disarms [`SimGuardDir::fail_operation`].
    pub fn disarm(&self) {
        self.disk().fail_after = None;
    }

    /// Whether file `name` exists (as the running process sees it).
    pub fn contains(&self, name: &str) -> bool {
        self.disk().live.names.contains_key(name)
    }

    /// Simulates a crash of the process using this directory: keeps what was made durable and
    /// what `crash` lets through ([`Crash::Torn`]'s `keep` counts bytes here: each file written
    /// since its last fsync keeps at most that many of its first bytes), drops everything
    /// else, including what a lagging disk had acknowledged but not written.
    pub fn crash(&self, crash: Crash) {
        let mut disk = self.disk();
        disk.ahead = None;
        disk.fail_after = None;
        if let Crash::Torn { keep } = crash {
            let torn: Vec<(u64, Vec<u8>)> = disk
                .live
                .data
                .iter()
                .filter(|(inode, bytes)| disk.durable.data.get(inode) != Some(bytes))
                .map(|(inode, bytes)| (*inode, bytes.iter().take(keep).copied().collect()))
                .collect();
            disk.durable.data.extend(torn);
        }
        let durable = &disk.durable;
        let names = durable.names.clone();
        let data = names
            .values()
            .filter_map(|inode| Some((*inode, durable.data.get(inode)?.clone())))
            .collect();
        disk.durable = Files { names, data };
        disk.live = disk.durable.clone();
    }
}

impl GuardDir for SimGuardDir {
    fn read(&mut self, name: &str, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
        let disk = self.disk();
        Ok(disk.live.names.get(name).map(|inode| {
            let bytes = disk.live.data.get(inode).map_or(&[][..], Vec::as_slice);
            let limit = usize::try_from(limit).unwrap_or(usize::MAX);
            bytes.iter().take(limit).copied().collect()
        }))
    }

    fn write(&mut self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        let mut disk = self.disk();
        disk.operation()?;
        let inode = match disk.live.names.get(name) {
            Some(inode) => *inode,
            None => {
                let inode = disk.next_inode;
                disk.next_inode += 1;
                disk.live.names.insert(name.to_string(), inode);
                inode
            }
        };
        disk.live.data.insert(inode, bytes.to_vec());
        Ok(())
    }

    fn sync_file(&mut self, name: &str) -> std::io::Result<()> {
        let mut disk = self.disk();
        disk.operation()?;
        let inode = disk.inode(name)?;
        disk.sync(|durable, live| {
            if let Some(bytes) = live.data.get(&inode) {
                durable.data.insert(inode, bytes.clone());
            }
        });
        Ok(())
    }

    fn rename(&mut self, from: &str, to: &str) -> std::io::Result<()> {
        let mut disk = self.disk();
        disk.operation()?;
        let inode = disk.inode(from)?;
        disk.live.names.remove(from);
        disk.live.names.insert(to.to_string(), inode);
        Ok(())
    }

    fn sync_dir(&mut self) -> std::io::Result<()> {
        let mut disk = self.disk();
        disk.operation()?;
        disk.sync(|durable, live| durable.names = live.names.clone());
        // Inodes no directory entry can reach any more are gone.
        let GuardDisk {
            live,
            durable,
            ahead,
            ..
        } = &mut *disk;
        let reachable: std::collections::BTreeSet<u64> = live
            .names
            .values()
            .chain(durable.names.values())
            .chain(ahead.iter().flat_map(|files| files.names.values()))
            .copied()
            .collect();
        for files in [live, durable].into_iter().chain(ahead.as_mut()) {
            files.data.retain(|inode, _| reachable.contains(inode));
        }
        Ok(())
    }
}
