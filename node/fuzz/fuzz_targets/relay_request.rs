//! See `quasar_node::fuzzing::relay_request`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_node::fuzzing::relay_request(data));
