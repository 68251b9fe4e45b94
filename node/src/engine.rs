//! One validator's consensus engine: the pure [`Core`], its [`VoteSigner`] and its [`Store`], and
//! the order in which the core's actions touch them. The tokio runtime and the deterministic
//! simulator both drive a validator through this type, so the simulator exercises the same
//! persistence code a real validator runs, against a store with injected faults
//! ([`quasar_storage::SimStore`]).
//!
//! # Ordering rules (docs/architecture.md §2, §6, §10)
//!
//! - A vote or proposal is signed only after the signing guard made its record durable
//!   ([`VoteSigner`]); a refused or failed record means nothing is signed or sent.
//! - A proposal is stored and flushed before it is broadcast, so this node can serve it to peers
//!   that fetch it, and a leader restarted in the middle of its view proposes the same block
//!   again (its guard names the block's hash) instead of asking its guard for a conflicting one.
//!   A leader whose proposal was not stored stays silent in that view: its signature never left.
//!   A received proposal is stored (not flushed) before the core sees it, so that this node can
//!   serve it; blocks reach the store through the engine only ([`Engine::handle`]).
//! - A certificate of a view above the finalized tip is stored **and flushed** before the core
//!   acts on it further: if every validator lost the certificate of a view they all left, nobody
//!   could justify a proposal across it again.
//! - Finalized blocks are committed as they come; they are flushed, and only then reported to the
//!   [`Host`] ([`Host::finalized`]), before the next input or the next proposal. So whatever this
//!   node has reported as final (to clients, metrics, its mempool) survives a crash.
//! - A storage error on any of these paths is fatal ([`EngineError`]): the caller must stop the
//!   validator rather than run on a store it cannot trust. Evidence is the exception: it comes
//!   from other, possibly Byzantine, validators and is not on the safety path, so a failure to
//!   store it is reported to the host and consensus goes on.

use crate::signer::{guard_kind, SignError, VoteSigner};
use quasar_consensus::{
    Action, AppError, Application, Core, CoreConfig, EpochSets, Evidence, EvidenceKind,
    FinalizedBlock, Input, ProposalSlot, TimerKind, Tip, Verifier,
};
use quasar_crypto::hash::Hash;
use quasar_lanes::bls::signers_from_bitmap;
use quasar_storage::evidence::kind as evidence_kind;
use quasar_storage::{
    EvidenceRecord, Store, StoreError, VoteIntent, VoteKind as GuardVoteKind, GUARD_WINDOW,
};
use quasar_wire::{decode, tx_hash, Certificate, Message, MessageRef, Proposal};
use std::collections::VecDeque;

/// Why the engine stopped. Every variant is fatal to the validator process.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The store failed to write or flush.
    #[error("storage: {0}")]
    Storage(#[from] StoreError),
    /// The store holds something that cannot be what this node wrote (a finalized block that is
    /// missing or does not decode).
    #[error("store inconsistent: {0}")]
    Inconsistent(String),
    /// A message this node built does not encode (a bug; nothing was stored or sent).
    #[error("encode {what}: {error}")]
    Encode {
        /// What was being encoded.
        what: &'static str,
        /// The wire error.
        error: quasar_wire::WireError,
    },
    /// A message signed with this validator's key, in a view above its fence, that its signing
    /// guard never recorded: another process signs with this key (or the guard file was replaced
    /// by an older copy). Signing on would equivocate.
    #[error(
        "another instance is signing with this key: it signed {kind:?} of block {} in view \
         {view}, which this validator's signing guard never recorded; stop every other process \
         that holds this validator's key (or put back the current guard file) before starting \
         this one again",
        hex::encode(&block[..8])
    )]
    SecondInstance {
        /// The view of the foreign signature.
        view: u64,
        /// What it signed (a proposal counts as its proposer's notarize vote).
        kind: GuardVoteKind,
        /// The block it signed (all zeros for nullify).
        block: Hash,
    },
    /// The application cannot follow the finalized chain: a finalized block does not execute
    /// to the state root its header claims (this node's state diverged from the network's),
    /// or the application's storage failed.
    #[error("application: {0}")]
    Application(#[from] AppError),
}

/// A block this node finalized, reported to the [`Host`] once it is durable.
#[derive(Debug, Clone)]
pub struct Published {
    /// The block.
    pub proposal: Proposal,
    /// Its hash.
    pub hash: Hash,
    /// The finalization certificate that covered it.
    pub certificate: Certificate,
    /// Hashes of its transactions, in block order.
    pub tx_hashes: Vec<Hash>,
    /// When this node saw the finalize quorum (host clock, µs), before any storage work.
    pub seen_us: u64,
    /// It is a checkpoint ([`quasar_consensus::Checkpoint`]): the blocks between the previous
    /// tip and this one were skipped, and are not stored here.
    pub checkpoint: bool,
}

/// What the engine needs from its surroundings: a clock, the network, timers, block contents,
/// and places to report what happened. The runtime implements it over tokio and QUIC, the
/// simulator over its event queue.
pub trait Host {
    /// The current time, microseconds (since the Unix epoch in the runtime).
    fn now_us(&self) -> u64;
    /// Sends a message this validator produced to every other validator; `bytes` is its
    /// encoding.
    fn broadcast(&mut self, message: Message, bytes: Vec<u8>);
    /// Arms a timer that feeds `Input::Timer { view, kind }` back at `at_us`.
    fn set_timer(&mut self, view: u64, kind: TimerKind, at_us: u64);
    /// Asks peers for the block `block` and the finalized blocks from `from_height`.
    fn fetch(&mut self, block: Hash, from_height: u64);
    /// Candidate transactions for a block this validator is about to propose in `slot` (none
    /// of the hashes in `slot.exclude`), in the order they should be tried; the application
    /// keeps those that apply ([`Application::propose`]).
    fn block_txs(&mut self, slot: &ProposalSlot) -> Vec<Vec<u8>>;
    /// Transactions the application refused for good ([`quasar_consensus::Payload::invalid`]): drop them from
    /// the mempool.
    fn discard(&mut self, _txs: &[Vec<u8>]) {}
    /// A block is final and durable (called in height order).
    fn finalized(&mut self, block: &Published);
    /// Equivocation was detected; `stored` is whether the evidence record was new, or why it
    /// could not be stored.
    fn evidence(&mut self, evidence: &Evidence, stored: Result<bool, String>);
    /// A certificate of a view above the finalized tip is now durable.
    fn certified(&mut self, _certificate: &Certificate) {}
    /// The core entered `view`, led by `leader`.
    fn entered_view(&mut self, _view: u64, _leader: u32) {}
    /// A vote or proposal was signed.
    fn signed(&mut self) {}
    /// The signing guard refused (or failed to record) a vote or proposal for `view`; nothing
    /// was signed.
    fn refused(&mut self, _view: u64, _error: &SignError) {}
    /// Whether this validator reaches every other validator now. A validator listening with a
    /// new guard gives up waiting for a certificate only while it does
    /// ([`Engine::listen_before_signing`]): silence from peers it cannot reach says nothing about
    /// what the chain certified. The default (a host without a peer view) answers `true`.
    fn all_peers_connected(&self) -> bool {
        true
    }
}

/// What [`Engine::open`] found in the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recovery {
    /// The finalized tip (genesis on an empty store).
    pub tip: Tip,
    /// The epoch the engine runs: the one deciding the height above the tip.
    pub epoch: u64,
    /// Kept view certificates restored into the core.
    pub restored: usize,
    /// Kept view certificates that no longer verify and were ignored.
    pub dropped: usize,
    /// The newest view above the signing guard's highest recorded view at which the store holds
    /// a certificate this validator signed (a finalization of a stored block, or a kept view
    /// certificate), if any. With a guard that records something, `Some` means the guard is
    /// older than the store: restored from a backup or copied from elsewhere, and unsafe to sign
    /// with. A validator that listens before signing ([`Engine::listen_before_signing`])
    /// fences past it instead.
    pub signed_above_guard: Option<u64>,
}

/// The genesis a validator starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenesisPoint {
    /// Hash of the genesis block.
    pub hash: Hash,
    /// Its timestamp, microseconds since the Unix epoch.
    pub time_us: u64,
}

/// Most entries of each kind [`Store::prune_history`] removes per finalized block: a 7200-block
/// epoch goes in about 113 steps of a couple of milliseconds each, instead of one pause of a
/// quarter second at the boundary (`cargo bench -p quasar-bench --bench storage`).
pub const PRUNE_STEP: usize = 64;

/// How long a validator with a new signing guard listens ([`Engine::listen_before_signing`]).
#[derive(Debug, Clone, Copy)]
struct Listening {
    /// The listening period ends at this time (µs); it fences and signs once the period is over
    /// and the network has certified [`Listening::must_pass`].
    until_us: u64,
    /// Without any certificate, it signs without a fence from this time on (µs).
    give_up_us: u64,
    /// [`LISTEN_GIVE_UP_PERIODS`] listening periods (µs): the give-up time moves this far past
    /// every moment some peer is out of reach.
    give_up_period_us: u64,
    /// The highest view of a verified certificate it has seen (0: none).
    certified_view: u64,
    /// Fixed when the period ends: one above the highest certified view heard by then, the view
    /// the network was in. The network must certify it (move past it) before this validator
    /// signs: its earlier incarnation may have signed there.
    must_pass: Option<u64>,
    /// The highest view of a message signed with this validator's key that it received while
    /// listening (its earlier incarnation's, relayed or fetched): the fence covers it too.
    own_view: u64,
    /// Whether the wait for the network to move past [`Listening::must_pass`] was logged.
    wait_logged: bool,
}

/// How many listening periods a validator with a new guard waits for a first certificate before
/// it concludes that the chain has certified nothing and signs without a fence.
pub const LISTEN_GIVE_UP_PERIODS: u64 = 10;

/// A validator's core, signer, store and application; see the module docs.
pub struct Engine<S: Store, A: Application> {
    core: Core,
    signer: VoteSigner,
    store: S,
    app: A,
    /// The core's configuration (the next epoch's core is built from it).
    cfg: CoreConfig,
    /// Every epoch's validators; each epoch's core gets its own.
    sets: EpochSets,
    /// History below this height is still being pruned, [`PRUNE_STEP`] entries per finalized
    /// block.
    prune_below: Option<u64>,
    /// An archive node: nothing is pruned ([`Engine::keep_history`]).
    archive: bool,
    /// Listening before signing ([`Engine::listen_before_signing`]).
    listening: Option<Listening>,
    /// The view a new guard was fenced at: messages signed with this key at or below it may be
    /// an earlier incarnation's, so they are not judged ([`Engine::handle`]).
    fenced_view: u64,
    /// No [`EngineError::SecondInstance`] ([`Engine::allow_second_instance`]).
    second_instance_allowed: bool,
    /// [`Recovery::signed_above_guard`]: a listening validator fences at least up to it.
    signed_above_guard: u64,
}

fn encode(what: &'static str, message: &Message) -> Result<Vec<u8>, EngineError> {
    message
        .encode()
        .map_err(|error| EngineError::Encode { what, error })
}

/// The finalized tip recorded in `store` (`genesis` on an empty store) and the certificate that
/// finalized it.
fn stored_tip<S: Store>(
    store: &S,
    genesis: GenesisPoint,
) -> Result<(Tip, Option<Certificate>), EngineError> {
    let Some((height, hash)) = store.finalized_tip()? else {
        let tip = Tip {
            height: 0,
            hash: genesis.hash,
            view: 0,
            timestamp_us: genesis.time_us,
        };
        return Ok((tip, None));
    };
    let stored = store.block_by_height(height)?.ok_or_else(|| {
        EngineError::Inconsistent(format!(
            "finalized block {} missing from the store",
            hex::encode(hash)
        ))
    })?;
    let (Ok(MessageRef::Proposal(p)), Ok(MessageRef::Certificate(c))) =
        (decode(&stored.block), decode(&stored.certificate))
    else {
        return Err(EngineError::Inconsistent(format!(
            "finalized block or certificate at height {height} does not decode"
        )));
    };
    let header = p.header();
    let tip = Tip {
        height,
        hash,
        view: header.view,
        timestamp_us: header.timestamp_us,
    };
    Ok((tip, Some(c.to_owned())))
}

/// The finalization certificate stored for `height`.
fn stored_certificate<S: Store>(store: &S, height: u64) -> Result<Certificate, EngineError> {
    let stored = store.block_by_height(height)?.ok_or_else(|| {
        EngineError::Inconsistent(format!("finalized height {height} missing from the store"))
    })?;
    match decode(&stored.certificate) {
        Ok(MessageRef::Certificate(c)) => Ok(c.to_owned()),
        _ => Err(EngineError::Inconsistent(format!(
            "the certificate of height {height} does not decode"
        ))),
    }
}

/// The index of the validator with key `key` in `epoch`'s set, if it is a member; `None` too
/// (with an error logged) when the epoch's set is not decided here: its boundary block two
/// epochs back was not executed (a checkpoint taken without state, not restored yet), so this
/// node follows the chain without signing rather than sign under a set it cannot know.
fn member_index(sets: &EpochSets, epoch: u64, key: &quasar_crypto::bls::PublicKey) -> Option<u32> {
    if !sets.known(epoch) {
        tracing::error!(
            epoch,
            "this epoch's validator set is not known here (it comes from the state at the \
             boundary block two epochs back, which this node has not executed or restored): \
             following without signing"
        );
        return None;
    }
    sets.at(epoch).index_of(key)
}

impl<S: Store, A: Application> Engine<S, A> {
    /// Rebuilds a validator from its store and signing guard (first start or restart): binds the
    /// store to `genesis`, resumes from the stored finalized tip and restores the kept view
    /// certificates that still verify under `verifier`. The engine runs the epoch that decides
    /// the height above the tip (`cfg.epoch` is replaced), and moves on to the next epoch by
    /// itself when a boundary block is final. Each epoch's core runs with that epoch's
    /// validator set from `verifier` ([`Verifier::sets`]), and `cfg.me` is replaced by the
    /// signer key's index in it (`None` in epochs where it is not a member: the node follows
    /// the chain without signing). Call [`Engine::start`] next.
    ///
    /// The application `app` is brought up to the tip first: the finalized blocks above its
    /// committed height are executed again from the store (a crash between the block store's
    /// flush and the application's commit leaves it behind, never ahead).
    ///
    /// Errors: [`EngineError::Storage`] (including [`StoreError::WrongGenesis`]);
    /// [`EngineError::Inconsistent`] for a finalized block or kept certificate that does not
    /// decode, or an application ahead of the finalized blocks; [`EngineError::Application`]
    /// when a finalized block does not execute to its root.
    pub fn open(
        store: S,
        mut app: A,
        mut signer: VoteSigner,
        mut cfg: CoreConfig,
        verifier: &Verifier,
        genesis_time_us: u64,
    ) -> Result<(Engine<S, A>, Recovery), EngineError> {
        let genesis = GenesisPoint {
            hash: cfg.genesis,
            time_us: genesis_time_us,
        };
        store.bind_genesis(&genesis.hash)?;
        let (tip, tip_certificate) = stored_tip(&store, genesis)?;
        replay(&store, &mut app, &tip)?;
        let sets = verifier.sets().clone();
        let key = signer.public_key();
        let signed_by_me = |c: &Certificate| {
            let members = sets.at(c.epoch);
            members.index_of(&key).is_some_and(|me| {
                signers_from_bitmap(&c.signers, members.validators.len())
                    .is_ok_and(|signers| signers.contains(&(me as usize)))
            })
        };
        // Finalized certificates from the tip down while their view is above the guard's (views
        // grow with height, so the scan stops at once when the guard is current).
        let guard_view = signer.highest_view();
        let mut signed_above_guard = None;
        for height in (store.history_floor()?.max(1)..=tip.height).rev() {
            let certificate = stored_certificate(&store, height)?;
            if certificate.view <= guard_view {
                break;
            }
            if signed_by_me(&certificate) {
                signed_above_guard = Some(certificate.view);
                break;
            }
        }
        cfg.epoch = cfg.schedule.epoch_of(tip.height.saturating_add(1));
        let members = sets.at(cfg.epoch);
        cfg.me = member_index(&sets, cfg.epoch, &key);
        signer.enter_epoch(cfg.epoch, cfg.me, members.domain.clone());
        let mut core = Core::new(cfg.clone(), members.validators.clone(), tip);
        if let Some(certificate) = tip_certificate {
            core.set_tip_certificate(certificate);
        }
        let (mut restored, mut dropped) = (0, 0);
        for bytes in store.view_certificates()? {
            let Ok(MessageRef::Certificate(c)) = decode(&bytes) else {
                return Err(EngineError::Inconsistent(
                    "a kept view certificate does not decode".into(),
                ));
            };
            match verifier.verify_certificate(c.to_owned()) {
                Ok(verified) => {
                    let view = verified.certificate().view;
                    if view > guard_view && signed_by_me(verified.certificate()) {
                        signed_above_guard = signed_above_guard.max(Some(view));
                    }
                    core.restore(verified);
                    restored += 1;
                }
                Err(_) => dropped += 1,
            }
        }
        let epoch = cfg.epoch;
        // Whatever an interrupted run left to prune is finished as blocks come.
        let prune_below = cfg
            .schedule
            .length()
            .map(|_| cfg.schedule.retained_from(epoch));
        // A fence made before a restart still covers the earlier incarnation's messages.
        let fenced_view = signer.fenced_view();
        let engine = Engine {
            core,
            signer,
            store,
            app,
            cfg,
            sets,
            prune_below,
            archive: false,
            listening: None,
            fenced_view,
            second_instance_allowed: false,
            signed_above_guard: signed_above_guard.unwrap_or(0),
        };
        let recovery = Recovery {
            tip,
            epoch,
            restored,
            dropped,
            signed_above_guard,
        };
        Ok((engine, recovery))
    }

    /// Starts consensus at the view after the guard's highest record (or the tip's view).
    ///
    /// Errors: [`EngineError`] (fatal).
    pub fn start(&mut self, host: &mut impl Host) -> Result<(), EngineError> {
        let actions = self.core.start(host.now_us(), self.signer.highest_view());
        self.perform(host, actions)
    }

    /// Hands one verified input to the core and performs what it asks for.
    ///
    /// A proposal or vote signed with this validator's own key in its current epoch (fetched,
    /// synced or relayed back) is first compared with the signing guard: while listening
    /// ([`Engine::listen_before_signing`]) its view joins the fence; afterwards, one in a view
    /// above the fence that the guard never recorded was signed by another process.
    ///
    /// A received proposal is stored first (not flushed), so that this node can serve the
    /// block to peers that fetch it; the engine is the only writer of blocks. A failure to store
    /// it only means this node cannot serve it, and is not an error.
    ///
    /// Errors: [`EngineError`] (fatal: stop the validator), [`EngineError::SecondInstance`]
    /// among them.
    pub fn handle(&mut self, host: &mut impl Host, input: Input) -> Result<(), EngineError> {
        if let Input::Proposal(p) = &input {
            if let Ok(bytes) = p.proposal().encode() {
                let _ = self
                    .store
                    .put_block(p.proposal().header.height, p.hash(), &bytes);
            }
        }
        if let Some(listening) = self.listening.as_mut() {
            let certified = match &input {
                Input::Certificate(c) => c.certificate().view,
                Input::Checkpoint(c) => c.certificate.certificate().view,
                _ => 0,
            };
            listening.certified_view = listening.certified_view.max(certified);
        }
        if let Some(intent) = self.own_signature(&input) {
            self.judge_own_signature(&intent)?;
        }
        self.stop_listening_when_due(host.now_us(), host.all_peers_connected());
        let actions = self.core.handle(host.now_us(), input);
        self.perform(host, actions)
    }

    /// What `input` asks this validator's guard about, when it carries a signature made with
    /// this validator's key in its current epoch: a proposal is its proposer's notarize vote.
    fn own_signature(&self, input: &Input) -> Option<VoteIntent> {
        let me = self.signer.index()?;
        let epoch = self.signer.epoch();
        match input {
            Input::Proposal(p) => {
                let header = &p.proposal().header;
                (header.epoch == epoch && header.proposer == me).then(|| VoteIntent {
                    view: header.view,
                    kind: GuardVoteKind::Notarize,
                    block: *p.hash(),
                })
            }
            Input::Vote(v) => {
                let vote = v.vote();
                (vote.epoch == epoch && vote.signer == me).then(|| VoteIntent {
                    view: vote.view,
                    kind: guard_kind(vote.kind),
                    block: vote.block,
                })
            }
            _ => None,
        }
    }

    /// While listening, a view this key signed in joins the fence, unless it lies above
    /// [`Listening::must_pass`] once that is fixed: an earlier incarnation signed at most there,
    /// so a signature above it was made by another process that is signing now. Afterwards a
    /// signature the guard never recorded, in a view above the fence and inside the guard's
    /// window, was made by another process holding this key.
    ///
    /// Errors: [`EngineError::SecondInstance`].
    fn judge_own_signature(&mut self, intent: &VoteIntent) -> Result<(), EngineError> {
        let second_instance = || EngineError::SecondInstance {
            view: intent.view,
            kind: intent.kind,
            block: intent.block,
        };
        if let Some(listening) = self.listening.as_mut() {
            let live = listening.must_pass.is_some_and(|view| intent.view > view);
            if live && !self.second_instance_allowed {
                return Err(second_instance());
            }
            listening.own_view = listening.own_view.max(intent.view);
            return Ok(());
        }
        let judged = !self.second_instance_allowed
            && intent.view > self.fenced_view
            && intent.view.saturating_add(GUARD_WINDOW) >= self.signer.highest_view();
        if judged && !self.signer.recorded(intent) {
            return Err(second_instance());
        }
        Ok(())
    }

    /// For a validator whose signing guard is new on a chain that is already running (a late
    /// first start, or a data directory that was lost): from `now_us` it signs nothing for at
    /// least `listen_us` while it follows the network. When that period is over it takes the
    /// highest view H of a certificate it has heard, and waits until the network certifies a
    /// view V ≥ H + 1 (and at least every view in which it received a message signed with its
    /// own key, or the store holds a certificate it signed: [`Recovery::signed_above_guard`]);
    /// it then fences V ([`VoteSigner::fence`]) and signs from V + 1 on. Call before
    /// [`Engine::start`].
    ///
    /// What this protects: a validator enters view v + 1 only on a certificate of view v, so
    /// every view an earlier incarnation signed in is at most one above a certificate that
    /// existed when it stopped, and certificates only move up. Listening for a view timeout
    /// hears the network's current certificates (a running chain keeps sending them even when
    /// it stalls: timed-out validators rebroadcast their latest one), so H is at least the
    /// highest certificate at the crash, and H + 1 is at least the highest view the earlier
    /// incarnation could have signed in. Waiting for the network to move past H + 1 rather
    /// than signing there is what keeps a leader restarted on an empty data directory from
    /// proposing a second block in the view it led.
    ///
    /// What it costs: the validator counts as absent for the view the network is in. A network
    /// stalled there for want of this validator's vote (fewer than a quorum of others up) stays
    /// stalled until another validator returns; signing would risk equivocation, and the wait
    /// is logged. A chain that has certified nothing (e.g. every validator starting late at
    /// once) sends no certificate: after [`LISTEN_GIVE_UP_PERIODS`] × `listen_us` without one,
    /// all of it with every peer connected ([`Host::all_peers_connected`]: a running chain's
    /// validators rebroadcast their latest certificate while they wait), the validator fences
    /// the views its own key was seen in and signs, so such a chain can still start. Alone, or
    /// with peers out of reach, it never gives up.
    ///
    /// Messages signed with its own key reach it because peers relay them on request
    /// ([`crate::relay`]). Once [`Listening::must_pass`] is fixed, one in a view above it
    /// cannot be the earlier incarnation's: another process is signing with this key now, and
    /// [`Engine::handle`] stops with [`EngineError::SecondInstance`].
    pub fn listen_before_signing(&mut self, now_us: u64, listen_us: u64) {
        self.listening = Some(Listening {
            until_us: now_us.saturating_add(listen_us),
            give_up_us: now_us.saturating_add(listen_us.saturating_mul(LISTEN_GIVE_UP_PERIODS)),
            give_up_period_us: listen_us.saturating_mul(LISTEN_GIVE_UP_PERIODS),
            certified_view: 0,
            must_pass: None,
            own_view: self.signed_above_guard,
            wait_logged: false,
        });
    }

    /// Turns off the second-instance check of [`Engine::handle`]: for the simulator's Byzantine
    /// twins, two processes that share one key on purpose. A validator never calls it.
    pub fn allow_second_instance(&mut self) {
        self.second_instance_allowed = true;
    }

    /// Whether the engine is still listening before signing.
    pub fn listening(&self) -> bool {
        self.listening.is_some()
    }

    fn stop_listening_when_due(&mut self, now_us: u64, all_peers_connected: bool) {
        let Some(listening) = self.listening.as_mut() else {
            return;
        };
        if !all_peers_connected {
            // Give up only after a whole give-up period with every peer in reach.
            listening.give_up_us = now_us.saturating_add(listening.give_up_period_us);
        }
        if now_us < listening.until_us {
            return;
        }
        let certified = listening.certified_view;
        let fence = if certified == 0 {
            if now_us < listening.give_up_us {
                return;
            }
            tracing::warn!(
                view = self.core.view(),
                own_view = listening.own_view,
                "no certificate heard while listening with a new signing guard: the chain \
                 appears to have certified nothing yet, signing without a fence above the views \
                 this key was seen in"
            );
            listening.own_view
        } else {
            let must_pass = *listening.must_pass.get_or_insert(certified + 1);
            let target = must_pass.max(listening.own_view);
            if certified < target {
                if !listening.wait_logged {
                    listening.wait_logged = true;
                    tracing::warn!(
                        certified_view = certified,
                        must_pass = target,
                        "new signing guard: waiting for the network to move past view {target} \
                         before signing, because this validator's earlier incarnation may have \
                         signed there. A network stalled in that view for want of this \
                         validator's vote needs another validator back"
                    );
                }
                return;
            }
            certified
        };
        if let Err(e) = self.signer.fence(fence) {
            // Not durable: keep listening rather than sign without the fence.
            tracing::error!(view = fence, error = %e, "could not fence the signing guard");
            return;
        }
        self.listening = None;
        self.fenced_view = fence;
        tracing::info!(
            fenced_view = fence,
            "listened to the network with a new signing guard: signing from the next view"
        );
    }

    /// Makes this an archive node: it keeps its whole history (blocks, certificates,
    /// QuasarCerts, evidence) instead of pruning past retention. Call before
    /// [`Engine::start`].
    pub fn keep_history(&mut self) {
        self.archive = true;
        self.prune_below = None;
    }

    /// The consensus core (read-only).
    pub fn core(&self) -> &Core {
        &self.core
    }

    /// The signer (the simulator arms guard faults through it and hands the guard over on
    /// restart).
    pub fn signer_mut(&mut self) -> &mut VoteSigner {
        &mut self.signer
    }

    /// The application.
    pub fn app(&self) -> &A {
        &self.app
    }

    /// The application's state was restored from peers at finalized height `height`
    /// ([`crate::state_sync`]): the application reads it ([`Application::restored`]) and
    /// executes the finalized blocks stored above it, up to the tip.
    ///
    /// Errors: [`EngineError::Application`] and the errors of a stored block that does not
    /// decode, as when the engine opens.
    pub fn state_restored(&mut self, height: u64) -> Result<(), EngineError> {
        self.app.restored(height)?;
        replay(&self.store, &mut self.app, &self.core.tip())
    }

    /// The block store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Executes `block` and the ancestors whose state the application lacks, oldest first
    /// (all held by the core, down to a block whose state is at hand). Returns whether the
    /// block is valid; why not is logged.
    fn execute_chain(&mut self, block: &Hash) -> bool {
        let mut chain = Vec::new();
        let mut cursor = *block;
        loop {
            let Some(proposal) = self.core.block(&cursor) else {
                tracing::warn!(
                    block = %hex::encode(&cursor[..8]),
                    "cannot execute: an ancestor is neither held by consensus nor executed"
                );
                return false;
            };
            let header = &proposal.header;
            chain.push(cursor);
            if self
                .app
                .has_state(&header.parent, header.height.saturating_sub(1))
            {
                break;
            }
            cursor = header.parent;
        }
        for hash in chain.into_iter().rev() {
            let (Some(proposal), Some(tx_hashes)) =
                (self.core.block(&hash), self.core.tx_hashes(&hash))
            else {
                return false;
            };
            if let Err(e) = self.app.verify(&hash, proposal, tx_hashes) {
                match &e {
                    AppError::Storage(_) => tracing::error!(error = %e, "execution failed"),
                    _ => tracing::warn!(error = %e, "not notarizing: execution refuses the block"),
                }
                return false;
            }
        }
        true
    }

    /// The payload of a new block in `slot`: candidates from the host, kept by the
    /// application; `None` (logged) when the parent's state cannot be had.
    fn build_payload(
        &mut self,
        host: &mut impl Host,
        slot: &ProposalSlot,
    ) -> Option<quasar_consensus::Payload> {
        let parent_height = slot.height.saturating_sub(1);
        if !self.app.has_state(&slot.parent, parent_height) && !self.execute_chain(&slot.parent) {
            tracing::warn!(
                view = slot.view,
                "not proposing: the parent does not execute"
            );
            return None;
        }
        let candidates = if slot.seal {
            Vec::new()
        } else {
            host.block_txs(slot)
        };
        match self.app.propose(&slot.parent, slot.height, &candidates) {
            Ok(payload) => {
                if !payload.invalid.is_empty() {
                    let invalid: Vec<Vec<u8>> = payload
                        .invalid
                        .iter()
                        .filter_map(|&i| candidates.get(i).cloned())
                        .collect();
                    host.discard(&invalid);
                }
                Some(payload)
            }
            Err(e) => {
                tracing::error!(view = slot.view, error = %e, "not proposing: the application failed");
                None
            }
        }
    }

    /// The proposal this validator signed for `slot`'s view before a restart, whose hash its
    /// guard recorded as `block`: `None` when the store does not hold it (the signature never
    /// left the process: proposals are flushed before they are sent) or when it does not fit
    /// `slot` (another parent: the view cannot get a proposal from this validator any more).
    ///
    /// Errors: [`EngineError::Storage`]; [`EngineError::Inconsistent`] when the stored block
    /// does not decode.
    fn proposed_before_restart(
        &self,
        slot: &ProposalSlot,
        block: &Hash,
    ) -> Result<Option<Proposal>, EngineError> {
        let Some(bytes) = self.store.block_by_hash(block)? else {
            return Ok(None);
        };
        let Ok(MessageRef::Proposal(proposal)) = decode(&bytes) else {
            return Err(EngineError::Inconsistent(format!(
                "stored block {} does not decode",
                hex::encode(block)
            )));
        };
        let proposal = proposal.to_owned();
        let header = &proposal.header;
        let fits = header.view == slot.view
            && header.height == slot.height
            && header.parent == slot.parent
            && header.parent_view == slot.parent_view;
        Ok(fits.then_some(proposal))
    }

    fn send(&self, host: &mut impl Host, message: Message) {
        match message.encode() {
            Ok(bytes) => host.broadcast(message, bytes),
            Err(e) => tracing::error!(error = %e, "could not encode an outgoing message"),
        }
    }

    fn perform(&mut self, host: &mut impl Host, actions: Vec<Action>) -> Result<(), EngineError> {
        let mut queue: VecDeque<Action> = actions.into();
        let mut finalized: Vec<Published> = Vec::new();
        while let Some(action) = queue.pop_front() {
            match action {
                Action::Broadcast(message) => self.send(host, message),
                // Not while listening, and never in a fenced view: the fence would refuse it,
                // and a refusal would read as a double-sign attempt.
                Action::Vote { view, .. } | Action::Propose(ProposalSlot { view, .. })
                    if self.listening.is_some() || view <= self.fenced_view =>
                {
                    tracing::debug!(
                        view,
                        "listening before signing, or a fenced view: not signed"
                    );
                }
                Action::Vote {
                    kind,
                    view,
                    height,
                    block,
                } => match self.signer.sign_vote(kind, view, height, block) {
                    Ok((vote, _)) => {
                        host.signed();
                        self.send(host, Message::Vote(vote.vote().clone()));
                        queue.extend(self.core.handle(host.now_us(), Input::Vote(vote)));
                    }
                    Err(e) => host.refused(view, &e),
                },
                Action::Propose(slot) => {
                    // Blocks finalized earlier in this batch leave the mempool first.
                    self.publish(host, &mut finalized)?;
                    let signed = match self.signer.notarized(slot.view) {
                        // Restarted in the middle of a view it leads: the proposal it signed
                        // there goes out again, or nothing does.
                        Some(block) => match self.proposed_before_restart(&slot, &block)? {
                            Some(proposal) => Some(self.signer.resign_proposal(proposal)),
                            None => {
                                tracing::info!(
                                    view = slot.view,
                                    block = %hex::encode(&block[..8]),
                                    "not proposing: this validator signed a proposal in this \
                                     view before it restarted that it cannot send again (not \
                                     stored, so it never left the process, or built on another \
                                     parent)"
                                );
                                None
                            }
                        },
                        None => self.build_payload(host, &slot).map(|payload| {
                            self.signer.sign_hashed_block(
                                &slot,
                                payload.txs,
                                payload.tx_hashes,
                                payload.state_root,
                                host.now_us(),
                            )
                        }),
                    };
                    match signed {
                        Some(Ok(proposal)) => {
                            host.signed();
                            self.app.adopt(proposal.hash());
                            let message = Message::Proposal(proposal.proposal().clone());
                            let bytes = encode("own proposal", &message)?;
                            self.store.put_block(slot.height, proposal.hash(), &bytes)?;
                            self.store.flush()?;
                            host.broadcast(message, bytes);
                            let input = Input::Proposal(Box::new(proposal));
                            queue.extend(self.core.handle(host.now_us(), input));
                        }
                        Some(Err(e)) => host.refused(slot.view, &e),
                        None => {}
                    }
                }
                Action::SetTimer { view, kind, at_us } => host.set_timer(view, kind, at_us),
                Action::Verify { view, block } => {
                    let valid = self.execute_chain(&block);
                    let input = Input::Verified { view, block, valid };
                    queue.extend(self.core.handle(host.now_us(), input));
                }
                Action::Finalized(block) => {
                    let header = &block.proposal.header;
                    if let Some(state_proof) = &block.checkpoint {
                        self.app
                            .skip(&block.hash, header.height, &header.state_root, state_proof);
                    } else {
                        self.app
                            .finalize(&block.hash, &block.proposal, &block.tx_hashes)?;
                    }
                    finalized.push(self.commit(host.now_us(), *block)?);
                    self.prune_step()?;
                }
                Action::Certified(certificate) => {
                    let bytes = encode("certificate", &Message::Certificate(certificate.clone()))?;
                    self.store.put_view_certificate(
                        certificate.view,
                        certificate.kind as u8,
                        &bytes,
                    )?;
                    self.store.flush()?;
                    host.certified(&certificate);
                }
                Action::Fetch { block, from_height } => host.fetch(block, from_height),
                Action::EnteredView { view, leader } => host.entered_view(view, leader),
                Action::EpochEnded {
                    boundary,
                    certificate,
                    seals,
                } => {
                    self.publish(host, &mut finalized)?;
                    let actions = self.next_epoch(host.now_us(), boundary, certificate, &seals)?;
                    queue.extend(actions);
                }
                Action::Evidence(evidence) => {
                    let stored = evidence_record(&evidence)
                        .map_err(|e| format!("encode: {e}"))
                        .and_then(|record| {
                            self.store.put_evidence(&record).map_err(|e| e.to_string())
                        });
                    host.evidence(&evidence, stored);
                }
            }
        }
        self.publish(host, &mut finalized)
    }

    /// Replaces the finished core with the next epoch's, started on `boundary`: keeps the
    /// `seals` (sync serves them with the boundary block), drops the view certificates of the
    /// epoch left behind and the history and evidence past retention (of epochs before the last
    /// [`quasar_consensus::epoch::RETAINED_EPOCHS`], all but the boundary blocks and seals),
    /// and returns the new core's first actions.
    fn next_epoch(
        &mut self,
        now_us: u64,
        boundary: Tip,
        certificate: Certificate,
        seals: &[Proposal],
    ) -> Result<Vec<Action>, EngineError> {
        for seal in seals {
            let bytes = encode("seal", &Message::Proposal(seal.clone()))?;
            self.store.put_seal(&seal.header.hash(), &bytes)?;
        }
        let epoch = self.cfg.epoch + 1;
        let schedule = self.cfg.schedule;
        self.store
            .prune_view_certificates(schedule.first_view(epoch))?;
        let retained_from = schedule.retained_from(epoch);
        if !self.archive {
            let oldest_view = schedule.first_view(schedule.epoch_of(retained_from));
            self.store.prune_evidence(oldest_view)?;
            self.prune_below = schedule.length().map(|_| retained_from);
            self.prune_step()?;
        }
        self.store.flush()?;
        tracing::info!(
            epoch,
            boundary_height = boundary.height,
            seals = seals.len(),
            history_floor = self.store.history_floor()?,
            "epoch boundary final, entering the next epoch"
        );
        let members = self.sets.at(epoch);
        let me = member_index(&self.sets, epoch, &self.signer.public_key());
        if me != self.cfg.me {
            match me {
                Some(index) => tracing::info!(
                    epoch,
                    validators = members.validators.len(),
                    index,
                    "the validator set changes: this node signs as this index"
                ),
                None => tracing::info!(
                    epoch,
                    validators = members.validators.len(),
                    "the validator set changes: this node is not a member and follows without \
                     signing"
                ),
            }
        }
        self.cfg.epoch = epoch;
        self.cfg.me = me;
        self.signer.enter_epoch(epoch, me, members.domain.clone());
        let reached_epoch = self.core.reached_epoch();
        self.core = Core::new(self.cfg.clone(), members.validators.clone(), boundary);
        self.core.saw_epoch(reached_epoch);
        self.core.set_tip_certificate(certificate);
        Ok(self.core.start(now_us, self.signer.highest_view()))
    }

    /// Removes the next [`PRUNE_STEP`] entries of each kind of history below the retention line,
    /// if any are left.
    fn prune_step(&mut self) -> Result<(), EngineError> {
        let Some(line) = self.prune_below else {
            return Ok(());
        };
        let keep_every = self.cfg.schedule.length().unwrap_or(0);
        if self.store.prune_history(line, keep_every, PRUNE_STEP)? == 0 {
            self.prune_below = None;
            tracing::debug!(history_floor = line, "history past retention pruned");
        }
        Ok(())
    }

    /// Commits one finalized block (not yet flushed) and drops the view certificates it makes
    /// unnecessary.
    fn commit(&self, seen_us: u64, block: FinalizedBlock) -> Result<Published, EngineError> {
        let FinalizedBlock {
            proposal,
            tx_hashes,
            hash,
            certificate,
            checkpoint,
        } = block;
        let (height, view) = (proposal.header.height, proposal.header.view);
        let block_bytes = encode("finalized block", &Message::Proposal(proposal.clone()))?;
        let certificate_bytes = encode("certificate", &Message::Certificate(certificate.clone()))?;
        let stored = quasar_storage::FinalizedBlock {
            height,
            hash,
            block: block_bytes,
            certificate: certificate_bytes,
            tx_hashes: tx_hashes.clone(),
        };
        let checkpoint = checkpoint.is_some();
        if checkpoint {
            self.store.commit_checkpoint(&stored)?;
        } else {
            self.store.commit_finalized(&stored)?;
        }
        self.store.prune_view_certificates(view.saturating_add(1))?;
        Ok(Published {
            proposal,
            hash,
            certificate,
            tx_hashes,
            seen_us,
            checkpoint,
        })
    }

    /// Flushes the committed blocks and reports them, in height order.
    fn publish(
        &mut self,
        host: &mut impl Host,
        finalized: &mut Vec<Published>,
    ) -> Result<(), EngineError> {
        if finalized.is_empty() {
            return Ok(());
        }
        self.store.flush()?;
        self.app.commit()?;
        for block in finalized.drain(..) {
            host.finalized(&block);
        }
        Ok(())
    }
}

/// Brings `app` up to the finalized `tip` by executing the stored finalized blocks above its
/// committed height (see [`Engine::open`]); a block the store no longer holds (pruned, or
/// skipped by a checkpoint) leaves the application without that state
/// ([`Application::skip`]).
fn replay<S: Store, A: Application>(store: &S, app: &mut A, tip: &Tip) -> Result<(), EngineError> {
    let (committed, _) = app.committed();
    if committed > tip.height {
        return Err(EngineError::Inconsistent(format!(
            "the application state is at height {committed}, above the finalized tip {}: it \
             belongs to another copy of this chain's data",
            tip.height
        )));
    }
    for height in committed + 1..=tip.height {
        let Some((hash, proposal)) = stored_block(store, height)? else {
            let (_, tip_block) = stored_block(store, tip.height)?.ok_or_else(|| {
                EngineError::Inconsistent(format!(
                    "finalized tip {} missing from the store",
                    tip.height
                ))
            })?;
            app.skip(&tip.hash, tip.height, &tip_block.header.state_root, &[]);
            return Ok(());
        };
        let tx_hashes: Vec<Hash> = proposal.txs.iter().map(|tx| tx_hash(tx)).collect();
        app.finalize(&hash, &proposal, &tx_hashes)?;
        app.commit()?;
    }
    Ok(())
}

/// The finalized block stored at `height` with its hash; `None` when the store does not hold
/// it. Errors: [`EngineError::Inconsistent`] when it does not decode.
fn stored_block<S: Store>(store: &S, height: u64) -> Result<Option<(Hash, Proposal)>, EngineError> {
    let Some(stored) = store.block_by_height(height)? else {
        return Ok(None);
    };
    match decode(&stored.block) {
        Ok(MessageRef::Proposal(p)) => Ok(Some((stored.hash, p.to_owned()))),
        _ => Err(EngineError::Inconsistent(format!(
            "finalized block at height {height} does not decode"
        ))),
    }
}

/// The storage code of a consensus [`EvidenceKind`] (see [`quasar_storage::evidence::kind`]).
pub fn evidence_kind_code(kind: EvidenceKind) -> u8 {
    match kind {
        EvidenceKind::ConflictingProposal => evidence_kind::CONFLICTING_PROPOSAL,
        EvidenceKind::ConflictingNotarize => evidence_kind::CONFLICTING_NOTARIZE,
        EvidenceKind::ConflictingFinalize => evidence_kind::CONFLICTING_FINALIZE,
        EvidenceKind::FinalizeAndNullify => evidence_kind::FINALIZE_AND_NULLIFY,
    }
}

/// The storage record of detected equivocation: both messages encoded whole
/// ([`quasar_wire::Message::encode`]), so the record carries both signatures.
///
/// Errors: [`quasar_wire::WireError`] when a message does not encode (a message the core accepted always does).
pub fn evidence_record(e: &Evidence) -> Result<EvidenceRecord, quasar_wire::WireError> {
    Ok(EvidenceRecord {
        kind: evidence_kind_code(e.kind),
        signer: e.signer,
        view: e.view,
        first: e.first.encode()?,
        second: e.second.encode()?,
    })
}
