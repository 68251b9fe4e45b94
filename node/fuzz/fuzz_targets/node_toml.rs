//! See `quasar_node::fuzzing::node_toml`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_node::fuzzing::node_toml(data));
