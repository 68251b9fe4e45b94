//! Pulsar benchmarks (issue 7): threshold ML-DSA-65 signing with every party in one process, and
//! verification of the result against a standard ML-DSA-65 signature.
//!
//! Run: `cargo bench -p quasar-bench --bench pulsar`. Criterion groups (reports under
//! `target/criterion/`):
//!
//! - `pulsar_sign/{2of3,3of5}`: one signature, all t signers in this process on one thread:
//!   sessions (round 1, round 2, round 3 for every signer, then combine) until one succeeds, so
//!   restarts are included.
//! - `pulsar_verify/{pulsar,mldsa65}`: FIPS 204 verification (libcrux) of a Pulsar signature and
//!   of a single-party ML-DSA-65 signature.
//! - `pulsar_keygen/3of5`: the trusted dealer.
//!
//! The summary step signs 3-of-5 and 2-of-3 repeatedly and reports the median signing time, the
//! median time of each round of one 3-of-5 session (each round for all three signers), the mean
//! number of sessions per signature (the expected restarts), and the verify ratio, as a table and as
//! JSON in `target/criterion/pulsar-summary.json`. To run only the summary, pass a filter that
//! matches no group: `cargo bench -p quasar-bench --bench pulsar -- summary-only`.
//!
//! **Calibration of K** (the parallel attempts per session, `quasar_crypto::pulsar::params`):
//! with `PULSAR_CALIBRATE=t-n:signatures,…` (for instance `2-3:1000,4-6:100`) the summary also
//! signs that many signatures per shape and prints the mean sessions per signature, the session
//! success rate s, the per-attempt success p = 1 − (1 − s)^(1/K), and the smallest K whose
//! sessions succeed with probability ≥ 1/2 at that p. `params.rs` records the measurements its
//! table rests on.

use criterion::{Criterion, SamplingMode};
use quasar_bench::summary::{report, run_with_summary, time, Samples, Target};
use quasar_crypto::mldsa::{MlDsa65, PublicKey, SecretKey, Signature};
use quasar_crypto::pulsar::params::Parameters;
use quasar_crypto::pulsar::{
    combine, trusted_dealer_keygen, GroupKey, PulsarError, Round1Message, Round1State,
    Round2Message, Round2State, Round3Message, Session, SessionId, Signer,
};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

const CONTEXT: &[u8] = b"quasar-cert-v1";
const MESSAGE: &[u8] = b"a 32-byte round digest goes here";

/// A key and its first t signers.
struct Fixture {
    group: GroupKey,
    signers: Vec<Signer>,
    rng: ChaCha20Rng,
    next_session: u64,
}

impl Fixture {
    fn new(t: usize, n: usize) -> Fixture {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let (group, shares) = trusted_dealer_keygen(t, n, &mut rng).expect("keygen");
        let signers = shares.into_iter().take(t).map(Signer::new).collect();
        Fixture {
            group,
            signers,
            rng,
            next_session: 0,
        }
    }

    fn session(&mut self) -> Session {
        self.next_session += 1;
        let mut id = [0u8; 32];
        id[..8].copy_from_slice(&self.next_session.to_le_bytes());
        let parties: Vec<u16> = self.signers.iter().map(Signer::party).collect();
        Session::new(&self.group, SessionId(id), &parties, MESSAGE, CONTEXT).expect("session")
    }

    fn round1(&mut self, session: &Session) -> (Vec<Round1Message>, Vec<Round1State>) {
        let (group, rng) = (&self.group, &mut self.rng);
        self.signers
            .iter_mut()
            .map(|s| s.round1(group, session, rng).expect("round 1"))
            .unzip()
    }

    fn round2(
        &self,
        states: Vec<Round1State>,
        round1: &[Round1Message],
    ) -> (Vec<Round2Message>, Vec<Round2State>) {
        self.signers
            .iter()
            .zip(states)
            .map(|(s, st)| s.round2(st, round1).expect("round 2"))
            .unzip()
    }

    fn round3(&self, states: Vec<Round2State>, round2: &[Round2Message]) -> Vec<Round3Message> {
        self.signers
            .iter()
            .zip(states)
            .map(|(s, st)| s.round3(&self.group, st, round2).expect("round 3"))
            .collect()
    }

    /// One session, recording the time of each round (all signers) and of combine in `ms`;
    /// whether it produced a signature.
    fn timed_session(&mut self, ms: &mut Samples) -> bool {
        let session = self.session();
        let start = std::time::Instant::now();
        let (r1, s1) = self.round1(&session);
        ms.push(
            "3-of-5 round 1 (3 signers)",
            start.elapsed().as_secs_f64() * 1e3,
        );
        let start = std::time::Instant::now();
        let (r2, s2) = self.round2(s1, &r1);
        ms.push(
            "3-of-5 round 2 (3 signers)",
            start.elapsed().as_secs_f64() * 1e3,
        );
        let start = std::time::Instant::now();
        let r3 = self.round3(s2, &r2);
        ms.push(
            "3-of-5 round 3 (3 signers)",
            start.elapsed().as_secs_f64() * 1e3,
        );
        let start = std::time::Instant::now();
        let result = combine(&self.group, &session, &r1, &r2, &r3);
        ms.push("3-of-5 combine", start.elapsed().as_secs_f64() * 1e3);
        result.is_ok()
    }

    /// One signature and the number of sessions it took.
    fn sign(&mut self) -> (Vec<u8>, u32) {
        for sessions in 1.. {
            let session = self.session();
            let (r1, s1) = self.round1(&session);
            let (r2, s2) = self.round2(s1, &r1);
            let r3 = self.round3(s2, &r2);
            match combine(&self.group, &session, &r1, &r2, &r3) {
                Ok(signature) => return (signature, sessions),
                Err(PulsarError::Restart) => continue,
                Err(e) => panic!("honest signing failed: {e}"),
            }
        }
        unreachable!("the loop returns")
    }
}

/// A Pulsar signature and a single-party signature on the same message, decoded.
struct VerifyFixture {
    pulsar_key: PublicKey<MlDsa65>,
    pulsar_signature: Signature<MlDsa65>,
    key: PublicKey<MlDsa65>,
    signature: Signature<MlDsa65>,
}

impl VerifyFixture {
    fn new(f: &mut Fixture) -> VerifyFixture {
        let (bytes, _) = f.sign();
        let sk = SecretKey::<MlDsa65>::from_seed(&[3; 32]);
        VerifyFixture {
            pulsar_key: f.group.public_key().clone(),
            pulsar_signature: Signature::from_bytes(&bytes).expect("3309 bytes"),
            key: sk.public_key().clone(),
            signature: sk.sign_deterministic(MESSAGE, CONTEXT).expect("signs"),
        }
    }

    fn pulsar(&self) {
        self.pulsar_key
            .verify(MESSAGE, CONTEXT, &self.pulsar_signature)
            .expect("verifies");
    }

    fn mldsa(&self) {
        self.key
            .verify(MESSAGE, CONTEXT, &self.signature)
            .expect("verifies");
    }
}

fn bench_pulsar(c: &mut Criterion, f: &mut Fixture, small: &mut Fixture, v: &VerifyFixture) {
    let mut g = c.benchmark_group("pulsar_sign");
    g.sampling_mode(SamplingMode::Flat);
    g.bench_function("2of3", |b| b.iter(|| small.sign()));
    g.bench_function("3of5", |b| b.iter(|| f.sign()));
    g.finish();

    let mut g = c.benchmark_group("pulsar_verify");
    g.bench_function("pulsar", |b| b.iter(|| v.pulsar()));
    g.bench_function("mldsa65", |b| b.iter(|| v.mldsa()));
    g.finish();

    let mut g = c.benchmark_group("pulsar_keygen");
    let mut rng = ChaCha20Rng::seed_from_u64(8);
    g.bench_function("3of5", |b| {
        b.iter(|| trusted_dealer_keygen(3, 5, &mut rng).expect("keygen"))
    });
    g.finish();
}

/// The reported ratio: a Pulsar signature costs exactly one ML-DSA-65 verification.
const TARGETS: [Target; 1] = [("verify: pulsar / single-party ML-DSA-65", Some(1.1), true)];

fn summary(f: &mut Fixture, small: &mut Fixture, v: &VerifyFixture) {
    let (mut ms, mut ratios) = (Samples::default(), Samples::default());
    let mut sessions = [0u32; 2];
    const SIGNATURES: u32 = 40;
    for _ in 0..SIGNATURES {
        let start = std::time::Instant::now();
        let (_, used) = f.sign();
        ms.push("3-of-5 signature", start.elapsed().as_secs_f64() * 1e3);
        sessions[0] += used;
        let start = std::time::Instant::now();
        let (_, used) = small.sign();
        ms.push("2-of-3 signature", start.elapsed().as_secs_f64() * 1e3);
        sessions[1] += used;
        f.timed_session(&mut ms);
        let pulsar = time(50, || v.pulsar());
        let mldsa = time(50, || v.mldsa());
        ms.push("verify Pulsar signature", pulsar * 1e3);
        ms.push("verify ML-DSA-65 signature", mldsa * 1e3);
        ratios.push(TARGETS[0].0, pulsar / mldsa);
    }
    println!(
        "\nsessions per signature (mean over {SIGNATURES}): 3-of-5 {:.2}, 2-of-3 {:.2}",
        f64::from(sessions[0]) / f64::from(SIGNATURES),
        f64::from(sessions[1]) / f64::from(SIGNATURES)
    );
    report(
        "Pulsar",
        ("ms", "ms", 3),
        &ms,
        &ratios,
        &TARGETS,
        "pulsar-summary.json",
    );
}

/// The shapes and signature counts of `PULSAR_CALIBRATE` (module docs). An entry that does not
/// parse, a shape Pulsar does not support or a count of 0 stops the run with a message (exit 2).
fn calibration_shapes() -> Vec<(usize, usize, u32)> {
    let Ok(spec) = std::env::var("PULSAR_CALIBRATE") else {
        return Vec::new();
    };
    let parse = |entry: &str| {
        let (shape, count) = entry.trim().split_once(':')?;
        let (t, n) = shape.split_once('-')?;
        let (t, n, count) = (t.parse().ok()?, n.parse().ok()?, count.parse().ok()?);
        (count > 0 && Parameters::new(t, n).is_some()).then_some((t, n, count))
    };
    spec.split(',')
        .map(|entry| {
            parse(entry).unwrap_or_else(|| {
                eprintln!(
                    "PULSAR_CALIBRATE entry {entry:?}: expected t-n:count with 2 <= t <= n <= 6 \
                     and count >= 1, e.g. PULSAR_CALIBRATE=2-3:1000,3-4:150"
                );
                std::process::exit(2)
            })
        })
        .collect()
}

/// Measures restarts per shape (module docs, calibration of K).
fn calibrate(shapes: &[(usize, usize, u32)]) {
    println!("\nRestarts per shape (K: the parallel attempts in use, crypto/src/pulsar/params.rs)");
    println!("| t-of-n | K | signatures | sessions per signature | session success | per-attempt p | smallest K for ≥ 1/2 |");
    println!("|---|---|---|---|---|---|---|");
    for &(t, n, signatures) in shapes {
        let mut f = Fixture::new(t, n);
        let sessions: u32 = (0..signatures).map(|_| f.sign().1).sum();
        let attempts = f.group.params().attempts;
        let success = f64::from(signatures) / f64::from(sessions);
        let p = 1.0 - (1.0 - success).powf(1.0 / attempts as f64);
        let needed = (0.5f64.ln() / (1.0 - p).ln()).ceil();
        println!(
            "| {t}-of-{n} | {attempts} | {signatures} | {:.3} | {success:.3} | {p:.5} | {needed} |",
            f64::from(sessions) / f64::from(signatures)
        );
    }
}

fn main() {
    let shapes = calibration_shapes();
    let mut f = Fixture::new(3, 5);
    let small = Fixture::new(2, 3);
    let v = VerifyFixture::new(&mut f);
    // Both closures need the fixtures mutably; they run one after the other.
    let cell = std::cell::RefCell::new((f, small));
    run_with_summary(
        |c| {
            let (f, small) = &mut *cell.borrow_mut();
            bench_pulsar(c, f, small, &v)
        },
        || {
            let (f, small) = &mut *cell.borrow_mut();
            summary(f, small, &v);
            calibrate(&shapes);
        },
    );
}
