//! The ratio summary the criterion benches print after their groups: workloads timed back to back
//! in rounds (so load from other processes falls on both sides of a ratio alike), medians over the
//! rounds, each ratio checked against its target, printed as Markdown tables and written as JSON
//! next to criterion's reports.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::Criterion;

/// Named series of samples; the summary reports their medians.
#[derive(Default)]
pub struct Samples(Vec<(&'static str, Vec<f64>)>);

impl Samples {
    /// Adds `value` to the series `name`.
    pub fn push(&mut self, name: &'static str, value: f64) {
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some((_, values)) => values.push(value),
            None => self.0.push((name, vec![value])),
        }
    }

    /// The median of every series, in insertion order.
    pub fn medians(&self) -> Vec<(&'static str, f64)> {
        self.0
            .iter()
            .map(|(name, values)| {
                let mut sorted = values.clone();
                sorted.sort_by(f64::total_cmp);
                (
                    *name,
                    sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN),
                )
            })
            .collect()
    }
}

/// Seconds per call of `work`, over `calls` calls (its result is kept from the optimizer).
pub fn time<T>(calls: u32, mut work: impl FnMut() -> T) -> f64 {
    let start = Instant::now();
    for _ in 0..calls {
        std::hint::black_box(work());
    }
    start.elapsed().as_secs_f64() / f64::from(calls)
}

/// Where criterion writes its reports: `$CRITERION_HOME`, else `$CARGO_TARGET_DIR/criterion`,
/// else the workspace's `target/criterion`.
pub fn criterion_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(home);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join("criterion")
}

/// A reported ratio: its name, its target (if any), and whether the ratio must be at most the
/// target (else at least).
pub type Target = (&'static str, Option<f64>, bool);

/// Prints the medians of `values` (in `unit`, e.g. "ms" or "µs", with `decimals` digits) and of
/// `ratios` against `targets`, and writes them to `criterion_dir()/file` as JSON
/// (`{cores, median_<unit_key>, ratios: {name: {ratio, target, bound, met}}}`).
pub fn report(
    title: &str,
    (unit, unit_key, decimals): (&str, &str, usize),
    values: &Samples,
    ratios: &Samples,
    targets: &[Target],
    file: &str,
) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("\n{title} summary ({cores} cores; medians over rounds, ratios paired per round)");
    println!("| workload | median {unit} |\n|---|---|");
    let mut medians = serde_json::Map::new();
    for (name, value) in values.medians() {
        println!("| {name} | {value:.decimals$} |");
        medians.insert(name.to_string(), serde_json::json!(value));
    }
    println!("\n| ratio | measured | target | met |\n|---|---|---|---|");
    let mut results = serde_json::Map::new();
    let ratio_medians = ratios.medians();
    for &(name, target, at_most) in targets {
        let Some(&(_, value)) = ratio_medians.iter().find(|(n, _)| *n == name) else {
            continue;
        };
        let bound = if at_most { "<=" } else { ">=" };
        let met = target.map(|t| if at_most { value <= t } else { value >= t });
        let (target_text, verdict) = match (target, met) {
            (Some(t), Some(true)) => (format!("{bound} {t}"), "yes"),
            (Some(t), _) => (format!("{bound} {t}"), "NO"),
            (None, _) => ("-".to_string(), "-"),
        };
        println!("| {name} | {value:.2} | {target_text} | {verdict} |");
        results.insert(
            name.to_string(),
            serde_json::json!({ "ratio": value, "target": target, "bound": bound, "met": met }),
        );
    }
    let mut report = serde_json::Map::new();
    report.insert("cores".into(), serde_json::json!(cores));
    report.insert(
        format!("median_{unit_key}"),
        serde_json::Value::Object(medians),
    );
    report.insert("ratios".into(), serde_json::Value::Object(results));
    let dir = criterion_dir();
    let out = dir.join(file);
    let written = serde_json::to_vec_pretty(&serde_json::Value::Object(report))
        .map_err(std::io::Error::other)
        .and_then(|bytes| std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&out, bytes)));
    match written {
        Ok(()) => println!("written to {}", out.display()),
        Err(e) => eprintln!("could not write {}: {e}", out.display()),
    }
}

/// Runs a bench with a summary: criterion with small samples (the whole run stays a few minutes;
/// command-line options still override), the `groups`, criterion's final summary, then
/// `summary` — skipped when cargo runs the benches as tests (`--test`) or lists them.
pub fn run_with_summary(groups: impl FnOnce(&mut Criterion), summary: impl FnOnce()) {
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    groups(&mut c);
    c.final_summary();
    if !std::env::args().any(|a| a == "--test" || a == "--list") {
        summary();
    }
}
