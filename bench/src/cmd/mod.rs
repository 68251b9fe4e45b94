//! The `quasar-bench` subcommands. Each builds its fixtures, times its workloads against their
//! baselines, and returns a [`Report`] that the binary prints and writes.

pub mod bls_batch;
pub mod cert;
pub mod finality;
pub mod lanes;
pub mod sweep;
pub mod zap;

use std::sync::Arc;

use quasar_crypto::accel::BatchArithmetic;

use crate::report::ReportError;

/// Why a subcommand failed.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Options out of range.
    #[error("invalid options: {0}")]
    Options(String),
    /// A fixture could not be built (keys, signatures, proofs).
    #[error("fixture setup failed: {0}")]
    Setup(String),
    /// The results could not be written.
    #[error(transparent)]
    Report(#[from] ReportError),
    /// `all` ran, but some subcommands failed.
    #[error("{0}")]
    Incomplete(String),
}

impl BenchError {
    /// A closure mapping any displayable error to [`BenchError::Setup`] naming `what`.
    pub fn setup<E: std::fmt::Display>(what: &'static str) -> impl Fn(E) -> BenchError {
        move |e| BenchError::Setup(format!("{what}: {e}"))
    }
}

/// Options every subcommand takes.
#[derive(Clone, Debug, clap::Args)]
pub struct Common {
    /// Tiny sizes and two rounds: checks that everything runs (CI), measures nothing useful.
    #[arg(long, global = true)]
    pub smoke: bool,
    /// Timing rounds: each workload is timed once per round (default: lanes 11, cert 9,
    /// bls-batch 9, sweep 9, zap 5; 2 with --smoke; finality runs each network once).
    #[arg(long, global = true, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rounds: Option<u32>,
}

impl Common {
    /// The rounds to run: `--rounds`, else 2 under `--smoke`, else `default`.
    pub fn rounds(&self, default: usize) -> usize {
        match self.rounds {
            Some(r) => r as usize,
            None if self.smoke => 2,
            None => default,
        }
    }
}

/// `values` without repeats, in first-seen order (a size given twice is measured once).
pub fn distinct<T: PartialEq>(values: Vec<T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(values.len());
    for v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// The GPU, when this build has the `cuda` feature and the machine a device.
#[derive(Clone, Default)]
pub struct Gpu {
    /// A description for reports.
    pub name: Option<String>,
    /// The QuasarGPU adapter in front of it.
    pub backend: Option<Arc<dyn BatchArithmetic>>,
}

impl Gpu {
    /// Looks for a GPU ([`quasar_gpu::best_available`]: a dispatcher exists only in front of a
    /// device).
    pub fn detect() -> Gpu {
        let arithmetic = quasar_gpu::best_available();
        match arithmetic.dispatcher {
            Some(_) => Gpu {
                name: Some(format!("{} backend", arithmetic.backend.name())),
                backend: Some(arithmetic.backend),
            },
            None => Gpu::default(),
        }
    }
}
