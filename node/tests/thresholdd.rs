//! thresholdd over real HTTP: every method of this version, every error code, the limits, the
//! bearer token, restarts, and the binary's command line.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use quasar_node::thresholdd::keystore::{KdfParams, Keystore};
use quasar_node::thresholdd::{self, Daemon, DaemonConfig, DaemonError};
use serde_json::{json, Value};
use zeroize::Zeroizing;

const TOKEN: &str = "test-token-0123456789";
const PASSPHRASE: &[u8] = b"correct horse battery staple";

fn config(dir: &Path, passphrase: &[u8]) -> DaemonConfig {
    DaemonConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        allow_remote: false,
        data_dir: dir.to_path_buf(),
        token: Zeroizing::new(TOKEN.to_string()),
        passphrase: Zeroizing::new(passphrase.to_vec()),
        kdf: KdfParams::for_tests(),
        request_timeout: Duration::from_secs(30),
    }
}

async fn start(dir: &Path) -> Daemon {
    thresholdd::start(config(dir, PASSPHRASE)).await.unwrap()
}

async fn stop(daemon: Daemon) {
    daemon.handle.stop().unwrap();
    daemon.handle.stopped().await;
}

/// POSTs `body` with `token` (none: no Authorization header); the status and the body.
async fn post(addr: SocketAddr, token: Option<&str>, body: Vec<u8>) -> (u16, String) {
    let client = reqwest::Client::new();
    let mut request = client
        .post(format!("http://{addr}/"))
        .header("content-type", "application/json")
        .body(body);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// One call with the right token: the parsed JSON-RPC response (HTTP 200 expected).
async fn call(addr: SocketAddr, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let (status, text) = post(addr, Some(TOKEN), body.to_string().into_bytes()).await;
    assert_eq!(status, 200, "{method}: {text}");
    serde_json::from_str(&text).unwrap()
}

fn result(response: &Value) -> &Value {
    assert!(
        response.get("error").is_none(),
        "unexpected error: {response}"
    );
    &response["result"]
}

/// The error's code and message.
fn error(response: &Value) -> (i64, String) {
    let e = &response["error"];
    assert!(e.is_object(), "expected an error: {response}");
    (
        e["code"].as_i64().unwrap(),
        e["message"].as_str().unwrap().to_string(),
    )
}

async fn health_ok(addr: SocketAddr) {
    let response = call(addr, "health", json!({})).await;
    assert_eq!(result(&response)["status"], "ok");
}

#[tokio::test]
async fn bearer_token_is_required() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start(dir.path()).await;
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"health"}"#.to_vec();
    for token in [None, Some("wrong"), Some(""), Some("test-token-012345678")] {
        let (status, _) = post(daemon.local_addr, token, body.clone()).await;
        assert_eq!(status, 401, "{token:?}");
    }
    let (status, text) = post(daemon.local_addr, Some(TOKEN), body).await;
    assert_eq!(status, 200, "{text}");
    stop(daemon).await;
}

#[tokio::test]
async fn bls_keygen_sign_verify() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start(dir.path()).await;
    let addr = daemon.local_addr;
    let reply = call(
        addr,
        "bls.keygen",
        json!({"threshold": 2, "participants": 3}),
    )
    .await;
    let key = result(&reply).clone();
    let public_key = key["publicKey"].as_str().unwrap().to_string();
    assert_eq!(public_key.len(), 96);
    assert_eq!(key["parties"].as_array().unwrap().len(), 3);
    let key_id = key["keyId"].as_str().unwrap();

    // No share appears in the response.
    let keystore = Keystore::open_with(dir.path(), PASSPHRASE, KdfParams::for_tests()).unwrap();
    let secret = keystore.secret(key_id).unwrap();
    let text = reply.to_string();
    for share in secret.chunks(34) {
        assert!(!text.contains(&hex::encode(&share[2..])), "a share leaked");
    }

    let message = hex::encode(b"block 42");
    let signed = call(
        addr,
        "bls.sign",
        json!({"messageHex": message, "pubKeyHex": public_key}),
    )
    .await;
    let signature = result(&signed)["signatureHex"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(signature.len(), 192);
    let verified = call(
        addr,
        "bls.verify",
        json!({"messageHex": message, "signatureHex": signature, "pubKeyHex": public_key}),
    )
    .await;
    assert_eq!(result(&verified)["ok"], true);
    let other = call(
        addr,
        "bls.verify",
        json!({"messageHex": hex::encode(b"block 43"), "signatureHex": signature, "pubKeyHex": public_key}),
    )
    .await;
    assert_eq!(result(&other)["ok"], false);

    // BLS is deterministic: signing again gives the same bytes.
    let again = call(
        addr,
        "bls.sign",
        json!({"messageHex": message, "pubKeyHex": public_key}),
    )
    .await;
    assert_eq!(result(&again)["signatureHex"], signature.as_str());

    // A key this daemon does not hold.
    let stranger = quasar_crypto::bls::SecretKey::from_seed(&[9; 32]).public_key();
    let (code, message_text) = error(
        &call(
            addr,
            "bls.sign",
            json!({"messageHex": message, "pubKeyHex": hex::encode(stranger.to_bytes())}),
        )
        .await,
    );
    assert_eq!(code, -32000, "{message_text}");
    stop(daemon).await;
}

#[tokio::test]
async fn pulsar_keygen_sign_sign_ctx_verify() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start(dir.path()).await;
    let addr = daemon.local_addr;
    let reply = call(
        addr,
        "pulsar.keygen",
        json!({"threshold": 2, "participants": 3}),
    )
    .await;
    let public_key = result(&reply)["publicKey"].as_str().unwrap().to_string();
    assert_eq!(
        public_key.len(),
        2 * 1952,
        "a FIPS 204 ML-DSA-65 public key"
    );
    let message = hex::encode(b"round digest");
    let ctx = hex::encode(b"quasar/cert");
    let signed = call(
        addr,
        "pulsar.sign",
        json!({"messageHex": message, "pubKeyHex": public_key}),
    )
    .await;
    let plain = result(&signed)["signatureHex"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(plain.len(), 2 * 3309, "a FIPS 204 ML-DSA-65 signature");
    let signed = call(
        addr,
        "pulsar.sign_ctx",
        json!({"messageHex": message, "pubKeyHex": public_key, "ctxHex": ctx}),
    )
    .await;
    let with_ctx = result(&signed)["signatureHex"]
        .as_str()
        .unwrap()
        .to_string();

    // Each signature verifies as plain FIPS 204 under its own context, and only there.
    let public = quasar_crypto::mldsa::PublicKey::<quasar_crypto::mldsa::MlDsa65>::from_bytes(
        &hex::decode(&public_key).unwrap(),
    )
    .unwrap();
    for (signature, good, bad) in [(&plain, "", ctx.as_str()), (&with_ctx, ctx.as_str(), "")] {
        let sig =
            quasar_crypto::mldsa::Signature::from_bytes(&hex::decode(signature).unwrap()).unwrap();
        let good_ctx = hex::decode(good).unwrap();
        assert!(public.verify(b"round digest", &good_ctx, &sig).is_ok());
        for (ctx_hex, ok) in [(good, true), (bad, false)] {
            let verified = call(
                addr,
                "pulsar.verify",
                json!({"messageHex": message, "signatureHex": signature, "pubKeyHex": public_key, "ctxHex": ctx_hex}),
            )
            .await;
            assert_eq!(result(&verified)["ok"], ok);
        }
    }
    for (params, field) in [
        (json!({"threshold": 1, "participants": 3}), "threshold"),
        (json!({"threshold": 2, "participants": 7}), "participants"),
    ] {
        let (code, message) = error(&call(addr, "pulsar.keygen", params).await);
        assert_eq!(code, -32602, "{message}");
        assert!(message.contains(field), "{message}");
    }
    let long_ctx = hex::encode([7u8; 256]);
    let (code, message) = error(
        &call(
            addr,
            "pulsar.sign_ctx",
            json!({"messageHex": message, "pubKeyHex": public_key, "ctxHex": long_ctx}),
        )
        .await,
    );
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("ctxHex"), "{message}");
    stop(daemon).await;
}

#[tokio::test]
async fn every_error_code() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start(dir.path()).await;
    let addr = daemon.local_addr;

    // −32700: not JSON.
    let (status, text) = post(addr, Some(TOKEN), b"{not json".to_vec()).await;
    let response: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(error(&response).0, -32700, "{status} {text}");

    // −32600: no method.
    let (_, text) = post(addr, Some(TOKEN), br#"{"jsonrpc":"2.0","id":1}"#.to_vec()).await;
    let response: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(error(&response).0, -32600, "{text}");

    // −32601: unknown method and unknown scheme; methods of later versions say so.
    assert_eq!(error(&call(addr, "bls.nothing", json!({})).await).0, -32601);
    assert_eq!(error(&call(addr, "rsa.keygen", json!({})).await).0, -32601);
    let (code, message) = error(&call(addr, "corona.keygen", json!({})).await);
    assert_eq!(code, -32601);
    assert!(message.contains("not built yet"), "{message}");

    // −32602, naming the field.
    let cases = [
        ("bls.keygen", json!({"threshold": 2}), "participants"),
        (
            "bls.keygen",
            json!({"threshold": "two", "participants": 3}),
            "threshold",
        ),
        (
            "bls.keygen",
            json!({"threshold": 4, "participants": 3}),
            "threshold",
        ),
        (
            "bls.keygen",
            json!({"threshold": 0, "participants": 3}),
            "threshold",
        ),
        (
            "bls.keygen",
            json!({"threshold": 1, "participants": 70000}),
            "participants",
        ),
        (
            "bls.keygen",
            json!({"threshold": 1, "participants": 1, "extra": 1}),
            "extra",
        ),
        (
            "bls.sign",
            json!({"messageHex": "zz", "pubKeyHex": "00"}),
            "messageHex",
        ),
        (
            "bls.sign",
            json!({"messageHex": "abc", "pubKeyHex": "00"}),
            "messageHex",
        ),
        (
            "bls.sign",
            json!({"messageHex": "00", "pubKeyHex": "0011"}),
            "pubKeyHex",
        ),
        ("bls.sign", json!({"messageHex": "00"}), "pubKeyHex"),
        (
            "bls.verify",
            json!({"messageHex": "00", "signatureHex": "00", "pubKeyHex": "00"}),
            "signatureHex",
        ),
        ("bls.sign", json!(["00", "00"]), "named parameters"),
    ];
    for (method, params, field) in cases {
        let (code, message) = error(&call(addr, method, params.clone()).await);
        assert_eq!(code, -32602, "{method} {params}: {message}");
        assert!(message.contains(field), "{method} {params}: {message}");
    }
    health_ok(addr).await;
    stop(daemon).await;
}

#[tokio::test]
async fn oversized_and_hostile_bodies_leave_the_daemon_serving() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start(dir.path()).await;
    let addr = daemon.local_addr;

    // A body over 16 MiB: HTTP 413.
    let padding = "0".repeat(thresholdd::MAX_BODY_BYTES as usize + 1);
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"bls.verify","params":{{"messageHex":"{padding}"}}}}"#
    );
    let (status, _) = post(addr, Some(TOKEN), body.into_bytes()).await;
    assert_eq!(status, 413);
    health_ok(addr).await;

    // A batch of 100,000 calls: one error (jsonrpsee's server-defined −32010, "batch too
    // large"), nothing run.
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"health"}"#;
    let batch = format!("[{}]", vec![call; 100_000].join(","));
    let (status, text) = post(addr, Some(TOKEN), batch.into_bytes()).await;
    let response: Value = serde_json::from_str(&text).unwrap();
    let (code, message) = error(&response);
    assert_eq!(code, -32010, "{status} {text}");
    assert!(message.contains("batch"), "{message}");
    // A batch within the limit is served.
    let batch = format!("[{}]", [call; 3].join(","));
    let (_, text) = post(addr, Some(TOKEN), batch.into_bytes()).await;
    let responses: Vec<Value> = serde_json::from_str(&text).unwrap();
    assert_eq!(responses.len(), 3);

    // JSON nested 100,000 deep, in a parameter, in the envelope and as the whole body: a clean
    // error each time (the daemon never recurses into it).
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let bodies = [
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"bls.verify","params":{{"messageHex":{deep}}}}}"#
        ),
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"health","params":{{"a":{deep}}}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":{deep},"method":"health"}}"#),
        deep.clone(),
    ];
    for body in bodies {
        let (status, text) = post(addr, Some(TOKEN), body.into_bytes()).await;
        let response: Value = serde_json::from_str(&text).unwrap();
        // A malformed `id` leaves jsonrpsee nothing to answer to: it replies `null`.
        if response.is_null() {
            continue;
        }
        // The whole body as a (one-element) batch: one error in an array.
        let response = response.get(0).unwrap_or(&response);
        let (code, _) = error(response);
        assert!([-32700, -32600, -32602].contains(&code), "{status} {text}");
    }

    // Not UTF-8.
    let (status, _) = post(addr, Some(TOKEN), vec![0xff, 0xfe, 0x00, 0x7b]).await;
    assert!(status == 200 || status == 400, "{status}");
    health_ok(addr).await;
    stop(daemon).await;
}

#[tokio::test]
async fn keys_survive_a_restart_and_need_the_passphrase() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start(dir.path()).await;
    let reply = call(
        daemon.local_addr,
        "bls.keygen",
        json!({"threshold": 3, "participants": 5}),
    )
    .await;
    let public_key = result(&reply)["publicKey"].as_str().unwrap().to_string();
    let message = hex::encode(b"before the restart");
    let first = call(
        daemon.local_addr,
        "bls.sign",
        json!({"messageHex": message, "pubKeyHex": public_key}),
    )
    .await;
    stop(daemon).await;

    match thresholdd::start(config(dir.path(), b"wrong passphrase")).await {
        Err(DaemonError::Keystore(e)) => assert!(e.to_string().contains("passphrase"), "{e}"),
        other => panic!("expected a passphrase error, got {other:?}"),
    }

    let daemon = start(dir.path()).await;
    let second = call(
        daemon.local_addr,
        "bls.sign",
        json!({"messageHex": message, "pubKeyHex": public_key}),
    )
    .await;
    assert_eq!(result(&first), result(&second));
    stop(daemon).await;
}

#[tokio::test]
async fn refuses_remote_binds_and_empty_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let mut remote = config(dir.path(), PASSPHRASE);
    remote.listen = "0.0.0.0:0".parse().unwrap();
    assert!(matches!(
        thresholdd::start(remote).await,
        Err(DaemonError::RemoteBind(_))
    ));
    let mut empty = config(dir.path(), PASSPHRASE);
    empty.token = Zeroizing::new(String::new());
    assert!(matches!(
        thresholdd::start(empty).await,
        Err(DaemonError::EmptyToken)
    ));
}

/// The binary: `keys list` and `keys export-public` show public data, a wrong passphrase fails.
#[test]
fn binary_lists_and_exports_public_keys() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let public_key = runtime.block_on(async {
        // The binary opens the store with the production parameters: create it that way.
        let mut config = config(dir.path(), PASSPHRASE);
        config.kdf = KdfParams::default();
        let daemon = thresholdd::start(config).await.unwrap();
        let reply = call(
            daemon.local_addr,
            "bls.keygen",
            json!({"threshold": 1, "participants": 2}),
        )
        .await;
        stop(daemon).await;
        result(&reply)["publicKey"].as_str().unwrap().to_string()
    });
    let passphrase_file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(passphrase_file.path(), [PASSPHRASE, b"\n"].concat()).unwrap();
    let thresholdd = env!("CARGO_BIN_EXE_thresholdd");
    let list = Command::new(thresholdd)
        .args(["keys", "list", "--data-dir"])
        .arg(dir.path())
        .arg("--passphrase-file")
        .arg(passphrase_file.path())
        .output()
        .unwrap();
    assert!(list.status.success(), "{list:?}");
    let listing = String::from_utf8(list.stdout).unwrap();
    assert!(listing.contains(&public_key), "{listing}");
    let key_id = listing.split('\t').next().unwrap().to_string();
    let export = Command::new(thresholdd)
        .args(["keys", "export-public", &key_id, "--data-dir"])
        .arg(dir.path())
        .env(
            "THRESHOLDD_PASSPHRASE",
            std::str::from_utf8(PASSPHRASE).unwrap(),
        )
        .output()
        .unwrap();
    assert!(export.status.success(), "{export:?}");
    let exported: Value = serde_json::from_slice(&export.stdout).unwrap();
    assert_eq!(exported["publicKeyHex"], public_key.as_str());
    assert_eq!(exported["scheme"], "bls");
    let wrong = Command::new(thresholdd)
        .args(["keys", "list", "--data-dir"])
        .arg(dir.path())
        .env("THRESHOLDD_PASSPHRASE", "not it")
        .output()
        .unwrap();
    assert!(!wrong.status.success());
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("passphrase"));
    // A mistyped directory is an error, and inspecting it creates nothing.
    let missing = dir.path().join("mistyped");
    let typo = Command::new(thresholdd)
        .args(["keys", "list", "--data-dir"])
        .arg(&missing)
        .env("THRESHOLDD_PASSPHRASE", "x")
        .output()
        .unwrap();
    assert!(!typo.status.success());
    assert!(String::from_utf8_lossy(&typo.stderr).contains("no keystore"));
    assert!(!missing.exists());
}
