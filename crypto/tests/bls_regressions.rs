//! Regression tests for known bug classes of BLS implementations (issue 4). Each test names the
//! bug it guards against and the behaviour that prevents it.

use quasar_crypto::bls::{
    aggregate_verify, batch_verify, fast_aggregate_verify, AggregatePublicKey, BlsError,
    ProofOfPossession, PublicKey, SecretKey, Signature, PUBLIC_KEY_LEN, SIGNATURE_LEN,
};
use quasar_crypto::bls_cache::PublicKeyCache;

/// The order r of G1 and G2, big-endian.
const R: [u8; 32] = [
    0x73, 0xed, 0xa7, 0x53, 0x29, 0x9d, 0x7d, 0x48, 0x33, 0x39, 0xd8, 0x08, 0x09, 0xa1, 0xd8, 0x05,
    0x53, 0xbd, 0xa4, 0x02, 0xff, 0xfe, 0x5b, 0xfe, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01,
];

fn key(i: u8) -> SecretKey {
    SecretKey::from_seed(&[i; 32])
}

/// `r - sk`: the secret key whose public key and signatures are the negations of `sk`'s.
fn negated(sk: &SecretKey) -> SecretKey {
    let s = sk.to_bytes();
    let mut out = [0u8; 32];
    let mut borrow = 0i16;
    for i in (0..32).rev() {
        let d = i16::from(R[i]) - i16::from(s[i]) - borrow;
        borrow = i16::from(d < 0);
        out[i] = (d + 256 * borrow) as u8;
    }
    SecretKey::from_bytes(&out).unwrap()
}

fn identity_bytes(len: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; len];
    bytes[0] = 0xc0;
    bytes
}

/// Bug: an aggregate containing the identity public key with the identity signature verifies
/// trivially (`e(∞, H(m)) = 1 = e(g1, ∞)`), and keys that cancel (`pk`, `-pk`) make an aggregate
/// key of infinity. Fix: neither identity point decodes, an identity aggregate signature is
/// refused by AggregateVerify, and an identity aggregate key never verifies.
#[test]
fn identity_public_key_plus_identity_signature_in_an_aggregate() {
    assert_eq!(
        PublicKey::from_bytes(&identity_bytes(PUBLIC_KEY_LEN)),
        Err(BlsError::IdentityPoint)
    );
    assert_eq!(
        Signature::from_bytes(&identity_bytes(SIGNATURE_LEN)),
        Err(BlsError::IdentityPoint)
    );

    // pk and -pk each pass KeyValidate (and each can carry a valid PoP), but sum to infinity;
    // their signatures on one message sum to the identity signature.
    let sk = key(1);
    let neg = negated(&sk);
    let (pk, neg_pk) = (sk.public_key(), neg.public_key());
    assert_eq!(neg_pk.verify_possession(&neg.prove_possession()), Ok(()));
    let msg = b"round digest";
    let identity = Signature::aggregate(&[sk.sign(msg), neg.sign(msg)]).unwrap();
    assert_eq!(identity.to_bytes().to_vec(), identity_bytes(SIGNATURE_LEN));
    assert_eq!(
        fast_aggregate_verify(&[pk, neg_pk], msg, &identity),
        Err(BlsError::InvalidSignature)
    );
    let infinity_key = AggregatePublicKey::aggregate(&[pk, neg_pk]).unwrap();
    assert_eq!(
        infinity_key.verify(msg, &identity),
        Err(BlsError::InvalidSignature)
    );
    assert_eq!(
        aggregate_verify(&[(&pk, &msg[..]), (&neg_pk, &msg[..])], &identity),
        Err(BlsError::IdentityPoint)
    );
    // In a batch, the identity signature is named as invalid.
    let other = key(2);
    let good = other.sign(b"vote");
    let other_pk = other.public_key();
    assert_eq!(
        batch_verify(&[(&other_pk, b"vote", &good), (&pk, msg, &identity)]),
        Err(vec![1])
    );
}

/// Bug: FastAggregateVerify or AggregateVerify over no keys returning true (an empty product of
/// pairings is one). Fix: an empty signer set is an error before any pairing.
#[test]
fn empty_pubkey_list() {
    let sig = key(1).sign(b"m");
    assert_eq!(
        fast_aggregate_verify(&[], b"m", &sig),
        Err(BlsError::EmptySignerSet)
    );
    assert_eq!(aggregate_verify(&[], &sig), Err(BlsError::EmptySignerSet));
    assert_eq!(
        AggregatePublicKey::aggregate(&[]),
        Err(BlsError::EmptySignerSet)
    );
    assert_eq!(Signature::aggregate(&[]), Err(BlsError::EmptyAggregate));
}

/// Bug: accepting a point that is on the curve but outside the prime-order subgroup (small
/// subgroup / invalid-curve attacks on the pairing). Fix: KeyValidate and the signature decoder
/// run the subgroup check; the cache can only hold checked keys.
#[test]
fn point_on_the_curve_outside_the_subgroup() {
    // x = 0 on E1: (0, ±2), a point of order 3.
    let mut g1 = [0u8; PUBLIC_KEY_LEN];
    g1[0] = 0x80;
    assert_eq!(PublicKey::from_bytes(&g1), Err(BlsError::NotInSubgroup));
    let cache = PublicKeyCache::new();
    assert_eq!(cache.get_or_decode(&g1), Err(BlsError::NotInSubgroup));
    assert!(cache.is_empty());

    // On E2: the first small x (c1 = 0, c0 = t) that decompresses is, with overwhelming
    // probability, outside G2 (the cofactor is ~2^509).
    let mut found = false;
    for t in 0u8..=255 {
        let mut g2 = [0u8; SIGNATURE_LEN];
        g2[0] = 0x80;
        g2[SIGNATURE_LEN - 1] = t;
        match Signature::from_bytes(&g2) {
            Err(BlsError::InvalidEncoding) => continue, // not on the curve
            other => {
                assert_eq!(other, Err(BlsError::NotInSubgroup), "x.c0 = {t}");
                found = true;
                break;
            }
        }
    }
    assert!(found, "no small x on E2");
}

/// Bug: reading `0x40‖0…` (infinity flag, compression flag clear) as the compressed identity,
/// or ignoring the flag bits. Fix: only the compressed form is accepted, and a 48/96-byte input
/// without the compression flag is an encoding error.
#[test]
fn infinity_flag_without_compression_flag() {
    let mut pk = [0u8; PUBLIC_KEY_LEN];
    pk[0] = 0x40;
    assert_eq!(PublicKey::from_bytes(&pk), Err(BlsError::InvalidEncoding));
    let mut sig = [0u8; SIGNATURE_LEN];
    sig[0] = 0x40;
    assert_eq!(Signature::from_bytes(&sig), Err(BlsError::InvalidEncoding));
    // A valid key with its compression flag cleared is refused as well.
    let mut valid = key(1).public_key().to_bytes();
    valid[0] &= 0x7f;
    assert_eq!(
        PublicKey::from_bytes(&valid),
        Err(BlsError::InvalidEncoding)
    );
}

/// Bug: one signer's signature added twice to an aggregate, with the signer listed twice, counted
/// as two signers' worth of stake. Fix: FastAggregateVerify refuses a repeated key (Quasar
/// deviation), and without the repeat the doubled signature does not verify.
#[test]
fn same_signature_added_twice_for_one_signer() {
    let (a, b) = (key(1), key(2));
    let msg = b"block";
    let (sa, sb) = (a.sign(msg), b.sign(msg));
    let doubled = Signature::aggregate(&[sa, sa, sb]).unwrap();
    let (pa, pb) = (a.public_key(), b.public_key());
    assert_eq!(
        fast_aggregate_verify(&[pa, pa, pb], msg, &doubled),
        Err(BlsError::DuplicateSigner)
    );
    assert_eq!(
        fast_aggregate_verify(&[pa, pb], msg, &doubled),
        Err(BlsError::InvalidSignature)
    );
    assert_eq!(
        fast_aggregate_verify(&[pa, pb], msg, &Signature::aggregate(&[sa, sb]).unwrap()),
        Ok(())
    );
}

/// Bug: a proof of possession made with the signing DST (i.e. an ordinary signature over the key
/// bytes, which anyone can be tricked into producing) accepted as a PoP. Fix: PopVerify uses
/// its own DST, `BLS_POP_…`.
#[test]
fn pop_produced_with_the_signing_dst() {
    let sk = key(3);
    let pk = sk.public_key();
    let forged = ProofOfPossession::from_bytes(&sk.sign(&pk.to_bytes()).to_bytes()).unwrap();
    assert_eq!(
        pk.verify_possession(&forged),
        Err(BlsError::InvalidSignature)
    );
    assert_eq!(pk.verify_possession(&sk.prove_possession()), Ok(()));
}

/// Bug: a decoder that reads the first 96 (48) bytes and ignores what follows, so one signature
/// has many encodings. Fix: the length must be exact.
#[test]
fn trailing_bytes_after_a_signature() {
    let mut sig = key(1).sign(b"m").to_bytes().to_vec();
    sig.push(0);
    assert_eq!(
        Signature::from_bytes(&sig),
        Err(BlsError::InvalidLength {
            expected: SIGNATURE_LEN,
            got: SIGNATURE_LEN + 1
        })
    );
    assert_eq!(
        ProofOfPossession::from_bytes(&sig),
        Err(BlsError::InvalidLength {
            expected: SIGNATURE_LEN,
            got: SIGNATURE_LEN + 1
        })
    );
    let mut pk = key(1).public_key().to_bytes().to_vec();
    pk.push(0);
    assert_eq!(
        PublicKey::from_bytes(&pk),
        Err(BlsError::InvalidLength {
            expected: PUBLIC_KEY_LEN,
            got: PUBLIC_KEY_LEN + 1
        })
    );
    assert_eq!(
        PublicKeyCache::new().get_or_decode(&pk),
        Err(BlsError::InvalidLength {
            expected: PUBLIC_KEY_LEN,
            got: PUBLIC_KEY_LEN + 1
        })
    );
}
