//! The ledger: accounts, and what a transaction does to them.
//!
//! An account holds a balance, a stake, its next nonce and (once it has sent a transaction) its
//! ML-DSA-65 public key. [`Ledger::apply`] checks a signed transaction against the ledger and
//! applies it, or refuses it and changes nothing:
//!
//! 1. the sender's key: an account's first transaction carries the key (nonce 0, and the
//!    account holds none yet); later ones must not, and are checked against the key the
//!    ledger holds ([`ExecError::UnknownKey`], [`ExecError::KeyAlreadyKnown`]);
//! 2. the signature, for the ledger's chain, through the [`VerificationCache`] (a transaction
//!    checked when it entered the mempool is not checked again);
//! 3. the nonce: exactly the account's next one ([`ExecError::Nonce`]), so a transaction
//!    applies at most once and in order;
//! 4. the amounts, in checked `u64` arithmetic: fee plus amount within the balance
//!    ([`ExecError::Insufficient`]), a withdrawal within the stake, no balance past `u64::MAX`.
//!
//! The fee is burned (no proposer reward yet). Staking actions also read and write the
//! validator registry ([`crate::registry`]): `RegisterValidator` checks the BLS proof of
//! possession and that no other validator registered any of its keys, `Leave` starts the
//! unbonding period, and a withdrawal of bonded stake is refused.
//!
//! A ledger lives in memory. It is either a whole chain's accounts ([`Ledger::new`], the
//! genesis allocation and the tests) or the working set of one block's execution
//! ([`crate::state`]): what a transaction reads ([`Ledger::reads`]) is loaded from
//! the authenticated state ([`Ledger::load`]) before it is applied, and what changed is written
//! back as the block's new state version.

use std::collections::BTreeMap;

use quasar_crypto::hash::Hash;
use quasar_crypto::mldsa::{self, MlDsa65};

use crate::registry::{
    ChainRules, Directory, EpochSet, EvidenceCheck, ValidatorKeys, ValidatorRecord,
    ValidatorStatus, MAX_REGISTERED_VALIDATORS,
};
use crate::tx::{address_of, Action, Address, SignedTransaction, TxError};
use crate::verify_cache::VerificationCache;

/// One account.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Account {
    /// Spendable balance, in the chain's smallest unit.
    pub balance: u64,
    /// Staked amount.
    pub stake: u64,
    /// The nonce its next transaction must carry.
    pub nonce: u64,
    /// Its public key, known from its first transaction on.
    pub public_key: Option<mldsa::PublicKey<MlDsa65>>,
}

/// Length of an encoded account ([`AccountLeaf::to_bytes`]).
pub const ACCOUNT_BYTES: usize = 26;
/// Format tag of the account encoding.
const ACCOUNT_FORMAT: u8 = 1;

/// What the state tree holds for an account: its numbers, and whether its public key is in
/// state. The key itself (1,952 bytes, written once) is a separate entry of the tree, so the
/// leaf that changes with every transaction stays 26 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AccountLeaf {
    /// Spendable balance.
    pub balance: u64,
    /// Staked amount.
    pub stake: u64,
    /// The nonce its next transaction must carry.
    pub nonce: u64,
    /// Whether the account's public key is in state.
    pub has_key: bool,
}

impl AccountLeaf {
    /// The canonical encoding: format 1 (1 byte), balance, stake, nonce (u64 BE each), the key
    /// flag (0 or 1). 26 bytes.
    pub fn to_bytes(&self) -> [u8; ACCOUNT_BYTES] {
        let mut out = [0u8; ACCOUNT_BYTES];
        out[0] = ACCOUNT_FORMAT;
        for (slot, field) in
            out[1..25]
                .chunks_exact_mut(8)
                .zip([self.balance, self.stake, self.nonce])
        {
            slot.copy_from_slice(&field.to_be_bytes());
        }
        out[25] = u8::from(self.has_key);
        out
    }

    /// Decodes [`AccountLeaf::to_bytes`], refusing any other length, format or flag.
    ///
    /// Errors: [`AccountDecodeError`].
    pub fn from_bytes(bytes: &[u8]) -> Result<AccountLeaf, AccountDecodeError> {
        let bytes: &[u8; ACCOUNT_BYTES] = bytes
            .try_into()
            .map_err(|_| AccountDecodeError::Length(bytes.len()))?;
        let [format, fields @ .., flag] = bytes;
        if *format != ACCOUNT_FORMAT {
            return Err(AccountDecodeError::Format(*format));
        }
        let has_key = match flag {
            0 => false,
            1 => true,
            other => return Err(AccountDecodeError::Flag(*other)),
        };
        let word = |i: usize| {
            fields
                .get(i * 8..i * 8 + 8)
                .and_then(|w| <[u8; 8]>::try_from(w).ok())
                .map_or(0, u64::from_be_bytes)
        };
        Ok(AccountLeaf {
            balance: word(0),
            stake: word(1),
            nonce: word(2),
            has_key,
        })
    }
}

impl From<&Account> for AccountLeaf {
    fn from(account: &Account) -> AccountLeaf {
        AccountLeaf {
            balance: account.balance,
            stake: account.stake,
            nonce: account.nonce,
            has_key: account.public_key.is_some(),
        }
    }
}

/// Why bytes are not an encoded [`AccountLeaf`].
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AccountDecodeError {
    /// Not 26 bytes.
    #[error("an account is 26 bytes, found {0}")]
    Length(usize),
    /// A format this version does not know.
    #[error("unknown account format {0}")]
    Format(u8),
    /// A key flag other than 0 or 1.
    #[error("account key flag {0}, not 0 or 1")]
    Flag(u8),
    /// A stored public key does not decode.
    #[error("the account's public key does not decode")]
    Key,
}

/// Why a transaction was not applied. Nothing in the ledger changed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ExecError {
    /// The signature or the transaction's form is refused.
    #[error(transparent)]
    Tx(#[from] TxError),
    /// A later transaction of an account whose key the ledger does not hold (its first
    /// transaction, which carries the key, has not been applied).
    #[error("unknown sender {address}: its first transaction must carry its public key")]
    UnknownKey {
        /// The sender, hex.
        address: String,
    },
    /// A transaction carrying a key for an account that already has one.
    #[error("sender {address} already has a public key: only its first transaction carries one")]
    KeyAlreadyKnown {
        /// The sender, hex.
        address: String,
    },
    /// Not the account's next nonce (replayed, or ahead of a gap).
    #[error("nonce {found}, the account's next is {expected}")]
    Nonce {
        /// The account's next nonce.
        expected: u64,
        /// The transaction's.
        found: u64,
    },
    /// The account cannot pay.
    #[error("needs {needed} (amount and fee), the account has {available}")]
    Insufficient {
        /// What the transaction needs.
        needed: u64,
        /// What the account has (balance, or stake for a withdrawal).
        available: u64,
    },
    /// A withdrawal above the account's stake.
    #[error("withdraws {needed} but the account's stake is {staked}")]
    InsufficientStake {
        /// The amount asked for.
        needed: u64,
        /// The stake.
        staked: u64,
    },
    /// A credit would take a balance or stake past `u64::MAX`.
    #[error("a balance or stake would overflow")]
    Overflow,
    /// `Leave` from an account that holds no active registration.
    #[error("account {address} is not an active validator (never registered, or leaving, left or slashed already)")]
    NotRegistered {
        /// The sender, hex.
        address: String,
    },
    /// `RegisterValidator` from an account whose registration has not ended.
    #[error("this account is registered already: a validator leaves, then withdraws after the unbonding period, before it registers again")]
    AlreadyRegistered {
        /// The sender, hex.
        address: String,
    },
    /// A key or certificate another account registered.
    #[error("the {0} is registered by another validator")]
    IdentityClaimed(&'static str),
    /// The registry holds its maximum of validators.
    #[error("the validator registry is full ({MAX_REGISTERED_VALIDATORS} validators)")]
    RegistryFull,
    /// The registration's BLS key or proof of possession does not check.
    #[error("bad validator registration: {0}")]
    Registration(String),
    /// A registration that would leave the validator without stake.
    #[error("a validator needs stake: register with an amount, or add stake first")]
    NoStake,
    /// A registration on a chain without epochs.
    #[error("this chain runs one endless epoch: its validator set never changes")]
    NoEpochs,
    /// Evidence of equivocation that proves nothing against the offender named.
    #[error("the evidence is refused: {0}")]
    Evidence(String),
    /// A report against a validator whose stake is slashed or withdrawn already.
    #[error("validator {address} was slashed already, or has no stake left to slash")]
    NothingToSlash {
        /// The offender, hex.
        address: String,
    },
    /// `Leave` from a genesis validator on a chain whose genesis file fixes the sets.
    #[error("a genesis validator cannot leave this chain: its genesis file fixes the validator sets, where it keeps signing (docs/architecture.md §11)")]
    GenesisValidator,
    /// A withdrawal of bonded stake.
    #[error("the stake is bonded: {}", match .from {
        None => "leave the validator set first (the Leave transaction)".to_string(),
        Some(h) => format!("a departing validator withdraws from block {h} on"),
    })]
    Bonded {
        /// The first height at which a withdrawal applies; `None` while the validator is
        /// active.
        from: Option<u64>,
    },
    /// A withdrawal by a validator that a set in force or decided still counts (a chain whose
    /// sets come from the registry keeps a set when no validator is eligible for the next).
    #[error(
        "the stake is bonded: the validator is in the set of epoch {epoch}, and stays bonded \
         while a set it signs in is in force"
    )]
    InSet {
        /// The epoch of that set.
        epoch: u64,
    },
}

impl ExecError {
    /// Whether the transaction may still apply on a later state: its nonce is ahead of the
    /// account's (a predecessor is pending), or its sender's key is not in state yet (the
    /// first transaction, which carries it, is pending). Every other refusal is final for a
    /// mempool, an overdraft included (the sender sends again once funded).
    pub fn may_apply_later(&self) -> bool {
        match self {
            ExecError::Nonce { expected, found } => found > expected,
            ExecError::UnknownKey { .. } => true,
            _ => false,
        }
    }
}

/// A genesis validator: its identity key, its other keys, and its stake.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenesisValidator {
    /// Its ML-DSA-65 identity key: its account's key.
    pub identity_key: mldsa::PublicKey<MlDsa65>,
    /// Its other keys (checked, with the proofs of possession, by the genesis file's check).
    pub keys: ValidatorKeys,
    /// Its stake.
    pub stake: u64,
}

/// The accounts of one chain, by address, and the validator registry ([`crate::registry`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ledger {
    rules: ChainRules,
    accounts: BTreeMap<Address, Account>,
    validators: BTreeMap<Address, ValidatorRecord>,
    claims: BTreeMap<Hash, Address>,
    directory: Directory,
    /// Validator sets by epoch, as loaded ([`Ledger::load_epoch_set`]).
    sets: BTreeMap<u64, EpochSet>,
}

impl Ledger {
    /// A ledger of a chain with `rules`, without accounts or validators.
    pub fn empty(rules: ChainRules) -> Ledger {
        Ledger {
            rules,
            accounts: BTreeMap::new(),
            validators: BTreeMap::new(),
            claims: BTreeMap::new(),
            directory: Directory::default(),
            sets: BTreeMap::new(),
        }
    }

    /// Holds the validator set of `epoch` (`None`: none is known), for the withdrawals of a
    /// working set ([`Reads::epoch_sets`]).
    pub fn load_epoch_set(&mut self, epoch: u64, set: Option<EpochSet>) {
        match set {
            Some(set) => self.sets.insert(epoch, set),
            None => self.sets.remove(&epoch),
        };
    }

    /// A ledger of a chain with `rules` whose accounts start with `balances` (the genesis
    /// allocation; an address listed twice gets the sum). Errors: [`ExecError::Overflow`].
    pub fn new(
        rules: ChainRules,
        balances: impl IntoIterator<Item = (Address, u64)>,
    ) -> Result<Ledger, ExecError> {
        Ledger::genesis(rules, balances, [])
    }

    /// [`Ledger::new`] with the genesis `validators` registered: each one's account (the
    /// address of its identity key) holds the key and its stake, and its record is
    /// [`ValidatorStatus::Active`] from height 0.
    ///
    /// Errors: [`ExecError::Overflow`]; [`ExecError::AlreadyRegistered`] for an identity key
    /// listed twice; [`ExecError::IdentityClaimed`] for another key or certificate listed twice.
    pub fn genesis(
        rules: ChainRules,
        balances: impl IntoIterator<Item = (Address, u64)>,
        validators: impl IntoIterator<Item = GenesisValidator>,
    ) -> Result<Ledger, ExecError> {
        let mut ledger = Ledger::empty(rules);
        for (address, amount) in balances {
            let account = ledger.accounts.entry(address).or_default();
            account.balance = account
                .balance
                .checked_add(amount)
                .ok_or(ExecError::Overflow)?;
        }
        for validator in validators {
            let address = address_of(&validator.identity_key);
            ledger.check_registrable(&address, &validator.keys)?;
            let account = ledger.accounts.entry(address).or_default();
            account.stake = account
                .stake
                .checked_add(validator.stake)
                .ok_or(ExecError::Overflow)?;
            account.public_key = Some(validator.identity_key);
            ledger.register(address, validator.keys, 0);
        }
        Ok(ledger)
    }

    /// The rules it applies.
    pub fn rules(&self) -> ChainRules {
        self.rules
    }

    /// The account at `address`, if it exists.
    pub fn account(&self, address: &Address) -> Option<&Account> {
        self.accounts.get(address)
    }

    /// Every account it holds, in address order.
    pub fn accounts(&self) -> impl Iterator<Item = (&Address, &Account)> {
        self.accounts.iter()
    }

    /// The validator record of `address`, if it holds one.
    pub fn validator(&self, address: &Address) -> Option<&ValidatorRecord> {
        self.validators.get(address)
    }

    /// Every validator record it holds, in address order.
    pub fn validators(&self) -> impl Iterator<Item = (&Address, &ValidatorRecord)> {
        self.validators.iter()
    }

    /// Every identity claim it holds (tree key, owner), in key order.
    pub fn claims(&self) -> impl Iterator<Item = (&Hash, &Address)> {
        self.claims.iter()
    }

    /// The directory of registered validators, as it holds it.
    pub fn directory(&self) -> &Directory {
        &self.directory
    }

    /// Adds `account` at `address` unless the ledger holds that address already (it then keeps
    /// its own, possibly changed, account); `None` (no such account) adds nothing.
    pub fn load(&mut self, address: Address, account: Option<Account>) {
        if let Some(account) = account {
            self.accounts.entry(address).or_insert(account);
        }
    }

    /// As [`Ledger::load`], for the validator record of `address`.
    pub fn load_validator(&mut self, address: Address, record: Option<ValidatorRecord>) {
        if let Some(record) = record {
            self.validators.entry(address).or_insert(record);
        }
    }

    /// As [`Ledger::load`], for the identity claim at tree key `claim`.
    pub fn load_claim(&mut self, claim: Hash, owner: Option<Address>) {
        if let Some(owner) = owner {
            self.claims.entry(claim).or_insert(owner);
        }
    }

    /// Replaces the directory (a working set loads it once, before the first transaction that
    /// reads it: see [`Ledger::reads`]).
    pub fn load_directory(&mut self, directory: Directory) {
        self.directory = directory;
    }

    /// What applying `tx` reads or writes; a ledger that is one block's working set must hold
    /// each of them (where it exists) before [`Ledger::apply`].
    pub fn reads(tx: &SignedTransaction) -> Reads {
        let body = tx.transaction();
        let to = match body.action {
            Action::Transfer { to, .. } | Action::ReportEquivocation { offender: to, .. }
                if to != body.sender =>
            {
                Some(to)
            }
            _ => None,
        };
        let validator = match &body.action {
            Action::Leave
            | Action::WithdrawStake { .. }
            | Action::RegisterValidator { .. }
            | Action::SetNetworkAddress { .. } => Some(body.sender),
            Action::ReportEquivocation { offender, .. } => Some(*offender),
            Action::Transfer { .. } | Action::AddStake { .. } => None,
        };
        let claims = match &body.action {
            Action::RegisterValidator { registration, .. } => registration
                .keys
                .identities()
                .iter()
                .map(|(_, key)| *key)
                .collect(),
            _ => Vec::new(),
        };
        let withdraws = matches!(body.action, Action::WithdrawStake { .. });
        Reads {
            sender: body.sender,
            recipient: to,
            validator,
            claims,
            directory: withdraws || matches!(body.action, Action::RegisterValidator { .. }),
            epoch_sets: withdraws,
        }
    }

    /// Checks `tx` against the ledger and applies it as part of block `height` (steps in the
    /// module docs); on an error nothing changes. Signatures are checked through `cache`,
    /// which must be this chain's, and evidence of equivocation through `evidence`. An
    /// account, record or claim the ledger does not hold counts as absent (see
    /// [`Ledger::reads`]).
    ///
    /// Errors: [`ExecError`].
    pub fn apply(
        &mut self,
        tx: &SignedTransaction,
        height: u64,
        cache: &VerificationCache,
        evidence: &dyn EvidenceCheck,
    ) -> Result<(), ExecError> {
        let body = tx.transaction();
        let address = || hex::encode(body.sender);
        let sender = self.accounts.get(&body.sender);
        let held = sender.and_then(|a| a.public_key.as_ref());
        let key = match (&body.public_key, held) {
            (Some(_), Some(_)) => return Err(ExecError::KeyAlreadyKnown { address: address() }),
            (None, None) => return Err(ExecError::UnknownKey { address: address() }),
            (Some(key), None) | (None, Some(key)) => key,
        };
        cache.verify(tx, key)?;
        let (mut balance, mut stake, nonce) =
            sender.map_or((0, 0, 0), |a| (a.balance, a.stake, a.nonce));
        if body.nonce != nonce {
            return Err(ExecError::Nonce {
                expected: nonce,
                found: body.nonce,
            });
        }
        let next_nonce = nonce.checked_add(1).ok_or(ExecError::Overflow)?;
        let pay = |balance: u64, amount: u64| {
            let needed = amount.checked_add(body.fee).ok_or(ExecError::Overflow)?;
            balance.checked_sub(needed).ok_or(ExecError::Insufficient {
                needed,
                available: balance,
            })
        };
        let add = |value: u64, amount: u64| value.checked_add(amount).ok_or(ExecError::Overflow);
        // The recipient of a transfer to another account, with its balance after it.
        let mut credited = None;
        // The sender's validator record after the transaction, when it changes.
        let mut record = None;
        // A slashed offender, with its record after the slashing.
        let mut slashed = None;
        match &body.action {
            Action::Transfer { to, amount } => {
                balance = pay(balance, *amount)?;
                if *to == body.sender {
                    balance = add(balance, *amount)?;
                } else {
                    let theirs = self.accounts.get(to).map_or(0, |a| a.balance);
                    credited = Some((*to, add(theirs, *amount)?));
                }
            }
            Action::AddStake { amount } => {
                balance = pay(balance, *amount)?;
                stake = add(stake, *amount)?;
            }
            Action::WithdrawStake { amount } => {
                record = self.unbond(&body.sender, height)?;
                stake = stake
                    .checked_sub(*amount)
                    .ok_or(ExecError::InsufficientStake {
                        needed: *amount,
                        staked: stake,
                    })?;
                balance = add(pay(balance, 0)?, *amount)?;
            }
            Action::Leave => {
                if self.rules.unbonding_blocks().is_none() {
                    return Err(ExecError::NoEpochs);
                }
                let Some(current) = self.validators.get(&body.sender) else {
                    return Err(ExecError::NotRegistered { address: address() });
                };
                if current.status != ValidatorStatus::Active {
                    return Err(ExecError::NotRegistered { address: address() });
                }
                // Where the genesis file fixes the sets (docs/architecture.md §11), a genesis
                // validator keeps signing in them, so it stays bonded and slashable.
                if current.registered_at == 0 && !self.rules.sets_from_registry {
                    return Err(ExecError::GenesisValidator);
                }
                balance = pay(balance, 0)?;
                record = Some(ValidatorRecord {
                    status: ValidatorStatus::Leaving { since: height },
                    ..current.clone()
                });
            }
            Action::RegisterValidator {
                amount,
                registration,
            } => {
                if self.rules.unbonding_blocks().is_none() {
                    return Err(ExecError::NoEpochs);
                }
                // The cheap checks first: the pairings run only for a sender who can pay.
                balance = pay(balance, *amount)?;
                stake = add(stake, *amount)?;
                if stake == 0 {
                    return Err(ExecError::NoStake);
                }
                self.check_registrable(&body.sender, &registration.keys)?;
                registration
                    .check(self.rules.chain_id, &body.sender)
                    .map_err(ExecError::Registration)?;
            }
            Action::ReportEquivocation {
                offender,
                evidence: bytes,
            } => {
                balance = pay(balance, 0)?;
                slashed = Some((*offender, self.slashing(offender, bytes, height, evidence)?));
            }
            Action::SetNetworkAddress { address: announced } => {
                // Active or leaving (it still signs until its sets end): a registration that
                // has not ended.
                let current = self
                    .validators
                    .get(&body.sender)
                    .filter(|r| {
                        matches!(
                            r.status,
                            ValidatorStatus::Active | ValidatorStatus::Leaving { .. }
                        )
                    })
                    .ok_or_else(|| ExecError::NotRegistered { address: address() })?;
                balance = pay(balance, 0)?;
                record = Some(ValidatorRecord {
                    network_address: Some(announced.clone()),
                    ..current.clone()
                });
            }
        }
        // Every check passed: write. Only a first transaction's key is copied into state.
        let account = self.accounts.entry(body.sender).or_default();
        account.balance = balance;
        account.stake = stake;
        account.nonce = next_nonce;
        if account.public_key.is_none() {
            account.public_key = body.public_key.clone();
        }
        if let Some((to, balance)) = credited {
            self.accounts.entry(to).or_default().balance = balance;
        }
        if let Some(record) = record {
            if record.status == ValidatorStatus::Left {
                self.directory.0.remove(&body.sender);
            }
            self.validators.insert(body.sender, record);
        }
        if let Action::RegisterValidator { registration, .. } = &body.action {
            self.register(body.sender, registration.keys.clone(), height);
        }
        if let Some((offender, record)) = slashed {
            self.accounts.entry(offender).or_default().stake = 0;
            self.validators.insert(offender, record);
        }
        Ok(())
    }

    /// The record of `offender` after a report of equivocation proved by `bytes`, checked
    /// through `evidence` at `height`: [`ValidatorStatus::Slashed`] from `height`.
    ///
    /// Errors: [`ExecError::NotRegistered`] for an offender that never registered or whose
    /// registration ended; [`ExecError::NothingToSlash`] when it was slashed already or has no
    /// stake; [`ExecError::Evidence`] for evidence that proves nothing, was signed by another
    /// key, or is of an epoch before the registration.
    fn slashing(
        &self,
        offender: &Address,
        bytes: &[u8],
        height: u64,
        evidence: &dyn EvidenceCheck,
    ) -> Result<ValidatorRecord, ExecError> {
        let address = || hex::encode(offender);
        let record = self
            .validators
            .get(offender)
            .filter(|r| r.status != ValidatorStatus::Left)
            .ok_or_else(|| ExecError::NotRegistered { address: address() })?;
        let slashed = matches!(record.status, ValidatorStatus::Slashed { .. });
        if slashed || self.accounts.get(offender).is_none_or(|a| a.stake == 0) {
            return Err(ExecError::NothingToSlash { address: address() });
        }
        let offence = evidence.check(bytes).map_err(ExecError::Evidence)?;
        if offence.bls_public_key != record.keys.bls_public_key {
            return Err(ExecError::Evidence(format!(
                "it was signed by another key than validator {}'s",
                address()
            )));
        }
        let registered = self.rules.epoch_of(record.registered_at);
        if offence.epoch < registered {
            return Err(ExecError::Evidence(format!(
                "the offence (epoch {}) predates validator {}'s registration (epoch {registered})",
                offence.epoch,
                address()
            )));
        }
        Ok(ValidatorRecord {
            status: ValidatorStatus::Slashed { since: height },
            ..record.clone()
        })
    }

    /// Refuses a registration of `keys` by `address` unless `address` holds no current
    /// registration, each of the keys is unclaimed or claimed by `address` itself, and the
    /// directory has room.
    fn check_registrable(&self, address: &Address, keys: &ValidatorKeys) -> Result<(), ExecError> {
        if self
            .validators
            .get(address)
            .is_some_and(|r| r.status != ValidatorStatus::Left)
        {
            return Err(ExecError::AlreadyRegistered {
                address: hex::encode(address),
            });
        }
        for (identity, claim) in keys.identities() {
            if self
                .claims
                .get(&claim)
                .is_some_and(|owner| owner != address)
            {
                return Err(ExecError::IdentityClaimed(identity.name()));
            }
        }
        if self.directory.0.len() >= MAX_REGISTERED_VALIDATORS {
            return Err(ExecError::RegistryFull);
        }
        Ok(())
    }

    /// Writes an [`ValidatorStatus::Active`] record of `keys` for `address` from `height`, its
    /// claims and its directory entry (after [`Ledger::check_registrable`]).
    fn register(&mut self, address: Address, keys: ValidatorKeys, height: u64) {
        for (_, claim) in keys.identities() {
            self.claims.insert(claim, address);
        }
        self.directory.0.insert(address);
        self.validators.insert(
            address,
            ValidatorRecord {
                status: ValidatorStatus::Active,
                registered_at: height,
                network_address: None,
                keys,
            },
        );
    }

    /// Whether `address` may withdraw stake at `height`: yes when it holds no registration;
    /// never while it is active; after the unbonding period when it is leaving, and the
    /// registration then ends (the returned record, [`ValidatorStatus::Left`]).
    ///
    /// Errors: [`ExecError::Bonded`].
    fn unbond(&self, address: &Address, height: u64) -> Result<Option<ValidatorRecord>, ExecError> {
        let Some(record) = self.validators.get(address) else {
            return Ok(None);
        };
        match record.status {
            ValidatorStatus::Left => Ok(None),
            ValidatorStatus::Active => Err(ExecError::Bonded { from: None }),
            ValidatorStatus::Leaving { since } | ValidatorStatus::Slashed { since } => {
                let from = self
                    .rules
                    .unbonding_blocks()
                    .map_or(u64::MAX, |blocks| since.saturating_add(blocks));
                if height < from {
                    return Err(ExecError::Bonded { from: Some(from) });
                }
                let epoch = self.rules.epoch_of(height);
                for epoch in [epoch, epoch.saturating_add(1)] {
                    let member = self
                        .sets
                        .get(&epoch)
                        .is_some_and(|set| set.members.iter().any(|m| m.address == *address));
                    if member {
                        return Err(ExecError::InSet { epoch });
                    }
                }
                Ok(Some(ValidatorRecord {
                    status: ValidatorStatus::Left,
                    ..record.clone()
                }))
            }
        }
    }
}

/// What a transaction reads and writes ([`Ledger::reads`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reads {
    /// Its sender's account.
    pub sender: Address,
    /// The other account it touches: a transfer's recipient, a report's offender (when not
    /// the sender).
    pub recipient: Option<Address>,
    /// The validator record of its sender, for staking actions.
    pub validator: Option<Address>,
    /// The identity claims a registration makes (tree keys).
    pub claims: Vec<Hash>,
    /// Whether it may change the directory.
    pub directory: bool,
    /// Whether it needs the validator sets of the block's epoch and the next, on a chain whose
    /// sets come from the registry (a withdrawal: a member of either stays bonded).
    pub epoch_sets: bool,
}
