//! The verification-result cache: a transaction's signature is checked once per node.
//!
//! A transaction is verified when it enters the mempool; the block that carries it is verified
//! when proposed and executed when finalized. Each of those would check the same ML-DSA-65
//! signature again (about 70 µs each with libcrux in our baseline build). The cache remembers the verdict.
//!
//! **The key.** A cache serves one chain, and a verdict is keyed by the transaction's hash
//! ([`SignedTransaction::hash`], over every byte: body and signature). That hash also fixes the
//! public key: the body names the sender's address, the hash of the one key that may sign for it
//! (collision resistance of SHA3-256), and `verify` refuses any other key before looking at the
//! signature. So (tx hash) determines (transaction, key, chain), a second signature on the same
//! body is a different entry, and a hit needs no key hashing. Refusals of the signature are
//! cached too, so a peer that repeats a forged transaction costs one lookup.
//!
//! Bounded: at most [`VerificationCache::capacity`] verdicts, the oldest dropped first (a
//! dropped verdict only costs a second verification). A hit is a mutex and a hash-map lookup of
//! 32 bytes (`cargo bench -p quasar-bench --bench tx` measures it against ML-DSA-65 verify).
//!
//! **Prepared keys.** A miss verifies the signature, and about half of an ML-DSA-65
//! verification depends on the key alone (ExpandA, the NTT of t1·2^d and tr, FIPS 204
//! Algorithm 8 lines 5, 9 and 6). So the cache also keeps senders' keys prepared ([`mldsa::PreparedKey`],
//! 38 KiB each), at most [`PREPARED_KEYS`] of them by sender address, and verifies with the
//! NTTs on the cache's [`BatchArithmetic`] backend (the node gives it the SIMD CPU backend).
//! A sender's first valid transaction here is verified the plain way and only marks the sender
//! as seen; its second pays the preparation (about 1.2 plain verifications, ExpandA's SHAKE128
//! dominating); each later one only the signature's own work, about 0.4 of a plain
//! verification (the tx bench measures the three). So a one-off sender, or a stream of fresh
//! keys, costs what it did without prepared keys.
//!
//! A key is prepared only for a sender whose address it hashes to and that has signed a valid
//! transaction here before (so forgeries in fresh names never reach it); it is used only for a
//! transaction of that sender and for the very key the caller holds (a byte comparison), so a
//! use skips hashing the key.
//! Eviction is CLOCK (second chance): a sender seen since the hand last passed stays.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use quasar_crypto::accel::{BatchArithmetic, CpuBackend};
use quasar_crypto::hash::Hash;
use quasar_crypto::mldsa::{self, MlDsa65, PreparedKey};

use crate::tx::{address_of, Address, SignedTransaction, TxError};

/// Most prepared keys a cache keeps (about 38 KiB each: 38 MiB in all).
pub const PREPARED_KEYS: usize = 1024;

/// Senders remembered as seen once, per prepared key kept (32 bytes each).
const SEEN_PER_KEY: usize = 4;

/// Prepared keys by sender address, with CLOCK's reference bits and hand (the queue's front).
struct PreparedKeys {
    capacity: usize,
    by_sender: HashMap<Address, (Arc<PreparedKey<MlDsa65>>, bool)>,
    hand: VecDeque<Address>,
    /// Senders with one valid signature checked here and no prepared key, at most
    /// [`SEEN_PER_KEY`] × `capacity`, the oldest forgotten first.
    seen: HashSet<Address>,
    seen_order: VecDeque<Address>,
}

impl PreparedKeys {
    /// An empty set of at most `capacity` keys.
    fn new(capacity: usize) -> PreparedKeys {
        PreparedKeys {
            capacity,
            by_sender: HashMap::new(),
            hand: VecDeque::new(),
            seen: HashSet::new(),
            seen_order: VecDeque::new(),
        }
    }

    /// Whether `sender` has signed a valid transaction here before.
    fn seen(&self, sender: &Address) -> bool {
        self.seen.contains(sender)
    }

    /// Remembers that `sender` signed a valid transaction.
    fn saw(&mut self, sender: Address) {
        if self.seen.insert(sender) {
            self.seen_order.push_back(sender);
        }
        while self.seen.len() > SEEN_PER_KEY * self.capacity.max(1) {
            if let Some(oldest) = self.seen_order.pop_front() {
                self.seen.remove(&oldest);
            }
        }
    }

    /// The key prepared for `sender`, marked as used.
    fn get(&mut self, sender: &Address) -> Option<Arc<PreparedKey<MlDsa65>>> {
        let (key, used) = self.by_sender.get_mut(sender)?;
        *used = true;
        Some(key.clone())
    }

    /// Keeps `key` for `sender`; when full, CLOCK first makes room: the hand clears the mark
    /// of each used key it passes and evicts the first unmarked one.
    fn insert(&mut self, sender: Address, key: Arc<PreparedKey<MlDsa65>>) {
        if let Some(entry) = self.by_sender.get_mut(&sender) {
            *entry = (key, true);
            return;
        }
        while self.by_sender.len() >= self.capacity.max(1) {
            let Some(oldest) = self.hand.pop_front() else {
                break;
            };
            match self.by_sender.get_mut(&oldest) {
                Some((_, used)) if *used => {
                    *used = false;
                    self.hand.push_back(oldest);
                }
                _ => {
                    self.by_sender.remove(&oldest);
                }
            }
        }
        self.by_sender.insert(sender, (key, false));
        self.hand.push_back(sender);
    }
}

/// Remembered verdicts, in insertion order for eviction.
#[derive(Default)]
struct Verdicts {
    by_key: HashMap<Hash, bool>,
    order: VecDeque<Hash>,
}

/// A bounded, thread-safe cache of signature verdicts for one chain.
pub struct VerificationCache {
    chain_id: u64,
    verdicts: Mutex<Verdicts>,
    capacity: usize,
    hits: AtomicU64,
    misses: AtomicU64,
    keys: Mutex<PreparedKeys>,
    arithmetic: Arc<dyn BatchArithmetic>,
}

impl VerificationCache {
    /// A cache for chain `chain_id` of at most `capacity` verdicts (at least 1), verifying with
    /// the reference NTT ([`CpuBackend`]); see [`VerificationCache::with_arithmetic`].
    pub fn new(chain_id: u64, capacity: usize) -> VerificationCache {
        VerificationCache {
            chain_id,
            verdicts: Mutex::new(Verdicts::default()),
            capacity: capacity.max(1),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            keys: Mutex::new(PreparedKeys::new(PREPARED_KEYS)),
            arithmetic: Arc::new(CpuBackend),
        }
    }

    /// The same cache verifying with the NTTs on `arithmetic` (verdicts do not depend on it).
    pub fn with_arithmetic(mut self, arithmetic: Arc<dyn BatchArithmetic>) -> VerificationCache {
        self.arithmetic = arithmetic;
        self
    }

    /// The most verdicts it keeps.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// (hits, misses) so far.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }

    /// How many senders' keys are prepared now (at most [`PREPARED_KEYS`]).
    pub fn prepared_keys(&self) -> usize {
        self.keys.lock().map_or(0, |keys| keys.by_sender.len())
    }

    /// [`SignedTransaction::verify`] for this cache's chain, answered from the cache when this
    /// transaction was judged before. `key` is the one the caller holds for the transaction's
    /// sender (carried in its first transaction, or kept in state); it is only consulted on a
    /// miss.
    ///
    /// Errors: as [`SignedTransaction::verify`]. Only signature verdicts are remembered (a
    /// cached refusal is [`TxError::BadSignature`]): a wrong chain or key is refused before the
    /// signature is looked at, and a hit means this exact (transaction, key, chain) passed those
    /// checks before.
    pub fn verify(
        &self,
        tx: &SignedTransaction,
        key: &mldsa::PublicKey<MlDsa65>,
    ) -> Result<(), TxError> {
        let cache_key = *tx.hash();
        let cached = self
            .verdicts
            .lock()
            .ok()
            .and_then(|v| v.by_key.get(&cache_key).copied());
        if let Some(valid) = cached {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return if valid {
                Ok(())
            } else {
                Err(TxError::BadSignature)
            };
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let verdict = self.check_signature(tx, key);
        // Only the signature's verdict is remembered: a wrong chain or key is refused by the
        // cheap checks before the signature is looked at.
        let valid = match &verdict {
            Ok(()) => true,
            Err(TxError::BadSignature) => false,
            Err(_) => return verdict,
        };
        if let Ok(mut verdicts) = self.verdicts.lock() {
            if verdicts.by_key.insert(cache_key, valid).is_none() {
                verdicts.order.push_back(cache_key);
            }
            while verdicts.order.len() > self.capacity {
                if let Some(oldest) = verdicts.order.pop_front() {
                    verdicts.by_key.remove(&oldest);
                }
            }
        }
        verdict
    }

    /// [`SignedTransaction::verify`] through the sender's prepared key: found by address and
    /// compared with `key`, or prepared now when `key` hashes to the sender.
    fn check_signature(
        &self,
        tx: &SignedTransaction,
        key: &mldsa::PublicKey<MlDsa65>,
    ) -> Result<(), TxError> {
        let sender = tx.transaction().sender;
        let found = self.keys.lock().ok().and_then(|mut keys| keys.get(&sender));
        let prepared = match found {
            Some(prepared) if prepared.public_key() == key => prepared,
            // Another key under this address: the plain check names the error.
            Some(_) => return tx.verify(self.chain_id, key),
            None => {
                if address_of(key) != sender {
                    return tx.verify(self.chain_id, key);
                }
                let again = self.keys.lock().is_ok_and(|keys| keys.seen(&sender));
                if !again {
                    // A first valid signature only marks the sender: a one-off sender costs
                    // one plain verification, as it would without the cache.
                    let verdict = tx.verify_known_key(self.chain_id, key);
                    if verdict.is_ok() {
                        if let Ok(mut keys) = self.keys.lock() {
                            keys.saw(sender);
                        }
                    }
                    return verdict;
                }
                // The sender signed validly before and `key` hashes to its address: the key
                // is kept whatever this signature's verdict, so forged transactions in a seen
                // sender's name do not prepare it again and again.
                let prepared = Arc::new(PreparedKey::new(key, &*self.arithmetic));
                if let Ok(mut keys) = self.keys.lock() {
                    keys.insert(sender, prepared.clone());
                }
                prepared
            }
        };
        tx.verify_prepared(self.chain_id, &prepared, &*self.arithmetic)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quasar_crypto::mldsa::SecretKey;

    #[test]
    fn clock_keeps_a_key_used_since_the_hand_passed() {
        let prepared = |seed: u8| {
            Arc::new(PreparedKey::new(
                SecretKey::<MlDsa65>::from_seed(&[seed; 32]).public_key(),
                &CpuBackend,
            ))
        };
        let mut keys = PreparedKeys::new(2);
        keys.insert([1; 32], prepared(1));
        keys.insert([2; 32], prepared(2));
        assert!(keys.get(&[1; 32]).is_some());
        // Full: 1 was used, so it gets a second chance and 2 goes.
        keys.insert([3; 32], prepared(3));
        assert!(keys.get(&[2; 32]).is_none());
        assert_eq!(keys.by_sender.len(), 2);
        // Both marked: the hand (at 1, then 3) clears both and evicts the first it meets again,
        // 1; the new key is not the one evicted.
        assert!(keys.get(&[3; 32]).is_some());
        assert!(keys.get(&[1; 32]).is_some());
        keys.insert([4; 32], prepared(4));
        assert_eq!(keys.by_sender.len(), 2);
        assert!(keys.get(&[4; 32]).is_some());
        assert!(keys.get(&[3; 32]).is_some());
        assert!(keys.get(&[1; 32]).is_none());
    }
}
