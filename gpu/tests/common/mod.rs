//! Inputs shared by the adapter's tests.

use quasar_crypto::accel::NttClass;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// The ring degree of every class.
pub const DEGREE: usize = 256;

/// `count` rows of `class`: random, all-zero, all-(q−1) and single-spike rows, in turn.
pub fn mixed_rows(class: NttClass, count: usize, seed: u64) -> Vec<u64> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let q = class.modulus();
    (0..count)
        .flat_map(|r| match r % 4 {
            0 => (0..DEGREE).map(|_| rng.gen_range(0..q)).collect(),
            1 => vec![0; DEGREE],
            2 => vec![q - 1; DEGREE],
            _ => {
                let mut row = vec![0; DEGREE];
                row[rng.gen_range(0..DEGREE)] = rng.gen_range(1..q);
                row
            }
        })
        .collect()
}
