//! QuasarCert verification benchmarks (issue 8, docs/architecture.md §3 "Parallel max"): the whole
//! certificate through the parallel-max verifier (`quasar_lanes::cert::CertVerifier`), against
//! its slowest leg verified on its own, measured in the same run.
//!
//! Run: `cargo bench -p quasar-bench --bench cert`. The fixtures are
//! `quasar_lanes::cert_fixture` epochs with real keys for every leg, at n = 4, 21 and 100
//! validators of equal stake, for the profiles `quasar` (BLS + Corona + Groth16), `aurora`
//! (BLS + Pulsar + Corona) and `polaris` (BLS + Pulsar + Corona + Magnetar, SLH-DSA-SHAKE-192f).
//! The BLS and Magnetar legs carry the smallest quorum prefix (3, 15 and 67 signers); Corona and
//! Pulsar are 2-of-3 committees (their verification does not depend on n); the Groth16 leg is a
//! proof of the rollup's public-input shape. Each certificate covers a bundle of one block
//! (`earlier = &[]`), and one extra case, `quasar` at n = 21 with a bundle of 8, shows that the
//! bundle length does not change the cost. Building the fixtures signs every leg once; the
//! `polaris` certificates sign one SLH-DSA-192f signature per quorum member on one core (about
//! 0.2 s each, so 10 to 20 s at n = 100). The setup time of each fixture is printed.
//!
//! Criterion groups (reports under `target/criterion/`), one per case,
//! `cert_<profile>_n<n>` and `cert_quasar_n21_bundle8`:
//!
//! - `whole`: `CertVerifier::verify` of the encoded certificate with a pool of one thread per
//!   core (parse, header and bundle checks, μ and the bundle digest, then every leg as a task of
//!   the pool).
//! - `leg_<kind>`: `verify_leg` of that one leg on the calling thread, with μ and the bundle
//!   digest given. The Magnetar leg spreads its signatures over rayon's global pool (all cores)
//!   as it does on its own in the node; the other legs are single-threaded.
//! - `legs_sequential`: every leg's `verify_leg`, one after another (the sum).
//!
//! Then a summary step times, in each of 15 rounds and for each case, every leg alone and the
//! whole certificate back to back (so that load from other processes falls on all alike), and
//! reports per case the medians of each leg, of the slowest leg and of the legs' sum (both taken
//! per round), of the whole verification, and the paired ratios whole / slowest leg (the issue's
//! target: at most 1.25) and whole / sum. A second table takes one more whole verification per
//! round and gives, from its `CertReport`, each leg's wall time (what the legs running side by
//! side cost each other), the whole elapsed time, and how much of it lies outside the slowest
//! leg (dispatch to the pool and back, parsing, digests), medians over the rounds. The results
//! are printed as tables and written as JSON to `target/criterion/cert-summary.json`. With c
//! cores and legs that are each single-threaded, whole / sum cannot go below 1/c; a ratio above
//! 1 against the slowest leg is the cost of the other legs sharing the cores and of the dispatch.
//! To tell the two apart, each round also runs the slowest leg on two threads at once and
//! reports that time over the leg alone (`slowest leg twice side by side / alone`): the machine's
//! own price for two single-threaded legs running together, which bounds whole / slowest from
//! below when two legs cost about the same (as BLS and Groth16 do under `quasar`).
//! Other processes busy on the same cores take them from the verifier's pool: on a loaded
//! machine the legs run one after another and whole / sum approaches 1. To run only the
//! summary, pass a filter that matches no group:
//! `cargo bench -p quasar-bench --bench cert -- summary-only`.

use std::time::Instant;

use criterion::{Criterion, SamplingMode};
use quasar_bench::summary::{report, run_with_summary, time, Samples, Target};
use quasar_crypto::hash::Hash;
use quasar_lanes::cert::{
    bundle_digest, verify_leg, CertPolicy, CertReport, CertVerifier, Profile,
};
use quasar_lanes::cert_fixture::{Fixture, FixtureConfig};

/// Validator counts.
const SIZES: [usize; 3] = [4, 21, 100];
/// Profiles, in table order.
const PROFILES: [Profile; 3] = [Profile::Quasar, Profile::Aurora, Profile::Polaris];
/// The certified block.
const BLOCK: Hash = [0xb1; 32];
const HEIGHT: u64 = 100;
const VIEW: u64 = 120;
/// The bundle length of the extra case.
const LONG_BUNDLE: usize = 8;
/// The target for whole / slowest leg.
const TARGET: f64 = 1.25;
/// Summary rounds.
const ROUNDS: usize = 15;
/// Wall time a summary sample aims for; the number of calls per sample follows from it.
const SAMPLE_SECONDS: f64 = 0.02;
/// Every leg kind, in the tables' column order.
const COLUMNS: [&str; 5] = ["bls", "corona", "groth16", "pulsar", "magnetar"];

/// Leaks `s` for the summary's `&'static str` row names (a few dozen strings, once per run).
fn name(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// The names of one case's rows in the summary.
struct Rows {
    /// Row label, e.g. `quasar n=21 k=1`.
    label: String,
    /// One per leg, in the profile's order.
    legs: Vec<&'static str>,
    /// One per leg: its time inside the whole verification.
    in_cert: Vec<&'static str>,
    /// `CertReport::elapsed`, and its excess over the slowest leg in the same report.
    report_elapsed: &'static str,
    outside: &'static str,
    slowest: &'static str,
    sum: &'static str,
    whole: &'static str,
    per_slowest: &'static str,
    per_sum: &'static str,
    /// The slowest leg run on two threads at once, each call's time over the call alone.
    side_by_side: &'static str,
}

/// One (profile, n, bundle length) certificate with its policy, built once.
struct Case {
    profile: Profile,
    n: usize,
    bundle: usize,
    policy: CertPolicy,
    /// The encoded certificate.
    bytes: Vec<u8>,
    /// μ of the certified block (the BLS leg's message).
    mu: Hash,
    /// The bundle digest (the other legs' message).
    digest: Hash,
    /// Leg bodies in the profile's order (`Profile::legs`).
    bodies: Vec<Vec<u8>>,
    /// Calls per summary sample.
    calls: u32,
    rows: Rows,
}

impl Case {
    /// A certificate from `fixture` covering `earlier` and the block; checks that it verifies
    /// whole and leg by leg.
    fn new(fixture: &mut Fixture, n: usize, earlier: &[Hash], verifier: &CertVerifier) -> Case {
        let policy = fixture.policy().clone();
        let profile = policy.profile();
        let cert = fixture
            .certificate(HEIGHT, VIEW, BLOCK, earlier)
            .expect("the fixture signs every leg");
        let legs = profile.legs();
        assert_eq!(cert.legs.len(), legs.len());
        for ((kind, _), expected) in cert.legs.iter().zip(legs) {
            assert_eq!(kind, expected, "legs in the profile's order");
        }
        let bundle = cert.bundle.len();
        let label = format!("{profile} n={n} k={bundle}");
        let leg_names = legs.iter().map(|l| l.as_str());
        let rows = Rows {
            legs: leg_names
                .clone()
                .map(|l| name(format!("{label}: {l} leg alone")))
                .collect(),
            in_cert: leg_names
                .map(|l| name(format!("{label}: {l} leg in cert")))
                .collect(),
            report_elapsed: name(format!("{label}: CertReport::elapsed")),
            outside: name(format!("{label}: elapsed - slowest leg in cert")),
            slowest: name(format!("{label}: slowest leg alone")),
            sum: name(format!("{label}: sum of legs alone")),
            whole: name(format!("{label}: whole cert (CertVerifier)")),
            per_slowest: name(format!("{label}: whole / slowest leg")),
            per_sum: name(format!("{label}: whole / sum of legs")),
            side_by_side: name(format!("{label}: slowest leg twice side by side / alone")),
            label,
        };
        let mut case = Case {
            profile,
            n,
            bundle,
            mu: *cert.bundle.last().expect("the bundle ends with μ"),
            digest: bundle_digest(&cert.bundle),
            bytes: cert.encode().expect("the certificate encodes"),
            bodies: cert.legs.into_iter().map(|(_, body)| body).collect(),
            policy,
            calls: 1,
            rows,
        };
        case.legs_sequential();
        let report = case.whole(verifier);
        assert_eq!(report.legs.len(), legs.len());
        assert_eq!(report.bundle_digest, case.digest);
        let once = time(3, || case.whole(verifier));
        case.calls = (SAMPLE_SECONDS / once).ceil().clamp(1.0, 50.0) as u32;
        case
    }

    /// The criterion group's name.
    fn group(&self) -> String {
        let mut group = format!("cert_{}_n{}", self.profile, self.n);
        if self.bundle > 1 {
            group.push_str(&format!("_bundle{}", self.bundle));
        }
        group
    }

    /// `verify_leg` of the `i`-th leg of the profile on the calling thread.
    fn leg(&self, i: usize) {
        let (Some(&kind), Some(body)) = (self.profile.legs().get(i), self.bodies.get(i)) else {
            panic!("no leg {i} in {}", self.rows.label);
        };
        verify_leg(&self.policy, kind, &self.mu, &self.digest, body).expect("the leg verifies");
    }

    /// Every leg's `verify_leg`, one after another.
    fn legs_sequential(&self) {
        for i in 0..self.bodies.len() {
            self.leg(i);
        }
    }

    /// The whole certificate through the parallel-max verifier.
    fn whole(&self, verifier: &CertVerifier) -> CertReport {
        verifier
            .verify(&self.policy, &self.bytes)
            .expect("the certificate verifies")
    }
}

/// Builds every case: each profile at each size, then the long-bundle case from the `quasar`
/// n = 21 fixture.
fn cases(verifier: &CertVerifier) -> Vec<Case> {
    let mut cases = Vec::new();
    for profile in PROFILES {
        for n in SIZES {
            let started = Instant::now();
            let mut fixture =
                Fixture::new(FixtureConfig::new(n, profile)).expect("the fixture builds");
            cases.push(Case::new(&mut fixture, n, &[], verifier));
            if profile == Profile::Quasar && n == 21 {
                let earlier: Vec<Hash> = (1..LONG_BUNDLE as u64)
                    .rev()
                    .map(|back| {
                        fixture
                            .policy()
                            .round_digest(HEIGHT - back, VIEW - back, &[back as u8; 32])
                    })
                    .collect();
                cases.push(Case::new(&mut fixture, n, &earlier, verifier));
            }
            println!(
                "setup: {profile} n={n} fixture and certificate in {:.1} s",
                started.elapsed().as_secs_f64()
            );
        }
    }
    cases
}

fn bench_cert(c: &mut Criterion, cases: &[Case], verifier: &CertVerifier) {
    for case in cases {
        let mut g = c.benchmark_group(case.group());
        g.sampling_mode(SamplingMode::Flat);
        g.bench_function("whole", |b| b.iter(|| case.whole(verifier)));
        for (i, kind) in case.profile.legs().iter().enumerate() {
            g.bench_function(format!("leg_{kind}"), |b| b.iter(|| case.leg(i)));
        }
        g.bench_function("legs_sequential", |b| b.iter(|| case.legs_sequential()));
        g.finish();
    }
}

/// Median of `name` in `medians`; NaN when absent.
fn median(medians: &[(&'static str, f64)], name: &str) -> f64 {
    medians
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(f64::NAN, |&(_, v)| v)
}

/// One Markdown row per case: the leg columns from `leg_rows`, then `tail`.
fn print_case_row(case: &Case, medians: &[(&'static str, f64)], leg_rows: &[&str], tail: &str) {
    let mut row = format!("| {} | {} | {} |", case.profile, case.n, case.bundle);
    for column in COLUMNS {
        let at = case
            .profile
            .legs()
            .iter()
            .position(|l| l.as_str() == column);
        match at.and_then(|i| leg_rows.get(i)) {
            Some(name) => row.push_str(&format!(" {:.3} |", median(medians, name))),
            None => row.push_str(" - |"),
        }
    }
    println!("{row}{tail}");
}

/// Seconds per call of `work` while a second thread runs the same calls at the same time: what
/// this machine does to one leg when another runs beside it on the other core (shared caches,
/// memory bandwidth, a shared physical core, clock limits). The whole certificate cannot do
/// better than this for two legs of similar cost.
fn side_by_side(calls: u32, work: impl Fn() + Sync) -> f64 {
    let start = Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..calls {
                work();
            }
        });
        for _ in 0..calls {
            work();
        }
    });
    start.elapsed().as_secs_f64() / f64::from(calls)
}

fn summary(cases: &[Case], verifier: &CertVerifier) {
    let (mut ms, mut ratios, mut in_cert) =
        (Samples::default(), Samples::default(), Samples::default());
    for _ in 0..ROUNDS {
        for case in cases {
            let legs: Vec<f64> = (0..case.bodies.len())
                .map(|i| time(case.calls, || case.leg(i)))
                .collect();
            let whole = time(case.calls, || case.whole(verifier));
            let slowest = legs.iter().copied().fold(0.0, f64::max);
            let slowest_leg = legs.iter().position(|&t| t == slowest).unwrap_or_default();
            let pair = side_by_side(case.calls, || case.leg(slowest_leg));
            ratios.push(case.rows.side_by_side, pair / slowest);
            let sum: f64 = legs.iter().sum();
            for (row, t) in case.rows.legs.iter().zip(&legs) {
                ms.push(row, t * 1e3);
            }
            ms.push(case.rows.slowest, slowest * 1e3);
            ms.push(case.rows.sum, sum * 1e3);
            ms.push(case.rows.whole, whole * 1e3);
            ratios.push(case.rows.per_slowest, whole / slowest);
            ratios.push(case.rows.per_sum, whole / sum);
            let report = case.whole(verifier);
            for (row, leg) in case.rows.in_cert.iter().zip(&report.legs) {
                in_cert.push(row, leg.elapsed.as_secs_f64() * 1e3);
            }
            let slowest_in_cert = report.legs.iter().map(|l| l.elapsed).max();
            let elapsed = report.elapsed.as_secs_f64() * 1e3;
            in_cert.push(case.rows.report_elapsed, elapsed);
            in_cert.push(
                case.rows.outside,
                elapsed - slowest_in_cert.map_or(0.0, |d| d.as_secs_f64() * 1e3),
            );
        }
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (medians, ratio_medians, in_cert) = (ms.medians(), ratios.medians(), in_cert.medians());
    println!(
        "\nQuasarCert verification ({cores} cores; CertVerifier pool of one thread per core, \
         rayon global pool of {} threads for the Magnetar leg alone; medians over {ROUNDS} \
         rounds, ms; ratios paired per round)",
        rayon::current_num_threads()
    );
    println!(
        "| profile | n | bundle | bls | corona | groth16 | pulsar | magnetar | slowest leg | sum \
         of legs | whole cert | whole / slowest | whole / sum |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for case in cases {
        let per_slowest = median(&ratio_medians, case.rows.per_slowest);
        let tail = format!(
            " {:.3} | {:.3} | {:.3} | {:.2}{} | {:.2} |",
            median(&medians, case.rows.slowest),
            median(&medians, case.rows.sum),
            median(&medians, case.rows.whole),
            per_slowest,
            if per_slowest <= TARGET {
                ""
            } else {
                " (> 1.25)"
            },
            median(&ratio_medians, case.rows.per_sum),
        );
        print_case_row(case, &medians, &case.rows.legs, &tail);
    }
    println!(
        "\nInside one whole verification per round (CertReport: each leg's wall time, the whole \
         elapsed, and the elapsed time outside the slowest leg; medians, ms)"
    );
    println!(
        "| profile | n | bundle | bls | corona | groth16 | pulsar | magnetar | elapsed | elapsed \
         - slowest leg |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for case in cases {
        let tail = format!(
            " {:.3} | {:.3} |",
            median(&in_cert, case.rows.report_elapsed),
            median(&in_cert, case.rows.outside)
        );
        print_case_row(case, &in_cert, &case.rows.in_cert, &tail);
    }
    let targets: Vec<Target> = cases
        .iter()
        .flat_map(|case| {
            [
                (case.rows.per_slowest, Some(TARGET), true),
                (case.rows.per_sum, None, true),
                (case.rows.side_by_side, None, true),
            ]
        })
        .collect();
    report(
        "QuasarCert",
        ("ms", "ms", 3),
        &ms,
        &ratios,
        &targets,
        "cert-summary.json",
    );
}

fn main() {
    let verifier = CertVerifier::new(0).expect("the verifier's pool starts");
    let cases = cases(&verifier);
    run_with_summary(
        |c| bench_cert(c, &cases, &verifier),
        || summary(&cases, &verifier),
    );
}
