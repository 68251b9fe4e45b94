//! Entry points of the `app/fuzz` targets.
//!
//! Each function takes arbitrary bytes and panics only when a property of this crate is broken;
//! for every other input it returns quietly. The cargo-fuzz targets in `app/fuzz` are one-line
//! calls to these functions, and `app/tests/tx.rs` drives them on seeded mutations of valid
//! transactions on the stable toolchain.
//!
//! Compiled only with the `fuzzing` feature: not part of a production build.

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
