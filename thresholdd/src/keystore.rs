//! thresholdd's encrypted on-disk keystore: the threshold key shares the daemon signs with,
//! encrypted at rest under a passphrase (docs/architecture.md §9: keys persist encrypted at rest;
//! secrets never appear in responses or logs).
//!
//! # What it stores
//!
//! One key (the result of one `<scheme>.keygen`) is public metadata (key id, scheme, threshold
//! t, participants n, public key bytes, creation time) and one secret blob: the serialized shares,
//! opaque bytes here. Each key is one file `<key id>.json`; the directory also holds the
//! keystore header `keystore.json`. Keys are written once and never overwritten.
//!
//! # Cryptography
//!
//! The key derivation and the AEAD are [`quasar_chainspec::sealing`]'s, shared with the node's sealed
//! validator key file ([`quasar_chainspec::key_file`]).
//!
//! - **Master key.** Argon2id (RFC 9106, version 0x13) over the passphrase with a 16-byte random
//!   salt gives a 32-byte master key, derived once by [`Keystore::open`] and held in memory that
//!   is zeroized on drop. The production parameters ([`KdfParams::PRODUCTION`]) are m = 64 MiB,
//!   t = 3: RFC 9106 §4's second recommended option, with p = 1 lane instead of 4 (the `argon2`
//!   crate computes lanes one after another, so more lanes add no cost to an attacker's guess
//!   that they do not add to ours). Deriving takes a few hundred milliseconds on one core, once
//!   per start. Argon2's 64 MiB working memory is overwritten after the derivation (best
//!   effort: the `argon2` crate is built without its `zeroize` feature).
//! - **Header check value.** `keystore.json` holds the KDF parameters, the salt and an
//!   XChaCha20-Poly1305 encryption of a fixed label under the master key, so a wrong passphrase
//!   fails at open ([`KeystoreError::WrongPassphrase`]) rather than at the first signature. The
//!   parameters and salt are bound as associated data; editing any header field reads as a wrong
//!   passphrase, which is indistinguishable from one.
//! - **Key files.** The secret blob is sealed with XChaCha20-Poly1305 (draft-irtf-cfrg-xchacha-03;
//!   ChaCha20-Poly1305 per RFC 8439 with a 24-byte nonce) under the master key, with a fresh
//!   random nonce per file (random 192-bit nonces do not collide in practice, so no counter has to
//!   survive restarts). Every public field is bound as associated data (encoding in
//!   [`key_associated_data`]), so editing any of them on disk, or the nonce, or the ciphertext,
//!   makes the file fail authentication ([`KeystoreError::Tampered`]) at the next read. The two
//!   uses of the master key are domain-separated by distinct associated-data prefixes.
//!
//! # File formats (JSON, version 1)
//!
//! `keystore.json`: `{"version":1,"kdf":"argon2id","argon2Version":19,"memoryKib":m,
//! "iterations":t,"parallelism":p,"saltHex":<16 B>,"checkNonceHex":<24 B>,"checkHex":<label ‖ tag>}`.
//!
//! `<key id>.json`: `{"version":1,"keyId":..,"scheme":"bls"|"pulsar"|"corona"|"magnetar",
//! "threshold":t,"participants":n,"publicKeyHex":..,"createdAt":<Unix seconds>,
//! "nonceHex":<24 B>,"ciphertextHex":<secret ‖ 16-byte Poly1305 tag>}`. Unknown fields are
//! refused; hex is lowercase when written, either case when read. [`parse_key_file`] decodes one
//! without the master key (the fuzz target `thresholdd/fuzz` `key_file` drives it).
//!
//! # Decisions
//!
//! - **Key ids** are `[a-z0-9-]{1,64}` ([`KeyId`]), so a key id is always a plain file name and
//!   never a path; `keystore` is reserved for the header.
//! - **Bounds.** A key file is at most [`MAX_KEY_FILE_LEN`] = 32 MiB, checked before it is read;
//!   a secret blob at most [`MAX_SECRET_LEN`] = 14 MiB (hex doubles it on disk), a public key at
//!   most [`MAX_PUBLIC_KEY_LEN`] = 1 MiB. For scale: a Pulsar share is at most 14,084 bytes, a
//!   Corona share 15,623 + 96·n bytes, so every share of a 300-party Corona key (≈ 12.7 MiB)
//!   fits. Hex strings are length-checked before they are decoded; nothing in a file can panic
//!   the parser.
//! - **Writes** are atomic, durable and never overwrite: a temporary file `.<id>.<random>.tmp`
//!   created with mode 0600 in the keystore directory, written and fsync'd, then hard-linked to
//!   `<id>.json` (`link(2)` fails when the name exists, so two writers of one id cannot both
//!   succeed, even in two processes), the temporary unlinked and the directory fsync'd. The
//!   directory must be on a file system with hard links (every local Linux one). A crash between
//!   the write and the unlink leaves a temporary file behind: every other read ignores it, and
//!   [`Keystore::open`] removes those older than [`STALE_TEMP_AGE`] (with a `warn` each). A
//!   younger one may be another process's write in progress (the daemon's, while `thresholdd
//!   keys list` opens the same keystore), so it stays until a later open.
//! - **Permissions.** The directory is created with mode 0700 and key files with 0600. A key file
//!   or directory that group or others can access is read anyway with a `tracing` warning (as
//!   the node does for its validator key file): the contents are encrypted, and refusing would
//!   turn a `chmod` slip into a signing outage.
//! - **Listing.** [`Keystore::list`] authenticates every key file and returns the keys it could
//!   read plus, separately, one error per file it could not (each naming the file); it fails as a
//!   whole only when the directory cannot be read. One corrupt file therefore never hides the
//!   other keys, and is never silently dropped either.
//! - **No header, but key files.** [`Keystore::open`] refuses to start a new keystore in a
//!   directory that already holds key files ([`KeystoreError::MissingHeader`]): a new salt would
//!   make them unreadable.
//!
//! # Safety argument
//!
//! Secrets: the secret blob exists in plaintext only in [`Zeroizing`] buffers that never
//! reallocate (sealing encrypts in place in a buffer with room for the tag; opening decrypts in
//! place and truncates), and only `secret` returns it. No `Debug` or `Display` of this module
//! prints the master key or a secret. Integrity: a value [`Keystore::public`] or
//! [`Keystore::list`] returns has passed the AEAD check under the master key, so it is what
//! `put` wrote for that key id (the file name must also equal the `keyId` inside). What the
//! keystore cannot detect on its own is an attacker with write access deleting a key file or
//! restoring a deleted one; keys never change after `put`, so a restored file is the same key.
//!
//! All methods do blocking file I/O (and `open` runs Argon2id): async callers use
//! `tokio::task::spawn_blocking`. [`Keystore`] is `Send + Sync` and keeps no per-key state in
//! memory, so concurrent calls only meet in the file system.

use std::fmt;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use quasar_chainspec::sealing::{self, ARGON2_VERSION, KDF_NAME};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

/// Name of the header file inside the keystore directory.
pub const HEADER_FILE: &str = "keystore.json";
/// How old a leftover temporary file must be (by its modification time) before
/// [`Keystore::open`] removes it: 60 s, far longer than one write takes, so a younger one may
/// still be another process's write in progress.
pub const STALE_TEMP_AGE: Duration = Duration::from_secs(60);
/// The key id reserved for the header (`keystore.json`).
const RESERVED_KEY_ID: &str = "keystore";
/// Format version of the header and key files this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// Most bytes of a key file; larger files are refused before they are read.
pub const MAX_KEY_FILE_LEN: u64 = 32 << 20;
/// Most bytes of a secret blob.
pub const MAX_SECRET_LEN: usize = 14 << 20;
/// Most bytes of a public key.
pub const MAX_PUBLIC_KEY_LEN: usize = 1 << 20;
/// Most bytes of the header file (a valid one is about 400).
const MAX_HEADER_FILE_LEN: u64 = 64 << 10;
/// Longest key id, in characters.
pub const MAX_KEY_ID_LEN: usize = 64;
use quasar_chainspec::sealing::{KdfError, SealingKey, KEY_LEN, NONCE_LEN, TAG_LEN};
pub use quasar_chainspec::sealing::{KdfParams, SALT_LEN};
/// Bounds on header KDF parameters read from disk (an edited header must not make `open`
/// allocate without limit or spin for hours): memory ≤ 1 GiB, t ≤ 64, p ≤ 16.
/// The plaintext of the header's check value.
const CHECK_LABEL: &[u8] = b"quasar-thresholdd keystore v1";
/// Associated-data prefixes: one per use of the master key.
const CHECK_AD_PREFIX: &[u8] = b"quasar-thresholdd/keystore-check/v1\0";
const KEY_AD_PREFIX: &[u8] = b"quasar-thresholdd/key/v1\0";

// A key file with the largest secret and public key fits the file limit, with room for the
// JSON around them.
const _: () = assert!(
    2 * (MAX_SECRET_LEN + TAG_LEN) + 2 * MAX_PUBLIC_KEY_LEN + 4096 <= MAX_KEY_FILE_LEN as usize
);

/// The threshold schemes thresholdd serves (docs/architecture.md §4, §8); the JSON name is lowercase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    /// Threshold BLS12-381.
    Bls,
    /// Pulsar (lattice, ML-DSA-compatible threshold signatures).
    Pulsar,
    /// Corona (lattice threshold signatures).
    Corona,
    /// Magnetar (SLH-DSA).
    Magnetar,
}

impl Scheme {
    /// Every scheme, in a fixed order.
    pub const ALL: [Scheme; 4] = [
        Scheme::Bls,
        Scheme::Pulsar,
        Scheme::Corona,
        Scheme::Magnetar,
    ];

    /// The lowercase name used in key files and RPC method names.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Bls => "bls",
            Scheme::Pulsar => "pulsar",
            Scheme::Corona => "corona",
            Scheme::Magnetar => "magnetar",
        }
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Scheme {
    type Err = String;

    fn from_str(s: &str) -> Result<Scheme, String> {
        Scheme::ALL
            .into_iter()
            .find(|scheme| scheme.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown scheme {:?} (bls, pulsar, corona, magnetar)",
                    clip(s)
                )
            })
    }
}

/// A key id that has been checked: 1 to 64 characters of `[a-z0-9-]`, not `keystore`. It is a
/// safe file name (`<id>.json`) and never a path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct KeyId(String);

impl KeyId {
    /// Checks `id`. Errors: [`KeystoreError::InvalidKeyId`] naming the rule it breaks.
    pub fn new(id: &str) -> Result<KeyId, KeystoreError> {
        let invalid = |reason| KeystoreError::InvalidKeyId {
            id: clip(id),
            reason,
        };
        if id.is_empty() {
            return Err(invalid("empty"));
        }
        if id.len() > MAX_KEY_ID_LEN {
            return Err(invalid("longer than 64 characters"));
        }
        if !id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return Err(invalid("only a-z, 0-9 and '-' are allowed"));
        }
        if id == RESERVED_KEY_ID {
            return Err(invalid("reserved for the keystore header"));
        }
        Ok(KeyId(id.to_string()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn file_name(&self) -> String {
        format!("{}.json", self.0)
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for KeyId {
    type Err = KeystoreError;

    fn from_str(s: &str) -> Result<KeyId, KeystoreError> {
        KeyId::new(s)
    }
}

impl TryFrom<String> for KeyId {
    type Error = KeystoreError;

    fn try_from(s: String) -> Result<KeyId, KeystoreError> {
        KeyId::new(&s)
    }
}

impl From<KeyId> for String {
    fn from(id: KeyId) -> String {
        id.0
    }
}

/// A key's public metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInfo {
    /// The key's id (also its file name, `<id>.json`).
    pub key_id: KeyId,
    /// Which scheme the shares belong to.
    pub scheme: Scheme,
    /// Shares needed to sign, t (1 ≤ t ≤ n).
    pub threshold: u16,
    /// Shares dealt, n.
    pub participants: u16,
    /// The group public key, in the scheme's encoding (1 ..= [`MAX_PUBLIC_KEY_LEN`] bytes).
    pub public_key: Vec<u8>,
    /// When the key was stored, seconds since the Unix epoch.
    pub created_at: u64,
}

/// A key to store with [`Keystore::put`], borrowed from the caller (who keeps the secret in
/// zeroizing memory). `Debug` does not print the secret.
#[derive(Clone, Copy)]
pub struct NewKey<'a> {
    /// The key's id; must pass [`KeyId::new`].
    pub key_id: &'a str,
    /// Which scheme the shares belong to.
    pub scheme: Scheme,
    /// Shares needed to sign, t (1 ≤ t ≤ n).
    pub threshold: u16,
    /// Shares dealt, n.
    pub participants: u16,
    /// The group public key (1 ..= [`MAX_PUBLIC_KEY_LEN`] bytes).
    pub public_key: &'a [u8],
    /// The serialized shares (0 ..= [`MAX_SECRET_LEN`] bytes), opaque to the keystore.
    pub secret: &'a [u8],
}

impl fmt::Debug for NewKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NewKey")
            .field("key_id", &self.key_id)
            .field("scheme", &self.scheme)
            .field("threshold", &self.threshold)
            .field("participants", &self.participants)
            .field("public_key", &hex::encode(self.public_key))
            .field("secret", &format_args!("<{} bytes>", self.secret.len()))
            .finish()
    }
}

/// What [`Keystore::list`] found: the keys it read (sorted by key id) and one error per key
/// file it could not read or authenticate (each naming the file).
#[derive(Debug, Default)]
pub struct KeyListing {
    /// Authenticated public metadata, sorted by key id.
    pub keys: Vec<KeyInfo>,
    /// Key files that failed, in file-name order; the operator should look at each.
    pub unreadable: Vec<KeystoreError>,
}

/// What is wrong inside a file that was read (without the path; [`KeystoreError::Corrupt`]
/// adds it).
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// Not JSON of the expected shape (missing, unknown or duplicate field, wrong type).
    #[error("not a keystore file: {0}")]
    Json(#[from] serde_json::Error),
    /// A format version this build does not read.
    #[error("unsupported format version {0} (this build reads {FORMAT_VERSION})")]
    Version(u64),
    /// A field has the wrong length, range or encoding.
    #[error("field `{field}`: {problem}")]
    Field {
        /// The JSON field name.
        field: &'static str,
        /// What is wrong with it.
        problem: String,
    },
}

/// Why a keystore operation failed, and what follows.
///
/// At open: `EmptyPassphrase`, `WrongPassphrase`, `MissingHeader`, `Kdf` and errors on
/// `keystore.json` are fatal (the daemon must not start). Per request: `InvalidKeyId`,
/// `InvalidKey`, `DuplicateKey` and `NotFound` are the caller's error (JSON-RPC -32602);
/// `Corrupt`, `TooLarge` and `Tampered` make that one key unusable (alert the operator, keep
/// serving the others); `Io` on `put` means the key may not be stored (an `Io` after the file
/// was linked, from the directory fsync, leaves it present but perhaps not durable).
#[derive(Debug, thiserror::Error)]
pub enum KeystoreError {
    /// The passphrase is empty; a keystore under an empty passphrase is not encrypted.
    #[error("the keystore passphrase is empty")]
    EmptyPassphrase,
    /// The passphrase does not open this keystore (or its header was edited).
    #[error("{}: wrong passphrase (or the header was modified)", .path.display())]
    WrongPassphrase {
        /// The header file.
        path: PathBuf,
    },
    /// The directory holds key files but no header; a new header (a new salt) would orphan them.
    #[error("{}: key files but no {HEADER_FILE}; restore the header rather than start a new keystore", .dir.display())]
    MissingHeader {
        /// The keystore directory.
        dir: PathBuf,
    },
    /// The Argon2id parameters are out of bounds or the derivation failed.
    #[error("key derivation (Argon2id): {0}")]
    Kdf(String),
    /// A key id breaks the `[a-z0-9-]{1,64}` rule (or is reserved).
    #[error("invalid key id {id:?}: {reason}")]
    InvalidKeyId {
        /// The id (at most its first 80 characters).
        id: String,
        /// The rule it breaks.
        reason: &'static str,
    },
    /// A [`NewKey`] is inconsistent or too large.
    #[error("key {key_id}: {reason}")]
    InvalidKey {
        /// The key's id.
        key_id: KeyId,
        /// What is wrong.
        reason: String,
    },
    /// A key with this id exists; keys are never overwritten.
    #[error("key {key_id} already exists ({}); keys are never overwritten", .path.display())]
    DuplicateKey {
        /// The key's id.
        key_id: KeyId,
        /// Its file.
        path: PathBuf,
    },
    /// No key with this id.
    #[error("no key {key_id} ({} does not exist)", .path.display())]
    NotFound {
        /// The key's id.
        key_id: KeyId,
        /// The file that would hold it.
        path: PathBuf,
    },
    /// The file is larger than any valid one; it was not read.
    #[error("{}: {len} bytes, more than the {max}-byte limit", .path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its length (or a lower bound).
        len: u64,
        /// The limit.
        max: u64,
    },
    /// The file cannot be decoded.
    #[error("{}: {reason}", .path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        reason: FileError,
    },
    /// The file decodes but fails authentication under the master key.
    #[error("{}: authentication failed: the file was modified on disk, or sealed by another keystore", .path.display())]
    Tampered {
        /// The file.
        path: PathBuf,
    },
    /// A file-system operation failed.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> KeystoreError + '_ {
    move |source| KeystoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// At most the first 80 characters of `s` (for error messages about untrusted text).
fn clip(s: &str) -> String {
    s.chars().take(80).collect()
}

/// The encrypted keystore in one directory. `Debug` shows the directory and KDF parameters,
/// never the master key.
pub struct Keystore {
    dir: PathBuf,
    kdf: KdfParams,
    /// Boxed so moving the keystore never copies the key; zeroized on drop.
    master_key: SealingKey,
}

impl fmt::Debug for Keystore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keystore")
            .field("dir", &self.dir)
            .field("kdf", &self.kdf)
            .field("master_key", &format_args!("<redacted>"))
            .finish()
    }
}

impl Keystore {
    /// Opens the keystore in `dir` with the production KDF parameters
    /// ([`KdfParams::PRODUCTION`]) for a new keystore; see [`Keystore::open_with`].
    pub fn open(dir: &Path, passphrase: &[u8]) -> Result<Keystore, KeystoreError> {
        Keystore::open_with(dir, passphrase, KdfParams::PRODUCTION)
    }

    /// Opens the keystore in `dir`, creating `dir` (mode 0700) and a new header when there is
    /// none. `kdf` applies only to a new keystore; an existing one uses its header's parameters.
    /// Runs Argon2id once. Once the passphrase has opened the keystore, removes temporary files
    /// that a crashed write left behind and that are older than [`STALE_TEMP_AGE`], logging
    /// each at `warn` (best effort: a failure to remove one is logged, not returned).
    ///
    /// Errors: [`KeystoreError::EmptyPassphrase`]; [`KeystoreError::WrongPassphrase`] when the
    /// header's check value does not open; [`KeystoreError::MissingHeader`] when `dir` holds key
    /// files but no header; [`KeystoreError::Kdf`] for parameters out of bounds; `Corrupt`,
    /// `TooLarge`, `Io` for the header file or directory.
    pub fn open_with(
        dir: &Path,
        passphrase: &[u8],
        kdf: KdfParams,
    ) -> Result<Keystore, KeystoreError> {
        let keystore = Keystore::open_or_create(dir, passphrase, kdf)?;
        remove_stale_temp_files(dir, STALE_TEMP_AGE);
        Ok(keystore)
    }

    /// [`Keystore::open_with`] without the cleanup.
    fn open_or_create(
        dir: &Path,
        passphrase: &[u8],
        kdf: KdfParams,
    ) -> Result<Keystore, KeystoreError> {
        if passphrase.is_empty() {
            return Err(KeystoreError::EmptyPassphrase);
        }
        create_private_dir(dir)?;
        let header_path = dir.join(HEADER_FILE);
        match read_header(&header_path)? {
            Some(header) => Keystore::unlock(dir, passphrase, &header),
            None => {
                if has_key_files(dir)? {
                    return Err(KeystoreError::MissingHeader {
                        dir: dir.to_path_buf(),
                    });
                }
                let mut salt = [0u8; SALT_LEN];
                rand::rngs::OsRng.fill_bytes(&mut salt);
                let master_key = derive_master_key(passphrase, &salt, kdf)?;
                let header = Header::seal(kdf, salt, &master_key);
                match write_new_file(dir, HEADER_FILE, &header.to_bytes()) {
                    Ok(()) => {
                        tracing::info!(dir = %dir.display(), ?kdf, "created a new keystore");
                        Ok(Keystore {
                            dir: dir.to_path_buf(),
                            kdf,
                            master_key,
                        })
                    }
                    // Another process created the header first: open that one.
                    Err(WriteError::Exists) => match read_header(&header_path)? {
                        Some(header) => Keystore::unlock(dir, passphrase, &header),
                        None => Err(KeystoreError::Io {
                            path: header_path,
                            source: io::ErrorKind::NotFound.into(),
                        }),
                    },
                    Err(WriteError::Io(e)) => Err(e),
                }
            }
        }
    }

    fn unlock(dir: &Path, passphrase: &[u8], header: &Header) -> Result<Keystore, KeystoreError> {
        let master_key = derive_master_key(passphrase, &header.salt, header.kdf)?;
        sealing::open(
            &master_key,
            &header.check_nonce,
            &header.associated_data(),
            &header.check,
        )
        .ok_or_else(|| KeystoreError::WrongPassphrase {
            path: dir.join(HEADER_FILE),
        })?;
        Ok(Keystore {
            dir: dir.to_path_buf(),
            kdf: header.kdf,
            master_key,
        })
    }

    /// The keystore directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The KDF parameters this keystore's master key was derived with.
    pub fn kdf_params(&self) -> KdfParams {
        self.kdf
    }

    /// Seals `key` into `<key_id>.json` (atomic, durable, never overwriting; see the module
    /// docs) with the current time as its creation time, and returns its metadata.
    ///
    /// Errors: [`KeystoreError::InvalidKeyId`]; [`KeystoreError::InvalidKey`] unless
    /// 1 ≤ threshold ≤ participants, the public key is 1 ..= [`MAX_PUBLIC_KEY_LEN`] bytes and the
    /// secret at most [`MAX_SECRET_LEN`]; [`KeystoreError::DuplicateKey`] when the id exists;
    /// [`KeystoreError::Io`].
    pub fn put(&self, key: &NewKey<'_>) -> Result<KeyInfo, KeystoreError> {
        let key_id = KeyId::new(key.key_id)?;
        let invalid = |reason: String| KeystoreError::InvalidKey {
            key_id: key_id.clone(),
            reason,
        };
        if key.threshold == 0 || key.threshold > key.participants {
            return Err(invalid(format!(
                "threshold {} of {} participants (need 1 ≤ t ≤ n)",
                key.threshold, key.participants
            )));
        }
        if key.public_key.is_empty() || key.public_key.len() > MAX_PUBLIC_KEY_LEN {
            return Err(invalid(format!(
                "public key of {} bytes (1 ..= {MAX_PUBLIC_KEY_LEN})",
                key.public_key.len()
            )));
        }
        if key.secret.len() > MAX_SECRET_LEN {
            return Err(invalid(format!(
                "secret of {} bytes (at most {MAX_SECRET_LEN})",
                key.secret.len()
            )));
        }
        // Cheap early refusal; the hard link below is what makes the refusal race-free.
        if fs::symlink_metadata(self.key_path(&key_id)).is_ok() {
            return Err(self.duplicate(&key_id));
        }
        let info = KeyInfo {
            key_id: key_id.clone(),
            scheme: key.scheme,
            threshold: key.threshold,
            participants: key.participants,
            public_key: key.public_key.to_vec(),
            created_at: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        };
        let sealed = SealedKey::seal(&self.master_key, info, key.secret);
        match write_new_file(&self.dir, &key_id.file_name(), &sealed.to_bytes()) {
            Ok(()) => {
                tracing::info!(key_id = %key_id, scheme = %key.scheme, "stored a key");
                Ok(sealed.info)
            }
            Err(WriteError::Exists) => Err(self.duplicate(&key_id)),
            Err(WriteError::Io(e)) => Err(e),
        }
    }

    fn duplicate(&self, key_id: &KeyId) -> KeystoreError {
        KeystoreError::DuplicateKey {
            key_id: key_id.clone(),
            path: self.key_path(key_id),
        }
    }

    /// Every key's authenticated public metadata, sorted by key id, and the key files that
    /// failed (see [`KeyListing`]). Considers exactly the regular files named `<valid key
    /// id>.json`; the header, temporary files and anything else are ignored. Each failure is
    /// also logged at `warn`. Authenticating decrypts each secret into zeroized scratch memory
    /// (a few milliseconds per MiB).
    ///
    /// Errors: [`KeystoreError::Io`] only when the directory cannot be read.
    pub fn list(&self) -> Result<KeyListing, KeystoreError> {
        let mut found = Vec::new();
        for entry in fs::read_dir(&self.dir).map_err(io_err(&self.dir))? {
            let entry = entry.map_err(io_err(&self.dir))?;
            let name = entry.file_name();
            let Some(key_id) = name
                .to_str()
                .and_then(|n| n.strip_suffix(".json"))
                .and_then(|stem| KeyId::new(stem).ok())
            else {
                continue;
            };
            found.push((key_id, entry.file_type()));
        }
        found.sort_by(|a, b| a.0.cmp(&b.0));
        let mut listing = KeyListing::default();
        for (key_id, file_type) in found {
            let path = self.key_path(&key_id);
            let result = match file_type {
                Ok(t) if t.is_file() => self.open_key(&key_id).map(|(info, _)| info),
                Ok(_) => Err(not_regular(&path)),
                Err(e) => Err(io_err(&path)(e)),
            };
            match result {
                Ok(info) => listing.keys.push(info),
                Err(e) => {
                    tracing::warn!(error = %e, "unreadable key file");
                    listing.unreadable.push(e);
                }
            }
        }
        Ok(listing)
    }

    /// The authenticated public metadata of `key_id`.
    ///
    /// Errors: [`KeystoreError::InvalidKeyId`]; [`KeystoreError::NotFound`]; `Corrupt`,
    /// `TooLarge`, `Tampered` or `Io` naming the file.
    pub fn public(&self, key_id: &str) -> Result<KeyInfo, KeystoreError> {
        self.open_key(&KeyId::new(key_id)?).map(|(info, _)| info)
    }

    /// The authenticated public metadata and the secret blob of `key_id`, from one read and
    /// one decryption of its file (the secret in memory zeroized on drop).
    ///
    /// Errors: as [`Keystore::public`].
    pub fn key(&self, key_id: &str) -> Result<(KeyInfo, Zeroizing<Vec<u8>>), KeystoreError> {
        self.open_key(&KeyId::new(key_id)?)
    }

    /// The secret blob of `key_id`, in memory zeroized on drop.
    ///
    /// Errors: as [`Keystore::public`].
    pub fn secret(&self, key_id: &str) -> Result<Zeroizing<Vec<u8>>, KeystoreError> {
        self.open_key(&KeyId::new(key_id)?)
            .map(|(_, secret)| secret)
    }

    fn key_path(&self, key_id: &KeyId) -> PathBuf {
        self.dir.join(key_id.file_name())
    }

    /// Reads, decodes and authenticates `<key_id>.json`.
    fn open_key(&self, key_id: &KeyId) -> Result<(KeyInfo, Zeroizing<Vec<u8>>), KeystoreError> {
        let path = self.key_path(key_id);
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_file() => {}
            Ok(_) => return Err(not_regular(&path)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(KeystoreError::NotFound {
                    key_id: key_id.clone(),
                    path,
                })
            }
            Err(e) => return Err(io_err(&path)(e)),
        }
        let bytes = read_bounded(&path, MAX_KEY_FILE_LEN)?;
        let corrupt = |reason| KeystoreError::Corrupt {
            path: path.clone(),
            reason,
        };
        let sealed = parse_key_file(&bytes).map_err(corrupt)?;
        if sealed.info.key_id != *key_id {
            return Err(corrupt(FileError::Field {
                field: "keyId",
                problem: format!(
                    "{:?} does not match the file name",
                    sealed.info.key_id.as_str()
                ),
            }));
        }
        let secret = sealed
            .open(&self.master_key)
            .ok_or_else(|| KeystoreError::Tampered { path: path.clone() })?;
        Ok((sealed.info, secret))
    }
}

fn not_regular(path: &Path) -> KeystoreError {
    KeystoreError::Io {
        path: path.to_path_buf(),
        source: io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"),
    }
}

/// A decoded key file whose public fields and ciphertext have not been authenticated yet: only
/// the keystore's master key can tell whether [`SealedKey::info`] is what was stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedKey {
    info: KeyInfo,
    nonce: [u8; NONCE_LEN],
    /// The encrypted secret followed by the 16-byte Poly1305 tag.
    ciphertext: Vec<u8>,
}

impl SealedKey {
    /// The public fields as the file states them, NOT authenticated.
    pub fn info(&self) -> &KeyInfo {
        &self.info
    }

    /// Encrypts `secret` in place in a buffer with room for the tag (so the plaintext is never
    /// copied into memory that is not zeroized).
    fn seal(master_key: &[u8; KEY_LEN], info: KeyInfo, secret: &[u8]) -> SealedKey {
        let (nonce, ciphertext) = sealing::seal(master_key, &key_associated_data(&info), secret);
        SealedKey {
            info,
            nonce,
            ciphertext,
        }
    }

    /// The secret, or `None` when authentication fails.
    fn open(&self, master_key: &[u8; KEY_LEN]) -> Option<Zeroizing<Vec<u8>>> {
        sealing::open(
            master_key,
            &self.nonce,
            &key_associated_data(&self.info),
            &self.ciphertext,
        )
    }

    /// The key file's bytes (pretty JSON, lowercase hex).
    pub fn to_bytes(&self) -> Vec<u8> {
        let file = KeyFileJson {
            version: u64::from(FORMAT_VERSION),
            key_id: self.info.key_id.to_string(),
            scheme: self.info.scheme.to_string(),
            threshold: u64::from(self.info.threshold),
            participants: u64::from(self.info.participants),
            public_key_hex: hex::encode(&self.info.public_key),
            created_at: self.info.created_at,
            nonce_hex: hex::encode(self.nonce),
            ciphertext_hex: hex::encode(&self.ciphertext),
        };
        sealing::file_bytes(&file)
    }
}

/// The associated data that binds a key file's public fields to its ciphertext (integers
/// little-endian): `"quasar-thresholdd/key/v1\0" ‖ len(keyId): u8 ‖ keyId ‖ len(scheme): u8 ‖
/// scheme ‖ threshold: u16 ‖ participants: u16 ‖ createdAt: u64 ‖ len(publicKey): u32 ‖
/// publicKey`. The format version is in the prefix; every variable-length field is
/// length-prefixed, so no two different field tuples share an encoding.
pub fn key_associated_data(info: &KeyInfo) -> Vec<u8> {
    let id = info.key_id.as_str().as_bytes();
    let scheme = info.scheme.as_str().as_bytes();
    let mut ad = Vec::with_capacity(KEY_AD_PREFIX.len() + 80 + info.public_key.len());
    ad.extend_from_slice(KEY_AD_PREFIX);
    // A key id is at most 64 bytes and a scheme name at most 8: both fit a byte.
    ad.push(id.len() as u8);
    ad.extend_from_slice(id);
    ad.push(scheme.len() as u8);
    ad.extend_from_slice(scheme);
    ad.extend_from_slice(&info.threshold.to_le_bytes());
    ad.extend_from_slice(&info.participants.to_le_bytes());
    ad.extend_from_slice(&info.created_at.to_le_bytes());
    // A public key is at most MAX_PUBLIC_KEY_LEN = 2^20 bytes (put and the parser check it).
    ad.extend_from_slice(&(info.public_key.len() as u32).to_le_bytes());
    ad.extend_from_slice(&info.public_key);
    ad
}

/// A key file as JSON. Integers are read as u64 so a range error can name its field.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct KeyFileJson {
    version: u64,
    key_id: String,
    scheme: String,
    threshold: u64,
    participants: u64,
    public_key_hex: String,
    created_at: u64,
    nonce_hex: String,
    ciphertext_hex: String,
}

/// Decodes a key file's bytes (at most [`MAX_KEY_FILE_LEN`]; the caller bounds the read)
/// without authenticating it. Checks the version, the key id rule, the scheme name,
/// 1 ≤ threshold ≤ participants ≤ 65,535, the hex lengths (public key 1 ..= [`MAX_PUBLIC_KEY_LEN`]
/// bytes, nonce 24, ciphertext 16 ..= [`MAX_SECRET_LEN`] + 16) before decoding them. Never panics.
///
/// Errors: [`FileError`] naming the field.
pub fn parse_key_file(bytes: &[u8]) -> Result<SealedKey, FileError> {
    let file: KeyFileJson = serde_json::from_slice(bytes)?;
    if file.version != u64::from(FORMAT_VERSION) {
        return Err(FileError::Version(file.version));
    }
    let field = |field, problem| FileError::Field { field, problem };
    let key_id = KeyId::new(&file.key_id).map_err(|e| field("keyId", e.to_string()))?;
    let scheme = file.scheme.parse().map_err(|e| field("scheme", e))?;
    let participants = u16::try_from(file.participants)
        .ok()
        .filter(|&n| n >= 1)
        .ok_or_else(|| {
            field(
                "participants",
                format!("{} not in 1..=65535", file.participants),
            )
        })?;
    let threshold = u16::try_from(file.threshold)
        .ok()
        .filter(|&t| t >= 1 && t <= participants)
        .ok_or_else(|| {
            field(
                "threshold",
                format!("{} not in 1..={participants}", file.threshold),
            )
        })?;
    let public_key = decode_hex("publicKeyHex", &file.public_key_hex, 1, MAX_PUBLIC_KEY_LEN)?;
    let nonce = decode_hex("nonceHex", &file.nonce_hex, NONCE_LEN, NONCE_LEN)?
        .try_into()
        .map_err(|_| field("nonceHex", "not 24 bytes".into()))?;
    let ciphertext = decode_hex(
        "ciphertextHex",
        &file.ciphertext_hex,
        TAG_LEN,
        MAX_SECRET_LEN + TAG_LEN,
    )?;
    Ok(SealedKey {
        info: KeyInfo {
            key_id,
            scheme,
            threshold,
            participants,
            public_key,
            created_at: file.created_at,
        },
        nonce,
        ciphertext,
    })
}

/// Decodes hex of `min ..= max` bytes, checking the length before allocating.
fn decode_hex(
    field: &'static str,
    text: &str,
    min: usize,
    max: usize,
) -> Result<Vec<u8>, FileError> {
    sealing::decode_hex_bounded(text, min, max)
        .map_err(|problem| FileError::Field { field, problem })
}

/// The decoded header: KDF parameters, salt and check value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    kdf: KdfParams,
    salt: [u8; SALT_LEN],
    check_nonce: [u8; NONCE_LEN],
    /// [`CHECK_LABEL`] sealed under the master key, tag appended.
    check: Vec<u8>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct HeaderJson {
    version: u64,
    kdf: String,
    argon2_version: u64,
    memory_kib: u64,
    iterations: u64,
    parallelism: u64,
    salt_hex: String,
    check_nonce_hex: String,
    check_hex: String,
}

impl Header {
    fn seal(kdf: KdfParams, salt: [u8; SALT_LEN], master_key: &[u8; KEY_LEN]) -> Header {
        let ad = Header::associated_data_of(kdf, &salt);
        let (check_nonce, check) = sealing::seal(master_key, &ad, CHECK_LABEL);
        Header {
            kdf,
            salt,
            check_nonce,
            check,
        }
    }

    /// `"quasar-thresholdd/keystore-check/v1\0" ‖ m ‖ t ‖ p ‖ salt` (u32 little-endian).
    fn associated_data(&self) -> Vec<u8> {
        Header::associated_data_of(self.kdf, &self.salt)
    }

    fn associated_data_of(kdf: KdfParams, salt: &[u8; SALT_LEN]) -> Vec<u8> {
        let mut ad = CHECK_AD_PREFIX.to_vec();
        ad.extend_from_slice(&kdf.to_le_bytes());
        ad.extend_from_slice(salt);
        ad
    }

    /// The header file's bytes (pretty JSON, lowercase hex).
    pub fn to_bytes(&self) -> Vec<u8> {
        let file = HeaderJson {
            version: u64::from(FORMAT_VERSION),
            kdf: KDF_NAME.into(),
            argon2_version: u64::from(ARGON2_VERSION),
            memory_kib: u64::from(self.kdf.memory_kib),
            iterations: u64::from(self.kdf.iterations),
            parallelism: u64::from(self.kdf.parallelism),
            salt_hex: hex::encode(self.salt),
            check_nonce_hex: hex::encode(self.check_nonce),
            check_hex: hex::encode(&self.check),
        };
        sealing::file_bytes(&file)
    }
}

/// Decodes `keystore.json` (at most 64 KiB): version 1, Argon2id version 0x13, KDF parameters
/// within bounds (m ≤ 1 GiB, 1 ≤ t ≤ 64, 1 ≤ p ≤ 16, m ≥ 8p), a 16-byte salt, a 24-byte nonce
/// and a check value of the label's length plus the tag. Never panics.
///
/// Errors: [`FileError`] naming the field.
pub fn parse_header(bytes: &[u8]) -> Result<Header, FileError> {
    let file: HeaderJson = serde_json::from_slice(bytes)?;
    if file.version != u64::from(FORMAT_VERSION) {
        return Err(FileError::Version(file.version));
    }
    let field = |field, problem| FileError::Field { field, problem };
    let kdf = sealing::kdf_from_fields(
        &file.kdf,
        file.argon2_version,
        file.memory_kib,
        file.iterations,
        file.parallelism,
    )
    .map_err(|(name, problem)| field(name, problem))?;
    let salt = decode_hex("saltHex", &file.salt_hex, SALT_LEN, SALT_LEN)?
        .try_into()
        .map_err(|_| field("saltHex", "not 16 bytes".into()))?;
    let check_nonce = decode_hex("checkNonceHex", &file.check_nonce_hex, NONCE_LEN, NONCE_LEN)?
        .try_into()
        .map_err(|_| field("checkNonceHex", "not 24 bytes".into()))?;
    let check_len = CHECK_LABEL.len() + TAG_LEN;
    let check = decode_hex("checkHex", &file.check_hex, check_len, check_len)?;
    Ok(Header {
        kdf,
        salt,
        check_nonce,
        check,
    })
}

/// The header at `path`, `None` when there is none.
fn read_header(path: &Path) -> Result<Option<Header>, KeystoreError> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() => {}
        Ok(_) => return Err(not_regular(path)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(path)(e)),
    }
    let bytes = read_bounded(path, MAX_HEADER_FILE_LEN)?;
    parse_header(&bytes)
        .map(Some)
        .map_err(|reason| KeystoreError::Corrupt {
            path: path.to_path_buf(),
            reason,
        })
}

fn derive_master_key(
    passphrase: &[u8],
    salt: &[u8; SALT_LEN],
    kdf: KdfParams,
) -> Result<SealingKey, KeystoreError> {
    sealing::derive_key(passphrase, salt, kdf).map_err(|KdfError(e)| KeystoreError::Kdf(e))
}

/// Creates `dir` (and missing parents) with mode 0700, or checks the existing one is a
/// directory, warning when group or others can access it.
fn create_private_dir(dir: &Path) -> Result<(), KeystoreError> {
    let not_a_directory = || KeystoreError::Io {
        path: dir.to_path_buf(),
        source: io::Error::new(
            io::ErrorKind::InvalidInput,
            "exists and is not a directory: give --data-dir a directory",
        ),
    };
    if fs::metadata(dir).is_ok_and(|meta| !meta.is_dir()) {
        return Err(not_a_directory());
    }
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(io_err(dir))?;
    let meta = fs::metadata(dir).map_err(io_err(dir))?;
    if !meta.is_dir() {
        return Err(not_a_directory());
    }
    warn_if_exposed(
        dir,
        &meta,
        "keystore directory is accessible to other users; chmod 700 it",
    );
    Ok(())
}

/// Logs a warning when group or others have any permission on `path`.
fn warn_if_exposed(path: &Path, meta: &fs::Metadata, message: &'static str) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            tracing::warn!(path = %path.display(), mode = format!("{mode:o}"), "{message}");
        }
    }
    #[cfg(not(unix))]
    let _ = (path, meta, message);
}

/// Whether `dir` holds any file named `<valid key id>.json`.
fn has_key_files(dir: &Path) -> Result<bool, KeystoreError> {
    for entry in fs::read_dir(dir).map_err(io_err(dir))? {
        let entry = entry.map_err(io_err(dir))?;
        let name = entry.file_name();
        if name
            .to_str()
            .and_then(|n| n.strip_suffix(".json"))
            .is_some_and(|stem| KeyId::new(stem).is_ok())
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Whether `name` is a temporary name of [`write_new_file`]: `.<target>.<16 lowercase hex
/// digits>.tmp`, where `target` is [`HEADER_FILE`] or `<valid key id>.json`.
fn is_temp_name(name: &str) -> bool {
    let Some(inner) = name
        .strip_prefix('.')
        .and_then(|rest| rest.strip_suffix(".tmp"))
    else {
        return false;
    };
    let Some((target, suffix)) = inner.rsplit_once('.') else {
        return false;
    };
    suffix.len() == 16
        && suffix
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        && (target == HEADER_FILE
            || target
                .strip_suffix(".json")
                .is_some_and(|stem| KeyId::new(stem).is_ok()))
}

/// Removes the regular files in `dir` with a temporary name ([`is_temp_name`]) whose
/// modification time is at least `min_age` ago, logging each at `warn`; younger ones (or ones
/// dated in the future) are left, logged at `debug`. Best effort: errors are logged.
fn remove_stale_temp_files(dir: &Path, min_age: Duration) {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "could not look for leftover temporary files");
            return;
        }
    };
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_str().is_some_and(is_temp_name) {
            continue;
        }
        let path = entry.path();
        // `DirEntry::metadata` does not follow a symlink: only a regular file is ours.
        let modified = match entry.metadata() {
            Ok(meta) if meta.is_file() => meta.modified(),
            Ok(_) => continue,
            Err(e) => Err(e),
        };
        let age = match modified {
            Ok(modified) => now.duration_since(modified).unwrap_or_default(),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "could not read a leftover temporary file's age");
                continue;
            }
        };
        if age < min_age {
            tracing::debug!(path = %path.display(), ?age, "leaving a recent temporary file (a write may be in progress)");
            continue;
        }
        match fs::remove_file(&path) {
            Ok(()) => tracing::warn!(
                path = %path.display(),
                "removed a temporary file left by an interrupted key write"
            ),
            Err(e) => tracing::warn!(
                path = %path.display(),
                error = %e,
                "could not remove a temporary file left by an interrupted key write"
            ),
        }
    }
}

/// Reads a regular file of at most `max` bytes: the length is checked on the open handle before
/// reading, and the read itself stops at `max + 1` (the file may grow meanwhile).
fn read_bounded(path: &Path, max: u64) -> Result<Vec<u8>, KeystoreError> {
    let file = fs::File::open(path).map_err(io_err(path))?;
    let meta = file.metadata().map_err(io_err(path))?;
    if !meta.is_file() {
        return Err(not_regular(path));
    }
    warn_if_exposed(
        path,
        &meta,
        "keystore file is readable by other users; chmod 600 it",
    );
    let too_large = |len| KeystoreError::TooLarge {
        path: path.to_path_buf(),
        len,
        max,
    };
    if meta.len() > max {
        return Err(too_large(meta.len()));
    }
    // meta.len() ≤ max ≤ 32 MiB fits usize.
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(io_err(path))?;
    if bytes.len() as u64 > max {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// How [`write_new_file`] failed.
enum WriteError {
    /// The name exists; nothing was written.
    Exists,
    Io(KeystoreError),
}

/// Writes `bytes` to `dir/name` atomically and durably, failing with [`WriteError::Exists`]
/// when the name exists: a temporary file created with mode 0600, written, fsync'd, hard-linked
/// to `name` (no-clobber), unlinked, then the directory fsync'd.
fn write_new_file(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), WriteError> {
    let mut suffix = [0u8; 8];
    rand::rngs::OsRng.fill_bytes(&mut suffix);
    let tmp = dir.join(format!(".{name}.{}.tmp", hex::encode(suffix)));
    let target = dir.join(name);
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| WriteError::Io(KeystoreError::Io { path, source })
    };
    if let Err(e) = quasar_chainspec::write_private_new(&tmp, bytes) {
        let _ = fs::remove_file(&tmp);
        return Err(io(&tmp)(e));
    }
    let linked = fs::hard_link(&tmp, &target);
    if let Err(e) = fs::remove_file(&tmp) {
        tracing::warn!(path = %tmp.display(), error = %e, "could not remove a temporary file");
    }
    match linked {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Err(WriteError::Exists),
        Err(e) => return Err(io(&target)(e)),
    }
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TINY: KdfParams = KdfParams::for_tests();
    const PASS: &[u8] = b"correct horse battery staple";

    fn id(s: &str) -> KeyId {
        KeyId::new(s).expect("a valid key id")
    }

    const PUBLIC_KEY: [u8; 48] = [0xA5; 48];

    fn new_key<'a>(key_id: &'a str, scheme: Scheme, secret: &'a [u8]) -> NewKey<'a> {
        NewKey {
            key_id,
            scheme,
            threshold: 2,
            participants: 3,
            public_key: &PUBLIC_KEY,
            secret,
        }
    }

    #[test]
    fn a_data_directory_that_is_a_file_is_named_as_such() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("keystore");
        fs::write(&file, b"x").unwrap();
        let error = create_private_dir(&file).expect_err("a file");
        assert!(error.to_string().contains("is not a directory"), "{error}");
        assert_eq!(fs::read(&file).unwrap(), b"x");
    }

    fn open(dir: &Path) -> Keystore {
        Keystore::open_with(dir, PASS, TINY).expect("the keystore opens")
    }

    /// A keystore in a fresh temp dir (the keystore lives in a subdirectory it creates).
    fn fresh() -> (tempfile::TempDir, Keystore) {
        let tmp = tempfile::tempdir().expect("temp dir");
        let store = open(&tmp.path().join("keys"));
        (tmp, store)
    }

    fn edit_json(path: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
        let mut value: serde_json::Value =
            serde_json::from_slice(&fs::read(path).expect("reads")).expect("JSON");
        edit(&mut value);
        fs::write(path, serde_json::to_vec(&value).expect("encodes")).expect("writes");
    }

    /// Flips one hex digit of a string field (0 ↔ 1, anything else → 0).
    fn flip_hex(value: &mut serde_json::Value, field: &str, at: usize) {
        let text = value[field].as_str().expect("a string field").to_string();
        let mut chars: Vec<char> = text.chars().collect();
        chars[at] = if chars[at] == '0' { '1' } else { '0' };
        value[field] = chars.into_iter().collect::<String>().into();
    }

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(path).expect("metadata").permissions().mode() & 0o777
    }

    #[test]
    fn put_then_list_public_and_secret_round_trip() {
        let (_tmp, store) = fresh();
        let big: Vec<u8> = (0..3 << 20).map(|i| (i * 7 + 3) as u8).collect();
        let corona = store
            .put(&new_key("corona-1", Scheme::Corona, &big))
            .expect("stores");
        let bls = store
            .put(&new_key("bls-0", Scheme::Bls, b"bls share"))
            .expect("stores");
        let empty = store
            .put(&new_key("empty", Scheme::Magnetar, b""))
            .expect("an empty secret is allowed");
        assert_eq!(corona.scheme, Scheme::Corona);
        assert_eq!((corona.threshold, corona.participants), (2, 3));
        assert!(corona.created_at > 1_600_000_000, "{}", corona.created_at);

        let listing = store.list().expect("lists");
        assert!(listing.unreadable.is_empty(), "{:?}", listing.unreadable);
        assert_eq!(listing.keys, vec![bls.clone(), corona.clone(), empty]);
        assert_eq!(store.public("corona-1").expect("reads"), corona);
        assert_eq!(*store.secret("corona-1").expect("reads"), big);
        assert_eq!(*store.secret("bls-0").expect("reads"), b"bls share");
        assert!(store.secret("empty").expect("reads").is_empty());
        assert!(matches!(
            store.secret("absent"),
            Err(KeystoreError::NotFound { .. })
        ));
    }

    #[test]
    fn a_reopened_keystore_reads_the_same_secrets() {
        let (tmp, store) = fresh();
        store
            .put(&new_key("pulsar-7", Scheme::Pulsar, b"shares of key 7"))
            .expect("stores");
        let before = store.list().expect("lists").keys;
        drop(store);
        // A restart: a new open with the same passphrase and (ignored) different parameters
        // derives the same master key from the header's parameters.
        let other = KdfParams {
            memory_kib: 16,
            ..TINY
        };
        let store = Keystore::open_with(&tmp.path().join("keys"), PASS, other).expect("reopens");
        assert_eq!(store.kdf_params(), TINY);
        assert_eq!(store.list().expect("lists").keys, before);
        assert_eq!(
            *store.secret("pulsar-7").expect("reads"),
            b"shares of key 7"
        );
    }

    #[test]
    fn a_wrong_passphrase_fails_at_open() {
        let (tmp, _store) = fresh();
        let dir = tmp.path().join("keys");
        assert!(matches!(
            Keystore::open_with(&dir, b"Correct horse battery staple", TINY),
            Err(KeystoreError::WrongPassphrase { .. })
        ));
        assert!(matches!(
            Keystore::open_with(&dir, b"", TINY),
            Err(KeystoreError::EmptyPassphrase)
        ));
    }

    #[test]
    fn an_edited_header_reads_as_a_wrong_passphrase() {
        let (tmp, _store) = fresh();
        let dir = tmp.path().join("keys");
        let header = dir.join(HEADER_FILE);
        let original = fs::read(&header).expect("reads");
        for edit in [
            (|v: &mut serde_json::Value| flip_hex(v, "saltHex", 0)) as fn(&mut _),
            |v| flip_hex(v, "checkHex", 3),
            |v| flip_hex(v, "checkNonceHex", 5),
            |v| v["iterations"] = 2.into(),
        ] {
            fs::write(&header, &original).expect("restores");
            edit_json(&header, edit);
            assert!(matches!(
                Keystore::open_with(&dir, PASS, TINY),
                Err(KeystoreError::WrongPassphrase { .. })
            ));
        }
    }

    #[test]
    fn a_header_asking_for_absurd_kdf_cost_is_refused_before_deriving() {
        let (tmp, _store) = fresh();
        let dir = tmp.path().join("keys");
        edit_json(&dir.join(HEADER_FILE), |v| {
            v["memoryKib"] = (1u64 << 40).into()
        });
        let err = Keystore::open_with(&dir, PASS, TINY).unwrap_err();
        assert!(matches!(err, KeystoreError::Corrupt { .. }), "{err}");
        assert!(err.to_string().contains("keystore.json"), "{err}");
    }

    #[test]
    fn tampering_with_a_key_file_fails_authentication() {
        let (tmp, store) = fresh();
        store
            .put(&new_key("k", Scheme::Pulsar, b"0123456789"))
            .expect("stores");
        let path = tmp.path().join("keys").join("k.json");
        let original = fs::read(&path).expect("reads");
        type Edit = (&'static str, fn(&mut serde_json::Value));
        let edits: [Edit; 8] = [
            ("ciphertext", |v| flip_hex(v, "ciphertextHex", 0)),
            ("tag", |v| {
                let len = v["ciphertextHex"].as_str().unwrap().len();
                flip_hex(v, "ciphertextHex", len - 1)
            }),
            ("nonce", |v| flip_hex(v, "nonceHex", 10)),
            ("public key", |v| flip_hex(v, "publicKeyHex", 2)),
            ("threshold", |v| v["threshold"] = 1.into()),
            ("participants", |v| v["participants"] = 4.into()),
            ("scheme", |v| v["scheme"] = "corona".into()),
            ("creation time", |v| v["createdAt"] = 1.into()),
        ];
        for (what, edit) in edits {
            fs::write(&path, &original).expect("restores");
            edit_json(&path, edit);
            for result in [store.public("k").map(drop), store.secret("k").map(drop)] {
                let err = result.expect_err(what);
                assert!(
                    matches!(err, KeystoreError::Tampered { .. }),
                    "{what}: {err}"
                );
                assert!(err.to_string().contains("k.json"), "{what}: {err}");
            }
        }
        fs::write(&path, &original).expect("restores");
        assert_eq!(*store.secret("k").expect("reads"), b"0123456789");
    }

    #[test]
    fn a_key_file_renamed_or_relabelled_to_another_id_is_refused() {
        let (tmp, store) = fresh();
        store.put(&new_key("a", Scheme::Bls, b"a")).expect("stores");
        let dir = tmp.path().join("keys");
        // Copied to another name: the keyId inside no longer matches the file name.
        fs::copy(dir.join("a.json"), dir.join("b.json")).expect("copies");
        let err = store.public("b").unwrap_err();
        assert!(
            matches!(
                &err,
                KeystoreError::Corrupt {
                    reason: FileError::Field { field: "keyId", .. },
                    ..
                }
            ),
            "{err}"
        );
        // And relabelled to match: the key id is bound to the ciphertext.
        edit_json(&dir.join("b.json"), |v| v["keyId"] = "b".into());
        assert!(matches!(
            store.public("b"),
            Err(KeystoreError::Tampered { .. })
        ));
    }

    #[test]
    fn a_key_file_from_another_keystore_fails_authentication() {
        let (tmp, store) = fresh();
        store.put(&new_key("k", Scheme::Bls, b"x")).expect("stores");
        let other =
            Keystore::open_with(&tmp.path().join("other"), b"another", TINY).expect("opens");
        fs::copy(
            tmp.path().join("keys").join("k.json"),
            tmp.path().join("other").join("k.json"),
        )
        .expect("copies");
        assert!(matches!(
            other.secret("k"),
            Err(KeystoreError::Tampered { .. })
        ));
    }

    #[cfg(unix)]
    #[test]
    fn files_are_0600_and_the_directory_0700() {
        let (tmp, store) = fresh();
        store.put(&new_key("k", Scheme::Bls, b"x")).expect("stores");
        let dir = tmp.path().join("keys");
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join("k.json")), 0o600);
        assert_eq!(mode(&dir.join(HEADER_FILE)), 0o600);
        // No temporary file is left behind.
        let names: Vec<String> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[test]
    fn a_key_id_is_never_overwritten() {
        let (_tmp, store) = fresh();
        store
            .put(&new_key("k", Scheme::Bls, b"first"))
            .expect("stores");
        let err = store
            .put(&new_key("k", Scheme::Corona, b"second"))
            .unwrap_err();
        assert!(matches!(err, KeystoreError::DuplicateKey { .. }), "{err}");
        assert_eq!(*store.secret("k").expect("reads"), b"first");
    }

    #[test]
    fn racing_writers_of_one_key_id_store_exactly_one() {
        let (_tmp, store) = fresh();
        let store = std::sync::Arc::new(store);
        let results: Vec<_> = (0..8u8)
            .map(|i| {
                let store = store.clone();
                std::thread::spawn(move || store.put(&new_key("k", Scheme::Bls, &[i])))
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().expect("no panic"))
            .collect();
        let stored: Vec<_> = results.iter().filter(|r| r.is_ok()).collect();
        assert_eq!(stored.len(), 1, "{results:?}");
        assert!(results
            .iter()
            .all(|r| r.is_ok() || matches!(r, Err(KeystoreError::DuplicateKey { .. }))));
        assert_eq!(store.secret("k").expect("reads").len(), 1);
    }

    /// Regression (attacker trial): a kill -9 between a key file's write and its link left
    /// `.<id>.json.<hex>.tmp` behind for good. Opening now removes the keystore's own leftover
    /// temporaries once they are older than any write takes, and nothing else: not a young one
    /// (another process may be mid-write), not a name of another pattern, not the keys.
    #[test]
    fn open_removes_stale_temporary_files_and_nothing_else() {
        let (tmp, store) = fresh();
        store.put(&new_key("k", Scheme::Bls, &[1])).expect("stores");
        drop(store);
        let dir = tmp.path().join("keys");
        let hour_ago = SystemTime::now() - Duration::from_secs(3600);
        let create = |name: &str, modified: SystemTime| {
            let file = fs::File::create(dir.join(name)).expect("creates");
            file.set_modified(modified).expect("sets the time");
        };
        let stale = [
            ".k.json.0123456789abcdef.tmp",
            ".keystore.json.fedcba9876543210.tmp",
        ];
        let kept = [
            // Another pattern: wrong suffix length, uppercase hex, no dot, invalid key id.
            ".k.json.0123.tmp",
            ".k.json.0123456789ABCDEF.tmp",
            "k.json.0123456789abcdef.tmp",
            ".K!.json.0123456789abcdef.tmp",
            "notes.tmp",
        ];
        for name in stale.iter().chain(&kept) {
            create(name, hour_ago);
        }
        let young = ".k2.json.00112233445566aa.tmp";
        create(young, SystemTime::now());

        let store = open(&dir);
        for name in stale {
            assert!(!dir.join(name).exists(), "{name} is removed");
        }
        for name in kept.iter().chain([&young]) {
            assert!(dir.join(name).exists(), "{name} stays");
        }
        assert_eq!(
            store.secret("k").expect("the key survives").as_slice(),
            &[1]
        );
        assert!(store.list().expect("lists").unreadable.is_empty());
    }

    #[test]
    fn bad_key_ids_are_refused() {
        let long = "a".repeat(65);
        let (_tmp, store) = fresh();
        for bad in [
            "../x", "", &long, "Upper", "a/b", "a.json", "a b", "é", "keystore", "..",
        ] {
            let err = KeyId::new(bad).expect_err(bad);
            assert!(
                matches!(err, KeystoreError::InvalidKeyId { .. }),
                "{bad}: {err}"
            );
            for result in [
                store.put(&new_key(bad, Scheme::Bls, b"x")).map(drop),
                store.public(bad).map(drop),
                store.secret(bad).map(drop),
            ] {
                assert!(
                    matches!(result, Err(KeystoreError::InvalidKeyId { .. })),
                    "{bad}"
                );
            }
        }
        assert!(store.list().expect("lists").keys.is_empty());
        for good in ["a", "0", "-", "bls-key-1", &"z".repeat(64)] {
            KeyId::new(good).expect(good);
        }
        // Deserialization goes through the same check.
        assert!(serde_json::from_str::<KeyId>(r#""../etc""#).is_err());
        assert_eq!(
            serde_json::from_str::<KeyId>(r#""ok-1""#).unwrap(),
            id("ok-1")
        );
    }

    #[test]
    fn inconsistent_or_oversized_keys_are_refused() {
        let (_tmp, store) = fresh();
        let mut key = new_key("k", Scheme::Bls, b"x");
        for (t, n) in [(0, 3), (4, 3), (1, 0)] {
            key.threshold = t;
            key.participants = n;
            assert!(matches!(
                store.put(&key),
                Err(KeystoreError::InvalidKey { .. })
            ));
        }
        key.threshold = 1;
        key.participants = 1;
        key.public_key = &[];
        assert!(matches!(
            store.put(&key),
            Err(KeystoreError::InvalidKey { .. })
        ));
        key.public_key = &[1];
        let too_long = vec![0; MAX_SECRET_LEN + 1];
        key.secret = &too_long;
        assert!(matches!(
            store.put(&key),
            Err(KeystoreError::InvalidKey { .. })
        ));
        assert!(store.list().expect("lists").keys.is_empty());
    }

    #[test]
    fn the_largest_key_fits_the_file_limit() {
        let (_tmp, store) = fresh();
        let (public_key, secret) = (vec![0xFF; MAX_PUBLIC_KEY_LEN], vec![0xEE; MAX_SECRET_LEN]);
        let key = NewKey {
            public_key: &public_key,
            secret: &secret,
            ..new_key("max", Scheme::Corona, b"")
        };
        store.put(&key).expect("stores");
        let len = fs::metadata(store.dir().join("max.json")).unwrap().len();
        assert!(len <= MAX_KEY_FILE_LEN, "{len}");
        assert_eq!(store.secret("max").expect("reads").len(), MAX_SECRET_LEN);
    }

    #[test]
    fn truncated_garbage_and_oversized_files_are_errors_naming_the_file() {
        let (tmp, store) = fresh();
        store
            .put(&new_key("k", Scheme::Bls, b"secret"))
            .expect("stores");
        let dir = tmp.path().join("keys");
        let path = dir.join("k.json");
        let original = fs::read(&path).expect("reads");
        let cases: Vec<Vec<u8>> = vec![
            original[..original.len() / 2].to_vec(),
            Vec::new(),
            b"\xFF\xFE garbage \x00".to_vec(),
            b"[]".to_vec(),
            b"{}".to_vec(),
            "[".repeat(100_000).into_bytes(),
            String::from_utf8(original.clone())
                .unwrap()
                .replace("\"version\": 1", "\"version\": 2")
                .into_bytes(),
            String::from_utf8(original.clone())
                .unwrap()
                .replace("\"threshold\": 2", "\"threshold\": 99999999999")
                .into_bytes(),
            String::from_utf8(original.clone())
                .unwrap()
                .replace("\"scheme\"", "\"extra\": 1, \"scheme\"")
                .into_bytes(),
        ];
        for bytes in cases {
            fs::write(&path, &bytes).expect("writes");
            let err = store.secret("k").unwrap_err();
            assert!(matches!(err, KeystoreError::Corrupt { .. }), "{err}");
            assert!(err.to_string().contains("k.json"), "{err}");
        }
        // Sparse: one byte over the limit, refused before reading.
        let file = fs::File::create(&path).expect("creates");
        file.set_len(MAX_KEY_FILE_LEN + 1).expect("extends");
        assert!(matches!(
            store.public("k"),
            Err(KeystoreError::TooLarge { .. })
        ));
    }

    #[test]
    fn the_parser_checks_hex_lengths_and_ranges() {
        let (_tmp, store) = fresh();
        store.put(&new_key("k", Scheme::Bls, b"s")).expect("stores");
        let original: serde_json::Value =
            serde_json::from_slice(&fs::read(store.dir().join("k.json")).unwrap()).unwrap();
        let cases: [(&str, serde_json::Value); 9] = [
            ("nonceHex", "00".into()),
            ("nonceHex", "zz".repeat(24).into()),
            ("publicKeyHex", "".into()),
            ("publicKeyHex", "abc".into()),
            ("ciphertextHex", "00".repeat(15).into()),
            ("threshold", 0.into()),
            ("participants", 70_000.into()),
            ("scheme", "rsa".into()),
            ("keyId", "../k".into()),
        ];
        for (field, value) in cases {
            let mut edited = original.clone();
            edited[field] = value.clone();
            let err = parse_key_file(&serde_json::to_vec(&edited).unwrap())
                .expect_err(&format!("{field} = {value}"));
            assert!(
                matches!(&err, FileError::Field { field: f, .. } if f == &field),
                "{field} = {value}: {err}"
            );
        }
    }

    #[test]
    fn a_parsed_key_file_re_encodes_to_what_parses_the_same() {
        let (_tmp, store) = fresh();
        store
            .put(&new_key("k", Scheme::Magnetar, b"s"))
            .expect("stores");
        let bytes = fs::read(store.dir().join("k.json")).unwrap();
        let sealed = parse_key_file(&bytes).expect("parses");
        assert_eq!(sealed.to_bytes(), bytes);
        assert_eq!(sealed.info(), &store.public("k").unwrap());
    }

    #[test]
    fn a_listing_with_a_corrupt_file_still_lists_the_others() {
        let (tmp, store) = fresh();
        for name in ["a", "b", "c"] {
            store
                .put(&new_key(name, Scheme::Bls, name.as_bytes()))
                .expect("stores");
        }
        let dir = tmp.path().join("keys");
        fs::write(dir.join("b.json"), b"{ not json").expect("writes");
        // Files that are not keys are ignored: temporaries, other names, directories.
        fs::write(dir.join(".a.json.0011223344556677.tmp"), b"partial").unwrap();
        fs::write(dir.join("README.txt"), b"hello").unwrap();
        fs::write(dir.join("Upper.json"), b"{}").unwrap();
        fs::create_dir(dir.join("sub")).unwrap();
        let listing = store.list().expect("lists");
        let ids: Vec<&str> = listing.keys.iter().map(|k| k.key_id.as_str()).collect();
        assert_eq!(ids, ["a", "c"]);
        assert_eq!(listing.unreadable.len(), 1, "{:?}", listing.unreadable);
        assert!(
            listing.unreadable[0].to_string().contains("b.json"),
            "{}",
            listing.unreadable[0]
        );
    }

    #[test]
    fn a_directory_with_key_files_but_no_header_is_not_reinitialized() {
        let (tmp, store) = fresh();
        store.put(&new_key("k", Scheme::Bls, b"x")).expect("stores");
        let dir = tmp.path().join("keys");
        fs::remove_file(dir.join(HEADER_FILE)).expect("removes");
        assert!(matches!(
            Keystore::open_with(&dir, PASS, TINY),
            Err(KeystoreError::MissingHeader { .. })
        ));
        assert!(!dir.join(HEADER_FILE).exists());
    }

    #[test]
    fn secrets_and_the_master_key_stay_out_of_debug_output() {
        let (_tmp, store) = fresh();
        let key = new_key("k", Scheme::Bls, b"SECRET-BYTES");
        let printed = format!("{store:?} {key:?}");
        assert!(!printed.contains("SECRET-BYTES"), "{printed}");
        assert!(
            !printed.contains(&hex::encode(b"SECRET-BYTES")),
            "{printed}"
        );
        assert!(
            !printed.contains(&hex::encode(&store.master_key[..])),
            "{printed}"
        );
        assert!(
            printed.contains("<redacted>") && printed.contains("<12 bytes>"),
            "{printed}"
        );
    }

    #[test]
    fn the_keystore_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Keystore>();
    }

    #[test]
    fn production_parameters_are_rfc_9106_sized() {
        assert_eq!(KdfParams::default(), KdfParams::PRODUCTION);
        assert_eq!(KdfParams::PRODUCTION.memory_kib, 65_536);
        assert!(KdfParams::PRODUCTION.check().is_ok());
        assert!(KdfParams {
            iterations: 0,
            ..TINY
        }
        .check()
        .is_err());
    }
}
