//! Signing-history interchange: a validator's signing guard as a JSON document, so that the
//! validator can move to another host (or another data directory) without copying an opaque
//! file, and an operator can read what the guard holds (`quasar-node guard export | import |
//! inspect`).
//!
//! Modelled on EIP-3076 (the Ethereum slashing-protection interchange): the document names whom
//! the history belongs to and, per view, what was signed; importing merges it into the
//! destination's guard and never lowers it ([`SigningGuard::import`]). Unlike EIP-3076 it carries
//! every view the guard holds (at most `GUARD_WINDOW + 1`, a few kilobytes), not only the highest
//! ones, because our guard's rule is per view (docs/architecture.md §2) and the whole record is small.
//!
//! # Format (`quasar-signing-history`, version 1)
//!
//! ```json
//! {
//!   "format": "quasar-signing-history",
//!   "version": 1,
//!   "owner": "<64 hex digits>",
//!   "public_key": "<96 hex digits: the BLS vote key>",
//!   "genesis_hash": "<64 hex digits>" | null,
//!   "views": [
//!     { "view": 41, "notarize": "<64 hex>", "finalize": "<64 hex>", "nullify": false },
//!     { "view": 42, "notarize": null, "finalize": null, "nullify": true }
//!   ]
//! }
//! ```
//!
//! `owner` is what the guard file is bound to. For a node: a tagged SHA3 hash of the
//! validator's BLS public key and the genesis hash ([`guard_owner`]); for one of thresholdd's
//! per-key guards: a tagged hash of the vote key alone (`genesis_hash` is `null`). A history is
//! imported only into the guard of the same owner, so a node's history never enters a daemon's
//! guard or another chain's. `views` are strictly increasing; a view names at least one vote;
//! a fenced view has all-zero notarize and finalize blocks. A node's guard records the voted
//! block's hash; thresholdd's records a digest of the whole vote message, which is what its
//! `notarize`/`finalize` values then hold. Unknown fields are refused. A document is at most
//! [`MAX_HISTORY_BYTES`] long.

use crate::ConfigError;
use quasar_crypto::bls::PublicKey;
use quasar_crypto::hash::{tagged_hash, Hash};
use quasar_process::{lock_dir, DirLockError};
use quasar_storage::{GuardError, SigningGuard, ViewVotes, GUARD_WINDOW};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The `format` field of every document.
pub const HISTORY_FORMAT: &str = "quasar-signing-history";
/// The only `version` this node reads and writes.
pub const HISTORY_VERSION: u32 = 1;
/// Largest document accepted, bytes: a full window of views with both hashes is about 14 KB.
pub const MAX_HISTORY_BYTES: usize = 64 * 1024;

/// Why a signing-history document was refused or could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// Not a document of this format: not JSON, a missing or unknown field, a wrong `format`
    /// or `version`, a hash that is not 64 hex digits, views out of order, an empty view.
    #[error("not a signing history: {0}")]
    Malformed(String),
    /// The document is larger than [`MAX_HISTORY_BYTES`].
    #[error("signing history of {0} bytes exceeds the {MAX_HISTORY_BYTES}-byte limit")]
    TooLarge(usize),
    /// The history belongs to another validator key or another chain.
    #[error(
        "this signing history belongs to owner {found}, not to this guard's owner ({expected}): \
         it was exported for another key, or (for a node) another chain"
    )]
    Foreign {
        /// The document's owner, hex.
        found: String,
        /// This validator's owner, hex.
        expected: String,
    },
    /// The guard refused the merge (a conflicting history) or could not make it durable.
    #[error(transparent)]
    Guard(#[from] GuardError),
    /// `node.toml`, the key directory or the genesis could not be read.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The data directory holds no signing guard to export or inspect.
    #[error("no signing guard at {0}: this validator has not run with this data directory")]
    NoGuard(PathBuf),
    /// The data directory holds a block store but no guard: a guard made there now would be
    /// older than the store's history.
    #[error(
        "{0} holds a block store but no signing guard: import into an empty data directory \
         (the node syncs the chain again), or into the guard this store came with"
    )]
    StoreWithoutGuard(PathBuf),
    /// A node is running on the data directory: stop it before importing.
    #[error("another quasar-node is using {0}: stop it before importing a signing history")]
    NodeRunning(PathBuf),
    /// The document could not be read or written.
    #[error("{path}: {error}")]
    File {
        /// The file.
        path: PathBuf,
        /// What failed.
        error: std::io::Error,
    },
}

/// The owner a validator's guard file is bound to: its BLS vote key on the chain of
/// `genesis_hash` (so another validator's or another chain's guard is refused).
pub fn guard_owner(public_key: &PublicKey, genesis_hash: &Hash) -> Hash {
    tagged_hash(
        "QUASAR-GUARD-OWNER-v1",
        &[&public_key.to_bytes(), genesis_hash],
    )
}

/// A signing-history document (module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SigningHistory {
    /// Always [`HISTORY_FORMAT`].
    pub format: String,
    /// Always [`HISTORY_VERSION`].
    pub version: u32,
    /// The guard's owner ([`guard_owner`]), hex.
    pub owner: String,
    /// The signing key's public key, hex: the validator's BLS key (informative; `owner`
    /// binds it).
    pub public_key: String,
    /// The genesis hash, hex, for a node's guard (informative; `owner` binds it); `null` for a
    /// thresholdd guard, which is bound to its key alone.
    pub genesis_hash: Option<String>,
    /// What was signed, by increasing view.
    pub views: Vec<ViewEntry>,
}

/// One view of a [`SigningHistory`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ViewEntry {
    /// The view.
    pub view: u64,
    /// The notarized block's hash, hex, or `null`.
    pub notarize: Option<String>,
    /// The finalized block's hash, hex, or `null`.
    pub finalize: Option<String>,
    /// Whether a nullify vote was signed.
    pub nullify: bool,
}

impl SigningHistory {
    /// The history `guard` holds, for the signing key `public_key` (and, for a node's guard,
    /// the chain of `genesis_hash`).
    pub fn export(guard: &SigningGuard, public_key: &[u8], genesis_hash: Option<Hash>) -> Self {
        let (owner, views) = guard.history();
        SigningHistory {
            format: HISTORY_FORMAT.into(),
            version: HISTORY_VERSION,
            owner: hex::encode(owner),
            public_key: hex::encode(public_key),
            genesis_hash: genesis_hash.map(hex::encode),
            views: views
                .iter()
                .map(|v| ViewEntry {
                    view: v.view,
                    notarize: v.notarize.map(hex::encode),
                    finalize: v.finalize.map(hex::encode),
                    nullify: v.nullify,
                })
                .collect(),
        }
    }

    /// Parses and checks a document (module docs); bounded before anything is parsed.
    ///
    /// Errors: [`HistoryError::TooLarge`], [`HistoryError::Malformed`].
    pub fn parse(bytes: &[u8]) -> Result<SigningHistory, HistoryError> {
        if bytes.len() > MAX_HISTORY_BYTES {
            return Err(HistoryError::TooLarge(bytes.len()));
        }
        let history: SigningHistory =
            serde_json::from_slice(bytes).map_err(|e| HistoryError::Malformed(e.to_string()))?;
        if history.format != HISTORY_FORMAT {
            return Err(HistoryError::Malformed(format!(
                "format is {:?}, expected {HISTORY_FORMAT:?}",
                history.format
            )));
        }
        if history.version != HISTORY_VERSION {
            return Err(HistoryError::Malformed(format!(
                "version {} (this node reads version {HISTORY_VERSION})",
                history.version
            )));
        }
        // Checks every field once; `votes` repeats the work cheaply where it is needed.
        history.owner()?;
        history.votes()?;
        Ok(history)
    }

    /// The owner, decoded. Errors: [`HistoryError::Malformed`].
    pub fn owner(&self) -> Result<Hash, HistoryError> {
        parse_hash("owner", &self.owner)
    }

    /// The views as guard records. Errors: [`HistoryError::Malformed`] for views out of order
    /// or empty, more than a guard holds, or a hash that is not 64 hex digits.
    pub fn votes(&self) -> Result<Vec<ViewVotes>, HistoryError> {
        if self.views.len() as u64 > GUARD_WINDOW + 1 {
            return Err(HistoryError::Malformed(format!(
                "{} views: a guard holds at most {}",
                self.views.len(),
                GUARD_WINDOW + 1
            )));
        }
        let mut previous: Option<u64> = None;
        self.views
            .iter()
            .map(|entry| {
                if previous.is_some_and(|p| entry.view <= p) {
                    return Err(HistoryError::Malformed(format!(
                        "views not strictly increasing at {}",
                        entry.view
                    )));
                }
                previous = Some(entry.view);
                if entry.notarize.is_none() && entry.finalize.is_none() && !entry.nullify {
                    return Err(HistoryError::Malformed(format!(
                        "view {} records no vote",
                        entry.view
                    )));
                }
                let hash = |what, value: &Option<String>| {
                    value.as_deref().map(|h| parse_hash(what, h)).transpose()
                };
                Ok(ViewVotes {
                    view: entry.view,
                    notarize: hash("notarize", &entry.notarize)?,
                    finalize: hash("finalize", &entry.finalize)?,
                    nullify: entry.nullify,
                })
            })
            .collect()
    }

    /// Merges this history into `guard` (durably), whose owner must be `expected_owner`.
    ///
    /// Errors: [`HistoryError::Foreign`] for another validator's or chain's history;
    /// [`HistoryError::Guard`] when it conflicts with what the guard holds (nothing changes);
    /// [`HistoryError::Malformed`].
    pub fn import_into(
        &self,
        guard: &mut SigningGuard,
        expected_owner: &Hash,
    ) -> Result<quasar_storage::ImportReport, HistoryError> {
        let owner = self.owner()?;
        if owner != *expected_owner {
            return Err(HistoryError::Foreign {
                found: hex::encode(owner),
                expected: hex::encode(expected_owner),
            });
        }
        Ok(guard.import(&owner, &self.votes()?)?)
    }
}

/// Where a signing guard lives and whom it belongs to: a node's (`data_dir`, bound to the
/// validator's BLS key and the genesis, `quasar_node::runtime::guard_location`) or one of
/// thresholdd's per-key guards (`<data-dir>/guards/<keyId>`, bound to the vote key,
/// `quasar_thresholdd::guard_location`).
#[derive(Debug, Clone)]
pub struct GuardLocation {
    /// The directory holding the guard file.
    pub dir: PathBuf,
    /// The owner the guard file must name.
    pub owner: Hash,
    /// The signing key's public key (written into exported documents).
    pub public_key: Vec<u8>,
    /// The chain's genesis hash, for a node's guard.
    pub genesis_hash: Option<Hash>,
    /// The directory whose lock a running process holds, and the lock file's name: an import
    /// takes it, so it is refused while the node or daemon runs.
    pub lock: (PathBuf, &'static str),
    /// A directory that, present while the guard file is not, shows that the guard was lost
    /// (a node's block store): an import there is refused ([`HistoryError::StoreWithoutGuard`]).
    pub store: Option<PathBuf>,
}

impl GuardLocation {
    fn path(&self) -> PathBuf {
        self.dir.join(quasar_storage::GUARD_FILE)
    }

    /// The guard, which must exist. Errors: [`HistoryError::NoGuard`] (nothing is created),
    /// [`HistoryError::Guard`] (a corrupt or foreign guard file).
    fn open_existing(&self) -> Result<SigningGuard, HistoryError> {
        if !self.path().exists() {
            return Err(HistoryError::NoGuard(self.path()));
        }
        Ok(SigningGuard::open(&self.dir, &self.owner)?)
    }
}

/// `guard export`: the signing history at `location` as a pretty-printed document. Errors:
/// [`HistoryError::NoGuard`], [`HistoryError::Guard`] (nothing is created).
pub fn export(location: &GuardLocation) -> Result<String, HistoryError> {
    let guard = location.open_existing()?;
    let history = SigningHistory::export(&guard, &location.public_key, location.genesis_hash);
    serde_json::to_string_pretty(&history).map_err(|e| HistoryError::Malformed(e.to_string()))
}

/// `guard import`: merges the document in `file` into the guard at `location`, creating it in
/// an empty directory (a validator moving to this host), under the lock of the process that
/// uses the guard: refused while it runs.
///
/// Errors: [`HistoryError::File`], [`HistoryError::NodeRunning`],
/// [`HistoryError::StoreWithoutGuard`], [`HistoryError::Foreign`], [`HistoryError::Malformed`]
/// (also for a document whose key or genesis contradicts its owner), the document's errors
/// ([`SigningHistory::parse`], [`SigningHistory::import_into`]), [`HistoryError::Guard`].
pub fn import(
    location: &GuardLocation,
    file: &Path,
) -> Result<quasar_storage::ImportReport, HistoryError> {
    use std::io::Read;
    let mut bytes = Vec::new();
    // One byte past the limit at most, whatever the file is (a pipe, /dev/zero): parse refuses it.
    std::fs::File::open(file)
        .and_then(|f| f.take(MAX_HISTORY_BYTES as u64 + 1).read_to_end(&mut bytes))
        .map_err(|error| HistoryError::File {
            path: file.to_path_buf(),
            error,
        })?;
    let history = SigningHistory::parse(&bytes)?;
    // Checked before the guard (and its directory) is created: the owner, and the key and
    // genesis the document names beside it, which must not contradict it.
    if history.owner()? != location.owner {
        return Err(HistoryError::Foreign {
            found: history.owner.clone(),
            expected: hex::encode(location.owner),
        });
    }
    let named_key = hex::decode(&history.public_key).ok();
    let named_genesis = history
        .genesis_hash
        .as_deref()
        .map(|h| parse_hash("genesis_hash", h));
    let genesis_matches = match (named_genesis, location.genesis_hash) {
        (None, None) => true,
        (Some(Ok(named)), Some(expected)) => named == expected,
        _ => false,
    };
    if named_key.as_deref() != Some(location.public_key.as_slice()) || !genesis_matches {
        return Err(HistoryError::Malformed(format!(
            "the document's owner is this validator's, but its public_key or genesis_hash is not \
             (expected public_key {} and genesis_hash {}): it was altered",
            hex::encode(&location.public_key),
            location.genesis_hash.map_or("null".into(), hex::encode)
        )));
    }
    // A guard created next to an existing block store would be older than the history that
    // store holds: the node refuses to start on it. Import into an empty data directory, or
    // into the guard that store came with.
    if !location.path().exists() && location.store.as_deref().is_some_and(Path::exists) {
        return Err(HistoryError::StoreWithoutGuard(location.dir.clone()));
    }
    let (lock_dir_path, lock_file) = &location.lock;
    std::fs::create_dir_all(lock_dir_path).map_err(|error| HistoryError::File {
        path: lock_dir_path.clone(),
        error,
    })?;
    // The running process's lock: never change a guard under a process that is using it.
    let _lock = lock_dir(lock_dir_path, lock_file).map_err(|e| match e {
        DirLockError::InUse { dir, .. } => HistoryError::NodeRunning(dir),
        DirLockError::Io { path, source } => HistoryError::File {
            path,
            error: source,
        },
    })?;
    let mut guard = SigningGuard::open(&location.dir, &location.owner)?;
    history.import_into(&mut guard, &location.owner)
}

/// `guard export --out`: [`export`] written to `out`, or to standard output without one.
/// Errors: as [`export`]; [`HistoryError::File`] when `out` cannot be written.
pub fn write_export(location: &GuardLocation, out: Option<&Path>) -> Result<(), HistoryError> {
    let json = export(location)? + "\n";
    match out {
        Some(path) => std::fs::write(path, json).map_err(|error| HistoryError::File {
            path: path.to_path_buf(),
            error,
        }),
        None => {
            print!("{json}");
            Ok(())
        }
    }
}

/// What `guard import` prints about `report`, the import of `file`.
pub fn describe_import(file: &Path, report: &quasar_storage::ImportReport) -> String {
    format!(
        "imported {}: {} view(s) added, {} already held, {} below the guard's window (dropped)",
        file.display(),
        report.views_added,
        report.views_unchanged,
        report.views_too_old
    )
}

/// `guard inspect`: the guard at `location` in words, one line per view. Errors: as
/// [`export`] (nothing is created).
pub fn inspect(location: &GuardLocation) -> Result<String, HistoryError> {
    let guard = location.open_existing()?;
    let (owner, views) = guard.history();
    let mut out = format!(
        "signing guard {}\nowner {}\npublic key {}\n{}highest view {}, {} view(s) recorded \
         (window {GUARD_WINDOW})\n",
        location.path().display(),
        hex::encode(owner),
        hex::encode(&location.public_key),
        location
            .genesis_hash
            .map(|h| format!("genesis {}\n", hex::encode(h)))
            .unwrap_or_default(),
        guard.highest_view(),
        views.len()
    );
    let short = |h: Hash| {
        if h == [0; 32] {
            "fenced".to_string()
        } else {
            hex::encode(&h[..8])
        }
    };
    for v in views {
        let mut votes = Vec::new();
        if let Some(h) = v.notarize {
            votes.push(format!("notarize {}", short(h)));
        }
        if let Some(h) = v.finalize {
            votes.push(format!("finalize {}", short(h)));
        }
        if v.nullify {
            votes.push("nullify".into());
        }
        out.push_str(&format!("view {}: {}\n", v.view, votes.join(", ")));
    }
    Ok(out)
}

fn parse_hash(what: &str, value: &str) -> Result<Hash, HistoryError> {
    let mut hash = [0u8; 32];
    hex::decode_to_slice(value, &mut hash)
        .map_err(|e| HistoryError::Malformed(format!("{what}: {e} (expected 64 hex digits)")))?;
    Ok(hash)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quasar_crypto::bls::SecretKey;
    use quasar_storage::{VoteIntent, VoteKind};

    fn guard_with_votes(dir: &std::path::Path, owner: &Hash) -> SigningGuard {
        let mut guard = SigningGuard::open(dir, owner).unwrap();
        for (view, kind, block) in [
            (7, VoteKind::Notarize, [1; 32]),
            (7, VoteKind::Finalize, [1; 32]),
            (8, VoteKind::Nullify, [0; 32]),
        ] {
            guard
                .check_and_record(&VoteIntent { view, kind, block })
                .unwrap();
        }
        guard
    }

    #[test]
    fn export_parse_and_import_round_trip() {
        let key = SecretKey::from_seed(&[3; 32]).public_key();
        let genesis = [9; 32];
        let owner = guard_owner(&key, &genesis);
        let from = tempfile::tempdir().unwrap();
        let history = SigningHistory::export(
            &guard_with_votes(from.path(), &owner),
            &key.to_bytes(),
            Some(genesis),
        );
        let text = serde_json::to_string_pretty(&history).unwrap();
        let parsed = SigningHistory::parse(text.as_bytes()).unwrap();
        assert_eq!(parsed, history);

        let to = tempfile::tempdir().unwrap();
        let mut guard = SigningGuard::open(to.path(), &owner).unwrap();
        let report = parsed.import_into(&mut guard, &owner).unwrap();
        assert_eq!(report.views_added, 2);
        assert_eq!(
            guard.history(),
            SigningGuard::open(from.path(), &owner).unwrap().history()
        );

        let other = guard_owner(&key, &[8; 32]);
        assert!(matches!(
            parsed.import_into(&mut SigningGuard::in_memory(), &other),
            Err(HistoryError::Foreign { .. })
        ));
    }

    /// Every malformed document is refused with a reason, never a panic.
    #[test]
    fn malformed_documents_are_refused() {
        let key = SecretKey::from_seed(&[3; 32]).public_key();
        let owner = guard_owner(&key, &[9; 32]);
        let dir = tempfile::tempdir().unwrap();
        let good = serde_json::to_value(SigningHistory::export(
            &guard_with_votes(dir.path(), &owner),
            &key.to_bytes(),
            Some([9; 32]),
        ))
        .unwrap();
        let edits: [(&str, serde_json::Value); 7] = [
            ("/format", "eip-3076".into()),
            ("/version", 2.into()),
            ("/owner", "zz".into()),
            ("/views/0/notarize", "00".into()),
            ("/views/1/view", 1.into()),
            ("/views/1/nullify", false.into()),
            ("/extra", 1.into()),
        ];
        for (pointer, value) in edits {
            let mut bad = good.clone();
            match bad.pointer_mut(pointer) {
                Some(slot) => *slot = value,
                None => {
                    bad.as_object_mut().unwrap().insert("extra".into(), value);
                }
            }
            let text = serde_json::to_vec(&bad).unwrap();
            assert!(
                matches!(
                    SigningHistory::parse(&text),
                    Err(HistoryError::Malformed(_))
                ),
                "{pointer}"
            );
        }
        assert!(matches!(
            SigningHistory::parse(&vec![b' '; MAX_HISTORY_BYTES + 1]),
            Err(HistoryError::TooLarge(_))
        ));
    }
}
