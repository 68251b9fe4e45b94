//! thresholdd's `corona.*` methods: t-of-n Corona, the lattice threshold signature of the
//! Ringtail construction ([`quasar_crypto::corona`]), from a trusted dealer, every party run in
//! this process.
//!
//! The group key is 4,640 bytes (ρ ‖ b̃; A is expanded from the 32-byte ρ, so it never travels),
//! 9,280 hex digits in a request. A key's public key in the keystore is that encoding; its
//! secret blob is the n shares' [`KeyShare::to_bytes`], each
//! [`key_share_bytes`]`(n)` bytes, concatenated in party order.
//!
//! # Multi-host ceremonies
//!
//! A host that holds one party's share (`corona.import_share`, keystore id `<keyId>-p<party>`)
//! takes part in a signing session driven by a coordinator:
//!
//! 1. `corona.round1 {pubKeyHex, party, sessionHex, parties}` → `{round1Hex}`: the party's
//!    round-1 message for the session (32-byte id, fresh per attempt) and signing set T
//!    (`parties`, at least t indices). The session id is recorded durably before the message
//!    leaves ([`super::sessions`]): this host never runs round 1 twice for one id, across
//!    restarts too. The secret round-1 state stays in memory, at most
//!    [`super::sessions::MAX_PENDING`] per party (the oldest is dropped first; a restart drops
//!    all).
//! 2. `corona.round2 {pubKeyHex, party, sessionHex, messageHex, round1Hex: [..]}` →
//!    `{round2Hex}`: the party's z_i, from every signer's round-1 message (its own included).
//!    It consumes the round-1 state: a second call for the session is refused.
//! 3. `corona.combine {pubKeyHex, sessionHex, parties, messageHex, round1Hex, round2Hex}` →
//!    `{signatureHex}`: uses no secret, so any host (or none of the parties) combines; the
//!    signature is verified before it leaves.
//!
//! A round-1 message is about 615 KB (1.2 MB of hex), so one request of 16 MiB carries the
//! round-1 messages of at most 13 signers.

use std::time::Duration;

use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::RpcModule;
use quasar_crypto::corona::local::sign_in_process;
use quasar_crypto::corona::scheme::{
    combine as combine_round2, key_share_bytes, trusted_dealer_keygen, CoronaError, GroupKey,
    KeyShare, Round1Message, Round1State, Round2Message, SessionId, SignContext, Signature, Signer,
    SigningSet,
};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use super::keystore::{Keystore, KeystoreError};
use super::keystore::{Scheme, MAX_SECRET_LEN};
use super::rpc::{
    self, hex_field, invalid_params, scheme_error, KeygenParams, SignParams, SignReply,
    VerifyParams, VerifyReply,
};
use super::sessions::{
    messages_field, round_reply, session_field, ImportShareReply, Party, RoundReply,
};
use super::{put_share, share_key_id, Context, DaemonError};

const SCHEME: Scheme = Scheme::Corona;
/// The most parties of a thresholdd Corona key: all n shares must fit one keystore entry
/// ([`MAX_SECRET_LEN`]; n = 256 takes 10.3 MB).
pub const MAX_PARTICIPANTS: u16 = 256;
/// Signing sessions tried before giving up: a session aborts (rank-deficient commitments,
/// module docs of [`quasar_crypto::corona::scheme`]) with small probability.
const MAX_SESSIONS: u32 = 8;

/// The most messages a round or combine request may carry.
const MAX: usize = MAX_PARTICIPANTS as usize;

const _: () = assert!(
    MAX_PARTICIPANTS as usize * key_share_bytes(MAX_PARTICIPANTS as usize) <= MAX_SECRET_LEN
);

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct KeygenReply {
    public_key: String,
    key_id: String,
    parties: Vec<u16>,
}

/// Field `field` as a Corona group key. Errors: −32602 (not hex, or not a 4,640-byte key).
fn group_key_field(field: &str, value: &str) -> Result<GroupKey, ErrorObjectOwned> {
    GroupKey::from_bytes(&hex_field(field, value)?).map_err(|e| invalid_params(field, e))
}

fn keygen(context: &Context, params: KeygenParams) -> Result<KeygenReply, ErrorObjectOwned> {
    if params.participants == 0 || params.participants > MAX_PARTICIPANTS {
        return Err(invalid_params(
            "participants",
            format_args!("must be in 1..={MAX_PARTICIPANTS}"),
        ));
    }
    if params.threshold == 0 || params.threshold > params.participants {
        return Err(invalid_params("threshold", "must be in 1..=participants"));
    }
    let (group, shares) = trusted_dealer_keygen(
        usize::from(params.threshold),
        usize::from(params.participants),
        &mut rand::rngs::OsRng,
    )
    .map_err(|e| scheme_error(format!("corona keygen: {e}")))?;
    let share_len = key_share_bytes(usize::from(params.participants));
    let mut secret = Zeroizing::new(Vec::with_capacity(share_len * shares.len()));
    for share in &shares {
        secret.extend_from_slice(&share.to_bytes());
    }
    let public_key = group.to_bytes();
    let id = context.store_key(SCHEME, &params, &public_key, &secret)?;
    Ok(KeygenReply {
        public_key: hex::encode(&public_key),
        key_id: id,
        parties: shares.iter().map(KeyShare::index).collect(),
    })
}

/// Signs with parties 0..t of the key whose group key is `pubKeyHex`; [`sign_in_process`]
/// combines and verifies the signature before it leaves.
fn sign(context: &Context, params: SignParams) -> Result<SignReply, ErrorObjectOwned> {
    let message = hex_field("messageHex", &params.message_hex)?;
    let group = group_key_field("pubKeyHex", &params.pub_key_hex)?;
    let (info, secret) = context.find_key(SCHEME, &group.to_bytes())?;
    let id = &info.key_id;
    let corrupt = |what: String| scheme_error(format!("keystore entry {id}: {what}"));
    let share_len = key_share_bytes(usize::from(info.participants));
    let threshold = usize::from(info.threshold);
    if secret.len() != share_len * usize::from(info.participants) {
        return Err(corrupt(format!(
            "{} bytes of shares, expected {}",
            secret.len(),
            share_len * usize::from(info.participants)
        )));
    }
    let mut signers = Vec::with_capacity(threshold);
    for bytes in secret.chunks(share_len).take(threshold) {
        let share = KeyShare::from_bytes(bytes).map_err(|e| corrupt(e.to_string()))?;
        if share.group_key() != &group {
            return Err(corrupt(format!(
                "party {}'s share belongs to another group key",
                share.index()
            )));
        }
        signers.push(Signer::new(share));
    }
    let parties: Vec<u16> = signers.iter().map(|s| s.share().index()).collect();
    let mut last = None;
    for _ in 0..MAX_SESSIONS {
        // A fresh random session id per attempt: ids never repeat, across restarts too.
        let mut session = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut session);
        match sign_in_process(
            &group,
            &mut signers,
            &parties,
            SessionId(session),
            &message,
            &mut rand::rngs::OsRng,
        ) {
            Ok(signature) => {
                return Ok(SignReply {
                    signature_hex: hex::encode(signature.to_bytes()),
                })
            }
            Err(e @ CoronaError::RankDeficient { .. }) => last = Some(e),
            Err(e) => return Err(scheme_error(format!("corona signing with {id}: {e}"))),
        }
    }
    Err(scheme_error(format!(
        "corona signing with {id}: {MAX_SESSIONS} sessions aborted, the last with: {}",
        last.map_or_else(String::new, |e| e.to_string())
    )))
}

fn verify(_: &Context, params: VerifyParams) -> Result<VerifyReply, ErrorObjectOwned> {
    let message = hex_field("messageHex", &params.message_hex)?;
    let signature = Signature::from_bytes(&hex_field("signatureHex", &params.signature_hex)?)
        .map_err(|e| invalid_params("signatureHex", e))?;
    let group = group_key_field("pubKeyHex", &params.pub_key_hex)?;
    Ok(VerifyReply {
        ok: group.verify(&message, &signature).is_ok(),
    })
}

/// Registers `corona.keygen`, `corona.sign` and `corona.verify`.
pub(super) fn register(
    module: &mut RpcModule<Context>,
    timeout: Duration,
) -> Result<(), DaemonError> {
    rpc::register(module, "corona.keygen", timeout, keygen)?;
    rpc::register(module, "corona.sign", timeout, sign)?;
    rpc::register(module, "corona.verify", timeout, verify)?;
    register_rounds(module, timeout)
}

/// `corona.import_share`'s parameters.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ImportShareParams {
    /// [`KeyShare::to_bytes`], hex.
    share_hex: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Round1Params {
    pub_key_hex: String,
    party: u16,
    session_hex: String,
    parties: Vec<u16>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Round2Params {
    pub_key_hex: String,
    party: u16,
    session_hex: String,
    message_hex: String,
    round1_hex: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CombineParams {
    pub_key_hex: String,
    session_hex: String,
    parties: Vec<u16>,
    message_hex: String,
    round1_hex: Vec<String>,
    round2_hex: Vec<String>,
}

/// Stores Corona key share `share` in `keystore` as party `share.index()`'s share of its group
/// key (id `<keyId>-p<party>`), as `corona.import_share` does, e.g. the dealt share of a
/// validator's key file (`thresholdd keys import-validator`). Returns the id. Errors: the
/// keystore's ([`KeystoreError::DuplicateKey`] when it is already there).
pub fn import_share(keystore: &Keystore, share: &KeyShare) -> Result<String, KeystoreError> {
    let bytes = Zeroizing::new(share.to_bytes());
    put_share(
        keystore,
        SCHEME,
        &share_shape(share),
        &share.group_key().to_bytes(),
        share.index(),
        &bytes,
    )
}

/// A share's t and n (at most MAX_PARTIES, 1024: the casts are lossless).
fn share_shape(share: &KeyShare) -> KeygenParams {
    KeygenParams {
        threshold: share.threshold() as u16,
        participants: share.parties() as u16,
    }
}

fn import_share_method(
    context: &Context,
    params: ImportShareParams,
) -> Result<ImportShareReply, ErrorObjectOwned> {
    let bytes = Zeroizing::new(hex_field("shareHex", &params.share_hex)?);
    let share = KeyShare::from_bytes(&bytes).map_err(|e| invalid_params("shareHex", e))?;
    let id = import_share(&context.keystore, &share).map_err(scheme_error)?;
    let shape = share_shape(&share);
    Ok(ImportShareReply {
        key_id: id,
        party: share.index(),
        public_key: hex::encode(share.group_key().to_bytes()),
        threshold: shape.threshold,
        participants: shape.participants,
    })
}

/// Runs `work` on this host's party `party` of the key `group` (opened from its imported share
/// on first use). Errors: −32000 when this daemon holds no such share or its entry is unusable.
fn with_party<R>(
    context: &Context,
    group: &GroupKey,
    party: u16,
    work: impl FnOnce(&mut Party<Signer, Round1State>) -> Result<R, ErrorObjectOwned>,
) -> Result<R, ErrorObjectOwned> {
    let public_key = group.to_bytes();
    let id = share_key_id(SCHEME, &public_key, party);
    let load = || {
        let secret = context.share_secret(SCHEME, &public_key, party)?;
        let share = KeyShare::from_bytes(&secret)
            .map_err(|e| scheme_error(format!("keystore entry {id}: {e}")))?;
        if share.group_key() != group || share.index() != party {
            return Err(scheme_error(format!(
                "keystore entry {id} holds another share"
            )));
        }
        Ok(Signer::new(share))
    };
    context.corona.with_party(&id, load, work)
}

fn round1(context: &Context, params: Round1Params) -> Result<RoundReply, ErrorObjectOwned> {
    let group = group_key_field("pubKeyHex", &params.pub_key_hex)?;
    let session = session_field(&params.session_hex)?;
    with_party(context, &group, params.party, |party| {
        let share = party.signer.share();
        let set = SigningSet::new(&params.parties, share.threshold(), share.parties())
            .map_err(|e| invalid_params("parties", e))?;
        // Durable before the message leaves: never round 1 twice for one id on this host.
        party.used.record(session)?;
        let (state, message) = party
            .signer
            .round1(SessionId(session), &set, &mut rand::rngs::OsRng)
            .map_err(|e| scheme_error(format!("corona round 1: {e}")))?;
        party.keep(session, state);
        Ok(round_reply("round1Hex", &message.to_bytes()))
    })
}

fn round2(context: &Context, params: Round2Params) -> Result<RoundReply, ErrorObjectOwned> {
    let group = group_key_field("pubKeyHex", &params.pub_key_hex)?;
    let session = session_field(&params.session_hex)?;
    let message = hex_field("messageHex", &params.message_hex)?;
    let round1 = messages_field(
        "round1Hex",
        &params.round1_hex,
        MAX,
        Round1Message::from_bytes,
    )?;
    with_party(context, &group, params.party, |party| {
        // Consumed whatever happens next: a round-1 state serves one round 2 only.
        let state = party.take(&session)?;
        let (reply, _) = party
            .signer
            .round2(state, &message, &round1)
            .map_err(|e| scheme_error(format!("corona round 2: {e}")))?;
        Ok(round_reply("round2Hex", &reply.to_bytes()))
    })
}

/// Stateless: the signing context is recomputed from the round-1 messages.
fn combine(_: &Context, params: CombineParams) -> Result<SignReply, ErrorObjectOwned> {
    let group = group_key_field("pubKeyHex", &params.pub_key_hex)?;
    let session = session_field(&params.session_hex)?;
    let message = hex_field("messageHex", &params.message_hex)?;
    let round1 = messages_field(
        "round1Hex",
        &params.round1_hex,
        MAX,
        Round1Message::from_bytes,
    )?;
    let round2 = messages_field(
        "round2Hex",
        &params.round2_hex,
        MAX,
        Round2Message::from_bytes,
    )?;
    let threshold = params.parties.len();
    let parties = params
        .parties
        .iter()
        .map(|&p| usize::from(p) + 1)
        .max()
        .unwrap_or(0);
    // The set's own checks need t and n; the combiner knows only T, so it takes t = |T| and
    // n = max(T) + 1, the loosest shape T fits (the signature's validity is what matters).
    let set = SigningSet::new(&params.parties, threshold, parties)
        .map_err(|e| invalid_params("parties", e))?;
    let sign_context = SignContext::new(&group, SessionId(session), set, &message, &round1)
        .map_err(|e| scheme_error(format!("corona combine: {e}")))?;
    let signature = combine_round2(&group, &sign_context, &round2)
        .map_err(|e| scheme_error(format!("corona combine: {e}")))?;
    Ok(SignReply {
        signature_hex: hex::encode(signature.to_bytes()),
    })
}

/// Registers the multi-host methods: `corona.import_share`, `corona.round1`, `corona.round2`
/// and `corona.combine`.
fn register_rounds(module: &mut RpcModule<Context>, timeout: Duration) -> Result<(), DaemonError> {
    rpc::register(module, "corona.import_share", timeout, import_share_method)?;
    rpc::register(module, "corona.round1", timeout, round1)?;
    rpc::register(module, "corona.round2", timeout, round2)?;
    rpc::register(module, "corona.combine", timeout, combine)?;
    Ok(())
}
