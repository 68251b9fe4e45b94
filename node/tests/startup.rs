//! What an operator sees in the first minute (issue 29 "The first hour of an operator"): a
//! missing input file or a taken port is reported before anything is created on disk, a second node on a data
//! directory in use is refused by name, and peers given by host name (`localhost:PORT`) form a
//! network that finalizes.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use quasar_node::config::{NodeConfig, RemoteSignerConfig, SignerMode};
use quasar_node::runtime::{self, NodeError};
use quasar_node::testnet::{Testnet, NODE_CONFIG_FILE};

use common::{binary, one_network_at_a_time, Fixture};

/// Regression: a missing `remote_signer.token_file` (or rollup proving key) was reported only
/// after the data directory and the signing guard had been created, leaving a half-made data
/// directory behind. Every file the node reads is now checked first: each missing file is
/// named, and the data directory does not exist afterwards.
#[tokio::test]
async fn a_missing_input_file_is_named_and_leaves_no_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    let net = Testnet::create(dir.path(), 1, 100).unwrap();
    let cfg = NodeConfig::load(&net.node_dir(0).join(NODE_CONFIG_FILE)).unwrap();
    let missing = dir.path().join("missing");
    let cases: Vec<(NodeConfig, PathBuf)> = vec![
        (
            NodeConfig {
                genesis: missing.join("genesis.json"),
                ..cfg.clone()
            },
            missing.join("genesis.json"),
        ),
        (
            NodeConfig {
                key_dir: missing.clone(),
                ..cfg.clone()
            },
            missing.clone(),
        ),
        (
            NodeConfig {
                signer: SignerMode::Remote,
                remote_signer: Some(RemoteSignerConfig {
                    url: "http://127.0.0.1:7300".into(),
                    token_file: missing.join("signer.token"),
                    timeout_ms: 2_000,
                }),
                ..cfg.clone()
            },
            missing.join("signer.token"),
        ),
        (
            NodeConfig {
                rollup_proving_key: Some(missing.join("rollup.pk")),
                ..cfg.clone()
            },
            missing.join("rollup.pk"),
        ),
    ];
    for (cfg, file) in cases {
        let err = runtime::run(cfg.clone()).await.unwrap_err().to_string();
        assert!(
            err.contains(&file.display().to_string()),
            "the error names {}: {err}",
            file.display()
        );
        assert!(
            !cfg.data_dir.exists(),
            "{} was created before {} was found missing",
            cfg.data_dir.display(),
            file.display()
        );
    }
}

/// A taken port (the API's, the metrics', the QUIC one) is reported as such before the data
/// directory is made: the error names the listener and nothing is left on disk.
#[tokio::test]
async fn a_taken_port_is_named_and_leaves_no_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    let net = Testnet::create(dir.path(), 1, 100).unwrap();
    let cfg = NodeConfig::load(&net.node_dir(0).join(NODE_CONFIG_FILE)).unwrap();
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let taken_tcp = tcp.local_addr().unwrap();
    let cases = [
        (
            NodeConfig {
                api_listen: taken_tcp,
                ..cfg.clone()
            },
            "api_listen",
        ),
        (
            NodeConfig {
                metrics_listen: Some(taken_tcp),
                ..cfg.clone()
            },
            "metrics_listen",
        ),
        (
            NodeConfig {
                p2p_listen: udp.local_addr().unwrap(),
                ..cfg.clone()
            },
            "p2p_listen",
        ),
    ];
    for (cfg, listener) in cases {
        match runtime::run(cfg.clone()).await {
            Err(NodeError::Listen { what, .. }) => assert_eq!(what, listener),
            other => panic!("{listener}: {other:?}"),
        }
        assert!(
            !cfg.data_dir.exists(),
            "{listener}: the data directory was made"
        );
    }
}

/// Issue 29, both start-up fixes in one network: four validators that know each other as
/// `localhost:PORT` (resolved at each dial) finalize; then a second `quasar-node run` on
/// validator 0's data directory, which used to fail with sled's raw lock error, says that
/// another quasar-node is using the directory, and validator 0 keeps running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peers_by_host_name_finalize_and_a_second_node_on_a_data_directory_is_refused() {
    let _serial = one_network_at_a_time().await;
    let mut fixture = Fixture::create("quasar-startup-", 4, 200);
    let net = &fixture.net;
    for i in 0..4 {
        let path = net.node_dir(i).join(NODE_CONFIG_FILE);
        let mut cfg = NodeConfig::load(&path).unwrap();
        for peer in &mut cfg.peers {
            let port = match &peer.address {
                quasar_p2p::PeerAddress::Ip(addr) => addr.port(),
                other => panic!("the testnet writes IP literals, got {other}"),
            };
            peer.address = format!("localhost:{port}").parse().unwrap();
        }
        cfg.save(&path).unwrap();
    }
    fixture.spawn_all();
    let net = &fixture.net;
    net.wait_finalized(&[0, 1, 2, 3], 2, Duration::from_secs(60))
        .await
        .unwrap();

    let config = net.node_dir(0).join(NODE_CONFIG_FILE);
    let second = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::process::Command::from(Command::new(binary()))
            .arg("run")
            .arg("--config")
            .arg(&config)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the second node exits at once")
    .unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "{stderr}");
    let data_dir = NodeConfig::load(&config).unwrap().data_dir;
    assert!(
        stderr.contains(&format!(
            "another quasar-node is using {}",
            data_dir.display()
        )),
        "{stderr}"
    );
    assert!(net.is_running(0), "the first node was disturbed");
    net.wait_finalized(&[0], 4, Duration::from_secs(30))
        .await
        .unwrap();
}

/// The mapping the message above relies on, without processes: while a node's start-up holds
/// the data directory, opening it again is [`NodeError::DataDirInUse`].
#[test]
fn opening_a_data_directory_twice_is_data_dir_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let held = runtime::open_data_dir(&data).unwrap();
    match runtime::open_data_dir(&data) {
        Err(NodeError::DataDirInUse { dir, .. }) => assert_eq!(dir, data),
        Err(e) => panic!("expected DataDirInUse, got {e}"),
        Ok(_) => panic!("opened a data directory in use"),
    }
    drop(held);
}

#[test]
fn a_data_directory_that_is_a_file_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    std::fs::write(&file, b"not a directory").unwrap();
    match runtime::open_data_dir(&file) {
        Err(e @ NodeError::Io { .. }) => {
            let text = e.to_string();
            assert!(text.contains("is not a directory"), "{text}");
            assert!(text.contains("data_dir"), "{text}");
        }
        Err(e) => panic!("expected Io, got {e}"),
        Ok(_) => panic!("opened a file as a data directory"),
    }
    assert_eq!(std::fs::read(&file).unwrap(), b"not a directory");
}

/// Runs `quasar-node guard ARGS…`; its exit status, stdout and stderr.
fn guard_cli(args: &[&std::ffi::OsStr]) -> (bool, String, String) {
    let output = Command::new(binary())
        .arg("guard")
        .args(args)
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A validator moves to a new data directory (another host) with its signing history instead
/// of its guard file: `guard export` on the running node, `guard import` refused while the
/// node runs, imported into the new directory once it is stopped, and the validator signs again
/// from there at once (no listening period: its guard is not new) without a refusal or an
/// equivocation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_validator_moves_to_a_new_data_directory_with_its_signing_history() {
    let _serial = one_network_at_a_time().await;
    let mut fixture = Fixture::create("quasar-guard-move-", 4, 200);
    fixture.spawn_all();
    fixture
        .net
        .wait_finalized(&[0, 1, 2, 3], 3, Duration::from_secs(60))
        .await
        .unwrap();
    let config = fixture.net.node_dir(0).join(NODE_CONFIG_FILE);
    let history = fixture.net.node_dir(0).join("history.json");
    let (ok, _, stderr) = guard_cli(&[
        "export".as_ref(),
        "--config".as_ref(),
        config.as_os_str(),
        "--out".as_ref(),
        history.as_os_str(),
    ]);
    assert!(ok, "{stderr}");
    let document =
        quasar_chainspec::guard_history::SigningHistory::parse(&std::fs::read(&history).unwrap())
            .unwrap();
    assert!(!document.views.is_empty(), "a running validator has signed");

    let import = [
        "import".as_ref(),
        "--config".as_ref(),
        config.as_os_str(),
        "--file".as_ref(),
        history.as_os_str(),
    ];
    let (ok, _, stderr) = guard_cli(&import);
    assert!(
        !ok && stderr.contains("stop it before importing"),
        "{stderr}"
    );

    fixture.net.kill(0);
    let mut cfg = NodeConfig::load(&config).unwrap();
    // A data directory with a block store but no guard is refused: a guard made there would
    // be older than the store's history.
    cfg.data_dir = fixture.net.node_dir(0).join("store-only");
    std::fs::create_dir_all(cfg.data_dir.join("db")).unwrap();
    cfg.save(&config).unwrap();
    let (ok, _, stderr) = guard_cli(&import);
    assert!(
        !ok && stderr.contains("holds a block store but no signing guard"),
        "{stderr}"
    );
    cfg.data_dir = fixture.net.node_dir(0).join("moved");
    cfg.save(&config).unwrap();
    // A document whose genesis contradicts its owner was altered: refused.
    let mut altered: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&history).unwrap()).unwrap();
    altered["genesis_hash"] = "11".repeat(32).into();
    let altered_file = fixture.net.node_dir(0).join("altered.json");
    std::fs::write(&altered_file, altered.to_string()).unwrap();
    let (ok, _, stderr) = guard_cli(&[
        "import".as_ref(),
        "--config".as_ref(),
        config.as_os_str(),
        "--file".as_ref(),
        altered_file.as_os_str(),
    ]);
    assert!(!ok && stderr.contains("it was altered"), "{stderr}");
    assert!(!cfg.data_dir.join(quasar_storage::GUARD_FILE).exists());
    let (ok, _, stderr) = guard_cli(&import);
    assert!(ok && stderr.contains("view(s) added"), "{stderr}");
    let (ok, stdout, stderr) =
        guard_cli(&["inspect".as_ref(), "--config".as_ref(), config.as_os_str()]);
    assert!(ok, "{stderr}");
    let highest = document.views.last().map(|v| v.view).unwrap_or_default();
    assert!(
        stdout.contains(&format!("highest view {highest}")),
        "{stdout}"
    );

    fixture.net.spawn(0, &binary()).unwrap();
    let others = fixture
        .net
        .wait_finalized(&[1, 2, 3], 0, Duration::from_secs(5))
        .await
        .unwrap();
    let target = others.iter().map(|s| s.finalized_height).max().unwrap_or(0) + 4;
    let statuses = fixture
        .net
        .wait_finalized(&[0, 1, 2, 3], target, Duration::from_secs(60))
        .await
        .unwrap();
    for s in &statuses {
        assert_eq!((s.evidence, s.guard_refusals), (0, 0), "{s:?}");
    }
    assert!(statuses[0].votes_signed > 0, "{:?}", statuses[0]);
}

/// `quasar-node init` writes a node.toml that parses as written and, given every validator's
/// address, describes the same validator and peers as the one the testnet harness writes; it
/// refuses a key the genesis does not name and a peer list of the wrong length.
#[test]
fn init_writes_a_working_node_toml_from_keys_and_genesis() {
    use quasar_node::init::{render_node_toml, InitOptions};
    let dir = tempfile::tempdir().unwrap();
    let net = Testnet::create(dir.path(), 4, 100).unwrap();
    let configs: Vec<NodeConfig> = (0..4)
        .map(|i| NodeConfig::load(&net.node_dir(i).join(NODE_CONFIG_FILE)).unwrap())
        .collect();
    let cfg = &configs[1];
    let options = InitOptions {
        key_dir: cfg.key_dir.clone(),
        genesis: cfg.genesis.clone(),
        data_dir: cfg.data_dir.clone(),
        p2p_listen: cfg.p2p_listen,
        api_listen: cfg.api_listen,
        key_passphrase_file: cfg.key_passphrase_file.clone(),
        peers: configs
            .iter()
            .map(|c| c.p2p_listen.to_string().parse().unwrap())
            .collect(),
    };
    let text = render_node_toml(&options).unwrap();
    let written = NodeConfig::from_toml(&text, std::path::Path::new("/elsewhere")).unwrap();
    assert_eq!(written.key_dir, cfg.key_dir);
    assert_eq!(written.genesis, cfg.genesis);
    assert_eq!(written.data_dir, cfg.data_dir);
    assert_eq!(
        (written.p2p_listen, written.api_listen),
        (cfg.p2p_listen, cfg.api_listen)
    );
    assert_eq!(written.peers, cfg.peers, "{text}");
    assert_eq!(written.key_passphrase_file, cfg.key_passphrase_file);

    let commented = render_node_toml(&InitOptions {
        peers: Vec::new(),
        ..options.clone()
    })
    .unwrap();
    assert!(NodeConfig::from_toml(&commented, std::path::Path::new("/"))
        .unwrap()
        .peers
        .is_empty());
    assert_eq!(commented.matches("# [[peers]]").count(), 3, "{commented}");

    let too_few = render_node_toml(&InitOptions {
        peers: options.peers[..3].to_vec(),
        ..options.clone()
    });
    assert!(too_few
        .unwrap_err()
        .to_string()
        .contains("names 3 addresses"));
    let stranger = dir.path().join("stranger");
    quasar_chainspec::keygen_with_set(
        &stranger,
        "stranger",
        quasar_crypto::magnetar::ParameterSet::Shake192f,
        &quasar_chainspec::KeyAccess::plaintext(),
    )
    .unwrap();
    let foreign = render_node_toml(&InitOptions {
        key_dir: stranger.clone(),
        ..options.clone()
    });
    assert!(foreign
        .unwrap_err()
        .to_string()
        .contains("is not among the validators"));
    // Where the registry gives the sets, the stranger joins: every genesis validator is a peer.
    let genesis = dir.path().join(quasar_node::testnet::GENESIS_FILE);
    let registry = quasar_chainspec::GenesisFile {
        profile: "fast".into(),
        bundle_size: 1,
        epoch_length: 10,
        validator_set_source: quasar_chainspec::SetSource::Registry,
        corona_group_key: None,
        pulsar_group_key: None,
        pulsar_committee: None,
        ..quasar_chainspec::GenesisFile::load(&genesis).unwrap()
    };
    registry.save(&genesis).unwrap();
    let joiner = render_node_toml(&InitOptions {
        key_dir: stranger,
        ..options
    })
    .unwrap();
    assert!(joiner.contains("joins by registering"), "{joiner}");
    let written = NodeConfig::from_toml(&joiner, std::path::Path::new("/")).unwrap();
    assert_eq!(written.peers.len(), 4, "{joiner}");
}
