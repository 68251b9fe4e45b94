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
use quasar_crypto::rollup::prover::{write_proving_key, ProverError};
use quasar_crypto::rollup::test_circuit::SquaringChain;
use quasar_lanes::cert::RollupKey;
use quasar_lanes::groth16::{Proof, VerifyingKey};
use quasar_node::rollup_job::{
    AsyncProver, CollectError, ProofOutcome, ProofRequest, ProverEvent, ProverSetupError,
    RollupSet, Submitted, WindowCollector, WindowProver,
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

// --- WindowProver: the proving key a validator is configured with -------------------------

/// A proving key file for `shape` holding a real Groth16 key (of the small test circuit, whose
/// statement has the rollup's three public inputs), and the rollup set of `validators` with that
/// key's verifying key.
fn key_file(
    dir: &std::path::Path,
    shape: &Shape,
    seed: u64,
    validators: &Arc<[Validator]>,
) -> (std::path::PathBuf, RollupSet) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let (pk, vk) = SquaringChain::setup(CHAIN, &mut rng).unwrap();
    let path = dir.join(format!("rollup-{seed}.pk"));
    write_proving_key(shape, &pk, std::fs::File::create(&path).unwrap()).unwrap();
    let key = RollupKey {
        verifying_key: VerifyingKey::new(vk).unwrap(),
        h_x: commitment(validators),
    };
    let set = RollupSet {
        validators: Arc::clone(validators),
        key,
    };
    (path, set)
}

/// Polls `prover` until it reports something about its key (the loader runs on its thread).
fn key_news(prover: &mut WindowProver) -> ProverEvent {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(event) = prover.poll().into_iter().next() {
            return event;
        }
        assert!(Instant::now() < deadline, "the key loader never answered");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn window_prover_refuses_a_key_it_cannot_read_or_of_another_shape() {
    let dir = tempfile::tempdir().unwrap();
    let (shape, validators, _) = validator_set(&[1, 1, 1, 1], 3);
    let (path, vk) = key_file(dir.path(), &shape, 1, &validators);
    let start = |path: &std::path::Path| WindowProver::start(path, &vk, Arc::new(CpuBackend));
    assert!(matches!(
        start(&dir.path().join("absent.pk")),
        Err(ProverSetupError::Key { .. })
    ));
    let junk = dir.path().join("junk.pk");
    std::fs::write(&junk, [7u8; 64]).unwrap();
    assert!(matches!(start(&junk), Err(ProverSetupError::Key { .. })));
    // Keys for another n, an impossible τ, or another parameter set, are refused from the header
    // alone.
    for other in [
        Shape {
            validators: 5,
            ..shape
        },
        Shape { slots: 0, ..shape },
        Shape { slots: 5, ..shape },
        Shape {
            params: quasar_crypto::rollup::native::ML_DSA_44,
            ..shape
        },
    ] {
        let (other_path, _) = key_file(dir.path(), &other, 2, &validators);
        let error = start(&other_path).err().expect("a key of another shape");
        assert!(matches!(error, ProverSetupError::Shape { .. }), "{error}");
    }
    assert!(start(&path).is_ok());
}

#[test]
fn window_prover_refuses_the_key_of_another_setup_and_stops_collecting() {
    let dir = tempfile::tempdir().unwrap();
    let (shape, validators, keys) = validator_set(&[1, 1, 1, 1], 3);
    let (path, _) = key_file(dir.path(), &shape, 1, &validators);
    let (_, genesis_vk) = key_file(dir.path(), &shape, 2, &validators);
    let mut prover = WindowProver::start(&path, &genesis_vk, Arc::new(CpuBackend)).unwrap();
    // Signatures are collected while the key loads.
    prover.open(16, DIGEST, &genesis_vk);
    assert!(prover.is_open(16));
    assert!(matches!(
        prover.add(16, 1, &sign(&keys[0], &DIGEST)),
        Err(CollectError::Rejected(RollupError::BadSignature(1)))
    ));
    prover.add(16, 0, &sign(&keys[0], &DIGEST)).unwrap();
    match key_news(&mut prover) {
        ProverEvent::KeyRefused(reason) => assert!(reason.contains("another setup"), "{reason}"),
        other => panic!("expected the key refused, got {other:?}"),
    }
    assert!(!prover.is_active());
    assert!(!prover.is_open(16));
    prover.open(32, DIGEST, &genesis_vk);
    assert!(!prover.is_open(32));
    // Signatures for windows it no longer collects are ignored, not blamed on the sender.
    prover.add(32, 0, &sign(&keys[0], &DIGEST)).unwrap();
}

#[test]
fn window_prover_starts_proving_with_the_genesis_key_and_keeps_collecting() {
    let dir = tempfile::tempdir().unwrap();
    let (shape, validators, keys) = validator_set(&[1, 1, 1, 1], 3);
    let (path, vk) = key_file(dir.path(), &shape, 1, &validators);
    let mut prover = WindowProver::start(&path, &vk, Arc::new(CpuBackend)).unwrap();
    prover.open(16, DIGEST, &vk);
    prover.add(16, 2, &sign(&keys[2], &DIGEST)).unwrap();
    assert!(matches!(key_news(&mut prover), ProverEvent::Ready));
    assert!(prover.is_active());
    // Two of the three signatures τ = 3 needs: still collecting, nothing sent to the prover.
    prover.add(16, 3, &sign(&keys[3], &DIGEST)).unwrap();
    assert!(prover.is_open(16));
    assert_eq!(
        prover.add(16, 3, &sign(&keys[3], &DIGEST)),
        Err(CollectError::Duplicate(3))
    );
    prover.retain(|w| w != 16);
    assert!(!prover.is_open(16));
    assert!(prover.poll().is_empty());
}

/// One proving key serves every validator set of its shape and verifying key: a later set's
/// window collects that set's signatures (by index in that set) and refuses the earlier set's.
#[test]
fn window_prover_collects_each_window_for_its_own_validator_set() {
    let dir = tempfile::tempdir().unwrap();
    let (shape, validators, keys) = validator_set(&[1, 1, 1, 1], 3);
    let (path, first) = key_file(dir.path(), &shape, 1, &validators);
    let mut prover = WindowProver::start(&path, &first, Arc::new(CpuBackend)).unwrap();
    // The later set: validators 1..4 of the first, then a newcomer.
    let later_keys: Vec<SecretKey<MlDsa65>> = [2u8, 3, 4, 9]
        .iter()
        .map(|&seed| SecretKey::from_seed(&[seed; 32]))
        .collect();
    let later_validators: Arc<[Validator]> = later_keys
        .iter()
        .map(|sk| Validator {
            key: ExpandedKey::from_public_key(&ML_DSA_65, sk.public_key().as_bytes()).unwrap(),
            stake: 1,
        })
        .collect();
    let later = RollupSet {
        validators: Arc::clone(&later_validators),
        key: RollupKey {
            verifying_key: first.key.verifying_key.clone(),
            h_x: commitment(&later_validators),
        },
    };
    assert!(prover.serves(&first) && prover.serves(&later));
    // Another setup's key, or another set size, is not served.
    let (_, other_setup) = key_file(dir.path(), &shape, 2, &validators);
    assert!(!prover.serves(&other_setup));
    let (_, three, _) = validator_set(&[1, 1, 1], 2);
    let smaller = RollupSet {
        validators: three,
        key: first.key.clone(),
    };
    assert!(!prover.serves(&smaller));

    prover.open(16, DIGEST, &first);
    prover.open(32, DIGEST, &later);
    // Index 3 is keys[3] in the first set, the newcomer in the later one.
    prover.add(16, 3, &sign(&keys[3], &DIGEST)).unwrap();
    assert!(matches!(
        prover.add(32, 3, &sign(&keys[3], &DIGEST)),
        Err(CollectError::Rejected(RollupError::BadSignature(3)))
    ));
    prover.add(32, 3, &sign(&later_keys[3], &DIGEST)).unwrap();
    prover.add(32, 0, &sign(&keys[1], &DIGEST)).unwrap();
    assert!(prover.is_open(16) && prover.is_open(32));
}
