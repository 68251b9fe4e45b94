//! Durable evidence of equivocation (docs/architecture.md §2: equivocation is recorded as evidence, never a
//! crash, §6 "evidence").
//!
//! # What is stored
//!
//! One [`EvidenceRecord`] per (view, signer, kind): the kind of violation (a byte code, see
//! [`kind`]), the offending validator's index, the view, and the **two complete encoded ZAP
//! messages** that conflict. Both messages are kept, not a digest or a summary, because together
//! they *are* the proof: anyone holding the offender's public key can decode both and re-verify
//! both signatures, without trusting this node. Storage stays byte-oriented: it never decodes the
//! messages (this crate does not depend on the wire crate); the node encodes them and, at the API,
//! hands them out as hex.
//!
//! # Layout
//!
//! The sled tree `evidence`:
//!
//! | key (13 B)                                  | value                                   |
//! |---------------------------------------------|-----------------------------------------|
//! | view (u64 BE) ‖ signer (u32 BE) ‖ kind (u8) | the record, encoded as below            |
//!
//! Big-endian keys make sled's key order (view, signer, kind) order, so reads are ascending by
//! view and the oldest views are the first keys. The key holds the identity of the offence, so a
//! replayed report (after a restart the core forgets what it has reported) overwrites its record
//! instead of growing the tree.
//!
//! Record, version 1 (all integers big-endian):
//!
//! | field      | bytes | meaning                                              |
//! |------------|-------|------------------------------------------------------|
//! | version    | 1     | [`RECORD_VERSION`]                                   |
//! | kind       | 1     | a [`kind`] code                                      |
//! | signer     | 4     | offender's validator index                           |
//! | view       | 8     | the view                                             |
//! | first_len  | 4     | length of `first`, ≤ [`MAX_EVIDENCE_MESSAGE_LEN`]    |
//! | first      | n     | the first message seen, one encoded ZAP message      |
//! | second_len | 4     | length of `second`, ≤ [`MAX_EVIDENCE_MESSAGE_LEN`]   |
//! | second     | m     | the conflicting message, one encoded ZAP message     |
//!
//! Decoding checks every length against [`MAX_EVIDENCE_MESSAGE_LEN`] and against the bytes that
//! remain before it copies anything, rejects trailing bytes, unknown versions and kinds, and a
//! record whose (view, signer, kind) disagrees with its key: a typed [`EvidenceError`], never a
//! panic.
//!
//! # Bounds
//!
//! Evidence is produced by other (possibly Byzantine) validators, so the log is bounded:
//!
//! - at most [`MAX_EVIDENCE_RECORDS`] (10 000) records;
//! - at most [`MAX_EVIDENCE_BYTES`] (64 MiB) of encoded records in total: a vote is 181 bytes, so
//!   vote evidence never comes near it, but a conflicting proposal can carry two full blocks;
//! - each message at most [`MAX_EVIDENCE_MESSAGE_LEN`] (16 MiB, the wire's largest frame); a
//!   larger record is refused and nothing is written.
//!
//! When a new record takes the log past either bound, records of the **oldest views** are dropped
//! until it fits again (the newest evidence is the most useful to act on). A record older than
//! everything in a full log is therefore not kept. Count and size are tallied in memory, rebuilt by
//! one scan when the store opens.
//!
//! # Durability
//!
//! Evidence rides on sled's normal durability (periodic flush, and every [`crate::Store::flush`]
//! the node does after finalizing). It is not on the safety path: losing the last moments of
//! evidence in a crash loses no safety, and the offender's messages are usually seen again.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::store::StoreError;

/// Version byte of the record encoding described in the module docs.
pub const RECORD_VERSION: u8 = 1;

/// Most evidence records kept; beyond it the oldest views are dropped.
pub const MAX_EVIDENCE_RECORDS: u64 = 10_000;

/// Most bytes of encoded records kept (64 MiB); beyond it the oldest views are dropped.
pub const MAX_EVIDENCE_BYTES: u64 = 64 * 1024 * 1024;

/// Longest message a record may hold (16 MiB, the wire's `MAX_FRAME_LEN`).
pub const MAX_EVIDENCE_MESSAGE_LEN: usize = 16 * 1024 * 1024;

/// Length of an evidence key: view (8) ‖ signer (4) ‖ kind (1).
pub const EVIDENCE_KEY_LEN: usize = 13;

/// Fixed bytes of a record: version, kind, signer, view, and the two length prefixes.
const RECORD_FIXED_LEN: usize = 1 + 1 + 4 + 8 + 4 + 4;

/// Stable byte codes of the kinds of equivocation (the on-disk meaning of
/// [`EvidenceRecord::kind`]). The node maps its consensus `EvidenceKind` onto these.
pub mod kind {
    /// A leader proposed two different blocks in one view (two Proposal messages).
    pub const CONFLICTING_PROPOSAL: u8 = 1;
    /// A validator notarized two different blocks in one view (two notarize Votes).
    pub const CONFLICTING_NOTARIZE: u8 = 2;
    /// A validator finalized two different blocks in one view (two finalize Votes).
    pub const CONFLICTING_FINALIZE: u8 = 3;
    /// A validator signed both finalize and nullify for one view (one of each, in the order
    /// seen).
    pub const FINALIZE_AND_NULLIFY: u8 = 4;

    /// The snake_case name of a kind code (`"conflicting_notarize"`, …), or `None` for a byte
    /// that is not a kind.
    pub fn name(code: u8) -> Option<&'static str> {
        Some(match code {
            CONFLICTING_PROPOSAL => "conflicting_proposal",
            CONFLICTING_NOTARIZE => "conflicting_notarize",
            CONFLICTING_FINALIZE => "conflicting_finalize",
            FINALIZE_AND_NULLIFY => "finalize_and_nullify",
            _ => return None,
        })
    }
}

/// Why an evidence record could not be written or read. Not fatal to the node: evidence is never
/// on the consensus path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvidenceError {
    /// A stored record ends before its fixed fields or before a message it announces. The record
    /// is corrupt.
    #[error("evidence record truncated: needs {needed} bytes, has {available}")]
    Truncated {
        /// Bytes the next field needs.
        needed: usize,
        /// Bytes left in the record.
        available: usize,
    },
    /// A stored record has a version this build cannot read.
    #[error("evidence record version {found} is unknown (expected {RECORD_VERSION})")]
    UnknownVersion {
        /// The version byte found.
        found: u8,
    },
    /// The kind byte is not one of the [`kind`] codes (on write: nothing was written).
    #[error("evidence kind {found} is unknown")]
    UnknownKind {
        /// The kind byte found.
        found: u8,
    },
    /// A message is longer than [`MAX_EVIDENCE_MESSAGE_LEN`] (on write: nothing was written; on
    /// read: the length prefix is corrupt).
    #[error("evidence message of {len} bytes exceeds the {MAX_EVIDENCE_MESSAGE_LEN}-byte bound")]
    MessageTooLarge {
        /// The message length.
        len: usize,
    },
    /// A stored record has bytes after its second message.
    #[error("evidence record has {extra} trailing bytes")]
    TrailingBytes {
        /// How many.
        extra: usize,
    },
    /// A stored record does not match the key it is stored under (or the key is malformed).
    #[error("evidence record does not match its key")]
    KeyMismatch,
}

/// One piece of evidence: a validator signed two conflicting messages in one view.
///
/// Byte-oriented: `first` and `second` are complete encoded ZAP messages that storage does not
/// decode; `kind` is one of the [`kind`] codes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvidenceRecord {
    /// What was violated: a [`kind`] code.
    pub kind: u8,
    /// The offender's validator index.
    pub signer: u32,
    /// The view of both messages.
    pub view: u64,
    /// The first message seen (encoded ZAP message, ≤ [`MAX_EVIDENCE_MESSAGE_LEN`] bytes).
    pub first: Vec<u8>,
    /// The conflicting message (encoded ZAP message, ≤ [`MAX_EVIDENCE_MESSAGE_LEN`] bytes).
    pub second: Vec<u8>,
}

impl EvidenceRecord {
    /// The record's key: view (u64 BE) ‖ signer (u32 BE) ‖ kind (u8).
    pub fn key(&self) -> [u8; EVIDENCE_KEY_LEN] {
        evidence_key(self.view, self.signer, self.kind)
    }

    /// Encodes the record (version [`RECORD_VERSION`], layout in the module docs).
    ///
    /// Errors: [`EvidenceError::UnknownKind`] for a kind outside [`kind`];
    /// [`EvidenceError::MessageTooLarge`] when a message exceeds [`MAX_EVIDENCE_MESSAGE_LEN`].
    pub fn encode(&self) -> Result<Vec<u8>, EvidenceError> {
        if kind::name(self.kind).is_none() {
            return Err(EvidenceError::UnknownKind { found: self.kind });
        }
        let first_len = message_len(&self.first)?;
        let second_len = message_len(&self.second)?;
        let mut out = Vec::with_capacity(RECORD_FIXED_LEN + self.first.len() + self.second.len());
        out.push(RECORD_VERSION);
        out.push(self.kind);
        out.extend_from_slice(&self.signer.to_be_bytes());
        out.extend_from_slice(&self.view.to_be_bytes());
        out.extend_from_slice(&first_len.to_be_bytes());
        out.extend_from_slice(&self.first);
        out.extend_from_slice(&second_len.to_be_bytes());
        out.extend_from_slice(&self.second);
        Ok(out)
    }

    /// Decodes a record encoded by [`EvidenceRecord::encode`]. Never panics, on any input; every
    /// length is checked against [`MAX_EVIDENCE_MESSAGE_LEN`] and the bytes remaining before
    /// anything is copied.
    ///
    /// Errors: [`EvidenceError::Truncated`], [`EvidenceError::UnknownVersion`],
    /// [`EvidenceError::UnknownKind`], [`EvidenceError::MessageTooLarge`],
    /// [`EvidenceError::TrailingBytes`].
    pub fn decode(bytes: &[u8]) -> Result<EvidenceRecord, EvidenceError> {
        let mut r = Reader { rest: bytes };
        let [version] = r.array::<1>()?;
        if version != RECORD_VERSION {
            return Err(EvidenceError::UnknownVersion { found: version });
        }
        let [kind] = r.array::<1>()?;
        if kind::name(kind).is_none() {
            return Err(EvidenceError::UnknownKind { found: kind });
        }
        let signer = u32::from_be_bytes(r.array()?);
        let view = u64::from_be_bytes(r.array()?);
        let first = r.message()?;
        let second = r.message()?;
        if !r.rest.is_empty() {
            return Err(EvidenceError::TrailingBytes {
                extra: r.rest.len(),
            });
        }
        Ok(EvidenceRecord {
            kind,
            signer,
            view,
            first,
            second,
        })
    }

    /// Decodes a record stored under `key`, checking that the two agree.
    ///
    /// Errors: those of [`EvidenceRecord::decode`], and [`EvidenceError::KeyMismatch`].
    pub fn decode_stored(key: &[u8], value: &[u8]) -> Result<EvidenceRecord, EvidenceError> {
        let record = Self::decode(value)?;
        if key != record.key().as_slice() {
            return Err(EvidenceError::KeyMismatch);
        }
        Ok(record)
    }
}

/// The key of the record for (view, signer, kind).
pub fn evidence_key(view: u64, signer: u32, kind: u8) -> [u8; EVIDENCE_KEY_LEN] {
    let mut key = [0u8; EVIDENCE_KEY_LEN];
    let (v, rest) = key.split_at_mut(8);
    v.copy_from_slice(&view.to_be_bytes());
    let (s, k) = rest.split_at_mut(4);
    s.copy_from_slice(&signer.to_be_bytes());
    k.copy_from_slice(&[kind]);
    key
}

fn message_len(message: &[u8]) -> Result<u32, EvidenceError> {
    let len = message.len();
    if len > MAX_EVIDENCE_MESSAGE_LEN {
        return Err(EvidenceError::MessageTooLarge { len });
    }
    u32::try_from(len).map_err(|_| EvidenceError::MessageTooLarge { len })
}

/// A cursor over a record being decoded.
struct Reader<'a> {
    rest: &'a [u8],
}

impl Reader<'_> {
    fn array<const N: usize>(&mut self) -> Result<[u8; N], EvidenceError> {
        let (head, rest) = self
            .rest
            .split_first_chunk::<N>()
            .ok_or(EvidenceError::Truncated {
                needed: N,
                available: self.rest.len(),
            })?;
        self.rest = rest;
        Ok(*head)
    }

    /// A u32 BE length prefix and that many bytes, bounded before copying.
    fn message(&mut self) -> Result<Vec<u8>, EvidenceError> {
        let len = u32::from_be_bytes(self.array()?);
        let len =
            usize::try_from(len).map_err(|_| EvidenceError::MessageTooLarge { len: usize::MAX })?;
        if len > MAX_EVIDENCE_MESSAGE_LEN {
            return Err(EvidenceError::MessageTooLarge { len });
        }
        if len > self.rest.len() {
            return Err(EvidenceError::Truncated {
                needed: len,
                available: self.rest.len(),
            });
        }
        let (message, rest) = self.rest.split_at(len);
        self.rest = rest;
        Ok(message.to_vec())
    }
}

/// How many records the log holds and their encoded size, kept in memory.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    records: u64,
    bytes: u64,
}

/// The bounded evidence log on one sled tree (see the module docs). Used by
/// [`crate::SledStore`]; cheap to clone (clones share the tree and the tally).
#[derive(Debug, Clone)]
pub(crate) struct EvidenceLog {
    tree: sled::Tree,
    /// Also serialises writers, so the tally and the tree move together.
    tally: Arc<Mutex<Tally>>,
}

impl EvidenceLog {
    /// Opens the log on `tree`, tallying what it already holds (one scan).
    pub(crate) fn open(tree: sled::Tree) -> Result<EvidenceLog, sled::Error> {
        let mut tally = Tally::default();
        for entry in tree.iter() {
            let (_, value) = entry?;
            tally.records = tally.records.saturating_add(1);
            tally.bytes = tally.bytes.saturating_add(value.len() as u64);
        }
        Ok(EvidenceLog {
            tree,
            tally: Arc::new(Mutex::new(tally)),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Tally> {
        // Nothing in this module panics while holding the lock; if something ever did, the
        // tally is at worst slightly off and the next open recounts it.
        self.tally.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stores `record`, overwriting the same (view, signer, kind), then drops the oldest views
    /// while the log is over its bounds. Returns whether the record is new and was kept.
    pub(crate) fn put(&self, record: &EvidenceRecord) -> Result<bool, StoreError> {
        let value = record.encode()?;
        let key = record.key();
        let mut tally = self.lock();
        let previous = self.tree.insert(key, value.as_slice())?;
        let new = previous.is_none();
        match &previous {
            Some(old) => {
                tally.bytes = tally.bytes.saturating_sub(old.len() as u64);
            }
            None => tally.records = tally.records.saturating_add(1),
        }
        tally.bytes = tally.bytes.saturating_add(value.len() as u64);
        let mut kept = true;
        while tally.records > MAX_EVIDENCE_RECORDS || tally.bytes > MAX_EVIDENCE_BYTES {
            let Some((oldest, old_value)) = self.tree.pop_min()? else {
                // The tree is empty yet the tally says otherwise; it was off, start over.
                *tally = Tally::default();
                break;
            };
            tally.records = tally.records.saturating_sub(1);
            tally.bytes = tally.bytes.saturating_sub(old_value.len() as u64);
            if oldest.as_ref() == key.as_slice() {
                kept = false;
            }
        }
        Ok(new && kept)
    }

    /// Up to `limit` records with view ≥ `from_view`, ascending by (view, signer, kind).
    pub(crate) fn list(
        &self,
        limit: usize,
        from_view: u64,
    ) -> Result<Vec<EvidenceRecord>, StoreError> {
        let start = evidence_key(from_view, 0, 0);
        let mut out = Vec::new();
        for entry in self.tree.range(start..).take(limit) {
            let (key, value) = entry?;
            out.push(EvidenceRecord::decode_stored(&key, &value)?);
        }
        Ok(out)
    }

    /// Removes the records of views below `below_view`; returns how many.
    pub(crate) fn prune(&self, below_view: u64) -> Result<u64, StoreError> {
        let mut tally = self.lock();
        let end = evidence_key(below_view, 0, 0);
        let keys = self
            .tree
            .range(..end)
            .keys()
            .collect::<Result<Vec<_>, _>>()?;
        let mut removed = 0;
        for key in keys {
            if let Some(old) = self.tree.remove(key)? {
                tally.records = tally.records.saturating_sub(1);
                tally.bytes = tally.bytes.saturating_sub(old.len() as u64);
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Records held.
    pub(crate) fn count(&self) -> u64 {
        self.lock().records
    }
}
