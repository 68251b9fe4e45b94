//! State snapshots: how a node restores one version of the authenticated state from its peers
//! instead of executing every block since genesis (docs/architecture.md §11).
//!
//! A node that took a checkpoint past blocks its peers pruned has no state for the finalized
//! chain. It picks a finalized block whose header it holds (so its state root is certified),
//! and asks peers for that version's entries in key order, a chunk at a time
//! ([`snapshot_chunk`] serves one). Each chunk carries a **range proof**: the right-hand
//! siblings of the path to its last key (Diem's `SparseMerkleRangeProof`, from the `jmt` crate).
//! With the entries received so far, which give every left-hand sibling, the proof recomputes
//! the root, so [`Restore::add`] refuses any chunk that is not exactly the next run of entries
//! under the expected root: a missing, extra, altered or reordered entry, or a chunk that
//! skips ahead. After the last chunk the finished tree's root is compared once more (a peer
//! that claims the end too early fails there). The tree nodes are rebuilt by the `jmt` crate's
//! restore (`JellyfishMerkleRestore`) and written as they freeze.
//!
//! What the restored store holds is exactly version `v`: its nodes and values, and its root as
//! the latest version. Older versions, the stale marks that pruning follows and the epoch-set
//! proofs kept past pruning are not part of a snapshot, so a restored node cannot prove
//! entries of versions before `v` (others serve them).
//!
//! A restore that fails (a refused chunk, a peer that goes away) starts over from the first
//! key, with the store cleared again: it is never resumed.

use std::sync::Arc;

use jmt::proof::SparseMerkleRangeProof;
use jmt::restore::{JellyfishMerkleRestore, StateSnapshotReceiver};
use jmt::storage::{NodeBatch, TreeWriter};
use jmt::{JellyfishMerkleIterator, JellyfishMerkleTree, KeyHash};
use quasar_crypto::hash::Hash;
use quasar_storage::StateStore;

use crate::state::{state_batch, tree_error, Reader, StateError, TreeHasher};

/// Most bytes of entries (32-byte key plus value) one served chunk carries beyond its first
/// entry: 4 MiB, a quarter of the 16 MiB frame.
pub const MAX_CHUNK_BYTES: usize = 4 * 1024 * 1024;

/// Largest encoded range proof: the sibling count (4 bytes) and at most 256 siblings of at most
/// 65 bytes each (the tag and up to two hashes).
pub const MAX_RANGE_PROOF_BYTES: usize = 4 + 256 * 65;

/// A run of consecutive entries of one state version, in key order, with their range proof.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotChunk {
    /// (tree key, value) of each entry, keys strictly increasing.
    pub entries: Vec<(Hash, Vec<u8>)>,
    /// The range proof of the last entry ([`SparseMerkleRangeProof`], Borsh-encoded); empty
    /// when `entries` is.
    pub proof: Vec<u8>,
    /// No entry follows the last one: the chunk ends the version.
    pub complete: bool,
}

/// The chunk of committed version `version` in `store` that starts at the first key at or above
/// `start`: entries up to `max_bytes` (at least one, when one is there), and their range proof.
/// `None` when this store does not hold the version (pruned, or not committed yet).
///
/// Errors: [`StateError::Tree`] when the tree cannot be read (a version pruned while it was
/// read reads as a tree error too), [`StateError::Store`].
pub fn snapshot_chunk(
    store: &StateStore,
    version: u64,
    start: &Hash,
    max_bytes: usize,
) -> Result<Option<SnapshotChunk>, StateError> {
    if store.root(version)?.is_none() {
        return Ok(None);
    }
    let reader = Arc::new(Reader {
        store,
        pending: &[],
    });
    let mut entries = JellyfishMerkleIterator::new(reader.clone(), version, KeyHash(*start))
        .map_err(tree_error)?
        .peekable();
    let mut chunk = Vec::new();
    let mut bytes = 0usize;
    while chunk.is_empty() || bytes < max_bytes {
        let Some(entry) = entries.next() else { break };
        let (key, value) = entry.map_err(tree_error)?;
        bytes = bytes.saturating_add(32 + value.len());
        chunk.push((key.0, value));
    }
    let complete = entries.peek().is_none();
    let proof = match chunk.last() {
        Some((last, _)) => {
            let tree = JellyfishMerkleTree::<_, TreeHasher>::new(reader.as_ref());
            let proof = tree
                .get_range_proof(KeyHash(*last), version)
                .map_err(tree_error)?;
            borsh::to_vec(&proof).map_err(|e| tree_error(e.into()))?
        }
        None => Vec::new(),
    };
    Ok(Some(SnapshotChunk {
        entries: chunk,
        proof,
        complete,
    }))
}

/// Why a restore stopped.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// A chunk that does not belong to the expected state: the peer that sent it is wrong or
    /// lying. The restore cannot go on; begin another one (with another peer).
    #[error("snapshot chunk refused: {0}")]
    Refused(String),
    /// The local store failed (fatal to the node, as every storage error).
    #[error(transparent)]
    State(#[from] StateError),
}

/// Writes what the tree restore freezes into the state store, as part of one version.
struct RestoreWriter {
    store: StateStore,
    version: u64,
}

impl TreeWriter for RestoreWriter {
    fn write_node_batch(&self, nodes: &NodeBatch) -> anyhow::Result<()> {
        let batch = state_batch(nodes, &[]).map_err(|e| anyhow::anyhow!("{e}"))?;
        self.store.write_restored(self.version, &batch)?;
        Ok(())
    }
}

/// A restore of one state version in progress; see the module docs.
pub struct Restore {
    tree: JellyfishMerkleRestore<TreeHasher>,
    store: StateStore,
    version: u64,
    root: Hash,
    /// The first key the next chunk must start at or above; `None` once the version is complete.
    next: Option<Hash>,
    entries: u64,
}

impl Restore {
    /// Clears `store` and begins restoring version `version`, whose root is `root` (from a
    /// certified block header).
    ///
    /// Errors: [`RestoreError::State`].
    pub fn begin(store: StateStore, version: u64, root: Hash) -> Result<Restore, RestoreError> {
        store.clear().map_err(StateError::from)?;
        let writer = Arc::new(RestoreWriter {
            store: store.clone(),
            version,
        });
        let tree = JellyfishMerkleRestore::new_overwrite(writer, version, jmt::RootHash(root))
            .map_err(tree_error)?;
        Ok(Restore {
            tree,
            store,
            version,
            root,
            next: Some([0; 32]),
            entries: 0,
        })
    }

    /// The key the next chunk is asked from; `None` once a chunk said it completes the version.
    pub fn next_start(&self) -> Option<Hash> {
        self.next
    }

    /// Entries restored so far.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Adds `chunk`, the one that starts at [`Restore::next_start`], after checking it against
    /// the root (module docs). A refused chunk leaves the restore unusable: begin again.
    ///
    /// Errors: [`RestoreError::Refused`] for a chunk that is empty without completing the
    /// version, starts below the key asked for, comes after the last one, has a malformed or
    /// oversized proof, or does not verify; [`RestoreError::State`].
    pub fn add(&mut self, chunk: SnapshotChunk) -> Result<(), RestoreError> {
        let refused = |why: String| Err(RestoreError::Refused(why));
        let Some(start) = self.next else {
            return refused("a chunk after the one that completed the version".into());
        };
        let Some((first, _)) = chunk.entries.first() else {
            if chunk.complete {
                self.next = None;
                return Ok(());
            }
            return refused("an empty chunk that does not complete the version".into());
        };
        if *first < start {
            return refused(format!(
                "the chunk starts at key {} below the key asked for, {}",
                hex::encode(first),
                hex::encode(start)
            ));
        }
        if chunk.proof.len() > MAX_RANGE_PROOF_BYTES {
            return refused(format!(
                "a range proof of {} bytes exceeds the limit of {MAX_RANGE_PROOF_BYTES}",
                chunk.proof.len()
            ));
        }
        let proof: SparseMerkleRangeProof<TreeHasher> = match borsh::from_slice(&chunk.proof) {
            Ok(proof) => proof,
            Err(e) => return refused(format!("malformed range proof: {e}")),
        };
        let count = chunk.entries.len() as u64;
        let last = chunk.entries.last().map(|(key, _)| *key);
        let entries = chunk
            .entries
            .into_iter()
            .map(|(key, value)| (KeyHash(key), value))
            .collect();
        // The tree library asserts its own invariants; whatever a peer sends must not panic
        // this node, so a panic there is one more refusal.
        let added = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.tree.add_chunk(entries, proof)
        }));
        match added {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return refused(format!("{e:#}")),
            Err(_) => return refused("the tree restore rejected the chunk's shape".into()),
        }
        self.entries += count;
        self.next = match (chunk.complete, last.and_then(key_after)) {
            (false, Some(next)) => Some(next),
            _ => None,
        };
        Ok(())
    }

    /// Writes the rest of the tree, checks its root and makes the version the store's latest.
    ///
    /// Errors: [`RestoreError::Refused`] before the last chunk, or when the finished tree's
    /// root is not the expected one (a peer claimed the end too early); [`RestoreError::State`].
    pub fn finish(self) -> Result<(), RestoreError> {
        if self.next.is_some() {
            return Err(RestoreError::Refused(
                "the version is not complete: more chunks are needed".into(),
            ));
        }
        self.tree.finish().map_err(tree_error)?;
        let reader = Reader {
            store: &self.store,
            pending: &[],
        };
        let root = JellyfishMerkleTree::<_, TreeHasher>::new(&reader)
            .get_root_hash(self.version)
            .map_err(tree_error)?;
        if root.0 != self.root {
            return Err(RestoreError::Refused(format!(
                "the restored tree's root is {}, not the expected {}: entries are missing",
                hex::encode(root.0),
                hex::encode(self.root)
            )));
        }
        self.store
            .finish_restore(self.version, &self.root)
            .map_err(StateError::from)?;
        Ok(())
    }
}

/// The key right after `key` (as a 256-bit big-endian number), `None` after the last one: where
/// the chunk after one that ends at `key` starts.
pub fn key_after(key: Hash) -> Option<Hash> {
    let mut next = key;
    for byte in next.iter_mut().rev() {
        let (value, carry) = byte.overflowing_add(1);
        *byte = value;
        if !carry {
            return Some(next);
        }
    }
    None
}
