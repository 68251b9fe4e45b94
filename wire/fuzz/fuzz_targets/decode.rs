//! See `quasar_wire::fuzzing::decode`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_wire::fuzzing::decode(data));
