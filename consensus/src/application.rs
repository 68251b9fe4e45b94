//! The boundary between consensus and execution (docs/architecture.md §1 "Ray", §11).
//!
//! Consensus orders blocks and never looks inside a transaction; an [`Application`] says what a
//! block's transactions do. The node's engine calls it at four points:
//!
//! - **propose**: the leader's block gets the transactions the application keeps from the
//!   mempool's candidates, and the state root they give ([`Application::propose`]);
//! - **verify**: before a validator notarizes a proposal, the application executes it on its
//!   parent's state and compares the root with the header's ([`Application::verify`], the
//!   core's [`crate::Action::Verify`]); a block whose root differs is never notarized by this
//!   validator, and the divergence is logged with both roots;
//! - **commit**: each finalized block, in height order, becomes the application's committed
//!   state ([`Application::finalize`], then [`Application::commit`] once the block store is
//!   durable);
//! - **skip**: a checkpoint (an epoch transition taken without the pruned blocks below it)
//!   leaves the application without the skipped blocks' state ([`Application::skip`]);
//! - **restore**: the node restored the state of a later finalized block from its peers
//!   ([`Application::restored`]), and the application executes again from there.
//!
//! The state after a block is keyed by the block's hash: forks above the finalized tip each
//! have their own, and the ones finalization abandons are dropped.

use quasar_crypto::hash::Hash;
use quasar_wire::Proposal;

/// A block's payload as the application built it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payload {
    /// The transactions, in block order.
    pub txs: Vec<Vec<u8>>,
    /// [`quasar_wire::tx_hash`] of each transaction, in the same order (the payload root's
    /// leaves).
    pub tx_hashes: Vec<Hash>,
    /// The state root after them (the header's `state_root`).
    pub state_root: Hash,
    /// Indices (in the candidates) of transactions the application refuses for good on the
    /// parent's state (they do not decode, their signature does not verify, their nonce is
    /// used, the sender cannot pay): the mempool drops them.
    pub invalid: Vec<usize>,
}

/// Why the application refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The block is invalid: a transaction does not decode or apply. Not notarized.
    #[error("block {} at height {height} is invalid: {reason}", hex::encode(&block[..8]))]
    Invalid {
        /// The block.
        block: Hash,
        /// Its height.
        height: u64,
        /// What is wrong.
        reason: String,
    },
    /// Execution gives another state root than the header claims. Not notarized; for a
    /// finalized block this node's state diverged from the network's, and it must stop.
    #[error(
        "state root mismatch at height {height} (block {}): the header claims {}, execution \
         gives {}",
        hex::encode(&block[..8]),
        hex::encode(claimed),
        hex::encode(computed)
    )]
    RootMismatch {
        /// The block.
        block: Hash,
        /// Its height.
        height: u64,
        /// The header's root.
        claimed: Hash,
        /// The root execution gives.
        computed: Hash,
    },
    /// The state after the block's parent is not at hand (not executed here, or skipped by a
    /// checkpoint and not restored yet).
    #[error("the state after block {} (height {height}) is not at hand: {why}", hex::encode(&parent[..8]))]
    NoState {
        /// The parent block.
        parent: Hash,
        /// The parent's height.
        height: u64,
        /// Why.
        why: String,
    },
    /// The application's storage failed: fatal to the validator.
    #[error("application storage: {0}")]
    Storage(String),
}

/// What a chain's blocks mean; see the module docs. Called by one thread (the validator's
/// engine), in the order the module docs give.
pub trait Application {
    /// The height of the last committed block (0: genesis) and the state root after it.
    fn committed(&self) -> (u64, Hash);

    /// Whether the state after block `block` (at `height`) is at hand: the committed block or
    /// one executed since by [`Application::propose`], [`Application::verify`] or
    /// [`Application::finalize`].
    fn has_state(&self, block: &Hash, height: u64) -> bool;

    /// Builds the payload of a new block at `height` on `parent` (whose state is at hand) from
    /// `candidates`, in their order, keeping each that applies after those kept before it,
    /// up to the application's block size limit. The state after the new block is kept once
    /// the block is signed and has a hash ([`Application::adopt`]).
    ///
    /// Errors: [`AppError::NoState`], [`AppError::Storage`].
    fn propose(
        &mut self,
        parent: &Hash,
        height: u64,
        candidates: &[Vec<u8>],
    ) -> Result<Payload, AppError>;

    /// Keeps the state of the payload [`Application::propose`] built last as the state after
    /// `block`, the proposal signed with it.
    fn adopt(&mut self, block: &Hash);

    /// Executes `proposal` (hash `block`, transaction hashes `tx_hashes`: the leaves of its
    /// verified payload root, [`crate::VerifiedProposal::tx_hashes`]) on its parent's state (at
    /// hand) and checks the header's state root; keeps the result as the state after `block`.
    ///
    /// Errors: [`AppError::Invalid`], [`AppError::RootMismatch`], [`AppError::NoState`],
    /// [`AppError::Storage`].
    fn verify(
        &mut self,
        block: &Hash,
        proposal: &Proposal,
        tx_hashes: &[Hash],
    ) -> Result<(), AppError>;

    /// Block `block` (transaction hashes `tx_hashes`, as for [`Application::verify`]) is final
    /// (height order, each on the one before): executes it unless it was, checks its root, and
    /// keeps it for [`Application::commit`].
    ///
    /// Errors: as [`Application::verify`]; any error here is fatal (the node's state cannot
    /// follow the finalized chain).
    fn finalize(
        &mut self,
        block: &Hash,
        proposal: &Proposal,
        tx_hashes: &[Hash],
    ) -> Result<(), AppError>;

    /// Writes the finalized blocks kept by [`Application::finalize`] (the block store holding
    /// them is durable) and drops the state of blocks that can no longer be finalized.
    ///
    /// Errors: [`AppError::Storage`] (fatal).
    fn commit(&mut self) -> Result<(), AppError>;

    /// The finalized chain moved to `height` through a checkpoint, without the blocks below:
    /// their state is unknown here. `state_proof` is what the checkpoint carried for the
    /// application ([`crate::Checkpoint::state_proof`]), to be checked against `state_root`
    /// (the boundary's, certified); one that does not hold is logged and left unused.
    fn skip(&mut self, block: &Hash, height: u64, state_root: &Hash, state_proof: &[u8]);

    /// The state after finalized block `height` was restored into the application's store from
    /// peers, after a [`Application::skip`]: reads it, and executes again from there (the
    /// finalized blocks above `height` follow through [`Application::finalize`]).
    ///
    /// Errors: [`AppError::Storage`] when the store does not hold that version (fatal).
    fn restored(&mut self, height: u64) -> Result<(), AppError>;
}
