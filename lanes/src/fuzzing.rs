//! Entry points for fuzzers and smoke tests of this crate's decoders.
//!
//! Each function takes arbitrary bytes and panics only when a property of this crate is broken;
//! for every other input it returns quietly. The cargo-fuzz targets in `lanes/fuzz` are one-line
//! calls to these functions, and `lanes/tests/groth16.rs` and `node/tests/fuzz_smoke.rs` drive
//! the same functions with seeded mutated and random inputs on the stable toolchain.
//!
//! - [`groth16_decode`]: Groth16 proofs, verifying keys and public inputs decode or fail cleanly,
//!   and what decodes re-encodes to the same bytes (the encodings are canonical); a fixed valid
//!   statement edited anywhere decodes or fails, and verifies or is rejected, without panicking.
//! - [`magnetar_leg`]: Magnetar legs decode or fail cleanly for either parameter set, and what
//!   decodes re-encodes to the same bytes; decoded legs and a fixed valid leg edited anywhere are
//!   verified against the fixture's keys, and only a quorum is ever accepted.
//! - [`quasar_cert`]: arbitrary bytes and a valid `polaris` certificate edited anywhere go
//!   through the parallel-max verifier under the `polaris` and `quasar` policies of one epoch
//!   ([`crate::cert_fixture`]); nothing panics, and an accepted certificate is the valid one's
//!   block, height, view and bundle with every leg individually valid.

use std::sync::OnceLock;

use ark_bls12_381::{Fr, G1Affine, G2Affine};
use ark_ec::{AffineRepr, CurveGroup};
use ark_ff::Field;

use quasar_crypto::{bls, magnetar};

use crate::groth16::{
    field_element_from_bytes, field_element_to_bytes, Proof, VerifyingKey, FIELD_ELEMENT_LEN,
    MAX_PUBLIC_INPUTS, PROOF_LEN,
};
use crate::magnetar::{verify_leg, MagnetarKeys, MagnetarLeg};
use crate::{Validator, ValidatorSet, CERT_CONTEXT};

/// Public inputs of the fixture statement (the rollup's shape: `[μ_hi, μ_lo, h_x]`).
const FIXTURE_INPUTS: usize = 3;

/// A verifying key with 3 inputs, a proof that verifies under it, and the inputs, all encoded,
/// plus the decoded key. Built without a circuit: every exponent is known, and
/// `c = (u·v − a·b − l·g) / d` solves `e(A, B) = e(α, β)·e(L, γ)·e(C, δ)` for
/// `A = u·G1, B = v·G2, α = a·G1, β = b·G2, γ = g·G2, δ = d·G2, K_i = k_i·G1, C = c·G1`.
struct Fixture {
    vk: Vec<u8>,
    proof: [u8; PROOF_LEN],
    inputs: Vec<u8>,
    key: VerifyingKey,
}

fn fixture() -> Option<&'static Fixture> {
    static FIXTURE: OnceLock<Option<Fixture>> = OnceLock::new();
    FIXTURE
        .get_or_init(|| {
            let s = |n: u64| Fr::from(n).square() + Fr::from(7u64);
            let (a, b, g, d, u, v) = (s(1), s(2), s(3), s(4), s(5), s(6));
            let k: Vec<Fr> = (10..10 + FIXTURE_INPUTS as u64 + 1).map(s).collect();
            let x: Vec<Fr> = (20..20 + FIXTURE_INPUTS as u64).map(s).collect();
            let l = k
                .iter()
                .skip(1)
                .zip(&x)
                .fold(*k.first()?, |l, (k, x)| l + *k * x);
            let c = (u * v - a * b - l * g) * d.inverse()?;
            let g1 = |e: Fr| (G1Affine::generator() * e).into_affine();
            let g2 = |e: Fr| (G2Affine::generator() * e).into_affine();
            let ark_vk = ark_groth16::VerifyingKey {
                alpha_g1: g1(a),
                beta_g2: g2(b),
                gamma_g2: g2(g),
                delta_g2: g2(d),
                gamma_abc_g1: k.iter().map(|&k| g1(k)).collect(),
            };
            let key = VerifyingKey::new(ark_vk).ok()?;
            let proof = Proof::from_ark(&ark_groth16::Proof {
                a: g1(u),
                b: g2(v),
                c: g1(c),
            })
            .ok()?;
            // The unedited statement verifies (checked once here, not per input).
            key.verify(&x, &proof).ok()?;
            Some(Fixture {
                vk: key.to_bytes(),
                proof: proof.to_bytes(),
                inputs: x.iter().flat_map(field_element_to_bytes).collect(),
                key,
            })
        })
        .as_ref()
}

/// Decodes `data` as a proof, a verifying key and a public input (each from the whole input and,
/// for fixed-length values, from the prefix of its length); then edits a fixed valid statement
/// with `data` (each 3 bytes are an offset, u16 LE, into key ‖ proof ‖ inputs and a byte XORed in
/// there, so that small inputs reach every field of every encoding) and decodes and verifies it.
///
/// Panics if something decodes that does not re-encode to its input, a key with more than
/// [`MAX_PUBLIC_INPUTS`] inputs decodes, or the fixture statement does not build, decode and
/// verify.
pub fn groth16_decode(data: &[u8]) {
    for bytes in [data, data.get(..PROOF_LEN).unwrap_or(data)] {
        if let Ok(proof) = Proof::from_bytes(bytes) {
            assert_eq!(
                proof.to_bytes().as_slice(),
                bytes,
                "non-canonical proof accepted"
            );
        }
    }
    if let Ok(key) = VerifyingKey::from_bytes(data) {
        assert_eq!(key.to_bytes(), data, "non-canonical verifying key accepted");
        assert!(
            key.num_inputs() <= MAX_PUBLIC_INPUTS,
            "unbounded key accepted"
        );
    }
    if let Some(bytes) = data
        .get(..FIELD_ELEMENT_LEN)
        .and_then(|b| <&[u8; FIELD_ELEMENT_LEN]>::try_from(b).ok())
    {
        if let Ok(x) = field_element_from_bytes(bytes) {
            assert_eq!(&field_element_to_bytes(&x), bytes, "input reduced");
        }
    }

    let Some(fixture) = fixture() else {
        panic!("the fixture statement must build");
    };
    let mut bytes = fixture.vk.clone();
    bytes.extend_from_slice(&fixture.proof);
    bytes.extend_from_slice(&fixture.inputs);
    let vk_end = fixture.vk.len();
    let proof_end = vk_end + PROOF_LEN;
    let (mut vk_edited, mut rest_edited) = (false, false);
    for edit in data.chunks_exact(3) {
        if let [lo, hi, value] = edit {
            let offset = usize::from(u16::from_le_bytes([*lo, *hi])) % bytes.len().max(1);
            if let Some(byte) = bytes.get_mut(offset) {
                *byte ^= value;
                if offset < vk_end {
                    vk_edited |= *value != 0;
                } else {
                    rest_edited |= *value != 0;
                }
            }
        }
    }
    if !vk_edited && !rest_edited {
        // The fixture itself, known to decode and verify.
        return;
    }
    let (vk_bytes, rest) = bytes.split_at(vk_end.min(bytes.len()));
    let (proof_bytes, input_bytes) = rest.split_at((proof_end - vk_end).min(rest.len()));
    // An unedited key is the fixture's (decoding one builds its tables: too slow per input).
    let decoded_key;
    let key = if vk_edited {
        match VerifyingKey::from_bytes(vk_bytes) {
            Ok(key) => {
                assert_eq!(
                    key.to_bytes(),
                    vk_bytes,
                    "non-canonical verifying key accepted"
                );
                decoded_key = key;
                &decoded_key
            }
            Err(_) => return,
        }
    } else {
        &fixture.key
    };
    let Ok(proof) = Proof::from_bytes(proof_bytes) else {
        assert!(rest_edited, "the unedited fixture proof must decode");
        return;
    };
    assert_eq!(proof.to_bytes().as_slice(), proof_bytes);
    let inputs: Result<Vec<Fr>, _> = input_bytes
        .chunks_exact(FIELD_ELEMENT_LEN)
        .filter_map(|chunk| <&[u8; FIELD_ELEMENT_LEN]>::try_from(chunk).ok())
        .map(field_element_from_bytes)
        .collect();
    let Ok(inputs) = inputs else {
        assert!(rest_edited, "the unedited fixture inputs must decode");
        return;
    };
    // Edited, so it may or may not verify (flipping a sign flag twice restores it); it must only
    // return a verdict.
    let _ = key.verify(&inputs, &proof);
}

/// Validators of the Magnetar fixture, stake 1 each: validator `i`'s keys are
/// `magnetar::SecretKey::from_seed(ParameterSet::Shake192f, &[i + 1; 32])` and
/// `bls::SecretKey::from_seed(&[i + 1; 32])`. Its leg is signed by validators 0, 1 and 2.
pub const MAGNETAR_VALIDATORS: usize = 4;
/// The round digest the Magnetar fixture's validators sign (context [`CERT_CONTEXT`]).
pub const MAGNETAR_MU: [u8; 32] = *b"quasar magnetar fuzzing fixture!";

/// The epoch keys of the Magnetar fixture and its leg (deterministic signatures, encoded).
struct MagnetarFixture {
    keys: MagnetarKeys,
    leg: Vec<u8>,
}

fn magnetar_fixture() -> Option<&'static MagnetarFixture> {
    static FIXTURE: OnceLock<Option<MagnetarFixture>> = OnceLock::new();
    FIXTURE
        .get_or_init(|| {
            let set = magnetar::ParameterSet::Shake192f;
            let seeds: Vec<[u8; 32]> = (1..=MAGNETAR_VALIDATORS as u8).map(|i| [i; 32]).collect();
            let secrets: Vec<magnetar::SecretKey> = seeds
                .iter()
                .map(|seed| magnetar::SecretKey::from_seed(set, seed))
                .collect();
            let validators = seeds
                .iter()
                .map(|seed| Validator {
                    public_key: bls::SecretKey::from_seed(seed).public_key(),
                    stake: 1,
                })
                .collect();
            let keys = MagnetarKeys::new(
                ValidatorSet::new(validators).ok()?,
                set,
                secrets.iter().map(|k| k.public_key().clone()).collect(),
            )
            .ok()?;
            let signatures = secrets
                .iter()
                .take(3)
                .map(|k| k.sign_deterministic(&MAGNETAR_MU, CERT_CONTEXT))
                .collect::<Result<Vec<_>, _>>()
                .ok()?;
            let leg = MagnetarLeg::new(
                MAGNETAR_VALIDATORS,
                signatures.into_iter().enumerate().collect(),
            )
            .ok()?;
            // The unedited leg verifies (checked once here, not per input).
            verify_leg(&keys, &MAGNETAR_MU, &leg).ok()?;
            Some(MagnetarFixture {
                keys,
                leg: leg.encode(),
            })
        })
        .as_ref()
}

/// Verifies a decoded leg against the fixture's keys; panics if a leg without a quorum verifies.
fn magnetar_verdict(fixture: &MagnetarFixture, leg: &MagnetarLeg) {
    if let Ok(verified) = verify_leg(&fixture.keys, &MAGNETAR_MU, leg) {
        assert!(
            fixture.keys.validators().is_quorum(verified.stake),
            "a Magnetar leg without a quorum verified"
        );
    }
}

/// Decodes `data` as a Magnetar leg of each parameter set and verifies what decodes against the
/// fixture's keys (so mutated real legs by the fixture's validators reach the signature checks);
/// then edits the fixture's valid leg with `data` (each 4 bytes are an offset, 24-bit
/// little-endian, into the leg and a byte XORed in there, so that small inputs reach the header,
/// the bitmap and every signature) and decodes and verifies it.
///
/// Panics if something decodes that does not re-encode to its input, a leg whose signers are not
/// a quorum verifies, or the fixture does not build and verify.
pub fn magnetar_leg(data: &[u8]) {
    let Some(fixture) = magnetar_fixture() else {
        panic!("the Magnetar fixture must build and verify");
    };
    for set in [
        magnetar::ParameterSet::Shake192f,
        magnetar::ParameterSet::Shake192s,
    ] {
        if let Ok(leg) = MagnetarLeg::decode(data, set) {
            assert_eq!(leg.encode(), data, "non-canonical Magnetar leg accepted");
            if set == fixture.keys.parameter_set() {
                magnetar_verdict(fixture, &leg);
            }
        }
    }

    let mut bytes = fixture.leg.clone();
    let mut edited = false;
    for edit in data.chunks_exact(4) {
        if let [b0, b1, b2, value] = edit {
            let offset = usize::from(*b0) | usize::from(*b1) << 8 | usize::from(*b2) << 16;
            if let Some(byte) = bytes.get_mut(offset % fixture.leg.len().max(1)) {
                *byte ^= value;
                edited |= *value != 0;
            }
        }
    }
    if !edited {
        // The fixture itself, known to decode and verify.
        return;
    }
    if let Ok(leg) = MagnetarLeg::decode(&bytes, fixture.keys.parameter_set()) {
        assert_eq!(leg.encode(), bytes, "non-canonical Magnetar leg accepted");
        magnetar_verdict(fixture, &leg);
    }
}

/// The `quasar_cert` fixture: one epoch's keys under `polaris` and `quasar`, a valid encoded
/// `polaris` certificate, and the verifier.
struct CertFixture {
    polaris: crate::cert::CertPolicy,
    quasar: crate::cert::CertPolicy,
    valid: Vec<u8>,
    verifier: crate::cert::CertVerifier,
}

fn cert_fixture() -> Option<&'static CertFixture> {
    use crate::cert::{CertVerifier, Profile};
    use crate::cert_fixture::{Fixture, FixtureConfig};
    static FIXTURE: OnceLock<Option<CertFixture>> = OnceLock::new();
    FIXTURE
        .get_or_init(|| {
            let mut polaris = Fixture::new(FixtureConfig::new(4, Profile::Polaris)).ok()?;
            let quasar = Fixture::new(FixtureConfig::new(4, Profile::Quasar)).ok()?;
            let earlier = [polaris.policy().round_digest(1, 1, &[0xa1; 32])];
            let valid = polaris
                .certificate(2, 3, [0xb2; 32], &earlier)
                .ok()?
                .encode()
                .ok()?;
            Some(CertFixture {
                polaris: polaris.policy().clone(),
                quasar: quasar.policy().clone(),
                valid,
                verifier: CertVerifier::new(2).ok()?,
            })
        })
        .as_ref()
}

/// Fuzz entry point: QuasarCert verification (module docs).
///
/// # Panics
///
/// If the fixture does not build or its certificate does not verify, or a certificate other
/// than the fixture's block is accepted, or an accepted certificate has a leg that does not
/// verify on its own.
pub fn quasar_cert(data: &[u8]) {
    let Some(fixture) = cert_fixture() else {
        panic!("the certificate fixture must build");
    };
    let Ok(reference) = fixture.verifier.verify(&fixture.polaris, &fixture.valid) else {
        panic!("the fixture certificate must verify");
    };
    let mut bytes = fixture.valid.clone();
    for edit in data.chunks_exact(4) {
        if let [b0, b1, b2, value] = edit {
            let offset = usize::from(*b0) | usize::from(*b1) << 8 | usize::from(*b2) << 16;
            if let Some(byte) = bytes.get_mut(offset % fixture.valid.len().max(1)) {
                *byte ^= value;
            }
        }
    }
    for candidate in [data, bytes.as_slice()] {
        for policy in [&fixture.polaris, &fixture.quasar] {
            let Ok(report) = fixture.verifier.verify(policy, candidate) else {
                continue;
            };
            assert!(
                std::ptr::eq(policy, &fixture.polaris),
                "a polaris certificate passed the quasar policy"
            );
            assert_eq!(
                (report.height, report.block, &report.bundle),
                (reference.height, reference.block, &reference.bundle),
                "an accepted certificate certifies another block"
            );
            let Ok(cert) = quasar_wire::QuasarCertRef::parse(candidate) else {
                panic!("an accepted certificate does not parse");
            };
            for (leg, body) in cert.legs() {
                let alone = crate::cert::verify_leg(
                    policy,
                    leg,
                    &report.round_digest,
                    &report.bundle_digest,
                    body,
                );
                assert!(alone.is_ok(), "accepted {leg} leg fails alone: {alone:?}");
            }
        }
    }
}
