//! The state tree's byte store: versions in order, values as of a version, one atomic batch.

use quasar_storage::{SledStore, StateBatch, Store, StoreError};

fn batch(nodes: &[(&[u8], &[u8])], values: &[([u8; 32], Option<&[u8]>)]) -> StateBatch {
    StateBatch {
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
