//! `quasar-bench bls-batch`: verifying n BLS signatures on one message (a round's votes or a
//! certificate's signers), against the flat baseline of n signatures verified one by one.
//!
//! Rows per n, all over the same n keys and signatures:
//! - `aggregate, cache warm`: the n compressed keys looked up in a warm
//!   [`PublicKeyCache`] (the same-message decompression cache), the n signatures aggregated,
//!   one pairing check (`fast_aggregate_verify`);
//! - `aggregate, no cache`: the same with every key decompressed and subgroup-checked
//!   (KeyValidate) on every call;
//! - `aggregate, validator-set table`: keys already decoded in the epoch's table
//!   (`lanes::bls::verify_aggregate` on a given aggregate signature, as for a certificate);
//! - `randomized batch`: `bls::batch_verify` of the n (key, message, signature) triples
//!   (random-linear-combination check over the cores, as for a burst of votes);
//! - `flat`: every signature decoded and verified on its own (the baseline).

use std::time::Duration;

use quasar_crypto::bls::{batch_verify, fast_aggregate_verify, PublicKey, Signature};
use quasar_crypto::bls_cache::PublicKeyCache;
use quasar_lanes::bls::{bitmap_from_signers, verify_aggregate};
use quasar_lanes::ValidatorSet;

use super::{distinct, BenchError, Common};
use crate::fixtures::BlsSigners;
use crate::measure::Rounds;
use crate::report::{ms, ratio, Plot, Ratio, Record, Report, Table};

const MESSAGE: &[u8] = b"quasar-bench bls-batch round digest";

/// The rows, in table order; the last is the baseline.
const ROWS: [&str; 5] = [
    "aggregate, cache warm",
    "aggregate, no cache",
    "aggregate, validator-set table",
    "randomized batch",
    "flat: one by one",
];

/// `bls-batch` options.
#[derive(Clone, Debug, clap::Args)]
pub struct Options {
    /// Signature counts (default 64,256,1024; smoke 8).
    #[arg(long, value_delimiter = ',')]
    pub sizes: Option<Vec<usize>>,
}

/// n signers' keys and signatures on [`MESSAGE`].
struct Case {
    n: usize,
    compressed: Vec<[u8; 48]>,
    keys: Vec<PublicKey>,
    signatures: Vec<Signature>,
    encoded: Vec<[u8; 96]>,
    set: ValidatorSet,
    bitmap: Vec<u8>,
    aggregate: [u8; 96],
    cache: PublicKeyCache,
}

impl Case {
    fn new(n: usize) -> Result<Case, BenchError> {
        let signers = BlsSigners::new(n, 0x3c, MESSAGE)?;
        let (keys, signatures) = (signers.keys, signers.signatures);
        let case = Case {
            n,
            compressed: keys.iter().map(PublicKey::to_bytes).collect(),
            encoded: signatures.iter().map(Signature::to_bytes).collect(),
            set: signers.set,
            bitmap: bitmap_from_signers(0..n, n),
            aggregate: Signature::aggregate(&signatures)
                .map_err(BenchError::setup("aggregate"))?
                .to_bytes(),
            cache: PublicKeyCache::new(),
            keys,
            signatures,
        };
        case.cached();
        Ok(case)
    }

    /// Keys from the cache, signatures aggregated, one pairing check.
    fn cached(&self) {
        let keys: Vec<PublicKey> = self
            .compressed
            .iter()
            .map(|b| self.cache.get_or_decode(b).expect("a valid key"))
            .collect();
        self.aggregate_and_check(&keys);
    }

    /// Every key decoded with its checks, then as [`Case::cached`].
    fn uncached(&self) {
        let keys: Vec<PublicKey> = self
            .compressed
            .iter()
            .map(|b| PublicKey::from_bytes(b).expect("a valid key"))
            .collect();
        self.aggregate_and_check(&keys);
    }

    fn aggregate_and_check(&self, keys: &[PublicKey]) {
        let signatures: Vec<Signature> = self
            .encoded
            .iter()
            .map(|s| Signature::from_bytes(s).expect("a valid signature"))
            .collect();
        let aggregate = Signature::aggregate(&signatures).expect("n > 0");
        fast_aggregate_verify(keys, MESSAGE, &aggregate).expect("the aggregate verifies");
    }

    fn table(&self) {
        verify_aggregate(&self.set, &self.bitmap, MESSAGE, &self.aggregate)
            .expect("the aggregate verifies");
    }

    fn batch(&self) {
        let items: Vec<(&PublicKey, &[u8], &Signature)> = self
            .keys
            .iter()
            .zip(&self.signatures)
            .map(|(k, s)| (k, MESSAGE, s))
            .collect();
        batch_verify(&items).expect("the batch verifies");
    }

    fn flat(&self) {
        for (key, sig) in self.keys.iter().zip(&self.encoded) {
            let sig = Signature::from_bytes(sig).expect("a valid signature");
            key.verify(MESSAGE, &sig).expect("the signature verifies");
        }
    }
}

/// Runs the bls-batch bench.
pub fn run(options: &Options, common: &Common) -> Result<Report, BenchError> {
    let sizes = options.sizes.clone().unwrap_or_else(|| {
        if common.smoke {
            vec![8]
        } else {
            vec![64, 256, 1024]
        }
    });
    let sizes = distinct(sizes);
    if sizes.iter().any(|&n| n == 0 || n > 4096) {
        return Err(BenchError::Options(
            "signature counts must be between 1 and 4096 (the cache holds about 4096 keys)".into(),
        ));
    }
    let rounds = common.rounds(9);
    let cases: Vec<Case> = sizes
        .iter()
        .map(|&n| Case::new(n))
        .collect::<Result<_, _>>()?;
    let mut r = Rounds::new(Duration::from_millis(if common.smoke { 2 } else { 20 }));
    for case in &cases {
        let g = format!("n={}", case.n);
        r.add(&g, ROWS[0], || case.cached());
        r.add(&g, ROWS[1], || case.uncached());
        r.add(&g, ROWS[2], || case.table());
        r.add(&g, ROWS[3], || case.batch());
        r.add(&g, ROWS[4], || case.flat());
    }
    eprintln!("bls-batch: {rounds} rounds");
    let series = r.run(rounds);
    let mut table = Table::new(
        format!(
            "Same-message BLS verification of n signatures (median ms over {rounds} rounds; \
             speedup = flat / row, per-round median)"
        ),
        &[
            "n",
            "method",
            "p50",
            "p95",
            "µs per signature",
            "speedup over flat",
        ],
    );
    let mut ratios = Vec::new();
    let mut series_by_n = Vec::new();
    for (case, rows) in cases.iter().zip(series.chunks(ROWS.len())) {
        let flat = &rows[ROWS.len() - 1];
        let mut points = Vec::new();
        for s in rows {
            let rec = Record::from_series(s);
            let speedup = Ratio::paired(&format!("n={}: flat / {}", case.n, s.name), flat, s);
            table.row(vec![
                case.n.to_string(),
                s.name.clone(),
                ms(rec.p50),
                ms(rec.p95),
                format!("{:.1}", rec.p50 * 1e3 / case.n as f64),
                if std::ptr::eq(s, flat) {
                    "baseline".into()
                } else {
                    ratio(speedup.value)
                },
            ]);
            points.push((case.n, rec.p50));
            if !std::ptr::eq(s, flat) {
                ratios.push(speedup);
            }
        }
        series_by_n.push(points);
    }
    let lines = ROWS
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let pts = series_by_n
                .iter()
                .filter_map(|p| p.get(i))
                .map(|&(n, v)| (n as f64, v))
                .collect();
            (name.to_string(), pts)
        })
        .collect();
    let cache = cases
        .iter()
        .map(|c| c.cache.stats())
        .fold((0, 0), |acc, s| (acc.0 + s.hits, acc.1 + s.misses));
    Ok(Report {
        subcommand: "bls-batch".into(),
        title: "BLS same-message batching".into(),
        smoke: common.smoke,
        settings: serde_json::json!({ "sizes": sizes, "rounds": rounds }),
        tables: vec![table],
        records: series.iter().map(Record::from_series).collect(),
        ratios,
        notes: vec![
            format!(
                "Pubkey cache over the run: {} hits, {} misses (the misses are the first \
                 lookups of each key).",
                cache.0, cache.1
            ),
            "`no cache` pays a decompression and a G1 subgroup check per key; `validator-set \
             table` is how a node verifies a certificate of known validators (keys decoded \
             once per epoch); `randomized batch` checks distinct signatures without trusting \
             an aggregate, as for a burst of votes."
                .into(),
        ],
        plot: Plot::Lines {
            x_axis: "signatures (n)".into(),
            y_axis: "milliseconds (p50)".into(),
            series: lines,
        },
    })
}
