//! See `quasar_lanes::fuzzing::quasar_cert`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_lanes::fuzzing::quasar_cert(data));
