//! The [`Network`] handle and its tasks: one accept loop, one outbound task per current peer,
//! one reader task per inbound stream.
//!
//! # Liveness of the transport itself
//!
//! - **Outbound backoff.** In TLS 1.3 the client finishes its handshake before the server has
//!   checked the client certificate, so "`connect` returned" does not mean "the peer accepted
//!   us". A dial counts as successful only once the server *confirmed* the handshake: the client
//!   received `HANDSHAKE_DONE` (RFC 9001 §4.1.2), which a server sends only after it accepted the
//!   client's certificate. Only then is the connection published (requests, `connected_peers`)
//!   and "outbound connection up" logged. The backoff (50 ms → 2 s, doubled per failure, equal
//!   jitter) is reset only when a confirmed connection then stayed up for [`STABLE_UPTIME`], so
//!   a peer that rejects us — during the handshake or right after it — is redialed at most about
//!   every 2 s.
//! - **Bounded logging.** Every refused handshake is counted in `handshake_rejected`, but a WARN
//!   is written at most once a minute per remote IP (server side) or per peer (client side);
//!   the rest go to DEBUG (see `log_limit`).
//! - **Transient I/O errors do not stop the network.** A failed dial, handshake or stream only
//!   affects that connection, and dialing retries with backoff. quinn's endpoint driver ends on
//!   a socket error it does not absorb; the accept loop then sees `accept() == None` without a
//!   shutdown, logs at ERROR and rebinds a fresh endpoint on the same address (retrying with
//!   backoff, e.g. while file descriptors are exhausted); outbound tasks dial through whatever
//!   endpoint is current. Only [`Network::shutdown`] (or dropping the last handle) stops the
//!   network on purpose; anything else that ends a transport task — a panic, or rebinding
//!   failing for [`REBIND_GIVE_UP`] — is logged at ERROR and reported by [`Network::stopped`],
//!   so the owner can exit and let its supervisor restart the node.
//! - **Redial when a peer reconnects.** A validator that is killed (no close) and restarted on
//!   the same address and identity cannot tell our old connection to it that it is gone: it has
//!   no state for it and cannot send an authenticated stateless reset, so without help our
//!   outbound connection would look up until the idle timeout ([`tls::IDLE_TIMEOUT`], 5 s) while
//!   everything we send it is lost. Rule: when an inbound connection from peer X is accepted and
//!   identified, X's outbound task is told; if its current connection to X was established at
//!   least [`REDIAL_AFTER`] (2 s) ago, it counts as stale: the task stops writing to it (queued
//!   messages stay queued), logs "peer reconnected; redialing" at INFO, counts it in `redials`,
//!   and dials X again at once, without backoff; the old connection is closed after a short
//!   linger. A pending dial older than [`REDIAL_AFTER`] is restarted, and a backoff wait ends at
//!   once. The age threshold prevents a redial loop: at startup the inbound connection from X
//!   finds our outbound connection young (or still dialing for less than 2 s), and after X
//!   restarts, X's fresh outbound connection triggers exactly one redial on our side, whose new
//!   inbound connection at X finds X's outbound connection young.
//!
//! # Peers that change
//!
//! Validators register on chain after genesis and leave, so the peer set is not fixed:
//! [`Network::set_peers`] replaces it while the network runs, and [`Network::start`] uses the
//! same path for the initial set (and serves handshakes only once that set is in place). Each
//! peer has one `PeerHandle` in a map shared by the handle and the accept loop; the pinned
//! certificates live in one [`PinnedClients`] set shared by the map's owner and the server's
//! client-certificate verifier, so a change applies to the next handshake without rebuilding
//! the endpoint (the server issues no session tickets, so no handshake skips the check).
//! Matched by index:
//!
//! - **Added**: its certificate is pinned and its outbound task spawned (`Inner::spawn_outbound`,
//!   the one way an outbound task starts).
//! - **Same certificate, new address**: the outbound task reads the address at each dial, so
//!   the next dial uses it; a working connection is kept.
//! - **New certificate**: removed, then added.
//! - **Removed**: its certificate is unpinned, its outbound connection closed, and its handle
//!   dropped. The handle owns a `member` signal that is never sent on; its drop ends the
//!   outbound task (from any state: dialing, waiting, pumping) and every inbound connection of
//!   the peer (closed with code 5, "removed"). A task ended this way is not a failure of the
//!   network. Messages to the index are dropped like those to any unknown index.
//!
//! An inbound connection is identified under the map's lock by certificate *and* index, so a
//! handshake that raced with a change of the set is refused rather than attributed to the
//! wrong validator. Everything `set_peers` can fail on is checked before it changes anything.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use quasar_wire::frame::frame_header;
use quinn::{Connection, ConnectionError, Endpoint, RecvStream, SendStream, VarInt};
use rand::Rng;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tracing::{debug, error, info, warn};

use super::address::PeerAddress;
use super::frame_io::{read_frame, write_frame, FrameReadError};
use super::log_limit::{WarnLimiter, MAX_KEYS, WARN_INTERVAL};
use super::tls::{self, PinnedClients, TlsIdentity, SERVER_NAME};
use super::{P2pError, P2pMetrics};

/// First reconnect delay after a failed dial or a lost connection.
const MIN_BACKOFF: Duration = Duration::from_millis(50);
/// Largest reconnect delay.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// How long a confirmed outbound connection must stay up before the reconnect backoff is reset
/// to [`MIN_BACKOFF`]. A peer that accepts the handshake and then closes at once (e.g. it holds
/// too many of our connections) keeps the backoff growing.
const STABLE_UPTIME: Duration = Duration::from_secs(1);

/// How long a dial waits for the server to confirm the handshake (`HANDSHAKE_DONE`) before it
/// counts as failed.
const CONFIRM_TIMEOUT: Duration = Duration::from_secs(3);

/// How often the dialer looks for the server's handshake confirmation.
const CONFIRM_POLL: Duration = Duration::from_millis(5);

/// How long the accept loop keeps trying to rebind a failed endpoint before the network reports
/// itself stopped ([`StopCause::Failed`]).
const REBIND_GIVE_UP: Duration = Duration::from_secs(60);

/// An outbound connection at least this old is stale once the peer connects to us anew (see
/// the module docs): it is replaced at once instead of waiting for the idle timeout. Must
/// exceed the time a dial takes, so the peer's reaction to our redial never triggers another.
pub(crate) const REDIAL_AFTER: Duration = Duration::from_secs(2);

/// How long a stale outbound connection stays open after its gossip stream was finished (so a
/// peer that is in fact alive still gets what was written) before it is closed.
const SUPERSEDED_LINGER: Duration = Duration::from_secs(1);

/// Most simultaneous inbound connections accepted from one validator (a restarted peer's old
/// connection may linger until the idle timeout; more than this is abuse).
const MAX_INBOUND_CONNECTIONS_PER_PEER: usize = 4;

/// Application close/reset codes we send.
const CODE_SHUTDOWN: u32 = 0;
const CODE_REJECTED: u32 = 1;
const CODE_MALFORMED: u32 = 2;
const CODE_NO_REPLY: u32 = 3;
const CODE_SUPERSEDED: u32 = 4;
const CODE_REMOVED: u32 = 5;

/// One validator we talk to: its index, pinned certificate and dial address.
#[derive(Clone, Debug)]
pub struct PeerInfo {
    /// Validator index in the epoch's validator set.
    pub index: u32,
    /// The pinned TLS certificate (DER), as in the genesis file.
    pub cert_der: Vec<u8>,
    /// Where the validator listens (UDP): an IP literal, or a host name resolved again at every
    /// dial (a resolution failure is a failed dial, retried with the backoff).
    pub address: PeerAddress,
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
    /// Every other validator (not this one); indices and certificates must be distinct. The set
    /// may change later ([`Network::set_peers`]).
    pub peers: Vec<PeerInfo>,
    /// Outbound queue capacity per peer, in messages (e.g. 4096); must be > 0.
    pub outbound_queue: usize,
    /// Inbound channel capacity, in messages; must be > 0.
    pub inbound_queue: usize,
    /// Capacity of the transaction path's queues, in messages: per peer outbound, and the
    /// inbound channel ([`Traffic::Transactions`]); must be > 0.
    pub transaction_queue: usize,
}

/// Which path a gossip message takes. Each has its own outbound queue per peer, its own QUIC
/// stream (the consensus stream at a higher send priority) and its own inbound channel, so
/// that transaction traffic never delays consensus: a full transaction queue or channel drops
/// transactions (counted), never a consensus message, and a slow transaction consumer never
/// holds back the consensus stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Traffic {
    /// Proposals, votes, certificates, lane messages: backpressure when the runtime is behind.
    Consensus,
    /// Client transactions: dropped (and counted) when a queue is full.
    Transactions,
}

impl Traffic {
    /// The byte that opens a gossip stream of this path.
    fn tag(self) -> u8 {
        match self {
            Traffic::Consensus => 0,
            Traffic::Transactions => 1,
        }
    }

    fn from_tag(tag: u8) -> Option<Traffic> {
        match tag {
            0 => Some(Traffic::Consensus),
            1 => Some(Traffic::Transactions),
            _ => None,
        }
    }
}

/// The runtime's ends of the inbound channels ([`Network::start`]).
#[derive(Debug)]
pub struct Inbox {
    /// Consensus gossip and every request (capacity `inbound_queue`; a full channel applies
    /// backpressure to the peer's consensus stream).
    pub consensus: mpsc::Receiver<Inbound>,
    /// Transaction gossip (capacity `transaction_queue`; when full, messages are dropped and
    /// counted in `p2p_inbound_dropped_total`).
    pub transactions: mpsc::Receiver<Inbound>,
}

impl NetworkConfig {
    /// Default per-peer outbound queue capacity, in messages.
    pub const DEFAULT_OUTBOUND_QUEUE: usize = 4096;
    /// Default inbound channel capacity, in messages.
    pub const DEFAULT_INBOUND_QUEUE: usize = 4096;
    /// Default capacity of the transaction path's queues, in messages (batches of
    /// transactions).
    pub const DEFAULT_TRANSACTION_QUEUE: usize = 1024;

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
            transaction_queue: Self::DEFAULT_TRANSACTION_QUEUE,
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

/// Why a [`Network`] stopped (see [`Network::stopped`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StopCause {
    /// [`Network::shutdown`] was called: an orderly stop.
    Shutdown,
    /// A transport task ended on its own: it panicked, or the UDP endpoint failed and could not
    /// be rebound for 60 s. The network no longer works as a whole; the
    /// owner should exit with an error so its supervisor restarts the node. The string says
    /// which task and why (also logged at ERROR).
    Failed(String),
}

/// Handle to a running transport. Clones share it; dropping the last clone (or
/// [`Network::shutdown`]) stops every task and closes the endpoint.
#[derive(Clone, Debug)]
pub struct Network {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The current endpoint; `None` while the accept loop rebinds a failed one (the old handle
    /// must be gone to free the port).
    endpoint: watch::Sender<Option<Endpoint>>,
    local_addr: SocketAddr,
    /// This validator's identity and index, and the queue capacities: what starting an outbound
    /// task takes ([`Inner::spawn_outbound`]).
    identity: TlsIdentity,
    my_index: u32,
    outbound_queue: usize,
    transaction_queue: usize,
    /// The current peers by validator index, shared with the accept loop.
    peers: Peers,
    /// Their certificates, as the server's client-certificate verifier checks them.
    pinned: PinnedClients,
    metrics: P2pMetrics,
    shutdown: watch::Sender<bool>,
    /// `None` while running; set once, by [`Network::shutdown`] or a failing task.
    stop: watch::Sender<Option<StopCause>>,
    /// The accept loop (first), then the outbound tasks (finished ones are pruned by
    /// `set_peers`).
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// Where `set_peers` spawns new outbound tasks (it may be called outside the runtime).
    runtime: tokio::runtime::Handle,
}

/// The current peers by validator index.
type Peers = Arc<RwLock<HashMap<u32, PeerHandle>>>;

/// One current peer: its queues and outbound connection (for `send` and `request`), what
/// identifies and counts its inbound connections, and the senders whose drop, when the peer
/// leaves the set, stops its tasks.
#[derive(Debug)]
struct PeerHandle {
    /// Its pinned certificate (DER).
    cert_der: Vec<u8>,
    /// Its dial address; the outbound task reads it at each dial.
    address: watch::Sender<PeerAddress>,
    queue: mpsc::Sender<Arc<Vec<u8>>>,
    transactions: mpsc::Sender<Arc<Vec<u8>>>,
    connection: watch::Receiver<Option<Connection>>,
    /// Tells its outbound task that the peer connected to us anew.
    reconnected: watch::Sender<()>,
    /// Its open inbound connections (at most [`MAX_INBOUND_CONNECTIONS_PER_PEER`]).
    inbound: Arc<AtomicUsize>,
    /// Never sent on: dropped when the peer leaves the set, which ends `changed()` for its
    /// outbound task and its inbound connections, so they stop.
    member: watch::Sender<()>,
}

impl PeerHandle {
    /// Whether the outbound connection is established now (confirmed and not closed).
    fn is_connected(&self) -> bool {
        self.connection
            .borrow()
            .as_ref()
            .is_some_and(|c| c.close_reason().is_none())
    }

    /// Removes a peer that left the set: closes the outbound connection, then drops the
    /// handle, which stops the outbound task (dropping what was queued) and closes the inbound
    /// connections.
    fn remove(self) {
        if let Some(conn) = self.connection.borrow().as_ref() {
            conn.close(VarInt::from_u32(CODE_REMOVED), b"removed");
        }
    }
}

/// The lock's guard, also when a panic poisoned it (every update leaves the map consistent).
fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shutdown.send_replace(true);
        if let Some(endpoint) = self.endpoint.borrow().as_ref() {
            endpoint.close(VarInt::from_u32(CODE_SHUTDOWN), b"shutdown");
        }
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
    pinned: PinnedClients,
    peers: Peers,
    tx: mpsc::Sender<Inbound>,
    transactions: mpsc::Sender<Inbound>,
    metrics: P2pMetrics,
    shutdown: watch::Receiver<bool>,
    /// One WARN per remote IP per minute for refused connections.
    warn_limit: Arc<WarnLimiter<std::net::IpAddr>>,
}

impl Network {
    /// Binds `config.listen`, starts accepting pinned peers and dialing every peer, and returns
    /// the handle plus the inbound channels ([`Inbox`]).
    ///
    /// Must run inside a tokio runtime. Errors: [`P2pError::Config`] for an inconsistent config,
    /// [`P2pError::Tls`] / [`P2pError::QuicConfig`] for a bad identity, [`P2pError::Bind`] when
    /// the address is taken.
    pub async fn start(
        config: NetworkConfig,
        metrics: P2pMetrics,
    ) -> Result<(Network, Inbox), P2pError> {
        validate(&config)?;
        let pinned = PinnedClients::default();
        let server = tls::server_config(&config.identity, pinned.clone())?;
        let endpoint =
            Endpoint::server(server.clone(), config.listen).map_err(|source| P2pError::Bind {
                addr: config.listen,
                source,
            })?;
        let local_addr = endpoint.local_addr().map_err(|source| P2pError::Bind {
            addr: config.listen,
            source,
        })?;
        let runtime = tokio::runtime::Handle::current();
        let (shutdown, shutdown_rx) = watch::channel(false);
        let (stop, _) = watch::channel(None);
        let (endpoint_tx, _) = watch::channel(Some(endpoint));
        let (inbound_tx, inbound_rx) = mpsc::channel(config.inbound_queue);
        let (transactions_tx, transactions_rx) = mpsc::channel(config.transaction_queue);
        let acceptor = Acceptor {
            endpoint: endpoint_tx.clone(),
            server,
            local_addr,
        };
        let network = Network {
            inner: Arc::new(Inner {
                endpoint: endpoint_tx,
                local_addr,
                identity: config.identity,
                my_index: config.my_index,
                outbound_queue: config.outbound_queue,
                transaction_queue: config.transaction_queue,
                peers: Peers::default(),
                pinned,
                metrics,
                shutdown,
                stop,
                tasks: Mutex::default(),
                runtime,
            }),
        };
        let count = config.peers.len();
        // On an error nothing was spawned; dropping `network` closes the endpoint.
        network.set_peers(config.peers)?;
        // Handshakes are served only from now on (quinn holds them until accepted), so none is
        // checked against a partly built set.
        let inner = &network.inner;
        let ctx = InboundCtx {
            pinned: inner.pinned.clone(),
            peers: Arc::clone(&inner.peers),
            tx: inbound_tx,
            transactions: transactions_tx,
            metrics: inner.metrics.clone(),
            shutdown: shutdown_rx.clone(),
            warn_limit: Arc::new(WarnLimiter::new(WARN_INTERVAL, MAX_KEYS)),
        };
        let accept_loop = spawn_supervised(
            &inner.runtime,
            "accept loop".to_string(),
            acceptor.run(ctx),
            shutdown_rx,
            inner.stop.clone(),
        );
        lock(&inner.tasks).insert(0, accept_loop);
        info!(
            index = config.my_index,
            %local_addr,
            peers = count,
            "p2p network started"
        );
        Ok((
            network,
            Inbox {
                consensus: inbound_rx,
                transactions: transactions_rx,
            },
        ))
    }

    /// Makes `peers` the peer set, while running: validators that registered after genesis
    /// join, validators that left are dropped. Peers are matched by index:
    ///
    /// - a new index: its certificate is pinned for inbound connections at once (the next
    ///   handshake sees it) and an outbound task starts dialing it, as at [`Network::start`];
    /// - a known index with the same certificate keeps its connections and queues; a new
    ///   address is dialed from its next dial on;
    /// - a known index with another certificate is removed and added again;
    /// - an index no longer in `peers`: its outbound connection is closed and its task stops
    ///   (what was queued for it is dropped), its certificate is unpinned (the verifier refuses
    ///   its next handshake) and its open inbound connections are closed; messages to it are
    ///   then dropped like those to any unknown index ([`Network::send`],
    ///   [`P2pError::UnknownPeer`]).
    ///
    /// Each added and removed peer (and each changed address) is logged at INFO. Calling it with
    /// the current set changes nothing.
    ///
    /// Errors, after which nothing has changed: [`P2pError::Config`] when two peers share an
    /// index or a certificate, or one has this validator's index or certificate;
    /// [`P2pError::Tls`] / [`P2pError::QuicConfig`] when a client config cannot be built (not
    /// with the identity the network started with); [`P2pError::Shutdown`] once
    /// [`Network::shutdown`] was called.
    pub fn set_peers(&self, peers: Vec<PeerInfo>) -> Result<(), P2pError> {
        let inner = &*self.inner;
        validate_peers(inner.my_index, &inner.identity.cert_der, &peers)?;
        let mut current = write(&inner.peers);
        if *inner.shutdown.borrow() {
            return Err(P2pError::Shutdown);
        }
        // Decide everything (and build what can fail) before changing anything.
        let mut kept = Vec::new();
        let mut added = Vec::new();
        for peer in peers {
            if current
                .get(&peer.index)
                .is_some_and(|known| known.cert_der == peer.cert_der)
            {
                kept.push(peer);
            } else {
                let client = tls::client_config(&inner.identity, &peer.cert_der)?;
                added.push((peer, client));
            }
        }
        let keep: HashSet<u32> = kept.iter().map(|p| p.index).collect();
        let removed: Vec<u32> = current
            .keys()
            .filter(|index| !keep.contains(index))
            .copied()
            .collect();

        for index in removed {
            if let Some(handle) = current.remove(&index) {
                inner.pinned.unpin(&handle.cert_der);
                info!(peer = index, address = %*handle.address.borrow(), "peer removed");
                handle.remove();
            }
        }
        for peer in kept {
            if let Some(known) = current.get(&peer.index) {
                known.address.send_if_modified(|address| {
                    let changed = *address != peer.address;
                    if changed {
                        info!(
                            peer = peer.index,
                            address = %peer.address,
                            before = %address,
                            "peer address changed"
                        );
                        *address = peer.address;
                    }
                    changed
                });
            }
        }
        let mut tasks = lock(&inner.tasks);
        tasks.retain(|task| !task.is_finished());
        for (peer, client) in added {
            let (handle, task) = inner.spawn_outbound(&peer, client);
            inner.pinned.pin(peer.cert_der, peer.index);
            info!(peer = peer.index, address = %peer.address, "peer added");
            current.insert(peer.index, handle);
            tasks.push(task);
        }
        Ok(())
    }

    /// The validator indices of the current peers, ascending.
    pub fn peer_indices(&self) -> Vec<u32> {
        let mut indices: Vec<u32> = read(&self.inner.peers).keys().copied().collect();
        indices.sort_unstable();
        indices
    }

    /// The bound UDP address (the real port when `listen` had port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.inner.local_addr
    }

    /// The metrics handle this network counts into.
    pub fn metrics(&self) -> &P2pMetrics {
        &self.inner.metrics
    }

    /// Queues `message` for peer `to` on its consensus stream. Never blocks: when the queue is
    /// full, the peer is unknown (not in the current set) or the message exceeds 16 MiB, the
    /// message is dropped and counted in `outbound_dropped`.
    pub fn send(&self, to: u32, message: Arc<Vec<u8>>) {
        self.enqueue(to, Traffic::Consensus, message);
    }

    /// Queues `message` for every current peer (see [`Network::send`]); the bytes are shared, not
    /// copied.
    pub fn broadcast(&self, message: Arc<Vec<u8>>) {
        for index in self.peer_indices() {
            self.send(index, Arc::clone(&message));
        }
    }

    /// Queues `message` (transactions) for every peer on the transaction path
    /// ([`Traffic::Transactions`]), dropping it (counted in `outbound_dropped`) for a peer whose
    /// transaction queue is full.
    pub fn broadcast_transactions(&self, message: Arc<Vec<u8>>) {
        for index in self.peer_indices() {
            self.enqueue(index, Traffic::Transactions, Arc::clone(&message));
        }
    }

    fn enqueue(&self, to: u32, traffic: Traffic, message: Arc<Vec<u8>>) {
        if frame_header(message.len()).is_err() {
            warn!(peer = to, len = message.len(), "dropping oversized message");
            self.inner.metrics.dropped(1);
            return;
        }
        let peers = read(&self.inner.peers);
        let Some(peer) = peers.get(&to) else {
            debug!(peer = to, "dropping message to unknown peer");
            self.inner.metrics.dropped(1);
            return;
        };
        let queue = match traffic {
            Traffic::Consensus => &peer.queue,
            Traffic::Transactions => &peer.transactions,
        };
        if let Err(e) = queue.try_send(message) {
            debug!(peer = to, ?traffic, error = %e, "outbound queue full or closed, dropping message");
            self.inner.metrics.dropped(1);
        }
    }

    /// Sends one request to `to` on a fresh bidirectional stream and returns its one-frame
    /// reply. Waits for the outbound connection if it is not up yet; the whole exchange is
    /// bounded by `timeout`.
    ///
    /// Errors: [`P2pError::UnknownPeer`] (also when `to` leaves the set while the request waits
    /// for the connection), [`P2pError::Frame`] (request over 16 MiB),
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
        let mut connection = read(&self.inner.peers)
            .get(&to)
            .map(|peer| peer.connection.clone())
            .ok_or(P2pError::UnknownPeer(to))?;
        let metrics = self.inner.metrics.clone();
        let shutdown = self.inner.shutdown.subscribe();
        let exchange = async move {
            let conn = connection
                .wait_for(Option::is_some)
                .await
                // The outbound task ended: the network shut down or the peer left the set.
                .map_err(|_| {
                    if *shutdown.borrow() {
                        P2pError::Shutdown
                    } else {
                        P2pError::UnknownPeer(to)
                    }
                })?
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

    /// Number of current peers with an established outbound connection now: confirmed by the
    /// peer and not closed. A connection closed by the peer leaves the count at once; a peer
    /// that vanished silently leaves it after the idle timeout ([`tls::IDLE_TIMEOUT`], 5 s).
    pub fn connected_peers(&self) -> usize {
        read(&self.inner.peers)
            .values()
            .filter(|p| p.is_connected())
            .count()
    }

    /// Whether every current peer has an established connection now
    /// ([`Network::connected_peers`] counts them); true when there are none.
    pub fn all_peers_connected(&self) -> bool {
        read(&self.inner.peers)
            .values()
            .all(PeerHandle::is_connected)
    }

    /// Whether the transport still runs: `false` once [`Network::stopped`] would resolve.
    pub fn is_running(&self) -> bool {
        self.inner.stop.borrow().is_none()
    }

    /// Resolves once the transport has terminated, with why: [`StopCause::Shutdown`] after
    /// [`Network::shutdown`] finished, [`StopCause::Failed`] when a transport task ended on its
    /// own (panic, or an endpoint that could not be rebound; logged at ERROR). Transient I/O
    /// errors (a failed dial, handshake or stream, a socket error that a rebind cures) never
    /// resolve it. Cancel-safe; may be awaited by several callers.
    ///
    /// The owner should treat `Failed` as fatal (exit with an error so systemd restarts the
    /// node): the node can no longer reach or hear all of its peers.
    pub async fn stopped(&self) -> StopCause {
        let mut stop = self.inner.stop.subscribe();
        let cause = match stop.wait_for(Option::is_some).await {
            Ok(cause) => cause.clone(),
            // Unreachable while `self` holds the sender; report it as a failure anyway.
            Err(_) => return StopCause::Failed("stop signal lost".into()),
        };
        cause.unwrap_or(StopCause::Shutdown)
    }

    /// Stops every task, closes all connections (peers see an immediate close) and waits, at
    /// most about a second, for the endpoint to drain. The socket is released once the last
    /// clone of this handle is dropped.
    pub async fn shutdown(&self) {
        self.inner.shutdown.send_replace(true);
        if let Some(endpoint) = self.inner.endpoint.borrow().as_ref() {
            endpoint.close(VarInt::from_u32(CODE_SHUTDOWN), b"shutdown");
        }
        let tasks = std::mem::take(&mut *lock(&self.inner.tasks));
        for task in tasks {
            if let Err(e) = task.await {
                debug!(error = %e, "p2p task ended abnormally");
            }
        }
        let endpoint = self.inner.endpoint.borrow().clone();
        if let Some(endpoint) = endpoint {
            let _ = tokio::time::timeout(Duration::from_secs(1), endpoint.wait_idle()).await;
        }
        let first = self.inner.stop.send_if_modified(|stop| {
            let first = stop.is_none();
            if first {
                *stop = Some(StopCause::Shutdown);
            }
            first
        });
        if first {
            info!(local_addr = %self.inner.local_addr, "p2p network shut down on request");
        }
    }
}

fn validate(config: &NetworkConfig) -> Result<(), P2pError> {
    if config.outbound_queue == 0 || config.inbound_queue == 0 || config.transaction_queue == 0 {
        return Err(P2pError::Config("queue capacities must be positive".into()));
    }
    validate_peers(config.my_index, &config.identity.cert_der, &config.peers)
}

/// Checks a peer set for the validator with index `my_index` and certificate `my_cert` (DER):
/// indices and certificates distinct, neither `my_index` nor `my_cert` among them. Errors:
/// [`P2pError::Config`] naming the first offending peer.
fn validate_peers(my_index: u32, my_cert: &[u8], peers: &[PeerInfo]) -> Result<(), P2pError> {
    let mut indices = HashSet::new();
    let mut certs = HashSet::new();
    certs.insert(my_cert);
    for peer in peers {
        if peer.index == my_index {
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
        ConnectionError::TransportError(e) => is_crypto_error(u64::from(e.code)),
        _ => false,
    }
}

/// Whether the peer closed the connection with a TLS alert (QUIC `CRYPTO_ERROR`): it refused our
/// certificate or ALPN.
fn is_remote_tls_rejection(error: &ConnectionError) -> bool {
    match error {
        ConnectionError::ConnectionClosed(close) => is_crypto_error(u64::from(close.error_code)),
        _ => false,
    }
}

fn is_crypto_error(code: u64) -> bool {
    (0x100..0x200).contains(&code)
}

/// `backoff` with equal jitter: uniform in `[backoff/2, backoff]`, so dialers that failed
/// together do not retry in lockstep.
pub(crate) fn jittered(backoff: Duration) -> Duration {
    let half = backoff / 2;
    let half_ns = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX);
    half.saturating_add(Duration::from_nanos(
        rand::thread_rng().gen_range(0..=half_ns),
    ))
}

/// The next backoff after a failure: doubled, at most [`MAX_BACKOFF`].
fn grow(backoff: Duration) -> Duration {
    backoff.saturating_mul(2).clamp(MIN_BACKOFF, MAX_BACKOFF)
}

/// Spawns a long-lived transport task on `runtime`. Its body returns `Ok(())` when it ended on
/// purpose (shutdown, or its peer left the set) and `Err(why)` when it stopped on its own. When
/// it stops on its own, panics or is aborted without a shutdown having been requested, the stop
/// is logged at ERROR and published as [`StopCause::Failed`] (see [`Network::stopped`]).
fn spawn_supervised<F>(
    runtime: &tokio::runtime::Handle,
    task: String,
    body: F,
    shutdown: watch::Receiver<bool>,
    stop: watch::Sender<Option<StopCause>>,
) -> JoinHandle<()>
where
    F: Future<Output = Result<(), String>> + Send + 'static,
{
    // Built outside the task so that it also reports a task aborted before its first poll.
    let mut guard = TaskGuard {
        task,
        shutdown,
        stop,
        ended: None,
    };
    runtime.spawn(async move {
        let ended = body.await;
        guard.ended = Some(ended);
        drop(guard);
    })
}

/// Reports a supervised task's end; runs on return, panic (unwinding) and abort alike.
struct TaskGuard {
    task: String,
    shutdown: watch::Receiver<bool>,
    stop: watch::Sender<Option<StopCause>>,
    /// What the body returned; `None` when it panicked or was aborted.
    ended: Option<Result<(), String>>,
}

impl Drop for TaskGuard {
    fn drop(&mut self) {
        if *self.shutdown.borrow() {
            return;
        }
        let why = match self.ended.take() {
            Some(Ok(())) => return,
            Some(Err(why)) => why,
            None => "panicked or was aborted".into(),
        };
        let reason = format!("{}: {why}", self.task);
        error!(%reason, "p2p network stopped unexpectedly");
        self.stop.send_if_modified(|stop| {
            let first = stop.is_none();
            if first {
                *stop = Some(StopCause::Failed(reason));
            }
            first
        });
    }
}

/// Why an outbound connection's pump stopped.
enum PumpEnd {
    Shutdown,
    QueueClosed,
    Failed(String),
    /// The peer connected to us anew while this connection was at least [`REDIAL_AFTER`] old:
    /// the caller finishes the stream (`None`: it was reset mid-frame) and redials.
    Superseded(Option<SendStream>),
}

/// The task that owns the outbound link to one peer.
struct Outbound {
    endpoint: watch::Receiver<Option<Endpoint>>,
    /// The peer's validator index and pinned certificate (DER).
    index: u32,
    cert_der: Vec<u8>,
    /// The peer's dial address, read at each dial ([`Network::set_peers`] may change it).
    address: watch::Receiver<PeerAddress>,
    client: quinn::ClientConfig,
    queues: Queues,
    connection: watch::Sender<Option<Connection>>,
    /// Changes whenever the accept loop identified a new inbound connection from this peer.
    reconnected: watch::Receiver<()>,
    metrics: P2pMetrics,
    shutdown: watch::Receiver<bool>,
    /// One WARN per minute about this peer refusing us, not being who we pinned, or its name
    /// not resolving.
    warn_limit: WarnLimiter<()>,
    /// The address the peer's host name last resolved to (INFO when it changes).
    resolved: Option<SocketAddr>,
}

impl Inner {
    /// Starts the outbound task of `peer`, which dials it with `client`, and returns the peer's
    /// handle and the task. The task dials, pumps and redials until shutdown or until the
    /// handle is dropped (the peer left the set).
    fn spawn_outbound(
        &self,
        peer: &PeerInfo,
        client: quinn::ClientConfig,
    ) -> (PeerHandle, JoinHandle<()>) {
        let (queue, consensus) = mpsc::channel(self.outbound_queue);
        let (transactions, transactions_rx) = mpsc::channel(self.transaction_queue);
        let (connection_tx, connection) = watch::channel(None);
        let (address, address_rx) = watch::channel(peer.address.clone());
        let (reconnected, reconnected_rx) = watch::channel(());
        let (member, mut member_rx) = watch::channel(());
        let mut outbound = Outbound {
            endpoint: self.endpoint.subscribe(),
            index: peer.index,
            cert_der: peer.cert_der.clone(),
            address: address_rx,
            client,
            queues: Queues {
                consensus,
                transactions: transactions_rx,
            },
            connection: connection_tx,
            reconnected: reconnected_rx,
            metrics: self.metrics.clone(),
            shutdown: self.shutdown.subscribe(),
            warn_limit: WarnLimiter::new(WARN_INTERVAL, 1),
            resolved: None,
        };
        let body = async move {
            tokio::select! {
                () = outbound.run() => {}
                // Never sent on: resolves when the peer left the set. Dropping `run` drops
                // its connection (already closed by `PeerHandle::remove`).
                _ = member_rx.changed() => {}
            }
            Ok(())
        };
        let task = spawn_supervised(
            &self.runtime,
            format!("outbound task of peer {}", peer.index),
            body,
            self.shutdown.subscribe(),
            self.stop.clone(),
        );
        let handle = PeerHandle {
            cert_der: peer.cert_der.clone(),
            address,
            queue,
            transactions,
            connection,
            reconnected,
            inbound: Arc::default(),
            member,
        };
        (handle, task)
    }
}

impl Outbound {
    /// Dials, pumps and redials until shutdown.
    async fn run(&mut self) {
        let mut backoff = MIN_BACKOFF;
        let mut shutdown = self.shutdown.clone();
        let mut reconnected = self.reconnected.clone();
        loop {
            if *shutdown.borrow() {
                return;
            }
            // Only an inbound connection accepted during this attempt can make it stale.
            reconnected.borrow_and_update();
            let dial_started = Instant::now();
            let dialed = {
                let dial = self.dial();
                tokio::pin!(dial);
                loop {
                    tokio::select! {
                        _ = shutdown.changed() => return,
                        dialed = &mut dial => break Some(dialed),
                        _ = peer_reconnected(&mut reconnected) => {
                            if dial_started.elapsed() >= REDIAL_AFTER {
                                break None;
                            }
                        }
                    }
                }
            };
            let Some(dialed) = dialed else {
                info!(
                    peer = self.index,
                    pending_ms = millis(dial_started.elapsed()),
                    "peer reconnected; redialing"
                );
                self.metrics.redialed();
                continue;
            };
            match dialed {
                Ok(conn) => {
                    info!(peer = self.index, addr = %*self.address.borrow(), remote = %conn.remote_address(), "outbound connection up");
                    let up_since = Instant::now();
                    let end = {
                        let _up =
                            ConnectedGuard::new(&self.connection, &self.metrics, conn.clone());
                        pump(
                            &conn,
                            up_since,
                            &mut self.queues,
                            &self.metrics,
                            &mut self.shutdown,
                            &mut reconnected,
                        )
                        .await
                    };
                    match end {
                        PumpEnd::Shutdown | PumpEnd::QueueClosed => {
                            conn.close(VarInt::from_u32(CODE_SHUTDOWN), b"shutdown");
                            return;
                        }
                        PumpEnd::Failed(reason) => {
                            info!(peer = self.index, %reason, "outbound connection lost");
                        }
                        PumpEnd::Superseded(stream) => {
                            info!(
                                peer = self.index,
                                age_ms = millis(up_since.elapsed()),
                                "peer reconnected; redialing"
                            );
                            self.metrics.redialed();
                            tokio::spawn(retire(conn, stream));
                            // No backoff, and what is queued stays queued for the new connection.
                            backoff = MIN_BACKOFF;
                            continue;
                        }
                    }
                    if up_since.elapsed() >= STABLE_UPTIME {
                        backoff = MIN_BACKOFF;
                    }
                }
                Err(reason) => {
                    debug!(peer = self.index, addr = %*self.address.borrow(), %reason, "dial failed");
                }
            }
            self.drop_stale();
            tokio::select! {
                _ = shutdown.changed() => return,
                _ = tokio::time::sleep(jittered(backoff)) => {}
                // The peer just reached us, so it is up: dial now rather than after the backoff.
                _ = peer_reconnected(&mut reconnected) => {
                    debug!(peer = self.index, "peer connected to us; dialing without waiting");
                }
            }
            backoff = grow(backoff);
        }
    }

    /// The socket address to dial now: the peer's IP literal, or its host name resolved afresh,
    /// preferring the family of our endpoint's address (`ipv6`). Logs the result at DEBUG and a
    /// changed one at INFO; a failure is logged with the name (WARN at most once a minute) and
    /// returned as a failed dial.
    async fn resolve(&mut self, ipv6: bool) -> Result<SocketAddr, String> {
        let address = self.address.borrow().clone();
        let Some(host) = address.host_name() else {
            return address.resolve(ipv6).await.map_err(|e| e.to_string());
        };
        match address.resolve(ipv6).await {
            Ok(addr) => {
                match self.resolved.replace(addr) {
                    Some(before) if before == addr => {
                        debug!(peer = self.index, host, %addr, "resolved peer address")
                    }
                    before => info!(
                        peer = self.index,
                        host,
                        %addr,
                        before = ?before,
                        "resolved peer address (new)"
                    ),
                }
                Ok(addr)
            }
            Err(error) => {
                self.warn_or_debug(&error, "peer host name does not resolve; retrying");
                Err(error.to_string())
            }
        }
    }

    /// Dials the peer and waits until the server confirmed the handshake (so it accepted our
    /// certificate). Errors say why, for the debug log.
    async fn dial(&mut self) -> Result<Connection, String> {
        let ipv6 = self
            .endpoint
            .borrow()
            .as_ref()
            .and_then(|e| e.local_addr().ok())
            .is_some_and(|a| a.is_ipv6());
        let addr = self.resolve(ipv6).await?;
        let endpoint = self
            .endpoint
            .borrow()
            .clone()
            .ok_or("endpoint is being rebound")?;
        let connecting = endpoint
            .connect_with(self.client.clone(), addr, SERVER_NAME)
            .map_err(|e| e.to_string())?;
        drop(endpoint);
        let conn = match connecting.await {
            Ok(conn) => conn,
            Err(e) => {
                if is_local_tls_rejection(&e) {
                    self.metrics.rejected_handshake();
                    self.warn_or_debug(
                        &e,
                        "server at the peer's address is not the pinned validator",
                    );
                } else if is_remote_tls_rejection(&e) {
                    self.warn_or_debug(&e, "peer rejected our certificate or ALPN (is this validator in its genesis, or registered with its network address on a chain whose sets come from the registry?)");
                }
                return Err(e.to_string());
            }
        };
        // Defence in depth: the verifier already enforced both.
        let pinned = tls::peer_certificate(&conn).is_some_and(|c| c == self.cert_der);
        if !pinned || !tls::negotiated_alpn(&conn) {
            self.metrics.rejected_handshake();
            conn.close(VarInt::from_u32(CODE_REJECTED), b"identity");
            return Err("peer identity or ALPN mismatch".into());
        }
        match confirmed(&conn).await {
            Ok(()) => Ok(conn),
            Err(Some(e)) => {
                if is_remote_tls_rejection(&e) {
                    self.warn_or_debug(&e, "peer rejected our certificate or ALPN (is this validator in its genesis, or registered with its network address on a chain whose sets come from the registry?)");
                }
                Err(format!("closed before the handshake was confirmed: {e}"))
            }
            Err(None) => {
                conn.close(VarInt::from_u32(CODE_REJECTED), b"handshake not confirmed");
                Err("handshake not confirmed in time".into())
            }
        }
    }

    fn warn_or_debug(&self, error: &dyn std::fmt::Display, what: &str) {
        match self.warn_limit.check(&(), Instant::now()) {
            Some(suppressed) => warn!(
                peer = self.index,
                addr = %*self.address.borrow(),
                %error,
                suppressed,
                "{what}"
            ),
            None => debug!(peer = self.index, addr = %*self.address.borrow(), %error, "{what}"),
        }
    }

    /// Drops (and counts) what was queued while the peer was unreachable.
    fn drop_stale(&mut self) {
        let mut dropped = 0u64;
        while self.queues.consensus.try_recv().is_ok() {
            dropped = dropped.saturating_add(1);
        }
        while self.queues.transactions.try_recv().is_ok() {
            dropped = dropped.saturating_add(1);
        }
        if dropped > 0 {
            debug!(
                peer = self.index,
                dropped, "dropped messages queued while disconnected"
            );
            self.metrics.dropped(dropped);
        }
    }
}

/// Waits until the server confirmed the handshake: the client received `HANDSHAKE_DONE`, which a
/// server sends only once it has completed the handshake, i.e. after it accepted our certificate
/// (RFC 9001 §4.1.2). In TLS 1.3 the client's own handshake completes one flight earlier, before
/// the server has seen the client certificate. `Err(Some(e))`: the connection closed first;
/// `Err(None)`: no confirmation within [`CONFIRM_TIMEOUT`].
async fn confirmed(conn: &Connection) -> Result<(), Option<ConnectionError>> {
    let deadline = tokio::time::sleep(CONFIRM_TIMEOUT);
    tokio::pin!(deadline);
    loop {
        if conn.stats().frame_rx.handshake_done > 0 {
            return Ok(());
        }
        tokio::select! {
            e = conn.closed() => return Err(Some(e)),
            _ = &mut deadline => return Err(None),
            _ = tokio::time::sleep(CONFIRM_POLL) => {}
        }
    }
}

/// Resolves when the accept loop signals a new inbound connection from the peer; never, once
/// the accept loop is gone.
async fn peer_reconnected(reconnected: &mut watch::Receiver<()>) {
    if reconnected.changed().await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Ends a superseded outbound connection: finishes its gossip stream (when it was left between
/// messages), gives a peer that is in fact alive [`SUPERSEDED_LINGER`] to acknowledge it, then
/// closes the connection.
async fn retire(conn: Connection, stream: Option<SendStream>) {
    if let Some(mut stream) = stream {
        if stream.finish().is_ok() {
            let _ = tokio::time::timeout(SUPERSEDED_LINGER, stream.stopped()).await;
        }
    }
    conn.close(VarInt::from_u32(CODE_SUPERSEDED), b"superseded");
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// One peer's outbound queues, one per [`Traffic`] path.
struct Queues {
    consensus: mpsc::Receiver<Arc<Vec<u8>>>,
    transactions: mpsc::Receiver<Arc<Vec<u8>>>,
}

/// Opens a gossip stream of `traffic`'s path: its tag byte first, the consensus stream at a
/// higher send priority than the transaction stream.
async fn open_gossip(conn: &Connection, traffic: Traffic) -> Result<SendStream, String> {
    let mut stream = conn.open_uni().await.map_err(|e| e.to_string())?;
    let priority = match traffic {
        Traffic::Consensus => 1,
        Traffic::Transactions => 0,
    };
    stream.set_priority(priority).map_err(|e| e.to_string())?;
    stream
        .write_all(&[traffic.tag()])
        .await
        .map_err(|e| e.to_string())?;
    Ok(stream)
}

/// Writes queued messages onto the two gossip streams (consensus first whenever both have
/// messages) until the connection fails, we stop, or the peer connects to us anew while the
/// connection (up since `up_since`) is at least [`REDIAL_AFTER`] old.
async fn pump(
    conn: &Connection,
    up_since: Instant,
    queues: &mut Queues,
    metrics: &P2pMetrics,
    shutdown: &mut watch::Receiver<bool>,
    reconnected: &mut watch::Receiver<()>,
) -> PumpEnd {
    let opened = tokio::select! {
        _ = shutdown.changed() => return PumpEnd::Shutdown,
        opened = async {
            Ok::<_, String>((
                open_gossip(conn, Traffic::Consensus).await?,
                open_gossip(conn, Traffic::Transactions).await?,
            ))
        } => opened,
    };
    let (mut consensus, mut transactions) = match opened {
        Ok(streams) => streams,
        Err(e) => return PumpEnd::Failed(e),
    };
    loop {
        let (message, stream) = tokio::select! {
            biased;
            _ = shutdown.changed() => return PumpEnd::Shutdown,
            e = conn.closed() => return PumpEnd::Failed(e.to_string()),
            _ = peer_reconnected(reconnected) => {
                if up_since.elapsed() >= REDIAL_AFTER {
                    return PumpEnd::Superseded(Some(consensus));
                }
                continue;
            }
            next = queues.consensus.recv() => match next {
                Some(message) => (message, &mut consensus),
                None => return PumpEnd::QueueClosed,
            },
            next = queues.transactions.recv() => match next {
                Some(message) => (message, &mut transactions),
                None => return PumpEnd::QueueClosed,
            },
        };
        // A dead peer stops granting flow-control credit, so a write may block until the idle
        // timeout; a reconnect signal must still get through.
        let written = {
            let write = write_frame(stream, &message);
            tokio::pin!(write);
            loop {
                tokio::select! {
                    written = &mut write => break Some(written),
                    _ = peer_reconnected(reconnected) => {
                        if up_since.elapsed() >= REDIAL_AFTER {
                            break None;
                        }
                    }
                }
            }
        };
        match written {
            Some(Ok(())) => metrics.sent(message.len()),
            Some(Err(e)) => {
                metrics.dropped(1);
                return PumpEnd::Failed(e.to_string());
            }
            None => {
                // Torn mid-frame: the stream cannot be finished cleanly.
                metrics.dropped(1);
                let _ = consensus.reset(VarInt::from_u32(CODE_SUPERSEDED));
                let _ = transactions.reset(VarInt::from_u32(CODE_SUPERSEDED));
                return PumpEnd::Superseded(None);
            }
        }
    }
}

/// The accept loop and the owner of the endpoint: accepts connections on the current endpoint
/// and rebinds a fresh one on the same address when the old one dies without a shutdown.
struct Acceptor {
    endpoint: watch::Sender<Option<Endpoint>>,
    server: quinn::ServerConfig,
    local_addr: SocketAddr,
}

impl Acceptor {
    /// Accepts until shutdown (`Ok`); `Err(why)` when there is no endpoint to accept on
    /// (rebinding failed).
    async fn run(self, mut ctx: InboundCtx) -> Result<(), String> {
        loop {
            let Some(endpoint) = self.endpoint.borrow().clone() else {
                return Err("no endpoint".into());
            };
            loop {
                let incoming = tokio::select! {
                    _ = ctx.shutdown.changed() => return Ok(()),
                    incoming = endpoint.accept() => incoming,
                };
                match incoming {
                    Some(incoming) => {
                        tokio::spawn(serve_connection(incoming, ctx.clone()));
                    }
                    None => break,
                }
            }
            // `accept` yields `None` once the endpoint is closed (only `shutdown` does that) or
            // its driver died on a socket error.
            if *ctx.shutdown.borrow() {
                return Ok(());
            }
            // Release our handles so the old socket can close and free the port.
            drop(endpoint);
            self.endpoint.send_replace(None);
            error!(local_addr = %self.local_addr,
                "QUIC endpoint failed (socket error); rebinding");
            let fresh = match self.rebind(&mut ctx.shutdown).await {
                Ok(fresh) => fresh,
                Err(reason) => return Err(reason),
            };
            self.endpoint.send_replace(Some(fresh));
            if *ctx.shutdown.borrow() {
                // `shutdown` may have looked at the endpoint while it was being rebound.
                if let Some(endpoint) = self.endpoint.borrow().as_ref() {
                    endpoint.close(VarInt::from_u32(CODE_SHUTDOWN), b"shutdown");
                }
                return Ok(());
            }
            info!(local_addr = %self.local_addr, "QUIC endpoint rebound");
        }
    }

    /// Binds a new endpoint on `local_addr`, retrying with backoff (the old socket may still be
    /// draining, or file descriptors may be exhausted) for at most [`REBIND_GIVE_UP`].
    async fn rebind(&self, shutdown: &mut watch::Receiver<bool>) -> Result<Endpoint, String> {
        let started = Instant::now();
        let mut backoff = MIN_BACKOFF;
        let mut failures = 0u64;
        loop {
            match Endpoint::server(self.server.clone(), self.local_addr) {
                Ok(endpoint) => return Ok(endpoint),
                Err(e) => {
                    failures = failures.saturating_add(1);
                    if started.elapsed() >= REBIND_GIVE_UP {
                        return Err(format!(
                            "could not rebind {} for {REBIND_GIVE_UP:?} ({failures} attempts): {e}",
                            self.local_addr
                        ));
                    }
                    if backoff >= MAX_BACKOFF {
                        warn!(local_addr = %self.local_addr, error = %e, failures, "rebinding the QUIC endpoint failed, retrying");
                    } else {
                        debug!(local_addr = %self.local_addr, error = %e, "rebinding the QUIC endpoint failed, retrying");
                    }
                }
            }
            tokio::select! {
                _ = shutdown.changed() => return Err("shutdown".into()),
                _ = tokio::time::sleep(jittered(backoff)) => {}
            }
            backoff = grow(backoff);
        }
    }
}

async fn serve_connection(incoming: quinn::Incoming, mut ctx: InboundCtx) {
    let remote = incoming.remote_address();
    let conn = match incoming.await {
        Ok(conn) => conn,
        Err(e) => {
            if is_local_tls_rejection(&e) {
                ctx.metrics.rejected_handshake();
                refused(
                    &ctx,
                    remote,
                    &e,
                    "rejected handshake (unpinned identity or ALPN)",
                );
            } else {
                debug!(%remote, error = %e, "inbound handshake failed");
            }
            return;
        }
    };
    let admitted = if tls::negotiated_alpn(&conn) {
        ctx.admit(tls::peer_certificate(&conn))
    } else {
        Err(Refusal::Unpinned)
    };
    let (from, _slot, mut member) = match admitted {
        Ok(admitted) => admitted,
        Err(Refusal::Unpinned) => {
            ctx.metrics.rejected_handshake();
            refused(
                &ctx,
                remote,
                &"no pinned identity or ALPN",
                "rejected connection without a pinned identity or ALPN",
            );
            conn.close(VarInt::from_u32(CODE_REJECTED), b"identity");
            return;
        }
        Err(Refusal::Full(from)) => {
            refused(
                &ctx,
                remote,
                &format_args!("peer {from}"),
                "too many inbound connections from one validator",
            );
            conn.close(VarInt::from_u32(CODE_REJECTED), b"too many connections");
            return;
        }
    };
    debug!(peer = from, %remote, "inbound connection up");
    loop {
        tokio::select! {
            _ = ctx.shutdown.changed() => return,
            // Never sent on: resolves when the peer left the set.
            _ = member.changed() => {
                debug!(peer = from, %remote, "closing inbound connection of a removed peer");
                conn.close(VarInt::from_u32(CODE_REMOVED), b"removed");
                return;
            }
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

/// Why an identified inbound connection is refused.
enum Refusal {
    /// Its certificate is not pinned now (or it negotiated another ALPN).
    Unpinned,
    /// The validator with this index holds [`MAX_INBOUND_CONNECTIONS_PER_PEER`] already.
    Full(u32),
}

impl InboundCtx {
    /// Admits a connection whose peer authenticated with `cert` (DER): the current peer it is
    /// pinned for, if that one has a free connection slot. Tells the peer's outbound task that
    /// it connected anew (see the module docs). Returns the peer's index, the slot, and the
    /// membership signal that ends the connection when the peer leaves the set.
    fn admit(
        &self,
        cert: Option<Vec<u8>>,
    ) -> Result<(u32, ConnectionSlot, watch::Receiver<()>), Refusal> {
        let cert = cert.ok_or(Refusal::Unpinned)?;
        let from = self.pinned.index_of(&cert).ok_or(Refusal::Unpinned)?;
        let peers = read(&self.peers);
        // The set may have changed since the handshake: check the certificate again.
        let peer = peers
            .get(&from)
            .filter(|peer| peer.cert_der == cert)
            .ok_or(Refusal::Unpinned)?;
        let slot = ConnectionSlot::acquire(&peer.inbound).ok_or(Refusal::Full(from))?;
        peer.reconnected.send_replace(());
        Ok((from, slot, peer.member.subscribe()))
    }
}

/// One of a validator's [`MAX_INBOUND_CONNECTIONS_PER_PEER`] inbound connection slots (its
/// count of open inbound connections), released on drop.
struct ConnectionSlot(Arc<AtomicUsize>);

impl ConnectionSlot {
    fn acquire(open: &Arc<AtomicUsize>) -> Option<ConnectionSlot> {
        open.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < MAX_INBOUND_CONNECTIONS_PER_PEER).then_some(n.saturating_add(1))
        })
        .ok()?;
        Some(ConnectionSlot(Arc::clone(open)))
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let _ = self
            .0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                Some(n.saturating_sub(1))
            });
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

/// Reads one gossip stream: its path's tag byte ([`Traffic`]), then frame by frame until it
/// ends, fails or is malformed. Consensus messages wait for room in their channel
/// (backpressure through QUIC flow control); transaction messages are dropped and counted when
/// theirs is full, so the stream keeps draining and never holds back the connection.
async fn read_gossip(mut recv: RecvStream, from: u32, mut ctx: InboundCtx) {
    let mut tag = [0u8; 1];
    let traffic = tokio::select! {
        _ = ctx.shutdown.changed() => return,
        read = recv.read_exact(&mut tag) => read.ok().and_then(|()| Traffic::from_tag(tag[0])),
    };
    let Some(traffic) = traffic else {
        ctx.metrics.record_malformed();
        let _ = recv.stop(VarInt::from_u32(CODE_MALFORMED));
        return;
    };
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
        let message = Inbound::Gossip { from, message };
        let delivered = match traffic {
            Traffic::Consensus => tokio::select! {
                _ = ctx.shutdown.changed() => return,
                sent = ctx.tx.send(message) => sent.is_ok(),
            },
            Traffic::Transactions => match ctx.transactions.try_send(message) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    ctx.metrics.dropped_inbound();
                    true
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            },
        };
        if !delivered {
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

/// Logs a refused inbound connection: WARN at most once a minute per remote IP, DEBUG otherwise.
fn refused(ctx: &InboundCtx, remote: SocketAddr, error: &dyn std::fmt::Display, what: &str) {
    match ctx.warn_limit.check(&remote.ip(), Instant::now()) {
        Some(suppressed) => warn!(%remote, %error, suppressed, "{what}"),
        None => debug!(%remote, %error, "{what}"),
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
    fn backoff_grows_to_the_cap_with_equal_jitter() {
        let mut backoff = MIN_BACKOFF;
        let mut steps = Vec::new();
        for _ in 0..10 {
            let slept = jittered(backoff);
            assert!(
                slept >= backoff / 2 && slept <= backoff,
                "{slept:?} vs {backoff:?}"
            );
            steps.push(backoff);
            backoff = grow(backoff);
        }
        assert_eq!(steps[0], Duration::from_millis(50));
        assert_eq!(steps[1], Duration::from_millis(100));
        assert_eq!(backoff, MAX_BACKOFF);
    }

    /// Two started validators, 0 and 1, pinning each other.
    async fn pair() -> (Network, Inbox, Network, Inbox) {
        let ids = [
            TlsIdentity::generate("validator-0").expect("identity"),
            TlsIdentity::generate("validator-1").expect("identity"),
        ];
        let loopback: SocketAddr = "127.0.0.1:0".parse().expect("addr");
        let (a, a_rx) = Network::start(
            NetworkConfig::new(loopback, ids[0].clone(), 0, Vec::new()),
            P2pMetrics::new(),
        )
        .await
        .expect("start probe");
        let a_addr = a.local_addr();
        a.shutdown().await;
        drop((a, a_rx));
        let (b, b_rx) = Network::start(
            NetworkConfig::new(
                loopback,
                ids[1].clone(),
                1,
                vec![PeerInfo {
                    index: 0,
                    cert_der: ids[0].cert_der.clone(),
                    address: a_addr.into(),
                }],
            ),
            P2pMetrics::new(),
        )
        .await
        .expect("start 1");
        let mut started = None;
        for _ in 0..60 {
            match Network::start(
                NetworkConfig::new(
                    a_addr,
                    ids[0].clone(),
                    0,
                    vec![PeerInfo {
                        index: 1,
                        cert_der: ids[1].cert_der.clone(),
                        address: b.local_addr().into(),
                    }],
                ),
                P2pMetrics::new(),
            )
            .await
            {
                Ok(net) => {
                    started = Some(net);
                    break;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
        let (a, a_rx) = started.expect("start 0 on its probed address");
        (a, a_rx, b, b_rx)
    }

    async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !condition() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Regression: a socket error that ended quinn's endpoint driver made `accept()` return
    /// `None`, which ended the accept loop and left the transport dead for good while the
    /// process lived on. Fix: without a requested shutdown, the accept loop rebinds a fresh
    /// endpoint on the same address and the outbound tasks dial through it. Closing the
    /// endpoint behind the network's back takes the same path as a dead driver.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lost_endpoint_is_rebound_and_traffic_resumes() {
        let (a, mut a_rx, b, mut b_rx) = pair().await;
        eventually("mesh", || {
            a.connected_peers() == 1 && b.connected_peers() == 1
        })
        .await;
        let addr = a.local_addr();

        if let Some(endpoint) = a.inner.endpoint.borrow().as_ref() {
            endpoint.close(VarInt::from_u32(7), b"simulated socket failure");
        }

        // Both directions recover, on the same address.
        let deadline = Instant::now() + Duration::from_secs(10);
        let (mut to_a, mut to_b) = (false, false);
        while !(to_a && to_b) {
            assert!(Instant::now() < deadline, "traffic did not resume");
            b.send(0, Arc::new(b"to a".to_vec()));
            a.send(1, Arc::new(b"to b".to_vec()));
            tokio::time::sleep(Duration::from_millis(100)).await;
            while let Ok(Inbound::Gossip { .. }) = a_rx.consensus.try_recv() {
                to_a = true;
            }
            while let Ok(Inbound::Gossip { .. }) = b_rx.consensus.try_recv() {
                to_b = true;
            }
        }
        let rebound = a.inner.endpoint.borrow().clone().expect("rebound endpoint");
        assert_eq!(rebound.local_addr().ok(), Some(addr));
        drop(rebound);
        assert!(a.is_running(), "a transient endpoint loss is not a stop");

        a.shutdown().await;
        assert_eq!(a.stopped().await, StopCause::Shutdown);
        assert!(!a.is_running());
        b.shutdown().await;
    }

    /// Regression: the owner had no way to learn that the transport had stopped on its own.
    /// Fix: a supervised task that ends without a shutdown (here: aborted, as after a panic)
    /// makes `stopped()` resolve with `StopCause::Failed` and `is_running()` return false.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_task_ending_on_its_own_is_reported_as_a_failed_stop() {
        let (a, _a_rx, b, _b_rx) = pair().await;
        assert!(a.is_running());
        let accept_loop = a
            .inner
            .tasks
            .lock()
            .ok()
            .and_then(|tasks| tasks.first().map(JoinHandle::abort_handle))
            .expect("accept loop task");
        accept_loop.abort();
        let cause = tokio::time::timeout(Duration::from_secs(5), a.stopped())
            .await
            .expect("stopped() resolves");
        match cause {
            StopCause::Failed(reason) => assert!(reason.contains("accept loop"), "{reason}"),
            other => panic!("expected a failed stop, got {other:?}"),
        }
        assert!(!a.is_running());
        a.shutdown().await;
        assert!(
            matches!(a.stopped().await, StopCause::Failed(_)),
            "first cause wins"
        );
        b.shutdown().await;
        assert_eq!(b.stopped().await, StopCause::Shutdown);
    }

    #[test]
    fn a_mismatched_key_fails_at_config_time() {
        let a = TlsIdentity::generate("validator-0").expect("identity");
        let b = TlsIdentity::generate("validator-1").expect("identity");
        let mixed = TlsIdentity::from_der(a.cert_der.clone(), b.key_der().to_vec());
        assert!(tls::client_config(&mixed, &b.cert_der).is_err());
        let garbage = TlsIdentity::from_der(a.cert_der.clone(), vec![1, 2, 3]);
        assert!(tls::server_config(&garbage, PinnedClients::default()).is_err());
    }
}
