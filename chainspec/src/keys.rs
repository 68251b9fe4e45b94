//! Validator key files: `validator.key.json` (secret: the BLS secret key, the 32-byte seeds of
//! the ML-DSA-65 identity key and of the SLH-DSA Magnetar key, the TLS private key, dealt
//! threshold shares; mode 0600, sealed under a passphrase by default, [`crate::key_file`]) and
//! `validator.pub.json` (public: BLS public key and its proof of possession, the ML-DSA-65
//! public key, the SLH-DSA public key and its parameter set, the self-signed TLS certificate
//! that pins the validator's QUIC identity), written by `quasar-node keygen` ([`keygen_with_set`])
//! and read back with every key checked ([`load_keys`]).

use crate::key_file::KeyAccess;
use crate::key_file::KeyFileError;
use crate::{
    decode_hex, io_err, parse_json, read_bounded, to_json, warn_if_exposed, write_private_new,
    ConfigError,
};
use quasar_crypto::bls::SecretKey;
use quasar_crypto::magnetar::{self, ParameterSet};
use quasar_crypto::mldsa::{self, MlDsa65};
use quasar_crypto::{corona, pulsar};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
    pub(crate) fn is_empty(&self) -> bool {
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
    /// [`ConfigError::Keys`] with serde's message.
    pub fn from_json(text: &str) -> Result<SecretKeyFile, ConfigError> {
        serde_json::from_str(text).map_err(|e| ConfigError::Keys(format!("{SECRET_KEY_FILE}: {e}")))
    }

    /// The threshold key shares the file holds, decoded, by their set's first epoch (see
    /// [`ValidatorKeys::dealt`]). Errors: [`ConfigError::Keys`] naming the field (and the
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
                return Err(ConfigError::Keys(
                    "set_shares: an entry of epoch 0 (the genesis set's shares are the top-level \
                     fields; entries are for validator changes, from epoch 1)"
                        .into(),
                ));
            }
            if entry.epoch <= previous {
                return Err(ConfigError::Keys(format!(
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
            .map_err(|e| ConfigError::Keys(format!("set_shares epoch {}: {e}", entry.epoch)))?;
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

pub(crate) fn is_default_set(set: &ParameterSet) -> bool {
    *set == ParameterSet::default()
}

pub(crate) fn serialize_magnetar_set<S: serde::Serializer>(
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

pub(crate) fn deserialize_genesis_set<'de, D: serde::Deserializer<'de>>(
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
    pub tls: quasar_crypto::tls_identity::TlsIdentity,
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
    /// Errors: [`ConfigError::Keys`] naming the field: bad hex or encoding, a Pulsar share
    /// without its group key or the other way round, a share not of the group key.
    fn decode(
        corona_share: Option<&str>,
        pulsar_share: Option<&str>,
        pulsar_group: Option<&str>,
    ) -> Result<DealtShares, ConfigError> {
        let corona = corona_share
            .map(|text| {
                corona::scheme::KeyShare::from_bytes(
                    &decode_hex("corona_share", text).map_err(ConfigError::Keys)?,
                )
                .map_err(|e| ConfigError::Keys(format!("corona_share: {e}")))
            })
            .transpose()?;
        let pulsar = match (pulsar_group, pulsar_share) {
            (None, None) => None,
            (Some(group), Some(share)) => {
                let group = pulsar::GroupKey::from_bytes(
                    &decode_hex("pulsar_group", group).map_err(ConfigError::Keys)?,
                )
                .map_err(|e| ConfigError::Keys(format!("pulsar_group: {e}")))?;
                let share = pulsar::KeyShare::from_bytes(
                    &decode_hex("pulsar_share", share).map_err(ConfigError::Keys)?,
                )
                .map_err(|e| ConfigError::Keys(format!("pulsar_share: {e}")))?;
                if !group.check_share(&share) {
                    return Err(ConfigError::Keys(
                        "pulsar_share is not a share of pulsar_group".into(),
                    ));
                }
                Some((group, share))
            }
            (Some(_), None) => {
                return Err(ConfigError::Keys(
                    "pulsar_share is missing: a Pulsar key needs both pulsar_share and \
                     pulsar_group"
                        .into(),
                ))
            }
            (None, Some(_)) => {
                return Err(ConfigError::Keys(
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
        return Err(ConfigError::Exists {
            path: secret_path,
            what: "a validator key",
        });
    }
    let mut seed = zeroize::Zeroizing::new([0u8; 32]);
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut *seed);
    let bls = SecretKey::from_seed(&seed);
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut *seed);
    let mldsa = mldsa::SecretKey::<MlDsa65>::from_seed(&seed);
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut *seed);
    let slhdsa = magnetar::SecretKey::from_seed(slhdsa_set, &seed);
    let tls = quasar_crypto::tls_identity::TlsIdentity::generate(name)
        .map_err(|e| ConfigError::Keys(format!("TLS identity: {e}")))?;
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

/// Writes a new secret key file (mode 0600, failing if it exists): sealed under `access`'s
/// passphrase when `sealed`, else plaintext.
pub(crate) fn write_secret(
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

/// Reads the public key file of a key directory.
pub fn load_public(dir: &Path) -> Result<PublicKeyFile, ConfigError> {
    parse_json(&dir.join(PUBLIC_KEY_FILE))
}

/// Reads the public key files of `key_dirs`, in order.
pub(crate) fn load_publics(key_dirs: &[PathBuf]) -> Result<Vec<PublicKeyFile>, ConfigError> {
    key_dirs.iter().map(|dir| load_public(dir)).collect()
}

/// The first of `keys` (read from `dirs`), with its index and directory, whose Magnetar key is
/// not of `set`.
pub(crate) fn other_set<'a>(
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
        ConfigError::Keys(m) => ConfigError::Keys(format!("{}: {m}", dir.display())),
        other => other,
    })
}

fn load_keys_unlabelled(dir: &Path, access: &KeyAccess) -> Result<ValidatorKeys, ConfigError> {
    let public = load_public(dir)?;
    let secret_path = dir.join(SECRET_KEY_FILE);
    warn_if_exposed(&secret_path);
    let (secret, _) = read_secret(&secret_path, access)?;
    let bls = SecretKey::from_bytes(
        &decode_hex("bls_secret_key", &secret.bls_secret_key).map_err(ConfigError::Keys)?,
    )
    .map_err(|e| ConfigError::Keys(format!("bls_secret_key: {e}")))?;
    if hex::encode(bls.public_key().to_bytes()) != public.bls_public_key {
        return Err(ConfigError::Keys(format!(
            "the secret key does not match {PUBLIC_KEY_FILE}: the two files come from different \
             key directories (restore both from one backup)"
        )));
    }
    let mldsa = mldsa::SecretKey::<MlDsa65>::from_bytes(
        &decode_hex("mldsa_seed", &secret.mldsa_seed).map_err(ConfigError::Keys)?,
    )
    .map_err(|e| ConfigError::Keys(format!("mldsa_seed: {e}")))?;
    if hex::encode(mldsa.public_key().as_bytes()) != public.mldsa_public_key {
        return Err(ConfigError::Keys(format!(
            "{}: ML-DSA-65 seed does not match mldsa_public_key in {PUBLIC_KEY_FILE}",
            dir.display()
        )));
    }
    let slhdsa = magnetar::SecretKey::from_bytes(
        public.slhdsa_parameter_set,
        &decode_hex("slhdsa_seed", &secret.slhdsa_seed).map_err(ConfigError::Keys)?,
    )
    .map_err(|e| ConfigError::Keys(format!("slhdsa_seed: {e}")))?;
    if hex::encode(slhdsa.public_key().as_bytes()) != public.slhdsa_public_key {
        return Err(ConfigError::Keys(format!(
            "{}: SLH-DSA seed does not match slhdsa_public_key in {PUBLIC_KEY_FILE} (expanded \
             as {}, its slhdsa_parameter_set {:?})",
            dir.display(),
            public.slhdsa_parameter_set,
            magnetar_set_name(public.slhdsa_parameter_set)
        )));
    }
    let tls = quasar_crypto::tls_identity::TlsIdentity::from_der(
        decode_hex("tls_certificate", &public.tls_certificate).map_err(ConfigError::Keys)?,
        decode_hex("tls_private_key", &secret.tls_private_key).map_err(ConfigError::Keys)?,
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

/// Checks that `der` is a well-formed X.509 certificate usable as a TLS end-entity identity.
pub(crate) fn check_certificate(der: &[u8]) -> Result<(), String> {
    let cert = rustls::pki_types::CertificateDer::from(der);
    webpki::EndEntityCert::try_from(&cert)
        .map(|_| ())
        .map_err(|e| format!("{e:?}"))
}
