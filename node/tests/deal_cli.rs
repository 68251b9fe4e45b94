//! `quasar-node deal` on the real binary: `keygen` × 3, `genesis`, the profile set to `aurora`,
//! then the dealer writes a Corona and a Pulsar 3-of-3 key: one share per validator key file
//! (mode 0600, loadable, bound to its group key) and the group keys in the genesis file. Bad
//! calls are refused without touching anything.

mod common;

use common::{fails, ok, run};

use std::path::{Path, PathBuf};

use quasar_chainspec::{load_keys, GenesisFile, SECRET_KEY_FILE};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn deal_writes_shares_and_group_keys_and_refuses_bad_calls() {
    let dir = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = ["a", "b", "c"].iter().map(|n| dir.path().join(n)).collect();
    for d in &dirs {
        ok(&["keygen", "--out", s(d)]);
    }
    let genesis = dir.path().join("genesis.json");
    let mut args = vec!["genesis", "--out", s(&genesis), "--validators"];
    args.extend(dirs.iter().map(|d| s(d)));
    ok(&args);
    let deal = |genesis: &Path, order: &[&PathBuf]| {
        let mut args = vec!["deal", "--genesis", s(genesis), "--validators"];
        args.extend(order.iter().map(|d| s(d)));
        run(&args)
    };
    let in_order: Vec<&PathBuf> = dirs.iter().collect();

    // A `fast` genesis has no threshold leg: nothing to deal.
    let mut file = GenesisFile::load(&genesis).unwrap();
    file.profile = "fast".into();
    file.save(&genesis).unwrap();
    let out = deal(&genesis, &in_order);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to deal"));

    file.profile = "aurora".into();
    file.save(&genesis).unwrap();
    // Key directories out of genesis order are refused, and nothing is written.
    let swapped = [&dirs[1], &dirs[0], &dirs[2]];
    let out = deal(&genesis, &swapped);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("does not hold validator 0"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(load_keys(&dirs[0], &common::key_access())
        .unwrap()
        .dealt
        .is_empty());
    assert_eq!(GenesisFile::load(&genesis).unwrap(), file);

    // A key file that already holds a share (the last one) refuses the deal before any other
    // key file is written.
    let last = dirs[2].join(SECRET_KEY_FILE);
    let original = std::fs::read(&last).unwrap();
    let mut edited = common::read_secret_json(&last);
    edited["corona_share"] = serde_json::Value::String("00".into());
    common::write_secret_json(&last, &edited);
    let out = deal(&genesis, &in_order);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("already holds threshold key shares"));
    assert!(load_keys(&dirs[0], &common::key_access())
        .unwrap()
        .dealt
        .is_empty());
    assert_eq!(GenesisFile::load(&genesis).unwrap(), file);
    std::fs::write(&last, original).unwrap();

    // A genesis that does not check (epochs cutting bundles in two) is refused before any key
    // file is written.
    let mut bad = file.clone();
    bad.epoch_length = 10;
    bad.save(&genesis).unwrap();
    let out = deal(&genesis, &in_order);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a multiple of bundle_size"));
    assert!(load_keys(&dirs[0], &common::key_access())
        .unwrap()
        .dealt
        .is_empty());
    file.save(&genesis).unwrap();

    let out = deal(&genesis, &in_order);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dealt = GenesisFile::load(&genesis).unwrap();
    let corona_key = dealt.corona_group_key.clone().expect("a Corona group key");
    let pulsar_key = dealt.pulsar_group_key.clone().expect("a Pulsar group key");
    let checked = dealt.clone().check().unwrap();
    assert!(checked.cert_policy().is_ok(), "aurora has every key now");
    for (i, d) in dirs.iter().enumerate() {
        let mut keys = load_keys(d, &common::key_access()).unwrap();
        let dealt = keys.dealt.remove(&0).expect("genesis set shares");
        let corona = dealt.corona.expect("a Corona share");
        assert_eq!(usize::from(corona.index()), i);
        assert_eq!((corona.threshold(), corona.parties()), (3, 3));
        assert_eq!(hex::encode(corona.group_key().to_bytes()), corona_key);
        let (group, share) = dealt.pulsar.expect("a Pulsar key");
        assert_eq!(usize::from(share.party()), i);
        assert_eq!(hex::encode(group.public_key_bytes()), pulsar_key);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(d.join(SECRET_KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
    // A key file missing one half of its Pulsar key names the missing half.
    let first = dirs[0].join(SECRET_KEY_FILE);
    let dealt_file = std::fs::read(&first).unwrap();
    let dealt_json = common::read_secret_json(&first);
    for (removed, named) in [
        ("pulsar_group", "pulsar_group is missing"),
        ("pulsar_share", "pulsar_share is missing"),
    ] {
        let mut edited = dealt_json.clone();
        edited.as_object_mut().unwrap().remove(removed);
        common::write_secret_json(&first, &edited);
        let err = load_keys(&dirs[0], &common::key_access())
            .err()
            .expect("refused")
            .to_string();
        assert!(err.contains(named), "{err}");
    }
    std::fs::write(&first, dealt_file).unwrap();
    assert!(load_keys(&dirs[0], &common::key_access()).is_ok());
    // Dealing twice would replace the keys of a chain: refused.
    let err = fails(&[
        "deal",
        "--genesis",
        s(&genesis),
        "--validators",
        s(&dirs[0]),
        s(&dirs[1]),
        s(&dirs[2]),
    ]);
    assert!(err.contains("already has threshold group keys"), "{err}");
}

/// `genesis --change` schedules a validator-set change from key directories, and `deal` (key
/// directories in roster order) gives each set its own keys: the newcomer holds shares of the
/// changed set only, the leaver of the genesis set only. A change whose Magnetar keys are of
/// another parameter set than the genesis's, and a malformed `--change`, are refused.
#[test]
fn genesis_change_and_deal_give_each_set_its_keys() {
    let dir = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = (0..4).map(|i| dir.path().join(format!("v{i}"))).collect();
    for d in &dirs {
        ok(&["keygen", "--out", s(d)]);
    }
    let genesis = dir.path().join("genesis.json");
    let change = format!("2:{},{},{}", s(&dirs[1]), s(&dirs[2]), s(&dirs[3]));
    for bad in ["2", "x:a", "2:"] {
        let err = fails(&[
            "genesis",
            "--out",
            s(&genesis),
            "--change",
            bad,
            "--validators",
            s(&dirs[0]),
        ]);
        assert!(err.contains(&format!("{bad:?}")), "{bad}: {err}");
    }
    let small = dir.path().join("small");
    ok(&["keygen", "--out", s(&small), "--slhdsa-set", "192s"]);
    let err = fails(&[
        "genesis",
        "--out",
        s(&genesis),
        "--change",
        &format!("2:{},{}", s(&dirs[1]), s(&small)),
        "--validators",
        s(&dirs[0]),
        s(&dirs[1]),
    ]);
    assert!(
        err.contains("magnetar_parameter_set") && err.contains("small"),
        "{err}"
    );
    assert!(!genesis.exists(), "a refused genesis writes nothing");
    ok(&[
        "genesis",
        "--out",
        s(&genesis),
        "--change",
        &change,
        "--validators",
        s(&dirs[0]),
        s(&dirs[1]),
        s(&dirs[2]),
    ]);
    let mut file = GenesisFile::load(&genesis).unwrap();
    assert_eq!(file.validator_changes.len(), 1);
    assert_eq!(file.validator_changes[0].epoch, 2);
    file.profile = "aurora".into();
    file.save(&genesis).unwrap();
    let mut args = vec!["deal", "--genesis", s(&genesis), "--validators"];
    args.extend(dirs.iter().map(|d| s(d)));
    ok(&args);
    let dealt = GenesisFile::load(&genesis).unwrap();
    let checked = dealt.clone().check().unwrap();
    for (epoch, policy) in checked.cert_policies() {
        assert!(policy.is_ok(), "epoch {epoch}: {:?}", policy.err());
    }
    let epochs = |i: usize| -> Vec<u64> {
        load_keys(&dirs[i], &common::key_access())
            .unwrap()
            .dealt
            .keys()
            .copied()
            .collect()
    };
    assert_eq!(epochs(0), [0], "v0 left at epoch 2");
    assert_eq!(epochs(1), [0, 2]);
    assert_eq!(epochs(3), [2], "v3 joined at epoch 2");
}

/// `genesis --profile --epoch-length --sets-from-registry` writes a chain whose sets come from
/// its registry, and refuses the flag where the genesis would fix the sets.
#[test]
fn genesis_flags_write_a_chain_whose_sets_come_from_the_registry() {
    let dir = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = (0..2).map(|i| dir.path().join(format!("v{i}"))).collect();
    for d in &dirs {
        ok(&["keygen", "--out", s(d)]);
    }
    let genesis = dir.path().join("genesis.json");
    let with = |extra: &[&str]| -> Vec<String> {
        let mut args = vec!["genesis", "--out", s(&genesis)];
        args.extend_from_slice(extra);
        args.push("--validators");
        args.extend(dirs.iter().map(|d| s(d)));
        args.into_iter().map(String::from).collect()
    };
    fn refs(args: &[String]) -> Vec<&str> {
        args.iter().map(String::as_str).collect()
    }
    let err = fails(&refs(&with(&[
        "--profile",
        "aurora",
        "--epoch-length",
        "10",
        "--sets-from-registry",
    ])));
    assert!(
        err.contains("validator_set_source") && err.contains("profile fast"),
        "{err}"
    );
    let err = fails(&refs(&with(&[
        "--profile",
        "fast",
        "--epoch-length",
        "0",
        "--sets-from-registry",
    ])));
    assert!(err.contains("epoch"), "{err}");
    assert!(!genesis.exists(), "a refused genesis writes nothing");
    ok(&refs(&with(&[
        "--profile",
        "fast",
        "--epoch-length",
        "10",
        "--sets-from-registry",
    ])));
    let file = GenesisFile::load(&genesis).unwrap();
    assert_eq!(
        (
            file.profile.as_str(),
            file.epoch_length,
            file.validator_set_source
        ),
        ("fast", 10, quasar_chainspec::SetSource::Registry)
    );
    assert!(file.check().unwrap().sets_from_registry());
}
