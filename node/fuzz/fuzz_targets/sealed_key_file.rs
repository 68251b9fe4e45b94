//! See `quasar_node::fuzzing::sealed_key_file`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_node::fuzzing::sealed_key_file(data));
