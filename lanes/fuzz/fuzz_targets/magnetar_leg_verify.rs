//! See `quasar_lanes::fuzzing::magnetar_leg_verify`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quasar_lanes::fuzzing::magnetar_leg_verify(data));
