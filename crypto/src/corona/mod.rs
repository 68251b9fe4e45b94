//! Corona: a two-round lattice threshold signature, the Ringtail construction (Boschini, Kaviani,
//! Lai, Malavolta, Takahashi, Tibouchi; IACR ePrint 2024/1113), over
//! R_q = Z_q\[X\]/(X^256 + 1) with q = 2^48 + 18945 (docs/architecture.md §4).
//!
//! The modules:
//! - [`params`]: the parameter set;
//! - [`ring`]: arithmetic in Z_q and R_q, the negacyclic NTT;
//! - [`sample`]: uniform, discrete Gaussian and sparse ternary samplers;
//! - [`hash`]: the SP 800-185 hash suite (cSHAKE256, KMAC256, TupleHash256) with Corona's
//!   customization strings;
//! - [`scheme`]: trusted-dealer key generation, round 1, round 2, combine, verification (single
//!   and batched, with A expanded once per group key) and the compact encodings of keys,
//!   signatures and round messages;
//! - [`local`]: every party of a signing set in one process (tests, benchmarks, a dealer-held
//!   committee);
//! - [`encode`]: the bit packing under those encodings and their [`encode::EncodingError`].

pub mod encode;
pub mod hash;
pub mod local;
pub mod params;
pub mod ring;
pub mod sample;
pub mod scheme;
