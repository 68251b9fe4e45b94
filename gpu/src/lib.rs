//! QuasarGPU adapter (docs/architecture.md §1, §7): the one place that batches ring NTTs, F_r NTTs and
//! MSMs from many callers onto the fastest backend present, without ever changing a result.
//!
//! `quasar-crypto` defines the seam, [`quasar_crypto::accel::BatchArithmetic`], and its CPU
//! reference, [`quasar_crypto::accel::CpuBackend`] (rayon across rows). This crate implements
//! the same trait with [`Dispatcher`], which stacks concurrent callers' ring requests into dense
//! per-workload batches for a backend (the Aegis study's rectangular scheduler) and falls back
//! to the CPU for any batch the backend fails. Lanes and provers take the trait, so they run the
//! same code with or without an accelerator.
//!
//! [`SimdCpuBackend`] is the production CPU backend: the ring transforms (ML-DSA, Corona,
//! ML-KEM) on SIMD lanes (AVX2 and FMA chosen at run time), the CPU reference for the rest.
//!
//! [`cuda::CudaBackend`] (feature `cuda`) runs the ring workloads on an NVIDIA GPU, with kernels
//! compiled by NVRTC when the backend opens (at node start) ([`kernels`] holds their source, their twiddle tables and
//! their CPU twin). Not built yet: MSM and F_r NTT kernels, the matrix-form (tensor-core) NTT,
//! and ML-KEM's ring.
//!
//! `unsafe` appears only where a safe wrapper cannot exist, each time with its argument: the
//! calls into the AVX2 builds of the CPU kernels and scans after the CPU reported AVX2 (`cpu::Isa`),
//! and in `cuda` the library probe and the kernel launches.
#![deny(unsafe_code)]

pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod dispatch;
pub mod kernels;

pub use cpu::SimdCpuBackend;
pub use dispatch::{DispatchConfig, Dispatcher, QueueKey, QueueStats};

use std::sync::Arc;

use quasar_crypto::accel::BatchArithmetic;

/// The arithmetic a node uses: the backend its lanes and provers call, and the dispatcher in
/// front of it when there is one (whose [`Dispatcher::stats`] the node exports as metrics).
#[derive(Clone)]
pub struct Arithmetic {
    /// What callers call: the dispatcher when there is one, else the backend itself.
    pub backend: Arc<dyn BatchArithmetic>,
    /// The dispatcher, when requests are stacked into batches.
    pub dispatcher: Option<Arc<Dispatcher>>,
}

/// The arithmetic a node uses on this machine. With the `cuda` feature and a device, the CUDA
/// backend behind a [`Dispatcher`] (default configuration), whose batches fall back to the CPU
/// when the device fails them. Otherwise [`SimdCpuBackend`], called directly, with no
/// dispatcher: on a CPU, stacking requests gains nothing (a row costs the same alone or in a
/// batch, and rows already spread over rayon's pool) and makes callers wait for their batch;
/// the `ntt` benchmark measures a dispatcher over the CPU reference at about half the
/// throughput of direct calls for 64 concurrent single-row callers.
pub fn best_available() -> Arithmetic {
    #[cfg(feature = "cuda")]
    match cuda::CudaBackend::open(0) {
        Ok(Some(gpu)) => {
            tracing::info!(
                device = gpu.device(),
                "arithmetic backend: CUDA behind a dispatcher"
            );
            let dispatcher = Arc::new(Dispatcher::new(Arc::new(gpu), DispatchConfig::default()));
            return Arithmetic {
                backend: dispatcher.clone(),
                dispatcher: Some(dispatcher),
            };
        }
        Ok(None) => tracing::info!("no CUDA driver, NVRTC or device: using the CPU backend"),
        Err(error) => tracing::warn!(%error, "CUDA backend failed to open: using the CPU backend"),
    }
    let cpu = SimdCpuBackend::new();
    tracing::info!(
        backend = cpu.name(),
        avx2 = cpu.uses_avx2(),
        "arithmetic backend"
    );
    Arithmetic {
        backend: Arc::new(cpu),
        dispatcher: None,
    }
}
