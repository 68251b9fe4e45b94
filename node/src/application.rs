//! The built-in application behind the engine's [`Application`] boundary: the accounts of
//! `quasar_app` in their authenticated state (docs/architecture.md §11).
//!
//! The state after each executed, not yet committed block is kept in memory under the block's
//! hash ([`quasar_app::Executed`]: its changed accounts and tree nodes), so the blocks of forks
//! above the finalized tip are executed on top of their own ancestors. A finalized block is
//! queued by [`Application::finalize`] and written by [`Application::commit`], which also drops
//! the state of every block at or below the committed height (abandoned forks). Signatures are
//! checked through the node's [`VerificationCache`], the one that admitted them to the mempool,
//! so a transaction's signature is verified once per node.
//!
//! # Pruning
//!
//! A validator that prunes its history ([`ChainApplication::prune_with`]; not an archive node)
//! keeps the state versions of the blocks it keeps: the last
//! [`RETAINED_EPOCHS`](quasar_consensus::epoch::RETAINED_EPOCHS) epochs
//! ([`EpochSchedule::retained_from`]). After each commit it deletes the tree nodes only older
//! versions used, at most twice as many as the commit made stale (and at least
//! [`MIN_PRUNE_STEP`]), so the work follows the write rate and a backlog (a restart, a burst)
//! drains without one long pause.
//!
//! # Validator sets from the registry
//!
//! On a chain whose sets come from its registry (`Genesis::sets_from_registry`), the boundary
//! block of epoch `e` writes the set of epoch `e + 2` into the state (`quasar_app::EpochSet`).
//! Once that block is committed, the [`SetDecider`] reads the set back and decides it
//! (`EpochSets::decide`): the verifier, the engine and the API share that history, so the set
//! is in force from epoch `e + 2`'s first view, and the Quasar tracker gets the set's
//! certificate policy. A restarted node decides again, from its committed state, every set up
//! to its version (the same sets: a changed one is a corrupt store and stops the node).
//!
//! A node that takes a checkpoint has not executed the epoch: it decides the set its boundary
//! writes from the proof the checkpoint carries (an `EpochSetProof` against the boundary's
//! certified state root). Once its state is restored from peers it decides, from that state,
//! every set up to the restored version.

use quasar_app::{
    ChainRules, EpochSet, EvidenceCheck, Executed, GenesisValidator, NetworkRoster, Offence, State,
    StateError, ValidatorKeys, VerificationCache,
};
use quasar_chainspec::{Genesis, RegistryMember};
use quasar_consensus::Verifier;
use quasar_consensus::{AppError, Application, EpochMembers, EpochSchedule, EpochSets, Payload};
use quasar_crypto::hash::Hash;
use quasar_lanes::cert::CertPolicy;
use quasar_storage::evidence::kind;
use quasar_storage::EvidenceRecord;
use quasar_wire::Proposal;
use quasar_wire::{MessageRef, Vote, VoteKind};
use std::collections::HashMap;
use std::sync::Arc;

/// Opens the application state in `store` for the chain of `genesis`: its chain id and epoch
/// length, its allocation, and epoch 0's validators registered ([`State::open`]; a store
/// committed before is opened as it is), checking reports of equivocation with `evidence`.
///
/// Errors: [`StateError`].
pub fn open_state(
    store: quasar_storage::StateStore,
    genesis: &Genesis,
    evidence: Arc<dyn EvidenceCheck>,
) -> Result<State, StateError> {
    let rules = chain_rules(genesis);
    let validators = genesis
        .validators
        .validators()
        .iter()
        .zip(&genesis.mldsa_public_keys)
        .zip(&genesis.slhdsa_public_keys)
        .zip(&genesis.tls_certificates)
        .map(
            |(((member, identity), slhdsa), certificate)| GenesisValidator {
                identity_key: identity.clone(),
                keys: ValidatorKeys {
                    bls_public_key: member.public_key.to_bytes(),
                    slhdsa_public_key: *slhdsa.as_bytes(),
                    tls_certificate: certificate.clone(),
                },
                stake: member.stake,
            },
        );
    let roster = genesis
        .roster()
        .iter()
        .filter_map(|v| hex::decode(&v.tls_certificate).ok())
        .collect();
    Ok(
        State::open(store, rules, genesis.accounts.iter().copied(), validators)?
            .with_evidence_check(evidence)
            .with_network_roster(Arc::new(NetworkRoster(roster))),
    )
}

/// A certificate policy decided with a set, for the Quasar tracker, or why the set has none.
pub type DecidedPolicy = (u64, Result<Arc<CertPolicy>, String>);

/// Where decided sets' certificate policies go: kept until the Quasar tracker exists (the
/// engine decides sets while it opens, before the tracker is built), then handed to it.
#[derive(Clone, Default)]
pub struct PolicySink(Arc<std::sync::Mutex<PolicyTarget>>);

enum PolicyTarget {
    Backlog(Vec<DecidedPolicy>),
    Tracker(Arc<crate::quasar_service::QuasarState>),
}

impl Default for PolicyTarget {
    fn default() -> PolicyTarget {
        PolicyTarget::Backlog(Vec::new())
    }
}

impl PolicySink {
    fn lock(&self) -> std::sync::MutexGuard<'_, PolicyTarget> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn push(&self, policy: DecidedPolicy) {
        let mut target = self.lock();
        match &mut *target {
            PolicyTarget::Tracker(quasar) => change_policy(quasar, policy),
            PolicyTarget::Backlog(backlog) => backlog.push(policy),
        }
    }

    /// Hands the policies decided so far, and every later one, to `quasar`'s tracker.
    pub fn attach(&self, quasar: Arc<crate::quasar_service::QuasarState>) {
        let mut target = self.lock();
        if let PolicyTarget::Backlog(backlog) = std::mem::take(&mut *target) {
            for policy in backlog {
                change_policy(&quasar, policy);
            }
        }
        *target = PolicyTarget::Tracker(quasar);
    }
}

/// Logs, when `policy` is why a set has no certificate policy, that its epochs from `epoch` on
/// reach Nova finality only.
pub fn warn_if_unavailable<T>(epoch: u64, policy: &Result<T, String>) {
    if let Err(reason) = policy {
        tracing::warn!(
            epoch,
            %reason,
            "Quasar finality unavailable from this epoch: blocks reach Nova finality only"
        );
    }
}

fn change_policy(quasar: &crate::quasar_service::QuasarState, (epoch, policy): DecidedPolicy) {
    warn_if_unavailable(epoch, &policy);
    let mut tracker = quasar.tracker.lock().unwrap_or_else(|p| p.into_inner());
    if let Err(error) = tracker.change_policy_at(epoch, policy) {
        tracing::error!(epoch, %error, "the decided set's certificate policy was refused");
    }
}

/// The storage error of deciding the set of `epoch`.
fn set_error(epoch: u64, e: &dyn std::fmt::Display) -> AppError {
    AppError::Storage(format!("the validator set of epoch {epoch}: {e}"))
}

/// Decides the validator sets of a chain whose sets come from its registry (module docs).
pub struct SetDecider {
    genesis: Arc<Genesis>,
    sets: EpochSets,
    policies: PolicySink,
    /// The last set read from state, with its bytes (an unchanged set is not rebuilt).
    last: Option<(Vec<u8>, Arc<EpochMembers>)>,
    /// Whether it decides as boundaries are committed (after a restart's catch-up, which does
    /// not read the whole registry again at every past boundary to explain a kept set).
    live: bool,
}

impl SetDecider {
    /// A decider for the chain of `genesis` that decides into `sets` (the verifier's history)
    /// and hands policies to `policies`.
    pub fn new(genesis: Arc<Genesis>, sets: EpochSets, policies: PolicySink) -> SetDecider {
        SetDecider {
            genesis,
            sets,
            policies,
            last: None,
            live: false,
        }
    }

    /// Decides every set that the committed `state` holds: each written by a boundary block up
    /// to its version. A set entry is written once and never changed, so each is read from the
    /// latest version, which also serves a state restored from peers without the versions of
    /// its boundaries.
    ///
    /// Errors: as [`SetDecider::decide`].
    fn decide_through(&mut self, state: &State) -> Result<(), AppError> {
        let rules = chain_rules(&self.genesis);
        let step = usize::try_from(rules.epoch_length)
            .unwrap_or(usize::MAX)
            .max(1);
        for boundary in (rules.epoch_length.max(1)..=state.version()).step_by(step) {
            if let Some(epoch) = rules.decides_set(boundary) {
                self.decide(state, boundary, epoch)?;
            }
        }
        Ok(())
    }

    /// Decides the set of `epoch` that boundary block `boundary` wrote, as the committed
    /// `state` holds it (read from its latest version: a set entry never changes).
    ///
    /// Errors: [`AppError::Storage`] for a state that cannot be read or holds no set there, a
    /// stored set that does not build, or a decision that contradicts an earlier one.
    fn decide(&mut self, state: &State, boundary: u64, epoch: u64) -> Result<(), AppError> {
        let set = state
            .epoch_set(state.version(), epoch)
            .map_err(|e| set_error(epoch, &e))?
            .ok_or_else(|| {
                set_error(
                    epoch,
                    &format!("block {boundary} wrote no set into the state"),
                )
            })?;
        let changed = self.decide_set(epoch, boundary, &set)?;
        if !changed && self.live && self.kept_for_want_of_eligible(state, boundary, &set)? {
            tracing::warn!(
                epoch,
                boundary_height = boundary,
                "no registered validator is eligible for the set: the set before stays, and its \
                 members' stake stays bonded while it is in force"
            );
        }
        Ok(())
    }

    /// Decides the set of the epoch that checkpoint boundary `boundary` (state root
    /// `state_root`, certified) decides, from the checkpoint's `state_proof` (an encoded
    /// `EpochSetProof`, [`quasar_app::proven_epoch_set_message`]): a node that takes the checkpoint
    /// has not executed the epoch. The node's sync checked the proof before the core took the
    /// checkpoint ([`crate::sync::unusable_checkpoint`]); one that fails here anyway is logged.
    fn decide_from_checkpoint(&mut self, boundary: u64, state_root: &Hash, state_proof: &[u8]) {
        let Some(epoch) = chain_rules(&self.genesis).decides_set(boundary) else {
            return;
        };
        let set = quasar_app::proven_epoch_set_message(epoch, state_proof, state_root)
            .map_err(|e| e.to_string());
        if let Err(error) = set.and_then(|set| {
            self.decide_set(epoch, boundary, &set)
                .map_err(|e| e.to_string())
        }) {
            tracing::error!(
                epoch,
                boundary_height = boundary,
                %error,
                "could not learn the validator set this checkpoint decides: this node cannot \
                 verify that epoch's messages until it restores its state"
            );
        }
    }

    /// Decides `set` for `epoch`, written by boundary block `boundary`; whether it changes the
    /// set in force.
    ///
    /// Errors: [`AppError::Storage`] for a set that does not build, or a decision that
    /// contradicts an earlier one.
    fn decide_set(&mut self, epoch: u64, boundary: u64, set: &EpochSet) -> Result<bool, AppError> {
        let storage = |e: &dyn std::fmt::Display| set_error(epoch, e);
        let bytes = set.to_bytes();
        let (members, policy) = match &self.last {
            Some((last, members)) if *last == bytes => (members.clone(), None),
            _ => {
                let (members, policy) =
                    stored_set(&self.genesis, epoch, set).map_err(|e| storage(&e))?;
                let members = Arc::new(members);
                self.last = Some((bytes, members.clone()));
                (members, Some(policy))
            }
        };
        let before = self.sets.at(epoch.saturating_sub(1));
        let schedule = self.genesis.schedule();
        let changed = self
            .sets
            .decide(&schedule, epoch, (*members).clone())
            .map_err(|e| storage(&e))?;
        if changed {
            let mut old: Vec<_> = before.validators.validators().to_vec();
            let mut new: Vec<_> = members.validators.validators().to_vec();
            old.sort_by_key(|v| v.public_key.to_bytes());
            new.sort_by_key(|v| v.public_key.to_bytes());
            let what = if old == new {
                "the same validators and stakes, in the registry's order (by stake, then BLS key)"
            } else {
                "other validators or stakes"
            };
            tracing::info!(
                epoch,
                boundary_height = boundary,
                validators = members.validators.len(),
                total_stake = members.validators.total_stake(),
                validator_set_root = %hex::encode(members.domain.validator_set_root),
                "validator set decided from the registry: it changes at this epoch: {what}"
            );
            if let Some(policy) = policy {
                self.policies.push((epoch, policy.map(Arc::new)));
            }
        }
        Ok(changed)
    }

    /// Whether `set`, decided at `version` and unchanged, holds a validator that is no longer
    /// active with stake there: the boundary found nobody eligible and wrote the set before
    /// again.
    ///
    /// Errors: [`AppError::Storage`] when the registry cannot be read.
    fn kept_for_want_of_eligible(
        &self,
        state: &State,
        version: u64,
        set: &EpochSet,
    ) -> Result<bool, AppError> {
        let registry = state
            .registry(version)
            .map_err(|e| AppError::Storage(format!("the registry at block {version}: {e}")))?;
        Ok(set.members.iter().any(|m| {
            !registry.iter().any(|v| {
                v.address == m.address
                    && v.stake > 0
                    && v.record.status == quasar_app::ValidatorStatus::Active
            })
        }))
    }
}

/// The members (with their domain) and the certificate policy of `set`, the set of `epoch` as
/// the state of a chain whose sets come from its registry holds it, built with `genesis`
/// ([`Genesis::registry_set`]). Errors: as that function.
pub fn stored_set(
    genesis: &Genesis,
    epoch: u64,
    set: &EpochSet,
) -> Result<(EpochMembers, Result<CertPolicy, String>), String> {
    let members: Vec<RegistryMember> = set
        .members
        .iter()
        .map(|m| RegistryMember {
            bls_public_key: m.bls_public_key,
            slhdsa_public_key: m.slhdsa_public_key,
            stake: m.stake,
        })
        .collect();
    genesis.registry_set(epoch, set.validator_set_root, &members)
}

/// The execution rules of the chain of `genesis`: its chain id, its epoch length, and whether
/// its validator sets come from the registry ([`Genesis::sets_from_registry`]).
pub fn chain_rules(genesis: &Genesis) -> ChainRules {
    ChainRules {
        chain_id: genesis.file.chain_id,
        epoch_length: genesis.file.epoch_length,
        sets_from_registry: genesis.sets_from_registry(),
    }
}

/// The node's check of equivocation evidence ([`EvidenceCheck`]): the record a node keeps
/// (`quasar_storage::EvidenceRecord`, served by `GET /evidence`) of two votes by one
/// validator in one view that conflict (two notarize or two finalize votes for different
/// blocks, or a finalize and a nullify), each verified as consensus verifies a vote: the
/// chain, the epoch's view range, and the signature under the signer's key in the epoch's
/// set (`Verifier::verify_vote`). Deterministic: the sets come from the genesis.
///
/// Conflicting proposals are reported as what they are, two notarize votes of their proposer
/// ([`proposals_as_votes`]): two whole blocks would not fit in a transaction.
pub struct VoteEvidence(pub Verifier);

/// The record of conflicting proposals (`conflicting_proposal`: two proposals of one view by
/// one leader) as the conflicting notarize votes they carry (each proposal's signature is its
/// proposer's notarize vote on its header hash, [`quasar_consensus::proposer_vote`]), a few
/// hundred bytes where the proposals may be megabytes. Any other record is returned as it is.
///
/// Errors: a message for a record whose messages are not proposals.
pub fn proposals_as_votes(record: EvidenceRecord) -> Result<EvidenceRecord, String> {
    if record.kind != kind::CONFLICTING_PROPOSAL {
        return Ok(record);
    }
    let vote = |bytes: &[u8]| -> Result<Vec<u8>, String> {
        let Ok(MessageRef::Proposal(proposal)) = quasar_wire::decode(bytes) else {
            return Err("a message of the conflicting proposals is not a proposal".into());
        };
        let proposal = proposal.to_owned();
        let vote = quasar_consensus::proposer_vote(&proposal, &proposal.header.hash());
        quasar_wire::Message::Vote(vote)
            .encode()
            .map_err(|e| e.to_string())
    };
    Ok(EvidenceRecord {
        kind: kind::CONFLICTING_NOTARIZE,
        first: vote(&record.first)?,
        second: vote(&record.second)?,
        ..record
    })
}

impl EvidenceCheck for VoteEvidence {
    fn check(&self, evidence: &[u8]) -> Result<Offence, String> {
        let record = EvidenceRecord::decode(evidence).map_err(|e| e.to_string())?;
        let vote = |bytes: &[u8]| -> Result<Vote, String> {
            let Ok(MessageRef::Vote(vote)) = quasar_wire::decode(bytes) else {
                return Err("a message of the evidence is not a vote".into());
            };
            let vote = vote.to_owned();
            self.0
                .verify_vote(vote.clone())
                .map_err(|e| format!("a vote of the evidence does not verify: {e}"))?;
            Ok(vote)
        };
        let (first, second) = (vote(&record.first)?, vote(&record.second)?);
        let same_slot = first.chain_id == second.chain_id
            && first.epoch == second.epoch
            && first.view == second.view
            && first.signer == second.signer
            && first.view == record.view
            && first.signer == record.signer;
        let kinds = (first.kind, second.kind);
        let conflict = match record.kind {
            kind::CONFLICTING_NOTARIZE => {
                kinds == (VoteKind::Notarize, VoteKind::Notarize) && first.block != second.block
            }
            kind::CONFLICTING_FINALIZE => {
                kinds == (VoteKind::Finalize, VoteKind::Finalize) && first.block != second.block
            }
            kind::FINALIZE_AND_NULLIFY => {
                kinds == (VoteKind::Finalize, VoteKind::Nullify)
                    || kinds == (VoteKind::Nullify, VoteKind::Finalize)
            }
            _ => return Err("only evidence of conflicting votes is accepted".into()),
        };
        if !(same_slot && conflict) {
            return Err(
                "the two votes do not conflict: one signer, one view, and votes that \
                        cannot both be honest are needed"
                    .into(),
            );
        }
        let key = self
            .0
            .members(first.epoch)
            .validators
            .get(first.signer as usize)
            .map(|v| v.public_key.to_bytes())
            .ok_or("the signer is not in the epoch's set")?;
        Ok(Offence {
            bls_public_key: key,
            epoch: first.epoch,
            view: first.view,
        })
    }
}

/// One executed block above the committed state.
struct Pending {
    parent: Hash,
    executed: Executed,
}

/// Fewest tree nodes one commit's pruning step may delete (see the module docs).
pub const MIN_PRUNE_STEP: usize = 1024;

/// What state pruning has reached ([`ChainApplication::prune_with`]).
struct Pruning {
    schedule: EpochSchedule,
    /// Every version below this one is pruned.
    floor: u64,
}

/// The built-in application; see the module docs.
pub struct ChainApplication {
    state: State,
    cache: Arc<VerificationCache>,
    /// Most bytes of transactions in a block this node proposes.
    max_block_bytes: usize,
    /// Executed blocks above the committed version, by hash.
    pending: HashMap<Hash, Pending>,
    /// Finalized blocks not yet written, in height order.
    finalized: Vec<Hash>,
    /// The state of the last payload built by [`Application::propose`], until it is adopted.
    proposed: Option<Pending>,
    /// Set by a checkpoint: the finalized chain went on without this node executing it (the
    /// height and hash of the newest finalized block). The application executes nothing until
    /// its state is restored from peers ([`crate::state_sync`], [`Application::restored`]).
    skipped: Option<(u64, Hash)>,
    /// State pruning with the epochs; `None` keeps every version (an archive node).
    pruning: Option<Pruning>,
    /// Decides the validator sets, on a chain whose sets come from its registry.
    decider: Option<SetDecider>,
}

impl ChainApplication {
    /// The application over `state`, checking signatures through `cache`, proposing blocks of
    /// at most `max_block_bytes` of transactions.
    pub fn new(
        state: State,
        cache: Arc<VerificationCache>,
        max_block_bytes: usize,
    ) -> ChainApplication {
        ChainApplication {
            state,
            cache,
            max_block_bytes,
            pending: HashMap::new(),
            finalized: Vec::new(),
            proposed: None,
            skipped: None,
            pruning: None,
            decider: None,
        }
    }

    /// The application, deciding the chain's validator sets from its registry with `decider`
    /// (module docs): first every set its committed state decides (a restart), then each one
    /// as its boundary block is committed.
    ///
    /// Errors: [`AppError::Storage`] as [`SetDecider`] refuses a set.
    pub fn decide_sets_with(
        mut self,
        mut decider: SetDecider,
    ) -> Result<ChainApplication, AppError> {
        // The state's genesis set must be the genesis file's (the same order, keys and stakes).
        let root = self
            .state
            .epoch_set(0, 0)
            .map_err(|e| AppError::Storage(format!("the genesis set in the state: {e}")))?
            .map(|set| set.validator_set_root);
        if root != Some(decider.genesis.validator_set_root) {
            return Err(AppError::Storage(format!(
                "the state's genesis set (root {}) is not the genesis file's (root {}): a store \
                 of another chain, or one made before its sets came from the registry",
                root.map_or_else(|| "none".into(), hex::encode),
                hex::encode(decider.genesis.validator_set_root)
            )));
        }
        decider.decide_through(&self.state)?;
        decider.live = true;
        self.decider = Some(decider);
        Ok(self)
    }

    /// Whether the application waits for its state to be restored from peers: it took a
    /// checkpoint, and executes nothing until [`Application::restored`].
    pub fn awaiting_state(&self) -> bool {
        self.skipped.is_some()
    }

    /// Prunes the state versions below the retained epochs of `schedule` as blocks are
    /// committed (module docs). Without it every version is kept (an archive node, or a chain
    /// without epochs).
    pub fn prune_with(mut self, schedule: EpochSchedule) -> ChainApplication {
        self.pruning = schedule.length().map(|_| Pruning { schedule, floor: 0 });
        self
    }

    /// One pruning step after a commit that made `stale` nodes stale (module docs).
    fn prune_step(&mut self, stale: usize) -> Result<(), AppError> {
        let Some(pruning) = self.pruning.as_mut() else {
            return Ok(());
        };
        let schedule = &pruning.schedule;
        let line = schedule.retained_from(schedule.epoch_of(self.state.version()));
        if line <= pruning.floor {
            return Ok(());
        }
        let limit = stale.saturating_mul(2).max(MIN_PRUNE_STEP);
        let removed = self
            .state
            .prune(line, limit)
            .map_err(|e| AppError::Storage(e.to_string()))?;
        if removed < limit {
            pruning.floor = line;
            tracing::debug!(state_floor = line, "state versions past retention pruned");
        }
        Ok(())
    }

    /// The executed blocks from the committed version up to `parent` (at `height`), oldest
    /// first.
    fn ancestors(&self, parent: &Hash, height: u64) -> Result<Vec<&Executed>, AppError> {
        let no_state = |why: &str| AppError::NoState {
            parent: *parent,
            height,
            why: why.into(),
        };
        if let Some((at, _)) = self.skipped {
            return Err(no_state(&format!(
                "this node took a checkpoint to height {at} without the blocks below it, and \
                 its state is not restored from peers yet"
            )));
        }
        let mut chain = Vec::new();
        let mut cursor = *parent;
        let mut at = height;
        while at > self.state.version() {
            let Some(block) = self.pending.get(&cursor) else {
                return Err(no_state("the block was not executed here"));
            };
            chain.push(&block.executed);
            cursor = block.parent;
            at -= 1;
        }
        if at != self.state.version() {
            return Err(no_state("the block lies below the committed state"));
        }
        chain.reverse();
        Ok(chain)
    }

    /// Executes `proposal` (its transactions' hashes `tx_hashes`, in order) on its parent's
    /// state, checking its root.
    fn execute(
        &self,
        block: &Hash,
        proposal: &Proposal,
        tx_hashes: &[Hash],
    ) -> Result<Pending, AppError> {
        let header = &proposal.header;
        let ancestors = self.ancestors(&header.parent, header.height.saturating_sub(1))?;
        if tx_hashes.len() != proposal.txs.len() {
            return Err(AppError::Invalid {
                block: *block,
                height: header.height,
                reason: format!(
                    "{} transactions but {} transaction hashes",
                    proposal.txs.len(),
                    tx_hashes.len()
                ),
            });
        }
        let txs: Vec<(&[u8], &Hash)> = proposal
            .txs
            .iter()
            .map(Vec::as_slice)
            .zip(tx_hashes)
            .collect();
        let executed = self
            .state
            .execute_hashed(&ancestors, header.height, &txs, &self.cache)
            .map_err(|e| match e {
                StateError::Decode { .. } | StateError::Transaction { .. } => AppError::Invalid {
                    block: *block,
                    height: header.height,
                    reason: e.to_string(),
                },
                other => AppError::Storage(other.to_string()),
            })?;
        if executed.root() != header.state_root {
            return Err(AppError::RootMismatch {
                block: *block,
                height: header.height,
                claimed: header.state_root,
                computed: executed.root(),
            });
        }
        Ok(Pending {
            parent: header.parent,
            executed,
        })
    }
}

impl Application for ChainApplication {
    fn committed(&self) -> (u64, Hash) {
        (self.state.version(), self.state.root())
    }

    fn has_state(&self, block: &Hash, height: u64) -> bool {
        self.skipped.is_none()
            && (self.pending.contains_key(block) || height == self.state.version())
    }

    fn propose(
        &mut self,
        parent: &Hash,
        height: u64,
        candidates: &[Vec<u8>],
    ) -> Result<Payload, AppError> {
        let parent_height = height.saturating_sub(1);
        let ancestors = self.ancestors(parent, parent_height)?;
        let refs: Vec<&[u8]> = candidates.iter().map(Vec::as_slice).collect();
        let proposed = self
            .state
            .propose(&ancestors, height, &refs, self.max_block_bytes, &self.cache)
            .map_err(|e| AppError::Storage(e.to_string()))?;
        let txs = proposed
            .chosen
            .iter()
            .map(|&i| candidates[i].clone())
            .collect();
        let tx_hashes = proposed.chosen_hashes;
        let (executed, invalid) = (proposed.executed, proposed.refused);
        let state_root = executed.root();
        self.proposed = Some(Pending {
            parent: *parent,
            executed,
        });
        Ok(Payload {
            txs,
            tx_hashes,
            state_root,
            invalid,
        })
    }

    fn adopt(&mut self, block: &Hash) {
        if let Some(proposed) = self.proposed.take() {
            self.pending.insert(*block, proposed);
        }
    }

    fn verify(
        &mut self,
        block: &Hash,
        proposal: &Proposal,
        tx_hashes: &[Hash],
    ) -> Result<(), AppError> {
        if self.pending.contains_key(block) {
            return Ok(());
        }
        let executed = self.execute(block, proposal, tx_hashes)?;
        self.pending.insert(*block, executed);
        Ok(())
    }

    fn finalize(
        &mut self,
        block: &Hash,
        proposal: &Proposal,
        tx_hashes: &[Hash],
    ) -> Result<(), AppError> {
        if let Some((at, hash)) = self.skipped.as_mut() {
            (*at, *hash) = (proposal.header.height, *block);
            return Ok(());
        }
        match self.pending.get(block) {
            // Executed here before (verified or proposed): its root was checked then.
            Some(pending) if pending.executed.root() == proposal.header.state_root => {}
            _ => {
                let executed = self.execute(block, proposal, tx_hashes)?;
                self.pending.insert(*block, executed);
            }
        }
        self.finalized.push(*block);
        Ok(())
    }

    fn commit(&mut self) -> Result<(), AppError> {
        if self.finalized.is_empty() {
            return Ok(());
        }
        let mut stale = 0;
        for block in std::mem::take(&mut self.finalized) {
            let Some(pending) = self.pending.remove(&block) else {
                return Err(AppError::Storage(format!(
                    "finalized block {} was not executed",
                    hex::encode(&block[..8])
                )));
            };
            stale += pending.executed.stale_nodes();
            let height = pending.executed.height();
            self.state
                .commit(pending.executed)
                .map_err(|e| AppError::Storage(e.to_string()))?;
            if let Some(decider) = self.decider.as_mut() {
                if let Some(epoch) = chain_rules(&decider.genesis).decides_set(height) {
                    decider.decide(&self.state, height, epoch)?;
                }
            }
        }
        let version = self.state.version();
        self.pending.retain(|_, p| p.executed.height() > version);
        self.prune_step(stale)
    }

    fn skip(&mut self, block: &Hash, height: u64, state_root: &Hash, state_proof: &[u8]) {
        if let Some(decider) = self.decider.as_mut() {
            decider.decide_from_checkpoint(height, state_root, state_proof);
        }
        if self.skipped.is_none() {
            tracing::warn!(
                height,
                state_root = %hex::encode(state_root),
                committed_height = self.state.version(),
                "took a checkpoint without the blocks below it: this node's application state \
                 stops here until it is restored from peers; meanwhile it follows the chain \
                 without executing or notarizing blocks"
            );
        }
        self.pending.clear();
        self.finalized.clear();
        self.proposed = None;
        self.skipped = Some((height, *block));
    }

    fn restored(&mut self, height: u64) -> Result<(), AppError> {
        let storage = |e: &dyn std::fmt::Display| AppError::Storage(format!("restored state: {e}"));
        self.state.reload().map_err(|e| storage(&e))?;
        if self.state.version() != height {
            return Err(storage(&format!(
                "the store holds version {}, not {height}",
                self.state.version()
            )));
        }
        self.pending.clear();
        self.finalized.clear();
        self.proposed = None;
        self.skipped = None;
        if let Some(pruning) = self.pruning.as_mut() {
            pruning.floor = height;
        }
        if let Some(decider) = self.decider.as_mut() {
            decider.decide_through(&self.state)?;
        }
        tracing::info!(
            height,
            state_root = %hex::encode(self.state.root()),
            "executing again from the state restored from peers"
        );
        Ok(())
    }
}
