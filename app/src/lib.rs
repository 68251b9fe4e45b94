//! The built-in application of a Quasar chain (docs/architecture.md §1): what a finalized block's
//! transactions mean.
//!
//! This crate is being built in steps (issue 32). What exists:
//!
//! - [`tx`]: transactions (transfers and staking actions), their canonical ZAP encoding and
//!   their ML-DSA-65 signatures (FIPS 204) under a context string that names the chain;
//! - [`verify_cache`]: the verification-result cache, so that a transaction's signature is
//!   checked once per node, not again when its block is verified or executed;
//! - [`ledger`]: accounts (balance, stake, nonce, key) in memory, and the rules by which a
//!   transaction applies to them or is refused without changing anything.
//!
//! Not built yet: authenticated state (a Merkle tree) and the state root in block headers,
//! execution of finalized blocks, the validator registry (register, leave, evidence), the
//! `Application` boundary the consensus runtime calls, and validator-set changes derived from
//! staking state. The node still finalizes transactions as
//! opaque bytes.
//!
//! `fuzzing` (feature `fuzzing`, off in a production build) holds the `app/fuzz` targets' entry
//! points.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod ledger;
pub mod tx;
pub mod verify_cache;

pub use ledger::{Account, ExecError, Ledger};
pub use tx::{
    address_of, signing_context, Action, Address, SignedTransaction, Transaction, TxError,
};
pub use verify_cache::VerificationCache;
