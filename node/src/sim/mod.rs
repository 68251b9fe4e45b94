//! A deterministic, seeded simulation of a validator network around the real consensus core.
//!
//! Every simulated validator runs the production [`Core`], [`Verifier`] and [`VoteSigner`] (with
//! an in-memory signing guard that keeps its records across simulated crashes, as the durable
//! guard file does). Messages are encoded to ZAP bytes, delivered after a seeded random latency
//! (dropped with a configured probability or when a partition separates the two nodes), decoded
//! and verified, exactly as the runtime does. Timers and deliveries share one event queue ordered
//! by (time, sequence number), so the same seed gives the same run; [`Simulation::trace_digest`]
//! hashes the event log to check it.
//!
//! Validators may be Byzantine ([`Behavior`]): they run the honest core and misbehave on the way
//! out. A validator with [`Behavior::Twins`] runs on two node *slots* with one key, each connected
//! to a different half of the honest nodes. Every vote and certificate that crosses the network is
//! recorded, and [`Simulation::check_safety`] hands the record and the honest nodes' committed
//! chains to the independent [`checker`].

pub mod byzantine;
pub mod campaign;
pub mod checker;

pub use byzantine::Behavior;
use byzantine::{outgoing, Context, Target};
use checker::{ChainEntry, Observation, Violation};

use crate::consensus::{
    Action, BlockLimits, Core, CoreConfig, Evidence, FinalizedBlock, Input, TimerKind, Tip,
    Verifier,
};
use crate::signer::VoteSigner;
use crate::sync::{serve, SyncSource, MAX_SYNC_BLOCKS};
use quasar_crypto::bls::SecretKey;
use quasar_crypto::hash::{tagged_hash, Hash};
use quasar_lanes::{Validator, ValidatorSet};
use quasar_storage::SigningGuard;
use quasar_wire::{decode, Certificate, Message, Proposal, SyncRequest, Vote};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};
use std::sync::Arc;

/// Network and protocol parameters of a simulation. Times are microseconds.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Number of validators (equal stake).
    pub validators: usize,
    /// RNG seed: the same seed gives the same run.
    pub seed: u64,
    /// Minimum one-way latency.
    pub min_latency_us: u64,
    /// Maximum one-way latency (uniform in between: jitter and reordering).
    pub max_latency_us: u64,
    /// Probability that a message is lost.
    pub loss: f64,
    /// Leader pacing.
    pub block_time_us: u64,
    /// View timeout.
    pub view_timeout_us: u64,
    /// Rebroadcast interval after a timeout.
    pub retry_us: u64,
    /// Synthetic transactions per proposed block.
    pub txs_per_block: usize,
    /// Probability that a delivered message is delivered a second time.
    pub duplicate: f64,
    /// Byzantine validators and their behaviour (all others are honest).
    pub byzantine: Vec<(usize, Behavior)>,
    /// Probability that the signing guard's write (fsync) fails for a vote; the vote is then
    /// neither signed nor sent, as in the runtime.
    pub guard_failures: f64,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            validators: 4,
            seed: 1,
            min_latency_us: 1_000,
            max_latency_us: 20_000,
            loss: 0.0,
            block_time_us: 100_000,
            view_timeout_us: 1_000_000,
            retry_us: 250_000,
            txs_per_block: 2,
            duplicate: 0.0,
            byzantine: Vec::new(),
            guard_failures: 0.0,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Deliver {
        to: usize,
        from: usize,
        bytes: Vec<u8>,
    },
    Timer {
        node: usize,
        view: u64,
        kind: u8,
        at: u64,
    },
}

/// A finalized block as one simulated node committed it.
#[derive(Debug, Clone)]
pub struct Committed {
    /// The block.
    pub proposal: Proposal,
    /// Its hash.
    pub hash: Hash,
    /// The finalization that covered it.
    pub certificate: Certificate,
}

struct SimNode {
    /// The validator this slot runs as.
    validator: usize,
    behavior: Behavior,
    core: Core,
    signer: VoteSigner,
    alive: bool,
    committed: Vec<Committed>,
    timers: HashMap<(u64, u8), u64>,
    evidence: Vec<Evidence>,
    /// Certificates above the finalized tip, kept across restarts like the store's.
    kept: BTreeMap<(u64, u8), Certificate>,
    /// Every verified proposal, kept across restarts like the store's blocks tree.
    stored: HashMap<Hash, Proposal>,
    /// Committed blocks made durable before the most recent commit batch.
    durable: usize,
}

impl SyncSource for SimNode {
    fn finalized_at(&self, height: u64) -> Option<(Vec<u8>, Vec<u8>)> {
        let index = usize::try_from(height.checked_sub(1)?).ok()?;
        let c = self.committed.get(index)?;
        let block = Message::Proposal(c.proposal.clone()).encode().ok()?;
        let cert = Message::Certificate(c.certificate.clone()).encode().ok()?;
        Some((block, cert))
    }
    fn block_by_hash(&self, hash: &Hash) -> Option<Vec<u8>> {
        Message::Proposal(self.stored.get(hash)?.clone())
            .encode()
            .ok()
    }
}

fn timer_code(kind: TimerKind) -> u8 {
    match kind {
        TimerKind::Propose => 0,
        TimerKind::Timeout => 1,
        TimerKind::Retry => 2,
    }
}

fn timer_kind(code: u8) -> TimerKind {
    match code {
        0 => TimerKind::Propose,
        1 => TimerKind::Timeout,
        _ => TimerKind::Retry,
    }
}

/// The chain id simulations use.
pub const SIM_CHAIN_ID: u64 = 7;

/// A simulated network of validators.
pub struct Simulation {
    cfg: SimConfig,
    rng: ChaCha8Rng,
    now: u64,
    seq: u64,
    queue: BinaryHeap<Reverse<(u64, u64, Event)>>,
    nodes: Vec<SimNode>,
    seeds: Vec<[u8; 32]>,
    /// Each validator's key (the honest signer holds its own copy behind the guard).
    keys: Vec<SecretKey>,
    validators: Arc<ValidatorSet>,
    verifier: Verifier,
    genesis: Hash,
    blocked: HashSet<(usize, usize)>,
    /// Links cut for the whole run (twins' halves); `heal` keeps them.
    fixed_blocks: HashSet<(usize, usize)>,
    trace: Vec<u8>,
    /// Every vote sent, with the sending validator.
    sent_votes: Vec<(u32, Vote)>,
    /// Every certificate an honest node accepted (formed or received).
    accepted_certificates: Vec<Certificate>,
    /// Messages that deviated from the protocol.
    byzantine_messages: u64,
    /// Verification results by message digest (each distinct message is verified once).
    verified: HashMap<Hash, Option<Input>>,
}

impl Simulation {
    /// A network of `cfg.validators` equal-stake validators at genesis, all started.
    pub fn new(cfg: SimConfig) -> Simulation {
        let rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        let seeds: Vec<[u8; 32]> = (0..cfg.validators)
            .map(|i| {
                let mut seed = [0u8; 32];
                seed[..8].copy_from_slice(&(i as u64).to_le_bytes());
                seed[8..16].copy_from_slice(&cfg.seed.to_le_bytes());
                seed
            })
            .collect();
        let keys: Vec<SecretKey> = seeds.iter().map(SecretKey::from_seed).collect();
        let validators = Arc::new(
            ValidatorSet::new(
                keys.iter()
                    .map(|k| Validator {
                        public_key: k.public_key(),
                        stake: 100,
                    })
                    .collect(),
            )
            .expect("simulation validator set is well formed"),
        );
        let genesis = tagged_hash("QUASAR-SIM-GENESIS-v1", &[&cfg.seed.to_le_bytes()]);
        let limits = BlockLimits {
            max_txs: 10_000,
            max_bytes: 1 << 24,
        };
        let verifier = Verifier::new(validators.clone(), genesis, SIM_CHAIN_ID, 0, limits);
        let mut sim = Simulation {
            rng,
            now: 0,
            seq: 0,
            queue: BinaryHeap::new(),
            nodes: Vec::new(),
            seeds,
            keys,
            validators,
            verifier,
            genesis,
            blocked: HashSet::new(),
            fixed_blocks: HashSet::new(),
            trace: Vec::new(),
            sent_votes: Vec::new(),
            accepted_certificates: Vec::new(),
            byzantine_messages: 0,
            verified: HashMap::new(),
            cfg,
        };
        // Slots 0..n run validators 0..n; each Twins validator gets one more slot.
        let mut slots: Vec<usize> = (0..sim.cfg.validators).collect();
        for &(v, b) in &sim.cfg.byzantine {
            if b == Behavior::Twins && v < sim.cfg.validators {
                slots.push(v);
            }
        }
        for (slot, &validator) in slots.iter().enumerate() {
            let behavior = sim.behavior_of(validator);
            let node = sim.boot(
                validator,
                behavior,
                Vec::new(),
                BTreeMap::new(),
                HashMap::new(),
                SigningGuard::in_memory(),
            );
            debug_assert_eq!(sim.nodes.len(), slot);
            sim.nodes.push(node);
        }
        sim.split_twins();
        for i in 0..sim.nodes.len() {
            let view = sim.nodes[i].signer.highest_view();
            let actions = sim.nodes[i].core.start(0, view);
            sim.apply(i, actions);
        }
        sim
    }

    fn behavior_of(&self, validator: usize) -> Behavior {
        self.cfg
            .byzantine
            .iter()
            .find(|(v, _)| *v == validator)
            .map_or(Behavior::Honest, |(_, b)| *b)
    }

    /// Twins: each copy of a twinned validator talks to a different half of the honest slots
    /// for the whole run (a scripted partition).
    fn split_twins(&mut self) {
        let honest: Vec<usize> = (0..self.nodes.len())
            .filter(|&s| self.nodes[s].behavior == Behavior::Honest)
            .collect();
        let (left, right) = honest.split_at(honest.len() / 2);
        for twin in (0..self.nodes.len()).filter(|&s| self.nodes[s].behavior == Behavior::Twins) {
            let primary = twin == self.nodes[twin].validator;
            let cut = if primary { right } else { left };
            for &h in cut {
                self.fixed_blocks.insert((twin, h));
                self.fixed_blocks.insert((h, twin));
            }
        }
        self.blocked.extend(self.fixed_blocks.iter().copied());
    }

    fn boot(
        &mut self,
        validator: usize,
        behavior: Behavior,
        committed: Vec<Committed>,
        kept: BTreeMap<(u64, u8), Certificate>,
        stored: HashMap<Hash, Proposal>,
        guard: SigningGuard,
    ) -> SimNode {
        let tip = match committed.last() {
            Some(c) => Tip {
                height: c.proposal.header.height,
                hash: c.hash,
                view: c.proposal.header.view,
                timestamp_us: c.proposal.header.timestamp_us,
            },
            None => Tip {
                height: 0,
                hash: self.genesis,
                view: 0,
                timestamp_us: 0,
            },
        };
        let cfg = CoreConfig {
            chain_id: SIM_CHAIN_ID,
            epoch: 0,
            genesis: self.genesis,
            me: Some(validator as u32),
            block_time_us: self.cfg.block_time_us,
            view_timeout_us: self.cfg.view_timeout_us,
            retry_us: self.cfg.retry_us,
            max_future_views: 1_000,
            max_clock_drift_us: 5_000_000,
        };
        let signer = VoteSigner::new(
            SecretKey::from_seed(&self.seeds[validator]),
            validator as u32,
            SIM_CHAIN_ID,
            0,
            guard,
        );
        let mut core = Core::new(cfg, self.validators.clone(), tip);
        if let Some(c) = committed.last() {
            core.set_tip_certificate(c.certificate.clone());
        }
        for certificate in kept.values() {
            if let Ok(verified) = self.verifier.verify_certificate(certificate.clone()) {
                core.restore(verified);
            }
        }
        let durable = committed.len();
        SimNode {
            validator,
            behavior,
            core,
            signer,
            alive: true,
            committed,
            timers: HashMap::new(),
            evidence: Vec::new(),
            durable,
            kept,
            stored,
        }
    }

    /// Current simulated time.
    pub fn now(&self) -> u64 {
        self.now
    }

    fn push(&mut self, at: u64, event: Event) {
        self.seq += 1;
        self.queue.push(Reverse((at, self.seq, event)));
    }

    fn send(&mut self, from: usize, to: usize, bytes: Vec<u8>) {
        if from == to || self.blocked.contains(&(from, to)) {
            return;
        }
        if self.cfg.loss > 0.0 && self.rng.gen_bool(self.cfg.loss) {
            return;
        }
        let latency = self
            .rng
            .gen_range(self.cfg.min_latency_us..=self.cfg.max_latency_us);
        if self.cfg.duplicate > 0.0 && self.rng.gen_bool(self.cfg.duplicate) {
            let again = self
                .rng
                .gen_range(self.cfg.min_latency_us..=self.cfg.max_latency_us);
            self.push(
                self.now + latency + again,
                Event::Deliver {
                    to,
                    from,
                    bytes: bytes.clone(),
                },
            );
        }
        self.push(self.now + latency, Event::Deliver { to, from, bytes });
    }

    /// Sends what node `from`'s core wants to send, through its behaviour, and records votes and
    /// certificates for the checker.
    fn emit(&mut self, from: usize, message: Message) {
        let node = &self.nodes[from];
        let (validator, behavior) = (node.validator, node.behavior);
        let mut ctx = Context {
            validator: validator as u32,
            key: &self.keys[validator],
            slots: self.nodes.len(),
            me: from,
            validators: self.cfg.validators,
            rng: &mut self.rng,
        };
        let (messages, deviations) = outgoing(behavior, &mut ctx, message);
        self.byzantine_messages += deviations;
        for (target, message) in messages {
            if let Message::Vote(v) = &message {
                self.sent_votes.push((validator as u32, v.clone()));
            }
            let Ok(bytes) = message.encode() else {
                continue;
            };
            let targets: Vec<usize> = match target {
                Target::All => (0..self.nodes.len()).collect(),
                Target::Slots(slots) => slots,
            };
            for to in targets {
                self.send(from, to, bytes.clone());
            }
        }
    }

    fn apply(&mut self, i: usize, actions: Vec<Action>) {
        // Everything committed before this batch has been flushed.
        self.nodes[i].durable = self.nodes[i].committed.len();
        let mut queue: std::collections::VecDeque<Action> = actions.into();
        while let Some(action) = queue.pop_front() {
            match action {
                Action::Broadcast(m) => self.emit(i, m),
                Action::Vote {
                    kind,
                    view,
                    height,
                    block,
                } => {
                    if self.cfg.guard_failures > 0.0 && self.rng.gen_bool(self.cfg.guard_failures) {
                        continue; // The guard's fsync failed: nothing is signed or sent.
                    }
                    let Ok((vote, _)) = self.nodes[i].signer.sign_vote(kind, view, height, block)
                    else {
                        continue; // The guard refused: nothing is signed or sent.
                    };
                    self.emit(i, Message::Vote(vote.vote().clone()));
                    let more = self.nodes[i].core.handle(self.now, Input::Vote(vote));
                    queue.extend(more);
                }
                Action::Propose(slot) => {
                    let txs: Vec<Vec<u8>> = (0..self.cfg.txs_per_block)
                        .map(|k| format!("sim-tx/{i}/{}/{k}", slot.view).into_bytes())
                        .collect();
                    let Ok(proposal) = self.nodes[i].signer.sign_block(&slot, txs, self.now) else {
                        continue;
                    };
                    self.emit(i, Message::Proposal(proposal.proposal().clone()));
                    self.nodes[i]
                        .stored
                        .insert(*proposal.hash(), proposal.proposal().clone());
                    let more = self.nodes[i]
                        .core
                        .handle(self.now, Input::Proposal(Box::new(proposal)));
                    queue.extend(more);
                }
                Action::SetTimer { view, kind, at_us } => {
                    let code = timer_code(kind);
                    self.nodes[i].timers.insert((view, code), at_us);
                    self.push(
                        at_us,
                        Event::Timer {
                            node: i,
                            view,
                            kind: code,
                            at: at_us,
                        },
                    );
                }
                Action::Finalized(f) => {
                    let FinalizedBlock {
                        proposal,
                        hash,
                        certificate,
                    } = *f;
                    let view = proposal.header.view;
                    self.nodes[i].kept.retain(|&(v, _), _| v > view);
                    self.nodes[i].committed.push(Committed {
                        proposal,
                        hash,
                        certificate,
                    });
                }
                Action::Fetch { block, from_height } => {
                    let peers: Vec<usize> = (0..self.nodes.len()).filter(|&p| p != i).collect();
                    let peer = peers[self.rng.gen_range(0..peers.len())];
                    let request = Message::SyncRequest(SyncRequest {
                        from_height,
                        max_blocks: MAX_SYNC_BLOCKS,
                        block,
                    });
                    if let Ok(bytes) = request.encode() {
                        self.send(i, peer, bytes);
                    }
                }
                Action::Certified(c) => {
                    if self.nodes[i].behavior == Behavior::Honest {
                        self.accepted_certificates.push(c.clone());
                    }
                    self.nodes[i].kept.insert((c.view, c.kind as u8), c);
                }
                Action::EnteredView { .. } => {}
                Action::Evidence(e) => self.nodes[i].evidence.push(*e),
            }
        }
    }

    fn deliver(&mut self, to: usize, from: usize, bytes: &[u8]) {
        let Ok(message) = decode(bytes).map(|m| m.to_owned()) else {
            return;
        };
        match message {
            Message::SyncRequest(req) => {
                let response = serve(&req, &self.nodes[to]);
                if let Ok(bytes) = Message::SyncResponse(response).encode() {
                    self.send(to, from, bytes);
                }
            }
            Message::SyncResponse(resp) => {
                for item in resp.items {
                    self.deliver(to, from, &item);
                }
            }
            Message::Certificate(c) if self.nodes[to].core.has_certificate(c.view, c.kind) => {}
            other => {
                let digest = quasar_crypto::hash::sha3_256(bytes);
                let input = match self.verified.get(&digest) {
                    Some(cached) => cached.clone(),
                    None => {
                        let result = self.verifier.verify_message(other).ok().flatten();
                        if self.verified.len() > 200_000 {
                            self.verified.clear();
                        }
                        self.verified.insert(digest, result.clone());
                        result
                    }
                };
                let Some(input) = input else {
                    return;
                };
                if let Input::Proposal(p) = &input {
                    self.nodes[to]
                        .stored
                        .insert(*p.hash(), p.proposal().clone());
                }
                let actions = self.nodes[to].core.handle(self.now, input);
                self.apply(to, actions);
            }
        }
    }

    fn step(&mut self) -> bool {
        let Some(Reverse((at, seq, event))) = self.queue.pop() else {
            return false;
        };
        self.now = at;
        self.trace.extend_from_slice(&at.to_le_bytes());
        self.trace.extend_from_slice(&seq.to_le_bytes());
        match event {
            Event::Deliver { to, from, bytes } => {
                if self.nodes[to].alive && !self.blocked.contains(&(from, to)) {
                    self.trace
                        .extend_from_slice(&quasar_crypto::hash::sha3_256(&bytes));
                    self.deliver(to, from, &bytes);
                }
            }
            Event::Timer {
                node,
                view,
                kind,
                at,
            } => {
                let current = self.nodes[node].timers.get(&(view, kind)) == Some(&at);
                if self.nodes[node].alive && current {
                    self.nodes[node].timers.remove(&(view, kind));
                    let input = Input::Timer {
                        view,
                        kind: timer_kind(kind),
                    };
                    let actions = self.nodes[node].core.handle(self.now, input);
                    self.apply(node, actions);
                }
            }
        }
        true
    }

    /// Runs events until simulated time `t_us` (or the queue empties).
    pub fn run_until(&mut self, t_us: u64) {
        while let Some(Reverse((at, _, _))) = self.queue.peek() {
            if *at > t_us {
                break;
            }
            self.step();
        }
        self.now = self.now.max(t_us);
    }

    /// Runs until every live node has finalized `height`, or until `deadline_us`. Returns whether
    /// the height was reached.
    pub fn run_until_height(&mut self, height: u64, deadline_us: u64) -> bool {
        loop {
            let reached = self
                .nodes
                .iter()
                .filter(|n| n.alive && n.behavior == Behavior::Honest)
                .all(|n| n.committed.len() as u64 >= height);
            if reached {
                return true;
            }
            match self.queue.peek() {
                Some(Reverse((at, _, _))) if *at <= deadline_us => {
                    self.step();
                }
                _ => return false,
            }
        }
    }

    /// Stops node `i`: it receives nothing and its timers are void. Its signing guard and
    /// committed blocks survive, as the guard file and the block store do on disk.
    pub fn crash(&mut self, i: usize) {
        self.nodes[i].alive = false;
        self.nodes[i].timers.clear();
    }

    /// Restarts a crashed node from its committed blocks and signing guard.
    pub fn restart(&mut self, i: usize) {
        let guard = self.nodes[i].signer.take_guard();
        let committed = std::mem::take(&mut self.nodes[i].committed);
        let kept = std::mem::take(&mut self.nodes[i].kept);
        let stored = std::mem::take(&mut self.nodes[i].stored);
        let (validator, behavior) = (self.nodes[i].validator, self.nodes[i].behavior);
        let node = self.boot(validator, behavior, committed, kept, stored, guard);
        self.nodes[i] = node;
        let view = self.nodes[i].signer.highest_view();
        let actions = self.nodes[i].core.start(self.now, view);
        self.apply(i, actions);
    }

    /// Crashes node `i` between committing blocks and flushing them: the blocks of its most recent
    /// commit batch are lost (a torn write of the block store; the guard and the certificates are
    /// flushed before use and survive). It must fetch them again after [`Simulation::restart`].
    pub fn crash_losing_unflushed(&mut self, i: usize) {
        self.crash(i);
        let keep = self.nodes[i].durable;
        self.nodes[i].committed.truncate(keep);
    }

    /// Restarts a crashed node with its signing guard but an empty block store (a lost or
    /// replaced disk): it must fetch the whole finalized chain from its peers.
    pub fn restart_with_empty_store(&mut self, i: usize) {
        self.nodes[i].committed.clear();
        self.nodes[i].kept.clear();
        self.nodes[i].stored.clear();
        self.restart(i);
    }

    /// Cuts every link between different groups (both directions). Nodes in no group are isolated.
    pub fn partition(&mut self, groups: &[&[usize]]) {
        let n = self.nodes.len();
        let group_of = |i: usize| groups.iter().position(|g| g.contains(&i));
        for a in 0..n {
            for b in 0..n {
                if a != b && (group_of(a).is_none() || group_of(a) != group_of(b)) {
                    self.blocked.insert((a, b));
                }
            }
        }
    }

    /// Restores every link.
    pub fn heal(&mut self) {
        self.blocked.clear();
        self.blocked.extend(self.fixed_blocks.iter().copied());
    }

    /// Height finalized by node `i`.
    pub fn finalized_height(&self, i: usize) -> u64 {
        self.nodes[i].committed.len() as u64
    }

    /// The blocks node `i` committed, in height order.
    pub fn committed(&self, i: usize) -> &[Committed] {
        &self.nodes[i].committed
    }

    /// Equivocation evidence node `i` collected.
    pub fn evidence(&self, i: usize) -> &[Evidence] {
        &self.nodes[i].evidence
    }

    /// Current view of node `i`.
    pub fn view(&self, i: usize) -> u64 {
        self.nodes[i].core.view()
    }

    /// Everything the independent checker needs: honest nodes' chains and every vote and
    /// certificate sent.
    pub fn observation(&self) -> Observation {
        let honest: Vec<bool> = (0..self.cfg.validators)
            .map(|v| self.behavior_of(v) == Behavior::Honest)
            .collect();
        let chains = self
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.behavior == Behavior::Honest)
            .map(|(slot, n)| {
                let chain = n
                    .committed
                    .iter()
                    .map(|c| ChainEntry {
                        height: c.proposal.header.height,
                        hash: c.hash,
                        parent: c.proposal.header.parent,
                    })
                    .collect();
                (format!("node {slot}"), chain)
            })
            .collect();
        Observation {
            validators: self
                .validators
                .validators()
                .iter()
                .map(|v| (v.public_key, v.stake))
                .collect(),
            honest,
            genesis: self.genesis,
            chains,
            certificates: self.accepted_certificates.clone(),
            votes: self.sent_votes.clone(),
        }
    }

    /// Runs the independent safety checker over this run; `Err` lists every violation.
    pub fn check_safety(&self) -> Result<(), Vec<Violation>> {
        let violations = checker::check(&self.observation());
        if violations.is_empty() {
            Ok(())
        } else {
            Err(violations)
        }
    }

    /// One line per node slot (behaviour, alive, view, finalized height, armed timers) and the
    /// number of queued events: what a failing run's report shows.
    pub fn describe(&self) -> String {
        let mut out = format!("t={} queued={}", self.now, self.queue.len());
        for (slot, n) in self.nodes.iter().enumerate() {
            out.push_str(&format!(
                "; slot {slot} ({:?}{}) height {} timers {:?} {}",
                n.behavior,
                if n.alive { "" } else { ", down" },
                n.committed.len(),
                n.timers.keys().collect::<Vec<_>>(),
                n.core.describe_view(n.core.view()),
            ));
        }
        out
    }

    /// Messages Byzantine validators sent that deviate from the protocol.
    pub fn byzantine_messages(&self) -> u64 {
        self.byzantine_messages
    }

    /// Number of node slots (validators plus twins).
    pub fn slots(&self) -> usize {
        self.nodes.len()
    }

    /// Whether slot `i` runs an honest validator.
    pub fn is_honest(&self, i: usize) -> bool {
        self.nodes[i].behavior == Behavior::Honest
    }

    /// SHA3-256 of the event log (times, sequence numbers, delivered bytes).
    pub fn trace_digest(&self) -> Hash {
        quasar_crypto::hash::sha3_256(&self.trace)
    }
}
