//! The byte store under the application's authenticated state (docs/architecture.md §1).
//!
//! The application (`quasar-app`) keeps its accounts in a versioned Merkle tree: version `h` is
//! the state after block `h` (version 0: the genesis allocation). This module stores that tree's
//! bytes and never decodes them, as the block [`Store`](crate::Store) never decodes blocks. One
//! sled tree, `state`, holds these kinds of entries, told apart by a one-byte prefix:
//!
//! | key | value |
//! |---|---|
//! | `n` ‖ node key (the tree's own encoding) | the node's bytes |
//! | `v` ‖ key hash (32 B) ‖ version (u64 BE) | the value written at that version; empty = deleted |
//! | `c` ‖ key hash (32 B) | the key's last write: its version (u64 BE) ‖ its value (as in `v`) |
//! | `r` ‖ version (u64 BE) | the root hash of that version (32 B) |
//! | `s` ‖ version (u64 BE) ‖ node key | empty: the node is not used by that version or later |
//! | `l` | the latest committed version (u64 BE) |
//! | `p` ‖ key hash (32 B) ‖ version (u64 BE) | a proof of the key's value at that version, kept past pruning ([`StateStore::keep_proof`]) |
//!
//! [`StateStore::commit`] writes one version's nodes, values, root and the latest-version
//! pointer in one sled batch, so a crash leaves the state at the previous version or at the new
//! one, never between (sled recovers a prefix of its batches). A version lost to a crash is
//! executed again from its block: a version's bytes depend only on the blocks.
//!
//! **Reading a value.** A read at the latest version, what execution and admission do for
//! every transaction, is one sled lookup of the key's `c` entry: it holds the highest version
//! written for the key (every write of a `v` entry writes it, in the same batch, and versions
//! are written in increasing order), so when that version is at most the one asked for, its
//! value is the answer. Only a read at an older version, or of a key whose last write predates
//! the `c` entries, scans the key's `v` entries backwards (a sled range scan copies a whole
//! leaf of the tree, several times the cost of a lookup). A binary older than the `c` entries
//! must therefore not write to a data directory after a newer one has: its writes would leave
//! the `c` entries behind.
//!
//! **Pruning.** Each version records the nodes it made stale (replaced or removed: no version
//! from it on uses them). [`StateStore::prune`] deletes the nodes made stale at or before a
//! version `keep`, and the roots below it: every version from `keep` on stays whole and
//! provable, older ones are gone. Values (the `v` entries, 26 bytes per changed account) are
//! not pruned yet.
//!
//! **Restoring.** A node without the state of the finalized chain restores one version from a
//! snapshot its peers serve (`quasar_app::snapshot`): [`StateStore::clear`], then the
//! version's nodes and values in parts ([`StateStore::write_restored`]), then its root and the
//! latest pointer ([`StateStore::finish_restore`]). Until that last write the state reads as
//! never committed.

use quasar_crypto::hash::Hash;

use crate::store::StoreError;

const NODE: u8 = b'n';
const VALUE: u8 = b'v';
const ROOT: u8 = b'r';
const STALE: u8 = b's';
const LATEST: &[u8] = b"l";
const KEPT: u8 = b'p';
const CURRENT: u8 = b'c';

/// The authenticated state's bytes in the node's sled database ([`crate::SledStore::state`]).
#[derive(Debug, Clone)]
pub struct StateStore {
    tree: sled::Tree,
}

/// One version's writes, for [`StateStore::commit`].
#[derive(Debug, Default, Clone)]
pub struct StateBatch {
    /// New tree nodes: (node key, node bytes), in the tree's own encodings.
    pub nodes: Vec<(Vec<u8>, Vec<u8>)>,
    /// Values written at this version: (key hash, value); `None` deletes the key. A value must
    /// not be empty (the store uses the empty value for a deletion).
    pub values: Vec<(Hash, Option<Vec<u8>>)>,
    /// Nodes this version makes stale: (the version from which no tree uses it, node key).
    pub stale: Vec<(u64, Vec<u8>)>,
}

fn prefixed(prefix: u8, parts: &[&[u8]]) -> Vec<u8> {
    let mut key = Vec::with_capacity(1 + parts.iter().map(|p| p.len()).sum::<usize>());
    key.push(prefix);
    for part in parts {
        key.extend_from_slice(part);
    }
    key
}

fn value_key(key_hash: &Hash, version: u64) -> Vec<u8> {
    prefixed(VALUE, &[key_hash, &version.to_be_bytes()])
}

/// The sled writes of `batch` (nodes, values and stale marks) at version `version`.
fn batch_writes(version: u64, batch: &StateBatch) -> Result<sled::Batch, StoreError> {
    let mut write = sled::Batch::default();
    for (key, node) in &batch.nodes {
        write.insert(prefixed(NODE, &[key]), node.as_slice());
    }
    for (key_hash, value) in &batch.values {
        let value = match value {
            Some(v) if v.is_empty() => {
                return Err(StoreError::Corrupt(
                    "an empty state value (the store's deletion mark) was written".into(),
                ))
            }
            Some(v) => v.as_slice(),
            None => &[],
        };
        write.insert(value_key(key_hash, version), value);
        let current: Vec<u8> = version.to_be_bytes().iter().chain(value).copied().collect();
        write.insert(prefixed(CURRENT, &[key_hash]), current);
    }
    for (since, key) in &batch.stale {
        write.insert(prefixed(STALE, &[&since.to_be_bytes(), key]), &[]);
    }
    Ok(write)
}

impl StateStore {
    pub(crate) fn open(db: &sled::Db) -> Result<StateStore, StoreError> {
        Ok(StateStore {
            tree: db.open_tree("state")?,
        })
    }

    /// The node stored under `node_key`, if any.
    ///
    /// Errors: [`StoreError::Backend`].
    pub fn node(&self, node_key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self
            .tree
            .get(prefixed(NODE, &[node_key]))?
            .map(|v| v.to_vec()))
    }

    /// The value of `key_hash` as of `max_version`: the one written at the highest version
    /// ≤ `max_version`, or `None` if there is none or that write deleted it.
    ///
    /// Errors: [`StoreError::Backend`].
    pub fn value(&self, key_hash: &Hash, max_version: u64) -> Result<Option<Vec<u8>>, StoreError> {
        if let Some(current) = self.tree.get(prefixed(CURRENT, &[key_hash]))? {
            let (version, value) = current.split_first_chunk::<8>().ok_or_else(|| {
                StoreError::Corrupt("state: a last-write entry shorter than its version".into())
            })?;
            if u64::from_be_bytes(*version) <= max_version {
                return Ok((!value.is_empty()).then(|| value.to_vec()));
            }
        }
        let range = value_key(key_hash, 0)..=value_key(key_hash, max_version);
        Ok(match self.tree.range(range).next_back().transpose()? {
            Some((_, value)) if !value.is_empty() => Some(value.to_vec()),
            _ => None,
        })
    }

    /// The root hash of `version`, if that version is committed.
    ///
    /// Errors: [`StoreError::Backend`]; [`StoreError::Corrupt`] for a stored root that is not
    /// 32 bytes.
    pub fn root(&self, version: u64) -> Result<Option<Hash>, StoreError> {
        self.tree
            .get(prefixed(ROOT, &[&version.to_be_bytes()]))?
            .map(|v| {
                Hash::try_from(v.as_ref()).map_err(|_| {
                    StoreError::Corrupt(format!("state root of version {version}: not 32 bytes"))
                })
            })
            .transpose()
    }

    /// The latest committed version and its root; `None` for a state never committed.
    ///
    /// Errors: [`StoreError::Backend`]; [`StoreError::Corrupt`] for a damaged pointer or a
    /// pointer to a version without a root.
    pub fn latest(&self) -> Result<Option<(u64, Hash)>, StoreError> {
        let Some(value) = self.tree.get(LATEST)? else {
            return Ok(None);
        };
        let version = <[u8; 8]>::try_from(value.as_ref())
            .map(u64::from_be_bytes)
            .map_err(|_| StoreError::Corrupt("latest state version: not 8 bytes".into()))?;
        let root = self.root(version)?.ok_or_else(|| {
            StoreError::Corrupt(format!("latest state version {version} has no root"))
        })?;
        Ok(Some((version, root)))
    }

    /// Writes version `version` (its `batch` and `root`) and makes it the latest, atomically.
    /// Versions are committed in order: the latest + 1, or 0 first.
    ///
    /// Errors: [`StoreError::OutOfOrder`] for any other version (nothing is written);
    /// [`StoreError::Corrupt`] for an empty value in `batch`; [`StoreError::Backend`].
    pub fn commit(&self, version: u64, root: &Hash, batch: &StateBatch) -> Result<(), StoreError> {
        let expected = self
            .latest()?
            .map_or(0, |(latest, _)| latest.saturating_add(1));
        if version != expected {
            return Err(StoreError::OutOfOrder {
                expected,
                got: version,
            });
        }
        let mut write = batch_writes(version, batch)?;
        write.insert(prefixed(ROOT, &[&version.to_be_bytes()]), root.as_slice());
        write.insert(LATEST, &version.to_be_bytes());
        self.tree.apply_batch(write)?;
        Ok(())
    }

    /// Deletes the whole state: nodes, values, roots, stale marks, kept proofs and the latest
    /// pointer. The pointer goes first, in its own write, so a crash part-way leaves a state
    /// that reads as never committed (and is cleared again before anything is written to it).
    ///
    /// Errors: [`StoreError::Backend`].
    pub fn clear(&self) -> Result<(), StoreError> {
        self.tree.remove(LATEST)?;
        self.tree.clear()?;
        Ok(())
    }

    /// Writes part of version `version` while it is restored from a snapshot, in one atomic
    /// batch: its nodes and values, not its root, so the version is not readable as committed
    /// until [`StateStore::finish_restore`]. Only into a state [`StateStore::clear`]ed first.
    ///
    /// Errors: [`StoreError::Corrupt`] for an empty value in `batch`; [`StoreError::Backend`].
    pub fn write_restored(&self, version: u64, batch: &StateBatch) -> Result<(), StoreError> {
        self.tree.apply_batch(batch_writes(version, batch)?)?;
        Ok(())
    }

    /// Makes version `version`, whose nodes and values [`StateStore::write_restored`] wrote,
    /// the latest, with root `root`.
    ///
    /// Errors: [`StoreError::Backend`].
    pub fn finish_restore(&self, version: u64, root: &Hash) -> Result<(), StoreError> {
        let mut write = sled::Batch::default();
        write.insert(prefixed(ROOT, &[&version.to_be_bytes()]), root.as_slice());
        write.insert(LATEST, &version.to_be_bytes());
        self.tree.apply_batch(write)?;
        Ok(())
    }

    /// Deletes at most `limit` nodes made stale at or before version `keep`, with their stale
    /// marks, and the roots of the versions below `keep`, so that every version from `keep` on
    /// stays readable and older ones are not. Returns how many nodes it deleted; call again
    /// while it returns `limit` (each call is one atomic batch).
    ///
    /// Errors: [`StoreError::Backend`]; [`StoreError::Corrupt`] for a malformed stale mark.
    pub fn prune(&self, keep: u64, limit: usize) -> Result<usize, StoreError> {
        let mut write = sled::Batch::default();
        let mut removed = 0;
        let end = prefixed(STALE, &[&keep.saturating_add(1).to_be_bytes()]);
        let marks = self.tree.range(prefixed(STALE, &[])..end);
        for mark in marks.take(limit) {
            let (mark, _) = mark?;
            let node_key = mark.get(9..).ok_or_else(|| {
                StoreError::Corrupt("state: a stale mark shorter than its version".into())
            })?;
            write.remove(prefixed(NODE, &[node_key]));
            write.remove(mark);
            removed += 1;
        }
        for root in self
            .tree
            .range(prefixed(ROOT, &[])..prefixed(ROOT, &[&keep.to_be_bytes()]))
        {
            let (root, _) = root?;
            write.remove(root);
        }
        self.tree.apply_batch(write)?;
        Ok(removed)
    }

    /// Keeps `proof`, the application's proof of the value at `key_hash` in `version`, past the
    /// pruning of that version: what must stay provable for ever although its version is not
    /// (each epoch's validator set, which epoch-change proofs carry a client through).
    ///
    /// Errors: [`StoreError::Backend`].
    pub fn keep_proof(
        &self,
        key_hash: &Hash,
        version: u64,
        proof: &[u8],
    ) -> Result<(), StoreError> {
        self.tree
            .insert(prefixed(KEPT, &[key_hash, &version.to_be_bytes()]), proof)?;
        Ok(())
    }

    /// The proof [`StateStore::keep_proof`] kept for `key_hash` in `version`, if any.
    ///
    /// Errors: [`StoreError::Backend`].
    pub fn kept_proof(&self, key_hash: &Hash, version: u64) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self
            .tree
            .get(prefixed(KEPT, &[key_hash, &version.to_be_bytes()]))?
            .map(|v| v.to_vec()))
    }

    /// The number of entries and their bytes (keys and values) in the state's tree: the live
    /// size of the state, as opposed to sled's files, which reclaim space lazily.
    ///
    /// Errors: [`StoreError::Backend`].
    pub fn size(&self) -> Result<(u64, u64), StoreError> {
        let (mut entries, mut bytes) = (0u64, 0u64);
        for entry in self.tree.iter() {
            let (key, value) = entry?;
            entries += 1;
            bytes += (key.len() + value.len()) as u64;
        }
        Ok((entries, bytes))
    }
}
