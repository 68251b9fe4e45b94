//! Node metrics, exported in Prometheus text format at `GET /metrics` (with
//! `quasar_build_info` and the `process_*` metrics of [`quasar_process::build_info`]).

use prometheus_client::collector::Collector;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::{DescriptorEncoder, EncodeCounterValue, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use quasar_crypto::bls_cache::PublicKeyCache;
use quasar_gpu::{Dispatcher, QueueKey, QueueStats};
use std::sync::Arc;

/// Consensus and mempool metrics (the transport registers its own, see `p2p::P2pMetrics`).
#[derive(Clone)]
pub struct NodeMetrics {
    /// Votes this validator signed (guard allowed and persisted).
    pub votes_signed: Counter,
    /// Votes the signing guard refused against a record this process made, or that it could
    /// not record (a second signer behind one guard, or a failing disk): never expected.
    pub guard_refusals: Counter,
    /// Votes the signing guard refused because this validator signed a conflicting vote in the
    /// same view before it restarted (its own history, not a second signer).
    pub guard_restart_refusals: Counter,
    /// Votes and proposals the remote signer (`signer = "remote"`) failed or refused to sign.
    pub remote_signer_errors: Counter,
    /// Equivocations detected in received messages.
    pub equivocations: Counter,
    /// Equivocation evidence that could not be stored.
    pub evidence_store_failures: Counter,
    /// Messages that decoded but failed verification.
    pub invalid_messages: Counter,
    /// Blocks finalized.
    pub blocks_finalized: Counter,
    /// Transactions in finalized blocks.
    pub txs_finalized: Counter,
    /// Current view.
    pub view: Gauge,
    /// Finalized height.
    pub finalized_height: Gauge,
    /// Pending transactions.
    pub mempool_size: Gauge,
    /// Transactions dropped from the mempool after waiting past `mempool_tx_lifetime_secs`.
    pub mempool_expired: Counter,
    /// Client transactions refused because the mempool was full (answered `503` with
    /// `Retry-After`): the node's push-back.
    pub mempool_pushed_back: Counter,
    /// Transactions admission refused, by `reason` ([`crate::mempool::MempoolError::reason`])
    /// and `source` (`client` or `peer`).
    pub mempool_refused: Family<RefusalLabels, Counter>,
    /// Admitted transactions not gossiped because the gossip batcher's queue was full (they
    /// stay in this node's mempool).
    pub tx_gossip_dropped: Counter,
    /// Seconds from a block's proposal timestamp to this node seeing its finalize quorum.
    pub finality_seconds: Histogram,
    /// Highest height covered by a verified QuasarCert (Quasar finality).
    pub quasar_finalized_height: Gauge,
    /// Verified QuasarCerts stored.
    pub quasar_certificates: Counter,
    /// Bundles that stayed at Nova finality: hybrid deadline passed, or dropped unfinished.
    pub quasar_bundles_abandoned: Counter,
    /// Whole-certificate verification time (parallel max).
    pub quasar_cert_verify_seconds: Histogram,
    /// Per-leg verification time, labelled by leg.
    pub quasar_leg_verify_seconds: Family<LegLabel, Histogram>,
}

/// The `leg` label of per-leg metrics.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LegLabel {
    /// The leg's name (`bls`, `corona`, `groth16`, `pulsar`, `magnetar`).
    pub leg: String,
}

/// The labels of `quasar_mempool_refused_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RefusalLabels {
    /// Why ([`crate::mempool::MempoolError::reason`]).
    pub reason: &'static str,
    /// `client` (the API) or `peer` (gossip).
    pub source: &'static str,
}

/// Buckets for verification times: 100 µs to about 3 s.
fn verify_buckets() -> impl Iterator<Item = f64> {
    exponential_buckets(1e-4, 2.0, 16)
}

impl NodeMetrics {
    /// Fresh metrics, registered into `registry` under the `quasar` prefix.
    pub fn new(registry: &mut Registry) -> NodeMetrics {
        let buckets = [
            0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
        ];
        let m = NodeMetrics {
            votes_signed: Counter::default(),
            guard_refusals: Counter::default(),
            guard_restart_refusals: Counter::default(),
            remote_signer_errors: Counter::default(),
            equivocations: Counter::default(),
            evidence_store_failures: Counter::default(),
            invalid_messages: Counter::default(),
            blocks_finalized: Counter::default(),
            txs_finalized: Counter::default(),
            view: Gauge::default(),
            finalized_height: Gauge::default(),
            mempool_size: Gauge::default(),
            mempool_expired: Counter::default(),
            mempool_pushed_back: Counter::default(),
            mempool_refused: Family::default(),
            tx_gossip_dropped: Counter::default(),
            finality_seconds: Histogram::new(buckets),
            quasar_finalized_height: Gauge::default(),
            quasar_certificates: Counter::default(),
            quasar_bundles_abandoned: Counter::default(),
            quasar_cert_verify_seconds: Histogram::new(verify_buckets()),
            quasar_leg_verify_seconds: Family::new_with_constructor(|| {
                Histogram::new(verify_buckets())
            }),
        };
        let r = registry.sub_registry_with_prefix("quasar");
        r.register(
            "consensus_votes_signed",
            "Votes this validator signed",
            m.votes_signed.clone(),
        );
        r.register(
            "consensus_guard_refusals",
            "Votes the signing guard refused against a record this process made, or could not record",
            m.guard_refusals.clone(),
        );
        r.register(
            "consensus_guard_restart_refusals",
            "Votes the signing guard refused: a conflicting vote signed before this process started",
            m.guard_restart_refusals.clone(),
        );
        r.register(
            "consensus_remote_signer_errors",
            "Votes and proposals the remote signer failed or refused to sign",
            m.remote_signer_errors.clone(),
        );
        r.register(
            "consensus_equivocations",
            "Equivocations detected",
            m.equivocations.clone(),
        );
        r.register(
            "evidence_store_failures",
            "Equivocation evidence that could not be stored",
            m.evidence_store_failures.clone(),
        );
        r.register(
            "consensus_invalid_messages",
            "Messages that failed verification",
            m.invalid_messages.clone(),
        );
        r.register(
            "consensus_blocks_finalized",
            "Blocks finalized",
            m.blocks_finalized.clone(),
        );
        r.register(
            "consensus_txs_finalized",
            "Transactions finalized",
            m.txs_finalized.clone(),
        );
        r.register("consensus_view", "Current view", m.view.clone());
        r.register(
            "consensus_finalized_height",
            "Finalized height",
            m.finalized_height.clone(),
        );
        r.register(
            "mempool_size",
            "Pending transactions",
            m.mempool_size.clone(),
        );
        r.register(
            "mempool_expired",
            "Transactions dropped after waiting past mempool_tx_lifetime_secs for a block",
            m.mempool_expired.clone(),
        );
        r.register(
            "mempool_pushed_back",
            "Client transactions refused with 503 because the mempool was full",
            m.mempool_pushed_back.clone(),
        );
        r.register(
            "mempool_refused",
            "Transactions admission refused, by reason and source (client, peer)",
            m.mempool_refused.clone(),
        );
        r.register(
            "consensus_tx_gossip_dropped",
            "Admitted transactions not gossiped: the gossip batcher's queue was full",
            m.tx_gossip_dropped.clone(),
        );
        r.register(
            "consensus_finality_seconds",
            "Proposal timestamp to finalize quorum",
            m.finality_seconds.clone(),
        );
        r.register(
            "cert_quasar_finalized_height",
            "Highest height covered by a verified QuasarCert",
            m.quasar_finalized_height.clone(),
        );
        r.register(
            "cert_stored",
            "Verified QuasarCerts stored",
            m.quasar_certificates.clone(),
        );
        r.register(
            "cert_bundles_abandoned",
            "Bundles left at Nova finality (hybrid deadline passed, or dropped unfinished)",
            m.quasar_bundles_abandoned.clone(),
        );
        r.register(
            "cert_verify_seconds",
            "Whole QuasarCert verification time (legs in parallel)",
            m.quasar_cert_verify_seconds.clone(),
        );
        r.register(
            "cert_leg_verify_seconds",
            "QuasarCert leg verification time, by leg",
            m.quasar_leg_verify_seconds.clone(),
        );
        m
    }
}

/// Exports the BLS pubkey decompression cache's counters (`quasar_bls_pubkey_cache_hits_total`,
/// `…_misses_total`, `…_evictions_total`), read at each scrape.
#[derive(Debug)]
pub struct KeyCacheMetrics(pub Arc<PublicKeyCache>);

impl KeyCacheMetrics {
    /// Registers the cache's counters into `registry` under the `quasar` prefix.
    pub fn register(cache: Arc<PublicKeyCache>, registry: &mut Registry) {
        registry
            .sub_registry_with_prefix("quasar")
            .register_collector(Box::new(KeyCacheMetrics(cache)));
    }
}

impl Collector for KeyCacheMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let stats = self.0.stats();
        for (name, help, value) in [
            (
                "bls_pubkey_cache_hits",
                "BLS public key lookups served decoded from the cache",
                stats.hits,
            ),
            (
                "bls_pubkey_cache_misses",
                "BLS public key lookups that had to decompress and subgroup-check the key",
                stats.misses,
            ),
            (
                "bls_pubkey_cache_evictions",
                "Cached BLS public keys replaced by another key of the same bucket",
                stats.evictions,
            ),
        ] {
            let counter = ConstCounter::new(value);
            let metric = encoder.encode_descriptor(name, help, None, counter.metric_type())?;
            counter.encode(metric)?;
        }
        Ok(())
    }
}

/// Exports the arithmetic dispatcher's per-queue counters, read at each scrape, labelled by
/// ring class and operation (`class="corona", op="ntt"`): `quasar_arithmetic_batches_total`,
/// `…_requests_total`, `…_rows_total`, `…_padding_rows_total`, `…_fallbacks_total` (batches the
/// device failed, recomputed on the CPU), `…_queue_wait_seconds_total` and
/// `…_busy_seconds_total`; and `quasar_arithmetic_batch_capacity_rows`. Batch fill is
/// rows / (batches × capacity); mean queue wait is queue wait / requests.
#[derive(Debug)]
pub struct DispatcherMetrics(pub Arc<Dispatcher>);

impl DispatcherMetrics {
    /// Registers the dispatcher's counters into `registry` under the `quasar` prefix.
    pub fn register(dispatcher: Arc<Dispatcher>, registry: &mut Registry) {
        registry
            .sub_registry_with_prefix("quasar")
            .register_collector(Box::new(DispatcherMetrics(dispatcher)));
    }
}

/// A per-queue counter: its name, its help, and how to read it from a queue's stats.
type QueueCounter<V> = (&'static str, &'static str, fn(&QueueStats) -> V);

/// One counter per dispatcher queue, labelled by class and operation.
fn encode_per_queue<V: EncodeCounterValue + std::fmt::Debug>(
    encoder: &mut DescriptorEncoder,
    stats: &[(QueueKey, QueueStats)],
    name: &str,
    help: &str,
    value: fn(&QueueStats) -> V,
) -> Result<(), std::fmt::Error> {
    let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (key, s) in stats {
        let labels = QueueLabels {
            class: key.class.name(),
            op: key.op.name(),
        };
        ConstCounter::new(value(s)).encode(metric.encode_family(&labels)?)?;
    }
    Ok(())
}

/// The labels of one dispatcher queue.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    class: &'static str,
    op: &'static str,
}

impl Collector for DispatcherMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let stats = self.0.stats();
        let counts: [QueueCounter<u64>; 5] = [
            (
                "arithmetic_batches",
                "Batches sent to the arithmetic backend",
                |s| s.batches,
            ),
            (
                "arithmetic_requests",
                "Requests served by the dispatcher",
                |s| s.requests,
            ),
            ("arithmetic_rows", "Rows of those requests", |s| s.rows),
            (
                "arithmetic_padding_rows",
                "Zero rows added to reach the backend's row granularity",
                |s| s.padding_rows,
            ),
            (
                "arithmetic_fallbacks",
                "Batches the backend failed whole, recomputed by their callers on the CPU",
                |s| s.fallbacks,
            ),
        ];
        for (name, help, value) in counts {
            encode_per_queue(&mut encoder, &stats, name, help, value)?;
        }
        let seconds: [QueueCounter<f64>; 2] = [
            (
                "arithmetic_queue_wait_seconds",
                "Time requests waited for their batch to start, summed",
                |s| s.queue_wait.as_secs_f64(),
            ),
            (
                "arithmetic_busy_seconds",
                "Time spent computing batches (stacking, the backend, replies)",
                |s| s.busy.as_secs_f64(),
            ),
        ];
        for (name, help, value) in seconds {
            encode_per_queue(&mut encoder, &stats, name, help, value)?;
        }
        let capacity = ConstGauge::new(self.0.config().max_batch_rows as i64);
        let metric = encoder.encode_descriptor(
            "arithmetic_batch_capacity_rows",
            "Rows a dispatcher batch holds before it goes out",
            None,
            capacity.metric_type(),
        )?;
        capacity.encode(metric)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quasar_crypto::bls::SecretKey;

    #[test]
    fn the_dispatcher_counters_reach_the_exposition() {
        use quasar_crypto::accel::{BatchArithmetic, CpuBackend, NttClass};
        use quasar_gpu::DispatchConfig;
        let dispatcher = Arc::new(Dispatcher::new(
            Arc::new(CpuBackend),
            DispatchConfig {
                max_batch_rows: 4,
                deadline: std::time::Duration::from_micros(100),
            },
        ));
        let mut registry = Registry::default();
        DispatcherMetrics::register(dispatcher.clone(), &mut registry);
        // Three rows of Corona, one valid request: a batch of its own, wait measured.
        let mut rows = vec![1u64; 3 * NttClass::Corona.degree()];
        dispatcher.forward_ntt(NttClass::Corona, &mut rows).unwrap();
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        let labels = r#"{class="corona",op="ntt"}"#;
        for line in [
            format!("quasar_arithmetic_batches_total{labels} 1"),
            format!("quasar_arithmetic_requests_total{labels} 1"),
            format!("quasar_arithmetic_rows_total{labels} 3"),
            format!("quasar_arithmetic_padding_rows_total{labels} 0"),
            format!("quasar_arithmetic_fallbacks_total{labels} 0"),
            "quasar_arithmetic_batch_capacity_rows 4".to_string(),
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line} missing in:\n{text}"
            );
        }
        assert!(text
            .lines()
            .any(|l| l.starts_with(&format!("quasar_arithmetic_busy_seconds_total{labels} "))));
    }

    #[test]
    fn the_key_cache_counters_reach_the_exposition() {
        let cache = Arc::new(PublicKeyCache::new());
        let mut registry = Registry::default();
        KeyCacheMetrics::register(cache.clone(), &mut registry);
        let key = SecretKey::from_seed(&[7; 32]).public_key().to_bytes();
        cache.get_or_decode(&key).unwrap();
        cache.get_or_decode(&key).unwrap();
        cache.get_or_decode(&key).unwrap();
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for line in [
            "quasar_bls_pubkey_cache_hits_total 2",
            "quasar_bls_pubkey_cache_misses_total 1",
            "quasar_bls_pubkey_cache_evictions_total 0",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line} missing in:\n{text}"
            );
        }
    }
}
