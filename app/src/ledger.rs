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
        let sender = self.accounts.get(&body.sender).cloned().unwrap_or_default();
        let key = match (&body.public_key, &sender.public_key) {
            (Some(_), Some(_)) => return Err(ExecError::KeyAlreadyKnown { address: address() }),
            (None, None) => return Err(ExecError::UnknownKey { address: address() }),
            (Some(carried), None) | (None, Some(carried)) => carried.clone(),
        };
        cache.verify(tx, &key)?;
        if body.nonce != sender.nonce {
            return Err(ExecError::Nonce {
                expected: sender.nonce,
                found: body.nonce,
            });
        }
        let mut next = sender;
        next.public_key = Some(key);
        next.nonce = next.nonce.checked_add(1).ok_or(ExecError::Overflow)?;
        let pay = |balance: u64, amount: u64| {
            let needed = amount.checked_add(body.fee).ok_or(ExecError::Overflow)?;
            balance.checked_sub(needed).ok_or(ExecError::Insufficient {
                needed,
                available: balance,
            })
        };
        let mut credit = None;
        match body.action {
            Action::Transfer { to, amount } => {
                next.balance = pay(next.balance, amount)?;
                credit = Some((to, amount));
            }
            Action::AddStake { amount } => {
                next.balance = pay(next.balance, amount)?;
                next.stake = next.stake.checked_add(amount).ok_or(ExecError::Overflow)?;
            }
            Action::WithdrawStake { amount } => {
                next.stake = next
                    .stake
                    .checked_sub(amount)
                    .ok_or(ExecError::Insufficient {
                        needed: amount,
                        available: next.stake,
                    })?;
                next.balance = pay(next.balance, 0)?;
                next.balance = next
                    .balance
                    .checked_add(amount)
                    .ok_or(ExecError::Overflow)?;
            }
            Action::Leave => {
                return Err(ExecError::NotBuilt(
                    "leaving the validator set needs the validator registry",
                ))
            }
        }
        // A transfer to oneself credits the account just debited.
        if let Some((to, amount)) = credit {
            if to == body.sender {
                next.balance = next
                    .balance
                    .checked_add(amount)
                    .ok_or(ExecError::Overflow)?;
            } else {
                let mut recipient = self.accounts.get(&to).cloned().unwrap_or_default();
                recipient.balance = recipient
                    .balance
                    .checked_add(amount)
                    .ok_or(ExecError::Overflow)?;
                self.accounts.insert(to, recipient);
            }
        }
        self.accounts.insert(body.sender, next);
        Ok(())
    }
}
