//! ML-DSA's NTT on AVX2: eight rows at once, one 32-bit lane per row, Shoup products.
//!
//! FIPS 204 Algorithms 41 (forward, Cooley–Tukey) and 42 (inverse, Gentleman–Sande) with
//! q = 8380417, ζ = 1753. A group of eight rows is transposed into 256 vectors of eight 32-bit
//! lanes (vector j holds coefficient j of every row), so every butterfly of every layer is the
//! same vertical operation with a broadcast twiddle; there are no shuffles inside the
//! transform. The eight layers run as three passes over the vectors (3 + 3 + 2 layers forward,
//! 2 + 3 + 3 inverse), each pass keeping eight vectors in registers; the two-layer pass runs
//! block by block inside the transposition (the last forward pass before each block goes out,
//! the first inverse pass as each block comes in), so the 8 KiB of a group is read and written
//! twice between the transposes instead of eight times.
//!
//! The transposition in also checks the input: every value is below q exactly when the OR of
//! all the `u64` values has zero high halves and the largest low half is at most q − 1, three
//! vector operations per eight values. A group that fails is left untouched, and the caller
//! checks its rows one by one. The transposed rows go to a per-thread [`WORK`] buffer, reused
//! from call to call.
//!
//! # Arithmetic and bounds
//!
//! Lanes hold unsigned values below 2^32. A twiddle w < q is stored with its Shoup companion
//! w' = ⌊w·2^32/q⌋ (Shoup; Harvey, "Faster arithmetic for number-theoretic transforms", 2014):
//! for any a < 2^32, a·w − ⌊a·w'/2^32⌋·q lies in [0, 2q), and since that is below 2^32 it can
//! be computed modulo 2^32 ([`shoup_mul`]). The high half ⌊a·w'/2^32⌋ takes two `vpmuludq`
//! (even and odd lanes); a·w mod 2^32 one `vpmulld`; the quotient times q is shifts and adds
//! (q = 2^23 − 2^13 + 1), which keeps the busy vector multiplier at three products per eight
//! butterflies.
//! - Forward: (x, y) ← (x + t, x + 2q − t) with t ∈ [0, 2q): from inputs in [0, q) every value
//!   stays below (2l + 1)·q after layer l, so below 17q < 2^28 at the end. For x < 2^31,
//!   ⌊x/2^23⌋ underestimates ⌊x/q⌋ by at most one, so x − ⌊x/2^23⌋·q ∈ [0, 2q) and one
//!   conditional subtraction ends in [0, q) ([`canonical`]).
//! - Inverse: (x, y) ← (x + y, w·(x + 128q − y)). Entering layer l every value is below
//!   2^(l−1)·q ≤ 128q, so x + 128q − y is non-negative and below 2^8·q < 2^31, and the last
//!   sums stay below 2^8·q as well. The scaling by 256^{-1} is one more Shoup product, in
//!   [0, 2q); one conditional subtraction ends in [0, q) ([`canonical_small`]).
//!
//! Memory moves through `bytemuck` (a `[u64; 4]` value cast to a vector is an unaligned load),
//! so the module has no `unsafe`; the arithmetic intrinsics are safe to call inside functions
//! compiled with AVX2. Callers reach [`transform`] only after the CPU reported AVX2.

use core::arch::x86_64::{
    __m256i, _mm256_add_epi32, _mm256_blend_epi32, _mm256_castps_si256, _mm256_castsi256_ps,
    _mm256_cmpeq_epi32, _mm256_max_epu32, _mm256_min_epu32, _mm256_movemask_epi8, _mm256_mul_epu32,
    _mm256_mullo_epi32, _mm256_or_si256, _mm256_permute2x128_si256, _mm256_set1_epi32,
    _mm256_setzero_si256, _mm256_shuffle_ps, _mm256_slli_epi32, _mm256_srli_epi32,
    _mm256_srli_epi64, _mm256_sub_epi32, _mm256_testz_si256, _mm256_unpackhi_epi32,
    _mm256_unpackhi_epi64, _mm256_unpacklo_epi32, _mm256_unpacklo_epi64,
};
use std::cell::RefCell;

use quasar_crypto::accel::{pow_mod, RingOp};

use super::{LANES, N, Q};

/// Eight rows, transposed: vector j holds coefficient j of each row.
pub(super) type Work = [__m256i; N];

// `transform` transposes 8×8 blocks: one row per lane.
const _: () = assert!(LANES == 8);

thread_local! {
    /// Each thread's [`Work`] (8 KiB), reused from call to call: a fresh one per call would be
    /// cleared first, which costs about as much as a transposition.
    pub(super) static WORK: RefCell<Work> = RefCell::new(bytemuck::Zeroable::zeroed());
}

const Q32: i32 = Q as i32;

/// A twiddle w < q with its Shoup companion ⌊w·2^32/q⌋, as the bits of two `i32` lanes.
const fn shoup_pair(w: u64) -> [i32; 2] {
    [w as i32, ((w << 32) / Q) as u32 as i32]
}

/// `FORWARD[k]` for ζ^brv8(k), `INVERSE[k]` for −ζ^brv8(k) (FIPS 204 Appendix B order).
const fn twiddles(negate: bool) -> [[i32; 2]; N] {
    let mut t = [[0; 2]; N];
    let mut k = 0;
    while k < N {
        let z = pow_mod(1753, (k as u8).reverse_bits() as u64, Q);
        t[k] = shoup_pair(if negate { (Q - z) % Q } else { z });
        k += 1;
    }
    t
}

static FORWARD: [[i32; 2]; N] = twiddles(false);
static INVERSE: [[i32; 2]; N] = twiddles(true);
/// 256^{-1} mod q = 8347681 (FIPS 204 Algorithm 42).
const N_INV: [i32; 2] = shoup_pair(8_347_681);

/// A twiddle pair broadcast to every lane.
#[derive(Clone, Copy)]
struct Twiddle {
    w: __m256i,
    w_shoup: __m256i,
}

#[target_feature(enable = "avx2")]
#[inline]
fn broadcast([w, w_shoup]: [i32; 2]) -> Twiddle {
    Twiddle {
        w: _mm256_set1_epi32(w),
        w_shoup: _mm256_set1_epi32(w_shoup),
    }
}

#[target_feature(enable = "avx2")]
#[inline]
fn forward_twiddle(k: usize) -> Twiddle {
    broadcast(FORWARD[k])
}

#[target_feature(enable = "avx2")]
#[inline]
fn inverse_twiddle(k: usize) -> Twiddle {
    broadcast(INVERSE[k])
}

/// Shoup's product of each unsigned lane a < 2^32 with the twiddle w: a·w mod q in [0, 2q).
#[target_feature(enable = "avx2")]
#[inline]
fn shoup_mul(a: __m256i, w: Twiddle) -> __m256i {
    let hi_even = _mm256_srli_epi64::<32>(_mm256_mul_epu32(a, w.w_shoup));
    let hi_odd = _mm256_mul_epu32(_mm256_srli_epi64::<32>(a), w.w_shoup);
    let estimate = _mm256_blend_epi32::<0b1010_1010>(hi_even, hi_odd);
    _mm256_sub_epi32(_mm256_mullo_epi32(a, w.w), times_q(estimate))
}

/// x·q mod 2^32 by shifts, q = 2^23 − 2^13 + 1 (the vector multiplier is the busiest unit).
#[target_feature(enable = "avx2")]
#[inline]
fn times_q(x: __m256i) -> __m256i {
    let shifted = _mm256_sub_epi32(_mm256_slli_epi32::<23>(x), _mm256_slli_epi32::<13>(x));
    _mm256_add_epi32(shifted, x)
}

/// Cooley–Tukey butterfly: (x, y) ← (x + w·y, x + 2q − w·y).
#[target_feature(enable = "avx2")]
#[inline]
fn ct(x: &mut __m256i, y: &mut __m256i, w: Twiddle) {
    let t = shoup_mul(*y, w);
    *y = _mm256_sub_epi32(_mm256_add_epi32(*x, _mm256_set1_epi32(2 * Q32)), t);
    *x = _mm256_add_epi32(*x, t);
}

/// Gentleman–Sande butterfly: (x, y) ← (x + y, w·(x + 128q − y)).
#[target_feature(enable = "avx2")]
#[inline]
fn gs(x: &mut __m256i, y: &mut __m256i, w: Twiddle) {
    let d = _mm256_sub_epi32(_mm256_add_epi32(*x, _mm256_set1_epi32(128 * Q32)), *y);
    *x = _mm256_add_epi32(*x, *y);
    *y = shoup_mul(d, w);
}

/// Forward layers at distances 2 and 1 on four vectors (one block of 4): twiddle `k2` for the
/// first, `k1, k1 + 1` for the second.
#[target_feature(enable = "avx2")]
#[inline]
fn forward_radix4([v0, v1, v2, v3]: &mut [__m256i; 4], k2: usize, k1: usize) {
    let w = forward_twiddle(k2);
    ct(v0, v2, w);
    ct(v1, v3, w);
    ct(v0, v1, forward_twiddle(k1));
    ct(v2, v3, forward_twiddle(k1 + 1));
}

/// The mirror of [`forward_radix4`]: distance 1 with twiddles `k1, k1 − 1`, then distance 2
/// with `k2`.
#[target_feature(enable = "avx2")]
#[inline]
fn inverse_radix4([v0, v1, v2, v3]: &mut [__m256i; 4], k1: usize, k2: usize) {
    gs(v0, v1, inverse_twiddle(k1));
    gs(v2, v3, inverse_twiddle(k1 - 1));
    let w = inverse_twiddle(k2);
    gs(v0, v2, w);
    gs(v1, v3, w);
}

/// x mod q in [0, q) for lanes with 0 ≤ x < 2^31 (module docs).
#[target_feature(enable = "avx2")]
#[inline]
fn canonical(x: __m256i) -> __m256i {
    let q = _mm256_set1_epi32(Q32);
    let r = _mm256_sub_epi32(x, times_q(_mm256_srli_epi32::<23>(x)));
    // r − q wraps to a large unsigned value when r < q.
    _mm256_min_epu32(r, _mm256_sub_epi32(r, q))
}

/// x mod q in [0, q) for lanes with 0 ≤ x < 2q.
#[target_feature(enable = "avx2")]
#[inline]
fn canonical_small(x: __m256i) -> __m256i {
    let q = _mm256_set1_epi32(Q32);
    _mm256_min_epu32(x, _mm256_sub_epi32(x, q))
}

/// Three forward layers on eight vectors: pairs at distance 4 with twiddle `k1`, at distance 2
/// with `k2, k2 + 1`, at distance 1 with `k3 .. k3 + 4`.
#[target_feature(enable = "avx2")]
#[inline]
fn forward_radix8(v: &mut [__m256i; 8], k1: usize, k2: usize, k3: usize) {
    let [v0, v1, v2, v3, v4, v5, v6, v7] = v;
    let w = forward_twiddle(k1);
    ct(v0, v4, w);
    ct(v1, v5, w);
    ct(v2, v6, w);
    ct(v3, v7, w);
    let w = forward_twiddle(k2);
    ct(v0, v2, w);
    ct(v1, v3, w);
    let w = forward_twiddle(k2 + 1);
    ct(v4, v6, w);
    ct(v5, v7, w);
    ct(v0, v1, forward_twiddle(k3));
    ct(v2, v3, forward_twiddle(k3 + 1));
    ct(v4, v5, forward_twiddle(k3 + 2));
    ct(v6, v7, forward_twiddle(k3 + 3));
}

/// Three inverse layers on eight vectors, the mirror of [`forward_radix8`]: pairs at distance 1
/// with twiddles `k1, k1 − 1, …, k1 − 3`, at distance 2 with `k2, k2 − 1`, at distance 4 with
/// `k3`.
#[target_feature(enable = "avx2")]
#[inline]
fn inverse_radix8(v: &mut [__m256i; 8], k1: usize, k2: usize, k3: usize) {
    let [v0, v1, v2, v3, v4, v5, v6, v7] = v;
    gs(v0, v1, inverse_twiddle(k1));
    gs(v2, v3, inverse_twiddle(k1 - 1));
    gs(v4, v5, inverse_twiddle(k1 - 2));
    gs(v6, v7, inverse_twiddle(k1 - 3));
    let w = inverse_twiddle(k2);
    gs(v0, v2, w);
    gs(v1, v3, w);
    let w = inverse_twiddle(k2 - 1);
    gs(v4, v6, w);
    gs(v5, v7, w);
    let w = inverse_twiddle(k3);
    gs(v0, v4, w);
    gs(v1, v5, w);
    gs(v2, v6, w);
    gs(v3, v7, w);
}

/// Vectors `base + stride·i` for i in 0..8.
#[target_feature(enable = "avx2")]
#[inline]
fn gather8(a: &Work, base: usize, stride: usize) -> [__m256i; 8] {
    core::array::from_fn(|i| a[base + stride * i])
}

#[target_feature(enable = "avx2")]
#[inline]
fn scatter8(a: &mut Work, base: usize, stride: usize, v: &[__m256i; 8]) {
    for (i, x) in v.iter().enumerate() {
        a[base + stride * i] = *x;
    }
}

/// FIPS 204 Algorithm 41 on eight transposed rows up to distance 4, from values in [0, q);
/// [`forward_last`] ends it block by block while the rows are stored.
#[target_feature(enable = "avx2")]
fn forward(a: &mut Work) {
    // Layers with distances 128, 64, 32.
    for j in 0..32 {
        let mut v = gather8(a, j, 32);
        forward_radix8(&mut v, 1, 2, 4);
        scatter8(a, j, 32, &v);
    }
    // Distances 16, 8, 4 inside each block of 32.
    for block in 0..8 {
        for j in 0..4 {
            let mut v = gather8(a, 32 * block + j, 4);
            forward_radix8(&mut v, 8 + block, 16 + 2 * block, 32 + 4 * block);
            scatter8(a, 32 * block + j, 4, &v);
        }
    }
}

/// The end of FIPS 204 Algorithm 41 on vectors `8·block .. 8·block + 8` (two blocks of 4):
/// distances 2 and 1, then the reduction to [0, q).
#[target_feature(enable = "avx2")]
#[inline]
fn forward_last(block: usize, v: &mut [__m256i; 8]) {
    for (half, v) in v.as_chunks_mut::<4>().0.iter_mut().enumerate() {
        let quad = 2 * block + half;
        forward_radix4(v, 64 + quad, 128 + 2 * quad);
        for x in v.iter_mut() {
            *x = canonical(*x);
        }
    }
}

/// The start of FIPS 204 Algorithm 42 on vectors `8·block .. 8·block + 8`: distances 1 and 2
/// inside each block of 4.
#[target_feature(enable = "avx2")]
#[inline]
fn inverse_first(block: usize, v: &mut [__m256i; 8]) {
    for (half, v) in v.as_chunks_mut::<4>().0.iter_mut().enumerate() {
        let quad = 2 * block + half;
        inverse_radix4(v, 255 - 2 * quad, 127 - quad);
    }
}

/// FIPS 204 Algorithm 42 on eight transposed rows from distance 4 on, after
/// [`inverse_first`] ran block by block while the rows were loaded; values in [0, q) out.
#[target_feature(enable = "avx2")]
fn inverse(a: &mut Work) {
    // Distances 4, 8, 16 inside each block of 32.
    for block in 0..8 {
        for j in 0..4 {
            let mut v = gather8(a, 32 * block + j, 4);
            inverse_radix8(&mut v, 63 - 4 * block, 31 - 2 * block, 15 - block);
            scatter8(a, 32 * block + j, 4, &v);
        }
    }
    // Distances 32, 64, 128, then the scaling by 256^{-1}.
    let n_inv = broadcast(N_INV);
    for j in 0..32 {
        let mut v = gather8(a, j, 32);
        inverse_radix8(&mut v, 7, 3, 1);
        for x in v.iter_mut() {
            *x = canonical_small(shoup_mul(*x, n_inv));
        }
        scatter8(a, j, 32, &v);
    }
}

/// The 8×8 transpose of 32-bit lanes: lane l of output j is lane j of input l.
#[target_feature(enable = "avx2")]
#[inline]
fn transpose8(r: [__m256i; 8]) -> [__m256i; 8] {
    let t0 = _mm256_unpacklo_epi32(r[0], r[1]);
    let t1 = _mm256_unpackhi_epi32(r[0], r[1]);
    let t2 = _mm256_unpacklo_epi32(r[2], r[3]);
    let t3 = _mm256_unpackhi_epi32(r[2], r[3]);
    let t4 = _mm256_unpacklo_epi32(r[4], r[5]);
    let t5 = _mm256_unpackhi_epi32(r[4], r[5]);
    let t6 = _mm256_unpacklo_epi32(r[6], r[7]);
    let t7 = _mm256_unpackhi_epi32(r[6], r[7]);
    // Lanes 0..4 of u_i hold rows 0..4 (or 4..8 for u4..u7) of columns i and i + 4.
    let u0 = _mm256_unpacklo_epi64(t0, t2);
    let u1 = _mm256_unpackhi_epi64(t0, t2);
    let u2 = _mm256_unpacklo_epi64(t1, t3);
    let u3 = _mm256_unpackhi_epi64(t1, t3);
    let u4 = _mm256_unpacklo_epi64(t4, t6);
    let u5 = _mm256_unpackhi_epi64(t4, t6);
    let u6 = _mm256_unpacklo_epi64(t5, t7);
    let u7 = _mm256_unpackhi_epi64(t5, t7);
    [
        _mm256_permute2x128_si256::<0x20>(u0, u4),
        _mm256_permute2x128_si256::<0x20>(u1, u5),
        _mm256_permute2x128_si256::<0x20>(u2, u6),
        _mm256_permute2x128_si256::<0x20>(u3, u7),
        _mm256_permute2x128_si256::<0x31>(u0, u4),
        _mm256_permute2x128_si256::<0x31>(u1, u5),
        _mm256_permute2x128_si256::<0x31>(u2, u6),
        _mm256_permute2x128_si256::<0x31>(u3, u7),
    ]
}

/// The coefficient order of a vector loaded by [`narrow`] or stored by [`widen`]: lane i holds
/// coefficient `SIGMA[i]` of its block of 8 (an involution). The transposes carry it over to
/// vector positions, so neither side needs a lane-crossing permute.
const SIGMA: [usize; 8] = [0, 1, 4, 5, 2, 3, 6, 7];

/// Eight `u64` values as two vectors of four.
#[target_feature(enable = "avx2")]
#[inline]
fn load8(values: &[u64; 8]) -> [__m256i; 2] {
    let halves: [[u64; 4]; 2] = bytemuck::cast(*values);
    halves.map(bytemuck::cast)
}

/// The low 32 bits of eight `u64` values (two vectors of four) as eight lanes in [`SIGMA`]
/// order.
#[target_feature(enable = "avx2")]
#[inline]
fn narrow([lo, hi]: [__m256i; 2]) -> __m256i {
    // The low halves of each 128-bit half: [v0, v1, v4, v5] and [v2, v3, v6, v7].
    let low_halves =
        _mm256_shuffle_ps::<0b10_00_10_00>(_mm256_castsi256_ps(lo), _mm256_castsi256_ps(hi));
    _mm256_castps_si256(low_halves)
}

/// The inverse of [`narrow`] for lanes in [0, 2^31).
#[target_feature(enable = "avx2")]
#[inline]
fn widen(v: __m256i) -> [u64; 8] {
    let zero = _mm256_setzero_si256();
    let lo: [u64; 4] = bytemuck::cast(_mm256_unpacklo_epi32(v, zero));
    let hi: [u64; 4] = bytemuck::cast(_mm256_unpackhi_epi32(v, zero));
    bytemuck::cast([lo, hi])
}

/// `op` (forward or inverse) on [`LANES`] rows in place, through `work`, when every value
/// is an ML-DSA residue (below q); otherwise `false`, with the rows unchanged.
///
/// The check rides on the transposition: values are below q when the OR of all of them has
/// zero high halves and the largest low half is at most q − 1.
#[target_feature(enable = "avx2")]
pub(super) fn transform(op: RingOp, rows: &mut [[u64; N]; LANES], work: &mut Work) -> bool {
    let (mut any, mut largest) = (_mm256_setzero_si256(), _mm256_setzero_si256());
    for (block, vectors) in work.as_chunks_mut::<8>().0.iter_mut().enumerate() {
        let mut columns = [_mm256_setzero_si256(); 8];
        for (column, row) in columns.iter_mut().zip(rows.iter()) {
            let [lo, hi] = load8(row_block(row, block));
            any = _mm256_or_si256(any, _mm256_or_si256(lo, hi));
            *column = narrow([lo, hi]);
            largest = _mm256_max_epu32(largest, *column);
        }
        let transposed = transpose8(columns);
        *vectors = SIGMA.map(|i| transposed[i]);
        if op == RingOp::Inverse {
            inverse_first(block, vectors);
        }
    }
    let high = _mm256_srli_epi64::<32>(any);
    let q_minus_1 = _mm256_set1_epi32(Q32 - 1);
    let below_q = _mm256_cmpeq_epi32(_mm256_max_epu32(largest, q_minus_1), q_minus_1);
    if _mm256_testz_si256(high, high) == 0 || _mm256_movemask_epi8(below_q) != -1 {
        return false;
    }
    match op {
        RingOp::Forward => forward(work),
        _ => inverse(work),
    }
    for (block, vectors) in work.as_chunks::<8>().0.iter().enumerate() {
        let mut vectors = *vectors;
        if op == RingOp::Forward {
            forward_last(block, &mut vectors);
        }
        let rows_of_block = transpose8(SIGMA.map(|i| vectors[i]));
        for (row, v) in rows.iter_mut().zip(rows_of_block) {
            *row_block_mut(row, block) = widen(v);
        }
    }
    true
}

/// Coefficients `8·block .. 8·block + 8` of a row (`block` < 32).
fn row_block(row: &[u64; N], block: usize) -> &[u64; 8] {
    &row.as_chunks::<8>().0[block]
}

fn row_block_mut(row: &mut [u64; N], block: usize) -> &mut [u64; 8] {
    &mut row.as_chunks_mut::<8>().0[block]
}
