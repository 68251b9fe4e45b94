//! Storage of a Quasar validator (docs/architecture.md §1, §6).
//!
//! Two independent components:
//!
//! - [`store`]: the [`Store`] trait and its sled backend [`SledStore`]: finalized blocks by hash and
//!   height, the certificate that finalized each height, the tx-hash index, notarized-but-not-yet-
//!   finalized blocks, and the finalized pointer. Storage is byte-oriented: it never decodes blocks or
//!   certificates. Any storage error is fatal to the node: a validator that cannot
//!   persist cannot promise what it signed.
//!   The encoded blocks themselves are files beside sled's index (`block_files`: sled rewrites
//!   the leaves that hold its values, and a block is megabytes).
//! - [`guard`]: the [`SigningGuard`], the tiny durable record that decides whether a consensus vote
//!   may be signed, kept in its own fsync'd file because sled's flush is not durable enough for it.
//! - [`state`]: [`StateStore`], the bytes of the application's authenticated state (a versioned
//!   Merkle tree, one version per block) in the same sled database, written one version at a
//!   time in one atomic batch.
//! - [`evidence`]: [`EvidenceRecord`], durable and bounded proof of equivocation (both signed
//!   messages), kept in the store's `evidence` tree.
//! - `fuzzing` (feature `fuzzing`, off in a production build): the signing-guard file decoder's
//!   fuzz entry point (`storage/fuzz`).
//! - [`sim`]: [`SimStore`], the sled store behind a simulated disk with injectable faults (failed
//!   write, failed fsync, torn or lost unflushed writes on crash), for the simulator.
//!
//! This crate depends only on `quasar-crypto` (for [`quasar_crypto::hash::Hash`] and SHA3-256),
//! sled, and `tempfile` (the block files of a temporary store).
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

mod block_files;
pub mod evidence;
// Fuzz entry points panic by contract when a property breaks (module docs).
#[allow(clippy::panic)]
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod guard;
pub mod sim;
pub mod state;
pub mod store;

pub use evidence::{EvidenceError, EvidenceRecord};
pub use guard::*;
pub use sim::{Crash, SimGuardDir, SimStore};
pub use state::{StateBatch, StateStore};
pub use store::*;
