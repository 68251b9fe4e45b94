//! Shared by the conformance suites: where the public test vectors live.

use std::path::{Path, PathBuf};

/// The vector folder `name` (e.g. `bls12-381-tests`, `wycheproof`): `$QUASAR_VECTORS/<name>`, else
/// `<checkout>/../shared/vectors/<name>`.
///
/// Returns `None` (after printing a notice) when the folder is missing, so a plain `cargo test` on
/// a machine without the vectors passes; with `CI=true` a missing folder fails the test instead.
pub fn vectors_dir(name: &str) -> Option<PathBuf> {
    let dir = match std::env::var_os("QUASAR_VECTORS") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/vectors"),
    };
    let dir = dir.join(name);
    if dir.is_dir() {
        return Some(dir);
    }
    let msg = format!(
        "test vectors not found at {} (set QUASAR_VECTORS to the shared/vectors folder)",
        dir.display()
    );
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{msg}; CI=true requires them");
    }
    eprintln!("NOTICE: skipping vector test: {msg}");
    None
}
