//! Storage benchmarks (issue 8): what retention costs at an epoch boundary, against committing
//! the same epoch, measured in the same run.
//!
//! Run: `cargo bench -p quasar-bench --bench storage`. Criterion groups (reports under
//! `target/criterion/`), on a temporary sled store, one epoch of [`EPOCH`] blocks of
//! [`BLOCK_BYTES`] bytes with [`TXS`] transactions each:
//!
//! - `storage_epoch/commit`: `Store::commit_finalized` of the epoch's blocks, one by one, then a
//!   flush (what finalizing the epoch writes).
//! - `storage_epoch/prune`: `Store::prune_history` of that epoch once the next one is committed
//!   (what the engine does when a later epoch starts), then a flush.
//!
//! The summary times both back to back in rounds and reports the ratio prune / commit, so the
//! pause pruning adds at a boundary reads against the epoch's own write cost. Summary only:
//! `cargo bench -p quasar-bench --bench storage -- summary-only`.

use criterion::{BatchSize, Criterion};
use quasar_bench::summary::{report, run_with_summary, time, Samples, Target};
use quasar_storage::{FinalizedBlock, SledStore, Store};

/// Blocks per epoch.
const EPOCH: u64 = 1024;
/// Bytes of each encoded block.
const BLOCK_BYTES: usize = 2048;
/// Transactions per block.
const TXS: u64 = 4;

fn block(height: u64) -> FinalizedBlock {
    let hash = |tag: u64| {
        let mut h = [0u8; 32];
        h[..8].copy_from_slice(&height.to_be_bytes());
        h[8..16].copy_from_slice(&tag.to_be_bytes());
        h
    };
    FinalizedBlock {
        height,
        hash: hash(0),
        block: vec![height as u8; BLOCK_BYTES],
        certificate: vec![0xce; 200],
        tx_hashes: (1..=TXS).map(hash).collect(),
    }
}

/// Commits epoch `epoch` (0-based) to `store` and flushes.
fn commit_epoch(store: &SledStore, epoch: u64) {
    for height in epoch * EPOCH + 1..=(epoch + 1) * EPOCH {
        store.commit_finalized(&block(height)).unwrap();
    }
    store.flush().unwrap();
}

/// Prunes epoch 0 (keeping its boundary block) and flushes.
fn prune_first_epoch(store: &SledStore) -> u64 {
    let pruned = store.prune_history(EPOCH + 1, EPOCH, usize::MAX).unwrap();
    store.flush().unwrap();
    pruned
}

fn two_epochs() -> SledStore {
    let store = SledStore::temporary().unwrap();
    commit_epoch(&store, 0);
    commit_epoch(&store, 1);
    store
}

fn bench_storage(c: &mut Criterion) {
    let mut group = c.benchmark_group("storage_epoch");
    group.bench_function("commit", |b| {
        b.iter_batched(
            || SledStore::temporary().unwrap(),
            |store| commit_epoch(&store, 0),
            BatchSize::PerIteration,
        )
    });
    group.bench_function("prune", |b| {
        b.iter_batched(
            two_epochs,
            |store| assert_eq!(prune_first_epoch(&store), EPOCH - 1),
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

const TARGETS: [Target; 1] = [("prune an epoch / commit it", None, true)];

fn summary() {
    let (mut ms, mut ratios) = (Samples::default(), Samples::default());
    for _ in 0..7 {
        let store = SledStore::temporary().unwrap();
        let commit = time(1, || commit_epoch(&store, 0));
        commit_epoch(&store, 1);
        let prune = time(1, || prune_first_epoch(&store));
        ms.push("commit one epoch", commit * 1e3);
        ms.push("prune one epoch", prune * 1e3);
        ratios.push(TARGETS[0].0, prune / commit);
    }
    report(
        &format!("Storage ({EPOCH}-block epochs)"),
        ("ms", "ms", 1),
        &ms,
        &ratios,
        &TARGETS,
        "storage-summary.json",
    );
}

fn main() {
    run_with_summary(bench_storage, summary);
}
