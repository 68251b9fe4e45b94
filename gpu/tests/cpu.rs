//! The production CPU backend against the CPU reference, bit for bit: both builds of its
//! kernels (AVX2 where this CPU has it, and the portable one), every class and operation, on
//! random, all-zero, all-(q−1) and single-spike rows, batch sizes 1..4096 (including sizes that
//! leave a group of lanes partly empty), and a batch with out-of-range rows.

mod common;

use quasar_crypto::accel::{AccelError, BatchArithmetic, CpuBackend, NttClass};
use quasar_gpu::cpu::LANES;
use quasar_gpu::SimdCpuBackend;

use common::{mixed_rows, DEGREE};

fn backends() -> Vec<SimdCpuBackend> {
    let detected = SimdCpuBackend::new();
    println!("AVX2 kernels: {}", detected.uses_avx2());
    vec![detected, SimdCpuBackend::portable()]
}

#[test]
fn every_build_equals_the_reference_for_batches_of_1_to_4096() {
    for backend in backends() {
        for class in NttClass::ALL {
            for rows in [1, 2, LANES - 1, LANES, LANES + 1, 63, 64, 1000, 4096] {
                let input = mixed_rows(class, rows, rows as u64);
                let (mut fast, mut reference) = (input.clone(), input.clone());
                assert_eq!(
                    backend.forward_ntt(class, &mut fast).unwrap(),
                    CpuBackend.forward_ntt(class, &mut reference).unwrap()
                );
                assert_eq!(
                    fast, reference,
                    "{backend:?} {class:?} forward, {rows} rows"
                );
                assert_eq!(
                    backend.inverse_ntt(class, &mut fast).unwrap(),
                    CpuBackend.inverse_ntt(class, &mut reference).unwrap()
                );
                assert_eq!(
                    fast, reference,
                    "{backend:?} {class:?} inverse, {rows} rows"
                );
                assert_eq!(fast, input, "inverse ∘ forward");
                let other = mixed_rows(class, rows, 7 * rows as u64);
                let (mut p, mut r) = (input.clone(), input.clone());
                backend.pointwise_mul(class, &mut p, &other).unwrap();
                CpuBackend.pointwise_mul(class, &mut r, &other).unwrap();
                assert_eq!(p, r);
            }
        }
    }
}

#[test]
fn out_of_range_rows_fail_alone_and_stay_unchanged() {
    for backend in backends() {
        let class = NttClass::MlDsa;
        let q = class.modulus();
        let mut input = mixed_rows(class, 11, 3);
        input[3 * DEGREE + 5] = q;
        input[9 * DEGREE] = u64::MAX;
        let (mut fast, mut reference) = (input.clone(), input.clone());
        let results = backend.forward_ntt(class, &mut fast).unwrap();
        assert_eq!(
            results,
            CpuBackend.forward_ntt(class, &mut reference).unwrap()
        );
        assert_eq!(fast, reference);
        assert_eq!(
            results[3],
            Err(AccelError::CoefficientOutOfRange {
                row: 3,
                index: 5,
                value: q,
                modulus: q
            })
        );
        assert!(results[9].is_err());
        assert_eq!(
            &fast[3 * DEGREE..4 * DEGREE],
            &input[3 * DEGREE..4 * DEGREE]
        );
        assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 9);
        let mut ragged = vec![0; DEGREE - 1];
        assert!(matches!(
            backend.inverse_ntt(class, &mut ragged),
            Err(AccelError::Shape { .. })
        ));
    }
}
