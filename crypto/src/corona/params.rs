//! The one Corona parameter set (docs/architecture.md §4; Ringtail, IACR ePrint 2024/1113, with the values of
//! its reference implementation's `sign/config.go`).

/// Ring degree φ: R_q = Z_q\[X\]/(X^256 + 1).
pub const DEGREE: usize = 256;
/// The modulus q = 2^48 + 18945 = 0x1000000004A01, prime, q ≡ 1 (mod 512) so the negacyclic NTT of
/// degree 256 exists.
pub const Q: u64 = (1 << 48) + 18945;
/// Rows of the public matrix A (length of b, e, h, Δ).
pub const M: usize = 8;
/// Columns of A (length of s, z).
pub const N: usize = 7;
/// Extra columns of a round-1 commitment D_i (u = (1, h_u) has `DBAR + 1` entries).
pub const DBAR: usize = 48;
/// Nonzero (±1) coefficients of a challenge.
pub const KAPPA: usize = 23;
/// Rounding shift of the public key: b̃ = round(b / 2^ξ).
pub const XI: u32 = 30;
/// Rounding shift of the commitment: h̃ = round(h / 2^ν); Δ is reduced mod 2^(48 − ν) = 2^19.
pub const NU: u32 = 29;
/// Standard deviation of the secret s, the error e and the columns R'_i, E'_i.
pub const SIGMA_E: f64 = 6.108187070284607;
/// Standard deviation of the first columns r*_i, e*_i of a round-1 commitment (≈ 2^37.33).
pub const SIGMA_STAR: f64 = 172_852_667_880.27;
/// Standard deviation of the hashed vector h_u (≈ 2^27.29).
pub const SIGMA_U: f64 = 163_961_331.52;
/// Verification bound: ‖(Δ·2^ν, z)‖₂² ≤ B², compared as exact integers.
pub const B_SQUARE: u128 = 184_960_669_042_442_604_975_662_780_477;
