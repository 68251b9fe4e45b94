//! Entry points for fuzzers and smoke tests.
//!
//! Each function takes arbitrary bytes and panics only when a property of this crate is broken;
//! for every other input it returns quietly. The cargo-fuzz targets in `wire/fuzz` are one-line
//! calls to these functions, and the workspace smoke test (`node/tests/fuzz_smoke.rs`) drives the
//! same functions with seeded pseudo-random and mutated inputs on the stable toolchain, so a
//! crash found by either reproduces under both.

use crate::frame::{frame_len, FRAME_HEADER_LEN, MAX_FRAME_LEN};

/// Any bytes: [`crate::decode`] returns a message or a typed error and never panics; whatever
/// decodes re-encodes (`to_owned` then `encode`) to bytes that decode to the same value, and a
/// sync response's items each decode as a Proposal or Certificate.
///
/// Panics: when a decoded message fails to re-encode, the re-encoding fails to decode or decodes
/// to a different value, or a sync response item does not decode.
pub fn decode(data: &[u8]) {
    let Ok(decoded) = crate::decode(data) else {
        return;
    };
    if let crate::MessageRef::SyncResponse(response) = &decoded {
        for item in response.items() {
            match crate::decode(item) {
                Ok(crate::MessageRef::Proposal(_)) | Ok(crate::MessageRef::Certificate(_)) => {}
                other => panic!("a checked sync item decodes to {other:?}"),
            }
        }
    }
    let owned = decoded.to_owned();
    let bytes = owned.encode().expect("a decoded message re-encodes");
    let again = crate::decode(&bytes).expect("a re-encoded message decodes");
    assert_eq!(again.to_owned(), owned, "re-encoding changed the message");
}

/// Any bytes: [`frame_len`] on the first four bytes (when there are four) never panics and
/// accepts exactly the announced lengths up to [`MAX_FRAME_LEN`].
///
/// Panics: when `frame_len` accepts a length above the limit, reports a different length, or
/// refuses one within the limit.
pub fn frame(data: &[u8]) {
    let Some(prefix) = data.get(..FRAME_HEADER_LEN) else {
        return;
    };
    let Ok(header) = <[u8; FRAME_HEADER_LEN]>::try_from(prefix) else {
        return;
    };
    let announced = u32::from_le_bytes(header) as usize;
    match frame_len(header) {
        Ok(len) => assert!(
            len == announced && len <= MAX_FRAME_LEN,
            "frame_len({header:?}) = {len}"
        ),
        Err(_) => assert!(announced > MAX_FRAME_LEN, "frame_len refused {announced}"),
    }
}
