//! `quasar-bench cert`: the whole QuasarCert verified through the parallel-max verifier
//! (`quasar_lanes::cert::CertVerifier`, docs/architecture.md §3) per profile and validator count, with
//! the certificate's size, against its slowest leg and the sum of its legs verified one by one
//! in the same rounds.
//!
//! Fixtures: `quasar_lanes::cert_fixture` epochs with real keys for every leg (BLS and Magnetar
//! legs carry the smallest quorum of n equal stakes; Corona and Pulsar are 2-of-3 committees,
//! whose verification does not depend on n; the Groth16 leg proves a small circuit with the
//! rollup's public inputs, which verifies at the same cost as a rollup proof). `hybrid-…`
//! certificates carry the legs of `quasar` and verify at its cost.

use std::time::{Duration, Instant};

use quasar_crypto::hash::Hash;
use quasar_lanes::cert::{bundle_digest, verify_leg, CertPolicy, CertVerifier, Profile};
use quasar_lanes::cert_fixture::{Fixture, FixtureConfig};
use quasar_wire::LegKind;

use super::{distinct, BenchError, Common, Gpu};
use crate::measure::{Rounds, Series};
use crate::report::{ms, ratio, Plot, Ratio, Record, Report, Table};

const BLOCK: Hash = [0xb1; 32];
const HEIGHT: u64 = 100;
const VIEW: u64 = 120;

/// `cert` options.
#[derive(Clone, Debug, clap::Args)]
pub struct Options {
    /// Validator counts (default 4,21,50,100; smoke 4).
    #[arg(long, value_delimiter = ',')]
    pub sizes: Option<Vec<usize>>,
    /// Profiles (default quasar,aurora,polaris,fast).
    #[arg(long, value_delimiter = ',', value_parser = parse_profile)]
    pub profiles: Option<Vec<Profile>>,
}

fn parse_profile(s: &str) -> Result<Profile, String> {
    s.parse::<Profile>().map_err(|e| e.to_string())
}

/// One certificate and everything needed to verify it whole and leg by leg.
struct Case {
    profile: Profile,
    n: usize,
    policy: CertPolicy,
    bytes: Vec<u8>,
    mu: Hash,
    digest: Hash,
    legs: Vec<(LegKind, Vec<u8>)>,
}

impl Case {
    fn new(profile: Profile, n: usize) -> Result<Case, BenchError> {
        let mut fixture =
            Fixture::new(FixtureConfig::new(n, profile)).map_err(BenchError::setup("fixture"))?;
        let cert = fixture
            .certificate(HEIGHT, VIEW, BLOCK, &[])
            .map_err(BenchError::setup("certificate"))?;
        let case = Case {
            profile,
            n,
            policy: fixture.policy().clone(),
            mu: *cert
                .bundle
                .last()
                .ok_or_else(|| BenchError::Setup("an empty bundle".into()))?,
            digest: bundle_digest(&cert.bundle),
            bytes: cert.encode().map_err(BenchError::setup("encode"))?,
            legs: cert.legs,
        };
        for i in 0..case.legs.len() {
            case.leg(i).map_err(BenchError::setup("a leg"))?;
        }
        Ok(case)
    }

    fn leg(&self, i: usize) -> Result<(), quasar_lanes::LaneError> {
        let (kind, body) = &self.legs[i];
        verify_leg(&self.policy, *kind, &self.mu, &self.digest, body).map(|_| ())
    }

    fn group(&self) -> String {
        format!("{} n={}", self.profile, self.n)
    }
}

/// Runs the cert bench.
pub fn run(options: &Options, common: &Common, gpu: &Gpu) -> Result<Report, BenchError> {
    let sizes = options.sizes.clone().unwrap_or_else(|| {
        if common.smoke {
            vec![4]
        } else {
            vec![4, 21, 50, 100]
        }
    });
    let sizes = distinct(sizes);
    if sizes.iter().any(|&n| n == 0 || n > 1000) {
        return Err(BenchError::Options(
            "validator counts must be between 1 and 1000".into(),
        ));
    }
    let profiles = options.profiles.clone().unwrap_or_else(|| {
        vec![
            Profile::Quasar,
            Profile::Aurora,
            Profile::Polaris,
            Profile::Fast,
        ]
    });
    let profiles = distinct(profiles);
    let rounds = common.rounds(9);
    let mut cases = Vec::new();
    for &profile in &profiles {
        for &n in &sizes {
            let started = Instant::now();
            cases.push(Case::new(profile, n)?);
            eprintln!(
                "cert: {profile} n={n} fixture in {:.1} s",
                started.elapsed().as_secs_f64()
            );
        }
    }
    let verifier = CertVerifier::new(0).map_err(BenchError::setup("verifier pool"))?;
    let gpu_verifier = match &gpu.backend {
        Some(backend) => Some(
            CertVerifier::with_backend(0, backend.clone())
                .map_err(BenchError::setup("verifier pool"))?,
        ),
        None => None,
    };
    let mut r = Rounds::new(Duration::from_millis(if common.smoke { 2 } else { 20 }));
    for case in &cases {
        let group = case.group();
        r.add(&group, "whole", || {
            verifier
                .verify(&case.policy, &case.bytes)
                .expect("the certificate verifies");
        });
        if let Some(v) = &gpu_verifier {
            r.add(&group, "whole (GPU)", move || {
                v.verify(&case.policy, &case.bytes)
                    .expect("the certificate verifies");
            });
        }
        for (i, (kind, _)) in case.legs.iter().enumerate() {
            r.add(&group, &format!("leg {kind} alone"), move || {
                case.leg(i).expect("the leg verifies")
            });
        }
    }
    eprintln!("cert: {rounds} rounds over {} certificates", cases.len());
    let series = r.run(rounds);
    Ok(report(
        &cases, &series, common, gpu, &sizes, &profiles, rounds,
    ))
}

/// Per round, the largest (`max`) or the sum of the samples of `legs`.
fn per_round(legs: &[&Series], group: &str, name: &str, max: bool) -> Series {
    let rounds = legs.first().map_or(0, |s| s.samples_ms.len());
    let samples_ms = (0..rounds)
        .map(|k| {
            let values = legs.iter().map(|s| s.samples_ms[k]);
            if max {
                values.fold(0.0, f64::max)
            } else {
                values.sum()
            }
        })
        .collect();
    Series {
        group: group.into(),
        name: name.into(),
        samples_ms,
        calls_per_sample: 1,
    }
}

fn report(
    cases: &[Case],
    series: &[Series],
    common: &Common,
    gpu: &Gpu,
    sizes: &[usize],
    profiles: &[Profile],
    rounds: usize,
) -> Report {
    let mut header = vec![
        "profile",
        "n",
        "cert bytes",
        "bls",
        "corona",
        "groth16",
        "pulsar",
        "magnetar",
        "slowest leg",
        "sum of legs",
        "whole p50",
        "whole p95",
    ];
    if gpu.backend.is_some() {
        header.push("whole p50 (GPU)");
    }
    header.extend(["whole / slowest", "whole / sum"]);
    let mut table = Table::new(
        format!(
            "QuasarCert verification (median ms over {rounds} rounds; legs alone on one thread, \
             whole = CertVerifier with one thread per core)"
        ),
        &header,
    );
    let mut records = Vec::new();
    let mut ratios = Vec::new();
    let mut bars = Vec::new();
    let mut at = 0usize;
    for case in cases {
        let group = case.group();
        let whole = &series[at];
        at += 1;
        let gpu_whole = gpu.backend.as_ref().map(|_| {
            at += 1;
            &series[at - 1]
        });
        let legs: Vec<&Series> = series[at..at + case.legs.len()].iter().collect();
        at += case.legs.len();
        let slowest = per_round(&legs, &group, "slowest leg alone", true);
        let sum = per_round(&legs, &group, "sum of legs alone", false);
        let per_slowest = Ratio::paired(&format!("{group}: whole / slowest leg"), whole, &slowest);
        let per_sum = Ratio::paired(&format!("{group}: whole / sum of legs"), whole, &sum);
        let whole_record = Record::from_series(whole)
            .with("cert_bytes", case.bytes.len())
            .with(
                "leg_bytes",
                case.legs
                    .iter()
                    .map(|(k, b)| (k.to_string(), serde_json::json!(b.len())))
                    .collect::<serde_json::Map<_, _>>(),
            );
        let mut row = vec![
            case.profile.to_string(),
            case.n.to_string(),
            case.bytes.len().to_string(),
        ];
        for column in ["bls", "corona", "groth16", "pulsar", "magnetar"] {
            let leg = case.legs.iter().position(|(k, _)| k.as_str() == column);
            row.push(leg.map_or("-".into(), |i| ms(Record::from_series(legs[i]).p50)));
        }
        row.extend([
            ms(Record::from_series(&slowest).p50),
            ms(Record::from_series(&sum).p50),
            ms(whole_record.p50),
            ms(whole_record.p95),
        ]);
        if let Some(g) = gpu_whole {
            row.push(ms(Record::from_series(g).p50));
            records.push(Record::from_series(g));
        }
        row.extend([ratio(per_slowest.value), ratio(per_sum.value)]);
        table.row(row);
        bars.push((group.clone(), whole_record.p50, whole_record.p95));
        records.push(whole_record);
        records.extend(legs.iter().map(|s| Record::from_series(s)));
        records.push(Record::from_series(&slowest));
        records.push(Record::from_series(&sum));
        ratios.extend([per_slowest, per_sum]);
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let notes = vec![
        format!(
            "Parallel max: the legs run side by side on {cores} cores, so whole / slowest leg \
             near 1 is the target; with more legs than cores they share the cores and the \
             ratio rises toward whole / sum."
        ),
        "BLS and Magnetar legs carry the smallest quorum of n equal stakes. The fixture's Corona \
         and Pulsar keys are 2-of-3 (a node deals t = n − ⌊(n − 1)/3⌋ of n, and a committee of \
         4 for Pulsar): each signature verifies against its group key alone, so neither its \
         size nor its cost depends on the committee. The Groth16 leg is one 192-byte proof. \
         `hybrid-…` verifies as `quasar`."
            .into(),
    ];
    Report {
        subcommand: "cert".into(),
        title: "QuasarCert verification".into(),
        smoke: common.smoke,
        settings: serde_json::json!({
            "sizes": sizes,
            "profiles": profiles.iter().map(Profile::to_string).collect::<Vec<_>>(),
            "rounds": rounds,
            "magnetar": "SLH-DSA-SHAKE-192f",
        }),
        tables: vec![table],
        records,
        ratios,
        notes,
        plot: Plot::Bars {
            axis: "milliseconds, whole certificate".into(),
            whisker: "p95".into(),
            bars,
        },
    }
}
