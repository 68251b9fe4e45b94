//! Resident consensus state after 10^6 finality events (issue 8, docs/architecture.md §6: at most 6 MB).
//!
//! Run: `cargo bench -p quasar-bench --bench consensus_memory` (about a minute; set
//! `QUASAR_MEMORY_EVENTS` for another event count).
//!
//! A non-voting [`Core`] follows a 4-validator chain through `QUASAR_MEMORY_EVENTS` finalized
//! heights (default 10^6) in epochs of [`EPOCH_LENGTH`] blocks, moving to each next epoch's core
//! at the boundary as the engine does, and hands every finalized block to a [`QuasarTracker`]
//! under an `aurora` policy (bundles of 16) carried into each epoch. Per height it gets the
//! leader's proposal (two 100-byte transactions), three notarize votes and three finalize votes
//! in the block's view: one finality event. The messages carry one real BLS signature reused
//! everywhere, since the core aggregates but never verifies (the verifier's work is not what
//! this measures); the tracker therefore finds no valid BLS leg and every bundle waits, which
//! is its most memory-hungry state (bounded at 64 waiting bundles). The runtime's per-height
//! state is driven too: each event's two transactions pass through a [`Mempool`] (admitted,
//! then removed as finalized, with lifetime eviction) and its finality time is recorded as the
//! runtime records it ([`record_finality`], pruned with the epochs).
//!
//! A counting global allocator reports the live heap of the process — the core, the tracker,
//! the epoch policies and this driver's few buffers — after 10^3 events (the baseline, measured
//! in the same run), after each further power of ten, and its peak while the events ran. The table gives each as MB
//! and as a ratio to the baseline (about 1 means the state does not grow with the chain), and
//! the JSON lands in `target/criterion/consensus-memory.json`. Storage is on disk and not
//! counted (sled's page cache has its own configured bound).

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use quasar_bench::summary::criterion_dir;
use quasar_consensus::{
    Action, Core, CoreConfig, EpochSchedule, Input, Tip, VerifiedProposal, VerifiedVote,
};
use quasar_crypto::bls::{SecretKey, Signature};
use quasar_crypto::hash::Hash;
use quasar_lanes::cert::{CertVerifier, Profile};
use quasar_lanes::cert_fixture::{Fixture, FixtureConfig};
use quasar_lanes::ValidatorSet;
use quasar_node::mempool::{Mempool, MempoolLimits};
use quasar_node::quasar::{FinalizedInfo, QuasarTracker};
use quasar_node::runtime::record_finality;
use quasar_wire::{payload_root_of_hashes, tx_hash, BlockHeader, Proposal, Vote, VoteKind};

/// Counts the bytes currently allocated through it.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call forwards to the system allocator with the caller's layout unchanged; the
// counters are plain atomics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Blocks per epoch: 1,000 epoch changes over 10^6 heights.
const EPOCH_LENGTH: u64 = 1_000;
/// Validators (equal stake); votes come from the first three, a quorum.
const VALIDATORS: usize = 4;
const CHAIN: u64 = 7;
const GENESIS: Hash = [42; 32];
/// The target of docs/architecture.md §6.
const TARGET_MB: f64 = 6.0;

fn mb(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// The chain driver: the current epoch's core and what builds its messages.
struct Chain {
    core: Core,
    cfg: CoreConfig,
    validators: Arc<ValidatorSet>,
    signature: Signature,
    schedule: EpochSchedule,
    /// The runtime's finality times by height.
    finalized_at: BTreeMap<u64, u64>,
    /// The runtime's mempool.
    mempool: Mempool,
}

impl Chain {
    fn vote(&self, kind: VoteKind, view: u64, height: u64, block: Hash, signer: u32) -> Input {
        let vote = Vote {
            kind,
            chain_id: CHAIN,
            epoch: self.cfg.epoch,
            view,
            height,
            block,
            signer,
            signature: self.signature.to_bytes(),
        };
        Input::Vote(VerifiedVote::signed_locally(vote, self.signature))
    }

    /// One finality event: the next height proposed in the current view, notarized and
    /// finalized, the block handed to `tracker`, and at an epoch's boundary the next epoch's
    /// core started.
    fn step(&mut self, tracker: &mut QuasarTracker) {
        let tip = self.core.tip();
        let view = self.core.view();
        let height = tip.height + 1;
        let txs = vec![
            [&height.to_le_bytes()[..], &[0; 92]].concat(),
            [&height.to_le_bytes()[..], &[1; 92]].concat(),
        ];
        for tx in &txs {
            self.mempool.add(tx.clone()).expect("room in the mempool");
        }
        let tx_hashes: Vec<Hash> = txs.iter().map(|t| tx_hash(t)).collect();
        let header = BlockHeader {
            chain_id: CHAIN,
            epoch: self.cfg.epoch,
            view,
            height,
            parent_view: tip.view,
            parent: tip.hash,
            proposer: self.core.leader_of(view),
            timestamp_us: tip.timestamp_us + 1_000,
            payload_root: payload_root_of_hashes(&tx_hashes),
            state_root: [0; 32],
        };
        let hash = header.hash();
        let proposal = Proposal {
            header,
            txs,
            signature: self.signature.to_bytes(),
        };
        let now = tip.timestamp_us + 1_000;
        let mut actions = self.core.handle(
            now,
            Input::Proposal(Box::new(VerifiedProposal::signed_locally(
                proposal,
                tx_hashes,
                self.signature,
            ))),
        );
        for kind in [VoteKind::Notarize, VoteKind::Finalize] {
            for signer in 0..3 {
                let input = self.vote(kind, view, height, hash, signer);
                actions.extend(self.core.handle(now, input));
            }
        }
        for action in actions {
            match action {
                Action::Finalized(block) => {
                    self.mempool.remove_finalized(&block.tx_hashes);
                    self.mempool.evict_expired(std::time::Instant::now());
                    record_finality(
                        &mut self.finalized_at,
                        &self.schedule,
                        block.proposal.header.height,
                        now,
                    );
                    tracker.on_finalized(&FinalizedInfo {
                        height: block.proposal.header.height,
                        view: block.proposal.header.view,
                        hash: block.hash,
                        certificate: &block.certificate,
                        seen_us: now,
                    });
                }
                Action::EpochEnded {
                    boundary,
                    certificate,
                    ..
                } => {
                    self.cfg.epoch += 1;
                    self.core = Core::new(self.cfg.clone(), self.validators.clone(), boundary);
                    self.core.set_tip_certificate(certificate);
                    self.core.start(now, 0);
                }
                _ => {}
            }
        }
        assert_eq!(self.core.tip().height, height, "height {height} finalized");
        assert!(
            self.mempool.is_empty(),
            "finalized transactions leave the mempool"
        );
        assert_eq!(self.cfg.epoch, self.schedule.epoch_of(height + 1));
    }
}

/// Events to drive: `QUASAR_MEMORY_EVENTS`, 10^3 (the baseline) to 10^9, default 10^6.
fn events() -> Result<u64, String> {
    let Ok(text) = std::env::var("QUASAR_MEMORY_EVENTS") else {
        return Ok(1_000_000);
    };
    match text.trim().parse::<u64>() {
        Ok(n) if (1_000..=1_000_000_000).contains(&n) => Ok(n),
        _ => Err(format!(
            "QUASAR_MEMORY_EVENTS={text:?}: give a whole number of events from 1000 (the \
             baseline) to 1000000000"
        )),
    }
}

fn main() {
    let events = match events() {
        Ok(n) => n,
        Err(message) => {
            eprintln!("consensus_memory: {message}");
            std::process::exit(2);
        }
    };
    let keys: Vec<SecretKey> = (0..VALIDATORS as u8)
        .map(|i| SecretKey::from_seed(&[i + 1; 32]))
        .collect();
    let validators = Arc::new(
        ValidatorSet::equal_stake(keys.iter().map(SecretKey::public_key))
            .expect("a validator set of four"),
    );
    let schedule = EpochSchedule::new(EPOCH_LENGTH);
    let cfg = CoreConfig {
        chain_id: CHAIN,
        epoch: 0,
        schedule,
        genesis: GENESIS,
        me: None,
        block_time_us: 1_000,
        view_timeout_us: 1_000_000_000,
        retry_us: 1_000_000_000,
        max_future_views: 1_000,
        max_clock_drift_us: 1_000_000,
    };
    let genesis = Tip {
        height: 0,
        hash: GENESIS,
        view: 0,
        timestamp_us: 0,
    };
    let fixture = Fixture::new(FixtureConfig {
        bundle_size: 16,
        chain_id: CHAIN,
        epoch: 0,
        ..FixtureConfig::new(VALIDATORS, Profile::Aurora)
    })
    .expect("an aurora fixture");
    let mut tracker = QuasarTracker::new(
        Ok(Arc::new(fixture.policy().clone())),
        schedule,
        Profile::Aurora,
        16,
        Arc::new(CertVerifier::new(1).expect("a verifier pool")),
    );
    drop(fixture);
    let mut core = Core::new(cfg.clone(), validators.clone(), genesis);
    core.start(0, 0);
    let mut chain = Chain {
        core,
        cfg,
        validators,
        signature: keys[0].sign(b"consensus memory bench"),
        schedule,
        finalized_at: BTreeMap::new(),
        mempool: Mempool::new(MempoolLimits {
            max_txs: 100_000,
            max_bytes: 100 << 20,
            max_tx_bytes: 64 << 10,
            lifetime: std::time::Duration::from_secs(600),
        }),
    };
    drop(keys);

    // The peak is taken over the events only, not over building the fixture.
    PEAK.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
    let started = Instant::now();
    let mut rows: Vec<(u64, usize)> = Vec::new();
    let mut next = 1_000u64;
    for event in 1..=events {
        chain.step(&mut tracker);
        if event == next || event == events {
            rows.push((event, LIVE.load(Ordering::Relaxed)));
            next = next.saturating_mul(10);
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let peak = PEAK.load(Ordering::Relaxed);
    let baseline = rows.first().map_or(1, |&(_, b)| b.max(1));
    println!(
        "\nconsensus memory: {events} finality events over {} epochs of {EPOCH_LENGTH} blocks \
         in {elapsed:.1} s",
        events.div_ceil(EPOCH_LENGTH)
    );
    println!("| after events | live heap MB | / after 10^3 |\n|---|---|---|");
    for &(event, live) in &rows {
        println!(
            "| {event} | {:.3} | {:.2} |",
            mb(live),
            live as f64 / baseline as f64
        );
    }
    let last = rows.last().map_or(0, |&(_, b)| b);
    let met = mb(last) <= TARGET_MB && mb(peak) <= TARGET_MB;
    println!(
        "| peak | {:.3} | {:.2} |\n\ntarget: at most {TARGET_MB} MB after {events} events: {}",
        mb(peak),
        peak as f64 / baseline as f64,
        if met { "met" } else { "NOT met" }
    );
    let report = serde_json::json!({
        "events": events,
        "epoch_length": EPOCH_LENGTH,
        "live_mb": rows
            .iter()
            .map(|&(e, b)| (e.to_string(), serde_json::json!(mb(b))))
            .collect::<serde_json::Map<_, _>>(),
        "peak_mb": mb(peak),
        "final_over_baseline": last as f64 / baseline as f64,
        "target_mb": TARGET_MB,
        "met": met,
    });
    let dir = criterion_dir();
    let out = dir.join("consensus-memory.json");
    let written = serde_json::to_vec_pretty(&report)
        .map_err(std::io::Error::other)
        .and_then(|bytes| std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&out, bytes)));
    match written {
        Ok(()) => println!("written to {}", out.display()),
        Err(e) => eprintln!("could not write {}: {e}", out.display()),
    }
}
