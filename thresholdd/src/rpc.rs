//! JSON-RPC plumbing shared by thresholdd's methods: parameter decoding that names the field at
//! fault, hex fields, the error codes of docs/architecture.md §9, and running a method's CPU work off the
//! I/O threads under the request timeout.

use std::fmt::Display;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonrpsee::core::RegisterMethodError;
use jsonrpsee::types::error::INVALID_PARAMS_CODE;
use jsonrpsee::types::{ErrorObject, ErrorObjectOwned, Params};
use jsonrpsee::RpcModule;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::Context;

/// JSON-RPC 2.0 §5.1's first server-defined code: a scheme refused the request (bad share, key
/// not found, verification of our own output failed, timeout).
pub const SCHEME_ERROR_CODE: i32 = -32000;

/// `<scheme>.keygen`'s parameters: t of n.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeygenParams {
    /// Shares needed to sign, t.
    pub threshold: u16,
    /// Shares dealt, n.
    pub participants: u16,
}

/// `<scheme>.sign`'s parameters.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SignParams {
    /// The message, hex.
    pub message_hex: String,
    /// The group public key, hex: it selects the key.
    pub pub_key_hex: String,
}

/// `<scheme>.sign_ctx`'s parameters (Pulsar and Magnetar).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SignCtxParams {
    /// The message, hex.
    pub message_hex: String,
    /// The group public key, hex: it selects the key.
    pub pub_key_hex: String,
    /// The context string, hex, at most [`MAX_CONTEXT_LEN`] bytes (FIPS 204 §5.2, FIPS 205 §10.2).
    pub ctx_hex: String,
}

/// `<scheme>.verify`'s parameters for schemes without a context string (BLS, Corona).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VerifyParams {
    /// The message, hex.
    pub message_hex: String,
    /// The signature, hex.
    pub signature_hex: String,
    /// The public key, hex.
    pub pub_key_hex: String,
}

/// `<scheme>.verify`'s parameters for schemes with a context string (Pulsar, Magnetar).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VerifyCtxParams {
    /// The message, hex.
    pub message_hex: String,
    /// The signature, hex.
    pub signature_hex: String,
    /// The public key, hex.
    pub pub_key_hex: String,
    /// The context the signature was made under, hex (absent: empty).
    #[serde(default)]
    pub ctx_hex: String,
}

/// `<scheme>.sign`'s reply.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignReply {
    /// The signature, hex.
    pub signature_hex: String,
}

/// `<scheme>.verify`'s reply.
#[derive(Serialize)]
pub struct VerifyReply {
    /// Whether the signature verifies.
    pub ok: bool,
}

/// −32602 naming `field` (a JSON path such as `messageHex`) and what is wrong with it.
pub fn invalid_params(field: &str, why: impl Display) -> ErrorObjectOwned {
    ErrorObject::owned(
        INVALID_PARAMS_CODE,
        format!("invalid params: `{field}`: {why}"),
        None::<()>,
    )
}

/// −32000 with `message`.
pub fn scheme_error(message: impl Display) -> ErrorObjectOwned {
    ErrorObject::owned(SCHEME_ERROR_CODE, message.to_string(), None::<()>)
}

/// The request's named parameters as `T`. Parameters must be an object (absent parameters read
/// as `{}`); unknown fields are refused by `T`'s `deny_unknown_fields`. Errors: −32602 with the
/// path of the offending field, or the missing field's name.
pub fn parse<T: DeserializeOwned>(params: &Params<'_>) -> Result<T, ErrorObjectOwned> {
    let raw = params.as_str().unwrap_or("{}");
    if !raw.trim_start().starts_with('{') {
        return Err(ErrorObject::owned(
            INVALID_PARAMS_CODE,
            "invalid params: thresholdd takes named parameters (a JSON object)",
            None::<()>,
        ));
    }
    let mut deserializer = serde_json::Deserializer::from_str(raw);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            ErrorObject::owned(
                INVALID_PARAMS_CODE,
                format!("invalid params: {}", e.inner()),
                None::<()>,
            )
        } else {
            invalid_params(&path, e.inner())
        }
    })
}

/// The bytes of hex field `field` (an optional `0x` prefix, then an even number of hex digits).
pub fn hex_field(field: &str, value: &str) -> Result<Vec<u8>, ErrorObjectOwned> {
    let digits = value.strip_prefix("0x").unwrap_or(value);
    hex::decode(digits).map_err(|e| invalid_params(field, format_args!("not hex: {e}")))
}

/// A scheme's signing step with a context string: `(context, messageHex, pubKeyHex, ctx)`.
pub(crate) type SignWithContext =
    fn(&Context, &str, &str, &[u8]) -> Result<SignReply, ErrorObjectOwned>;

/// Registers `<scheme>.sign` (`names.0`, an empty context) and `<scheme>.sign_ctx` (`names.1`,
/// `ctxHex` checked by [`context_field`]) of a scheme whose signing step is `sign`.
pub(crate) fn register_signing(
    module: &mut RpcModule<Context>,
    names: (&'static str, &'static str),
    timeout: Duration,
    sign: SignWithContext,
) -> Result<(), RegisterMethodError> {
    register(
        module,
        names.0,
        timeout,
        move |context, params: SignParams| {
            sign(context, &params.message_hex, &params.pub_key_hex, &[])
        },
    )?;
    register(
        module,
        names.1,
        timeout,
        move |context, params: SignCtxParams| {
            let ctx = context_field(&params.ctx_hex)?;
            sign(context, &params.message_hex, &params.pub_key_hex, &ctx)
        },
    )
}

/// The longest context string FIPS 204 (ML-DSA, §5.2) and FIPS 205 (SLH-DSA, §10.2) accept, in
/// bytes: its length is encoded in one byte.
pub const MAX_CONTEXT_LEN: usize = 255;

/// Field `ctxHex`: hex, at most [`MAX_CONTEXT_LEN`] bytes. Errors: −32602 naming `ctxHex`.
pub fn context_field(value: &str) -> Result<Vec<u8>, ErrorObjectOwned> {
    let context = hex_field("ctxHex", value)?;
    if context.len() > MAX_CONTEXT_LEN {
        return Err(invalid_params(
            "ctxHex",
            format_args!(
                "{} bytes, FIPS 204 and FIPS 205 allow at most {MAX_CONTEXT_LEN}",
                context.len()
            ),
        ));
    }
    Ok(context)
}

/// Registers `name`: parameters decoded as `P`, then `work` run on tokio's blocking pool (key
/// derivation, signing and proving are CPU-bound) and its result serialized. A call that takes
/// longer than `timeout` is answered −32000 (the work itself runs to its end: each is bounded by
/// its inputs, which the body limit bounds). Every call is counted in the daemon's metrics
/// ([`super::metrics`]).
pub(crate) fn register<P, R, F>(
    module: &mut RpcModule<Context>,
    name: &'static str,
    timeout: Duration,
    work: F,
) -> Result<(), RegisterMethodError>
where
    P: DeserializeOwned + Send + 'static,
    R: Serialize + Send + 'static,
    F: Fn(&Context, P) -> Result<R, ErrorObjectOwned> + Copy + Send + Sync + 'static,
{
    module.register_async_method(name, move |params, context: Arc<Context>, _| async move {
        let start = Instant::now();
        let metrics = context.metrics.clone();
        let result = answer(name, timeout, &params, context, work).await;
        metrics.observe(name, start.elapsed(), result.is_ok());
        result
    })?;
    Ok(())
}

/// One call of `register`'s method `name`.
async fn answer<P, R, F>(
    name: &'static str,
    timeout: Duration,
    params: &Params<'_>,
    context: Arc<Context>,
    work: F,
) -> Result<serde_json::Value, ErrorObjectOwned>
where
    P: DeserializeOwned + Send + 'static,
    R: Serialize + Send + 'static,
    F: Fn(&Context, P) -> Result<R, ErrorObjectOwned> + Send + 'static,
{
    let params: P = parse(params)?;
    let task = tokio::task::spawn_blocking(move || work(&context, params));
    match tokio::time::timeout(timeout, task).await {
        Ok(Ok(result)) => result.and_then(|value| {
            serde_json::to_value(value).map_err(|e| scheme_error(format!("`{name}`: {e}")))
        }),
        Ok(Err(join)) => {
            tracing::error!(method = name, error = %join, "a thresholdd method failed");
            Err(scheme_error(format!("`{name}` failed inside the daemon")))
        }
        Err(_) => Err(scheme_error(format!(
            "`{name}` timed out after {} s",
            timeout.as_secs_f64()
        ))),
    }
}
