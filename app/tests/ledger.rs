//! The ledger's rules: keys, signatures, nonces and amounts; a refused transaction changes
//! nothing, and the same transactions give the same ledger.

mod common;

use common::{addr, key, pay, tx, CHAIN, RULES};
use quasar_app::{
    Action, ExecError, Ledger, NoEvidence, SignedTransaction, TxError, VerificationCache,
};

/// What a refusal must match.
type Expected = fn(&ExecError) -> bool;

fn ledger() -> Ledger {
    Ledger::new(RULES, [(addr(1), 1_000), (addr(2), 50)]).expect("genesis")
}

/// The genesis ledger after account 1's first transaction (300 to account 3, carrying its key).
fn after_alices_first_transfer() -> (VerificationCache, Ledger) {
    let cache = VerificationCache::new(CHAIN, 64);
    let mut ledger = ledger();
    ledger
        .apply(&tx(1, 0, true, pay(3, 300)), 1, &cache, &NoEvidence)
        .expect("first");
    (cache, ledger)
}

#[test]
fn transfers_and_stake_move_value_and_advance_the_nonce() {
    let (cache, mut ledger) = after_alices_first_transfer();
    ledger
        .apply(
            &tx(1, 1, false, Action::AddStake { amount: 200 }),
            1,
            &cache,
            &NoEvidence,
        )
        .expect("stake");
    ledger
        .apply(
            &tx(1, 2, false, Action::WithdrawStake { amount: 50 }),
            1,
            &cache,
            &NoEvidence,
        )
        .expect("withdraw");
    let alice = ledger.account(&addr(1)).expect("alice");
    assert_eq!(alice.balance, 1_000 - 310 - 210 - 10 + 50);
    assert_eq!(alice.stake, 150);
    assert_eq!(alice.nonce, 3);
    assert_eq!(alice.public_key.as_ref(), Some(key(1).public_key()));
    let carol = ledger.account(&addr(3)).expect("created by the transfer");
    assert_eq!(
        (carol.balance, carol.nonce, carol.public_key.is_none()),
        (300, 0, true)
    );
    // A transfer to oneself costs only the fee.
    ledger
        .apply(&tx(1, 3, false, pay(1, 100)), 1, &cache, &NoEvidence)
        .expect("self");
    assert_eq!(ledger.account(&addr(1)).expect("alice").balance, 520 - 10);
}

#[test]
fn a_refused_transaction_changes_nothing_and_says_why() {
    let (cache, mut ledger) = after_alices_first_transfer();
    let before = ledger.clone();
    let cases: Vec<(SignedTransaction, Expected)> = vec![
        // Replayed and skipped nonces.
        (tx(1, 0, false, pay(3, 1)), |e| {
            matches!(
                e,
                ExecError::Nonce {
                    expected: 1,
                    found: 0
                }
            )
        }),
        (tx(1, 5, false, pay(3, 1)), |e| {
            matches!(
                e,
                ExecError::Nonce {
                    expected: 1,
                    found: 5
                }
            )
        }),
        // Overdraft (amount plus fee), a withdrawal above the stake, an amount that overflows
        // with the fee.
        (tx(1, 1, false, pay(3, 681)), |e| {
            matches!(
                e,
                ExecError::Insufficient {
                    needed: 691,
                    available: 690
                }
            )
        }),
        (tx(1, 1, false, Action::WithdrawStake { amount: 1 }), |e| {
            matches!(
                e,
                ExecError::InsufficientStake {
                    needed: 1,
                    staked: 0
                }
            )
        }),
        (tx(1, 1, false, pay(3, u64::MAX)), |e| {
            matches!(e, ExecError::Overflow)
        }),
        // The key again after the first transaction; no key from an account that has none.
        (tx(1, 1, true, pay(3, 1)), |e| {
            matches!(e, ExecError::KeyAlreadyKnown { .. })
        }),
        (tx(2, 0, false, pay(3, 1)), |e| {
            matches!(e, ExecError::UnknownKey { .. })
        }),
        // Leaving without a registration.
        (tx(1, 1, false, Action::Leave), |e| {
            matches!(e, ExecError::NotRegistered { .. })
        }),
    ];
    for (tx, expected) in cases {
        let error = ledger
            .apply(&tx, 1, &cache, &NoEvidence)
            .expect_err("refused");
        assert!(expected(&error), "{error}");
        assert_eq!(
            ledger, before,
            "a refused transaction changed the ledger: {error}"
        );
    }
}

#[test]
fn forged_and_foreign_signatures_are_refused() {
    let cache = VerificationCache::new(CHAIN, 64);
    let mut ledger = ledger();
    let good = tx(1, 0, true, pay(3, 300));
    let mut forged = good.as_bytes().to_vec();
    let at = forged.len() - 40;
    forged[at] ^= 1;
    let forged = SignedTransaction::decode(&forged).expect("decodes");
    assert_eq!(
        ledger.apply(&forged, 1, &cache, &NoEvidence),
        Err(ExecError::Tx(TxError::BadSignature))
    );
    // Another chain's ledger refuses the good one.
    let mut other = Ledger::new(
        quasar_app::ChainRules {
            chain_id: CHAIN + 1,
            ..RULES
        },
        [(addr(1), 1_000)],
    )
    .expect("genesis");
    assert!(matches!(
        other.apply(
            &good,
            1,
            &VerificationCache::new(CHAIN + 1, 64),
            &NoEvidence
        ),
        Err(ExecError::Tx(TxError::WrongChain { .. }))
    ));
    ledger
        .apply(&good, 1, &cache, &NoEvidence)
        .expect("the genuine one still applies");
}

#[test]
fn the_same_transactions_give_the_same_ledger_and_genesis_sums_duplicates() {
    let txs = [
        tx(1, 0, true, pay(2, 100)),
        tx(2, 0, true, pay(1, 40)),
        tx(1, 1, false, Action::AddStake { amount: 500 }),
    ];
    let run = || {
        let cache = VerificationCache::new(CHAIN, 64);
        let mut ledger = ledger();
        for tx in &txs {
            ledger.apply(tx, 1, &cache, &NoEvidence).expect("applies");
        }
        ledger
    };
    assert_eq!(run(), run());
    let doubled = Ledger::new(RULES, [(addr(1), 5), (addr(1), 7)]).expect("genesis");
    assert_eq!(doubled.account(&addr(1)).expect("alice").balance, 12);
    assert_eq!(
        Ledger::new(RULES, [(addr(1), u64::MAX), (addr(1), 1)]),
        Err(ExecError::Overflow)
    );
}
