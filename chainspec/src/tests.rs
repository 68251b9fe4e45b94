//! Tests of the key files, the genesis and the dealer.

use crate::dealer::*;
use crate::genesis::*;
use crate::key_file::*;
use crate::keys::*;
use crate::*;
use quasar_crypto::hash::{tagged_hash, Hash};
use quasar_crypto::magnetar::{self, ParameterSet};
use quasar_crypto::mldsa::{self, MlDsa65};
use quasar_lanes::cert::Profile;
use std::path::PathBuf;

/// Sealed key files under one passphrase, with Argon2id at its minimum cost.
fn test_access() -> KeyAccess {
    KeyAccess::sealed(b"test passphrase").with_kdf(crate::sealing::KdfParams::for_tests())
}

/// [`test_access`] for each of `n` key directories.
fn test_accesses(n: usize) -> Vec<KeyAccess> {
    vec![test_access(); n]
}

/// `n` fresh key directories `v0`, `v1`, … and their public files.
fn key_files(n: usize) -> (tempfile::TempDir, Vec<PublicKeyFile>) {
    let dir = tempfile::tempdir().unwrap();
    let keys: Vec<PublicKeyFile> = (0..n)
        .map(|i| {
            let dir = dir.path().join(format!("v{i}"));
            keygen_with_set(
                &dir,
                &format!("v{i}"),
                ParameterSet::default(),
                &test_access(),
            )
            .unwrap()
        })
        .collect();
    (dir, keys)
}

/// Two fresh key directories and the genesis built from their public files.
fn two_validators() -> (tempfile::TempDir, Vec<PublicKeyFile>, GenesisFile) {
    let (dir, keys) = key_files(2);
    let genesis = GenesisFile::from_public_keys(7, 1_000, &keys, 10);
    (dir, keys, genesis)
}

/// A `fast` genesis of five key files' validators `v0`–`v4`, epochs of 10 blocks: `v0 v1
/// v2` from epoch 0, `v1 v2 v3` from epoch 2, `v3 v0 v4` (v3 with stake 30) from epoch 5.
fn changing_genesis() -> (tempfile::TempDir, Vec<GenesisValidator>, GenesisFile) {
    let (dir, keys) = key_files(5);
    let pool = GenesisFile::from_public_keys(7, 1_000, &keys, 10).validators;
    let pick = |indices: &[usize]| -> Vec<GenesisValidator> {
        indices.iter().map(|&i| pool[i].clone()).collect()
    };
    let mut last = pick(&[3, 0, 4]);
    last[0].stake = 30;
    let genesis = GenesisFile {
        validators: pick(&[0, 1, 2]),
        profile: "fast".into(),
        bundle_size: 1,
        epoch_length: 10,
        validator_changes: vec![
            ValidatorChange {
                epoch: 2,
                validators: pick(&[1, 2, 3]),
                ..ValidatorChange::default()
            },
            ValidatorChange {
                epoch: 5,
                validators: last,
                ..ValidatorChange::default()
            },
        ],
        ..GenesisFile::from_public_keys(7, 1_000, &keys, 10)
    };
    (dir, pool, genesis)
}

fn invalid_message(result: Result<Genesis, ConfigError>) -> String {
    match result {
        Err(ConfigError::Genesis(message)) => message,
        other => panic!("expected ConfigError::Genesis, got {other:?}"),
    }
}

#[test]
fn keygen_writes_mldsa_65_and_slhdsa_keys_that_load_keys_reads_back() {
    let (dir, keys, _) = two_validators();
    let v0 = dir.path().join("v0");
    let loaded = load_keys(&v0, &test_access()).unwrap();
    assert_eq!(loaded.public, keys[0]);
    assert_eq!(
        hex::encode(loaded.mldsa.public_key().as_bytes()),
        keys[0].mldsa_public_key
    );
    assert_eq!(keys[0].mldsa_public_key.len(), 2 * 1952);
    assert_ne!(keys[0].mldsa_public_key, keys[1].mldsa_public_key);
    assert_eq!(
        hex::encode(loaded.slhdsa.public_key().as_bytes()),
        keys[0].slhdsa_public_key
    );
    assert_eq!(
        loaded.slhdsa.public_key().parameter_set(),
        ParameterSet::Shake192f
    );
    assert_eq!(keys[0].slhdsa_public_key.len(), 2 * 48);
    assert_ne!(keys[0].slhdsa_public_key, keys[1].slhdsa_public_key);
    let (secret, sealed) = read_secret(&v0.join(SECRET_KEY_FILE), &test_access()).unwrap();
    assert!(sealed, "keygen seals the secret file under the passphrase");
    assert_eq!(secret.mldsa_seed.len(), 2 * 32);
    assert_eq!(secret.slhdsa_seed.len(), 2 * 32);
    assert_ne!(secret.slhdsa_seed, secret.mldsa_seed, "independent seeds");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(v0.join(SECRET_KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn a_wrong_passphrase_is_an_error_naming_the_key_file() {
    let (dir, _, _) = two_validators();
    let v0 = dir.path().join("v0");
    let wrong = KeyAccess::sealed(b"not the passphrase");
    let message = load_keys(&v0, &wrong).err().expect("refused").to_string();
    assert!(message.contains("wrong passphrase"), "{message}");
    assert!(message.contains(SECRET_KEY_FILE), "{message}");
    // A sealed file without any passphrase says where to give one.
    let message = load_keys(&v0, &KeyAccess::plaintext())
        .err()
        .expect("refused")
        .to_string();
    assert!(message.contains("QUASAR_KEY_PASSPHRASE"), "{message}");
}

#[test]
fn a_tampered_sealed_key_file_is_refused() {
    let (dir, _, _) = two_validators();
    let path = dir.path().join("v0").join(SECRET_KEY_FILE);
    let mut file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let text = file["ciphertextHex"].as_str().unwrap().to_string();
    let flipped = if text.starts_with('0') { "1" } else { "0" };
    file["ciphertextHex"] = format!("{flipped}{}", &text[1..]).into();
    std::fs::write(&path, file.to_string()).unwrap();
    let message = load_keys(&dir.path().join("v0"), &test_access())
        .err()
        .expect("refused")
        .to_string();
    assert!(message.contains("or the file was modified"), "{message}");
}

#[test]
fn plaintext_key_files_need_the_opt_in_and_keys_seal_encrypts_them() {
    let dir = tempfile::tempdir().unwrap();
    let v0 = dir.path().join("v0");
    let refused = keygen_with_set(&v0, "v0", ParameterSet::default(), &KeyAccess::default());
    assert!(matches!(
        refused,
        Err(ConfigError::KeyFile(KeyFileError::NoWriteMode))
    ));
    assert!(!v0.join(SECRET_KEY_FILE).exists(), "nothing written");
    keygen_with_set(&v0, "v0", ParameterSet::default(), &KeyAccess::plaintext()).unwrap();
    // Without the opt-in a plaintext file is refused with how to encrypt it.
    let message = load_keys(&v0, &test_access())
        .err()
        .expect("refused")
        .to_string();
    assert!(message.contains("quasar-node keys seal"), "{message}");
    assert!(message.contains("plaintext_keys = true"), "{message}");
    assert!(load_keys(&v0, &KeyAccess::plaintext()).is_ok());
    assert!(seal_key_dir(&v0, &test_access()).unwrap(), "sealed");
    assert!(
        !seal_key_dir(&v0, &test_access()).unwrap(),
        "already sealed"
    );
    assert!(load_keys(&v0, &test_access()).is_ok());
    assert!(load_keys(&v0, &KeyAccess::plaintext()).is_err());
}

#[test]
fn load_keys_refuses_a_seed_that_does_not_match_the_public_file() {
    let (dir, keys, _) = two_validators();
    let v0 = dir.path().join("v0");
    let refused = |public: &PublicKeyFile| {
        std::fs::write(v0.join(PUBLIC_KEY_FILE), to_json(public).unwrap()).unwrap();
        let Err(ConfigError::Keys(message)) = load_keys(&v0, &test_access()) else {
            panic!("a mismatched key must be refused");
        };
        message
    };
    let mut public = keys[0].clone();
    public.mldsa_public_key = keys[1].mldsa_public_key.clone();
    let message = refused(&public);
    assert!(
        message.contains("ML-DSA-65 seed does not match"),
        "{message}"
    );
    let mut public = keys[0].clone();
    public.slhdsa_public_key = keys[1].slhdsa_public_key.clone();
    let message = refused(&public);
    assert!(
        message.contains("SLH-DSA seed does not match slhdsa_public_key"),
        "{message}"
    );
}

#[test]
fn genesis_check_decodes_every_mldsa_65_key_and_binds_it_into_the_hash() {
    let (_dir, keys, genesis) = two_validators();
    let checked = genesis.clone().check().unwrap();
    let decoded: Vec<String> = checked
        .mldsa_public_keys
        .iter()
        .map(|k| hex::encode(k.as_bytes()))
        .collect();
    let expected: Vec<String> = keys.iter().map(|k| k.mldsa_public_key.clone()).collect();
    assert_eq!(decoded, expected);

    // Another (valid) identity key gives another chain.
    let mut other = genesis.clone();
    other.validators[1].mldsa_public_key = hex::encode(
        mldsa::SecretKey::<MlDsa65>::from_seed(&[9; 32])
            .public_key()
            .as_bytes(),
    );
    assert_ne!(other.check().unwrap().hash, checked.hash);
}

#[test]
fn genesis_check_decodes_every_slhdsa_key_and_binds_it_into_the_hash() {
    let (_dir, keys, genesis) = two_validators();
    let checked = genesis.clone().check().unwrap();
    let decoded: Vec<String> = checked
        .slhdsa_public_keys
        .iter()
        .map(|k| hex::encode(k.as_bytes()))
        .collect();
    let expected: Vec<String> = keys.iter().map(|k| k.slhdsa_public_key.clone()).collect();
    assert_eq!(decoded, expected);
    assert!(checked
        .slhdsa_public_keys
        .iter()
        .all(|k| k.parameter_set() == ParameterSet::Shake192f));

    // Another (valid) Magnetar key gives another chain.
    let mut other = genesis.clone();
    other.validators[1].slhdsa_public_key = hex::encode(
        magnetar::SecretKey::from_seed(ParameterSet::Shake192f, &[9; 32])
            .public_key()
            .as_bytes(),
    );
    assert_ne!(other.check().unwrap().hash, checked.hash);
}

/// Key files written before the Magnetar set was selectable have no `slhdsa_parameter_set`
/// and must keep loading, as 192f; keygen leaves the default out, so a 192f file still has
/// that shape. A file that names the other set than its seed was expanded under is refused.
#[test]
fn a_public_key_file_without_a_parameter_set_is_a_192f_key() {
    let (dir, keys, _) = two_validators();
    let v0 = dir.path().join("v0");
    let text = std::fs::read_to_string(v0.join(PUBLIC_KEY_FILE)).unwrap();
    assert!(!text.contains("slhdsa_parameter_set"), "{text}");
    assert_eq!(keys[0].slhdsa_parameter_set, ParameterSet::Shake192f);
    let loaded = load_keys(&v0, &test_access()).unwrap();
    assert_eq!(
        loaded.slhdsa.public_key().parameter_set(),
        ParameterSet::Shake192f
    );

    let with_set = |name: &str| {
        let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
        json["slhdsa_parameter_set"] = name.into();
        std::fs::write(v0.join(PUBLIC_KEY_FILE), json.to_string()).unwrap();
    };
    with_set("192f");
    assert_eq!(load_keys(&v0, &test_access()).unwrap().public, keys[0]);
    with_set("192s");
    let Err(ConfigError::Keys(message)) = load_keys(&v0, &test_access()) else {
        panic!("a 192f seed under a file that says 192s must be refused");
    };
    assert!(
        message.contains("SLH-DSA seed does not match slhdsa_public_key")
            && message.contains("SLH-DSA-SHAKE-192s"),
        "{message}"
    );
}

#[test]
fn an_unknown_magnetar_parameter_set_is_refused_naming_the_field() {
    for set in [ParameterSet::Shake192f, ParameterSet::Shake192s] {
        assert_eq!(parse_magnetar_set(magnetar_set_name(set)), Ok(set));
    }
    for name in ["192F", "SLH-DSA-SHAKE-192s", "256s", ""] {
        let error = parse_magnetar_set(name).unwrap_err();
        assert!(
            error.contains("\"192f\"") && error.contains("\"192s\""),
            "{error}"
        );
    }

    let (dir, _keys, genesis) = two_validators();
    let v0 = dir.path().join("v0");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(v0.join(PUBLIC_KEY_FILE)).unwrap()).unwrap();
    json["slhdsa_parameter_set"] = "shake-192s".into();
    std::fs::write(v0.join(PUBLIC_KEY_FILE), json.to_string()).unwrap();
    let Err(ConfigError::Parse { message, .. }) = load_public(&v0) else {
        panic!("an unknown slhdsa_parameter_set must be refused");
    };
    assert!(
        message.contains("slhdsa_parameter_set: \"shake-192s\" is not a Magnetar"),
        "{message}"
    );

    let mut json = serde_json::to_value(&genesis).unwrap();
    json["magnetar_parameter_set"] = "192x".into();
    let error = GenesisFile::from_json(&json.to_string())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("magnetar_parameter_set: \"192x\" is not a Magnetar"),
        "{error}"
    );
}

/// The set is part of the chain: the keys are decoded under it, the hash binds it, the file
/// names it (192s only), and the policy's Magnetar keys are of it.
#[test]
fn the_genesis_magnetar_set_decodes_the_keys_and_binds_into_the_hash() {
    let (_dir, _keys, genesis) = two_validators();
    let text = serde_json::to_string(&genesis).unwrap();
    assert!(!text.contains("magnetar_parameter_set"), "{text}");
    let f = genesis.clone().check().unwrap();
    assert_eq!(f.magnetar_set(), ParameterSet::Shake192f);

    let small = GenesisFile {
        magnetar_parameter_set: ParameterSet::Shake192s,
        profile: "fast".into(),
        bundle_size: 1,
        ..genesis.clone()
    };
    let text = serde_json::to_string(&small).unwrap();
    assert!(
        text.contains(r#""magnetar_parameter_set":"192s""#),
        "{text}"
    );
    assert_eq!(GenesisFile::from_json(&text).unwrap(), small);
    let s = small.clone().check().unwrap();
    assert_eq!(s.magnetar_set(), ParameterSet::Shake192s);
    assert!(s
        .slhdsa_public_keys
        .iter()
        .all(|k| k.parameter_set() == ParameterSet::Shake192s));
    let policy = s.cert_policy().unwrap();
    let keys = policy.keys().magnetar.as_ref().expect("Magnetar keys");
    assert_eq!(keys.parameter_set(), ParameterSet::Shake192s);
    let same_but_192f = GenesisFile {
        magnetar_parameter_set: ParameterSet::Shake192f,
        ..small
    };
    assert_ne!(s.hash, same_but_192f.check().unwrap().hash);
}

#[test]
fn genesis_check_rejects_a_bad_slhdsa_key_with_a_clear_error() {
    let (_dir, _keys, genesis) = two_validators();
    let with_key = |hex_key: String| {
        let mut g = genesis.clone();
        g.validators[1].slhdsa_public_key = hex_key;
        invalid_message(g.check())
    };
    let good = genesis.validators[1].slhdsa_public_key.clone();

    let short = with_key(good[..good.len() - 2].to_string());
    assert!(
        short.contains("validator 1 (v1): SLH-DSA public key:")
            && short.contains("expected 48 bytes, got 47"),
        "{short}"
    );
    let long = with_key(format!("{good}00"));
    assert!(long.contains("expected 48 bytes, got 49"), "{long}");
    let empty = with_key(String::new());
    assert!(empty.contains("got 0"), "{empty}");
    let repeated = with_key(genesis.validators[0].slhdsa_public_key.clone());
    assert!(
        repeated.contains("validator 1 (v1): SLH-DSA public key repeats"),
        "{repeated}"
    );
}

#[test]
fn genesis_epochs_hold_whole_bundles_and_bind_into_the_hash() {
    let (_dir, _keys, genesis) = two_validators();
    let checked = genesis.clone().check().unwrap();
    assert_eq!(checked.schedule().length(), Some(DEFAULT_EPOCH_LENGTH));
    let with = |epoch_length: u64, profile: &str| GenesisFile {
        epoch_length,
        profile: profile.into(),
        ..genesis.clone()
    };
    let error = with(40, "quasar").check().unwrap_err().to_string();
    assert!(
        error.contains("not a multiple of bundle_size 16"),
        "{error}"
    );
    let fast = with(40, "fast").check().unwrap();
    assert_eq!(fast.schedule().epoch_of(41), 1);
    let single = with(0, "quasar").check().unwrap();
    assert_eq!(single.schedule().length(), None);
    assert_ne!(with(32, "quasar").check().unwrap().hash, checked.hash);
}

#[test]
fn above_four_validators_the_pulsar_key_goes_to_a_stake_sampled_committee() {
    let dir = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = (0..8).map(|i| dir.path().join(format!("v{i}"))).collect();
    let keys: Vec<PublicKeyFile> = dirs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            keygen_with_set(d, &format!("v{i}"), ParameterSet::default(), &test_access()).unwrap()
        })
        .collect();
    let mut genesis = GenesisFile {
        profile: "aurora".into(),
        ..GenesisFile::from_public_keys(7, 1_000, &keys, 10)
    };
    let which = DealtLegs {
        corona: true,
        pulsar: true,
    };
    deal(
        &dirs,
        &mut genesis,
        which,
        Existing::Refuse,
        &test_accesses(dirs.len()),
        &mut rand::rngs::OsRng,
    )
    .unwrap();
    let committee = genesis.pulsar_committee.clone().expect("a committee");
    assert_eq!(committee.len(), PULSAR_COMMITTEE_SIZE);
    let checked = genesis.clone().check().unwrap();
    assert_eq!(checked.pulsar_committee(), committee);
    assert!(checked.cert_policy().is_ok());
    for (i, d) in dirs.iter().enumerate() {
        let loaded = load_keys(d, &test_access()).unwrap();
        let shares = loaded.dealt.get(&0).expect("genesis set shares");
        assert!(
            shares.corona.is_some(),
            "every validator holds a Corona share"
        );
        match committee.iter().position(|&m| m as usize == i) {
            Some(party) => {
                let (group, share) = shares.pulsar.as_ref().expect("members hold Pulsar shares");
                assert_eq!(usize::from(share.party()), party);
                assert_eq!((group.params().threshold, group.params().parties), (3, 4));
            }
            None => assert!(shares.pulsar.is_none(), "validator {i} is no member"),
        }
    }
    // The committee is part of the genesis; a bad one, or none, is refused.
    let with = |committee: Option<Vec<u32>>| GenesisFile {
        pulsar_committee: committee,
        ..genesis.clone()
    };
    // Another committee: the non-members and the first member.
    let mut other: Vec<u32> = (0..8)
        .filter(|i| !committee.contains(i))
        .chain([committee[0]])
        .collect();
    other.sort_unstable();
    assert_ne!(with(Some(other)).check().unwrap().hash, checked.hash);
    for (bad, why) in [
        (Some(vec![0, 1, 2, 3, 4, 5, 6]), "7 members"),
        (Some(vec![1, 0]), "increasing"),
        (Some(vec![1, 8]), "validator 8 does not exist"),
        (None, "no pulsar_committee"),
    ] {
        let error = invalid_message(with(bad).check());
        assert!(error.contains(why), "{error}");
    }
}

#[test]
fn genesis_hex_errors_name_the_validator_and_field() {
    let (_dir, _keys, genesis) = two_validators();
    let mut bad = genesis.clone();
    bad.validators[1].mldsa_public_key = "zz".into();
    let message = invalid_message(bad.check());
    assert!(
        message.starts_with("validator 1 (v1): mldsa_public_key: not hex"),
        "{message}"
    );
    let mut bad = genesis.clone();
    bad.validators[0].slhdsa_public_key = "0x".into();
    let message = invalid_message(bad.check());
    assert!(
        message.starts_with("validator 0 (v0): slhdsa_public_key: not hex"),
        "{message}"
    );
    let mut bad = genesis.clone();
    bad.validators[0].tls_certificate = "abc".into();
    let message = invalid_message(bad.check());
    assert!(
        message.starts_with("validator 0 (v0): tls_certificate: not hex"),
        "{message}"
    );
}

#[test]
fn genesis_check_rejects_a_bad_mldsa_65_key_with_a_clear_error() {
    let (_dir, _keys, genesis) = two_validators();
    let with_key = |hex_key: String| {
        let mut g = genesis.clone();
        g.validators[1].mldsa_public_key = hex_key;
        invalid_message(g.check())
    };
    let good = genesis.validators[1].mldsa_public_key.clone();

    let short = with_key(good[..good.len() - 2].to_string());
    assert!(
        short.contains("validator 1 (v1): ML-DSA-65 public key: invalid length")
            && short.contains("expected 1952 bytes, got 1951"),
        "{short}"
    );
    let long = with_key(format!("{good}00"));
    assert!(long.contains("expected 1952 bytes, got 1953"), "{long}");
    let empty = with_key(String::new());
    assert!(empty.contains("got 0"), "{empty}");
    let not_hex = with_key("zz".repeat(1952));
    assert!(
        not_hex.starts_with("validator 1 (v1): mldsa_public_key: not hex"),
        "{not_hex}"
    );
    let repeated = with_key(genesis.validators[0].mldsa_public_key.clone());
    assert!(
        repeated.contains("validator 1 (v1): ML-DSA-65 public key repeats"),
        "{repeated}"
    );
}

#[test]
fn genesis_without_a_post_quantum_public_key_does_not_parse() {
    let (_dir, _keys, genesis) = two_validators();
    for field in ["mldsa_public_key", "slhdsa_public_key"] {
        let mut json: serde_json::Value = serde_json::to_value(&genesis).unwrap();
        json["validators"][0].as_object_mut().unwrap().remove(field);
        let err = GenesisFile::from_json(&json.to_string()).unwrap_err();
        assert!(err.to_string().contains(field), "{err}");
    }
}

#[test]
fn validator_changes_give_each_epoch_its_set_and_the_roster_every_validator_once() {
    let (_dir, pool, file) = changing_genesis();
    let genesis = file.clone().check().unwrap();
    let bls = |i: usize| {
        quasar_crypto::bls::PublicKey::from_bytes(&hex::decode(&pool[i].bls_public_key).unwrap())
            .unwrap()
    };
    let sets = genesis.epoch_sets();
    assert_eq!(
        sets.changes()
            .into_iter()
            .map(|(epoch, _)| epoch)
            .collect::<Vec<_>>(),
        vec![0, 2, 5]
    );
    assert_eq!(sets.at(0).domain, genesis.domain());
    assert_eq!(sets.at(1), sets.at(0), "epoch 1 keeps the genesis set");
    assert_eq!(sets.at(2).index_of(&bls(3)), Some(2), "v3 joins at epoch 2");
    assert_eq!(
        sets.at(4).index_of(&bls(0)),
        None,
        "v0 is out in epochs 2 to 4"
    );
    assert_eq!(sets.at(5).index_of(&bls(3)), Some(0));
    assert_eq!(
        sets.at(99).index_of(&bls(0)),
        Some(1),
        "v0 is back from epoch 5"
    );
    assert_eq!(sets.at(5).validators.total_stake(), 50);
    let roots: Vec<Hash> = sets
        .changes()
        .into_iter()
        .map(|(_, m)| m.domain.validator_set_root)
        .collect();
    assert!(roots[0] != roots[1] && roots[1] != roots[2] && roots[0] != roots[2]);
    assert!(sets
        .changes()
        .into_iter()
        .all(|(_, m)| m.domain.profile_id == "fast"));
    assert_eq!(roots[0], genesis.validator_set_root);
    let first_epochs: Vec<u64> = genesis.changes.iter().map(|c| c.first_epoch).collect();
    assert_eq!(first_epochs, vec![2, 5]);
    for (set, root) in genesis.changes.iter().zip(&roots[1..]) {
        assert_eq!(set.validator_set_root, *root);
    }

    // A changed set's root is the root the same validators would have as a genesis set.
    let as_genesis = GenesisFile {
        validators: file.validator_changes[0].validators.clone(),
        validator_changes: Vec::new(),
        ..file.clone()
    };
    assert_eq!(as_genesis.check().unwrap().validator_set_root, roots[1]);

    let names: Vec<&str> = genesis.roster().iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["v0", "v1", "v2", "v3", "v4"]);
    assert_eq!(genesis.roster()[3].stake, 10, "v3's first appearance");

    let policies = genesis.cert_policies();
    assert_eq!(
        policies.iter().map(|(epoch, _)| *epoch).collect::<Vec<_>>(),
        vec![0, 2, 5]
    );
    for ((epoch, policy), (_, members)) in policies.iter().zip(sets.changes()) {
        let policy = policy.as_ref().unwrap();
        assert_eq!(policy.epoch(), *epoch);
        assert_eq!(*policy.domain(), members.domain);
        assert_eq!(policy.keys().validators, *members.validators);
        let magnetar = policy.keys().magnetar.as_ref().expect("Magnetar keys");
        assert_eq!(magnetar.parameter_set(), ParameterSet::Shake192f);
    }
}

#[test]
fn a_genesis_without_changes_has_its_own_set_for_every_epoch_and_roster() {
    let (_dir, keys, file) = two_validators();
    let genesis = file.check().unwrap();
    let sets = genesis.epoch_sets();
    assert_eq!(sets.changes().len(), 1);
    assert_eq!(sets.at(1_000).domain, genesis.domain());
    assert_eq!(*sets.at(0).validators, genesis.validators);
    let roster: Vec<&str> = genesis
        .roster()
        .iter()
        .map(|v| v.bls_public_key.as_str())
        .collect();
    let expected: Vec<&str> = keys.iter().map(|k| k.bls_public_key.as_str()).collect();
    assert_eq!(roster, expected);
    let policies = genesis.cert_policies();
    assert_eq!(policies.len(), 1);
    assert_eq!(policies[0].0, 0);
    assert_eq!(
        policies[0].1.as_ref().unwrap_err(),
        &genesis.cert_policy().unwrap_err(),
        "the default profile needs keys this genesis lacks"
    );
}

/// Under a profile with threshold or rollup legs, a changed set without its own keys is
/// accepted, but its policy names the keys its change lacks (Quasar finality is then
/// unavailable in its epochs, as in a genesis set without keys).
#[test]
fn a_changed_set_without_its_own_keys_has_no_policy_naming_the_missing_fields() {
    let (_dir, _pool, file) = changing_genesis();
    for (profile, fields) in [
        ("quasar", &["corona_group_key", "rollup_verifying_key"][..]),
        ("aurora", &["corona_group_key", "pulsar_group_key"][..]),
        ("polaris", &["corona_group_key", "pulsar_group_key"][..]),
        (
            "hybrid-1s",
            &["corona_group_key", "rollup_verifying_key"][..],
        ),
    ] {
        let genesis = GenesisFile {
            profile: profile.into(),
            bundle_size: 10,
            ..file.clone()
        }
        .check()
        .unwrap();
        let policies = genesis.cert_policies();
        assert_eq!(policies.len(), 3);
        for (epoch, policy) in &policies {
            let Err(error) = policy else {
                panic!("{profile}: no keys, no policy")
            };
            let place = match epoch {
                0 => "the genesis".to_string(),
                e => format!("the validator change at epoch {e}"),
            };
            assert!(error.contains(&place), "{profile}: {error}");
            for field in fields {
                assert!(error.contains(field), "{profile}: {error}");
            }
        }
    }
}

/// Each scheduled set gets its own Corona and Pulsar keys from the dealer: every set's
/// policy then holds, and each validator's key file holds its shares of the sets it belongs
/// to (by the set's first epoch, party index = its index in that set) and of no other.
#[test]
fn deal_gives_every_validator_set_its_own_threshold_keys() {
    let (dir, pool, file) = changing_genesis();
    let mut genesis = GenesisFile {
        profile: "aurora".into(),
        bundle_size: 10,
        ..file
    };
    let dirs: Vec<PathBuf> = (0..5).map(|i| dir.path().join(format!("v{i}"))).collect();
    let which = DealtLegs::for_profile(Profile::Aurora);
    let mut rng = rand::rngs::OsRng;
    deal(
        &dirs,
        &mut genesis,
        which,
        Existing::Refuse,
        &test_accesses(dirs.len()),
        &mut rng,
    )
    .unwrap();
    let checked = genesis.clone().check().unwrap();
    for (epoch, policy) in checked.cert_policies() {
        assert!(policy.is_ok(), "epoch {epoch}: {:?}", policy.err());
    }
    let mut corona_keys: Vec<&str> = std::iter::once(&genesis.corona_group_key)
        .chain(
            genesis
                .validator_changes
                .iter()
                .map(|c| &c.corona_group_key),
        )
        .map(|k| k.as_deref().expect("every set has a Corona key"))
        .collect();
    corona_keys.dedup();
    assert_eq!(corona_keys.len(), 3, "each set has its own Corona key");
    let sets = checked.sets();
    for (v, key_dir) in dirs.iter().enumerate() {
        let keys = load_keys(key_dir, &test_access()).unwrap();
        let mine = &pool[v].bls_public_key;
        for (entries, set) in &sets {
            let shares = keys.dealt.get(&set.first_epoch);
            let Some(index) = entries.iter().position(|e| &e.bls_public_key == mine) else {
                assert!(shares.is_none(), "v{v} holds shares of a set it is not in");
                continue;
            };
            let shares = shares.expect("a member holds the set's shares");
            let corona = shares.corona.as_ref().expect("a Corona share");
            assert_eq!(usize::from(corona.index()), index);
            assert_eq!(Some(corona.group_key()), set.keys.corona.as_ref());
            let (group, share) = shares.pulsar.as_ref().expect("a Pulsar share");
            assert_eq!(usize::from(share.party()), index);
            assert_eq!(
                Some(group.public_key_bytes()),
                set.keys.pulsar.as_ref().map(|k| k.as_bytes())
            );
        }
    }
    // Dealing again is refused, unless the shares may be replaced (a test network).
    let error = deal(
        &dirs,
        &mut genesis,
        which,
        Existing::Refuse,
        &test_accesses(dirs.len()),
        &mut rng,
    )
    .expect_err("shares are there");
    assert!(
        error
            .to_string()
            .contains("already has threshold group keys (the sets from epochs [0, 2, 5])"),
        "{error}"
    );
    let before = genesis.validator_changes[0].corona_group_key.clone();
    deal(
        &dirs,
        &mut genesis,
        which,
        Existing::Replace,
        &test_accesses(dirs.len()),
        &mut rng,
    )
    .unwrap();
    assert_ne!(genesis.validator_changes[0].corona_group_key, before);
    genesis.clone().check().unwrap();
    // Key directories must come in roster order.
    let mut swapped = dirs.clone();
    swapped.swap(3, 4);
    let error = deal(
        &swapped,
        &mut genesis,
        which,
        Existing::Replace,
        &test_accesses(swapped.len()),
        &mut rng,
    )
    .expect_err("out of roster order");
    assert!(
        error.to_string().contains("does not hold validator 3"),
        "{error}"
    );
}

/// `set_shares` entries are changed sets' (epoch 0's shares are the top-level fields), by
/// increasing epoch; a Pulsar committee needs its key.
#[test]
fn set_shares_and_committees_out_of_place_are_refused() {
    let file = |entries: &str| {
        SecretKeyFile::from_json(&format!(
            r#"{{"bls_secret_key":"","mldsa_seed":"","slhdsa_seed":"","tls_private_key":"",
            "set_shares":[{entries}]}}"#
        ))
        .unwrap()
    };
    let error = |entries: &str| file(entries).dealt().err().unwrap().to_string();
    assert!(error(r#"{"epoch":0}"#).contains("top-level fields"));
    assert!(error(r#"{"epoch":3},{"epoch":2}"#).contains("epoch 2 is not above 3"));
    assert!(error(r#"{"epoch":2,"pulsar_share":"00"}"#).contains("pulsar_group is missing"));
    assert!(file(r#"{"epoch":2},{"epoch":5}"#).dealt().unwrap().len() == 2);
    let (_dir, _pool, file) = changing_genesis();
    let mut genesis = GenesisFile {
        profile: "aurora".into(),
        bundle_size: 10,
        ..file
    };
    genesis.validator_changes[0].pulsar_committee = Some(vec![0, 1]);
    let error = invalid_message(genesis.check());
    assert!(
        error.contains("validator change at epoch 2: pulsar_committee without pulsar_group_key"),
        "{error}"
    );
}

#[test]
fn epoch_lists_parse_or_name_what_is_wrong() {
    assert_eq!(
        parse_epoch_list::<usize>("2:1, 2,3"),
        Ok((2, vec![1, 2, 3]))
    );
    for (bad, says) in [
        ("2", "expected EPOCH:ITEM"),
        ("x:1", "epoch \"x\""),
        ("2:", "nothing after the epoch"),
        ("2:1,,3", "\"\""),
        ("2:1,a", "\"a\""),
        ("-1:1", "epoch \"-1\""),
    ] {
        let error = parse_epoch_list::<usize>(bad).unwrap_err();
        assert!(
            error.contains(says) && error.contains(bad),
            "{bad}: {error}"
        );
    }
}

#[test]
fn validator_changes_need_epochs_and_increasing_epochs() {
    let (_dir, _pool, file) = changing_genesis();
    let with_epochs = |epoch_length: u64, epochs: [u64; 2]| {
        let mut g = GenesisFile {
            epoch_length,
            ..file.clone()
        };
        for (change, epoch) in g.validator_changes.iter_mut().zip(epochs) {
            change.epoch = epoch;
        }
        invalid_message(g.check())
    };
    let error = with_epochs(0, [2, 5]);
    assert!(
        error.contains("epoch_length 0 runs one endless epoch"),
        "{error}"
    );
    let error = with_epochs(10, [0, 5]);
    assert!(error.contains("a change at epoch 0"), "{error}");
    let error = with_epochs(10, [5, 2]);
    assert!(
        error.contains("change at epoch 2 does not come after the change at epoch 5"),
        "{error}"
    );
    let error = with_epochs(10, [5, 5]);
    assert!(error.contains("does not come after"), "{error}");
    let error = with_epochs(10, [2, u64::MAX]);
    assert!(error.contains("not an epoch of this chain"), "{error}");
}

#[test]
fn a_changed_set_is_checked_as_the_genesis_set_is_and_errors_name_the_change() {
    let (_dir, pool, file) = changing_genesis();
    let changed = |edit: &dyn Fn(&mut Vec<GenesisValidator>)| {
        let mut g = file.clone();
        edit(&mut g.validator_changes[0].validators);
        invalid_message(g.check())
    };
    let error = changed(&|vs| {
        let key = &mut vs[1].mldsa_public_key;
        key.truncate(key.len() - 2);
    });
    assert!(
        error.starts_with("validator change at epoch 2: validator 1 (v2): ML-DSA-65 public key")
            && error.contains("expected 1952 bytes, got 1951"),
        "{error}"
    );
    let error = changed(&|vs| vs[2].proof_of_possession = pool[0].proof_of_possession.clone());
    assert!(
        error.starts_with(
            "validator change at epoch 2: validator 2 (v3): proof of possession does not verify"
        ),
        "{error}"
    );
    let error = changed(&|vs| vs[2].slhdsa_public_key = vs[0].slhdsa_public_key.clone());
    assert!(
        error.contains("validator 2 (v3): SLH-DSA public key repeats"),
        "{error}"
    );
    let error = changed(&|vs| vs[0].tls_certificate = "abc".into());
    assert!(
        error
            .starts_with("validator change at epoch 2: validator 0 (v1): tls_certificate: not hex"),
        "{error}"
    );
    let error = changed(&|vs| vs[0].stake = 0);
    assert!(
        error.starts_with("validator change at epoch 2: validator set:")
            && error.contains("zero stake"),
        "{error}"
    );
    let error = changed(&|vs| vs.clear());
    assert!(
        error.starts_with("validator change at epoch 2: validator set:"),
        "{error}"
    );
}

#[test]
fn a_validator_keeps_its_identity_across_sets_and_shares_it_with_no_other() {
    let (_dir, pool, file) = changing_genesis();
    let changed = |edit: &dyn Fn(&mut GenesisValidator)| {
        let mut g = file.clone();
        // Validator 0 of the change at epoch 2 is v1, also validator 1 of the genesis set.
        edit(&mut g.validator_changes[0].validators[0]);
        invalid_message(g.check())
    };
    let another_mldsa = hex::encode(
        mldsa::SecretKey::<MlDsa65>::from_seed(&[9; 32])
            .public_key()
            .as_bytes(),
    );
    let another_slhdsa = hex::encode(
        magnetar::SecretKey::from_seed(ParameterSet::Shake192f, &[9; 32])
            .public_key()
            .as_bytes(),
    );
    for (edit, kind) in [
        (
            Box::new(|v: &mut GenesisValidator| v.mldsa_public_key = another_mldsa.clone())
                as Box<dyn Fn(&mut GenesisValidator)>,
            "ML-DSA-65 public key",
        ),
        (
            Box::new(|v: &mut GenesisValidator| v.slhdsa_public_key = another_slhdsa.clone()),
            "SLH-DSA public key",
        ),
        (
            // v4's certificate: v4 is in no set before epoch 5.
            Box::new(|v: &mut GenesisValidator| {
                v.tls_certificate = pool[4].tls_certificate.clone()
            }),
            "TLS certificate",
        ),
        (
            Box::new(|v: &mut GenesisValidator| v.name = "v1-renamed".into()),
            "name",
        ),
    ] {
        let error = changed(&*edit);
        assert_eq!(
            error,
            format!(
                "validator change at epoch 2: validator 0 ({}): has the BLS public key of \
                 validator 1 (v1) of the genesis set but another {kind}; a validator keeps \
                 its name, ML-DSA-65 and SLH-DSA keys and TLS certificate in every set",
                if kind == "name" { "v1-renamed" } else { "v1" }
            )
        );
    }

    // v3 is new at epoch 2 (validator 2 there); v0 is no member then, only of the genesis set.
    let newcomer = |edit: &dyn Fn(&mut GenesisValidator)| {
        let mut g = file.clone();
        edit(&mut g.validator_changes[0].validators[2]);
        invalid_message(g.check())
    };
    for (edit, kind) in [
        (
            Box::new(|v: &mut GenesisValidator| {
                v.mldsa_public_key = pool[0].mldsa_public_key.clone()
            }) as Box<dyn Fn(&mut GenesisValidator)>,
            "ML-DSA-65 public key",
        ),
        (
            Box::new(|v: &mut GenesisValidator| {
                v.slhdsa_public_key = pool[0].slhdsa_public_key.clone()
            }),
            "SLH-DSA public key",
        ),
        (
            Box::new(|v: &mut GenesisValidator| {
                v.tls_certificate = pool[0].tls_certificate.clone()
            }),
            "TLS certificate",
        ),
    ] {
        let error = newcomer(&*edit);
        assert_eq!(
            error,
            format!(
                "validator change at epoch 2: validator 2 (v3): {kind} is that of validator \
                 0 (v0) of the genesis set, another validator (another BLS public key)"
            )
        );
    }
    let error = newcomer(&|v| v.name = "v0".into());
    assert!(
        error.starts_with(
            "validator change at epoch 2: validator 2 (v0): name is that of validator 0 (v0)"
        ),
        "{error}"
    );

    // A newcomer of the last change against one of the first: with v3 gone at epoch 5, v4
    // takes v3's key.
    let mut g = file.clone();
    let last = &mut g.validator_changes[1].validators;
    last.remove(0);
    last[1].mldsa_public_key = pool[3].mldsa_public_key.clone();
    let error = invalid_message(g.check());
    assert_eq!(
        error,
        "validator change at epoch 5: validator 1 (v4): ML-DSA-65 public key is that of \
         validator 2 (v3) of the change at epoch 2, another validator (another BLS public key)"
    );
}

/// Regression guard: a genesis without changes must hash as before `validator_changes`
/// existed (node/tests/magnetar_set.rs pins one such hash); a change is part of the chain.
#[test]
fn validator_changes_bind_into_the_hash_only_when_present() {
    let (_dir, _pool, file) = changing_genesis();
    let without = GenesisFile {
        validator_changes: Vec::new(),
        ..file.clone()
    };
    let text = serde_json::to_string(&without).unwrap();
    assert!(!text.contains("validator_changes"), "{text}");
    let plain = without.clone().check().unwrap();
    // The layout from before the field: 9 header parts, then 5 per genesis validator.
    let mut parts: Vec<Vec<u8>> = vec![
        7u64.to_le_bytes().to_vec(),
        1_000u64.to_le_bytes().to_vec(),
        b"fast".to_vec(),
        1u64.to_le_bytes().to_vec(),
        10u64.to_le_bytes().to_vec(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
    ];
    for v in &without.validators {
        parts.push(hex::decode(&v.bls_public_key).unwrap());
        parts.push(hex::decode(&v.mldsa_public_key).unwrap());
        parts.push(hex::decode(&v.slhdsa_public_key).unwrap());
        parts.push(hex::decode(&v.tls_certificate).unwrap());
        parts.push(v.stake.to_le_bytes().to_vec());
    }
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    assert_eq!(plain.hash, tagged_hash("QUASAR-GENESIS-v1", &refs));

    let changing = file.clone().check().unwrap();
    assert_ne!(changing.hash, plain.hash);
    assert_eq!(changing.validator_set_root, plain.validator_set_root);
    let mut later = file.clone();
    later.validator_changes[1].epoch = 6;
    assert_ne!(later.check().unwrap().hash, changing.hash);
    let mut restaked = file.clone();
    restaked.validator_changes[1].validators[0].stake = 31;
    assert_ne!(restaked.check().unwrap().hash, changing.hash);
    // Moving the last change's validators to the first change is another chain.
    let mut merged = file.clone();
    let moved = merged.validator_changes.remove(1);
    merged.validator_changes[0]
        .validators
        .extend(moved.validators.into_iter().skip(2));
    assert_ne!(merged.check().unwrap().hash, changing.hash);
}

#[test]
fn validator_changes_survive_a_json_round_trip_and_refuse_unknown_fields() {
    let (dir, _pool, file) = changing_genesis();
    let path = dir.path().join("genesis.json");
    file.save(&path).unwrap();
    let loaded = GenesisFile::load(&path).unwrap();
    assert_eq!(loaded, file);
    assert_eq!(
        loaded.check().unwrap().hash,
        file.clone().check().unwrap().hash
    );

    let mut json = serde_json::to_value(&file).unwrap();
    json["validator_changes"][0]["epochs"] = 3.into();
    let error = GenesisFile::from_json(&json.to_string())
        .unwrap_err()
        .to_string();
    assert!(error.contains("unknown field `epochs`"), "{error}");
}

/// A change that repeats the set before it is allowed: its epochs bind the same root.
#[test]
fn a_change_to_the_same_set_is_allowed() {
    let (_dir, _pool, file) = changing_genesis();
    let same = GenesisFile {
        validator_changes: vec![ValidatorChange {
            epoch: 3,
            validators: file.validators.clone(),
            ..ValidatorChange::default()
        }],
        ..file
    };
    let genesis = same.check().unwrap();
    let sets = genesis.epoch_sets();
    assert_eq!(sets.at(3).domain, sets.at(0).domain);
    assert_eq!(genesis.roster().len(), 3);
}

/// `thresholdd deal`'s files: one party's file already there refuses the whole deal before any
/// file is written (no mixed set of old and new shares), and an out-dir that is a file is named
/// as such.
#[test]
fn party_files_are_all_new_or_none_written() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("shares");
    std::fs::create_dir(&out).unwrap();
    let old = out.join("corona-party-2.json");
    std::fs::write(&old, b"an earlier share").unwrap();
    let refused = write_party_files(ThresholdScheme::Corona, 2, 3, &out, &mut rand::rngs::OsRng);
    assert!(
        matches!(&refused, Err(ConfigError::Exists { path, .. }) if *path == old),
        "{refused:?}"
    );
    assert_eq!(
        std::fs::read_dir(&out).unwrap().count(),
        1,
        "nothing new written"
    );
    assert_eq!(std::fs::read(&old).unwrap(), b"an earlier share");

    let file = dir.path().join("a-file");
    std::fs::write(&file, b"").unwrap();
    let refused = write_party_files(ThresholdScheme::Pulsar, 2, 3, &file, &mut rand::rngs::OsRng);
    assert!(
        matches!(refused, Err(ConfigError::Arguments(_))),
        "{refused:?}"
    );

    let (public_key, written) = write_party_files(
        ThresholdScheme::Pulsar,
        2,
        3,
        &dir.path().join("new"),
        &mut rand::rngs::OsRng,
    )
    .unwrap();
    assert_eq!(written.len(), 3);
    assert!(!public_key.is_empty());
}

#[test]
fn a_genesis_may_take_its_sets_from_the_registry_under_fast_with_epochs_only() {
    let (_dir, _keys, mut file) = two_validators();
    file.profile = "fast".into();
    file.bundle_size = 1;
    file.epoch_length = 10;
    let fixed = file.clone().check().unwrap();
    assert!(
        !fixed.sets_from_registry(),
        "the genesis fixes the sets by default"
    );
    assert!(fixed.epoch_sets().known(u64::MAX));
    file.validator_set_source = SetSource::Registry;
    let genesis = file.clone().check().unwrap();
    assert!(genesis.sets_from_registry());
    assert_ne!(
        genesis.hash, fixed.hash,
        "the source is bound into the hash"
    );
    let json = serde_json::to_string(&file).unwrap();
    assert!(
        json.contains(r#""validator_set_source":"registry""#),
        "{json}"
    );
    assert_eq!(GenesisFile::from_json(&json).unwrap(), file);
    assert!(!serde_json::to_string(&fixed.file)
        .unwrap()
        .contains("validator_set_source"));
    for bad in ["\"Registry\"", "42", "null"] {
        let text = json.replace("\"registry\"", bad);
        let error = GenesisFile::from_json(&text).unwrap_err().to_string();
        assert!(
            error.contains(r#"validator_set_source "genesis" or "registry""#),
            "{bad}: {error}"
        );
    }
    let sets = genesis.epoch_sets();
    assert!(
        sets.known(1) && !sets.known(2),
        "epochs 0 and 1 have the genesis set"
    );
    assert_eq!(sets.at(1).domain, genesis.domain());

    // The genesis set, as the registry would give it in the genesis order: the same root,
    // domain and validators, and a policy for its first epoch.
    let members: Vec<RegistryMember> = genesis
        .validators
        .validators()
        .iter()
        .zip(&genesis.slhdsa_public_keys)
        .map(|(v, slhdsa)| RegistryMember {
            bls_public_key: v.public_key.to_bytes(),
            slhdsa_public_key: *slhdsa.as_bytes(),
            stake: v.stake,
        })
        .collect();
    let (set, policy) = genesis
        .registry_set(2, genesis.validator_set_root, &members)
        .unwrap();
    assert_eq!(set.domain, genesis.domain());
    assert_eq!(*set.validators, genesis.validators);
    assert_eq!(policy.unwrap().epoch(), 2);
    assert!(sets.decide(&genesis.schedule(), 2, set).is_ok());
    assert!(
        !genesis.epoch_sets().known(2),
        "each call has its own history"
    );
    assert!(genesis
        .registry_set(2, genesis.validator_set_root, &[])
        .unwrap_err()
        .contains("epoch 2"));
    let mut off_curve = members.clone();
    off_curve[0].bls_public_key = [0xff; 48];
    assert!(genesis
        .registry_set(2, genesis.validator_set_root, &off_curve)
        .is_err());

    // Threshold legs, a schedule in the file, or no epochs: refused, naming what is needed.
    let refused = |file: GenesisFile, needs: &str| {
        let error = file.check().unwrap_err().to_string();
        assert!(
            error.contains("validator_set_source") && error.contains(needs),
            "{error}"
        );
    };
    let mut aurora = file.clone();
    aurora.profile = "aurora".into();
    aurora.bundle_size = 2;
    refused(aurora, "profile fast");
    let mut endless = file.clone();
    endless.epoch_length = 0;
    refused(endless, "epochs");
    let (_dir, _pool, mut scheduled) = changing_genesis();
    scheduled.validator_set_source = SetSource::Registry;
    refused(scheduled, "no validator_changes");
}

#[test]
fn a_genesis_whose_balances_and_stakes_overflow_the_amount_type_is_refused() {
    let (_dir, _keys, mut genesis) = two_validators();
    let account = |byte: u8, balance: u64| GenesisAccount {
        address: hex::encode([byte; 32]),
        balance,
    };
    // Balances of u64::MAX − 30 and 10 and two stakes of 10: exactly the largest amount.
    genesis.accounts = vec![account(1, u64::MAX - 30), account(2, 10)];
    genesis.clone().check().unwrap();
    genesis.accounts.push(account(3, 1));
    let message = invalid_message(genesis.check());
    assert!(message.contains("add up to more than"), "{message}");
}
