//! The validator secret key file (`validator.key.json`) sealed at rest under a passphrase
//! (issue 29; docs/architecture.md §9: keys persist encrypted at rest).
//!
//! # What it seals
//!
//! The plaintext is the secret key file's JSON exactly as `keygen` and `deal` write it
//! unsealed ([`crate::SecretKeyFile`]: BLS secret key, ML-DSA-65 and SLH-DSA seeds, TLS
//! private key, dealt threshold shares). Sealing wraps those bytes; nothing else about the key
//! directory changes (`validator.pub.json` stays public and plaintext).
//!
//! # Cryptography
//!
//! The primitives and parameters of thresholdd's keystore ([`crate::sealing`]):
//!
//! - **KDF.** Argon2id (RFC 9106, version 0x13) over the passphrase with a 16-byte random salt
//!   (fresh per write) gives a 32-byte key. Written files use [`KdfParams::PRODUCTION`]
//!   (m = 64 MiB, t = 3, p = 1); a file states its own parameters, accepted within m ≤ 1 GiB,
//!   1 ≤ t ≤ 64, 1 ≤ p ≤ 16, m ≥ 8p (so a file cannot make the derivation unbounded).
//! - **AEAD.** XChaCha20-Poly1305 (draft-irtf-cfrg-xchacha-03) with a 24-byte random nonce.
//!   Associated data: `"quasar-node/validator-key/v1\0" ‖ m ‖ t ‖ p ‖ salt` (u32
//!   little-endian), so editing the KDF parameters or the salt fails authentication as editing
//!   the ciphertext does. The distinct prefix separates this use from the keystore's.
//!
//! # File format (JSON, version 1)
//!
//! `{"version":1,"kdf":{"algorithm":"argon2id","argon2Version":19,"memoryKib":m,
//! "iterations":t,"parallelism":p,"saltHex":<16 B>},"nonceHex":<24 B>,"ciphertextHex":<plaintext
//! ‖ 16-byte tag>}` ([`sealing::KdfJson`] is the `kdf` object). Unknown fields are refused; hex is lowercase when written, either case when read. The
//! file is at most [`MAX_SEALED_FILE_LEN`] = 16 MiB (checked before reading), its plaintext at
//! most [`MAX_PLAINTEXT_LEN`] = 7 MiB. A file is told from a plaintext one by its `kdf` field
//! ([`is_sealed`]); a plaintext secret key file has none.
//!
//! # What a wrong passphrase gives
//!
//! The derived key differs, so the tag does not verify: [`OpenError::WrongPassphrase`]. A
//! modified file (any byte of the parameters, salt, nonce or ciphertext) gives the same error:
//! the two are indistinguishable by design, and the message says both. Nothing in a file can
//! panic the parser ([`parse_sealed`], fuzzed by `sealed_key_file`).
//!
//! # Plaintext files and passphrases
//!
//! A plaintext key file is read only with an explicit opt-in ([`KeyAccess`]: `plaintext_keys =
//! true` in `node.toml`, `--plaintext` on the command line); otherwise loading it fails with a
//! message naming `quasar-node keys seal`, which seals a key directory in place. The passphrase
//! comes from a file (`key_passphrase_file` in `node.toml`, `--passphrase-file`) or the
//! environment ([`PASSPHRASE_ENV`]), read by [`sealing::read_passphrase`] (at most 64 KiB,
//! trailing newlines dropped, never empty).

use crate::sealing::{self, KdfError, KdfJson, KdfParams, NONCE_LEN, SALT_LEN, TAG_LEN};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use zeroize::Zeroizing;

/// The format version written and read.
pub const FORMAT_VERSION: u32 = 1;
/// Largest sealed file read, bytes.
pub const MAX_SEALED_FILE_LEN: u64 = 16 << 20;
/// Largest plaintext sealed, bytes (hex doubles it on disk).
pub const MAX_PLAINTEXT_LEN: usize = 7 << 20;
/// What a sealed file holds. The associated data starts with the purpose's prefix, so a file
/// sealed for one purpose never opens as another (an account key file given where a validator
/// key file is expected fails as a wrong passphrase does).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// The validator secret key file (`validator.key.json`).
    ValidatorKey,
    /// An account's ML-DSA-65 signing key (`quasar-node account new`).
    AccountKey,
}

impl Purpose {
    fn prefix(self) -> &'static [u8] {
        match self {
            Purpose::ValidatorKey => b"quasar-node/validator-key/v1\0",
            Purpose::AccountKey => b"quasar-node/account-key/v1\0",
        }
    }
}
/// The environment variable a key passphrase is read from when no file is given.
pub const PASSPHRASE_ENV: &str = "QUASAR_KEY_PASSPHRASE";

const _: () = assert!(2 * (MAX_PLAINTEXT_LEN + TAG_LEN) + 4096 <= MAX_SEALED_FILE_LEN as usize);

/// A sealed key file, decoded but not opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedKeyFile {
    kdf: KdfParams,
    salt: [u8; SALT_LEN],
    nonce: [u8; NONCE_LEN],
    /// The encrypted plaintext followed by the 16-byte Poly1305 tag.
    ciphertext: Vec<u8>,
}

/// What is wrong inside a sealed file (the caller adds the path).
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// Not JSON of the expected shape.
    #[error("not a sealed key file: {0}")]
    Json(#[from] serde_json::Error),
    /// A format version this build does not read.
    #[error("unsupported sealed key file version {0} (this build reads {FORMAT_VERSION})")]
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

/// Why a sealed file did not open.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Authentication failed: a wrong passphrase, or the file was modified.
    #[error("wrong passphrase (or the file was modified)")]
    WrongPassphrase,
    /// The derivation failed (parameters are checked at parse, so not expected).
    #[error(transparent)]
    Kdf(#[from] KdfError),
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SealedJson {
    version: u64,
    kdf: KdfJson,
    nonce_hex: String,
    ciphertext_hex: String,
}

/// Only whether the fields that tell the two kinds of key file apart are present (a sealed
/// file's `kdf`, a plaintext file's `bls_secret_key`); every other field is ignored.
#[derive(Deserialize)]
struct Probe {
    #[serde(default)]
    kdf: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    bls_secret_key: Option<serde::de::IgnoredAny>,
}

/// What kind of secret key file some bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A JSON object with a top-level `kdf` field.
    Sealed,
    /// A JSON object with a top-level `bls_secret_key` and no `kdf`.
    Plaintext,
    /// Neither (not JSON, truncated, damaged, or another file).
    Unreadable,
}

fn kind(bytes: &[u8]) -> Kind {
    match serde_json::from_slice::<Probe>(bytes) {
        Ok(Probe { kdf: Some(_), .. }) => Kind::Sealed,
        Ok(Probe {
            bls_secret_key: Some(_),
            ..
        }) => Kind::Plaintext,
        _ => Kind::Unreadable,
    }
}

/// Whether `bytes` (a JSON object) is a sealed key file rather than a plaintext one: it has a
/// top-level `kdf` field. Bytes that are not a JSON object read as not sealed.
pub fn is_sealed(bytes: &[u8]) -> bool {
    kind(bytes) == Kind::Sealed
}

fn associated_data(purpose: Purpose, kdf: KdfParams, salt: &[u8; SALT_LEN]) -> Vec<u8> {
    let mut ad = purpose.prefix().to_vec();
    ad.extend_from_slice(&kdf.to_le_bytes());
    ad.extend_from_slice(salt);
    ad
}

impl SealedKeyFile {
    /// Seals `plaintext` (at most [`MAX_PLAINTEXT_LEN`] bytes, else [`KdfError`] naming the
    /// length) for `purpose` under `passphrase` with `kdf` and a fresh salt and nonce. Runs
    /// Argon2id once.
    pub fn seal(
        purpose: Purpose,
        passphrase: &[u8],
        kdf: KdfParams,
        plaintext: &[u8],
    ) -> Result<SealedKeyFile, KdfError> {
        if plaintext.len() > MAX_PLAINTEXT_LEN {
            return Err(KdfError(format!(
                "a key file of {} bytes, more than {MAX_PLAINTEXT_LEN}",
                plaintext.len()
            )));
        }
        let salt = sealing::random_salt();
        let key = sealing::derive_key(passphrase, &salt, kdf)?;
        let (nonce, ciphertext) =
            sealing::seal(&key, &associated_data(purpose, kdf, &salt), plaintext);
        Ok(SealedKeyFile {
            kdf,
            salt,
            nonce,
            ciphertext,
        })
    }

    /// The plaintext of a file sealed for `purpose`, or [`OpenError::WrongPassphrase`] when
    /// authentication fails (also for a file sealed for another purpose). Runs Argon2id once,
    /// with the file's parameters.
    pub fn open(
        &self,
        purpose: Purpose,
        passphrase: &[u8],
    ) -> Result<Zeroizing<Vec<u8>>, OpenError> {
        let key = sealing::derive_key(passphrase, &self.salt, self.kdf)?;
        sealing::open(
            &key,
            &self.nonce,
            &associated_data(purpose, self.kdf, &self.salt),
            &self.ciphertext,
        )
        .ok_or(OpenError::WrongPassphrase)
    }

    /// The KDF parameters the file states (not authenticated until [`SealedKeyFile::open`]).
    pub fn kdf(&self) -> KdfParams {
        self.kdf
    }

    /// The file's bytes (pretty JSON, lowercase hex, trailing newline).
    pub fn to_bytes(&self) -> Vec<u8> {
        let file = SealedJson {
            version: u64::from(FORMAT_VERSION),
            kdf: KdfJson::new(self.kdf, &self.salt),
            nonce_hex: hex::encode(self.nonce),
            ciphertext_hex: hex::encode(&self.ciphertext),
        };
        sealing::file_bytes(&file)
    }
}

/// Decodes a sealed file's bytes (the caller bounds the read to [`MAX_SEALED_FILE_LEN`])
/// without opening it: version 1, `kdf` "argon2id", Argon2 version 19, parameters within the
/// bounds, salt 16 bytes, nonce 24, ciphertext 16 ..= [`MAX_PLAINTEXT_LEN`] + 16, each hex
/// length checked before decoding. Never panics. Errors: [`FileError`] naming the field.
pub fn parse_sealed(bytes: &[u8]) -> Result<SealedKeyFile, FileError> {
    let file: SealedJson = serde_json::from_slice(bytes)?;
    if file.version != u64::from(FORMAT_VERSION) {
        return Err(FileError::Version(file.version));
    }
    let field = |field, problem| FileError::Field { field, problem };
    let (kdf, salt) = file
        .kdf
        .decode()
        .map_err(|(name, problem)| field(name, problem))?;
    let hex_field = |name, text: &str, min, max| {
        sealing::decode_hex_bounded(text, min, max).map_err(|problem| field(name, problem))
    };
    let nonce = hex_field("nonceHex", &file.nonce_hex, NONCE_LEN, NONCE_LEN)?
        .try_into()
        .map_err(|_| field("nonceHex", "not 24 bytes".into()))?;
    let ciphertext = hex_field(
        "ciphertextHex",
        &file.ciphertext_hex,
        TAG_LEN,
        MAX_PLAINTEXT_LEN + TAG_LEN,
    )?;
    Ok(SealedKeyFile {
        kdf,
        salt,
        nonce,
        ciphertext,
    })
}

/// Why a secret key file could not be read or written; each names the file and what to do.
/// All are fatal to the command or the node start that met them.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    /// A plaintext file, and plaintext files were not opted into.
    #[error(
        "{}: plaintext validator key file, refused: encrypt it with `quasar-node keys seal --dir \
         {} --passphrase-file FILE`, or opt in with `plaintext_keys = true` in node.toml \
         (`--plaintext` on the command line)",
        .path.display(),
        .path.parent().unwrap_or(Path::new(".")).display()
    )]
    PlaintextRefused {
        /// The file.
        path: PathBuf,
    },
    /// Neither a sealed nor a plaintext key file: truncated, damaged, or not a key file.
    #[error(
        "{}: not a validator key file (neither encrypted nor plaintext; truncated or damaged?): \
         restore it from your backup",
        .path.display()
    )]
    Unreadable {
        /// The file.
        path: PathBuf,
    },
    /// A sealed file, and no passphrase was given.
    #[error(
        "{} is encrypted and no passphrase was given: set key_passphrase_file in node.toml, pass \
         --passphrase-file, or set {PASSPHRASE_ENV}",
        .path.display()
    )]
    NoPassphrase {
        /// The file.
        path: PathBuf,
    },
    /// A new key file would be written, with neither a passphrase nor the plaintext opt-in.
    #[error(
        "no passphrase to encrypt the validator key file with: pass --passphrase-file or set \
         {PASSPHRASE_ENV} (or --plaintext to write it unencrypted)"
    )]
    NoWriteMode,
    /// The passphrase does not open the file (or the file was modified).
    #[error(
        "{}: wrong passphrase (or the file was modified): give the passphrase it was sealed \
         with (--passphrase-file or {PASSPHRASE_ENV}; key_passphrase_file in node.toml)",
        .path.display()
    )]
    WrongPassphrase {
        /// The file.
        path: PathBuf,
    },
    /// The sealed file cannot be decoded.
    #[error("{}: {reason}", .path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        reason: FileError,
    },
    /// The passphrase file cannot be read, or the derivation failed.
    #[error("{0}")]
    Passphrase(String),
}

/// How secret key files are opened and written: the passphrase (if any), whether plaintext
/// files are allowed, and the KDF parameters of files written.
#[derive(Clone, Default)]
pub struct KeyAccess {
    passphrase: Option<Zeroizing<Vec<u8>>>,
    plaintext: bool,
    kdf: KdfParams,
}

impl std::fmt::Debug for KeyAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyAccess")
            .field(
                "passphrase",
                &self.passphrase.as_ref().map(|_| "<redacted>"),
            )
            .field("plaintext", &self.plaintext)
            .field("kdf", &self.kdf)
            .finish()
    }
}

impl KeyAccess {
    /// Sealed files under `passphrase` ([`KdfParams::PRODUCTION`] for files written); plaintext
    /// files refused.
    pub fn sealed(passphrase: &[u8]) -> KeyAccess {
        KeyAccess {
            passphrase: Some(Zeroizing::new(passphrase.to_vec())),
            ..KeyAccess::default()
        }
    }

    /// Plaintext files only (the explicit opt-in); sealed files fail with
    /// [`KeyFileError::NoPassphrase`].
    pub fn plaintext() -> KeyAccess {
        KeyAccess {
            plaintext: true,
            ..KeyAccess::default()
        }
    }

    /// The passphrase from `passphrase_file`, else from [`PASSPHRASE_ENV`] when it is set,
    /// else none; plaintext files allowed when `plaintext`. Errors: the passphrase file cannot
    /// be read, is over 64 KiB, or the passphrase is empty.
    pub fn from_sources(
        passphrase_file: Option<&Path>,
        plaintext: bool,
    ) -> Result<KeyAccess, KeyFileError> {
        let passphrase = if passphrase_file.is_some() || std::env::var_os(PASSPHRASE_ENV).is_some()
        {
            Some(
                sealing::read_passphrase(passphrase_file, PASSPHRASE_ENV, "--passphrase-file")
                    .map_err(|e| KeyFileError::Passphrase(format!("key passphrase: {e}")))?,
            )
        } else {
            None
        };
        Ok(KeyAccess {
            passphrase,
            plaintext,
            kdf: KdfParams::PRODUCTION,
        })
    }

    /// The same, allowing plaintext files or not.
    pub fn allow_plaintext(mut self, plaintext: bool) -> KeyAccess {
        self.plaintext = plaintext;
        self
    }

    /// The same, writing files with `kdf` (tests use [`KdfParams::for_tests`]).
    pub fn with_kdf(mut self, kdf: KdfParams) -> KeyAccess {
        self.kdf = kdf;
        self
    }

    /// Whether a passphrase is held.
    pub fn has_passphrase(&self) -> bool {
        self.passphrase.is_some()
    }

    /// Whether a new key file is written sealed (a passphrase is held) or plaintext (opted
    /// in); [`KeyFileError::NoWriteMode`] with neither.
    pub fn new_file_sealed(&self) -> Result<bool, KeyFileError> {
        match (self.has_passphrase(), self.plaintext) {
            (true, _) => Ok(true),
            (false, true) => Ok(false),
            (false, false) => Err(KeyFileError::NoWriteMode),
        }
    }

    /// The plaintext JSON of the secret key file `path` whose bytes are `bytes`, and whether it
    /// was sealed. Runs Argon2id once for a sealed file. Errors: [`KeyFileError`] naming `path`.
    pub fn open_file(
        &self,
        path: &Path,
        bytes: &[u8],
    ) -> Result<(Zeroizing<Vec<u8>>, bool), KeyFileError> {
        match kind(bytes) {
            Kind::Sealed => {}
            Kind::Unreadable => {
                return Err(KeyFileError::Unreadable {
                    path: path.to_path_buf(),
                })
            }
            Kind::Plaintext if !self.plaintext => {
                return Err(KeyFileError::PlaintextRefused {
                    path: path.to_path_buf(),
                })
            }
            Kind::Plaintext => return Ok((Zeroizing::new(bytes.to_vec()), false)),
        }
        let sealed = parse_sealed(bytes).map_err(|reason| KeyFileError::Corrupt {
            path: path.to_path_buf(),
            reason,
        })?;
        let passphrase = self
            .passphrase
            .as_ref()
            .ok_or_else(|| KeyFileError::NoPassphrase {
                path: path.to_path_buf(),
            })?;
        let plaintext = sealed
            .open(Purpose::ValidatorKey, passphrase)
            .map_err(|e| match e {
                OpenError::WrongPassphrase => KeyFileError::WrongPassphrase {
                    path: path.to_path_buf(),
                },
                OpenError::Kdf(e) => KeyFileError::Passphrase(format!("{}: {e}", path.display())),
            })?;
        Ok((plaintext, true))
    }

    /// The bytes to write for a key file of `plaintext` JSON: sealed under the passphrase
    /// when `sealed` (Argon2id once, fresh salt and nonce), else `plaintext` itself. Errors:
    /// [`KeyFileError::NoWriteMode`] when `sealed` and no passphrase is held.
    pub fn encode(&self, plaintext: &[u8], sealed: bool) -> Result<Vec<u8>, KeyFileError> {
        if !sealed {
            return Ok(plaintext.to_vec());
        }
        let passphrase = self.passphrase.as_ref().ok_or(KeyFileError::NoWriteMode)?;
        SealedKeyFile::seal(Purpose::ValidatorKey, passphrase, self.kdf, plaintext)
            .map(|file| file.to_bytes())
            .map_err(|e| KeyFileError::Passphrase(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TINY: KdfParams = KdfParams::for_tests();
    const PLAINTEXT: &[u8] = br#"{"bls_secret_key":"00"}"#;

    #[test]
    fn sealed_file_round_trips_through_its_bytes_and_opens_to_the_plaintext() {
        let sealed =
            SealedKeyFile::seal(Purpose::ValidatorKey, b"correct horse", TINY, PLAINTEXT).unwrap();
        let bytes = sealed.to_bytes();
        assert!(is_sealed(&bytes));
        assert!(!is_sealed(PLAINTEXT));
        let parsed = parse_sealed(&bytes).unwrap();
        assert_eq!(parsed, sealed);
        assert_eq!(
            &parsed
                .open(Purpose::ValidatorKey, b"correct horse")
                .unwrap()[..],
            PLAINTEXT
        );
    }

    #[test]
    fn a_file_sealed_for_one_purpose_does_not_open_as_another() {
        let account = SealedKeyFile::seal(Purpose::AccountKey, b"pw", TINY, PLAINTEXT).unwrap();
        assert_eq!(
            &account.open(Purpose::AccountKey, b"pw").unwrap()[..],
            PLAINTEXT
        );
        assert!(matches!(
            account.open(Purpose::ValidatorKey, b"pw"),
            Err(OpenError::WrongPassphrase)
        ));
    }

    #[test]
    fn a_damaged_file_is_named_unreadable_not_plaintext() {
        let sealed = SealedKeyFile::seal(
            Purpose::ValidatorKey,
            b"pass",
            TINY,
            br#"{"bls_secret_key":"00"}"#,
        )
        .expect("seal")
        .to_bytes();
        let access = KeyAccess::sealed(b"pass").with_kdf(TINY);
        let path = Path::new("k/validator.key.json");
        let damaged: [&[u8]; 3] = [&sealed[..sealed.len() / 2], br#"{"hello":1}"#, b""];
        for bytes in damaged {
            let error = access.open_file(path, bytes).expect_err("damaged");
            assert!(matches!(error, KeyFileError::Unreadable { .. }), "{error}");
            assert!(error.to_string().contains("restore it from your backup"));
        }
        // A plaintext file is still told apart: refused without the opt-in, read with it.
        let plain = br#"{"bls_secret_key":"00"}"#;
        assert!(matches!(
            access.open_file(path, plain),
            Err(KeyFileError::PlaintextRefused { .. })
        ));
        assert!(access.allow_plaintext(true).open_file(path, plain).is_ok());
    }

    #[test]
    fn wrong_passphrase_is_refused_not_garbage() {
        let sealed =
            SealedKeyFile::seal(Purpose::ValidatorKey, b"correct horse", TINY, PLAINTEXT).unwrap();
        assert!(matches!(
            sealed.open(Purpose::ValidatorKey, b"battery staple"),
            Err(OpenError::WrongPassphrase)
        ));
    }

    #[test]
    fn editing_the_ciphertext_salt_or_kdf_parameters_fails_authentication() {
        let sealed = SealedKeyFile::seal(Purpose::ValidatorKey, b"pw", TINY, PLAINTEXT).unwrap();
        let mut flipped = sealed.clone();
        flipped.ciphertext[3] ^= 0x01;
        assert!(matches!(
            flipped.open(Purpose::ValidatorKey, b"pw"),
            Err(OpenError::WrongPassphrase)
        ));
        let mut salted = sealed.clone();
        salted.salt[0] ^= 0x01;
        assert!(salted.open(Purpose::ValidatorKey, b"pw").is_err());
        // A downgrade of the parameters is bound by the associated data.
        let mut weaker = sealed;
        weaker.kdf.iterations = 2;
        assert!(weaker.open(Purpose::ValidatorKey, b"pw").is_err());
    }

    #[test]
    fn parser_names_the_bad_field_and_refuses_unknown_ones() {
        let sealed = SealedKeyFile::seal(Purpose::ValidatorKey, b"pw", TINY, PLAINTEXT).unwrap();
        let mut json: serde_json::Value = serde_json::from_slice(&sealed.to_bytes()).unwrap();
        json["nonceHex"] = "00".into();
        let err = parse_sealed(json.to_string().as_bytes()).unwrap_err();
        assert!(err.to_string().contains("nonceHex"), "{err}");
        json["kdf"]["memoryKib"] = (u64::from(u32::MAX) + 1).into();
        assert!(parse_sealed(json.to_string().as_bytes()).is_err());
        let mut extra: serde_json::Value = serde_json::from_slice(&sealed.to_bytes()).unwrap();
        extra["plaintextHex"] = "00".into();
        assert!(parse_sealed(extra.to_string().as_bytes()).is_err());
    }
}
