//! Shared by the BLS hash-to-curve conformance suites: hashing to G2 with an arbitrary DST and
//! reading points written as `{x, y}` with Fp2 coordinates `"0x<c0>,0x<c1>"`.
//!
//! Signatures only ever hash under `quasar_crypto::bls::SIGNATURE_DST` / `POP_DST`; the vectors
//! use the RFC 9380 test DST, so these helpers call blst's `hash_to_g2` (the same function the
//! signature code runs through blst) directly.

use blst::min_pk::Signature as G2Point;
use blst::{blst_hash_to_g2, blst_p2, blst_p2_affine, blst_p2_to_affine};

/// hash_to_curve (RFC 9380 §3, suite `BLS12381G2_XMD:SHA-256_SSWU_RO_`) of `msg` under `dst`, as a
/// blst G2 affine point wrapped in blst's `Signature` type for its encoders.
pub fn hash_to_g2(msg: &[u8], dst: &[u8]) -> G2Point {
    let mut point = blst_p2::default();
    let mut affine = blst_p2_affine::default();
    // SAFETY: every pointer comes from a live slice or local with the length passed beside it;
    // blst reads `msg` and `dst` and writes only `point` / `affine`. A null `aug` with length 0
    // means "no augmentation".
    unsafe {
        blst_hash_to_g2(
            &mut point,
            msg.as_ptr(),
            msg.len(),
            dst.as_ptr(),
            dst.len(),
            std::ptr::null(),
            0,
        );
        blst_p2_to_affine(&mut affine, &point);
    }
    G2Point::from(affine)
}

/// The 48-byte big-endian halves `(c0, c1)` of an Fp2 element written `"0x<c0>,0x<c1>"`.
pub fn fp2(text: &str) -> ([u8; 48], [u8; 48]) {
    let half = |s: &str| -> [u8; 48] {
        let bytes = hex::decode(s.trim().trim_start_matches("0x")).expect("hex");
        bytes.try_into().expect("48 bytes")
    };
    let (c0, c1) = text.split_once(',').expect("two components");
    (half(c0), half(c1))
}

/// The ZCash uncompressed (192-byte) encoding of the G2 point with coordinates `x`, `y`
/// (`x.c1 ‖ x.c0 ‖ y.c1 ‖ y.c0`), as blst's `serialize` writes it.
pub fn g2_uncompressed(x: &str, y: &str) -> Vec<u8> {
    let (x0, x1) = fp2(x);
    let (y0, y1) = fp2(y);
    [x1, x0, y1, y0].concat()
}
