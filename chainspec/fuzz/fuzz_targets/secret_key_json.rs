//! See `quasar_chainspec::fuzzing::secret_key_json`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_chainspec::fuzzing::secret_key_json(data));
