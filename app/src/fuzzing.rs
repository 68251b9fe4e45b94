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
