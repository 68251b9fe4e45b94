//! See `quasar_thresholdd::fuzzing::key_file`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_thresholdd::fuzzing::key_file(data));
