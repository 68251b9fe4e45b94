//! The Corona threshold signature: trusted-dealer key generation, the two signing rounds,
//! combining, verification and the compact encodings (issue 5).
//!
//! # Construction
//!
//! Ringtail (Boschini, Kaviani, Lai, Malavolta, Takahashi, Tibouchi, IACR ePrint 2024/1113), as
//! its reference code computes it (pq-threshold.md §1.3), over R_q = Z_q\[X\]/(X^256+1),
//! q = 2^48 + 18945, with the parameters of [`super::params`]: m = 8, n = 7, D̄ = 48, κ = 23,
//! ξ = 30, ν = 29, σ_E, σ*, σ_U and B². Party indices are 0-based; party i's Shamir evaluation
//! point is i + 1. Every product is a coefficient-wise product of NTT images ([`super::ring`]).
//!
//! - **Key generation** ([`trusted_dealer_keygen`]). A public 32-byte seed ρ; A ∈ R_q^{8×7}
//!   with entry (i, j) = NTT(uniform(cSHAKE256_{EXPAND-A}(ρ, 7i + j))). s ← D_{σE}^7,
//!   e ← D_{σE}^8 from the caller's CSPRNG. b = A·s + e; b̃ = round_ξ(b) mod 2^18 with
//!   round_k(x) = ⌊(x + 2^{k−1}) / 2^k⌋ on the residue in [0, q). Public key (ρ, b̃). s is shared
//!   with Shamir over Z_q coefficient-wise (a uniform degree t−1 polynomial per coefficient,
//!   s_i = f(i + 1)). Pairwise material: a PRF seed sd_{i,j} per ordered pair i ≠ j and a MAC
//!   key k_{i,j} = k_{j,i} per unordered pair; party i's [`KeyShare`] holds only its row
//!   sd_{i,·}, its column sd_{·,i} and its own MAC keys.
//! - **Round 1** ([`Signer::round1`], message-independent). R_i = \[r*_i | R'_i\] with
//!   r*_i ← D_{σ*}^7, R'_i ← D_{σE}^{7×48}; E_i = \[e*_i | E'_i\] likewise with 8 rows;
//!   D_i = A·R_i + E_i ∈ R_q^{8×49}. The message carries D_i and, for every other signer j, the
//!   tag KMAC256_{MAC}(k_{i,j}; group key digest, i, j, sid, T, H(D_i)).
//! - **Round 2** ([`Signer::round2`], message μ). Check every MAC addressed to i; transcript
//!   τ = TupleHash256_{TRANSCRIPT}("round2", group key digest, sid, T, H(D_j) for j ∈ T in set
//!   order); D = Σ_{j∈T} D_j; require, at each of the 256 NTT slots, that columns 1..48 of D have
//!   rank 8 over Z_q; h_u ← D_{σU}^{48} from a stream keyed by TupleHash256_{HU}(τ, μ);
//!   u = (1, h_u); h = D·u; h̃ = round_ν(h) mod 2^19; c = Challenge(TupleHash256_{CHALLENGE}(
//!   group key digest, h̃, μ)); λ_i the Lagrange coefficient at 0 for T;
//!   z_i = R_i·u + λ_i·c·s_i + Σ_{j∈T, j≠i} (PRF(sd_{j,i}) − PRF(sd_{i,j})), where
//!   PRF(sd) ∈ R_q^7 is uniform from a stream keyed by KMAC256_{PRF}(sd; τ, μ). The masks cancel
//!   in Σ_i z_i.
//! - **Combine** ([`combine`], no secrets). z = Σ z_i = (Σ R_i)·u + c·s;
//!   w = A·z − c·b̃·2^ξ; Δ = h̃ − round_ν(w) mod 2^19. The signature is (c, z, Δ); the combiner
//!   verifies it before returning it.
//! - **Verify** ([`GroupKey::verify`]). w̃ = round_ν(A·z − c·b̃·2^ξ) mod 2^19; h' = w̃ + Δ mod
//!   2^19; accept iff Challenge(TupleHash256_{CHALLENGE}(digest, h', μ)) = c and
//!   ‖(Δ·2^ν, z)‖² ≤ B², an exact integer comparison in u128 with z centered in (−q/2, q/2] and
//!   Δ centered in [−2^18, 2^18).
//!
//! Correctness: w = h − (Σ E_i)·u − c·e − c·ε_b with ε_b the rounding error of b̃, so
//! round_ν(w) is within a few units of h̃ and Δ is small; h' = h̃ exactly, so the challenge
//! always matches and only the norm bound can reject an honest signature. The expected squared
//! norm is about t·1.62·10^26 against B² = 1.85·10^29 (sample.rs module docs): 0.2 % of B² at
//! t = 7, 9 % at t = 100, so honest failures are negligible up to a few hundred signers; near
//! t = 1000 (allowed by [`MAX_PARTIES`], the paper's largest setting) the mean reaches 0.88·B² and
//! honest signatures can fail the bound.
//!
//! # Hashes (hash.rs roles)
//!
//! Digests of structured data use TupleHash256 with role TRANSCRIPT and a label as first part:
//! the group key digest is ("group-key", encoded key), a commitment digest H(D_j) is
//! ("commitment", packed D_j), the transcript is ("round2", …). The challenge seed uses role
//! CHALLENGE, h_u role HU (then [`hash::prg`] per polynomial, the variable-time
//! [`sample::gaussian_public`] because h_u is public), masks role PRF (KMAC256 to a 32-byte key,
//! then [`hash::prg`] per row), MACs role MAC, A role EXPAND-A.
//!
//! # Deviations from the public Go code (luxfi/corona, daryakaviani/ringtail), and why
//!
//! 1. **Any t-subset signs.** Shares are a real Shamir sharing and λ_i is computed per signing
//!    set; Go's `GenerateKeys` only worked for parties 0..t−1 (pq-threshold.md §1.10 #1).
//! 2. **The transcript binds every D_j of the set, in set order**, through H(D_j); Go indexed D by
//!    0..|T|−1 and skipped members of non-contiguous sets (§1.10 #2). Hashing digests rather than
//!    the raw 0.6 MB matrices lets each D_j be hashed once, on receipt, for both its MAC and the
//!    transcript (binding is the same under collision resistance).
//! 3. **A comes from a public seed on its own cSHAKE domain**; Go drew A and s from one stream
//!    (§1.10 #3). The key is (ρ, b̃), 4,640 bytes instead of 132 KB.
//! 4. **Rounding is reduced**: b̃ mod 2^18 and h̃, w̃ mod 2^19; Go let round_ν map values near q
//!    to 2^19, failing ≈ 0.2 % of honest signatures (§1.10 #4).
//! 5. **Each pairwise seed and MAC key goes only to its pair** (§1.10 #5). The i = j seeds of Go
//!    are dropped: their two mask terms cancel within party i.
//! 6. **Round-1 noise is fresh** from the caller's CSPRNG, and [`Signer`] refuses a session id it
//!    has used before (§1.10 #6); the round-1 state is consumed by round 2.
//! 7. **True discrete Gaussians**, constant-time for secrets (sample.rs), not 2σ-truncated
//!    float Ziggurat samples.
//! 8. **Hash suite and framing**: SP 800-185 with `QUASAR-CORONA-…-v1` strings and
//!    TupleHash framing instead of lattigo's byte framing; the challenge has its own role and
//!    hashes the key digest instead of A. Not byte-compatible with Lux, deliberately.
//! 9. **Δ's norm** uses Δ centered mod 2^19 (Go centers Δ·2^29 mod q, which differs by
//!    18,945 for negative Δ); the bound B² is unchanged.
//! 10. **Compact encodings** (below) instead of lattigo's u64 framing (33 KB signatures).
//! 11. The MAC also binds the recipient and the group key digest (harmless, and it makes a tag
//!     meaningless outside its pair, group and session).
//!
//! # Encodings
//!
//! - Group key ([`GroupKey::to_bytes`]): ρ (32 B) ‖ b̃ at 18 bits/coefficient = 4,640 B.
//! - Signature ([`Signature::to_bytes`]): 23 positions (1 B each, strictly increasing) ‖ 3 bytes
//!   of sign bits (bit k set: coefficient −1 at the k-th position; bit 23 zero) ‖ w_z (1 B) ‖
//!   w_Δ (1 B) ‖ z as 1,792 centered w_z-bit two's complement values ‖ Δ as 2,048 centered
//!   w_Δ-bit values. w_z ∈ 1..=49 and w_Δ ∈ 1..=19 must be the minimal widths that hold the
//!   values (so the encoding is unique). Size 28 + 224·w_z + 256·w_Δ: 12,764 B measured for 7
//!   signers (w_z = 42, w_Δ = 13); w_z grows by one bit per 4× signers. A fixed 19-bit Δ and a
//!   z width covering any t would not meet the 13.5 KB target (honest z has σ ≈ 2^37.6·√t).
//! - Key share ([`KeyShare::to_bytes`], a validator's key file): version 0x01 ‖ index ‖ t ‖ n
//!   (u16 BE each) ‖ group key (4,640 B) ‖ s_i at 49 bits/value in NTT form (10,976 B) ‖ the
//!   n×32-byte tables sd_{i,·}, sd_{·,i} and k_{i,·}, own entry zero = 15,623 + 96·n B
//!   ([`key_share_bytes`]); returned in a zeroizing buffer.
//! - Round-1 message ([`Round1Message::to_bytes`]): sender (u16 BE) ‖ sid (32 B) ‖ number of
//!   tags (u16 BE) ‖ (recipient u16 BE ‖ tag 32 B), recipients strictly increasing ‖ D_i at
//!   49 bits/value in NTT form (614,656 B).
//! - Round-2 message ([`Round2Message::to_bytes`]): sender ‖ sid ‖ z_i at 49 bits/coefficient
//!   (10,976 B). Residues of q = 2^48 + 18945 need 49 bits: values in [2^48, q) are rare but
//!   occur (about once per 150,000 round-1 messages), so 48 bits would not be total.
//!
//! # Secrets in memory
//!
//! Seeds, MAC keys, the share s_i, the round-1 randomness R_i and a key share's encoding (and
//! the buffers its decoder fills) are zeroized on drop (`Zeroizing`); temporaries inside one
//! function call are not tracked individually.

use std::collections::HashSet;

use rand::{CryptoRng, RngCore};
use zeroize::Zeroizing;

use super::encode::{from_twos, pack, packed_len, signed_width, to_twos, unpack, EncodingError};
use super::hash::{self, Role};
use super::params::{B_SQUARE, DBAR, DEGREE, KAPPA, M, N, NU, Q, XI};
use super::ring::{NttMatrix, NttPoly, NttVec, Poly, PolyVec, RingError, Zq};
use super::sample::{self, Width};
use crate::accel::{check_row, AccelError, BatchArithmetic, CpuBackend, NttClass, RowResults};

/// The most parties a key may have (the paper's largest threshold is 1024).
pub const MAX_PARTIES: usize = 1024;
/// Columns of a round-1 commitment: u = (1, h_u) has D̄ + 1 = 49 entries.
const COLS: usize = DBAR + 1;
/// Bits of b̃ (values mod 2^(48 − ξ) = 2^18).
const B_BITS: u32 = 48 - XI;
/// Bits of h̃, w̃ and Δ (values mod 2^(48 − ν) = 2^19).
const H_BITS: u32 = 48 - NU;
/// Bits per residue mod q on the wire (q > 2^48).
const RESIDUE_BITS: u32 = 49;
/// Encoded group key length: ρ ‖ b̃ at 18 bits.
pub const GROUP_KEY_BYTES: usize = 32 + packed_len(M * DEGREE, B_BITS);
/// Encoded round-2 message length.
pub const ROUND2_MESSAGE_BYTES: usize = 2 + 32 + packed_len(N * DEGREE, RESIDUE_BITS);
/// Bytes of D_i in a round-1 message.
const COMMITMENT_BYTES: usize = packed_len(M * COLS * DEGREE, RESIDUE_BITS);
/// Bytes of a challenge: positions and sign bits.
const CHALLENGE_BYTES: usize = KAPPA + KAPPA.div_ceil(8);
/// Largest width of a centered z coefficient: |z| ≤ (q−1)/2 < 2^48.
const MAX_Z_WIDTH: u32 = 49;

/// Why a Corona operation refused. Parameter and signing-set errors are caller mistakes (fix
/// the call); `MacMismatch`, `MessageMismatch`, `UnexpectedMessage` and `Encoding` name a
/// misbehaving peer (drop its message, penalize it, and retry the session without it);
/// `SessionReused` is a local safety refusal (pick a new session id); `RankDeficient` and
/// `CombinedSignatureInvalid` abort the session (retry with a new session id). None is fatal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CoronaError {
    /// The threshold is 0 or above the number of parties.
    #[error("threshold {threshold} is invalid for {parties} parties (need 1 ≤ t ≤ n)")]
    InvalidThreshold {
        /// Requested threshold t.
        threshold: usize,
        /// Number of parties n.
        parties: usize,
    },
    /// More parties than [`MAX_PARTIES`].
    #[error("{parties} parties exceed the maximum of {MAX_PARTIES}")]
    TooManyParties {
        /// Requested number of parties.
        parties: usize,
    },
    /// Fewer signers than the threshold.
    #[error("signing set has {got} signers, the threshold is {threshold}")]
    TooFewSigners {
        /// Size of the set.
        got: usize,
        /// The threshold t.
        threshold: usize,
    },
    /// A party appears twice in the signing set, or twice among the messages of a round.
    #[error("party {0} appears twice")]
    DuplicateParty(u16),
    /// A party index is not below the number of parties.
    #[error("party {0} is not a party of this key")]
    UnknownParty(u16),
    /// The signer itself is not in the signing set, or the set was built for another key shape.
    #[error("party {0} is not in this signing set")]
    NotInSigningSet(u16),
    /// This party has already used the session id (round-1 randomness is never reused).
    #[error("session id already used by this party")]
    SessionReused,
    /// A signer of the set sent no message for this round.
    #[error("no message from party {0}")]
    MissingMessage(u16),
    /// A message from a party outside the signing set, or for another session.
    #[error("unexpected message from party {0} (not a signer, or another session)")]
    UnexpectedMessage(u16),
    /// The round-1 MAC from this party to us is missing or wrong: its D may be forged.
    #[error("round-1 MAC from party {0} does not verify")]
    MacMismatch(u16),
    /// Our own round-1 message, as returned to us, is not the one we sent.
    #[error("round-1 message of party {0} differs from the one it produced")]
    MessageMismatch(u16),
    /// The round-1 state was produced by another signer.
    #[error("round-1 state belongs to another signer")]
    WrongSigner,
    /// Σ D_j is not full rank at this NTT slot (the session must be restarted).
    #[error("aggregate commitment has rank < 8 at NTT slot {slot}")]
    RankDeficient {
        /// The NTT slot (0..256).
        slot: usize,
    },
    /// The combined signature does not verify: some z_i is wrong (or the context is).
    #[error("combined signature does not verify: {0}")]
    CombinedSignatureInvalid(VerifyError),
    /// A ring operation failed (only on inconsistent internal input).
    #[error(transparent)]
    Ring(#[from] RingError),
    /// The arithmetic backend failed a batched call (the CPU reference never does).
    #[error(transparent)]
    Arithmetic(#[from] AccelError),
    /// Bytes do not decode.
    #[error(transparent)]
    Encoding(#[from] EncodingError),
}

/// Why a signature does not verify. Reject the signature; penalize whoever relayed it as valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// ‖(Δ·2^ν, z)‖² > B².
    #[error("signature norm above the bound")]
    NormTooLarge,
    /// The recomputed challenge differs from c (wrong message, key, or tampered signature).
    #[error("challenge mismatch")]
    ChallengeMismatch,
    /// The arithmetic backend failed a batched call, so nothing was decided: not evidence
    /// against the signature or its relayer.
    #[error("arithmetic backend: {0}")]
    Arithmetic(AccelError),
}

// ---------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------

/// The rows of a batched Corona call as polynomials (`make` on each), or the call's first error:
/// its whole-call error, a row error, or a value ≥ q that a faulty backend returned.
fn batch_rows<T>(
    outcome: Result<RowResults, AccelError>,
    rows: &[u64],
    make: fn(&[u64]) -> Result<T, RingError>,
) -> Result<Vec<T>, AccelError> {
    outcome?.into_iter().collect::<Result<Vec<()>, _>>()?;
    rows.chunks_exact(DEGREE)
        .enumerate()
        .map(|(r, row)| {
            // `make` checks the range; only its failure needs the row error spelled out.
            make(row).map_err(|_| match check_row(NttClass::Corona, r, row) {
                Err(error) => error,
                Ok(()) => AccelError::Shape {
                    len: row.len(),
                    degree: DEGREE,
                    other_len: row.len(),
                },
            })
        })
        .collect()
}

/// round_k(x) = ⌊(x + 2^{k−1}) / 2^k⌋ mod 2^(48−k), for a residue x < q < 2^49.
const fn round_mod(x: u64, k: u32) -> u32 {
    (((x + (1 << (k - 1))) >> k) & ((1 << (48 - k)) - 1)) as u32
}

/// Coefficient-form polynomial from values already in [0, q) (a uniform sample).
fn poly_from_residues(values: &[u64; DEGREE]) -> Poly {
    // Values < q < 2^63, so the cast is lossless and `from_signed` reduces nothing.
    Poly::from_signed(&values.map(|v| v as i64))
}

/// A Gaussian polynomial of `width` from `rng`, in NTT form.
fn gaussian_ntt<R: RngCore + CryptoRng + ?Sized>(width: Width, rng: &mut R) -> NttPoly {
    Poly::from_signed(&sample::gaussian(width, rng)).ntt()
}

/// Constant-time equality of two tags.
fn tags_equal(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

/// A ← uniform R_q^{8×7} from the public seed ρ (role EXPAND-A, stream 7i + j per entry).
fn expand_a(seed: &[u8; 32]) -> NttMatrix<M, N> {
    NttMatrix::from_fn(|i, j| {
        let mut stream = hash::xof(Role::ExpandA, seed, (i * N + j) as u64);
        poly_from_residues(&sample::uniform(&mut stream)).ntt()
    })
}

/// Packs M polynomials of values mod 2^`bits` (b̃, h̃).
fn pack_rounded(values: &[[u32; DEGREE]; M], bits: u32, out: &mut Vec<u8>) {
    pack(
        values.iter().flat_map(|p| p.iter().map(|&v| u64::from(v))),
        bits,
        out,
    );
}

/// Rounds every coefficient of `v` with shift `k`.
fn round_vec(v: &PolyVec<M>, k: u32) -> Box<[[u32; DEGREE]; M]> {
    let mut out = Box::new([[0u32; DEGREE]; M]);
    for (o, p) in out.iter_mut().zip(v.as_slice()) {
        for (x, &c) in o.iter_mut().zip(p.coefficients()) {
            *x = round_mod(c, k);
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Session ids and signing sets
// ---------------------------------------------------------------------------------------------

/// A signing session id, 32 bytes, chosen by the caller (e.g. a hash of height and attempt).
/// A [`Signer`] uses each id at most once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SessionId(pub [u8; 32]);

/// A validated signing set T: distinct party indices, all below n, at least t of them, kept in
/// increasing order (the "set order" of the transcript).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SigningSet {
    parties: Vec<u16>,
    threshold: usize,
    total: usize,
}

impl SigningSet {
    /// The set `parties` (any order) for a t-of-n key. Errors: [`CoronaError::InvalidThreshold`],
    /// [`CoronaError::TooManyParties`], [`CoronaError::UnknownParty`] (index ≥ n),
    /// [`CoronaError::DuplicateParty`], [`CoronaError::TooFewSigners`].
    pub fn new(parties: &[u16], threshold: usize, total: usize) -> Result<Self, CoronaError> {
        check_shape(threshold, total)?;
        let mut sorted = parties.to_vec();
        sorted.sort_unstable();
        for (k, &p) in sorted.iter().enumerate() {
            if usize::from(p) >= total {
                return Err(CoronaError::UnknownParty(p));
            }
            if k > 0 && sorted.get(k - 1) == Some(&p) {
                return Err(CoronaError::DuplicateParty(p));
            }
        }
        if sorted.len() < threshold {
            return Err(CoronaError::TooFewSigners {
                got: sorted.len(),
                threshold,
            });
        }
        Ok(SigningSet {
            parties: sorted,
            threshold,
            total,
        })
    }

    /// The signers in increasing order.
    pub fn parties(&self) -> &[u16] {
        &self.parties
    }

    /// Whether `party` is a signer.
    pub fn contains(&self, party: u16) -> bool {
        self.parties.binary_search(&party).is_ok()
    }

    /// The Lagrange coefficient at 0 of `party` for this set, evaluation points index + 1:
    /// λ = Π_{j∈T, j≠i} x_j / (x_j − x_i) in Z_q. Errors: [`CoronaError::NotInSigningSet`].
    pub fn lagrange_at_zero(&self, party: u16) -> Result<Zq, CoronaError> {
        if !self.contains(party) {
            return Err(CoronaError::NotInSigningSet(party));
        }
        let xi = Zq::reduce(u64::from(party) + 1);
        let (mut num, mut den) = (Zq::ONE, Zq::ONE);
        for &j in self.parties.iter().filter(|&&j| j != party) {
            let xj = Zq::reduce(u64::from(j) + 1);
            num = num * xj;
            den = den * (xj - xi);
        }
        Ok(num * den.inv()?)
    }

    /// The set as transcript bytes: u16 big-endian per signer, in order.
    fn encode(&self) -> Vec<u8> {
        self.parties.iter().flat_map(|p| p.to_be_bytes()).collect()
    }
}

fn check_shape(threshold: usize, parties: usize) -> Result<(), CoronaError> {
    if parties > MAX_PARTIES {
        return Err(CoronaError::TooManyParties { parties });
    }
    if threshold == 0 || threshold > parties {
        return Err(CoronaError::InvalidThreshold { threshold, parties });
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Group key (the verifier object)
// ---------------------------------------------------------------------------------------------

/// The group public key (ρ, b̃) with A expanded in NTT form and b̃·2^ξ precomputed in NTT form,
/// so every verification under this key reuses them. Building one (from key generation or
/// [`GroupKey::from_bytes`]) costs the expansion of A, once.
#[derive(Clone)]
pub struct GroupKey {
    seed: [u8; 32],
    b_tilde: Box<[[u32; DEGREE]; M]>,
    a: NttMatrix<M, N>,
    b_restored: NttVec<M>,
    digest: [u8; 32],
}

impl std::fmt::Debug for GroupKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GroupKey({})", hex::encode(self.digest))
    }
}

impl PartialEq for GroupKey {
    fn eq(&self, other: &Self) -> bool {
        self.digest == other.digest
    }
}

impl Eq for GroupKey {}

impl GroupKey {
    fn from_parts(seed: [u8; 32], b_tilde: Box<[[u32; DEGREE]; M]>) -> Self {
        let a = expand_a(&seed);
        let b_restored = NttVec::from_fn(|i| {
            let row = b_tilde.get(i).copied().unwrap_or([0; DEGREE]);
            Poly::from_signed(&row.map(|v| i64::from(v) << XI)).ntt()
        });
        let mut encoded = Vec::with_capacity(GROUP_KEY_BYTES);
        encoded.extend_from_slice(&seed);
        pack_rounded(&b_tilde, B_BITS, &mut encoded);
        let digest = hash::hash(Role::Transcript, &[b"group-key", &encoded]);
        GroupKey {
            seed,
            b_tilde,
            a,
            b_restored,
            digest,
        }
    }

    /// The 4,640-byte encoding: ρ ‖ b̃ packed at 18 bits per coefficient.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(GROUP_KEY_BYTES);
        out.extend_from_slice(&self.seed);
        pack_rounded(&self.b_tilde, B_BITS, &mut out);
        out
    }

    /// Decodes [`GroupKey::to_bytes`] and expands A. Errors: [`EncodingError::Length`] unless
    /// exactly [`GROUP_KEY_BYTES`] bytes (every 18-bit pattern is a valid b̃ coefficient).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, EncodingError> {
        const WHAT: &str = "group key";
        if bytes.len() != GROUP_KEY_BYTES {
            return Err(EncodingError::Length {
                what: WHAT,
                expected: GROUP_KEY_BYTES,
                got: bytes.len(),
            });
        }
        let (seed, packed) = bytes.split_at(32);
        let seed: [u8; 32] = seed
            .try_into()
            .map_err(|_| EncodingError::Truncated { what: WHAT })?;
        let mut b_tilde = Box::new([[0u32; DEGREE]; M]);
        let mut slots = b_tilde.iter_mut().flat_map(|p| p.iter_mut());
        unpack(packed, M * DEGREE, B_BITS, WHAT, |v| {
            if let Some(slot) = slots.next() {
                *slot = v as u32;
            }
            Ok(())
        })?;
        Ok(GroupKey::from_parts(seed, b_tilde))
    }

    /// The 32-byte digest that signatures, MACs and transcripts bind:
    /// TupleHash256_{TRANSCRIPT}("group-key", encoding).
    pub fn digest(&self) -> &[u8; 32] {
        &self.digest
    }

    /// round_ν(A·z − c·b̃·2^ξ) mod 2^19, z and c in coefficient form. The N + 1 forward and
    /// M inverse NTTs run on `backend`, as two batched calls; the products run here, against
    /// this key's cached A and b̃ in NTT form. Errors: the backend's (a whole-call error such as
    /// [`AccelError::Unsupported`], or a row error, which canonical inputs never cause on a
    /// correct backend).
    fn rounded_w(
        &self,
        backend: &dyn BatchArithmetic,
        z: &PolyVec<N>,
        c: &Poly,
    ) -> Result<Box<[[u32; DEGREE]; M]>, AccelError> {
        let mut rows = Vec::with_capacity((N + 1) * DEGREE);
        for p in z.as_slice().iter().chain([c]) {
            rows.extend_from_slice(p.coefficients());
        }
        let mut images = batch_rows(
            backend.forward_ntt(NttClass::Corona, &mut rows),
            &rows,
            NttPoly::from_coefficients,
        )?
        .into_iter();
        let z_hat = NttVec::<N>::from_fn(|_| images.next().unwrap_or(NttPoly::ZERO));
        let c_hat = images.next().unwrap_or(NttPoly::ZERO);
        let mut w = self.a.mul_vec(&z_hat);
        w -= &self.b_restored.mul_poly(&c_hat);
        rows.clear();
        for p in w.as_slice() {
            rows.extend_from_slice(p.coefficients());
        }
        let mut coefficients = batch_rows(
            backend.inverse_ntt(NttClass::Corona, &mut rows),
            &rows,
            Poly::from_coefficients,
        )?
        .into_iter();
        let w = PolyVec::<M>::from_fn(|_| coefficients.next().unwrap_or(Poly::ZERO));
        Ok(round_vec(&w, NU))
    }

    /// The challenge seed TupleHash256_{CHALLENGE}(digest, h̃ packed at 19 bits, μ).
    fn challenge_for(&self, h_tilde: &[[u32; DEGREE]; M], message: &[u8]) -> Challenge {
        let mut packed = Vec::with_capacity(packed_len(M * DEGREE, H_BITS));
        pack_rounded(h_tilde, H_BITS, &mut packed);
        let seed = hash::hash(Role::Challenge, &[&self.digest, &packed, message]);
        Challenge(sample::challenge(&seed))
    }

    /// Verifies `signature` on `message` under this key (module docs, Verify), its NTTs on the
    /// CPU reference ([`CpuBackend`]). Errors: [`VerifyError::NormTooLarge`],
    /// [`VerifyError::ChallengeMismatch`].
    pub fn verify(&self, message: &[u8], signature: &Signature) -> Result<(), VerifyError> {
        self.verify_on(&CpuBackend, message, signature)
    }

    /// [`GroupKey::verify`] with its NTTs (8 forward, 8 inverse, as two batched calls) on
    /// `backend`, e.g. the QuasarGPU adapter. Errors: as `verify`, and
    /// [`VerifyError::Arithmetic`] when the backend fails a call.
    pub fn verify_on(
        &self,
        backend: &dyn BatchArithmetic,
        message: &[u8],
        signature: &Signature,
    ) -> Result<(), VerifyError> {
        if signature.norm_squared() > B_SQUARE {
            return Err(VerifyError::NormTooLarge);
        }
        let c = signature.challenge.to_poly();
        let mut h = self
            .rounded_w(backend, &signature.z, &c)
            .map_err(VerifyError::Arithmetic)?;
        for (hp, dp) in h.iter_mut().zip(signature.delta.iter()) {
            for (x, &d) in hp.iter_mut().zip(dp.iter()) {
                *x = (*x + d) & ((1 << H_BITS) - 1);
            }
        }
        if self.challenge_for(&h, message) == signature.challenge {
            Ok(())
        } else {
            Err(VerifyError::ChallengeMismatch)
        }
    }

    /// Verifies each (message, signature) pair, on up to `available_parallelism` threads that
    /// share this key's expanded A. Result k belongs to pair k.
    pub fn verify_batch(&self, items: &[(&[u8], &Signature)]) -> Vec<Result<(), VerifyError>> {
        let threads = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .min(items.len())
            .max(1);
        let chunk = items.len().div_ceil(threads).max(1);
        std::thread::scope(|scope| {
            let handles: Vec<_> = items
                .chunks(chunk)
                .map(|part| {
                    scope.spawn(move || {
                        part.iter()
                            .map(|(m, s)| self.verify(m, s))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| {
                    // A verification never panics; if a thread did, its pairs count as invalid.
                    h.join()
                        .unwrap_or_else(|_| vec![Err(VerifyError::ChallengeMismatch); chunk])
                })
                .take(items.len())
                .collect()
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Key generation
// ---------------------------------------------------------------------------------------------

/// One party's key material from the dealer: its index, s_i = f(i + 1) in NTT form, its row and
/// column of PRF seeds and its MAC keys, and the group key. Holds nothing of other pairs.
/// `Debug` prints only the index.
#[derive(Clone)]
pub struct KeyShare {
    index: u16,
    threshold: usize,
    parties: usize,
    group_key: GroupKey,
    secret: Zeroizing<NttVec<N>>,
    /// sd_{i,j} at position j (zero at j = i).
    prf_out: Zeroizing<Vec<[u8; 32]>>,
    /// sd_{j,i} at position j (zero at j = i).
    prf_in: Zeroizing<Vec<[u8; 32]>>,
    /// k_{i,j} = k_{j,i} at position j (zero at j = i).
    mac_keys: Zeroizing<Vec<[u8; 32]>>,
}

impl std::fmt::Debug for KeyShare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "KeyShare {{ index: {}, t: {}, n: {} }}",
            self.index, self.threshold, self.parties
        )
    }
}

impl KeyShare {
    /// This party's index (0-based; its Shamir point is index + 1).
    pub fn index(&self) -> u16 {
        self.index
    }

    /// The threshold t.
    pub fn threshold(&self) -> usize {
        self.threshold
    }

    /// The number of parties n.
    pub fn parties(&self) -> usize {
        self.parties
    }

    /// The group key.
    pub fn group_key(&self) -> &GroupKey {
        &self.group_key
    }

    /// A signing set for this key shape (see [`SigningSet::new`]).
    pub fn signing_set(&self, parties: &[u16]) -> Result<SigningSet, CoronaError> {
        SigningSet::new(parties, self.threshold, self.parties)
    }

    fn key(table: &[[u8; 32]], j: u16) -> [u8; 32] {
        table.get(usize::from(j)).copied().unwrap_or([0; 32])
    }
}

/// Version byte that opens a [`KeyShare::to_bytes`] encoding.
const KEY_SHARE_VERSION: u8 = 1;
/// Bytes of a key share's header: version ‖ index ‖ threshold ‖ parties.
const KEY_SHARE_HEADER_BYTES: usize = 1 + 3 * 2;
/// Bytes of s_i in a key share: 7 × 256 NTT values at 49 bits.
const SECRET_BYTES: usize = packed_len(N * DEGREE, RESIDUE_BITS);

/// Length of an encoded key share ([`KeyShare::to_bytes`]) of an n-party key:
/// 7 + 4,640 + 10,976 + 96·n = 15,623 + 96·n bytes (15,911 at n = 3, 113,927 at n = 1024).
/// Saturates instead of overflowing for absurd n.
pub const fn key_share_bytes(parties: usize) -> usize {
    parties
        .saturating_mul(3 * 32)
        .saturating_add(KEY_SHARE_HEADER_BYTES + GROUP_KEY_BYTES + SECRET_BYTES)
}

impl KeyShare {
    /// The key-file encoding of this share, [`key_share_bytes`]`(n)` = 15,623 + 96·n bytes, in a
    /// buffer zeroized on drop (it holds s_i, the PRF seeds and the MAC keys):
    ///
    /// | offset | bytes | field |
    /// |---|---|---|
    /// | 0 | 1 | version, 0x01 |
    /// | 1 | 2 | index i (u16 big-endian, as in the round messages), i < n |
    /// | 3 | 2 | threshold t (u16 BE), 1 ≤ t ≤ n |
    /// | 5 | 2 | parties n (u16 BE), n ≤ [`MAX_PARTIES`] |
    /// | 7 | 4,640 | group key ([`GroupKey::to_bytes`]) |
    /// | 4,647 | 10,976 | s_i in NTT form: 7 polynomials × 256 values < q, 49 bits each (exactly 87,808 bits, no padding), packed as the round messages pack residues (encode.rs) |
    /// | 15,623 | 32·n | PRF seeds sd_{i,j}, j = 0..n, entry j = i all zero |
    /// | 15,623 + 32·n | 32·n | PRF seeds sd_{j,i}, j = 0..n, entry j = i all zero |
    /// | 15,623 + 64·n | 32·n | MAC keys k_{i,j}, j = 0..n, entry j = i all zero |
    ///
    /// Residues take 49 bits, not 48: q = 2^48 + 18,945, and uniform NTT values in [2^48, q)
    /// occur. The encoding is canonical: whatever [`KeyShare::from_bytes`] accepts re-encodes to
    /// the same bytes.
    pub fn to_bytes(&self) -> Zeroizing<Vec<u8>> {
        // Exact capacity: the buffer never reallocates, so no unzeroized copy is left behind.
        let mut out = Zeroizing::new(Vec::with_capacity(key_share_bytes(self.parties)));
        out.push(KEY_SHARE_VERSION);
        out.extend_from_slice(&self.index.to_be_bytes());
        // t ≤ n ≤ MAX_PARTIES < 2^16 (keygen and from_bytes check it): the casts are lossless.
        out.extend_from_slice(&(self.threshold as u16).to_be_bytes());
        out.extend_from_slice(&(self.parties as u16).to_be_bytes());
        out.extend_from_slice(&self.group_key.to_bytes());
        pack(
            self.secret
                .as_slice()
                .iter()
                .flat_map(|p| p.coefficients().iter().copied()),
            RESIDUE_BITS,
            &mut out,
        );
        for table in [&self.prf_out, &self.prf_in, &self.mac_keys] {
            for key in table.iter() {
                out.extend_from_slice(key);
            }
        }
        out
    }

    /// Decodes [`KeyShare::to_bytes`] (layout there). The header is checked and the exact length
    /// computed from it before anything else is read or allocated; the group key is decoded
    /// last (it expands A). Errors, with `what` naming the field:
    /// - [`EncodingError::Truncated`] (`"key share"`): fewer than the 7 header bytes;
    /// - [`EncodingError::OutOfRange`]: version ≠ 1 (`"key share version"`), n > [`MAX_PARTIES`]
    ///   (`"key share parties"`), t = 0 or t > n (`"key share threshold"`), i ≥ n
    ///   (`"key share index"`), a value of s_i ≥ q (`"key share secret"`);
    /// - [`EncodingError::Length`] (`"key share"`): not exactly [`key_share_bytes`]`(n)` bytes
    ///   (trailing bytes included);
    /// - [`EncodingError::NonCanonical`]: a non-zero own entry j = i (`"key share prf_out"`,
    ///   `"key share prf_in"`, `"key share mac_keys"`).
    ///
    /// A share cannot be checked against its group key alone (that needs t shares); a wrong or
    /// corrupted s_i that decodes shows up as signatures that fail to combine.
    pub fn from_bytes(bytes: &[u8]) -> Result<KeyShare, EncodingError> {
        const WHAT: &str = "key share";
        const SECRET: &str = "key share secret";
        let truncated = EncodingError::Truncated { what: WHAT };
        let (version, index, threshold, parties, rest) = match bytes {
            [v, i0, i1, t0, t1, n0, n1, rest @ ..] => (
                *v,
                u16::from_be_bytes([*i0, *i1]),
                usize::from(u16::from_be_bytes([*t0, *t1])),
                usize::from(u16::from_be_bytes([*n0, *n1])),
                rest,
            ),
            _ => return Err(truncated),
        };
        if version != KEY_SHARE_VERSION {
            return Err(EncodingError::OutOfRange {
                what: "key share version",
            });
        }
        if parties > MAX_PARTIES {
            return Err(EncodingError::OutOfRange {
                what: "key share parties",
            });
        }
        if threshold == 0 || threshold > parties {
            return Err(EncodingError::OutOfRange {
                what: "key share threshold",
            });
        }
        if usize::from(index) >= parties {
            return Err(EncodingError::OutOfRange {
                what: "key share index",
            });
        }
        let expected = key_share_bytes(parties);
        if bytes.len() != expected {
            return Err(EncodingError::Length {
                what: WHAT,
                expected,
                got: bytes.len(),
            });
        }
        let (group_bytes, rest) = rest
            .split_at_checked(GROUP_KEY_BYTES)
            .ok_or(truncated.clone())?;
        let (secret_bytes, rest) = rest
            .split_at_checked(SECRET_BYTES)
            .ok_or(truncated.clone())?;
        let table_bytes = 32 * parties;
        let (out_bytes, rest) = rest
            .split_at_checked(table_bytes)
            .ok_or(truncated.clone())?;
        let (in_bytes, mac_bytes) = rest.split_at_checked(table_bytes).ok_or(truncated)?;

        let mut values = Zeroizing::new(Vec::with_capacity(N * DEGREE));
        unpack(secret_bytes, N * DEGREE, RESIDUE_BITS, SECRET, |v| {
            if v >= Q {
                return Err(EncodingError::OutOfRange { what: SECRET });
            }
            values.push(v);
            Ok(())
        })?;
        let mut polys = values.chunks_exact(DEGREE);
        let mut failed = false;
        let secret = Zeroizing::new(NttVec::from_fn(|_| {
            match polys.next().map(NttPoly::from_coefficients) {
                Some(Ok(p)) => p,
                _ => {
                    failed = true;
                    NttPoly::ZERO
                }
            }
        }));
        if failed {
            return Err(EncodingError::OutOfRange { what: SECRET });
        }
        let prf_out = decode_key_table(out_bytes, parties, index, "key share prf_out")?;
        let prf_in = decode_key_table(in_bytes, parties, index, "key share prf_in")?;
        let mac_keys = decode_key_table(mac_bytes, parties, index, "key share mac_keys")?;
        let group_key = GroupKey::from_bytes(group_bytes)?;
        Ok(KeyShare {
            index,
            threshold,
            parties,
            group_key,
            secret,
            prf_out,
            prf_in,
            mac_keys,
        })
    }
}

/// n 32-byte keys from exactly 32·n bytes, entry `own` all zero. Errors:
/// [`EncodingError::Length`] (wrong size), [`EncodingError::NonCanonical`] (non-zero own entry).
fn decode_key_table(
    bytes: &[u8],
    parties: usize,
    own: u16,
    what: &'static str,
) -> Result<Zeroizing<Vec<[u8; 32]>>, EncodingError> {
    if bytes.len() != 32 * parties {
        return Err(EncodingError::Length {
            what,
            expected: 32 * parties,
            got: bytes.len(),
        });
    }
    let mut table = Zeroizing::new(Vec::with_capacity(parties));
    for (j, chunk) in bytes.chunks_exact(32).enumerate() {
        let key = <[u8; 32]>::try_from(chunk).map_err(|_| EncodingError::Truncated { what })?;
        if j == usize::from(own) && key != [0; 32] {
            return Err(EncodingError::NonCanonical { what });
        }
        table.push(key);
    }
    Ok(table)
}

/// Trusted-dealer key generation for a t-of-n key (module docs, Key generation): returns the
/// group key and the n key shares, share i for party i. All randomness comes from `rng` (pass
/// a CSPRNG seeded from the OS, e.g. `ChaCha20Rng::from_rng(OsRng)`); A's seed is drawn first
/// and expanded on its own hash domain. Errors: [`CoronaError::InvalidThreshold`] (t = 0 or
/// t > n), [`CoronaError::TooManyParties`] (n > [`MAX_PARTIES`]).
pub fn trusted_dealer_keygen<R: RngCore + CryptoRng + ?Sized>(
    threshold: usize,
    parties: usize,
    rng: &mut R,
) -> Result<(GroupKey, Vec<KeyShare>), CoronaError> {
    check_shape(threshold, parties)?;
    let mut seed = [0u8; 32];
    rng.fill_bytes(&mut seed);
    let a = expand_a(&seed);

    let s: PolyVec<N> = PolyVec::from_fn(|_| Poly::from_signed(&sample::gaussian(Width::E, rng)));
    let e: PolyVec<M> = PolyVec::from_fn(|_| Poly::from_signed(&sample::gaussian(Width::E, rng)));
    let s_ntt = s.ntt();
    let mut b = a.mul_vec(&s_ntt).intt();
    b += &e;
    let group_key = GroupKey::from_parts(seed, round_vec(&b, XI));

    // f(x) = s + a_1 x + … + a_{t−1} x^{t−1}, coefficient-wise, kept in NTT form (linear).
    let coefficients: Vec<NttVec<N>> = (1..threshold)
        .map(|_| NttVec::from_fn(|_| poly_from_residues(&sample::uniform(rng)).ntt()))
        .collect();

    // Full n×n draws; entry (i, j) is given to parties i and j only (diagonal unused).
    let seeds = random_table(parties, rng);
    let macs = random_table(parties, rng);

    let mut shares = Vec::with_capacity(parties);
    for i in 0..parties {
        // Horner: f(x) = (((a_{t−1} x + a_{t−2}) x + …) x + s).
        let x = Zq::reduce(i as u64 + 1);
        let mut acc: NttVec<N> = NttVec::from_fn(|_| NttPoly::ZERO);
        for a_k in coefficients.iter().rev() {
            acc = scale(&acc, x);
            acc += a_k;
        }
        acc = scale(&acc, x);
        acc += &s_ntt;

        let pick = |t: &[Zeroizing<Vec<[u8; 32]>>], row: usize, col: usize| {
            t.get(row)
                .and_then(|r| r.get(col))
                .copied()
                .filter(|_| row != col)
                .unwrap_or([0; 32])
        };
        let prf_out = Zeroizing::new((0..parties).map(|j| pick(&seeds, i, j)).collect());
        let prf_in = Zeroizing::new((0..parties).map(|j| pick(&seeds, j, i)).collect());
        let mac_keys = Zeroizing::new(
            (0..parties)
                .map(|j| pick(&macs, i.min(j), i.max(j)))
                .collect(),
        );
        shares.push(KeyShare {
            index: i as u16,
            threshold,
            parties,
            group_key: group_key.clone(),
            secret: Zeroizing::new(acc),
            prf_out,
            prf_in,
            mac_keys,
        });
    }
    Ok((group_key, shares))
}

/// n rows of n random 32-byte keys.
fn random_table<R: RngCore + ?Sized>(n: usize, rng: &mut R) -> Vec<Zeroizing<Vec<[u8; 32]>>> {
    (0..n)
        .map(|_| {
            let mut row = Zeroizing::new(vec![[0u8; 32]; n]);
            for key in row.iter_mut() {
                rng.fill_bytes(key);
            }
            row
        })
        .collect()
}

/// Every entry of `v` times the scalar `x`.
fn scale(v: &NttVec<N>, x: Zq) -> NttVec<N> {
    NttVec::from_fn(|r| v.get(r).map_or(NttPoly::ZERO, |p| p.scalar_mul(x)))
}

// ---------------------------------------------------------------------------------------------
// Round 1
// ---------------------------------------------------------------------------------------------

/// A signer: a key share plus the never-reuse guard of session ids. The guard lives in memory;
/// a node that restarts must persist the ids it used (or never reuse an id across restarts,
/// e.g. by deriving ids from the height and attempt it persists before round 1).
#[derive(Debug)]
pub struct Signer {
    share: KeyShare,
    used_sessions: HashSet<SessionId>,
}

/// The secret round-1 state of one signer for one session: R_i (NTT form) and what round 2
/// must check. Consumed by [`Signer::round2`], so it cannot be used twice. `Debug` hides R_i.
pub struct Round1State {
    index: u16,
    session: SessionId,
    set: SigningSet,
    d_digest: [u8; 32],
    r: Zeroizing<NttMatrix<N, COLS>>,
}

impl std::fmt::Debug for Round1State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Round1State {{ index: {}, .. }}", self.index)
    }
}

/// A round-1 message: the sender, the session, D_i (NTT form) and one MAC per other signer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Round1Message {
    sender: u16,
    session: SessionId,
    d: NttMatrix<M, COLS>,
    d_digest: [u8; 32],
    macs: Vec<(u16, [u8; 32])>,
}

/// The MAC of a round-1 message from `sender` to `recipient`.
fn round1_mac(
    key: &[u8; 32],
    group_digest: &[u8; 32],
    sender: u16,
    recipient: u16,
    session: &SessionId,
    set: &[u8],
    d_digest: &[u8; 32],
) -> [u8; 32] {
    hash::mac(
        Role::Mac,
        key,
        &[
            group_digest,
            &sender.to_be_bytes(),
            &recipient.to_be_bytes(),
            &session.0,
            set,
            d_digest,
        ],
    )
}

/// D_i packed at 49 bits per value.
fn pack_commitment(d: &NttMatrix<M, COLS>, out: &mut Vec<u8>) {
    let values = (0..M).flat_map(|i| {
        (0..COLS).flat_map(move |j| {
            d.get(i, j)
                .map(|p| *p.coefficients())
                .unwrap_or([0; DEGREE])
        })
    });
    pack(values, RESIDUE_BITS, out);
}

/// H(D_j) = TupleHash256_{TRANSCRIPT}("commitment", packed D_j).
fn commitment_digest(packed: &[u8]) -> [u8; 32] {
    hash::hash(Role::Transcript, &[b"commitment", packed])
}

impl Signer {
    /// A signer for `share` with no session used yet.
    pub fn new(share: KeyShare) -> Self {
        Signer {
            share,
            used_sessions: HashSet::new(),
        }
    }

    /// The key share.
    pub fn share(&self) -> &KeyShare {
        &self.share
    }

    /// Round 1 for `session` and signing set `set` (module docs): samples R_i, E_i from `rng`
    /// (a CSPRNG seeded from the OS in production; seeded in tests), returns the secret state
    /// and the message to send to every other signer. Errors: [`CoronaError::SessionReused`] if
    /// this signer used `session` before (even if that attempt failed later);
    /// [`CoronaError::NotInSigningSet`] if this party is not in `set` or `set` has another
    /// t or n.
    pub fn round1<R: RngCore + CryptoRng + ?Sized>(
        &mut self,
        session: SessionId,
        set: &SigningSet,
        rng: &mut R,
    ) -> Result<(Round1State, Round1Message), CoronaError> {
        let share = &self.share;
        let me = share.index;
        if !set.contains(me) || set.threshold != share.threshold || set.total != share.parties {
            return Err(CoronaError::NotInSigningSet(me));
        }
        if !self.used_sessions.insert(session) {
            return Err(CoronaError::SessionReused);
        }
        let width = |j: usize| if j == 0 { Width::Star } else { Width::E };
        let r: NttMatrix<N, COLS> = NttMatrix::from_fn(|_, j| gaussian_ntt(width(j), rng));
        let e: NttMatrix<M, COLS> = NttMatrix::from_fn(|_, j| gaussian_ntt(width(j), rng));
        let mut d = share.group_key.a.mul_mat(&r);
        d += &e;
        drop(e);

        let mut packed = Vec::with_capacity(COMMITMENT_BYTES);
        pack_commitment(&d, &mut packed);
        let d_digest = commitment_digest(&packed);
        let set_bytes = set.encode();
        let macs = set
            .parties
            .iter()
            .filter(|&&j| j != me)
            .map(|&j| {
                let key = KeyShare::key(&share.mac_keys, j);
                let tag = round1_mac(
                    &key,
                    &share.group_key.digest,
                    me,
                    j,
                    &session,
                    &set_bytes,
                    &d_digest,
                );
                (j, tag)
            })
            .collect();
        let state = Round1State {
            index: me,
            session,
            set: set.clone(),
            d_digest,
            r: Zeroizing::new(r),
        };
        let message = Round1Message {
            sender: me,
            session,
            d,
            d_digest,
            macs,
        };
        Ok((state, message))
    }

    /// Round 2 on message μ = `message` (module docs): `round1` holds the round-1 message of every
    /// signer of the set, this party's own included, in any order. Returns this party's z_i
    /// and the public [`SignContext`] that [`combine`] needs. Errors: [`CoronaError::WrongSigner`];
    /// [`CoronaError::MissingMessage`], [`CoronaError::UnexpectedMessage`],
    /// [`CoronaError::DuplicateParty`] for a malformed message set;
    /// [`CoronaError::MessageMismatch`] if our own D differs; [`CoronaError::MacMismatch`]
    /// naming the first signer whose MAC to us fails; [`CoronaError::RankDeficient`].
    pub fn round2(
        &self,
        state: Round1State,
        message: &[u8],
        round1: &[Round1Message],
    ) -> Result<(Round2Message, SignContext), CoronaError> {
        let share = &self.share;
        let me = share.index;
        if state.index != me {
            return Err(CoronaError::WrongSigner);
        }
        let ordered = order_messages(&state.set, &state.session, round1)?;
        let set_bytes = state.set.encode();
        for msg in &ordered {
            if msg.sender == me {
                if msg.d_digest != state.d_digest {
                    return Err(CoronaError::MessageMismatch(me));
                }
                continue;
            }
            let key = KeyShare::key(&share.mac_keys, msg.sender);
            let expected = round1_mac(
                &key,
                &share.group_key.digest,
                msg.sender,
                me,
                &state.session,
                &set_bytes,
                &msg.d_digest,
            );
            let ok = msg
                .macs
                .iter()
                .find(|(to, _)| *to == me)
                .is_some_and(|(_, tag)| tags_equal(tag, &expected));
            if !ok {
                return Err(CoronaError::MacMismatch(msg.sender));
            }
        }
        let (context, u) = SignContext::compute(
            &share.group_key,
            state.session,
            state.set.clone(),
            message,
            &ordered,
        )?;

        // z_i = R_i·u + λ_i·c·s_i (NTT form), then the masks (coefficient form).
        let lambda = state.set.lagrange_at_zero(me)?;
        let c_lambda = context.challenge.to_ntt().scalar_mul(lambda);
        let mut z = state.r.mul_vec(&u);
        z += &share.secret.mul_poly(&c_lambda);
        let mut z = z.intt();
        drop(state);
        for &j in context.set.parties.iter().filter(|&&j| j != me) {
            z += &mask(
                &KeyShare::key(&share.prf_in, j),
                &context.transcript,
                message,
            );
            z -= &mask(
                &KeyShare::key(&share.prf_out, j),
                &context.transcript,
                message,
            );
        }
        let out = Round2Message {
            sender: me,
            session: context.session,
            z,
        };
        Ok((out, context))
    }
}

/// PRF(sd; τ, μ) ∈ R_q^7, uniform, coefficient form.
fn mask(seed: &[u8; 32], transcript: &[u8; 32], message: &[u8]) -> PolyVec<N> {
    let key = Zeroizing::new(hash::mac(Role::Prf, seed, &[transcript, message]));
    PolyVec::from_fn(|row| {
        let mut stream = hash::prg(Role::Prf, &key, row as u64);
        poly_from_residues(&sample::uniform(&mut stream))
    })
}

/// The round-1 messages of `set` in set order; rejects strangers, duplicates, other sessions
/// and missing signers.
fn order_messages<'a>(
    set: &SigningSet,
    session: &SessionId,
    round1: &'a [Round1Message],
) -> Result<Vec<&'a Round1Message>, CoronaError> {
    let mut slots: Vec<Option<&Round1Message>> = vec![None; set.parties.len()];
    for msg in round1 {
        let pos = set
            .parties
            .binary_search(&msg.sender)
            .map_err(|_| CoronaError::UnexpectedMessage(msg.sender))?;
        if msg.session != *session {
            return Err(CoronaError::UnexpectedMessage(msg.sender));
        }
        match slots.get_mut(pos) {
            Some(slot @ None) => *slot = Some(msg),
            _ => return Err(CoronaError::DuplicateParty(msg.sender)),
        }
    }
    slots
        .into_iter()
        .zip(set.parties.iter())
        .map(|(m, &p)| m.ok_or(CoronaError::MissingMessage(p)))
        .collect()
}

/// Whether the 8 rows have rank 8 over Z_q (fraction-free Gaussian elimination: a row below the
/// pivot becomes p·row − f·pivot row, which keeps the row space's rank without inverses).
fn full_row_rank<const W: usize>(mut rows: [[Zq; W]; M]) -> bool {
    let mut rank = 0;
    for col in 0..W {
        let Some(rest) = rows.get_mut(rank..) else {
            break;
        };
        let Some(p) = rest
            .iter()
            .position(|r| r.get(col).is_some_and(|v| *v != Zq::ZERO))
        else {
            continue;
        };
        rest.swap(0, p);
        let Some((pivot, below)) = rest.split_first_mut() else {
            break;
        };
        let pv = pivot.get(col).copied().unwrap_or(Zq::ZERO);
        for row in below.iter_mut() {
            let f = row.get(col).copied().unwrap_or(Zq::ZERO);
            if f != Zq::ZERO {
                for (x, y) in row.iter_mut().zip(pivot.iter()).skip(col) {
                    *x = *x * pv - *y * f;
                }
            }
        }
        rank += 1;
        if rank == M {
            return true;
        }
    }
    false
}

/// The full-rank check of Σ D_j: at every NTT slot, columns 1..=48 have rank 8. Tries the first
/// 8 of those columns (enough except with probability ≈ 8/q per slot), then all 48.
fn check_rank(d: &NttMatrix<M, COLS>) -> Result<(), CoronaError> {
    let entry = |i: usize, j: usize, slot: usize| {
        d.get(i, j)
            .and_then(|p| p.coefficients().get(slot))
            .map_or(Zq::ZERO, |&v| Zq::reduce(v))
    };
    for slot in 0..DEGREE {
        let mut small = [[Zq::ZERO; M]; M];
        for (i, row) in small.iter_mut().enumerate() {
            for (j, x) in row.iter_mut().enumerate() {
                *x = entry(i, j + 1, slot);
            }
        }
        if full_row_rank(small) {
            continue;
        }
        let mut wide = [[Zq::ZERO; DBAR]; M];
        for (i, row) in wide.iter_mut().enumerate() {
            for (j, x) in row.iter_mut().enumerate() {
                *x = entry(i, j + 1, slot);
            }
        }
        if !full_row_rank(wide) {
            return Err(CoronaError::RankDeficient { slot });
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Round 2 messages, the signing context, combine
// ---------------------------------------------------------------------------------------------

/// A round-2 message: the sender, the session and its share z_i ∈ R_q^7 (coefficient form).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Round2Message {
    sender: u16,
    session: SessionId,
    z: PolyVec<N>,
}

/// The public outcome of round 2's common computation: session, set, message, transcript τ,
/// h̃ and the challenge c. Every signer computes the same one; a combiner that did not sign
/// computes it with [`SignContext::new`].
#[derive(Clone, Debug)]
pub struct SignContext {
    session: SessionId,
    set: SigningSet,
    message: Vec<u8>,
    transcript: [u8; 32],
    h_tilde: Box<[[u32; DEGREE]; M]>,
    challenge: Challenge,
}

impl SignContext {
    /// The context from the round-1 messages (all signers of `set`, any order), without
    /// checking MACs (they are for signers). Errors: the message-set errors of
    /// [`Signer::round2`], and [`CoronaError::RankDeficient`].
    pub fn new(
        group_key: &GroupKey,
        session: SessionId,
        set: SigningSet,
        message: &[u8],
        round1: &[Round1Message],
    ) -> Result<Self, CoronaError> {
        let ordered = order_messages(&set, &session, round1)?;
        SignContext::compute(group_key, session, set, message, &ordered).map(|(c, _)| c)
    }

    /// The challenge c.
    pub fn challenge(&self) -> &Challenge {
        &self.challenge
    }

    fn compute(
        group_key: &GroupKey,
        session: SessionId,
        set: SigningSet,
        message: &[u8],
        ordered: &[&Round1Message],
    ) -> Result<(Self, NttVec<COLS>), CoronaError> {
        let set_bytes = set.encode();
        let mut parts: Vec<&[u8]> = vec![b"round2", &group_key.digest, &session.0, &set_bytes];
        parts.extend(ordered.iter().map(|m| &m.d_digest[..]));
        let transcript = hash::hash(Role::Transcript, &parts);

        let mut iter = ordered.iter();
        let mut d = match iter.next() {
            Some(first) => first.d.clone(),
            None => {
                return Err(CoronaError::TooFewSigners {
                    got: 0,
                    threshold: set.threshold,
                })
            }
        };
        for m in iter {
            d += &m.d;
        }
        check_rank(&d)?;

        let hu_seed = hash::hash(Role::Hu, &[&transcript, message]);
        let u: NttVec<COLS> = NttVec::from_fn(|k| match k {
            0 => Poly::from_signed(&{
                let mut one = [0i64; DEGREE];
                if let Some(c) = one.first_mut() {
                    *c = 1;
                }
                one
            })
            .ntt(),
            _ => {
                let mut stream = hash::prg(Role::Hu, &hu_seed, k as u64);
                Poly::from_signed(&sample::gaussian_public(Width::U, &mut stream)).ntt()
            }
        });
        let h_tilde = round_vec(&d.mul_vec(&u).intt(), NU);
        let challenge = group_key.challenge_for(&h_tilde, message);
        Ok((
            SignContext {
                session,
                set,
                message: message.to_vec(),
                transcript,
                h_tilde,
                challenge,
            },
            u,
        ))
    }
}

/// Combines the round-2 messages of every signer of `context`'s set (any order) into a
/// signature and verifies it (module docs, Combine). Uses no secret. Errors:
/// [`CoronaError::UnexpectedMessage`], [`CoronaError::DuplicateParty`],
/// [`CoronaError::MissingMessage`]; [`CoronaError::CombinedSignatureInvalid`] if the result does
/// not verify (a signer sent a wrong z_i).
pub fn combine(
    group_key: &GroupKey,
    context: &SignContext,
    round2: &[Round2Message],
) -> Result<Signature, CoronaError> {
    let set = &context.set;
    let mut seen = vec![false; set.parties.len()];
    let mut z: PolyVec<N> = PolyVec::from_fn(|_| Poly::ZERO);
    for msg in round2 {
        let pos = set
            .parties
            .binary_search(&msg.sender)
            .map_err(|_| CoronaError::UnexpectedMessage(msg.sender))?;
        if msg.session != context.session {
            return Err(CoronaError::UnexpectedMessage(msg.sender));
        }
        match seen.get_mut(pos) {
            Some(s @ false) => *s = true,
            _ => return Err(CoronaError::DuplicateParty(msg.sender)),
        }
        z += &msg.z;
    }
    if let Some((_, &p)) = seen.iter().zip(set.parties.iter()).find(|(s, _)| !**s) {
        return Err(CoronaError::MissingMessage(p));
    }
    let c = context.challenge.to_poly();
    let w = group_key.rounded_w(&CpuBackend, &z, &c)?;
    let mut delta = Box::new([[0u32; DEGREE]; M]);
    for ((dp, hp), wp) in delta.iter_mut().zip(context.h_tilde.iter()).zip(w.iter()) {
        for ((d, &h), &w) in dp.iter_mut().zip(hp.iter()).zip(wp.iter()) {
            *d = h.wrapping_sub(w) & ((1 << H_BITS) - 1);
        }
    }
    let signature = Signature {
        challenge: context.challenge.clone(),
        z,
        delta,
    };
    group_key
        .verify(&context.message, &signature)
        .map_err(CoronaError::CombinedSignatureInvalid)?;
    Ok(signature)
}

// ---------------------------------------------------------------------------------------------
// Challenge and signature
// ---------------------------------------------------------------------------------------------

/// A challenge: a polynomial with exactly κ = 23 coefficients ±1 and the rest 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Challenge([i8; DEGREE]);

impl Challenge {
    /// The 256 coefficients (index i: coefficient of X^i), each in {−1, 0, 1}.
    pub fn coefficients(&self) -> &[i8; DEGREE] {
        &self.0
    }

    fn to_poly(&self) -> Poly {
        Poly::from_signed(&self.0.map(i64::from))
    }

    fn to_ntt(&self) -> NttPoly {
        self.to_poly().ntt()
    }

    fn encode(&self, out: &mut Vec<u8>) {
        let mut signs = 0u32;
        let mut k = 0;
        for (pos, &c) in self.0.iter().enumerate() {
            if c != 0 {
                out.push(pos as u8);
                signs |= u32::from(c < 0) << k;
                k += 1;
            }
        }
        out.extend(signs.to_le_bytes().iter().take(KAPPA.div_ceil(8)));
    }

    fn decode(bytes: &[u8]) -> Result<Self, EncodingError> {
        const WHAT: &str = "challenge";
        let (positions, signs) = bytes.split_at(KAPPA.min(bytes.len()));
        let mut sign_word = [0u8; 4];
        for (d, s) in sign_word.iter_mut().zip(signs.iter()) {
            *d = *s;
        }
        let signs = u32::from_le_bytes(sign_word);
        if signs >> KAPPA != 0 {
            return Err(EncodingError::NonCanonical { what: WHAT });
        }
        let mut c = [0i8; DEGREE];
        let mut previous: Option<u8> = None;
        for (k, &pos) in positions.iter().enumerate() {
            if previous.is_some_and(|p| p >= pos) {
                return Err(EncodingError::NonCanonical { what: WHAT });
            }
            previous = Some(pos);
            if let Some(slot) = c.get_mut(usize::from(pos)) {
                *slot = 1 - 2 * ((signs >> k) & 1) as i8;
            }
        }
        Ok(Challenge(c))
    }
}

/// A Corona signature (c, z, Δ): z ∈ R_q^7 in coefficient form, Δ ∈ (Z/2^19)^{8×256}.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    challenge: Challenge,
    z: PolyVec<N>,
    delta: Box<[[u32; DEGREE]; M]>,
}

/// Δ centered in [−2^18, 2^18).
const fn delta_centered(d: u32) -> i64 {
    let v = d as i64;
    if v >= 1 << (H_BITS - 1) {
        v - (1 << H_BITS)
    } else {
        v
    }
}

impl Signature {
    /// The challenge c.
    pub fn challenge(&self) -> &Challenge {
        &self.challenge
    }

    /// ‖(Δ·2^ν, z)‖² as an exact integer (< 2^106, no overflow).
    fn norm_squared(&self) -> u128 {
        let z: u128 = self
            .z
            .as_slice()
            .iter()
            .flat_map(|p| p.to_centered())
            .map(|v| v.unsigned_abs() as u128 * v.unsigned_abs() as u128)
            .sum();
        let d: u128 = self
            .delta
            .iter()
            .flat_map(|p| p.iter())
            .map(|&d| {
                let v = delta_centered(d).unsigned_abs() << NU;
                v as u128 * v as u128
            })
            .sum();
        z + d
    }

    /// The compact encoding (module docs, Encodings): 28 + 224·w_z + 256·w_Δ bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let z: Vec<i64> = self
            .z
            .as_slice()
            .iter()
            .flat_map(|p| p.to_centered())
            .collect();
        let d: Vec<i64> = self
            .delta
            .iter()
            .flat_map(|p| p.iter().map(|&x| delta_centered(x)))
            .collect();
        let wz = z.iter().map(|&v| signed_width(v)).max().unwrap_or(1);
        let wd = d.iter().map(|&v| signed_width(v)).max().unwrap_or(1);
        let mut out = Vec::with_capacity(
            CHALLENGE_BYTES + 2 + packed_len(z.len(), wz) + packed_len(d.len(), wd),
        );
        self.challenge.encode(&mut out);
        out.push(wz as u8);
        out.push(wd as u8);
        pack(z.iter().map(|&v| to_twos(v, wz)), wz, &mut out);
        pack(d.iter().map(|&v| to_twos(v, wd)), wd, &mut out);
        out
    }

    /// Decodes [`Signature::to_bytes`]. Errors: [`EncodingError::Truncated`],
    /// [`EncodingError::Length`] (not exactly the length the widths imply),
    /// [`EncodingError::OutOfRange`] (a width of 0 or above 49 / 19, a z coefficient outside
    /// (−q/2, q/2)), [`EncodingError::NonCanonical`] (positions not strictly increasing, a set
    /// unused sign bit, non-minimal widths, non-zero padding).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, EncodingError> {
        const WHAT: &str = "signature";
        if bytes.len() < CHALLENGE_BYTES + 2 {
            return Err(EncodingError::Truncated { what: WHAT });
        }
        let (c_bytes, rest) = bytes.split_at(CHALLENGE_BYTES);
        let challenge = Challenge::decode(c_bytes)?;
        let (widths, rest) = rest.split_at(2);
        let (wz, wd) = match widths {
            [a, b] => (u32::from(*a), u32::from(*b)),
            _ => return Err(EncodingError::Truncated { what: WHAT }),
        };
        if !(1..=MAX_Z_WIDTH).contains(&wz) || !(1..=H_BITS).contains(&wd) {
            return Err(EncodingError::OutOfRange { what: WHAT });
        }
        let (z_len, d_len) = (packed_len(N * DEGREE, wz), packed_len(M * DEGREE, wd));
        if rest.len() != z_len + d_len {
            return Err(EncodingError::Length {
                what: WHAT,
                expected: CHALLENGE_BYTES + 2 + z_len + d_len,
                got: bytes.len(),
            });
        }
        let (z_bytes, d_bytes) = rest.split_at(z_len);
        let half = ((Q - 1) / 2) as i64;
        let mut z_vals = vec![0i64; N * DEGREE];
        let mut slots = z_vals.iter_mut();
        let mut widest = 0;
        unpack(z_bytes, N * DEGREE, wz, "signature z", |bits| {
            let v = from_twos(bits, wz);
            if v.unsigned_abs() > half as u64 {
                return Err(EncodingError::OutOfRange {
                    what: "signature z",
                });
            }
            widest = widest.max(signed_width(v));
            if let Some(s) = slots.next() {
                *s = v;
            }
            Ok(())
        })?;
        if widest != wz {
            return Err(EncodingError::NonCanonical {
                what: "signature z",
            });
        }
        let mut delta = Box::new([[0u32; DEGREE]; M]);
        let mut slots = delta.iter_mut().flat_map(|p| p.iter_mut());
        let mut widest = 0;
        unpack(d_bytes, M * DEGREE, wd, "signature Δ", |bits| {
            let v = from_twos(bits, wd);
            widest = widest.max(signed_width(v));
            if let Some(s) = slots.next() {
                *s = (v as u32) & ((1 << H_BITS) - 1);
            }
            Ok(())
        })?;
        if widest != wd {
            return Err(EncodingError::NonCanonical {
                what: "signature Δ",
            });
        }
        let z = PolyVec::from_fn(|r| {
            let mut row = [0i64; DEGREE];
            for (d, s) in row.iter_mut().zip(z_vals.iter().skip(r * DEGREE)) {
                *d = *s;
            }
            Poly::from_signed(&row)
        });
        Ok(Signature {
            challenge,
            z,
            delta,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Round message encodings
// ---------------------------------------------------------------------------------------------

impl Round1Message {
    /// The sender's index.
    pub fn sender(&self) -> u16 {
        self.sender
    }

    /// The session id.
    pub fn session(&self) -> SessionId {
        self.session
    }

    /// The compact encoding (module docs, Encodings).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(36 + 34 * self.macs.len() + COMMITMENT_BYTES);
        out.extend_from_slice(&self.sender.to_be_bytes());
        out.extend_from_slice(&self.session.0);
        out.extend_from_slice(&(self.macs.len() as u16).to_be_bytes());
        for (to, tag) in &self.macs {
            out.extend_from_slice(&to.to_be_bytes());
            out.extend_from_slice(tag);
        }
        pack_commitment(&self.d, &mut out);
        out
    }

    /// Decodes [`Round1Message::to_bytes`] and computes H(D_i) once. Errors:
    /// [`EncodingError::Truncated`]; [`EncodingError::OutOfRange`] (sender or recipient index
    /// ≥ [`MAX_PARTIES`], more tags than parties, a value ≥ q); [`EncodingError::NonCanonical`]
    /// (recipients not strictly increasing, a tag addressed to the sender, non-zero padding);
    /// [`EncodingError::Length`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, EncodingError> {
        const WHAT: &str = "round-1 message";
        let (sender, session, rest) = read_header(bytes, WHAT)?;
        let (count, mut rest) = match rest {
            [a, b, tail @ ..] => (usize::from(u16::from_be_bytes([*a, *b])), tail),
            _ => return Err(EncodingError::Truncated { what: WHAT }),
        };
        if count >= MAX_PARTIES {
            return Err(EncodingError::OutOfRange { what: WHAT });
        }
        let expected = 36 + 34 * count + COMMITMENT_BYTES;
        if bytes.len() != expected {
            return Err(EncodingError::Length {
                what: WHAT,
                expected,
                got: bytes.len(),
            });
        }
        let mut macs = Vec::with_capacity(count);
        for _ in 0..count {
            let (entry, tail) = rest.split_at(34.min(rest.len()));
            rest = tail;
            let (to, tag) = entry.split_at(2.min(entry.len()));
            let to = <[u8; 2]>::try_from(to)
                .map(u16::from_be_bytes)
                .map_err(|_| EncodingError::Truncated { what: WHAT })?;
            let tag =
                <[u8; 32]>::try_from(tag).map_err(|_| EncodingError::Truncated { what: WHAT })?;
            if usize::from(to) >= MAX_PARTIES {
                return Err(EncodingError::OutOfRange { what: WHAT });
            }
            if to == sender || macs.last().is_some_and(|(prev, _)| *prev >= to) {
                return Err(EncodingError::NonCanonical { what: WHAT });
            }
            macs.push((to, tag));
        }
        let polys = unpack_residues(rest, M * COLS, "commitment", NttPoly::from_coefficients)?;
        let d = NttMatrix::from_entries(polys)
            .ok_or(EncodingError::Truncated { what: "commitment" })?;
        Ok(Round1Message {
            sender,
            session,
            d,
            d_digest: commitment_digest(rest),
            macs,
        })
    }
}

/// Unpacks `polys` polynomials of 256 residues at [`RESIDUE_BITS`] bits each from `bytes`
/// (exactly their packed length, zero padding), each built by `make` as soon as its 256 values
/// are read, without an intermediate buffer of all values; `make` refuses a value ≥ q, reported
/// as [`EncodingError::OutOfRange`] naming `what`. Returns exactly `polys` polynomials; other
/// errors are [`unpack`]'s.
fn unpack_residues<P>(
    bytes: &[u8],
    polys: usize,
    what: &'static str,
    make: fn(&[u64]) -> Result<P, RingError>,
) -> Result<Vec<P>, EncodingError> {
    let mut out = Vec::with_capacity(polys);
    let mut row = [0u64; DEGREE];
    let mut filled = 0;
    unpack(bytes, polys * DEGREE, RESIDUE_BITS, what, |v| {
        if let Some(slot) = row.get_mut(filled) {
            *slot = v;
        }
        filled += 1;
        if filled == DEGREE {
            out.push(make(&row).map_err(|_| EncodingError::OutOfRange { what })?);
            filled = 0;
        }
        Ok(())
    })?;
    Ok(out)
}

/// Reads sender (u16 BE, < [`MAX_PARTIES`]) and session id.
fn read_header<'a>(
    bytes: &'a [u8],
    what: &'static str,
) -> Result<(u16, SessionId, &'a [u8]), EncodingError> {
    if bytes.len() < 34 {
        return Err(EncodingError::Truncated { what });
    }
    let (head, rest) = bytes.split_at(34);
    let (s, sid) = head.split_at(2);
    let sender = <[u8; 2]>::try_from(s)
        .map(u16::from_be_bytes)
        .map_err(|_| EncodingError::Truncated { what })?;
    if usize::from(sender) >= MAX_PARTIES {
        return Err(EncodingError::OutOfRange { what });
    }
    let sid = <[u8; 32]>::try_from(sid).map_err(|_| EncodingError::Truncated { what })?;
    Ok((sender, SessionId(sid), rest))
}

impl Round2Message {
    /// The sender's index.
    pub fn sender(&self) -> u16 {
        self.sender
    }

    /// The compact encoding: sender ‖ sid ‖ z_i at 49 bits ([`ROUND2_MESSAGE_BYTES`] bytes).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(ROUND2_MESSAGE_BYTES);
        out.extend_from_slice(&self.sender.to_be_bytes());
        out.extend_from_slice(&self.session.0);
        pack(
            self.z
                .as_slice()
                .iter()
                .flat_map(|p| p.coefficients().iter().copied()),
            RESIDUE_BITS,
            &mut out,
        );
        out
    }

    /// Decodes [`Round2Message::to_bytes`]. Errors: [`EncodingError::Length`],
    /// [`EncodingError::OutOfRange`] (sender ≥ [`MAX_PARTIES`], a coefficient ≥ q),
    /// [`EncodingError::NonCanonical`] (padding).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, EncodingError> {
        const WHAT: &str = "round-2 message";
        if bytes.len() != ROUND2_MESSAGE_BYTES {
            return Err(EncodingError::Length {
                what: WHAT,
                expected: ROUND2_MESSAGE_BYTES,
                got: bytes.len(),
            });
        }
        let (sender, session, rest) = read_header(bytes, WHAT)?;
        let polys = unpack_residues(rest, N, WHAT, Poly::from_coefficients)?;
        let z = PolyVec::from_entries(polys).ok_or(EncodingError::Truncated { what: WHAT })?;
        Ok(Round2Message { sender, session, z })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    /// A polynomial whose 256 NTT slots all hold `v`.
    fn constant_slots(v: u64) -> NttPoly {
        NttPoly::from_coefficients(&[v; DEGREE]).unwrap()
    }

    /// D whose entry (i, j) holds `f(i, j)` in every slot.
    fn slot_constant(f: impl Fn(usize, usize) -> u64) -> NttMatrix<M, COLS> {
        NttMatrix::from_fn(|i, j| constant_slots(f(i, j)))
    }

    #[test]
    fn full_row_rank_counts_independent_rows() {
        let identity: [[Zq; M]; M] =
            std::array::from_fn(|i| std::array::from_fn(|j| Zq::from_i64((i == j) as i64)));
        assert!(full_row_rank(identity));
        // Row 7 = row 0 + row 1: rank 7.
        let mut dependent = identity;
        dependent[7] = std::array::from_fn(|j| identity[0][j] + identity[1][j]);
        assert!(!full_row_rank(dependent));
        // A zero row: rank 7.
        let mut zero_row = identity;
        zero_row[3] = [Zq::ZERO; M];
        assert!(!full_row_rank(zero_row));
        // Full rank but needing row swaps and a pivot outside the diagonal.
        let anti: [[Zq; M]; M] = std::array::from_fn(|i| {
            std::array::from_fn(|j| Zq::from_i64((i + j == M - 1) as i64 * (i as i64 + 2)))
        });
        assert!(full_row_rank(anti));
    }

    #[test]
    fn rank_check_falls_back_to_all_columns() {
        // Columns 1..=8 are zero (the fast check fails), columns 9..=16 are the identity.
        let wide = slot_constant(|i, j| (j == i + 9) as u64);
        assert!(check_rank(&wide).is_ok());
        // Columns 1..=48 of rank 7 (row 7 is zero): refused, naming the first slot.
        let deficient = slot_constant(|i, j| (i < M - 1 && j == i + 1) as u64);
        assert_eq!(
            check_rank(&deficient),
            Err(CoronaError::RankDeficient { slot: 0 })
        );
        // Column 0 (the r*/e* column) does not count.
        let only_first = slot_constant(|_, j| (j == 0) as u64 * 5);
        assert!(check_rank(&only_first).is_err());
    }

    /// An insider (it holds valid MAC keys) sends D_2 = −D_0, so Σ D_j = 0: round 2 of the
    /// honest signer and a non-signing combiner both refuse with `RankDeficient`, before any
    /// z_i is computed.
    #[test]
    fn a_cancelling_commitment_is_refused_as_rank_deficient() {
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let (gk, shares) = trusted_dealer_keygen(2, 3, &mut rng).unwrap();
        let mut signers: Vec<Signer> = shares.into_iter().map(Signer::new).collect();
        let set = signers[0].share().signing_set(&[0, 2]).unwrap();
        let session = SessionId([9; 32]);
        let (state0, msg0) = signers[0].round1(session, &set, &mut rng).unwrap();
        let (_, mut msg2) = signers[2].round1(session, &set, &mut rng).unwrap();

        msg2.d = NttMatrix::from_fn(|i, j| {
            let d0 = msg0.d.get(i, j).unwrap().coefficients();
            NttPoly::from_coefficients(&d0.map(|v| (Q - v) % Q)).unwrap()
        });
        let mut packed = Vec::new();
        pack_commitment(&msg2.d, &mut packed);
        msg2.d_digest = commitment_digest(&packed);
        let share2 = signers[2].share();
        let key = KeyShare::key(&share2.mac_keys, 0);
        let tag = round1_mac(
            &key,
            &gk.digest,
            2,
            0,
            &session,
            &set.encode(),
            &msg2.d_digest,
        );
        msg2.macs = vec![(0, tag)];

        let round1 = [msg0, msg2];
        assert_eq!(
            signers[0].round2(state0, b"m", &round1).unwrap_err(),
            CoronaError::RankDeficient { slot: 0 }
        );
        assert_eq!(
            SignContext::new(&gk, session, set, b"m", &round1).unwrap_err(),
            CoronaError::RankDeficient { slot: 0 }
        );
    }
}
