//! See `quasar_app::fuzzing::snapshot_chunk`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_app::fuzzing::snapshot_chunk(data));
