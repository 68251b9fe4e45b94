//! Specification tests of whole validator processes (`quasar_node::testnet`): real
//! `quasar-node run` processes on loopback, talking QUIC to each other and HTTP to the test.
//!
//! The process tests share two CPU cores in CI, so they take turns ([`one_network_at_a_time`]);
//! each finishes well within a minute. On failure the network's directory (keys, configs, data,
//! `v*/node.log`) is kept and its path printed.

use std::collections::HashSet;
use std::time::Duration;

use quasar_chainspec::GenesisFile;
use quasar_lanes::cert::Profile;
use quasar_node::config::NodeConfig;
use quasar_node::testnet::{
    self, metric_value, nearest_rank, ClientError, Readiness, Status, Testnet, TestnetError,
    TestnetOptions, TestnetReport, GENESIS_FILE, NODE_CONFIG_FILE,
};
use quasar_p2p::client_config;
use quasar_p2p::tls::SERVER_NAME;
use quasar_wire::frame::{encode_frame, MAX_FRAME_LEN};
use tokio::time::sleep;

mod common;
use common::{
    assert_same_chain, binary, fails, ok, one_network_at_a_time, Fixture, KEY_PASSPHRASE,
};

/// Asserts that the report shows a verification time for each leg of `verified` and a
/// production time for each of `produced`.
fn assert_legs(report: &TestnetReport, verified: &[&str], produced: &[&str]) {
    for (times, legs, what) in [
        (&report.leg_verify_p50_ms, verified, "verified"),
        (&report.leg_sign_p50_ms, produced, "produced"),
    ] {
        for leg in legs {
            assert!(
                times.get(*leg).is_some_and(|&ms| ms > 0.0),
                "no {leg} leg {what}: {report:?}"
            );
        }
    }
}

/// Kills validator `victim` and returns the highest height `others` have finalized right after.
async fn kill_and_note_height(fx: &mut Fixture, victim: usize, others: &[usize]) -> u64 {
    fx.net.kill(victim);
    max_finalized(
        &fx.net
            .wait_finalized(others, 0, Duration::from_secs(5))
            .await
            .unwrap(),
    )
}

/// Four validators at 100 ms blocks, started, once every one has finalized `height`.
async fn four_finalizing(height: u64) -> Fixture {
    let mut fx = Fixture::create("quasar-testnet-test-", 4, 100);
    fx.spawn_all();
    fx.net
        .wait_finalized(&[0, 1, 2, 3], height, Duration::from_secs(30))
        .await
        .unwrap();
    fx
}

/// Waits (at most `limit`) until validators 0..=3 have finalized `target`, and asserts that none
/// of them holds equivocation evidence; returns their statuses.
async fn all_finalize_without_evidence(net: &Testnet, target: u64, limit: Duration) -> Vec<Status> {
    let statuses = net
        .wait_finalized(&[0, 1, 2, 3], target, limit)
        .await
        .unwrap();
    for s in &statuses {
        assert_eq!(
            s.evidence, 0,
            "validator {} holds evidence: {s:?}",
            s.validator
        );
    }
    statuses
}

fn max_finalized(statuses: &[Status]) -> u64 {
    statuses
        .iter()
        .map(|s| s.finalized_height)
        .max()
        .unwrap_or(0)
}

// --- The library's pure parts --------------------------------------------------------------

#[test]
fn nearest_rank_is_the_textbook_percentile() {
    let v: Vec<f64> = (1..=10).map(f64::from).collect();
    assert_eq!(nearest_rank(&v, 50.0), 5.0);
    assert_eq!(nearest_rank(&v, 99.0), 10.0);
    assert_eq!(nearest_rank(&v, 10.0), 1.0);
    assert_eq!(nearest_rank(&v, 0.0), 1.0);
    assert_eq!(nearest_rank(&[7.0], 99.0), 7.0);
    assert_eq!(nearest_rank(&[], 50.0), 0.0);
}

#[test]
fn metric_value_sums_label_sets_and_ignores_longer_names() {
    let text = "# HELP quasar_p2p_malformed_frames Malformed.\n\
                # TYPE quasar_p2p_malformed_frames counter\n\
                quasar_p2p_malformed_frames_total 3\n\
                quasar_p2p_malformed_frames_total_other 100\n\
                quasar_x_total{peer=\"1\"} 2\n\
                quasar_x_total{peer=\"2\"} 5.5\n\
                # EOF\n";
    assert_eq!(
        metric_value(text, "quasar_p2p_malformed_frames_total"),
        Some(3.0)
    );
    assert_eq!(metric_value(text, "quasar_x_total"), Some(7.5));
    assert_eq!(metric_value(text, "quasar_absent_total"), None);
}

#[test]
fn the_report_is_one_json_object_with_exactly_the_documented_keys_in_order() {
    let report = TestnetReport {
        validators: 4,
        finalized_height: 20,
        agreement: true,
        blocks_per_sec: 8.5,
        finality_p50_ms: 120.0,
        finality_p95_ms: 250.0,
        finality_p99_ms: 300.0,
        txs_offered: 12,
        txs_sent: 11,
        txs_accepted: 10,
        txs_pushed_back: 0,
        txs_rejected: 1,
        txs_failed: 0,
        txs_finalized: 10,
        tps_finalized: 40.5,
        cpu_us_per_tx: Some(250.0),
        profile: "fast".into(),
        quasar_finalized_height: 19,
        quasar_unavailable: None,
        leg_verify_p50_ms: [("bls".to_string(), 1.5)].into_iter().collect(),
        leg_sign_p50_ms: [("corona".to_string(), 40.0)].into_iter().collect(),
        joiners: 1,
        joined: 1,
        leavers: 1,
        left: 1,
    };
    assert_eq!(
        serde_json::to_string(&report).unwrap(),
        "{\"validators\":4,\"finalized_height\":20,\"agreement\":true,\"blocks_per_sec\":8.5,\
         \"finality_p50_ms\":120.0,\"finality_p95_ms\":250.0,\"finality_p99_ms\":300.0,\"txs_offered\":12,\"txs_sent\":11,\"txs_accepted\":10,\
         \"txs_pushed_back\":0,\"txs_rejected\":1,\"txs_failed\":0,\"txs_finalized\":10,\"tps_finalized\":40.5,\"cpu_us_per_tx\":250.0,\
         \"profile\":\"fast\",\"quasar_finalized_height\":19,\"quasar_unavailable\":null,\
         \"leg_verify_p50_ms\":{\"bls\":1.5},\"leg_sign_p50_ms\":{\"corona\":40.0},\
         \"joiners\":1,\"joined\":1,\"leavers\":1,\"left\":1}"
    );
    assert!(report.passed());
    assert!(
        report
            .describe()
            .contains("1 of 12 offered transactions were NOT SENT"),
        "{}",
        report.describe()
    );
    assert!(!TestnetReport {
        txs_finalized: 9,
        ..report.clone()
    }
    .passed());
    assert!(!TestnetReport {
        joined: 0,
        ..report.clone()
    }
    .passed());
    assert!(!TestnetReport {
        left: 0,
        ..report.clone()
    }
    .passed());
    assert!(!TestnetReport {
        agreement: false,
        ..report
    }
    .passed());
}

#[test]
fn create_writes_keys_genesis_and_configs_with_distinct_ports_and_full_peer_lists() {
    let dir = tempfile::tempdir().unwrap();
    let net = Testnet::create(dir.path(), 4, 100).unwrap();
    let genesis = GenesisFile::load(&dir.path().join(GENESIS_FILE)).unwrap();
    // Each network draws its chain id, so two never accept each other's transactions.
    let other = tempfile::tempdir().unwrap();
    Testnet::create(other.path(), 1, 100).unwrap();
    let other_genesis = GenesisFile::load(&other.path().join(GENESIS_FILE)).unwrap();
    assert_ne!(genesis.chain_id, other_genesis.chain_id);
    assert!(genesis.validators.iter().all(|v| v.stake == testnet::STAKE));
    // The default profile is `quasar`: the testnet deals a Corona key (3-of-4, one share in
    // each validator's key file) but has no rollup key yet, so the node reports Quasar finality
    // unavailable instead of pretending.
    assert_eq!(genesis.profile, "quasar");
    assert!(genesis.corona_group_key.is_some() && genesis.pulsar_group_key.is_none());
    for i in 0..4 {
        let mut keys =
            quasar_chainspec::load_keys(&net.node_dir(i), &net.key_access(i).unwrap()).unwrap();
        let dealt = keys.dealt.remove(&0).expect("genesis set shares");
        let share = dealt.corona.expect("a Corona share");
        assert_eq!(
            (share.index(), share.threshold(), share.parties()),
            (i as u16, 3, 4)
        );
        assert!(dealt.pulsar.is_none() && keys.dealt.is_empty());
    }
    let checked = genesis.clone().check().unwrap();
    let reason = checked.cert_policy().unwrap_err();
    assert!(reason.contains("rollup_verifying_key"), "{reason}");
    // The profile and bundle size are checked and bound into the genesis hash.
    for (profile, bundle_size) in [("fast", 16), ("quasar", 0), ("quasar", 1025), ("turbo", 16)] {
        let edited = GenesisFile {
            profile: profile.into(),
            bundle_size,
            ..genesis.clone()
        };
        match edited.check() {
            Ok(g) => {
                assert_eq!((profile, bundle_size), ("fast", 16));
                assert_ne!(g.hash, checked.hash);
                assert!(g.cert_policy().is_ok());
            }
            Err(e) => assert_ne!(profile, "fast", "{e}"),
        }
    }
    let mut ports = HashSet::new();
    for i in 0..4 {
        assert!(
            ports.insert(net.p2p(i)) && ports.insert(net.api(i)),
            "ports are distinct"
        );
        let cfg = NodeConfig::load(&net.node_dir(i).join(NODE_CONFIG_FILE)).unwrap();
        assert_eq!(cfg.block_time_ms, 100);
        assert_eq!((cfg.p2p_listen, cfg.api_listen), (net.p2p(i), net.api(i)));
        assert_eq!(cfg.data_dir, net.node_dir(i).join("data"));
        let own = quasar_chainspec::load_keys(&cfg.key_dir, &cfg.key_access().unwrap()).unwrap();
        assert_eq!(
            own.public.bls_public_key, genesis.validators[i].bls_public_key,
            "v{i} is validator {i}"
        );
        assert_eq!(cfg.peers.len(), 3);
        for peer in &cfg.peers {
            let j = genesis
                .validators
                .iter()
                .position(|v| v.bls_public_key == peer.bls_public_key)
                .unwrap();
            assert_ne!(j, i);
            assert_eq!(peer.address, quasar_p2p::PeerAddress::from(net.p2p(j)));
        }
        GenesisFile::load(&cfg.genesis).unwrap().check().unwrap();
        assert!(!cfg.archive, "validators prune unless told otherwise");
    }
    // `testnet run` keeps every block for its report.
    net.keep_history().unwrap();
    for i in 0..4 {
        let cfg = NodeConfig::load(&net.node_dir(i).join(NODE_CONFIG_FILE)).unwrap();
        assert!(cfg.archive);
        assert_eq!(cfg.block_time_ms, 100, "the rest of node.toml stays");
    }
    // Validator keys are never overwritten: creating again in the same directory fails.
    assert!(matches!(
        Testnet::create(dir.path(), 4, 100),
        Err(TestnetError::Config(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_rejects_options_that_describe_no_network() {
    let mut opts = TestnetOptions::new(binary());
    opts.validators = 0;
    assert!(matches!(
        testnet::run(opts).await,
        Err(TestnetError::Options(_))
    ));
    let mut opts = TestnetOptions::new(binary());
    opts.tx_rate = f64::NAN;
    assert!(matches!(
        testnet::run(opts).await,
        Err(TestnetError::Options(_))
    ));
    // Provers are checked before anything is written (the directory stays empty).
    let dir = tempfile::tempdir().unwrap();
    for provers in [0, 5] {
        let mut opts = TestnetOptions::new(binary());
        opts.dir = Some(dir.path().to_path_buf());
        opts.rollup_setup = Some(dir.path().join("rollup"));
        opts.rollup_provers = provers;
        assert!(matches!(
            testnet::run(opts).await,
            Err(TestnetError::Options(_))
        ));
    }
    // So are epochs that would cut bundles (16 blocks) in two.
    let mut opts = TestnetOptions::new(binary());
    opts.dir = Some(dir.path().to_path_buf());
    opts.epoch_length = Some(10);
    match testnet::run(opts).await {
        Err(TestnetError::Options(why)) => assert!(why.contains("not a multiple"), "{why}"),
        other => panic!("expected an options error, got {other:?}"),
    }
    // Sets from the registry need `fast` and epochs, each refusal naming what is missing.
    for (profile, epoch_length, says) in [
        (Profile::Aurora, Some(10), "needs --profile fast"),
        (Profile::Fast, Some(0), "needs epochs"),
    ] {
        let mut opts = TestnetOptions::new(binary());
        opts.dir = Some(dir.path().to_path_buf());
        opts.profile = profile;
        opts.epoch_length = epoch_length;
        opts.sets_from_registry = true;
        match testnet::run(opts).await {
            Err(TestnetError::Options(why)) => assert!(why.contains(says), "{why}"),
            other => panic!("expected an options error, got {other:?}"),
        }
    }
    // Validators join through the registry only, and need the epochs to reach their set.
    for (registry, blocks, says) in [
        (false, 100, "--join needs --sets-from-registry"),
        (true, 39, "--join needs --blocks 40 or more"),
    ] {
        let mut opts = TestnetOptions::new(binary());
        opts.dir = Some(dir.path().to_path_buf());
        opts.profile = Profile::Fast;
        opts.epoch_length = Some(10);
        opts.sets_from_registry = registry;
        opts.blocks = blocks;
        opts.join = 1;
        match testnet::run(opts).await {
            Err(TestnetError::Options(why)) => assert!(why.contains(says), "{why}"),
            other => panic!("expected an options error, got {other:?}"),
        }
    }
    // And validator sets that name no network: each refusal says what is wrong.
    let sets = |sets: &[(u64, &[usize])]| -> Vec<(u64, Vec<usize>)> {
        sets.iter().map(|(e, m)| (*e, m.to_vec())).collect()
    };
    for (validator_sets, epoch_length, says) in [
        (sets(&[(0, &[0, 1, 2, 3])]), None, "epoch length"),
        (sets(&[(0, &[0, 1, 2, 3])]), Some(0), "epoch length"),
        (sets(&[(1, &[0, 1, 2, 3])]), Some(16), "not epoch 0's"),
        (
            sets(&[(0, &[0, 1]), (0, &[2, 3])]),
            Some(16),
            "increasing epoch",
        ),
        (sets(&[(0, &[0, 1, 2, 3]), (3, &[])]), Some(16), "is empty"),
        (sets(&[(0, &[0, 1, 2, 4])]), Some(16), "validator 4"),
        (sets(&[(0, &[0, 1, 1, 2, 3])]), Some(16), "twice"),
        (
            sets(&[(0, &[0, 1, 2])]),
            Some(16),
            "validator 3 is in no set",
        ),
    ] {
        let mut opts = TestnetOptions::new(binary());
        opts.dir = Some(dir.path().to_path_buf());
        opts.epoch_length = epoch_length;
        opts.validator_sets = validator_sets.clone();
        match testnet::run(opts).await {
            Err(TestnetError::Options(why)) => assert!(why.contains(says), "{why}"),
            other => panic!("{validator_sets:?}: expected an options error, got {other:?}"),
        }
    }
    // One validator cannot make the default profile's threshold (Pulsar) leg.
    let mut opts = TestnetOptions::new(binary());
    opts.dir = Some(dir.path().to_path_buf());
    opts.validators = 1;
    match testnet::run(opts).await {
        Err(TestnetError::Options(why)) => assert!(why.contains("--profile fast"), "{why}"),
        other => panic!("expected an options error, got {other:?}"),
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

// --- Whole processes -----------------------------------------------------------------------

/// The `testnet` subcommand's job end to end: four honest validators finalize 20 blocks under a
/// steady transaction load, agree on every block, and finalize every transaction they accepted.
/// Under profile `fast` every block's finalization is its whole QuasarCert, so the blocks also
/// reach Quasar finality, with the BLS leg's verification time reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_validators_finalize_with_agreement() {
    let _turn = one_network_at_a_time().await;
    let opts = TestnetOptions {
        validators: 4,
        blocks: 20,
        block_time_ms: 100,
        tx_rate: 50.0,
        profile: Profile::Fast,
        ..TestnetOptions::new(binary())
    };
    let report = testnet::run(opts).await.unwrap();
    eprintln!("{}", serde_json::to_string(&report).unwrap());
    assert_eq!(report.validators, 4);
    assert!(report.agreement, "validators disagree: {report:?}");
    assert!(report.finalized_height >= 20, "{report:?}");
    assert!(
        report.txs_accepted > 0,
        "no transaction was accepted: {report:?}"
    );
    assert_eq!(report.txs_finalized, report.txs_accepted, "{report:?}");
    assert!(
        report.txs_offered >= report.txs_sent
            && report.txs_sent
                == report.txs_accepted
                    + report.txs_pushed_back
                    + report.txs_rejected
                    + report.txs_failed,
        "{report:?}"
    );
    assert!(report.tps_finalized > 0.0, "{report:?}");
    assert!(
        report.cpu_us_per_tx.is_some_and(|us| us > 0.0),
        "{report:?}"
    );
    assert!(report.finality_p50_ms > 0.0, "{report:?}");
    assert!(
        report.finality_p99_ms >= report.finality_p50_ms,
        "{report:?}"
    );
    assert!(report.blocks_per_sec > 0.0, "{report:?}");
    assert_eq!(report.profile, "fast");
    assert_eq!(report.quasar_unavailable, None, "{report:?}");
    assert!(report.quasar_finalized_height >= 15, "{report:?}");
    assert!(
        report
            .leg_verify_p50_ms
            .get("bls")
            .is_some_and(|&ms| ms > 0.0),
        "{report:?}"
    );
}

/// The rate of signed transfers four validators and the load generator sustain together on the
/// 2-core development machine with a release build (finality p95 under 3 block times; measured
/// with `quasar-node testnet --validators 4 --blocks 80 --tx-rate 2000 --profile fast`).
const SUSTAINABLE_TX_RATE: f64 = 2_000.0;

/// Overload does not stall the chain: offered three times the sustainable rate for at least
/// 60 s, finality p95 stays under three block times. The load generator signs the run's
/// transfers before the validators start, and sends one batch per validator at a time, the next
/// once the validator answered: so it sends what the validators admit or push back, less than
/// what is offered (the report counts what was not sent). The test also asserts that what it
/// sent is above the sustainable rate, so the validators are overloaded. Heavy (two cores saturated for a minute), so ignored; it measures the binary
/// named by `QUASAR_NODE_BIN` (the release build) or else the test build:
/// `cargo build --release -p quasar-node`, then `QUASAR_NODE_BIN=$PWD/target/release/quasar-node
/// cargo test -p quasar-node --test testnet_process -- --ignored three_times_the_sustainable_rate`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a minute of saturated load; run it on a release build (see the doc comment)"]
async fn three_times_the_sustainable_rate_keeps_finality_under_three_block_times() {
    let _turn = one_network_at_a_time().await;
    let node = std::env::var_os("QUASAR_NODE_BIN").map_or_else(binary, std::path::PathBuf::from);
    let block_time_ms = testnet::DEFAULT_BLOCK_TIME_MS;
    let opts = TestnetOptions {
        validators: 4,
        // At most one block per block time: the load lasts at least a minute.
        blocks: 60_000 / block_time_ms,
        block_time_ms,
        tx_rate: 3.0 * SUSTAINABLE_TX_RATE,
        profile: Profile::Fast,
        ..TestnetOptions::new(node)
    };
    let block_time_ms = block_time_ms as f64;
    let report = testnet::run(opts).await.unwrap();
    eprintln!("{}", serde_json::to_string(&report).unwrap());
    assert!(report.agreement, "validators disagree: {report:?}");
    let seconds = report.finalized_height as f64 / report.blocks_per_sec;
    assert!(
        seconds >= 60.0,
        "the load lasted {seconds:.0} s: {report:?}"
    );
    assert!(
        report.txs_offered as f64 >= 60.0 * 3.0 * SUSTAINABLE_TX_RATE,
        "{report:?}"
    );
    assert!(
        report.txs_sent as f64 >= 60.0 * SUSTAINABLE_TX_RATE,
        "the validators were sent less than the sustainable rate: {report:?}"
    );
    assert_eq!(report.txs_finalized, report.txs_accepted, "{report:?}");
    assert!(
        report.finality_p95_ms < 3.0 * block_time_ms,
        "finality p95 {} ms is not under three block times ({block_time_ms} ms each): {report:?}",
        report.finality_p95_ms
    );
}

/// Every post-quantum leg the node produces, end to end between processes: under `polaris` the
/// testnet deals Corona and Pulsar 3-of-4 keys into the validators' key files, the validators
/// run the threshold ceremonies over QUIC for every 16-block bundle, each signs with its SLH-DSA
/// key, and the bundles reach Quasar finality with all four legs verified.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polaris_bundles_reach_quasar_finality_with_every_leg() {
    let _turn = one_network_at_a_time().await;
    let opts = TestnetOptions {
        validators: 4,
        blocks: 40,
        block_time_ms: 100,
        tx_rate: 20.0,
        profile: Profile::Polaris,
        // One bundle per epoch: the run crosses two epoch boundaries, and the bundle of
        // epoch 1 is certified under epoch 1's policy.
        epoch_length: Some(16),
        ..TestnetOptions::new(binary())
    };
    let report = testnet::run(opts).await.unwrap();
    eprintln!("{}", serde_json::to_string(&report).unwrap());
    assert!(report.agreement, "validators disagree: {report:?}");
    assert_eq!(report.profile, "polaris");
    assert_eq!(report.quasar_unavailable, None, "{report:?}");
    assert!(report.quasar_finalized_height >= 32, "{report:?}");
    assert_legs(
        &report,
        &["bls", "corona", "pulsar", "magnetar"],
        &["corona", "pulsar", "magnetar"],
    );
}

/// Seven validators under `aurora`: the Pulsar key belongs to a committee of four drawn by
/// stake (the testnet deals it and names it in the genesis), the committee's members sign the
/// Pulsar leg under their party indices, and every validator, the one outside included,
/// certifies the bundles.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aurora_with_seven_validators_signs_pulsar_through_a_committee() {
    let _turn = one_network_at_a_time().await;
    let opts = TestnetOptions {
        validators: 7,
        blocks: 36,
        block_time_ms: 150,
        tx_rate: 10.0,
        profile: Profile::Aurora,
        ..TestnetOptions::new(binary())
    };
    let report = testnet::run(opts).await.unwrap();
    eprintln!("{}", serde_json::to_string(&report).unwrap());
    assert!(report.agreement, "validators disagree: {report:?}");
    assert_eq!(report.quasar_unavailable, None, "{report:?}");
    assert!(report.quasar_finalized_height >= 16, "{report:?}");
    assert_legs(&report, &["bls", "corona", "pulsar"], &["corona", "pulsar"]);
}

/// The rollup keys a testnet is given must fit it, and a validator configured with a proving
/// key for another validator set refuses to start, naming the key (checked from the key file's
/// header before anything gigabyte-sized is read).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proving_key_for_another_validator_set_stops_the_node_at_start() {
    use quasar_crypto::rollup::test_circuit::SquaringChain;
    use quasar_node::rollup::VerifyingKeyFile;
    use rand::SeedableRng;

    let _turn = one_network_at_a_time().await;
    let mut fx = Fixture::create("quasar-testnet-test-", 4, 100);
    let setup = fx.net.dir().join("rollup");
    std::fs::create_dir_all(&setup).unwrap();
    // A real verifying key with the rollup statement's three public inputs.
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(9);
    let (_, vk) = SquaringChain::setup(4, &mut rng).unwrap();
    let vk_bytes = quasar_lanes::groth16::VerifyingKey::new(vk)
        .unwrap()
        .to_bytes();
    let write_vk = |validators: usize| {
        let file = VerifyingKeyFile {
            parameter_set: "ML-DSA-65".into(),
            validators,
            slots: 3,
            verifying_key: hex::encode(&vk_bytes),
        };
        std::fs::write(
            setup.join("rollup.vk.json"),
            serde_json::to_string(&file).unwrap(),
        )
        .unwrap();
    };
    // Keys for five validators do not fit a testnet of four.
    write_vk(5);
    let error = fx.net.add_rollup(&setup, 1).unwrap_err();
    assert!(error.to_string().contains("for 5 validators"), "{error}");
    assert!(fx.net.add_rollup(&setup, 0).is_err());
    // Verifying key for four, but the proving key's header says five.
    write_vk(4);
    let mut header = b"QUASAR-ROLLUP-PK-v1\n".to_vec();
    header.push(65);
    header.extend_from_slice(&5u32.to_le_bytes());
    header.extend_from_slice(&3u32.to_le_bytes());
    std::fs::write(setup.join("rollup.pk"), header).unwrap();
    fx.net.add_rollup(&setup, 1).unwrap();
    let genesis = GenesisFile::load(&fx.net.dir().join(GENESIS_FILE)).unwrap();
    assert_eq!(genesis.rollup_verifying_key, Some(hex::encode(&vk_bytes)));
    let config = |i: usize| {
        let text = std::fs::read_to_string(fx.net.node_dir(i).join(NODE_CONFIG_FILE)).unwrap();
        NodeConfig::from_toml(&text, std::path::Path::new("")).unwrap()
    };
    assert_eq!(config(0).rollup_proving_key, Some(setup.join("rollup.pk")));
    assert_eq!(config(1).rollup_proving_key, None);
    // Paths stay relative, so the testnet directory can still be moved.
    assert_eq!(config(0).data_dir, std::path::PathBuf::from("data"));

    fx.net.spawn(0, &binary()).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        match fx.net.check_running() {
            Err(TestnetError::Exited { validator: 0, .. }) => break,
            Err(other) => panic!("{other}"),
            Ok(()) => assert!(
                std::time::Instant::now() < deadline,
                "validator 0 kept running with a proving key for 5 validators"
            ),
        }
        sleep(Duration::from_millis(50)).await;
    }
    let log = fx.net.log_tail(0, 20);
    assert!(
        log.contains("rollup.pk is for 5 validators of ML-DSA-65 with 3 signature slots"),
        "{log}"
    );
}

/// The `quasar` profile end to end with the Groth16 rollup (heavy: `#[ignore]`). Validator 0
/// holds the rollup proving key; every validator signs each bundle's digest with its ML-DSA-65
/// key and gossips it; validator 0 proves a quorum's signatures in the Groth16 circuit (minutes
/// and about 13 GB at n = 4) and gossips the leg; every node verifies it and the bundle reaches
/// Quasar finality with BLS, Corona and Groth16. The setup (n = 4, τ = 3: about 8 minutes and
/// 9 GB) is read from `QUASAR_ROLLUP_SETUP` when set (made there when empty), else made in a
/// temporary directory. Run with
/// `cargo test --release -p quasar-node --test testnet_process -- --ignored --nocapture quasar_profile`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a rollup setup and proof take minutes and gigabytes"]
async fn quasar_profile_reaches_quasar_finality_with_a_rollup_proof() {
    let _turn = one_network_at_a_time().await;
    let temp = tempfile::tempdir().unwrap();
    let setup = std::env::var_os("QUASAR_ROLLUP_SETUP")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| temp.path().join("rollup"));
    let opts = TestnetOptions {
        validators: 4,
        blocks: 40,
        block_time_ms: 250,
        tx_rate: 20.0,
        profile: Profile::Quasar,
        rollup_setup: Some(setup),
        ..TestnetOptions::new(binary())
    };
    let report = testnet::run(opts).await.unwrap();
    eprintln!("{}", serde_json::to_string(&report).unwrap());
    assert!(report.agreement, "validators disagree: {report:?}");
    assert_eq!(report.profile, "quasar");
    assert_eq!(report.quasar_unavailable, None, "{report:?}");
    assert!(report.quasar_finalized_height >= 16, "{report:?}");
    // Validator 0 is the prover, and the report is validator 0's.
    assert_legs(
        &report,
        &["bls", "corona", "groth16"],
        &["corona", "groth16"],
    );
}

/// A validator that was down while its peers certified blocks fetches their QuasarCerts with
/// the blocks through sync and checks them itself: under `fast` every block is its own bundle,
/// and a block this node finalized through sync has no finalization of its own here, so without
/// the synced certificates those blocks would stay at Nova finality on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_validator_that_fell_behind_fetches_the_quasar_certs_it_missed() {
    let _turn = one_network_at_a_time().await;
    let mut fx = Fixture::with_profile("quasar-testnet-test-", 4, 100, Profile::Fast);
    fx.spawn_all();
    let all = [0, 1, 2, 3];
    let others = [0, 1, 2];
    fx.net
        .wait_finalized(&all, 3, Duration::from_secs(30))
        .await
        .unwrap();
    let at_kill = kill_and_note_height(&mut fx, 3, &others).await;
    let missed = at_kill + 15;
    fx.net
        .wait_finalized(&others, missed, Duration::from_secs(30))
        .await
        .unwrap();
    fx.net.spawn(3, &binary()).unwrap();
    fx.net
        .wait_finalized(&all, missed + 5, Duration::from_secs(30))
        .await
        .unwrap();
    // The certificates arrive with the blocks; give the service a moment to verify them.
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let mut nova = Vec::new();
    loop {
        nova.clear();
        for height in at_kill + 2..=missed {
            let block = fx.net.block(3, height).await.unwrap().unwrap();
            if block.finality.tier != "quasar" {
                nova.push((height, block.finality.state));
            }
        }
        if nova.is_empty() || std::time::Instant::now() >= deadline {
            break;
        }
        sleep(Duration::from_millis(200)).await;
    }
    assert!(
        nova.is_empty(),
        "blocks finalized while validator 3 was down are not Quasar-final on it: {nova:?}"
    );
    let status = fx.net.status(3).await.unwrap();
    assert!(status.quasar_finalized_height >= missed, "{status:?}");
    assert_same_chain(&fx.net, missed).await;
}

/// Crash-recovery of the signing guard: validator 2 is SIGKILLed mid-run, the other three keep
/// finalizing, and the restarted process (same data directory) catches up and votes again
/// without ever signing a vote that conflicts with one it signed before the crash — the other
/// validators record evidence for any conflicting pair they receive, and they record none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_validator_restarts_catches_up_and_never_equivocates() {
    let _turn = one_network_at_a_time().await;
    let mut fx = four_finalizing(5).await;
    let all = [0, 1, 2, 3];
    let others = [0, 1, 3];

    let at_kill = kill_and_note_height(&mut fx, 2, &others).await;
    // Three of four keep finalizing (allow for view timeouts of the dead leader and a busy CPU).
    let before_restart = fx
        .net
        .wait_finalized(&others, at_kill + 2, Duration::from_secs(30))
        .await
        .unwrap();
    let at_restart = max_finalized(&before_restart);
    assert!(
        at_restart > at_kill,
        "three of four validators keep finalizing ({at_kill} -> {at_restart})"
    );

    fx.net.spawn(2, &binary()).unwrap();
    let target = at_restart + 5;
    fx.net
        .wait_finalized(&[2], target, Duration::from_secs(40))
        .await
        .unwrap();
    let statuses = fx
        .net
        .wait_finalized(&all, target, Duration::from_secs(10))
        .await
        .unwrap();

    assert_same_chain(&fx.net, target).await;
    for s in &statuses {
        assert_eq!(
            s.evidence, 0,
            "validator {} saw an equivocation: {s:?}",
            s.validator
        );
        // A routine restart raises no double-sign alert (QuasarSigningGuardRefusal fires on
        // this counter).
        assert_eq!(
            s.guard_refusals, 0,
            "validator {}'s guard refused a vote: {s:?}",
            s.validator
        );
    }
    assert!(
        statuses[2].votes_signed > 0,
        "the restarted validator votes again: {:?}",
        statuses[2]
    );
}

/// Polls validator `i`'s `GET /ready` every 200 ms until `ready` is `want` (an unreachable
/// validator counts as not there yet); panics after `limit` with the last answer.
async fn wait_readiness(net: &Testnet, i: usize, want: bool, limit: Duration) -> Readiness {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let answer = net.ready(i).await;
        match &answer {
            Ok(readiness) if readiness.ready == want => return readiness.clone(),
            Err(e @ TestnetError::Api(ClientError::Inconsistent { .. })) => panic!("{e}"),
            _ => {}
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "validator {i} not ready = {want} within {limit:?}: {answer:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `GET /ready` follows finality: ready while the network finalizes; not ready, naming the
/// stale block, once two of four validators stop and no quorum is left; ready again when one of
/// them returns, and that one is ready once it has caught up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_follows_finality() {
    let _turn = one_network_at_a_time().await;
    let mut fx = four_finalizing(3).await;
    let live = wait_readiness(&fx.net, 0, true, Duration::from_secs(30)).await;
    assert!(live.reasons.is_empty() && live.peers >= 2, "{live:?}");
    assert!(live.last_finalized_ms_ago.is_some(), "{live:?}");

    fx.net.kill(2);
    fx.net.kill(3);
    let limit = Duration::from_millis(live.stale_after_ms) + Duration::from_secs(20);
    let stalled = wait_readiness(&fx.net, 0, false, limit).await;
    assert!(
        stalled.reasons.iter().any(|r| r.contains("ms old")),
        "{stalled:?}"
    );
    assert!(stalled.last_finalized_ms_ago >= Some(stalled.stale_after_ms));

    fx.net.spawn(2, &binary()).unwrap();
    wait_readiness(&fx.net, 0, true, Duration::from_secs(60)).await;
    let back = wait_readiness(&fx.net, 2, true, Duration::from_secs(60)).await;
    assert!(back.finalized_height > stalled.finalized_height, "{back:?}");
}

/// The first hour of an operator (issue 29): `/health` answers, `/status` names the build and
/// the chain (one genesis hash on every validator), `/block/latest` is the block at the
/// finalized tip in `/block/{height}`'s shape, `/` lists the routes, and `/metrics` carries
/// `quasar_build_info` and the process metrics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_sees_the_build_the_chain_and_the_latest_block() {
    let _turn = one_network_at_a_time().await;
    let fx = four_finalizing(2).await;
    let client = reqwest::Client::new();
    let get = |i: usize, path: &str| {
        let url = format!("http://{}{path}", fx.net.api(i));
        let request = client.get(url).send();
        async move {
            let response = request.await.unwrap();
            let status = response.status().as_u16();
            (status, response.text().await.unwrap())
        }
    };
    let json = |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap();

    let (code, health) = get(0, "/health").await;
    assert_eq!(
        (code, json(&health)),
        (200, serde_json::json!({"status": "ok"}))
    );
    let (_, index) = get(0, "/").await;
    assert!(
        index.contains("/block/latest") && index.contains("/metrics"),
        "{index}"
    );

    let mut genesis_hashes = HashSet::new();
    for i in 0..4 {
        let status = json(&get(i, "/status").await.1);
        assert_eq!(
            status["version"],
            quasar_process::build_info::VERSION,
            "{status}"
        );
        assert_eq!(
            status["commit"],
            quasar_process::build_info::COMMIT,
            "{status}"
        );
        let hash = status["genesis_hash"].as_str().unwrap().to_string();
        assert_eq!(hash.len(), 64, "{status}");
        genesis_hashes.insert(hash);
    }
    assert_eq!(genesis_hashes.len(), 1, "one chain: {genesis_hashes:?}");

    let (code, latest) = get(0, "/block/latest").await;
    assert_eq!(code, 200, "{latest}");
    let latest = json(&latest);
    let height = latest["height"].as_u64().unwrap();
    assert!(height >= 2, "{latest}");
    let same = json(&get(0, &format!("/block/{height}")).await.1);
    assert_eq!(same["hash"], latest["hash"]);
    assert_eq!(same["certificate"], latest["certificate"]);

    let metrics = fx.net.metrics(0).await.unwrap();
    for name in [
        "quasar_build_info{",
        "process_resident_memory_bytes ",
        "process_open_fds ",
    ] {
        assert!(metrics.contains(name), "{name} missing from:\n{metrics}");
    }
}

/// With `metrics_listen`, `GET /metrics` is served on that listener alone and no longer on the
/// admin API, so a scraper needs no route to `POST /tx`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_listen_moves_metrics_off_the_admin_api() {
    let _turn = one_network_at_a_time().await;
    let mut fx = Fixture::create("quasar-testnet-test-", 4, 100);
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let metrics_addr = free.local_addr().unwrap();
    drop(free);
    let path = fx.net.node_dir(0).join(NODE_CONFIG_FILE);
    let cfg = NodeConfig {
        metrics_listen: Some(metrics_addr),
        ..NodeConfig::load(&path).unwrap()
    };
    cfg.save(&path).unwrap();
    fx.spawn_all();
    fx.net
        .wait_finalized(&[0, 1, 2, 3], 1, Duration::from_secs(30))
        .await
        .unwrap();
    let client = reqwest::Client::new();
    let status = |url: String| {
        let request = client.get(url).send();
        async move { request.await.unwrap().status().as_u16() }
    };
    let api = fx.net.api(0);
    assert_eq!(status(format!("http://{api}/metrics")).await, 404);
    assert_eq!(status(format!("http://{metrics_addr}/metrics")).await, 200);
    assert_eq!(status(format!("http://{metrics_addr}/status")).await, 404);
    assert_eq!(status(format!("http://{api}/status")).await, 200);
    // The other validators keep `/metrics` on their API.
    assert!(fx
        .net
        .metrics(1)
        .await
        .unwrap()
        .contains("quasar_build_info"));
}

/// A pinned but Byzantine peer (a client holding validator 3's TLS identity) sends validator 0 an
/// oversized length prefix, a truncated frame and a well-framed non-ZAP message. Each costs the
/// peer only its stream: validator 0 counts the malformed frames and keeps finalizing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_frames_are_counted_and_the_node_keeps_finalizing() {
    let _turn = one_network_at_a_time().await;
    let fx = four_finalizing(3).await;
    let malformed = "quasar_p2p_malformed_frames_total";
    let exported = fx.net.metrics(0).await.unwrap();
    let before = metric_value(&exported, malformed).unwrap_or_else(|| {
        let similar: Vec<&str> = exported
            .lines()
            .filter(|l| l.contains("malformed"))
            .collect();
        panic!("/metrics does not export {malformed}; lines mentioning it: {similar:?}")
    });

    let byzantine =
        quasar_chainspec::load_keys(&fx.net.node_dir(3), &fx.net.key_access(3).unwrap()).unwrap();
    let target_cert = hex::decode(
        quasar_chainspec::load_public(&fx.net.node_dir(0))
            .unwrap()
            .tls_certificate,
    )
    .unwrap();
    let endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let conn = endpoint
        .connect_with(
            client_config(&byzantine.tls, &target_cert).unwrap(),
            fx.net.p2p(0),
            SERVER_NAME,
        )
        .unwrap()
        .await
        .expect("a pinned identity connects");

    // (a) A length prefix one byte over the 16 MiB limit.
    let mut oversized = conn.open_uni().await.unwrap();
    oversized
        .write_all(&((MAX_FRAME_LEN + 1) as u32).to_le_bytes())
        .await
        .unwrap();
    // The node may already have stopped the stream on the prefix alone: this write can fail.
    let _ = oversized.write_all(&[0u8; 64]).await;
    // (b) A frame announcing 100 bytes that ends after 10.
    let mut truncated = conn.open_uni().await.unwrap();
    truncated.write_all(&100u32.to_le_bytes()).await.unwrap();
    truncated.write_all(&[1u8; 10]).await.unwrap();
    truncated.finish().unwrap();
    // (c) A well-formed frame whose message is not ZAP.
    let mut garbage = conn.open_uni().await.unwrap();
    garbage
        .write_all(&encode_frame(b"this is not a ZAP message at all").unwrap())
        .await
        .unwrap();
    garbage.finish().unwrap();

    let mut counted = before;
    for _ in 0..100 {
        counted = fx.net.metric(0, malformed).await.unwrap().unwrap_or(0.0);
        if counted - before >= 2.0 {
            break;
        }
        sleep(Duration::from_millis(100)).await;
    }
    assert!(
        counted - before >= 2.0,
        "{malformed} went from {before} to {counted}"
    );
    conn.close(0u32.into(), b"done");

    let after_attack = fx.net.status(0).await.unwrap().finalized_height;
    let statuses = fx
        .net
        .wait_finalized(&[0], after_attack + 5, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(statuses[0].evidence, 0);
    fx.net.check_running().unwrap();
    endpoint.wait_idle().await;
}

/// Retention and late joiners with real processes: under two-block epochs (profile `fast`)
/// validators keep six epochs and older epochs' boundary blocks, except validator 1, an archive
/// node. Validator 3 is down for more than that; restarted on its data directory while the
/// archive node is away, it walks the checkpoints of the pruned epochs (its peers answer `410
/// Gone` below their history floor), restores the state of its finalized tip from its peers
/// (`quasar_node::state_sync`) and executes again: without the archive node, validators 0, 2
/// and 3 are a quorum only if validator 3 notarizes, which it does only when its own execution
/// gives each block's state root.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_validator_down_past_retention_rejoins_through_checkpoints_and_restores_its_state() {
    rejoin_past_retention(false).await;
}

/// [`a_validator_down_past_retention_rejoins_through_checkpoints_and_restores_its_state`] on a
/// chain whose sets come from its registry: each checkpoint validator 3 takes carries the set
/// its boundary decides, with its proof against the boundary's state root, so the sets it
/// cannot execute its way to are learned from the checkpoints, then from the restored state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_registry_chain_checkpoints_carry_the_sets_and_the_state_is_restored() {
    rejoin_past_retention(true).await;
}

/// The scenario of the two tests above, with sets from the registry or not.
async fn rejoin_past_retention(sets_from_registry: bool) {
    let _turn = one_network_at_a_time().await;
    let mut fx = Fixture::with_profile("quasar-testnet-test-", 4, 100, Profile::Fast);
    fx.net.set_epoch_length(2).unwrap();
    if sets_from_registry {
        fx.net.take_sets_from_registry().unwrap();
    }
    // Validator 1 is an archive node: it keeps every block.
    let path = fx.net.node_dir(1).join(NODE_CONFIG_FILE);
    let archive = NodeConfig {
        archive: true,
        ..NodeConfig::load(&path).unwrap()
    };
    archive.save(&path).unwrap();
    fx.spawn_all();
    let others = [0, 1, 2];
    fx.net
        .wait_finalized(&[0, 1, 2, 3], 2, Duration::from_secs(30))
        .await
        .unwrap();
    let at_kill = kill_and_note_height(&mut fx, 3, &others).await;
    // Ten epochs later, the first five past the victim's tip are pruned.
    let statuses = fx
        .net
        .wait_finalized(&others, at_kill + 22, Duration::from_secs(60))
        .await
        .unwrap();
    for s in [&statuses[0], &statuses[2]] {
        assert!(s.history_floor > at_kill + 2, "pruned: {s:?}");
    }
    assert_eq!(
        statuses[1].history_floor, 1,
        "the archive node prunes nothing"
    );
    let pruned = at_kill + 1 + at_kill % 2; // not a boundary block
    assert!(matches!(
        fx.net.block(0, pruned).await,
        Err(TestnetError::Api(ClientError::Pruned { .. }))
    ));
    assert!(fx.net.block(1, pruned).await.unwrap().is_some());
    assert!(
        fx.net.block(0, pruned + 1).await.unwrap().is_some(),
        "boundary blocks stay"
    );

    // The archive node steps out, so validator 3 can only learn the old epochs from pruning
    // peers. It walks their checkpoints up to the chain's height (the chain waits meanwhile:
    // two of four are no quorum), restores its tip's state from them, and the three finalize.
    fx.net.kill(1);
    fx.net.spawn(3, &binary()).unwrap();
    let reached = max_finalized(&statuses);
    let target = reached + 4;
    let statuses = fx
        .net
        .wait_finalized(&[0, 2, 3], target, Duration::from_secs(90))
        .await
        .unwrap();
    assert!(statuses[2].history_floor > at_kill + 2, "{:?}", statuses[2]);
    let log = fx.net.log_tail(3, 1000);
    for line in [
        "checkpoint: took the epoch's boundary block",
        "application state stops here until it is restored",
        "restored the application state from a peer",
        "executing again from the state restored from peers",
    ] {
        assert!(log.contains(line), "validator 3 logs {line:?}");
    }
    // With the archive node back, all four follow one chain.
    fx.net.spawn(1, &binary()).unwrap();
    let target = target + 4;
    fx.net
        .wait_finalized(&[0, 1, 2, 3], target, Duration::from_secs(60))
        .await
        .unwrap();
    assert_same_chain(&fx.net, target).await;
}

/// A genesis-scheduled validator-set change between real processes: validator 4 is outside
/// epoch 0's set and joins at epoch 2, when validator 0 leaves. After the change, with
/// validator 1 stopped, the chain still finalizes: three of the new set's four are a quorum only
/// if validator 4 signs. Validator 0, outside the set, keeps following.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_validator_joins_at_an_epoch_boundary_and_another_leaves() {
    let _turn = one_network_at_a_time().await;
    let mut fx = Fixture::with_profile("quasar-testnet-test-", 5, 100, Profile::Fast);
    fx.net.set_epoch_length(4).unwrap();
    fx.net
        .set_validator_sets(&[(0, vec![0, 1, 2, 3]), (2, vec![1, 2, 3, 4])])
        .unwrap();
    fx.spawn_all();
    // Epoch 2 starts above height 8.
    fx.net
        .wait_finalized(&[0, 1, 2, 3, 4], 10, Duration::from_secs(40))
        .await
        .unwrap();
    fx.net.kill(1);
    let statuses = fx
        .net
        .wait_finalized(&[0, 2, 3, 4], 0, Duration::from_secs(5))
        .await
        .unwrap();
    let target = max_finalized(&statuses) + 6;
    let statuses = fx
        .net
        .wait_finalized(&[0, 2, 3, 4], target, Duration::from_secs(40))
        .await
        .unwrap();
    assert!(statuses.iter().all(|s| s.epoch >= 2), "{statuses:?}");
    let index = |v: u32| {
        statuses
            .iter()
            .find(|s| s.validator == v)
            .unwrap()
            .validator_index
    };
    assert_eq!(
        [index(0), index(2), index(3), index(4)],
        [None, Some(1), Some(2), Some(3)],
        "indices in epoch 2's set [1, 2, 3, 4]"
    );
    assert!(
        statuses.iter().all(|s| s.guard_refusals == 0),
        "a node outside the set asks for no signature: {statuses:?}"
    );
    fx.net.spawn(1, &binary()).unwrap();
    fx.net
        .wait_finalized(&[0, 1, 2, 3, 4], target, Duration::from_secs(40))
        .await
        .unwrap();
    assert_same_chain(&fx.net, target).await;
    assert!(
        fx.net
            .log_tail(4, 2000)
            .contains("the validator set changes"),
        "validator 4 logs its new index"
    );
}

/// The threshold keys change with the validator set, between real processes under `polaris`:
/// the testnet deals each set its own Corona and Pulsar keys, validator 4 signs with its shares
/// of epoch 2's set (it holds none of epoch 0's), and bundles of both sets' epochs reach Quasar
/// finality on every node, validator 0 (which left) included: each bundle's legs verify
/// against its own set's group keys, and its Magnetar leg holds a quorum of its own set's
/// signatures, indexed in that set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threshold_keys_change_with_the_validator_set() {
    let _turn = one_network_at_a_time().await;
    let mut fx = Fixture::with_profile("quasar-testnet-test-", 5, 250, Profile::Polaris);
    let path = fx.net.dir().join(quasar_node::testnet::GENESIS_FILE);
    let genesis = GenesisFile {
        bundle_size: 8,
        epoch_length: 16,
        ..GenesisFile::load(&path).unwrap()
    };
    genesis.save(&path).unwrap();
    fx.net
        .set_validator_sets(&[(0, vec![0, 1, 2, 3]), (2, vec![1, 2, 3, 4])])
        .unwrap();
    let genesis = GenesisFile::load(&path).unwrap();
    let change = &genesis.validator_changes[0];
    assert!(change.corona_group_key.is_some() && change.pulsar_group_key.is_some());
    assert_ne!(change.corona_group_key, genesis.corona_group_key);
    let newcomer =
        quasar_chainspec::load_keys(&fx.net.node_dir(4), &fx.net.key_access(4).unwrap()).unwrap();
    assert_eq!(
        newcomer.dealt.keys().copied().collect::<Vec<_>>(),
        [2],
        "validator 4 holds shares of epoch 2's set only"
    );
    fx.spawn_all();
    // Epoch 2 is heights 33..=48: its second bundle closes at 48.
    let statuses = fx
        .net
        .wait_for_status(
            "Quasar finality in epoch 2 on every node",
            &[0, 1, 2, 3, 4],
            Duration::from_secs(120),
            |s| s.iter().all(|s| s.quasar_finalized_height >= 48),
        )
        .await
        .unwrap();
    assert!(
        statuses.iter().all(|s| s.quasar_unavailable.is_none()),
        "{statuses:?}"
    );
    for height in [16, 48] {
        let block = fx.net.block(0, height).await.unwrap().expect("a block");
        assert_eq!(block.finality.tier, "quasar", "height {height}: {block:?}");
    }
    let log = fx.net.log_tail(4, 4000);
    assert!(
        log.contains("Corona key share loaded") && log.contains("first_epoch=2"),
        "validator 4 loads its epoch-2 Corona share"
    );
    for i in 0..5 {
        let log = fx.net.log_tail(i, 4000);
        for refusal in [
            "leg from a peer refused",
            "combined leg refused",
            "misbehaved",
        ] {
            assert!(!log.contains(refusal), "validator {i}: {refusal}");
        }
    }
    assert_same_chain(&fx.net, 48).await;
}

/// A validator that lost its whole data directory, signing guard included, comes back: it
/// syncs, signs nothing while it listens to the network for a view timeout, fences the view
/// the network brought it to, and signs again from the next view. With another validator down
/// the chain then still finalizes (three of four, so it signs), and no validator has recorded
/// an equivocation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_validator_that_lost_its_data_directory_fences_before_signing_again() {
    let _turn = one_network_at_a_time().await;
    let mut fx = Fixture::with_profile("quasar-testnet-test-", 4, 100, Profile::Fast);
    fx.spawn_all();
    fx.net
        .wait_finalized(&[0, 1, 2, 3], 5, Duration::from_secs(30))
        .await
        .unwrap();
    let at_kill = kill_and_note_height(&mut fx, 3, &[0, 1, 2]).await;
    std::fs::remove_dir_all(fx.net.node_dir(3).join("data")).unwrap();
    fx.net.spawn(3, &binary()).unwrap();
    fx.net
        .wait_finalized(&[0, 1, 2, 3], at_kill + 5, Duration::from_secs(40))
        .await
        .unwrap();
    // It may still be listening when it has caught up: wait for it to fence.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let log = loop {
        let log = fx.net.log_tail(3, 4000);
        if log.contains("listened to the network with a new signing guard")
            || tokio::time::Instant::now() > deadline
        {
            break log;
        }
        sleep(Duration::from_millis(200)).await;
    };
    assert!(log.contains("new signing guard on a chain that is already running"));
    assert!(
        log.contains("listened to the network with a new signing guard")
            && log.contains("fenced_view"),
        "validator 3 fenced a view"
    );
    fx.net.kill(2);
    let statuses = fx
        .net
        .wait_finalized(&[0, 1, 3], at_kill + 12, Duration::from_secs(40))
        .await
        .unwrap();
    assert!(statuses.iter().all(|s| s.evidence == 0), "{statuses:?}");
}

/// The state-loss scenario on real processes: two of four validators stop, so the chain stalls
/// in a view S led by one of the two that are up, which has proposed there. That leader loses
/// its whole data directory (keys kept) and restarts, and once more, routinely, after its
/// listening period. Its earlier incarnation proposed and voted in S, so it must sign nothing
/// there: it waits until the network, with the two others back, moves past S, and no validator
/// records evidence against it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_restarted_on_an_empty_data_directory_waits_out_the_view_it_led() {
    let _turn = one_network_at_a_time().await;
    let mut fx = Fixture::with_profile("quasar-testnet-test-", 4, 100, Profile::Fast);
    fx.spawn_all();
    let genesis = GenesisFile::load(&fx.net.dir().join(GENESIS_FILE))
        .unwrap()
        .check()
        .unwrap();
    let mut height = 5;
    let (leader, stalled) = 'stall: {
        for _ in 0..8 {
            fx.net
                .wait_finalized(&[0, 1, 2, 3], height, Duration::from_secs(40))
                .await
                .unwrap();
            fx.net.kill(1);
            fx.net.kill(2);
            // Two of four form no certificate: the views stop where they are.
            sleep(Duration::from_secs(2)).await;
            let (a, b) = (
                fx.net.status(0).await.unwrap(),
                fx.net.status(3).await.unwrap(),
            );
            let leader = quasar_consensus::leader(
                &genesis.validators,
                &genesis.hash,
                genesis.file.chain_id,
                a.epoch,
                a.view,
            ) as usize;
            if a.view == b.view && (leader == 0 || leader == 3) {
                break 'stall (leader, a.view);
            }
            fx.net.spawn(1, &binary()).unwrap();
            fx.net.spawn(2, &binary()).unwrap();
            height = a.finalized_height.max(b.finalized_height) + 3;
        }
        panic!("the chain never stalled in a view led by validator 0 or 3");
    };
    let other = 3 - leader;
    fx.net.kill(leader);
    std::fs::remove_dir_all(fx.net.node_dir(leader).join("data")).unwrap();
    fx.net.spawn(leader, &binary()).unwrap();
    // Once its listening period is over (it waits, or it fenced a view and signs)...
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let log = fx.net.log_tail(leader, 4000);
        if log.contains("waiting for the network to move past view")
            || log.contains("listened to the network with a new signing guard")
        {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "validator {leader} ends its listening period"
        );
        sleep(Duration::from_millis(200)).await;
    }
    // ...a routine restart on top: a validator that fenced too low would now lead S again.
    fx.net.kill(leader);
    fx.net.spawn(leader, &binary()).unwrap();
    sleep(Duration::from_secs(4)).await;
    let seen = fx.net.status(other).await.unwrap();
    assert_eq!(
        seen.evidence, 0,
        "validator {other} holds evidence against validator {leader}, which signed twice in \
         view {stalled}: {seen:?}"
    );
    assert!(fx
        .net
        .log_tail(leader, 4000)
        .contains("waiting for the network to move past view"));

    fx.net.spawn(1, &binary()).unwrap();
    fx.net.spawn(2, &binary()).unwrap();
    let target = fx.net.status(other).await.unwrap().finalized_height + 5;
    let statuses = all_finalize_without_evidence(&fx.net, target, Duration::from_secs(60)).await;
    let log = fx.net.log_tail(leader, 4000);
    assert!(
        log.contains("listened to the network with a new signing guard"),
        "validator {leader} fenced and signs again"
    );
    assert!(statuses[leader].votes_signed > 0, "{:?}", statuses[leader]);
}

/// Doppelganger protection on real processes: a copy of validator 3 (same keys, its own data
/// directory and addresses, as an operator's standby started by mistake) listens before signing
/// with its new guard, hears through its peers' relays that the key is signing now, and stops
/// with "another instance is signing with this key" without having signed anything. The first
/// instance and the chain go on, and no validator records evidence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_instance_of_a_running_validator_stops_before_it_signs() {
    let _turn = one_network_at_a_time().await;
    let mut fx = Fixture::with_profile("quasar-testnet-test-", 4, 100, Profile::Fast);
    fx.spawn_all();
    fx.net
        .wait_finalized(&[0, 1, 2, 3], 3, Duration::from_secs(30))
        .await
        .unwrap();
    let dir = fx.net.node_dir(3);
    let mut cfg = NodeConfig::load(&dir.join(NODE_CONFIG_FILE)).unwrap();
    let free = |udp: bool| {
        if udp {
            let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            socket.local_addr().unwrap()
        } else {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap()
        }
    };
    cfg.data_dir = dir.join("data-of-the-copy");
    cfg.p2p_listen = free(true);
    cfg.api_listen = free(false);
    cfg.metrics_listen = None;
    let copy_config = dir.join("copy.toml");
    cfg.save(&copy_config).unwrap();
    let copy = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new(binary())
            .arg("run")
            .arg("--config")
            .arg(&copy_config)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the copy stops within a minute")
    .unwrap();
    let output = format!(
        "{}{}",
        String::from_utf8_lossy(&copy.stdout),
        String::from_utf8_lossy(&copy.stderr)
    );
    assert!(!copy.status.success(), "{output}");
    assert!(
        output.contains("another instance is signing with this key"),
        "{output}"
    );
    // It heard the network's certificate through the relays and stopped while listening.
    assert!(
        !output.contains("listened to the network with a new signing guard"),
        "the copy fenced and was ready to sign: {output}"
    );
    assert!(fx.net.is_running(3), "the first instance was disturbed");
    let target = fx.net.status(0).await.unwrap().finalized_height + 3;
    all_finalize_without_evidence(&fx.net, target, Duration::from_secs(30)).await;
}

/// A chain of `n` validator processes (profile `fast`, epochs of 10 blocks) whose sets come
/// from the registry, with validators `joiners` outside its genesis (funded accounts), started
/// and past height 2 on the genesis validators.
async fn registry_chain(prefix: &str, n: usize, joiners: &[usize]) -> Fixture {
    let mut fx = Fixture::with_profile(prefix, n, 100, Profile::Fast);
    fx.net.set_epoch_length(10).unwrap();
    fx.net.take_sets_from_registry().unwrap();
    if !joiners.is_empty() {
        fx.net.make_joiners(joiners, 10_000).unwrap();
    }
    fx.spawn_all();
    let genesis: Vec<usize> = (0..n).filter(|v| !joiners.contains(v)).collect();
    fx.net
        .wait_finalized(&genesis, 2, Duration::from_secs(30))
        .await
        .unwrap();
    fx
}

/// A validator outside the genesis joins by transaction: four genesis validators and a fifth
/// process whose validator only has a funded account (profile `fast`, epochs of 10 blocks,
/// sets from the registry). The fifth follows nobody until it registers: no validator accepts
/// its certificate. It registers, announces where it listens, every node then dials and
/// accepts it, it catches up, and from the set that the boundary two epochs after its
/// announcement decides it signs: all five finalize, it among them. An address the nodes
/// could not dial is refused at the API.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_validator_registers_announces_its_address_and_signs_from_its_set_two_epochs_later() {
    let _turn = one_network_at_a_time().await;
    let fx = registry_chain("quasar-join-test-", 5, &[4]).await;
    let genesis = fx.net.dir().join(GENESIS_FILE);
    let on = format!(
        "--api http://{} --genesis {}",
        fx.net.api(0),
        genesis.display()
    );
    let v4 = fx.net.node_dir(4).to_string_lossy().into_owned();
    let as_v4 = format!("--key-dir {v4} --passphrase-file {v4}/validator.passphrase --fee 0");
    // A host the nodes could not dial is refused at the API, with the rule it breaks.
    let refused = cli_fails(&format!(
        "set-network-address --address validator-4.example:0 {as_v4} {on}"
    ));
    assert!(refused.contains("port"), "{refused}");
    let registered: serde_json::Value = serde_json::from_str(
        cli(&format!(
            "register-validator --amount 100 {as_v4} --wait {on}"
        ))
        .trim(),
    )
    .unwrap();
    assert_eq!(registered["status"], "finalized", "{registered}");
    let announced: serde_json::Value = serde_json::from_str(
        cli(&format!(
            "set-network-address --address {} {as_v4} --wait {on}",
            fx.net.p2p(4)
        ))
        .trim(),
    )
    .unwrap();
    assert_eq!(announced["status"], "finalized", "{announced}");
    let height = announced["height"]
        .as_u64()
        .unwrap_or_else(|| panic!("{announced}"));
    let joined = (height - 1) / 10 + 2;
    let first = joined * 10 + 1;
    let statuses = fx
        .net
        .wait_for_status(
            "all five to finalize in the set that has the fifth",
            &[0, 1, 2, 3, 4],
            Duration::from_secs(180),
            |s| s.iter().all(|s| s.finalized_height >= first + 5),
        )
        .await
        .unwrap();
    assert!(
        statuses.iter().all(|s| s.validator_index.is_some()),
        "{statuses:?}"
    );
    assert!(statuses[4].votes_signed > 0, "{statuses:?}");
    assert!(
        fx.net.same_chain(first + 5).await.unwrap(),
        "the five agree on every block"
    );
    // The certificates of the set of five count a quorum of five (four signers at least).
    let block = fx.net.block(0, first + 4).await.unwrap().unwrap();
    let signers = &block.certificate.signers;
    assert!(
        signers.len() >= 4 && signers.iter().all(|&s| s < 5),
        "{block:?}"
    );
    let listing: serde_json::Value =
        serde_json::from_str(cli(&format!("validators --api http://{}", fx.net.api(4))).trim())
            .unwrap();
    let in_set = listing["validators"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["set_index"].is_u64())
        .count();
    assert_eq!(in_set, 5, "{listing}");
    let p2p = fx.net.p2p(4).to_string();
    assert!(
        listing["validators"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["network_address"] == p2p.as_str()),
        "{listing}"
    );
}

/// Validator sets from the registry (the genesis `validator_set_source` `"registry"`), on 4 real
/// validator processes under profile `fast` with epochs of 10 blocks: genesis validator 3 sends
/// `leave`; the boundary of the epoch it left
/// in decides the set two epochs later without it. From that epoch validator 3 follows the
/// chain without signing, the other three finalize (Nova and Quasar finality) as a set of
/// three, and validator 0, restarted there, decides the same sets again from its state and
/// rejoins. A light client's `balance` refuses an answer from such an epoch with a clear reason
/// (epoch-change proofs are not built).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_genesis_validator_leaves_and_the_set_two_epochs_later_is_the_other_three() {
    let _turn = one_network_at_a_time().await;
    let mut fx = registry_chain("quasar-sets-test-", 4, &[]).await;
    let genesis = fx
        .net
        .dir()
        .join(GENESIS_FILE)
        .to_string_lossy()
        .into_owned();
    let apis: Vec<_> = (0..4).map(|i| fx.net.api(i)).collect();
    let on = |i: usize| format!("--api http://{} --genesis {genesis}", apis[i]);
    let v3 = fx.net.node_dir(3).to_string_lossy().into_owned();
    let left: serde_json::Value = serde_json::from_str(
        cli(&format!(
            "leave --key-dir {v3} --passphrase-file {v3}/validator.passphrase --fee 0 --wait {}",
            on(0)
        ))
        .trim(),
    )
    .unwrap();
    assert_eq!(left["status"], "finalized", "{left}");
    let height = left["height"].as_u64().unwrap_or_else(|| panic!("{left}"));
    let changed = (height - 1) / 10 + 2;
    let first = changed * 10 + 1;
    let statuses = fx
        .net
        .wait_finalized(&[0, 1, 2, 3], first + 2, Duration::from_secs(120))
        .await
        .unwrap();
    assert!(
        statuses[..3].iter().all(|s| s.validator_index.is_some()),
        "{statuses:?}"
    );
    assert_eq!(statuses[3].validator_index, None, "{statuses:?}");
    assert!(statuses.iter().all(|s| s.epoch >= changed), "{statuses:?}");
    // The registry listing says who is in the set now: validator 3 is leaving and out of it.
    let listing: serde_json::Value =
        serde_json::from_str(cli(&format!("validators --api http://{}", apis[0])).trim()).unwrap();
    let validators = listing["validators"].as_array().unwrap();
    let in_set = validators
        .iter()
        .filter(|v| v["set_index"].is_u64())
        .count();
    let leaving: Vec<_> = validators
        .iter()
        .filter(|v| v["status"] == "leaving")
        .collect();
    assert_eq!((in_set, leaving.len()), (3, 1), "{listing}");
    assert!(leaving[0]["set_index"].is_null(), "{listing}");
    assert!(listing["epoch"].as_u64().unwrap() >= changed, "{listing}");
    let signed = fx.net.status(3).await.unwrap().votes_signed;

    // Validator 0 restarts inside the new set's epochs and decides it again from its state.
    fx.net.kill(0);
    fx.net.spawn(0, &binary()).unwrap();
    let after = fx
        .net
        .wait_for_status(
            "the three to finalize with Quasar finality past the restart",
            &[0, 1, 2],
            Duration::from_secs(120),
            |s| {
                s.iter().all(|s| {
                    s.finalized_height >= first + 15 && s.quasar_finalized_height >= first + 10
                })
            },
        )
        .await
        .unwrap();
    assert!(after[0].validator_index.is_some(), "{after:?}");
    assert_eq!(
        fx.net.status(3).await.unwrap().votes_signed,
        signed,
        "validator 3 signs nothing outside the set"
    );

    // A client trusting only the genesis checks an answer of a later epoch by following the
    // epoch-change steps: each set from the boundary two epochs before it.
    let v3_address: serde_json::Value = serde_json::from_str(
        cli(&format!(
            "account address --key-dir {v3} --passphrase-file {v3}/validator.passphrase"
        ))
        .trim(),
    )
    .unwrap();
    let v3_address = v3_address["address"].as_str().unwrap().to_string();
    let balance: serde_json::Value =
        serde_json::from_str(cli(&format!("balance {v3_address} {}", on(1))).trim()).unwrap();
    assert_eq!(balance["stake"], 100, "{balance}");
    assert!(balance["height"].as_u64().unwrap() >= first, "{balance}");

    // The steps, checked one by one against the genesis: in order only, and a step whose set
    // was altered (a stake raised) does not match its proof.
    let genesis_file = GenesisFile::load(std::path::Path::new(&genesis))
        .unwrap()
        .check()
        .unwrap();
    let verifier = quasar_node::light::genesis_verifier(&genesis_file);
    let client = quasar_node::wallet::api_client(&format!("http://{}", apis[1])).unwrap();
    let step = |epoch| {
        let client = client.clone();
        async move { client.epoch_set(epoch).await.unwrap().unwrap() }
    };
    use quasar_node::light::LightError;
    let early = quasar_node::light::verify_epoch_set(&verifier, &genesis_file, &step(3).await);
    assert!(
        matches!(early, Err(LightError::EpochStep { epoch: 3, .. })),
        "{early:?}"
    );
    let two = step(2).await;
    let mut forged = two.clone();
    let mut set = hex::decode(&forged.set_hex).unwrap();
    let last = set.len() - 1;
    set[last] ^= 1;
    forged.set_hex = hex::encode(set);
    let altered = quasar_node::light::verify_epoch_set(&verifier, &genesis_file, &forged);
    assert!(matches!(altered, Err(LightError::Proof(_))), "{altered:?}");
    assert!(!verifier.sets().known(2), "a refused step decides nothing");
    for epoch in 2..=changed {
        let step = step(epoch).await;
        quasar_node::light::verify_epoch_set(&verifier, &genesis_file, &step).unwrap();
    }
    let final_set = verifier.members(changed);
    assert_eq!(final_set.validators.len(), 3, "validator 3 left");
}

/// The account commands against a running network, as a user runs them: two new account keys,
/// one funded at genesis; a transfer waited to finality; balances read from other validators
/// and checked against the genesis; the receiver's first transaction carries its key, then it
/// stakes. A wrong passphrase, an unfunded sender, an overdraft, an unstake above the stake, a
/// genesis of another chain and a malformed address each get a clear error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_holder_transfers_and_checks_balances_with_the_client_commands() {
    let _turn = one_network_at_a_time().await;
    let mut fx = Fixture::create("quasar-client-test-", 4, 100);
    let dir = fx.net.dir().to_path_buf();
    let path = |name: &str| dir.join(name).to_string_lossy().into_owned();
    let address = |out: String| -> String {
        let json: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        json["address"].as_str().unwrap().to_string()
    };
    let (alice_key, bob_key, carol_key) = (path("alice.key"), path("bob.key"), path("carol.key"));
    let alice = address(cli(&format!("account new --out {alice_key}")));
    let bob = address(cli(&format!("account new --out {bob_key}")));
    let carol = address(cli(&format!("account new --out {carol_key}")));
    assert_eq!(
        address(cli(&format!("account address --key {alice_key}"))),
        alice
    );
    let again = cli_fails(&format!("account new --out {alice_key}"));
    assert!(again.contains("already exists"), "{again}");
    let alice_bytes: [u8; 32] = hex::decode(&alice).unwrap().try_into().unwrap();
    // Dave and Erin are funded at genesis, with no key in state (they send none in the
    // commands below): admission must find their keys before it admits anything of theirs.
    let (dave_key, erin_key) = (path("dave.key"), path("erin.key"));
    let dave = address(cli(&format!("account new --out {dave_key}")));
    let erin = address(cli(&format!("account new --out {erin_key}")));
    let bytes_of = |a: &str| -> [u8; 32] { hex::decode(a).unwrap().try_into().unwrap() };
    fx.net
        .fund_accounts(&[alice_bytes, bytes_of(&dave), bytes_of(&erin)], 1_000_000)
        .unwrap();
    fx.spawn_all();
    fx.net
        .wait_finalized(&[0, 1, 2, 3], 2, Duration::from_secs(30))
        .await
        .unwrap();
    let genesis = path(GENESIS_FILE);
    // Validator i's API and the genesis, as every chain command takes them.
    let on = |i: usize| format!("--api http://{} --genesis {genesis}", fx.net.api(i));
    let json = |text: String| serde_json::from_str::<serde_json::Value>(text.trim()).unwrap();

    let sent = json(cli(&format!(
        "transfer --key {alice_key} --to {bob} --amount 1000 --fee 2 --wait {}",
        on(0)
    )));
    assert_eq!(sent["status"], "finalized", "{sent}");
    let hash = sent["hash"].as_str().unwrap();
    let status = json(cli(&format!(
        "tx-status {hash} --api http://{}",
        fx.net.api(2)
    )));
    assert_eq!(status["height"], sent["height"], "{status}");

    // Other validators' state, checked against the genesis (a validator may lag by a block).
    let bob_seen = balance_when(&bob, &on(1), "balance", 1000).await;
    assert_eq!(
        (&bob_seen["nonce"], &bob_seen["verified"]),
        (&0.into(), &true.into()),
        "{bob_seen}"
    );
    let alice_seen = balance_when(&alice, &on(1), "nonce", 1).await;
    assert_eq!(alice_seen["balance"], 1_000_000 - 1000 - 2, "{alice_seen}");
    assert_eq!(
        json(cli(&format!("balance {carol} {}", on(0))))["exists"],
        false
    );

    // Bob's first transaction carries his key; then he stakes.
    let back = json(cli(&format!(
        "transfer --key {bob_key} --to {alice} --amount 10 --wait {}",
        on(3)
    )));
    assert_eq!(back["status"], "finalized", "{back}");
    balance_when(&bob, &on(3), "nonce", 1).await;
    let staked = json(cli(&format!(
        "stake --key {bob_key} --amount 100 --wait {}",
        on(3)
    )));
    assert_eq!(staked["status"], "finalized", "{staked}");
    let bob_seen = balance_when(&bob, &on(3), "stake", 100).await;
    assert_eq!(bob_seen["balance"], 1000 - 10 - 1 - 100 - 1, "{bob_seen}");

    // Validators are accounts. Validator 0 is registered from the genesis, so registering it
    // again is refused at the API with the registry's reason (its account holds its stake
    // and no balance, so the fee is 0).
    let v0 = fx.net.node_dir(0).to_string_lossy().into_owned();
    let v0_keys = format!("--key-dir {v0} --passphrase-file {v0}/validator.passphrase");
    let again = cli_fails(&format!(
        "register-validator {v0_keys} --amount 0 --fee 0 {}",
        on(0)
    ));
    assert!(again.contains("registered already"), "{again}");
    // A new validator: its account (the address of its identity key) is funded, registers
    // with a stake, and leaves; its stake is then bonded.
    let joiner = path("joiner");
    cli(&format!("keygen --out {joiner}"));
    let joiner_address = address(cli(&format!("account address --key-dir {joiner}")));
    let funded = json(cli(&format!(
        "transfer --key {alice_key} --to {joiner_address} --amount 5000 --wait {}",
        on(0)
    )));
    assert_eq!(funded["status"], "finalized", "{funded}");
    balance_when(&joiner_address, &on(1), "balance", 5000).await;
    let registered = json(cli(&format!(
        "register-validator --key-dir {joiner} --amount 3000 --wait {}",
        on(1)
    )));
    assert_eq!(registered["status"], "finalized", "{registered}");
    let joiner_seen = balance_when(&joiner_address, &on(2), "stake", 3000).await;
    assert_eq!(joiner_seen["balance"], 5000 - 3000 - 1, "{joiner_seen}");
    // The registry as node 2 says it: the four genesis validators and the joiner, active.
    let registry = json(cli(&format!("validators --api http://{}", fx.net.api(2))));
    let listed = registry["validators"].as_array().unwrap();
    assert_eq!(listed.len(), 5, "{registry}");
    let joiner_entry = listed
        .iter()
        .find(|v| v["address"] == joiner_address.as_str())
        .unwrap_or_else(|| panic!("the joiner is not listed: {registry}"));
    assert_eq!(
        (&joiner_entry["status"], &joiner_entry["stake"]),
        (&"active".into(), &3000.into()),
        "{registry}"
    );
    assert!(
        listed
            .iter()
            .filter(|v| v["registered_at"] == 0)
            .all(|v| v["status"] == "active"),
        "{registry}"
    );
    let bonded = cli_fails(&format!("unstake --key-dir {joiner} --amount 1 {}", on(2)));
    assert!(bonded.contains("leave the validator set first"), "{bonded}");
    let left = json(cli(&format!("leave --key-dir {joiner} --wait {}", on(2))));
    assert_eq!(left["status"], "finalized", "{left}");
    balance_when(&joiner_address, &on(2), "nonce", 2).await;
    let registry = json(cli(&format!("validators --api http://{}", fx.net.api(2))));
    let leaving = registry["validators"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["address"] == joiner_address.as_str())
        .cloned()
        .unwrap_or_default();
    assert_eq!(leaving["status"], "leaving", "{registry}");
    assert!(leaving["since"].as_u64().is_some(), "{registry}");
    let twice = cli_fails(&format!("leave --key-dir {joiner} {}", on(2)));
    assert!(twice.contains("not an active validator"), "{twice}");

    // Clear refusals.
    let wrong = std::process::Command::new(binary())
        .args(["account", "address", "--key", &bob_key])
        .env("QUASAR_KEY_PASSPHRASE", "not the passphrase")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&wrong.stderr);
    assert!(
        !wrong.status.success() && stderr.contains("wrong passphrase"),
        "{stderr}"
    );
    let refusals = [
        (
            format!(
                "transfer --key {carol_key} --to {alice} --amount 1 {}",
                on(0)
            ),
            "does not exist on this chain yet",
        ),
        (
            format!(
                "transfer --key {alice_key} --to {bob} --amount 1000000 {}",
                on(0)
            ),
            "the chain would refuse it: needs 1000001",
        ),
        (
            format!("unstake --key {bob_key} --amount 101 {}", on(3)),
            "the chain would refuse it",
        ),
        (format!("balance abcd --genesis {genesis}"), "64 hex digits"),
        (
            format!(
                "report-equivocation --key {alice_key} --view 1 --signer 0 {}",
                on(0)
            ),
            "holds no evidence of conflicting votes or proposals by validator 0 in view 1",
        ),
        (
            format!("tx-status {hash} --api {}", fx.net.api(0)),
            "--api must be a URL such as http://",
        ),
    ];
    for (command, expected) in refusals {
        let error = cli_fails(&command);
        assert!(error.contains(expected), "{command}: {error}");
    }
    // Straight to the API: a later transaction is checked against the key in state, a used
    // nonce is a replay, and a sender nobody funded is refused before its signature is read.
    let chain_id = GenesisFile::load(std::path::Path::new(&genesis))
        .unwrap()
        .chain_id;
    let open = |key: &str| {
        quasar_node::wallet::open_account_file(std::path::Path::new(key), KEY_PASSPHRASE.as_bytes())
            .unwrap()
    };
    let (alice_sk, carol_sk) = (open(&alice_key), open(&carol_key));
    let (dave_sk, erin_sk) = (open(&dave_key), open(&erin_key));
    let signing =
        |signer: &quasar_crypto::mldsa::SecretKey<_>, sender: &str, nonce, carry: bool| {
            quasar_app::Transaction {
                chain_id,
                nonce,
                fee: 1,
                sender: bytes_of(sender),
                public_key: carry.then(|| signer.public_key().clone()),
                action: quasar_app::Action::Transfer {
                    to: alice_bytes,
                    amount: 1,
                },
            }
            .sign(signer, &mut rand::rngs::OsRng)
            .unwrap()
            .as_bytes()
            .to_vec()
        };
    let signed_by = |signer, sender: &str, nonce| signing(signer, sender, nonce, false);
    let refused = |submitted, (want, expected): (u16, &str)| match submitted {
        testnet::Submitted::Rejected { status, body } => {
            assert!(status == want && body.contains(expected), "{status} {body}")
        }
        accepted => panic!("accepted: {accepted:?}"),
    };
    let unknown_key = (503, "the sender's key is unknown here");
    let bad_signature = (400, "signature does not verify");
    for (tx, expected) in [
        (signed_by(&carol_sk, &bob, 2), bad_signature),
        (
            signed_by(&alice_sk, &alice, 0),
            (400, "nonce 0 is used: the account's next is 2"),
        ),
        (
            signed_by(&carol_sk, &carol, 0),
            (400, "the sender has no account in the finalized state"),
        ),
        // A funded account whose key nobody has seen: its transactions cannot be verified, so
        // none enters the pool, forged (a flood's) or genuine.
        (signed_by(&carol_sk, &dave, 1), unknown_key),
        (signed_by(&dave_sk, &dave, 1), unknown_key),
        (
            vec![0; 64 * 1024 + 1],
            (413, "larger than a transaction may be (64 KiB)"),
        ),
    ] {
        refused(fx.net.submit_tx(0, tx).await.unwrap(), expected);
    }
    // Each refusal counts by reason and source.
    let text = fx.net.metrics(0).await.unwrap();
    for (reason, at_least) in [("unknown_key", 2.0), ("invalid", 3.0)] {
        let name = format!("quasar_mempool_refused_total{{reason=\"{reason}\",source=\"client\"}}");
        let value = text
            .lines()
            .find_map(|line| line.strip_prefix(name.as_str()));
        let value: f64 = value.and_then(|v| v.trim().parse().ok()).unwrap_or(0.0);
        assert!(value >= at_least, "{name} is {value}:\n{text}");
    }
    // Dave's first transaction carries his key: his next is then checked against it, pending
    // or final.
    let first = fx.net.submit_tx(0, signing(&dave_sk, &dave, 0, true));
    assert!(matches!(
        first.await.unwrap(),
        testnet::Submitted::Accepted(_)
    ));
    refused(
        fx.net
            .submit_tx(0, signed_by(&carol_sk, &dave, 1))
            .await
            .unwrap(),
        bad_signature,
    );
    let next = fx.net.submit_tx(0, signed_by(&dave_sk, &dave, 1));
    assert!(matches!(
        next.await.unwrap(),
        testnet::Submitted::Accepted(_)
    ));
    // One batch: Erin's first transaction, then her next two (one forged), checked against
    // the key the first carries; a later one out of order, ahead of its key, waits; an item
    // over 64 KiB is refused on its own.
    let batch = quasar_wire::TxBatch {
        txs: vec![
            signed_by(&erin_sk, &erin, 1),
            signing(&erin_sk, &erin, 0, true),
            signed_by(&erin_sk, &erin, 2),
            signed_by(&carol_sk, &erin, 3),
            vec![0; 64 * 1024 + 1],
        ],
    };
    let http = quasar_client::http_client(Duration::from_secs(30)).unwrap();
    let api = quasar_client::Client::with_http(http, format!("http://{}", fx.net.api(1)));
    let answer = match api.submit_txs(batch.encode().unwrap()).await.unwrap() {
        quasar_client::BatchSubmitted::Answered { answer, .. } => answer,
        other => panic!("{other:?}"),
    };
    let statuses: Vec<u16> = answer.results.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [503, 200, 200, 400, 413], "{answer:?}");
    balance_when(&erin, &on(1), "nonce", 1).await;
    let mut other = GenesisFile::load(std::path::Path::new(&genesis)).unwrap();
    other.chain_id += 1;
    let other_path = path("other-genesis.json");
    other.save(std::path::Path::new(&other_path)).unwrap();
    let forged = cli_fails(&format!(
        "balance {alice} --api http://{} --genesis {other_path}",
        fx.net.api(0)
    ));
    assert!(
        forged.contains("does not verify against the genesis"),
        "{forged}"
    );
}

/// `quasar-node` with `line` split at whitespace ([`ok`]): its stdout.
fn cli(line: &str) -> String {
    ok(&line.split_whitespace().collect::<Vec<_>>())
}

/// `quasar-node` with `line` split at whitespace, which must fail ([`fails`]): its stderr.
fn cli_fails(line: &str) -> String {
    fails(&line.split_whitespace().collect::<Vec<_>>())
}

/// `quasar-node balance who chain` (`chain`: its `--api` and `--genesis`), polled (up to 5 s:
/// the node may lag a block behind) until its `field` is `value`; the last answer.
async fn balance_when(who: &str, chain: &str, field: &str, value: u64) -> serde_json::Value {
    let mut seen = serde_json::Value::Null;
    for _ in 0..50 {
        seen = serde_json::from_str(cli(&format!("balance {who} {chain}")).trim()).unwrap();
        if seen[field] == value {
            return seen;
        }
        sleep(Duration::from_millis(100)).await;
    }
    panic!("{who}'s {field} never became {value} ({chain}): {seen}");
}
