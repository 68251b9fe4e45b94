//! thresholdd against slow and stalled clients.
//!
//! Regression (attacker trial): 110 connections that sent request headers, or part of them, or
//! headers and part of a body, and then stalled, held all 100 of jsonrpsee's slots for over
//! 100 s, and every other caller got HTTP 429. The fix (`http_serve`) gives each part of a
//! request a deadline: a head with the token (`header_read_timeout` from the accept), later
//! heads and idle keep-alive waits of a connection that showed the token (`idle_timeout`), the
//! whole body (`body_read_timeout`, HTTP 408) and each response write. These tests run the
//! daemon with deadlines of one to two seconds and check that stalled clients are dropped,
//! that an honest caller is answered meanwhile, and that stopping does not wait on them.
//!
//! Regression (reliability campaign): with 200 connections that sent part of a head and
//! stalled, the accept loop waited for one of 100 slots to free at the 10 s head deadline, a
//! `health` call was answered after 29 s and the node's remote signer (2 s timeout) missed its
//! votes. The fix admits connections in two classes (`http_serve`, "Admission"): the oldest
//! connection without the token is closed to make room for a new one, and connections that
//! showed the token have a budget of their own.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quasar_crypto::bls::SecretKey;
use quasar_node::remote_signer::{RemoteSignError, RemoteSigner, RemoteSignerTarget};
use quasar_thresholdd::keystore::{KdfParams, Keystore};
use quasar_thresholdd::{self as thresholdd, Daemon, DaemonConfig, TransportLimits};
use quasar_wire::{EpochDomain, Vote, VoteKind};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use zeroize::Zeroizing;

const TOKEN: &str = "slow-clients-test-token-0123456789";
const PASSPHRASE: &[u8] = b"correct horse battery staple";
const HEADER_TIMEOUT: Duration = Duration::from_secs(1);
const IDLE_TIMEOUT: Duration = Duration::from_secs(2);
const BODY_TIMEOUT: Duration = Duration::from_secs(2);
/// The node's default `remote_signer.timeout_ms`.
const SIGNER_TIMEOUT: Duration = Duration::from_secs(2);

/// The production connection limits with test-sized deadlines.
fn limits() -> TransportLimits {
    TransportLimits {
        header_read_timeout: HEADER_TIMEOUT,
        idle_timeout: IDLE_TIMEOUT,
        body_read_timeout: BODY_TIMEOUT,
        write_stall_timeout: Duration::from_secs(2),
        ..thresholdd::transport_limits()
    }
}

fn config(dir: &Path) -> DaemonConfig {
    DaemonConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        allow_remote: false,
        data_dir: dir.to_path_buf(),
        token: Zeroizing::new(TOKEN.to_string()),
        passphrase: Zeroizing::new(PASSPHRASE.to_vec()),
        kdf: KdfParams::for_tests(),
        request_timeout: Duration::from_secs(30),
        metrics_listen: None,
    }
}

async fn start(dir: &Path) -> Daemon {
    thresholdd::start_with_limits(config(dir), limits())
        .await
        .unwrap()
}

/// An authenticated `health` call on a fresh connection: the HTTP status and the JSON body.
async fn health(addr: SocketAddr) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "health", "params": {}});
    let response = reqwest::Client::new()
        .post(format!("http://{addr}/"))
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// Opens a connection and sends `bytes`, then leaves it stalled.
async fn stall(addr: SocketAddr, bytes: &[u8]) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(bytes).await.unwrap();
    stream
}

/// A request head with the token announcing a `content_length`-byte JSON body.
fn head(content_length: usize) -> String {
    format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: {content_length}\r\n\r\n"
    )
}

/// Reads until the server closes `stream` (end of stream or a reset), failing the test if it
/// is still open at `deadline`; what the server sent before closing.
async fn read_until_closed(stream: &mut TcpStream, deadline: Instant) -> Vec<u8> {
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Err(_) => panic!(
                "the server kept a stalled connection open; it sent {:?}",
                String::from_utf8_lossy(&received)
            ),
            Ok(Ok(0)) | Ok(Err(_)) => return received,
            Ok(Ok(n)) => received.extend_from_slice(&buf[..n]),
        }
    }
}

/// The attacker trial's 110 stalled connections (10 with half a head, 50 with a head and no
/// body, 50 with a head and part of the body: more than the 100 slots, and 100 of them past
/// the head, which is what held jsonrpsee's slots). An honest `health` call is answered within
/// a few deadlines, every stalled connection is closed, and a stalled body gets HTTP 408.
#[tokio::test]
async fn stalled_clients_are_dropped_and_an_honest_caller_is_answered() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start(dir.path()).await;
    let addr = daemon.local_addr;

    let opened = Instant::now();
    let mut partial_heads = Vec::new();
    for _ in 0..10 {
        partial_heads.push(stall(addr, b"POST / HTTP/1.1\r\nHost: localhost\r\nAuthoriz").await);
    }
    let mut stalled_bodies = Vec::new();
    for _ in 0..50 {
        stalled_bodies.push(stall(addr, head(100).as_bytes()).await);
    }
    for _ in 0..50 {
        let partial = format!("{}{{\"jsonrpc\":\"2.0\",", head(100));
        stalled_bodies.push(stall(addr, partial.as_bytes()).await);
    }

    // The honest caller queues behind them and is served once stalled ones are dropped.
    let asked = Instant::now();
    let (status, reply) = tokio::time::timeout(Duration::from_secs(10), health(addr))
        .await
        .expect("health is answered within 10 s despite 110 stalled connections");
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["result"]["status"], "ok", "{reply}");
    assert!(asked.elapsed() < Duration::from_secs(10));

    // Every stalled connection is closed: all within a few rounds of the deadlines.
    let deadline = opened + Duration::from_secs(15);
    for stream in &mut partial_heads {
        let sent = read_until_closed(stream, deadline).await;
        let text = String::from_utf8_lossy(&sent);
        assert!(
            sent.is_empty() || text.starts_with("HTTP/1.1 408"),
            "{text}"
        );
    }
    for stream in &mut stalled_bodies {
        let sent = read_until_closed(stream, deadline).await;
        let text = String::from_utf8_lossy(&sent);
        assert!(
            text.starts_with("HTTP/1.1 408"),
            "a stalled body is answered 408: {text}"
        );
    }

    // Nothing is left holding a slot: a second call is answered at once.
    let again = Instant::now();
    let (status, _) = health(addr).await;
    assert_eq!(status, 200);
    assert!(again.elapsed() < BODY_TIMEOUT, "{:?}", again.elapsed());

    daemon.handle.stop().unwrap();
    daemon.handle.stopped().await;
}

/// A client that trickles its body, one byte every 200 ms, makes progress yet never finishes
/// a 1000-byte body: the body deadline counts the whole body, so it gets 408 at about
/// `BODY_TIMEOUT`, not after 200 s.
#[tokio::test]
async fn a_trickled_body_is_cut_off_at_the_body_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start(dir.path()).await;
    // jsonrpsee wants the body's first non-blank byte in its first chunk: `{`, then blanks.
    let mut stream = stall(daemon.local_addr, format!("{}{{", head(1000)).as_bytes()).await;
    let started = Instant::now();
    let mut received = Vec::new();
    let mut buf = [0u8; 1024];
    let closed_at = loop {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "still open after 10 s"
        );
        // Stop writing once the answer starts: bytes the server no longer reads would make it
        // reset the connection.
        if received.is_empty() && stream.write_all(b" ").await.is_err() {
            break started.elapsed();
        }
        match tokio::time::timeout(Duration::from_millis(200), stream.read(&mut buf)).await {
            Err(_) => {}
            Ok(Ok(0)) | Ok(Err(_)) => break started.elapsed(),
            Ok(Ok(n)) => received.extend_from_slice(&buf[..n]),
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), stream.read_to_end(&mut received)).await;
    let text = String::from_utf8_lossy(&received);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(
        closed_at >= BODY_TIMEOUT - Duration::from_millis(200),
        "{closed_at:?}"
    );
    daemon.handle.stop().unwrap();
    daemon.handle.stopped().await;
}

/// A keep-alive connection that showed the token stays open for a next request, but not for
/// ever: once idle for the idle deadline it is closed, so idle clients do not hold slots.
#[tokio::test]
async fn an_idle_authenticated_connection_is_closed_after_the_idle_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start(dir.path()).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "health", "params": {}}).to_string();
    let mut stream = stall(
        daemon.local_addr,
        format!("{}{body}", head(body.len())).as_bytes(),
    )
    .await;
    // The answer arrives and the connection stays open after it.
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    let answered = loop {
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
            .await
            .expect("answered")
            .unwrap();
        assert_ne!(n, 0, "closed before the answer");
        received.extend_from_slice(&buf[..n]);
        if String::from_utf8_lossy(&received).contains("\"ok\"") {
            break Instant::now();
        }
    };
    assert!(String::from_utf8_lossy(&received).starts_with("HTTP/1.1 200"));
    let rest = read_until_closed(&mut stream, answered + IDLE_TIMEOUT * 5).await;
    assert!(rest.is_empty(), "{:?}", String::from_utf8_lossy(&rest));
    let idle = answered.elapsed();
    assert!(
        idle >= IDLE_TIMEOUT - Duration::from_millis(100),
        "closed after {idle:?}, before the idle deadline"
    );
    daemon.handle.stop().unwrap();
    daemon.handle.stopped().await;
}

/// Stopping the daemon does not wait on stalled clients longer than their deadlines: a
/// half-sent head is closed at the header deadline, a stalled body at the body deadline.
#[tokio::test]
async fn stopping_does_not_wait_on_stalled_clients() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start(dir.path()).await;
    let mut streams = Vec::new();
    for _ in 0..5 {
        streams.push(stall(daemon.local_addr, b"POST / HTTP/1.1\r\nHost: local").await);
        streams.push(stall(daemon.local_addr, head(100).as_bytes()).await);
    }
    // Let the server accept them and read the heads.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let stopping = Instant::now();
    daemon.handle.stop().unwrap();
    tokio::time::timeout(Duration::from_secs(10), daemon.handle.stopped())
        .await
        .expect("stopped within 10 s");
    assert!(stopping.elapsed() < BODY_TIMEOUT + Duration::from_secs(2));
    let deadline = Instant::now() + Duration::from_secs(2);
    for stream in &mut streams {
        read_until_closed(stream, deadline).await;
    }
}

/// A connection that never shows the token is closed at the header deadline, counted from its
/// accept, however many requests it sends: answers of HTTP 401 do not extend it.
#[tokio::test]
async fn a_connection_without_the_token_is_closed_at_the_header_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start(dir.path()).await;
    let request = "POST / HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer wrong\r\n\
                   Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
    let opened = Instant::now();
    let mut stream = stall(daemon.local_addr, request.as_bytes()).await;
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    let mut answers = 0;
    let closed_after = loop {
        match tokio::time::timeout(HEADER_TIMEOUT * 5, stream.read(&mut buf)).await {
            Err(_) => panic!("still open {:?} after it connected", opened.elapsed()),
            Ok(Ok(0)) | Ok(Err(_)) => break opened.elapsed(),
            Ok(Ok(n)) => received.extend_from_slice(&buf[..n]),
        }
        // One more request after each answer, until the daemon closes the connection.
        let text = String::from_utf8_lossy(&received).into_owned();
        if text.matches("HTTP/1.1 401").count() > answers {
            answers += 1;
            tokio::time::sleep(HEADER_TIMEOUT / 4).await;
            if stream.write_all(request.as_bytes()).await.is_err() {
                break opened.elapsed();
            }
        }
    };
    assert!(answers >= 2, "{}", String::from_utf8_lossy(&received));
    assert!(
        closed_after >= HEADER_TIMEOUT - Duration::from_millis(100)
            && closed_after < HEADER_TIMEOUT * 3,
        "closed after {closed_after:?}"
    );
    daemon.handle.stop().unwrap();
    daemon.handle.stopped().await;
}

/// The trial's attacker: `count` connections that each send part of a request head and stall;
/// one the daemon closes is opened again at once. Its tasks end when it is dropped.
struct Attack {
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// Connections opened so far.
    opened: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Attack {
    /// Starts the attack on `addr` and returns once `count` connections have sent their part
    /// of a head.
    async fn start(addr: SocketAddr, count: usize) -> Attack {
        use std::sync::atomic::Ordering;
        let opened = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let tasks = (0..count)
            .map(|_| {
                let opened = opened.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 256];
                    loop {
                        let Ok(mut stream) = TcpStream::connect(addr).await else {
                            tokio::time::sleep(Duration::from_millis(10)).await;
                            continue;
                        };
                        if stream
                            .write_all(b"POST / HTTP/1.1\r\nHost: localhost\r\nAuthoriz")
                            .await
                            .is_ok()
                        {
                            opened.fetch_add(1, Ordering::Relaxed);
                            // Until the daemon closes it.
                            while let Ok(1..) = stream.read(&mut buf).await {}
                        }
                    }
                })
            })
            .collect();
        let attack = Attack { tasks, opened };
        let started = Instant::now();
        while attack.opened() < count {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "only {} stalled connections opened in 10 s",
                attack.opened()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        attack
    }

    fn opened(&self) -> usize {
        self.opened.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Drop for Attack {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// A daemon with production limits holding the vote key of seed `[7; 32]`, and that key.
async fn start_with_vote_key(dir: &Path) -> (Daemon, SecretKey) {
    let key = SecretKey::from_seed(&[7; 32]);
    let keystore = Keystore::open_with(dir, PASSPHRASE, KdfParams::for_tests()).unwrap();
    thresholdd::import_vote_key(&keystore, &key).unwrap();
    drop(keystore);
    (thresholdd::start(config(dir)).await.unwrap(), key)
}

/// The node's remote signer for `key` at `addr`, with the node's default timeout.
fn signer(addr: SocketAddr, key: &SecretKey) -> Arc<RemoteSigner> {
    let target = RemoteSignerTarget {
        url: format!("http://{addr}").parse().unwrap(),
        token: TOKEN.to_string(),
        timeout: SIGNER_TIMEOUT,
    };
    let signer = RemoteSigner::new(target, key.public_key()).unwrap();
    // The daemon's guard is new: the first vote fences it, as a node at genesis does.
    signer.fence_before_signing(0);
    Arc::new(signer)
}

/// `signer` signs a notarize vote for view `view` (off the async workers: the client blocks);
/// the time the call took.
async fn sign_vote(signer: &Arc<RemoteSigner>, view: u64) -> Result<Duration, RemoteSignError> {
    let signer = signer.clone();
    let vote = Vote {
        kind: VoteKind::Notarize,
        chain_id: 1,
        epoch: 0,
        view,
        height: view,
        block: [9; 32],
        signer: 0,
        signature: [0; 96],
    };
    let domain = EpochDomain {
        validator_set_root: [3; 32],
        profile_id: "fast".into(),
    };
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        signer.sign_vote(&vote, &domain).map(|_| started.elapsed())
    })
    .await
    .unwrap()
}

/// The campaign's 200 stalled connections, kept open (reopened when the daemon closes them)
/// against a daemon with the production limits: the node's remote signer still gets every
/// vote signed within its 2 s timeout, over the connection it already holds and over a fresh
/// one, before and after the header deadline has closed the first stalled connections. Before
/// the fix a fresh connection waited in the listen backlog for at least one 10 s head
/// deadline, and the call timed out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn votes_are_signed_within_the_signer_timeout_despite_200_stalled_connections() {
    let dir = tempfile::tempdir().unwrap();
    let (daemon, key) = start_with_vote_key(dir.path()).await;
    let addr = daemon.local_addr;
    let pooled = signer(addr, &key);
    sign_vote(&pooled, 1)
        .await
        .expect("signed before the attack");

    let attack = Attack::start(addr, 200).await;
    // Ten votes over 6 s, past thresholdd's 5 s header deadline.
    for view in 2..12 {
        let fresh = signer(addr, &key);
        for (name, signer) in [("pooled", &pooled), ("fresh", &fresh)] {
            let took = sign_vote(signer, view)
                .await
                .unwrap_or_else(|e| panic!("view {view}, {name} connection: {e}"));
            assert!(took < SIGNER_TIMEOUT, "{took:?}");
        }
        tokio::time::sleep(Duration::from_millis(600)).await;
    }
    // The attack was real: the daemon closed stalled connections and they came back.
    assert!(attack.opened() > 200, "{} connections", attack.opened());
    drop(attack);
    daemon.handle.stop().unwrap();
    daemon.handle.stopped().await;
}

/// `samples` sorted: the value at quantile `q` (nearest rank).
fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Measurement, not a check: the latency of `validator.sign_vote` through the node's remote
/// signer (production limits, the signing guard's fsync included) with no stalled connections
/// and with 200 kept open, over the signer's pooled connection (1000 votes) and over a fresh
/// connection per vote (100 votes). Run with
/// `cargo test -p quasar-node --test thresholdd_slow_clients -- --ignored --nocapture sign_vote_latency`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "measurement; prints p50/p99"]
async fn sign_vote_latency_with_stalled_connections() {
    let dir = tempfile::tempdir().unwrap();
    let (daemon, key) = start_with_vote_key(dir.path()).await;
    let addr = daemon.local_addr;
    let pooled = signer(addr, &key);
    let mut view = 0;
    println!("stalled  connection  votes      p50      p99      max");
    for stalled in [0, 200] {
        let _attack = match stalled {
            0 => None,
            n => Some(Attack::start(addr, n).await),
        };
        for (name, votes) in [("pooled", 1000), ("fresh", 100)] {
            let mut took = Vec::with_capacity(votes);
            for _ in 0..votes {
                view += 1;
                let signer = match name {
                    "pooled" => pooled.clone(),
                    _ => signer(addr, &key),
                };
                took.push(sign_vote(&signer, view).await.expect("signed"));
            }
            took.sort();
            println!(
                "{stalled:>7}  {name:>10}  {votes:>5}  {:>7.2?}  {:>7.2?}  {:>7.2?}",
                quantile(&took, 0.5),
                quantile(&took, 0.99),
                quantile(&took, 1.0),
            );
        }
    }
    daemon.handle.stop().unwrap();
    daemon.handle.stopped().await;
}
