//! See `quasar_chainspec::fuzzing::genesis_json`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_chainspec::fuzzing::genesis_json(data));
