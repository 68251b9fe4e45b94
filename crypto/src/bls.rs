//! BLS12-381 signatures, min-pk variant, proof-of-possession ciphersuite.
//!
//! Implements `BLS_SIG_BLS12381G2_XMD:SHA-256_SSWU_RO_POP_` of draft-irtf-cfrg-bls-signature-05
//! (§4.2.3, "Proof of possession"): public keys are 48-byte compressed G1 points, signatures are
//! 96-byte compressed G2 points (ZCash serialization, draft §2.5 / Appendix A), messages are hashed
//! to G2 with hash_to_curve (RFC 9380, suite `BLS12381G2_XMD:SHA-256_SSWU_RO_`). The arithmetic is
//! `blst::min_pk`; this module adds the type discipline of docs/architecture.md §4: a key that exists has
//! passed its subgroup check.
//!
//! # What the types guarantee
//!
//! - A [`PublicKey`] that exists is on the curve, in the prime-order subgroup G1 and not the
//!   identity: the only constructors are [`SecretKey::public_key`] and [`PublicKey::from_bytes`],
//!   which runs KeyValidate (draft §2.5). Verification therefore never re-checks keys.
//! - A [`Signature`] built by [`Signature::from_bytes`] is in G2 and not the identity. An aggregate
//!   built by [`Signature::aggregate`] is a sum of such points, hence in G2, but may be the
//!   identity (e.g. `s + (-s)`); it is not re-validated, and an identity aggregate fails
//!   verification (see the deviations below).
//!
//! # Verification paths
//!
//! | function | checks | cost |
//! |---|---|---|
//! | [`PublicKey::verify`] | one signature (CoreVerify, §2.7) | 1 hash to G2, 2 Miller loops, 1 final exp. |
//! | [`fast_aggregate_verify`], [`AggregatePublicKey::verify`] | one aggregate, one message (§3.3.4) | key additions + one verify |
//! | [`aggregate_verify`] | one aggregate, a message per key (§2.9, as §3.3 uses it) | 1 hash and 1 Miller loop per key, 1 final exp. |
//! | [`batch_verify`] | independent signatures, reporting each invalid one | per item: 1 hash, 1 short G1 mult., shared Miller loop; 1 final exp. |
//!
//! # Deviations from the draft, and why
//!
//! - Decoding rejects the identity point for signatures too (the draft only requires the subgroup
//!   check). An honest signer never produces the identity, and rejecting it early keeps obviously
//!   bogus votes away from the pairing code.
//! - [`fast_aggregate_verify`] rejects duplicate public keys ([`BlsError::DuplicateSigner`]). The
//!   draft allows them, but in Quasar a duplicate means a double-counted signer, which would let a
//!   certificate claim more stake than it has.
//! - [`aggregate_verify`] rejects an identity aggregate signature ([`BlsError::IdentityPoint`]).
//!   Only keys that cancel (`pk` and `-pk`, one holder) signing one message could make it verify;
//!   no honest set of signatures sums to the identity.
//! - Rogue-key attacks on [`fast_aggregate_verify`] are prevented by the PoP ciphersuite: every
//!   validator key must pass [`PublicKey::verify_possession`] at registration (draft §3.3).

use std::collections::HashSet;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};

use blst::min_pk;
use blst::{MultiPoint, BLST_ERROR};
use rand::{CryptoRng, RngCore};

/// Domain separation tag for signatures (draft-irtf-cfrg-bls-signature-05 §4.2.3).
pub const SIGNATURE_DST: &[u8] = b"BLS_SIG_BLS12381G2_XMD:SHA-256_SSWU_RO_POP_";
/// Domain separation tag for proofs of possession (draft-irtf-cfrg-bls-signature-05 §4.2.3).
pub const POP_DST: &[u8] = b"BLS_POP_BLS12381G2_XMD:SHA-256_SSWU_RO_POP_";
/// Length in bytes of a compressed G1 public key.
pub const PUBLIC_KEY_LEN: usize = 48;
/// Length in bytes of a compressed G2 signature or proof of possession.
pub const SIGNATURE_LEN: usize = 96;
/// Length in bytes of a serialized secret key (big-endian scalar mod r).
pub const SECRET_KEY_LEN: usize = 32;

/// The compressed encoding of the G2 identity: the compression and infinity flags, then zeros.
const IDENTITY_SIGNATURE: [u8; SIGNATURE_LEN] = {
    let mut bytes = [0u8; SIGNATURE_LEN];
    bytes[0] = 0xc0;
    bytes
};

/// Why a BLS operation failed. Every variant is a property of the input: the caller drops the
/// message (and may penalize the peer that sent it); none is fatal to the node.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlsError {
    /// The byte string has the wrong length for the type being decoded.
    #[error("invalid length: expected {expected} bytes, got {got}")]
    InvalidLength {
        /// Required length in bytes.
        expected: usize,
        /// Length that was supplied.
        got: usize,
    },
    /// Not a valid compressed point: bad flag bits, a coordinate ≥ p, or not on the curve.
    #[error("invalid point encoding")]
    InvalidEncoding,
    /// The point is on the curve but not in the prime-order subgroup.
    #[error("point not in the prime-order subgroup")]
    NotInSubgroup,
    /// The point is the identity (point at infinity), which is never a valid key or signature.
    #[error("identity point")]
    IdentityPoint,
    /// The secret key bytes are zero or not below the group order r.
    #[error("invalid secret key")]
    InvalidSecretKey,
    /// The pairing check failed: the signature does not verify.
    #[error("invalid signature")]
    InvalidSignature,
    /// Aggregation of an empty list of signatures was requested.
    #[error("cannot aggregate an empty list of signatures")]
    EmptyAggregate,
    /// Aggregate verification was requested with no public keys.
    #[error("empty signer set")]
    EmptySignerSet,
    /// The same public key appears more than once in a signer set.
    #[error("duplicate signer in signer set")]
    DuplicateSigner,
}

/// Maps a blst decoding/validation error to [`BlsError`].
fn decode_error(err: BLST_ERROR) -> BlsError {
    match err {
        BLST_ERROR::BLST_POINT_NOT_IN_GROUP => BlsError::NotInSubgroup,
        BLST_ERROR::BLST_PK_IS_INFINITY => BlsError::IdentityPoint,
        _ => BlsError::InvalidEncoding,
    }
}

/// Checks `bytes.len() == expected`.
fn check_len(bytes: &[u8], expected: usize) -> Result<(), BlsError> {
    if bytes.len() == expected {
        Ok(())
    } else {
        Err(BlsError::InvalidLength {
            expected,
            got: bytes.len(),
        })
    }
}

/// A BLS secret key: a scalar in [1, r-1]. Zeroized on drop (by `blst`); `Debug` never prints it.
pub struct SecretKey {
    inner: min_pk::SecretKey,
}

impl SecretKey {
    /// Derives a secret key from a 32-byte seed with KeyGen (draft-irtf-cfrg-bls-signature-05
    /// §2.3: HKDF-SHA-256, salt `BLS-SIG-KEYGEN-SALT-`, empty `key_info`). Deterministic: the same
    /// seed always gives the same key. The seed must be uniformly random secret material.
    pub fn from_seed(seed: &[u8; 32]) -> SecretKey {
        // blst rejects only IKM shorter than 32 bytes; the seed is exactly 32 by its type.
        #[allow(clippy::expect_used)]
        let inner = min_pk::SecretKey::key_gen(seed, &[]).expect("IKM is 32 bytes");
        SecretKey { inner }
    }

    /// Decodes a 32-byte big-endian scalar (draft §2.3 `SK`).
    ///
    /// Errors: [`BlsError::InvalidLength`] unless exactly [`SECRET_KEY_LEN`] bytes;
    /// [`BlsError::InvalidSecretKey`] for zero or a value ≥ r.
    pub fn from_bytes(bytes: &[u8]) -> Result<SecretKey, BlsError> {
        check_len(bytes, SECRET_KEY_LEN)?;
        let inner = min_pk::SecretKey::from_bytes(bytes).map_err(|_| BlsError::InvalidSecretKey)?;
        Ok(SecretKey { inner })
    }

    /// The 32-byte big-endian scalar. The caller owns this copy of the secret and should zeroize it.
    pub fn to_bytes(&self) -> [u8; SECRET_KEY_LEN] {
        self.inner.to_bytes()
    }

    /// SkToPk (draft §2.4): the 48-byte-compressible G1 public key `sk·G1`.
    pub fn public_key(&self) -> PublicKey {
        PublicKey::from_point(self.inner.sk_to_pk())
    }

    /// Sign (draft §2.6, CoreSign) under [`SIGNATURE_DST`]: returns the G2 point `sk·H(msg)`.
    pub fn sign(&self, msg: &[u8]) -> Signature {
        Signature::from_point(self.inner.sign(msg, SIGNATURE_DST, &[]))
    }

    /// PopProve (draft §3.3.2): signs the 48-byte compressed public key under [`POP_DST`].
    pub fn prove_possession(&self) -> ProofOfPossession {
        self.prove_possession_bound(&[])
    }

    /// PopProve with `context` prepended to the message (blst's augmentation): signs
    /// `context ‖ public key` under [`POP_DST`], so the proof also binds what `context` names
    /// (a validator registration binds its sender and chain: docs/architecture.md §11). An
    /// empty context is [`SecretKey::prove_possession`].
    pub fn prove_possession_bound(&self, context: &[u8]) -> ProofOfPossession {
        let pk = self.public_key();
        ProofOfPossession(Signature::from_point(
            self.inner.sign(&pk.bytes, POP_DST, context),
        ))
    }
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretKey(<redacted>)")
    }
}

/// A validated BLS public key: a G1 point in the prime-order subgroup, not the identity.
///
/// Exists only through [`SecretKey::public_key`] or [`PublicKey::from_bytes`] (KeyValidate).
/// Equality and hashing use the 48-byte compressed encoding, which is unique per point.
#[derive(Clone, Copy)]
pub struct PublicKey {
    point: min_pk::PublicKey,
    bytes: [u8; PUBLIC_KEY_LEN],
}

impl PublicKey {
    fn from_point(point: min_pk::PublicKey) -> PublicKey {
        PublicKey {
            bytes: point.compress(),
            point,
        }
    }

    /// Decodes a 48-byte compressed G1 point and runs KeyValidate (draft §2.5).
    ///
    /// Errors: [`BlsError::InvalidLength`] unless exactly [`PUBLIC_KEY_LEN`] bytes;
    /// [`BlsError::InvalidEncoding`] for an uncompressed/malformed encoding, a coordinate ≥ p or a
    /// point off the curve; [`BlsError::NotInSubgroup`]; [`BlsError::IdentityPoint`] for the
    /// infinity encoding (which plain point *deserialization* would accept).
    pub fn from_bytes(bytes: &[u8]) -> Result<PublicKey, BlsError> {
        check_len(bytes, PUBLIC_KEY_LEN)?;
        let point = min_pk::PublicKey::uncompress(bytes).map_err(decode_error)?;
        point.validate().map_err(decode_error)?;
        Ok(PublicKey::from_point(point))
    }

    /// The 48-byte compressed encoding.
    pub fn to_bytes(&self) -> [u8; PUBLIC_KEY_LEN] {
        self.bytes
    }

    /// Verify (draft §2.7, CoreVerify) `sig` over `msg` under [`SIGNATURE_DST`].
    ///
    /// Errors: [`BlsError::InvalidSignature`] when the pairing check fails.
    pub fn verify(&self, msg: &[u8], sig: &Signature) -> Result<(), BlsError> {
        // Both points were subgroup-checked when they were decoded.
        match sig
            .point
            .verify(false, msg, SIGNATURE_DST, &[], &self.point, false)
        {
            BLST_ERROR::BLST_SUCCESS => Ok(()),
            _ => Err(BlsError::InvalidSignature),
        }
    }

    /// PopVerify (draft §3.3.3): checks `pop` is a signature over this key's 48-byte compressed
    /// encoding under [`POP_DST`].
    ///
    /// Errors: [`BlsError::InvalidSignature`] when the pairing check fails.
    pub fn verify_possession(&self, pop: &ProofOfPossession) -> Result<(), BlsError> {
        self.verify_possession_bound(pop, &[])
    }

    /// PopVerify of [`SecretKey::prove_possession_bound`]: `pop` is a signature over
    /// `context ‖` this key's compressed encoding under [`POP_DST`].
    ///
    /// Errors: [`BlsError::InvalidSignature`] when the pairing check fails.
    pub fn verify_possession_bound(
        &self,
        pop: &ProofOfPossession,
        context: &[u8],
    ) -> Result<(), BlsError> {
        match pop
            .0
            .point
            .verify(false, &self.bytes, POP_DST, context, &self.point, false)
        {
            BLST_ERROR::BLST_SUCCESS => Ok(()),
            _ => Err(BlsError::InvalidSignature),
        }
    }
}

impl PartialEq for PublicKey {
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes
    }
}

impl Eq for PublicKey {}

impl std::hash::Hash for PublicKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.bytes.hash(state);
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({})", hex::encode(self.bytes))
    }
}

/// A BLS signature: a G2 point in the prime-order subgroup.
///
/// [`Signature::from_bytes`] also rejects the identity; an aggregate from
/// [`Signature::aggregate`] may be the identity (see the module docs).
#[derive(Clone, Copy)]
pub struct Signature {
    point: min_pk::Signature,
    bytes: [u8; SIGNATURE_LEN],
}

impl Signature {
    fn from_point(point: min_pk::Signature) -> Signature {
        Signature {
            bytes: point.compress(),
            point,
        }
    }

    /// Decodes a 96-byte compressed G2 point, checks subgroup membership and rejects the identity
    /// (draft §2.8 signature_to_point + subgroup_check; identity rejection is Quasar's addition).
    ///
    /// Errors: [`BlsError::InvalidLength`] unless exactly [`SIGNATURE_LEN`] bytes;
    /// [`BlsError::InvalidEncoding`]; [`BlsError::NotInSubgroup`]; [`BlsError::IdentityPoint`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Signature, BlsError> {
        check_len(bytes, SIGNATURE_LEN)?;
        let point = min_pk::Signature::uncompress(bytes).map_err(decode_error)?;
        point.validate(true).map_err(decode_error)?;
        Ok(Signature::from_point(point))
    }

    /// The 96-byte compressed encoding.
    pub fn to_bytes(&self) -> [u8; SIGNATURE_LEN] {
        self.bytes
    }

    /// Aggregate (draft §2.8): the G2 sum of `sigs`. The inputs were validated when decoded, so
    /// the sum is in G2; it is not re-validated and may be the identity.
    ///
    /// Errors: [`BlsError::EmptyAggregate`] for an empty slice.
    pub fn aggregate(sigs: &[Signature]) -> Result<Signature, BlsError> {
        if sigs.is_empty() {
            return Err(BlsError::EmptyAggregate);
        }
        let refs: Vec<&min_pk::Signature> = sigs.iter().map(|s| &s.point).collect();
        let agg = min_pk::AggregateSignature::aggregate(&refs, false)
            .map_err(|_| BlsError::EmptyAggregate)?;
        Ok(Signature::from_point(agg.to_signature()))
    }
}

impl PartialEq for Signature {
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes
    }
}

impl Eq for Signature {}

impl fmt::Debug for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Signature({})", hex::encode(self.bytes))
    }
}

/// A proof of possession (draft §3.3): a 96-byte G2 signature over the signer's compressed public
/// key under [`POP_DST`]. Checked once, when a validator key is registered.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ProofOfPossession(Signature);

impl ProofOfPossession {
    /// Decodes 96 compressed bytes with the same checks and errors as [`Signature::from_bytes`].
    pub fn from_bytes(bytes: &[u8]) -> Result<ProofOfPossession, BlsError> {
        Signature::from_bytes(bytes).map(ProofOfPossession)
    }

    /// The 96-byte compressed encoding.
    pub fn to_bytes(&self) -> [u8; SIGNATURE_LEN] {
        self.0.to_bytes()
    }
}

impl fmt::Debug for ProofOfPossession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ProofOfPossession({})", hex::encode(self.0.bytes))
    }
}

/// Keys summed per call of blst's batched affine addition (`blst_p1s_add`, Montgomery's
/// simultaneous inversion: one field inversion per call). blst hands 384 or more points to its
/// thread pool; staying below that keeps one aggregation on the caller's thread, so the parallelism
/// belongs to whoever schedules the verifications (docs/architecture.md §3).
const AGGREGATE_CHUNK: usize = 256;

/// A sum of validated public keys: a G1 point in projective form, the aggregate key of
/// FastAggregateVerify (draft-irtf-cfrg-bls-signature-05 §3.3.4, step 1).
///
/// Every summand passed KeyValidate, so the sum is in G1; it may be the identity (keys that cancel,
/// such as `pk` and `-pk`), and then [`AggregatePublicKey::verify`] fails. Equality is equality of
/// the points (not of a representation).
#[derive(Clone, Copy)]
pub struct AggregatePublicKey {
    point: min_pk::AggregatePublicKey,
}

impl AggregatePublicKey {
    /// The G1 sum of `keys`, with batched affine additions (about 6 field multiplications per key).
    /// Keys are summed as given; a key listed twice counts twice, so callers that need a signer
    /// *set* reject repeats first (as [`fast_aggregate_verify`] does).
    ///
    /// Errors: [`BlsError::EmptySignerSet`] when `keys` yields nothing.
    pub fn aggregate<'a>(
        keys: impl IntoIterator<Item = &'a PublicKey>,
    ) -> Result<AggregatePublicKey, BlsError> {
        let mut keys = keys.into_iter();
        let mut chunk: Vec<min_pk::PublicKey> = Vec::new();
        let mut sum: Option<min_pk::AggregatePublicKey> = None;
        loop {
            chunk.clear();
            chunk.extend(keys.by_ref().take(AGGREGATE_CHUNK).map(|k| k.point));
            if chunk.is_empty() {
                break;
            }
            let part = MultiPoint::add(chunk.as_slice());
            match sum.as_mut() {
                Some(sum) => sum.add_aggregate(&part),
                None => sum = Some(part),
            }
        }
        sum.map(|point| AggregatePublicKey { point })
            .ok_or(BlsError::EmptySignerSet)
    }

    /// Adds `other` to this aggregate (G1 addition).
    pub fn add(&mut self, other: &AggregatePublicKey) {
        self.point.add_aggregate(&other.point);
    }

    /// Subtracts `other` from this aggregate (G1 addition of the negation): with a precomputed
    /// sum over a whole validator set, the signers' key is the total minus the non-signers.
    pub fn subtract(&mut self, other: &AggregatePublicKey) {
        self.point.sub_aggregate(&other.point);
    }

    /// CoreVerify (draft §2.7) of `sig` over `msg` under [`SIGNATURE_DST`] with this aggregate as
    /// the public key: the pairing check of FastAggregateVerify (draft §3.3.4, steps 2-3), one
    /// hash to G2 and two Miller loops sharing one final exponentiation.
    ///
    /// Errors: [`BlsError::InvalidSignature`] when the pairing check fails, including when this
    /// aggregate is the identity.
    pub fn verify(&self, msg: &[u8], sig: &Signature) -> Result<(), BlsError> {
        let key = self.point.to_public_key();
        // `sig` was subgroup-checked when it was decoded (or is a sum of such points).
        match sig
            .point
            .fast_aggregate_verify_pre_aggregated(false, msg, SIGNATURE_DST, &key)
        {
            BLST_ERROR::BLST_SUCCESS => Ok(()),
            _ => Err(BlsError::InvalidSignature),
        }
    }
}

impl PartialEq for AggregatePublicKey {
    fn eq(&self, other: &Self) -> bool {
        <&blst::blst_p1>::from(&self.point) == <&blst::blst_p1>::from(&other.point)
    }
}

impl Eq for AggregatePublicKey {}

impl fmt::Debug for AggregatePublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let affine = self.point.to_public_key().compress();
        write!(f, "AggregatePublicKey({})", hex::encode(affine))
    }
}

/// FastAggregateVerify (draft §3.3.4): checks that `aggregate` is the sum of signatures on `msg`
/// (under [`SIGNATURE_DST`]) by exactly the keys in `public_keys`, with one pairing check over the
/// aggregated public key ([`AggregatePublicKey`]).
///
/// Safe only for keys whose proof of possession was verified (rogue-key attack otherwise). Keys are
/// already subgroup-checked by construction and are not re-checked.
///
/// Errors, checked before any pairing: [`BlsError::EmptySignerSet`] for no keys;
/// [`BlsError::DuplicateSigner`] when a key appears twice (Quasar deviation, see module docs).
/// Then [`BlsError::InvalidSignature`] when the pairing check fails.
pub fn fast_aggregate_verify(
    public_keys: &[PublicKey],
    msg: &[u8],
    aggregate: &Signature,
) -> Result<(), BlsError> {
    if public_keys.is_empty() {
        return Err(BlsError::EmptySignerSet);
    }
    let mut seen = HashSet::with_capacity(public_keys.len());
    if !public_keys.iter().all(|pk| seen.insert(pk.bytes)) {
        return Err(BlsError::DuplicateSigner);
    }
    AggregatePublicKey::aggregate(public_keys)?.verify(msg, aggregate)
}

/// AggregateVerify of the PoP scheme (draft §3.3: CoreAggregateVerify of §2.9): checks that
/// `aggregate` is the sum of one signature per `(public key, message)` pair, under
/// [`SIGNATURE_DST`]. Messages need not be distinct (the PoP scheme defends against rogue keys).
///
/// Cost: one hash to G2 and one Miller loop per pair, one more Miller loop for the signature, one
/// final exponentiation.
///
/// Errors: [`BlsError::EmptySignerSet`] for no pairs (IETF semantics: an empty aggregate verifies
/// nothing); [`BlsError::IdentityPoint`] when `aggregate` is the identity (only keys that cancel,
/// like `pk` and `-pk` on one message, could make it verify; Quasar refuses it, as it refuses an
/// identity signature at decoding); [`BlsError::InvalidSignature`] when the pairing check fails.
pub fn aggregate_verify(
    items: &[(&PublicKey, &[u8])],
    aggregate: &Signature,
) -> Result<(), BlsError> {
    if items.is_empty() {
        return Err(BlsError::EmptySignerSet);
    }
    if aggregate.bytes == IDENTITY_SIGNATURE {
        return Err(BlsError::IdentityPoint);
    }
    let terms: Vec<Term<'_>> = items
        .iter()
        .map(|&(key, message)| Term {
            key,
            message,
            scalar: None,
        })
        .collect();
    if pairing_check(&terms, &aggregate.point) {
        Ok(())
    } else {
        Err(BlsError::InvalidSignature)
    }
}

/// Random bits in each batch-verification scalar: 64 drawn bits plus bit 64 always set, so every
/// scalar is non-zero and below the group order, and the 2^64 possible values are distinct mod r.
const BATCH_SCALAR_BITS: usize = 65;
/// Little-endian bytes holding one [`BATCH_SCALAR_BITS`]-bit scalar.
const BATCH_SCALAR_BYTES: usize = 9;
/// Terms one thread takes at a time when Miller loops are shared out: two of blst's 8-pair
/// Miller-loop groups. Fewer terms than two chunks stay on the calling thread.
const PAIRS_PER_CHUNK: usize = 16;

/// Batch verification of independent signatures (different messages and keys), with the small
/// random exponents test (Bellare, Garay, Rabin, EUROCRYPT 1998; for BLS: V. Buterin, "Fast
/// verification of multiple BLS signatures", ethresear.ch/t/5407) and bisection to name the
/// invalid ones (as in commonware's `bls12381` batch verifier).
///
/// `items[i] = (public key, message, signature)`, every message signed under [`SIGNATURE_DST`].
/// With fresh scalars `r_i` (65-bit, see above) from the operating system's RNG, checks
/// `e(Σ r_i·sig_i, g1) == Π e(r_i·pk_i, H(msg_i))`: one G2 multi-scalar multiplication for the
/// left side, one hash to G2, one 65-bit G1 multiplication and one shared Miller loop per item on
/// the right, one final exponentiation. All points are in their prime-order subgroups by type, so
/// if any signature is invalid the check passes with probability at most 2^-64.
///
/// Returns `Ok(())` when every signature verifies (an empty batch included), else
/// `Err(indices)`: the ascending indices of exactly the items whose signature does not verify on
/// its own. On failure the batch is split in halves and each half re-checked, down to single
/// [`PublicKey::verify`] calls: about `2·k·log2(n/k)` sub-checks for `k` invalid of `n`; an index is
/// named only after its own verification failed, so a valid signature is never named. Duplicate
/// items are checked (and named) independently.
///
/// The Miller loops of a batch of 32 or more are shared out over the machine's cores in chunks of
/// 16 (`std::thread::available_parallelism` threads taking chunks from a counter), as blst's own
/// `verify_multiple_aggregate_signatures` does.
pub fn batch_verify(items: &[(&PublicKey, &[u8], &Signature)]) -> Result<(), Vec<usize>> {
    batch_verify_with_rng(items, &mut rand::rngs::OsRng)
}

/// [`batch_verify`] with the random scalars drawn from `rng`, a cryptographically secure RNG the
/// signers cannot predict (a seeded RNG only in tests).
pub fn batch_verify_with_rng<R: RngCore + CryptoRng + ?Sized>(
    items: &[(&PublicKey, &[u8], &Signature)],
    rng: &mut R,
) -> Result<(), Vec<usize>> {
    let scalars: Vec<[u8; BATCH_SCALAR_BYTES]> = items
        .iter()
        .map(|_| {
            let mut r = [0u8; BATCH_SCALAR_BYTES];
            let (random, top) = r.split_at_mut(BATCH_SCALAR_BYTES - 1);
            rng.fill_bytes(random);
            top.fill(1);
            r
        })
        .collect();
    let mut invalid = Vec::new();
    find_invalid(items, &scalars, 0, false, &mut invalid);
    if invalid.is_empty() {
        Ok(())
    } else {
        Err(invalid)
    }
}

/// Appends to `invalid` the indices (offset by `first`) of the items that do not verify.
/// `known_bad`: the caller already knows the batch check of these items fails.
fn find_invalid(
    items: &[(&PublicKey, &[u8], &Signature)],
    scalars: &[[u8; BATCH_SCALAR_BYTES]],
    first: usize,
    known_bad: bool,
    invalid: &mut Vec<usize>,
) {
    if let [(key, message, sig)] = items {
        if key.verify(message, sig).is_err() {
            invalid.push(first);
        }
        return;
    }
    if items.is_empty() || (!known_bad && batch_holds(items, scalars)) {
        return;
    }
    // The batch fails, so some item is invalid: if the left half turns out clean, the right
    // half is known to fail without checking it as a whole.
    let mid = items.len() / 2;
    let (left, right) = items.split_at(mid);
    let (left_scalars, right_scalars) = scalars.split_at(mid.min(scalars.len()));
    let before = invalid.len();
    find_invalid(left, left_scalars, first, false, invalid);
    let left_clean = invalid.len() == before;
    find_invalid(right, right_scalars, first + mid, left_clean, invalid);
}

/// The randomized batch check `e(Σ r_i·sig_i, g1) == Π e(r_i·pk_i, H(msg_i))`.
fn batch_holds(
    items: &[(&PublicKey, &[u8], &Signature)],
    scalars: &[[u8; BATCH_SCALAR_BYTES]],
) -> bool {
    if items.is_empty() || items.len() != scalars.len() {
        return items.is_empty();
    }
    let sigs: Vec<min_pk::Signature> = items.iter().map(|(_, _, sig)| sig.point).collect();
    let combined = MultiPoint::mult(sigs.as_slice(), &scalars.concat(), BATCH_SCALAR_BITS);
    let terms: Vec<Term<'_>> = items
        .iter()
        .zip(scalars)
        .map(|(&(key, message, _), scalar)| Term {
            key,
            message,
            scalar: Some(scalar),
        })
        .collect();
    pairing_check(&terms, &combined.to_signature())
}

/// One pair `(r·pk, H(message))` of a product of pairings; no scalar means `r = 1`.
struct Term<'a> {
    key: &'a PublicKey,
    message: &'a [u8],
    scalar: Option<&'a [u8; BATCH_SCALAR_BYTES]>,
}

/// Whether `e(signature, g1) == Π e(r_i·pk_i, H(msg_i))` over `terms` (non-empty), under
/// [`SIGNATURE_DST`]: Miller loops of the terms (spread over threads when there are many), one
/// Miller loop for the signature, one final exponentiation.
fn pairing_check(terms: &[Term<'_>], signature: &min_pk::Signature) -> bool {
    let Some(pairing) = miller_loops(terms) else {
        return false;
    };
    // GT's one: the product of pairings must be one when the signature is the identity.
    let mut expected = blst::blst_fp12::default();
    let affine = <&blst::blst_p2_affine>::from(signature);
    if *affine != blst::blst_p2_affine::default() {
        blst::Pairing::aggregated(&mut expected, affine);
    }
    pairing.finalverify(Some(&expected))
}

/// The committed Miller-loop accumulator of `terms` (non-empty). With many terms, up to
/// `available_parallelism` threads (this one and scoped helpers) take chunks of
/// [`PAIRS_PER_CHUNK`] terms from a shared counter, each into its own accumulator, and the
/// accumulators are merged: a core that is busy elsewhere simply takes fewer chunks. `None` if
/// blst refuses a term (only an identity key, which the types exclude).
fn miller_loops(terms: &[Term<'_>]) -> Option<blst::Pairing<'static>> {
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(terms.len() / PAIRS_PER_CHUNK)
        .max(1);
    let next = AtomicUsize::new(0);
    let work = || -> Option<blst::Pairing<'static>> {
        let mut pairing = blst::Pairing::new(true, SIGNATURE_DST);
        loop {
            let start = next.fetch_add(PAIRS_PER_CHUNK, Ordering::Relaxed);
            let rest = terms.get(start..).unwrap_or_default();
            if rest.is_empty() {
                break;
            }
            miller_accumulate(&mut pairing, rest.get(..PAIRS_PER_CHUNK).unwrap_or(rest))?;
        }
        pairing.commit();
        Some(pairing)
    };
    if threads == 1 {
        return work();
    }
    std::thread::scope(|scope| {
        // A helper that cannot be started leaves its share to the others.
        let helpers: Vec<_> = (1..threads)
            .filter_map(|_| std::thread::Builder::new().spawn_scoped(scope, work).ok())
            .collect();
        let mut total = work()?;
        for helper in helpers {
            let part = helper.join().ok()??;
            if total.merge(&part) != BLST_ERROR::BLST_SUCCESS {
                return None;
            }
        }
        Some(total)
    })
}

/// Hashes each term's message to G2 and adds its Miller loop to `pairing` (blst runs them 8 pairs
/// at a time). `None` if blst refuses a term.
fn miller_accumulate(pairing: &mut blst::Pairing<'static>, terms: &[Term<'_>]) -> Option<()> {
    for term in terms {
        let key = <&blst::blst_p1_affine>::from(&term.key.point);
        // The keys are subgroup-checked by type (no re-check); the signature side is handled by
        // the caller (`&()` passes no signature).
        let status = match term.scalar {
            Some(r) => pairing.mul_n_aggregate(
                key,
                false,
                &(),
                false,
                r,
                BATCH_SCALAR_BITS,
                term.message,
                &[],
            ),
            None => pairing.aggregate(key, false, &(), false, term.message, &[]),
        };
        if status != BLST_ERROR::BLST_SUCCESS {
            return None;
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u8) -> SecretKey {
        SecretKey::from_seed(&[i; 32])
    }

    #[test]
    fn sign_verify_round_trip() {
        let sk = key(1);
        let pk = sk.public_key();
        let sig = sk.sign(b"block 7");
        assert_eq!(pk.verify(b"block 7", &sig), Ok(()));
        // Survives encoding.
        let pk2 = PublicKey::from_bytes(&pk.to_bytes()).unwrap();
        let sig2 = Signature::from_bytes(&sig.to_bytes()).unwrap();
        assert_eq!(pk2, pk);
        assert_eq!(sig2, sig);
        assert_eq!(pk2.verify(b"block 7", &sig2), Ok(()));
    }

    #[test]
    fn wrong_message_or_wrong_key_fails() {
        let sk = key(1);
        let sig = sk.sign(b"block 7");
        assert_eq!(
            sk.public_key().verify(b"block 8", &sig),
            Err(BlsError::InvalidSignature)
        );
        assert_eq!(
            key(2).public_key().verify(b"block 7", &sig),
            Err(BlsError::InvalidSignature)
        );
    }

    #[test]
    fn proof_of_possession_round_trip() {
        let sk = key(3);
        let pk = sk.public_key();
        let pop = sk.prove_possession();
        assert_eq!(pk.verify_possession(&pop), Ok(()));
        let pop2 = ProofOfPossession::from_bytes(&pop.to_bytes()).unwrap();
        assert_eq!(pk.verify_possession(&pop2), Ok(()));
        // Someone else's PoP does not prove possession of this key.
        assert_eq!(
            pk.verify_possession(&key(4).prove_possession()),
            Err(BlsError::InvalidSignature)
        );
    }

    /// Domain separation: a PoP is not a vote signature over the key bytes, and a vote signature
    /// over the key bytes is not a PoP.
    #[test]
    fn pop_and_signature_are_domain_separated() {
        let sk = key(5);
        let pk = sk.public_key();
        let pop = sk.prove_possession();
        let as_sig = Signature::from_bytes(&pop.to_bytes()).unwrap();
        assert_eq!(
            pk.verify(&pk.to_bytes(), &as_sig),
            Err(BlsError::InvalidSignature)
        );
        let vote = sk.sign(&pk.to_bytes());
        let as_pop = ProofOfPossession::from_bytes(&vote.to_bytes()).unwrap();
        assert_eq!(
            pk.verify_possession(&as_pop),
            Err(BlsError::InvalidSignature)
        );
    }

    #[test]
    fn fast_aggregate_verify_accepts_quorum_and_rejects_bad_sets() {
        let sks: Vec<SecretKey> = (10..14).map(key).collect();
        let pks: Vec<PublicKey> = sks.iter().map(SecretKey::public_key).collect();
        let msg = b"round digest";
        let sigs: Vec<Signature> = sks.iter().map(|sk| sk.sign(msg)).collect();
        let agg = Signature::aggregate(&sigs).unwrap();
        assert_eq!(fast_aggregate_verify(&pks, msg, &agg), Ok(()));
        // Missing signer, wrong message.
        assert_eq!(
            fast_aggregate_verify(&pks[..3], msg, &agg),
            Err(BlsError::InvalidSignature)
        );
        assert_eq!(
            fast_aggregate_verify(&pks, b"other", &agg),
            Err(BlsError::InvalidSignature)
        );
        // Empty set.
        assert_eq!(
            fast_aggregate_verify(&[], msg, &agg),
            Err(BlsError::EmptySignerSet)
        );
        // Duplicate signer: even a cryptographically valid double-counted signature is refused.
        let double = Signature::aggregate(&[sigs[0], sigs[0]]).unwrap();
        assert_eq!(
            fast_aggregate_verify(&[pks[0], pks[0]], msg, &double),
            Err(BlsError::DuplicateSigner)
        );
    }

    #[test]
    fn aggregate_of_nothing_is_an_error() {
        assert_eq!(Signature::aggregate(&[]), Err(BlsError::EmptyAggregate));
    }

    #[test]
    fn from_seed_is_deterministic_and_seed_dependent() {
        assert_eq!(key(7).to_bytes(), key(7).to_bytes());
        assert_eq!(key(7).public_key(), key(7).public_key());
        assert_ne!(key(7).to_bytes(), key(8).to_bytes());
        let sk = SecretKey::from_bytes(&key(7).to_bytes()).unwrap();
        assert_eq!(sk.public_key(), key(7).public_key());
    }

    #[test]
    fn secret_key_rejects_bad_bytes_and_hides_in_debug() {
        assert_eq!(
            SecretKey::from_bytes(&[1u8; 31]).unwrap_err(),
            BlsError::InvalidLength {
                expected: 32,
                got: 31
            }
        );
        assert_eq!(
            SecretKey::from_bytes(&[0u8; 32]).unwrap_err(),
            BlsError::InvalidSecretKey
        );
        assert_eq!(
            SecretKey::from_bytes(&[0xff; 32]).unwrap_err(),
            BlsError::InvalidSecretKey
        );
        let sk = key(9);
        let dbg = format!("{sk:?}");
        assert!(!dbg.contains(&hex::encode(sk.to_bytes())));
        assert_eq!(dbg, "SecretKey(<redacted>)");
    }

    #[test]
    fn identity_and_wrong_lengths_rejected() {
        let mut inf_pk = [0u8; PUBLIC_KEY_LEN];
        inf_pk[0] = 0xc0;
        assert_eq!(PublicKey::from_bytes(&inf_pk), Err(BlsError::IdentityPoint));
        let mut inf_sig = [0u8; SIGNATURE_LEN];
        inf_sig[0] = 0xc0;
        assert_eq!(
            Signature::from_bytes(&inf_sig),
            Err(BlsError::IdentityPoint)
        );
        assert_eq!(
            PublicKey::from_bytes(&[0u8; 47]),
            Err(BlsError::InvalidLength {
                expected: 48,
                got: 47
            })
        );
        // The 96-byte uncompressed G1 form is refused: only compressed encodings are accepted.
        let pk = key(1).public_key();
        assert_eq!(
            PublicKey::from_bytes(&pk.point.serialize()),
            Err(BlsError::InvalidLength {
                expected: 48,
                got: 96
            })
        );
    }

    /// `n` signers, each signing its own message.
    fn distinct_votes(n: u8) -> (Vec<PublicKey>, Vec<Vec<u8>>, Vec<Signature>) {
        let sks: Vec<SecretKey> = (0..n).map(|i| key(100 + i)).collect();
        let msgs: Vec<Vec<u8>> = (0..n).map(|i| format!("vote {i}").into_bytes()).collect();
        let sigs = sks.iter().zip(&msgs).map(|(sk, m)| sk.sign(m)).collect();
        (sks.iter().map(SecretKey::public_key).collect(), msgs, sigs)
    }

    fn triples<'a>(
        pks: &'a [PublicKey],
        msgs: &'a [Vec<u8>],
        sigs: &'a [Signature],
    ) -> Vec<(&'a PublicKey, &'a [u8], &'a Signature)> {
        pks.iter()
            .zip(msgs)
            .zip(sigs)
            .map(|((pk, m), s)| (pk, m.as_slice(), s))
            .collect()
    }

    fn seeded() -> rand::rngs::StdRng {
        rand::SeedableRng::seed_from_u64(7)
    }

    #[test]
    fn batch_verify_accepts_valid_batches_and_the_empty_batch() {
        assert_eq!(batch_verify(&[]), Ok(()));
        // 40 items: large enough to be split over worker threads.
        let (pks, msgs, sigs) = distinct_votes(40);
        let items = triples(&pks, &msgs, &sigs);
        assert_eq!(batch_verify(&items), Ok(()));
        assert_eq!(batch_verify_with_rng(&items, &mut seeded()), Ok(()));
        assert_eq!(batch_verify(&items[..1]), Ok(()));
    }

    /// The randomized check itself holds for valid batches of every shape (one thread, several
    /// threads), so valid batches never pay for bisection; and it fails when one item is bad.
    #[test]
    fn batch_check_holds_for_valid_batches_without_bisection() {
        let (pks, msgs, sigs) = distinct_votes(40);
        let items = triples(&pks, &msgs, &sigs);
        let scalars: Vec<[u8; BATCH_SCALAR_BYTES]> = (0..40u8)
            .map(|i| [i, 0x5a, 3, 4, 5, 6, 7, 0x80, 1])
            .collect();
        for n in [2, 15, 16, 17, 32, 33, 40] {
            assert!(batch_holds(&items[..n], &scalars[..n]), "{n} items");
        }
        let mut forged = sigs.clone();
        forged[33] = sigs[0];
        let bad = triples(&pks, &msgs, &forged);
        assert!(!batch_holds(&bad, &scalars));
        assert!(batch_holds(&bad[..33], &scalars[..33]));
    }

    /// One bad signature (another signer's, on another message) at every position of an odd-sized
    /// batch: bisection names exactly that index.
    #[test]
    fn batch_verify_names_one_invalid_signature_at_each_position() {
        let (pks, msgs, sigs) = distinct_votes(7);
        for bad in 0..sigs.len() {
            let mut forged = sigs.clone();
            forged[bad] = sigs[(bad + 1) % sigs.len()];
            let items = triples(&pks, &msgs, &forged);
            assert_eq!(
                batch_verify_with_rng(&items, &mut seeded()),
                Err(vec![bad]),
                "bad index {bad}"
            );
        }
    }

    #[test]
    fn batch_verify_names_several_invalid_signatures() {
        let (pks, mut msgs, sigs) = distinct_votes(20);
        // Wrong message for 0, 7, 8 and 19; a valid signature by a key that is not the item's for 12.
        for i in [0, 7, 8, 19] {
            msgs[i] = b"something else".to_vec();
        }
        let mut pks2 = pks.clone();
        pks2[12] = key(1).public_key();
        let items = triples(&pks2, &msgs, &sigs);
        assert_eq!(batch_verify(&items), Err(vec![0, 7, 8, 12, 19]));
        // Every item invalid.
        let wrong: Vec<Vec<u8>> = msgs.iter().map(|_| b"x".to_vec()).collect();
        let items = triples(&pks, &wrong, &sigs);
        assert_eq!(batch_verify(&items), Err((0..20).collect()));
    }

    /// Repeated items are independent terms: valid repeats pass, an invalid repeat is named at
    /// each of its positions.
    #[test]
    fn batch_verify_with_duplicate_entries() {
        let (pks, msgs, sigs) = distinct_votes(3);
        let good = (&pks[0], msgs[0].as_slice(), &sigs[0]);
        let bad = (&pks[1], msgs[0].as_slice(), &sigs[1]);
        assert_eq!(batch_verify(&[good, good, good]), Ok(()));
        assert_eq!(batch_verify(&[good, bad, good, bad]), Err(vec![1, 3]));
    }

    #[test]
    fn aggregate_verify_accepts_distinct_and_repeated_messages() {
        let (pks, msgs, sigs) = distinct_votes(5);
        let agg = Signature::aggregate(&sigs).unwrap();
        let pairs: Vec<(&PublicKey, &[u8])> = pks
            .iter()
            .zip(&msgs)
            .map(|(pk, m)| (pk, m.as_slice()))
            .collect();
        assert_eq!(aggregate_verify(&pairs, &agg), Ok(()));
        assert_eq!(
            aggregate_verify(&pairs[..4], &agg),
            Err(BlsError::InvalidSignature)
        );
        assert_eq!(aggregate_verify(&[], &agg), Err(BlsError::EmptySignerSet));
        // The PoP scheme allows one message for several keys (draft §3.3).
        let same: Vec<Signature> = (0..3).map(|i| key(100 + i).sign(b"m")).collect();
        let pairs: Vec<(&PublicKey, &[u8])> = pks[..3].iter().map(|pk| (pk, &b"m"[..])).collect();
        assert_eq!(
            aggregate_verify(&pairs, &Signature::aggregate(&same).unwrap()),
            Ok(())
        );
    }

    #[test]
    fn aggregate_public_key_sums_and_subtracts() {
        let pks: Vec<PublicKey> = (20..30).map(|i| key(i).public_key()).collect();
        let all = AggregatePublicKey::aggregate(&pks).unwrap();
        let mut rest = all;
        rest.subtract(&AggregatePublicKey::aggregate(&pks[..3]).unwrap());
        assert_eq!(rest, AggregatePublicKey::aggregate(&pks[3..]).unwrap());
        rest.add(&AggregatePublicKey::aggregate(&pks[..3]).unwrap());
        assert_eq!(rest, all);
        assert_ne!(rest, AggregatePublicKey::aggregate(&pks[1..]).unwrap());
        assert_eq!(
            AggregatePublicKey::aggregate(&[]),
            Err(BlsError::EmptySignerSet)
        );
        // A single key aggregates to itself and verifies like it.
        let one = AggregatePublicKey::aggregate(&pks[..1]).unwrap();
        assert_eq!(one.verify(b"m", &key(20).sign(b"m")), Ok(()));
    }

    /// More keys than one batched-addition chunk: the chunked sum equals one-by-one addition.
    #[test]
    fn aggregate_public_key_across_chunks() {
        let pks: Vec<PublicKey> = (0..(AGGREGATE_CHUNK + 5) as u32)
            .map(|i| {
                let mut seed = [0u8; 32];
                seed[..4].copy_from_slice(&i.to_le_bytes());
                SecretKey::from_seed(&seed).public_key()
            })
            .collect();
        let mut one_by_one = AggregatePublicKey::aggregate(&pks[..1]).unwrap();
        for pk in &pks[1..] {
            one_by_one.add(&AggregatePublicKey::aggregate([pk]).unwrap());
        }
        assert_eq!(AggregatePublicKey::aggregate(&pks).unwrap(), one_by_one);
    }
}
