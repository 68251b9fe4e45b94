//! Our Groth16 prover (`rollup::prover::create_proof`, FFTs and MSMs through the
//! batched-arithmetic trait) against `ark-groth16`'s: the same randomizers give the same proof
//! points, its proofs verify under `ark-groth16` keys, and a bad key or a backend without the
//! kernels gives an error, never a panic or a wrong proof.

use ark_bls12_381::{Bls12_381, Fr};
use ark_ff::{UniformRand, Zero};
use ark_groth16::Groth16;
use ark_snark::SNARK;
use quasar_crypto::accel::{
    AccelError, BatchArithmetic, CpuBackend, NttClass, RowResults, Workload,
};
use quasar_crypto::rollup::prover::{create_proof, ProverError, ProvingKey};
use quasar_crypto::rollup::test_circuit::SquaringChain;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn chain(steps: usize, seed: u64) -> SquaringChain {
    SquaringChain::random(steps, &mut ChaCha20Rng::seed_from_u64(seed))
}

fn keys(circuit: &SquaringChain) -> (ProvingKey, ark_groth16::PreparedVerifyingKey<Bls12_381>) {
    let mut rng = ChaCha20Rng::seed_from_u64(99);
    let blank = SquaringChain::blank(circuit.chain);
    let (pk, vk) = Groth16::<Bls12_381>::circuit_specific_setup(blank, &mut rng).unwrap();
    let pvk = Groth16::<Bls12_381>::process_vk(&vk).unwrap();
    (pk, pvk)
}

fn verifies(
    pvk: &ark_groth16::PreparedVerifyingKey<Bls12_381>,
    circuit: &SquaringChain,
    proof: &ark_groth16::Proof<Bls12_381>,
) -> bool {
    let inputs = circuit.inputs.unwrap();
    Groth16::<Bls12_381>::verify_with_processed_vk(pvk, &inputs, proof).unwrap()
}

#[test]
fn same_randomizers_give_the_proof_of_ark_groth16() {
    // chain + 2 constraints and 4 instance variables: 58 fills the 64-point domain exactly,
    // 59 spills into 128.
    for steps in [0, 58, 59, 300] {
        let circuit = chain(steps, steps as u64);
        let (pk, pvk) = keys(&circuit);
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        for (r, s) in [
            (Fr::rand(&mut rng), Fr::rand(&mut rng)),
            (Fr::zero(), Fr::zero()),
            (Fr::zero(), Fr::rand(&mut rng)),
        ] {
            let (ours, _) = create_proof(&pk, circuit.clone(), r, s, &CpuBackend).unwrap();
            let theirs =
                Groth16::<Bls12_381>::create_proof_with_reduction(circuit.clone(), &pk, r, s)
                    .unwrap();
            assert_eq!(ours, theirs, "steps {steps}");
            assert!(verifies(&pvk, &circuit, &ours));
        }
    }
}

#[test]
fn a_false_witness_gives_a_proof_that_does_not_verify() {
    let circuit = chain(40, 1);
    let (pk, pvk) = keys(&circuit);
    // An assignment whose x2 is not the statement's: it satisfies no constraint system for
    // the statement being verified.
    let mut lying = circuit.clone();
    lying.inputs = lying
        .inputs
        .map(|[x0, x1, x2]| [x0, x1, x2 + Fr::from(1u64)]);
    let mut rng = ChaCha20Rng::seed_from_u64(6);
    let (proof, _) = create_proof(
        &pk,
        lying,
        Fr::rand(&mut rng),
        Fr::rand(&mut rng),
        &CpuBackend,
    )
    .unwrap();
    assert!(!verifies(&pvk, &circuit, &proof));
}

#[test]
fn a_key_for_another_circuit_is_an_error_not_a_panic() {
    let small = chain(10, 2);
    let (small_pk, _) = keys(&small);
    let big = chain(200, 3);
    let error = create_proof(&small_pk, big, Fr::zero(), Fr::zero(), &CpuBackend).unwrap_err();
    assert!(
        matches!(
            error,
            ProverError::KeyMismatch(_) | ProverError::Accel(AccelError::MsmLength { .. })
        ),
        "{error}"
    );

    let mut empty = small_pk;
    empty.a_query.clear();
    let error = create_proof(&empty, small, Fr::zero(), Fr::zero(), &CpuBackend).unwrap_err();
    assert!(matches!(error, ProverError::KeyMismatch(_)), "{error}");
}

/// A backend with only the Corona ring kernels (the trait's defaults for the rest).
struct RingOnly;

impl BatchArithmetic for RingOnly {
    fn name(&self) -> &'static str {
        "ring-only"
    }
    fn forward_ntt(&self, class: NttClass, rows: &mut [u64]) -> Result<RowResults, AccelError> {
        CpuBackend.forward_ntt(class, rows)
    }
    fn inverse_ntt(&self, class: NttClass, rows: &mut [u64]) -> Result<RowResults, AccelError> {
        CpuBackend.inverse_ntt(class, rows)
    }
    fn pointwise_mul(
        &self,
        class: NttClass,
        lhs: &mut [u64],
        rhs: &[u64],
    ) -> Result<RowResults, AccelError> {
        CpuBackend.pointwise_mul(class, lhs, rhs)
    }
}

#[test]
fn a_backend_without_scalar_kernels_is_named_in_the_error() {
    let circuit = chain(10, 4);
    let (pk, _) = keys(&circuit);
    let error = create_proof(&pk, circuit, Fr::zero(), Fr::zero(), &RingOnly).unwrap_err();
    assert!(
        matches!(
            error,
            ProverError::Accel(AccelError::Unsupported {
                backend: "ring-only",
                workload: Workload::ScalarNtt
            })
        ),
        "{error}"
    );
}
