//! Turning unverified wire messages into the checked types the core accepts.
//!
//! Bytes from the network decode into `quasar_wire` structs, which say nothing about validity.
//! Only a [`Verifier`] produces [`VerifiedProposal`], [`VerifiedVote`] and [`VerifiedCertificate`]:
//! the chain id and epoch match, the signer is a member, the signature (or the aggregate and its
//! quorum) verifies, and for proposals the proposer is the view's leader and the payload root
//! matches the transactions. Verification is pure CPU work with no shared state, so the runtime
//! runs it off the core's thread.

use super::epoch::{EpochMembers, EpochSchedule, EpochSets};
use super::leader::leader;
use quasar_crypto::bls::{batch_verify, BlsError, PublicKey, Signature};
use quasar_crypto::hash::Hash;
use quasar_lanes::{bls as bls_lane, LaneError, ValidatorSet};
use quasar_wire::{
    payload_root_of_hashes, tx_hash, Certificate, CertificateKind, EpochDomain, Proposal, Vote,
    VoteKind,
};
use std::sync::Arc;

/// Why a message was rejected before reaching the core. Every variant means: drop the message; a
/// peer that sends many of them is misbehaving, but none is fatal to the node.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// The message is for another chain.
    #[error("chain id {got} is not this chain's {expected}")]
    WrongChain { expected: u64, got: u64 },
    /// The message is for an epoch this chain's schedule does not have.
    #[error("epoch {0} is not an epoch of this chain")]
    UnknownEpoch(u64),
    /// The epoch's validator set is not decided yet here: it comes from the state at the
    /// boundary block two epochs before, which this node has not executed (docs/architecture.md
    /// §11). Not the sender's fault; the message may verify later.
    #[error("the validator set of epoch {0} is not known here yet")]
    SetNotKnown(u64),
    /// The message's view is not one of its epoch's views.
    #[error("view {view} is not a view of epoch {epoch}")]
    ViewOutsideEpoch { epoch: u64, view: u64 },
    /// The signer or proposer index is not in the validator set.
    #[error("index {0} is not a validator")]
    UnknownValidator(u32),
    /// The proposal's proposer is not the leader of its view.
    #[error("proposer {proposer} is not the leader {leader} of view {view}")]
    NotLeader {
        view: u64,
        proposer: u32,
        leader: u32,
    },
    /// View 0 is the genesis view; nothing is proposed or voted in it.
    #[error("view 0 is reserved for genesis")]
    GenesisView,
    /// Height and parent fields disagree with each other.
    #[error("inconsistent header: {0}")]
    BadHeader(&'static str),
    /// The payload root does not commit to the transactions.
    #[error("payload root does not match the transactions")]
    PayloadRoot,
    /// The block carries more transactions or bytes than the chain allows.
    #[error("block exceeds limits: {0}")]
    BlockTooLarge(&'static str),
    /// Nullify votes carry height 0 and a zero block hash; other votes a nonzero height.
    #[error("vote fields inconsistent with its kind")]
    BadVoteFields,
    /// A signature failed to decode or to verify.
    #[error("signature rejected: {0}")]
    Signature(#[from] BlsError),
    /// A certificate's bitmap, quorum or aggregate was rejected.
    #[error("certificate rejected: {0}")]
    Certificate(#[from] LaneError),
}

/// A vote whose signer is a member and whose signature verifies over its signing message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedVote {
    vote: Vote,
    signature: Signature,
}

impl VerifiedVote {
    /// A vote this node signed itself, after its signing guard allowed it. Trusted without a
    /// pairing check because the signature was just produced by the node's own key.
    pub fn signed_locally(vote: Vote, signature: Signature) -> VerifiedVote {
        VerifiedVote { vote, signature }
    }

    /// The vote as it travels on the wire.
    pub fn vote(&self) -> &Vote {
        &self.vote
    }

    /// The decoded, subgroup-checked signature (ready to aggregate).
    pub fn signature(&self) -> &Signature {
        &self.signature
    }
}

/// A proposal from the view's leader with a valid signature and payload root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedProposal {
    proposal: Proposal,
    hash: Hash,
    /// [`quasar_wire::tx_hash`] of each transaction, in block order (the payload root's leaves,
    /// kept so no later stage hashes a transaction again).
    tx_hashes: Vec<Hash>,
    leader_vote: VerifiedVote,
}

impl VerifiedProposal {
    /// A proposal this node built and signed itself (its signature is its own notarize vote);
    /// `tx_hashes` are the [`quasar_wire::tx_hash`] of its transactions, in order, from which
    /// the node computed the header's payload root.
    pub fn signed_locally(
        proposal: Proposal,
        tx_hashes: Vec<Hash>,
        signature: Signature,
    ) -> VerifiedProposal {
        let hash = proposal.header.hash();
        let leader_vote = VerifiedVote::signed_locally(proposer_vote(&proposal, &hash), signature);
        VerifiedProposal {
            proposal,
            hash,
            tx_hashes,
            leader_vote,
        }
    }

    /// [`quasar_wire::tx_hash`] of each transaction, in block order.
    pub fn tx_hashes(&self) -> &[Hash] {
        &self.tx_hashes
    }

    /// The proposal.
    pub fn proposal(&self) -> &Proposal {
        &self.proposal
    }

    /// The block hash (`BlockHeader::hash`).
    pub fn hash(&self) -> &Hash {
        &self.hash
    }

    /// The leader's notarize vote that the proposal signature constitutes.
    pub fn leader_vote(&self) -> &VerifiedVote {
        &self.leader_vote
    }
}

/// A certificate whose bitmap is canonical, whose signers hold a quorum and whose aggregate
/// verifies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedCertificate {
    certificate: Certificate,
    signers: Vec<usize>,
}

impl VerifiedCertificate {
    /// A certificate this node aggregated itself from verified votes.
    pub fn aggregated_locally(
        certificate: Certificate,
        signers: Vec<usize>,
    ) -> VerifiedCertificate {
        VerifiedCertificate {
            certificate,
            signers,
        }
    }

    /// The certificate.
    pub fn certificate(&self) -> &Certificate {
        &self.certificate
    }

    /// Distinct signer indices, ascending.
    pub fn signers(&self) -> &[usize] {
        &self.signers
    }
}

/// The notarize vote a proposal carries: its signature is its proposer's notarize vote on the
/// block (the header hash `hash`), so two proposals of one view are two notarize votes of one
/// validator for different blocks.
pub fn proposer_vote(proposal: &Proposal, hash: &Hash) -> Vote {
    let h = &proposal.header;
    Vote {
        kind: VoteKind::Notarize,
        chain_id: h.chain_id,
        epoch: h.epoch,
        view: h.view,
        height: h.height,
        block: *hash,
        signer: h.proposer,
        signature: proposal.signature,
    }
}

/// Limits a block must respect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockLimits {
    /// Most transactions in one block.
    pub max_txs: usize,
    /// Most transaction bytes in one block.
    pub max_bytes: usize,
}

/// Checks messages of every epoch of the chain's schedule, each against its own epoch's
/// validator set and domain ([`EpochSets`]). The epoch a message names must be one of the
/// schedule's and its view one of that epoch's views; which epoch the node is in is the core's
/// business (it ignores other epochs' messages).
#[derive(Clone)]
pub struct Verifier {
    sets: EpochSets,
    genesis: Hash,
    chain_id: u64,
    schedule: EpochSchedule,
    limits: BlockLimits,
    /// Where a proposal's transactions may already have their hashes ([`KnownTxs`]).
    known: Option<Arc<dyn KnownTxs>>,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("chain_id", &self.chain_id)
            .field("genesis", &hex::encode(self.genesis))
            .field("schedule", &self.schedule)
            .field("limits", &self.limits)
            .field("known_txs", &self.known.is_some())
            .finish_non_exhaustive()
    }
}

/// Transactions whose [`tx_hash`] this node computed already (a node's mempool, which hashed
/// each when it admitted it): [`Verifier::verify_proposal`] takes a proposal's payload-root
/// leaves from here instead of hashing each transaction again (SHA3-256 over a 3.4 KB
/// transfer is about 10 µs, a fifth of its signature check).
pub trait KnownTxs: Send + Sync {
    /// For each of `txs`, its [`tx_hash`] when this holds exactly those bytes; `None`
    /// otherwise (the verifier hashes it). An answer for other bytes than the ones asked
    /// about would break the payload root's check: compare the bytes, not a digest of them.
    fn hashes(&self, txs: &[Vec<u8>]) -> Vec<Option<Hash>>;
}

impl Verifier {
    /// A verifier for `chain_id` with one validator set and epoch domain (the validator-set root
    /// and profile id that finalize votes sign inside μ) for every epoch.
    pub fn new(
        validators: Arc<ValidatorSet>,
        genesis: Hash,
        chain_id: u64,
        schedule: EpochSchedule,
        domain: EpochDomain,
        limits: BlockLimits,
    ) -> Verifier {
        let sets = EpochSets::fixed(EpochMembers { validators, domain });
        Verifier::with_sets(sets, genesis, chain_id, schedule, limits)
    }

    /// A verifier for `chain_id` whose validator set and domain change at epoch boundaries as
    /// `sets` says.
    pub fn with_sets(
        sets: EpochSets,
        genesis: Hash,
        chain_id: u64,
        schedule: EpochSchedule,
        limits: BlockLimits,
    ) -> Verifier {
        Verifier {
            sets,
            genesis,
            chain_id,
            schedule,
            limits,
            known: None,
        }
    }

    /// This verifier, taking the hashes of a proposal's transactions from `known` where it has
    /// them ([`KnownTxs`]).
    pub fn with_known_txs(mut self, known: Arc<dyn KnownTxs>) -> Verifier {
        self.known = Some(known);
        self
    }

    /// The validator sets of every epoch.
    pub fn sets(&self) -> &EpochSets {
        &self.sets
    }

    /// `epoch`'s validators and domain (for an epoch whose set is not decided yet, the last
    /// decided set: see [`EpochSets::at`]).
    pub fn members(&self, epoch: u64) -> Arc<EpochMembers> {
        self.sets.at(epoch)
    }

    /// The chain, epoch and view checks every message passes first.
    fn check_domain(&self, chain_id: u64, epoch: u64, view: u64) -> Result<(), VerifyError> {
        if chain_id != self.chain_id {
            return Err(VerifyError::WrongChain {
                expected: self.chain_id,
                got: chain_id,
            });
        }
        if !self.schedule.contains(epoch) {
            return Err(VerifyError::UnknownEpoch(epoch));
        }
        if !self.sets.known(epoch) {
            return Err(VerifyError::SetNotKnown(epoch));
        }
        if view == 0 {
            return Err(VerifyError::GenesisView);
        }
        if !self.schedule.holds_view(epoch, view) {
            return Err(VerifyError::ViewOutsideEpoch { epoch, view });
        }
        Ok(())
    }

    /// Verifies a vote. Errors: see [`VerifyError`].
    pub fn verify_vote(&self, vote: Vote) -> Result<VerifiedVote, VerifyError> {
        let (key, signature) = self.check_vote(&vote)?;
        key.verify(
            &vote.signing_message(&self.members(vote.epoch).domain),
            &signature,
        )?;
        Ok(VerifiedVote { vote, signature })
    }

    /// Everything [`Verifier::verify_vote`] checks except the pairing: domain, view, fields,
    /// membership, signature encoding. Returns the signer's key and the decoded signature.
    fn check_vote(&self, vote: &Vote) -> Result<(PublicKey, Signature), VerifyError> {
        self.check_domain(vote.chain_id, vote.epoch, vote.view)?;
        let nullify = vote.kind == VoteKind::Nullify;
        if nullify != (vote.height == 0) || nullify != (vote.block == [0u8; 32]) {
            return Err(VerifyError::BadVoteFields);
        }
        let key = self
            .members(vote.epoch)
            .validators
            .get(vote.signer as usize)
            .ok_or(VerifyError::UnknownValidator(vote.signer))?
            .public_key;
        let signature = Signature::from_bytes(&vote.signature)?;
        Ok((key, signature))
    }

    /// Verifies a burst of votes (e.g. everything that arrived since the last look at the
    /// network): the checks of [`Verifier::verify_vote`] one by one, then all signatures that
    /// pass them in one randomized batch check ([`quasar_crypto::bls::batch_verify`]), which
    /// bisects to name exactly the invalid ones (a single signature gets the plain check).
    /// Returns one result per vote, in input order; a
    /// vote whose signature does not verify gets
    /// `VerifyError::Signature(BlsError::InvalidSignature)`, as from `verify_vote`.
    pub fn verify_votes(&self, votes: Vec<Vote>) -> Vec<Result<VerifiedVote, VerifyError>> {
        let checked: Vec<Result<(PublicKey, Signature), VerifyError>> =
            votes.iter().map(|vote| self.check_vote(vote)).collect();
        let messages: Vec<Vec<u8>> = votes
            .iter()
            .map(|v| v.signing_message(&self.members(v.epoch).domain))
            .collect();
        // Positions in `votes` of the batch items: the votes that passed the cheap checks.
        let mut positions = Vec::with_capacity(votes.len());
        let mut items = Vec::with_capacity(votes.len());
        for (i, (checked, message)) in checked.iter().zip(&messages).enumerate() {
            if let Ok((key, signature)) = checked {
                positions.push(i);
                items.push((key, message.as_slice(), signature));
            }
        }
        let mut bad = vec![false; votes.len()];
        // One signature: the plain check, without the batch's random scalar and its draw.
        let verdict = match items.as_slice() {
            [(key, message, signature)] => key.verify(message, signature).map_err(|_| vec![0]),
            _ => batch_verify(&items),
        };
        if let Err(invalid) = verdict {
            for k in invalid {
                if let Some(&i) = positions.get(k) {
                    bad[i] = true;
                }
            }
        }
        votes
            .into_iter()
            .zip(checked)
            .zip(bad)
            .map(|((vote, checked), bad)| {
                let (_, signature) = checked?;
                if bad {
                    return Err(VerifyError::Signature(BlsError::InvalidSignature));
                }
                Ok(VerifiedVote { vote, signature })
            })
            .collect()
    }

    /// Verifies a proposal: domain, leader, header sanity, limits, payload root, signature.
    pub fn verify_proposal(&self, proposal: Proposal) -> Result<VerifiedProposal, VerifyError> {
        let h = &proposal.header;
        self.check_domain(h.chain_id, h.epoch, h.view)?;
        if h.height == 0 {
            return Err(VerifyError::BadHeader("height 0 is genesis"));
        }
        if h.height < self.schedule.first_height(h.epoch) {
            return Err(VerifyError::BadHeader(
                "height below its epoch's first height",
            ));
        }
        if h.parent_view >= h.view {
            return Err(VerifyError::BadHeader("parent view must precede the view"));
        }
        let expected = leader(
            &self.members(h.epoch).validators,
            &self.genesis,
            self.chain_id,
            h.epoch,
            h.view,
        );
        if h.proposer != expected {
            return Err(VerifyError::NotLeader {
                view: h.view,
                proposer: h.proposer,
                leader: expected,
            });
        }
        if proposal.txs.len() > self.limits.max_txs {
            return Err(VerifyError::BlockTooLarge("too many transactions"));
        }
        let bytes: usize = proposal.txs.iter().map(Vec::len).sum();
        if bytes > self.limits.max_bytes {
            return Err(VerifyError::BlockTooLarge("too many transaction bytes"));
        }
        let known = match &self.known {
            Some(known) => known.hashes(&proposal.txs),
            None => Vec::new(),
        };
        let tx_hashes: Vec<Hash> = proposal
            .txs
            .iter()
            .enumerate()
            .map(|(i, tx)| {
                known
                    .get(i)
                    .copied()
                    .flatten()
                    .unwrap_or_else(|| tx_hash(tx))
            })
            .collect();
        if payload_root_of_hashes(&tx_hashes) != h.payload_root {
            return Err(VerifyError::PayloadRoot);
        }
        let hash = h.hash();
        let vote = proposer_vote(&proposal, &hash);
        let leader_vote = self.verify_vote(vote)?;
        Ok(VerifiedProposal {
            proposal,
            hash,
            tx_hashes,
            leader_vote,
        })
    }

    /// Verifies a certificate: domain, field consistency, canonical bitmap, quorum, aggregate.
    pub fn verify_certificate(
        &self,
        certificate: Certificate,
    ) -> Result<VerifiedCertificate, VerifyError> {
        self.check_domain(certificate.chain_id, certificate.epoch, certificate.view)?;
        let nullification = certificate.kind == CertificateKind::Nullification;
        if nullification != (certificate.height == 0)
            || nullification != (certificate.block == [0u8; 32])
        {
            return Err(VerifyError::BadVoteFields);
        }
        let members = self.members(certificate.epoch);
        let checked = bls_lane::verify_aggregate(
            &members.validators,
            &certificate.signers,
            &certificate.signing_message(&members.domain),
            &certificate.signature,
        )?;
        Ok(VerifiedCertificate {
            certificate,
            signers: checked.signers,
        })
    }
}
