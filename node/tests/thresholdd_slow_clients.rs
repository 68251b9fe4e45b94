//! thresholdd against slow and stalled clients.
//!
//! Regression (attacker trial): 110 connections that sent request headers, or part of them, or
//! headers and part of a body, and then stalled, held all 100 of jsonrpsee's slots for over
//! 100 s, and every other caller got HTTP 429. The fix (`thresholdd::serve`) gives each part of
//! a request a deadline: the head (`header_read_timeout`, which also ends idle keep-alive
//! connections), the whole body (`body_read_timeout`, HTTP 408) and each response write. These
//! tests run the daemon with deadlines of one to two seconds and check that stalled clients
//! are dropped, that an honest caller is answered meanwhile, and that stopping does not wait
//! on them.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use quasar_node::thresholdd::keystore::KdfParams;
use quasar_node::thresholdd::{self, Daemon, DaemonConfig, TransportLimits};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use zeroize::Zeroizing;

const TOKEN: &str = "slow-clients-test-token-0123456789";
const PASSPHRASE: &[u8] = b"correct horse battery staple";
const HEADER_TIMEOUT: Duration = Duration::from_secs(1);
const BODY_TIMEOUT: Duration = Duration::from_secs(2);

/// The production connection limit with test-sized deadlines.
fn limits() -> TransportLimits {
    TransportLimits {
        header_read_timeout: HEADER_TIMEOUT,
        body_read_timeout: BODY_TIMEOUT,
        write_stall_timeout: Duration::from_secs(2),
        ..TransportLimits::default()
    }
}

async fn start(dir: &Path) -> Daemon {
    let config = DaemonConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        allow_remote: false,
        data_dir: dir.to_path_buf(),
        token: Zeroizing::new(TOKEN.to_string()),
        passphrase: Zeroizing::new(PASSPHRASE.to_vec()),
        kdf: KdfParams::for_tests(),
        request_timeout: Duration::from_secs(30),
        metrics_listen: None,
    };
    thresholdd::start_with_limits(config, limits())
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

/// A keep-alive connection stays open for a next request, but not for ever: once idle for the
/// header deadline it is closed, so idle clients do not hold slots.
#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_the_header_deadline() {
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
    let rest = read_until_closed(&mut stream, answered + HEADER_TIMEOUT * 5).await;
    assert!(rest.is_empty(), "{:?}", String::from_utf8_lossy(&rest));
    let idle = answered.elapsed();
    assert!(
        idle >= HEADER_TIMEOUT - Duration::from_millis(100),
        "closed after {idle:?}, before the header deadline"
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
