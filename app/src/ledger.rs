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
//! The fee is burned (no proposer reward yet). `Leave` is refused with
//! [`ExecError::NotBuilt`] until the validator registry exists (issue 32).
//!
//! A ledger lives in memory. It is either a whole chain's accounts ([`Ledger::new`], the
//! genesis allocation and the tests) or the working set of one block's execution
//! ([`crate::state`]): the accounts a transaction touches ([`Ledger::touches`]) are loaded from
//! the authenticated state ([`Ledger::load`]) before it is applied, and what changed is written
//! back as the block's new state version.

use std::collections::BTreeMap;

use quasar_crypto::mldsa::{self, MlDsa65};

use crate::tx::{Action, Address, SignedTransaction, TxError};
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
    /// A credit would take a balance or stake past `u64::MAX`.
    #[error("a balance or stake would overflow")]
    Overflow,
    /// An action whose rules are not built yet.
    #[error("not built yet: {0}")]
    NotBuilt(&'static str),
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

/// The accounts of one chain, by address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ledger {
    chain_id: u64,
    accounts: BTreeMap<Address, Account>,
}

impl Ledger {
    /// A ledger of chain `chain_id` without accounts.
    pub fn empty(chain_id: u64) -> Ledger {
        Ledger {
            chain_id,
            accounts: BTreeMap::new(),
        }
    }

    /// A ledger of chain `chain_id` whose accounts start with `balances` (the genesis
    /// allocation; an address listed twice gets the sum). Errors: [`ExecError::Overflow`].
    pub fn new(
        chain_id: u64,
        balances: impl IntoIterator<Item = (Address, u64)>,
    ) -> Result<Ledger, ExecError> {
        let mut ledger = Ledger::empty(chain_id);
        for (address, amount) in balances {
            let account = ledger.accounts.entry(address).or_default();
            account.balance = account
                .balance
                .checked_add(amount)
                .ok_or(ExecError::Overflow)?;
        }
        Ok(ledger)
    }

    /// The account at `address`, if it exists.
    pub fn account(&self, address: &Address) -> Option<&Account> {
        self.accounts.get(address)
    }

    /// Every account it holds, in address order.
    pub fn accounts(&self) -> impl Iterator<Item = (&Address, &Account)> {
        self.accounts.iter()
    }

    /// Adds `account` at `address` unless the ledger holds that address already (it then keeps
    /// its own, possibly changed, account); `None` (no such account) adds nothing.
    pub fn load(&mut self, address: Address, account: Option<Account>) {
        if let Some(account) = account {
            self.accounts.entry(address).or_insert(account);
        }
    }

    /// The accounts that applying `tx` reads or writes: its sender, and a transfer's
    /// recipient. A ledger that is one block's working set must hold them (if they exist)
    /// before [`Ledger::apply`].
    pub fn touches(tx: &SignedTransaction) -> impl Iterator<Item = Address> {
        let body = tx.transaction();
        let to = match body.action {
            Action::Transfer { to, .. } if to != body.sender => Some(to),
            _ => None,
        };
        std::iter::once(body.sender).chain(to)
    }

    /// Checks `tx` against the ledger and applies it (steps in the module docs); on an error
    /// nothing changes. Signatures are checked through `cache`, which must be this chain's. An
    /// account the ledger does not hold counts as empty (see [`Ledger::touches`]).
    ///
    /// Errors: [`ExecError`].
    pub fn apply(
        &mut self,
        tx: &SignedTransaction,
        cache: &VerificationCache,
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
        match body.action {
            Action::Transfer { to, amount } => {
                balance = pay(balance, amount)?;
                if to == body.sender {
                    balance = add(balance, amount)?;
                } else {
                    let theirs = self.accounts.get(&to).map_or(0, |a| a.balance);
                    credited = Some((to, add(theirs, amount)?));
                }
            }
            Action::AddStake { amount } => {
                balance = pay(balance, amount)?;
                stake = add(stake, amount)?;
            }
            Action::WithdrawStake { amount } => {
                stake = stake.checked_sub(amount).ok_or(ExecError::Insufficient {
                    needed: amount,
                    available: stake,
                })?;
                balance = add(pay(balance, 0)?, amount)?;
            }
            Action::Leave => {
                return Err(ExecError::NotBuilt(
                    "leaving the validator set needs the validator registry",
                ))
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
        Ok(())
    }
}
