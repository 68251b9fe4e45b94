//! The validator registry: the accounts that may be chosen as validators, as the state holds
//! them, and the validator set they give (docs/architecture.md §11).
//!
//! # A validator is an account
//!
//! A validator's ML-DSA-65 identity key is its account's key, so its address is
//! [`crate::address_of`] of that key and the transaction that registers it proves possession
//! of it by its signature. `RegisterValidator` ([`crate::Action`]) carries the other keys
//! ([`Registration`]): the BLS12-381 public key with its proof of possession, the SLH-DSA
//! public key and the TLS certificate of its network identity. The validator's weight is its
//! account's stake. The proof of possession is bound to the registration
//! ([`registration_context`]: the chain, the sender and the other keys), and checked when the
//! transaction executes: no rogue key enters a set, and a registration copied from the
//! mempool does not verify for another sender, so nobody can take a validator's BLS key for
//! an account of its own (and with it the slashing meant for that validator).
//!
//! # In the state tree
//!
//! Beside the accounts, the registry is three kinds of entries:
//!
//! | key | value |
//! |---|---|
//! | `tagged_hash("QUASAR-STATE-VALIDATOR-v1", [address])` | [`ValidatorRecord::to_bytes`] |
//! | `tagged_hash("QUASAR-STATE-IDENTITY-v1", [kind, bytes])` | the address that claimed the BLS key (kind 1), SLH-DSA key (2) or TLS certificate (3) |
//! | `tagged_hash("QUASAR-STATE-VALIDATORS-v1", [])` | [`Directory::to_bytes`]: every registered address, sorted |
//!
//! A claim is never released: a key or certificate once registered by one account can never
//! be registered by another, so no two validators, present or past, share one.
//!
//! # Leaving, and the bonded stake
//!
//! `Leave` marks the record [`ValidatorStatus::Leaving`] at the height it executes; the sets
//! derived from then on omit it. While the node takes its validator sets from the genesis file
//! (docs/architecture.md §11), a genesis validator (registered at height 0) cannot leave: it
//! keeps signing in those sets, so its stake must stay bonded and slashable. Its stake stays bonded (a withdrawal is refused) for
//! [`ChainRules::unbonding_blocks`] after that height: three epochs, which cover the epoch in
//! which it left, the one it still validates (sets change two epochs after the staking
//! transactions that change them) and one more in which evidence of its misbehaviour can still
//! be submitted. The first withdrawal after that ends the registration: the record becomes
//! [`ValidatorStatus::Left`] and leaves the directory. A chain without epochs never changes its
//! set, so it refuses registrations.
//!
//! # Slashing
//!
//! `ReportEquivocation` carries evidence that a validator signed two conflicting messages (the
//! record nodes keep: two signed votes). Execution checks it through an [`EvidenceCheck`]
//! (the node's checks the votes' signatures under the validator sets of the chain), and that
//! the key that signed them is the offender's registered BLS key, in an epoch not before the
//! one it registered in. The offender's whole stake is burned and its registration becomes
//! [`ValidatorStatus::Slashed`] (derived sets omit it; its bond runs as after `Leave`). A
//! forged or foreign report slashes nobody, and a slashed registration is never slashed
//! again, so the same evidence cannot burn stake added later.
//!
//! # The set a registry gives
//!
//! [`select_validators`] is a pure function of the registry: the active validators with stake,
//! by stake (highest first), ties broken by BLS key, at most a given number. Every node, and a
//! late joiner replaying blocks, derives the same set from the same state.
//!
//! On a chain whose sets come from the registry ([`ChainRules::sets_from_registry`]), the
//! boundary block of epoch `e` writes the set of epoch `e + 2` into the tree ([`EpochSet`] at
//! [`epoch_set_key`]): the selection as of the state after that block, among the validators
//! the validator network can reach ([`NetworkRoster`]), with the set's root. One leaf then
//! proves an epoch's set against a boundary block's state root. Two epochs, not one, lie
//! between the decision and the change, so every validator of the new set learns it a whole
//! epoch before its first view (docs/architecture.md §11).
//!
//! # Reaching a validator
//!
//! A validator registered after the genesis tells the network where it listens with
//! `SetNetworkAddress` (its record's `network_address`; any time while its registration has
//! not ended, so a validator that moves hosts says so). Every node dials the registered
//! validators whose address it knows and accepts their TLS certificates (the node's peer
//! book), and only a validator the network reaches is selected: a genesis validator (its
//! peers' `node.toml` names its address) or one that announced an address.

use quasar_crypto::bls;
use quasar_crypto::hash::{tagged_hash, Hash};
use quasar_crypto::mldsa::{self, MlDsa65};

use crate::tx::Address;

/// Length of a BLS12-381 public key (compressed G1), bytes.
pub const BLS_PUBLIC_KEY_LEN: usize = bls::PUBLIC_KEY_LEN;
/// Length of a BLS proof of possession (compressed G2), bytes.
pub const PROOF_OF_POSSESSION_LEN: usize = bls::SIGNATURE_LEN;
/// Length of an SLH-DSA public key of the SHAKE-192 sets Magnetar uses (FIPS 205, Table 2).
pub const SLHDSA_PUBLIC_KEY_LEN: usize = quasar_crypto::magnetar::PUBLIC_KEY_LEN;
/// Longest TLS certificate (DER) a registration carries, bytes.
pub const MAX_TLS_CERTIFICATE_BYTES: usize = 2048;
/// Longest network address a validator announces, bytes: a host name of 253 characters
/// (RFC 1035 §2.3.4) and `:65535`, or a bracketed IPv6 address and port.
pub const MAX_NETWORK_ADDRESS_BYTES: usize = 259;
/// Most registered validators (active or leaving) a registry holds.
pub const MAX_REGISTERED_VALIDATORS: usize = 10_000;
/// Epochs a departing validator's stake stays bonded (see the module docs).
pub const UNBONDING_EPOCHS: u64 = 3;
/// Most validators of a set the registry gives ([`select_validators`] at a boundary).
pub const MAX_SET_VALIDATORS: usize = 1_000;

/// Hash tag of a validator record's place in the tree.
const VALIDATOR_TAG: &str = "QUASAR-STATE-VALIDATOR-v1";
/// Hash tag of an identity claim's place in the tree.
const IDENTITY_TAG: &str = "QUASAR-STATE-IDENTITY-v1";
/// Hash tag of a registration's context ([`registration_context`]).
const REGISTER_TAG: &str = "QUASAR-REGISTER-v1";
/// Hash tag of the directory's place in the tree.
const DIRECTORY_TAG: &str = "QUASAR-STATE-VALIDATORS-v1";
/// Hash tag of an epoch's set's place in the tree.
const EPOCH_SET_TAG: &str = "QUASAR-STATE-EPOCH-SET-v1";
/// Format byte of the directory and of an epoch's set.
const FORMAT: u8 = 1;
/// Format byte of a validator record (2: with its network address).
const RECORD_FORMAT: u8 = 2;
/// Encoded length of the fixed part of [`ValidatorKeys`].
const KEYS_FIXED_LEN: usize = BLS_PUBLIC_KEY_LEN + SLHDSA_PUBLIC_KEY_LEN;

/// The tree key of the validator record of `address`.
pub fn validator_key(address: &Address) -> Hash {
    tagged_hash(VALIDATOR_TAG, &[address])
}

/// The tree key of the directory.
pub fn directory_key() -> Hash {
    tagged_hash(DIRECTORY_TAG, &[])
}

/// The tree key of the validator set of `epoch` ([`EpochSet`]).
pub fn epoch_set_key(epoch: u64) -> Hash {
    tagged_hash(EPOCH_SET_TAG, &[&epoch.to_le_bytes()])
}

/// What a validator's keys claim, one tree key each (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Identity {
    /// Its BLS public key.
    Bls,
    /// Its SLH-DSA public key.
    SlhDsa,
    /// Its TLS certificate.
    Tls,
}

impl Identity {
    /// What it is, for an error message.
    pub fn name(&self) -> &'static str {
        match self {
            Identity::Bls => "BLS public key",
            Identity::SlhDsa => "SLH-DSA public key",
            Identity::Tls => "TLS certificate",
        }
    }

    fn kind(&self) -> u8 {
        match self {
            Identity::Bls => 1,
            Identity::SlhDsa => 2,
            Identity::Tls => 3,
        }
    }
}

/// Why registry bytes (a registration in a transaction, a record or the directory in the
/// state) are refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RegistryDecodeError {
    /// Too short or too long for what it encodes.
    #[error("{what} of {len} bytes: {expected}")]
    Length {
        /// What was decoded.
        what: &'static str,
        /// Its length.
        len: usize,
        /// The lengths allowed.
        expected: &'static str,
    },
    /// A format, status or order this version does not accept.
    #[error("{0}")]
    Invalid(&'static str),
}

/// A validator's keys other than its ML-DSA-65 identity key (which is its account's key).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidatorKeys {
    /// BLS12-381 public key, compressed G1 (48 bytes).
    pub bls_public_key: [u8; BLS_PUBLIC_KEY_LEN],
    /// SLH-DSA public key (FIPS 205; 48 bytes for the SHAKE-192 sets).
    pub slhdsa_public_key: [u8; SLHDSA_PUBLIC_KEY_LEN],
    /// The TLS certificate of its network identity, DER (1 to 2,048 bytes).
    pub tls_certificate: Vec<u8>,
}

impl ValidatorKeys {
    /// `bls_public_key ‖ slhdsa_public_key ‖ tls_certificate`.
    pub fn to_bytes(&self) -> Vec<u8> {
        [
            &self.bls_public_key[..],
            &self.slhdsa_public_key,
            &self.tls_certificate,
        ]
        .concat()
    }

    /// Decodes [`ValidatorKeys::to_bytes`]: the two keys, then 1 to
    /// [`MAX_TLS_CERTIFICATE_BYTES`] of certificate.
    ///
    /// Errors: [`RegistryDecodeError::Length`].
    pub fn from_bytes(bytes: &[u8]) -> Result<ValidatorKeys, RegistryDecodeError> {
        let certificate_len = bytes.len().checked_sub(KEYS_FIXED_LEN);
        if !certificate_len.is_some_and(|n| (1..=MAX_TLS_CERTIFICATE_BYTES).contains(&n)) {
            return Err(RegistryDecodeError::Length {
                what: "validator keys",
                len: bytes.len(),
                expected: "96 bytes of keys and 1 to 2048 of TLS certificate",
            });
        }
        let (bls_key, rest) = bytes.split_at(BLS_PUBLIC_KEY_LEN);
        let (slhdsa_key, certificate) = rest.split_at(SLHDSA_PUBLIC_KEY_LEN);
        let fixed = |what| RegistryDecodeError::Length {
            what,
            len: bytes.len(),
            expected: "48 bytes",
        };
        Ok(ValidatorKeys {
            bls_public_key: bls_key.try_into().map_err(|_| fixed("BLS public key"))?,
            slhdsa_public_key: slhdsa_key
                .try_into()
                .map_err(|_| fixed("SLH-DSA public key"))?,
            tls_certificate: certificate.to_vec(),
        })
    }

    /// The tree keys of what these keys claim: BLS key, SLH-DSA key, TLS certificate.
    pub fn identities(&self) -> [(Identity, Hash); 3] {
        let claim = |identity: Identity, bytes: &[u8]| {
            (
                identity,
                tagged_hash(IDENTITY_TAG, &[&[identity.kind()], bytes]),
            )
        };
        [
            claim(Identity::Bls, &self.bls_public_key),
            claim(Identity::SlhDsa, &self.slhdsa_public_key),
            claim(Identity::Tls, &self.tls_certificate),
        ]
    }
}

/// What a `RegisterValidator` transaction carries: the keys, and the proof of possession of
/// the BLS key (IETF draft-irtf-cfrg-bls-signature-05 §3.3, the `_POP_` ciphersuite).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registration {
    /// The keys registered.
    pub keys: ValidatorKeys,
    /// The BLS proof of possession (compressed G2, 96 bytes).
    pub proof_of_possession: [u8; PROOF_OF_POSSESSION_LEN],
}

impl Registration {
    /// The registration of `keys` by account `sender` on chain `chain_id`, with the proof of
    /// possession made by `bls_secret` (whose public key must be `keys.bls_public_key`) bound
    /// to [`registration_context`].
    pub fn new(
        keys: ValidatorKeys,
        bls_secret: &bls::SecretKey,
        chain_id: u64,
        sender: &Address,
    ) -> Registration {
        let context = registration_context(chain_id, sender, &keys);
        Registration {
            keys,
            proof_of_possession: bls_secret.prove_possession_bound(&context).to_bytes(),
        }
    }

    /// `proof_of_possession ‖` [`ValidatorKeys::to_bytes`]: what a transaction body's
    /// registration field holds.
    pub fn to_bytes(&self) -> Vec<u8> {
        [&self.proof_of_possession[..], &self.keys.to_bytes()].concat()
    }

    /// Decodes [`Registration::to_bytes`].
    ///
    /// Errors: [`RegistryDecodeError::Length`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Registration, RegistryDecodeError> {
        let (Some(pop), Some(keys)) = (
            bytes.get(..PROOF_OF_POSSESSION_LEN),
            bytes.get(PROOF_OF_POSSESSION_LEN..),
        ) else {
            return Err(RegistryDecodeError::Length {
                what: "registration",
                len: bytes.len(),
                expected: "96 bytes of proof of possession, then the keys",
            });
        };
        Ok(Registration {
            keys: ValidatorKeys::from_bytes(keys)?,
            proof_of_possession: pop.try_into().map_err(|_| RegistryDecodeError::Length {
                what: "proof of possession",
                len: pop.len(),
                expected: "96 bytes",
            })?,
        })
    }

    /// Checks that the BLS key is a valid public key (a non-identity point of the G1 subgroup)
    /// and that the proof of possession verifies under it for a registration by `sender` on
    /// chain `chain_id` ([`registration_context`]). Deterministic, about two pairings.
    ///
    /// Errors: a sentence naming what failed.
    pub fn check(&self, chain_id: u64, sender: &Address) -> Result<(), String> {
        let key = bls::PublicKey::from_bytes(&self.keys.bls_public_key)
            .map_err(|e| format!("BLS public key: {e}"))?;
        let pop = bls::ProofOfPossession::from_bytes(&self.proof_of_possession)
            .map_err(|e| format!("proof of possession: {e}"))?;
        key.verify_possession_bound(&pop, &registration_context(chain_id, sender, &self.keys))
            .map_err(|e| {
                format!(
                    "the proof of possession does not verify for this sender and chain \
                     (a registration is made by the validator's own account): {e}"
                )
            })
    }
}

/// The context a registration's proof of possession binds ([`bls::SecretKey::
/// prove_possession_bound`]): `tagged_hash("QUASAR-REGISTER-v1", [chain id (u64 LE), sender
/// address, SLH-DSA public key, TLS certificate])`.
pub fn registration_context(chain_id: u64, sender: &Address, keys: &ValidatorKeys) -> Hash {
    tagged_hash(
        REGISTER_TAG,
        &[
            &chain_id.to_le_bytes(),
            sender,
            &keys.slhdsa_public_key,
            &keys.tls_certificate,
        ],
    )
}

/// Where a registered validator stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValidatorStatus {
    /// Registered: sets derived from the state include it (given stake).
    Active,
    /// Left at height `since`: no longer in derived sets; its stake is bonded until
    /// `since + ChainRules::unbonding_blocks`.
    Leaving {
        /// The height of the block whose `Leave` executed.
        since: u64,
    },
    /// Its registration ended (the first withdrawal after the bonded period); it may register
    /// again with the keys it claimed.
    Left,
    /// Slashed at height `since` (a report of equivocation): no longer in derived sets, never
    /// slashed again; bonded as [`ValidatorStatus::Leaving`] is.
    Slashed {
        /// The height of the block whose report executed.
        since: u64,
    },
}

impl ValidatorStatus {
    /// The height from which the registration is ending: `since` of a leaving or slashed one.
    pub fn ending_since(&self) -> Option<u64> {
        match self {
            ValidatorStatus::Leaving { since } | ValidatorStatus::Slashed { since } => Some(*since),
            ValidatorStatus::Active | ValidatorStatus::Left => None,
        }
    }
}

/// A validator's entry in the registry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidatorRecord {
    /// Where it stands.
    pub status: ValidatorStatus,
    /// The height of the block that registered it (0: the genesis).
    pub registered_at: u64,
    /// Where its QUIC endpoint listens, as it announced it (`SetNetworkAddress`;
    /// [`check_network_address`]); `None` until it does. Genesis validators are reached at the
    /// addresses their peers' `node.toml` names.
    pub network_address: Option<String>,
    /// Its keys.
    pub keys: ValidatorKeys,
}

/// Checks the bytes of an announced network address: 1 to [`MAX_NETWORK_ADDRESS_BYTES`]
/// printable ASCII characters without spaces (`host:port`; the node parses the syntax when it
/// dials, and its API refuses an address it could not dial). Execution only bounds it: what an
/// address means is the network's business, not the state's.
///
/// Errors: a sentence naming the rule broken.
pub fn check_network_address(bytes: &[u8]) -> Result<String, String> {
    if bytes.is_empty() || bytes.len() > MAX_NETWORK_ADDRESS_BYTES {
        return Err(format!(
            "a network address of {} bytes: 1 to {MAX_NETWORK_ADDRESS_BYTES} are accepted",
            bytes.len()
        ));
    }
    if !bytes.iter().all(u8::is_ascii_graphic) {
        return Err("a network address is printable ASCII without spaces (host:port)".into());
    }
    // All ASCII, so valid UTF-8.
    String::from_utf8(bytes.to_vec()).map_err(|e| e.to_string())
}

impl ValidatorRecord {
    /// The canonical encoding: format 2 (1 byte), status (1 byte: 1 active, 2 leaving, 3 left,
    /// 4 slashed), `since` (u64 BE; 0 unless leaving or slashed), `registered_at` (u64 BE),
    /// the network address's length (u16 BE; 0 for none) and bytes, then
    /// [`ValidatorKeys::to_bytes`].
    pub fn to_bytes(&self) -> Vec<u8> {
        let (status, since) = match self.status {
            ValidatorStatus::Active => (1u8, 0u64),
            ValidatorStatus::Leaving { since } => (2, since),
            ValidatorStatus::Left => (3, 0),
            ValidatorStatus::Slashed { since } => (4, since),
        };
        let address = self.network_address.as_deref().unwrap_or("").as_bytes();
        // At most MAX_NETWORK_ADDRESS_BYTES, checked where an address enters a record.
        let address_len = u16::try_from(address.len()).unwrap_or(u16::MAX);
        [
            &[RECORD_FORMAT, status][..],
            &since.to_be_bytes(),
            &self.registered_at.to_be_bytes(),
            &address_len.to_be_bytes(),
            address,
            &self.keys.to_bytes(),
        ]
        .concat()
    }

    /// Decodes [`ValidatorRecord::to_bytes`], refusing any other encoding of the same record.
    ///
    /// Errors: [`RegistryDecodeError`].
    pub fn from_bytes(bytes: &[u8]) -> Result<ValidatorRecord, RegistryDecodeError> {
        let short = || RegistryDecodeError::Length {
            what: "validator record",
            len: bytes.len(),
            expected: "at least 20 bytes, the network address and the keys",
        };
        let (head, rest) = bytes.split_at_checked(20).ok_or_else(short)?;
        let word = |at: usize| {
            head.get(at..at + 8)
                .and_then(|w| <[u8; 8]>::try_from(w).ok())
                .map(u64::from_be_bytes)
                .ok_or_else(short)
        };
        let (since, registered_at) = (word(2)?, word(10)?);
        let address_len = head
            .get(18..20)
            .map_or(0, |w| usize::from(u16::from_be_bytes([w[0], w[1]])));
        let (address, keys) = rest.split_at_checked(address_len).ok_or_else(short)?;
        let network_address = match address {
            [] => None,
            bytes => Some(check_network_address(bytes).map_err(|_| {
                RegistryDecodeError::Invalid("a validator record's network address")
            })?),
        };
        let status = match (head.first(), head.get(1), since) {
            (Some(&RECORD_FORMAT), Some(1), 0) => ValidatorStatus::Active,
            (Some(&RECORD_FORMAT), Some(2), since) => ValidatorStatus::Leaving { since },
            (Some(&RECORD_FORMAT), Some(3), 0) => ValidatorStatus::Left,
            (Some(&RECORD_FORMAT), Some(4), since) => ValidatorStatus::Slashed { since },
            _ => {
                return Err(RegistryDecodeError::Invalid(
                    "a validator record of unknown format or status",
                ))
            }
        };
        Ok(ValidatorRecord {
            status,
            registered_at,
            network_address,
            keys: ValidatorKeys::from_bytes(keys)?,
        })
    }
}

/// Every registered (active or leaving) validator's address, sorted and without repeats.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Directory(pub std::collections::BTreeSet<Address>);

impl Directory {
    /// Format 1 (1 byte), then the addresses in order (32 bytes each).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(1 + 32 * self.0.len());
        out.push(FORMAT);
        for address in &self.0 {
            out.extend_from_slice(address);
        }
        out
    }

    /// Decodes [`Directory::to_bytes`]: at most [`MAX_REGISTERED_VALIDATORS`] addresses, in
    /// strictly increasing order.
    ///
    /// Errors: [`RegistryDecodeError`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Directory, RegistryDecodeError> {
        let Some((&FORMAT, addresses)) = bytes.split_first() else {
            return Err(RegistryDecodeError::Invalid(
                "a validator directory of unknown format",
            ));
        };
        if addresses.len() % 32 != 0 || addresses.len() / 32 > MAX_REGISTERED_VALIDATORS {
            return Err(RegistryDecodeError::Length {
                what: "validator directory",
                len: bytes.len(),
                expected: "1 + 32·n bytes, n ≤ 10,000",
            });
        }
        let mut set = std::collections::BTreeSet::new();
        for chunk in addresses.chunks_exact(32) {
            let address: Address = chunk
                .try_into()
                .map_err(|_| RegistryDecodeError::Invalid("a short address"))?;
            if set.last().is_some_and(|last| *last >= address) {
                return Err(RegistryDecodeError::Invalid(
                    "validator directory addresses out of order",
                ));
            }
            set.insert(address);
        }
        Ok(Directory(set))
    }
}

/// The rules of one chain that execution needs besides its transactions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainRules {
    /// The chain id transactions are signed for.
    pub chain_id: u64,
    /// Blocks per epoch; 0 for a chain that runs one endless epoch (its set never changes).
    pub epoch_length: u64,
    /// Whether the chain's validator sets come from this registry (the genesis decides:
    /// `quasar_chainspec::Genesis::sets_from_registry`): boundary blocks write the set two
    /// epochs ahead ([`EpochSet`]), and a genesis validator may leave. Otherwise the genesis
    /// file fixes every set, and a genesis validator, signing there for good, cannot leave.
    pub sets_from_registry: bool,
}

impl ChainRules {
    /// The epoch that decides `height` (height 0, the genesis, counts as epoch 0; every height
    /// is in epoch 0 on a chain without epochs).
    pub fn epoch_of(&self, height: u64) -> u64 {
        height
            .saturating_sub(1)
            .checked_div(self.epoch_length)
            .unwrap_or(0)
    }

    /// The epoch whose set boundary block `height` decides ([`EpochSet`]): `e + 2` when
    /// `height` is epoch `e`'s boundary on a chain whose sets come from the registry, else
    /// `None`.
    pub fn decides_set(&self, height: u64) -> Option<u64> {
        let boundary = self.sets_from_registry
            && self.epoch_length != 0
            && height != 0
            && height.is_multiple_of(self.epoch_length);
        boundary.then(|| self.epoch_of(height).saturating_add(2))
    }

    /// How long a departing validator's stake stays bonded, in blocks
    /// ([`UNBONDING_EPOCHS`] epochs); `None` on a chain without epochs.
    pub fn unbonding_blocks(&self) -> Option<u64> {
        (self.epoch_length != 0).then(|| self.epoch_length.saturating_mul(UNBONDING_EPOCHS))
    }
}

/// A registered validator as the state holds it: its record, with its account's key and stake.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisteredValidator {
    /// Its account's address.
    pub address: Address,
    /// Its ML-DSA-65 identity key (its account's key).
    pub identity_key: mldsa::PublicKey<MlDsa65>,
    /// Its account's stake.
    pub stake: u64,
    /// Its record.
    pub record: ValidatorRecord,
}

/// The validator set a registry gives: the [`ValidatorStatus::Active`] validators with a
/// non-zero stake, by stake (highest first), ties by BLS public key (lowest first), at most
/// `max`. A pure function of its input's contents, whatever their order.
pub fn select_validators(
    mut registry: Vec<RegisteredValidator>,
    max: usize,
) -> Vec<RegisteredValidator> {
    registry.retain(|v| v.record.status == ValidatorStatus::Active && v.stake > 0);
    registry.sort_by(|a, b| {
        b.stake.cmp(&a.stake).then_with(|| {
            a.record
                .keys
                .bls_public_key
                .cmp(&b.record.keys.bls_public_key)
        })
    });
    registry.truncate(max);
    registry
}

/// The TLS certificates of the genesis file's roster, whose addresses the validators'
/// `node.toml` files name. A registered validator is selected into a set only when the
/// network can reach it: it is in this roster, or it announced its network address on chain
/// (`SetNetworkAddress`), which every node then dials and whose certificate it accepts.
/// Deterministic (every node has the same genesis and state).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NetworkRoster(pub std::collections::BTreeSet<Vec<u8>>);

impl NetworkRoster {
    /// Whether the network can reach `validator`.
    pub fn reaches(&self, validator: &RegisteredValidator) -> bool {
        validator.record.network_address.is_some()
            || self.0.contains(&validator.record.keys.tls_certificate)
    }
}

/// One validator of an [`EpochSet`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetMember {
    /// Its account's address.
    pub address: Address,
    /// Its BLS public key (compressed G1).
    pub bls_public_key: [u8; BLS_PUBLIC_KEY_LEN],
    /// Its SLH-DSA public key.
    pub slhdsa_public_key: [u8; SLHDSA_PUBLIC_KEY_LEN],
    /// Its stake when the set was decided (its weight in the set's epochs).
    pub stake: u64,
}

/// Encoded length of a [`SetMember`].
const SET_MEMBER_LEN: usize = 32 + BLS_PUBLIC_KEY_LEN + SLHDSA_PUBLIC_KEY_LEN + 8;

/// The validator set of one epoch, as a boundary block wrote it into the tree (see the module
/// docs): its members in index order and its root (`quasar_wire::validator_set_root` over the
/// members' BLS, ML-DSA-65 and SLH-DSA keys and stakes), which the epoch's finalize votes bind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EpochSet {
    /// The set's root.
    pub validator_set_root: Hash,
    /// Its validators, by index: at least one, at most [`MAX_SET_VALIDATORS`].
    pub members: Vec<SetMember>,
}

impl EpochSet {
    /// The set of `selected` (the output of [`select_validators`], in its order); `None` when
    /// it is empty (a chain cannot run without validators, so the set before stays).
    pub fn of(selected: &[RegisteredValidator]) -> Option<EpochSet> {
        if selected.is_empty() {
            return None;
        }
        let root =
            quasar_wire::validator_set_root(selected.iter().map(|v| quasar_wire::SetRootEntry {
                bls_public_key: &v.record.keys.bls_public_key,
                identity_key: v.identity_key.as_bytes(),
                slhdsa_public_key: &v.record.keys.slhdsa_public_key,
                stake: v.stake,
            }));
        let members = selected
            .iter()
            .map(|v| SetMember {
                address: v.address,
                bls_public_key: v.record.keys.bls_public_key,
                slhdsa_public_key: v.record.keys.slhdsa_public_key,
                stake: v.stake,
            })
            .collect();
        Some(EpochSet {
            validator_set_root: root,
            members,
        })
    }

    /// Format 1 (1 byte), the root (32 bytes), then per member its address (32), BLS key (48),
    /// SLH-DSA key (48) and stake (u64 BE).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(33 + SET_MEMBER_LEN * self.members.len());
        out.push(FORMAT);
        out.extend_from_slice(&self.validator_set_root);
        for m in &self.members {
            out.extend_from_slice(&m.address);
            out.extend_from_slice(&m.bls_public_key);
            out.extend_from_slice(&m.slhdsa_public_key);
            out.extend_from_slice(&m.stake.to_be_bytes());
        }
        out
    }

    /// Decodes [`EpochSet::to_bytes`]: 1 to [`MAX_SET_VALIDATORS`] members, the length
    /// checked before anything is allocated.
    ///
    /// Errors: [`RegistryDecodeError`].
    pub fn from_bytes(bytes: &[u8]) -> Result<EpochSet, RegistryDecodeError> {
        let Some((&FORMAT, rest)) = bytes.split_first() else {
            return Err(RegistryDecodeError::Invalid(
                "an epoch set of unknown format",
            ));
        };
        let length = || RegistryDecodeError::Length {
            what: "epoch set",
            len: bytes.len(),
            expected: "33 + 136·n bytes, 1 ≤ n ≤ 1,000",
        };
        let (root, members) = rest.split_at_checked(32).ok_or_else(length)?;
        let count = members.len() / SET_MEMBER_LEN;
        if members.len() % SET_MEMBER_LEN != 0 || count == 0 || count > MAX_SET_VALIDATORS {
            return Err(length());
        }
        let members = members
            .chunks_exact(SET_MEMBER_LEN)
            .map(|c| {
                let (address, c) = c.split_at(32);
                let (bls, c) = c.split_at(BLS_PUBLIC_KEY_LEN);
                let (slhdsa, stake) = c.split_at(SLHDSA_PUBLIC_KEY_LEN);
                Ok(SetMember {
                    address: address.try_into().map_err(|_| length())?,
                    bls_public_key: bls.try_into().map_err(|_| length())?,
                    slhdsa_public_key: slhdsa.try_into().map_err(|_| length())?,
                    stake: u64::from_be_bytes(stake.try_into().map_err(|_| length())?),
                })
            })
            .collect::<Result<Vec<_>, RegistryDecodeError>>()?;
        Ok(EpochSet {
            validator_set_root: root.try_into().map_err(|_| length())?,
            members,
        })
    }
}

/// What checked evidence of equivocation proves ([`EvidenceCheck::check`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offence {
    /// The BLS public key that signed both messages (compressed G1).
    pub bls_public_key: [u8; BLS_PUBLIC_KEY_LEN],
    /// The epoch of both messages.
    pub epoch: u64,
    /// The view of both messages.
    pub view: u64,
}

/// Checks evidence of equivocation while a block executes. Every node of a chain must give
/// the same answer for the same bytes: the node's implementation checks both signed messages
/// against the validator sets of the chain's genesis (`quasar_node::application`).
pub trait EvidenceCheck: Send + Sync {
    /// What `evidence` proves.
    ///
    /// Errors: a sentence saying why the evidence proves nothing.
    fn check(&self, evidence: &[u8]) -> Result<Offence, String>;
}

/// The [`EvidenceCheck`] of a ledger that checks no evidence (a wallet's local check, tests
/// without validators): every report is refused.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoEvidence;

impl EvidenceCheck for NoEvidence {
    fn check(&self, _evidence: &[u8]) -> Result<Offence, String> {
        Err("this ledger checks no evidence".into())
    }
}
