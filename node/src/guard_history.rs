//! Signing-history interchange: a validator's signing guard as a JSON document, so that the
//! validator can move to another host (or another data directory) without copying an opaque
//! file, and an operator can read what the guard holds (`quasar-node guard export | import |
//! inspect`).
//!
//! Modelled on EIP-3076 (the Ethereum slashing-protection interchange): the document names whom
//! the history belongs to and, per view, what was signed; importing merges it into the
//! destination's guard and never lowers it ([`SigningGuard::import`]). Unlike EIP-3076 it carries
//! every view the guard holds (at most `GUARD_WINDOW + 1`, a few kilobytes), not only the highest
//! ones, because our guard's rule is per view (DESIGN.md §2) and the whole record is small.
//!
//! # Format (`quasar-signing-history`, version 1)
//!
//! ```json
//! {
//!   "format": "quasar-signing-history",
//!   "version": 1,
//!   "owner": "<64 hex digits>",
//!   "validator_public_key": "<96 hex digits: the BLS vote key>",
//!   "genesis_hash": "<64 hex digits>",
//!   "views": [
//!     { "view": 41, "notarize": "<64 hex>", "finalize": "<64 hex>", "nullify": false },
//!     { "view": 42, "notarize": null, "finalize": null, "nullify": true }
//!   ]
//! }
//! ```
//!
//! `owner` is what the guard file is bound to: TupleHash-tagged SHA3 of the validator's BLS
//! public key and the genesis hash ([`guard_owner`]); a history is imported only into the guard
//! of the same key on the same chain. `views` are strictly increasing; a view names at least one
//! vote; a fenced view has all-zero notarize and finalize blocks. Unknown fields are refused.
//! A document is at most [`MAX_HISTORY_BYTES`] long.

use crate::config::{load_keys, ConfigError, GenesisFile, NodeConfig};
use crate::process::{lock_dir, DirLockError};
use crate::runtime::DATA_DIR_LOCK_FILE;
use quasar_crypto::bls::PublicKey;
use quasar_crypto::hash::{tagged_hash, Hash};
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
        "this signing history belongs to owner {found}, not to this validator on this chain \
         ({expected}): its key and genesis are not the ones of this node.toml"
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
    /// The validator's BLS public key, hex (informative; `owner` binds it).
    pub validator_public_key: String,
    /// The genesis hash, hex (informative; `owner` binds it).
    pub genesis_hash: String,
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
    /// The history `guard` holds, for the validator with `public_key` on the chain of
    /// `genesis_hash`.
    pub fn export(guard: &SigningGuard, public_key: &PublicKey, genesis_hash: &Hash) -> Self {
        let (owner, views) = guard.history();
        SigningHistory {
            format: HISTORY_FORMAT.into(),
            version: HISTORY_VERSION,
            owner: hex::encode(owner),
            validator_public_key: hex::encode(public_key.to_bytes()),
            genesis_hash: hex::encode(genesis_hash),
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

/// The guard of the validator `cfg` describes, with its vote key and genesis hash. With
/// `create` false, a data directory without a guard file is [`HistoryError::NoGuard`] (nothing
/// is created); with `create`, an empty guard is made, as the node's first start would.
///
/// Errors: [`HistoryError::Config`], [`HistoryError::NoGuard`], [`HistoryError::Guard`] (a
/// corrupt or foreign guard file).
fn open_guard(
    cfg: &NodeConfig,
    create: bool,
) -> Result<(SigningGuard, PublicKey, Hash), HistoryError> {
    let genesis = GenesisFile::load(&cfg.genesis)?.check()?;
    let public_key = load_keys(&cfg.key_dir, &cfg.key_access()?)?
        .bls
        .public_key();
    let path = cfg.data_dir.join(quasar_storage::GUARD_FILE);
    if !create && !path.exists() {
        return Err(HistoryError::NoGuard(path));
    }
    let owner = guard_owner(&public_key, &genesis.hash);
    let guard = SigningGuard::open(&cfg.data_dir, &owner)?;
    Ok((guard, public_key, genesis.hash))
}

/// `quasar-node guard export`: the signing history of `cfg`'s validator as a pretty-printed
/// document. Errors: as [`open_guard`] (nothing is created).
pub fn export(cfg: &NodeConfig) -> Result<String, HistoryError> {
    let (guard, public_key, genesis) = open_guard(cfg, false)?;
    let history = SigningHistory::export(&guard, &public_key, &genesis);
    serde_json::to_string_pretty(&history).map_err(|e| HistoryError::Malformed(e.to_string()))
}

/// `quasar-node guard import`: merges the document in `file` into `cfg`'s validator's guard,
/// creating the guard in an empty data directory (a validator moving to this host), under the
/// data directory's lock: it refuses while a node runs there.
///
/// Errors: [`HistoryError::File`], [`HistoryError::NodeRunning`], the document's errors
/// ([`SigningHistory::parse`], [`SigningHistory::import_into`]), and [`open_guard`]'s.
pub fn import(cfg: &NodeConfig, file: &Path) -> Result<quasar_storage::ImportReport, HistoryError> {
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
    // Checked before the guard (and its directory) is created.
    let genesis = GenesisFile::load(&cfg.genesis)?.check()?;
    let public_key = load_keys(&cfg.key_dir, &cfg.key_access()?)?
        .bls
        .public_key();
    let owner = guard_owner(&public_key, &genesis.hash);
    if history.owner()? != owner {
        return Err(HistoryError::Foreign {
            found: history.owner.clone(),
            expected: hex::encode(owner),
        });
    }
    std::fs::create_dir_all(&cfg.data_dir).map_err(|error| HistoryError::File {
        path: cfg.data_dir.clone(),
        error,
    })?;
    // The running node's lock: never change a guard under a node that is using it.
    let _lock = lock_dir(&cfg.data_dir, DATA_DIR_LOCK_FILE).map_err(|e| match e {
        DirLockError::InUse { dir, .. } => HistoryError::NodeRunning(dir),
        DirLockError::Io { path, source } => HistoryError::File {
            path,
            error: source,
        },
    })?;
    let (mut guard, _, _) = open_guard(cfg, true)?;
    history.import_into(&mut guard, &owner)
}

/// `quasar-node guard inspect`: the guard of `cfg`'s validator in words, one line per view.
/// Errors: as [`open_guard`] (nothing is created).
pub fn inspect(cfg: &NodeConfig) -> Result<String, HistoryError> {
    let (guard, public_key, genesis) = open_guard(cfg, false)?;
    let (owner, views) = guard.history();
    let mut out = format!(
        "signing guard {}\nowner {}\nvalidator {}\ngenesis {}\nhighest view {}, {} view(s) \
         recorded (window {GUARD_WINDOW})\n",
        cfg.data_dir.join(quasar_storage::GUARD_FILE).display(),
        hex::encode(owner),
        hex::encode(public_key.to_bytes()),
        hex::encode(genesis),
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
        let history =
            SigningHistory::export(&guard_with_votes(from.path(), &owner), &key, &genesis);
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
            &key,
            &[9; 32],
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
