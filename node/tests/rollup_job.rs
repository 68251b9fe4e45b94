//! The node's rollup job: signature collection per window (real ML-DSA-65 keys and signatures)
//! and the asynchronous prover (real Groth16 proofs of a small circuit, checked by the node's
//! verifier lane). The rollup circuit itself is proved end to end in
//! `crypto/tests/rollup_groth16.rs` and by the `rollup-prove` CLI test.

use std::sync::mpsc as std_mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ark_bls12_381::{Bls12_381, Fr};
use ark_groth16::Groth16;
use ark_relations::gr1cs::{ConstraintSynthesizer, ConstraintSystemRef, SynthesisError};
use ark_snark::SNARK;
use quasar_crypto::accel::CpuBackend;
use quasar_crypto::mldsa::{MlDsa65, SecretKey};
use quasar_crypto::rollup::circuit::{commitment, RollupError, Shape, Validator, ROLLUP_CONTEXT};
use quasar_crypto::rollup::native::{ExpandedKey, ML_DSA_65};
use quasar_crypto::rollup::prover::ProverError;
use quasar_crypto::rollup::test_circuit::SquaringChain;
use quasar_lanes::groth16::{Proof, VerifyingKey};
use quasar_node::rollup_job::{
    AsyncProver, CollectError, ProofOutcome, ProofRequest, Submitted, WindowCollector,
};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use tokio::sync::mpsc;

const DIGEST: [u8; 32] = [0x5a; 32];

/// n validators with the given stakes, their secret keys, and the shape for τ = `slots`.
fn validator_set(
    stakes: &[u64],
    slots: usize,
) -> (Shape, Arc<[Validator]>, Vec<SecretKey<MlDsa65>>) {
    let keys: Vec<SecretKey<MlDsa65>> = (0..stakes.len())
        .map(|i| SecretKey::from_seed(&[i as u8 + 1; 32]))
        .collect();
    let validators = keys
        .iter()
        .zip(stakes)
        .map(|(sk, &stake)| Validator {
            key: ExpandedKey::from_public_key(&ML_DSA_65, sk.public_key().as_bytes()).unwrap(),
            stake,
        })
        .collect();
    let shape = Shape {
        params: ML_DSA_65,
        validators: stakes.len(),
        slots,
    };
    (shape, validators, keys)
}

fn sign(sk: &SecretKey<MlDsa65>, digest: &[u8; 32]) -> Vec<u8> {
    sk.sign_deterministic(digest, ROLLUP_CONTEXT)
        .unwrap()
        .as_bytes()
        .to_vec()
}

#[test]
fn collector_blames_bad_signatures_on_arrival_and_keeps_the_good_ones() {
    let (shape, validators, keys) = validator_set(&[1, 1, 1, 1], 3);
    let mut window = WindowCollector::new(shape, validators.clone(), 7, DIGEST).unwrap();
    let good = sign(&keys[0], &DIGEST);

    assert_eq!(window.add(4, &good), Err(CollectError::UnknownValidator(4)));
    assert!(matches!(
        window.add(0, &good[..100]),
        Err(CollectError::Malformed { validator: 0, .. })
    ));
    // A real signature by another validator, and one on another digest.
    assert_eq!(
        window.add(1, &good),
        Err(CollectError::Rejected(RollupError::BadSignature(1)))
    );
    assert_eq!(
        window.add(1, &sign(&keys[1], &[0; 32])),
        Err(CollectError::Rejected(RollupError::BadSignature(1)))
    );
    let mut flipped = sign(&keys[1], &DIGEST);
    flipped[1000] ^= 1;
    assert!(window.add(1, &flipped).is_err());
    assert_eq!(window.signatures(), 0, "nothing bad was kept");

    assert_eq!(window.add(0, &good), Ok(false));
    assert_eq!(window.add(0, &good), Err(CollectError::Duplicate(0)));
    assert_eq!(window.add(1, &sign(&keys[1], &DIGEST)), Ok(false));
    assert!(matches!(
        WindowCollector::new(shape, validators.clone(), 7, DIGEST)
            .unwrap()
            .into_request(),
        Err(RollupError::SignatureCount { got: 0, .. })
    ));
    assert_eq!(window.add(3, &sign(&keys[3], &DIGEST)), Ok(true));
    assert_eq!(window.window(), 7);

    let (request, statement) = window.into_request().unwrap();
    assert_eq!(request.window, 7);
    assert_eq!(statement.digest, DIGEST);
    assert_eq!(statement.h_x, commitment(&validators));
}

#[test]
fn collector_waits_for_the_stake_not_just_the_count() {
    // τ = 2 of stakes 10, 1, 1, 1 (total 13): no two small validators are a quorum, the big
    // one and any other are (11 of 13).
    let (shape, validators, keys) = validator_set(&[10, 1, 1, 1], 2);
    let mut window = WindowCollector::new(shape, validators, 1, DIGEST).unwrap();
    for (i, key) in keys.iter().enumerate().skip(1) {
        assert_eq!(window.add(i, &sign(key, &DIGEST)), Ok(false));
    }
    assert_eq!(window.add(0, &sign(&keys[0], &DIGEST)), Ok(true));
    assert!(window.into_request().is_ok());
}

#[test]
fn collector_refuses_a_set_of_the_wrong_size() {
    let (shape, validators, _) = validator_set(&[1, 1], 1);
    let wrong = Shape {
        validators: 3,
        ..shape
    };
    assert!(matches!(
        WindowCollector::new(wrong, validators, 0, DIGEST),
        Err(RollupError::ValidatorCount {
            got: 2,
            expected: 3
        })
    ));
}

/// A circuit whose synthesis waits until the test releases it, so the test knows which window
/// the prover is busy with.
struct Gated {
    circuit: SquaringChain,
    release: std_mpsc::Receiver<()>,
}

impl ConstraintSynthesizer<Fr> for Gated {
    fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        self.release
            .recv_timeout(Duration::from_secs(60))
            .map_err(|_| SynthesisError::AssignmentMissing)?;
        self.circuit.generate_constraints(cs)
    }
}

const CHAIN: usize = 2000;

fn gated(circuit: SquaringChain, window: u64) -> (ProofRequest<Gated>, std_mpsc::Sender<()>) {
    let (release, gate) = std_mpsc::channel();
    (
        ProofRequest {
            window,
            circuit: Gated {
                circuit,
                release: gate,
            },
        },
        release,
    )
}

fn wait_until_proving(prover: &AsyncProver<Gated>, window: u64) {
    let start = Instant::now();
    while prover.proving() != Some(window) {
        assert!(start.elapsed() < Duration::from_secs(60), "never started");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn verified(vk: &VerifyingKey, circuit: &SquaringChain, outcome: ProofOutcome) -> u64 {
    let (proof, _) = outcome.result.expect("proved");
    let proof = Proof::from_ark(&proof).unwrap();
    vk.verify(&circuit.inputs.unwrap(), &proof)
        .expect("the node's verifier accepts the proof");
    outcome.window
}

#[test]
fn async_prover_proves_the_newest_window_and_drops_the_superseded_one() {
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let (pk, vk) =
        Groth16::<Bls12_381>::circuit_specific_setup(SquaringChain::blank(CHAIN), &mut rng)
            .unwrap();
    let vk = VerifyingKey::new(vk).unwrap();
    let (results_tx, mut results) = mpsc::channel(4);
    let prover = AsyncProver::start(Arc::new(pk), Arc::new(CpuBackend), results_tx).unwrap();

    let statements: Vec<SquaringChain> = (0..4)
        .map(|_| SquaringChain::random(CHAIN, &mut rng))
        .collect();
    let (first, release_1) = gated(statements[1].clone(), 1);
    assert_eq!(prover.submit(first), Submitted::Queued);
    wait_until_proving(&prover, 1);

    let (second, _never_released) = gated(statements[2].clone(), 2);
    assert_eq!(prover.submit(second), Submitted::Queued);
    let (third, release_3) = gated(statements[3].clone(), 3);
    assert_eq!(prover.submit(third), Submitted::Replaced(2));
    let (again, _) = gated(statements[3].clone(), 3);
    assert_eq!(prover.submit(again), Submitted::Stale);
    let (older, _) = gated(statements[0].clone(), 1);
    assert_eq!(prover.submit(older), Submitted::Stale);

    release_1.send(()).unwrap();
    release_3.send(()).unwrap();
    let outcome = results.blocking_recv().unwrap();
    assert_eq!(verified(&vk, &statements[1], outcome), 1);
    let outcome = results.blocking_recv().unwrap();
    assert_eq!(verified(&vk, &statements[3], outcome), 3);

    // A request that cannot be synthesized comes back as an error, and the thread goes on.
    let (unassigned, release) = gated(SquaringChain::blank(CHAIN), 4);
    assert_eq!(prover.submit(unassigned), Submitted::Queued);
    release.send(()).unwrap();
    let outcome = results.blocking_recv().unwrap();
    assert_eq!(outcome.window, 4);
    assert!(matches!(outcome.result, Err(ProverError::Groth16(_))));

    // Dropping the prover stops the thread, which closes the channel.
    drop(prover);
    assert!(results.blocking_recv().is_none());
}
