//! The node's HTTP admin API (axum), served on `api_listen`. Every JSON answer is a type of
//! [`quasar_client`], which the testnet harness and tools read back.
//!
//! | route | answer |
//! |---|---|
//! | `GET /` | `200 {"routes":[{"method","path","answer"}]}`: this table, in short ([`ROUTES`]) |
//! | `GET /health` | `200 {"status":"ok"}` while the process serves requests (liveness; unlike `/ready` it says nothing about consensus) |
//! | `POST /tx` (body: a signed transaction, ≤ 64 KiB) | `200 {"hash"}`; `400` empty, too large, or not a valid transaction of this chain (encoding, chain id, signature against the carried or committed key, a used nonce); `409` duplicate; `413` a body past 65 KiB; `503` mempool full, with `Retry-After` |
//! | `POST /txs` (body: a ZAP `TxBatch` of 1 to [`MAX_BATCH_TXS`] signed transactions, ≤ [`MAX_BATCH_BYTES`]) | `200 {"accepted","results":[{"status","hash"?,"error"?}]}`: each transaction's `POST /tx` answer, in order, admitted in parallel; `Retry-After` when any got `503`; `400` not a batch, empty, or more than the client's burst (`api.tx_burst`, 100 by default); `413` too many transactions or bytes; `429` beyond the client's rate (every transaction counts against `api.tx_per_second`) |
//! | `GET /tx/{hash}` | `200 {"hash","status":"pending"|"finalized","height"}`; `400` bad hash; `404` unknown |
//! | `GET /account/{address}` | `200 {"address","account":{"balance","stake","nonce","has_key"}\|null,"header","links","certificate_hex","proof_hex"}` as of the latest executed block ([`crate::light`]); `400` bad address; `404` nothing executed yet; `410` that block pruned |
//! | `GET /ready` | `200` when the node finalizes with its peers, `503` otherwise: `{"ready","reasons","finalized_height","height","last_finalized_ms_ago","stale_after_ms","peers"}` (see [`not_ready_reasons`]) |
//! | `GET /status` | `{"validator","validator_index","height","finalized_height","view","epoch","history_floor","peers","mempool","chain_id","evidence","votes_signed","guard_refusals","guard_restart_refusals","profile","quasar_finalized_height","quasar_unavailable","leg_verify_p50_ms","leg_sign_p50_ms","version","commit","genesis_hash"}` (`commit`: 12 hex digits or `unknown`; `genesis_hash`: 64 hex digits) |
//! | `GET /block/latest` | the highest finalized block, as `GET /block/{height}` answers it; `404` before the first is finalized |
//! | `GET /block/{height}` | finalized block summary with its certificate and `"finality"`: `{"tier": "nova"\|"quasar", "profile", "bundle_end", "legs": {leg: "verified"\|"missing"}, "unavailable"?}`; `404` if not finalized |
//! | `GET /validators` | `200 {"height","epoch","validators":[{"address","status","since","registered_at","stake","bls_public_key","network_address","set_index"}]}`: the registry of the latest executed block and each validator's index in the set of `epoch` (the next block's; `null`: not a member), not proven; `404` nothing executed yet |
//! | `GET /epochs/{epoch}/set` | `200 {"epoch","header","links","certificate_hex","set_hex"\|null,"proof_hex"}`: one step of an epoch-change proof on a chain whose sets come from its registry ([`crate::light::epoch_set_info`]); `404` the genesis fixes the sets, epoch 0 or 1, or not decided yet |
//! | `GET /evidence?from_view=V&limit=N` | `200 {"count","evidence":[{"kind","signer","view","first","second"}]}` (see [`evidence_list`]); `400` bad query |
//! | `GET /metrics` | Prometheus text format; here only when `metrics_listen` is unset, otherwise on that listener alone ([`serve_metrics`]) |

use crate::config::ApiConfig;
use crate::mempool::{MempoolError, MAX_TX_BYTES};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Path, RawQuery, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use governor::clock::{Clock, QuantaInstant};
use governor::middleware::NoOpMiddleware;
use quasar_client::{
    AccountInfo, ApiError, BlockInfo, EpochSetInfo, EvidenceEntry, EvidenceList, Health, Readiness,
    Status, TxAccepted, TxBatchAnswer, TxInfo, TxOutcome, ValidatorList,
};
use quasar_crypto::hash::Hash;
use quasar_process::http_serve::TransportLimits;
use quasar_storage::evidence::kind as evidence_kind;
use quasar_storage::EvidenceRecord;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;
use tower_governor::governor::{GovernorConfig, GovernorConfigBuilder};
use tower_governor::key_extractor::PeerIpKeyExtractor;
use tower_governor::{GovernorError, GovernorLayer};

/// What the API reads of a running node, and the one change it asks of it (admitting a
/// transaction). The runtime implements it over its shared state (`crate::view`); the API never
/// sees that state, so the HTTP layer and the runtime do not import each other
/// (docs/architecture.md §1). Every method is cheap but [`NodeView::evidence`], which reads the
/// store and runs on the blocking pool.
pub trait NodeView: Send + Sync + 'static {
    /// `GET /status`.
    fn status(&self) -> Status;
    /// `GET /ready` (see [`not_ready_reasons`]).
    fn readiness(&self) -> Readiness;
    /// The highest finalized height (0 before the first block).
    fn finalized_height(&self) -> u64;
    /// `GET /block/{height}`. Errors: [`Unavailable`] (not finalized here, pruned, a store
    /// failure).
    fn block(&self, height: u64) -> Result<BlockInfo, Unavailable>;
    /// `GET /tx/{hash}` for the 32-byte `hash`. Errors: [`Unavailable::NotFound`] when neither
    /// pending nor in a stored finalized block; [`Unavailable::Failed`].
    fn tx(&self, hash: &Hash) -> Result<TxInfo, Unavailable>;
    /// `POST /tx`: admits `tx` to the mempool and gossips it; its hash. Errors: the mempool's.
    fn submit_tx(&self, tx: Vec<u8>) -> Result<Hash, MempoolError>;
    /// `POST /txs`: admits each transaction as [`NodeView::submit_tx`] does, in order of the
    /// answers (an implementation may admit them in parallel). Runs on the blocking pool.
    fn submit_txs(&self, txs: Vec<Vec<u8>>) -> Vec<Result<Hash, MempoolError>> {
        txs.into_iter().map(|tx| self.submit_tx(tx)).collect()
    }
    /// `GET /account/{address}`: the account with its proof ([`crate::light::account_info`]).
    fn account(&self, address: &quasar_app::Address) -> Result<AccountInfo, Unavailable>;
    /// `GET /evidence` for `query`. Errors: [`Unavailable::Failed`] when the store fails.
    fn evidence(&self, query: EvidenceQuery) -> Result<EvidenceList, Unavailable>;
    /// `GET /validators`: the registry of the latest executed state
    /// ([`crate::light::validator_list`]).
    fn validators(&self) -> Result<ValidatorList, Unavailable>;
    /// `GET /epochs/{epoch}/set`: one step of an epoch-change proof
    /// ([`crate::light::epoch_set_info`]). Errors: [`Unavailable::NotFound`] when the chain's
    /// genesis fixes its sets, for epochs 0 and 1, and for an epoch not decided here yet.
    fn epoch_set(&self, epoch: u64) -> Result<EpochSetInfo, Unavailable>;
    /// `GET /metrics`: appends the Prometheus text exposition to `out`.
    fn encode_metrics(&self, out: &mut String) -> std::fmt::Result;
}

/// Why a [`NodeView`] lookup has no answer; each maps to its HTTP status with the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unavailable {
    /// Not here (404).
    NotFound(String),
    /// Pruned by retention (410).
    Pruned(String),
    /// The store failed or holds something it cannot read (500).
    Failed(String),
}

impl IntoResponse for Unavailable {
    fn into_response(self) -> Response {
        match self {
            Unavailable::NotFound(m) => error(StatusCode::NOT_FOUND, m),
            Unavailable::Pruned(m) => error(StatusCode::GONE, m),
            Unavailable::Failed(m) => error(StatusCode::INTERNAL_SERVER_ERROR, m),
        }
    }
}

type AppState = Arc<dyn NodeView>;

/// Every route of the API but `GET /metrics`, as `GET /` lists them: (method, path, answer).
pub const ROUTES: &[(&str, &str, &str)] = &[
    ("GET", "/", "this index"),
    (
        "GET",
        "/health",
        "200 {\"status\":\"ok\"} while the process serves (liveness)",
    ),
    (
        "GET",
        "/ready",
        "200 when the node finalizes with its peers, 503 with reasons otherwise (readiness)",
    ),
    (
        "GET",
        "/status",
        "validator, heights, view, epoch, peers, build and genesis",
    ),
    ("POST", "/tx", "submit a raw transaction (at most 64 KiB)"),
    (
        "POST",
        "/txs",
        "submit a ZAP TxBatch of at most 512 transactions (at most 4 MiB)",
    ),
    ("GET", "/tx/{hash}", "a transaction: pending or finalized"),
    (
        "GET",
        "/account/{address}",
        "an account with its Merkle proof, block header and finalization certificate",
    ),
    ("GET", "/block/latest", "the highest finalized block"),
    (
        "GET",
        "/block/{height}",
        "a finalized block with its certificate and finality",
    ),
    (
        "GET",
        "/evidence?from_view=V&limit=N",
        "stored equivocation evidence",
    ),
    (
        "GET",
        "/validators",
        "the validator registry as of the latest executed block (not proven)",
    ),
    (
        "GET",
        "/epochs/{epoch}/set",
        "an epoch's validator set with its proof from the boundary two epochs before (sets from the registry)",
    ),
];

/// The `GET /metrics` entry of `GET /`, listed when the API serves it.
pub const METRICS_ROUTE: (&str, &str, &str) = ("GET", "/metrics", "Prometheus text format");

/// The body of `GET /`: `{"routes":[{"method","path","answer"}]}` for [`ROUTES`], and
/// [`METRICS_ROUTE`] when `with_metrics`.
pub fn index_json(with_metrics: bool) -> Value {
    let routes: Vec<Value> = ROUTES
        .iter()
        .chain(with_metrics.then_some(&METRICS_ROUTE))
        .map(|(method, path, answer)| json!({ "method": method, "path": path, "answer": answer }))
        .collect();
    json!({ "routes": routes })
}

/// `GET /` and `GET /health`: the routes that answer from the process alone, for any router
/// state.
pub fn process_routes<S: Clone + Send + Sync + 'static>(with_metrics: bool) -> Router<S> {
    let index = index_json(with_metrics);
    Router::new()
        .route(
            "/",
            get(move || {
                let index = index.clone();
                async move { Json(index) }
            }),
        )
        .route(
            "/health",
            get(|| async {
                Json(Health {
                    status: "ok".into(),
                })
            }),
        )
}

/// The API's router: every route of the module docs, `GET /metrics` only when `with_metrics`,
/// `POST /tx` and `POST /txs` limited per client IP address as `config` says ([`TxLimit`]).
pub fn router(view: Arc<dyn NodeView>, with_metrics: bool, config: &ApiConfig) -> Router {
    let limit = TxLimit::new(config);
    let batch_limit = limit.clone();
    let submit_batch = move |client: ConnectInfo<SocketAddr>,
                             view: State<AppState>,
                             body: Result<Bytes, BytesRejection>| {
        let limit = batch_limit.clone();
        async move { submit_txs(&limit, client, view, body).await }
    };
    let mut app = Router::new()
        .route(
            "/tx",
            post(submit_tx)
                .layer(limit.layer())
                .layer(from_fn_with_state(
                    (MAX_TX_BYTES, TX_BODY),
                    refuse_declared_oversize,
                )),
        )
        .route(
            "/txs",
            post(submit_batch)
                .layer(DefaultBodyLimit::max(MAX_BATCH_BYTES))
                .layer(from_fn_with_state(
                    (MAX_BATCH_BYTES, BATCH_BODY),
                    refuse_declared_oversize,
                )),
        )
        .route("/tx/{hash}", get(get_tx))
        .route("/account/{address}", get(account))
        .route("/status", get(status))
        .route("/ready", get(ready))
        .route("/block/latest", get(block_latest))
        .route("/block/{height}", get(block))
        .route("/evidence", get(evidence))
        .route("/validators", get(validators))
        .route("/epochs/{epoch}/set", get(epoch_set))
        .merge(process_routes(with_metrics));
    if with_metrics {
        app = app.route("/metrics", get(metrics));
    }
    // The body limit of `POST /tx` (and of any other route).
    app.layer(DefaultBodyLimit::max(MAX_TX_BYTES + 1024))
        .with_state(view)
}

/// The body limit of `POST /tx`, in words (for a `413`).
const TX_BODY: &str = "a transaction may be (64 KiB)";
/// The body limit of `POST /txs`, in words (for a `413`).
const BATCH_BODY: &str = "a batch may be (4 MiB)";

/// Answers `413` at once to a request whose `Content-Length` declares more than `max` bytes
/// (`limit` says the limit in words), before any of its body is read or `Expect:
/// 100-continue` is honoured, so such a client never holds a connection for the body timeout;
/// passes any other request on. A body without a declared length is still cut at the route's
/// limit as it is read.
async fn refuse_declared_oversize(
    State((max, limit)): State<(usize, &'static str)>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|len| len > max as u64) {
        return body_too_large(limit);
    }
    next.run(request).await
}

/// `413` for a request body larger than `limit` (in words).
fn body_too_large(limit: &str) -> Response {
    error(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("the request body is larger than {limit}"),
    )
}

/// Most transactions in one `POST /txs` batch.
pub const MAX_BATCH_TXS: usize = 512;

/// Most bytes of one `POST /txs` body: room for [`MAX_BATCH_TXS`] first transactions (about
/// 5.5 KB each, with their public key).
pub const MAX_BATCH_BYTES: usize = 4 << 20;

/// Seconds a client told `503` (mempool full) is asked to wait (`Retry-After`): a couple of
/// blocks at the default block time, time for the pool to drain into them.
pub const FULL_RETRY_AFTER_SECS: u64 = 1;

/// The per-client transaction limit of `POST /tx` and `POST /txs`, one budget per client IP
/// address shared by both routes: [`ApiConfig::tx_burst`] transactions at once, then
/// [`ApiConfig::tx_per_second`] (GCRA, the `governor` crate through tower_governor). A batch
/// counts each of its transactions. Beyond it the answer is `429 {"error"}` with `Retry-After`
/// (seconds). The client address is the TCP peer's ([`quasar_process::http_serve`] sets it):
/// behind a proxy every client shares the proxy's limit.
#[derive(Clone)]
pub struct TxLimit {
    governor: Arc<GovernorConfig<PeerIpKeyExtractor, NoOpMiddleware<QuantaInstant>>>,
}

impl TxLimit {
    /// The limit `config` sets. Within a tokio runtime it also starts a task that forgets the
    /// addresses back at a full burst every [`RATE_LIMIT_CLEANUP`].
    pub fn new(config: &ApiConfig) -> TxLimit {
        // At most 10^9 requests a second: the replenish period is at least 1 ns.
        let period_ns = 1_000_000_000 / u64::from(config.tx_per_second.max(1));
        let governor = GovernorConfigBuilder::default()
            .per_nanosecond(period_ns.max(1))
            .burst_size(config.tx_burst.max(1))
            .finish();
        // `finish` refuses only a zero period or burst, which the clamps above rule out.
        let governor = Arc::new(governor.unwrap_or_default());
        let limiter = Arc::downgrade(governor.limiter());
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let mut interval = tokio::time::interval(RATE_LIMIT_CLEANUP);
                loop {
                    interval.tick().await;
                    match limiter.upgrade() {
                        Some(limiter) => limiter.retain_recent(),
                        None => break,
                    }
                }
            });
        }
        TxLimit { governor }
    }

    /// The layer that charges one transaction per request (`POST /tx`).
    pub fn layer(
        &self,
    ) -> GovernorLayer<PeerIpKeyExtractor, NoOpMiddleware<QuantaInstant>, axum::body::Body> {
        GovernorLayer::new(self.governor.clone()).error_handler(|e: GovernorError| match e {
            GovernorError::TooManyRequests { wait_time, .. } => too_many(wait_time),
            GovernorError::UnableToExtractKey => error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the client address is unknown",
            ),
            GovernorError::Other { code, msg, .. } => {
                error(code, msg.unwrap_or_else(|| code.to_string()))
            }
        })
    }

    /// Charges `n` transactions to `client` (`POST /txs`): `None` when within the limit,
    /// otherwise the answer to give instead, `429` beyond the rate, `400` for more than the
    /// whole burst.
    fn charge(&self, client: SocketAddr, n: NonZeroU32) -> Option<Response> {
        let limiter = self.governor.limiter();
        match limiter.check_key_n(&client.ip(), n) {
            Ok(Ok(())) => None,
            Ok(Err(not_until)) => {
                let wait = not_until.wait_time_from(limiter.clock().now());
                Some(too_many(
                    wait.as_secs() + u64::from(wait.subsec_nanos() > 0),
                ))
            }
            Err(_) => Some(error(
                StatusCode::BAD_REQUEST,
                format!(
                    "a batch of {n} transactions is more than this client may send at once \
                     (api.tx_burst): send smaller batches"
                ),
            )),
        }
    }
}

/// `429 {"error"}` with `Retry-After: wait_secs` (at least 1).
fn too_many(wait_secs: u64) -> Response {
    let wait_secs = wait_secs.max(1);
    let response = error(
        StatusCode::TOO_MANY_REQUESTS,
        format!(
            "too many transactions from this address: retry in {wait_secs} s (api.tx_per_second, \
             api.tx_burst)"
        ),
    );
    with_retry_after(response, wait_secs)
}

/// How often the `POST /tx` limiter forgets addresses that are back at a full burst.
const RATE_LIMIT_CLEANUP: Duration = Duration::from_secs(60);

/// How long writing a response may make no progress before the connection is closed.
pub const WRITE_STALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The transport bounds of `config`: [`MAX_CONNECTIONS`], its read timeouts, and
/// [`WRITE_STALL_TIMEOUT`].
pub fn transport_limits(config: &ApiConfig) -> TransportLimits {
    TransportLimits {
        max_unauthenticated: MAX_CONNECTIONS / 2,
        max_authenticated: MAX_CONNECTIONS / 2,
        header_read_timeout: Duration::from_millis(config.header_read_timeout_ms),
        idle_timeout: Duration::from_millis(config.header_read_timeout_ms),
        body_read_timeout: Duration::from_millis(config.body_read_timeout_ms),
        write_stall_timeout: WRITE_STALL_TIMEOUT,
    }
}

/// Serves the API on `listener` until the process exits; `GET /metrics` too when
/// `with_metrics` (no `metrics_listen` configured). Bounds: [`transport_limits`].
pub async fn serve(
    listener: tokio::net::TcpListener,
    view: Arc<dyn NodeView>,
    with_metrics: bool,
    config: ApiConfig,
) {
    if let Ok(addr) = listener.local_addr() {
        if !addr.ip().is_loopback() {
            tracing::warn!(%addr, "the admin API listens beyond loopback and has no authentication; put it behind a proxy or firewall");
        }
    }
    let app = router(view, with_metrics, &config);
    serve_router(listener, app, transport_limits(&config)).await;
}

/// Serves `GET /metrics` alone on `listener` (`metrics_listen`) until the process exits: every
/// other path is `404`, so a scraper's network reaches no route that changes anything.
pub async fn serve_metrics(
    listener: tokio::net::TcpListener,
    view: Arc<dyn NodeView>,
    config: ApiConfig,
) {
    let app = Router::new()
        .route("/metrics", get(metrics))
        .with_state(view);
    serve_router(listener, app, transport_limits(&config)).await;
}

/// Serves `app` on `listener` under `limits` ([`quasar_process::http_serve`]) until the process exits.
pub async fn serve_router(listener: tokio::net::TcpListener, app: Router, limits: TransportLimits) {
    // No authentication: any request head moves a connection to the authenticated class.
    let handle = quasar_process::http_serve::spawn(
        listener,
        limits,
        Arc::new(|_: &http::HeaderMap| true),
        axum::body::Body::new,
        move |_stop| app.clone(),
    );
    handle.stopped().await;
}

/// Most simultaneous API connections, so that a flood of idle clients cannot take the file
/// descriptors the signing guard and the store need: half for connections that have not yet
/// sent a request head (a further one closes the oldest of them), half for those that have
/// ([`quasar_process::http_serve`], "Admission").
pub const MAX_CONNECTIONS: usize = 512;

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (
        status,
        Json(ApiError {
            error: message.into(),
        }),
    )
        .into_response()
}

/// The HTTP status of a refused admission: `400` for the sender's fault, `413` for a
/// transaction over [`MAX_TX_BYTES`], `409` for a transaction already known, `503` for one to
/// send again later (a full mempool, a sender whose key is not known here yet), `500` when the
/// node could not read its own state.
fn refusal_status(e: &MempoolError) -> StatusCode {
    match e {
        MempoolError::Empty | MempoolError::Invalid(_) => StatusCode::BAD_REQUEST,
        MempoolError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
        MempoolError::Duplicate | MempoolError::Finalized { .. } => StatusCode::CONFLICT,
        MempoolError::Full | MempoolError::UnknownKey => StatusCode::SERVICE_UNAVAILABLE,
        MempoolError::Unavailable(_) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// `response` with `Retry-After: seconds`.
fn with_retry_after(mut response: Response, seconds: u64) -> Response {
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    response
}

/// The answer to a refused admission: `{"error"}` with its [`refusal_status`], and for one to
/// send again later ([`MempoolError::retry_later`]) `Retry-After` ([`FULL_RETRY_AFTER_SECS`]).
fn refused(e: &MempoolError) -> Response {
    let response = error(refusal_status(e), e.to_string());
    if e.retry_later() {
        with_retry_after(response, FULL_RETRY_AFTER_SECS)
    } else {
        response
    }
}

/// The JSON answer to a request body that could not be read: `413` past the route's body
/// limit (`limit`, in words), otherwise the extractor's status and reason.
fn body_refusal(rejection: BytesRejection, limit: &str) -> Response {
    let status = rejection.status();
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        body_too_large(limit)
    } else {
        error(status, rejection.body_text())
    }
}

async fn submit_tx(State(view): State<AppState>, body: Result<Bytes, BytesRejection>) -> Response {
    let body = match body {
        Ok(body) => body,
        Err(rejection) => return body_refusal(rejection, TX_BODY),
    };
    // Admission verifies a signature on the rayon pool, which a batch may be keeping busy:
    // wait for it off the async workers, as `POST /txs` does.
    let tx = body.to_vec();
    let Ok(outcome) = tokio::task::spawn_blocking(move || view.submit_tx(tx)).await else {
        return error(StatusCode::INTERNAL_SERVER_ERROR, "admission failed");
    };
    match outcome {
        Ok(hash) => Json(TxAccepted {
            hash: hex::encode(hash),
        })
        .into_response(),
        Err(e) => refused(&e),
    }
}

async fn submit_txs(
    limit: &TxLimit,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    State(view): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body {
        Ok(body) => body,
        Err(rejection) => return body_refusal(rejection, BATCH_BODY),
    };
    let batch = match quasar_wire::TxBatchRef::parse(&body) {
        Ok(batch) => batch,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("the body is not a ZAP TxBatch message: {e}"),
            )
        }
    };
    let count = batch.tx_count();
    if count > MAX_BATCH_TXS {
        return error(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("a batch of {count} transactions: at most {MAX_BATCH_TXS} per request"),
        );
    }
    let Some(n) = u32::try_from(count).ok().and_then(NonZeroU32::new) else {
        return error(StatusCode::BAD_REQUEST, "the batch holds no transaction");
    };
    if let Some(refusal) = limit.charge(client, n) {
        return refusal;
    }
    let txs: Vec<Vec<u8>> = batch.txs().map(<[u8]>::to_vec).collect();
    let Ok(outcomes) = tokio::task::spawn_blocking(move || view.submit_txs(txs)).await else {
        return error(StatusCode::INTERNAL_SERVER_ERROR, "admission failed");
    };
    let mut pushed_back = false;
    let results: Vec<TxOutcome> = outcomes
        .into_iter()
        .map(|outcome| match outcome {
            Ok(hash) => TxOutcome {
                status: StatusCode::OK.as_u16(),
                hash: Some(hex::encode(hash)),
                error: None,
            },
            Err(e) => {
                pushed_back |= e.retry_later();
                TxOutcome {
                    status: refusal_status(&e).as_u16(),
                    hash: None,
                    error: Some(e.to_string()),
                }
            }
        })
        .collect();
    let accepted = results.iter().filter(|r| r.hash.is_some()).count() as u64;
    let response = Json(TxBatchAnswer { accepted, results }).into_response();
    if pushed_back {
        with_retry_after(response, FULL_RETRY_AFTER_SECS)
    } else {
        response
    }
}

async fn get_tx(State(view): State<AppState>, Path(hash_hex): Path<String>) -> Response {
    let hash: Hash = match hex::decode(&hash_hex).ok().and_then(|b| b.try_into().ok()) {
        Some(h) => h,
        None => return error(StatusCode::BAD_REQUEST, "hash must be 32 bytes of hex"),
    };
    match view.tx(&hash) {
        // The hash as the client wrote it.
        Ok(info) => Json(TxInfo {
            hash: hash_hex,
            ..info
        })
        .into_response(),
        Err(unavailable) => unavailable.into_response(),
    }
}

async fn account(State(view): State<AppState>, Path(address_hex): Path<String>) -> Response {
    let address: quasar_app::Address = match hex::decode(&address_hex)
        .ok()
        .and_then(|b| b.try_into().ok())
    {
        Some(a) => a,
        None => return error(StatusCode::BAD_REQUEST, "address must be 32 bytes of hex"),
    };
    match view.account(&address) {
        Ok(info) => Json(info).into_response(),
        Err(unavailable) => unavailable.into_response(),
    }
}

async fn validators(State(view): State<AppState>) -> Response {
    match view.validators() {
        Ok(list) => Json(list).into_response(),
        Err(unavailable) => unavailable.into_response(),
    }
}

/// A path segment that must be a `u64` in decimal (`what` names it), or the `400` saying so.
fn decimal(what: &str, text: &str) -> Result<u64, Box<Response>> {
    text.parse::<u64>().map_err(|_| {
        Box::new(error(
            StatusCode::BAD_REQUEST,
            format!("{what} must be a decimal number below 2^64, got {text:?}"),
        ))
    })
}

async fn epoch_set(State(view): State<AppState>, Path(epoch): Path<String>) -> Response {
    let epoch = match decimal("epoch", &epoch) {
        Ok(epoch) => epoch,
        Err(refusal) => return *refusal,
    };
    match view.epoch_set(epoch) {
        Ok(info) => Json(info).into_response(),
        Err(unavailable) => unavailable.into_response(),
    }
}

async fn status(State(view): State<AppState>) -> Json<Status> {
    Json(view.status())
}

/// View timeouts that may pass without a newly finalized block before `GET /ready` says the
/// node is not ready: one or two failed leaders in a row cost a view timeout each, a stalled
/// network or a node cut off from it costs all of them.
pub const READY_STALE_VIEWS: u64 = 5;

/// Blocks the highest verified proposal may run ahead of the finalized height on a ready node;
/// more means the node is still catching up.
pub const READY_MAX_LAG: u64 = 8;

/// Why a node is not ready to serve as a validator, empty when it is. `finalized` is its
/// finalized height, `height` the highest height of a verified proposal it has seen,
/// `last_finalized_us` when it saw `finalized` finalized (µs since the Unix epoch; `None` when
/// it has finalized nothing since it started), `now_us` the time now and `stale_after_ms` the
/// longest time without a finalized block ([`READY_STALE_VIEWS`] view timeouts).
pub fn not_ready_reasons(
    finalized: u64,
    height: u64,
    last_finalized_us: Option<u64>,
    now_us: u64,
    stale_after_ms: u64,
    genesis_time_us: u64,
) -> Vec<String> {
    let mut reasons = Vec::new();
    match last_finalized_us {
        None if now_us < genesis_time_us => reasons.push(format!(
            "waiting for the genesis time: the chain starts in {} s (genesis_time_us {})",
            (genesis_time_us - now_us).div_ceil(1_000_000),
            genesis_time_us
        )),
        None => reasons.push("no block finalized since this node started".to_string()),
        Some(at) => {
            let age_ms = now_us.saturating_sub(at) / 1000;
            if age_ms > stale_after_ms {
                reasons.push(format!(
                    "the last block finalized here (height {finalized}) is {age_ms} ms old, over \
                     {stale_after_ms} ms"
                ));
            }
        }
    }
    let lag = height.saturating_sub(finalized);
    if lag > READY_MAX_LAG {
        reasons.push(format!(
            "catching up: finalized height {finalized}, proposals seen up to height {height} \
             ({lag} behind, at most {READY_MAX_LAG})"
        ));
    }
    reasons
}

/// `GET /ready`: a readiness probe (Kubernetes, compose, load balancers).
async fn ready(State(view): State<AppState>) -> Response {
    let readiness = view.readiness();
    let status = if readiness.ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(readiness)).into_response()
}

/// `GET /block/latest`: the block at the finalized height.
async fn block_latest(State(view): State<AppState>) -> Response {
    match view.finalized_height() {
        0 => error(StatusCode::NOT_FOUND, "no block finalized yet"),
        height => block_at(view.as_ref(), height),
    }
}

async fn block(State(view): State<AppState>, Path(height): Path<String>) -> Response {
    match decimal("height", &height) {
        Ok(height) => block_at(view.as_ref(), height),
        Err(refusal) => *refusal,
    }
}

/// The answer of `GET /block/{height}`.
fn block_at(view: &dyn NodeView, height: u64) -> Response {
    match view.block(height) {
        Ok(block) => Json(block).into_response(),
        Err(unavailable) => unavailable.into_response(),
    }
}

async fn metrics(State(view): State<AppState>) -> Response {
    let mut text = String::new();
    if let Err(e) = view.encode_metrics(&mut text) {
        return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string());
    }
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

/// `limit` of `GET /evidence` when the query names none.
pub const DEFAULT_EVIDENCE_LIMIT: usize = 100;

/// Largest `limit` `GET /evidence` honours; a larger one is capped to it.
pub const MAX_EVIDENCE_LIMIT: usize = 1000;

/// The parameters of `GET /evidence`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EvidenceQuery {
    /// Lowest view returned (inclusive); default 0.
    pub from_view: u64,
    /// Most records returned; default [`DEFAULT_EVIDENCE_LIMIT`], capped at
    /// [`MAX_EVIDENCE_LIMIT`].
    pub limit: usize,
}

/// Parses the query string of `GET /evidence` (`from_view=V&limit=N`, both optional, decimal).
///
/// Errors (the message for a `400`): a parameter that is not a decimal integer in range, one given
/// twice, or one the route does not know.
pub fn parse_evidence_query(raw: Option<&str>) -> Result<EvidenceQuery, String> {
    let mut from_view = None;
    let mut limit = None;
    for pair in raw.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let slot = match name {
            "from_view" => &mut from_view,
            "limit" => &mut limit,
            _ => {
                return Err(format!(
                    "unknown parameter {name:?}; expected from_view, limit"
                ))
            }
        };
        let parsed: u64 = value
            .parse()
            .map_err(|_| format!("{name} must be a non-negative decimal integer, got {value:?}"))?;
        if slot.replace(parsed).is_some() {
            return Err(format!("{name} given twice"));
        }
    }
    let limit = match limit {
        None => DEFAULT_EVIDENCE_LIMIT,
        Some(n) => usize::try_from(n)
            .unwrap_or(usize::MAX)
            .min(MAX_EVIDENCE_LIMIT),
    };
    Ok(EvidenceQuery {
        from_view: from_view.unwrap_or(0),
        limit,
    })
}

/// The body of `GET /evidence`: `{"count": <records stored in total>, "evidence": [{"kind":
/// "conflicting_proposal"|"conflicting_notarize"|"conflicting_finalize"|"finalize_and_nullify",
/// "signer": u32, "view": u64, "first": hex, "second": hex}]}`, where `first` and `second` are the
/// complete encoded ZAP messages: decode them with `quasar_wire::decode` and verify each signature
/// with the signer's public key to check the evidence independently.
pub fn evidence_list(records: &[EvidenceRecord], count: u64) -> EvidenceList {
    let evidence = records
        .iter()
        .map(|r| EvidenceEntry {
            kind: evidence_kind::name(r.kind).unwrap_or("unknown").to_string(),
            signer: r.signer,
            view: r.view,
            first: hex::encode(&r.first),
            second: hex::encode(&r.second),
        })
        .collect();
    EvidenceList { count, evidence }
}

async fn evidence(State(view): State<AppState>, RawQuery(raw): RawQuery) -> Response {
    let query = match parse_evidence_query(raw.as_deref()) {
        Ok(q) => q,
        Err(message) => return error(StatusCode::BAD_REQUEST, message),
    };
    // Records can hold whole blocks (conflicting proposals), so reading and hex-encoding them runs
    // off the async workers.
    match tokio::task::spawn_blocking(move || view.evidence(query)).await {
        Ok(Ok(body)) => Json(body).into_response(),
        Ok(Err(unavailable)) => unavailable.into_response(),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;

    /// `GET path` on `app`: the status and the JSON body.
    async fn get_json(app: Router, path: &str) -> (StatusCode, Value) {
        let request = Request::get(path).body(Body::empty()).unwrap();
        let response = app.oneshot(request).await.unwrap();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        (status, serde_json::from_slice(&body).unwrap())
    }

    /// A node as the API sees it, with fixed answers: block 5 exists, blocks below 3 are
    /// pruned, transaction `[1; 32]` is pending, anything submitted is judged by its first
    /// byte, and the evidence store fails.
    struct FixedView {
        ready: bool,
        finalized: u64,
    }

    impl NodeView for FixedView {
        fn status(&self) -> Status {
            unimplemented!("not asked in these tests")
        }

        fn readiness(&self) -> Readiness {
            Readiness {
                ready: self.ready,
                reasons: if self.ready {
                    vec![]
                } else {
                    vec!["catching up".into()]
                },
                finalized_height: self.finalized,
                height: self.finalized,
                last_finalized_ms_ago: None,
                stale_after_ms: 1000,
                peers: 0,
            }
        }

        fn finalized_height(&self) -> u64 {
            self.finalized
        }

        fn block(&self, height: u64) -> Result<BlockInfo, Unavailable> {
            match height {
                5 => Ok(BlockInfo {
                    height: 5,
                    hash: "aa".into(),
                    parent: "bb".into(),
                    view: 7,
                    proposer: 1,
                    timestamp_us: 0,
                    tx_count: 0,
                    tx_hashes: vec![],
                    finalized_at_us: None,
                    finality: Default::default(),
                    certificate: quasar_client::CertificateInfo {
                        kind: "finalization".into(),
                        view: 7,
                        block: "aa".into(),
                        signers: vec![0, 1, 2],
                        aggregate_signature: "cc".into(),
                    },
                }),
                1 | 2 => Err(Unavailable::Pruned("pruned".into())),
                _ => Err(Unavailable::NotFound("no finalized block".into())),
            }
        }

        fn tx(&self, hash: &Hash) -> Result<TxInfo, Unavailable> {
            if *hash == [1; 32] {
                Ok(TxInfo {
                    hash: hex::encode(hash),
                    status: quasar_client::TxStatus::Pending,
                    height: None,
                })
            } else {
                Err(Unavailable::NotFound("unknown transaction".into()))
            }
        }

        fn submit_tx(&self, tx: Vec<u8>) -> Result<Hash, MempoolError> {
            match tx.first() {
                None => Err(MempoolError::Empty),
                Some(b'd') => Err(MempoolError::Duplicate),
                Some(b'f') => Err(MempoolError::Full),
                Some(_) => Ok([2; 32]),
            }
        }

        fn account(&self, _address: &quasar_app::Address) -> Result<AccountInfo, Unavailable> {
            Err(Unavailable::NotFound("nothing executed yet".into()))
        }

        fn evidence(&self, _query: EvidenceQuery) -> Result<EvidenceList, Unavailable> {
            Err(Unavailable::Failed("the store failed".into()))
        }

        fn validators(&self) -> Result<ValidatorList, Unavailable> {
            Err(Unavailable::NotFound("nothing executed yet".into()))
        }

        fn epoch_set(&self, epoch: u64) -> Result<EpochSetInfo, Unavailable> {
            Err(Unavailable::NotFound(format!("epoch {epoch}: sets fixed")))
        }

        fn encode_metrics(&self, out: &mut String) -> std::fmt::Result {
            out.push_str("# EOF\n");
            Ok(())
        }
    }

    fn fixed(ready: bool, finalized: u64) -> Router {
        router(
            Arc::new(FixedView { ready, finalized }),
            true,
            &ApiConfig::default(),
        )
    }

    /// `request` on `app`: the status and the body as JSON.
    async fn send(app: Router, request: Request<Body>) -> (StatusCode, Value) {
        let response = app.oneshot(request).await.unwrap();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
    }

    /// Each answer of the view, and each refusal, reaches the client with its HTTP status and
    /// a JSON body of the client's types.
    #[tokio::test]
    async fn the_view_s_answers_map_to_their_statuses() {
        let (status, body) = get_json(fixed(true, 5), "/block/5").await;
        assert_eq!(status, StatusCode::OK);
        let block: BlockInfo = serde_json::from_value(body).unwrap();
        assert_eq!(block.certificate.signers, vec![0, 1, 2]);
        assert_eq!(
            get_json(fixed(true, 5), "/block/latest").await.0,
            StatusCode::OK
        );
        let (status, body) = get_json(fixed(true, 0), "/block/latest").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_eq!(body["error"], "no block finalized yet");
        let (status, body) =
            get_json(fixed(true, 5), &format!("/account/{}", "ab".repeat(32))).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (StatusCode::NOT_FOUND, Some("nothing executed yet"))
        );
        let (status, body) =
            get_json(fixed(true, 5), &format!("/account/{}", "ab".repeat(31))).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (
                StatusCode::BAD_REQUEST,
                Some("address must be 32 bytes of hex")
            )
        );
        let (status, body) = get_json(fixed(true, 5), "/block/2").await;
        assert_eq!(
            (status, body["error"].as_str()),
            (StatusCode::GONE, Some("pruned"))
        );
        assert_eq!(
            get_json(fixed(true, 5), "/block/9").await.0,
            StatusCode::NOT_FOUND
        );
        // A height that is not a u64 gets a JSON error too.
        for path in ["/block/-1", "/block/99999999999999999999", "/epochs/x/set"] {
            let (status, body) = get_json(fixed(true, 5), path).await;
            let error = body["error"].as_str().unwrap_or_default();
            assert!(
                status == StatusCode::BAD_REQUEST && error.contains("must be a decimal number"),
                "{path}: {status} {body}"
            );
        }

        // The hash comes back as the client wrote it.
        let upper = "01".repeat(32).to_uppercase();
        let (status, body) = get_json(fixed(true, 5), &format!("/tx/{upper}")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            (body["hash"].as_str(), body["status"].as_str()),
            (Some(upper.as_str()), Some("pending"))
        );
        assert_eq!(
            get_json(fixed(true, 5), &format!("/tx/{}", "02".repeat(32)))
                .await
                .0,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            get_json(fixed(true, 5), "/tx/abc").await.0,
            StatusCode::BAD_REQUEST
        );

        for (body, want) in [
            ("", StatusCode::BAD_REQUEST),
            ("dup", StatusCode::CONFLICT),
            ("full", StatusCode::SERVICE_UNAVAILABLE),
            ("ok", StatusCode::OK),
        ] {
            let request = post_from_client("/tx", body.as_bytes().to_vec());
            let (status, json) = send(fixed(true, 5), request).await;
            assert_eq!(status, want, "{body:?}: {json}");
            let key = if want == StatusCode::OK {
                "hash"
            } else {
                "error"
            };
            assert!(json[key].is_string(), "{body:?}: {json}");
        }

        let (status, body) = get_json(fixed(false, 5), "/ready").await;
        assert_eq!(
            (status, &body["ready"]),
            (StatusCode::SERVICE_UNAVAILABLE, &Value::Bool(false))
        );
        assert_eq!(get_json(fixed(true, 5), "/ready").await.0, StatusCode::OK);

        let (status, body) = get_json(fixed(true, 5), "/evidence").await;
        assert_eq!(
            (status, &body["error"]),
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                &Value::from("the store failed")
            )
        );
        assert_eq!(
            get_json(fixed(true, 5), "/evidence?limit=x").await.0,
            StatusCode::BAD_REQUEST
        );
    }

    /// The API over a ready [`FixedView`] with `config`.
    fn view_router(config: &ApiConfig) -> Router {
        let view = FixedView {
            ready: true,
            finalized: 5,
        };
        router(Arc::new(view), false, config)
    }

    /// `POST {path}` with `body`, from the client address the listener would supply (the
    /// transaction limit keys on it).
    fn post_from_client(path: &str, body: Vec<u8>) -> Request<Body> {
        let mut request = Request::post(path).body(Body::from(body)).unwrap();
        let client = std::net::SocketAddr::from(([127, 0, 0, 1], 9));
        request
            .extensions_mut()
            .insert(axum::extract::ConnectInfo(client));
        request
    }

    /// `POST /txs` with `body` on `app`, from one client address.
    async fn send_batch(app: &Router, body: Vec<u8>) -> Response {
        let request = post_from_client("/txs", body);
        app.clone().oneshot(request).await.unwrap()
    }

    /// `POST /txs` with `body` on a router with `config`: the status, the `Retry-After` header
    /// and the body as JSON.
    async fn post_batch(config: &ApiConfig, body: Vec<u8>) -> (StatusCode, Option<String>, Value) {
        let response = send_batch(&view_router(config), body).await;
        let status = response.status();
        let retry = response
            .headers()
            .get(header::RETRY_AFTER)
            .map(|v| v.to_str().unwrap().to_string());
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        (
            status,
            retry,
            serde_json::from_slice(&body).unwrap_or(Value::Null),
        )
    }

    fn batch(txs: &[&[u8]]) -> Vec<u8> {
        quasar_wire::TxBatch {
            txs: txs.iter().map(|t| t.to_vec()).collect(),
        }
        .encode()
        .unwrap()
    }

    /// A batch gets one outcome per transaction, in order, with the status `POST /tx` would
    /// have given it, and `Retry-After` when the mempool pushed any back; a batch that is not
    /// one, is empty, too long or too large is refused whole.
    #[tokio::test]
    async fn a_batch_answers_each_transaction_in_order() {
        let config = ApiConfig::default();
        let (status, retry, json) =
            post_batch(&config, batch(&[b"ok", b"dup", b"", b"full"])).await;
        assert_eq!(status, StatusCode::OK, "{json}");
        assert_eq!(json["accepted"], 1, "{json}");
        let statuses: Vec<u64> = json["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["status"].as_u64().unwrap())
            .collect();
        assert_eq!(statuses, [200, 409, 400, 503]);
        assert!(json["results"][0]["hash"].is_string() && json["results"][1]["error"].is_string());
        assert_eq!(retry.as_deref(), Some("1"), "pushed back: a retry hint");
        let (_, retry, _) = post_batch(&config, batch(&[b"ok"])).await;
        assert_eq!(retry, None, "nothing pushed back, no hint");

        for (body, want, says) in [
            (
                b"not zap".to_vec(),
                StatusCode::BAD_REQUEST,
                "not a ZAP TxBatch",
            ),
            (batch(&[]), StatusCode::BAD_REQUEST, "no transaction"),
            (
                batch(&vec![&b"ok"[..]; MAX_BATCH_TXS + 1]),
                StatusCode::PAYLOAD_TOO_LARGE,
                "at most 512",
            ),
        ] {
            let (status, _, json) = post_batch(&config, body).await;
            assert_eq!(status, want, "{json}");
            assert!(json["error"].as_str().unwrap().contains(says), "{json}");
        }
        let huge = batch(&[&vec![1u8; MAX_BATCH_BYTES][..]]);
        let request = post_from_client("/tx", vec![1u8; MAX_TX_BYTES + 2048]);
        let (status, json) = send(fixed(true, 5), request).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{json}");
        assert!(json["error"].as_str().unwrap().contains("64 KiB"), "{json}");
        let (status, _, json) = post_batch(&config, huge).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        assert!(
            json["error"]
                .as_str()
                .unwrap()
                .contains("larger than a batch may be"),
            "{json}"
        );
        // A declared length past the limit is refused before the body is read: these bodies
        // are tiny, and would be accepted.
        for (path, declared, says) in [
            ("/tx", MAX_TX_BYTES + 1, "64 KiB"),
            ("/tx", 1 << 40, "64 KiB"),
            ("/txs", MAX_BATCH_BYTES + 1, "4 MiB"),
        ] {
            let mut request = post_from_client(path, b"ok".to_vec());
            request
                .headers_mut()
                .insert(header::CONTENT_LENGTH, HeaderValue::from(declared));
            let (status, json) = send(fixed(true, 5), request).await;
            assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{path}: {json}");
            assert!(json["error"].as_str().unwrap().contains(says), "{json}");
        }
    }

    /// Every transaction of a batch counts against the client's limit: a batch beyond the
    /// burst is refused whole, and one beyond what is left of it gets `429` with a retry hint.
    #[tokio::test]
    async fn a_batch_counts_each_transaction_against_the_client_limit() {
        let config = ApiConfig {
            tx_per_second: 1,
            tx_burst: 3,
            ..ApiConfig::default()
        };
        let app = view_router(&config);
        let send = |body: Vec<u8>| send_batch(&app, body);
        let response = send(batch(&[&b"ok"[..]; 4])).await;
        assert_eq!(
            response.status(),
            StatusCode::BAD_REQUEST,
            "more than the burst"
        );
        assert_eq!(send(batch(&[&b"ok"[..]; 2])).await.status(), StatusCode::OK);
        let response = send(batch(&[&b"ok"[..]; 2])).await;
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS, "one left");
        assert!(response.headers().contains_key(header::RETRY_AFTER));
        assert_eq!(
            send(batch(&[b"ok"])).await.status(),
            StatusCode::OK,
            "the one left"
        );
    }

    #[tokio::test]
    async fn health_is_ok_while_the_process_serves() {
        let (status, body) = get_json(process_routes(true), "/health").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, json!({ "status": "ok" }));
    }

    #[tokio::test]
    async fn the_index_names_every_route_and_metrics_only_where_served() {
        let (status, body) = get_json(process_routes(true), "/").await;
        assert_eq!(status, StatusCode::OK);
        let paths: Vec<&str> = body["routes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["path"].as_str().unwrap())
            .collect();
        for path in [
            "/",
            "/health",
            "/ready",
            "/status",
            "/tx",
            "/block/latest",
            "/validators",
            "/metrics",
        ] {
            assert!(paths.contains(&path), "{path} missing from {paths:?}");
        }
        // With `metrics_listen` set the API does not serve `/metrics`, and its index says so.
        let (_, body) = get_json(process_routes(false), "/").await;
        assert!(!body.to_string().contains("/metrics"), "{body}");
    }

    /// Serves `app` on a fresh loopback port under `limits`; returns its address.
    async fn serve_on_loopback(app: Router, limits: TransportLimits) -> std::net::SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve_router(listener, app, limits));
        addr
    }

    /// `POST /tx` accepts a client's burst, then answers `429` with a JSON error and
    /// `Retry-After` until the rate refills it; other routes are not limited.
    #[tokio::test]
    async fn tx_submissions_beyond_the_burst_get_429() {
        let config = ApiConfig {
            tx_per_second: 1,
            tx_burst: 3,
            ..ApiConfig::default()
        };
        let app = Router::new()
            .route(
                "/tx",
                post(|| async { "accepted" }).layer(TxLimit::new(&config).layer()),
            )
            .merge(process_routes(false));
        let addr = serve_on_loopback(app, transport_limits(&config)).await;
        let client = reqwest::Client::new();
        let url = format!("http://{addr}/tx");
        for i in 0..3 {
            let response = client.post(&url).body("tx").send().await.unwrap();
            assert_eq!(response.status(), 200, "request {i} is within the burst");
        }
        let response = client.post(&url).body("tx").send().await.unwrap();
        assert_eq!(response.status(), 429);
        assert!(response.headers().contains_key("retry-after"));
        let body: Value = response.json().await.unwrap();
        assert!(
            body["error"]
                .as_str()
                .unwrap()
                .contains("too many transactions"),
            "{body}"
        );
        let health = client.get(format!("http://{addr}/health")).send().await;
        assert_eq!(health.unwrap().status(), 200, "only POST /tx is limited");
    }

    /// A client that sends part of a request head and stalls is disconnected at the header
    /// timeout (it held a connection slot for ever before); one that stalls in its body is
    /// answered `408` at the body timeout.
    #[tokio::test]
    async fn stalled_clients_are_dropped() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let limits = TransportLimits {
            header_read_timeout: Duration::from_millis(200),
            body_read_timeout: Duration::from_millis(200),
            ..transport_limits(&ApiConfig::default())
        };
        let app = Router::new().route(
            "/tx",
            post(|body: Bytes| async move { body.len().to_string() }),
        );
        let addr = serve_on_loopback(app, limits).await;

        let mut head = tokio::net::TcpStream::connect(addr).await.unwrap();
        head.write_all(b"POST /tx HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        let mut answer = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), head.read_to_end(&mut answer));
        assert!(
            read.await.is_ok(),
            "the server closes a stalled request head"
        );

        let mut body = tokio::net::TcpStream::connect(addr).await.unwrap();
        body.write_all(b"POST /tx HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab")
            .await
            .unwrap();
        let mut answer = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), body.read_to_end(&mut answer));
        assert!(read.await.is_ok(), "the server closes a stalled body");
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    }

    #[test]
    fn readiness_needs_a_recent_finalized_block_and_no_backlog() {
        let now = 1_000_000_000;
        // Finalized 1 s ago, the next proposal in flight: ready.
        assert!(not_ready_reasons(40, 41, Some(now - 1_000_000), now, 10_000, 0).is_empty());
        // At the limit still ready; one millisecond past it not.
        assert!(not_ready_reasons(40, 40, Some(now - 10_000_000), now, 10_000, 0).is_empty());
        let stale = not_ready_reasons(40, 40, Some(now - 10_001_000), now, 10_000, 0);
        assert_eq!(stale.len(), 1);
        assert!(stale[0].contains("10001 ms old"), "{stale:?}");
        // Nothing finalized since the start.
        let fresh = not_ready_reasons(0, 0, None, now, 10_000, 0);
        assert!(fresh[0].contains("since this node started"), "{fresh:?}");
        // Catching up: proposals far above the finalized height; both reasons at once.
        assert!(not_ready_reasons(40, 40 + READY_MAX_LAG, Some(now), now, 10_000, 0).is_empty());
        let behind = not_ready_reasons(40, 41 + READY_MAX_LAG, None, now, 10_000, 0);
        assert_eq!(behind.len(), 2);
        assert!(behind[1].contains("catching up"), "{behind:?}");
        // A clock that stepped back reads as fresh, never as an overflow.
        assert!(not_ready_reasons(40, 40, Some(now + 5_000_000), now, 10_000, 0).is_empty());
        // Before the genesis time the reason says how long the chain has to go.
        let early = not_ready_reasons(0, 0, None, now, 10_000, now + 599_000_001);
        assert_eq!(early.len(), 1);
        assert!(early[0].contains("starts in 600 s"), "{early:?}");
    }
}
