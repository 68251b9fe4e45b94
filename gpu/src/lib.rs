//! QuasarGPU adapter (DESIGN.md §1, §7): the one place that batches ring NTTs, F_r NTTs and
//! MSMs from many callers onto the fastest backend present, without ever changing a result.
//!
//! `quasar-crypto` defines the seam, [`quasar_crypto::accel::BatchArithmetic`], and its CPU
//! reference, [`quasar_crypto::accel::CpuBackend`] (rayon across rows). This crate implements
//! the same trait with [`Dispatcher`], which stacks concurrent callers' ring requests into dense
//! per-workload batches for a backend (the Aegis study's rectangular scheduler) and falls back
//! to the CPU for any batch the backend fails. Lanes and provers take the trait, so they run the
//! same code with or without an accelerator.
//!
//! [`SimdCpuBackend`] is the production CPU backend: ML-DSA's transforms on SIMD lanes (AVX2
//! chosen at run time), the CPU reference for the rest.
//!
//! Not built yet: the CUDA backend (`cuda` feature, cudarc/NVRTC kernels).
//!
//! `unsafe` appears once: the call into the AVX2 build of the kernels after the CPU reported
//! AVX2 (`cpu::Isa::run`).
#![deny(unsafe_code)]

pub mod cpu;
pub mod dispatch;

pub use cpu::SimdCpuBackend;
pub use dispatch::{DispatchConfig, Dispatcher, QueueKey, QueueStats};

use std::sync::Arc;

use quasar_crypto::accel::BatchArithmetic;

/// The arithmetic backend a node uses on this machine: today [`SimdCpuBackend`], called
/// directly. On a CPU, stacking requests through a [`Dispatcher`] gains nothing (a row costs the
/// same alone or in a batch, and rows already spread over rayon's pool) and makes callers wait
/// for their batch: the `ntt` benchmark measures it at about half the throughput of the direct
/// calls for 64 concurrent single-row callers. A device backend will be returned behind a
/// dispatcher.
pub fn best_available() -> Arc<dyn BatchArithmetic> {
    let cpu = SimdCpuBackend::new();
    tracing::info!(
        backend = cpu.name(),
        avx2 = cpu.uses_avx2(),
        "arithmetic backend"
    );
    Arc::new(cpu)
}
