//! Golden bytes: the exact encoding of one fixed value per schema, and the hashes and signed bytes
//! everything else depends on. A change here is a wire-format or consensus change: bump the ZAP
//! container version, the schemas' ALPN (`zap/N`, quasar_p2p) or the hash's `-vN` tag, never just
//! re-pin. (ALPN `zap/3` and `QUASAR-BLOCK-v2` added the header's state root.)

mod common;

use quasar_crypto::hash::tagged_hash;
use quasar_wire::*;

const PROPOSAL: &str = "5a415000020000011000000037010000700000000401000002000000a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff00000000070000000000000003000000000000002a000000000000002900000000000000280000000000000000401e18240a0600101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2fb6d0eec5d7dee48d6bea5e2aef9f98c7b9015f0b59c0ac5688b513038dfa375705000000606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f000000001000000006000000100000000700000074782d6f6e65000074782d74776f21";
const VOTE: &str = "5a4150000200000210000000b5000000070000000000000003000000000000002a000000000000002900000000000000303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf0900000002";
const CERTIFICATE: &str = "5a4150000200000310000000c2000000070000000000000003000000000000002a000000000000002900000000000000303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4fc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f10000000020000000100000000000000b701";
const TX_BATCH: &str = "5a41500002000004100000003f00000008000000030000001800000001000000180000000000000010000000070000006100000000000000736574206b2076";
const SYNC_REQUEST: &str = "5a41500002000005100000003c0000006400000000000000000000000000000000000000000000000000000000000000000000000000000010000000";
const SYNC_RESPONSE: &str = "5a4150000200000610000000010200000800000002000000100000001801000020010000c10000005a415000020000011000000018010000700000000401000000000000a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff00000000070000000000000003000000000000002a000000000000002900000000000000280000000000000000401e18240a0600101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2fb6d0eec5d7dee48d6bea5e2aef9f98c7b9015f0b59c0ac5688b513038dfa375705000000606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f000000005a4150000200000310000000c1000000070000000000000003000000000000002a000000000000002900000000000000303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4fc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f1000000001000000010000000000000001";
const QUASAR_CERT: &str = "5a4150000200000710000000cd0000000700000000000000030000000000000029000000000000002a00000000000000303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f10000000400000004800000003000000505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f18000000080000001800000007000000180000000500000001626c732d61676702636f726f6e61000367313621";
const RELAY_REQUEST: &str =
    "5a4150000200000910000000240000000300000000000000290000000000000009000000";
const STATE_REQUEST: &str = "5a4150000200000a100000003c0000006000000000000000000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f00004000";
const STATE_CHUNK: &str = "5a4150000200000b100000009800000060000000000000001800000002000000700000000800000001000000000000001000000024000000300000002100000011111111111111111111111111111111111111111111111111111111111111116c6561660000000022222222222222222222222222222222222222222222222222222222222222226b000000000000007369626c696e6773";
const EPOCH_SET_PROOF: &str = "5a4150000200000c1000000034000000090000000000000010000000030000001000000004000000736574000000000070617468";
const LANE_MESSAGE: &str = "5a4150000200000810000000610000000700000000000000030000000000000029000000000000000900000004000000909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeaf0800000009000000636f726f6e612d7231";

/// Encodes `message`, compares with the pinned hex, and decodes the pinned bytes back to `message`.
fn check_golden(message: Message, pinned: &str) {
    let bytes = message.encode().unwrap();
    assert_eq!(
        hex::encode(&bytes),
        pinned,
        "{:?} encoding changed",
        message.message_type()
    );
    let pinned = hex::decode(pinned).unwrap();
    let decoded = decode(&pinned).unwrap();
    assert_eq!(decoded.message_type(), message.message_type());
    assert_eq!(decoded.to_owned(), message);
}

#[test]
fn proposal_golden() {
    let p = common::proposal();
    check_golden(Message::Proposal(p.clone()), PROPOSAL);
    let bytes = hex::decode(PROPOSAL).unwrap();
    let r = ProposalRef::parse(&bytes).unwrap();
    assert_eq!(r.header(), p.header);
    assert_eq!(r.txs().len(), 2);
    assert_eq!(r.txs().collect::<Vec<_>>(), [&b"tx-one"[..], b"tx-two!"]);
    assert_eq!(r.signature(), &p.signature);
    // Root at 16 (108 B), header object at 128 (148 B), tx list at 280, txs at 296 and 304.
    assert_eq!(bytes.len(), 311);
}

#[test]
fn vote_golden() {
    let v = common::vote();
    check_golden(Message::Vote(v.clone()), VOTE);
    let bytes = hex::decode(VOTE).unwrap();
    assert_eq!(bytes.len(), 16 + 165);
    let r = VoteRef::parse(&bytes).unwrap();
    assert_eq!(
        (r.kind(), r.signer(), r.view()),
        (VoteKind::Finalize, 9, 42)
    );
    assert_eq!(
        r.signing_message(&common::domain()),
        v.signing_message(&common::domain())
    );
}

#[test]
fn certificate_golden() {
    let c = common::certificate();
    check_golden(Message::Certificate(c.clone()), CERTIFICATE);
    let bytes = hex::decode(CERTIFICATE).unwrap();
    let r = CertificateRef::parse(&bytes).unwrap();
    assert_eq!(r.signers(), &[0b1011_0111, 0b0000_0001]);
    assert_eq!(r.kind(), CertificateKind::Notarization);
    assert_eq!(
        r.signing_message(&common::domain()),
        c.signing_message(&common::domain())
    );
}

#[test]
fn tx_batch_golden() {
    check_golden(Message::TxBatch(common::tx_batch()), TX_BATCH);
}

#[test]
fn sync_request_golden() {
    let s = common::sync_request();
    assert!(!s.is_by_hash());
    check_golden(Message::SyncRequest(s), SYNC_REQUEST);
    assert_eq!(
        hex::decode(SYNC_REQUEST).unwrap().len(),
        16 + 44 /* + 0 padding */
    );
}

#[test]
fn relay_request_golden() {
    check_golden(
        Message::RelayRequest(common::relay_request()),
        RELAY_REQUEST,
    );
    assert_eq!(hex::decode(RELAY_REQUEST).unwrap().len(), 16 + 20);
}

#[test]
fn state_request_and_chunk_golden() {
    let request = StateRequest {
        version: 96,
        start: std::array::from_fn(|i| i as u8),
        max_bytes: 4 << 20,
    };
    check_golden(Message::StateRequest(request), STATE_REQUEST);
    assert_eq!(hex::decode(STATE_REQUEST).unwrap().len(), 16 + 44);
    let chunk = StateChunk {
        version: 96,
        status: ChunkStatus::Partial,
        entries: vec![
            [[0x11; 32].as_slice(), b"leaf"].concat(),
            [[0x22; 32].as_slice(), b"k"].concat(),
        ],
        proof: b"siblings".to_vec(),
    };
    check_golden(Message::StateChunk(chunk.clone()), STATE_CHUNK);
    // An unknown status, a reserved byte set, an entry that is only a key: refused.
    let bytes = hex::decode(STATE_CHUNK).unwrap();
    let root = 16;
    let mut bad = bytes.clone();
    bad[root + 24] = 3;
    assert!(matches!(
        decode(&bad),
        Err(WireError::UnknownChunkStatus { found: 3 })
    ));
    let mut bad = bytes;
    bad[root + 31] = 1;
    assert!(matches!(
        decode(&bad),
        Err(WireError::ReservedNonZero { field: 25, .. })
    ));
    let short = StateChunk {
        entries: vec![vec![0x33; 32]],
        ..chunk
    };
    assert!(matches!(
        short.encode(),
        Err(WireError::StateEntry { index: 0, len: 32 })
    ));
}

#[test]
fn epoch_set_proof_golden() {
    let proof = EpochSetProof {
        epoch: 9,
        set: b"set".to_vec(),
        proof: b"path".to_vec(),
    };
    check_golden(Message::EpochSetProof(proof.clone()), EPOCH_SET_PROOF);
    // It may travel in a sync reply (a checkpoint's), beside the blocks.
    let reply = SyncResponse {
        items: vec![proof.encode().unwrap()],
    };
    let encoded = reply.encode().unwrap();
    assert!(matches!(decode(&encoded), Ok(MessageRef::SyncResponse(r)) if r.item_count() == 1));
}

#[test]
fn sync_response_golden() {
    let s = common::sync_response();
    check_golden(Message::SyncResponse(s.clone()), SYNC_RESPONSE);
    let bytes = hex::decode(SYNC_RESPONSE).unwrap();
    let r = SyncResponseRef::parse(&bytes).unwrap();
    let kinds: Vec<MessageType> = r
        .items()
        .map(|i| decode(i).unwrap().message_type())
        .collect();
    assert_eq!(kinds, [MessageType::Proposal, MessageType::Certificate]);
}

#[test]
fn quasar_cert_golden() {
    let q = common::quasar_cert();
    check_golden(Message::QuasarCert(q.clone()), QUASAR_CERT);
    let bytes = hex::decode(QUASAR_CERT).unwrap();
    // Root at 16 (80 B), bundle at 96 (64 B), leg list at 160 (3 × 8 B), legs at 184 (1 + 7),
    // 192 (1 + 6, padded to 200) and 200 (1 + 4).
    assert_eq!(bytes.len(), 205);
    assert_eq!(&bytes[96..160], q.bundle.as_flattened());
    assert_eq!(&bytes[184..192], b"\x01bls-agg");
    let r = QuasarCertRef::parse(&bytes).unwrap();
    assert_eq!(
        (r.chain_id(), r.epoch(), r.height(), r.view()),
        (7, 3, 41, 42)
    );
    assert_eq!(r.block(), &q.block);
    assert_eq!(r.bundle_len(), 2);
    assert_eq!(r.bundle().collect::<Vec<_>>(), [&q.bundle[0], &q.bundle[1]]);
    assert_eq!(
        r.bundle().next_back(),
        Some(&q.bundle[1]),
        "this block's μ is last"
    );
    assert_eq!(r.bundle_get(0), Some(&q.bundle[0]));
    assert_eq!(r.bundle_get(2), None);
    assert_eq!(r.bundle_bytes(), q.bundle.as_flattened());
    assert_eq!(r.leg_count(), 3);
    assert_eq!(r.legs().len(), 3);
    assert_eq!(
        r.legs().collect::<Vec<_>>(),
        [
            (LegKind::Bls, &b"bls-agg"[..]),
            (LegKind::Corona, b"corona"),
            (LegKind::Groth16, b"g16!"),
        ]
    );
    assert_eq!(r.to_owned(), q);
}

#[test]
fn lane_message_golden() {
    let m = common::lane_message();
    check_golden(Message::Lane(m.clone()), LANE_MESSAGE);
    let bytes = hex::decode(LANE_MESSAGE).unwrap();
    // Root at 16 (72 B): kind 4 at 44, leg 0 at 45, reserved zero at 46..48, session at 48..80,
    // payload pointer at 80 (rel 8, len 9); payload at 88..97.
    assert_eq!(bytes.len(), 97);
    assert_eq!(
        (bytes[44], bytes[45], &bytes[46..48]),
        (4, 0, &[0u8, 0][..])
    );
    assert_eq!(&bytes[48..80], &m.session);
    assert_eq!(&bytes[88..], b"corona-r1");
    let r = LaneMessageRef::parse(&bytes).unwrap();
    assert_eq!(
        (r.chain_id(), r.epoch(), r.height(), r.sender()),
        (7, 3, 41, 9)
    );
    assert_eq!(
        (r.kind(), r.leg(), r.leg_kind()),
        (LaneKind::CoronaRound1, 0, None)
    );
    assert_eq!(r.session(), &m.session);
    assert_eq!(r.payload(), b"corona-r1");
    assert_eq!(r.to_owned(), m);
}

#[test]
fn block_hash_golden() {
    let h = common::header();
    assert_eq!(
        hex::encode(h.hash()),
        "ef8a0a0de736299fd015891edd03aa55e4b5906a806ca99ba508fcae84b78239"
    );
    // Every field is hashed: changing any one changes the hash.
    let variants = [
        BlockHeader {
            chain_id: 8,
            ..h.clone()
        },
        BlockHeader {
            epoch: 4,
            ..h.clone()
        },
        BlockHeader {
            view: 43,
            ..h.clone()
        },
        BlockHeader {
            height: 42,
            ..h.clone()
        },
        BlockHeader {
            parent_view: 41,
            ..h.clone()
        },
        BlockHeader {
            parent: [0; 32],
            ..h.clone()
        },
        BlockHeader {
            proposer: 6,
            ..h.clone()
        },
        BlockHeader {
            timestamp_us: 1,
            ..h.clone()
        },
        BlockHeader {
            payload_root: [0; 32],
            ..h.clone()
        },
        BlockHeader {
            state_root: [0; 32],
            ..h.clone()
        },
    ];
    for v in variants {
        assert_ne!(v.hash(), h.hash(), "{v:?}");
    }
}

#[test]
fn vote_signing_message_golden() {
    let d = common::domain();
    let notarize = Vote {
        kind: VoteKind::Notarize,
        ..common::vote()
    };
    let msg = notarize.signing_message(&d);
    assert_eq!(msg.len(), VOTE_SIGNING_MESSAGE_LEN);
    assert_eq!(msg.len(), 79);
    assert_eq!(
        hex::encode(&msg),
        // "QUASAR-VOTE-v1" | kind 01 | chain_id 7 | epoch 3 | view 42 | height 41 | block 30..4f
        "5155415341522d564f54452d7631\
         01\
         0700000000000000\
         0300000000000000\
         2a00000000000000\
         2900000000000000\
         303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f"
    );
    // A finalize vote signs the round digest μ.
    let v = common::vote();
    assert_eq!(v.kind, VoteKind::Finalize);
    let mu = round_digest(v.chain_id, v.epoch, v.height, v.view, &v.block, &d);
    assert_eq!(v.signing_message(&d), mu.to_vec());
    assert_eq!(hex::encode(mu), ROUND_DIGEST_GOLDEN);
    let c = common::certificate();
    let as_vote = Vote {
        kind: VoteKind::Notarize,
        block: c.block,
        ..v
    };
    assert_eq!(c.signing_message(&d), as_vote.signing_message(&d));
    assert_eq!(
        CertificateKind::Finalization.vote_kind(),
        VoteKind::Finalize
    );
    assert_eq!(
        CertificateKind::Nullification.vote_kind(),
        VoteKind::Nullify
    );
}

/// μ of the sample finalize vote under the sample domain (TupleHash256, customization
/// `QUASAR-ROUND-DIGEST-v1`).
const ROUND_DIGEST_GOLDEN: &str =
    "b3afb24ee7c0b11817aeb7fcf665f4eb50e0287de54d437943449353040a26ae";

#[test]
fn round_digest_binds_every_field() {
    let d = common::domain();
    let mu = round_digest(1, 2, 3, 4, &[5; 32], &d);
    let other_root = EpochDomain {
        validator_set_root: [9; 32],
        ..d.clone()
    };
    let other_profile = EpochDomain {
        profile_id: "aurora".to_string(),
        ..d.clone()
    };
    for other in [
        round_digest(9, 2, 3, 4, &[5; 32], &d),
        round_digest(1, 9, 3, 4, &[5; 32], &d),
        round_digest(1, 2, 9, 4, &[5; 32], &d),
        round_digest(1, 2, 3, 9, &[5; 32], &d),
        round_digest(1, 2, 3, 4, &[9; 32], &d),
        round_digest(1, 2, 3, 4, &[5; 32], &other_root),
        round_digest(1, 2, 3, 4, &[5; 32], &other_profile),
    ] {
        assert_ne!(other, mu);
    }
    // A notarize or nullify message is never a finalize message (79 vs 32 bytes).
    for kind in [VoteKind::Notarize, VoteKind::Nullify] {
        assert_ne!(
            vote_signing_message(kind, 1, 2, 4, 3, &[5; 32], &d).len(),
            32
        );
    }
}

#[test]
fn payload_root_for_zero_to_three_txs() {
    let txs: Vec<Vec<u8>> = (0..3u8).map(|i| vec![i; usize::from(i) + 1]).collect();
    let root = |n: usize| payload_root(txs.iter().take(n).map(Vec::as_slice));
    let leaf = |i: usize| tx_hash(&txs[i]);
    let node = |l: Hash, r: Hash| tagged_hash("QUASAR-MERKLE-v1", &[&l, &r]);

    assert_eq!(root(0), tagged_hash("QUASAR-MERKLE-v1", &[]));
    assert_eq!(root(1), leaf(0));
    assert_eq!(root(2), node(leaf(0), leaf(1)));
    // Odd node promoted unchanged, not duplicated.
    assert_eq!(root(3), node(node(leaf(0), leaf(1)), leaf(2)));
    assert_eq!(leaf(0), tagged_hash("QUASAR-TX-v1", &[&[0]]));

    let pinned = [
        "cb5fae11ebcea5182e8f43a4c76fd534817dcbd16cb0dde27691b8c1d9c925dc",
        "756469107bbd105a0b3aeb8a0207b24630a7305dd362b20bbb8c333e1695d282",
        "89194cdd0e5ee5f5c797a6f7b12945aa4bd94dfb0d70c53a27114384f2791f04",
        "53c6f61e9951e3d79dc29cf0213d4f6bd8c7938150e2a9fd934c84efab7b8610",
    ];
    for (n, hex_root) in pinned.iter().enumerate() {
        assert_eq!(hex::encode(root(n)), *hex_root, "{n} txs");
    }
}
