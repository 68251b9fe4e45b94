//! The Magnetar certificate lane: one SLH-DSA signature (FIPS 205) per signer on the digest μ the
//! certificate's post-quantum legs sign (the bundle digest, [`crate::cert`]), a signer bitmap, and
//! the stake-weighted quorum rule (docs/architecture.md §3, §4).
//!
//! Source: SLH-DSA is FIPS 205; keys, signing and single verification are
//! `quasar_crypto::magnetar` (slh_verify, §10.3 Algorithm 24). A leg is not an aggregate: every
//! signer's signature is verified on its own, so the leg is as strong as SLH-DSA itself (its
//! security rests on the hash functions only) and costs one verification per signer, which this
//! lane spreads over all cores.
//!
//! What each signer signs: M = μ (32 bytes) with the context string [`CERT_CONTEXT`]
//! (`quasar-cert-v1`), hedged, under the epoch's parameter set (SLH-DSA-SHAKE-192f by default,
//! 192s when the epoch's policy says so; the leg never chooses).
//!
//! # Encoding
//!
//! ```text
//! bitmap_len (u32 little-endian) ‖ bitmap (bitmap_len bytes) ‖ sig_0 ‖ sig_1 ‖ … ‖ sig_{k-1}
//! ```
//!
//! The bitmap follows the BLS lane's conventions ([`crate::bls`]: validator `i` is bit `i % 8` of
//! byte `i / 8`, exactly `ceil(n / 8)` bytes, no padding bit set); `k` is its number of set bits,
//! and `sig_j` is the signature of the `j`-th signer in ascending index order, each exactly the
//! parameter set's signature length (35,664 bytes for 192f, 16,224 for 192s). The decoder
//! ([`MagnetarLeg::decode`]) checks every length against what remains before slicing or
//! allocating: the bitmap length against the input, then `k × signature length` against the
//! bytes left, exactly (no trailing bytes). So one leg has one encoding, and a decoded leg always
//! carries one signature per set bit.
//!
//! # Checks, cheapest first ([`verify_leg`])
//!
//! 1. The bitmap is canonical for the epoch's `n` validators (length, padding bits, not empty):
//!    signers are distinct members by construction; a repeated or non-member signer cannot be
//!    expressed.
//! 2. The signers' stake is a quorum: `signed_stake * 3 > total_stake * 2` (docs/architecture.md §2), before
//!    any signature is looked at, so a leg without a quorum costs no hashing.
//! 3. Every signature verifies under its signer's key, in parallel on the rayon pool. The error
//!    names the lowest signer index whose signature fails (and verification of higher indices
//!    stops early), so the verdict does not depend on scheduling.
//!
//! # Cost (2-vCPU machine, `cargo bench -p quasar-bench --bench magnetar`)
//!
//! A leg of 21 signers verifies in about 92 ms with SLH-DSA-SHAKE-192f and 31 ms with 192s, 0.56×
//! and 0.53× the time of the same 21 verifications one after another (162 ms and 53 ms): on two
//! cores the floor is 0.5×. Decoding a 21-signer leg (length checks and one copy of the
//! signatures) costs 50 µs (192f) and 20 µs (192s).
//!
//! # Safety argument
//!
//! An accepted leg carries, for a set of distinct validators of the epoch holding more than 2/3 of
//! its stake, a valid SLH-DSA signature by each on (μ, `quasar-cert-v1`). Forging it needs
//! forging SLH-DSA for a key whose owner did not sign. Decoding allocates at most the size of its
//! input, and nothing here panics on any input.

use quasar_crypto::magnetar::{ParameterSet, PublicKey, Signature};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::bls::{bitmap_from_signers, quorum_signers, VerifiedSigners};
use crate::{LaneError, ValidatorSet, CERT_CONTEXT};

/// Bytes of the bitmap length prefix (u32 little-endian).
const BITMAP_LEN_PREFIX: usize = 4;

/// The Magnetar keys of one epoch: its [`ValidatorSet`] (stakes and quorum rule) and, for every
/// validator in index order, an SLH-DSA public key of the epoch's parameter set.
#[derive(Debug, Clone)]
pub struct MagnetarKeys {
    validators: ValidatorSet,
    parameter_set: ParameterSet,
    keys: Vec<PublicKey>,
}

impl MagnetarKeys {
    /// Pairs `validators` with their Magnetar keys (`keys[i]` is validator `i`'s) for an epoch
    /// that uses `parameter_set`.
    ///
    /// Errors: [`LaneError::KeyCount`] unless there is one key per validator;
    /// [`LaneError::WrongParameterSet`] naming the first key of another set;
    /// [`LaneError::DuplicateValidator`] naming the first key that repeats an earlier one.
    pub fn new(
        validators: ValidatorSet,
        parameter_set: ParameterSet,
        keys: Vec<PublicKey>,
    ) -> Result<MagnetarKeys, LaneError> {
        if keys.len() != validators.len() {
            return Err(LaneError::KeyCount {
                expected: validators.len(),
                got: keys.len(),
            });
        }
        let mut seen = std::collections::HashSet::with_capacity(keys.len());
        for (index, key) in keys.iter().enumerate() {
            if key.parameter_set() != parameter_set {
                return Err(LaneError::WrongParameterSet {
                    index,
                    expected: parameter_set,
                    got: key.parameter_set(),
                });
            }
            if !seen.insert(key.as_bytes()) {
                return Err(LaneError::DuplicateValidator { index });
            }
        }
        Ok(MagnetarKeys {
            validators,
            parameter_set,
            keys,
        })
    }

    /// The validator set (stakes, quorum rule).
    pub fn validators(&self) -> &ValidatorSet {
        &self.validators
    }

    /// The epoch's SLH-DSA parameter set.
    pub fn parameter_set(&self) -> ParameterSet {
        self.parameter_set
    }
}

/// A Magnetar leg whose structure is checked but whose signatures are not: a bitmap and exactly
/// one signature (of one parameter set) per set bit, in ascending signer order. Only
/// [`verify_leg`] says whether it certifies anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MagnetarLeg {
    bitmap: Vec<u8>,
    signatures: Vec<Signature>,
}

impl MagnetarLeg {
    /// Assembles a leg for a set of `n` validators from `(signer index, signature)` pairs in any
    /// order (what an aggregator collects).
    ///
    /// Errors: [`LaneError::NoSigners`] for none; [`LaneError::NonMemberSigner`] for an index
    /// `>= n`; [`LaneError::DuplicateSigner`] for an index given twice;
    /// [`LaneError::WrongParameterSet`] for a signature of another set than the lowest signer's.
    pub fn new(
        n: usize,
        mut signatures: Vec<(usize, Signature)>,
    ) -> Result<MagnetarLeg, LaneError> {
        signatures.sort_by_key(|(index, _)| *index);
        let Some(set) = signatures.first().map(|(_, sig)| sig.parameter_set()) else {
            return Err(LaneError::NoSigners);
        };
        let mut previous = None;
        for (index, sig) in &signatures {
            let index = *index;
            if index >= n {
                return Err(LaneError::NonMemberSigner { index, n });
            }
            if previous == Some(index) {
                return Err(LaneError::DuplicateSigner { index });
            }
            if sig.parameter_set() != set {
                return Err(LaneError::WrongParameterSet {
                    index,
                    expected: set,
                    got: sig.parameter_set(),
                });
            }
            previous = Some(index);
        }
        Ok(MagnetarLeg {
            bitmap: bitmap_from_signers(signatures.iter().map(|(index, _)| *index), n),
            signatures: signatures.into_iter().map(|(_, sig)| sig).collect(),
        })
    }

    /// The encoding of the module docs.
    pub fn encode(&self) -> Vec<u8> {
        let signature_bytes: usize = self.signatures.iter().map(|s| s.as_bytes().len()).sum();
        let mut out = Vec::with_capacity(BITMAP_LEN_PREFIX + self.bitmap.len() + signature_bytes);
        // A bitmap longer than u32::MAX bytes would describe 2^35 validators; `new` builds
        // ceil(n / 8) bytes and `decode` reads at most u32::MAX.
        let len = u32::try_from(self.bitmap.len()).unwrap_or(u32::MAX);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&self.bitmap);
        for sig in &self.signatures {
            out.extend_from_slice(sig.as_bytes());
        }
        out
    }

    /// Decodes a leg whose signatures are of `set` (the epoch's parameter set, never read from the
    /// bytes). Checks the encoding only; canonicity for a validator set, quorum and signatures are
    /// [`verify_leg`]'s.
    ///
    /// Errors: [`LaneError::MagnetarLegTruncated`] when the input ends inside the length prefix or
    /// the bitmap; [`LaneError::MagnetarSignatureBytes`] unless the bytes after the bitmap are
    /// exactly one `set` signature per set bit (so truncated or oversized signatures, a missing or
    /// extra signature, and signatures of the other set are all refused here).
    pub fn decode(bytes: &[u8], set: ParameterSet) -> Result<MagnetarLeg, LaneError> {
        let truncated = |needed: usize| LaneError::MagnetarLegTruncated {
            needed,
            got: bytes.len(),
        };
        let (prefix, rest) = bytes
            .split_first_chunk::<BITMAP_LEN_PREFIX>()
            .ok_or(truncated(BITMAP_LEN_PREFIX))?;
        let bitmap_len = usize::try_from(u32::from_le_bytes(*prefix)).unwrap_or(usize::MAX);
        if bitmap_len > rest.len() {
            return Err(truncated(BITMAP_LEN_PREFIX.saturating_add(bitmap_len)));
        }
        let (bitmap, signature_bytes) = rest.split_at(bitmap_len);
        let signers: usize = bitmap.iter().map(|b| b.count_ones() as usize).sum();
        let sig_len = set.signature_len();
        let expected = signers.saturating_mul(sig_len);
        if signature_bytes.len() != expected {
            return Err(LaneError::MagnetarSignatureBytes {
                signers,
                set,
                expected,
                got: signature_bytes.len(),
            });
        }
        let signatures = signature_bytes
            .chunks_exact(sig_len)
            .map(|chunk| Signature::from_bytes(set, chunk))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| LaneError::MagnetarSignatureBytes {
                signers,
                set,
                expected,
                got: signature_bytes.len(),
            })?;
        Ok(MagnetarLeg {
            bitmap: bitmap.to_vec(),
            signatures,
        })
    }
}

/// Verifies a Magnetar leg on the round digest `mu` under the epoch's `keys`: canonical bitmap,
/// quorum stake, then every signature (context [`CERT_CONTEXT`]) in parallel (module docs).
///
/// Errors, in the order checked: [`LaneError::BitmapLength`], [`LaneError::NonMemberSigner`]
/// (a bit at or beyond `n`, padding bits included), [`LaneError::NoSigners`];
/// [`LaneError::NoQuorum`] when the signers hold at most 2/3 of the stake (no signature is
/// verified then); [`LaneError::MagnetarSignature`] naming the lowest signer index whose
/// signature fails: another parameter set than the keys'
/// ([`quasar_crypto::magnetar::MagnetarError::ParameterSetMismatch`]) or not a valid signature
/// on `mu` by that validator (`InvalidSignature`: another message, another signer's signature, a
/// non-member's).
pub fn verify_leg(
    keys: &MagnetarKeys,
    mu: &[u8; 32],
    leg: &MagnetarLeg,
) -> Result<VerifiedSigners, LaneError> {
    verify_leg_cancellable(keys, mu, leg, &AtomicBool::new(false))
}

/// [`verify_leg`] that stops between signatures once `cancel` is set (another leg of the same
/// certificate failed), returning [`LaneError::Cancelled`] unless a failure was already found.
pub fn verify_leg_cancellable(
    keys: &MagnetarKeys,
    mu: &[u8; 32],
    leg: &MagnetarLeg,
    cancel: &AtomicBool,
) -> Result<VerifiedSigners, LaneError> {
    let set = keys.validators();
    let (signers, stake) = quorum_signers(set, &leg.bitmap)?;
    let failure = signers
        .par_iter()
        .zip(leg.signatures.par_iter())
        .find_map_first(|(&index, sig)| {
            if cancel.load(Ordering::Acquire) {
                return Some(LaneError::Cancelled);
            }
            let verdict = match keys.keys.get(index) {
                Some(key) => key.verify(mu, CERT_CONTEXT, sig),
                None => {
                    return Some(LaneError::NonMemberSigner {
                        index,
                        n: keys.keys.len(),
                    })
                }
            };
            verdict
                .err()
                .map(|error| LaneError::MagnetarSignature { index, error })
        });
    match failure {
        Some(error) => Err(error),
        None => Ok(VerifiedSigners { signers, stake }),
    }
}
