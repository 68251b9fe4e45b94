//! Conformance of the pairing layer under the BLS signatures (blst's Miller loop and final
//! exponentiation, its point decoding, on-curve and subgroup checks) against the EIP-2537
//! `PAIRING_CHECK` precompile vectors: `pairing_check_bls.json` (every expected output asserted)
//! and `fail-pairing_check_bls.json` (every input refused, for the reason the vector names).
//!
//! EIP-2537 encodes points uncompressed with 64-byte field elements whose top 16 bytes must be
//! zero (G1: x‖y, 128 bytes; G2: x.c0‖x.c1‖y.c0‖y.c1, 256 bytes), the point at infinity as all
//! zeros. The decoder below strips the padding and hands blst its ZCash uncompressed encoding
//! (G2 halves in c1, c0 order), mapping all-zeros to the identity. Like the precompile, it
//! requires canonical field elements (blst refuses a coordinate ≥ p), points on the curve and, for
//! the pairing, in the prime-order subgroups. The check is `Π e(P_i, Q_i) == 1`; pairs with an
//! infinity point contribute 1 and are skipped.
//!
//! Case counts are asserted and printed (`cargo test --test eip2537_pairing -- --nocapture`).

mod common;

use blst::min_pk::{PublicKey as G1Point, Signature as G2Point};
use blst::{blst_fp12, blst_p1_affine, blst_p2_affine, BLST_ERROR};
use serde_json::Value;

/// One G1‖G2 pair of the pairing input.
const PAIR_LEN: usize = 384;

/// Why an input is refused, in the categories the fail vectors name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    Length,
    TopBytes,
    FieldElement,
    NotOnCurve,
    G1Subgroup,
    G2Subgroup,
}

impl Refusal {
    /// The category of an `ExpectedError` string of the fail vectors.
    fn of_expected(error: &str) -> Refusal {
        match error {
            "invalid input length" => Refusal::Length,
            "invalid field element top bytes" => Refusal::TopBytes,
            "invalid fp.Element encoding" => Refusal::FieldElement,
            "invalid point: not on curve" => Refusal::NotOnCurve,
            "g1 point is not in the correct subgroup" => Refusal::G1Subgroup,
            "g2 point is not in the correct subgroup" => Refusal::G2Subgroup,
            other => panic!("unknown expected error {other:?}"),
        }
    }
}

/// Strips the 16 zero bytes above each 48-byte field element of `padded` (a multiple of 64).
fn unpad(padded: &[u8]) -> Result<Vec<u8>, Refusal> {
    let mut out = Vec::with_capacity(padded.len() / 64 * 48);
    for element in padded.chunks(64) {
        let (top, value) = element.split_at(16);
        if top.iter().any(|&b| b != 0) {
            return Err(Refusal::TopBytes);
        }
        out.extend_from_slice(value);
    }
    Ok(out)
}

fn decode_error(err: BLST_ERROR) -> Refusal {
    match err {
        BLST_ERROR::BLST_BAD_ENCODING => Refusal::FieldElement,
        BLST_ERROR::BLST_POINT_NOT_ON_CURVE => Refusal::NotOnCurve,
        other => panic!("unexpected decode error {other:?}"),
    }
}

/// A G1 point from 128 bytes; `None` for the point at infinity.
fn g1(bytes: &[u8]) -> Result<Option<blst_p1_affine>, Refusal> {
    let raw = unpad(bytes)?;
    if raw.iter().all(|&b| b == 0) {
        return Ok(None);
    }
    let point = G1Point::deserialize(&raw).map_err(decode_error)?;
    point.validate().map_err(|_| Refusal::G1Subgroup)?;
    Ok(Some(point.into()))
}

/// A G2 point from 256 bytes; `None` for the point at infinity.
fn g2(bytes: &[u8]) -> Result<Option<blst_p2_affine>, Refusal> {
    let raw = unpad(bytes)?;
    if raw.iter().all(|&b| b == 0) {
        return Ok(None);
    }
    let (x, y) = raw.split_at(96);
    let (x0, x1) = x.split_at(48);
    let (y0, y1) = y.split_at(48);
    let zcash = [x1, x0, y1, y0].concat();
    let point = G2Point::deserialize(&zcash).map_err(decode_error)?;
    point.validate(true).map_err(|_| Refusal::G2Subgroup)?;
    Ok(Some(point.into()))
}

/// The precompile: whether the product of the pairings of `input` is one.
fn pairing_check(input: &[u8]) -> Result<bool, Refusal> {
    let pairs = input.chunks_exact(PAIR_LEN);
    if input.is_empty() || !pairs.remainder().is_empty() {
        return Err(Refusal::Length);
    }
    let (mut ps, mut qs) = (Vec::new(), Vec::new());
    for pair in pairs {
        let (p, q) = pair.split_at(128);
        if let (Some(p), Some(q)) = (g1(p)?, g2(q)?) {
            ps.push(p);
            qs.push(q);
        }
    }
    if ps.is_empty() {
        return Ok(true);
    }
    Ok(blst_fp12::miller_loop_n(&qs, &ps).final_exp() == blst_fp12::default())
}

fn load(file: &str) -> Option<Vec<Value>> {
    let path = common::vectors_dir("eip-2537")?.join(file);
    let doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    Some(doc.as_array().unwrap().clone())
}

#[test]
fn pairing_check_vectors() {
    let Some(cases) = load("pairing_check_bls.json") else {
        return;
    };
    for case in &cases {
        let name = case["Name"].as_str().unwrap();
        let input = hex::decode(case["Input"].as_str().unwrap()).unwrap();
        let expected = hex::decode(case["Expected"].as_str().unwrap()).unwrap();
        assert_eq!(expected.len(), 32, "{name}");
        assert!(expected[..31].iter().all(|&b| b == 0), "{name}");
        let one = match expected[31] {
            1 => true,
            0 => false,
            other => panic!("{name}: output byte {other}"),
        };
        assert_eq!(pairing_check(&input), Ok(one), "{name}");
    }
    assert_eq!(cases.len(), 15);
    println!("eip-2537/pairing_check_bls.json: {} cases", cases.len());
}

#[test]
fn fail_pairing_check_vectors() {
    let Some(cases) = load("fail-pairing_check_bls.json") else {
        return;
    };
    for case in &cases {
        let name = case["Name"].as_str().unwrap();
        let input = hex::decode(case["Input"].as_str().unwrap()).unwrap();
        let expected = Refusal::of_expected(case["ExpectedError"].as_str().unwrap());
        assert_eq!(pairing_check(&input), Err(expected), "{name}");
    }
    assert_eq!(cases.len(), 25);
    println!(
        "eip-2537/fail-pairing_check_bls.json: {} cases",
        cases.len()
    );
}
