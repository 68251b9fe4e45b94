//! Entry points for fuzzers and smoke tests of this crate's decoders.
//!
//! Each function takes arbitrary bytes and panics only when a property of this crate is broken;
//! for every other input it returns quietly. The cargo-fuzz target in `storage/fuzz` is a one-line
//! call to [`guard_file`], and `node/tests/fuzz_smoke.rs` drives the same function with seeded
//! mutated and random inputs on the stable toolchain, so a crash found by either reproduces under
//! both.

use crate::{SigningGuard, VoteIntent, VoteKind};

/// Any bytes as a signing-guard file ([`crate::guard`]): decoding returns a guard or an error,
/// never panics, and a decoded guard still answers questions (a nullify at its highest view,
/// asked twice, gets the same answer kind).
///
/// Panics: when the second identical question is refused after the first was allowed.
pub fn guard_file(data: &[u8]) {
    if let Ok(mut guard) = SigningGuard::from_bytes(data) {
        let intent = VoteIntent {
            view: guard.highest_view(),
            kind: VoteKind::Nullify,
            block: [0; 32],
        };
        if guard.check_and_record(&intent).is_ok() {
            assert!(
                guard.check_and_record(&intent).is_ok(),
                "a repeated vote was refused"
            );
        }
    }
}
