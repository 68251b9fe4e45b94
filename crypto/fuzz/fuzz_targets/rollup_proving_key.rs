//! See `quasar_crypto::fuzzing::rollup_proving_key`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_crypto::fuzzing::rollup_proving_key(data));
