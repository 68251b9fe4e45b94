//! See `quasar_node::fuzzing::guard_file`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_node::fuzzing::guard_file(data));
