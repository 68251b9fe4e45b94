//! `quasar-bench sweep`: what one threshold signature costs as the committee grows, per scheme,
//! at t = n − ⌊(n − 1)/3⌋ (≈ 0.67 n, the node's quorum), every party in one process (the
//! work of the whole ceremony, no network), with the fitted cost per added participant.
//!
//! - BLS: t signature shares of a dealt t-of-n key (`bls_threshold`), combined by Lagrange
//!   interpolation in G2, and the result verified under the group key;
//! - Corona: round 1 and round 2 of t signers and the combine, which verifies
//!   (`corona::local::sign_in_process`);
//! - Pulsar: its parameter table stops at 6 parties, so above 4 validators the node signs with a
//!   committee of 4 drawn by stake (`pulsar::committee`): every n here signs 3-of-4, which is
//!   what a network of n validators pays.

use std::time::Duration;

use quasar_crypto::bls_threshold;
use quasar_crypto::corona;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use super::{distinct, BenchError, Common};
use crate::fixtures::{session_id, PulsarCommittee};
use crate::measure::{fit_line, Rounds};
use crate::report::{ms, ratio, Plot, Ratio, Record, Report, Table};

const MESSAGE: &[u8] = b"quasar-bench sweep: a round digest";
const CONTEXT: &[u8] = b"quasar-bench";
/// The Pulsar committee shape the node uses above 4 validators.
const PULSAR_SHAPE: (usize, usize) = (3, 4);

/// `sweep` options.
#[derive(Clone, Debug, clap::Args)]
pub struct Options {
    /// Committee sizes n (default 10,15,20; smoke 4,5).
    #[arg(long, value_delimiter = ',')]
    pub sizes: Option<Vec<usize>>,
}

/// The signing threshold for n parties: n − ⌊(n − 1)/3⌋.
pub fn threshold(n: usize) -> usize {
    n - (n.saturating_sub(1)) / 3
}

/// A dealt t-of-n BLS key.
struct BlsCase {
    t: usize,
    dealing: bls_threshold::Dealing,
}

impl BlsCase {
    fn sign(&self) {
        let shares: Vec<_> = self.dealing.shares()[..self.t]
            .iter()
            .map(|s| s.sign(MESSAGE))
            .collect();
        let signature = bls_threshold::combine(self.t as u16, &shares).expect("t shares combine");
        self.dealing
            .group_public_key()
            .verify(MESSAGE, &signature)
            .expect("the combined signature verifies");
    }
}

/// A dealt t-of-n Corona key with its signers.
struct CoronaCase {
    t: usize,
    group: corona::scheme::GroupKey,
    signers: Vec<corona::scheme::Signer>,
    sessions: u64,
    rng: ChaCha20Rng,
}

impl CoronaCase {
    fn sign(&mut self) {
        let session = corona::scheme::SessionId(session_id(&mut self.sessions));
        let parties: Vec<u16> = (0..self.t as u16).collect();
        corona::local::sign_in_process(
            &self.group,
            &mut self.signers,
            &parties,
            session,
            MESSAGE,
            &mut self.rng,
        )
        .expect("Corona signs");
    }
}

/// Runs the sweep.
pub fn run(options: &Options, common: &Common) -> Result<Report, BenchError> {
    let sizes = options.sizes.clone().unwrap_or_else(|| {
        if common.smoke {
            vec![4, 5]
        } else {
            vec![10, 15, 20]
        }
    });
    let sizes = distinct(sizes);
    if sizes.iter().any(|&n| !(2..=256).contains(&n)) {
        return Err(BenchError::Options(
            "committee sizes must be between 2 and 256".into(),
        ));
    }
    let rounds = common.rounds(9);
    let mut rng = ChaCha20Rng::seed_from_u64(21);
    let (mut bls, mut coronas, mut pulsars) = (Vec::new(), Vec::new(), Vec::new());
    for &n in &sizes {
        let t = threshold(n);
        let dealing = bls_threshold::deal(t as u16, n as u16, &mut rng)
            .map_err(BenchError::setup("BLS deal"))?;
        bls.push(BlsCase { t, dealing });
        let (group, shares) = corona::scheme::trusted_dealer_keygen(t, n, &mut rng)
            .map_err(BenchError::setup("Corona keygen"))?;
        coronas.push(CoronaCase {
            t,
            group,
            signers: shares
                .into_iter()
                .map(corona::scheme::Signer::new)
                .collect(),
            sessions: 0,
            rng: ChaCha20Rng::seed_from_u64(n as u64),
        });
        pulsars.push(PulsarCommittee::deal(
            PULSAR_SHAPE.0,
            PULSAR_SHAPE.1,
            &mut rng,
            1000 + n as u64,
        )?);
    }
    let mut r = Rounds::new(Duration::from_millis(if common.smoke { 2 } else { 20 }));
    for (((&n, b), c), p) in sizes.iter().zip(&bls).zip(&mut coronas).zip(&mut pulsars) {
        let g = format!("n={n} t={}", threshold(n));
        r.add(&g, "bls", || b.sign());
        r.add(&g, "corona", || c.sign());
        r.add(&g, "pulsar (committee 3-of-4)", || p.sign(MESSAGE, CONTEXT));
    }
    eprintln!("sweep: {rounds} rounds over n = {sizes:?}");
    let series = r.run(rounds);
    let schemes = ["BLS", "Corona", "Pulsar (committee 3-of-4)"];
    let mut table = Table::new(
        format!(
            "Threshold signing cost against committee size (p50 ms over {rounds} rounds; t = n − \
             ⌊(n − 1)/3⌋; every party in one process)"
        ),
        &["scheme", "n", "t", "p50", "p95", "× BLS (same n)"],
    );
    let mut fits = Table::new(
        "Fitted cost per added participant (least squares over the sizes)",
        &[
            "scheme",
            "ms per added validator (n)",
            "ms per added signer (t)",
            "intercept ms",
        ],
    );
    let mut lines = Vec::new();
    let mut records = Vec::new();
    let mut fitted = serde_json::Map::new();
    let mut ratios = Vec::new();
    for (k, scheme) in schemes.iter().enumerate() {
        let mut by_n = Vec::new();
        let mut by_t = Vec::new();
        for (i, &n) in sizes.iter().enumerate() {
            let own = &series[i * schemes.len() + k];
            let rec = Record::from_series(own);
            // Pulsar signs with the node's committee at every n.
            let t = if k == 2 { PULSAR_SHAPE.0 } else { threshold(n) };
            let per_bls = (k > 0).then(|| {
                Ratio::paired(
                    &format!("n={n}: {scheme} / BLS"),
                    own,
                    &series[i * schemes.len()],
                )
            });
            table.row(vec![
                scheme.to_string(),
                n.to_string(),
                if k == 2 {
                    "3 (of 4)".into()
                } else {
                    t.to_string()
                },
                ms(rec.p50),
                ms(rec.p95),
                per_bls
                    .as_ref()
                    .map_or("baseline".into(), |r| ratio(r.value)),
            ]);
            ratios.extend(per_bls);
            by_n.push((n as f64, rec.p50));
            by_t.push((t as f64, rec.p50));
            let rec = rec.with("n", n).with("t", t);
            records.push(if k == 2 {
                rec.with("committee", PULSAR_SHAPE.1).with(
                    "sessions_per_signature",
                    pulsars[i].sessions_per_signature(),
                )
            } else {
                rec
            });
        }
        let per_n = fit_line(&by_n);
        let per_t = fit_line(&by_t);
        let cell = |f: Option<(f64, f64)>, i: usize| {
            f.map_or("-".into(), |(slope, intercept)| ms([slope, intercept][i]))
        };
        fits.row(vec![
            scheme.to_string(),
            cell(per_n, 0),
            cell(per_t, 0),
            cell(per_n, 1),
        ]);
        fitted.insert(
            scheme.to_string(),
            serde_json::json!({
                "ms_per_validator": per_n.map(|f| f.0),
                "ms_per_signer": per_t.map(|f| f.0),
                "intercept_ms": per_n.map(|f| f.1),
            }),
        );
        lines.push((scheme.to_string(), by_n));
    }
    Ok(Report {
        subcommand: "sweep".into(),
        title: "Threshold signing sweep".into(),
        smoke: common.smoke,
        settings: serde_json::json!({
            "sizes": sizes,
            "thresholds": sizes.iter().map(|&n| threshold(n)).collect::<Vec<_>>(),
            "rounds": rounds,
            "pulsar_committee": "3-of-4",
            "fits": fitted,
        }),
        tables: vec![table, fits],
        records,
        ratios,
        notes: vec![
            "BLS: t signature shares, Lagrange combination in G2, one verification of the result. \
             Corona: both rounds of t signers and the combine (which verifies)."
                .to_string(),
            format!(
                "Pulsar's parameters stop at 6 parties; above 4 validators the node signs Pulsar \
                 legs with a committee of 4 drawn by stake, so every n signs 3-of-4 and the \
                 differences between rows are restarts (a session restarts when a party's \
                 response is rejected): sessions per signature here {}.",
                sizes
                    .iter()
                    .zip(&pulsars)
                    .map(|(n, p)| format!("n={n}: {:.2}", p.sessions_per_signature()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ],
        plot: Plot::Lines {
            x_axis: "committee size n (t = n − ⌊(n − 1)/3⌋)".into(),
            y_axis: "milliseconds per signature (p50)".into(),
            series: lines,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::threshold;

    #[test]
    fn thresholds_are_the_node_quorum() {
        assert_eq!(
            [4, 10, 15, 20].map(threshold),
            [3, 7, 11, 14],
            "t = n − ⌊(n − 1)/3⌋"
        );
    }
}
