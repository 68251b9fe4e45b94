//! Focused rules of the consensus core, driven input by input with real signatures: what it votes,
//! what it refuses, what it reports.

use quasar_consensus::{
    Action, Application, BlockLimits, Checkpoint, Core, CoreConfig, EpochSchedule, EvidenceKind,
    Input, KnownTxs, ProposalSlot, TimerKind, Tip, VerifiedProposal, VerifiedVote, Verifier,
    VerifyError,
};
use quasar_crypto::bls::SecretKey;
use quasar_crypto::hash::Hash;
use quasar_lanes::ValidatorSet;
use quasar_node::application::ChainApplication;
use quasar_node::signer::VoteSigner;
use quasar_storage::SigningGuard;
use quasar_wire::{CertificateKind, EpochDomain, Message, VoteKind};
use std::sync::Arc;

const GENESIS: Hash = [42; 32];
const CHAIN: u64 = 9;

struct Net {
    signers: Vec<VoteSigner>,
    verifier: Verifier,
    validators: Arc<ValidatorSet>,
}

/// The application rules of the tests' chain (no registrations happen in them).
fn rules() -> quasar_app::ChainRules {
    quasar_app::ChainRules {
        chain_id: CHAIN,
        epoch_length: 0,
        sets_from_registry: false,
    }
}

/// The built-in application on a fresh state with no accounts (blocks the engine builds carry
/// no transactions, and their state root is the empty state's).
fn app() -> ChainApplication {
    let db = quasar_storage::SledStore::temporary().unwrap();
    let state = quasar_app::State::open(db.state().unwrap(), rules(), [], []).unwrap();
    let cache = Arc::new(quasar_app::VerificationCache::new(CHAIN, 16));
    ChainApplication::new(state, cache, 1 << 20)
}

/// `core.handle`, with the application answering every [`Action::Verify`] it leads to with
/// `valid`.
fn handle_executing(core: &mut Core, now: u64, input: Input, valid: bool) -> Vec<Action> {
    let mut actions = core.handle(now, input);
    let mut i = 0;
    while i < actions.len() {
        if let Action::Verify { view, block } = actions[i] {
            let more = core.handle(now, Input::Verified { view, block, valid });
            actions.extend(more);
        }
        i += 1;
    }
    actions
}

/// Validator `me`'s engine on `store` with `signer` and a fresh [`app`].
fn open_engine(
    net: &Net,
    store: quasar_storage::SimStore,
    signer: VoteSigner,
    me: u32,
) -> (
    quasar_node::engine::Engine<quasar_storage::SimStore, ChainApplication>,
    quasar_node::engine::Recovery,
) {
    quasar_node::engine::Engine::open(store, app(), signer, config(me), &net.verifier, 0).unwrap()
}

fn net() -> Net {
    net_with(EpochSchedule::SINGLE)
}

fn net_with(schedule: EpochSchedule) -> Net {
    let keys: Vec<SecretKey> = (0..4u8)
        .map(|i| SecretKey::from_seed(&[i + 1; 32]))
        .collect();
    let validators =
        Arc::new(ValidatorSet::equal_stake(keys.iter().map(SecretKey::public_key)).unwrap());
    let signers = keys
        .into_iter()
        .enumerate()
        .map(|(i, k)| {
            VoteSigner::new(
                k,
                i as u32,
                CHAIN,
                0,
                EpochDomain::default(),
                SigningGuard::in_memory(),
            )
        })
        .collect();
    let limits = BlockLimits {
        max_txs: 100,
        max_bytes: 1 << 20,
    };
    let verifier = Verifier::new(
        validators.clone(),
        GENESIS,
        CHAIN,
        schedule,
        EpochDomain::default(),
        limits,
    );
    Net {
        signers,
        verifier,
        validators,
    }
}

fn core_for(net: &Net, me: u32) -> Core {
    core_in(net, me, EpochSchedule::SINGLE)
}

fn core_in(net: &Net, me: u32, schedule: EpochSchedule) -> Core {
    Core::new(
        CoreConfig {
            schedule,
            ..config(me)
        },
        net.validators.clone(),
        Tip {
            height: 0,
            hash: GENESIS,
            view: 0,
            timestamp_us: 0,
        },
    )
}

fn config(me: u32) -> CoreConfig {
    CoreConfig {
        chain_id: CHAIN,
        epoch: 0,
        schedule: EpochSchedule::SINGLE,
        genesis: GENESIS,
        me: Some(me),
        block_time_us: 1_000,
        view_timeout_us: 1_000_000,
        retry_us: 100_000,
        max_future_views: 100,
        max_clock_drift_us: 1_000_000,
    }
}

fn slot(view: u64, height: u64, parent: Hash, parent_view: u64) -> ProposalSlot {
    ProposalSlot {
        view,
        height,
        parent,
        parent_view,
        parent_timestamp_us: 0,
        exclude: vec![],
        seal: false,
    }
}

fn votes(actions: &[Action]) -> Vec<(VoteKind, u64)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Vote { kind, view, .. } => Some((*kind, *view)),
            _ => None,
        })
        .collect()
}

fn vote(
    net: &mut Net,
    signer: usize,
    kind: VoteKind,
    view: u64,
    height: u64,
    block: Hash,
) -> VerifiedVote {
    net.signers[signer]
        .sign_vote(kind, view, height, block)
        .unwrap()
        .0
}

/// A validator that does not lead `view`.
fn follower(core: &Core, view: u64) -> u32 {
    let leader = core.leader_of(view);
    (0..4).find(|&i| i != leader).unwrap_or_default()
}

/// The verifier takes a proposal's payload-root leaves from what the node hashed already (its
/// mempool, `KnownTxs`) and hashes the rest; the root is checked either way, so a wrong known
/// hash fails the proposal rather than pass it.
#[test]
fn a_proposal_takes_the_known_hashes_of_its_transactions_and_its_root_is_checked_all_the_same() {
    struct Known(Vec<Option<Hash>>);
    impl KnownTxs for Known {
        fn hashes(&self, txs: &[Vec<u8>]) -> Vec<Option<Hash>> {
            self.0.iter().take(txs.len()).copied().collect()
        }
    }
    let mut net = net();
    let leader = core_for(&net, 0).leader_of(1) as usize;
    let txs = vec![b"tx-one".to_vec(), b"tx-two".to_vec()];
    let p = net.signers[leader]
        .sign_block(&slot(1, 1, GENESIS, 0), txs.clone(), [0; 32], 11)
        .unwrap();
    let hashes: Vec<Hash> = txs.iter().map(|tx| quasar_wire::tx_hash(tx)).collect();
    let known = net
        .verifier
        .clone()
        .with_known_txs(Arc::new(Known(vec![Some(hashes[0]), None])));
    let verified = known.verify_proposal(p.proposal().clone()).unwrap();
    assert_eq!(verified.tx_hashes(), hashes.as_slice());
    let lying = net
        .verifier
        .clone()
        .with_known_txs(Arc::new(Known(vec![None, Some([9; 32])])));
    assert_eq!(
        lying.verify_proposal(p.proposal().clone()).unwrap_err(),
        VerifyError::PayloadRoot
    );
}

/// A started follower's core, and view 1's leader's proposal on genesis claiming `state_root`.
fn follower_and_first_proposal(state_root: Hash) -> (Core, VerifiedProposal) {
    let mut net = net();
    let me = follower(&core_for(&net, 0), 1);
    let mut core = core_for(&net, me);
    core.start(0, 0);
    let leader = core.leader_of(1) as usize;
    let p = net.signers[leader]
        .sign_block(&slot(1, 1, GENESIS, 0), vec![], state_root, 11)
        .unwrap();
    let p = net.verifier.verify_proposal(p.proposal().clone()).unwrap();
    (core, p)
}

#[test]
fn a_valid_proposal_from_the_leader_gets_a_notarize_vote() {
    let (mut core, p) = follower_and_first_proposal([0; 32]);
    let actions = handle_executing(&mut core, 100, Input::Proposal(Box::new(p)), true);
    assert_eq!(votes(&actions), vec![(VoteKind::Notarize, 1)]);
}

/// The application boundary can fail: a proposal that is valid for consensus but whose
/// execution the application refuses (a bad transaction, or a state root that differs) gets no
/// notarize vote, however often it arrives; the application is asked once.
#[test]
fn a_proposal_the_application_refuses_is_never_notarized() {
    let (mut core, p) = follower_and_first_proposal([9; 32]);
    let actions = handle_executing(&mut core, 100, Input::Proposal(Box::new(p.clone())), false);
    let asked = |actions: &[Action]| {
        actions
            .iter()
            .filter(|a| matches!(a, Action::Verify { view: 1, .. }))
            .count()
    };
    assert_eq!(asked(&actions), 1);
    assert!(votes(&actions).is_empty(), "{:?}", votes(&actions));
    let again = handle_executing(&mut core, 200, Input::Proposal(Box::new(p)), true);
    assert_eq!(asked(&again), 0);
    assert!(votes(&again).is_empty());
}

#[test]
fn a_proposal_that_skips_a_view_without_nullification_is_not_notarized() {
    let mut net = net();
    let me = follower(&core_for(&net, 0), 2);
    let mut core = core_for(&net, me);
    core.start(0, 0);
    // Move to view 2 through a nullification of view 1 formed from three nullify votes.
    for s in (0..4).filter(|&s| s != me as usize) {
        let v = vote(&mut net, s, VoteKind::Nullify, 1, 0, [0; 32]);
        core.handle(10, Input::Vote(v));
    }
    assert_eq!(core.view(), 2);
    let leader2 = core.leader_of(2) as usize;
    // Parent genesis (view 0), view 1 nullified: valid.
    let ok = net.signers[leader2]
        .sign_block(&slot(2, 1, GENESIS, 0), vec![], [0; 32], 12)
        .unwrap();
    let mut core_b = core_for(&net, me);
    core_b.start(0, 0);
    // core_b never saw view 1's nullification: it must not notarize a block skipping view 1.
    let proposal = net.verifier.verify_proposal(ok.proposal().clone()).unwrap();
    let actions = core_b.handle(20, Input::Proposal(Box::new(proposal.clone())));
    assert!(votes(&actions)
        .iter()
        .all(|(k, v)| !(*k == VoteKind::Notarize && *v == 2)));
    // The core that saw the nullification notarizes the same block.
    let actions = handle_executing(&mut core, 20, Input::Proposal(Box::new(proposal)), true);
    assert_eq!(votes(&actions), vec![(VoteKind::Notarize, 2)]);
}

#[test]
fn a_validator_that_nullified_a_view_never_finalizes_it() {
    let mut net = net();
    let mut core = core_for(&net, 0);
    core.start(0, 0);
    let actions = core.handle(
        2_000_000,
        Input::Timer {
            view: 1,
            kind: TimerKind::Timeout,
        },
    );
    assert_eq!(votes(&actions), vec![(VoteKind::Nullify, 1)]);
    // A notarization for view 1 arrives afterwards (three notarize votes on block B).
    let block = [7; 32];
    let mut all = Vec::new();
    for s in 1..4 {
        let v = vote(&mut net, s, VoteKind::Notarize, 1, 1, block);
        all.extend(core.handle(2_000_001, Input::Vote(v)));
    }
    assert!(all.iter().any(|a| matches!(a, Action::Broadcast(Message::Certificate(c)) if c.kind == CertificateKind::Notarization)));
    assert!(
        votes(&all).iter().all(|(k, _)| *k != VoteKind::Finalize),
        "no finalize after nullify"
    );
    assert_eq!(core.view(), 2, "the notarization still advances the view");
}

#[test]
fn a_notarization_leads_to_a_finalize_vote_and_the_next_view() {
    let mut net = net();
    let mut core = core_for(&net, 0);
    core.start(0, 0);
    let block = [9; 32];
    let mut all = Vec::new();
    for s in 1..4 {
        let v = vote(&mut net, s, VoteKind::Notarize, 1, 1, block);
        all.extend(core.handle(5, Input::Vote(v)));
    }
    assert_eq!(votes(&all), vec![(VoteKind::Finalize, 1)]);
    assert_eq!(core.view(), 2);
    // The block itself is missing: the core asks for it.
    assert!(all
        .iter()
        .any(|a| matches!(a, Action::Fetch { block: b, .. } if *b == block)));
}

#[test]
fn conflicting_votes_from_one_validator_become_evidence() {
    let mut net = net();
    let mut core = core_for(&net, 0);
    core.start(0, 0);
    // Validator 1 notarizes two different blocks in view 1. Its own guard would refuse, so the
    // twin is signed by a second signer holding the same key (a Byzantine node).
    let first = vote(&mut net, 1, VoteKind::Notarize, 1, 1, [1; 32]);
    let mut twin = VoteSigner::new(
        SecretKey::from_seed(&[2; 32]),
        1,
        CHAIN,
        0,
        EpochDomain::default(),
        SigningGuard::in_memory(),
    );
    let second = twin.sign_vote(VoteKind::Notarize, 1, 1, [2; 32]).unwrap().0;
    core.handle(1, Input::Vote(first));
    let actions = core.handle(2, Input::Vote(second.clone()));
    let evidence: Vec<_> = actions
        .iter()
        .filter_map(|a| match a {
            Action::Evidence(e) => Some((e.kind, e.signer, e.view)),
            _ => None,
        })
        .collect();
    assert_eq!(evidence, vec![(EvidenceKind::ConflictingNotarize, 1, 1)]);
    // Replaying the conflicting vote does not report it again.
    let replay = core.handle(3, Input::Vote(second));
    assert!(!replay.iter().any(|a| matches!(a, Action::Evidence(_))));
    // Finalize then nullify in one view.
    let fin = twin.sign_vote(VoteKind::Finalize, 1, 1, [2; 32]).unwrap().0;
    let mut twin2 = VoteSigner::new(
        SecretKey::from_seed(&[2; 32]),
        1,
        CHAIN,
        0,
        EpochDomain::default(),
        SigningGuard::in_memory(),
    );
    let null = twin2.sign_vote(VoteKind::Nullify, 1, 0, [0; 32]).unwrap().0;
    core.handle(3, Input::Vote(fin));
    let actions = core.handle(4, Input::Vote(null));
    assert!(actions
        .iter()
        .any(|a| matches!(a, Action::Evidence(e) if e.kind == EvidenceKind::FinalizeAndNullify)));
}

#[test]
fn the_signing_guard_refuses_a_second_notarize_in_one_view() {
    let mut net = net();
    net.signers[0]
        .sign_vote(VoteKind::Notarize, 5, 3, [1; 32])
        .unwrap();
    assert!(net.signers[0]
        .sign_vote(VoteKind::Notarize, 5, 3, [2; 32])
        .is_err());
    assert!(
        net.signers[0]
            .sign_vote(VoteKind::Notarize, 5, 3, [1; 32])
            .is_ok(),
        "re-signing the same vote is allowed"
    );
    net.signers[0]
        .sign_vote(VoteKind::Finalize, 5, 3, [1; 32])
        .unwrap();
    assert!(net.signers[0]
        .sign_vote(VoteKind::Nullify, 5, 0, [0; 32])
        .is_err());
}

// Regression: a validator that missed a nullification (it was restarting) could never check a
// proposal that skipped that view, and with two such validators the network stalled. The leader
// now sends the certificates that justify its parent before its proposal.
#[test]
fn a_leader_sends_the_justification_of_its_parent_before_the_proposal() {
    let mut net = net();
    // Find a view whose leader differs from view 1's, and run that validator's core.
    let probe = core_for(&net, 0);
    let leader2 = probe.leader_of(2);
    let mut core = core_for(&net, leader2);
    core.start(0, 0);
    for s in (0..4).filter(|&s| s != leader2 as usize) {
        let v = vote(&mut net, s, VoteKind::Nullify, 1, 0, [0; 32]);
        core.handle(10, Input::Vote(v));
    }
    assert_eq!(core.view(), 2);
    let actions = core.handle(
        2_000,
        Input::Timer {
            view: 2,
            kind: TimerKind::Propose,
        },
    );
    let nullification = actions.iter().position(|a| {
        matches!(a, Action::Broadcast(Message::Certificate(c))
            if c.kind == CertificateKind::Nullification && c.view == 1)
    });
    let proposal = actions.iter().position(|a| matches!(a, Action::Propose(_)));
    assert!(nullification.is_some() && proposal.is_some(), "{actions:?}");
    assert!(nullification < proposal, "justification first");
}

// Regression (found by a 1000-seed campaign): when the signing guard could not write its record,
// the vote was never signed, yet the core counted it as cast and never asked again; with two
// silent Byzantine validators out of 7 every honest nullify was needed, and the network stalled.
// A timed-out view now asks again on every retry for votes that never came back signed.
#[test]
fn a_vote_the_guard_failed_to_record_is_requested_again_on_retry() {
    let net = net();
    let mut core = core_for(&net, 0);
    core.start(0, 0);
    let first = core.handle(
        2_000_000,
        Input::Timer {
            view: 1,
            kind: TimerKind::Timeout,
        },
    );
    assert_eq!(votes(&first), vec![(VoteKind::Nullify, 1)]);
    // The runtime could not sign it (no Input::Vote came back). The retry asks again.
    let retry = core.handle(
        2_200_000,
        Input::Timer {
            view: 1,
            kind: TimerKind::Retry,
        },
    );
    assert_eq!(votes(&retry), vec![(VoteKind::Nullify, 1)]);
}

/// The runtime verifies bursts of votes together: each vote gets exactly the verdict it would
/// get alone, and the bad ones among many good ones are named individually.
#[test]
fn a_burst_of_votes_gets_the_same_verdicts_as_one_by_one() {
    use quasar_consensus::VerifyError;
    use quasar_crypto::bls::BlsError;
    let mut net = net();
    let mut burst: Vec<quasar_wire::Vote> = (0..40u64)
        .map(|k| {
            let signer = (k % 4) as usize;
            let view = 10 + k / 4;
            vote(
                &mut net,
                signer,
                VoteKind::Notarize,
                view,
                view,
                [k as u8 + 1; 32],
            )
            .vote()
            .clone()
        })
        .collect();
    // A signature over another message, a forged signer index, another chain, and a signature
    // that is not a curve point.
    burst[3].block = [0xee; 32];
    burst[17].signer = 99;
    burst[22].chain_id = CHAIN + 1;
    burst[31].signature = [0xff; 96];
    burst[39].signature = burst[38].signature;
    let alone: Vec<_> = burst
        .iter()
        .map(|v| net.verifier.verify_vote(v.clone()))
        .collect();
    let together = net.verifier.verify_votes(burst.clone());
    assert_eq!(together.len(), burst.len());
    for (k, (a, b)) in alone.iter().zip(&together).enumerate() {
        assert_eq!(a, b, "vote {k}");
    }
    let rejected: Vec<usize> = (0..burst.len()).filter(|&k| together[k].is_err()).collect();
    assert_eq!(rejected, vec![3, 17, 22, 31, 39]);
    assert_eq!(
        together[3],
        Err(VerifyError::Signature(BlsError::InvalidSignature))
    );
    assert_eq!(together[17], Err(VerifyError::UnknownValidator(99)));
    assert!(net.verifier.verify_votes(Vec::new()).is_empty());
}

/// A certificate of `kind` for (view, height, block) signed by `signers` of the `net()` fixture.
fn signed_certificate(
    kind: CertificateKind,
    view: u64,
    height: u64,
    block: Hash,
    signers: &[usize],
) -> quasar_wire::Certificate {
    signed_certificate_in(0, kind, view, height, block, signers)
}

/// [`signed_certificate`] in `epoch`.
fn signed_certificate_in(
    epoch: u64,
    kind: CertificateKind,
    view: u64,
    height: u64,
    block: Hash,
    signers: &[usize],
) -> quasar_wire::Certificate {
    use quasar_crypto::bls::Signature;
    let message = quasar_wire::vote_signing_message(
        kind.vote_kind(),
        CHAIN,
        epoch,
        view,
        height,
        &block,
        &EpochDomain::default(),
    );
    let signatures: Vec<Signature> = signers
        .iter()
        .map(|&i| SecretKey::from_seed(&[i as u8 + 1; 32]).sign(&message))
        .collect();
    quasar_wire::Certificate {
        kind,
        chain_id: CHAIN,
        epoch,
        view,
        height,
        block,
        signers: quasar_lanes::bls::bitmap_from_signers(signers.iter().copied(), 4),
        signature: Signature::aggregate(&signatures).unwrap().to_bytes(),
    }
}

/// Validator `me`'s signer (the key [`net`] gives it) behind `guard`.
fn signer_with(me: u32, guard: SigningGuard) -> VoteSigner {
    VoteSigner::new(
        SecretKey::from_seed(&[me as u8 + 1; 32]),
        me,
        CHAIN,
        0,
        EpochDomain::default(),
        guard,
    )
}

/// What `Engine::open` reports as signed above validator `me`'s guard, whose highest recorded
/// view is `guard_view` (0: a fresh guard).
fn signed_above_guard(
    net: &Net,
    store: &quasar_storage::SimStore,
    me: u32,
    guard_view: u64,
) -> Option<u64> {
    let mut guard = SigningGuard::in_memory();
    if guard_view > 0 {
        let intent = quasar_storage::VoteIntent {
            view: guard_view,
            kind: quasar_storage::VoteKind::Nullify,
            block: [0; 32],
        };
        guard.check_and_record(&intent).unwrap();
    }
    let signer = signer_with(me, guard);
    let (_, recovery) = open_engine(net, store.clone(), signer, me);
    recovery.signed_above_guard
}

/// Recovery reports the newest stored view certificate this validator signed above its guard, so
/// the runtime can refuse a signing guard that is older than the store (restored from a backup).
#[test]
fn recovery_reports_kept_certificates_signed_above_the_guard() {
    use quasar_storage::{SimStore, Store};
    let net = net();
    let store = SimStore::new().unwrap();
    for view in [3u64, 7] {
        let c = signed_certificate(
            CertificateKind::Notarization,
            view,
            view,
            [view as u8; 32],
            &[0, 1, 2],
        );
        let bytes = Message::Certificate(c).encode().unwrap();
        store.put_view_certificate(view, 0, &bytes).unwrap();
    }
    for (me, expected) in [(0u32, Some(7)), (2, Some(7)), (3, None)] {
        assert_eq!(
            signed_above_guard(&net, &store, me, 0),
            expected,
            "validator {me}"
        );
    }
}

/// The finalized chain is searched below the tip too: a validator that did not sign the tip's
/// finalization but signed an earlier one is still caught with an older guard.
#[test]
fn recovery_finds_an_own_signature_below_the_tip() {
    use quasar_storage::{FinalizedBlock, SimStore, Store};
    use quasar_wire::{BlockHeader, Proposal};
    let net = net();
    let store = SimStore::new().unwrap();
    let mut parent = GENESIS;
    for (height, signers) in [(1u64, [0usize, 1, 2]), (2, [1, 2, 3])] {
        let header = BlockHeader {
            chain_id: CHAIN,
            epoch: 0,
            view: height,
            height,
            parent_view: height - 1,
            parent,
            proposer: 1,
            timestamp_us: height,
            payload_root: quasar_wire::payload_root(std::iter::empty()),
            state_root: app().committed().1,
        };
        let hash = header.hash();
        let block = Message::Proposal(Proposal {
            header,
            txs: Vec::new(),
            signature: [0; 96],
        });
        let c = signed_certificate(
            CertificateKind::Finalization,
            height,
            height,
            hash,
            &signers,
        );
        store
            .commit_finalized(&FinalizedBlock {
                height,
                hash,
                block: block.encode().unwrap(),
                certificate: Message::Certificate(c).encode().unwrap(),
                tx_hashes: Vec::new(),
            })
            .unwrap();
        parent = hash;
    }
    assert_eq!(
        signed_above_guard(&net, &store, 0, 0),
        Some(1),
        "below the tip"
    );
    assert_eq!(
        signed_above_guard(&net, &store, 3, 0),
        Some(2),
        "the tip itself"
    );
    assert_eq!(
        signed_above_guard(&net, &store, 3, 1),
        Some(2),
        "guard older than the tip"
    );
    assert_eq!(
        signed_above_guard(&net, &store, 0, 1),
        None,
        "guard as new as the signature"
    );
    assert_eq!(
        signed_above_guard(&net, &store, 3, 2),
        None,
        "guard current"
    );
}

/// Epochs of one block: height 1 is epoch 0's boundary block.
const ONE_BLOCK_EPOCHS: EpochSchedule = EpochSchedule::new(1);

/// A core of `me` under one-block epochs, with block B (height 1, view 1) notarized: `me`
/// notarized and finalized it and entered view 2, where B's finalize votes stall. Returns the
/// core and B's hash.
fn boundary_notarized(net: &mut Net, me: u32) -> (Core, Hash) {
    let mut core = core_in(net, me, ONE_BLOCK_EPOCHS);
    core.start(0, 0);
    let leader = core.leader_of(1) as usize;
    let b = net.signers[leader]
        .sign_block(&slot(1, 1, GENESIS, 0), vec![b"tx".to_vec()], [0; 32], 11)
        .unwrap();
    let hash = *b.hash();
    let signed_hashes = b.tx_hashes().to_vec();
    let b = net.verifier.verify_proposal(b.proposal().clone()).unwrap();
    // The payload root's leaves travel with the block, the same whoever built them.
    assert_eq!(b.tx_hashes(), [quasar_wire::tx_hash(b"tx")]);
    assert_eq!(signed_hashes, b.tx_hashes());
    core.handle(100, Input::Proposal(Box::new(b)));
    for s in (0..4).filter(|&s| s != me as usize && s != leader) {
        let v = vote(net, s, VoteKind::Notarize, 1, 1, hash);
        core.handle(200, Input::Vote(v));
    }
    assert_eq!(core.view(), 2, "B's notarization moves the core on");
    (core, hash)
}

#[test]
fn above_an_epoch_boundary_leaders_propose_seals_without_transactions() {
    let mut net = net_with(ONE_BLOCK_EPOCHS);
    let leader2 = core_in(&net, 0, ONE_BLOCK_EPOCHS).leader_of(2);
    let (mut core, b) = boundary_notarized(&mut net, leader2);
    let actions = core.handle(
        10_000,
        Input::Timer {
            view: 2,
            kind: TimerKind::Propose,
        },
    );
    let slot = actions
        .iter()
        .find_map(|a| match a {
            Action::Propose(slot) => Some(slot.clone()),
            _ => None,
        })
        .expect("the leader of view 2 proposes");
    assert_eq!((slot.height, slot.parent, slot.seal), (2, b, true));
}

#[test]
fn a_finalized_seal_finalizes_the_boundary_block_and_ends_the_epoch() {
    let mut net = net_with(ONE_BLOCK_EPOCHS);
    let me = follower(&core_in(&net, 0, ONE_BLOCK_EPOCHS), 2);
    let (mut core, b) = boundary_notarized(&mut net, me);
    let leader = core.leader_of(2) as usize;
    // A block above the boundary with transactions is not notarized …
    let full = net.signers[leader]
        .sign_block(&slot(2, 2, b, 1), vec![b"tx2".to_vec()], [0; 32], 12)
        .unwrap();
    let full = net
        .verifier
        .verify_proposal(full.proposal().clone())
        .unwrap();
    let mut other = boundary_notarized(&mut net_with(ONE_BLOCK_EPOCHS), me).0;
    let actions = other.handle(300, Input::Proposal(Box::new(full)));
    assert!(votes(&actions)
        .iter()
        .all(|(k, _)| *k != VoteKind::Notarize));
    // … a seal is.
    let mut leader_signer = VoteSigner::new(
        SecretKey::from_seed(&[leader as u8 + 1; 32]),
        leader as u32,
        CHAIN,
        0,
        EpochDomain::default(),
        SigningGuard::in_memory(),
    );
    let seal = leader_signer
        .sign_block(
            &ProposalSlot {
                seal: true,
                ..slot(2, 2, b, 1)
            },
            vec![],
            [0; 32],
            12,
        )
        .unwrap();
    let seal_hash = *seal.hash();
    let seal = net
        .verifier
        .verify_proposal(seal.proposal().clone())
        .unwrap();
    let actions = handle_executing(&mut core, 300, Input::Proposal(Box::new(seal)), true);
    assert_eq!(votes(&actions), vec![(VoteKind::Notarize, 2)]);
    let mut actions = Vec::new();
    for s in (0..4).filter(|&s| s != me as usize) {
        let v = vote(&mut net, s, VoteKind::Finalize, 2, 2, seal_hash);
        actions.extend(core.handle(400, Input::Vote(v)));
    }
    let finalized: Vec<u64> = actions
        .iter()
        .filter_map(|a| match a {
            Action::Finalized(f) => Some(f.proposal.header.height),
            _ => None,
        })
        .collect();
    assert_eq!(finalized, vec![1], "the boundary block, never the seal");
    match actions.last() {
        Some(Action::EpochEnded {
            boundary,
            certificate,
            seals,
        }) => {
            assert_eq!((boundary.height, boundary.hash), (1, b));
            assert_eq!(certificate.block, seal_hash);
            assert_eq!(seals.len(), 1);
            assert_eq!(seals[0].header.hash(), seal_hash);
        }
        other => panic!("the epoch ends last, got {other:?}"),
    }
    assert!(core.ended());
    let late = vote(&mut net, me as usize, VoteKind::Notarize, 2, 2, seal_hash);
    assert!(
        core.handle(500, Input::Vote(late)).is_empty(),
        "a finished core handles nothing"
    );
}

#[test]
fn a_message_of_a_later_epoch_makes_a_core_fetch_what_it_missed() {
    let mut net = net_with(ONE_BLOCK_EPOCHS);
    let mut core = core_in(&net, 0, ONE_BLOCK_EPOCHS);
    core.start(0, 0);
    let view = ONE_BLOCK_EPOCHS.first_view(1);
    net.signers[1].enter_epoch(1, Some(1), EpochDomain::default());
    let ahead = vote(&mut net, 1, VoteKind::Nullify, view, 0, [0; 32]);
    let ahead = net.verifier.verify_vote(ahead.vote().clone()).unwrap();
    let actions = core.handle(10, Input::Vote(ahead.clone()));
    assert!(
        matches!(actions.as_slice(), [Action::Fetch { from_height: 1, .. }]),
        "{actions:?}"
    );
    // A message whose epoch's set is not decided here (sets from state, two epochs ahead) is
    // not verified, but still says the others moved on: the core fetches once per retry
    // interval, and ignores one of its own epoch or an earlier one.
    let mut later = core_in(&net, 0, ONE_BLOCK_EPOCHS);
    later.start(0, 0);
    let actions = later.handle(10, Input::LaterEpoch(3));
    assert!(
        matches!(actions.as_slice(), [Action::Fetch { from_height: 1, .. }]),
        "{actions:?}"
    );
    assert!(
        later.handle(11, Input::LaterEpoch(3)).is_empty(),
        "not again within the retry interval"
    );
    assert!(later.handle(10_000_000, Input::LaterEpoch(0)).is_empty());
    // Such a message: a verifier whose sets are decided through epoch 0 refuses epoch 1's
    // vote as not known (not as invalid), and verifies it once epoch 1's set is decided.
    let sets =
        quasar_consensus::EpochSets::decided_through(net.verifier.members(0).as_ref().clone(), 0);
    let deciding = Verifier::with_sets(
        sets.clone(),
        GENESIS,
        CHAIN,
        ONE_BLOCK_EPOCHS,
        BlockLimits {
            max_txs: 100,
            max_bytes: 1 << 20,
        },
    );
    let two_ahead = ahead.vote().clone();
    assert!(matches!(
        deciding.verify_vote(two_ahead.clone()),
        Err(VerifyError::SetNotKnown(1))
    ));
    sets.decide(
        &ONE_BLOCK_EPOCHS,
        1,
        net.verifier.members(1).as_ref().clone(),
    )
    .unwrap();
    deciding
        .verify_vote(two_ahead)
        .expect("verifies once the set is known");
    // A vote whose view lies outside its epoch never verifies.
    net.signers[2].enter_epoch(1, Some(2), EpochDomain::default());
    let misplaced = vote(&mut net, 2, VoteKind::Nullify, 3, 0, [0; 32]);
    assert!(net.verifier.verify_vote(misplaced.vote().clone()).is_err());
}

/// Epoch 0's checkpoint under two-block epochs: boundary block B (height 2, view 2, over a
/// parent this node never saw), a seal S above it (height 3, view 3), and the finalization of
/// S, each verified alone.
fn checkpoint_parts(
    net: &mut Net,
) -> (
    VerifiedProposal,
    VerifiedProposal,
    quasar_consensus::VerifiedCertificate,
) {
    let schedule = EpochSchedule::new(2);
    let probe = core_in(net, 0, schedule);
    let sign = |net: &mut Net, slot: ProposalSlot| {
        let leader = probe.leader_of(slot.view) as usize;
        let block = net.signers[leader]
            .sign_block(&slot, vec![], [0; 32], 20)
            .unwrap();
        net.verifier
            .verify_proposal(block.proposal().clone())
            .unwrap()
    };
    let boundary = sign(net, slot(2, 2, [7; 32], 1));
    let seal = sign(
        net,
        ProposalSlot {
            seal: true,
            ..slot(3, 3, *boundary.hash(), 2)
        },
    );
    let certificate = signed_certificate(
        CertificateKind::Finalization,
        3,
        3,
        *seal.hash(),
        &[0, 1, 2],
    );
    let certificate = net.verifier.verify_certificate(certificate).unwrap();
    (boundary, seal, certificate)
}

/// A core of validator 3 under two-block epochs at genesis that has seen a finalization of
/// epoch 5: the chain is far enough ahead for its peers to have pruned epoch 0.
fn core_behind_by_five_epochs(net: &Net) -> Core {
    let schedule = EpochSchedule::new(2);
    let mut core = core_in(net, 3, schedule);
    core.start(0, 0);
    let ahead = signed_certificate_in(
        5,
        CertificateKind::Finalization,
        schedule.first_view(5),
        11,
        [9; 32],
        &[0, 1, 2],
    );
    let ahead = net.verifier.verify_certificate(ahead).unwrap();
    core.handle(50, Input::Certificate(ahead));
    assert_eq!(core.reached_epoch(), 5);
    core
}

#[test]
fn a_checkpoint_takes_the_boundary_block_without_its_ancestors_and_ends_the_epoch() {
    let schedule = EpochSchedule::new(2);
    let mut net = net_with(schedule);
    let (boundary, seal, certificate) = checkpoint_parts(&mut net);
    let mut core = core_behind_by_five_epochs(&net);
    let checkpoint = Checkpoint {
        boundary: boundary.clone(),
        seals: vec![seal.clone()],
        certificate,
        state_proof: vec![7, 7],
    };
    let actions = core.handle(100, Input::Checkpoint(Box::new(checkpoint)));
    match actions.as_slice() {
        [Action::Finalized(block), Action::Fetch { from_height: 3, .. }, Action::EpochEnded {
            boundary: tip,
            seals,
            ..
        }] => {
            assert_eq!(
                block.checkpoint,
                Some(vec![7, 7]),
                "the application gets the checkpoint's state proof"
            );
            assert_eq!(block.hash, *boundary.hash());
            assert_eq!((tip.height, tip.hash), (2, *boundary.hash()));
            assert_eq!(seals.len(), 1);
            assert_eq!(seals[0].header.hash(), *seal.hash());
        }
        other => panic!("checkpoint, fetch, epoch end: got {other:?}"),
    }
    assert!(core.ended());
}

#[test]
fn a_checkpoint_whose_links_or_certificate_do_not_hold_is_ignored() {
    let schedule = EpochSchedule::new(2);
    let mut net = net_with(schedule);
    let (boundary, seal, finalization) = checkpoint_parts(&mut net);
    let notarization = net
        .verifier
        .verify_certificate(signed_certificate(
            CertificateKind::Notarization,
            3,
            3,
            *seal.hash(),
            &[0, 1, 2],
        ))
        .unwrap();
    let cases = [
        (
            "the seal between is missing",
            boundary.clone(),
            vec![],
            finalization.clone(),
        ),
        (
            "a notarization finalizes nothing",
            boundary.clone(),
            vec![seal.clone()],
            notarization,
        ),
        (
            "the seal is no boundary block",
            seal.clone(),
            vec![boundary.clone()],
            finalization.clone(),
        ),
    ];
    for (what, boundary, seals, certificate) in cases {
        let mut core = core_behind_by_five_epochs(&net);
        let checkpoint = Checkpoint {
            boundary,
            seals,
            certificate,
            state_proof: Vec::new(),
        };
        let actions = core.handle(100, Input::Checkpoint(Box::new(checkpoint)));
        assert!(
            !actions
                .iter()
                .any(|a| matches!(a, Action::Finalized(_) | Action::EpochEnded { .. })),
            "{what}: {actions:?}"
        );
        assert!(!core.ended(), "{what}");
    }
    // Without proof that the chain is five epochs ahead, no honest peer has pruned epoch 0: a
    // checkpoint offered that early would only make this node skip blocks.
    let mut core = core_in(&net, 3, schedule);
    core.start(0, 0);
    let checkpoint = Checkpoint {
        boundary: boundary.clone(),
        seals: vec![seal.clone()],
        certificate: finalization.clone(),
        state_proof: Vec::new(),
    };
    let actions = core.handle(100, Input::Checkpoint(Box::new(checkpoint.clone())));
    assert!(!actions.iter().any(|a| matches!(a, Action::Finalized(_))));
    // A message of epoch 5 whose set this node has not learned (a chain whose sets come from
    // its registry) counts, unverified, as the chain being there: the checkpoint is taken.
    core.handle(100, Input::LaterEpoch(5));
    assert_eq!(core.reached_epoch(), 5);
    let actions = core.handle(100, Input::Checkpoint(Box::new(checkpoint)));
    assert!(actions.iter().any(|a| matches!(a, Action::Finalized(_))));
    // A node one block below the boundary syncs it as a block: no checkpoint is needed.
    let mut core = Core::new(
        CoreConfig {
            schedule,
            ..config(3)
        },
        net.validators.clone(),
        Tip {
            height: 1,
            hash: [7; 32],
            view: 1,
            timestamp_us: 0,
        },
    );
    core.start(0, 0);
    core.saw_epoch(5);
    let checkpoint = Checkpoint {
        boundary,
        seals: vec![seal],
        certificate: finalization,
        state_proof: Vec::new(),
    };
    let actions = core.handle(100, Input::Checkpoint(Box::new(checkpoint)));
    assert!(!actions.iter().any(|a| matches!(a, Action::Finalized(_))));
}

/// A host that records what a validator's engine sends and refuses; every proposal it asks
/// for carries one transaction, `tx`, so two incarnations given different `tx` would build
/// different blocks.
struct Recorder {
    now_us: u64,
    tx: Vec<u8>,
    proposals: Vec<Hash>,
    refusals: Vec<String>,
    propose_timers: Vec<u64>,
    /// What [`quasar_node::engine::Host::all_peers_connected`] answers.
    all_peers_connected: bool,
}

impl Recorder {
    fn new(now_us: u64, tx: &[u8]) -> Recorder {
        Recorder {
            now_us,
            tx: tx.to_vec(),
            proposals: Vec::new(),
            refusals: Vec::new(),
            propose_timers: Vec::new(),
            all_peers_connected: true,
        }
    }
}

impl quasar_node::engine::Host for Recorder {
    fn now_us(&self) -> u64 {
        self.now_us
    }
    fn broadcast(&mut self, message: Message, _bytes: Vec<u8>) {
        if let Message::Proposal(p) = message {
            self.proposals.push(p.header.hash());
        }
    }
    fn set_timer(&mut self, view: u64, kind: TimerKind, _at_us: u64) {
        if kind == TimerKind::Propose {
            self.propose_timers.push(view);
        }
    }
    fn fetch(&mut self, _block: Hash, _from_height: u64) {}
    fn block_txs(&mut self, _slot: &ProposalSlot) -> Vec<Vec<u8>> {
        vec![self.tx.clone()]
    }
    fn finalized(&mut self, _block: &quasar_node::engine::Published) {}
    fn evidence(&mut self, _evidence: &quasar_consensus::Evidence, _stored: Result<bool, String>) {}
    fn refused(&mut self, _view: u64, error: &quasar_node::signer::SignError) {
        self.refusals.push(error.to_string());
    }
    fn all_peers_connected(&self) -> bool {
        self.all_peers_connected
    }
}

/// Starts validator `me` (the leader of the first view) from `store` and the guard file in
/// `guard_dir`, as a process start does, and lets its propose timer fire: the proposals it
/// broadcast and the refusals it met.
fn start_leader(
    net: &Net,
    store: &quasar_storage::SimStore,
    guard_dir: &std::path::Path,
    me: u32,
    host: &mut Recorder,
) {
    let signer = signer_with(me, SigningGuard::open(guard_dir, &[7; 32]).unwrap());
    let (mut engine, _) = open_engine(net, store.clone(), signer, me);
    engine.start(host).unwrap();
    let view = engine.core().view();
    assert_eq!(
        host.propose_timers,
        [view],
        "validator {me} leads view {view}"
    );
    engine
        .handle(
            host,
            Input::Timer {
                view,
                kind: TimerKind::Propose,
            },
        )
        .unwrap();
}

/// Regression: a routine restart fired the critical double-sign alert. The leader of a view
/// that was killed after proposing asked its guard, once restarted, to sign a new block for the
/// same view, and the guard refused. Now the restarted leader finds the block its guard names in
/// its store and proposes it again: the same hash, no refusal.
#[test]
fn a_leader_restarted_in_its_view_proposes_the_same_block_again() {
    use quasar_storage::{Crash, SimStore};
    let net = net();
    let leader = core_for(&net, 0).leader_of(1);
    let store = SimStore::new().unwrap();
    let guard_dir = tempfile::tempdir().unwrap();

    let mut first = Recorder::new(1_000, b"before the crash");
    start_leader(&net, &store, guard_dir.path(), leader, &mut first);
    assert_eq!(first.proposals.len(), 1, "refusals: {:?}", first.refusals);
    // kill -9: whatever was not flushed is gone.
    store.crash(Crash::LoseUnflushed).unwrap();

    let mut second = Recorder::new(9_000, b"after the restart");
    start_leader(&net, &store, guard_dir.path(), leader, &mut second);
    assert_eq!(second.refusals, Vec::<String>::new());
    assert_eq!(second.proposals, first.proposals, "the same block again");
}

/// A leader whose guard recorded its proposal but whose store never got the block (killed
/// between the two) stays silent in that view: that signature never left the process, and the
/// guard would refuse any other block.
#[test]
fn a_restarted_leader_without_its_stored_proposal_stays_silent() {
    use quasar_storage::SimStore;
    let net = net();
    let leader = core_for(&net, 0).leader_of(1);
    let guard_dir = tempfile::tempdir().unwrap();
    SigningGuard::open(guard_dir.path(), &[7; 32])
        .unwrap()
        .check_and_record(&quasar_storage::VoteIntent {
            view: 1,
            kind: quasar_storage::VoteKind::Notarize,
            block: [5; 32],
        })
        .unwrap();

    let mut host = Recorder::new(9_000, b"after the restart");
    start_leader(
        &net,
        &SimStore::new().unwrap(),
        guard_dir.path(),
        leader,
        &mut host,
    );
    assert_eq!(host.refusals, Vec::<String>::new());
    assert_eq!(host.proposals, Vec::<Hash>::new());
}

/// Validator `me`'s engine on an empty store and an in-memory guard, started.
fn started_engine(
    net: &Net,
    me: u32,
    host: &mut Recorder,
) -> quasar_node::engine::Engine<quasar_storage::SimStore, ChainApplication> {
    let signer = signer_with(me, SigningGuard::in_memory());
    let store = quasar_storage::SimStore::new().unwrap();
    let (mut engine, _) = open_engine(net, store, signer, me);
    engine.start(host).unwrap();
    engine
}

/// Doppelganger protection: a vote signed with this validator's key that its guard never
/// recorded, in a view above its fence, comes from another process holding the key; the engine
/// stops with an error that says so. Its own vote seen again is no alarm, and while it listens
/// with a new guard such a vote only moves the fence.
#[test]
fn a_vote_signed_with_this_key_that_its_guard_never_recorded_stops_the_engine() {
    use quasar_node::engine::EngineError;
    let mut net = net();
    let me = 1;
    let mut host = Recorder::new(1_000, b"tx");
    let mut engine = started_engine(&net, me, &mut host);
    let view = engine.core().view();
    let timeout = Input::Timer {
        view,
        kind: TimerKind::Timeout,
    };
    engine.handle(&mut host, timeout).unwrap();
    // `net`'s signer for `me` is a second process with the same key and a guard of its own.
    let own = vote(&mut net, me as usize, VoteKind::Nullify, view, 0, [0; 32]);
    engine.handle(&mut host, Input::Vote(own)).unwrap();
    let foreign = vote(&mut net, me as usize, VoteKind::Notarize, view, 1, [3; 32]);
    match engine.handle(&mut host, Input::Vote(foreign.clone())) {
        Err(e @ EngineError::SecondInstance { .. }) => {
            assert!(e
                .to_string()
                .contains("another instance is signing with this key"))
        }
        other => panic!("expected SecondInstance, got {other:?}"),
    }

    let mut listening = started_engine(&net, me, &mut host);
    listening.listen_before_signing(1_000, 1_000_000);
    listening.handle(&mut host, Input::Vote(foreign)).unwrap();
    assert!(listening.listening(), "still listening: no certificate yet");
}

/// A validator listening with a new guard that hears no certificate gives up (and signs
/// without a fence) only after ten listening periods with every peer connected: alone, it keeps
/// waiting however long the silence, since a network that is down says nothing about what the
/// chain certified (a fresh-user trial saw a validator restarted alone on an empty data
/// directory sign unfenced and equivocate).
#[test]
fn a_listening_validator_gives_up_only_with_every_peer_connected() {
    let net = net();
    let me = 2;
    let period = 1_000_000;
    let mut host = Recorder::new(1_000, b"tx");
    let mut engine = started_engine(&net, me, &mut host);
    engine.listen_before_signing(1_000, period);
    let tick = |engine: &mut quasar_node::engine::Engine<_, _>, host: &mut Recorder, at: u64| {
        host.now_us = at;
        let view = engine.core().view();
        let retry = Input::Timer {
            view,
            kind: TimerKind::Retry,
        };
        engine.handle(host, retry).unwrap();
    };
    host.all_peers_connected = false;
    for k in 1..=30 {
        tick(&mut engine, &mut host, 1_000 + k * period);
    }
    assert!(engine.listening(), "alone for 30 periods: still listening");
    host.all_peers_connected = true;
    let start = 1_000 + 30 * period;
    tick(&mut engine, &mut host, start + 9 * period);
    assert!(engine.listening(), "9 periods connected: still listening");
    tick(&mut engine, &mut host, start + 11 * period);
    assert!(
        !engine.listening(),
        "10 periods connected and silent: gives up"
    );
}

/// A listening validator fixes the view it must see the network pass when its listening period
/// ends (one above the highest certificate it heard). Its earlier incarnation signed at most
/// there, so a message signed with its key in that view only joins the fence; one in a later
/// view was signed by another process that is signing now, and the engine stops.
#[test]
fn a_listening_validator_that_hears_its_key_sign_after_its_period_stops() {
    use quasar_node::engine::EngineError;
    let mut net = net();
    let me = 1;
    let period = 1_000_000;
    let mut host = Recorder::new(1_000, b"tx");
    let mut engine = started_engine(&net, me, &mut host);
    engine.listen_before_signing(1_000, period);
    let nullified = signed_certificate(CertificateKind::Nullification, 1, 0, [0; 32], &[0, 2, 3]);
    let nullified = net.verifier.verify_certificate(nullified).unwrap();
    engine
        .handle(&mut host, Input::Certificate(nullified))
        .unwrap();
    host.now_us = 1_000 + period + 1;
    let view = engine.core().view();
    assert_eq!(view, 2, "the nullification moved the network to view 2");
    let retry = Input::Timer {
        view,
        kind: TimerKind::Retry,
    };
    engine.handle(&mut host, retry).unwrap();
    assert!(engine.listening(), "waits for the network to pass view 2");

    // `net`'s signer for `me` is the other process.
    let in_view_2 = vote(&mut net, me as usize, VoteKind::Nullify, 2, 0, [0; 32]);
    engine.handle(&mut host, Input::Vote(in_view_2)).unwrap();
    assert!(engine.listening());
    let in_view_3 = vote(&mut net, me as usize, VoteKind::Nullify, 3, 0, [0; 32]);
    match engine.handle(&mut host, Input::Vote(in_view_3)) {
        Err(e @ EngineError::SecondInstance { view: 3, .. }) => assert!(e
            .to_string()
            .contains("another instance is signing with this key")),
        other => panic!("expected SecondInstance in view 3, got {other:?}"),
    }
}

/// The relay cache keeps each signer's proposals and votes of the last few views and serves one
/// signer's from a view on: nothing of other signers or epochs, nothing below the window, at most
/// `MAX_RELAY_ITEMS` per signer, proposals read back from the block store.
#[test]
fn the_relay_cache_serves_one_signers_recent_messages() {
    use quasar_node::relay::{RelayCache, MAX_RELAY_ITEMS, RELAY_VIEWS};
    use quasar_storage::Store;
    use quasar_wire::{decode, MessageRef, RelayRequest};
    let mut net = net();
    let mut cache = RelayCache::new();
    let store = quasar_storage::SimStore::new().unwrap();
    let leader = core_for(&net, 0).leader_of(1) as usize;
    let proposal = net.signers[leader]
        .sign_block(&slot(1, 1, GENESIS, 0), vec![], [0; 32], 11)
        .unwrap();
    let encoded = Message::Proposal(proposal.proposal().clone())
        .encode()
        .unwrap();
    store.put_block(1, proposal.hash(), &encoded).unwrap();
    let mut fresh = RelayCache::new();
    fresh.record(&Input::Proposal(Box::new(proposal.clone())), 1);
    cache.record(&Input::Proposal(Box::new(proposal)), 1);
    let top = 10;
    for view in 2..=top {
        for signer in 0..4 {
            let block = [view as u8; 32];
            for kind in [VoteKind::Notarize, VoteKind::Finalize] {
                let vote = vote(&mut net, signer, kind, view, view, block);
                cache.record(&Input::Vote(vote), view);
            }
        }
    }
    let nullified = signed_certificate(CertificateKind::Nullification, top, 0, [0; 32], &[0, 1, 2]);
    let nullified = net.verifier.verify_certificate(nullified).unwrap();
    cache.record(&Input::Certificate(nullified), top);
    let far = vote(&mut net, 3, VoteKind::Nullify, 1 << 40, 0, [0; 32]);
    cache.record(&Input::Vote(far), top);
    let served = |signer: usize, from_view: u64, epoch: u64| -> Vec<(u8, u32, u64)> {
        let request = RelayRequest {
            epoch,
            from_view,
            signer: signer as u32,
        };
        cache
            .serve(&request, &store)
            .items
            .iter()
            .map(|item| match decode(item).unwrap() {
                MessageRef::Vote(v) => (v.kind() as u8, v.signer(), v.view()),
                MessageRef::Proposal(p) => (0, p.header().proposer, p.header().view),
                MessageRef::Certificate(c) => (9, u32::MAX, c.view()),
                other => panic!("relayed {:?}", other.message_type()),
            })
            .collect()
    };
    // The highest certificate goes at the end of every reply.
    let request = RelayRequest {
        epoch: 0,
        from_view: top,
        signer: 2,
    };
    let reply = cache.serve(&request, &store).items;
    assert!(matches!(
        decode(reply.last().unwrap()).unwrap(),
        MessageRef::Certificate(c) if c.view() == top
    ));
    // The asking side keeps the asked signer's messages and one certificate, nothing else.
    let mut stuffed = reply.clone();
    stuffed.extend(
        cache
            .serve(
                &RelayRequest {
                    signer: 1,
                    ..request.clone()
                },
                &store,
            )
            .items,
    );
    let kept = RelayCache::relevant(&request, stuffed.iter().map(Vec::as_slice));
    assert_eq!(kept, reply.iter().map(Vec::as_slice).collect::<Vec<_>>());
    let served = |signer: usize, from_view: u64, epoch: u64| -> Vec<(u8, u32, u64)> {
        served(signer, from_view, epoch)
            .into_iter()
            .filter(|(kind, _, _)| *kind != 9)
            .collect()
    };
    let window: Vec<(u8, u32, u64)> = (top - RELAY_VIEWS..=top)
        .flat_map(|view| [(1, 2, view), (2, 2, view)])
        .collect();
    assert_eq!(served(2, 0, 0), window, "the window, oldest first");
    assert!(window.len() <= MAX_RELAY_ITEMS);
    assert_eq!(served(2, top, 0), vec![(1, 2, top), (2, 2, top)]);
    assert_eq!(served(2, 0, 1), Vec::new(), "another epoch");
    assert_eq!(served(2, top + 1, 0), Vec::new(), "nothing from the future");
    // A validly signed vote far above this node's view was not kept, and pushed nothing out.
    assert_eq!(served(2, 0, 0), window, "the window is this node's view's");
    assert!(served(3, top + 1, 0).is_empty());
    assert!(
        !served(leader, 0, 0).contains(&(0, leader as u32, 1)),
        "the proposal of view 1 fell out of the window"
    );

    let request = RelayRequest {
        epoch: 0,
        from_view: 0,
        signer: leader as u32,
    };
    let items = fresh.serve(&request, &store).items;
    assert_eq!(
        items,
        vec![encoded.clone()],
        "the proposal, from the block store"
    );
    // An equivocating signer: a fresh guard per vote, a different block each time, one view.
    for k in 0..2 * MAX_RELAY_ITEMS {
        let (vote, _) = signer_with(leader as u32, SigningGuard::in_memory())
            .sign_vote(VoteKind::Notarize, 100, 1, [k as u8; 32])
            .unwrap();
        fresh.record(&Input::Vote(vote), 100);
    }
    let items = fresh.serve(&request, &store).items;
    assert_eq!(
        items.len(),
        MAX_RELAY_ITEMS,
        "at most MAX_RELAY_ITEMS per signer"
    );
    assert!(
        !items.contains(&encoded),
        "view 100 pushed the proposal of view 1 out of the window"
    );
}

/// A pruning validator keeps the state versions of its retained epochs and deletes the older
/// ones as blocks commit; an archive validator keeps them all. Both reach the same roots.
#[test]
fn the_application_prunes_state_versions_past_the_retained_epochs() {
    use quasar_app::{address_of, Action, Transaction};
    use quasar_consensus::epoch::RETAINED_EPOCHS;
    use quasar_crypto::mldsa::{MlDsa65, SecretKey as MlDsaKey};
    use quasar_wire::{payload_root_of_hashes, BlockHeader, Proposal};
    use rand::SeedableRng;

    const EPOCH: u64 = 2;
    let sender = MlDsaKey::<MlDsa65>::from_seed(&[7; 32]);
    let from = address_of(sender.public_key());
    let open = |prune: bool| {
        let db = quasar_storage::SledStore::temporary().unwrap();
        let state =
            quasar_app::State::open(db.state().unwrap(), rules(), [(from, 1_000_000)], []).unwrap();
        let cache = Arc::new(quasar_app::VerificationCache::new(CHAIN, 64));
        let app = ChainApplication::new(state, cache, 1 << 20);
        let app = if prune {
            app.prune_with(EpochSchedule::new(EPOCH))
        } else {
            app
        };
        (db, app)
    };
    let (pruned_db, mut pruned) = open(true);
    let (archive_db, mut archive) = open(false);
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
    let mut parent = GENESIS;
    let top = EPOCH * (RETAINED_EPOCHS + 3);
    for height in 1..=top {
        let tx = Transaction {
            chain_id: CHAIN,
            nonce: height - 1,
            fee: 1,
            sender: from,
            public_key: (height == 1).then(|| sender.public_key().clone()),
            action: Action::Transfer {
                to: [height as u8; 32],
                amount: 10,
            },
        }
        .sign(&sender, &mut rng)
        .unwrap();
        let candidates = vec![tx.as_bytes().to_vec()];
        let payload = pruned.propose(&parent, height, &candidates).unwrap();
        assert_eq!(payload.txs.len(), 1, "the transfer applies");
        let proposal = Proposal {
            header: BlockHeader {
                chain_id: CHAIN,
                epoch: (height - 1) / EPOCH,
                view: height,
                height,
                parent_view: height - 1,
                parent,
                proposer: 0,
                timestamp_us: height,
                payload_root: payload_root_of_hashes(&payload.tx_hashes),
                state_root: payload.state_root,
            },
            txs: payload.txs,
            signature: [0; 96],
        };
        let hash = proposal.header.hash();
        pruned.adopt(&hash);
        for app in [&mut pruned, &mut archive] {
            app.finalize(&hash, &proposal, &payload.tx_hashes).unwrap();
            app.commit().unwrap();
        }
        assert_eq!(
            pruned.committed(),
            archive.committed(),
            "same root at {height}"
        );
        parent = hash;
    }
    let schedule = EpochSchedule::new(EPOCH);
    let kept_from = schedule.retained_from(schedule.epoch_of(top));
    assert!(kept_from > 1, "the run outlives the retention window");
    let roots = |db: &quasar_storage::SledStore| {
        let tree = db.state().unwrap();
        (0..=top)
            .filter(|v| tree.root(*v).unwrap().is_some())
            .collect::<Vec<u64>>()
    };
    assert_eq!(roots(&pruned_db), (kept_from..=top).collect::<Vec<_>>());
    assert_eq!(roots(&archive_db), (0..=top).collect::<Vec<_>>());
    let size = |db: &quasar_storage::SledStore| db.state().unwrap().size().unwrap().1;
    assert!(
        size(&pruned_db) < size(&archive_db),
        "pruned nodes are gone"
    );
}

/// The node's check of a report of equivocation ([`VoteEvidence`]): two conflicting votes,
/// really signed by one validator in one view, prove its key; the same vote twice, votes of
/// another kind than the record says, a forged signature, a record naming another signer,
/// proposal evidence and bytes that are not a record prove nothing.
#[test]
fn conflicting_votes_prove_the_signer_and_nothing_else_does() {
    use quasar_app::EvidenceCheck;
    use quasar_node::application::VoteEvidence;
    use quasar_storage::evidence::kind;
    use quasar_storage::EvidenceRecord;

    let net = net();
    let check = VoteEvidence(net.verifier.clone());
    // Validator 1's key (the keys of `net` are seeded 1, 2, 3, 4).
    let key = SecretKey::from_seed(&[2; 32]);
    let vote = |kind: VoteKind, block: u8| {
        let nullify = kind == VoteKind::Nullify;
        let mut vote = quasar_wire::Vote {
            kind,
            chain_id: CHAIN,
            epoch: 0,
            view: 5,
            height: if nullify { 0 } else { 3 },
            block: if nullify { [0; 32] } else { [block; 32] },
            signer: 1,
            signature: [0; 96],
        };
        vote.signature = key
            .sign(&vote.signing_message(&EpochDomain::default()))
            .to_bytes();
        vote
    };
    let record = |code: u8, signer: u32, a: &quasar_wire::Vote, b: &quasar_wire::Vote| {
        EvidenceRecord {
            kind: code,
            signer,
            view: 5,
            first: Message::Vote(a.clone()).encode().unwrap(),
            second: Message::Vote(b.clone()).encode().unwrap(),
        }
        .encode()
        .unwrap()
    };
    let (n1, n2) = (vote(VoteKind::Notarize, 1), vote(VoteKind::Notarize, 2));
    let (f1, nullify) = (vote(VoteKind::Finalize, 1), vote(VoteKind::Nullify, 0));

    for proof in [
        record(kind::CONFLICTING_NOTARIZE, 1, &n1, &n2),
        record(kind::FINALIZE_AND_NULLIFY, 1, &nullify, &f1),
    ] {
        let offence = check.check(&proof).expect("proves");
        assert_eq!(offence.bls_public_key, key.public_key().to_bytes());
        assert_eq!((offence.epoch, offence.view), (0, 5));
    }
    let mut forged = n2.clone();
    forged.signature = key.sign(b"something else").to_bytes();
    let refused = [
        (
            record(kind::CONFLICTING_NOTARIZE, 1, &n1, &n1),
            "do not conflict",
        ),
        (
            record(kind::CONFLICTING_FINALIZE, 1, &n1, &n2),
            "do not conflict",
        ),
        (
            record(kind::CONFLICTING_NOTARIZE, 2, &n1, &n2),
            "do not conflict",
        ),
        (
            record(kind::CONFLICTING_NOTARIZE, 1, &n1, &forged),
            "does not verify",
        ),
        (
            record(kind::CONFLICTING_PROPOSAL, 1, &n1, &n2),
            "conflicting votes",
        ),
        (b"not a record".to_vec(), "evidence record"),
    ];
    // Two proposals of one view by one leader are reported as the notarize votes they carry,
    // which prove the leader's key; two copies of one proposal prove nothing.
    let proposal = |payload: u8| {
        let mut p = quasar_wire::Proposal {
            header: quasar_wire::BlockHeader {
                chain_id: CHAIN,
                epoch: 0,
                view: 5,
                height: 3,
                parent_view: 4,
                parent: [7; 32],
                proposer: 1,
                timestamp_us: 1,
                payload_root: [payload; 32],
                state_root: [0; 32],
            },
            txs: Vec::new(),
            signature: [0; 96],
        };
        let hash = p.header.hash();
        let vote = quasar_consensus::proposer_vote(&p, &hash);
        p.signature = key
            .sign(&vote.signing_message(&EpochDomain::default()))
            .to_bytes();
        Message::Proposal(p).encode().unwrap()
    };
    let proposals = |a: u8, b: u8| EvidenceRecord {
        kind: kind::CONFLICTING_PROPOSAL,
        signer: 1,
        view: 5,
        first: proposal(a),
        second: proposal(b),
    };
    let as_votes = quasar_node::application::proposals_as_votes(proposals(1, 2)).unwrap();
    assert_eq!(as_votes.kind, kind::CONFLICTING_NOTARIZE);
    assert!(as_votes.first.len() < 300, "votes, not blocks");
    let offence = check.check(&as_votes.encode().unwrap()).expect("proves");
    assert_eq!(offence.bls_public_key, key.public_key().to_bytes());
    let same = quasar_node::application::proposals_as_votes(proposals(1, 1)).unwrap();
    assert!(check.check(&same.encode().unwrap()).is_err());
    let not_proposals = EvidenceRecord {
        kind: kind::CONFLICTING_PROPOSAL,
        signer: 1,
        view: 5,
        first: Message::Vote(n1.clone()).encode().unwrap(),
        second: Message::Vote(n2.clone()).encode().unwrap(),
    };
    assert!(quasar_node::application::proposals_as_votes(not_proposals).is_err());
    for (bytes, says) in refused {
        let error = check.check(&bytes).expect_err("proves nothing");
        assert!(error.contains(says), "{error}");
    }
}
