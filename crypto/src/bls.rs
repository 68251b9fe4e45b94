//! BLS12-381 signatures, min-pk variant, proof-of-possession ciphersuite.
//!
//! Implements `BLS_SIG_BLS12381G2_XMD:SHA-256_SSWU_RO_POP_` of draft-irtf-cfrg-bls-signature-05
//! (§4.2.3, "Proof of possession"): public keys are 48-byte compressed G1 points, signatures are
//! 96-byte compressed G2 points (ZCash serialization, draft §2.5 / Appendix A), messages are hashed
//! to G2 with hash_to_curve (RFC 9380, suite `BLS12381G2_XMD:SHA-256_SSWU_RO_`). The arithmetic is
//! `blst::min_pk`; this module adds the type discipline of DESIGN.md §4 and STYLE.md habit 3.
//!
//! # What the types guarantee
//!
//! - A [`PublicKey`] that exists is on the curve, in the prime-order subgroup G1 and not the
//!   identity: the only constructors are [`SecretKey::public_key`] and [`PublicKey::from_bytes`],
//!   which runs KeyValidate (draft §2.5). Verification therefore never re-checks keys.
//! - A [`Signature`] built by [`Signature::from_bytes`] is in G2 and not the identity. An aggregate
//!   built by [`Signature::aggregate`] is a sum of such points, hence in G2, but may be the
//!   identity (e.g. `s + (-s)`); it is not re-validated, and an identity aggregate simply fails
//!   verification against any valid key set.
//!
//! # Deviations from the draft, and why
//!
//! - Decoding rejects the identity point for signatures too (the draft only requires the subgroup
//!   check). An honest signer never produces the identity, and rejecting it early keeps obviously
//!   bogus votes away from the pairing code.
//! - [`fast_aggregate_verify`] rejects duplicate public keys ([`BlsError::DuplicateSigner`]). The
//!   draft allows them, but in Quasar a duplicate means a double-counted signer, which would let a
//!   certificate claim more stake than it has.
//! - Rogue-key attacks on [`fast_aggregate_verify`] are prevented by the PoP ciphersuite: every
//!   validator key must pass [`PublicKey::verify_possession`] at registration (draft §3.3).

use std::collections::HashSet;
use std::fmt;

use blst::min_pk;
use blst::BLST_ERROR;

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
        let pk = self.public_key();
        ProofOfPossession(Signature::from_point(self.inner.sign(
            &pk.bytes,
            POP_DST,
            &[],
        )))
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
        match pop
            .0
            .point
            .verify(false, &self.bytes, POP_DST, &[], &self.point, false)
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

/// FastAggregateVerify (draft §3.3.4): checks that `aggregate` is the sum of signatures on `msg`
/// (under [`SIGNATURE_DST`]) by exactly the keys in `public_keys`, with one pairing check over the
/// aggregated public key.
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
    let refs: Vec<&min_pk::PublicKey> = public_keys.iter().map(|pk| &pk.point).collect();
    match aggregate
        .point
        .fast_aggregate_verify(false, msg, SIGNATURE_DST, &refs)
    {
        BLST_ERROR::BLST_SUCCESS => Ok(()),
        _ => Err(BlsError::InvalidSignature),
    }
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
}
