//! The dispatcher against the specification of its ring classes and of its own contract:
//! - differential: every class and operation against an O(n²) evaluation at the class's roots,
//!   on random, all-zero, all-(q−1) and single-spike rows, batch sizes 1..4096;
//! - isolation: a tenant's bad row fails for that tenant alone, and results do not depend on
//!   which requests shared the batch;
//! - concurrency: many threads at once, every reply to its own caller, none lost;
//! - a backend that fails a batch (no kernel, error, panic, short reply) costs nothing but a
//!   fallback count; padding to a backend's granularity is counted and invisible to callers.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use quasar_crypto::accel::{
    AccelError, BatchArithmetic, CpuBackend, NttClass, RingOp, RowResults, Workload,
};
use quasar_crypto::corona::ring::PSI;
use quasar_gpu::{DispatchConfig, Dispatcher, QueueKey};

use common::{mixed_rows, DEGREE};

fn mul(a: u64, b: u64, q: u64) -> u64 {
    (u128::from(a) * u128::from(b) % u128::from(q)) as u64
}

fn pow(mut base: u64, mut e: u64, q: u64) -> u64 {
    let mut acc = 1;
    while e > 0 {
        if e & 1 == 1 {
            acc = mul(acc, base, q);
        }
        base = mul(base, base, q);
        e >>= 1;
    }
    acc
}

/// Σ_j a_j·x^j mod q, term by term.
fn evaluate(a: impl Iterator<Item = u64>, point: u64, q: u64) -> u64 {
    let (mut x, mut sum) = (1, 0);
    for c in a {
        sum = (sum + mul(c, x, q)) % q;
        x = mul(x, point, q);
    }
    sum
}

/// ML-KEM's ζ = 17 and γ_i = ζ^(2·brv7(i)+1) (FIPS 203 §4.3).
fn mlkem_gamma(i: usize) -> u64 {
    pow(17, 2 * u64::from((i as u8).reverse_bits() >> 1) + 1, 3329)
}

/// The image of `a` by its definition, O(n²):
/// - Corona and ML-DSA: slot k is a(ψ^(2·brv8(k)+1)), ψ the class's 512th root of unity
///   (Corona's PSI; ML-DSA's ζ = 1753, FIPS 204);
/// - ML-KEM: pair i is a mod (X² − γ_i) (FIPS 203);
/// - cyclic ML-KEM: slot k is a(17^brv8(k)).
fn naive_forward(class: NttClass, a: &[u64]) -> Vec<u64> {
    let q = class.modulus();
    let brv8 = |k: usize| u64::from((k as u8).reverse_bits());
    let odd_root = |psi: u64| {
        (0..DEGREE)
            .map(|k| evaluate(a.iter().copied(), pow(psi, 2 * brv8(k) + 1, q), q))
            .collect()
    };
    match class {
        NttClass::Corona => odd_root(PSI),
        NttClass::MlDsa => odd_root(1753),
        NttClass::MlKem => (0..DEGREE / 2)
            .flat_map(|i| {
                let gamma = mlkem_gamma(i);
                let even = evaluate(a.iter().step_by(2).copied(), gamma, q);
                let odd = evaluate(a.iter().skip(1).step_by(2).copied(), gamma, q);
                [even, odd]
            })
            .collect(),
        NttClass::MlKemCyclic => (0..DEGREE)
            .map(|k| evaluate(a.iter().copied(), pow(17, brv8(k), q), q))
            .collect(),
        _ => unreachable!("a class this test does not know"),
    }
}

/// The product of two images in the image domain, by its definition: slot by slot, except
/// ML-KEM's degree-one pairs, multiplied modulo X² − γ_i.
fn naive_product(class: NttClass, x: &[u64], y: &[u64]) -> Vec<u64> {
    let q = class.modulus();
    if class != NttClass::MlKem {
        return x.iter().zip(y).map(|(&a, &b)| mul(a, b, q)).collect();
    }
    x.chunks(2)
        .zip(y.chunks(2))
        .enumerate()
        .flat_map(|(i, (a, b))| {
            let high = mul(mul(a[1], b[1], q), mlkem_gamma(i), q);
            [
                (mul(a[0], b[0], q) + high) % q,
                (mul(a[0], b[1], q) + mul(a[1], b[0], q)) % q,
            ]
        })
        .collect()
}

fn dispatcher(backend: Arc<dyn BatchArithmetic>, max_batch_rows: usize) -> Dispatcher {
    Dispatcher::new(
        backend,
        DispatchConfig {
            max_batch_rows,
            deadline: Duration::from_micros(200),
        },
    )
}

fn all_ok(results: &RowResults) -> bool {
    results.iter().all(Result::is_ok)
}

#[test]
fn every_class_matches_the_naive_evaluation_through_the_dispatcher() {
    let d = dispatcher(Arc::new(CpuBackend), 64);
    for class in NttClass::ALL {
        let a = mixed_rows(class, 8, 1);
        let b = mixed_rows(class, 8, 2);
        let mut image = a.clone();
        assert!(all_ok(&d.forward_ntt(class, &mut image).unwrap()));
        for (row, out) in a.chunks(DEGREE).zip(image.chunks(DEGREE)) {
            assert_eq!(out, naive_forward(class, row), "{class:?} forward");
        }
        // Pointwise in the image is the ring product: check it slot by slot, then come back.
        let mut b_image = b.clone();
        d.forward_ntt(class, &mut b_image).unwrap();
        let mut product = image.clone();
        assert!(all_ok(
            &d.pointwise_mul(class, &mut product, &b_image).unwrap()
        ));
        for ((p, x), y) in product
            .chunks(DEGREE)
            .zip(image.chunks(DEGREE))
            .zip(b_image.chunks(DEGREE))
        {
            assert_eq!(p, naive_product(class, x, y), "{class:?} product");
        }
        let mut back = image;
        assert!(all_ok(&d.inverse_ntt(class, &mut back).unwrap()));
        assert_eq!(back, a, "{class:?} inverse ∘ forward is the identity");
    }
}

#[test]
fn batches_of_1_to_4096_rows_equal_the_reference_row_by_row() {
    let d = dispatcher(Arc::new(CpuBackend), 1024);
    for class in NttClass::ALL {
        for rows in [1, 2, 3, 63, 64, 65, 1023, 1024, 1025, 4096] {
            let input = mixed_rows(class, rows, rows as u64);
            for op in [RingOp::Forward, RingOp::Inverse] {
                let mut through = input.clone();
                let results = d.ring(class, op, &mut through, &[]).unwrap();
                assert_eq!(results.len(), rows);
                assert!(all_ok(&results));
                for (r, (inp, out)) in input.chunks(DEGREE).zip(through.chunks(DEGREE)).enumerate()
                {
                    let mut alone = inp.to_vec();
                    CpuBackend.ring(class, op, &mut alone, &[]).unwrap();
                    assert_eq!(out, alone, "{class:?} {op:?} batch of {rows}, row {r}");
                }
            }
        }
    }
}

#[test]
fn a_bad_row_fails_for_its_tenant_alone_and_neighbours_are_bit_identical() {
    let class = NttClass::Corona;
    let q = class.modulus();
    // Requests of 1, 3 and 2 rows; the second has q in its row 1, the others are clean.
    let good_a = mixed_rows(class, 1, 10);
    let mut bad = mixed_rows(class, 3, 11);
    bad[DEGREE + 7] = q;
    let good_b = mixed_rows(class, 2, 12);
    let expected = |rows: &[u64]| {
        let mut alone = rows.to_vec();
        CpuBackend.forward_ntt(class, &mut alone).unwrap();
        alone
    };
    // A long deadline and a capacity of exactly the 6 rows: the three requests share one batch.
    let d = Dispatcher::new(
        Arc::new(CpuBackend),
        DispatchConfig {
            max_batch_rows: 6,
            deadline: Duration::from_secs(30),
        },
    );
    let outcomes = std::thread::scope(|s| {
        let handles: Vec<_> = [good_a.clone(), bad.clone(), good_b.clone()]
            .into_iter()
            .map(|mut rows| {
                let d = &d;
                s.spawn(move || {
                    let results = d.forward_ntt(class, &mut rows).unwrap();
                    (rows, results)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    let stats = d.stats();
    assert_eq!(stats.len(), 1);
    assert_eq!(stats[0].1.batches, 1, "the three requests shared one batch");
    assert_eq!(stats[0].1.requests, 3);

    assert_eq!(outcomes[0].0, expected(&good_a));
    assert!(all_ok(&outcomes[0].1));
    assert_eq!(outcomes[2].0, expected(&good_b));
    assert!(all_ok(&outcomes[2].1));
    let (rows, results) = &outcomes[1];
    assert_eq!(
        results[1],
        Err(AccelError::CoefficientOutOfRange {
            row: 1,
            index: 7,
            value: q,
            modulus: q
        }),
        "the row index counts within the tenant's own buffer"
    );
    assert!(results[0].is_ok() && results[2].is_ok());
    assert_eq!(
        &rows[DEGREE..2 * DEGREE],
        &bad[DEGREE..2 * DEGREE],
        "left unchanged"
    );
    let clean = expected(&bad[..DEGREE]);
    assert_eq!(&rows[..DEGREE], clean.as_slice());
}

#[test]
fn a_malformed_call_is_refused_before_it_reaches_a_batch() {
    let d = dispatcher(Arc::new(CpuBackend), 8);
    let mut ragged = vec![0u64; DEGREE + 3];
    assert_eq!(
        d.forward_ntt(NttClass::MlDsa, &mut ragged),
        Err(AccelError::Shape {
            len: DEGREE + 3,
            degree: DEGREE,
            other_len: DEGREE + 3
        })
    );
    let mut lhs = vec![0u64; DEGREE];
    assert!(matches!(
        d.pointwise_mul(NttClass::Corona, &mut lhs, &[0u64; 2 * DEGREE]),
        Err(AccelError::Shape { .. })
    ));
    assert_eq!(d.forward_ntt(NttClass::Corona, &mut []), Ok(Vec::new()));
    assert!(d.stats().is_empty(), "nothing was queued");
}

#[test]
fn many_threads_each_get_exactly_their_own_results() {
    let d = dispatcher(Arc::new(CpuBackend), 48);
    let served = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..16u64 {
            let (d, served) = (&d, &served);
            s.spawn(move || {
                let class = NttClass::ALL[t as usize % 2];
                for i in 0..40u64 {
                    // 1..=5 rows, distinct per thread and call.
                    let rows = mixed_rows(class, 1 + (i % 5) as usize, t * 1000 + i);
                    let mut through = rows.clone();
                    let results = d.forward_ntt(class, &mut through).unwrap();
                    let mut alone = rows;
                    CpuBackend.forward_ntt(class, &mut alone).unwrap();
                    assert_eq!(through, alone, "thread {t} call {i}");
                    assert_eq!(results.len(), 1 + (i % 5) as usize);
                    served.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    assert_eq!(served.load(Ordering::Relaxed), 16 * 40);
    let requests: u64 = d.stats().iter().map(|(_, s)| s.requests).sum();
    assert_eq!(requests, 16 * 40, "every request served once");
    let (batches, rows): (u64, u64) = d
        .stats()
        .iter()
        .fold((0, 0), |(b, r), (_, s)| (b + s.batches, r + s.rows));
    assert_eq!(rows, 16 * 8 * (1 + 2 + 3 + 4 + 5));
    assert!(batches <= requests);
}

/// A backend that fails in one of several ways, and counts the batches it was given.
struct Failing {
    how: &'static str,
    calls: AtomicUsize,
}

impl BatchArithmetic for Failing {
    fn name(&self) -> &'static str {
        "failing"
    }

    fn forward_ntt(&self, class: NttClass, rows: &mut [u64]) -> Result<RowResults, AccelError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        rows.fill(7); // scribbles before failing: the fallback must start from the inputs
        match self.how {
            "unsupported" => Err(AccelError::Unsupported {
                backend: "failing",
                workload: Workload::Ntt(class),
            }),
            "panic" => panic!("device lost"),
            _ => Ok(vec![Ok(())]), // short reply
        }
    }

    fn inverse_ntt(&self, class: NttClass, rows: &mut [u64]) -> Result<RowResults, AccelError> {
        CpuBackend.inverse_ntt(class, rows)
    }

    fn pointwise_mul(
        &self,
        class: NttClass,
        lhs: &mut [u64],
        rhs: &[u64],
    ) -> Result<RowResults, AccelError> {
        CpuBackend.pointwise_mul(class, lhs, rhs)
    }
}

#[test]
fn a_failing_backend_costs_a_fallback_never_a_result() {
    // 3 rows wait in the queue and go out at the deadline; 4 rows fill a batch alone and go to
    // the backend in the caller's own buffer.
    for count in [3, 4] {
        for how in ["unsupported", "panic", "short"] {
            let backend = Arc::new(Failing {
                how,
                calls: AtomicUsize::new(0),
            });
            let d = dispatcher(backend.clone(), 4);
            let class = NttClass::MlDsa;
            let rows = mixed_rows(class, count, 5);
            let mut through = rows.clone();
            assert!(all_ok(&d.forward_ntt(class, &mut through).unwrap()));
            let mut alone = rows;
            CpuBackend.forward_ntt(class, &mut alone).unwrap();
            assert_eq!(through, alone, "{how}, {count} rows");
            let stats = d.stats();
            assert_eq!(stats[0].1.fallbacks, 1, "{how}, {count} rows");
            assert_eq!(backend.calls.load(Ordering::Relaxed), 1);
        }
    }
}

/// The CPU reference, declaring that its kernels take rows in groups of `.0`, and checking
/// that batches arrive padded to the granularity the dispatcher honours.
struct Grouped(usize);

impl BatchArithmetic for Grouped {
    fn name(&self) -> &'static str {
        "grouped"
    }

    fn forward_ntt(&self, class: NttClass, rows: &mut [u64]) -> Result<RowResults, AccelError> {
        let honoured = self.0.min(quasar_gpu::dispatch::MAX_GRANULARITY);
        assert_eq!(
            rows.len() % (honoured * DEGREE),
            0,
            "padded to the granularity"
        );
        CpuBackend.forward_ntt(class, rows)
    }

    fn inverse_ntt(&self, class: NttClass, rows: &mut [u64]) -> Result<RowResults, AccelError> {
        CpuBackend.inverse_ntt(class, rows)
    }

    fn pointwise_mul(
        &self,
        class: NttClass,
        lhs: &mut [u64],
        rhs: &[u64],
    ) -> Result<RowResults, AccelError> {
        CpuBackend.pointwise_mul(class, lhs, rhs)
    }

    fn row_granularity(&self, _: NttClass) -> usize {
        self.0
    }
}

#[test]
fn padding_to_the_backend_granularity_is_counted_and_invisible() {
    let d = dispatcher(Arc::new(Grouped(4)), 64);
    let class = NttClass::Corona;
    let rows = mixed_rows(class, 5, 9);
    let mut through = rows.clone();
    let results = d.forward_ntt(class, &mut through).unwrap();
    assert_eq!(results.len(), 5);
    let mut alone = rows;
    CpuBackend.forward_ntt(class, &mut alone).unwrap();
    assert_eq!(through, alone);
    let (key, stats) = d.stats()[0];
    assert_eq!(
        key,
        QueueKey {
            class,
            op: RingOp::Forward
        }
    );
    assert_eq!((stats.rows, stats.padding_rows), (5, 3));
    assert!((stats.padding_waste() - 3.0 / 8.0).abs() < 1e-12);
    assert!((stats.fill(64) - 5.0 / 64.0).abs() < 1e-12);
}

#[test]
fn a_full_queue_goes_out_without_waiting_for_its_deadline() {
    // The deadline is far beyond the test's patience: only the full-queue rule can release the
    // batch (a lone request under capacity would wait for the whole minute).
    let d = Dispatcher::new(
        Arc::new(CpuBackend),
        DispatchConfig {
            max_batch_rows: 2,
            deadline: Duration::from_secs(60),
        },
    );
    let started = Instant::now();
    let mut rows = mixed_rows(NttClass::Corona, 2, 3);
    assert!(all_ok(&d.forward_ntt(NttClass::Corona, &mut rows).unwrap()));
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn a_lone_request_under_capacity_goes_out_at_its_deadline() {
    let d = Dispatcher::new(
        Arc::new(CpuBackend),
        DispatchConfig {
            max_batch_rows: 1_000_000,
            deadline: Duration::from_millis(50),
        },
    );
    let mut rows = mixed_rows(NttClass::MlDsa, 3, 4);
    let expected = {
        let mut alone = rows.clone();
        CpuBackend.forward_ntt(NttClass::MlDsa, &mut alone).unwrap();
        alone
    };
    assert!(all_ok(&d.forward_ntt(NttClass::MlDsa, &mut rows).unwrap()));
    assert_eq!(rows, expected);
    let stats = d.stats()[0].1;
    assert!(stats.max_queue_wait >= Duration::from_millis(50));
}

/// Runs `f` on its own thread and fails the test if it has not finished after `secs` seconds
/// (a hang is the failure these regression tests guard against).
fn finishes_within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .unwrap_or_else(|_| panic!("did not finish within {secs} s"))
}

/// Regression (fresh-user trial): rayon's global-pool workers waited, blocked, for a batch that
/// a thread outside the pool led on `CpuBackend`, which spreads 64 rows over that same pool:
/// nobody was left to run them. Waiting pool workers now run their pool's jobs meanwhile.
#[test]
fn pool_workers_waiting_on_a_batch_led_outside_the_pool_do_not_deadlock() {
    finishes_within(60, || {
        let d = Arc::new(dispatcher(Arc::new(CpuBackend), 64));
        let workers = rayon::current_num_threads();
        let (tx, rx) = std::sync::mpsc::channel();
        for i in 0..workers {
            let (d, tx) = (Arc::clone(&d), tx.clone());
            rayon::spawn(move || {
                let mut rows = mixed_rows(NttClass::Corona, 1, i as u64);
                let _ = tx.send(d.forward_ntt(NttClass::Corona, &mut rows).map(|_| ()));
            });
        }
        std::thread::sleep(Duration::from_millis(50));
        // This thread fills the queue and leads the 64-row batch.
        let mut rows = mixed_rows(NttClass::Corona, 64 - workers, 99);
        d.forward_ntt(NttClass::Corona, &mut rows).unwrap();
        for _ in 0..workers {
            rx.recv().unwrap().unwrap();
        }
    });
}

/// Regression (fresh-user trial): a request that filled a batch by itself, queued behind a
/// smaller one, waited for the deadline because the leader sent only the batch in front.
#[test]
fn a_full_request_behind_a_small_one_goes_out_at_once() {
    let waited = finishes_within(60, || {
        let d = Arc::new(Dispatcher::new(
            Arc::new(CpuBackend),
            DispatchConfig {
                max_batch_rows: 4,
                deadline: Duration::from_secs(30),
            },
        ));
        let small = {
            let d = Arc::clone(&d);
            std::thread::spawn(move || {
                let mut rows = mixed_rows(NttClass::Corona, 1, 1);
                d.forward_ntt(NttClass::Corona, &mut rows).unwrap();
            })
        };
        std::thread::sleep(Duration::from_millis(100));
        let started = Instant::now();
        let mut rows = mixed_rows(NttClass::Corona, 8, 2);
        d.forward_ntt(NttClass::Corona, &mut rows).unwrap();
        small.join().unwrap();
        started.elapsed()
    });
    assert!(waited < Duration::from_secs(15), "waited {waited:?}");
}

/// Regression (fresh-user trial): `Duration::MAX` as the deadline overflowed `Instant + Duration`
/// and panicked; it now means "only when full".
#[test]
fn an_unbounded_deadline_sends_a_queue_only_when_full() {
    finishes_within(60, || {
        let d = Arc::new(Dispatcher::new(
            Arc::new(CpuBackend),
            DispatchConfig {
                max_batch_rows: 2,
                deadline: Duration::MAX,
            },
        ));
        let first = {
            let d = Arc::clone(&d);
            std::thread::spawn(move || {
                let mut rows = mixed_rows(NttClass::MlDsa, 1, 3);
                d.forward_ntt(NttClass::MlDsa, &mut rows).unwrap();
            })
        };
        std::thread::sleep(Duration::from_millis(100));
        let mut rows = mixed_rows(NttClass::MlDsa, 1, 4);
        d.forward_ntt(NttClass::MlDsa, &mut rows).unwrap();
        first.join().unwrap();
        assert_eq!(
            d.stats()[0].1.batches,
            1,
            "one batch, sent when the second row filled it"
        );
    });
}

/// Regression (fresh-user trial): a granularity of `usize::MAX` overflowed the padding size and
/// panicked in the caller; it is clamped to `MAX_GRANULARITY`.
#[test]
fn an_absurd_granularity_is_clamped() {
    let d = dispatcher(Arc::new(Grouped(usize::MAX)), 4);
    let rows = mixed_rows(NttClass::Corona, 1, 5);
    let mut through = rows.clone();
    assert!(all_ok(
        &d.forward_ntt(NttClass::Corona, &mut through).unwrap()
    ));
    let mut alone = rows;
    CpuBackend
        .forward_ntt(NttClass::Corona, &mut alone)
        .unwrap();
    assert_eq!(through, alone);
    let stats = d.stats()[0].1;
    assert_eq!(
        stats.padding_rows,
        quasar_gpu::dispatch::MAX_GRANULARITY as u64 - 1
    );
}
