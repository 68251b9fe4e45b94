//! A deterministic, seeded simulation of a validator network around the real consensus core.
//!
//! Every simulated validator runs the production [`Engine`] — the [`Core`](quasar_consensus::Core),
//! the [`VoteSigner`] and the storage code a validator runs — with its signing guard file in a
//! [`SimGuardDir`] (the guard's own write path, tmp file, fsync, rename, directory fsync, on a
//! simulated disk that keeps across a crash only what those fsyncs made durable) and a
//! [`SimStore`]: the sled store behind a simulated disk. Faults are injected into both: a guard
//! record that fails to become durable, a store write or flush that fails (fatal, as in the
//! runtime: the validator goes down and is restarted), and crashes that keep a torn prefix of
//! the unflushed writes or lose them all. Messages are encoded to ZAP bytes, delivered after a seeded random latency
//! (dropped with a configured probability or when a partition separates the two nodes), and
//! received through the runtime's ingress ([`Verifier::ingress`]: decoded once, verified). Timers and deliveries share one event queue ordered
//! by (time, sequence number), so the same seed gives the same run; [`Simulation::trace_digest`]
//! hashes the event log to check it.
//!
//! Validators may be Byzantine ([`Behavior`]): they run the honest core and misbehave on the way
//! out. A validator with [`Behavior::Twins`] runs on two node *slots* with one key, each connected
//! to a different half of the honest nodes. Every vote and certificate that crosses the network is
//! recorded, and [`Simulation::check_safety`] hands the record and the honest nodes' committed
//! chains to the independent [`checker`].
//!
//! A [`Mutation`] switches off one of the validator's own safety mechanisms in the simulated
//! restarts, so that tests can show the checker reports what the mechanism prevents. Mutations
//! exist only here: the runtime has no such switch.

pub mod byzantine;
pub mod campaign;
pub mod checker;

pub use byzantine::Behavior;
use byzantine::{outgoing, Context, Target};
use checker::{ChainEntry, HeldEvidence, Observation, ObservedSet, Violation};

use crate::application::ChainApplication;
use crate::engine::{Engine, Host, Published};
use crate::signer::VoteSigner;
use crate::sync::{checkpoint_inputs, serve, MAX_SYNC_BLOCKS};
use quasar_app::{address_of, Action, State, Transaction, VerificationCache};
use quasar_consensus::{
    BlockLimits, CoreConfig, EpochMembers, EpochSchedule, EpochSets, Evidence, Input, ProposalSlot,
    Received, TimerKind, Verifier,
};
use quasar_crypto::bls::{PublicKey, SecretKey};
use quasar_crypto::hash::{tagged_hash, Hash};
use quasar_crypto::mldsa::{self, MlDsa65};
use quasar_lanes::cert::Profile;
use quasar_lanes::{Validator, ValidatorSet};
use quasar_storage::{Crash, SigningGuard, SimGuardDir, SimStore, SledStore, Store};
use quasar_wire::{
    decode, BlockHeader, Certificate, EpochDomain, Message, MessageRef, SyncRequest, Vote,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};
use std::sync::Arc;

/// A safety mechanism of the validator switched off on purpose in a simulation, so that the
/// checker's tests see the violations it prevents (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutation {
    /// Every restart gets a new, empty signing guard and signs at once (no
    /// [`Engine::listen_before_signing`]): the guard forgets at each crash what it signed.
    NoGuard,
    /// A restart on an empty data directory ([`Simulation::restart_with_new_guard`]) signs at
    /// once with its new guard instead of listening and fencing first.
    NoFence,
    /// Every guard directory lies on a disk that acknowledges each fsync before it is done
    /// ([`SimGuardDir::lagging`]): a crash loses the guard's last record, so the restarted
    /// validator may sign again in the view it last signed in.
    LaggingGuardDisk,
}

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
    /// Signed transfers per proposed block (each slot spends from its own genesis account).
    pub txs_per_block: usize,
    /// Probability that a delivered message is delivered a second time.
    pub duplicate: f64,
    /// Byzantine validators and their behaviour (all others are honest).
    pub byzantine: Vec<(usize, Behavior)>,
    /// Probability, per event a node handles, that one of the file operations of its signing
    /// guard's next record (write, fsync, rename, directory fsync) fails, so the record is not
    /// durable; that vote is then neither signed nor sent, as in the runtime.
    pub guard_failures: f64,
    /// Probability, per event a node handles, that its store's next write fails. Fatal, as in
    /// the runtime: the node goes down (a torn prefix of its unflushed writes survives) and is
    /// restarted 0.2–1 s later.
    pub store_write_failures: f64,
    /// Probability, per event a node handles, that its store's next flush (fsync) fails; fatal
    /// in the same way.
    pub store_flush_failures: f64,
    /// Blocks per epoch (0: one endless epoch). At each boundary every node moves to the next
    /// epoch's core (see [`quasar_consensus::epoch`]).
    pub epoch_length: u64,
    /// Validator sets by first epoch: (epoch, the validators in the set, by number, in index
    /// order), epochs increasing, the first entry epoch 0's; stake 100 each. Empty: validators
    /// `0..validators` in every epoch. Every validator runs a node, so one outside an epoch's set
    /// follows the chain without signing until a set names it.
    pub sets: Vec<(u64, Vec<usize>)>,
    /// A safety mechanism switched off for the checker's tests (`None` in every real use).
    pub mutation: Option<Mutation>,
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
            store_write_failures: 0.0,
            store_flush_failures: 0.0,
            epoch_length: 0,
            sets: Vec::new(),
            mutation: None,
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
    /// A node that stopped on a storage failure comes back (as its supervisor would restart it).
    Restart { node: usize },
}

struct SimNode {
    /// The validator this slot runs as.
    validator: usize,
    behavior: Behavior,
    engine: Engine<SimStore, ChainApplication>,
    /// The database of its application state. It is written only after the block store's
    /// flush, so a crash never leaves it ahead of the durable blocks, and it survives crashes
    /// (its contents are a function of the durable blocks); a lost data directory loses it.
    state_db: SledStore,
    alive: bool,
    /// Down after a fatal storage error, waiting for its scheduled restart.
    failed: bool,
    /// The blocks this node reported final, by height (what the checker compares); heights a
    /// checkpoint skipped are absent.
    published: BTreeMap<u64, Published>,
    timers: HashMap<(u64, u8), u64>,
    evidence: Vec<Evidence>,
    /// Its guard is new and not fenced yet (the runtime's `UNFENCED_FILE` marker): every
    /// restart listens before signing until the engine has fenced.
    unfenced: bool,
    /// The directory of its signing guard file, on a simulated disk that keeps only what the
    /// guard's fsyncs made durable across a crash.
    guard_dir: SimGuardDir,
}

impl SimNode {
    /// The highest height this node reported final (0 before any).
    fn reported_height(&self) -> u64 {
        self.published
            .last_key_value()
            .map_or(0, |(height, _)| *height)
    }
}

/// What the engine asked of one node during one event, performed by the simulation afterwards
/// in the same order.
enum Effect {
    Send(Message),
    Timer { view: u64, kind: TimerKind, at: u64 },
    Fetch { block: Hash, from_height: u64 },
    Finalized(Box<Published>),
    Certified(Certificate),
    Evidence(Box<Evidence>),
}

/// The client of one node slot: the transfers it signs from its genesis account (to the next
/// slot's), in nonce order, until they are final.
struct TxSource {
    key: mldsa::SecretKey<MlDsa65>,
    to: quasar_app::Address,
    /// The next nonce to sign.
    next_nonce: u64,
    /// Signed and not yet seen final by the slot's node: (hash, bytes), nonce order.
    open: Vec<(Hash, Vec<u8>)>,
}

impl TxSource {
    fn new(slot: usize, slots: usize, seed: u64) -> TxSource {
        TxSource {
            key: sim_account_key(slot, seed),
            to: address_of(sim_account_key((slot + 1) % slots, seed).public_key()),
            next_nonce: 0,
            open: Vec::new(),
        }
    }

    /// The first `count` open transfers not in `exclude`, signing new ones as needed.
    fn candidates(&mut self, exclude: &HashSet<Hash>, count: usize) -> Vec<Vec<u8>> {
        loop {
            let offered: Vec<Vec<u8>> = self
                .open
                .iter()
                .filter(|(hash, _)| !exclude.contains(hash))
                .take(count)
                .map(|(_, bytes)| bytes.clone())
                .collect();
            if offered.len() == count {
                return offered;
            }
            let nonce = self.next_nonce;
            let tx = Transaction {
                chain_id: SIM_CHAIN_ID,
                nonce,
                fee: 1,
                sender: address_of(self.key.public_key()),
                public_key: (nonce == 0).then(|| self.key.public_key().clone()),
                action: Action::Transfer {
                    to: self.to,
                    amount: 1,
                },
            };
            let Ok(signed) = tx.sign(
                &self.key,
                &mut rand_chacha::ChaCha20Rng::seed_from_u64(nonce),
            ) else {
                return offered;
            };
            self.next_nonce += 1;
            self.open.push((*signed.hash(), signed.as_bytes().to_vec()));
        }
    }

    /// The node saw these transactions final.
    fn finalized(&mut self, hashes: &[Hash]) {
        let done: HashSet<&Hash> = hashes.iter().collect();
        self.open.retain(|(hash, _)| !done.contains(hash));
    }
}

/// Slot `slot`'s account key.
fn sim_account_key(slot: usize, seed: u64) -> mldsa::SecretKey<MlDsa65> {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&(slot as u64).to_le_bytes());
    bytes[8..16].copy_from_slice(&seed.to_le_bytes());
    bytes[16] = 0xac;
    mldsa::SecretKey::from_seed(&bytes)
}

/// Each slot account's genesis balance.
const SIM_BALANCE: u64 = 1 << 50;

/// The engine's [`Host`] inside the simulation: simulated time, the slot's client, and a
/// buffer of effects.
struct SimHost<'a> {
    now: u64,
    txs_per_block: usize,
    client: &'a mut TxSource,
    effects: Vec<Effect>,
}

impl Host for SimHost<'_> {
    fn now_us(&self) -> u64 {
        self.now
    }
    fn broadcast(&mut self, message: Message, _bytes: Vec<u8>) {
        self.effects.push(Effect::Send(message));
    }
    fn set_timer(&mut self, view: u64, kind: TimerKind, at_us: u64) {
        self.effects.push(Effect::Timer {
            view,
            kind,
            at: at_us,
        });
    }
    fn fetch(&mut self, block: Hash, from_height: u64) {
        self.effects.push(Effect::Fetch { block, from_height });
    }
    fn block_txs(&mut self, slot: &ProposalSlot) -> Vec<Vec<u8>> {
        let exclude: HashSet<Hash> = slot.exclude.iter().copied().collect();
        self.client.candidates(&exclude, self.txs_per_block)
    }
    fn finalized(&mut self, block: &Published) {
        self.effects
            .push(Effect::Finalized(Box::new(block.clone())));
    }
    fn evidence(&mut self, evidence: &Evidence, _stored: Result<bool, String>) {
        self.effects
            .push(Effect::Evidence(Box::new(evidence.clone())));
    }
    fn certified(&mut self, certificate: &Certificate) {
        self.effects.push(Effect::Certified(certificate.clone()));
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

/// The owner every simulated signing guard file names (each node has a directory of its own).
const SIM_GUARD_OWNER: Hash = [0; 32];

/// The most bytes of a guard file written since its last fsync that a crash keeps
/// ([`Crash::Torn`]); a full record is at most a few KiB, so whole files survive sometimes.
const GUARD_TORN_BYTES: usize = 8 * 1024;

/// One epoch's members in a simulation: `members` (validator numbers) with stake 100 each; the
/// set root hashes the seed and, when sets change, the members' keys.
fn sim_members(cfg: &SimConfig, keys: &[SecretKey], members: &[usize]) -> EpochMembers {
    let public: Vec<_> = members.iter().map(|&v| keys[v].public_key()).collect();
    let validators = ValidatorSet::new(
        public
            .iter()
            .map(|&public_key| Validator {
                public_key,
                stake: 100,
            })
            .collect(),
    )
    .expect("simulation validator sets are well formed");
    let seed = cfg.seed.to_le_bytes();
    let encoded: Vec<[u8; 48]> = public.iter().map(|k| k.to_bytes()).collect();
    let mut parts: Vec<&[u8]> = vec![&seed];
    if !cfg.sets.is_empty() {
        parts.extend(encoded.iter().map(|k| k.as_slice()));
    }
    EpochMembers {
        validators: Arc::new(validators),
        domain: EpochDomain {
            validator_set_root: tagged_hash("QUASAR-SIM-VALIDATOR-SET-v1", &parts),
            profile_id: Profile::default().name(),
        },
    }
}

/// The validator sets of `cfg` ([`SimConfig::sets`]).
fn sim_sets(cfg: &SimConfig, keys: &[SecretKey], schedule: &EpochSchedule) -> EpochSets {
    let everyone: Vec<usize> = (0..cfg.validators).collect();
    let Some(((first, genesis), later)) = cfg.sets.split_first() else {
        return EpochSets::fixed(sim_members(cfg, keys, &everyone));
    };
    assert_eq!(*first, 0, "the first simulated set is epoch 0's");
    let mut sets = EpochSets::fixed(sim_members(cfg, keys, genesis));
    for (epoch, members) in later {
        sets.change_at(schedule, *epoch, sim_members(cfg, keys, members))
            .expect("simulated set changes come in epoch order");
    }
    sets
}

/// A simulated network of validators.
pub struct Simulation {
    cfg: SimConfig,
    rng: ChaCha8Rng,
    now: u64,
    seq: u64,
    queue: BinaryHeap<Reverse<(u64, u64, Event)>>,
    nodes: Vec<SimNode>,
    /// Each slot's client, by slot.
    clients: Vec<TxSource>,
    /// The genesis allocation: each slot's account.
    accounts: Vec<(quasar_app::Address, u64)>,
    seeds: Vec<[u8; 32]>,
    /// Each validator's key (the honest signer holds its own copy behind the guard).
    keys: Vec<SecretKey>,
    /// Each validator's public key (derived once: a scalar multiplication each).
    public_keys: Vec<PublicKey>,
    verifier: Verifier,
    genesis: Hash,
    blocked: HashSet<(usize, usize)>,
    /// Links cut for the whole run (twins' halves); `heal` keeps them.
    fixed_blocks: HashSet<(usize, usize)>,
    trace: Vec<u8>,
    /// Every vote sent, with the sending validator.
    sent_votes: Vec<(u32, Vote)>,
    /// The header of every proposal sent, with the sending validator.
    sent_proposals: Vec<(u32, BlockHeader)>,
    /// Every certificate an honest node accepted (formed or received).
    accepted_certificates: Vec<Certificate>,
    /// Messages that deviated from the protocol.
    byzantine_messages: u64,
    /// Verification results by message digest (each distinct message is verified once).
    verified: HashMap<Hash, Option<Input>>,
    /// Storage faults that stopped a node.
    storage_failures: u64,
    /// Durability violations seen by the simulation itself (a reported final block lost or
    /// changed, a store that cannot be reopened).
    durability_violations: Vec<Violation>,
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
        let genesis = tagged_hash("QUASAR-SIM-GENESIS-v1", &[&cfg.seed.to_le_bytes()]);
        let limits = BlockLimits {
            max_txs: 10_000,
            max_bytes: 1 << 24,
        };
        let schedule = EpochSchedule::new(cfg.epoch_length);
        let verifier = Verifier::with_sets(
            sim_sets(&cfg, &keys, &schedule),
            genesis,
            SIM_CHAIN_ID,
            schedule,
            limits,
        );
        let mut sim = Simulation {
            rng,
            now: 0,
            seq: 0,
            queue: BinaryHeap::new(),
            nodes: Vec::new(),
            clients: Vec::new(),
            accounts: Vec::new(),
            seeds,
            public_keys: keys.iter().map(SecretKey::public_key).collect(),
            keys,
            verifier,
            genesis,
            blocked: HashSet::new(),
            fixed_blocks: HashSet::new(),
            trace: Vec::new(),
            sent_votes: Vec::new(),
            sent_proposals: Vec::new(),
            accepted_certificates: Vec::new(),
            byzantine_messages: 0,
            verified: HashMap::new(),
            storage_failures: 0,
            durability_violations: Vec::new(),
            cfg,
        };
        // Slots 0..n run validators 0..n; each Twins validator gets one more slot.
        let mut slots: Vec<usize> = (0..sim.cfg.validators).collect();
        for &(v, b) in &sim.cfg.byzantine {
            if b == Behavior::Twins && v < sim.cfg.validators {
                slots.push(v);
            }
        }
        sim.clients = (0..slots.len())
            .map(|slot| TxSource::new(slot, slots.len(), sim.cfg.seed))
            .collect();
        sim.accounts = sim
            .clients
            .iter()
            .map(|c| (address_of(c.key.public_key()), SIM_BALANCE))
            .collect();
        for &validator in &slots {
            let store = SimStore::new().expect("a temporary sled store can be created");
            let state_db = SledStore::temporary().expect("a temporary sled store can be created");
            let guard_dir = sim.new_guard_dir();
            let (engine, _) = sim
                .open_engine(validator, store, &state_db, &guard_dir)
                .expect("an empty store opens");
            sim.nodes.push(SimNode {
                validator,
                behavior: sim.behavior_of(validator),
                engine,
                state_db,
                alive: true,
                failed: false,
                published: BTreeMap::new(),
                timers: HashMap::new(),
                evidence: Vec::new(),
                unfenced: false,
                guard_dir,
            });
        }
        sim.split_twins();
        for i in 0..sim.nodes.len() {
            sim.drive(i, None);
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

    /// An empty directory for a signing guard: on a disk that lags one fsync behind under
    /// [`Mutation::LaggingGuardDisk`], an honest one otherwise.
    fn new_guard_dir(&self) -> SimGuardDir {
        match self.cfg.mutation {
            Some(Mutation::LaggingGuardDisk) => SimGuardDir::lagging(),
            _ => SimGuardDir::new(),
        }
    }

    /// Opens validator `validator`'s engine on `store` with the signing guard file in
    /// `guard_dir` (created there if absent), as a starting process does. Errors: the guard
    /// file's (corrupt, e.g. torn) or the engine's, as text.
    fn open_engine(
        &self,
        validator: usize,
        store: SimStore,
        state_db: &SledStore,
        guard_dir: &SimGuardDir,
    ) -> Result<(Engine<SimStore, ChainApplication>, crate::engine::Recovery), String> {
        let state_store = state_db.state().map_err(|e| format!("state store: {e}"))?;
        let rules = quasar_app::ChainRules {
            chain_id: SIM_CHAIN_ID,
            epoch_length: self.schedule().length().unwrap_or(0),
            sets_from_registry: false,
        };
        let state = State::open(state_store, rules, self.accounts.iter().copied(), [])
            .map_err(|e| format!("application state: {e}"))?;
        let cache = Arc::new(VerificationCache::new(SIM_CHAIN_ID, 4096));
        let app = ChainApplication::new(state, cache, 1 << 24);
        let guard = SigningGuard::open_in(Box::new(guard_dir.clone()), &SIM_GUARD_OWNER)
            .map_err(|e| format!("signing guard: {e}"))?;
        let cfg = CoreConfig {
            chain_id: SIM_CHAIN_ID,
            epoch: 0,
            schedule: self.schedule(),
            genesis: self.genesis,
            me: Some(validator as u32),
            block_time_us: self.cfg.block_time_us,
            view_timeout_us: self.cfg.view_timeout_us,
            retry_us: self.cfg.retry_us,
            max_future_views: 1_000,
            max_clock_drift_us: 5_000_000,
        };
        // The engine sets the index and domain of the epoch it resumes in.
        let signer = VoteSigner::new(
            SecretKey::from_seed(&self.seeds[validator]),
            validator as u32,
            SIM_CHAIN_ID,
            0,
            EpochDomain::default(),
            guard,
        );
        let (mut engine, recovery) =
            Engine::open(store, app, signer, cfg, &self.verifier, 0).map_err(|e| e.to_string())?;
        if self.behavior_of(validator) != Behavior::Honest || self.cfg.mutation.is_some() {
            // A Byzantine validator signs outside its engine's guard (Twins: a second process
            // on purpose), or the guard's protections are switched off.
            engine.allow_second_instance();
        }
        Ok((engine, recovery))
    }

    /// Lets node `i`'s engine start (`None`) or handle `input`, with this event's faults armed,
    /// then performs what it asked for. A fatal engine error takes the node down; a node that is
    /// down handles nothing (a sync reply's later blocks must not reach an engine whose process
    /// died on an earlier one: campaigns saw it report a block past a gap as final).
    fn drive(&mut self, i: usize, input: Option<Input>) {
        if !self.nodes[i].alive {
            return;
        }
        let guard_fault =
            self.cfg.guard_failures > 0.0 && self.rng.gen_bool(self.cfg.guard_failures);
        let write_fault =
            self.cfg.store_write_failures > 0.0 && self.rng.gen_bool(self.cfg.store_write_failures);
        let flush_fault =
            self.cfg.store_flush_failures > 0.0 && self.rng.gen_bool(self.cfg.store_flush_failures);
        let mut host = SimHost {
            now: self.now,
            txs_per_block: self.cfg.txs_per_block,
            client: &mut self.clients[i],
            effects: Vec::new(),
        };
        // The guard's write path is four file operations: the fault hits one of them.
        let guard_fault = guard_fault.then(|| self.rng.gen_range(0..4u32));
        let node = &mut self.nodes[i];
        let engine = &mut node.engine;
        // Faults are armed for this event only (four mutex round trips saved on the common,
        // fault-free event).
        if let Some(after) = guard_fault {
            node.guard_dir.fail_operation(after);
        }
        if write_fault {
            engine.store().fail_next_writes(1);
        }
        if flush_fault {
            engine.store().fail_next_flushes(1);
        }
        let result = match input {
            Some(input) => engine.handle(&mut host, input),
            None => engine.start(&mut host),
        };
        if guard_fault.is_some() {
            node.guard_dir.disarm();
        }
        if write_fault || flush_fault {
            engine.store().fail_next_writes(0);
            engine.store().fail_next_flushes(0);
        }
        if self.nodes[i].unfenced && !self.nodes[i].engine.listening() {
            self.nodes[i].unfenced = false;
        }
        for effect in host.effects {
            self.perform(i, effect);
        }
        if result.is_err() {
            // The process exits on a fatal storage error; its supervisor restarts it.
            self.storage_failures += 1;
            self.crash(i);
            self.nodes[i].failed = true;
            let back = self.now + self.rng.gen_range(200_000..1_000_000);
            self.push(back, Event::Restart { node: i });
        }
    }

    /// The epoch schedule every node runs.
    fn schedule(&self) -> EpochSchedule {
        EpochSchedule::new(self.cfg.epoch_length)
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
        let epoch = epoch_of(&message).unwrap_or_else(|| node.engine.core().epoch());
        let members = self.verifier.members(epoch);
        let key = &self.keys[validator];
        let mut ctx = Context {
            validator: members
                .index_of(&self.public_keys[validator])
                .unwrap_or(u32::MAX),
            key,
            slots: self.nodes.len(),
            me: from,
            validators: members.validators.len(),
            rng: &mut self.rng,
            domain: &members.domain,
        };
        let (messages, deviations) = outgoing(behavior, &mut ctx, message);
        self.byzantine_messages += deviations;
        for (target, message) in messages {
            match &message {
                Message::Vote(v) => self.sent_votes.push((validator as u32, v.clone())),
                Message::Proposal(p) => self
                    .sent_proposals
                    .push((validator as u32, p.header.clone())),
                _ => {}
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

    fn perform(&mut self, i: usize, effect: Effect) {
        match effect {
            Effect::Send(message) => self.emit(i, message),
            Effect::Timer { view, kind, at } => {
                let code = timer_code(kind);
                self.nodes[i].timers.insert((view, code), at);
                self.push(
                    at,
                    Event::Timer {
                        node: i,
                        view,
                        kind: code,
                        at,
                    },
                );
            }
            Effect::Finalized(block) => {
                self.clients[i].finalized(&block.tx_hashes);
                self.published(i, *block)
            }
            Effect::Fetch { block, from_height } => {
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
            Effect::Certified(c) => {
                if self.nodes[i].behavior == Behavior::Honest {
                    self.accepted_certificates.push(c);
                }
            }
            Effect::Evidence(e) => self.nodes[i].evidence.push(*e),
        }
    }

    /// Node `i` reported `block` final. A height it reported before must be the same block
    /// (else its store lost or changed a final block: a durability violation).
    fn published(&mut self, i: usize, block: Published) {
        let height = block.proposal.header.height;
        let reported = self.finalized_height(i);
        if height == reported + 1 || (block.checkpoint && height > reported) {
            self.nodes[i].published.insert(height, block);
            return;
        }
        let same = self.nodes[i]
            .published
            .get(&height)
            .is_some_and(|earlier| earlier.hash == block.hash);
        if !same {
            self.durability_violations.push(Violation::LostFinalized {
                node: format!("node {i}"),
                height,
            });
        }
    }

    /// Delivers `bytes` from node `from` to node `to` through ingress
    /// ([`quasar_consensus::Verifier::ingress`], the runtime's path): sync requests are served,
    /// a sync reply's items go through ingress in turn, verified inputs reach the engine (which
    /// stores a proposal to serve it, as it does in the runtime).
    fn deliver(&mut self, to: usize, from: usize, bytes: &[u8]) {
        let digest = quasar_crypto::hash::sha3_256(bytes);
        if let Some(cached) = self.verified.get(&digest).cloned() {
            self.drive_gossip(to, cached);
            return;
        }
        let messages = [bytes];
        let Some(received) = self.verifier.ingress(&messages).pop() else {
            return;
        };
        match received {
            Received::Other(MessageRef::SyncRequest(req)) => {
                // The simulator's sets come from its genesis: no checkpoint carries a set.
                let response = serve(
                    &req.to_owned(),
                    self.nodes[to].engine.store(),
                    &self.schedule(),
                    &|_| None,
                );
                if let Ok(bytes) = Message::SyncResponse(response).encode() {
                    self.send(to, from, bytes);
                }
            }
            Received::Other(MessageRef::SyncResponse(resp)) => {
                let inputs: Vec<Input> = resp
                    .items()
                    .filter_map(|item| self.verified_input(item))
                    .collect();
                let from_height = self.nodes[to].engine.core().tip().height + 1;
                for input in checkpoint_inputs(inputs, from_height, &self.schedule(), None) {
                    self.drive(to, Some(input));
                }
            }
            Received::Input(input) => {
                self.remember(digest, Some(input.clone()));
                self.drive_gossip(to, Some(input));
            }
            Received::Invalid(_) => self.remember(digest, None),
            Received::Other(_) | Received::Malformed(_) => {}
        }
    }

    /// Drives node `to` with a verified gossip input. Gossip of a certificate the node holds is
    /// skipped (a sync reply's is not: a checkpoint carries it with the blocks it certifies).
    fn drive_gossip(&mut self, to: usize, input: Option<Input>) {
        match input {
            Some(Input::Certificate(c))
                if self.nodes[to]
                    .engine
                    .core()
                    .has_certificate(c.certificate().view, c.certificate().kind) => {}
            Some(input) => self.drive(to, Some(input)),
            None => {}
        }
    }

    /// `bytes` (one message) through ingress: the verified input, or `None` when it is not one
    /// or does not verify. Verdicts are cached by digest (each distinct message is verified
    /// once).
    fn verified_input(&mut self, bytes: &[u8]) -> Option<Input> {
        let digest = quasar_crypto::hash::sha3_256(bytes);
        if let Some(cached) = self.verified.get(&digest) {
            return cached.clone();
        }
        let input = match self.verifier.ingress(&[bytes]).pop() {
            Some(Received::Input(input)) => Some(input),
            _ => None,
        };
        self.remember(digest, input.clone());
        input
    }

    /// Caches the verdict on the message of `digest` (bounded: the cache is emptied at 200,000
    /// entries).
    fn remember(&mut self, digest: Hash, verdict: Option<Input>) {
        if self.verified.len() > 200_000 {
            self.verified.clear();
        }
        self.verified.insert(digest, verdict);
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
                    self.drive(node, Some(input));
                }
            }
            Event::Restart { node } => {
                if self.nodes[node].failed && !self.nodes[node].alive {
                    self.restart(node);
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
                .all(|n| n.reported_height() >= height);
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

    /// Stops node `i` as `kill -9` would: it receives nothing, its timers are void, its store
    /// keeps what was flushed plus a random prefix of the unflushed writes, and its guard
    /// directory keeps what the guard's fsyncs made durable (plus a random prefix of any file
    /// written since its last fsync).
    pub fn crash(&mut self, i: usize) {
        let unflushed = self.nodes[i].engine.store().unflushed();
        let keep = self.rng.gen_range(0..=unflushed);
        self.crash_with(i, Crash::Torn { keep });
    }

    /// Crashes node `i` losing every write since its store's last flush (blocks committed but
    /// not yet flushed, proposals kept for serving).
    pub fn crash_losing_unflushed(&mut self, i: usize) {
        self.crash_with(i, Crash::LoseUnflushed);
    }

    fn crash_with(&mut self, i: usize, crash: Crash) {
        let node = &mut self.nodes[i];
        if !node.alive {
            return;
        }
        node.alive = false;
        node.failed = false;
        node.timers.clear();
        node.guard_dir.crash(match crash {
            Crash::LoseUnflushed => Crash::LoseUnflushed,
            Crash::Torn { .. } => Crash::Torn {
                keep: self.rng.gen_range(0..=GUARD_TORN_BYTES),
            },
        });
        if let Err(e) = node.engine.store().crash(crash) {
            self.durability_violations.push(Violation::Unrecoverable {
                node: format!("node {i}"),
                error: e.to_string(),
            });
        }
    }

    /// Restarts node `i` (crashing it first if it is up) from its store and signing guard file,
    /// as a new process would. A store that cannot be reopened, or that lost a block the node had
    /// reported final, is a violation; blocks that became durable without being reported (the
    /// crash hit between flush and report) are reported now.
    pub fn restart(&mut self, i: usize) {
        if self.nodes[i].alive {
            self.crash(i);
        }
        if self.cfg.mutation == Some(Mutation::NoGuard) {
            self.nodes[i].guard_dir = self.new_guard_dir();
        }
        let store = self.nodes[i].engine.store().clone();
        self.reopen(i, store);
    }

    /// Reopens node `i` on `store` and its guard directory, as the runtime starts a validator:
    /// a missing guard file with a store that holds history stops it (a violation here: the
    /// file was lost); a missing one on an empty store is new, and a node whose guard is new
    /// or not fenced yet listens before it signs ([`Engine::listen_before_signing`], one view
    /// timeout), unless [`Mutation::NoGuard`] or [`Mutation::NoFence`] switched that off.
    fn reopen(&mut self, i: usize, store: SimStore) {
        let validator = self.nodes[i].validator;
        let guard_dir = self.nodes[i].guard_dir.clone();
        // Under `NoGuard` the runtime's check is off with the guard.
        if !guard_dir.contains(quasar_storage::GUARD_FILE)
            && self.cfg.mutation != Some(Mutation::NoGuard)
        {
            match store.is_empty() {
                Ok(true) => self.nodes[i].unfenced = true,
                Ok(false) => {
                    self.durability_violations.push(Violation::Unrecoverable {
                        node: format!("node {i}"),
                        error: "the signing guard file is missing but the store holds history"
                            .into(),
                    });
                    return;
                }
                Err(e) => {
                    self.durability_violations.push(Violation::Unrecoverable {
                        node: format!("node {i}"),
                        error: e.to_string(),
                    });
                    return;
                }
            }
        }
        // In a validator the application state shares the block store's sled database, so a
        // disk that loses blocks loses the state written after them too (it is written after
        // the blocks' flush). Here it has its own database: one found ahead of the durable
        // blocks (only a disk that lied about a flush leaves that) is rebuilt from them.
        let tip = store
            .finalized_tip()
            .ok()
            .flatten()
            .map_or(0, |(height, _)| height);
        let state_version = self.nodes[i]
            .state_db
            .state()
            .ok()
            .and_then(|state| state.latest().ok().flatten())
            .map_or(0, |(version, _)| version);
        if state_version > tip {
            self.nodes[i].state_db =
                SledStore::temporary().expect("a temporary sled store can be created");
        }
        let state_db = self.nodes[i].state_db.clone();
        let (engine, recovery) = match self.open_engine(validator, store, &state_db, &guard_dir) {
            Ok(opened) => opened,
            Err(error) => {
                self.durability_violations.push(Violation::Unrecoverable {
                    node: format!("node {i}"),
                    error,
                });
                return;
            }
        };
        let reported = self.finalized_height(i);
        if recovery.tip.height < reported {
            self.durability_violations.push(Violation::LostFinalized {
                node: format!("node {i}"),
                height: recovery.tip.height + 1,
            });
        }
        let floor = engine.store().history_floor().unwrap_or(1);
        let mut previous = reported;
        for height in reported + 1..=recovery.tip.height {
            match durable_block(engine.store(), height, self.now) {
                Some(mut block) => {
                    block.checkpoint = height != previous + 1;
                    previous = height;
                    self.nodes[i].published.insert(height, block);
                }
                // Skipped by a checkpoint this node took before the crash.
                None if height < floor => {}
                None => {
                    self.durability_violations.push(Violation::Unrecoverable {
                        node: format!("node {i}"),
                        error: format!("finalized height {height} unreadable"),
                    });
                    break;
                }
            }
        }
        let node = &mut self.nodes[i];
        node.engine = engine;
        let fence_off = matches!(
            self.cfg.mutation,
            Some(Mutation::NoGuard | Mutation::NoFence)
        );
        if node.unfenced && !fence_off {
            node.engine
                .listen_before_signing(self.now, self.cfg.view_timeout_us);
        }
        node.alive = true;
        node.failed = false;
        self.drive(i, None);
    }

    /// Restarts a crashed node with its signing guard but an empty block store (a lost or
    /// replaced disk): it must fetch the whole finalized chain from its peers. What it reported
    /// before is forgotten with the disk.
    pub fn restart_with_empty_store(&mut self, i: usize) {
        self.crash_with(i, Crash::LoseUnflushed);
        if self.cfg.mutation == Some(Mutation::NoGuard) {
            self.nodes[i].guard_dir = self.new_guard_dir();
        }
        self.nodes[i].published.clear();
        self.nodes[i].state_db =
            SledStore::temporary().expect("a temporary sled store can be created");
        let store = SimStore::new().expect("a temporary sled store can be created");
        self.reopen(i, store);
    }

    /// Restarts a crashed node on an empty data directory: no blocks and a new signing guard
    /// (a lost disk that held both). It fetches the chain again and listens before it signs
    /// ([`Engine::listen_before_signing`]); the checker then shows whether it ever signed in
    /// a view against what it signed before.
    pub fn restart_with_new_guard(&mut self, i: usize) {
        self.crash_with(i, Crash::LoseUnflushed);
        self.nodes[i].published.clear();
        self.nodes[i].guard_dir = self.new_guard_dir();
        self.nodes[i].state_db =
            SledStore::temporary().expect("a temporary sled store can be created");
        let store = SimStore::new().expect("a temporary sled store can be created");
        self.reopen(i, store);
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
        self.nodes[i].reported_height()
    }

    /// The blocks node `i` reported final, in height order (without the heights a checkpoint
    /// skipped).
    pub fn committed(&self, i: usize) -> Vec<&Published> {
        self.nodes[i].published.values().collect()
    }

    /// Equivocation evidence node `i` collected.
    pub fn evidence(&self, i: usize) -> &[Evidence] {
        &self.nodes[i].evidence
    }

    /// Current view of node `i`.
    pub fn view(&self, i: usize) -> u64 {
        self.nodes[i].engine.core().view()
    }

    /// The validator that leads `view` in node `i`'s current epoch.
    pub fn leader(&self, i: usize, view: u64) -> usize {
        self.nodes[i].engine.core().leader_of(view) as usize
    }

    /// Node `i`'s application state database.
    pub fn state_db(&self, i: usize) -> &SledStore {
        &self.nodes[i].state_db
    }

    /// The verifier every node uses: the genesis's validator sets and schedule.
    pub fn verifier(&self) -> &Verifier {
        &self.verifier
    }

    /// The genesis account of slot `slot`'s client (it sends transfers to the next slot's).
    pub fn account(&self, slot: usize) -> quasar_app::Address {
        self.accounts[slot].0
    }

    /// Node `i`'s store (to inspect what survived a crash).
    pub fn store(&self, i: usize) -> &SimStore {
        self.nodes[i].engine.store()
    }

    /// No more store write or flush faults from now on (a campaign's fault window is over);
    /// nodes down after one still come back as scheduled.
    pub fn stop_storage_faults(&mut self) {
        self.cfg.store_write_failures = 0.0;
        self.cfg.store_flush_failures = 0.0;
    }

    /// Storage faults that stopped a node so far.
    pub fn storage_failures(&self) -> u64 {
        self.storage_failures
    }

    /// The honest nodes with their slots.
    fn honest_nodes(&self) -> impl Iterator<Item = (usize, &SimNode)> {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.behavior == Behavior::Honest)
    }

    /// Everything the independent checker needs: honest nodes' chains and every vote and
    /// certificate sent.
    pub fn observation(&self) -> Observation {
        let honest: Vec<bool> = (0..self.cfg.validators)
            .map(|v| self.behavior_of(v) == Behavior::Honest)
            .collect();
        let chains = self
            .honest_nodes()
            .map(|(slot, n)| {
                let chain = n
                    .published
                    .values()
                    .map(|c| ChainEntry {
                        height: c.proposal.header.height,
                        hash: c.hash,
                        parent: c.proposal.header.parent,
                        checkpoint: c.checkpoint,
                    })
                    .collect();
                (format!("node {slot}"), chain)
            })
            .collect();
        let sets = self
            .verifier
            .sets()
            .changes()
            .into_iter()
            .map(|(first_epoch, members)| ObservedSet {
                first_epoch,
                validators: members
                    .validators
                    .validators()
                    .iter()
                    .map(|v| (v.public_key, v.stake))
                    .collect(),
                domain: members.domain.clone(),
            })
            .collect();
        let evidence = self
            .honest_nodes()
            .flat_map(|(slot, n)| {
                // Evidence is made of votes and proposals: each carries its epoch.
                n.evidence.iter().filter_map(move |e| {
                    Some(HeldEvidence {
                        holder: format!("node {slot}"),
                        epoch: epoch_of(&e.first)?,
                        signer: e.signer,
                        view: e.view,
                    })
                })
            })
            .collect();
        Observation {
            sets,
            honest,
            keys: self.public_keys.clone(),
            genesis: self.genesis,
            chains,
            certificates: self.accepted_certificates.clone(),
            votes: self.sent_votes.clone(),
            proposals: self.sent_proposals.clone(),
            evidence,
        }
    }

    /// Runs the independent safety checker over this run; `Err` lists every violation.
    pub fn check_safety(&self) -> Result<(), Vec<Violation>> {
        let mut violations = checker::check(&self.observation());
        violations.extend(self.durability_violations.iter().cloned());
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
                n.reported_height(),
                n.timers.keys().collect::<Vec<_>>(),
                n.engine.core().describe_view(n.engine.core().view()),
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

/// The epoch a consensus message is signed in (`None` for messages outside consensus).
fn epoch_of(message: &Message) -> Option<u64> {
    match message {
        Message::Proposal(p) => Some(p.header.epoch),
        Message::Vote(v) => Some(v.epoch),
        Message::Certificate(c) => Some(c.epoch),
        _ => None,
    }
}

/// The finalized block at `height` as `store` holds it, as a report.
fn durable_block(store: &SimStore, height: u64, now: u64) -> Option<Published> {
    let stored = store.block_by_height(height).ok()??;
    let (Ok(MessageRef::Proposal(p)), Ok(MessageRef::Certificate(c))) =
        (decode(&stored.block), decode(&stored.certificate))
    else {
        return None;
    };
    let proposal = p.to_owned();
    Some(Published {
        tx_hashes: proposal
            .txs
            .iter()
            .map(|tx| quasar_wire::tx_hash(tx))
            .collect(),
        proposal,
        hash: stored.hash,
        certificate: c.to_owned(),
        seen_us: now,
        checkpoint: false,
    })
}
