//! Corona: a two-round lattice threshold signature, the Ringtail construction (Boschini, Kaviani,
//! Lai, Malavolta, Takahashi, Tibouchi; IACR ePrint 2024/1113), over
//! R_q = Z_q\[X\]/(X^256 + 1) with q = 2^48 + 18945 (DESIGN.md §4).
//!
//! Under construction (issue 5). Built so far:
//! - [`params`]: the parameter set;
//! - [`ring`]: arithmetic in Z_q and R_q, the negacyclic NTT;
//! - [`sample`]: uniform, discrete Gaussian and sparse ternary samplers;
//! - [`hash`]: the SP 800-185 hash suite (cSHAKE256, KMAC256, TupleHash256) with Corona's
//!   customization strings.
//!
//! Key generation, the two signing rounds, combining, verification and the compact encodings are
//! not built yet.

pub mod hash;
pub mod params;
pub mod ring;
pub mod sample;
