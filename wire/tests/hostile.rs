//! Hostile inputs: truncations, header corruption, pointers outside the message, hostile counts.
//! Every case must return its specific `WireError`, never panic and never allocate by a count.

mod common;

use quasar_wire::*;

fn encoded() -> Vec<(MessageType, Vec<u8>)> {
    common::all()
        .iter()
        .map(|m| (m.message_type(), m.encode().unwrap()))
        .collect()
}

fn put_u32(buf: &mut [u8], at: usize, v: u32) {
    buf[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn every_truncation_of_every_golden_is_rejected() {
    for (ty, bytes) in encoded() {
        for cut in 0..bytes.len() {
            let prefix = &bytes[..cut];
            assert!(decode(prefix).is_err(), "{ty:?} cut at {cut}");
            // Also with the size field patched to match, so the deeper pointer checks are reached:
            // each golden's last out-of-line region ends exactly at the end, so every cut breaks it.
            if cut >= 16 {
                let mut patched = prefix.to_vec();
                put_u32(&mut patched, 12, cut as u32);
                assert!(
                    decode(&patched).is_err(),
                    "{ty:?} cut at {cut} with patched size"
                );
            }
        }
    }
}

#[test]
fn short_buffers_are_too_short() {
    for len in 0..16 {
        assert_eq!(
            decode(&vec![0; len]).unwrap_err(),
            WireError::TooShort { len }
        );
    }
}

#[test]
fn each_header_field_has_its_own_error() {
    let vote = common::vote().encode().unwrap();
    let len = vote.len();

    let mut b = vote.clone();
    b[0] = b'X';
    assert_eq!(
        decode(&b).unwrap_err(),
        WireError::BadMagic { found: *b"XAP\0" }
    );

    let mut b = vote.clone();
    b[4] = 1;
    assert_eq!(
        decode(&b).unwrap_err(),
        WireError::UnsupportedVersion { found: 1 }
    );

    let mut b = vote.clone();
    b[6] = 0x80; // reserved low byte of flags
    assert_eq!(
        decode(&b).unwrap_err(),
        WireError::ReservedFlags { found: 0x80 }
    );

    // 13 is the first type byte after the last known type (12, EpochSetProof).
    for found in [0u8, 13, 0xff] {
        let mut b = vote.clone();
        b[7] = found; // message type, high byte of flags
        assert_eq!(
            decode(&b).unwrap_err(),
            WireError::UnknownMessageType { found }
        );
    }

    for header in [len as u32 - 1, len as u32 + 1, 0, u32::MAX] {
        let mut b = vote.clone();
        put_u32(&mut b, 12, header);
        assert_eq!(
            decode(&b).unwrap_err(),
            WireError::SizeMismatch {
                header,
                buffer: len
            }
        );
    }
    // A trailing byte after a valid message: a frame carries exactly one message.
    let mut b = vote.clone();
    b.push(0);
    assert!(matches!(decode(&b), Err(WireError::SizeMismatch { .. })));

    // Root inside the header, or root object not fitting in the message.
    for offset in [0u32, 8, 15, len as u32 - 164, len as u32, u32::MAX] {
        let mut b = vote.clone();
        put_u32(&mut b, 8, offset);
        assert_eq!(
            decode(&b).unwrap_err(),
            WireError::RootOutOfBounds {
                offset,
                object_size: 165,
                size: len
            },
            "root {offset}"
        );
    }
}

#[test]
fn typed_readers_reject_other_types() {
    let vote = common::vote().encode().unwrap();
    assert_eq!(
        ProposalRef::parse(&vote).unwrap_err(),
        WireError::WrongMessageType {
            expected: 1,
            found: 2
        }
    );
    assert!(matches!(
        TxBatchRef::parse(&vote),
        Err(WireError::WrongMessageType { .. })
    ));
    assert!(matches!(
        CertificateRef::parse(&vote),
        Err(WireError::WrongMessageType { .. })
    ));
    assert!(matches!(
        SyncRequestRef::parse(&vote),
        Err(WireError::WrongMessageType { .. })
    ));
    assert!(matches!(
        RelayRequestRef::parse(&vote),
        Err(WireError::WrongMessageType { .. })
    ));
    assert!(matches!(
        SyncResponseRef::parse(&vote),
        Err(WireError::WrongMessageType { .. })
    ));
    assert_eq!(
        QuasarCertRef::parse(&vote).unwrap_err(),
        WireError::WrongMessageType {
            expected: 7,
            found: 2
        }
    );
    assert_eq!(
        LaneMessageRef::parse(&vote).unwrap_err(),
        WireError::WrongMessageType {
            expected: 8,
            found: 2
        }
    );
    let cert = common::certificate().encode().unwrap();
    assert!(matches!(
        VoteRef::parse(&cert),
        Err(WireError::WrongMessageType { .. })
    ));
    // A QuasarCert is not a (BLS) Certificate, and vice versa.
    let quasar = common::quasar_cert().encode().unwrap();
    assert_eq!(
        CertificateRef::parse(&quasar).unwrap_err(),
        WireError::WrongMessageType {
            expected: 3,
            found: 7
        }
    );
    assert!(matches!(
        QuasarCertRef::parse(&cert),
        Err(WireError::WrongMessageType { .. })
    ));
    // A lane message carrying a leg is not a QuasarCert.
    let lane = common::lane_leg().encode().unwrap();
    assert_eq!(
        QuasarCertRef::parse(&lane).unwrap_err(),
        WireError::WrongMessageType {
            expected: 7,
            found: 8
        }
    );
}

#[test]
fn unknown_enum_bytes_are_rejected() {
    let vote = common::vote().encode().unwrap();
    for found in [0u8, 4, 0xff] {
        let mut b = vote.clone();
        b[16 + 164] = found;
        assert_eq!(
            decode(&b).unwrap_err(),
            WireError::UnknownVoteKind { found }
        );
    }
    let cert = common::certificate().encode().unwrap();
    for found in [0u8, 4, 0xff] {
        let mut b = cert.clone();
        b[16 + 168] = found;
        assert_eq!(
            decode(&b).unwrap_err(),
            WireError::UnknownCertificateKind { found }
        );
    }
}

/// TxBatch golden: root at 16, its list pointer at 16..24 (rel, count); entries at 24.. .
#[test]
fn hostile_list_pointers_are_rejected() {
    let batch = common::tx_batch().encode().unwrap();
    let size = batch.len();

    // List offset past the end.
    let mut b = batch.clone();
    put_u32(&mut b, 16, u32::MAX);
    assert!(matches!(
        decode(&b),
        Err(WireError::PointerOutOfBounds { field: 16, .. })
    ));

    // A count whose count × 8 extent is far beyond the message (u32::MAX × 8 ≈ 34 GB): rejected
    // before any allocation or per-entry work.
    for count in [u32::MAX, u32::MAX / 8 + 1, (size as u32) / 8 + 1] {
        let mut b = batch.clone();
        put_u32(&mut b, 20, count);
        match decode(&b) {
            Err(WireError::PointerOutOfBounds { field: 16, len, .. }) => {
                assert_eq!(len, u64::from(count) * 8)
            }
            other => panic!("count {count}: {other:?}"),
        }
    }

    // An entry whose length runs past the end; an entry whose offset runs past the end.
    let mut b = batch.clone();
    put_u32(&mut b, 24 + 4, 1000);
    assert!(matches!(
        decode(&b),
        Err(WireError::PointerOutOfBounds { field: 24, .. })
    ));
    let mut b = batch.clone();
    put_u32(&mut b, 24 + 16, u32::MAX);
    assert!(matches!(
        decode(&b),
        Err(WireError::PointerOutOfBounds { field: 40, .. })
    ));
    // Offset + length both near u32::MAX: extent computed in u64 without overflow.
    let mut b = batch.clone();
    put_u32(&mut b, 24, u32::MAX);
    put_u32(&mut b, 28, u32::MAX);
    assert!(matches!(
        decode(&b),
        Err(WireError::PointerOutOfBounds { .. })
    ));
}

#[test]
fn hostile_bytes_and_object_pointers_are_rejected() {
    // Certificate signers pointer at root field 160 (absolute 176).
    let cert = common::certificate().encode().unwrap();
    let mut b = cert.clone();
    put_u32(&mut b, 176 + 4, u32::MAX);
    assert!(matches!(
        decode(&b),
        Err(WireError::PointerOutOfBounds { field: 176, .. })
    ));

    // Proposal header: i32 at absolute 16. Backwards into the header (before byte 16), and past
    // the end, and so far back the target is negative.
    let proposal = common::proposal().encode().unwrap();
    for (rel, start) in [
        (-8i32, 8i64),
        (-16, 0),
        (i32::MIN, 16 + i64::from(i32::MIN)),
    ] {
        let mut b = proposal.clone();
        b[16..20].copy_from_slice(&rel.to_le_bytes());
        assert_eq!(
            decode(&b).unwrap_err(),
            WireError::PointerOutOfBounds {
                field: 16,
                start,
                len: 148,
                size: proposal.len()
            },
            "rel {rel}"
        );
    }
    let mut b = proposal.clone();
    b[16..20].copy_from_slice(&i32::MAX.to_le_bytes());
    assert!(matches!(
        decode(&b),
        Err(WireError::PointerOutOfBounds { field: 16, .. })
    ));
    // The header object overlapping the root is allowed (offsets are not required to be disjoint),
    // as long as it is within the message: pointing it at offset 16 decodes.
    let mut b = proposal.clone();
    b[16..20].copy_from_slice(&0i32.to_le_bytes());
    assert!(decode(&b).is_ok());
}

#[test]
fn sync_response_items_must_be_proposals_votes_certificates_or_quasar_certs() {
    // A SyncResponse has the same root layout as a TxBatch, so a TxBatch with the type byte
    // changed to 6 is a SyncResponse whose items are the batch's transactions.
    let vote = common::vote().encode().unwrap();
    let batch = common::tx_batch().encode().unwrap();
    let mut b = TxBatch {
        txs: vec![vote.clone(), batch],
    }
    .encode()
    .unwrap();
    b[7] = MessageType::SyncResponse as u8;
    assert_eq!(
        decode(&b).unwrap_err(),
        WireError::BadSyncItem {
            index: 1,
            reason: Box::new(WireError::WrongMessageType {
                expected: 1,
                found: 4
            })
        }
    );
    let mut b = TxBatch {
        txs: vec![common::certificate().encode().unwrap(), b"junk".to_vec()],
    }
    .encode()
    .unwrap();
    b[7] = MessageType::SyncResponse as u8;
    assert_eq!(
        decode(&b).unwrap_err(),
        WireError::BadSyncItem {
            index: 1,
            reason: Box::new(WireError::TooShort { len: 4 })
        }
    );
    // A QuasarCert is a sync item (a node that fell behind fetches the bundles' certificates
    // with the blocks), but a damaged one is refused like any other item.
    let quasar = common::quasar_cert().encode().unwrap();
    let response = SyncResponse {
        items: vec![common::certificate().encode().unwrap(), quasar.clone()],
    };
    let bytes = Message::SyncResponse(response.clone()).encode().unwrap();
    match decode(&bytes).unwrap() {
        MessageRef::SyncResponse(r) => {
            assert_eq!(
                r.items().map(<[u8]>::to_vec).collect::<Vec<_>>(),
                response.items
            );
        }
        other => panic!("expected a SyncResponse, got {other:?}"),
    }
    let mut b = TxBatch {
        txs: vec![quasar[..quasar.len() - 1].to_vec()],
    }
    .encode()
    .unwrap();
    b[7] = MessageType::SyncResponse as u8;
    assert!(matches!(
        decode(&b).unwrap_err(),
        WireError::BadSyncItem { index: 0, .. }
    ));
    // No nesting: a SyncResponse inside a SyncResponse is refused on both sides.
    let inner = common::sync_response().encode().unwrap();
    let nested = SyncResponse { items: vec![inner] };
    assert!(matches!(
        nested.encode(),
        Err(WireError::BadSyncItem { index: 0, .. })
    ));
    assert!(matches!(
        Message::SyncResponse(nested).encode(),
        Err(WireError::BadSyncItem { .. })
    ));
}
