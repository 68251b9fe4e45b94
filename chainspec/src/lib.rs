//! The chain specification every Quasar tool reads: validator key files, the genesis file and
//! its validator sets and profiles, and the development dealer of the threshold keys.
//!
//! - `keygen --out DIR [--slhdsa-set 192f|192s]` writes `DIR/validator.key.json` (secret: the
//!   BLS secret key, the 32-byte seeds of the ML-DSA-65 identity key and of the SLH-DSA Magnetar
//!   key, and the TLS private key, mode 0600) and `DIR/validator.pub.json` (public: BLS public
//!   key, its proof of possession, the ML-DSA-65 public key, the SLH-DSA public key and its
//!   parameter set, the self-signed TLS certificate that pins this validator's QUIC identity).
//! - `genesis` collects public files into `genesis.json`: chain id, genesis time, the Magnetar
//!   parameter set the files share, and the validators with their stake. Loading a genesis
//!   checks every BLS key's subgroup membership and proof of possession (docs/architecture.md §4), so a
//!   rogue-key attack cannot enter through genesis, and decodes every ML-DSA-65 identity key
//!   (FIPS 204; exactly 1952 bytes, no two alike) and every SLH-DSA Magnetar key of the
//!   genesis's parameter set (FIPS 205; exactly 48 bytes, no two alike). A genesis may also
//!   schedule validator-set changes at later epochs (`validator_changes`), each set checked as
//!   the genesis set is and carrying its own threshold and rollup keys
//!   ([`GenesisFile::check`], [`deal`]).
//!
//! Modules: [`keys`] (key files), [`key_file`] (the sealed format of the secret one),
//! [`sealing`] (passphrase sealing, shared with thresholdd's keystore), [`genesis`], [`dealer`],
//! [`token`] (thresholdd's bearer token files), [`guard_history`] (a signing guard's history as
//! a JSON document, for moving a validator or a vote key); `fuzzing` (feature `fuzzing`, off in a
//! production build): the `chainspec/fuzz` targets' entry points.
//!
//! # Magnetar parameter sets
//!
//! A network's Magnetar keys all belong to one SLH-DSA parameter set (FIPS 205 §11, Table 2),
//! spelt `"192f"` or `"192s"` in the files and on the command line ([`parse_magnetar_set`]):
//!
//! | spelling | set | public key | signature | signing, one core | verification |
//! |---|---|---|---|---|---|
//! | `192f` (default) | SLH-DSA-SHAKE-192f | 48 B | 35,664 B | about 0.3 s | about 7.5 ms |
//! | `192s` | SLH-DSA-SHAKE-192s | 48 B | 16,224 B | about 5 s | about 2.5 ms |
//!
//! (timings: `quasar_crypto::magnetar`, release build, the 2-vCPU machine). Both sets have
//! 48-byte public keys, so the bytes alone do not say which set a key belongs to: the public key
//! file carries `slhdsa_parameter_set` and the genesis `magnetar_parameter_set`, each absent for
//! the default 192f, so files written before the set was selectable read as 192f and a 192f
//! genesis keeps its hash ([`GenesisFile::check`]).

pub mod dealer;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod genesis;
pub mod guard_history;
pub mod key_file;
pub mod keys;
pub mod sealing;
pub mod token;

pub use dealer::*;
pub use genesis::*;
pub use key_file::KeyAccess;
pub use keys::*;
pub use token::{parse_token, read_token_file, MAX_TOKEN_CHARS};

use crate::key_file::KeyFileError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Failures reading or writing operator files; each names the file and what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is not valid JSON/TOML of the expected shape.
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    /// The genesis is not a valid chain specification: a validator set, a key, a profile, a
    /// scheduled change (the message names the set and the validator). Fix or replace the
    /// genesis file.
    #[error("{0}")]
    Genesis(String),
    /// A validator key file holds a value that does not decode, or keys that do not belong
    /// together (a secret that does not match its public file, shares not of their group). The
    /// message names the directory and the field.
    #[error("{0}")]
    Keys(String),
    /// A file that is never overwritten already exists (a validator's secret key, a dealt
    /// share).
    #[error("{} already exists; refusing to overwrite {what}", path.display())]
    Exists {
        /// The file.
        path: PathBuf,
        /// What it holds, for the message.
        what: &'static str,
    },
    /// Threshold keys were dealt already; dealing again would replace an operator's shares.
    #[error("{0}; refusing to deal again")]
    AlreadyDealt(String),
    /// The dealer refused a key shape (threshold and parties) or a committee draw.
    #[error("{0}")]
    Deal(String),
    /// A command's arguments do not fit the files they name (key directories against the
    /// genesis roster, an address per validator).
    #[error("{0}")]
    Arguments(String),
    /// A value of `node.toml` is out of its range or contradicts another.
    #[error("{0}")]
    NodeConfig(String),
    /// A bearer-token file holds no usable token.
    #[error("{0}")]
    Token(String),
    /// A file is larger than any file of its kind can be.
    #[error("{}: larger than {} MiB", path.display(), max >> 20)]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The limit, bytes.
        max: u64,
    },
    /// A value could not be encoded for writing (JSON, TOML).
    #[error("encoding: {0}")]
    Encode(String),
    /// A secret key file cannot be opened or written (wrong passphrase, plaintext without the
    /// opt-in, ...): fatal to the command or node start.
    #[error(transparent)]
    KeyFile(#[from] KeyFileError),
}

/// Wraps an I/O error on `path` as [`ConfigError::Io`] naming the file.
pub fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ConfigError + '_ {
    move |source| ConfigError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Largest operator file we read (genesis with thousands of validators fits easily).
const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Reads the operator file at `path` as UTF-8 text, at most 64 MiB whatever the file claims to
/// be (a pipe, `/dev/zero`). Errors: [`ConfigError::Io`], [`ConfigError::TooLarge`] when larger,
/// [`ConfigError::Parse`] when not UTF-8.
pub fn read_bounded(path: &Path) -> Result<String, ConfigError> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(io_err(path))?;
    // Read at most one byte past the limit, whatever the file claims to be (a pipe, /dev/zero).
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io_err(path))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(ConfigError::TooLarge {
            path: path.to_path_buf(),
            max: MAX_FILE_BYTES,
        });
    }
    String::from_utf8(bytes).map_err(|_| ConfigError::Parse {
        path: path.to_path_buf(),
        message: "not UTF-8 text".into(),
    })
}

/// `value` decoded as hex. Errors: a message naming `field`, for the caller's variant.
pub(crate) fn decode_hex(field: &str, value: &str) -> Result<Vec<u8>, String> {
    hex::decode(value).map_err(|e| format!("{field}: not hex: {e}"))
}

pub(crate) fn to_json<T: Serialize>(value: &T) -> Result<String, ConfigError> {
    serde_json::to_string_pretty(value).map_err(|e| ConfigError::Encode(e.to_string()))
}

/// Creates `path` (failing if it exists) with mode 0600 on Unix, writes `bytes` and fsyncs
/// the file (not its directory): the start of every secret file the node and thresholdd write.
pub fn write_private_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

pub(crate) fn parse_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, ConfigError> {
    let text = read_bounded(path)?;
    serde_json::from_str(&text).map_err(|e| ConfigError::Parse {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// Logs a warning when a secret file can be read by other users (it should be mode 0600).
pub(crate) fn warn_if_exposed(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(meta) = std::fs::metadata(path) {
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                tracing::warn!(path = %path.display(), mode = format!("{mode:o}"), "secret key file is readable by other users; chmod 600 it");
            }
        }
    }
}

#[cfg(test)]
mod tests;
