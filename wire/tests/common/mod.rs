//! Fixed sample values shared by the integration tests (golden bytes are pinned against them).
#![allow(dead_code)]

use quasar_wire::*;

/// `[start, start + 1, …]` of length `N` (wrapping).
pub fn seq<const N: usize>(start: u8) -> [u8; N] {
    std::array::from_fn(|i| start.wrapping_add(i as u8))
}

pub fn header() -> BlockHeader {
    BlockHeader {
        chain_id: 7,
        epoch: 3,
        view: 42,
        height: 41,
        parent_view: 40,
        parent: seq(0x10),
        proposer: 5,
        timestamp_us: 1_700_000_000_000_000,
        payload_root: payload_root([&b"tx-one"[..], b"tx-two!"]),
        state_root: seq(0x60),
    }
}

pub fn proposal() -> Proposal {
    Proposal {
        header: header(),
        txs: vec![b"tx-one".to_vec(), b"tx-two!".to_vec()],
        signature: seq(0xa0),
    }
}

/// The epoch domain the sample votes and certificates are signed under.
pub fn domain() -> EpochDomain {
    EpochDomain {
        validator_set_root: seq(0x70),
        profile_id: "quasar".to_string(),
    }
}

pub fn vote() -> Vote {
    Vote {
        kind: VoteKind::Finalize,
        chain_id: 7,
        epoch: 3,
        view: 42,
        height: 41,
        block: seq(0x30),
        signer: 9,
        signature: seq(0x60),
    }
}

pub fn certificate() -> Certificate {
    Certificate {
        kind: CertificateKind::Notarization,
        chain_id: 7,
        epoch: 3,
        view: 42,
        height: 41,
        block: seq(0x30),
        signers: vec![0b1011_0111, 0b0000_0001],
        signature: seq(0xc0),
    }
}

pub fn tx_batch() -> TxBatch {
    TxBatch {
        txs: vec![b"a".to_vec(), Vec::new(), b"set k v".to_vec()],
    }
}

pub fn relay_request() -> RelayRequest {
    RelayRequest {
        epoch: 3,
        from_view: 41,
        signer: 9,
    }
}

pub fn sync_request() -> SyncRequest {
    SyncRequest {
        from_height: 100,
        max_blocks: 16,
        block: [0; 32],
    }
}

pub fn sync_response() -> SyncResponse {
    let small_cert = Certificate {
        signers: vec![1],
        ..certificate()
    };
    let small_proposal = Proposal {
        txs: Vec::new(),
        ..proposal()
    };
    SyncResponse {
        items: vec![
            small_proposal.encode().unwrap(),
            small_cert.encode().unwrap(),
        ],
    }
}

pub fn quasar_cert() -> QuasarCert {
    QuasarCert {
        chain_id: 7,
        epoch: 3,
        height: 41,
        view: 42,
        block: seq(0x30),
        bundle: vec![seq(0x50), seq(0x70)],
        legs: vec![
            (LegKind::Bls, b"bls-agg".to_vec()),
            (LegKind::Corona, b"corona".to_vec()),
            (LegKind::Groth16, b"g16!".to_vec()),
        ],
    }
}

/// A Corona round-1 contribution of validator 9 to the bundle closing at height 41.
pub fn lane_message() -> LaneMessage {
    LaneMessage {
        chain_id: 7,
        epoch: 3,
        height: 41,
        sender: 9,
        kind: LaneKind::CoronaRound1,
        leg: 0,
        session: seq(0x90),
        payload: b"corona-r1".to_vec(),
    }
}

/// A finished Magnetar leg body from validator 9 for the same bundle (no session).
pub fn lane_leg() -> LaneMessage {
    LaneMessage {
        kind: LaneKind::Leg,
        leg: LegKind::Magnetar as u8,
        session: [0; 32],
        payload: b"magnetar-leg-body".to_vec(),
        ..lane_message()
    }
}

/// One sample of every schema, in type order.
pub fn all() -> Vec<Message> {
    vec![
        Message::Proposal(proposal()),
        Message::Vote(vote()),
        Message::Certificate(certificate()),
        Message::TxBatch(tx_batch()),
        Message::SyncRequest(sync_request()),
        Message::SyncResponse(sync_response()),
        Message::QuasarCert(quasar_cert()),
        Message::Lane(lane_message()),
        Message::RelayRequest(relay_request()),
    ]
}

/// `typed`, a schema parser's error for `bytes`, after checking that the generic [`decode`]
/// gives the same error.
pub fn agreed_error(typed: WireError, bytes: &[u8]) -> WireError {
    assert_eq!(
        decode(bytes).unwrap_err(),
        typed,
        "decode and parse disagree"
    );
    typed
}
