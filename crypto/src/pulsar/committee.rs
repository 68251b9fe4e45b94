//! Pulsar committees: a validator set larger than [`MAX_PARTIES`] signs Pulsar legs through a
//! committee of n ≤ 6 validators sampled once per epoch, by stake, deterministically from a
//! public epoch seed, which then holds a t-of-n Pulsar key (dealt by thresholdd).
//!
//! # The trust this adds
//!
//! A Pulsar signature shows that t members of the committee signed, not that a quorum of the
//! set did. If t or more members are Byzantine they can sign anything in the set's name
//! (safety), and if more than n − t are Byzantine or offline the leg cannot be produced
//! (liveness). With a fraction f of the stake Byzantine, each member is Byzantine with
//! probability about f (draws by stake; without replacement only lowers the variance), so
//!
//! ```text
//! P[unsafe] ≈ P[Bin(n, f) ≥ t]        P[stalled] ≈ P[Bin(n, f) > n − t]
//! ```
//!
//! ([`unsafe_probability`]). At f just under 1/3, the BFT bound: 2-of-3 ≈ 0.26 unsafe,
//! 3-of-5 ≈ 0.21, 4-of-6 ≈ 0.10, 5-of-6 ≈ 0.018. A committee of 6 cannot give the 2^−40-type
//! guarantees of a stake quorum: Pulsar is one leg among several (the `aurora` and `polaris`
//! profiles pair it with the BLS quorum and Corona), never the only evidence of finality, and
//! epochs should prefer the largest threshold that keeps liveness acceptable.
//!
//! # Sampling
//!
//! A SHAKE256 stream over `QUASAR-PULSAR-COMMITTEE-v1` ‖ seed ‖ n draws members one at a time:
//! each draw picks a validator with probability proportional to its stake among those not yet
//! drawn (an unbiased integer draw below the remaining stake, by rejection). The committee is
//! returned in increasing index order; its party index i is the i-th member.

use sha3::digest::{ExtendableOutput, Update, XofReader};
use sha3::Shake256;
use thiserror::Error;

use super::params::MAX_PARTIES;

/// Why a committee cannot be sampled.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CommitteeError {
    /// The committee size is outside 2..=6.
    #[error("committee of {0}: Pulsar keys have 2 to 6 parties")]
    Size(usize),
    /// Fewer validators with nonzero stake than seats.
    #[error("{staked} validators with stake, the committee needs {size}")]
    TooFewValidators {
        /// Validators with nonzero stake.
        staked: usize,
        /// Seats.
        size: usize,
    },
}

/// The committee of `size` validators for `seed` (a public per-epoch value, e.g. the hash of
/// the epoch's first block), drawn by stake from `stakes` (module docs), as increasing
/// indices into `stakes`. Errors: [`CommitteeError`].
pub fn sample_committee(
    seed: &[u8; 32],
    stakes: &[u64],
    size: usize,
) -> Result<Vec<usize>, CommitteeError> {
    if !(2..=MAX_PARTIES).contains(&size) {
        return Err(CommitteeError::Size(size));
    }
    let staked = stakes.iter().filter(|&&s| s > 0).count();
    if staked < size {
        return Err(CommitteeError::TooFewValidators { staked, size });
    }
    let mut h = Shake256::default();
    h.update(b"QUASAR-PULSAR-COMMITTEE-v1");
    h.update(seed);
    h.update(&(size as u32).to_le_bytes());
    let mut stream = h.finalize_xof();
    let mut remaining: Vec<u128> = stakes.iter().map(|&s| u128::from(s)).collect();
    let mut chosen = Vec::with_capacity(size);
    for _ in 0..size {
        let total: u128 = remaining.iter().sum();
        // Unbiased draw in [0, total): reject the top partial block of 2^128.
        let limit = u128::MAX - (u128::MAX % total + 1) % total;
        let point = loop {
            let mut bytes = [0u8; 16];
            stream.read(&mut bytes);
            let x = u128::from_le_bytes(bytes);
            if x <= limit {
                break x % total;
            }
        };
        let mut cumulative = 0u128;
        let index = remaining
            .iter()
            .position(|&s| {
                cumulative += s;
                point < cumulative
            })
            .unwrap_or(0);
        if let Some(s) = remaining.get_mut(index) {
            *s = 0;
        }
        chosen.push(index);
    }
    chosen.sort_unstable();
    Ok(chosen)
}

/// P\[Bin(size, byzantine) ≥ threshold\]: the chance that a t-of-n committee drawn from a set
/// with Byzantine stake fraction `byzantine` has t Byzantine members (module docs).
pub fn unsafe_probability(threshold: usize, size: usize, byzantine: f64) -> f64 {
    (threshold..=size)
        .map(|k| {
            super::params::binomial(size, k) as f64
                * byzantine.powi(k as i32)
                * (1.0 - byzantine).powi((size - k) as i32)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn committees_are_deterministic_distinct_and_follow_stake() {
        let stakes = [10u64, 0, 5, 5, 1000, 1, 1, 1];
        let a = sample_committee(&[1; 32], &stakes, 4).unwrap();
        assert_eq!(a, sample_committee(&[1; 32], &stakes, 4).unwrap());
        assert_eq!(a.len(), 4);
        assert!(a.windows(2).all(|w| w[0] < w[1]));
        assert!(!a.contains(&1), "zero stake is never drawn");
        assert!(
            a.contains(&4),
            "the heaviest validator is (almost) always drawn"
        );
        // Over many seeds, the frequency of a member tracks its stake.
        let stakes = [1u64, 1, 1, 1, 1, 1, 1, 1, 1, 9];
        let mut heavy = 0;
        for s in 0..400u32 {
            let mut seed = [0u8; 32];
            seed[..4].copy_from_slice(&s.to_le_bytes());
            if sample_committee(&seed, &stakes, 2).unwrap().contains(&9) {
                heavy += 1;
            }
        }
        // P[9 drawn in 2 draws] = 9/18 + (9/18)·(9/17) ≈ 0.76: about 306 of 400.
        assert!((270..345).contains(&heavy), "{heavy}");
        assert_eq!(
            sample_committee(&[0; 32], &[1, 1, 0], 3),
            Err(CommitteeError::TooFewValidators { staked: 2, size: 3 })
        );
        assert_eq!(
            sample_committee(&[0; 32], &[1; 10], 7),
            Err(CommitteeError::Size(7))
        );
    }

    #[test]
    fn the_documented_trust_numbers_hold() {
        let f = 1.0 / 3.0;
        for (t, n, expected) in [(2, 3, 0.26), (3, 5, 0.21), (4, 6, 0.10), (5, 6, 0.018)] {
            let p = unsafe_probability(t, n, f);
            assert!((p - expected).abs() < 0.005, "({t}, {n}): {p}");
        }
    }
}
