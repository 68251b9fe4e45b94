//! The verification-result cache: a transaction's signature is checked once per node.
//!
//! A transaction is verified when it enters the mempool; the block that carries it is verified
//! when proposed and executed when finalized. Each of those would check the same ML-DSA-65
//! signature again (about 75 µs each in our baseline build). The cache remembers the verdict.
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

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use quasar_crypto::hash::Hash;
use quasar_crypto::mldsa::{self, MlDsa65};

use crate::tx::{SignedTransaction, TxError};

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
}

impl VerificationCache {
    /// A cache for chain `chain_id` of at most `capacity` verdicts (at least 1).
    pub fn new(chain_id: u64, capacity: usize) -> VerificationCache {
        VerificationCache {
            chain_id,
            verdicts: Mutex::new(Verdicts::default()),
            capacity: capacity.max(1),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
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
        let verdict = tx.verify(self.chain_id, key);
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
}
