//! Specification tests of the validator transport (`quasar_p2p`): real QUIC on 127.0.0.1.
//!
//! Each test names the behaviour it pins down; each finishes in a few seconds.

use std::collections::HashSet;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use quasar_p2p::tls::{client_crypto, quic_client_config, SERVER_NAME};
use quasar_p2p::{
    client_config, Inbound, Network, NetworkConfig, P2pError, P2pMetrics, PeerInfo, StopCause,
    TlsIdentity,
};
use quasar_wire::frame::{encode_frame, MAX_FRAME_LEN};
use tokio::sync::mpsc;
use tokio::time::{sleep, timeout, Instant};

const WAIT: Duration = Duration::from_secs(8);

/// A free UDP port on loopback (bound, read, released).
fn free_addr() -> SocketAddr {
    let socket = UdpSocket::bind("127.0.0.1:0").expect("bind probe socket");
    socket.local_addr().expect("probe address")
}

fn identity(index: u32) -> TlsIdentity {
    TlsIdentity::generate(&format!("validator-{index}")).expect("generate identity")
}

fn peer(index: u32, id: &TlsIdentity, address: SocketAddr) -> PeerInfo {
    PeerInfo {
        index,
        cert_der: id.cert_der.clone(),
        address: address.into(),
    }
}

/// A running validator transport plus the gossip it received. Requests are answered with
/// `re:` ‖ request.
struct Node {
    net: Network,
    metrics: P2pMetrics,
    gossip: mpsc::UnboundedReceiver<(u32, Vec<u8>)>,
    /// The transaction path's channel, left for the test to read (or not).
    transactions: mpsc::Receiver<Inbound>,
}

async fn start(index: u32, id: &TlsIdentity, listen: SocketAddr, peers: Vec<PeerInfo>) -> Node {
    start_with(index, id, listen, peers, |_| {}).await
}

async fn start_with(
    index: u32,
    id: &TlsIdentity,
    listen: SocketAddr,
    peers: Vec<PeerInfo>,
    tweak: impl Fn(&mut NetworkConfig),
) -> Node {
    let metrics = P2pMetrics::new();
    let deadline = Instant::now() + Duration::from_secs(3);
    let (net, inbox) = loop {
        let mut config = NetworkConfig::new(listen, id.clone(), index, peers.clone());
        tweak(&mut config);
        match Network::start(config, metrics.clone()).await {
            Ok(started) => break started,
            // A just-closed endpoint may hold the port for a moment.
            Err(P2pError::Bind { .. }) if Instant::now() < deadline => {
                sleep(Duration::from_millis(50)).await
            }
            Err(e) => panic!("start validator {index}: {e}"),
        }
    };
    Node {
        net,
        metrics,
        gossip: serve(inbox.consensus),
        transactions: inbox.transactions,
    }
}

fn serve(mut inbound: mpsc::Receiver<Inbound>) -> mpsc::UnboundedReceiver<(u32, Vec<u8>)> {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(msg) = inbound.recv().await {
            match msg {
                Inbound::Gossip { from, message } => {
                    let _ = tx.send((from, message));
                }
                Inbound::Request { message, reply, .. } => {
                    let _ = reply.send([b"re:".as_slice(), &message].concat());
                }
            }
        }
    });
    rx
}

async fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        sleep(Duration::from_millis(20)).await;
    }
}

/// Waits for gossip `(from, message)`, skipping anything else.
async fn expect_gossip(node: &mut Node, from: u32, message: &[u8]) {
    let found = timeout(WAIT, async {
        while let Some((f, m)) = node.gossip.recv().await {
            if f == from && m == message {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(
        found,
        Ok(true),
        "gossip {:?} from {from} not delivered",
        String::from_utf8_lossy(message)
    );
}

/// A bare quinn client endpoint on loopback.
fn raw_client() -> quinn::Endpoint {
    quinn::Endpoint::client("127.0.0.1:0".parse().expect("addr")).expect("client endpoint")
}

async fn cluster(n: u32) -> (Vec<TlsIdentity>, Vec<Node>) {
    let ids: Vec<TlsIdentity> = (0..n).map(identity).collect();
    let addrs: Vec<SocketAddr> = (0..n).map(|_| free_addr()).collect();
    let mut nodes = Vec::new();
    for i in 0..n {
        let peers = (0..n)
            .filter(|j| *j != i)
            .map(|j| peer(j, &ids[j as usize], addrs[j as usize]))
            .collect();
        nodes.push(start(i, &ids[i as usize], addrs[i as usize], peers).await);
    }
    for node in &nodes {
        let want = (n - 1) as usize;
        wait_until("full mesh", || node.net.connected_peers() == want).await;
    }
    (ids, nodes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_validators_gossip_in_every_direction_and_answer_requests() {
    let (_ids, mut nodes) = cluster(3).await;
    for node in &nodes {
        assert_eq!(node.metrics.connected_peers(), 2);
    }

    for i in 0..3u32 {
        for j in 0..3u32 {
            if i != j {
                nodes[i as usize]
                    .net
                    .send(j, Arc::new(format!("{i}->{j}").into_bytes()));
            }
        }
    }
    nodes[0]
        .net
        .broadcast(Arc::new(b"broadcast from 0".to_vec()));

    for j in 0..3u32 {
        let mut want: HashSet<(u32, Vec<u8>)> = (0..3u32)
            .filter(|i| *i != j)
            .map(|i| (i, format!("{i}->{j}").into_bytes()))
            .collect();
        if j != 0 {
            want.insert((0, b"broadcast from 0".to_vec()));
        }
        let node = &mut nodes[j as usize];
        let all = timeout(WAIT, async {
            while !want.is_empty() {
                match node.gossip.recv().await {
                    Some(got) => {
                        want.remove(&got);
                    }
                    None => break,
                }
            }
            want.is_empty()
        })
        .await;
        assert_eq!(all, Ok(true), "validator {j} missed gossip");
    }

    let reply = nodes[0]
        .net
        .request(1, b"ping".to_vec(), Duration::from_secs(3))
        .await
        .expect("request 0 -> 1");
    assert_eq!(reply, b"re:ping");
    let reply = nodes[2]
        .net
        .request(0, vec![7u8; 100_000], Duration::from_secs(3))
        .await
        .expect("request 2 -> 0");
    assert_eq!(reply.len(), 3 + 100_000);

    assert!(matches!(
        nodes[0]
            .net
            .request(9, b"x".to_vec(), Duration::from_secs(1))
            .await,
        Err(P2pError::UnknownPeer(9))
    ));
    for node in &nodes {
        assert_eq!(node.metrics.malformed_frames(), 0);
        assert_eq!(node.metrics.handshake_rejected(), 0);
        assert!(node.metrics.messages_received() >= 2);
    }
    for node in &nodes {
        node.net.shutdown().await;
    }
}

/// A client whose certificate is not pinned completes no connection and delivers nothing; the
/// server counts the rejected handshake.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unpinned_client_cannot_deliver_anything() {
    let server_id = identity(0);
    let pinned_id = identity(1);
    let mut server = start(
        0,
        &server_id,
        free_addr(),
        vec![peer(1, &pinned_id, free_addr())],
    )
    .await;

    let rogue = identity(66);
    let endpoint = raw_client();
    let config = client_config(&rogue, &server_id.cert_der).expect("client config");
    let attempt = async {
        let conn = endpoint
            .connect_with(config, server.net.local_addr(), SERVER_NAME)
            .expect("connect")
            .await?;
        // TLS 1.3 may let the client finish before the server rejects its certificate.
        let mut uni = conn.open_uni().await?;
        uni.write_all(
            &[
                [0u8].as_slice(),
                &encode_frame(b"forged vote").expect("frame"),
            ]
            .concat(),
        )
        .await?;
        uni.finish()?;
        let (mut send, mut recv) = conn.open_bi().await?;
        send.write_all(&encode_frame(b"forged request").expect("frame"))
            .await?;
        send.finish()?;
        recv.read_to_end(1024).await?;
        Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    };
    let outcome = timeout(Duration::from_secs(5), attempt).await;
    assert!(
        !matches!(outcome, Ok(Ok(()))),
        "an unpinned client got a reply"
    );

    wait_until("rejected handshake counted", || {
        server.metrics.handshake_rejected() >= 1
    })
    .await;
    sleep(Duration::from_millis(300)).await;
    assert!(server.gossip.try_recv().is_err(), "forged gossip delivered");
    assert_eq!(server.metrics.messages_received(), 0);
    server.net.shutdown().await;
}

/// A pinned validator that negotiates another ALPN than `zap/3` is refused during the
/// handshake, and the refusal is counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_alpn_is_rejected_even_with_a_pinned_identity() {
    let server_id = identity(0);
    let client_id = identity(1);
    let mut server = start(
        0,
        &server_id,
        free_addr(),
        vec![peer(1, &client_id, free_addr())],
    )
    .await;
    let mut crypto = client_crypto(&client_id, &server_id.cert_der).expect("client crypto");
    crypto.alpn_protocols = vec![b"h3".to_vec()];
    let config = quic_client_config(crypto).expect("quic config");
    let endpoint = raw_client();
    let result = timeout(
        Duration::from_secs(5),
        endpoint
            .connect_with(config, server.net.local_addr(), SERVER_NAME)
            .expect("connect"),
    )
    .await
    .expect("handshake finished");
    assert!(result.is_err(), "server accepted ALPN h3");
    wait_until("rejected handshake counted", || {
        server.metrics.handshake_rejected() >= 1
    })
    .await;
    assert!(server.gossip.try_recv().is_err());
    server.net.shutdown().await;
}

/// A client only accepts the certificate pinned for the validator it dials: dialing validator
/// 1's address while expecting validator 2's certificate fails, for a raw client and for a
/// network whose genesis entry is wrong.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dialing_an_address_with_the_wrong_pinned_certificate_fails() {
    let (ids, nodes) = cluster(2).await;
    let other = identity(2);

    // Raw client: validator 0's identity (pinned at 1) expecting validator 2's certificate.
    let endpoint = raw_client();
    let config = client_config(&ids[0], &other.cert_der).expect("client config");
    let result = timeout(
        Duration::from_secs(5),
        endpoint
            .connect_with(config, nodes[1].net.local_addr(), SERVER_NAME)
            .expect("connect"),
    )
    .await
    .expect("handshake finished");
    assert!(
        result.is_err(),
        "client accepted an unpinned server certificate"
    );

    // A network whose entry for peer 1 pins the wrong certificate never connects to it.
    let wrong = start(
        0,
        &ids[0],
        free_addr(),
        vec![peer(1, &other, nodes[1].net.local_addr())],
    )
    .await;
    let reply = wrong
        .net
        .request(1, b"hello".to_vec(), Duration::from_millis(1500))
        .await;
    assert!(
        matches!(reply, Err(P2pError::Timeout { peer: 1 })),
        "{reply:?}"
    );
    assert_eq!(wrong.net.connected_peers(), 0);
    assert!(wrong.metrics.handshake_rejected() >= 1);
    wrong.net.shutdown().await;
    for node in &nodes {
        node.net.shutdown().await;
    }
}

/// A pinned peer that sends an oversized length prefix, a truncated body, a truncated header
/// and a stream of no known path only loses those streams: each is counted as malformed, the node stays up, and gossip
/// from the same and from other peers keeps flowing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_frames_from_a_pinned_peer_are_counted_and_isolated() {
    let ids: Vec<TlsIdentity> = (0..3).map(identity).collect();
    let addrs: Vec<SocketAddr> = (0..3).map(|_| free_addr()).collect();
    // Validator 2 is the Byzantine one, driven by a raw quinn client.
    let mut a = start(
        0,
        &ids[0],
        addrs[0],
        vec![peer(1, &ids[1], addrs[1]), peer(2, &ids[2], addrs[2])],
    )
    .await;
    let b = start(1, &ids[1], addrs[1], vec![peer(0, &ids[0], addrs[0])]).await;
    wait_until("1 -> 0 connected", || b.net.connected_peers() == 1).await;

    let endpoint = raw_client();
    let config = client_config(&ids[2], &ids[0].cert_der).expect("client config");
    let conn = endpoint
        .connect_with(config, addrs[0], SERVER_NAME)
        .expect("connect")
        .await
        .expect("pinned peer connects");

    // (a) A length prefix one byte over 16 MiB.
    // Every gossip stream opens with its path's tag byte (0: consensus).
    let mut oversized = conn.open_uni().await.expect("uni");
    let prefix = ((MAX_FRAME_LEN + 1) as u32).to_le_bytes();
    oversized.write_all(&[0]).await.expect("write");
    oversized.write_all(&prefix).await.expect("write");
    // The receiver may already have stopped the stream (STOP_SENDING) after the prefix.
    let _ = oversized.write_all(&[0u8; 64]).await;
    wait_until("oversized prefix counted", || {
        a.metrics.malformed_frames() >= 1
    })
    .await;

    // (b) A frame announcing 100 bytes that ends after 10.
    let mut truncated = conn.open_uni().await.expect("uni");
    truncated
        .write_all(&[0, 100, 0, 0, 0])
        .await
        .expect("write");
    truncated.write_all(&[1u8; 10]).await.expect("write");
    truncated.finish().expect("finish");
    wait_until("truncated body counted", || {
        a.metrics.malformed_frames() >= 2
    })
    .await;

    // (c) A stream that ends inside the 4-byte prefix.
    let mut short = conn.open_uni().await.expect("uni");
    short.write_all(&[0, 5, 0]).await.expect("write");
    short.finish().expect("finish");
    wait_until("truncated header counted", || {
        a.metrics.malformed_frames() >= 3
    })
    .await;

    // (d) A stream whose tag byte names no path.
    let mut untagged = conn.open_uni().await.expect("uni");
    let _ = untagged
        .write_all(&[[7u8].as_slice(), &encode_frame(b"no path").expect("frame")].concat())
        .await;
    wait_until("unknown path counted", || a.metrics.malformed_frames() >= 4).await;

    // The same peer still gets a well-formed message through on a new stream…
    let mut good = conn.open_uni().await.expect("uni");
    good.write_all(
        &[
            [0u8].as_slice(),
            &encode_frame(b"honest again").expect("frame"),
        ]
        .concat(),
    )
    .await
    .expect("write");
    good.finish().expect("finish");
    expect_gossip(&mut a, 2, b"honest again").await;

    // …and can still make requests on this connection.
    let (mut send, mut recv) = conn.open_bi().await.expect("bi");
    send.write_all(&encode_frame(b"q").expect("frame"))
        .await
        .expect("write");
    send.finish().expect("finish");
    let reply = recv.read_to_end(1024).await.expect("reply");
    assert_eq!(reply, encode_frame(b"re:q").expect("frame"));

    // Other peers are unaffected.
    b.net.send(0, Arc::new(b"from an honest peer".to_vec()));
    expect_gossip(&mut a, 1, b"from an honest peer").await;
    assert_eq!(a.metrics.malformed_frames(), 4);

    // The runtime reports ZAP decode failures through the same counter.
    a.metrics.record_malformed();
    assert_eq!(a.metrics.malformed_frames(), 5);

    conn.close(0u32.into(), b"done");
    a.net.shutdown().await;
    b.net.shutdown().await;
}

/// A validator that restarts on the same address with the same identity is redialed: later
/// gossip and requests reach the new process in both directions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarted_peer_is_reconnected_and_receives_later_messages() {
    let ids = [identity(0), identity(1)];
    let addrs = [free_addr(), free_addr()];
    let mut a = start(0, &ids[0], addrs[0], vec![peer(1, &ids[1], addrs[1])]).await;
    let mut b = start(1, &ids[1], addrs[1], vec![peer(0, &ids[0], addrs[0])]).await;
    wait_until("0 -> 1 connected", || a.net.connected_peers() == 1).await;
    wait_until("1 -> 0 connected", || b.net.connected_peers() == 1).await;
    a.net.send(1, Arc::new(b"before".to_vec()));
    expect_gossip(&mut b, 0, b"before").await;

    b.net.shutdown().await;
    drop(b);
    wait_until("0 notices 1 is gone", || a.net.connected_peers() == 0).await;

    let mut b = start(1, &ids[1], addrs[1], vec![peer(0, &ids[0], addrs[0])]).await;
    // Consensus retransmits; so does this test, until the redial has happened.
    let delivered = timeout(WAIT, async {
        loop {
            a.net.send(1, Arc::new(b"after restart".to_vec()));
            if let Ok(Some((0, m))) = timeout(Duration::from_millis(100), b.gossip.recv()).await {
                if m == b"after restart" {
                    return;
                }
            }
        }
    })
    .await;
    assert!(delivered.is_ok(), "restarted peer never received gossip");

    b.net.send(0, Arc::new(b"hello again".to_vec()));
    expect_gossip(&mut a, 1, b"hello again").await;
    let reply = a
        .net
        .request(1, b"still there?".to_vec(), Duration::from_secs(3))
        .await
        .expect("request after restart");
    assert_eq!(reply, b"re:still there?");
    assert_eq!(a.metrics.malformed_frames(), 0);
    a.net.shutdown().await;
    b.net.shutdown().await;
}

/// Regression: a validator whose certificate the others do not pin redialed every ~50 ms
/// forever, because in TLS 1.3 its own handshake completes before the server checks its
/// certificate: it logged "outbound connection up" and reset its backoff before the rejection
/// arrived (~40 rejected handshakes in 2 s, and as many server WARN lines). Fix: a dial counts
/// only once the server confirmed the handshake (HANDSHAKE_DONE, RFC 9001 §4.1.2), so the
/// backoff keeps growing 50 ms → 2 s (jittered); the server still counts every rejection but
/// rate-limits its WARN line per remote address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unpinned_validator_backs_off_instead_of_redialing_every_50ms() {
    let server_id = identity(0);
    let pinned_id = identity(1);
    let server = start(
        0,
        &server_id,
        free_addr(),
        vec![peer(1, &pinned_id, free_addr())],
    )
    .await;
    // Same index as the pinned validator, but another key: the server must refuse it.
    let rogue_id = identity(66);
    let rogue = start(
        1,
        &rogue_id,
        free_addr(),
        vec![peer(0, &server_id, server.net.local_addr())],
    )
    .await;

    let window = Instant::now() + Duration::from_secs(2);
    while Instant::now() < window {
        assert_eq!(
            rogue.net.connected_peers(),
            0,
            "a refused connection was reported as up"
        );
        sleep(Duration::from_millis(10)).await;
    }
    let rejected = server.metrics.handshake_rejected();
    assert!(
        rejected >= 2,
        "the rogue kept retrying: {rejected} attempts"
    );
    assert!(
        rejected <= 10,
        "{rejected} rejected handshakes in 2 s: no backoff (expected ~7 at most)"
    );
    assert_eq!(server.metrics.messages_received(), 0);
    assert!(rogue.net.is_running() && server.net.is_running());
    rogue.net.shutdown().await;
    server.net.shutdown().await;
}

/// A peer that closes its connection leaves `connected_peers` (and the gauge) at once, without
/// waiting for the 5 s idle timeout; `stopped()` reports an orderly shutdown as such, and the
/// surviving node keeps running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_peer_leaves_connected_peers_and_shutdown_resolves_stopped() {
    let (_ids, nodes) = cluster(2).await;
    assert!(nodes[1].net.is_running());
    let closed_at = Instant::now();
    nodes[1].net.shutdown().await;
    assert_eq!(
        timeout(Duration::from_secs(1), nodes[1].net.stopped()).await,
        Ok(StopCause::Shutdown)
    );
    assert!(!nodes[1].net.is_running());
    wait_until("0 drops the closed peer", || {
        nodes[0].net.connected_peers() == 0 && nodes[0].metrics.connected_peers() == 0
    })
    .await;
    assert!(
        closed_at.elapsed() < Duration::from_secs(4),
        "the closed peer was counted until the idle timeout"
    );
    assert!(
        nodes[0].net.is_running(),
        "a lost peer does not stop the network"
    );
    nodes[0].net.shutdown().await;
}

/// Starts validator `index` on a runtime of its own, so that the test can kill it: dropping
/// that runtime drops every task of the transport (quinn's endpoint and connection drivers
/// included) without sending anything, as SIGKILL would. Only then is the `Network` handle
/// dropped: its `close` wakes drivers that no longer exist, so no CONNECTION_CLOSE leaves and
/// the peers' connections to it stay up until the idle timeout, while the socket is released.
fn start_killable(
    index: u32,
    id: &TlsIdentity,
    listen: SocketAddr,
    peers: Vec<PeerInfo>,
) -> (tokio::runtime::Runtime, Node) {
    let id = id.clone();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime of the killable validator");
        let node = runtime.block_on(start(index, &id, listen, peers));
        (runtime, node)
    })
    .join()
    .expect("start the killable validator")
}

/// Kills a validator started by [`start_killable`] (see there).
async fn kill(runtime: tokio::runtime::Runtime, node: Node) {
    tokio::task::spawn_blocking(move || drop(runtime))
        .await
        .expect("drop the killed validator's runtime");
    drop(node);
}

/// Regression: a validator killed (no close) and restarted on the same address and identity
/// received no gossip from the others for up to the 5 s idle timeout, because their outbound
/// connections to the dead process still looked up (the new process cannot send them an
/// authenticated stateless reset) and swallowed everything. Fix: an inbound connection from a
/// peer whose outbound connection is older than 2 s (`REDIAL_AFTER`) makes the outbound task
/// redial at once. The kill is simulated by dropping the validator's tokio runtime before its
/// `Network` handle (see `start_killable`); the test checks that this does reproduce the stale
/// connections before it restarts the validator.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_and_restarted_peer_gets_gossip_at_once_not_after_the_idle_timeout() {
    let ids: Vec<TlsIdentity> = (0..3).map(identity).collect();
    let addrs: Vec<SocketAddr> = (0..3).map(|_| free_addr()).collect();
    let peers_of = |i: u32| -> Vec<PeerInfo> {
        (0..3u32)
            .filter(|j| *j != i)
            .map(|j| peer(j, &ids[j as usize], addrs[j as usize]))
            .collect()
    };
    let a = start(0, &ids[0], addrs[0], peers_of(0)).await;
    let b = start(1, &ids[1], addrs[1], peers_of(1)).await;
    let (c_runtime, mut c) = start_killable(2, &ids[2], addrs[2], peers_of(2));
    for node in [&a, &b, &c] {
        wait_until("full mesh", || node.net.connected_peers() == 2).await;
    }
    a.net.send(2, Arc::new(b"before".to_vec()));
    expect_gossip(&mut c, 0, b"before").await;

    kill(c_runtime, c).await;
    let killed_at = Instant::now();
    sleep(Duration::from_millis(2500)).await;
    // The kill left A's and B's connections to C looking up: the problem being fixed.
    assert_eq!(a.net.connected_peers(), 2, "the kill closed A's connection");
    assert_eq!(b.net.connected_peers(), 2, "the kill closed B's connection");

    let mut c = start(2, &ids[2], addrs[2], peers_of(2)).await;
    let restarted_at = Instant::now();
    // Consensus retransmits; so does this test, every 50 ms.
    let (mut from_a, mut from_b) = (false, false);
    let bound = Duration::from_millis(1500);
    while !(from_a && from_b) {
        assert!(
            restarted_at.elapsed() < bound,
            "restarted peer got gossip from A: {from_a}, from B: {from_b} within {bound:?} \
             (the idle timeout would free the old connections {:?} after the kill)",
            Duration::from_secs(5)
        );
        a.net.send(2, Arc::new(b"from a".to_vec()));
        b.net.send(2, Arc::new(b"from b".to_vec()));
        sleep(Duration::from_millis(50)).await;
        while let Ok((from, message)) = c.gossip.try_recv() {
            from_a |= from == 0 && message == b"from a";
            from_b |= from == 1 && message == b"from b";
        }
    }
    assert!(
        killed_at.elapsed() < Duration::from_millis(4500),
        "delivery only happened around the idle timeout"
    );

    // Exactly one redial on each side of the restart, and none by the restarted validator
    // (A's and B's new connections found its outbound connections young).
    sleep(Duration::from_millis(1000)).await;
    assert_eq!(a.metrics.redials(), 1);
    assert_eq!(b.metrics.redials(), 1);
    assert_eq!(c.metrics.redials(), 0);
    assert_eq!(c.metrics.outbound_connections(), 2);
    // The restarted validator reaches the others too.
    c.net.broadcast(Arc::new(b"from c".to_vec()));
    let mut a = a;
    expect_gossip(&mut a, 2, b"from c").await;
    for node in [&a, &b, &c] {
        assert_eq!(node.net.connected_peers(), 2);
        assert_eq!(node.metrics.malformed_frames(), 0);
    }
    for node in [&a, &b, &c] {
        node.net.shutdown().await;
    }
}

/// The redial-on-reconnect rule causes no redial storm: in a fresh network, every inbound
/// connection finds the receiver's own outbound connection young, so over 3 s each validator
/// establishes at most about one outbound connection per peer (at most 2 per peer allowed) and
/// redials none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_network_does_not_redial_in_a_loop() {
    let (_ids, nodes) = cluster(3).await;
    let window = Instant::now() + Duration::from_secs(3);
    while Instant::now() < window {
        for node in &nodes {
            assert_eq!(node.net.connected_peers(), 2, "a connection went down");
        }
        sleep(Duration::from_millis(20)).await;
    }
    for node in &nodes {
        let established = node.metrics.outbound_connections();
        assert!(
            (2..=4).contains(&established),
            "{established} outbound connections to 2 peers in 3 s"
        );
        assert_eq!(node.metrics.redials(), 0);
    }
    for node in &nodes {
        node.net.shutdown().await;
    }
}

/// Issue 29: peers given by host name (`localhost:PORT`, as a Kubernetes Service name would be)
/// are resolved at each dial and connect like IP literals. A name that does not resolve is a
/// failed dial, retried with the backoff while the network keeps running; a name that leads to
/// a server that is not the pinned validator is refused by the TLS check, as an IP literal
/// would be, so a name never weakens authentication.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peers_by_host_name_connect_and_still_need_the_pinned_certificate() {
    let ids: Vec<TlsIdentity> = (0..3).map(identity).collect();
    let addrs: Vec<SocketAddr> = (0..3).map(|_| free_addr()).collect();
    let named = |j: u32, name: String| PeerInfo {
        index: j,
        cert_der: ids[j as usize].cert_der.clone(),
        address: name.parse().expect("host:port"),
    };
    let localhost = |i: usize| format!("localhost:{}", addrs[i].port());
    // 0 and 1 know each other by name; 0 knows 2 by a name that never resolves (RFC 2606 §2);
    // 2 knows 1 by a name that leads to 0.
    let unresolvable = named(2, "validator-2.invalid:9000".into());
    let mut a = start(
        0,
        &ids[0],
        addrs[0],
        vec![named(1, localhost(1)), unresolvable],
    )
    .await;
    let mut b = start(1, &ids[1], addrs[1], vec![named(0, localhost(0))]).await;
    let c = start(2, &ids[2], addrs[2], vec![named(1, localhost(0))]).await;

    wait_until("0 and 1 connected by name", || {
        a.net.connected_peers() == 1 && b.net.connected_peers() == 1
    })
    .await;
    a.net.send(1, Arc::new(b"by name".to_vec()));
    expect_gossip(&mut b, 0, b"by name").await;
    b.net.send(0, Arc::new(b"back".to_vec()));
    expect_gossip(&mut a, 1, b"back").await;

    wait_until("2 refuses 0 posing as 1", || {
        c.metrics.handshake_rejected() >= 1
    })
    .await;
    assert_eq!(c.net.connected_peers(), 0);
    assert!(
        a.net.is_running(),
        "an unresolvable peer name stopped the network"
    );
    assert_eq!(a.net.connected_peers(), 1);
    for node in [&a, &b, &c] {
        node.net.shutdown().await;
    }
}

/// Transaction traffic never holds back consensus: with the receiver's transaction channel
/// full and never read, a flood of transaction batches is dropped (counted at both ends) while
/// consensus messages sent after the flood still arrive, and the batches that fit in the
/// transaction channel arrived on it, not on the consensus channel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_transactions_never_holds_back_consensus_messages() {
    let ids: Vec<TlsIdentity> = (0..2).map(identity).collect();
    let addrs: Vec<SocketAddr> = (0..2).map(|_| free_addr()).collect();
    let a = start(0, &ids[0], addrs[0], vec![peer(1, &ids[1], addrs[1])]).await;
    let mut b = start_with(
        1,
        &ids[1],
        addrs[1],
        vec![peer(0, &ids[0], addrs[0])],
        |c| {
            c.transaction_queue = 4;
        },
    )
    .await;
    wait_until("connected", || {
        a.net.connected_peers() == 1 && b.net.connected_peers() == 1
    })
    .await;
    let batch = Arc::new(vec![7u8; 64 * 1024]);
    for round in 0..20u32 {
        for _ in 0..200 {
            a.net.broadcast_transactions(Arc::clone(&batch));
        }
        a.net
            .send(1, Arc::new(format!("vote {round}").into_bytes()));
    }
    for round in 0..20u32 {
        expect_gossip(&mut b, 0, format!("vote {round}").as_bytes()).await;
    }
    wait_until("transactions dropped at the receiver", || {
        b.metrics.inbound_dropped() > 0
    })
    .await;
    assert!(
        a.metrics.outbound_dropped() > 0,
        "the sender's queue overflowed too"
    );
    // The channel is full (the reader keeps refilling it as this drains it).
    let mut arrived = 0;
    while let Ok(Inbound::Gossip { from: 0, message }) = b.transactions.try_recv() {
        assert_eq!(message, *batch);
        arrived += 1;
    }
    assert!(
        arrived >= 4,
        "{arrived} batches on the transaction channel, capacity 4"
    );
    a.net.shutdown().await;
    b.net.shutdown().await;
}

/// Validators 0 and 1 start knowing only each other; validator 2 starts knowing both; 0 and 1
/// then add 2 with `set_peers`, without a restart. Returns once the three form a full mesh.
async fn third_validator_joins() -> (Vec<TlsIdentity>, Vec<SocketAddr>, Vec<Node>) {
    let ids: Vec<TlsIdentity> = (0..3).map(identity).collect();
    let addrs: Vec<SocketAddr> = (0..3).map(|_| free_addr()).collect();
    let peers_of = |i: u32, set: &[u32]| -> Vec<PeerInfo> {
        set.iter()
            .filter(|j| **j != i)
            .map(|&j| peer(j, &ids[j as usize], addrs[j as usize]))
            .collect()
    };
    let a = start(0, &ids[0], addrs[0], peers_of(0, &[1])).await;
    let b = start(1, &ids[1], addrs[1], peers_of(1, &[0])).await;
    wait_until("0 and 1 connected", || {
        a.net.all_peers_connected() && b.net.all_peers_connected()
    })
    .await;
    let c = start(2, &ids[2], addrs[2], peers_of(2, &[0, 1])).await;
    a.net
        .set_peers(peers_of(0, &[1, 2]))
        .expect("0 adds validator 2");
    b.net
        .set_peers(peers_of(1, &[0, 2]))
        .expect("1 adds validator 2");
    for node in [&a, &b, &c] {
        wait_until("full mesh with the new validator", || {
            node.net.connected_peers() == 2
        })
        .await;
    }
    (ids, addrs, vec![a, b, c])
}

/// Validators register on chain after genesis: a validator that 0 and 1 add with `set_peers`
/// while running (they started without it) exchanges gossip and requests with both, in both
/// directions, and the link between 0 and 1 keeps working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_validator_added_at_runtime_gossips_and_answers_requests_both_ways() {
    let (_ids, _addrs, mut nodes) = third_validator_joins().await;
    for (i, node) in nodes.iter().enumerate() {
        let others: Vec<u32> = (0..3).filter(|j| *j != i as u32).collect();
        assert_eq!(node.net.peer_indices(), others);
        assert!(node.net.all_peers_connected());
    }

    // One message in flight per receiver at a time: `expect_gossip` skips what it is not after.
    nodes[2].net.broadcast(Arc::new(b"hello from 2".to_vec()));
    expect_gossip(&mut nodes[0], 2, b"hello from 2").await;
    expect_gossip(&mut nodes[1], 2, b"hello from 2").await;
    nodes[0].net.send(2, Arc::new(b"0 welcomes 2".to_vec()));
    expect_gossip(&mut nodes[2], 0, b"0 welcomes 2").await;
    nodes[1].net.send(2, Arc::new(b"1 welcomes 2".to_vec()));
    expect_gossip(&mut nodes[2], 1, b"1 welcomes 2").await;
    nodes[0].net.send(1, Arc::new(b"0 to 1 as before".to_vec()));
    expect_gossip(&mut nodes[1], 0, b"0 to 1 as before").await;

    for (from, to) in [(2u32, 0u32), (0, 2), (2, 1), (1, 2)] {
        let question = format!("{from} asks {to}").into_bytes();
        let reply = nodes[from as usize]
            .net
            .request(to, question.clone(), Duration::from_secs(3))
            .await
            .unwrap_or_else(|e| panic!("request {from} -> {to}: {e}"));
        assert_eq!(reply, [b"re:".as_slice(), &question].concat());
    }
    for node in &nodes {
        assert_eq!(node.metrics.malformed_frames(), 0);
        node.net.shutdown().await;
    }
}

/// A validator that leaves the set is cut off: once 0 drops 2 with `set_peers`, 0 no longer
/// lists it, refuses to send to it (unknown peer), closes its connections and refuses its new
/// handshakes (the TLS verifier reads the changed pinned set), so nothing 2 sends reaches 0
/// within the deadline. 1, which keeps 2, still hears from it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_validator_is_disconnected_and_refused() {
    let (ids, addrs, mut nodes) = third_validator_joins().await;
    nodes[0]
        .net
        .set_peers(vec![peer(1, &ids[1], addrs[1])])
        .expect("0 removes validator 2");
    assert_eq!(nodes[0].net.peer_indices(), vec![1]);
    assert!(matches!(
        nodes[0]
            .net
            .request(2, b"x".to_vec(), Duration::from_secs(1))
            .await,
        Err(P2pError::UnknownPeer(2))
    ));
    let dropped = nodes[0].metrics.outbound_dropped();
    nodes[0]
        .net
        .send(2, Arc::new(b"to a removed peer".to_vec()));
    assert_eq!(nodes[0].metrics.outbound_dropped(), dropped + 1);

    wait_until("2 loses its connection to 0", || {
        nodes[2].net.connected_peers() == 1
    })
    .await;
    let rejected = nodes[0].metrics.handshake_rejected();
    let deadline = Instant::now() + Duration::from_millis(1500);
    while Instant::now() < deadline {
        nodes[2].net.send(0, Arc::new(b"after removal".to_vec()));
        let reply = nodes[2]
            .net
            .request(0, b"still there?".to_vec(), Duration::from_millis(100))
            .await;
        assert!(reply.is_err(), "0 answered a removed validator");
        sleep(Duration::from_millis(50)).await;
    }
    assert!(
        nodes[0].metrics.handshake_rejected() > rejected,
        "2 redialed 0 without its handshake being refused"
    );
    assert_eq!(nodes[2].net.connected_peers(), 1);
    while let Ok((from, message)) = nodes[0].gossip.try_recv() {
        assert_ne!(
            from,
            2,
            "gossip from a removed validator: {:?}",
            String::from_utf8_lossy(&message)
        );
    }

    assert!(nodes[0].net.all_peers_connected());
    assert!(
        nodes[0].net.is_running(),
        "a removed peer's task ending is not a stop"
    );
    nodes[2]
        .net
        .send(1, Arc::new(b"2 still talks to 1".to_vec()));
    expect_gossip(&mut nodes[1], 2, b"2 still talks to 1").await;
    nodes[0]
        .net
        .send(1, Arc::new(b"0 still talks to 1".to_vec()));
    expect_gossip(&mut nodes[1], 0, b"0 still talks to 1").await;
    for node in &nodes {
        node.net.shutdown().await;
    }
}

/// `set_peers` checks a new set as `start` checks the first one: a set that pins one
/// certificate for two indices, or that contains this validator's index, is refused with
/// `P2pError::Config` and changes nothing (the new validator in it is not pinned, the current
/// connection stays). Setting the current set again is a no-op: no connection is restarted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_peer_set_is_refused_and_the_current_set_is_a_no_op() {
    let (ids, mut nodes) = cluster(2).await;
    let current = peer(1, &ids[1], nodes[1].net.local_addr());
    let newcomer = identity(2);
    let connections = nodes[0].metrics.outbound_connections();
    let duplicate_certificate = vec![
        current.clone(),
        peer(2, &newcomer, free_addr()),
        peer(3, &ids[1], free_addr()),
    ];
    let with_my_index = vec![
        current.clone(),
        peer(2, &newcomer, free_addr()),
        peer(0, &identity(3), free_addr()),
    ];
    for refused in [duplicate_certificate, with_my_index] {
        let result = nodes[0].net.set_peers(refused);
        assert!(matches!(result, Err(P2pError::Config(_))), "{result:?}");
        assert_eq!(nodes[0].net.peer_indices(), vec![1]);
    }
    nodes[0]
        .net
        .set_peers(vec![current])
        .expect("the current set again");
    assert_eq!(nodes[0].net.peer_indices(), vec![1]);

    // The newcomer of the refused sets was never pinned.
    let endpoint = raw_client();
    let config = client_config(&newcomer, &ids[0].cert_der).expect("client config");
    let attempt = timeout(
        Duration::from_secs(5),
        endpoint
            .connect_with(config, nodes[0].net.local_addr(), SERVER_NAME)
            .expect("connect"),
    )
    .await;
    if let Ok(Ok(conn)) = attempt {
        // TLS 1.3 may let the client finish before the server refuses its certificate.
        let _ = timeout(Duration::from_secs(5), conn.closed()).await;
    }
    wait_until("the newcomer's handshake refused", || {
        nodes[0].metrics.handshake_rejected() >= 1
    })
    .await;

    sleep(Duration::from_millis(300)).await;
    assert!(nodes[0].net.all_peers_connected());
    assert_eq!(
        nodes[0].metrics.outbound_connections(),
        connections,
        "a connection was restarted"
    );
    nodes[0].net.send(1, Arc::new(b"unchanged".to_vec()));
    expect_gossip(&mut nodes[1], 0, b"unchanged").await;
    for node in &nodes {
        node.net.shutdown().await;
    }
}

/// A known validator's new address (same index and certificate) is dialed from the next dial
/// on: 0 first knows 1 at the address of another validator, whose certificate fails the pinned
/// check, and reaches 1 once `set_peers` gives the right address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_address_change_is_dialed_from_the_next_dial_on() {
    let ids: Vec<TlsIdentity> = (0..3).map(identity).collect();
    let addrs: Vec<SocketAddr> = (0..2).map(|_| free_addr()).collect();
    let decoy = start(2, &ids[2], free_addr(), Vec::new()).await;
    let a = start(
        0,
        &ids[0],
        addrs[0],
        vec![peer(1, &ids[1], decoy.net.local_addr())],
    )
    .await;
    let mut b = start(1, &ids[1], addrs[1], vec![peer(0, &ids[0], addrs[0])]).await;
    wait_until("0 refuses the server at the wrong address", || {
        a.metrics.handshake_rejected() >= 1
    })
    .await;
    assert_eq!(a.net.connected_peers(), 0);

    a.net
        .set_peers(vec![peer(1, &ids[1], addrs[1])])
        .expect("new address");
    wait_until("0 reaches 1 at its new address", || {
        a.net.connected_peers() == 1
    })
    .await;
    a.net.send(1, Arc::new(b"found you".to_vec()));
    expect_gossip(&mut b, 0, b"found you").await;
    for node in [&a, &b, &decoy] {
        node.net.shutdown().await;
    }
}
