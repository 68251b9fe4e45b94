//! thresholdd's `pulsar.*` methods: t-of-n threshold ML-DSA-65 ([`quasar_crypto::pulsar`]) from
//! a trusted dealer, every party run in this process.
//!
//! Signatures and public keys are FIPS 204's (ML-DSA-65: 1,952-byte public key, 3,309-byte
//! signature), so any FIPS 204 verifier checks them. A key's public key in the keystore is the
//! FIPS 204 public key; its secret blob is [`StoredKey`] as JSON: the group key (the public key
//! and every subset's t_U, which signing needs) and each party's share.
//!
//! # Multi-host ceremonies
//!
//! A host holding one party's share (`pulsar.import_share {groupKeyHex, shareHex}`, keystore
//! id `<keyId>-p<party>`, the same secret blob with one share) takes part in sessions a
//! coordinator drives. A session has exactly t signers (`parties`) and a fresh 32-byte id;
//! every call names the key by its FIPS 204 public key (`pubKeyHex`) and the host's `party`:
//!
//! 1. `pulsar.round1 {pubKeyHex, party, sessionHex, parties, messageHex, ctxHex?}` →
//!    `{round1Hex}` (the commitment); the session id is recorded durably first
//!    ([`super::sessions`]): never round 1 twice for one id on this host, across restarts too;
//! 2. `pulsar.round2 {pubKeyHex, party, sessionHex, round1Hex: [..]}` → `{round2Hex}` (the
//!    reveal), from every signer's commitment;
//! 3. `pulsar.round3 {pubKeyHex, party, sessionHex, round2Hex: [..]}` → `{round3Hex}` (the
//!    responses), from every signer's reveal; this consumes the party's secret state;
//! 4. `pulsar.combine {pubKeyHex, sessionHex, parties, messageHex, ctxHex?, round1Hex,
//!    round2Hex, round3Hex}` → `{signatureHex}` on any daemon holding the key or one of its
//!    shares (it needs the public group key), verified before it leaves. When no attempt of the
//!    session met FIPS 204's bounds it answers −32000 with "restart": run a new session.

use std::time::Duration;

use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::RpcModule;
use quasar_crypto::mldsa::{MlDsa65, PublicKey, Signature};
use quasar_crypto::pulsar::params::MAX_PARTIES;
use quasar_crypto::pulsar::{
    self, GroupKey, KeyShare, PulsarError, Round1Message, Round1State, Round2Message, Round2State,
    Round3Message, Session, SessionId, Signer,
};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use super::keystore::Scheme;
use super::keystore::{KeyId, Keystore, KeystoreError};
use super::rpc::{
    self, context_field, hex_field, invalid_params, scheme_error, KeygenParams, SignReply,
    VerifyCtxParams, VerifyReply,
};
use super::sessions::{
    messages_field, round_reply, session_field, ImportShareReply, Party, RoundReply,
};
use super::{put_share, share_key_id, Context, DaemonError};

const SCHEME: Scheme = Scheme::Pulsar;
/// Signing sessions tried before giving up (each restarts with probability well under 1/2).
const MAX_SESSIONS: u32 = 64;

/// A key's secret blob.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct StoredKey {
    /// [`GroupKey::to_bytes`], hex.
    group_key_hex: String,
    /// [`KeyShare::to_bytes`] of parties 0..n, hex.
    shares_hex: Vec<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct KeygenReply {
    public_key: String,
    key_id: String,
    parties: Vec<u16>,
}

fn keygen(context: &Context, params: KeygenParams) -> Result<KeygenReply, ErrorObjectOwned> {
    let max = pulsar::params::MAX_PARTIES;
    let (t, n) = (
        usize::from(params.threshold),
        usize::from(params.participants),
    );
    if !(2..=max).contains(&n) {
        return Err(invalid_params(
            "participants",
            format_args!("must be in 2..={max}"),
        ));
    }
    if !(2..=n).contains(&t) {
        return Err(invalid_params("threshold", "must be in 2..=participants"));
    }
    let (group, shares) = pulsar::trusted_dealer_keygen(t, n, &mut rand::rngs::OsRng)
        .map_err(|e| scheme_error(format!("pulsar keygen: {e}")))?;
    let stored = Zeroizing::new(
        serde_json::to_vec(&StoredKey {
            group_key_hex: hex::encode(group.to_bytes()),
            shares_hex: shares
                .iter()
                .map(|share| hex::encode(&*share.to_bytes()))
                .collect(),
        })
        .map_err(|e| scheme_error(format!("pulsar keygen: {e}")))?,
    );
    let public_key = group.public_key_bytes();
    let id = context.store_key(SCHEME, &params, public_key, &stored)?;
    Ok(KeygenReply {
        public_key: hex::encode(public_key),
        key_id: id,
        parties: shares.iter().map(KeyShare::party).collect(),
    })
}

/// The group key and the first `count` shares of keystore entry `id`'s secret blob
/// ([`StoredKey`]), each checked against the group key. Errors: −32000 naming the entry.
fn decode_stored(
    id: &str,
    secret: &[u8],
    count: usize,
) -> Result<(GroupKey, Vec<KeyShare>), ErrorObjectOwned> {
    let corrupt = |what: &str| scheme_error(format!("keystore entry {id}: {what}"));
    let stored: StoredKey =
        serde_json::from_slice(secret).map_err(|e| corrupt(&format!("shares: {e}")))?;
    let group_bytes =
        hex::decode(&stored.group_key_hex).map_err(|e| corrupt(&format!("group key: {e}")))?;
    let group = GroupKey::from_bytes(&group_bytes).map_err(|e| corrupt(&e.to_string()))?;
    let mut shares = Vec::with_capacity(count);
    for share_hex in stored.shares_hex.iter().take(count) {
        let bytes =
            Zeroizing::new(hex::decode(share_hex).map_err(|e| corrupt(&format!("share: {e}")))?);
        let share = KeyShare::from_bytes(&bytes).map_err(|e| corrupt(&e.to_string()))?;
        if !group.check_share(&share) {
            return Err(corrupt(&format!(
                "party {}'s share does not match the group key",
                share.party()
            )));
        }
        shares.push(share);
    }
    Ok((group, shares))
}

/// Signs `message` under `ctx` with the first t shares of the key whose FIPS 204 public key is
/// `pub_key_hex`, and checks the signature before it leaves.
fn sign_with_context(
    context: &Context,
    message_hex: &str,
    pub_key_hex: &str,
    ctx: &[u8],
) -> Result<SignReply, ErrorObjectOwned> {
    let message = hex_field("messageHex", message_hex)?;
    let public_key = PublicKey::<MlDsa65>::from_bytes(&hex_field("pubKeyHex", pub_key_hex)?)
        .map_err(|e| invalid_params("pubKeyHex", e))?;
    let (info, secret) = context.find_key(SCHEME, public_key.as_bytes())?;
    let id = &info.key_id;
    let (group, shares) = decode_stored(id.as_str(), &secret, usize::from(info.threshold))?;
    let mut signers: Vec<Signer> = shares.into_iter().map(Signer::new).collect();
    // A fresh random base per call: session ids never repeat, across restarts too.
    let mut base = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut base);
    let signed = pulsar::sign_in_process(
        &group,
        &mut signers,
        &base,
        &message,
        ctx,
        MAX_SESSIONS,
        &mut rand::rngs::OsRng,
    )
    .map_err(|e| scheme_error(format!("pulsar signing with {id}: {e}")))?;
    let signature = Signature::<MlDsa65>::from_bytes(&signed.signature)
        .map_err(|e| scheme_error(format!("pulsar signing with {id}: {e}")))?;
    // A signature leaves only if it verifies (FIPS 204 Algorithm 3).
    public_key
        .verify(&message, ctx, &signature)
        .map_err(|e| scheme_error(format!("the signature of {id} does not verify: {e}")))?;
    Ok(SignReply {
        signature_hex: hex::encode(signature.as_bytes()),
    })
}

fn verify(_: &Context, params: VerifyCtxParams) -> Result<VerifyReply, ErrorObjectOwned> {
    let message = hex_field("messageHex", &params.message_hex)?;
    let signature =
        Signature::<MlDsa65>::from_bytes(&hex_field("signatureHex", &params.signature_hex)?)
            .map_err(|e| invalid_params("signatureHex", e))?;
    let public_key =
        PublicKey::<MlDsa65>::from_bytes(&hex_field("pubKeyHex", &params.pub_key_hex)?)
            .map_err(|e| invalid_params("pubKeyHex", e))?;
    let ctx = context_field(&params.ctx_hex)?;
    Ok(VerifyReply {
        ok: public_key.verify(&message, &ctx, &signature).is_ok(),
    })
}

/// Registers `pulsar.keygen`, `pulsar.sign`, `pulsar.sign_ctx`, `pulsar.verify` and the
/// multi-host methods (`import_share`, `round1`, `round2`, `round3`, `combine`).
pub(super) fn register(
    module: &mut RpcModule<Context>,
    timeout: Duration,
) -> Result<(), DaemonError> {
    rpc::register(module, "pulsar.keygen", timeout, keygen)?;
    rpc::register_signing(
        module,
        ("pulsar.sign", "pulsar.sign_ctx"),
        timeout,
        sign_with_context,
    )?;
    rpc::register(module, "pulsar.verify", timeout, verify)?;
    rpc::register(module, "pulsar.import_share", timeout, import_share_method)?;
    rpc::register(module, "pulsar.round1", timeout, round1)?;
    rpc::register(module, "pulsar.round2", timeout, round2)?;
    rpc::register(module, "pulsar.round3", timeout, round3)?;
    rpc::register(module, "pulsar.combine", timeout, combine)?;
    Ok(())
}

/// One party's secret state between the rounds of a session.
pub(super) enum Pending {
    /// After round 1.
    Committed(Round1State),
    /// After round 2.
    Revealed(Round2State),
}

/// One imported share's signer and its group key.
pub(super) struct PartySigner {
    group: GroupKey,
    signer: Signer,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ImportShareParams {
    /// [`GroupKey::to_bytes`], hex.
    group_key_hex: String,
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
    message_hex: String,
    #[serde(default)]
    ctx_hex: String,
}

/// `pulsar.round2`: every signer's commitment.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Round2Params {
    pub_key_hex: String,
    party: u16,
    session_hex: String,
    round1_hex: Vec<String>,
}

/// `pulsar.round3`: every signer's reveal.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Round3Params {
    pub_key_hex: String,
    party: u16,
    session_hex: String,
    round2_hex: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CombineParams {
    pub_key_hex: String,
    session_hex: String,
    parties: Vec<u16>,
    message_hex: String,
    #[serde(default)]
    ctx_hex: String,
    round1_hex: Vec<String>,
    round2_hex: Vec<String>,
    round3_hex: Vec<String>,
}

/// Field `pubKeyHex` as a FIPS 204 public key's bytes. Errors: −32602.
fn public_key_field(value: &str) -> Result<Vec<u8>, ErrorObjectOwned> {
    let bytes = hex_field("pubKeyHex", value)?;
    PublicKey::<MlDsa65>::from_bytes(&bytes).map_err(|e| invalid_params("pubKeyHex", e))?;
    Ok(bytes)
}

/// Stores Pulsar key share `share` of `group` in `keystore` as party `share.party()`'s share
/// (id `<keyId>-p<party>`), as `pulsar.import_share` does, e.g. the dealt share of a
/// validator's key file (`thresholdd keys import-validator`). The caller checks the share
/// against the group first (`GroupKey::check_share`). Returns the id. Errors: the keystore's
/// ([`KeystoreError::DuplicateKey`] when it is already there).
pub fn import_share(
    keystore: &Keystore,
    group: &GroupKey,
    share: &KeyShare,
) -> Result<String, KeystoreError> {
    let encoded = serde_json::to_vec(&StoredKey {
        group_key_hex: hex::encode(group.to_bytes()),
        shares_hex: vec![hex::encode(&*share.to_bytes())],
    });
    let stored = match encoded {
        Ok(bytes) => Zeroizing::new(bytes),
        Err(e) => {
            let id = share_key_id(SCHEME, group.public_key_bytes(), share.party());
            return Err(KeystoreError::InvalidKey {
                key_id: KeyId::new(&id)?,
                reason: format!("encoding the share: {e}"),
            });
        }
    };
    put_share(
        keystore,
        SCHEME,
        &group_shape(group),
        group.public_key_bytes(),
        share.party(),
        &stored,
    )
}

/// A group key's t and n (t ≤ n ≤ MAX_PARTIES, 6: the casts are lossless).
fn group_shape(group: &GroupKey) -> KeygenParams {
    KeygenParams {
        threshold: group.params().threshold as u16,
        participants: group.params().parties as u16,
    }
}

fn import_share_method(
    context: &Context,
    params: ImportShareParams,
) -> Result<ImportShareReply, ErrorObjectOwned> {
    let group = GroupKey::from_bytes(&hex_field("groupKeyHex", &params.group_key_hex)?)
        .map_err(|e| invalid_params("groupKeyHex", e))?;
    let share_bytes = Zeroizing::new(hex_field("shareHex", &params.share_hex)?);
    let share = KeyShare::from_bytes(&share_bytes).map_err(|e| invalid_params("shareHex", e))?;
    if !group.check_share(&share) {
        return Err(invalid_params("shareHex", "not a share of this group key"));
    }
    let id = import_share(&context.keystore, &group, &share).map_err(scheme_error)?;
    let shape = group_shape(&group);
    let public_key = group.public_key_bytes();
    Ok(ImportShareReply {
        key_id: id,
        party: share.party(),
        public_key: hex::encode(public_key),
        threshold: shape.threshold,
        participants: shape.participants,
    })
}

/// Runs `work` on this host's party `party` of the key `public_key` (opened from its imported
/// share on first use). Errors: −32000 when this daemon holds no such share.
fn with_party<R>(
    context: &Context,
    public_key: &[u8],
    party: u16,
    work: impl FnOnce(&mut Party<PartySigner, Pending>) -> Result<R, ErrorObjectOwned>,
) -> Result<R, ErrorObjectOwned> {
    let id = share_key_id(SCHEME, public_key, party);
    let load = || {
        let secret = context.share_secret(SCHEME, public_key, party)?;
        let (group, mut shares) = decode_stored(&id, &secret, 1)?;
        match shares.pop() {
            Some(share) if share.party() == party => Ok(PartySigner {
                group,
                signer: Signer::new(share),
            }),
            _ => Err(scheme_error(format!(
                "keystore entry {id} holds no share of party {party}"
            ))),
        }
    };
    context.pulsar.with_party(&id, load, work)
}

fn round1(context: &Context, params: Round1Params) -> Result<RoundReply, ErrorObjectOwned> {
    let public_key = public_key_field(&params.pub_key_hex)?;
    let session_id = session_field(&params.session_hex)?;
    let message = hex_field("messageHex", &params.message_hex)?;
    let ctx = context_field(&params.ctx_hex)?;
    with_party(context, &public_key, params.party, |party| {
        let PartySigner { group, signer } = &mut party.signer;
        let session = Session::new(
            group,
            SessionId(session_id),
            &params.parties,
            &message,
            &ctx,
        )
        .map_err(|e| invalid_params("parties", e))?;
        // Durable before the message leaves: never round 1 twice for one id on this host.
        party.used.record(session_id)?;
        let (commitment, state) = signer
            .round1(group, &session, &mut rand::rngs::OsRng)
            .map_err(|e| scheme_error(format!("pulsar round 1: {e}")))?;
        party.keep(session_id, Pending::Committed(state));
        Ok(round_reply("round1Hex", &commitment.to_bytes()))
    })
}

fn round2(context: &Context, params: Round2Params) -> Result<RoundReply, ErrorObjectOwned> {
    let public_key = public_key_field(&params.pub_key_hex)?;
    let session = session_field(&params.session_hex)?;
    let commitments = messages_field(
        "round1Hex",
        &params.round1_hex,
        MAX_PARTIES,
        Round1Message::from_bytes,
    )?;
    with_party(context, &public_key, params.party, |party| {
        let Pending::Committed(state) = party.take(&session)? else {
            return Err(scheme_error("this session is past round 2 here"));
        };
        let (reveal, state) = party
            .signer
            .signer
            .round2(state, &commitments)
            .map_err(|e| scheme_error(format!("pulsar round 2: {e}")))?;
        party.keep(session, Pending::Revealed(state));
        Ok(round_reply("round2Hex", &reveal.to_bytes()))
    })
}

fn round3(context: &Context, params: Round3Params) -> Result<RoundReply, ErrorObjectOwned> {
    let public_key = public_key_field(&params.pub_key_hex)?;
    let session = session_field(&params.session_hex)?;
    with_party(context, &public_key, params.party, |party| {
        let reveals = messages_field("round2Hex", &params.round2_hex, MAX_PARTIES, |bytes| {
            Round2Message::from_bytes(bytes, party.signer.group.params())
        })?;
        let Pending::Revealed(state) = party.take(&session)? else {
            return Err(scheme_error("this session has not run round 2 here"));
        };
        let group = &party.signer.group;
        let response = party
            .signer
            .signer
            .round3(group, state, &reveals)
            .map_err(|e| scheme_error(format!("pulsar round 3: {e}")))?;
        Ok(round_reply("round3Hex", &response.to_bytes()))
    })
}

/// The group key of `public_key` from this daemon's keystore: the dealt key's entry, else any
/// imported share's. Errors: −32000 when it holds neither.
fn stored_group(context: &Context, public_key: &[u8]) -> Result<GroupKey, ErrorObjectOwned> {
    if let Ok((info, secret)) = context.find_key(SCHEME, public_key) {
        return decode_stored(info.key_id.as_str(), &secret, 0).map(|(group, _)| group);
    }
    for party in 0..MAX_PARTIES as u16 {
        if let Ok(secret) = context.share_secret(SCHEME, public_key, party) {
            let id = share_key_id(SCHEME, public_key, party);
            return decode_stored(&id, &secret, 0).map(|(group, _)| group);
        }
    }
    Err(scheme_error(
        "this daemon holds neither this pulsar key nor a share of it: combine where one is held",
    ))
}

fn combine(context: &Context, params: CombineParams) -> Result<SignReply, ErrorObjectOwned> {
    let public_key = public_key_field(&params.pub_key_hex)?;
    let session_id = session_field(&params.session_hex)?;
    let message = hex_field("messageHex", &params.message_hex)?;
    let ctx = context_field(&params.ctx_hex)?;
    let group = stored_group(context, &public_key)?;
    let session = Session::new(
        &group,
        SessionId(session_id),
        &params.parties,
        &message,
        &ctx,
    )
    .map_err(|e| invalid_params("parties", e))?;
    let commitments = messages_field(
        "round1Hex",
        &params.round1_hex,
        MAX_PARTIES,
        Round1Message::from_bytes,
    )?;
    let reveals = messages_field("round2Hex", &params.round2_hex, MAX_PARTIES, |bytes| {
        Round2Message::from_bytes(bytes, group.params())
    })?;
    let responses = messages_field("round3Hex", &params.round3_hex, MAX_PARTIES, |bytes| {
        Round3Message::from_bytes(bytes, group.params())
    })?;
    let signature = match pulsar::combine(&group, &session, &commitments, &reveals, &responses) {
        Ok(signature) => signature,
        Err(PulsarError::Restart) => {
            return Err(scheme_error(
                "restart: no attempt of this session met FIPS 204's bounds; run a new session",
            ))
        }
        Err(e) => return Err(scheme_error(format!("pulsar combine: {e}"))),
    };
    let decoded = Signature::<MlDsa65>::from_bytes(&signature)
        .map_err(|e| scheme_error(format!("pulsar combine: {e}")))?;
    group
        .public_key()
        .verify(&message, &ctx, &decoded)
        .map_err(|e| scheme_error(format!("the combined signature does not verify: {e}")))?;
    Ok(SignReply {
        signature_hex: hex::encode(signature),
    })
}
