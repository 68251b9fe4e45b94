//! thresholdd's `pulsar.*` methods: t-of-n threshold ML-DSA-65 ([`quasar_crypto::pulsar`]) from
//! a trusted dealer, every party run in this process.
//!
//! Signatures and public keys are FIPS 204's (ML-DSA-65: 1,952-byte public key, 3,309-byte
//! signature), so any FIPS 204 verifier checks them. A key's public key in the keystore is the
//! FIPS 204 public key; its secret blob is [`StoredKey`] as JSON: the group key (the public key
//! and every subset's t_U, which signing needs) and each party's share.

use std::time::Duration;

use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::RpcModule;
use quasar_crypto::mldsa::{MlDsa65, PublicKey, Signature};
use quasar_crypto::pulsar::{self, GroupKey, KeyShare, Signer};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use super::keystore::Scheme;
use super::rpc::{
    self, hex_field, invalid_params, scheme_error, KeygenParams, SignParams, SignReply, VerifyReply,
};
use super::{Context, DaemonError};

const SCHEME: Scheme = Scheme::Pulsar;
/// FIPS 204's limit on the context string, in bytes.
const MAX_CONTEXT_LEN: usize = 255;
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SignCtxParams {
    message_hex: String,
    pub_key_hex: String,
    ctx_hex: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct VerifyParams {
    message_hex: String,
    signature_hex: String,
    pub_key_hex: String,
    /// The FIPS 204 context the signature was made under (absent: empty).
    #[serde(default)]
    ctx_hex: String,
}

/// Field `ctxHex`, at most [`MAX_CONTEXT_LEN`] bytes.
fn context_field(value: &str) -> Result<Vec<u8>, ErrorObjectOwned> {
    let context = hex_field("ctxHex", value)?;
    if context.len() > MAX_CONTEXT_LEN {
        return Err(invalid_params(
            "ctxHex",
            format_args!(
                "{} bytes, FIPS 204 allows at most {MAX_CONTEXT_LEN}",
                context.len()
            ),
        ));
    }
    Ok(context)
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
    let corrupt = |what: &str| scheme_error(format!("keystore entry {id}: {what}"));
    let stored: StoredKey =
        serde_json::from_slice(&secret).map_err(|e| corrupt(&format!("shares: {e}")))?;
    let group_bytes =
        hex::decode(&stored.group_key_hex).map_err(|e| corrupt(&format!("group key: {e}")))?;
    let group = GroupKey::from_bytes(&group_bytes).map_err(|e| corrupt(&e.to_string()))?;
    let mut signers = Vec::with_capacity(usize::from(info.threshold));
    for share_hex in stored.shares_hex.iter().take(usize::from(info.threshold)) {
        let bytes =
            Zeroizing::new(hex::decode(share_hex).map_err(|e| corrupt(&format!("share: {e}")))?);
        let share = KeyShare::from_bytes(&bytes).map_err(|e| corrupt(&e.to_string()))?;
        if !group.check_share(&share) {
            return Err(corrupt(&format!(
                "party {}'s share does not match the group key",
                share.party()
            )));
        }
        signers.push(Signer::new(share));
    }
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

fn sign(context: &Context, params: SignParams) -> Result<SignReply, ErrorObjectOwned> {
    sign_with_context(context, &params.message_hex, &params.pub_key_hex, &[])
}

fn sign_ctx(context: &Context, params: SignCtxParams) -> Result<SignReply, ErrorObjectOwned> {
    let ctx = context_field(&params.ctx_hex)?;
    sign_with_context(context, &params.message_hex, &params.pub_key_hex, &ctx)
}

fn verify(_: &Context, params: VerifyParams) -> Result<VerifyReply, ErrorObjectOwned> {
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

/// Registers `pulsar.keygen`, `pulsar.sign`, `pulsar.sign_ctx` and `pulsar.verify`.
pub(super) fn register(
    module: &mut RpcModule<Context>,
    timeout: Duration,
) -> Result<(), DaemonError> {
    rpc::register(module, "pulsar.keygen", timeout, keygen)?;
    rpc::register(module, "pulsar.sign", timeout, sign)?;
    rpc::register(module, "pulsar.sign_ctx", timeout, sign_ctx)?;
    rpc::register(module, "pulsar.verify", timeout, verify)?;
    Ok(())
}
