//! See `quasar_crypto::fuzzing::pulsar_decode`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_crypto::fuzzing::pulsar_decode(data));
