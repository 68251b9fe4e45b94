//! The CUDA ring kernels' CPU twin against the CPU reference: the twiddle tables and the
//! algorithm the device runs, checked on every test run, with or without a GPU.

use quasar_crypto::accel::{BatchArithmetic, CpuBackend, NttClass, RingOp};
use quasar_gpu::kernels::{twin, RingTables};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

#[test]
fn the_twin_of_every_kernel_equals_the_reference() {
    let mut rng = ChaCha20Rng::seed_from_u64(77);
    for class in NttClass::ALL {
        let q = class.modulus();
        let Some(tables) = RingTables::of(class) else {
            // ML-KEM's rings have no 512th root of unity: no tables, and the CUDA backend
            // answers `Unsupported` for them (the dispatcher then computes on the CPU).
            assert!(matches!(class, NttClass::MlKem | NttClass::MlKemCyclic));
            continue;
        };
        let mut rows: Vec<[u64; 256]> = (0..6)
            .map(|_| std::array::from_fn(|_| rng.gen_range(0..q)))
            .collect();
        rows.push([0; 256]);
        rows.push([q - 1; 256]);
        for row in &rows {
            let other: [u64; 256] = std::array::from_fn(|_| rng.gen_range(0..q));
            for op in [RingOp::Forward, RingOp::Inverse, RingOp::Pointwise] {
                let mut device = *row;
                twin(&tables, op, &mut device, &other);
                let mut reference = row.to_vec();
                CpuBackend.ring(class, op, &mut reference, &other).unwrap();
                assert_eq!(device.to_vec(), reference, "{class:?} {op:?}");
            }
        }
    }
}

#[test]
fn the_kernels_mul_mod_is_exact_at_the_edges_and_at_random() {
    use quasar_gpu::kernels::mul_mod;
    let mut rng = ChaCha20Rng::seed_from_u64(78);
    for class in NttClass::ALL {
        let q = class.modulus();
        let exact = |a: u64, b: u64| (u128::from(a) * u128::from(b) % u128::from(q)) as u64;
        let edges = [0, 1, 2, q / 2, q / 2 + 1, q - 2, q - 1];
        for &a in &edges {
            for &b in &edges {
                assert_eq!(mul_mod(a, b, q), exact(a, b), "{a} · {b} mod {q}");
            }
        }
        for _ in 0..200_000 {
            let (a, b) = (rng.gen_range(0..q), rng.gen_range(0..q));
            assert_eq!(mul_mod(a, b, q), exact(a, b), "{a} · {b} mod {q}");
        }
    }
}
