//! The validator registry: registering, leaving, the bonded stake, refusals that change
//! nothing, the set a registry gives, the registry in the state tree (pending blocks, commits,
//! restarts, the genesis validators), and its encodings.

mod common;

use common::{addr, fuzz_mutations, key, tx, CHAIN, RULES};
use quasar_app::registry::{Directory, Identity, RegistryDecodeError, MAX_TLS_CERTIFICATE_BYTES};
use quasar_app::{
    check_committed, select_validators, Action, ChainRules, EpochSet, EvidenceCheck, ExecError,
    GenesisValidator, Ledger, NetworkRoster, NoEvidence, Offence, RegisteredValidator,
    Registration, SignedTransaction, State, StateError, Transaction, TxError, ValidatorKeys,
    ValidatorRecord, ValidatorStatus, VerificationCache,
};
use quasar_crypto::bls;
use quasar_storage::SledStore;
use std::sync::Arc;

/// Validator `i`'s BLS secret key.
fn bls_key(i: u8) -> bls::SecretKey {
    bls::SecretKey::from_seed(&[i.wrapping_add(100); 32])
}

/// Validator `i`'s keys: its BLS key, an SLH-DSA key and a certificate of its own.
fn keys(i: u8) -> ValidatorKeys {
    ValidatorKeys {
        bls_public_key: bls_key(i).public_key().to_bytes(),
        slhdsa_public_key: [i; 48],
        tls_certificate: vec![0x30, i, i],
    }
}

/// Account `i`'s registration of validator `i`'s keys, staking `amount`.
fn register(i: u8, amount: u64) -> Action {
    Action::RegisterValidator {
        amount,
        registration: Box::new(Registration::new(keys(i), &bls_key(i), CHAIN, &addr(i))),
    }
}

/// Account `sender`'s registration of `keys` staking 100, with the proof of possession made
/// by `bls_key(signer)`.
fn register_as(keys: ValidatorKeys, signer: u8, sender: u8) -> Action {
    Action::RegisterValidator {
        amount: 100,
        registration: Box::new(Registration::new(
            keys,
            &bls_key(signer),
            CHAIN,
            &addr(sender),
        )),
    }
}

/// Accounts 1 to 4 funded with 10,000 each, their keys in the ledger (each sent one transfer
/// to itself at height 1).
fn funded() -> (VerificationCache, Ledger) {
    let cache = VerificationCache::new(CHAIN, 256);
    let mut ledger = Ledger::new(RULES, (1..=4).map(|i| (addr(i), 10_000))).expect("genesis");
    for i in 1..=4 {
        let first = tx(
            i,
            0,
            true,
            Action::Transfer {
                to: addr(i),
                amount: 0,
            },
        );
        ledger
            .apply(&first, 1, &cache, &NoEvidence)
            .expect("first transaction");
    }
    (cache, ledger)
}

#[test]
fn a_validator_registers_leaves_and_withdraws_after_the_unbonding_period() {
    let (cache, mut ledger) = funded();
    ledger
        .apply(&tx(1, 1, false, register(1, 500)), 5, &cache, &NoEvidence)
        .expect("registers");
    let record = ledger.validator(&addr(1)).expect("record").clone();
    assert_eq!(record.status, ValidatorStatus::Active);
    assert_eq!(record.registered_at, 5);
    assert_eq!(record.keys, keys(1));
    let account = ledger.account(&addr(1)).expect("account");
    assert_eq!((account.balance, account.stake), (10_000 - 20 - 500, 500));
    assert!(ledger.directory().0.contains(&addr(1)));
    assert_eq!(ledger.claims().count(), 3);

    // Active: the stake is bonded.
    let withdraw = |nonce| tx(1, nonce, false, Action::WithdrawStake { amount: 500 });
    let early = ledger
        .apply(&withdraw(2), 6, &cache, &NoEvidence)
        .expect_err("bonded");
    assert_eq!(early, ExecError::Bonded { from: None });
    assert!(!early.may_apply_later());

    ledger
        .apply(&tx(1, 2, false, Action::Leave), 7, &cache, &NoEvidence)
        .expect("leaves");
    assert_eq!(
        ledger.validator(&addr(1)).map(|r| r.status),
        Some(ValidatorStatus::Leaving { since: 7 })
    );
    assert!(matches!(
        ledger.apply(&tx(1, 3, false, Action::Leave), 8, &cache, &NoEvidence),
        Err(ExecError::NotRegistered { .. })
    ));
    // Bonded for three epochs of 10 blocks after height 7.
    let waiting = ledger
        .apply(&withdraw(3), 36, &cache, &NoEvidence)
        .expect_err("bonded");
    assert_eq!(waiting, ExecError::Bonded { from: Some(37) });
    assert!(
        !waiting.may_apply_later(),
        "epochs outlast a mempool's lifetime"
    );
    ledger
        .apply(&withdraw(3), 37, &cache, &NoEvidence)
        .expect("unbonded");
    assert_eq!(
        ledger.validator(&addr(1)).map(|r| r.status),
        Some(ValidatorStatus::Left)
    );
    assert!(ledger.directory().0.is_empty());
    assert_eq!(ledger.account(&addr(1)).map(|a| a.stake), Some(0));
    // A validator that left may register again, with the keys it claimed.
    ledger
        .apply(&tx(1, 4, false, register(1, 50)), 40, &cache, &NoEvidence)
        .expect("registers again");
    assert_eq!(
        ledger
            .validator(&addr(1))
            .map(|r| (r.status, r.registered_at)),
        Some((ValidatorStatus::Active, 40))
    );
}

#[test]
fn a_refused_registration_changes_nothing_and_says_why() {
    let (cache, mut ledger) = funded();
    ledger
        .apply(&tx(1, 1, false, register(1, 500)), 2, &cache, &NoEvidence)
        .expect("registers");
    let before = ledger.clone();
    let with = |edit: fn(&mut ValidatorKeys)| {
        let mut k = keys(2);
        edit(&mut k);
        k
    };
    // A proof of possession made by another key.
    let forged = ledger
        .apply(
            &tx(2, 1, false, register_as(keys(2), 3, 2)),
            3,
            &cache,
            &NoEvidence,
        )
        .expect_err("refused");
    assert!(
        matches!(&forged, ExecError::Registration(m) if m.starts_with("the proof of possession")),
        "{forged}"
    );
    assert_eq!(ledger, before);
    let cases: Vec<(SignedTransaction, ExecError)> = vec![
        // Keys account 1 registered.
        (
            tx(
                2,
                1,
                false,
                register_as(with(|k| k.bls_public_key = keys(1).bls_public_key), 1, 2),
            ),
            ExecError::IdentityClaimed(Identity::Bls.name()),
        ),
        (
            tx(
                2,
                1,
                false,
                register_as(with(|k| k.slhdsa_public_key = [1; 48]), 2, 2),
            ),
            ExecError::IdentityClaimed(Identity::SlhDsa.name()),
        ),
        (
            tx(
                2,
                1,
                false,
                register_as(with(|k| k.tls_certificate = vec![0x30, 1, 1]), 2, 2),
            ),
            ExecError::IdentityClaimed(Identity::Tls.name()),
        ),
        // Registered already.
        (
            tx(1, 2, false, register(1, 1)),
            ExecError::AlreadyRegistered {
                address: hex::encode(addr(1)),
            },
        ),
        // No stake, and more than the balance.
        (tx(2, 1, false, register(2, 0)), ExecError::NoStake),
        (
            tx(2, 1, false, register(2, 10_000)),
            ExecError::Insufficient {
                needed: 10_010,
                available: 9_990,
            },
        ),
    ];
    for (tx, expected) in cases {
        let error = ledger
            .apply(&tx, 3, &cache, &NoEvidence)
            .expect_err("refused");
        let message = error.to_string();
        assert_eq!(error, expected, "{message}");
        assert!(!error.may_apply_later(), "{message}");
        assert_eq!(ledger, before, "a refused registration changed the ledger");
    }
    // A BLS key that is not a point of G1.
    let mut bad = Registration::new(keys(2), &bls_key(2), CHAIN, &addr(2));
    bad.keys.bls_public_key = [0xff; 48];
    let action = Action::RegisterValidator {
        amount: 100,
        registration: Box::new(bad),
    };
    assert!(matches!(
        ledger.apply(&tx(2, 1, false, action), 3, &cache, &NoEvidence),
        Err(ExecError::Registration(m)) if m.starts_with("BLS public key")
    ));
    // A chain without epochs never changes its set.
    let endless = ChainRules {
        epoch_length: 0,
        ..RULES
    };
    let mut single = Ledger::new(endless, [(addr(2), 1_000)]).expect("genesis");
    assert_eq!(
        single.apply(&tx(2, 0, true, register(2, 100)), 1, &cache, &NoEvidence),
        Err(ExecError::NoEpochs)
    );
    assert_eq!(ledger, before);
}

fn registered(i: u8, stake: u64, status: ValidatorStatus) -> RegisteredValidator {
    RegisteredValidator {
        address: addr(i),
        identity_key: key(i).public_key().clone(),
        stake,
        record: ValidatorRecord {
            status,
            registered_at: 0,
            network_address: None,
            keys: keys(i),
        },
    }
}

#[test]
fn the_set_is_the_active_validators_by_stake_then_key_whatever_the_order() {
    let registry = vec![
        registered(1, 50, ValidatorStatus::Active),
        registered(2, 70, ValidatorStatus::Active),
        registered(3, 50, ValidatorStatus::Active),
        registered(4, 90, ValidatorStatus::Leaving { since: 3 }),
        registered(5, 0, ValidatorStatus::Active),
        registered(6, 10, ValidatorStatus::Active),
    ];
    let set = select_validators(registry.clone(), 3);
    let tie_first = if keys(1).bls_public_key < keys(3).bls_public_key {
        [2, 1, 3]
    } else {
        [2, 3, 1]
    };
    let expected: Vec<_> = tie_first.iter().map(|i| addr(*i)).collect();
    assert_eq!(set.iter().map(|v| v.address).collect::<Vec<_>>(), expected);
    let mut reversed = registry.clone();
    reversed.reverse();
    assert_eq!(select_validators(reversed, 3), set);
    // No cap: every active validator with stake, and none other.
    let all = select_validators(registry, usize::MAX);
    assert_eq!(all.len(), 4);
    assert!(all
        .iter()
        .all(|v| v.stake > 0 && v.record.status == ValidatorStatus::Active));
}

fn open(store: &SledStore) -> State {
    let genesis = GenesisValidator {
        identity_key: key(5).public_key().clone(),
        keys: keys(5),
        stake: 1_000,
    };
    State::open(
        store.state().expect("tree"),
        RULES,
        (1..=3).map(|i| (addr(i), 10_000)),
        [genesis],
    )
    .expect("open")
}

fn block(txs: &[SignedTransaction]) -> Vec<Vec<u8>> {
    txs.iter().map(|t| t.as_bytes().to_vec()).collect()
}

fn refs(block: &[Vec<u8>]) -> Vec<&[u8]> {
    block.iter().map(Vec::as_slice).collect()
}

#[test]
fn the_registry_lives_in_state_above_pending_blocks_and_across_a_restart() {
    let store = SledStore::temporary().expect("store");
    let mut state = open(&store);
    let cache = VerificationCache::new(CHAIN, 256);
    // The genesis validator is registered at version 0, its key and stake in its account.
    let genesis = state.registry(0).expect("registry");
    assert_eq!(genesis, vec![registered(5, 1_000, ValidatorStatus::Active)]);
    assert_eq!(
        open(&SledStore::temporary().expect("store")).root(),
        state.root()
    );

    // Block 1 registers account 1; block 2, executed above it before it is committed, finds
    // its claims (a second registration of the same BLS key is refused) and its record (the
    // validator leaves).
    let one = block(&[tx(1, 0, true, register(1, 500))]);
    let executed_one = state.execute(&[], 1, &refs(&one), &cache).expect("block 1");
    let stolen = register_as(
        ValidatorKeys {
            bls_public_key: keys(1).bls_public_key,
            ..keys(2)
        },
        1,
        2,
    );
    let two_bad = block(&[tx(2, 0, true, stolen)]);
    assert!(matches!(
        state.execute(&[&executed_one], 2, &refs(&two_bad), &cache),
        Err(StateError::Transaction {
            source: ExecError::IdentityClaimed(_),
            ..
        })
    ));
    let two = block(&[
        tx(1, 1, false, Action::Leave),
        tx(2, 0, true, register(2, 300)),
    ]);
    let executed_two = state
        .execute(&[&executed_one], 2, &refs(&two), &cache)
        .expect("block 2");
    state.commit(executed_one).expect("commit 1");
    state.commit(executed_two).expect("commit 2");

    let at_one = state.registry(1).expect("registry 1");
    assert_eq!(at_one.len(), 2, "versions keep their own registry");
    let now = state.registry(2).expect("registry 2");
    let statuses: Vec<_> = now.iter().map(|v| (v.address, v.record.status)).collect();
    let mut expected = vec![
        (addr(1), ValidatorStatus::Leaving { since: 2 }),
        (addr(2), ValidatorStatus::Active),
        (addr(5), ValidatorStatus::Active),
    ];
    expected.sort_by_key(|(address, _)| *address);
    assert_eq!(statuses, expected);
    let set = select_validators(now.clone(), 10);
    assert_eq!(
        set.iter().map(|v| v.address).collect::<Vec<_>>(),
        vec![addr(5), addr(2)]
    );

    // A restart reads the same registry; another node executing the same blocks gets the
    // same root.
    let root = state.root();
    drop(state);
    let reopened = open(&store);
    assert_eq!(reopened.registry(2).expect("registry"), now);
    let other_store = SledStore::temporary().expect("store");
    let mut other = open(&other_store);
    for (height, txs) in [(1, &one), (2, &two)] {
        let executed = other
            .execute(&[], height, &refs(txs), &cache)
            .expect("execute");
        other.commit(executed).expect("commit");
    }
    assert_eq!(other.root(), root);

    // Admission's check against the committed state: a taken key is refused with the
    // reason, a fresh registration passes, and nothing is written.
    let taken = tx(3, 0, true, register_as(keys(2), 2, 3));
    assert!(matches!(
        check_committed(
            &store.state().expect("tree"),
            RULES,
            &taken,
            &cache,
            &NoEvidence
        ),
        Err(StateError::Transaction {
            source: ExecError::IdentityClaimed(_),
            ..
        })
    ));
    let fresh = tx(3, 0, true, register(3, 100));
    check_committed(
        &store.state().expect("tree"),
        RULES,
        &fresh,
        &cache,
        &NoEvidence,
    )
    .expect("applies");
    assert_eq!(reopened.registry(2).expect("registry").len(), 3);
}

#[test]
fn a_registration_round_trips_and_its_field_is_empty_for_every_other_action() {
    let sk = key(1);
    let body = Transaction {
        chain_id: CHAIN,
        nonce: 0,
        fee: 10,
        sender: addr(1),
        public_key: Some(sk.public_key().clone()),
        action: register(1, 77),
    };
    let bytes = body.encode().expect("encode");
    assert_eq!(Transaction::decode(&bytes), Ok(body.clone()));
    let signed = body
        .clone()
        .sign(&sk, &mut rand::rngs::OsRng)
        .expect("sign");
    assert_eq!(
        SignedTransaction::decode(signed.as_bytes()),
        Ok(signed.clone())
    );
    // The body carries the registration's bytes: PoP (96), BLS key (48), SLH-DSA key (48),
    // the certificate.
    let registration = Registration::new(keys(1), &bls_key(1), CHAIN, &addr(1)).to_bytes();
    assert_eq!(registration.len(), 96 + 48 + 48 + 3);
    assert!(bytes
        .windows(registration.len())
        .any(|w| w == registration.as_slice()));

    // A transfer whose registration field is not empty: built by moving the registration's
    // bytes under a transfer's kind byte (offset 16 + 56).
    let mut transfer = bytes.clone();
    transfer[16 + 56] = 1;
    assert_eq!(Transaction::decode(&transfer), Err(TxError::UnexpectedData));
    // A registration whose certificate is empty or too long.
    for certificate in [vec![], vec![7; MAX_TLS_CERTIFICATE_BYTES + 1]] {
        let mut keys = keys(1);
        keys.tls_certificate = certificate;
        let bytes = Transaction {
            action: register_as(keys, 1, 1),
            ..body.clone()
        }
        .encode()
        .expect("encode");
        assert!(matches!(
            Transaction::decode(&bytes),
            Err(TxError::Registration(RegistryDecodeError::Length { .. }))
        ));
    }
}

#[test]
fn records_and_the_directory_have_one_encoding_each() {
    for (status, network_address) in [
        (ValidatorStatus::Active, None),
        (
            ValidatorStatus::Active,
            Some("validator-9.example:9000".to_string()),
        ),
        (
            ValidatorStatus::Leaving { since: 9 },
            Some("[fd00::5]:9000".into()),
        ),
        (ValidatorStatus::Left, None),
    ] {
        let record = ValidatorRecord {
            status,
            registered_at: 4,
            network_address,
            keys: keys(1),
        };
        let bytes = record.to_bytes();
        assert_eq!(ValidatorRecord::from_bytes(&bytes), Ok(record));
        assert!(ValidatorRecord::from_bytes(&bytes[..19]).is_err());
    }
    // An address length that runs into the keys' bytes, or an address that is not printable.
    let mut spaced = ValidatorRecord {
        status: ValidatorStatus::Active,
        registered_at: 4,
        network_address: Some("a:1".into()),
        keys: keys(1),
    }
    .to_bytes();
    spaced[21] = b' ';
    assert!(ValidatorRecord::from_bytes(&spaced).is_err());
    spaced[18] = 0xff;
    assert!(ValidatorRecord::from_bytes(&spaced).is_err());
    // An active record with a `since` height is another encoding of nothing.
    let mut active = ValidatorRecord {
        status: ValidatorStatus::Active,
        registered_at: 4,
        network_address: None,
        keys: keys(1),
    }
    .to_bytes();
    active[9] = 1;
    assert!(ValidatorRecord::from_bytes(&active).is_err());
    let directory = Directory([addr(1), addr(2)].into_iter().collect());
    let bytes = directory.to_bytes();
    assert_eq!(Directory::from_bytes(&bytes), Ok(directory));
    let mut swapped = vec![1u8];
    let (a, b) = (addr(1).max(addr(2)), addr(1).min(addr(2)));
    swapped.extend_from_slice(&a);
    swapped.extend_from_slice(&b);
    assert!(Directory::from_bytes(&swapped).is_err(), "out of order");
    assert!(
        Directory::from_bytes(&bytes[..40]).is_err(),
        "a partial address"
    );
    assert!(Directory::from_bytes(&[]).is_err());
}

#[test]
fn the_fuzz_entry_points_survive_mutated_registrations_and_records() {
    let record = ValidatorRecord {
        status: ValidatorStatus::Leaving { since: 3 },
        registered_at: 1,
        network_address: None,
        keys: keys(1),
    };
    fuzz_mutations(
        &[
            tx(1, 0, true, register(1, 5)).as_bytes().to_vec(),
            tx(2, 4, false, register(2, 0)).as_bytes().to_vec(),
        ],
        300,
        quasar_app::fuzzing::signed_transaction,
    );
    fuzz_mutations(
        &[
            record.to_bytes(),
            Directory([addr(1), addr(3)].into_iter().collect()).to_bytes(),
        ],
        300,
        quasar_app::fuzzing::state_decode,
    );
}

/// A stand-in for the node's vote check (`quasar_node::application::VoteEvidence`, tested with
/// real votes in the node's tests): evidence is `b"signed by "` and a BLS public key.
struct SignedBy;

impl EvidenceCheck for SignedBy {
    fn check(&self, evidence: &[u8]) -> Result<Offence, String> {
        let key = evidence
            .strip_prefix(b"signed by ")
            .and_then(|k| <[u8; 48]>::try_from(k).ok())
            .ok_or("not evidence")?;
        Ok(Offence {
            bls_public_key: key,
            epoch: 0,
            view: 1,
        })
    }
}

fn report(offender: u8, signer: u8) -> Action {
    Action::ReportEquivocation {
        offender: addr(offender),
        evidence: [&b"signed by "[..], &keys(signer).bls_public_key].concat(),
    }
}

#[test]
fn a_report_of_equivocation_burns_the_stake_and_ends_the_registration_and_a_false_one_nothing() {
    let (cache, mut ledger) = funded();
    ledger
        .apply(&tx(1, 1, false, register(1, 500)), 2, &cache, &SignedBy)
        .expect("registers");
    let before = ledger.clone();
    // Refused, changing nothing: evidence that proves nothing, evidence against another
    // validator's key, a report against an account that never registered, and any report on
    // a ledger that checks no evidence.
    type Refusal<'a> = (Action, &'a dyn EvidenceCheck, fn(&ExecError) -> bool);
    let refusals: Vec<Refusal> = vec![
        (
            Action::ReportEquivocation {
                offender: addr(1),
                evidence: b"forged".to_vec(),
            },
            &SignedBy,
            |e| matches!(e, ExecError::Evidence(m) if m == "not evidence"),
        ),
        (
            report(1, 2),
            &SignedBy,
            |e| matches!(e, ExecError::Evidence(m) if m.contains("another key")),
        ),
        (report(3, 3), &SignedBy, |e| {
            matches!(e, ExecError::NotRegistered { .. })
        }),
        (
            report(1, 1),
            &NoEvidence,
            |e| matches!(e, ExecError::Evidence(m) if m.contains("checks no evidence")),
        ),
    ];
    for (action, check, expected) in refusals {
        let error = ledger
            .apply(&tx(2, 1, false, action), 3, &cache, check)
            .expect_err("refused");
        assert!(expected(&error), "{error}");
        assert_eq!(
            ledger, before,
            "a refused report changed the ledger: {error}"
        );
    }
    // A true report by account 2: account 1's stake is burned and its registration ends.
    ledger
        .apply(&tx(2, 1, false, report(1, 1)), 4, &cache, &SignedBy)
        .expect("slashes");
    let offender = ledger.account(&addr(1)).expect("offender");
    assert_eq!((offender.stake, offender.balance), (0, 10_000 - 20 - 500));
    assert_eq!(
        ledger.validator(&addr(1)).map(|r| r.status),
        Some(ValidatorStatus::Slashed { since: 4 })
    );
    assert_eq!(
        ledger.account(&addr(2)).map(|a| a.balance),
        Some(10_000 - 20)
    );
    // A slashed registration is never slashed again, even with stake added since.
    ledger
        .apply(
            &tx(1, 2, false, Action::AddStake { amount: 50 }),
            5,
            &cache,
            &SignedBy,
        )
        .expect("stakes");
    assert!(matches!(
        ledger.apply(&tx(3, 1, false, report(1, 1)), 6, &cache, &SignedBy),
        Err(ExecError::NothingToSlash { .. })
    ));
    // Its bond runs out like a departing validator's; registered again (epoch 4), the old
    // offence (epoch 0) predates the registration.
    let withdraw = |nonce, amount| tx(1, nonce, false, Action::WithdrawStake { amount });
    assert_eq!(
        ledger.apply(&withdraw(3, 50), 33, &cache, &SignedBy),
        Err(ExecError::Bonded { from: Some(34) })
    );
    ledger
        .apply(&withdraw(3, 50), 34, &cache, &SignedBy)
        .expect("unbonded");
    ledger
        .apply(&tx(1, 4, false, register(1, 500)), 45, &cache, &SignedBy)
        .expect("registers again");
    let replayed = ledger
        .apply(&tx(3, 1, false, report(1, 1)), 46, &cache, &SignedBy)
        .expect_err("refused");
    assert!(
        matches!(&replayed, ExecError::Evidence(m) if m.contains("predates")),
        "{replayed}"
    );
}

#[test]
fn registrations_are_bound_to_their_sender_and_genesis_validators_stay() {
    let (cache, mut ledger) = funded();
    // Account 1's registration, copied from the mempool into account 2's transaction.
    let error = ledger
        .apply(&tx(2, 1, false, register(1, 100)), 2, &cache, &NoEvidence)
        .expect_err("refused");
    assert!(
        matches!(&error, ExecError::Registration(m) if m.contains("for this sender")),
        "{error}"
    );
    // The same keys on another chain.
    let other_chain = Action::RegisterValidator {
        amount: 100,
        registration: Box::new(Registration::new(keys(2), &bls_key(2), CHAIN + 1, &addr(2))),
    };
    assert!(matches!(
        ledger.apply(&tx(2, 1, false, other_chain), 2, &cache, &NoEvidence),
        Err(ExecError::Registration(_))
    ));
    // A genesis validator keeps its place while the sets come from the genesis file.
    let validator = GenesisValidator {
        identity_key: key(5).public_key().clone(),
        keys: keys(5),
        stake: 1_000,
    };
    let mut genesis =
        Ledger::genesis(RULES, [(addr(5), 100)], [validator]).expect("genesis ledger");
    assert_eq!(
        genesis.apply(&tx(5, 0, false, Action::Leave), 1, &cache, &NoEvidence),
        Err(ExecError::GenesisValidator)
    );
    // A chain without epochs: nobody leaves.
    let endless = ChainRules {
        epoch_length: 0,
        ..RULES
    };
    let mut single = Ledger::new(endless, [(addr(2), 1_000)]).expect("genesis");
    assert_eq!(
        single.apply(&tx(2, 0, true, Action::Leave), 1, &cache, &NoEvidence),
        Err(ExecError::NoEpochs)
    );
}

#[test]
fn a_report_carries_its_evidence_and_refuses_none_or_too_much() {
    let body = |action| Transaction {
        chain_id: CHAIN,
        nonce: 3,
        fee: 10,
        sender: addr(2),
        public_key: None,
        action,
    };
    let report = body(report(1, 1));
    let bytes = report.encode().expect("encode");
    assert_eq!(Transaction::decode(&bytes), Ok(report));
    for len in [0, quasar_app::tx::MAX_EVIDENCE_BYTES + 1] {
        let bytes = body(Action::ReportEquivocation {
            offender: addr(1),
            evidence: vec![7; len],
        })
        .encode()
        .expect("encode");
        assert_eq!(
            Transaction::decode(&bytes),
            Err(TxError::EvidenceLength(len))
        );
    }
    fuzz_mutations(
        &[tx(2, 1, false, self::report(1, 1)).as_bytes().to_vec()],
        200,
        quasar_app::fuzzing::signed_transaction,
    );
}

/// The rules of a chain whose sets come from its registry (epochs of 10 blocks).
const REGISTRY_RULES: ChainRules = ChainRules {
    sets_from_registry: true,
    ..RULES
};

/// A state of `rules` with accounts 1, 2, 3 and 5 funded and validator 5 (stake 1,000) at genesis,
/// the network reaching the validators of `roster` (anyone without one).
fn open_chain(store: &SledStore, rules: ChainRules, roster: Option<&[u8]>) -> State {
    let genesis = GenesisValidator {
        identity_key: key(5).public_key().clone(),
        keys: keys(5),
        stake: 1_000,
    };
    let state = State::open(
        store.state().expect("tree"),
        rules,
        [1, 2, 3, 5].map(|i| (addr(i), 10_000)),
        [genesis],
    )
    .expect("open");
    match roster {
        Some(validators) => state.with_network_roster(Arc::new(NetworkRoster(
            validators
                .iter()
                .map(|&i| keys(i).tls_certificate)
                .collect(),
        ))),
        None => state,
    }
}

/// Executes and commits the blocks up to `to` above the state's version, `txs` in the first.
fn run_to(state: &mut State, to: u64, txs: &[SignedTransaction], cache: &VerificationCache) {
    let first = block(txs);
    let mut body = refs(&first);
    while state.version() < to {
        let height = state.version() + 1;
        let executed = state.execute(&[], height, &body, cache).expect("execute");
        state.commit(executed).expect("commit");
        body = Vec::new();
    }
}

/// The addresses and stakes of a set, in index order.
fn members(set: &EpochSet) -> Vec<([u8; 32], u64)> {
    set.members.iter().map(|m| (m.address, m.stake)).collect()
}

#[test]
fn boundary_blocks_write_the_set_two_epochs_ahead_among_the_validators_the_network_reaches() {
    let cache = VerificationCache::new(CHAIN, 256);
    let store = SledStore::temporary().expect("store");
    // The network reaches validators 5 and 1, not 2 (its certificate is not pinned).
    let mut state = open_chain(&store, REGISTRY_RULES, Some(&[5, 1]));
    run_to(
        &mut state,
        9,
        &[
            tx(1, 0, true, register(1, 500)),
            tx(2, 0, true, register(2, 3_000)),
        ],
        &cache,
    );
    assert_eq!(state.registry(9).expect("registry").len(), 3);
    let genesis_set = state.epoch_set(0, 0).expect("read").expect("epoch 0's set");
    assert_eq!(members(&genesis_set), vec![(addr(5), 1_000)]);
    assert_eq!(state.epoch_set(0, 1).expect("read"), Some(genesis_set));
    assert_eq!(
        state.epoch_set(9, 2).expect("read"),
        None,
        "no boundary yet"
    );
    run_to(&mut state, 10, &[], &cache);
    // Epoch 0's boundary decides epoch 2: by stake, among the reachable validators.
    let two = state.epoch_set(10, 2).expect("read").expect("decided");
    assert_eq!(members(&two), vec![(addr(5), 1_000), (addr(1), 500)]);
    let (vk, ik) = ([keys(5), keys(1)], [key(5), key(1)]);
    let root = quasar_wire::validator_set_root(vk.iter().zip(&ik).zip([1_000, 500]).map(
        |((k, identity), stake)| quasar_wire::SetRootEntry {
            bls_public_key: &k.bls_public_key,
            identity_key: identity.public_key().as_bytes(),
            slhdsa_public_key: &k.slhdsa_public_key,
            stake,
        },
    ));
    assert_eq!(two.validator_set_root, root);
    assert_eq!(state.epoch_set(10, 3).expect("read"), None);

    // A genesis validator may leave a chain whose sets come from the registry; epoch 1's
    // boundary leaves it out of epoch 3.
    run_to(&mut state, 20, &[tx(5, 0, false, Action::Leave)], &cache);
    let three = state.epoch_set(20, 3).expect("read").expect("decided");
    assert_eq!(members(&three), vec![(addr(1), 500)]);
    assert_eq!(state.epoch_set(20, 2).expect("read"), Some(two), "kept");
    // Validator 5 is still in epoch 2's set: bonded while it is in force.
    let early = block(&[tx(5, 1, false, Action::WithdrawStake { amount: 1_000 })]);
    assert!(matches!(
        state.execute(&[], 21, &refs(&early), &cache),
        Err(StateError::Transaction {
            source: ExecError::Bonded { .. },
            ..
        })
    ));

    // Once nobody reachable is left, the set before stays, written again, and its members stay
    // bonded past their unbonding period while it is in force.
    run_to(&mut state, 50, &[tx(1, 1, false, Action::Leave)], &cache);
    for epoch in 4..=6 {
        assert_eq!(
            state.epoch_set(50, epoch).expect("read"),
            Some(three.clone())
        );
    }
    let withdraw = block(&[tx(1, 2, false, Action::WithdrawStake { amount: 500 })]);
    assert!(matches!(
        state.execute(&[], 51, &refs(&withdraw), &cache),
        Err(StateError::Transaction {
            source: ExecError::InSet { epoch: 5 },
            ..
        })
    ));
    // Validator 5 left in epoch 1 and is in no set in force: its withdrawal applies.
    run_to(
        &mut state,
        51,
        &[tx(5, 1, false, Action::WithdrawStake { amount: 1_000 })],
        &cache,
    );
    assert_eq!(
        state.account(&addr(5)).expect("read").map(|a| a.stake),
        Some(0)
    );

    // The roster is part of the chain's rules: without it validator 2 is selected first, and
    // the root differs.
    let other_store = SledStore::temporary().expect("store");
    let mut anyone = open_chain(&other_store, REGISTRY_RULES, None);
    run_to(
        &mut anyone,
        10,
        &[
            tx(1, 0, true, register(1, 500)),
            tx(2, 0, true, register(2, 3_000)),
        ],
        &cache,
    );
    let with_two = anyone.epoch_set(10, 2).expect("read").expect("decided");
    assert_eq!(with_two.members[0].address, addr(2));
    assert_ne!(
        anyone.root_at(10).expect("root"),
        state.root_at(10).expect("root")
    );

    // A chain whose genesis fixes its sets writes no set, and keeps its genesis validators.
    let fixed_store = SledStore::temporary().expect("store");
    let mut fixed = open_chain(&fixed_store, RULES, None);
    run_to(&mut fixed, 10, &[], &cache);
    assert_eq!(fixed.epoch_set(10, 2).expect("read"), None);
    let leave = block(&[tx(5, 0, false, Action::Leave)]);
    assert!(matches!(
        fixed.execute(&[], 11, &refs(&leave), &cache),
        Err(StateError::Transaction {
            source: ExecError::GenesisValidator,
            ..
        })
    ));
}

/// Account `i`'s announcement of `address`.
/// The registry record of `address` as of `height`.
fn record_of(state: &State, height: u64, address: [u8; 32]) -> ValidatorRecord {
    state
        .registry(height)
        .expect("registry")
        .into_iter()
        .find(|v| v.address == address)
        .expect("registered")
        .record
}

fn announce(address: &str) -> Action {
    Action::SetNetworkAddress {
        address: address.into(),
    }
}

#[test]
fn a_validator_outside_the_genesis_roster_is_selected_once_it_announces_where_it_listens() {
    let cache = VerificationCache::new(CHAIN, 256);
    let store = SledStore::temporary().expect("store");
    // The genesis roster is validator 5's.
    let mut state = open_chain(&store, REGISTRY_RULES, Some(&[5]));
    // Only a registered validator announces an address: refused, and nothing changes.
    let early = block(&[tx(2, 0, true, announce("validator-2.example:9000"))]);
    assert!(matches!(
        state.execute(&[], 1, &refs(&early), &cache),
        Err(StateError::Transaction {
            source: ExecError::NotRegistered { .. },
            ..
        })
    ));
    // Registered with the highest stake, but unreachable: epoch 2 is validator 5's alone.
    run_to(
        &mut state,
        10,
        &[tx(2, 0, true, register(2, 3_000))],
        &cache,
    );
    let two = state.epoch_set(10, 2).expect("read").expect("decided");
    assert_eq!(members(&two), vec![(addr(5), 1_000)]);
    // Announced in epoch 1: epoch 3 has it first (by stake).
    run_to(
        &mut state,
        20,
        &[tx(2, 1, false, announce("validator-2.example:9000"))],
        &cache,
    );
    let record = record_of(&state, 20, addr(2));
    assert_eq!(
        record.network_address.as_deref(),
        Some("validator-2.example:9000")
    );
    let three = state.epoch_set(20, 3).expect("read").expect("decided");
    assert_eq!(members(&three), vec![(addr(2), 3_000), (addr(5), 1_000)]);
    // A validator that moves hosts announces again; it stays selected.
    run_to(
        &mut state,
        30,
        &[tx(2, 2, false, announce("10.0.0.9:9100"))],
        &cache,
    );
    assert_eq!(
        state.epoch_set(30, 4).expect("read").map(|s| members(&s)),
        Some(members(&three))
    );
    // A leaving validator still signs for a while: its address stays.
    run_to(&mut state, 31, &[tx(2, 3, false, Action::Leave)], &cache);
    let leaving = record_of(&state, 31, addr(2));
    assert!(matches!(leaving.status, ValidatorStatus::Leaving { .. }));
    assert_eq!(leaving.network_address.as_deref(), Some("10.0.0.9:9100"));

    // The address is printable ASCII, 1 to 259 bytes, and the announcement carries nothing
    // else.
    let body = Transaction {
        chain_id: CHAIN,
        nonce: 4,
        fee: 10,
        sender: addr(2),
        public_key: None,
        action: announce("validator-2.example:9000"),
    };
    let bytes = body.encode().expect("encode");
    assert_eq!(Transaction::decode(&bytes), Ok(body.clone()));
    for bad in ["", "validator 2:9000", &"a".repeat(260)] {
        let bytes = Transaction {
            action: announce(bad),
            ..body.clone()
        }
        .encode()
        .expect("encode");
        assert!(
            matches!(Transaction::decode(&bytes), Err(TxError::NetworkAddress(_))),
            "{bad:?}"
        );
    }
    let mut with_amount = bytes.clone();
    with_amount[16 + 64] = 1;
    assert_eq!(
        Transaction::decode(&with_amount),
        Err(TxError::UnusedField("amount"))
    );
}

#[test]
fn an_epoch_set_has_one_encoding_and_refuses_empty_or_partial_bytes() {
    let set = EpochSet::of(&[
        registered(1, 50, ValidatorStatus::Active),
        registered(2, 70, ValidatorStatus::Active),
    ])
    .expect("a set");
    let bytes = set.to_bytes();
    assert_eq!(bytes.len(), 33 + 2 * 136);
    assert_eq!(EpochSet::from_bytes(&bytes), Ok(set.clone()));
    assert_eq!(EpochSet::of(&[]), None, "no set without validators");
    assert!(EpochSet::from_bytes(&bytes[..33]).is_err(), "no members");
    assert!(
        EpochSet::from_bytes(&bytes[..100]).is_err(),
        "a partial member"
    );
    assert!(EpochSet::from_bytes(&[]).is_err());
    let mut other_format = bytes.clone();
    other_format[0] = 2;
    assert!(EpochSet::from_bytes(&other_format).is_err());
    fuzz_mutations(&[bytes], 300, quasar_app::fuzzing::state_decode);
}
