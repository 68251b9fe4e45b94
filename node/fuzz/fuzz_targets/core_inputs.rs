//! See `quasar_node::fuzzing::core_inputs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = quasar_node::fuzzing::core_inputs(data);
});
