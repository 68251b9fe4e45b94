//! See `quasar_node::fuzzing::rollup_signature`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_node::fuzzing::rollup_signature(data));
