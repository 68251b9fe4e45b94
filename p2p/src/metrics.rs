//! Transport metrics, exported through `prometheus-client`.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// Counters and gauges of one [`super::Network`]. Cloning shares the underlying values, so the
/// runtime can keep a handle and count ZAP decode failures with [`P2pMetrics::record_malformed`].
#[derive(Clone, Debug, Default)]
pub struct P2pMetrics {
    messages_sent: Counter,
    bytes_sent: Counter,
    messages_received: Counter,
    bytes_received: Counter,
    malformed_frames: Counter,
    handshake_rejected: Counter,
    outbound_dropped: Counter,
    inbound_dropped: Counter,
    outbound_connections: Counter,
    redials: Counter,
    connected_peers: Gauge,
}

impl P2pMetrics {
    /// Fresh metrics, all zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers every metric under the `p2p_` prefix (counters get the `_total` suffix).
    pub fn register(&self, registry: &mut Registry) {
        let registry = registry.sub_registry_with_prefix("p2p");
        registry.register(
            "messages_sent",
            "Messages written to peers (gossip frames and requests)",
            self.messages_sent.clone(),
        );
        registry.register(
            "bytes_sent",
            "Message bytes written to peers, without frame headers",
            self.bytes_sent.clone(),
        );
        registry.register(
            "messages_received",
            "Complete messages read from peers (gossip frames and requests)",
            self.messages_received.clone(),
        );
        registry.register(
            "bytes_received",
            "Message bytes read from peers, without frame headers",
            self.bytes_received.clone(),
        );
        registry.register(
            "malformed_frames",
            "Oversized length prefixes, truncated frames, reset streams and undecodable messages",
            self.malformed_frames.clone(),
        );
        registry.register(
            "handshake_rejected",
            "Connections refused: unpinned or unknown certificate, or wrong ALPN",
            self.handshake_rejected.clone(),
        );
        registry.register(
            "outbound_dropped",
            "Outbound messages dropped: queue full, peer disconnected, unknown peer or oversized",
            self.outbound_dropped.clone(),
        );
        registry.register(
            "inbound_dropped",
            "Inbound transaction messages dropped because the runtime's transaction channel was full",
            self.inbound_dropped.clone(),
        );
        registry.register(
            "outbound_connections",
            "Outbound connections established (confirmed by the peer), first dials and redials",
            self.outbound_connections.clone(),
        );
        registry.register(
            "redials",
            "Stale outbound connections replaced at once because the peer connected to us anew",
            self.redials.clone(),
        );
        registry.register(
            "connected_peers",
            "Peers with an established outbound connection",
            self.connected_peers.clone(),
        );
    }

    /// Counts one malformed message. The runtime calls this when a delivered message fails ZAP
    /// decoding; the transport calls it for framing violations.
    pub fn record_malformed(&self) {
        self.malformed_frames.inc();
    }

    /// Messages written to peers so far.
    pub fn messages_sent(&self) -> u64 {
        self.messages_sent.get()
    }

    /// Message bytes written to peers so far (frame headers excluded).
    pub fn bytes_sent(&self) -> u64 {
        self.bytes_sent.get()
    }

    /// Complete messages received so far.
    pub fn messages_received(&self) -> u64 {
        self.messages_received.get()
    }

    /// Message bytes received so far (frame headers excluded).
    pub fn bytes_received(&self) -> u64 {
        self.bytes_received.get()
    }

    /// Malformed frames and messages counted so far.
    pub fn malformed_frames(&self) -> u64 {
        self.malformed_frames.get()
    }

    /// Connections refused for identity or ALPN so far.
    pub fn handshake_rejected(&self) -> u64 {
        self.handshake_rejected.get()
    }

    /// Outbound messages dropped so far.
    pub fn outbound_dropped(&self) -> u64 {
        self.outbound_dropped.get()
    }

    /// Outbound connections established so far (confirmed by the peer), redials included.
    pub fn outbound_connections(&self) -> u64 {
        self.outbound_connections.get()
    }

    /// Outbound connections replaced (or pending dials restarted) so far because the peer
    /// connected to us anew while our connection or dial was older than the redial threshold
    /// (the peer restarted).
    pub fn redials(&self) -> u64 {
        self.redials.get()
    }

    /// Inbound transaction messages dropped so far because the transaction channel was full.
    pub fn inbound_dropped(&self) -> u64 {
        self.inbound_dropped.get()
    }

    /// Peers with an established outbound connection now.
    pub fn connected_peers(&self) -> i64 {
        self.connected_peers.get()
    }

    pub(crate) fn sent(&self, bytes: usize) {
        self.messages_sent.inc();
        self.bytes_sent.inc_by(bytes as u64);
    }

    pub(crate) fn received(&self, bytes: usize) {
        self.messages_received.inc();
        self.bytes_received.inc_by(bytes as u64);
    }

    pub(crate) fn rejected_handshake(&self) {
        self.handshake_rejected.inc();
    }

    pub(crate) fn dropped(&self, count: u64) {
        self.outbound_dropped.inc_by(count);
    }

    pub(crate) fn dropped_inbound(&self) {
        self.inbound_dropped.inc();
    }

    pub(crate) fn redialed(&self) {
        self.redials.inc();
    }

    pub(crate) fn peer_connected(&self) {
        self.outbound_connections.inc();
        self.connected_peers.inc();
    }

    pub(crate) fn peer_disconnected(&self) {
        self.connected_peers.dec();
    }
}
