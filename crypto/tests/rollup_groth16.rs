//! End to end: Groth16 setup, proof and verification of the smallest real rollup (n = 1,
//! τ = 1, ML-DSA-44) with a libcrux signature: about 2.5 minutes and 3.7 GB on this 2-core
//! machine (setup 116 s, proof 28 s, proving key 543 MB compressed); timings with
//! `cargo test --release -p quasar-crypto --test rollup_groth16 -- --nocapture`.

use std::time::Instant;

use ark_bls12_381::{Bls12_381, Fr};
use ark_groth16::Groth16;
use ark_serialize::CanonicalSerialize;
use ark_snark::SNARK;
use quasar_crypto::accel::CpuBackend;
use quasar_crypto::mldsa::{MlDsa44, SecretKey};
use quasar_crypto::rollup::circuit::{RollupWitness, Shape, Validator, ROLLUP_CONTEXT};
use quasar_crypto::rollup::native::{DecodedSignature, ExpandedKey, ML_DSA_44};
use quasar_crypto::rollup::prover::{dev_setup, prove};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

#[test]
fn smallest_rollup_proves_and_verifies() {
    let shape = Shape {
        params: ML_DSA_44,
        validators: 1,
        slots: 1,
    };
    let sk = SecretKey::<MlDsa44>::from_seed(&[7; 32]);
    let digest = [0x11u8; 32];
    let sig = sk.sign_deterministic(&digest, ROLLUP_CONTEXT).unwrap();
    let validators = vec![Validator {
        key: ExpandedKey::from_public_key(&ML_DSA_44, sk.public_key().as_bytes()).unwrap(),
        stake: 1,
    }];
    let sigs = vec![(
        0,
        DecodedSignature::from_bytes(&ML_DSA_44, sig.as_bytes()).unwrap(),
    )];
    let witness = RollupWitness::new(shape, validators, sigs, digest).unwrap();

    let t = Instant::now();
    let (pk, vk) = dev_setup(shape, [1; 32]).unwrap();
    println!("setup: {:?}", t.elapsed());
    println!(
        "proving key: {} bytes compressed; verifying key: {} bytes",
        pk.compressed_size(),
        vk.compressed_size()
    );
    let t = Instant::now();
    let (proof, statement, timings) = prove(
        &pk,
        witness,
        &CpuBackend,
        &mut ChaCha20Rng::seed_from_u64(2),
    )
    .unwrap();
    println!("prove: {:?} ({timings:?})", t.elapsed());
    assert_eq!(proof.compressed_size(), 192);

    let pvk = Groth16::<Bls12_381>::process_vk(&vk).unwrap();
    let inputs = statement.public_inputs();
    assert!(Groth16::<Bls12_381>::verify_with_processed_vk(&pvk, &inputs, &proof).unwrap());
    let mut wrong = inputs;
    wrong[2] += Fr::from(1u64);
    assert!(!Groth16::<Bls12_381>::verify_with_processed_vk(&pvk, &wrong, &proof).unwrap());
    wrong = inputs;
    wrong[1] += Fr::from(1u64);
    assert!(!Groth16::<Bls12_381>::verify_with_processed_vk(&pvk, &wrong, &proof).unwrap());
}

/// A tiny circuit (x·x = y) whose keys exercise the proving key file format quickly.
struct Square;

impl ark_relations::gr1cs::ConstraintSynthesizer<Fr> for Square {
    fn generate_constraints(
        self,
        cs: ark_relations::gr1cs::ConstraintSystemRef<Fr>,
    ) -> Result<(), ark_relations::gr1cs::SynthesisError> {
        use ark_r1cs_std::alloc::AllocVar;
        use ark_r1cs_std::eq::EqGadget;
        use ark_r1cs_std::fields::fp::FpVar;
        let x = FpVar::new_witness(cs.clone(), || Ok(Fr::from(3u64)))?;
        let y = FpVar::new_input(cs, || Ok(Fr::from(9u64)))?;
        (&x * &x).enforce_equal(&y)
    }
}

#[test]
fn proving_key_files_round_trip_and_refuse_damage() {
    use quasar_crypto::fuzzing::rollup_proving_key;
    use quasar_crypto::rollup::prover::{read_proving_key, write_proving_key, ProverError};
    let (pk, _) =
        Groth16::<Bls12_381>::circuit_specific_setup(Square, &mut ChaCha20Rng::seed_from_u64(3))
            .unwrap();
    let shape = Shape {
        params: ML_DSA_44,
        validators: 4,
        slots: 3,
    };
    let mut file = Vec::new();
    write_proving_key(&shape, &pk, &mut file).unwrap();
    let (read_shape, read_pk) = read_proving_key(file.as_slice()).unwrap();
    assert_eq!(read_shape, shape);
    assert_eq!(read_pk, pk);

    let format_error =
        |bytes: &[u8]| matches!(read_proving_key(bytes), Err(ProverError::Format(_)));
    let mut damaged = file.clone();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 1;
    assert!(format_error(&damaged), "flipped body bit");
    assert!(format_error(&file[..file.len() - 1]), "truncated checksum");
    assert!(format_error(&file[..10]), "truncated header");
    let mut extended = file.clone();
    extended.push(0);
    assert!(format_error(&extended), "trailing byte");
    let mut other_set = file.clone();
    other_set[20] = 87;
    assert!(format_error(&other_set), "ML-DSA-87 is not supported");
    // The fuzz target's body on the real file and on its damaged copies.
    for bytes in [&file[..], &damaged[..], &file[..40]] {
        rollup_proving_key(bytes);
    }
}
