//! Equivocation evidence in `SledStore`: round trips, replays overwrite, the log stays bounded,
//! corrupt records are typed errors (never panics), records survive a reopen.

mod common;
use common::reopen;
use proptest::prelude::*;
use quasar_storage::evidence::{
    evidence_key, kind, MAX_EVIDENCE_BYTES, MAX_EVIDENCE_MESSAGE_LEN, MAX_EVIDENCE_RECORDS,
    RECORD_VERSION,
};
use quasar_storage::{EvidenceError, EvidenceRecord, SledStore, Store, StoreError};

fn record(view: u64, signer: u32, kind: u8) -> EvidenceRecord {
    EvidenceRecord {
        kind,
        signer,
        view,
        first: format!("first {view}/{signer}/{kind}").into_bytes(),
        second: format!("second {view}/{signer}/{kind}").into_bytes(),
    }
}

#[test]
fn evidence_round_trips_in_view_order() {
    let store = SledStore::temporary().unwrap();
    assert_eq!(store.evidence_count().unwrap(), 0);
    assert!(store.evidence(100, 0).unwrap().is_empty());

    let records = [
        record(7, 2, kind::CONFLICTING_NOTARIZE),
        record(3, 9, kind::FINALIZE_AND_NULLIFY),
        record(7, 1, kind::CONFLICTING_FINALIZE),
        record(300, 0, kind::CONFLICTING_PROPOSAL),
    ];
    for r in &records {
        assert!(
            store.put_evidence(r).unwrap(),
            "a new record is newly stored"
        );
    }
    assert_eq!(store.evidence_count().unwrap(), 4);

    let all = store.evidence(100, 0).unwrap();
    // Ascending by view, then signer (big-endian keys; 300 sorts after 7, not before it).
    assert_eq!(
        all,
        vec![
            records[1].clone(),
            records[2].clone(),
            records[0].clone(),
            records[3].clone()
        ]
    );
    // `from_view` is inclusive and `limit` caps the answer.
    assert_eq!(
        store.evidence(100, 7).unwrap(),
        vec![records[2].clone(), records[0].clone(), records[3].clone()]
    );
    assert_eq!(store.evidence(1, 7).unwrap(), vec![records[2].clone()]);
    assert_eq!(store.evidence(0, 0).unwrap(), vec![]);
    assert!(store.evidence(100, 301).unwrap().is_empty());
}

#[test]
fn replayed_evidence_overwrites_instead_of_growing() {
    // After a restart the core forgets what it reported and reports the same offence again; the
    // key (view, signer, kind) makes that an overwrite.
    let store = SledStore::temporary().unwrap();
    let first = record(5, 1, kind::CONFLICTING_NOTARIZE);
    assert!(store.put_evidence(&first).unwrap());
    let mut replay = first.clone();
    replay.second = b"the same offence, seen through another message".to_vec();
    assert!(!store.put_evidence(&replay).unwrap(), "a replay is not new");
    assert!(!store.put_evidence(&replay).unwrap());
    assert_eq!(store.evidence_count().unwrap(), 1);
    assert_eq!(store.evidence(10, 0).unwrap(), vec![replay]);

    // Another kind, or another signer, in the same view is a separate record.
    assert!(store
        .put_evidence(&record(5, 1, kind::FINALIZE_AND_NULLIFY))
        .unwrap());
    assert!(store
        .put_evidence(&record(5, 2, kind::CONFLICTING_NOTARIZE))
        .unwrap());
    assert_eq!(store.evidence_count().unwrap(), 3);
}

#[test]
fn log_keeps_at_most_max_records_dropping_oldest_views() {
    let store = SledStore::temporary().unwrap();
    let extra = 5;
    for view in 0..MAX_EVIDENCE_RECORDS + extra {
        store
            .put_evidence(&record(view, 0, kind::CONFLICTING_NOTARIZE))
            .unwrap();
    }
    assert_eq!(store.evidence_count().unwrap(), MAX_EVIDENCE_RECORDS);
    let oldest = store.evidence(1, 0).unwrap();
    assert_eq!(oldest[0].view, extra, "views 0..extra were dropped");
    let newest = store
        .evidence(10, MAX_EVIDENCE_RECORDS + extra - 1)
        .unwrap();
    assert_eq!(newest.len(), 1, "the newest view is kept");

    // A record older than everything in a full log is dropped at once and not reported as new.
    assert!(!store
        .put_evidence(&record(0, 7, kind::CONFLICTING_FINALIZE))
        .unwrap());
    assert_eq!(store.evidence_count().unwrap(), MAX_EVIDENCE_RECORDS);
    assert_eq!(store.evidence(1, 0).unwrap()[0].view, extra);
}

#[test]
fn log_keeps_at_most_max_bytes() {
    // Conflicting proposals can carry two full blocks; the byte bound keeps a Byzantine leader
    // from filling the disk.
    let store = SledStore::temporary().unwrap();
    let big = |view: u64| EvidenceRecord {
        kind: kind::CONFLICTING_PROPOSAL,
        signer: 3,
        view,
        first: vec![1; 8 * 1024 * 1024],
        second: vec![2; 8 * 1024 * 1024],
    };
    // 16 MiB (and a few bytes) per big record: the fourth takes the log past 64 MiB, so the
    // small record of view 0 and then the big one of view 1 are dropped.
    store
        .put_evidence(&record(0, 0, kind::CONFLICTING_NOTARIZE))
        .unwrap();
    for view in 1..=4 {
        store.put_evidence(&big(view)).unwrap();
    }
    let kept = store.evidence(100, 0).unwrap();
    let bytes: u64 = kept
        .iter()
        .map(|r| (r.first.len() + r.second.len()) as u64)
        .sum();
    assert!(bytes <= MAX_EVIDENCE_BYTES, "{bytes} bytes kept");
    assert_eq!(kept.last().unwrap().view, 4, "the newest is kept");
    assert_eq!(kept[0].view, 2, "the oldest views went first");
    assert_eq!(store.evidence_count().unwrap(), kept.len() as u64);
}

#[test]
fn oversized_or_unknown_records_are_refused_and_nothing_is_written() {
    let store = SledStore::temporary().unwrap();
    let mut r = record(1, 1, kind::CONFLICTING_NOTARIZE);
    r.second = vec![0; MAX_EVIDENCE_MESSAGE_LEN + 1];
    assert!(matches!(
        store.put_evidence(&r),
        Err(StoreError::Evidence(EvidenceError::MessageTooLarge { .. }))
    ));
    let r = record(1, 1, 0);
    assert!(matches!(
        store.put_evidence(&r),
        Err(StoreError::Evidence(EvidenceError::UnknownKind {
            found: 0
        }))
    ));
    assert_eq!(store.evidence_count().unwrap(), 0);
    assert!(store.evidence(10, 0).unwrap().is_empty());
}

#[test]
fn evidence_of_views_past_retention_is_pruned() {
    let store = SledStore::temporary().unwrap();
    for view in [3, 7, 7, 12] {
        let signer = store.evidence_count().unwrap() as u32;
        store
            .put_evidence(&record(view, signer, kind::CONFLICTING_NOTARIZE))
            .unwrap();
    }
    assert_eq!(store.prune_evidence(8).unwrap(), 3);
    assert_eq!(store.prune_evidence(8).unwrap(), 0);
    assert_eq!(store.evidence_count().unwrap(), 1, "the tally follows");
    let left: Vec<u64> = store
        .evidence(10, 0)
        .unwrap()
        .iter()
        .map(|r| r.view)
        .collect();
    assert_eq!(left, vec![12]);
}

#[test]
fn evidence_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let a = record(4, 2, kind::CONFLICTING_FINALIZE);
    let b = record(9, 0, kind::CONFLICTING_PROPOSAL);
    {
        let store = reopen(dir.path());
        store.put_evidence(&a).unwrap();
        store.put_evidence(&b).unwrap();
        store.flush().unwrap();
    }
    let store = reopen(dir.path());
    assert_eq!(
        store.evidence_count().unwrap(),
        2,
        "the tally is rebuilt on open"
    );
    assert_eq!(store.evidence(10, 0).unwrap(), vec![a.clone(), b]);
    assert!(!store.put_evidence(&a).unwrap(), "still known after reopen");
}

#[test]
fn corrupt_stored_record_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let good = record(2, 1, kind::CONFLICTING_NOTARIZE);
    {
        let store = reopen(dir.path());
        store.put_evidence(&good).unwrap();
        store.flush().unwrap();
    }
    {
        // Corrupt it behind the store's back: a length prefix that points past the end.
        let db = common::retry_locked(|| sled::open(dir.path()));
        let tree = db.open_tree("evidence").unwrap();
        let mut value = good.encode().unwrap();
        value[14..18].copy_from_slice(&1_000u32.to_be_bytes());
        tree.insert(good.key(), value).unwrap();
        db.flush().unwrap();
    }
    let store = reopen(dir.path());
    assert!(matches!(
        store.evidence(10, 0),
        Err(StoreError::Evidence(EvidenceError::Truncated { .. }))
    ));
}

#[test]
fn decode_reports_each_malformation() {
    let good = record(2, 1, kind::CONFLICTING_NOTARIZE);
    let bytes = good.encode().unwrap();
    assert_eq!(bytes[0], RECORD_VERSION);
    assert_eq!(EvidenceRecord::decode(&bytes), Ok(good.clone()));

    assert!(matches!(
        EvidenceRecord::decode(&[]),
        Err(EvidenceError::Truncated { .. })
    ));
    let mut v = bytes.clone();
    v[0] = 9;
    assert_eq!(
        EvidenceRecord::decode(&v),
        Err(EvidenceError::UnknownVersion { found: 9 })
    );
    let mut v = bytes.clone();
    v[1] = 200;
    assert_eq!(
        EvidenceRecord::decode(&v),
        Err(EvidenceError::UnknownKind { found: 200 })
    );
    let mut v = bytes.clone();
    v[14..18].copy_from_slice(&u32::MAX.to_be_bytes());
    assert_eq!(
        EvidenceRecord::decode(&v),
        Err(EvidenceError::MessageTooLarge {
            len: u32::MAX as usize
        })
    );
    let mut v = bytes.clone();
    v.push(0);
    assert_eq!(
        EvidenceRecord::decode(&v),
        Err(EvidenceError::TrailingBytes { extra: 1 })
    );
    assert!(matches!(
        EvidenceRecord::decode(&bytes[..bytes.len() - 1]),
        Err(EvidenceError::Truncated { .. })
    ));
    assert_eq!(
        EvidenceRecord::decode_stored(&evidence_key(3, 1, kind::CONFLICTING_NOTARIZE), &bytes),
        Err(EvidenceError::KeyMismatch)
    );
}

proptest! {
    /// `decode` never panics, whatever the bytes.
    #[test]
    fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..128)) {
        let _ = EvidenceRecord::decode(&bytes);
    }

    /// Every valid record round trips through its encoding.
    #[test]
    fn encode_decode_round_trip(
        view in any::<u64>(),
        signer in any::<u32>(),
        code in 1u8..=4,
        first in proptest::collection::vec(any::<u8>(), 0..300),
        second in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        let r = EvidenceRecord { kind: code, signer, view, first, second };
        let bytes = r.encode().unwrap();
        prop_assert_eq!(EvidenceRecord::decode_stored(&r.key(), &bytes), Ok(r));
    }
}
