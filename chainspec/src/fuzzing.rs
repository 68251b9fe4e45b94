//! Entry points of the `chainspec/fuzz` targets: the files an operator hands a Quasar tool.
//!
//! Each function takes arbitrary bytes and panics only when a property of this crate is broken;
//! for every other input it returns quietly. The cargo-fuzz targets in `chainspec/fuzz` are
//! one-line calls to these functions, and the workspace smoke test (`node/tests/fuzz_smoke.rs`)
//! drives them with seeded pseudo-random and mutated inputs on the stable toolchain.
//!
//! - [`genesis_json`], [`secret_key_json`], [`sealed_key_file`]: the genesis and validator key
//!   files never panic their parsers, and a sealed key file re-encodes to itself.
//! - [`signing_history`]: a signing guard's history document round-trips, and importing it obeys
//!   the guard's rules.
//!
//! Compiled only with the `fuzzing` feature: not part of a production build.

use crate::guard_history::SigningHistory;
use crate::{key_file, GenesisFile, SecretKeyFile};
use quasar_storage::SigningGuard;

/// Any text as genesis.json: parsing and checking return a genesis or an error, never panic.
pub fn genesis_json(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(file) = GenesisFile::from_json(text) {
            let _ = file.check();
        }
    }
}

/// Any text as a secret key file (`validator.key.json`): parsing and decoding every threshold
/// key share in it (the genesis set's and each `set_shares` entry's) returns the shares or an
/// error, never panics.
pub fn secret_key_json(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(file) = SecretKeyFile::from_json(text) {
            let _ = file.dealt();
        }
    }
}

/// Any bytes as a signing-history document (`quasar-node guard import`): parsing returns the
/// document or an error, never panics; a parsed document serializes to one that parses to the
/// same value, and importing it into an empty guard of its owner either succeeds or is refused
/// by the guard's rules.
///
/// Panics: when a parsed document does not round-trip.
pub fn signing_history(data: &[u8]) {
    if let Ok(history) = SigningHistory::parse(data) {
        let again = serde_json::to_vec(&history).map(|text| SigningHistory::parse(&text));
        assert!(
            matches!(&again, Ok(Ok(h)) if *h == history),
            "a parsed signing history does not round-trip: {again:?}"
        );
        if let Ok(owner) = history.owner() {
            let _ = history.import_into(&mut SigningGuard::in_memory_for(owner), &owner);
        }
    }
}

/// Any bytes as a sealed validator key file (`validator.key.json` sealed under a passphrase,
/// [`crate::key_file`]): the sealed/plaintext probe and the parser return a value or an error naming
/// the field, never panic, and whatever parses re-encodes to bytes that parse to the same value.
/// (Opening needs the passphrase and runs Argon2id; a mutated file fails it by design.)
///
/// Panics: when a parsed file's encoding does not parse back to it.
pub fn sealed_key_file(data: &[u8]) {
    let _ = key_file::is_sealed(data);
    if let Ok(sealed) = key_file::parse_sealed(data) {
        let again = key_file::parse_sealed(&sealed.to_bytes());
        assert!(
            again.as_ref().is_ok_and(|a| *a == sealed),
            "a sealed key file does not survive re-encoding: {again:?}"
        );
    }
}
