//! Any bytes as a signing-guard file: decoding returns a guard or an error, never panics, and a
//! decoded guard still answers questions.
#![no_main]
use libfuzzer_sys::fuzz_target;
use quasar_storage::{SigningGuard, VoteIntent, VoteKind};

fuzz_target!(|data: &[u8]| {
    if let Ok(mut guard) = SigningGuard::from_bytes(data) {
        let view = guard.highest_view();
        let _ = guard.check_and_record(&VoteIntent { view, kind: VoteKind::Nullify, block: [0; 32] });
    }
});
