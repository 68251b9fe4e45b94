//! See `quasar_crypto::fuzzing::bls_threshold_verify`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_crypto::fuzzing::bls_threshold_verify(data));
