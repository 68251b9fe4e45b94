//! ML-KEM's ring arithmetic (FIPS 203 §4.3), the reference kernels of two workload classes of
//! the acceleration seam ([`crate::accel::NttClass::MlKem`] and
//! [`crate::accel::NttClass::MlKemCyclic`]). The KEM itself is not implemented here.
//!
//! q = 3329 = 2^8·13 + 1 and n = 256. ζ = 17 is a primitive 256-th root of unity mod q, and
//! there is no primitive 512-th root, so:
//! - the negacyclic ring Z_q\[X\]/(X^256 + 1) has only FIPS 203's incomplete NTT: seven layers
//!   (Algorithm 9, [`ntt`]), ending in 128 polynomials of degree one modulo X² − γ_i with
//!   γ_i = ζ^(2·brv7(i)+1); products in that domain are `MultiplyNTTs` (Algorithm 11,
//!   [`multiply_ntts`]) and the inverse is Algorithm 10 ([`intt`], scaled by 128^{-1});
//! - the cyclic ring Z_q\[X\]/(X^256 − 1) has a complete eight-layer NTT ([`cyclic_ntt`]): the
//!   same Cooley–Tukey tree started at X^256 − 1, whose node i of every layer splits with
//!   ζ^brv7(i) (the twiddles of FIPS 203 Appendix A, from index 0); products are coefficient-wise
//!   and the inverse ([`cyclic_intt`]) is scaled by 256^{-1}.
//!
//! Values are canonical residues in [0, q) held in `u64` (the seam's row type); products are
//! below 2^24 and sums of two of them below 2^25, far inside `u64`, and the kernels reduce
//! with `%` after each product or sum of products. They are the reference a
//! faster backend is compared with, and are checked here against schoolbook multiplication in
//! each ring (`tests/mlkem_ring.rs`).

use crate::accel::pow_mod;

/// The modulus q = 3329.
pub const Q: u64 = 3329;
/// The ring degree n.
pub const N: usize = 256;
/// ζ = 17, a primitive 256-th root of unity mod q (FIPS 203 §4.3).
pub const ZETA: u64 = 17;

const fn brv7(i: usize) -> u64 {
    ((i as u8).reverse_bits() >> 1) as u64
}

/// `ZETAS[i]` = ζ^brv7(i) (FIPS 203 Appendix A), `GAMMAS[i]` = ζ^(2·brv7(i)+1), and the
/// inverses ζ^−brv7(i) for the cyclic inverse.
// Runs at compile time only (it initializes constants): an out-of-range index would be a
// compile error, never a run-time panic.
#[allow(clippy::indexing_slicing)]
const fn tables() -> [[u64; 128]; 3] {
    let mut t = [[0; 128]; 3];
    let mut i = 0;
    while i < 128 {
        t[0][i] = pow_mod(ZETA, brv7(i), Q);
        t[1][i] = pow_mod(ZETA, 2 * brv7(i) + 1, Q);
        t[2][i] = pow_mod(ZETA, 256 - brv7(i), Q);
        i += 1;
    }
    t
}

const TABLES: [[u64; 128]; 3] = tables();
static ZETAS: [u64; 128] = TABLES[0];
static GAMMAS: [u64; 128] = TABLES[1];
static ZETAS_INV: [u64; 128] = TABLES[2];
/// 128^{-1} mod q = 3303 (FIPS 203 Algorithm 10).
const INV_128: u64 = pow_mod(128, Q - 2, Q);
/// 256^{-1} mod q.
const INV_256: u64 = pow_mod(256, Q - 2, Q);
const _: () = assert!(pow_mod(ZETA, 128, Q) == Q - 1 && INV_128 == 3303);

/// One Cooley–Tukey layer: blocks of `2·len`, block b multiplied by the b-th twiddle.
fn forward_layer(f: &mut [u64; N], len: usize, twiddles: impl Iterator<Item = u64>) {
    for (block, zeta) in f.chunks_exact_mut(2 * len).zip(twiddles) {
        let (lo, hi) = block.split_at_mut(len);
        for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
            let t = zeta * *y % Q;
            *y = (*x + Q - t) % Q;
            *x = (*x + t) % Q;
        }
    }
}

/// One Gentleman–Sande layer: (x, y) ← (x + y, w·(y − x)) with w = `twiddles[b]` for block b
/// (the orientation of FIPS 203 Algorithm 10).
fn inverse_layer(f: &mut [u64; N], len: usize, twiddles: impl Iterator<Item = u64>) {
    for (block, zeta) in f.chunks_exact_mut(2 * len).zip(twiddles) {
        let (lo, hi) = block.split_at_mut(len);
        for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
            let t = *x;
            *x = (t + *y) % Q;
            *y = zeta * (*y + Q - t) % Q;
        }
    }
}

/// FIPS 203 Algorithm 9 (NTT) in place: coefficients of Z_q\[X\]/(X^256 + 1) in [0, q) in,
/// the incomplete NTT image (128 pairs) out.
pub fn ntt(f: &mut [u64; N]) {
    let mut groups = 1;
    while groups < N / 2 {
        let twiddles = ZETAS.iter().skip(groups).take(groups).copied();
        forward_layer(f, N / (2 * groups), twiddles);
        groups *= 2;
    }
}

/// FIPS 203 Algorithm 10 (NTT^{-1}) in place: the inverse of [`ntt`], scaled by 128^{-1}.
pub fn intt(f: &mut [u64; N]) {
    let mut groups = N / 4;
    while groups >= 1 {
        // Block b of the layer with `groups` blocks uses ζ^brv7(2·groups − 1 − b).
        let twiddles = ZETAS.iter().skip(groups).take(groups).rev().copied();
        inverse_layer(f, N / (2 * groups), twiddles);
        groups /= 2;
    }
    for x in f.iter_mut() {
        *x = *x * INV_128 % Q;
    }
}

/// FIPS 203 Algorithm 11 (`MultiplyNTTs`) in place: `f` ← f̂ × ĝ, each pair (f̂_2i, f̂_2i+1)
/// multiplied as a degree-one polynomial modulo X² − γ_i (Algorithm 12, `BaseCaseMultiply`).
pub fn multiply_ntts(f: &mut [u64; N], g: &[u64; N]) {
    for ((a, b), &gamma) in f
        .as_chunks_mut::<2>()
        .0
        .iter_mut()
        .zip(g.as_chunks::<2>().0)
        .zip(&GAMMAS)
    {
        let [a0, a1] = *a;
        let [b0, b1] = *b;
        *a = [(a0 * b0 + a1 * b1 % Q * gamma) % Q, (a0 * b1 + a1 * b0) % Q];
    }
}

/// The complete cyclic NTT in place: coefficients of Z_q\[X\]/(X^256 − 1) in [0, q) in, the
/// evaluations at the 256 powers of ζ (in the order the Cooley–Tukey tree leaves them) out.
pub fn cyclic_ntt(f: &mut [u64; N]) {
    let mut groups = 1;
    while groups < N {
        forward_layer(f, N / (2 * groups), ZETAS.iter().take(groups).copied());
        groups *= 2;
    }
}

/// The inverse of [`cyclic_ntt`] (scaled by 256^{-1}).
pub fn cyclic_intt(f: &mut [u64; N]) {
    let mut groups = N / 2;
    while groups >= 1 {
        // Undoing the split (x + s·y, x − s·y): (u + v, s^{-1}·(u − v)), i.e. the orientation
        // of `inverse_layer` with −s^{-1}.
        let twiddles = ZETAS_INV.iter().take(groups).map(|&w| (Q - w) % Q);
        inverse_layer(f, N / (2 * groups), twiddles);
        groups /= 2;
    }
    for x in f.iter_mut() {
        *x = *x * INV_256 % Q;
    }
}

/// Coefficient-wise product in place (the cyclic class's NTT-domain product).
pub fn pointwise(f: &mut [u64; N], g: &[u64; N]) {
    for (x, &y) in f.iter_mut().zip(g) {
        *x = *x * y % Q;
    }
}
