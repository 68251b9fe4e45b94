//! The CUDA backend's ring kernels (`ntt.cu`, compiled by NVRTC when the backend opens) and their CPU
//! twin.
//!
//! The CUDA backend only runs where a GPU is lent, so everything about its ring kernels that
//! can be checked without one lives here and runs in every test run: the twiddle tables the
//! host uploads ([`RingTables`]) and [`twin`], the kernels' algorithm in Rust, statement for
//! statement (one loop iteration per CUDA thread), which `tests/kernels.rs` checks against the
//! CPU reference for every class and operation. The device then only has to agree with its
//! twin (`tests/cuda.rs`, on a lent GPU).
//!
//! Both classes use one algorithm with their own ψ (a primitive 512th root of unity mod q):
//! FIPS 204 Algorithms 41–42, generalised from ζ = 1753 to ψ. The inverse is the unique
//! inverse of the forward map, so it agrees with Corona's own Gentleman–Sande code too.

use quasar_crypto::accel::{pow_mod, NttClass, RingOp};
use quasar_crypto::corona::ring::PSI;

/// The CUDA C source of the kernels `ntt_forward`, `ntt_inverse` and `pointwise`.
pub const SOURCE: &str = include_str!("ntt.cu");

/// Threads per block of `ntt_forward` / `ntt_inverse` (one butterfly each per layer).
pub const NTT_THREADS: u32 = 128;

const N: usize = 256;

/// The host-computed constants of one class's kernels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RingTables {
    /// q.
    pub modulus: u64,
    /// `forward[k]` = ψ^brv8(k) mod q.
    pub forward: Vec<u64>,
    /// `inverse[m]` = q − ψ^brv8(m) mod q.
    pub inverse: Vec<u64>,
    /// 256^{-1} mod q.
    pub n_inv: u64,
}

/// a·b mod q for a, b < q < 2^49, as the kernels compute it (no 128-bit division on the
/// device): the quotient estimated in IEEE double precision, the remainder modulo 2^64, one
/// correction each way.
///
/// Bound: a, b < 2^49 are exact doubles; the rounded product and the rounded division give
/// a·b/q·(1 + ε) with |ε| < 2^-52, and a·b/q < q < 2^49, so the estimate is within 1/8 of a·b/q
/// and its truncation within 1 of ⌊a·b/q⌋. The true remainder minus at most one q, or plus at
/// most one q, lies in (−q, 2q), which a signed 64-bit value holds.
pub fn mul_mod(a: u64, b: u64, q: u64) -> u64 {
    let quot = ((a as f64) * (b as f64) / (q as f64)) as u64;
    let mut r = a.wrapping_mul(b).wrapping_sub(quot.wrapping_mul(q)) as i64;
    let q_signed = q as i64;
    if r < 0 {
        r += q_signed;
    }
    if r >= q_signed {
        r -= q_signed;
    }
    r as u64
}

impl RingTables {
    /// The tables of `class`: ψ = Corona's [`PSI`], or ML-DSA's ζ = 1753 (FIPS 204 §7.5);
    /// `None` for a class these kernels do not handle (a ring without a 512th root of unity,
    /// such as ML-KEM's, needs other kernels).
    pub fn of(class: NttClass) -> Option<RingTables> {
        let q = class.modulus();
        let psi = match class {
            NttClass::MlDsa => 1753,
            NttClass::Corona => PSI,
            _ => return None,
        };
        let powers: Vec<u64> = (0..N)
            .map(|k| pow_mod(psi, u64::from((k as u8).reverse_bits()), q))
            .collect();
        Some(RingTables {
            modulus: q,
            inverse: powers.iter().map(|&p| (q - p) % q).collect(),
            forward: powers,
            // q is prime: 256^{-1} = 256^{q−2}.
            n_inv: pow_mod(256, q - 2, q),
        })
    }
}

/// The kernels' algorithm on one row (and `rhs` for [`RingOp::Pointwise`]) of canonical
/// residues (values ≥ q are outside its contract: garbage, or an overflow panic in a debug
/// build), with `tables`: what `ntt_forward`, `ntt_inverse` and `pointwise` compute for that
/// row, with thread `t` of the block as iteration `t` of the inner loops.
pub fn twin(tables: &RingTables, op: RingOp, row: &mut [u64; N], rhs: &[u64; N]) {
    let q = tables.modulus;
    let add = |a: u64, b: u64| if a + b >= q { a + b - q } else { a + b };
    let sub = |a: u64, b: u64| if a >= b { a - b } else { a + q - b };
    let table = |t: &[u64], i: usize| t.get(i).copied().unwrap_or_default();
    match op {
        RingOp::Forward => {
            let mut len = N / 2;
            while len >= 1 {
                for t in 0..N / 2 {
                    let b = t / len;
                    let j = b * 2 * len + t % len;
                    let w = table(&tables.forward, N / (2 * len) + b);
                    let (x, y) = (row[j], mul_mod(row[j + len], w, q));
                    row[j] = add(x, y);
                    row[j + len] = sub(x, y);
                }
                len /= 2;
            }
        }
        RingOp::Inverse => {
            let mut len = 1;
            while len < N {
                for t in 0..N / 2 {
                    let b = t / len;
                    let j = b * 2 * len + t % len;
                    let w = table(&tables.inverse, N / len - 1 - b);
                    let (x, y) = (row[j], row[j + len]);
                    row[j] = add(x, y);
                    row[j + len] = mul_mod(sub(x, y), w, q);
                }
                len *= 2;
            }
            for x in row.iter_mut() {
                *x = mul_mod(*x, tables.n_inv, q);
            }
        }
        RingOp::Pointwise => {
            for (x, &y) in row.iter_mut().zip(rhs) {
                *x = mul_mod(*x, y, q);
            }
        }
    }
}
