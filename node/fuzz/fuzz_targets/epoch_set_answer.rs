#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_node::fuzzing::epoch_set_answer(data));
