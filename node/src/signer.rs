//! The only place a validator's consensus signatures are made.
//!
//! Every vote and every proposal (whose signature is the leader's notarize vote) passes the
//! [`SigningGuard`] first; the guard makes the decision durable (write + fsync + directory fsync)
//! before this module signs, so a signature never leaves before the record that forbids its
//! conflicting twin (docs/architecture.md §2, §10). A restarted validator reopens the same guard file.
//!
//! The signature itself is made here with the key directory's BLS key ([`VoteKey::Local`]), or,
//! with `signer = "remote"`, by the validator's thresholdd ([`VoteKey::Remote`],
//! [`crate::remote_signer`]), which keeps a guard of its own; either way only after this
//! module's guard has recorded the vote.
//!
//! # Fault injection (tests only, off by default)
//!
//! The riskiest moment for a validator is a crash after the guard has recorded an intent but before
//! the vote left the process: the restarted validator must treat the recorded view as voted even
//! though nobody saw the vote. To exercise that moment on the real binary, a process started with
//! the environment variable [`CRASH_AFTER_GUARD_ENV`]` = N` (an integer in `0..=1000`) aborts
//! ([`std::process::abort`], as abrupt as SIGKILL: no destructors, no flush) with probability
//! `N / 1000` right after the guard answered [`GuardDecision::Fresh`] for a vote or proposal,
//! i.e. after the record is durable and before the signature is returned to the runtime (which
//! would broadcast it). [`GuardDecision::Repeat`] never crashes: nothing new was recorded. The
//! variable is read once per [`VoteSigner::new`]; an unset variable (or `0`) changes nothing, and a
//! value that is not an integer in `0..=1000` is ignored with a WARN log. Used by
//! `node/tests/crash_points.rs`; never set it on a production validator, nor for a process that
//! runs the in-process simulator (its signers read the variable too).

use crate::remote_signer::{RemoteSignError, RemoteSigner};
use quasar_consensus::{ProposalSlot, VerifiedProposal, VerifiedVote};
use quasar_crypto::bls::{PublicKey, SecretKey, Signature};
use quasar_crypto::hash::Hash;
use quasar_storage::{GuardDecision, GuardError, SigningGuard, VoteIntent};
use quasar_wire::{
    payload_root_of_hashes, tx_hash, BlockHeader, EpochDomain, Proposal, Vote, VoteKind,
};
use rand::Rng;

/// Test-only fault injection (module docs): `N` in `0..=1000`; a process with this variable set
/// aborts with probability `N / 1000` between durably recording a fresh guard intent and returning
/// the signature. Unset: no effect.
pub const CRASH_AFTER_GUARD_ENV: &str = "QUASAR_CRASH_AFTER_GUARD_PERMILLE";

/// The crash probability of [`CRASH_AFTER_GUARD_ENV`] in permille, read from the environment:
/// `None` when unset, `0`, or invalid (the latter logged at WARN).
fn crash_after_guard_permille() -> Option<u32> {
    let raw = match std::env::var(CRASH_AFTER_GUARD_ENV) {
        Ok(raw) => raw,
        Err(std::env::VarError::NotPresent) => return None,
        Err(std::env::VarError::NotUnicode(raw)) => {
            tracing::warn!(
                variable = CRASH_AFTER_GUARD_ENV,
                value = ?raw,
                "ignoring fault injection: not an integer in 0..=1000"
            );
            return None;
        }
    };
    match raw.trim().parse::<u32>() {
        Ok(0) => None,
        Ok(permille @ 1..=1000) => {
            tracing::warn!(
                variable = CRASH_AFTER_GUARD_ENV,
                permille,
                "fault injection enabled: this process will abort after some guard records"
            );
            Some(permille)
        }
        _ => {
            tracing::warn!(
                variable = CRASH_AFTER_GUARD_ENV,
                value = %raw,
                "ignoring fault injection: not an integer in 0..=1000"
            );
            None
        }
    }
}

/// A refused or failed signature.
#[derive(Debug, thiserror::Error)]
pub enum SignError {
    /// The guard refused (conflicting or too old) or could not persist; nothing was signed.
    #[error("signing guard refused: {0}")]
    Guard(#[from] GuardError),
    /// This validator is not a member of the epoch's validator set; nothing was signed.
    #[error("not a member of epoch {0}'s validator set")]
    NotMember(u64),
    /// The remote signer (`signer = "remote"`) failed or refused; the local guard has recorded
    /// the vote, so the same vote may be asked again, never a conflicting one.
    #[error("remote signer: {0}")]
    Remote(#[from] RemoteSignError),
}

/// Where a validator's vote key lives.
#[derive(Debug)]
pub enum VoteKey {
    /// In this process (`signer = "local"`, the key directory's BLS key).
    Local(SecretKey),
    /// In the validator's thresholdd (`signer = "remote"`).
    Remote(RemoteSigner),
}

impl From<SecretKey> for VoteKey {
    fn from(key: SecretKey) -> VoteKey {
        VoteKey::Local(key)
    }
}

impl VoteKey {
    /// The key's BLS public key.
    pub fn public_key(&self) -> PublicKey {
        match self {
            VoteKey::Local(key) => key.public_key(),
            VoteKey::Remote(remote) => remote.public_key(),
        }
    }

    /// Signs `vote`'s signing message under `domain`. Errors: [`SignError::Remote`].
    fn sign(&self, vote: &Vote, domain: &EpochDomain) -> Result<Signature, SignError> {
        match self {
            VoteKey::Local(key) => Ok(key.sign(&vote.signing_message(domain))),
            VoteKey::Remote(remote) => Ok(remote.sign_vote(vote, domain)?),
        }
    }
}

/// Signs this validator's votes and proposals behind its signing guard.
///
/// Test-only fault injection: with [`CRASH_AFTER_GUARD_ENV`] set in the process environment, the
/// signer may abort the process between the durable guard record and the signature (module docs).
pub struct VoteSigner {
    key: VoteKey,
    /// This validator's index in the current epoch's set; `None` while it is not a member.
    index: Option<u32>,
    chain_id: u64,
    epoch: u64,
    domain: EpochDomain,
    guard: SigningGuard,
    /// Fault injection: abort with this probability (permille) after a fresh guard record.
    crash_after_guard: Option<u32>,
}

impl std::fmt::Debug for VoteSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VoteSigner")
            .field("index", &self.index)
            .field("crash_after_guard", &self.crash_after_guard)
            .finish_non_exhaustive()
    }
}

/// The signing guard's name for a wire vote kind.
pub(crate) fn guard_kind(kind: VoteKind) -> quasar_storage::VoteKind {
    match kind {
        VoteKind::Notarize => quasar_storage::VoteKind::Notarize,
        VoteKind::Finalize => quasar_storage::VoteKind::Finalize,
        VoteKind::Nullify => quasar_storage::VoteKind::Nullify,
    }
}

impl VoteSigner {
    /// A signer with `key` (a local [`SecretKey`] or a [`RemoteSigner`]) for validator `index`
    /// of `chain_id`/`epoch`, whose finalize votes sign μ under `domain`. Reads [`CRASH_AFTER_GUARD_ENV`] once (test-only fault injection, module docs;
    /// no effect when unset).
    pub fn new(
        key: impl Into<VoteKey>,
        index: u32,
        chain_id: u64,
        epoch: u64,
        domain: EpochDomain,
        guard: SigningGuard,
    ) -> VoteSigner {
        VoteSigner {
            key: key.into(),
            index: Some(index),
            chain_id,
            epoch,
            domain,
            guard,
            crash_after_guard: crash_after_guard_permille(),
        }
    }

    /// The signing guard (the fuzzing harness records its memoized votes through this).
    pub fn guard_mut(&mut self) -> &mut SigningGuard {
        &mut self.guard
    }

    /// This validator's index in the current epoch's set (`None`: not a member).
    pub fn index(&self) -> Option<u32> {
        self.index
    }

    /// The epoch this signer signs in ([`VoteSigner::enter_epoch`]).
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The highest fenced view the signing guard holds ([`SigningGuard::fenced_view`]).
    pub fn fenced_view(&self) -> u64 {
        self.guard.fenced_view()
    }

    /// Whether the signing guard holds exactly `intent` (this key signed it since the guard's
    /// record began; [`SigningGuard::recorded`]).
    pub fn recorded(&self, intent: &VoteIntent) -> bool {
        self.guard.recorded(intent)
    }

    /// The BLS public key of this validator's signing key.
    pub fn public_key(&self) -> PublicKey {
        self.key.public_key()
    }

    /// Signs in `epoch` from now on, as validator `index` of its set (`None`: not a member, so
    /// nothing is signed), binding `domain` (the engine moves on when an epoch's boundary block
    /// is final). The signing guard still refuses views below its highest record, and a later
    /// epoch's views are all higher ([`quasar_consensus::epoch`]).
    pub fn enter_epoch(&mut self, epoch: u64, index: Option<u32>, domain: EpochDomain) {
        self.epoch = epoch;
        self.index = index;
        self.domain = domain;
    }

    /// Fences `view` in the signing guard (durably): nothing more is signed in it
    /// ([`SigningGuard::fence`]; view 0 fences nothing). With a remote key, the guard's fenced
    /// view then goes to the daemon's guard before the next vote
    /// ([`RemoteSigner::fence_before_signing`]), which lets a new daemon guard sign. Errors:
    /// [`SignError::Guard`] when the record cannot be made durable (nothing goes to the daemon).
    pub fn fence(&mut self, view: u64) -> Result<(), SignError> {
        if view > 0 {
            self.guard.fence(view)?;
        }
        if let VoteKey::Remote(remote) = &self.key {
            remote.fence_before_signing(self.guard.fenced_view());
        }
        Ok(())
    }

    /// The highest view the guard has a record for (where a restarted validator resumes).
    pub fn highest_view(&self) -> u64 {
        self.guard.highest_view()
    }

    /// Fault injection ([`CRASH_AFTER_GUARD_ENV`]): aborts the process with the configured
    /// probability. Called only after the guard made a fresh record durable and before signing.
    fn maybe_crash_after_guard(&self, kind: VoteKind, view: u64) {
        let Some(permille) = self.crash_after_guard else {
            return;
        };
        if rand::thread_rng().gen_range(0..1000u32) < permille {
            tracing::error!(
                view,
                ?kind,
                permille,
                "fault injection: crashing after the guard record"
            );
            std::process::abort();
        }
    }

    /// Records the intent durably, then signs the vote (with a remote key: one blocking call
    /// to the daemon). Errors: [`SignError::Guard`]; [`SignError::NotMember`] outside the
    /// epoch's set (nothing recorded); [`SignError::Remote`] (recorded, not signed).
    pub fn sign_vote(
        &mut self,
        kind: VoteKind,
        view: u64,
        height: u64,
        block: Hash,
    ) -> Result<(VerifiedVote, GuardDecision), SignError> {
        let signer = self.index.ok_or(SignError::NotMember(self.epoch))?;
        let decision = self.guard.check_and_record(&VoteIntent {
            view,
            kind: guard_kind(kind),
            block,
        })?;
        if decision == GuardDecision::Fresh {
            self.maybe_crash_after_guard(kind, view);
        }
        let mut vote = Vote {
            kind,
            chain_id: self.chain_id,
            epoch: self.epoch,
            view,
            height,
            block,
            signer,
            signature: [0; 96],
        };
        let signature = self.key.sign(&vote, &self.domain)?;
        vote.signature = signature.to_bytes();
        Ok((VerifiedVote::signed_locally(vote, signature), decision))
    }

    /// Builds the block for `slot` with `txs`, the state root after them (the application's,
    /// [`quasar_consensus::Application::propose`]) and timestamp `max(now_us, parent timestamp + 1)`,
    /// records a notarize intent for it durably, then signs it (the proposal's signature is our
    /// notarize vote). Errors: [`SignError::Guard`]; [`SignError::NotMember`];
    /// [`SignError::Remote`].
    pub fn sign_block(
        &mut self,
        slot: &ProposalSlot,
        txs: Vec<Vec<u8>>,
        state_root: Hash,
        now_us: u64,
    ) -> Result<VerifiedProposal, SignError> {
        let tx_hashes = txs.iter().map(|tx| tx_hash(tx)).collect();
        self.sign_hashed_block(slot, txs, tx_hashes, state_root, now_us)
    }

    /// [`VoteSigner::sign_block`] of transactions the caller hashed already: `tx_hashes` holds
    /// the [`quasar_wire::tx_hash`] of each of `txs`, in order (the application's
    /// [`quasar_consensus::Payload::tx_hashes`]). Errors: as [`VoteSigner::sign_block`].
    pub fn sign_hashed_block(
        &mut self,
        slot: &ProposalSlot,
        txs: Vec<Vec<u8>>,
        tx_hashes: Vec<Hash>,
        state_root: Hash,
        now_us: u64,
    ) -> Result<VerifiedProposal, SignError> {
        let proposer = self.index.ok_or(SignError::NotMember(self.epoch))?;
        let header = BlockHeader {
            chain_id: self.chain_id,
            epoch: self.epoch,
            view: slot.view,
            height: slot.height,
            parent_view: slot.parent_view,
            parent: slot.parent,
            proposer,
            timestamp_us: now_us.max(slot.parent_timestamp_us.saturating_add(1)),
            payload_root: payload_root_of_hashes(&tx_hashes),
            state_root,
        };
        self.sign_proposal(header, txs, tx_hashes)
    }

    /// Signs `proposal` again: the block this validator proposed in its view before a restart
    /// (the guard's notarize record for the view, [`VoteSigner::notarized`], names its hash, so
    /// the guard answers [`GuardDecision::Repeat`] and the identical proposal goes out again).
    /// Errors: as [`VoteSigner::sign_block`]; [`SignError::Guard`] when the proposal is not the
    /// one recorded for its view.
    pub fn resign_proposal(&mut self, proposal: Proposal) -> Result<VerifiedProposal, SignError> {
        let tx_hashes = proposal.txs.iter().map(|tx| tx_hash(tx)).collect();
        self.sign_proposal(proposal.header, proposal.txs, tx_hashes)
    }

    /// The block this validator's guard recorded a notarize vote for in `view` (its own proposal
    /// when it leads the view), if any.
    pub fn notarized(&self, view: u64) -> Option<Hash> {
        self.guard.notarized(view)
    }

    /// Records the leader's notarize intent for `header` durably, then signs the proposal.
    fn sign_proposal(
        &mut self,
        header: BlockHeader,
        txs: Vec<Vec<u8>>,
        tx_hashes: Vec<Hash>,
    ) -> Result<VerifiedProposal, SignError> {
        let hash = header.hash();
        let (vote, _) = self.sign_vote(VoteKind::Notarize, header.view, header.height, hash)?;
        let proposal = Proposal {
            header,
            txs,
            signature: vote.vote().signature,
        };
        Ok(VerifiedProposal::signed_locally(
            proposal,
            tx_hashes,
            *vote.signature(),
        ))
    }
}
