//! See `quasar_app::fuzzing::state_decode`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_app::fuzzing::state_decode(data));
