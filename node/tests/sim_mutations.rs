//! Mutation tests of the independent safety checker (`node/src/sim/checker.rs`): each switches
//! off one of the validator's safety mechanisms in seeded simulation campaigns
//! ([`Mutation`]) and expects the checker to report what the mechanism prevents within a few
//! seeds. A checker that cannot see a violation would pass every campaign; these tests show
//! that each property the checker guards can fail.
//!
//! The campaigns here have no Byzantine validator, so every conflicting message and every piece
//! of evidence is an honest validator's, and the crashes may hit any validator.

use quasar_node::sim::campaign::{run_one, CampaignConfig};
use quasar_node::sim::checker::Violation;
use quasar_node::sim::{Mutation, SimConfig, Simulation};

const SECOND: u64 = 1_000_000;

/// A campaign of 4 honest validators and 10 heights with `mutation`.
fn campaign(mutation: Option<Mutation>, first_seed: u64, seeds: u64) -> CampaignConfig {
    CampaignConfig {
        seeds,
        first_seed,
        validators: 4,
        byzantine: 0,
        heights: 10,
        mutation,
    }
}

/// The first seed from 1, of at most `seeds`, whose campaign run with `mutation` reports a
/// violation that `wanted` accepts; `None` if none does.
fn first_caught(
    mutation: Mutation,
    seeds: u64,
    wanted: impl Fn(&Violation) -> bool,
) -> Option<u64> {
    first_caught_in(mutation, 1..=seeds, wanted)
}

/// [`first_caught`] over the seeds `seeds`.
fn first_caught_in(
    mutation: Mutation,
    seeds: std::ops::RangeInclusive<u64>,
    wanted: impl Fn(&Violation) -> bool,
) -> Option<u64> {
    let cfg = campaign(Some(mutation), *seeds.start(), seeds.clone().count() as u64);
    seeds.into_iter().find(|&seed| {
        let outcome = run_one(&cfg, seed);
        eprintln!("seed {seed}: {:?}", outcome.violations);
        outcome.violations.iter().any(&wanted)
    })
}

/// Validator 1 of 4 loses its block store at height 5 while cut off from the others, and
/// restarts on an empty one; what the checker reports 3 s later.
fn restart_cut_off_on_an_empty_store(mutation: Option<Mutation>) -> Vec<Violation> {
    let mut s = Simulation::new(SimConfig {
        seed: 3,
        mutation,
        ..SimConfig::default()
    });
    assert!(s.run_until_height(5, 30 * SECOND), "{}", s.describe());
    s.partition(&[&[0, 2, 3]]);
    s.restart_with_empty_store(1);
    let cut = s.now();
    s.run_until(cut + 3 * SECOND);
    s.check_safety().err().unwrap_or_default()
}

/// A validator that lost its block store restarts at view 1. Its signing guard makes it start
/// above every view it signed in; without it ([`Mutation::NoGuard`]) it enters view 1 again,
/// hears nothing, times out and nullifies the view it finalized long ago: conflicting votes of
/// an honest validator.
#[test]
fn a_validator_restarted_without_its_guard_equivocates_and_is_caught() {
    assert_eq!(restart_cut_off_on_an_empty_store(None), vec![]);
    let violations = restart_cut_off_on_an_empty_store(Some(Mutation::NoGuard));
    assert!(
        violations.contains(&Violation::HonestEquivocation {
            validator: 1,
            view: 1
        }),
        "{violations:?}"
    );
}

/// Without its signing guard, a leader restarted in the view it proposed in proposes again, a
/// different block (a new timestamp): what a validator restarted on an empty data directory
/// did in a real network.
#[test]
fn a_leader_restarted_without_its_guard_proposes_twice_and_is_caught() {
    let seed = first_caught(Mutation::NoGuard, 8, |v| {
        matches!(v, Violation::HonestConflictingProposals { .. })
    });
    assert!(seed.is_some(), "no conflicting proposals reported");
}

/// The honest nodes collect evidence of those equivocations: evidence against an honest
/// validator.
#[test]
fn evidence_against_a_validator_restarted_without_its_guard_is_caught() {
    let seed = first_caught(Mutation::NoGuard, 8, |v| {
        matches!(v, Violation::EvidenceAgainstHonest { .. })
    });
    assert!(
        seed.is_some(),
        "no evidence against an honest validator reported"
    );
}

/// A validator restarted on an empty data directory that signs at once, without listening and
/// fencing first (the campaign's one crash in ten that loses everything): within 8 seeds a run
/// reports a violation, and the same seed with the fence in place does not. Such a validator
/// can sign again only once it has executed the chain up to the view it signed in (it
/// notarizes only blocks it executed, and proposes only on a parent it executed), so few runs
/// give it the chance: seeds 33 to 40 hold one (38).
#[test]
fn a_validator_restarted_on_an_empty_data_directory_without_a_fence_is_caught() {
    let seed = first_caught_in(Mutation::NoFence, 33..=40, |_| true);
    let seed = seed.expect("no violation reported");
    let outcome = run_one(&campaign(None, seed, 1), seed);
    assert!(outcome.violations.is_empty(), "{:?}", outcome.violations);
}

/// Every guard file on a disk that acknowledges each fsync before it is done
/// ([`Mutation::LaggingGuardDisk`]): a crash loses the guard's last record, and the restarted
/// validator signs again in the view it last signed in. Within 8 seeds a run reports an honest
/// validator's conflicting messages (or the evidence of them), and the same seed on an honest
/// disk does not: the guard's fsyncs, run against the simulated disk, are what keep it safe.
#[test]
fn a_guard_on_a_disk_that_loses_acknowledged_writes_is_caught() {
    let seed = first_caught(Mutation::LaggingGuardDisk, 8, |v| {
        matches!(
            v,
            Violation::HonestConflictingProposals { .. }
                | Violation::HonestEquivocation { .. }
                | Violation::EvidenceAgainstHonest { .. }
        )
    });
    let seed = seed.expect("no violation reported");
    let outcome = run_one(&campaign(None, seed, 1), seed);
    assert!(outcome.violations.is_empty(), "{:?}", outcome.violations);
}
