//! `quasar-bench`: the performance report of a Quasar validator (lanes, certificates, BLS
//! batching, threshold signing sweep), as Markdown tables on stdout and JSON records and SVG
//! plots in a results directory. `quasar-bench --help` lists the subcommands.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use clap::{Parser, Subcommand};
use quasar_bench::cmd::{self, BenchError, Common, Gpu};
use quasar_bench::report::{Machine, Report};

#[derive(Parser)]
#[command(
    name = "quasar-bench",
    version,
    about = "Quasar's performance report: every lane, whole certificates, BLS batching and \
             threshold signing, each against a baseline measured in the same run"
)]
struct Cli {
    /// Directory for the results (S.md, S.json, S.svg per subcommand S; report.md for `all`).
    #[arg(long, global = true, default_value = "bench-results")]
    out: PathBuf,
    #[command(flatten)]
    common: Common,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Per-lane costs: BLS aggregate, ML-DSA-65, Corona, Groth16, Pulsar, Magnetar.
    Lanes(cmd::lanes::Options),
    /// Whole QuasarCert verification per profile and validator count, with sizes.
    Cert(cmd::cert::Options),
    /// Same-message BLS verification with and without the pubkey cache, against one by one.
    BlsBatch(cmd::bls_batch::Options),
    /// ZAP against protobuf (prost) over loopback QUIC: 1, 20 and 50 connections.
    Zap(cmd::zap::Options),
    /// Distributed finality: validators and their thresholdd over network namespaces with
    /// netem delay, per scale and profile.
    Finality(cmd::finality::Options),
    /// Threshold signing cost against committee size, per scheme.
    Sweep(cmd::sweep::Options),
    /// Every subcommand at its default sizes, then one Markdown report (report.md).
    All(AllOptions),
}

/// What `all` passes on to `finality`; every other size is the subcommands' default.
#[derive(clap::Args)]
struct AllOptions {
    /// The `quasar-node` binary for `finality` (its `thresholdd` must sit beside it); default:
    /// the one next to this executable.
    #[arg(long)]
    node_bin: Option<PathBuf>,
    /// Run `finality` on this host's loopback (no namespaces).
    #[arg(long)]
    loopback: bool,
}

/// Runs one subcommand and writes its results; returns its Markdown.
fn run_one(
    name: &str,
    out: &Path,
    gpu: &Gpu,
    run: impl FnOnce() -> Result<Report, BenchError>,
) -> Result<String, BenchError> {
    let started_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let started = Instant::now();
    quasar_bench::report::check_writable(out)?;
    let report = run()?;
    let machine = Machine::detect(gpu.name.clone());
    let markdown = report.write(out, &machine, started_unix, started.elapsed().as_secs_f64())?;
    eprintln!("quasar-bench {name}: results in {}", out.display());
    println!("{markdown}");
    Ok(markdown)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let gpu = Gpu::detect();
    let common = &cli.common;
    let out = cli.out.as_path();
    let result = match &cli.command {
        Command::Lanes(o) => run_one("lanes", out, &gpu, || cmd::lanes::run(o, common, &gpu)),
        Command::Cert(o) => run_one("cert", out, &gpu, || cmd::cert::run(o, common, &gpu)),
        Command::BlsBatch(o) => run_one("bls-batch", out, &gpu, || cmd::bls_batch::run(o, common)),
        Command::Sweep(o) => run_one("sweep", out, &gpu, || cmd::sweep::run(o, common)),
        Command::Zap(o) => run_one("zap", out, &gpu, || cmd::zap::run(o, common)),
        Command::Finality(o) => run_one("finality", out, &gpu, || cmd::finality::run(o, common)),
        Command::All(o) => all(o, out, common, &gpu),
    };
    match result {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("quasar-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Every subcommand at its defaults; `report.md` holds every section and a line for each
/// failure. Fails when any subcommand failed.
fn all(options: &AllOptions, out: &Path, common: &Common, gpu: &Gpu) -> Result<String, BenchError> {
    quasar_bench::report::check_writable(out)?;
    let started = Instant::now();
    let mut sections = Vec::new();
    let mut failures = Vec::new();
    let mut step = |name: &str, result: Result<String, BenchError>| match result {
        Ok(markdown) => sections.push(markdown),
        Err(e) => {
            eprintln!("quasar-bench all: {name} failed: {e}");
            failures.push(format!("- `{name}`: {e}"));
        }
    };
    step(
        "lanes",
        run_one("lanes", out, gpu, || {
            cmd::lanes::run(&default_args(), common, gpu)
        }),
    );
    step(
        "cert",
        run_one("cert", out, gpu, || {
            cmd::cert::run(&default_args(), common, gpu)
        }),
    );
    step(
        "bls-batch",
        run_one("bls-batch", out, gpu, || {
            cmd::bls_batch::run(&default_args(), common)
        }),
    );
    step(
        "zap",
        run_one("zap", out, gpu, || cmd::zap::run(&default_args(), common)),
    );
    step(
        "finality",
        run_one("finality", out, gpu, || {
            let finality = cmd::finality::Options {
                node_bin: options.node_bin.clone(),
                loopback: options.loopback,
                ..default_args()
            };
            cmd::finality::run(&finality, common)
        }),
    );
    step(
        "sweep",
        run_one("sweep", out, gpu, || {
            cmd::sweep::run(&default_args(), common)
        }),
    );
    let machine = Machine::detect(gpu.name.clone());
    let mut report = format!(
        "# Quasar performance report\n\nMachine: {}. Total run time {:.0} s{}.\n\n",
        machine.describe(),
        started.elapsed().as_secs_f64(),
        if common.smoke { " (smoke sizes)" } else { "" }
    );
    report.push_str(&sections.join("\n"));
    if !failures.is_empty() {
        report.push_str("\n## Not measured\n\n");
        report.push_str(&failures.join("\n"));
        report.push('\n');
    }
    let path = out.join("report.md");
    std::fs::create_dir_all(out)
        .and_then(|()| std::fs::write(&path, &report))
        .map_err(|source| {
            BenchError::Report(quasar_bench::report::ReportError::Io {
                path: path.clone(),
                source,
            })
        })?;
    eprintln!("quasar-bench all: report in {}", path.display());
    if failures.is_empty() {
        Ok(report)
    } else {
        Err(BenchError::Incomplete(format!(
            "{} of 6 subcommands did not run (see {})",
            failures.len(),
            path.display()
        )))
    }
}

/// A subcommand's options at their defaults (no flags given).
fn default_args<T: clap::FromArgMatches + clap::Args>() -> T {
    let command = T::augment_args(clap::Command::new("defaults"));
    let matches = command.get_matches_from(["defaults"]);
    T::from_arg_matches(&matches).expect("every option has a default")
}
