//! The mempool: client transactions waiting for a block, first in, first out, with a size cap.
//!
//! Transactions are opaque bytes identified by [`tx_hash`]. A transaction stays in the pool until
//! a block containing it is finalized, so a block that is proposed but never finalized (its view
//! was nullified) loses nothing: its transactions are proposed again. The leader leaves out the
//! transactions already in non-finalized ancestors of its block.

use quasar_crypto::hash::Hash;
use quasar_wire::tx_hash;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Largest client transaction, bytes.
pub const MAX_TX_BYTES: usize = 64 * 1024;

/// Why a transaction was not admitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MempoolError {
    /// Empty transactions are not accepted.
    #[error("transaction is empty")]
    Empty,
    /// The transaction exceeds the per-transaction byte limit.
    #[error("transaction of {len} bytes exceeds the {max}-byte limit")]
    TooLarge { len: usize, max: usize },
    /// The pool holds its maximum number of transactions or bytes; retry later.
    #[error("mempool is full")]
    Full,
    /// The same bytes are already pending.
    #[error("transaction is already pending")]
    Duplicate,
    /// Not a valid transaction of this chain (does not decode, another chain, a bad
    /// signature); the reason says which.
    #[error("invalid transaction: {0}")]
    Invalid(String),
    /// The same bytes are already in a finalized block.
    #[error("transaction is already finalized at height {height}")]
    Finalized {
        /// Height of the block that holds it.
        height: u64,
    },
}

/// Limits of a [`Mempool`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MempoolLimits {
    /// Most pending transactions.
    pub max_txs: usize,
    /// Most pending bytes.
    pub max_bytes: usize,
    /// Largest single transaction, bytes.
    pub max_tx_bytes: usize,
}

/// A bounded FIFO pool of pending transactions.
#[derive(Debug)]
pub struct Mempool {
    limits: MempoolLimits,
    next: u64,
    order: BTreeMap<u64, (Hash, Vec<u8>)>,
    index: HashMap<Hash, u64>,
    bytes: usize,
}

impl Mempool {
    /// An empty pool.
    pub fn new(limits: MempoolLimits) -> Mempool {
        Mempool {
            limits,
            next: 0,
            order: BTreeMap::new(),
            index: HashMap::new(),
            bytes: 0,
        }
    }

    /// Number of pending transactions.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Whether `hash` is pending.
    pub fn contains(&self, hash: &Hash) -> bool {
        self.index.contains_key(hash)
    }

    /// Admits a transaction and returns its hash. Errors: see [`MempoolError`].
    pub fn add(&mut self, tx: Vec<u8>) -> Result<Hash, MempoolError> {
        self.add_hashed(tx_hash(&tx), tx)
    }

    /// [`Mempool::add`] for a transaction whose hash (`quasar_wire::tx_hash`) the caller
    /// computed already. Errors: see [`MempoolError`].
    pub fn add_hashed(&mut self, hash: Hash, tx: Vec<u8>) -> Result<Hash, MempoolError> {
        if tx.is_empty() {
            return Err(MempoolError::Empty);
        }
        if tx.len() > self.limits.max_tx_bytes {
            return Err(MempoolError::TooLarge {
                len: tx.len(),
                max: self.limits.max_tx_bytes,
            });
        }
        if self.index.contains_key(&hash) {
            return Err(MempoolError::Duplicate);
        }
        if self.index.len() >= self.limits.max_txs
            || self.bytes.saturating_add(tx.len()) > self.limits.max_bytes
        {
            return Err(MempoolError::Full);
        }
        self.bytes += tx.len();
        self.index.insert(hash, self.next);
        self.order.insert(self.next, (hash, tx));
        self.next += 1;
        Ok(hash)
    }

    /// The oldest pending transactions not in `exclude`, at most `max_txs` of them and
    /// `max_bytes` in total. They stay pending until [`Mempool::remove_finalized`].
    pub fn select(
        &self,
        exclude: &HashSet<Hash>,
        max_txs: usize,
        max_bytes: usize,
    ) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut bytes = 0usize;
        for (hash, tx) in self.order.values() {
            if out.len() >= max_txs {
                break;
            }
            if exclude.contains(hash) || bytes + tx.len() > max_bytes {
                continue;
            }
            bytes += tx.len();
            out.push(tx.clone());
        }
        out
    }

    /// Drops transactions that a finalized block contains.
    pub fn remove_finalized<'a>(&mut self, hashes: impl IntoIterator<Item = &'a Hash>) {
        for hash in hashes {
            if let Some(seq) = self.index.remove(hash) {
                if let Some((_, tx)) = self.order.remove(&seq) {
                    self.bytes -= tx.len();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(max_txs: usize) -> Mempool {
        Mempool::new(MempoolLimits {
            max_txs,
            max_bytes: 100,
            max_tx_bytes: 10,
        })
    }

    #[test]
    fn admits_selects_in_order_and_removes_finalized() {
        let mut p = pool(10);
        let a = p.add(b"a".to_vec()).unwrap();
        let b = p.add(b"b".to_vec()).unwrap();
        let _c = p.add(b"c".to_vec()).unwrap();
        assert_eq!(
            p.select(&HashSet::new(), 2, 100),
            vec![b"a".to_vec(), b"b".to_vec()]
        );
        assert_eq!(
            p.select(&HashSet::from([a]), 10, 100),
            vec![b"b".to_vec(), b"c".to_vec()]
        );
        p.remove_finalized([&a, &b]);
        assert_eq!(p.len(), 1);
        assert_eq!(p.select(&HashSet::new(), 10, 100), vec![b"c".to_vec()]);
    }

    #[test]
    fn enforces_caps_and_rejects_duplicates() {
        let mut p = pool(2);
        assert_eq!(p.add(vec![]), Err(MempoolError::Empty));
        assert_eq!(
            p.add(vec![0; 11]),
            Err(MempoolError::TooLarge { len: 11, max: 10 })
        );
        p.add(b"x".to_vec()).unwrap();
        assert_eq!(p.add(b"x".to_vec()), Err(MempoolError::Duplicate));
        p.add(b"y".to_vec()).unwrap();
        assert_eq!(p.add(b"z".to_vec()), Err(MempoolError::Full));
        let mut p = Mempool::new(MempoolLimits {
            max_txs: 100,
            max_bytes: 15,
            max_tx_bytes: 10,
        });
        p.add(vec![1; 10]).unwrap();
        assert_eq!(p.add(vec![2; 6]), Err(MempoolError::Full));
        assert_eq!(
            p.select(&HashSet::new(), 10, 5),
            Vec::<Vec<u8>>::new(),
            "byte cap per block"
        );
    }
}
