//! The BLS12-381 workloads of the acceleration seam on the CPU backend: the F_r NTT against the
//! O(N²) definition in every convention of `ScalarTransform`, MSMs against sums of scalar
//! multiplications, and the shape rules (a bad batch changes nothing; a bad MSM request fails
//! alone).

use ark_bls12_381::{Fr, G1Affine, G1Projective, G2Affine, G2Projective};
use ark_ec::{CurveGroup, PrimeGroup};
use ark_ff::{FftField, Field, One, UniformRand, Zero};
use quasar_crypto::accel::{AccelError, BatchArithmetic, CpuBackend, MsmRequest, ScalarTransform};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn random_row(len: usize, rng: &mut ChaCha20Rng) -> Vec<Fr> {
    (0..len).map(|_| Fr::rand(rng)).collect()
}

/// out_i = Σ_j c_j·(shift·ω^i)^j.
fn naive_evaluations(coefficients: &[Fr], shift: Fr) -> Vec<Fr> {
    let n = coefficients.len();
    let omega = Fr::get_root_of_unity(n as u64).unwrap();
    (0..n)
        .map(|i| {
            let point = shift * omega.pow([i as u64]);
            coefficients
                .iter()
                .rev()
                .fold(Fr::zero(), |acc, c| acc * point + c)
        })
        .collect()
}

#[test]
fn scalar_ntt_matches_the_definition() {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    for n in [1, 2, 4, 8, 32] {
        let coefficients = [random_row(n, &mut rng), random_row(n, &mut rng)];
        for (forward, inverse, shift) in [
            (
                ScalarTransform::Forward,
                ScalarTransform::Inverse,
                Fr::one(),
            ),
            (
                ScalarTransform::CosetForward,
                ScalarTransform::CosetInverse,
                Fr::GENERATOR,
            ),
        ] {
            let mut rows = coefficients.to_vec();
            CpuBackend.scalar_ntt(forward, &mut rows).unwrap();
            for (row, c) in rows.iter().zip(&coefficients) {
                assert_eq!(row, &naive_evaluations(c, shift), "n {n} {forward:?}");
            }
            CpuBackend.scalar_ntt(inverse, &mut rows).unwrap();
            assert_eq!(rows, coefficients, "n {n} {inverse:?}");
        }
    }
    // The coset shift is 7, as the docs say.
    assert_eq!(Fr::GENERATOR, Fr::from(7u64));
}

#[test]
fn scalar_ntt_rows_are_independent() {
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let rows: Vec<Vec<Fr>> = (0..3).map(|_| random_row(16, &mut rng)).collect();
    let mut batch = rows.clone();
    CpuBackend
        .scalar_ntt(ScalarTransform::CosetForward, &mut batch)
        .unwrap();
    for (row, out) in rows.iter().zip(&batch) {
        let mut single = vec![row.clone()];
        CpuBackend
            .scalar_ntt(ScalarTransform::CosetForward, &mut single)
            .unwrap();
        assert_eq!(&single[0], out);
    }
}

#[test]
fn scalar_ntt_refuses_bad_shapes_and_changes_nothing() {
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let cases = [
        (vec![random_row(8, &mut rng), random_row(4, &mut rng)], 1, 4),
        (vec![random_row(6, &mut rng)], 0, 6),
        (vec![random_row(8, &mut rng), random_row(0, &mut rng)], 1, 0),
    ];
    for (rows, bad_row, bad_len) in cases {
        let mut batch = rows.clone();
        let error = CpuBackend
            .scalar_ntt(ScalarTransform::Forward, &mut batch)
            .unwrap_err();
        assert_eq!(
            error,
            AccelError::ScalarShape {
                row: bad_row,
                len: bad_len
            }
        );
        assert_eq!(batch, rows);
    }
    let mut none: Vec<Vec<Fr>> = Vec::new();
    CpuBackend
        .scalar_ntt(ScalarTransform::Inverse, &mut none)
        .unwrap();
}

#[test]
fn msm_matches_the_sum_of_products_and_bad_requests_fail_alone() {
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    let scalars = random_row(70, &mut rng);
    let g1: Vec<G1Affine> = (0..70)
        .map(|i| {
            if i == 3 {
                G1Affine::identity()
            } else {
                (G1Projective::generator() * Fr::rand(&mut rng)).into_affine()
            }
        })
        .collect();
    let g2: Vec<G2Affine> = (0..70)
        .map(|_| (G2Projective::generator() * Fr::rand(&mut rng)).into_affine())
        .collect();
    let expected_g1: G1Projective = g1.iter().zip(&scalars).map(|(p, s)| *p * s).sum();
    let expected_g2: G2Projective = g2.iter().zip(&scalars).map(|(p, s)| *p * s).sum();

    let results = CpuBackend
        .msm_g1(&[
            MsmRequest {
                bases: &g1,
                scalars: &scalars,
            },
            MsmRequest {
                bases: &g1[..5],
                scalars: &scalars[..4],
            },
            MsmRequest {
                bases: &[],
                scalars: &[],
            },
        ])
        .unwrap();
    assert_eq!(results[0], Ok(expected_g1));
    assert_eq!(
        results[1],
        Err(AccelError::MsmLength {
            request: 1,
            bases: 5,
            scalars: 4
        })
    );
    assert_eq!(results[2], Ok(G1Projective::zero()));

    let results = CpuBackend
        .msm_g2(&[MsmRequest {
            bases: &g2,
            scalars: &scalars,
        }])
        .unwrap();
    assert_eq!(results, vec![Ok(expected_g2)]);
}
