//! Authenticated state (app/src/state.rs): executing a block of transfers, committing it to
//! the Jellyfish Merkle tree in sled, producing and verifying an account proof, and the bytes
//! the state takes on disk per transfer. Issue 32's targets: an account proof verifies in
//! ≤ 100 µs, and a finalized transaction costs ≤ 60 µs of CPU per validator in all.
//!
//! Run: `cargo bench -p quasar-bench --bench state` (about two minutes).
//!
//! The state starts with `ACCOUNTS` funded accounts (so the tree has realistic depth) and
//! `BATCH` senders; each block is `BATCH` transfers, one per sender, to accounts of the
//! allocation. Every signature is verified into the verification cache before timing, as
//! admission to the mempool does, so execution pays a cache hit, not a verification. Criterion
//! measures `execute` (the next block, not committed), `prove` and `verify_proof`. Then
//! `ROUNDS` blocks are executed and committed in turn, interleaved with a batch of ML-DSA-65
//! verifications measured in the same rounds, and the table gives medians per transaction and
//! each one's ratio to a verification. Last, the state's size after those blocks: sled's files,
//! the live entries, and the live entries once pruned to the latest version.

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use criterion::Criterion;
use quasar_app::{address_of, Action, SignedTransaction, State, Transaction, VerificationCache};
use quasar_crypto::hash::tagged_hash;
use quasar_crypto::mldsa::{MlDsa65, SecretKey};
use quasar_storage::{SledStore, Store};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

const CHAIN: u64 = 7;
/// Funded accounts besides the senders.
const ACCOUNTS: u32 = 20_000;
/// Transfers per block, one per sender.
const BATCH: usize = 500;
/// Blocks executed and committed for the table.
const ROUNDS: usize = 12;

fn recipient(i: u32) -> [u8; 32] {
    tagged_hash("bench-account", &[&i.to_le_bytes()])
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Bytes of every file under `dir`.
fn disk_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| {
            let e = e.expect("entry");
            let meta = e.metadata().expect("metadata");
            if meta.is_dir() {
                disk_bytes(&e.path())
            } else {
                meta.len()
            }
        })
        .sum()
}

fn main() {
    let keys: Vec<SecretKey<MlDsa65>> = (0..BATCH as u32)
        .map(|i| {
            let mut seed = [0u8; 32];
            seed[..4].copy_from_slice(&i.to_le_bytes());
            SecretKey::from_seed(&seed)
        })
        .collect();
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    // Block r (r = 0, 1, …): sender i's transaction with nonce r.
    let blocks: Vec<Vec<SignedTransaction>> = (0..=ROUNDS as u64)
        .map(|nonce| {
            keys.iter()
                .enumerate()
                .map(|(i, key)| {
                    Transaction {
                        chain_id: CHAIN,
                        nonce,
                        fee: 1,
                        sender: address_of(key.public_key()),
                        public_key: (nonce == 0).then(|| key.public_key().clone()),
                        action: Action::Transfer {
                            to: recipient((i as u32 * 37 + nonce as u32 * 11) % ACCOUNTS),
                            amount: 5,
                        },
                    }
                    .sign(key, &mut rng)
                    .expect("sign")
                })
                .collect()
        })
        .collect();
    let cache = VerificationCache::new(CHAIN, (ROUNDS + 1) * BATCH);
    for block in &blocks {
        for (tx, key) in block.iter().zip(&keys) {
            cache.verify(tx, key.public_key()).expect("valid");
        }
    }
    let bytes: Vec<Vec<Vec<u8>>> = blocks
        .iter()
        .map(|b| b.iter().map(|t| t.as_bytes().to_vec()).collect())
        .collect();
    let refs = |r: usize| -> Vec<&[u8]> { bytes[r].iter().map(Vec::as_slice).collect() };

    let dir = tempfile::tempdir().expect("temp dir");
    let store = SledStore::open(dir.path()).expect("store");
    let genesis = (0..ACCOUNTS)
        .map(|i| (recipient(i), 1_000))
        .chain(keys.iter().map(|k| (address_of(k.public_key()), 1_000_000)));
    let mut state = State::open(
        store.state().expect("tree"),
        quasar_app::ChainRules {
            chain_id: CHAIN,
            epoch_length: 0,
            sets_from_registry: false,
        },
        genesis,
        [],
    )
    .expect("open");
    store.flush().expect("flush");
    let genesis_bytes = disk_bytes(dir.path());
    let (_, genesis_live) = store.state().expect("tree").size().expect("size");
    let first = state.execute(&[], 1, &refs(0), &cache).expect("block 1");
    state.commit(first).expect("commit 1");
    let probe = recipient(3);

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("state");
    group.sample_size(10);
    group.bench_function("execute_500_transfers", |b| {
        b.iter(|| state.execute(&[], 2, &refs(1), &cache).expect("block 2"))
    });
    group.sample_size(100);
    group.bench_function("prove", |b| {
        b.iter(|| state.account_with_proof(black_box(&probe)).expect("proof"))
    });
    let (account, proof) = state.account_with_proof(&probe).expect("proof");
    let account = account.expect("funded");
    let root = state.root();
    group.bench_function("verify_proof", |b| {
        b.iter(|| {
            proof
                .verify(black_box(&root), &probe, Some(&account))
                .expect("verifies")
        })
    });
    group.finish();
    c.final_summary();

    // Interleaved rounds: µs per transaction (or per proof), medians over the rounds.
    let per = |start: Instant, n: usize| start.elapsed().as_secs_f64() * 1e6 / n as f64;
    let (mut execute, mut commit, mut prove, mut check, mut verify) =
        (vec![], vec![], vec![], vec![], vec![]);
    for (r, block_txs) in blocks.iter().enumerate().take(ROUNDS).skip(1) {
        let start = Instant::now();
        let block = state
            .execute(&[], r as u64 + 1, &refs(r), &cache)
            .expect("block");
        execute.push(per(start, BATCH));
        let start = Instant::now();
        state.commit(block).expect("commit");
        commit.push(per(start, BATCH));
        let root = state.root();
        let start = Instant::now();
        let proofs: Vec<_> = (0..100)
            .map(|i| {
                let a = recipient(i);
                (a, state.account_with_proof(&a).expect("proof"))
            })
            .collect();
        prove.push(per(start, 100));
        let start = Instant::now();
        for (address, (account, proof)) in &proofs {
            proof
                .verify(&root, address, account.as_ref())
                .expect("verifies");
        }
        check.push(per(start, 100));
        let start = Instant::now();
        for (tx, key) in block_txs.iter().zip(&keys).take(100) {
            tx.verify(CHAIN, key.public_key()).expect("valid");
        }
        verify.push(per(start, 100));
    }
    let verify = median(verify);
    println!(
        "\n| step | µs (median of {} rounds) | / ML-DSA-65 verify |",
        ROUNDS - 1
    );
    println!("|---|---|---|");
    for (name, samples) in [
        ("execute, per transfer (cache hit, 2 accounts)", execute),
        ("commit to sled, per transfer", commit),
        ("account proof, produce", prove),
        ("account proof, verify", check),
    ] {
        let us = median(samples);
        println!("| {name} | {us:.2} | {:.3} |", us / verify);
    }
    println!("| ML-DSA-65 verify (baseline) | {verify:.2} | 1 |");

    store.flush().expect("flush");
    let after = disk_bytes(dir.path());
    let transfers = (ROUNDS * BATCH) as u64;
    let tree = store.state().expect("tree");
    let (entries, live) = tree.size().expect("size");
    let start = Instant::now();
    let pruned = state.prune(state.version(), usize::MAX).expect("prune");
    let prune_ms = start.elapsed().as_secs_f64() * 1e3;
    let (entries_kept, live_kept) = tree.size().expect("size");
    store.flush().expect("flush");
    println!(
        "\nafter {transfers} transfers ({} accounts): sled files {genesis_bytes} -> {after} \
         bytes ({} per transfer); live state {entries} entries, {live} bytes; pruned to the \
         latest version ({pruned} nodes in {prune_ms:.0} ms): {entries_kept} entries, \
         {live_kept} bytes ({} per transfer over genesis)",
        ACCOUNTS as usize + BATCH,
        after.saturating_sub(genesis_bytes) / transfers,
        live_kept.saturating_sub(genesis_live) / transfers,
    );
}
