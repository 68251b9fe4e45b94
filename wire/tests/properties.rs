//! Properties: every owned message round-trips; no byte string, random or mutated, makes the
//! decoder panic; whatever decodes re-encodes to an equal value.

mod common;

use proptest::collection::vec;
use proptest::prelude::*;
use quasar_wire::*;

fn hash() -> impl Strategy<Value = Hash> {
    any::<[u8; 32]>()
}

fn signature() -> impl Strategy<Value = [u8; SIGNATURE_LEN]> {
    vec(any::<u8>(), SIGNATURE_LEN).prop_map(|v| v.try_into().unwrap())
}

fn txs() -> impl Strategy<Value = Vec<Vec<u8>>> {
    vec(vec(any::<u8>(), 0..40), 0..8)
}

fn header() -> impl Strategy<Value = BlockHeader> {
    (any::<[u64; 6]>(), hash(), any::<u32>(), hash(), hash()).prop_map(
        |(n, parent, proposer, root, state_root)| BlockHeader {
            chain_id: n[0],
            epoch: n[1],
            view: n[2],
            height: n[3],
            parent_view: n[4],
            parent,
            proposer,
            timestamp_us: n[5],
            payload_root: root,
            state_root,
        },
    )
}

fn proposal() -> impl Strategy<Value = Proposal> {
    (header(), txs(), signature()).prop_map(|(header, txs, signature)| Proposal {
        header,
        txs,
        signature,
    })
}

fn vote() -> impl Strategy<Value = Vote> {
    let kind = prop_oneof![
        Just(VoteKind::Notarize),
        Just(VoteKind::Finalize),
        Just(VoteKind::Nullify)
    ];
    (kind, any::<[u64; 4]>(), hash(), any::<u32>(), signature()).prop_map(
        |(kind, n, block, signer, signature)| Vote {
            kind,
            chain_id: n[0],
            epoch: n[1],
            view: n[2],
            height: n[3],
            block,
            signer,
            signature,
        },
    )
}

fn certificate() -> impl Strategy<Value = Certificate> {
    let kind = prop_oneof![
        Just(CertificateKind::Notarization),
        Just(CertificateKind::Finalization),
        Just(CertificateKind::Nullification)
    ];
    (
        kind,
        any::<[u64; 4]>(),
        hash(),
        vec(any::<u8>(), 0..40),
        signature(),
    )
        .prop_map(|(kind, n, block, signers, signature)| Certificate {
            kind,
            chain_id: n[0],
            epoch: n[1],
            view: n[2],
            height: n[3],
            block,
            signers,
            signature,
        })
}

fn leg_kind() -> impl Strategy<Value = LegKind> {
    prop::sample::select(LegKind::ALL.to_vec())
}

/// Bundles of 1..=8 digests (the `MAX_BUNDLE` edge is a unit test) and 1..=`MAX_LEGS` legs of any
/// kinds, duplicates included (they decode; the lane verifier rejects them), bodies possibly empty.
fn quasar_cert() -> impl Strategy<Value = QuasarCert> {
    (
        any::<[u64; 4]>(),
        hash(),
        vec(hash(), 1..=8),
        vec((leg_kind(), vec(any::<u8>(), 0..40)), 1..=MAX_LEGS),
    )
        .prop_map(|(n, block, bundle, legs)| QuasarCert {
            chain_id: n[0],
            epoch: n[1],
            height: n[2],
            view: n[3],
            block,
            bundle,
            legs,
        })
}

fn lane_kind() -> impl Strategy<Value = LaneKind> {
    prop::sample::select(LaneKind::ALL.to_vec())
}

/// Lane messages of every kind with a consistent `leg` byte (a random leg kind for `Leg`, 0
/// otherwise), any session (the decoder does not check it) and payloads up to 64 bytes, empty
/// included (the `MAX_LANE_PAYLOAD` edge is a unit test).
fn lane_message() -> impl Strategy<Value = LaneMessage> {
    (
        any::<[u64; 3]>(),
        any::<u32>(),
        lane_kind(),
        leg_kind(),
        hash(),
        vec(any::<u8>(), 0..64),
    )
        .prop_map(|(n, sender, kind, leg, session, payload)| LaneMessage {
            chain_id: n[0],
            epoch: n[1],
            height: n[2],
            sender,
            kind,
            leg: if kind == LaneKind::Leg { leg as u8 } else { 0 },
            session,
            payload,
        })
}

fn message() -> impl Strategy<Value = Message> {
    let item = prop_oneof![
        proposal().prop_map(|p| p.encode().unwrap()),
        vote().prop_map(|v| v.encode().unwrap()),
        certificate().prop_map(|c| c.encode().unwrap()),
        quasar_cert().prop_map(|c| c.encode().unwrap()),
    ];
    prop_oneof![
        proposal().prop_map(Message::Proposal),
        vote().prop_map(Message::Vote),
        certificate().prop_map(Message::Certificate),
        txs().prop_map(|txs| Message::TxBatch(TxBatch { txs })),
        (any::<u64>(), any::<u32>(), hash()).prop_map(|(from_height, max_blocks, block)| {
            Message::SyncRequest(SyncRequest {
                from_height,
                max_blocks,
                block,
            })
        }),
        vec(item, 0..4).prop_map(|items| Message::SyncResponse(SyncResponse { items })),
        quasar_cert().prop_map(Message::QuasarCert),
        lane_message().prop_map(Message::Lane),
        (any::<u64>(), any::<u64>(), any::<u32>()).prop_map(|(epoch, from_view, signer)| {
            Message::RelayRequest(RelayRequest {
                epoch,
                from_view,
                signer,
            })
        }),
        (any::<u64>(), hash(), any::<u32>()).prop_map(|(version, start, max_bytes)| {
            Message::StateRequest(StateRequest {
                version,
                start,
                max_bytes,
            })
        }),
        (
            any::<u64>(),
            0u8..3,
            vec(vec(any::<u8>(), 33..80), 0..4),
            vec(any::<u8>(), 0..40)
        )
            .prop_map(|(version, status, entries, proof)| {
                Message::StateChunk(StateChunk {
                    version,
                    status: ChunkStatus::try_from(status).expect("0..3"),
                    entries,
                    proof,
                })
            }),
        (
            any::<u64>(),
            vec(any::<u8>(), 0..60),
            vec(any::<u8>(), 0..60)
        )
            .prop_map(|(epoch, set, proof)| Message::EpochSetProof(EpochSetProof {
                epoch,
                set,
                proof
            })),
    ]
}

/// Decoding must not panic; on success, to_owned → encode → decode gives the same value back.
/// Also runs the fuzz entry point, whose per-schema checks (sync items, QuasarCert accessors and
/// canonical re-encoding) go further.
fn decode_is_total_and_stable(bytes: &[u8]) {
    quasar_wire::fuzzing::decode(bytes);
    if let Ok(decoded) = decode(bytes) {
        let owned = decoded.to_owned();
        let again = owned.encode().expect("a decoded value re-encodes");
        assert_eq!(
            decode(&again).expect("re-encoding decodes").to_owned(),
            owned
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn owned_messages_round_trip(m in message()) {
        let bytes = m.encode().unwrap();
        prop_assert_eq!(bytes.len() as u64, u64::from(u32::from_le_bytes(bytes[12..16].try_into().unwrap())));
        let decoded = decode(&bytes).unwrap();
        prop_assert_eq!(decoded.message_type(), m.message_type());
        prop_assert_eq!(decoded.to_owned(), m);
    }

    #[test]
    fn proposal_txs_are_borrowed_in_order(p in proposal()) {
        let bytes = p.encode().unwrap();
        let r = ProposalRef::parse(&bytes).unwrap();
        prop_assert_eq!(r.txs().len(), p.txs.len());
        prop_assert_eq!(payload_root(r.txs()), payload_root(p.txs.iter().map(Vec::as_slice)));
    }

    #[test]
    fn quasar_cert_round_trips_with_borrowed_bundle_and_legs(q in quasar_cert()) {
        let bytes = q.encode().unwrap();
        let r = QuasarCertRef::parse(&bytes).unwrap();
        prop_assert_eq!(
            (r.chain_id(), r.epoch(), r.height(), r.view(), r.block()),
            (q.chain_id, q.epoch, q.height, q.view, &q.block)
        );
        prop_assert_eq!(r.bundle_len(), q.bundle.len());
        prop_assert!(r.bundle().eq(q.bundle.iter()));
        prop_assert_eq!(r.bundle_bytes(), q.bundle.as_flattened());
        prop_assert_eq!(r.leg_count(), q.legs.len());
        prop_assert!(r.legs().eq(q.legs.iter().map(|(k, b)| (*k, b.as_slice()))));
        prop_assert_eq!(r.to_owned(), q.clone());
        // The encoding is a fixed point of decode → encode.
        prop_assert_eq!(&r.to_owned().encode().unwrap(), &bytes);
        quasar_wire::fuzzing::decode(&bytes);
    }

    #[test]
    fn lane_message_round_trips_with_borrowed_payload(m in lane_message()) {
        let bytes = m.encode().unwrap();
        let r = LaneMessageRef::parse(&bytes).unwrap();
        prop_assert_eq!(
            (r.chain_id(), r.epoch(), r.height(), r.sender(), r.kind(), r.leg()),
            (m.chain_id, m.epoch, m.height, m.sender, m.kind, m.leg)
        );
        prop_assert_eq!(r.leg_kind(), m.leg_kind());
        prop_assert_eq!(r.leg_kind().is_some(), m.kind == LaneKind::Leg);
        prop_assert_eq!(r.session(), &m.session);
        prop_assert_eq!(r.payload(), m.payload.as_slice());
        prop_assert_eq!(r.to_owned(), m.clone());
        // The encoding is a fixed point of decode → encode.
        prop_assert_eq!(&r.to_owned().encode().unwrap(), &bytes);
        quasar_wire::fuzzing::decode(&bytes);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..300)) {
        decode_is_total_and_stable(&bytes);
    }

    /// Random bytes behind a valid header, so the schema decoders (not just the header check) see
    /// hostile pointers and counts.
    #[test]
    fn arbitrary_bodies_behind_valid_headers_never_panic(
        ty in 0u8..10,
        root in prop_oneof![Just(16u32), any::<u32>()],
        body in vec(any::<u8>(), 0..400),
    ) {
        let mut bytes = Vec::with_capacity(16 + body.len());
        bytes.extend_from_slice(b"ZAP\0");
        bytes.extend_from_slice(&2u16.to_le_bytes());
        bytes.extend_from_slice(&[0, ty]);
        bytes.extend_from_slice(&root.to_le_bytes());
        bytes.extend_from_slice(&((16 + body.len()) as u32).to_le_bytes());
        bytes.extend_from_slice(&body);
        decode_is_total_and_stable(&bytes);
    }

    #[test]
    fn single_byte_mutations_never_panic(m in message(), at in any::<prop::sample::Index>(), value in any::<u8>()) {
        let mut bytes = m.encode().unwrap();
        let i = at.index(bytes.len());
        bytes[i] = value;
        decode_is_total_and_stable(&bytes);
    }
}

/// Exhaustive variant of the mutation property on the goldens: every byte, a few values each.
#[test]
fn every_byte_of_every_golden_mutated_never_panics() {
    for m in common::all() {
        let bytes = m.encode().unwrap();
        for i in 0..bytes.len() {
            for value in [0x00, 0x01, 0x7f, 0x80, 0xff, bytes[i] ^ 0x01] {
                let mut b = bytes.clone();
                b[i] = value;
                decode_is_total_and_stable(&b);
            }
        }
    }
}
