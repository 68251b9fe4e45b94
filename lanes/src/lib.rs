//! Certificate verification lanes (docs/architecture.md §1, §3).
//!
//! Each leg of a QuasarCert has its own verifier here, and [`cert`] puts them together: round and
//! bundle digests, cert profiles, the epoch's keys and policy, and the parallel-max verifier.
//!
//! - [`ValidatorSet`]: the epoch's stake-weighted validators and the quorum rule.
//! - [`bls`]: the BLS lane, which turns a signer bitmap and an aggregate signature into a checked
//!   signer set (keys from the set's table, or through the pubkey decompression cache
//!   `quasar_crypto::bls_cache` for compressed keys).
//! - [`corona`]: the Corona lane: one compact Corona threshold signature under the epoch's group
//!   key.
//! - [`groth16`]: the Groth16 lane (BLS12-381): validated proof and verifying-key decoding,
//!   canonical public inputs, single and batch verification.
//! - [`pulsar`]: the Pulsar lane: one standard ML-DSA-65 signature (FIPS 204) under the epoch's
//!   group key.
//! - [`magnetar`]: the Magnetar lane: one SLH-DSA signature (FIPS 205) per signer, a signer bitmap
//!   and the quorum rule; the leg's bounded encoding; signatures verified in parallel.
//! - `fuzzing` (feature `fuzzing`): entry points of the `lanes/fuzz` targets (Groth16 and Magnetar
//!   leg decoders); `cert_fixture` (feature `fixture`): seeded keys and one QuasarCert per profile
//!   for tests and benchmarks. Neither is in a production build.
//!
//! Quorum rule (docs/architecture.md §2): a set of signers is a quorum when its stake is more than 2/3 of the
//! epoch's total stake, computed exactly in integers as `signed_stake * 3 > total_stake * 2`
//! (in `u128`, so it cannot overflow).
#![forbid(unsafe_code)]
// No panics where an attacker reaches (docs/architecture.md §10): every lane decodes peer bytes.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

pub mod bls;
pub mod cert;
#[cfg(feature = "fixture")]
pub mod cert_fixture;
pub mod corona;
// Fuzz entry points panic by contract when a property breaks (module docs).
#[allow(clippy::panic)]
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod groth16;
pub mod magnetar;
pub mod pulsar;
mod validators;

pub use validators::{Validator, ValidatorSet};

use groth16::Groth16Error;
use quasar_crypto::corona::encode::EncodingError;
use quasar_crypto::corona::scheme::VerifyError as CoronaVerifyError;
use quasar_crypto::magnetar::{MagnetarError, ParameterSet};
use quasar_crypto::mldsa::MlDsaError;

/// The context string of every FIPS 204 / FIPS 205 signature in a certificate leg (Pulsar and
/// Magnetar), docs/architecture.md §3: both sign the round digest μ with it.
pub const CERT_CONTEXT: &[u8] = b"quasar-cert-v1";

/// Why a certificate leg or a validator set was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaneError {
    /// A validator set must have at least one validator.
    #[error("validator set is empty")]
    EmptyValidatorSet,
    /// Every validator must carry stake.
    #[error("validator {index} has zero stake")]
    ZeroStake { index: usize },
    /// The stakes add up to more than `u64::MAX`.
    #[error("total stake overflows u64")]
    StakeOverflow,
    /// Two validators share one public key.
    #[error("validator {index} repeats the public key of an earlier validator")]
    DuplicateValidator { index: usize },
    /// The bitmap does not have exactly `ceil(n / 8)` bytes.
    #[error("signer bitmap has {got} bytes, expected {expected}")]
    BitmapLength { expected: usize, got: usize },
    /// A bit is set for an index that is not a member of the validator set.
    #[error("signer bitmap names index {index}, but the set has {n} validators")]
    NonMemberSigner { index: usize, n: usize },
    /// No bit is set.
    #[error("signer bitmap is empty")]
    NoSigners,
    /// The signers' stake is not more than 2/3 of the total.
    #[error("signers hold {signed} of {total} stake, not a quorum")]
    NoQuorum { signed: u64, total: u64 },
    /// A signer's compressed public key failed to decode (drop the certificate).
    #[error("signer key {index} rejected: {error}")]
    PublicKey {
        index: usize,
        error: quasar_crypto::bls::BlsError,
    },
    /// The aggregate signature failed to decode or to verify.
    #[error("aggregate signature rejected: {0}")]
    Signature(#[from] quasar_crypto::bls::BlsError),
    /// A leg being assembled names one signer twice.
    #[error("signer {index} appears twice")]
    DuplicateSigner { index: usize },
    /// Magnetar: the number of keys differs from the number of validators.
    #[error("{got} Magnetar keys for {expected} validators")]
    KeyCount { expected: usize, got: usize },
    /// Magnetar: validator `index`'s key or signature is of another SLH-DSA parameter set than
    /// the epoch's (or, when assembling a leg, than the lowest signer's).
    #[error("validator {index}: {got} where {expected} is required")]
    WrongParameterSet {
        index: usize,
        expected: ParameterSet,
        got: ParameterSet,
    },
    /// Magnetar: the leg ends inside its bitmap length prefix or its bitmap (drop the leg).
    #[error("Magnetar leg of {got} bytes is shorter than its header requires ({needed})")]
    MagnetarLegTruncated { needed: usize, got: usize },
    /// Magnetar: the bytes after the bitmap are not exactly one signature per signer (drop the
    /// leg).
    #[error("Magnetar leg has {got} signature bytes; {signers} signers of {set} need {expected}")]
    MagnetarSignatureBytes {
        signers: usize,
        set: ParameterSet,
        expected: usize,
        got: usize,
    },
    /// Magnetar: the signature of signer `index` (the lowest failing index) does not verify
    /// (drop the certificate).
    #[error("signer {index}: Magnetar signature rejected: {error}")]
    MagnetarSignature { index: usize, error: MagnetarError },
    /// Pulsar: the epoch's group key is not a 1952-byte ML-DSA-65 public key.
    #[error("Pulsar group key rejected: {0}")]
    PulsarGroupKey(MlDsaError),
    /// Pulsar: the signature is not 3309 bytes or does not verify (drop the certificate).
    #[error("Pulsar signature rejected: {0}")]
    PulsarSignature(MlDsaError),
    /// Corona: the epoch's group key is not a 4,640-byte Corona group key.
    #[error("Corona group key rejected: {0}")]
    CoronaGroupKey(EncodingError),
    /// Corona: the leg is not a canonical compact Corona signature (drop the certificate).
    #[error("Corona signature malformed: {0}")]
    CoronaEncoding(EncodingError),
    /// Corona: the signature does not verify (drop the certificate).
    #[error("Corona signature rejected: {0}")]
    CoronaSignature(CoronaVerifyError),
    /// The arithmetic backend (the QuasarGPU adapter) failed a batched call while verifying a
    /// leg: nothing was decided about the leg, and nobody is at fault but the local backend.
    #[error("leg not verified, arithmetic backend failed: {0}")]
    Arithmetic(quasar_crypto::accel::AccelError),
    /// Groth16: the proof or an input does not decode, or the proof does not verify.
    #[error("Groth16 proof rejected: {0}")]
    Groth16(Groth16Error),
    /// Groth16: the leg's public inputs are not (the digest the leg must prove, the epoch's h_x).
    #[error("Groth16 leg proves another statement (digest or validator-set commitment)")]
    Groth16Statement,
    /// A leg body has the wrong length for its kind.
    #[error("leg body of {got} bytes, expected {expected}")]
    LegLength { expected: usize, got: usize },
    /// The epoch has no key for this leg (a certificate policy is built only with every key its
    /// profile needs, so this is reached only through misuse).
    #[error("the epoch has no key for this leg")]
    KeyAbsent,
    /// Verification stopped because another leg of the certificate already failed.
    #[error("cancelled: another leg failed")]
    Cancelled,
}
