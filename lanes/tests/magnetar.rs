//! The Magnetar lane: leg encoding, canonical bitmaps, quorum before signatures, and the
//! per-signer SLH-DSA checks, with real SLH-DSA-SHAKE-192f signatures (one 192s leg).
//!
//! The fixture: 5 validators with stakes 1, 1, 1, 1, 2 (total 6, quorum > 4); validators 0, 1,
//! 2 and 4 (stake 5) sign μ. Signatures are hedged SLH-DSA-SHAKE-192f, made once.

use std::sync::OnceLock;

use quasar_crypto::bls;
use quasar_crypto::magnetar::{
    MagnetarError, ParameterSet, PublicKey, SecretKey, Signature, SEED_LEN,
};
use quasar_lanes::magnetar::{verify_leg, MagnetarKeys, MagnetarLeg};
use quasar_lanes::{LaneError, Validator, ValidatorSet, CERT_CONTEXT};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

const MU: [u8; 32] = [0x4d; 32];
const STAKES: [u64; 5] = [1, 1, 1, 1, 2];
const SIGNERS: [usize; 4] = [0, 1, 2, 4];
const SIG_192F: usize = 35_664;

struct Fixture {
    keys: MagnetarKeys,
    /// Validator `i`'s signature on [`MU`], for `i` in [`SIGNERS`] and for validator 3.
    signatures: Vec<(usize, Signature)>,
    /// A signature on [`MU`] by a key that is not in the set.
    outsider: Signature,
}

fn secret(set: ParameterSet, i: usize) -> SecretKey {
    SecretKey::from_seed(set, &[i as u8 + 1; SEED_LEN])
}

fn validator_set(stakes: &[u64]) -> ValidatorSet {
    let validators = stakes
        .iter()
        .enumerate()
        .map(|(i, &stake)| Validator {
            public_key: bls::SecretKey::from_seed(&[i as u8 + 1; 32]).public_key(),
            stake,
        })
        .collect();
    ValidatorSet::new(validators).unwrap()
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let set = ParameterSet::Shake192f;
        let secrets: Vec<SecretKey> = (0..STAKES.len()).map(|i| secret(set, i)).collect();
        let keys = MagnetarKeys::new(
            validator_set(&STAKES),
            set,
            secrets.iter().map(|k| k.public_key().clone()).collect(),
        )
        .unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let signatures = [0, 1, 2, 3, 4]
            .into_iter()
            .map(|i| (i, secrets[i].sign(&MU, CERT_CONTEXT, &mut rng).unwrap()))
            .collect();
        let outsider = secret(set, 9).sign(&MU, CERT_CONTEXT, &mut rng).unwrap();
        Fixture {
            keys,
            signatures,
            outsider,
        }
    })
}

fn signature(f: &Fixture, i: usize) -> Signature {
    f.signatures[i].1.clone()
}

/// The leg of `signers` with each one's own signature.
fn leg(f: &Fixture, signers: &[usize]) -> MagnetarLeg {
    let pairs = signers.iter().map(|&i| (i, signature(f, i))).collect();
    MagnetarLeg::new(STAKES.len(), pairs).unwrap()
}

fn encode_raw(bitmap: &[u8], signatures: &[&Signature]) -> Vec<u8> {
    let mut out = (bitmap.len() as u32).to_le_bytes().to_vec();
    out.extend_from_slice(bitmap);
    for s in signatures {
        out.extend_from_slice(s.as_bytes());
    }
    out
}

fn decode(bytes: &[u8]) -> Result<MagnetarLeg, LaneError> {
    MagnetarLeg::decode(bytes, ParameterSet::Shake192f)
}

#[test]
fn a_quorum_leg_verifies_through_its_encoding() {
    let f = fixture();
    let bytes = leg(f, &SIGNERS).encode();
    assert_eq!(bytes.len(), 4 + 1 + 4 * SIG_192F);
    assert_eq!(&bytes[..5], &[1, 0, 0, 0, 0b0001_0111]);
    assert_eq!(
        bytes,
        encode_raw(
            &[0b0001_0111],
            &[
                &f.signatures[0].1,
                &f.signatures[1].1,
                &f.signatures[2].1,
                &f.signatures[4].1
            ]
        ),
        "bitmap, then the signatures in ascending signer order"
    );
    let decoded = decode(&bytes).unwrap();
    assert_eq!(
        decoded,
        leg(f, &[4, 2, 1, 0]),
        "assembly order does not matter"
    );
    let verified = verify_leg(&f.keys, &MU, &decoded).unwrap();
    assert_eq!(verified.signers, SIGNERS);
    assert_eq!(verified.stake, 5);
    // Everyone signing is a quorum too; so is 1 + 1 + 1 + 2 without validator 0.
    assert!(verify_leg(&f.keys, &MU, &leg(f, &[0, 1, 2, 3, 4])).is_ok());
    assert!(verify_leg(&f.keys, &MU, &leg(f, &[1, 2, 3, 4])).is_ok());
}

#[test]
fn another_digest_fails_naming_the_first_signer() {
    let f = fixture();
    let mut other = MU;
    other[7] ^= 0x80;
    assert_eq!(
        verify_leg(&f.keys, &other, &leg(f, &SIGNERS)),
        Err(LaneError::MagnetarSignature {
            index: 0,
            error: MagnetarError::InvalidSignature
        })
    );
}

/// Byzantine aggregator: the bitmap names signers 0, 1, 2, 4 but the slot of signer 2 holds a
/// signature by a key outside the set, or signer 0's signature a second time. The error names
/// the slot's signer, whatever the thread schedule.
#[test]
fn a_non_members_or_a_repeated_signature_in_a_slot_is_rejected_by_index() {
    let f = fixture();
    let sigs = |third: &Signature| {
        encode_raw(
            &[0b0001_0111],
            &[
                &f.signatures[0].1,
                &f.signatures[1].1,
                third,
                &f.signatures[4].1,
            ],
        )
    };
    for (what, third) in [("outsider", &f.outsider), ("repeated", &f.signatures[0].1)] {
        let leg = decode(&sigs(third)).unwrap();
        assert_eq!(
            verify_leg(&f.keys, &MU, &leg),
            Err(LaneError::MagnetarSignature {
                index: 2,
                error: MagnetarError::InvalidSignature
            }),
            "{what}"
        );
    }
    // Signer 1's slot swapped with signer 4's: both wrong, the lower index is named.
    let swapped = encode_raw(
        &[0b0001_0111],
        &[
            &f.signatures[0].1,
            &f.signatures[4].1,
            &f.signatures[2].1,
            &f.signatures[1].1,
        ],
    );
    assert_eq!(
        verify_leg(&f.keys, &MU, &decode(&swapped).unwrap()),
        Err(LaneError::MagnetarSignature {
            index: 1,
            error: MagnetarError::InvalidSignature
        })
    );
}

/// A duplicated signer cannot be encoded (one bit per validator), so an extra copy of a signature
/// is refused by the decoder, and assembling a leg with one signer twice is an error.
#[test]
fn a_duplicated_signer_is_refused() {
    let f = fixture();
    let mut bytes = leg(f, &SIGNERS).encode();
    bytes.extend_from_slice(f.signatures[0].1.as_bytes());
    assert_eq!(
        decode(&bytes),
        Err(LaneError::MagnetarSignatureBytes {
            signers: 4,
            set: ParameterSet::Shake192f,
            expected: 4 * SIG_192F,
            got: 5 * SIG_192F
        })
    );
    let twice = vec![
        (0, signature(f, 0)),
        (1, signature(f, 1)),
        (0, signature(f, 0)),
        (2, signature(f, 2)),
    ];
    assert_eq!(
        MagnetarLeg::new(STAKES.len(), twice),
        Err(LaneError::DuplicateSigner { index: 0 })
    );
}

#[test]
fn non_member_signers_are_refused() {
    let f = fixture();
    // Bit 5 of a 5-validator bitmap: a padding bit, i.e. a validator that does not exist.
    let bytes = encode_raw(
        &[0b0011_0111],
        &[
            &f.signatures[0].1,
            &f.signatures[1].1,
            &f.signatures[2].1,
            &f.signatures[4].1,
            &f.outsider,
        ],
    );
    assert_eq!(
        verify_leg(&f.keys, &MU, &decode(&bytes).unwrap()),
        Err(LaneError::NonMemberSigner { index: 5, n: 5 })
    );
    assert_eq!(
        MagnetarLeg::new(
            STAKES.len(),
            vec![(0, signature(f, 0)), (5, f.outsider.clone())]
        ),
        Err(LaneError::NonMemberSigner { index: 5, n: 5 })
    );
}

#[test]
fn bad_bitmaps_are_refused_before_any_signature() {
    let f = fixture();
    let s = |i: usize| &f.signatures[i].1;
    // Two bytes for 5 validators: not canonical, even with the right signatures.
    let long = encode_raw(&[0b0001_0111, 0], &[s(0), s(1), s(2), s(4)]);
    assert_eq!(
        verify_leg(&f.keys, &MU, &decode(&long).unwrap()),
        Err(LaneError::BitmapLength {
            expected: 1,
            got: 2
        })
    );
    let short = encode_raw(&[], &[]);
    assert_eq!(
        verify_leg(&f.keys, &MU, &decode(&short).unwrap()),
        Err(LaneError::BitmapLength {
            expected: 1,
            got: 0
        })
    );
    let empty = encode_raw(&[0], &[]);
    assert_eq!(
        verify_leg(&f.keys, &MU, &decode(&empty).unwrap()),
        Err(LaneError::NoSigners)
    );
    assert_eq!(MagnetarLeg::new(5, vec![]), Err(LaneError::NoSigners));
}

/// Quorum is checked before any signature: validators 0, 1 and 4 hold 4 of 6 (not more than
/// 2/3), so garbage in their slots is never hashed and the error is the missing quorum.
#[test]
fn below_quorum_is_refused_before_signatures_are_verified() {
    let f = fixture();
    let garbage = Signature::from_bytes(ParameterSet::Shake192f, &[0xa5; SIG_192F]).unwrap();
    let bytes = encode_raw(&[0b0001_0011], &[&garbage, &garbage, &garbage]);
    assert_eq!(
        verify_leg(&f.keys, &MU, &decode(&bytes).unwrap()),
        Err(LaneError::NoQuorum {
            signed: 4,
            total: 6
        })
    );
    // The same signers with valid signatures: still no quorum.
    assert_eq!(
        verify_leg(&f.keys, &MU, &leg(f, &[0, 1, 4])),
        Err(LaneError::NoQuorum {
            signed: 4,
            total: 6
        })
    );
}

/// Regression (bug class: decoders that trust a length prefix, or accept trailing bytes or a
/// short final element): every length is checked, and nothing beyond the input is allocated.
#[test]
fn truncated_and_oversized_legs_are_refused() {
    let f = fixture();
    let bytes = leg(f, &SIGNERS).encode();
    let mismatch = |got: usize| {
        Err(LaneError::MagnetarSignatureBytes {
            signers: 4,
            set: ParameterSet::Shake192f,
            expected: 4 * SIG_192F,
            got,
        })
    };
    assert_eq!(
        decode(&bytes[..bytes.len() - 1]),
        mismatch(4 * SIG_192F - 1)
    );
    let mut long = bytes.clone();
    long.push(0);
    assert_eq!(decode(&long), mismatch(4 * SIG_192F + 1));
    for cut in [0, 3] {
        assert_eq!(
            decode(&bytes[..cut]),
            Err(LaneError::MagnetarLegTruncated {
                needed: 4,
                got: cut
            })
        );
    }
    // A bitmap length of 4 GiB in a 5-byte input: refused without allocating it.
    let huge = [0xff, 0xff, 0xff, 0xff, 0x01];
    assert_eq!(
        decode(&huge),
        Err(LaneError::MagnetarLegTruncated {
            needed: 4 + u32::MAX as usize,
            got: 5
        })
    );
}

/// The epoch's parameter set decides how bytes are read and which keys verify: 192f signatures
/// read as 192s are the wrong size; a 192s leg is refused by 192f keys before any hashing; a 192s
/// key cannot join a 192f epoch; and one leg cannot mix sets.
#[test]
fn wrong_parameter_set_is_refused() {
    let f = fixture();
    let bytes = leg(f, &SIGNERS).encode();
    assert_eq!(
        MagnetarLeg::decode(&bytes, ParameterSet::Shake192s),
        Err(LaneError::MagnetarSignatureBytes {
            signers: 4,
            set: ParameterSet::Shake192s,
            expected: 4 * 16_224,
            got: 4 * SIG_192F
        })
    );

    let small = Signature::from_bytes(ParameterSet::Shake192s, &[7; 16_224]).unwrap();
    let leg_192s = MagnetarLeg::new(
        STAKES.len(),
        SIGNERS.iter().map(|&i| (i, small.clone())).collect(),
    )
    .unwrap();
    assert_eq!(
        verify_leg(&f.keys, &MU, &leg_192s),
        Err(LaneError::MagnetarSignature {
            index: 0,
            error: MagnetarError::ParameterSetMismatch {
                key: ParameterSet::Shake192f,
                signature: ParameterSet::Shake192s
            }
        })
    );
    assert_eq!(
        MagnetarLeg::new(STAKES.len(), vec![(0, signature(f, 0)), (1, small)]),
        Err(LaneError::WrongParameterSet {
            index: 1,
            expected: ParameterSet::Shake192f,
            got: ParameterSet::Shake192s
        })
    );

    let mut keys: Vec<PublicKey> = (0..STAKES.len())
        .map(|i| secret(ParameterSet::Shake192f, i).public_key().clone())
        .collect();
    keys[3] = PublicKey::from_bytes(ParameterSet::Shake192s, keys[3].as_bytes()).unwrap();
    assert_eq!(
        MagnetarKeys::new(validator_set(&STAKES), ParameterSet::Shake192f, keys).unwrap_err(),
        LaneError::WrongParameterSet {
            index: 3,
            expected: ParameterSet::Shake192f,
            got: ParameterSet::Shake192s
        }
    );
}

#[test]
fn key_sets_must_match_the_validators() {
    let set = ParameterSet::Shake192f;
    let keys: Vec<PublicKey> = (0..3)
        .map(|i| secret(set, i).public_key().clone())
        .collect();
    assert_eq!(
        MagnetarKeys::new(validator_set(&[1, 1]), set, keys.clone()).unwrap_err(),
        LaneError::KeyCount {
            expected: 2,
            got: 3
        }
    );
    let repeated = vec![keys[0].clone(), keys[1].clone(), keys[0].clone()];
    assert_eq!(
        MagnetarKeys::new(validator_set(&[1, 1, 1]), set, repeated).unwrap_err(),
        LaneError::DuplicateValidator { index: 2 }
    );
}

/// The one 192s signature of this suite (about 2.5 s): a 192s epoch in which validator 0 holds
/// 3 of 4 stake, so its signature alone is a quorum.
#[test]
fn a_192s_leg_verifies_under_192s_keys() {
    let set = ParameterSet::Shake192s;
    let secrets: Vec<SecretKey> = (0..2).map(|i| secret(set, i)).collect();
    let keys = MagnetarKeys::new(
        validator_set(&[3, 1]),
        set,
        secrets.iter().map(|k| k.public_key().clone()).collect(),
    )
    .unwrap();
    assert_eq!(keys.parameter_set(), set);
    let sig = secrets[0]
        .sign(&MU, CERT_CONTEXT, &mut ChaCha20Rng::seed_from_u64(2))
        .unwrap();
    let bytes = MagnetarLeg::new(2, vec![(0, sig)]).unwrap().encode();
    assert_eq!(bytes.len(), 4 + 1 + 16_224);
    let leg = MagnetarLeg::decode(&bytes, set).unwrap();
    let verified = verify_leg(&keys, &MU, &leg).unwrap();
    assert_eq!((verified.signers, verified.stake), (vec![0], 3));
    let mut other = MU;
    other[0] ^= 1;
    assert_eq!(
        verify_leg(&keys, &other, &leg),
        Err(LaneError::MagnetarSignature {
            index: 0,
            error: MagnetarError::InvalidSignature
        })
    );
}

/// Cancellation (the parallel-max verifier raises the flag when another leg fails): a raised
/// flag stops verification before any signature is checked, and a valid leg is reported as
/// cancelled, never as verified; a lowered flag changes nothing.
#[test]
fn a_raised_cancellation_flag_stops_verification() {
    use quasar_lanes::magnetar::verify_leg_cancellable;
    use std::sync::atomic::AtomicBool;
    let f = fixture();
    let valid = leg(f, &SIGNERS);
    assert_eq!(
        verify_leg_cancellable(&f.keys, &MU, &valid, &AtomicBool::new(true)),
        Err(LaneError::Cancelled)
    );
    assert!(verify_leg_cancellable(&f.keys, &MU, &valid, &AtomicBool::new(false)).is_ok());
    // Quorum and bitmap checks come first, so a leg without a quorum says so even when cancelled.
    assert!(matches!(
        verify_leg_cancellable(&f.keys, &MU, &leg(f, &[0]), &AtomicBool::new(true)),
        Err(LaneError::NoQuorum { .. })
    ));
}
