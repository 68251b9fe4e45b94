//! Epochs: how the chain's heights and views divide into epochs (docs/architecture.md §2, §6).
//!
//! With epoch length `L` blocks, epoch `e` decides heights `e·L + 1 ..= (e + 1)·L`; height
//! `(e + 1)·L` is its **boundary block**. Epoch `e`'s views are numbered from `e·2^32 + 1` up to
//! (not including) `(e + 1)·2^32 + 1`, so a view number names its epoch, views grow
//! monotonically along the chain, and a validator's signing guard (which refuses to sign below
//! its highest view) never lets it sign in an epoch it has left. A chain without epochs
//! ([`EpochSchedule::SINGLE`]) runs epoch 0 for ever, over every view from 1.
//!
//! # Closing an epoch
//!
//! Epoch `e` ends when its boundary block is final, and epoch `e + 1` starts from that block at
//! its first view. No block of epoch `e` above the boundary ever becomes part of the chain, but
//! a Simplex chain finalizes a block either by a finalize quorum in its own view or through a
//! finalized descendant: when the boundary block is notarized and its view then stalls
//! (finalize votes short of a quorum, nullify votes too), only a descendant can finalize it.
//! Leaders of epoch `e` therefore keep proposing above the boundary, but only **seals**: blocks
//! without transactions that the core never commits. A finalized seal finalizes the boundary
//! block beneath it, and the seals travel with the epoch's closing certificate so that a node
//! syncing the boundary can check the hash links. (Commonware's simplex reaches the same end by
//! re-proposing the boundary block in later views.)

use quasar_crypto::bls::PublicKey;
use quasar_lanes::ValidatorSet;
use quasar_wire::EpochDomain;
use std::sync::{Arc, RwLock};

/// Epochs of history a validator keeps (docs/architecture.md §6): once epoch `e` starts, what only
/// epochs before `e + 1 - RETAINED_EPOCHS` needed is pruned.
pub const RETAINED_EPOCHS: u64 = 6;

/// How many views each epoch numbers: epoch `e`'s views start at `e · VIEWS_PER_EPOCH + 1`.
pub const VIEWS_PER_EPOCH: u64 = 1 << 32;

/// Epochs of at most this number exist (so every epoch's view range fits in a `u64`).
pub const MAX_EPOCH: u64 = u32::MAX as u64 - 1;

/// The division of heights into epochs of a fixed length (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochSchedule {
    /// Blocks per epoch; 0 for a single endless epoch.
    length: u64,
}

impl EpochSchedule {
    /// One epoch (0) for ever: every height and every view from 1 belongs to it.
    pub const SINGLE: EpochSchedule = EpochSchedule { length: 0 };

    /// Epochs of `length` blocks each; `length` 0 is [`EpochSchedule::SINGLE`].
    pub const fn new(length: u64) -> EpochSchedule {
        EpochSchedule { length }
    }

    /// Blocks per epoch, or `None` for a single endless epoch.
    pub fn length(&self) -> Option<u64> {
        (self.length != 0).then_some(self.length)
    }

    /// Whether `epoch` is an epoch of this schedule: 0 for [`EpochSchedule::SINGLE`], otherwise
    /// any epoch up to [`MAX_EPOCH`].
    pub fn contains(&self, epoch: u64) -> bool {
        if self.length == 0 {
            epoch == 0
        } else {
            epoch <= MAX_EPOCH
        }
    }

    /// The epoch that decides `height` (genesis, height 0, counts as epoch 0).
    pub fn epoch_of(&self, height: u64) -> u64 {
        if self.length == 0 || height == 0 {
            0
        } else {
            (height - 1) / self.length
        }
    }

    /// The first height `epoch` decides.
    pub fn first_height(&self, epoch: u64) -> u64 {
        epoch.saturating_mul(self.length).saturating_add(1)
    }

    /// `epoch`'s boundary block height, its last height (`u64::MAX` without epochs).
    pub fn last_height(&self, epoch: u64) -> u64 {
        if self.length == 0 {
            u64::MAX
        } else {
            epoch.saturating_add(1).saturating_mul(self.length)
        }
    }

    /// `epoch`'s first view.
    pub fn first_view(&self, epoch: u64) -> u64 {
        if self.length == 0 {
            1
        } else {
            epoch.saturating_mul(VIEWS_PER_EPOCH).saturating_add(1)
        }
    }

    /// The first view after `epoch`'s views (`u64::MAX` without epochs).
    pub fn view_end(&self, epoch: u64) -> u64 {
        if self.length == 0 {
            u64::MAX
        } else {
            self.first_view(epoch.saturating_add(1))
        }
    }

    /// The first height still retained while `epoch` runs: the first height of the oldest of
    /// the last [`RETAINED_EPOCHS`] epochs (1 without epochs: nothing is pruned).
    pub fn retained_from(&self, epoch: u64) -> u64 {
        if self.length == 0 {
            1
        } else {
            self.first_height((epoch + 1).saturating_sub(RETAINED_EPOCHS))
        }
    }

    /// Whether `view` is one of `epoch`'s views.
    pub fn holds_view(&self, epoch: u64, view: u64) -> bool {
        view >= self.first_view(epoch) && view < self.view_end(epoch)
    }
}

/// One epoch's validators and what their votes bind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpochMembers {
    /// The validator set: indices, keys and stakes of the epoch's votes and certificates.
    pub validators: Arc<ValidatorSet>,
    /// The validator-set root and profile id the epoch's finalize votes sign inside μ.
    pub domain: EpochDomain,
}

impl EpochMembers {
    /// The index of the validator with BLS key `key` in this epoch's set, if it is a member.
    pub fn index_of(&self, key: &PublicKey) -> Option<u32> {
        let position = self
            .validators
            .validators()
            .iter()
            .position(|v| v.public_key == *key)?;
        u32::try_from(position).ok()
    }
}

/// Why a validator-set change was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetChangeError {
    /// Changes must come in increasing epoch order, each after the one before.
    #[error("a validator-set change at epoch {epoch} does not come after the change at epoch {previous}")]
    OutOfOrder {
        /// The refused change's first epoch.
        epoch: u64,
        /// The first epoch of the change before it.
        previous: u64,
    },
    /// The schedule has no such epoch (a single endless epoch never changes its set).
    #[error(
        "epoch {0} is not an epoch of this chain's schedule (epochs run from 0 to {MAX_EPOCH}; \
         a chain without epochs has only epoch 0)"
    )]
    UnknownEpoch(u64),
}

/// A value that changes at epoch boundaries: one from epoch 0, each later one from its first
/// epoch on, until the next (a validator set; the certificate policy of a set).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ByEpoch<T> {
    /// (first epoch, value), increasing; the first entry is epoch 0's.
    changes: Vec<(u64, T)>,
}

impl<T> ByEpoch<T> {
    /// `value` for every epoch.
    pub fn new(value: T) -> ByEpoch<T> {
        ByEpoch {
            changes: vec![(0, value)],
        }
    }

    /// The first epoch of the last change (0 without changes).
    pub fn last_epoch(&self) -> u64 {
        self.changes.last().map_or(0, |(first, _)| *first)
    }

    /// `value` from `epoch` on. Errors: [`SetChangeError::OutOfOrder`] unless `epoch` is above
    /// every earlier change's.
    pub fn change_at(&mut self, epoch: u64, value: T) -> Result<(), SetChangeError> {
        let previous = self.last_epoch();
        if epoch <= previous {
            return Err(SetChangeError::OutOfOrder { epoch, previous });
        }
        self.changes.push((epoch, value));
        Ok(())
    }

    /// The value of `epoch`: the last change at or before it.
    pub fn at(&self, epoch: u64) -> &T {
        &self.changes[self.position(epoch)].1
    }

    /// The value of `epoch`, mutably.
    pub fn at_mut(&mut self, epoch: u64) -> &mut T {
        let position = self.position(epoch);
        &mut self.changes[position].1
    }

    /// The index in `changes` of the entry deciding `epoch`: `changes[0]` starts at epoch 0, so
    /// at least one entry is at or below any epoch, and the index is in range.
    fn position(&self, epoch: u64) -> usize {
        self.changes
            .partition_point(|(first, _)| *first <= epoch)
            .saturating_sub(1)
    }

    /// Every value, mutably, by increasing first epoch.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.changes.iter_mut().map(|(_, value)| value)
    }

    /// Every value with its first epoch, by increasing epoch.
    pub fn changes(&self) -> impl Iterator<Item = (u64, &T)> {
        self.changes.iter().map(|(first, value)| (*first, value))
    }
}

/// The validator set of every epoch (docs/architecture.md §6): the genesis set from epoch 0,
/// replaced from each change's first epoch on. Sets change only at epoch boundaries: epoch
/// `e`'s boundary block is finalized by epoch `e`'s set, and epoch `e + 1`'s core starts from
/// it with epoch `e + 1`'s set, so no certificate mixes two sets.
///
/// A chain whose sets the genesis file fixes knows every epoch's set from the start
/// ([`EpochSets::fixed`] and [`EpochSets::change_at`]). A chain whose sets come from its state
/// ([`EpochSets::decided_through`]) knows them only up to an epoch that grows as the node
/// executes boundary blocks ([`EpochSets::decide`]): asking for a later epoch's set is asking
/// for something nobody can answer yet ([`EpochSets::known`]).
///
/// Clones share one history: every holder (the verifier, the engine, the API) sees a set as
/// soon as it is decided. [`EpochSets::detached`] copies it instead.
#[derive(Debug, Clone)]
pub struct EpochSets {
    history: Arc<RwLock<SetHistory>>,
}

#[derive(Debug, Clone)]
struct SetHistory {
    sets: ByEpoch<Arc<EpochMembers>>,
    /// The last epoch whose set is decided (`u64::MAX`: every epoch's is).
    known_through: u64,
}

/// Why a decided set was refused ([`EpochSets::decide`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecideError {
    /// Sets are decided one epoch after another.
    #[error("the set of epoch {epoch} cannot be decided before epoch {next}'s")]
    Gap {
        /// The refused epoch.
        epoch: u64,
        /// The next epoch without a decided set.
        next: u64,
    },
    /// The epoch's set was decided before, as another set: two executions of the same chain
    /// disagree (a corrupt store or a nondeterministic derivation).
    #[error("the set of epoch {0} was decided before as another set")]
    Conflict(u64),
    /// The schedule has no such epoch.
    #[error(transparent)]
    Change(#[from] SetChangeError),
}

impl EpochSets {
    /// One set for every epoch.
    pub fn fixed(members: EpochMembers) -> EpochSets {
        EpochSets::decided_through(members, u64::MAX)
    }

    /// `members` for epochs 0 to `known_through`; later sets are decided one epoch at a time by
    /// [`EpochSets::decide`].
    pub fn decided_through(members: EpochMembers, known_through: u64) -> EpochSets {
        EpochSets {
            history: Arc::new(RwLock::new(SetHistory {
                sets: ByEpoch::new(Arc::new(members)),
                known_through,
            })),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, SetHistory> {
        // A writer that panicked left a consistent history: every write is one assignment.
        self.history.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, SetHistory> {
        self.history.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a change: `members` from `epoch` on, until a later change. Errors:
    /// [`SetChangeError::OutOfOrder`] unless `epoch` is above every earlier change's;
    /// [`SetChangeError::UnknownEpoch`] for an epoch `schedule` does not have.
    pub fn change_at(
        &mut self,
        schedule: &EpochSchedule,
        epoch: u64,
        members: EpochMembers,
    ) -> Result<(), SetChangeError> {
        let mut history = self.write();
        if epoch > history.sets.last_epoch() && !schedule.contains(epoch) {
            return Err(SetChangeError::UnknownEpoch(epoch));
        }
        history.sets.change_at(epoch, Arc::new(members))
    }

    /// Decides `epoch`'s set: `members`, the next epoch after the last decided one. Returns
    /// whether the set differs from the epoch before's. Deciding an epoch again with the same
    /// set changes nothing (a restarted node derives its sets again).
    ///
    /// Errors: [`DecideError::Gap`] for an epoch past the next undecided one;
    /// [`DecideError::Conflict`] for a decided epoch and another set;
    /// [`DecideError::Change`] for an epoch `schedule` does not have.
    pub fn decide(
        &self,
        schedule: &EpochSchedule,
        epoch: u64,
        members: EpochMembers,
    ) -> Result<bool, DecideError> {
        let mut history = self.write();
        let next = history.known_through.saturating_add(1);
        if epoch < next {
            return match **history.sets.at(epoch) == members {
                true => Ok(false),
                false => Err(DecideError::Conflict(epoch)),
            };
        }
        if epoch > next {
            return Err(DecideError::Gap { epoch, next });
        }
        if !schedule.contains(epoch) {
            return Err(SetChangeError::UnknownEpoch(epoch).into());
        }
        let changed = **history.sets.at(epoch - 1) != members;
        if changed {
            history.sets.change_at(epoch, Arc::new(members))?;
        }
        history.known_through = epoch;
        Ok(changed)
    }

    /// Whether `epoch`'s set is decided.
    pub fn known(&self, epoch: u64) -> bool {
        epoch <= self.read().known_through
    }

    /// The last epoch whose set is decided (`u64::MAX` when every epoch's is).
    pub fn known_through(&self) -> u64 {
        self.read().known_through
    }

    /// The members of `epoch`: for an epoch not decided yet ([`EpochSets::known`]), the last
    /// decided set, which callers that need certainty check first.
    pub fn at(&self, epoch: u64) -> Arc<EpochMembers> {
        self.read().sets.at(epoch).clone()
    }

    /// Every set with its first epoch, increasing.
    pub fn changes(&self) -> Vec<(u64, Arc<EpochMembers>)> {
        self.read()
            .sets
            .changes()
            .map(|(epoch, members)| (epoch, members.clone()))
            .collect()
    }

    /// A copy of the history that later decisions through `self` do not reach (one node's
    /// sets, beside another's built from the same genesis in one process).
    pub fn detached(&self) -> EpochSets {
        EpochSets {
            history: Arc::new(RwLock::new(self.read().clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heights_and_views_divide_into_epochs() {
        let s = EpochSchedule::new(10);
        assert_eq!(s.epoch_of(0), 0);
        assert_eq!(s.epoch_of(1), 0);
        assert_eq!(s.epoch_of(10), 0);
        assert_eq!(s.epoch_of(11), 1);
        assert_eq!((s.first_height(1), s.last_height(1)), (11, 20));
        assert_eq!(s.first_view(0), 1);
        assert_eq!(s.first_view(2), 2 * VIEWS_PER_EPOCH + 1);
        assert!(s.holds_view(1, VIEWS_PER_EPOCH + 1));
        assert!(!s.holds_view(1, VIEWS_PER_EPOCH));
        assert!(!s.holds_view(1, 2 * VIEWS_PER_EPOCH + 1));
        assert!(s.contains(MAX_EPOCH) && !s.contains(MAX_EPOCH + 1));
        assert!(s.view_end(MAX_EPOCH) > s.first_view(MAX_EPOCH));
        assert_eq!(s.retained_from(5), 1, "six epochs, 0 to 5");
        assert_eq!(
            s.retained_from(6),
            11,
            "epoch 0 is past retention once epoch 6 runs"
        );
        assert_eq!(EpochSchedule::SINGLE.retained_from(0), 1);
    }

    fn members(seeds: &[u8]) -> EpochMembers {
        use quasar_crypto::bls::SecretKey;
        let keys = seeds
            .iter()
            .map(|&s| SecretKey::from_seed(&[s; 32]).public_key());
        EpochMembers {
            validators: Arc::new(ValidatorSet::equal_stake(keys).unwrap()),
            domain: EpochDomain {
                validator_set_root: [seeds[0]; 32],
                profile_id: "fast".into(),
            },
        }
    }

    #[test]
    fn each_epoch_gets_the_set_of_the_last_change_at_or_before_it() {
        let schedule = EpochSchedule::new(10);
        let mut sets = EpochSets::fixed(members(&[1, 2, 3]));
        sets.change_at(&schedule, 2, members(&[2, 3, 4])).unwrap();
        sets.change_at(&schedule, 5, members(&[3, 4, 5, 6]))
            .unwrap();
        let root = |epoch| sets.at(epoch).domain.validator_set_root[0];
        assert_eq!(
            [root(0), root(1), root(2), root(4), root(5), root(99)],
            [1, 1, 2, 2, 3, 3]
        );
        assert_eq!(sets.at(7).validators.len(), 4);
        let key = quasar_crypto::bls::SecretKey::from_seed(&[4; 32]).public_key();
        assert_eq!(
            sets.at(1).index_of(&key),
            None,
            "validator 4 joins at epoch 2"
        );
        assert_eq!(sets.at(2).index_of(&key), Some(2));
        assert_eq!(sets.at(5).index_of(&key), Some(1));
        assert_eq!(
            sets.changes()
                .into_iter()
                .map(|(e, _)| e)
                .collect::<Vec<_>>(),
            vec![0, 2, 5]
        );
        assert_eq!(
            sets.change_at(&schedule, 5, members(&[7])),
            Err(SetChangeError::OutOfOrder {
                epoch: 5,
                previous: 5
            })
        );
        assert_eq!(
            sets.change_at(&schedule, 3, members(&[7])),
            Err(SetChangeError::OutOfOrder {
                epoch: 3,
                previous: 5
            })
        );
        let mut single = EpochSets::fixed(members(&[1]));
        assert_eq!(
            single.change_at(&EpochSchedule::SINGLE, 1, members(&[2])),
            Err(SetChangeError::UnknownEpoch(1))
        );
    }

    #[test]
    fn sets_decided_from_state_are_known_one_epoch_at_a_time_and_never_rewritten() {
        let schedule = EpochSchedule::new(10);
        let sets = EpochSets::decided_through(members(&[1, 2, 3]), 1);
        let reader = sets.clone();
        assert!(sets.known(1) && !sets.known(2));
        assert_eq!(
            sets.decide(&schedule, 3, members(&[4])),
            Err(DecideError::Gap { epoch: 3, next: 2 })
        );
        assert_eq!(sets.decide(&schedule, 2, members(&[1, 2, 3])), Ok(false));
        assert!(reader.known(2), "clones share the history");
        assert_eq!(reader.changes().len(), 1, "an unchanged set adds no change");
        assert_eq!(sets.decide(&schedule, 3, members(&[2, 3])), Ok(true));
        assert_eq!(reader.at(3).validators.len(), 2);
        assert_eq!(reader.at(2).validators.len(), 3);
        assert_eq!(
            sets.decide(&schedule, 3, members(&[2, 3])),
            Ok(false),
            "deciding again after a restart changes nothing"
        );
        assert_eq!(
            sets.decide(&schedule, 2, members(&[2, 3])),
            Err(DecideError::Conflict(2))
        );
        let copy = sets.detached();
        sets.decide(&schedule, 4, members(&[3])).unwrap();
        assert!(
            sets.known(4) && !copy.known(4),
            "a detached copy is not shared"
        );
        let single = EpochSets::decided_through(members(&[1]), 0);
        assert!(matches!(
            single.decide(&EpochSchedule::SINGLE, 1, members(&[1])),
            Err(DecideError::Change(SetChangeError::UnknownEpoch(1)))
        ));
        assert!(EpochSets::fixed(members(&[1])).known(u64::MAX));
    }

    #[test]
    fn a_single_epoch_holds_every_height_and_view() {
        let s = EpochSchedule::SINGLE;
        assert_eq!(s.length(), None);
        assert_eq!(s.epoch_of(u64::MAX), 0);
        assert_eq!(s.last_height(0), u64::MAX);
        assert!(s.holds_view(0, 1) && s.holds_view(0, u64::MAX - 1));
        assert!(!s.holds_view(0, 0));
        assert!(s.contains(0) && !s.contains(1));
    }
}
