//! Helpers shared by the storage tests.

use std::path::Path;
use std::time::Duration;

use quasar_storage::SledStore;

/// Runs `open` until it stops failing on sled's file lock: a database dropped a moment ago is
/// still locked until sled's background flusher lets go of it (tens of milliseconds under
/// load), so a test that reopens its store at once may find it locked.
pub fn retry_locked<T, E: std::fmt::Debug>(mut open: impl FnMut() -> Result<T, E>) -> T {
    for _ in 0..250 {
        match open() {
            Ok(value) => return value,
            Err(e) if format!("{e:?}").contains("could not acquire lock") => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("open failed: {e:?}"),
        }
    }
    panic!("still locked after 5 s")
}

/// [`SledStore::open`] on `path`, waiting out the lock of a store dropped just before.
pub fn reopen(path: &Path) -> SledStore {
    retry_locked(|| SledStore::open(path))
}
