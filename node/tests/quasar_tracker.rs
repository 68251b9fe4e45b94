//! The Quasar finality tracker: bundles close at multiples of the bundle size, the BLS leg comes
//! from the closing block's own finalization, other legs are verified alone on arrival, a
//! complete bundle yields a verified QuasarCert, hybrid bundles expire, and a profile without its
//! keys refuses every leg.

use std::sync::Arc;

use quasar_consensus::EpochSchedule;
use quasar_crypto::hash::Hash;
use quasar_lanes::cert::{bundle_digest, CertVerifier, Profile, BLS_SIGNATURE_LEN};
use quasar_lanes::cert_fixture::{Fixture, FixtureConfig};
use quasar_node::quasar::{
    BundleStatus, FinalizedInfo, LegRefused, QuasarEvent, QuasarTracker, MAX_PENDING_BUNDLES,
};
use quasar_wire::{decode, Certificate, CertificateKind, LegKind, MessageRef};

fn fixture(profile: Profile, bundle_size: usize) -> Fixture {
    // Epoch 0: the genesis epoch, the one a chain without epochs runs for ever.
    Fixture::new(FixtureConfig {
        bundle_size,
        epoch: 0,
        ..FixtureConfig::new(4, profile)
    })
    .unwrap()
}

fn tracker(f: &Fixture) -> QuasarTracker {
    tracker_with(f, EpochSchedule::SINGLE)
}

fn tracker_with(f: &Fixture, schedule: EpochSchedule) -> QuasarTracker {
    let t = QuasarTracker::new(
        Ok(Arc::new(f.policy().clone())),
        schedule,
        f.policy().profile(),
        f.policy().bundle_size() as u64,
        Arc::new(CertVerifier::new(2).unwrap()),
    );
    assert!(t.tracking_at(1));
    t
}

fn block_hash(height: u64) -> Hash {
    [height as u8; 32]
}

/// The finalization certificate of `height` (view = height + 1) signed by the fixture's quorum.
fn own_finalization(f: &mut Fixture, height: u64) -> Certificate {
    own_finalization_in(f, height, f.policy().epoch())
}

/// [`own_finalization`] in `epoch`.
fn own_finalization_in(f: &mut Fixture, height: u64, epoch: u64) -> Certificate {
    let mu = f
        .policy()
        .with_epoch(epoch)
        .round_digest(height, height + 1, &block_hash(height));
    let body = f.leg(LegKind::Bls, &mu, &[0; 32]).unwrap();
    let (signature, bitmap) = body.split_at(BLS_SIGNATURE_LEN);
    Certificate {
        kind: CertificateKind::Finalization,
        chain_id: f.policy().chain_id(),
        epoch,
        view: height + 1,
        height,
        block: block_hash(height),
        signers: bitmap.to_vec(),
        signature: signature.try_into().unwrap(),
    }
}

fn finalize(
    t: &mut QuasarTracker,
    height: u64,
    cert: &Certificate,
    seen_us: u64,
) -> Vec<QuasarEvent> {
    t.on_finalized(&FinalizedInfo {
        height,
        view: height + 1,
        hash: block_hash(height),
        certificate: cert,
        seen_us,
    })
}

fn digest_of(f: &Fixture, heights: std::ops::RangeInclusive<u64>) -> (Hash, Hash) {
    let mus: Vec<Hash> = heights
        .map(|h| f.policy().round_digest(h, h + 1, &block_hash(h)))
        .collect();
    (*mus.last().unwrap(), bundle_digest(&mus))
}

#[test]
fn under_fast_every_block_with_its_own_finalization_is_certified_at_once() {
    let mut f = fixture(Profile::Fast, 1);
    let mut t = tracker(&f);
    for height in 1..=3 {
        let cert = own_finalization(&mut f, height);
        let events = finalize(&mut t, height, &cert, 0);
        let [QuasarEvent::Closed {
            bls_leg: Some(_), ..
        }, QuasarEvent::Certified {
            height: h, report, ..
        }] = events.as_slice()
        else {
            panic!("height {height}: {events:?}");
        };
        assert_eq!(*h, height);
        assert_eq!(report.block, block_hash(height));
        assert_eq!(t.status(height), BundleStatus::Unknown);
    }
}

#[test]
fn each_bundle_is_certified_under_the_epoch_that_decides_it() {
    let mut f = fixture(Profile::Fast, 1);
    let schedule = EpochSchedule::new(2);
    let mut t = tracker_with(&f, schedule);
    for height in 1..=5 {
        let epoch = schedule.epoch_of(height);
        if epoch > 0 {
            // A finalization signed over another epoch's μ gives no BLS leg.
            let stale = own_finalization_in(&mut f, height, epoch - 1);
            let mut other = tracker_with(&f, schedule);
            let events = finalize(&mut other, height, &stale, 0);
            assert!(
                !events
                    .iter()
                    .any(|e| matches!(e, QuasarEvent::Certified { .. })),
                "height {height}: {events:?}"
            );
        }
        let cert = own_finalization_in(&mut f, height, epoch);
        let events = finalize(&mut t, height, &cert, 0);
        let Some(QuasarEvent::Certified { certificate, .. }) = events.last() else {
            panic!("height {height}: {events:?}");
        };
        let Ok(MessageRef::QuasarCert(c)) = decode(certificate) else {
            panic!("a QuasarCert");
        };
        assert_eq!((c.height(), c.epoch()), (height, epoch));
    }
}

#[test]
fn a_block_final_through_a_descendant_waits_for_its_bls_leg() {
    let mut f = fixture(Profile::Fast, 1);
    let mut t = tracker(&f);
    let descendant = own_finalization(&mut f, 2);
    assert!(matches!(
        finalize(&mut t, 1, &descendant, 0).as_slice(),
        [QuasarEvent::Closed {
            height: 1,
            bls_leg: None,
            ..
        }]
    ));
    assert_eq!(
        t.status(1),
        BundleStatus::Waiting {
            held: vec![],
            missing: vec![LegKind::Bls]
        }
    );
    // A BLS leg over another block's μ is refused; the right one completes the bundle.
    let wrong = f.leg(LegKind::Bls, &[9; 32], &[0; 32]).unwrap();
    assert!(matches!(
        t.on_leg(1, LegKind::Bls, wrong),
        Err(LegRefused::Invalid(_))
    ));
    let (mu, _) = digest_of(&f, 1..=1);
    let leg = f.leg(LegKind::Bls, &mu, &[0; 32]).unwrap();
    assert!(matches!(
        t.on_leg(1, LegKind::Bls, leg),
        Ok(Some(QuasarEvent::Certified { height: 1, .. }))
    ));
}

#[test]
fn aurora_bundles_wait_for_their_post_quantum_legs() {
    let mut f = fixture(Profile::Aurora, 2);
    let mut t = tracker(&f);
    let cert = own_finalization(&mut f, 1);
    assert!(finalize(&mut t, 1, &cert, 0).is_empty());
    let cert = own_finalization(&mut f, 2);
    let (mu, digest) = digest_of(&f, 1..=2);
    let events = finalize(&mut t, 2, &cert, 0);
    let [QuasarEvent::Closed {
        height: 2,
        round_digest,
        bundle_digest,
        bls_leg: Some(_),
    }] = events.as_slice()
    else {
        panic!("{events:?}");
    };
    assert_eq!((*round_digest, *bundle_digest), (mu, digest));
    assert_eq!(t.awaiting(2, LegKind::Corona), Some((mu, digest)));
    assert_eq!(t.awaiting(2, LegKind::Bls), None);
    assert_eq!(t.awaiting(2, LegKind::Magnetar), None);
    assert_eq!(
        t.status(2),
        BundleStatus::Waiting {
            held: vec![LegKind::Bls],
            missing: vec![LegKind::Pulsar, LegKind::Corona]
        }
    );
    assert_eq!(t.closing_height(1), 2);
    assert_eq!(t.closing_height(3), 4);
    // Legs for a bundle that is not waiting, or that the profile lacks, are refused.
    assert!(matches!(
        t.on_leg(4, LegKind::Corona, vec![]),
        Err(LegRefused::NoBundle(4))
    ));
    assert!(matches!(
        t.on_leg(2, LegKind::Magnetar, vec![]),
        Err(LegRefused::NotInProfile(LegKind::Magnetar))
    ));
    // A leg over the wrong digest is refused and changes nothing.
    let wrong = f.leg(LegKind::Corona, &mu, &mu).unwrap();
    assert!(matches!(
        t.on_leg(2, LegKind::Corona, wrong),
        Err(LegRefused::Invalid(_))
    ));
    let corona = f.leg(LegKind::Corona, &mu, &digest).unwrap();
    assert!(t.on_leg(2, LegKind::Corona, corona).unwrap().is_none());
    let pulsar = f.leg(LegKind::Pulsar, &mu, &digest).unwrap();
    let Some(QuasarEvent::Certified { report, .. }) = t.on_leg(2, LegKind::Pulsar, pulsar).unwrap()
    else {
        panic!("the last leg completes the certificate");
    };
    assert_eq!(report.bundle.len(), 2);
    assert_eq!(report.bundle_digest, digest);
    assert_eq!(t.status(2), BundleStatus::Unknown);
}

#[test]
fn hybrid_bundles_expire_after_their_deadline() {
    let mut f = fixture(Profile::Hybrid { deadline_ms: 1000 }, 1);
    let mut t = tracker(&f);
    let cert = own_finalization(&mut f, 1);
    assert!(matches!(
        finalize(&mut t, 1, &cert, 5_000_000).as_slice(),
        [QuasarEvent::Closed { height: 1, .. }]
    ));
    assert!(t.on_tick(5_900_000).is_empty());
    let events = t.on_tick(6_000_001);
    assert!(matches!(
        events.as_slice(),
        [QuasarEvent::Expired { height: 1, missing }] if missing == &[LegKind::Corona, LegKind::Groth16]
    ));
    assert_eq!(t.status(1), BundleStatus::Abandoned { reason: "expired" });
    // The policy has every key: Quasar finality is available, the bundle only came too late.
    assert_eq!(t.unavailable_at(1), None);
}

#[test]
fn waiting_bundles_are_bounded() {
    let mut f = fixture(Profile::Aurora, 1);
    let mut t = tracker(&f);
    let cert = own_finalization(&mut f, 1);
    let mut dropped = Vec::new();
    for height in 1..=(MAX_PENDING_BUNDLES as u64 + 3) {
        // The same certificate: only height 1 gets its own BLS leg, which is all this needs.
        for e in finalize(&mut t, height, &cert, 0) {
            if let QuasarEvent::Dropped { height } = e {
                dropped.push(height);
            }
        }
    }
    assert_eq!(dropped, vec![1, 2, 3]);
    assert_eq!(t.status(2), BundleStatus::Abandoned { reason: "dropped" });
}

#[test]
fn without_the_profile_keys_every_leg_is_refused() {
    let f = fixture(Profile::Fast, 1);
    let mut t = QuasarTracker::new(
        Err("no Corona group key in genesis".into()),
        EpochSchedule::SINGLE,
        Profile::Quasar,
        16,
        Arc::new(CertVerifier::new(1).unwrap()),
    );
    assert_eq!(
        t.unavailable_at(1).as_deref(),
        Some("no Corona group key in genesis")
    );
    assert!(!t.tracking_at(1));
    // Bundles keep the genesis size even without a policy.
    assert_eq!((t.closing_height(1), t.closing_height(17)), (16, 32));
    let cert = Certificate {
        kind: CertificateKind::Finalization,
        chain_id: f.policy().chain_id(),
        epoch: 0,
        view: 2,
        height: 1,
        block: block_hash(1),
        signers: vec![],
        signature: [0; 96],
    };
    assert!(finalize(&mut t, 1, &cert, 0).is_empty());
    assert!(matches!(
        t.on_leg(1, LegKind::Bls, vec![]),
        Err(LegRefused::Unavailable(_))
    ));
}

/// A validator-set change at epoch 2 brings its own policy: bundles of epochs 0 and 1 are
/// certified under the genesis set's, those of epoch 2 under the new set's, and a certificate of
/// the old set for an epoch-2 block certifies nothing.
#[test]
fn a_set_change_certifies_later_bundles_under_the_new_sets_policy() {
    let schedule = EpochSchedule::new(2);
    let mut old = fixture(Profile::Fast, 1);
    let mut new = Fixture::new(FixtureConfig {
        bundle_size: 1,
        epoch: 2,
        ..FixtureConfig::new(5, Profile::Fast)
    })
    .unwrap();
    let tracker_for = |old: &Fixture, new: &Fixture| {
        let mut t = tracker_with(old, schedule);
        t.change_policy_at(2, Ok(Arc::new(new.policy().clone())))
            .unwrap();
        t
    };
    let certified = |events: &[QuasarEvent]| {
        events
            .iter()
            .any(|e| matches!(e, QuasarEvent::Certified { .. }))
    };
    let mut t = tracker_for(&old, &new);
    for height in 1..=4 {
        let cert = own_finalization_in(&mut old, height, schedule.epoch_of(height));
        assert!(
            certified(&finalize(&mut t, height, &cert, 0)),
            "height {height}"
        );
    }
    let cert = own_finalization_in(&mut new, 5, 2);
    assert!(certified(&finalize(&mut t, 5, &cert, 0)));

    let mut stale = tracker_for(&old, &new);
    for height in 1..=4 {
        let cert = own_finalization_in(&mut old, height, schedule.epoch_of(height));
        finalize(&mut stale, height, &cert, 0);
    }
    let cert = own_finalization_in(&mut old, 5, 2);
    assert!(!certified(&finalize(&mut stale, 5, &cert, 0)));
    stale
        .change_policy_at(4, Err("no keys for the set of epoch 4".into()))
        .unwrap();
    assert!(stale.tracking_at(5) && !stale.tracking_at(9));
    assert_eq!(
        stale.unavailable_at(9).as_deref(),
        Some("no keys for the set of epoch 4")
    );
}
