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
//! [`ExecError::NotBuilt`] until the validator registry exists (issue 32). The ledger lives in
//! memory: authenticated state (a Merkle tree and its root in block headers) is the next step.

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

/// The accounts of one chain, by address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ledger {
    chain_id: u64,
    accounts: BTreeMap<Address, Account>,
}

impl Ledger {
    /// A ledger of chain `chain_id` whose accounts start with `balances` (the genesis
    /// allocation; an address listed twice gets the sum). Errors: [`ExecError::Overflow`].
    pub fn new(
        chain_id: u64,
        balances: impl IntoIterator<Item = (Address, u64)>,
    ) -> Result<Ledger, ExecError> {
        let mut accounts: BTreeMap<Address, Account> = BTreeMap::new();
        for (address, amount) in balances {
            let account = accounts.entry(address).or_default();
            account.balance = account
                .balance
                .checked_add(amount)
                .ok_or(ExecError::Overflow)?;
        }
        Ok(Ledger { chain_id, accounts })
    }

    /// The account at `address`, if it exists.
    pub fn account(&self, address: &Address) -> Option<&Account> {
        self.accounts.get(address)
    }

    /// Checks `tx` against the ledger and applies it (steps in the module docs); on an error
    /// nothing changes. Signatures are checked through `cache`, which must be this chain's.
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
