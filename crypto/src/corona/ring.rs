//! Arithmetic in Z_q and in R_q = Z_q\[X\]/(X^256 + 1), q = 2^48 + 18945, and the negacyclic NTT.
//!
//! # What is here
//!
//! - [`Zq`]: an element of Z_q, always in [0, q).
//! - [`Poly`]: a polynomial in coefficient form; [`NttPoly`]: the same ring element in NTT form.
//!   Both are newtypes over `[u64; 256]` whose values lie in [0, q). The two domains are different
//!   types, so the compiler rejects a coefficient-wise product of coefficient-form polynomials or
//!   a rounding of an NTT-form one; [`Poly::ntt`] and [`NttPoly::intt`] are the only bridges.
//! - [`PolyVec`], [`NttVec`] and [`NttMatrix`]: vectors and matrices of polynomials with their
//!   shapes in the type (`NttMatrix<8, 7>` is A), used by the scheme with m = 8, n = 7 and
//!   D̄ + 1 = 49. A matrix kept in NTT form is reused by every product ([`NttMatrix::mul_vec`],
//!   [`NttMatrix::mul_mat`]); nothing is recomputed per product.
//!
//! # The transform
//!
//! The NTT maps a ∈ R_q to its evaluations at the 256 roots of X^256 + 1, the odd powers of a
//! primitive 512-th root of unity ψ, so that a product in R_q becomes a coefficient-wise product.
//! It is the merged negacyclic transform of Longa and Naehrig ("Speeding up the Number Theoretic
//! Transform for Faster Ideal Lattice-Based Cryptography", CANS 2016, Algorithms 1 and 2; also
//! Pöppelmann, Oder, Güneysu, LATINCRYPT 2015): Cooley–Tukey butterflies from natural to
//! bit-reversed order forward, Gentleman–Sande butterflies back, twiddles ψ^{brv(k)} in
//! bit-reversed order, and the scaling by 256^{-1} folded into the last inverse layer. NTT-form
//! values are therefore in bit-reversed evaluation order: slot k holds a(ψ^{2·brv(k)+1}).
//!
//! ψ = g^((q−1)/512) with g = 11, the smallest primitive root mod q (the choice of lattigo, so
//! ψ = 0xA58A46CDD563 as in the Go code), derived at compile time by [`PSI`]'s definition; a
//! compile-time assertion checks ψ^256 ≡ −1, which makes ψ a primitive 512-th root.
//!
//! # Reductions
//!
//! - Twiddle products use Shoup's precomputed-quotient multiplication (V. Shoup, NTL; analysed in
//!   D. Harvey, "Faster arithmetic for number-theoretic transforms", J. Symb. Comp. 60, 2014):
//!   for a fixed w < q and w' = ⌊w·2^64/q⌋, `a·w − ⌊a·w'/2^64⌋·q` lies in [0, 2q) for every
//!   64-bit a. Because q < 2^49 leaves 15 bits of headroom, the butterflies reduce lazily (Harvey
//!   2014 §4, taken further): the forward transform never reduces until its last layer (values
//!   stay below 17q), the inverse lets sums grow to 2^8·q; the bounds are stated at each step.
//! - Products of two variables (pointwise products, inner products) use Barrett reduction
//!   (P. Barrett, CRYPTO '86) of the 128-bit product or of a 128-bit sum of up to 65535 products.
//! - Values below 2^64 are reduced with the quotient estimate ⌊x/2^48⌋, which is within 2^16 of
//!   ⌊x/q⌋ because q − 2^48 = 18945 is small (a Barrett reduction with μ = 1): one multiply and
//!   one conditional addition.
//!
//! Montgomery multiplication (P. Montgomery, Math. Comp. 44, 1985), which lattigo uses, would
//! keep NTT-form values scaled by 2^64; with Shoup and Barrett every stored value is the plain
//! residue, so values can be compared, hashed and encoded without a domain conversion.
//!
//! # Constant time
//!
//! Secrets (s, R_i, E_i) pass through these functions. Every reduction, conditional subtraction
//! and sign handling here is branch-free and its memory access pattern depends only on the
//! (public) degree, never on values. [`Zq::inv`] uses a fixed exponent.

use std::ops::{Add, AddAssign, Mul, MulAssign, Neg, Sub, SubAssign};

use super::params::{DEGREE, Q};

/// Why a ring value could not be built. Every variant is a property of the input (a malformed
/// encoding or request): the caller rejects that input; nothing is fatal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RingError {
    /// A polynomial was given with the wrong number of coefficients.
    #[error("expected {expected} coefficients, got {got}")]
    Length {
        /// Required number of coefficients (the ring degree, 256).
        expected: usize,
        /// Number supplied.
        got: usize,
    },
    /// A coefficient is not a canonical residue: it is ≥ q.
    #[error("coefficient {index} is {value}, not below q = {Q}")]
    CoefficientOutOfRange {
        /// Position of the first offending coefficient.
        index: usize,
        /// Its value.
        value: u64,
    },
    /// Zero has no multiplicative inverse.
    #[error("zero is not invertible mod q")]
    NotInvertible,
}

// ---------------------------------------------------------------------------------------------
// Scalar reductions (private; every bound is stated where it is used).
// ---------------------------------------------------------------------------------------------

/// 2q, the offset that keeps a forward-butterfly difference non-negative.
const TWO_Q: u64 = 2 * Q;
/// 128·q: at least every value entering an inverse-NTT butterfly (they stay below 2^7·q), a
/// multiple of q, and small enough that `u + INV_OFFSET − v < 2^8·q < 2^57`.
const INV_OFFSET: u64 = 128 * Q;
/// (q − 1)/2: the largest value whose centered lift is non-negative.
const HALF_Q: u64 = (Q - 1) / 2;
/// Barrett constant ⌊2^110 / q⌋ < 2^62 for [`reduce_wide`].
const BARRETT_MU: u64 = ((1u128 << 110) / Q as u128) as u64;

/// `x − m` if `x ≥ m`, else `x`; branch-free. Requires `x < m + 2^63`.
#[inline(always)]
const fn csub(x: u64, m: u64) -> u64 {
    let r = x.wrapping_sub(m);
    // All ones when x < m (the difference wrapped past 2^63).
    let mask = ((r as i64) >> 63) as u64;
    r.wrapping_add(m & mask)
}

/// x mod q for any 64-bit x, branch-free.
///
/// Quotient estimate h = ⌊x/2^48⌋ < 2^16; x − h·q = (x mod 2^48) − h·18945 lies in
/// (−2^31, 2^48) ⊂ (−q, q), so one conditional addition of q finishes. h·q < 2^64 (no wrap).
#[inline(always)]
const fn reduce64(x: u64) -> u64 {
    let h = x >> 48;
    let r = x.wrapping_sub(h * Q);
    let mask = ((r as i64) >> 63) as u64;
    r.wrapping_add(Q & mask)
}

/// x mod q for x < 2^112 (a product of two values < q, or a sum of up to 65535 such products:
/// 65535·q² < 2^112), branch-free. Barrett 1986 with μ = ⌊2^110/q⌋ and the input pre-shifted by
/// 48 bits.
///
/// With x₁ = ⌊x/2^48⌋ < 2^64 and q̂ = ⌊x₁·μ/2^62⌋ < 2^64: q̂ ≤ x/q, and
/// x₁·μ/2^62 > x/q − x/2^110 − 2^48/q > x/q − 5, so ⌊x/q⌋ − 5 ≤ q̂ ≤ ⌊x/q⌋ and
/// x − q̂·q ∈ [0, 6q) ⊂ [0, 2^52): computed exactly in 64-bit wrapping arithmetic, then
/// finished by [`reduce64`].
#[inline(always)]
const fn reduce_wide(x: u128) -> u64 {
    let x1 = (x >> 48) as u64;
    let qhat = ((x1 as u128 * BARRETT_MU as u128) >> 62) as u64;
    reduce64((x as u64).wrapping_sub(qhat.wrapping_mul(Q)))
}

/// a·b mod q for a, b < q (product < 2^97).
#[inline(always)]
const fn mul_mod(a: u64, b: u64) -> u64 {
    reduce_wide(a as u128 * b as u128)
}

/// Shoup's precomputed quotient ⌊w·2^64/q⌋ for a fixed multiplicand w < q.
const fn shoup_quotient(w: u64) -> u64 {
    (((w as u128) << 64) / Q as u128) as u64
}

/// a·w mod q up to one multiple of q: the result is in [0, 2q) for every 64-bit a, given w < q and
/// wq = [`shoup_quotient`]`(w)` (Harvey 2014, Algorithm 2 without its final correction).
#[inline(always)]
const fn shoup_mul(a: u64, w: u64, wq: u64) -> u64 {
    let qhat = ((a as u128 * wq as u128) >> 64) as u64;
    a.wrapping_mul(w).wrapping_sub(qhat.wrapping_mul(Q))
}

/// base^exp mod q at compile time (table construction only; `%` on u128 is slow at run time).
const fn pow_const(base: u64, exp: u64) -> u64 {
    crate::accel::pow_mod(base, exp, Q)
}

// ---------------------------------------------------------------------------------------------
// Z_q
// ---------------------------------------------------------------------------------------------

/// The prime factorization of q − 1 = 2^9 · 3^2 · 5^2 · 14621 · 167113: its distinct primes.
const Q_MINUS_1_PRIMES: [u64; 5] = [2, 3, 5, 14621, 167113];
const _: () = assert!(512 * 9 * 25 * 14621 * 167113 == Q - 1);

/// The smallest primitive root mod q: the first g ≥ 2 with g^((q−1)/p) ≠ 1 for every prime p | q−1.
const fn smallest_primitive_root() -> u64 {
    let mut g = 2;
    loop {
        let mut ok = true;
        let mut i = 0;
        while i < Q_MINUS_1_PRIMES.len() {
            // Constant index into a constant array, bounded by the loop condition.
            #[allow(clippy::indexing_slicing)]
            let p = Q_MINUS_1_PRIMES[i];
            if pow_const(g, (Q - 1) / p) == 1 {
                ok = false;
            }
            i += 1;
        }
        if ok {
            return g;
        }
        g += 1;
    }
}

/// The primitive root g = 11 from which ψ is derived (evaluated at compile time).
const GENERATOR: u64 = smallest_primitive_root();

/// ψ = g^((q−1)/512), a primitive 512-th root of unity mod q (ψ^256 ≡ −1), with g = 11 the
/// smallest primitive root; the root of the negacyclic NTT. Evaluated at compile time; equals
/// 0xA58A46CDD563, lattigo's choice (`ring/subring.go`, `PrimitiveRoot` from 3 upwards).
pub const PSI: u64 = pow_const(GENERATOR, (Q - 1) / 512);
const _: () = assert!(pow_const(PSI, 256) == Q - 1);

/// An element of Z_q, q = 2^48 + 18945, always the canonical residue in [0, q).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Zq(u64);

impl Zq {
    /// 0 mod q.
    pub const ZERO: Zq = Zq(0);
    /// 1 mod q.
    pub const ONE: Zq = Zq(1);

    /// The residue `value`. Errors: [`RingError::CoefficientOutOfRange`] (index 0) if
    /// `value ≥ q`, so a non-canonical encoding is never silently reduced.
    pub const fn new(value: u64) -> Result<Zq, RingError> {
        if value < Q {
            Ok(Zq(value))
        } else {
            Err(RingError::CoefficientOutOfRange { index: 0, value })
        }
    }

    /// `value mod q`, for any 64-bit value.
    pub const fn reduce(value: u64) -> Zq {
        Zq(reduce64(value))
    }

    /// `value mod q` for a signed integer, e.g. a Gaussian sample or a Lagrange numerator;
    /// branch-free in the sign.
    pub const fn from_i64(value: i64) -> Zq {
        let magnitude = reduce64(value.unsigned_abs());
        let negated = csub(Q - magnitude, Q);
        let mask = (value >> 63) as u64;
        Zq((magnitude & !mask) | (negated & mask))
    }

    /// The canonical residue, in [0, q).
    pub const fn value(self) -> u64 {
        self.0
    }

    /// The centered representative, in [−(q−1)/2, (q−1)/2] (q is odd, so this is (−q/2, q/2]).
    pub const fn centered(self) -> i64 {
        centered(self.0)
    }

    /// self^exp mod q by square-and-multiply over all 64 bits of `exp` (the sequence of
    /// operations depends on `exp` only).
    pub fn pow(self, exp: u64) -> Zq {
        let mut acc = 1u64;
        let mut base = self.0;
        let mut e = exp;
        for _ in 0..64 {
            let bit_mask = (e & 1).wrapping_neg();
            let product = mul_mod(acc, base);
            acc = (product & bit_mask) | (acc & !bit_mask);
            base = mul_mod(base, base);
            e >>= 1;
        }
        Zq(acc)
    }

    /// The multiplicative inverse self^(q−2) (Fermat). Errors: [`RingError::NotInvertible`] for
    /// zero. Used for Lagrange coefficients at 0 over a signing set.
    pub fn inv(self) -> Result<Zq, RingError> {
        if self.0 == 0 {
            return Err(RingError::NotInvertible);
        }
        Ok(self.pow(Q - 2))
    }
}

/// Centered lift of a residue v < q: v if v ≤ (q−1)/2, else v − q; branch-free.
#[inline(always)]
const fn centered(v: u64) -> i64 {
    let mask = ((HALF_Q.wrapping_sub(v) as i64) >> 63) as u64;
    v.wrapping_sub(Q & mask) as i64
}

impl Add for Zq {
    type Output = Zq;
    fn add(self, rhs: Zq) -> Zq {
        Zq(csub(self.0 + rhs.0, Q))
    }
}

impl Sub for Zq {
    type Output = Zq;
    fn sub(self, rhs: Zq) -> Zq {
        Zq(csub(self.0 + Q - rhs.0, Q))
    }
}

impl Neg for Zq {
    type Output = Zq;
    fn neg(self) -> Zq {
        Zq(csub(Q - self.0, Q))
    }
}

impl Mul for Zq {
    type Output = Zq;
    fn mul(self, rhs: Zq) -> Zq {
        Zq(mul_mod(self.0, rhs.0))
    }
}

// ---------------------------------------------------------------------------------------------
// Twiddle tables
// ---------------------------------------------------------------------------------------------

/// A fixed multiplicand and its Shoup quotient.
type Twiddle = [u64; 2];

/// Precomputed twiddles of the degree-256 negacyclic NTT.
struct Twiddles {
    /// `forward[k] = (ψ^{brv8(k)}, quotient)` for k in 1..256; the forward layer with m groups
    /// uses entries m..2m (Longa–Naehrig Algorithm 1). Entry 0 is unused.
    forward: [Twiddle; DEGREE],
    /// ψ^{−brv8(k)} in the order the inverse consumes them: the layer with h groups
    /// (h = 128, 64, …, 2) uses entries 256 − 2h .. 256 − h for k = h..2h. Entries 254, 255 are
    /// unused (the last layer uses `last`).
    inverse: [Twiddle; DEGREE],
    /// 256^{-1} for the sums of the last inverse layer.
    n_inv: Twiddle,
    /// ψ^{−brv8(1)}·256^{-1} for the differences of the last inverse layer.
    last: Twiddle,
}

const fn twiddle(w: u64) -> Twiddle {
    [w, shoup_quotient(w)]
}

/// ψ^{−e} for 0 < e < 512.
const fn psi_inv_pow(e: u64) -> u64 {
    pow_const(PSI, 512 - e)
}

// Runs at compile time only (it initializes a `static`): an out-of-range index would be a
// compile error, never a run-time panic.
#[allow(clippy::indexing_slicing)]
const fn build_twiddles() -> Twiddles {
    let mut forward = [[0u64; 2]; DEGREE];
    let mut inverse = [[0u64; 2]; DEGREE];
    let mut k = 1;
    while k < DEGREE {
        let brv = (k as u8).reverse_bits() as u64;
        forward[k] = twiddle(pow_const(PSI, brv));
        k += 1;
    }
    let mut h = DEGREE / 2;
    while h >= 2 {
        let mut i = 0;
        while i < h {
            let brv = ((h + i) as u8).reverse_bits() as u64;
            inverse[DEGREE - 2 * h + i] = twiddle(psi_inv_pow(brv));
            i += 1;
        }
        h /= 2;
    }
    let n_inv = pow_const(DEGREE as u64, Q - 2);
    let last = (psi_inv_pow(1u8.reverse_bits() as u64) as u128 * n_inv as u128 % Q as u128) as u64;
    Twiddles {
        forward,
        inverse,
        n_inv: twiddle(n_inv),
        last: twiddle(last),
    }
}

static TWIDDLES: Twiddles = build_twiddles();

// ---------------------------------------------------------------------------------------------
// The transforms, in place over raw arrays (also what `crate::accel::CpuBackend` calls)
// ---------------------------------------------------------------------------------------------

/// One Cooley–Tukey layer with butterfly half-width `T` (`DEGREE/(2T)` groups). Input values
/// < B give outputs < B + 2q: the twiddle product is in [0, 2q).
#[inline(always)]
fn forward_layer<const T: usize>(a: &mut [u64; DEGREE]) {
    let groups = DEGREE / (2 * T);
    for (chunk, &[w, wq]) in a
        .chunks_exact_mut(2 * T)
        .zip(TWIDDLES.forward.iter().skip(groups))
    {
        let (lo, hi) = chunk.split_at_mut(T);
        for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
            let t = shoup_mul(*y, w, wq);
            let u = *x;
            *x = u + t;
            *y = u + TWO_Q - t;
        }
    }
}

/// Forward negacyclic NTT in place: `a` holds coefficients in [0, q) and receives the NTT image
/// in bit-reversed order, in [0, q). Longa–Naehrig 2016, Algorithm 1, with lazy reduction:
/// after layer l (1-based) every value is below (2l + 1)·q, so below 15q entering the last
/// layer and below 17q < 2^54 leaving it, where each value is reduced once.
pub(crate) fn forward_in_place(a: &mut [u64; DEGREE]) {
    forward_layer::<128>(a);
    forward_layer::<64>(a);
    forward_layer::<32>(a);
    forward_layer::<16>(a);
    forward_layer::<8>(a);
    forward_layer::<4>(a);
    forward_layer::<2>(a);
    for (pair, &[w, wq]) in a
        .chunks_exact_mut(2)
        .zip(TWIDDLES.forward.iter().skip(DEGREE / 2))
    {
        if let [x, y] = pair {
            let t = shoup_mul(*y, w, wq);
            let u = *x;
            *x = reduce64(u + t);
            *y = reduce64(u + TWO_Q - t);
        }
    }
}

/// One Gentleman–Sande layer with butterfly half-width `T`. Inputs below 2^l·q (l ≤ 7) give sums
/// below 2^{l+1}·q and twiddle products in [0, 2q); `INV_OFFSET` ≥ every input keeps the
/// difference non-negative.
#[inline(always)]
fn inverse_layer<const T: usize>(a: &mut [u64; DEGREE]) {
    let groups = DEGREE / (2 * T);
    for (chunk, &[w, wq]) in a
        .chunks_exact_mut(2 * T)
        .zip(TWIDDLES.inverse.iter().skip(DEGREE - 2 * groups))
    {
        let (lo, hi) = chunk.split_at_mut(T);
        for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
            let (u, v) = (*x, *y);
            *x = u + v;
            *y = shoup_mul(u + INV_OFFSET - v, w, wq);
        }
    }
}

/// Inverse negacyclic NTT in place: `a` holds an NTT image in bit-reversed order with values in
/// [0, q) and receives the coefficients in [0, q), scaled by 256^{-1}. Longa–Naehrig 2016,
/// Algorithm 2, with the final scaling folded into the last layer's two twiddles; values stay
/// below 2^7·q < 2^56 entering the last layer.
pub(crate) fn inverse_in_place(a: &mut [u64; DEGREE]) {
    inverse_layer::<1>(a);
    inverse_layer::<2>(a);
    inverse_layer::<4>(a);
    inverse_layer::<8>(a);
    inverse_layer::<16>(a);
    inverse_layer::<32>(a);
    inverse_layer::<64>(a);
    let [n_inv, n_inv_q] = TWIDDLES.n_inv;
    let [w, wq] = TWIDDLES.last;
    let (lo, hi) = a.split_at_mut(DEGREE / 2);
    for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
        let (u, v) = (*x, *y);
        *x = csub(shoup_mul(u + v, n_inv, n_inv_q), Q);
        *y = csub(shoup_mul(u + INV_OFFSET - v, w, wq), Q);
    }
}

/// `a ← a ∘ b` coefficient-wise mod q, for values in [0, q).
pub(crate) fn pointwise_in_place(a: &mut [u64; DEGREE], b: &[u64; DEGREE]) {
    for (x, y) in a.iter_mut().zip(b.iter()) {
        *x = mul_mod(*x, *y);
    }
}

/// The index and value of the first entry ≥ q, if any.
pub(crate) fn first_out_of_range(values: &[u64]) -> Option<(usize, u64)> {
    values
        .iter()
        .copied()
        .enumerate()
        .find(|&(_, value)| value >= Q)
}

/// Checks length and range; the array of a valid slice.
fn canonical_array(coefficients: &[u64]) -> Result<[u64; DEGREE], RingError> {
    let array: [u64; DEGREE] = coefficients.try_into().map_err(|_| RingError::Length {
        expected: DEGREE,
        got: coefficients.len(),
    })?;
    match first_out_of_range(&array) {
        Some((index, value)) => Err(RingError::CoefficientOutOfRange { index, value }),
        None => Ok(array),
    }
}

// ---------------------------------------------------------------------------------------------
// Polynomials
// ---------------------------------------------------------------------------------------------

/// A polynomial of R_q in coefficient form: coefficient i of X^i, each in [0, q).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Poly([u64; DEGREE]);

/// A polynomial of R_q in NTT form (see the module docs for the slot order), each value in [0, q).
/// Products are coefficient-wise here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NttPoly([u64; DEGREE]);

/// Additive operations shared by both domains (they are the same Z_q-module operations).
macro_rules! additive_ops {
    ($t:ident) => {
        impl $t {
            /// The zero polynomial.
            pub const ZERO: $t = $t([0; DEGREE]);

            /// From 256 canonical residues. Errors: [`RingError::Length`] unless exactly 256
            /// values are given; [`RingError::CoefficientOutOfRange`] for the first value ≥ q
            /// (never reduced silently, so every element has one encoding).
            pub fn from_coefficients(coefficients: &[u64]) -> Result<$t, RingError> {
                canonical_array(coefficients).map($t)
            }

            /// The 256 values, each in [0, q).
            pub fn coefficients(&self) -> &[u64; DEGREE] {
                &self.0
            }

            /// Every value multiplied by the scalar `c`.
            pub fn scalar_mul(&self, c: Zq) -> $t {
                $t(self.0.map(|x| mul_mod(x, c.0)))
            }
        }

        impl AddAssign<&$t> for $t {
            fn add_assign(&mut self, rhs: &$t) {
                for (x, y) in self.0.iter_mut().zip(rhs.0.iter()) {
                    *x = csub(*x + *y, Q);
                }
            }
        }

        impl SubAssign<&$t> for $t {
            fn sub_assign(&mut self, rhs: &$t) {
                for (x, y) in self.0.iter_mut().zip(rhs.0.iter()) {
                    *x = csub(*x + Q - *y, Q);
                }
            }
        }

        impl Add for &$t {
            type Output = $t;
            fn add(self, rhs: &$t) -> $t {
                let mut out = self.clone();
                out += rhs;
                out
            }
        }

        impl Sub for &$t {
            type Output = $t;
            fn sub(self, rhs: &$t) -> $t {
                let mut out = self.clone();
                out -= rhs;
                out
            }
        }

        impl Neg for &$t {
            type Output = $t;
            fn neg(self) -> $t {
                $t(self.0.map(|x| csub(Q - x, Q)))
            }
        }
    };
}

additive_ops!(Poly);
additive_ops!(NttPoly);

impl Poly {
    /// From signed integers (e.g. Gaussian samples), each taken mod q; branch-free in the values.
    pub fn from_signed(values: &[i64; DEGREE]) -> Poly {
        Poly(values.map(|v| Zq::from_i64(v).0))
    }

    /// Centered lift of every coefficient to [−(q−1)/2, (q−1)/2] (for norms and rounding).
    pub fn to_centered(&self) -> [i64; DEGREE] {
        self.0.map(centered)
    }

    /// The NTT image: the forward negacyclic NTT of the module docs (Longa–Naehrig 2016,
    /// Algorithm 1), values in [0, q), bit-reversed slot order.
    pub fn ntt(&self) -> NttPoly {
        let mut a = self.0;
        forward_in_place(&mut a);
        NttPoly(a)
    }
}

impl NttPoly {
    /// Back to coefficient form (inverse NTT with the 256^{-1} scaling).
    pub fn intt(&self) -> Poly {
        let mut a = self.0;
        inverse_in_place(&mut a);
        Poly(a)
    }
}

/// The product in R_q: a coefficient-wise product of NTT images.
impl MulAssign<&NttPoly> for NttPoly {
    fn mul_assign(&mut self, rhs: &NttPoly) {
        pointwise_in_place(&mut self.0, &rhs.0);
    }
}

/// The product in R_q: a coefficient-wise product of NTT images.
impl Mul for &NttPoly {
    type Output = NttPoly;
    fn mul(self, rhs: &NttPoly) -> NttPoly {
        let mut out = self.clone();
        out *= rhs;
        out
    }
}

/// Σ_j a_j ∘ b_j over the pairs yielded, reduced once per value: products are accumulated in
/// 128 bits (each < q² < 2^97) and the bound of [`reduce_wide`] allows up to 65535 terms, which
/// [`NttMatrix`]'s shape check guarantees.
fn inner_product<'a>(mut pairs: impl Iterator<Item = (&'a NttPoly, &'a NttPoly)>) -> NttPoly {
    let mut acc = [0u128; DEGREE];
    // Two products per pass halve the loads and stores of the accumulator.
    while let Some((a0, b0)) = pairs.next() {
        match pairs.next() {
            Some((a1, b1)) => {
                for ((((s, x0), y0), x1), y1) in acc
                    .iter_mut()
                    .zip(a0.0.iter())
                    .zip(b0.0.iter())
                    .zip(a1.0.iter())
                    .zip(b1.0.iter())
                {
                    *s += *x0 as u128 * *y0 as u128 + *x1 as u128 * *y1 as u128;
                }
            }
            None => {
                for ((s, x), y) in acc.iter_mut().zip(a0.0.iter()).zip(b0.0.iter()) {
                    *s += *x as u128 * *y as u128;
                }
            }
        }
    }
    NttPoly(acc.map(reduce_wide))
}

// ---------------------------------------------------------------------------------------------
// Vectors and matrices
// ---------------------------------------------------------------------------------------------

/// A vector of `L` polynomials in coefficient form (heap-allocated; `L = 49` is 98 KiB).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolyVec<const L: usize>(Box<[Poly]>);

/// A vector of `L` polynomials in NTT form (heap-allocated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NttVec<const L: usize>(Box<[NttPoly]>);

macro_rules! vector_ops {
    ($t:ident, $p:ident) => {
        impl<const L: usize> $t<L> {
            /// The vector whose entry i is `f(i)`, for i in 0..L.
            pub fn from_fn(f: impl FnMut(usize) -> $p) -> Self {
                $t((0..L).map(f).collect())
            }

            /// The vector of exactly `L` entries, without copying them; `None` for another
            /// count.
            pub fn from_entries(entries: Vec<$p>) -> Option<Self> {
                (entries.len() == L).then(|| $t(entries.into_boxed_slice()))
            }

            /// The `L` entries.
            pub fn as_slice(&self) -> &[$p] {
                &self.0
            }

            /// Entry i, or `None` if i ≥ L.
            pub fn get(&self, i: usize) -> Option<&$p> {
                self.0.get(i)
            }
        }

        impl<const L: usize> AddAssign<&$t<L>> for $t<L> {
            fn add_assign(&mut self, rhs: &$t<L>) {
                for (x, y) in self.0.iter_mut().zip(rhs.0.iter()) {
                    *x += y;
                }
            }
        }

        impl<const L: usize> SubAssign<&$t<L>> for $t<L> {
            fn sub_assign(&mut self, rhs: &$t<L>) {
                for (x, y) in self.0.iter_mut().zip(rhs.0.iter()) {
                    *x -= y;
                }
            }
        }
    };
}

vector_ops!(PolyVec, Poly);
vector_ops!(NttVec, NttPoly);

impl<const L: usize> PolyVec<L> {
    /// The NTT image of every entry.
    pub fn ntt(&self) -> NttVec<L> {
        NttVec(self.0.iter().map(Poly::ntt).collect())
    }
}

impl<const L: usize> NttVec<L> {
    /// The coefficient form of every entry.
    pub fn intt(&self) -> PolyVec<L> {
        PolyVec(self.0.iter().map(NttPoly::intt).collect())
    }

    /// Every entry multiplied (in R_q) by the polynomial `c`, e.g. c·s or c·b.
    pub fn mul_poly(&self, c: &NttPoly) -> NttVec<L> {
        NttVec(self.0.iter().map(|x| x * c).collect())
    }
}

/// An `R × C` matrix of polynomials in NTT form, row-major on the heap (A is `NttMatrix<8, 7>`,
/// a round-1 commitment D_i is `NttMatrix<8, 49>`). `C` must be in 1..=65535 (checked at compile
/// time), the number of terms the 128-bit accumulation of a product allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NttMatrix<const R: usize, const C: usize>(Box<[NttPoly]>);

impl<const R: usize, const C: usize> NttMatrix<R, C> {
    /// The matrix whose entry (i, j) is `f(i, j)`, for i in 0..R, j in 0..C.
    pub fn from_fn(mut f: impl FnMut(usize, usize) -> NttPoly) -> Self {
        NttMatrix(
            (0..R)
                .flat_map(|i| (0..C).map(move |j| (i, j)))
                .map(|(i, j)| f(i, j))
                .collect(),
        )
    }

    /// The matrix of exactly R·C entries in row-major order (entry (i, j) at i·C + j), without
    /// copying them; `None` for another count.
    pub fn from_entries(entries: Vec<NttPoly>) -> Option<Self> {
        (Some(entries.len()) == R.checked_mul(C)).then(|| NttMatrix(entries.into_boxed_slice()))
    }

    /// Entry (i, j), or `None` outside the shape.
    pub fn get(&self, i: usize, j: usize) -> Option<&NttPoly> {
        if j >= C {
            return None;
        }
        self.0.get(i.checked_mul(C)?.checked_add(j)?)
    }

    /// The matrix–vector product self·v ∈ R_q^R: R·C products, each row accumulated with one
    /// reduction per value.
    pub fn mul_vec(&self, v: &NttVec<C>) -> NttVec<R> {
        const { assert!(C >= 1 && C <= 65535) };
        NttVec(
            self.0
                .chunks_exact(C)
                .map(|row| inner_product(row.iter().zip(v.0.iter())))
                .collect(),
        )
    }

    /// The matrix product self·other ∈ R_q^{R×K} (e.g. A·R_i in round 1): R·C·K products.
    pub fn mul_mat<const K: usize>(&self, other: &NttMatrix<C, K>) -> NttMatrix<R, K> {
        const { assert!(C >= 1 && C <= 65535) };
        NttMatrix(
            self.0
                .chunks_exact(C)
                .flat_map(|row| {
                    (0..K).map(move |k| {
                        inner_product(row.iter().zip(other.0.iter().skip(k).step_by(K)))
                    })
                })
                .collect(),
        )
    }
}

impl<const R: usize, const C: usize> AddAssign<&NttMatrix<R, C>> for NttMatrix<R, C> {
    fn add_assign(&mut self, rhs: &NttMatrix<R, C>) {
        for (x, y) in self.0.iter_mut().zip(rhs.0.iter()) {
            *x += y;
        }
    }
}

/// Secret polynomials (key shares, round-1 randomness) are wiped with these when dropped by their
/// owners (`zeroize::Zeroizing` or a `Drop` impl); the values are plain residues, so zero is a
/// valid polynomial and the wiped value stays well-formed.
impl zeroize::Zeroize for Poly {
    fn zeroize(&mut self) {
        self.0.zeroize();
    }
}

impl zeroize::Zeroize for NttPoly {
    fn zeroize(&mut self) {
        self.0.zeroize();
    }
}

impl<const L: usize> zeroize::Zeroize for PolyVec<L> {
    fn zeroize(&mut self) {
        self.0.iter_mut().for_each(zeroize::Zeroize::zeroize);
    }
}

impl<const L: usize> zeroize::Zeroize for NttVec<L> {
    fn zeroize(&mut self) {
        self.0.iter_mut().for_each(zeroize::Zeroize::zeroize);
    }
}

impl<const R: usize, const C: usize> zeroize::Zeroize for NttMatrix<R, C> {
    fn zeroize(&mut self) {
        self.0.iter_mut().for_each(zeroize::Zeroize::zeroize);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact(x: u128) -> u64 {
        (x % Q as u128) as u64
    }

    #[test]
    fn generator_is_eleven_and_primitive() {
        assert_eq!(GENERATOR, 11);
        for p in Q_MINUS_1_PRIMES {
            assert_ne!(pow_const(11, (Q - 1) / p), 1);
            // Each listed factor is prime (trial division).
            assert!((2..p).take_while(|d| d * d <= p).all(|d| p % d != 0));
        }
        assert_eq!(PSI, 0xA58A46CDD563);
    }

    #[test]
    fn reduce64_is_exact_on_edges_and_samples() {
        let mut edges = vec![
            0,
            1,
            Q - 1,
            Q,
            Q + 1,
            2 * Q - 1,
            17 * Q - 1,
            u64::MAX,
            u64::MAX - 1,
        ];
        edges.extend((0..=16).map(|h| h << 48));
        edges.extend((1..=16).map(|h| (h << 48) - 1));
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..100_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            edges.push(x);
        }
        for v in edges {
            assert_eq!(reduce64(v), v % Q, "{v}");
        }
    }

    #[test]
    fn barrett_wide_is_exact_on_edges_and_samples() {
        let q = Q as u128;
        let limit = 1u128 << 112;
        let mut edges = vec![
            0,
            1,
            q - 1,
            q,
            q + 1,
            (q - 1) * (q - 1),
            q * q,
            q * q - 1,
            1u128 << 96,
            (1u128 << 96) - 1,
            (1u128 << 96) + 1,
            (1u128 << 97) - 1,
            65535 * (q - 1) * (q - 1),
            limit - 1,
            limit - q,
        ];
        let mut x = 0x2545_F491_4F6C_DD1Du128;
        for _ in 0..100_000 {
            x = x
                .wrapping_mul(0x2360_ED05_1FC6_5DA4_4385_DF64_9FCC_F645)
                .wrapping_add(0x5851_F42D_4C95_7F2D_1405_7B7E_F767_814F);
            edges.push(x % limit);
            edges.push((x >> 30) % (q * q));
        }
        for v in edges {
            assert_eq!(reduce_wide(v), exact(v), "{v}");
        }
    }

    #[test]
    fn shoup_product_is_congruent_and_below_2q() {
        let ws = [0, 1, 2, Q - 1, Q - 2, PSI, HALF_Q];
        let xs = [0, 1, Q - 1, Q, 17 * Q, 1 << 63, u64::MAX];
        for w in ws {
            for a in xs {
                let r = shoup_mul(a, w, shoup_quotient(w));
                assert!(r < 2 * Q);
                assert_eq!(r % Q, exact(a as u128 * w as u128));
            }
        }
    }

    #[test]
    fn twiddle_tables_match_their_definition() {
        assert_eq!(TWIDDLES.forward[1][0], pow_const(PSI, 128));
        assert_eq!(TWIDDLES.forward[255][0], pow_const(PSI, 255));
        // Layer h = 128 starts the inverse table with ψ^{-brv(128)} = ψ^{-1}.
        assert_eq!(exact(TWIDDLES.inverse[0][0] as u128 * PSI as u128), 1);
        // The two entries of layer h = 2 (k = 2, 3): ψ^{-64}, ψ^{-192}.
        assert_eq!(TWIDDLES.inverse[252][0], psi_inv_pow(64));
        assert_eq!(TWIDDLES.inverse[253][0], psi_inv_pow(192));
        assert_eq!(exact(TWIDDLES.n_inv[0] as u128 * 256), 1);
        for table in [&TWIDDLES.forward, &TWIDDLES.inverse] {
            for [w, wq] in table.iter() {
                assert_eq!(*wq, shoup_quotient(*w));
            }
        }
    }

    #[test]
    fn csub_and_centered_boundaries() {
        assert_eq!(csub(Q, Q), 0);
        assert_eq!(csub(Q - 1, Q), Q - 1);
        assert_eq!(csub(2 * Q - 1, Q), Q - 1);
        assert_eq!(centered(HALF_Q), HALF_Q as i64);
        assert_eq!(centered(HALF_Q + 1), -(HALF_Q as i64));
    }
}
