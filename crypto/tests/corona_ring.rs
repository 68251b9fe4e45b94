//! Corona ring arithmetic against independent references: the NTT product against an O(n²)
//! schoolbook negacyclic product computed with `%` on u128, the transforms' round trips and
//! linearity, Z_q edge values, canonical-encoding rejection, vector/matrix products against
//! per-entry products, and the CPU acceleration backend against the per-polynomial API.

use proptest::prelude::*;
use quasar_crypto::accel::{AccelError, BatchArithmetic, CpuBackend, NttClass};
use quasar_crypto::corona::params::{DEGREE, M, N, Q};
use quasar_crypto::corona::ring::{NttMatrix, NttPoly, NttVec, Poly, PolyVec, RingError, Zq, PSI};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// The reference product in Z_q[X]/(X^256 + 1): X^256 = −1, exact u128 arithmetic.
fn schoolbook(a: &Poly, b: &Poly) -> Poly {
    let q = u128::from(Q);
    let mut acc = [0u128; DEGREE];
    for (i, &x) in a.coefficients().iter().enumerate() {
        for (j, &y) in b.coefficients().iter().enumerate() {
            let p = u128::from(x) * u128::from(y) % q;
            let k = (i + j) % DEGREE;
            acc[k] = if i + j < DEGREE {
                (acc[k] + p) % q
            } else {
                (acc[k] + q - p) % q
            };
        }
    }
    Poly::from_coefficients(&acc.map(|v| v as u64)).unwrap()
}

fn ntt_product(a: &Poly, b: &Poly) -> Poly {
    (&a.ntt() * &b.ntt()).intt()
}

fn random_poly(rng: &mut ChaCha20Rng) -> Poly {
    let c: Vec<u64> = (0..DEGREE).map(|_| rng.gen_range(0..Q)).collect();
    Poly::from_coefficients(&c).unwrap()
}

fn random_ntt(rng: &mut ChaCha20Rng) -> NttPoly {
    let c: Vec<u64> = (0..DEGREE).map(|_| rng.gen_range(0..Q)).collect();
    NttPoly::from_coefficients(&c).unwrap()
}

fn monomial(k: usize) -> Poly {
    let mut c = [0u64; DEGREE];
    c[k] = 1;
    Poly::from_coefficients(&c).unwrap()
}

fn constant_poly(v: u64) -> Poly {
    Poly::from_coefficients(&[v; DEGREE]).unwrap()
}

/// Zero, one, X, X^255, all q−1, all (q−1)/2, and a few random polynomials.
fn edge_polys() -> Vec<Poly> {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let mut v = vec![
        Poly::ZERO,
        monomial(0),
        monomial(1),
        monomial(DEGREE - 1),
        constant_poly(Q - 1),
        constant_poly((Q - 1) / 2),
    ];
    v.extend((0..3).map(|_| random_poly(&mut rng)));
    v
}

#[test]
fn psi_is_a_primitive_512th_root_of_unity() {
    let psi = Zq::new(PSI).unwrap();
    assert_eq!(psi.pow(256), -Zq::ONE);
    assert_eq!(psi.pow(512), Zq::ONE);
}

#[test]
fn ntt_product_matches_schoolbook_on_edge_and_random_polynomials() {
    let polys = edge_polys();
    for a in &polys {
        for b in &polys {
            assert_eq!(ntt_product(a, b), schoolbook(a, b));
        }
    }
}

#[test]
fn x_to_the_255_times_x_is_minus_one() {
    // The negacyclic wrap: X^255 · X = X^256 = −1.
    let product = ntt_product(&monomial(DEGREE - 1), &monomial(1));
    assert_eq!(product, -&monomial(0));
}

#[test]
fn intt_inverts_ntt_and_ntt_inverts_intt() {
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    for a in edge_polys() {
        assert_eq!(a.ntt().intt(), a);
    }
    for _ in 0..20 {
        let a = random_ntt(&mut rng);
        assert_eq!(a.intt().ntt(), a);
    }
}

#[test]
fn ntt_of_one_is_all_ones_and_of_a_constant_is_constant() {
    // The evaluations of the constant c at every root are c.
    assert_eq!(monomial(0).ntt().coefficients(), &[1u64; DEGREE]);
    let c = Poly::from_signed(&{
        let mut v = [0i64; DEGREE];
        v[0] = -5;
        v
    });
    assert_eq!(c.ntt().coefficients(), &[Q - 5; DEGREE]);
}

#[test]
fn ntt_is_linear() {
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    for _ in 0..20 {
        let (a, b) = (random_poly(&mut rng), random_poly(&mut rng));
        let s = Zq::new(rng.gen_range(0..Q)).unwrap();
        assert_eq!((&a + &b).ntt(), &a.ntt() + &b.ntt());
        assert_eq!((&a - &b).ntt(), &a.ntt() - &b.ntt());
        assert_eq!((-&a).ntt(), -&a.ntt());
        assert_eq!(a.scalar_mul(s).ntt(), a.ntt().scalar_mul(s));
    }
}

#[test]
fn zq_edge_values() {
    let q1 = Zq::new(Q - 1).unwrap();
    assert_eq!(q1 + Zq::ONE, Zq::ZERO);
    assert_eq!(Zq::ZERO - Zq::ONE, q1);
    assert_eq!(-Zq::ZERO, Zq::ZERO);
    assert_eq!(-Zq::ONE, q1);
    // (−1)·(−1) = 1: the largest product of canonical residues, (q−1)² ≈ 2^96.
    assert_eq!(q1 * q1, Zq::ONE);
    assert_eq!(q1 * Zq::ONE, q1);
    assert_eq!(q1 * Zq::ZERO, Zq::ZERO);
    // Products just below and above 2^96, against exact u128 arithmetic.
    let q = u128::from(Q);
    for (a, b) in [
        (Q - 1, Q - 2),
        (1 << 48, 1 << 48),
        ((1 << 48) - 1, 1 << 48),
        (Q - 1, 1 << 47),
    ] {
        let expected = (u128::from(a) * u128::from(b) % q) as u64;
        assert_eq!(
            (Zq::new(a).unwrap() * Zq::new(b).unwrap()).value(),
            expected
        );
    }
    assert_eq!(Zq::reduce(u64::MAX).value(), u64::MAX % Q);
    assert_eq!(Zq::reduce(Q).value(), 0);
    assert_eq!(
        Zq::from_i64(i64::MIN).value(),
        (i128::from(i64::MIN).rem_euclid(i128::from(Q))) as u64
    );
    assert_eq!(Zq::from_i64(i64::MAX).value(), i64::MAX as u64 % Q);
    assert_eq!(Zq::from_i64(-1), q1);
    assert_eq!(Zq::from_i64(0), Zq::ZERO);
}

#[test]
fn zq_rejects_non_canonical_values() {
    assert_eq!(
        Zq::new(Q),
        Err(RingError::CoefficientOutOfRange { index: 0, value: Q })
    );
    assert_eq!(
        Zq::new(u64::MAX),
        Err(RingError::CoefficientOutOfRange {
            index: 0,
            value: u64::MAX
        })
    );
}

#[test]
fn zq_inverse() {
    assert_eq!(Zq::ZERO.inv(), Err(RingError::NotInvertible));
    assert_eq!(Zq::ONE.inv(), Ok(Zq::ONE));
    let q1 = Zq::new(Q - 1).unwrap();
    assert_eq!(q1.inv(), Ok(q1));
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    for _ in 0..50 {
        let a = Zq::new(rng.gen_range(1..Q)).unwrap();
        assert_eq!(a * a.inv().unwrap(), Zq::ONE);
    }
    // A Lagrange coefficient at 0 for the set {1, 3}: λ_1 = 3/(3−1), so 2·λ_1 = 3.
    let lambda = Zq::from_i64(3) * (Zq::from_i64(3) - Zq::from_i64(1)).inv().unwrap();
    assert_eq!(lambda * Zq::from_i64(2), Zq::from_i64(3));
}

#[test]
fn zq_pow() {
    let a = Zq::new(123_456_789).unwrap();
    assert_eq!(a.pow(0), Zq::ONE);
    assert_eq!(a.pow(1), a);
    assert_eq!(a.pow(3), a * a * a);
    assert_eq!(a.pow(Q - 1), Zq::ONE);
}

#[test]
fn centered_lift_boundaries() {
    let half = (Q - 1) / 2;
    assert_eq!(Zq::ZERO.centered(), 0);
    assert_eq!(Zq::new(half).unwrap().centered(), half as i64);
    assert_eq!(Zq::new(half + 1).unwrap().centered(), -(half as i64));
    assert_eq!(Zq::new(Q - 1).unwrap().centered(), -1);
    let mut signed = [0i64; DEGREE];
    signed[0] = half as i64;
    signed[1] = -(half as i64);
    signed[2] = -1;
    signed[3] = 7;
    assert_eq!(Poly::from_signed(&signed).to_centered(), signed);
}

#[test]
fn from_coefficients_rejects_values_at_or_above_q_and_wrong_lengths() {
    let mut c = [0u64; DEGREE];
    c[17] = Q;
    assert_eq!(
        Poly::from_coefficients(&c),
        Err(RingError::CoefficientOutOfRange {
            index: 17,
            value: Q
        })
    );
    c[17] = Q - 1;
    c[200] = u64::MAX;
    assert_eq!(
        NttPoly::from_coefficients(&c),
        Err(RingError::CoefficientOutOfRange {
            index: 200,
            value: u64::MAX
        })
    );
    assert_eq!(
        Poly::from_coefficients(&[0; DEGREE - 1]),
        Err(RingError::Length {
            expected: DEGREE,
            got: DEGREE - 1
        })
    );
    assert_eq!(
        NttPoly::from_coefficients(&[0; DEGREE + 1]),
        Err(RingError::Length {
            expected: DEGREE,
            got: DEGREE + 1
        })
    );
}

/// A·z against a sum of per-entry products, for one shape (the accumulation pairs terms, so
/// both even and odd column counts matter).
fn check_mul_vec<const R: usize, const C: usize>(rng: &mut ChaCha20Rng) {
    let a: NttMatrix<R, C> = NttMatrix::from_fn(|_, _| random_ntt(rng));
    let z: NttVec<C> = NttVec::from_fn(|_| random_ntt(rng));
    let az = a.mul_vec(&z);
    for i in 0..R {
        let mut expected = NttPoly::ZERO;
        for j in 0..C {
            expected += &(a.get(i, j).unwrap() * z.get(j).unwrap());
        }
        assert_eq!(az.get(i).unwrap(), &expected);
    }
}

#[test]
fn matrix_vector_and_matrix_products_match_per_entry_products() {
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    check_mul_vec::<M, N>(&mut rng);
    check_mul_vec::<3, 1>(&mut rng);
    check_mul_vec::<2, 4>(&mut rng);
    check_mul_vec::<1, 49>(&mut rng);
    let a: NttMatrix<M, N> = NttMatrix::from_fn(|_, _| random_ntt(&mut rng));
    // One column of A·R equals A times that column.
    let r: NttMatrix<N, 3> = NttMatrix::from_fn(|_, _| random_ntt(&mut rng));
    let ar = a.mul_mat(&r);
    for k in 0..3 {
        let column: NttVec<N> = NttVec::from_fn(|j| r.get(j, k).unwrap().clone());
        let expected = a.mul_vec(&column);
        for i in 0..M {
            assert_eq!(ar.get(i, k), expected.get(i));
        }
    }
    assert_eq!(a.get(M, 0), None);
    assert_eq!(a.get(0, N), None);
}

#[test]
fn matrix_vector_product_in_ntt_form_matches_schoolbook() {
    let mut rng = ChaCha20Rng::seed_from_u64(6);
    let a_coeff: Vec<Poly> = (0..2 * 3).map(|_| random_poly(&mut rng)).collect();
    let z = PolyVec::<3>::from_fn(|_| random_poly(&mut rng));
    let a: NttMatrix<2, 3> = NttMatrix::from_fn(|i, j| a_coeff[i * 3 + j].ntt());
    let az = a.mul_vec(&z.ntt()).intt();
    for i in 0..2 {
        let mut expected = Poly::ZERO;
        for j in 0..3 {
            expected += &schoolbook(&a_coeff[i * 3 + j], z.get(j).unwrap());
        }
        assert_eq!(az.get(i).unwrap(), &expected);
    }
}

#[test]
fn inner_product_of_all_q_minus_1_is_exact() {
    // 49 products of (q−1)² accumulate to ≈ 2^101.6 before the single reduction: 49·1 = 49.
    let top = NttPoly::from_coefficients(&[Q - 1; DEGREE]).unwrap();
    let d: NttMatrix<1, 49> = NttMatrix::from_fn(|_, _| top.clone());
    let u: NttVec<49> = NttVec::from_fn(|_| top.clone());
    assert_eq!(
        d.mul_vec(&u).get(0).unwrap().coefficients(),
        &[49u64; DEGREE]
    );
}

#[test]
fn vector_operations() {
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let x: NttVec<N> = NttVec::from_fn(|_| random_ntt(&mut rng));
    let y: NttVec<N> = NttVec::from_fn(|_| random_ntt(&mut rng));
    let c = random_ntt(&mut rng);
    let mut s = x.clone();
    s += &y;
    s -= &y;
    assert_eq!(s, x);
    let cx = x.mul_poly(&c);
    for (p, e) in cx.as_slice().iter().zip(x.as_slice()) {
        assert_eq!(p, &(e * &c));
    }
    assert_eq!(x.intt().ntt(), x);
    let mut m: NttMatrix<2, 2> = NttMatrix::from_fn(|_, _| c.clone());
    m += &NttMatrix::from_fn(|_, _| -&c);
    assert_eq!(m, NttMatrix::from_fn(|_, _| NttPoly::ZERO));
}

#[test]
fn cpu_backend_batch_equals_per_polynomial_results() {
    let mut rng = ChaCha20Rng::seed_from_u64(8);
    let backend = CpuBackend;
    let polys: Vec<Poly> = (0..5).map(|_| random_poly(&mut rng)).collect();
    let others: Vec<NttPoly> = (0..5).map(|_| random_ntt(&mut rng)).collect();
    let mut rows: Vec<u64> = polys.iter().flat_map(|p| *p.coefficients()).collect();

    let results = backend.forward_ntt(NttClass::Corona, &mut rows).unwrap();
    assert!(results.iter().all(Result::is_ok));
    for (row, p) in rows.chunks(DEGREE).zip(&polys) {
        assert_eq!(row, p.ntt().coefficients());
    }

    let rhs: Vec<u64> = others.iter().flat_map(|p| *p.coefficients()).collect();
    let results = backend
        .pointwise_mul(NttClass::Corona, &mut rows, &rhs)
        .unwrap();
    assert_eq!(results.len(), 5);
    for ((row, p), o) in rows.chunks(DEGREE).zip(&polys).zip(&others) {
        assert_eq!(row, (&p.ntt() * o).coefficients());
    }

    let results = backend.inverse_ntt(NttClass::Corona, &mut rows).unwrap();
    assert!(results.iter().all(Result::is_ok));
    for ((row, p), o) in rows.chunks(DEGREE).zip(&polys).zip(&others) {
        assert_eq!(row, (&p.ntt() * o).intt().coefficients());
    }
}

#[test]
fn cpu_backend_fails_only_the_row_with_a_value_at_or_above_q() {
    let mut rng = ChaCha20Rng::seed_from_u64(9);
    let backend = CpuBackend;
    let polys: Vec<Poly> = (0..3).map(|_| random_poly(&mut rng)).collect();
    let mut rows: Vec<u64> = polys.iter().flat_map(|p| *p.coefficients()).collect();
    rows[DEGREE + 9] = Q;
    let bad_row = rows[DEGREE..2 * DEGREE].to_vec();
    let results = backend.forward_ntt(NttClass::Corona, &mut rows).unwrap();
    assert_eq!(results[0], Ok(()));
    assert_eq!(
        results[1],
        Err(AccelError::CoefficientOutOfRange {
            row: 1,
            index: 9,
            value: Q,
            modulus: Q
        })
    );
    assert_eq!(results[2], Ok(()));
    assert_eq!(&rows[..DEGREE], polys[0].ntt().coefficients());
    assert_eq!(
        &rows[DEGREE..2 * DEGREE],
        &bad_row[..],
        "a failed row is left unchanged"
    );
    assert_eq!(&rows[2 * DEGREE..], polys[2].ntt().coefficients());

    // A bad value in the right operand fails that row of a pointwise product.
    let mut lhs = vec![1u64; 2 * DEGREE];
    let mut rhs = vec![2u64; 2 * DEGREE];
    rhs[DEGREE] = u64::MAX;
    let results = backend
        .pointwise_mul(NttClass::Corona, &mut lhs, &rhs)
        .unwrap();
    assert_eq!(results[0], Ok(()));
    assert!(matches!(
        results[1],
        Err(AccelError::CoefficientOutOfRange {
            row: 1,
            index: 0,
            ..
        })
    ));
    assert_eq!(&lhs[..DEGREE], &[2u64; DEGREE][..]);
    assert_eq!(&lhs[DEGREE..], &[1u64; DEGREE][..]);
}

#[test]
fn cpu_backend_rejects_malformed_batches_whole() {
    let backend = CpuBackend;
    let mut rows = vec![0u64; DEGREE + 1];
    assert_eq!(
        backend.forward_ntt(NttClass::Corona, &mut rows),
        Err(AccelError::Shape {
            len: DEGREE + 1,
            degree: DEGREE,
            other_len: DEGREE + 1
        })
    );
    let mut lhs = vec![0u64; DEGREE];
    let rhs = vec![0u64; 2 * DEGREE];
    assert!(matches!(
        backend.pointwise_mul(NttClass::Corona, &mut lhs, &rhs),
        Err(AccelError::Shape { .. })
    ));
    // An empty batch is well formed and has no rows.
    assert_eq!(backend.inverse_ntt(NttClass::Corona, &mut []), Ok(vec![]));
    assert_eq!(NttClass::Corona.modulus(), Q);
    assert_eq!(NttClass::Corona.degree(), DEGREE);
}

fn poly_strategy() -> impl Strategy<Value = Poly> {
    proptest::collection::vec(0..Q, DEGREE).prop_map(|c| Poly::from_coefficients(&c).unwrap())
}

fn small_signed_strategy() -> impl Strategy<Value = [i64; DEGREE]> {
    proptest::collection::vec(-(1i64 << 40)..(1i64 << 40), DEGREE)
        .prop_map(|v| <[i64; DEGREE]>::try_from(v).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn prop_ntt_round_trip(a in poly_strategy()) {
        prop_assert_eq!(a.ntt().intt(), a);
    }

    #[test]
    fn prop_signed_round_trip(v in small_signed_strategy()) {
        prop_assert_eq!(Poly::from_signed(&v).to_centered(), v);
    }

    #[test]
    fn prop_ntt_product_matches_schoolbook(a in poly_strategy(), b in poly_strategy()) {
        prop_assert_eq!(ntt_product(&a, &b), schoolbook(&a, &b));
    }
}

#[test]
fn zeroize_wipes_polynomials_vectors_and_matrices() {
    use zeroize::Zeroize;
    let p = Poly::from_signed(&[5; 256]);
    let mut q = p.ntt();
    q.zeroize();
    assert_eq!(q, NttPoly::ZERO);
    let mut v = NttVec::<3>::from_fn(|_| p.ntt());
    v.zeroize();
    assert!(v.as_slice().iter().all(|x| *x == NttPoly::ZERO));
    let mut m = NttMatrix::<2, 2>::from_fn(|_, _| p.ntt());
    m.zeroize();
    assert!((0..2).all(|i| (0..2).all(|j| m.get(i, j) == Some(&NttPoly::ZERO))));
}
