//! Encoded blocks as files, one per block, beside the sled index (docs/architecture.md §6).
//!
//! A block with its transactions is megabytes (500 ML-DSA-65 transfers are about 1.7 MB). sled
//! keeps values inside its B-tree leaves, up to 16 entries per leaf, and rewrites a whole leaf when
//! it consolidates or splits one, and again when its log cleaner moves it: a block stored in
//! sled is copied many times over its life. Measured on a validator at 2,000 transfers/s, those
//! copies (`sled::pagecache::blob_io::write_blob` and the page faults of their buffers) took about
//! a fifth of the process's CPU. So the block store keeps each encoded block in a file of its own,
//! written once, and sled's `blocks` tree keeps only its [`FileIndex`]: its length and checksum.
//!
//! # Layout and crash safety
//!
//! The directory holds one file per block, named by the block hash in lowercase hex (64
//! characters). The order of writes keeps the index from ever naming a file that is not whole:
//!
//! - **write**: the file is written and, for a durable store, synced with its directory entry
//!   ([`BlockFiles::put`]) before the caller inserts the index entry; a crash before that leaves
//!   a file without an index entry, which a later `put` of the same block overwrites;
//! - **delete**: [`BlockFiles::remove_after_flush`] only queues the file; the store deletes the
//!   queued files in its flush, after sled made the index removals durable
//!   ([`BlockFiles::delete_queued`]). A crash in between leaves files no index entry names: disk
//!   space, never a dangling index.
//!
//! A read checks the file's length against the index before it allocates, and the bytes' CRC-32
//! against the index after: a file that is missing, shorter or longer than recorded, damaged in
//! place, or another block's file is [`StoreError::Corrupt`], never served. (A checksum, not a
//! hash: it catches a damaged disk or a misplaced file, not a forger with write access to the
//! data directory, who could as well rewrite the index.)

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use quasar_crypto::hash::Hash;

use crate::store::{hex_string, StoreError};

/// Largest block file read back: the transport's 16 MiB frame bounds every block a node stores.
pub(crate) const MAX_BLOCK_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// What sled's `blocks` tree holds for a block file: its length and the CRC-32 (ISO-HDLC, as
/// `crc32fast` computes it) of its bytes; 12 bytes, both big-endian.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileIndex {
    /// Bytes in the file.
    pub(crate) len: u64,
    /// CRC-32 of them.
    pub(crate) crc: u32,
}

impl FileIndex {
    /// Encoded length.
    pub(crate) const LEN: usize = 12;

    /// The index entry of `block`.
    pub(crate) fn of(block: &[u8]) -> FileIndex {
        FileIndex {
            len: block.len() as u64,
            crc: crc32fast::hash(block),
        }
    }

    /// The 12-byte encoding.
    pub(crate) fn to_bytes(self) -> [u8; FileIndex::LEN] {
        let mut out = [0u8; FileIndex::LEN];
        let (len, crc) = out.split_at_mut(8);
        len.copy_from_slice(&self.len.to_be_bytes());
        crc.copy_from_slice(&self.crc.to_be_bytes());
        out
    }

    /// Decodes a 12-byte entry (`None` for any other length).
    pub(crate) fn from_bytes(bytes: &[u8]) -> Option<FileIndex> {
        let bytes = <[u8; FileIndex::LEN]>::try_from(bytes).ok()?;
        let (len, crc) = bytes.split_at(8);
        Some(FileIndex {
            len: u64::from_be_bytes(len.try_into().ok()?),
            crc: u32::from_be_bytes(crc.try_into().ok()?),
        })
    }
}

/// The directory of block files of one store.
#[derive(Debug)]
pub(crate) struct BlockFiles {
    dir: PathBuf,
    /// Whether writes are synced (a temporary store skips it: nothing there needs durability).
    durable: bool,
    /// Files whose index entries were removed, deleted at the next flush.
    queued: Mutex<Vec<Hash>>,
    /// Keeps a temporary store's directory alive; deleted with the store.
    _temporary: Option<tempfile::TempDir>,
}

/// An I/O failure of the block files, as the store reports it (fatal, like a sled failure).
fn io_error(what: &str, path: &Path, error: std::io::Error) -> StoreError {
    StoreError::Files(format!("{what} {}: {error}", path.display()))
}

impl BlockFiles {
    /// The block files in `dir` (created if missing), synced on write.
    ///
    /// Errors: [`StoreError::Files`] when the directory cannot be created.
    pub(crate) fn open(dir: PathBuf) -> Result<BlockFiles, StoreError> {
        fs::create_dir_all(&dir).map_err(|e| io_error("creating", &dir, e))?;
        Ok(BlockFiles {
            dir,
            durable: true,
            queued: Mutex::new(Vec::new()),
            _temporary: None,
        })
    }

    /// Block files in a new temporary directory, deleted on drop, never synced.
    ///
    /// Errors: [`StoreError::Files`] when the directory cannot be created.
    pub(crate) fn temporary() -> Result<BlockFiles, StoreError> {
        let temporary = tempfile::Builder::new()
            .prefix("quasar-blocks-")
            .tempdir()
            .map_err(|e| io_error("creating", &std::env::temp_dir(), e))?;
        Ok(BlockFiles {
            dir: temporary.path().to_path_buf(),
            durable: false,
            queued: Mutex::new(Vec::new()),
            _temporary: Some(temporary),
        })
    }

    fn path(&self, hash: &Hash) -> PathBuf {
        self.dir.join(hex_string(hash))
    }

    /// Writes `block` as the file of `hash` (replacing what a crash may have left there) and,
    /// for a durable store, syncs it and the directory entry.
    ///
    /// Errors: [`StoreError::Files`].
    pub(crate) fn put(&self, hash: &Hash, block: &[u8]) -> Result<(), StoreError> {
        // Stored again before a flush deleted it: it stays.
        if let Ok(mut queued) = self.queued.lock() {
            queued.retain(|queued| queued != hash);
        }
        let path = self.path(hash);
        let mut file = File::create(&path).map_err(|e| io_error("creating", &path, e))?;
        file.write_all(block)
            .map_err(|e| io_error("writing", &path, e))?;
        if self.durable {
            file.sync_all().map_err(|e| io_error("syncing", &path, e))?;
            File::open(&self.dir)
                .and_then(|dir| dir.sync_all())
                .map_err(|e| io_error("syncing", &self.dir, e))?;
        }
        Ok(())
    }

    /// The file of `hash`, which the index says is `index`.
    ///
    /// Errors: [`StoreError::Corrupt`] when it is missing, has another length (checked before
    /// reading, and never above [`MAX_BLOCK_FILE_BYTES`]) or another checksum;
    /// [`StoreError::Files`] when reading fails.
    pub(crate) fn get(&self, hash: &Hash, index: FileIndex) -> Result<Vec<u8>, StoreError> {
        let path = self.path(hash);
        let len = index.len;
        let corrupt = |found: &str| {
            StoreError::Corrupt(format!(
                "block file {} {found}, but the index records {len} bytes with CRC-32 {:08x}: \
                 the file is damaged or another block's",
                path.display(),
                index.crc
            ))
        };
        let mut file = match OpenOptions::new().read(true).open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == ErrorKind::NotFound => return Err(corrupt("is missing")),
            Err(e) => return Err(io_error("opening", &path, e)),
        };
        let found = file
            .metadata()
            .map_err(|e| io_error("reading the length of", &path, e))?
            .len();
        if found != len || len > MAX_BLOCK_FILE_BYTES {
            return Err(corrupt(&format!("holds {found} bytes")));
        }
        let mut block = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
        file.read_to_end(&mut block)
            .map_err(|e| io_error("reading", &path, e))?;
        let found = FileIndex::of(&block);
        if found != index {
            return Err(corrupt(&format!(
                "holds {} bytes with CRC-32 {:08x}",
                found.len, found.crc
            )));
        }
        Ok(block)
    }

    /// Queues the file of `hash` for deletion at the next [`BlockFiles::delete_queued`].
    pub(crate) fn remove_after_flush(&self, hashes: impl IntoIterator<Item = Hash>) {
        if let Ok(mut queued) = self.queued.lock() {
            queued.extend(hashes);
        }
    }

    /// Deletes the queued files (call once the index removals are durable). A file already gone
    /// is not an error.
    ///
    /// Errors: [`StoreError::Files`] (the files not deleted stay queued).
    pub(crate) fn delete_queued(&self) -> Result<(), StoreError> {
        let Ok(mut queued) = self.queued.lock() else {
            return Err(StoreError::Files(
                "the deletion queue's lock is poisoned".into(),
            ));
        };
        while let Some(hash) = queued.last() {
            let path = self.path(hash);
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(io_error("deleting", &path, e)),
            }
            queued.pop();
        }
        Ok(())
    }

    /// How many block files the directory holds (tests and diagnostics).
    ///
    /// Errors: [`StoreError::Files`] when the directory cannot be listed.
    pub(crate) fn count(&self) -> Result<usize, StoreError> {
        let entries = fs::read_dir(&self.dir).map_err(|e| io_error("listing", &self.dir, e))?;
        Ok(entries
            .filter_map(Result::ok)
            .filter(|e| e.file_name().len() == 64)
            .count())
    }
}
