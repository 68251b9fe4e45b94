//! ML-KEM's ring kernels (FIPS 203 §4.3) against the definitions: products through each NTT
//! equal schoolbook products in Z_q[X]/(X^256 + 1) and Z_q[X]/(X^256 − 1), the inverses undo
//! the transforms, and the slot convention of the incomplete NTT matches FIPS 203 Appendix A
//! (the image of X² holds γ_i = ζ^(2·brv7(i)+1) in pair i: 17, −17, 2761, −2761, …).

use proptest::prelude::*;
use quasar_crypto::accel::pow_mod;
use quasar_crypto::mlkem::{cyclic_intt, cyclic_ntt, intt, multiply_ntts, ntt, pointwise, N, Q};

/// The schoolbook product modulo X^256 − sign (sign = −1: negacyclic, +1: cyclic).
fn schoolbook(a: &[u64; N], b: &[u64; N], negacyclic: bool) -> [u64; N] {
    let mut c = [0u64; N];
    for (i, &x) in a.iter().enumerate() {
        for (j, &y) in b.iter().enumerate() {
            let p = x * y % Q;
            let k = (i + j) % N;
            c[k] = if i + j >= N && negacyclic {
                (c[k] + Q - p) % Q
            } else {
                (c[k] + p) % Q
            };
        }
    }
    c
}

fn poly() -> impl Strategy<Value = [u64; N]> {
    prop::collection::vec(0..Q, N).prop_map(|v| v.try_into().expect("256 values"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn products_through_the_incomplete_ntt_are_negacyclic_products(a in poly(), b in poly()) {
        let (mut fa, mut fb) = (a, b);
        ntt(&mut fa);
        ntt(&mut fb);
        multiply_ntts(&mut fa, &fb);
        intt(&mut fa);
        prop_assert_eq!(fa, schoolbook(&a, &b, true));
    }

    #[test]
    fn products_through_the_cyclic_ntt_are_cyclic_products(a in poly(), b in poly()) {
        let (mut fa, mut fb) = (a, b);
        cyclic_ntt(&mut fa);
        cyclic_ntt(&mut fb);
        pointwise(&mut fa, &fb);
        cyclic_intt(&mut fa);
        prop_assert_eq!(fa, schoolbook(&a, &b, false));
    }

    #[test]
    fn the_inverses_undo_the_transforms(a in poly()) {
        let mut f = a;
        ntt(&mut f);
        prop_assert!(f.iter().all(|&v| v < Q));
        intt(&mut f);
        prop_assert_eq!(f, a);
        cyclic_ntt(&mut f);
        prop_assert!(f.iter().all(|&v| v < Q));
        cyclic_intt(&mut f);
        prop_assert_eq!(f, a);
    }
}

#[test]
fn the_incomplete_ntt_has_fips_203_slots() {
    // X mod (X² − γ_i) = X: every pair is (0, 1).
    let mut x = [0u64; N];
    x[1] = 1;
    ntt(&mut x);
    for pair in x.chunks_exact(2) {
        assert_eq!(pair, [0, 1]);
    }
    // X² mod (X² − γ_i) = γ_i.
    let mut x2 = [0u64; N];
    x2[2] = 1;
    ntt(&mut x2);
    let gammas: Vec<u64> = x2.chunks_exact(2).map(|p| p[0]).collect();
    assert_eq!(gammas[..8], [17, 3312, 2761, 568, 583, 2746, 2649, 680]);
    assert!(x2.chunks_exact(2).all(|p| p[1] == 0));
}

#[test]
fn the_cyclic_ntt_evaluates_at_powers_of_zeta() {
    // The all-ones polynomial evaluates to 256 at X = 1 and to 0 at every other 256-th root.
    let mut ones = [1u64; N];
    cyclic_ntt(&mut ones);
    assert_eq!(ones[0], 256);
    assert!(ones[1..].iter().all(|&v| v == 0));
    // X evaluates to the points themselves: 256 distinct roots of X^256 − 1.
    let mut x = [0u64; N];
    x[1] = 1;
    cyclic_ntt(&mut x);
    let mut points = x.to_vec();
    points.sort_unstable();
    points.dedup();
    assert_eq!(points.len(), N);
    assert!(x.iter().all(|&p| pow_mod(p, 256, Q) == 1));
}
