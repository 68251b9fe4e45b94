//! FIPS 204 ML-DSA verification, decomposed into the values the rollup circuit witnesses and
//! recomputes: the expanded public key (Â, NTT(t1·2^d), tr), the decoded signature (c̃, z, h),
//! and the intermediate values of Algorithm 8 (ML-DSA.Verify_internal): μ, c, w'_Approx, w1'
//! and c̃'. This is the circuit's reference and its witness generator; [`verify`] agrees with
//! every FIPS 204 implementation (the tests check it against `libcrux-ml-dsa`).
//!
//! Polynomials are `[u32; 256]` with coefficients in [0, q) unless stated (z is signed).
//! Algorithm numbers are those of FIPS 204 (August 2024).

use crate::accel::{BatchArithmetic, CpuBackend, NttClass, RingOp};
use sha3::digest::{ExtendableOutput, Update, XofReader};
use sha3::{Shake128, Shake256};
use thiserror::Error;

/// The ML-DSA modulus q = 2^23 − 2^13 + 1.
pub const Q: u32 = 8_380_417;
/// Dropped bits of t, d = 13.
pub const D: u32 = 13;
/// The 512th root of unity ζ = 1753 mod q of the NTT.
pub const ZETA: u32 = 1753;
/// Coefficients per polynomial.
pub const N: usize = 256;

/// A polynomial with coefficients in [0, q).
pub type Poly = [u32; N];

/// The ML-DSA parameter sets the rollup supports (FIPS 204 Table 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Params {
    /// `"ML-DSA-44"` or `"ML-DSA-65"`.
    pub name: &'static str,
    /// Rows k of A.
    pub k: usize,
    /// Columns l of A.
    pub l: usize,
    /// Nonzero coefficients τ of the challenge c.
    pub tau: usize,
    /// Bytes of c̃: λ/4.
    pub c_tilde_bytes: usize,
    /// γ1, the range of z.
    pub gamma1: u32,
    /// γ2, the low-order rounding range.
    pub gamma2: u32,
    /// β = τ·η.
    pub beta: u32,
    /// ω, the maximum number of ones in the hint.
    pub omega: usize,
}

/// ML-DSA-44: (k, l) = (4, 4), τ = 39, λ = 128, γ1 = 2^17, γ2 = (q − 1)/88, β = 78, ω = 80.
pub const ML_DSA_44: Params = Params {
    name: "ML-DSA-44",
    k: 4,
    l: 4,
    tau: 39,
    c_tilde_bytes: 32,
    gamma1: 1 << 17,
    gamma2: (Q - 1) / 88,
    beta: 78,
    omega: 80,
};

/// ML-DSA-65: (k, l) = (6, 5), τ = 49, λ = 192, γ1 = 2^19, γ2 = (q − 1)/32, β = 196, ω = 55.
pub const ML_DSA_65: Params = Params {
    name: "ML-DSA-65",
    k: 6,
    l: 5,
    tau: 49,
    c_tilde_bytes: 48,
    gamma1: 1 << 19,
    gamma2: (Q - 1) / 32,
    beta: 196,
    omega: 55,
};

/// ML-DSA-87: (k, l) = (8, 7), τ = 60, λ = 256, γ1 = 2^19, γ2 = (q − 1)/32, β = 120, ω = 75.
pub const ML_DSA_87: Params = Params {
    name: "ML-DSA-87",
    k: 8,
    l: 7,
    tau: 60,
    c_tilde_bytes: 64,
    gamma1: 1 << 19,
    gamma2: (Q - 1) / 32,
    beta: 120,
    omega: 75,
};

impl Params {
    /// Public key bytes: 32 + 320·k.
    pub const fn public_key_bytes(&self) -> usize {
        32 + 320 * self.k
    }

    /// Bits per coefficient of z in a signature: bitlen(γ1 − 1) + 1.
    pub const fn z_bits(&self) -> usize {
        (u32::BITS - (self.gamma1 - 1).leading_zeros()) as usize + 1
    }

    /// Signature bytes: λ/4 + 32·l·(bitlen(γ1 − 1) + 1) + ω + k.
    pub const fn signature_bytes(&self) -> usize {
        self.c_tilde_bytes + 32 * self.l * self.z_bits() + self.omega + self.k
    }

    /// m = (q − 1)/(2γ2): the number of values of w1 (16 or 44).
    pub const fn w1_values(&self) -> u32 {
        (Q - 1) / (2 * self.gamma2)
    }

    /// Bits per coefficient of w1Encode: bitlen(m − 1) (4 or 6).
    pub const fn w1_bits(&self) -> usize {
        (u32::BITS - (self.w1_values() - 1).leading_zeros()) as usize
    }
}

/// Why an encoding is not a valid ML-DSA key or signature for the parameter set.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum DecodeError {
    /// The input has the wrong length.
    #[error("{what}: {got} bytes, expected {expected}")]
    Length {
        /// Which encoding.
        what: &'static str,
        /// Bytes given.
        got: usize,
        /// Bytes expected.
        expected: usize,
    },
    /// The hint encoding is malformed (FIPS 204 Algorithm 21 returns ⊥).
    #[error("malformed hint encoding")]
    Hint,
    /// The context string is longer than 255 bytes (FIPS 204 Algorithm 3).
    #[error("context of {0} bytes, at most 255")]
    Context(usize),
}

/// The public key in the circuit's form: Â = ExpandA(ρ) (k×l, row-major, NTT domain),
/// NTT(t1·2^d) (k polynomials) and tr = H(pk, 64).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpandedKey {
    /// Â\[r·l + s\], NTT domain, coefficients in [0, q).
    pub a_hat: Vec<Poly>,
    /// NTT(t1\[r\]·2^d), coefficients in [0, q).
    pub t1_hat: Vec<Poly>,
    /// tr = SHAKE256(pk, 64).
    pub tr: [u8; 64],
}

impl ExpandedKey {
    /// Decodes `pk` (FIPS 204 Algorithm 23, pkDecode) and expands it. Errors:
    /// [`DecodeError::Length`] unless `pk` has [`Params::public_key_bytes`] bytes.
    pub fn from_public_key(params: &Params, pk: &[u8]) -> Result<Self, DecodeError> {
        if pk.len() != params.public_key_bytes() {
            return Err(DecodeError::Length {
                what: "ML-DSA public key",
                got: pk.len(),
                expected: params.public_key_bytes(),
            });
        }
        Ok(Self::expand(params, pk, &CpuBackend))
    }

    /// [`ExpandedKey::from_public_key`] for a `pk` whose length the caller checked (a shorter
    /// one gives fewer rows), with the NTTs of t1·2^d on `arithmetic` (the result does not
    /// depend on it).
    pub(crate) fn expand(params: &Params, pk: &[u8], arithmetic: &dyn BatchArithmetic) -> Self {
        let (rho, packed_t1) = pk.split_at(32.min(pk.len()));
        let mut a_hat = Vec::with_capacity(params.k * params.l);
        for r in 0..params.k {
            for s in 0..params.l {
                a_hat.push(rej_ntt_poly(rho, s as u8, r as u8));
            }
        }
        let mut t1_hat: Vec<Poly> = packed_t1
            .chunks_exact(320)
            .map(|chunk| unpack_bits(chunk, 10).map(|v| v << D))
            .collect();
        transform(arithmetic, RingOp::Forward, &mut t1_hat);
        let mut tr = [0u8; 64];
        shake256(&[pk], &mut tr);
        ExpandedKey { a_hat, t1_hat, tr }
    }
}

/// A signature decoded by FIPS 204 Algorithm 27 (sigDecode).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodedSignature {
    /// c̃, λ/4 bytes.
    pub c_tilde: Vec<u8>,
    /// z: l polynomials with coefficients in (−γ1, γ1].
    pub z: Vec<[i32; N]>,
    /// h: k polynomials of hint bits, at most ω ones in all.
    pub h: Vec<[bool; N]>,
}

impl DecodedSignature {
    /// Decodes `sig`. Errors: [`DecodeError::Length`]; [`DecodeError::Hint`] where FIPS 204
    /// Algorithm 21 (HintBitUnpack) returns ⊥ (indices not strictly increasing within a
    /// polynomial, a count out of order or above ω, non-zero padding).
    pub fn from_bytes(params: &Params, sig: &[u8]) -> Result<Self, DecodeError> {
        if sig.len() != params.signature_bytes() {
            return Err(DecodeError::Length {
                what: "ML-DSA signature",
                got: sig.len(),
                expected: params.signature_bytes(),
            });
        }
        let (c_tilde, rest) = sig.split_at(params.c_tilde_bytes);
        let z_bytes = 32 * params.z_bits();
        let (packed_z, hint) = rest.split_at(params.l * z_bytes);
        let z = packed_z
            .chunks_exact(z_bytes)
            .map(|chunk| {
                unpack_bits(chunk, params.z_bits()).map(|v| params.gamma1 as i32 - v as i32)
            })
            .collect();
        let h = hint_bit_unpack(params, hint)?;
        Ok(DecodedSignature {
            c_tilde: c_tilde.to_vec(),
            z,
            h,
        })
    }
}

/// FIPS 204 Algorithm 21, HintBitUnpack: `y` has ω + k bytes.
fn hint_bit_unpack(params: &Params, y: &[u8]) -> Result<Vec<[bool; N]>, DecodeError> {
    let (indices, counts) = y.split_at(params.omega);
    let mut h = vec![[false; N]; params.k];
    let mut index = 0usize;
    for (poly, &count) in h.iter_mut().zip(counts) {
        let count = usize::from(count);
        if count < index || count > params.omega {
            return Err(DecodeError::Hint);
        }
        let first = index;
        while index < count {
            let at = indices.get(index).copied().ok_or(DecodeError::Hint)?;
            if index > first && indices.get(index - 1).is_some_and(|&prev| prev >= at) {
                return Err(DecodeError::Hint);
            }
            if let Some(bit) = poly.get_mut(usize::from(at)) {
                *bit = true;
            }
            index += 1;
        }
    }
    if indices.iter().skip(index).any(|&b| b != 0) {
        return Err(DecodeError::Hint);
    }
    Ok(h)
}

/// The intermediate values of Algorithm 8 for one (key, message, context, signature).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// μ = H(tr ‖ M', 64) with M' = 0 ‖ |ctx| ‖ ctx ‖ M.
    pub mu: [u8; 64],
    /// c = SampleInBall(c̃), coefficients in {−1, 0, 1}.
    pub c: [i8; N],
    /// w'_Approx = NTT⁻¹(Â ∘ NTT(z) − NTT(c) ∘ NTT(t1·2^d)), k polynomials in [0, q).
    pub w_approx: Vec<Poly>,
    /// w1' = UseHint(h, w'_Approx), k polynomials in [0, m).
    pub w1: Vec<Poly>,
    /// c̃' = H(μ ‖ w1Encode(w1'), λ/4).
    pub c_tilde_prime: Vec<u8>,
    /// ‖z‖∞ < γ1 − β.
    pub z_in_range: bool,
}

impl Trace {
    /// Whether the signature verifies: c̃' = c̃ and ‖z‖∞ < γ1 − β (the hint weight is checked
    /// by decoding).
    pub fn accepts(&self, sig: &DecodedSignature) -> bool {
        self.z_in_range && self.c_tilde_prime == sig.c_tilde
    }
}

/// Runs Algorithm 8 (Verify_internal) on the pure-ML-DSA message M' = 0 ‖ |ctx| ‖ ctx ‖ M
/// (Algorithm 3), returning every intermediate value, with this module's reference NTT.
/// Errors: [`DecodeError::Context`] for a context longer than 255 bytes.
pub fn trace(
    params: &Params,
    key: &ExpandedKey,
    message: &[u8],
    ctx: &[u8],
    sig: &DecodedSignature,
) -> Result<Trace, DecodeError> {
    trace_with(params, key, message, ctx, sig, &CpuBackend)
}

/// [`trace`] with the transforms on `arithmetic`: the l + 1 forward NTTs (z and c) as one
/// batch, the k inverse NTTs as another. Products are summed exactly in `u64` (at most l
/// products and one offset below q² each, so below 2^50) and reduced once per coefficient.
/// The result does not depend on the backend: a row or call it refuses is computed by the
/// reference NTT here instead. Errors: as [`trace`].
pub fn trace_with(
    params: &Params,
    key: &ExpandedKey,
    message: &[u8],
    ctx: &[u8],
    sig: &DecodedSignature,
    arithmetic: &dyn BatchArithmetic,
) -> Result<Trace, DecodeError> {
    let ctx_len = [u8::try_from(ctx.len()).map_err(|_| DecodeError::Context(ctx.len()))?];
    let mut mu = [0u8; 64];
    shake256(&[&key.tr, &[0], &ctx_len, ctx, message], &mut mu);
    let c = sample_in_ball(params, &sig.c_tilde);
    let mut hats: Vec<Poly> = sig
        .z
        .iter()
        .map(|z| z.map(to_residue))
        .chain(std::iter::once(c.map(|v| to_residue(i32::from(v)))))
        .collect();
    transform(arithmetic, RingOp::Forward, &mut hats);
    let (z_hat, c_hat) = hats.split_at(params.l);
    let c_hat = c_hat.first().copied().unwrap_or([0; N]);
    let q = u64::from(Q);
    let mut w_approx: Vec<Poly> = (0..params.k)
        .map(|r| {
            let mut acc = [q * q; N];
            for (s, zh) in z_hat.iter().enumerate() {
                if let Some(a) = key.a_hat.get(r * params.l + s) {
                    for ((x, &ai), &zi) in acc.iter_mut().zip(a).zip(zh) {
                        *x += u64::from(ai) * u64::from(zi);
                    }
                }
            }
            if let Some(t) = key.t1_hat.get(r) {
                for ((x, &ci), &ti) in acc.iter_mut().zip(&c_hat).zip(t) {
                    *x -= u64::from(ci) * u64::from(ti);
                }
            }
            acc.map(|v| (v % q) as u32)
        })
        .collect();
    transform(arithmetic, RingOp::Inverse, &mut w_approx);
    let w1: Vec<Poly> = w_approx
        .iter()
        .zip(&sig.h)
        .map(|(w, h)| {
            let mut out = [0u32; N];
            for ((o, &r), &hint) in out.iter_mut().zip(w).zip(h) {
                *o = use_hint(params, hint, r);
            }
            out
        })
        .collect();
    let encoded = w1_encode(params, &w1);
    let mut c_tilde_prime = vec![0u8; params.c_tilde_bytes];
    shake256(&[&mu, &encoded], &mut c_tilde_prime);
    let bound = (params.gamma1 - params.beta) as i32;
    let z_in_range = sig.z.iter().flatten().all(|&v| v.abs() < bound);
    Ok(Trace {
        mu,
        c,
        w_approx,
        w1,
        c_tilde_prime,
        z_in_range,
    })
}

/// `op` ([`RingOp::Forward`] or [`RingOp::Inverse`]) on every polynomial, as one batch on
/// `arithmetic`; any polynomial the backend does not return transformed (a refused call or
/// row, or a value not below q) is transformed by [`ntt`] or [`intt`] here.
fn transform(arithmetic: &dyn BatchArithmetic, op: RingOp, polys: &mut [Poly]) {
    let mut rows: Vec<u64> = polys.iter().flatten().map(|&v| u64::from(v)).collect();
    let results = arithmetic.ring(NttClass::MlDsa, op, &mut rows, &[]);
    for (i, (poly, row)) in polys.iter_mut().zip(rows.chunks_exact(N)).enumerate() {
        // A row counts only when the backend says it succeeded and every value is canonical
        // (the products after the forward transform rely on values below q).
        let done = results
            .as_ref()
            .is_ok_and(|results| results.get(i).is_some_and(Result::is_ok))
            && row.iter().all(|&v| v < u64::from(Q));
        if done {
            for (x, &v) in poly.iter_mut().zip(row) {
                *x = v as u32;
            }
        } else if op == RingOp::Inverse {
            *poly = intt(poly);
        } else {
            *poly = ntt(poly);
        }
    }
}

/// ML-DSA.Verify (Algorithm 3) for an expanded key: decodes `sig` and runs [`trace`]. False for
/// a malformed signature.
pub fn verify(params: &Params, key: &ExpandedKey, message: &[u8], ctx: &[u8], sig: &[u8]) -> bool {
    verify_with(params, key, message, ctx, sig, &CpuBackend)
}

/// [`verify`] with the transforms on `arithmetic` ([`trace_with`]).
pub fn verify_with(
    params: &Params,
    key: &ExpandedKey,
    message: &[u8],
    ctx: &[u8],
    sig: &[u8],
    arithmetic: &dyn BatchArithmetic,
) -> bool {
    DecodedSignature::from_bytes(params, sig)
        .and_then(|decoded| {
            trace_with(params, key, message, ctx, &decoded, arithmetic).map(|t| t.accepts(&decoded))
        })
        .unwrap_or(false)
}

/// x mod q for a signed x.
fn to_residue(x: i32) -> u32 {
    x.rem_euclid(Q as i32) as u32
}

/// SHAKE256 of the concatenation of `parts` into `out`.
fn shake256(parts: &[&[u8]], out: &mut [u8]) {
    let mut h = Shake256::default();
    for part in parts {
        h.update(part);
    }
    h.finalize_xof().read(out);
}

/// Widest value [`unpack_bits`] reads, bits: a value and the shift to its first bit fit in
/// one 32-bit window.
const UNPACK_MAX_BITS: usize = 24;

/// Little-endian bit unpacking of 256 values of `bits` bits each, `bits` ≤ 24 (SimpleBitUnpack
/// / the unsigned part of BitUnpack, Algorithms 18–19). Bytes past the end of `bytes` read as
/// zero; a wider `bits` gives zeros.
fn unpack_bits(bytes: &[u8], bits: usize) -> [u32; N] {
    let mut out = [0u32; N];
    if bits > UNPACK_MAX_BITS {
        return out;
    }
    // Value i starts at bit i·bits: the 4 bytes from its first byte hold it whole (a shift of
    // at most 7 plus at most 24 bits), read from a copy padded with 4 zero bytes.
    let mut padded = [0u8; N * UNPACK_MAX_BITS / 8 + 4];
    for (p, &b) in padded.iter_mut().zip(bytes.iter().take(N * bits / 8)) {
        *p = b;
    }
    let mask = (1u32 << bits) - 1;
    for (i, v) in out.iter_mut().enumerate() {
        let bit = i * bits;
        if let Some(&[b0, b1, b2, b3]) = padded.get(bit / 8..bit / 8 + 4) {
            *v = (u32::from_le_bytes([b0, b1, b2, b3]) >> (bit % 8)) & mask;
        }
    }
    out
}

/// FIPS 204 Algorithm 30, RejNTTPoly, on the seed ρ ‖ s ‖ r (Algorithm 32, ExpandA): 23-bit
/// candidates from SHAKE128, kept when below q. The XOF is read a block (168 bytes, 56
/// candidates) at a time; no candidate straddles two blocks.
pub(crate) fn rej_ntt_poly(rho: &[u8], s: u8, r: u8) -> Poly {
    let mut h = Shake128::default();
    h.update(rho);
    h.update(&[s, r]);
    let mut reader = h.finalize_xof();
    let mut out = [0u32; N];
    let mut j = 0;
    let mut block = [0u8; 168];
    while j < N {
        reader.read(&mut block);
        for candidate in block.chunks_exact(3) {
            let &[b0, b1, b2] = candidate else { continue };
            let z = u32::from(b2 & 0x7f) << 16 | u32::from(b1) << 8 | u32::from(b0);
            if z < Q {
                if let Some(slot) = out.get_mut(j) {
                    *slot = z;
                    j += 1;
                }
            }
        }
    }
    out
}

/// FIPS 204 Algorithm 29, SampleInBall: c with τ coefficients ±1 from SHAKE256(c̃).
pub fn sample_in_ball(params: &Params, c_tilde: &[u8]) -> [i8; N] {
    let mut h = Shake256::default();
    h.update(c_tilde);
    let mut reader = h.finalize_xof();
    let mut sign_bytes = [0u8; 8];
    reader.read(&mut sign_bytes);
    let signs = u64::from_le_bytes(sign_bytes);
    let mut c = [0i8; N];
    for (t, i) in ((N - params.tau)..N).enumerate() {
        let j = loop {
            let mut b = [0u8; 1];
            reader.read(&mut b);
            let [j] = b;
            if usize::from(j) <= i {
                break usize::from(j);
            }
        };
        c.swap(i, j);
        if let Some(slot) = c.get_mut(j) {
            *slot = 1 - 2 * ((signs >> t) & 1) as i8;
        }
    }
    c
}

/// The 8-bit bit reversal of `i`.
const fn brv8(i: usize) -> usize {
    (i as u8).reverse_bits() as usize
}

/// a^e mod q.
pub(crate) const fn pow_mod(a: u32, mut e: usize) -> u32 {
    let mut base = a as u64;
    let mut acc = 1u64;
    while e > 0 {
        if e & 1 == 1 {
            acc = acc * base % Q as u64;
        }
        base = base * base % Q as u64;
        e >>= 1;
    }
    acc as u32
}

/// zetas\[m\] = ζ^brv8(m) mod q (FIPS 204 Appendix B).
const ZETAS: [u32; N] = {
    let mut z = [0u32; N];
    let mut m = 0;
    while m < N {
        // Compile-time loop over a constant array; m < 256 by the loop bound.
        #[allow(clippy::indexing_slicing)]
        {
            z[m] = pow_mod(ZETA, brv8(m));
        }
        m += 1;
    }
    z
};

/// FIPS 204 Algorithm 41, NTT: ŵ\[i\] = w(ζ^(2·brv8(i) + 1)).
pub fn ntt(w: &Poly) -> Poly {
    let mut a = *w;
    let mut zetas = ZETAS.iter().skip(1);
    let mut len = 128;
    while len >= 1 {
        for block in a.chunks_exact_mut(2 * len) {
            let z = u64::from(zetas.next().copied().unwrap_or(0));
            let (lo, hi) = block.split_at_mut(len);
            for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                let t = (z * u64::from(*y) % u64::from(Q)) as u32;
                *y = (*x + Q - t) % Q;
                *x = (*x + t) % Q;
            }
        }
        len /= 2;
    }
    a
}

/// FIPS 204 Algorithm 42, NTT⁻¹.
pub fn intt(w: &Poly) -> Poly {
    let mut a = *w;
    let mut zetas = ZETAS.iter().rev();
    let mut len = 1;
    while len < N {
        for block in a.chunks_exact_mut(2 * len) {
            let z = u64::from(Q - zetas.next().copied().unwrap_or(0));
            let (lo, hi) = block.split_at_mut(len);
            for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                let t = *x;
                *x = (t + *y) % Q;
                let diff = (t + Q - *y) % Q;
                *y = (z * u64::from(diff) % u64::from(Q)) as u32;
            }
        }
        len *= 2;
    }
    // f = 256⁻¹ mod q.
    const F: u64 = 8_347_681;
    a.map(|v| (u64::from(v) * F % u64::from(Q)) as u32)
}

/// FIPS 204 Algorithm 36, Decompose: r = r1·2γ2 + r0 with r0 ∈ (−γ2, γ2], except that
/// r − r0 = q − 1 gives r1 = 0 and r0 − 1. Input in [0, q).
#[inline(always)]
pub fn decompose(params: &Params, r: u32) -> (u32, i32) {
    by_gamma2(params.gamma2, |gamma2| decompose_by(gamma2, r))
}

/// FIPS 204 Algorithm 40, UseHint: r1, stepped by one (mod m = (q − 1)/2γ2) towards r0's
/// side where the hint is set.
#[inline(always)]
pub fn use_hint(params: &Params, hint: bool, r: u32) -> u32 {
    by_gamma2(params.gamma2, |gamma2| {
        let m = (Q - 1) / (2 * gamma2);
        let (r1, r0) = decompose_by(gamma2, r);
        // One step up (r0 > 0) or down, mod m, chosen without a branch on the data.
        let step = if r0 > 0 { 1 } else { m - 1 };
        let stepped = r1 + step;
        let stepped = if stepped >= m { stepped - m } else { stepped };
        if hint {
            stepped
        } else {
            r1
        }
    })
}

/// `f(gamma2)`, with `gamma2` a compile-time constant for the sets' two values, so that the
/// divisions by 2γ2 in `f` compile to multiplications (a division by a run-time γ2 was most of
/// a prepared-key verification).
#[inline(always)]
fn by_gamma2<T>(gamma2: u32, f: impl Fn(u32) -> T) -> T {
    const GAMMA2_32: u32 = ML_DSA_65.gamma2;
    const GAMMA2_88: u32 = ML_DSA_44.gamma2;
    match gamma2 {
        GAMMA2_32 => f(GAMMA2_32),
        GAMMA2_88 => f(GAMMA2_88),
        other => f(other),
    }
}

/// [`decompose`] for `gamma2`, with selects rather than branches on `r`. r0 ∈ (−γ2, γ2] makes
/// r1 = ⌈(r − γ2)/2γ2⌉ = ⌊(r + γ2 − 1)/2γ2⌋ (r ≥ 0, so the numerator is not negative); the
/// one r1 that reaches m = (q − 1)/2γ2 is the case r − r0 = q − 1, where FIPS 204 takes
/// r1 = 0 and r0 − 1.
#[inline(always)]
fn decompose_by(gamma2: u32, r: u32) -> (u32, i32) {
    let two_gamma2 = 2 * gamma2;
    let m = (Q - 1) / two_gamma2;
    let r1 = (r + gamma2 - 1) / two_gamma2;
    let r0 = r as i32 - (r1 * two_gamma2) as i32;
    let wraps = r1 == m;
    (if wraps { 0 } else { r1 }, r0 - i32::from(wraps))
}

/// FIPS 204 Algorithm 28, w1Encode: SimpleBitPack of every w1 polynomial at
/// [`Params::w1_bits`] bits per coefficient, little-endian.
/// Values are taken below 2^bits, as `use_hint` returns them. Packed eight values (`bits` whole
/// bytes) at a time.
pub fn w1_encode(params: &Params, w1: &[Poly]) -> Vec<u8> {
    let bits = params.w1_bits();
    let mut out = Vec::with_capacity(w1.len() * 32 * bits);
    for group in w1.iter().flat_map(|poly| poly.chunks_exact(8)) {
        let packed = group
            .iter()
            .enumerate()
            .fold(0u64, |acc, (i, &v)| acc | u64::from(v) << (i * bits));
        out.extend(packed.to_le_bytes().iter().take(bits));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// FIPS 204 Algorithm 36 as written: r0 = r mod± 2γ2, then the q − 1 case.
    fn decompose_as_written(gamma2: u32, r: u32) -> (u32, i32) {
        let two_gamma2 = 2 * gamma2 as i64;
        let mut r0 = i64::from(r) % two_gamma2;
        if r0 > i64::from(gamma2) {
            r0 -= two_gamma2;
        }
        if i64::from(r) - r0 == i64::from(Q - 1) {
            (0, (r0 - 1) as i32)
        } else {
            (((i64::from(r) - r0) / two_gamma2) as u32, r0 as i32)
        }
    }

    /// FIPS 204 Algorithm 40 as written.
    fn use_hint_as_written(gamma2: u32, hint: bool, r: u32) -> u32 {
        let m = (Q - 1) / (2 * gamma2);
        let (r1, r0) = decompose_as_written(gamma2, r);
        match (hint, r0 > 0) {
            (false, _) => r1,
            (true, true) => (r1 + 1) % m,
            (true, false) => (r1 + m - 1) % m,
        }
    }

    #[test]
    fn decompose_and_use_hint_match_fips_204_on_every_residue() {
        for params in [ML_DSA_44, ML_DSA_65] {
            for r in 0..Q {
                assert_eq!(
                    decompose(&params, r),
                    decompose_as_written(params.gamma2, r),
                    "{} r = {r}",
                    params.name
                );
                for hint in [false, true] {
                    assert_eq!(
                        use_hint(&params, hint, r),
                        use_hint_as_written(params.gamma2, hint, r),
                        "{} r = {r}, hint {hint}",
                        params.name
                    );
                }
            }
        }
    }

    /// Bit i of `bytes`, little-endian within each byte; zero past the end.
    fn bit(bytes: &[u8], i: usize) -> u32 {
        bytes.get(i / 8).map_or(0, |b| u32::from(b >> (i % 8) & 1))
    }

    #[test]
    fn bit_packing_matches_one_bit_at_a_time() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(36);
        for bits in [1, 4, 6, 10, 18, 20, 23, 24] {
            for len in [N * bits / 8, N * bits / 8 - 1, 3] {
                let bytes: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                let values = unpack_bits(&bytes, bits);
                for (i, &v) in values.iter().enumerate() {
                    let expected = (0..bits).fold(0, |acc, j| acc | bit(&bytes, i * bits + j) << j);
                    assert_eq!(v, expected, "{bits} bits, {len} bytes, value {i}");
                }
            }
        }
        assert_eq!(unpack_bits(&[0xff; 1024], 25), [0; N]);
        for params in [ML_DSA_44, ML_DSA_65, ML_DSA_87] {
            let m = params.w1_values();
            let w1: Vec<Poly> = (0..params.k)
                .map(|_| std::array::from_fn(|_| rng.gen_range(0..m)))
                .collect();
            let encoded = w1_encode(&params, &w1);
            let bits = params.w1_bits();
            assert_eq!(encoded.len(), params.k * 32 * bits);
            for (i, &v) in w1.iter().flatten().enumerate() {
                let read = (0..bits).fold(0, |acc, j| acc | bit(&encoded, i * bits + j) << j);
                assert_eq!(read, v, "{} value {i}", params.name);
            }
        }
    }
}
