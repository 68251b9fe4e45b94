//! Conformance of `quasar_crypto::bls` against the ethereum/bls12-381-tests vectors
//! (PoP ciphersuite, min-pk; format in `shared/vectors/README.md`): every handler folder, each
//! case's expected output asserted, and the case count of each handler asserted and printed
//! (`cargo test --test bls_vectors -- --nocapture`).
//!
//! Where the vectors accept the identity point as a *decoding* success, our types are stricter
//! (a `PublicKey` or `Signature` that exists is never the identity) and the tests assert the
//! stricter behaviour explicitly.

use std::collections::BTreeSet;
use std::fs;

mod bls_support;
mod common;

use quasar_crypto::bls::{
    aggregate_verify, batch_verify, fast_aggregate_verify, BlsError, PublicKey, SecretKey,
    Signature,
};
use serde_json::Value;

/// The handler folders this file tests, one test function each.
const HANDLERS: [&str; 9] = [
    "aggregate",
    "aggregate_verify",
    "batch_verify",
    "deserialization_G1",
    "deserialization_G2",
    "fast_aggregate_verify",
    "hash_to_G2",
    "sign",
    "verify",
];

/// The RFC 9380 test DST the `hash_to_G2` handler uses (not a signature DST).
const HASH_TO_G2_DST: &[u8] = b"QUUX-V01-CS02-with-BLS12381G2_XMD:SHA-256_SSWU_RO_";

/// Asserts and prints the number of cases of `handler`.
fn count(handler: &str, cases: &[(String, Value)], expected: usize) {
    assert_eq!(cases.len(), expected, "{handler}: case count");
    println!("bls12-381-tests/{handler}: {expected} cases");
}

/// Decodes every key of a JSON list; `Err` if any fails.
fn public_keys(list: &Value) -> Result<Vec<PublicKey>, BlsError> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|pk| PublicKey::from_bytes(&unhex(pk)))
        .collect()
}

/// Every case of one handler as (file name, parsed JSON), sorted by name. Fails if there are none.
fn cases(handler: &str) -> Option<Vec<(String, Value)>> {
    let dir = common::vectors_dir("bls12-381-tests")?.join(handler);
    let mut out = Vec::new();
    for entry in fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let value: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        out.push((name, value));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(!out.is_empty(), "no cases in {}", dir.display());
    Some(out)
}

/// Decodes a `0x`-prefixed hex string.
fn unhex(v: &Value) -> Vec<u8> {
    let s = v.as_str().expect("hex string");
    hex::decode(s.strip_prefix("0x").expect("0x prefix")).expect("valid hex")
}

fn is_infinity(bytes: &[u8]) -> bool {
    bytes.first() == Some(&0xc0) && bytes.iter().skip(1).all(|&b| b == 0)
}

#[test]
fn sign() {
    let Some(cases) = cases("sign") else { return };
    count("sign", &cases, 10);
    for (name, case) in cases {
        let sk_bytes = unhex(&case["input"]["privkey"]);
        let msg = unhex(&case["input"]["message"]);
        match &case["output"] {
            Value::Null => {
                // The zero private key must be refused.
                assert_eq!(
                    SecretKey::from_bytes(&sk_bytes).unwrap_err(),
                    BlsError::InvalidSecretKey,
                    "{name}"
                );
            }
            expected => {
                let sk = SecretKey::from_bytes(&sk_bytes).unwrap();
                let sig = sk.sign(&msg);
                assert_eq!(sig.to_bytes().to_vec(), unhex(expected), "{name}");
                assert_eq!(sk.public_key().verify(&msg, &sig), Ok(()), "{name}");
            }
        }
    }
}

#[test]
fn verify() {
    let Some(cases) = cases("verify") else { return };
    count("verify", &cases, 29);
    for (name, case) in cases {
        let input = &case["input"];
        let expected = case["output"].as_bool().unwrap();
        // A key or signature that fails to decode counts as "does not verify".
        let got = match (
            PublicKey::from_bytes(&unhex(&input["pubkey"])),
            Signature::from_bytes(&unhex(&input["signature"])),
        ) {
            (Ok(pk), Ok(sig)) => pk.verify(&unhex(&input["message"]), &sig).is_ok(),
            _ => false,
        };
        assert_eq!(got, expected, "{name}");
    }
}

#[test]
fn fast_aggregate_verify_vectors() {
    let Some(cases) = cases("fast_aggregate_verify") else {
        return;
    };
    count("fast_aggregate_verify", &cases, 12);
    for (name, case) in cases {
        let input = &case["input"];
        let expected = case["output"].as_bool().unwrap();
        let pks = public_keys(&input["pubkeys"]);
        let sig = Signature::from_bytes(&unhex(&input["signature"]));
        let got = match (pks, sig) {
            // An empty key list is refused with EmptySignerSet before any pairing.
            (Ok(pks), Ok(sig)) => {
                let res = fast_aggregate_verify(&pks, &unhex(&input["message"]), &sig);
                if pks.is_empty() {
                    assert_eq!(res, Err(BlsError::EmptySignerSet), "{name}");
                }
                res.is_ok()
            }
            _ => false,
        };
        assert_eq!(got, expected, "{name}");
    }
}

#[test]
fn aggregate() {
    let Some(cases) = cases("aggregate") else {
        return;
    };
    count("aggregate", &cases, 6);
    for (name, case) in cases {
        let raw: Vec<Vec<u8>> = case["input"]
            .as_array()
            .unwrap()
            .iter()
            .map(unhex)
            .collect();
        let decoded: Result<Vec<Signature>, BlsError> =
            raw.iter().map(|s| Signature::from_bytes(s)).collect();
        match (&case["output"], decoded) {
            (Value::Null, Ok(sigs)) => {
                assert_eq!(
                    Signature::aggregate(&sigs),
                    Err(BlsError::EmptyAggregate),
                    "{name}"
                );
            }
            (expected, Ok(sigs)) => {
                let agg = Signature::aggregate(&sigs).unwrap();
                assert_eq!(agg.to_bytes().to_vec(), unhex(expected), "{name}");
            }
            // Stricter than the vectors: `aggregate_infinity_signature` aggregates the identity
            // signature, which our `Signature::from_bytes` refuses at decoding time.
            (_, Err(err)) => {
                assert_eq!(err, BlsError::IdentityPoint, "{name}");
                assert!(raw.iter().any(|s| is_infinity(s)), "{name}");
            }
        }
    }
}

/// Runs `batch_verify` (random linear combination, then bisection). When every point decodes, the
/// batch must pass exactly when the vector says so, and on failure name exactly the triples that
/// fail on their own. A triple whose point does not decode (the infinity signature) is invalid.
#[test]
fn batch_verify_vectors() {
    let Some(cases) = cases("batch_verify") else {
        return;
    };
    count("batch_verify", &cases, 4);
    for (name, case) in cases {
        let input = &case["input"];
        let expected = case["output"].as_bool().unwrap();
        let msgs: Vec<Vec<u8>> = input["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(unhex)
            .collect();
        let sigs: Result<Vec<Signature>, _> = input["signatures"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| Signature::from_bytes(&unhex(s)))
            .collect();
        let got = match (public_keys(&input["pubkeys"]), sigs) {
            (Ok(pks), Ok(sigs)) => {
                assert_eq!(pks.len(), msgs.len(), "{name}");
                assert_eq!(pks.len(), sigs.len(), "{name}");
                let items: Vec<(&PublicKey, &[u8], &Signature)> = pks
                    .iter()
                    .zip(&msgs)
                    .zip(&sigs)
                    .map(|((pk, m), s)| (pk, m.as_slice(), s))
                    .collect();
                let individually_invalid: Vec<usize> = items
                    .iter()
                    .enumerate()
                    .filter(|(_, (pk, m, s))| pk.verify(m, s).is_err())
                    .map(|(i, _)| i)
                    .collect();
                match batch_verify(&items) {
                    Ok(()) => {
                        assert!(individually_invalid.is_empty(), "{name}");
                        true
                    }
                    Err(named) => {
                        assert_eq!(named, individually_invalid, "{name}: bisection");
                        false
                    }
                }
            }
            (_, Err(e)) => {
                assert_eq!(e, BlsError::IdentityPoint, "{name}");
                false
            }
            (Err(e), _) => panic!("{name}: unexpected key error {e:?}"),
        };
        assert_eq!(got, expected, "{name}");
    }
}

/// AggregateVerify of the PoP scheme (draft-irtf-cfrg-bls-signature-05 §3.3): distinct messages
/// here. An empty key list is refused (IETF semantics), as is any undecodable point.
#[test]
fn aggregate_verify_vectors() {
    let Some(cases) = cases("aggregate_verify") else {
        return;
    };
    count("aggregate_verify", &cases, 5);
    for (name, case) in cases {
        let input = &case["input"];
        let expected = case["output"].as_bool().unwrap();
        let msgs: Vec<Vec<u8>> = input["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(unhex)
            .collect();
        let got = match (
            public_keys(&input["pubkeys"]),
            Signature::from_bytes(&unhex(&input["signature"])),
        ) {
            (Ok(pks), Ok(sig)) => {
                assert_eq!(pks.len(), msgs.len(), "{name}");
                let pairs: Vec<(&PublicKey, &[u8])> = pks
                    .iter()
                    .zip(&msgs)
                    .map(|(pk, m)| (pk, m.as_slice()))
                    .collect();
                let res = aggregate_verify(&pairs, &sig);
                if pairs.is_empty() {
                    assert_eq!(res, Err(BlsError::EmptySignerSet), "{name}");
                }
                res.is_ok()
            }
            _ => false,
        };
        assert_eq!(got, expected, "{name}");
    }
}

/// hash_to_G2 (RFC 9380, suite BLS12381G2_XMD:SHA-256_SSWU_RO_, the test DST): the affine point
/// must equal the vector's (x, y).
#[test]
fn hash_to_g2_vectors() {
    let Some(cases) = cases("hash_to_G2") else {
        return;
    };
    count("hash_to_G2", &cases, 4);
    for (name, case) in cases {
        let msg = case["input"]["msg"].as_str().unwrap().as_bytes();
        let out = &case["output"];
        let expected =
            bls_support::g2_uncompressed(out["x"].as_str().unwrap(), out["y"].as_str().unwrap());
        let got = bls_support::hash_to_g2(msg, HASH_TO_G2_DST).serialize();
        assert_eq!(got.to_vec(), expected, "{name}");
    }
}

/// The `formats/` folder documents one format per handler: every documented handler has a case
/// folder and a test here, every case folder is documented, and every case is an object with
/// exactly `input` and `output`. A handler added upstream fails this test until it is covered.
#[test]
fn formats() {
    let Some(root) = common::vectors_dir("bls12-381-tests") else {
        return;
    };
    let docs: BTreeSet<String> = fs::read_dir(root.join("formats"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|f| f.strip_suffix(".md").map(str::to_owned))
        .collect();
    let folders: BTreeSet<String> = fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|f| f != "formats")
        .collect();
    let tested: BTreeSet<String> = HANDLERS.iter().map(|h| h.to_string()).collect();
    assert_eq!(docs, folders, "formats/*.md against the case folders");
    assert_eq!(
        folders, tested,
        "case folders against the handlers tested here"
    );
    let mut total = 0;
    for handler in HANDLERS {
        for (name, case) in cases(handler).unwrap() {
            let keys: Vec<&String> = case.as_object().unwrap().keys().collect();
            assert_eq!(keys, ["input", "output"], "{handler}/{name}");
            total += 1;
        }
    }
    assert_eq!(total, 104);
    println!(
        "bls12-381-tests/formats: {} documented handlers, {total} cases",
        docs.len()
    );
}

#[test]
fn deserialization_g1() {
    let Some(cases) = cases("deserialization_G1") else {
        return;
    };
    count("deserialization_G1", &cases, 16);
    for (name, case) in cases {
        let bytes = unhex(&case["input"]["pubkey"]);
        let expected = case["output"].as_bool().unwrap();
        let got = PublicKey::from_bytes(&bytes);
        if expected && is_infinity(&bytes) {
            // The vectors test point *decoding*, for which the infinity encoding is valid. A
            // `PublicKey` is a KeyValidate'd key (draft-irtf-cfrg-bls-signature-05 §2.5), which
            // must not be the identity, so we refuse it.
            assert_eq!(got, Err(BlsError::IdentityPoint), "{name}");
        } else {
            assert_eq!(got.is_ok(), expected, "{name}: {got:?}");
        }
        if let Ok(pk) = got {
            assert_eq!(pk.to_bytes().to_vec(), bytes, "{name}: re-encoding");
        }
    }
}

#[test]
fn deserialization_g2() {
    let Some(cases) = cases("deserialization_G2") else {
        return;
    };
    count("deserialization_G2", &cases, 18);
    for (name, case) in cases {
        let bytes = unhex(&case["input"]["signature"]);
        let expected = case["output"].as_bool().unwrap();
        let got = Signature::from_bytes(&bytes);
        if expected && is_infinity(&bytes) {
            // As for G1: the identity decodes as a point, but is never an honest signature, and
            // `Signature::from_bytes` refuses it (a Quasar deviation documented in `bls`).
            assert_eq!(got, Err(BlsError::IdentityPoint), "{name}");
        } else {
            assert_eq!(got.is_ok(), expected, "{name}: {got:?}");
        }
        if let Ok(sig) = got {
            assert_eq!(sig.to_bytes().to_vec(), bytes, "{name}: re-encoding");
        }
    }
}
