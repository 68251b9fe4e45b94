//! `SledStore` behaviour: round trips, persistence across reopen, ordering, corruption reports.

mod common;
use common::reopen;
use quasar_storage::{FinalizedBlock, SledStore, Store, StoreError, StoredBlock};

fn h(byte: u8) -> [u8; 32] {
    [byte; 32]
}

fn finalized(height: u64) -> FinalizedBlock {
    let b = height as u8;
    FinalizedBlock {
        height,
        hash: h(b),
        block: format!("block {height}").into_bytes(),
        certificate: format!("cert {height}").into_bytes(),
        tx_hashes: vec![h(100 + b), h(200 + b)],
    }
}

#[test]
fn empty_store_has_nothing() {
    let store = SledStore::temporary().unwrap();
    assert_eq!(store.finalized_tip().unwrap(), None);
    assert_eq!(store.block_by_height(1).unwrap(), None);
    assert_eq!(store.block_by_hash(&h(1)).unwrap(), None);
    assert_eq!(store.tx_height(&h(1)).unwrap(), None);
}

#[test]
fn commit_finalized_round_trips_every_index() {
    let store = SledStore::temporary().unwrap();
    for height in 1..=3 {
        store.commit_finalized(&finalized(height)).unwrap();
    }
    assert_eq!(store.finalized_tip().unwrap(), Some((3, h(3))));
    let b2 = finalized(2);
    assert_eq!(
        store.block_by_height(2).unwrap(),
        Some(StoredBlock {
            height: 2,
            hash: b2.hash,
            block: b2.block.clone(),
            certificate: b2.certificate.clone(),
        })
    );
    assert_eq!(store.block_by_hash(&h(2)).unwrap(), Some(b2.block));
    assert_eq!(store.tx_height(&h(102)).unwrap(), Some(2));
    assert_eq!(store.tx_height(&h(203)).unwrap(), Some(3));
    // The block's transaction hashes come back in block order, without hashing anything.
    assert_eq!(store.block_tx_hashes(2).unwrap(), vec![h(102), h(202)]);
    assert_eq!(store.block_tx_hashes(9).unwrap(), Vec::<[u8; 32]>::new());
    assert_eq!(store.block_by_height(4).unwrap(), None);
}

#[test]
fn put_block_keeps_unfinalized_blocks() {
    let store = SledStore::temporary().unwrap();
    store.put_block(9, &h(9), b"notarized").unwrap();
    assert_eq!(
        store.block_by_hash(&h(9)).unwrap(),
        Some(b"notarized".to_vec())
    );
    // Not finalized: no tip, no height index.
    assert_eq!(store.finalized_tip().unwrap(), None);
}

#[test]
fn out_of_order_commit_is_rejected_and_writes_nothing() {
    let store = SledStore::temporary().unwrap();
    // First height must be 1.
    for bad in [0, 2] {
        match store.commit_finalized(&finalized(bad)) {
            Err(StoreError::OutOfOrder { expected: 1, got }) => assert_eq!(got, bad),
            other => panic!("expected OutOfOrder, got {other:?}"),
        }
    }
    store.commit_finalized(&finalized(1)).unwrap();
    // Gap, and re-commit of the tip.
    for bad in [3, 1] {
        match store.commit_finalized(&finalized(bad)) {
            Err(StoreError::OutOfOrder { expected: 2, got }) => assert_eq!(got, bad),
            other => panic!("expected OutOfOrder, got {other:?}"),
        }
    }
    assert_eq!(store.finalized_tip().unwrap(), Some((1, h(1))));
    // The rejected height-3 block left no trace in any index.
    assert_eq!(store.block_by_hash(&h(3)).unwrap(), None);
    assert_eq!(store.tx_height(&h(103)).unwrap(), None);
    assert_eq!(store.block_by_height(3).unwrap(), None);
}

#[test]
fn reopen_after_drop_keeps_data() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = reopen(dir.path());
        store.commit_finalized(&finalized(1)).unwrap();
        store.commit_finalized(&finalized(2)).unwrap();
        store.put_block(50, &h(50), b"pending").unwrap();
        store.flush().unwrap();
    }
    let store = reopen(dir.path());
    assert_eq!(store.finalized_tip().unwrap(), Some((2, h(2))));
    assert_eq!(
        store.block_by_height(1).unwrap().unwrap().certificate,
        b"cert 1"
    );
    assert_eq!(
        store.block_by_hash(&h(50)).unwrap(),
        Some(b"pending".to_vec())
    );
    assert_eq!(store.tx_height(&h(201)).unwrap(), Some(1));
    // And the order check continues from the persisted tip.
    store.commit_finalized(&finalized(3)).unwrap();
}

/// Writes raw bytes into a tree behind the store's back (simulating disk corruption / a bug).
fn corrupt(dir: &std::path::Path, tree: &str, key: &[u8], value: &[u8]) {
    let db = common::retry_locked(|| sled::open(dir));
    db.open_tree(tree).unwrap().insert(key, value).unwrap();
    db.flush().unwrap();
}

fn assert_corrupt<T: std::fmt::Debug>(result: Result<T, StoreError>) {
    match result {
        Err(StoreError::Corrupt(_)) => {}
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[test]
fn corrupt_values_are_reported_not_panicked_on() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = reopen(dir.path());
        store.commit_finalized(&finalized(1)).unwrap();
        store.commit_finalized(&finalized(2)).unwrap();
        store.flush().unwrap();
    }
    corrupt(dir.path(), "meta", b"finalized", &[1, 2, 3]);
    corrupt(dir.path(), "heights", &1u64.to_be_bytes(), &[7; 31]);
    corrupt(dir.path(), "txs", &h(102), &[0; 9]);
    corrupt(dir.path(), "certs", &2u64.to_be_bytes(), b"still fine");
    {
        let db = common::retry_locked(|| sled::open(dir.path()));
        // Height 2's certificate disappears: the index now points at nothing.
        db.open_tree("certs")
            .unwrap()
            .remove(2u64.to_be_bytes())
            .unwrap();
        db.flush().unwrap();
    }
    let store = reopen(dir.path());
    assert_corrupt(store.finalized_tip());
    assert_corrupt(store.commit_finalized(&finalized(3)));
    assert_corrupt(store.block_by_height(1));
    assert_corrupt(store.block_by_height(2));
    assert_corrupt(store.tx_height(&h(102)));
    // An intact entry is checked against the finalized tip, which is corrupt: reported too.
    assert_corrupt(store.tx_height(&h(101)));
    // Untouched entries still read fine.
    assert_eq!(
        store.block_by_hash(&h(2)).unwrap(),
        Some(b"block 2".to_vec())
    );
}

// A block's `txs` entries are written just before its commit's transaction: a crash between
// leaves entries that name a height not finalized, and they must read as absent.
#[test]
fn a_tx_entry_ahead_of_the_finalized_tip_reads_as_absent() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = SledStore::open(dir.path()).unwrap();
        store.commit_finalized(&finalized(1)).unwrap();
        store.flush().unwrap();
    }
    {
        let db = common::retry_locked(|| sled::open(dir.path()));
        let txs = db.open_tree("txs").unwrap();
        for tx in finalized(2).tx_hashes {
            txs.insert(tx, &2u64.to_be_bytes()).unwrap();
        }
        db.flush().unwrap();
    }
    let store = reopen(dir.path());
    assert_eq!(store.tx_height(&h(101)).unwrap(), Some(1));
    assert_eq!(store.tx_height(&h(102)).unwrap(), None);
    store.commit_finalized(&finalized(2)).unwrap();
    assert_eq!(store.tx_height(&h(102)).unwrap(), Some(2));
    assert_eq!(store.tx_height(&h(202)).unwrap(), Some(2));
}

// Regression: a node restarted on a data directory with a different genesis.json followed the
// other chain with its old blocks. A store is now bound to one genesis hash.
#[test]
fn a_store_is_bound_to_its_first_genesis() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = reopen(dir.path());
        assert!(store.is_empty().unwrap());
        store.bind_genesis(&[1; 32]).unwrap();
        store.bind_genesis(&[1; 32]).unwrap();
        assert!(!store.is_empty().unwrap());
    }
    let store = reopen(dir.path());
    store.bind_genesis(&[1; 32]).unwrap();
    assert!(matches!(
        store.bind_genesis(&[2; 32]),
        Err(StoreError::WrongGenesis { .. })
    ));
}

#[test]
fn view_certificates_are_kept_in_view_order_and_pruned() {
    let store = SledStore::temporary().unwrap();
    store
        .put_view_certificate(7, 3, b"nullification-7")
        .unwrap();
    store.put_view_certificate(5, 1, b"notarization-5").unwrap();
    store.put_view_certificate(7, 1, b"notarization-7").unwrap();
    store
        .put_view_certificate(9, 3, b"nullification-9")
        .unwrap();
    assert_eq!(
        store.view_certificates().unwrap(),
        vec![
            b"notarization-5".to_vec(),
            b"notarization-7".to_vec(),
            b"nullification-7".to_vec(),
            b"nullification-9".to_vec()
        ]
    );
    store.prune_view_certificates(7).unwrap();
    assert_eq!(store.view_certificates().unwrap().len(), 3);
    store.prune_view_certificates(10).unwrap();
    assert!(store.view_certificates().unwrap().is_empty());
}

#[test]
fn quasar_certificates_keep_the_first_and_are_found_by_covering_height() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = reopen(dir.path());
        assert_eq!(store.quasar_tip().unwrap(), None);
        assert_eq!(store.quasar_cert_from(1).unwrap(), None);
        assert!(store.put_quasar_cert(4, b"cert 4").unwrap());
        assert!(store.put_quasar_cert(8, b"cert 8").unwrap());
        // A second certificate for a height does not replace the first.
        assert!(!store.put_quasar_cert(4, b"another").unwrap());
        assert_eq!(
            store.quasar_cert_from(1).unwrap(),
            Some((4, b"cert 4".to_vec()))
        );
        assert_eq!(
            store.quasar_cert_from(4).unwrap(),
            Some((4, b"cert 4".to_vec()))
        );
        assert_eq!(
            store.quasar_cert_from(5).unwrap(),
            Some((8, b"cert 8".to_vec()))
        );
        assert_eq!(store.quasar_cert_from(9).unwrap(), None);
        assert_eq!(store.quasar_tip().unwrap(), Some(8));
        store.flush().unwrap();
    }
    let store = reopen(dir.path());
    assert_eq!(store.quasar_tip().unwrap(), Some(8));
    assert_eq!(
        store.quasar_cert_from(2).unwrap(),
        Some((4, b"cert 4".to_vec()))
    );
}

#[test]
fn a_session_is_claimed_once_even_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = reopen(dir.path());
        assert!(store.claim_session(4, &[1; 32]).unwrap());
        assert!(!store.claim_session(4, &[1; 32]).unwrap());
        // The same id under another bundle, and another id, are separate claims.
        assert!(store.claim_session(8, &[1; 32]).unwrap());
        assert!(store.claim_session(4, &[2; 32]).unwrap());
        store.flush().unwrap();
    }
    let store = reopen(dir.path());
    assert!(!store.claim_session(4, &[1; 32]).unwrap());
    assert!(!store.claim_session(8, &[1; 32]).unwrap());
    assert!(store.claim_session(8, &[2; 32]).unwrap());
}

#[test]
fn pruned_sessions_are_forgotten_and_never_claimed_again() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = reopen(dir.path());
        for height in [4, 8, 12] {
            assert!(store.claim_session(height, &[1; 32]).unwrap());
        }
        assert_eq!(store.prune_sessions(9).unwrap(), 2);
        assert_eq!(
            store.prune_sessions(5).unwrap(),
            0,
            "a lower line changes nothing"
        );
        store.flush().unwrap();
    }
    let store = reopen(dir.path());
    // Below the line every claim is refused, new ids included; above it claims stand.
    assert!(!store.claim_session(4, &[1; 32]).unwrap());
    assert!(!store.claim_session(8, &[9; 32]).unwrap());
    assert!(!store.claim_session(12, &[1; 32]).unwrap());
    assert!(store.claim_session(12, &[2; 32]).unwrap());
}

#[test]
fn pruned_history_keeps_the_boundaries_and_the_tip() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = reopen(dir.path());
        for height in 1..=20 {
            // Every block arrived as a proposal before it was finalized.
            store
                .put_block(height, &h(height as u8), b"proposal")
                .unwrap();
            store.commit_finalized(&finalized(height)).unwrap();
            store.put_quasar_cert(height, b"quasar").unwrap();
        }
        // Never finalized: a failed view's proposal below the line and one above it, and a
        // seal above boundary 8 (received as a proposal first).
        store.put_block(5, &h(77), b"orphan").unwrap();
        store.put_block(15, &h(78), b"orphan").unwrap();
        store.put_block(9, &h(79), b"seal").unwrap();
        store.put_seal(&h(79), b"seal").unwrap();
        assert_eq!(store.history_floor().unwrap(), 1);
        // Below 13, every height but the boundaries 4, 8, 12 goes: nine blocks.
        // Below 13: the nine heights but the boundaries 4, 8, 12, the proposals of heights
        // 1..=12 and the orphan and seal entries (14), and twelve QuasarCerts, two of each kind
        // per call.
        let mut calls = 0;
        let mut removed = 0;
        loop {
            let n = store.prune_history(13, 4, 2).unwrap();
            assert!(n <= 3 * 2);
            if n == 0 {
                break;
            }
            removed += n;
            calls += 1;
        }
        assert_eq!(removed, 9 + 14 + 12);
        assert_eq!(
            calls, 7,
            "the twelve QuasarCerts and the fourteen pending entries take 7"
        );
        assert_eq!(
            store.prune_history(13, 4, usize::MAX).unwrap(),
            0,
            "pruning twice removes nothing more"
        );
        store.flush().unwrap();
    }
    let store = reopen(dir.path());
    assert_eq!(store.history_floor().unwrap(), 13);
    for height in 1..=20 {
        let kept = height >= 13 || height % 4 == 0;
        assert_eq!(
            store.block_by_height(height).unwrap().is_some(),
            kept,
            "height {height}"
        );
        assert_eq!(
            store.block_by_hash(&h(height as u8)).unwrap().is_some(),
            kept
        );
        assert_eq!(
            store.tx_height(&h(100 + height as u8)).unwrap().is_some(),
            kept,
            "tx of height {height}"
        );
    }
    assert_eq!(
        store.block_by_hash(&h(77)).unwrap(),
        None,
        "orphan below the line"
    );
    assert!(
        store.block_by_hash(&h(78)).unwrap().is_some(),
        "above the line"
    );
    assert!(store.block_by_hash(&h(79)).unwrap().is_some(), "seals stay");
    assert_eq!(
        store.quasar_cert_from(1).unwrap().map(|(h, _)| h),
        Some(13),
        "QuasarCerts below the line are gone, boundaries' too"
    );
    // The tip always stays, whatever line is asked for.
    // Heights 4, 8, 12 and 13..=19, the pending entries of 13..=19 and of the orphan at 15,
    // QuasarCerts 13..=19.
    assert_eq!(
        store.prune_history(u64::MAX, 0, usize::MAX).unwrap(),
        (3 + 7) + 8 + 7
    );
    assert_eq!(store.history_floor().unwrap(), 20);
    assert!(store.block_by_height(20).unwrap().is_some());
    assert!(
        store.block_by_height(8).unwrap().is_none(),
        "keep_every 0 keeps none"
    );
    store.commit_finalized(&finalized(21)).unwrap();
}

#[test]
fn blocks_are_files_written_once_and_deleted_by_the_flush_after_their_prune() {
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("block-files");
    let name = |byte: u8| hex::encode(h(byte));
    {
        let store = reopen(dir.path());
        // Height 3 arrived as a proposal first: finalizing it writes no second file.
        store.put_block(3, &h(3), b"block 3").unwrap();
        for height in 1..=8 {
            store.commit_finalized(&finalized(height)).unwrap();
        }
        store.put_block(9, &h(90), b"pending").unwrap();
        assert_eq!(store.block_file_count().unwrap(), 9);
        assert_eq!(std::fs::read(files.join(name(5))).unwrap(), b"block 5");
        // Below 5, with a boundary every 4 blocks, heights 1, 2 and 3 go.
        store.prune_history(5, 4, usize::MAX).unwrap();
        assert_eq!(store.block_by_height(2).unwrap(), None);
        assert_eq!(
            store.block_file_count().unwrap(),
            9,
            "a file is deleted only once its index entry's removal is durable"
        );
        store.flush().unwrap();
        assert_eq!(store.block_file_count().unwrap(), 6);
        assert!(!files.join(name(2)).exists() && files.join(name(4)).exists());
        // A pruned block stored again before the flush stays.
        store.prune_history(6, 4, usize::MAX).unwrap();
        store.put_seal(&h(5), b"block 5").unwrap();
        store.flush().unwrap();
        assert_eq!(
            store.block_by_hash(&h(5)).unwrap(),
            Some(b"block 5".to_vec())
        );
    }
    // A file cut short, grown, gone, or replaced by another block's of the same length is
    // corruption the store names; the others read.
    std::fs::write(files.join(name(6)), b"blo").unwrap();
    std::fs::write(files.join(name(7)), b"block 7 and more").unwrap();
    std::fs::remove_file(files.join(name(8))).unwrap();
    std::fs::copy(files.join(name(4)), files.join(name(5))).unwrap();
    let store = reopen(dir.path());
    assert_corrupt(store.block_by_height(6));
    assert_corrupt(store.block_by_height(7));
    assert_corrupt(store.block_by_hash(&h(8)));
    match store.block_by_hash(&h(5)) {
        Err(StoreError::Corrupt(why)) => assert!(why.contains("another block's"), "{why}"),
        other => panic!("a swapped file was served: {other:?}"),
    }
    assert_eq!(store.block_by_height(4).unwrap().unwrap().block, b"block 4");
    drop(store);
    // A block held inline in the index (a store from before block files) is refused, by name.
    corrupt(dir.path(), "blocks", &h(4), b"an inline block");
    let store = reopen(dir.path());
    match store.block_by_height(4) {
        Err(StoreError::Corrupt(why)) => assert!(why.contains("empty data directory"), "{why}"),
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[test]
fn a_checkpoint_commits_above_a_gap_and_moves_the_floor() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = reopen(dir.path());
        store.commit_checkpoint(&finalized(8)).unwrap();
        assert_eq!(store.finalized_tip().unwrap(), Some((8, h(8))));
        assert_eq!(store.history_floor().unwrap(), 8);
        assert_eq!(store.block_by_height(7).unwrap(), None);
        assert_eq!(store.tx_height(&h(108)).unwrap(), Some(8));
        // At or below the tip is out of order, checkpoint or not; nothing is written.
        for height in [5, 8] {
            assert!(matches!(
                store.commit_checkpoint(&finalized(height)),
                Err(StoreError::OutOfOrder { expected: 9, got }) if got == height
            ));
        }
        // Dense commits go on from the checkpoint; a checkpoint right above the tip is one.
        store.commit_finalized(&finalized(9)).unwrap();
        store.commit_checkpoint(&finalized(10)).unwrap();
        assert_eq!(store.history_floor().unwrap(), 8);
        store.commit_checkpoint(&finalized(16)).unwrap();
        store.flush().unwrap();
    }
    let store = reopen(dir.path());
    assert_eq!(store.finalized_tip().unwrap(), Some((16, h(16))));
    assert_eq!(store.history_floor().unwrap(), 16);
    assert!(store.block_by_height(8).unwrap().is_some());
    assert!(store.block_by_height(12).unwrap().is_none());
}

/// A second open of a database that is open already (another node on the same data directory)
/// fails, and [`StoreError::is_locked`] says why, so the node can name the directory instead of
/// passing sled's raw message on.
#[test]
fn a_second_open_of_one_database_is_reported_as_locked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let first = SledStore::open(&path).unwrap();
    let Err(err) = SledStore::open(&path) else {
        panic!("a database already open was opened again");
    };
    assert!(err.is_locked(), "{err}");
    drop(first);
    assert!(!StoreError::Corrupt("x".into()).is_locked());
}

/// A database file damaged on disk (cut short, zeroed or overwritten in the middle) is refused
/// with an error when the store opens, or opens as the prefix sled recovers; it never stops the
/// process with a panic (sled panics on some such files while it recovers its log: the store
/// catches that and reports the database as damaged).
#[test]
fn a_damaged_database_file_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().expect("dir");
    let source = dir.path().join("source");
    {
        let store = SledStore::open(&source).expect("open");
        let state = store.state().expect("state");
        for version in 0..64u64 {
            let batch = quasar_storage::StateBatch {
                nodes: (0..32u8)
                    .map(|i| (vec![i, version as u8], vec![i ^ 0x5a; 1024]))
                    .collect(),
                ..Default::default()
            };
            state
                .commit(version, &h(version as u8), &batch)
                .expect("commit");
        }
        store.flush().expect("flush");
    }
    let file = source.join("db");
    let len = std::fs::metadata(&file).expect("db file").len();
    assert!(len > 1_000_000, "a database of some size: {len} bytes");
    // Each damage at ten places through the file: cut there, 200 KiB zeroed from there, 64 KiB
    // of other bytes from there, one byte changed there.
    type Damage = Box<dyn Fn(&mut Vec<u8>)>;
    let mut damages: Vec<(String, Damage)> = Vec::new();
    for tenth in 1..10usize {
        let at = len as usize * tenth / 10;
        damages.push((format!("cut at {at}"), Box::new(move |b| b.truncate(at))));
        damages.push((
            format!("zeroed from {at}"),
            Box::new(move |b| {
                let end = (at + 200 * 1024).min(b.len());
                b[at..end].iter_mut().for_each(|x| *x = 0)
            }),
        ));
        damages.push((
            format!("scribbled from {at}"),
            Box::new(move |b| {
                let end = (at + 64 * 1024).min(b.len());
                b[at..end]
                    .iter_mut()
                    .enumerate()
                    .for_each(|(i, x)| *x = (i * 131 + 7) as u8)
            }),
        ));
        damages.push((
            format!("byte {at} changed"),
            Box::new(move |b| b[at] ^= 0x5a),
        ));
    }
    for (what, damage) in damages {
        let copy = dir.path().join(what.replace(' ', "-"));
        std::fs::create_dir_all(&copy).expect("copy dir");
        for entry in std::fs::read_dir(&source).expect("source") {
            let entry = entry.expect("entry");
            if entry.file_type().expect("type").is_file() {
                std::fs::copy(entry.path(), copy.join(entry.file_name())).expect("copy");
            }
        }
        let mut bytes = std::fs::read(copy.join("db")).expect("read");
        damage(&mut bytes);
        std::fs::write(copy.join("db"), bytes).expect("write");
        let opened = std::panic::catch_unwind(|| SledStore::open(&copy).map(drop));
        match opened {
            Err(_) => panic!("{what}: opening the damaged store panicked"),
            Ok(Err(e)) => assert!(
                matches!(e, StoreError::Corrupt(_) | StoreError::Backend(_)),
                "{what}: {e}"
            ),
            Ok(Ok(())) => {}
        }
    }
}
