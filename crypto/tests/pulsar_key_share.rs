//! The key-file encodings of Pulsar ([`GroupKey::to_bytes`] / [`GroupKey::from_bytes`],
//! [`KeyShare::to_bytes`] / [`KeyShare::from_bytes`]): for 2-of-3 and 3-of-4 keys the group key
//! and every share round-trip byte for byte, decoded shares pass `check_share` against the
//! decoded group key and every signing set built only from decoded material produces standard
//! ML-DSA-65 signatures (libcrux and fips204 accept them); every truncation, a trailing byte, an
//! unsupported (t, n), a party ≥ n, a share coefficient outside [−η, η] and share publics that
//! do not sum to the public key's t1 are refused with the documented error, never a panic.

use quasar_crypto::mldsa::{MlDsa65, PublicKey, Signature};
use quasar_crypto::pulsar::{
    sign_in_process, trusted_dealer_keygen, GroupKey, KeyShare, PulsarError, Signer,
    PUBLIC_KEY_BYTES, SHARE_PUBLIC_BYTES, SHARE_SECRET_BYTES, SIGNATURE_BYTES,
};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

const CONTEXT: &[u8] = b"quasar-key-file-test";
/// q of ML-DSA.
const Q: u32 = 8_380_417;
/// Offsets of the documented layouts.
const GROUP_PUBLIC_KEY_AT: usize = 2;
const SHARE_PUBLICS_AT: usize = GROUP_PUBLIC_KEY_AT + PUBLIC_KEY_BYTES;
const SHARE_SECRETS_AT: usize = 4;

/// The shapes under test, with the documented encoding lengths: (t, n, group key bytes, share
/// bytes).
const SHAPES: [(usize, usize, usize, usize); 2] = [(2, 3, 15_202, 2_820), (3, 4, 28_450, 4_228)];

fn deal(t: usize, n: usize, seed: u64) -> (GroupKey, Vec<KeyShare>) {
    trusted_dealer_keygen(t, n, &mut ChaCha20Rng::seed_from_u64(seed)).unwrap()
}

fn encoding_error(what: &'static str) -> PulsarError {
    PulsarError::Encoding(what)
}

/// The `index`-th 23-bit coefficient of the share publics of a group key encoding (the
/// little-endian bit stream of the layout: bit b of the stream is bit b mod 8 of byte b / 8).
fn share_public_coefficient(bytes: &[u8], index: usize) -> u32 {
    (0..23).fold(0, |v, b| {
        let bit = SHARE_PUBLICS_AT * 8 + index * 23 + b;
        v | (u32::from((bytes[bit / 8] >> (bit % 8)) & 1) << b)
    })
}

fn set_share_public_coefficient(bytes: &mut [u8], index: usize, v: u32) {
    for b in 0..23 {
        let bit = SHARE_PUBLICS_AT * 8 + index * 23 + b;
        let (byte, shift) = (bit / 8, bit % 8);
        bytes[byte] = (bytes[byte] & !(1 << shift)) | ((((v >> b) & 1) as u8) << shift);
    }
}

/// Coefficients of one share public t_U (k = 6 polynomials).
const COEFFICIENTS_PER_SHARE_PUBLIC: usize = 6 * 256;

/// Checks a signature with both FIPS 204 implementations under the 1,952-byte public key.
fn verify_as_ml_dsa_65(public_key: &[u8], message: &[u8], signature: &[u8]) {
    assert_eq!(signature.len(), SIGNATURE_BYTES);
    let pk = PublicKey::<MlDsa65>::from_bytes(public_key).unwrap();
    let sig = Signature::<MlDsa65>::from_bytes(signature).unwrap();
    pk.verify(message, CONTEXT, &sig)
        .expect("libcrux accepts the signature of decoded shares");
    use fips204::traits::{SerDes, Verifier};
    let pk2 =
        fips204::ml_dsa_65::PublicKey::try_from_bytes(public_key.try_into().unwrap()).unwrap();
    let sig2: [u8; SIGNATURE_BYTES] = signature.try_into().unwrap();
    assert!(
        pk2.verify(message, &sig2, CONTEXT),
        "fips204 accepts the signature of decoded shares"
    );
    assert!(!pk2.verify(b"another message", &sig2, CONTEXT));
}

/// The t-subsets of {0..n−1}, increasing.
fn signing_sets(t: usize, n: usize) -> Vec<Vec<u16>> {
    (0u32..(1 << n))
        .filter(|m| m.count_ones() as usize == t)
        .map(|m| (0..n as u16).filter(|i| m & (1 << i) != 0).collect())
        .collect()
}

/// For each shape: the group key and every share encode to the documented length, decode, and
/// re-encode to the same bytes; the decoded shares keep party and subsets and pass
/// `check_share` against the decoded group key (and the original); then every signing set,
/// built only from decoded shares and the decoded group key, signs, and the signature verifies
/// as a standard ML-DSA-65 signature under the public key.
#[test]
fn group_keys_and_shares_round_trip_and_decoded_shares_sign() {
    for (seed, &(t, n, group_len, share_len)) in SHAPES.iter().enumerate() {
        let (group, shares) = deal(t, n, 100 + seed as u64);
        let group_bytes = group.to_bytes();
        assert_eq!(group_bytes.len(), group_len, "({t}, {n}) group key length");
        assert_eq!(group_bytes[..2], [t as u8, n as u8]);
        assert_eq!(
            &group_bytes[GROUP_PUBLIC_KEY_AT..SHARE_PUBLICS_AT],
            group.public_key_bytes()
        );
        let decoded_group = GroupKey::from_bytes(&group_bytes).unwrap();
        assert_eq!(decoded_group.to_bytes(), group_bytes);
        assert_eq!(decoded_group.public_key_bytes(), group.public_key_bytes());
        assert_eq!(decoded_group.params(), group.params());

        let mut share_bytes = Vec::new();
        for (party, share) in shares.iter().enumerate() {
            let bytes = share.to_bytes();
            assert_eq!(bytes.len(), share_len, "({t}, {n}) share length");
            assert_eq!(bytes[..4], [0, party as u8, t as u8, n as u8]);
            let decoded = KeyShare::from_bytes(&bytes).unwrap();
            assert_eq!(*decoded.to_bytes(), *bytes);
            assert_eq!(usize::from(decoded.party()), party);
            assert_eq!(decoded.subsets(), share.subsets());
            assert!(decoded_group.check_share(&decoded));
            assert!(group.check_share(&decoded));
            share_bytes.push(bytes);
        }

        for (i, set) in signing_sets(t, n).iter().enumerate() {
            let mut signers: Vec<Signer> = set
                .iter()
                .map(|&p| Signer::new(KeyShare::from_bytes(&share_bytes[usize::from(p)]).unwrap()))
                .collect();
            let message = format!("block {i} of ({t}, {n}) signed by {set:?}");
            let mut rng = ChaCha20Rng::seed_from_u64(1_000 + i as u64);
            let signed = sign_in_process(
                &decoded_group,
                &mut signers,
                &[i as u8; 32],
                message.as_bytes(),
                CONTEXT,
                40,
                &mut rng,
            )
            .unwrap();
            verify_as_ml_dsa_65(
                decoded_group.public_key_bytes(),
                message.as_bytes(),
                &signed.signature,
            );
        }
    }
}

/// Every proper prefix of each encoding (the header ones too) and the encoding plus one byte
/// are refused with the documented error.
#[test]
fn every_truncation_and_a_trailing_byte_are_refused() {
    for (seed, &(t, n, _, _)) in SHAPES.iter().enumerate() {
        let (group, shares) = deal(t, n, 200 + seed as u64);
        let mut bytes = group.to_bytes();
        for len in 0..bytes.len() {
            let expected = if len < 2 {
                encoding_error("group key header")
            } else {
                encoding_error("group key length")
            };
            assert_eq!(
                GroupKey::from_bytes(&bytes[..len]).err(),
                Some(expected),
                "({t}, {n}) group key cut to {len} bytes"
            );
        }
        bytes.push(0);
        assert_eq!(
            GroupKey::from_bytes(&bytes).err(),
            Some(encoding_error("group key length"))
        );

        for share in &shares {
            let mut bytes = share.to_bytes().to_vec();
            for len in 0..bytes.len() {
                let expected = if len < 4 {
                    encoding_error("key share header")
                } else {
                    encoding_error("key share length")
                };
                assert_eq!(
                    KeyShare::from_bytes(&bytes[..len]).err(),
                    Some(expected),
                    "({t}, {n}) share {} cut to {len} bytes",
                    share.party()
                );
            }
            bytes.push(0);
            assert_eq!(
                KeyShare::from_bytes(&bytes).err(),
                Some(encoding_error("key share length"))
            );
        }
    }
}

/// A header naming a (t, n) without parameters (t < 2, t > n, n > 6) is refused as
/// `UnsupportedShape` with that (t, n); a supported shape other than the encoded one is refused
/// by length.
#[test]
fn an_unsupported_shape_is_refused() {
    let (group, shares) = deal(2, 3, 300);
    let group_bytes = group.to_bytes();
    let share_bytes = shares[0].to_bytes().to_vec();
    for (t, n) in [
        (0u8, 3u8),
        (1, 3),
        (4, 3),
        (2, 7),
        (7, 7),
        (2, 0),
        (255, 255),
    ] {
        let unsupported = PulsarError::UnsupportedShape {
            threshold: usize::from(t),
            parties: usize::from(n),
        };
        let mut g = group_bytes.clone();
        g[..2].copy_from_slice(&[t, n]);
        assert_eq!(GroupKey::from_bytes(&g).err(), Some(unsupported.clone()));
        let mut s = share_bytes.clone();
        s[2..4].copy_from_slice(&[t, n]);
        assert_eq!(KeyShare::from_bytes(&s).err(), Some(unsupported));
    }
    // 2-of-4 is supported, but a 2-of-3 body has the wrong length for it.
    let mut g = group_bytes.clone();
    g[..2].copy_from_slice(&[2, 4]);
    assert_eq!(
        GroupKey::from_bytes(&g).err(),
        Some(encoding_error("group key length"))
    );
    let mut s = share_bytes.clone();
    s[2..4].copy_from_slice(&[2, 4]);
    assert_eq!(
        KeyShare::from_bytes(&s).err(),
        Some(encoding_error("key share length"))
    );
}

/// A share whose party index is n or more is refused before its length is looked at.
#[test]
fn a_party_not_below_n_is_refused() {
    let (_, shares) = deal(2, 3, 400);
    let bytes = shares[2].to_bytes().to_vec();
    for party in [3u16, 4, 6, 0x0100, u16::MAX] {
        let mut b = bytes.clone();
        b[..2].copy_from_slice(&party.to_be_bytes());
        assert_eq!(
            KeyShare::from_bytes(&b).err(),
            Some(encoding_error("key share party not below n")),
            "party {party}"
        );
    }
}

/// A 4-bit field above 2η (a coefficient below −η), in the first, a middle and the last
/// position, is refused; the extremes 0 and 2η (coefficients η and −η) decode, and such an
/// edited but well-formed share is caught by `check_share`, not by decoding.
#[test]
fn a_coefficient_outside_eta_is_refused() {
    let (group, shares) = deal(3, 4, 500);
    let bytes = shares[1].to_bytes().to_vec();
    let last = bytes.len() - 1;
    let middle = SHARE_SECRETS_AT + SHARE_SECRET_BYTES + 17;
    for (at, low_nibble) in [
        (SHARE_SECRETS_AT, true),
        (middle, false),
        (last, false),
        (last, true),
    ] {
        for field in 9u8..=15 {
            let mut b = bytes.clone();
            b[at] = if low_nibble {
                (b[at] & 0xf0) | field
            } else {
                (b[at] & 0x0f) | (field << 4)
            };
            assert_eq!(
                KeyShare::from_bytes(&b).err(),
                Some(encoding_error("key share coefficient outside [-eta, eta]")),
                "byte {at}, field {field}"
            );
        }
    }
    // Fields 0 and 8: coefficients η and −η.
    let mut b = bytes.clone();
    let original = b[SHARE_SECRETS_AT];
    b[SHARE_SECRETS_AT] = if original == 0x80 { 0x08 } else { 0x80 };
    let edited = KeyShare::from_bytes(&b).unwrap();
    assert_eq!(*edited.to_bytes(), b);
    assert!(!group.check_share(&edited));
}

/// Share publics are bound to the public key through t1 = Power2Round(Σ_U t_U).t1: moving one
/// coefficient of a t_U by 2^13 (one step of t1), or flipping a bit of the public key's t1, is
/// refused; a coefficient ≥ q is refused as such.
#[test]
fn share_publics_that_do_not_match_the_public_key_are_refused() {
    for (seed, &(t, n, _, _)) in SHAPES.iter().enumerate() {
        let (group, _) = deal(t, n, 600 + seed as u64);
        let bytes = group.to_bytes();
        let subsets = (bytes.len() - SHARE_PUBLICS_AT) / SHARE_PUBLIC_BYTES;
        let mismatch = Some(encoding_error(
            "share publics do not sum to the public key's t1",
        ));
        // The first coefficient of the first t_U, a middle one of the second, the last of the
        // last.
        for index in [
            0,
            COEFFICIENTS_PER_SHARE_PUBLIC + 700,
            subsets * COEFFICIENTS_PER_SHARE_PUBLIC - 1,
        ] {
            let v = share_public_coefficient(&bytes, index);
            let mut b = bytes.clone();
            set_share_public_coefficient(&mut b, index, (v + (1 << 13)) % Q);
            assert_eq!(
                GroupKey::from_bytes(&b).err(),
                mismatch,
                "coefficient {index}"
            );
            let mut b = bytes.clone();
            set_share_public_coefficient(&mut b, index, Q);
            assert_eq!(
                GroupKey::from_bytes(&b).err(),
                Some(encoding_error("share public coefficient not below q"))
            );
        }
        // t1 of the public key: byte 32 onwards of the 1,952 bytes.
        let mut b = bytes.clone();
        b[GROUP_PUBLIC_KEY_AT + 32 + 100] ^= 0x04;
        assert_eq!(GroupKey::from_bytes(&b).err(), mismatch);
    }
}

/// The t1 check binds only the sum of the share publics: moving 1 from one t_U to another
/// keeps the sum, so the key decodes, but the shares of the altered subsets no longer match
/// it. This is why a party runs `check_share` on its decoded share.
#[test]
fn share_publics_altered_without_changing_the_sum_are_caught_by_check_share() {
    let (group, shares) = deal(2, 3, 700);
    let mut bytes = group.to_bytes();
    // Coefficient 5 of t_U for U = {0, 1} (the first subset) up by one, the same coefficient
    // of U = {0, 2} (the second) down by one.
    let first = 5;
    let second = COEFFICIENTS_PER_SHARE_PUBLIC + 5;
    let a = share_public_coefficient(&bytes, first);
    let b = share_public_coefficient(&bytes, second);
    set_share_public_coefficient(&mut bytes, first, (a + 1) % Q);
    set_share_public_coefficient(&mut bytes, second, (b + Q - 1) % Q);
    let altered = GroupKey::from_bytes(&bytes).unwrap();
    assert_eq!(altered.public_key_bytes(), group.public_key_bytes());
    // Party 0 holds both altered subsets, party 1 the first, party 2 the second.
    for share in &shares {
        assert!(group.check_share(share));
        assert!(!altered.check_share(share), "party {}", share.party());
    }
}
