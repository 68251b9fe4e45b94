//! Corona's NTT on four `f64` lanes with fused multiply-add: exact modular arithmetic for a
//! 48-bit modulus without 64-bit vector multiplies.
//!
//! The ring is Corona's R_q = Z_q\[X\]/(X^256 + 1), q = 2^48 + 18945, with the transforms of
//! `quasar_crypto::corona::ring` (Longa–Naehrig 2016, Algorithms 1 and 2; ψ =
//! [`quasar_crypto::corona::ring::PSI`], bit-reversed image). AVX2 has no 64×64-bit multiply,
//! and emulating one costs three 32-bit multiplies and as many shifts per product, more than a
//! scalar `mul`. Every integer here is below 2^53, so it is an exact `f64`, and a product's
//! rounding error is recovered exactly by one FMA (the product a·w equals hi + lo with
//! hi = fl(a·w), lo = fma(a, w, −hi)). Four rows are transposed into `[[f64; 4]; 256]`, and
//! every butterfly is then one vector operation; the kernels are plain Rust compiled with AVX2
//! and FMA.
//!
//! # Exactness
//!
//! Values are signed integers held in `f64`; twiddles w are centered, |w| < q/2 < 2^47.
//! [`mul_mod`] of a (|a| ≤ 16q < 2^53) and w: |a·w| < 2^100, so |lo| ≤ ulp(hi)/2 ≤ 2^47.
//! k = rint(hi·fl(1/q)) is within 1.04 of hi/q (two roundings of relative size 2^-53 on a
//! quotient below 2^52), so hi − k·q is an integer below 1.04·q < 2^49 in absolute value: the
//! FMA that computes it rounds an exactly representable value, so it is exact, and so is the
//! sum with lo. The result is a·w mod q up to a multiple of q, below 1.3·q in absolute value.
//! - Forward (Cooley–Tukey): each layer adds a product below 1.3q, so from inputs in [0, q)
//!   every value stays below 11.4q in absolute value.
//! - Inverse (Gentleman–Sande): each sum is reduced at once ([`reduce`]: below q/2 + 1), each
//!   difference goes through a product, so no value exceeds 4q; the scaling by 256^{-1} is one
//!   more product.
//! - [`reduce`] of |x| < 2^52: k = rint(x·fl(1/q)) is the nearest integer to x/q up to an error
//!   far below 1/2 away from ties, so x − k·q (one exact FMA) lies in [−q/2 − 1, q/2 + 1];
//!   adding q to negative values ends in [0, q).
//!
//! Integers below 2^52 move between `u64` and `f64` through the bits of 2^52 + v, with no
//! conversion instruction (AVX2 has none for 64-bit integers).

use core::arch::x86_64::{
    __m256d, __m256i, _mm256_add_pd, _mm256_and_pd, _mm256_castpd_si256, _mm256_castsi256_pd,
    _mm256_cmp_pd, _mm256_fmsub_pd, _mm256_fnmadd_pd, _mm256_mul_pd, _mm256_or_si256,
    _mm256_permute2f128_pd, _mm256_round_pd, _mm256_set1_epi64x, _mm256_set1_pd, _mm256_setzero_pd,
    _mm256_sub_epi64, _mm256_sub_pd, _mm256_unpackhi_pd, _mm256_unpacklo_pd, _CMP_LT_OQ,
    _MM_FROUND_NO_EXC, _MM_FROUND_TO_NEAREST_INT,
};

use quasar_crypto::accel::{pow_mod, RingOp};
use quasar_crypto::corona::params::{DEGREE, Q};
use quasar_crypto::corona::ring::PSI;

use super::N;

/// Rows transformed together, one per lane.
pub(super) const LANES: usize = 4;

/// Four rows, transposed: vector j holds coefficient j of each row.
type Work = [__m256d; N];

const _: () = assert!(DEGREE == N && Q < 1 << 52);

const Q_F64: f64 = Q as f64;
const Q_INV: f64 = 1.0 / Q_F64;
/// The bits of 2^52, whose low 52 bits are free for an integer.
const TWO_52_BITS: i64 = 0x4330_0000_0000_0000;
const TWO_52: f64 = 4_503_599_627_370_496.0;
const ROUND: i32 = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

/// w mod q as a centered integer in (−q/2, q/2].
const fn centered(w: u64) -> f64 {
    if w > Q / 2 {
        -((Q - w) as f64)
    } else {
        w as f64
    }
}

/// `FORWARD[k]` = ψ^brv8(k) and `INVERSE[k]` = ψ^−brv8(k), centered (k = 0 unused): the
/// layer with m groups uses entries m..2m.
const fn twiddles(inverse: bool) -> [f64; N] {
    let mut t = [0.0; N];
    let mut k = 1;
    while k < N {
        let e = (k as u8).reverse_bits() as u64;
        t[k] = centered(pow_mod(PSI, if inverse { 512 - e } else { e }, Q));
        k += 1;
    }
    t
}

static FORWARD: [f64; N] = twiddles(false);
static INVERSE: [f64; N] = twiddles(true);
/// 256^{-1} mod q, centered.
const N_INV: f64 = centered(pow_mod(N as u64, Q - 2, Q));

/// a·w mod q up to a multiple of q, exact, below 1.3·q in absolute value (module docs).
#[target_feature(enable = "avx2,fma")]
#[inline]
fn mul_mod(a: __m256d, w: __m256d) -> __m256d {
    let hi = _mm256_mul_pd(a, w);
    let lo = _mm256_fmsub_pd(a, w, hi);
    let k = _mm256_round_pd::<ROUND>(_mm256_mul_pd(hi, _mm256_set1_pd(Q_INV)));
    _mm256_add_pd(_mm256_fnmadd_pd(k, _mm256_set1_pd(Q_F64), hi), lo)
}

/// x mod q in [−q/2 − 1, q/2 + 1] for |x| < 2^52.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn reduce(x: __m256d) -> __m256d {
    let k = _mm256_round_pd::<ROUND>(_mm256_mul_pd(x, _mm256_set1_pd(Q_INV)));
    _mm256_fnmadd_pd(k, _mm256_set1_pd(Q_F64), x)
}

/// x mod q in [0, q) for |x| < 2^52.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn canonical(x: __m256d) -> __m256d {
    let r = reduce(x);
    let negative = _mm256_cmp_pd::<_CMP_LT_OQ>(r, _mm256_setzero_pd());
    _mm256_add_pd(r, _mm256_and_pd(negative, _mm256_set1_pd(Q_F64)))
}

/// Longa–Naehrig Algorithm 1 on every lane: [0, q) in and out.
#[target_feature(enable = "avx2,fma")]
fn forward(a: &mut Work) {
    let mut groups = 1;
    while groups < N {
        let len = N / (2 * groups);
        for (block, &w) in a
            .chunks_exact_mut(2 * len)
            .zip(&FORWARD[groups..2 * groups])
        {
            let w = _mm256_set1_pd(w);
            let (lo, hi) = block.split_at_mut(len);
            for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                let t = mul_mod(*y, w);
                *y = _mm256_sub_pd(*x, t);
                *x = _mm256_add_pd(*x, t);
            }
        }
        groups *= 2;
    }
    for x in a.iter_mut() {
        *x = canonical(*x);
    }
}

/// Longa–Naehrig Algorithm 2 on every lane, with the scaling by 256^{-1}: [0, q) in and out.
#[target_feature(enable = "avx2,fma")]
fn inverse(a: &mut Work) {
    let mut groups = N / 2;
    while groups >= 1 {
        let len = N / (2 * groups);
        for (block, &w) in a
            .chunks_exact_mut(2 * len)
            .zip(&INVERSE[groups..2 * groups])
        {
            let w = _mm256_set1_pd(w);
            let (lo, hi) = block.split_at_mut(len);
            for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                let (u, v) = (*x, *y);
                *x = reduce(_mm256_add_pd(u, v));
                *y = mul_mod(_mm256_sub_pd(u, v), w);
            }
        }
        groups /= 2;
    }
    let n_inv = _mm256_set1_pd(N_INV);
    for x in a.iter_mut() {
        *x = canonical(mul_mod(*x, n_inv));
    }
}

/// The 4×4 transpose of 64-bit lanes: lane l of output j is lane j of input l.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn transpose4([r0, r1, r2, r3]: [__m256d; 4]) -> [__m256d; 4] {
    let t0 = _mm256_unpacklo_pd(r0, r1);
    let t1 = _mm256_unpackhi_pd(r0, r1);
    let t2 = _mm256_unpacklo_pd(r2, r3);
    let t3 = _mm256_unpackhi_pd(r2, r3);
    [
        _mm256_permute2f128_pd::<0x20>(t0, t2),
        _mm256_permute2f128_pd::<0x20>(t1, t3),
        _mm256_permute2f128_pd::<0x31>(t0, t2),
        _mm256_permute2f128_pd::<0x31>(t1, t3),
    ]
}

/// Four `u64` values below 2^52 as `f64`.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn to_f64(values: &[u64; 4]) -> __m256d {
    let v: __m256i = bytemuck::cast(*values);
    let biased = _mm256_castsi256_pd(_mm256_or_si256(v, _mm256_set1_epi64x(TWO_52_BITS)));
    _mm256_sub_pd(biased, _mm256_set1_pd(TWO_52))
}

/// The inverse of [`to_f64`] for integers in [0, 2^52).
#[target_feature(enable = "avx2,fma")]
#[inline]
fn to_u64(x: __m256d) -> [u64; 4] {
    let biased = _mm256_castpd_si256(_mm256_add_pd(x, _mm256_set1_pd(TWO_52)));
    bytemuck::cast(_mm256_sub_epi64(biased, _mm256_set1_epi64x(TWO_52_BITS)))
}

/// `op` (forward or inverse) on up to [`LANES`] rows of canonical Corona residues (checked by
/// the caller), in place.
#[target_feature(enable = "avx2,fma")]
pub(super) fn transform(op: RingOp, rows: &mut [&mut [u64; N]]) {
    let mut blocks = [[_mm256_setzero_pd(); 4]; N / 4];
    for (block, vectors) in blocks.iter_mut().enumerate() {
        let mut columns = [_mm256_setzero_pd(); 4];
        for (column, row) in columns.iter_mut().zip(rows.iter()) {
            *column = to_f64(&row.as_chunks::<4>().0[block]);
        }
        *vectors = transpose4(columns);
    }
    let work: &mut Work = blocks.as_flattened_mut().try_into().expect("256 vectors");
    match op {
        RingOp::Forward => forward(work),
        _ => inverse(work),
    }
    for (block, vectors) in blocks.iter().enumerate() {
        for (row, v) in rows.iter_mut().zip(transpose4(*vectors)) {
            row.as_chunks_mut::<4>().0[block] = to_u64(v);
        }
    }
}
