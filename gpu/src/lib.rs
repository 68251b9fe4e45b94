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
//! Not built yet: the CUDA backend (`cuda` feature, cudarc/NVRTC kernels) and the AVX2 kernels
//! of the CPU backend; until then the dispatcher's backend is the CPU reference.
#![forbid(unsafe_code)]

pub mod dispatch;

pub use dispatch::{DispatchConfig, Dispatcher, QueueKey, QueueStats};
