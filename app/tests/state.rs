//! Authenticated state: genesis, executing blocks before they are final, committing them,
//! invalid blocks, proposing, determinism, restarts, and account proofs.

mod common;

use common::{addr, fuzz_mutations, pay, tx, CHAIN, RULES};
use quasar_app::state::MAX_ACCOUNT_PROOF_BYTES;
use quasar_app::{
    Account, AccountLeaf, AccountProof, Action, ExecError, ProofError, State, StateError,
    VerificationCache,
};
use quasar_storage::{SledStore, Store};

fn genesis() -> [([u8; 32], u64); 2] {
    [(addr(1), 1_000), (addr(2), 50)]
}

fn open(store: &SledStore) -> State {
    State::open(store.state().expect("state tree"), RULES, genesis(), []).expect("open")
}

fn fresh() -> (SledStore, State) {
    let store = SledStore::temporary().expect("store");
    let state = open(&store);
    (store, state)
}

fn bytes(txs: &[quasar_app::SignedTransaction]) -> Vec<Vec<u8>> {
    txs.iter().map(|t| t.as_bytes().to_vec()).collect()
}

fn refs(txs: &[Vec<u8>]) -> Vec<&[u8]> {
    txs.iter().map(Vec::as_slice).collect()
}

/// Block 1: account 1 pays 300 to account 3 (its first transaction); block 2: it stakes 200.
fn two_blocks() -> [Vec<Vec<u8>>; 2] {
    [
        bytes(&[tx(1, 0, true, pay(3, 300))]),
        bytes(&[tx(1, 1, false, Action::AddStake { amount: 200 })]),
    ]
}

/// A fresh state with block 1 of [`two_blocks`] committed, and its cache.
fn after_block_one() -> (SledStore, State, VerificationCache) {
    let (store, mut state) = fresh();
    let cache = VerificationCache::new(CHAIN, 64);
    let [one, _] = two_blocks();
    let block = state.execute(&[], 1, &refs(&one), &cache).expect("1");
    state.commit(block).expect("commit 1");
    (store, state, cache)
}

fn balance(state: &State, i: u8) -> Option<u64> {
    state.account(&addr(i)).expect("read").map(|a| a.balance)
}

#[test]
fn genesis_is_version_zero_and_its_root_depends_on_the_allocation() {
    let (_store, state) = fresh();
    assert_eq!(state.version(), 0);
    assert_eq!(balance(&state, 1), Some(1_000));
    assert_eq!(balance(&state, 3), None);
    assert_eq!(state.root_at(0).expect("root"), Some(state.root()));
    let (_other, same) = fresh();
    assert_eq!(same.root(), state.root(), "same allocation, same root");
    let store = SledStore::temporary().expect("store");
    let richer = State::open(
        store.state().expect("tree"),
        RULES,
        [(addr(1), 1_001), (addr(2), 50)],
        [],
    )
    .expect("open");
    assert_ne!(richer.root(), state.root());
    let overflow = State::open(
        SledStore::temporary()
            .expect("store")
            .state()
            .expect("tree"),
        RULES,
        [(addr(1), u64::MAX), (addr(1), 1)],
        [],
    );
    assert!(matches!(
        overflow,
        Err(StateError::Genesis(ExecError::Overflow))
    ));
}

#[test]
fn a_block_is_executed_on_its_pending_ancestors_and_written_only_at_commit() {
    let (_store, mut state) = fresh();
    let cache = VerificationCache::new(CHAIN, 64);
    let [one, two] = two_blocks();
    let b1 = state.execute(&[], 1, &refs(&one), &cache).expect("block 1");
    assert_ne!(b1.root(), state.root());
    assert_eq!(b1.changed().len(), 2, "the payer and the payee");
    // Block 2 sees block 1's effects (the nonce, the key) before block 1 is committed.
    let b2 = state
        .execute(&[&b1], 2, &refs(&two), &cache)
        .expect("block 2");
    assert_eq!(state.version(), 0, "nothing is written before commit");
    assert_eq!(balance(&state, 1), Some(1_000));
    // Block 2 alone, without its ancestor, does not follow the committed version.
    assert!(matches!(
        state.execute(&[], 2, &refs(&two), &cache),
        Err(StateError::OutOfOrder {
            expected: 1,
            got: 2
        })
    ));
    assert!(matches!(
        state.commit(b2.clone()),
        Err(StateError::OutOfOrder { .. })
    ));
    state.commit(b1.clone()).expect("commit 1");
    assert_eq!((state.version(), state.root()), (1, b1.root()));
    assert_eq!(balance(&state, 3), Some(300));
    state.commit(b2.clone()).expect("commit 2");
    assert_eq!((state.version(), state.root()), (2, b2.root()));
    let alice = state.account(&addr(1)).expect("read").expect("alice");
    assert_eq!(
        (alice.balance, alice.stake, alice.nonce),
        (1_000 - 310 - 210, 200, 2)
    );
    assert_eq!(state.root_at(1).expect("root"), Some(b1.root()));
}

#[test]
fn an_empty_block_keeps_the_root_and_two_proposals_at_one_height_are_independent() {
    let (_store, mut state) = fresh();
    let cache = VerificationCache::new(CHAIN, 64);
    let empty = state.execute(&[], 1, &[], &cache).expect("empty");
    assert_eq!(empty.root(), state.root());
    let a = bytes(&[tx(1, 0, true, pay(3, 300))]);
    let b = bytes(&[tx(1, 0, true, pay(4, 300))]);
    let fork_a = state.execute(&[], 1, &refs(&a), &cache).expect("a");
    let fork_b = state.execute(&[], 1, &refs(&b), &cache).expect("b");
    assert_ne!(fork_a.root(), fork_b.root());
    state.commit(fork_b.clone()).expect("b is final");
    assert_eq!(state.root(), fork_b.root());
    assert_eq!(balance(&state, 3), None, "the other proposal left nothing");
    assert_eq!(balance(&state, 4), Some(300));
}

#[test]
fn a_block_with_a_transaction_that_does_not_apply_or_decode_is_invalid() {
    let (_store, state) = fresh();
    let cache = VerificationCache::new(CHAIN, 64);
    let first = tx(1, 0, true, pay(3, 300));
    // A replay of the same transaction inside one block.
    let second = tx(1, 1, false, pay(3, 1));
    let replay = bytes(&[first.clone(), second.clone(), second]);
    match state.execute(&[], 1, &refs(&replay), &cache) {
        Err(StateError::Transaction {
            height: 1,
            index: 2,
            source: ExecError::Nonce { .. },
        }) => {}
        other => panic!("replay: {other:?}"),
    }
    let overdraft = bytes(&[tx(2, 0, true, pay(3, 41))]);
    assert!(matches!(
        state.execute(&[], 1, &refs(&overdraft), &cache),
        Err(StateError::Transaction {
            index: 0,
            source: ExecError::Insufficient { .. },
            ..
        })
    ));
    let garbage: Vec<&[u8]> = vec![first.as_bytes(), b"not a transaction"];
    assert!(matches!(
        state.execute(&[], 1, &garbage, &cache),
        Err(StateError::Decode { index: 1, .. })
    ));
    assert_eq!(state.version(), 0);
}

#[test]
fn a_proposal_takes_what_applies_in_order_within_its_byte_limit() {
    let (_store, state) = fresh();
    let cache = VerificationCache::new(CHAIN, 64);
    let candidates = bytes(&[
        tx(1, 0, true, pay(3, 300)),
        tx(1, 0, true, pay(3, 300)), // the same nonce again
        tx(2, 0, true, pay(3, 100)), // overdraft
        tx(1, 1, false, pay(2, 5)),
        tx(1, 3, false, pay(2, 5)), // ahead of the next nonce: may apply later
        tx(4, 1, false, pay(2, 5)), // a sender whose key is not in state yet: may apply later
    ]);
    let mut all = refs(&candidates);
    all.insert(2, b"garbage");
    let proposed = state
        .propose(&[], 1, &all, usize::MAX, &cache)
        .expect("propose");
    let (chosen, block) = (proposed.chosen, proposed.executed);
    assert_eq!(chosen, vec![0, 4]);
    // What will never apply is refused, so that a mempool drops it; the rest waits.
    assert_eq!(proposed.refused, vec![1, 2, 3]);
    // Its payload executes to the same root on a verifier.
    let payload: Vec<&[u8]> = chosen.iter().map(|&i| all[i]).collect();
    let verified = state.execute(&[], 1, &payload, &cache).expect("verify");
    assert_eq!(verified.root(), block.root());
    // A limit that fits only the first transaction stops there.
    let proposed = state
        .propose(&[], 1, &all, all[0].len(), &cache)
        .expect("propose");
    assert_eq!((proposed.chosen, proposed.refused), (vec![0], vec![]));
}

#[test]
fn the_same_blocks_give_the_same_roots_and_a_restart_keeps_the_state() {
    let dir = tempfile::tempdir().expect("dir");
    let cache = VerificationCache::new(CHAIN, 64);
    let [one, two] = two_blocks();
    let run = |state: &mut State| -> Vec<[u8; 32]> {
        let b1 = state.execute(&[], 1, &refs(&one), &cache).expect("1");
        state.commit(b1).expect("commit 1");
        let b2 = state.execute(&[], 2, &refs(&two), &cache).expect("2");
        state.commit(b2).expect("commit 2");
        vec![state.root_at(1).expect("r").expect("1"), state.root()]
    };
    let roots = {
        let store = SledStore::open(dir.path()).expect("store");
        let roots = run(&mut open(&store));
        store.flush().expect("flush");
        roots
    };
    let (_other, mut elsewhere) = fresh();
    assert_eq!(run(&mut elsewhere), roots, "another node, the same roots");
    let store = SledStore::open(dir.path()).expect("reopen");
    let reopened = open(&store);
    assert_eq!((reopened.version(), reopened.root()), (2, roots[1]));
    assert_eq!(
        reopened.account(&addr(1)).expect("read"),
        elsewhere.account(&addr(1)).expect("read")
    );
}

#[test]
fn account_proofs_prove_values_and_absence_and_refuse_anything_else() {
    let (_store, state, _cache) = after_block_one();
    let root = state.root();
    let (alice, proof) = state.account_with_proof(&addr(1)).expect("proof");
    let alice = alice.expect("exists");
    proof
        .verify(&root, &addr(1), Some(&alice))
        .expect("inclusion");
    let mut richer = alice.clone();
    richer.balance += 1;
    assert!(matches!(
        proof.verify(&root, &addr(1), Some(&richer)),
        Err(ProofError::Mismatch(_))
    ));
    assert!(proof.verify(&root, &addr(1), None).is_err());
    assert!(proof.verify(&[0; 32], &addr(1), Some(&alice)).is_err());
    assert!(proof.verify(&root, &addr(2), Some(&alice)).is_err());
    let (nobody, absent) = state.account_with_proof(&addr(9)).expect("proof");
    assert_eq!(nobody, None);
    absent.verify(&root, &addr(9), None).expect("absence");
    assert!(absent
        .verify(&root, &addr(9), Some(&Account::default()))
        .is_err());
    // The encoding round-trips and its decoder refuses what is not one.
    let encoded = proof.to_bytes();
    assert_eq!(AccountProof::from_bytes(&encoded), Ok(proof));
    assert!(matches!(
        AccountProof::from_bytes(&encoded[..encoded.len() - 1]),
        Err(ProofError::Malformed(_))
    ));
    let mut trailing = encoded.clone();
    trailing.push(0);
    assert!(matches!(
        AccountProof::from_bytes(&trailing),
        Err(ProofError::Malformed(_))
    ));
    assert!(matches!(
        AccountProof::from_bytes(&vec![0; MAX_ACCOUNT_PROOF_BYTES + 1]),
        Err(ProofError::TooLarge(_))
    ));
    assert!(AccountProof::from_bytes(&[1, 0xff, 0xff, 0xff, 0xff]).is_err());
}

#[test]
fn account_leaves_encode_canonically_and_keys_are_separate_entries() {
    let (_store, mut state, cache) = after_block_one();
    let [_, two] = two_blocks();
    // Block 2 changes only account 1's leaf: its key went in with block 1.
    let block = state.execute(&[], 2, &refs(&two), &cache).expect("2");
    assert_eq!(block.changed().len(), 1);
    state.commit(block).expect("commit 2");
    let alice = state.account(&addr(1)).expect("read").expect("alice");
    assert!(
        alice.public_key.is_some(),
        "the key is read back from its own entry"
    );
    let bob = state.account(&addr(2)).expect("read").expect("bob");
    for account in [alice, bob] {
        let leaf = AccountLeaf::from(&account);
        let bytes = leaf.to_bytes();
        assert_eq!(bytes.len(), 26);
        assert_eq!(AccountLeaf::from_bytes(&bytes), Ok(leaf));
        assert!(AccountLeaf::from_bytes(&bytes[..25]).is_err());
        let mut wrong_format = bytes;
        wrong_format[0] = 2;
        assert!(AccountLeaf::from_bytes(&wrong_format).is_err());
        let mut flag = bytes;
        flag[25] = 2;
        assert!(AccountLeaf::from_bytes(&flag).is_err());
    }
}

#[test]
fn the_fuzz_entry_point_survives_mutated_accounts_and_proofs() {
    let (_store, state, _cache) = after_block_one();
    let mut seeds = Vec::new();
    for i in [1, 2, 9] {
        let (account, proof) = state.account_with_proof(&addr(i)).expect("proof");
        seeds.extend(account.map(|a| AccountLeaf::from(&a).to_bytes().to_vec()));
        seeds.push(proof.to_bytes());
    }
    fuzz_mutations(&seeds, 400, quasar_app::fuzzing::state_decode);
}

/// Blocks 2 and 3 on top of [`after_block_one`]: account 1 stakes, then account 2 pays
/// account 3 with its first transaction.
fn commit_blocks_two_and_three(state: &mut State, cache: &VerificationCache) {
    let [_, two] = two_blocks();
    let three = bytes(&[tx(2, 0, true, pay(3, 5))]);
    for (height, block) in [(2, two), (3, three)] {
        let executed = state
            .execute(&[], height, &refs(&block), cache)
            .expect("block");
        state.commit(executed).expect("commit");
    }
}

#[test]
fn pruning_keeps_every_version_from_the_kept_one_and_drops_the_older_ones() {
    let (store, mut state, cache) = after_block_one();
    commit_blocks_two_and_three(&mut state, &cache);
    let tree = store.state().expect("tree");
    let (_, bytes_before) = tree.size().expect("size");
    let removed = state.prune(3, usize::MAX).expect("prune");
    assert!(
        removed > 0,
        "blocks 1–3 replaced nodes of the versions before them"
    );
    let (_, bytes_after) = tree.size().expect("size");
    assert!(bytes_after < bytes_before, "{bytes_after} < {bytes_before}");
    assert_eq!(state.root_at(2).expect("root"), None);
    assert_eq!(state.root_at(3).expect("root"), Some(state.root()));
    assert_eq!(
        state.prune(3, usize::MAX).expect("again"),
        0,
        "nothing left to prune"
    );
    // The kept version is whole: every account reads and proves against its root.
    for i in [1, 2, 3, 9] {
        let (account, proof) = state.account_with_proof(&addr(i)).expect("proof");
        proof
            .verify(&state.root(), &addr(i), account.as_ref())
            .expect("verifies after pruning");
    }
    // The next block executes on the pruned tree to the same root as on an unpruned twin.
    let four = bytes(&[tx(1, 2, false, pay(2, 1))]);
    let pruned = state.execute(&[], 4, &refs(&four), &cache).expect("4");
    let (_twin_store, mut twin, twin_cache) = after_block_one();
    commit_blocks_two_and_three(&mut twin, &twin_cache);
    let whole = twin.execute(&[], 4, &refs(&four), &twin_cache).expect("4");
    assert_eq!(pruned.root(), whole.root());
}
