//! Conformance of the BLS decoders and verifiers against the Wycheproof BLS12-381 signature files
//! (C2SP Wycheproof; format in `shared/vectors/README.md`): every case's verdict asserted, and for
//! every invalid case also *why* it fails, from its flags. Case counts are asserted and printed
//! (`cargo test --test bls_wycheproof -- --nocapture`).
//!
//! - `bls_sig_g2_pop_verify_test.json`: our ciphersuite; runs `PublicKey::verify`.
//! - `bls_sig_g2_basic_verify_test.json` and `bls_sig_g2_aggregate_verify_test.json`: the basic
//!   scheme (`…_NUL_` DST), which Quasar does not offer. Keys and signatures still go through our
//!   decoders (`PublicKey::from_bytes`, `Signature::from_bytes`); the pairing check then runs in
//!   blst directly under the NUL DST, with the basic scheme's distinct-message rule
//!   (draft-irtf-cfrg-bls-signature-05 §3.1.1) for AggregateVerify.
//!
//! `bls_hash_to_g2_test.json` is in `hash_to_curve.rs`.

use std::collections::HashSet;

mod common;

use blst::min_pk;
use blst::BLST_ERROR;
use quasar_crypto::bls::{BlsError, PublicKey, Signature};
use serde_json::Value;

/// The basic scheme's DST (draft-irtf-cfrg-bls-signature-05 §4.2.1).
const NUL_DST: &[u8] = b"BLS_SIG_BLS12381G2_XMD:SHA-256_SSWU_RO_NUL_";

/// How one case came out.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    /// Everything decoded and the pairing check passed.
    Verified,
    /// Everything decoded and the pairing check failed.
    Rejected,
    /// A key or the signature did not decode.
    Undecodable(BlsError),
    /// Refused before decoding or pairing: empty aggregate, count mismatch, repeated message.
    Malformed(&'static str),
}

/// Whether `outcome` is the expected way for a case with `flag` to come out.
fn explains(flag: &str, outcome: &Outcome) -> bool {
    use BlsError::*;
    use Outcome::*;
    match flag {
        // Valid inputs, including edge-case messages.
        "Valid" | "ValidAggregate" | "EmptyMessage" | "LargeMessage" | "MinimalInput" => {
            *outcome == Verified
        }
        // Well-formed points that do not verify.
        "WrongMessage" | "WrongKey" | "WrongDST" | "SignatureMalleability" => *outcome == Rejected,
        // A flipped bit may leave a valid point (then the pairing fails) or break the encoding.
        "InvalidSignature" => matches!(
            outcome,
            Rejected | Undecodable(InvalidEncoding) | Undecodable(NotInSubgroup)
        ),
        "IdentityPoint" => *outcome == Undecodable(IdentityPoint),
        "NotInSubgroup" => *outcome == Undecodable(NotInSubgroup),
        // Off the curve, or a coordinate >= p: blst refuses the encoding itself.
        "NotOnCurve" => *outcome == Undecodable(InvalidEncoding),
        "InvalidFlags" | "InvalidEncoding" => matches!(
            outcome,
            Undecodable(InvalidEncoding) | Undecodable(InvalidLength { .. })
        ),
        "TruncatedSignature" => matches!(outcome, Undecodable(InvalidLength { .. })),
        // Coordinates near p: not a valid point one way or another.
        "FieldBoundary" => matches!(
            outcome,
            Undecodable(InvalidEncoding) | Undecodable(NotInSubgroup)
        ),
        "EmptyAggregate" => *outcome == Malformed("empty"),
        "MismatchedCount" => *outcome == Malformed("count"),
        _ => false,
    }
}

/// Cases whose flag names another reason than the true one, with the outcome they must have.
/// basic tcId 64, "c1 coordinate >= field prime": after the three flag bits, c1 is 2^376 - 1,
/// which is below p; the point decompresses (on the curve) and fails the subgroup check.
const MISLABELED: [(&str, u64, Outcome); 1] = [(
    "bls_sig_g2_basic_verify_test.json",
    64,
    Outcome::Undecodable(BlsError::NotInSubgroup),
)];

/// Loads one Wycheproof file; `None` when the vectors are missing (see `common`).
fn load(file: &str) -> Option<Value> {
    let path = common::vectors_dir("wycheproof")?.join(file);
    Some(serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap())
}

fn unhex(v: &Value) -> Vec<u8> {
    hex::decode(v.as_str().expect("hex string")).expect("valid hex")
}

/// Runs `run` on every test of `file` (with its group), asserts the verdict and that the outcome
/// is explained by every flag of the case, and asserts and prints the count.
fn check_file(file: &str, expected: usize, run: impl Fn(&Value, &Value) -> Outcome) {
    let Some(doc) = load(file) else { return };
    assert_eq!(
        doc["numberOfTests"].as_u64(),
        Some(expected as u64),
        "{file}"
    );
    let mut seen = 0;
    for group in doc["testGroups"].as_array().unwrap() {
        for test in group["tests"].as_array().unwrap() {
            let id = &test["tcId"];
            let outcome = run(group, test);
            let valid = test["result"].as_str() == Some("valid");
            assert_eq!(
                outcome == Outcome::Verified,
                valid,
                "{file} tcId {id}: {outcome:?}"
            );
            if let Some((_, _, why)) = MISLABELED
                .iter()
                .find(|(f, tc, _)| *f == file && Some(*tc) == id.as_u64())
            {
                assert_eq!(&outcome, why, "{file} tcId {id}");
                seen += 1;
                continue;
            }
            for flag in test["flags"].as_array().unwrap() {
                let flag = flag.as_str().unwrap();
                assert!(
                    explains(flag, &outcome),
                    "{file} tcId {id}: flag {flag} does not explain {outcome:?}"
                );
            }
            seen += 1;
        }
    }
    assert_eq!(seen, expected, "{file}: cases run");
    println!("wycheproof/{file}: {seen} cases");
}

/// Decodes a key and a signature with Quasar's decoders.
fn decode(pk: &[u8], sig: &[u8]) -> Result<(PublicKey, Signature), BlsError> {
    Ok((PublicKey::from_bytes(pk)?, Signature::from_bytes(sig)?))
}

/// The blst form of decoded points, for running them under another DST.
fn blst_key(pk: &PublicKey) -> min_pk::PublicKey {
    min_pk::PublicKey::from_bytes(&pk.to_bytes()).expect("re-decodes")
}

fn blst_signature(sig: &Signature) -> min_pk::Signature {
    min_pk::Signature::from_bytes(&sig.to_bytes()).expect("re-decodes")
}

#[test]
fn pop_scheme_verify() {
    check_file("bls_sig_g2_pop_verify_test.json", 26, |group, test| {
        assert_eq!(
            group["ciphersuite"].as_str().unwrap().as_bytes(),
            quasar_crypto::bls::SIGNATURE_DST
        );
        match decode(&unhex(&group["publicKey"]["pk"]), &unhex(&test["sig"])) {
            Ok((pk, sig)) => match pk.verify(&unhex(&test["msg"]), &sig) {
                Ok(()) => Outcome::Verified,
                Err(_) => Outcome::Rejected,
            },
            Err(e) => Outcome::Undecodable(e),
        }
    });
}

#[test]
fn basic_scheme_verify() {
    check_file("bls_sig_g2_basic_verify_test.json", 88, |group, test| {
        assert_eq!(group["ciphersuite"].as_str().unwrap().as_bytes(), NUL_DST);
        match decode(&unhex(&group["publicKey"]["pk"]), &unhex(&test["sig"])) {
            Ok((pk, sig)) => {
                // Both points were subgroup-checked by our decoders.
                match blst_signature(&sig).verify(
                    false,
                    &unhex(&test["msg"]),
                    NUL_DST,
                    &[],
                    &blst_key(&pk),
                    false,
                ) {
                    BLST_ERROR::BLST_SUCCESS => Outcome::Verified,
                    _ => Outcome::Rejected,
                }
            }
            Err(e) => Outcome::Undecodable(e),
        }
    });
}

#[test]
fn basic_scheme_aggregate_verify() {
    check_file(
        "bls_sig_g2_aggregate_verify_test.json",
        19,
        |group, test| {
            assert_eq!(group["ciphersuite"].as_str().unwrap().as_bytes(), NUL_DST);
            let pks: Vec<Vec<u8>> = test["pubkeys"]
                .as_array()
                .unwrap()
                .iter()
                .map(unhex)
                .collect();
            let msgs: Vec<Vec<u8>> = test["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(unhex)
                .collect();
            if pks.is_empty() {
                return Outcome::Malformed("empty");
            }
            if pks.len() != msgs.len() {
                return Outcome::Malformed("count");
            }
            if msgs.iter().collect::<HashSet<_>>().len() != msgs.len() {
                return Outcome::Malformed("repeated message");
            }
            let decoded: Result<Vec<PublicKey>, BlsError> =
                pks.iter().map(|pk| PublicKey::from_bytes(pk)).collect();
            let (pks, sig) = match (decoded, Signature::from_bytes(&unhex(&test["sig"]))) {
                (Ok(pks), Ok(sig)) => (pks, sig),
                (Err(e), _) | (_, Err(e)) => return Outcome::Undecodable(e),
            };
            let keys: Vec<min_pk::PublicKey> = pks.iter().map(blst_key).collect();
            let key_refs: Vec<&min_pk::PublicKey> = keys.iter().collect();
            let msg_refs: Vec<&[u8]> = msgs.iter().map(Vec::as_slice).collect();
            match blst_signature(&sig).aggregate_verify(false, &msg_refs, NUL_DST, &key_refs, false)
            {
                BLST_ERROR::BLST_SUCCESS => Outcome::Verified,
                _ => Outcome::Rejected,
            }
        },
    );
}
