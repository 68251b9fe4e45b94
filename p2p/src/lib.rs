//! Validator-to-validator transport over QUIC (docs/architecture.md §5).
//!
//! # What this implements
//!
//! Opaque messages (ZAP buffers; decoding is the runtime's job) between the validators of a
//! pinned set that may change while the node runs ([`Network::set_peers`]), over QUIC (RFC 9000,
//! quinn) secured by TLS 1.3 (RFC 9001, RFC 8446) with ALPN `zap/3` (version 3: two gossip
//! streams per connection, each opened by a tag byte; block headers carry the state root):
//!
//! - **Identity** ([`tls`]): every validator has a self-signed Ed25519 certificate pinned by its
//!   DER bytes in the genesis file (or in its on-chain registration, for a validator that joined
//!   later). TLS is mutual: the server requires a client certificate from the pinned set as it
//!   is at the handshake, the client requires exactly the certificate pinned for the validator
//!   it dialed, and both check the handshake signature. After the handshake the peer's
//!   certificate maps to its validator index.
//! - **Gossip**: for each peer, one outbound task dials it (retrying with jittered backoff
//!   50 ms → 2 s until shutdown; a dial succeeds only once the server confirmed the handshake,
//!   RFC 9001 §4.1.2, so a peer that refuses our certificate is not retried every 50 ms), opens
//!   two long-lived unidirectional streams, one per [`Traffic`] path (a tag byte names it), and
//!   writes framed messages from two bounded queues, consensus first whenever both hold
//!   messages, the consensus stream at a higher QUIC send priority. [`Network::send`] and
//!   [`Network::broadcast_transactions`] never block: on a full queue the message is dropped
//!   and counted. Messages queued while the peer is unreachable are dropped and counted, because
//!   consensus retransmits what matters. When a peer connects to us anew while our outbound
//!   connection to it is at least 2 s old, that connection is taken as stale (the peer was
//!   killed and restarted) and redialed at once, keeping the queue, instead of waiting out the
//!   5 s idle timeout (see `network`, "Redial when a peer reconnects").
//! - **Requests**: [`Network::request`] opens one bidirectional stream per request on the
//!   outbound connection, writes one frame, finishes, and reads one frame back. The serving side
//!   hands the request to the runtime with a oneshot sender ([`Inbound::Request`]).
//! - **Inbound**: every accepted connection is identified, then each unidirectional stream is read
//!   as its tag byte and a sequence of frames into that path's bounded channel ([`Inbox`]). A
//!   full consensus channel applies backpressure to the peer's consensus stream through QUIC
//!   flow control; a full transaction channel drops transactions (counted), so a flood of
//!   transactions never holds back consensus messages: transaction traffic can fill only its
//!   own queues.
//!
//! Framing is `u32 LE length ‖ message`, at most 16 MiB (`quasar_wire::frame`).
//!
//! # Safety argument (docs/architecture.md §10)
//!
//! - A peer cannot make the node allocate unboundedly: a prefix above 16 MiB is rejected before
//!   any body is read; the body buffer grows only as bytes arrive (QUIC flow control bounds them);
//!   at most [`tls::MAX_CONCURRENT_GOSSIP_STREAMS`] gossip streams and
//!   [`tls::MAX_CONCURRENT_REQUESTS`] request streams are open per connection; every queue is
//!   bounded.
//! - A malformed frame ends only the stream it arrived on (counted in
//!   [`P2pMetrics::malformed_frames`]); other streams and peers are unaffected. Nothing a peer
//!   sends reaches a panic path.
//! - An unpinned certificate or a wrong ALPN fails the handshake (counted in
//!   [`P2pMetrics::handshake_rejected`]); no stream of such a connection is ever read. The WARN
//!   line for it is rate-limited to one per remote IP per minute, so a retrying or hostile peer
//!   cannot flood the log.
//! - Transient I/O errors (a failed dial or stream, a socket error that kills quinn's endpoint
//!   driver, file-descriptor exhaustion) never stop the transport: connections are redialed and
//!   a dead endpoint is rebound on the same address. Only [`Network::shutdown`] stops it on
//!   purpose; any other stop is logged at ERROR and reported by [`Network::stopped`] /
//!   [`Network::is_running`] so the owner can exit and be restarted.
//!
//! # Deviations
//!
//! - Certificates are compared by bytes; validity periods are not checked (the pinned set is the
//!   trust anchor; see [`tls`]).
//! - Each pair of validators holds two connections (each side dials the other): gossip and
//!   requests go out on one's own outbound connection, so reconnection is driven by the sender
//!   and no tie-breaking between simultaneous dials is needed.

mod address;
mod frame_io;
mod log_limit;
mod metrics;
mod network;
pub mod tls;

pub use address::{
    PeerAddress, PeerAddressError, ResolveError, MAX_HOST_NAME_LEN, RESOLVE_TIMEOUT,
};
pub use metrics::P2pMetrics;
pub use network::{Inbound, Inbox, Network, NetworkConfig, PeerInfo, StopCause, Traffic};
pub use tls::{client_config, TlsIdentity, ALPN};

use quasar_wire::WireError;

/// Errors of the transport. Configuration errors are fatal at startup; request errors concern
/// one request and one peer (retry later or ask another validator); nothing a peer sends turns
/// into an error that stops the node.
#[derive(Debug, thiserror::Error)]
pub enum P2pError {
    /// Building a TLS config failed, typically a key that does not parse or match its
    /// certificate; fatal at startup.
    #[error("tls configuration: {0}")]
    Tls(#[from] rustls::Error),
    /// Building the QUIC config failed; fatal at startup.
    #[error("quic configuration: {0}")]
    QuicConfig(String),
    /// The network config or a new peer set is inconsistent (duplicate peer index or
    /// certificate, own index or certificate among peers, zero queue capacity); fatal at startup,
    /// and from [`Network::set_peers`] the set was refused and nothing changed.
    #[error("invalid network config: {0}")]
    Config(String),
    /// Binding the UDP socket failed; fatal at startup.
    #[error("bind {addr}: {source}")]
    Bind {
        /// The listen address.
        addr: std::net::SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// The validator index is not among the current peers; the message was not sent.
    #[error("unknown peer {0}")]
    UnknownPeer(u32),
    /// The request did not complete within its timeout (peer unreachable or slow).
    #[error("request to peer {peer} timed out")]
    Timeout {
        /// The peer's validator index.
        peer: u32,
    },
    /// The message is longer than the 16 MiB frame limit; nothing was sent.
    #[error(transparent)]
    Frame(#[from] WireError),
    /// The connection to the peer failed while the request was in flight.
    #[error("connection: {0}")]
    Connection(#[from] quinn::ConnectionError),
    /// Writing the request failed.
    #[error("write: {0}")]
    Write(#[from] quinn::WriteError),
    /// The stream was already closed when finishing the request.
    #[error("stream closed: {0}")]
    ClosedStream(#[from] quinn::ClosedStream),
    /// The reply could not be read: the peer sent a malformed frame or the stream failed.
    #[error("reply from peer {peer}: {reason}")]
    BadReply {
        /// The peer's validator index.
        peer: u32,
        /// What went wrong.
        reason: String,
    },
    /// The peer closed the request stream without replying (the runtime dropped the request).
    #[error("peer {0} closed the request without a reply")]
    NoReply(u32),
    /// The network is shutting down.
    #[error("network shut down")]
    Shutdown,
}
