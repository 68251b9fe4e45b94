//! `thresholdd`: the validator's signing daemon (docs/architecture.md §9), JSON-RPC 2.0 over HTTP.
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
//!   too large", and no call runs), each call answered within
//!   [`DaemonConfig::request_timeout`]. Parameters decode into fixed shapes ([`rpc::parse`]),
//!   so nested JSON stops at the first level a field does not expect.
//! - HTTP/1.1 only. Connections are admitted in two classes ([`quasar_process::http_serve`] has the
//!   mechanism and the reasons), so that the node's signer never waits behind connections
//!   that have not shown the token. A connection must send a request head with the token
//!   within [`HEADER_READ_TIMEOUT`] (5 s) of being accepted, or it is closed; at most
//!   [`MAX_UNAUTHENTICATED_CONNECTIONS`] (100) such connections are open at once, and a new
//!   one closes the oldest rather than waiting for it. Up to
//!   [`MAX_AUTHENTICATED_CONNECTIONS`] (64) connections that have shown the token have a
//!   budget of their own and may sit idle, or take to send each later head, up to
//!   [`IDLE_TIMEOUT`] (60 s). A body must arrive within [`BODY_READ_TIMEOUT`] (30 s after the
//!   head; otherwise HTTP 408 and the connection closes), and a response write that makes no
//!   progress for [`WRITE_STALL_TIMEOUT`] (30 s) closes the connection.
//!   [`start_with_limits`] takes other values ([`TransportLimits`]).
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
//! - `corona.keygen {threshold, participants}` (1 ≤ t ≤ n ≤ 256) → `{publicKey, keyId,
//!   parties}`, `corona.sign {messageHex, pubKeyHex}` → `{signatureHex}`, `corona.verify
//!   {messageHex, signatureHex, pubKeyHex}` → `{ok}`: the Corona lattice threshold signature
//!   ([`quasar_crypto::corona`]); the group key is 4,640 bytes, the signature
//!   [`quasar_crypto::corona::scheme::Signature`]'s encoding; signing runs the first t parties'
//!   two rounds in this process and the combined signature is verified before it leaves.
//! - `magnetar.keygen {threshold: 1, participants: 1, parameterSet?: "192f" | "192s"}` →
//!   `{publicKey, keyId, parameterSet, parties}`, `magnetar.sign`, `magnetar.sign_ctx` →
//!   `{signatureHex}`, `magnetar.verify {messageHex, signatureHex, pubKeyHex, ctxHex?}` → `{ok}`: one SLH-DSA key
//!   (FIPS 205; SLH-DSA-SHAKE-192f by default, 192s on request) per validator, since Magnetar
//!   legs are per-validator signatures.
//! - `validator.sign_vote {pubKeyHex, kind, chainId, epoch, view, height, blockHex,
//!   validatorSetRootHex, profileId}` → `{signatureHex, decision}`: the node's consensus vote,
//!   signed with a stored BLS key only after the key's signing guard has durably recorded it
//!   ([`validator`]); a vote that conflicts with a recorded one is refused (−32000), and so is
//!   every vote while the guard is new and not fenced yet.
//! - `validator.key {pubKeyHex}` → `{keyId, fenced}`: whether this daemon holds the vote key and
//!   whether its guard is fenced; `validator.fence {pubKeyHex, view}` → `{fencedView}`: fences
//!   `view` in the guard (the node calls it after listening to the network), which lets a new
//!   guard sign in later views.
//! - `corona.import_share {shareHex}`, `corona.round1`, `corona.round2`, `corona.combine`: the
//!   multi-host Corona ceremony, one party's share per host ([`corona`] has the protocol).
//! - `pulsar.import_share {groupKeyHex, shareHex}`, `pulsar.round1`, `pulsar.round2`,
//!   `pulsar.round3`, `pulsar.combine`: the multi-host Pulsar ceremony ([`pulsar`] has the
//!   protocol; Pulsar takes three rounds).
//!
//! Errors: −32700 parse, −32600 invalid request, −32601 unknown method or scheme, −32602 bad
//! params naming the field, −32000 scheme error with a message ([`rpc`]).
//!
//! `fuzzing` (feature `fuzzing`, off in a production build) holds the `thresholdd/fuzz` targets'
//! entry points.

pub mod auth;
mod bls;
mod corona;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod keystore;
mod magnetar;
pub mod metrics;
mod pulsar;
pub mod rpc;
pub mod sessions;
mod validator;

pub use corona::import_share as import_corona_share;
pub use corona::MAX_PARTICIPANTS as MAX_CORONA_PARTICIPANTS;
pub use pulsar::import_share as import_pulsar_share;
pub use quasar_process::http_serve::TransportLimits;
pub use validator::{guard_location, import_vote_key};

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use jsonrpsee::core::RegisterMethodError;
use jsonrpsee::server::{
    BatchRequestConfig, HttpBody, Methods, Server, ServerConfig, ServerHandle,
};
use jsonrpsee::RpcModule;
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use jsonrpsee::types::ErrorObjectOwned;
use keystore::{KdfParams, KeyInfo, Keystore, KeystoreError, Scheme};
use quasar_crypto::hash::tagged_hash;

/// The default listen address (loopback; docs/architecture.md §9).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7300";
/// The largest request body, in bytes.
pub const MAX_BODY_BYTES: u32 = 16 << 20;
/// The most calls in one batch.
pub const MAX_BATCH: u32 = 256;
/// The default limit on one call's time.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// The most connections open at once that have not yet sent a request head with the token; a
/// further one closes the oldest of them ([`quasar_process::http_serve`], "Admission").
pub const MAX_UNAUTHENTICATED_CONNECTIONS: usize = 100;
/// The most connections that have sent the token and hold a slot unauthenticated connections
/// cannot take (the node's signer needs one, a ceremony coordinator or operator a few).
pub const MAX_AUTHENTICATED_CONNECTIONS: usize = 64;
/// How long a connection may take, from being accepted, to send a request head with the token
/// (5 s; a client on loopback takes well under a millisecond); then it is closed.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a connection that has sent the token may take to send each later request head
/// (60 s), counted from when it starts waiting for one: so also how long it may sit idle
/// between calls before it is closed.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a request may take to send its whole body (30 s), counted from the end of its
/// head; a later body gets HTTP 408 and the connection is closed.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How long writing a response may make no progress (30 s; the client reads nothing) before
/// the connection is closed.
pub const WRITE_STALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The daemon's production transport limits: [`MAX_UNAUTHENTICATED_CONNECTIONS`],
/// [`MAX_AUTHENTICATED_CONNECTIONS`], [`HEADER_READ_TIMEOUT`], [`IDLE_TIMEOUT`],
/// [`BODY_READ_TIMEOUT`] and [`WRITE_STALL_TIMEOUT`].
pub fn transport_limits() -> TransportLimits {
    TransportLimits {
        max_unauthenticated: MAX_UNAUTHENTICATED_CONNECTIONS,
        max_authenticated: MAX_AUTHENTICATED_CONNECTIONS,
        header_read_timeout: HEADER_READ_TIMEOUT,
        idle_timeout: IDLE_TIMEOUT,
        body_read_timeout: BODY_READ_TIMEOUT,
        write_stall_timeout: WRITE_STALL_TIMEOUT,
    }
}

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
    /// Where to serve `GET /metrics` without a token, nothing else ([`metrics::serve_plain`]);
    /// `None`: the metrics only on `listen`, behind the token. Any address: nothing there
    /// signs.
    pub metrics_listen: Option<SocketAddr>,
}

impl std::fmt::Debug for DaemonConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DaemonConfig")
            .field("listen", &self.listen)
            .field("allow_remote", &self.allow_remote)
            .field("data_dir", &self.data_dir)
            .field("request_timeout", &self.request_timeout)
            .field("metrics_listen", &self.metrics_listen)
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
    /// `metrics_listen` is `listen` itself.
    #[error(
        "--metrics-listen {0} is the signing address (--listen): give the metrics their own port"
    )]
    SameListen(SocketAddr),
    /// The keystore could not be opened.
    #[error(transparent)]
    Keystore(#[from] KeystoreError),
    /// A listener could not be bound.
    #[error("{listener}: listening on {addr}: {source}")]
    Bind {
        /// Which: `the signing listener (--listen)` or `the metrics listener
        /// (--metrics-listen)`.
        listener: &'static str,
        /// The address.
        addr: SocketAddr,
        /// The error.
        source: std::io::Error,
    },
    /// The keystore task did not finish, or the lock file could not be opened.
    #[error("{0}")]
    Startup(String),
    /// Another daemon serves this data directory.
    #[error("{} is in use by another thresholdd (it holds {LOCK_FILE}); two daemons on one keystore could sign conflicting votes", .0.display())]
    Locked(PathBuf),
    /// A method was registered twice (a bug).
    #[error(transparent)]
    Register(#[from] RegisterMethodError),
}

/// The state every method sees.
pub(crate) struct Context {
    keystore: Keystore,
    guards: validator::Guards,
    corona: sessions::Parties<
        quasar_crypto::corona::scheme::Signer,
        quasar_crypto::corona::scheme::Round1State,
    >,
    pulsar: sessions::Parties<pulsar::PartySigner, pulsar::Pending>,
    metrics: std::sync::Arc<metrics::DaemonMetrics>,
}

impl Context {
    /// The state of a daemon whose keystore is `keystore`, with its other records under
    /// `data_dir`, counting into `metrics`.
    fn new(
        keystore: Keystore,
        data_dir: &std::path::Path,
        metrics: std::sync::Arc<metrics::DaemonMetrics>,
    ) -> Context {
        Context {
            metrics,
            keystore,
            guards: validator::Guards::new(data_dir),
            corona: sessions::Parties::new(data_dir, Scheme::Corona.as_str()),
            pulsar: sessions::Parties::new(data_dir, Scheme::Pulsar.as_str()),
        }
    }

    /// Stores a freshly dealt key of `scheme` (t of n from `params`) under its [`key_id`] and
    /// returns the id. Errors: −32000 when the keystore refuses it.
    fn store_key(
        &self,
        scheme: Scheme,
        params: &rpc::KeygenParams,
        public_key: &[u8],
        secret: &[u8],
    ) -> Result<String, ErrorObjectOwned> {
        self.store(
            key_id(scheme, public_key),
            scheme,
            params,
            public_key,
            secret,
        )
    }

    /// The secret blob of party `party`'s imported share of `scheme`'s key `public_key`.
    /// Errors: −32000 when this daemon holds no such share or cannot read it.
    fn share_secret(
        &self,
        scheme: Scheme,
        public_key: &[u8],
        party: u16,
    ) -> Result<Zeroizing<Vec<u8>>, ErrorObjectOwned> {
        let id = share_key_id(scheme, public_key, party);
        self.entry(&id, scheme, public_key, || {
            format!("this daemon holds no share of party {party} of this {scheme} key ({scheme}.import_share first)")
        })
        .map(|(_, secret)| secret)
    }

    fn store(
        &self,
        id: String,
        scheme: Scheme,
        params: &rpc::KeygenParams,
        public_key: &[u8],
        secret: &[u8],
    ) -> Result<String, ErrorObjectOwned> {
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
            "key stored"
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
        self.entry(&key_id(scheme, public_key), scheme, public_key, || {
            format!("no {scheme} key with this public key in the keystore")
        })
    }

    /// The validator vote key whose BLS public key is `public_key` ([`vote_key_id`]; its
    /// metadata and its secret blob). Errors: −32000 when the keystore holds no such key or
    /// cannot read it.
    fn find_vote_key(
        &self,
        public_key: &[u8],
    ) -> Result<(KeyInfo, Zeroizing<Vec<u8>>), ErrorObjectOwned> {
        self.entry(&vote_key_id(public_key), Scheme::Bls, public_key, || {
            "no validator vote key with this public key in the keystore (import it with \
             `thresholdd keys import-validator`)"
                .to_string()
        })
    }

    /// Keystore entry `id` (its metadata and secret blob, one read of its file), checked to
    /// hold `scheme`'s key `public_key`. Errors: −32000 with `missing()` when there is no such
    /// entry, or naming the entry when it holds something else or cannot be read.
    fn entry(
        &self,
        id: &str,
        scheme: Scheme,
        public_key: &[u8],
        missing: impl FnOnce() -> String,
    ) -> Result<(KeyInfo, Zeroizing<Vec<u8>>), ErrorObjectOwned> {
        let (info, secret) = self.keystore.key(id).map_err(|e| match e {
            KeystoreError::NotFound { .. } => rpc::scheme_error(missing()),
            other => rpc::scheme_error(other),
        })?;
        if info.scheme != scheme || info.public_key != public_key {
            return Err(rpc::scheme_error(format!(
                "keystore entry {id} does not hold this {scheme} key"
            )));
        }
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

/// The keystore id of the validator vote key whose BLS public key is `public_key`:
/// `vote-` and the first 16 hex digits of a tagged SHA3-256 of it. Vote keys live apart from
/// `bls.keygen`'s keys: `validator.sign_vote` reads only these, and `bls.sign` never sees them,
/// so no method signs with a vote key outside its signing guard.
fn vote_key_id(public_key: &[u8]) -> String {
    let digest = tagged_hash("thresholdd/vote-key-id", &[public_key]);
    format!("vote-{}", hex::encode(&digest[..8]))
}

/// The keystore id of party `party`'s imported share of `scheme`'s key `public_key`:
/// `<key id>-p<party>`.
fn share_key_id(scheme: Scheme, public_key: &[u8], party: u16) -> String {
    format!("{}-p{party}", key_id(scheme, public_key))
}

/// Stores party `party`'s share (blob `secret`) of `scheme`'s t-of-n key `public_key` in
/// `keystore` under its [`share_key_id`] and returns the id, as `<scheme>.import_share` does.
/// Errors: the keystore's ([`keystore::KeystoreError::DuplicateKey`] when it is already there).
fn put_share(
    keystore: &Keystore,
    scheme: Scheme,
    shape: &rpc::KeygenParams,
    public_key: &[u8],
    party: u16,
    secret: &[u8],
) -> Result<String, keystore::KeystoreError> {
    let id = share_key_id(scheme, public_key, party);
    keystore.put(&keystore::NewKey {
        key_id: &id,
        scheme,
        threshold: shape.threshold,
        participants: shape.participants,
        public_key,
        secret,
    })?;
    tracing::info!(key_id = %id, %scheme, party, "share stored");
    Ok(id)
}

/// A running daemon.
#[derive(Debug)]
pub struct Daemon {
    /// The bound address (the actual port when `listen` asked for port 0).
    pub local_addr: SocketAddr,
    /// Stops the server; [`ServerHandle::stopped`] resolves when it has.
    pub handle: ServerHandle,
    /// The bound address of the token-free metrics listener, when
    /// [`DaemonConfig::metrics_listen`] asked for one.
    pub metrics_addr: Option<SocketAddr>,
    /// That listener's task, aborted when this is dropped.
    _metrics_task: Option<AbortOnDrop>,
    /// The periodic INFO summary ([`metrics::log_summaries`]), aborted when this is dropped.
    _summary_task: AbortOnDrop,
    /// The exclusive lock on the data directory ([`LOCK_FILE`]), released when this is dropped.
    _lock: std::fs::File,
}

/// A task aborted when this is dropped.
#[derive(Debug)]
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Binds `addr` for `listener` (named in the error); the listener and its bound address.
async fn bind(
    listener: &'static str,
    addr: SocketAddr,
) -> Result<(tokio::net::TcpListener, SocketAddr), DaemonError> {
    let bind_error = |source| DaemonError::Bind {
        listener,
        addr,
        source,
    };
    let bound = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(bind_error)?;
    let local_addr = bound.local_addr().map_err(bind_error)?;
    Ok((bound, local_addr))
}

/// The file in the data directory a running daemon holds an exclusive lock on: two daemons on
/// one directory would each open the same signing guards and session records and could sign
/// conflicting votes.
pub const LOCK_FILE: &str = "thresholdd.lock";

/// Takes the exclusive lock on `data_dir`'s [`LOCK_FILE`] ([`quasar_process::lock_dir`]).
/// Errors: [`DaemonError::Locked`] when another process holds it, [`DaemonError::Startup`] when
/// the file cannot be opened or locked.
fn lock_data_dir(data_dir: &std::path::Path) -> Result<std::fs::File, DaemonError> {
    quasar_process::lock_dir(data_dir, LOCK_FILE).map_err(|e| match e {
        quasar_process::DirLockError::InUse { dir, .. } => DaemonError::Locked(dir),
        other => DaemonError::Startup(format!("locking the data directory: {other}")),
    })
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
    corona::register(&mut module, timeout)?;
    magnetar::register(&mut module, timeout)?;
    validator::register(&mut module, timeout)?;
    Ok(module)
}

/// Opens the keystore and starts serving (see the module docs) with the default transport
/// limits ([`transport_limits`]). Errors: a refused address or token, the keystore
/// (wrong passphrase, unreadable directory), the bind.
pub async fn start(config: DaemonConfig) -> Result<Daemon, DaemonError> {
    start_with_limits(config, transport_limits()).await
}

/// [`start`] with other connection limits and slow-client timeouts (tests use short ones).
/// Errors: as [`start`].
pub async fn start_with_limits(
    config: DaemonConfig,
    limits: TransportLimits,
) -> Result<Daemon, DaemonError> {
    if !config.allow_remote && !config.listen.ip().is_loopback() {
        return Err(DaemonError::RemoteBind(config.listen));
    }
    if config.token.is_empty() {
        return Err(DaemonError::EmptyToken);
    }
    if config.metrics_listen == Some(config.listen) && config.listen.port() != 0 {
        return Err(DaemonError::SameListen(config.listen));
    }
    // Both listeners first, so that an address in use stops the start before a new keystore
    // is written.
    let (listener, local_addr) = bind("the signing listener (--listen)", config.listen).await?;
    let metrics_listener = match config.metrics_listen {
        None => None,
        Some(addr) => Some(bind("the metrics listener (--metrics-listen)", addr).await?),
    };
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
    let lock = lock_data_dir(&config.data_dir)?;
    let metrics = std::sync::Arc::new(metrics::DaemonMetrics::new());
    let module = methods(
        Context::new(keystore, &config.data_dir, metrics.clone()),
        config.request_timeout,
    )?;
    let server_config = ServerConfig::builder()
        .max_request_body_size(MAX_BODY_BYTES)
        .max_response_body_size(MAX_BODY_BYTES)
        .set_batch_request_config(BatchRequestConfig::Limit(MAX_BATCH))
        // jsonrpsee's own count of requests in progress; the accept loop's budgets bind first.
        .max_connections(
            u32::try_from(
                limits
                    .max_unauthenticated
                    .saturating_add(limits.max_authenticated),
            )
            .unwrap_or(u32::MAX),
        )
        .http_only()
        .build();
    let auth = auth::BearerAuthLayer::new(&config.token);
    let middleware = tower::ServiceBuilder::new()
        .layer(auth.clone())
        .layer(metrics::MetricsLayer::new(metrics.clone()));
    let (metrics_addr, metrics_task) = match metrics_listener {
        None => (None, None),
        Some((listener, bound)) => {
            tracing::info!(%bound, "thresholdd metrics listening (GET /metrics, no token)");
            let task = tokio::spawn(metrics::serve_plain(listener, metrics.clone()));
            (Some(bound), Some(AbortOnDrop(task)))
        }
    };
    // jsonrpsee's service per connection, under our accept loop and deadlines (`http_serve`).
    let services = Server::builder()
        .set_config(server_config)
        .set_http_middleware(middleware)
        .to_service_builder();
    let methods = Methods::from(module);
    let authenticates =
        std::sync::Arc::new(move |headers: &http::HeaderMap| auth.admits_headers(headers));
    let handle = quasar_process::http_serve::spawn(
        listener,
        limits,
        authenticates,
        HttpBody::new,
        move |stop| services.clone().build(methods.clone(), stop),
    );
    tracing::info!(%local_addr, data_dir = %config.data_dir.display(), "thresholdd listening");
    let summary_task = AbortOnDrop(tokio::spawn(metrics::log_summaries(metrics)));
    Ok(Daemon {
        local_addr,
        handle,
        metrics_addr,
        _metrics_task: metrics_task,
        _summary_task: summary_task,
        _lock: lock,
    })
}
