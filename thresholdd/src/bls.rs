//! thresholdd's `bls.*` methods: t-of-n BLS12-381 (min-pk) from a trusted dealer.
//!
//! A key's secret blob in the keystore is its shares, each [`SecretShare::to_bytes`]
//! ([`SECRET_SHARE_LEN`] bytes), concatenated in index order; its public key is the 48-byte
//! group key.

use std::time::Duration;

use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::RpcModule;
use quasar_crypto::bls::{PublicKey, Signature};
use quasar_crypto::bls_threshold::{self, SecretShare, SECRET_SHARE_LEN};
use serde::Serialize;

use super::keystore::{KeyInfo, Scheme};
use super::rpc::{
    self, hex_field, invalid_params, scheme_error, KeygenParams, SignParams, SignReply,
    VerifyParams, VerifyReply,
};
use super::{Context, DaemonError};

const SCHEME: Scheme = Scheme::Bls;

#[derive(Serialize)]
struct Party {
    index: u16,
    #[serde(rename = "publicKey")]
    public_key: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct KeygenReply {
    public_key: String,
    key_id: String,
    parties: Vec<Party>,
}

/// Field `field` as a BLS public key. Errors: −32602 (not hex, or not a valid G1 point).
pub(super) fn public_key_field(field: &str, value: &str) -> Result<PublicKey, ErrorObjectOwned> {
    PublicKey::from_bytes(&hex_field(field, value)?).map_err(|e| invalid_params(field, e))
}

fn keygen(context: &Context, params: KeygenParams) -> Result<KeygenReply, ErrorObjectOwned> {
    let max = bls_threshold::MAX_PARTICIPANTS;
    if params.participants == 0 || params.participants > max {
        return Err(invalid_params(
            "participants",
            format_args!("must be in 1..={max}"),
        ));
    }
    if params.threshold == 0 || params.threshold > params.participants {
        return Err(invalid_params("threshold", "must be in 1..=participants"));
    }
    let dealing = bls_threshold::deal(
        params.threshold,
        params.participants,
        &mut rand::rngs::OsRng,
    )
    .map_err(scheme_error)?;
    let group = dealing.group_public_key();
    let mut secret = zeroize::Zeroizing::new(Vec::with_capacity(
        SECRET_SHARE_LEN * dealing.shares().len(),
    ));
    for share in dealing.shares() {
        secret.extend_from_slice(&*zeroize::Zeroizing::new(share.to_bytes()));
    }
    let id = context.store_key(SCHEME, &params, &group.to_bytes(), &secret)?;
    Ok(KeygenReply {
        public_key: hex::encode(group.to_bytes()),
        key_id: id,
        parties: dealing
            .shares()
            .iter()
            .map(|share| Party {
                index: share.index(),
                public_key: hex::encode(share.public_key().to_bytes()),
            })
            .collect(),
    })
}

/// Signs `message` with the first t shares of the stored key `group` and checks the combined
/// signature before it leaves. Errors: −32000 (no such key, a corrupt entry, a signature that
/// does not verify).
fn sign_message(
    context: &Context,
    group: &PublicKey,
    message: &[u8],
) -> Result<Signature, ErrorObjectOwned> {
    let (info, secret) = context.find_key(SCHEME, &group.to_bytes())?;
    sign_with(&info, &secret, group, message)
}

/// [`sign_message`] with the key's entry already read (`info`, `secret`). Errors: −32000 (a
/// corrupt entry, a signature that does not verify).
pub(super) fn sign_with(
    info: &KeyInfo,
    secret: &[u8],
    group: &PublicKey,
    message: &[u8],
) -> Result<Signature, ErrorObjectOwned> {
    let id = &info.key_id;
    let shares = secret
        .chunks(SECRET_SHARE_LEN)
        .map(SecretShare::from_bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| scheme_error(format!("keystore entry {id}: {e}")))?;
    let signature_shares: Vec<_> = shares
        .iter()
        .take(usize::from(info.threshold))
        .map(|share| share.sign(message))
        .collect();
    let signature = bls_threshold::combine(info.threshold, &signature_shares)
        .map_err(|e| scheme_error(format!("combining the shares of {id}: {e}")))?;
    // A signature leaves only if it verifies: a corrupt share must not become a bad signature.
    group.verify(message, &signature).map_err(|e| {
        scheme_error(format!(
            "the combined signature of {id} does not verify: {e}"
        ))
    })?;
    Ok(signature)
}

fn sign(context: &Context, params: SignParams) -> Result<SignReply, ErrorObjectOwned> {
    let message = hex_field("messageHex", &params.message_hex)?;
    let group = public_key_field("pubKeyHex", &params.pub_key_hex)?;
    let signature = sign_message(context, &group, &message)?;
    Ok(SignReply {
        signature_hex: hex::encode(signature.to_bytes()),
    })
}

fn verify(_: &Context, params: VerifyParams) -> Result<VerifyReply, ErrorObjectOwned> {
    let message = hex_field("messageHex", &params.message_hex)?;
    let signature = Signature::from_bytes(&hex_field("signatureHex", &params.signature_hex)?)
        .map_err(|e| invalid_params("signatureHex", e))?;
    let public_key = public_key_field("pubKeyHex", &params.pub_key_hex)?;
    Ok(VerifyReply {
        ok: public_key.verify(&message, &signature).is_ok(),
    })
}

/// Registers `bls.keygen`, `bls.sign` and `bls.verify`.
pub(super) fn register(
    module: &mut RpcModule<Context>,
    timeout: Duration,
) -> Result<(), DaemonError> {
    rpc::register(module, "bls.keygen", timeout, keygen)?;
    rpc::register(module, "bls.sign", timeout, sign)?;
    rpc::register(module, "bls.verify", timeout, verify)?;
    Ok(())
}
