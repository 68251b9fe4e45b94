//! thresholdd over real HTTP: every method of this version, every error code, the limits, the
//! bearer token, restarts, and the binary's command line.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use quasar_thresholdd::keystore::{KdfParams, Keystore};
use quasar_thresholdd::{self as thresholdd, Daemon, DaemonConfig, DaemonError};
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
        metrics_listen: None,
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

/// Asserts that `method` with `params` is refused with −32602 and a message naming `field`.
async fn refused_naming(addr: SocketAddr, method: &str, params: Value, field: &str) {
    let (code, text) = error(&call(addr, method, params.clone()).await);
    assert_eq!(code, -32602, "{method} {params}: {text}");
    assert!(text.contains(field), "{method} {params}: {text}");
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
        refused_naming(addr, "pulsar.keygen", params, field).await;
    }
    let long_ctx = hex::encode([7u8; 256]);
    refused_naming(
        addr,
        "pulsar.sign_ctx",
        json!({"messageHex": message, "pubKeyHex": public_key, "ctxHex": long_ctx}),
        "ctxHex",
    )
    .await;
    stop(daemon).await;
}

#[tokio::test]
async fn corona_keygen_sign_verify() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start(dir.path()).await;
    let addr = daemon.local_addr;
    let reply = call(
        addr,
        "corona.keygen",
        json!({"threshold": 2, "participants": 3}),
    )
    .await;
    let key = result(&reply).clone();
    let public_key = key["publicKey"].as_str().unwrap().to_string();
    assert_eq!(public_key.len(), 2 * 4640, "ρ ‖ b̃");
    assert_eq!(key["parties"], json!([0, 1, 2]));
    assert!(key["keyId"].as_str().unwrap().starts_with("corona-"));
    let message = hex::encode(b"round digest");
    let signed = call(
        addr,
        "corona.sign",
        json!({"messageHex": message, "pubKeyHex": public_key}),
    )
    .await;
    let signature = result(&signed)["signatureHex"]
        .as_str()
        .unwrap()
        .to_string();

    // The signature verifies in the crypto crate, and through the daemon only for its message.
    let group =
        quasar_crypto::corona::scheme::GroupKey::from_bytes(&hex::decode(&public_key).unwrap())
            .unwrap();
    let decoded =
        quasar_crypto::corona::scheme::Signature::from_bytes(&hex::decode(&signature).unwrap())
            .unwrap();
    assert!(group.verify(b"round digest", &decoded).is_ok());
    for (message_hex, ok) in [(message.clone(), true), (hex::encode(b"other"), false)] {
        let verified = call(
            addr,
            "corona.verify",
            json!({"messageHex": message_hex, "signatureHex": signature, "pubKeyHex": public_key}),
        )
        .await;
        assert_eq!(result(&verified)["ok"], ok);
    }

    // A group key of the right shape that the keystore does not hold: −32000.
    let (other, _) =
        quasar_crypto::corona::scheme::trusted_dealer_keygen(1, 2, &mut rand::rngs::OsRng).unwrap();
    let (code, text) = error(
        &call(
            addr,
            "corona.sign",
            json!({"messageHex": message, "pubKeyHex": hex::encode(other.to_bytes())}),
        )
        .await,
    );
    assert_eq!(code, -32000, "{text}");
    // Shapes and bounds: −32602 naming the field.
    let cases = [
        (
            "corona.keygen",
            json!({"threshold": 3, "participants": 2}),
            "threshold",
        ),
        (
            "corona.keygen",
            json!({"threshold": 1, "participants": 257}),
            "participants",
        ),
        (
            "corona.sign",
            json!({"messageHex": message, "pubKeyHex": "00ff"}),
            "pubKeyHex",
        ),
        (
            "corona.verify",
            json!({"messageHex": message, "signatureHex": "00", "pubKeyHex": public_key}),
            "signatureHex",
        ),
    ];
    for (method, params, field) in cases {
        refused_naming(addr, method, params, field).await;
    }
    stop(daemon).await;
}

#[tokio::test]
async fn magnetar_keygen_sign_verify() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start(dir.path()).await;
    let addr = daemon.local_addr;
    let message = hex::encode(b"round digest");
    let ctx = hex::encode(b"quasar/cert");
    for (set, params, signature_len) in [
        ("192f", json!({"threshold": 1, "participants": 1}), 35_664),
        (
            "192s",
            json!({"threshold": 1, "participants": 1, "parameterSet": "192s"}),
            16_224,
        ),
    ] {
        let reply = call(addr, "magnetar.keygen", params).await;
        let key = result(&reply).clone();
        assert_eq!(key["parameterSet"], set);
        let public_key = key["publicKey"].as_str().unwrap().to_string();
        assert_eq!(public_key.len(), 2 * 48, "PK.seed ‖ PK.root");
        let signed = call(
            addr,
            "magnetar.sign_ctx",
            json!({"messageHex": message, "pubKeyHex": public_key, "ctxHex": ctx}),
        )
        .await;
        let signature = result(&signed)["signatureHex"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(signature.len(), 2 * signature_len, "{set}");
        // It verifies under its context only, in the crypto crate and through the daemon.
        let parameter_set = if set.ends_with('f') {
            quasar_crypto::magnetar::ParameterSet::Shake192f
        } else {
            quasar_crypto::magnetar::ParameterSet::Shake192s
        };
        let public = quasar_crypto::magnetar::PublicKey::from_bytes(
            parameter_set,
            &hex::decode(&public_key).unwrap(),
        )
        .unwrap();
        let decoded = quasar_crypto::magnetar::Signature::from_bytes(
            parameter_set,
            &hex::decode(&signature).unwrap(),
        )
        .unwrap();
        assert!(public
            .verify(b"round digest", b"quasar/cert", &decoded)
            .is_ok());
        for (ctx_hex, ok) in [(ctx.as_str(), true), ("", false)] {
            let verified = call(
                addr,
                "magnetar.verify",
                json!({"messageHex": message, "signatureHex": signature, "pubKeyHex": public_key, "ctxHex": ctx_hex}),
            )
            .await;
            assert_eq!(result(&verified)["ok"], ok, "{set} ctx {ctx_hex:?}");
        }
    }
    // `magnetar.sign` (empty context) on a fresh default key.
    let reply = call(
        addr,
        "magnetar.keygen",
        json!({"threshold": 1, "participants": 1}),
    )
    .await;
    let public_key = result(&reply)["publicKey"].as_str().unwrap().to_string();
    let signed = call(
        addr,
        "magnetar.sign",
        json!({"messageHex": message, "pubKeyHex": public_key}),
    )
    .await;
    let signature = result(&signed)["signatureHex"].as_str().unwrap();
    let verified = call(
        addr,
        "magnetar.verify",
        json!({"messageHex": message, "signatureHex": signature, "pubKeyHex": public_key}),
    )
    .await;
    assert_eq!(result(&verified)["ok"], true);

    let cases = [
        (
            "magnetar.keygen",
            json!({"threshold": 2, "participants": 3}),
            "participants",
        ),
        (
            "magnetar.keygen",
            json!({"threshold": 1, "participants": 1, "parameterSet": "128s"}),
            "parameterSet",
        ),
        (
            "magnetar.sign",
            json!({"messageHex": message, "pubKeyHex": "00"}),
            "pubKeyHex",
        ),
        (
            "magnetar.sign_ctx",
            json!({"messageHex": message, "pubKeyHex": public_key, "ctxHex": hex::encode([1u8; 256])}),
            "ctxHex",
        ),
        (
            "magnetar.verify",
            json!({"messageHex": message, "signatureHex": "0011", "pubKeyHex": public_key}),
            "signatureHex",
        ),
    ];
    for (method, params, field) in cases {
        refused_naming(addr, method, params, field).await;
    }
    stop(daemon).await;
}

/// Three daemons, each on its own data directory: the directories, the daemons, their addresses.
async fn three_daemons() -> (Vec<tempfile::TempDir>, Vec<Daemon>, Vec<SocketAddr>) {
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut daemons = Vec::new();
    for dir in &dirs {
        daemons.push(start(dir.path()).await);
    }
    let addrs = daemons.iter().map(|d| d.local_addr).collect();
    (dirs, daemons, addrs)
}

/// Three daemons, each holding one share of a 2-of-3 Corona key, driven through the round
/// methods: parties 0 and 2 sign, the daemon of party 1 combines.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corona_ceremony_across_three_daemons() {
    let (dirs, mut daemons, addrs) = three_daemons().await;
    let (group, shares) =
        quasar_crypto::corona::scheme::trusted_dealer_keygen(2, 3, &mut rand::rngs::OsRng).unwrap();
    let public_key = hex::encode(group.to_bytes());
    for (addr, share) in addrs.iter().zip(&shares) {
        let share_hex = hex::encode(&*share.to_bytes());
        let reply = call(*addr, "corona.import_share", json!({"shareHex": share_hex})).await;
        let imported = result(&reply);
        assert_eq!(imported["party"], share.index());
        assert_eq!(imported["publicKey"], public_key.as_str());
        assert_eq!(imported["threshold"], 2);
        // Importing it twice is refused; the first import stays.
        let (code, text) =
            error(&call(*addr, "corona.import_share", json!({"shareHex": share_hex})).await);
        assert_eq!(code, -32000, "{text}");
    }

    let message = hex::encode(b"round digest");
    let session = hex::encode([0x5e; 32]);
    let signers = [(0usize, 0u16), (2, 2)];
    let mut round1 = Vec::new();
    for &(host, party) in &signers {
        let reply = call(
            addrs[host],
            "corona.round1",
            json!({"pubKeyHex": public_key, "party": party, "sessionHex": session, "parties": [0, 2]}),
        )
        .await;
        round1.push(result(&reply)["round1Hex"].as_str().unwrap().to_string());
    }
    // A host that does not hold the party's share refuses.
    let (code, text) = error(
        &call(
            addrs[1],
            "corona.round1",
            json!({"pubKeyHex": public_key, "party": 0, "sessionHex": session, "parties": [0, 2]}),
        )
        .await,
    );
    assert_eq!(code, -32000, "{text}");
    let mut round2 = Vec::new();
    for &(host, party) in &signers {
        let params = json!({"pubKeyHex": public_key, "party": party, "sessionHex": session,
            "messageHex": message, "round1Hex": round1});
        let reply = call(addrs[host], "corona.round2", params.clone()).await;
        round2.push(result(&reply)["round2Hex"].as_str().unwrap().to_string());
        // The round-1 state is consumed: a second round 2 for the session is refused.
        let (code, text) = error(&call(addrs[host], "corona.round2", params).await);
        assert_eq!(code, -32000, "{text}");
    }
    let reply = call(
        addrs[1],
        "corona.combine",
        json!({"pubKeyHex": public_key, "sessionHex": session, "parties": [2, 0],
            "messageHex": message, "round1Hex": round1, "round2Hex": round2}),
    )
    .await;
    let signature = result(&reply)["signatureHex"].as_str().unwrap().to_string();
    let decoded =
        quasar_crypto::corona::scheme::Signature::from_bytes(&hex::decode(&signature).unwrap())
            .unwrap();
    assert!(group.verify(b"round digest", &decoded).is_ok());
    let verified = call(
        addrs[0],
        "corona.verify",
        json!({"messageHex": message, "signatureHex": signature, "pubKeyHex": public_key}),
    )
    .await;
    assert_eq!(result(&verified)["ok"], true);

    // A tampered round-2 message does not combine into a signature.
    let mut bad = round2.clone();
    let last = bad[1].pop().unwrap();
    bad[1].push(if last == '0' { '1' } else { '0' });
    let (code, text) = error(
        &call(
            addrs[1],
            "corona.combine",
            json!({"pubKeyHex": public_key, "sessionHex": session, "parties": [0, 2],
                "messageHex": message, "round1Hex": round1, "round2Hex": bad}),
        )
        .await,
    );
    assert!([-32000, -32602].contains(&code), "{text}");

    // Session ids are recorded durably: after a restart, party 0 refuses the used session.
    let first = daemons.remove(0);
    stop(first).await;
    let restarted = start(dirs[0].path()).await;
    let (code, text) = error(
        &call(
            restarted.local_addr,
            "corona.round1",
            json!({"pubKeyHex": public_key, "party": 0, "sessionHex": session, "parties": [0, 2]}),
        )
        .await,
    );
    assert_eq!(code, -32000, "{text}");
    assert!(text.contains("already"), "{text}");
    // Bad input names its field.
    for (params, field) in [
        (json!({"shareHex": "00"}), "shareHex"),
        (json!({"shareHex": "zz"}), "shareHex"),
    ] {
        refused_naming(restarted.local_addr, "corona.import_share", params, field).await;
    }
    refused_naming(
        restarted.local_addr,
        "corona.round1",
        json!({"pubKeyHex": public_key, "party": 0, "sessionHex": "00", "parties": [0, 2]}),
        "sessionHex",
    )
    .await;
    refused_naming(
        restarted.local_addr,
        "corona.round1",
        json!({"pubKeyHex": public_key, "party": 0, "sessionHex": hex::encode([1u8; 32]), "parties": [0]}),
        "parties",
    )
    .await;
    stop(restarted).await;
    for daemon in daemons {
        stop(daemon).await;
    }
}

/// Three daemons, each holding one share of a 2-of-3 Pulsar key, driven through the round
/// methods (sessions restart until one meets FIPS 204's bounds): parties 0 and 2 sign, the
/// daemon of party 1 combines. The result is a plain FIPS 204 signature.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pulsar_ceremony_across_three_daemons() {
    let (dirs, mut daemons, addrs) = three_daemons().await;
    let (group, shares) =
        quasar_crypto::pulsar::trusted_dealer_keygen(2, 3, &mut rand::rngs::OsRng).unwrap();
    let group_hex = hex::encode(group.to_bytes());
    let public_key = hex::encode(group.public_key_bytes());
    for (addr, share) in addrs.iter().zip(&shares) {
        let share_hex = hex::encode(&*share.to_bytes());
        let reply = call(
            *addr,
            "pulsar.import_share",
            json!({"groupKeyHex": group_hex, "shareHex": share_hex}),
        )
        .await;
        assert_eq!(result(&reply)["party"], share.party());
        assert_eq!(result(&reply)["publicKey"], public_key.as_str());
    }
    // A share checked against another group key is refused.
    let (other_group, _) =
        quasar_crypto::pulsar::trusted_dealer_keygen(2, 3, &mut rand::rngs::OsRng).unwrap();
    let (code, text) = error(
        &call(
            addrs[0],
            "pulsar.import_share",
            json!({"groupKeyHex": hex::encode(other_group.to_bytes()), "shareHex": hex::encode(&*shares[0].to_bytes())}),
        )
        .await,
    );
    assert_eq!(code, -32602, "{text}");

    let message = hex::encode(b"round digest");
    let ctx = hex::encode(b"quasar/cert");
    let signers = [(0usize, 0u16), (2, 2)];
    let mut signature = None;
    for attempt in 0..16u8 {
        let session = hex::encode([attempt; 32]);
        let mut round1 = Vec::new();
        for &(host, party) in &signers {
            let reply = call(
                addrs[host],
                "pulsar.round1",
                json!({"pubKeyHex": public_key, "party": party, "sessionHex": session,
                    "parties": [0, 2], "messageHex": message, "ctxHex": ctx}),
            )
            .await;
            round1.push(result(&reply)["round1Hex"].as_str().unwrap().to_string());
        }
        let mut round2 = Vec::new();
        for &(host, party) in &signers {
            let reply = call(
                addrs[host],
                "pulsar.round2",
                json!({"pubKeyHex": public_key, "party": party, "sessionHex": session, "round1Hex": round1}),
            )
            .await;
            round2.push(result(&reply)["round2Hex"].as_str().unwrap().to_string());
        }
        let mut round3 = Vec::new();
        for &(host, party) in &signers {
            let params = json!({"pubKeyHex": public_key, "party": party, "sessionHex": session, "round2Hex": round2});
            let reply = call(addrs[host], "pulsar.round3", params.clone()).await;
            round3.push(result(&reply)["round3Hex"].as_str().unwrap().to_string());
            // The secret state is consumed.
            let (code, text) = error(&call(addrs[host], "pulsar.round3", params).await);
            assert_eq!(code, -32000, "{text}");
        }
        let reply = call(
            addrs[1],
            "pulsar.combine",
            json!({"pubKeyHex": public_key, "sessionHex": session, "parties": [0, 2],
                "messageHex": message, "ctxHex": ctx, "round1Hex": round1, "round2Hex": round2,
                "round3Hex": round3}),
        )
        .await;
        if let Some(error) = reply.get("error") {
            let text = error["message"].as_str().unwrap();
            assert!(text.starts_with("restart"), "{text}");
            continue;
        }
        signature = Some(result(&reply)["signatureHex"].as_str().unwrap().to_string());
        break;
    }
    let signature = signature.expect("a session within 16 attempts");
    let decoded =
        quasar_crypto::mldsa::Signature::from_bytes(&hex::decode(&signature).unwrap()).unwrap();
    assert!(group
        .public_key()
        .verify(b"round digest", b"quasar/cert", &decoded)
        .is_ok());

    // The used session ids survive a restart: round 1 of session 0 is refused.
    let first = daemons.remove(0);
    stop(first).await;
    let restarted = start(dirs[0].path()).await;
    let (code, text) = error(
        &call(
            restarted.local_addr,
            "pulsar.round1",
            json!({"pubKeyHex": public_key, "party": 0, "sessionHex": hex::encode([0u8; 32]),
                "parties": [0, 2], "messageHex": message}),
        )
        .await,
    );
    assert_eq!(code, -32000, "{text}");
    assert!(text.contains("already"), "{text}");
    // A signing set that is not exactly t parties names `parties`.
    refused_naming(
        restarted.local_addr,
        "pulsar.round1",
        json!({"pubKeyHex": public_key, "party": 0, "sessionHex": hex::encode([99u8; 32]),
            "parties": [0, 1, 2], "messageHex": message}),
        "parties",
    )
    .await;
    stop(restarted).await;
    for daemon in daemons {
        stop(daemon).await;
    }
}

/// Imports a fresh validator vote key into the keystore in `dir` (created with the test
/// passphrase); its public key, hex.
fn import_vote_key(dir: &Path) -> String {
    let keystore = Keystore::open_with(dir, PASSPHRASE, KdfParams::for_tests()).unwrap();
    let key = quasar_crypto::bls::SecretKey::from_seed(&rand::random::<[u8; 32]>());
    thresholdd::import_vote_key(&keystore, &key).unwrap();
    hex::encode(key.public_key().to_bytes())
}

/// Fences view 0 in the guard of vote key `public_key` (hex) at the daemon at `addr`, as a node
/// starting at genesis does: a new guard signs nothing before.
async fn fence_new_guard(addr: SocketAddr, public_key: &str) {
    let fenced = call(
        addr,
        "validator.fence",
        json!({"pubKeyHex": public_key, "view": 0}),
    )
    .await;
    assert_eq!(result(&fenced)["fencedView"], 0, "{fenced}");
}

/// `validator.sign_vote`'s parameters for a notarize vote in `view` for `block` (one byte,
/// repeated).
fn vote(public_key: &str, kind: &str, view: u64, block: u8) -> Value {
    json!({
        "pubKeyHex": public_key,
        "kind": kind,
        "chainId": 7,
        "epoch": 1,
        "view": view,
        "height": view,
        "blockHex": hex::encode([block; 32]),
        "validatorSetRootHex": hex::encode([9u8; 32]),
        "profileId": "quasar",
    })
}

#[tokio::test]
async fn sign_vote_is_guarded_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let public_key = import_vote_key(dir.path());
    let daemon = thresholdd::start(DaemonConfig {
        metrics_listen: Some("127.0.0.1:0".parse().unwrap()),
        ..config(dir.path(), PASSPHRASE)
    })
    .await
    .unwrap();
    let addr = daemon.local_addr;
    fence_new_guard(addr, &public_key).await;
    let signed = call(
        addr,
        "validator.sign_vote",
        vote(&public_key, "notarize", 5, 0xa1),
    )
    .await;
    assert_eq!(result(&signed)["decision"], "fresh");
    let signature = result(&signed)["signatureHex"]
        .as_str()
        .unwrap()
        .to_string();

    // It is the node's own vote signature: BLS over the wire's vote signing message.
    let domain = quasar_wire::EpochDomain {
        validator_set_root: [9u8; 32],
        profile_id: "quasar".into(),
    };
    let message = quasar_wire::vote_signing_message(
        quasar_wire::VoteKind::Notarize,
        7,
        1,
        5,
        5,
        &[0xa1; 32],
        &domain,
    );
    let pk = quasar_crypto::bls::PublicKey::from_bytes(&hex::decode(&public_key).unwrap()).unwrap();
    let sig = quasar_crypto::bls::Signature::from_bytes(&hex::decode(&signature).unwrap()).unwrap();
    assert!(pk.verify(&message, &sig).is_ok());

    // The same vote again: a repeat, the same signature. Another block in view 5: refused.
    let again = call(
        addr,
        "validator.sign_vote",
        vote(&public_key, "notarize", 5, 0xa1),
    )
    .await;
    assert_eq!(result(&again)["decision"], "repeat");
    assert_eq!(result(&again)["signatureHex"], signature.as_str());
    let (code, text) = error(
        &call(
            addr,
            "validator.sign_vote",
            vote(&public_key, "notarize", 5, 0xb2),
        )
        .await,
    );
    assert_eq!(code, -32000, "{text}");
    assert!(text.contains("conflict"), "{text}");
    // The same block with another height (or chain, epoch, domain) is another vote: refused.
    let mut other_height = vote(&public_key, "notarize", 5, 0xa1);
    other_height["height"] = json!(999);
    let (code, text) = error(&call(addr, "validator.sign_vote", other_height).await);
    assert_eq!(code, -32000, "{text}");
    // A finalize vote for the notarized block is allowed; then a nullify of the view is not
    // (storage's guard rules: nullify and finalize exclude each other in a view).
    let finalize = call(
        addr,
        "validator.sign_vote",
        vote(&public_key, "finalize", 5, 0xa1),
    )
    .await;
    assert_eq!(result(&finalize)["decision"], "fresh");
    let (code, text) = error(
        &call(
            addr,
            "validator.sign_vote",
            vote(&public_key, "nullify", 5, 0),
        )
        .await,
    );
    assert_eq!(code, -32000, "{text}");

    // A vote key signs only votes: `bls.sign` cannot reach it (nothing bypasses the guard).
    let (code, text) = error(
        &call(
            addr,
            "bls.sign",
            json!({"messageHex": hex::encode(&message), "pubKeyHex": public_key}),
        )
        .await,
    );
    assert_eq!(code, -32000, "{text}");
    assert!(text.contains("no bls key"), "{text}");

    // The metrics count the votes, the refusals and each method's calls, behind the token.
    let client = reqwest::Client::new();
    let url = format!("http://{addr}/metrics");
    let denied = client.get(&url).send().await.unwrap();
    assert_eq!(denied.status().as_u16(), 401);
    let text = client
        .get(&url)
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for line in [
        "thresholdd_votes_signed_total 3",
        "thresholdd_guard_refusals_total 3",
        r#"thresholdd_calls_total{method="validator.sign_vote",outcome="ok"} 3"#,
        r#"thresholdd_calls_total{method="validator.sign_vote",outcome="error"} 3"#,
        r#"thresholdd_calls_total{method="bls.sign",outcome="error"} 1"#,
        r#"thresholdd_call_seconds_count{method="validator.sign_vote"} 6"#,
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "{line} missing from:\n{text}"
        );
    }
    // The metrics listener serves the same metrics without a token, and nothing else: no
    // JSON-RPC call, even with the token, and no other path. (The `process_*` values, CPU time
    // and memory, move between two scrapes; the daemon's own do not.)
    let plain = daemon.metrics_addr.expect("a metrics listener");
    let scraped = client
        .get(format!("http://{plain}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(scraped.status().as_u16(), 200);
    let own = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| !l.contains("process_"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(own(&scraped.text().await.unwrap()), own(&text));
    assert!(text.contains("thresholdd_build_info{"), "{text}");
    let rpc = json!({"jsonrpc": "2.0", "id": 1, "method": "validator.sign_vote",
        "params": vote(&public_key, "notarize", 9, 0xd4)});
    let (status, body) = post(plain, Some(TOKEN), rpc.to_string().into_bytes()).await;
    assert_eq!(status, 404, "{body}");
    let posted = client
        .post(format!("http://{plain}/metrics"))
        .bearer_auth(TOKEN)
        .body(rpc.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status().as_u16(), 405);

    // Bad parameters name their field; a key the keystore lacks is −32000 and creates no guard.
    let mut wrong_block = vote(&public_key, "notarize", 6, 1);
    wrong_block["blockHex"] = json!("00ff");
    let mut wrong_kind = vote(&public_key, "notarize", 6, 1);
    wrong_kind["kind"] = json!("prevote");
    let nullify_with_block = vote(&public_key, "nullify", 6, 1);
    for (params, field) in [
        (wrong_block, "blockHex"),
        (wrong_kind, "kind"),
        (nullify_with_block, "blockHex"),
    ] {
        refused_naming(addr, "validator.sign_vote", params, field).await;
    }
    let stranger = quasar_crypto::bls::SecretKey::from_seed(&[8; 32]).public_key();
    let (code, _) = error(
        &call(
            addr,
            "validator.sign_vote",
            vote(&hex::encode(stranger.to_bytes()), "notarize", 6, 1),
        )
        .await,
    );
    assert_eq!(code, -32000);
    stop(daemon).await;

    // After a restart the record still forbids the conflicting vote.
    let daemon = start(dir.path()).await;
    // While it runs, a second daemon on the same directory is refused.
    match thresholdd::start(config(dir.path(), PASSPHRASE)).await {
        Err(DaemonError::Locked(path)) => assert_eq!(path, dir.path()),
        other => panic!("a second daemon on one directory: {other:?}"),
    }
    let (code, text) = error(
        &call(
            daemon.local_addr,
            "validator.sign_vote",
            vote(&public_key, "notarize", 5, 0xb2),
        )
        .await,
    );
    assert_eq!(code, -32000, "{text}");
    let again = call(
        daemon.local_addr,
        "validator.sign_vote",
        vote(&public_key, "notarize", 5, 0xa1),
    )
    .await;
    assert_eq!(result(&again)["signatureHex"], signature.as_str());
    stop(daemon).await;
}

/// The daemon's guard follows the node's rule: a new one (a first start, or a `guards/`
/// directory lost with the keystore kept) signs nothing until `validator.fence`, which the node
/// sends after listening to the network; votes at or below the fenced view stay refused, and a
/// fenced guard stays fenced across restarts.
#[tokio::test]
async fn a_new_vote_guard_signs_nothing_until_the_node_fences_it() {
    let dir = tempfile::tempdir().unwrap();
    let public_key = import_vote_key(dir.path());
    let public_key = public_key.as_str();
    async fn fenced(addr: SocketAddr, public_key: &str) -> bool {
        let reply = call(addr, "validator.key", json!({"pubKeyHex": public_key})).await;
        result(&reply)["fenced"].as_bool().unwrap()
    }
    async fn refused_before_fence(addr: SocketAddr, public_key: &str, view: u64) {
        let (code, text) = error(
            &call(
                addr,
                "validator.sign_vote",
                vote(public_key, "notarize", view, 0xa1),
            )
            .await,
        );
        assert!(code == -32000 && text.contains("validator.fence"), "{text}");
    }

    let daemon = start(dir.path()).await;
    let addr = daemon.local_addr;
    assert!(!fenced(addr, public_key).await);
    refused_before_fence(addr, public_key, 3).await;
    for (params, field) in [
        (json!({"pubKeyHex": public_key}), "view"),
        (json!({"pubKeyHex": "00", "view": 1}), "pubKeyHex"),
        (json!({"pubKeyHex": public_key, "view": -1}), "view"),
    ] {
        refused_naming(addr, "validator.fence", params, field).await;
    }
    let reply = call(
        addr,
        "validator.fence",
        json!({"pubKeyHex": public_key, "view": 10}),
    )
    .await;
    assert_eq!(result(&reply)["fencedView"], 10);
    assert!(fenced(addr, public_key).await);
    // The fenced view itself is refused (the earlier incarnation may have signed there);
    // the next one signs.
    let (code, text) = error(
        &call(
            addr,
            "validator.sign_vote",
            vote(public_key, "notarize", 10, 0xa1),
        )
        .await,
    );
    assert!(code == -32000 && text.contains("conflict"), "{text}");
    let signed = call(
        addr,
        "validator.sign_vote",
        vote(public_key, "notarize", 11, 0xa1),
    )
    .await;
    assert_eq!(result(&signed)["decision"], "fresh");
    stop(daemon).await;

    // A restart keeps the fence.
    let daemon = start(dir.path()).await;
    assert!(fenced(daemon.local_addr, public_key).await);
    stop(daemon).await;

    // The guards are lost, the keystore kept: new again, so nothing is signed until a fence.
    std::fs::remove_dir_all(dir.path().join("guards")).unwrap();
    let daemon = start(dir.path()).await;
    assert!(!fenced(daemon.local_addr, public_key).await);
    refused_before_fence(daemon.local_addr, public_key, 12).await;
    stop(daemon).await;
}

/// Starts the `thresholdd` binary on a free loopback port over `dir`, with [`TOKEN`] in
/// `THRESHOLDD_TOKEN`; the child and its address once `health` answers.
async fn spawn_binary(dir: &Path) -> (std::process::Child, SocketAddr) {
    spawn_binary_with(dir, |command| {
        command.env("THRESHOLDD_TOKEN", TOKEN);
    })
    .await
}

/// The `thresholdd` serve command over `dir` with the keystore passphrase in the environment
/// and no token (`THRESHOLDD_TOKEN` removed); `configure` adds one.
fn thresholdd_command(dir: &Path, configure: impl FnOnce(&mut Command)) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_thresholdd"));
    command
        .arg("--data-dir")
        .arg(dir)
        .env_remove("THRESHOLDD_TOKEN")
        .env(
            "THRESHOLDD_PASSPHRASE",
            std::str::from_utf8(PASSPHRASE).unwrap(),
        );
    configure(&mut command);
    command
}

/// [`spawn_binary`] with the token given by `configure`.
async fn spawn_binary_with(
    dir: &Path,
    configure: impl FnOnce(&mut Command),
) -> (std::process::Child, SocketAddr) {
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut child = thresholdd_command(dir, configure)
        .arg("--listen")
        .arg(addr.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"health"}"#.to_vec();
    for _ in 0..600 {
        let client = reqwest::Client::new();
        let ready = client
            .post(format!("http://{addr}/"))
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {TOKEN}"))
            .body(body.clone())
            .send()
            .await
            .is_ok_and(|r| r.status().is_success());
        if ready {
            return (child, addr);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    panic!("thresholdd did not answer on {addr} within 30 s");
}

/// A validator's own key (from `quasar-node keygen`'s key directory) moves into the keystore
/// with `keys import-validator`, and `validator.sign_vote` then signs the node's votes with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_imports_a_validator_key_for_sign_vote() {
    let keys = tempfile::tempdir().unwrap();
    // The validator's key file is encrypted; import-validator opens it with its passphrase.
    let public = quasar_chainspec::keygen_with_set(
        keys.path(),
        "v0",
        quasar_crypto::magnetar::ParameterSet::Shake192f,
        &quasar_chainspec::KeyAccess::sealed(b"validator key passphrase"),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let import = || {
        Command::new(env!("CARGO_BIN_EXE_thresholdd"))
            .args(["keys", "import-validator", "--key-dir"])
            .arg(keys.path())
            .arg("--data-dir")
            .arg(dir.path())
            .env(
                "THRESHOLDD_PASSPHRASE",
                std::str::from_utf8(PASSPHRASE).unwrap(),
            )
            .env("QUASAR_KEY_PASSPHRASE", "validator key passphrase")
            .output()
            .unwrap()
    };
    let imported = import();
    assert!(imported.status.success(), "{imported:?}");
    let line = String::from_utf8(imported.stdout).unwrap();
    assert!(line.trim_end().ends_with(&public.bls_public_key), "{line}");
    // Importing again overwrites nothing and says so.
    let again = import();
    assert!(again.status.success(), "{again:?}");
    let line = String::from_utf8(again.stdout).unwrap();
    assert!(line.contains("already in the keystore"), "{line}");

    let (mut child, addr) = spawn_binary(dir.path()).await;
    fence_new_guard(addr, &public.bls_public_key).await;
    let signed = call(
        addr,
        "validator.sign_vote",
        vote(&public.bls_public_key, "finalize", 3, 0xc3),
    )
    .await;
    let signature = result(&signed)["signatureHex"].as_str().unwrap();
    let message = quasar_wire::vote_signing_message(
        quasar_wire::VoteKind::Finalize,
        7,
        1,
        3,
        3,
        &[0xc3; 32],
        &quasar_wire::EpochDomain {
            validator_set_root: [9u8; 32],
            profile_id: "quasar".into(),
        },
    );
    let pk =
        quasar_crypto::bls::PublicKey::from_bytes(&hex::decode(&public.bls_public_key).unwrap())
            .unwrap();
    let sig = quasar_crypto::bls::Signature::from_bytes(&hex::decode(signature).unwrap()).unwrap();
    assert!(pk.verify(&message, &sig).is_ok());
    child.kill().unwrap();
    child.wait().unwrap();
}

/// `thresholdd deal` writes one 0600 share file per party whose fields are exactly what
/// `<scheme>.import_share` takes; it refuses BLS and never overwrites a file.
#[tokio::test]
async fn binary_deals_share_files_for_import() {
    use std::os::unix::fs::PermissionsExt;
    let out = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let daemon = start(dir.path()).await;
    for (scheme, fields) in [
        ("corona", &["shareHex"][..]),
        ("pulsar", &["groupKeyHex", "shareHex"][..]),
    ] {
        let deal = || {
            Command::new(env!("CARGO_BIN_EXE_thresholdd"))
                .args([
                    "deal",
                    "--scheme",
                    scheme,
                    "--threshold",
                    "2",
                    "--participants",
                    "3",
                ])
                .arg("--out-dir")
                .arg(out.path())
                .output()
                .unwrap()
        };
        let dealt = deal();
        assert!(dealt.status.success(), "{dealt:?}");
        let public_key = String::from_utf8(dealt.stdout).unwrap().trim().to_string();
        for party in 0..3u16 {
            let path = out.path().join(format!("{scheme}-party-{party}.json"));
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{}", path.display());
            let file: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            assert_eq!(file["party"], party);
            assert_eq!(file["publicKeyHex"], public_key.as_str());
            if party == 1 {
                let params: serde_json::Map<String, Value> = fields
                    .iter()
                    .map(|f| (f.to_string(), file[*f].clone()))
                    .collect();
                let reply = call(
                    daemon.local_addr,
                    &format!("{scheme}.import_share"),
                    Value::Object(params),
                )
                .await;
                assert_eq!(result(&reply)["publicKey"], public_key.as_str());
                assert_eq!(result(&reply)["party"], 1);
            }
        }
        let again = deal();
        assert!(!again.status.success(), "{again:?}");
    }
    let bls = Command::new(env!("CARGO_BIN_EXE_thresholdd"))
        .args([
            "deal",
            "--scheme",
            "bls",
            "--threshold",
            "2",
            "--participants",
            "3",
            "--out-dir",
        ])
        .arg(out.path())
        .output()
        .unwrap();
    assert!(!bls.status.success(), "{bls:?}");
    stop(daemon).await;
}

/// Kill -9 while votes are being signed, then restart: the keys are intact, and no view whose
/// signature left the daemon can be signed again for another block.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_signing_keeps_keys_and_guard() {
    let dir = tempfile::tempdir().unwrap();
    let public_key = import_vote_key(dir.path());
    let (mut child, addr) = spawn_binary(dir.path()).await;
    fence_new_guard(addr, &public_key).await;

    // Four clients sign views 1, 2, 3, … (client c takes views ≡ c mod 4) until the kill.
    let signed = std::sync::Arc::new(std::sync::Mutex::new(Vec::<(u64, String)>::new()));
    let mut clients = Vec::new();
    for c in 0..4u64 {
        let (signed, public_key) = (signed.clone(), public_key.clone());
        clients.push(tokio::spawn(async move {
            let client = reqwest::Client::new();
            for view in (1..).map(|i| 4 * i + c) {
                let body = json!({"jsonrpc": "2.0", "id": view, "method": "validator.sign_vote",
                    "params": vote(&public_key, "notarize", view, 0xa1)});
                let Ok(response) = client
                    .post(format!("http://{addr}/"))
                    .header("authorization", format!("Bearer {TOKEN}"))
                    .json(&body)
                    .send()
                    .await
                else {
                    return;
                };
                let Ok(reply) = response.json::<Value>().await else {
                    return;
                };
                let signature = result(&reply)["signatureHex"].as_str().unwrap().to_string();
                signed.lock().unwrap().push((view, signature));
            }
        }));
    }
    while signed.lock().unwrap().len() < 40 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    for client in clients {
        client.await.unwrap();
    }
    let signed = signed.lock().unwrap().clone();

    let (mut child, addr) = spawn_binary(dir.path()).await;
    // Each signed view's record survived, and the key is intact: it signs the next view.
    for (view, signature) in &signed {
        let (code, text) = error(
            &call(
                addr,
                "validator.sign_vote",
                vote(&public_key, "notarize", *view, 0xb2),
            )
            .await,
        );
        assert_eq!(code, -32000, "view {view}: {text}");
        let again = call(
            addr,
            "validator.sign_vote",
            vote(&public_key, "notarize", *view, 0xa1),
        )
        .await;
        assert_eq!(result(&again)["decision"], "repeat", "view {view}");
        assert_eq!(
            result(&again)["signatureHex"],
            signature.as_str(),
            "view {view}"
        );
    }
    // Above any view a client may have had in flight at the kill.
    let next = signed
        .iter()
        .map(|(view, _)| view + 100)
        .max()
        .unwrap_or(100);
    let fresh = call(
        addr,
        "validator.sign_vote",
        vote(&public_key, "notarize", next, 0xa1),
    )
    .await;
    assert_eq!(result(&fresh)["decision"], "fresh");
    child.kill().unwrap();
    child.wait().unwrap();
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

    // −32601: unknown method, unknown scheme, a round method of a scheme without rounds.
    assert_eq!(error(&call(addr, "bls.nothing", json!({})).await).0, -32601);
    assert_eq!(error(&call(addr, "rsa.keygen", json!({})).await).0, -32601);
    assert_eq!(error(&call(addr, "bls.round1", json!({})).await).0, -32601);
    assert_eq!(
        error(&call(addr, "bls.sign_ctx", json!({})).await).0,
        -32601
    );

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
        refused_naming(addr, method, params, field).await;
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

/// `--token-file` reads the token the way a node's `remote_signer.token_file` does
/// (whitespace around it dropped), and so does `THRESHOLDD_TOKEN` (a Secret's trailing newline
/// is not part of the token; an empty one counts as unset). An empty file, a token a header
/// cannot carry or one too long, no token at all, and two tokens at once stop the daemon at
/// start with the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_reads_its_token_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let secrets = tempfile::tempdir().unwrap();
    let token_file = secrets.path().join("signer.token");
    std::fs::write(&token_file, format!("  {TOKEN}\n")).unwrap();
    let starts: [&dyn Fn(&mut Command); 2] = [
        &|command| {
            command
                .arg("--token-file")
                .arg(&token_file)
                .env("THRESHOLDD_TOKEN", "");
        },
        &|command| {
            command.env("THRESHOLDD_TOKEN", format!("{TOKEN}\n"));
        },
    ];
    for configure in starts {
        let (mut child, addr) = spawn_binary_with(dir.path(), configure).await;
        // `call` presents TOKEN: the daemon answers, so the trimmed token is the one it checks.
        let health = call(addr, "health", json!({})).await;
        assert!(health.get("result").is_some(), "{health}");
        child.kill().unwrap();
        child.wait().unwrap();
    }

    let refused = |configure: &dyn Fn(&mut Command), reason: &str| {
        let out = thresholdd_command(dir.path(), configure).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{reason}: started");
        assert!(stderr.contains(reason), "{reason}: {stderr}");
    };
    let with_file = |command: &mut Command| {
        command.arg("--token-file").arg(&token_file);
    };
    refused(
        &|command| {
            with_file(command);
            command.env("THRESHOLDD_TOKEN", TOKEN);
        },
        "not both",
    );
    refused(&|_| {}, "no bearer token");
    refused(
        &|command| {
            command.env("THRESHOLDD_TOKEN", "two words");
        },
        "printable ASCII",
    );
    std::fs::write(&token_file, "\n").unwrap();
    refused(&with_file, "no token (empty or only whitespace)");
    std::fs::write(&token_file, "two words").unwrap();
    refused(&with_file, "printable ASCII");
    std::fs::write(
        &token_file,
        "t".repeat(quasar_chainspec::MAX_TOKEN_CHARS + 1),
    )
    .unwrap();
    refused(&with_file, "longer than");
    std::fs::remove_file(&token_file).unwrap();
    refused(&with_file, "--token-file");
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

    // The metrics on the signing address itself are refused by name.
    let fixed: SocketAddr = "127.0.0.1:7399".parse().unwrap();
    let same = DaemonConfig {
        listen: fixed,
        metrics_listen: Some(fixed),
        ..config(dir.path(), PASSPHRASE)
    };
    assert!(matches!(
        thresholdd::start(same).await,
        Err(DaemonError::SameListen(addr)) if addr == fixed
    ));

    // An address in use names its listener and stops the start before a keystore is written.
    let running = start(dir.path()).await;
    let fresh = tempfile::tempdir().unwrap();
    let taken = DaemonConfig {
        metrics_listen: Some(running.local_addr),
        ..config(fresh.path(), PASSPHRASE)
    };
    match thresholdd::start(taken).await {
        Err(e @ DaemonError::Bind { listener, .. }) => {
            assert!(listener.contains("--metrics-listen"), "{e}");
            assert!(
                e.to_string().contains(&running.local_addr.to_string()),
                "{e}"
            );
        }
        other => panic!("a metrics address in use: {other:?}"),
    }
    assert!(!fresh
        .path()
        .join(quasar_thresholdd::keystore::HEADER_FILE)
        .exists());
    stop(running).await;
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

/// Runs `thresholdd guard ARGS… --data-dir DIR` with the test passphrase in the environment;
/// whether it succeeded, and its stdout and stderr.
fn thresholdd_guard(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_thresholdd"))
        .arg("guard")
        .args(args)
        .arg("--data-dir")
        .arg(dir)
        .env(
            "THRESHOLDD_PASSPHRASE",
            std::str::from_utf8(PASSPHRASE).unwrap(),
        )
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A vote key's signing history moves with the key: `thresholdd guard export` on the old
/// keystore, `guard import` into a new one holding the same vote key (refused while a daemon
/// runs there), after which the new daemon refuses the conflicting twin of what the old one
/// signed and repeats the vote itself.
#[tokio::test]
async fn a_vote_keys_signing_history_moves_to_another_keystore() {
    let key = quasar_crypto::bls::SecretKey::from_seed(&[0x42; 32]);
    let public_key = hex::encode(key.public_key().to_bytes());
    let (old, new) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let ids: Vec<String> = [old.path(), new.path()]
        .iter()
        .map(|dir| {
            let keystore = Keystore::open_with(dir, PASSPHRASE, KdfParams::for_tests()).unwrap();
            thresholdd::import_vote_key(&keystore, &key).unwrap()
        })
        .collect();
    assert_eq!(ids[0], ids[1]);
    let id = ids[0].as_str();

    let daemon = start(old.path()).await;
    fence_new_guard(daemon.local_addr, &public_key).await;
    let signed = call(
        daemon.local_addr,
        "validator.sign_vote",
        vote(&public_key, "notarize", 5, 0xa1),
    )
    .await;
    assert_eq!(result(&signed)["decision"], "fresh");
    stop(daemon).await;
    let history = old.path().join("history.json");
    let (ok, _, stderr) = thresholdd_guard(
        old.path(),
        &["export", id, "--out", history.to_str().unwrap()],
    );
    assert!(ok, "{stderr}");

    let file = history.to_str().unwrap();
    let daemon = start(new.path()).await;
    let (ok, _, stderr) = thresholdd_guard(new.path(), &["import", id, "--file", file]);
    assert!(
        !ok && stderr.contains("stop it before importing"),
        "{stderr}"
    );
    stop(daemon).await;
    let (ok, _, stderr) = thresholdd_guard(new.path(), &["import", id, "--file", file]);
    assert!(ok && stderr.contains("1 view(s) added"), "{stderr}");
    let (ok, stdout, stderr) = thresholdd_guard(new.path(), &["inspect", id]);
    assert!(ok && stdout.contains("highest view 5"), "{stdout}{stderr}");

    let daemon = start(new.path()).await;
    let (code, text) = error(
        &call(
            daemon.local_addr,
            "validator.sign_vote",
            vote(&public_key, "notarize", 5, 0xb2),
        )
        .await,
    );
    assert!(code == -32000 && text.contains("conflict"), "{text}");
    let again = call(
        daemon.local_addr,
        "validator.sign_vote",
        vote(&public_key, "notarize", 5, 0xa1),
    )
    .await;
    assert_eq!(result(&again)["decision"], "repeat");
    stop(daemon).await;
}
