//! Groth16 lane benchmarks (issue 6, verifier): `quasar_lanes::groth16` against ark-groth16 on the
//! same proof, with the ratios the issue sets as targets measured in the same run.
//!
//! Run: `cargo bench -p quasar-bench --bench groth16`. The statement is a small circuit with the
//! rollup's public-input shape (3 inputs, `quasar_crypto::rollup::test_circuit::SquaringChain`):
//! public `x0, x1, x2`, witness `w`, `x0·x1 + x2 = w²` plus 300 squarings (verification cost does not depend on the circuit size, only on the input count).
//! Criterion groups (reports under `target/criterion/`):
//!
//! - `groth16_verify/{ours,ark_processed_vk}`: one decoded proof, 3 decoded inputs, through
//!   `VerifyingKey::verify` and through `ark_groth16::Groth16::verify_with_processed_vk` with a
//!   `PreparedVerifyingKey` built once.
//! - `groth16_decode/{proof,ark_proof}`: the 192-byte proof to a checked value (three subgroup
//!   checks), ours and arkworks' validated `deserialize_compressed`.
//! - `groth16_fold/{table,msm,ark_prepare_inputs}`: the public-input fold `L = K_0 + Σ x_i·K_i`
//!   alone, with our fixed-base tables, with one arkworks `VariableBaseMSM`, and with
//!   `Groth16::prepare_inputs` (one variable-base multiplication per input).
//! - `groth16_batch64/{batch,one_by_one,one_by_one_all_cores}`: 64 proofs of 64 statements
//!   through `verify_batch`, one `verify` after another, and one `verify` after another split over
//!   all cores.
//!
//! - `groth16_prove/{ours_cpu_backend,ark}`: one proof of the same circuit with
//!   [`PROVE_CHAIN`] squarings (2^16 constraints, a 2^17-point QAP domain) through our prover
//!   (`rollup::prover::create_proof`, FFTs and MSMs through the batched-arithmetic trait on
//!   `CpuBackend`) and through `ark_groth16::Groth16::create_proof_with_reduction`, with the same
//!   randomizers (so the same proof).
//!
//! Then a summary step times the workloads behind the ratios again, each ratio from its
//! two workloads timed back to back in one round (so that load from other processes falls on both
//! alike), and prints the medians over the rounds as a table and as JSON in
//! `target/criterion/groth16-summary.json`. To run only the summary, pass a filter that matches no
//! group: `cargo bench -p quasar-bench --bench groth16 -- summary-only`.

use ark_bls12_381::{Bls12_381, Fr, G1Projective};
use ark_ec::VariableBaseMSM;
use ark_ff::UniformRand;
use ark_groth16::Groth16;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_snark::SNARK;
use criterion::{Criterion, SamplingMode};
use quasar_bench::summary::{report, run_with_summary, time, Samples, Target};
use quasar_crypto::accel::CpuBackend;
use quasar_crypto::rollup::prover::{create_proof, ProvingKey};
use quasar_crypto::rollup::test_circuit::SquaringChain;
use quasar_lanes::groth16::{Proof, VerifyingKey};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// Proofs in the batch benchmark.
const BATCH: usize = 64;
/// Squarings of the witness in the verifier benchmarks' circuit.
const CHAIN: usize = 300;
/// Squarings in the prover benchmark's circuit: with the 2 other constraints, 2^16.
const PROVE_CHAIN: usize = (1 << 16) - 2;

/// Everything the benchmarks verify, built once.
struct Fixture {
    vk: VerifyingKey,
    pvk: ark_groth16::PreparedVerifyingKey<Bls12_381>,
    /// [`BATCH`] statements and their proofs; the single-proof benchmarks use the first.
    inputs: Vec<[Fr; 3]>,
    proofs: Vec<Proof>,
    ark_proof: ark_groth16::Proof<Bls12_381>,
    proof_bytes: Vec<u8>,
}

impl Fixture {
    fn new() -> Fixture {
        let mut rng = ChaCha20Rng::seed_from_u64(6);
        let blank = SquaringChain::blank(CHAIN);
        let (pk, ark_vk) =
            Groth16::<Bls12_381>::circuit_specific_setup(blank, &mut rng).expect("setup");
        let mut inputs = Vec::new();
        let mut proofs = Vec::new();
        for _ in 0..BATCH {
            let circuit = SquaringChain::random(CHAIN, &mut rng);
            inputs.push(circuit.inputs.expect("assigned"));
            let proof = Groth16::<Bls12_381>::prove(&pk, circuit, &mut rng).expect("prove");
            proofs.push(proof);
        }
        let mut proof_bytes = Vec::new();
        proofs[0]
            .serialize_compressed(&mut proof_bytes)
            .expect("serializes");
        let mut vk_bytes = Vec::new();
        ark_vk
            .serialize_compressed(&mut vk_bytes)
            .expect("serializes");
        Fixture {
            vk: VerifyingKey::from_bytes(&vk_bytes).expect("valid key"),
            pvk: ark_groth16::prepare_verifying_key(&ark_vk),
            inputs,
            ark_proof: proofs[0].clone(),
            proofs: proofs
                .iter()
                .map(|p| Proof::from_ark(p).expect("valid proof"))
                .collect(),
            proof_bytes,
        }
    }

    fn ours(&self) {
        self.vk
            .verify(&self.inputs[0], &self.proofs[0])
            .expect("verifies");
    }

    fn ark(&self) {
        let ok = Groth16::<Bls12_381>::verify_with_processed_vk(
            &self.pvk,
            &self.inputs[0],
            &self.ark_proof,
        )
        .expect("runs");
        assert!(ok);
    }

    fn decode(&self) -> Proof {
        Proof::from_bytes(&self.proof_bytes).expect("valid proof")
    }

    fn ark_decode(&self) -> ark_groth16::Proof<Bls12_381> {
        ark_groth16::Proof::deserialize_compressed(self.proof_bytes.as_slice()).expect("valid")
    }

    fn fold_table(&self) -> G1Projective {
        self.vk.prepare_inputs(&self.inputs[0]).expect("3 inputs")
    }

    fn fold_msm(&self) -> G1Projective {
        let bases = &self.vk.as_ark().gamma_abc_g1;
        G1Projective::msm_unchecked(&bases[1..], &self.inputs[0]) + bases[0]
    }

    fn fold_ark(&self) -> G1Projective {
        Groth16::<Bls12_381>::prepare_inputs(&self.pvk, &self.inputs[0]).expect("runs")
    }

    fn items(&self) -> Vec<(&[Fr], &Proof)> {
        self.inputs
            .iter()
            .zip(&self.proofs)
            .map(|(x, p)| (x.as_slice(), p))
            .collect()
    }
}

/// The prover benchmark's key and statement, built once.
struct ProveFixture {
    pk: ProvingKey,
    circuit: SquaringChain,
    r: Fr,
    s: Fr,
}

impl ProveFixture {
    fn new() -> ProveFixture {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let circuit = SquaringChain::random(PROVE_CHAIN, &mut rng);
        let (pk, _) = Groth16::<Bls12_381>::circuit_specific_setup(
            SquaringChain::blank(PROVE_CHAIN),
            &mut rng,
        )
        .expect("setup");
        let (r, s) = (Fr::rand(&mut rng), Fr::rand(&mut rng));
        let fixture = ProveFixture { pk, circuit, r, s };
        assert_eq!(
            fixture.ours(),
            fixture.ark(),
            "same randomizers, same proof"
        );
        fixture
    }

    fn ours(&self) -> ark_groth16::Proof<Bls12_381> {
        create_proof(&self.pk, self.circuit.clone(), self.r, self.s, &CpuBackend)
            .expect("prove")
            .0
    }

    fn ark(&self) -> ark_groth16::Proof<Bls12_381> {
        Groth16::<Bls12_381>::create_proof_with_reduction(
            self.circuit.clone(),
            &self.pk,
            self.r,
            self.s,
        )
        .expect("prove")
    }
}

fn batch(vk: &VerifyingKey, items: &[(&[Fr], &Proof)], rng: &mut ChaCha20Rng) {
    assert!(vk.verify_batch(items, rng).iter().all(Result::is_ok));
}

fn one_by_one(vk: &VerifyingKey, items: &[(&[Fr], &Proof)]) {
    for (inputs, proof) in items {
        vk.verify(inputs, proof).expect("verifies");
    }
}

/// One `verify` after another, the items split evenly over all cores.
fn one_by_one_all_cores(vk: &VerifyingKey, items: &[(&[Fr], &Proof)]) {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|scope| {
        for part in items.chunks(items.len().div_ceil(threads)) {
            scope.spawn(move || one_by_one(vk, part));
        }
    })
}

fn bench_groth16(c: &mut Criterion, f: &Fixture, p: &ProveFixture) {
    let mut g = c.benchmark_group("groth16_verify");
    g.bench_function("ours", |b| b.iter(|| f.ours()));
    g.bench_function("ark_processed_vk", |b| b.iter(|| f.ark()));
    g.finish();

    let mut g = c.benchmark_group("groth16_decode");
    g.bench_function("proof", |b| b.iter(|| f.decode()));
    g.bench_function("ark_proof", |b| b.iter(|| f.ark_decode()));
    g.finish();

    let mut g = c.benchmark_group("groth16_fold");
    g.bench_function("table", |b| b.iter(|| f.fold_table()));
    g.bench_function("msm", |b| b.iter(|| f.fold_msm()));
    g.bench_function("ark_prepare_inputs", |b| b.iter(|| f.fold_ark()));
    g.finish();

    let items = f.items();
    let mut rng = ChaCha20Rng::seed_from_u64(64);
    let mut g = c.benchmark_group("groth16_batch64");
    g.sampling_mode(SamplingMode::Flat);
    g.bench_function("batch", |b| b.iter(|| batch(&f.vk, &items, &mut rng)));
    g.bench_function("one_by_one", |b| b.iter(|| one_by_one(&f.vk, &items)));
    g.bench_function("one_by_one_all_cores", |b| {
        b.iter(|| one_by_one_all_cores(&f.vk, &items))
    });
    g.finish();

    let mut g = c.benchmark_group("groth16_prove");
    g.sampling_mode(SamplingMode::Flat);
    g.sample_size(10);
    g.bench_function("ours_cpu_backend", |b| b.iter(|| p.ours()));
    g.bench_function("ark", |b| b.iter(|| p.ark()));
    g.finish();
}

/// The reported ratios with the targets: (ratio, target, true when the ratio must be at
/// most the target). Rows without a target are context: the decode and fold ratios, and the batch
/// against one-by-one verification given the same cores (the algorithmic gain alone).
const TARGETS: [Target; 6] = [
    ("ours / ark verify_with_processed_vk", Some(0.8), true),
    (
        "one by one / batch, 64 proofs (per-proof speedup)",
        Some(3.0),
        false,
    ),
    ("one by one on all cores / batch, 64 proofs", None, false),
    ("ours / ark proof decode", None, true),
    ("table / ark prepare_inputs, 3 inputs", None, true),
    (
        "ours (CpuBackend) / ark prove, 2^16 constraints",
        None,
        true,
    ),
];

/// Times the workloads behind the ratios, each ratio from its two workloads timed back to
/// back in one round, and prints and writes the medians over the rounds.
fn summary(f: &Fixture, p: &ProveFixture) {
    let items = f.items();
    let mut rng = ChaCha20Rng::seed_from_u64(65);
    let (mut us, mut ratios) = (Samples::default(), Samples::default());
    for _ in 0..40 {
        let ours = time(10, || f.ours());
        let ark = time(10, || f.ark());
        us.push("verify, ours", ours * 1e6);
        us.push("verify, ark verify_with_processed_vk", ark * 1e6);
        ratios.push(TARGETS[0].0, ours / ark);
        let decode = time(10, || f.decode());
        let ark_decode = time(10, || f.ark_decode());
        us.push("proof decode, ours", decode * 1e6);
        us.push("proof decode, ark", ark_decode * 1e6);
        ratios.push(TARGETS[3].0, decode / ark_decode);
        let table = time(20, || f.fold_table());
        let msm = time(20, || f.fold_msm());
        let ark_fold = time(20, || f.fold_ark());
        us.push("input fold, table", table * 1e6);
        us.push("input fold, VariableBaseMSM", msm * 1e6);
        us.push("input fold, ark prepare_inputs", ark_fold * 1e6);
        ratios.push(TARGETS[4].0, table / ark_fold);
    }
    for _ in 0..9 {
        let batched = time(1, || batch(&f.vk, &items, &mut rng));
        let serial = time(1, || one_by_one(&f.vk, &items));
        let all_cores = time(1, || one_by_one_all_cores(&f.vk, &items));
        us.push("batch of 64, per proof", batched * 1e6 / BATCH as f64);
        us.push("one by one, per proof", serial * 1e6 / BATCH as f64);
        us.push(
            "one by one on all cores, per proof",
            all_cores * 1e6 / BATCH as f64,
        );
        ratios.push(TARGETS[1].0, serial / batched);
        ratios.push(TARGETS[2].0, all_cores / batched);
    }

    for _ in 0..5 {
        let ours = time(1, || p.ours());
        let ark = time(1, || p.ark());
        us.push("prove 2^16 constraints, ours (CpuBackend)", ours * 1e6);
        us.push("prove 2^16 constraints, ark", ark * 1e6);
        ratios.push(TARGETS[5].0, ours / ark);
    }

    report(
        "Groth16",
        ("µs", "us", 1),
        &us,
        &ratios,
        &TARGETS,
        "groth16-summary.json",
    );
}

fn main() {
    let f = Fixture::new();
    let p = ProveFixture::new();
    run_with_summary(|c| bench_groth16(c, &f, &p), || summary(&f, &p));
}
