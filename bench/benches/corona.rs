//! Corona benchmarks (issue 5), single thread. Run: `cargo bench -p quasar-bench --bench corona`.
//! One function per criterion group (reports under `target/criterion/`):
//!
//! - `corona_ntt/{forward,inverse}`: one degree-256 negacyclic NTT / inverse NTT.
//! - `corona_ntt/backend_forward_49`: 49 forward NTTs as one `CpuBackend` batch (the shape of a
//!   commitment row), to show the seam's overhead over the per-polynomial call.
//! - `corona_pointwise/product`: one coefficient-wise product of two NTT-form polynomials.
//! - `corona_matvec/a_times_z`: A·z for A ∈ R_q^{8×7} cached in NTT form and z ∈ R_q^7 in NTT
//!   form, including the 8 inverse NTTs of the result (the product in verification).
//! - `corona_matvec/a_times_r`: A·R for R ∈ R_q^{7×49} in NTT form (the product of round 1).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use quasar_crypto::accel::{BatchArithmetic, CpuBackend, NttClass};
use quasar_crypto::corona::params::{DBAR, DEGREE, M, N, Q};
use quasar_crypto::corona::ring::{NttMatrix, NttPoly, NttVec, Poly};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn random_values(rng: &mut StdRng) -> Vec<u64> {
    (0..DEGREE).map(|_| rng.gen_range(0..Q)).collect()
}

fn random_poly(rng: &mut StdRng) -> Poly {
    Poly::from_coefficients(&random_values(rng)).expect("values below q")
}

fn random_ntt(rng: &mut StdRng) -> NttPoly {
    NttPoly::from_coefficients(&random_values(rng)).expect("values below q")
}

fn bench_ntt(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(1);
    let a = random_poly(&mut rng);
    let a_ntt = a.ntt();
    let mut group = c.benchmark_group("corona_ntt");
    group.bench_function("forward", |b| b.iter(|| black_box(&a).ntt()));
    group.bench_function("inverse", |b| b.iter(|| black_box(&a_ntt).intt()));
    let batch: Vec<u64> = (0..DBAR + 1)
        .flat_map(|_| random_values(&mut rng))
        .collect();
    group.bench_function("backend_forward_49", |b| {
        b.iter_batched_ref(
            || batch.clone(),
            |rows| CpuBackend.forward_ntt(NttClass::Corona, rows),
            criterion::BatchSize::SmallInput,
        )
    });
    group.finish();
}

fn bench_pointwise(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(2);
    let (x, y) = (random_ntt(&mut rng), random_ntt(&mut rng));
    let mut group = c.benchmark_group("corona_pointwise");
    group.bench_function("product", |b| b.iter(|| black_box(&x) * black_box(&y)));
    group.finish();
}

fn bench_matvec(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(3);
    let a: NttMatrix<M, N> = NttMatrix::from_fn(|_, _| random_ntt(&mut rng));
    let z: NttVec<N> = NttVec::from_fn(|_| random_ntt(&mut rng));
    let r: NttMatrix<N, { DBAR + 1 }> = NttMatrix::from_fn(|_, _| random_ntt(&mut rng));
    let mut group = c.benchmark_group("corona_matvec");
    group.bench_function("a_times_z", |b| {
        b.iter(|| black_box(&a).mul_vec(black_box(&z)).intt())
    });
    group.bench_function("a_times_r", |b| {
        b.iter(|| black_box(&a).mul_mat(black_box(&r)))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = bench_ntt, bench_pointwise, bench_matvec
}
criterion_main!(benches);
