//! The independent safety checker must catch every kind of violation: each test plants one in an
//! otherwise clean observation and expects exactly that report.

use quasar_crypto::bls::{SecretKey, Signature};
use quasar_crypto::hash::Hash;
use quasar_lanes::bls::bitmap_from_signers;
use quasar_node::sim::checker::{
    check, ChainEntry, HeldEvidence, Observation, ObservedSet, Violation,
};
use quasar_wire::{BlockHeader, Certificate, CertificateKind, EpochDomain, Vote, VoteKind};

const GENESIS: Hash = [0xee; 32];

fn keys() -> Vec<SecretKey> {
    (0..4u8)
        .map(|i| SecretKey::from_seed(&[i + 1; 32]))
        .collect()
}

fn vote(key: &SecretKey, signer: u32, kind: VoteKind, view: u64, block: Hash) -> Vote {
    let (height, block) = if kind == VoteKind::Nullify {
        (0, [0; 32])
    } else {
        (view, block)
    };
    let mut v = Vote {
        kind,
        chain_id: 1,
        epoch: 0,
        view,
        height,
        block,
        signer,
        signature: [0; 96],
    };
    v.signature = key
        .sign(&v.signing_message(&EpochDomain::default()))
        .to_bytes();
    v
}

/// A certificate of `kind` on `block` in `view` signed by `signers`.
fn certificate(kind: CertificateKind, view: u64, block: Hash, signers: &[usize]) -> Certificate {
    let keys = keys();
    let sigs: Vec<Signature> = signers
        .iter()
        .map(|&i| {
            let v = vote(&keys[i], i as u32, kind.vote_kind(), view, block);
            Signature::from_bytes(&v.signature).unwrap()
        })
        .collect();
    let (height, block) = if kind == CertificateKind::Nullification {
        (0, [0; 32])
    } else {
        (view, block)
    };
    Certificate {
        kind,
        chain_id: 1,
        epoch: 0,
        view,
        height,
        block,
        signers: bitmap_from_signers(signers.iter().copied(), 4),
        signature: Signature::aggregate(&sigs).unwrap().to_bytes(),
    }
}

/// A proposal header of `proposer` (its index in the epoch's set) in `view`, told apart from
/// others in the view by `payload_root`.
fn header(proposer: u32, view: u64, payload_root: Hash) -> BlockHeader {
    BlockHeader {
        chain_id: 1,
        epoch: 0,
        view,
        height: view,
        parent_view: view - 1,
        parent: [0; 32],
        proposer,
        timestamp_us: view,
        payload_root,
        state_root: [0; 32],
    }
}

fn chain(hashes: &[Hash]) -> Vec<ChainEntry> {
    let mut parent = GENESIS;
    hashes
        .iter()
        .enumerate()
        .map(|(k, h)| {
            let e = ChainEntry {
                checkpoint: false,
                height: k as u64 + 1,
                hash: *h,
                parent,
            };
            parent = *h;
            e
        })
        .collect()
}

/// Two nodes on one chain, a proposal (sent twice), a notarization and finalization per view,
/// honest votes, and evidence against the Byzantine validator 3.
fn clean() -> Observation {
    let keys = keys();
    let blocks = [[1; 32], [2; 32], [3; 32]];
    let mut certificates = Vec::new();
    let mut votes = Vec::new();
    let mut proposals = Vec::new();
    for (k, b) in blocks.iter().enumerate() {
        let view = k as u64 + 1;
        let leader = view as u32 % 4;
        proposals.push((leader, header(leader, view, *b)));
        proposals.push((leader, header(leader, view, *b)));
        certificates.push(certificate(
            CertificateKind::Notarization,
            view,
            *b,
            &[0, 1, 2],
        ));
        certificates.push(certificate(
            CertificateKind::Finalization,
            view,
            *b,
            &[1, 2, 3],
        ));
        for (i, key) in keys.iter().enumerate() {
            votes.push((i as u32, vote(key, i as u32, VoteKind::Notarize, view, *b)));
            votes.push((i as u32, vote(key, i as u32, VoteKind::Finalize, view, *b)));
        }
    }
    Observation {
        sets: vec![ObservedSet {
            first_epoch: 0,
            validators: keys.iter().map(|k| (k.public_key(), 1)).collect(),
            domain: EpochDomain::default(),
        }],
        honest: vec![true, true, true, false],
        keys: keys.iter().map(SecretKey::public_key).collect(),
        genesis: GENESIS,
        chains: vec![
            ("a".into(), chain(&blocks)),
            ("b".into(), chain(&blocks[..2])),
        ],
        certificates,
        votes,
        proposals,
        evidence: vec![HeldEvidence {
            holder: "a".into(),
            epoch: 0,
            signer: 3,
            view: 2,
        }],
    }
}

#[test]
fn a_clean_run_has_no_violations() {
    assert_eq!(check(&clean()), vec![]);
}

#[test]
fn planted_disagreement_is_caught() {
    let mut obs = clean();
    obs.chains.push(("c".into(), chain(&[[1; 32], [9; 32]])));
    assert_eq!(
        check(&obs),
        vec![Violation::Disagreement {
            height: 2,
            a: "a".into(),
            b: "c".into()
        }]
    );
}

#[test]
fn planted_broken_chain_is_caught() {
    let mut obs = clean();
    let mut broken = chain(&[[1; 32], [2; 32]]);
    broken[1].parent = [7; 32];
    obs.chains.push(("c".into(), broken));
    assert_eq!(
        check(&obs),
        vec![Violation::BrokenChain {
            node: "c".into(),
            height: 2
        }]
    );
    let mut obs = clean();
    obs.chains.push((
        "d".into(),
        vec![ChainEntry {
            checkpoint: false,
            height: 2,
            hash: [2; 32],
            parent: [1; 32],
        }],
    ));
    assert_eq!(
        check(&obs),
        vec![Violation::BrokenChain {
            node: "d".into(),
            height: 2
        }]
    );
}

#[test]
fn planted_conflicting_notarizations_are_caught() {
    let mut obs = clean();
    obs.certificates.push(certificate(
        CertificateKind::Notarization,
        2,
        [8; 32],
        &[1, 2, 3],
    ));
    let found = check(&obs);
    assert!(found.contains(&Violation::ConflictingCertificates {
        view: 2,
        kind: CertificateKind::Notarization
    }));
}

#[test]
fn planted_finalization_of_another_block_than_notarized_is_caught() {
    let mut obs = clean();
    obs.certificates.push(certificate(
        CertificateKind::Notarization,
        4,
        [4; 32],
        &[0, 1, 2],
    ));
    obs.certificates.push(certificate(
        CertificateKind::Finalization,
        4,
        [5; 32],
        &[0, 1, 2],
    ));
    assert_eq!(
        check(&obs),
        vec![Violation::ConflictingCertificates {
            view: 4,
            kind: CertificateKind::Finalization
        }]
    );
}

#[test]
fn planted_finalized_and_nullified_view_is_caught() {
    let mut obs = clean();
    obs.certificates.push(certificate(
        CertificateKind::Nullification,
        3,
        [0; 32],
        &[0, 1, 3],
    ));
    assert_eq!(
        check(&obs),
        vec![Violation::FinalizedAndNullified { view: 3 }]
    );
}

#[test]
fn planted_minority_certificate_is_caught() {
    let mut obs = clean();
    obs.certificates.push(certificate(
        CertificateKind::Nullification,
        9,
        [0; 32],
        &[0, 1],
    ));
    assert_eq!(
        check(&obs),
        vec![Violation::NotAQuorum {
            view: 9,
            kind: CertificateKind::Nullification,
            stake: 2,
            total: 4
        }]
    );
}

/// Certificates are checked against the set of their own epoch: after a change at epoch 1 that
/// gives validator 3 most of the stake and a new domain, three of the old members are no longer
/// a quorum, and a signature under epoch 0's domain no longer verifies.
#[test]
fn certificates_are_checked_against_their_epochs_set() {
    let keys = keys();
    let mut obs = clean();
    let domain = EpochDomain {
        validator_set_root: [5; 32],
        profile_id: "fast".into(),
    };
    obs.sets.push(ObservedSet {
        first_epoch: 1,
        validators: keys
            .iter()
            .zip([1, 1, 1, 10])
            .map(|(k, stake)| (k.public_key(), stake))
            .collect(),
        domain: domain.clone(),
    });
    assert_eq!(
        check(&obs),
        vec![],
        "epoch 0's certificates keep epoch 0's set"
    );
    let view = 9;
    let signed = |under: &EpochDomain| {
        let sigs: Vec<Signature> = [0usize, 1, 2]
            .iter()
            .map(|&i| {
                let mut v = vote(&keys[i], i as u32, VoteKind::Finalize, view, [9; 32]);
                v.epoch = 1;
                Signature::from_bytes(&keys[i].sign(&v.signing_message(under)).to_bytes()).unwrap()
            })
            .collect();
        let mut c = certificate(CertificateKind::Finalization, view, [9; 32], &[0, 1, 2]);
        c.epoch = 1;
        c.signature = Signature::aggregate(&sigs).unwrap().to_bytes();
        c
    };
    obs.certificates.push(signed(&domain));
    obs.certificates.push(signed(&EpochDomain::default()));
    assert_eq!(
        check(&obs),
        vec![
            Violation::NotAQuorum {
                view,
                kind: CertificateKind::Finalization,
                stake: 3,
                total: 13
            },
            Violation::BadCertificate {
                view,
                kind: CertificateKind::Finalization
            }
        ]
    );
}

#[test]
fn planted_forged_aggregate_is_caught() {
    let mut obs = clean();
    let mut forged = certificate(CertificateKind::Notarization, 9, [9; 32], &[0, 1, 2]);
    forged.signers = bitmap_from_signers([0, 1, 3], 4); // names a signer who did not sign
    obs.certificates.push(forged);
    assert_eq!(
        check(&obs),
        vec![Violation::BadCertificate {
            view: 9,
            kind: CertificateKind::Notarization
        }]
    );
}

#[test]
fn planted_honest_equivocation_is_caught_but_byzantine_is_expected() {
    let keys = keys();
    let mut obs = clean();
    // Honest validator 1 notarizes a second block in view 2.
    obs.votes
        .push((1, vote(&keys[1], 1, VoteKind::Notarize, 2, [6; 32])));
    // Honest validator 2 nullifies view 1 after finalizing it.
    obs.votes
        .push((2, vote(&keys[2], 2, VoteKind::Nullify, 1, [0; 32])));
    // Byzantine validator 3 does the same: not a violation of honest behaviour.
    obs.votes
        .push((3, vote(&keys[3], 3, VoteKind::Notarize, 2, [6; 32])));
    assert_eq!(
        check(&obs),
        vec![
            Violation::HonestEquivocation {
                validator: 1,
                view: 2
            },
            Violation::HonestEquivocation {
                validator: 2,
                view: 1
            },
        ]
    );
}

#[test]
fn planted_conflicting_proposals_of_an_honest_leader_are_caught() {
    let mut obs = clean();
    // Honest validator 2 proposes a second block in view 2, where it leads (what a leader
    // restarted on an empty data directory did in a real network).
    obs.proposals.push((2, header(2, 2, [7; 32])));
    // Byzantine validator 3 leads view 3 and does the same: expected of it.
    obs.proposals.push((3, header(3, 3, [7; 32])));
    assert_eq!(
        check(&obs),
        vec![Violation::HonestConflictingProposals {
            validator: 2,
            view: 2
        }]
    );
}

#[test]
fn evidence_against_an_honest_validator_is_caught() {
    let mut obs = clean();
    obs.evidence.push(HeldEvidence {
        holder: "b".into(),
        epoch: 0,
        signer: 1,
        view: 3,
    });
    assert_eq!(
        check(&obs),
        vec![Violation::EvidenceAgainstHonest {
            holder: "b".into(),
            validator: 1,
            view: 3
        }]
    );
}

/// After a set change a validator's index is no longer its number: epoch 1's set lists
/// validators 3, 0, 1, 2, so honest validator 1 signs as index 2. Its conflicting notarize in
/// epoch 1 is its own and is caught; evidence naming index 2 in epoch 1 accuses it; a vote that
/// Byzantine validator 3 sent under validator 1's index (a forgery, rejected by the verifier)
/// does not count against validator 1, nor does a vote validator 1's node sent under another's
/// index.
#[test]
fn votes_and_evidence_are_judged_by_identity_after_a_set_change() {
    let keys = keys();
    let mut obs = clean();
    let order = [3usize, 0, 1, 2];
    obs.sets.push(ObservedSet {
        first_epoch: 1,
        validators: order.iter().map(|&v| (keys[v].public_key(), 1)).collect(),
        domain: EpochDomain::default(),
    });
    let in_epoch_1 = |signer: u32, view: u64, block: Hash| {
        let mut v = vote(&keys[1], signer, VoteKind::Notarize, view, block);
        v.epoch = 1;
        v
    };
    obs.votes.push((1, in_epoch_1(2, 10, [10; 32])));
    obs.votes.push((3, in_epoch_1(2, 10, [11; 32])));
    obs.votes.push((1, in_epoch_1(1, 10, [12; 32])));
    assert_eq!(check(&obs), vec![], "one vote of validator 1 in view 10");
    obs.votes.push((1, in_epoch_1(2, 10, [13; 32])));
    obs.evidence.push(HeldEvidence {
        holder: "a".into(),
        epoch: 1,
        signer: 2,
        view: 10,
    });
    assert_eq!(
        check(&obs),
        vec![
            Violation::HonestEquivocation {
                validator: 1,
                view: 10
            },
            Violation::EvidenceAgainstHonest {
                holder: "a".into(),
                validator: 1,
                view: 10
            }
        ]
    );
}
