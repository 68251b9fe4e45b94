//! Entry points for fuzzers and smoke tests of this crate's decoders and verifiers.
//!
//! Each function takes arbitrary bytes and panics only when a property of this crate is broken;
//! for every other input it returns quietly. The cargo-fuzz targets in `lanes/fuzz` are one-line
//! calls to these functions, and `lanes/tests/groth16.rs`, `lanes/tests/cert.rs` and
//! `node/tests/fuzz_smoke.rs` drive the same functions with seeded mutated and random inputs on
//! the stable toolchain.
//!
//! Decoding and verification are separate targets: a pairing or an SLH-DSA verification costs
//! milliseconds, a decoder microseconds, so a target that verifies explores its decoders a
//! thousand times slower than one that only decodes.
//!
//! - [`groth16_decode`]: Groth16 proofs, verifying keys and public inputs decode or fail cleanly,
//!   and what decodes re-encodes to the same bytes (the encodings are canonical).
//! - [`groth16_verify`]: a fixed valid statement edited anywhere decodes or fails, and verifies
//!   or is rejected, without panicking.
//! - [`magnetar_leg`]: Magnetar legs (arbitrary bytes, and the fixture's valid leg edited
//!   anywhere) decode or fail cleanly for either parameter set, and what decodes re-encodes to
//!   the same bytes.
//! - [`magnetar_leg_verify`]: decoded legs and the fixture's valid leg edited anywhere are
//!   verified against the fixture's keys, and only a quorum is ever accepted.
//! - [`quasar_cert`]: arbitrary bytes and a valid `polaris` certificate edited anywhere parse or
//!   fail cleanly, and every leg body of a parsed certificate decodes with its leg's decoder or
//!   fails cleanly; what decodes re-encodes to the same bytes.
//! - [`quasar_cert_verify`]: the same inputs go through the parallel-max verifier under the
//!   `polaris` and `quasar` policies of one epoch ([`crate::cert_fixture`]); nothing panics, and
//!   an accepted certificate is the valid one's block, height, view and bundle with every leg
//!   individually valid.

use std::sync::OnceLock;

use ark_bls12_381::{Fr, G1Affine, G2Affine};
use ark_ec::{AffineRepr, CurveGroup};
use ark_ff::Field;

use quasar_crypto::fuzzing::edit;
use quasar_crypto::{bls, corona, magnetar, mldsa};
use quasar_wire::{LegKind, QuasarCertRef};

use crate::bls::{bitmap_from_signers, signers_from_bitmap};
use crate::cert::{CertPolicy, BLS_SIGNATURE_LEN, GROTH16_LEG_LEN};
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

/// Decodes `bytes` as a Groth16 proof; panics if it decodes but does not re-encode to `bytes`.
fn decode_proof(bytes: &[u8]) -> Option<Proof> {
    let proof = Proof::from_bytes(bytes).ok()?;
    assert_eq!(
        proof.to_bytes().as_slice(),
        bytes,
        "non-canonical proof accepted"
    );
    Some(proof)
}

/// Decodes `bytes` as a public input (a field element, little-endian); panics if it decodes but
/// does not re-encode to `bytes` (a value at or above r was reduced).
fn decode_field_element(bytes: &[u8]) -> Option<Fr> {
    let bytes = <&[u8; FIELD_ELEMENT_LEN]>::try_from(bytes).ok()?;
    let x = field_element_from_bytes(bytes).ok()?;
    assert_eq!(&field_element_to_bytes(&x), bytes, "input reduced");
    Some(x)
}

/// Decodes `bytes` as a verifying key; panics if it decodes but does not re-encode to `bytes` or
/// has more than [`MAX_PUBLIC_INPUTS`] inputs.
fn decode_verifying_key(bytes: &[u8]) -> Option<VerifyingKey> {
    let key = VerifyingKey::from_bytes(bytes).ok()?;
    assert_eq!(
        key.to_bytes(),
        bytes,
        "non-canonical verifying key accepted"
    );
    assert!(
        key.num_inputs() <= MAX_PUBLIC_INPUTS,
        "unbounded key accepted"
    );
    Some(key)
}

/// Decodes `data` as a proof, a verifying key and a public input (each from the whole input and,
/// for fixed-length values, from the prefix of its length). Nothing is verified
/// ([`groth16_verify`] does that).
///
/// Panics if something decodes that does not re-encode to its input, or a key with more than
/// [`MAX_PUBLIC_INPUTS`] inputs decodes.
pub fn groth16_decode(data: &[u8]) {
    for bytes in [data, data.get(..PROOF_LEN).unwrap_or(data)] {
        decode_proof(bytes);
    }
    decode_verifying_key(data);
    if let Some(bytes) = data.get(..FIELD_ELEMENT_LEN) {
        decode_field_element(bytes);
    }
}

/// Edits a fixed valid statement, key ‖ proof ‖ inputs, with `data` ([`edit`] with 2-byte
/// offsets, so that small inputs reach every field of every encoding), then decodes and verifies
/// it.
///
/// Panics if something decodes that does not re-encode to its input, or the fixture statement
/// does not build, decode and verify.
pub fn groth16_verify(data: &[u8]) {
    let Some(fixture) = fixture() else {
        panic!("the fixture statement must build");
    };
    let valid = [fixture.vk.as_slice(), &fixture.proof, &fixture.inputs].concat();
    let bytes = edit(&valid, data, 2);
    let vk_end = fixture.vk.len();
    let proof_end = vk_end + PROOF_LEN;
    let (vk_bytes, rest) = bytes.split_at(vk_end.min(bytes.len()));
    let vk_edited = vk_bytes != fixture.vk.as_slice();
    let rest_edited = rest != valid.get(vk_end..).unwrap_or_default();
    if !vk_edited && !rest_edited {
        // The fixture itself, known to decode and verify.
        return;
    }
    let (proof_bytes, input_bytes) = rest.split_at((proof_end - vk_end).min(rest.len()));
    // An unedited key is the fixture's (decoding one builds its tables: too slow per input).
    let decoded_key;
    let key = if vk_edited {
        match decode_verifying_key(vk_bytes) {
            Some(key) => {
                decoded_key = key;
                &decoded_key
            }
            None => return,
        }
    } else {
        &fixture.key
    };
    let Some(proof) = decode_proof(proof_bytes) else {
        assert!(rest_edited, "the unedited fixture proof must decode");
        return;
    };
    let inputs: Option<Vec<Fr>> = input_bytes
        .chunks_exact(FIELD_ELEMENT_LEN)
        .map(decode_field_element)
        .collect();
    let Some(inputs) = inputs else {
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

/// Decodes `bytes` as a Magnetar leg of `set`; panics if it decodes but does not re-encode to
/// `bytes`.
fn decode_magnetar_leg(bytes: &[u8], set: magnetar::ParameterSet) -> Option<MagnetarLeg> {
    let leg = MagnetarLeg::decode(bytes, set).ok()?;
    assert_eq!(leg.encode(), bytes, "non-canonical Magnetar leg accepted");
    Some(leg)
}

/// Decodes `data` as a Magnetar leg of each parameter set, then edits the fixture's valid leg
/// with `data` ([`edit`] with 3-byte offsets, so that small inputs reach the header, the bitmap
/// and every signature)
/// and decodes it. Nothing is verified ([`magnetar_leg_verify`] does that).
///
/// Panics if something decodes that does not re-encode to its input, or the fixture does not
/// build and verify.
pub fn magnetar_leg(data: &[u8]) {
    let Some(fixture) = magnetar_fixture() else {
        panic!("the Magnetar fixture must build and verify");
    };
    for set in [
        magnetar::ParameterSet::Shake192f,
        magnetar::ParameterSet::Shake192s,
    ] {
        decode_magnetar_leg(data, set);
    }
    decode_magnetar_leg(&edit(&fixture.leg, data, 3), fixture.keys.parameter_set());
}

/// Decodes `data` as a Magnetar leg of the fixture's parameter set and verifies it against the
/// fixture's keys (so mutated real legs by the fixture's validators reach the signature checks);
/// then edits the fixture's valid leg with `data` ([`edit`] with 3-byte offsets) and decodes and
/// verifies it.
///
/// Panics if something decodes that does not re-encode to its input, a leg whose signers are not
/// a quorum verifies, or the fixture does not build and verify.
pub fn magnetar_leg_verify(data: &[u8]) {
    let Some(fixture) = magnetar_fixture() else {
        panic!("the Magnetar fixture must build and verify");
    };
    let set = fixture.keys.parameter_set();
    if let Some(leg) = decode_magnetar_leg(data, set) {
        magnetar_verdict(fixture, &leg);
    }
    let bytes = edit(&fixture.leg, data, 3);
    if bytes == fixture.leg {
        // The fixture itself, known to decode and verify.
        return;
    }
    if let Some(leg) = decode_magnetar_leg(&bytes, set) {
        magnetar_verdict(fixture, &leg);
    }
}

/// The `quasar_cert` fixture: one epoch's keys under `polaris` and `quasar`, a valid encoded
/// `polaris` certificate and its legs, the verifier, and the verifier's report on the valid
/// certificate (verified once, when the fixture is built).
struct CertFixture {
    polaris: CertPolicy,
    quasar: CertPolicy,
    valid: Vec<u8>,
    /// The valid certificate's legs, each decoded (and found canonical) once, when the fixture
    /// is built.
    valid_legs: Vec<(LegKind, Vec<u8>)>,
    verifier: crate::cert::CertVerifier,
    reference: crate::cert::CertReport,
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
            let verifier = CertVerifier::new(2).ok()?;
            let reference = verifier.verify(polaris.policy(), &valid).ok()?;
            let valid_legs: Vec<(LegKind, Vec<u8>)> = QuasarCertRef::parse(&valid)
                .ok()?
                .legs()
                .map(|(leg, body)| (leg, body.to_vec()))
                .collect();
            for (leg, body) in &valid_legs {
                decode_leg_body(polaris.policy(), *leg, body);
            }
            Some(CertFixture {
                polaris: polaris.policy().clone(),
                quasar: quasar.policy().clone(),
                valid,
                valid_legs,
                verifier,
                reference,
            })
        })
        .as_ref()
}

/// Decodes one leg body of a parsed certificate with its leg's decoder, as the verifier does
/// before any signature check: a BLS aggregate (96 bytes, compressed G2) and the signer bitmap
/// over `policy`'s set; a Corona signature; a Groth16 leg's proof and h_x (proof ‖ digest ‖
/// h_x); a Pulsar ML-DSA-65 signature; a Magnetar leg of `policy`'s parameter set.
///
/// Panics if something decodes that does not re-encode to its bytes.
fn decode_leg_body(policy: &CertPolicy, leg: LegKind, body: &[u8]) {
    match leg {
        LegKind::Bls => {
            let Some((aggregate, bitmap)) = body.split_at_checked(BLS_SIGNATURE_LEN) else {
                return;
            };
            if let Ok(signature) = bls::Signature::from_bytes(aggregate) {
                assert_eq!(
                    signature.to_bytes().as_slice(),
                    aggregate,
                    "non-canonical BLS aggregate accepted"
                );
            }
            let n = policy.keys().validators.len();
            if let Ok(signers) = signers_from_bitmap(bitmap, n) {
                assert_eq!(
                    bitmap_from_signers(signers, n),
                    bitmap,
                    "non-canonical signer bitmap accepted"
                );
            }
        }
        LegKind::Corona => {
            if let Ok(signature) = corona::scheme::Signature::from_bytes(body) {
                assert_eq!(
                    signature.to_bytes(),
                    body,
                    "non-canonical Corona signature accepted"
                );
            }
        }
        LegKind::Groth16 => {
            if body.len() == GROTH16_LEG_LEN {
                decode_proof(body.get(..PROOF_LEN).unwrap_or_default());
                decode_field_element(body.get(PROOF_LEN + 32..).unwrap_or_default());
            }
        }
        LegKind::Pulsar => {
            if let Ok(signature) = mldsa::Signature::<mldsa::MlDsa65>::from_bytes(body) {
                assert_eq!(signature.as_bytes(), body, "Pulsar signature changed");
            }
        }
        LegKind::Magnetar => {
            if let Some(keys) = &policy.keys().magnetar {
                decode_magnetar_leg(body, keys.parameter_set());
            }
        }
    }
}

/// Fuzz entry point: QuasarCert decoding (module docs). `data` is parsed as a certificate, and
/// also applied as edits ([`edit`] with 3-byte offsets) to the fixture's valid `polaris`
/// certificate, which is parsed too; every leg body of what parses goes through its leg's
/// decoder, except a body identical to the valid certificate's leg of that kind (decoded once,
/// when the fixture is built: the same bytes would take the same path again, and the Corona
/// signature alone cost most of each run). Nothing is verified ([`quasar_cert_verify`] does
/// that).
///
/// # Panics
///
/// If the fixture does not build, or a leg body decodes that does not re-encode to its bytes.
pub fn quasar_cert(data: &[u8]) {
    let Some(fixture) = cert_fixture() else {
        panic!("the certificate fixture must build and its certificate verify");
    };
    let edited = edit(&fixture.valid, data, 3);
    for candidate in [data, edited.as_slice()] {
        if let Ok(cert) = QuasarCertRef::parse(candidate) {
            for (leg, body) in cert.legs() {
                let unedited = fixture
                    .valid_legs
                    .iter()
                    .any(|(kind, valid)| *kind == leg && valid.as_slice() == body);
                if !unedited {
                    decode_leg_body(&fixture.polaris, leg, body);
                }
            }
        }
    }
}

/// Fuzz entry point: QuasarCert verification (module docs), of `data` and of the fixture's valid
/// certificate edited by `data` ([`edit`] with 3-byte offsets).
///
/// # Panics
///
/// If the fixture does not build or its certificate does not verify, or a certificate other
/// than the fixture's block is accepted, or an accepted certificate has a leg that does not
/// verify on its own.
pub fn quasar_cert_verify(data: &[u8]) {
    let Some(fixture) = cert_fixture() else {
        panic!("the certificate fixture must build and its certificate verify");
    };
    let reference = &fixture.reference;
    let bytes = edit(&fixture.valid, data, 3);
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
            let Ok(cert) = QuasarCertRef::parse(candidate) else {
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
