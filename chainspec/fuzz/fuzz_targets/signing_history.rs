//! See `quasar_chainspec::fuzzing::signing_history`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_chainspec::fuzzing::signing_history(data));
