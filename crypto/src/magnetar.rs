//! Magnetar: per-validator SLH-DSA signatures (FIPS 205), the hash-based leg of a QuasarCert
//! (docs/architecture.md §3, §4).
//!
//! Every validator holds its own SLH-DSA key; a Magnetar leg is a signer bitmap plus one
//! independent signature per signer on the 32-byte round digest μ (the leg itself, its encoding
//! and its parallel verifier live in `quasar_lanes::magnetar`). This module is the primitive:
//! keys, signing and verification for two parameter sets of FIPS 205 §11 (Table 2), selectable
//! per epoch:
//!
//! | set | n | h / d | k · a | public key | signature | security |
//! |---|---|---|---|---|---|---|
//! | [`ParameterSet::Shake192f`] (default) | 24 | 66 / 22 | 33 · 8 | 48 B | 35,664 B | category 3 |
//! | [`ParameterSet::Shake192s`] | 24 | 63 / 7 | 17 · 14 | 48 B | 16,224 B | category 3 |
//!
//! "f" signs fast with large signatures; "s" signs about 18× slower with small ones. Measured on
//! the 2-vCPU machine (`cargo bench -p quasar-bench --bench magnetar`, release build, one core
//! per signature): signing about 0.3 s (192f) and 5 s (192s); verification about 7.5 ms (192f)
//! and 2.5 ms (192s).
//!
//! Implemented, on the `fips205` crate (IntegrityChain, pure Rust, no `unsafe`):
//!
//! - key generation: slh_keygen_internal(SK.seed, SK.prf, PK.seed) (FIPS 205 §9.1,
//!   Algorithm 18), with the three n-byte seeds derived from one 32-byte validator seed (below);
//! - signing with a context string: slh_sign (§10.2.1, Algorithm 22), which signs
//!   M′ = toByte(0, 1) ‖ toByte(|ctx|, 1) ‖ ctx ‖ M with slh_sign_internal (§9.2, Algorithm 19),
//!   hedged (opt_rand = n fresh random bytes) or deterministic (opt_rand = PK.seed);
//! - verification with a context string: slh_verify (§10.3, Algorithm 24) over
//!   slh_verify_internal (§9.3, Algorithm 20).
//!
//! What is signed: certificate legs sign μ itself (32 bytes) as M with the context string
//! `quasar-cert-v1` (`quasar_lanes::CERT_CONTEXT`), which is also the Pulsar leg's ML-DSA context:
//! one digest, one context, two independent schemes.
//!
//! # Encodings
//!
//! - [`PublicKey`]: PK.seed ‖ PK.root, n + n = 48 bytes (the public key of §9.1 Algorithm 18).
//!   Every 48-byte string is a well-formed key, so the length is all there is to check.
//! - [`Signature`]: R ‖ SIG_FORS ‖ SIG_HT (§9.2 Algorithm 19), exactly
//!   [`ParameterSet::signature_len`] bytes. Every string of that length parses; its content is
//!   checked by [`PublicKey::verify`] (the FORS and hypertree roots must recompute to PK.root).
//! - [`SecretKey`]: serialized as the 32-byte seed only (see below), never as SK.seed ‖ SK.prf ‖
//!   PK.seed ‖ PK.root.
//!
//! Keys and signatures carry their parameter set: a key of one set never verifies a signature of
//! the other ([`MagnetarError::ParameterSetMismatch`]), and a signature is decoded for a set
//! named by the caller (the epoch's policy), never for one the bytes claim.
//!
//! # Key derivation (a deviation from FIPS 205, and why)
//!
//! FIPS 205 §10.1 (Algorithm 21) draws SK.seed, SK.prf and PK.seed from an approved RBG. A
//! validator instead keeps one uniformly random 32-byte seed (like its ML-DSA seed ξ, written by
//! `quasar-node keygen`) and expands it as
//!
//! ```text
//! SK.seed ‖ SK.prf ‖ PK.seed = cSHAKE256(X = name ‖ seed, L = 3·n·8, N = "", S = "QUASAR-MAGNETAR-KEYGEN-v1")
//! ```
//!
//! (SP 800-185 §3), where `name` is the parameter set's FIPS 205 name (`SLH-DSA-SHAKE-192f`), so
//! one seed gives independent keys for the two sets. The 3·n = 72 output bytes are as
//! unpredictable as the seed (192-bit security needs n = 24 bytes each, well within 256 bits of
//! seed entropy), and the seed cannot describe an inconsistent key (a PK.root that does not match
//! the seeds). slh_keygen_internal is then run unchanged; `crypto/tests/magnetar.rs` checks the
//! result against RustCrypto's independent `slh-dsa` crate given the same three seeds.
//!
//! # Secrets
//!
//! The seed, the derived seeds and the expanded key are wiped when dropped (§3.1; `fips205`'s
//! keys wipe themselves). Copies inside `fips205`'s own stack frames are outside our reach.

use std::fmt;

use fips205::traits::{KeyGen, SerDes, Signer, Verifier};
use fips205::{slh_dsa_shake_192f, slh_dsa_shake_192s};
use rand::{CryptoRng, RngCore};
use sha3::digest::{ExtendableOutput, Update, XofReader};
use sha3::{CShake256, CShake256Core};
use zeroize::Zeroizing;

/// Length in bytes of a validator's Magnetar seed (module docs, "Key derivation").
pub const SEED_LEN: usize = 32;
/// The security parameter n of both sets, in bytes: the length of SK.seed, SK.prf, PK.seed and
/// PK.root (FIPS 205 Table 2).
pub const N: usize = slh_dsa_shake_192f::N;
/// Length in bytes of a public key of either set: PK.seed ‖ PK.root.
pub const PUBLIC_KEY_LEN: usize = 2 * N;
/// Longest context string SLH-DSA accepts (FIPS 205 §10.2 Algorithm 22 line 1): its length is
/// encoded in one byte.
pub const MAX_CONTEXT_LEN: usize = 255;
/// cSHAKE256 customization string of the seed expansion (module docs).
const KEYGEN_CUSTOMIZATION: &[u8] = b"QUASAR-MAGNETAR-KEYGEN-v1";

const _: () = assert!(slh_dsa_shake_192s::N == N);
const _: () = assert!(slh_dsa_shake_192f::PK_LEN == PUBLIC_KEY_LEN);
const _: () = assert!(slh_dsa_shake_192s::PK_LEN == PUBLIC_KEY_LEN);

/// One of the two SLH-DSA parameter sets Magnetar uses (FIPS 205 §11, Table 2). Which one an epoch
/// uses is chain policy; [`ParameterSet::Shake192f`] is the default (docs/architecture.md §4).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParameterSet {
    /// SLH-DSA-SHAKE-192f: fast signing, 35,664-byte signatures.
    #[default]
    Shake192f,
    /// SLH-DSA-SHAKE-192s: small signatures (16,224 bytes), signing about 18× slower (module docs).
    Shake192s,
}

impl ParameterSet {
    /// The name FIPS 205 gives the set, e.g. `"SLH-DSA-SHAKE-192f"`.
    pub const fn name(self) -> &'static str {
        match self {
            ParameterSet::Shake192f => "SLH-DSA-SHAKE-192f",
            ParameterSet::Shake192s => "SLH-DSA-SHAKE-192s",
        }
    }

    /// Signature length in bytes (FIPS 205 Table 2): 35,664 for 192f, 16,224 for 192s.
    pub const fn signature_len(self) -> usize {
        match self {
            ParameterSet::Shake192f => slh_dsa_shake_192f::SIG_LEN,
            ParameterSet::Shake192s => slh_dsa_shake_192s::SIG_LEN,
        }
    }
}

impl fmt::Display for ParameterSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a Magnetar operation failed. Every variant but [`MagnetarError::SigningFailed`] is a
/// property of the input: drop the signature (or key) and, if a peer sent it, penalize the peer.
/// None is fatal to the node.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MagnetarError {
    /// A public key, signature or seed has the wrong length for its set.
    #[error("{what} of {set}: expected {expected} bytes, got {got}")]
    InvalidLength {
        /// What was being decoded (`"public key"`, `"signature"`, `"seed"`).
        what: &'static str,
        /// The parameter set it was decoded for.
        set: ParameterSet,
        /// Required length in bytes.
        expected: usize,
        /// Length that was supplied.
        got: usize,
    },
    /// The context string is longer than [`MAX_CONTEXT_LEN`] bytes (FIPS 205 Algorithms 22 and
    /// 24, line 1).
    #[error("context string of {len} bytes is longer than 255")]
    ContextTooLong {
        /// Length that was supplied.
        len: usize,
    },
    /// The key and the signature belong to different parameter sets.
    #[error("{signature} signature given to a {key} key")]
    ParameterSetMismatch {
        /// The key's set.
        key: ParameterSet,
        /// The signature's set.
        signature: ParameterSet,
    },
    /// The signature does not verify: the hypertree root recomputed from it differs from PK.root
    /// (FIPS 205 §9.3 Algorithm 20).
    #[error("invalid signature")]
    InvalidSignature,
    /// The random number generator failed while drawing opt_rand for hedged signing (local
    /// fault; retry).
    #[error("signing failed: random number generator failed")]
    SigningFailed,
}

fn check_context(ctx: &[u8]) -> Result<(), MagnetarError> {
    if ctx.len() <= MAX_CONTEXT_LEN {
        Ok(())
    } else {
        Err(MagnetarError::ContextTooLong { len: ctx.len() })
    }
}

/// A Magnetar public key: its parameter set and PK.seed ‖ PK.root ([`PUBLIC_KEY_LEN`] bytes).
/// Equality and hashing use both.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PublicKey {
    set: ParameterSet,
    bytes: [u8; PUBLIC_KEY_LEN],
}

impl PublicKey {
    /// Decodes a public key of `set`. Errors: [`MagnetarError::InvalidLength`] unless exactly
    /// [`PUBLIC_KEY_LEN`] bytes; any string of that length is a key (module docs).
    pub fn from_bytes(set: ParameterSet, bytes: &[u8]) -> Result<PublicKey, MagnetarError> {
        let bytes =
            <[u8; PUBLIC_KEY_LEN]>::try_from(bytes).map_err(|_| MagnetarError::InvalidLength {
                what: "public key",
                set,
                expected: PUBLIC_KEY_LEN,
                got: bytes.len(),
            })?;
        Ok(PublicKey { set, bytes })
    }

    /// The parameter set this key belongs to.
    pub fn parameter_set(&self) -> ParameterSet {
        self.set
    }

    /// PK.seed ‖ PK.root.
    pub fn as_bytes(&self) -> &[u8; PUBLIC_KEY_LEN] {
        &self.bytes
    }

    /// slh_verify(M = `msg`, SIG, ctx, PK) (FIPS 205 §10.3 Algorithm 24). Deterministic, uses
    /// public data only.
    ///
    /// Errors: [`MagnetarError::ContextTooLong`]; [`MagnetarError::ParameterSetMismatch`] when
    /// `sig` is of another set than this key; [`MagnetarError::InvalidSignature`] when the
    /// signature does not verify for this key, message and context.
    pub fn verify(&self, msg: &[u8], ctx: &[u8], sig: &Signature) -> Result<(), MagnetarError> {
        check_context(ctx)?;
        if sig.set != self.set {
            return Err(MagnetarError::ParameterSetMismatch {
                key: self.set,
                signature: sig.set,
            });
        }
        // Public-key decoding in fips205 cannot fail (it splits the 48 bytes); a signature of the
        // wrong length cannot exist (`Signature::from_bytes`). Both arms still fail closed.
        let valid = match self.set {
            ParameterSet::Shake192f => {
                let key = slh_dsa_shake_192f::PublicKey::try_from_bytes(self.bytes);
                let sig = <&[u8; slh_dsa_shake_192f::SIG_LEN]>::try_from(sig.as_bytes());
                matches!((key, sig), (Ok(key), Ok(sig)) if key.verify(msg, sig, ctx))
            }
            ParameterSet::Shake192s => {
                let key = slh_dsa_shake_192s::PublicKey::try_from_bytes(self.bytes);
                let sig = <&[u8; slh_dsa_shake_192s::SIG_LEN]>::try_from(sig.as_bytes());
                matches!((key, sig), (Ok(key), Ok(sig)) if key.verify(msg, sig, ctx))
            }
        };
        if valid {
            Ok(())
        } else {
            Err(MagnetarError::InvalidSignature)
        }
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let head = self.bytes.get(..8).unwrap_or_default();
        write!(f, "PublicKey<{}>({}…)", self.set, hex::encode(head))
    }
}

/// A Magnetar signature: its parameter set and exactly [`ParameterSet::signature_len`] bytes
/// R ‖ SIG_FORS ‖ SIG_HT. Its content is checked only by [`PublicKey::verify`].
#[derive(Clone, PartialEq, Eq)]
pub struct Signature {
    set: ParameterSet,
    bytes: Vec<u8>,
}

impl Signature {
    /// Decodes a signature of `set`. Errors: [`MagnetarError::InvalidLength`] unless exactly
    /// `set.signature_len()` bytes (checked before anything is allocated), so truncated and
    /// oversized signatures, and signatures of the other set, are refused.
    pub fn from_bytes(set: ParameterSet, bytes: &[u8]) -> Result<Signature, MagnetarError> {
        if bytes.len() != set.signature_len() {
            return Err(MagnetarError::InvalidLength {
                what: "signature",
                set,
                expected: set.signature_len(),
                got: bytes.len(),
            });
        }
        Ok(Signature {
            set,
            bytes: bytes.to_vec(),
        })
    }

    /// The parameter set this signature was decoded for or made with.
    pub fn parameter_set(&self) -> ParameterSet {
        self.set
    }

    /// R ‖ SIG_FORS ‖ SIG_HT, `parameter_set().signature_len()` bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl fmt::Debug for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let head = self.bytes.get(..8).unwrap_or_default();
        write!(f, "Signature<{}>({}…)", self.set, hex::encode(head))
    }
}

/// The expanded fips205 key of one set (wipes itself on drop).
enum Expanded {
    Shake192f(slh_dsa_shake_192f::PrivateKey),
    Shake192s(slh_dsa_shake_192s::PrivateKey),
}

/// A Magnetar secret key: the 32-byte seed, the SLH-DSA key pair it expands to for one parameter
/// set (module docs), wiped on drop. `Debug` never prints it; not `Clone`, so the secret exists
/// once.
pub struct SecretKey {
    seed: Zeroizing<[u8; SEED_LEN]>,
    expanded: Expanded,
    public: PublicKey,
}

/// SK.seed ‖ SK.prf ‖ PK.seed for `set` from a validator seed (module docs, "Key derivation").
fn derive_seeds(set: ParameterSet, seed: &[u8; SEED_LEN]) -> Zeroizing<[[u8; N]; 3]> {
    let mut xof = CShake256::from_core(CShake256Core::new(KEYGEN_CUSTOMIZATION));
    xof.update(set.name().as_bytes());
    xof.update(seed);
    let mut reader = xof.finalize_xof();
    let mut seeds = Zeroizing::new([[0u8; N]; 3]);
    for part in seeds.iter_mut() {
        reader.read(part);
    }
    seeds
}

impl SecretKey {
    /// The key pair of `set` for a 32-byte validator seed: the seed expansion of the module docs,
    /// then slh_keygen_internal (FIPS 205 §9.1 Algorithm 18). Deterministic; the seed must be
    /// uniformly random secret material, and the caller should wipe its copy.
    pub fn from_seed(set: ParameterSet, seed: &[u8; SEED_LEN]) -> SecretKey {
        let seeds = derive_seeds(set, seed);
        let [sk_seed, sk_prf, pk_seed] = &*seeds;
        let (public, expanded) = match set {
            ParameterSet::Shake192f => {
                let (pk, sk) = slh_dsa_shake_192f::KG::keygen_from_seed(sk_seed, sk_prf, pk_seed);
                (pk.into_bytes(), Expanded::Shake192f(sk))
            }
            ParameterSet::Shake192s => {
                let (pk, sk) = slh_dsa_shake_192s::KG::keygen_from_seed(sk_seed, sk_prf, pk_seed);
                (pk.into_bytes(), Expanded::Shake192s(sk))
            }
        };
        SecretKey {
            seed: Zeroizing::new(*seed),
            expanded,
            public: PublicKey { set, bytes: public },
        }
    }

    /// Decodes a serialized secret key (the seed) and expands it for `set` as
    /// [`SecretKey::from_seed`]. Errors: [`MagnetarError::InvalidLength`] unless exactly
    /// [`SEED_LEN`] bytes.
    pub fn from_bytes(set: ParameterSet, bytes: &[u8]) -> Result<SecretKey, MagnetarError> {
        let seed = Zeroizing::new(<[u8; SEED_LEN]>::try_from(bytes).map_err(|_| {
            MagnetarError::InvalidLength {
                what: "seed",
                set,
                expected: SEED_LEN,
                got: bytes.len(),
            }
        })?);
        Ok(SecretKey::from_seed(set, &seed))
    }

    /// The seed, which is this key's serialized form. The caller must not leak or log it.
    pub fn seed(&self) -> &[u8; SEED_LEN] {
        &self.seed
    }

    /// The public key PK.seed ‖ PK.root.
    pub fn public_key(&self) -> &PublicKey {
        &self.public
    }

    /// Hedged slh_sign(M = `msg`, ctx, SK) (FIPS 205 §10.2.1 Algorithm 22, the default variant):
    /// opt_rand is n fresh bytes from `rng`.
    ///
    /// Errors: [`MagnetarError::ContextTooLong`]; [`MagnetarError::SigningFailed`] when `rng`
    /// fails.
    pub fn sign(
        &self,
        msg: &[u8],
        ctx: &[u8],
        rng: &mut (impl CryptoRng + RngCore),
    ) -> Result<Signature, MagnetarError> {
        self.sign_with(msg, ctx, rng, true)
    }

    /// Deterministic slh_sign (FIPS 205 §10.2.1 Algorithm 22 without addrnd, so that
    /// slh_sign_internal uses opt_rand = PK.seed): the signature depends only on the key, `msg`
    /// and `ctx`. For tests and
    /// known-answer checks; validators sign hedged. Errors: [`MagnetarError::ContextTooLong`].
    pub fn sign_deterministic(&self, msg: &[u8], ctx: &[u8]) -> Result<Signature, MagnetarError> {
        // fips205 never draws from the generator when `hedged` is false.
        self.sign_with(msg, ctx, &mut rand::rngs::OsRng, false)
    }

    fn sign_with(
        &self,
        msg: &[u8],
        ctx: &[u8],
        rng: &mut (impl CryptoRng + RngCore),
        hedged: bool,
    ) -> Result<Signature, MagnetarError> {
        check_context(ctx)?;
        let bytes = match &self.expanded {
            Expanded::Shake192f(sk) => sk
                .try_sign_with_rng(rng, msg, ctx, hedged)
                .map(|sig| sig.to_vec()),
            Expanded::Shake192s(sk) => sk
                .try_sign_with_rng(rng, msg, ctx, hedged)
                .map(|sig| sig.to_vec()),
        }
        .map_err(|_| MagnetarError::SigningFailed)?;
        Ok(Signature {
            set: self.public.set,
            bytes,
        })
    }
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretKey<{}>(<redacted>)", self.public.set)
    }
}
