//! See `quasar_chainspec::fuzzing::sealed_key_file`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_chainspec::fuzzing::sealed_key_file(data));
