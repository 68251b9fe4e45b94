//! thresholdd's `magnetar.*` methods: Magnetar, one SLH-DSA key per validator (FIPS 205;
//! [`quasar_crypto::magnetar`]).
//!
//! SLH-DSA has no threshold form: a Magnetar leg is a quorum of independent per-validator
//! signatures (docs/architecture.md §4). `magnetar.keygen` therefore deals one key and takes
//! `threshold = participants = 1`. The parameter set is SLH-DSA-SHAKE-192f unless `parameterSet`
//! asks for SLH-DSA-SHAKE-192s. A key's public key in the keystore is FIPS 205's PK.seed ‖
//! PK.root (48 bytes); its secret blob is one byte naming the set (0 = 192f, 1 = 192s) and the
//! 32-byte seed the key is derived from ([`SecretKey::from_seed`]).

use std::time::Duration;

use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::RpcModule;
use quasar_crypto::magnetar::{ParameterSet, PublicKey, SecretKey, Signature, SEED_LEN};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use super::keystore::Scheme;
use super::rpc::{
    self, context_field, hex_field, invalid_params, scheme_error, KeygenParams, SignReply,
    VerifyCtxParams, VerifyReply,
};
use super::{Context, DaemonError};
use quasar_chainspec::{magnetar_set_name, parse_magnetar_set};

const SCHEME: Scheme = Scheme::Magnetar;
/// The parameter sets, in the order of their tag byte in a secret blob.
const SETS: [ParameterSet; 2] = [ParameterSet::Shake192f, ParameterSet::Shake192s];

/// `magnetar.keygen`'s parameters.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct MagnetarKeygenParams {
    /// Must be 1.
    threshold: u16,
    /// Must be 1.
    participants: u16,
    /// `"192f"` (SLH-DSA-SHAKE-192f, the default) or `"192s"` (SLH-DSA-SHAKE-192s), as the
    /// node's configuration spells them ([`quasar_chainspec::parse_magnetar_set`]).
    #[serde(default)]
    parameter_set: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct KeygenReply {
    public_key: String,
    key_id: String,
    parameter_set: &'static str,
    parties: [u16; 1],
}

fn keygen(
    context: &Context,
    params: MagnetarKeygenParams,
) -> Result<KeygenReply, ErrorObjectOwned> {
    const PER_VALIDATOR: &str =
        "must be 1: Magnetar keys are per validator (SLH-DSA has no threshold form)";
    if params.participants != 1 {
        return Err(invalid_params("participants", PER_VALIDATOR));
    }
    if params.threshold != 1 {
        return Err(invalid_params("threshold", PER_VALIDATOR));
    }
    let set = match params.parameter_set.as_deref() {
        None => ParameterSet::default(),
        Some(name) => parse_magnetar_set(name).map_err(|e| invalid_params("parameterSet", e))?,
    };
    let tag = match set {
        ParameterSet::Shake192f => 0,
        ParameterSet::Shake192s => 1,
    };
    let mut seed = Zeroizing::new([0u8; SEED_LEN]);
    rand::rngs::OsRng.fill_bytes(&mut *seed);
    let key = SecretKey::from_seed(set, &seed);
    let mut secret = Zeroizing::new(Vec::with_capacity(1 + SEED_LEN));
    secret.push(tag);
    secret.extend_from_slice(&*seed);
    let public_key = key.public_key().as_bytes();
    let id = context.store_key(
        SCHEME,
        &KeygenParams {
            threshold: 1,
            participants: 1,
        },
        public_key,
        &secret,
    )?;
    Ok(KeygenReply {
        public_key: hex::encode(public_key),
        key_id: id,
        parameter_set: magnetar_set_name(set),
        parties: [0],
    })
}

/// Signs `message` under `ctx` with the key whose public key is `pub_key_hex` (hedged signing,
/// FIPS 205 Algorithm 22) and checks the signature before it leaves.
fn sign_with_context(
    context: &Context,
    message_hex: &str,
    pub_key_hex: &str,
    ctx: &[u8],
) -> Result<SignReply, ErrorObjectOwned> {
    let message = hex_field("messageHex", message_hex)?;
    let public_bytes = hex_field("pubKeyHex", pub_key_hex)?;
    // Both sets share the public key's length; the stored key says which one it is.
    PublicKey::from_bytes(ParameterSet::default(), &public_bytes)
        .map_err(|e| invalid_params("pubKeyHex", e))?;
    let (info, secret) = context.find_key(SCHEME, &public_bytes)?;
    let id = &info.key_id;
    let corrupt = |what: &str| scheme_error(format!("keystore entry {id}: {what}"));
    let (&tag, seed) = secret
        .split_first()
        .ok_or_else(|| corrupt("empty secret"))?;
    let set = *SETS
        .get(usize::from(tag))
        .ok_or_else(|| corrupt("unknown parameter set"))?;
    let key = SecretKey::from_bytes(set, seed).map_err(|e| corrupt(&e.to_string()))?;
    if key.public_key().as_bytes()[..] != public_bytes[..] {
        return Err(corrupt("the seed does not give the stored public key"));
    }
    let signature = key
        .sign(&message, ctx, &mut rand::rngs::OsRng)
        .map_err(|e| scheme_error(format!("magnetar signing with {id}: {e}")))?;
    // A signature leaves only if it verifies (FIPS 205 Algorithm 24).
    key.public_key()
        .verify(&message, ctx, &signature)
        .map_err(|e| scheme_error(format!("the signature of {id} does not verify: {e}")))?;
    Ok(SignReply {
        signature_hex: hex::encode(signature.as_bytes()),
    })
}

/// Stateless: the signature's length names its parameter set.
fn verify(_: &Context, params: VerifyCtxParams) -> Result<VerifyReply, ErrorObjectOwned> {
    let message = hex_field("messageHex", &params.message_hex)?;
    let signature_bytes = hex_field("signatureHex", &params.signature_hex)?;
    let set = SETS
        .into_iter()
        .find(|set| set.signature_len() == signature_bytes.len())
        .ok_or_else(|| {
            invalid_params(
                "signatureHex",
                format_args!(
                    "{} bytes: an SLH-DSA-SHAKE-192f signature is {} bytes, a 192s one {}",
                    signature_bytes.len(),
                    ParameterSet::Shake192f.signature_len(),
                    ParameterSet::Shake192s.signature_len()
                ),
            )
        })?;
    let signature = Signature::from_bytes(set, &signature_bytes)
        .map_err(|e| invalid_params("signatureHex", e))?;
    let public_key = PublicKey::from_bytes(set, &hex_field("pubKeyHex", &params.pub_key_hex)?)
        .map_err(|e| invalid_params("pubKeyHex", e))?;
    let ctx = context_field(&params.ctx_hex)?;
    Ok(VerifyReply {
        ok: public_key.verify(&message, &ctx, &signature).is_ok(),
    })
}

/// Registers `magnetar.keygen`, `magnetar.sign`, `magnetar.sign_ctx` and `magnetar.verify`.
pub(super) fn register(
    module: &mut RpcModule<Context>,
    timeout: Duration,
) -> Result<(), DaemonError> {
    rpc::register(module, "magnetar.keygen", timeout, keygen)?;
    rpc::register_signing(
        module,
        ("magnetar.sign", "magnetar.sign_ctx"),
        timeout,
        sign_with_context,
    )?;
    rpc::register(module, "magnetar.verify", timeout, verify)?;
    Ok(())
}
