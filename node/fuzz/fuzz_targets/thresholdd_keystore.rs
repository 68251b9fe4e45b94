//! See `quasar_node::fuzzing::thresholdd_key_file`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_node::fuzzing::thresholdd_key_file(data));
