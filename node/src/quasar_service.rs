//! The validator's Quasar finality service: a thread that feeds finalized blocks to the
//! [`QuasarTracker`], stores the certificates it completes, and answers the API's questions
//! about a block's finality tier (docs/architecture.md §2–§3).
//!
//! It runs beside consensus, never in its way: the core task hands it each finalized block
//! through a bounded queue and moves on (a full queue drops the event with a warning, which
//! costs at most that bundle its Quasar tier), and a failure here is logged, never fatal.
//!
//! # What it exchanges with peers ([`LaneMessage`] gossip)
//!
//! - When a bundle closes and this node holds the closing block's own finalization, it gossips
//!   that BLS leg, so peers that finalized the block through a descendant can complete it.
//! - Under `polaris` each validator of the bundle's set signs the bundle digest with its SLH-DSA
//!   key (context `quasar-cert-v1`) and gossips the signature; every node checks each signature
//!   against the sender's key in that set as it arrives and builds the Magnetar leg once the
//!   signers hold a quorum of the set's stake.
//! - Every bundle belongs to one epoch and so to one validator set ([`SetContributor`]): its
//!   threshold ceremonies run with that set's keys and members, and peers (known by roster
//!   position, their network identity) are counted by their index in that set.
//! - Finished legs from peers are verified alone and attached.
//! - Under profiles with a Corona or Pulsar leg, validators holding a share of the set's
//!   threshold key run the signing rounds of every bundle ([`crate::ceremony`]); every node
//!   collects the rounds' messages and combines the leg itself, and the first member of the set
//!   that signed gossips the leg for nodes that missed a message.
//! - Messages for a bundle this node has not closed yet are held (at most
//!   [`MAX_EARLY_BUNDLES`] bundles ahead, one message per sender, kind, leg and session, only
//!   sessions of a bundle's first attempts, at most [`MAX_EARLY_BYTES`] in all) and replayed
//!   when it closes.
//! - QuasarCerts that a peer serves through sync (`crate::sync`) are taken apart into that
//!   peer's legs and handled like gossiped legs (held up to one sync reply's reach ahead), so a
//!   node that fell behind certifies the bundles it missed with its own finalized blocks.
//! - Under profiles with a Groth16 leg each validator of the bundle's set signs the bundle
//!   digest with its ML-DSA-65 identity key (context `QUASAR-ROLLUP-v1`) and gossips the
//!   signature. A validator configured with a rollup proving key collects and checks the
//!   signatures of every waiting bundle of the sets its key serves ([`WindowProver`]), proves
//!   the newest bundle whose signers hold a quorum off this thread, and gossips the leg;
//!   validators without a proving key drop the signatures.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use quasar_client::FinalityInfo;
use quasar_crypto::hash::Hash;
use quasar_crypto::magnetar;
use quasar_crypto::mldsa::{self, MlDsa65};
use quasar_crypto::rollup::circuit::ROLLUP_CONTEXT;
use quasar_lanes::magnetar::MagnetarLeg;
use quasar_lanes::{ValidatorSet, CERT_CONTEXT};
use quasar_p2p::Network;
use quasar_storage::{SledStore, Store};
use quasar_wire::{
    decode, Certificate, LaneKind, LaneMessage, LegKind, Message, MessageRef, QuasarCert,
    QuasarCertRef,
};
use rand::rngs::OsRng;

use crate::ceremony::{Action, Ceremony, CoronaParty, PulsarParty, Scheme};
use crate::metrics::{LegLabel, NodeMetrics};
use crate::quasar::{
    BundleStatus, FinalizedInfo, LegRefused, QuasarEvent, QuasarTracker, QuorumCollector,
    MAX_PENDING_BUNDLES,
};
use crate::rollup_job::{ProverEvent, RollupSet, WindowProver};
use quasar_consensus::epoch::ByEpoch;
use quasar_consensus::EpochSchedule;
use quasar_process::now_us;

/// Finalized blocks the service may lag behind before events are dropped.
pub const QUEUE: usize = 4096;

/// Per-leg verification and production times kept for `GET /status` (the most recent ones).
pub const LEG_SAMPLES: usize = 256;

/// Recent times per leg name, ms ([`QuasarState::leg_samples`], [`QuasarState::sign_samples`]).
pub type LegSamples = Mutex<BTreeMap<String, VecDeque<f64>>>;

/// The Quasar finality state that the rest of the node reads and the service writes: the
/// tracker (the API reads bundle states from it), the Quasar tip, the legs' recent times, and
/// the service's input queue.
pub struct QuasarState {
    /// Bundles waiting for their legs.
    pub tracker: Mutex<QuasarTracker>,
    /// Highest height covered by a verified QuasarCert (0 when none).
    pub height: AtomicU64,
    /// Recent per-leg verification times of completed certificates, ms, by leg name.
    pub leg_samples: LegSamples,
    /// Recent per-leg production times (bundle closed → leg attached here), ms, by leg name.
    pub sign_samples: LegSamples,
    /// The service's input.
    pub input: QuasarHandle,
}

impl QuasarState {
    /// The state of a node whose Quasar tip is `height`, with `tracker` and the service's
    /// `input` queue ([`QuasarHandle::channel`]).
    pub fn new(tracker: QuasarTracker, height: u64, input: QuasarHandle) -> QuasarState {
        QuasarState {
            tracker: Mutex::new(tracker),
            height: AtomicU64::new(height),
            leg_samples: Mutex::new(BTreeMap::new()),
            sign_samples: Mutex::new(BTreeMap::new()),
            input,
        }
    }
}

/// What the service reaches of the node: the chain's identity and epoch schedule, the store,
/// transport and metrics it writes through, and the [`QuasarState`] it shares.
#[derive(Clone)]
pub struct ServiceContext {
    /// Chain id (lane messages carry it).
    pub chain_id: u64,
    /// How the chain divides into epochs (a bundle's validator set is its epoch's).
    pub schedule: EpochSchedule,
    /// The block store (finalized blocks to replay, certificates, signing sessions).
    pub store: SledStore,
    /// The transport, for gossiping legs and lane messages.
    pub network: Network,
    /// The node's metrics.
    pub metrics: NodeMetrics,
    /// The state shared with the rest of the node.
    pub quasar: Arc<QuasarState>,
}

/// The median of each leg's recent times in `samples`, ms, for `GET /status`
/// (`leg_verify_p50_ms` from [`QuasarState::leg_samples`], `leg_sign_p50_ms` from
/// [`QuasarState::sign_samples`]).
pub fn leg_p50_ms(samples: &LegSamples) -> BTreeMap<String, f64> {
    let Ok(samples) = samples.lock() else {
        return BTreeMap::new();
    };
    samples
        .iter()
        .filter_map(|(leg, recent)| {
            let mut sorted: Vec<f64> = recent.iter().copied().collect();
            sorted.sort_by(f64::total_cmp);
            let median = *sorted.get(sorted.len().checked_sub(1)? / 2)?;
            Some((leg.clone(), median))
        })
        .collect()
}

/// How often hybrid deadlines are checked.
const TICK: Duration = Duration::from_millis(100);

/// Bundles ahead of this node's own closing height whose early messages are held (legs of
/// certificates from sync: as far as one sync reply reaches).
pub const MAX_EARLY_BUNDLES: u64 = 8;

/// Most payload bytes of early messages held at once; later ones are dropped (their senders'
/// bundles then wait for a leg from another peer or expire).
pub const MAX_EARLY_BYTES: usize = 64 << 20;

/// A finalized block for the service.
#[derive(Debug)]
pub struct Finalized {
    /// Height.
    pub height: u64,
    /// The block's own view.
    pub view: u64,
    /// Hash.
    pub hash: Hash,
    /// The finalization that covered it.
    pub certificate: Certificate,
    /// When this node saw it final (µs).
    pub seen_us: u64,
}

/// What the service is handed.
#[derive(Debug)]
pub enum Input {
    /// A block this node finalized.
    Finalized(Finalized),
    /// A lane message from peer `from` (authenticated by the transport).
    Lane {
        /// The sending validator.
        from: u32,
        /// The message.
        message: LaneMessage,
    },
    /// A QuasarCert peer `from` served through sync. Nothing in it is trusted: each leg is
    /// checked like a leg from gossip, and the bundle is this node's own.
    Certificate {
        /// The serving validator.
        from: u32,
        /// The certificate.
        certificate: QuasarCert,
    },
    /// This node's own SLH-DSA signature on the digest of the bundle closing at `height`, made
    /// on the Magnetar signing thread (signing takes 0.3 s under SHAKE-192f and about 5 s under
    /// 192s, which the service thread, running the Corona and Pulsar rounds, must not wait for).
    OwnMagnetar {
        /// The bundle's closing height.
        height: u64,
        /// The signature.
        signature: magnetar::Signature,
    },
}

/// The handle other tasks use to reach the service.
#[derive(Clone, Debug)]
pub struct QuasarHandle {
    tx: SyncSender<Input>,
}

impl QuasarHandle {
    /// A handle and the receiving end for [`spawn`].
    pub fn channel() -> (QuasarHandle, Receiver<Input>) {
        let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE);
        (QuasarHandle { tx }, rx)
    }

    /// Hands over an input without waiting; a full queue drops it with a warning.
    pub fn send(&self, input: Input) {
        match self.tx.try_send(input) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                tracing::warn!("quasar service queue full: input dropped");
            }
            Err(TrySendError::Disconnected(_)) => {
                tracing::error!("quasar service stopped");
            }
        }
    }
}

/// This validator's part in producing legs.
pub struct Contributor {
    /// Its roster position: its network identity, the sender of its lane messages.
    pub index: u32,
    /// Its SLH-DSA key (Magnetar); [`spawn`] hands it to the Magnetar signing thread.
    pub slhdsa: Option<magnetar::SecretKey>,
    /// Its ML-DSA-65 identity key (signatures for the Groth16 rollup).
    pub mldsa: mldsa::SecretKey<MlDsa65>,
    /// The rollup prover, when the profile has a Groth16 leg and this node a proving key; it
    /// proves the windows of the sets whose [`SetContributor::rollup`] is given.
    pub rollup: Option<WindowProver>,
    /// Its part in each validator set's epochs, by the set's first epoch.
    pub sets: ByEpoch<SetContributor>,
}

/// A validator's part in the legs of the bundles of one validator set's epochs. Peers are
/// known by roster position; a set's threshold keys, Magnetar quorum and rollup signatures
/// count validators by index in the set, which [`SetContributor::members`] translates.
pub struct SetContributor {
    /// The roster position of each validator of the set, by index in the set.
    pub members: Vec<u32>,
    /// The set (stakes for the Magnetar quorum).
    pub validators: Arc<ValidatorSet>,
    /// Every validator's SLH-DSA public key, by index in the set (to check peers' signatures).
    pub slhdsa_keys: Vec<magnetar::PublicKey>,
    /// Corona signing rounds, when the profile has a Corona leg and the set a Corona key (its
    /// parties are played by the members' roster positions).
    pub corona: Option<Ceremony<CoronaParty>>,
    /// Pulsar signing rounds, when the profile has a Pulsar leg, the set a Pulsar key and this
    /// node the full group key.
    pub pulsar: Option<Ceremony<PulsarParty>>,
    /// The set as the rollup proves for it, when this node's rollup prover serves it.
    pub rollup: Option<RollupSet>,
}

impl SetContributor {
    /// The index in the set of the validator at roster position `peer`, if it is a member.
    fn index_of(&self, peer: u32) -> Option<usize> {
        self.members.iter().position(|&m| m == peer)
    }
}

/// Starts the service thread over `ctx` (its tracker, store, metrics and network), reading
/// `rx`. Errors: the OS refuses the thread.
pub fn spawn(
    ctx: ServiceContext,
    contributor: Contributor,
    rx: Receiver<Input>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("quasar-finality".into())
        .spawn(move || {
            let mut contributor = contributor;
            let magnetar_signer = contributor.slhdsa.take().and_then(|key| {
                magnetar_signer(&ctx, key)
                    .map_err(|error| {
                        tracing::error!(
                            %error,
                            "no Magnetar signing thread: this node signs no Magnetar leg"
                        );
                    })
                    .ok()
            });
            let mut service = Service {
                ctx,
                magnetar_signer,
                me: contributor,
                magnetar: QuorumCollector::default(),
                early: BTreeMap::new(),
                early_bytes: 0,
                closed: 0,
                replayed: 0,
                closed_at: BTreeMap::new(),
            };
            service.replay();
            service.run(&rx);
        })?;
    Ok(())
}

/// Starts the thread that signs this node's Magnetar contributions: it takes (closing height,
/// bundle digest) pairs and answers each with [`Input::OwnMagnetar`] through the service's own
/// queue. It stops when the returned sender is dropped. Errors: the OS refuses the thread.
fn magnetar_signer(
    ctx: &ServiceContext,
    key: magnetar::SecretKey,
) -> std::io::Result<std::sync::mpsc::Sender<(u64, Hash)>> {
    let (tx, rx) = std::sync::mpsc::channel::<(u64, Hash)>();
    let service = ctx.quasar.input.clone();
    std::thread::Builder::new()
        .name("magnetar-signer".into())
        .spawn(move || {
            for (height, digest) in rx {
                match key.sign(&digest, CERT_CONTEXT, &mut OsRng) {
                    Ok(signature) => service.send(Input::OwnMagnetar { height, signature }),
                    Err(error) => tracing::error!(height, %error, "SLH-DSA signing failed"),
                }
            }
        })?;
    Ok(tx)
}

struct Service {
    ctx: ServiceContext,
    /// Where this node's Magnetar contributions are signed (`None`: the thread did not start).
    magnetar_signer: Option<std::sync::mpsc::Sender<(u64, Hash)>>,
    me: Contributor,
    /// Checked Magnetar signatures per waiting bundle, by signer.
    magnetar: QuorumCollector<magnetar::Signature>,
    /// Messages for bundles this node has not closed yet.
    early: BTreeMap<u64, Vec<(u32, LaneMessage)>>,
    /// Payload bytes held in `early` (at most [`MAX_EARLY_BYTES`]).
    early_bytes: usize,
    /// The highest closing height this node reached.
    closed: u64,
    /// The highest height fed from the store at start ([`Service::replay`]).
    replayed: u64,
    /// When this node closed each recent bundle (µs), for the legs' production times.
    closed_at: BTreeMap<u64, u64>,
}

impl Service {
    fn run(&mut self, rx: &Receiver<Input>) {
        let mut last_tick = Instant::now();
        loop {
            if last_tick.elapsed() >= TICK {
                last_tick = Instant::now();
                let mut events = self.ceremony_tick();
                events.extend(self.rollup_poll());
                self.handle(events);
            }
            let events = match rx.recv_timeout(TICK) {
                Ok(Input::Finalized(block)) if block.height <= self.replayed => Vec::new(),
                Ok(Input::Finalized(block)) => self.tracker(|t| {
                    t.on_finalized(&FinalizedInfo {
                        height: block.height,
                        view: block.view,
                        hash: block.hash,
                        certificate: &block.certificate,
                        seen_us: block.seen_us,
                    })
                }),
                Ok(Input::Lane { from, message }) => self.lane(from, message),
                Ok(Input::Certificate { from, certificate }) => self.synced(from, certificate),
                Ok(Input::OwnMagnetar { height, signature }) => {
                    self.own_magnetar(height, signature)
                }
                Err(RecvTimeoutError::Timeout) => self.tracker(|t| t.on_tick(now_us())),
                Err(RecvTimeoutError::Disconnected) => return,
            };
            self.handle(events);
        }
    }

    /// Feeds the stored finalized blocks after the last stored QuasarCert (at most
    /// [`MAX_PENDING_BUNDLES`] bundles back, from the start of a bundle) to the tracker, so the
    /// bundles a crash interrupted are rebuilt. A block whose stored certificate is its own
    /// finalization gives its bundle's BLS leg again; the other legs are produced again.
    fn replay(&mut self) {
        let store = &self.ctx.store;
        let Ok(Some((tip, _))) = store.finalized_tip() else {
            return;
        };
        let size = self.bundle_size();
        let certified = store.quasar_tip().ok().flatten().unwrap_or(0);
        let horizon = tip.saturating_sub(MAX_PENDING_BUNDLES as u64 * size);
        // Below the history floor only boundary blocks are left (pruned, or skipped by a
        // checkpoint): nothing to rebuild there.
        let floor = store.history_floor().unwrap_or(1);
        let start = certified
            .max(horizon / size * size)
            .saturating_add(1)
            .max(floor);
        let mut events = Vec::new();
        for height in start..=tip {
            let Ok(Some(stored)) = store.block_by_height(height) else {
                break;
            };
            let (Ok(MessageRef::Proposal(p)), Ok(MessageRef::Certificate(c))) =
                (decode(&stored.block), decode(&stored.certificate))
            else {
                break;
            };
            let certificate = c.to_owned();
            events.extend(self.tracker(|t| {
                t.on_finalized(&FinalizedInfo {
                    height,
                    view: p.header().view,
                    hash: stored.hash,
                    certificate: &certificate,
                    seen_us: now_us(),
                })
            }));
            self.replayed = height;
        }
        if self.replayed > 0 {
            tracing::info!(
                from = start,
                to = self.replayed,
                "replayed finalized blocks for Quasar finality"
            );
        }
        self.handle(events);
    }

    fn tracker<T: Default>(&self, f: impl FnOnce(&mut QuasarTracker) -> T) -> T {
        match self.ctx.quasar.tracker.lock() {
            Ok(mut t) => f(&mut t),
            Err(_) => T::default(),
        }
    }

    fn handle(&mut self, events: Vec<QuasarEvent>) {
        let mut events: VecDeque<QuasarEvent> = events.into();
        while let Some(event) = events.pop_front() {
            if let QuasarEvent::Closed {
                height,
                bundle_digest,
                bls_leg,
                ..
            } = &event
            {
                let (height, digest) = (*height, *bundle_digest);
                self.prune_sessions(height);
                self.closed = self.closed.max(height);
                self.closed_at.insert(height, now_us());
                while self.closed_at.len() > MAX_PENDING_BUNDLES + MAX_EARLY_BUNDLES as usize {
                    self.closed_at.pop_first();
                }
                if let Some(body) = bls_leg {
                    let bls = LegKind::Bls as u8;
                    self.broadcast(height, LaneKind::Leg, bls, [0; 32], body.clone());
                }
                events.extend(self.contribute(height, &digest));
                events.extend(self.ceremonies_closed(height, digest));
                // Held messages of this bundle are released, of older ones dropped.
                let later = self.early.split_off(&height.saturating_add(1));
                let released = std::mem::replace(&mut self.early, later)
                    .remove(&height)
                    .unwrap_or_default();
                self.early_bytes = self
                    .early
                    .values()
                    .flatten()
                    .map(|(_, m)| m.payload.len())
                    .sum();
                for (from, message) in released {
                    events.extend(self.lane(from, message));
                }
            }
            record(&self.ctx, event);
        }
        // Collected signatures of bundles no longer waiting are dropped.
        let Ok(tracker) = self.ctx.quasar.tracker.lock() else {
            return;
        };
        self.magnetar
            .retain(|height| tracker.awaiting(height, LegKind::Magnetar).is_some());
        let closed = self.closed;
        for set in self.me.sets.values_mut() {
            if let Some(c) = set.corona.as_mut() {
                c.retain(|h| h > closed || tracker.awaiting(h, LegKind::Corona).is_some());
            }
            if let Some(c) = set.pulsar.as_mut() {
                c.retain(|h| h > closed || tracker.awaiting(h, LegKind::Pulsar).is_some());
            }
        }
        if let Some(r) = self.me.rollup.as_mut() {
            r.retain(|h| tracker.awaiting(h, LegKind::Groth16).is_some());
        }
    }

    /// Starts (and for Corona, runs ahead) the threshold ceremonies of a closed bundle.
    fn ceremonies_closed(&mut self, height: u64, digest: Hash) -> Vec<QuasarEvent> {
        let store = &self.ctx.store;
        let mut claim = |h: u64, id: &[u8; 32]| claim_session(store, h, id);
        let now = now_us();
        let mut actions = Vec::new();
        let set = self.me.sets.at_mut(self.ctx.schedule.epoch_of(height));
        if let Some(c) = set.corona.as_mut() {
            actions.push((
                LegKind::Corona,
                c.on_closed(height, digest, now, &mut claim),
            ));
        }
        if let Some(c) = set.pulsar.as_mut() {
            actions.push((
                LegKind::Pulsar,
                c.on_closed(height, digest, now, &mut claim),
            ));
        }
        actions
            .into_iter()
            .flat_map(|(leg, a)| self.apply(leg, a))
            .collect()
    }

    /// Moves timed-out ceremonies to their next attempt.
    fn ceremony_tick(&mut self) -> Vec<QuasarEvent> {
        let store = &self.ctx.store;
        let mut claim = |h: u64, id: &[u8; 32]| claim_session(store, h, id);
        let now = now_us();
        let mut actions = Vec::new();
        for set in self.me.sets.values_mut() {
            if let Some(c) = set.corona.as_mut() {
                actions.push((LegKind::Corona, c.on_tick(now, &mut claim)));
            }
            if let Some(c) = set.pulsar.as_mut() {
                actions.push((LegKind::Pulsar, c.on_tick(now, &mut claim)));
            }
        }
        actions
            .into_iter()
            .flat_map(|(leg, a)| self.apply(leg, a))
            .collect()
    }

    /// A peer's round message for one of the ceremonies.
    fn ceremony_message(&mut self, from: u32, message: LaneMessage) -> Vec<QuasarEvent> {
        let store = &self.ctx.store;
        let mut claim = |h: u64, id: &[u8; 32]| claim_session(store, h, id);
        let now = now_us();
        let LaneMessage {
            height,
            kind,
            session,
            payload,
            ..
        } = message;
        let set = self.me.sets.at_mut(self.ctx.schedule.epoch_of(height));
        let result = if CoronaParty::KINDS.contains(&kind) {
            set.corona.as_mut().map(|c| {
                let r = c.on_message(now, height, from, kind, &session, payload, &mut claim);
                (LegKind::Corona, r)
            })
        } else {
            set.pulsar.as_mut().map(|c| {
                let r = c.on_message(now, height, from, kind, &session, payload, &mut claim);
                (LegKind::Pulsar, r)
            })
        };
        match result {
            Some((leg, Ok(actions))) => self.apply(leg, actions),
            Some((leg, Err(error))) => {
                self.ctx.metrics.invalid_messages.inc();
                tracing::debug!(from, height, %leg, %error, "ceremony message refused");
                Vec::new()
            }
            None => Vec::new(),
        }
    }

    /// Records how long this node took to produce `leg` of the bundle closing at `height`.
    fn produced(&self, height: u64, leg: LegKind) {
        if let Some(&at) = self.closed_at.get(&height) {
            let ms = now_us().saturating_sub(at) as f64 / 1e3;
            add_sample(&self.ctx.quasar.sign_samples, leg, ms);
        }
    }

    /// Carries out a ceremony's actions.
    fn apply(&mut self, leg: LegKind, actions: Vec<Action>) -> Vec<QuasarEvent> {
        let mut events = Vec::new();
        for action in actions {
            match action {
                Action::Send {
                    height,
                    kind,
                    session,
                    payload,
                } => self.broadcast(height, kind, 0, session, payload),
                Action::Leg {
                    height,
                    body,
                    attempt,
                    gossip,
                } => {
                    tracing::debug!(height, %leg, attempt, "threshold leg combined");
                    self.produced(height, leg);
                    if gossip {
                        self.broadcast(height, LaneKind::Leg, leg as u8, [0; 32], body.clone());
                    }
                    match self.tracker(|t| Some(t.on_leg(height, leg, body))) {
                        Some(Ok(event)) => events.extend(event),
                        Some(Err(error)) => {
                            tracing::error!(height, %leg, %error, "combined leg refused");
                        }
                        None => {}
                    }
                }
                Action::Blame {
                    height,
                    validator,
                    reason,
                } => {
                    self.ctx.metrics.invalid_messages.inc();
                    tracing::warn!(height, %leg, validator, %reason, "threshold signer misbehaved");
                }
                Action::Failed {
                    height,
                    attempt,
                    reason,
                } => {
                    tracing::debug!(height, %leg, attempt, %reason, "threshold signing attempt failed")
                }
            }
        }
        events
    }

    /// Signs what this validator contributes to a closed bundle and gossips it.
    fn contribute(&mut self, height: u64, digest: &Hash) -> Vec<QuasarEvent> {
        self.contribute_rollup(height, digest);
        self.contribute_magnetar(height, digest)
    }

    /// Signs a closed bundle's digest for the Groth16 rollup, gossips the signature and, when
    /// this validator proves, opens the bundle's window with it.
    fn contribute_rollup(&mut self, height: u64, digest: &Hash) {
        if self
            .tracker(|t| t.awaiting(height, LegKind::Groth16))
            .is_none()
        {
            return;
        }
        let set = self.me.sets.at(self.ctx.schedule.epoch_of(height));
        // Only the set's validators sign its rollup.
        let Some(index) = set.index_of(self.me.index) else {
            return;
        };
        let rollup = set.rollup.clone();
        let signature = match self.me.mldsa.sign(digest, ROLLUP_CONTEXT, &mut OsRng) {
            Ok(s) => s.as_bytes().to_vec(),
            Err(error) => {
                tracing::error!(height, %error, "ML-DSA signing failed");
                return;
            }
        };
        self.broadcast(
            height,
            LaneKind::RollupSignature,
            0,
            [0; 32],
            signature.clone(),
        );
        if let (Some(prover), Some(rollup)) = (self.me.rollup.as_mut(), rollup) {
            prover.open(height, *digest, &rollup);
            if let Err(error) = prover.add(height, index, &signature) {
                tracing::error!(height, %error, "own rollup signature refused");
            }
        }
    }

    /// A peer's rollup signature: checked and collected when this validator proves.
    fn peer_rollup(&mut self, from: u32, height: u64, signature: &[u8]) {
        let set = self.me.sets.at(self.ctx.schedule.epoch_of(height));
        let Some(index) = set.index_of(from) else {
            self.ctx.metrics.invalid_messages.inc();
            tracing::debug!(
                from,
                height,
                "rollup signature from outside the bundle's set"
            );
            return;
        };
        let Some(prover) = self.me.rollup.as_mut() else {
            return;
        };
        if let Err(error) = prover.add(height, index, signature) {
            self.ctx.metrics.invalid_messages.inc();
            tracing::warn!(from, height, %error, "rollup signature refused");
        }
    }

    /// The rollup prover's news: the key loaded or refused, legs proved (attached and
    /// gossiped), proofs failed.
    fn rollup_poll(&mut self) -> Vec<QuasarEvent> {
        let Some(prover) = self.me.rollup.as_mut() else {
            return Vec::new();
        };
        let mut events = Vec::new();
        for event in prover.poll() {
            match event {
                ProverEvent::Ready => tracing::info!("rollup proving key loaded: proving"),
                ProverEvent::KeyRefused(reason) => {
                    tracing::error!(%reason, "rollup proving key refused: this validator does not prove");
                }
                ProverEvent::Failed { window, reason } => {
                    tracing::error!(height = window, %reason, "rollup proof failed");
                }
                ProverEvent::Proved(leg) => {
                    tracing::info!(
                        height = leg.window,
                        synthesis_s = leg.timings.synthesis.as_secs_f64(),
                        witness_map_s = leg.timings.witness_map.as_secs_f64(),
                        msm_s = leg.timings.msm.as_secs_f64(),
                        "rollup leg proved"
                    );
                    self.produced(leg.window, LegKind::Groth16);
                    let groth16 = LegKind::Groth16 as u8;
                    self.broadcast(
                        leg.window,
                        LaneKind::Leg,
                        groth16,
                        [0; 32],
                        leg.body.clone(),
                    );
                    match self.tracker(|t| Some(t.on_leg(leg.window, LegKind::Groth16, leg.body))) {
                        Some(Ok(event)) => events.extend(event),
                        // Certified meanwhile by a peer's leg, or dropped.
                        Some(Err(LegRefused::NoBundle(_))) | None => {}
                        Some(Err(error)) => {
                            tracing::error!(height = leg.window, %error, "proved rollup leg refused");
                        }
                    }
                }
            }
        }
        events
    }

    /// Signs a closed bundle's digest with SLH-DSA for the Magnetar leg and gossips it.
    /// Hands the bundle to the Magnetar signing thread; the signature comes back as
    /// [`Input::OwnMagnetar`].
    fn contribute_magnetar(&mut self, height: u64, digest: &Hash) -> Vec<QuasarEvent> {
        let member = self
            .me
            .sets
            .at(self.ctx.schedule.epoch_of(height))
            .index_of(self.me.index)
            .is_some();
        if !member
            || self
                .tracker(|t| t.awaiting(height, LegKind::Magnetar))
                .is_none()
        {
            return Vec::new();
        }
        if let Some(signer) = &self.magnetar_signer {
            if signer.send((height, *digest)).is_err() {
                tracing::error!(height, "the Magnetar signing thread stopped");
            }
        }
        Vec::new()
    }

    /// This node's own Magnetar signature, back from the signing thread: sent to the others and
    /// added, if the bundle still waits for its Magnetar leg.
    fn own_magnetar(&mut self, height: u64, signature: magnetar::Signature) -> Vec<QuasarEvent> {
        if self
            .tracker(|t| t.awaiting(height, LegKind::Magnetar))
            .is_none()
        {
            return Vec::new();
        }
        self.broadcast(
            height,
            LaneKind::MagnetarSignature,
            0,
            [0; 32],
            signature.as_bytes().to_vec(),
        );
        let set = self.me.sets.at(self.ctx.schedule.epoch_of(height));
        match set.index_of(self.me.index) {
            Some(index) => self.add_magnetar(height, index, signature),
            None => Vec::new(),
        }
    }

    fn broadcast(&self, height: u64, kind: LaneKind, leg: u8, session: [u8; 32], payload: Vec<u8>) {
        let message = Message::Lane(LaneMessage {
            chain_id: self.ctx.chain_id,
            epoch: self.ctx.schedule.epoch_of(height),
            height,
            sender: self.me.index,
            kind,
            leg,
            session,
            payload,
        });
        match message.encode() {
            Ok(bytes) => self.ctx.network.broadcast(Arc::new(bytes)),
            Err(error) => tracing::error!(height, %error, "lane message does not encode"),
        }
    }

    /// A peer's lane message: checked, then held (early), used, or dropped with a log line.
    fn lane(&mut self, from: u32, message: LaneMessage) -> Vec<QuasarEvent> {
        let horizon = MAX_EARLY_BUNDLES.saturating_mul(self.bundle_size());
        self.lane_within(from, message, horizon)
    }

    /// [`Service::lane`] holding messages for bundles up to `horizon` heights past this node's
    /// last closed one.
    fn lane_within(&mut self, from: u32, message: LaneMessage, horizon: u64) -> Vec<QuasarEvent> {
        let height = message.height;
        if message.sender != from
            || message.chain_id != self.ctx.chain_id
            || message.epoch != self.ctx.schedule.epoch_of(height)
        {
            self.ctx.metrics.invalid_messages.inc();
            tracing::debug!(
                from,
                sender = message.sender,
                "lane message with a wrong sender, chain or epoch"
            );
            return Vec::new();
        }
        if height > self.closed {
            let size = message.payload.len();
            if height <= self.closed.saturating_add(horizon)
                && self.early_bytes.saturating_add(size) <= MAX_EARLY_BYTES
                && self.plausible_session(&message)
            {
                let held = self.early.entry(height).or_default();
                let duplicate = held.iter().any(|(f, m)| {
                    *f == from
                        && m.kind == message.kind
                        && m.leg == message.leg
                        && m.session == message.session
                });
                if !duplicate {
                    held.push((from, message));
                    self.early_bytes += size;
                }
            }
            return Vec::new();
        }
        match message.kind {
            LaneKind::Leg => {
                let Ok(leg) = LegKind::try_from(message.leg) else {
                    return Vec::new();
                };
                match self.tracker(|t| Some(t.on_leg(height, leg, message.payload))) {
                    Some(Ok(event)) => event.into_iter().collect(),
                    Some(Err(LegRefused::NoBundle(_))) | None => Vec::new(),
                    Some(Err(error)) => {
                        self.ctx.metrics.invalid_messages.inc();
                        tracing::warn!(from, height, %leg, %error, "leg from a peer refused");
                        Vec::new()
                    }
                }
            }
            LaneKind::MagnetarSignature => self.peer_magnetar(from, height, &message.payload),
            LaneKind::RollupSignature => {
                self.peer_rollup(from, height, &message.payload);
                Vec::new()
            }
            LaneKind::CoronaRound1
            | LaneKind::CoronaRound2
            | LaneKind::PulsarRound1
            | LaneKind::PulsarRound2
            | LaneKind::PulsarRound3 => self.ceremony_message(from, message),
        }
    }

    /// A certificate from sync: its legs go through [`Service::lane`] as the serving peer's
    /// `Leg` messages (held when this node has not closed the bundle yet, verified one by one
    /// against its epoch's keys, blamed on the peer when bad); a certificate of another chain, or
    /// naming an epoch that does not decide its height, is refused there.
    fn synced(&mut self, from: u32, certificate: QuasarCert) -> Vec<QuasarEvent> {
        let QuasarCert {
            chain_id,
            epoch,
            height,
            legs,
            ..
        } = certificate;
        // One sync reply covers at most this many heights past the tip.
        let horizon = u64::from(crate::sync::MAX_SYNC_BLOCKS).saturating_add(self.bundle_size());
        let mut events = Vec::new();
        for (leg, payload) in legs {
            let message = LaneMessage {
                chain_id,
                epoch,
                height,
                sender: from,
                kind: LaneKind::Leg,
                leg: leg as u8,
                session: [0; 32],
                payload,
            };
            events.extend(self.lane_within(from, message, horizon));
        }
        events
    }

    /// Whether an early message's session can be one this node will use: a ceremony message's
    /// must be the id of one of the bundle's first attempts (so a peer cannot fill the early
    /// buffer with made-up sessions), every other message's is all zero.
    fn plausible_session(&self, message: &LaneMessage) -> bool {
        let (height, session) = (message.height, &message.session);
        let set = self.me.sets.at(self.ctx.schedule.epoch_of(height));
        if CoronaParty::KINDS.contains(&message.kind) {
            set.corona
                .as_ref()
                .is_some_and(|c| c.is_early_session(height, session))
        } else if PulsarParty::KINDS.contains(&message.kind) {
            set.pulsar
                .as_ref()
                .is_some_and(|c| c.is_early_session(height, session))
        } else {
            message.session == [0; 32]
        }
    }

    fn bundle_size(&self) -> u64 {
        self.tracker(|t| t.bundle_size()).max(1)
    }

    /// A peer's Magnetar signature on a waiting bundle: checked against its key in the
    /// bundle's set.
    fn peer_magnetar(&mut self, from: u32, height: u64, bytes: &[u8]) -> Vec<QuasarEvent> {
        let Some((_, digest)) = self.tracker(|t| t.awaiting(height, LegKind::Magnetar)) else {
            return Vec::new();
        };
        let set = self.me.sets.at(self.ctx.schedule.epoch_of(height));
        let Some((index, key)) = set
            .index_of(from)
            .and_then(|i| Some((i, set.slhdsa_keys.get(i)?)))
        else {
            self.ctx.metrics.invalid_messages.inc();
            tracing::debug!(
                from,
                height,
                "Magnetar signature from outside the bundle's set"
            );
            return Vec::new();
        };
        let checked = magnetar::Signature::from_bytes(key.parameter_set(), bytes)
            .and_then(|sig| key.verify(&digest, CERT_CONTEXT, &sig).map(|()| sig));
        match checked {
            Ok(signature) => self.add_magnetar(height, index, signature),
            Err(error) => {
                self.ctx.metrics.invalid_messages.inc();
                tracing::warn!(from, height, %error, "Magnetar signature refused");
                Vec::new()
            }
        }
    }

    /// Adds a checked signature; once the signers hold a quorum, builds and attaches the leg.
    fn add_magnetar(
        &mut self,
        height: u64,
        index: usize,
        signature: magnetar::Signature,
    ) -> Vec<QuasarEvent> {
        let validators = Arc::clone(
            &self
                .me
                .sets
                .at(self.ctx.schedule.epoch_of(height))
                .validators,
        );
        let Some(quorum) = self.magnetar.add(&validators, height, index, signature) else {
            return Vec::new();
        };
        self.produced(height, LegKind::Magnetar);
        let leg = match MagnetarLeg::new(validators.len(), quorum) {
            Ok(leg) => leg.encode(),
            Err(error) => {
                tracing::error!(height, %error, "Magnetar leg does not assemble");
                return Vec::new();
            }
        };
        match self.tracker(|t| Some(t.on_leg(height, LegKind::Magnetar, leg))) {
            Some(Ok(event)) => event.into_iter().collect(),
            Some(Err(error)) => {
                tracing::error!(height, %error, "assembled Magnetar leg refused");
                Vec::new()
            }
            None => Vec::new(),
        }
    }
}

/// Adds one time (ms) for `leg`, keeping the most recent [`LEG_SAMPLES`].
fn add_sample(samples: &LegSamples, leg: LegKind, ms: f64) {
    if let Ok(mut samples) = samples.lock() {
        let recent = samples.entry(leg.to_string()).or_default();
        if recent.len() == LEG_SAMPLES {
            recent.pop_front();
        }
        recent.push_back(ms);
    }
}

impl Service {
    /// When the bundle closing at `height` ends an epoch, forgets the signing-session claims of
    /// the epochs that the next one leaves past retention
    /// ([`quasar_consensus::epoch::RETAINED_EPOCHS`]).
    fn prune_sessions(&self, height: u64) {
        let schedule = self.ctx.schedule;
        let epoch = schedule.epoch_of(height);
        if schedule.length().is_none() || height != schedule.last_height(epoch) {
            return;
        }
        let below = schedule.retained_from(epoch + 1);
        match self.ctx.store.prune_sessions(below) {
            Ok(0) => {}
            Ok(removed) => tracing::debug!(below, removed, "pruned signing-session claims"),
            Err(error) => tracing::warn!(below, %error, "could not prune signing-session claims"),
        }
    }
}

/// Claims a ceremony session durably (flushed before any message of it is sent); a storage
/// failure refuses the claim, so the validator sits the session out.
fn claim_session(store: &impl Store, height: u64, id: &[u8; 32]) -> bool {
    match store
        .claim_session(height, id)
        .and_then(|fresh| store.flush().map(|()| fresh))
    {
        Ok(fresh) => fresh,
        Err(error) => {
            tracing::error!(height, %error, "could not record a signing session");
            false
        }
    }
}

/// Stores a completed certificate and updates metrics; logs abandoned bundles.
fn record(ctx: &ServiceContext, event: QuasarEvent) {
    let m = &ctx.metrics;
    match event {
        QuasarEvent::Closed { .. } => {}
        QuasarEvent::Certified {
            height,
            certificate,
            report,
        } => {
            // Flushed at once: a certificate lost in a crash would leave its blocks at Nova
            // finality for good (the legs are not gossiped again).
            let stored = ctx
                .store
                .put_quasar_cert(height, &certificate)
                .and_then(|_| ctx.store.flush());
            if let Err(error) = stored {
                tracing::error!(height, %error, "could not store a QuasarCert");
                return;
            }
            m.quasar_certificates.inc();
            m.quasar_cert_verify_seconds
                .observe(report.elapsed.as_secs_f64());
            for leg in &report.legs {
                add_sample(
                    &ctx.quasar.leg_samples,
                    leg.leg,
                    leg.elapsed.as_secs_f64() * 1e3,
                );
            }
            for leg in &report.legs {
                m.quasar_leg_verify_seconds
                    .get_or_create(&LegLabel {
                        leg: leg.leg.to_string(),
                    })
                    .observe(leg.elapsed.as_secs_f64());
            }
            let previous = ctx.quasar.height.fetch_max(height, Ordering::Relaxed);
            m.quasar_finalized_height.set(previous.max(height) as i64);
            tracing::debug!(height, bundle = report.bundle.len(), "Quasar finality");
        }
        QuasarEvent::Expired { height, missing } => {
            m.quasar_bundles_abandoned.inc();
            let missing: Vec<String> = missing.iter().map(LegKind::to_string).collect();
            tracing::info!(
                height,
                ?missing,
                "hybrid deadline passed: bundle stays at Nova finality"
            );
        }
        QuasarEvent::Dropped { height } => {
            m.quasar_bundles_abandoned.inc();
            tracing::info!(height, "bundle dropped unfinished: stays at Nova finality");
        }
    }
}

/// The finality of finalized block `height` for `GET /block/{height}`: its tier (`nova` or
/// `quasar`), the bundle it belongs to and where that bundle stands (`state`: `certified`,
/// `open` (not closed yet), `waiting` (for its legs), `expired`, `dropped`, `unavailable` (no
/// certificate policy: bundles are not tracked), or `unknown`: closed before this process
/// started and not certified), each leg's state (`verified` or `missing`)
/// while the bundle is certified or waiting, and the reason Quasar finality is unavailable when
/// it is. `store` holds the certificates, `finalized_height` is the node's finalized tip.
pub fn finality_info(
    quasar: &QuasarState,
    store: &impl Store,
    finalized_height: u64,
    height: u64,
) -> FinalityInfo {
    let Ok(tracker) = quasar.tracker.lock() else {
        return FinalityInfo {
            tier: "nova".into(),
            state: "unknown".into(),
            ..FinalityInfo::default()
        };
    };
    let profile = tracker.profile();
    let closing = tracker.closing_height(height);
    let mut legs = BTreeMap::new();
    let stored = store.quasar_cert_from(height).ok().flatten();
    let (tier, state) = match stored {
        Some((at, bytes)) if at == closing => {
            if let Ok(cert) = QuasarCertRef::parse(&bytes) {
                for (leg, _) in cert.legs() {
                    legs.insert(leg.to_string(), "verified".to_string());
                }
            }
            ("quasar", "certified")
        }
        _ => match tracker.status(closing) {
            BundleStatus::Waiting { held, .. } => {
                for leg in profile.legs() {
                    let state = if held.contains(leg) {
                        "verified"
                    } else {
                        "missing"
                    };
                    legs.insert(leg.to_string(), state.to_string());
                }
                ("nova", "waiting")
            }
            BundleStatus::Abandoned { reason } => ("nova", reason),
            BundleStatus::Unknown if closing > finalized_height => ("nova", "open"),
            BundleStatus::Unknown if !tracker.tracking_at(closing) => ("nova", "unavailable"),
            BundleStatus::Unknown => ("nova", "unknown"),
        },
    };
    FinalityInfo {
        tier: tier.into(),
        state: state.into(),
        profile: profile.name(),
        bundle_end: closing,
        legs,
        unavailable: tracker.unavailable_at(closing),
    }
}
