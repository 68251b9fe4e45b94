//! See `quasar_node::fuzzing::signing_history`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_node::fuzzing::signing_history(data));
