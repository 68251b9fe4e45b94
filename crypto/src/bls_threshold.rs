//! t-of-n threshold BLS signatures with a trusted dealer, on the min-pk scheme of [`crate::bls`].
//!
//! # What this implements
//!
//! The threshold scheme of Boldyreva ("Threshold signatures, multisignatures and blind signatures
//! based on the Gap-Diffie-Hellman-group signature scheme", PKC 2003) over BLS12-381, with the key
//! shared by a trusted dealer using Shamir's scheme (A. Shamir, "How to share a secret", CACM
//! 22(11), 1979):
//!
//! 1. [`deal`]: the dealer draws a uniformly random polynomial `f` of degree `t − 1` over the
//!    scalar field F_r of BLS12-381. The group secret is `f(0)`; participant `i ∈ 1..=n` gets the
//!    share `f(i)`. The dealer publishes the group public key `f(0)·G1` and the share public keys
//!    `f(i)·G1` (all 48-byte compressed G1 points, [`PublicKey`]).
//! 2. [`SecretShare::sign`]: participant `i` computes the ordinary BLS signature
//!    `σ_i = f(i)·H(msg)` (CoreSign of draft-irtf-cfrg-bls-signature-05 §2.6 under
//!    [`crate::bls::SIGNATURE_DST`]), a 96-byte compressed G2 point.
//! 3. [`verify_share`]: `σ_i` is checked like any BLS signature, under share public key `i`.
//! 4. [`combine`]: any `t` shares with distinct indices `S` interpolate the group signature in the
//!    exponent, `σ = Σ_{i∈S} λ_i·σ_i = f(0)·H(msg)`, with the Lagrange coefficients at zero
//!    `λ_i = Π_{j∈S, j≠i} j / (j − i)` (mod r).
//!
//! The result is a standard min-pk BLS signature under the group public key: it verifies with
//! [`PublicKey::verify`] and aggregates like any other. BLS signing is deterministic, so every
//! `t`-subset of honest shares combines to the same 96 bytes.
//!
//! # Encodings
//!
//! - [`SecretShare`]: [`SECRET_SHARE_LEN`] = 34 bytes, the index as a big-endian `u16`, then the
//!   share scalar as 32 big-endian bytes (draft §2.3, the encoding of [`SecretKey`]).
//! - [`SignatureShare`]: [`SIGNATURE_SHARE_LEN`] = 98 bytes, the index as a big-endian `u16`,
//!   then the 96-byte compressed G2 signature.
//!
//! Indices are in `1..=`[`MAX_PARTICIPANTS`]; decoding rejects 0 (it would be the group secret's
//! x-coordinate) and larger values. The number of participants of a dealing is not part of a
//! share's encoding, so an index above a dealing's `n` (but within the bound) decodes; it has no
//! share public key ([`Dealing::share_public_key`] returns `None`).
//!
//! # Safety argument and limits
//!
//! - Secrecy: any `t − 1` shares are uniformly distributed and independent of `f(0)` (Shamir), so
//!   they reveal nothing about the group secret beyond its public key.
//! - Unforgeability: Boldyreva proves the scheme unforgeable against `t − 1` corrupted parties
//!   when the underlying BLS signature is (co-CDH in the random-oracle model).
//! - Robustness is the caller's job: [`combine`] does not verify the shares it is given. One bad
//!   share makes the combined signature invalid (or, if crafted to cancel the others, the
//!   identity, rejected with [`ThresholdError::IdentitySignature`]). With shares from untrusted
//!   sources, verify the combined signature and, if it fails, [`verify_share`] each share to find
//!   the culprits; or verify every share first.
//! - The dealer learns the group secret: trusted-dealer key generation, no distributed key
//!   generation. The dealer does not produce a proof of possession for the group key.
//!
//! # Constant time and zeroization
//!
//! - Signing ([`SecretShare::sign`]) and [`SecretShare::public_key`] use `blst`, whose scalar
//!   multiplications by secret scalars are constant-time.
//! - [`deal`] is not constant-time: polynomial evaluation uses arkworks' F_r arithmetic, which
//!   does not promise constant time, and a zero share is detected by a branch. Dealing happens
//!   once, on the dealer's trusted machine, so timing is not observable by an attacker there.
//! - [`combine`], [`verify_share`] and the Lagrange coefficients handle public data only
//!   (indices, signature shares) and are variable-time.
//! - Secret scalars live in [`SecretKey`], which `blst` zeroizes on drop; the dealer's polynomial
//!   coefficients and evaluations are wiped on drop ([`zeroize::Zeroizing`]). Copies that arkworks
//!   makes on the stack during arithmetic are not wiped (best effort). [`SecretShare::to_bytes`]
//!   returns a copy of the secret that the caller must zeroize. `Debug` never prints a secret.

use std::collections::HashSet;
use std::fmt;

use ark_bls12_381::Fr;
use ark_ff::{batch_inversion_and_mul, BigInteger, PrimeField, Zero};
use blst::{min_pk, MultiPoint};
use rand::{CryptoRng, RngCore};
use zeroize::{Zeroize, Zeroizing};

use crate::bls::{BlsError, PublicKey, SecretKey, Signature, SECRET_KEY_LEN, SIGNATURE_LEN};

/// The largest number of participants of a dealing, and so the largest participant index.
///
/// 1024 is far above any committee that signs with one threshold key, keeps indices in a `u16`,
/// and bounds the cost of [`combine`]'s Lagrange coefficients, which is quadratic in the
/// threshold (about 10^6 field multiplications at `t` = 1024).
pub const MAX_PARTICIPANTS: u16 = 1024;
/// Length in bytes of an encoded participant index (big-endian `u16`).
pub const INDEX_LEN: usize = 2;
/// Length in bytes of an encoded [`SecretShare`]: index ‖ 32-byte big-endian scalar.
pub const SECRET_SHARE_LEN: usize = INDEX_LEN + SECRET_KEY_LEN;
/// Length in bytes of an encoded [`SignatureShare`]: index ‖ 96-byte compressed G2 point.
pub const SIGNATURE_SHARE_LEN: usize = INDEX_LEN + SIGNATURE_LEN;

/// Bits of a scalar below r (r < 2^255), for `blst`'s multi-scalar multiplication.
const SCALAR_BITS: usize = 255;

/// Why a threshold operation failed, and what follows.
///
/// Decoding errors ([`InvalidLength`](Self::InvalidLength), [`InvalidIndex`](Self::InvalidIndex),
/// [`InvalidSecretScalar`](Self::InvalidSecretScalar), [`Encoding`](Self::Encoding)) and
/// [`InvalidShare`](Self::InvalidShare) are properties of input from a peer or a file: drop it
/// (and the peer may be penalized); none is fatal. Shape errors are caller bugs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ThresholdError {
    /// [`deal`] was asked for a threshold outside `1..=participants`.
    #[error(
        "invalid threshold {threshold} for {participants} participants: need 1 <= threshold <= participants"
    )]
    InvalidThreshold {
        /// The threshold asked for.
        threshold: u16,
        /// The number of participants asked for.
        participants: u16,
    },
    /// [`deal`] was asked for a number of participants outside `1..=MAX_PARTICIPANTS`.
    #[error("invalid number of participants {participants}: need 1 <= participants <= {max}")]
    InvalidParticipants {
        /// The number of participants asked for.
        participants: u16,
        /// [`MAX_PARTICIPANTS`].
        max: u16,
    },
    /// [`combine`] was given a threshold outside `1..=MAX_PARTICIPANTS`.
    #[error("threshold {threshold} out of range: need 1 <= threshold <= {max}")]
    ThresholdOutOfRange {
        /// The threshold given.
        threshold: u16,
        /// [`MAX_PARTICIPANTS`].
        max: u16,
    },
    /// An encoding has the wrong length.
    #[error("invalid {what} length: expected {expected} bytes, got {got}")]
    InvalidLength {
        /// What was being decoded.
        what: &'static str,
        /// Required length in bytes.
        expected: usize,
        /// Length that was supplied.
        got: usize,
    },
    /// A participant index is 0 or above [`MAX_PARTICIPANTS`].
    #[error("participant index {index} outside 1..={max}")]
    InvalidIndex {
        /// The decoded index.
        index: u16,
        /// [`MAX_PARTICIPANTS`].
        max: u16,
    },
    /// A secret share's scalar is zero or not below the group order r.
    #[error("secret share scalar is zero or not below the group order r")]
    InvalidSecretScalar,
    /// A signature share's point does not decode (bad encoding, not in G2, or the identity).
    #[error("invalid signature share point: {0}")]
    Encoding(#[source] BlsError),
    /// The dealt polynomial is zero at 0 or at a participant's index (probability about
    /// `(n + 1)/r` < 2^-244 with a sound RNG): nothing was dealt; deal again.
    #[error("the dealt polynomial gives a zero secret or share; deal again")]
    ZeroScalar,
    /// [`combine`] got fewer shares with distinct indices than the threshold: wait for more.
    #[error("not enough signature shares: {given} with distinct indices given, {needed} needed")]
    NotEnoughShares {
        /// Shares with distinct indices that were given.
        given: usize,
        /// The threshold.
        needed: u16,
    },
    /// The shares combine to the identity point: at least one share is invalid (crafted to cancel
    /// the others). Find it with [`verify_share`].
    #[error("the signature shares combine to the identity point: at least one share is invalid")]
    IdentitySignature,
    /// A signature share does not verify under its participant's share public key.
    #[error("signature share of participant {index} does not verify")]
    InvalidShare {
        /// The share's participant index.
        index: u16,
    },
}

/// Checks `bytes.len() == expected`.
fn check_len(bytes: &[u8], expected: usize, what: &'static str) -> Result<(), ThresholdError> {
    if bytes.len() == expected {
        Ok(())
    } else {
        Err(ThresholdError::InvalidLength {
            what,
            expected,
            got: bytes.len(),
        })
    }
}

/// Splits an encoding (of checked length ≥ 2) into its index, checked to be in
/// `1..=MAX_PARTICIPANTS`, and the rest.
fn split_index(bytes: &[u8]) -> Result<(u16, &[u8]), ThresholdError> {
    let (index, rest) = match bytes {
        [hi, lo, rest @ ..] => (u16::from_be_bytes([*hi, *lo]), rest),
        _ => {
            return Err(ThresholdError::InvalidLength {
                what: "participant index",
                expected: INDEX_LEN,
                got: bytes.len(),
            })
        }
    };
    if (1..=MAX_PARTICIPANTS).contains(&index) {
        Ok((index, rest))
    } else {
        Err(ThresholdError::InvalidIndex {
            index,
            max: MAX_PARTICIPANTS,
        })
    }
}

/// Participant `index`'s share `f(index)` of a dealt secret: a BLS secret key in `[1, r−1]`.
///
/// Zeroized on drop (by `blst`, through [`SecretKey`]); `Debug` prints the index only.
pub struct SecretShare {
    index: u16,
    key: SecretKey,
}

impl SecretShare {
    /// The participant index, in `1..=MAX_PARTICIPANTS` (the Shamir x-coordinate).
    pub fn index(&self) -> u16 {
        self.index
    }

    /// The share public key `f(index)·G1` (SkToPk, draft §2.4), against which this
    /// participant's signature shares verify.
    pub fn public_key(&self) -> PublicKey {
        self.key.public_key()
    }

    /// Signs `msg`: the BLS signature `f(index)·H(msg)` (CoreSign, draft §2.6, under
    /// [`crate::bls::SIGNATURE_DST`]), tagged with this participant's index.
    pub fn sign(&self, msg: &[u8]) -> SignatureShare {
        SignatureShare {
            index: self.index,
            signature: self.key.sign(msg),
        }
    }

    /// The [`SECRET_SHARE_LEN`]-byte encoding: index (big-endian `u16`) ‖ 32-byte big-endian
    /// scalar. The caller owns this copy of the secret and should zeroize it.
    pub fn to_bytes(&self) -> [u8; SECRET_SHARE_LEN] {
        let scalar = Zeroizing::new(self.key.to_bytes());
        let mut out = [0u8; SECRET_SHARE_LEN];
        let (index, rest) = out.split_at_mut(INDEX_LEN);
        index.copy_from_slice(&self.index.to_be_bytes());
        rest.copy_from_slice(scalar.as_slice());
        out
    }

    /// Decodes [`SecretShare::to_bytes`]'s encoding.
    ///
    /// Errors: [`ThresholdError::InvalidLength`] unless exactly [`SECRET_SHARE_LEN`] bytes;
    /// [`ThresholdError::InvalidIndex`] for index 0 or above [`MAX_PARTICIPANTS`];
    /// [`ThresholdError::InvalidSecretScalar`] for a zero scalar or one ≥ r.
    pub fn from_bytes(bytes: &[u8]) -> Result<SecretShare, ThresholdError> {
        check_len(bytes, SECRET_SHARE_LEN, "secret share")?;
        let (index, scalar) = split_index(bytes)?;
        let key = SecretKey::from_bytes(scalar).map_err(|_| ThresholdError::InvalidSecretScalar)?;
        Ok(SecretShare { index, key })
    }
}

impl fmt::Debug for SecretShare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SecretShare {{ index: {}, key: <redacted> }}",
            self.index
        )
    }
}

/// Participant `index`'s signature share: a BLS signature (G2 point in the prime-order subgroup,
/// not the identity) under its share public key. Public data.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SignatureShare {
    index: u16,
    signature: Signature,
}

impl SignatureShare {
    /// The participant index, in `1..=MAX_PARTICIPANTS`.
    pub fn index(&self) -> u16 {
        self.index
    }

    /// The signature share itself, `f(index)·H(msg)`.
    pub fn signature(&self) -> &Signature {
        &self.signature
    }

    /// The [`SIGNATURE_SHARE_LEN`]-byte encoding: index (big-endian `u16`) ‖ 96-byte compressed G2.
    pub fn to_bytes(&self) -> [u8; SIGNATURE_SHARE_LEN] {
        let mut out = [0u8; SIGNATURE_SHARE_LEN];
        let (index, rest) = out.split_at_mut(INDEX_LEN);
        index.copy_from_slice(&self.index.to_be_bytes());
        rest.copy_from_slice(&self.signature.to_bytes());
        out
    }

    /// Decodes [`SignatureShare::to_bytes`]'s encoding; the point is decoded by
    /// [`Signature::from_bytes`] (subgroup check, identity rejected).
    ///
    /// Errors: [`ThresholdError::InvalidLength`] unless exactly [`SIGNATURE_SHARE_LEN`] bytes;
    /// [`ThresholdError::InvalidIndex`] for index 0 or above [`MAX_PARTICIPANTS`];
    /// [`ThresholdError::Encoding`] with the [`BlsError`] of a point that does not decode.
    pub fn from_bytes(bytes: &[u8]) -> Result<SignatureShare, ThresholdError> {
        check_len(bytes, SIGNATURE_SHARE_LEN, "signature share")?;
        let (index, point) = split_index(bytes)?;
        let signature = Signature::from_bytes(point).map_err(ThresholdError::Encoding)?;
        Ok(SignatureShare { index, signature })
    }
}

/// The output of [`deal`]: the public group and share keys, and the secret shares to hand out
/// (share `i` to participant `i`, over a private channel).
///
/// `Debug` prints the public keys and the share indices, never a secret.
#[derive(Debug)]
pub struct Dealing {
    threshold: u16,
    participants: u16,
    group_public_key: PublicKey,
    share_public_keys: Vec<PublicKey>,
    shares: Vec<SecretShare>,
}

impl Dealing {
    /// The threshold `t`: signature shares from any `t` participants combine.
    pub fn threshold(&self) -> u16 {
        self.threshold
    }

    /// The number of participants `n` (at most [`MAX_PARTICIPANTS`]).
    pub fn participants(&self) -> u16 {
        self.participants
    }

    /// The group public key `f(0)·G1`: combined signatures verify under it.
    pub fn group_public_key(&self) -> &PublicKey {
        &self.group_public_key
    }

    /// The share public keys `f(i)·G1`; element `i − 1` belongs to participant `i`.
    pub fn share_public_keys(&self) -> &[PublicKey] {
        &self.share_public_keys
    }

    /// Participant `index`'s share public key; `None` for index 0 or above `n`.
    pub fn share_public_key(&self, index: u16) -> Option<&PublicKey> {
        let position = usize::from(index).checked_sub(1)?;
        self.share_public_keys.get(position)
    }

    /// The secret shares; element `i − 1` is participant `i`'s.
    pub fn shares(&self) -> &[SecretShare] {
        &self.shares
    }

    /// Takes the secret shares out (to send them), in participant order.
    pub fn into_shares(self) -> Vec<SecretShare> {
        self.shares
    }
}

/// A uniformly random scalar of F_r: 512 random bits reduced mod r (statistical distance from
/// uniform below 2^-256), with the reduction done by Horner's rule in F_r (no big-integer copies).
fn random_scalar<R: RngCore + CryptoRng + ?Sized>(rng: &mut R) -> Fr {
    let base = Fr::from(u128::from(u64::MAX) + 1);
    (0..8).fold(Fr::zero(), |acc, _| acc * base + Fr::from(rng.next_u64()))
}

/// `f(x)` for the polynomial with `coefficients[k]` the coefficient of `x^k` (Horner's rule).
fn evaluate(coefficients: &[Fr], x: Fr) -> Fr {
    coefficients
        .iter()
        .rev()
        .fold(Fr::zero(), |acc, coefficient| acc * x + coefficient)
}

/// The secret key of a nonzero scalar, through its 32-byte big-endian encoding (draft §2.3).
///
/// Errors: [`ThresholdError::ZeroScalar`] for zero.
fn secret_key(scalar: &Fr) -> Result<SecretKey, ThresholdError> {
    if scalar.is_zero() {
        return Err(ThresholdError::ZeroScalar);
    }
    let mut limbs = scalar.into_bigint();
    let mut bytes = Zeroizing::new([0u8; SECRET_KEY_LEN]);
    // `limbs.0` is little-endian 64-bit limbs: the last limb holds the most significant bytes.
    for (chunk, limb) in bytes.chunks_exact_mut(8).zip(limbs.0.iter().rev()) {
        chunk.copy_from_slice(&limb.to_be_bytes());
    }
    limbs.zeroize();
    // The scalar is reduced and nonzero, so blst accepts it.
    SecretKey::from_bytes(bytes.as_slice()).map_err(|_| ThresholdError::InvalidSecretScalar)
}

/// Trusted-dealer key generation (Shamir 1979): draws a random polynomial `f` of degree
/// `threshold − 1` over F_r from `rng` and returns the group public key `f(0)·G1`, the share
/// public keys `f(i)·G1` and the secret shares `f(i)` for `i = 1..=participants`.
///
/// `rng` must be a cryptographically secure generator (e.g. `ChaCha20Rng::from_rng(OsRng)`);
/// the dealer learns the group secret. Not constant-time (module docs). Cost: `t·n` field
/// multiplications and `n + 1` G1 scalar multiplications.
///
/// Errors: [`ThresholdError::InvalidParticipants`] unless `1 ≤ participants ≤
/// MAX_PARTICIPANTS`; [`ThresholdError::InvalidThreshold`] unless `1 ≤ threshold ≤
/// participants`; [`ThresholdError::ZeroScalar`] if the secret or a share is zero (negligible
/// probability; deal again).
pub fn deal<R: RngCore + CryptoRng + ?Sized>(
    threshold: u16,
    participants: u16,
    rng: &mut R,
) -> Result<Dealing, ThresholdError> {
    if !(1..=MAX_PARTICIPANTS).contains(&participants) {
        return Err(ThresholdError::InvalidParticipants {
            participants,
            max: MAX_PARTICIPANTS,
        });
    }
    if !(1..=participants).contains(&threshold) {
        return Err(ThresholdError::InvalidThreshold {
            threshold,
            participants,
        });
    }
    let coefficients: Zeroizing<Vec<Fr>> =
        Zeroizing::new((0..threshold).map(|_| random_scalar(rng)).collect());
    let group_public_key =
        secret_key(&Zeroizing::new(evaluate(&coefficients, Fr::zero())))?.public_key();
    let shares = (1..=participants)
        .map(|index| {
            let value = Zeroizing::new(evaluate(&coefficients, Fr::from(index)));
            Ok(SecretShare {
                index,
                key: secret_key(&value)?,
            })
        })
        .collect::<Result<Vec<_>, ThresholdError>>()?;
    let share_public_keys = shares.iter().map(SecretShare::public_key).collect();
    Ok(Dealing {
        threshold,
        participants,
        group_public_key,
        share_public_keys,
        shares,
    })
}

/// The Lagrange coefficients at zero of the distinct nonzero x-coordinates `indices`:
/// `λ_i = Π_{j≠i} j / (j − i)` in F_r, in the order of `indices`. Computed as
/// `(Π_j j) / (i·Π_{j≠i} (j − i))` with one batched inversion; quadratic in `indices.len()`.
fn lagrange_at_zero(indices: &[u16]) -> Vec<Fr> {
    let numerator: Fr = indices.iter().map(|&j| Fr::from(j)).product();
    let mut denominators: Vec<Fr> = indices
        .iter()
        .map(|&i| {
            indices
                .iter()
                .filter(|&&j| j != i)
                .fold(Fr::from(i), |acc, &j| {
                    acc * Fr::from(i32::from(j) - i32::from(i))
                })
        })
        .collect();
    batch_inversion_and_mul(&mut denominators, &numerator);
    denominators
}

/// Combine (Boldyreva 2003): interpolates the group signature `f(0)·H(msg)` from signature shares
/// by Lagrange interpolation at zero in the exponent, `σ = Σ λ_i·σ_i` over the first `threshold`
/// shares with distinct indices (a later share with an index already taken is skipped). Returns
/// the 96-byte-compressible [`Signature`], which verifies with [`PublicKey::verify`] under the
/// group public key when the shares used are valid, and is the same whichever shares were used.
///
/// The shares are not verified here (module docs, robustness). Cost: about `t²` field
/// multiplications for the coefficients, a `t`-point G2 multi-scalar multiplication (`blst`), `t`
/// G2 decompressions and one G2 subgroup check.
///
/// Errors: [`ThresholdError::ThresholdOutOfRange`] unless `1 ≤ threshold ≤ MAX_PARTICIPANTS`;
/// [`ThresholdError::NotEnoughShares`] when fewer than `threshold` distinct indices are given;
/// [`ThresholdError::IdentitySignature`] when the shares combine to the identity (a share is
/// invalid).
pub fn combine(threshold: u16, shares: &[SignatureShare]) -> Result<Signature, ThresholdError> {
    if !(1..=MAX_PARTICIPANTS).contains(&threshold) {
        return Err(ThresholdError::ThresholdOutOfRange {
            threshold,
            max: MAX_PARTICIPANTS,
        });
    }
    let needed = usize::from(threshold);
    let mut seen = HashSet::with_capacity(needed);
    let chosen: Vec<&SignatureShare> = shares
        .iter()
        .filter(|share| seen.insert(share.index))
        .take(needed)
        .collect();
    if chosen.len() < needed {
        return Err(ThresholdError::NotEnoughShares {
            given: chosen.len(),
            needed: threshold,
        });
    }
    let indices: Vec<u16> = chosen.iter().map(|share| share.index).collect();
    let mut scalars = Vec::with_capacity(needed * SECRET_KEY_LEN);
    for lambda in lagrange_at_zero(&indices) {
        scalars.extend_from_slice(&lambda.into_bigint().to_bytes_le());
    }
    // Each share was validated when it was decoded or signed; decompression cannot fail.
    let points = chosen
        .iter()
        .map(|share| min_pk::Signature::uncompress(&share.signature.to_bytes()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| ThresholdError::Encoding(BlsError::InvalidEncoding))?;
    let combined = points
        .as_slice()
        .mult(&scalars, SCALAR_BITS)
        .to_signature()
        .compress();
    // A sum of subgroup points is in the subgroup; `from_bytes` rejects the identity.
    Signature::from_bytes(&combined).map_err(|err| match err {
        BlsError::IdentityPoint => ThresholdError::IdentitySignature,
        other => ThresholdError::Encoding(other),
    })
}

/// Checks a signature share on `msg` against its participant's share public key (CoreVerify,
/// draft §2.7). The caller looks the key up by [`SignatureShare::index`] (e.g.
/// [`Dealing::share_public_key`]); a share checked under another participant's key fails.
///
/// Errors: [`ThresholdError::InvalidShare`] with the share's index when the pairing check fails.
pub fn verify_share(
    share_public_key: &PublicKey,
    msg: &[u8],
    share: &SignatureShare,
) -> Result<(), ThresholdError> {
    share_public_key
        .verify(msg, &share.signature)
        .map_err(|_| ThresholdError::InvalidShare { index: share.index })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ff::{Field, One};

    /// The batched formula agrees with the textbook product, and the coefficients of any set
    /// sum to one (interpolating the constant polynomial 1).
    #[test]
    fn lagrange_matches_the_textbook_formula() {
        let indices = [3u16, 1, 7, 1024, 12];
        let lambdas = lagrange_at_zero(&indices);
        for (&i, lambda) in indices.iter().zip(&lambdas) {
            let expected = indices
                .iter()
                .filter(|&&j| j != i)
                .fold(Fr::one(), |acc, &j| {
                    let diff = Fr::from(j) - Fr::from(i);
                    acc * Fr::from(j) * diff.inverse().unwrap()
                });
            assert_eq!(*lambda, expected);
        }
        assert_eq!(lambdas.iter().sum::<Fr>(), Fr::one());
        assert_eq!(lagrange_at_zero(&[5]), vec![Fr::one()]);
    }

    #[test]
    fn horner_evaluates_the_polynomial() {
        let coefficients = [Fr::from(5u8), Fr::from(3u8), Fr::from(2u8)];
        assert_eq!(evaluate(&coefficients, Fr::from(4u8)), Fr::from(49u8));
        assert_eq!(evaluate(&coefficients, Fr::zero()), Fr::from(5u8));
    }

    #[test]
    fn zero_scalar_is_an_error() {
        assert_eq!(
            secret_key(&Fr::zero()).err(),
            Some(ThresholdError::ZeroScalar)
        );
        let key = secret_key(&Fr::from(258u16)).unwrap();
        let mut expected = [0u8; SECRET_KEY_LEN];
        expected[30] = 1;
        expected[31] = 2;
        assert_eq!(key.to_bytes(), expected);
    }
}
