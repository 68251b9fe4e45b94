//! Transactions: encoding (golden bytes, canonical form), signatures, the verification cache,
//! and the fuzz entry point on mutated transactions.

mod common;

use common::{fuzz_mutations, key, CHAIN};
use quasar_app::tx::{MAX_TX_BYTES, SIGNED_TX_TYPE, TX_BODY_TYPE};
use quasar_app::{address_of, Action, SignedTransaction, Transaction, TxError, VerificationCache};
use quasar_crypto::mldsa::{MlDsa65, SecretKey};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

fn transfer(from: &SecretKey<MlDsa65>, nonce: u64, amount: u64) -> Transaction {
    Transaction {
        chain_id: CHAIN,
        nonce,
        fee: 10,
        sender: address_of(from.public_key()),
        public_key: (nonce == 0).then(|| from.public_key().clone()),
        action: Action::Transfer {
            to: address_of(key(9).public_key()),
            amount,
        },
    }
}

fn signed(from: &SecretKey<MlDsa65>, nonce: u64, amount: u64) -> SignedTransaction {
    let mut rng = ChaCha20Rng::seed_from_u64(nonce ^ amount);
    transfer(from, nonce, amount)
        .sign(from, &mut rng)
        .expect("sign")
}

/// `tx` with one bit of its signature flipped (it still decodes).
fn forge(tx: &SignedTransaction) -> SignedTransaction {
    let mut forged = tx.as_bytes().to_vec();
    let last = forged.len() - 40;
    forged[last] ^= 1;
    SignedTransaction::decode(&forged).expect("decodes")
}

/// Sets the ZAP header's size field to the buffer's length (after a test grew it).
fn fix_size(bytes: &mut [u8]) {
    let len = u32::try_from(bytes.len()).expect("small").to_le_bytes();
    bytes[12..16].copy_from_slice(&len);
}

#[test]
fn a_signed_transfer_round_trips_and_verifies() {
    let alice = key(1);
    let first = signed(&alice, 0, 500);
    let decoded = SignedTransaction::decode(first.as_bytes()).expect("decode");
    assert_eq!(decoded, first);
    assert_eq!(*decoded.hash(), quasar_wire::tx_hash(first.as_bytes()));
    decoded.verify(CHAIN, alice.public_key()).expect("verifies");
    // The first transaction carries the key; a later one only the signature.
    let later = signed(&alice, 1, 500);
    assert!(later.transaction().public_key.is_none());
    assert!(later.as_bytes().len() + 1900 < first.as_bytes().len());
    later.verify(CHAIN, alice.public_key()).expect("verifies");
}

#[test]
fn the_body_encoding_matches_its_golden_bytes() {
    let body = Transaction {
        chain_id: 7,
        nonce: 2,
        fee: 10,
        sender: [0x11; 32],
        public_key: None,
        action: Action::Transfer {
            to: [0x22; 32],
            amount: 500,
        },
    };
    let golden = concat!(
        // header: "ZAP\0", version 2, type 0x40, root at 16, size 136
        "5a41500002000040",
        "1000000088000000",
        // chain id, nonce, fee
        "0700000000000000",
        "0200000000000000",
        "0a00000000000000",
        // sender
        "1111111111111111111111111111111111111111111111111111111111111111",
        // kind 1 (transfer), 7 zero bytes; amount 500
        "0100000000000000",
        "f401000000000000",
        // recipient
        "2222222222222222222222222222222222222222222222222222222222222222",
        // public key: an empty bytes field (offset 16 from the field, the message's end; length 0)
        "1000000000000000",
        // registration: an empty bytes field (offset 8, the message's end; length 0)
        "0800000000000000",
    );
    let bytes = body.encode().expect("encode");
    assert_eq!(hex::encode(&bytes), golden);
    assert_eq!(bytes[6], 0); // reserved flags byte
    assert_eq!(bytes[7], TX_BODY_TYPE);
    assert_eq!(Transaction::decode(&bytes).expect("decode"), body);
}

#[test]
fn signatures_bind_the_chain_the_key_and_every_byte() {
    let alice = key(1);
    let tx = signed(&alice, 1, 500);
    assert_eq!(
        tx.verify(CHAIN + 1, alice.public_key()),
        Err(TxError::WrongChain {
            expected: CHAIN + 1,
            found: CHAIN
        })
    );
    assert!(matches!(
        tx.verify(CHAIN, key(2).public_key()),
        Err(TxError::WrongKey { .. })
    ));
    // A flipped signature byte still decodes (only the length is checked there) and is refused.
    let forged = forge(&tx);
    assert_eq!(
        forged.verify(CHAIN, alice.public_key()),
        Err(TxError::BadSignature)
    );
    // A body changed after signing (the amount) is refused too.
    let mut raised = tx.as_bytes().to_vec();
    let amount = raised
        .windows(8)
        .position(|w| w == 500u64.to_le_bytes())
        .expect("amount");
    raised[amount + 1] = 0xff;
    let raised = SignedTransaction::decode(&raised).expect("decodes");
    assert!(matches!(
        raised.transaction().action,
        Action::Transfer { amount, .. } if amount != 500
    ));
    assert_eq!(
        raised.verify(CHAIN, alice.public_key()),
        Err(TxError::BadSignature)
    );
    // A first transaction whose carried key is not the sender's is refused before the signature.
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let mut lying = transfer(&alice, 0, 5);
    lying.public_key = Some(key(2).public_key().clone());
    let lying = lying.sign(&alice, &mut rng).expect("sign");
    assert!(matches!(
        lying.verify(CHAIN, alice.public_key()),
        Err(TxError::WrongKey { .. })
    ));
}

#[test]
fn only_the_canonical_encoding_decodes() {
    let tx = signed(&key(1), 1, 500);
    // Eight more bytes at the end, with the size fixed up: every pointer still resolves.
    let mut longer = tx.as_bytes().to_vec();
    longer.extend_from_slice(&[0; 8]);
    fix_size(&mut longer);
    assert_eq!(
        SignedTransaction::decode(&longer),
        Err(TxError::NonCanonical)
    );
    // A non-zero padding byte in the body.
    let body = transfer(&key(1), 1, 500);
    let mut bytes = body.encode().expect("encode");
    bytes[16 + 57] = 1;
    assert_eq!(Transaction::decode(&bytes), Err(TxError::NonCanonical));
}

#[test]
fn malformed_transactions_get_a_clear_error() {
    let alice = key(1);
    let encode = |action: Action| {
        Transaction {
            action,
            ..transfer(&alice, 1, 0)
        }
        .encode()
        .expect("encode")
    };
    // `Leave` with an amount; `AddStake` with a recipient; an unknown kind.
    let mut leave = encode(Action::Leave);
    leave[16 + 64] = 1;
    assert_eq!(
        Transaction::decode(&leave),
        Err(TxError::UnusedField("amount"))
    );
    let mut stake = encode(Action::AddStake { amount: 3 });
    stake[16 + 72] = 1;
    assert_eq!(
        Transaction::decode(&stake),
        Err(TxError::UnusedField("recipient"))
    );
    let mut unknown = encode(Action::Leave);
    unknown[16 + 56] = 99;
    assert_eq!(
        Transaction::decode(&unknown),
        Err(TxError::UnknownAction(99))
    );
    // A body where a signed transaction belongs, and the other way round.
    assert!(matches!(
        SignedTransaction::decode(&encode(Action::Leave)),
        Err(TxError::WrongType {
            found: TX_BODY_TYPE,
            ..
        })
    ));
    let tx = signed(&alice, 1, 1);
    assert!(matches!(
        Transaction::decode(tx.as_bytes()),
        Err(TxError::WrongType {
            found: SIGNED_TX_TYPE,
            ..
        })
    ));
    // Too long: refused before any parsing.
    assert_eq!(
        SignedTransaction::decode(&vec![0; MAX_TX_BYTES + 1]),
        Err(TxError::TooLarge {
            len: MAX_TX_BYTES + 1,
            max: MAX_TX_BYTES
        })
    );
    // Truncated, and not ZAP at all.
    let bytes = tx.as_bytes();
    assert!(matches!(
        SignedTransaction::decode(&bytes[..bytes.len() - 1]),
        Err(TxError::Malformed(_))
    ));
    assert!(matches!(
        SignedTransaction::decode(b"{\"to\":1}"),
        Err(TxError::Malformed(_))
    ));
}

#[test]
fn the_cache_answers_a_second_check_and_remembers_refusals() {
    let alice = key(1);
    let cache = VerificationCache::new(CHAIN, 8);
    let tx = signed(&alice, 1, 500);
    cache.verify(&tx, alice.public_key()).expect("valid");
    cache.verify(&tx, alice.public_key()).expect("valid");
    assert_eq!(cache.counts(), (1, 1));
    // The same body with a forged signature is another entry: checked, refused, remembered.
    let forged = forge(&tx);
    for _ in 0..2 {
        assert_eq!(
            cache.verify(&forged, alice.public_key()),
            Err(TxError::BadSignature)
        );
    }
    assert_eq!(cache.counts(), (2, 2));
    // Another chain's cache checks for itself and refuses; a key that is not the sender's is
    // refused on a miss and nothing is remembered.
    let other_chain = VerificationCache::new(CHAIN + 1, 8);
    for _ in 0..2 {
        assert!(matches!(
            other_chain.verify(&tx, alice.public_key()),
            Err(TxError::WrongChain { .. })
        ));
    }
    assert_eq!(other_chain.counts(), (0, 2));
    let fresh = signed(&alice, 2, 500);
    for _ in 0..2 {
        assert!(matches!(
            cache.verify(&fresh, key(2).public_key()),
            Err(TxError::WrongKey { .. })
        ));
    }
    assert_eq!(cache.counts(), (2, 4));
    cache.verify(&fresh, alice.public_key()).expect("valid");
}

#[test]
fn the_cache_keeps_at_most_its_capacity() {
    let alice = key(1);
    let cache = VerificationCache::new(CHAIN, 2);
    let txs: Vec<_> = (1..=3).map(|n| signed(&alice, n, 7)).collect();
    for tx in &txs {
        cache.verify(tx, alice.public_key()).expect("valid");
    }
    // The first was dropped for the third: checking it again is a miss (and still valid).
    cache.verify(&txs[0], alice.public_key()).expect("valid");
    assert_eq!(cache.counts(), (0, 4));
    cache.verify(&txs[0], alice.public_key()).expect("valid");
    assert_eq!(cache.counts(), (1, 4));
}

#[test]
fn the_fuzz_entry_point_survives_mutated_transactions() {
    let seeds: Vec<Vec<u8>> = vec![
        signed(&key(1), 0, 5).as_bytes().to_vec(),
        signed(&key(2), 3, 9).as_bytes().to_vec(),
        transfer(&key(3), 4, 1).encode().expect("encode"),
        Transaction {
            action: Action::Leave,
            ..transfer(&key(3), 0, 0)
        }
        .encode()
        .expect("encode"),
    ];
    fuzz_mutations(&seeds, 400, quasar_app::fuzzing::signed_transaction);
}

#[test]
fn prepared_keys_give_the_verdicts_of_the_plain_check() {
    let alice = key(1);
    let cache = VerificationCache::new(CHAIN, 64);
    // Alice's first valid transaction marks her as seen, the second prepares her key, the
    // later ones use it.
    for nonce in 0..4 {
        let tx = signed(&alice, nonce, 100 + nonce);
        assert_eq!(cache.verify(&tx, alice.public_key()), Ok(()));
        assert_eq!(
            cache.prepared_keys(),
            usize::from(nonce > 0),
            "nonce {nonce}"
        );
    }
    let tx = signed(&alice, 9, 5);
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    // Forged signatures: one flipped bit anywhere in the signature, each a new entry (miss).
    let sig_start = tx.as_bytes().len() - 3309;
    for _ in 0..24 {
        let mut forged = tx.as_bytes().to_vec();
        let bit = rng.gen_range(sig_start * 8..forged.len() * 8);
        forged[bit / 8] ^= 1 << (bit % 8);
        let Ok(forged) = SignedTransaction::decode(&forged) else {
            continue;
        };
        assert_eq!(
            cache.verify(&forged, alice.public_key()),
            forged.verify(CHAIN, alice.public_key()),
            "bit {bit}"
        );
        assert!(cache.verify(&forged, alice.public_key()).is_err());
    }
    // With Alice's key prepared: another key for her transaction, a key carried that is not
    // the one given, and another chain are refused as the plain check refuses them.
    let fresh = signed(&alice, 10, 5);
    assert!(matches!(
        cache.verify(&fresh, key(2).public_key()),
        Err(TxError::WrongKey { .. })
    ));
    let mut carrying = transfer(&alice, 11, 5);
    carrying.public_key = Some(key(2).public_key().clone());
    let carrying = carrying.sign(&alice, &mut rng).expect("sign");
    assert!(matches!(
        cache.verify(&carrying, alice.public_key()),
        Err(TxError::WrongKey { .. })
    ));
    let mut elsewhere = transfer(&alice, 12, 5);
    elsewhere.chain_id = CHAIN + 1;
    let elsewhere = elsewhere.sign(&alice, &mut rng).expect("sign");
    assert!(matches!(
        cache.verify(&elsewhere, alice.public_key()),
        Err(TxError::WrongChain { .. })
    ));
    assert_eq!(cache.verify(&fresh, alice.public_key()), Ok(()));
    // Forged transactions of a sender never seen prepare nothing.
    let bob = key(3);
    let forged = forge(&signed(&bob, 1, 5));
    for _ in 0..3 {
        assert_eq!(
            cache.verify(&forged, bob.public_key()),
            Err(TxError::BadSignature)
        );
    }
    assert_eq!(cache.prepared_keys(), 1);
    // A sender seen once: a forgery in its name prepares its (authentic) key once, and the
    // next forgery finds it prepared.
    let carol = key(4);
    assert_eq!(
        cache.verify(&signed(&carol, 1, 5), carol.public_key()),
        Ok(())
    );
    assert_eq!(cache.prepared_keys(), 1);
    for amount in [6, 7] {
        assert_eq!(
            cache.verify(&forge(&signed(&carol, 2, amount)), carol.public_key()),
            Err(TxError::BadSignature)
        );
        assert_eq!(cache.prepared_keys(), 2);
    }
}
