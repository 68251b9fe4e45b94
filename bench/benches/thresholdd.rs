//! thresholdd's per-method latency over HTTP (issue 10). Run:
//! `cargo bench -p quasar-bench --bench thresholdd`.
//!
//! One daemon in this process (real HTTP on loopback, a real keystore in a temporary
//! directory), one client making one call at a time: p50 latency of every method of this
//! version, in ms, over 15 rounds of calls. Baselines measured in the same rounds: `health`
//! (the transport alone: HTTP, JSON-RPC, the token check) and, for each signing method, the
//! same signature made in process with the crypto crate's API (shares already decoded), so
//! `<method> / in process` is what the daemon adds (decrypting the keystore entry, decoding
//! the shares, hex and JSON, HTTP), and `validator.sign_vote / bls.sign (1 of 1)` is what the
//! signing guard's durable record (write, fsync, directory fsync) adds. Written to `target/criterion/thresholdd-summary.json`.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use quasar_bench::summary::{report, run_with_summary, Samples, Target};
use quasar_crypto::bls_threshold;
use quasar_crypto::corona::local::sign_in_process as corona_sign_in_process;
use quasar_crypto::corona::scheme::{trusted_dealer_keygen as corona_keygen, SessionId};
use quasar_crypto::magnetar::{ParameterSet, SecretKey as MagnetarKey};
use quasar_crypto::pulsar::{self, Signer};
use quasar_thresholdd::keystore::{KdfParams, Keystore};
use quasar_thresholdd::{self as thresholdd, DaemonConfig};
use rand::RngCore;
use serde_json::{json, Value};
use zeroize::Zeroizing;

const ROUNDS: usize = 15;
/// Calls per method per round.
const CALLS: usize = 8;
const TOKEN: &str = "bench-token";
/// The keystore passphrase.
const PASSPHRASE: &[u8] = b"bench passphrase";
const MESSAGE: &[u8] = b"a 32-byte round digest, roughly.";

struct Client {
    http: reqwest::Client,
    url: String,
}

impl Client {
    fn new(addr: SocketAddr) -> Client {
        Client {
            http: reqwest::Client::new(),
            url: format!("http://{addr}/"),
        }
    }

    /// One call's result, panicking on any error (a benchmark of failures measures nothing).
    async fn call(&self, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let response: Value = self
            .http
            .post(&self.url)
            .bearer_auth(TOKEN)
            .json(&body)
            .send()
            .await
            .expect("the daemon answers")
            .json()
            .await
            .expect("a JSON-RPC response");
        assert!(response["error"].is_null(), "{method}: {response}");
        response["result"].clone()
    }

    /// Milliseconds per call of `method`, one sample per call.
    async fn time(&self, samples: &mut Samples, name: &'static str, method: &str, params: &Value) {
        for _ in 0..CALLS {
            let start = Instant::now();
            self.call(method, params.clone()).await;
            samples.push(name, start.elapsed().as_secs_f64() * 1e3);
        }
    }
}

/// Milliseconds per call of `work`, one sample per call.
fn time_local(samples: &mut Samples, name: &'static str, mut work: impl FnMut()) {
    for _ in 0..CALLS {
        let start = Instant::now();
        work();
        samples.push(name, start.elapsed().as_secs_f64() * 1e3);
    }
}

fn summary() {
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (mut ms, mut ratios) = (Samples::default(), Samples::default());
    // The validator vote key `validator.sign_vote` signs with, imported as a node's would be.
    let vote_key = quasar_crypto::bls::SecretKey::from_seed(&[6; 32]);
    let keystore =
        Keystore::open_with(dir.path(), PASSPHRASE, KdfParams::PRODUCTION).expect("a keystore");
    thresholdd::import_vote_key(&keystore, &vote_key).expect("the vote key imported");
    drop(keystore);
    let vote_public = hex::encode(vote_key.public_key().to_bytes());
    runtime.block_on(async {
        let daemon = thresholdd::start(DaemonConfig {
            listen: "127.0.0.1:0".parse().expect("an address"),
            allow_remote: false,
            data_dir: dir.path().to_path_buf(),
            token: Zeroizing::new(TOKEN.to_string()),
            passphrase: Zeroizing::new(PASSPHRASE.to_vec()),
            kdf: KdfParams::PRODUCTION,
            request_timeout: Duration::from_secs(60),
            metrics_listen: None,
        })
        .await
        .expect("the daemon starts");
        let client = Client::new(daemon.local_addr);
        let message = hex::encode(MESSAGE);

        // The daemon's keys, and in-process twins of the same shapes for the baselines.
        let bls_key = client
            .call("bls.keygen", json!({"threshold": 14, "participants": 21}))
            .await;
        let bls_public = bls_key["publicKey"].clone();
        let bls_dealing = bls_threshold::deal(14, 21, &mut rand::rngs::OsRng).expect("a dealing");
        let pulsar_key = client
            .call("pulsar.keygen", json!({"threshold": 3, "participants": 5}))
            .await;
        let pulsar_public = pulsar_key["publicKey"].clone();
        let (pulsar_group, pulsar_shares) =
            pulsar::trusted_dealer_keygen(3, 5, &mut rand::rngs::OsRng).expect("a pulsar key");
        let mut pulsar_signers: Vec<Signer> =
            pulsar_shares.into_iter().take(3).map(Signer::new).collect();

        let corona_key = client
            .call("corona.keygen", json!({"threshold": 3, "participants": 5}))
            .await;
        let corona_public = corona_key["publicKey"].clone();
        let (corona_group, corona_shares) =
            corona_keygen(3, 5, &mut rand::rngs::OsRng).expect("a corona key");
        let mut corona_signers: Vec<_> = corona_shares
            .into_iter()
            .take(3)
            .map(quasar_crypto::corona::scheme::Signer::new)
            .collect();
        let magnetar_key = client
            .call("magnetar.keygen", json!({"threshold": 1, "participants": 1}))
            .await;
        let magnetar_public = magnetar_key["publicKey"].clone();
        let magnetar_local = MagnetarKey::from_seed(ParameterSet::Shake192f, &[5; 32]);
        // The baseline: a 1-of-1 `bls.keygen` key (a vote key signs only votes).
        let one_key = client
            .call("bls.keygen", json!({"threshold": 1, "participants": 1}))
            .await;
        let one_sign = json!({"messageHex": message, "pubKeyHex": one_key["publicKey"]});
        let mut view = 0u64;

        let corona_sign = json!({"messageHex": message, "pubKeyHex": corona_public});
        let corona_signature =
            client.call("corona.sign", corona_sign.clone()).await["signatureHex"].clone();
        let corona_verify =
            json!({"messageHex": message, "signatureHex": corona_signature, "pubKeyHex": corona_public});
        let magnetar_sign = json!({"messageHex": message, "pubKeyHex": magnetar_public});
        let magnetar_signature =
            client.call("magnetar.sign", magnetar_sign.clone()).await["signatureHex"].clone();
        let magnetar_verify =
            json!({"messageHex": message, "signatureHex": magnetar_signature, "pubKeyHex": magnetar_public});
        let bls_sign = json!({"messageHex": message, "pubKeyHex": bls_public});
        let bls_signature = client.call("bls.sign", bls_sign.clone()).await["signatureHex"].clone();
        let bls_verify = json!({"messageHex": message, "signatureHex": bls_signature, "pubKeyHex": bls_public});
        let pulsar_sign = json!({"messageHex": message, "pubKeyHex": pulsar_public});
        let pulsar_signature =
            client.call("pulsar.sign", pulsar_sign.clone()).await["signatureHex"].clone();
        let pulsar_verify =
            json!({"messageHex": message, "signatureHex": pulsar_signature, "pubKeyHex": pulsar_public});

        for _ in 0..ROUNDS {
            client.time(&mut ms, "health", "health", &json!({})).await;
            client
                .time(&mut ms, "bls.keygen (14 of 21)", "bls.keygen", &json!({"threshold": 14, "participants": 21}))
                .await;
            client.time(&mut ms, "bls.sign (14 of 21)", "bls.sign", &bls_sign).await;
            client.time(&mut ms, "bls.verify", "bls.verify", &bls_verify).await;
            client
                .time(&mut ms, "pulsar.keygen (3 of 5)", "pulsar.keygen", &json!({"threshold": 3, "participants": 5}))
                .await;
            client.time(&mut ms, "pulsar.sign (3 of 5)", "pulsar.sign", &pulsar_sign).await;
            client.time(&mut ms, "pulsar.verify", "pulsar.verify", &pulsar_verify).await;
            client
                .time(&mut ms, "corona.keygen (3 of 5)", "corona.keygen", &json!({"threshold": 3, "participants": 5}))
                .await;
            client.time(&mut ms, "corona.sign (3 of 5)", "corona.sign", &corona_sign).await;
            client.time(&mut ms, "corona.verify", "corona.verify", &corona_verify).await;
            client
                .time(&mut ms, "magnetar.keygen (192f)", "magnetar.keygen", &json!({"threshold": 1, "participants": 1}))
                .await;
            client.time(&mut ms, "magnetar.sign (192f)", "magnetar.sign", &magnetar_sign).await;
            client.time(&mut ms, "magnetar.verify (192f)", "magnetar.verify", &magnetar_verify).await;
            client.time(&mut ms, "bls.sign (1 of 1)", "bls.sign", &one_sign).await;
            for _ in 0..CALLS {
                // A fresh view per call: every vote is a new durable guard record.
                view += 1;
                let params = json!({"pubKeyHex": vote_public, "kind": "notarize", "chainId": 1,
                    "epoch": 1, "view": view, "height": view, "blockHex": hex::encode([7u8; 32]),
                    "validatorSetRootHex": hex::encode([8u8; 32]), "profileId": "quasar"});
                let start = Instant::now();
                let reply = client.call("validator.sign_vote", params).await;
                ms.push("validator.sign_vote", start.elapsed().as_secs_f64() * 1e3);
                assert_eq!(reply["decision"], "fresh", "{reply}");
            }
            time_local(&mut ms, "corona sign (3 of 5), in process", || {
                let mut session = [0u8; 32];
                rand::rngs::OsRng.fill_bytes(&mut session);
                corona_sign_in_process(&corona_group, &mut corona_signers, &[0, 1, 2], SessionId(session), MESSAGE, &mut rand::rngs::OsRng)
                    .expect("signs and verifies");
            });
            time_local(&mut ms, "magnetar sign (192f), in process", || {
                let signature = magnetar_local.sign(MESSAGE, &[], &mut rand::rngs::OsRng).expect("signs");
                magnetar_local.public_key().verify(MESSAGE, &[], &signature).expect("verifies");
            });
            time_local(&mut ms, "bls sign (14 of 21), in process", || {
                let shares: Vec<_> = bls_dealing.shares().iter().take(14).map(|s| s.sign(MESSAGE)).collect();
                let signature = bls_threshold::combine(14, &shares).expect("combines");
                bls_dealing.group_public_key().verify(MESSAGE, &signature).expect("verifies");
            });
            time_local(&mut ms, "pulsar sign (3 of 5), in process", || {
                let mut base = [0u8; 32];
                rand::rngs::OsRng.fill_bytes(&mut base);
                let signed = pulsar::sign_in_process(&pulsar_group, &mut pulsar_signers, &base, MESSAGE, &[], 64, &mut rand::rngs::OsRng)
                    .expect("signs");
                let signature = quasar_crypto::mldsa::Signature::from_bytes(&signed.signature).expect("decodes");
                pulsar_group.public_key().verify(MESSAGE, &[], &signature).expect("verifies");
            });
        }
        daemon.handle.stop().ok();
        daemon.handle.stopped().await;
    });
    let medians: std::collections::HashMap<_, _> = ms.medians().into_iter().collect();
    for (name, method, baseline) in [
        (
            "bls.sign / in process",
            "bls.sign (14 of 21)",
            "bls sign (14 of 21), in process",
        ),
        (
            "pulsar.sign / in process",
            "pulsar.sign (3 of 5)",
            "pulsar sign (3 of 5), in process",
        ),
        ("bls.verify / health", "bls.verify", "health"),
        (
            "corona.sign / in process",
            "corona.sign (3 of 5)",
            "corona sign (3 of 5), in process",
        ),
        (
            "magnetar.sign / in process",
            "magnetar.sign (192f)",
            "magnetar sign (192f), in process",
        ),
        (
            "validator.sign_vote / bls.sign (1 of 1)",
            "validator.sign_vote",
            "bls.sign (1 of 1)",
        ),
    ] {
        ratios.push(name, medians[method] / medians[baseline]);
    }
    let targets: Vec<Target> = vec![
        ("bls.sign / in process", None, true),
        ("pulsar.sign / in process", None, true),
        ("bls.verify / health", None, false),
        ("corona.sign / in process", None, true),
        ("magnetar.sign / in process", None, true),
        ("validator.sign_vote / bls.sign (1 of 1)", None, false),
    ];
    report(
        "thresholdd over HTTP, p50 per call",
        ("ms", "ms", 3),
        &ms,
        &ratios,
        &targets,
        "thresholdd-summary.json",
    );
}

fn main() {
    run_with_summary(|_| {}, summary);
}
