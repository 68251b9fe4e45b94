//! `quasar-bench lanes`: what each certificate lane costs on this machine, each against a
//! baseline timed in the same rounds (module docs of [`crate::measure`]).
//!
//! | lane | measured | baseline |
//! |---|---|---|
//! | BLS | same-message aggregate of n signers from the validator-set table (`lanes::bls::verify_aggregate`) | the n signatures decoded and verified one by one |
//! | ML-DSA-65 | verify (libcrux, FIPS 204) | fips204 crate verify |
//! | Corona | 3-of-4 signing: round 1 and round 2 of the three signers, combine (which verifies), verify | ML-DSA-65 sign / verify |
//! | Groth16 | verify (`lanes::groth16`); prove a `SquaringChain` of 2^k constraints (our prover on the SIMD CPU backend) | ark-groth16 verify with a processed key; ark-groth16 prove, same randomizers |
//! | Pulsar | 3-of-4 signing (the node's committee shape), whole sessions in process | ML-DSA-65 sign |
//! | Magnetar | one SLH-DSA-SHAKE-192f verify (fips205) | RustCrypto slh-dsa verify |
//!
//! With a GPU (feature `cuda` and a device), Corona verify and Groth16 prove also run on the
//! QuasarGPU adapter, in a GPU column; the other lanes have no GPU path.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

use ark_bls12_381::{Bls12_381, Fr};
use ark_ff::UniformRand;
use ark_groth16::Groth16;
use ark_serialize::CanonicalSerialize;
use ark_snark::SNARK;
use quasar_crypto::accel::BatchArithmetic;
use quasar_crypto::bls::{PublicKey, Signature};
use quasar_crypto::corona;
use quasar_crypto::magnetar::{self, ParameterSet};
use quasar_crypto::mldsa::{self, MlDsa65};

use quasar_crypto::rollup::prover::create_proof;
use quasar_crypto::rollup::test_circuit::SquaringChain;
use quasar_lanes::bls::{bitmap_from_signers, verify_aggregate};
use quasar_lanes::groth16::{Proof, VerifyingKey};
use quasar_lanes::ValidatorSet;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use super::{distinct, BenchError, Common, Gpu};
use crate::fixtures::{session_id, BlsSigners, PulsarCommittee};
use crate::measure::{timed, Rounds, Series};
use crate::report::{ms, ratio, Plot, Ratio, Record, Report, Table};

/// The message every lane signs.
const MESSAGE: &[u8] = b"quasar-bench lanes: a 32-byte round digest";
/// The context of ML-DSA and SLH-DSA signatures.
const CONTEXT: &[u8] = b"quasar-bench";

/// `lanes` options.
#[derive(Clone, Debug, clap::Args)]
pub struct Options {
    /// Signer counts of the BLS aggregate rows (default 21,100; smoke 4).
    #[arg(long, value_delimiter = ',')]
    pub bls_sizes: Option<Vec<usize>>,
    /// log2 of the Groth16 prover's constraint count (default 14; smoke 6; the ML-DSA rollup of
    /// 21 signatures is about 2^24).
    #[arg(long, value_parser = clap::value_parser!(u32).range(3..=22))]
    pub prove_log: Option<u32>,
}

/// A row of the lanes table: a series, its GPU twin, its baseline.
struct Row {
    lane: &'static str,
    operation: String,
    cpu: usize,
    gpu: Option<usize>,
    baseline: Option<(String, usize)>,
}

/// Runs the lanes bench.
pub fn run(options: &Options, common: &Common, gpu: &Gpu) -> Result<Report, BenchError> {
    let bls_sizes = options.bls_sizes.clone().unwrap_or_else(|| {
        if common.smoke {
            vec![4]
        } else {
            vec![21, 100]
        }
    });
    let bls_sizes = distinct(bls_sizes);
    if bls_sizes.iter().any(|&n| n == 0 || n > 10_000) {
        return Err(BenchError::Options(
            "BLS sizes must be between 1 and 10000".into(),
        ));
    }
    let prove_log = options
        .prove_log
        .unwrap_or(if common.smoke { 6 } else { 14 });
    let rounds = common.rounds(11);
    let mut rng = ChaCha20Rng::seed_from_u64(11);

    eprintln!("lanes: building fixtures (keys, signatures, a Groth16 setup of 2^{prove_log})");
    let bls: Vec<BlsCase> = bls_sizes
        .iter()
        .map(|&n| BlsCase::new(n))
        .collect::<Result<_, _>>()?;
    let mldsa = MlDsaCase::new()?;
    let corona = CoronaCase::new(&mut rng)?;
    let mut pulsar = PulsarCommittee::deal(3, 4, &mut rng, 13)?;
    let groth16 = Groth16Case::new(prove_log, &mut rng)?;
    let slh = SlhCase::new()?;

    let cpu_backend: Arc<dyn BatchArithmetic> = Arc::new(quasar_gpu::SimdCpuBackend::new());
    let mut r = Rounds::new(Duration::from_millis(if common.smoke { 2 } else { 20 }));
    let mut rows: Vec<Row> = Vec::new();
    for case in &bls {
        let g = format!("bls n={}", case.n);
        let agg = r.add(&g, "aggregate verify (table keys)", || case.aggregate());
        let flat = r.add(&g, "flat: each signature verified", || case.flat());
        rows.push(Row {
            lane: "BLS",
            operation: format!("aggregate verify, n = {}", case.n),
            cpu: agg,
            gpu: None,
            baseline: Some((format!("{} signatures one by one", case.n), flat)),
        });
    }
    let mldsa_verify = r.add("ml-dsa-65", "verify (libcrux)", || mldsa.verify());
    let fips204_verify = r.add("ml-dsa-65", "verify (fips204 crate)", || {
        mldsa.verify_fips204()
    });
    let mldsa_sign = r.add("ml-dsa-65", "sign (libcrux)", || mldsa.sign());
    rows.push(Row {
        lane: "ML-DSA-65",
        operation: "verify".into(),
        cpu: mldsa_verify,
        gpu: None,
        baseline: Some(("fips204 crate verify".into(), fips204_verify)),
    });
    let corona_phases = r.add_phased(
        "corona 3-of-4",
        &[
            "round 1 (3 signers)",
            "round 2 (3 signers)",
            "combine",
            "sign total",
        ],
        || corona.sign(),
    );
    let corona_verify = r.add("corona 3-of-4", "verify", || {
        corona.verify(&quasar_crypto::accel::CpuBackend)
    });
    let corona_gpu = gpu.backend.as_ref().map(|backend| {
        let backend = backend.clone();
        let corona = &corona;
        r.add("corona 3-of-4", "verify (GPU)", move || {
            corona.verify(backend.as_ref())
        })
    });
    for (i, what) in [
        "round 1, 3 signers",
        "round 2, 3 signers",
        "combine (verifies)",
        "sign, rounds + combine",
    ]
    .iter()
    .enumerate()
    {
        rows.push(Row {
            lane: "Corona",
            operation: what.to_string(),
            cpu: corona_phases + i,
            gpu: None,
            baseline: (i == 3).then(|| ("ML-DSA-65 sign".to_string(), mldsa_sign)),
        });
    }
    rows.push(Row {
        lane: "Corona",
        operation: "verify".into(),
        cpu: corona_verify,
        gpu: corona_gpu,
        baseline: Some(("ML-DSA-65 verify".into(), mldsa_verify)),
    });
    let g16_verify = r.add("groth16", "verify", || groth16.verify());
    let ark_verify = r.add("groth16", "verify (ark-groth16)", || groth16.verify_ark());
    let g16_prove = r.add("groth16", "prove (SIMD CPU backend)", || {
        groth16.prove(cpu_backend.as_ref())
    });
    let g16_prove_gpu = gpu.backend.as_ref().map(|backend| {
        let backend = backend.clone();
        let groth16 = &groth16;
        r.add("groth16", "prove (GPU)", move || {
            groth16.prove(backend.as_ref())
        })
    });
    let ark_prove = r.add("groth16", "prove (ark-groth16)", || groth16.prove_ark());
    rows.push(Row {
        lane: "Groth16",
        operation: "verify (3 public inputs)".into(),
        cpu: g16_verify,
        gpu: None,
        baseline: Some(("ark-groth16 verify, processed key".into(), ark_verify)),
    });
    rows.push(Row {
        lane: "Groth16",
        operation: format!("prove, 2^{prove_log} constraints"),
        cpu: g16_prove,
        gpu: g16_prove_gpu,
        baseline: Some(("ark-groth16 prove".into(), ark_prove)),
    });
    let pulsar_sign = r.add("pulsar 3-of-4", "sign (whole sessions)", || {
        pulsar.sign(MESSAGE, CONTEXT)
    });
    rows.push(Row {
        lane: "Pulsar",
        operation: "sign, 3 of 4".into(),
        cpu: pulsar_sign,
        gpu: None,
        baseline: Some(("ML-DSA-65 sign".into(), mldsa_sign)),
    });
    let slh_verify = r.add("magnetar", "verify SLH-DSA-SHAKE-192f (fips205)", || {
        slh.verify()
    });
    let slh_baseline = r.add("magnetar", "verify (RustCrypto slh-dsa)", || {
        slh.verify_rustcrypto()
    });
    rows.push(Row {
        lane: "Magnetar",
        operation: "verify, SLH-DSA-SHAKE-192f".into(),
        cpu: slh_verify,
        gpu: None,
        baseline: Some(("RustCrypto slh-dsa verify".into(), slh_baseline)),
    });

    eprintln!("lanes: {rounds} rounds");
    let series = r.run(rounds);
    Ok(report(
        &series, &rows, common, gpu, prove_log, &bls_sizes, &pulsar, rounds,
    ))
}

#[allow(clippy::too_many_arguments)]
fn report(
    series: &[Series],
    rows: &[Row],
    common: &Common,
    gpu: &Gpu,
    prove_log: u32,
    bls_sizes: &[usize],
    pulsar: &PulsarCommittee,
    rounds: usize,
) -> Report {
    let mut table = Table::new(
        format!("Lane costs (median ms over {rounds} rounds; ratios are per-round medians)"),
        &[
            "lane",
            "operation",
            "CPU p50",
            "CPU p95",
            "GPU p50",
            "baseline",
            "baseline p50",
            "ours / baseline",
        ],
    );
    let mut ratios = Vec::new();
    let record = |i: usize| Record::from_series(&series[i]);
    for row in rows {
        let cpu = record(row.cpu);
        let gpu_cell = match row.gpu {
            Some(i) => ms(record(i).p50),
            None if gpu.name.is_some() => "no GPU path".into(),
            None => "-".into(),
        };
        let (baseline, baseline_p50, value) = match &row.baseline {
            Some((name, i)) => {
                let ratio_name = format!("{} {} / {}", row.lane, row.operation, name);
                let rt = Ratio::paired(&ratio_name, &series[row.cpu], &series[*i]);
                let value = rt.value;
                ratios.push(rt);
                (name.clone(), ms(record(*i).p50), ratio(value))
            }
            None => ("-".into(), "-".into(), "-".into()),
        };
        table.row(vec![
            row.lane.into(),
            row.operation.clone(),
            ms(cpu.p50),
            ms(cpu.p95),
            gpu_cell,
            baseline,
            baseline_p50,
            value,
        ]);
    }
    let records: Vec<Record> = series.iter().map(Record::from_series).collect();
    let bars = records
        .iter()
        .map(|r| (format!("{}: {}", r.group, r.name), r.p50, r.p95))
        .collect();
    let mut notes = vec![
        "BLS rows verify an aggregate of all n signers (equal stakes) against the set's \
         precomputed key table; the baseline decodes (subgroup check) and verifies each \
         signature on its own, as a node without aggregation would."
            .to_string(),
        format!(
            "Pulsar signs whole sessions in one process (every party's three rounds and the \
             combine); sessions restart on rejection: {:.2} sessions per signature on average \
             here.",
            pulsar.sessions_per_signature()
        ),
        format!(
            "Groth16 proves the SquaringChain test circuit (2^{prove_log} constraints, the \
             rollup's three public inputs); the ML-DSA rollup itself is about 2^24 constraints \
             and takes minutes (README, \"The ML-DSA rollup\")."
        ),
    ];
    notes.push(match &gpu.name {
        Some(name) => format!("GPU column: {name} through the QuasarGPU adapter."),
        None => "No GPU on this machine: the GPU column is empty (build with `--features cuda` \
                 on a CUDA host to fill it)."
            .into(),
    });
    Report {
        subcommand: "lanes".into(),
        title: "Lane costs".into(),
        smoke: common.smoke,
        settings: serde_json::json!({
            "bls_sizes": bls_sizes,
            "prove_log": prove_log,
            "rounds": rounds,
            "corona": "3-of-4",
            "pulsar": "3-of-4",
            "magnetar": "SLH-DSA-SHAKE-192f",
        }),
        tables: vec![table],
        records,
        ratios,
        notes,
        plot: Plot::Bars {
            axis: "milliseconds".into(),
            whisker: "p95".into(),
            bars,
        },
    }
}

/// A BLS validator set of `n` equal stakes, all signing [`MESSAGE`].
struct BlsCase {
    n: usize,
    set: ValidatorSet,
    bitmap: Vec<u8>,
    aggregate: [u8; 96],
    keys: Vec<PublicKey>,
    signatures: Vec<[u8; 96]>,
}

impl BlsCase {
    fn new(n: usize) -> Result<BlsCase, BenchError> {
        let signers = BlsSigners::new(n, 0x42, MESSAGE)?;
        Ok(BlsCase {
            n,
            bitmap: bitmap_from_signers(0..n, n),
            aggregate: signers.aggregate()?,
            signatures: signers.signatures.iter().map(Signature::to_bytes).collect(),
            set: signers.set,
            keys: signers.keys,
        })
    }

    fn aggregate(&self) {
        verify_aggregate(&self.set, &self.bitmap, MESSAGE, &self.aggregate)
            .expect("the aggregate verifies");
    }

    fn flat(&self) {
        for (key, sig) in self.keys.iter().zip(&self.signatures) {
            let sig = Signature::from_bytes(sig).expect("a valid signature");
            key.verify(MESSAGE, &sig).expect("the signature verifies");
        }
    }
}

/// One ML-DSA-65 key and signature, ours and in the fips204 crate's types.
struct MlDsaCase {
    key: mldsa::SecretKey<MlDsa65>,
    signature: mldsa::Signature<MlDsa65>,
    fips204_key: fips204::ml_dsa_65::PublicKey,
    fips204_signature: [u8; fips204::ml_dsa_65::SIG_LEN],
}

impl MlDsaCase {
    fn new() -> Result<MlDsaCase, BenchError> {
        use fips204::traits::SerDes;
        let key = mldsa::SecretKey::<MlDsa65>::from_seed(&[7u8; 32]);
        let signature = key
            .sign_deterministic(MESSAGE, CONTEXT)
            .map_err(BenchError::setup("ML-DSA sign"))?;
        let public: [u8; fips204::ml_dsa_65::PK_LEN] = key
            .public_key()
            .as_bytes()
            .try_into()
            .map_err(|_| BenchError::Setup("ML-DSA-65 public key length".into()))?;
        Ok(MlDsaCase {
            fips204_key: fips204::ml_dsa_65::PublicKey::try_from_bytes(public)
                .map_err(|e| BenchError::Setup(format!("fips204 public key: {e}")))?,
            fips204_signature: signature
                .as_bytes()
                .try_into()
                .map_err(|_| BenchError::Setup("ML-DSA-65 signature length".into()))?,
            key,
            signature,
        })
    }

    fn verify(&self) {
        self.key
            .public_key()
            .verify(MESSAGE, CONTEXT, &self.signature)
            .expect("the signature verifies");
    }

    fn verify_fips204(&self) {
        use fips204::traits::Verifier;
        assert!(self
            .fips204_key
            .verify(MESSAGE, &self.fips204_signature, CONTEXT));
    }

    fn sign(&self) {
        self.key
            .sign_with_rnd(MESSAGE, CONTEXT, &[9u8; 32])
            .expect("signs");
    }
}

/// A 3-of-4 Corona key with its signers (behind a `RefCell`: the signing workload changes
/// them while the verifying one reads the key).
struct CoronaCase {
    group: corona::scheme::GroupKey,
    signature: corona::scheme::Signature,
    signing: RefCell<CoronaSigning>,
}

/// What signing changes: the signers' used sessions, the session counter, the RNG.
struct CoronaSigning {
    signers: Vec<corona::scheme::Signer>,
    sessions: u64,
    rng: ChaCha20Rng,
}

impl CoronaCase {
    fn new(rng: &mut ChaCha20Rng) -> Result<CoronaCase, BenchError> {
        let (group, shares) = corona::scheme::trusted_dealer_keygen(3, 4, rng)
            .map_err(BenchError::setup("Corona keygen"))?;
        let mut signers: Vec<_> = shares
            .into_iter()
            .map(corona::scheme::Signer::new)
            .collect();
        let signature = corona::local::sign_in_process(
            &group,
            &mut signers,
            &[0, 1, 2],
            corona::scheme::SessionId([0xff; 32]),
            MESSAGE,
            rng,
        )
        .map_err(BenchError::setup("Corona sign"))?;
        Ok(CoronaCase {
            group,
            signature,
            signing: RefCell::new(CoronaSigning {
                signers,
                sessions: 0,
                rng: ChaCha20Rng::seed_from_u64(12),
            }),
        })
    }

    /// One signature by parties 0, 1, 2: round 1, round 2, combine, and the total.
    fn sign(&self) -> Vec<Duration> {
        let signing = &mut *self.signing.borrow_mut();
        let session = corona::scheme::SessionId(session_id(&mut signing.sessions));
        let set = signing.signers[0]
            .share()
            .signing_set(&[0, 1, 2])
            .expect("a valid signing set");
        let rng = &mut signing.rng;
        let chosen = &mut signing.signers[..3];
        let (round1, first) = timed(|| {
            chosen
                .iter_mut()
                .map(|s| s.round1(session, &set, rng).expect("round 1"))
                .collect::<Vec<_>>()
        });
        let (states, messages): (Vec<_>, Vec<_>) = round1.into_iter().unzip();
        let (round2, second) = timed(|| {
            chosen
                .iter()
                .zip(states)
                .map(|(s, state)| s.round2(state, MESSAGE, &messages).expect("round 2"))
                .collect::<Vec<_>>()
        });
        let context = round2
            .last()
            .map(|(_, c)| c.clone())
            .expect("three signers");
        let shares: Vec<_> = round2.into_iter().map(|(m, _)| m).collect();
        let (_, combine) =
            timed(|| corona::scheme::combine(&self.group, &context, &shares).expect("combines"));
        vec![first, second, combine, first + second + combine]
    }

    fn verify(&self, backend: &dyn BatchArithmetic) {
        self.group
            .verify_on(backend, MESSAGE, &self.signature)
            .expect("the signature verifies");
    }
}

/// A Groth16 key pair for a `SquaringChain`, a proof to verify and a statement to prove.
struct Groth16Case {
    proving_key: ark_groth16::ProvingKey<Bls12_381>,
    processed: ark_groth16::PreparedVerifyingKey<Bls12_381>,
    key: VerifyingKey,
    circuit: SquaringChain,
    inputs: [Fr; 3],
    proof: Proof,
    ark_proof: ark_groth16::Proof<Bls12_381>,
    r: Fr,
    s: Fr,
}

impl Groth16Case {
    fn new(log: u32, rng: &mut ChaCha20Rng) -> Result<Groth16Case, BenchError> {
        // Two constraints besides the chain: 2^log in all.
        let chain = (1usize << log) - 2;
        let (proving_key, ark_key) =
            SquaringChain::setup(chain, rng).map_err(BenchError::setup("Groth16 setup"))?;
        let circuit = SquaringChain::random(chain, rng);
        let inputs = circuit
            .inputs
            .ok_or_else(|| BenchError::Setup("the circuit has inputs".into()))?;
        let ark_proof = Groth16::<Bls12_381>::prove(&proving_key, circuit.clone(), rng)
            .map_err(BenchError::setup("Groth16 prove"))?;
        let mut key_bytes = Vec::new();
        ark_key
            .serialize_compressed(&mut key_bytes)
            .map_err(BenchError::setup("Groth16 key"))?;
        let case = Groth16Case {
            processed: ark_groth16::prepare_verifying_key(&ark_key),
            key: VerifyingKey::from_bytes(&key_bytes).map_err(BenchError::setup("Groth16 key"))?,
            proof: Proof::from_ark(&ark_proof).map_err(BenchError::setup("Groth16 proof"))?,
            ark_proof,
            proving_key,
            circuit,
            inputs,
            r: Fr::rand(rng),
            s: Fr::rand(rng),
        };
        let ours = create_proof(
            &case.proving_key,
            case.circuit.clone(),
            case.r,
            case.s,
            &quasar_crypto::accel::CpuBackend,
        )
        .map_err(BenchError::setup("Groth16 prove"))?
        .0;
        if ours != case.prove_ark() {
            return Err(BenchError::Setup(
                "our prover and ark-groth16 disagree on the same randomizers".into(),
            ));
        }
        Ok(case)
    }

    fn verify(&self) {
        self.key
            .verify(&self.inputs, &self.proof)
            .expect("the proof verifies");
    }

    fn verify_ark(&self) {
        let ok = Groth16::<Bls12_381>::verify_with_processed_vk(
            &self.processed,
            &self.inputs,
            &self.ark_proof,
        )
        .expect("ark verifies");
        assert!(ok);
    }

    fn prove(&self, backend: &dyn BatchArithmetic) {
        create_proof(
            &self.proving_key,
            self.circuit.clone(),
            self.r,
            self.s,
            backend,
        )
        .expect("proves");
    }

    fn prove_ark(&self) -> ark_groth16::Proof<Bls12_381> {
        Groth16::<Bls12_381>::create_proof_with_reduction(
            self.circuit.clone(),
            &self.proving_key,
            self.r,
            self.s,
        )
        .expect("ark proves")
    }
}

/// One SLH-DSA-SHAKE-192f signature, ours and in RustCrypto's types.
struct SlhCase {
    key: magnetar::PublicKey,
    signature: magnetar::Signature,
    theirs: slh_dsa::VerifyingKey<slh_dsa::Shake192f>,
    their_signature: slh_dsa::Signature<slh_dsa::Shake192f>,
}

impl SlhCase {
    fn new() -> Result<SlhCase, BenchError> {
        let secret = magnetar::SecretKey::from_seed(ParameterSet::Shake192f, &[5u8; 32]);
        let signature = secret
            .sign_deterministic(MESSAGE, CONTEXT)
            .map_err(BenchError::setup("SLH-DSA sign"))?;
        let key = secret.public_key().clone();
        Ok(SlhCase {
            theirs: slh_dsa::VerifyingKey::try_from(key.as_bytes().as_slice())
                .map_err(|e| BenchError::Setup(format!("slh-dsa key: {e}")))?,
            their_signature: slh_dsa::Signature::try_from(signature.as_bytes())
                .map_err(|e| BenchError::Setup(format!("slh-dsa signature: {e}")))?,
            key,
            signature,
        })
    }

    fn verify(&self) {
        self.key
            .verify(MESSAGE, CONTEXT, &self.signature)
            .expect("the signature verifies");
    }

    fn verify_rustcrypto(&self) {
        self.theirs
            .try_verify_with_context(MESSAGE, CONTEXT, &self.their_signature)
            .expect("RustCrypto verifies");
    }
}
