//! The stake-weighted validator set of one epoch.

use crate::LaneError;
use quasar_crypto::bls::{AggregatePublicKey, PublicKey};
use std::collections::HashSet;

/// One validator: its BLS public key (subgroup-checked by construction) and its stake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validator {
    /// BLS12-381 min-pk public key (48 bytes compressed on the wire).
    pub public_key: PublicKey,
    /// Stake weight, in the chain's smallest stake unit; never zero.
    pub stake: u64,
}

/// The validators of one epoch, indexed `0..n` in genesis order; the index is the bit position in
/// signer bitmaps and the `signer` field of votes.
///
/// The set is the BLS lane's key table: its keys are decoded once, when the set is built, and it
/// keeps the sum of all of them so that a certificate signed by most of the set costs only the
/// non-signers' additions (see [`crate::bls`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidatorSet {
    validators: Vec<Validator>,
    total_stake: u64,
    /// The G1 sum of every validator's key.
    aggregate_key: AggregatePublicKey,
}

impl ValidatorSet {
    /// Builds a set. Errors: [`LaneError::EmptyValidatorSet`], [`LaneError::ZeroStake`],
    /// [`LaneError::StakeOverflow`], [`LaneError::DuplicateValidator`].
    pub fn new(validators: Vec<Validator>) -> Result<ValidatorSet, LaneError> {
        if validators.is_empty() {
            return Err(LaneError::EmptyValidatorSet);
        }
        let mut total: u64 = 0;
        let mut seen = HashSet::with_capacity(validators.len());
        for (index, v) in validators.iter().enumerate() {
            if v.stake == 0 {
                return Err(LaneError::ZeroStake { index });
            }
            total = total.checked_add(v.stake).ok_or(LaneError::StakeOverflow)?;
            if !seen.insert(v.public_key.to_bytes()) {
                return Err(LaneError::DuplicateValidator { index });
            }
        }
        let aggregate_key = AggregatePublicKey::aggregate(validators.iter().map(|v| &v.public_key))
            .map_err(|_| LaneError::EmptyValidatorSet)?;
        Ok(ValidatorSet {
            validators,
            total_stake: total,
            aggregate_key,
        })
    }

    /// A set of `public_keys` with stake 1 each, in order (tests, benchmarks, simulations).
    /// Errors: as [`ValidatorSet::new`].
    pub fn equal_stake(
        public_keys: impl IntoIterator<Item = PublicKey>,
    ) -> Result<ValidatorSet, LaneError> {
        ValidatorSet::new(
            public_keys
                .into_iter()
                .map(|public_key| Validator {
                    public_key,
                    stake: 1,
                })
                .collect(),
        )
    }

    /// Number of validators `n`.
    pub fn len(&self) -> usize {
        self.validators.len()
    }

    /// Always false: a set has at least one validator.
    pub fn is_empty(&self) -> bool {
        self.validators.is_empty()
    }

    /// The validator at `index`, if it is a member.
    pub fn get(&self, index: usize) -> Option<&Validator> {
        self.validators.get(index)
    }

    /// All validators in index order.
    pub fn validators(&self) -> &[Validator] {
        &self.validators
    }

    /// The G1 sum of all validators' public keys, computed when the set was built.
    pub fn aggregate_key(&self) -> &AggregatePublicKey {
        &self.aggregate_key
    }

    /// Sum of all stakes.
    pub fn total_stake(&self) -> u64 {
        self.total_stake
    }

    /// Whether `signed_stake` is more than 2/3 of the total: `signed * 3 > total * 2`.
    pub fn is_quorum(&self, signed_stake: u64) -> bool {
        u128::from(signed_stake) * 3 > u128::from(self.total_stake) * 2
    }

    /// Stake of the given member indices; `None` if an index is not a member. Indices are assumed
    /// distinct (callers pass bitmap-derived or de-duplicated sets).
    pub fn stake_of(&self, indices: impl IntoIterator<Item = usize>) -> Option<u64> {
        let mut sum: u64 = 0;
        for i in indices {
            // total_stake fits u64, so a sum of distinct members cannot overflow.
            sum = sum.saturating_add(self.validators.get(i)?.stake);
        }
        Some(sum)
    }

    /// The member whose cumulative-stake interval contains `point`, for `point < total_stake`:
    /// the stake-weighted selection used by the leader schedule. Points outside the range map to
    /// the last validator.
    pub fn select_by_stake(&self, point: u64) -> usize {
        let mut acc: u64 = 0;
        for (i, v) in self.validators.iter().enumerate() {
            acc = acc.saturating_add(v.stake);
            if point < acc {
                return i;
            }
        }
        self.validators.len().saturating_sub(1)
    }
}
