//! Ring NTTs on four `f64` lanes with fused multiply-add: exact modular arithmetic for Corona's
//! 49-bit modulus without 64-bit vector multiplies, and for ML-KEM's 12-bit one.
//!
//! The rings ([`FmaRing`]): Corona's R_q = Z_q\[X\]/(X^256 + 1), q = 2^48 + 18945, with the
//! transforms of `quasar_crypto::corona::ring` (Longa–Naehrig 2016, Algorithms 1 and 2; ψ =
//! [`quasar_crypto::corona::ring::PSI`], bit-reversed image); and ML-KEM's two classes of
//! [`quasar_crypto::mlkem`] (q = 3329: FIPS 203's seven-layer NTT, and the eight-layer cyclic
//! one). AVX2 has no 64×64-bit multiply, and emulating one costs three 32-bit multiplies and as
//! many shifts per product, more than a scalar `mul`. Every integer here is below 2^53, so it
//! is an exact `f64`, and a product's rounding error is recovered exactly by one FMA (the
//! product a·w equals hi + lo with hi = fl(a·w), lo = fma(a, w, −hi)). Four rows are
//! transposed so that vector j holds coefficient j of each row, and every butterfly of every
//! layer is then one vector operation with a broadcast twiddle.
//!
//! # Exactness
//!
//! Values are signed integers held in `f64`; twiddles w are centered, |w| ≤ (q − 1)/2, and
//! q ≤ 2^48 + 2^15. [`FmaRing::mul_mod`] of a with |a| < 9q: |a·w| < 4.5q² < 2^98.2, so
//! |lo| ≤ ulp(hi)/2 ≤ 2^45 ≤ q/8. The quotient estimate fl(hi·fl(1/q)) carries two roundings
//! of relative size 2^-53 on a quotient below 4.5q < 2^50.2, so it is within 0.3 of hi/q and
//! k = rint(·) within 0.8: hi − k·q is an integer below 0.8·q < 2^49 in absolute value, which
//! the FMA that computes it rounds exactly, and so is its sum with lo. The result t is a·w mod
//! q up to a multiple of q, with |t| < 0.8q + q/8 < q. (For q = 3329 every product is below
//! 2^26 and exact as it stands: lo = 0.)
//! - Forward (Cooley–Tukey): each layer adds a product below q, so from inputs in [0, q)
//!   every value stays below (l + 1)·q after layer l, at most 9q.
//! - Inverse (Gentleman–Sande): each sum is reduced at once ([`FmaRing::reduce`]: at most
//!   q/2 + 1 in absolute value), each difference goes through a product, so no value reaches
//!   4q; the scaling by 2^{−layers} (256^{-1}, or 128^{-1} for ML-KEM's seven layers) is one
//!   more product.
//! - [`FmaRing::reduce`] of |x| < 2^52: the estimate x·fl(1/q) is within |x|·2^-52/q of x/q,
//!   so x − k·q (one exact FMA) is within q/2 + |x|·2^-52 < q/2 + 1 of zero; adding q to
//!   negative values ends in [0, q).
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

use quasar_crypto::accel::{pow_mod, NttClass, RingOp};
use quasar_crypto::corona::params as corona;
use quasar_crypto::corona::ring::PSI;
use quasar_crypto::mlkem;

use super::N;

/// Rows transformed together, one per lane.
pub(super) const LANES: usize = 4;

/// Four rows, transposed: vector j holds coefficient j of each row.
type Work = [__m256d; N];

/// The bits of 2^52, whose low 52 bits are free for an integer.
const TWO_52_BITS: i64 = 0x4330_0000_0000_0000;
const TWO_52: f64 = 4_503_599_627_370_496.0;
const ROUND: i32 = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

/// A ring's transforms for these kernels. The forward layer with m blocks multiplies block i
/// by `forward[m + i]` (Cooley–Tukey: (x, y) ← (x + w·y, x − w·y)); the inverse layer with h
/// blocks maps block i with `inverse[h + i]` (Gentleman–Sande: (x, y) ← (x + y, w·(x − y)));
/// then every value is multiplied by `scale`. Twiddles are centered residues.
pub(super) struct FmaRing {
    q: f64,
    q_inv: f64,
    /// Forward layers have 1, 2, …, 2^(layers − 1) blocks.
    layers: usize,
    forward: [f64; N],
    inverse: [f64; N],
    scale: f64,
}

/// w mod q as a centered integer in (−q/2, q/2].
const fn centered(w: u64, q: u64) -> f64 {
    let w = w % q;
    if w > q / 2 {
        -((q - w) as f64)
    } else {
        w as f64
    }
}

const fn brv8(k: usize) -> u64 {
    (k as u8).reverse_bits() as u64
}

/// ML-KEM's z_i = ζ^brv7(i) (FIPS 203 Appendix A), for i < 128.
const fn z(i: usize) -> u64 {
    pow_mod(mlkem::ZETA, brv8(i) >> 1, mlkem::Q)
}

/// Corona: `forward[k]` = ψ^brv8(k), `inverse[k]` = ψ^−brv8(k) (Longa–Naehrig's tables).
const fn corona_ring() -> FmaRing {
    let q = corona::Q;
    let (mut forward, mut inverse) = ([0.0; N], [0.0; N]);
    let mut k = 1;
    while k < N {
        forward[k] = centered(pow_mod(PSI, brv8(k), q), q);
        inverse[k] = centered(pow_mod(PSI, 512 - brv8(k), q), q);
        k += 1;
    }
    FmaRing {
        q: q as f64,
        q_inv: 1.0 / q as f64,
        layers: 8,
        forward,
        inverse,
        scale: centered(pow_mod(N as u64, q - 2, q), q),
    }
}

/// ML-KEM with ζ = 17 and z_i = ζ^brv7(i):
/// - negacyclic (FIPS 203 Algorithms 9–10): `forward[k]` = z_k; the inverse layer with h
///   blocks maps block i with z_(2h−1−i) as (x + y, z·(y − x)), so `inverse[h + i]` =
///   −z_(2h−1−i); scaled by 128^{-1};
/// - cyclic ([`mlkem::cyclic_ntt`]): every layer's block i uses z_i, so `forward[m + i]` = z_i
///   and `inverse[h + i]` = z_i^{-1}; scaled by 256^{-1}.
const fn mlkem_ring(cyclic: bool) -> FmaRing {
    let q = mlkem::Q;
    let layers = if cyclic { 8 } else { 7 };
    let (mut forward, mut inverse) = ([0.0; N], [0.0; N]);
    let mut m = 1;
    while m < 1 << layers {
        let mut i = 0;
        while i < m {
            if cyclic {
                forward[m + i] = centered(z(i), q);
                inverse[m + i] = centered(pow_mod(z(i), q - 2, q), q);
            } else {
                forward[m + i] = centered(z(m + i), q);
                inverse[m + i] = centered(q - z(2 * m - 1 - i), q);
            }
            i += 1;
        }
        m *= 2;
    }
    FmaRing {
        q: q as f64,
        q_inv: 1.0 / q as f64,
        layers,
        forward,
        inverse,
        scale: centered(pow_mod(1 << layers, q - 2, q), q),
    }
}

static CORONA: FmaRing = corona_ring();
static MLKEM: FmaRing = mlkem_ring(false);
static MLKEM_CYCLIC: FmaRing = mlkem_ring(true);

impl FmaRing {
    /// The kernels' ring for `class`, if they have one.
    pub(super) fn of(class: NttClass) -> Option<&'static FmaRing> {
        match class {
            NttClass::Corona => Some(&CORONA),
            NttClass::MlKem => Some(&MLKEM),
            NttClass::MlKemCyclic => Some(&MLKEM_CYCLIC),
            _ => None,
        }
    }

    /// a·w mod q up to a multiple of q, exact, below q in absolute value for |a| < 9q (module
    /// docs).
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    fn mul_mod(&self, a: __m256d, w: __m256d) -> __m256d {
        let hi = _mm256_mul_pd(a, w);
        let lo = _mm256_fmsub_pd(a, w, hi);
        let k = _mm256_round_pd::<ROUND>(_mm256_mul_pd(hi, _mm256_set1_pd(self.q_inv)));
        _mm256_add_pd(_mm256_fnmadd_pd(k, _mm256_set1_pd(self.q), hi), lo)
    }

    /// x mod q in [−q/2 − 1, q/2 + 1] for |x| < 2^52.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    fn reduce(&self, x: __m256d) -> __m256d {
        let k = _mm256_round_pd::<ROUND>(_mm256_mul_pd(x, _mm256_set1_pd(self.q_inv)));
        _mm256_fnmadd_pd(k, _mm256_set1_pd(self.q), x)
    }

    /// x mod q in [0, q) for |x| < 2^52.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    fn canonical(&self, x: __m256d) -> __m256d {
        let r = self.reduce(x);
        let negative = _mm256_cmp_pd::<_CMP_LT_OQ>(r, _mm256_setzero_pd());
        _mm256_add_pd(r, _mm256_and_pd(negative, _mm256_set1_pd(self.q)))
    }

    /// The forward transform on every lane: [0, q) in and out.
    #[target_feature(enable = "avx2,fma")]
    fn forward(&self, a: &mut Work) {
        for layer in 0..self.layers {
            let blocks = 1 << layer;
            let len = N / (2 * blocks);
            let twiddles = self.forward.iter().skip(blocks).take(blocks);
            for (block, &w) in a.chunks_exact_mut(2 * len).zip(twiddles) {
                let w = _mm256_set1_pd(w);
                let (lo, hi) = block.split_at_mut(len);
                for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                    let t = self.mul_mod(*y, w);
                    *y = _mm256_sub_pd(*x, t);
                    *x = _mm256_add_pd(*x, t);
                }
            }
        }
        for x in a.iter_mut() {
            *x = self.canonical(*x);
        }
    }

    /// The inverse transform on every lane, with the scaling: [0, q) in and out.
    #[target_feature(enable = "avx2,fma")]
    fn inverse(&self, a: &mut Work) {
        for layer in (0..self.layers).rev() {
            let blocks = 1 << layer;
            let len = N / (2 * blocks);
            let twiddles = self.inverse.iter().skip(blocks).take(blocks);
            for (block, &w) in a.chunks_exact_mut(2 * len).zip(twiddles) {
                let w = _mm256_set1_pd(w);
                let (lo, hi) = block.split_at_mut(len);
                for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                    let (u, v) = (*x, *y);
                    *x = self.reduce(_mm256_add_pd(u, v));
                    *y = self.mul_mod(_mm256_sub_pd(u, v), w);
                }
            }
        }
        let scale = _mm256_set1_pd(self.scale);
        for x in a.iter_mut() {
            *x = self.canonical(self.mul_mod(*x, scale));
        }
    }

    /// `op` (forward or inverse) on up to [`LANES`] rows of canonical residues (checked by the
    /// caller), in place.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn transform(&self, op: RingOp, rows: &mut [&mut [u64; N]]) {
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
            RingOp::Forward => self.forward(work),
            _ => self.inverse(work),
        }
        for (block, vectors) in blocks.iter().enumerate() {
            for (row, v) in rows.iter_mut().zip(transpose4(*vectors)) {
                row.as_chunks_mut::<4>().0[block] = to_u64(v);
            }
        }
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
