//! `SimStore`: the fault model the simulator relies on (durable operations survive a crash, a
//! torn crash keeps a prefix of the unflushed ones, failed writes write nothing, failed flushes
//! make nothing durable, a crash disarms faults).

use quasar_storage::{Crash, EvidenceRecord, FinalizedBlock, SimStore, Store, StoreError};

fn finalized(height: u64) -> FinalizedBlock {
    FinalizedBlock {
        height,
        hash: [height as u8; 32],
        block: vec![height as u8; 40],
        certificate: vec![0xce; 8],
        tx_hashes: vec![[0x70 + height as u8; 32]],
    }
}

fn tip(store: &SimStore) -> u64 {
    store.finalized_tip().unwrap().map_or(0, |(h, _)| h)
}

fn commit(store: &SimStore, heights: std::ops::RangeInclusive<u64>) {
    for h in heights {
        store.commit_finalized(&finalized(h)).unwrap();
    }
}

#[test]
fn flushed_operations_survive_and_unflushed_ones_are_lost() {
    let store = SimStore::new().unwrap();
    store.bind_genesis(&[9; 32]).unwrap();
    commit(&store, 1..=2);
    store.put_view_certificate(5, 1, b"cert").unwrap();
    store.flush().unwrap();
    commit(&store, 3..=4);
    store.put_block(1, &[0xbb; 32], b"pending").unwrap();
    assert_eq!(tip(&store), 4, "reads see unflushed writes");
    assert_eq!(store.unflushed(), 3);
    store.crash(Crash::LoseUnflushed).unwrap();
    assert_eq!(tip(&store), 2);
    assert_eq!(store.tx_height(&[0x72; 32]).unwrap(), Some(2));
    assert_eq!(store.tx_height(&[0x73; 32]).unwrap(), None);
    assert_eq!(store.block_by_hash(&[0xbb; 32]).unwrap(), None);
    assert_eq!(store.view_certificates().unwrap(), vec![b"cert".to_vec()]);
    assert_eq!(store.unflushed(), 0);
    // The genesis binding was flushed with the store's first use.
    assert!(matches!(
        store.bind_genesis(&[8; 32]),
        Err(StoreError::WrongGenesis { .. })
    ));
    // The chain goes on from the durable tip.
    commit(&store, 3..=3);
    assert_eq!(tip(&store), 3);
}

#[test]
fn a_torn_crash_keeps_a_prefix_of_the_unflushed_operations() {
    for keep in 0..=5 {
        let store = SimStore::new().unwrap();
        commit(&store, 1..=4);
        store.crash(Crash::Torn { keep }).unwrap();
        assert_eq!(tip(&store), keep.min(4) as u64, "keep {keep}");
        for h in 1..=4u64 {
            let present = store.block_by_height(h).unwrap().is_some();
            assert_eq!(present, h <= keep as u64, "keep {keep}, height {h}");
        }
    }
}

#[test]
fn a_failed_write_writes_nothing() {
    let store = SimStore::new().unwrap();
    commit(&store, 1..=1);
    store.fail_next_writes(2);
    assert!(matches!(
        store.commit_finalized(&finalized(2)),
        Err(StoreError::Backend(_))
    ));
    assert!(matches!(
        store.put_block(1, &[0xee; 32], b"x"),
        Err(StoreError::Backend(_))
    ));
    assert_eq!(tip(&store), 1);
    assert_eq!(store.block_by_hash(&[0xee; 32]).unwrap(), None);
    assert_eq!(store.unflushed(), 1);
    commit(&store, 2..=2);
    assert_eq!(tip(&store), 2, "only the armed number of writes fail");
}

#[test]
fn a_failed_flush_makes_nothing_durable() {
    let store = SimStore::new().unwrap();
    commit(&store, 1..=2);
    store.fail_next_flushes(1);
    assert!(matches!(store.flush(), Err(StoreError::Backend(_))));
    assert_eq!(store.unflushed(), 2, "still pending after the failed fsync");
    store.crash(Crash::LoseUnflushed).unwrap();
    assert_eq!(tip(&store), 0);
}

#[test]
fn a_crash_disarms_faults() {
    let store = SimStore::new().unwrap();
    store.fail_next_writes(5);
    store.fail_next_flushes(5);
    store.crash(Crash::LoseUnflushed).unwrap();
    commit(&store, 1..=1);
    store.flush().unwrap();
    store.crash(Crash::LoseUnflushed).unwrap();
    assert_eq!(tip(&store), 1);
}

#[test]
fn evidence_and_prunes_replay_in_order() {
    let store = SimStore::new().unwrap();
    let record = EvidenceRecord {
        kind: quasar_storage::evidence::kind::CONFLICTING_NOTARIZE,
        signer: 3,
        view: 7,
        first: vec![1; 10],
        second: vec![2; 10],
    };
    assert!(store.put_evidence(&record).unwrap());
    for view in 1..=4 {
        store.put_view_certificate(view, 0, &[view as u8]).unwrap();
    }
    store.prune_view_certificates(3).unwrap();
    store.flush().unwrap();
    store.put_view_certificate(9, 0, &[9]).unwrap();
    store.crash(Crash::Torn { keep: 0 }).unwrap();
    assert_eq!(store.evidence(10, 0).unwrap(), vec![record]);
    assert_eq!(store.view_certificates().unwrap(), vec![vec![3], vec![4]]);
}

#[test]
fn a_lying_flush_acknowledges_and_keeps_nothing() {
    let store = SimStore::new().unwrap();
    commit(&store, 1..=2);
    store.lie_on_next_flushes(1);
    store.flush().unwrap();
    assert_eq!(store.unflushed(), 2);
    store.crash(Crash::LoseUnflushed).unwrap();
    assert_eq!(tip(&store), 0);
}

#[test]
fn checkpoints_and_history_prunes_replay_after_a_crash() {
    let store = SimStore::new().unwrap();
    store.commit_checkpoint(&finalized(4)).unwrap();
    commit(&store, 5..=9);
    store.prune_history(9, 4, usize::MAX).unwrap();
    store.flush().unwrap();
    store.commit_checkpoint(&finalized(12)).unwrap();
    store.crash(Crash::LoseUnflushed).unwrap();
    assert_eq!(tip(&store), 9, "the unflushed checkpoint is lost");
    assert_eq!(store.history_floor().unwrap(), 9);
    let kept: Vec<u64> = (1..=9)
        .filter(|&h| store.block_by_height(h).unwrap().is_some())
        .collect();
    assert_eq!(kept, vec![4, 8, 9]);
}
