//! ML-DSA signatures (FIPS 204): ML-DSA-44, ML-DSA-65 and ML-DSA-87.
//!
//! Validators' post-quantum identity keys are ML-DSA-65 (docs/architecture.md §4). This module implements,
//! for each of the three parameter sets of FIPS 204 §4 (Table 1):
//!
//! - key generation from a 32-byte seed ξ: ML-DSA.KeyGen_internal (FIPS 204 §6.1, Algorithm 6),
//!   the deterministic half of ML-DSA.KeyGen (§5.1, Algorithm 1);
//! - signing with a context string: ML-DSA.Sign (§5.2, Algorithm 2), hedged (fresh 32-byte `rnd`)
//!   or deterministic (`rnd` = 0^32, §3.4);
//! - verification with a context string: ML-DSA.Verify (§5.3, Algorithm 3, with
//!   Verify_internal §6.3, Algorithm 8);
//! - the same verification under a [`PreparedKey`], whose key-only parts (ExpandA, NTT(t1·2^d),
//!   tr) are computed once, for signers that sign often (transaction senders).
//!
//! The arithmetic is `libcrux-ml-dsa` (Cryspen): AVX2 code selected at run time on x86-64,
//! portable code elsewhere. It was chosen by the side-by-side benchmark in
//! `bench/benches/mldsa.rs` against fips204, aws-lc-rs and pqcrypto-mldsa: of the four it is the
//! fastest crate that has everything this module needs (seeded key generation, context strings,
//! caller-supplied `rnd`), is maintained, and passes every Wycheproof ML-DSA vector in
//! `shared/vectors` (`crypto/tests/mldsa_vectors.rs`). aws-lc-rs has no context strings and no
//! deterministic signing; pqcrypto-mldsa has no seeded key generation.
//!
//! Speed depends on the build: libcrux's AVX2 code only reaches full speed when the whole build
//! targets AVX2 (`-C target-cpu=x86-64-v3`). On the default x86-64 baseline its SIMD intrinsics
//! are not inlined, and ML-DSA-65 verify takes about 1.8× as long as aws-lc-rs or
//! pqcrypto-mldsa; with x86-64-v3 it is on par with them (the benchmark's docs say how to
//! measure both).
//!
//! This module adds a type discipline (docs/architecture.md §4, §10): length-checked decoders that
//! never panic, typed keys and signatures per parameter set, and wiping of secret material.
//!
//! # Sizes (FIPS 204 Table 2)
//!
//! | set | public key | signature | seed ξ |
//! |---|---|---|---|
//! | [`MlDsa44`] | 1312 B | 2420 B | 32 B |
//! | [`MlDsa65`] | 1952 B | 3309 B | 32 B |
//! | [`MlDsa87`] | 2592 B | 4627 B | 32 B |
//!
//! # What the types guarantee
//!
//! - A [`PublicKey`] or [`Signature`] that exists has exactly the length of its parameter set
//!   (§3.6.2: "public-key and signature length checks"). Every byte string of public-key length
//!   is a valid pkEncode output (ρ ‖ t1 with 10-bit coefficients), so the length is all there is
//!   to check. A signature's inner structure is checked by [`PublicKey::verify`]: the hint vector
//!   must decode (HintBitUnpack, §7.1 Algorithm 21: indices strictly increasing within each
//!   polynomial, at most ω in total, unused slots zero) and ‖z‖∞ < γ1 − β.
//! - A [`SecretKey`] is the seed ξ plus the key pair it expands to; both are wiped on drop
//!   (§3.6.3). Only the seed is ever serialized.
//!
//! # Deviations from FIPS 204, and why
//!
//! - A secret key is stored and decoded as the 32-byte seed ξ, not as the 2560/4032/4896-byte
//!   skEncode form. FIPS 204 §5.1 allows keeping ξ and rerunning KeyGen_internal; a seed cannot
//!   describe an inconsistent key (the `InvalidPrivateKey` class of test vectors), and it is what
//!   `quasar-node keygen` writes.
//! - HashML-DSA (§5.4) and an external-μ interface are not offered: nothing in Quasar signs a
//!   pre-hash, and libcrux exposes neither. The Wycheproof sign cases that give only μ are
//!   therefore checked for key generation alone (see `crypto/tests/mldsa_vectors.rs`).
//! - Copies of secret values made inside libcrux's own stack frames are outside our reach and
//!   are not wiped; every buffer this module owns is.

use std::fmt;
use std::hash::{Hash, Hasher};

use crate::accel::BatchArithmetic;
use crate::rollup::native;
use libcrux_ml_dsa::{ml_dsa_44, ml_dsa_65, ml_dsa_87, SigningError};
use rand::{CryptoRng, RngCore};
use zeroize::Zeroizing;

/// Length in bytes of the key-generation seed ξ (FIPS 204 §5.1, Algorithm 1 line 1).
pub const SEED_LEN: usize = 32;
/// Length in bytes of the per-signature randomness `rnd` (FIPS 204 §5.2, Algorithm 2 line 5).
pub const RND_LEN: usize = 32;
/// Longest context string ML-DSA accepts (FIPS 204 §5.2 Algorithm 2 line 1, §5.3 Algorithm 3
/// line 1): its length is encoded in one byte.
pub const MAX_CONTEXT_LEN: usize = 255;

/// Why an ML-DSA operation failed. Every variant is a property of the input (or, for
/// [`MlDsaError::SigningFailed`], of an astronomically unlikely event): the caller drops the
/// message or key and may penalize whoever sent it; none is fatal to the node.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MlDsaError {
    /// A public key, signature or seed has the wrong length for its type (FIPS 204 §3.6.2).
    #[error("invalid length: expected {expected} bytes, got {got}")]
    InvalidLength {
        /// Required length in bytes.
        expected: usize,
        /// Length that was supplied.
        got: usize,
    },
    /// The context string is longer than [`MAX_CONTEXT_LEN`] bytes (Algorithms 2 and 3, line 1).
    #[error("context string of {len} bytes is longer than 255")]
    ContextTooLong {
        /// Length that was supplied.
        len: usize,
    },
    /// The signature does not verify: malformed hints, ‖z‖∞ too large, or the commitment hash
    /// c̃ does not match (FIPS 204 Algorithm 8 lines 1–13).
    #[error("invalid signature")]
    InvalidSignature,
    /// The signing loop ran 814 times without producing a signature (the bound of FIPS 204
    /// Appendix C). The probability is below 2^-128 per message; hedged signing may be retried.
    #[error("signing failed: rejection sampling bound reached")]
    SigningFailed,
}

/// Wraps `bytes` as a verification key or signature; [`MlDsaError::InvalidLength`] unless it has
/// exactly the type's length.
fn decode<E: backend::Encoded>(bytes: &[u8]) -> Result<E, MlDsaError> {
    E::decode(bytes).ok_or(MlDsaError::InvalidLength {
        expected: E::LEN,
        got: bytes.len(),
    })
}

/// Checks `ctx.len() <= MAX_CONTEXT_LEN`.
fn check_context(ctx: &[u8]) -> Result<(), MlDsaError> {
    if ctx.len() <= MAX_CONTEXT_LEN {
        Ok(())
    } else {
        Err(MlDsaError::ContextTooLong { len: ctx.len() })
    }
}

mod backend {
    //! The seam between the generic wrapper types and libcrux's per-parameter-set functions.

    use libcrux_ml_dsa::{MLDSASignature, MLDSASigningKey, MLDSAVerificationKey};
    use zeroize::Zeroize;

    /// A fixed-length libcrux byte container (verification key or signature).
    pub trait Encoded: Clone + Send + Sync + 'static {
        /// Its length in bytes.
        const LEN: usize;
        /// Wraps `bytes` when it has exactly [`Encoded::LEN`] bytes.
        fn decode(bytes: &[u8]) -> Option<Self>;
        /// The bytes.
        fn bytes(&self) -> &[u8];
    }

    impl<const N: usize> Encoded for MLDSAVerificationKey<N> {
        const LEN: usize = N;
        fn decode(bytes: &[u8]) -> Option<Self> {
            <[u8; N]>::try_from(bytes).ok().map(Self::new)
        }
        fn bytes(&self) -> &[u8] {
            self.as_slice()
        }
    }

    impl<const N: usize> Encoded for MLDSASignature<N> {
        const LEN: usize = N;
        fn decode(bytes: &[u8]) -> Option<Self> {
            <[u8; N]>::try_from(bytes).ok().map(Self::new)
        }
        fn bytes(&self) -> &[u8] {
            self.as_slice()
        }
    }

    /// An expanded libcrux signing key that can be wiped in place.
    pub trait Wipe: Send + Sync + 'static {
        /// Overwrites the key with zeros.
        fn wipe(&mut self);
    }

    impl<const N: usize> Wipe for MLDSASigningKey<N> {
        fn wipe(&mut self) {
            self.as_mut_slice().zeroize();
        }
    }

    /// Keeps [`super::ParameterSet`] implementable only here.
    pub trait Sealed {}
}

/// One of the three ML-DSA parameter sets (FIPS 204 §4, Tables 1 and 2): [`MlDsa44`], [`MlDsa65`]
/// or [`MlDsa87`]. Sealed; the items other than the constants are this module's plumbing.
pub trait ParameterSet: backend::Sealed + Sized + Send + Sync + 'static {
    /// The name FIPS 204 gives the set, e.g. `"ML-DSA-65"`.
    const NAME: &'static str;
    /// Public key length in bytes (FIPS 204 Table 2).
    const PUBLIC_KEY_LEN: usize = <Self::VerificationKey as backend::Encoded>::LEN;
    /// Signature length in bytes (FIPS 204 Table 2).
    const SIGNATURE_LEN: usize = <Self::Signature as backend::Encoded>::LEN;

    #[doc(hidden)]
    const EXPANDED: &'static native::Params;
    #[doc(hidden)]
    type VerificationKey: backend::Encoded;
    #[doc(hidden)]
    type SigningKey: backend::Wipe;
    #[doc(hidden)]
    type Signature: backend::Encoded;

    #[doc(hidden)]
    fn key_gen(seed: [u8; SEED_LEN]) -> (Self::SigningKey, Self::VerificationKey);
    #[doc(hidden)]
    fn sign(
        sk: &Self::SigningKey,
        msg: &[u8],
        ctx: &[u8],
        rnd: [u8; RND_LEN],
    ) -> Result<Self::Signature, SigningError>;
    #[doc(hidden)]
    fn verify(vk: &Self::VerificationKey, msg: &[u8], ctx: &[u8], sig: &Self::Signature) -> bool;
}

/// ML-DSA-44 (NIST security category 2): 1312-byte public keys, 2420-byte signatures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MlDsa44 {}

/// ML-DSA-65 (NIST security category 3): 1952-byte public keys, 3309-byte signatures. Quasar's
/// validator identity keys use this set (docs/architecture.md §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MlDsa65 {}

/// ML-DSA-87 (NIST security category 5): 2592-byte public keys, 4627-byte signatures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MlDsa87 {}

/// Implements [`ParameterSet`] for one set by naming libcrux's module and types for it (the only
/// thing that differs between the three sets).
macro_rules! parameter_set {
    ($set:ident, $name:literal, $params:ident, $module:ident, $vk:ident, $sk:ident, $sig:ident) => {
        impl backend::Sealed for $set {}

        impl ParameterSet for $set {
            const NAME: &'static str = $name;
            const EXPANDED: &'static native::Params = &native::$params;
            type VerificationKey = $module::$vk;
            type SigningKey = $module::$sk;
            type Signature = $module::$sig;

            fn key_gen(seed: [u8; SEED_LEN]) -> (Self::SigningKey, Self::VerificationKey) {
                let pair = $module::generate_key_pair(seed);
                (pair.signing_key, pair.verification_key)
            }
            fn sign(
                sk: &Self::SigningKey,
                msg: &[u8],
                ctx: &[u8],
                rnd: [u8; RND_LEN],
            ) -> Result<Self::Signature, SigningError> {
                $module::sign(sk, msg, ctx, rnd)
            }
            fn verify(
                vk: &Self::VerificationKey,
                msg: &[u8],
                ctx: &[u8],
                sig: &Self::Signature,
            ) -> bool {
                $module::verify(vk, msg, ctx, sig).is_ok()
            }
        }
    };
}

parameter_set!(
    MlDsa44,
    "ML-DSA-44",
    ML_DSA_44,
    ml_dsa_44,
    MLDSA44VerificationKey,
    MLDSA44SigningKey,
    MLDSA44Signature
);
parameter_set!(
    MlDsa65,
    "ML-DSA-65",
    ML_DSA_65,
    ml_dsa_65,
    MLDSA65VerificationKey,
    MLDSA65SigningKey,
    MLDSA65Signature
);
parameter_set!(
    MlDsa87,
    "ML-DSA-87",
    ML_DSA_87,
    ml_dsa_87,
    MLDSA87VerificationKey,
    MLDSA87SigningKey,
    MLDSA87Signature
);

/// An ML-DSA public key of parameter set `P`: exactly [`ParameterSet::PUBLIC_KEY_LEN`] bytes
/// (pkEncode, FIPS 204 §7.2 Algorithm 22). Equality and hashing use those bytes.
pub struct PublicKey<P: ParameterSet> {
    inner: P::VerificationKey,
}

impl<P: ParameterSet> PublicKey<P> {
    /// Decodes a public key. Errors: [`MlDsaError::InvalidLength`] unless exactly
    /// [`ParameterSet::PUBLIC_KEY_LEN`] bytes (trailing bytes included); any byte string of that
    /// length is a valid encoding (FIPS 204 §3.6.2, §7.2 Algorithm 23).
    pub fn from_bytes(bytes: &[u8]) -> Result<PublicKey<P>, MlDsaError> {
        Ok(PublicKey {
            inner: decode(bytes)?,
        })
    }

    /// The [`ParameterSet::PUBLIC_KEY_LEN`]-byte encoding.
    pub fn as_bytes(&self) -> &[u8] {
        backend::Encoded::bytes(&self.inner)
    }

    /// ML-DSA.Verify(pk, msg, sig, ctx) (FIPS 204 §5.3 Algorithm 3; Verify_internal §6.3
    /// Algorithm 8). `ctx` is the context string (empty for none).
    ///
    /// Errors: [`MlDsaError::ContextTooLong`] when `ctx` exceeds [`MAX_CONTEXT_LEN`] bytes;
    /// [`MlDsaError::InvalidSignature`] when the hints are malformed (repeated or decreasing
    /// indices within a polynomial, more than ω of them, nonzero padding), ‖z‖∞ ≥ γ1 − β, or the
    /// recomputed commitment hash differs from c̃.
    pub fn verify(&self, msg: &[u8], ctx: &[u8], sig: &Signature<P>) -> Result<(), MlDsaError> {
        check_context(ctx)?;
        if P::verify(&self.inner, msg, ctx, &sig.inner) {
            Ok(())
        } else {
            Err(MlDsaError::InvalidSignature)
        }
    }
}

/// A public key prepared for many verifications: the parts of ML-DSA.Verify_internal (FIPS 204
/// §6.3, Algorithm 8) that depend on the key alone, computed once: Â = ExpandA(ρ) (line 5, the
/// k·l SHAKE128 expansions that are about half of a verification), NTT(t1·2^d) (line 9) and
/// tr = H(pk, 64) (line 6). [`PreparedKey::verify`] then costs the signature's own work: two
/// SHAKE256 hashes, SampleInBall, l + 1 forward and k inverse NTTs (through a
/// [`BatchArithmetic`] backend, e.g. the SIMD CPU backend) and the hint.
///
/// Memory: [`PreparedKey::BYTES`] (about 38 KiB for ML-DSA-65), against the 1,952-byte key; keep
/// prepared keys only for signers that sign often (a transaction sender, a validator).
///
/// The arithmetic is `rollup::native`'s (the Groth16 rollup's reference for FIPS 204
/// verification), checked against libcrux and every Wycheproof ML-DSA verification vector in
/// `crypto/tests/mldsa_vectors.rs`.
pub struct PreparedKey<P: ParameterSet> {
    key: PublicKey<P>,
    expanded: native::ExpandedKey,
}

impl<P: ParameterSet> PreparedKey<P> {
    /// Bytes a prepared key holds (Â and NTT(t1·2^d) as `u32` coefficients, tr, the key).
    pub const BYTES: usize = 4 * 256 * P::EXPANDED.k * (P::EXPANDED.l + 1) + 64 + P::PUBLIC_KEY_LEN;

    /// Prepares `key`, the k NTTs of t1·2^d on `arithmetic` (more than one verification's
    /// worth of work: ExpandA's k·l SHAKE128 streams dominate).
    pub fn new(key: &PublicKey<P>, arithmetic: &dyn BatchArithmetic) -> PreparedKey<P> {
        PreparedKey {
            key: key.clone(),
            // A `PublicKey` has the set's length, the only thing `from_public_key` checks.
            expanded: native::ExpandedKey::expand(P::EXPANDED, key.as_bytes(), arithmetic),
        }
    }

    /// The key it was prepared from.
    pub fn public_key(&self) -> &PublicKey<P> {
        &self.key
    }

    /// ML-DSA.Verify(pk, msg, sig, ctx) (FIPS 204 §5.3 Algorithm 3) with the prepared parts,
    /// the NTTs on `arithmetic`. Same verdicts as [`PublicKey::verify`]; same errors.
    pub fn verify(
        &self,
        msg: &[u8],
        ctx: &[u8],
        sig: &Signature<P>,
        arithmetic: &dyn BatchArithmetic,
    ) -> Result<(), MlDsaError> {
        check_context(ctx)?;
        let valid = native::verify_with(
            P::EXPANDED,
            &self.expanded,
            msg,
            ctx,
            sig.as_bytes(),
            arithmetic,
        );
        if valid {
            Ok(())
        } else {
            Err(MlDsaError::InvalidSignature)
        }
    }
}

impl<P: ParameterSet> Clone for PublicKey<P> {
    fn clone(&self) -> Self {
        PublicKey {
            inner: self.inner.clone(),
        }
    }
}

impl<P: ParameterSet> PartialEq for PublicKey<P> {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl<P: ParameterSet> Eq for PublicKey<P> {}

impl<P: ParameterSet> Hash for PublicKey<P> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

impl<P: ParameterSet> fmt::Debug for PublicKey<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let head = self.as_bytes().get(..8).unwrap_or_default();
        write!(f, "PublicKey<{}>({}…)", P::NAME, hex::encode(head))
    }
}

/// An ML-DSA signature of parameter set `P`: exactly [`ParameterSet::SIGNATURE_LEN`] bytes,
/// c̃ ‖ z ‖ h (sigEncode, FIPS 204 §7.2 Algorithm 26). Its inner structure is checked only by
/// [`PublicKey::verify`].
pub struct Signature<P: ParameterSet> {
    inner: P::Signature,
}

impl<P: ParameterSet> Signature<P> {
    /// Decodes a signature. Errors: [`MlDsaError::InvalidLength`] unless exactly
    /// [`ParameterSet::SIGNATURE_LEN`] bytes, so trailing bytes are refused (FIPS 204 §3.6.2).
    pub fn from_bytes(bytes: &[u8]) -> Result<Signature<P>, MlDsaError> {
        Ok(Signature {
            inner: decode(bytes)?,
        })
    }

    /// The [`ParameterSet::SIGNATURE_LEN`]-byte encoding.
    pub fn as_bytes(&self) -> &[u8] {
        backend::Encoded::bytes(&self.inner)
    }
}

impl<P: ParameterSet> Clone for Signature<P> {
    fn clone(&self) -> Self {
        Signature {
            inner: self.inner.clone(),
        }
    }
}

impl<P: ParameterSet> PartialEq for Signature<P> {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl<P: ParameterSet> Eq for Signature<P> {}

impl<P: ParameterSet> fmt::Debug for Signature<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let head = self.as_bytes().get(..8).unwrap_or_default();
        write!(f, "Signature<{}>({}…)", P::NAME, hex::encode(head))
    }
}

/// An ML-DSA secret key of parameter set `P`: the 32-byte seed ξ and the key pair
/// KeyGen_internal(ξ) expands it to. Wiped on drop (FIPS 204 §3.6.3); `Debug` never prints it;
/// not `Clone`, so the secret exists once.
pub struct SecretKey<P: ParameterSet> {
    seed: Zeroizing<[u8; SEED_LEN]>,
    expanded: P::SigningKey,
    public: PublicKey<P>,
}

impl<P: ParameterSet> SecretKey<P> {
    /// ML-DSA.KeyGen_internal(ξ) (FIPS 204 §6.1 Algorithm 6). Deterministic: the same seed always
    /// gives the same key pair. The seed must be uniformly random secret material (Algorithm 1
    /// line 1 draws it from an approved RBG); the caller should wipe its copy.
    pub fn from_seed(seed: &[u8; SEED_LEN]) -> SecretKey<P> {
        let (expanded, inner) = P::key_gen(*seed);
        SecretKey {
            seed: Zeroizing::new(*seed),
            expanded,
            public: PublicKey { inner },
        }
    }

    /// Decodes a serialized secret key, which is the seed ξ, and expands it as
    /// [`SecretKey::from_seed`]. Errors: [`MlDsaError::InvalidLength`] unless exactly
    /// [`SEED_LEN`] bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<SecretKey<P>, MlDsaError> {
        if bytes.len() != SEED_LEN {
            return Err(MlDsaError::InvalidLength {
                expected: SEED_LEN,
                got: bytes.len(),
            });
        }
        let mut seed = Zeroizing::new([0u8; SEED_LEN]);
        seed.copy_from_slice(bytes);
        Ok(SecretKey::from_seed(&seed))
    }

    /// The seed ξ, which is this key's serialized form. The caller must not leak or log it.
    pub fn seed(&self) -> &[u8; SEED_LEN] {
        &self.seed
    }

    /// The public key (pkEncode(ρ, t1), FIPS 204 §6.1 Algorithm 6 line 10).
    pub fn public_key(&self) -> &PublicKey<P> {
        &self.public
    }

    /// ML-DSA.Sign (FIPS 204 §5.2 Algorithm 2) with caller-supplied `rnd`: fresh random bytes give
    /// the hedged variant, 0^32 the deterministic one (§3.4). The same `(msg, ctx, rnd)` always
    /// gives the same signature, which is what lets the test vectors pin it.
    ///
    /// Errors: [`MlDsaError::ContextTooLong`] when `ctx` exceeds [`MAX_CONTEXT_LEN`] bytes;
    /// [`MlDsaError::SigningFailed`] (probability < 2^-128).
    pub fn sign_with_rnd(
        &self,
        msg: &[u8],
        ctx: &[u8],
        rnd: &[u8; RND_LEN],
    ) -> Result<Signature<P>, MlDsaError> {
        check_context(ctx)?;
        match P::sign(&self.expanded, msg, ctx, *rnd) {
            Ok(inner) => Ok(Signature { inner }),
            Err(SigningError::ContextTooLongError) => {
                Err(MlDsaError::ContextTooLong { len: ctx.len() })
            }
            Err(SigningError::RejectionSamplingError) => Err(MlDsaError::SigningFailed),
        }
    }

    /// Hedged ML-DSA.Sign (FIPS 204 §5.2 Algorithm 2, the default variant of §3.4): `rnd` is 32
    /// fresh bytes from `rng`, wiped after use. Errors as [`SecretKey::sign_with_rnd`].
    pub fn sign(
        &self,
        msg: &[u8],
        ctx: &[u8],
        rng: &mut (impl CryptoRng + RngCore),
    ) -> Result<Signature<P>, MlDsaError> {
        let mut rnd = Zeroizing::new([0u8; RND_LEN]);
        rng.fill_bytes(&mut *rnd);
        self.sign_with_rnd(msg, ctx, &rnd)
    }

    /// Deterministic ML-DSA.Sign (FIPS 204 §3.4: `rnd` = 0^32): the signature depends only on
    /// the key, `msg` and `ctx`. Errors as [`SecretKey::sign_with_rnd`].
    pub fn sign_deterministic(&self, msg: &[u8], ctx: &[u8]) -> Result<Signature<P>, MlDsaError> {
        self.sign_with_rnd(msg, ctx, &[0u8; RND_LEN])
    }
}

impl<P: ParameterSet> Drop for SecretKey<P> {
    fn drop(&mut self) {
        backend::Wipe::wipe(&mut self.expanded);
    }
}

impl<P: ParameterSet> fmt::Debug for SecretKey<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretKey<{}>(<redacted>)", P::NAME)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn key<P: ParameterSet>(i: u8) -> SecretKey<P> {
        SecretKey::from_seed(&[i; SEED_LEN])
    }

    /// Sign, encode, decode, verify, for one parameter set; wrong message, context or key fails.
    fn round_trip<P: ParameterSet>() {
        let sk = key::<P>(1);
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let sig = sk.sign(b"block 7", b"quasar-test", &mut rng).unwrap();
        assert_eq!(sig.as_bytes().len(), P::SIGNATURE_LEN);
        let pk = PublicKey::<P>::from_bytes(sk.public_key().as_bytes()).unwrap();
        assert_eq!(&pk, sk.public_key());
        assert_eq!(pk.as_bytes().len(), P::PUBLIC_KEY_LEN);
        let sig = Signature::<P>::from_bytes(sig.as_bytes()).unwrap();
        assert_eq!(pk.verify(b"block 7", b"quasar-test", &sig), Ok(()));
        let bad = Err(MlDsaError::InvalidSignature);
        assert_eq!(pk.verify(b"block 8", b"quasar-test", &sig), bad);
        assert_eq!(pk.verify(b"block 7", b"", &sig), bad);
        assert_eq!(
            key::<P>(2)
                .public_key()
                .verify(b"block 7", b"quasar-test", &sig),
            bad
        );
    }

    #[test]
    fn sign_verify_round_trip_every_parameter_set() {
        round_trip::<MlDsa44>();
        round_trip::<MlDsa65>();
        round_trip::<MlDsa87>();
    }

    #[test]
    fn lengths_match_fips_204_table_2() {
        assert_eq!(
            (MlDsa44::PUBLIC_KEY_LEN, MlDsa44::SIGNATURE_LEN),
            (1312, 2420)
        );
        assert_eq!(
            (MlDsa65::PUBLIC_KEY_LEN, MlDsa65::SIGNATURE_LEN),
            (1952, 3309)
        );
        assert_eq!(
            (MlDsa87::PUBLIC_KEY_LEN, MlDsa87::SIGNATURE_LEN),
            (2592, 4627)
        );
    }

    #[test]
    fn deterministic_signing_repeats_and_hedged_signing_does_not() {
        let sk = key::<MlDsa65>(3);
        let a = sk.sign_deterministic(b"m", b"").unwrap();
        assert_eq!(a, sk.sign_deterministic(b"m", b"").unwrap());
        assert_eq!(a, sk.sign_with_rnd(b"m", b"", &[0; RND_LEN]).unwrap());
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let b = sk.sign(b"m", b"", &mut rng).unwrap();
        let c = sk.sign(b"m", b"", &mut rng).unwrap();
        assert_ne!(a, b);
        assert_ne!(b, c);
        for sig in [&a, &b, &c] {
            assert_eq!(sk.public_key().verify(b"m", b"", sig), Ok(()));
        }
    }

    #[test]
    fn seed_round_trip_and_bad_seed_lengths() {
        let sk = key::<MlDsa65>(4);
        let again = SecretKey::<MlDsa65>::from_bytes(sk.seed()).unwrap();
        assert_eq!(again.public_key(), sk.public_key());
        assert_ne!(key::<MlDsa65>(5).public_key(), sk.public_key());
        for len in [0, 31, 33] {
            assert_eq!(
                SecretKey::<MlDsa65>::from_bytes(&vec![4; len]).unwrap_err(),
                MlDsaError::InvalidLength {
                    expected: SEED_LEN,
                    got: len
                }
            );
        }
        let shown = format!("{sk:?}");
        assert_eq!(shown, "SecretKey<ML-DSA-65>(<redacted>)");
    }

    /// Regression (bug class: decoders that accept a valid encoding followed by garbage, which
    /// makes signatures malleable and lets two byte strings count as one vote): trailing bytes
    /// after a signature or public key are an error, as is a truncated one.
    #[test]
    fn trailing_bytes_after_a_signature_or_public_key_are_refused() {
        let sk = key::<MlDsa65>(6);
        let sig = sk.sign_deterministic(b"m", b"").unwrap();
        let mut long = sig.as_bytes().to_vec();
        long.push(0);
        assert_eq!(
            Signature::<MlDsa65>::from_bytes(&long).unwrap_err(),
            MlDsaError::InvalidLength {
                expected: 3309,
                got: 3310
            }
        );
        assert!(Signature::<MlDsa65>::from_bytes(&long[..3308]).is_err());
        let mut long_pk = sk.public_key().as_bytes().to_vec();
        long_pk.push(0);
        assert_eq!(
            PublicKey::<MlDsa65>::from_bytes(&long_pk).unwrap_err(),
            MlDsaError::InvalidLength {
                expected: 1952,
                got: 1953
            }
        );
        assert!(PublicKey::<MlDsa65>::from_bytes(&[]).is_err());
    }

    /// Regression (bug class: a context length that silently wraps into the one-byte length
    /// prefix of M′, or an assertion that panics): a context longer than 255 bytes is an error in
    /// signing and in verifying, never a panic; 255 bytes is still fine.
    #[test]
    fn context_longer_than_255_bytes_is_an_error() {
        let sk = key::<MlDsa65>(7);
        let long = [0xc7; 256];
        assert_eq!(
            sk.sign_deterministic(b"m", &long).unwrap_err(),
            MlDsaError::ContextTooLong { len: 256 }
        );
        let mut rng = rand::rngs::StdRng::seed_from_u64(2);
        assert_eq!(
            sk.sign(b"m", &[0; 1000], &mut rng).unwrap_err(),
            MlDsaError::ContextTooLong { len: 1000 }
        );
        let max = [0xc7; MAX_CONTEXT_LEN];
        let sig = sk.sign_deterministic(b"m", &max).unwrap();
        assert_eq!(sk.public_key().verify(b"m", &max, &sig), Ok(()));
        assert_eq!(
            sk.public_key().verify(b"m", &long, &sig),
            Err(MlDsaError::ContextTooLong { len: 256 })
        );
    }

    /// Arbitrary bytes of the right lengths decode (every length-correct public key is an
    /// encoding) and then fail verification with an error, never a panic: bad hints, out-of-range
    /// z coefficients and a wrong c̃ all land in `InvalidSignature`.
    #[test]
    fn random_keys_and_signatures_are_rejected_without_panicking() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        for _ in 0..200 {
            let mut pk = vec![0u8; MlDsa65::PUBLIC_KEY_LEN];
            let mut sig = vec![0u8; MlDsa65::SIGNATURE_LEN];
            rng.fill_bytes(&mut pk);
            rng.fill_bytes(&mut sig);
            let pk = PublicKey::<MlDsa65>::from_bytes(&pk).unwrap();
            let sig = Signature::<MlDsa65>::from_bytes(&sig).unwrap();
            assert_eq!(
                pk.verify(b"m", b"", &sig),
                Err(MlDsaError::InvalidSignature)
            );
        }
    }

    /// ML-DSA-65's hint vector h: the last ω + k = 55 + 6 bytes of a signature (FIPS 204 Table 1,
    /// §7.1 Algorithm 20). Bytes [0, ω) hold the hint indices, polynomial after polynomial; byte
    /// ω + i holds how many indices polynomials 0..=i use together.
    const OMEGA: usize = 55;
    const K: usize = 6;

    /// A message and its deterministic ML-DSA-65 signature whose hint vector has at least two
    /// indices in one polynomial, with the offset of that polynomial's first index.
    fn signature_with_two_hints_in_one_polynomial(
        sk: &SecretKey<MlDsa65>,
    ) -> ([u8; 4], Vec<u8>, usize) {
        for nonce in 0u32.. {
            let msg = nonce.to_le_bytes();
            let sig = sk
                .sign_deterministic(&msg, b"")
                .unwrap()
                .as_bytes()
                .to_vec();
            let hints = sig.len() - OMEGA - K;
            let mut start = 0;
            for &end in &sig[hints + OMEGA..] {
                let end = usize::from(end);
                if end >= start + 2 {
                    return (msg, sig, hints + start);
                }
                start = end;
            }
        }
        unreachable!("some signature has two hints in one polynomial")
    }

    /// Regression (bug class: HintBitUnpack that does not require strictly increasing indices
    /// within a polynomial, so one signature has several encodings and strong unforgeability is
    /// lost; FIPS 204 §7.1 Algorithm 21 returns ⊥ for them): a signature whose hint indices
    /// repeat, or decrease, must be rejected.
    #[test]
    fn repeated_or_decreasing_hint_indices_are_rejected() {
        let sk = key::<MlDsa65>(8);
        let (msg, bytes, first) = signature_with_two_hints_in_one_polynomial(&sk);
        let original = Signature::<MlDsa65>::from_bytes(&bytes).unwrap();
        assert_eq!(sk.public_key().verify(&msg, b"", &original), Ok(()));

        let mut repeated = bytes.clone();
        repeated[first + 1] = repeated[first];
        let mut decreasing = bytes.clone();
        decreasing.swap(first, first + 1);
        for (what, forged) in [("repeated", repeated), ("decreasing", decreasing)] {
            let sig = Signature::<MlDsa65>::from_bytes(&forged).unwrap();
            assert_eq!(
                sk.public_key().verify(&msg, b"", &sig),
                Err(MlDsaError::InvalidSignature),
                "{what} hint indices"
            );
        }
    }
}
