//! The CUDA backend (feature `cuda`): Corona and ML-DSA ring NTTs and pointwise products on an
//! NVIDIA GPU, through cudarc with the driver and NVRTC loaded at run time.
//!
//! [`CudaBackend::open`] finds the driver and NVRTC libraries without panicking (cudarc's
//! `is_culib_present`), answers `Ok(None)` on a machine without them or without a device,
//! compiles [`crate::kernels::SOURCE`] with NVRTC, and uploads each class's twiddle tables
//! once (they stay resident). A call then uploads its rows, runs one block per row, and
//! downloads them; rows that failed the host's range check are left as they were. Every driver
//! error becomes [`AccelError::Device`] for the call (logged with the driver's message), which
//! a [`crate::Dispatcher`] turns into a CPU fallback for that batch. F_r NTTs and MSMs have no
//! kernels yet: they answer [`AccelError::Unsupported`].
//!
//! The kernels' algorithm and tables are checked on the CPU in every test run through their
//! twin ([`crate::kernels::twin`]); the device itself is checked by `tests/cuda.rs`, which runs
//! on a lent GPU (`gpu/scripts/device-check.sh`) and is ignored elsewhere.

use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DriverError, LaunchConfig, PushKernelArg,
};
use quasar_crypto::accel::{
    check_call, row_results, AccelError, BatchArithmetic, NttClass, RingOp, RowResults,
};

use crate::kernels::{RingTables, NTT_THREADS, SOURCE};

const N: usize = 256;
const NAME: &str = "cuda";

/// Why a CUDA backend could not be opened on a machine that has the libraries.
#[derive(Debug, thiserror::Error)]
pub enum CudaError {
    /// A driver call failed (context, module, memory).
    #[error("CUDA driver: {0}")]
    Driver(#[from] DriverError),
    /// NVRTC refused the kernels.
    #[error("NVRTC: {0}")]
    Compile(String),
}

/// One class's tables on the device.
struct DeviceTables {
    class: NttClass,
    modulus: u64,
    n_inv: u64,
    forward: CudaSlice<u64>,
    inverse: CudaSlice<u64>,
}

/// The CUDA backend (see the module docs).
pub struct CudaBackend {
    device: String,
    stream: Arc<CudaStream>,
    forward: CudaFunction,
    inverse: CudaFunction,
    pointwise: CudaFunction,
    tables: Vec<DeviceTables>,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBackend")
            .field("device", &self.device)
            .finish_non_exhaustive()
    }
}

impl CudaBackend {
    /// The backend on device `ordinal`, or `Ok(None)` when this machine has no CUDA driver
    /// library, no NVRTC library, or fewer devices. Errors: a driver call failed, or NVRTC
    /// refused the kernels.
    pub fn open(ordinal: usize) -> Result<Option<CudaBackend>, CudaError> {
        // SAFETY: both calls only try to load a shared library and report whether it loaded.
        #[allow(unsafe_code)]
        let present = unsafe {
            cudarc::driver::sys::is_culib_present() && cudarc::nvrtc::sys::is_culib_present()
        };
        if !present {
            return Ok(None);
        }
        let devices = usize::try_from(CudaContext::device_count()?).unwrap_or(0);
        if ordinal >= devices {
            return Ok(None);
        }
        let ctx = CudaContext::new(ordinal)?;
        let device = ctx.name()?;
        let ptx =
            cudarc::nvrtc::compile_ptx(SOURCE).map_err(|e| CudaError::Compile(e.to_string()))?;
        let module = ctx.load_module(ptx)?;
        let stream = ctx.default_stream();
        // Classes without tables (a ring the kernels do not handle) stay unsupported.
        let tables = NttClass::ALL
            .into_iter()
            .filter_map(|class| Some((class, RingTables::of(class)?)))
            .map(|(class, t)| {
                Ok(DeviceTables {
                    class,
                    modulus: t.modulus,
                    n_inv: t.n_inv,
                    forward: stream.clone_htod(&t.forward)?,
                    inverse: stream.clone_htod(&t.inverse)?,
                })
            })
            .collect::<Result<Vec<_>, DriverError>>()?;
        Ok(Some(CudaBackend {
            device,
            forward: module.load_function("ntt_forward")?,
            inverse: module.load_function("ntt_inverse")?,
            pointwise: module.load_function("pointwise")?,
            stream,
            tables,
        }))
    }

    /// The device's name, as the driver reports it.
    pub fn device(&self) -> &str {
        &self.device
    }

    /// Uploads, runs and downloads one batch; the error names the stage that failed.
    fn launch(
        &self,
        tables: &DeviceTables,
        op: RingOp,
        rows: &[u64],
        rhs: &[u64],
    ) -> Result<Vec<u64>, (&'static str, DriverError)> {
        let stage = |stage: &'static str| move |e: DriverError| (stage, e);
        let mut values = self.stream.clone_htod(rows).map_err(stage("upload"))?;
        let count = u32::try_from(rows.len() / N).unwrap_or(u32::MAX);
        let q = tables.modulus;
        match op {
            RingOp::Forward | RingOp::Inverse => {
                let config = LaunchConfig {
                    grid_dim: (count, 1, 1),
                    block_dim: (NTT_THREADS, 1, 1),
                    shared_mem_bytes: 0,
                };
                let mut launch = self.stream.launch_builder(if op == RingOp::Forward {
                    &self.forward
                } else {
                    &self.inverse
                });
                launch.arg(&mut values);
                if op == RingOp::Forward {
                    launch.arg(&tables.forward);
                } else {
                    launch.arg(&tables.inverse);
                    launch.arg(&tables.n_inv);
                }
                launch.arg(&q);
                launch.arg(&count);
                // SAFETY: the arguments match the kernel's parameters in number, order and type
                // (`ntt.cu`): the rows (count·256 u64), the 256-entry table, [n_inv,] q and
                // count; each block touches only its own row.
                #[allow(unsafe_code)]
                unsafe { launch.launch(config) }.map_err(stage("launch"))?;
            }
            RingOp::Pointwise => {
                let other = self.stream.clone_htod(rhs).map_err(stage("upload"))?;
                let len = rows.len() as u64;
                let threads = 256u32;
                let blocks =
                    u32::try_from(rows.len().div_ceil(threads as usize)).unwrap_or(u32::MAX);
                let config = LaunchConfig {
                    grid_dim: (blocks, 1, 1),
                    block_dim: (threads, 1, 1),
                    shared_mem_bytes: 0,
                };
                let mut launch = self.stream.launch_builder(&self.pointwise);
                launch.arg(&mut values).arg(&other).arg(&q).arg(&len);
                // SAFETY: as above: lhs and rhs of `len` u64 each, q, len; thread i touches
                // element i only, and only below len.
                #[allow(unsafe_code)]
                unsafe { launch.launch(config) }.map_err(stage("launch"))?;
            }
        }
        self.stream.clone_dtoh(&values).map_err(stage("download"))
    }
}

impl BatchArithmetic for CudaBackend {
    fn name(&self) -> &'static str {
        NAME
    }

    /// Host range checks, upload, one launch, download, then the valid rows copied back.
    fn ring(
        &self,
        class: NttClass,
        op: RingOp,
        rows: &mut [u64],
        rhs: &[u64],
    ) -> Result<RowResults, AccelError> {
        check_call(class, op, rows, rhs)?;
        let unsupported = AccelError::Unsupported {
            backend: NAME,
            workload: quasar_crypto::accel::Workload::Ntt(class),
        };
        let tables = self
            .tables
            .iter()
            .find(|t| t.class == class)
            .ok_or(unsupported)?;
        let results = row_results(class, op, rows, rhs);
        if rows.is_empty() {
            return Ok(results);
        }
        let computed = self
            .launch(tables, op, rows, rhs)
            .map_err(|(stage, error)| {
                tracing::warn!(device = %self.device, stage, %error, "CUDA call failed");
                AccelError::Device {
                    backend: NAME,
                    stage,
                }
            })?;
        for ((row, out), result) in rows
            .chunks_exact_mut(N)
            .zip(computed.chunks_exact(N))
            .zip(&results)
        {
            if result.is_ok() {
                row.copy_from_slice(out);
            }
        }
        Ok(results)
    }

    fn forward_ntt(&self, class: NttClass, rows: &mut [u64]) -> Result<RowResults, AccelError> {
        self.ring(class, RingOp::Forward, rows, &[])
    }

    fn inverse_ntt(&self, class: NttClass, rows: &mut [u64]) -> Result<RowResults, AccelError> {
        self.ring(class, RingOp::Inverse, rows, &[])
    }

    fn pointwise_mul(
        &self,
        class: NttClass,
        lhs: &mut [u64],
        rhs: &[u64],
    ) -> Result<RowResults, AccelError> {
        self.ring(class, RingOp::Pointwise, lhs, rhs)
    }
}
