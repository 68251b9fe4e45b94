//! `SimGuardDir`: the simulated directory the simulator keeps signing guard files in. The
//! guard's write path (tmp file, fsync, rename, directory fsync) keeps every record across any
//! crash on an honest disk; what was not made durable is lost or torn; a lagging disk loses the
//! last acknowledged record, which is what the simulator's `LaggingGuardDisk` mutation relies on.

use quasar_storage::{
    Crash, GuardDecision, GuardDir, SigningGuard, SimGuardDir, VoteIntent, VoteKind, GUARD_FILE,
};

const OWNER: [u8; 32] = [7; 32];

fn notarize(view: u64, block: u8) -> VoteIntent {
    VoteIntent {
        view,
        kind: VoteKind::Notarize,
        block: [block; 32],
    }
}

fn open(dir: &SimGuardDir) -> SigningGuard {
    SigningGuard::open_in(Box::new(dir.clone()), &OWNER).unwrap()
}

#[test]
fn the_guard_keeps_every_record_across_any_crash_on_an_honest_disk() {
    for crash in [
        Crash::LoseUnflushed,
        Crash::Torn { keep: 0 },
        Crash::Torn { keep: 50 },
        Crash::Torn { keep: 1 << 20 },
    ] {
        let dir = SimGuardDir::new();
        let mut guard = open(&dir);
        for view in 1..=5 {
            guard.check_and_record(&notarize(view, 1)).unwrap();
        }
        dir.crash(crash);
        let mut reopened = open(&dir);
        assert_eq!(reopened.highest_view(), 5, "{crash:?}");
        assert!(reopened.recorded(&notarize(5, 1)), "{crash:?}");
        assert!(
            reopened.check_and_record(&notarize(5, 2)).is_err(),
            "{crash:?}"
        );
    }
}

/// A directory holding `a` = "first" durably.
fn with_durable_file() -> SimGuardDir {
    let mut dir = SimGuardDir::new();
    dir.write("a", b"first").unwrap();
    dir.sync_file("a").unwrap();
    dir.sync_dir().unwrap();
    dir
}

#[test]
fn writes_that_were_not_made_durable_are_lost_or_torn() {
    let mut dir = with_durable_file();
    dir.write("a", b"second, longer").unwrap();
    dir.write("b", b"never in the directory").unwrap();
    dir.sync_file("b").unwrap();
    assert_eq!(dir.read("a", 100).unwrap().unwrap(), b"second, longer");
    assert_eq!(dir.read("a", 3).unwrap().unwrap(), b"sec");
    dir.crash(Crash::LoseUnflushed);
    assert_eq!(dir.read("a", 100).unwrap().unwrap(), b"first");
    assert!(
        !dir.contains("b"),
        "an entry the directory fsync never saw is lost"
    );

    let mut torn = with_durable_file();
    torn.write("a", b"second, longer").unwrap();
    torn.crash(Crash::Torn { keep: 6 });
    assert_eq!(torn.read("a", 100).unwrap().unwrap(), b"second");

    // A rename is durable only with the directory fsync.
    let mut renamed = with_durable_file();
    renamed.write("c", b"x").unwrap();
    renamed.sync_file("c").unwrap();
    renamed.rename("c", "d").unwrap();
    assert!(renamed.contains("d") && !renamed.contains("c"));
    renamed.crash(Crash::LoseUnflushed);
    assert!(!renamed.contains("c") && !renamed.contains("d"));
    assert_eq!(renamed.read("d", 100).unwrap(), None);
    assert!(renamed.sync_file("d").is_err(), "no such file");
}

#[test]
fn a_lagging_disk_loses_the_last_acknowledged_record() {
    let dir = SimGuardDir::lagging();
    let mut guard = open(&dir);
    for view in 1..=3 {
        assert_eq!(
            guard.check_and_record(&notarize(view, 1)).unwrap(),
            GuardDecision::Fresh
        );
    }
    dir.crash(Crash::LoseUnflushed);
    let mut reopened = open(&dir);
    assert_eq!(reopened.highest_view(), 2, "the last record is gone");
    // So the restarted guard lets the conflicting twin of the lost vote through.
    assert_eq!(
        reopened.check_and_record(&notarize(3, 2)).unwrap(),
        GuardDecision::Fresh
    );
}

#[test]
fn a_torn_guard_file_is_refused_not_reset() {
    let mut dir = SimGuardDir::new();
    let mut guard = open(&dir);
    guard.check_and_record(&notarize(1, 1)).unwrap();
    // The file rewritten in place and never synced (not the guard's own path): a crash tears it.
    let mut bytes = dir.read(GUARD_FILE, 1 << 20).unwrap().unwrap();
    bytes.extend_from_slice(&[0; 16]);
    dir.write(GUARD_FILE, &bytes).unwrap();
    dir.crash(Crash::Torn {
        keep: bytes.len() / 2,
    });
    assert!(SigningGuard::open_in(Box::new(dir.clone()), &OWNER).is_err());
}

/// A failed file operation at any step of the guard's write path (write, fsync, rename,
/// directory fsync) records nothing: the vote is refused with an I/O error, the record in
/// memory is unchanged, a crash then keeps the earlier record, and without a crash the next
/// attempt records the vote.
#[test]
fn a_failed_step_of_the_write_path_records_nothing() {
    for step in 0..4 {
        let dir = SimGuardDir::new();
        let mut guard = open(&dir);
        guard.check_and_record(&notarize(1, 1)).unwrap();
        dir.fail_operation(step);
        assert!(
            matches!(
                guard.check_and_record(&notarize(2, 1)),
                Err(quasar_storage::GuardError::Io(_))
            ),
            "step {step}"
        );
        assert_eq!(guard.highest_view(), 1, "step {step}");
        assert_eq!(
            guard.check_and_record(&notarize(1, 1)).unwrap(),
            GuardDecision::Repeat,
            "step {step}: a repeat writes nothing"
        );
        let crashed = SimGuardDir::new();
        let mut survivor = open(&crashed);
        survivor.check_and_record(&notarize(1, 1)).unwrap();
        crashed.fail_operation(step);
        assert!(survivor.check_and_record(&notarize(2, 1)).is_err());
        crashed.crash(Crash::Torn { keep: 1 << 20 });
        assert_eq!(open(&crashed).highest_view(), 1, "step {step}");

        assert_eq!(
            guard.check_and_record(&notarize(2, 1)).unwrap(),
            GuardDecision::Fresh,
            "step {step}"
        );
        dir.crash(Crash::LoseUnflushed);
        assert_eq!(open(&dir).highest_view(), 2, "step {step}");
    }
}
