//! State snapshots: a version served in chunks and restored elsewhere is the same state, and a
//! chunk that is not exactly the next run of that state is refused.

mod common;

use common::{addr, pay, tx, CHAIN, RULES};
use quasar_app::snapshot::{key_after, snapshot_chunk, Restore, RestoreError, SnapshotChunk};
use quasar_app::{Action, State, VerificationCache};
use quasar_storage::SledStore;

/// Accounts 1..=200 in the genesis allocation, so a version has a few hundred entries.
fn allocation() -> Vec<([u8; 32], u64)> {
    (1..=200).map(|i| (addr(i), 1_000 + u64::from(i))).collect()
}

fn open(store: &SledStore) -> State {
    State::open(store.state().expect("state tree"), RULES, allocation(), []).expect("open")
}

/// A state with blocks 1–3 committed (first transactions of three accounts, a stake).
fn source() -> (SledStore, State, VerificationCache) {
    let store = SledStore::temporary().expect("store");
    let mut state = open(&store);
    let cache = VerificationCache::new(CHAIN, 64);
    let blocks = [
        vec![tx(1, 0, true, pay(201, 300))],
        vec![tx(2, 0, true, pay(3, 7)), tx(1, 1, false, pay(2, 1))],
        vec![tx(3, 0, true, Action::AddStake { amount: 100 })],
    ];
    for (height, block) in (1..).zip(blocks) {
        let bytes: Vec<Vec<u8>> = block.iter().map(|t| t.as_bytes().to_vec()).collect();
        let refs: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
        let executed = state.execute(&[], height, &refs, &cache).expect("execute");
        state.commit(executed).expect("commit");
    }
    (store, state, cache)
}

/// Every chunk of `version` at `max_bytes` each, in order.
fn chunks(store: &SledStore, version: u64, max_bytes: usize) -> Vec<SnapshotChunk> {
    let tree = store.state().expect("tree");
    let mut out = Vec::new();
    let mut start = [0u8; 32];
    loop {
        let chunk = snapshot_chunk(&tree, version, &start, max_bytes)
            .expect("read")
            .expect("held");
        let (complete, last) = (chunk.complete, chunk.entries.last().map(|(k, _)| *k));
        out.push(chunk);
        if complete {
            return out;
        }
        start = key_after(last.expect("a chunk that does not complete has entries"))
            .expect("a key follows");
    }
}

/// Feeds `chunks` to a restore of `version` with root `root` into `store`, then finishes it.
fn restore(
    store: &SledStore,
    version: u64,
    root: [u8; 32],
    chunks: Vec<SnapshotChunk>,
) -> Result<(), RestoreError> {
    let mut restore = Restore::begin(store.state().expect("tree"), version, root)?;
    for chunk in chunks {
        restore.add(chunk)?;
    }
    restore.finish()
}

#[test]
fn a_version_restored_from_chunks_is_the_same_state_and_executes_the_next_block_alike() {
    let (store, mut state, cache) = source();
    let root = state.root();
    let served = chunks(&store, 3, 4_000);
    assert!(served.len() > 3, "several chunks: {}", served.len());
    let entries: usize = served.iter().map(|c| c.entries.len()).sum();
    assert!(entries > 200, "every account and key: {entries}");

    // The joiner holds a state of its own already: the restore replaces all of it.
    let (joiner_store, mut joiner, joiner_cache) = source();
    restore(&joiner_store, 3, root, served).expect("restored");
    joiner.reload().expect("reload");
    assert_eq!((joiner.version(), joiner.root()), (3, root));
    for i in [1, 2, 3, 100, 201, 250] {
        let (account, proof) = joiner.account_with_proof(&addr(i)).expect("read");
        assert_eq!(
            account,
            state.account(&addr(i)).expect("read"),
            "account {i}"
        );
        proof
            .verify(&root, &addr(i), account.as_ref())
            .expect("proves against the restored root");
    }
    // Block 4 gives the same root on both, and commits on the restored state.
    let four: Vec<Vec<u8>> = vec![tx(3, 1, false, pay(1, 2)).as_bytes().to_vec()];
    let refs: Vec<&[u8]> = four.iter().map(Vec::as_slice).collect();
    let there = state.execute(&[], 4, &refs, &cache).expect("4");
    let here = joiner.execute(&[], 4, &refs, &joiner_cache).expect("4");
    assert_eq!(here.root(), there.root());
    joiner.commit(here).expect("commit 4");
    state.commit(there).expect("commit 4");
    assert_eq!(joiner.root(), state.root());

    // A store that holds a version serves it; one that pruned it or never had it does not.
    let tree = store.state().expect("tree");
    assert!(snapshot_chunk(&tree, 9, &[0; 32], 1_000)
        .expect("read")
        .is_none());
    state.prune(4, usize::MAX).expect("prune");
    assert!(snapshot_chunk(&tree, 3, &[0; 32], 1_000)
        .expect("read")
        .is_none());
}

/// The restore of version 3 of [`source`] from `chunks` as changed by `tamper` is refused.
fn refused(tamper: impl FnOnce(&mut Vec<SnapshotChunk>)) -> String {
    let (store, state, _) = source();
    let mut served = chunks(&store, 3, 4_000);
    tamper(&mut served);
    let target = SledStore::temporary().expect("store");
    match restore(&target, 3, state.root(), served) {
        Err(RestoreError::Refused(why)) => why,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn a_chunk_that_is_not_the_next_run_of_the_certified_state_is_refused() {
    // An altered value.
    refused(|c| c[1].entries[2].1[0] ^= 1);
    // An entry left out inside a chunk, or a whole chunk skipped.
    refused(|c| drop(c[1].entries.remove(3)));
    refused(|c| drop(c.remove(1)));
    // An entry added (a copy of a real one under another key).
    refused(|c| {
        let (mut key, value) = c[1].entries[0].clone();
        key[31] ^= 1;
        let at = c[1].entries.partition_point(|(k, _)| *k < key);
        c[1].entries.insert(at, (key, value));
    });
    // Entries out of order, and a chunk that starts below the key asked for.
    refused(|c| c[1].entries.swap(0, 1));
    refused(|c| {
        let earlier = c[0].entries[c[0].entries.len() - 1].clone();
        c[1].entries.insert(0, earlier);
    });
    // The end claimed too early: every chunk verifies, the finished root does not.
    let why = refused(|c| {
        c.truncate(2);
        c[1].complete = true;
    });
    assert!(why.contains("entries are missing"), "{why}");
    // An empty chunk that does not end the version, a malformed or oversized proof, a chunk
    // after the end.
    refused(|c| {
        c[1].entries.clear();
        c[1].proof.clear();
    });
    refused(|c| c[1].proof.truncate(5));
    refused(|c| c[1].proof = vec![0; quasar_app::snapshot::MAX_RANGE_PROOF_BYTES + 1]);
    refused(|c| {
        let last = c[c.len() - 1].clone();
        c.push(last);
    });
}

#[test]
fn a_restore_under_another_root_is_refused_and_a_restore_cut_short_is_not_a_state() {
    let (store, state, _) = source();
    let served = chunks(&store, 3, 4_000);
    let mut wrong = state.root();
    wrong[0] ^= 1;
    let target = SledStore::temporary().expect("store");
    assert!(matches!(
        restore(&target, 3, wrong, served.clone()),
        Err(RestoreError::Refused(_))
    ));
    // A restore interrupted after one chunk (a crash) leaves entries but no version: the state
    // opens as a new one, with the genesis allocation's root.
    let mut cut = Restore::begin(target.state().expect("tree"), 3, state.root()).expect("begin");
    cut.add(served[0].clone()).expect("first chunk");
    drop(cut);
    let reopened = open(&target);
    let (_fresh_store, fresh) = {
        let fresh_store = SledStore::temporary().expect("store");
        let fresh = open(&fresh_store);
        (fresh_store, fresh)
    };
    assert_eq!((reopened.version(), reopened.root()), (0, fresh.root()));
    assert_eq!(
        reopened.account(&addr(201)).expect("read"),
        None,
        "no entry of the cut restore shows through"
    );
}

#[test]
fn the_fuzz_entry_point_survives_mutated_chunks_and_takes_a_real_one() {
    let (store, state, _) = source();
    // Version 3 whole in one chunk: the fuzz entry restores it (as version 1 of an empty
    // store; the version number is not part of the proof).
    let whole = chunks(&store, 3, usize::MAX);
    assert_eq!(whole.len(), 1);
    let seeds: Vec<Vec<u8>> = chunks(&store, 3, 4_000)
        .iter()
        .chain(&whole)
        .map(|chunk| quasar_app::fuzzing::snapshot_chunk_input(&state.root(), chunk))
        .collect();
    common::fuzz_mutations(&seeds, 200, quasar_app::fuzzing::snapshot_chunk);
}
