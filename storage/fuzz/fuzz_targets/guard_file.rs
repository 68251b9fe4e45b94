//! See `quasar_storage::fuzzing::guard_file`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_storage::fuzzing::guard_file(data));
