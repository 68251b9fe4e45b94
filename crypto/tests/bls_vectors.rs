//! Conformance of `quasar_crypto::bls` against the ethereum/bls12-381-tests vectors
//! (PoP ciphersuite, min-pk; format in `shared/vectors/README.md`).
//!
//! Where the vectors accept the identity point as a *decoding* success, our types are stricter
//! (a `PublicKey` or `Signature` that exists is never the identity) and the tests assert the
//! stricter behaviour explicitly.

use std::fs;

mod common;

use quasar_crypto::bls::{fast_aggregate_verify, BlsError, PublicKey, SecretKey, Signature};
use serde_json::Value;

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
    assert_eq!(cases.len(), 10);
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
    assert_eq!(cases.len(), 29);
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
    assert_eq!(cases.len(), 12);
    for (name, case) in cases {
        let input = &case["input"];
        let expected = case["output"].as_bool().unwrap();
        let pks: Result<Vec<PublicKey>, _> = input["pubkeys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|pk| PublicKey::from_bytes(&unhex(pk)))
            .collect();
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
    assert_eq!(cases.len(), 6);
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

/// Verifies each (pubkey, message, signature) triple on its own: the batch is valid iff all are.
#[test]
fn batch_verify_as_individual_verifies() {
    let Some(cases) = cases("batch_verify") else {
        return;
    };
    for (name, case) in cases {
        let input = &case["input"];
        let expected = case["output"].as_bool().unwrap();
        let pks = input["pubkeys"].as_array().unwrap();
        let msgs = input["messages"].as_array().unwrap();
        let sigs = input["signatures"].as_array().unwrap();
        assert_eq!(pks.len(), msgs.len());
        assert_eq!(pks.len(), sigs.len());
        let got = pks.iter().zip(msgs).zip(sigs).all(|((pk, msg), sig)| {
            match (
                PublicKey::from_bytes(&unhex(pk)),
                Signature::from_bytes(&unhex(sig)),
            ) {
                (Ok(pk), Ok(sig)) => pk.verify(&unhex(msg), &sig).is_ok(),
                _ => false,
            }
        });
        assert_eq!(got, expected, "{name}");
    }
}

#[test]
fn deserialization_g1() {
    let Some(cases) = cases("deserialization_G1") else {
        return;
    };
    assert_eq!(cases.len(), 16);
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
    assert_eq!(cases.len(), 18);
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
