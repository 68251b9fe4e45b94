//! See `quasar_node::fuzzing::thresholdd_session_record`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_node::fuzzing::thresholdd_session_record(data));
