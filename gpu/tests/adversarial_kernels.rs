//! Adversarial checks of the production CPU backend ([`SimdCpuBackend`], both its detected
//! build and the portable one) against the reference ([`CpuBackend`]), bit for bit, through
//! the public trait, beyond `tests/cpu.rs` (random/zero/(q−1)/one-spike rows):
//! - rows chosen against lazy reduction: all q−1, alternating 0/q−1, a spike of q−1 and of 1 at
//!   every position, values just below q, images fed back into the forward transform many
//!   times, and inverse transforms of arbitrary canonical rows (not only of images);
//! - results independent of how rows are grouped into lanes (every batch size 0..=40, batches
//!   cut into chunks of 1..=9 rows, 1000 and 4096 rows);
//! - range checks: values just at or above q, the next power of two 2^k, values whose
//!   v + (2^k − q) wraps past 2^64, values whose low 32 or 52 bits are canonical (what a
//!   narrowing load or the 2^52 bias would read) — a bad row fails alone with its first bad
//!   index and stays unchanged (`crypto/tests/accel_rows.rs` checks the scans themselves);
//! - shape errors leave every buffer unchanged;
//! - calls from many threads at once and from inside rayon pools (nested parallelism).

mod common;

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use quasar_crypto::accel::{AccelError, BatchArithmetic, CpuBackend, NttClass, RingOp, RowResults};
use quasar_gpu::SimdCpuBackend;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

use common::{mixed_rows, DEGREE};

const OPS: [RingOp; 3] = [RingOp::Forward, RingOp::Inverse, RingOp::Pointwise];

fn backends() -> [SimdCpuBackend; 2] {
    [SimdCpuBackend::new(), SimdCpuBackend::portable()]
}

/// k with 2^k the least power of two ≥ q, and the offset 2^k − q of [`all_canonical`].
fn bits_and_offset(class: NttClass) -> (u32, u64) {
    let q = class.modulus();
    let bits = u64::BITS - (q - 1).leading_zeros();
    (bits, (1u64 << bits) - q)
}

/// Rows against lazy reduction (about 530 of them).
fn adversarial_rows(class: NttClass, seed: u64) -> Vec<u64> {
    let q = class.modulus();
    let (bits, _) = bits_and_offset(class);
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut rows: Vec<Vec<u64>> = vec![
        vec![0; DEGREE],
        vec![q - 1; DEGREE],
        vec![1; DEGREE],
        vec![q / 2; DEGREE],
        vec![q / 2 + 1; DEGREE],
        (0..DEGREE)
            .map(|j| if j % 2 == 0 { 0 } else { q - 1 })
            .collect(),
        (0..DEGREE)
            .map(|j| if j % 2 == 0 { q - 1 } else { 0 })
            .collect(),
        (0..DEGREE)
            .map(|j| if j % 2 == 0 { q - 1 } else { 1 })
            .collect(),
        (0..DEGREE)
            .map(|j| if j < DEGREE / 2 { q - 1 } else { 0 })
            .collect(),
        (0..DEGREE)
            .map(|j| if j < DEGREE / 2 { 0 } else { q - 1 })
            .collect(),
        (0..DEGREE).map(|j| q - 1 - (j as u64 % 16)).collect(),
        (0..DEGREE).map(|j| q - 1 - j as u64).collect(),
        (0..DEGREE)
            .map(|j| (1u64 << (j as u32 % bits)) % q)
            .collect(),
    ];
    for _ in 0..8 {
        rows.push((0..DEGREE).map(|_| q - rng.gen_range(1..=64)).collect());
        rows.push((0..DEGREE).map(|_| rng.gen_range(0..q)).collect());
    }
    for position in 0..DEGREE {
        for value in [q - 1, 1] {
            let mut row = vec![0; DEGREE];
            row[position] = value;
            rows.push(row);
        }
    }
    rows.concat()
}

/// The row `r` of a batch.
fn row(values: &[u64], r: usize) -> &[u64] {
    &values[r * DEGREE..(r + 1) * DEGREE]
}

/// `op` on `rows` (with `rhs` for pointwise) through both backends: results and buffers must be
/// equal. Returns the common results and output.
fn same_as_reference(
    backend: &dyn BatchArithmetic,
    class: NttClass,
    op: RingOp,
    rows: &[u64],
    rhs: &[u64],
    what: &str,
) -> (Result<RowResults, AccelError>, Vec<u64>) {
    let (mut fast, mut reference) = (rows.to_vec(), rows.to_vec());
    let fast_results = backend.ring(class, op, &mut fast, rhs);
    let reference_results = CpuBackend.ring(class, op, &mut reference, rhs);
    assert_eq!(
        fast_results,
        reference_results,
        "{} {class:?} {op:?} results: {what}",
        backend.name()
    );
    if fast != reference {
        let bad = fast
            .iter()
            .zip(&reference)
            .position(|(a, b)| a != b)
            .unwrap_or_default();
        panic!(
            "{} {class:?} {op:?} {what}: first difference at row {} index {}: {} vs reference {}",
            backend.name(),
            bad / DEGREE,
            bad % DEGREE,
            fast[bad],
            reference[bad]
        );
    }
    (fast_results, fast)
}

/// The rows of `rows` rotated by one row (a second operand unlike the first).
fn rotated(rows: &[u64]) -> Vec<u64> {
    let mut other = rows.to_vec();
    if !other.is_empty() {
        other.rotate_left(DEGREE);
    }
    other
}

#[test]
fn adversarial_rows_equal_the_reference_in_one_batch_and_in_chunks() {
    for backend in backends() {
        for class in NttClass::ALL {
            let input = adversarial_rows(class, 1);
            let count = input.len() / DEGREE;
            let rhs = rotated(&input);
            for op in OPS {
                let (results, whole) =
                    same_as_reference(&backend, class, op, &input, &rhs, "one batch");
                assert!(results.unwrap().iter().all(Result::is_ok));
                // The same rows cut into batches of 1..=9 rows (partial lane groups at every
                // offset) give the same rows.
                let (mut start, mut size) = (0, 1);
                while start < count {
                    let end = (start + size).min(count);
                    let range = start * DEGREE..end * DEGREE;
                    let mut part = input[range.clone()].to_vec();
                    let results = backend
                        .ring(class, op, &mut part, &rhs[range.clone()])
                        .unwrap();
                    assert_eq!(results.len(), end - start);
                    assert_eq!(
                        part, &whole[range],
                        "{class:?} {op:?}: rows {start}..{end} alone differ from the batch"
                    );
                    start = end;
                    size = size % 9 + 1;
                }
            }
            // Independent of the reference: the inverse undoes the forward transform.
            let mut there_and_back = input.clone();
            backend.forward_ntt(class, &mut there_and_back).unwrap();
            backend.inverse_ntt(class, &mut there_and_back).unwrap();
            assert_eq!(there_and_back, input, "{class:?} inverse ∘ forward");
        }
    }
}

#[test]
fn transforms_iterated_many_times_stay_equal_to_the_reference() {
    for backend in backends() {
        for class in NttClass::ALL {
            // 11 rows: a partial group for both lane widths (8 and 4).
            let start: Vec<u64> = adversarial_rows(class, 2)[..11 * DEGREE].to_vec();
            for op in [RingOp::Forward, RingOp::Inverse] {
                let (mut fast, mut reference) = (start.clone(), start.clone());
                for step in 0..40 {
                    backend.ring(class, op, &mut fast, &[]).unwrap();
                    CpuBackend.ring(class, op, &mut reference, &[]).unwrap();
                    assert_eq!(
                        fast,
                        reference,
                        "{} {class:?} {op:?} applied {} times",
                        backend.name(),
                        step + 1
                    );
                }
            }
        }
    }
}

/// Values ≥ q that a kernel would misread if a row slipped past the range check.
fn bad_values(class: NttClass) -> Vec<u64> {
    let q = class.modulus();
    let (bits, offset) = bits_and_offset(class);
    let top = 1u64 << bits;
    let mut values = vec![
        q,
        q + 1,
        top - 1,
        top,
        top + 1,
        top + q - 1,
        2 * q,
        (1 << 32) + 1,
        (1 << 32) + q - 1,
        (1 << 52) + 1,
        (1 << 52) + q - 1,
        1 << 53,
        1 << 63,
        (1 << 63) + q - 1,
        u64::MAX,
        u64::MAX - 1,
        // v + (2^k − q) wraps past 2^64 to a small value.
        0u64.wrapping_sub(offset),
        0u64.wrapping_sub(offset) + (offset - 1).min(q - 1),
        0u64.wrapping_sub(offset) + (offset - 1) / 2,
        // v + (2^k − q) lands just below 2^64.
        0u64.wrapping_sub(top) + q - 1,
        0u64.wrapping_sub(top),
    ];
    values.retain(|&v| v >= q);
    values.sort_unstable();
    values.dedup();
    values
}

/// `rows` with bad values planted in some rows (a deterministic choice from `seed`): returns
/// the batch and, per row, the expected first bad (index, value).
fn plant_bad_values(
    class: NttClass,
    mut rows: Vec<u64>,
    every: usize,
    seed: u64,
) -> (Vec<u64>, Vec<Option<(usize, u64)>>) {
    let bad = bad_values(class);
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let count = rows.len() / DEGREE;
    let mut expected = vec![None; count];
    for (r, slot) in expected.iter_mut().enumerate() {
        if rng.gen_range(0..every) != 0 {
            continue;
        }
        let index = match rng.gen_range(0..4) {
            0 => 0,
            1 => DEGREE - 1,
            _ => rng.gen_range(0..DEGREE),
        };
        let value = bad[rng.gen_range(0..bad.len())];
        rows[r * DEGREE + index] = value;
        // Sometimes a second bad value after the first: the error names the first.
        if index + 1 < DEGREE && rng.gen_bool(0.5) {
            let later = rng.gen_range(index + 1..DEGREE);
            rows[r * DEGREE + later] = bad[rng.gen_range(0..bad.len())];
        }
        *slot = Some((index, value));
    }
    (rows, expected)
}

/// One transform of a batch with planted bad rows: each bad row fails alone with its first
/// bad index and stays unchanged; everything equals the reference.
fn check_bad_rows(
    backend: &SimdCpuBackend,
    class: NttClass,
    op: RingOp,
    input: &[u64],
    expected: &[Option<(usize, u64)>],
) {
    let q = class.modulus();
    let what = format!("{} rows", expected.len());
    let (results, output) = same_as_reference(backend, class, op, input, &[], &what);
    let results = results.unwrap();
    assert_eq!(results.len(), expected.len());
    for (r, (result, bad)) in results.iter().zip(expected).enumerate() {
        match bad {
            Some((index, value)) => {
                assert_eq!(
                    *result,
                    Err(AccelError::CoefficientOutOfRange {
                        row: r,
                        index: *index,
                        value: *value,
                        modulus: q
                    }),
                    "{class:?} {op:?} row {r}"
                );
                assert_eq!(row(&output, r), row(input, r), "bad row {r} changed");
            }
            None => assert_eq!(*result, Ok(()), "{class:?} {op:?} good row {r}"),
        }
    }
}

#[test]
fn every_batch_size_from_0_to_40_with_bad_rows_mixed_in() {
    for backend in backends() {
        for class in NttClass::ALL {
            let pool = adversarial_rows(class, 3);
            let pool_rows = pool.len() / DEGREE;
            for size in 0..=40usize {
                let first = (size * 37) % (pool_rows - size);
                let clean = pool[first * DEGREE..(first + size) * DEGREE].to_vec();
                for op in [RingOp::Forward, RingOp::Inverse] {
                    let (results, _) = same_as_reference(&backend, class, op, &clean, &[], "");
                    assert_eq!(results.unwrap(), vec![Ok(()); size]);
                    for (every, seed) in [(3, 0), (1, 1)] {
                        let seed = seed + 100 * size as u64;
                        let (input, expected) = plant_bad_values(class, clean.clone(), every, seed);
                        check_bad_rows(&backend, class, op, &input, &expected);
                    }
                }
            }
        }
    }
}

#[test]
fn large_batches_with_rare_bad_rows() {
    for backend in backends() {
        for class in NttClass::ALL {
            for (size, seed) in [(1000, 5), (4096, 6)] {
                let clean = mixed_rows(class, size, seed);
                let (input, expected) = plant_bad_values(class, clean, 97, seed);
                assert!(expected.iter().any(Option::is_some));
                for op in [RingOp::Forward, RingOp::Inverse] {
                    check_bad_rows(&backend, class, op, &input, &expected);
                }
            }
        }
    }
}

#[test]
fn every_bad_value_at_every_position_is_caught() {
    // One bad value per row, at every position, for every bad value: the lane kernels must
    // never see it (a narrowing load or a 2^52 bias would read most of them as canonical).
    for backend in backends() {
        for class in NttClass::ALL {
            let q = class.modulus();
            let bad = bad_values(class);
            let good = vec![q - 1; DEGREE];
            let mut input = Vec::new();
            let mut expected = Vec::new();
            for (i, &value) in bad.iter().enumerate() {
                for position in (i % 4..DEGREE).step_by(4) {
                    let mut r = good.clone();
                    r[position] = value;
                    input.extend_from_slice(&r);
                    expected.push(Some((position, value)));
                    // A good row between bad ones: lane groups mix both.
                    input.extend_from_slice(&good);
                    expected.push(None);
                }
            }
            for op in [RingOp::Forward, RingOp::Inverse] {
                check_bad_rows(&backend, class, op, &input, &expected);
            }
        }
    }
}

#[test]
fn pointwise_bad_values_in_either_operand_fail_that_row_alone() {
    for backend in backends() {
        for class in NttClass::ALL {
            let q = class.modulus();
            let lhs = mixed_rows(class, 12, 7);
            let rhs = mixed_rows(class, 12, 8);
            let bad = bad_values(class);
            let (mut l, mut r) = (lhs.clone(), rhs.clone());
            l[2 * DEGREE + 9] = bad[0];
            r[5 * DEGREE + 200] = bad[bad.len() - 1];
            l[7 * DEGREE + 3] = q;
            r[7 * DEGREE + 1] = u64::MAX;
            let (results, out) =
                same_as_reference(&backend, class, RingOp::Pointwise, &l, &r, "bad operands");
            let results = results.unwrap();
            let failed: Vec<usize> = (0..12).filter(|&i| results[i].is_err()).collect();
            assert_eq!(failed, [2, 5, 7]);
            assert_eq!(
                results[5],
                Err(AccelError::CoefficientOutOfRange {
                    row: 5,
                    index: 200,
                    value: bad[bad.len() - 1],
                    modulus: q
                })
            );
            for i in failed {
                assert_eq!(row(&out, i), row(&l, i), "row {i} changed");
            }
        }
    }
}

#[test]
fn malformed_calls_change_nothing() {
    for backend in backends() {
        for class in NttClass::ALL {
            let q = class.modulus();
            for len in [1, DEGREE - 1, DEGREE + 1, 2 * DEGREE - 1, 3 * DEGREE + 7] {
                // Some bad values as well: the shape error wins, nothing is touched.
                let mut rows: Vec<u64> = (0..len as u64).map(|i| i % (q + 1)).collect();
                let before = rows.clone();
                for op in [RingOp::Forward, RingOp::Inverse] {
                    assert_eq!(
                        backend.ring(class, op, &mut rows, &[]),
                        Err(AccelError::Shape {
                            len,
                            degree: DEGREE,
                            other_len: len
                        })
                    );
                    assert_eq!(rows, before);
                }
            }
            let mut lhs = mixed_rows(class, 2, 9);
            let before = lhs.clone();
            for rhs_rows in [0, 1, 3] {
                let rhs = vec![0; rhs_rows * DEGREE];
                assert_eq!(
                    backend.pointwise_mul(class, &mut lhs, &rhs),
                    Err(AccelError::Shape {
                        len: 2 * DEGREE,
                        degree: DEGREE,
                        other_len: rhs_rows * DEGREE
                    })
                );
                assert_eq!(lhs, before);
            }
            // A transform ignores `rhs`, whatever its length.
            let mut rows = before.clone();
            assert_eq!(
                backend.ring(class, RingOp::Forward, &mut rows, &[1, 2, 3]),
                Ok(vec![Ok(()); 2])
            );
            // Empty batches.
            for op in OPS {
                assert_eq!(backend.ring(class, op, &mut [], &[]), Ok(Vec::new()));
            }
        }
    }
}

/// Runs `f` on its own thread and fails if it has not finished after `secs` seconds.
fn finishes_within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .unwrap_or_else(|_| panic!("did not finish within {secs} s"))
}

/// Inputs and reference outputs for the concurrency tests: (class, op, input, rhs, output).
type Case = (NttClass, RingOp, Vec<u64>, Vec<u64>, Vec<u64>);

fn cases(count: usize) -> Vec<Case> {
    (0..count)
        .map(|i| {
            let class = NttClass::ALL[i % NttClass::ALL.len()];
            let op = OPS[(i / 4) % 3];
            // Sizes on both sides of the lane widths and of PARALLEL_ROWS.
            let rows = [1, 3, 4, 7, 8, 9, 31, 32, 40, 65][i % 10];
            let input = mixed_rows(class, rows, i as u64);
            let rhs = mixed_rows(class, rows, 1000 + i as u64);
            let mut output = input.clone();
            CpuBackend.ring(class, op, &mut output, &rhs).unwrap();
            (class, op, input, rhs, output)
        })
        .collect()
}

fn run_case(backend: &dyn BatchArithmetic, (class, op, input, rhs, output): &Case) {
    let mut rows = input.clone();
    let results = backend.ring(*class, *op, &mut rows, rhs).unwrap();
    assert!(results.iter().all(Result::is_ok));
    assert!(
        rows == *output,
        "{class:?} {op:?} {} rows",
        input.len() / DEGREE
    );
}

#[test]
fn many_threads_at_once_get_the_reference_results() {
    let cases = Arc::new(cases(40));
    finishes_within(120, move || {
        for backend in backends() {
            let shared: Arc<dyn BatchArithmetic> = Arc::new(backend);
            std::thread::scope(|s| {
                for t in 0..8 {
                    let (shared, cases) = (Arc::clone(&shared), &cases);
                    s.spawn(move || {
                        for i in 0..cases.len() {
                            run_case(shared.as_ref(), &cases[(i * 7 + t) % cases.len()]);
                        }
                    });
                }
            });
        }
    });
}

#[test]
fn calls_from_inside_rayon_pools_do_not_deadlock_and_are_exact() {
    let cases = Arc::new(cases(40));
    finishes_within(120, move || {
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            for backend in backends() {
                // Batches of 32 or more rows spread over the pool from inside its own workers.
                pool.install(|| {
                    cases.par_iter().for_each(|case| run_case(&backend, case));
                });
                // And from inside the global pool.
                cases.par_iter().for_each(|case| run_case(&backend, case));
            }
        }
    });
}

/// A value for the property tests: mostly canonical (biased to the edges), sometimes not.
fn value(q: u64, bad_weight: u32) -> impl Strategy<Value = u64> {
    prop_oneof![
        8 => 0..q,
        4 => (q - 16)..q,
        2 => Just(0u64),
        bad_weight => prop_oneof![q..=q + 16, Just(u64::MAX), any::<u64>(), (1u64 << 63)..]
    ]
}

fn class_strategy() -> impl Strategy<Value = NttClass> {
    (0..NttClass::ALL.len()).prop_map(|i| NttClass::ALL[i])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Random batches of edge-biased rows, a few values out of range, every op and class.
    #[test]
    fn random_batches_equal_the_reference(
        (class, lhs, rhs) in class_strategy().prop_flat_map(|class| {
            let q = class.modulus();
            (0usize..20).prop_flat_map(move |rows| (
                Just(class),
                prop::collection::vec(value(q, 1), rows * DEGREE),
                prop::collection::vec(value(q, 1), rows * DEGREE),
            ))
        }),
        op in (0usize..3).prop_map(|i| OPS[i]),
        portable in any::<bool>(),
    ) {
        let backend = if portable { SimdCpuBackend::portable() } else { SimdCpuBackend::new() };
        let _ = same_as_reference(&backend, class, op, &lhs, &rhs, "random batch");
    }
}
