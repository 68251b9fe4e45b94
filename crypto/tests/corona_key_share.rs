//! The key-file encoding of Corona key shares ([`KeyShare::to_bytes`] / [`KeyShare::from_bytes`]):
//! every share of small committees round-trips byte for byte and still signs after decoding; every
//! truncation, a trailing byte, each out-of-range header field, a residue ≥ q and a non-zero own
//! table entry are rejected with the variant (and field) the decoder documents, never a panic.

use quasar_crypto::corona::encode::EncodingError;
use quasar_crypto::corona::local::sign_in_process;
use quasar_crypto::corona::params::Q;
use quasar_crypto::corona::scheme::{
    key_share_bytes, trusted_dealer_keygen, GroupKey, KeyShare, SessionId, Signer, GROUP_KEY_BYTES,
    MAX_PARTIES,
};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// Offsets of the documented layout.
const INDEX_AT: usize = 1;
const THRESHOLD_AT: usize = 3;
const PARTIES_AT: usize = 5;
const GROUP_KEY_AT: usize = 7;
const SECRET_AT: usize = GROUP_KEY_AT + GROUP_KEY_BYTES;
/// 7 × 256 values at 49 bits.
const SECRET_BYTES: usize = 7 * 256 * 49 / 8;
const TABLES_AT: usize = SECRET_AT + SECRET_BYTES;

fn deal(t: usize, n: usize, seed: u64) -> (GroupKey, Vec<KeyShare>) {
    trusted_dealer_keygen(t, n, &mut ChaCha20Rng::seed_from_u64(seed)).unwrap()
}

/// The encoding of share 1 of a 2-of-3 key.
fn share_1_of_3() -> Vec<u8> {
    let (_, shares) = deal(2, 3, 11);
    shares[1].to_bytes().to_vec()
}

fn set_u16(bytes: &mut [u8], at: usize, v: u16) {
    bytes[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

/// Writes `v` as the k-th 49-bit value of s_i (little-endian bit stream, encode.rs).
fn set_residue(bytes: &mut [u8], k: usize, v: u64) {
    for b in 0..49 {
        let bit = SECRET_AT * 8 + k * 49 + b;
        let (byte, shift) = (bit / 8, bit % 8);
        bytes[byte] = (bytes[byte] & !(1 << shift)) | ((((v >> b) & 1) as u8) << shift);
    }
}

fn out_of_range(what: &'static str) -> Result<(), EncodingError> {
    Err(EncodingError::OutOfRange { what })
}

fn decode(bytes: &[u8]) -> Result<(), EncodingError> {
    KeyShare::from_bytes(bytes).map(|_| ())
}

/// Every share of a 2-of-3 and a 3-of-4 key: the encoding has the documented length, decodes,
/// re-encodes to the same bytes, keeps index, shape and group key, and the decoded shares (only
/// those) produce signatures that the group key verifies, every share taking part at least once.
#[test]
fn every_share_round_trips_and_signs() {
    for (t, n, seed, sets) in [
        (2, 3, 1, vec![vec![0u16, 2], vec![1, 2]]),
        (3, 4, 2, vec![vec![0u16, 1, 3], vec![1, 2, 3]]),
    ] {
        let (group, shares) = deal(t, n, seed);
        let mut decoded = Vec::new();
        for share in &shares {
            let bytes = share.to_bytes();
            assert_eq!(bytes.len(), key_share_bytes(n));
            assert_eq!(bytes.len(), 15_623 + 96 * n);
            let back = KeyShare::from_bytes(&bytes).unwrap();
            assert_eq!(back.to_bytes().as_slice(), bytes.as_slice(), "{t}-of-{n}");
            assert_eq!(back.index(), share.index());
            assert_eq!(back.threshold(), t);
            assert_eq!(back.parties(), n);
            assert_eq!(back.group_key(), &group);
            assert_eq!(back.group_key().to_bytes(), group.to_bytes());
            // Debug shows the index and shape, nothing secret.
            assert_eq!(
                format!("{back:?}"),
                format!("KeyShare {{ index: {}, t: {t}, n: {n} }}", share.index())
            );
            decoded.push(back);
        }
        drop(shares);
        let mut signers: Vec<Signer> = decoded.into_iter().map(Signer::new).collect();
        let mut rng = ChaCha20Rng::seed_from_u64(seed + 100);
        for (k, parties) in sets.iter().enumerate() {
            let message = format!("key file {t}-of-{n} set {k}");
            let session = SessionId([k as u8 + 1; 32]);
            let signature = sign_in_process(
                &group,
                &mut signers,
                parties,
                session,
                message.as_bytes(),
                &mut rng,
            )
            .unwrap();
            assert_eq!(group.verify(message.as_bytes(), &signature), Ok(()));
            assert!(group.verify(b"another message", &signature).is_err());
        }
    }
}

/// Every proper prefix of an encoding fails: shorter than the header with `Truncated`, longer
/// with `Length` against the full length the header implies.
#[test]
fn every_truncation_is_rejected() {
    let bytes = share_1_of_3();
    let full = bytes.len();
    for len in 0..full {
        let expected = if len < GROUP_KEY_AT {
            EncodingError::Truncated { what: "key share" }
        } else {
            EncodingError::Length {
                what: "key share",
                expected: full,
                got: len,
            }
        };
        assert_eq!(
            decode(&bytes[..len]),
            Err(expected),
            "prefix of {len} bytes"
        );
    }
    assert_eq!(decode(&bytes), Ok(()));
}

#[test]
fn a_trailing_byte_is_rejected() {
    let mut bytes = share_1_of_3();
    let full = bytes.len();
    for extra in [0u8, 0xff] {
        bytes.push(extra);
        assert_eq!(
            decode(&bytes),
            Err(EncodingError::Length {
                what: "key share",
                expected: full,
                got: full + 1,
            })
        );
        bytes.pop();
    }
}

#[test]
fn an_unknown_version_is_rejected() {
    let mut bytes = share_1_of_3();
    for version in [0u8, 2, 0xff] {
        bytes[0] = version;
        assert_eq!(decode(&bytes), out_of_range("key share version"));
    }
}

#[test]
fn an_index_at_or_above_parties_is_rejected() {
    let mut bytes = share_1_of_3();
    for index in [3u16, 4, 1023, u16::MAX] {
        set_u16(&mut bytes, INDEX_AT, index);
        assert_eq!(decode(&bytes), out_of_range("key share index"), "{index}");
    }
    // The largest valid index decodes (it differs from the real one, which is fine for the codec;
    // its table entry 2 is non-zero though, so that is what is reported).
    set_u16(&mut bytes, INDEX_AT, 2);
    assert_eq!(
        decode(&bytes),
        Err(EncodingError::NonCanonical {
            what: "key share prf_out"
        })
    );
}

#[test]
fn threshold_zero_or_above_parties_is_rejected() {
    let mut bytes = share_1_of_3();
    for threshold in [0u16, 4, u16::MAX] {
        set_u16(&mut bytes, THRESHOLD_AT, threshold);
        assert_eq!(
            decode(&bytes),
            out_of_range("key share threshold"),
            "{threshold}"
        );
    }
    // Every threshold in 1..=n is in range (the codec does not know the dealt t).
    for threshold in 1..=3u16 {
        set_u16(&mut bytes, THRESHOLD_AT, threshold);
        let share = KeyShare::from_bytes(&bytes).unwrap();
        assert_eq!(share.threshold(), usize::from(threshold));
    }
}

/// parties > MAX_PARTIES is refused from the header alone, before the length is compared (so no
/// length is ever computed from an out-of-range count); a valid but different n fails on length.
#[test]
fn parties_above_max_or_disagreeing_with_the_length_are_rejected() {
    let mut bytes = share_1_of_3();
    let too_many = u16::try_from(MAX_PARTIES + 1).unwrap();
    for parties in [too_many, u16::MAX] {
        set_u16(&mut bytes, PARTIES_AT, parties);
        assert_eq!(
            decode(&bytes),
            out_of_range("key share parties"),
            "{parties}"
        );
    }
    // Even with a body of the size n = MAX_PARTIES + 1 would have.
    let mut long = bytes.clone();
    long.resize(key_share_bytes(MAX_PARTIES + 1), 0);
    assert_eq!(decode(&long), out_of_range("key share parties"));

    set_u16(&mut bytes, PARTIES_AT, 4);
    assert_eq!(
        decode(&bytes),
        Err(EncodingError::Length {
            what: "key share",
            expected: key_share_bytes(4),
            got: key_share_bytes(3),
        })
    );
    // n = 0 has no valid threshold.
    set_u16(&mut bytes, PARTIES_AT, 0);
    assert_eq!(decode(&bytes), out_of_range("key share threshold"));
}

/// A value of s_i equal to q (or any pattern ≥ q) is refused; q − 1 is the largest accepted.
#[test]
fn a_secret_residue_at_or_above_q_is_rejected() {
    let bytes = share_1_of_3();
    for k in [0, 1, 7 * 256 - 1] {
        for v in [Q, Q + 1, (1 << 49) - 1] {
            let mut edited = bytes.clone();
            set_residue(&mut edited, k, v);
            assert_eq!(
                decode(&edited),
                out_of_range("key share secret"),
                "value {k} = {v}"
            );
        }
        let mut edited = bytes.clone();
        set_residue(&mut edited, k, Q - 1);
        let share = KeyShare::from_bytes(&edited).unwrap();
        assert_eq!(share.to_bytes().as_slice(), edited.as_slice());
    }
}

/// The own entry (j = index) of each table is unused and must be zero, so each share has one
/// encoding; other entries are keys and may hold anything.
#[test]
fn a_non_zero_own_table_entry_is_rejected() {
    let bytes = share_1_of_3();
    let n = 3;
    let index = 1;
    for (table, what) in [
        "key share prf_out",
        "key share prf_in",
        "key share mac_keys",
    ]
    .into_iter()
    .enumerate()
    {
        let own = TABLES_AT + table * 32 * n + 32 * index;
        assert_eq!(&bytes[own..own + 32], &[0u8; 32], "{what} own entry");
        for byte in [0, 31] {
            let mut edited = bytes.clone();
            edited[own + byte] = 1;
            assert_eq!(
                decode(&edited),
                Err(EncodingError::NonCanonical { what }),
                "{what} byte {byte}"
            );
        }
        let mut edited = bytes.clone();
        edited[own + 32] ^= 0x80;
        assert_eq!(decode(&edited), Ok(()), "{what} entry 2 is a key");
    }
}

/// A damaged group key inside a share is reported by the group-key decoder (its length is fixed,
/// so any 4,640 bytes are a key; the share still decodes and carries that key).
#[test]
fn the_group_key_field_is_the_group_key_encoding() {
    let (group, shares) = deal(2, 3, 11);
    let bytes = shares[1].to_bytes();
    assert_eq!(&bytes[GROUP_KEY_AT..SECRET_AT], group.to_bytes().as_slice());
    let mut edited = bytes.to_vec();
    edited[GROUP_KEY_AT] ^= 1;
    let share = KeyShare::from_bytes(&edited).unwrap();
    assert_ne!(share.group_key(), &group);
}
