//! Quasar finality: bundles of finalized blocks, their legs, and the certificates that lift them
//! from Nova to Quasar finality (docs/architecture.md §2–§3; issue 8).
//!
//! # Bundles
//!
//! With bundle size k (the epoch policy's, 1 under `fast`), heights (j·k, (j+1)·k] form bundle
//! j+1; the block at height (j+1)·k closes it. Each finalized block's round digest μ is computed
//! with its own view (a finalize vote is cast in the view of the block it finalizes), so every
//! node derives the same bundle from the same finalized chain. The epoch length is a multiple of
//! k, so no bundle crosses an epoch boundary; each bundle is certified under its epoch's policy
//! (μ and the QuasarCert header name that epoch).
//!
//! # Legs
//!
//! - BLS: the closing block's own finalization certificate (aggregate ‖ bitmap over μ), taken at
//!   once when this node holds it; a block finalized only through a descendant's certificate
//!   waits for the leg from a peer ([`QuasarTracker::on_leg`]).
//! - Post-quantum legs (Corona, Groth16, Pulsar, Magnetar) arrive through [`QuasarTracker::on_leg`];
//!   each is verified on its own when it arrives ([`quasar_lanes::cert::verify_leg`]), so a bad
//!   leg is dropped and blamed without waiting for the rest. The Quasar service
//!   (`crate::quasar_service`) produces them; [`QuasarTracker::status`] says which legs a
//!   waiting bundle still misses.
//! - When every leg of the profile is present the certificate is assembled and verified whole
//!   by the parallel-max verifier, and reported ([`QuasarEvent::Certified`]) for storage.
//!
//! # Deadlines and bounds
//!
//! Under `hybrid-<deadline>` a bundle whose legs are not complete within the deadline after its
//! closing block's Nova finality expires ([`QuasarEvent::Expired`]): its blocks stay at Nova
//! finality. Under the other profiles a bundle waits for its legs, but at most
//! [`MAX_PENDING_BUNDLES`] wait at once (the oldest is dropped first), so a validator set that
//! never produces a leg costs bounded memory. Nova finality never waits for any of this.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use quasar_crypto::hash::Hash;
use quasar_lanes::cert::{
    bundle_digest, encode_bls_leg, verify_leg, CertError, CertPolicy, CertReport, CertVerifier,
    Profile,
};
use quasar_lanes::LaneError;

use quasar_consensus::{ByEpoch, EpochSchedule, SetChangeError};
use quasar_wire::{Certificate, CertificateKind, LegKind, QuasarCert};

/// Most bundles waiting for legs at once.
pub const MAX_PENDING_BUNDLES: usize = 64;

/// One finalized block as the tracker needs it.
#[derive(Clone, Debug)]
pub struct FinalizedInfo<'a> {
    /// Height.
    pub height: u64,
    /// The block's own view.
    pub view: u64,
    /// The block hash.
    pub hash: Hash,
    /// The finalization certificate that covered it (its own, or a descendant's).
    pub certificate: &'a Certificate,
    /// When this node saw it final (µs).
    pub seen_us: u64,
}

/// What the tracker reports.
#[derive(Debug)]
pub enum QuasarEvent {
    /// A bundle closed and waits for its legs: sign or prove what this validator contributes.
    Closed {
        /// The closing height.
        height: u64,
        /// μ of the closing block (the BLS leg's message).
        round_digest: Hash,
        /// The bundle digest the post-quantum legs sign.
        bundle_digest: Hash,
        /// The BLS leg, when this node holds the closing block's own finalization (share it
        /// with peers that do not).
        bls_leg: Option<Vec<u8>>,
    },
    /// A bundle's certificate is complete and verified: store it under `height`.
    Certified {
        /// The closing height.
        height: u64,
        /// The encoded certificate.
        certificate: Vec<u8>,
        /// The verifier's report (per-leg timings).
        report: CertReport,
    },
    /// A `hybrid-<deadline>` bundle's legs did not all arrive in time; its blocks stay at Nova
    /// finality.
    Expired {
        /// The closing height.
        height: u64,
        /// The legs that were missing.
        missing: Vec<LegKind>,
    },
    /// The oldest waiting bundle was dropped to keep at most [`MAX_PENDING_BUNDLES`].
    Dropped {
        /// The closing height.
        height: u64,
    },
}

/// Why a leg was refused.
#[derive(Debug, thiserror::Error)]
pub enum LegRefused {
    /// No bundle closing at that height is waiting (unknown, complete, expired or dropped).
    #[error("no bundle ending at height {0} is waiting for legs")]
    NoBundle(u64),
    /// The profile has no such leg.
    #[error("the profile has no {0} leg")]
    NotInProfile(LegKind),
    /// The leg does not verify.
    #[error(transparent)]
    Invalid(#[from] LaneError),
    /// The whole certificate failed (a bug if every leg passed alone; reported, never stored).
    #[error(transparent)]
    Certificate(#[from] CertError),
    /// The certificate did not encode (a bug).
    #[error("encoding the certificate: {0}")]
    Encode(#[from] quasar_wire::WireError),
    /// This epoch has no certificate policy: Quasar finality is unavailable (the reason says
    /// why).
    #[error("Quasar finality unavailable: {0}")]
    Unavailable(String),
}

/// A bundle waiting for its legs.
#[derive(Debug)]
struct Pending {
    view: u64,
    block: Hash,
    bundle: Vec<Hash>,
    digest: Hash,
    legs: BTreeMap<LegKind, Vec<u8>>,
    nova_us: u64,
}

/// Where a bundle stands, for the API.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BundleStatus {
    /// Waiting: the legs held so far and those still missing.
    Waiting {
        /// Legs held (each verified alone).
        held: Vec<LegKind>,
        /// Legs missing.
        missing: Vec<LegKind>,
    },
    /// Given up: its legs did not all arrive (`expired`: the hybrid deadline passed;
    /// `dropped`: more than [`MAX_PENDING_BUNDLES`] newer bundles were waiting).
    Abandoned {
        /// `expired` or `dropped`.
        reason: &'static str,
    },
    /// Not tracked (certified, not yet closed, or older than this process's memory).
    Unknown,
}

/// Epochs whose carried-over policy the tracker keeps (waiting bundles span at most two).
const POLICY_CACHE: usize = 4;

/// Abandoned bundles remembered for [`QuasarTracker::status`].
const ABANDONED_MEMORY: usize = 1024;

/// The tracker (module docs). Pure: no I/O, no clock (times come in as arguments).
pub struct QuasarTracker {
    /// (first epoch, that validator set's policy or why it has none), increasing; the first
    /// entry is epoch 0's.
    policies: ByEpoch<Result<Arc<CertPolicy>, String>>,
    schedule: EpochSchedule,
    /// The policies carried into the recent epochs they were asked for (at most
    /// [`POLICY_CACHE`]).
    epoch_policies: BTreeMap<u64, Arc<CertPolicy>>,
    profile: Profile,
    bundle_size: u64,
    verifier: Arc<CertVerifier>,
    /// Round digests of the open bundle's heights, oldest first.
    open: VecDeque<(u64, Hash)>,
    pending: BTreeMap<u64, Pending>,
    abandoned: BTreeMap<u64, &'static str>,
}

impl QuasarTracker {
    /// A tracker for the chain's `policy` (the genesis epoch's), or for a profile whose keys are missing
    /// (`Err(reason)`; the profile and the genesis `bundle_size` still give the bundles): it
    /// then tracks nothing and every leg is refused with [`LegRefused::Unavailable`]. Under
    /// `fast` bundles are one block whatever `bundle_size` says. Each bundle is certified under
    /// `policy` carried into the epoch that decides it (`schedule`; the validator set and keys
    /// stay the same); bundles never cross an epoch boundary (the genesis checks that the
    /// epoch length is a multiple of the bundle size).
    pub fn new(
        policy: Result<Arc<CertPolicy>, String>,
        schedule: EpochSchedule,
        profile: Profile,
        bundle_size: u64,
        verifier: Arc<CertVerifier>,
    ) -> QuasarTracker {
        let bundle_size = match profile {
            Profile::Fast => 1,
            _ => bundle_size.max(1),
        };
        QuasarTracker {
            policies: ByEpoch::new(policy),
            schedule,
            epoch_policies: BTreeMap::new(),
            profile,
            bundle_size,
            verifier,
            open: VecDeque::new(),
            pending: BTreeMap::new(),
            abandoned: BTreeMap::new(),
        }
    }

    /// From `epoch` on (until a later change), bundles are certified under `policy`, the
    /// policy of the validator set that signs from that epoch (`Err(reason)`: that set has no
    /// policy, and its bundles are not tracked). Errors: [`SetChangeError::OutOfOrder`] unless
    /// `epoch` is above every earlier change's.
    pub fn change_policy_at(
        &mut self,
        epoch: u64,
        policy: Result<Arc<CertPolicy>, String>,
    ) -> Result<(), SetChangeError> {
        self.policies.change_at(epoch, policy)?;
        self.epoch_policies.clear();
        Ok(())
    }

    /// The policy (or why there is none) of the validator set that signs `epoch`.
    fn set_policy(&self, epoch: u64) -> &Result<Arc<CertPolicy>, String> {
        self.policies.at(epoch)
    }

    /// The policy of the epoch that decides `height`, or why there is none.
    fn policy_at(&mut self, height: u64) -> Result<Arc<CertPolicy>, String> {
        let epoch = self.schedule.epoch_of(height);
        let base = self.set_policy(epoch).clone()?;
        if base.epoch() == epoch {
            return Ok(base);
        }
        if let Some(policy) = self.epoch_policies.get(&epoch) {
            return Ok(policy.clone());
        }
        let policy = Arc::new(base.with_epoch(epoch));
        self.epoch_policies.insert(epoch, policy.clone());
        while self.epoch_policies.len() > POLICY_CACHE {
            self.epoch_policies.pop_first();
        }
        Ok(policy)
    }

    /// The bundle size.
    pub fn bundle_size(&self) -> u64 {
        self.bundle_size
    }

    /// The profile.
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// Whether the bundle holding `height` is tracked: false when its epoch has no certificate
    /// policy (the genesis lacks keys the profile needs for that epoch's validator set).
    pub fn tracking_at(&self, height: u64) -> bool {
        self.set_policy(self.schedule.epoch_of(height)).is_ok()
    }

    /// Why Quasar finality is unavailable for `height`'s epoch, if it is: the genesis lacks
    /// keys the profile needs for that epoch's validator set.
    pub fn unavailable_at(&self, height: u64) -> Option<String> {
        self.set_policy(self.schedule.epoch_of(height))
            .as_ref()
            .err()
            .cloned()
    }

    /// The closing height of the bundle that contains `height`.
    pub fn closing_height(&self, height: u64) -> u64 {
        height
            .div_ceil(self.bundle_size)
            .saturating_mul(self.bundle_size)
    }

    /// Records a finalized block (heights in order, as the engine reports them). When it closes a
    /// bundle, the bundle starts waiting for its legs; the BLS leg is taken from the block's own
    /// finalization when this node holds it. Returns what completed.
    pub fn on_finalized(&mut self, block: &FinalizedInfo<'_>) -> Vec<QuasarEvent> {
        let Ok(policy) = self.policy_at(block.height) else {
            return Vec::new();
        };
        let mu = policy.round_digest(block.height, block.view, &block.hash);
        // A gap (this node started from a store whose open bundle it never saw) restarts the
        // bundle: its earlier digests are not known here, so it cannot be certified locally.
        if self
            .open
            .back()
            .is_some_and(|&(h, _)| h.checked_add(1) != Some(block.height))
        {
            self.open.clear();
        }
        self.open.push_back((block.height, mu));
        let mut events = Vec::new();
        if !block.height.is_multiple_of(self.bundle_size) {
            return events;
        }
        let bundle: Vec<Hash> = self.open.drain(..).map(|(_, mu)| mu).collect();
        if bundle.len() as u64 != self.bundle_size {
            return events;
        }
        let digest = bundle_digest(&bundle);
        let mut pending = Pending {
            view: block.view,
            block: block.hash,
            bundle,
            digest,
            legs: BTreeMap::new(),
            nova_us: block.seen_us,
        };
        let c = block.certificate;
        if c.kind == CertificateKind::Finalization
            && c.height == block.height
            && c.block == block.hash
        {
            pending
                .legs
                .insert(LegKind::Bls, encode_bls_leg(&c.signature, &c.signers));
        }
        events.push(QuasarEvent::Closed {
            height: block.height,
            round_digest: mu,
            bundle_digest: digest,
            bls_leg: pending.legs.get(&LegKind::Bls).cloned(),
        });
        self.pending.insert(block.height, pending);
        while self.pending.len() > MAX_PENDING_BUNDLES {
            if let Some((height, _)) = self.pending.pop_first() {
                self.abandon(height, "dropped");
                events.push(QuasarEvent::Dropped { height });
            }
        }
        match self.try_complete(block.height) {
            Ok(Some(event)) => events.push(event),
            Ok(None) => {}
            Err(error) => {
                tracing::error!(height = block.height, %error, "assembled certificate rejected")
            }
        }
        events
    }

    /// A leg for the bundle closing at `height` (from a peer, or from this node's signing
    /// services). Verified alone first; a valid leg is kept (the first valid one of each kind),
    /// and completes the certificate when it is the last one missing.
    ///
    /// Errors: [`LegRefused`] (no such bundle waiting, a leg the profile lacks, a leg that does
    /// not verify, or Quasar finality unavailable in this epoch).
    pub fn on_leg(
        &mut self,
        height: u64,
        kind: LegKind,
        body: Vec<u8>,
    ) -> Result<Option<QuasarEvent>, LegRefused> {
        let policy = self.policy_at(height).map_err(LegRefused::Unavailable)?;
        if !self.profile.legs().contains(&kind) {
            return Err(LegRefused::NotInProfile(kind));
        }
        let pending = self
            .pending
            .get_mut(&height)
            .ok_or(LegRefused::NoBundle(height))?;
        if pending.legs.contains_key(&kind) {
            return Ok(None);
        }
        let mu = pending.bundle.last().copied().unwrap_or_default();
        verify_leg(&policy, kind, &mu, &pending.digest, &body)?;
        pending.legs.insert(kind, body);
        self.try_complete(height)
    }

    /// Expires `hybrid-<deadline>` bundles whose deadline passed by `now_us`.
    pub fn on_tick(&mut self, now_us: u64) -> Vec<QuasarEvent> {
        let Some(deadline) = self.profile.deadline() else {
            return Vec::new();
        };
        let deadline_us = u64::try_from(deadline.as_micros()).unwrap_or(u64::MAX);
        let expired: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| now_us.saturating_sub(p.nova_us) > deadline_us)
            .map(|(&h, _)| h)
            .collect();
        expired
            .into_iter()
            .filter_map(|height| {
                let p = self.pending.remove(&height)?;
                self.abandon(height, "expired");
                Some(QuasarEvent::Expired {
                    height,
                    missing: self.missing(&p),
                })
            })
            .collect()
    }

    /// Where the bundle closing at `height` stands.
    pub fn status(&self, height: u64) -> BundleStatus {
        match self.pending.get(&height) {
            Some(p) => BundleStatus::Waiting {
                held: p.legs.keys().copied().collect(),
                missing: self.missing(p),
            },
            None => match self.abandoned.get(&height) {
                Some(&reason) => BundleStatus::Abandoned { reason },
                None => BundleStatus::Unknown,
            },
        }
    }

    fn abandon(&mut self, height: u64, reason: &'static str) {
        self.abandoned.insert(height, reason);
        while self.abandoned.len() > ABANDONED_MEMORY {
            self.abandoned.pop_first();
        }
    }

    /// (μ, bundle digest) of the bundle closing at `height`, while it waits for `leg`.
    pub fn awaiting(&self, height: u64, leg: LegKind) -> Option<(Hash, Hash)> {
        let p = self.pending.get(&height)?;
        if p.legs.contains_key(&leg) || !self.profile.legs().contains(&leg) {
            return None;
        }
        Some((p.bundle.last().copied().unwrap_or_default(), p.digest))
    }

    /// The hybrid deadline, if the profile has one.
    pub fn deadline(&self) -> Option<Duration> {
        self.profile.deadline()
    }

    fn missing(&self, p: &Pending) -> Vec<LegKind> {
        self.profile
            .legs()
            .iter()
            .filter(|l| !p.legs.contains_key(l))
            .copied()
            .collect()
    }

    /// Assembles and verifies the certificate of `height` if every leg is present.
    fn try_complete(&mut self, height: u64) -> Result<Option<QuasarEvent>, LegRefused> {
        let policy = self.policy_at(height).map_err(LegRefused::Unavailable)?;
        let Some(p) = self.pending.get(&height) else {
            return Ok(None);
        };
        if !self.missing(p).is_empty() {
            return Ok(None);
        }
        let Some(p) = self.pending.remove(&height) else {
            return Ok(None);
        };
        let cert = QuasarCert {
            chain_id: policy.chain_id(),
            epoch: policy.epoch(),
            height,
            view: p.view,
            block: p.block,
            bundle: p.bundle,
            legs: p.legs.into_iter().collect(),
        };
        let certificate = cert.encode()?;
        let report = self.verifier.verify(&policy, &certificate)?;
        Ok(Some(QuasarEvent::Certified {
            height,
            certificate,
            report,
        }))
    }
}

/// Per-validator signatures on waiting bundles, collected until their signers hold a quorum
/// (the Magnetar leg is built from them). Each signature must be checked before it is added.
#[derive(Debug)]
pub struct QuorumCollector<S> {
    bundles: BTreeMap<u64, BTreeMap<usize, S>>,
}

impl<S> Default for QuorumCollector<S> {
    fn default() -> Self {
        QuorumCollector {
            bundles: BTreeMap::new(),
        }
    }
}

impl<S> QuorumCollector<S> {
    /// Adds validator `index`'s checked signature for the bundle closing at `height` (a second
    /// one from the same validator replaces the first). When the signers now hold a quorum of
    /// `set`, removes and returns them, in index order.
    pub fn add(
        &mut self,
        set: &quasar_lanes::ValidatorSet,
        height: u64,
        index: usize,
        signature: S,
    ) -> Option<Vec<(usize, S)>> {
        let collected = self.bundles.entry(height).or_default();
        collected.insert(index, signature);
        let stake = set.stake_of(collected.keys().copied())?;
        if !set.is_quorum(stake) {
            return None;
        }
        self.bundles
            .remove(&height)
            .map(|c| c.into_iter().collect())
    }

    /// Keeps only the bundles for which `waiting` holds.
    pub fn retain(&mut self, mut waiting: impl FnMut(u64) -> bool) {
        self.bundles.retain(|&height, _| waiting(height));
    }

    /// Bundles with signatures collected.
    pub fn len(&self) -> usize {
        self.bundles.len()
    }

    /// Whether nothing is collected.
    pub fn is_empty(&self) -> bool {
        self.bundles.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quasar_crypto::bls::SecretKey;
    use quasar_lanes::{Validator, ValidatorSet};

    fn set(stakes: &[u64]) -> ValidatorSet {
        ValidatorSet::new(
            stakes
                .iter()
                .enumerate()
                .map(|(i, &stake)| Validator {
                    public_key: SecretKey::from_seed(&[i as u8 + 1; 32]).public_key(),
                    stake,
                })
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn a_quorum_by_stake_is_returned_once_in_index_order() {
        let set = set(&[1, 1, 1, 1]);
        let mut c = QuorumCollector::default();
        assert_eq!(c.add(&set, 8, 2, "c"), None);
        assert_eq!(c.add(&set, 8, 2, "c2"), None, "a repeat adds no stake");
        assert_eq!(c.add(&set, 16, 0, "x"), None);
        assert_eq!(c.add(&set, 8, 0, "a"), None);
        assert_eq!(
            c.add(&set, 8, 3, "d"),
            Some(vec![(0, "a"), (2, "c2"), (3, "d")])
        );
        assert_eq!(
            c.len(),
            1,
            "the completed bundle is gone; 16 still collects"
        );
        c.retain(|h| h != 16);
        assert!(c.is_empty());
    }

    #[test]
    fn stake_not_count_decides() {
        let set = set(&[10, 1, 1, 1]);
        let mut c = QuorumCollector::default();
        assert_eq!(c.add(&set, 1, 1, ()), None);
        assert_eq!(c.add(&set, 1, 2, ()), None);
        assert_eq!(
            c.add(&set, 1, 3, ()),
            None,
            "3 of 4 validators but 3 of 13 stake"
        );
        assert!(c.add(&set, 1, 0, ()).is_some());
        // A non-member index never counts.
        assert_eq!(c.add(&set, 2, 9, ()), None);
    }
}
