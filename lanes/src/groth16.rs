//! The Groth16 lane: verification of Groth16 proofs over BLS12-381 (docs/architecture.md §3, §4), one at a
//! time and in batches.
//!
//! Source: J. Groth, "On the size of pairing-based non-interactive arguments", EUROCRYPT 2016,
//! §3.2. A proof `π = (A, B, C)` with `A, C ∈ G1`, `B ∈ G2` is accepted for public inputs
//! `x_1..x_l ∈ Fr` under the verifying key `(α·G1, β·G2, γ·G2, δ·G2, γ_abc_g1 = [K_0..K_l])` iff
//!
//! ```text
//! e(A, B) = e(α, β) · e(L, γ) · e(C, δ),   L = K_0 + Σ x_i·K_i.
//! ```
//!
//! [`VerifyingKey::verify`] evaluates it as one multi-Miller loop over `(A, B)`, `(L, −γ)`,
//! `(C, −δ)` and one final exponentiation compared with the precomputed `e(α, β)`. Batches use the
//! small-exponent test of Bellare, Garay and Rabin ("Fast batch verification for modular
//! exponentiation and digital signatures", EUROCRYPT 1998): see [`VerifyingKey::verify_batch`].
//! The verifying key and proofs are those of `ark-groth16` (the setup of the rollup; our prover
//! writes the same proofs). Decoding and the input fold use arkworks' curve arithmetic
//! (`ark-bls12-381`); the Miller loops and the final exponentiation are blst's, which measured
//! faster than arkworks' (next sections). Points cross over through their uncompressed ZCash
//! encoding, which both libraries share.
//!
//! # Encodings
//!
//! - [`Proof`]: exactly [`PROOF_LEN`] = 192 bytes, `A (48) ‖ B (96) ‖ C (48)`, each point in the
//!   arkworks compressed encoding of BLS12-381, which is the ZCash encoding (big-endian x, flag
//!   bits compressed / infinity / larger-y in the top three bits of the first byte; for G2, x.c1
//!   before x.c0) — also what `CanonicalSerialize::serialize_compressed` writes for
//!   `ark_groth16::Proof<Bls12_381>`.
//! - [`VerifyingKey`]: `ark_groth16::VerifyingKey<Bls12_381>` compressed: `α (48) ‖ β (96) ‖
//!   γ (96) ‖ δ (96) ‖ n (u64 little-endian) ‖ n × 48`, `n = num_inputs + 1`.
//! - Public inputs: elements of Fr, 32 bytes little-endian ([`field_element_from_bytes`]).
//!
//! # What decoding checks
//!
//! Every point: canonical encoding (compression flag set, no larger-y flag on infinity, every
//! coordinate `< p`; arkworks rejects the rest, and a decoded value re-encodes to its bytes), on
//! the curve, in the prime-order subgroup, and **not the identity**. An honest prover never outputs
//! `A`, `B` or `C` at infinity (they carry the prover's fresh randomness `r·δ`, `s·δ`), and an
//! honest setup never gives α, β, γ, δ or a `K_i` at infinity; rejecting them costs nothing and
//! keeps degenerate pairings (where a term drops out of the equation) away from the verifier. A
//! verifying key is bounded to [`MAX_PUBLIC_INPUTS`] inputs, checked from its length prefix before
//! anything is allocated. Public inputs must be canonical (`< r`): a value is never reduced, so
//! `x` and `x + r` can never both be accepted as "the same" statement.
//!
//! # Deviations from ark-groth16, and why
//!
//! - The number of public inputs must equal [`VerifyingKey::num_inputs`]
//!   ([`Groth16Error::InputCount`]). `ark_groth16::Groth16::verify_proof` silently ignores extra
//!   inputs and treats missing ones as zero.
//! - Inputs are folded into `L` with a fixed-base table per `K_i`, built once per key (see below),
//!   instead of one variable-base scalar multiplication per input.
//! - Identity points are rejected (above).
//!
//! # Proofs are malleable: never deduplicate by proof bytes
//!
//! Anyone can re-randomize a valid proof into another valid proof of the same statement with
//! different bytes (`A' = A/θ`, `B' = θ·B + θρ·δ`, `C' = C + ρ·A`; Baghery, Kohlweiss, Siim,
//! Volkhov, IACR ePrint 2020/811, Fig. 1; ark-groth16's `rerandomize_proof`). A proof is evidence
//! that a statement is true, not an identifier: deduplicate and cache by the statement (verifying
//! key, public inputs), never by the proof bytes.
//!
//! # Input folding: fixed-base tables
//!
//! `L = K_0 + Σ x_i·K_i` has constant bases, so each `K_i` gets a table of signed-digit windows:
//! for window `j` (of [`WINDOW_BITS`] = 8 bits) the multiples `k·2^(8j)·K_i`, `k = 1..=128`, in
//! affine form. A 255-bit input then costs 32 table lookups and mixed additions, and no doubling.
//! Measured on the 2-vCPU machine (bench `groth16_fold`, 3 inputs, same run): tables 54 µs,
//! ark-groth16's `prepare_inputs` (one variable-base multiplication per input) 442 µs, one arkworks
//! `VariableBaseMSM` over `K_1..K_3` 757 µs (Pippenger's buckets do not pay off for 3 points, and
//! arkworks builds a thread pool per MSM call). So: tables.
//!
//! # Cost (2-vCPU machine, `cargo bench -p quasar-bench --bench groth16`)
//!
//! One [`VerifyingKey::verify`] with 3 inputs takes about 0.57× the time of ark-groth16's
//! `verify_with_processed_vk` on the same proof (1.15 ms against 2.02 ms): the fold saves about
//! 0.4 ms, and blst's multi-Miller loop and final exponentiation about 0.45 ms more than
//! arkworks' with prepared G2 lines (with the arkworks pairing the ratio was 0.78). A batch of 64
//! costs about a quarter of 64 single verifications (230 µs per proof; per-item work and the
//! Miller loop run on all cores). Decoding a proof (three subgroup checks, same cost as
//! arkworks' validated decoder) costs about a quarter of a verification.
//!
//! # Safety argument
//!
//! Soundness of the single check is Groth16's (knowledge soundness in the generic group model,
//! Groth 2016 §3.2), given points in the prime-order subgroups, which decoding guarantees. The
//! batch check with 128-bit non-zero random `r_i` drawn after the proofs are fixed accepts a batch
//! containing an invalid proof with probability at most 2^-127 (GT has prime order `r`; the
//! equation is a non-trivial linear relation in the unknown `r_i`), and bisection ends in
//! individual checks, so the per-item verdicts of [`VerifyingKey::verify_batch`] equal those of
//! [`VerifyingKey::verify`] except with that probability. Nothing here panics on any input: all
//! lengths are checked before slicing or allocating.

use std::fmt;

use ark_bls12_381::{Bls12_381, Fr, G1Affine, G1Projective, G2Affine};
use ark_ec::{AffineRepr, CurveGroup, VariableBaseMSM};
use ark_ff::{AdditiveGroup, PrimeField, Zero};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize, Compress, Validate};
use blst::{blst_fp12, blst_p1_affine, blst_p2_affine};
use rand::{CryptoRng, RngCore};

/// Bytes of a compressed G1 point.
pub const G1_LEN: usize = 48;
/// Bytes of a compressed G2 point.
pub const G2_LEN: usize = 96;
/// Bytes of an encoded [`Proof`]: `A (G1) ‖ B (G2) ‖ C (G1)`, compressed.
pub const PROOF_LEN: usize = G1_LEN + G2_LEN + G1_LEN;
/// Bytes of an encoded public input (an element of Fr, little-endian).
pub const FIELD_ELEMENT_LEN: usize = 32;
/// The most public inputs a [`VerifyingKey`] may have. The rollup has 3 (`[μ_hi, μ_lo, h_x]`).
pub const MAX_PUBLIC_INPUTS: usize = 64;
/// Bytes of an encoded verifying key before its `γ_abc_g1` points: α, β, γ, δ and the u64 count.
const VK_FIXED_LEN: usize = G1_LEN + 3 * G2_LEN + 8;

/// Bits per window of the fixed-base tables that fold public inputs (module docs).
///
/// Each table holds `⌈256/w⌉ · 2^(w−1)` affine points (104 bytes each in memory) and a fold costs
/// `⌈256/w⌉` mixed additions per input: with `w = 8`, 4096 points (416 KiB) per `K_i`, so 1.6 MiB
/// for the rollup's key (3 inputs and `K_0`) and at most 27 MiB at [`MAX_PUBLIC_INPUTS`]; building
/// them costs about 4096 additions and one batched inversion per `K_i`.
pub const WINDOW_BITS: usize = 8;

/// Why a Groth16 proof, key or input was rejected. Every variant means "drop the certificate leg";
/// none is a local fault. `Encoding`, `NonCanonicalInput`, `InputCount` and `Invalid` from a peer
/// are grounds to penalize it (an honest peer never sends them).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Groth16Error {
    /// The statement has the wrong number of public inputs for this key.
    #[error("expected {expected} public inputs, got {got}")]
    InputCount { expected: usize, got: usize },
    /// A public input's 32 bytes encode a value `>= r` (never reduced).
    #[error("public input is not a canonical field element (value >= r)")]
    NonCanonicalInput,
    /// Bytes that do not decode; names the part (e.g. `"proof point B"`).
    #[error("malformed {0}")]
    Encoding(&'static str),
    /// A verifying key declares more public inputs than [`MAX_PUBLIC_INPUTS`].
    #[error("verifying key declares {got} public inputs, more than {max}")]
    TooManyInputs { got: u64, max: usize },
    /// The pairing check failed: the proof does not prove this statement under this key.
    #[error("proof does not verify")]
    Invalid,
}

/// Decodes a public input: 32 bytes, little-endian, the value must be `< r` (the order of
/// BLS12-381's G1), else [`Groth16Error::NonCanonicalInput`]. Never reduces modulo `r`.
pub fn field_element_from_bytes(bytes: &[u8; FIELD_ELEMENT_LEN]) -> Result<Fr, Groth16Error> {
    let mut limbs = [0u64; 4];
    for (limb, chunk) in limbs.iter_mut().zip(bytes.chunks_exact(8)) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        *limb = u64::from_le_bytes(word);
    }
    Fr::from_bigint(ark_ff::BigInt::new(limbs)).ok_or(Groth16Error::NonCanonicalInput)
}

/// Encodes a public input: its canonical value `< r`, 32 bytes little-endian. Inverse of
/// [`field_element_from_bytes`].
pub fn field_element_to_bytes(x: &Fr) -> [u8; FIELD_ELEMENT_LEN] {
    let mut bytes = [0u8; FIELD_ELEMENT_LEN];
    for (chunk, limb) in bytes.chunks_exact_mut(8).zip(x.into_bigint().0) {
        chunk.copy_from_slice(&limb.to_le_bytes());
    }
    bytes
}

/// Whether a decoded point is usable: on the curve, in the prime-order subgroup, not the
/// identity.
fn g1_is_valid(p: &G1Affine) -> bool {
    !p.is_zero() && p.is_on_curve() && p.is_in_correct_subgroup_assuming_on_curve()
}

/// [`g1_is_valid`] for G2.
fn g2_is_valid(p: &G2Affine) -> bool {
    !p.is_zero() && p.is_on_curve() && p.is_in_correct_subgroup_assuming_on_curve()
}

/// Decodes one compressed G1 point with full validation; `what` names it in the error.
fn decode_g1(bytes: &[u8], what: &'static str) -> Result<G1Affine, Groth16Error> {
    // Unvalidated decompression checks the flags and `x < p` and puts the point on the curve;
    // `g1_is_valid` then does the subgroup check once (arkworks' `Validate::Yes` would do it too,
    // and then it would run twice).
    let point = G1Affine::deserialize_with_mode(bytes, Compress::Yes, Validate::No)
        .map_err(|_| Groth16Error::Encoding(what))?;
    if g1_is_valid(&point) {
        Ok(point)
    } else {
        Err(Groth16Error::Encoding(what))
    }
}

/// Decodes one compressed G2 point with full validation; `what` names it in the error.
fn decode_g2(bytes: &[u8], what: &'static str) -> Result<G2Affine, Groth16Error> {
    let point = G2Affine::deserialize_with_mode(bytes, Compress::Yes, Validate::No)
        .map_err(|_| Groth16Error::Encoding(what))?;
    if g2_is_valid(&point) {
        Ok(point)
    } else {
        Err(Groth16Error::Encoding(what))
    }
}

/// Writes the compressed encoding of `point` into `out` (exactly its length).
fn encode_point<P: CanonicalSerialize>(point: &P, out: &mut [u8]) {
    // Writing into a slice of the exact compressed length cannot fail; if it somehow did, the
    // bytes stay zero, which no decoder accepts.
    let _ = point.serialize_compressed(out);
}

/// A Groth16 proof whose points are valid: A and C in G1, B in G2, none the identity
/// (see the module docs). Built only by [`Proof::from_bytes`] or [`Proof::from_ark`].
///
/// Proofs are malleable (module docs): two different `Proof`s can prove the same statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proof {
    a: G1Affine,
    b: G2Affine,
    c: G1Affine,
}

impl Proof {
    /// Decodes `A ‖ B ‖ C` from exactly [`PROOF_LEN`] = 192 bytes, compressed points, each
    /// canonical, in its prime-order subgroup and not the identity.
    ///
    /// Errors: [`Groth16Error::Encoding`] naming the length or the point that failed.
    /// Cost: about three subgroup checks (see bench `groth16_decode`).
    pub fn from_bytes(bytes: &[u8]) -> Result<Proof, Groth16Error> {
        if bytes.len() != PROOF_LEN {
            return Err(Groth16Error::Encoding("proof length (expected 192 bytes)"));
        }
        let (a, rest) = bytes.split_at(G1_LEN);
        let (b, c) = rest.split_at(G2_LEN);
        Ok(Proof {
            a: decode_g1(a, "proof point A")?,
            b: decode_g2(b, "proof point B")?,
            c: decode_g1(c, "proof point C")?,
        })
    }

    /// The 192-byte encoding `A ‖ B ‖ C` (what [`Proof::from_bytes`] accepts, and byte-for-byte
    /// what arkworks' `serialize_compressed` writes for the same proof).
    pub fn to_bytes(&self) -> [u8; PROOF_LEN] {
        let mut out = [0u8; PROOF_LEN];
        let (a, rest) = out.split_at_mut(G1_LEN);
        let (b, c) = rest.split_at_mut(G2_LEN);
        encode_point(&self.a, a);
        encode_point(&self.b, b);
        encode_point(&self.c, c);
        out
    }

    /// Checks an arkworks proof (e.g. from the prover) like [`Proof::from_bytes`] does.
    pub fn from_ark(proof: &ark_groth16::Proof<Bls12_381>) -> Result<Proof, Groth16Error> {
        let (a, b, c) = (proof.a, proof.b, proof.c);
        if !g1_is_valid(&a) {
            return Err(Groth16Error::Encoding("proof point A"));
        }
        if !g2_is_valid(&b) {
            return Err(Groth16Error::Encoding("proof point B"));
        }
        if !g1_is_valid(&c) {
            return Err(Groth16Error::Encoding("proof point C"));
        }
        Ok(Proof { a, b, c })
    }

    /// The same proof as an arkworks value.
    pub fn to_ark(&self) -> ark_groth16::Proof<Bls12_381> {
        ark_groth16::Proof {
            a: self.a,
            b: self.b,
            c: self.c,
        }
    }
}

/// Signed-digit fixed-base table of one G1 point `P`: `windows[j][k − 1] = k·2^(w·j)·P` for
/// `k = 1..=2^(w−1)`, `j = 0..⌈256/w⌉`.
#[derive(Clone)]
struct FixedBaseTable {
    windows: Vec<Vec<G1Affine>>,
}

/// Windows per table: `⌈256/w⌉`, so that with signed digits the top window of a scalar `< 2^255`
/// never carries out (its digit is at most `2^(w−1)`).
const WINDOWS: usize = 256_usize.div_ceil(WINDOW_BITS);
/// Entries per window: the digit magnitudes `1..=2^(w−1)`.
const HALF_WINDOW: usize = 1 << (WINDOW_BITS - 1);

impl FixedBaseTable {
    fn new(point: &G1Affine) -> FixedBaseTable {
        let mut multiples = Vec::with_capacity(WINDOWS * HALF_WINDOW);
        let mut base = point.into_group();
        for _ in 0..WINDOWS {
            let mut multiple = base;
            for _ in 0..HALF_WINDOW {
                multiples.push(multiple);
                multiple += base;
            }
            for _ in 0..WINDOW_BITS {
                base.double_in_place();
            }
        }
        let affine = G1Projective::normalize_batch(&multiples);
        FixedBaseTable {
            windows: affine.chunks(HALF_WINDOW).map(<[_]>::to_vec).collect(),
        }
    }

    /// Adds `x·P` to `acc`: one table lookup and mixed addition per non-zero signed digit.
    fn mul_add(&self, x: &Fr, acc: &mut G1Projective) {
        let limbs = x.into_bigint().0;
        let mut carry = 0u64;
        let last = self.windows.len().saturating_sub(1);
        for (j, window) in self.windows.iter().enumerate() {
            let raw = window_bits(&limbs, j * WINDOW_BITS) + carry;
            // Digits above 2^(w−1) become negative with a carry into the next window; the top
            // window never needs one (see WINDOWS).
            let (negative, magnitude) = if raw > HALF_WINDOW as u64 && j != last {
                carry = 1;
                (true, (1u64 << WINDOW_BITS) - raw)
            } else {
                carry = 0;
                (false, raw)
            };
            let Some(index) = usize::try_from(magnitude)
                .ok()
                .and_then(|m| m.checked_sub(1))
            else {
                continue;
            };
            // An index past the window is impossible for a canonical scalar; skipping it would
            // only make the check fail, never pass.
            if let Some(point) = window.get(index) {
                if negative {
                    *acc -= point;
                } else {
                    *acc += point;
                }
            }
        }
    }
}

/// The [`WINDOW_BITS`] bits of the 256-bit little-endian `limbs` starting at bit `offset`
/// (zeros past the end).
fn window_bits(limbs: &[u64; 4], offset: usize) -> u64 {
    let (limb, shift) = (offset / 64, offset % 64);
    let low = limbs.get(limb).copied().unwrap_or(0) >> shift;
    let high = match shift {
        0 => 0,
        _ => limbs.get(limb + 1).copied().unwrap_or(0) << (64 - shift),
    };
    (low | high) & ((1u64 << WINDOW_BITS) - 1)
}

/// A Groth16 verifying key over BLS12-381, validated and prepared: every point in its subgroup
/// and not the identity, at most [`MAX_PUBLIC_INPUTS`] inputs, with the Miller loop of `(α, β)`,
/// `−γ`, `−δ`, `−β` in blst's form and a fixed-base table per `K_i` (see the module docs).
///
/// Built by [`VerifyingKey::from_bytes`] or [`VerifyingKey::new`]. Construction costs a Miller
/// loop and the tables (a few ms per input); keep one per epoch.
#[derive(Clone)]
pub struct VerifyingKey {
    vk: ark_groth16::VerifyingKey<Bls12_381>,
    /// The Miller loop of `(α, β)` (blst), compared with each proof's after one final
    /// exponentiation.
    alpha_beta: blst_fp12,
    neg_gamma: blst_p2_affine,
    neg_delta: blst_p2_affine,
    neg_beta: blst_p2_affine,
    /// One table per `K_i`, `i = 0..=num_inputs` (`K_0`'s is used by batches only).
    tables: Vec<FixedBaseTable>,
}

impl fmt::Debug for VerifyingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VerifyingKey")
            .field("num_inputs", &self.num_inputs())
            .finish_non_exhaustive()
    }
}

impl PartialEq for VerifyingKey {
    fn eq(&self, other: &Self) -> bool {
        self.vk == other.vk
    }
}

impl Eq for VerifyingKey {}

impl VerifyingKey {
    /// Validates and prepares an arkworks verifying key (e.g. from the setup).
    ///
    /// Errors: [`Groth16Error::TooManyInputs`] above [`MAX_PUBLIC_INPUTS`];
    /// [`Groth16Error::Encoding`] when `γ_abc_g1` is empty or a point is off the curve, outside
    /// its subgroup or the identity.
    pub fn new(vk: ark_groth16::VerifyingKey<Bls12_381>) -> Result<VerifyingKey, Groth16Error> {
        let Some(num_inputs) = vk.gamma_abc_g1.len().checked_sub(1) else {
            return Err(Groth16Error::Encoding("verifying key without gamma_abc_g1"));
        };
        if num_inputs > MAX_PUBLIC_INPUTS {
            return Err(Groth16Error::TooManyInputs {
                got: num_inputs as u64,
                max: MAX_PUBLIC_INPUTS,
            });
        }
        if !g1_is_valid(&vk.alpha_g1) {
            return Err(Groth16Error::Encoding("verifying key alpha_g1"));
        }
        for (point, what) in [
            (&vk.beta_g2, "verifying key beta_g2"),
            (&vk.gamma_g2, "verifying key gamma_g2"),
            (&vk.delta_g2, "verifying key delta_g2"),
        ] {
            if !g2_is_valid(point) {
                return Err(Groth16Error::Encoding(what));
            }
        }
        if !vk.gamma_abc_g1.iter().all(g1_is_valid) {
            return Err(Groth16Error::Encoding("verifying key gamma_abc_g1"));
        }
        let point_error = || Groth16Error::Encoding("verifying key point");
        let alpha = to_blst_g1(&vk.alpha_g1).ok_or_else(point_error)?;
        let beta = to_blst_g2(&vk.beta_g2).ok_or_else(point_error)?;
        let neg = |p: &G2Affine| to_blst_g2(&-*p).ok_or_else(point_error);
        Ok(VerifyingKey {
            alpha_beta: blst_fp12::miller_loop(&beta, &alpha),
            neg_gamma: neg(&vk.gamma_g2)?,
            neg_delta: neg(&vk.delta_g2)?,
            neg_beta: neg(&vk.beta_g2)?,
            tables: vk.gamma_abc_g1.iter().map(FixedBaseTable::new).collect(),
            vk,
        })
    }

    /// Decodes a compressed arkworks verifying key (layout in the module docs) and prepares it.
    ///
    /// The input count is read from the length prefix and checked (at most
    /// [`MAX_PUBLIC_INPUTS`], [`Groth16Error::TooManyInputs`]) and the total length must be
    /// exactly `344 + 48·(num_inputs + 1)` bytes before anything is allocated
    /// ([`Groth16Error::Encoding`]). Then as [`VerifyingKey::new`].
    pub fn from_bytes(bytes: &[u8]) -> Result<VerifyingKey, Groth16Error> {
        let count_bytes = bytes
            .get(VK_FIXED_LEN - 8..VK_FIXED_LEN)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .ok_or(Groth16Error::Encoding("verifying key length"))?;
        let count = u64::from_le_bytes(count_bytes);
        let Some(num_inputs) = count.checked_sub(1) else {
            return Err(Groth16Error::Encoding("verifying key without gamma_abc_g1"));
        };
        if num_inputs > MAX_PUBLIC_INPUTS as u64 {
            return Err(Groth16Error::TooManyInputs {
                got: num_inputs,
                max: MAX_PUBLIC_INPUTS,
            });
        }
        // count <= 65 here, so this cannot overflow.
        let expected = VK_FIXED_LEN + G1_LEN * count as usize;
        if bytes.len() != expected {
            return Err(Groth16Error::Encoding("verifying key length"));
        }
        // Decompression alone puts points on the curve; `new` does the subgroup and identity
        // checks, once.
        let vk = ark_groth16::VerifyingKey::<Bls12_381>::deserialize_with_mode(
            bytes,
            Compress::Yes,
            Validate::No,
        )
        .map_err(|_| Groth16Error::Encoding("verifying key point"))?;
        VerifyingKey::new(vk)
    }

    /// The compressed encoding [`VerifyingKey::from_bytes`] reads: `344 + 48·(num_inputs + 1)`
    /// bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(VK_FIXED_LEN + G1_LEN * self.vk.gamma_abc_g1.len());
        // Serializing into a Vec cannot fail.
        let _ = self.vk.serialize_compressed(&mut out);
        out
    }

    /// The number of public inputs `l` a statement under this key has.
    pub fn num_inputs(&self) -> usize {
        self.vk.gamma_abc_g1.len().saturating_sub(1)
    }

    /// The arkworks verifying key this was built from.
    pub fn as_ark(&self) -> &ark_groth16::VerifyingKey<Bls12_381> {
        &self.vk
    }

    /// Checks the input count: [`Groth16Error::InputCount`] unless `got == num_inputs()`.
    fn check_count(&self, got: usize) -> Result<(), Groth16Error> {
        let expected = self.num_inputs();
        if got == expected {
            Ok(())
        } else {
            Err(Groth16Error::InputCount { expected, got })
        }
    }

    /// `L = K_0 + Σ x_i·K_i` (Groth 2016 §3.2), with the fixed-base tables.
    ///
    /// Errors: [`Groth16Error::InputCount`] unless `inputs.len() == num_inputs()`.
    pub fn prepare_inputs(&self, inputs: &[Fr]) -> Result<G1Projective, Groth16Error> {
        self.check_count(inputs.len())?;
        let mut acc = self
            .vk
            .gamma_abc_g1
            .first()
            .copied()
            .unwrap_or_default()
            .into_group();
        for (x, table) in inputs.iter().zip(self.tables.iter().skip(1)) {
            table.mul_add(x, &mut acc);
        }
        Ok(acc)
    }

    /// Verifies one proof for the public inputs `inputs` (Groth 2016 §3.2): one 3-pair
    /// multi-Miller loop `(A, B)`, `(L, −γ)`, `(C, −δ)`, one final exponentiation, compared with
    /// the precomputed `e(α, β)`.
    ///
    /// Errors: [`Groth16Error::InputCount`] unless `inputs.len() == num_inputs()` (checked
    /// first); [`Groth16Error::Invalid`] when the pairing check fails.
    pub fn verify(&self, inputs: &[Fr], proof: &Proof) -> Result<(), Groth16Error> {
        let l = self.prepare_inputs(inputs)?.into_affine();
        let b = to_blst_g2(&proof.b).ok_or(Groth16Error::Invalid)?;
        let holds = pairing_product_equals(
            &[proof.a, l, proof.c],
            &[b, self.neg_gamma, self.neg_delta],
            &self.alpha_beta,
        );
        if holds {
            Ok(())
        } else {
            Err(Groth16Error::Invalid)
        }
    }

    /// Verifies many proofs under this key, returning one verdict per item, in order, each equal
    /// (except with probability at most 2^-127, module docs) to what [`VerifyingKey::verify`]
    /// returns for it: `Err(InputCount)` for an item with the wrong number of inputs (checked
    /// first, for every item), `Err(Invalid)` for a proof that does not verify, `Ok(())` else.
    ///
    /// `items[i] = (public inputs, proof)`. `rng` must be a cryptographically secure RNG whose
    /// output the provers cannot predict (`rand::rngs::OsRng`; a seeded RNG only in tests).
    ///
    /// Method: the small-exponent test (Bellare–Garay–Rabin 1998). With fresh non-zero 128-bit
    /// `r_i`, check
    ///
    /// ```text
    /// Π e(r_i·A_i, B_i) · e(Σ r_i·L_i, −γ) · e(Σ r_i·C_i, −δ) · e((Σ r_i)·α, −β) = 1
    /// ```
    ///
    /// as one multi-Miller loop over `k + 3` pairs and one final exponentiation, where
    /// `Σ r_i·L_i = (Σ r_i)·K_0 + Σ_j (Σ_i r_i·x_ij)·K_j` costs one table fold for the whole
    /// batch, `Σ r_i·C_i` is two 64-bit MSMs (the halves of the `r_i`), and each item costs one
    /// 128-bit G1 multiplication and one Miller-loop pair (spread over the cores). If the check
    /// fails, the batch is split in
    /// halves and each half re-checked, down to single [`VerifyingKey::verify`] calls, as
    /// `quasar_crypto::bls::batch_verify` does: one invalid proof never hides another and never
    /// fails a valid one. An empty batch returns an empty vector.
    pub fn verify_batch<R: RngCore + CryptoRng + ?Sized>(
        &self,
        items: &[(&[Fr], &Proof)],
        rng: &mut R,
    ) -> Vec<Result<(), Groth16Error>> {
        let mut verdicts: Vec<Result<(), Groth16Error>> = items
            .iter()
            .map(|(inputs, _)| self.check_count(inputs.len()))
            .collect();
        let candidates: Vec<Candidate<'_>> = items
            .iter()
            .zip(&verdicts)
            .enumerate()
            .filter(|(_, (_, verdict))| verdict.is_ok())
            .map(|(index, (&item, _))| Candidate::new(index, item, rng))
            .collect();
        let mut failures = Vec::new();
        self.find_invalid(&candidates, false, &mut failures);
        for (index, error) in failures {
            if let Some(verdict) = verdicts.get_mut(index) {
                *verdict = Err(error);
            }
        }
        verdicts
    }

    /// Appends to `failures` the (item index, error) of every candidate that does not verify.
    /// `known_bad`: the caller already knows the batch check of these candidates fails.
    fn find_invalid(
        &self,
        candidates: &[Candidate<'_>],
        known_bad: bool,
        failures: &mut Vec<(usize, Groth16Error)>,
    ) {
        if let [one] = candidates {
            if let Err(error) = self.verify(one.inputs, one.proof) {
                failures.push((one.index, error));
            }
            return;
        }
        if candidates.is_empty() || (!known_bad && self.batch_holds(candidates)) {
            return;
        }
        // The batch fails, so some proof is invalid: if the left half turns out clean, the right
        // half is known to fail without checking it as a whole.
        let (left, right) = candidates.split_at(candidates.len() / 2);
        let before = failures.len();
        self.find_invalid(left, false, failures);
        let left_clean = failures.len() == before;
        self.find_invalid(right, left_clean, failures);
    }

    /// The randomized batch equation of [`VerifyingKey::verify_batch`] over `candidates`
    /// (non-empty, every input count already checked).
    fn batch_holds(&self, candidates: &[Candidate<'_>]) -> bool {
        let num_inputs = self.num_inputs();
        // Σ r_i, and per input j the weight Σ_i r_i·x_ij of K_j.
        let mut r_sum = Fr::zero();
        let mut weights = vec![Fr::zero(); num_inputs];
        for candidate in candidates {
            r_sum += candidate.r;
            for (weight, x) in weights.iter_mut().zip(candidate.inputs) {
                *weight += candidate.r * x;
            }
        }
        let mut tables = self.tables.iter();
        let mut l_sum = G1Projective::zero();
        if let Some(k0) = tables.next() {
            k0.mul_add(&r_sum, &mut l_sum);
        }
        for (weight, table) in weights.iter().zip(tables) {
            table.mul_add(weight, &mut l_sum);
        }
        // Σ r_i·C_i as two 64-bit MSMs, low and high halves of the 128-bit r_i: arkworks' MSM
        // for full field elements walks all 255 bits and builds a thread pool per call.
        let c_bases: Vec<G1Affine> = candidates.iter().map(|c| c.proof.c).collect();
        let (low, high): (Vec<u64>, Vec<u64>) = candidates
            .iter()
            .map(|c| (c.r_limbs[0], c.r_limbs[1]))
            .unzip();
        let mut c_sum = G1Projective::msm_u64(&c_bases, &high);
        for _ in 0..64 {
            c_sum.double_in_place();
        }
        c_sum += G1Projective::msm_u64(&c_bases, &low);
        let alpha_sum = self.vk.alpha_g1.into_group() * r_sum;

        let Some((mut g1, mut g2)) = per_item_terms(candidates) else {
            return false;
        };
        let tail = G1Projective::normalize_batch(&[l_sum, c_sum, alpha_sum]);
        g1.extend(tail);
        g2.extend([self.neg_gamma, self.neg_delta, self.neg_beta]);
        pairing_product_equals(&g1, &g2, &blst_fp12::default())
    }
}

/// One batch item whose input count is right, with its random weight `r` (also as the two
/// little-endian 64-bit limbs of its 128-bit value).
struct Candidate<'a> {
    index: usize,
    inputs: &'a [Fr],
    proof: &'a Proof,
    r: Fr,
    r_limbs: [u64; 2],
}

impl<'a> Candidate<'a> {
    /// `items[index]` with a random non-zero 128-bit weight (zero, drawn with probability
    /// 2^-128, becomes one).
    fn new<R: RngCore + CryptoRng + ?Sized>(
        index: usize,
        (inputs, proof): (&'a [Fr], &'a Proof),
        rng: &mut R,
    ) -> Candidate<'a> {
        let mut bytes = [0u8; 16];
        rng.fill_bytes(&mut bytes);
        let r = u128::from_le_bytes(bytes).max(1);
        Candidate {
            index,
            inputs,
            proof,
            r: Fr::from(r),
            // Truncations that split r into its halves.
            r_limbs: [r as u64, (r >> 64) as u64],
        }
    }
}

/// Items per thread below which the per-item work stays on the calling thread.
const ITEMS_PER_THREAD: usize = 8;

/// `(r_i·A_i, B_i)` for every candidate, in order, the work shared over the cores; `None` if a
/// `B_i` does not convert (it always does: proofs are validated).
fn per_item_terms(candidates: &[Candidate<'_>]) -> Option<(Vec<G1Affine>, Vec<blst_p2_affine>)> {
    let work = |part: &[Candidate<'_>]| -> (Vec<G1Projective>, Vec<Option<blst_p2_affine>>) {
        part.iter()
            .map(|c| (c.proof.a.mul_bigint(c.r_limbs), to_blst_g2(&c.proof.b)))
            .unzip()
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(candidates.len() / ITEMS_PER_THREAD)
        .max(1);
    let (g1, g2) = if threads == 1 {
        work(candidates)
    } else {
        let chunk = candidates.len().div_ceil(threads);
        std::thread::scope(|scope| {
            let mut parts = candidates.chunks(chunk);
            let first = parts.next().unwrap_or_default();
            let helpers: Vec<_> = parts
                .map(|part| {
                    let spawned =
                        std::thread::Builder::new().spawn_scoped(scope, move || work(part));
                    (part, spawned.ok())
                })
                .collect();
            let (mut g1, mut g2) = work(first);
            for (part, helper) in helpers {
                // A helper that could not start, or panicked (it cannot), has its share done here.
                let (p1, p2) = helper
                    .and_then(|h| h.join().ok())
                    .unwrap_or_else(|| work(part));
                g1.extend(p1);
                g2.extend(p2);
            }
            (g1, g2)
        })
    };
    let g2 = g2.into_iter().collect::<Option<Vec<_>>>()?;
    Some((G1Projective::normalize_batch(&g1), g2))
}

/// Whether `Π e(g1_i, g2_i)` equals the pairing whose Miller-loop value is `target`: one blst
/// multi-Miller loop (spread over blst's thread pool when there are many pairs) and one final
/// exponentiation (`blst_fp12::finalverify`). Pairs whose G1 point is the identity contribute 1
/// and are left out (blst's Miller loop does not special-case them). The slices have equal
/// lengths at every call site.
fn pairing_product_equals(g1: &[G1Affine], g2: &[blst_p2_affine], target: &blst_fp12) -> bool {
    let mut ps = Vec::with_capacity(g1.len());
    let mut qs = Vec::with_capacity(g1.len());
    for (p, q) in g1.iter().zip(g2) {
        if p.is_zero() {
            continue;
        }
        match to_blst_g1(p) {
            Some(p) => {
                ps.push(p);
                qs.push(*q);
            }
            None => return false,
        }
    }
    let product = if ps.is_empty() {
        blst_fp12::default()
    } else {
        blst_fp12::miller_loop_n(&qs, &ps)
    };
    blst_fp12::finalverify(&product, target)
}

/// The blst form of a G1 point, through its 96-byte uncompressed ZCash encoding (both libraries
/// use it; blst re-checks that the point is on the curve). The identity becomes blst's identity
/// (all zeros); `None` only if the encodings disagreed.
fn to_blst_g1(p: &G1Affine) -> Option<blst_p1_affine> {
    let mut bytes = [0u8; 2 * G1_LEN];
    p.serialize_uncompressed(&mut bytes[..]).ok()?;
    let point = blst::min_pk::PublicKey::deserialize(&bytes).ok()?;
    Some(*<&blst_p1_affine>::from(&point))
}

/// [`to_blst_g1`] for G2 (192 bytes uncompressed).
fn to_blst_g2(p: &G2Affine) -> Option<blst_p2_affine> {
    let mut bytes = [0u8; 2 * G2_LEN];
    p.serialize_uncompressed(&mut bytes[..]).ok()?;
    let point = blst::min_pk::Signature::deserialize(&bytes).ok()?;
    Some(*<&blst_p2_affine>::from(&point))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ec::pairing::Pairing;

    fn g2(scalar: u64) -> G2Affine {
        (G2Affine::generator() * Fr::from(scalar)).into_affine()
    }

    fn g1(scalar: u64) -> G1Affine {
        (G1Affine::generator() * Fr::from(scalar)).into_affine()
    }

    #[test]
    fn blst_pairing_products_match_arkworks() {
        // e(2·G1, 3·G2) · e(−6·G1, G2) = 1, and e(2·G1, 3·G2) = e(G1, 6·G2) in GT.
        let q = [to_blst_g2(&g2(3)).unwrap(), to_blst_g2(&g2(1)).unwrap()];
        let one = blst_fp12::default();
        assert!(pairing_product_equals(&[g1(2), -g1(6)], &q, &one));
        assert!(!pairing_product_equals(&[g1(2), -g1(5)], &q, &one));
        let target =
            blst_fp12::miller_loop(&to_blst_g2(&g2(6)).unwrap(), &to_blst_g1(&g1(1)).unwrap());
        assert!(pairing_product_equals(&[g1(2)], &q[..1], &target));
        assert!(!pairing_product_equals(&[g1(3)], &q[..1], &target));
        // The same facts in arkworks, so the two libraries agree on what is being checked.
        let ark = |p: G1Affine, q: G2Affine| ark_bls12_381::Bls12_381::pairing(p, q);
        assert_eq!(ark(g1(2), g2(3)), ark(g1(1), g2(6)));
    }

    #[test]
    fn identity_terms_drop_out_of_the_product() {
        // blst's Miller loop does not special-case infinity: the identity must be skipped, and
        // a product of nothing but identities is 1.
        let q = [to_blst_g2(&g2(5)).unwrap(), to_blst_g2(&g2(7)).unwrap()];
        let one = blst_fp12::default();
        assert!(pairing_product_equals(&[G1Affine::zero(); 2], &q, &one));
        assert!(pairing_product_equals(
            &[G1Affine::zero(), g1(4)],
            &q,
            &blst_fp12::miller_loop(&q[1], &to_blst_g1(&g1(4)).unwrap())
        ));
        assert_eq!(
            to_blst_g1(&G1Affine::zero()),
            Some(blst_p1_affine::default())
        );
    }
}
