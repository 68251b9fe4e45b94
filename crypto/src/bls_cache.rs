//! Pubkey decompression cache (docs/architecture.md §4): decoded BLS public keys by their compressed bytes.
//!
//! Decoding a 48-byte compressed G1 key costs a square root in Fp and a subgroup check (tens of
//! microseconds); a cache hit costs one FNV-1a hash and a 48-byte compare. The cache holds only
//! [`PublicKey`] values, which exist only after KeyValidate ([`PublicKey::from_bytes`]) or key
//! generation, so an entry is always a subgroup-checked, non-identity key: a hit never skips a
//! check that a miss would have made.
//!
//! # Layout
//!
//! - [`BUCKETS`] = 2048 buckets × [`WAYS`] = 2 ways = 4096 slots, a fixed ~0.6 MB that never grows,
//!   whatever the input.
//! - Bucket index: FNV-1a-64 (Fowler–Noll–Vo, 64-bit offset basis and prime) of the 48 compressed
//!   bytes, reduced mod 2048. A hit compares all 48 bytes, so a hash collision is never mistaken
//!   for the key.
//! - Eviction: one bit per bucket names the way to replace next; inserting into a full bucket
//!   replaces that way and flips the bit (round robin, which with two ways is first-in first-out).
//!   Empty ways are filled first and do not move the bit.
//!
//! # Concurrency
//!
//! Each bucket has its own `RwLock`: lookups of different buckets never contend, and lookups of
//! one bucket share a read lock. Writers (insertions) take one bucket's write lock. The hit, miss
//! and eviction counters are relaxed atomics, so no lookup waits for a global lock. No code runs
//! under a bucket lock that can panic, so the locks are never poisoned in practice; a poisoned
//! lock is still used (its data is a plain array of keys and is always consistent).
//!
//! # Adversarial inputs
//!
//! FNV is not a keyed hash: someone who can get many valid keys looked up can pick keys that share
//! a bucket and make them evict each other. The cost is bounded: lookups stay O(1), memory is
//! fixed, and the worst case is the decode cost the cache exists to save, never a wrong key.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{PoisonError, RwLock};

use crate::bls::{BlsError, PublicKey, PUBLIC_KEY_LEN};

/// Number of buckets (docs/architecture.md §4).
pub const BUCKETS: usize = 2048;
/// Ways (slots) per bucket (docs/architecture.md §4).
pub const WAYS: usize = 2;

/// FNV-1a 64-bit offset basis.
const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV-1a 64-bit prime.
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a-64 of `bytes`.
fn fnv1a_64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(FNV_OFFSET_BASIS, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(FNV_PRIME)
    })
}

/// The bucket of a compressed key: FNV-1a-64 of its 48 bytes, mod [`BUCKETS`].
fn bucket_index(bytes: &[u8; PUBLIC_KEY_LEN]) -> usize {
    // BUCKETS is a power of two, so the low bits of the hash select the bucket.
    (fnv1a_64(bytes) % BUCKETS as u64) as usize
}

// The round-robin state is one bit, which names one of exactly two ways.
const _: () = assert!(WAYS == 2);

/// One bucket: its ways and the round-robin bit naming the way to evict next.
#[derive(Default)]
struct Bucket {
    ways: [Option<PublicKey>; WAYS],
    /// `false`: evict way 0 next; `true`: way 1.
    evict_second: bool,
}

impl Bucket {
    fn find(&self, bytes: &[u8; PUBLIC_KEY_LEN]) -> Option<PublicKey> {
        self.ways
            .iter()
            .flatten()
            .find(|key| key.to_bytes() == *bytes)
            .copied()
    }
}

/// Counter values of a [`PublicKeyCache`], each a running total since the cache was created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups that found the key.
    pub hits: u64,
    /// Lookups that did not find the key (whether or not it was then decoded and inserted).
    pub misses: u64,
    /// Insertions that replaced another key.
    pub evictions: u64,
}

/// A fixed-size, thread-safe cache of decoded BLS public keys (see the module docs). Share it
/// across threads behind an `Arc`.
pub struct PublicKeyCache {
    buckets: Box<[RwLock<Bucket>]>,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
}

impl Default for PublicKeyCache {
    fn default() -> Self {
        PublicKeyCache::new()
    }
}

impl std::fmt::Debug for PublicKeyCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PublicKeyCache")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl PublicKeyCache {
    /// An empty cache of [`BUCKETS`] × [`WAYS`] slots.
    pub fn new() -> PublicKeyCache {
        PublicKeyCache {
            buckets: (0..BUCKETS).map(|_| RwLock::default()).collect(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        }
    }

    /// The bucket of `bytes`. Always `Some` (the index is below `BUCKETS`, the slice length);
    /// the `Option` only spares an indexing panic path.
    fn bucket(&self, bytes: &[u8; PUBLIC_KEY_LEN]) -> Option<&RwLock<Bucket>> {
        self.buckets.get(bucket_index(bytes))
    }

    /// Looks up the key whose 48-byte compressed encoding is `bytes`; counts a hit or a miss.
    pub fn get(&self, bytes: &[u8; PUBLIC_KEY_LEN]) -> Option<PublicKey> {
        let found = self.bucket(bytes).and_then(|bucket| {
            bucket
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .find(bytes)
        });
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Inserts a validated key. A key already present is left in place (no eviction); otherwise
    /// an empty way is filled, or the way named by the bucket's round-robin bit is replaced
    /// (counted as an eviction) and the bit flips.
    pub fn insert(&self, key: PublicKey) {
        let bytes = key.to_bytes();
        let Some(lock) = self.bucket(&bytes) else {
            return;
        };
        let mut bucket = lock.write().unwrap_or_else(PoisonError::into_inner);
        if bucket.find(&bytes).is_some() {
            return;
        }
        if let Some(empty) = bucket.ways.iter_mut().find(|way| way.is_none()) {
            *empty = Some(key);
            return;
        }
        let victim = usize::from(bucket.evict_second);
        if let Some(way) = bucket.ways.get_mut(victim) {
            *way = Some(key);
        }
        bucket.evict_second = !bucket.evict_second;
        self.evictions.fetch_add(1, Ordering::Relaxed);
    }

    /// The key encoded by `bytes`: from the cache on a hit; on a miss decoded with
    /// [`PublicKey::from_bytes`] (KeyValidate, draft-irtf-cfrg-bls-signature-05 §2.5) and, if
    /// valid, inserted.
    ///
    /// Errors: those of [`PublicKey::from_bytes`] ([`BlsError::InvalidLength`] unless exactly 48
    /// bytes, then [`BlsError::InvalidEncoding`], [`BlsError::NotInSubgroup`],
    /// [`BlsError::IdentityPoint`]). A wrong length is refused before the lookup and counts as
    /// neither hit nor miss; an invalid key counts as a miss and is never inserted.
    pub fn get_or_decode(&self, bytes: &[u8]) -> Result<PublicKey, BlsError> {
        let array: &[u8; PUBLIC_KEY_LEN] =
            bytes.try_into().map_err(|_| BlsError::InvalidLength {
                expected: PUBLIC_KEY_LEN,
                got: bytes.len(),
            })?;
        if let Some(key) = self.get(array) {
            return Ok(key);
        }
        let key = PublicKey::from_bytes(array)?;
        self.insert(key);
        Ok(key)
    }

    /// The hit, miss and eviction counters (for `/metrics`).
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
        }
    }

    /// Number of occupied slots, at most [`BUCKETS`] × [`WAYS`]. Walks every bucket: for metrics
    /// and tests, not for the hot path.
    pub fn len(&self) -> usize {
        self.buckets
            .iter()
            .map(|b| {
                b.read()
                    .unwrap_or_else(PoisonError::into_inner)
                    .ways
                    .iter()
                    .flatten()
                    .count()
            })
            .sum()
    }

    /// Whether no slot is occupied.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bls::SecretKey;
    use std::collections::HashMap;
    use std::sync::Arc;

    fn key(seed: u32) -> PublicKey {
        let mut ikm = [0u8; 32];
        ikm[..4].copy_from_slice(&seed.to_le_bytes());
        SecretKey::from_seed(&ikm).public_key()
    }

    /// Keys from consecutive seeds until `count` of them share one bucket (birthday search; a
    /// few hundred keys for three, deterministic).
    fn colliding_keys(count: usize) -> Vec<PublicKey> {
        let mut by_bucket: HashMap<usize, Vec<PublicKey>> = HashMap::new();
        for seed in 0.. {
            let k = key(seed);
            let same = by_bucket.entry(bucket_index(&k.to_bytes())).or_default();
            same.push(k);
            if same.len() == count {
                return same.clone();
            }
        }
        unreachable!()
    }

    #[test]
    fn fnv1a_64_matches_reference_values() {
        // Reference values of the FNV-1a 64-bit test suite (Fowler/Noll/Vo).
        assert_eq!(fnv1a_64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a_64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a_64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn miss_then_hit_with_counters() {
        let cache = PublicKeyCache::new();
        let k = key(1);
        assert!(cache.is_empty());
        assert_eq!(cache.get(&k.to_bytes()), None);
        assert_eq!(cache.get_or_decode(&k.to_bytes()), Ok(k));
        assert_eq!(cache.get_or_decode(&k.to_bytes()), Ok(k));
        assert_eq!(cache.get(&k.to_bytes()), Some(k));
        assert_eq!(
            cache.stats(),
            CacheStats {
                hits: 2,
                misses: 2,
                evictions: 0
            }
        );
        assert_eq!(cache.len(), 1);
        // Inserting a key that is present changes nothing.
        cache.insert(k);
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.stats().evictions, 0);
    }

    #[test]
    fn invalid_bytes_are_refused_and_never_cached() {
        let cache = PublicKeyCache::new();
        let mut infinity = [0u8; PUBLIC_KEY_LEN];
        infinity[0] = 0xc0;
        assert_eq!(cache.get_or_decode(&infinity), Err(BlsError::IdentityPoint));
        assert_eq!(
            cache.get_or_decode(&[0u8; 47]),
            Err(BlsError::InvalidLength {
                expected: 48,
                got: 47
            })
        );
        // x = 0 with the compression flag: the point (0, 2) of order 3, on the curve but
        // outside G1.
        let mut order_three = [0u8; PUBLIC_KEY_LEN];
        order_three[0] = 0x80;
        assert_eq!(
            cache.get_or_decode(&order_three),
            Err(BlsError::NotInSubgroup)
        );
        assert!(cache.is_empty());
        // The length error is not a lookup; the two well-sized invalid keys are misses.
        assert_eq!(cache.stats().misses, 2);
        assert_eq!(cache.stats().hits, 0);
    }

    /// With three keys in one bucket the ways are replaced first-in first-out, each replacement
    /// counts one eviction, and an evicted key is a miss until it is inserted again.
    #[test]
    fn round_robin_eviction_within_a_bucket() {
        let [a, b, c]: [PublicKey; 3] = colliding_keys(3).try_into().unwrap();
        let cache = PublicKeyCache::new();
        cache.insert(a);
        cache.insert(b);
        assert_eq!(cache.stats().evictions, 0, "empty ways fill first");
        assert_eq!(cache.get(&a.to_bytes()), Some(a));
        assert_eq!(cache.get(&b.to_bytes()), Some(b));

        cache.insert(c); // replaces way 0 (a), bit -> 1
        assert_eq!(cache.stats().evictions, 1);
        assert_eq!(cache.get(&a.to_bytes()), None);
        assert_eq!(cache.get(&b.to_bytes()), Some(b));
        assert_eq!(cache.get(&c.to_bytes()), Some(c));

        cache.insert(a); // replaces way 1 (b), bit -> 0
        assert_eq!(cache.get(&b.to_bytes()), None);
        assert_eq!(cache.get(&c.to_bytes()), Some(c));
        assert_eq!(cache.get(&a.to_bytes()), Some(a));

        cache.insert(b); // replaces way 0 (c)
        assert_eq!(cache.get(&c.to_bytes()), None);
        assert_eq!(cache.get(&a.to_bytes()), Some(a));
        assert_eq!(cache.get(&b.to_bytes()), Some(b));
        assert_eq!(cache.stats().evictions, 3);
        assert_eq!(cache.len(), 2, "a bucket never holds more than its ways");
    }

    /// Keys in other buckets are untouched by a bucket's evictions.
    #[test]
    fn eviction_is_per_bucket() {
        let same = colliding_keys(3);
        let other = (1000..)
            .map(key)
            .find(|k| bucket_index(&k.to_bytes()) != bucket_index(&same[0].to_bytes()))
            .unwrap();
        let cache = PublicKeyCache::new();
        cache.insert(other);
        for k in &same {
            cache.insert(*k);
        }
        assert_eq!(cache.get(&other.to_bytes()), Some(other));
        assert_eq!(cache.stats().evictions, 1);
    }

    /// Many threads decode and look up overlapping keys at once: every answer is the right key,
    /// and every lookup is counted exactly once as a hit or a miss.
    #[test]
    fn concurrent_lookups_and_inserts() {
        const THREADS: usize = 8;
        const ROUNDS: usize = 5;
        let keys: Arc<Vec<PublicKey>> = Arc::new((0..64).map(key).collect());
        let cache = Arc::new(PublicKeyCache::new());
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let keys = keys.clone();
                let cache = cache.clone();
                std::thread::spawn(move || {
                    for round in 0..ROUNDS {
                        for i in 0..keys.len() {
                            // Each thread walks the keys from its own offset.
                            let k = &keys[(i + t * 7 + round) % keys.len()];
                            assert_eq!(cache.get_or_decode(&k.to_bytes()), Ok(*k));
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let stats = cache.stats();
        let lookups = (THREADS * ROUNDS * keys.len()) as u64;
        assert_eq!(stats.hits + stats.misses, lookups);
        // Each key misses at least once and at most once per thread (racing first decodes).
        assert!(stats.misses >= keys.len() as u64);
        assert!(stats.misses <= (keys.len() * THREADS) as u64);
        // 64 keys in 2048 buckets: whatever collided, every key that is cached is correct.
        for k in keys.iter() {
            if let Some(found) = cache.get(&k.to_bytes()) {
                assert_eq!(found, *k);
            }
        }
        assert!(cache.len() <= keys.len());
    }
}
