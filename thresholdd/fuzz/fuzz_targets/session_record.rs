//! See `quasar_thresholdd::fuzzing::session_record`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_thresholdd::fuzzing::session_record(data));
