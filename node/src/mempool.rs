//! The mempool: client transactions waiting for a block, first in, first out, with a size cap.
//!
//! Transactions are opaque bytes identified by [`tx_hash`]. A transaction stays in the pool until
//! a block containing it is finalized, so a block that is proposed but never finalized (its view
//! was nullified) loses nothing: its transactions are proposed again. The leader leaves out the
//! transactions already in non-finalized ancestors of its block.
//!
//! A transaction that no block takes for [`MempoolLimits::lifetime`] is dropped
//! ([`Mempool::evict_expired`]): one whose nonce is ahead of a gap that never fills, or whose
//! sender's first transaction (the one carrying its key) never arrives, would otherwise hold its
//! place for ever. Its sender learns it from `GET /tx/{hash}` (unknown again) and may send it
//! again.
//!
//! The pool also keeps the key that each pending first transaction carries, by sender
//! ([`Mempool::carried_key`]): admission verifies an account's later transactions against it
//! before that first transaction is final, and admits no transaction whose signature it could
//! not verify (a made-up sender has no key anywhere, so it cannot fill the pool).

use quasar_app::Address;
use quasar_consensus::KnownTxs;
use quasar_crypto::hash::Hash;
use quasar_crypto::mldsa::{MlDsa65, PublicKey};
use quasar_wire::tx_hash;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Largest client transaction, bytes.
pub const MAX_TX_BYTES: usize = quasar_app::tx::MAX_TX_BYTES;

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
    /// This node could not read its own state to judge the transaction (a storage failure,
    /// logged where it happened); the transaction may be sent again.
    #[error("the node could not read its state: {0}")]
    Unavailable(String),
    /// The transaction carries no key, and its sender's key is neither in the finalized state
    /// nor carried by a transaction pending here, so its signature cannot be checked; retry
    /// once the sender's first transaction (the one carrying its key) is pending or final.
    #[error(
        "the sender's key is unknown here: send the account's first transaction (it carries \
         the key) before its later ones, and retry once it is pending"
    )]
    UnknownKey,
}

impl MempoolError {
    /// A short name of the refusal, the `reason` label of `quasar_mempool_refused_total`.
    pub fn reason(&self) -> &'static str {
        match self {
            MempoolError::Empty => "empty",
            MempoolError::TooLarge { .. } => "too_large",
            MempoolError::Full => "full",
            MempoolError::Duplicate => "duplicate",
            MempoolError::Invalid(_) => "invalid",
            MempoolError::Finalized { .. } => "finalized",
            MempoolError::Unavailable(_) => "unavailable",
            MempoolError::UnknownKey => "unknown_key",
        }
    }

    /// Whether the same transaction may be admitted if sent again later unchanged: the pool
    /// was full, or the sender's key was not known here yet.
    pub fn retry_later(&self) -> bool {
        matches!(self, MempoolError::Full | MempoolError::UnknownKey)
    }
}

/// A sender's ML-DSA-65 public key, as a pending first transaction carries it.
pub type SenderKey = Arc<PublicKey<MlDsa65>>;

/// A pending transaction, by admission order.
#[derive(Debug)]
struct Entry {
    hash: Hash,
    tx: Vec<u8>,
    admitted: Instant,
    /// The sender whose key it carries (an account's first transaction), if any.
    carries: Option<Address>,
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
    /// How long a transaction may wait for a block before [`Mempool::evict_expired`] drops it.
    pub lifetime: Duration,
}

/// A bounded FIFO pool of pending transactions.
#[derive(Debug)]
pub struct Mempool {
    limits: MempoolLimits,
    next: u64,
    /// Pending transactions by admission order.
    order: BTreeMap<u64, Entry>,
    index: HashMap<Hash, u64>,
    /// Pending transactions by a fast hash of their bytes, keyed per process (`foldhash`):
    /// where [`Mempool::hashes_of`] finds a transaction it holds without hashing it with SHA3.
    /// Two transactions with one key keep the later (the other is hashed when asked about).
    by_content: HashMap<u64, Hash>,
    content_keys: foldhash::fast::RandomState,
    /// The keys that pending transactions carry, by sender, with how many pending
    /// transactions carry each (the first that carried it decides the key: a key is its
    /// address's preimage, so two carriers that passed admission carry the same one).
    keys: HashMap<Address, (SenderKey, usize)>,
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
            by_content: HashMap::new(),
            content_keys: foldhash::fast::RandomState::default(),
            keys: HashMap::new(),
            bytes: 0,
        }
    }

    /// The [`Mempool::by_content`] key of `tx`.
    fn content_key(&self, tx: &[u8]) -> u64 {
        std::hash::BuildHasher::hash_one(&self.content_keys, tx)
    }

    /// Forgets `entry`, removed from [`Mempool::order`] and [`Mempool::index`]: its bytes,
    /// its [`Mempool::by_content`] entry and its share of the carried key.
    fn forget(&mut self, entry: Entry) {
        self.bytes -= entry.tx.len();
        let key = self.content_key(&entry.tx);
        if self.by_content.get(&key) == Some(&entry.hash) {
            self.by_content.remove(&key);
        }
        if let Some(sender) = entry.carries {
            if let Some((_, carriers)) = self.keys.get_mut(&sender) {
                *carriers -= 1;
                if *carriers == 0 {
                    self.keys.remove(&sender);
                }
            }
        }
    }

    /// For each of `txs`, its [`tx_hash`] when the pool holds exactly those bytes (the hash
    /// computed when it was admitted: found by a fast hash of the bytes, then confirmed by
    /// comparing them); `None` otherwise.
    pub fn hashes_of(&self, txs: &[Vec<u8>]) -> Vec<Option<Hash>> {
        txs.iter()
            .map(|tx| {
                let hash = self.by_content.get(&self.content_key(tx))?;
                let held = self.order.get(self.index.get(hash)?)?;
                (held.tx == *tx).then_some(*hash)
            })
            .collect()
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

    /// The key that a pending transaction carries for `sender` (its first), if one does.
    pub fn carried_key(&self, sender: &Address) -> Option<SenderKey> {
        self.keys.get(sender).map(|(key, _)| key.clone())
    }

    /// Admits a transaction that carries no key and returns its hash. Errors: see
    /// [`MempoolError`].
    pub fn add(&mut self, tx: Vec<u8>) -> Result<Hash, MempoolError> {
        self.add_hashed(tx_hash(&tx), tx, None)
    }

    /// [`Mempool::add`] for a transaction whose hash (`quasar_wire::tx_hash`) the caller
    /// computed already, and which carries `carried`: its sender and the key it carries (an
    /// account's first transaction, whose signature admission verified against that key).
    /// Errors: see [`MempoolError`].
    pub fn add_hashed(
        &mut self,
        hash: Hash,
        tx: Vec<u8>,
        carried: Option<(Address, SenderKey)>,
    ) -> Result<Hash, MempoolError> {
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
        if !self.has_room(tx.len()) {
            return Err(MempoolError::Full);
        }
        self.bytes += tx.len();
        self.by_content.insert(self.content_key(&tx), hash);
        self.index.insert(hash, self.next);
        let carries = carried.map(|(sender, key)| {
            self.keys.entry(sender).or_insert((key, 0)).1 += 1;
            sender
        });
        let entry = Entry {
            hash,
            tx,
            admitted: Instant::now(),
            carries,
        };
        self.order.insert(self.next, entry);
        self.next += 1;
        Ok(hash)
    }

    /// Whether one more transaction of `len` bytes fits under the limits: admission asks before
    /// it verifies a signature, so that a full pool pushes clients back at little cost.
    pub fn has_room(&self, len: usize) -> bool {
        self.index.len() < self.limits.max_txs
            && self.bytes.saturating_add(len) <= self.limits.max_bytes
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
        for Entry { hash, tx, .. } in self.order.values() {
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
                if let Some(entry) = self.order.remove(&seq) {
                    self.forget(entry);
                }
            }
        }
    }

    /// Drops the transactions admitted more than [`MempoolLimits::lifetime`] before `now`
    /// (the oldest first: admission order is time order) and returns how many.
    pub fn evict_expired(&mut self, now: Instant) -> usize {
        let Some(cutoff) = now.checked_sub(self.limits.lifetime) else {
            return 0;
        };
        let mut evicted = 0;
        while let Some(entry) = self.order.first_entry() {
            if entry.get().admitted > cutoff {
                break;
            }
            let entry = entry.remove();
            self.index.remove(&entry.hash);
            self.forget(entry);
            evicted += 1;
        }
        evicted
    }
}

/// A shared mempool as the verifier's [`KnownTxs`]: proposals take the hashes of the
/// transactions it holds ([`Mempool::hashes_of`]). A poisoned lock answers nothing known.
pub struct PoolHashes(pub Arc<Mutex<Mempool>>);

impl KnownTxs for PoolHashes {
    fn hashes(&self, txs: &[Vec<u8>]) -> Vec<Option<Hash>> {
        match self.0.lock() {
            Ok(pool) => pool.hashes_of(txs),
            Err(_) => Vec::new(),
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
            lifetime: Duration::from_secs(60),
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
    fn a_held_transaction_has_its_hash_found_byte_for_byte_and_forgotten_with_it() {
        let mut p = pool(10);
        let a = p.add(b"a".to_vec()).unwrap();
        let b = p.add(b"bb".to_vec()).unwrap();
        let asked = [b"a".to_vec(), b"bb".to_vec(), b"c".to_vec()];
        assert_eq!(p.hashes_of(&asked), vec![Some(a), Some(b), None]);
        // An index entry that points at other bytes (a key collision) is not taken.
        let key = p.content_key(b"c");
        p.by_content.insert(key, a);
        assert_eq!(p.hashes_of(&asked[2..]), vec![None]);
        p.remove_finalized([&b]);
        p.evict_expired(Instant::now() + Duration::from_secs(61));
        assert_eq!(p.hashes_of(&asked), vec![None, None, None]);
        assert_eq!(p.by_content.len(), 1, "only the planted entry remains");
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
            lifetime: Duration::from_secs(60),
        });
        p.add(vec![1; 10]).unwrap();
        assert_eq!(p.add(vec![2; 6]), Err(MempoolError::Full));
        assert_eq!(
            p.select(&HashSet::new(), 10, 5),
            Vec::<Vec<u8>>::new(),
            "byte cap per block"
        );
    }

    #[test]
    fn transactions_past_their_lifetime_are_evicted_oldest_first() {
        let mut p = pool(10);
        let old = p.add(b"old".to_vec()).unwrap();
        let older_than_cut = Instant::now();
        std::thread::sleep(Duration::from_millis(5));
        let young = p.add(b"young".to_vec()).unwrap();
        // 60 s after `older_than_cut`: only what was admitted by then is past its lifetime.
        assert_eq!(p.evict_expired(older_than_cut + Duration::from_secs(60)), 1);
        assert!(!p.contains(&old) && p.contains(&young));
        assert_eq!(p.select(&HashSet::new(), 10, 100), vec![b"young".to_vec()]);
        assert_eq!(p.evict_expired(Instant::now()), 0, "within its lifetime");
        assert_eq!(p.evict_expired(Instant::now() + Duration::from_secs(61)), 1);
        assert!(p.is_empty());
        // The bytes freed count again: a full pool admits after an eviction.
        let mut p = pool(1);
        p.add(b"a".to_vec()).unwrap();
        assert_eq!(p.add(b"b".to_vec()), Err(MempoolError::Full));
        p.evict_expired(Instant::now() + Duration::from_secs(61));
        p.add(b"b".to_vec()).unwrap();
    }

    #[test]
    fn a_carried_key_is_found_while_a_transaction_carrying_it_is_pending() {
        let key: SenderKey = Arc::new(
            quasar_crypto::mldsa::SecretKey::<MlDsa65>::from_seed(&[7; 32])
                .public_key()
                .clone(),
        );
        let sender = quasar_app::address_of(&key);
        let mut p = pool(10);
        assert!(p.carried_key(&sender).is_none());
        let first = p
            .add_hashed(
                tx_hash(b"first"),
                b"first".to_vec(),
                Some((sender, key.clone())),
            )
            .unwrap();
        let again = p
            .add_hashed(
                tx_hash(b"again"),
                b"again".to_vec(),
                Some((sender, key.clone())),
            )
            .unwrap();
        p.add(b"later".to_vec()).unwrap();
        assert_eq!(p.carried_key(&sender).as_deref(), Some(&*key));
        // Two carriers: the key stays until neither is pending, however each leaves.
        p.remove_finalized([&first]);
        assert_eq!(p.carried_key(&sender).as_deref(), Some(&*key));
        p.remove_finalized([&again]);
        assert!(p.carried_key(&sender).is_none());
        p.add_hashed(
            tx_hash(b"third"),
            b"third".to_vec(),
            Some((sender, key.clone())),
        )
        .unwrap();
        p.evict_expired(Instant::now() + Duration::from_secs(61));
        assert!(p.carried_key(&sender).is_none() && p.is_empty());
    }
}
