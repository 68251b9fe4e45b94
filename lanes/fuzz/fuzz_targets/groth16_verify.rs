//! See `quasar_lanes::fuzzing::groth16_verify`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_lanes::fuzzing::groth16_verify(data));
