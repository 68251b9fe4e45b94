//! thresholdd's `validator.sign_vote`: the node's consensus votes, signed behind a signing guard
//! kept inside the daemon (docs/architecture.md §2, §8, §9).
//!
//! The vote key is a validator's BLS key imported into the keystore ([`import_vote_key`],
//! `thresholdd keys import-validator`) under its own id (`vote-…`), apart from `bls.keygen`'s
//! keys: `bls.sign` cannot reach it, so nothing signs with it outside the guard. Each key has its
//! own [`SigningGuard`] in
//! `<data-dir>/guards/<keyId>/`, owned by the key's public key. The guard records, per view and
//! kind, a digest of the whole signed message (so the same block with another height, chain,
//! epoch or domain conflicts, and a repeat is byte-identical); a nullify vote must name the
//! all-zero block, as the node's do. A vote is recorded durably
//! (write, fsync, directory fsync) before it is signed, so a signature never leaves before the
//! record that forbids its conflicting twin, across crashes and restarts too. The message signed
//! is [`quasar_wire::vote_signing_message`], the bytes the node itself would sign.
//!
//! A guard that is new (a first start, or a lost `guards/` directory) signs nothing until the
//! node fences it with `validator.fence` ([`Guards`]): like the node's own guard, it cannot know
//! in which views its earlier self signed, so it waits for the node, which listens to the
//! network first. `validator.key` reports whether the guard is fenced.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::RpcModule;
use quasar_chainspec::guard_history::GuardLocation;
use quasar_crypto::hash::{tagged_hash, Hash};
use quasar_storage::{GuardDecision, SigningGuard, VoteIntent};
use quasar_wire::{vote_signing_message, EpochDomain, VoteKind};
use serde::{Deserialize, Serialize};

use super::bls::{public_key_field, sign_with};
use super::keystore::{Keystore, KeystoreError, NewKey, Scheme};
use super::rpc::{self, hex_field, invalid_params, scheme_error};
use super::{vote_key_id, Context, DaemonError};
use quasar_crypto::bls::SecretKey;
use zeroize::Zeroizing;

/// Stores validator key `key` (the node's BLS vote key, `bls_secret_key` of its key directory)
/// in `keystore` as a 1-of-1 BLS key, so `validator.sign_vote` signs with it: its share is the
/// secret itself at index 1 (a degree-0 polynomial). Returns the key id (`vote-…`: only
/// `validator.sign_vote` signs with it). Errors: the keystore's (e.g.
/// [`KeystoreError::DuplicateKey`] when it is already imported).
pub fn import_vote_key(keystore: &Keystore, key: &SecretKey) -> Result<String, KeystoreError> {
    let public_key = key.public_key().to_bytes();
    let id = vote_key_id(&public_key);
    let scalar = Zeroizing::new(key.to_bytes());
    // The layout of `bls_threshold::SecretShare::to_bytes`, which `bls.sign` reads.
    let mut share = Zeroizing::new(Vec::with_capacity(2 + scalar.len()));
    share.extend_from_slice(&1u16.to_be_bytes());
    share.extend_from_slice(scalar.as_slice());
    keystore.put(&NewKey {
        key_id: &id,
        scheme: Scheme::Bls,
        threshold: 1,
        participants: 1,
        public_key: &public_key,
        secret: &share,
    })?;
    Ok(id)
}

/// The longest cert profile id a vote may name, in bytes.
const MAX_PROFILE_ID_LEN: usize = 64;

/// The owner of the signing guard of the vote key `public_key` (its file names it, so one
/// key's guard never stands in for another's).
fn guard_owner(public_key: &[u8]) -> Hash {
    tagged_hash("thresholdd/guard-owner", &[public_key])
}

/// Where the signing guard of vote key `key_id` (public key `public_key`) of the keystore in
/// `data_dir` lives, for `thresholdd guard export | import | inspect`
/// ([`quasar_chainspec::guard_history`]); an import takes the daemon's lock ([`super::LOCK_FILE`]).
pub fn guard_location(data_dir: &Path, key_id: &str, public_key: &[u8]) -> GuardLocation {
    GuardLocation {
        dir: data_dir.join("guards").join(key_id),
        owner: guard_owner(public_key),
        public_key: public_key.to_vec(),
        genesis_hash: None,
        lock: (data_dir.to_path_buf(), super::LOCK_FILE),
        store: None,
    }
}

/// One vote key's signing guard and whether it is fenced yet.
struct OpenGuard {
    guard: SigningGuard,
    /// The guard is new (its directory held no record, or an earlier start never fenced it):
    /// it signs nothing until the node fences it ([`Guards::fence`]).
    unfenced: bool,
}

/// The open signing guards, one per vote key, opened on first use.
///
/// A guard that is new when opened ([`quasar_storage::GUARD_FILE`] absent: a first start, or a
/// lost data directory) is marked unfenced on disk ([`quasar_storage::UNFENCED_FILE`]) before
/// its empty record is written, and signs nothing until `validator.fence` names the view the
/// node fenced after listening to the network: the daemon cannot tell on its own in which views
/// its earlier self signed, the node can (the rule of `quasar-node`'s engine,
/// `Engine::listen_before_signing`, applied to the daemon's guard).
pub(super) struct Guards {
    dir: PathBuf,
    open: Mutex<HashMap<String, OpenGuard>>,
}

impl Guards {
    /// Guards kept under `<data_dir>/guards`.
    pub(super) fn new(data_dir: &Path) -> Guards {
        Guards {
            dir: data_dir.join("guards"),
            open: Mutex::new(HashMap::new()),
        }
    }

    /// Runs `action` on the guard of key `key_id` (public key `public_key`), opening it if
    /// needed (a new one is marked unfenced first). Errors: −32000 when the guard cannot be
    /// opened (corrupt, another key's) or the guards are poisoned; `action`'s.
    fn with_guard<T>(
        &self,
        key_id: &str,
        public_key: &[u8],
        action: impl FnOnce(&Path, &mut OpenGuard) -> Result<T, ErrorObjectOwned>,
    ) -> Result<T, ErrorObjectOwned> {
        let mut open = self.open.lock().map_err(|_| {
            scheme_error(
                "the signing guards are unavailable after an internal failure: restart thresholdd",
            )
        })?;
        let dir = self.dir.join(key_id);
        if !open.contains_key(key_id) {
            let opening = |e: &dyn std::fmt::Display| {
                scheme_error(format!("the signing guard of {key_id}: {e}"))
            };
            if !dir.join(quasar_storage::GUARD_FILE).exists() {
                quasar_storage::mark_unfenced(&dir).map_err(|e| opening(&e))?;
            }
            let guard =
                SigningGuard::open(&dir, &guard_owner(public_key)).map_err(|e| opening(&e))?;
            let unfenced = dir.join(quasar_storage::UNFENCED_FILE).exists();
            open.insert(key_id.to_string(), OpenGuard { guard, unfenced });
        }
        let entry = open
            .get_mut(key_id)
            .ok_or_else(|| scheme_error(format!("the signing guard of {key_id} is not open")))?;
        action(&dir, entry)
    }

    /// Records `intent` durably in the guard of key `key_id` (public key `public_key`).
    /// Errors: −32000 when the guard is not fenced yet, refuses (a conflicting or too old vote)
    /// or cannot persist or read its record.
    fn record(
        &self,
        key_id: &str,
        public_key: &[u8],
        intent: &VoteIntent,
    ) -> Result<GuardDecision, ErrorObjectOwned> {
        self.with_guard(key_id, public_key, |_, entry| {
            if entry.unfenced {
                return Err(scheme_error(format!(
                    "the signing guard of {key_id} is new (a first start, or its record was \
                     lost): it signs nothing until the node fences it (validator.fence) after \
                     listening to the network"
                )));
            }
            entry
                .guard
                .check_and_record(intent)
                .map_err(|e| scheme_error(format!("signing guard refused: {e}")))
        })
    }

    /// Whether the guard of key `key_id` is fenced (opening it, so a new one is marked).
    /// Errors: as [`Guards::with_guard`].
    fn fenced(&self, key_id: &str, public_key: &[u8]) -> Result<bool, ErrorObjectOwned> {
        self.with_guard(key_id, public_key, |_, entry| Ok(!entry.unfenced))
    }

    /// Fences `view` in the guard of key `key_id` durably ([`SigningGuard::fence`]), then
    /// removes its unfenced marker; returns the guard's fenced view. Errors: −32000 when the
    /// fence or the marker's removal cannot be made durable (the guard stays unfenced).
    fn fence(&self, key_id: &str, public_key: &[u8], view: u64) -> Result<u64, ErrorObjectOwned> {
        self.with_guard(key_id, public_key, |dir, entry| {
            // View 0 (a genesis start) fences nothing: no vote is ever in it.
            if view > 0 {
                entry
                    .guard
                    .fence(view)
                    .map_err(|e| scheme_error(format!("the signing guard of {key_id}: {e}")))?;
            }
            quasar_storage::clear_unfenced(dir)
                .map_err(|e| scheme_error(format!("the signing guard of {key_id}: {e}")))?;
            entry.unfenced = false;
            Ok(entry.guard.fenced_view())
        })
    }
}

/// A vote's kind on the wire of this method.
#[derive(Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Notarize,
    Finalize,
    Nullify,
}

/// `validator.sign_vote`'s parameters: the vote's fields and its epoch's domain.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SignVoteParams {
    /// The vote key's BLS public key, hex (48 bytes).
    pub_key_hex: String,
    kind: Kind,
    chain_id: u64,
    epoch: u64,
    view: u64,
    height: u64,
    /// The block hash, hex (32 bytes; zeros for a nullify vote).
    block_hex: String,
    /// The epoch's validator-set root, hex (32 bytes).
    validator_set_root_hex: String,
    /// The epoch's cert profile id, e.g. `quasar`.
    profile_id: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SignVoteReply {
    signature_hex: String,
    /// `"fresh"`: newly recorded; `"repeat"`: the identical vote was signed before.
    decision: &'static str,
}

/// Field `field` as a 32-byte hash. Errors: −32602.
fn hash_field(field: &str, value: &str) -> Result<Hash, ErrorObjectOwned> {
    let bytes = hex_field(field, value)?;
    Hash::try_from(bytes.as_slice())
        .map_err(|_| invalid_params(field, format_args!("{} bytes, expected 32", bytes.len())))
}

fn sign_vote(context: &Context, params: SignVoteParams) -> Result<SignVoteReply, ErrorObjectOwned> {
    let public_key = public_key_field("pubKeyHex", &params.pub_key_hex)?;
    let block = hash_field("blockHex", &params.block_hex)?;
    let validator_set_root = hash_field("validatorSetRootHex", &params.validator_set_root_hex)?;
    if params.profile_id.len() > MAX_PROFILE_ID_LEN {
        return Err(invalid_params(
            "profileId",
            format_args!("longer than {MAX_PROFILE_ID_LEN} bytes"),
        ));
    }
    let (kind, guard_kind) = match params.kind {
        Kind::Notarize => (VoteKind::Notarize, quasar_storage::VoteKind::Notarize),
        Kind::Finalize => (VoteKind::Finalize, quasar_storage::VoteKind::Finalize),
        Kind::Nullify => (VoteKind::Nullify, quasar_storage::VoteKind::Nullify),
    };
    if params.kind == Kind::Nullify && block != [0u8; 32] {
        return Err(invalid_params(
            "blockHex",
            "a nullify vote names no block: all zeros",
        ));
    }
    let message = vote_signing_message(
        kind,
        params.chain_id,
        params.epoch,
        params.view,
        params.height,
        &block,
        &EpochDomain {
            validator_set_root,
            profile_id: params.profile_id,
        },
    );
    let public_bytes = public_key.to_bytes();
    // The key must exist before its guard is created; its entry is read once for both.
    let (info, secret) = context.find_vote_key(&public_bytes)?;
    let decision = context
        .guards
        .record(
            info.key_id.as_str(),
            &public_bytes,
            &VoteIntent {
                view: params.view,
                kind: guard_kind,
                // The whole vote, not only its block: the same block with another height,
                // chain, epoch or domain is another vote, and conflicts.
                block: tagged_hash("thresholdd/vote", &[&message]),
            },
        )
        .inspect_err(|_| {
            context.metrics.guard_refusals.inc();
        })?;
    let signature = sign_with(&info, &secret, &public_key, &message)?;
    context.metrics.votes_signed.inc();
    tracing::debug!(
        key_id = %info.key_id,
        view = params.view,
        kind = ?guard_kind,
        ?decision,
        "vote signed"
    );
    Ok(SignVoteReply {
        signature_hex: hex::encode(signature.to_bytes()),
        decision: match decision {
            GuardDecision::Fresh => "fresh",
            GuardDecision::Repeat => "repeat",
        },
    })
}

/// `validator.key`'s parameters: a vote key's public key.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct KeyParams {
    /// The vote key's BLS public key, hex (48 bytes).
    pub_key_hex: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct KeyReply {
    key_id: String,
    /// Whether the key's signing guard is fenced ([`Guards`]): `false` for a new guard, which
    /// signs nothing until `validator.fence`.
    fenced: bool,
}

/// `validator.key`: whether this daemon holds the vote key, and whether its signing guard is
/// fenced (a node checks both at start). Opens the guard, marking a new one unfenced.
/// Errors: −32602 for a bad key; −32000 when the keystore holds no such vote key or its guard
/// cannot be opened.
fn vote_key(context: &Context, params: KeyParams) -> Result<KeyReply, ErrorObjectOwned> {
    let public_key = public_key_field("pubKeyHex", &params.pub_key_hex)?;
    let public_bytes = public_key.to_bytes();
    let (info, _) = context.find_vote_key(&public_bytes)?;
    let fenced = context.guards.fenced(info.key_id.as_str(), &public_bytes)?;
    Ok(KeyReply {
        key_id: info.key_id.to_string(),
        fenced,
    })
}

/// `validator.fence`'s parameters: a vote key and the view to fence.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct FenceParams {
    /// The vote key's BLS public key, hex (48 bytes).
    pub_key_hex: String,
    /// The view the node fenced: nothing is signed in it or (beyond the guard window) below it.
    view: u64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FenceReply {
    /// The highest fenced view the guard now holds.
    fenced_view: u64,
}

/// `validator.fence`: fences `view` in the vote key's signing guard and lets a new guard sign
/// (in views above it). A node calls it once it has listened to the network and fenced its own
/// guard; a fence only ever forbids votes, so it never makes an equivocation possible. Errors:
/// −32602 for a bad key; −32000 when the keystore holds no such vote key or the fence cannot be
/// made durable.
fn fence(context: &Context, params: FenceParams) -> Result<FenceReply, ErrorObjectOwned> {
    let public_key = public_key_field("pubKeyHex", &params.pub_key_hex)?;
    let public_bytes = public_key.to_bytes();
    let (info, _) = context.find_vote_key(&public_bytes)?;
    let fenced_view = context
        .guards
        .fence(info.key_id.as_str(), &public_bytes, params.view)?;
    tracing::info!(key_id = %info.key_id, view = params.view, fenced_view, "signing guard fenced");
    Ok(FenceReply { fenced_view })
}

/// Registers `validator.sign_vote`, `validator.key` and `validator.fence`.
pub(super) fn register(
    module: &mut RpcModule<Context>,
    timeout: Duration,
) -> Result<(), DaemonError> {
    rpc::register(module, "validator.sign_vote", timeout, sign_vote)?;
    rpc::register(module, "validator.key", timeout, vote_key)?;
    rpc::register(module, "validator.fence", timeout, fence)?;
    Ok(())
}
