//! Validators whose votes are signed by their thresholdd (`signer = "remote"`): real
//! `quasar-node` and `thresholdd` processes on loopback, one daemon per validator holding the
//! validator's BLS key (`thresholdd keys import-validator`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use quasar_crypto::bls::SecretKey;
use quasar_crypto::{corona, pulsar};
use quasar_lanes::cert::Profile;
use quasar_node::ceremony::{CoronaParty, PulsarParty, RemoteParty, Scheme, StepError};
use quasar_node::config::{NodeConfig, SignerMode};
use quasar_node::remote_signer::{RemoteClient, RemoteSignError, RemoteSigner, RemoteSignerTarget};
use quasar_node::testnet::{self, TestnetOptions, NODE_CONFIG_FILE};
use quasar_thresholdd::keystore::{KdfParams, Keystore};
use quasar_thresholdd::{self as thresholdd, DaemonConfig};
use quasar_wire::{EpochDomain, Vote, VoteKind};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::sleep;
use zeroize::Zeroizing;

mod common;
use common::{assert_same_chain, binary, one_network_at_a_time, Fixture};

const VOTES_SIGNED: &str = "thresholdd_votes_signed_total";
const REMOTE_ERRORS: &str = "quasar_consensus_remote_signer_errors_total";

/// The thresholdd binary beside quasar-node's. Its own package builds it: `cargo test
/// --workspace` does; `cargo test -p quasar-node` alone needs `cargo build -p quasar-thresholdd`
/// first (and again after a change to it).
fn thresholdd() -> PathBuf {
    let path = binary().with_file_name("thresholdd");
    assert!(
        path.is_file(),
        "{} is missing: run `cargo build -p quasar-thresholdd` (cargo test --workspace builds it)",
        path.display()
    );
    path
}

const TOKEN: &str = "remote-signer-test-token";

fn target(addr: SocketAddr, token: &str) -> RemoteSignerTarget {
    RemoteSignerTarget {
        url: format!("http://{addr}").parse().unwrap(),
        token: token.to_string(),
        timeout: Duration::from_secs(5),
    }
}

const PASSPHRASE: &[u8] = b"passphrase";

/// A daemon on a free loopback port over the keystore in `dir`.
async fn start_daemon(dir: &std::path::Path) -> thresholdd::Daemon {
    thresholdd::start(DaemonConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        allow_remote: false,
        data_dir: dir.to_path_buf(),
        token: Zeroizing::new(TOKEN.into()),
        passphrase: Zeroizing::new(PASSPHRASE.to_vec()),
        kdf: KdfParams::for_tests(),
        request_timeout: Duration::from_secs(30),
        metrics_listen: None,
    })
    .await
    .unwrap()
}

fn vote(view: u64, block: u8) -> Vote {
    Vote {
        kind: VoteKind::Notarize,
        chain_id: 1,
        epoch: 0,
        view,
        height: 3,
        block: [block; 32],
        signer: 0,
        signature: [0; 96],
    }
}

fn domain() -> EpochDomain {
    EpochDomain {
        validator_set_root: [3; 32],
        profile_id: "fast".into(),
    }
}

/// `signer.sign_vote(vote)` off the async workers (the client blocks).
async fn sign(
    signer: &std::sync::Arc<RemoteSigner>,
    vote: Vote,
) -> Result<[u8; 96], RemoteSignError> {
    let signer = signer.clone();
    tokio::task::spawn_blocking(move || signer.sign_vote(&vote, &domain()).map(|s| s.to_bytes()))
        .await
        .unwrap()
}

/// The node's client against a real daemon: the daemon's signature is the key's own, the
/// daemon's guard refuses a conflicting vote on its own, and every failure is its own error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_signs_and_names_each_refusal() {
    let dir = tempfile::tempdir().unwrap();
    let key = SecretKey::from_seed(&[7; 32]);
    let keystore = Keystore::open_with(dir.path(), PASSPHRASE, KdfParams::for_tests()).unwrap();
    thresholdd::import_vote_key(&keystore, &key).unwrap();
    drop(keystore);
    let daemon = start_daemon(dir.path()).await;
    let addr = daemon.local_addr;
    let signer =
        std::sync::Arc::new(RemoteSigner::new(target(addr, TOKEN), key.public_key()).unwrap());
    let check = || {
        let signer = signer.clone();
        tokio::task::spawn_blocking(move || signer.check())
    };
    // The daemon's guard is new: not fenced, it signs nothing until the node fences it.
    assert!(!check().await.unwrap().unwrap());
    match sign(&signer, vote(5, 9)).await {
        Err(RemoteSignError::Refused { code, message }) => {
            assert_eq!(code, -32000);
            assert!(message.contains("validator.fence"), "{message}");
        }
        other => panic!("a vote before the fence: {other:?}"),
    }
    // The fence goes with the next vote; afterwards the guard reports fenced.
    signer.fence_before_signing(0);

    // BLS signing is deterministic: the daemon's signature is exactly the key's.
    let signed = sign(&signer, vote(5, 9)).await.unwrap();
    let own = key.sign(&vote(5, 9).signing_message(&domain())).to_bytes();
    assert_eq!(signed, own);
    assert!(check().await.unwrap().unwrap());
    // A repeat gets the same signature; another block in the same view is refused by the
    // daemon's own guard, whatever the node's guard said.
    assert_eq!(sign(&signer, vote(5, 9)).await.unwrap(), own);
    match sign(&signer, vote(5, 8)).await {
        Err(RemoteSignError::Refused { code, message }) => {
            assert_eq!(code, -32000);
            assert!(message.contains("guard"), "{message}");
        }
        other => panic!("conflicting vote: {other:?}"),
    }

    let wrong_token = RemoteSigner::new(target(addr, "not-the-token"), key.public_key()).unwrap();
    assert!(matches!(
        tokio::task::spawn_blocking(move || wrong_token.check())
            .await
            .unwrap(),
        Err(RemoteSignError::Unauthorized(_))
    ));
    let stranger = SecretKey::from_seed(&[8; 32]);
    let unknown =
        std::sync::Arc::new(RemoteSigner::new(target(addr, TOKEN), stranger.public_key()).unwrap());
    assert!(matches!(
        sign(&unknown, vote(6, 9)).await,
        Err(RemoteSignError::Refused { code: -32000, .. })
    ));
    // The node's start-up check finds the missing key (and passes with the right one).
    let check_unknown = unknown.clone();
    match tokio::task::spawn_blocking(move || check_unknown.check())
        .await
        .unwrap()
    {
        Err(RemoteSignError::Refused { code, message }) => {
            assert_eq!(code, -32000);
            assert!(message.contains("import-validator"), "{message}");
        }
        other => panic!("a daemon without the vote key: {other:?}"),
    }

    daemon.handle.stop().unwrap();
    daemon.handle.stopped().await;
    assert!(matches!(
        sign(&signer, vote(7, 9)).await,
        Err(RemoteSignError::Unreachable { .. })
    ));
}

/// Serves every connection one HTTP 200 answer with `body`.
async fn answer_with(body: String) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let body = body.clone();
            tokio::spawn(async move {
                let mut request = vec![0; 64 * 1024];
                let _ = stream.read(&mut request).await;
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(body.as_bytes()).await;
            });
        }
    });
    addr
}

/// A daemon that answers with another key's signature, or with something that is not a
/// JSON-RPC reply, gets an error, never a vote.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_refuses_signatures_it_cannot_verify_and_malformed_replies() {
    let key = SecretKey::from_seed(&[7; 32]);
    let other = SecretKey::from_seed(&[9; 32]);
    let forged = other
        .sign(&vote(5, 9).signing_message(&domain()))
        .to_bytes();
    let replies = [
        (
            serde_json::json!({"jsonrpc": "2.0", "id": 1,
                "result": {"signatureHex": hex::encode(forged), "decision": "fresh"}})
            .to_string(),
            "another key's signature",
        ),
        (
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {"signatureHex": "zz"}})
                .to_string(),
            "bad hex",
        ),
        (
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {"signatureHex": "00"}})
                .to_string(),
            "short signature",
        ),
        ("<html>not json</html>".to_string(), "not JSON"),
        ("x".repeat(9 << 20), "oversized"),
        (
            serde_json::json!({"jsonrpc": "2.0", "id": 1}).to_string(),
            "neither result nor error",
        ),
    ];
    for (body, what) in replies {
        let addr = answer_with(body).await;
        let signer =
            std::sync::Arc::new(RemoteSigner::new(target(addr, TOKEN), key.public_key()).unwrap());
        let answer = sign(&signer, vote(5, 9)).await;
        match what {
            "another key's signature" => {
                assert!(
                    matches!(answer, Err(RemoteSignError::WrongSignature)),
                    "{answer:?}"
                )
            }
            _ => assert!(
                matches!(answer, Err(RemoteSignError::BadReply(_))),
                "{what}: {answer:?}"
            ),
        }
    }

    // A daemon that takes the request and never answers: the call ends at the timeout.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    let silent = RemoteSignerTarget {
        timeout: Duration::from_millis(300),
        ..target(addr, TOKEN)
    };
    let signer = std::sync::Arc::new(RemoteSigner::new(silent, key.public_key()).unwrap());
    let answer = sign(&signer, vote(5, 9)).await;
    assert!(
        matches!(answer, Err(RemoteSignError::TimedOut { .. })),
        "{answer:?}"
    );
}

/// The session records a daemon keeps under `scheme` (one file per party share it used).
fn session_records(node_dir: &std::path::Path, scheme: &str) -> usize {
    std::fs::read_dir(
        node_dir
            .join("thresholdd")
            .join(format!("{scheme}-sessions")),
    )
    .map(|entries| {
        entries
            .filter_map(Result::ok)
            .filter(|e| e.metadata().is_ok_and(|m| m.len() > 0))
            .count()
    })
    .unwrap_or(0)
}

/// `quasar-node testnet --remote-signers` under `aurora`: four validators, each with its own
/// thresholdd holding its vote key and its Corona and Pulsar shares, finalize with agreement and
/// reach Quasar finality with BLS, Corona and Pulsar legs whose rounds ran in the daemons.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn testnet_with_remote_signers_finalizes() {
    let _turn = one_network_at_a_time().await;
    let dir = tempfile::Builder::new()
        .prefix("quasar-testnet-remote-")
        .tempdir()
        .unwrap();
    let opts = TestnetOptions {
        validators: 4,
        blocks: 16,
        // Eight processes share the cores: a calm pace leaves the ceremonies room.
        block_time_ms: 1000,
        tx_rate: 10.0,
        profile: Profile::Aurora,
        dir: Some(dir.path().join("net")),
        remote_signers: true,
        ..TestnetOptions::new(binary())
    };
    let report = testnet::run(opts).await.unwrap();
    eprintln!("{}", serde_json::to_string(&report).unwrap());
    assert!(report.passed(), "{report:?}");
    assert!(report.finalized_height >= 16, "{report:?}");
    assert!(report.quasar_finalized_height >= 16, "{report:?}");
    for leg in ["corona", "pulsar"] {
        assert!(report.leg_sign_p50_ms.contains_key(leg), "{report:?}");
    }
    let (mut corona, mut pulsar) = (0, 0);
    for i in 0..4 {
        let node_dir = dir.path().join("net").join(format!("v{i}"));
        let cfg = NodeConfig::load(&node_dir.join(NODE_CONFIG_FILE)).unwrap();
        assert_eq!(cfg.signer, SignerMode::Remote);
        // Each daemon's signing guard holds this validator's votes.
        let guards: Vec<_> = std::fs::read_dir(node_dir.join("thresholdd").join("guards"))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        assert_eq!(guards.len(), 1, "validator {i}: one vote key's guard");
        // The daemon signed: its guard recorded votes (each vote is only a DEBUG log line).
        let guard_file = std::fs::read(guards[0].join(quasar_storage::GUARD_FILE)).unwrap();
        let (_, views) = quasar_storage::SigningGuard::from_bytes(&guard_file)
            .unwrap()
            .history();
        assert!(!views.is_empty(), "validator {i}'s daemon signed nothing");
        corona += session_records(&node_dir, "corona");
        pulsar += session_records(&node_dir, "pulsar");
    }
    // Signing sets are 3 of 4: at least three daemons ran rounds of each scheme.
    assert!(
        corona >= 3 && pulsar >= 3,
        "corona {corona}, pulsar {pulsar}"
    );
}

/// Every vote comes from the daemons; a validator whose daemon stops signs nothing while the
/// other three keep finalizing, and signs again once its daemon is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_daemon_stops_only_its_validators_votes() {
    let _turn = one_network_at_a_time().await;
    let mut fx = Fixture::with_profile("quasar-remote-signer-test-", 4, 100, Profile::Fast);
    fx.net.use_remote_signers(&thresholdd()).unwrap();
    fx.net.start_signers().unwrap();
    fx.spawn_all();
    let statuses = fx
        .net
        .wait_finalized(&[0, 1, 2, 3], 6, Duration::from_secs(60))
        .await
        .unwrap();
    for (i, status) in statuses.iter().enumerate() {
        let daemon_votes = fx.net.signer_metric(i, VOTES_SIGNED).await.unwrap();
        assert!(
            daemon_votes.is_some_and(|v| v >= 6.0),
            "validator {i}'s daemon signed {daemon_votes:?} votes"
        );
        // The node signed nothing the daemon did not (its counter may be read a vote later).
        assert!(status.votes_signed as f64 <= daemon_votes.unwrap() + 2.0);
        let errors = fx.net.metric(i, REMOTE_ERRORS).await.unwrap();
        assert_eq!(errors, Some(0.0), "validator {i}");
    }

    fx.net.kill_signer(3);
    let before = fx.net.status(0).await.unwrap().finalized_height;
    fx.net
        .wait_finalized(&[0, 1, 2], before + 5, Duration::from_secs(60))
        .await
        .unwrap();
    let mut errors = 0.0;
    for _ in 0..50 {
        errors = fx
            .net
            .metric(3, REMOTE_ERRORS)
            .await
            .unwrap()
            .unwrap_or(0.0);
        if errors > 0.0 {
            break;
        }
        sleep(Duration::from_millis(100)).await;
    }
    assert!(errors > 0.0, "validator 3 signed without its daemon");
    let votes_without_daemon = fx.net.status(3).await.unwrap().votes_signed;

    // Back: the restart brings the daemon up before the node, with its keystore and guard.
    fx.net.kill(3);
    fx.net.spawn(3, &binary()).unwrap();
    let target = fx.net.status(0).await.unwrap().finalized_height + 5;
    fx.net
        .wait_finalized(&[0, 1, 2, 3], target, Duration::from_secs(60))
        .await
        .unwrap();
    let mut signed = 0;
    for _ in 0..50 {
        signed = fx.net.status(3).await.unwrap().votes_signed;
        if signed > 0 {
            break;
        }
        sleep(Duration::from_millis(100)).await;
    }
    assert!(
        signed > 0,
        "validator 3 signed nothing after its daemon came back (before: {votes_without_daemon})"
    );
    assert!(fx
        .net
        .signer_metric(3, VOTES_SIGNED)
        .await
        .unwrap()
        .is_some_and(|v| v > 0.0));
    assert_same_chain(&fx.net, target).await;
}

/// A daemon holding every party's share of a 2-of-3 Corona and a 2-of-3 Pulsar key.
async fn daemon_with_shares() -> (
    tempfile::TempDir,
    thresholdd::Daemon,
    corona::scheme::GroupKey,
    pulsar::GroupKey,
) {
    let dir = tempfile::tempdir().unwrap();
    let keystore = Keystore::open_with(dir.path(), PASSPHRASE, KdfParams::for_tests()).unwrap();
    let mut rng = rand::rngs::OsRng;
    let (corona_group, corona_shares) =
        corona::scheme::trusted_dealer_keygen(2, 3, &mut rng).unwrap();
    for share in &corona_shares {
        thresholdd::import_corona_share(&keystore, share).unwrap();
    }
    let (pulsar_group, pulsar_shares) = pulsar::trusted_dealer_keygen(2, 3, &mut rng).unwrap();
    for share in &pulsar_shares {
        thresholdd::import_pulsar_share(&keystore, &pulsar_group, share).unwrap();
    }
    drop(keystore);
    let daemon = start_daemon(dir.path()).await;
    (dir, daemon, corona_group, pulsar_group)
}

/// The node's ceremony parties with `signer = "remote"`: each round runs in the daemon (which
/// holds the shares), and the messages combine into legs that verify; a session id used before
/// is refused by the daemon.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_parties_sign_corona_and_pulsar_legs() {
    let (_dir, daemon, corona_group, pulsar_group) = daemon_with_shares().await;
    let addr = daemon.local_addr;
    let digest: [u8; 32] = [0x5a; 32];
    let set = [0u16, 2];
    let client = move || RemoteClient::new(target(addr, TOKEN)).unwrap();
    tokio::task::spawn_blocking(move || {
        // Corona: two rounds, then the public combination.
        let mut parties: Vec<CoronaParty> = set
            .iter()
            .map(|&p| {
                let remote = RemoteParty::new(client(), p, &corona_group.to_bytes());
                CoronaParty::remote(corona_group.clone(), 2, 3, remote)
            })
            .collect();
        assert_eq!(parties[1].party(), Some(2));
        let session: [u8; 32] = rand::random();
        let started = std::time::Instant::now();
        let (round1, states): (Vec<_>, Vec<_>) = parties
            .iter_mut()
            .map(|p| p.round1(&session, &set, None).unwrap())
            .unzip();
        let round1_ms = started.elapsed().as_secs_f64() * 1e3 / 2.0;
        let previous: Vec<&[u8]> = round1.iter().map(Vec::as_slice).collect();
        let round2: Vec<Vec<u8>> = parties
            .iter_mut()
            .zip(states)
            .map(|(p, state)| {
                let (message, next) = p.next_round(2, state, &digest, &previous).unwrap();
                assert!(next.is_none());
                message
            })
            .collect();
        eprintln!("corona.round1 through thresholdd: {round1_ms:.1} ms per party");
        let collector = CoronaParty::new(corona_group.clone(), 2, 3, None);
        let rounds = vec![previous.clone(), round2.iter().map(Vec::as_slice).collect()];
        let leg = collector.combine(&session, &set, &digest, &rounds).unwrap();
        let signature = corona::scheme::Signature::from_bytes(&leg).unwrap();
        assert!(corona_group.verify(&digest, &signature).is_ok());
        // The daemon refuses a session id it has seen.
        let again = parties[0].round1(&session, &set, None);
        assert!(
            matches!(&again, Err(StepError::Failed(m)) if m.contains("thresholdd corona.round1")),
            "{:?}",
            again.err()
        );

        // Pulsar: three rounds; rejection sampling may need fresh sessions.
        let mut parties: Vec<PulsarParty> = set
            .iter()
            .map(|&p| {
                let remote = RemoteParty::new(client(), p, pulsar_group.public_key_bytes());
                PulsarParty::remote(pulsar_group.clone(), remote)
            })
            .collect();
        let collector = PulsarParty::new(pulsar_group.clone(), None);
        for attempt in 0.. {
            assert!(attempt < 32, "no Pulsar session met FIPS 204's bounds");
            let session: [u8; 32] = rand::random();
            let mut messages: Vec<Vec<Vec<u8>>> = Vec::new();
            let (first, mut states): (Vec<_>, Vec<_>) = parties
                .iter_mut()
                .map(|p| p.round1(&session, &set, Some(&digest)).unwrap())
                .unzip();
            messages.push(first);
            for round in 2..=3 {
                let previous: Vec<&[u8]> = messages[round - 2].iter().map(Vec::as_slice).collect();
                let mut next_states = Vec::new();
                let mut replies = Vec::new();
                for (p, state) in parties.iter_mut().zip(states) {
                    let (message, next) = p.next_round(round, state, &digest, &previous).unwrap();
                    replies.push(message);
                    next_states.extend(next);
                }
                messages.push(replies);
                states = next_states;
            }
            assert!(states.is_empty(), "no state after the last round");
            let rounds: Vec<Vec<&[u8]>> = messages
                .iter()
                .map(|r| r.iter().map(Vec::as_slice).collect())
                .collect();
            match collector.combine(&session, &set, &digest, &rounds) {
                Ok(signature) => {
                    assert_eq!(signature.len(), 3309);
                    break;
                }
                Err(StepError::Restart) => continue,
                Err(other) => panic!("pulsar combine: {other}"),
            }
        }
    })
    .await
    .unwrap();
}
