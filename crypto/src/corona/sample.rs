//! Corona's samplers: uniform polynomials mod q, discrete Gaussians at σ_E, σ_U and σ*
//! (constant-time with respect to the output), and the sparse ternary challenge of weight κ = 23.
//!
//! The samplers return plain coefficient arrays (index i = coefficient of X^i), independent of
//! the ring types: [`uniform`] → `[u64; 256]` in [0, q), [`gaussian`] → `[i64; 256]` (signed),
//! [`challenge`] → `[i8; 256]` with exactly [`KAPPA`] entries ±1 and the rest 0.
//!
//! # Uniform mod q ([`uniform`])
//!
//! Rejection sampling on 49-bit chunks: each candidate is the next 7 bytes of the stream read as
//! a little-endian integer and masked to its low 49 bits (bitlen q = 49); it is kept if < q.
//! Acceptance probability q/2^49 = 1/2 + 18945/2^49, so the rejection rate is
//! 1/2 − 2^−34.8 ≈ 50 %: on average 2·256 candidates = 3.5 KiB of stream per polynomial, read in
//! blocks of 64 candidates (448 bytes; the rest of the last block is dropped). Only the
//! number of rejections shows in the timing, and rejected candidates are independent of the kept
//! ones. Fed by [`hash::xof`] (cSHAKE256) with a distinct index per polynomial, e.g. A's entry
//! (i, j) from `xof(Role::ExpandA, seed_A, 7·i + j)`: A never shares a stream with a secret (the
//! Go code did, pq-threshold.md §1.10 #3).
//!
//! # Discrete Gaussians ([`gaussian`], [`Width`])
//!
//! D_{Z,σ}(x) = ρ_σ(x) / ρ_σ(Z) with ρ_σ(x) = exp(−x²/(2σ²)), centre 0, **not truncated at 2σ**.
//!
//! **Base sampler: full-table constant-time CDT.** For a small σ0 the table holds
//! T\[k\] = round(2^128 · Pr[|X| > k]) for k = 0, 1, …, K−1 (the folded distribution: |X| = 0 with
//! probability 1/ρ(Z), |X| = k with 2ρ(k)/ρ(Z)); K is the first k whose entry rounds to 0, so
//! Pr[|X| > K−1] < 2^−129. A sample draws a uniform 128-bit u and one sign bit s, computes
//! m = Σ_k [u < T\[k\]] over **every** entry with a borrow (no early exit, no branch, no
//! secret-dependent index) and returns (−1)^s·m (the sign is applied arithmetically; m = 0 stays
//! 0, which is why the table is folded). Pr[m ≥ j] = T[j−1]/2^128, so each probability is within
//! 2^−128 of the exact one, and the statistical distance to D_{Z,σ0} is at most
//! (K + 1)·2^−129 (K rounding errors of 2^−129 each plus the cut tail): 2^−122.7 for σ_E.
//! The table is non-increasing; in the far tail of a wide base (σ_U's), where Pr[|X| = k] is
//! below 2^−129, neighbouring entries can round to the same value, which the bound covers.
//!
//! **Large σ: iterated convolution** (Pöppelmann–Ducas–Güneysu, CHES 2014, §4; Micciancio–Walter,
//! CRYPTO 2017, §3). With x1, x2 independent samples of D_{Z,σ} and an integer k ≥ 1,
//! x1 + k·x2 is within statistical distance 8ε of D_{Z, σ·√(1+k²)} provided
//! σ ≥ √(1+k²)·η_ε(Z): this is Peikert, "An efficient and parallel Gaussian sampler for lattices",
//! CRYPTO 2010, **Theorem 3.1**, with Λ1 = Z, Λ2 = kZ, Σ1 = σ², Σ2 = k²σ², so that
//! √Σ3 = kσ/√(1+k²) ≥ η_ε(kZ) = k·η_ε(Z) is exactly the condition above, and D_{Z − x2,σ} = D_{Z,σ}
//! because k·x2 ∈ Z. We use ε = 2^−128 and η_ε(Z) ≤ √(ln(2(1 + 1/ε))/π)/√(2π) = 2.12835 in σ units
//! (Micciancio–Regev, SIAM J. Comput. 2007, Lemma 3.3, n = 1). L levels turn 2^L base samples
//! into one output: level ℓ combines pairs (y_{2j} + k_ℓ·y_{2j+1}). The base σ0 is chosen so that
//! σ0·Π√(1+k_ℓ²) **equals** the target σ (the last level is the final smoothing step: its
//! condition is what makes the output a discrete Gaussian of exactly the target σ rather than a
//! lattice-coset mixture):
//!
//! | width | target σ | base σ0 (CDT entries) | k_1..k_L | tightest condition |
//! |---|---|---|---|---|
//! | [`Width::U`] | 163,961,331.52 ≈ 2^27.29 | 202.8106 (2669) | 94, 8600 | level 1: 202.81 ≥ 200.08 |
//! | [`Width::Star`] | 172,852,667,880.27 ≈ 2^37.33 | 10.8545 (143) | 5, 25, 438, 284981 | level 4 |
//!
//! σ_U is sampled only for the public h_u, by the variable-time search (below), whose cost grows
//! with log K, not K: so it takes a wide base and two levels (4 base samples per output) rather
//! than four levels over a narrow one (16). σ* is secret and scanned in full, so its base stays
//! narrow.
//!
//! Statistical distance per output (errors add: 2^L inputs, 2^L − 1 convolutions of 8ε each): at
//! most 2^L·(K+1)·2^−129 + (2^L − 1)·8·2^−128, which is ≤ 2^−117.6 for σ* (L = 4, K = 143) and
//! ≤ 2^−115.6 for σ_U (L = 2, K = 2669); for σ_E (plain CDT) ≤ 2^−122.6. The support is bounded
//! by the construction (|x| ≤ 80 = 13.1σ_E for σ_E; for the convolutions |x| ≤ K·Π(1 + k_ℓ), far
//! beyond 14σ), and all mass beyond ≈ 13σ is inside the stated distance.
//!
//! **Tail cut, and B².** The Go reference truncates all three Gaussians at 2σ (rejecting larger
//! values), which is not a discrete Gaussian (variance ≈ 0.77σ², and the security analysis of
//! the paper is for D_{Z,σ}). We sample the true discrete Gaussian, cut only where the tail is
//! below 2^−128. Honest signatures then have E‖(Δ·2^ν, z)‖² ≈ 3840·t·(σ*² + 48·256·σ_E²·σ_U²)
//! = t·1.62·10^26 for t signers, against B² = 1.85·10^29: 0.2 % of B² at t = 7, 1.8 % at t = 21,
//! 8.8 % at t = 100, with the squared norm concentrated within a few percent of its mean; so the
//! wider tail keeps honest signatures within B² except with negligible probability for any
//! committee up to a few hundred signers (at t ≈ 1000 the expected norm reaches 0.88·B²).
//!
//! **Randomness.** Per base sample 16 bytes (u, little-endian) plus one sign bit; base samples are
//! drawn in blocks of 64 from one `fill_bytes` of 64·16 + 8 bytes (the last 8 bytes hold the 64
//! sign bits, bit i for sample i). σ_E costs 16.1 bytes per coefficient, σ_U 64.5 bytes (4 base
//! samples), σ* 258 bytes (16).
//! Secret Gaussians (s, e, R_i, E_i) take the caller's CSPRNG seeded from the OS (pass a
//! buffered generator such as `ChaCha20Rng::from_rng(OsRng)` rather than `OsRng`, which makes one
//! system call per block); the public h_u takes [`hash::prg`] keyed by its hash and may use
//! [`gaussian_public`], which returns bit-identical output with a search instead of the full
//! scan: a guide table indexed by u's top 12 bits narrows the candidates to the few table
//! entries inside that 2^−12 slice of probability, then a binary search among them (variable
//! time, so only for public values).
//!
//! **Cost** (this 2-core machine, one thread, ChaCha20 stream; `cargo bench -p quasar-bench
//! --bench corona -- corona_sample`): per polynomial σ_E 12.9 µs (50 ns/coefficient), σ* 290 µs,
//! σ_U 1.15 ms constant-time (a full scan of 2669 entries per base sample: never used, h_u is
//! public) and 12.9 µs with [`gaussian_public`]; uniform mod q 4.0 µs. A round 1 (720 σ_E +
//! 15 σ* polynomials) spends ≈ 13.7 ms sampling, a round 2's h_u (48 σ_U polynomials) 0.62 ms.
//!
//! # Challenge ([`challenge`])
//!
//! Exactly κ = 23 coefficients ±1: the sample-in-ball shuffle of FIPS 204 Algorithm 29 driven by
//! `xof(Role::Challenge, seed, 0)`: the first 8 bytes give the sign bits (bit i, little-endian,
//! for the i-th placed coefficient), then for i = 256 − κ, …, 255 a byte j is drawn until j ≤ i
//! (no modulo bias; at most 23/256 rejections per draw), c_i ← c_j and c_j ← ±1. The set of
//! positions is uniform among the C(256, 23) subsets and the signs are independent and uniform:
//! a challenge space of 2^131.1. The challenge is public, so this one is not constant-time.
//!
//! # Regenerating the tables
//!
//! The three CDT tables (`CDT_E` and `CDT_S` below, `CDT_U` in `cdt_u.rs`) were produced by this
//! script (Python 3, mpmath, 100 digits); the test `cdt_tables_match_the_gaussian` in
//! `crypto/tests/corona_sample.rs` rechecks them.
//!
//! ```python
//! from mpmath import mp, mpf, exp, sqrt, log, pi, nint
//! mp.dps = 100
//! ETA = sqrt(log(2 * (1 + mpf(2)**128)) / pi) / sqrt(2 * pi)
//! def table(sigma):
//!     rho = lambda k: exp(-mpf(k)**2 / (2 * sigma**2))
//!     S = 1 + 2 * sum(rho(k) for k in range(1, int(60 * sigma) + 10))
//!     surv, out, k = 1 - 1 / S, [], 0
//!     while (t := int(nint(surv * mpf(2)**128))) != 0:
//!         out.append(t); k += 1; surv -= 2 * rho(k) / S
//!     return out
//! def base(target, ks):  # σ0 with σ0·Π√(1+k²) = target; checks σ_{ℓ-1} ≥ η·√(1+k_ℓ²)
//!     p = 1
//!     for k in ks: p *= sqrt(1 + k * k)
//!     s = s0 = mpf(target) / p
//!     for k in ks: assert s >= ETA * sqrt(1 + k * k); s *= sqrt(1 + k * k)
//!     return s0
//! CDT_E = table(mpf('6.108187070284607'))
//! CDT_U = table(base('163961331.52', [94, 8600]))  # in cdt_u.rs
//! CDT_S = table(base('172852667880.27', [5, 25, 438, 284981]))
//! ```

use rand::{CryptoRng, RngCore};

use super::hash::{self, Role};
use super::params::{DEGREE, KAPPA, Q, SIGMA_E, SIGMA_STAR, SIGMA_U};

/// Which of Corona's three discrete Gaussians to sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Width {
    /// σ_E ≈ 6.108: the secret s, the error e and the columns R'_i, E'_i (plain CDT).
    E,
    /// σ_U ≈ 2^27.29: the hashed vector h_u (2-level convolution over a wide base).
    U,
    /// σ* ≈ 2^37.33: the first columns r*_i, e*_i of a round-1 commitment (4-level convolution).
    Star,
}

impl Width {
    /// The standard deviation σ of this width (the `params` constant).
    pub const fn sigma(self) -> f64 {
        match self {
            Width::E => SIGMA_E,
            Width::U => SIGMA_U,
            Width::Star => SIGMA_STAR,
        }
    }

    /// How [`gaussian`] samples this width: the base CDT and the convolution coefficients.
    pub const fn construction(self) -> Construction {
        match self {
            Width::E => Construction {
                base_sigma: SIGMA_E,
                table: &CDT_E,
                convolution: &[],
            },
            Width::U => Construction {
                base_sigma: BASE_SIGMA_U,
                table: &CDT_U,
                convolution: &[94, 8600],
            },
            Width::Star => Construction {
                base_sigma: BASE_SIGMA_S,
                table: &CDT_S,
                convolution: &[5, 25, 438, 284981],
            },
        }
    }

    /// The largest |x| [`gaussian`] can output for this width (its support bound):
    /// K·Π(1 + k_ℓ) with K the number of CDT entries.
    pub fn max_abs(self) -> i64 {
        let c = self.construction();
        c.convolution
            .iter()
            .fold(c.table.len() as i64, |acc, &x| acc * (1 + x))
    }

    /// The guide of this width's table for the variable-time search (see [`guide`]).
    fn guide(self) -> &'static Guide {
        match self {
            Width::E => &GUIDE_E,
            Width::U => &GUIDE_U,
            Width::Star => &GUIDE_S,
        }
    }
}

/// The construction of one Gaussian width (module docs): samples of the base CDT with σ0 =
/// `base_sigma`, combined by L = `convolution.len()` levels a + k_ℓ·b (2^L base samples per
/// output; L = 0 for σ_E: the CDT output itself), so that σ0·Π√(1 + k_ℓ²) is the target σ.
/// Published for audits and for the table tests.
#[derive(Clone, Copy, Debug)]
pub struct Construction {
    /// σ0 of the base CDT.
    pub base_sigma: f64,
    /// The CDT entries T\[k\] = round(2^128 · Pr[|X| > k]) of the folded D_{Z,σ0}, k = 0..K−1.
    pub table: &'static [u128],
    /// Convolution coefficients k_1..k_L (empty for σ_E).
    pub convolution: &'static [i64],
}

/// Base σ0 of the σ_U convolution: σ_U / Π√(1 + k²) over k = 94, 8600.
const BASE_SIGMA_U: f64 = 202.81055562826614;
/// Base σ0 of the σ* convolution: σ* / Π√(1 + k²) over k = 5, 25, 438, 284981.
const BASE_SIGMA_S: f64 = 10.854531865835497;
/// Base samples drawn per `fill_bytes` call.
const BLOCK: usize = 64;
/// Bytes per block: 16 per sample plus 8 sign bytes.
const BLOCK_BYTES: usize = BLOCK * 16 + 8;

/// A polynomial of 256 coefficients uniform in [0, q), by rejection on 49-bit chunks of `stream`
/// (7 little-endian bytes per candidate, see the module docs). Reads the stream in blocks of
/// 64 candidates (448 bytes) and drops what is left of the last block, so the result is a
/// function of the stream; give each polynomial its own stream (as ExpandA and the masks do).
/// Expected 8 blocks (3.5 KiB); never fails (a stream that never yields a value < q, e.g. all
/// ones, never returns).
pub fn uniform<R: RngCore + ?Sized>(stream: &mut R) -> [u64; DEGREE] {
    const MASK: u64 = (1 << 49) - 1;
    const CANDIDATES: usize = 64;
    let mut out = [0u64; DEGREE];
    let mut filled = 0;
    let mut block = [0u8; 7 * CANDIDATES];
    while filled < DEGREE {
        stream.fill_bytes(&mut block);
        for chunk in block.chunks_exact(7) {
            if filled == DEGREE {
                break;
            }
            let mut word = [0u8; 8];
            if let Some(low) = word.get_mut(..7) {
                low.copy_from_slice(chunk);
            }
            let v = u64::from_le_bytes(word) & MASK;
            if v < Q {
                if let Some(slot) = out.get_mut(filled) {
                    *slot = v;
                }
                filled += 1;
            }
        }
    }
    out
}

/// A polynomial of 256 independent samples of the discrete Gaussian `width`, centre 0, within
/// the statistical distance stated in the module docs (≤ 2^−117 per coefficient). Constant-time
/// with respect to the output: the work and the memory accesses do not depend on the values.
/// Reads 64 blocks of 1032 bytes from `rng` for σ_U and σ*, 4 for σ_E. Never fails. For secrets
/// (s, e, R_i, E_i).
pub fn gaussian<R: RngCore + CryptoRng + ?Sized>(width: Width, rng: &mut R) -> [i64; DEGREE] {
    sample_poly(width, rng, Timing::Constant)
}

/// The same polynomial as [`gaussian`] for the same stream (bit for bit), computed with a binary
/// search in the CDT instead of a full scan: about four times faster for σ_U, but its timing and
/// memory accesses depend on the output. Only for **public** values: the hashed h_u, which every
/// signer and the transcript determine. Never fails.
pub fn gaussian_public<R: RngCore + CryptoRng + ?Sized>(
    width: Width,
    rng: &mut R,
) -> [i64; DEGREE] {
    sample_poly(width, rng, Timing::Variable)
}

/// Whether the base sampler scans the whole table or binary-searches it (same result).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Timing {
    Constant,
    Variable,
}

fn sample_poly<R: RngCore + ?Sized>(width: Width, rng: &mut R, timing: Timing) -> [i64; DEGREE] {
    let mut out = [0i64; DEGREE];
    let c = width.construction();
    let guide = width.guide();
    // One block of 64 base samples makes 64 / 2^L outputs.
    let per_output = 1 << c.convolution.len();
    for chunk in out.chunks_mut(BLOCK / per_output) {
        let mut base = [0i64; BLOCK];
        base_block(c.table, guide, rng, &mut base, timing);
        for (o, group) in chunk.iter_mut().zip(base.chunks_exact(per_output)) {
            *o = convolve(group, c.convolution);
        }
    }
    out
}

/// The convolution levels: level ℓ maps pairs (a, b) to a + k_ℓ·b, so 2^L inputs (L =
/// `ks.len()` ≤ 4) give one output; with no level the input itself.
fn convolve(group: &[i64], ks: &[i64]) -> i64 {
    let mut v = [0i64; 16];
    for (d, s) in v.iter_mut().zip(group) {
        *d = *s;
    }
    let mut len = group.len();
    for &k in ks {
        len /= 2;
        for j in 0..len {
            let a = v.get(2 * j).copied().unwrap_or(0);
            let b = v.get(2 * j + 1).copied().unwrap_or(0);
            if let Some(d) = v.get_mut(j) {
                *d = a + k * b;
            }
        }
    }
    v.first().copied().unwrap_or(0)
}

/// Bits of u that index a [`Guide`].
const GUIDE_BITS: u32 = 12;
/// Entries of a [`Guide`]: one per value of the top [`GUIDE_BITS`] bits of u, plus one.
const GUIDE_LEN: usize = (1 << GUIDE_BITS) + 1;

/// The guide of a CDT for the variable-time search: entry b = #{k : T\[k\] > b·2^116}, the
/// base sample of every u whose top 12 bits are b (b·2^116 ≤ u < (b+1)·2^116), and entry
/// 2^12 = 0. Every u with top bits b has guide\[b+1\] ≤ m(u) ≤ guide\[b\], so the search runs
/// over guide\[b\] − guide\[b+1\] entries: none for 86.5 % of the values
/// of b for σ_U, one for 12.3 %, more only in the tails (the widest, b = 0, holds the 1925
/// entries below 2^116).
type Guide = [u16; GUIDE_LEN];

/// Builds the [`Guide`] of a non-increasing `table` of fewer than 2^16 entries.
// Runs at compile time only (it initializes a `static`): an out-of-range index would be a
// compile error, never a run-time panic.
#[allow(clippy::indexing_slicing)]
const fn guide(table: &[u128]) -> Guide {
    let mut g = [0u16; GUIDE_LEN];
    let mut b = 0;
    while b + 1 < GUIDE_LEN {
        let v = (b as u128) << (128 - GUIDE_BITS);
        // Binary search for #{k : T[k] > v}: T is non-increasing, so those k form a prefix.
        let (mut lo, mut hi) = (0, table.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if table[mid] > v {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        g[b] = lo as u16;
        b += 1;
    }
    g
}

static GUIDE_E: Guide = guide(&CDT_E);
static GUIDE_U: Guide = guide(&CDT_U);
static GUIDE_S: Guide = guide(&CDT_S);

/// Draws `BLOCK` base samples from the folded CDT `table` (see the module docs).
fn base_block<R: RngCore + ?Sized>(
    table: &[u128],
    guide: &Guide,
    rng: &mut R,
    out: &mut [i64; BLOCK],
    timing: Timing,
) {
    let mut buf = [0u8; BLOCK_BYTES];
    rng.fill_bytes(&mut buf);
    let (words, sign_bytes) = buf.split_at(BLOCK * 16);
    let signs = <[u8; 8]>::try_from(sign_bytes)
        .map(u64::from_le_bytes)
        .unwrap_or(0);
    let mut us = [0u128; BLOCK];
    for (u, w) in us.iter_mut().zip(words.chunks_exact(16)) {
        // chunks_exact(16) yields 16-byte slices, so the conversion always succeeds.
        *u = <[u8; 16]>::try_from(w)
            .map(u128::from_le_bytes)
            .unwrap_or(0);
    }
    let mut ms = [0u64; BLOCK];
    match timing {
        Timing::Constant => {
            // Four samples per pass over the table: one table load serves four comparisons.
            for (m4, u4) in ms.chunks_exact_mut(4).zip(us.chunks_exact(4)) {
                if let ([m0, m1, m2, m3], [u0, u1, u2, u3]) = (m4, u4) {
                    for &t in table {
                        // u < t ⇔ u − t borrows; every entry is compared, no early exit.
                        *m0 += u64::from(u0.overflowing_sub(t).1);
                        *m1 += u64::from(u1.overflowing_sub(t).1);
                        *m2 += u64::from(u2.overflowing_sub(t).1);
                        *m3 += u64::from(u3.overflowing_sub(t).1);
                    }
                }
            }
        }
        Timing::Variable => {
            // The table is non-increasing, so {k : u < T[k]} is a prefix of length m;
            // the guide bounds it to guide[b+1] ≤ m ≤ guide[b] for u's top bits b.
            for (m, &u) in ms.iter_mut().zip(us.iter()) {
                let b = (u >> (128 - GUIDE_BITS)) as usize;
                let lo = usize::from(guide.get(b + 1).copied().unwrap_or(0));
                let hi = usize::from(guide.get(b).copied().unwrap_or(0));
                let within = table
                    .get(lo..hi)
                    .map_or(0, |range| range.partition_point(|&t| u < t));
                *m = (lo + within) as u64;
            }
        }
    }
    for (i, (o, &m)) in out.iter_mut().zip(ms.iter()).enumerate() {
        let m = m as i64;
        let s = ((signs >> i) & 1) as i64;
        // s = 1 → −m, s = 0 → m, without a branch.
        *o = (m ^ -s) + s;
    }
}

/// The challenge polynomial for a 32-byte `seed` (a hash of the group key, h̃ and the message):
/// exactly [`KAPPA`] = 23 coefficients ±1, uniform positions, independent uniform signs (see the
/// module docs). Deterministic; never fails.
pub fn challenge(seed: &[u8; 32]) -> [i8; DEGREE] {
    let mut xof = hash::xof(Role::Challenge, seed, 0);
    let mut signs = xof.next_u64();
    let mut c = [0i8; DEGREE];
    for i in (DEGREE - KAPPA)..DEGREE {
        let j = loop {
            let mut b = [0u8; 1];
            xof.read(&mut b);
            let [byte] = b;
            let j = usize::from(byte);
            if j <= i {
                break j;
            }
        };
        // Positions ≥ i are still 0, so after the swap c_i holds the old c_j and c_j is free.
        c.swap(i, j);
        if let Some(slot) = c.get_mut(j) {
            *slot = 1 - 2 * (signs & 1) as i8;
        }
        signs >>= 1;
    }
    c
}

/// σ_E
/// σ = 6.108187070284607; 80 entries; entry k = round(2^128 · Pr[|X| > k]).
const CDT_E: [u128; 80] = [
    0xef47aa79af802d0ad6e8011faabbb418,
    0xce48f4c48827dc445f2a2871ce636313,
    0xae97199662315e265f5d8783ad379142,
    0x90f31ba9ed1b6ff4df900f63e27de347,
    0x75f6919ac04bc6eb3dc601b09f1def1d,
    0x5e0afd02db2ab82cac22b93e974aaea3,
    0x4966b99f8560149f677359b846dd8767,
    0x380f55d495eac0bdf6a58b2f9a33eab0,
    0x29e05f0d7902f221fed2985d82300afd,
    0x1e9527f56cb6318ba23fc94cbcb87c2b,
    0x15d3dcd627bf076336503c07b43c3ed8,
    0x0f38580267fceb3106d66b571454257f,
    0x0a5d8149d5e0e504775d490c8fca86e9,
    0x06e47ba2412e5525f941bdb8563c3189,
    0x04795ea0b4b01762b19aae46e9c631bd,
    0x02d59f68e7ffad7c896d8ed76144b4cc,
    0x01c091876eefccb52bc2b760c1e8edde,
    0x010e88f1839d66d141109fe9a91bfaf9,
    0x009f28390f44f2e4342930080405d211,
    0x005b5266970cd15c1690ed61cd1430ae,
    0x0033195f9ddc21a75610c9c1b8958b34,
    0x001be13eb2f790bd177696dc1ca57b6e,
    0x000ed4a558ef20011a8d9f0e46d5bc90,
    0x0007b0e18a1b97b8b343ef8893d061d5,
    0x0003e34a7cf16af944b417281f17ade5,
    0x0001ea6824d3c5b3d50283d3bc8e2bf9,
    0x0000eb8224764e399432879ccc421048,
    0x00006e38ef0ea003710c1219c46c6bc6,
    0x00003245706c12de8129d36127170b14,
    0x00001657a9f0aa09d0855db02f552e1a,
    0x000009acf6138032d1db656d7623cf1f,
    0x0000041529dc8d90f20fbac01f230d81,
    0x000001adae39833809af293165f35211,
    0x000000ac1a093f059b33c033345aacf4,
    0x0000004327f681d3d06b3e49fc5cde33,
    0x000000198760ee7dcfd47f5d1e6f1abb,
    0x00000009742bf6e0298416225599d453,
    0x00000003690c329d4e7c712ac3666873,
    0x0000000132c8c8bcae641f4bb7970c9d,
    0x000000006901e26d88c7b65818814012,
    0x00000000230271867bc564bd426f5862,
    0x000000000b5e779a7b36a545c3ca55ec,
    0x00000000039892e9e2c8ba7e46828a85,
    0x00000000011b9962ea5ba734ce8a6c66,
    0x00000000005517c272387082d3c443cf,
    0x000000000018ddd12a5f086f1c6a3ceb,
    0x00000000000713c30c97c3d285f2dbed,
    0x000000000001f63029bbc56f80a5e230,
    0x00000000000087904b0078dc589b1d53,
    0x00000000000023a392a4af8bbec5dd2f,
    0x000000000000091fda57685b31c515c7,
    0x000000000000024665981a1f1e3f4fd7,
    0x000000000000008d68f39dfa47c05380,
    0x00000000000000216fcae58a1ece5c39,
    0x0000000000000007b2fcb5171f2402f7,
    0x0000000000000001b9f43078ae827869,
    0x000000000000000060809eb466df8e36,
    0x00000000000000001484f36c0d96942f,
    0x0000000000000000043fa5e0aab8688a,
    0x000000000000000000db4b9a32d371c3,
    0x0000000000000000002b0e0ee0d13166,
    0x000000000000000000083b32294f021f,
    0x000000000000000000018846dfbe62bc,
    0x00000000000000000000471bd471edec,
    0x000000000000000000000c8d28b71273,
    0x00000000000000000000022840c7680b,
    0x00000000000000000000005c6c289d72,
    0x00000000000000000000000f0f91264f,
    0x00000000000000000000000263c4d306,
    0x0000000000000000000000005e847f5c,
    0x0000000000000000000000000e380025,
    0x00000000000000000000000002152d7b,
    0x000000000000000000000000004c0b20,
    0x000000000000000000000000000a8f64,
    0x00000000000000000000000000016d8a,
    0x00000000000000000000000000003020,
    0x0000000000000000000000000000062b,
    0x000000000000000000000000000000c5,
    0x00000000000000000000000000000018,
    0x00000000000000000000000000000003,
];
/// base of σ*
/// σ = 10.85453186583549651900145; 143 entries; entry k = round(2^128 · Pr[|X| > k]).
const CDT_S: [u128; 143] = [
    0xf69752372627a7962d6ba8276f79389b,
    0xe3da5d1c4e74479286dbdc8bf4df77df,
    0xd15a17140463b5bf1fa9e24f709f1544,
    0xbf3d41564df7f26265eb1acaccd4159b,
    0xada823093bb4cab50e86e896d971e18e,
    0x9cbbb0d1b0672d599ec4ff6d7a058ca7,
    0x8c94d6fab0cedfb790a278c551a8e2fb,
    0x7d4bec94323ce5d0e8a180160a97b520,
    0x6ef453a62c5cdb07de23da2a248fae83,
    0x619c482be35119fa519d354415c8a1a9,
    0x554cdd280cdccea57098dfbf106ab6cb,
    0x4a0a24ec3b61bc7d670dfd290a7b9f05,
    0x3fd37fc6e75553d4c747e043369c536c,
    0x36a40acd917737d10094007e8c83553d,
    0x2e732774512de6bdfbd95ca765f8a2ed,
    0x273514201482794ad8883c53813ebbcd,
    0x20db8dd97a96989911e5f7b665f64e92,
    0x1b5673af8223b3f28473f2e97f72a6fe,
    0x1694652073d9fe7489212d411f8de9ed,
    0x128355ed1893afb76bdbc5d4621f9c92,
    0x0f1112f4d3b5dcbea199be33a0b4a8c5,
    0x0c2bb5071a7332d013a4c77b7bc0692a,
    0x09c1ffe07df8bd470611eb2687d44bdf,
    0x07c3acbb368857503ff44d65d3ef95a0,
    0x0621a0e58bc424f0f72378ab188fa78c,
    0x04ce11a96ec7fcb627a0e86773f49199,
    0x03bc97730242100efdb68ce161f8cc65,
    0x02e2328f26eef757829b206197b36696,
    0x02354412ce9d0350ccb58c8d5901fd66,
    0x01ad7d861cb99289e7b9028aaca54a14,
    0x0143c9d3653c7668bcc8b690610a3aad,
    0x00f231c2fe8d34cd14a063e4342b62e6,
    0x00b3be02ba029a576d68bd5f27babfa2,
    0x008458632d6698fc287216825cd3dc61,
    0x0060ad9d1fe9a92f36692cfff18d70eb,
    0x0046109c514ad2ec3baa2ed8b0807828,
    0x00325ffed2c7875ae9f0b9972729f05f,
    0x0023ee342592f6ea475cc0186c04c0aa,
    0x00196c6ece5fd0454ad65582cf1ca0a8,
    0x0011d86e6b82d029bde0c4817f9feda7,
    0x000c6d071e323d07801acf422bedc3a9,
    0x00089534256041d49c4801fdd2ab2f1a,
    0x0005e175689bd626421db7cfb2d5baaa,
    0x0003ff30c00280329fc4249258e9960a,
    0x0002b1ce5fc3fa19c708dbad1ab78e48,
    0x0001cd4a6ba1172b288154a8588e72f5,
    0x000131fb035a3921224544e08dc28ffe,
    0x0000c950f8bfabf489b91c9095fc9d1f,
    0x00008360f450d760b49b7c0c504bdb7e,
    0x0000550a7105b2461b4c589f8cc4648a,
    0x00003699391dfbed30ae8ba9ffe13fd3,
    0x000022c4a58619f3eefe4d58b5dd5a30,
    0x000015f5aa3f6e356e0b2d1adfe3a0f6,
    0x00000dc1a833093a96bcaf7aae86b868,
    0x0000088c1573da97f4294787f8517877,
    0x0000054460fa111d5518db4c058d0190,
    0x000003381d3d2ac2ad3ebe603d584146,
    0x000001f38f29ce8638bc508f3f7dfd02,
    0x0000012c560468b63c1d2add4be60626,
    0x000000b3144fefa49b5a2dd096b68b54,
    0x00000069e68b4b0696be18f83f533b90,
    0x0000003e1c3518971ba456fe5610542d,
    0x00000024209b8802e18ee3ce2cdb805a,
    0x00000014d744a4597153ca4324a83c89,
    0x0000000bec63a9887b2fe7d61800e24b,
    0x00000006c3e888d221f267d113fff79e,
    0x00000003ce8f7eb00b480919da1a760d,
    0x000000021fdce2b3c69f834e4a686e56,
    0x000000012cffa0bc6d0537038de6838d,
    0x00000000a5355054a37ceb7925ec0110,
    0x0000000059ed4637d923998a45389291,
    0x00000000308b422a6012f2e5c8e2ff6b,
    0x0000000019fcd99a12ea9f4e57c406b3,
    0x000000000dcc0868874db30b40aca8d2,
    0x0000000007439f1d93aa1bb27f96b376,
    0x0000000003caf82948b852fea9fb86a7,
    0x0000000001f6c41ed7d61653e7b4049f,
    0x0000000001022b4ca1dc006d5d92707c,
    0x00000000008377ba592251d331f27a00,
    0x00000000004264126099721aa3a898e3,
    0x0000000000213f9b5f95c2830203a545,
    0x0000000000108323c6d62be235078ac0,
    0x00000000000821dd2e3b46b7b1c080db,
    0x000000000003f8c7fb10760a52e532e4,
    0x000000000001ec75b50776ca8658ef03,
    0x000000000000ec86f28a303385b007ae,
    0x00000000000070a81b8a0bceefc4b652,
    0x0000000000003535e411d309420e244b,
    0x00000000000018ec4dea96dc25520eb0,
    0x0000000000000b938500bdb8b31a63eb,
    0x0000000000000555025505a18dc4e069,
    0x000000000000026f7b4a8d4be17426e0,
    0x000000000000011a67776df5741c065c,
    0x000000000000007ed896e226a139eebe,
    0x00000000000000387fba6d4909ac3343,
    0x0000000000000018f484bf630b313d38,
    0x000000000000000aee2e469f91df4ef5,
    0x0000000000000004bf5d14ab859edde5,
    0x00000000000000020b77fb9bb345070a,
    0x0000000000000000df93e18222dd8678,
    0x00000000000000005eb172081263a7ae,
    0x000000000000000027c53b615f5df831,
    0x000000000000000010904412bea8b519,
    0x000000000000000006d733894250f9a9,
    0x000000000000000002cd2e408e41a7de,
    0x0000000000000000012340af2ca34cb4,
    0x000000000000000000754a220b5c3feb,
    0x0000000000000000002ed67a0dfe63d8,
    0x000000000000000000128c1b1f497ddb,
    0x00000000000000000007487315c08701,
    0x00000000000000000002d5fbb1ebb50e,
    0x000000000000000000011850d8e04c9c,
    0x000000000000000000006b53f9d22d34,
    0x0000000000000000000028bfe1e03956,
    0x000000000000000000000f577ecdb739,
    0x0000000000000000000005ba43150f68,
    0x00000000000000000000021ed0059a57,
    0x0000000000000000000000c743bc135b,
    0x0000000000000000000000488923160e,
    0x00000000000000000000001a2ec4fda4,
    0x0000000000000000000000095f264682,
    0x0000000000000000000000035387e18d,
    0x0000000000000000000000012bb28811,
    0x0000000000000000000000006897ef99,
    0x000000000000000000000000243245f2,
    0x0000000000000000000000000c6bd45a,
    0x000000000000000000000000043a0869,
    0x000000000000000000000000016d1a2f,
    0x000000000000000000000000007a28ba,
    0x0000000000000000000000000028879c,
    0x000000000000000000000000000d557c,
    0x00000000000000000000000000045992,
    0x0000000000000000000000000001683a,
    0x0000000000000000000000000000738c,
    0x000000000000000000000000000024c1,
    0x00000000000000000000000000000b98,
    0x000000000000000000000000000003a0,
    0x00000000000000000000000000000120,
    0x00000000000000000000000000000059,
    0x0000000000000000000000000000001b,
    0x00000000000000000000000000000008,
    0x00000000000000000000000000000002,
    0x00000000000000000000000000000001,
];

// Base of σ_U: σ = 202.81055562826614; 2669 entries; entry k = round(2^128 · Pr[|X| > k]).
include!("cdt_u.rs");
