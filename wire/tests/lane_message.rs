//! LaneMessage rules, as a specification: what the encoder refuses, what the decoder refuses and
//! with which error, and what both deliberately accept (an empty payload; any session bytes, which
//! the receiver checks against its own threshold session).
//!
//! Byte positions in the golden sample (`common::lane_message`, a Corona round-1 message): root at
//! 16; kind at 44, leg at 45, reserved bytes at 46..48, session at 48..80; payload pointer at 80
//! (rel u32, len u32 at 84); payload at 88..97.

mod common;

use quasar_wire::layout::lane_message as lm;
use quasar_wire::zap::Builder;
use quasar_wire::*;

const KIND_AT: usize = 16 + lm::KIND;
const LEG_AT: usize = 16 + lm::LEG;
const RESERVED_AT: usize = 16 + lm::RESERVED;
const PAYLOAD_AT: usize = 16 + lm::PAYLOAD;
const PAYLOAD_LEN_AT: usize = PAYLOAD_AT + 4;

fn golden() -> Vec<u8> {
    common::lane_message().encode().unwrap()
}

fn put_u32(buf: &mut [u8], at: usize, v: u32) {
    buf[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// A lane message with arbitrary raw kind, leg and reserved bytes and payload, built with the
/// schema-agnostic builder so the encoder's own checks are bypassed.
fn raw(kind: u8, leg: u8, reserved: [u8; 2], payload: &[u8]) -> Vec<u8> {
    let (mut b, root) = Builder::new(MessageType::Lane as u8, lm::SIZE).unwrap();
    b.put_u64(root, lm::CHAIN_ID, 7).unwrap();
    b.put_u32(root, lm::SENDER, 9).unwrap();
    b.put_u8(root, lm::KIND, kind).unwrap();
    b.put_u8(root, lm::LEG, leg).unwrap();
    b.put(root, lm::RESERVED, &reserved).unwrap();
    b.put_bytes(root, lm::PAYLOAD, payload).unwrap();
    b.finish().unwrap()
}

/// The decoder's answer through both entry points, which must agree.
fn parse_err(bytes: &[u8]) -> WireError {
    common::agreed_error(LaneMessageRef::parse(bytes).unwrap_err(), bytes)
}

#[test]
fn lane_kind_bytes_names_and_order() {
    assert_eq!(LaneKind::ALL.len(), 8);
    for (i, kind) in LaneKind::ALL.into_iter().enumerate() {
        assert_eq!(kind as u8, i as u8 + 1);
        assert_eq!(LaneKind::try_from(kind as u8), Ok(kind));
        assert_eq!(kind.to_string(), kind.as_str());
    }
    let names: Vec<String> = LaneKind::ALL.iter().map(ToString::to_string).collect();
    assert_eq!(
        names,
        [
            "leg",
            "magnetar_signature",
            "rollup_signature",
            "corona_round1",
            "corona_round2",
            "pulsar_round1",
            "pulsar_round2",
            "pulsar_round3"
        ]
    );
    let rounds: Vec<LaneKind> = LaneKind::ALL
        .into_iter()
        .filter(|k| k.is_threshold_round())
        .collect();
    assert_eq!(
        rounds,
        [
            LaneKind::CoronaRound1,
            LaneKind::CoronaRound2,
            LaneKind::PulsarRound1,
            LaneKind::PulsarRound2,
            LaneKind::PulsarRound3
        ]
    );
    for found in [0u8, 9, 0x80, 0xff] {
        assert_eq!(
            LaneKind::try_from(found),
            Err(WireError::UnknownLaneKind { found })
        );
    }
    assert_eq!(MessageType::try_from(8), Ok(MessageType::Lane));
    assert_eq!(
        Message::Lane(common::lane_message()).message_type(),
        MessageType::Lane
    );
    assert_eq!(lm::SIZE, 72);
}

// ------------------------------------------------------------------------------------------
// Round trips
// ------------------------------------------------------------------------------------------

/// A finished leg of every kind travels with its LegKind in the `leg` byte and no session.
#[test]
fn leg_messages_round_trip_for_every_leg_kind() {
    for leg in LegKind::ALL {
        let m = LaneMessage {
            leg: leg as u8,
            ..common::lane_leg()
        };
        assert_eq!(m.leg_kind(), Some(leg));
        let bytes = m.encode().unwrap();
        let r = LaneMessageRef::parse(&bytes).unwrap();
        assert_eq!(
            (r.kind(), r.leg(), r.leg_kind()),
            (LaneKind::Leg, leg as u8, Some(leg))
        );
        assert_eq!(r.session(), &[0; 32]);
        assert_eq!(r.payload(), b"magnetar-leg-body");
        assert_eq!(r.to_owned(), m);
        let MessageRef::Lane(d) = decode(&bytes).unwrap() else {
            panic!("a lane message decodes to another type");
        };
        assert_eq!(d.to_owned(), m);
    }
}

/// Every non-leg kind with leg byte 0, an empty payload, and a session that does not follow the
/// convention: the decoder accepts it (the session is the receiver's to check).
#[test]
fn empty_payloads_and_unconventional_sessions_decode() {
    for kind in LaneKind::ALL.into_iter().filter(|&k| k != LaneKind::Leg) {
        for session in [[0; 32], [0xee; 32]] {
            let m = LaneMessage {
                kind,
                session,
                payload: Vec::new(),
                ..common::lane_message()
            };
            assert_eq!(m.leg_kind(), None);
            let bytes = m.encode().unwrap();
            assert_eq!(bytes.len(), 16 + lm::SIZE);
            let r = LaneMessageRef::parse(&bytes).unwrap();
            assert_eq!((r.kind(), r.leg_kind(), r.payload()), (kind, None, &[][..]));
            assert_eq!(r.session(), &session);
            assert_eq!(r.to_owned(), m);
        }
    }
}

// ------------------------------------------------------------------------------------------
// Encoder
// ------------------------------------------------------------------------------------------

#[test]
fn encoder_refuses_a_leg_message_without_a_leg_kind() {
    for leg in [0u8, 6, 0x80, 0xff] {
        let m = LaneMessage {
            leg,
            ..common::lane_leg()
        };
        let refused = WireError::LaneLeg {
            kind: LaneKind::Leg,
            leg,
        };
        assert_eq!(m.leg_kind(), None);
        assert_eq!(m.encode(), Err(refused.clone()), "leg {leg}");
        assert_eq!(Message::Lane(m).encode(), Err(refused));
    }
}

#[test]
fn encoder_refuses_a_leg_byte_on_a_non_leg_kind() {
    for kind in LaneKind::ALL.into_iter().filter(|&k| k != LaneKind::Leg) {
        for leg in [1u8, 5, 0xff] {
            let m = LaneMessage {
                kind,
                leg,
                ..common::lane_message()
            };
            assert_eq!(m.encode(), Err(WireError::LaneLeg { kind, leg }));
        }
    }
}

#[test]
fn encoder_accepts_max_payload_and_refuses_one_more() {
    let full = LaneMessage {
        payload: vec![0x5a; MAX_LANE_PAYLOAD],
        ..common::lane_leg()
    };
    let bytes = full.encode().unwrap();
    let r = LaneMessageRef::parse(&bytes).unwrap();
    assert_eq!(r.payload().len(), MAX_LANE_PAYLOAD);
    assert_eq!(r.to_owned(), full);

    let over = LaneMessage {
        payload: vec![0x5a; MAX_LANE_PAYLOAD + 1],
        ..common::lane_leg()
    };
    let refused = WireError::PayloadTooLarge {
        len: MAX_LANE_PAYLOAD + 1,
    };
    assert_eq!(over.encode(), Err(refused.clone()));
    assert_eq!(Message::Lane(over).encode(), Err(refused));
}

// ------------------------------------------------------------------------------------------
// Decoder
// ------------------------------------------------------------------------------------------

#[test]
fn decoder_refuses_an_unknown_kind() {
    for found in [0u8, 9, 0x80, 0xff] {
        let mut b = golden();
        b[KIND_AT] = found;
        assert_eq!(
            parse_err(&b),
            WireError::UnknownLaneKind { found },
            "kind {found}"
        );
    }
}

#[test]
fn decoder_refuses_a_leg_message_whose_leg_byte_is_not_a_leg_kind() {
    let leg_message = common::lane_leg().encode().unwrap();
    for leg in [0u8, 6, 0x80, 0xff] {
        let mut b = leg_message.clone();
        b[LEG_AT] = leg;
        assert_eq!(
            parse_err(&b),
            WireError::LaneLeg {
                kind: LaneKind::Leg,
                leg
            },
            "leg {leg}"
        );
    }
}

#[test]
fn decoder_refuses_a_nonzero_leg_byte_on_a_non_leg_kind() {
    for kind in LaneKind::ALL.into_iter().filter(|&k| k != LaneKind::Leg) {
        for leg in [1u8, 5, 6, 0xff] {
            let mut b = golden();
            b[KIND_AT] = kind as u8;
            b[LEG_AT] = leg;
            assert_eq!(
                parse_err(&b),
                WireError::LaneLeg { kind, leg },
                "{kind} leg {leg}"
            );
        }
    }
}

#[test]
fn decoder_refuses_nonzero_reserved_bytes() {
    for (reserved, found) in [
        ([1u8, 0], 1u64),
        ([0, 0x80], 0x8000),
        ([0xff, 0xff], 0xffff),
    ] {
        let mut b = golden();
        b[RESERVED_AT..RESERVED_AT + 2].copy_from_slice(&reserved);
        assert_eq!(
            parse_err(&b),
            WireError::ReservedNonZero {
                field: lm::RESERVED,
                found
            },
            "reserved {reserved:?}"
        );
    }
    let bytes = raw(LaneKind::PulsarRound2 as u8, 0, [0, 1], b"r2");
    assert_eq!(
        parse_err(&bytes),
        WireError::ReservedNonZero {
            field: lm::RESERVED,
            found: 0x100
        }
    );
}

/// A hostile announced length is refused on the number alone, before the pointer is resolved,
/// even when the offset is hostile too: nothing is read or bounds-checked past the root.
#[test]
fn decoder_refuses_a_payload_over_the_limit_before_following_the_pointer() {
    for len in [MAX_LANE_PAYLOAD as u32 + 1, 1 << 30, u32::MAX] {
        for rel in [8u32, u32::MAX] {
            let mut b = golden();
            put_u32(&mut b, PAYLOAD_AT, rel);
            put_u32(&mut b, PAYLOAD_LEN_AT, len);
            assert_eq!(
                parse_err(&b),
                WireError::PayloadTooLarge { len: len as usize },
                "len {len} rel {rel}"
            );
        }
    }
    // Present in the message: refused by length, not by bounds.
    let bytes = raw(
        LaneKind::Leg as u8,
        LegKind::Magnetar as u8,
        [0; 2],
        &vec![1; MAX_LANE_PAYLOAD + 1],
    );
    assert_eq!(
        parse_err(&bytes),
        WireError::PayloadTooLarge {
            len: MAX_LANE_PAYLOAD + 1
        }
    );
    // Exactly the limit announced but not present: within the limit, so the bounds check answers.
    let mut b = golden();
    put_u32(&mut b, PAYLOAD_LEN_AT, MAX_LANE_PAYLOAD as u32);
    assert!(matches!(
        parse_err(&b),
        WireError::PointerOutOfBounds {
            field: PAYLOAD_AT,
            ..
        }
    ));
}

#[test]
fn decoder_refuses_a_payload_outside_the_message() {
    let size = golden().len() as u32;
    // One byte longer than what is there; offset past the end.
    let mut b = golden();
    put_u32(&mut b, PAYLOAD_LEN_AT, 10);
    assert!(matches!(
        parse_err(&b),
        WireError::PointerOutOfBounds {
            field: PAYLOAD_AT,
            ..
        }
    ));
    let mut b = golden();
    put_u32(&mut b, PAYLOAD_AT, size);
    assert!(matches!(
        parse_err(&b),
        WireError::PointerOutOfBounds {
            field: PAYLOAD_AT,
            ..
        }
    ));
}

/// The checks run in the documented order: kind, leg byte, reserved bytes, payload length, then
/// payload bounds. A message broken in every way reports its kind; fixing each in turn reveals the
/// next.
#[test]
fn decoder_errors_come_in_the_documented_order() {
    let mut b = golden();
    b[KIND_AT] = 0;
    b[LEG_AT] = 7;
    b[RESERVED_AT] = 1;
    put_u32(&mut b, PAYLOAD_LEN_AT, u32::MAX);
    assert_eq!(parse_err(&b), WireError::UnknownLaneKind { found: 0 });
    b[KIND_AT] = LaneKind::RollupSignature as u8;
    assert_eq!(
        parse_err(&b),
        WireError::LaneLeg {
            kind: LaneKind::RollupSignature,
            leg: 7
        }
    );
    b[LEG_AT] = 0;
    assert_eq!(
        parse_err(&b),
        WireError::ReservedNonZero {
            field: lm::RESERVED,
            found: 1
        }
    );
    b[RESERVED_AT] = 0;
    assert_eq!(
        parse_err(&b),
        WireError::PayloadTooLarge {
            len: u32::MAX as usize
        }
    );
    put_u32(&mut b, PAYLOAD_LEN_AT, 10);
    assert!(matches!(
        parse_err(&b),
        WireError::PointerOutOfBounds { .. }
    ));
    put_u32(&mut b, PAYLOAD_LEN_AT, 9);
    assert_eq!(
        LaneMessageRef::parse(&b).unwrap().kind(),
        LaneKind::RollupSignature
    );
}
