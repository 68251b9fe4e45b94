//! Shared pieces of the multi-process tests: the binary under test, one network at a time, and a
//! network in a temporary directory that is kept (with log tails printed) when a test fails.
#![allow(dead_code)] // each test binary uses a different subset

use quasar_lanes::cert::Profile;
use quasar_node::testnet::Testnet;
use std::path::PathBuf;
use tokio::sync::{Mutex, MutexGuard};

/// The passphrase the command-line tests encrypt validator key files under (given to the
/// binary as QUASAR_KEY_PASSPHRASE).
pub const KEY_PASSPHRASE: &str = "test validator key passphrase";

/// How the tests open key files the binary wrote under [`KEY_PASSPHRASE`].
pub fn key_access() -> quasar_chainspec::KeyAccess {
    quasar_chainspec::KeyAccess::sealed(KEY_PASSPHRASE.as_bytes())
}

/// The plaintext JSON of a key file encrypted under [`KEY_PASSPHRASE`].
pub fn read_secret_json(path: &std::path::Path) -> serde_json::Value {
    let bytes = std::fs::read(path).unwrap();
    let (plaintext, _) = key_access().open_file(path, &bytes).unwrap();
    serde_json::from_slice(&plaintext).unwrap()
}

/// Writes `value` as a key file encrypted under [`KEY_PASSPHRASE`] (Argon2id at its minimum
/// cost: the file states its parameters).
pub fn write_secret_json(path: &std::path::Path, value: &serde_json::Value) {
    let access = key_access().with_kdf(quasar_chainspec::sealing::KdfParams::for_tests());
    let bytes = access.encode(value.to_string().as_bytes(), true).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// The `quasar-node` binary cargo built for these tests.
pub fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_quasar-node"))
}

/// Runs `quasar-node args` with key files sealed under [`KEY_PASSPHRASE`]; its output.
pub fn run(args: &[&str]) -> std::process::Output {
    std::process::Command::new(binary())
        .args(args)
        .env("QUASAR_KEY_PASSPHRASE", KEY_PASSPHRASE)
        .output()
        .unwrap()
}

/// [`run`], which must succeed; its stdout. Panics with its stderr otherwise.
pub fn ok(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// [`run`], which must fail; its stderr.
pub fn fails(args: &[&str]) -> String {
    let out = run(args);
    assert!(!out.status.success(), "{args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Four validator processes per test are all two cores can carry; tests wait for each other.
pub async fn one_network_at_a_time() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::const_new(());
    SERIAL.lock().await
}

/// A created network in a temporary directory that is kept (and printed) if the test fails.
pub struct Fixture {
    pub net: Testnet,
    dir: Option<tempfile::TempDir>,
}

impl Fixture {
    /// Creates `validators` validators under a fresh temporary directory named `prefix…`.
    pub fn create(prefix: &str, validators: usize, block_time_ms: u64) -> Fixture {
        Fixture::with_profile(prefix, validators, block_time_ms, Profile::default())
    }

    /// [`Fixture::create`] under the genesis cert profile `profile`.
    pub fn with_profile(
        prefix: &str,
        validators: usize,
        block_time_ms: u64,
        profile: Profile,
    ) -> Fixture {
        let dir = tempfile::Builder::new().prefix(prefix).tempdir().unwrap();
        let net =
            Testnet::create_with_profile(dir.path(), validators, block_time_ms, profile).unwrap();
        Fixture {
            net,
            dir: Some(dir),
        }
    }

    /// Starts every validator.
    pub fn spawn_all(&mut self) {
        for i in 0..self.net.validators() {
            self.net.spawn(i, &binary()).unwrap();
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.net.kill_all();
        if std::thread::panicking() {
            if let Some(dir) = self.dir.take() {
                let kept = dir.keep();
                eprintln!("test failed; network kept in {}", kept.display());
                for i in 0..self.net.validators() {
                    eprintln!("--- v{i}/node.log (tail) ---\n{}", self.net.log_tail(i, 25));
                }
            }
        }
    }
}

/// Asserts that every validator holds the same block hash at every height `1..=up_to`.
pub async fn assert_same_chain(net: &Testnet, up_to: u64) {
    assert!(
        net.same_chain(up_to).await.unwrap(),
        "validators disagree at some height up to {up_to}"
    );
}
