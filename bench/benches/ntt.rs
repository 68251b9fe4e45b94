//! Ring NTT benchmarks for the QuasarGPU adapter (issue 9). Run:
//! `cargo bench -p quasar-bench --bench ntt` (only the summary:
//! `cargo bench -p quasar-bench --bench ntt -- summary-only`).
//!
//! Criterion groups (reports under `target/criterion/`), for each class (`corona`, q = 2^48 +
//! 18945; `mldsa`, q = 8380417; `mlkem` and `mlkem-cyclic`, q = 3329; n = 256):
//! - `ntt_row/<class>/{ntt,intt}`: one row through the CPU reference kernel, one thread;
//! - `ntt_simd/<class>/{ntt,intt}`: 8 rows on `SimdCpuBackend` (with AVX2 and FMA: one group of
//!   lanes for ML-DSA, two for the other classes), one thread, transformed in place;
//! - `ntt_batch/<class>/{64,1024}`: a batch of forward NTTs on `CpuBackend` (rayon across rows);
//! - `ntt_dispatch/<class>/64`: the same 64 rows as one request through a [`Dispatcher`] whose
//!   capacity is 64 rows (so the request goes out at once): the dispatcher's own cost.
//!
//! Then a summary, in 15 rounds of back-to-back timings (so load from other processes falls on
//! both sides of each ratio alike), printed as tables and written to
//! `target/criterion/ntt-summary.json`:
//! - one forward NTT per class against the anchors: ML-DSA within 1.5 × 170 ns (the
//!   pq-crystals AVX2 reference) per core, and Corona ≤ 2 µs, both on `SimdCpuBackend` (a batch
//!   of 8 rows on one thread, divided by 8), with its speedup over the reference kernel;
//! - ML-DSA against that reference itself, timed in the same rounds on this machine (x86-64 with
//!   AVX2): pq-crystals' `ntt.S` as PQClean packages it and `pqcrypto-mldsa` builds it, one
//!   polynomial of `i32` coefficients in place, with its lazily reduced output in its own
//!   coefficient order. Ours also checks every input value, reads and writes `u64` rows and
//!   leaves every output value in [0, q);
//! - dispatcher overhead at batch 64: the 64-row request through the dispatcher over the same
//!   64 rows on the backend directly (target ≤ 1.10);
//! - batched vs per-request dispatch: 512 single-row requests from 64 tenant threads through a
//!   dispatcher that stacks up to 64 rows per batch, against the same requests through a
//!   dispatcher of capacity 1 (one dispatch per request), same backend; with the batched
//!   dispatcher's fill and padding waste. Also the same requests on the backend directly (no
//!   dispatcher), the choice a CPU-only node has.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion};
use quasar_bench::summary::{report, run_with_summary, time, Samples, Target};
use quasar_crypto::accel::{reference_row, BatchArithmetic, CpuBackend, NttClass, RingOp};
use quasar_gpu::cpu::LANES;
use quasar_gpu::{DispatchConfig, Dispatcher, SimdCpuBackend};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const ROUNDS: usize = 15;
/// Tenants and single-row requests of the batched-vs-per-request comparison.
const TENANTS: usize = 64;
const REQUESTS: usize = 512;
/// Rows of a full batch in the overhead and batching comparisons.
const BATCH: usize = 64;

fn rows(class: NttClass, count: usize, seed: u64) -> Vec<u64> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..count * class.degree())
        .map(|_| rng.gen_range(0..class.modulus()))
        .collect()
}

fn dispatcher(max_batch_rows: usize) -> Dispatcher {
    Dispatcher::new(
        Arc::new(CpuBackend),
        DispatchConfig {
            max_batch_rows,
            deadline: Duration::from_micros(100),
        },
    )
}

fn bench_rows(c: &mut Criterion) {
    let mut group = c.benchmark_group("ntt_row");
    for class in NttClass::ALL {
        let row = rows(class, 1, 1);
        for op in [RingOp::Forward, RingOp::Inverse] {
            group.bench_function(BenchmarkId::new(class.name(), op.name()), |b| {
                b.iter_batched_ref(
                    || row.clone(),
                    |r| reference_row(class, op, black_box(r), &[]),
                    criterion::BatchSize::SmallInput,
                )
            });
        }
    }
    group.finish();
    let mut group = c.benchmark_group("ntt_simd");
    let simd = SimdCpuBackend::new();
    for class in NttClass::ALL {
        for op in [RingOp::Forward, RingOp::Inverse] {
            // One buffer transformed in place, call after call (every output is canonical, so
            // a valid input again), as in the summary: a fresh copy per call would time cold
            // caches as well.
            let mut lanes = rows(class, LANES, 6);
            group.bench_function(BenchmarkId::new(class.name(), op.name()), |b| {
                b.iter(|| simd.ring(class, op, &mut lanes, &[]))
            });
        }
    }
    group.finish();
}

fn bench_batches(c: &mut Criterion) {
    let mut group = c.benchmark_group("ntt_batch");
    for class in NttClass::ALL {
        for count in [BATCH, 1024] {
            let batch = rows(class, count, 2);
            group.bench_function(BenchmarkId::new(class.name(), count), |b| {
                b.iter_batched_ref(
                    || batch.clone(),
                    |r| CpuBackend.forward_ntt(class, r),
                    criterion::BatchSize::LargeInput,
                )
            });
        }
    }
    group.finish();
    let mut group = c.benchmark_group("ntt_dispatch");
    let d = dispatcher(BATCH);
    for class in NttClass::ALL {
        let batch = rows(class, BATCH, 3);
        group.bench_function(BenchmarkId::new(class.name(), BATCH), |b| {
            b.iter_batched_ref(
                || batch.clone(),
                |r| d.forward_ntt(class, r),
                criterion::BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

/// Every request (one row each) forward-transformed on `backend` by `TENANTS` threads, each
/// taking every `TENANTS`-th request.
fn tenants(backend: &dyn BatchArithmetic, class: NttClass, requests: &[Vec<u64>]) {
    std::thread::scope(|s| {
        for t in 0..TENANTS {
            s.spawn(move || {
                for request in requests.iter().skip(t).step_by(TENANTS) {
                    let mut row = request.clone();
                    black_box(backend.forward_ntt(class, &mut row).ok());
                }
            });
        }
    });
}

/// Row names of one class in the summary (leaked: a handful of strings, once per run).
struct Rows {
    one_ntt: &'static str,
    direct: &'static str,
    dispatched: &'static str,
    per_request: &'static str,
    batched: &'static str,
    backend_alone: &'static str,
    overhead: &'static str,
    speedup: &'static str,
    over_direct: &'static str,
    fill: &'static str,
    waste: &'static str,
    /// The anchor for one NTT on the production backend: the ratio's name, the anchor
    /// in seconds, and the target for the ratio (none for the ML-KEM classes).
    anchor: Option<(&'static str, f64, f64)>,
    simd: &'static str,
    simd_speedup: &'static str,
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

impl Rows {
    fn of(class: NttClass) -> Rows {
        let c = class.name();
        Rows {
            one_ntt: leak(format!("{c}: one forward NTT, 1 thread")),
            direct: leak(format!("{c}: {BATCH} rows on the backend")),
            dispatched: leak(format!("{c}: {BATCH} rows through the dispatcher")),
            per_request: leak(format!(
                "{c}: {REQUESTS} requests, {TENANTS} tenants, one dispatch each"
            )),
            batched: leak(format!(
                "{c}: {REQUESTS} requests, {TENANTS} tenants, batched ≤ {BATCH}"
            )),
            backend_alone: leak(format!(
                "{c}: {REQUESTS} requests, {TENANTS} tenants, backend, no dispatcher"
            )),
            overhead: leak(format!("{c}: dispatcher / backend at batch {BATCH}")),
            speedup: leak(format!("{c}: per-request / batched dispatch")),
            over_direct: leak(format!("{c}: backend alone / batched dispatch")),
            fill: leak(format!("{c}: batch fill (batched)")),
            waste: leak(format!("{c}: padding waste (batched)")),
            anchor: match class {
                NttClass::MlDsa => Some((
                    leak(format!("{c}: one NTT (simd, per core) / 170 ns")),
                    170e-9,
                    1.5,
                )),
                NttClass::Corona => Some((leak(format!("{c}: one NTT (simd) / 2 µs")), 2e-6, 1.0)),
                _ => None,
            },
            simd: leak(format!(
                "{c}: one forward NTT, simd, in a batch of {LANES}, 1 thread"
            )),
            simd_speedup: leak(format!("{c}: reference / simd, one NTT")),
        }
    }
}

fn summary() {
    let (mut us, mut ratios) = (Samples::default(), Samples::default());
    let mut targets: Vec<Target> = Vec::new();
    for class in NttClass::ALL {
        let names = Rows::of(class);
        let single = rows(class, 1, 4);
        let batch = rows(class, BATCH, 5);
        let requests: Vec<Vec<u64>> = (0..REQUESTS)
            .map(|i| rows(class, 1, 100 + i as u64))
            .collect();
        let group = rows(class, LANES, 6);
        let simd_backend = SimdCpuBackend::new();
        let full = dispatcher(BATCH);
        let stacking = dispatcher(BATCH);
        let one_each = dispatcher(1);
        // The one-NTT timings transform one buffer in place, call after call (a forward image
        // is canonical, so it is a valid input again): no copy inside the timing.
        let (mut one_row, mut lanes) = (single.clone(), group.clone());
        for _ in 0..ROUNDS {
            let one = time(20_000, || {
                reference_row(class, RingOp::Forward, &mut one_row, &[]);
            });
            // Single-threaded timings first, before the pools and tenant threads of the
            // multi-threaded ones wake up.
            let simd =
                time(5_000, || simd_backend.forward_ntt(class, &mut lanes).ok()) / LANES as f64;
            let direct = time(200, || {
                let mut r = batch.clone();
                CpuBackend.forward_ntt(class, &mut r).ok()
            });
            let dispatched = time(200, || {
                let mut r = batch.clone();
                full.forward_ntt(class, &mut r).ok()
            });
            let per_request = time(3, || tenants(&one_each, class, &requests));
            let batched = time(3, || tenants(&stacking, class, &requests));
            let alone = time(3, || tenants(&CpuBackend, class, &requests));
            us.push(names.one_ntt, one * 1e6);
            us.push(names.direct, direct * 1e6);
            us.push(names.dispatched, dispatched * 1e6);
            us.push(names.per_request, per_request * 1e6);
            us.push(names.batched, batched * 1e6);
            us.push(names.backend_alone, alone * 1e6);
            us.push(names.simd, simd * 1e6);
            ratios.push(names.simd_speedup, one / simd);
            if let Some((name, anchor, _)) = names.anchor {
                ratios.push(name, simd / anchor);
            }
            #[cfg(target_arch = "x86_64")]
            if let (NttClass::MlDsa, Some(ntt)) = (class, pq_crystals::ntt()) {
                let mut poly = pq_crystals::Poly::from_row(&single);
                let reference = time(20_000, || ntt(&mut poly));
                us.push(pq_crystals::TIME, reference * 1e6);
                ratios.push(pq_crystals::RATIO, simd / reference);
            }
            ratios.push(names.overhead, dispatched / direct);
            ratios.push(names.speedup, per_request / batched);
            ratios.push(names.over_direct, alone / batched);
        }
        let stats = stacking.stats();
        if let Some((_, s)) = stats.first() {
            ratios.push(names.fill, s.fill(BATCH));
            ratios.push(names.waste, s.padding_waste());
        }
        if let Some((name, _, target)) = names.anchor {
            targets.push((name, Some(target), true));
        }
        #[cfg(target_arch = "x86_64")]
        if class == NttClass::MlDsa && pq_crystals::ntt().is_some() {
            targets.push((pq_crystals::RATIO, Some(1.5), true));
        }
        targets.extend([
            (names.simd_speedup, None, false),
            (names.overhead, Some(1.10), true),
            (names.speedup, None, false),
            (names.over_direct, None, false),
            (names.fill, None, false),
            (names.waste, None, true),
        ]);
    }
    #[cfg(feature = "cuda")]
    cuda_rows(&mut us, &mut ratios, &mut targets);
    report(
        "Ring NTT",
        ("µs", "us", 3),
        &us,
        &ratios,
        &targets,
        "ntt-summary.json",
    );
}

/// pq-crystals' AVX2 NTT for ML-DSA (Ducas et al., CRYSTALS-Dilithium, round-3 AVX2
/// implementation, `ntt.S`), from the PQClean sources that `pqcrypto-mldsa` compiles: the
/// reference the 170 ns anchor names.
#[cfg(target_arch = "x86_64")]
mod pq_crystals {
    // Links the PQClean archive that defines the symbols below.
    use pqcrypto_mldsa as _;

    pub const TIME: &str = "mldsa: pq-crystals AVX2 NTT (PQClean), 1 thread";
    pub const RATIO: &str = "mldsa: one NTT (simd, per core) / pq-crystals AVX2 NTT, same run";

    /// One polynomial as `ntt.S` takes it: 256 `i32` coefficients, 32-byte aligned.
    #[repr(C, align(32))]
    pub struct Poly([i32; 256]);

    impl Poly {
        /// The row's coefficients (each below q = 8380417, so they fit in `i32`).
        pub fn from_row(row: &[u64]) -> Poly {
            let mut poly = Poly([0; 256]);
            for (c, &v) in poly.0.iter_mut().zip(row) {
                *c = i32::try_from(v).expect("an ML-DSA coefficient fits in i32");
            }
            poly
        }
    }

    /// PQClean's table of twiddles and constants (`qdata_t`: 624 `i32`, 32-byte aligned).
    #[repr(C, align(32))]
    pub struct QData([i32; 624]);

    #[allow(unsafe_code)]
    unsafe extern "C" {
        fn PQCLEAN_MLDSA65_AVX2_ntt_avx(a: *mut Poly, qdata: *const QData);
        static PQCLEAN_MLDSA65_AVX2_qdata: QData;
    }

    /// The forward NTT in place, where the CPU has AVX2 (`None` elsewhere). Applied to its own
    /// output call after call the values wrap modulo 2^32, which changes nothing in the
    /// timing: the code is constant-time.
    pub fn ntt() -> Option<fn(&mut Poly)> {
        fn run(poly: &mut Poly) {
            // SAFETY: `ntt()` hands this function out only where the CPU reported AVX2 (the
            // instructions `ntt.S` uses); `poly` is an aligned exclusive 1 KiB buffer and
            // `qdata` PQClean's own immutable table, the arguments `ntt.S` expects.
            #[allow(unsafe_code)]
            unsafe {
                PQCLEAN_MLDSA65_AVX2_ntt_avx(poly, &raw const PQCLEAN_MLDSA65_AVX2_qdata)
            }
        }
        std::is_x86_feature_detected!("avx2").then_some(run as fn(&mut Poly))
    }
}

/// With the `cuda` feature: 4096-row forward NTT batches on the CUDA backend, host-fed (upload,
/// kernel, download, per call; one buffer transformed in place call after call), in µs per
/// batch and as NTTs per second against the 40 M/s host-fed target, for the classes
/// the backend has kernels for; skipped with a notice where no device is present.
#[cfg(feature = "cuda")]
fn cuda_rows(us: &mut Samples, ratios: &mut Samples, targets: &mut Vec<Target>) {
    const ROWS: usize = 4096;
    let gpu = match quasar_gpu::cuda::CudaBackend::open(0) {
        Ok(Some(gpu)) => gpu,
        Ok(None) => {
            println!("no CUDA device: the CUDA rows are skipped");
            return;
        }
        Err(e) => {
            println!("CUDA backend failed to open ({e}): the CUDA rows are skipped");
            return;
        }
    };
    println!("CUDA device: {}", gpu.device());
    for class in NttClass::ALL {
        if quasar_gpu::kernels::RingTables::of(class).is_none() {
            continue;
        }
        let mut batch = rows(class, ROWS, 7);
        let name = leak(format!(
            "{}: {ROWS} rows forward on cuda, host-fed",
            class.name()
        ));
        let rate = leak(format!("{}: cuda host-fed NTT/s / 40 M", class.name()));
        for _ in 0..ROUNDS {
            let t = time(20, || gpu.forward_ntt(class, &mut batch).ok());
            us.push(name, t * 1e6);
            ratios.push(rate, ROWS as f64 / t / 40e6);
        }
        targets.push((rate, Some(1.0), false));
    }
}

fn main() {
    run_with_summary(
        |c| {
            bench_rows(c);
            bench_batches(c);
        },
        summary,
    );
}
