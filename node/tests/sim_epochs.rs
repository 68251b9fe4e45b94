//! Epoch boundaries in the seeded simulation (the production engine, core, verifier, signer
//! and sync): every validator moves from epoch to epoch at the boundary blocks, each block is
//! decided in its own epoch's views, seals never enter the chain, and a validator that was
//! down across boundaries catches up through sync, seals included.

use quasar_consensus::EpochSchedule;
use quasar_node::engine::Published;
use quasar_node::sim::checker::{check, Violation};
use quasar_node::sim::{SimConfig, Simulation};
use quasar_storage::Store;
use quasar_wire::{decode, MessageRef, VoteKind};

const SECOND: u64 = 1_000_000;

/// Checks node `i`'s committed chain against `schedule`: each block carries the epoch that
/// decides its height and a view of that epoch, and a boundary block finalized through seals
/// has them in the store, linked to it.
fn check_epochs(s: &Simulation, i: usize, schedule: EpochSchedule) -> usize {
    let mut through_seals = 0;
    for block in s.committed(i) {
        let h = &block.proposal.header;
        let epoch = schedule.epoch_of(h.height);
        assert_eq!(
            h.epoch, epoch,
            "height {} is decided by epoch {epoch}",
            h.height
        );
        assert!(
            schedule.holds_view(epoch, h.view),
            "height {}: view {}",
            h.height,
            h.view
        );
        assert_eq!(block.certificate.epoch, epoch);
        // A finalization covers its own block or a descendant: a chain block, or a seal above
        // the epoch's boundary.
        assert!(block.certificate.height >= h.height);
        if block.certificate.height > schedule.last_height(epoch) {
            assert_eq!(
                h.height,
                schedule.last_height(epoch),
                "only boundaries close by seal"
            );
            assert_seals_link(s, i, block);
            through_seals += 1;
        }
    }
    through_seals
}

fn assert_seals_link(s: &Simulation, i: usize, boundary: &Published) {
    let mut cursor = boundary.certificate.block;
    while cursor != boundary.hash {
        let bytes = s
            .store(i)
            .block_by_hash(&cursor)
            .unwrap()
            .expect("seal kept");
        let Ok(MessageRef::Proposal(seal)) = decode(&bytes) else {
            panic!("a kept seal decodes");
        };
        assert_eq!(seal.txs().count(), 0, "seals carry no transactions");
        assert!(seal.header().height > boundary.proposal.header.height);
        cursor = seal.header().parent;
    }
}

#[test]
fn validators_cross_epoch_boundaries_together() {
    let schedule = EpochSchedule::new(5);
    let mut s = Simulation::new(SimConfig {
        seed: 11,
        epoch_length: 5,
        ..SimConfig::default()
    });
    assert!(s.run_until_height(23, 120 * SECOND), "{}", s.describe());
    s.check_safety().unwrap();
    for i in 0..4 {
        check_epochs(&s, i, schedule);
        // Blocks below the boundary carry transactions as usual.
        assert!(s.committed(i).iter().all(|b| b.proposal.txs.len() == 2));
    }
    assert!(s.view(0) > schedule.first_view(4), "epoch 4 is running");
}

#[test]
fn short_epochs_on_lossy_links_close_some_boundaries_through_seals() {
    // Views that time out while votes are in flight leave boundary blocks notarized but not
    // finalized in their own view; a seal above them finalizes them.
    let schedule = EpochSchedule::new(2);
    let mut sealed = 0;
    for seed in 20..24 {
        let mut s = Simulation::new(SimConfig {
            seed,
            epoch_length: 2,
            loss: 0.05,
            max_latency_us: 60_000,
            view_timeout_us: 120_000,
            retry_us: 50_000,
            ..SimConfig::default()
        });
        assert!(s.run_until_height(16, 600 * SECOND), "{}", s.describe());
        s.check_safety().unwrap();
        for i in 0..4 {
            sealed += check_epochs(&s, i, schedule);
        }
    }
    assert!(sealed > 0, "at least one boundary closed through a seal");
}

#[test]
fn a_validator_down_across_boundaries_catches_up_through_sync() {
    let schedule = EpochSchedule::new(4);
    let mut s = Simulation::new(SimConfig {
        seed: 31,
        epoch_length: 4,
        ..SimConfig::default()
    });
    assert!(s.run_until_height(2, 30 * SECOND));
    s.crash(3);
    let others = s.finalized_height(0) + 10;
    assert!(s.run_until_height(others, s.now() + 120 * SECOND));
    assert!(
        s.finalized_height(3) < 4,
        "it missed at least two boundaries"
    );
    s.restart(3);
    let target = s.finalized_height(0) + 4;
    assert!(
        s.run_until_height(target, s.now() + 120 * SECOND),
        "{}",
        s.describe()
    );
    assert!(s.finalized_height(3) >= target);
    s.check_safety().unwrap();
    check_epochs(&s, 3, schedule);
}

/// Validators keep six epochs of blocks and the boundary blocks of older ones; a validator that
/// was down longer than that, and one that lost its disk, walk the epoch transitions
/// (checkpoints) up to the blocks their peers kept, and agree with them from there.
#[test]
fn late_joiners_walk_the_checkpoints_of_pruned_epochs() {
    let schedule = EpochSchedule::new(4);
    // Seven validators: the two late joiners follow the chain without executing it (restoring
    // application state from peers is not built), so they notarize nothing, and the other
    // five are a quorum.
    let mut s = Simulation::new(SimConfig {
        validators: 7,
        seed: 37,
        epoch_length: 4,
        ..SimConfig::default()
    });
    assert!(s.run_until_height(2, 30 * SECOND));
    s.crash(3);
    assert!(
        s.run_until_height(48, s.now() + 600 * SECOND),
        "{}",
        s.describe()
    );
    // Epoch 11 or later runs: epochs 0 to 4 at least are past retention.
    let store = s.store(0);
    let floor = store.history_floor().unwrap();
    assert!(floor >= schedule.first_height(5), "floor {floor}");
    for height in 1..floor {
        assert_eq!(
            store.block_by_height(height).unwrap().is_some(),
            height % 4 == 0,
            "only the boundary blocks stay below the floor (height {height})"
        );
    }
    assert!(store
        .quasar_cert_from(1)
        .unwrap()
        .is_none_or(|(h, _)| h >= floor));

    s.restart(3);
    s.restart_with_empty_store(2);
    let target = s.finalized_height(0) + 4;
    assert!(
        s.run_until_height(target, s.now() + 300 * SECOND),
        "{}",
        s.describe()
    );
    s.check_safety().unwrap();
    for late in [2, 3] {
        assert!(s.finalized_height(late) >= target);
        let checkpoints: Vec<u64> = s
            .committed(late)
            .iter()
            .filter(|b| b.checkpoint)
            .map(|b| b.proposal.header.height)
            .collect();
        assert!(!checkpoints.is_empty(), "node {late} skipped pruned epochs");
        assert!(
            checkpoints.iter().all(|h| h % 4 == 0),
            "checkpoints are boundary blocks: {checkpoints:?}"
        );
        let store = s.store(late);
        assert!(store.history_floor().unwrap() > 1);
        // Each boundary it walked is kept, so it can serve the transitions in turn.
        for height in checkpoints {
            assert!(store.block_by_height(height).unwrap().is_some());
        }
    }
    // The node that lost its disk reached every boundary through the chain of transitions.
    let walked: Vec<u64> = s
        .committed(2)
        .iter()
        .map(|b| b.proposal.header.height)
        .filter(|h| h % 4 == 0)
        .collect();
    let boundaries: Vec<u64> = (1..=walked.len() as u64).map(|e| 4 * e).collect();
    assert_eq!(walked, boundaries);
}

/// Validator-set changes at epoch boundaries: validator 4 joins at epoch 2 while validator 0
/// leaves, and epoch 4 runs all five (a quorum is then 4 of 5). Every node runs throughout; a
/// node outside its epoch's set follows the chain without signing. Each vote carries its
/// signer's index in its own epoch's set, and the independent checker verifies every
/// certificate against its epoch's set and stakes.
#[test]
fn validator_sets_change_at_epoch_boundaries() {
    let schedule = EpochSchedule::new(4);
    let sets = vec![
        (0, vec![0, 1, 2, 3]),
        (2, vec![1, 2, 3, 4]),
        (4, vec![0, 1, 2, 3, 4]),
    ];
    let mut s = Simulation::new(SimConfig {
        seed: 31,
        validators: 5,
        epoch_length: 4,
        sets: sets.clone(),
        ..SimConfig::default()
    });
    assert!(s.run_until_height(26, 180 * SECOND), "{}", s.describe());
    s.check_safety().unwrap();
    for i in 0..5 {
        check_epochs(&s, i, schedule);
    }
    let members = |epoch: u64| {
        &sets
            .iter()
            .rev()
            .find(|(first, _)| *first <= epoch)
            .unwrap()
            .1
    };
    let observation = s.observation();
    for (validator, vote) in &observation.votes {
        let index = members(vote.epoch)
            .iter()
            .position(|m| *m == *validator as usize);
        assert_eq!(
            index,
            Some(vote.signer as usize),
            "validator {validator} signed in epoch {} as {}",
            vote.epoch,
            vote.signer
        );
    }
    let voted = |validator: u32, epoch: u64| {
        observation
            .votes
            .iter()
            .any(|(v, vote)| *v == validator && vote.epoch == epoch)
    };
    assert!(!voted(4, 0) && !voted(4, 1) && voted(4, 2) && voted(4, 3));
    assert!(voted(0, 1) && !voted(0, 2) && !voted(0, 3) && voted(0, 4));
    let bitmaps = |epoch: u64| {
        observation
            .certificates
            .iter()
            .filter(|c| c.epoch == epoch)
            .map(|c| c.signers.iter().map(|b| b.count_ones()).sum::<u32>())
            .min()
            .expect("the epoch has certificates")
    };
    assert!(
        bitmaps(2) >= 3 && bitmaps(5) >= 4,
        "quorums of 3 of 4, then 4 of 5"
    );
    // The checker judges these votes by identity: validator 1 signs as index 0 in epochs 2
    // and 3, so a conflicting notarize planted for it there is its equivocation (a checker
    // that matched indices to validator numbers skipped it).
    let mut planted = observation.clone();
    let (_, mut second) = observation
        .votes
        .iter()
        .find(|(v, vote)| *v == 1 && vote.epoch == 2 && vote.kind == VoteKind::Notarize)
        .cloned()
        .expect("validator 1 notarizes in epoch 2");
    assert_eq!(second.signer, 0);
    second.block[0] ^= 1;
    planted.votes.push((1, second.clone()));
    assert_eq!(
        check(&planted),
        vec![Violation::HonestEquivocation {
            validator: 1,
            view: second.view
        }]
    );
}
