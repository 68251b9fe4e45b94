//! Epoch boundaries in the seeded simulation (the production engine, core, verifier, signer
//! and sync): every validator moves from epoch to epoch at the boundary blocks, each block is
//! decided in its own epoch's views, seals never enter the chain, and a validator that was
//! down across boundaries catches up through sync, seals included.

use quasar_node::consensus::EpochSchedule;
use quasar_node::engine::Published;
use quasar_node::sim::{SimConfig, Simulation};
use quasar_storage::Store;
use quasar_wire::{decode, MessageRef};

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
