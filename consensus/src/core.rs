//! The state machine. See the crate docs ([`crate`]) for the protocol.

use super::epoch::{EpochSchedule, RETAINED_EPOCHS};
use super::leader::leader;
use super::verify::{VerifiedCertificate, VerifiedProposal, VerifiedVote};
use quasar_crypto::bls::Signature;
use quasar_crypto::hash::Hash;
use quasar_lanes::{bls::bitmap_from_signers, ValidatorSet};
use quasar_wire::{Certificate, CertificateKind, Message, Proposal, Vote, VoteKind};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

/// Static parameters of the core. Times are microseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoreConfig {
    /// Chain id every message must carry.
    pub chain_id: u64,
    /// The epoch this core runs.
    pub epoch: u64,
    /// How the chain divides into epochs: this core decides the heights and runs the views of
    /// `epoch` only, and stops once the epoch's boundary block is final
    /// ([`Action::EpochEnded`]).
    pub schedule: EpochSchedule,
    /// Hash of the genesis block (height 0, view 0).
    pub genesis: Hash,
    /// This validator's index, or `None` for a non-voting observer.
    pub me: Option<u32>,
    /// Minimum spacing between a block's timestamp and its parent's.
    pub block_time_us: u64,
    /// How long a view may last before this validator nullifies it.
    pub view_timeout_us: u64,
    /// Rebroadcast interval once a view has timed out.
    pub retry_us: u64,
    /// Messages for views further than this ahead of the current view are dropped (memory bound).
    pub max_future_views: u64,
    /// A proposal whose timestamp is further than this in the future is not notarized.
    pub max_clock_drift_us: u64,
}

/// The finalized tip the core starts from (genesis on a fresh node).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tip {
    /// Height of the block.
    pub height: u64,
    /// Its hash.
    pub hash: Hash,
    /// The view it was proposed in (0 for genesis).
    pub view: u64,
    /// Its timestamp, microseconds since the Unix epoch.
    pub timestamp_us: u64,
}

/// Timers the core asks the runtime to set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimerKind {
    /// The leader's block-time pacing has elapsed: propose now.
    Propose,
    /// The view took too long: nullify it.
    Timeout,
    /// The view has timed out: rebroadcast our nullify and the certificate that opened the view.
    Retry,
}

/// Inputs to [`Core::handle`].
// Votes (a wire vote plus a decoded signature) dominate the traffic, so they stay unboxed; each
// input is built once and moved into the core.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Input {
    /// A verified proposal (from the network, from sync, or our own).
    Proposal(Box<VerifiedProposal>),
    /// A verified vote (from the network or our own).
    Vote(VerifiedVote),
    /// A verified certificate.
    Certificate(VerifiedCertificate),
    /// An epoch transition that sync served in place of blocks its peers pruned (see the
    /// node's block sync, `quasar_node::sync`).
    Checkpoint(Box<Checkpoint>),
    /// The application's answer to [`Action::Verify`]: whether executing `block` gives the
    /// state root its header claims (and every transaction in it applies).
    Verified {
        /// The view of the block.
        view: u64,
        /// The block.
        block: Hash,
        /// Whether it may be notarized.
        valid: bool,
    },
    /// A message of `epoch` arrived whose validator set this node has not decided yet, so it
    /// could not be verified ([`crate::VerifyError::SetNotKnown`]): on a chain whose sets come
    /// from its state, the others are two epochs or more ahead. Handled as a verified message
    /// of a later epoch is (a fetch, at most once per retry interval); unverified, so it can
    /// cost a peer's fetch but nothing else.
    LaterEpoch(u64),
    /// A timer set by [`Action::SetTimer`] fired.
    Timer {
        /// The view it was set for.
        view: u64,
        /// Which timer.
        kind: TimerKind,
    },
}

/// An epoch's **checkpoint**: its boundary block, the seals above it, and a finalization of the
/// last of them (or of the boundary block itself), each verified alone. A node whose peers
/// pruned the blocks between its tip and the boundary of its epoch takes the boundary as its
/// new finalized tip without them, and goes on with the next epoch: the chain of epoch
/// transitions, one checkpoint at a time, each certified by the epoch that ends there.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    /// The epoch's boundary block.
    pub boundary: VerifiedProposal,
    /// The seals between the boundary block and the certified block, in any order.
    pub seals: Vec<VerifiedProposal>,
    /// The finalization of the boundary block or of a seal above it.
    pub certificate: VerifiedCertificate,
    /// What the application needs to go on from the boundary block without having executed
    /// the epoch, checked by the application against the boundary's state root, not by the
    /// core (the node's: on a chain whose sets come from its registry, the encoded
    /// `quasar_wire::EpochSetProof` of the set the boundary decides); empty when there is none.
    pub state_proof: Vec<u8>,
}

/// Kinds of equivocation the core detects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EvidenceKind {
    /// A leader proposed two different blocks in one view.
    ConflictingProposal,
    /// A validator notarized two different blocks in one view.
    ConflictingNotarize,
    /// A validator finalized two different blocks in one view.
    ConflictingFinalize,
    /// A validator signed both finalize and nullify for one view.
    FinalizeAndNullify,
}

/// Proof that a validator signed two conflicting messages; both messages are included.
#[derive(Debug, Clone)]
pub struct Evidence {
    /// What was violated.
    pub kind: EvidenceKind,
    /// The offender's index.
    pub signer: u32,
    /// The view.
    pub view: u64,
    /// The first message seen.
    pub first: Message,
    /// The conflicting message.
    pub second: Message,
}

/// Where the leader's next block goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProposalSlot {
    /// The view.
    pub view: u64,
    /// Height of the new block.
    pub height: u64,
    /// Parent hash.
    pub parent: Hash,
    /// Parent's view.
    pub parent_view: u64,
    /// Parent's timestamp (µs); the new block's must be larger.
    pub parent_timestamp_us: u64,
    /// Hashes of transactions in non-finalized ancestors.
    pub exclude: Vec<Hash>,
    /// The block lies above its epoch's boundary block: it must carry no transactions (a seal,
    /// see [`crate::epoch`]).
    pub seal: bool,
}

/// A block the core has finalized.
#[derive(Debug, Clone)]
pub struct FinalizedBlock {
    /// The block.
    pub proposal: Proposal,
    /// [`quasar_wire::tx_hash`] of each of its transactions, in order.
    pub tx_hashes: Vec<Hash>,
    /// Its hash.
    pub hash: Hash,
    /// The finalization that covers it (its own, or a descendant's).
    pub certificate: Certificate,
    /// `Some` when it came from a [`Checkpoint`] (the blocks between the previous tip and this
    /// one were skipped): the checkpoint's [`Checkpoint::state_proof`].
    pub checkpoint: Option<Vec<u8>>,
}

/// What the runtime must do, in order.
#[derive(Debug, Clone)]
pub enum Action {
    /// Send to every other validator.
    Broadcast(Message),
    /// Sign this vote if the signing guard allows it (durably), broadcast it, and feed it back as
    /// [`Input::Vote`].
    Vote {
        /// Notarize, finalize or nullify.
        kind: VoteKind,
        /// The view.
        view: u64,
        /// The block's height (0 for nullify).
        height: u64,
        /// The block hash (zero for nullify).
        block: Hash,
    },
    /// Build a block for the slot from the mempool (leaving out `slot.exclude`, the transactions
    /// already in pending ancestors), sign it as our notarize vote through the guard
    /// (the node's `VoteSigner::sign_block`), broadcast it, and feed it back as
    /// [`Input::Proposal`].
    Propose(ProposalSlot),
    /// Execute `block` (a proposal this core holds, [`Core::block`], whose ancestors down to the
    /// finalized tip it holds too) and answer with [`Input::Verified`]. The core notarizes a
    /// proposal only once its execution was found valid: the application boundary of
    /// docs/architecture.md §11.
    Verify {
        /// The view of the block.
        view: u64,
        /// The block.
        block: Hash,
    },
    /// Fire [`Input::Timer`] at `at_us` (earlier timers of the same view and kind may be replaced).
    SetTimer {
        /// The view.
        view: u64,
        /// Which timer.
        kind: TimerKind,
        /// Absolute time, microseconds.
        at_us: u64,
    },
    /// A block became final. Emitted in strictly increasing height order.
    Finalized(Box<FinalizedBlock>),
    /// A new certificate was accepted (formed here or received). Keep it durably until its view
    /// is below the finalized tip and hand it back through [`Core::restore`] after a restart:
    /// without it nobody could justify a proposal across a view it nullified.
    Certified(Certificate),
    /// A block we need is missing: ask peers for `block` and for finalized blocks from
    /// `from_height`.
    Fetch {
        /// The missing block.
        block: Hash,
        /// First finalized height we lack.
        from_height: u64,
    },
    /// We entered a new view.
    EnteredView {
        /// The view.
        view: u64,
        /// Its leader.
        leader: u32,
    },
    /// Someone equivocated.
    Evidence(Box<Evidence>),
    /// The epoch's boundary block is final (it was reported by [`Action::Finalized`] just
    /// before): this core is done and handles nothing more. Keep `seals` (servable by hash, as
    /// sync sends them after the boundary block) and run the next epoch's core from `boundary`.
    EpochEnded {
        /// The boundary block, the next epoch's tip.
        boundary: Tip,
        /// The finalization that committed it: its own, or a seal's.
        certificate: Certificate,
        /// The seals between the boundary block and `certificate`'s block, lowest first (empty
        /// when the boundary block was finalized in its own view).
        seals: Vec<Proposal>,
    },
}

#[derive(Debug, Clone)]
struct Block {
    proposal: Proposal,
    /// [`VerifiedProposal::tx_hashes`].
    tx_hashes: Vec<Hash>,
}

impl Block {
    fn height(&self) -> u64 {
        self.proposal.header.height
    }
    fn parent(&self) -> Hash {
        self.proposal.header.parent
    }
}

/// Where the execution of a view's (first) proposal stands ([`Action::Verify`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Execution {
    #[default]
    NotAsked,
    Asked,
    Valid,
    Invalid,
}

#[derive(Debug, Default)]
struct ViewState {
    /// Distinct proposals from the leader, in arrival order (more than one is equivocation).
    proposals: Vec<Hash>,
    /// The execution of the first proposal.
    execution: Execution,
    notarize: HashMap<u32, VerifiedVote>,
    finalize: HashMap<u32, VerifiedVote>,
    nullify: HashMap<u32, VerifiedVote>,
    notarization: Option<Certificate>,
    finalization: Option<Certificate>,
    nullification: Option<Certificate>,
    voted_notarize: bool,
    voted_finalize: bool,
    voted_nullify: bool,
    timed_out: bool,
    proposed: bool,
    propose_scheduled: bool,
    /// Our own signed votes in this view, for rebroadcast.
    mine: Vec<Vote>,
    /// Equivocations already reported in this view, by (validator, kind).
    reported: HashSet<(u32, EvidenceKind)>,
}

/// The consensus state machine (see the module docs).
#[derive(Debug)]
pub struct Core {
    cfg: CoreConfig,
    validators: Arc<ValidatorSet>,
    now: u64,
    view: u64,
    views: BTreeMap<u64, ViewState>,
    blocks: HashMap<Hash, Block>,
    tip: Tip,
    /// Finalizations not yet committed because ancestors are missing, by view.
    pending: BTreeMap<u64, Certificate>,
    /// Blocks requested from peers, with the time of the last request.
    fetching: HashMap<Hash, u64>,
    /// The certificate that moved us into the current view (rebroadcast on retry).
    entry_certificate: Option<Certificate>,
    /// The finalization that committed the tip (`None` at genesis).
    tip_certificate: Option<Certificate>,
    /// The epoch's boundary block is final; see [`Action::EpochEnded`].
    ended: bool,
    /// The highest epoch the chain is known to have reached: from a verified certificate (a
    /// quorum, so honest validators, got that far), or from a message of an epoch whose set
    /// this node has not learned ([`Input::LaterEpoch`]), which it cannot verify. The second
    /// happens only on a chain whose sets come from its registry, to a node that walks
    /// checkpoints before it learns the later sets; see [`Core::on_checkpoint`] for what a
    /// false claim costs.
    reached_epoch: u64,
}

impl Core {
    /// A core resuming from `tip` (genesis on a fresh node) that will enter `start_view` (at least
    /// `tip.view + 1`; a restarted validator passes its signing guard's highest view) on
    /// [`Core::start`].
    pub fn new(cfg: CoreConfig, validators: Arc<ValidatorSet>, tip: Tip) -> Core {
        Core {
            cfg,
            validators,
            now: 0,
            view: tip.view,
            views: BTreeMap::new(),
            blocks: HashMap::new(),
            tip,
            pending: BTreeMap::new(),
            fetching: HashMap::new(),
            entry_certificate: None,
            tip_certificate: None,
            ended: false,
            reached_epoch: 0,
        }
    }

    /// The epoch this core runs.
    pub fn epoch(&self) -> u64 {
        self.cfg.epoch
    }

    /// The highest epoch this core (or one it was told of through [`Core::saw_epoch`]) knows
    /// the chain reached: of a verified certificate, or of a message whose epoch's set is not
    /// known here ([`Input::LaterEpoch`]).
    pub fn reached_epoch(&self) -> u64 {
        self.reached_epoch
    }

    /// Records that the chain reached `epoch` (the previous epoch's core saw it).
    pub fn saw_epoch(&mut self, epoch: u64) {
        self.reached_epoch = self.reached_epoch.max(epoch);
    }

    /// Sets the finalization that committed `tip` (loaded from the store on restart, or the
    /// closing certificate of the epoch before), which this node sends as justification when it
    /// proposes on its tip. It certifies the tip itself, or a seal above it when the tip is an
    /// epoch's boundary block.
    pub fn set_tip_certificate(&mut self, certificate: Certificate) {
        let covers_tip = certificate.block == self.tip.hash
            || (certificate.height > self.tip.height
                && self.cfg.schedule.last_height(certificate.epoch) == self.tip.height);
        if certificate.kind == CertificateKind::Finalization && covers_tip {
            self.tip_certificate = Some(certificate);
        }
    }

    /// Restores a certificate kept across a restart (see [`Action::Certified`]); call before
    /// [`Core::start`]. Nothing is signed or sent.
    pub fn restore(&mut self, certificate: VerifiedCertificate) {
        let cert = certificate.certificate().clone();
        if cert.view <= self.tip.view || cert.epoch != self.cfg.epoch {
            return;
        }
        let state = self.state(cert.view);
        let slot = match cert.kind {
            CertificateKind::Notarization => &mut state.notarization,
            CertificateKind::Finalization => &mut state.finalization,
            CertificateKind::Nullification => &mut state.nullification,
        };
        if slot.is_none() {
            *slot = Some(cert.clone());
        }
        if cert.kind == CertificateKind::Finalization {
            self.pending.insert(cert.view, cert.clone());
        }
        if self
            .entry_certificate
            .as_ref()
            .is_none_or(|c| c.view <= cert.view)
        {
            self.entry_certificate = Some(cert);
        }
    }

    /// Enters the first view: `max(tip.view + 1, start_view, 1 + the highest restored
    /// certificate's view)`, and commits what restored finalizations allow.
    pub fn start(&mut self, now_us: u64, start_view: u64) -> Vec<Action> {
        self.now = now_us;
        let mut out = Vec::new();
        let restored = self.entry_certificate.as_ref().map_or(0, |c| c.view + 1);
        let first = start_view
            .max(self.tip.view + 1)
            .max(restored)
            .max(self.first_view());
        self.try_commit(&mut out);
        if !self.ended {
            self.enter_view(first, &mut out);
        }
        out
    }

    /// Whether the epoch's boundary block is final and this core is done
    /// ([`Action::EpochEnded`]).
    pub fn ended(&self) -> bool {
        self.ended
    }

    fn first_view(&self) -> u64 {
        self.cfg.schedule.first_view(self.cfg.epoch)
    }

    fn last_height(&self) -> u64 {
        self.cfg.schedule.last_height(self.cfg.epoch)
    }

    /// The current view.
    pub fn view(&self) -> u64 {
        self.view
    }

    /// Whether a certificate of `kind` for `view` is already known (or the view is final), so
    /// another one need not be verified.
    pub fn has_certificate(&self, view: u64, kind: CertificateKind) -> bool {
        if view <= self.tip.view {
            return true;
        }
        self.views.get(&view).is_some_and(|s| match kind {
            CertificateKind::Notarization => s.notarization.is_some(),
            CertificateKind::Finalization => s.finalization.is_some(),
            CertificateKind::Nullification => s.nullification.is_some(),
        })
    }

    /// A one-line summary of what this core holds for `view` (for diagnostics).
    pub fn describe_view(&self, view: u64) -> String {
        let Some(s) = self.views.get(&view) else {
            return format!("view {view}: nothing");
        };
        let signers = |m: &HashMap<u32, VerifiedVote>| {
            let mut v: Vec<u32> = m.keys().copied().collect();
            v.sort_unstable();
            v
        };
        format!(
            "view {view}: proposals {} notarize {:?} finalize {:?} nullify {:?} certs n{}f{}x{} voted n{}f{}x{} timed_out {}",
            s.proposals.len(),
            signers(&s.notarize),
            signers(&s.finalize),
            signers(&s.nullify),
            u8::from(s.notarization.is_some()),
            u8::from(s.finalization.is_some()),
            u8::from(s.nullification.is_some()),
            u8::from(s.voted_notarize),
            u8::from(s.voted_finalize),
            u8::from(s.voted_nullify),
            s.timed_out,
        )
    }

    /// A block this core holds (proposed above the finalized tip and not yet finalized).
    pub fn block(&self, hash: &Hash) -> Option<&Proposal> {
        self.blocks.get(hash).map(|b| &b.proposal)
    }

    /// The [`quasar_wire::tx_hash`] of each transaction of a block this core holds, in order.
    pub fn tx_hashes(&self, hash: &Hash) -> Option<&[Hash]> {
        self.blocks.get(hash).map(|b| b.tx_hashes.as_slice())
    }

    /// The finalized tip.
    pub fn tip(&self) -> Tip {
        self.tip
    }

    /// The leader of `view`.
    pub fn leader_of(&self, view: u64) -> u32 {
        leader(
            &self.validators,
            &self.cfg.genesis,
            self.cfg.chain_id,
            self.cfg.epoch,
            view,
        )
    }

    /// Feeds one input stamped with the caller's time; returns the actions to perform in order.
    ///
    /// Messages of another epoch are ignored; one of a later epoch means the others have moved
    /// on, so it asks peers for the finalized blocks this node lacks ([`Action::Fetch`], at most
    /// once per retry interval). After [`Action::EpochEnded`] nothing is handled.
    pub fn handle(&mut self, now_us: u64, input: Input) -> Vec<Action> {
        self.now = self.now.max(now_us);
        let mut out = Vec::new();
        if self.ended {
            return out;
        }
        let epoch = match &input {
            Input::Proposal(p) => Some(p.proposal().header.epoch),
            Input::Vote(v) => Some(v.vote().epoch),
            Input::Certificate(c) => Some(c.certificate().epoch),
            Input::Checkpoint(c) => Some(c.certificate.certificate().epoch),
            Input::LaterEpoch(epoch) => Some(*epoch),
            Input::Timer { .. } | Input::Verified { .. } => None,
        };
        match &input {
            Input::Certificate(c) => self.saw_epoch(c.certificate().epoch),
            Input::LaterEpoch(epoch) => self.saw_epoch(*epoch),
            _ => {}
        }
        match epoch {
            Some(e) if e > self.cfg.epoch => {
                self.fetch([0; 32], &mut out);
                return out;
            }
            Some(e) if e < self.cfg.epoch => return out,
            _ => {}
        }
        match input {
            Input::Proposal(p) => self.on_proposal(*p, &mut out),
            Input::Vote(v) => self.on_vote(v, &mut out),
            Input::Certificate(c) => self.on_certificate(c.certificate().clone(), false, &mut out),
            Input::Checkpoint(c) => self.on_checkpoint(*c, &mut out),
            Input::LaterEpoch(_) => {}
            Input::Timer { view, kind } => self.on_timer(view, kind, &mut out),
            Input::Verified { view, block, valid } => {
                self.on_verified(view, block, valid, &mut out)
            }
        }
        if let Some(end) = out
            .iter()
            .position(|a| matches!(a, Action::EpochEnded { .. }))
        {
            // Whatever the finished core asked for after its last commit belongs to no epoch.
            out.truncate(end + 1);
        }
        out
    }

    fn accepts_view(&self, view: u64) -> bool {
        view > self.tip.view
            && self.cfg.schedule.holds_view(self.cfg.epoch, view)
            && view <= self.view.saturating_add(self.cfg.max_future_views)
    }

    fn state(&mut self, view: u64) -> &mut ViewState {
        self.views.entry(view).or_default()
    }

    fn enter_view(&mut self, view: u64, out: &mut Vec<Action>) {
        if view <= self.view || !self.cfg.schedule.holds_view(self.cfg.epoch, view) {
            return;
        }
        self.view = view;
        let leader = self.leader_of(view);
        out.push(Action::EnteredView { view, leader });
        // The timeout counts from when the proposal is due: the leader may not propose before its
        // parent's timestamp plus the block time (e.g. a genesis time in the future), and a view
        // must not be nullified for keeping that rule.
        let due = match self.select_parent() {
            Some((_, _, _, parent_ts)) => self
                .now
                .max(parent_ts.saturating_add(self.cfg.block_time_us)),
            None => self.now,
        };
        out.push(Action::SetTimer {
            view,
            kind: TimerKind::Timeout,
            at_us: due.saturating_add(self.cfg.view_timeout_us),
        });
        self.state(view);
        self.maybe_schedule_proposal(out);
        self.try_notarize(out);
    }

    /// The block a proposal in the current view extends: the newest certified block with every
    /// later view up to the current one nullified. Returns (hash, view, height, timestamp), or
    /// `None` when the needed certificate or block is unknown.
    fn select_parent(&self) -> Option<(Hash, u64, u64, u64)> {
        let mut v = self.view.checked_sub(1)?;
        loop {
            if v <= self.tip.view || v < self.first_view() {
                return Some((
                    self.tip.hash,
                    self.tip.view,
                    self.tip.height,
                    self.tip.timestamp_us,
                ));
            }
            if let Some(hash) = self.certified_block(v) {
                let block = self.blocks.get(&hash)?;
                let h = &block.proposal.header;
                return Some((hash, v, h.height, h.timestamp_us));
            }
            self.views.get(&v)?.nullification.as_ref()?;
            v -= 1;
        }
    }

    /// The block certified in `view` by a notarization (or a finalization, which implies one).
    fn certified_block(&self, view: u64) -> Option<Hash> {
        let state = self.views.get(&view)?;
        state
            .notarization
            .as_ref()
            .or(state.finalization.as_ref())
            .map(|c| c.block)
    }

    fn maybe_schedule_proposal(&mut self, out: &mut Vec<Action>) {
        let view = self.view;
        if self.cfg.me != Some(self.leader_of(view)) {
            return;
        }
        let state = self.views.get(&view);
        if state.is_some_and(|s| s.proposed || s.propose_scheduled || s.timed_out) {
            return;
        }
        match self.select_parent() {
            Some((_, _, _, parent_ts)) => {
                let at_us = self
                    .now
                    .max(parent_ts.saturating_add(self.cfg.block_time_us));
                self.state(view).propose_scheduled = true;
                out.push(Action::SetTimer {
                    view,
                    kind: TimerKind::Propose,
                    at_us,
                });
            }
            None => self.fetch_missing_parent(out),
        }
    }

    /// When the notarized block of an earlier view is unknown, ask for it.
    fn fetch_missing_parent(&mut self, out: &mut Vec<Action>) {
        // Before the core entered a view of its epoch (a restarted node whose signing guard is
        // past the epoch its store reached), there is no earlier view to look at.
        let from = self.tip.view + 1;
        if from >= self.view {
            return;
        }
        let missing: Vec<Hash> = self
            .views
            .range(from..self.view)
            .filter_map(|(_, s)| {
                s.notarization
                    .as_ref()
                    .or(s.finalization.as_ref())
                    .map(|c| c.block)
            })
            .filter(|h| !self.blocks.contains_key(h))
            .collect();
        for h in missing {
            self.fetch(h, out);
        }
    }

    fn fetch(&mut self, block: Hash, out: &mut Vec<Action>) {
        let due = match self.fetching.get(&block) {
            Some(&at) => self.now.saturating_sub(at) >= self.cfg.retry_us,
            None => true,
        };
        if due {
            self.fetching.insert(block, self.now);
            out.push(Action::Fetch {
                block,
                from_height: self.tip.height + 1,
            });
        }
    }

    fn on_timer(&mut self, view: u64, kind: TimerKind, out: &mut Vec<Action>) {
        if view != self.view {
            return;
        }
        match kind {
            TimerKind::Propose => self.propose(out),
            TimerKind::Timeout => {
                // A node outside the epoch's set follows without voting.
                let voter = self.cfg.me.is_some();
                let s = self.state(view);
                s.timed_out = true;
                if voter && !s.voted_finalize && !s.voted_nullify {
                    s.voted_nullify = true;
                    out.push(Action::Vote {
                        kind: VoteKind::Nullify,
                        view,
                        height: 0,
                        block: [0; 32],
                    });
                }
                out.push(Action::SetTimer {
                    view,
                    kind: TimerKind::Retry,
                    at_us: self.now.saturating_add(self.cfg.retry_us),
                });
            }
            TimerKind::Retry => {
                let mine = self
                    .views
                    .get(&view)
                    .map(|s| s.mine.clone())
                    .unwrap_or_default();
                for vote in mine {
                    out.push(Action::Broadcast(Message::Vote(vote)));
                }
                self.request_missing_votes(view, out);
                if let Some(cert) = &self.entry_certificate {
                    out.push(Action::Broadcast(Message::Certificate(cert.clone())));
                }
                // Ask again for any block that blocks progress.
                self.fetch_missing_parent(out);
                self.try_commit(out);
                out.push(Action::SetTimer {
                    view,
                    kind: TimerKind::Retry,
                    at_us: self.now.saturating_add(self.cfg.retry_us),
                });
            }
        }
    }

    /// Asks again for our votes in `view` that were requested but never came back signed (the
    /// signing guard could not write its record, e.g. a full disk or no file descriptors). The
    /// guard answers a repeat of a vote it did record, so asking twice is safe.
    fn request_missing_votes(&self, view: u64, out: &mut Vec<Action>) {
        let Some(s) = self.views.get(&view) else {
            return;
        };
        let signed = |kind: VoteKind| s.mine.iter().any(|v| v.kind == kind);
        if s.voted_nullify && !signed(VoteKind::Nullify) {
            out.push(Action::Vote {
                kind: VoteKind::Nullify,
                view,
                height: 0,
                block: [0; 32],
            });
        }
        if s.voted_finalize && !signed(VoteKind::Finalize) {
            if let Some(c) = &s.notarization {
                out.push(Action::Vote {
                    kind: VoteKind::Finalize,
                    view,
                    height: c.height,
                    block: c.block,
                });
            }
        }
        let leader = self.cfg.me == Some(self.leader_of(view));
        if s.voted_notarize && !leader && !signed(VoteKind::Notarize) {
            if let Some(block) = s.proposals.first().and_then(|h| self.blocks.get(h)) {
                out.push(Action::Vote {
                    kind: VoteKind::Notarize,
                    view,
                    height: block.height(),
                    block: block.proposal.header.hash(),
                });
            }
        }
    }

    fn propose(&mut self, out: &mut Vec<Action>) {
        let view = self.view;
        if self.cfg.me != Some(self.leader_of(view)) {
            return;
        }
        let state = self.state(view);
        if state.proposed || state.timed_out {
            return;
        }
        let Some((parent, parent_view, parent_height, parent_ts)) = self.select_parent() else {
            self.state(view).propose_scheduled = false;
            self.fetch_missing_parent(out);
            return;
        };
        // Transactions already in non-finalized ancestors must not be proposed again.
        let mut exclude = Vec::new();
        let mut cursor = parent;
        while cursor != self.tip.hash {
            let Some(block) = self.blocks.get(&cursor) else {
                break;
            };
            exclude.extend_from_slice(&block.tx_hashes);
            cursor = block.parent();
        }
        // Send the certificates that make the parent valid first (same stream, so they arrive
        // first): validators that missed them, e.g. while restarting, can then check the proposal.
        for certificate in self.justification(parent_view, view) {
            out.push(Action::Broadcast(Message::Certificate(certificate)));
        }
        let state = self.state(view);
        state.proposed = true;
        state.voted_notarize = true;
        out.push(Action::Propose(ProposalSlot {
            view,
            height: parent_height + 1,
            parent,
            parent_view,
            parent_timestamp_us: parent_ts,
            exclude,
            seal: parent_height >= self.last_height(),
        }));
    }

    /// The certificates that justify a block of `view` extending a block of `parent_view`: the
    /// parent's notarization (or the finalization of our tip) and the nullification of every view
    /// in between.
    fn justification(&self, parent_view: u64, view: u64) -> Vec<Certificate> {
        let mut certificates = Vec::new();
        let parent_certificate = if parent_view == self.tip.view {
            self.tip_certificate.clone()
        } else {
            self.views
                .get(&parent_view)
                .and_then(|s| s.notarization.as_ref().or(s.finalization.as_ref()).cloned())
        };
        certificates.extend(parent_certificate);
        certificates.extend(
            self.views
                .range(parent_view.saturating_add(1).max(self.first_view())..view)
                .filter_map(|(_, s)| s.nullification.clone()),
        );
        certificates
    }

    fn on_proposal(&mut self, p: VerifiedProposal, out: &mut Vec<Action>) {
        let view = p.proposal().header.view;
        let hash = *p.hash();
        if !self.accepts_view(view) {
            return;
        }
        let header = &p.proposal().header;
        if header.height > self.last_height() && !p.proposal().txs.is_empty() {
            return; // Above the boundary only seals are proposed.
        }
        let leader_vote = p.leader_vote().clone();
        let state = self.state(view);
        if !state.proposals.contains(&hash) {
            if state.proposals.len() >= 2 {
                return; // An equivocating leader gets no more memory than two blocks per view.
            }
            if let Some(first) = state.proposals.first().copied() {
                if let Some(first_block) = self.blocks.get(&first) {
                    out.push(Action::Evidence(Box::new(Evidence {
                        kind: EvidenceKind::ConflictingProposal,
                        signer: p.proposal().header.proposer,
                        view,
                        first: Message::Proposal(first_block.proposal.clone()),
                        second: Message::Proposal(p.proposal().clone()),
                    })));
                }
            }
            self.state(view).proposals.push(hash);
            self.blocks.insert(
                hash,
                Block {
                    proposal: p.proposal().clone(),
                    tx_hashes: p.tx_hashes().to_vec(),
                },
            );
        }
        self.fetching.remove(&hash);
        if self.cfg.me == Some(p.proposal().header.proposer) {
            self.state(view).voted_notarize = true;
        }
        self.on_vote(leader_vote, out);
        self.maybe_schedule_proposal(out);
        self.try_notarize(out);
        self.try_commit(out);
    }

    /// Notarize the current view's proposal if it is valid and we may still vote.
    fn try_notarize(&mut self, out: &mut Vec<Action>) {
        let view = self.view;
        let Some(state) = self.views.get(&view) else {
            return;
        };
        if state.voted_notarize || state.timed_out || self.cfg.me.is_none() {
            return;
        }
        let Some(&hash) = state.proposals.first() else {
            return;
        };
        let Some(block) = self.blocks.get(&hash) else {
            return;
        };
        let h = block.proposal.header.clone();
        // The parent must be certified: the finalized tip, or notarized in its view.
        let parent_ok = if h.parent_view == self.tip.view {
            h.parent == self.tip.hash && h.height == self.tip.height + 1
        } else if h.parent_view > self.tip.view {
            if self.certified_block(h.parent_view) != Some(h.parent) {
                return; // The notarization may still arrive.
            }
            match self.blocks.get(&h.parent) {
                Some(parent) => {
                    h.height == parent.height() + 1
                        && h.timestamp_us > parent.proposal.header.timestamp_us
                }
                None => {
                    self.fetch(h.parent, out);
                    return;
                }
            }
        } else {
            false
        };
        if !parent_ok {
            return;
        }
        if h.parent_view == self.tip.view && h.timestamp_us <= self.tip.timestamp_us {
            return;
        }
        // Every view of this epoch strictly between the parent's and this one must be nullified.
        for v in (h.parent_view + 1).max(self.first_view())..view {
            let nullified = self
                .views
                .get(&v)
                .is_some_and(|s| s.nullification.is_some());
            if !nullified {
                return;
            }
        }
        if h.timestamp_us > self.now.saturating_add(self.cfg.max_clock_drift_us) {
            return;
        }
        // Last, the application executes it (its parent is certified and held, so it can).
        let state = self.state(view);
        match state.execution {
            Execution::NotAsked => {
                state.execution = Execution::Asked;
                out.push(Action::Verify { view, block: hash });
                return;
            }
            Execution::Asked | Execution::Invalid => return,
            Execution::Valid => {}
        }
        self.state(view).voted_notarize = true;
        out.push(Action::Vote {
            kind: VoteKind::Notarize,
            view,
            height: h.height,
            block: hash,
        });
    }

    fn on_verified(&mut self, view: u64, block: Hash, valid: bool, out: &mut Vec<Action>) {
        let Some(state) = self.views.get_mut(&view) else {
            return;
        };
        if state.proposals.first() != Some(&block) || state.execution != Execution::Asked {
            return;
        }
        state.execution = if valid {
            Execution::Valid
        } else {
            Execution::Invalid
        };
        self.try_notarize(out);
    }

    fn on_vote(&mut self, vote: VerifiedVote, out: &mut Vec<Action>) {
        let v = vote.vote().clone();
        if !self.accepts_view(v.view) {
            return;
        }
        if Some(v.signer) == self.cfg.me {
            let s = self.state(v.view);
            if !s.mine.contains(&v) {
                s.mine.push(v.clone());
            }
        }
        let state = self.state(v.view);
        let conflict = match v.kind {
            VoteKind::Notarize => state.notarize.get(&v.signer).map(|prev| {
                (
                    EvidenceKind::ConflictingNotarize,
                    prev,
                    prev.vote().block != v.block,
                )
            }),
            VoteKind::Finalize => state
                .nullify
                .get(&v.signer)
                .map(|prev| (EvidenceKind::FinalizeAndNullify, prev, true))
                .or_else(|| {
                    state.finalize.get(&v.signer).map(|prev| {
                        (
                            EvidenceKind::ConflictingFinalize,
                            prev,
                            prev.vote().block != v.block,
                        )
                    })
                }),
            VoteKind::Nullify => state
                .finalize
                .get(&v.signer)
                .map(|prev| (EvidenceKind::FinalizeAndNullify, prev, true)),
        };
        if let Some((kind, prev, conflicting)) = conflict {
            if conflicting {
                let first = prev.vote().clone();
                // Reported once per validator, view and kind, however often it is replayed.
                if state.reported.insert((v.signer, kind)) {
                    out.push(Action::Evidence(Box::new(Evidence {
                        kind,
                        signer: v.signer,
                        view: v.view,
                        first: Message::Vote(first),
                        second: Message::Vote(v.clone()),
                    })));
                }
            }
            // A finalize after a nullify (or the reverse) is still counted toward its own tally:
            // the offender's stake is below 1/3, and dropping it could only hurt liveness.
            if kind != EvidenceKind::FinalizeAndNullify {
                return;
            }
        }
        let votes = match v.kind {
            VoteKind::Notarize => &mut state.notarize,
            VoteKind::Finalize => &mut state.finalize,
            VoteKind::Nullify => &mut state.nullify,
        };
        if votes.contains_key(&v.signer) {
            return;
        }
        votes.insert(v.signer, vote);
        self.check_quorum(v.view, v.kind, v.block, v.height, out);
    }

    /// Aggregates a certificate when the votes of `kind` for `block` in `view` reach a quorum.
    fn check_quorum(
        &mut self,
        view: u64,
        kind: VoteKind,
        block: Hash,
        height: u64,
        out: &mut Vec<Action>,
    ) {
        let n = self.validators.len();
        let Some(state) = self.views.get(&view) else {
            return;
        };
        let (votes, done) = match kind {
            VoteKind::Notarize => (&state.notarize, state.notarization.is_some()),
            VoteKind::Finalize => (&state.finalize, state.finalization.is_some()),
            VoteKind::Nullify => (&state.nullify, state.nullification.is_some()),
        };
        if done {
            return;
        }
        let mut signers: Vec<usize> = Vec::new();
        let mut signatures: Vec<Signature> = Vec::new();
        for (signer, vote) in votes {
            // The height is part of what each vote signs: a vote for the right block with another
            // height (only a Byzantine signer sends one) must not spoil the aggregate.
            if vote.vote().block == block && vote.vote().height == height {
                signers.push(*signer as usize);
                signatures.push(*vote.signature());
            }
        }
        let Some(stake) = self.validators.stake_of(signers.iter().copied()) else {
            return;
        };
        if !self.validators.is_quorum(stake) {
            return;
        }
        let Ok(aggregate) = Signature::aggregate(&signatures) else {
            return;
        };
        let cert_kind = match kind {
            VoteKind::Notarize => CertificateKind::Notarization,
            VoteKind::Finalize => CertificateKind::Finalization,
            VoteKind::Nullify => CertificateKind::Nullification,
        };
        let certificate = Certificate {
            kind: cert_kind,
            chain_id: self.cfg.chain_id,
            epoch: self.cfg.epoch,
            view,
            height,
            block,
            signers: bitmap_from_signers(signers.iter().copied(), n),
            signature: aggregate.to_bytes(),
        };
        self.on_certificate(certificate, true, out);
    }

    fn on_certificate(&mut self, cert: Certificate, local: bool, out: &mut Vec<Action>) {
        let view = cert.view;
        if view <= self.tip.view {
            return;
        }
        // Certificates are proofs, so they may move us arbitrarily far ahead (catch-up).
        let state = self.state(view);
        let slot = match cert.kind {
            CertificateKind::Notarization => &mut state.notarization,
            CertificateKind::Finalization => &mut state.finalization,
            CertificateKind::Nullification => &mut state.nullification,
        };
        if slot.is_some() {
            return;
        }
        *slot = Some(cert.clone());
        out.push(Action::Certified(cert.clone()));
        if local {
            out.push(Action::Broadcast(Message::Certificate(cert.clone())));
        }
        match cert.kind {
            CertificateKind::Notarization => {
                let voter = self.cfg.me.is_some();
                let state = self.state(view);
                if !state.voted_nullify && !state.voted_finalize && voter {
                    state.voted_finalize = true;
                    out.push(Action::Vote {
                        kind: VoteKind::Finalize,
                        view,
                        height: cert.height,
                        block: cert.block,
                    });
                }
                if !self.blocks.contains_key(&cert.block) {
                    self.fetch(cert.block, out);
                }
            }
            CertificateKind::Finalization => {
                self.pending.insert(view, cert.clone());
                self.try_commit(out);
            }
            CertificateKind::Nullification => {}
        }
        if view >= self.view {
            self.entry_certificate = Some(cert);
            self.enter_view(view + 1, out);
        } else {
            // A late certificate can unblock the current view's proposal or our own.
            self.maybe_schedule_proposal(out);
            self.try_notarize(out);
        }
    }

    /// Commits pending finalizations, lowest view first, as far as their ancestry is known.
    fn try_commit(&mut self, out: &mut Vec<Action>) {
        while let Some((&view, cert)) = self.pending.iter().next() {
            let cert = cert.clone();
            if view <= self.tip.view {
                self.pending.remove(&view);
                continue;
            }
            // Walk back from the finalized block to our tip; heights must step down by one and
            // end right above the tip.
            let mut chain = Vec::new();
            let mut cursor = cert.block;
            let mut expected: Option<u64> = None;
            let extends_tip = loop {
                if cursor == self.tip.hash {
                    break expected.is_none_or(|e| e == self.tip.height);
                }
                let Some(block) = self.blocks.get(&cursor) else {
                    self.fetch(cursor, out);
                    return;
                };
                let height = block.height();
                if height <= self.tip.height || expected.is_some_and(|e| e != height) {
                    break false;
                }
                expected = Some(height - 1);
                chain.push(cursor);
                cursor = block.parent();
            };
            if !extends_tip {
                // A finalized block that does not extend our finalized tip with consecutive
                // heights: only possible with at least 1/3 Byzantine stake. Never commit it.
                tracing::error!(view, "finalization conflicts with the finalized chain");
                self.pending.remove(&view);
                return;
            }
            self.pending.remove(&view);
            self.tip_certificate = Some(cert.clone());
            let last_height = self.last_height();
            let mut seals = Vec::new();
            for hash in chain.into_iter().rev() {
                let Some(block) = self.blocks.remove(&hash) else {
                    return;
                };
                if block.height() > last_height {
                    seals.push(block.proposal);
                    continue;
                }
                let h = &block.proposal.header;
                self.tip = Tip {
                    height: h.height,
                    hash,
                    view: h.view,
                    timestamp_us: h.timestamp_us,
                };
                out.push(Action::Finalized(Box::new(FinalizedBlock {
                    proposal: block.proposal,
                    tx_hashes: block.tx_hashes,
                    hash,
                    certificate: cert.clone(),
                    checkpoint: None,
                })));
            }
            if self.tip.height == last_height {
                self.ended = true;
                self.pending.clear();
                out.push(Action::EpochEnded {
                    boundary: self.tip,
                    certificate: cert,
                    seals,
                });
                return;
            }
            self.prune();
        }
    }

    /// Takes this epoch's boundary block as the finalized tip without the blocks between (see
    /// [`Checkpoint`]) and ends the epoch, then asks for what follows. Ignored unless the
    /// certificate finalizes, through hash links of consecutive heights over the seals, this
    /// epoch's boundary block, that block is more than one height above the tip (right above
    /// it, ordinary sync commits it), and the chain reached an epoch at least
    /// [`RETAINED_EPOCHS`] − 1 later (an honest peer that pruned this epoch runs
    /// [`RETAINED_EPOCHS`] epochs later and holds a certificate of it, and sends it with the
    /// checkpoint): a peer that offers a checkpoint sooner only tries to make this node skip
    /// blocks. Where that certificate's set is not known here (a chain whose sets come from
    /// its registry) its epoch counts unverified: a peer that lies about it makes this node
    /// skip blocks it could have executed, and restore their state from its peers instead
    /// (`quasar_node::state_sync`); what it takes is still a certified boundary.
    fn on_checkpoint(&mut self, checkpoint: Checkpoint, out: &mut Vec<Action>) {
        let Checkpoint {
            boundary,
            seals,
            certificate,
            state_proof,
        } = checkpoint;
        let last_height = self.last_height();
        let cert = certificate.certificate();
        let header = &boundary.proposal().header;
        if cert.kind != CertificateKind::Finalization
            || self.reached_epoch < self.cfg.epoch.saturating_add(RETAINED_EPOCHS - 1)
            || header.epoch != self.cfg.epoch
            || header.height != last_height
            || header.height <= self.tip.height.saturating_add(1)
        {
            return;
        }
        let mut by_hash: HashMap<Hash, Proposal> = seals
            .into_iter()
            .filter(|s| s.proposal().header.epoch == self.cfg.epoch)
            .map(|s| (*s.hash(), s.proposal().clone()))
            .collect();
        let mut chain = Vec::new();
        let (mut cursor, mut height) = (cert.block, cert.height);
        while cursor != *boundary.hash() {
            let Some(seal) = by_hash.remove(&cursor) else {
                return;
            };
            if seal.header.height != height || height <= last_height {
                return;
            }
            cursor = seal.header.parent;
            height -= 1;
            chain.push(seal);
        }
        if height != last_height {
            return;
        }
        chain.reverse();
        self.tip = Tip {
            height: header.height,
            hash: *boundary.hash(),
            view: header.view,
            timestamp_us: header.timestamp_us,
        };
        self.tip_certificate = Some(cert.clone());
        self.ended = true;
        self.pending.clear();
        tracing::info!(
            epoch = self.cfg.epoch,
            height = self.tip.height,
            "checkpoint: took the epoch's boundary block without the pruned blocks below it"
        );
        out.push(Action::Finalized(Box::new(FinalizedBlock {
            proposal: boundary.proposal().clone(),
            tx_hashes: boundary.tx_hashes().to_vec(),
            hash: self.tip.hash,
            certificate: cert.clone(),
            checkpoint: Some(state_proof),
        })));
        out.push(Action::Fetch {
            block: [0; 32],
            from_height: self.tip.height + 1,
        });
        out.push(Action::EpochEnded {
            boundary: self.tip,
            certificate: cert.clone(),
            seals: chain,
        });
    }

    /// Drops state the finalized tip makes irrelevant, so memory stays bounded.
    fn prune(&mut self) {
        let tip = self.tip;
        self.views = self.views.split_off(&(tip.view + 1));
        self.blocks.retain(|_, b| b.height() > tip.height);
        self.fetching.retain(|h, _| *h != tip.hash);
        if self.view <= tip.view {
            // Cannot happen: finalization of view v moves us past v. Kept as a guard.
            self.view = tip.view;
        }
    }
}
