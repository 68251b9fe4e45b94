//! Any bytes: `frame_len` on the first four bytes never panics, and accepts exactly the lengths
//! up to `MAX_FRAME_LEN`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quasar_wire::frame::{frame_len, FRAME_HEADER_LEN, MAX_FRAME_LEN};

fuzz_target!(|data: &[u8]| {
    let Some(prefix) = data.get(..FRAME_HEADER_LEN) else {
        return;
    };
    let Ok(header) = <[u8; FRAME_HEADER_LEN]>::try_from(prefix) else {
        return;
    };
    let announced = u32::from_le_bytes(header) as usize;
    match frame_len(header) {
        Ok(len) => assert!(len == announced && len <= MAX_FRAME_LEN),
        Err(_) => assert!(announced > MAX_FRAME_LEN),
    }
});
