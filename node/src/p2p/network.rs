//! The [`Network`] handle and its tasks: one accept loop, one outbound task per peer, one reader
//! task per inbound stream.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use quasar_wire::frame::frame_header;
use quinn::{Connection, ConnectionError, Endpoint, RecvStream, SendStream, VarInt};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tracing::{debug, info, warn};

use super::frame_io::{read_frame, write_frame, FrameReadError};
use super::tls::{self, TlsIdentity, SERVER_NAME};
use super::{P2pError, P2pMetrics};

/// First reconnect delay after a failed dial or a lost connection.
const MIN_BACKOFF: Duration = Duration::from_millis(50);
/// Largest reconnect delay.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// Most simultaneous inbound connections accepted from one validator (a restarted peer's old
/// connection may linger until the idle timeout; more than this is abuse).
const MAX_INBOUND_CONNECTIONS_PER_PEER: usize = 4;

/// Application close/reset codes we send.
const CODE_SHUTDOWN: u32 = 0;
const CODE_REJECTED: u32 = 1;
const CODE_MALFORMED: u32 = 2;
const CODE_NO_REPLY: u32 = 3;

/// One validator we talk to: its index, pinned certificate and dial address.
#[derive(Clone, Debug)]
pub struct PeerInfo {
    /// Validator index in the epoch's validator set.
    pub index: u32,
    /// The pinned TLS certificate (DER), as in the genesis file.
    pub cert_der: Vec<u8>,
    /// Where the validator listens (UDP).
    pub address: SocketAddr,
}

/// How to start a [`Network`].
#[derive(Clone, Debug)]
pub struct NetworkConfig {
    /// UDP address to listen on (port 0 picks a free port; see [`Network::local_addr`]).
    pub listen: SocketAddr,
    /// This validator's TLS identity.
    pub identity: TlsIdentity,
    /// This validator's index.
    pub my_index: u32,
    /// Every other validator (not this one); indices and certificates must be distinct.
    pub peers: Vec<PeerInfo>,
    /// Outbound queue capacity per peer, in messages (e.g. 4096); must be > 0.
    pub outbound_queue: usize,
    /// Inbound channel capacity, in messages; must be > 0.
    pub inbound_queue: usize,
}

impl NetworkConfig {
    /// Default per-peer outbound queue capacity, in messages.
    pub const DEFAULT_OUTBOUND_QUEUE: usize = 4096;
    /// Default inbound channel capacity, in messages.
    pub const DEFAULT_INBOUND_QUEUE: usize = 4096;

    /// A config with the default queue capacities.
    pub fn new(
        listen: SocketAddr,
        identity: TlsIdentity,
        my_index: u32,
        peers: Vec<PeerInfo>,
    ) -> Self {
        NetworkConfig {
            listen,
            identity,
            my_index,
            peers,
            outbound_queue: Self::DEFAULT_OUTBOUND_QUEUE,
            inbound_queue: Self::DEFAULT_INBOUND_QUEUE,
        }
    }
}

/// A message delivered to the runtime. The bytes are undecoded; the runtime decodes them and
/// calls [`P2pMetrics::record_malformed`] when that fails.
#[derive(Debug)]
pub enum Inbound {
    /// A message from a long-lived unidirectional gossip stream.
    Gossip {
        /// Sender's validator index (authenticated by its pinned certificate).
        from: u32,
        /// The message bytes (at most 16 MiB).
        message: Vec<u8>,
    },
    /// One request on its own bidirectional stream; send exactly one reply, or drop `reply` to
    /// close the stream without one.
    Request {
        /// Requester's validator index (authenticated by its pinned certificate).
        from: u32,
        /// The request bytes (at most 16 MiB).
        message: Vec<u8>,
        /// Where the reply goes (at most 16 MiB; a longer reply resets the stream).
        reply: oneshot::Sender<Vec<u8>>,
    },
}

/// Handle to a running transport. Clones share it; dropping the last clone (or
/// [`Network::shutdown`]) stops every task and closes the endpoint.
#[derive(Clone, Debug)]
pub struct Network {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    endpoint: Endpoint,
    local_addr: SocketAddr,
    peers: HashMap<u32, PeerHandle>,
    metrics: P2pMetrics,
    shutdown: watch::Sender<bool>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

#[derive(Debug)]
struct PeerHandle {
    queue: mpsc::Sender<Arc<Vec<u8>>>,
    connection: watch::Receiver<Option<Connection>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shutdown.send_replace(true);
        self.endpoint
            .close(VarInt::from_u32(CODE_SHUTDOWN), b"shutdown");
        let tasks = match self.tasks.get_mut() {
            Ok(tasks) => std::mem::take(tasks),
            Err(poisoned) => std::mem::take(poisoned.into_inner()),
        };
        for task in tasks {
            task.abort();
        }
    }
}

/// State shared by the accept loop and the inbound stream tasks.
#[derive(Clone)]
struct InboundCtx {
    pinned: Arc<HashMap<Vec<u8>, u32>>,
    /// Open inbound connections per validator index.
    open: Arc<HashMap<u32, AtomicUsize>>,
    tx: mpsc::Sender<Inbound>,
    metrics: P2pMetrics,
    shutdown: watch::Receiver<bool>,
}

impl Network {
    /// Binds `config.listen`, starts accepting pinned peers and dialing every peer, and returns
    /// the handle plus the channel of inbound messages (capacity `config.inbound_queue`).
    ///
    /// Must run inside a tokio runtime. Errors: [`P2pError::Config`] for an inconsistent config,
    /// [`P2pError::Tls`] / [`P2pError::QuicConfig`] for a bad identity, [`P2pError::Bind`] when
    /// the address is taken.
    pub async fn start(
        config: NetworkConfig,
        metrics: P2pMetrics,
    ) -> Result<(Network, mpsc::Receiver<Inbound>), P2pError> {
        validate(&config)?;
        let pinned: HashMap<Vec<u8>, u32> = config
            .peers
            .iter()
            .map(|p| (p.cert_der.clone(), p.index))
            .collect();
        let server = tls::server_config(&config.identity, pinned.keys().cloned())?;
        let endpoint =
            Endpoint::server(server, config.listen).map_err(|source| P2pError::Bind {
                addr: config.listen,
                source,
            })?;
        let local_addr = endpoint.local_addr().map_err(|source| P2pError::Bind {
            addr: config.listen,
            source,
        })?;
        let (shutdown, shutdown_rx) = watch::channel(false);
        let (inbound_tx, inbound_rx) = mpsc::channel(config.inbound_queue);

        let mut tasks = Vec::with_capacity(config.peers.len().saturating_add(1));
        let mut peers = HashMap::with_capacity(config.peers.len());
        for peer in &config.peers {
            let client = tls::client_config(&config.identity, &peer.cert_der)?;
            let (queue_tx, queue_rx) = mpsc::channel(config.outbound_queue);
            let (conn_tx, conn_rx) = watch::channel(None);
            let outbound = Outbound {
                endpoint: endpoint.clone(),
                peer: peer.clone(),
                client,
                queue: queue_rx,
                connection: conn_tx,
                metrics: metrics.clone(),
                shutdown: shutdown_rx.clone(),
            };
            tasks.push(tokio::spawn(outbound.run()));
            peers.insert(
                peer.index,
                PeerHandle {
                    queue: queue_tx,
                    connection: conn_rx,
                },
            );
        }
        let open = config
            .peers
            .iter()
            .map(|p| (p.index, AtomicUsize::new(0)))
            .collect();
        let ctx = InboundCtx {
            pinned: Arc::new(pinned),
            open: Arc::new(open),
            tx: inbound_tx,
            metrics: metrics.clone(),
            shutdown: shutdown_rx,
        };
        tasks.push(tokio::spawn(accept_loop(endpoint.clone(), ctx)));
        info!(
            index = config.my_index,
            %local_addr,
            peers = config.peers.len(),
            "p2p network started"
        );
        let network = Network {
            inner: Arc::new(Inner {
                endpoint,
                local_addr,
                peers,
                metrics,
                shutdown,
                tasks: Mutex::new(tasks),
            }),
        };
        Ok((network, inbound_rx))
    }

    /// The bound UDP address (the real port when `listen` had port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.inner.local_addr
    }

    /// The metrics handle this network counts into.
    pub fn metrics(&self) -> &P2pMetrics {
        &self.inner.metrics
    }

    /// Queues `message` for peer `to` on its gossip stream. Never blocks: when the queue is
    /// full, the peer is unknown or the message exceeds 16 MiB, the message is dropped and
    /// counted in `outbound_dropped`.
    pub fn send(&self, to: u32, message: Arc<Vec<u8>>) {
        if frame_header(message.len()).is_err() {
            warn!(peer = to, len = message.len(), "dropping oversized message");
            self.inner.metrics.dropped(1);
            return;
        }
        let Some(peer) = self.inner.peers.get(&to) else {
            debug!(peer = to, "dropping message to unknown peer");
            self.inner.metrics.dropped(1);
            return;
        };
        if let Err(e) = peer.queue.try_send(message) {
            debug!(peer = to, error = %e, "outbound queue full or closed, dropping message");
            self.inner.metrics.dropped(1);
        }
    }

    /// Queues `message` for every peer (see [`Network::send`]); the bytes are shared, not copied.
    pub fn broadcast(&self, message: Arc<Vec<u8>>) {
        for index in self.inner.peers.keys() {
            self.send(*index, Arc::clone(&message));
        }
    }

    /// Sends one request to `to` on a fresh bidirectional stream and returns its one-frame
    /// reply. Waits for the outbound connection if it is not up yet; the whole exchange is
    /// bounded by `timeout`.
    ///
    /// Errors: [`P2pError::UnknownPeer`], [`P2pError::Frame`] (request over 16 MiB),
    /// [`P2pError::Timeout`], [`P2pError::NoReply`] (the peer declined), [`P2pError::BadReply`]
    /// (malformed reply, counted in `malformed_frames`), connection/stream errors, and
    /// [`P2pError::Shutdown`].
    pub async fn request(
        &self,
        to: u32,
        message: Vec<u8>,
        timeout: Duration,
    ) -> Result<Vec<u8>, P2pError> {
        frame_header(message.len())?;
        let peer = self.inner.peers.get(&to).ok_or(P2pError::UnknownPeer(to))?;
        let mut connection = peer.connection.clone();
        let metrics = self.inner.metrics.clone();
        let exchange = async move {
            let conn = connection
                .wait_for(Option::is_some)
                .await
                .map_err(|_| P2pError::Shutdown)?
                .clone()
                .ok_or(P2pError::Shutdown)?;
            let (mut send, mut recv) = conn.open_bi().await?;
            write_frame(&mut send, &message)
                .await
                .map_err(|e| match e {
                    super::frame_io::FrameWriteError::TooLarge(e) => P2pError::Frame(e),
                    super::frame_io::FrameWriteError::Write(e) => P2pError::Write(e),
                })?;
            send.finish()?;
            metrics.sent(message.len());
            match read_frame(&mut recv).await {
                Ok(Some(reply)) => {
                    metrics.received(reply.len());
                    Ok(reply)
                }
                Ok(None) => Err(P2pError::NoReply(to)),
                Err(FrameReadError::Stream {
                    source: quinn::ReadError::Reset(_),
                    mid_frame: false,
                }) => Err(P2pError::NoReply(to)),
                Err(e) => {
                    if e.is_malformed() {
                        metrics.record_malformed();
                    }
                    Err(P2pError::BadReply {
                        peer: to,
                        reason: e.to_string(),
                    })
                }
            }
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| P2pError::Timeout { peer: to })?
    }

    /// Number of peers with an established outbound connection now.
    pub fn connected_peers(&self) -> usize {
        self.inner
            .peers
            .values()
            .filter(|p| p.connection.borrow().is_some())
            .count()
    }

    /// Stops every task, closes all connections (peers see an immediate close) and waits, at
    /// most about a second, for the endpoint to drain. The socket is released once the last
    /// clone of this handle is dropped.
    pub async fn shutdown(&self) {
        self.inner.shutdown.send_replace(true);
        self.inner
            .endpoint
            .close(VarInt::from_u32(CODE_SHUTDOWN), b"shutdown");
        let tasks = match self.inner.tasks.lock() {
            Ok(mut tasks) => std::mem::take(&mut *tasks),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        };
        for task in tasks {
            if let Err(e) = task.await {
                debug!(error = %e, "p2p task ended abnormally");
            }
        }
        let _ = tokio::time::timeout(Duration::from_secs(1), self.inner.endpoint.wait_idle()).await;
        info!(local_addr = %self.inner.local_addr, "p2p network shut down");
    }
}

fn validate(config: &NetworkConfig) -> Result<(), P2pError> {
    if config.outbound_queue == 0 || config.inbound_queue == 0 {
        return Err(P2pError::Config("queue capacities must be positive".into()));
    }
    let mut indices = std::collections::HashSet::new();
    let mut certs = std::collections::HashSet::new();
    certs.insert(config.identity.cert_der.as_slice());
    for peer in &config.peers {
        if peer.index == config.my_index {
            return Err(P2pError::Config(format!(
                "peer list contains this validator's index {}",
                peer.index
            )));
        }
        if !indices.insert(peer.index) {
            return Err(P2pError::Config(format!(
                "duplicate peer index {}",
                peer.index
            )));
        }
        if !certs.insert(peer.cert_der.as_slice()) {
            return Err(P2pError::Config(format!(
                "peer {} reuses a certificate pinned for another validator",
                peer.index
            )));
        }
    }
    Ok(())
}

/// Whether a handshake failure was our TLS stack refusing the peer (QUIC `CRYPTO_ERROR`,
/// 0x100–0x1ff, RFC 9001 §4.8), as opposed to a timeout or the peer closing.
fn is_local_tls_rejection(error: &ConnectionError) -> bool {
    match error {
        ConnectionError::TransportError(e) => (0x100..0x200).contains(&u64::from(e.code)),
        _ => false,
    }
}

/// Why an outbound connection's pump stopped.
enum PumpEnd {
    Shutdown,
    QueueClosed,
    Failed(String),
}

/// The task that owns the outbound link to one peer.
struct Outbound {
    endpoint: Endpoint,
    peer: PeerInfo,
    client: quinn::ClientConfig,
    queue: mpsc::Receiver<Arc<Vec<u8>>>,
    connection: watch::Sender<Option<Connection>>,
    metrics: P2pMetrics,
    shutdown: watch::Receiver<bool>,
}

impl Outbound {
    async fn run(mut self) {
        let mut backoff = MIN_BACKOFF;
        let mut shutdown = self.shutdown.clone();
        loop {
            if *shutdown.borrow() {
                return;
            }
            let dialed = tokio::select! {
                _ = shutdown.changed() => return,
                dialed = self.dial() => dialed,
            };
            match dialed {
                Ok(conn) => {
                    backoff = MIN_BACKOFF;
                    info!(peer = self.peer.index, addr = %self.peer.address, "outbound connection up");
                    let end = {
                        let _up =
                            ConnectedGuard::new(&self.connection, &self.metrics, conn.clone());
                        pump(&conn, &mut self.queue, &self.metrics, &mut self.shutdown).await
                    };
                    match end {
                        PumpEnd::Shutdown | PumpEnd::QueueClosed => {
                            conn.close(VarInt::from_u32(CODE_SHUTDOWN), b"shutdown");
                            return;
                        }
                        PumpEnd::Failed(reason) => {
                            info!(peer = self.peer.index, %reason, "outbound connection lost");
                        }
                    }
                }
                Err(reason) => {
                    debug!(peer = self.peer.index, addr = %self.peer.address, %reason, "dial failed");
                }
            }
            self.drop_stale();
            tokio::select! {
                _ = shutdown.changed() => return,
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = backoff.saturating_mul(2).min(MAX_BACKOFF);
        }
    }

    async fn dial(&self) -> Result<Connection, String> {
        let connecting = self
            .endpoint
            .connect_with(self.client.clone(), self.peer.address, SERVER_NAME)
            .map_err(|e| e.to_string())?;
        let conn = match connecting.await {
            Ok(conn) => conn,
            Err(e) => {
                if is_local_tls_rejection(&e) {
                    warn!(peer = self.peer.index, addr = %self.peer.address, error = %e,
                        "server at the peer's address is not the pinned validator");
                    self.metrics.rejected_handshake();
                }
                return Err(e.to_string());
            }
        };
        // Defence in depth: the verifier already enforced both.
        let pinned = tls::peer_certificate(&conn).is_some_and(|c| c == self.peer.cert_der);
        if !pinned || !tls::negotiated_alpn(&conn) {
            self.metrics.rejected_handshake();
            conn.close(VarInt::from_u32(CODE_REJECTED), b"identity");
            return Err("peer identity or ALPN mismatch".into());
        }
        Ok(conn)
    }

    /// Drops (and counts) what was queued while the peer was unreachable.
    fn drop_stale(&mut self) {
        let mut dropped = 0u64;
        while self.queue.try_recv().is_ok() {
            dropped = dropped.saturating_add(1);
        }
        if dropped > 0 {
            debug!(
                peer = self.peer.index,
                dropped, "dropped messages queued while disconnected"
            );
            self.metrics.dropped(dropped);
        }
    }
}

/// Writes queued messages onto one gossip stream until the connection fails or we stop.
async fn pump(
    conn: &Connection,
    queue: &mut mpsc::Receiver<Arc<Vec<u8>>>,
    metrics: &P2pMetrics,
    shutdown: &mut watch::Receiver<bool>,
) -> PumpEnd {
    let mut stream = tokio::select! {
        _ = shutdown.changed() => return PumpEnd::Shutdown,
        opened = conn.open_uni() => match opened {
            Ok(stream) => stream,
            Err(e) => return PumpEnd::Failed(e.to_string()),
        },
    };
    loop {
        tokio::select! {
            _ = shutdown.changed() => return PumpEnd::Shutdown,
            e = conn.closed() => return PumpEnd::Failed(e.to_string()),
            next = queue.recv() => {
                let Some(message) = next else { return PumpEnd::QueueClosed };
                if let Err(e) = write_frame(&mut stream, &message).await {
                    metrics.dropped(1);
                    return PumpEnd::Failed(e.to_string());
                }
                metrics.sent(message.len());
            }
        }
    }
}

async fn accept_loop(endpoint: Endpoint, mut ctx: InboundCtx) {
    loop {
        let incoming = tokio::select! {
            _ = ctx.shutdown.changed() => return,
            incoming = endpoint.accept() => match incoming {
                Some(incoming) => incoming,
                None => return,
            },
        };
        tokio::spawn(serve_connection(incoming, ctx.clone()));
    }
}

async fn serve_connection(incoming: quinn::Incoming, mut ctx: InboundCtx) {
    let remote = incoming.remote_address();
    let conn = match incoming.await {
        Ok(conn) => conn,
        Err(e) => {
            if is_local_tls_rejection(&e) {
                warn!(%remote, error = %e, "rejected handshake (unpinned identity or ALPN)");
                ctx.metrics.rejected_handshake();
            } else {
                debug!(%remote, error = %e, "inbound handshake failed");
            }
            return;
        }
    };
    let from = match tls::peer_certificate(&conn).and_then(|c| ctx.pinned.get(&c).copied()) {
        Some(index) if tls::negotiated_alpn(&conn) => index,
        _ => {
            warn!(%remote, "rejected connection without a pinned identity or ALPN");
            ctx.metrics.rejected_handshake();
            conn.close(VarInt::from_u32(CODE_REJECTED), b"identity");
            return;
        }
    };
    let Some(_slot) = ConnectionSlot::acquire(&ctx.open, from) else {
        warn!(peer = from, %remote, "too many inbound connections from one validator");
        conn.close(VarInt::from_u32(CODE_REJECTED), b"too many connections");
        return;
    };
    debug!(peer = from, %remote, "inbound connection up");
    loop {
        tokio::select! {
            _ = ctx.shutdown.changed() => return,
            uni = conn.accept_uni() => match uni {
                Ok(recv) => { tokio::spawn(read_gossip(recv, from, ctx.clone())); }
                Err(e) => { debug!(peer = from, error = %e, "inbound connection closed"); return; }
            },
            bi = conn.accept_bi() => match bi {
                Ok((send, recv)) => { tokio::spawn(serve_request(send, recv, from, ctx.clone())); }
                Err(e) => { debug!(peer = from, error = %e, "inbound connection closed"); return; }
            },
        }
    }
}

/// One of a validator's [`MAX_INBOUND_CONNECTIONS_PER_PEER`] inbound connection slots, released
/// on drop.
struct ConnectionSlot {
    open: Arc<HashMap<u32, AtomicUsize>>,
    peer: u32,
}

impl ConnectionSlot {
    fn acquire(open: &Arc<HashMap<u32, AtomicUsize>>, peer: u32) -> Option<ConnectionSlot> {
        let counter = open.get(&peer)?;
        counter
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_INBOUND_CONNECTIONS_PER_PEER).then_some(n.saturating_add(1))
            })
            .ok()?;
        Some(ConnectionSlot {
            open: Arc::clone(open),
            peer,
        })
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        if let Some(counter) = self.open.get(&self.peer) {
            let _ = counter.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                Some(n.saturating_sub(1))
            });
        }
    }
}

/// Keeps the `connected_peers` gauge and the request handle in step with one outbound
/// connection, even if the task is aborted.
struct ConnectedGuard<'a> {
    connection: &'a watch::Sender<Option<Connection>>,
    metrics: &'a P2pMetrics,
}

impl<'a> ConnectedGuard<'a> {
    fn new(
        connection: &'a watch::Sender<Option<Connection>>,
        metrics: &'a P2pMetrics,
        conn: Connection,
    ) -> Self {
        connection.send_replace(Some(conn));
        metrics.peer_connected();
        ConnectedGuard {
            connection,
            metrics,
        }
    }
}

impl Drop for ConnectedGuard<'_> {
    fn drop(&mut self) {
        self.connection.send_replace(None);
        self.metrics.peer_disconnected();
    }
}

/// Reads one gossip stream frame by frame until it ends, fails or is malformed.
async fn read_gossip(mut recv: RecvStream, from: u32, mut ctx: InboundCtx) {
    loop {
        let frame = tokio::select! {
            _ = ctx.shutdown.changed() => return,
            frame = read_frame(&mut recv) => frame,
        };
        let message = match frame {
            Ok(Some(message)) => message,
            Ok(None) => return,
            Err(e) => {
                note_read_error(&ctx.metrics, from, &e);
                let _ = recv.stop(VarInt::from_u32(CODE_MALFORMED));
                return;
            }
        };
        ctx.metrics.received(message.len());
        let delivered = tokio::select! {
            _ = ctx.shutdown.changed() => return,
            sent = ctx.tx.send(Inbound::Gossip { from, message }) => sent,
        };
        if delivered.is_err() {
            return; // the runtime is gone
        }
    }
}

/// Serves one request stream: one frame in, one frame (or a reset) out.
async fn serve_request(mut send: SendStream, mut recv: RecvStream, from: u32, mut ctx: InboundCtx) {
    let message = match read_frame(&mut recv).await {
        Ok(Some(message)) => message,
        Ok(None) => {
            debug!(peer = from, "empty request stream");
            ctx.metrics.record_malformed();
            let _ = send.reset(VarInt::from_u32(CODE_MALFORMED));
            return;
        }
        Err(e) => {
            note_read_error(&ctx.metrics, from, &e);
            let _ = send.reset(VarInt::from_u32(CODE_MALFORMED));
            return;
        }
    };
    ctx.metrics.received(message.len());
    let (reply_tx, reply_rx) = oneshot::channel();
    let request = Inbound::Request {
        from,
        message,
        reply: reply_tx,
    };
    let delivered = tokio::select! {
        _ = ctx.shutdown.changed() => return,
        sent = ctx.tx.send(request) => sent,
    };
    if delivered.is_err() {
        let _ = send.reset(VarInt::from_u32(CODE_NO_REPLY));
        return;
    }
    let stopped = send.stopped();
    let reply = tokio::select! {
        _ = ctx.shutdown.changed() => return,
        _ = stopped => return, // the requester gave up
        reply = reply_rx => reply,
    };
    match reply {
        Ok(reply) => match write_frame(&mut send, &reply).await {
            Ok(()) => {
                ctx.metrics.sent(reply.len());
                let _ = send.finish();
            }
            Err(e) => {
                debug!(peer = from, error = %e, "reply not sent");
                let _ = send.reset(VarInt::from_u32(CODE_NO_REPLY));
            }
        },
        Err(_) => {
            let _ = send.reset(VarInt::from_u32(CODE_NO_REPLY));
        }
    }
}

fn note_read_error(metrics: &P2pMetrics, from: u32, error: &FrameReadError) {
    if error.is_malformed() {
        warn!(peer = from, %error, "malformed frame, dropping stream");
        metrics.record_malformed();
    } else {
        debug!(peer = from, %error, "stream ended");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(peers: Vec<PeerInfo>) -> NetworkConfig {
        let identity = TlsIdentity::generate("validator-0").expect("identity");
        NetworkConfig::new("127.0.0.1:0".parse().expect("addr"), identity, 0, peers)
    }

    fn peer(index: u32, cert_der: Vec<u8>) -> PeerInfo {
        PeerInfo {
            index,
            cert_der,
            address: "127.0.0.1:1".parse().expect("addr"),
        }
    }

    #[test]
    fn config_rejects_own_index_duplicates_and_empty_queues() {
        let other = TlsIdentity::generate("validator-1").expect("identity");
        let third = TlsIdentity::generate("validator-2").expect("identity");
        assert!(validate(&config(vec![peer(1, other.cert_der.clone())])).is_ok());
        assert!(validate(&config(vec![peer(0, other.cert_der.clone())])).is_err());
        assert!(validate(&config(vec![
            peer(1, other.cert_der.clone()),
            peer(1, third.cert_der.clone())
        ]))
        .is_err());
        assert!(validate(&config(vec![
            peer(1, other.cert_der.clone()),
            peer(2, other.cert_der.clone())
        ]))
        .is_err());
        let own = config(Vec::new());
        let mine = own.identity.cert_der.clone();
        let mut with_mine = own;
        with_mine.peers.push(peer(1, mine));
        assert!(validate(&with_mine).is_err());
        let mut empty = config(Vec::new());
        empty.outbound_queue = 0;
        assert!(validate(&empty).is_err());
    }

    #[test]
    fn a_mismatched_key_fails_at_config_time() {
        let a = TlsIdentity::generate("validator-0").expect("identity");
        let b = TlsIdentity::generate("validator-1").expect("identity");
        let mixed = TlsIdentity::from_der(a.cert_der.clone(), b.key_der().to_vec());
        assert!(tls::client_config(&mixed, &b.cert_der).is_err());
        let garbage = TlsIdentity::from_der(a.cert_der.clone(), vec![1, 2, 3]);
        assert!(tls::server_config(&garbage, [b.cert_der.clone()]).is_err());
    }
}
