//! See `quasar_node::fuzzing::sync_response`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_node::fuzzing::sync_response(data));
