//! The Groth16 lane against real ark-groth16 proofs of a small circuit with the rollup's public
//! input shape (3 inputs, as `[μ_hi, μ_lo, h_x]`).
//!
//! The statement (`quasar_crypto::rollup::test_circuit::SquaringChain`): public `x0, x1, x2`,
//! witness `w` with `x0·x1 + x2 = w²`, plus a chain of [`CHAIN`] squarings of `w` so that the
//! circuit is not trivially small.

use std::sync::OnceLock;

use ark_bls12_381::{Bls12_381, Fq, Fq2, Fr, G1Affine, G2Affine};
use ark_ec::{AffineRepr, CurveGroup};
use ark_ff::{BigInteger, Field, One, PrimeField, UniformRand, Zero};
use ark_groth16::Groth16;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_snark::SNARK;
use quasar_crypto::rollup::test_circuit::SquaringChain;
use quasar_lanes::groth16::{
    field_element_from_bytes, field_element_to_bytes, Groth16Error, Proof, VerifyingKey,
    MAX_PUBLIC_INPUTS, PROOF_LEN,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// Squarings of the witness after the main constraint.
const CHAIN: usize = 300;
/// Statements proved once for all tests.
const STATEMENTS: usize = 8;
/// Items of the batch tests: the statements over and over, each time with a re-randomized proof
/// (proving is the slow part of the fixture).
const ITEMS: usize = 64;

struct Fixture {
    ark_vk: ark_groth16::VerifyingKey<Bls12_381>,
    pvk: ark_groth16::PreparedVerifyingKey<Bls12_381>,
    vk: VerifyingKey,
    /// [`ITEMS`] true statements with their proofs: item `i` is statement `i % STATEMENTS`, its
    /// proof as proved for `i < STATEMENTS`, re-randomized above.
    inputs: Vec<[Fr; 3]>,
    ark_proofs: Vec<ark_groth16::Proof<Bls12_381>>,
    proofs: Vec<Proof>,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let mut rng = ChaCha20Rng::seed_from_u64(6);
        let blank = SquaringChain::blank(CHAIN);
        let (pk, ark_vk) =
            Groth16::<Bls12_381>::circuit_specific_setup(blank, &mut rng).expect("setup");
        let mut inputs = Vec::new();
        let mut ark_proofs = Vec::new();
        for _ in 0..STATEMENTS {
            let circuit = SquaringChain::random(CHAIN, &mut rng);
            inputs.push(circuit.inputs.expect("assigned"));
            ark_proofs.push(Groth16::<Bls12_381>::prove(&pk, circuit, &mut rng).expect("prove"));
        }
        for i in STATEMENTS..ITEMS {
            let proof = &ark_proofs[i % STATEMENTS];
            let proof = Groth16::<Bls12_381>::rerandomize_proof(&ark_vk, proof, &mut rng);
            ark_proofs.push(proof);
            inputs.push(inputs[i % STATEMENTS]);
        }
        Fixture {
            pvk: ark_groth16::prepare_verifying_key(&ark_vk),
            vk: VerifyingKey::new(ark_vk.clone()).expect("valid key"),
            proofs: ark_proofs
                .iter()
                .map(|p| Proof::from_ark(p).expect("valid proof"))
                .collect(),
            ark_vk,
            inputs,
            ark_proofs,
        }
    })
}

fn ark_bytes<T: CanonicalSerialize>(value: &T) -> Vec<u8> {
    let mut out = Vec::new();
    value.serialize_compressed(&mut out).expect("serializes");
    out
}

fn ark_verifies(f: &Fixture, inputs: &[Fr], proof: &Proof) -> bool {
    Groth16::<Bls12_381>::verify_with_processed_vk(&f.pvk, inputs, &proof.to_ark())
        .expect("ark verify runs")
}

/// A point on E(Fp) outside the prime-order subgroup G1 (E(Fp) has a large cofactor).
fn g1_outside_subgroup() -> G1Affine {
    (0u64..)
        .filter_map(|x| G1Affine::get_point_from_x_unchecked(Fq::from(x), false))
        .find(|p| !p.is_zero() && !p.is_in_correct_subgroup_assuming_on_curve())
        .expect("such points are plentiful")
}

/// A point on the twist E'(Fp2) outside G2.
fn g2_outside_subgroup() -> G2Affine {
    (0u64..)
        .filter_map(|x| {
            G2Affine::get_point_from_x_unchecked(Fq2::new(Fq::from(x), Fq::one()), true)
        })
        .find(|p| !p.is_zero() && !p.is_in_correct_subgroup_assuming_on_curve())
        .expect("such points are plentiful")
}

/// `bytes` with the 48 or 96 bytes at `offset` replaced by `point`'s compressed encoding.
fn with_point<P: CanonicalSerialize>(bytes: &[u8], offset: usize, point: &P) -> Vec<u8> {
    let encoded = ark_bytes(point);
    let mut out = bytes.to_vec();
    out[offset..offset + encoded.len()].copy_from_slice(&encoded);
    out
}

#[test]
fn valid_proof_verifies_through_bytes_round_trip() {
    let f = fixture();
    let vk_bytes = ark_bytes(&f.ark_vk);
    assert_eq!(vk_bytes.len(), 344 + 48 * 4);
    let vk = VerifyingKey::from_bytes(&vk_bytes).expect("ark's key decodes");
    assert_eq!(vk.to_bytes(), vk_bytes);
    assert_eq!(vk.num_inputs(), 3);
    assert_eq!(vk, f.vk);
    for (inputs, ark_proof) in f.inputs.iter().zip(&f.ark_proofs).take(4) {
        let bytes = ark_bytes(ark_proof);
        assert_eq!(bytes.len(), PROOF_LEN);
        let proof = Proof::from_bytes(&bytes).expect("ark's proof decodes");
        assert_eq!(proof.to_bytes().as_slice(), bytes.as_slice());
        assert_eq!(&proof.to_ark(), ark_proof);
        let inputs: Vec<Fr> = inputs
            .iter()
            .map(|x| field_element_from_bytes(&field_element_to_bytes(x)).expect("canonical"))
            .collect();
        assert_eq!(vk.verify(&inputs, &proof), Ok(()));
        assert!(ark_verifies(f, &inputs, &proof));
    }
}

/// Our verdict equals ark-groth16's `verify_with_processed_vk` on valid proofs, on proofs of
/// other statements, on changed inputs and on tampered points.
#[test]
fn agrees_with_ark_on_valid_and_invalid_proofs() {
    let f = fixture();
    let g1 = G1Affine::generator();
    let mut cases: Vec<(Vec<Fr>, Proof)> = Vec::new();
    for i in 0..4 {
        let (inputs, proof) = (f.inputs[i].to_vec(), f.proofs[i].clone());
        cases.push((inputs.clone(), proof.clone()));
        // Another statement's proof.
        cases.push((inputs.clone(), f.proofs[i + 1].clone()));
        // Each input changed in turn.
        for j in 0..3 {
            let mut changed = inputs.clone();
            changed[j] += Fr::one();
            cases.push((changed, proof.clone()));
        }
        // A, B, C tampered (still valid points).
        let mut ark = proof.to_ark();
        ark.a = (ark.a + g1).into_affine();
        cases.push((inputs.clone(), Proof::from_ark(&ark).expect("valid points")));
        let mut ark = proof.to_ark();
        ark.b = (ark.b + ark.b).into_affine();
        cases.push((inputs.clone(), Proof::from_ark(&ark).expect("valid points")));
        let mut ark = proof.to_ark();
        ark.c = (ark.c - g1).into_affine();
        cases.push((inputs, Proof::from_ark(&ark).expect("valid points")));
    }
    let mut valid = 0;
    for (inputs, proof) in &cases {
        let ours = f.vk.verify(inputs, proof);
        let theirs = ark_verifies(f, inputs, proof);
        assert_eq!(ours.is_ok(), theirs, "inputs {inputs:?}");
        if !theirs {
            assert_eq!(ours, Err(Groth16Error::Invalid));
        }
        valid += usize::from(theirs);
    }
    assert_eq!(valid, 4);
}

#[test]
fn tampered_points_or_inputs_fail() {
    let f = fixture();
    let (inputs, proof) = (&f.inputs[0], &f.proofs[0]);
    assert_eq!(f.vk.verify(inputs, proof), Ok(()));
    let g2 = G2Affine::generator();
    let mut ark = proof.to_ark();
    ark.a = ark.c;
    let swapped = Proof::from_ark(&ark).expect("valid points");
    assert_eq!(f.vk.verify(inputs, &swapped), Err(Groth16Error::Invalid));
    let mut ark = proof.to_ark();
    ark.b = (ark.b + g2).into_affine();
    let shifted = Proof::from_ark(&ark).expect("valid points");
    assert_eq!(f.vk.verify(inputs, &shifted), Err(Groth16Error::Invalid));
    let mut ark = proof.to_ark();
    ark.c = (-ark.c.into_group()).into_affine();
    let negated = Proof::from_ark(&ark).expect("valid points");
    assert_eq!(f.vk.verify(inputs, &negated), Err(Groth16Error::Invalid));
    let mut changed = *inputs;
    changed[2] = -changed[2];
    assert_eq!(f.vk.verify(&changed, proof), Err(Groth16Error::Invalid));
}

/// ark-groth16 ignores extra inputs and zero-fills missing ones; we name the mismatch.
#[test]
fn too_few_or_too_many_inputs_are_an_input_count_error() {
    let f = fixture();
    let (inputs, proof) = (&f.inputs[0], &f.proofs[0]);
    for got in [0, 1, 2, 4, 5] {
        let mut wrong: Vec<Fr> = inputs.to_vec();
        wrong.resize(got, Fr::zero());
        assert_eq!(
            f.vk.verify(&wrong, proof),
            Err(Groth16Error::InputCount { expected: 3, got })
        );
        assert_eq!(
            f.vk.prepare_inputs(&wrong).err(),
            Some(Groth16Error::InputCount { expected: 3, got })
        );
    }
    // The proof with a zero appended still verifies under ark, which is why the count is checked.
    let mut extended = inputs.to_vec();
    extended.push(Fr::zero());
    assert!(ark_verifies(f, &extended, proof));
}

/// Regression guard: `x` and `x + r` must not both decode (that would be the same statement under
/// two encodings); the value is never reduced.
#[test]
fn public_input_at_or_above_r_is_non_canonical() {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    for _ in 0..32 {
        let x = Fr::rand(&mut rng);
        let mut big = x.into_bigint();
        assert!(!big.add_with_carry(&Fr::MODULUS), "x + r < 2^256");
        let bytes: [u8; 32] = big.to_bytes_le().try_into().expect("32 bytes");
        assert_eq!(
            field_element_from_bytes(&bytes),
            Err(Groth16Error::NonCanonicalInput)
        );
        assert_eq!(field_element_from_bytes(&field_element_to_bytes(&x)), Ok(x));
    }
    let r: [u8; 32] = Fr::MODULUS.to_bytes_le().try_into().expect("32 bytes");
    assert_eq!(
        field_element_from_bytes(&r),
        Err(Groth16Error::NonCanonicalInput)
    );
    assert_eq!(
        field_element_from_bytes(&[0xff; 32]),
        Err(Groth16Error::NonCanonicalInput)
    );
    let r_minus_one = -Fr::one();
    let mut expected = r;
    expected[0] -= 1;
    assert_eq!(field_element_to_bytes(&r_minus_one), expected);
    assert_eq!(field_element_from_bytes(&expected), Ok(r_minus_one));
    assert_eq!(field_element_from_bytes(&[0; 32]), Ok(Fr::zero()));
}

/// Points on the curve but outside the prime-order subgroup are rejected at decode, in each of
/// the three slots (and by ark's own validated decoder too).
#[test]
fn proof_point_outside_subgroup_is_rejected_at_decode() {
    let f = fixture();
    let bytes = f.proofs[0].to_bytes();
    let bad_g1 = g1_outside_subgroup();
    let bad_g2 = g2_outside_subgroup();
    assert!(bad_g1.is_on_curve() && bad_g2.is_on_curve());
    let cases = [
        (with_point(&bytes, 0, &bad_g1), "proof point A"),
        (with_point(&bytes, 48, &bad_g2), "proof point B"),
        (with_point(&bytes, 144, &bad_g1), "proof point C"),
    ];
    for (bad, what) in cases {
        assert_eq!(Proof::from_bytes(&bad), Err(Groth16Error::Encoding(what)));
        assert!(ark_groth16::Proof::<Bls12_381>::deserialize_compressed(bad.as_slice()).is_err());
    }
    let mut ark = f.proofs[0].to_ark();
    ark.a = bad_g1;
    assert_eq!(
        Proof::from_ark(&ark),
        Err(Groth16Error::Encoding("proof point A"))
    );
}

/// Non-canonical point encodings: a missing compression flag, an infinity flag with a non-zero
/// x, the larger-y flag on infinity, x = p, and (G2) a c0 coordinate of p or more. And the
/// identity, which is canonical but never part of an honest proof.
#[test]
fn non_canonical_and_identity_encodings_are_rejected() {
    let f = fixture();
    let bytes = f.proofs[0].to_bytes();
    let p_bytes = Fq::MODULUS.to_bytes_be();
    assert_eq!(p_bytes.len(), 48);
    let mut cases: Vec<Vec<u8>> = Vec::new();
    for (offset, len) in [(0usize, 48usize), (48, 96), (144, 48)] {
        let mut no_compression = bytes.to_vec();
        no_compression[offset] &= 0x7f;
        cases.push(no_compression);
        let mut infinity_with_x = bytes.to_vec();
        infinity_with_x[offset] |= 0x40;
        cases.push(infinity_with_x);
        let mut identity = bytes.to_vec();
        identity[offset..offset + len].fill(0);
        identity[offset] = 0xc0;
        cases.push(identity.clone());
        identity[offset] = 0xe0;
        cases.push(identity);
        // x (for G2: x.c1) = p, with the compression flag.
        let mut x_is_p = bytes.to_vec();
        x_is_p[offset..offset + 48].copy_from_slice(&p_bytes);
        x_is_p[offset] |= 0x80;
        cases.push(x_is_p);
    }
    // G2's x.c0 (the second 48 bytes of B) = p, or with the top bits set.
    let mut c0_is_p = bytes.to_vec();
    c0_is_p[96..144].copy_from_slice(&p_bytes);
    cases.push(c0_is_p);
    let mut c0_high = bytes.to_vec();
    c0_high[96] |= 0xe0;
    cases.push(c0_high);
    for bad in &cases {
        assert!(
            matches!(Proof::from_bytes(bad), Err(Groth16Error::Encoding(_))),
            "{}",
            hex(bad)
        );
    }
    // The identity passes arkworks' own checks, which is why we add ours.
    let mut ark = f.proofs[0].to_ark();
    ark.c = G1Affine::zero();
    assert!(
        ark_groth16::Proof::<Bls12_381>::deserialize_compressed(ark_bytes(&ark).as_slice()).is_ok()
    );
    assert_eq!(
        Proof::from_ark(&ark),
        Err(Groth16Error::Encoding("proof point C"))
    );
    // Flipping the larger-y flag gives the negated point: a valid, canonical encoding of a
    // different proof, which then fails to verify.
    let mut flipped = bytes;
    flipped[0] ^= 0x20;
    let negated = Proof::from_bytes(&flipped).expect("-A is a valid point");
    assert_eq!(negated.to_bytes(), flipped);
    assert_eq!(
        f.vk.verify(&f.inputs[0], &negated),
        Err(Groth16Error::Invalid)
    );
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Proofs are malleable: a re-randomized proof is another valid proof of the same statement with
/// different bytes, so nothing may deduplicate by proof bytes.
#[test]
fn rerandomized_proof_still_verifies_with_different_bytes() {
    let f = fixture();
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let original = &f.ark_proofs[0];
    let rerandomized = Groth16::<Bls12_381>::rerandomize_proof(&f.ark_vk, original, &mut rng);
    let proof = Proof::from_bytes(&ark_bytes(&rerandomized)).expect("valid proof");
    assert_ne!(proof.to_bytes(), f.proofs[0].to_bytes());
    assert_eq!(f.vk.verify(&f.inputs[0], &proof), Ok(()));
}

#[test]
fn batch_names_exactly_the_invalid_proofs() {
    let f = fixture();
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let g1 = G1Affine::generator();
    for bad in [vec![], vec![17], vec![0, 31, 63]] {
        let mut inputs: Vec<[Fr; 3]> = f.inputs.clone();
        let mut proofs: Vec<Proof> = f.proofs.clone();
        for (n, &i) in bad.iter().enumerate() {
            match n % 3 {
                // A changed input.
                0 => inputs[i][0] += Fr::one(),
                // The next statement's proof.
                1 => proofs[i] = f.proofs[(i + 1) % ITEMS].clone(),
                // A tampered C.
                _ => {
                    let mut ark = proofs[i].to_ark();
                    ark.c = (ark.c + g1).into_affine();
                    proofs[i] = Proof::from_ark(&ark).expect("valid points");
                }
            }
        }
        let items: Vec<(&[Fr], &Proof)> = inputs
            .iter()
            .zip(&proofs)
            .map(|(x, p)| (x.as_slice(), p))
            .collect();
        let verdicts = f.vk.verify_batch(&items, &mut rng);
        assert_eq!(verdicts.len(), ITEMS);
        let failed: Vec<usize> = (0..ITEMS).filter(|&i| verdicts[i].is_err()).collect();
        assert_eq!(failed, bad);
        for &i in &bad {
            assert_eq!(verdicts[i], Err(Groth16Error::Invalid));
            assert_eq!(
                f.vk.verify(items[i].0, items[i].1),
                Err(Groth16Error::Invalid)
            );
        }
    }
}

/// Input counts are checked per item before the batch: a wrong count is named as such and does
/// not disturb the other verdicts.
#[test]
fn batch_checks_input_counts_first() {
    let f = fixture();
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    let short = &f.inputs[5][..2];
    let long: Vec<Fr> = f.inputs[9].iter().copied().chain([Fr::zero()]).collect();
    let mut items: Vec<(&[Fr], &Proof)> = f.inputs[..12]
        .iter()
        .zip(&f.proofs)
        .map(|(x, p)| (x.as_slice(), p))
        .collect();
    items[5].0 = short;
    items[9].0 = &long;
    let verdicts = f.vk.verify_batch(&items, &mut rng);
    for (i, verdict) in verdicts.iter().enumerate() {
        match i {
            5 => assert_eq!(
                *verdict,
                Err(Groth16Error::InputCount {
                    expected: 3,
                    got: 2
                })
            ),
            9 => assert_eq!(
                *verdict,
                Err(Groth16Error::InputCount {
                    expected: 3,
                    got: 4
                })
            ),
            _ => assert_eq!(*verdict, Ok(()), "item {i}"),
        }
    }
    assert!(f.vk.verify_batch(&[], &mut rng).is_empty());
    let one = [(f.inputs[0].as_slice(), &f.proofs[0])];
    assert_eq!(f.vk.verify_batch(&one, &mut rng), vec![Ok(())]);
}

/// The fixed-base fold gives ark's `prepare_inputs` on random and edge-case inputs.
#[test]
fn input_fold_matches_ark() {
    let f = fixture();
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let mut edge = vec![
        Fr::zero(),
        Fr::one(),
        -Fr::one(),
        Fr::from(2u64).pow([254u64]),
    ];
    edge.extend((0..8).map(|k| Fr::from(1u64 << (8 * k)) - Fr::one()));
    edge.extend((0..8).map(|_| Fr::rand(&mut rng)));
    for triple in edge.windows(3) {
        let ours = f.vk.prepare_inputs(triple).expect("3 inputs");
        let theirs = Groth16::<Bls12_381>::prepare_inputs(&f.pvk, triple).expect("runs");
        assert_eq!(ours.into_affine(), theirs.into_affine());
    }
}

#[test]
fn verifying_key_rejects_identity_points_and_bad_counts() {
    let f = fixture();
    let mut vk = f.ark_vk.clone();
    vk.gamma_abc_g1[2] = G1Affine::zero();
    assert!(matches!(
        VerifyingKey::new(vk),
        Err(Groth16Error::Encoding(_))
    ));
    let mut vk = f.ark_vk.clone();
    vk.delta_g2 = G2Affine::zero();
    assert!(matches!(
        VerifyingKey::new(vk),
        Err(Groth16Error::Encoding(_))
    ));
    let mut vk = f.ark_vk.clone();
    vk.gamma_abc_g1.clear();
    assert!(matches!(
        VerifyingKey::new(vk),
        Err(Groth16Error::Encoding(_))
    ));
    let mut vk = f.ark_vk.clone();
    vk.gamma_abc_g1 = vec![G1Affine::generator(); MAX_PUBLIC_INPUTS + 2];
    assert_eq!(
        VerifyingKey::new(vk),
        Err(Groth16Error::TooManyInputs {
            got: MAX_PUBLIC_INPUTS as u64 + 1,
            max: MAX_PUBLIC_INPUTS
        })
    );
    let mut vk = f.ark_vk.clone();
    vk.beta_g2 = g2_outside_subgroup();
    assert!(matches!(
        VerifyingKey::new(vk),
        Err(Groth16Error::Encoding(_))
    ));
}

/// The key's length prefix is checked before arkworks sees the bytes: arkworks would try to
/// allocate `count` points first (an abort for a count near 2^64).
#[test]
fn verifying_key_decode_bounds_the_input_count_before_allocating() {
    let f = fixture();
    let bytes = f.vk.to_bytes();
    let with_count = |count: u64| {
        let mut out = bytes.clone();
        out[336..344].copy_from_slice(&count.to_le_bytes());
        out
    };
    assert_eq!(
        VerifyingKey::from_bytes(&with_count(u64::MAX)),
        Err(Groth16Error::TooManyInputs {
            got: u64::MAX - 1,
            max: MAX_PUBLIC_INPUTS
        })
    );
    assert_eq!(
        VerifyingKey::from_bytes(&with_count(MAX_PUBLIC_INPUTS as u64 + 2)),
        Err(Groth16Error::TooManyInputs {
            got: MAX_PUBLIC_INPUTS as u64 + 1,
            max: MAX_PUBLIC_INPUTS
        })
    );
    assert!(matches!(
        VerifyingKey::from_bytes(&with_count(0)),
        Err(Groth16Error::Encoding(_))
    ));
    // A count that disagrees with the length.
    for count in [1, 3, 5, MAX_PUBLIC_INPUTS as u64 + 1] {
        assert_eq!(
            VerifyingKey::from_bytes(&with_count(count)),
            Err(Groth16Error::Encoding("verifying key length"))
        );
    }
    for len in [0, 100, 343, 344, bytes.len() - 1] {
        assert!(
            VerifyingKey::from_bytes(&bytes[..len]).is_err(),
            "{len} bytes"
        );
    }
    let mut extended = bytes.clone();
    extended.push(0);
    assert!(VerifyingKey::from_bytes(&extended).is_err());
    // A valid key at the limit decodes.
    let mut vk = f.ark_vk.clone();
    vk.gamma_abc_g1 = (1..=MAX_PUBLIC_INPUTS as u64 + 1)
        .map(|k| (G1Affine::generator() * Fr::from(k)).into_affine())
        .collect();
    let at_limit = VerifyingKey::from_bytes(&ark_bytes(&vk)).expect("64 inputs is allowed");
    assert_eq!(at_limit.num_inputs(), MAX_PUBLIC_INPUTS);
}

/// Decoders never panic on truncated, extended, mutated or random bytes, and what decodes is
/// canonical; the fixture statement edited by the same bytes verifies or is rejected: a seeded
/// mutation loop through the fuzz entry points `groth16_decode` and `groth16_verify`.
#[test]
fn decoders_never_panic_on_mutated_bytes() {
    use quasar_lanes::fuzzing::{groth16_decode, groth16_verify};
    let f = fixture();
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let proof = f.proofs[0].to_bytes().to_vec();
    let vk = f.vk.to_bytes();
    for len in 0..=PROOF_LEN + 2 {
        let mut bytes = proof.clone();
        bytes.resize(len, 0);
        if len != PROOF_LEN {
            assert!(Proof::from_bytes(&bytes).is_err(), "{len} bytes");
        }
        groth16_decode(&bytes);
        groth16_verify(&bytes);
    }
    for _ in 0..300 {
        let base = match rng.gen_range(0..3) {
            0 => proof.clone(),
            1 => vk.clone(),
            _ => (0..rng.gen_range(0..600)).map(|_| rng.gen()).collect(),
        };
        let mut bytes = base;
        for _ in 0..rng.gen_range(1..4) {
            match rng.gen_range(0..4) {
                0 if !bytes.is_empty() => {
                    let i = rng.gen_range(0..bytes.len());
                    bytes[i] ^= 1 << rng.gen_range(0..8);
                }
                1 => bytes.truncate(rng.gen_range(0..=bytes.len())),
                2 => bytes.push(rng.gen()),
                _ => {}
            }
        }
        groth16_decode(&bytes);
        groth16_verify(&bytes);
        let _ = Proof::from_bytes(&bytes);
        let _ = VerifyingKey::from_bytes(&bytes);
    }
    // No edits: the fixture statement (checked to verify when it is built) is left alone.
    groth16_decode(&[]);
    groth16_verify(&[]);
}
