//! Entry points of the `thresholdd/fuzz` targets: the daemon's files on disk.
//!
//! Each function takes arbitrary bytes and panics only when a property of this crate is broken;
//! for every other input it returns quietly. The cargo-fuzz targets in `thresholdd/fuzz` are
//! one-line calls to these functions, and the workspace smoke test (`node/tests/fuzz_smoke.rs`)
//! drives them with seeded pseudo-random and mutated inputs on the stable toolchain.
//!
//! - [`key_file`]: a keystore key file and the `keystore.json` header re-encode to themselves.
//! - [`session_record`]: the used-session record accepts exactly whole 32-byte ids.
//!
//! Compiled only with the `fuzzing` feature: not part of a production build.

use crate::keystore;

/// Any bytes as a thresholdd keystore file, read as a key file (`<key id>.json`) and as the
/// `keystore.json` header: parsing returns the decoded file or an error naming the field, never
/// panics, and whatever parses re-encodes to bytes that parse to the same value. (Authentication
/// needs the master key and is not fuzzed here: a mutated file fails it by design.)
///
/// Panics: when a parsed file's encoding does not parse back to it.
pub fn key_file(data: &[u8]) {
    if let Ok(sealed) = keystore::parse_key_file(data) {
        let again = keystore::parse_key_file(&sealed.to_bytes());
        assert!(
            again.as_ref().is_ok_and(|a| *a == sealed),
            "a key file does not survive re-encoding: {:?}",
            again.map(|a| a.info().clone())
        );
    }
    if let Ok(header) = keystore::parse_header(data) {
        let again = keystore::parse_header(&header.to_bytes());
        assert!(
            again.as_ref().is_ok_and(|a| *a == header),
            "a header does not survive re-encoding: {again:?}"
        );
    }
}

/// Any bytes as a thresholdd used-session record ([`crate::sessions`]): parsing
/// returns the ids or an error, never panics, and accepts exactly the whole numbers of 32-byte
/// ids within the size bound.
///
/// Panics: when a record of whole ids is refused or a torn one accepted.
pub fn session_record(data: &[u8]) {
    let parsed = crate::sessions::parse_used_sessions(data);
    assert_eq!(
        parsed.is_ok(),
        data.len().is_multiple_of(32),
        "a {}-byte record was {}",
        data.len(),
        if parsed.is_ok() {
            "accepted"
        } else {
            "refused"
        }
    );
    if let Ok(ids) = parsed {
        assert!(ids.len() <= data.len() / 32);
        assert!(ids.iter().all(|id| data.chunks_exact(32).any(|c| c == id)));
    }
}
