//! Conformance of the hash to G2 that every BLS signature runs through (blst's implementation of
//! RFC 9380, suite `BLS12381G2_XMD:SHA-256_SSWU_RO_`) against:
//!
//! - RFC 9380 Appendix J.10.1 (`hash-to-curve/BLS12381G2_XMD_SHA-256_SSWU_RO_.json`): for each
//!   message, the output point `P`, computed twice (hash_to_curve directly, and map_to_curve of
//!   the vector's `u0`, `u1` with cofactor clearing), and the field elements `u0`, `u1`
//!   recomputed from expand_message_xmd and reduced mod p (hash_to_field, RFC 9380 §5.2). The
//!   intermediate points `Q0`, `Q1` are not checked: blst exposes map_to_curve only together with
//!   cofactor clearing.
//! - RFC 9380 Appendix K.1 (`expand_message_xmd_SHA256_38.json`, `…_256.json`): the
//!   `uniform_bytes` of expand_message_xmd with SHA-256, with a 38-byte DST and with a 256-byte DST
//!   (longer than 255 bytes, so it is hashed first, RFC 9380 §5.3.3).
//! - Wycheproof `bls_hash_to_g2_test.json`: the compressed encoding of the hashed point.
//!
//! Case counts are asserted and printed (`cargo test --test hash_to_curve -- --nocapture`).

mod bls_support;
mod common;

use blst::{
    blst_bendian_from_fp, blst_expand_message_xmd, blst_fp, blst_fp2, blst_fp_add,
    blst_fp_from_bendian, blst_fp_mul, blst_map_to_g2, blst_p2, blst_p2_affine, blst_p2_to_affine,
};
use serde_json::Value;

/// The suite's test DST (RFC 9380 Appendix J.10.1).
const SUITE_DST: &str = "QUUX-V01-CS02-with-BLS12381G2_XMD:SHA-256_SSWU_RO_";

fn load(folder: &str, file: &str) -> Option<Value> {
    let path = common::vectors_dir(folder)?.join(file);
    Some(serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap())
}

/// expand_message_xmd with SHA-256 (RFC 9380 §5.3.1), as blst computes it for hash_to_field.
fn expand_message_xmd(msg: &[u8], dst: &[u8], len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    // SAFETY: `out` has `len` writable bytes; `msg` and `dst` are read with their own lengths.
    unsafe {
        blst_expand_message_xmd(
            out.as_mut_ptr(),
            len,
            msg.as_ptr(),
            msg.len(),
            dst.as_ptr(),
            dst.len(),
        )
    };
    out
}

/// The Fp element of a 48-byte big-endian value (reduced mod p when it is between p and 2^384).
fn fp(bytes: &[u8; 48]) -> blst_fp {
    let mut out = blst_fp::default();
    // SAFETY: reads 48 bytes from a 48-byte array, writes one field element.
    unsafe { blst_fp_from_bendian(&mut out, bytes.as_ptr()) };
    out
}

fn fp_bytes(x: &blst_fp) -> [u8; 48] {
    let mut out = [0u8; 48];
    // SAFETY: writes 48 bytes into a 48-byte array.
    unsafe { blst_bendian_from_fp(out.as_mut_ptr(), x) };
    out
}

/// OS2IP(64 bytes) mod p, as hash_to_field takes it (RFC 9380 §5.2 with L = 64): the value is
/// `hi·2^384 + lo` with `hi` the first 16 bytes, evaluated in Fp.
fn reduce_64(bytes: &[u8]) -> [u8; 48] {
    let mut hi = [0u8; 48];
    hi[32..].copy_from_slice(&bytes[..16]);
    let lo: [u8; 48] = bytes[16..64].try_into().unwrap();
    // 2^384 mod p as 2^383 + 2^383 (2^383 < 2^384, so it reduces on input).
    let mut half = [0u8; 48];
    half[0] = 0x80;
    let half = fp(&half);
    let (mut two_384, mut acc) = (blst_fp::default(), blst_fp::default());
    // SAFETY: all operands are initialised field elements; outputs are distinct locals.
    unsafe {
        blst_fp_add(&mut two_384, &half, &half);
        blst_fp_mul(&mut acc, &fp(&hi), &two_384);
        let high = acc;
        blst_fp_add(&mut acc, &high, &fp(&lo));
    }
    fp_bytes(&acc)
}

/// RFC 9380 Appendix J.10.1: `P` two ways, and `u` from hash_to_field.
#[test]
fn rfc9380_bls12381g2_xmd_sha256_sswu_ro() {
    let Some(doc) = load("hash-to-curve", "BLS12381G2_XMD_SHA-256_SSWU_RO_.json") else {
        return;
    };
    assert_eq!(doc["ciphersuite"], "BLS12381G2_XMD:SHA-256_SSWU_RO_");
    assert_eq!(doc["dst"], SUITE_DST);
    let dst = SUITE_DST.as_bytes();
    let vectors = doc["vectors"].as_array().unwrap();
    for v in vectors {
        let msg = v["msg"].as_str().unwrap();
        let p = &v["P"];
        let expected =
            bls_support::g2_uncompressed(p["x"].as_str().unwrap(), p["y"].as_str().unwrap());

        let hashed = bls_support::hash_to_g2(msg.as_bytes(), dst);
        assert_eq!(
            hashed.serialize().to_vec(),
            expected,
            "hash_to_curve({msg:?})"
        );

        // hash_to_field: count = 2 elements of Fp2 (m = 2), L = 64 bytes each.
        let uniform = expand_message_xmd(msg.as_bytes(), dst, 2 * 2 * 64);
        let us: Vec<blst_fp2> = v["u"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(i, u)| {
                let (c0, c1) = bls_support::fp2(u.as_str().unwrap());
                let from_field = |j: usize| reduce_64(&uniform[(2 * i + j) * 64..][..64]);
                assert_eq!(from_field(0), c0, "u{i}.c0 of {msg:?}");
                assert_eq!(from_field(1), c1, "u{i}.c1 of {msg:?}");
                blst_fp2 {
                    fp: [fp(&c0), fp(&c1)],
                }
            })
            .collect();
        assert_eq!(us.len(), 2);

        let (mut point, mut affine) = (blst_p2::default(), blst_p2_affine::default());
        // SAFETY: `us` holds two initialised Fp2 elements; outputs are locals.
        unsafe {
            blst_map_to_g2(&mut point, &us[0], &us[1]);
            blst_p2_to_affine(&mut affine, &point);
        }
        let mapped = blst::min_pk::Signature::from(affine);
        assert_eq!(
            mapped.serialize().to_vec(),
            expected,
            "map_to_curve(u) of {msg:?}"
        );
    }
    assert_eq!(vectors.len(), 5);
    println!(
        "hash-to-curve/BLS12381G2_XMD_SHA-256_SSWU_RO_: {} cases",
        vectors.len()
    );
}

/// RFC 9380 Appendix K.1: expand_message_xmd(SHA-256) outputs, short and long DST.
#[test]
fn rfc9380_expand_message_xmd_sha256() {
    for file in [
        "expand_message_xmd_SHA256_38.json",
        "expand_message_xmd_SHA256_256.json",
    ] {
        let Some(doc) = load("hash-to-curve", file) else {
            return;
        };
        assert_eq!(doc["hash"], "SHA256", "{file}");
        let dst = doc["DST"].as_str().unwrap().as_bytes();
        let tests = doc["tests"].as_array().unwrap();
        for t in tests {
            let msg = t["msg"].as_str().unwrap();
            let len_hex = t["len_in_bytes"].as_str().unwrap().trim_start_matches("0x");
            let len = usize::from_str_radix(len_hex, 16).unwrap();
            let expected = hex::decode(t["uniform_bytes"].as_str().unwrap()).unwrap();
            assert_eq!(expected.len(), len, "{file}: {msg:?}");
            assert_eq!(
                expand_message_xmd(msg.as_bytes(), dst, len),
                expected,
                "{file}: {msg:?}, {len} bytes"
            );
        }
        assert_eq!(tests.len(), 10, "{file}");
        println!(
            "hash-to-curve/{file}: {} cases (DST {} bytes)",
            tests.len(),
            dst.len()
        );
    }
}

/// Wycheproof `bls_hash_to_g2_test.json`: the compressed hashed point.
#[test]
fn wycheproof_hash_to_g2() {
    let Some(doc) = load("wycheproof", "bls_hash_to_g2_test.json") else {
        return;
    };
    let mut count = 0;
    for group in doc["testGroups"].as_array().unwrap() {
        let dst = group["dst"].as_str().unwrap();
        assert_eq!(dst, SUITE_DST);
        for t in group["tests"].as_array().unwrap() {
            assert_eq!(t["result"], "valid");
            let msg = hex::decode(t["msg"].as_str().unwrap()).unwrap();
            let expected = hex::decode(t["expected"].as_str().unwrap()).unwrap();
            let got = bls_support::hash_to_g2(&msg, dst.as_bytes()).compress();
            assert_eq!(got.to_vec(), expected, "tcId {}", t["tcId"]);
            count += 1;
        }
    }
    assert_eq!(count, 34);
    assert_eq!(doc["numberOfTests"], 34);
    println!("wycheproof/bls_hash_to_g2_test.json: {count} cases");
}
