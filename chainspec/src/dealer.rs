//! The development dealer, the one place a trusted dealer generates threshold keys
//! ([`deal_key`]): for every validator set of a genesis, into the validators' key files
//! ([`deal`], with the stake-sampled Pulsar committees), or as one share file per party for a
//! multi-host thresholdd ceremony ([`write_party_files`], `thresholdd deal`). The dealer sees
//! every share; production keys need the distributed key generation of docs/architecture.md §8.

use crate::genesis::{set_label, GenesisFile, GenesisValidator, ValidatorChange};
use crate::key_file::KeyAccess;
use crate::keys::{load_public, read_secret, write_secret, SetShares, SECRET_KEY_FILE};
use crate::{io_err, ConfigError};
use quasar_crypto::hash::{tagged_hash, Hash};
use quasar_crypto::{corona, pulsar};
use quasar_lanes::cert::Profile;
use quasar_wire::LegKind;
use serde::Serialize;
use std::path::{Path, PathBuf};
use zeroize::Zeroizing;

/// The threshold t of the dealt Corona and Pulsar keys for `validators` validators of equal
/// weight: n − ⌊(n − 1)/3⌋, so the f = ⌊(n − 1)/3⌋ faulty validators BFT tolerates can neither
/// sign alone (t > f) nor stop the others from signing (n − f ≥ t).
pub fn dealt_threshold(validators: usize) -> usize {
    validators - validators.saturating_sub(1) / 3
}

/// Which threshold keys [`deal`] generates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DealtLegs {
    /// A Corona key (t-of-n, party i = validator i).
    pub corona: bool,
    /// A Pulsar key: t-of-n among the validators when they are at most
    /// [`PULSAR_COMMITTEE_SIZE`], else among a committee of that many sampled by stake (the
    /// genesis names it).
    pub pulsar: bool,
}

impl DealtLegs {
    /// The threshold keys `profile`'s legs need.
    pub fn for_profile(profile: Profile) -> DealtLegs {
        let legs = profile.legs();
        DealtLegs {
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
/// ([`Genesis::roster`](crate::Genesis::roster): the genesis validators in index order, then each change's newcomers;
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
/// Errors: [`ConfigError::Genesis`] when the genesis does not check;
/// [`ConfigError::Arguments`] when a key directory does not hold its roster validator;
/// [`ConfigError::AlreadyDealt`] when the genesis or a key file already holds threshold keys
/// that may not be replaced; [`ConfigError::Deal`] when a set's shape is refused; key file and
/// I/O errors. Every key file is checked before any is written, and all are staged before any is
/// replaced, so a refusal changes nothing.
pub fn deal(
    key_dirs: &[PathBuf],
    genesis: &mut GenesisFile,
    which: DealtLegs,
    existing: Existing,
    accesses: &[KeyAccess],
    rng: &mut (impl rand::RngCore + rand::CryptoRng),
) -> Result<(), ConfigError> {
    let checked = genesis.clone().check()?;
    if accesses.len() != key_dirs.len() {
        return Err(ConfigError::Arguments(format!(
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
        return Err(ConfigError::AlreadyDealt(format!(
            "the genesis already has threshold group keys (the sets from epochs {sets_with_keys:?})"
        )));
    }
    let roster: Vec<String> = checked
        .roster()
        .iter()
        .map(|v| v.bls_public_key.to_ascii_lowercase())
        .collect();
    if key_dirs.len() != roster.len() {
        return Err(ConfigError::Arguments(format!(
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
            return Err(ConfigError::Arguments(format!(
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
            return Err(ConfigError::AlreadyDealt(format!(
                "{} already holds threshold key shares",
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
            .map_err(|e| ConfigError::Deal(format!("{}{e}", set_label(*first_epoch))))?;
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
    which: DealtLegs,
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
        let key = deal_key(ThresholdScheme::Corona, dealt_threshold(n), n, rng)
            .map_err(|e| format!("Corona key for {n} validators: {e}"))?;
        for (entry, share) in shares.iter_mut().zip(&key.shares) {
            entry.corona_share = Some(hex::encode(share.as_slice()));
        }
        public.corona_group_key = Some(hex::encode(&key.public_key));
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
        let key = deal_key(ThresholdScheme::Pulsar, dealt_threshold(size), size, rng)
            .map_err(|e| format!("Pulsar key for {size} parties: {e}"))?;
        let full = hex::encode(&key.group_key);
        for (&member, share) in members.iter().zip(&key.shares) {
            if let Some(entry) = shares.get_mut(member) {
                entry.pulsar_group = Some(full.clone());
                entry.pulsar_share = Some(hex::encode(share.as_slice()));
            }
        }
        public.pulsar_group_key = Some(hex::encode(&key.public_key));
    }
    Ok(SetDeal { public, shares })
}

/// A threshold scheme the dealer deals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThresholdScheme {
    /// Corona (the Ringtail construction; `quasar_crypto::corona`).
    Corona,
    /// Pulsar (threshold ML-DSA; `quasar_crypto::pulsar`).
    Pulsar,
}

impl ThresholdScheme {
    /// The lowercase name thresholdd's key files and RPC methods use.
    pub fn as_str(self) -> &'static str {
        match self {
            ThresholdScheme::Corona => "corona",
            ThresholdScheme::Pulsar => "pulsar",
        }
    }
}

/// One dealt t-of-n key, encoded.
pub struct DealtKey {
    /// The public key a certificate leg verifies under (Corona: the group key (ρ, b̃); Pulsar:
    /// the ML-DSA-65 public key, FIPS 204).
    pub public_key: Vec<u8>,
    /// What a party needs beside its share to sign: Corona's group key again, Pulsar's full
    /// group (its public key and the parties' verification data).
    pub group_key: Vec<u8>,
    /// The parties' secret shares, party i at index i.
    pub shares: Vec<Zeroizing<Vec<u8>>>,
}

/// Deals a `threshold`-of-`parties` key of `scheme` with `rng` (trusted-dealer key generation:
/// Corona's of `quasar_crypto::corona::scheme`, Pulsar's of `quasar_crypto::pulsar`). Errors:
/// the scheme's refusal of the shape (Corona: 1 ≤ t ≤ n ≤ its party limit; Pulsar: 2 ≤ t ≤ n ≤
/// [`pulsar::params::MAX_PARTIES`]).
pub fn deal_key(
    scheme: ThresholdScheme,
    threshold: usize,
    parties: usize,
    rng: &mut (impl rand::RngCore + rand::CryptoRng),
) -> Result<DealtKey, String> {
    match scheme {
        ThresholdScheme::Corona => {
            let (group, shares) = corona::scheme::trusted_dealer_keygen(threshold, parties, rng)
                .map_err(|e| e.to_string())?;
            Ok(DealtKey {
                public_key: group.to_bytes(),
                group_key: group.to_bytes(),
                shares: shares.iter().map(|s| s.to_bytes()).collect(),
            })
        }
        ThresholdScheme::Pulsar => {
            let (group, shares) = pulsar::trusted_dealer_keygen(threshold, parties, rng)
                .map_err(|e| e.to_string())?;
            Ok(DealtKey {
                public_key: group.public_key_bytes().to_vec(),
                group_key: group.to_bytes(),
                shares: shares.iter().map(|s| s.to_bytes()).collect(),
            })
        }
    }
}

/// One party's file from [`write_party_files`]: exactly the parameters of thresholdd's
/// `<scheme>.import_share`, and the public key the ceremony methods name.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PartyFile<'a> {
    scheme: &'a str,
    party: u16,
    threshold: u16,
    participants: u16,
    public_key_hex: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    group_key_hex: Option<&'a str>,
    share_hex: &'a str,
}

/// `thresholdd deal`: deals a `threshold`-of-`participants` key of `scheme` ([`deal_key`]) and
/// writes one file per party, `<out_dir>/<scheme>-party-<i>.json`, mode 0600 and never over an
/// existing file, which that party's host loads with `<scheme>.import_share`. Each holds
/// `{scheme, party, threshold, participants, publicKeyHex, shareHex}`, plus `groupKeyHex` for
/// Pulsar (whose import needs the full group). `out_dir` is created if missing. Returns the
/// public key (hex) and the files written. Errors: [`ConfigError::Deal`] for a shape the
/// scheme refuses; [`ConfigError::Arguments`] when `out_dir` is not a directory;
/// [`ConfigError::Exists`] when any party's file exists (checked before anything is written,
/// so a refusal leaves no mixed set of shares); I/O errors.
pub fn write_party_files(
    scheme: ThresholdScheme,
    threshold: u16,
    participants: u16,
    out_dir: &Path,
    rng: &mut (impl rand::RngCore + rand::CryptoRng),
) -> Result<(String, Vec<PathBuf>), ConfigError> {
    let key = deal_key(
        scheme,
        usize::from(threshold),
        usize::from(participants),
        rng,
    )
    .map_err(|e| ConfigError::Deal(format!("{}: {e}", scheme.as_str())))?;
    if out_dir.exists() && !out_dir.is_dir() {
        return Err(ConfigError::Arguments(format!(
            "{} is not a directory",
            out_dir.display()
        )));
    }
    let paths: Vec<PathBuf> = (0..participants)
        .map(|party| out_dir.join(format!("{}-party-{party}.json", scheme.as_str())))
        .collect();
    if let Some(path) = paths.iter().find(|path| path.exists()) {
        return Err(ConfigError::Exists {
            path: path.clone(),
            what: "a dealt share",
        });
    }
    std::fs::create_dir_all(out_dir).map_err(io_err(out_dir))?;
    let public_key_hex = hex::encode(&key.public_key);
    let group_key_hex = (scheme == ThresholdScheme::Pulsar).then(|| hex::encode(&key.group_key));
    let mut written = Vec::with_capacity(key.shares.len());
    for ((party, share), path) in (0u16..).zip(&key.shares).zip(paths) {
        let share_hex = Zeroizing::new(hex::encode(share.as_slice()));
        let file = Zeroizing::new(
            serde_json::to_vec_pretty(&PartyFile {
                scheme: scheme.as_str(),
                party,
                threshold,
                participants,
                public_key_hex: &public_key_hex,
                group_key_hex: group_key_hex.as_deref(),
                share_hex: &share_hex,
            })
            .map_err(|e| ConfigError::Encode(e.to_string()))?,
        );
        crate::write_private_new(&path, &file).map_err(io_err(&path))?;
        written.push(path);
    }
    Ok((public_key_hex, written))
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
pub(crate) fn check_committee(
    label: &str,
    members: &[u32],
    validators: usize,
) -> Result<(), ConfigError> {
    let invalid = |why: String| {
        Err(ConfigError::Genesis(format!(
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
