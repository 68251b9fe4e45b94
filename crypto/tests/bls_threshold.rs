//! Threshold BLS (`quasar_crypto::bls_threshold`) as a specification: real dealings, real
//! signature shares, combined signatures checked with the ordinary BLS verifier of `bls.rs`, and
//! an independent arkworks computation of the same points.

use ark_bls12_381::{Fr, G1Affine, G2Affine, G2Projective};
use ark_ec::{AffineRepr, CurveGroup};
use ark_ff::{BigInteger, Field, PrimeField};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use proptest::prelude::*;
use quasar_crypto::bls::{BlsError, SecretKey, Signature, SIGNATURE_LEN};
use quasar_crypto::bls_threshold::{
    combine, deal, verify_share, Dealing, SecretShare, SignatureShare, ThresholdError,
    MAX_PARTICIPANTS, SECRET_SHARE_LEN, SIGNATURE_SHARE_LEN,
};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

const MSG: &[u8] = b"quasar round 42";

/// The order r of G1 and G2, big-endian.
const R: [u8; 32] = [
    0x73, 0xed, 0xa7, 0x53, 0x29, 0x9d, 0x7d, 0x48, 0x33, 0x39, 0xd8, 0x08, 0x09, 0xa1, 0xd8, 0x05,
    0x53, 0xbd, 0xa4, 0x02, 0xff, 0xfe, 0x5b, 0xfe, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01,
];

fn deal_seeded(threshold: u16, participants: u16, seed: u64) -> Dealing {
    deal(
        threshold,
        participants,
        &mut ChaCha20Rng::seed_from_u64(seed),
    )
    .unwrap()
}

fn sign_all(dealing: &Dealing, msg: &[u8]) -> Vec<SignatureShare> {
    dealing.shares().iter().map(|s| s.sign(msg)).collect()
}

/// Every `k`-element subset of `0..n`, as ascending positions.
fn subsets(n: usize, k: usize) -> Vec<Vec<usize>> {
    if k == 0 {
        return vec![vec![]];
    }
    if n < k {
        return vec![];
    }
    let mut out = subsets(n - 1, k);
    for mut subset in subsets(n - 1, k - 1) {
        subset.push(n - 1);
        out.push(subset);
    }
    out
}

fn share_bytes(index: u16, rest: &[u8]) -> Vec<u8> {
    [index.to_be_bytes().as_slice(), rest].concat()
}

/// The Lagrange coefficient at zero of `i` in `indices`, straight from the definition.
fn lagrange(i: u16, indices: &[u16]) -> Fr {
    indices
        .iter()
        .filter(|&&j| j != i)
        .fold(Fr::from(1u8), |acc, &j| {
            acc * Fr::from(j) * (Fr::from(j) - Fr::from(i)).inverse().unwrap()
        })
}

fn ark_g2(sig: &Signature) -> G2Affine {
    G2Affine::deserialize_compressed(sig.to_bytes().as_slice()).unwrap()
}

fn ark_bytes(point: impl CanonicalSerialize) -> Vec<u8> {
    let mut out = Vec::new();
    point.serialize_compressed(&mut out).unwrap();
    out
}

#[test]
fn combined_signature_verifies_under_the_group_key_for_several_shapes() {
    for (t, n) in [(1, 1), (1, 3), (2, 3), (3, 5), (7, 10), (4, 4), (10, 10)] {
        let dealing = deal_seeded(t, n, u64::from(t) * 1000 + u64::from(n));
        assert_eq!(dealing.threshold(), t);
        assert_eq!(dealing.participants(), n);
        assert_eq!(dealing.share_public_keys().len(), usize::from(n));
        let shares = sign_all(&dealing, MSG);
        let first = combine(t, &shares).unwrap();
        assert_eq!(dealing.group_public_key().verify(MSG, &first), Ok(()));
        // The last t shares, newest first, give the same bytes.
        let mut last: Vec<SignatureShare> = shares.iter().rev().copied().collect();
        last.truncate(usize::from(t));
        assert_eq!(combine(t, &last).unwrap().to_bytes(), first.to_bytes());
    }
}

/// The bound itself: MAX_PARTICIPANTS-of-MAX_PARTICIPANTS, indices up to 1024 in the
/// coefficients and the 1024-point multi-scalar multiplication.
#[test]
fn largest_dealing_combines() {
    let dealing = deal_seeded(MAX_PARTICIPANTS, MAX_PARTICIPANTS, 20);
    let shares = sign_all(&dealing, MSG);
    let sig = combine(MAX_PARTICIPANTS, &shares).unwrap();
    assert_eq!(dealing.group_public_key().verify(MSG, &sig), Ok(()));
    assert_eq!(
        combine(MAX_PARTICIPANTS, &shares[1..]),
        Err(ThresholdError::NotEnoughShares {
            given: usize::from(MAX_PARTICIPANTS) - 1,
            needed: MAX_PARTICIPANTS
        })
    );
}

#[test]
fn every_threshold_subset_combines_to_the_same_bytes() {
    for (t, n) in [(2, 4), (3, 5), (5, 5)] {
        let dealing = deal_seeded(t, n, 7);
        let shares = sign_all(&dealing, MSG);
        let reference = combine(t, &shares).unwrap();
        assert_eq!(dealing.group_public_key().verify(MSG, &reference), Ok(()));
        let all = subsets(usize::from(n), usize::from(t));
        assert!(!all.is_empty());
        for subset in all {
            let mut picked: Vec<SignatureShare> = subset.iter().map(|&k| shares[k]).collect();
            assert_eq!(combine(t, &picked).unwrap(), reference, "subset {subset:?}");
            // Order does not matter either.
            picked.reverse();
            assert_eq!(combine(t, &picked).unwrap(), reference, "subset {subset:?}");
        }
    }
}

/// With t = 1 every share is the group secret itself: each signature share is the signature.
#[test]
fn threshold_one_shares_are_the_group_key() {
    let dealing = deal_seeded(1, 4, 11);
    for share in dealing.shares() {
        assert_eq!(share.public_key(), *dealing.group_public_key());
        assert_eq!(
            combine(1, &[share.sign(MSG)]).unwrap(),
            *share.sign(MSG).signature()
        );
    }
}

#[test]
fn fewer_than_threshold_shares_is_an_error() {
    let dealing = deal_seeded(3, 5, 1);
    let shares = sign_all(&dealing, MSG);
    assert_eq!(
        combine(3, &shares[..2]),
        Err(ThresholdError::NotEnoughShares {
            given: 2,
            needed: 3
        })
    );
    assert_eq!(
        combine(3, &[]),
        Err(ThresholdError::NotEnoughShares {
            given: 0,
            needed: 3
        })
    );
    assert_eq!(
        combine(3, &[]).unwrap_err().to_string(),
        "not enough signature shares: 0 with distinct indices given, 3 needed"
    );
}

/// A share repeated (a retransmission, or an equivocating sender) counts once: it neither fills
/// the quorum nor changes the result.
#[test]
fn duplicate_indices_count_once() {
    let dealing = deal_seeded(3, 5, 2);
    let shares = sign_all(&dealing, MSG);
    let repeated = [shares[0], shares[0], shares[1], shares[1]];
    assert_eq!(
        combine(3, &repeated),
        Err(ThresholdError::NotEnoughShares {
            given: 2,
            needed: 3
        })
    );
    let with_repeats = [shares[0], shares[0], shares[1], shares[0], shares[4]];
    let expected = combine(3, &[shares[0], shares[1], shares[4]]).unwrap();
    assert_eq!(combine(3, &with_repeats).unwrap(), expected);
    // The first share of an index is the one used: a later conflicting one is ignored.
    let conflicting = dealing.shares()[0].sign(b"something else");
    let first_wins = [shares[0], conflicting, shares[1], shares[4]];
    assert_eq!(combine(3, &first_wins).unwrap(), expected);
}

#[test]
fn extra_shares_beyond_the_threshold_are_ignored() {
    let dealing = deal_seeded(2, 5, 3);
    let mut shares = sign_all(&dealing, MSG);
    // A bad share after the first two distinct indices is never looked at.
    shares[4] = dealing.shares()[4].sign(b"other");
    let sig = combine(2, &shares).unwrap();
    assert_eq!(dealing.group_public_key().verify(MSG, &sig), Ok(()));
}

#[test]
fn deal_rejects_bad_shapes() {
    let mut rng = ChaCha20Rng::seed_from_u64(0);
    let cases = [
        (0, 3, "invalid threshold 0 for 3 participants"),
        (4, 3, "invalid threshold 4 for 3 participants"),
        (1, 0, "invalid number of participants 0"),
        (
            1,
            MAX_PARTICIPANTS + 1,
            "invalid number of participants 1025",
        ),
        (
            MAX_PARTICIPANTS + 1,
            MAX_PARTICIPANTS + 1,
            "invalid number of participants 1025",
        ),
    ];
    for (t, n, message) in cases {
        let err = deal(t, n, &mut rng).unwrap_err();
        assert!(err.to_string().starts_with(message), "{err}");
    }
    assert_eq!(
        deal(4, 3, &mut rng).unwrap_err(),
        ThresholdError::InvalidThreshold {
            threshold: 4,
            participants: 3
        }
    );
}

#[test]
fn combine_rejects_thresholds_out_of_range() {
    let shares = sign_all(&deal_seeded(1, 1, 4), MSG);
    for threshold in [0, MAX_PARTICIPANTS + 1] {
        assert_eq!(
            combine(threshold, &shares),
            Err(ThresholdError::ThresholdOutOfRange {
                threshold,
                max: MAX_PARTICIPANTS
            })
        );
    }
}

#[test]
fn wrong_message_fails_verification() {
    let dealing = deal_seeded(3, 5, 5);
    let sig = combine(3, &sign_all(&dealing, MSG)).unwrap();
    assert_eq!(
        dealing.group_public_key().verify(b"quasar round 43", &sig),
        Err(BlsError::InvalidSignature)
    );
    // Nor does it verify under another dealing's group key.
    let other = deal_seeded(3, 5, 6);
    assert_eq!(
        other.group_public_key().verify(MSG, &sig),
        Err(BlsError::InvalidSignature)
    );
}

#[test]
fn secret_share_round_trips() {
    let dealing = deal_seeded(3, 5, 8);
    for share in dealing.shares() {
        let bytes = share.to_bytes();
        assert_eq!(bytes.len(), SECRET_SHARE_LEN);
        assert_eq!(&bytes[..2], share.index().to_be_bytes().as_slice());
        let decoded = SecretShare::from_bytes(&bytes).unwrap();
        assert_eq!(decoded.index(), share.index());
        assert_eq!(decoded.public_key(), share.public_key());
        assert_eq!(decoded.sign(MSG), share.sign(MSG));
        assert_eq!(decoded.to_bytes(), bytes);
    }
}

#[test]
fn signature_share_round_trips() {
    let dealing = deal_seeded(3, 5, 9);
    for share in sign_all(&dealing, MSG) {
        let bytes = share.to_bytes();
        assert_eq!(bytes.len(), SIGNATURE_SHARE_LEN);
        assert_eq!(&bytes[2..], share.signature().to_bytes().as_slice());
        assert_eq!(SignatureShare::from_bytes(&bytes).unwrap(), share);
    }
}

#[test]
fn secret_share_decoding_rejects_bad_input() {
    let valid = deal_seeded(2, 3, 10).shares()[2].to_bytes();
    let scalar = &valid[2..];
    for index in [0, MAX_PARTICIPANTS + 1, u16::MAX] {
        assert_eq!(
            SecretShare::from_bytes(&share_bytes(index, scalar)).unwrap_err(),
            ThresholdError::InvalidIndex {
                index,
                max: MAX_PARTICIPANTS
            }
        );
    }
    assert_eq!(
        SecretShare::from_bytes(&share_bytes(MAX_PARTICIPANTS, scalar))
            .unwrap()
            .index(),
        MAX_PARTICIPANTS
    );
    for len in [0, 1, 2, SECRET_SHARE_LEN - 1, SECRET_SHARE_LEN + 1] {
        let mut bytes = valid.to_vec();
        bytes.resize(len, 0);
        assert_eq!(
            SecretShare::from_bytes(&bytes).unwrap_err(),
            ThresholdError::InvalidLength {
                what: "secret share",
                expected: SECRET_SHARE_LEN,
                got: len
            }
        );
    }
    let mut r_minus_one = R;
    r_minus_one[31] -= 1;
    for bad in [[0u8; 32], R, [0xff; 32]] {
        assert_eq!(
            SecretShare::from_bytes(&share_bytes(1, &bad)).unwrap_err(),
            ThresholdError::InvalidSecretScalar
        );
    }
    assert!(SecretShare::from_bytes(&share_bytes(1, &r_minus_one)).is_ok());
}

/// An index above the dealing's n but within the bound decodes (n is not in the encoding), and
/// the dealing has no key for it.
#[test]
fn index_above_n_has_no_share_public_key() {
    let dealing = deal_seeded(2, 3, 12);
    let scalar = &dealing.shares()[0].to_bytes()[2..];
    let stray = SecretShare::from_bytes(&share_bytes(4, scalar)).unwrap();
    assert_eq!(dealing.share_public_key(stray.index()), None);
    assert_eq!(dealing.share_public_key(0), None);
    assert_eq!(
        dealing.share_public_key(3),
        Some(&dealing.shares()[2].public_key())
    );
}

#[test]
fn signature_share_decoding_rejects_bad_input() {
    let valid = deal_seeded(2, 3, 13).shares()[0].sign(MSG).to_bytes();
    let point = &valid[2..];
    for index in [0, MAX_PARTICIPANTS + 1] {
        assert_eq!(
            SignatureShare::from_bytes(&share_bytes(index, point)).unwrap_err(),
            ThresholdError::InvalidIndex {
                index,
                max: MAX_PARTICIPANTS
            }
        );
    }
    for len in [0, 2, SIGNATURE_SHARE_LEN - 1, SIGNATURE_SHARE_LEN + 1] {
        let mut bytes = valid.to_vec();
        bytes.resize(len, 0);
        assert!(matches!(
            SignatureShare::from_bytes(&bytes),
            Err(ThresholdError::InvalidLength { got, .. }) if got == len
        ));
    }
    let mut identity = [0u8; SIGNATURE_LEN];
    identity[0] = 0xc0;
    assert_eq!(
        SignatureShare::from_bytes(&share_bytes(1, &identity)).unwrap_err(),
        ThresholdError::Encoding(BlsError::IdentityPoint)
    );
    let mut uncompressed_flag = point.to_vec();
    uncompressed_flag[0] &= 0x7f;
    assert_eq!(
        SignatureShare::from_bytes(&share_bytes(1, &uncompressed_flag)).unwrap_err(),
        ThresholdError::Encoding(BlsError::InvalidEncoding)
    );
}

/// A share signed over the wrong message, or a valid share relabelled with another index, gives a
/// combined signature that does not verify; verify_share names the bad share.
#[test]
fn tampered_share_breaks_the_combined_signature() {
    let dealing = deal_seeded(3, 5, 14);
    let shares = sign_all(&dealing, MSG);
    let wrong_message = dealing.shares()[1].sign(b"another block");
    let relabelled =
        SignatureShare::from_bytes(&share_bytes(2, &shares[2].to_bytes()[2..])).unwrap();
    for bad in [wrong_message, relabelled] {
        let set = [shares[0], bad, shares[3]];
        let sig = combine(3, &set).unwrap();
        assert_eq!(
            dealing.group_public_key().verify(MSG, &sig),
            Err(BlsError::InvalidSignature)
        );
        let culprits: Vec<u16> = set
            .iter()
            .filter(|s| {
                let key = dealing.share_public_key(s.index()).unwrap();
                verify_share(key, MSG, s).is_err()
            })
            .map(SignatureShare::index)
            .collect();
        assert_eq!(culprits, [2]);
    }
}

/// Byzantine share crafted to cancel the others: with indices {1, 2} the coefficients are
/// λ1 = 2 and λ2 = −1, so σ2' = 2·σ1 sums to the identity. combine refuses it by name.
#[test]
fn share_cancelling_the_others_is_rejected_as_identity() {
    let dealing = deal_seeded(2, 3, 15);
    let shares = sign_all(&dealing, MSG);
    let doubled = (G2Projective::from(ark_g2(shares[0].signature())) * Fr::from(2u8)).into_affine();
    let forged = SignatureShare::from_bytes(&share_bytes(2, &ark_bytes(doubled))).unwrap();
    assert_eq!(
        combine(2, &[shares[0], forged]),
        Err(ThresholdError::IdentitySignature)
    );
    assert_eq!(
        verify_share(dealing.share_public_key(2).unwrap(), MSG, &forged),
        Err(ThresholdError::InvalidShare { index: 2 })
    );
}

#[test]
fn verify_share_accepts_good_shares_and_rejects_other_keys() {
    let dealing = deal_seeded(3, 5, 16);
    let shares = sign_all(&dealing, MSG);
    for share in &shares {
        let own = dealing.share_public_key(share.index()).unwrap();
        assert_eq!(verify_share(own, MSG, share), Ok(()));
        assert_eq!(
            verify_share(own, b"other", share),
            Err(ThresholdError::InvalidShare {
                index: share.index()
            })
        );
        for other in dealing.share_public_keys().iter().filter(|key| *key != own) {
            assert_eq!(
                verify_share(other, MSG, share),
                Err(ThresholdError::InvalidShare {
                    index: share.index()
                })
            );
        }
        assert!(verify_share(dealing.group_public_key(), MSG, share).is_err());
    }
}

#[test]
fn debug_never_prints_a_secret() {
    let dealing = deal_seeded(2, 3, 17);
    let printed = format!("{dealing:?}");
    for share in dealing.shares() {
        let secret = hex::encode(&share.to_bytes()[2..]);
        assert!(!printed.contains(&secret));
        assert!(!format!("{share:?}").contains(&secret));
        assert!(format!("{share:?}").contains("redacted"));
    }
}

/// The dealt shares interpolate (in F_r, computed with arkworks from their 32-byte encodings) to
/// a secret whose arkworks public key is the group key blst computed: the dealing is a degree
/// t − 1 Shamir sharing of the group secret, and the byte encodings agree.
#[test]
fn shares_interpolate_to_the_group_secret() {
    let dealing = deal_seeded(4, 7, 18);
    for subset in [[0usize, 1, 2, 3], [6, 4, 2, 0], [1, 3, 5, 6]] {
        let indices: Vec<u16> = subset
            .iter()
            .map(|&k| dealing.shares()[k].index())
            .collect();
        let secret: Fr = subset
            .iter()
            .map(|&k| {
                let share = &dealing.shares()[k];
                let value = Fr::from_be_bytes_mod_order(&share.to_bytes()[2..]);
                value * lagrange(share.index(), &indices)
            })
            .sum();
        let public = (G1Affine::generator() * secret).into_affine();
        assert_eq!(
            ark_bytes(public),
            dealing.group_public_key().to_bytes().to_vec()
        );
    }
    // Three shares are not enough: they interpolate to something else.
    let indices = [1u16, 2, 3];
    let wrong: Fr = dealing.shares()[..3]
        .iter()
        .map(|s| Fr::from_be_bytes_mod_order(&s.to_bytes()[2..]) * lagrange(s.index(), &indices))
        .sum();
    assert_ne!(
        ark_bytes((G1Affine::generator() * wrong).into_affine()),
        dealing.group_public_key().to_bytes().to_vec()
    );
}

/// combine (blst multi-scalar multiplication) agrees with the same Lagrange sum done in arkworks.
#[test]
fn combine_matches_an_arkworks_reference() {
    let dealing = deal_seeded(5, 9, 19);
    let shares = sign_all(&dealing, MSG);
    let picked = [shares[8], shares[0], shares[3], shares[5], shares[6]];
    let indices: Vec<u16> = picked.iter().map(SignatureShare::index).collect();
    let reference: G2Projective = picked
        .iter()
        .map(|s| G2Projective::from(ark_g2(s.signature())) * lagrange(s.index(), &indices))
        .sum();
    assert_eq!(
        ark_bytes(reference.into_affine()),
        combine(5, &picked).unwrap().to_bytes().to_vec()
    );
}

/// blst and arkworks use the same compressed encodings (ZCash format): a blst signature read and
/// written by arkworks is unchanged, and a scalar's public key is the same from both libraries.
#[test]
fn blst_and_arkworks_encodings_agree() {
    for seed in 0..8u8 {
        let sk = SecretKey::from_seed(&[seed; 32]);
        let sig = sk.sign(MSG);
        assert_eq!(
            ark_bytes(ark_g2(&sig)),
            sig.to_bytes().to_vec(),
            "signature"
        );
        let scalar = Fr::from_be_bytes_mod_order(&sk.to_bytes());
        let public = (G1Affine::generator() * scalar).into_affine();
        assert_eq!(
            ark_bytes(public),
            sk.public_key().to_bytes().to_vec(),
            "public key"
        );
        // And back: arkworks' scalar bytes, big-endian, are blst's secret key encoding.
        assert_eq!(scalar.into_bigint().to_bytes_be(), sk.to_bytes().to_vec());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// For any shape and any choice of t distinct signers, the combined signature verifies under
    /// the group key and equals the combination of the first t shares.
    #[test]
    fn any_threshold_subset_verifies(
        n in 1u16..=8,
        t_seed in any::<u16>(),
        seed in any::<u64>(),
        order in Just((0..8).collect::<Vec<usize>>()).prop_shuffle(),
    ) {
        let t = t_seed % n + 1;
        let dealing = deal_seeded(t, n, seed);
        let shares = sign_all(&dealing, MSG);
        let picked: Vec<SignatureShare> = order
            .iter()
            .filter(|&&k| k < usize::from(n))
            .take(usize::from(t))
            .map(|&k| shares[k])
            .collect();
        let sig = combine(t, &picked).unwrap();
        prop_assert_eq!(dealing.group_public_key().verify(MSG, &sig), Ok(()));
        prop_assert_eq!(sig, combine(t, &shares).unwrap());
    }

    /// Arbitrary bytes of a secret-share length decode only with a valid index and scalar, and
    /// then round-trip.
    #[test]
    fn secret_share_decoding_is_canonical(bytes in proptest::collection::vec(any::<u8>(), SECRET_SHARE_LEN)) {
        match SecretShare::from_bytes(&bytes) {
            Ok(share) => {
                prop_assert!((1..=MAX_PARTICIPANTS).contains(&share.index()));
                prop_assert_eq!(share.to_bytes().to_vec(), bytes);
            }
            Err(ThresholdError::InvalidIndex { index, .. }) => {
                prop_assert!(index == 0 || index > MAX_PARTICIPANTS);
            }
            Err(err) => prop_assert_eq!(err, ThresholdError::InvalidSecretScalar),
        }
    }
}
