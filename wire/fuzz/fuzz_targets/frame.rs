//! See `quasar_wire::fuzzing::frame`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_wire::fuzzing::frame(data));
