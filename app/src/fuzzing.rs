//! Entry points of the `app/fuzz` targets.
//!
//! Each function takes arbitrary bytes and panics only when a property of this crate is broken;
//! for every other input it returns quietly. The cargo-fuzz targets in `app/fuzz` are one-line
//! calls to these functions, and `app/tests/tx.rs` and `app/tests/state.rs` drive them on
//! seeded mutations of valid encodings on the stable toolchain.
//!
//! Compiled only with the `fuzzing` feature: not part of a production build.

use crate::ledger::{Account, AccountLeaf};
use crate::registry::{Directory, EpochSet, ValidatorRecord};
use crate::state::AccountProof;
use crate::tx::{SignedTransaction, Transaction};

/// Any bytes as a signed transaction and as a transaction body: decoding returns the value or
/// an error, never panics, and whatever decodes re-encodes to exactly the bytes it came from
/// (the encoding is canonical).
///
/// Panics: when a decoded transaction does not re-encode to its input.
pub fn signed_transaction(data: &[u8]) {
    if let Ok(tx) = SignedTransaction::decode(data) {
        assert_eq!(
            tx.as_bytes(),
            data,
            "a decoded transaction re-encodes differently"
        );
        let body = tx.transaction().encode();
        assert!(
            body.as_ref()
                .is_ok_and(|b| Transaction::decode(b).as_ref() == Ok(tx.transaction())),
            "a decoded body does not round-trip"
        );
    }
    if let Ok(body) = Transaction::decode(data) {
        assert_eq!(
            body.encode().as_deref(),
            Ok(data),
            "a decoded body re-encodes differently"
        );
    }
}

/// Any bytes as an account leaf, a validator record, a validator directory and an epoch's set
/// (state values) and as an account proof (what `GET /account` serves): decoding returns the
/// value or an error, never panics; a decoded leaf, record, directory or set re-encodes to
/// exactly its input; a
/// decoded proof is checked against a fixed root, for a present and an absent account, without
/// panicking.
///
/// Panics: when a decoded value does not re-encode to its input.
pub fn state_decode(data: &[u8]) {
    if let Ok(record) = ValidatorRecord::from_bytes(data) {
        assert_eq!(
            record.to_bytes(),
            data,
            "a decoded record re-encodes differently"
        );
    }
    if let Ok(directory) = Directory::from_bytes(data) {
        assert_eq!(
            directory.to_bytes(),
            data,
            "a decoded directory re-encodes differently"
        );
    }
    if let Ok(set) = EpochSet::from_bytes(data) {
        assert_eq!(
            set.to_bytes(),
            data,
            "a decoded epoch set re-encodes differently"
        );
    }
    if let Ok(leaf) = AccountLeaf::from_bytes(data) {
        assert_eq!(
            leaf.to_bytes().as_slice(),
            data,
            "a decoded account leaf re-encodes differently"
        );
    }
    if let Ok(proof) = AccountProof::from_bytes(data) {
        let _ = proof.verify(&[7; 32], &[9; 32], Some(&Account::default()));
        let _ = proof.verify(&[7; 32], &[9; 32], None);
    }
}

/// [`snapshot_chunk`]'s input for a chunk of a version with root `root`: `root` (32 bytes), the
/// `complete` flag (1 byte), the entry count (1 byte, at most 255), each entry as its key (32
/// bytes), its value's length (u16 big-endian) and the value, then the proof (the rest).
pub fn snapshot_chunk_input(
    root: &quasar_crypto::hash::Hash,
    chunk: &crate::snapshot::SnapshotChunk,
) -> Vec<u8> {
    let mut data = root.to_vec();
    data.push(u8::from(chunk.complete));
    data.push(chunk.entries.len().min(255) as u8);
    for (key, value) in chunk.entries.iter().take(255) {
        data.extend_from_slice(key);
        data.extend_from_slice(&(value.len().min(usize::from(u16::MAX)) as u16).to_be_bytes());
        data.extend_from_slice(&value[..value.len().min(usize::from(u16::MAX))]);
    }
    data.extend_from_slice(&chunk.proof);
    data
}

/// Any bytes as a state snapshot chunk from a peer (the form [`snapshot_chunk_input`] writes):
/// a restore into an empty store refuses it or takes it, and finishes or refuses to, without
/// panicking (the range proof is decoded from peer bytes and the tree library asserts its own
/// invariants).
///
/// Panics: when the restore panics, or when a restore that took every chunk and finished
/// leaves a state whose root is not the one asked for.
pub fn snapshot_chunk(data: &[u8]) {
    let Some((root, rest)) = data.split_first_chunk::<32>() else {
        return;
    };
    let Some((&[complete, count], mut rest)) = rest.split_first_chunk::<2>() else {
        return;
    };
    let mut entries = Vec::new();
    for _ in 0..count {
        let Some((key, after)) = rest.split_first_chunk::<32>() else {
            return;
        };
        let Some((len, after)) = after.split_first_chunk::<2>() else {
            return;
        };
        let len = usize::from(u16::from_be_bytes(*len));
        if after.len() < len {
            return;
        }
        entries.push((*key, after[..len].to_vec()));
        rest = &after[len..];
    }
    let chunk = crate::snapshot::SnapshotChunk {
        entries,
        proof: rest.to_vec(),
        complete: complete == 1,
    };
    let Ok(store) = quasar_storage::SledStore::temporary() else {
        return;
    };
    let Ok(state) = store.state() else { return };
    let Ok(mut restore) = crate::snapshot::Restore::begin(state.clone(), 1, *root) else {
        return;
    };
    if restore.add(chunk).is_ok() && restore.next_start().is_none() && restore.finish().is_ok() {
        assert_eq!(
            state.latest().ok().flatten(),
            Some((1, *root)),
            "a finished restore holds the version asked for"
        );
    }
}
