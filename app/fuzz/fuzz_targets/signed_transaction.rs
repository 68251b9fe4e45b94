//! See `quasar_app::fuzzing::signed_transaction`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_app::fuzzing::signed_transaction(data));
