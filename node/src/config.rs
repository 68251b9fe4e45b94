//! Files an operator handles: validator key files, the genesis file, and `node.toml`.
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
//! - `node.toml` says where this node keeps its data, which key directory and genesis it uses,
//!   where it listens, and where its peers are.
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

pub use crate::key_file::KeyAccess;
use crate::key_file::KeyFileError;
use quasar_consensus::{EpochMembers, EpochSchedule, EpochSets};
use quasar_crypto::bls::{ProofOfPossession, SecretKey};
use quasar_crypto::bls_cache::PublicKeyCache;
use quasar_crypto::corona::scheme::GroupKey as CoronaGroupKey;
use quasar_crypto::hash::{tagged_hash, Hash};
use quasar_crypto::magnetar::{self, ParameterSet};
use quasar_crypto::mldsa::{self, MlDsa65};
use quasar_crypto::rollup::circuit::{commitment, Statement, Validator as RollupValidator};
use quasar_crypto::rollup::native::{ExpandedKey, ML_DSA_65};
use quasar_crypto::{corona, pulsar};
use quasar_lanes::cert::{CertPolicy, EpochKeys, Profile, ProfileParseError, RollupKey};
use quasar_lanes::groth16::VerifyingKey;
use quasar_lanes::magnetar::MagnetarKeys;
use quasar_lanes::{Validator, ValidatorSet};
use quasar_p2p::PeerAddress;
use quasar_wire::{EpochDomain, LegKind};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    /// A value is present but invalid (bad key, bad proof of possession, ...).
    #[error("{0}")]
    Invalid(String),
    /// A secret key file cannot be opened or written (wrong passphrase, plaintext without the
    /// opt-in, ...): fatal to the command or node start.
    #[error(transparent)]
    KeyFile(#[from] KeyFileError),
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ConfigError + '_ {
    move |source| ConfigError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Largest operator file we read (genesis with thousands of validators fits easily).
const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

fn read_bounded(path: &Path) -> Result<String, ConfigError> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(io_err(path))?;
    // Read at most one byte past the limit, whatever the file claims to be (a pipe, /dev/zero).
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io_err(path))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(ConfigError::Invalid(format!(
            "{}: larger than 64 MiB",
            path.display()
        )));
    }
    String::from_utf8(bytes).map_err(|_| ConfigError::Parse {
        path: path.to_path_buf(),
        message: "not UTF-8 text".into(),
    })
}

fn decode_hex(field: &str, value: &str) -> Result<Vec<u8>, ConfigError> {
    hex::decode(value).map_err(|e| ConfigError::Invalid(format!("{field}: not hex: {e}")))
}

/// The validators of `file` as the rollup sees them (expanded ML-DSA-65 keys and stakes).
fn rollup_validators(
    validators: &[GenesisValidator],
    keys: &[mldsa::PublicKey<MlDsa65>],
) -> Result<Vec<RollupValidator>, ConfigError> {
    validators
        .iter()
        .zip(keys)
        .map(|(v, key)| {
            let key = ExpandedKey::from_public_key(&ML_DSA_65, key.as_bytes()).map_err(|e| {
                ConfigError::Invalid(format!("validator {}: ML-DSA key: {e}", v.name))
            })?;
            Ok(RollupValidator {
                key,
                stake: v.stake,
            })
        })
        .collect()
}

/// This validator's shares of the threshold keys of a validator set that a genesis
/// `validator_changes` entry schedules, in the secret key file's `set_shares` (unknown fields
/// are refused). Written by the dealer for the members of the set only.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SetShares {
    /// The change's `epoch`: the set's first epoch.
    pub epoch: u64,
    /// This validator's share of the set's Corona key (party index = its index in the set), hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corona_share: Option<String>,
    /// This validator's share of the set's Pulsar key, hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pulsar_share: Option<String>,
    /// The set's full Pulsar group key, hex. Public.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pulsar_group: Option<String>,
}

impl SetShares {
    fn is_empty(&self) -> bool {
        self.corona_share.is_none() && self.pulsar_share.is_none() && self.pulsar_group.is_none()
    }
}

/// Secret half of a validator's keys (`validator.key.json`; unknown fields are refused, so a
/// misspelt share field is not silently taken for "no share").
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretKeyFile {
    /// BLS12-381 secret key, 32 bytes big-endian, hex.
    pub bls_secret_key: String,
    /// Seed ξ of the ML-DSA-65 identity key (FIPS 204 §6.1), 32 bytes, hex.
    pub mldsa_seed: String,
    /// Seed of the SLH-DSA-SHAKE-192f Magnetar key (expanded as `quasar_crypto::magnetar`
    /// describes), 32 bytes, hex.
    pub slhdsa_seed: String,
    /// TLS private key, PKCS#8 DER, hex.
    pub tls_private_key: String,
    /// This validator's Corona key share (`corona::scheme::KeyShare::to_bytes`), hex; party
    /// index = validator index. Written by the dealer (`quasar-node deal`, `testnet`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corona_share: Option<String>,
    /// This validator's Pulsar key share (`pulsar::KeyShare::to_bytes`), hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pulsar_share: Option<String>,
    /// The full Pulsar group key (`pulsar::GroupKey::to_bytes`: the ML-DSA-65 public key plus
    /// the share publics the signing rounds need), hex. Public.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pulsar_group: Option<String>,
    /// This validator's shares of the threshold keys of the later validator sets it belongs to
    /// (the genesis `validator_changes`), one entry per set, by increasing `epoch`. Absent
    /// (left out when written) when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set_shares: Vec<SetShares>,
}

impl SecretKeyFile {
    /// Parses a secret key file's JSON text (unknown fields refused). Errors:
    /// [`ConfigError::Invalid`] with serde's message.
    pub fn from_json(text: &str) -> Result<SecretKeyFile, ConfigError> {
        serde_json::from_str(text)
            .map_err(|e| ConfigError::Invalid(format!("{SECRET_KEY_FILE}: {e}")))
    }

    /// The threshold key shares the file holds, decoded, by their set's first epoch (see
    /// [`ValidatorKeys::dealt`]). Errors: [`ConfigError::Invalid`] naming the field (and the
    /// `set_shares` entry): bad hex or encoding, half a Pulsar key, a share not of its group
    /// key, `set_shares` epochs not increasing from 1.
    pub fn dealt(&self) -> Result<BTreeMap<u64, DealtShares>, ConfigError> {
        let mut dealt = BTreeMap::new();
        let genesis_set = DealtShares::decode(
            self.corona_share.as_deref(),
            self.pulsar_share.as_deref(),
            self.pulsar_group.as_deref(),
        )?;
        if genesis_set.corona.is_some() || genesis_set.pulsar.is_some() {
            dealt.insert(0, genesis_set);
        }
        let mut previous = 0;
        for entry in &self.set_shares {
            if entry.epoch == 0 {
                return Err(ConfigError::Invalid(
                    "set_shares: an entry of epoch 0 (the genesis set's shares are the top-level \
                     fields; entries are for validator changes, from epoch 1)"
                        .into(),
                ));
            }
            if entry.epoch <= previous {
                return Err(ConfigError::Invalid(format!(
                    "set_shares: epoch {} is not above {previous} (entries are by increasing epoch)",
                    entry.epoch
                )));
            }
            previous = entry.epoch;
            let shares = DealtShares::decode(
                entry.corona_share.as_deref(),
                entry.pulsar_share.as_deref(),
                entry.pulsar_group.as_deref(),
            )
            .map_err(|e| ConfigError::Invalid(format!("set_shares epoch {}: {e}", entry.epoch)))?;
            dealt.insert(entry.epoch, shares);
        }
        Ok(dealt)
    }
}

/// Public half of a validator's keys (`validator.pub.json`), what genesis collects.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct PublicKeyFile {
    /// A human name (the key directory's name by default).
    pub name: String,
    /// BLS public key, 48 bytes compressed G1, hex.
    pub bls_public_key: String,
    /// Proof of possession of the BLS key, 96 bytes compressed G2, hex.
    pub proof_of_possession: String,
    /// ML-DSA-65 identity public key (FIPS 204), 1952 bytes, hex.
    pub mldsa_public_key: String,
    /// SLH-DSA Magnetar public key (FIPS 205), PK.seed ‖ PK.root, 48 bytes, hex, of the set
    /// `slhdsa_parameter_set`.
    pub slhdsa_public_key: String,
    /// The SLH-DSA parameter set of `slhdsa_public_key` (and of the seed in the secret file):
    /// `"192f"` or `"192s"` ([`parse_magnetar_set`]). Absent means 192f, the default, which is
    /// left out when written, as in every file from before the set was selectable.
    #[serde(
        default,
        skip_serializing_if = "is_default_set",
        serialize_with = "serialize_magnetar_set",
        deserialize_with = "deserialize_key_file_set"
    )]
    pub slhdsa_parameter_set: ParameterSet,
    /// Self-signed TLS certificate (DER, hex) pinning the validator's QUIC identity.
    pub tls_certificate: String,
}

/// How operator files and the command line spell a Magnetar parameter set: `"192f"` for
/// SLH-DSA-SHAKE-192f, `"192s"` for SLH-DSA-SHAKE-192s (FIPS 205 Table 2).
pub fn magnetar_set_name(set: ParameterSet) -> &'static str {
    match set {
        ParameterSet::Shake192f => "192f",
        ParameterSet::Shake192s => "192s",
    }
}

/// Parses a Magnetar parameter set as [`magnetar_set_name`] spells it (exactly `"192f"` or
/// `"192s"`). Errors: a message quoting `name` and listing the two spellings.
pub fn parse_magnetar_set(name: &str) -> Result<ParameterSet, String> {
    [ParameterSet::Shake192f, ParameterSet::Shake192s]
        .into_iter()
        .find(|&set| magnetar_set_name(set) == name)
        .ok_or_else(|| {
            format!(
                "{name:?} is not a Magnetar parameter set: expected \"192f\" \
                 (SLH-DSA-SHAKE-192f, the default) or \"192s\" (SLH-DSA-SHAKE-192s)"
            )
        })
}

fn is_default_set(set: &ParameterSet) -> bool {
    *set == ParameterSet::default()
}

fn serialize_magnetar_set<S: serde::Serializer>(
    set: &ParameterSet,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(magnetar_set_name(*set))
}

/// Reads a set spelt as [`parse_magnetar_set`] wants it; an error names `field`.
fn deserialize_magnetar_set<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
    field: &str,
) -> Result<ParameterSet, D::Error> {
    let name = String::deserialize(deserializer)?;
    parse_magnetar_set(&name).map_err(|e| serde::de::Error::custom(format!("{field}: {e}")))
}

fn deserialize_key_file_set<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<ParameterSet, D::Error> {
    deserialize_magnetar_set(deserializer, "slhdsa_parameter_set")
}

fn deserialize_genesis_set<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<ParameterSet, D::Error> {
    deserialize_magnetar_set(deserializer, "magnetar_parameter_set")
}

/// Key file names inside a key directory.
pub const SECRET_KEY_FILE: &str = "validator.key.json";
/// Public key file name inside a key directory.
pub const PUBLIC_KEY_FILE: &str = "validator.pub.json";

/// Loaded validator keys.
pub struct ValidatorKeys {
    /// BLS signing key.
    pub bls: SecretKey,
    /// ML-DSA-65 identity key.
    pub mldsa: mldsa::SecretKey<MlDsa65>,
    /// SLH-DSA Magnetar key, of the public file's `slhdsa_parameter_set`.
    pub slhdsa: magnetar::SecretKey,
    /// QUIC/TLS identity.
    pub tls: quasar_p2p::TlsIdentity,
    /// The public file.
    pub public: PublicKeyFile,
    /// This validator's dealt threshold key shares, by the first epoch of their validator set
    /// (0: the genesis set's, from the file's top-level fields; else a `set_shares` entry's).
    /// Sets without shares have no entry.
    pub dealt: BTreeMap<u64, DealtShares>,
}

/// A validator's shares of one validator set's threshold keys, decoded.
#[derive(Default)]
pub struct DealtShares {
    /// Corona key share, when dealt.
    pub corona: Option<corona::scheme::KeyShare>,
    /// Pulsar group key and this validator's share (checked against each other), when dealt.
    pub pulsar: Option<(pulsar::GroupKey, pulsar::KeyShare)>,
}

impl DealtShares {
    /// Decodes the share fields of one set (`corona_share`, `pulsar_share`, `pulsar_group`).
    /// Errors: [`ConfigError::Invalid`] naming the field: bad hex or encoding, a Pulsar share
    /// without its group key or the other way round, a share not of the group key.
    fn decode(
        corona_share: Option<&str>,
        pulsar_share: Option<&str>,
        pulsar_group: Option<&str>,
    ) -> Result<DealtShares, ConfigError> {
        let corona = corona_share
            .map(|text| {
                corona::scheme::KeyShare::from_bytes(&decode_hex("corona_share", text)?)
                    .map_err(|e| ConfigError::Invalid(format!("corona_share: {e}")))
            })
            .transpose()?;
        let pulsar = match (pulsar_group, pulsar_share) {
            (None, None) => None,
            (Some(group), Some(share)) => {
                let group = pulsar::GroupKey::from_bytes(&decode_hex("pulsar_group", group)?)
                    .map_err(|e| ConfigError::Invalid(format!("pulsar_group: {e}")))?;
                let share = pulsar::KeyShare::from_bytes(&decode_hex("pulsar_share", share)?)
                    .map_err(|e| ConfigError::Invalid(format!("pulsar_share: {e}")))?;
                if !group.check_share(&share) {
                    return Err(ConfigError::Invalid(
                        "pulsar_share is not a share of pulsar_group".into(),
                    ));
                }
                Some((group, share))
            }
            (Some(_), None) => {
                return Err(ConfigError::Invalid(
                    "pulsar_share is missing: a Pulsar key needs both pulsar_share and \
                     pulsar_group"
                        .into(),
                ))
            }
            (None, Some(_)) => {
                return Err(ConfigError::Invalid(
                    "pulsar_group is missing: a Pulsar key needs both pulsar_share and \
                     pulsar_group"
                        .into(),
                ))
            }
        };
        Ok(DealtShares { corona, pulsar })
    }
}

/// Generates fresh validator keys into `dir` (created if needed), the Magnetar key of
/// `slhdsa_set` (its 32-byte seed goes into the secret file, its 48-byte public key and the set
/// into the public file). The secret file is written with mode 0600 and never overwritten:
/// sealed under `access`'s passphrase ([`crate::key_file`]), or plaintext when `access` holds
/// no passphrase but opts into plaintext. Expanding an SLH-DSA-SHAKE-192s seed takes about 0.2 s
/// (its top hypertree layer has 2^9 leaves, 192f's 2^3); sealing runs Argon2id once. Errors:
/// [`ConfigError`] (with neither a passphrase nor the opt-in, before anything is written).
pub fn keygen_with_set(
    dir: &Path,
    name: &str,
    slhdsa_set: ParameterSet,
    access: &KeyAccess,
) -> Result<PublicKeyFile, ConfigError> {
    let sealed = access.new_file_sealed()?;
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    let secret_path = dir.join(SECRET_KEY_FILE);
    if secret_path.exists() {
        return Err(ConfigError::Invalid(format!(
            "{} already exists; refusing to overwrite a validator key",
            secret_path.display()
        )));
    }
    let mut seed = zeroize::Zeroizing::new([0u8; 32]);
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut *seed);
    let bls = SecretKey::from_seed(&seed);
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut *seed);
    let mldsa = mldsa::SecretKey::<MlDsa65>::from_seed(&seed);
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut *seed);
    let slhdsa = magnetar::SecretKey::from_seed(slhdsa_set, &seed);
    let tls = quasar_p2p::TlsIdentity::generate(name)
        .map_err(|e| ConfigError::Invalid(format!("TLS identity: {e}")))?;
    let public = PublicKeyFile {
        name: name.to_string(),
        bls_public_key: hex::encode(bls.public_key().to_bytes()),
        proof_of_possession: hex::encode(bls.prove_possession().to_bytes()),
        mldsa_public_key: hex::encode(mldsa.public_key().as_bytes()),
        slhdsa_public_key: hex::encode(slhdsa.public_key().as_bytes()),
        slhdsa_parameter_set: slhdsa_set,
        tls_certificate: hex::encode(&tls.cert_der),
    };
    let secret = SecretKeyFile {
        bls_secret_key: hex::encode(bls.to_bytes()),
        mldsa_seed: hex::encode(mldsa.seed()),
        slhdsa_seed: hex::encode(slhdsa.seed()),
        tls_private_key: hex::encode(tls.key_der()),
        corona_share: None,
        pulsar_share: None,
        pulsar_group: None,
        set_shares: Vec::new(),
    };
    write_secret(&secret_path, &secret, access, sealed)?;
    let public_path = dir.join(PUBLIC_KEY_FILE);
    std::fs::write(&public_path, to_json(&public)?).map_err(io_err(&public_path))?;
    Ok(public)
}

fn to_json<T: Serialize>(value: &T) -> Result<String, ConfigError> {
    serde_json::to_string_pretty(value).map_err(|e| ConfigError::Invalid(e.to_string()))
}

/// Writes a new secret key file (mode 0600, failing if it exists): sealed under `access`'s
/// passphrase when `sealed`, else plaintext.
fn write_secret(
    path: &Path,
    secret: &SecretKeyFile,
    access: &KeyAccess,
    sealed: bool,
) -> Result<(), ConfigError> {
    let json = zeroize::Zeroizing::new(to_json(secret)?);
    let bytes = zeroize::Zeroizing::new(access.encode(json.as_bytes(), sealed)?);
    write_private_new(path, &bytes).map_err(io_err(path))
}

/// Reads a secret key file under `access` ([`KeyAccess::open_file`]): the decoded file and
/// whether it was sealed. Errors: [`ConfigError`] naming the file (wrong passphrase, plaintext
/// without the opt-in, sealed without a passphrase, not a key file).
pub fn read_secret(path: &Path, access: &KeyAccess) -> Result<(SecretKeyFile, bool), ConfigError> {
    let text = zeroize::Zeroizing::new(read_bounded(path)?);
    let (plaintext, sealed) = access.open_file(path, text.as_bytes())?;
    let secret = serde_json::from_slice(&plaintext).map_err(|e| ConfigError::Parse {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    Ok((secret, sealed))
}

/// Seals the plaintext secret key file of the key directory `dir` in place under `access`'s
/// passphrase (`quasar-node keys seal`): the file is checked to parse, sealed into
/// `validator.key.json.new` (mode 0600) and renamed over the original. Returns `false`, changing
/// nothing, when the file is already sealed and opens under the passphrase. Errors:
/// [`ConfigError`]: no passphrase, wrong passphrase for a sealed file, unreadable file.
pub fn seal_key_dir(dir: &Path, access: &KeyAccess) -> Result<bool, ConfigError> {
    if !access.has_passphrase() {
        return Err(KeyFileError::NoWriteMode.into());
    }
    let path = dir.join(SECRET_KEY_FILE);
    let (secret, sealed) = read_secret(&path, &access.clone().allow_plaintext(true))?;
    if sealed {
        return Ok(false);
    }
    let next = path.with_extension("json.new");
    let _ = std::fs::remove_file(&next);
    if let Err(e) = write_secret(&next, &secret, access, true) {
        let _ = std::fs::remove_file(&next);
        return Err(e);
    }
    std::fs::rename(&next, &path).map_err(io_err(&path))?;
    Ok(true)
}

/// Creates `path` (failing if it exists) with mode 0600 on Unix, writes `bytes` and fsyncs
/// the file (not its directory): the start of every secret file the node and thresholdd write.
pub(crate) fn write_private_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
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

fn parse_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, ConfigError> {
    let text = read_bounded(path)?;
    serde_json::from_str(&text).map_err(|e| ConfigError::Parse {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// Reads the public key file of a key directory.
pub fn load_public(dir: &Path) -> Result<PublicKeyFile, ConfigError> {
    parse_json(&dir.join(PUBLIC_KEY_FILE))
}

/// Reads the public key files of `key_dirs`, in order.
fn load_publics(key_dirs: &[PathBuf]) -> Result<Vec<PublicKeyFile>, ConfigError> {
    key_dirs.iter().map(|dir| load_public(dir)).collect()
}

/// The first of `keys` (read from `dirs`), with its index and directory, whose Magnetar key is
/// not of `set`.
fn other_set<'a>(
    keys: &'a [PublicKeyFile],
    dirs: &'a [PathBuf],
    set: ParameterSet,
) -> Option<(usize, &'a PublicKeyFile, &'a PathBuf)> {
    keys.iter()
        .zip(dirs)
        .enumerate()
        .find(|(_, (k, _))| k.slhdsa_parameter_set != set)
        .map(|(i, (k, dir))| (i, k, dir))
}

/// Reads and checks a key directory: the secret key must match the public file. The SLH-DSA
/// seed is expanded under the public file's `slhdsa_parameter_set` (192f when absent) and must
/// give its `slhdsa_public_key`. Errors: [`ConfigError`], naming the directory and the field.
///
/// The secret file is opened under `access`: sealed files need its passphrase, plaintext files
/// its opt-in ([`crate::key_file`]).
pub fn load_keys(dir: &Path, access: &KeyAccess) -> Result<ValidatorKeys, ConfigError> {
    load_keys_unlabelled(dir, access).map_err(|e| match e {
        ConfigError::Invalid(m) => ConfigError::Invalid(format!("{}: {m}", dir.display())),
        other => other,
    })
}

fn load_keys_unlabelled(dir: &Path, access: &KeyAccess) -> Result<ValidatorKeys, ConfigError> {
    let public = load_public(dir)?;
    let secret_path = dir.join(SECRET_KEY_FILE);
    warn_if_exposed(&secret_path);
    let (secret, _) = read_secret(&secret_path, access)?;
    let bls = SecretKey::from_bytes(&decode_hex("bls_secret_key", &secret.bls_secret_key)?)
        .map_err(|e| ConfigError::Invalid(format!("bls_secret_key: {e}")))?;
    if hex::encode(bls.public_key().to_bytes()) != public.bls_public_key {
        return Err(ConfigError::Invalid(format!(
            "{}: secret key does not match {PUBLIC_KEY_FILE}",
            dir.display()
        )));
    }
    let mldsa =
        mldsa::SecretKey::<MlDsa65>::from_bytes(&decode_hex("mldsa_seed", &secret.mldsa_seed)?)
            .map_err(|e| ConfigError::Invalid(format!("mldsa_seed: {e}")))?;
    if hex::encode(mldsa.public_key().as_bytes()) != public.mldsa_public_key {
        return Err(ConfigError::Invalid(format!(
            "{}: ML-DSA-65 seed does not match mldsa_public_key in {PUBLIC_KEY_FILE}",
            dir.display()
        )));
    }
    let slhdsa = magnetar::SecretKey::from_bytes(
        public.slhdsa_parameter_set,
        &decode_hex("slhdsa_seed", &secret.slhdsa_seed)?,
    )
    .map_err(|e| ConfigError::Invalid(format!("slhdsa_seed: {e}")))?;
    if hex::encode(slhdsa.public_key().as_bytes()) != public.slhdsa_public_key {
        return Err(ConfigError::Invalid(format!(
            "{}: SLH-DSA seed does not match slhdsa_public_key in {PUBLIC_KEY_FILE} (expanded \
             as {}, its slhdsa_parameter_set {:?})",
            dir.display(),
            public.slhdsa_parameter_set,
            magnetar_set_name(public.slhdsa_parameter_set)
        )));
    }
    let tls = quasar_p2p::TlsIdentity::from_der(
        decode_hex("tls_certificate", &public.tls_certificate)?,
        decode_hex("tls_private_key", &secret.tls_private_key)?,
    );
    let dealt = secret.dealt()?;
    Ok(ValidatorKeys {
        bls,
        mldsa,
        slhdsa,
        tls,
        public,
        dealt,
    })
}

/// The threshold t of the dealt Corona and Pulsar keys for `validators` validators of equal
/// weight: n − ⌊(n − 1)/3⌋, so the f = ⌊(n − 1)/3⌋ faulty validators BFT tolerates can neither
/// sign alone (t > f) nor stop the others from signing (n − f ≥ t).
pub fn dealt_threshold(validators: usize) -> usize {
    validators - validators.saturating_sub(1) / 3
}

/// Which threshold keys [`deal`] generates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dealt {
    /// A Corona key (t-of-n, party i = validator i).
    pub corona: bool,
    /// A Pulsar key: t-of-n among the validators when they are at most
    /// [`PULSAR_COMMITTEE_SIZE`], else among a committee of that many sampled by stake (the
    /// genesis names it).
    pub pulsar: bool,
}

impl Dealt {
    /// The threshold keys `profile`'s legs need.
    pub fn for_profile(profile: Profile) -> Dealt {
        let legs = profile.legs();
        Dealt {
            corona: legs.contains(&LegKind::Corona),
            pulsar: legs.contains(&LegKind::Pulsar),
        }
    }
}

/// Members of a dealt Pulsar committee. Pulsar signs with K parallel attempts per session, and
/// K grows steeply with the threshold (`quasar_crypto::pulsar::params`): 3-of-4 needs 21,
/// 4-of-5 205 and 5-of-6 1,200, whose round messages and work no bundle interval absorbs. A
/// 3-of-4 committee signs in about a second; at a Byzantine stake just under 1/3 it is
/// captured with probability about 0.11 (`quasar_crypto::pulsar::committee`), which the BLS
/// and Corona legs beside it cover.
pub const PULSAR_COMMITTEE_SIZE: usize = 4;

/// Trusted-dealer setup of the threshold keys (development and test networks; the dealer sees
/// every share and must be trusted to forget them): for every validator set of `genesis` (its
/// `validators` and each `validator_changes` entry's), generates a Corona and/or Pulsar key of
/// t = [`dealt_threshold`] among the set's validators and writes the group keys into the set's
/// fields of `genesis` (top level for the genesis set, the change's own otherwise). A set of
/// more than [`PULSAR_COMMITTEE_SIZE`] validators gets a Pulsar key among a committee of that
/// many drawn by stake ([`pulsar::committee::sample_committee`], seeded by [`committee_seed`]);
/// t then counts committee members, and the committee goes into the set's `pulsar_committee`.
///
/// `key_dirs` holds the key directory of every distinct validator, in roster order
/// ([`Genesis::roster`]: the genesis validators in index order, then each change's newcomers;
/// without changes, simply the genesis validators). Each validator's shares go into its secret
/// key file: the genesis set's into the top-level share fields (party index = its index in
/// the set), a changed set's into a `set_shares` entry of that change's epoch, for the sets it
/// belongs to. Files are replaced atomically, mode 0600, each in the form it was read: a sealed
/// file is opened and sealed again under its directory's `accesses` entry's passphrase (fresh salt and nonce), a
/// plaintext one (read only with `access`'s opt-in) stays plaintext. Save the genesis afterwards.
///
/// Shares already in a key file are refused under [`Existing::Refuse`] and dropped under
/// [`Existing::Replace`] (a test network dealing again after its sets changed).
///
/// Errors: [`ConfigError::Invalid`] when the genesis does not check, a key directory does not
/// hold its roster validator, or a key file already holds shares that may not be replaced; I/O
/// errors. Every key file is checked before any is written, and all are staged before any is
/// replaced, so a refusal changes nothing.
pub fn deal(
    key_dirs: &[PathBuf],
    genesis: &mut GenesisFile,
    which: Dealt,
    existing: Existing,
    accesses: &[KeyAccess],
    rng: &mut (impl rand::RngCore + rand::CryptoRng),
) -> Result<(), ConfigError> {
    let checked = genesis.clone().check()?;
    if accesses.len() != key_dirs.len() {
        return Err(ConfigError::Invalid(format!(
            "{} key accesses for {} key directories",
            accesses.len(),
            key_dirs.len()
        )));
    }
    let sets_with_keys: Vec<u64> =
        std::iter::once((0, &genesis.corona_group_key, &genesis.pulsar_group_key))
            .chain(
                genesis
                    .validator_changes
                    .iter()
                    .map(|c| (c.epoch, &c.corona_group_key, &c.pulsar_group_key)),
            )
            .filter(|(_, corona, pulsar)| corona.is_some() || pulsar.is_some())
            .map(|(epoch, _, _)| epoch)
            .collect();
    if existing == Existing::Refuse && !sets_with_keys.is_empty() {
        return Err(ConfigError::Invalid(format!(
            "the genesis already has threshold group keys (the sets from epochs {sets_with_keys:?}); \
             refusing to deal again"
        )));
    }
    let roster: Vec<String> = checked
        .roster()
        .iter()
        .map(|v| v.bls_public_key.to_ascii_lowercase())
        .collect();
    if key_dirs.len() != roster.len() {
        return Err(ConfigError::Invalid(format!(
            "{} key directories for the genesis's {} validators (the genesis set's, then the \
             newcomers of each validator change)",
            key_dirs.len(),
            roster.len()
        )));
    }
    for (i, (dir, (key, v))) in key_dirs
        .iter()
        .zip(roster.iter().zip(checked.roster()))
        .enumerate()
    {
        if !load_public(dir)?.bls_public_key.eq_ignore_ascii_case(key) {
            return Err(ConfigError::Invalid(format!(
                "{} does not hold validator {i} ({}) of the genesis roster (the genesis set's \
                 validators, then each validator change's newcomers)",
                dir.display(),
                v.name
            )));
        }
    }
    // Every key file is read and checked before anything is generated or written.
    let mut secrets = Vec::with_capacity(key_dirs.len());
    for (dir, access) in key_dirs.iter().zip(accesses) {
        let path = dir.join(SECRET_KEY_FILE);
        let (mut secret, sealed) = read_secret(&path, access)?;
        let dealt = secret.corona_share.is_some()
            || secret.pulsar_share.is_some()
            || secret.pulsar_group.is_some()
            || !secret.set_shares.is_empty();
        if dealt && existing == Existing::Refuse {
            return Err(ConfigError::Invalid(format!(
                "{} already holds threshold key shares; refusing to replace them",
                path.display()
            )));
        }
        secret.corona_share = None;
        secret.pulsar_share = None;
        secret.pulsar_group = None;
        secret.set_shares.clear();
        secrets.push((path, secret, sealed, access));
    }
    let seeds: Vec<Hash> = std::iter::once(committee_seed(genesis))
        .chain(
            genesis
                .validator_changes
                .iter()
                .map(|c| change_committee_seed(genesis, c)),
        )
        .collect();
    let sets: Vec<(u64, Vec<GenesisValidator>)> = std::iter::once((0, genesis.validators.clone()))
        .chain(
            genesis
                .validator_changes
                .iter()
                .map(|c| (c.epoch, c.validators.clone())),
        )
        .collect();
    let mut keys = Vec::with_capacity(sets.len());
    for ((first_epoch, validators), seed) in sets.iter().zip(&seeds) {
        let dealt = deal_set(validators, which, seed, rng)
            .map_err(|e| ConfigError::Invalid(format!("{}{e}", set_label(*first_epoch))))?;
        for (v, shares) in validators.iter().zip(dealt.shares) {
            let Some(member) = roster
                .iter()
                .position(|key| key.eq_ignore_ascii_case(&v.bls_public_key))
            else {
                continue;
            };
            let Some((_, secret, _, _)) = secrets.get_mut(member) else {
                continue;
            };
            if *first_epoch == 0 {
                secret.corona_share = shares.corona_share;
                secret.pulsar_share = shares.pulsar_share;
                secret.pulsar_group = shares.pulsar_group;
            } else if !shares.is_empty() {
                secret.set_shares.push(SetShares {
                    epoch: *first_epoch,
                    ..shares
                });
            }
        }
        keys.push(dealt.public);
    }
    // All staged first (a failure removes them and changes nothing), then renamed into place.
    let mut staged = Vec::with_capacity(secrets.len());
    for (path, secret, sealed, access) in &secrets {
        let next = path.with_extension("json.new");
        let _ = std::fs::remove_file(&next);
        let written = write_secret(&next, secret, access, *sealed);
        if let Err(error) = written {
            for (file, _) in &staged {
                let _ = std::fs::remove_file(file);
            }
            let _ = std::fs::remove_file(&next);
            return Err(error);
        }
        staged.push((next, path));
    }
    for (next, path) in staged {
        std::fs::rename(&next, path).map_err(io_err(path))?;
    }
    let mut keys = keys.into_iter();
    if let Some(public) = keys.next() {
        public.fill(
            &mut genesis.corona_group_key,
            &mut genesis.pulsar_group_key,
            &mut genesis.pulsar_committee,
        );
    }
    for (change, public) in genesis.validator_changes.iter_mut().zip(keys) {
        public.fill(
            &mut change.corona_group_key,
            &mut change.pulsar_group_key,
            &mut change.pulsar_committee,
        );
    }
    Ok(())
}

/// What [`deal`] does with threshold key shares already in a key file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Refuse to deal (an operator's keys are never silently replaced).
    Refuse,
    /// Drop them and deal afresh (test networks).
    Replace,
}

/// The public half of one set's deal, hex.
struct DealtPublic {
    corona_group_key: Option<String>,
    pulsar_group_key: Option<String>,
    pulsar_committee: Option<Vec<u32>>,
}

impl DealtPublic {
    /// Writes the keys dealt into a set's genesis fields (a key not dealt is removed: the
    /// profile has no leg for it).
    fn fill(
        self,
        corona: &mut Option<String>,
        pulsar: &mut Option<String>,
        committee: &mut Option<Vec<u32>>,
    ) {
        *corona = self.corona_group_key;
        *pulsar = self.pulsar_group_key;
        *committee = self.pulsar_committee;
    }
}

/// One set's deal: the public keys, and each validator's shares by index in the set.
struct SetDeal {
    public: DealtPublic,
    shares: Vec<SetShares>,
}

/// Deals `which` keys among `validators` (one set), a Pulsar committee drawn with `seed` when
/// the set is larger than [`PULSAR_COMMITTEE_SIZE`]. Errors: a message naming the key.
fn deal_set(
    validators: &[GenesisValidator],
    which: Dealt,
    seed: &Hash,
    rng: &mut (impl rand::RngCore + rand::CryptoRng),
) -> Result<SetDeal, String> {
    let n = validators.len();
    let mut shares = vec![SetShares::default(); n];
    let mut public = DealtPublic {
        corona_group_key: None,
        pulsar_group_key: None,
        pulsar_committee: None,
    };
    if which.corona {
        let (group, dealt) = corona::scheme::trusted_dealer_keygen(dealt_threshold(n), n, rng)
            .map_err(|e| format!("Corona key for {n} validators: {e}"))?;
        for (entry, share) in shares.iter_mut().zip(dealt) {
            entry.corona_share = Some(hex::encode(share.to_bytes().as_slice()));
        }
        public.corona_group_key = Some(hex::encode(group.to_bytes()));
    }
    if which.pulsar {
        let members: Vec<usize> = if n <= PULSAR_COMMITTEE_SIZE {
            (0..n).collect()
        } else {
            let stakes: Vec<u64> = validators.iter().map(|v| v.stake).collect();
            let members = pulsar::committee::sample_committee(seed, &stakes, PULSAR_COMMITTEE_SIZE)
                .map_err(|e| format!("Pulsar committee: {e}"))?;
            public.pulsar_committee = Some(members.iter().map(|&m| m as u32).collect());
            members
        };
        let size = members.len();
        let (group, dealt) = pulsar::trusted_dealer_keygen(dealt_threshold(size), size, rng)
            .map_err(|e| format!("Pulsar key for {size} parties: {e}"))?;
        let full = hex::encode(group.to_bytes());
        for (&member, share) in members.iter().zip(dealt) {
            if let Some(entry) = shares.get_mut(member) {
                entry.pulsar_group = Some(full.clone());
                entry.pulsar_share = Some(hex::encode(share.to_bytes().as_slice()));
            }
        }
        public.pulsar_group_key = Some(hex::encode(group.public_key_bytes()));
    }
    Ok(SetDeal { public, shares })
}

/// The public seed a Pulsar committee of the genesis set is drawn with:
/// `tagged_hash("QUASAR-PULSAR-COMMITTEE-SEED-v1", [chain_id, genesis_time_us, every
/// validator's BLS public key (hex text bytes) in order])`, fixed before any key is dealt.
pub fn committee_seed(genesis: &GenesisFile) -> Hash {
    seed_of(genesis, None, &genesis.validators)
}

/// The public seed a Pulsar committee of the set scheduled by `change` is drawn with: as
/// [`committee_seed`], with the change's epoch (8 bytes LE) after `genesis_time_us` and the
/// change's validators.
pub fn change_committee_seed(genesis: &GenesisFile, change: &ValidatorChange) -> Hash {
    seed_of(genesis, Some(change.epoch), &change.validators)
}

fn seed_of(genesis: &GenesisFile, epoch: Option<u64>, validators: &[GenesisValidator]) -> Hash {
    let mut parts: Vec<Vec<u8>> = vec![
        genesis.chain_id.to_le_bytes().to_vec(),
        genesis.genesis_time_us.to_le_bytes().to_vec(),
    ];
    parts.extend(epoch.map(|e| e.to_le_bytes().to_vec()));
    parts.extend(
        validators
            .iter()
            .map(|v| v.bls_public_key.clone().into_bytes()),
    );
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    tagged_hash("QUASAR-PULSAR-COMMITTEE-SEED-v1", &refs)
}

/// Checks a `pulsar_committee` for a set of `validators` validators: 2 to
/// [`pulsar::params::MAX_PARTIES`] members, increasing, each a validator index. Errors begin
/// with `label`.
fn check_committee(label: &str, members: &[u32], validators: usize) -> Result<(), ConfigError> {
    let invalid = |why: String| {
        Err(ConfigError::Invalid(format!(
            "{label}pulsar_committee: {why}"
        )))
    };
    if !(2..=pulsar::params::MAX_PARTIES).contains(&members.len()) {
        return invalid(format!(
            "{} members, a Pulsar key has 2 to {}",
            members.len(),
            pulsar::params::MAX_PARTIES
        ));
    }
    if members.windows(2).any(|w| w[0] >= w[1]) {
        return invalid("members must be increasing validator indices".into());
    }
    if let Some(&last) = members.last() {
        if last as usize >= validators {
            return invalid(format!(
                "validator {last} does not exist ({validators} validators)"
            ));
        }
    }
    Ok(())
}

/// Logs a warning when a secret file can be read by other users (it should be mode 0600).
fn warn_if_exposed(path: &Path) {
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

/// Checks that `der` is a well-formed X.509 certificate usable as a TLS end-entity identity.
fn check_certificate(der: &[u8]) -> Result<(), String> {
    let cert = rustls::pki_types::CertificateDer::from(der);
    webpki::EndEntityCert::try_from(&cert)
        .map(|_| ())
        .map_err(|e| format!("{e:?}"))
}

/// One validator in `genesis.json` (unknown fields are refused).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct GenesisValidator {
    /// Name, informational.
    pub name: String,
    /// BLS public key, hex (48 bytes).
    pub bls_public_key: String,
    /// Proof of possession, hex (96 bytes).
    pub proof_of_possession: String,
    /// ML-DSA-65 identity public key, hex (1952 bytes).
    pub mldsa_public_key: String,
    /// SLH-DSA Magnetar public key of the genesis's `magnetar_parameter_set`, hex (48 bytes).
    pub slhdsa_public_key: String,
    /// TLS certificate, DER hex.
    pub tls_certificate: String,
    /// Stake weight.
    pub stake: u64,
}

/// `genesis.json` (unknown fields are refused, so a misspelt field is not silently ignored).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct GenesisFile {
    /// Chain id all messages carry.
    pub chain_id: u64,
    /// Genesis time, microseconds since the Unix epoch (the timestamp of block 0).
    pub genesis_time_us: u64,
    /// Validators of epoch 0, in index order.
    pub validators: Vec<GenesisValidator>,
    /// The cert profile of epoch 0 (docs/architecture.md §3): `quasar` (the default when absent),
    /// `aurora`, `polaris`, `fast` or `hybrid-<deadline>`.
    #[serde(default = "default_profile")]
    pub profile: String,
    /// Blocks per bundle of the post-quantum legs (1 ≤ k ≤ 1024; default 16; `fast` uses 1).
    #[serde(default = "default_bundle_size")]
    pub bundle_size: u64,
    /// Blocks per epoch (default 7,200: an hour at 500 ms blocks; 0 runs one endless epoch). A
    /// multiple of `bundle_size` (no bundle crosses an epoch boundary) unless the profile is
    /// `fast`. Every epoch has this genesis's validator set and keys unless `validator_changes`
    /// replaces the set.
    #[serde(default = "default_epoch_length")]
    pub epoch_length: u64,
    /// Epoch 0's Corona group key, hex (4,640 bytes), for profiles with a Corona leg.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corona_group_key: Option<String>,
    /// Epoch 0's Pulsar group key (an ML-DSA-65 public key), hex (1,952 bytes), for profiles
    /// with a Pulsar leg.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pulsar_group_key: Option<String>,
    /// The validators holding the Pulsar key's shares, by index, increasing: party p is the
    /// p-th. 2 to 6 members (a Pulsar key's limit); absent means every validator, which needs
    /// at most 6. `quasar-node deal` samples [`PULSAR_COMMITTEE_SIZE`] members by stake for
    /// larger sets (`quasar_crypto::pulsar::committee`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pulsar_committee: Option<Vec<u32>>,
    /// The Groth16 rollup verifying key for this validator set (`rollup.vk.json`'s
    /// `verifying_key`), hex, for profiles with a Groth16 leg.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollup_verifying_key: Option<String>,
    /// The SLH-DSA parameter set of every validator's Magnetar key (FIPS 205 Table 2): `"192f"`
    /// (SLH-DSA-SHAKE-192f, 35,664-byte signatures; the default, meant when absent and left out
    /// when written) or `"192s"` (SLH-DSA-SHAKE-192s, 16,224-byte signatures, signing about 5 s
    /// instead of 0.3 s per signature and core); anything else is refused when the file is
    /// read, naming this field. Bound into the genesis hash when not the default.
    #[serde(
        default,
        skip_serializing_if = "is_default_set",
        serialize_with = "serialize_magnetar_set",
        deserialize_with = "deserialize_genesis_set"
    )]
    pub magnetar_parameter_set: ParameterSet,
    /// Scheduled validator-set changes, by increasing `epoch` (each at least 1 and above the one
    /// before): from a change's epoch on, until the next change, its `validators` are the
    /// validator set. Absent or empty (left out when written, so the genesis keeps its hash)
    /// means every epoch has `validators`. Needs an `epoch_length` above 0. Under a profile with
    /// threshold or rollup legs each change carries its set's own keys ([`deal`] writes the
    /// threshold ones). See [`GenesisFile::check`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub validator_changes: Vec<ValidatorChange>,
}

/// A validator-set change scheduled in `genesis.json` (unknown fields are refused).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ValidatorChange {
    /// The first epoch of the new set: at least 1 (epoch 0's set is the genesis `validators`),
    /// above the previous change's, at most [`quasar_consensus::epoch::MAX_EPOCH`].
    pub epoch: u64,
    /// The validator set from `epoch` on, until the next change, in index order (the index is
    /// the signer bitmap position in that set's certificates). Each is checked as a genesis
    /// validator is; a validator also in another set of the genesis (the same BLS key) keeps
    /// its name, ML-DSA-65 key, SLH-DSA key and TLS certificate there (its stake and position
    /// may differ).
    pub validators: Vec<GenesisValidator>,
    /// The set's Corona group key, hex (4,640 bytes), for profiles with a Corona leg: what the
    /// genesis `corona_group_key` is to epoch 0's set. Written by `quasar-node deal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corona_group_key: Option<String>,
    /// The set's Pulsar group key (an ML-DSA-65 public key), hex (1,952 bytes), for profiles
    /// with a Pulsar leg.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pulsar_group_key: Option<String>,
    /// The validators of this set holding its Pulsar key's shares, by index in this set,
    /// increasing (as the genesis `pulsar_committee`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pulsar_committee: Option<Vec<u32>>,
    /// The Groth16 rollup verifying key for this set, hex, for profiles with a Groth16 leg. A
    /// set of the genesis set's size and quorum can use the same setup (the circuit takes the
    /// set's keys as the public commitment h_x).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollup_verifying_key: Option<String>,
}

impl ValidatorChange {
    fn key_fields(&self) -> KeyFields<'_> {
        KeyFields {
            corona_group_key: &self.corona_group_key,
            pulsar_group_key: &self.pulsar_group_key,
            pulsar_committee: &self.pulsar_committee,
            rollup_verifying_key: &self.rollup_verifying_key,
        }
    }
}

/// The threshold and rollup key fields of one validator set of a genesis file: the genesis's
/// own (epoch 0's set) or a change's.
struct KeyFields<'a> {
    corona_group_key: &'a Option<String>,
    pulsar_group_key: &'a Option<String>,
    pulsar_committee: &'a Option<Vec<u32>>,
    rollup_verifying_key: &'a Option<String>,
}

/// [`KeyFields`] decoded from hex, not parsed yet.
struct RawKeys {
    corona: Option<Vec<u8>>,
    pulsar: Option<Vec<u8>>,
    committee: Option<Vec<u32>>,
    rollup: Option<Vec<u8>>,
}

impl KeyFields<'_> {
    /// Decodes the hex and checks the committee against a set of `validators` validators, and
    /// appends the set's keys to the genesis hash `parts`: the Corona key bytes, the Pulsar key
    /// bytes, the committee (u32 LE each) and the rollup verifying key bytes, each empty when
    /// absent. Errors: [`ConfigError::Invalid`] beginning with `label` and naming the field
    /// (bad hex, a bad committee, a Pulsar key for more than
    /// [`pulsar::params::MAX_PARTIES`] validators without a committee).
    fn decode(
        &self,
        label: &str,
        validators: usize,
        parts: &mut Vec<Vec<u8>>,
    ) -> Result<RawKeys, ConfigError> {
        let optional = |field: &str, value: &Option<String>| {
            value
                .as_deref()
                .map(|v| {
                    decode_hex(field, v).map_err(|e| ConfigError::Invalid(format!("{label}{e}")))
                })
                .transpose()
        };
        let corona = optional("corona_group_key", self.corona_group_key)?;
        let pulsar = optional("pulsar_group_key", self.pulsar_group_key)?;
        let committee_bytes: Vec<u8> = match self.pulsar_committee {
            Some(_) if pulsar.is_none() => {
                return Err(ConfigError::Invalid(format!(
                    "{label}pulsar_committee without pulsar_group_key: the committee holds that \
                     key's shares (quasar-node deal writes both)"
                )));
            }
            Some(members) => {
                check_committee(label, members, validators)?;
                members.iter().flat_map(|m| m.to_le_bytes()).collect()
            }
            None if pulsar.is_some() && validators > pulsar::params::MAX_PARTIES => {
                return Err(ConfigError::Invalid(format!(
                    "{label}pulsar_group_key: the set has {validators} validators but no \
                     pulsar_committee: a Pulsar key has at most {} parties",
                    pulsar::params::MAX_PARTIES
                )));
            }
            None => Vec::new(),
        };
        let rollup = optional("rollup_verifying_key", self.rollup_verifying_key)?;
        parts.push(corona.clone().unwrap_or_default());
        parts.push(pulsar.clone().unwrap_or_default());
        parts.push(committee_bytes);
        parts.push(rollup.clone().unwrap_or_default());
        Ok(RawKeys {
            corona,
            pulsar,
            committee: self.pulsar_committee.clone(),
            rollup,
        })
    }
}

/// Refuses a key whose public part is all zeros (after the 32-byte seed ρ): a valid encoding of
/// t = 0 or b̃ = 0, under which anyone can sign.
fn refuse_degenerate(label: &str, field: &str, bytes: &[u8]) -> Result<(), ConfigError> {
    if bytes.iter().skip(32).all(|&b| b == 0) {
        return Err(ConfigError::Invalid(format!(
            "{label}{field}: the key is all zeros after its seed (anyone could sign)"
        )));
    }
    Ok(())
}

impl RawKeys {
    /// Parses the keys of `set` (checked from the file's `validators`). Errors:
    /// [`ConfigError::Invalid`] beginning with `label` and naming the field: a key that does
    /// not decode or is degenerate, a rollup verifying key with the wrong number of public
    /// inputs, an ML-DSA-65 key the rollup cannot expand.
    fn parse(
        self,
        label: &str,
        validators: &[GenesisValidator],
        set: &CheckedSet,
    ) -> Result<SetKeys, ConfigError> {
        let invalid = |field: &str, e: &dyn std::fmt::Display| {
            ConfigError::Invalid(format!("{label}{field}: {e}"))
        };
        let corona = match self.corona {
            Some(bytes) => {
                let key = quasar_lanes::corona::decode_group_key(&bytes)
                    .map_err(|e| invalid("corona_group_key", &e))?;
                refuse_degenerate(label, "corona_group_key", &bytes)?;
                Some(key)
            }
            None => None,
        };
        let pulsar = match self.pulsar {
            Some(bytes) => {
                let key = quasar_lanes::pulsar::decode_group_key(&bytes)
                    .map_err(|e| invalid("pulsar_group_key", &e))?;
                refuse_degenerate(label, "pulsar_group_key", &bytes)?;
                Some(key)
            }
            None => None,
        };
        let rollup = match self.rollup {
            Some(bytes) => {
                let verifying_key = VerifyingKey::from_bytes(&bytes)
                    .map_err(|e| invalid("rollup_verifying_key", &e))?;
                let inputs = Statement {
                    digest: [0; 32],
                    h_x: Default::default(),
                }
                .public_inputs()
                .len();
                if verifying_key.num_inputs() != inputs {
                    return Err(invalid(
                        "rollup_verifying_key",
                        &format!(
                            "{} public inputs, the rollup statement has {inputs}",
                            verifying_key.num_inputs()
                        ),
                    ));
                }
                let h_x = commitment(&rollup_validators(validators, &set.mldsa_public_keys)?);
                Some(RollupKey { verifying_key, h_x })
            }
            None => None,
        };
        let pulsar_committee = self
            .committee
            .unwrap_or_else(|| (0..set.validators.len() as u32).collect());
        Ok(SetKeys {
            corona,
            pulsar,
            pulsar_committee,
            rollup,
        })
    }
}

/// The threshold and rollup public keys of one validator set, checked.
#[derive(Debug, Clone, Default)]
pub struct SetKeys {
    /// The set's Corona group key, if the genesis has one for it.
    pub corona: Option<CoronaGroupKey>,
    /// The set's Pulsar group key, if the genesis has one for it.
    pub pulsar: Option<mldsa::PublicKey<MlDsa65>>,
    /// The validators holding the Pulsar key's shares, by index in the set, increasing (party
    /// p is the p-th): the file's `pulsar_committee`, or every validator of the set.
    pub pulsar_committee: Vec<u32>,
    /// The rollup verifying key and the commitment h_x to the set's ML-DSA-65 keys, if the
    /// genesis has a rollup key for the set.
    pub rollup: Option<RollupKey>,
}

fn default_profile() -> String {
    Profile::default().name()
}

/// Default blocks per bundle.
pub const DEFAULT_BUNDLE_SIZE: u64 = 16;

fn default_bundle_size() -> u64 {
    DEFAULT_BUNDLE_SIZE
}

/// Default blocks per epoch.
pub const DEFAULT_EPOCH_LENGTH: u64 = 7_200;

/// Parses a command-line value `EPOCH:ITEM,ITEM,…`: an epoch, then a non-empty comma-separated
/// list (`genesis --change 2:keys/v1,keys/v4`, key directories; `testnet --validator-set
/// 2:1,2,3,4`, validator numbers). Errors: a message quoting the value and naming what is
/// malformed (no colon, a bad epoch or item, an empty list).
pub fn parse_epoch_list<T>(text: &str) -> Result<(u64, Vec<T>), String>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    let (epoch, items) = text
        .split_once(':')
        .ok_or_else(|| format!("{text:?}: expected EPOCH:ITEM,ITEM,… (e.g. 2:1,2,3,4)"))?;
    let epoch = epoch
        .trim()
        .parse()
        .map_err(|e| format!("{text:?}: epoch {epoch:?}: {e}"))?;
    if items.trim().is_empty() {
        return Err(format!("{text:?}: nothing after the epoch"));
    }
    let items = items
        .split(',')
        .map(|item| {
            item.trim()
                .parse()
                .map_err(|e| format!("{text:?}: {item:?}: {e}"))
        })
        .collect::<Result<Vec<T>, String>>()?;
    Ok((epoch, items))
}

/// Checks that epochs of `epoch_length` blocks hold whole bundles of `bundle_size` (any length
/// under `fast`, whose bundles are single blocks; 0 is one endless epoch). Errors: a message
/// naming both values.
pub fn check_epoch_length(
    epoch_length: u64,
    bundle_size: u64,
    profile: Profile,
) -> Result<(), String> {
    if profile != Profile::Fast && !epoch_length.is_multiple_of(bundle_size.max(1)) {
        return Err(format!(
            "epoch_length {epoch_length} is not a multiple of bundle_size {bundle_size}: a \
             bundle would cross an epoch boundary"
        ));
    }
    Ok(())
}

fn default_epoch_length() -> u64 {
    DEFAULT_EPOCH_LENGTH
}

/// One validator set of a genesis, checked ([`GenesisFile::check`]): epoch 0's (the genesis
/// `validators`) or a scheduled change's. Every list is by validator index in this set.
#[derive(Debug, Clone)]
pub struct CheckedSet {
    /// The set's first epoch: 0 for the genesis set, else its change's `epoch`.
    pub first_epoch: u64,
    /// BLS keys (subgroup-checked, proof of possession verified) and stakes.
    pub validators: ValidatorSet,
    /// The set's root, which its epochs' finalize votes bind inside μ:
    /// `tagged_hash("QUASAR-VALIDATOR-SET-v1", [per validator, in index order: BLS public key
    /// (48 bytes compressed), ML-DSA-65 public key (1952 bytes), SLH-DSA public key (48
    /// bytes), stake (8 bytes LE)])`, the same for every set.
    pub validator_set_root: Hash,
    /// TLS certificates (DER), each a well-formed X.509 certificate.
    pub tls_certificates: Vec<Vec<u8>>,
    /// ML-DSA-65 identity public keys (1952 bytes each).
    pub mldsa_public_keys: Vec<mldsa::PublicKey<MlDsa65>>,
    /// SLH-DSA Magnetar public keys, of the genesis's Magnetar parameter set.
    pub slhdsa_public_keys: Vec<magnetar::PublicKey>,
    /// The set's threshold and rollup keys.
    pub keys: SetKeys,
}

impl CheckedSet {
    /// The set's validators as the Groth16 rollup sees them (expanded ML-DSA-65 keys and
    /// stakes, in index order); `file` holds the entries it was checked from. Errors:
    /// [`ConfigError::Invalid`] naming a key that does not expand.
    pub fn rollup_validators(
        &self,
        file: &[GenesisValidator],
    ) -> Result<Vec<RollupValidator>, ConfigError> {
        rollup_validators(file, &self.mldsa_public_keys)
    }
}

/// Where a validator first appears in a genesis: its set (0 for the genesis set, k for
/// `validator_changes[k - 1]`) and its index in that set.
type RosterPosition = (usize, usize);

/// A checked genesis.
#[derive(Debug, Clone)]
pub struct Genesis {
    /// The file it came from.
    pub file: GenesisFile,
    /// Its hash, the hash of block 0.
    pub hash: Hash,
    /// The validator set of epoch 0.
    pub validators: ValidatorSet,
    /// TLS certificates (DER), by validator index in epoch 0's set.
    pub tls_certificates: Vec<Vec<u8>>,
    /// ML-DSA-65 identity public keys, by validator index in epoch 0's set.
    pub mldsa_public_keys: Vec<mldsa::PublicKey<MlDsa65>>,
    /// SLH-DSA Magnetar public keys, by validator index in epoch 0's set, all of
    /// [`Genesis::magnetar_set`].
    pub slhdsa_public_keys: Vec<magnetar::PublicKey>,
    /// The cert profile of every epoch.
    pub profile: Profile,
    /// The validator-set root of epoch 0 (as [`CheckedSet::validator_set_root`]).
    pub validator_set_root: Hash,
    /// Epoch 0's threshold and rollup keys.
    pub keys: SetKeys,
    /// The scheduled validator-set changes (the genesis `validator_changes`), checked, by
    /// increasing first epoch; empty when every epoch has epoch 0's set.
    pub changes: Vec<CheckedSet>,
    /// Every epoch's validator set and domain, built once by the check.
    epoch_sets: EpochSets,
    /// Every distinct validator's first appearance, in order ([`Genesis::roster`]).
    roster: Vec<RosterPosition>,
}

impl Genesis {
    /// The validators holding epoch 0's Pulsar key shares, increasing (party p is the p-th):
    /// the genesis `pulsar_committee`, or every validator of epoch 0's set.
    pub fn pulsar_committee(&self) -> Vec<u32> {
        self.keys.pulsar_committee.clone()
    }

    /// The SLH-DSA parameter set of every Magnetar key and signature of this chain (the
    /// genesis `magnetar_parameter_set`).
    pub fn magnetar_set(&self) -> ParameterSet {
        self.file.magnetar_parameter_set
    }

    /// How the chain divides into epochs.
    pub fn schedule(&self) -> EpochSchedule {
        EpochSchedule::new(self.file.epoch_length)
    }

    /// Epoch 0's validators as the Groth16 rollup sees them: expanded ML-DSA-65 keys and
    /// stakes, in index order. Errors: [`ConfigError::Invalid`] naming a key that does not
    /// expand.
    pub fn rollup_validators(&self) -> Result<Vec<RollupValidator>, ConfigError> {
        rollup_validators(&self.file.validators, &self.mldsa_public_keys)
    }

    /// The validator set and domain of every epoch: epoch 0's set with [`Genesis::domain`]
    /// from epoch 0, then each change's set from its first epoch, with an [`EpochDomain`] of
    /// that set's root and the genesis profile's name.
    pub fn epoch_sets(&self) -> EpochSets {
        self.epoch_sets.clone()
    }

    /// Every validator set of the chain, by increasing first epoch, each with the file entries
    /// it was checked from: epoch 0's (the genesis `validators` and keys), then each change's.
    pub fn sets(&self) -> Vec<(&[GenesisValidator], CheckedSet)> {
        let genesis_set = CheckedSet {
            first_epoch: 0,
            validators: self.validators.clone(),
            validator_set_root: self.validator_set_root,
            tls_certificates: self.tls_certificates.clone(),
            mldsa_public_keys: self.mldsa_public_keys.clone(),
            slhdsa_public_keys: self.slhdsa_public_keys.clone(),
            keys: self.keys.clone(),
        };
        let changes = self
            .file
            .validator_changes
            .iter()
            .map(|c| c.validators.as_slice())
            .zip(self.changes.iter().cloned());
        std::iter::once((self.file.validators.as_slice(), genesis_set))
            .chain(changes)
            .collect()
    }

    /// Every distinct validator of the chain (by BLS public key), in order of first appearance:
    /// epoch 0's set in index order, then each change's newcomers in that change's index
    /// order. Each entry is the validator's first appearance in the file (the check made sure
    /// that its later appearances carry the same name, ML-DSA-65 and SLH-DSA keys and TLS
    /// certificate; stakes may differ).
    ///
    /// A validator's roster position is its network identity for the life of the chain (its
    /// peer index on the validator network, its TLS certificate pinned there), unlike its
    /// index in a set, which is its signer bitmap position in that set's epochs only and
    /// changes between sets. Without changes the roster is epoch 0's set, positions equal to
    /// indices.
    pub fn roster(&self) -> Vec<&GenesisValidator> {
        self.roster
            .iter()
            .filter_map(|&(set, index)| {
                let validators = match set.checked_sub(1) {
                    None => &self.file.validators,
                    Some(change) => &self.file.validator_changes.get(change)?.validators,
                };
                validators.get(index)
            })
            .collect()
    }

    /// Epoch 0's certificate policy (profile, bundle size and the keys its legs need), or why
    /// there is none: the profile needs keys the genesis does not carry (every missing genesis
    /// field is named). The first entry of [`Genesis::cert_policies`].
    pub fn cert_policy(&self) -> Result<CertPolicy, String> {
        let keys = EpochKeys {
            validators: self.validators.clone(),
            corona: self.keys.corona.clone(),
            rollup: self.keys.rollup.clone(),
            pulsar: self.keys.pulsar.clone(),
            magnetar: None,
        };
        self.set_policy(0, self.validator_set_root, keys, &self.slhdsa_public_keys)
    }

    /// The certificate policy of every validator set, with the set's first epoch, by increasing
    /// epoch: epoch 0's ([`Genesis::cert_policy`]), then each change's (`CertPolicy::new(chain
    /// id, first epoch, …)` over that set's validators, root and Magnetar keys). A policy
    /// covers its epoch and, carried with `CertPolicy::with_epoch`, every epoch up to the next
    /// entry's. A changed set's policy uses the keys of its change (an error naming the missing
    /// fields when the profile needs keys the change does not carry).
    pub fn cert_policies(&self) -> Vec<(u64, Result<CertPolicy, String>)> {
        let changes = self.changes.iter().map(|set| {
            let keys = EpochKeys {
                validators: set.validators.clone(),
                corona: set.keys.corona.clone(),
                rollup: set.keys.rollup.clone(),
                pulsar: set.keys.pulsar.clone(),
                magnetar: None,
            };
            let policy = self.set_policy(
                set.first_epoch,
                set.validator_set_root,
                keys,
                &set.slhdsa_public_keys,
            );
            (set.first_epoch, policy)
        });
        std::iter::once((0, self.cert_policy()))
            .chain(changes)
            .collect()
    }

    /// The policy of the set first used at `first_epoch` with root `root`, `keys` (Magnetar
    /// keys are built here from `keys.validators` and `slhdsa`). Errors: a message naming the
    /// missing keys, bad Magnetar keys, or [`CertPolicy::new`]'s error.
    fn set_policy(
        &self,
        first_epoch: u64,
        root: Hash,
        mut keys: EpochKeys,
        slhdsa: &[magnetar::PublicKey],
    ) -> Result<CertPolicy, String> {
        let missing: Vec<&str> = self
            .profile
            .legs()
            .iter()
            .filter_map(|leg| match leg {
                LegKind::Corona if keys.corona.is_none() => Some("corona_group_key"),
                LegKind::Pulsar if keys.pulsar.is_none() => Some("pulsar_group_key"),
                LegKind::Groth16 if keys.rollup.is_none() => Some("rollup_verifying_key"),
                _ => None,
            })
            .collect();
        if !missing.is_empty() {
            let place = if first_epoch == 0 {
                "the genesis".to_string()
            } else {
                format!("the validator change at epoch {first_epoch}")
            };
            return Err(format!(
                "profile {} needs {} in {place}, which has none",
                self.profile,
                missing.join(" and ")
            ));
        }
        let magnetar = MagnetarKeys::new(
            keys.validators.clone(),
            self.magnetar_set(),
            slhdsa.to_vec(),
        )
        .map_err(|e| format!("Magnetar keys: {e}"))?;
        keys.magnetar = Some(magnetar);
        let bundle_size = usize::try_from(self.file.bundle_size).unwrap_or(usize::MAX);
        CertPolicy::new(
            self.file.chain_id,
            first_epoch,
            self.profile,
            root,
            bundle_size,
            keys,
        )
        .map_err(|e| e.to_string())
    }

    /// What epoch 0's votes and certificates bind besides their own fields (the round digest
    /// μ's validator-set root and profile id).
    pub fn domain(&self) -> EpochDomain {
        epoch_domain(self.validator_set_root, self.profile)
    }
}

/// What the votes of the epochs of a set with root `root` bind under `profile`.
fn epoch_domain(root: Hash, profile: Profile) -> EpochDomain {
    EpochDomain {
        validator_set_root: root,
        profile_id: profile.name(),
    }
}

/// A validator set's root, which the finalize votes of its epochs bind inside μ:
/// `tagged_hash("QUASAR-VALIDATOR-SET-v1", [per validator, in index order: BLS public key (48
/// bytes compressed), ML-DSA-65 public key (1952 bytes), SLH-DSA public key (48 bytes), stake
/// (8 bytes LE)])`. `mldsa` and `slhdsa` are by validator index, as long as the set.
fn validator_set_root(
    validators: &ValidatorSet,
    mldsa: &[mldsa::PublicKey<MlDsa65>],
    slhdsa: &[magnetar::PublicKey],
) -> Hash {
    let mut parts: Vec<Vec<u8>> = Vec::with_capacity(4 * validators.len());
    for ((v, identity), magnetar_key) in validators.validators().iter().zip(mldsa).zip(slhdsa) {
        parts.push(v.public_key.to_bytes().to_vec());
        parts.push(identity.as_bytes().to_vec());
        parts.push(magnetar_key.as_bytes().to_vec());
        parts.push(v.stake.to_le_bytes().to_vec());
    }
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    tagged_hash("QUASAR-VALIDATOR-SET-v1", &refs)
}

/// How errors about the set first used at `first_epoch` begin: nothing for the genesis set (its
/// errors read `validator 1 (v1): …`), `validator change at epoch E: ` for a change's.
fn set_label(first_epoch: u64) -> String {
    if first_epoch == 0 {
        String::new()
    } else {
        format!("validator change at epoch {first_epoch}: ")
    }
}

/// Checks one validator set of a genesis (the genesis `validators`, or a change's, first used
/// at `first_epoch`) and appends its part of the genesis hash to `parts`: per validator, in
/// index order, its BLS public key (48 bytes compressed), ML-DSA-65 public key (1952 bytes),
/// SLH-DSA public key (48 bytes), TLS certificate (DER) and stake (8 bytes LE). BLS keys are
/// decoded through `cache`, SLH-DSA keys under `magnetar_set`.
///
/// Errors: [`ConfigError::Invalid`], beginning with [`set_label`], naming the validator (a name
/// that repeats one of the set, a BLS key that does not decode or whose proof of possession does
/// not verify, an ML-DSA-65 key that is not 1952 bytes or repeats another of the set, an
/// SLH-DSA key that is not 48 bytes or repeats, a TLS certificate that is not X.509 or repeats,
/// bad hex) or the set (empty, a zero stake, stakes above `u64::MAX` in all, a repeated BLS
/// key).
fn check_set(
    first_epoch: u64,
    validators: &[GenesisValidator],
    magnetar_set: ParameterSet,
    cache: &PublicKeyCache,
    parts: &mut Vec<Vec<u8>>,
) -> Result<CheckedSet, ConfigError> {
    let label = set_label(first_epoch);
    let mut members = Vec::with_capacity(validators.len());
    let mut certs: Vec<Vec<u8>> = Vec::with_capacity(validators.len());
    let mut mldsa_keys: Vec<mldsa::PublicKey<MlDsa65>> = Vec::with_capacity(validators.len());
    let mut slhdsa_keys: Vec<magnetar::PublicKey> = Vec::with_capacity(validators.len());
    for (i, v) in validators.iter().enumerate() {
        let who = format!("{label}validator {i} ({})", v.name);
        // Names identify validators to operators and to the rollup commands.
        if validators
            .iter()
            .take(i)
            .any(|earlier| earlier.name == v.name)
        {
            return Err(ConfigError::Invalid(format!(
                "{who}: the name repeats an earlier validator's"
            )));
        }
        let hex = |field: &str, value: &str| {
            decode_hex(field, value).map_err(|e| ConfigError::Invalid(format!("{who}: {e}")))
        };
        let pk = cache
            .get_or_decode(&hex("bls_public_key", &v.bls_public_key)?)
            .map_err(|e| ConfigError::Invalid(format!("{who}: public key: {e}")))?;
        let pop =
            ProofOfPossession::from_bytes(&hex("proof_of_possession", &v.proof_of_possession)?)
                .map_err(|e| ConfigError::Invalid(format!("{who}: proof of possession: {e}")))?;
        pk.verify_possession(&pop).map_err(|e| {
            ConfigError::Invalid(format!("{who}: proof of possession does not verify: {e}"))
        })?;
        let identity =
            mldsa::PublicKey::<MlDsa65>::from_bytes(&hex("mldsa_public_key", &v.mldsa_public_key)?)
                .map_err(|e| ConfigError::Invalid(format!("{who}: ML-DSA-65 public key: {e}")))?;
        if mldsa_keys.contains(&identity) {
            return Err(ConfigError::Invalid(format!(
                "{who}: ML-DSA-65 public key repeats an earlier validator's"
            )));
        }
        let magnetar_key = magnetar::PublicKey::from_bytes(
            magnetar_set,
            &hex("slhdsa_public_key", &v.slhdsa_public_key)?,
        )
        .map_err(|e| ConfigError::Invalid(format!("{who}: SLH-DSA public key: {e}")))?;
        if slhdsa_keys.contains(&magnetar_key) {
            return Err(ConfigError::Invalid(format!(
                "{who}: SLH-DSA public key repeats an earlier validator's"
            )));
        }
        let cert = hex("tls_certificate", &v.tls_certificate)?;
        check_certificate(&cert).map_err(|e| {
            ConfigError::Invalid(format!(
                "{who}: TLS certificate is not a valid X.509 certificate: {e}"
            ))
        })?;
        if certs.contains(&cert) {
            return Err(ConfigError::Invalid(format!(
                "{who}: TLS certificate repeats an earlier validator's"
            )));
        }
        parts.push(pk.to_bytes().to_vec());
        parts.push(identity.as_bytes().to_vec());
        parts.push(magnetar_key.as_bytes().to_vec());
        parts.push(cert.clone());
        parts.push(v.stake.to_le_bytes().to_vec());
        members.push(Validator {
            public_key: pk,
            stake: v.stake,
        });
        certs.push(cert);
        mldsa_keys.push(identity);
        slhdsa_keys.push(magnetar_key);
    }
    let validators = ValidatorSet::new(members)
        .map_err(|e| ConfigError::Invalid(format!("{label}validator set: {e}")))?;
    let validator_set_root = validator_set_root(&validators, &mldsa_keys, &slhdsa_keys);
    Ok(CheckedSet {
        first_epoch,
        validators,
        validator_set_root,
        tls_certificates: certs,
        mldsa_public_keys: mldsa_keys,
        slhdsa_public_keys: slhdsa_keys,
        keys: SetKeys::default(),
    })
}

/// Checks that every validator keeps its identity across the sets of a genesis (each set with
/// the file's validators it was checked from; the genesis set first) and returns each distinct
/// validator's first appearance, in order ([`Genesis::roster`]). A validator is its BLS key: a
/// key in several sets must carry the same name, ML-DSA-65 key, SLH-DSA key and TLS certificate
/// in each, and no two keys may share any of those four. Errors: [`ConfigError::Invalid`] naming
/// the validator and the earlier one it clashes with.
fn check_identities(
    sets: &[(&[GenesisValidator], &CheckedSet)],
) -> Result<Vec<RosterPosition>, ConfigError> {
    const KINDS: [&str; 4] = [
        "name",
        "ML-DSA-65 public key",
        "SLH-DSA public key",
        "TLS certificate",
    ];
    let describe = |(set, index): RosterPosition| {
        let (file, first_epoch) = sets
            .get(set)
            .map_or((&[][..], 0), |(f, s)| (*f, s.first_epoch));
        let name = file.get(index).map_or("", |v| v.name.as_str());
        match first_epoch {
            0 => format!("validator {index} ({name}) of the genesis set"),
            epoch => format!("validator {index} ({name}) of the change at epoch {epoch}"),
        }
    };
    let mut roster: Vec<RosterPosition> = Vec::new();
    let mut by_bls: HashMap<[u8; 48], usize> = HashMap::new();
    // For each of KINDS: the identity bytes → the roster entry holding them.
    let mut owners: [HashMap<&[u8], usize>; 4] = Default::default();
    for (s, &(file, set)) in sets.iter().enumerate() {
        let label = set_label(set.first_epoch);
        let members = file
            .iter()
            .zip(set.validators.validators())
            .zip(&set.mldsa_public_keys)
            .zip(&set.slhdsa_public_keys)
            .zip(&set.tls_certificates);
        for (i, ((((v, member), mldsa_key), slhdsa_key), cert)) in members.enumerate() {
            let who = || format!("{label}validator {i} ({})", v.name);
            let identity: [&[u8]; 4] = [
                v.name.as_bytes(),
                mldsa_key.as_bytes(),
                slhdsa_key.as_bytes(),
                cert.as_slice(),
            ];
            let next = roster.len();
            let entry = *by_bls.entry(member.public_key.to_bytes()).or_insert(next);
            if entry != next {
                let differs = KINDS
                    .iter()
                    .zip(&owners)
                    .zip(identity)
                    .find(|((_, owner), bytes)| owner.get(bytes) != Some(&entry));
                if let Some(((kind, _), _)) = differs {
                    return Err(ConfigError::Invalid(format!(
                        "{}: has the BLS public key of {} but another {kind}; a validator \
                         keeps its name, ML-DSA-65 and SLH-DSA keys and TLS certificate in \
                         every set",
                        who(),
                        roster.get(entry).map_or_else(String::new, |&p| describe(p))
                    )));
                }
                continue;
            }
            for ((kind, owner), bytes) in KINDS.iter().zip(&mut owners).zip(identity) {
                if let Some(&other) = owner.get(bytes) {
                    return Err(ConfigError::Invalid(format!(
                        "{}: {kind} is that of {}, another validator (another BLS public key)",
                        who(),
                        roster.get(other).map_or_else(String::new, |&p| describe(p))
                    )));
                }
                owner.insert(bytes, next);
            }
            roster.push((s, i));
        }
    }
    Ok(roster)
}

impl GenesisFile {
    /// Builds a genesis from the public key files of `key_dirs` (in validator index order) with
    /// equal `stake`; its Magnetar parameter set is the one the files share (what the `genesis`
    /// command does). Errors: [`ConfigError`] reading a file; [`ConfigError::Invalid`] naming
    /// the first validator (index, name and directory) whose `slhdsa_parameter_set` differs from
    /// validator 0's, as a genesis has one set for all its validators.
    pub fn from_key_dirs(
        key_dirs: &[PathBuf],
        chain_id: u64,
        genesis_time_us: u64,
        stake: u64,
    ) -> Result<GenesisFile, ConfigError> {
        let keys = load_publics(key_dirs)?;
        if let Some(first) = keys.first() {
            if let Some((i, k, dir)) = other_set(&keys, key_dirs, first.slhdsa_parameter_set) {
                return Err(ConfigError::Invalid(format!(
                    "validator {i} ({}, {}): slhdsa_parameter_set is {:?} but validator 0 ({})'s \
                     is {:?}; every validator of a genesis has a Magnetar key of the same set \
                     (make its keys again with `keygen --slhdsa-set {}`)",
                    k.name,
                    dir.display(),
                    magnetar_set_name(k.slhdsa_parameter_set),
                    first.name,
                    magnetar_set_name(first.slhdsa_parameter_set),
                    magnetar_set_name(first.slhdsa_parameter_set),
                )));
            }
        }
        Ok(GenesisFile::from_public_keys(
            chain_id,
            genesis_time_us,
            &keys,
            stake,
        ))
    }

    /// Schedules a validator-set change: from `epoch` on, the validators of the public key files
    /// of `key_dirs` (in index order) with equal `stake` (what `genesis --change` does). Errors:
    /// [`ConfigError`] reading a file; [`ConfigError::Invalid`] naming the first validator
    /// (index, name and directory) whose `slhdsa_parameter_set` is not this genesis's
    /// `magnetar_parameter_set`. The epoch and the set are checked with the rest of the genesis
    /// ([`GenesisFile::check`]).
    pub fn add_change_from_key_dirs(
        &mut self,
        epoch: u64,
        key_dirs: &[PathBuf],
        stake: u64,
    ) -> Result<(), ConfigError> {
        let keys = load_publics(key_dirs)?;
        if let Some((i, k, dir)) = other_set(&keys, key_dirs, self.magnetar_parameter_set) {
            return Err(ConfigError::Invalid(format!(
                "validator change at epoch {epoch}: validator {i} ({}, {}): slhdsa_parameter_set \
                 is {:?} but the genesis magnetar_parameter_set is {:?}; every validator of a \
                 chain has a Magnetar key of the same set",
                k.name,
                dir.display(),
                magnetar_set_name(k.slhdsa_parameter_set),
                magnetar_set_name(self.magnetar_parameter_set),
            )));
        }
        let validators =
            GenesisFile::from_public_keys(self.chain_id, self.genesis_time_us, &keys, stake)
                .validators;
        self.validator_changes.push(ValidatorChange {
            epoch,
            validators,
            ..ValidatorChange::default()
        });
        Ok(())
    }

    /// Builds a genesis from public key files with equal `stake`. Its Magnetar parameter set is
    /// validator 0's (the default when `keys` is empty); the others are not compared:
    /// [`GenesisFile::from_key_dirs`] refuses files of different sets, and a validator whose key
    /// is of another set than its genesis is refused when it starts.
    pub fn from_public_keys(
        chain_id: u64,
        genesis_time_us: u64,
        keys: &[PublicKeyFile],
        stake: u64,
    ) -> GenesisFile {
        GenesisFile {
            chain_id,
            genesis_time_us,
            validators: keys
                .iter()
                .map(|k| GenesisValidator {
                    name: k.name.clone(),
                    bls_public_key: k.bls_public_key.clone(),
                    proof_of_possession: k.proof_of_possession.clone(),
                    mldsa_public_key: k.mldsa_public_key.clone(),
                    slhdsa_public_key: k.slhdsa_public_key.clone(),
                    tls_certificate: k.tls_certificate.clone(),
                    stake,
                })
                .collect(),
            profile: default_profile(),
            bundle_size: DEFAULT_BUNDLE_SIZE,
            epoch_length: DEFAULT_EPOCH_LENGTH,
            corona_group_key: None,
            pulsar_group_key: None,
            pulsar_committee: None,
            rollup_verifying_key: None,
            magnetar_parameter_set: keys
                .first()
                .map_or_else(ParameterSet::default, |k| k.slhdsa_parameter_set),
            validator_changes: Vec::new(),
        }
    }

    /// Checks every key and proof of possession and computes the genesis hash:
    /// `tagged_hash("QUASAR-GENESIS-v1", [chain_id, genesis_time_us, profile name, bundle_size,
    /// epoch_length, the Corona and Pulsar keys, the Pulsar committee, the rollup key (each
    /// empty when absent), the FIPS 205 name of the Magnetar parameter set (e.g.
    /// `SLH-DSA-SHAKE-192s`) only when it is not the default 192f, then per validator: BLS
    /// public key, ML-DSA-65 public key, SLH-DSA public key, TLS certificate, stake, then per
    /// validator change (only when there are any): its epoch (8 bytes LE), its number of
    /// validators (8 bytes LE), per validator the same five parts, then its Corona key, Pulsar
    /// key, Pulsar committee and rollup key, each empty when absent])`. Leaving the default
    /// set and an empty `validator_changes` out keeps the hash of every genesis what it was
    /// before either existed, and the encoding stays injective: `tagged_hash` length-prefixes
    /// every part, the set name (18 bytes) and every validator's first part (a 48-byte BLS key)
    /// differ in length from each other and from a change's 8-byte epoch, so the header, the
    /// genesis validators and each change (which says how many validators follow, and ends with
    /// its four key parts) split in one way only. Every SLH-DSA key is decoded under `magnetar_parameter_set`.
    ///
    /// Each change's set is checked exactly as the genesis set is. A change identical to the
    /// set before it is allowed (its epochs then bind the same validator-set root). A validator
    /// in several sets (the same BLS key) must carry the same name, ML-DSA-65 key, SLH-DSA key
    /// and TLS certificate in each, and two validators may not share any of them in any sets.
    ///
    /// Errors: [`ConfigError::Invalid`] for an unknown profile, a bundle size outside
    /// 1..=1024, an epoch length that is not a multiple of the bundle size; naming the validator
    /// (after `validator change at epoch E: ` for a change's: a repeated name, a bad BLS key or
    /// proof of possession, an ML-DSA-65 key that is not 1952 bytes or repeats another
    /// validator's, an SLH-DSA key that is not 48 bytes or repeats another validator's, a bad or
    /// repeated TLS certificate, an identity that differs from its earlier appearance or is
    /// another validator's) or the validator set (empty, zero stake, repeated BLS key); naming a
    /// set's key field (the genesis's or a change's: bad hex, a key that does not decode or is
    /// all zeros, a bad `pulsar_committee`, a rollup verifying key with the wrong number of
    /// inputs); for `validator_changes` with `epoch_length` 0, at epoch 0, out of increasing
    /// epoch order or past the last epoch.
    pub fn check(self) -> Result<Genesis, ConfigError> {
        self.check_with(&PublicKeyCache::new())
    }

    /// [`GenesisFile::check`], decoding the BLS keys through `cache` (a hit skips the
    /// decompression and subgroup check; a miss decodes and inserts). A validator process keeps
    /// one cache for its lifetime, exported in `/metrics`.
    pub fn check_with(self, cache: &PublicKeyCache) -> Result<Genesis, ConfigError> {
        let profile: Profile = self.profile.parse().map_err(|e: ProfileParseError| {
            ConfigError::Invalid(format!("genesis profile: {e}"))
        })?;
        if !(1..=quasar_wire::MAX_BUNDLE as u64).contains(&self.bundle_size) {
            return Err(ConfigError::Invalid(format!(
                "genesis bundle_size {} is outside 1..={}",
                self.bundle_size,
                quasar_wire::MAX_BUNDLE
            )));
        }
        check_epoch_length(self.epoch_length, self.bundle_size, profile)
            .map_err(|e| ConfigError::Invalid(format!("genesis {e}")))?;
        if let Some(first) = self.validator_changes.first() {
            let refuse = |why: String| {
                Err(ConfigError::Invalid(format!(
                    "genesis validator_changes: {why}"
                )))
            };
            if self.epoch_length == 0 {
                return refuse(
                    "epoch_length 0 runs one endless epoch, whose validator set never changes"
                        .into(),
                );
            }
            if first.epoch == 0 {
                return refuse(
                    "a change at epoch 0: epoch 0's set is the genesis validators".into(),
                );
            }
        }
        let mut parts: Vec<Vec<u8>> = vec![
            self.chain_id.to_le_bytes().to_vec(),
            self.genesis_time_us.to_le_bytes().to_vec(),
            profile.name().into_bytes(),
            self.bundle_size.to_le_bytes().to_vec(),
            self.epoch_length.to_le_bytes().to_vec(),
        ];
        let genesis_fields = KeyFields {
            corona_group_key: &self.corona_group_key,
            pulsar_group_key: &self.pulsar_group_key,
            pulsar_committee: &self.pulsar_committee,
            rollup_verifying_key: &self.rollup_verifying_key,
        };
        let genesis_keys = genesis_fields.decode("genesis ", self.validators.len(), &mut parts)?;
        if self.magnetar_parameter_set != ParameterSet::default() {
            parts.push(self.magnetar_parameter_set.name().as_bytes().to_vec());
        }
        let genesis_set = check_set(
            0,
            &self.validators,
            self.magnetar_parameter_set,
            cache,
            &mut parts,
        )?;
        let mut changes = Vec::with_capacity(self.validator_changes.len());
        let mut change_keys = Vec::with_capacity(self.validator_changes.len());
        for change in &self.validator_changes {
            parts.push(change.epoch.to_le_bytes().to_vec());
            parts.push((change.validators.len() as u64).to_le_bytes().to_vec());
            changes.push(check_set(
                change.epoch,
                &change.validators,
                self.magnetar_parameter_set,
                cache,
                &mut parts,
            )?);
            let label = format!("genesis {}", set_label(change.epoch));
            change_keys.push(change.key_fields().decode(
                &label,
                change.validators.len(),
                &mut parts,
            )?);
        }
        let schedule = EpochSchedule::new(self.epoch_length);
        let members = |set: &CheckedSet| EpochMembers {
            validators: Arc::new(set.validators.clone()),
            domain: epoch_domain(set.validator_set_root, profile),
        };
        let mut epoch_sets = EpochSets::fixed(members(&genesis_set));
        for set in &changes {
            epoch_sets
                .change_at(&schedule, set.first_epoch, members(set))
                .map_err(|e| ConfigError::Invalid(format!("genesis validator_changes: {e}")))?;
        }
        let sets: Vec<(&[GenesisValidator], &CheckedSet)> =
            std::iter::once((self.validators.as_slice(), &genesis_set))
                .chain(
                    self.validator_changes
                        .iter()
                        .map(|c| c.validators.as_slice())
                        .zip(&changes),
                )
                .collect();
        let roster = check_identities(&sets)?;
        let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        let hash = tagged_hash("QUASAR-GENESIS-v1", &refs);
        let keys = genesis_keys.parse("genesis ", &self.validators, &genesis_set)?;
        for ((set, raw), change) in changes
            .iter_mut()
            .zip(change_keys)
            .zip(&self.validator_changes)
        {
            let label = format!("genesis {}", set_label(change.epoch));
            set.keys = raw.parse(&label, &change.validators, set)?;
        }
        Ok(Genesis {
            file: self,
            hash,
            validators: genesis_set.validators,
            tls_certificates: genesis_set.tls_certificates,
            mldsa_public_keys: genesis_set.mldsa_public_keys,
            slhdsa_public_keys: genesis_set.slhdsa_public_keys,
            profile,
            validator_set_root: genesis_set.validator_set_root,
            keys,
            changes,
            epoch_sets,
            roster,
        })
    }

    /// Reads `genesis.json`.
    pub fn load(path: &Path) -> Result<GenesisFile, ConfigError> {
        parse_json(path)
    }

    /// Parses genesis JSON text (not yet checked: call [`GenesisFile::check`]).
    pub fn from_json(text: &str) -> Result<GenesisFile, ConfigError> {
        serde_json::from_str(text).map_err(|e| ConfigError::Parse {
            path: PathBuf::from("genesis.json"),
            message: e.to_string(),
        })
    }

    /// Writes `genesis.json`.
    pub fn save(&self, path: &Path) -> Result<(), ConfigError> {
        std::fs::write(path, to_json(self)?).map_err(io_err(path))
    }
}

/// A peer in `node.toml`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PeerConfig {
    /// The peer's BLS public key (hex), which names it in genesis.
    pub bls_public_key: String,
    /// Where its QUIC endpoint listens: `ip:port`, `[ipv6]:port` or `host:port` (a DNS name,
    /// e.g. a Kubernetes Service), checked for syntax when `node.toml` is read and resolved again
    /// at every dial ([`PeerAddress`]).
    pub address: PeerAddress,
}

/// Who signs a validator's votes and proposals (`signer` in `node.toml`).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SignerMode {
    /// The node, with its key directory's BLS key (the default).
    #[default]
    Local,
    /// The validator's thresholdd, through `validator.sign_vote` (`[remote_signer]`).
    Remote,
}

impl SignerMode {
    fn is_local(&self) -> bool {
        *self == SignerMode::Local
    }
}

/// `[remote_signer]` in `node.toml`: the thresholdd that signs with `signer = "remote"`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RemoteSignerConfig {
    /// The daemon's URL, `http://host:port` (a host name or IP address; port 80 when left out;
    /// no path; plain HTTP: keep it on loopback or a private network, as the daemon's README
    /// section says).
    pub url: String,
    /// A file holding the daemon's bearer token (surrounding whitespace is dropped; printable
    /// ASCII only); keep it mode 0600.
    pub token_file: PathBuf,
    /// The limit on one signing call, milliseconds (default 2000; at most an hour).
    #[serde(default = "default_remote_timeout_ms")]
    pub timeout_ms: u64,
}

fn default_remote_timeout_ms() -> u64 {
    2_000
}

impl RemoteSignerConfig {
    /// The daemon's address with the token read from `token_file` (bounded). Errors:
    /// [`ConfigError::Invalid`] for a URL that is not `http://host[:port]`, a token file that
    /// cannot be read, an empty token or one an HTTP header cannot carry.
    pub fn target(&self) -> Result<crate::remote_signer::RemoteSignerTarget, ConfigError> {
        let url = reqwest::Url::parse(&self.url)
            .map_err(|e| ConfigError::Invalid(format!("remote_signer.url: {e}")))?;
        if url.scheme() != "http" || url.host().is_none() {
            return Err(ConfigError::Invalid(format!(
                "remote_signer.url must be http://host:port (thresholdd serves plain HTTP), got \
                 {}",
                self.url
            )));
        }
        if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
            return Err(ConfigError::Invalid(format!(
                "remote_signer.url is the daemon's address only (http://host:port, no path or \
                 query), got {}",
                self.url
            )));
        }
        let token = read_token_file(&self.token_file)
            .map_err(|e| ConfigError::Invalid(format!("remote_signer.token_file: {e}")))?;
        Ok(crate::remote_signer::RemoteSignerTarget {
            url,
            token,
            timeout: std::time::Duration::from_millis(self.timeout_ms),
        })
    }
}

/// Longest thresholdd bearer token accepted, in characters.
pub const MAX_TOKEN_CHARS: usize = 4096;

/// Reads a thresholdd bearer token from `path` (at most 64 MiB read) with [`parse_token`]. The
/// node's `remote_signer.token_file` and thresholdd's `--token-file` read the same file this
/// way. Errors: [`ConfigError::Io`] for a file that cannot be read, then as [`parse_token`].
pub fn read_token_file(path: &Path) -> Result<String, ConfigError> {
    parse_token(&read_bounded(path)?, &path.display().to_string())
}

/// A thresholdd bearer token from `text` (named `source` in errors): the text with surrounding
/// whitespace dropped, so a trailing newline never becomes part of it. Errors:
/// [`ConfigError::Invalid`] for no token (empty or only whitespace), one over
/// [`MAX_TOKEN_CHARS`], or one an HTTP header cannot carry (anything but printable ASCII
/// without spaces; RFC 9110 §5.5 field values).
pub fn parse_token(text: &str, source: &str) -> Result<String, ConfigError> {
    let token = text.trim();
    if token.is_empty() {
        return Err(ConfigError::Invalid(format!(
            "{source}: no token (empty or only whitespace)"
        )));
    }
    if token.len() > MAX_TOKEN_CHARS {
        return Err(ConfigError::Invalid(format!(
            "{source}: the token is longer than {MAX_TOKEN_CHARS} characters"
        )));
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ConfigError::Invalid(format!(
            "{source}: the token may hold only printable ASCII without spaces (it travels in an \
             HTTP header)"
        )));
    }
    Ok(token.to_string())
}

/// `node.toml`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    /// Directory for the block store and the signing guard.
    pub data_dir: PathBuf,
    /// Key directory written by `keygen`.
    pub key_dir: PathBuf,
    /// File holding the passphrase of the sealed secret key file (a trailing newline is
    /// dropped; at most 64 KiB). Unset: the `QUASAR_KEY_PASSPHRASE` environment variable, if
    /// set ([`crate::key_file`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_passphrase_file: Option<PathBuf>,
    /// Accept a plaintext secret key file (default false: a plaintext file is refused, with
    /// a message naming `quasar-node keys seal`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub plaintext_keys: bool,
    /// Path of `genesis.json`.
    pub genesis: PathBuf,
    /// QUIC listen address for validator traffic.
    pub p2p_listen: SocketAddr,
    /// HTTP admin API listen address.
    pub api_listen: SocketAddr,
    /// When set, `GET /metrics` is served here alone (nothing else) and no longer on
    /// `api_listen`, so that Prometheus's network need not reach the admin API. Must differ
    /// from `api_listen`. Default: unset, `/metrics` on `api_listen`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics_listen: Option<SocketAddr>,
    /// The admin API's bounds on slow clients and its `POST /tx` rate limit (`[api]`; every
    /// key optional, see [`ApiConfig`]).
    #[serde(default, skip_serializing_if = "ApiConfig::is_default")]
    pub api: ApiConfig,
    /// Minimum time between blocks, milliseconds.
    #[serde(default = "default_block_time_ms")]
    pub block_time_ms: u64,
    /// View timeout, milliseconds (default: 2 × block time + 1000).
    #[serde(default)]
    pub view_timeout_ms: Option<u64>,
    /// Most pending transactions in the mempool.
    #[serde(default = "default_mempool_max_txs")]
    pub mempool_max_txs: usize,
    /// Most transactions in one block.
    #[serde(default = "default_max_block_txs")]
    pub max_block_txs: usize,
    /// The other validators.
    #[serde(default)]
    pub peers: Vec<PeerConfig>,
    /// The Groth16 rollup proving key (`rollup.pk` of `quasar-node rollup-setup`, for the
    /// genesis's validator set), when this validator proves the rollup leg. Proving needs
    /// minutes of every core and gigabytes of memory per proof, so a few validators are
    /// enough: the first proof of a bundle serves every node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollup_proving_key: Option<PathBuf>,
    /// Keep the whole history: never prune blocks, certificates, QuasarCerts or evidence past
    /// the last 6 epochs (an archive node, e.g. for an explorer; `testnet` runs its validators
    /// so, as its report reads every block of the run). Default false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub archive: bool,
    /// Who signs votes and proposals: `"local"` (default) or `"remote"`, the thresholdd of
    /// `remote_signer`, which must hold this validator's BLS key (`thresholdd keys
    /// import-validator`).
    #[serde(default, skip_serializing_if = "SignerMode::is_local")]
    pub signer: SignerMode,
    /// The thresholdd for `signer = "remote"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_signer: Option<RemoteSignerConfig>,
}

/// `[api]` in `node.toml`: how long an admin API client may take to send a request, and how
/// many transactions one client IP address may submit. Every key is optional.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct ApiConfig {
    /// How long a connection may take to send a complete request head, milliseconds, counted
    /// from when it starts waiting for one (so also the longest an idle keep-alive connection
    /// stays open); past it the connection is closed. Default 10 000.
    pub header_read_timeout_ms: u64,
    /// How long a request may take to send its whole body, milliseconds from the end of its
    /// head; past it the answer is `408` and the connection is closed. Default 30 000.
    pub body_read_timeout_ms: u64,
    /// `POST /tx` requests one client IP address may make per second, sustained. Default 50.
    pub tx_per_second: u32,
    /// `POST /tx` requests one client IP address may make at once before the rate applies;
    /// beyond it the answer is `429` with `Retry-After`. Default 100.
    pub tx_burst: u32,
}

impl Default for ApiConfig {
    fn default() -> ApiConfig {
        ApiConfig {
            header_read_timeout_ms: 10_000,
            body_read_timeout_ms: 30_000,
            tx_per_second: 50,
            tx_burst: 100,
        }
    }
}

impl ApiConfig {
    /// Whether every key has its default (then `node.toml` leaves `[api]` out).
    pub fn is_default(&self) -> bool {
        *self == ApiConfig::default()
    }

    /// Errors: a timeout outside 1..=3 600 000 ms, or a zero rate or burst.
    fn check(&self) -> Result<(), ConfigError> {
        for (name, value) in [
            ("header_read_timeout_ms", self.header_read_timeout_ms),
            ("body_read_timeout_ms", self.body_read_timeout_ms),
        ] {
            if !(1..=MAX_TIME_MS).contains(&value) {
                return Err(ConfigError::Invalid(format!(
                    "api.{name} must be in 1..={MAX_TIME_MS}"
                )));
            }
        }
        if self.tx_per_second == 0 || self.tx_burst == 0 {
            return Err(ConfigError::Invalid(
                "api.tx_per_second and api.tx_burst must be positive".into(),
            ));
        }
        Ok(())
    }
}

/// Whether two TCP listen addresses would take the same socket: one port (not 0, which asks the
/// OS for a fresh one) and one address, or an unspecified address (`0.0.0.0`, `::`) that
/// covers the other.
fn same_socket(a: SocketAddr, b: SocketAddr) -> bool {
    a.port() == b.port()
        && a.port() != 0
        && (a.ip() == b.ip() || a.ip().is_unspecified() || b.ip().is_unspecified())
}

/// Upper bound for configured durations (one hour), so arithmetic in microseconds cannot overflow.
const MAX_TIME_MS: u64 = 3_600_000;

fn default_block_time_ms() -> u64 {
    500
}
fn default_mempool_max_txs() -> usize {
    100_000
}
fn default_max_block_txs() -> usize {
    10_000
}

impl NodeConfig {
    /// How to open this node's secret key file: the passphrase of `key_passphrase_file` (else
    /// `QUASAR_KEY_PASSPHRASE`, if set) and `plaintext_keys`. Errors: the passphrase file cannot
    /// be read or is empty.
    pub fn key_access(&self) -> Result<KeyAccess, ConfigError> {
        Ok(KeyAccess::from_sources(
            self.key_passphrase_file.as_deref(),
            self.plaintext_keys,
        )?)
    }

    /// Reads and parses `node.toml`; relative paths are resolved against the file's directory.
    pub fn load(path: &Path) -> Result<NodeConfig, ConfigError> {
        let text = read_bounded(path)?;
        let base = path.parent().unwrap_or(Path::new("."));
        NodeConfig::from_toml(&text, base).map_err(|e| match e {
            ConfigError::Parse { message, .. } => ConfigError::Parse {
                path: path.to_path_buf(),
                message,
            },
            other => other,
        })
    }

    /// Parses `node.toml` text; relative paths are resolved against `base`.
    pub fn from_toml(text: &str, base: &Path) -> Result<NodeConfig, ConfigError> {
        let mut cfg: NodeConfig = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: PathBuf::from("node.toml"),
            message: e.to_string(),
        })?;
        let paths = [&mut cfg.data_dir, &mut cfg.key_dir, &mut cfg.genesis]
            .into_iter()
            .chain(cfg.rollup_proving_key.as_mut())
            .chain(cfg.key_passphrase_file.as_mut())
            .chain(cfg.remote_signer.as_mut().map(|r| &mut r.token_file));
        for p in paths {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        }
        if !(1..=MAX_TIME_MS).contains(&cfg.block_time_ms) {
            return Err(ConfigError::Invalid(format!(
                "block_time_ms must be in 1..={MAX_TIME_MS}"
            )));
        }
        let timeout = cfg.view_timeout_ms();
        if timeout <= cfg.block_time_ms || timeout > MAX_TIME_MS {
            return Err(ConfigError::Invalid(format!(
                "view_timeout_ms must be above block_time_ms and at most {MAX_TIME_MS}"
            )));
        }
        if let Some(metrics) = cfg
            .metrics_listen
            .filter(|m| same_socket(*m, cfg.api_listen))
        {
            return Err(ConfigError::Invalid(format!(
                "metrics_listen ({metrics}) is api_listen ({}): give the metrics listener a port \
                 of its own, or remove metrics_listen to serve /metrics on api_listen",
                cfg.api_listen
            )));
        }
        cfg.api.check()?;
        if cfg.mempool_max_txs == 0 || cfg.max_block_txs == 0 {
            return Err(ConfigError::Invalid(
                "mempool_max_txs and max_block_txs must be positive".into(),
            ));
        }
        match (cfg.signer, &cfg.remote_signer) {
            (SignerMode::Remote, None) => {
                return Err(ConfigError::Invalid(
                    "signer = \"remote\" needs a [remote_signer] table (url, token_file)".into(),
                ))
            }
            (SignerMode::Local, Some(_)) => {
                return Err(ConfigError::Invalid(
                    "[remote_signer] is set but signer is \"local\": set signer = \"remote\" \
                     (a top-level key: above the first [[peers]] or other table) or remove the \
                     table"
                        .into(),
                ))
            }
            (_, Some(remote)) if !(1..=MAX_TIME_MS).contains(&remote.timeout_ms) => {
                return Err(ConfigError::Invalid(format!(
                    "remote_signer.timeout_ms must be in 1..={MAX_TIME_MS}"
                )))
            }
            _ => {}
        }
        Ok(cfg)
    }

    /// Writes `node.toml`.
    pub fn save(&self, path: &Path) -> Result<(), ConfigError> {
        let text = toml::to_string_pretty(self).map_err(|e| ConfigError::Invalid(e.to_string()))?;
        std::fs::write(path, text).map_err(io_err(path))
    }

    /// The view timeout in milliseconds.
    pub fn view_timeout_ms(&self) -> u64 {
        self.view_timeout_ms
            .unwrap_or(self.block_time_ms.saturating_mul(2).saturating_add(1000))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sealed key files under one passphrase, with Argon2id at its minimum cost.
    fn test_access() -> KeyAccess {
        KeyAccess::sealed(b"test passphrase").with_kdf(crate::sealing::KdfParams::for_tests())
    }

    /// [`test_access`] for each of `n` key directories.
    fn test_accesses(n: usize) -> Vec<KeyAccess> {
        vec![test_access(); n]
    }

    /// `n` fresh key directories `v0`, `v1`, … and their public files.
    fn key_files(n: usize) -> (tempfile::TempDir, Vec<PublicKeyFile>) {
        let dir = tempfile::tempdir().unwrap();
        let keys: Vec<PublicKeyFile> = (0..n)
            .map(|i| {
                let dir = dir.path().join(format!("v{i}"));
                keygen_with_set(
                    &dir,
                    &format!("v{i}"),
                    ParameterSet::default(),
                    &test_access(),
                )
                .unwrap()
            })
            .collect();
        (dir, keys)
    }

    /// Two fresh key directories and the genesis built from their public files.
    fn two_validators() -> (tempfile::TempDir, Vec<PublicKeyFile>, GenesisFile) {
        let (dir, keys) = key_files(2);
        let genesis = GenesisFile::from_public_keys(7, 1_000, &keys, 10);
        (dir, keys, genesis)
    }

    /// A `fast` genesis of five key files' validators `v0`–`v4`, epochs of 10 blocks: `v0 v1
    /// v2` from epoch 0, `v1 v2 v3` from epoch 2, `v3 v0 v4` (v3 with stake 30) from epoch 5.
    fn changing_genesis() -> (tempfile::TempDir, Vec<GenesisValidator>, GenesisFile) {
        let (dir, keys) = key_files(5);
        let pool = GenesisFile::from_public_keys(7, 1_000, &keys, 10).validators;
        let pick = |indices: &[usize]| -> Vec<GenesisValidator> {
            indices.iter().map(|&i| pool[i].clone()).collect()
        };
        let mut last = pick(&[3, 0, 4]);
        last[0].stake = 30;
        let genesis = GenesisFile {
            validators: pick(&[0, 1, 2]),
            profile: "fast".into(),
            bundle_size: 1,
            epoch_length: 10,
            validator_changes: vec![
                ValidatorChange {
                    epoch: 2,
                    validators: pick(&[1, 2, 3]),
                    ..ValidatorChange::default()
                },
                ValidatorChange {
                    epoch: 5,
                    validators: last,
                    ..ValidatorChange::default()
                },
            ],
            ..GenesisFile::from_public_keys(7, 1_000, &keys, 10)
        };
        (dir, pool, genesis)
    }

    fn invalid_message(result: Result<Genesis, ConfigError>) -> String {
        match result {
            Err(ConfigError::Invalid(message)) => message,
            other => panic!("expected ConfigError::Invalid, got {other:?}"),
        }
    }

    #[test]
    fn keygen_writes_mldsa_65_and_slhdsa_keys_that_load_keys_reads_back() {
        let (dir, keys, _) = two_validators();
        let v0 = dir.path().join("v0");
        let loaded = load_keys(&v0, &test_access()).unwrap();
        assert_eq!(loaded.public, keys[0]);
        assert_eq!(
            hex::encode(loaded.mldsa.public_key().as_bytes()),
            keys[0].mldsa_public_key
        );
        assert_eq!(keys[0].mldsa_public_key.len(), 2 * 1952);
        assert_ne!(keys[0].mldsa_public_key, keys[1].mldsa_public_key);
        assert_eq!(
            hex::encode(loaded.slhdsa.public_key().as_bytes()),
            keys[0].slhdsa_public_key
        );
        assert_eq!(
            loaded.slhdsa.public_key().parameter_set(),
            ParameterSet::Shake192f
        );
        assert_eq!(keys[0].slhdsa_public_key.len(), 2 * 48);
        assert_ne!(keys[0].slhdsa_public_key, keys[1].slhdsa_public_key);
        let (secret, sealed) = read_secret(&v0.join(SECRET_KEY_FILE), &test_access()).unwrap();
        assert!(sealed, "keygen seals the secret file under the passphrase");
        assert_eq!(secret.mldsa_seed.len(), 2 * 32);
        assert_eq!(secret.slhdsa_seed.len(), 2 * 32);
        assert_ne!(secret.slhdsa_seed, secret.mldsa_seed, "independent seeds");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(v0.join(SECRET_KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn a_wrong_passphrase_is_an_error_naming_the_key_file() {
        let (dir, _, _) = two_validators();
        let v0 = dir.path().join("v0");
        let wrong = KeyAccess::sealed(b"not the passphrase");
        let message = load_keys(&v0, &wrong).err().expect("refused").to_string();
        assert!(message.contains("wrong passphrase"), "{message}");
        assert!(message.contains(SECRET_KEY_FILE), "{message}");
        // A sealed file without any passphrase says where to give one.
        let message = load_keys(&v0, &KeyAccess::plaintext())
            .err()
            .expect("refused")
            .to_string();
        assert!(message.contains("QUASAR_KEY_PASSPHRASE"), "{message}");
    }

    #[test]
    fn a_tampered_sealed_key_file_is_refused() {
        let (dir, _, _) = two_validators();
        let path = dir.path().join("v0").join(SECRET_KEY_FILE);
        let mut file: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let text = file["ciphertextHex"].as_str().unwrap().to_string();
        let flipped = if text.starts_with('0') { "1" } else { "0" };
        file["ciphertextHex"] = format!("{flipped}{}", &text[1..]).into();
        std::fs::write(&path, file.to_string()).unwrap();
        let message = load_keys(&dir.path().join("v0"), &test_access())
            .err()
            .expect("refused")
            .to_string();
        assert!(message.contains("or the file was modified"), "{message}");
    }

    #[test]
    fn plaintext_key_files_need_the_opt_in_and_keys_seal_encrypts_them() {
        let dir = tempfile::tempdir().unwrap();
        let v0 = dir.path().join("v0");
        let refused = keygen_with_set(&v0, "v0", ParameterSet::default(), &KeyAccess::default());
        assert!(matches!(
            refused,
            Err(ConfigError::KeyFile(KeyFileError::NoWriteMode))
        ));
        assert!(!v0.join(SECRET_KEY_FILE).exists(), "nothing written");
        keygen_with_set(&v0, "v0", ParameterSet::default(), &KeyAccess::plaintext()).unwrap();
        // Without the opt-in a plaintext file is refused with how to encrypt it.
        let message = load_keys(&v0, &test_access())
            .err()
            .expect("refused")
            .to_string();
        assert!(message.contains("quasar-node keys seal"), "{message}");
        assert!(message.contains("plaintext_keys = true"), "{message}");
        assert!(load_keys(&v0, &KeyAccess::plaintext()).is_ok());
        assert!(seal_key_dir(&v0, &test_access()).unwrap(), "sealed");
        assert!(
            !seal_key_dir(&v0, &test_access()).unwrap(),
            "already sealed"
        );
        assert!(load_keys(&v0, &test_access()).is_ok());
        assert!(load_keys(&v0, &KeyAccess::plaintext()).is_err());
    }

    #[test]
    fn load_keys_refuses_a_seed_that_does_not_match_the_public_file() {
        let (dir, keys, _) = two_validators();
        let v0 = dir.path().join("v0");
        let refused = |public: &PublicKeyFile| {
            std::fs::write(v0.join(PUBLIC_KEY_FILE), to_json(public).unwrap()).unwrap();
            let Err(ConfigError::Invalid(message)) = load_keys(&v0, &test_access()) else {
                panic!("a mismatched key must be refused");
            };
            message
        };
        let mut public = keys[0].clone();
        public.mldsa_public_key = keys[1].mldsa_public_key.clone();
        let message = refused(&public);
        assert!(
            message.contains("ML-DSA-65 seed does not match"),
            "{message}"
        );
        let mut public = keys[0].clone();
        public.slhdsa_public_key = keys[1].slhdsa_public_key.clone();
        let message = refused(&public);
        assert!(
            message.contains("SLH-DSA seed does not match slhdsa_public_key"),
            "{message}"
        );
    }

    #[test]
    fn genesis_check_decodes_every_mldsa_65_key_and_binds_it_into_the_hash() {
        let (_dir, keys, genesis) = two_validators();
        let checked = genesis.clone().check().unwrap();
        let decoded: Vec<String> = checked
            .mldsa_public_keys
            .iter()
            .map(|k| hex::encode(k.as_bytes()))
            .collect();
        let expected: Vec<String> = keys.iter().map(|k| k.mldsa_public_key.clone()).collect();
        assert_eq!(decoded, expected);

        // Another (valid) identity key gives another chain.
        let mut other = genesis.clone();
        other.validators[1].mldsa_public_key = hex::encode(
            mldsa::SecretKey::<MlDsa65>::from_seed(&[9; 32])
                .public_key()
                .as_bytes(),
        );
        assert_ne!(other.check().unwrap().hash, checked.hash);
    }

    #[test]
    fn genesis_check_decodes_every_slhdsa_key_and_binds_it_into_the_hash() {
        let (_dir, keys, genesis) = two_validators();
        let checked = genesis.clone().check().unwrap();
        let decoded: Vec<String> = checked
            .slhdsa_public_keys
            .iter()
            .map(|k| hex::encode(k.as_bytes()))
            .collect();
        let expected: Vec<String> = keys.iter().map(|k| k.slhdsa_public_key.clone()).collect();
        assert_eq!(decoded, expected);
        assert!(checked
            .slhdsa_public_keys
            .iter()
            .all(|k| k.parameter_set() == ParameterSet::Shake192f));

        // Another (valid) Magnetar key gives another chain.
        let mut other = genesis.clone();
        other.validators[1].slhdsa_public_key = hex::encode(
            magnetar::SecretKey::from_seed(ParameterSet::Shake192f, &[9; 32])
                .public_key()
                .as_bytes(),
        );
        assert_ne!(other.check().unwrap().hash, checked.hash);
    }

    /// Key files written before the Magnetar set was selectable have no `slhdsa_parameter_set`
    /// and must keep loading, as 192f; keygen leaves the default out, so a 192f file still has
    /// that shape. A file that names the other set than its seed was expanded under is refused.
    #[test]
    fn a_public_key_file_without_a_parameter_set_is_a_192f_key() {
        let (dir, keys, _) = two_validators();
        let v0 = dir.path().join("v0");
        let text = std::fs::read_to_string(v0.join(PUBLIC_KEY_FILE)).unwrap();
        assert!(!text.contains("slhdsa_parameter_set"), "{text}");
        assert_eq!(keys[0].slhdsa_parameter_set, ParameterSet::Shake192f);
        let loaded = load_keys(&v0, &test_access()).unwrap();
        assert_eq!(
            loaded.slhdsa.public_key().parameter_set(),
            ParameterSet::Shake192f
        );

        let with_set = |name: &str| {
            let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
            json["slhdsa_parameter_set"] = name.into();
            std::fs::write(v0.join(PUBLIC_KEY_FILE), json.to_string()).unwrap();
        };
        with_set("192f");
        assert_eq!(load_keys(&v0, &test_access()).unwrap().public, keys[0]);
        with_set("192s");
        let Err(ConfigError::Invalid(message)) = load_keys(&v0, &test_access()) else {
            panic!("a 192f seed under a file that says 192s must be refused");
        };
        assert!(
            message.contains("SLH-DSA seed does not match slhdsa_public_key")
                && message.contains("SLH-DSA-SHAKE-192s"),
            "{message}"
        );
    }

    #[test]
    fn an_unknown_magnetar_parameter_set_is_refused_naming_the_field() {
        for set in [ParameterSet::Shake192f, ParameterSet::Shake192s] {
            assert_eq!(parse_magnetar_set(magnetar_set_name(set)), Ok(set));
        }
        for name in ["192F", "SLH-DSA-SHAKE-192s", "256s", ""] {
            let error = parse_magnetar_set(name).unwrap_err();
            assert!(
                error.contains("\"192f\"") && error.contains("\"192s\""),
                "{error}"
            );
        }

        let (dir, _keys, genesis) = two_validators();
        let v0 = dir.path().join("v0");
        let mut json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(v0.join(PUBLIC_KEY_FILE)).unwrap())
                .unwrap();
        json["slhdsa_parameter_set"] = "shake-192s".into();
        std::fs::write(v0.join(PUBLIC_KEY_FILE), json.to_string()).unwrap();
        let Err(ConfigError::Parse { message, .. }) = load_public(&v0) else {
            panic!("an unknown slhdsa_parameter_set must be refused");
        };
        assert!(
            message.contains("slhdsa_parameter_set: \"shake-192s\" is not a Magnetar"),
            "{message}"
        );

        let mut json = serde_json::to_value(&genesis).unwrap();
        json["magnetar_parameter_set"] = "192x".into();
        let error = GenesisFile::from_json(&json.to_string())
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("magnetar_parameter_set: \"192x\" is not a Magnetar"),
            "{error}"
        );
    }

    /// The set is part of the chain: the keys are decoded under it, the hash binds it, the file
    /// names it (192s only), and the policy's Magnetar keys are of it.
    #[test]
    fn the_genesis_magnetar_set_decodes_the_keys_and_binds_into_the_hash() {
        let (_dir, _keys, genesis) = two_validators();
        let text = serde_json::to_string(&genesis).unwrap();
        assert!(!text.contains("magnetar_parameter_set"), "{text}");
        let f = genesis.clone().check().unwrap();
        assert_eq!(f.magnetar_set(), ParameterSet::Shake192f);

        let small = GenesisFile {
            magnetar_parameter_set: ParameterSet::Shake192s,
            profile: "fast".into(),
            bundle_size: 1,
            ..genesis.clone()
        };
        let text = serde_json::to_string(&small).unwrap();
        assert!(
            text.contains(r#""magnetar_parameter_set":"192s""#),
            "{text}"
        );
        assert_eq!(GenesisFile::from_json(&text).unwrap(), small);
        let s = small.clone().check().unwrap();
        assert_eq!(s.magnetar_set(), ParameterSet::Shake192s);
        assert!(s
            .slhdsa_public_keys
            .iter()
            .all(|k| k.parameter_set() == ParameterSet::Shake192s));
        let policy = s.cert_policy().unwrap();
        let keys = policy.keys().magnetar.as_ref().expect("Magnetar keys");
        assert_eq!(keys.parameter_set(), ParameterSet::Shake192s);
        let same_but_192f = GenesisFile {
            magnetar_parameter_set: ParameterSet::Shake192f,
            ..small
        };
        assert_ne!(s.hash, same_but_192f.check().unwrap().hash);
    }

    #[test]
    fn genesis_check_rejects_a_bad_slhdsa_key_with_a_clear_error() {
        let (_dir, _keys, genesis) = two_validators();
        let with_key = |hex_key: String| {
            let mut g = genesis.clone();
            g.validators[1].slhdsa_public_key = hex_key;
            invalid_message(g.check())
        };
        let good = genesis.validators[1].slhdsa_public_key.clone();

        let short = with_key(good[..good.len() - 2].to_string());
        assert!(
            short.contains("validator 1 (v1): SLH-DSA public key:")
                && short.contains("expected 48 bytes, got 47"),
            "{short}"
        );
        let long = with_key(format!("{good}00"));
        assert!(long.contains("expected 48 bytes, got 49"), "{long}");
        let empty = with_key(String::new());
        assert!(empty.contains("got 0"), "{empty}");
        let repeated = with_key(genesis.validators[0].slhdsa_public_key.clone());
        assert!(
            repeated.contains("validator 1 (v1): SLH-DSA public key repeats"),
            "{repeated}"
        );
    }

    #[test]
    fn genesis_epochs_hold_whole_bundles_and_bind_into_the_hash() {
        let (_dir, _keys, genesis) = two_validators();
        let checked = genesis.clone().check().unwrap();
        assert_eq!(checked.schedule().length(), Some(DEFAULT_EPOCH_LENGTH));
        let with = |epoch_length: u64, profile: &str| GenesisFile {
            epoch_length,
            profile: profile.into(),
            ..genesis.clone()
        };
        let error = with(40, "quasar").check().unwrap_err().to_string();
        assert!(
            error.contains("not a multiple of bundle_size 16"),
            "{error}"
        );
        let fast = with(40, "fast").check().unwrap();
        assert_eq!(fast.schedule().epoch_of(41), 1);
        let single = with(0, "quasar").check().unwrap();
        assert_eq!(single.schedule().length(), None);
        assert_ne!(with(32, "quasar").check().unwrap().hash, checked.hash);
    }

    #[test]
    fn above_four_validators_the_pulsar_key_goes_to_a_stake_sampled_committee() {
        let dir = tempfile::tempdir().unwrap();
        let dirs: Vec<PathBuf> = (0..8).map(|i| dir.path().join(format!("v{i}"))).collect();
        let keys: Vec<PublicKeyFile> = dirs
            .iter()
            .enumerate()
            .map(|(i, d)| {
                keygen_with_set(d, &format!("v{i}"), ParameterSet::default(), &test_access())
                    .unwrap()
            })
            .collect();
        let mut genesis = GenesisFile {
            profile: "aurora".into(),
            ..GenesisFile::from_public_keys(7, 1_000, &keys, 10)
        };
        let which = Dealt {
            corona: true,
            pulsar: true,
        };
        deal(
            &dirs,
            &mut genesis,
            which,
            Existing::Refuse,
            &test_accesses(dirs.len()),
            &mut rand::rngs::OsRng,
        )
        .unwrap();
        let committee = genesis.pulsar_committee.clone().expect("a committee");
        assert_eq!(committee.len(), PULSAR_COMMITTEE_SIZE);
        let checked = genesis.clone().check().unwrap();
        assert_eq!(checked.pulsar_committee(), committee);
        assert!(checked.cert_policy().is_ok());
        for (i, d) in dirs.iter().enumerate() {
            let loaded = load_keys(d, &test_access()).unwrap();
            let shares = loaded.dealt.get(&0).expect("genesis set shares");
            assert!(
                shares.corona.is_some(),
                "every validator holds a Corona share"
            );
            match committee.iter().position(|&m| m as usize == i) {
                Some(party) => {
                    let (group, share) =
                        shares.pulsar.as_ref().expect("members hold Pulsar shares");
                    assert_eq!(usize::from(share.party()), party);
                    assert_eq!((group.params().threshold, group.params().parties), (3, 4));
                }
                None => assert!(shares.pulsar.is_none(), "validator {i} is no member"),
            }
        }
        // The committee is part of the genesis; a bad one, or none, is refused.
        let with = |committee: Option<Vec<u32>>| GenesisFile {
            pulsar_committee: committee,
            ..genesis.clone()
        };
        // Another committee: the non-members and the first member.
        let mut other: Vec<u32> = (0..8)
            .filter(|i| !committee.contains(i))
            .chain([committee[0]])
            .collect();
        other.sort_unstable();
        assert_ne!(with(Some(other)).check().unwrap().hash, checked.hash);
        for (bad, why) in [
            (Some(vec![0, 1, 2, 3, 4, 5, 6]), "7 members"),
            (Some(vec![1, 0]), "increasing"),
            (Some(vec![1, 8]), "validator 8 does not exist"),
            (None, "no pulsar_committee"),
        ] {
            let error = invalid_message(with(bad).check());
            assert!(error.contains(why), "{error}");
        }
    }

    #[test]
    fn genesis_hex_errors_name_the_validator_and_field() {
        let (_dir, _keys, genesis) = two_validators();
        let mut bad = genesis.clone();
        bad.validators[1].mldsa_public_key = "zz".into();
        let message = invalid_message(bad.check());
        assert!(
            message.starts_with("validator 1 (v1): mldsa_public_key: not hex"),
            "{message}"
        );
        let mut bad = genesis.clone();
        bad.validators[0].slhdsa_public_key = "0x".into();
        let message = invalid_message(bad.check());
        assert!(
            message.starts_with("validator 0 (v0): slhdsa_public_key: not hex"),
            "{message}"
        );
        let mut bad = genesis.clone();
        bad.validators[0].tls_certificate = "abc".into();
        let message = invalid_message(bad.check());
        assert!(
            message.starts_with("validator 0 (v0): tls_certificate: not hex"),
            "{message}"
        );
    }

    #[test]
    fn genesis_check_rejects_a_bad_mldsa_65_key_with_a_clear_error() {
        let (_dir, _keys, genesis) = two_validators();
        let with_key = |hex_key: String| {
            let mut g = genesis.clone();
            g.validators[1].mldsa_public_key = hex_key;
            invalid_message(g.check())
        };
        let good = genesis.validators[1].mldsa_public_key.clone();

        let short = with_key(good[..good.len() - 2].to_string());
        assert!(
            short.contains("validator 1 (v1): ML-DSA-65 public key: invalid length")
                && short.contains("expected 1952 bytes, got 1951"),
            "{short}"
        );
        let long = with_key(format!("{good}00"));
        assert!(long.contains("expected 1952 bytes, got 1953"), "{long}");
        let empty = with_key(String::new());
        assert!(empty.contains("got 0"), "{empty}");
        let not_hex = with_key("zz".repeat(1952));
        assert!(
            not_hex.starts_with("validator 1 (v1): mldsa_public_key: not hex"),
            "{not_hex}"
        );
        let repeated = with_key(genesis.validators[0].mldsa_public_key.clone());
        assert!(
            repeated.contains("validator 1 (v1): ML-DSA-65 public key repeats"),
            "{repeated}"
        );
    }

    #[test]
    fn genesis_without_a_post_quantum_public_key_does_not_parse() {
        let (_dir, _keys, genesis) = two_validators();
        for field in ["mldsa_public_key", "slhdsa_public_key"] {
            let mut json: serde_json::Value = serde_json::to_value(&genesis).unwrap();
            json["validators"][0].as_object_mut().unwrap().remove(field);
            let err = GenesisFile::from_json(&json.to_string()).unwrap_err();
            assert!(err.to_string().contains(field), "{err}");
        }
    }

    #[test]
    fn node_toml_resolves_the_rollup_proving_key_against_its_directory() {
        let base = Path::new("/srv/quasar/v0");
        let text = "data_dir = \"data\"\nkey_dir = \".\"\ngenesis = \"/etc/genesis.json\"\n\
                    p2p_listen = \"127.0.0.1:9000\"\napi_listen = \"127.0.0.1:8000\"\n";
        let cfg = NodeConfig::from_toml(text, base).unwrap();
        assert_eq!(cfg.rollup_proving_key, None);
        assert_eq!(cfg.genesis, PathBuf::from("/etc/genesis.json"));
        let with_key = format!("{text}rollup_proving_key = \"rollup/rollup.pk\"\n");
        let cfg = NodeConfig::from_toml(&with_key, base).unwrap();
        assert_eq!(
            cfg.rollup_proving_key,
            Some(base.join("rollup").join("rollup.pk"))
        );
        assert_eq!(cfg.data_dir, base.join("data"));
        // Unset, the key is left out of a saved file; set, it survives the round trip.
        let saved = toml::to_string_pretty(&NodeConfig {
            rollup_proving_key: None,
            archive: false,
            ..cfg.clone()
        })
        .unwrap();
        assert!(!saved.contains("rollup_proving_key"), "{saved}");
        let again = NodeConfig::from_toml(&toml::to_string_pretty(&cfg).unwrap(), base).unwrap();
        assert_eq!(again, cfg);
    }

    /// Issue 29: `[[peers]] address` took only IP literals ("invalid socket address syntax" for
    /// a host name); it now takes `host:port` as well, checked for syntax at load.
    #[test]
    fn node_toml_peers_take_host_names_and_ip_literals() {
        let text = "data_dir = \"data\"\nkey_dir = \".\"\ngenesis = \"g.json\"\n\
                    p2p_listen = \"0.0.0.0:9000\"\napi_listen = \"127.0.0.1:8000\"\n";
        let with_peer = |address: &str| {
            NodeConfig::from_toml(
                &format!("{text}[[peers]]\nbls_public_key = \"ab\"\naddress = \"{address}\"\n"),
                Path::new("/srv"),
            )
        };
        for (address, expected) in [
            (
                "quasar-1.quasar.svc.cluster.local:9000",
                PeerAddress::Name {
                    host: "quasar-1.quasar.svc.cluster.local".into(),
                    port: 9000,
                },
            ),
            (
                "10.0.0.5:9000",
                PeerAddress::Ip("10.0.0.5:9000".parse().unwrap()),
            ),
            (
                "[fd00::5]:9000",
                PeerAddress::Ip("[fd00::5]:9000".parse().unwrap()),
            ),
        ] {
            let cfg = with_peer(address).unwrap();
            assert_eq!(cfg.peers[0].address, expected, "{address}");
            // The saved file spells the address as it was written.
            let saved = toml::to_string_pretty(&cfg).unwrap();
            assert!(
                saved.contains(&format!("address = \"{address}\"")),
                "{saved}"
            );
            assert_eq!(
                NodeConfig::from_toml(&saved, Path::new("/srv")).unwrap(),
                cfg
            );
        }
        for (address, why) in [
            ("quasar-1", "has no port"),
            ("quasar-1:99999", "the port must be a number in 1..=65535"),
            (":9000", "has no host"),
            ("http://quasar-1:9000", "without a scheme or path"),
            ("fd00::5:9000", "in brackets"),
            ("quasar 1:9000", "the host name may hold only"),
        ] {
            let err = with_peer(address).unwrap_err().to_string();
            assert!(
                err.contains(why) && err.contains(address),
                "{address}: {err}"
            );
        }
    }

    #[test]
    fn node_toml_metrics_listen_is_optional_and_must_differ_from_api_listen() {
        let text = "data_dir = \"data\"\nkey_dir = \".\"\ngenesis = \"g.json\"\n\
                    p2p_listen = \"127.0.0.1:9000\"\napi_listen = \"127.0.0.1:8000\"\n";
        let parse = |extra: &str| NodeConfig::from_toml(&format!("{text}{extra}"), Path::new("."));
        assert_eq!(parse("").unwrap().metrics_listen, None);
        let cfg = parse("metrics_listen = \"0.0.0.0:8001\"\n").unwrap();
        assert_eq!(cfg.metrics_listen, Some("0.0.0.0:8001".parse().unwrap()));
        for taken in ["127.0.0.1:8000", "0.0.0.0:8000"] {
            match parse(&format!("metrics_listen = \"{taken}\"\n")) {
                Err(ConfigError::Invalid(message)) => {
                    assert!(
                        message.contains("is api_listen (127.0.0.1:8000)"),
                        "{message}"
                    )
                }
                other => panic!("{taken}: {other:?}"),
            }
        }
        // The same port on another loopback address is another socket.
        assert!(parse("metrics_listen = \"127.0.0.2:8000\"\n").is_ok());
    }

    #[test]
    fn node_toml_api_limits_default_and_are_checked() {
        let text = "data_dir = \"data\"\nkey_dir = \".\"\ngenesis = \"g.json\"\n\
                    p2p_listen = \"127.0.0.1:9000\"\napi_listen = \"127.0.0.1:8000\"\n";
        let parse = |extra: &str| NodeConfig::from_toml(&format!("{text}{extra}"), Path::new("."));
        let cfg = parse("").unwrap();
        assert_eq!(cfg.api, ApiConfig::default());
        assert!(!toml::to_string_pretty(&cfg).unwrap().contains("[api]"));
        let cfg = parse("[api]\ntx_burst = 5\n").unwrap();
        assert_eq!(cfg.api.tx_burst, 5);
        assert_eq!(cfg.api.tx_per_second, ApiConfig::default().tx_per_second);
        for (extra, needle) in [
            ("[api]\ntx_per_second = 0\n", "must be positive"),
            (
                "[api]\nbody_read_timeout_ms = 0\n",
                "api.body_read_timeout_ms",
            ),
        ] {
            match parse(extra) {
                Err(ConfigError::Invalid(message)) => {
                    assert!(message.contains(needle), "{message}")
                }
                other => panic!("{extra}: {other:?}"),
            }
        }
        assert!(matches!(
            parse("[api]\ntx_rate = 5\n"),
            Err(ConfigError::Parse { .. })
        ));
    }

    #[test]
    fn node_toml_remote_signer_is_checked_and_reads_its_token_file() {
        let dir = tempfile::tempdir().unwrap();
        let text = "data_dir = \"data\"\nkey_dir = \".\"\ngenesis = \"g.json\"\n\
                    p2p_listen = \"127.0.0.1:9000\"\napi_listen = \"127.0.0.1:8000\"\n";
        let table = "[remote_signer]\nurl = \"http://127.0.0.1:7300\"\ntoken_file = \"token\"\n";
        let parse = |extra: &str| NodeConfig::from_toml(&format!("{text}{extra}"), dir.path());
        assert_eq!(parse("").unwrap().signer, SignerMode::Local);
        let invalid = |extra: &str, needle: &str| match parse(extra) {
            Err(ConfigError::Invalid(message)) => assert!(message.contains(needle), "{message}"),
            other => panic!("{extra}: {other:?}"),
        };
        invalid("signer = \"remote\"\n", "needs a [remote_signer] table");
        invalid(table, "signer is \"local\"");
        invalid(
            &format!("signer = \"remote\"\n{table}timeout_ms = 0\n"),
            "timeout_ms",
        );
        assert!(matches!(
            parse("signer = \"hsm\"\n"),
            Err(ConfigError::Parse { .. })
        ));

        let cfg = parse(&format!("signer = \"remote\"\n{table}")).unwrap();
        let remote = cfg.remote_signer.clone().unwrap();
        assert_eq!(remote.token_file, dir.path().join("token"));
        assert_eq!(remote.timeout_ms, 2_000);
        // The token file is read when the node starts: missing, empty, unfit for a header, then
        // good (surrounding whitespace dropped).
        let refused = |remote: &RemoteSignerConfig, needle: &str| match remote.target() {
            Err(ConfigError::Invalid(message)) => assert!(message.contains(needle), "{message}"),
            other => panic!("{needle}: {other:?}"),
        };
        refused(&remote, "remote_signer.token_file");
        std::fs::write(dir.path().join("token"), "\n").unwrap();
        refused(&remote, "no token (empty or only whitespace)");
        std::fs::write(dir.path().join("token"), "s3 cret\n").unwrap();
        refused(&remote, "printable ASCII");
        std::fs::write(dir.path().join("token"), "s3cret\n\n").unwrap();
        let target = remote.target().unwrap();
        assert_eq!(target.token, "s3cret");
        assert_eq!(target.url.as_str(), "http://127.0.0.1:7300/");
        for (url, needle) in [
            ("https://signer:7300", "http://"),
            ("http://:7300", "remote_signer.url"),
            ("http://127.0.0.1:7300/rpc", "no path"),
            ("http://127.0.0.1:7300/?a=1", "no path"),
        ] {
            let bad = RemoteSignerConfig {
                url: url.into(),
                ..remote.clone()
            };
            refused(&bad, needle);
        }
        // The saved file keeps the mode and the table.
        let again = NodeConfig::from_toml(&toml::to_string_pretty(&cfg).unwrap(), dir.path());
        assert_eq!(again.unwrap(), cfg);
    }

    #[test]
    fn validator_changes_give_each_epoch_its_set_and_the_roster_every_validator_once() {
        let (_dir, pool, file) = changing_genesis();
        let genesis = file.clone().check().unwrap();
        let bls = |i: usize| {
            quasar_crypto::bls::PublicKey::from_bytes(
                &hex::decode(&pool[i].bls_public_key).unwrap(),
            )
            .unwrap()
        };
        let sets = genesis.epoch_sets();
        assert_eq!(
            sets.changes().map(|(epoch, _)| epoch).collect::<Vec<_>>(),
            vec![0, 2, 5]
        );
        assert_eq!(sets.at(0).domain, genesis.domain());
        assert_eq!(sets.at(1), sets.at(0), "epoch 1 keeps the genesis set");
        assert_eq!(sets.at(2).index_of(&bls(3)), Some(2), "v3 joins at epoch 2");
        assert_eq!(
            sets.at(4).index_of(&bls(0)),
            None,
            "v0 is out in epochs 2 to 4"
        );
        assert_eq!(sets.at(5).index_of(&bls(3)), Some(0));
        assert_eq!(
            sets.at(99).index_of(&bls(0)),
            Some(1),
            "v0 is back from epoch 5"
        );
        assert_eq!(sets.at(5).validators.total_stake(), 50);
        let roots: Vec<Hash> = sets
            .changes()
            .map(|(_, m)| m.domain.validator_set_root)
            .collect();
        assert!(roots[0] != roots[1] && roots[1] != roots[2] && roots[0] != roots[2]);
        assert!(sets.changes().all(|(_, m)| m.domain.profile_id == "fast"));
        assert_eq!(roots[0], genesis.validator_set_root);
        let first_epochs: Vec<u64> = genesis.changes.iter().map(|c| c.first_epoch).collect();
        assert_eq!(first_epochs, vec![2, 5]);
        for (set, root) in genesis.changes.iter().zip(&roots[1..]) {
            assert_eq!(set.validator_set_root, *root);
        }

        // A changed set's root is the root the same validators would have as a genesis set.
        let as_genesis = GenesisFile {
            validators: file.validator_changes[0].validators.clone(),
            validator_changes: Vec::new(),
            ..file.clone()
        };
        assert_eq!(as_genesis.check().unwrap().validator_set_root, roots[1]);

        let names: Vec<&str> = genesis.roster().iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["v0", "v1", "v2", "v3", "v4"]);
        assert_eq!(genesis.roster()[3].stake, 10, "v3's first appearance");

        let policies = genesis.cert_policies();
        assert_eq!(
            policies.iter().map(|(epoch, _)| *epoch).collect::<Vec<_>>(),
            vec![0, 2, 5]
        );
        for ((epoch, policy), (_, members)) in policies.iter().zip(sets.changes()) {
            let policy = policy.as_ref().unwrap();
            assert_eq!(policy.epoch(), *epoch);
            assert_eq!(*policy.domain(), members.domain);
            assert_eq!(policy.keys().validators, *members.validators);
            let magnetar = policy.keys().magnetar.as_ref().expect("Magnetar keys");
            assert_eq!(magnetar.parameter_set(), ParameterSet::Shake192f);
        }
    }

    #[test]
    fn a_genesis_without_changes_has_its_own_set_for_every_epoch_and_roster() {
        let (_dir, keys, file) = two_validators();
        let genesis = file.check().unwrap();
        let sets = genesis.epoch_sets();
        assert_eq!(sets.changes().count(), 1);
        assert_eq!(sets.at(1_000).domain, genesis.domain());
        assert_eq!(*sets.at(0).validators, genesis.validators);
        let roster: Vec<&str> = genesis
            .roster()
            .iter()
            .map(|v| v.bls_public_key.as_str())
            .collect();
        let expected: Vec<&str> = keys.iter().map(|k| k.bls_public_key.as_str()).collect();
        assert_eq!(roster, expected);
        let policies = genesis.cert_policies();
        assert_eq!(policies.len(), 1);
        assert_eq!(policies[0].0, 0);
        assert_eq!(
            policies[0].1.as_ref().unwrap_err(),
            &genesis.cert_policy().unwrap_err(),
            "the default profile needs keys this genesis lacks"
        );
    }

    /// Under a profile with threshold or rollup legs, a changed set without its own keys is
    /// accepted, but its policy names the keys its change lacks (Quasar finality is then
    /// unavailable in its epochs, as in a genesis set without keys).
    #[test]
    fn a_changed_set_without_its_own_keys_has_no_policy_naming_the_missing_fields() {
        let (_dir, _pool, file) = changing_genesis();
        for (profile, fields) in [
            ("quasar", &["corona_group_key", "rollup_verifying_key"][..]),
            ("aurora", &["corona_group_key", "pulsar_group_key"][..]),
            ("polaris", &["corona_group_key", "pulsar_group_key"][..]),
            (
                "hybrid-1s",
                &["corona_group_key", "rollup_verifying_key"][..],
            ),
        ] {
            let genesis = GenesisFile {
                profile: profile.into(),
                bundle_size: 10,
                ..file.clone()
            }
            .check()
            .unwrap();
            let policies = genesis.cert_policies();
            assert_eq!(policies.len(), 3);
            for (epoch, policy) in &policies {
                let Err(error) = policy else {
                    panic!("{profile}: no keys, no policy")
                };
                let place = match epoch {
                    0 => "the genesis".to_string(),
                    e => format!("the validator change at epoch {e}"),
                };
                assert!(error.contains(&place), "{profile}: {error}");
                for field in fields {
                    assert!(error.contains(field), "{profile}: {error}");
                }
            }
        }
    }

    /// Each scheduled set gets its own Corona and Pulsar keys from the dealer: every set's
    /// policy then holds, and each validator's key file holds its shares of the sets it belongs
    /// to (by the set's first epoch, party index = its index in that set) and of no other.
    #[test]
    fn deal_gives_every_validator_set_its_own_threshold_keys() {
        let (dir, pool, file) = changing_genesis();
        let mut genesis = GenesisFile {
            profile: "aurora".into(),
            bundle_size: 10,
            ..file
        };
        let dirs: Vec<PathBuf> = (0..5).map(|i| dir.path().join(format!("v{i}"))).collect();
        let which = Dealt::for_profile(Profile::Aurora);
        let mut rng = rand::rngs::OsRng;
        deal(
            &dirs,
            &mut genesis,
            which,
            Existing::Refuse,
            &test_accesses(dirs.len()),
            &mut rng,
        )
        .unwrap();
        let checked = genesis.clone().check().unwrap();
        for (epoch, policy) in checked.cert_policies() {
            assert!(policy.is_ok(), "epoch {epoch}: {:?}", policy.err());
        }
        let mut corona_keys: Vec<&str> = std::iter::once(&genesis.corona_group_key)
            .chain(
                genesis
                    .validator_changes
                    .iter()
                    .map(|c| &c.corona_group_key),
            )
            .map(|k| k.as_deref().expect("every set has a Corona key"))
            .collect();
        corona_keys.dedup();
        assert_eq!(corona_keys.len(), 3, "each set has its own Corona key");
        let sets = checked.sets();
        for (v, key_dir) in dirs.iter().enumerate() {
            let keys = load_keys(key_dir, &test_access()).unwrap();
            let mine = &pool[v].bls_public_key;
            for (entries, set) in &sets {
                let shares = keys.dealt.get(&set.first_epoch);
                let Some(index) = entries.iter().position(|e| &e.bls_public_key == mine) else {
                    assert!(shares.is_none(), "v{v} holds shares of a set it is not in");
                    continue;
                };
                let shares = shares.expect("a member holds the set's shares");
                let corona = shares.corona.as_ref().expect("a Corona share");
                assert_eq!(usize::from(corona.index()), index);
                assert_eq!(Some(corona.group_key()), set.keys.corona.as_ref());
                let (group, share) = shares.pulsar.as_ref().expect("a Pulsar share");
                assert_eq!(usize::from(share.party()), index);
                assert_eq!(
                    Some(group.public_key_bytes()),
                    set.keys.pulsar.as_ref().map(|k| k.as_bytes())
                );
            }
        }
        // Dealing again is refused, unless the shares may be replaced (a test network).
        let error = deal(
            &dirs,
            &mut genesis,
            which,
            Existing::Refuse,
            &test_accesses(dirs.len()),
            &mut rng,
        )
        .expect_err("shares are there");
        assert!(
            error
                .to_string()
                .contains("already has threshold group keys (the sets from epochs [0, 2, 5])"),
            "{error}"
        );
        let before = genesis.validator_changes[0].corona_group_key.clone();
        deal(
            &dirs,
            &mut genesis,
            which,
            Existing::Replace,
            &test_accesses(dirs.len()),
            &mut rng,
        )
        .unwrap();
        assert_ne!(genesis.validator_changes[0].corona_group_key, before);
        genesis.clone().check().unwrap();
        // Key directories must come in roster order.
        let mut swapped = dirs.clone();
        swapped.swap(3, 4);
        let error = deal(
            &swapped,
            &mut genesis,
            which,
            Existing::Replace,
            &test_accesses(swapped.len()),
            &mut rng,
        )
        .expect_err("out of roster order");
        assert!(
            error.to_string().contains("does not hold validator 3"),
            "{error}"
        );
    }

    /// `set_shares` entries are changed sets' (epoch 0's shares are the top-level fields), by
    /// increasing epoch; a Pulsar committee needs its key.
    #[test]
    fn set_shares_and_committees_out_of_place_are_refused() {
        let file = |entries: &str| {
            SecretKeyFile::from_json(&format!(
                r#"{{"bls_secret_key":"","mldsa_seed":"","slhdsa_seed":"","tls_private_key":"",
                "set_shares":[{entries}]}}"#
            ))
            .unwrap()
        };
        let error = |entries: &str| file(entries).dealt().err().unwrap().to_string();
        assert!(error(r#"{"epoch":0}"#).contains("top-level fields"));
        assert!(error(r#"{"epoch":3},{"epoch":2}"#).contains("epoch 2 is not above 3"));
        assert!(error(r#"{"epoch":2,"pulsar_share":"00"}"#).contains("pulsar_group is missing"));
        assert!(file(r#"{"epoch":2},{"epoch":5}"#).dealt().unwrap().len() == 2);
        let (_dir, _pool, file) = changing_genesis();
        let mut genesis = GenesisFile {
            profile: "aurora".into(),
            bundle_size: 10,
            ..file
        };
        genesis.validator_changes[0].pulsar_committee = Some(vec![0, 1]);
        let error = invalid_message(genesis.check());
        assert!(
            error
                .contains("validator change at epoch 2: pulsar_committee without pulsar_group_key"),
            "{error}"
        );
    }

    #[test]
    fn epoch_lists_parse_or_name_what_is_wrong() {
        assert_eq!(
            parse_epoch_list::<usize>("2:1, 2,3"),
            Ok((2, vec![1, 2, 3]))
        );
        for (bad, says) in [
            ("2", "expected EPOCH:ITEM"),
            ("x:1", "epoch \"x\""),
            ("2:", "nothing after the epoch"),
            ("2:1,,3", "\"\""),
            ("2:1,a", "\"a\""),
            ("-1:1", "epoch \"-1\""),
        ] {
            let error = parse_epoch_list::<usize>(bad).unwrap_err();
            assert!(
                error.contains(says) && error.contains(bad),
                "{bad}: {error}"
            );
        }
    }

    #[test]
    fn validator_changes_need_epochs_and_increasing_epochs() {
        let (_dir, _pool, file) = changing_genesis();
        let with_epochs = |epoch_length: u64, epochs: [u64; 2]| {
            let mut g = GenesisFile {
                epoch_length,
                ..file.clone()
            };
            for (change, epoch) in g.validator_changes.iter_mut().zip(epochs) {
                change.epoch = epoch;
            }
            invalid_message(g.check())
        };
        let error = with_epochs(0, [2, 5]);
        assert!(
            error.contains("epoch_length 0 runs one endless epoch"),
            "{error}"
        );
        let error = with_epochs(10, [0, 5]);
        assert!(error.contains("a change at epoch 0"), "{error}");
        let error = with_epochs(10, [5, 2]);
        assert!(
            error.contains("change at epoch 2 does not come after the change at epoch 5"),
            "{error}"
        );
        let error = with_epochs(10, [5, 5]);
        assert!(error.contains("does not come after"), "{error}");
        let error = with_epochs(10, [2, u64::MAX]);
        assert!(error.contains("not an epoch of this chain"), "{error}");
    }

    #[test]
    fn a_changed_set_is_checked_as_the_genesis_set_is_and_errors_name_the_change() {
        let (_dir, pool, file) = changing_genesis();
        let changed = |edit: &dyn Fn(&mut Vec<GenesisValidator>)| {
            let mut g = file.clone();
            edit(&mut g.validator_changes[0].validators);
            invalid_message(g.check())
        };
        let error = changed(&|vs| {
            let key = &mut vs[1].mldsa_public_key;
            key.truncate(key.len() - 2);
        });
        assert!(
            error
                .starts_with("validator change at epoch 2: validator 1 (v2): ML-DSA-65 public key")
                && error.contains("expected 1952 bytes, got 1951"),
            "{error}"
        );
        let error = changed(&|vs| vs[2].proof_of_possession = pool[0].proof_of_possession.clone());
        assert!(
            error.starts_with(
                "validator change at epoch 2: validator 2 (v3): proof of possession does not verify"
            ),
            "{error}"
        );
        let error = changed(&|vs| vs[2].slhdsa_public_key = vs[0].slhdsa_public_key.clone());
        assert!(
            error.contains("validator 2 (v3): SLH-DSA public key repeats"),
            "{error}"
        );
        let error = changed(&|vs| vs[0].tls_certificate = "abc".into());
        assert!(
            error.starts_with(
                "validator change at epoch 2: validator 0 (v1): tls_certificate: not hex"
            ),
            "{error}"
        );
        let error = changed(&|vs| vs[0].stake = 0);
        assert!(
            error.starts_with("validator change at epoch 2: validator set:")
                && error.contains("zero stake"),
            "{error}"
        );
        let error = changed(&|vs| vs.clear());
        assert!(
            error.starts_with("validator change at epoch 2: validator set:"),
            "{error}"
        );
    }

    #[test]
    fn a_validator_keeps_its_identity_across_sets_and_shares_it_with_no_other() {
        let (_dir, pool, file) = changing_genesis();
        let changed = |edit: &dyn Fn(&mut GenesisValidator)| {
            let mut g = file.clone();
            // Validator 0 of the change at epoch 2 is v1, also validator 1 of the genesis set.
            edit(&mut g.validator_changes[0].validators[0]);
            invalid_message(g.check())
        };
        let another_mldsa = hex::encode(
            mldsa::SecretKey::<MlDsa65>::from_seed(&[9; 32])
                .public_key()
                .as_bytes(),
        );
        let another_slhdsa = hex::encode(
            magnetar::SecretKey::from_seed(ParameterSet::Shake192f, &[9; 32])
                .public_key()
                .as_bytes(),
        );
        for (edit, kind) in [
            (
                Box::new(|v: &mut GenesisValidator| v.mldsa_public_key = another_mldsa.clone())
                    as Box<dyn Fn(&mut GenesisValidator)>,
                "ML-DSA-65 public key",
            ),
            (
                Box::new(|v: &mut GenesisValidator| v.slhdsa_public_key = another_slhdsa.clone()),
                "SLH-DSA public key",
            ),
            (
                // v4's certificate: v4 is in no set before epoch 5.
                Box::new(|v: &mut GenesisValidator| {
                    v.tls_certificate = pool[4].tls_certificate.clone()
                }),
                "TLS certificate",
            ),
            (
                Box::new(|v: &mut GenesisValidator| v.name = "v1-renamed".into()),
                "name",
            ),
        ] {
            let error = changed(&*edit);
            assert_eq!(
                error,
                format!(
                    "validator change at epoch 2: validator 0 ({}): has the BLS public key of \
                     validator 1 (v1) of the genesis set but another {kind}; a validator keeps \
                     its name, ML-DSA-65 and SLH-DSA keys and TLS certificate in every set",
                    if kind == "name" { "v1-renamed" } else { "v1" }
                )
            );
        }

        // v3 is new at epoch 2 (validator 2 there); v0 is no member then, only of the genesis set.
        let newcomer = |edit: &dyn Fn(&mut GenesisValidator)| {
            let mut g = file.clone();
            edit(&mut g.validator_changes[0].validators[2]);
            invalid_message(g.check())
        };
        for (edit, kind) in [
            (
                Box::new(|v: &mut GenesisValidator| {
                    v.mldsa_public_key = pool[0].mldsa_public_key.clone()
                }) as Box<dyn Fn(&mut GenesisValidator)>,
                "ML-DSA-65 public key",
            ),
            (
                Box::new(|v: &mut GenesisValidator| {
                    v.slhdsa_public_key = pool[0].slhdsa_public_key.clone()
                }),
                "SLH-DSA public key",
            ),
            (
                Box::new(|v: &mut GenesisValidator| {
                    v.tls_certificate = pool[0].tls_certificate.clone()
                }),
                "TLS certificate",
            ),
        ] {
            let error = newcomer(&*edit);
            assert_eq!(
                error,
                format!(
                    "validator change at epoch 2: validator 2 (v3): {kind} is that of validator \
                     0 (v0) of the genesis set, another validator (another BLS public key)"
                )
            );
        }
        let error = newcomer(&|v| v.name = "v0".into());
        assert!(
            error.starts_with(
                "validator change at epoch 2: validator 2 (v0): name is that of validator 0 (v0)"
            ),
            "{error}"
        );

        // A newcomer of the last change against one of the first: with v3 gone at epoch 5, v4
        // takes v3's key.
        let mut g = file.clone();
        let last = &mut g.validator_changes[1].validators;
        last.remove(0);
        last[1].mldsa_public_key = pool[3].mldsa_public_key.clone();
        let error = invalid_message(g.check());
        assert_eq!(
            error,
            "validator change at epoch 5: validator 1 (v4): ML-DSA-65 public key is that of \
             validator 2 (v3) of the change at epoch 2, another validator (another BLS public key)"
        );
    }

    /// Regression guard: a genesis without changes must hash as before `validator_changes`
    /// existed (node/tests/magnetar_set.rs pins one such hash); a change is part of the chain.
    #[test]
    fn validator_changes_bind_into_the_hash_only_when_present() {
        let (_dir, _pool, file) = changing_genesis();
        let without = GenesisFile {
            validator_changes: Vec::new(),
            ..file.clone()
        };
        let text = serde_json::to_string(&without).unwrap();
        assert!(!text.contains("validator_changes"), "{text}");
        let plain = without.clone().check().unwrap();
        // The layout from before the field: 9 header parts, then 5 per genesis validator.
        let mut parts: Vec<Vec<u8>> = vec![
            7u64.to_le_bytes().to_vec(),
            1_000u64.to_le_bytes().to_vec(),
            b"fast".to_vec(),
            1u64.to_le_bytes().to_vec(),
            10u64.to_le_bytes().to_vec(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
        ];
        for v in &without.validators {
            parts.push(hex::decode(&v.bls_public_key).unwrap());
            parts.push(hex::decode(&v.mldsa_public_key).unwrap());
            parts.push(hex::decode(&v.slhdsa_public_key).unwrap());
            parts.push(hex::decode(&v.tls_certificate).unwrap());
            parts.push(v.stake.to_le_bytes().to_vec());
        }
        let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        assert_eq!(plain.hash, tagged_hash("QUASAR-GENESIS-v1", &refs));

        let changing = file.clone().check().unwrap();
        assert_ne!(changing.hash, plain.hash);
        assert_eq!(changing.validator_set_root, plain.validator_set_root);
        let mut later = file.clone();
        later.validator_changes[1].epoch = 6;
        assert_ne!(later.check().unwrap().hash, changing.hash);
        let mut restaked = file.clone();
        restaked.validator_changes[1].validators[0].stake = 31;
        assert_ne!(restaked.check().unwrap().hash, changing.hash);
        // Moving the last change's validators to the first change is another chain.
        let mut merged = file.clone();
        let moved = merged.validator_changes.remove(1);
        merged.validator_changes[0]
            .validators
            .extend(moved.validators.into_iter().skip(2));
        assert_ne!(merged.check().unwrap().hash, changing.hash);
    }

    #[test]
    fn validator_changes_survive_a_json_round_trip_and_refuse_unknown_fields() {
        let (dir, _pool, file) = changing_genesis();
        let path = dir.path().join("genesis.json");
        file.save(&path).unwrap();
        let loaded = GenesisFile::load(&path).unwrap();
        assert_eq!(loaded, file);
        assert_eq!(
            loaded.check().unwrap().hash,
            file.clone().check().unwrap().hash
        );

        let mut json = serde_json::to_value(&file).unwrap();
        json["validator_changes"][0]["epochs"] = 3.into();
        let error = GenesisFile::from_json(&json.to_string())
            .unwrap_err()
            .to_string();
        assert!(error.contains("unknown field `epochs`"), "{error}");
    }

    /// A change that repeats the set before it is allowed: its epochs bind the same root.
    #[test]
    fn a_change_to_the_same_set_is_allowed() {
        let (_dir, _pool, file) = changing_genesis();
        let same = GenesisFile {
            validator_changes: vec![ValidatorChange {
                epoch: 3,
                validators: file.validators.clone(),
                ..ValidatorChange::default()
            }],
            ..file
        };
        let genesis = same.check().unwrap();
        let sets = genesis.epoch_sets();
        assert_eq!(sets.at(3).domain, sets.at(0).domain);
        assert_eq!(genesis.roster().len(), 3);
    }
}
