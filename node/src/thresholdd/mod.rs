//! `thresholdd`: the validator's signing daemon (DESIGN.md §8), JSON-RPC 2.0 over HTTP.
//!
//! The daemon holds threshold key shares in an encrypted [`keystore`] and signs on request, so
//! that keys live outside the node process. [`start`] binds the server; the `thresholdd` binary
//! is its command line.
//!
//! # Transport and limits
//!
//! - HTTP POST on any path, JSON-RPC 2.0 (jsonrpsee), `127.0.0.1:7300` by default. A
//!   non-loopback address is refused unless [`DaemonConfig::allow_remote`] is set.
//! - Every request needs `Authorization: Bearer <token>` ([`auth`]): HTTP 401 otherwise.
//! - Request bodies up to [`MAX_BODY_BYTES`] (16 MiB; larger: HTTP 413), batches up to
//!   [`MAX_BATCH`] calls (larger: one error, jsonrpsee's server-defined −32010 "batch request
//!   too large", and no call runs), 100 connections at once (jsonrpsee's default; HTTP 429
//!   beyond), each call answered within [`DaemonConfig::request_timeout`]. Parameters decode
//!   into fixed shapes ([`rpc::parse`]), so nested JSON stops at the first level a field does
//!   not expect.
//!
//! # Methods (this version)
//!
//! - `health` → `{status: "ok", version}` (reads no key).
//! - `bls.keygen {threshold, participants}` → `{publicKey, keyId, parties: [{index,
//!   publicKey}]}`: a trusted-dealer t-of-n sharing ([`quasar_crypto::bls_threshold`]); shares
//!   go to the keystore, never into a response or a log.
//! - `bls.sign {messageHex, pubKeyHex}` → `{signatureHex}`: every local party signs, the first
//!   t shares are combined, and the result is checked against the group key before it leaves.
//! - `bls.verify {messageHex, signatureHex, pubKeyHex}` → `{ok}`.
//! - `pulsar.keygen {threshold, participants}` (2 ≤ t ≤ n ≤ 6) → `{publicKey, keyId, parties}`,
//!   `pulsar.sign {messageHex, pubKeyHex}`, `pulsar.sign_ctx {messageHex, pubKeyHex, ctxHex}`
//!   → `{signatureHex}`, `pulsar.verify {messageHex, signatureHex, pubKeyHex, ctxHex?}` →
//!   `{ok}`: threshold ML-DSA-65 whose keys and signatures are FIPS 204's; signing runs the
//!   first t parties' rounds in this process and checks the signature before it leaves.
//!
//! The Corona and Magnetar methods, the multi-host round methods and `validator.sign_vote` are
//! not built yet: they answer −32601 with a message saying so.
//!
//! Errors: −32700 parse, −32600 invalid request, −32601 unknown method or scheme, −32602 bad
//! params naming the field, −32000 scheme error with a message ([`rpc`]).

pub mod auth;
mod bls;
pub mod keystore;
mod pulsar;
pub mod rpc;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use jsonrpsee::core::RegisterMethodError;
use jsonrpsee::server::{BatchRequestConfig, Server, ServerConfig, ServerHandle};
use jsonrpsee::types::ErrorObject;
use jsonrpsee::RpcModule;
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use jsonrpsee::types::ErrorObjectOwned;
use keystore::{KdfParams, KeyInfo, Keystore, KeystoreError, Scheme};
use quasar_crypto::hash::tagged_hash;

/// The default listen address (loopback; DESIGN.md §8).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7300";
/// The largest request body, in bytes.
pub const MAX_BODY_BYTES: u32 = 16 << 20;
/// The most calls in one batch.
pub const MAX_BATCH: u32 = 256;
/// The default limit on one call's time.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Methods that later versions add, answered −32601 with a message saying so.
const NOT_BUILT: &[&str] = &[
    "pulsar.round1",
    "pulsar.round2",
    "pulsar.combine",
    "pulsar.import_share",
    "corona.keygen",
    "corona.sign",
    "corona.verify",
    "corona.round1",
    "corona.round2",
    "corona.combine",
    "corona.import_share",
    "magnetar.keygen",
    "magnetar.sign",
    "magnetar.sign_ctx",
    "magnetar.verify",
    "validator.sign_vote",
];

/// Everything [`start`] needs.
pub struct DaemonConfig {
    /// Where to listen.
    pub listen: SocketAddr,
    /// Whether a non-loopback `listen` is allowed.
    pub allow_remote: bool,
    /// The keystore's directory (created 0700 if missing).
    pub data_dir: PathBuf,
    /// The bearer token every request must present (non-empty).
    pub token: Zeroizing<String>,
    /// The keystore passphrase.
    pub passphrase: Zeroizing<Vec<u8>>,
    /// Argon2id parameters for a new keystore (an existing one keeps its own).
    pub kdf: KdfParams,
    /// The limit on one call's time.
    pub request_timeout: Duration,
}

impl std::fmt::Debug for DaemonConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DaemonConfig")
            .field("listen", &self.listen)
            .field("allow_remote", &self.allow_remote)
            .field("data_dir", &self.data_dir)
            .field("request_timeout", &self.request_timeout)
            .finish_non_exhaustive()
    }
}

/// Why the daemon did not start.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// A non-loopback address without `allow_remote`.
    #[error("refusing to listen on {0}: not a loopback address (pass --allow-remote to allow it)")]
    RemoteBind(SocketAddr),
    /// An empty bearer token.
    #[error("the bearer token is empty")]
    EmptyToken,
    /// The keystore could not be opened.
    #[error(transparent)]
    Keystore(#[from] KeystoreError),
    /// The listener could not be bound.
    #[error("listening on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The error.
        source: std::io::Error,
    },
    /// The keystore task did not finish.
    #[error("{0}")]
    Startup(String),
    /// A method was registered twice (a bug).
    #[error(transparent)]
    Register(#[from] RegisterMethodError),
}

/// The state every method sees.
pub(crate) struct Context {
    keystore: Keystore,
}

impl Context {
    /// Stores a freshly dealt key of `scheme` (t of n from `params`) under its [`key_id`] and
    /// returns the id. Errors: −32000 when the keystore refuses it.
    fn store_key(
        &self,
        scheme: Scheme,
        params: &rpc::KeygenParams,
        public_key: &[u8],
        secret: &[u8],
    ) -> Result<String, ErrorObjectOwned> {
        let id = key_id(scheme, public_key);
        self.keystore
            .put(&keystore::NewKey {
                key_id: &id,
                scheme,
                threshold: params.threshold,
                participants: params.participants,
                public_key,
                secret,
            })
            .map_err(rpc::scheme_error)?;
        tracing::info!(
            key_id = %id,
            %scheme,
            threshold = params.threshold,
            participants = params.participants,
            "key dealt"
        );
        Ok(id)
    }

    /// The key of `scheme` whose public key is `public_key` (its metadata and its secret blob).
    /// Errors: −32000 when the keystore holds no such key or cannot read it.
    fn find_key(
        &self,
        scheme: Scheme,
        public_key: &[u8],
    ) -> Result<(KeyInfo, Zeroizing<Vec<u8>>), ErrorObjectOwned> {
        let id = key_id(scheme, public_key);
        let info = self.keystore.public(&id).map_err(|e| match e {
            KeystoreError::NotFound { .. } => rpc::scheme_error(format!(
                "no {scheme} key with this public key in the keystore"
            )),
            other => rpc::scheme_error(other),
        })?;
        if info.scheme != scheme || info.public_key != public_key {
            return Err(rpc::scheme_error(format!(
                "keystore entry {id} does not hold this {scheme} key"
            )));
        }
        let secret = self.keystore.secret(&id).map_err(rpc::scheme_error)?;
        Ok((info, secret))
    }
}

/// The keystore id of `scheme`'s key whose public key is `public_key`: the scheme's name and
/// the first 16 hex digits of a tagged SHA3-256 of both, so a signing request finds its key
/// from the public key alone.
fn key_id(scheme: Scheme, public_key: &[u8]) -> String {
    let name = scheme.as_str();
    let digest = tagged_hash("thresholdd/key-id", &[name.as_bytes(), public_key]);
    format!("{name}-{}", hex::encode(&digest[..8]))
}

/// A running daemon.
#[derive(Debug)]
pub struct Daemon {
    /// The bound address (the actual port when `listen` asked for port 0).
    pub local_addr: SocketAddr,
    /// Stops the server; [`ServerHandle::stopped`] resolves when it has.
    pub handle: ServerHandle,
}

#[derive(Serialize)]
struct Health {
    status: &'static str,
    version: &'static str,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoParams {}

/// Cheap on purpose (a load balancer or supervisor polls it): it reads no key.
fn health(_: &Context, _: NoParams) -> Result<Health, ErrorObjectOwned> {
    Ok(Health {
        status: "ok",
        version: env!("CARGO_PKG_VERSION"),
    })
}

/// Every method of this version, bound to `context`.
fn methods(context: Context, timeout: Duration) -> Result<RpcModule<Context>, DaemonError> {
    let mut module = RpcModule::new(context);
    rpc::register(&mut module, "health", timeout, health)?;
    bls::register(&mut module, timeout)?;
    pulsar::register(&mut module, timeout)?;
    for &name in NOT_BUILT {
        module.register_method(name, move |_, _, _| {
            Err::<(), _>(ErrorObject::owned(
                jsonrpsee::types::error::METHOD_NOT_FOUND_CODE,
                format!("`{name}` is not built yet: this thresholdd serves `health`, `bls.*` and the one-host `pulsar.*` methods"),
                None::<()>,
            ))
        })?;
    }
    Ok(module)
}

/// Opens the keystore and starts serving (see the module docs). Errors: a refused address or
/// token, the keystore (wrong passphrase, unreadable directory), the bind.
pub async fn start(config: DaemonConfig) -> Result<Daemon, DaemonError> {
    if !config.allow_remote && !config.listen.ip().is_loopback() {
        return Err(DaemonError::RemoteBind(config.listen));
    }
    if config.token.is_empty() {
        return Err(DaemonError::EmptyToken);
    }
    let (data_dir, passphrase, kdf) = (
        config.data_dir.clone(),
        config.passphrase.clone(),
        config.kdf,
    );
    // Argon2id takes a noticeable fraction of a second: off the I/O threads.
    let keystore =
        tokio::task::spawn_blocking(move || Keystore::open_with(&data_dir, &passphrase, kdf))
            .await
            .map_err(|e| DaemonError::Startup(format!("opening the keystore: {e}")))??;
    let module = methods(Context { keystore }, config.request_timeout)?;
    let server_config = ServerConfig::builder()
        .max_request_body_size(MAX_BODY_BYTES)
        .max_response_body_size(MAX_BODY_BYTES)
        .set_batch_request_config(BatchRequestConfig::Limit(MAX_BATCH))
        .http_only()
        .build();
    let middleware = tower::ServiceBuilder::new().layer(auth::BearerAuthLayer::new(&config.token));
    let server = Server::builder()
        .set_config(server_config)
        .set_http_middleware(middleware)
        .build(config.listen)
        .await
        .map_err(|source| DaemonError::Bind {
            addr: config.listen,
            source,
        })?;
    let local_addr = server.local_addr().map_err(|source| DaemonError::Bind {
        addr: config.listen,
        source,
    })?;
    let handle = server.start(module);
    tracing::info!(%local_addr, data_dir = %config.data_dir.display(), "thresholdd listening");
    Ok(Daemon { local_addr, handle })
}
