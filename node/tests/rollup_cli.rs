//! The rollup commands of the real `quasar-node` binary: keys from `keygen`, a `genesis`, then
//! `rollup-setup`, `rollup-sign`, `rollup-prove` and `rollup-verify`.
//!
//! The end-to-end run (Groth16 setup for one ML-DSA-65 validator, about 2.1 M constraints: setup
//! about 3 minutes and 3 GB, a 1.4 GB proving key, proof about 45 s and 5 GB) is ignored: `cargo test --release -p quasar-node --test rollup_cli -- --ignored
//! --nocapture`. The refusals run in the suite.

mod common;

use common::{fails, ok, run};

use std::path::Path;

/// Two validators `a` and `b` with a genesis under `dir`.
fn network(dir: &Path) -> String {
    for name in ["a", "b"] {
        ok(&["keygen", "--out", dir.join(name).to_str().unwrap()]);
    }
    let genesis = dir.join("genesis.json");
    ok(&[
        "genesis",
        "--validators",
        dir.join("a").to_str().unwrap(),
        dir.join("b").to_str().unwrap(),
        "--out",
        genesis.to_str().unwrap(),
    ]);
    genesis.to_str().unwrap().to_string()
}

/// `rollup-prove` of the signatures in `signatures` on DIGEST, expected to fail; its stderr.
fn prove_fails(setup: &str, genesis: &str, signatures: &str, out: &str) -> String {
    fails(&[
        "rollup-prove",
        "--setup",
        setup,
        "--genesis",
        genesis,
        "--digest",
        DIGEST,
        "--signatures",
        signatures,
        "--out",
        out,
    ])
}

const DIGEST: &str = "4242424242424242424242424242424242424242424242424242424242424242";

#[test]
fn rollup_commands_refuse_bad_input_with_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let genesis = network(dir.path());
    let d = |p: &str| dir.path().join(p).to_str().unwrap().to_string();

    let err = fails(&[
        "rollup-setup",
        "--validators",
        "2",
        "--quorum",
        "3",
        "--out",
        &d("s"),
    ]);
    assert!(err.contains("quorum"), "{err}");
    let err = fails(&["rollup-sign", "--keys", &d("a"), "--digest", "abcd"]);
    assert!(err.contains("64 hex digits"), "{err}");

    // A valid entry from `a`, then entries that must be refused before any proving key is read.
    let entry = ok(&["rollup-sign", "--keys", &d("a"), "--digest", DIGEST]);
    let entry: serde_json::Value = serde_json::from_str(&entry).unwrap();
    assert_eq!(entry["validator"], "a");
    assert_eq!(entry["signature"].as_str().unwrap().len(), 2 * 3309);
    let other_digest = "00".repeat(32);
    let cases = [
        ("not in the genesis", {
            let mut e = entry.clone();
            e["validator"] = "mallory".into();
            e
        }),
        ("not this one", {
            let mut e = entry.clone();
            e["digest"] = other_digest.clone().into();
            e
        }),
        ("not hex", {
            let mut e = entry.clone();
            e["signature"] = "zz".into();
            e
        }),
        ("3309", {
            let mut e = entry.clone();
            e["signature"] = "00".into();
            e
        }),
    ];
    for (expected, bad) in cases {
        let path = d("sigs.json");
        std::fs::write(&path, serde_json::to_string(&[bad]).unwrap()).unwrap();
        let err = prove_fails(&d("s"), &genesis, &path, &d("proof.json"));
        assert!(err.contains(expected), "{expected}: {err}");
    }
    // Two signatures from one validator.
    let path = d("sigs.json");
    std::fs::write(&path, serde_json::to_string(&[&entry, &entry]).unwrap()).unwrap();
    let err = prove_fails(&d("s"), &genesis, &path, &d("proof.json"));
    assert!(err.contains("two signatures from a"), "{err}");
    // No setup directory.
    std::fs::write(&path, serde_json::to_string(&[&entry]).unwrap()).unwrap();
    let err = prove_fails(&d("missing"), &genesis, &path, &d("proof.json"));
    assert!(err.contains("rollup.pk"), "{err}");
    let err = fails(&[
        "rollup-verify",
        "--setup",
        &d("missing"),
        "--genesis",
        &genesis,
        "--proof",
        &d("p"),
    ]);
    assert!(err.contains("rollup.vk.json"), "{err}");

    // Signers are found by name, so a genesis may not repeat one.
    ok(&["keygen", "--out", &d("other/a")]);
    let err = fails(&[
        "genesis",
        "--validators",
        &d("a"),
        &d("other/a"),
        "--out",
        &d("dup.json"),
    ]);
    assert!(err.contains("name repeats"), "{err}");
}

#[test]
#[ignore = "Groth16 setup and proof for one ML-DSA-65 validator: minutes; see the module docs"]
fn a_quorum_proof_made_by_the_cli_verifies_against_the_genesis() {
    let dir = tempfile::tempdir().unwrap();
    let d = |p: &str| dir.path().join(p).to_str().unwrap().to_string();
    ok(&["keygen", "--out", &d("a")]);
    let genesis = d("genesis.json");
    ok(&["genesis", "--validators", &d("a"), "--out", &genesis]);
    let t = std::time::Instant::now();
    let out = d("setup");
    let setup = [
        "rollup-setup",
        "--validators",
        "1",
        "--quorum",
        "1",
        "--out",
        &out,
    ];
    let seed = "07".repeat(32);
    let summary = ok(&[&setup[..], &["--seed", &seed]].concat());
    println!("rollup-setup ({:?}): {summary}", t.elapsed());
    let err = fails(&setup);
    assert!(err.contains("already exists"), "{err}");

    let entry = ok(&["rollup-sign", "--keys", &d("a"), "--digest", DIGEST]);
    std::fs::write(d("sigs.json"), format!("[{entry}]")).unwrap();
    let t = std::time::Instant::now();
    let proof = ok(&[
        "rollup-prove",
        "--setup",
        &d("setup"),
        "--genesis",
        &genesis,
        "--digest",
        DIGEST,
        "--signatures",
        &d("sigs.json"),
        "--out",
        &d("proof.json"),
    ]);
    println!("rollup-prove ({:?}): {proof}", t.elapsed());
    let verify = |proof: &str| {
        let (setup, proof) = (d("setup"), d(proof));
        run(&[
            "rollup-verify",
            "--setup",
            &setup,
            "--genesis",
            &genesis,
            "--proof",
            &proof,
        ])
    };
    let verdict = verify("proof.json");
    assert!(verdict.status.success());
    assert_eq!(
        String::from_utf8_lossy(&verdict.stdout).trim(),
        r#"{"valid":true}"#
    );

    // The same proof claimed for another digest, and a proof with a flipped bit.
    let mut file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d("proof.json")).unwrap()).unwrap();
    file["digest"] = "00".repeat(32).into();
    std::fs::write(d("other.json"), file.to_string()).unwrap();
    let out = verify("other.json");
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        r#"{"valid":false}"#
    );
}
