//! The Magnetar (SLH-DSA) parameter set of a network: SHAKE-192f by default, SHAKE-192s chosen
//! at `keygen --slhdsa-set 192s` and carried by the key files into the genesis, through the real
//! `quasar-node` binary. A 192s key takes about 0.2 s to make (192f: milliseconds), so there
//! are two.

mod common;

use common::{fails, ok};

use quasar_chainspec::{load_keys, GenesisFile};
use quasar_crypto::bls;
use quasar_crypto::magnetar::{self, ParameterSet};
use quasar_crypto::mldsa::{self, MlDsa65};

/// A self-signed Ed25519 certificate (CN = DNS = `v0`, made once with `openssl req -x509
/// -newkey ed25519`), so that the genesis below is fixed byte for byte.
const TLS_CERTIFICATE: &str = "3082013f3081f2a003020102021408a631a170aff0830207011a5a34076e564141d7300506032b6570300d310b300906035504030c0276303020170d3236313230313039353532305a180f32313236313130373039353532305a300d310b300906035504030c027630302a300506032b657003210022e5cf139de2f3592e265e5f1c9e1d96a8172eb66996a8f08811a7c7f1899956a3623060301d0603551d0e0416041410537008769ed476bb7004de1415fc4e27ce574e301f0603551d2304183016801410537008769ed476bb7004de1415fc4e27ce574e300f0603551d130101ff040530030101ff300d0603551d110406300482027630300506032b6570034100ef7cfefb042f3907ecbe98a2a732c47573fe01f91517f7dfe15876c3f10e6c98927b9c5b7197e7b3197742eb2f070a9e6644c5eca01c5779991755e644a84900";

/// The hash of [`fixed_genesis`] without a `magnetar_parameter_set` field, computed by the
/// code before the set became selectable.
const FIXED_GENESIS_HASH: &str = "9a0c365e3f1cb14e51d35f86fdb913d50e0fdac29c711255469e00a4e741877b";

/// A one-validator genesis written the way every genesis was before the Magnetar set became
/// selectable (no `magnetar_parameter_set`), with keys derived from fixed seeds; `extra` is
/// spliced in as further top-level fields.
fn fixed_genesis(extra: &str) -> String {
    let bls = bls::SecretKey::from_seed(&[1; 32]);
    let mldsa = mldsa::SecretKey::<MlDsa65>::from_seed(&[2; 32]);
    let slhdsa = magnetar::SecretKey::from_seed(ParameterSet::Shake192f, &[3; 32]);
    format!(
        r#"{{
  "chain_id": 7,
  "genesis_time_us": 1000,
  "validators": [
    {{
      "name": "v0",
      "bls_public_key": "{}",
      "proof_of_possession": "{}",
      "mldsa_public_key": "{}",
      "slhdsa_public_key": "{}",
      "tls_certificate": "{TLS_CERTIFICATE}",
      "stake": 10
    }}
  ],
  "profile": "quasar",
  "bundle_size": 16,
  "epoch_length": 7200{extra}
}}"#,
        hex::encode(bls.public_key().to_bytes()),
        hex::encode(bls.prove_possession().to_bytes()),
        hex::encode(mldsa.public_key().as_bytes()),
        hex::encode(slhdsa.public_key().as_bytes()),
    )
}

/// Regression: binding the parameter set into the genesis hash must not move the hash of a
/// SHAKE-192f chain, or every running network would find its genesis changed. The set is hashed
/// only when it is not the default, so the old file, the same file naming `"192f"`, and the
/// hash computed before this change all agree; `"192s"` is another chain.
#[test]
fn a_shake_192f_genesis_hashes_as_before_the_set_was_selectable() {
    let old = GenesisFile::from_json(&fixed_genesis(""))
        .unwrap()
        .check()
        .unwrap();
    assert_eq!(hex::encode(old.hash), FIXED_GENESIS_HASH);
    assert_eq!(old.magnetar_set(), ParameterSet::Shake192f);
    let named = GenesisFile::from_json(&fixed_genesis(",\n  \"magnetar_parameter_set\": \"192f\""))
        .unwrap()
        .check()
        .unwrap();
    assert_eq!(named.hash, old.hash);
    let small = GenesisFile::from_json(&fixed_genesis(",\n  \"magnetar_parameter_set\": \"192s\""))
        .unwrap()
        .check()
        .unwrap();
    assert_ne!(small.hash, old.hash);
    assert_eq!(small.magnetar_set(), ParameterSet::Shake192s);
}

/// `keygen --slhdsa-set 192s` twice, then `genesis`: the genesis records 192s, its keys decode
/// as 192s, the keys load back as 192s, and the epoch's policy builds with 192s Magnetar keys. A
/// 192f validator among them is refused by `genesis`, naming it; an unknown set by `keygen`.
#[test]
fn a_192s_network_from_keygen_to_policy() {
    let dir = tempfile::tempdir().unwrap();
    let d = |p: &str| dir.path().join(p).to_str().unwrap().to_string();
    for name in ["a", "b"] {
        ok(&["keygen", "--out", &d(name), "--slhdsa-set", "192s"]);
    }
    ok(&["keygen", "--out", &d("c")]);
    let error = fails(&["keygen", "--out", &d("x"), "--slhdsa-set", "192S"]);
    assert!(
        error.contains("\"192S\" is not a Magnetar parameter set"),
        "{error}"
    );
    assert!(
        !dir.path().join("x").exists(),
        "nothing written for a refused set"
    );

    let error = fails(&[
        "genesis",
        "--validators",
        &d("a"),
        &d("c"),
        "--out",
        &d("mixed.json"),
    ]);
    assert!(
        error.contains("validator 1 (c, ")
            && error.contains("slhdsa_parameter_set is \"192f\" but validator 0 (a)'s is \"192s\""),
        "{error}"
    );
    assert!(!dir.path().join("mixed.json").exists());

    ok(&[
        "genesis",
        "--validators",
        &d("a"),
        &d("b"),
        "--out",
        &d("genesis.json"),
    ]);
    let text = std::fs::read_to_string(d("genesis.json")).unwrap();
    assert!(
        text.contains(r#""magnetar_parameter_set": "192s""#),
        "{text}"
    );
    let file = GenesisFile {
        profile: "fast".into(),
        bundle_size: 1,
        ..GenesisFile::from_json(&text).unwrap()
    };
    let genesis = file.check().unwrap();
    assert_eq!(genesis.magnetar_set(), ParameterSet::Shake192s);
    assert!(genesis
        .slhdsa_public_keys
        .iter()
        .all(|k| k.parameter_set() == ParameterSet::Shake192s));
    let policy = genesis.cert_policy().unwrap();
    let magnetar = policy.keys().magnetar.as_ref().expect("Magnetar keys");
    assert_eq!(magnetar.parameter_set(), ParameterSet::Shake192s);

    let keys = load_keys(&dir.path().join("a"), &common::key_access()).unwrap();
    assert_eq!(keys.public.slhdsa_parameter_set, ParameterSet::Shake192s);
    assert_eq!(keys.slhdsa.public_key(), &genesis.slhdsa_public_keys[0]);
}
