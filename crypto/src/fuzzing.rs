//! Entry points for fuzzers and smoke tests of this crate's decoders.
//!
//! Each function takes arbitrary bytes and panics only when a property of this crate is broken;
//! for every other input it returns quietly. The cargo-fuzz targets in `crypto/fuzz` are one-line
//! calls to these functions, and `crypto/tests/fuzz_smoke.rs` drives the same functions with
//! seeded mutated and random inputs on the stable toolchain.
//!
//! - [`bls_decode`]: BLS public keys, signatures and proofs of possession from peer, file or RPC
//!   bytes decode or fail cleanly (directly and through the [`PublicKeyCache`]); what decodes is
//!   canonical (re-encodes to the same bytes) and never the identity.
//! - [`bls_threshold_decode`]: threshold BLS secret shares and signature shares decode or fail
//!   cleanly (length, index in 1..=1024, scalar below r and nonzero, point in G2 and not the
//!   identity), and what decodes is canonical.
//! - [`bls_threshold_verify`]: what decodes works: a decoded secret share signs a share that
//!   verifies under its public key, and one signature share combines (threshold 1) to its own
//!   signature.
//! - [`corona_decode`]: Corona group keys, signatures and round messages decode or fail cleanly,
//!   and what decodes re-encodes to the same bytes (the encodings are canonical).
//! - [`corona_verify`]: a decoded signature, and a valid signature edited anywhere, verifies or
//!   is rejected without panicking; the unedited signature verifies.
//! - [`rollup_proving_key`]: rollup proving key files of any content load or fail with an
//!   error (header, arkworks body, checksum), and a valid header with a damaged body never loads.
//! - [`pulsar_decode`]: Pulsar round messages decode or fail cleanly (lengths checked before
//!   allocating, coefficients below q, flags 0/1) and what decodes is canonical.
//! - [`mldsa_verify`]: ML-DSA-65 public keys and signatures of any length decode or fail cleanly,
//!   and verification of a valid pair edited anywhere (key, c̃, z, hints) returns a verdict
//!   without panicking, the same through a [`mldsa::PreparedKey`] as through libcrux.
//!
//! Decoding and verification are separate targets where verification is expensive (a pairing,
//! a Corona verification: milliseconds against a decoder's microseconds), so that the decoders
//! are explored at full speed. Targets that fuzz a long valid encoding apply the input to it as
//! edits ([`edit`]).

use crate::accel::CpuBackend;
use crate::bls::{ProofOfPossession, PublicKey, Signature, PUBLIC_KEY_LEN, SIGNATURE_LEN};
use crate::bls_cache::PublicKeyCache;
use crate::corona::scheme::{
    CoronaError, GroupKey, Round1Message, Round2Message, Signature as CoronaSignature,
};
use crate::mldsa::{self, MlDsa65, ParameterSet};
use std::sync::OnceLock;

/// The encoding of the identity point, compressed: flags 0b11 then zeros.
fn is_identity_encoding(bytes: &[u8]) -> bool {
    bytes.first() == Some(&0xc0) && bytes.iter().skip(1).all(|&b| b == 0)
}

/// Decodes `data` as a BLS public key, a signature and a proof of possession (each from the
/// prefix of its length, and from the whole input), directly and through a shared cache.
///
/// Panics if something decodes that does not re-encode to its input, is the identity, or if the
/// cache and the direct decoder disagree.
pub fn bls_decode(data: &[u8]) {
    static CACHE: OnceLock<PublicKeyCache> = OnceLock::new();
    let cache = CACHE.get_or_init(PublicKeyCache::new);
    let key_bytes = data.get(..PUBLIC_KEY_LEN).unwrap_or(data);
    for bytes in [data, key_bytes] {
        let direct = PublicKey::from_bytes(bytes);
        let cached = cache.get_or_decode(bytes);
        assert_eq!(direct, cached, "cache and decoder disagree");
        if let Ok(key) = direct {
            assert_eq!(
                key.to_bytes().as_slice(),
                bytes,
                "non-canonical key accepted"
            );
            assert!(!is_identity_encoding(bytes), "identity key accepted");
        }
    }
    let sig_bytes = data.get(..SIGNATURE_LEN).unwrap_or(data);
    for bytes in [data, sig_bytes] {
        if let Ok(sig) = Signature::from_bytes(bytes) {
            assert_eq!(
                sig.to_bytes().as_slice(),
                bytes,
                "non-canonical signature accepted"
            );
            assert!(!is_identity_encoding(bytes), "identity signature accepted");
        }
        if let Ok(pop) = ProofOfPossession::from_bytes(bytes) {
            assert_eq!(
                pop.to_bytes().as_slice(),
                bytes,
                "non-canonical proof accepted"
            );
        }
    }
}

/// Decodes `data` as a threshold BLS secret share and as a signature share (each from the prefix
/// of its length, and from the whole input).
///
/// Panics if something decodes that does not re-encode to its input or has an index outside
/// `1..=MAX_PARTICIPANTS`.
pub fn bls_threshold_decode(data: &[u8]) {
    bls_threshold_shares(data);
}

/// The secret shares and signature shares that [`bls_threshold_decode`] decodes from `data`
/// (checked canonical and in range).
type ThresholdShares = (
    Vec<crate::bls_threshold::SecretShare>,
    Vec<crate::bls_threshold::SignatureShare>,
);

fn bls_threshold_shares(data: &[u8]) -> ThresholdShares {
    use crate::bls_threshold::{
        SecretShare, SignatureShare, MAX_PARTICIPANTS, SECRET_SHARE_LEN, SIGNATURE_SHARE_LEN,
    };
    let valid_index = |index: u16| (1..=MAX_PARTICIPANTS).contains(&index);
    let mut secrets = Vec::new();
    let secret_bytes = data.get(..SECRET_SHARE_LEN).unwrap_or(data);
    for bytes in [data, secret_bytes] {
        if let Ok(share) = SecretShare::from_bytes(bytes) {
            assert_eq!(
                share.to_bytes().as_slice(),
                bytes,
                "non-canonical secret share accepted"
            );
            assert!(
                valid_index(share.index()),
                "secret share index out of range"
            );
            secrets.push(share);
        }
    }
    let mut signatures = Vec::new();
    let share_bytes = data.get(..SIGNATURE_SHARE_LEN).unwrap_or(data);
    for bytes in [data, share_bytes] {
        if let Ok(share) = SignatureShare::from_bytes(bytes) {
            assert_eq!(
                share.to_bytes().as_slice(),
                bytes,
                "non-canonical signature share accepted"
            );
            assert!(
                valid_index(share.index()),
                "signature share index out of range"
            );
            signatures.push(share);
        }
    }
    (secrets, signatures)
}

/// Decodes `data` as [`bls_threshold_decode`] does, then uses what decodes: a decoded secret
/// share signs a signature share, which must verify under the share's public key; a decoded
/// signature share, combined alone at threshold 1 (Lagrange coefficient 1), must be its own
/// signature.
///
/// Panics if one of those fails, or as [`bls_threshold_decode`].
pub fn bls_threshold_verify(data: &[u8]) {
    use crate::bls_threshold::{combine, verify_share};
    let (secrets, signatures) = bls_threshold_shares(data);
    for share in secrets {
        let signed = share.sign(b"quasar-fuzz");
        assert_eq!(signed.index(), share.index());
        assert_eq!(
            verify_share(&share.public_key(), b"quasar-fuzz", &signed),
            Ok(()),
            "a decoded secret share signs a share that does not verify"
        );
    }
    for share in signatures {
        assert_eq!(
            combine(1, &[share]).ok(),
            Some(*share.signature()),
            "one share at threshold 1 must combine to itself"
        );
    }
}

/// `base` edited by `data`, for targets that fuzz a valid encoding too long for a fuzzer to build
/// whole: each `offset_len + 1` bytes of `data` are an offset (`offset_len` bytes, little-endian,
/// modulo `base.len()`) and a byte XORed in there, so that small inputs reach any field. Trailing
/// bytes that make no whole edit are ignored. The result is unedited exactly when it equals
/// `base`.
pub fn edit(base: &[u8], data: &[u8], offset_len: usize) -> Vec<u8> {
    let mut bytes = base.to_vec();
    for edit in data.chunks_exact(offset_len + 1) {
        let Some((&value, offset)) = edit.split_last() else {
            continue;
        };
        let offset = offset
            .iter()
            .rev()
            .fold(0usize, |acc, &b| acc << 8 | usize::from(b));
        if let Some(byte) = bytes.get_mut(offset % base.len().max(1)) {
            *byte ^= value;
        }
    }
    bytes
}

/// A fixed ML-DSA-65 key and its signature on `b"quasar-fuzz"` with context `b"fuzz"`.
fn mldsa_fixture() -> &'static (Vec<u8>, Vec<u8>) {
    static FIXTURE: OnceLock<(Vec<u8>, Vec<u8>)> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let sk = mldsa::SecretKey::<MlDsa65>::from_seed(&[0x5a; 32]);
        let sig = sk
            .sign_deterministic(b"quasar-fuzz", b"fuzz")
            .map(|sig| sig.as_bytes().to_vec())
            .unwrap_or_default();
        (sk.public_key().as_bytes().to_vec(), sig)
    })
}

/// Decodes `data` as an ML-DSA-65 public key and as a signature, then verifies a fixed valid
/// (key, signature) pair after applying `data` as edits ([`edit`] with 2-byte offsets into key ‖
/// signature, so small inputs reach every field of a signature: c̃, z, and the hint encoding).
/// Keys and signatures are too long for a fuzzer to build whole.
///
/// Panics if a decoder accepts a wrong length or a decoded value does not round-trip, or if the
/// unedited pair does not verify.
pub fn mldsa_verify(data: &[u8]) {
    type Key = mldsa::PublicKey<MlDsa65>;
    type Sig = mldsa::Signature<MlDsa65>;
    if let Ok(key) = Key::from_bytes(data) {
        assert_eq!(
            data.len(),
            MlDsa65::PUBLIC_KEY_LEN,
            "wrong-length key accepted"
        );
        assert_eq!(key.as_bytes(), data);
    }
    if let Ok(sig) = Sig::from_bytes(data) {
        assert_eq!(
            data.len(),
            MlDsa65::SIGNATURE_LEN,
            "wrong-length signature accepted"
        );
        assert_eq!(sig.as_bytes(), data);
    }
    let (key, sig) = mldsa_fixture();
    let valid = [key.as_slice(), sig].concat();
    let bytes = edit(&valid, data, 2);
    let edited = bytes != valid;
    let (key, sig) = bytes.split_at(key.len());
    let decoded = (Key::from_bytes(key), Sig::from_bytes(sig));
    assert!(
        decoded.0.is_ok() && decoded.1.is_ok(),
        "edits keep lengths, so the fixture must decode"
    );
    if let (Ok(key), Ok(sig)) = decoded {
        let verdict = key.verify(b"quasar-fuzz", b"fuzz", &sig);
        let prepared = mldsa::PreparedKey::new(&key, &CpuBackend);
        assert_eq!(
            prepared.verify(b"quasar-fuzz", b"fuzz", &sig, &CpuBackend),
            verdict,
            "a prepared key and libcrux disagree"
        );
        if !edited {
            assert_eq!(verdict, Ok(()), "the unedited fixture must verify");
        }
    }
}

/// The dealer's seed of the fixed Corona 2-of-3 group key.
const CORONA_FIXTURE_SEED: [u8; 32] = [0x3c; 32];

/// The fixed Corona 2-of-3 group key and the encoding of a signature on "quasar-fuzz" that
/// verifies under it, both from [`corona_seeds`].
fn corona_fixture() -> Option<&'static (GroupKey, Vec<u8>)> {
    static FIXTURE: OnceLock<Option<(GroupKey, Vec<u8>)>> = OnceLock::new();
    FIXTURE
        .get_or_init(|| {
            let seeds = corona_seeds().ok()?;
            let seed = |name: &str| seeds.iter().find(|(n, _)| *n == name).map(|(_, b)| b);
            let key = GroupKey::from_bytes(seed("group_key")?).ok()?;
            let signature = seed("signature")?.clone();
            key.verify(
                b"quasar-fuzz",
                &CoronaSignature::from_bytes(&signature).ok()?,
            )
            .ok()?;
            Some((key, signature))
        })
        .as_ref()
}

/// Real encodings to seed `corona_decode`'s corpus (libFuzzer's random inputs stay far below the
/// 615 KB of a round-1 message otherwise): the fixed 2-of-3 group key, and from one signing
/// session of parties 0 and 2 on "quasar-fuzz", a round-1 message, a round-2 message and the
/// signature, which verifies under that key. Named `(file name, bytes)`. Errors: the scheme
/// error if a step fails (it does not with this fixture).
pub fn corona_seeds() -> Result<Vec<(&'static str, Vec<u8>)>, CoronaError> {
    use crate::corona::scheme::{combine, trusted_dealer_keygen, SessionId, Signer};
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha20Rng::from_seed(CORONA_FIXTURE_SEED);
    let (key, shares) = trusted_dealer_keygen(2, 3, &mut rng)?;
    let mut signers: Vec<Signer> = shares
        .into_iter()
        .filter(|share| share.index() != 1)
        .map(Signer::new)
        .collect();
    let Some(set) = signers.first().map(|s| s.share().signing_set(&[0, 2])) else {
        return Err(CoronaError::MissingMessage(0));
    };
    let set = set?;
    let session = SessionId([0x5e; 32]);
    let mut states = Vec::new();
    let mut round1 = Vec::new();
    for signer in signers.iter_mut() {
        let (state, message) = signer.round1(session, &set, &mut rng)?;
        states.push(state);
        round1.push(message);
    }
    let mut round2 = Vec::new();
    let mut context = Err(CoronaError::MissingMessage(0));
    for (signer, state) in signers.iter().zip(states) {
        let (message, ctx) = signer.round2(state, b"quasar-fuzz", &round1)?;
        round2.push(message);
        context = Ok(ctx);
    }
    let signature = combine(&key, &context?, &round2)?;
    let mut seeds = vec![
        ("group_key", key.to_bytes()),
        ("signature", signature.to_bytes()),
    ];
    seeds.extend(round1.first().map(|m| ("round1", m.to_bytes())));
    seeds.extend(round2.first().map(|m| ("round2", m.to_bytes())));
    Ok(seeds)
}

/// Decodes `bytes` as a Corona signature; panics if it decodes but does not re-encode to `bytes`.
fn decode_corona_signature(bytes: &[u8]) -> Option<CoronaSignature> {
    let signature = CoronaSignature::from_bytes(bytes).ok()?;
    assert_eq!(
        signature.to_bytes(),
        bytes,
        "non-canonical signature accepted"
    );
    Some(signature)
}

/// Decodes `data` as a Corona group key, key share, signature, round-1 message and round-2
/// message; each that decodes must re-encode to exactly `data`. Nothing is verified
/// ([`corona_verify`] does that).
///
/// Panics if an encoding is not canonical (two byte strings for one value).
pub fn corona_decode(data: &[u8]) {
    if let Ok(key) = GroupKey::from_bytes(data) {
        assert_eq!(key.to_bytes(), data, "non-canonical group key accepted");
    }
    if let Ok(share) = crate::corona::scheme::KeyShare::from_bytes(data) {
        assert_eq!(
            share.to_bytes().as_slice(),
            data,
            "non-canonical key share accepted"
        );
    }
    decode_corona_signature(data);
    if let Ok(message) = Round1Message::from_bytes(data) {
        assert_eq!(
            message.to_bytes(),
            data,
            "non-canonical round-1 message accepted"
        );
    }
    if let Ok(message) = Round2Message::from_bytes(data) {
        assert_eq!(
            message.to_bytes(),
            data,
            "non-canonical round-2 message accepted"
        );
    }
}

/// Verifies `data`, if it decodes as a Corona signature, under the fixed group key; then applies
/// `data` as edits ([`edit`] with 3-byte offsets) to a valid signature on "quasar-fuzz" and
/// verifies what decodes (any verdict is fine; a panic is not).
///
/// Panics if a signature decodes that does not re-encode to its bytes, if the fixture does not
/// build, or if the unedited signature does not verify.
pub fn corona_verify(data: &[u8]) {
    let fixture = corona_fixture();
    assert!(
        fixture.is_some(),
        "the Corona fixture must build and its signature verify"
    );
    let Some((key, valid)) = fixture else {
        return;
    };
    if let Some(signature) = decode_corona_signature(data) {
        let _ = key.verify(b"quasar-fuzz", &signature);
    }
    let bytes = edit(valid, data, 3);
    if let Some(signature) = decode_corona_signature(&bytes) {
        let verdict = key.verify(b"quasar-fuzz", &signature);
        assert!(
            verdict.is_ok() || bytes != *valid,
            "the unedited fixture signature must verify"
        );
    }
}

/// Loads `data` as a rollup proving key file; also with a valid header in front, so the body
/// decoder and the checksum see arbitrary bytes. Any result is fine; a panic is not.
///
/// Panics if a file with a damaged (fuzzed) body after a valid header loads successfully
/// (its checksum cannot match except by a SHA3-256 collision).
pub fn rollup_proving_key(data: &[u8]) {
    use crate::rollup::prover::read_proving_key;
    let _ = read_proving_key(data);
    let mut framed = b"QUASAR-ROLLUP-PK-v1\n".to_vec();
    framed.extend_from_slice(&[65, 1, 0, 0, 0, 1, 0, 0, 0]);
    framed.extend_from_slice(data);
    assert!(
        read_proving_key(framed.as_slice()).is_err(),
        "a fuzzed proving key body loaded"
    );
}

/// Decodes `data` as a Pulsar group key and key share, then (after a first byte that picks
/// 2-of-3 or 3-of-5, so both message sizes are reachable) as round-1, round-2 and round-3
/// messages; what decodes must re-encode to exactly the bytes it came from.
///
/// Panics if an encoding is not canonical.
pub fn pulsar_decode(data: &[u8]) {
    use crate::pulsar::params::Parameters;
    use crate::pulsar::{Round1Message, Round2Message, Round3Message};
    if let Ok(group) = crate::pulsar::GroupKey::from_bytes(data) {
        assert_eq!(group.to_bytes(), data, "non-canonical group key accepted");
    }
    if let Ok(share) = crate::pulsar::KeyShare::from_bytes(data) {
        assert_eq!(
            share.to_bytes().as_slice(),
            data,
            "non-canonical key share accepted"
        );
    }
    let Some((&shape, body)) = data.split_first() else {
        return;
    };
    let Some(params) = (if shape & 1 == 0 {
        Parameters::new(2, 3)
    } else {
        Parameters::new(3, 5)
    }) else {
        return;
    };
    if let Ok(m) = Round1Message::from_bytes(body) {
        assert_eq!(m.to_bytes(), body, "non-canonical round-1 message accepted");
    }
    if let Ok(m) = Round2Message::from_bytes(body, &params) {
        assert_eq!(m.to_bytes(), body, "non-canonical round-2 message accepted");
    }
    if let Ok(m) = Round3Message::from_bytes(body, &params) {
        assert_eq!(m.to_bytes(), body, "non-canonical round-3 message accepted");
    }
}
