//! thresholdd's metrics, in Prometheus text format at `GET /metrics`: on the daemon's own
//! address behind the bearer token, like every request, and, with
//! [`super::DaemonConfig::metrics_listen`], without a token on a listener of their own that
//! serves nothing else ([`serve_plain`]), so that Prometheus need not hold a token that signs.
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `thresholdd_calls_total` | counter | `method`, `outcome` (`ok` or `error`) |
//! | `thresholdd_call_seconds` | histogram | `method` |
//! | `thresholdd_votes_signed_total` | counter | |
//! | `thresholdd_guard_refusals_total` | counter | |
//! | `thresholdd_build_info` | gauge (1) | `version`, `commit` |
//! | `process_*` (CPU, memory, file descriptors, start time; Linux) | | see [`quasar_process::build_info`] |
//!
//! Only registered methods are counted (an unknown method name never becomes a label, so a
//! client cannot grow the label set).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use jsonrpsee::server::{HttpBody, HttpRequest, HttpResponse};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use tower::{Layer, Service};

/// The `method` and `outcome` labels of [`DaemonMetrics::calls`].
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CallLabels {
    /// The JSON-RPC method, e.g. `bls.sign`.
    pub method: &'static str,
    /// `ok` or `error`.
    pub outcome: &'static str,
}

/// How often thresholdd logs its INFO summary line; each vote it signs is a DEBUG line.
pub const SUMMARY_INTERVAL: std::time::Duration = std::time::Duration::from_secs(60);

/// Logs one INFO line every [`SUMMARY_INTERVAL`]: the votes signed since the last line, in
/// all, and the guard refusals in all (a quiet daemon still logs, with 0 votes).
pub async fn log_summaries(metrics: std::sync::Arc<DaemonMetrics>) {
    let mut ticker = tokio::time::interval(SUMMARY_INTERVAL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    let mut last = metrics.votes_signed.get();
    loop {
        ticker.tick().await;
        let signed = metrics.votes_signed.get();
        tracing::info!(
            votes_signed = signed.saturating_sub(last),
            votes_signed_total = signed,
            guard_refusals_total = metrics.guard_refusals.get(),
            "summary"
        );
        last = signed;
    }
}

/// The `method` label of [`DaemonMetrics::call_seconds`].
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MethodLabel {
    /// The JSON-RPC method.
    pub method: &'static str,
}

/// Every metric of the daemon and the registry that encodes them.
pub struct DaemonMetrics {
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    call_seconds: Family<MethodLabel, Histogram>,
    /// Votes `validator.sign_vote` signed.
    pub votes_signed: Counter,
    /// Votes the signing guard refused.
    pub guard_refusals: Counter,
}

impl std::fmt::Debug for DaemonMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DaemonMetrics")
    }
}

impl DaemonMetrics {
    /// Fresh metrics, all zero.
    pub fn new() -> DaemonMetrics {
        let mut registry = Registry::default();
        quasar_process::build_info::register(&mut registry, "thresholdd");
        let calls = Family::<CallLabels, Counter>::default();
        registry.register(
            "thresholdd_calls",
            "JSON-RPC calls of registered methods, by method and outcome",
            calls.clone(),
        );
        // 100 µs to about 100 s: from `health` to a large Corona keygen.
        let call_seconds = Family::<MethodLabel, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(1e-4, 2.0, 21))
        });
        registry.register(
            "thresholdd_call_seconds",
            "Time to answer a call, parameters decoded to result serialized",
            call_seconds.clone(),
        );
        let votes_signed = Counter::default();
        registry.register(
            "thresholdd_votes_signed",
            "Votes validator.sign_vote signed",
            votes_signed.clone(),
        );
        let guard_refusals = Counter::default();
        registry.register(
            "thresholdd_guard_refusals",
            "Votes the signing guard refused",
            guard_refusals.clone(),
        );
        DaemonMetrics {
            registry,
            calls,
            call_seconds,
            votes_signed,
            guard_refusals,
        }
    }

    /// Counts one call of `method` that took `elapsed` and succeeded when `ok`.
    pub fn observe(&self, method: &'static str, elapsed: Duration, ok: bool) {
        let outcome = if ok { "ok" } else { "error" };
        self.calls
            .get_or_create(&CallLabels { method, outcome })
            .inc();
        self.call_seconds
            .get_or_create(&MethodLabel { method })
            .observe(elapsed.as_secs_f64());
    }

    /// The metrics in Prometheus text format. Errors: the encoder's (a formatting failure).
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }
}

impl Default for DaemonMetrics {
    fn default() -> Self {
        DaemonMetrics::new()
    }
}

/// The content type of `GET /metrics`: prometheus_client's text encoder writes OpenMetrics
/// (`# EOF`), as the node's API does.
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Most simultaneous connections to the metrics listener (a scraper needs one).
pub const MAX_METRICS_CONNECTIONS: usize = 16;

/// The status and body of `GET /metrics`: the encoded metrics, or 500 with the encoder's error.
fn exposition(metrics: &DaemonMetrics) -> (http::StatusCode, String) {
    match metrics.encode() {
        Ok(text) => (http::StatusCode::OK, text),
        Err(e) => (
            http::StatusCode::INTERNAL_SERVER_ERROR,
            format!("encoding the metrics failed: {e}\n"),
        ),
    }
}

/// Serves `GET /metrics` and nothing else (404), without a token, on `listener` (at most
/// [`MAX_METRICS_CONNECTIONS`] connections at once) until the task is dropped or aborted.
/// The metrics are counters and latencies: nothing on this listener reads a key or signs.
pub async fn serve_plain(listener: tokio::net::TcpListener, metrics: Arc<DaemonMetrics>) {
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || async move {
            let (status, body) = exposition(&metrics);
            (status, [(http::header::CONTENT_TYPE, CONTENT_TYPE)], body)
        }),
    );
    let listener = quasar_process::LimitedListener::new(listener, MAX_METRICS_CONNECTIONS);
    if let Err(e) = axum::serve(listener, app).await {
        tracing::error!(error = %e, "the metrics listener stopped");
    }
}

/// A tower layer that answers `GET /metrics` with [`DaemonMetrics::encode`] and passes every
/// other request on (place it after the bearer-token layer).
#[derive(Clone, Debug)]
pub struct MetricsLayer {
    metrics: Arc<DaemonMetrics>,
}

impl MetricsLayer {
    /// The layer serving `metrics`.
    pub fn new(metrics: Arc<DaemonMetrics>) -> MetricsLayer {
        MetricsLayer { metrics }
    }
}

impl<S> Layer<S> for MetricsLayer {
    type Service = MetricsService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        MetricsService {
            inner,
            metrics: self.metrics.clone(),
        }
    }
}

/// The service [`MetricsLayer`] wraps around the JSON-RPC server.
#[derive(Clone, Debug)]
pub struct MetricsService<S> {
    inner: S,
    metrics: Arc<DaemonMetrics>,
}

impl<S, B> Service<HttpRequest<B>> for MetricsService<S>
where
    S: Service<HttpRequest<B>, Response = HttpResponse>,
    S::Future: Send + 'static,
{
    type Response = HttpResponse;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, S::Error>> + Send + 'static>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: HttpRequest<B>) -> Self::Future {
        if request.method() != http::Method::GET || request.uri().path() != "/metrics" {
            return Box::pin(self.inner.call(request));
        }
        let (status, body) = exposition(&self.metrics);
        let mut response = HttpResponse::new(HttpBody::from(body));
        *response.status_mut() = status;
        response.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static(CONTENT_TYPE),
        );
        Box::pin(async move { Ok(response) })
    }
}
