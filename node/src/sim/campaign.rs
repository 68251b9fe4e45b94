//! Seeded simulation campaigns: many runs with random fault schedules and Byzantine behaviours,
//! each checked by the independent [`super::checker`] (behind `quasar-node simulate`).
//!
//! One run, fully determined by its seed:
//! - `byzantine` distinct validators get a random [`Behavior`] each (Twins included);
//! - half the runs cross epoch boundaries every 2–6 blocks, and half of those change the
//!   validator set at random boundaries: the run then has one spare honest validator, and each
//!   change leaves out one randomly chosen honest validator (the spare at genesis), so every set
//!   has `validators` members with the Byzantine ones among them;
//! - the network gets random latency (1 ms to 5–60 ms, so messages reorder), loss (0–5 %) and
//!   duplication (0–2 %);
//! - the signing guard's write fails for up to 1 % of the events a node handles (that vote is
//!   never sent);
//! - during the fault window, each event a node handles may also hit a failed store write or a
//!   failed flush (up to 0.2 % each): fatal, as in a validator process, so the node goes down
//!   with a torn prefix of its unflushed writes and is restarted 0.2–1 s later;
//! - during an 8-second fault window, 1–4 faults strike at random times: an honest validator
//!   crashes and restarts 0.2–2 s later from its durable state (a crash keeps a random prefix of
//!   the unflushed store writes; half of the crashes lose all of them; one in ten loses the
//!   block store but the signing guard, so the validator syncs the chain again from genesis, by
//!   checkpoints where its peers pruned it; one in ten loses the whole data directory, guard
//!   included, so the validator also listens before it signs and fences the views it may have
//!   signed in, and the checker shows whether it ever contradicts its earlier votes or
//!   proposals), or the
//!   network splits into two random groups and heals 0.5–3 s later;
//! - after the window every link heals and every crashed validator restarts; the run must then
//!   reach `heights` finalized blocks on every honest node within `10 s + 2 s × heights` of
//!   simulated time (a liveness failure otherwise), and the checker must find no violation.

use super::{Behavior, Mutation, SimConfig, Simulation};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

const SECOND: u64 = 1_000_000;
const FAULT_WINDOW_US: u64 = 8 * SECOND;

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CampaignConfig {
    /// Number of runs.
    pub seeds: u64,
    /// Seed of the first run; run `k` uses `first_seed + k`.
    pub first_seed: u64,
    /// Validators per run (equal stake).
    pub validators: usize,
    /// Byzantine validators per run (at most `(validators - 1) / 3`).
    pub byzantine: usize,
    /// Heights every honest node must finalize.
    pub heights: u64,
    /// A safety mechanism switched off in every run, for the checker's tests ([`Mutation`];
    /// `None` in a real campaign).
    pub mutation: Option<Mutation>,
}

/// The outcome of one run.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// Its seed.
    pub seed: u64,
    /// Crashes, partitions and fatal storage faults injected.
    pub faults_injected: u64,
    /// Messages the Byzantine validators sent that deviate from the protocol.
    pub byzantine_messages: u64,
    /// What the checker found (empty when safe).
    pub violations: Vec<super::checker::Violation>,
    /// Whether every honest node reached the target height in time.
    pub live: bool,
    /// The lowest finalized height among honest nodes at the end.
    pub heights_finalized: u64,
    /// The Byzantine validators and their behaviours.
    pub byzantine: Vec<(usize, Behavior)>,
}

/// The totals of a campaign, printed as one JSON line by `quasar-node simulate`.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct CampaignReport {
    /// Runs performed.
    pub runs: u64,
    /// Faults injected over all runs.
    pub faults_injected: u64,
    /// Deviating Byzantine messages over all runs.
    pub byzantine_messages: u64,
    /// Runs with at least one safety violation.
    pub safety_violations: u64,
    /// Runs that did not reach the target height in time.
    pub liveness_failures: u64,
    /// Sum over runs of the lowest honest finalized height.
    pub heights_finalized: u64,
    /// Seeds of the failed runs (replay one with `--first-seed S --seeds 1`).
    pub failing_seeds: Vec<u64>,
}

/// Checks a configuration. Errors name the bad field.
pub fn validate(cfg: &CampaignConfig) -> Result<(), String> {
    if cfg.seeds == 0 {
        return Err("seeds must be at least 1, got 0".into());
    }
    if !(4..=64).contains(&cfg.validators) {
        return Err(format!(
            "validators must be in 4..=64, got {}",
            cfg.validators
        ));
    }
    let f = (cfg.validators - 1) / 3;
    if cfg.byzantine > f {
        return Err(format!(
            "byzantine must be at most (validators - 1) / 3 = {f}, got {}",
            cfg.byzantine
        ));
    }
    if cfg.heights == 0 || cfg.heights > 10_000 {
        return Err(format!("heights must be in 1..=10000, got {}", cfg.heights));
    }
    Ok(())
}

enum Fault {
    Crash {
        at: u64,
        slot: usize,
        back: u64,
        torn: bool,
        lost: Loss,
    },
    Split {
        at: u64,
        groups: (Vec<usize>, Vec<usize>),
        heal: u64,
    },
}

/// What a crash takes with it besides the unflushed writes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Loss {
    Nothing,
    /// The block store; the signing guard (kept elsewhere) survives.
    Store,
    /// The whole data directory, signing guard included.
    Everything,
}

/// Brings a crashed slot back on what survived.
fn restart(sim: &mut Simulation, slot: usize, lost: Loss) {
    match lost {
        Loss::Nothing => sim.restart(slot),
        Loss::Store => sim.restart_with_empty_store(slot),
        Loss::Everything => sim.restart_with_new_guard(slot),
    }
}

/// Runs one seeded simulation and checks it.
pub fn run_one(cfg: &CampaignConfig, seed: u64) -> RunOutcome {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_cafe_f00d_d00d);
    let mut indices: Vec<usize> = (0..cfg.validators).collect();
    indices.shuffle(&mut rng);
    let byzantine: Vec<(usize, Behavior)> = indices[..cfg.byzantine]
        .iter()
        .map(|&v| {
            (
                v,
                *Behavior::BYZANTINE
                    .choose(&mut rng)
                    .unwrap_or(&Behavior::Withholder),
            )
        })
        .collect();
    // Half the runs cross epoch boundaries every few blocks.
    let epoch_length = if rng.gen_bool(0.5) {
        0
    } else {
        rng.gen_range(2..=6)
    };
    let (validators, sets) = if epoch_length > 0 && rng.gen_bool(0.5) {
        let universe = cfg.validators + 1;
        let honest: Vec<usize> = (0..universe)
            .filter(|v| byzantine.iter().all(|(b, _)| b != v))
            .collect();
        let without = |left_out: usize| (0..universe).filter(|&v| v != left_out).collect();
        let mut sets = vec![(0, without(cfg.validators))];
        for epoch in 1..=cfg.heights / epoch_length + 1 {
            if rng.gen_bool(0.5) {
                let left_out = honest[rng.gen_range(0..honest.len())];
                sets.push((epoch, without(left_out)));
            }
        }
        (universe, sets)
    } else {
        (cfg.validators, Vec::new())
    };
    let sim_cfg = SimConfig {
        validators,
        seed,
        min_latency_us: 1_000,
        max_latency_us: rng.gen_range(5_000..=60_000),
        loss: rng.gen_range(0.0..0.05),
        duplicate: rng.gen_range(0.0..0.02),
        guard_failures: rng.gen_range(0.0..0.01),
        store_write_failures: rng.gen_range(0.0..0.002),
        store_flush_failures: rng.gen_range(0.0..0.002),
        byzantine: byzantine.clone(),
        epoch_length,
        sets,
        mutation: cfg.mutation,
        ..SimConfig::default()
    };
    let mut sim = Simulation::new(sim_cfg);
    let honest: Vec<usize> = (0..sim.slots()).filter(|&s| sim.is_honest(s)).collect();
    // A validator restarted on an empty data directory sits out the view the network was in
    // (`Engine::listen_before_signing`): it counts against the fault budget, so a run loses a
    // whole data directory at most once, and only while fewer than f validators are Byzantine.
    let mut data_directory_loss_left = cfg.byzantine < (cfg.validators - 1) / 3;
    let mut faults: Vec<Fault> = (0..rng.gen_range(1..=4))
        .map(|_| {
            let at = rng.gen_range(0..FAULT_WINDOW_US);
            if rng.gen_bool(0.5) {
                let slot = honest[rng.gen_range(0..honest.len())];
                Fault::Crash {
                    at,
                    slot,
                    back: at + rng.gen_range(200_000..2 * SECOND),
                    torn: rng.gen_bool(0.5),
                    lost: match rng.gen_range(0..10) {
                        0 => Loss::Store,
                        1 if data_directory_loss_left => {
                            data_directory_loss_left = false;
                            Loss::Everything
                        }
                        1 => Loss::Store,
                        _ => Loss::Nothing,
                    },
                }
            } else {
                let (a, b): (Vec<usize>, Vec<usize>) =
                    (0..sim.slots()).partition(|_| rng.gen_bool(0.5));
                Fault::Split {
                    at,
                    groups: (a, b),
                    heal: at + rng.gen_range(SECOND / 2..3 * SECOND),
                }
            }
        })
        .collect();
    let injected = faults.len() as u64;
    // Apply the faults in time order; each has a start and an end event.
    let mut events: Vec<(u64, usize, bool)> = Vec::new();
    for (k, f) in faults.iter().enumerate() {
        let (start, end) = match f {
            Fault::Crash { at, back, .. } => (*at, *back),
            Fault::Split { at, heal, .. } => (*at, *heal),
        };
        events.push((start, k, true));
        events.push((end.min(FAULT_WINDOW_US), k, false));
    }
    events.sort();
    let mut crashed = vec![false; sim.slots()];
    let mut lost = vec![Loss::Nothing; sim.slots()];
    for (at, k, starts) in events {
        sim.run_until(at);
        match (&mut faults[k], starts) {
            (
                Fault::Crash {
                    slot,
                    torn,
                    lost: loss,
                    ..
                },
                true,
            ) if !crashed[*slot] => {
                if *torn {
                    sim.crash_losing_unflushed(*slot);
                } else {
                    sim.crash(*slot);
                }
                crashed[*slot] = true;
                lost[*slot] = *loss;
            }
            (Fault::Crash { slot, .. }, false) if crashed[*slot] => {
                restart(&mut sim, *slot, lost[*slot]);
                crashed[*slot] = false;
            }
            (Fault::Split { groups, .. }, true) => {
                let (a, b) = groups.clone();
                sim.partition(&[&a, &b]);
            }
            (Fault::Split { .. }, false) => sim.heal(),
            _ => {}
        }
    }
    sim.run_until(FAULT_WINDOW_US);
    sim.stop_storage_faults();
    sim.heal();
    for (slot, down) in crashed.iter().enumerate() {
        if *down {
            restart(&mut sim, slot, lost[slot]);
        }
    }
    let deadline = FAULT_WINDOW_US + 10 * SECOND + 2 * SECOND * cfg.heights;
    let live = sim.run_until_height(cfg.heights, deadline);
    if !live {
        eprintln!("seed {seed}: {}", sim.describe());
    }
    let heights_finalized = honest
        .iter()
        .map(|&s| sim.finalized_height(s))
        .min()
        .unwrap_or(0);
    RunOutcome {
        seed,
        faults_injected: injected + sim.storage_failures(),
        byzantine_messages: sim.byzantine_messages(),
        violations: sim.check_safety().err().unwrap_or_default(),
        live,
        heights_finalized,
        byzantine,
    }
}

/// Runs the campaign on `threads` worker threads (seeds are independent and deterministic, so
/// the totals do not depend on the thread count). `seed_done` is called once per finished run,
/// from the worker that ran it, with whether the run passed (for a progress display).
pub fn run(
    cfg: &CampaignConfig,
    threads: usize,
    seed_done: &(dyn Fn(bool) + Sync),
) -> CampaignReport {
    let next = AtomicU64::new(0);
    let outcomes = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if k >= cfg.seeds {
                    return;
                }
                let outcome = run_one(cfg, cfg.first_seed + k);
                seed_done(outcome.violations.is_empty() && outcome.live);
                if let Ok(mut all) = outcomes.lock() {
                    all.push(outcome);
                }
            });
        }
    });
    let mut outcomes = outcomes.into_inner().unwrap_or_default();
    outcomes.sort_by_key(|o| o.seed);
    let mut report = CampaignReport::default();
    for o in &outcomes {
        report.runs += 1;
        report.faults_injected += o.faults_injected;
        report.byzantine_messages += o.byzantine_messages;
        report.heights_finalized += o.heights_finalized;
        if !o.violations.is_empty() {
            report.safety_violations += 1;
        }
        if !o.live {
            report.liveness_failures += 1;
        }
        if !o.violations.is_empty() || !o.live {
            report.failing_seeds.push(o.seed);
            eprintln!(
                "seed {} failed: live={} byzantine={:?} violations={:?}",
                o.seed, o.live, o.byzantine, o.violations
            );
        }
    }
    report
}
