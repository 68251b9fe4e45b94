//! `SigningGuard` rules (one notarize, one finalize, never finalize+nullify per view), durability
//! across restarts, corruption handling, the age window and pruning.

use std::fs;
use std::path::Path;

use proptest::prelude::*;
use quasar_storage::{
    GuardDecision, GuardError, SigningGuard, ViewVotes, VoteIntent, VoteKind, GUARD_FILE,
    GUARD_WINDOW,
};

/// The owner every guard in these tests belongs to.
const OWNER: [u8; 32] = [0x0e; 32];

fn notarize(view: u64, b: u8) -> VoteIntent {
    VoteIntent {
        view,
        kind: VoteKind::Notarize,
        block: [b; 32],
    }
}

fn finalize(view: u64, b: u8) -> VoteIntent {
    VoteIntent {
        view,
        kind: VoteKind::Finalize,
        block: [b; 32],
    }
}

fn nullify(view: u64) -> VoteIntent {
    VoteIntent {
        view,
        kind: VoteKind::Nullify,
        block: [0; 32],
    }
}

fn is_conflict(r: Result<GuardDecision, GuardError>) -> bool {
    matches!(r, Err(GuardError::Conflict { .. }))
}

/// Runs a rule check against both the in-memory and the file-backed guard.
fn both(check: impl Fn(&mut SigningGuard)) {
    check(&mut SigningGuard::in_memory());
    let dir = tempfile::tempdir().unwrap();
    check(&mut SigningGuard::open(dir.path(), &OWNER).unwrap());
}

#[test]
fn equivocating_notarize_is_refused() {
    both(|g| {
        assert_eq!(
            g.check_and_record(&notarize(5, 1)).unwrap(),
            GuardDecision::Fresh
        );
        assert!(is_conflict(g.check_and_record(&notarize(5, 2))));
        // Another view is independent.
        assert_eq!(
            g.check_and_record(&notarize(6, 2)).unwrap(),
            GuardDecision::Fresh
        );
    });
}

#[test]
fn equivocating_finalize_is_refused() {
    both(|g| {
        assert_eq!(
            g.check_and_record(&finalize(5, 1)).unwrap(),
            GuardDecision::Fresh
        );
        assert!(is_conflict(g.check_and_record(&finalize(5, 2))));
    });
}

#[test]
fn finalize_then_nullify_is_refused() {
    both(|g| {
        g.check_and_record(&finalize(5, 1)).unwrap();
        assert!(is_conflict(g.check_and_record(&nullify(5))));
    });
}

#[test]
fn nullify_then_finalize_is_refused() {
    both(|g| {
        g.check_and_record(&nullify(5)).unwrap();
        let err = g.check_and_record(&finalize(5, 1)).unwrap_err();
        match err {
            GuardError::Conflict {
                view,
                existing,
                requested,
                before_restart,
            } => {
                assert!(!before_restart, "the record was made by this guard");
                assert_eq!(view, 5);
                assert_eq!(existing, "nullify");
                assert!(requested.starts_with("finalize("), "{requested}");
            }
            other => panic!("expected Conflict, got {other:?}"),
        }
    });
}

/// An honest node notarizes, then times out and nullifies the same view: both are allowed, and
/// notarize may also follow nullify.
#[test]
fn notarize_and_nullify_coexist() {
    both(|g| {
        assert_eq!(
            g.check_and_record(&notarize(5, 1)).unwrap(),
            GuardDecision::Fresh
        );
        assert_eq!(
            g.check_and_record(&nullify(5)).unwrap(),
            GuardDecision::Fresh
        );
        assert_eq!(
            g.check_and_record(&nullify(6)).unwrap(),
            GuardDecision::Fresh
        );
        assert_eq!(
            g.check_and_record(&notarize(6, 1)).unwrap(),
            GuardDecision::Fresh
        );
    });
}

#[test]
fn notarize_and_finalize_same_block_coexist() {
    both(|g| {
        assert_eq!(
            g.check_and_record(&notarize(5, 1)).unwrap(),
            GuardDecision::Fresh
        );
        assert_eq!(
            g.check_and_record(&finalize(5, 1)).unwrap(),
            GuardDecision::Fresh
        );
    });
}

#[test]
fn repeat_is_idempotent() {
    both(|g| {
        for intent in [notarize(3, 1), finalize(3, 1), nullify(4)] {
            assert_eq!(g.check_and_record(&intent).unwrap(), GuardDecision::Fresh);
            for _ in 0..3 {
                assert_eq!(g.check_and_record(&intent).unwrap(), GuardDecision::Repeat);
            }
        }
        assert_eq!(g.highest_view(), 4);
    });
}

#[test]
fn highest_view_starts_at_zero() {
    assert_eq!(SigningGuard::in_memory().highest_view(), 0);
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        SigningGuard::open(dir.path(), &OWNER)
            .unwrap()
            .highest_view(),
        0
    );
}

/// Restart: a new process reopening the file still refuses the conflicting twin, and answers
/// Repeat for the vote it already signed.
#[test]
fn reopen_preserves_record_and_refuses_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut g = SigningGuard::open(dir.path(), &OWNER).unwrap();
        g.check_and_record(&notarize(10, 1)).unwrap();
        g.check_and_record(&finalize(10, 1)).unwrap();
        g.check_and_record(&nullify(11)).unwrap();
    }
    let mut g = SigningGuard::open(dir.path(), &OWNER).unwrap();
    assert_eq!(g.highest_view(), 11);
    assert!(is_conflict(g.check_and_record(&notarize(10, 2))));
    assert!(is_conflict(g.check_and_record(&finalize(10, 2))));
    assert!(is_conflict(g.check_and_record(&nullify(10))));
    assert!(is_conflict(g.check_and_record(&finalize(11, 3))));
    assert_eq!(
        g.check_and_record(&notarize(10, 1)).unwrap(),
        GuardDecision::Repeat
    );
    assert_eq!(
        g.check_and_record(&nullify(11)).unwrap(),
        GuardDecision::Repeat
    );
}

/// A refusal says whether the conflicting record came from the file (an earlier process of this
/// validator: a restart in the middle of a view) or from this process (a second signer behind
/// one guard), so the node can alert on the second kind only.
#[test]
fn a_conflict_names_a_record_from_before_the_restart() {
    let dir = tempfile::tempdir().unwrap();
    SigningGuard::open(dir.path(), &OWNER)
        .unwrap()
        .check_and_record(&notarize(10, 1))
        .unwrap();
    let mut g = SigningGuard::open(dir.path(), &OWNER).unwrap();
    assert_eq!(g.notarized(10), Some([1; 32]));
    assert_eq!(g.notarized(11), None);
    g.check_and_record(&notarize(11, 1)).unwrap();
    // The restored view stays "before the restart" after it grows in this process.
    g.check_and_record(&finalize(10, 1)).unwrap();
    for (intent, expected) in [(notarize(10, 2), true), (notarize(11, 2), false)] {
        match g.check_and_record(&intent) {
            Err(GuardError::Conflict { before_restart, .. }) => {
                assert_eq!(before_restart, expected, "view {}", intent.view)
            }
            other => panic!("expected Conflict, got {other:?}"),
        }
    }
    let message = g
        .check_and_record(&notarize(10, 3))
        .unwrap_err()
        .to_string();
    assert!(message.contains("before this process started"), "{message}");
}

fn guard_file_with(dir: &Path) -> Vec<u8> {
    let mut g = SigningGuard::open(dir, &OWNER).unwrap();
    g.check_and_record(&notarize(1, 1)).unwrap();
    g.check_and_record(&finalize(2, 2)).unwrap();
    drop(g);
    fs::read(dir.join(GUARD_FILE)).unwrap()
}

fn assert_open_corrupt(dir: &Path) {
    match SigningGuard::open(dir, &OWNER) {
        Err(GuardError::Corrupt(_)) => {}
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[test]
fn flipped_byte_refuses_to_open() {
    let dir = tempfile::tempdir().unwrap();
    let good = guard_file_with(dir.path());
    for i in 0..good.len() {
        let mut bad = good.clone();
        bad[i] ^= 0x01;
        fs::write(dir.path().join(GUARD_FILE), &bad).unwrap();
        assert_open_corrupt(dir.path());
    }
}

#[test]
fn truncated_or_extended_file_refuses_to_open() {
    let dir = tempfile::tempdir().unwrap();
    let good = guard_file_with(dir.path());
    for len in 0..good.len() {
        fs::write(dir.path().join(GUARD_FILE), &good[..len]).unwrap();
        assert_open_corrupt(dir.path());
    }
    let mut long = good.clone();
    long.push(0);
    fs::write(dir.path().join(GUARD_FILE), &long).unwrap();
    assert_open_corrupt(dir.path());
    // A huge file is refused without being read whole.
    fs::write(dir.path().join(GUARD_FILE), vec![0u8; 1 << 20]).unwrap();
    assert_open_corrupt(dir.path());
    // The intact file still opens: nothing was silently reset along the way.
    fs::write(dir.path().join(GUARD_FILE), &good).unwrap();
    assert_eq!(
        SigningGuard::open(dir.path(), &OWNER)
            .unwrap()
            .highest_view(),
        2
    );
}

#[test]
fn views_below_the_window_are_too_old() {
    both(|g| {
        let top = 1000;
        g.check_and_record(&notarize(top, 1)).unwrap();
        // Exactly GUARD_WINDOW below is still allowed ...
        assert_eq!(
            g.check_and_record(&nullify(top - GUARD_WINDOW)).unwrap(),
            GuardDecision::Fresh
        );
        // ... one more is not.
        match g.check_and_record(&nullify(top - GUARD_WINDOW - 1)) {
            Err(GuardError::TooOld { view, highest }) => {
                assert_eq!(view, top - GUARD_WINDOW - 1);
                assert_eq!(highest, top);
            }
            other => panic!("expected TooOld, got {other:?}"),
        }
        assert_eq!(g.highest_view(), top);
    });
}

/// 300 views of notarize+finalize: the file stays bounded by the window, and a reopened guard
/// still refuses the pruned (too old) views rather than forgetting them.
#[test]
fn pruning_keeps_the_file_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(GUARD_FILE);
    let mut g = SigningGuard::open(dir.path(), &OWNER).unwrap();
    let mut max_len = 0;
    for view in 1..=300u64 {
        g.check_and_record(&notarize(view, 1)).unwrap();
        g.check_and_record(&finalize(view, 1)).unwrap();
        max_len = max_len.max(fs::metadata(&path).unwrap().len());
    }
    // 65 views × (8 + 1 + 32 + 32) bytes + 46-byte header (with the owner) + 32-byte checksum.
    let bound = (GUARD_WINDOW + 1) * 73 + 46 + 32;
    assert!(max_len <= bound, "{max_len} > {bound}");
    drop(g);
    let mut g = SigningGuard::open(dir.path(), &OWNER).unwrap();
    assert_eq!(g.highest_view(), 300);
    assert!(matches!(
        g.check_and_record(&notarize(10, 2)),
        Err(GuardError::TooOld { .. })
    ));
    assert!(is_conflict(
        g.check_and_record(&notarize(300 - GUARD_WINDOW, 2))
    ));
}

/// A failed durable write must not leave the vote recorded in memory: the retry is Fresh again
/// (it is written this time), not a Repeat of a vote that never became durable.
#[test]
fn failed_write_records_nothing() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("guard");
    let mut g = SigningGuard::open(&dir, &OWNER).unwrap();
    g.check_and_record(&notarize(1, 1)).unwrap();
    fs::remove_dir_all(&dir).unwrap();
    assert!(matches!(
        g.check_and_record(&notarize(2, 1)),
        Err(GuardError::Io(_))
    ));
    assert_eq!(g.highest_view(), 1);
    fs::create_dir_all(&dir).unwrap();
    assert_eq!(
        g.check_and_record(&notarize(2, 1)).unwrap(),
        GuardDecision::Fresh
    );
}

fn intent_strategy() -> impl Strategy<Value = VoteIntent> {
    (0u64..6, 0u8..3, 0u8..3).prop_map(|(view, kind, b)| match kind {
        0 => notarize(view, b),
        1 => finalize(view, b),
        _ => nullify(view),
    })
}

/// Two accepted (Fresh or Repeat) intents in one view must not conflict.
fn conflicting(a: &VoteIntent, b: &VoteIntent) -> bool {
    use VoteKind::*;
    a.view == b.view
        && match (a.kind, b.kind) {
            (Notarize, Notarize) | (Finalize, Finalize) => a.block != b.block,
            (Finalize, Nullify) | (Nullify, Finalize) => true,
            _ => false,
        }
}

fn check_sequence(g: &mut SigningGuard, intents: &[VoteIntent]) {
    let mut accepted: Vec<VoteIntent> = Vec::new();
    for intent in intents {
        match g.check_and_record(intent) {
            Ok(_) => {
                for prev in &accepted {
                    assert!(!conflicting(prev, intent), "{prev:?} then {intent:?}");
                }
                accepted.push(*intent);
            }
            Err(GuardError::Conflict { .. }) => {
                // Refused only when there really is an accepted conflicting vote.
                assert!(
                    accepted.iter().any(|p| conflicting(p, intent)),
                    "{intent:?}"
                );
            }
            Err(e) => panic!("unexpected error {e}"),
        }
    }
}

proptest! {
    #[test]
    fn random_sequences_never_accept_conflicts(
        intents in proptest::collection::vec(intent_strategy(), 0..60)
    ) {
        check_sequence(&mut SigningGuard::in_memory(), &intents);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]
    /// Same property, on disk, with a restart (reopen) between the two halves of the sequence.
    #[test]
    fn random_sequences_across_restart_never_accept_conflicts(
        intents in proptest::collection::vec(intent_strategy(), 0..30)
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut accepted_before = Vec::new();
        let (first, second) = intents.split_at(intents.len() / 2);
        {
            let mut g = SigningGuard::open(dir.path(), &OWNER).unwrap();
            for intent in first {
                if g.check_and_record(intent).is_ok() {
                    accepted_before.push(*intent);
                }
            }
        }
        let mut g = SigningGuard::open(dir.path(), &OWNER).unwrap();
        for intent in second {
            if g.check_and_record(intent).is_ok() {
                for prev in &accepted_before {
                    prop_assert!(!conflicting(prev, intent), "{:?} then {:?}", prev, intent);
                }
                accepted_before.push(*intent);
            }
        }
    }
}

/// A guard file is bound to its owner: another validator's (or chain's) file is refused, not
/// adopted, and nothing is rewritten.
#[test]
fn another_owners_guard_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut g = SigningGuard::open(dir.path(), &OWNER).unwrap();
    g.check_and_record(&notarize(5, 1)).unwrap();
    let before = fs::read(dir.path().join(GUARD_FILE)).unwrap();
    assert!(matches!(
        SigningGuard::open(dir.path(), &[0x0f; 32]),
        Err(GuardError::Foreign { .. })
    ));
    assert_eq!(fs::read(dir.path().join(GUARD_FILE)).unwrap(), before);
    assert_eq!(
        SigningGuard::open(dir.path(), &OWNER)
            .unwrap()
            .highest_view(),
        5
    );
}

/// A fence refuses every real vote in its view, survives a restart, ages out older views, and
/// changes nothing at or below the highest record.
#[test]
fn a_fence_refuses_every_vote_in_its_view() {
    let dir = tempfile::tempdir().unwrap();
    let mut g = SigningGuard::open(dir.path(), &OWNER).unwrap();
    assert_eq!(g.fence(100).unwrap(), GuardDecision::Fresh);
    drop(g);
    let mut g = SigningGuard::open(dir.path(), &OWNER).unwrap();
    assert_eq!(g.highest_view(), 100);
    assert!(is_conflict(g.check_and_record(&notarize(100, 1))));
    assert!(is_conflict(g.check_and_record(&finalize(100, 1))));
    assert!(is_conflict(g.check_and_record(&nullify(100))));
    assert!(matches!(
        g.check_and_record(&notarize(100 - GUARD_WINDOW - 1, 1)),
        Err(GuardError::TooOld { .. })
    ));
    assert_eq!(
        g.check_and_record(&notarize(101, 1)).unwrap(),
        GuardDecision::Fresh
    );
    assert_eq!(g.fence(101).unwrap(), GuardDecision::Repeat);
    assert_eq!(
        g.check_and_record(&finalize(101, 1)).unwrap(),
        GuardDecision::Fresh,
        "a fence at the highest view changes nothing"
    );
}

/// A validator moving hosts carries its signing history: the new host's guard imports the old
/// one's, and refuses exactly what the old one refused.
#[test]
fn an_imported_history_refuses_what_the_exporting_guard_refused() {
    let old = tempfile::tempdir().unwrap();
    let mut exporter = SigningGuard::open(old.path(), &OWNER).unwrap();
    exporter.check_and_record(&notarize(10, 1)).unwrap();
    exporter.check_and_record(&nullify(11)).unwrap();
    let (owner, history) = exporter.history();
    assert_eq!(owner, OWNER);
    assert_eq!(history.len(), 2);

    let new = tempfile::tempdir().unwrap();
    let report = SigningGuard::open(new.path(), &OWNER)
        .unwrap()
        .import(&owner, &history)
        .unwrap();
    assert_eq!((report.views_added, report.views_unchanged), (2, 0));
    // Durable: a restart on the new host still refuses.
    let mut g = SigningGuard::open(new.path(), &OWNER).unwrap();
    assert_eq!(g.highest_view(), 11);
    assert!(is_conflict(g.check_and_record(&notarize(10, 2))));
    assert!(is_conflict(g.check_and_record(&finalize(11, 3))));
    assert_eq!(
        g.check_and_record(&notarize(10, 1)).unwrap(),
        GuardDecision::Repeat
    );
    // Importing again changes nothing.
    let again = g.import(&owner, &history).unwrap();
    assert_eq!((again.views_added, again.views_unchanged), (0, 2));
}

/// Import merges, never lowers: an older history adds its votes and keeps the newer ones; a
/// history that conflicts, repeats a view or belongs to another owner changes nothing.
#[test]
fn import_never_lowers_the_record_and_refuses_conflicting_histories() {
    let dir = tempfile::tempdir().unwrap();
    let mut g = SigningGuard::open(dir.path(), &OWNER).unwrap();
    g.check_and_record(&notarize(100, 1)).unwrap();
    let older = [ViewVotes {
        view: 99,
        notarize: Some([2; 32]),
        finalize: None,
        nullify: true,
    }];
    g.import(&OWNER, &older).unwrap();
    assert_eq!(g.highest_view(), 100, "the newer record stays");
    assert!(is_conflict(g.check_and_record(&finalize(99, 2))));

    let conflicting = [ViewVotes {
        view: 100,
        notarize: Some([3; 32]),
        finalize: None,
        nullify: false,
    }];
    let finalize_and_nullify = [ViewVotes {
        view: 101,
        notarize: None,
        finalize: Some([4; 32]),
        nullify: true,
    }];
    let repeated = [older[0], older[0]];
    for bad in [&conflicting[..], &finalize_and_nullify, &repeated] {
        assert!(g.import(&OWNER, bad).is_err(), "{bad:?}");
    }
    assert!(matches!(
        g.import(&[0xff; 32], &older),
        Err(GuardError::Foreign { .. })
    ));
    let (_, history) = SigningGuard::open(dir.path(), &OWNER).unwrap().history();
    assert_eq!(
        history.iter().map(|v| v.view).collect::<Vec<_>>(),
        [99, 100],
        "nothing from the refused imports"
    );

    // A history far below the record's window is dropped, as the guard drops such views.
    let ancient = [ViewVotes {
        view: 1,
        notarize: Some([5; 32]),
        finalize: None,
        nullify: false,
    }];
    assert_eq!(g.import(&OWNER, &ancient).unwrap().views_too_old, 1);
}
