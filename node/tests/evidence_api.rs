//! Equivocation evidence from detection to `GET /evidence`: the record the runtime stores
//! ([`engine::evidence_record`]), the JSON the route answers ([`api::evidence_list`]), its query
//! ([`api::parse_evidence_query`]), and the property that makes it evidence at all: anyone can
//! decode both messages from the JSON and verify both signatures with the offender's public key.

use quasar_consensus::{
    Action, Core, CoreConfig, EpochSchedule, Evidence, EvidenceKind, Input, Tip,
};
use quasar_crypto::bls::{PublicKey, SecretKey, Signature};
use quasar_crypto::hash::Hash;
use quasar_lanes::ValidatorSet;
use quasar_node::api::{
    evidence_list, parse_evidence_query, EvidenceQuery, DEFAULT_EVIDENCE_LIMIT, MAX_EVIDENCE_LIMIT,
};
use quasar_node::engine::{self, evidence_record};
use quasar_node::signer::VoteSigner;
use quasar_storage::{SigningGuard, SledStore, Store};
use quasar_wire::{decode, EpochDomain, Message, MessageRef, Vote, VoteKind};
use serde_json::Value;
use std::sync::Arc;

const CHAIN: u64 = 9;
const GENESIS: Hash = [42; 32];

/// A vote signed directly with `sk` (no signing guard: this is the Byzantine signer).
fn signed_vote(sk: &SecretKey, signer: u32, kind: VoteKind, view: u64, block: Hash) -> Vote {
    let mut vote = Vote {
        kind,
        chain_id: CHAIN,
        epoch: 0,
        view,
        height: 1,
        block,
        signer,
        signature: [0; 96],
    };
    vote.signature = sk
        .sign(&vote.signing_message(&EpochDomain::default()))
        .to_bytes();
    vote
}

/// What an outside auditor does with one `GET /evidence` entry: decode both hex messages as ZAP
/// votes and verify each signature with the offender's public key. Returns the two votes' blocks.
fn audit(entry: &Value, pk: &PublicKey) -> (VoteKind, Hash, VoteKind, Hash) {
    let mut seen = Vec::new();
    for field in ["first", "second"] {
        let bytes = hex::decode(entry[field].as_str().unwrap()).unwrap();
        let MessageRef::Vote(v) = decode(&bytes).unwrap() else {
            panic!("{field} is not a vote");
        };
        assert_eq!(u64::from(v.signer()), entry["signer"].as_u64().unwrap());
        assert_eq!(v.view(), entry["view"].as_u64().unwrap());
        let sig = Signature::from_bytes(v.signature()).unwrap();
        pk.verify(&v.signing_message(&EpochDomain::default()), &sig)
            .unwrap_or_else(|e| panic!("{field} signature does not verify: {e}"));
        seen.push((v.kind(), *v.block()));
    }
    (seen[0].0, seen[0].1, seen[1].0, seen[1].1)
}

#[test]
fn conflicting_notarize_votes_are_stored_and_served_as_checkable_json() {
    let sk = SecretKey::from_seed(&[7; 32]);
    let first = signed_vote(&sk, 3, VoteKind::Notarize, 12, [1; 32]);
    let second = signed_vote(&sk, 3, VoteKind::Notarize, 12, [2; 32]);
    let evidence = Evidence {
        kind: EvidenceKind::ConflictingNotarize,
        signer: 3,
        view: 12,
        first: Message::Vote(first.clone()),
        second: Message::Vote(second.clone()),
    };

    let store = SledStore::temporary().unwrap();
    let record = evidence_record(&evidence).unwrap();
    assert_eq!(record.first, first.encode().unwrap(), "the whole message");
    assert!(store.put_evidence(&record).unwrap());

    let body = serde_json::to_value(evidence_list(
        &store.evidence(100, 0).unwrap(),
        store.evidence_count().unwrap(),
    ))
    .unwrap();
    assert_eq!(body["count"], 1);
    let entries = body["evidence"].as_array().unwrap();
    assert_eq!(entries.len(), 1);
    let entry = &entries[0];
    assert_eq!(entry["kind"], "conflicting_notarize");
    assert_eq!(entry["signer"], 3);
    assert_eq!(entry["view"], 12);
    assert_eq!(entry["first"], hex::encode(first.encode().unwrap()));
    assert_eq!(entry["second"], hex::encode(second.encode().unwrap()));

    let (k1, b1, k2, b2) = audit(entry, &sk.public_key());
    assert_eq!((k1, k2), (VoteKind::Notarize, VoteKind::Notarize));
    assert_ne!(b1, b2, "two different blocks in one view: the equivocation");

    // Another validator's key does not verify them: the evidence names its signer.
    let other = SecretKey::from_seed(&[8; 32]).public_key();
    let bytes = hex::decode(entry["first"].as_str().unwrap()).unwrap();
    let MessageRef::Vote(v) = decode(&bytes).unwrap() else {
        panic!("not a vote")
    };
    let sig = Signature::from_bytes(v.signature()).unwrap();
    assert!(other
        .verify(&v.signing_message(&EpochDomain::default()), &sig)
        .is_err());
}

#[test]
fn evidence_the_core_reports_goes_through_the_same_path() {
    // The core detects the equivocation; the engine's Action::Evidence arm (shared by the runtime
    // and the simulator) turns it into a record with `engine::evidence_record` and stores it.
    // Here: finalize and nullify in one view.
    let keys: Vec<SecretKey> = (0..4u8)
        .map(|i| SecretKey::from_seed(&[i + 1; 32]))
        .collect();
    let validators =
        Arc::new(ValidatorSet::equal_stake(keys.iter().map(SecretKey::public_key)).unwrap());
    let cfg = CoreConfig {
        chain_id: CHAIN,
        epoch: 0,
        schedule: EpochSchedule::SINGLE,
        genesis: GENESIS,
        me: Some(0),
        block_time_us: 1_000,
        view_timeout_us: 1_000_000,
        retry_us: 100_000,
        max_future_views: 100,
        max_clock_drift_us: 1_000_000,
    };
    let tip = Tip {
        height: 0,
        hash: GENESIS,
        view: 0,
        timestamp_us: 0,
    };
    let mut core = Core::new(cfg, validators, tip);
    core.start(0, 0);
    // Validator 2's guard would refuse the second vote, so two signers hold its key (twins).
    let twin = || {
        VoteSigner::new(
            SecretKey::from_seed(&[3; 32]),
            2,
            CHAIN,
            0,
            EpochDomain::default(),
            SigningGuard::in_memory(),
        )
    };
    let fin = twin()
        .sign_vote(VoteKind::Finalize, 1, 1, [5; 32])
        .unwrap()
        .0;
    let null = twin()
        .sign_vote(VoteKind::Nullify, 1, 0, [0; 32])
        .unwrap()
        .0;
    core.handle(1, Input::Vote(fin));
    let actions = core.handle(2, Input::Vote(null));
    let reported: Vec<&Evidence> = actions
        .iter()
        .filter_map(|a| match a {
            Action::Evidence(e) => Some(&**e),
            _ => None,
        })
        .collect();
    assert_eq!(reported.len(), 1);

    let store = SledStore::temporary().unwrap();
    let record = evidence_record(reported[0]).unwrap();
    assert!(store.put_evidence(&record).unwrap());
    // A restarted core reports the same offence again; the store overwrites it.
    assert!(!store.put_evidence(&record).unwrap());

    let body = serde_json::to_value(evidence_list(&store.evidence(10, 1).unwrap(), 1)).unwrap();
    let entry = &body["evidence"][0];
    assert_eq!(entry["kind"], "finalize_and_nullify");
    assert_eq!(entry["signer"], 2);
    assert_eq!(entry["view"], 1);
    let (k1, _, k2, _) = audit(entry, &keys[2].public_key());
    assert_eq!((k1, k2), (VoteKind::Finalize, VoteKind::Nullify));
}

#[test]
fn every_kind_has_its_own_code_and_name() {
    let kinds = [
        (EvidenceKind::ConflictingProposal, "conflicting_proposal"),
        (EvidenceKind::ConflictingNotarize, "conflicting_notarize"),
        (EvidenceKind::ConflictingFinalize, "conflicting_finalize"),
        (EvidenceKind::FinalizeAndNullify, "finalize_and_nullify"),
    ];
    let mut codes = Vec::new();
    for (kind, name) in kinds {
        let code = engine::evidence_kind_code(kind);
        assert_eq!(quasar_storage::evidence::kind::name(code), Some(name));
        codes.push(code);
    }
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes.len(), 4);
}

#[test]
fn empty_store_answers_an_empty_list() {
    let store = SledStore::temporary().unwrap();
    let body = serde_json::to_value(evidence_list(
        &store.evidence(100, 0).unwrap(),
        store.evidence_count().unwrap(),
    ))
    .unwrap();
    assert_eq!(body, serde_json::json!({ "count": 0, "evidence": [] }));
}

#[test]
fn query_defaults_caps_and_rejects() {
    let q = |s: &str| parse_evidence_query(Some(s));
    let defaults = EvidenceQuery {
        from_view: 0,
        limit: DEFAULT_EVIDENCE_LIMIT,
    };
    assert_eq!(parse_evidence_query(None), Ok(defaults));
    assert_eq!(q(""), Ok(defaults));
    assert_eq!(
        q("from_view=42&limit=7"),
        Ok(EvidenceQuery {
            from_view: 42,
            limit: 7
        })
    );
    assert_eq!(q("limit=1000000").unwrap().limit, MAX_EVIDENCE_LIMIT);
    assert_eq!(
        q(&format!("from_view={}", u64::MAX)).unwrap().from_view,
        u64::MAX
    );
    // Bad parameters are a 400 with a message, never a panic or a silent default.
    for bad in [
        "limit=-1",
        "limit=ten",
        "limit=",
        "limit",
        "from_view=18446744073709551616",
        "from_view=1&from_view=2",
        "from=3",
    ] {
        assert!(q(bad).is_err(), "{bad:?} should be rejected");
    }
}
