//! Arithmetic in ML-DSA's ring R_q = Z_q\[X\]/(X^256 + 1), q = 8,380,417 (FIPS 204 §2.3, §7.5),
//! optimized for Pulsar's signing rounds: Montgomery multiplication (R = 2^32) and the
//! negacyclic NTT of FIPS 204 Algorithms 41–42, with the same slot order (ŵ\[i\] =
//! w(ζ^(2·brv8(i)+1)), ζ = 1753), so an image here equals `rollup::native::ntt`'s (the tests
//! check it against that reference).
//!
//! Every polynomial is `[i32; 256]`; functions take and return canonical residues in [0, q)
//! unless they say otherwise. Butterflies run on lazily reduced values (|x| < 9q < 2^27 after
//! eight levels), reduced once at the end. Coefficient-wise products and sums of products are
//! exact in u64 and reduced once per output coefficient.

use crate::rollup::native::{pow_mod, N, Q as Q_U32, ZETA};

/// The modulus q = 2^23 − 2^13 + 1.
pub const Q: i32 = Q_U32 as i32;
/// q^{-1} mod 2^32.
const Q_INV: i32 = 58_728_449;
/// 256^{-1}·R mod q: the final scaling of the inverse NTT.
const N_INV_MONT: i32 = 16_382;

/// A polynomial of R_q, coefficients in [0, q) (or signed where a function says so).
pub type Poly = [i32; N];

/// a·b·R^{-1} mod q for |a·b| < q·2^31, result in (−q, q).
#[inline(always)]
fn montgomery_reduce(a: i64) -> i32 {
    let t = (a as i32).wrapping_mul(Q_INV);
    ((a - i64::from(t) * i64::from(Q)) >> 32) as i32
}

/// a·b mod q in the normal domain (one Montgomery product with b·R, precomputed by callers
/// through [`to_montgomery`]).
#[inline(always)]
fn mont_mul(a: i32, b_mont: i32) -> i32 {
    montgomery_reduce(i64::from(a) * i64::from(b_mont))
}

/// x·R mod q, in (−q, q).
const fn to_montgomery(x: i64) -> i32 {
    ((x << 32) % Q as i64) as i32
}

/// x mod q in [0, q) for any i32 (a remainder by the constant q, which compiles to a
/// multiply and shift, then one conditional add).
#[inline(always)]
pub fn reduce(x: i32) -> i32 {
    let r = x % Q;
    r + ((r >> 31) & Q)
}

/// x mod q centered in (−(q−1)/2, (q−1)/2].
#[inline(always)]
pub fn centered(x: i32) -> i32 {
    let r = reduce(x);
    if r > (Q - 1) / 2 {
        r - Q
    } else {
        r
    }
}

/// ζ^brv8(m)·R mod q (FIPS 204 Appendix B, in Montgomery form).
const ZETAS_MONT: [i32; N] = {
    let mut z = [0i32; N];
    let mut m = 0;
    while m < N {
        // Compile-time loop over a constant array; m < 256 by the loop bound.
        #[allow(clippy::indexing_slicing)]
        {
            z[m] = to_montgomery(pow_mod(ZETA, (m as u8).reverse_bits() as usize) as i64);
        }
        m += 1;
    }
    z
};

/// FIPS 204 Algorithm 41 (NTT) in place: coefficients in (−q, q) in, image in [0, q) out.
pub fn ntt(a: &mut Poly) {
    let mut k = 1;
    let mut len = 128;
    while len >= 1 {
        for block in a.chunks_exact_mut(2 * len) {
            let zeta = ZETAS_MONT.get(k).copied().unwrap_or(0);
            k += 1;
            let (lo, hi) = block.split_at_mut(len);
            for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                let t = mont_mul(*y, zeta);
                *y = *x - t;
                *x += t;
            }
        }
        len /= 2;
    }
    for x in a.iter_mut() {
        *x = reduce(*x);
    }
}

/// FIPS 204 Algorithm 42 (NTT⁻¹) in place: image in (−q, q) in, coefficients in [0, q) out.
pub fn intt(a: &mut Poly) {
    let mut k = N;
    let mut len = 1;
    while len < N {
        for block in a.chunks_exact_mut(2 * len) {
            k -= 1;
            let zeta = -ZETAS_MONT.get(k).copied().unwrap_or(0);
            let (lo, hi) = block.split_at_mut(len);
            for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                let t = *x;
                // Keep the sums bounded: reduce the additive branch each level.
                *x = reduce(t + *y);
                *y = mont_mul(t - *y, zeta);
            }
        }
        len *= 2;
    }
    for x in a.iter_mut() {
        *x = reduce(mont_mul(*x, N_INV_MONT));
    }
}

/// a ∘ b (NTT images in [0, q), coefficient-wise) in [0, q).
pub fn pointwise(a: &Poly, b: &Poly) -> Poly {
    let mut out = [0i32; N];
    for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
        *o = (u64::from(x as u32) * u64::from(y as u32) % u64::from(Q_U32)) as i32;
    }
    out
}

/// a + b in [0, q) (inputs with |a + b| < 2^31).
pub fn add(a: &Poly, b: &Poly) -> Poly {
    let mut out = *a;
    for (x, &y) in out.iter_mut().zip(b) {
        *x = reduce(*x + y);
    }
    out
}

/// a − b in [0, q) (inputs with |a − b| < 2^31).
pub fn sub(a: &Poly, b: &Poly) -> Poly {
    let mut out = *a;
    for (x, &y) in out.iter_mut().zip(b) {
        *x = reduce(*x - y);
    }
    out
}

/// The NTT image of a polynomial given with signed or unsigned coefficients.
pub fn ntt_of(a: &Poly) -> Poly {
    let mut out = a.map(reduce);
    ntt(&mut out);
    out
}

/// M·v for a k×l matrix (l ≤ 7) of NTT images (row-major) and l NTT images: k polynomials in the
/// coefficient domain, [0, q).
pub fn matrix_vector(matrix: &[Poly], vector: &[Poly], rows: usize) -> Vec<Poly> {
    let cols = vector.len();
    (0..rows)
        .map(|r| {
            // At most l = 7 products below q² < 2^46 each: the sum stays below 2^49.
            let mut acc = [0u64; N];
            for (s, v) in vector.iter().enumerate() {
                if let Some(m) = matrix.get(r * cols + s) {
                    for ((x, &mi), &vi) in acc.iter_mut().zip(m).zip(v) {
                        *x += u64::from(mi as u32) * u64::from(vi as u32);
                    }
                }
            }
            let mut out = acc.map(|x| (x % u64::from(Q_U32)) as i32);
            intt(&mut out);
            out
        })
        .collect()
}

/// c·v for one NTT image ĉ and polynomials v given as NTT images: coefficient domain, [0, q).
pub fn scalar_vector(c_hat: &Poly, vector: &[Poly]) -> Vec<Poly> {
    vector
        .iter()
        .map(|v| {
            let mut p = pointwise(c_hat, v);
            intt(&mut p);
            p
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rollup::native;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    #[test]
    fn constants_are_what_they_claim() {
        let q = i64::from(Q);
        assert_eq!((i64::from(Q_INV) * q).rem_euclid(1 << 32), 1);
        assert_eq!(
            (i64::from(N_INV_MONT) * 256).rem_euclid(q),
            (1i64 << 32) % q
        );
    }

    #[test]
    fn ntt_and_products_match_the_fips_204_reference() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        for _ in 0..20 {
            let a: Poly = std::array::from_fn(|_| rng.gen_range(0..Q));
            let b: Poly = std::array::from_fn(|_| rng.gen_range(-Q + 1..Q));
            let reference = native::ntt(&a.map(|v| v as u32));
            let mut fast = a;
            ntt(&mut fast);
            assert_eq!(fast.map(|v| v as u32), reference);
            let mut back = fast;
            intt(&mut back);
            assert_eq!(back, a);

            // The product in the ring against schoolbook negacyclic multiplication.
            let b_hat = ntt_of(&b);
            let mut product = pointwise(&fast, &b_hat);
            intt(&mut product);
            let mut schoolbook = [0i64; N];
            for (i, &x) in a.iter().enumerate() {
                for (j, &y) in b.iter().enumerate() {
                    let term = i64::from(x) * i64::from(y) % i64::from(Q);
                    let k = i + j;
                    if k < N {
                        schoolbook[k] += term;
                    } else {
                        schoolbook[k - N] -= term;
                    }
                }
            }
            assert_eq!(
                product,
                schoolbook.map(|v| v.rem_euclid(i64::from(Q)) as i32)
            );
        }
    }
}
