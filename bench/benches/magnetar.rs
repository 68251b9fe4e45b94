//! Magnetar lane benchmarks: verification of a Magnetar leg (one SLH-DSA signature per signer,
//! FIPS 205) for 21 signers, with SLH-DSA-SHAKE-192f and with 192s, spread over all cores by
//! `quasar_lanes::magnetar::verify_leg`, against the same 21 signatures verified one after another
//! on one core.
//!
//! Run: `cargo bench -p quasar-bench --bench magnetar`. The fixture is 21 validators of stake 1,
//! all of whom sign the round digest (context `quasar-cert-v1`, hedged). Signing is slow (about
//! 0.3 s per 192f signature and 5 s per 192s signature on one core of the 2-vCPU machine), so
//! every signature is made once, in setup, on all cores (about a minute); the setup time is
//! printed. Criterion groups (reports under
//! `target/criterion/`):
//!
//! - `magnetar_leg_192f/{parallel,sequential,decode}` and the same for `magnetar_leg_192s`:
//!   `verify_leg` on the decoded 21-signer leg (canonical bitmap, quorum, then the 21 signatures
//!   on the rayon pool); `PublicKey::verify` for each of the 21 signatures in turn on the calling
//!   thread (the baseline); and decoding the leg's bytes (length checks and copying the
//!   signatures, 749 KB for 192f, 341 KB for 192s).
//!
//! Then a summary step times parallel and sequential verification back to back in rounds (so that
//! load from other processes falls on both alike), and prints the medians and the ratio
//! parallel / sequential per parameter set, as a table and as JSON in
//! `target/criterion/magnetar-summary.json`. With `c` cores the ratio cannot go below `1/c`. To
//! run only the summary, pass a filter that matches no group:
//! `cargo bench -p quasar-bench --bench magnetar -- summary-only`.

use std::time::Instant;

use criterion::{Criterion, SamplingMode};
use quasar_bench::summary::{report, run_with_summary, time, Samples, Target};
use quasar_crypto::bls;
use quasar_crypto::magnetar::{ParameterSet, PublicKey, SecretKey, Signature};
use quasar_lanes::magnetar::{verify_leg, MagnetarKeys, MagnetarLeg};
use quasar_lanes::{Validator, ValidatorSet, CERT_CONTEXT};
use rayon::prelude::*;

/// Validators, all of whom sign.
const N: usize = 21;
/// The round digest the leg signs.
const MU: [u8; 32] = *b"quasar bench round digest, 32 B!";

/// One parameter set's keys, leg and signatures, built once.
struct Fixture {
    set: ParameterSet,
    keys: MagnetarKeys,
    public_keys: Vec<PublicKey>,
    signatures: Vec<Signature>,
    leg: MagnetarLeg,
    leg_bytes: Vec<u8>,
}

impl Fixture {
    fn new(set: ParameterSet) -> Fixture {
        let seed = |i: usize| {
            let mut seed = [0x6du8; 32];
            seed[..8].copy_from_slice(&(i as u64).to_le_bytes());
            seed
        };
        let secrets: Vec<SecretKey> = (0..N)
            .map(|i| SecretKey::from_seed(set, &seed(i)))
            .collect();
        let started = Instant::now();
        let signatures: Vec<Signature> = secrets
            .par_iter()
            .map(|sk| {
                sk.sign(&MU, CERT_CONTEXT, &mut rand::rngs::OsRng)
                    .expect("signs")
            })
            .collect();
        println!(
            "setup: {N} {} signatures in {:.1} s on {} cores",
            set.name(),
            started.elapsed().as_secs_f64(),
            rayon::current_num_threads()
        );
        let validators = (0..N)
            .map(|i| Validator {
                public_key: bls::SecretKey::from_seed(&seed(i)).public_key(),
                stake: 1,
            })
            .collect();
        let public_keys: Vec<PublicKey> = secrets.iter().map(|k| k.public_key().clone()).collect();
        let keys = MagnetarKeys::new(
            ValidatorSet::new(validators).expect("a validator set"),
            set,
            public_keys.clone(),
        )
        .expect("one key per validator");
        let leg = MagnetarLeg::new(N, signatures.iter().cloned().enumerate().collect())
            .expect("a leg of 21 signers");
        let fixture = Fixture {
            set,
            keys,
            public_keys,
            signatures,
            leg_bytes: leg.encode(),
            leg,
        };
        fixture.parallel();
        fixture.sequential();
        fixture
    }

    fn parallel(&self) {
        let verified = verify_leg(&self.keys, &MU, &self.leg).expect("the leg verifies");
        assert_eq!(verified.signers.len(), N);
    }

    fn sequential(&self) {
        for (key, sig) in self.public_keys.iter().zip(&self.signatures) {
            key.verify(&MU, CERT_CONTEXT, sig).expect("verifies");
        }
    }

    fn decode(&self) -> MagnetarLeg {
        MagnetarLeg::decode(&self.leg_bytes, self.set).expect("decodes")
    }

    fn rows(&self) -> &'static Rows {
        match self.set {
            ParameterSet::Shake192f => &ROWS_192F,
            ParameterSet::Shake192s => &ROWS_192S,
        }
    }
}

/// The names one parameter set's workloads and ratio have in the criterion groups and summary.
struct Rows {
    short: &'static str,
    parallel: &'static str,
    sequential: &'static str,
    decode: &'static str,
    ratio: &'static str,
}

const ROWS_192F: Rows = Rows {
    short: "192f",
    parallel: "192f: leg of 21, verify_leg (parallel)",
    sequential: "192f: 21 verifies, sequential",
    decode: "192f: leg decode",
    ratio: "192f: leg verify (parallel) / 21 sequential verifies",
};

const ROWS_192S: Rows = Rows {
    short: "192s",
    parallel: "192s: leg of 21, verify_leg (parallel)",
    sequential: "192s: 21 verifies, sequential",
    decode: "192s: leg decode",
    ratio: "192s: leg verify (parallel) / 21 sequential verifies",
};

fn bench_magnetar(c: &mut Criterion, fixtures: &[Fixture]) {
    for f in fixtures {
        let mut g = c.benchmark_group(format!("magnetar_leg_{}", f.rows().short));
        g.sampling_mode(SamplingMode::Flat);
        g.bench_function("parallel", |b| b.iter(|| f.parallel()));
        g.bench_function("sequential", |b| b.iter(|| f.sequential()));
        g.bench_function("decode", |b| b.iter(|| f.decode()));
        g.finish();
    }
}

/// The reported ratios: leg verification on all cores against the 21 verifications one after
/// another, per parameter set. No target: the floor is `1/cores`, printed with the table.
const TARGETS: [Target; 2] = [(ROWS_192F.ratio, None, true), (ROWS_192S.ratio, None, true)];

fn summary(fixtures: &[Fixture]) {
    let (mut ms, mut ratios) = (Samples::default(), Samples::default());
    for _ in 0..15 {
        for f in fixtures {
            let rows = f.rows();
            let parallel = time(3, || f.parallel());
            let sequential = time(3, || f.sequential());
            ms.push(rows.parallel, parallel * 1e3);
            ms.push(rows.sequential, sequential * 1e3);
            ms.push(rows.decode, time(10, || f.decode()) * 1e3);
            ratios.push(rows.ratio, parallel / sequential);
        }
    }
    report(
        "Magnetar",
        ("ms", "ms", 2),
        &ms,
        &ratios,
        &TARGETS,
        "magnetar-summary.json",
    );
}

fn main() {
    let fixtures = [
        Fixture::new(ParameterSet::Shake192f),
        Fixture::new(ParameterSet::Shake192s),
    ];
    run_with_summary(|c| bench_magnetar(c, &fixtures), || summary(&fixtures));
}
