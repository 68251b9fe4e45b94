//! The CUDA backend on a real device against the CPU reference: every class with kernels and
//! every operation on
//! random, all-zero, all-(q−1) and single-spike rows, batch sizes 1..4096; bad rows failing
//! alone; and the backend behind a dispatcher. These tests need a GPU: they are ignored in
//! ordinary runs (reported as ignored, never as passed) and run by
//! `gpu/scripts/device-check.sh` with `--ignored`, which fails when no device is found.
#![cfg(feature = "cuda")]

mod common;

use std::sync::Arc;
use std::time::Duration;

use quasar_crypto::accel::{AccelError, BatchArithmetic, CpuBackend, NttClass};
use quasar_gpu::cuda::CudaBackend;
use quasar_gpu::kernels::RingTables;
use quasar_gpu::{DispatchConfig, Dispatcher};

use common::{mixed_rows, DEGREE};

fn device() -> CudaBackend {
    match CudaBackend::open(0) {
        Ok(Some(backend)) => {
            println!("device: {}", backend.device());
            backend
        }
        Ok(None) => panic!("no CUDA driver, NVRTC or device on this machine"),
        Err(e) => panic!("CUDA backend failed to open: {e}"),
    }
}

#[test]
#[ignore = "needs a CUDA device: gpu/scripts/device-check.sh"]
fn every_kernel_equals_the_reference_for_batches_of_1_to_4096() {
    let gpu = device();
    for class in NttClass::ALL {
        if RingTables::of(class).is_none() {
            // No kernels for this ring: the backend refuses it as a whole.
            let mut rows = mixed_rows(class, 2, 1);
            assert!(matches!(
                gpu.forward_ntt(class, &mut rows),
                Err(AccelError::Unsupported { .. })
            ));
            continue;
        }
        for rows in [1, 2, 3, 63, 64, 65, 1000, 4096] {
            let input = mixed_rows(class, rows, rows as u64);
            let (mut dev, mut cpu) = (input.clone(), input.clone());
            assert_eq!(
                gpu.forward_ntt(class, &mut dev).unwrap(),
                CpuBackend.forward_ntt(class, &mut cpu).unwrap()
            );
            assert_eq!(dev, cpu, "{class:?} forward, {rows} rows");
            let other = mixed_rows(class, rows, 9 * rows as u64);
            let (mut p, mut r) = (dev.clone(), cpu.clone());
            gpu.pointwise_mul(class, &mut p, &other).unwrap();
            CpuBackend.pointwise_mul(class, &mut r, &other).unwrap();
            assert_eq!(p, r, "{class:?} pointwise, {rows} rows");
            gpu.inverse_ntt(class, &mut dev).unwrap();
            CpuBackend.inverse_ntt(class, &mut cpu).unwrap();
            assert_eq!(dev, cpu, "{class:?} inverse, {rows} rows");
            assert_eq!(dev, input);
        }
    }
}

#[test]
#[ignore = "needs a CUDA device: gpu/scripts/device-check.sh"]
fn a_bad_row_fails_alone_on_the_device() {
    let gpu = device();
    let class = NttClass::Corona;
    let q = class.modulus();
    let mut input = mixed_rows(class, 5, 1);
    input[2 * DEGREE + 3] = q;
    let (mut dev, mut cpu) = (input.clone(), input.clone());
    let results = gpu.forward_ntt(class, &mut dev).unwrap();
    assert_eq!(results, CpuBackend.forward_ntt(class, &mut cpu).unwrap());
    assert_eq!(dev, cpu);
    assert!(matches!(
        results[2],
        Err(AccelError::CoefficientOutOfRange {
            row: 2,
            index: 3,
            ..
        })
    ));
}

#[test]
#[ignore = "needs a CUDA device: gpu/scripts/device-check.sh"]
fn the_device_behind_a_dispatcher_serves_many_threads() {
    let d = Dispatcher::new(
        Arc::new(device()),
        DispatchConfig {
            max_batch_rows: 256,
            deadline: Duration::from_micros(200),
        },
    );
    std::thread::scope(|s| {
        for t in 0..32u64 {
            let d = &d;
            s.spawn(move || {
                for i in 0..20 {
                    let class = NttClass::ALL[(t as usize + i) % 2];
                    let rows = mixed_rows(class, 1 + i % 3, t * 100 + i as u64);
                    let (mut dev, mut cpu) = (rows.clone(), rows);
                    d.forward_ntt(class, &mut dev).unwrap();
                    CpuBackend.forward_ntt(class, &mut cpu).unwrap();
                    assert_eq!(dev, cpu);
                }
            });
        }
    });
    let fallbacks: u64 = d.stats().iter().map(|(_, s)| s.fallbacks).sum();
    assert_eq!(fallbacks, 0, "no batch fell back to the CPU");
}
