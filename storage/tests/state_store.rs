//! The state tree's byte store: versions in order, values as of a version, one atomic batch.

use quasar_storage::{SledStore, StateBatch, Store, StoreError};

fn batch(nodes: &[(&[u8], &[u8])], values: &[([u8; 32], Option<&[u8]>)]) -> StateBatch {
    StateBatch {
        stale: Vec::new(),
        nodes: nodes
            .iter()
            .map(|(k, v)| (k.to_vec(), v.to_vec()))
            .collect(),
        values: values
            .iter()
            .map(|(k, v)| (*k, v.map(<[u8]>::to_vec)))
            .collect(),
    }
}

#[test]
fn versions_commit_in_order_and_values_read_as_of_a_version() {
    let store = SledStore::temporary().unwrap();
    let state = store.state().unwrap();
    assert_eq!(state.latest().unwrap(), None);
    let (a, b) = ([1u8; 32], [2u8; 32]);
    // Version 1 before version 0 is refused, and writes nothing.
    assert!(matches!(
        state.commit(1, &[9; 32], &batch(&[], &[])),
        Err(StoreError::OutOfOrder {
            expected: 0,
            got: 1
        })
    ));
    assert_eq!(state.latest().unwrap(), None);
    state
        .commit(
            0,
            &[10; 32],
            &batch(&[(b"n0", b"node 0")], &[(a, Some(b"a0"))]),
        )
        .unwrap();
    state
        .commit(1, &[11; 32], &batch(&[], &[(b, Some(b"b1"))]))
        .unwrap();
    state
        .commit(2, &[12; 32], &batch(&[], &[(a, Some(b"a2")), (b, None)]))
        .unwrap();
    assert_eq!(state.latest().unwrap(), Some((2, [12; 32])));
    assert_eq!(state.root(1).unwrap(), Some([11; 32]));
    assert_eq!(state.root(3).unwrap(), None);
    assert_eq!(state.node(b"n0").unwrap().as_deref(), Some(&b"node 0"[..]));
    assert_eq!(state.node(b"n1").unwrap(), None);
    // Each value as of each version; a deletion hides the older value.
    let read = |key, version| state.value(&key, version).unwrap();
    assert_eq!(read(a, 0).as_deref(), Some(&b"a0"[..]));
    assert_eq!(read(a, 1).as_deref(), Some(&b"a0"[..]));
    assert_eq!(read(a, 2).as_deref(), Some(&b"a2"[..]));
    assert_eq!(read(b, 0), None);
    assert_eq!(read(b, 1).as_deref(), Some(&b"b1"[..]));
    assert_eq!(read(b, 2), None);
    assert_eq!(read([3; 32], 2), None);
    // A committed version is not written again, and a gap is refused.
    for version in [2, 4] {
        assert!(matches!(
            state.commit(version, &[0; 32], &batch(&[], &[])),
            Err(StoreError::OutOfOrder { expected: 3, .. })
        ));
    }
    // An empty value would read as a deletion: refused, nothing written.
    assert!(matches!(
        state.commit(3, &[13; 32], &batch(&[], &[(a, Some(b""))])),
        Err(StoreError::Corrupt(_))
    ));
    assert_eq!(state.latest().unwrap(), Some((2, [12; 32])));
}

#[test]
fn the_state_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = SledStore::open(dir.path()).unwrap();
        let state = store.state().unwrap();
        state
            .commit(
                0,
                &[7; 32],
                &batch(&[(b"k", b"v")], &[([5; 32], Some(b"x"))]),
            )
            .unwrap();
        store.flush().unwrap();
    }
    let store = SledStore::open(dir.path()).unwrap();
    let state = store.state().unwrap();
    assert_eq!(state.latest().unwrap(), Some((0, [7; 32])));
    assert_eq!(
        state.value(&[5; 32], 0).unwrap().as_deref(),
        Some(&b"x"[..])
    );
}

#[test]
fn pruning_removes_nodes_stale_at_or_before_the_kept_version_and_older_roots() {
    let store = SledStore::temporary().unwrap();
    let state = store.state().unwrap();
    state
        .commit(0, &[10; 32], &batch(&[(b"n0", b"root 0")], &[]))
        .unwrap();
    // Version 1 replaces n0 (no version from 1 on uses it), version 2 replaces n1.
    let mut one = batch(&[(b"n1", b"root 1")], &[]);
    one.stale.push((1, b"n0".to_vec()));
    state.commit(1, &[11; 32], &one).unwrap();
    let mut two = batch(&[(b"n2", b"root 2")], &[]);
    two.stale.push((2, b"n1".to_vec()));
    state.commit(2, &[12; 32], &two).unwrap();
    let (entries, _) = state.size().unwrap();
    // Keeping version 0 removes nothing.
    assert_eq!(state.prune(0, 100).unwrap(), 0);
    // Keeping version 1: n0 goes, with its mark and root 0; n1 is still version 1's.
    assert_eq!(state.prune(1, 100).unwrap(), 1);
    assert_eq!(state.node(b"n0").unwrap(), None);
    assert!(state.node(b"n1").unwrap().is_some());
    assert_eq!(state.root(0).unwrap(), None);
    assert_eq!(state.root(1).unwrap(), Some([11; 32]));
    assert_eq!(state.size().unwrap().0, entries - 3, "node, mark and root");
    // A limit of one per call; keeping version 2 takes n1.
    assert_eq!(state.prune(2, 1).unwrap(), 1);
    assert_eq!(state.prune(2, 1).unwrap(), 0);
    assert_eq!(state.node(b"n1").unwrap(), None);
    assert_eq!(state.latest().unwrap(), Some((2, [12; 32])));
}
