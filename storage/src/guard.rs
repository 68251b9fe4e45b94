//! The signing guard: decides whether a consensus vote may be signed, and makes that decision
//! durable before the signature leaves (docs/architecture.md §2 "Signing guard", §6, §10; modelled on aptos
//! safety rules and Tendermint's `priv_validator_state`).
//!
//! # Rules (per view)
//!
//! 1. At most one notarize block hash.
//! 2. At most one finalize block hash.
//! 3. Never both a finalize and a nullify (in either order).
//! 4. Notarize and nullify in the same view are allowed (an honest node notarizes, then times out).
//!
//! Asking again for a vote that is already recorded answers [`GuardDecision::Repeat`]: re-signing an
//! identical vote (e.g. to re-broadcast after a restart) is safe, since BLS signing is
//! deterministic and the message is the same. Views more than [`GUARD_WINDOW`] below the highest
//! recorded view are refused ([`GuardError::TooOld`]); records below that window are pruned, so the
//! record holds at most `GUARD_WINDOW + 1` views.
//!
//! # Safety argument
//!
//! A conflicting pair of votes for view `v` could only be signed if the guard answered `Fresh` or
//! `Repeat` for both. (a) Within one process, the in-memory record is updated only after the new
//! state is durable, and every answer is checked against the record, so the second request of a
//! conflicting pair finds the first and gets [`GuardError::Conflict`]. (b) Across a crash or restart,
//! the first vote's record was on disk (file fsync'd, renamed, directory fsync'd) before `Fresh` was
//! returned and hence before the signature could leave; [`SigningGuard::open`] reloads it, and
//! refuses to start on a file it cannot read or verify rather than start empty. (c) Pruning only
//! drops views below `highest - GUARD_WINDOW`, and those views are refused outright, so forgetting
//! them cannot admit a conflict. (d) The file names its **owner** (a digest of the validator's key
//! and the chain's genesis, chosen by the caller): [`SigningGuard::open`] refuses another
//! validator's or another chain's guard ([`GuardError::Foreign`]), so a guard file copied from
//! the wrong directory cannot stand in for the right one. What the guard cannot detect on its own
//! is an operator deleting the file, restoring an older copy of it, or running two processes on one
//! directory; these are documented operator errors (the node additionally refuses to start when
//! its store holds signatures newer than its guard).
//!
//! # File format (`signing-guard.bin`, version 2)
//!
//! `body ‖ SHA3-256(body)` where, integers little-endian,
//! `body = "QSGUARD\0" ‖ version: u16 = 2 ‖ owner: 32 B ‖ count: u32 ‖ count × entry`,
//! `entry = view: u64 ‖ flags: u8 ‖ [notarize hash: 32 B if flags&1] ‖ [finalize hash: 32 B if flags&2]`,
//! flag bit 2 = nullify, other bits zero; views strictly increasing; `count ≤ GUARD_WINDOW + 1`;
//! flags 2|4 (finalize + nullify) are illegal. The file is replaced atomically: write
//! `signing-guard.bin.tmp`, `sync_all`, rename over `signing-guard.bin`, `sync_all` the directory.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use quasar_crypto::hash::{sha3_256, Hash};

/// How far below the highest recorded view a vote may still be recorded, in views.
pub const GUARD_WINDOW: u64 = 64;

/// Name of the guard file inside the directory given to [`SigningGuard::open`].
pub const GUARD_FILE: &str = "signing-guard.bin";

/// The marker of a guard that is not fenced yet, beside [`GUARD_FILE`]: a validator that
/// started with a new guard on a running chain creates it before the guard, and removes it once
/// its fence is durable ([`SigningGuard::fence`]). While it exists, every start listens to the
/// network before signing, so a restart in the middle of listening cannot sign at once.
pub const UNFENCED_FILE: &str = "signing-guard.unfenced";

/// Creates [`UNFENCED_FILE`] in `dir` durably (file and directory fsync'd), creating `dir` if
/// needed. Errors: the I/O error.
pub fn mark_unfenced(dir: &Path) -> std::io::Result<()> {
    fs::create_dir_all(dir)?;
    fs::File::create(dir.join(UNFENCED_FILE))?.sync_all()?;
    fs::File::open(dir)?.sync_all()
}

/// Removes [`UNFENCED_FILE`] from `dir` (call once the fence is durable), durably. Errors: the
/// I/O error (none when it is already gone).
pub fn clear_unfenced(dir: &Path) -> std::io::Result<()> {
    match fs::remove_file(dir.join(UNFENCED_FILE)) {
        Ok(()) => fs::File::open(dir)?.sync_all(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}
const GUARD_TMP_FILE: &str = "signing-guard.bin.tmp";
const MAGIC: &[u8; 8] = b"QSGUARD\0";
const VERSION: u16 = 2;
/// Most views a valid record can hold.
const MAX_ENTRIES: u64 = GUARD_WINDOW + 1;
const FLAG_NOTARIZE: u8 = 1;
const FLAG_FINALIZE: u8 = 2;
const FLAG_NULLIFY: u8 = 4;
/// Upper bound on a valid file: header, full entries, checksum.
const MAX_FILE_LEN: u64 = 8 + 2 + 32 + 4 + MAX_ENTRIES * (8 + 1 + 32 + 32) + 32;

/// The kind of consensus vote (docs/architecture.md §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VoteKind {
    /// A vote that a block is valid for the view.
    Notarize,
    /// A vote to finalize a notarized block.
    Finalize,
    /// A vote that the view timed out without progress.
    Nullify,
}

/// A vote the caller wants to sign.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VoteIntent {
    /// Consensus view of the vote.
    pub view: u64,
    /// What kind of vote it is.
    pub kind: VoteKind,
    /// Hash of the block voted for; all zeros for [`VoteKind::Nullify`] (ignored for nullify).
    pub block: Hash,
}

/// Why the caller may sign.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuardDecision {
    /// The vote was newly recorded and the record is durable: sign and send.
    Fresh,
    /// This identical vote was already recorded: safe to re-sign and re-send.
    Repeat,
}

/// Why the guard refused. The caller must NOT sign. `Conflict` and `TooOld` are expected in normal
/// operation (drop the vote); `Io` and `Corrupt` mean the guard cannot protect the key: stop signing
/// and alert the operator.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    /// Signing would equivocate: the view already holds a vote that conflicts with the request.
    #[error(
        "conflicting vote in view {view}: already signed {existing}{}, refused {requested}",
        if *before_restart { " before this process started" } else { "" }
    )]
    Conflict {
        /// The view.
        view: u64,
        /// The recorded vote that conflicts.
        existing: String,
        /// The vote that was requested.
        requested: String,
        /// The view's record was read from the guard file when this guard was opened: it was
        /// written by an earlier process of this validator (a restart in the middle of the view),
        /// not by this one. Such a refusal is this validator meeting its own history; a conflict
        /// with a record this process made means two signers behind one guard.
        before_restart: bool,
    },
    /// The view is more than [`GUARD_WINDOW`] below the highest recorded view.
    #[error("view {view} is too old: highest recorded view is {highest}, window {GUARD_WINDOW}")]
    TooOld {
        /// The requested view.
        view: u64,
        /// The highest recorded view.
        highest: u64,
    },
    /// Reading or durably writing the guard file failed; the vote was not recorded. Fatal.
    #[error("signing guard I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// The guard file exists but is malformed or fails its checksum. Fatal: never reset silently.
    #[error("signing guard file corrupt: {0}")]
    Corrupt(String),
    /// The guard file belongs to another owner (another validator key or another chain). Fatal:
    /// put this validator's own guard file back.
    #[error(
        "signing guard file belongs to owner {found}, not to this validator ({expected}): the \
         owner binds the validator key and the genesis, so either the key or the genesis file \
         changed since this data directory was made (a changed genesis is a new chain and needs \
         a new data directory)"
    )]
    Foreign {
        /// Hex of the owner recorded in the file.
        found: String,
        /// Hex of the owner the caller expected.
        expected: String,
    },
}

/// What was signed in one view.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct ViewRecord {
    notarize: Option<Hash>,
    finalize: Option<Hash>,
    nullify: bool,
    /// Read from a guard file ([`SigningGuard::open`], [`SigningGuard::from_bytes`]); kept when
    /// the view's record grows. Not part of the file format.
    restored: bool,
}

impl ViewRecord {
    /// The votes, without where the record came from.
    fn votes(&self) -> (Option<Hash>, Option<Hash>, bool) {
        (self.notarize, self.finalize, self.nullify)
    }
}

/// Human-readable description of a vote, for [`GuardError::Conflict`].
struct Describe(VoteKind, Hash);

impl fmt::Display for Describe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            VoteKind::Notarize => write!(f, "notarize({})", hex_hash(&self.1)),
            VoteKind::Finalize => write!(f, "finalize({})", hex_hash(&self.1)),
            VoteKind::Nullify => f.write_str("nullify"),
        }
    }
}

fn hex_hash(hash: &Hash) -> String {
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// The file operations a [`SigningGuard`] makes in its directory: the seam through which the
/// simulator runs the guard's write path (tmp file, fsync, rename, directory fsync) on a
/// simulated disk that loses or tears what was not made durable
/// ([`crate::sim::SimGuardDir`]). [`OsGuardDir`] is the real directory. Names are file names
/// inside the directory.
pub trait GuardDir: fmt::Debug + Send {
    /// The contents of file `name`, reading at most `limit` bytes; `None` when it does not exist.
    /// Errors: the I/O error.
    fn read(&mut self, name: &str, limit: u64) -> std::io::Result<Option<Vec<u8>>>;
    /// Creates (or truncates) file `name` and writes `bytes` to it, not durably yet.
    /// Errors: the I/O error.
    fn write(&mut self, name: &str, bytes: &[u8]) -> std::io::Result<()>;
    /// Makes file `name`'s contents durable (fsync). Errors: the I/O error.
    fn sync_file(&mut self, name: &str) -> std::io::Result<()>;
    /// Renames file `from` over `to` atomically (durable only after [`GuardDir::sync_dir`]).
    /// Errors: the I/O error.
    fn rename(&mut self, from: &str, to: &str) -> std::io::Result<()>;
    /// Makes the directory's entries durable (fsync of the directory). Errors: the I/O error.
    fn sync_dir(&mut self) -> std::io::Result<()>;
}

/// A [`GuardDir`] on the real file system.
#[derive(Debug)]
pub struct OsGuardDir {
    dir: PathBuf,
    /// The file last written, still open, so its fsync needs no second open.
    written: Option<(String, fs::File)>,
}

impl OsGuardDir {
    /// The directory `dir`, created if needed. Errors: the I/O error.
    pub fn create(dir: &Path) -> std::io::Result<OsGuardDir> {
        fs::create_dir_all(dir)?;
        Ok(OsGuardDir {
            dir: dir.to_path_buf(),
            written: None,
        })
    }
}

impl GuardDir for OsGuardDir {
    fn read(&mut self, name: &str, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
        match fs::File::open(self.dir.join(name)) {
            Ok(file) => {
                let mut bytes = Vec::new();
                file.take(limit).read_to_end(&mut bytes)?;
                Ok(Some(bytes))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn write(&mut self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        self.written = None;
        let mut file = fs::File::create(self.dir.join(name))?;
        file.write_all(bytes)?;
        self.written = Some((name.to_string(), file));
        Ok(())
    }

    fn sync_file(&mut self, name: &str) -> std::io::Result<()> {
        match self.written.take() {
            Some((written, file)) if written == name => file.sync_all(),
            _ => fs::OpenOptions::new()
                .write(true)
                .open(self.dir.join(name))?
                .sync_all(),
        }
    }

    fn rename(&mut self, from: &str, to: &str) -> std::io::Result<()> {
        fs::rename(self.dir.join(from), self.dir.join(to))
    }

    fn sync_dir(&mut self) -> std::io::Result<()> {
        fs::File::open(&self.dir)?.sync_all()
    }
}

/// The durable record of signed votes; see the module docs for rules and safety argument.
#[derive(Debug)]
pub struct SigningGuard {
    /// Directory holding [`GUARD_FILE`]; `None` for [`SigningGuard::in_memory`].
    dir: Option<Box<dyn GuardDir>>,
    /// Who the record belongs to (see the module docs).
    owner: Hash,
    views: BTreeMap<u64, ViewRecord>,
}

impl SigningGuard {
    /// Opens the guard stored in `dir/signing-guard.bin` for `owner`, creating `dir` and an empty,
    /// durable record if the file is absent.
    ///
    /// Errors: [`GuardError::Io`] if the file cannot be read or the empty record cannot be written;
    /// [`GuardError::Corrupt`] if the file is malformed, oversized, of another version, or fails
    /// its checksum; [`GuardError::Foreign`] if it records another owner. A bad file is never
    /// reset: the operator must investigate (signing with a lost record risks equivocation).
    pub fn open(dir: &Path, owner: &Hash) -> Result<SigningGuard, GuardError> {
        SigningGuard::open_in(Box::new(OsGuardDir::create(dir)?), owner)
    }

    /// Opens the guard whose [`GUARD_FILE`] lives in `dir` (a real or a simulated directory),
    /// exactly as [`SigningGuard::open`] does, with its errors.
    pub fn open_in(mut dir: Box<dyn GuardDir>, owner: &Hash) -> Result<SigningGuard, GuardError> {
        // Read at most one byte past the limit, so an oversized file is detected without
        // reading it whole.
        let views = match dir.read(GUARD_FILE, MAX_FILE_LEN.saturating_add(1))? {
            Some(bytes) => {
                let (found, views) = decode(&bytes)?;
                if found != *owner {
                    return Err(GuardError::Foreign {
                        found: hex_hash(&found),
                        expected: hex_hash(owner),
                    });
                }
                views
            }
            None => {
                let views = BTreeMap::new();
                persist(dir.as_mut(), owner, &views)?;
                views
            }
        };
        Ok(SigningGuard {
            dir: Some(dir),
            owner: *owner,
            views,
        })
    }

    /// An in-memory guard holding the record encoded in `bytes` (the guard file's contents, whose
    /// owner it keeps), for inspecting a guard file offline and for fuzzing the decoder.
    ///
    /// Errors: [`GuardError::Corrupt`] exactly as [`SigningGuard::open`] reports for a bad file.
    pub fn from_bytes(bytes: &[u8]) -> Result<SigningGuard, GuardError> {
        let (owner, views) = decode(bytes)?;
        Ok(SigningGuard {
            dir: None,
            owner,
            views,
        })
    }

    /// A guard with the same rules and no file, for the deterministic simulator and tests.
    pub fn in_memory() -> SigningGuard {
        SigningGuard::in_memory_for([0; 32])
    }

    /// An empty in-memory guard (as [`SigningGuard::in_memory`]) that belongs to `owner`, for
    /// checking a signing history offline ([`SigningGuard::import`]).
    pub fn in_memory_for(owner: Hash) -> SigningGuard {
        SigningGuard {
            dir: None,
            owner,
            views: BTreeMap::new(),
        }
    }

    /// Decides whether `intent` may be signed and, if it is new, records it durably first.
    ///
    /// Returns [`GuardDecision::Fresh`] only after the new record is on disk (file and directory
    /// fsync'd), [`GuardDecision::Repeat`] for a vote already recorded.
    ///
    /// Errors (do not sign): [`GuardError::Conflict`] for a vote that would equivocate (module
    /// docs, rules 1–3); [`GuardError::TooOld`] for a view more than [`GUARD_WINDOW`] below
    /// [`SigningGuard::highest_view`]; [`GuardError::Io`] if the record could not be made durable,
    /// in which case nothing was recorded in memory either.
    pub fn check_and_record(&mut self, intent: &VoteIntent) -> Result<GuardDecision, GuardError> {
        if let Some(highest) = self.highest() {
            if intent.view < highest.saturating_sub(GUARD_WINDOW) {
                return Err(GuardError::TooOld {
                    view: intent.view,
                    highest,
                });
            }
        }
        let existing = self.views.get(&intent.view).copied().unwrap_or_default();
        let mut requested = ViewRecord::default();
        match intent.kind {
            VoteKind::Notarize => requested.notarize = Some(intent.block),
            VoteKind::Finalize => requested.finalize = Some(intent.block),
            VoteKind::Nullify => requested.nullify = true,
        }
        // The rules (module docs) live in `merge`, shared with `import`.
        let updated = merge(intent.view, existing, requested)?;
        if updated.votes() == existing.votes() {
            return Ok(GuardDecision::Repeat);
        }
        // Build the next state aside; adopt it only once it is durable.
        let mut next = self.views.clone();
        next.insert(intent.view, updated);
        self.adopt(next)
    }

    /// Fences `view`: records, durably, a notarize and a finalize of the all-zero hash there,
    /// which no block has, so every real vote in `view` conflicts with the record and is refused,
    /// and (as any record) views more than [`GUARD_WINDOW`] below it become too old. A validator
    /// that lost its guard fences the views the network reached while it listened, which its
    /// earlier incarnation may have signed in (`quasar-node`'s engine,
    /// `Engine::listen_before_signing`). A fence at or below the highest recorded view changes
    /// nothing and answers [`GuardDecision::Repeat`].
    ///
    /// Errors: [`GuardError::Io`] if the record could not be made durable (nothing recorded).
    pub fn fence(&mut self, view: u64) -> Result<GuardDecision, GuardError> {
        if self.highest().is_some_and(|highest| view <= highest) {
            return Ok(GuardDecision::Repeat);
        }
        let mut next = self.views.clone();
        next.insert(
            view,
            ViewRecord {
                notarize: Some([0; 32]),
                finalize: Some([0; 32]),
                nullify: false,
                restored: false,
            },
        );
        self.adopt(next)
    }

    /// Prunes `next`, makes it durable, then adopts it as the record (unchanged on an error).
    fn adopt(&mut self, mut next: BTreeMap<u64, ViewRecord>) -> Result<GuardDecision, GuardError> {
        prune(&mut next);
        if let Some(dir) = self.dir.as_mut() {
            persist(dir.as_mut(), &self.owner, &next)?;
        }
        self.views = next;
        Ok(GuardDecision::Fresh)
    }

    /// The block hash this guard recorded a notarize vote for in `view`, if any (all zeros for a
    /// fenced view, [`SigningGuard::fence`]). A leader's proposal is its notarize vote, so a
    /// leader restarted in the middle of its view finds here the block it already proposed.
    pub fn notarized(&self, view: u64) -> Option<Hash> {
        self.views.get(&view).and_then(|record| record.notarize)
    }

    /// The highest view fenced by [`SigningGuard::fence`] that the record still holds (0: none).
    pub fn fenced_view(&self) -> u64 {
        self.views
            .iter()
            .rev()
            .find(|(_, record)| record.notarize == Some([0; 32]))
            .map_or(0, |(view, _)| *view)
    }

    /// Whether the record holds exactly `intent` (for nullify, a nullify in its view). A fenced
    /// view holds no real vote, so nothing signed there counts as recorded. A validator uses this
    /// to tell its own signatures, seen again on the network, from another process's.
    pub fn recorded(&self, intent: &VoteIntent) -> bool {
        self.views
            .get(&intent.view)
            .is_some_and(|record| match intent.kind {
                VoteKind::Notarize => record.notarize == Some(intent.block),
                VoteKind::Finalize => record.finalize == Some(intent.block),
                VoteKind::Nullify => record.nullify,
            })
    }

    /// The highest view with any recorded vote, or 0 if none. A restarted validator resumes from it.
    pub fn highest_view(&self) -> u64 {
        self.highest().unwrap_or(0)
    }

    fn highest(&self) -> Option<u64> {
        self.views.last_key_value().map(|(v, _)| *v)
    }
}

/// What a guard recorded in one view: the unit of the signing-history interchange
/// ([`SigningGuard::history`], [`SigningGuard::import`]). A fenced view
/// ([`SigningGuard::fence`]) has the all-zero hash as its notarize and finalize block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ViewVotes {
    /// The view.
    pub view: u64,
    /// The block of the notarize vote signed in the view, if any.
    pub notarize: Option<Hash>,
    /// The block of the finalize vote signed in the view, if any.
    pub finalize: Option<Hash>,
    /// Whether a nullify vote was signed in the view.
    pub nullify: bool,
}

/// What [`SigningGuard::import`] changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ImportReport {
    /// Views whose record gained a vote (new views included).
    pub views_added: usize,
    /// Views the record already held in full.
    pub views_unchanged: usize,
    /// Views below the window of the merged record, dropped as every guard drops them (votes
    /// there are refused as too old either way).
    pub views_too_old: usize,
}

impl SigningGuard {
    /// The owner and every view this guard holds, in increasing view order: its whole
    /// signing history (at most [`GUARD_WINDOW`] + 1 views).
    pub fn history(&self) -> (Hash, Vec<ViewVotes>) {
        let views = self
            .views
            .iter()
            .map(|(&view, record)| ViewVotes {
                view,
                notarize: record.notarize,
                finalize: record.finalize,
                nullify: record.nullify,
            })
            .collect();
        (self.owner, views)
    }

    /// Merges `views` (another guard's [`SigningGuard::history`] for the same owner, e.g. from
    /// the host a validator moves from) into this record and makes the result durable. The
    /// merge is a union, so it never lowers the record: every vote either side recorded stays
    /// recorded, the highest view is the higher of the two, and a vote that conflicts with
    /// either side stays refused.
    ///
    /// Errors (nothing is changed): [`GuardError::Foreign`] when `owner` is not this guard's;
    /// [`GuardError::Conflict`] when a view holds votes that conflict between the two records,
    /// or within one imported view (finalize and nullify together); [`GuardError::Corrupt`]
    /// when `views` repeats a view; [`GuardError::Io`] when the result cannot be made durable.
    pub fn import(
        &mut self,
        owner: &Hash,
        views: &[ViewVotes],
    ) -> Result<ImportReport, GuardError> {
        if *owner != self.owner {
            return Err(GuardError::Foreign {
                found: hex_hash(owner),
                expected: hex_hash(&self.owner),
            });
        }
        let mut next = self.views.clone();
        let mut seen = std::collections::BTreeSet::new();
        let mut changed = Vec::new();
        for votes in views {
            if !seen.insert(votes.view) {
                return Err(GuardError::Corrupt(format!(
                    "view {} appears twice in the imported history",
                    votes.view
                )));
            }
            let imported = ViewRecord {
                notarize: votes.notarize,
                finalize: votes.finalize,
                nullify: votes.nullify,
                // Signed by an earlier incarnation of this validator, like a record read back
                // from the file after a restart.
                restored: true,
            };
            let existing = next.get(&votes.view).copied().unwrap_or_default();
            let merged = merge(votes.view, existing, imported)?;
            changed.push((votes.view, merged.votes() != existing.votes()));
            next.insert(votes.view, merged);
        }
        prune(&mut next);
        let mut report = ImportReport::default();
        for (view, grew) in changed {
            match (next.contains_key(&view), grew) {
                (false, _) => report.views_too_old += 1,
                (true, true) => report.views_added += 1,
                (true, false) => report.views_unchanged += 1,
            }
        }
        if next != self.views {
            if let Some(dir) = self.dir.as_mut() {
                persist(dir.as_mut(), &self.owner, &next)?;
            }
            self.views = next;
        }
        Ok(report)
    }
}

/// The union of record `a` of `view` with `b` (one requested vote, or an imported record): the
/// guard's rules (module docs) in one place. [`GuardError::Conflict`], naming `a`'s vote as the
/// existing one, when they hold conflicting votes: two notarize or two finalize blocks, or a
/// finalize and a nullify between or within them.
fn merge(view: u64, a: ViewRecord, b: ViewRecord) -> Result<ViewRecord, GuardError> {
    let conflict = |existing: Describe, requested: Describe| GuardError::Conflict {
        view,
        existing: existing.to_string(),
        requested: requested.to_string(),
        before_restart: a.restored,
    };
    let one = |kind: VoteKind, x: Option<Hash>, y: Option<Hash>| match (x, y) {
        (Some(x), Some(y)) if x != y => Err(conflict(Describe(kind, x), Describe(kind, y))),
        _ => Ok(x.or(y)),
    };
    let merged = ViewRecord {
        notarize: one(VoteKind::Notarize, a.notarize, b.notarize)?,
        finalize: one(VoteKind::Finalize, a.finalize, b.finalize)?,
        nullify: a.nullify || b.nullify,
        restored: a.restored || b.restored,
    };
    if let (Some(h), true) = (merged.finalize, merged.nullify) {
        let (finalize, nullify) = (
            Describe(VoteKind::Finalize, h),
            Describe(VoteKind::Nullify, h),
        );
        // Name the side that held each: the record's vote first.
        return Err(if a.nullify && a.finalize.is_none() {
            conflict(nullify, finalize)
        } else {
            conflict(finalize, nullify)
        });
    }
    Ok(merged)
}

/// Drops views below `highest - GUARD_WINDOW`.
fn prune(views: &mut BTreeMap<u64, ViewRecord>) {
    if let Some((&highest, _)) = views.last_key_value() {
        let keep_from = highest.saturating_sub(GUARD_WINDOW);
        *views = views.split_off(&keep_from);
    }
}

/// Writes `views` durably: tmp file, fsync, rename, directory fsync.
fn persist(
    dir: &mut dyn GuardDir,
    owner: &Hash,
    views: &BTreeMap<u64, ViewRecord>,
) -> Result<(), GuardError> {
    dir.write(GUARD_TMP_FILE, &encode(owner, views))?;
    dir.sync_file(GUARD_TMP_FILE)?;
    dir.rename(GUARD_TMP_FILE, GUARD_FILE)?;
    dir.sync_dir()?;
    Ok(())
}

fn encode(owner: &Hash, views: &BTreeMap<u64, ViewRecord>) -> Vec<u8> {
    let mut body = Vec::with_capacity(256);
    body.extend_from_slice(MAGIC);
    body.extend_from_slice(&VERSION.to_le_bytes());
    body.extend_from_slice(owner);
    // At most MAX_ENTRIES (65) views after pruning, so this never truncates.
    body.extend_from_slice(&(views.len() as u32).to_le_bytes());
    for (view, rec) in views {
        body.extend_from_slice(&view.to_le_bytes());
        let mut flags = 0u8;
        if rec.notarize.is_some() {
            flags |= FLAG_NOTARIZE;
        }
        if rec.finalize.is_some() {
            flags |= FLAG_FINALIZE;
        }
        if rec.nullify {
            flags |= FLAG_NULLIFY;
        }
        body.push(flags);
        if let Some(h) = rec.notarize {
            body.extend_from_slice(&h);
        }
        if let Some(h) = rec.finalize {
            body.extend_from_slice(&h);
        }
    }
    let checksum = sha3_256(&body);
    body.extend_from_slice(&checksum);
    body
}

/// A bounds-checked reader over the file body.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take<const N: usize>(&mut self, what: &str) -> Result<[u8; N], GuardError> {
        let (head, rest) = self
            .0
            .split_first_chunk::<N>()
            .ok_or_else(|| GuardError::Corrupt(format!("truncated while reading {what}")))?;
        self.0 = rest;
        Ok(*head)
    }
}

/// The owner and the record of a guard file.
type Decoded = (Hash, BTreeMap<u64, ViewRecord>);

fn decode(bytes: &[u8]) -> Result<Decoded, GuardError> {
    if bytes.len() as u64 > MAX_FILE_LEN {
        return Err(GuardError::Corrupt(format!(
            "file longer than the {MAX_FILE_LEN}-byte maximum"
        )));
    }
    let (body, checksum) = bytes
        .split_last_chunk::<32>()
        .ok_or_else(|| GuardError::Corrupt("shorter than its checksum".into()))?;
    if sha3_256(body) != *checksum {
        return Err(GuardError::Corrupt("checksum mismatch".into()));
    }
    let mut r = Reader(body);
    if &r.take::<8>("magic")? != MAGIC {
        return Err(GuardError::Corrupt("bad magic".into()));
    }
    let version = u16::from_le_bytes(r.take("version")?);
    if version != VERSION {
        return Err(GuardError::Corrupt(format!(
            "unsupported version {version}"
        )));
    }
    let owner = r.take::<32>("owner")?;
    let count = u32::from_le_bytes(r.take("count")?);
    if u64::from(count) > MAX_ENTRIES {
        return Err(GuardError::Corrupt(format!(
            "{count} views exceed the maximum {MAX_ENTRIES}"
        )));
    }
    let mut views = BTreeMap::new();
    let mut previous: Option<u64> = None;
    for _ in 0..count {
        let view = u64::from_le_bytes(r.take("view")?);
        if previous.is_some_and(|p| view <= p) {
            return Err(GuardError::Corrupt(format!(
                "views not strictly increasing at {view}"
            )));
        }
        previous = Some(view);
        let flags = r.take::<1>("flags")?[0];
        if flags & !(FLAG_NOTARIZE | FLAG_FINALIZE | FLAG_NULLIFY) != 0 || flags == 0 {
            return Err(GuardError::Corrupt(format!(
                "invalid flags {flags:#04x} at view {view}"
            )));
        }
        if flags & FLAG_FINALIZE != 0 && flags & FLAG_NULLIFY != 0 {
            return Err(GuardError::Corrupt(format!(
                "finalize and nullify both recorded at view {view}"
            )));
        }
        let notarize = if flags & FLAG_NOTARIZE != 0 {
            Some(r.take::<32>("notarize hash")?)
        } else {
            None
        };
        let finalize = if flags & FLAG_FINALIZE != 0 {
            Some(r.take::<32>("finalize hash")?)
        } else {
            None
        };
        views.insert(
            view,
            ViewRecord {
                notarize,
                finalize,
                nullify: flags & FLAG_NULLIFY != 0,
                restored: true,
            },
        );
    }
    if !r.0.is_empty() {
        return Err(GuardError::Corrupt(format!("{} trailing bytes", r.0.len())));
    }
    if let (Some(&lo), Some(&hi)) = (views.keys().next(), views.keys().next_back()) {
        if lo < hi.saturating_sub(GUARD_WINDOW) {
            return Err(GuardError::Corrupt(format!(
                "view {lo} lies outside the window below {hi}"
            )));
        }
    }
    Ok((owner, views))
}
