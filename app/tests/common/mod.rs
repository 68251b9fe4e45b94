//! Keys, addresses and signed transactions shared by the app's integration tests.
#![allow(dead_code)] // each test binary uses its own subset

use quasar_app::{address_of, Action, SignedTransaction, Transaction};
use quasar_crypto::mldsa::{MlDsa65, SecretKey};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// The chain the tests' transactions are signed for.
pub const CHAIN: u64 = 7;

/// The rules of the tests' chain: epochs of 10 blocks (so stake unbonds in 30).
pub const RULES: quasar_app::ChainRules = quasar_app::ChainRules {
    chain_id: CHAIN,
    epoch_length: 10,
    sets_from_registry: false,
};

/// Account `i`'s key (a fixed seed per account).
pub fn key(i: u8) -> SecretKey<MlDsa65> {
    SecretKey::from_seed(&[i; 32])
}

/// Account `i`'s address.
pub fn addr(i: u8) -> [u8; 32] {
    address_of(key(i).public_key())
}

/// A transaction of `key(from)` with `nonce`, fee 10, carrying the key when `first`.
pub fn tx(from: u8, nonce: u64, first: bool, action: Action) -> SignedTransaction {
    let sk = key(from);
    Transaction {
        chain_id: CHAIN,
        nonce,
        fee: 10,
        sender: address_of(sk.public_key()),
        public_key: first.then(|| sk.public_key().clone()),
        action,
    }
    .sign(&sk, &mut ChaCha20Rng::seed_from_u64(nonce))
    .expect("sign")
}

/// A transfer of `amount` to account `to`.
pub fn pay(to: u8, amount: u64) -> Action {
    Action::Transfer {
        to: addr(to),
        amount,
    }
}

/// Calls the fuzz entry point `target` on every seed and on `count` seeded mutations of them
/// (a flipped bit, a truncation, a boundary byte, or a random byte among the first 160, where
/// headers, pointers and lengths are).
pub fn fuzz_mutations(seeds: &[Vec<u8>], count: usize, target: fn(&[u8])) {
    let mut rng = ChaCha20Rng::seed_from_u64(32);
    for seed in seeds {
        target(seed);
    }
    for _ in 0..count {
        let mut data = seeds[rng.gen_range(0..seeds.len())].clone();
        match rng.gen_range(0..4) {
            0 => {
                let i = rng.gen_range(0..data.len());
                data[i] ^= 1 << rng.gen_range(0..8);
            }
            1 => data.truncate(rng.gen_range(0..data.len())),
            2 => {
                let i = rng.gen_range(0..data.len());
                data[i] = [0, 0xff, 0x7f, 0x80][rng.gen_range(0..4)];
            }
            _ => {
                let i = rng.gen_range(0..data.len().min(160));
                data[i] = rng.gen();
            }
        }
        target(&data);
    }
}
