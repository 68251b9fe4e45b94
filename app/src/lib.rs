//! The built-in application of a Quasar chain (docs/architecture.md §1, §11): what a block's
//! transactions mean.
//!
//! This crate is being built in steps (issue 32). What exists:
//!
//! - [`tx`]: transactions (transfers and staking actions), their canonical ZAP encoding and
//!   their ML-DSA-65 signatures (FIPS 204) under a context string that names the chain;
//! - [`verify_cache`]: the verification-result cache, so that a transaction's signature is
//!   checked once per node, not again when its block is verified or executed;
//! - [`ledger`]: accounts (balance, stake, nonce, key), and the rules by which a transaction
//!   applies to them or is refused without changing anything;
//! - [`registry`]: the validator registry (`RegisterValidator`, `Leave`, the bonded stake,
//!   slashing by `ReportEquivocation`) and the validator set it gives;
//! - [`state`]: the accounts and the registry in a Jellyfish Merkle tree stored in sled, one
//!   version per block;
//!   executing a block on top of its not-yet-final ancestors in memory, committing it when
//!   final, proposing a block's transactions, and account proofs against a state root.
//!
//! The node runs it behind the consensus `Application` boundary (`quasar_node::application`),
//! with the state root in every block header (docs/architecture.md §11).
//!
//! Not built yet: the node's use of the registry: validator sets of later epochs derived from
//! it (docs/architecture.md §11).
//!
//! `fuzzing` (feature `fuzzing`, off in a production build) holds the `app/fuzz` targets' entry
//! points.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod ledger;
pub mod registry;
pub mod snapshot;
pub mod state;
pub mod tx;
pub mod verify_cache;

pub use ledger::{Account, AccountDecodeError, AccountLeaf, ExecError, GenesisValidator, Ledger};
pub use registry::{
    select_validators, ChainRules, EpochSet, EvidenceCheck, NetworkRoster, NoEvidence, Offence,
    RegisteredValidator, Registration, SetMember, ValidatorKeys, ValidatorRecord, ValidatorStatus,
};
pub use state::{
    check_committed, committed_account, prove_account, prove_epoch_set, proven_epoch_set,
    proven_epoch_set_message, read_epoch_set, read_registry, AccountProof, Executed, ProofError,
    Proposed, SetProofError, State, StateError,
};
pub use tx::{
    address_of, signing_context, Action, Address, SignedTransaction, Transaction, TxError,
};
pub use verify_cache::VerificationCache;
