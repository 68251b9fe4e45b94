//! Passphrase sealing shared by thresholdd's keystore (`quasar_thresholdd::keystore`) and the
//! node's validator key file ([`crate::key_file`]): one key derivation, one AEAD, one passphrase
//! reader, so the two secrets at rest cannot drift apart in strength or format.
//!
//! - **Key derivation.** Argon2id (RFC 9106, version 0x13) over the passphrase with a 16-byte
//!   random salt gives a 32-byte key ([`derive_key`]), in boxed memory zeroized on drop.
//!   [`KdfParams::PRODUCTION`] is m = 64 MiB, t = 3, p = 1: RFC 9106 §4's second recommended
//!   option with one lane (the `argon2` crate computes lanes one after another, so more lanes
//!   add no cost to an attacker's guess that they do not add to ours). A derivation takes a few
//!   hundred milliseconds on one core. Argon2's working memory is overwritten afterwards (best
//!   effort: the `argon2` crate is built without its `zeroize` feature).
//! - **AEAD.** XChaCha20-Poly1305 (draft-irtf-cfrg-xchacha-03: ChaCha20-Poly1305 per RFC 8439
//!   with a 24-byte nonce) with a fresh random nonce per message ([`seal`], [`open`]): random
//!   192-bit nonces do not collide in practice, so no counter has to survive restarts. The
//!   caller binds its public fields as associated data; a wrong key and a modified message are
//!   indistinguishable (both fail authentication).
//! - **Passphrases** come from a file or an environment variable ([`read_passphrase`]): the file
//!   is read up to [`MAX_PASSPHRASE_FILE_LEN`] bytes, trailing `\n`/`\r` are dropped, and an
//!   empty passphrase is refused (it would seal nothing).

use std::io::Read;
use std::path::Path;

use argon2::{Algorithm, Argon2, Block, Params, Version};
use chacha20poly1305::aead::{AeadInPlace, KeyInit};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};
use rand::RngCore;
use zeroize::Zeroizing;

/// Argon2id salt length, bytes.
pub const SALT_LEN: usize = 16;
/// Derived key length, bytes.
pub const KEY_LEN: usize = 32;
/// XChaCha20-Poly1305 nonce length, bytes.
pub const NONCE_LEN: usize = 24;
/// Poly1305 tag length, bytes.
pub const TAG_LEN: usize = 16;
/// The Argon2 version written and accepted (0x13 = 19).
pub const ARGON2_VERSION: u32 = 0x13;
/// The KDF name files carry.
pub const KDF_NAME: &str = "argon2id";
/// Largest passphrase file read, bytes; a longer one is refused rather than truncated.
pub const MAX_PASSPHRASE_FILE_LEN: u64 = 64 << 10;

// Bounds on parameters read from files: above them a file could make a derivation take
// unbounded memory or time.
const MAX_KDF_MEMORY_KIB: u32 = 1 << 20;
const MAX_KDF_ITERATIONS: u32 = 64;
const MAX_KDF_PARALLELISM: u32 = 16;

/// A derived key, zeroized on drop.
pub type SealingKey = Box<Zeroizing<[u8; KEY_LEN]>>;

/// Argon2id parameters out of bounds, or a failed derivation.
#[derive(Debug, thiserror::Error)]
#[error("key derivation (Argon2id): {0}")]
pub struct KdfError(pub String);

/// Argon2id cost parameters (RFC 9106 §3.1): memory in KiB, passes, lanes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KdfParams {
    /// Memory size m, KiB (at least 8 × `parallelism`, at most 1 GiB).
    pub memory_kib: u32,
    /// Number of passes t (1..=64).
    pub iterations: u32,
    /// Degree of parallelism p (1..=16).
    pub parallelism: u32,
}

impl KdfParams {
    /// m = 64 MiB, t = 3, p = 1: RFC 9106 §4's second recommended option with one lane (see
    /// the module docs).
    pub const PRODUCTION: KdfParams = KdfParams {
        memory_kib: 64 << 10,
        iterations: 3,
        parallelism: 1,
    };

    /// Argon2id at its minimum cost (m = 8 KiB, t = 1, p = 1): a real derivation in microseconds,
    /// for tests and fuzz seeds only (it does nothing against passphrase guessing).
    pub const fn for_tests() -> KdfParams {
        KdfParams {
            memory_kib: 8,
            iterations: 1,
            parallelism: 1,
        }
    }

    /// Checks the bounds (m ≤ 1 GiB, 1 ≤ t ≤ 64, 1 ≤ p ≤ 16, m ≥ 8p). Errors: [`KdfError`].
    pub fn check(self) -> Result<(), KdfError> {
        self.to_argon2().map(|_| ())
    }

    /// The `argon2` crate's parameters, or [`KdfError`] outside this module's bounds.
    fn to_argon2(self) -> Result<Params, KdfError> {
        if self.memory_kib > MAX_KDF_MEMORY_KIB
            || !(1..=MAX_KDF_ITERATIONS).contains(&self.iterations)
            || !(1..=MAX_KDF_PARALLELISM).contains(&self.parallelism)
        {
            return Err(KdfError(format!(
                "{self:?} outside m ≤ {MAX_KDF_MEMORY_KIB} KiB, 1 ≤ t ≤ {MAX_KDF_ITERATIONS}, \
                 1 ≤ p ≤ {MAX_KDF_PARALLELISM}"
            )));
        }
        Params::new(
            self.memory_kib,
            self.iterations,
            self.parallelism,
            Some(KEY_LEN),
        )
        .map_err(|e| KdfError(format!("{self:?}: {e}")))
    }

    /// `m ‖ t ‖ p` as u32 little-endian, for associated data.
    pub fn to_le_bytes(self) -> [u8; 12] {
        let mut out = [0u8; 12];
        out[..4].copy_from_slice(&self.memory_kib.to_le_bytes());
        out[4..8].copy_from_slice(&self.iterations.to_le_bytes());
        out[8..].copy_from_slice(&self.parallelism.to_le_bytes());
        out
    }
}

impl Default for KdfParams {
    fn default() -> KdfParams {
        KdfParams::PRODUCTION
    }
}

/// A fresh random salt.
pub fn random_salt() -> [u8; SALT_LEN] {
    let mut salt = [0u8; SALT_LEN];
    rand::rngs::OsRng.fill_bytes(&mut salt);
    salt
}

/// Argon2id(passphrase, salt) with `kdf`, into boxed zeroizing memory. Argon2's working memory
/// is overwritten afterwards. Errors: [`KdfError`] for parameters out of bounds.
pub fn derive_key(
    passphrase: &[u8],
    salt: &[u8; SALT_LEN],
    kdf: KdfParams,
) -> Result<SealingKey, KdfError> {
    let argon2 = Argon2::new(Algorithm::Argon2id, Version::V0x13, kdf.to_argon2()?);
    let mut blocks = vec![Block::default(); argon2.params().block_count()];
    let mut key = Box::new(Zeroizing::new([0u8; KEY_LEN]));
    let result = argon2.hash_password_into_with_memory(passphrase, salt, &mut key[..], &mut blocks);
    // The last blocks determine the key. The `argon2` crate's `zeroize` feature is off, so
    // overwrite them here; `black_box` keeps the stores from being elided before the free.
    blocks.iter_mut().for_each(|b| *b = Block::default());
    std::hint::black_box(&blocks);
    result.map_err(|e| KdfError(e.to_string()))?;
    Ok(key)
}

fn cipher(key: &[u8; KEY_LEN]) -> XChaCha20Poly1305 {
    XChaCha20Poly1305::new(Key::from_slice(key))
}

/// Seals `plaintext` under `key` with a fresh random nonce and `ad` as associated data,
/// encrypting in place in a zeroizing buffer with room for the tag (the plaintext is never
/// copied into memory that is not zeroized). Returns the nonce and `ciphertext ‖ tag`.
pub fn seal(key: &[u8; KEY_LEN], ad: &[u8], plaintext: &[u8]) -> ([u8; NONCE_LEN], Vec<u8>) {
    let mut nonce = [0u8; NONCE_LEN];
    rand::rngs::OsRng.fill_bytes(&mut nonce);
    let mut buffer = Zeroizing::new(Vec::with_capacity(plaintext.len() + TAG_LEN));
    buffer.extend_from_slice(plaintext);
    let tag = cipher(key)
        .encrypt_in_place_detached(XNonce::from_slice(&nonce), ad, &mut buffer)
        .expect("XChaCha20-Poly1305 seals any message shorter than 2^38 bytes");
    buffer.extend_from_slice(&tag);
    (nonce, std::mem::take(&mut *buffer))
}

/// Opens `ciphertext ‖ tag` sealed by [`seal`]; `None` when authentication fails (wrong key,
/// wrong associated data, or any byte modified).
pub fn open(
    key: &[u8; KEY_LEN],
    nonce: &[u8; NONCE_LEN],
    ad: &[u8],
    ciphertext: &[u8],
) -> Option<Zeroizing<Vec<u8>>> {
    let mut buffer = Zeroizing::new(ciphertext.to_vec());
    cipher(key)
        .decrypt_in_place(XNonce::from_slice(nonce), ad, &mut *buffer)
        .ok()?;
    Some(buffer)
}

/// Checks the KDF fields a file states: `kdf` is "argon2id", `argon2_version` 19 (0x13), and
/// m, t, p fit u32 and the bounds of [`KdfParams::check`]. Errors: the field's JSON name and
/// what is wrong with it.
pub fn kdf_from_fields(
    kdf: &str,
    argon2_version: u64,
    memory_kib: u64,
    iterations: u64,
    parallelism: u64,
) -> Result<KdfParams, (&'static str, String)> {
    if kdf != KDF_NAME {
        let shown: String = kdf.chars().take(40).collect();
        return Err(("kdf", format!("{shown:?}, expected \"argon2id\"")));
    }
    if argon2_version != u64::from(ARGON2_VERSION) {
        return Err((
            "argon2Version",
            format!("{argon2_version}, expected 19 (0x13)"),
        ));
    }
    let narrow = |name, value: u64| {
        u32::try_from(value).map_err(|_| (name, format!("{value} out of range")))
    };
    let params = KdfParams {
        memory_kib: narrow("memoryKib", memory_kib)?,
        iterations: narrow("iterations", iterations)?,
        parallelism: narrow("parallelism", parallelism)?,
    };
    params
        .check()
        .map_err(|e| ("memoryKib/iterations/parallelism", e.to_string()))?;
    Ok(params)
}

/// The KDF of a sealed file as a JSON object: `{"algorithm":"argon2id","argon2Version":19,
/// "memoryKib":m,"iterations":t,"parallelism":p,"saltHex":<16 B>}` (unknown fields refused).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KdfJson {
    algorithm: String,
    argon2_version: u64,
    memory_kib: u64,
    iterations: u64,
    parallelism: u64,
    salt_hex: String,
}

impl KdfJson {
    /// The object for `kdf` and `salt` (lowercase hex).
    pub fn new(kdf: KdfParams, salt: &[u8; SALT_LEN]) -> KdfJson {
        KdfJson {
            algorithm: KDF_NAME.into(),
            argon2_version: u64::from(ARGON2_VERSION),
            memory_kib: u64::from(kdf.memory_kib),
            iterations: u64::from(kdf.iterations),
            parallelism: u64::from(kdf.parallelism),
            salt_hex: hex::encode(salt),
        }
    }

    /// The checked parameters and salt ([`kdf_from_fields`]; `algorithm` reported as "kdf").
    /// Errors: the field's JSON name and what is wrong with it.
    pub fn decode(&self) -> Result<(KdfParams, [u8; SALT_LEN]), (&'static str, String)> {
        let kdf = kdf_from_fields(
            &self.algorithm,
            self.argon2_version,
            self.memory_kib,
            self.iterations,
            self.parallelism,
        )?;
        let salt = decode_hex_bounded(&self.salt_hex, SALT_LEN, SALT_LEN)
            .map_err(|problem| ("saltHex", problem))?
            .try_into()
            .map_err(|_| ("saltHex", "not 16 bytes".to_string()))?;
        Ok((kdf, salt))
    }
}

/// A sealed file's bytes: `file` as pretty JSON with a trailing newline.
pub fn file_bytes(file: &impl serde::Serialize) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(file).expect("a struct of strings and integers");
    bytes.push(b'\n');
    bytes
}

/// Decodes hex of `min ..= max` bytes, checking the length before allocating. Errors: what is
/// wrong (odd length, out of range, not hex), for the caller to name the field.
pub fn decode_hex_bounded(text: &str, min: usize, max: usize) -> Result<Vec<u8>, String> {
    if !text.len().is_multiple_of(2) {
        Err(format!("odd hex length {}", text.len()))
    } else if !(min..=max).contains(&(text.len() / 2)) {
        Err(format!("{} bytes, expected {min}..={max}", text.len() / 2))
    } else {
        hex::decode(text).map_err(|e| format!("not hex: {e}"))
    }
}

/// The passphrase from `file`, else from the environment variable `env_var`: at most
/// [`MAX_PASSPHRASE_FILE_LEN`] bytes, trailing newlines (`\n`, `\r`) dropped. `flag` names the
/// command-line option for the error. Errors (a message): the file cannot be read or is too
/// long, neither source is given, or the passphrase is empty.
pub fn read_passphrase(
    file: Option<&Path>,
    env_var: &str,
    flag: &str,
) -> Result<Zeroizing<Vec<u8>>, String> {
    let mut bytes = match file {
        Some(path) => {
            let reading = |e: std::io::Error| format!("reading {}: {e}", path.display());
            let mut bytes = Zeroizing::new(Vec::new());
            std::fs::File::open(path)
                .map_err(reading)?
                .take(MAX_PASSPHRASE_FILE_LEN + 1)
                .read_to_end(&mut bytes)
                .map_err(reading)?;
            if bytes.len() as u64 > MAX_PASSPHRASE_FILE_LEN {
                return Err(format!(
                    "{}: longer than {MAX_PASSPHRASE_FILE_LEN} bytes; not a passphrase file",
                    path.display()
                ));
            }
            bytes
        }
        None => match std::env::var_os(env_var) {
            Some(value) => Zeroizing::new(value.into_encoded_bytes()),
            None => return Err(format!("no passphrase: pass {flag} or set {env_var}")),
        },
    };
    while bytes.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        bytes.pop();
    }
    if bytes.is_empty() {
        return Err("the passphrase is empty".into());
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_then_open_round_trips_and_any_change_fails_authentication() {
        let key = derive_key(b"pass", &[7; SALT_LEN], KdfParams::for_tests()).unwrap();
        let (nonce, sealed) = seal(&key, b"ad", b"secret");
        assert_eq!(&open(&key, &nonce, b"ad", &sealed).unwrap()[..], b"secret");
        assert!(open(&key, &nonce, b"other ad", &sealed).is_none());
        let other = derive_key(b"wrong", &[7; SALT_LEN], KdfParams::for_tests()).unwrap();
        assert!(open(&other, &nonce, b"ad", &sealed).is_none());
        let mut flipped = sealed.clone();
        flipped[0] ^= 1;
        assert!(open(&key, &nonce, b"ad", &flipped).is_none());
    }

    #[test]
    fn passphrase_file_drops_trailing_newlines_and_refuses_empty_or_oversized_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p");
        std::fs::write(&path, "hunter2\r\n").unwrap();
        let read = read_passphrase(Some(&path), "QUASAR_TEST_UNSET_VAR", "--passphrase-file");
        assert_eq!(&read.unwrap()[..], b"hunter2");
        std::fs::write(&path, "\n").unwrap();
        assert!(read_passphrase(Some(&path), "QUASAR_TEST_UNSET_VAR", "-p").is_err());
        std::fs::write(&path, vec![b'a'; MAX_PASSPHRASE_FILE_LEN as usize + 1]).unwrap();
        let err = read_passphrase(Some(&path), "QUASAR_TEST_UNSET_VAR", "-p").unwrap_err();
        assert!(err.contains("longer than"), "{err}");
        let err = read_passphrase(None, "QUASAR_TEST_UNSET_VAR", "--passphrase-file").unwrap_err();
        assert!(err.contains("--passphrase-file") && err.contains("QUASAR_TEST_UNSET_VAR"));
    }
}
