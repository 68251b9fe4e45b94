//! The block store: the [`Store`] trait and its sled backend [`SledStore`] (docs/architecture.md §6).
//!
//! # Layout
//!
//! One sled database with these trees, and beside it, in the store's directory, the folder
//! `block-files` with each encoded block in a file named by its hash (sled rewrites the leaves
//! holding its values many times, and a block is megabytes; the write and delete order that
//! keeps the index from naming a partial file is in `block_files`). Heights are 8-byte
//! big-endian keys, so sled's key order is height order.
//!
//! | tree      | key                 | value                                             |
//! |-----------|---------------------|---------------------------------------------------|
//! | `blocks`  | block hash (32 B)   | length (u64 BE) and CRC-32 (u32 BE) of the block's file: the encoded block (finalized or merely notarized) |
//! | `pending` | height (u64 BE) ‖ block hash (32 B) | empty: a block stored by [`Store::put_block`] |
//! | `seals`   | block hash (32 B)   | empty: the block is a seal, kept with its boundary block |
//! | `heights` | height (u64 BE)     | hash of the finalized block at that height (32 B) |
//! | `certs`   | height (u64 BE)     | encoded certificate that finalized that height    |
//! | `txs`     | tx hash (32 B)      | height (u64 BE) of the finalized block holding it |
//! | `block_txs` | height (u64 BE)   | the block's tx hashes, 32 B each (to prune `txs`) |
//! | `meta`    | `finalized`         | finalized tip: height (u64 BE) ‖ hash (32 B)      |
//! | `meta`    | `genesis`           | genesis hash the store is bound to (32 B)         |
//! | `view_certs` | view (u64 BE) ‖ kind | certificate of a view above the finalized tip  |
//! | `evidence` | view (u64 BE) ‖ signer (u32 BE) ‖ kind | an [`EvidenceRecord`] (see [`crate::evidence`]) |
//! | `quasar`  | height (u64 BE)     | verified QuasarCert of the bundle that ends at that height |
//! | `sessions` | height (u64 BE) ‖ session id (32 B) | empty: a threshold-signing session this validator took part in |
//! | `meta`    | `sessions_floor`    | claims below this height (u64 BE) are pruned and refused |
//! | `meta`    | `history_floor`     | every finalized height from this one (u64 BE) to the tip is stored |
//! | `state`   | see [`crate::state`] | the application's authenticated state ([`SledStore::state`]) |
//!
//! # Guarantees
//!
//! - [`Store::commit_finalized`] writes a height's entries in every tree in one sled transaction:
//!   a crash leaves either none or all of them, and the finalized pointer never points past the
//!   index. Two writes go before that transaction: the block's file, and its transactions'
//!   `txs` entries as one batch (inside a sled transaction each insert reads its key first,
//!   which made those entries most of a large block's commit). An entry whose height the
//!   finalized pointer has not reached reads as absent ([`Store::tx_height`]), so a crash
//!   between leaves nothing visible; at most the entries of the one block whose commit it cut
//!   short stay unpruned when that height is later skipped by a checkpoint.
//! - Heights are committed densely and in order (1, 2, 3, …); anything else is
//!   [`StoreError::OutOfOrder`]. The one exception is a checkpoint
//!   ([`Store::commit_checkpoint`]): a finalized epoch boundary above a gap, for a node that
//!   joins after its peers pruned the blocks in between. From the **history floor**
//!   ([`Store::history_floor`]) to the tip every height is stored; below it only what was kept.
//! - A stored value with the wrong length is reported as [`StoreError::Corrupt`], never a panic.
//! - Durability: sled makes writes durable on [`Store::flush`] (and periodically in the background).
//!   The signing guard does *not* rely on this; see [`crate::guard`].
//!
//! Equivocation evidence is a bounded log of its own, described in [`crate::evidence`]. Session
//! claims ([`Store::prune_sessions`]) and history ([`Store::prune_history`]: finalized blocks,
//! their certificates, their transaction index and QuasarCerts, except the epoch boundary
//! blocks and seals a late joiner needs, and blocks that were never finalized) are pruned by
//! epoch.

use std::path::Path;

use quasar_crypto::hash::Hash;

use crate::block_files::{BlockFiles, FileIndex};
use crate::evidence::{EvidenceError, EvidenceLog, EvidenceRecord};
use crate::state::StateStore;
use sled::transaction::{ConflictableTransactionError, TransactionError};
use sled::Transactional;

/// Key of the finalized pointer in the `meta` tree.
const FINALIZED_KEY: &[u8] = b"finalized";

/// Key of the genesis hash the store is bound to, in the `meta` tree.
const GENESIS_KEY: &[u8] = b"genesis";

/// Key of the pruned line of the `sessions` tree (u64 BE), in the `meta` tree.
const SESSIONS_FLOOR_KEY: &[u8] = b"sessions_floor";

/// Key of the history floor (u64 BE), in the `meta` tree: every finalized height from it up to
/// the tip is stored.
const HISTORY_FLOOR_KEY: &[u8] = b"history_floor";

fn view_key(view: u64, kind: u8) -> [u8; 9] {
    let mut key = [0u8; 9];
    key[..8].copy_from_slice(&view.to_be_bytes());
    key[8] = kind;
    key
}

/// Key of the `pending` tree: height (u64 BE) ‖ block hash.
fn pending_key(height: u64, hash: &Hash) -> [u8; 40] {
    let mut key = [0u8; 40];
    let (h, rest) = key.split_at_mut(8);
    h.copy_from_slice(&height.to_be_bytes());
    rest.copy_from_slice(hash);
    key
}

pub(crate) fn hex_string(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Why a store operation failed. Every variant except [`StoreError::OutOfOrder`] and
/// [`StoreError::Evidence`] is fatal: the node must stop rather than run on a store it cannot
/// trust.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The sled backend failed (I/O error, or sled detected corruption). Fatal.
    #[error("storage backend error (fatal): {0}")]
    Backend(#[from] sled::Error),
    /// [`Store::commit_finalized`] was called for a height that does not directly follow the
    /// finalized tip. A caller bug, not data loss; nothing was written.
    #[error("out-of-order commit: expected height {expected}, got {got}")]
    OutOfOrder {
        /// The only height that may be committed next (tip + 1, or 1 on an empty store).
        expected: u64,
        /// The height that was offered.
        got: u64,
    },
    /// A block file could not be created, written, synced, read or deleted (the encoded blocks
    /// are files beside the sled index; module docs). Fatal, like a sled failure.
    #[error("block file error (fatal): {0}")]
    Files(String),
    /// A stored value is malformed (wrong length) or an index points at a missing entry. Fatal.
    #[error("store corrupt (fatal): {0}")]
    Corrupt(String),
    /// The store was created for another genesis (chain). Fatal: point the node at its own data
    /// directory.
    #[error("store belongs to genesis {stored}, not {expected} (fatal)")]
    WrongGenesis {
        /// Hex of the genesis hash recorded in the store.
        stored: String,
        /// Hex of the genesis hash this node runs.
        expected: String,
    },
    /// An evidence record is malformed: on write, a record over the bounds of
    /// [`crate::evidence`] (nothing was written); on read, a corrupt stored record. Not fatal:
    /// evidence is never on the consensus path.
    #[error("bad evidence record: {0}")]
    Evidence(#[from] EvidenceError),
}

impl StoreError {
    /// Whether [`SledStore::open`] failed because another process holds sled's exclusive lock
    /// on the database (another node on the same data directory). sled 0.34 reports that as an
    /// I/O error whose message starts "could not acquire lock on", which is what this matches.
    pub fn is_locked(&self) -> bool {
        matches!(self, StoreError::Backend(sled::Error::Io(e))
            if e.to_string().starts_with("could not acquire lock on"))
    }
}

/// A block being finalized, with everything [`Store::commit_finalized`] indexes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinalizedBlock {
    /// Height of the block, starting at 1.
    pub height: u64,
    /// Hash of the block (computed by the caller; storage does not decode blocks).
    pub hash: Hash,
    /// The encoded block.
    pub block: Vec<u8>,
    /// The encoded certificate (QuasarCert) that finalized it.
    pub certificate: Vec<u8>,
    /// Hashes of the transactions the block contains, for [`Store::tx_height`].
    pub tx_hashes: Vec<Hash>,
}

/// A finalized block as read back by height.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredBlock {
    /// Height of the block.
    pub height: u64,
    /// Hash of the block.
    pub hash: Hash,
    /// The encoded block.
    pub block: Vec<u8>,
    /// The encoded certificate that finalized it.
    pub certificate: Vec<u8>,
}

/// Persistent storage of blocks, certificates and the finalized index (docs/architecture.md §6).
///
/// Implementations are shared between threads. Every method returns [`StoreError`]; all errors but
/// [`StoreError::OutOfOrder`] are fatal.
pub trait Store: Send + Sync {
    /// Persists a finalized block: block bytes by hash, height→hash index, the certificate that
    /// finalized it, each tx hash → height, and the finalized pointer, atomically.
    ///
    /// Heights must be committed in order: `block.height` must be the finalized tip's height + 1,
    /// or 1 when nothing is finalized yet; otherwise [`StoreError::OutOfOrder`] and nothing is
    /// written (so re-committing the tip is also `OutOfOrder`).
    fn commit_finalized(&self, block: &FinalizedBlock) -> Result<(), StoreError>;

    /// Persists a finalized block above a gap, like [`Store::commit_finalized`] but without its
    /// ancestors: a **checkpoint**, the boundary block of an epoch whose blocks the peers have
    /// pruned (the caller verified its finalization). `block.height` must be above the
    /// finalized tip (or ≥ 1 on an empty store), else [`StoreError::OutOfOrder`] and nothing is
    /// written; above a gap the history floor moves up to `block.height`, in the same
    /// transaction.
    fn commit_checkpoint(&self, block: &FinalizedBlock) -> Result<(), StoreError>;

    /// The history floor: every finalized height from it up to the tip is stored (1 when
    /// nothing was pruned or skipped). Below it only the heights kept by
    /// [`Store::prune_history`] and earlier checkpoints remain.
    fn history_floor(&self) -> Result<u64, StoreError>;

    /// Prunes the history below `below_height` (clamped to the finalized tip, which always
    /// stays): finalized blocks, their certificates and transaction index entries, except
    /// heights that are multiples of `keep_every` (the epoch boundary blocks, with their
    /// certificates, which late joiners walk; 0 keeps none), blocks stored by
    /// [`Store::put_block`] that were not finalized (seals excepted), and every QuasarCert
    /// closing below the line. The history floor moves up to the line at once; the entries go
    /// lowest first, at most `max_entries` of each kind per call (so a large epoch is pruned in
    /// steps, between other writes): call again until it returns 0. Returns how many entries
    /// it removed. A crash midway leaves unreachable entries at worst, never a dangling index;
    /// a later call removes them.
    fn prune_history(
        &self,
        below_height: u64,
        keep_every: u64,
        max_entries: usize,
    ) -> Result<u64, StoreError>;

    /// The finalized tip `(height, hash)`, or `None` when nothing has been finalized.
    fn finalized_tip(&self) -> Result<Option<(u64, Hash)>, StoreError>;

    /// The finalized block at `height` with its certificate, or `None` above the tip.
    /// [`StoreError::Corrupt`] if the index points at a missing block or certificate.
    fn block_by_height(&self, height: u64) -> Result<Option<StoredBlock>, StoreError>;

    /// The encoded block with this hash, finalized or not, or `None` if unknown.
    fn block_by_hash(&self, hash: &Hash) -> Result<Option<Vec<u8>>, StoreError>;

    /// Stores a not-yet-finalized (e.g. notarized) block of `height`, kept so a restarted node
    /// can serve it. Overwrites any block stored under the same hash. Unless it is finalized at
    /// that height or kept as a seal ([`Store::put_seal`]), it goes when
    /// [`Store::prune_history`] passes its height.
    fn put_block(&self, height: u64, hash: &Hash, block: &[u8]) -> Result<(), StoreError>;

    /// Stores a seal (a block above an epoch's boundary block that finalized it, docs/architecture.md §2)
    /// for as long as the boundary block is kept: pruning never removes it.
    fn put_seal(&self, hash: &Hash, block: &[u8]) -> Result<(), StoreError>;

    /// Height of the finalized block containing the transaction, or `None` if not finalized.
    fn tx_height(&self, tx_hash: &Hash) -> Result<Option<u64>, StoreError>;

    /// Makes everything written so far durable (sled flush, fsync of the log).
    fn flush(&self) -> Result<(), StoreError>;

    /// Ties the store to one chain: on first use records `genesis` durably; afterwards checks it.
    /// Errors: [`StoreError::WrongGenesis`] when the store belongs to another genesis.
    fn bind_genesis(&self, genesis: &Hash) -> Result<(), StoreError>;

    /// Whether the store holds nothing at all (no genesis bound, no block).
    fn is_empty(&self) -> Result<bool, StoreError>;

    /// Keeps a certificate of a view above the finalized tip (`kind` distinguishes the
    /// notarization, finalization and nullification of one view), so a restarted node can still
    /// justify proposals across those views. Overwrites the same (view, kind).
    fn put_view_certificate(
        &self,
        view: u64,
        kind: u8,
        certificate: &[u8],
    ) -> Result<(), StoreError>;

    /// Every kept view certificate, in (view, kind) order.
    fn view_certificates(&self) -> Result<Vec<Vec<u8>>, StoreError>;

    /// Drops the view certificates of views below `view`.
    fn prune_view_certificates(&self, below_view: u64) -> Result<(), StoreError>;

    /// Stores equivocation evidence under (view, signer, kind), overwriting a record already
    /// there, then enforces the log's bounds (at most
    /// [`crate::evidence::MAX_EVIDENCE_RECORDS`] records and
    /// [`crate::evidence::MAX_EVIDENCE_BYTES`] bytes) by dropping the oldest views.
    ///
    /// Returns `true` when the record is new and was kept; `false` for an overwrite, or for a
    /// record older than everything in a full log (which is dropped at once).
    /// Errors: [`StoreError::Evidence`] for an unknown kind or a message over
    /// [`crate::evidence::MAX_EVIDENCE_MESSAGE_LEN`] (nothing written); [`StoreError::Backend`].
    fn put_evidence(&self, record: &EvidenceRecord) -> Result<bool, StoreError>;

    /// Up to `limit` evidence records with view ≥ `from_view`, ascending by view (then signer,
    /// kind).
    /// Errors: [`StoreError::Evidence`] when a stored record is corrupt; [`StoreError::Backend`].
    fn evidence(&self, limit: usize, from_view: u64) -> Result<Vec<EvidenceRecord>, StoreError>;

    /// Number of evidence records stored (at most [`crate::evidence::MAX_EVIDENCE_RECORDS`]).
    fn evidence_count(&self) -> Result<u64, StoreError>;

    /// Drops the evidence of views below `below_view` (their epochs are past retention);
    /// returns how many records went.
    fn prune_evidence(&self, below_view: u64) -> Result<u64, StoreError>;

    /// Keeps the verified QuasarCert (docs/architecture.md §3) of the bundle that ends at finalized
    /// `height`. The first certificate stored for a height stays: returns `true` when this one
    /// was stored, `false` when the height already had one (nothing written). The caller
    /// verifies the certificate; storage does not decode it.
    fn put_quasar_cert(&self, height: u64, certificate: &[u8]) -> Result<bool, StoreError>;

    /// The QuasarCert stored at the lowest height ≥ `height`, with that height, or `None`.
    /// (Bundles are consecutive, so this is the certificate that would cover `height`.)
    fn quasar_cert_from(&self, height: u64) -> Result<Option<(u64, Vec<u8>)>, StoreError>;

    /// The highest height with a stored QuasarCert, or `None`.
    fn quasar_tip(&self) -> Result<Option<u64>, StoreError>;

    /// Records that this validator takes part in threshold-signing session `session` of the
    /// bundle closing at `height` (a party must never answer two sessions with one id, even
    /// across a restart): `true` the first time, `false` when it was recorded before (nothing
    /// written, and always for a height below the pruned line of [`Store::prune_sessions`]).
    /// Flush before sending anything of the session.
    fn claim_session(&self, height: u64, session: &Hash) -> Result<bool, StoreError>;

    /// Forgets the session claims of bundles closing below `below_height` (their epochs are
    /// past retention) and refuses every later claim below that line, so no session id is
    /// ever answered twice. Returns how many claims were removed. A lower line than an earlier
    /// call's changes nothing.
    fn prune_sessions(&self, below_height: u64) -> Result<u64, StoreError>;
}

/// [`Store`] on a sled database (see the module docs for the layout).
#[derive(Debug, Clone)]
pub struct SledStore {
    db: sled::Db,
    /// The encoded blocks ([`crate::block_files`]); `blocks` indexes them.
    files: std::sync::Arc<BlockFiles>,
    blocks: sled::Tree,
    heights: sled::Tree,
    certs: sled::Tree,
    txs: sled::Tree,
    block_txs: sled::Tree,
    pending: sled::Tree,
    seals: sled::Tree,
    meta: sled::Tree,
    view_certs: sled::Tree,
    quasar: sled::Tree,
    sessions: sled::Tree,
    evidence: EvidenceLog,
}

/// The directory of block files inside the store's directory ([`crate::block_files`]).
const BLOCK_FILES_DIR: &str = "block-files";

/// sled's page cache bound (its default is 1 GiB, far more than a validator's hot set).
const CACHE_BYTES: u64 = 64 * 1024 * 1024;

impl SledStore {
    /// Opens (or creates) the database in the directory `path`.
    ///
    /// Errors: [`StoreError::Corrupt`] for a damaged database (sled reports it, or stops with a
    /// panic while it recovers its log: caught here, so a damaged file is an error, never a
    /// crash); [`StoreError::Backend`] if sled cannot open it otherwise (I/O error, lock held
    /// by another process).
    pub fn open(path: &Path) -> Result<SledStore, StoreError> {
        let config = sled::Config::new().path(path).cache_capacity(CACHE_BYTES);
        let damaged = |why: String| {
            StoreError::Corrupt(format!(
                "the database in {} is damaged: {why}",
                path.display()
            ))
        };
        let opened = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| config.open()))
            .map_err(|panic| {
                let message = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("no message");
                damaged(format!("sled stopped while reading it ({message})"))
            })?;
        let db = opened.map_err(|e| match e {
            sled::Error::Corruption { .. } => damaged(e.to_string()),
            other => StoreError::Backend(other),
        })?;
        Self::from_db(db, BlockFiles::open(path.join(BLOCK_FILES_DIR))?)
    }

    /// A store in a temporary directory that sled deletes on drop. For tests and the simulator.
    ///
    /// Errors: [`StoreError::Backend`] if sled cannot create it.
    pub fn temporary() -> Result<SledStore, StoreError> {
        // No background flusher thread: nothing here needs durability, and a simulation may
        // hold hundreds of these.
        let db = sled::Config::new()
            .temporary(true)
            .flush_every_ms(None)
            .open()?;
        Self::from_db(db, BlockFiles::temporary()?)
    }

    /// The application state's store in this database ([`StateStore`]).
    ///
    /// Errors: [`StoreError::Backend`] if sled cannot open its tree.
    pub fn state(&self) -> Result<StateStore, StoreError> {
        StateStore::open(&self.db)
    }

    /// The hashes of the transactions of the finalized block at `height`, in block order, as
    /// [`Store::commit_finalized`] indexed them (empty for a block without transactions, or
    /// one not stored). Reading them costs no hashing.
    ///
    /// Errors: [`StoreError::Backend`]; [`StoreError::Corrupt`] for an entry that is not a
    /// whole number of hashes.
    pub fn block_tx_hashes(&self, height: u64) -> Result<Vec<Hash>, StoreError> {
        let Some(list) = self.block_txs.get(height.to_be_bytes())? else {
            return Ok(Vec::new());
        };
        let corrupt = || {
            StoreError::Corrupt(format!(
                "block_txs[{height}] is {} bytes, not a whole number of hashes",
                list.len()
            ))
        };
        if list.len() % 32 != 0 {
            return Err(corrupt());
        }
        list.chunks_exact(32)
            .map(|hash| Hash::try_from(hash).map_err(|_| corrupt()))
            .collect()
    }

    /// Stores the encoded `block` of `hash` as its file, then its index entry (its length), unless
    /// the index already holds it: a block stored when it was proposed or received is not
    /// written again when it is finalized.
    fn put_block_file(&self, hash: &Hash, block: &[u8]) -> Result<(), StoreError> {
        let index = FileIndex::of(block).to_bytes();
        if self.blocks.get(hash)?.as_deref() == Some(&index[..]) {
            return Ok(());
        }
        self.files.put(hash, block)?;
        self.blocks.insert(hash, &index[..])?;
        Ok(())
    }

    /// The encoded block of `hash`, if the index holds it.
    fn block_file(&self, hash: &Hash) -> Result<Option<Vec<u8>>, StoreError> {
        let Some(entry) = self.blocks.get(hash)? else {
            return Ok(None);
        };
        let index = FileIndex::from_bytes(&entry).ok_or_else(|| {
            StoreError::Corrupt(format!(
                "blocks[{}]: expected the {}-byte length and checksum of a block file, found {} \
                 bytes (a store written before blocks moved to files: start with an empty data \
                 directory)",
                hex_string(hash),
                FileIndex::LEN,
                entry.len()
            ))
        })?;
        self.files.get(hash, index).map(Some)
    }

    /// How many block files the store's directory holds (files of pruned blocks are deleted at
    /// the flush after the prune).
    ///
    /// Errors: [`StoreError::Files`].
    pub fn block_file_count(&self) -> Result<usize, StoreError> {
        self.files.count()
    }

    fn from_db(db: sled::Db, files: BlockFiles) -> Result<SledStore, StoreError> {
        Ok(SledStore {
            files: std::sync::Arc::new(files),
            blocks: db.open_tree("blocks")?,
            heights: db.open_tree("heights")?,
            certs: db.open_tree("certs")?,
            txs: db.open_tree("txs")?,
            block_txs: db.open_tree("block_txs")?,
            pending: db.open_tree("pending")?,
            seals: db.open_tree("seals")?,
            meta: db.open_tree("meta")?,
            view_certs: db.open_tree("view_certs")?,
            quasar: db.open_tree("quasar")?,
            sessions: db.open_tree("sessions")?,
            evidence: EvidenceLog::open(db.open_tree("evidence")?)?,
            db,
        })
    }
}

/// The height a commit of `height` expects next after the finalized `tip` (1 on an empty
/// store): `height` itself must be it, or, for a `checkpoint`, at least it.
///
/// Errors: [`StoreError::OutOfOrder`] for any other height; [`StoreError::Corrupt`] for a tip
/// at `u64::MAX`.
fn next_height(tip: Option<(u64, Hash)>, height: u64, checkpoint: bool) -> Result<u64, StoreError> {
    let expected = match tip {
        Some((h, _)) => h
            .checked_add(1)
            .ok_or_else(|| StoreError::Corrupt("finalized height is u64::MAX".into()))?,
        None => 1,
    };
    let in_order = if checkpoint {
        height >= expected
    } else {
        height == expected
    };
    if !in_order {
        return Err(StoreError::OutOfOrder {
            expected,
            got: height,
        });
    }
    Ok(expected)
}

/// Decodes a 32-byte hash value, naming `what` in the corruption report.
fn decode_hash(value: &[u8], what: &str) -> Result<Hash, StoreError> {
    Hash::try_from(value).map_err(|_| {
        StoreError::Corrupt(format!(
            "{what}: expected a 32-byte hash, found {} bytes",
            value.len()
        ))
    })
}

/// Decodes an 8-byte big-endian height value.
fn decode_height(value: &[u8], what: &str) -> Result<u64, StoreError> {
    <[u8; 8]>::try_from(value)
        .map(u64::from_be_bytes)
        .map_err(|_| {
            StoreError::Corrupt(format!(
                "{what}: expected an 8-byte height, found {} bytes",
                value.len()
            ))
        })
}

/// Decodes the finalized pointer: height (u64 BE) ‖ hash (32 B).
fn decode_tip(value: &[u8]) -> Result<(u64, Hash), StoreError> {
    let corrupt = || {
        StoreError::Corrupt(format!(
            "finalized pointer: expected 40 bytes, found {}",
            value.len()
        ))
    };
    let (height, hash) = value.split_first_chunk::<8>().ok_or_else(corrupt)?;
    let hash = Hash::try_from(hash).map_err(|_| corrupt())?;
    Ok((u64::from_be_bytes(*height), hash))
}

fn encode_tip(height: u64, hash: &Hash) -> [u8; 40] {
    let mut out = [0u8; 40];
    let (h, rest) = out.split_at_mut(8);
    h.copy_from_slice(&height.to_be_bytes());
    rest.copy_from_slice(hash);
    out
}

impl Store for SledStore {
    fn commit_finalized(&self, block: &FinalizedBlock) -> Result<(), StoreError> {
        self.commit(block, false)
    }

    fn commit_checkpoint(&self, block: &FinalizedBlock) -> Result<(), StoreError> {
        self.commit(block, true)
    }

    fn history_floor(&self) -> Result<u64, StoreError> {
        self.floor(HISTORY_FLOOR_KEY, 1)
    }

    fn prune_history(
        &self,
        below_height: u64,
        keep_every: u64,
        max_entries: usize,
    ) -> Result<u64, StoreError> {
        let Some((tip, _)) = self.finalized_tip()? else {
            return Ok(0);
        };
        let line = below_height.min(tip);
        if line > self.history_floor()? {
            self.meta.insert(HISTORY_FLOOR_KEY, &line.to_be_bytes())?;
        }
        let kept = |height: u64| keep_every != 0 && height.is_multiple_of(keep_every);
        // The height index goes first: a crash after it leaves unreachable entries, which the
        // loop below removes on the next call, never an index pointing at nothing.
        let mut pruned = Vec::new();
        let mut index = sled::Batch::default();
        for entry in self.heights.range(..line.to_be_bytes()) {
            let (key, hash) = entry?;
            let height = decode_height(&key, "heights key")?;
            if !kept(height) {
                index.remove(key);
                pruned.push((height, hash));
                if pruned.len() == max_entries {
                    break;
                }
            }
        }
        self.heights.apply_batch(index)?;
        let mut blocks = sled::Batch::default();
        let mut certs = sled::Batch::default();
        let mut txs = sled::Batch::default();
        let mut block_txs = sled::Batch::default();
        let mut files = Vec::new();
        for (height, hash) in &pruned {
            let key = height.to_be_bytes();
            blocks.remove(hash.clone());
            files.extend(Hash::try_from(&hash[..]));
            certs.remove(&key);
            if let Some(hashes) = self.block_txs.get(key)? {
                for tx in hashes.chunks(32) {
                    if self.txs.get(tx)?.as_deref() == Some(&key[..]) {
                        txs.remove(tx);
                    }
                }
                block_txs.remove(&key);
            }
        }
        let mut removed = pruned.len();
        // Left behind by an interrupted call: certificates without an index entry (looked for
        // once the index below the line is done).
        if pruned.len() < max_entries {
            let this_call: std::collections::HashSet<u64> =
                pruned.iter().map(|(h, _)| *h).collect();
            for entry in self.certs.range(..line.to_be_bytes()) {
                let (key, _) = entry?;
                let height = decode_height(&key, "certs key")?;
                if !kept(height)
                    && !this_call.contains(&height)
                    && !self.heights.contains_key(&key)?
                {
                    certs.remove(key);
                    removed += 1;
                }
            }
        }
        // Blocks that were stored but never finalized at their height (proposals of views that
        // failed, or the losing side of an equivocation): nothing can finalize them any more.
        let mut pending = sled::Batch::default();
        for key in self
            .pending
            .range(..line.to_be_bytes())
            .keys()
            .take(max_entries)
        {
            let key = key?;
            removed += 1;
            let (height, hash) = key.split_at(8.min(key.len()));
            let finalized = self.heights.get(height)?.is_some_and(|h| h == hash);
            if !finalized && !self.seals.contains_key(hash)? {
                blocks.remove(hash);
                files.extend(Hash::try_from(hash));
            }
            pending.remove(key);
        }
        self.blocks.apply_batch(blocks)?;
        // Deleted once the index removals are durable ([`Store::flush`]).
        self.files.remove_after_flush(files);
        self.pending.apply_batch(pending)?;
        self.certs.apply_batch(certs)?;
        self.txs.apply_batch(txs)?;
        self.block_txs.apply_batch(block_txs)?;
        let mut quasar = sled::Batch::default();
        for key in self
            .quasar
            .range(..line.to_be_bytes())
            .keys()
            .take(max_entries)
        {
            quasar.remove(key?);
            removed += 1;
        }
        self.quasar.apply_batch(quasar)?;
        Ok(removed as u64)
    }

    fn finalized_tip(&self) -> Result<Option<(u64, Hash)>, StoreError> {
        self.meta
            .get(FINALIZED_KEY)?
            .map(|v| decode_tip(&v))
            .transpose()
    }

    fn block_by_height(&self, height: u64) -> Result<Option<StoredBlock>, StoreError> {
        let key = height.to_be_bytes();
        let Some(hash) = self.heights.get(key)? else {
            return Ok(None);
        };
        let hash = decode_hash(&hash, &format!("heights[{height}]"))?;
        let block = self.block_file(&hash)?.ok_or_else(|| {
            StoreError::Corrupt(format!("height {height} indexes a missing block"))
        })?;
        let certificate = self
            .certs
            .get(key)?
            .ok_or_else(|| StoreError::Corrupt(format!("height {height} has no certificate")))?;
        Ok(Some(StoredBlock {
            height,
            hash,
            block,
            certificate: certificate.to_vec(),
        }))
    }

    fn block_by_hash(&self, hash: &Hash) -> Result<Option<Vec<u8>>, StoreError> {
        self.block_file(hash)
    }

    fn put_block(&self, height: u64, hash: &Hash, block: &[u8]) -> Result<(), StoreError> {
        self.put_block_file(hash, block)?;
        self.pending.insert(pending_key(height, hash), &[][..])?;
        Ok(())
    }

    fn put_seal(&self, hash: &Hash, block: &[u8]) -> Result<(), StoreError> {
        self.seals.insert(hash, &[][..])?;
        self.put_block_file(hash, block)?;
        Ok(())
    }

    fn tx_height(&self, tx_hash: &Hash) -> Result<Option<u64>, StoreError> {
        let Some(height) = self
            .txs
            .get(tx_hash)?
            .map(|v| decode_height(&v, "txs"))
            .transpose()?
        else {
            return Ok(None);
        };
        // Written before its height's transaction (`commit`): only a finalized height counts.
        Ok(self
            .finalized_tip()?
            .filter(|(tip, _)| height <= *tip)
            .map(|_| height))
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.db.flush()?;
        // The index removals of pruned blocks are durable now: their files can go.
        self.files.delete_queued()
    }

    fn bind_genesis(&self, genesis: &Hash) -> Result<(), StoreError> {
        match self.meta.get(GENESIS_KEY)? {
            Some(stored) => {
                let stored = decode_hash(&stored, "meta[genesis]")?;
                if &stored != genesis {
                    return Err(StoreError::WrongGenesis {
                        stored: hex_string(&stored),
                        expected: hex_string(genesis),
                    });
                }
                Ok(())
            }
            None => {
                self.meta.insert(GENESIS_KEY, &genesis[..])?;
                self.db.flush()?;
                Ok(())
            }
        }
    }

    fn is_empty(&self) -> Result<bool, StoreError> {
        Ok(self.meta.get(GENESIS_KEY)?.is_none() && self.blocks.is_empty())
    }

    fn put_view_certificate(
        &self,
        view: u64,
        kind: u8,
        certificate: &[u8],
    ) -> Result<(), StoreError> {
        self.view_certs.insert(view_key(view, kind), certificate)?;
        Ok(())
    }

    fn view_certificates(&self) -> Result<Vec<Vec<u8>>, StoreError> {
        self.view_certs
            .iter()
            .values()
            .map(|v| Ok(v?.to_vec()))
            .collect()
    }

    fn prune_view_certificates(&self, below_view: u64) -> Result<(), StoreError> {
        let end = view_key(below_view, 0);
        let mut batch = sled::Batch::default();
        for key in self.view_certs.range(..end).keys() {
            batch.remove(key?);
        }
        self.view_certs.apply_batch(batch)?;
        Ok(())
    }

    fn put_evidence(&self, record: &EvidenceRecord) -> Result<bool, StoreError> {
        self.evidence.put(record)
    }

    fn evidence(&self, limit: usize, from_view: u64) -> Result<Vec<EvidenceRecord>, StoreError> {
        self.evidence.list(limit, from_view)
    }

    fn evidence_count(&self) -> Result<u64, StoreError> {
        Ok(self.evidence.count())
    }

    fn prune_evidence(&self, below_view: u64) -> Result<u64, StoreError> {
        self.evidence.prune(below_view)
    }

    fn put_quasar_cert(&self, height: u64, certificate: &[u8]) -> Result<bool, StoreError> {
        let stored =
            self.quasar
                .compare_and_swap(height.to_be_bytes(), None::<&[u8]>, Some(certificate))?;
        Ok(stored.is_ok())
    }

    fn quasar_cert_from(&self, height: u64) -> Result<Option<(u64, Vec<u8>)>, StoreError> {
        match self.quasar.range(height.to_be_bytes()..).next() {
            Some(entry) => {
                let (key, value) = entry?;
                Ok(Some((decode_height(&key, "quasar key")?, value.to_vec())))
            }
            None => Ok(None),
        }
    }

    fn quasar_tip(&self) -> Result<Option<u64>, StoreError> {
        match self.quasar.last()? {
            Some((key, _)) => Ok(Some(decode_height(&key, "quasar key")?)),
            None => Ok(None),
        }
    }

    fn claim_session(&self, height: u64, session: &Hash) -> Result<bool, StoreError> {
        let mut key = [0u8; 40];
        let (h, id) = key.split_at_mut(8);
        h.copy_from_slice(&height.to_be_bytes());
        id.copy_from_slice(session);
        if height < self.sessions_floor()? {
            return Ok(false);
        }
        let stored = self
            .sessions
            .compare_and_swap(key, None::<&[u8]>, Some(&[][..]))?;
        Ok(stored.is_ok())
    }

    fn prune_sessions(&self, below_height: u64) -> Result<u64, StoreError> {
        if below_height <= self.sessions_floor()? {
            return Ok(0);
        }
        // The line first, so a crash between the two steps still refuses the pruned heights.
        self.meta
            .insert(SESSIONS_FLOOR_KEY, &below_height.to_be_bytes())?;
        let mut removed = 0;
        for entry in self.sessions.range(..below_height.to_be_bytes().to_vec()) {
            let (key, _) = entry?;
            self.sessions.remove(key)?;
            removed += 1;
        }
        Ok(removed)
    }
}

impl SledStore {
    /// The pruned line of the `sessions` tree (0 when nothing was pruned).
    fn sessions_floor(&self) -> Result<u64, StoreError> {
        self.floor(SESSIONS_FLOOR_KEY, 0)
    }

    /// The height stored under the `meta` key `key`, or `default`.
    fn floor(&self, key: &[u8], default: u64) -> Result<u64, StoreError> {
        match self.meta.get(key)? {
            Some(value) => decode_height(&value, "meta floor"),
            None => Ok(default),
        }
    }

    /// [`Store::commit_finalized`], or with `checkpoint` [`Store::commit_checkpoint`].
    fn commit(&self, block: &FinalizedBlock, checkpoint: bool) -> Result<(), StoreError> {
        let height_key = block.height.to_be_bytes();
        let tx_list: Vec<u8> = block.tx_hashes.iter().flatten().copied().collect();
        // Before the transaction, so the height index never names a block not stored (sled
        // recovers a prefix of its log); not for a block the transaction would refuse.
        next_height(self.finalized_tip()?, block.height, checkpoint)?;
        self.put_block_file(&block.hash, &block.block)?;
        let mut index = sled::Batch::default();
        for tx in &block.tx_hashes {
            index.insert(&tx[..], &height_key[..]);
        }
        self.txs.apply_batch(index)?;
        let result = (&self.heights, &self.certs, &self.block_txs, &self.meta).transaction(
            |(heights, certs, block_txs, meta)| {
                let tip = match meta.get(FINALIZED_KEY)? {
                    Some(v) => Some(decode_tip(&v).map_err(ConflictableTransactionError::Abort)?),
                    None => None,
                };
                let expected = next_height(tip, block.height, checkpoint)
                    .map_err(ConflictableTransactionError::Abort)?;
                if block.height > expected {
                    meta.insert(HISTORY_FLOOR_KEY, &height_key[..])?;
                }
                heights.insert(&height_key[..], &block.hash[..])?;
                certs.insert(&height_key[..], block.certificate.as_slice())?;
                if !tx_list.is_empty() {
                    block_txs.insert(&height_key[..], tx_list.as_slice())?;
                }
                meta.insert(FINALIZED_KEY, &encode_tip(block.height, &block.hash)[..])?;
                Ok(())
            },
        );
        match result {
            Ok(()) => Ok(()),
            Err(TransactionError::Abort(e)) => Err(e),
            Err(TransactionError::Storage(e)) => Err(StoreError::Backend(e)),
        }
    }
}
