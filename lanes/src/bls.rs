//! The BLS certificate lane: signer bitmap → distinct signer set → aggregate public key → one
//! pairing check, with the stake-weighted quorum rule.
//!
//! Bitmap encoding: validator `i` is bit `i % 8` (least significant first) of byte `i / 8`; the
//! bitmap has exactly `ceil(n / 8)` bytes and no bit at or above `n` is set, so every signer set has
//! one canonical encoding and duplicate signers cannot be expressed.
//!
//! Source: same-message aggregation is `FastAggregateVerify` of draft-irtf-cfrg-bls-signature-05
//! §3.3.4, safe here because every key passed a proof of possession at registration (§3.3).

use crate::{LaneError, ValidatorSet};
use quasar_crypto::bls::{fast_aggregate_verify, PublicKey, Signature};

/// The canonical bitmap length for `n` validators: `ceil(n / 8)` bytes.
pub fn bitmap_len(n: usize) -> usize {
    n.div_ceil(8)
}

/// Encodes distinct member indices as a canonical bitmap for a set of `n` validators.
/// Indices `>= n` are ignored (callers pass members only).
pub fn bitmap_from_signers(signers: impl IntoIterator<Item = usize>, n: usize) -> Vec<u8> {
    let mut bitmap = vec![0u8; bitmap_len(n)];
    for i in signers {
        if let Some(byte) = bitmap.get_mut(i / 8) {
            if i < n {
                *byte |= 1 << (i % 8);
            }
        }
    }
    bitmap
}

/// Decodes a canonical bitmap into ascending member indices.
///
/// Errors: [`LaneError::BitmapLength`] unless the length is `ceil(n / 8)`;
/// [`LaneError::NonMemberSigner`] for a set bit at index `>= n`; [`LaneError::NoSigners`].
pub fn signers_from_bitmap(bitmap: &[u8], n: usize) -> Result<Vec<usize>, LaneError> {
    let expected = bitmap_len(n);
    if bitmap.len() != expected {
        return Err(LaneError::BitmapLength {
            expected,
            got: bitmap.len(),
        });
    }
    let mut signers = Vec::new();
    for (byte_index, byte) in bitmap.iter().enumerate() {
        for bit in 0..8 {
            if byte & (1 << bit) != 0 {
                let index = byte_index * 8 + bit;
                if index >= n {
                    return Err(LaneError::NonMemberSigner { index, n });
                }
                signers.push(index);
            }
        }
    }
    if signers.is_empty() {
        return Err(LaneError::NoSigners);
    }
    Ok(signers)
}

/// A BLS certificate leg whose signers, quorum and aggregate signature have been checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedSigners {
    /// Distinct signer indices, ascending.
    pub signers: Vec<usize>,
    /// Their total stake (a quorum of the set).
    pub stake: u64,
}

/// Verifies a same-message BLS aggregate over `message` by the validators named in `bitmap`.
///
/// `aggregate` is a 96-byte compressed G2 signature. Errors: bitmap errors of
/// [`signers_from_bitmap`], [`LaneError::NoQuorum`] when the signers hold at most 2/3 of the stake
/// (checked before any pairing), [`LaneError::Signature`] when the aggregate does not decode or
/// the pairing check fails.
pub fn verify_aggregate(
    set: &ValidatorSet,
    bitmap: &[u8],
    message: &[u8],
    aggregate: &[u8],
) -> Result<VerifiedSigners, LaneError> {
    let signers = signers_from_bitmap(bitmap, set.len())?;
    let stake = set
        .stake_of(signers.iter().copied())
        .ok_or(LaneError::NonMemberSigner {
            index: usize::MAX,
            n: set.len(),
        })?;
    if !set.is_quorum(stake) {
        return Err(LaneError::NoQuorum {
            signed: stake,
            total: set.total_stake(),
        });
    }
    let signature = Signature::from_bytes(aggregate)?;
    let keys: Vec<PublicKey> = signers
        .iter()
        .filter_map(|&i| set.get(i).map(|v| v.public_key))
        .collect();
    fast_aggregate_verify(&keys, message, &signature)?;
    Ok(VerifiedSigners { signers, stake })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Validator;
    use quasar_crypto::bls::SecretKey;

    fn set(stakes: &[u64]) -> (Vec<SecretKey>, ValidatorSet) {
        let keys: Vec<SecretKey> = (0..stakes.len())
            .map(|i| SecretKey::from_seed(&[i as u8 + 1; 32]))
            .collect();
        let validators = keys
            .iter()
            .zip(stakes)
            .map(|(k, &stake)| Validator {
                public_key: k.public_key(),
                stake,
            })
            .collect();
        (keys, ValidatorSet::new(validators).unwrap())
    }

    #[test]
    fn quorum_is_strictly_more_than_two_thirds() {
        let (_, s) = set(&[1, 1, 1]);
        assert!(!s.is_quorum(2));
        assert!(s.is_quorum(3));
        let (_, s) = set(&[1, 1, 1, 1]);
        assert!(!s.is_quorum(2));
        assert!(s.is_quorum(3));
        let (_, s) = set(&[u64::MAX / 2, u64::MAX / 2]);
        assert!(s.is_quorum(u64::MAX - 1));
        assert!(!s.is_quorum(u64::MAX / 2));
    }

    #[test]
    fn bitmap_round_trip_and_canonical_rules() {
        let bm = bitmap_from_signers([0, 3, 9], 10);
        assert_eq!(bm, vec![0b0000_1001, 0b0000_0010]);
        assert_eq!(signers_from_bitmap(&bm, 10).unwrap(), vec![0, 3, 9]);
        assert_eq!(
            signers_from_bitmap(&[0b1000_0000, 0], 10),
            Ok(vec![7]),
            "bit 7 is validator 7"
        );
        assert!(matches!(
            signers_from_bitmap(&[0, 0b0000_0100], 10),
            Err(LaneError::NonMemberSigner { index: 10, n: 10 })
        ));
        assert!(matches!(
            signers_from_bitmap(&[1], 10),
            Err(LaneError::BitmapLength { .. })
        ));
        assert!(matches!(
            signers_from_bitmap(&[0, 0], 10),
            Err(LaneError::NoSigners)
        ));
    }

    #[test]
    fn aggregate_of_a_quorum_verifies_and_a_minority_does_not() {
        let (keys, s) = set(&[10, 10, 10, 10]);
        let msg = b"block";
        let sigs: Vec<Signature> = keys.iter().map(|k| k.sign(msg)).collect();
        let agg = Signature::aggregate(&sigs[..3]).unwrap();
        let ok =
            verify_aggregate(&s, &bitmap_from_signers([0, 1, 2], 4), msg, &agg.to_bytes()).unwrap();
        assert_eq!(ok.signers, vec![0, 1, 2]);
        assert_eq!(ok.stake, 30);
        // Bitmap names a different signer than the one who signed.
        assert!(matches!(
            verify_aggregate(&s, &bitmap_from_signers([0, 1, 3], 4), msg, &agg.to_bytes()),
            Err(LaneError::Signature(_))
        ));
        // Wrong message.
        assert!(verify_aggregate(
            &s,
            &bitmap_from_signers([0, 1, 2], 4),
            b"x",
            &agg.to_bytes()
        )
        .is_err());
        // Two signers are not a quorum, whatever the signature.
        let agg2 = Signature::aggregate(&sigs[..2]).unwrap();
        assert!(matches!(
            verify_aggregate(&s, &bitmap_from_signers([0, 1], 4), msg, &agg2.to_bytes()),
            Err(LaneError::NoQuorum {
                signed: 20,
                total: 40
            })
        ));
    }

    #[test]
    fn validator_set_rejects_bad_sets() {
        assert_eq!(ValidatorSet::new(vec![]), Err(LaneError::EmptyValidatorSet));
        let k = SecretKey::from_seed(&[9; 32]).public_key();
        assert_eq!(
            ValidatorSet::new(vec![Validator {
                public_key: k,
                stake: 0
            }]),
            Err(LaneError::ZeroStake { index: 0 })
        );
        assert_eq!(
            ValidatorSet::new(vec![
                Validator {
                    public_key: k,
                    stake: 1
                },
                Validator {
                    public_key: k,
                    stake: 1
                }
            ]),
            Err(LaneError::DuplicateValidator { index: 1 })
        );
        assert_eq!(
            ValidatorSet::new(vec![
                Validator {
                    public_key: k,
                    stake: u64::MAX
                },
                Validator {
                    public_key: SecretKey::from_seed(&[8; 32]).public_key(),
                    stake: 1
                }
            ]),
            Err(LaneError::StakeOverflow)
        );
    }

    #[test]
    fn stake_weighted_selection_follows_cumulative_intervals() {
        let (_, s) = set(&[1, 3, 6]);
        assert_eq!(s.select_by_stake(0), 0);
        assert_eq!(s.select_by_stake(1), 1);
        assert_eq!(s.select_by_stake(3), 1);
        assert_eq!(s.select_by_stake(4), 2);
        assert_eq!(s.select_by_stake(9), 2);
    }
}
