//! See `quasar_lanes::fuzzing::quasar_cert_verify`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_lanes::fuzzing::quasar_cert_verify(data));
