//! Photon's leader schedule: a deterministic, stake-weighted choice per view.

use quasar_crypto::hash::{tagged_hash, Hash};
use quasar_lanes::ValidatorSet;

/// The leader of `view`: the validator whose cumulative-stake interval contains
/// `r * total_stake >> 64`, where `r` is the first 8 bytes (LE) of
/// `tagged_hash("QUASAR-LEADER-v1", [genesis, chain_id, epoch, view])`. Each validator leads a
/// share of views proportional to its stake; the widening multiply has no modulo bias.
pub fn leader(
    validators: &ValidatorSet,
    genesis: &Hash,
    chain_id: u64,
    epoch: u64,
    view: u64,
) -> u32 {
    let seed = tagged_hash(
        "QUASAR-LEADER-v1",
        &[
            genesis,
            &chain_id.to_le_bytes(),
            &epoch.to_le_bytes(),
            &view.to_le_bytes(),
        ],
    );
    let mut first = [0u8; 8];
    first.copy_from_slice(&seed[..8]);
    let r = u64::from_le_bytes(first);
    let point = ((u128::from(r) * u128::from(validators.total_stake())) >> 64) as u64;
    validators.select_by_stake(point) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use quasar_crypto::bls::SecretKey;
    use quasar_lanes::Validator;

    #[test]
    fn leaders_follow_stake_shares() {
        let validators = ValidatorSet::new(
            (0..4u8)
                .map(|i| Validator {
                    public_key: SecretKey::from_seed(&[i + 1; 32]).public_key(),
                    stake: if i == 0 { 70 } else { 10 },
                })
                .collect(),
        )
        .unwrap();
        let mut counts = [0u32; 4];
        for view in 0..4000 {
            counts[leader(&validators, &[7; 32], 1, 0, view) as usize] += 1;
        }
        // Validator 0 holds 70 % of the stake; allow generous sampling noise.
        assert!((2600..3000).contains(&counts[0]), "{counts:?}");
        for c in &counts[1..] {
            assert!((300..500).contains(c), "{counts:?}");
        }
        // Deterministic.
        assert_eq!(
            leader(&validators, &[7; 32], 1, 0, 42),
            leader(&validators, &[7; 32], 1, 0, 42)
        );
    }
}
