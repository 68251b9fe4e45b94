//! The BLS certificate lane: signer bitmap → distinct signer set → aggregate public key → one
//! pairing check, with the stake-weighted quorum rule.
//!
//! Bitmap encoding: validator `i` is bit `i % 8` (least significant first) of byte `i / 8`; the
//! bitmap has exactly `ceil(n / 8)` bytes and no bit at or above `n` is set, so every signer set has
//! one canonical encoding and duplicate or non-member signers cannot be expressed.
//!
//! Source: same-message aggregation is `FastAggregateVerify` of draft-irtf-cfrg-bls-signature-05
//! §3.3.4, safe here because every key passed a proof of possession at registration (§3.3).
//!
//! # Where keys come from
//!
//! 1. The validator-set table: a [`ValidatorSet`] holds its members' keys decoded (and
//!    subgroup-checked) once, plus their sum. [`verify_aggregate`] never decompresses a key: it
//!    sums the signers' keys, or, when more than half of the set signed, subtracts the non-signers
//!    from the precomputed total, so a full certificate costs about one signature verification
//!    whatever `n` is.
//! 2. The pubkey cache ([`PublicKeyCache`]), for keys that arrive compressed and are not in the
//!    table (a certificate of another epoch, a key list from a peer):
//!    [`verify_aggregate_compressed`].
//! 3. Decoding (KeyValidate) on a cache miss; the decoded key is inserted for next time.
//!
//! Checks, cheapest first: canonical bitmap (length, padding bits, non-empty), quorum stake, then
//! the aggregate signature's encoding (canonical compressed G2, in the subgroup, not the identity),
//! then one pairing check.

use crate::{LaneError, ValidatorSet};
use quasar_crypto::bls::{
    fast_aggregate_verify, AggregatePublicKey, PublicKey, Signature, PUBLIC_KEY_LEN,
};
use quasar_crypto::bls_cache::PublicKeyCache;

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

/// The signers of a canonical `bitmap` over `set`, ascending, and their stake, if they hold a
/// stake quorum (docs/architecture.md §2), checked before any signature is looked at.
///
/// Errors: those of [`signers_from_bitmap`]; [`LaneError::NoQuorum`].
pub fn quorum_signers(set: &ValidatorSet, bitmap: &[u8]) -> Result<(Vec<usize>, u64), LaneError> {
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
    Ok((signers, stake))
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

/// A certificate leg (BLS, Magnetar) whose signers, quorum and signatures have been checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedSigners {
    /// Distinct signer indices, ascending.
    pub signers: Vec<usize>,
    /// Their total stake (a quorum of the set).
    pub stake: u64,
}

/// Verifies a same-message BLS aggregate over `message` by the validators named in `bitmap`.
///
/// `bitmap` is the canonical signer bitmap for `set` (module docs); `aggregate` is a 96-byte
/// compressed G2 signature. The aggregate key is built from the set's table (no decompression).
///
/// Errors: bitmap errors of [`signers_from_bitmap`] ([`LaneError::BitmapLength`],
/// [`LaneError::NonMemberSigner`] for a bit at or beyond `n`, including padding bits,
/// [`LaneError::NoSigners`]); [`LaneError::NoQuorum`] when the signers hold at most 2/3 of the
/// stake (checked before any pairing); [`LaneError::Signature`] when the aggregate does not decode
/// (wrong length, non-canonical, not in G2, the identity) or the pairing check fails.
pub fn verify_aggregate(
    set: &ValidatorSet,
    bitmap: &[u8],
    message: &[u8],
    aggregate: &[u8],
) -> Result<VerifiedSigners, LaneError> {
    let (signers, stake) = quorum_signers(set, bitmap)?;
    let signature = Signature::from_bytes(aggregate)?;
    signers_key(set, &signers)?.verify(message, &signature)?;
    Ok(VerifiedSigners { signers, stake })
}

/// The aggregate key of `signers` (distinct members of `set`): their sum, or, when more than half
/// of the set signed, the set's precomputed sum minus the non-signers' keys. Either way at most
/// `n / 2` additions.
fn signers_key(set: &ValidatorSet, signers: &[usize]) -> Result<AggregatePublicKey, LaneError> {
    let validators = set.validators();
    if signers.len() * 2 <= validators.len() {
        let keys = signers
            .iter()
            .filter_map(|&i| validators.get(i))
            .map(|v| &v.public_key);
        return Ok(AggregatePublicKey::aggregate(keys)?);
    }
    let mut signed = vec![false; validators.len()];
    for &i in signers {
        if let Some(bit) = signed.get_mut(i) {
            *bit = true;
        }
    }
    let non_signers = validators
        .iter()
        .zip(&signed)
        .filter(|(_, &signed)| !signed)
        .map(|(v, _)| &v.public_key);
    let mut key = *set.aggregate_key();
    // No non-signer (everyone signed) leaves the total as it is.
    if let Ok(missing) = AggregatePublicKey::aggregate(non_signers) {
        key.subtract(&missing);
    }
    Ok(key)
}

/// Verifies a same-message BLS aggregate over `message` by the signers whose 48-byte compressed
/// G1 keys are `public_keys`: the cold-key path, for keys that are not in a loaded
/// [`ValidatorSet`]. Each key comes from `cache` on a hit, or is decoded with KeyValidate
/// (draft-irtf-cfrg-bls-signature-05 §2.5) and inserted on a miss; then
/// [`fast_aggregate_verify`] runs one pairing check.
///
/// Only the signature is checked here, not membership or stake: the caller decides what the keys
/// are worth (and must only use keys whose proof of possession was verified).
///
/// Errors: [`LaneError::Signature`] when `aggregate` does not decode, for an empty key list
/// (`EmptySignerSet`), a repeated key (`DuplicateSigner`) or a failed pairing check
/// (`InvalidSignature`); [`LaneError::PublicKey`] naming the first key that does not decode
/// (not on the curve, not in G1, the identity, non-canonical).
pub fn verify_aggregate_compressed(
    cache: &PublicKeyCache,
    public_keys: &[[u8; PUBLIC_KEY_LEN]],
    message: &[u8],
    aggregate: &[u8],
) -> Result<(), LaneError> {
    let signature = Signature::from_bytes(aggregate)?;
    let keys = public_keys
        .iter()
        .enumerate()
        .map(|(index, bytes)| {
            cache
                .get_or_decode(bytes)
                .map_err(|error| LaneError::PublicKey { index, error })
        })
        .collect::<Result<Vec<PublicKey>, LaneError>>()?;
    fast_aggregate_verify(&keys, message, &signature)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Validator;
    use quasar_crypto::bls::{BlsError, SecretKey};

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

    fn sign_all(keys: &[SecretKey], signers: &[usize], msg: &[u8]) -> Vec<u8> {
        let sigs: Vec<Signature> = signers.iter().map(|&i| keys[i].sign(msg)).collect();
        Signature::aggregate(&sigs).unwrap().to_bytes().to_vec()
    }

    /// Both ways of building the signers' key give the same answer: the sum of a minority of the
    /// set (by count) and the precomputed total minus a minority of non-signers, and everyone.
    #[test]
    fn signers_key_by_sum_by_complement_and_for_everyone() {
        // Validator 0 alone holds a quorum, so a 1-of-5 certificate is valid (sum path).
        let (keys, s) = set(&[100, 1, 1, 1, 1]);
        let msg = b"digest";
        for signers in [
            vec![0],
            vec![0, 1],
            vec![0, 2, 4],
            vec![0, 1, 2, 3],
            vec![0, 1, 2, 3, 4],
        ] {
            let bitmap = bitmap_from_signers(signers.iter().copied(), 5);
            let ok = verify_aggregate(&s, &bitmap, msg, &sign_all(&keys, &signers, msg)).unwrap();
            assert_eq!(ok.signers, signers);
            // The same aggregate under a bitmap that drops or adds one signer fails.
            let mut other = signers.clone();
            if other.len() > 1 {
                other.pop();
            } else {
                other.push(3);
            }
            let bitmap = bitmap_from_signers(other.iter().copied(), 5);
            assert_eq!(
                verify_aggregate(&s, &bitmap, msg, &sign_all(&keys, &signers, msg)),
                Err(LaneError::Signature(BlsError::InvalidSignature)),
                "{signers:?} vs {other:?}"
            );
        }
    }

    /// The aggregate must be one canonical, subgroup-checked, non-identity compressed G2 point with
    /// nothing after it.
    #[test]
    fn aggregate_encoding_is_checked_before_the_pairing() {
        let (keys, s) = set(&[1, 1, 1]);
        let bitmap = bitmap_from_signers([0, 1, 2], 3);
        let good = sign_all(&keys, &[0, 1, 2], b"m");
        assert!(verify_aggregate(&s, &bitmap, b"m", &good).is_ok());
        let mut trailing = good.clone();
        trailing.push(0);
        assert_eq!(
            verify_aggregate(&s, &bitmap, b"m", &trailing),
            Err(LaneError::Signature(BlsError::InvalidLength {
                expected: 96,
                got: 97
            }))
        );
        let mut identity = vec![0u8; 96];
        identity[0] = 0xc0;
        assert_eq!(
            verify_aggregate(&s, &bitmap, b"m", &identity),
            Err(LaneError::Signature(BlsError::IdentityPoint))
        );
        // x.c1 = p (the field modulus): not a canonical field element.
        let p_hex = concat!(
            "9a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f624",
            "1eabfffeb153ffffb9feffffffffaaab"
        );
        let mut non_canonical: Vec<u8> = (0..p_hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&p_hex[i..i + 2], 16).unwrap())
            .collect();
        non_canonical.resize(96, 0);
        assert_eq!(
            verify_aggregate(&s, &bitmap, b"m", &non_canonical),
            Err(LaneError::Signature(BlsError::InvalidEncoding))
        );
        // Without the compression flag the 96 bytes would be half an uncompressed point.
        let mut uncompressed_flag = good;
        uncompressed_flag[0] &= 0x7f;
        assert!(verify_aggregate(&s, &bitmap, b"m", &uncompressed_flag).is_err());
    }

    #[test]
    fn padding_bits_and_members_beyond_n_are_refused() {
        let (keys, s) = set(&[1, 1, 1, 1, 1, 1, 1, 1, 1, 1]);
        let agg = sign_all(&keys, &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], b"m");
        let mut bitmap = bitmap_from_signers(0..10, 10);
        assert!(verify_aggregate(&s, &bitmap, b"m", &agg).is_ok());
        bitmap[1] |= 0b1000_0000; // bit 15: a padding bit
        assert_eq!(
            verify_aggregate(&s, &bitmap, b"m", &agg),
            Err(LaneError::NonMemberSigner { index: 15, n: 10 })
        );
    }

    /// The cold-key path resolves keys through the cache (decoding on a miss, hitting after), and
    /// refuses empty, repeated and undecodable keys.
    #[test]
    fn compressed_keys_through_the_cache() {
        let (keys, _) = set(&[1, 1, 1, 1]);
        let compressed: Vec<[u8; 48]> = keys.iter().map(|k| k.public_key().to_bytes()).collect();
        let agg = sign_all(&keys, &[0, 1, 2, 3], b"m");
        let cache = PublicKeyCache::new();
        assert_eq!(
            verify_aggregate_compressed(&cache, &compressed, b"m", &agg),
            Ok(())
        );
        assert_eq!(cache.stats().misses, 4);
        assert_eq!(
            verify_aggregate_compressed(&cache, &compressed, b"m", &agg),
            Ok(())
        );
        assert_eq!(cache.stats().hits, 4);
        assert_eq!(
            verify_aggregate_compressed(&cache, &compressed, b"other", &agg),
            Err(LaneError::Signature(BlsError::InvalidSignature))
        );
        assert_eq!(
            verify_aggregate_compressed(&cache, &compressed[..3], b"m", &agg),
            Err(LaneError::Signature(BlsError::InvalidSignature))
        );
        assert_eq!(
            verify_aggregate_compressed(&cache, &[], b"m", &agg),
            Err(LaneError::Signature(BlsError::EmptySignerSet))
        );
        // Signer 0 counted twice, with its signature added twice.
        let twice = sign_all(&keys, &[0, 0, 1], b"m");
        assert_eq!(
            verify_aggregate_compressed(
                &cache,
                &[compressed[0], compressed[0], compressed[1]],
                b"m",
                &twice
            ),
            Err(LaneError::Signature(BlsError::DuplicateSigner))
        );
        let mut infinity = [0u8; 48];
        infinity[0] = 0xc0;
        assert_eq!(
            verify_aggregate_compressed(&cache, &[compressed[0], infinity], b"m", &agg),
            Err(LaneError::PublicKey {
                index: 1,
                error: BlsError::IdentityPoint
            })
        );
        assert_eq!(cache.len(), 4, "only valid keys are cached");
    }
}
