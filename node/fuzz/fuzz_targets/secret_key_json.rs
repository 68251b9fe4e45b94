//! See `quasar_node::fuzzing::secret_key_json`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_node::fuzzing::secret_key_json(data));
