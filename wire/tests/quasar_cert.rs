//! QuasarCert bounds, as a specification: what the encoder refuses, what the decoder refuses and
//! with which error, and what both deliberately accept (duplicated or extra leg kinds, which the
//! lane verifier rejects with a precise error, and empty leg bodies).
//!
//! Byte positions in the golden sample (`common::quasar_cert`): root at 16; bundle pointer at 80
//! (rel u32, len u32 at 84); leg list pointer at 88 (rel u32, count u32 at 92); bundle at 96..160;
//! leg entries at 160, 168, 176; leg bytes at 184 (kind byte first), 192 and 200.

mod common;

use quasar_wire::layout::quasar_cert as qc;
use quasar_wire::zap::Builder;
use quasar_wire::*;

const BUNDLE_LEN_AT: usize = 16 + qc::BUNDLE + 4;
const LEG_COUNT_AT: usize = 16 + qc::LEGS + 4;
const FIRST_LEG_AT: usize = 184;

fn golden() -> Vec<u8> {
    common::quasar_cert().encode().unwrap()
}

fn put_u32(buf: &mut [u8], at: usize, v: u32) {
    buf[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// A QuasarCert message with arbitrary raw `bundle` bytes and raw leg entries, built with the
/// schema-agnostic builder so the encoder's own checks are bypassed.
fn raw(bundle: &[u8], entries: &[Vec<u8>]) -> Vec<u8> {
    let (mut b, root) = Builder::new(MessageType::QuasarCert as u8, qc::SIZE).unwrap();
    b.put_u64(root, qc::CHAIN_ID, 7).unwrap();
    b.put(root, qc::BLOCK, &[0x30; 32]).unwrap();
    b.put_bytes(root, qc::BUNDLE, bundle).unwrap();
    b.put_bytes_list(root, qc::LEGS, entries).unwrap();
    b.finish().unwrap()
}

fn bls_leg() -> Vec<u8> {
    vec![LegKind::Bls as u8, 0xaa]
}

/// The decoder's answer through both entry points, which must agree.
fn parse_err(bytes: &[u8]) -> WireError {
    common::agreed_error(QuasarCertRef::parse(bytes).unwrap_err(), bytes)
}

#[test]
fn leg_kind_bytes_names_and_order() {
    assert_eq!(LegKind::ALL.len(), 5);
    for (i, kind) in LegKind::ALL.into_iter().enumerate() {
        assert_eq!(kind as u8, i as u8 + 1);
        assert_eq!(LegKind::try_from(kind as u8), Ok(kind));
        assert_eq!(kind.to_string(), kind.as_str());
    }
    let names: Vec<String> = LegKind::ALL.iter().map(ToString::to_string).collect();
    assert_eq!(names, ["bls", "corona", "groth16", "pulsar", "magnetar"]);
    for found in [0u8, 6, 0x80, 0xff] {
        assert_eq!(
            LegKind::try_from(found),
            Err(WireError::UnknownLegKind { found })
        );
    }
    assert_eq!(MessageType::try_from(7), Ok(MessageType::QuasarCert));
    assert_eq!(
        Message::QuasarCert(common::quasar_cert()).message_type(),
        MessageType::QuasarCert
    );
}

// ------------------------------------------------------------------------------------------
// Encoder
// ------------------------------------------------------------------------------------------

#[test]
fn encoder_refuses_an_empty_bundle() {
    let q = QuasarCert {
        bundle: Vec::new(),
        ..common::quasar_cert()
    };
    assert_eq!(q.encode(), Err(WireError::BundleLength { count: 0 }));
    assert_eq!(
        Message::QuasarCert(q).encode(),
        Err(WireError::BundleLength { count: 0 })
    );
}

#[test]
fn encoder_accepts_max_bundle_and_refuses_one_more() {
    let full = QuasarCert {
        bundle: (0..MAX_BUNDLE).map(|i| [(i % 251) as u8; 32]).collect(),
        ..common::quasar_cert()
    };
    let bytes = full.encode().unwrap();
    let r = QuasarCertRef::parse(&bytes).unwrap();
    assert_eq!(r.bundle_len(), MAX_BUNDLE);
    assert_eq!(r.to_owned(), full);

    let over = QuasarCert {
        bundle: vec![[1; 32]; MAX_BUNDLE + 1],
        ..common::quasar_cert()
    };
    assert_eq!(
        over.encode(),
        Err(WireError::BundleLength {
            count: MAX_BUNDLE + 1
        })
    );
}

#[test]
fn encoder_refuses_zero_legs_and_more_than_max_legs() {
    let none = QuasarCert {
        legs: Vec::new(),
        ..common::quasar_cert()
    };
    assert_eq!(none.encode(), Err(WireError::LegCount { count: 0 }));

    let over = QuasarCert {
        legs: vec![(LegKind::Bls, vec![1]); MAX_LEGS + 1],
        ..common::quasar_cert()
    };
    assert_eq!(
        over.encode(),
        Err(WireError::LegCount {
            count: MAX_LEGS + 1
        })
    );
}

/// Duplicated and extra kinds are the lane verifier's to reject, with the leg named: the wire
/// carries them faithfully, up to MAX_LEGS, and empty bodies too.
#[test]
fn duplicated_extra_and_empty_legs_round_trip() {
    let mut legs: Vec<(LegKind, Vec<u8>)> = LegKind::ALL
        .iter()
        .map(|&k| (k, k.as_str().as_bytes().to_vec()))
        .collect();
    legs.push((LegKind::Bls, Vec::new()));
    legs.push((LegKind::Bls, vec![0; 3]));
    legs.push((LegKind::Magnetar, Vec::new()));
    assert_eq!(legs.len(), MAX_LEGS);
    let q = QuasarCert {
        legs,
        ..common::quasar_cert()
    };
    let bytes = q.encode().unwrap();
    let r = QuasarCertRef::parse(&bytes).unwrap();
    assert_eq!(r.leg_count(), MAX_LEGS);
    assert_eq!(r.legs().nth(5), Some((LegKind::Bls, &[][..])));
    assert_eq!(r.to_owned(), q);
}

// ------------------------------------------------------------------------------------------
// Decoder
// ------------------------------------------------------------------------------------------

#[test]
fn decoder_refuses_an_empty_bundle() {
    let mut b = golden();
    put_u32(&mut b, BUNDLE_LEN_AT, 0);
    assert_eq!(parse_err(&b), WireError::BundleLength { count: 0 });
    // Also when the message really has no bundle bytes.
    assert_eq!(
        parse_err(&raw(&[], &[bls_leg()])),
        WireError::BundleLength { count: 0 }
    );
}

#[test]
fn decoder_refuses_a_bundle_with_a_partial_digest() {
    for len in [1u32, 31, 33, 63, 65, 1023 * 32 + 1, u32::MAX] {
        let mut b = golden();
        put_u32(&mut b, BUNDLE_LEN_AT, len);
        assert_eq!(
            parse_err(&b),
            WireError::BundlePartialDigest { len: len as usize },
            "len {len}"
        );
    }
    // A real 33-byte bundle inside the message.
    assert_eq!(
        parse_err(&raw(&[0x50; 33], &[bls_leg()])),
        WireError::BundlePartialDigest { len: 33 }
    );
}

#[test]
fn decoder_refuses_more_than_max_bundle_digests() {
    // Present in the message: rejected by count, not by bounds.
    let bytes = raw(&vec![0x50; (MAX_BUNDLE + 1) * 32], &[bls_leg()]);
    assert_eq!(
        parse_err(&bytes),
        WireError::BundleLength {
            count: MAX_BUNDLE + 1
        }
    );
    // Announced far past the message: the count check comes first, nothing is read.
    let mut b = golden();
    put_u32(&mut b, BUNDLE_LEN_AT, u32::MAX - 31);
    assert_eq!(
        parse_err(&b),
        WireError::BundleLength {
            count: (u32::MAX as usize - 31) / 32
        }
    );
    // Exactly MAX_BUNDLE decodes.
    let bytes = raw(&vec![0x50; MAX_BUNDLE * 32], &[bls_leg()]);
    assert_eq!(
        QuasarCertRef::parse(&bytes).unwrap().bundle_len(),
        MAX_BUNDLE
    );
}

#[test]
fn decoder_refuses_zero_legs() {
    let mut b = golden();
    put_u32(&mut b, LEG_COUNT_AT, 0);
    assert_eq!(parse_err(&b), WireError::LegCount { count: 0 });
    assert_eq!(
        parse_err(&raw(&[0x50; 32], &[])),
        WireError::LegCount { count: 0 }
    );
}

#[test]
fn decoder_refuses_more_than_max_legs() {
    let nine = vec![bls_leg(); MAX_LEGS + 1];
    assert_eq!(
        parse_err(&raw(&[0x50; 32], &nine)),
        WireError::LegCount {
            count: MAX_LEGS + 1
        }
    );
    // A hostile count is refused before the entry array is bounds-checked or walked.
    for count in [MAX_LEGS as u32 + 1, 1 << 20, u32::MAX] {
        let mut b = golden();
        put_u32(&mut b, LEG_COUNT_AT, count);
        assert_eq!(
            parse_err(&b),
            WireError::LegCount {
                count: count as usize
            }
        );
    }
    let eight = vec![bls_leg(); MAX_LEGS];
    assert_eq!(
        QuasarCertRef::parse(&raw(&[0x50; 32], &eight))
            .unwrap()
            .leg_count(),
        MAX_LEGS
    );
}

#[test]
fn decoder_refuses_an_empty_leg_entry() {
    let bytes = raw(&[0x50; 32], &[bls_leg(), Vec::new(), bls_leg()]);
    assert_eq!(parse_err(&bytes), WireError::EmptyLeg { index: 1 });
    // The golden with its last leg's length patched to 0 (entry 2's length at 176 + 4).
    let mut b = golden();
    put_u32(&mut b, 176 + 4, 0);
    assert_eq!(parse_err(&b), WireError::EmptyLeg { index: 2 });
}

#[test]
fn decoder_refuses_an_unknown_leg_kind_byte() {
    for found in [0u8, 6, 7, 0x80, 0xff] {
        let mut b = golden();
        b[FIRST_LEG_AT] = found;
        assert_eq!(
            parse_err(&b),
            WireError::UnknownLegKind { found },
            "kind {found}"
        );
    }
    let bytes = raw(&[0x50; 32], &[bls_leg(), vec![9, 1, 2]]);
    assert_eq!(parse_err(&bytes), WireError::UnknownLegKind { found: 9 });
}

#[test]
fn decoder_refuses_bundle_and_legs_outside_the_message() {
    // Bundle pointer offset past the end (length still a valid 64).
    let mut b = golden();
    put_u32(&mut b, 16 + qc::BUNDLE, u32::MAX);
    assert!(matches!(
        parse_err(&b),
        WireError::PointerOutOfBounds { field: 80, .. }
    ));
    // Leg list pointer past the end; a leg whose body runs past the end.
    let mut b = golden();
    put_u32(&mut b, 16 + qc::LEGS, 1000);
    assert!(matches!(
        parse_err(&b),
        WireError::PointerOutOfBounds { field: 88, .. }
    ));
    let mut b = golden();
    put_u32(&mut b, 176 + 4, 6);
    assert!(matches!(
        parse_err(&b),
        WireError::PointerOutOfBounds { field: 176, .. }
    ));
}
