//! A bounded per-key rate limiter for WARN lines that a remote party can trigger at will
//! (rejected handshakes, refused connections).
//!
//! Without it an unpinned node retrying every 50 ms made the server write ~20 WARN lines a second
//! per attacker address. Every event is still counted in the metrics; only the log line is
//! limited: the first event of a key in each [`WarnLimiter::interval`] is a WARN carrying how many
//! were suppressed since, the rest go to DEBUG.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One WARN per key per this interval.
pub(crate) const WARN_INTERVAL: Duration = Duration::from_secs(60);

/// Most keys remembered. When full, entries older than the interval are forgotten; if it is still
/// full (a flood from many addresses), events of new keys are logged at DEBUG only.
pub(crate) const MAX_KEYS: usize = 1024;

/// Decides, per key, whether an event may be logged at WARN now.
#[derive(Debug)]
pub(crate) struct WarnLimiter<K> {
    interval: Duration,
    capacity: usize,
    entries: Mutex<HashMap<K, Entry>>,
}

#[derive(Debug)]
struct Entry {
    last_warn: Instant,
    suppressed: u64,
}

impl<K: Hash + Eq + Clone> WarnLimiter<K> {
    /// A limiter allowing one WARN per key per `interval`, remembering at most `capacity` keys.
    pub(crate) fn new(interval: Duration, capacity: usize) -> Self {
        WarnLimiter {
            interval,
            capacity,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// `Some(suppressed)`: log this event at WARN, mentioning the `suppressed` events of `key`
    /// logged at DEBUG since the previous WARN. `None`: log it at DEBUG.
    pub(crate) fn check(&self, key: &K, now: Instant) -> Option<u64> {
        let mut entries = match self.entries.lock() {
            Ok(entries) => entries,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(entry) = entries.get_mut(key) {
            if now.saturating_duration_since(entry.last_warn) >= self.interval {
                let suppressed = std::mem::take(&mut entry.suppressed);
                entry.last_warn = now;
                return Some(suppressed);
            }
            entry.suppressed = entry.suppressed.saturating_add(1);
            return None;
        }
        if entries.len() >= self.capacity {
            let interval = self.interval;
            entries.retain(|_, e| now.saturating_duration_since(e.last_warn) < interval);
            if entries.len() >= self.capacity {
                return None;
            }
        }
        entries.insert(
            key.clone(),
            Entry {
                last_warn: now,
                suppressed: 0,
            },
        );
        Some(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_warn_per_key_per_interval_with_the_suppressed_count() {
        let limiter = WarnLimiter::new(Duration::from_secs(60), 16);
        let t0 = Instant::now();
        assert_eq!(limiter.check(&"a", t0), Some(0));
        for i in 1..40u64 {
            assert_eq!(
                limiter.check(&"a", t0 + Duration::from_millis(50 * i)),
                None
            );
        }
        assert_eq!(limiter.check(&"b", t0), Some(0), "keys are independent");
        assert_eq!(
            limiter.check(&"a", t0 + Duration::from_secs(60)),
            Some(39),
            "the next WARN reports what was suppressed"
        );
        assert_eq!(limiter.check(&"a", t0 + Duration::from_secs(61)), None);
    }

    #[test]
    fn memory_is_bounded_under_a_flood_of_keys() {
        let limiter = WarnLimiter::new(Duration::from_secs(60), 4);
        let t0 = Instant::now();
        for k in 0..4u32 {
            assert_eq!(limiter.check(&k, t0), Some(0));
        }
        assert_eq!(limiter.check(&99, t0), None, "full: new keys go to DEBUG");
        assert!(limiter.entries.lock().map(|e| e.len()).unwrap_or(0) <= 4);
        // Once the old entries expire, room is made again.
        assert_eq!(limiter.check(&99, t0 + Duration::from_secs(61)), Some(0));
    }
}
