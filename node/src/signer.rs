//! The only place a validator's consensus signatures are made.
//!
//! Every vote and every proposal (whose signature is the leader's notarize vote) passes the
//! [`SigningGuard`] first; the guard makes the decision durable (write + fsync + directory fsync)
//! before this module signs, so a signature never leaves before the record that forbids its
//! conflicting twin (DESIGN.md §2, §9). A restarted validator reopens the same guard file.

use crate::consensus::{ProposalSlot, VerifiedProposal, VerifiedVote};
use quasar_crypto::bls::SecretKey;
use quasar_crypto::hash::Hash;
use quasar_storage::{GuardDecision, GuardError, SigningGuard, VoteIntent};
use quasar_wire::{payload_root, BlockHeader, Proposal, Vote, VoteKind};

/// A refused or failed signature.
#[derive(Debug, thiserror::Error)]
pub enum SignError {
    /// The guard refused (conflicting or too old) or could not persist; nothing was signed.
    #[error("signing guard refused: {0}")]
    Guard(#[from] GuardError),
}

/// Signs this validator's votes and proposals behind its signing guard.
pub struct VoteSigner {
    key: SecretKey,
    index: u32,
    chain_id: u64,
    epoch: u64,
    guard: SigningGuard,
}

impl std::fmt::Debug for VoteSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VoteSigner")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

fn guard_kind(kind: VoteKind) -> quasar_storage::VoteKind {
    match kind {
        VoteKind::Notarize => quasar_storage::VoteKind::Notarize,
        VoteKind::Finalize => quasar_storage::VoteKind::Finalize,
        VoteKind::Nullify => quasar_storage::VoteKind::Nullify,
    }
}

impl VoteSigner {
    /// A signer for validator `index` of `chain_id`/`epoch`.
    pub fn new(
        key: SecretKey,
        index: u32,
        chain_id: u64,
        epoch: u64,
        guard: SigningGuard,
    ) -> VoteSigner {
        VoteSigner {
            key,
            index,
            chain_id,
            epoch,
            guard,
        }
    }

    /// Hands the guard over (leaving an empty in-memory one), as a crashed process leaves its
    /// guard file to its successor. Used by the simulator's restart.
    pub fn take_guard(&mut self) -> SigningGuard {
        std::mem::replace(&mut self.guard, SigningGuard::in_memory())
    }

    /// This validator's index.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// The highest view the guard has a record for (where a restarted validator resumes).
    pub fn highest_view(&self) -> u64 {
        self.guard.highest_view()
    }

    /// Records the intent durably, then signs the vote. Errors: [`SignError::Guard`].
    pub fn sign_vote(
        &mut self,
        kind: VoteKind,
        view: u64,
        height: u64,
        block: Hash,
    ) -> Result<(VerifiedVote, GuardDecision), SignError> {
        let decision = self.guard.check_and_record(&VoteIntent {
            view,
            kind: guard_kind(kind),
            block,
        })?;
        let mut vote = Vote {
            kind,
            chain_id: self.chain_id,
            epoch: self.epoch,
            view,
            height,
            block,
            signer: self.index,
            signature: [0; 96],
        };
        let signature = self.key.sign(&vote.signing_message());
        vote.signature = signature.to_bytes();
        Ok((VerifiedVote::signed_locally(vote, signature), decision))
    }

    /// Builds the block for `slot` with `txs` and timestamp `max(now_us, parent timestamp + 1)`,
    /// records a notarize intent for it durably, then signs it (the proposal's signature is our
    /// notarize vote). Errors: [`SignError::Guard`].
    pub fn sign_block(
        &mut self,
        slot: &ProposalSlot,
        txs: Vec<Vec<u8>>,
        now_us: u64,
    ) -> Result<VerifiedProposal, SignError> {
        let header = BlockHeader {
            chain_id: self.chain_id,
            epoch: self.epoch,
            view: slot.view,
            height: slot.height,
            parent_view: slot.parent_view,
            parent: slot.parent,
            proposer: self.index,
            timestamp_us: now_us.max(slot.parent_timestamp_us.saturating_add(1)),
            payload_root: payload_root(txs.iter().map(Vec::as_slice)),
        };
        let hash = header.hash();
        let (vote, _) = self.sign_vote(VoteKind::Notarize, header.view, header.height, hash)?;
        let proposal = Proposal {
            header,
            txs,
            signature: vote.vote().signature,
        };
        Ok(VerifiedProposal::signed_locally(
            proposal,
            *vote.signature(),
        ))
    }
}
