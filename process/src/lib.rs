//! What the `quasar-node` and `thresholdd` processes share: logging, the tokio runtime, the
//! shutdown signal, the wall clock and the one-process-per-data-directory lock (this module);
//! [`build_info`]: version, commit and profile, and the process metrics both export;
//! [`http_serve`]: the bounded HTTP/1.1 listener behind the node's API and the daemon's JSON-RPC;
//! [`LimitedListener`]: a connection-bounded listener for `axum::serve`.
//! Nothing here knows consensus or keys.

pub mod build_info;
pub mod http_serve;
mod limited_listener;

pub use limited_listener::{LimitedListener, LimitedStream};

use std::path::{Path, PathBuf};

/// How a binary writes its log lines to stderr (`--log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event (colours on a terminal).
    #[default]
    Text,
    /// One JSON object per line (tracing-subscriber's JSON format: `timestamp`, `level`,
    /// `fields`, `target`, `span`), for log collectors.
    Json,
}

/// Logs to stderr in `format`, filtered by `RUST_LOG` (`default_filter` when it is unset or
/// invalid, in `RUST_LOG`'s syntax: `info`, `off`, …).
pub fn init_tracing(format: LogFormat, default_filter: &str) {
    let mut filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    // arkworks opens a span per gadget call and its constraint system captures the span stack
    // of every constraint while a subscriber listens: tens of GB for the rollup circuit.
    if let Ok(off) = "gr1cs=off".parse() {
        filter = filter.add_directive(off);
    }
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
        LogFormat::Json => builder.json().with_current_span(true).init(),
    }
}

/// The wall clock in microseconds since the Unix epoch (0 if the clock is before 1970, `u64::MAX`
/// past the year 586,912): the timestamps of blocks, finality times and log lines.
pub fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The multi-threaded tokio runtime of a binary.
pub fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))
}

/// Resolves on SIGINT or SIGTERM.
pub async fn interrupted() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}

/// Why [`lock_dir`] could not take a data directory's lock.
#[derive(Debug, thiserror::Error)]
pub enum DirLockError {
    /// Another process (or another open of the file in this one) holds the lock: a second
    /// daemon on one directory would share signing guards and could sign conflicting votes.
    #[error("{} is in use (another process holds {})", dir.display(), lock_file.display())]
    InUse {
        /// The data directory.
        dir: PathBuf,
        /// The lock file in it.
        lock_file: PathBuf,
    },
    /// The lock file could not be created, opened or locked.
    #[error("{}: {source}", path.display())]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// Takes an exclusive advisory lock (`flock`, through `File::try_lock`) on `dir/file_name`,
/// creating the file (never truncating it) but not `dir`; the lock lasts until the returned file
/// is dropped or the process ends, however it ends. Does not wait. Errors:
/// [`DirLockError::InUse`] when the lock is held elsewhere, [`DirLockError::Io`] naming the
/// file otherwise.
pub fn lock_dir(dir: &Path, file_name: &str) -> Result<std::fs::File, DirLockError> {
    let path = dir.join(file_name);
    let io = |source| DirLockError::Io {
        path: path.clone(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(DirLockError::InUse {
            dir: dir.to_path_buf(),
            lock_file: path,
        }),
        Err(std::fs::TryLockError::Error(source)) => Err(io(source)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_locked_directory_is_refused_until_the_holder_drops_its_lock() {
        let dir = tempfile::tempdir().unwrap();
        let held = lock_dir(dir.path(), "x.lock").unwrap();
        match lock_dir(dir.path(), "x.lock") {
            Err(DirLockError::InUse { dir: d, lock_file }) => {
                assert_eq!(
                    (d.as_path(), lock_file),
                    (dir.path(), dir.path().join("x.lock"))
                )
            }
            other => panic!("expected InUse, got {other:?}"),
        }
        drop(held);
        lock_dir(dir.path(), "x.lock").unwrap();
        // The directory itself is not created.
        let missing = dir.path().join("absent");
        assert!(matches!(
            lock_dir(&missing, "x.lock"),
            Err(DirLockError::Io { .. })
        ));
        assert!(!missing.exists());
    }
}
