//! The genesis file (`genesis.json`): chain id, genesis time, profile, epochs and bundles, the
//! Magnetar parameter set, the validators with their stake and keys, and the validator-set
//! changes it schedules at later epochs. [`GenesisFile::check`] turns the file into a checked
//! [`Genesis`]: every BLS key subgroup-checked with its proof of possession, every ML-DSA-65
//! and SLH-DSA key decoded, every identity unique, every set's threshold and rollup keys
//! decoded into its epochs' certificate policy.

use crate::dealer::check_committee;
use crate::keys::{
    check_certificate, deserialize_genesis_set, is_default_set, load_publics, magnetar_set_name,
    other_set, serialize_magnetar_set, PublicKeyFile,
};
use crate::{decode_hex, io_err, parse_json, to_json, ConfigError};
use quasar_consensus::{EpochMembers, EpochSchedule, EpochSets};
use quasar_crypto::bls::ProofOfPossession;
use quasar_crypto::bls_cache::PublicKeyCache;
use quasar_crypto::corona::scheme::GroupKey as CoronaGroupKey;
use quasar_crypto::hash::{tagged_hash, Hash};
use quasar_crypto::magnetar::{self, ParameterSet};
use quasar_crypto::mldsa::{self, MlDsa65};
use quasar_crypto::pulsar;
use quasar_crypto::rollup::circuit::{commitment, Statement, Validator as RollupValidator};
use quasar_crypto::rollup::native::{ExpandedKey, ML_DSA_65};
use quasar_lanes::cert::{CertPolicy, EpochKeys, Profile, ProfileParseError, RollupKey};
use quasar_lanes::groth16::VerifyingKey;
use quasar_lanes::magnetar::MagnetarKeys;
use quasar_lanes::{Validator, ValidatorSet};
use quasar_wire::{EpochDomain, LegKind, SetRootEntry};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
                ConfigError::Genesis(format!("validator {}: ML-DSA key: {e}", v.name))
            })?;
            Ok(RollupValidator {
                key,
                stake: v.stake,
            })
        })
        .collect()
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
    /// at most 6. `quasar-node deal` samples [`PULSAR_COMMITTEE_SIZE`](crate::PULSAR_COMMITTEE_SIZE) members by stake for
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
    /// threshold or rollup legs each change carries its set's own keys ([`deal`](crate::deal) writes the
    /// threshold ones). See [`GenesisFile::check`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub validator_changes: Vec<ValidatorChange>,
    /// Where the validator sets after epoch 1 come from: `"genesis"` (the default, meant when
    /// absent and left out when written: this file fixes every set, through
    /// `validator_changes`) or `"registry"` (the validator registry in the chain's state:
    /// staking transactions final in epoch e change the set of epoch e + 2; docs/architecture.md
    /// §11). `"registry"` needs epochs, no `validator_changes`, and profile `fast` (a set under
    /// any other profile would need threshold or rollup keys nobody can make for it yet).
    /// Bound into the genesis hash when not the default.
    #[serde(
        default,
        skip_serializing_if = "SetSource::is_genesis",
        deserialize_with = "deserialize_set_source"
    )]
    pub validator_set_source: SetSource,
    /// The application's genesis allocation: account balances at height 0 (docs/architecture.md
    /// §11). Absent or empty (left out when written, so the genesis keeps its hash) means no
    /// accounts. Bound into the genesis hash when present.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accounts: Vec<GenesisAccount>,
}

/// Where a chain's validator sets come from ([`GenesisFile::validator_set_source`]).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SetSource {
    /// The genesis file fixes every set.
    #[default]
    Genesis,
    /// The validator registry in the chain's state decides the set of every epoch from 2 on.
    Registry,
}

impl SetSource {
    fn is_genesis(&self) -> bool {
        *self == SetSource::Genesis
    }
}

/// `validator_set_source` from its JSON string, naming the field and the accepted values when
/// it is anything else.
fn deserialize_set_source<'de, D: serde::Deserializer<'de>>(d: D) -> Result<SetSource, D::Error> {
    struct Source;
    impl serde::de::Visitor<'_> for Source {
        type Value = SetSource;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str(r#"validator_set_source "genesis" or "registry""#)
        }
        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<SetSource, E> {
            match text {
                "genesis" => Ok(SetSource::Genesis),
                "registry" => Ok(SetSource::Registry),
                other => Err(E::invalid_value(serde::de::Unexpected::Str(other), &self)),
            }
        }
    }
    d.deserialize_str(Source)
}

/// An account of the genesis allocation (unknown fields are refused).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct GenesisAccount {
    /// The account's address, hex (32 bytes): the hash of its ML-DSA-65 public key
    /// (`quasar_app::address_of`).
    pub address: String,
    /// Its balance, in the chain's smallest unit.
    pub balance: u64,
}

/// Most accounts a genesis allocates.
pub const MAX_GENESIS_ACCOUNTS: usize = 1_000_000;

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
    /// absent. Errors: [`ConfigError::Genesis`] beginning with `label` and naming the field
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
                    decode_hex(field, v).map_err(|e| ConfigError::Genesis(format!("{label}{e}")))
                })
                .transpose()
        };
        let corona = optional("corona_group_key", self.corona_group_key)?;
        let pulsar = optional("pulsar_group_key", self.pulsar_group_key)?;
        let committee_bytes: Vec<u8> = match self.pulsar_committee {
            Some(_) if pulsar.is_none() => {
                return Err(ConfigError::Genesis(format!(
                    "{label}pulsar_committee without pulsar_group_key: the committee holds that \
                     key's shares (quasar-node deal writes both)"
                )));
            }
            Some(members) => {
                check_committee(label, members, validators)?;
                members.iter().flat_map(|m| m.to_le_bytes()).collect()
            }
            None if pulsar.is_some() && validators > pulsar::params::MAX_PARTIES => {
                return Err(ConfigError::Genesis(format!(
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
        return Err(ConfigError::Genesis(format!(
            "{label}{field}: the key is all zeros after its seed (anyone could sign)"
        )));
    }
    Ok(())
}

impl RawKeys {
    /// Parses the keys of `set` (checked from the file's `validators`). Errors:
    /// [`ConfigError::Genesis`] beginning with `label` and naming the field: a key that does
    /// not decode or is degenerate, a rollup verifying key with the wrong number of public
    /// inputs, an ML-DSA-65 key the rollup cannot expand.
    fn parse(
        self,
        label: &str,
        validators: &[GenesisValidator],
        set: &CheckedSet,
    ) -> Result<SetKeys, ConfigError> {
        let invalid = |field: &str, e: &dyn std::fmt::Display| {
            ConfigError::Genesis(format!("{label}{field}: {e}"))
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
    /// [`ConfigError::Genesis`] naming a key that does not expand.
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

/// A validator of a set taken from the registry ([`Genesis::registry_set`]).
#[derive(Debug, Clone)]
pub struct RegistryMember {
    /// Its BLS public key, compressed (its proof of possession was checked when it registered).
    pub bls_public_key: [u8; 48],
    /// Its SLH-DSA public key, as registered (48 bytes).
    pub slhdsa_public_key: [u8; 48],
    /// Its stake, above 0.
    pub stake: u64,
}

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
    /// The genesis allocation (`accounts`): address and balance, in file order.
    pub accounts: Vec<([u8; 32], u64)>,
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
    /// stakes, in index order. Errors: [`ConfigError::Genesis`] naming a key that does not
    /// expand.
    pub fn rollup_validators(&self) -> Result<Vec<RollupValidator>, ConfigError> {
        rollup_validators(&self.file.validators, &self.mldsa_public_keys)
    }

    /// The validator set and domain of every epoch: epoch 0's set with [`Genesis::domain`]
    /// from epoch 0, then each change's set from its first epoch, with an [`EpochDomain`] of
    /// that set's root and the genesis profile's name. On a chain whose sets come from its
    /// registry ([`Genesis::sets_from_registry`]) only epochs 0 and 1 are decided (the genesis
    /// set); the node decides each later one from state ([`Genesis::registry_set`]). Each call
    /// returns a history of its own ([`EpochSets::detached`]).
    pub fn epoch_sets(&self) -> EpochSets {
        self.epoch_sets.detached()
    }

    /// Whether the chain's validator sets come from the validator registry in its state
    /// (`validator_set_source` `"registry"`; docs/architecture.md §11): the set of epoch
    /// `e + 2` is the registry's selection at epoch `e`'s boundary block.
    pub fn sets_from_registry(&self) -> bool {
        self.file.validator_set_source == SetSource::Registry
    }

    /// A validator set taken from the registry, first used at `first_epoch`: `members` in index
    /// order with the set's root `root` (both as the state holds them: `quasar_app::EpochSet`),
    /// with its domain and its certificate policy (or why there is none), as
    /// [`Genesis::epoch_sets`] and [`Genesis::cert_policies`] give them for the genesis set.
    /// Errors: a message for an empty set, a zero or overflowing stake, a BLS key twice or not
    /// on the curve, or an SLH-DSA key not of [`Genesis::magnetar_set`].
    pub fn registry_set(
        &self,
        first_epoch: u64,
        root: Hash,
        members: &[RegistryMember],
    ) -> Result<(EpochMembers, Result<CertPolicy, String>), String> {
        let what = |e: &dyn std::fmt::Display| format!("the set of epoch {first_epoch}: {e}");
        let validators = members
            .iter()
            .map(|m| {
                Ok(Validator {
                    public_key: quasar_crypto::bls::PublicKey::from_bytes(&m.bls_public_key)
                        .map_err(|e| what(&e))?,
                    stake: m.stake,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let validators = ValidatorSet::new(validators).map_err(|e| what(&e))?;
        let slhdsa = members
            .iter()
            .map(|m| magnetar::PublicKey::from_bytes(self.magnetar_set(), &m.slhdsa_public_key))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| what(&e))?;
        let keys = EpochKeys {
            validators: validators.clone(),
            corona: None,
            rollup: None,
            pulsar: None,
            magnetar: None,
        };
        let policy = self.set_policy(first_epoch, root, keys, &slhdsa);
        let members = EpochMembers {
            validators: Arc::new(validators),
            domain: epoch_domain(root, self.profile),
        };
        Ok((members, policy))
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

/// A validator set's root ([`quasar_wire::validator_set_root`]); `mldsa` and `slhdsa` are by
/// validator index, as long as the set.
fn validator_set_root(
    validators: &ValidatorSet,
    mldsa: &[mldsa::PublicKey<MlDsa65>],
    slhdsa: &[magnetar::PublicKey],
) -> Hash {
    let bls: Vec<[u8; 48]> = validators
        .validators()
        .iter()
        .map(|v| v.public_key.to_bytes())
        .collect();
    quasar_wire::validator_set_root(
        validators
            .validators()
            .iter()
            .zip(&bls)
            .zip(mldsa)
            .zip(slhdsa)
            .map(|(((v, bls), identity), magnetar_key)| SetRootEntry {
                bls_public_key: bls,
                identity_key: identity.as_bytes(),
                slhdsa_public_key: magnetar_key.as_bytes(),
                stake: v.stake,
            }),
    )
}

/// How errors about the set first used at `first_epoch` begin: nothing for the genesis set (its
/// errors read `validator 1 (v1): …`), `validator change at epoch E: ` for a change's.
pub(crate) fn set_label(first_epoch: u64) -> String {
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
/// Errors: [`ConfigError::Genesis`], beginning with [`set_label`], naming the validator (a name
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
            return Err(ConfigError::Genesis(format!(
                "{who}: the name repeats an earlier validator's"
            )));
        }
        let hex = |field: &str, value: &str| {
            decode_hex(field, value).map_err(|e| ConfigError::Genesis(format!("{who}: {e}")))
        };
        let pk = cache
            .get_or_decode(&hex("bls_public_key", &v.bls_public_key)?)
            .map_err(|e| ConfigError::Genesis(format!("{who}: public key: {e}")))?;
        let pop =
            ProofOfPossession::from_bytes(&hex("proof_of_possession", &v.proof_of_possession)?)
                .map_err(|e| ConfigError::Genesis(format!("{who}: proof of possession: {e}")))?;
        pk.verify_possession(&pop).map_err(|e| {
            ConfigError::Genesis(format!("{who}: proof of possession does not verify: {e}"))
        })?;
        let identity =
            mldsa::PublicKey::<MlDsa65>::from_bytes(&hex("mldsa_public_key", &v.mldsa_public_key)?)
                .map_err(|e| ConfigError::Genesis(format!("{who}: ML-DSA-65 public key: {e}")))?;
        if mldsa_keys.contains(&identity) {
            return Err(ConfigError::Genesis(format!(
                "{who}: ML-DSA-65 public key repeats an earlier validator's"
            )));
        }
        let magnetar_key = magnetar::PublicKey::from_bytes(
            magnetar_set,
            &hex("slhdsa_public_key", &v.slhdsa_public_key)?,
        )
        .map_err(|e| ConfigError::Genesis(format!("{who}: SLH-DSA public key: {e}")))?;
        if slhdsa_keys.contains(&magnetar_key) {
            return Err(ConfigError::Genesis(format!(
                "{who}: SLH-DSA public key repeats an earlier validator's"
            )));
        }
        let cert = hex("tls_certificate", &v.tls_certificate)?;
        check_certificate(&cert).map_err(|e| {
            ConfigError::Genesis(format!(
                "{who}: TLS certificate is not a valid X.509 certificate: {e}"
            ))
        })?;
        if certs.contains(&cert) {
            return Err(ConfigError::Genesis(format!(
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
        .map_err(|e| ConfigError::Genesis(format!("{label}validator set: {e}")))?;
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
/// in each, and no two keys may share any of those four. Errors: [`ConfigError::Genesis`] naming
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
                    return Err(ConfigError::Genesis(format!(
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
                    return Err(ConfigError::Genesis(format!(
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
    /// command does). Errors: [`ConfigError`] reading a file; [`ConfigError::Genesis`] naming
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
                return Err(ConfigError::Keys(format!(
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
    /// [`ConfigError`] reading a file; [`ConfigError::Keys`] naming the first validator
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
            return Err(ConfigError::Keys(format!(
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
            validator_set_source: SetSource::Genesis,
            accounts: Vec::new(),
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
    /// key, Pulsar committee and rollup key, each empty when absent, then, only when `accounts`
    /// is not empty, the 16 bytes `genesis-accounts` and per account its address (32 bytes) and
    /// balance (8 bytes LE)])`. Leaving the default set, an empty `validator_changes` and empty
    /// `accounts` out keeps the hash of every genesis what it was before they existed, and the encoding stays injective: `tagged_hash` length-prefixes
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
    /// Errors: [`ConfigError::Genesis`] for an unknown profile, a bundle size outside
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
            ConfigError::Genesis(format!("genesis profile: {e}"))
        })?;
        if !(1..=quasar_wire::MAX_BUNDLE as u64).contains(&self.bundle_size) {
            return Err(ConfigError::Genesis(format!(
                "genesis bundle_size {} is outside 1..={}",
                self.bundle_size,
                quasar_wire::MAX_BUNDLE
            )));
        }
        if self.validator_set_source == SetSource::Registry {
            let needs = match () {
                _ if self.epoch_length == 0 => Some("epochs (an epoch_length above 0)"),
                _ if !self.validator_changes.is_empty() => {
                    Some("no validator_changes (the file would fix the sets)")
                }
                _ if profile.legs() != [LegKind::Bls] => Some(
                    "profile fast: a set under a profile with Corona, Pulsar or Groth16 legs \
                     needs keys that only a dealer can make today",
                ),
                _ => None,
            };
            if let Some(needs) = needs {
                return Err(ConfigError::Genesis(format!(
                    "genesis validator_set_source \"registry\" needs {needs}"
                )));
            }
        }
        check_epoch_length(self.epoch_length, self.bundle_size, profile)
            .map_err(|e| ConfigError::Genesis(format!("genesis {e}")))?;
        if let Some(first) = self.validator_changes.first() {
            let refuse = |why: String| {
                Err(ConfigError::Genesis(format!(
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
        if self.validator_set_source == SetSource::Registry {
            parts.push(b"validator_set_source=registry".to_vec());
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
        let mut epoch_sets = match self.validator_set_source == SetSource::Registry {
            // Epochs 0 and 1 have the genesis set; epoch e + 2's comes from e's boundary.
            true => EpochSets::decided_through(members(&genesis_set), 1),
            false => EpochSets::fixed(members(&genesis_set)),
        };
        for set in &changes {
            epoch_sets
                .change_at(&schedule, set.first_epoch, members(set))
                .map_err(|e| ConfigError::Genesis(format!("genesis validator_changes: {e}")))?;
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
        let accounts = self.allocation()?;
        if !accounts.is_empty() {
            parts.push(b"genesis-accounts".to_vec());
            for (address, balance) in &accounts {
                parts.push(address.to_vec());
                parts.push(balance.to_le_bytes().to_vec());
            }
        }
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
            accounts,
        })
    }

    /// The `accounts` allocation, decoded.
    ///
    /// Errors: [`ConfigError::Genesis`] naming the account for an address that is not 64 hex
    /// digits or is listed twice; more than [`MAX_GENESIS_ACCOUNTS`] accounts; balances and stakes
    /// that add up past `u64::MAX`.
    fn allocation(&self) -> Result<Vec<([u8; 32], u64)>, ConfigError> {
        if self.accounts.len() > MAX_GENESIS_ACCOUNTS {
            return Err(ConfigError::Genesis(format!(
                "genesis accounts: {} accounts, at most {MAX_GENESIS_ACCOUNTS}",
                self.accounts.len()
            )));
        }
        let mut seen = std::collections::HashSet::with_capacity(self.accounts.len());
        let mut out = Vec::with_capacity(self.accounts.len());
        for (i, account) in self.accounts.iter().enumerate() {
            let address: [u8; 32] = hex::decode(&account.address)
                .ok()
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| {
                    ConfigError::Genesis(format!(
                        "genesis accounts[{i}]: address {:?} is not 32 bytes of hex",
                        account.address
                    ))
                })?;
            if !seen.insert(address) {
                return Err(ConfigError::Genesis(format!(
                    "genesis accounts[{i}]: address {} is listed twice",
                    account.address
                )));
            }
            out.push((address, account.balance));
        }
        // The supply never grows after genesis, so a total within u64 means no balance or
        // stake can overflow when credited. Validators listed in several sets count each time
        // (a bound, not the exact supply).
        let stakes = self
            .validators
            .iter()
            .chain(self.validator_changes.iter().flat_map(|c| &c.validators))
            .map(|v| v.stake);
        let total = out
            .iter()
            .map(|(_, balance)| *balance)
            .chain(stakes)
            .try_fold(0u64, u64::checked_add);
        if total.is_none() {
            return Err(ConfigError::Genesis(format!(
                "genesis accounts and validator stakes add up to more than {} (the largest \
                 amount), so crediting a balance could overflow: lower them",
                u64::MAX
            )));
        }
        Ok(out)
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
