//! QuasarCert verification: round and bundle digests, cert profiles, the epoch's keys, and the
//! parallel-max verifier (docs/architecture.md §3; issue 8).
//!
//! # What a certificate covers
//!
//! - The **round digest** μ of a finalized block ([`quasar_wire::round_digest`]) is
//!   TupleHash256 (NIST SP 800-185 §5.2) with customization `QUASAR-ROUND-DIGEST-v1` over the
//!   tuple (chain id, epoch, height, view, validator-set root, block hash, profile id), the
//!   integers as 8-byte little-endian strings and the profile id as its name
//!   ([`Profile::name`]). The view is the consensus round in which the block was finalized.
//!   Finalize votes sign μ, so a block's Nova finalization (aggregate and bitmap) is its BLS
//!   leg.
//! - Post-quantum legs are too heavy for every block (Corona at large n, the Groth16 rollup):
//!   they sign or prove the **bundle digest** ([`bundle_digest`]) over the round digests of k
//!   consecutive finalized blocks of one epoch, oldest first: TupleHash256 with customization
//!   [`BUNDLE_DIGEST_CUSTOMIZATION`] over (μ_1, …, μ_k). The certificate travels with the block
//!   that closes the bundle and lists the k digests; its own μ is the last one. With k = 1 the
//!   post-quantum legs cover exactly one block. (A Merkle root of the block digests would serve too;
//!   a tuple hash over at most [`quasar_wire::MAX_BUNDLE`] digests binds
//!   the same list, and nothing here needs membership proofs for single blocks.)
//!
//! # Profiles
//!
//! The profile is the epoch's policy ([`CertPolicy`]), never the certificate's choice: it enters
//! μ, so a certificate made under another profile fails its BLS leg, and its required legs are
//! the policy's. A certificate must carry exactly the profile's legs: one missing, one not in
//! the profile, or one listed twice makes it malformed ([`CertError::MissingLeg`],
//! [`CertError::ExtraLeg`], [`CertError::DuplicateLeg`]).
//!
//! | profile | legs |
//! |---|---|
//! | `quasar` (default) | BLS, Corona, Groth16 |
//! | `aurora` | BLS, Pulsar, Corona |
//! | `polaris` | BLS, Pulsar, Corona, Magnetar |
//! | `fast` | BLS |
//! | `hybrid-<deadline>` | BLS, Corona, Groth16, with a deadline for the post-quantum legs |
//!
//! `hybrid-<deadline>` has the legs of `quasar`; what differs is the node's rule for late legs
//! (a block whose post-quantum legs do not attach within the deadline stays at Nova finality).
//! Under every profile Nova finality (the BLS finalization) comes at once and never waits for a
//! post-quantum leg.
//!
//! # Parallel max
//!
//! [`CertVerifier::verify`] checks the certificate's header, its bundle and its leg set, then
//! verifies every leg concurrently as tasks of one shared rayon pool (no thread per leg), slowest
//! leg first. The first leg to fail raises a cancellation flag: legs not yet started are skipped
//! and the Magnetar leg stops between signatures; the error names the failed leg. The report
//! gives each leg's wall time, for the node's per-leg latency histograms.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ark_bls12_381::Fr;
use quasar_crypto::accel::{BatchArithmetic, CpuBackend};
use quasar_crypto::corona::hash::TupleHash256;
use quasar_crypto::corona::scheme::GroupKey as CoronaGroupKey;
use quasar_crypto::hash::Hash;
use quasar_crypto::mldsa::{MlDsa65, PublicKey};
use quasar_crypto::rollup::circuit::Statement;
use quasar_wire::{round_digest, EpochDomain, LegKind, QuasarCertRef, WireError};

use crate::groth16::{
    field_element_from_bytes, field_element_to_bytes, Groth16Error, Proof, VerifyingKey,
    FIELD_ELEMENT_LEN, PROOF_LEN,
};
use crate::magnetar::{MagnetarKeys, MagnetarLeg};
use crate::{bls, corona, magnetar, pulsar, LaneError, ValidatorSet};

/// Customization string of the bundle digest the post-quantum legs sign.
pub const BUNDLE_DIGEST_CUSTOMIZATION: &[u8] = b"QUASAR-BUNDLE-DIGEST-v1";
/// Length of a Groth16 leg body: proof (192) ‖ digest input (32) ‖ h_x (32).
pub const GROTH16_LEG_LEN: usize = PROOF_LEN + 32 + FIELD_ELEMENT_LEN;
/// Length of the BLS aggregate at the head of a BLS leg body (a compressed G2 point).
pub const BLS_SIGNATURE_LEN: usize = 96;

/// A cert profile: which legs a certificate must carry (module docs, docs/architecture.md §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Profile {
    /// BLS + Corona + Groth16 (the default).
    #[default]
    Quasar,
    /// BLS + Pulsar + Corona.
    Aurora,
    /// BLS + Pulsar + Corona + Magnetar.
    Polaris,
    /// BLS only.
    Fast,
    /// The legs of `quasar`; the post-quantum legs must attach within `deadline_ms`
    /// milliseconds of Nova finality, else the block stays at Nova finality.
    Hybrid {
        /// The deadline, in milliseconds (at least 1).
        deadline_ms: u64,
    },
}

/// Why a profile name does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown profile {0:?}: expected quasar, aurora, polaris, fast or hybrid-<deadline> \
     (e.g. hybrid-1s, hybrid-500ms; the deadline is 1 ms to 1 day)"
)]
pub struct ProfileParseError(pub String);

impl Profile {
    /// The canonical name, which is also the profile id inside μ: `quasar`, `aurora`,
    /// `polaris`, `fast`, `hybrid-<N>s` when the deadline is whole seconds, else
    /// `hybrid-<N>ms`.
    pub fn name(&self) -> String {
        match self {
            Profile::Quasar => "quasar".into(),
            Profile::Aurora => "aurora".into(),
            Profile::Polaris => "polaris".into(),
            Profile::Fast => "fast".into(),
            Profile::Hybrid { deadline_ms } if deadline_ms % 1000 == 0 => {
                format!("hybrid-{}s", deadline_ms / 1000)
            }
            Profile::Hybrid { deadline_ms } => format!("hybrid-{deadline_ms}ms"),
        }
    }

    /// The legs a certificate under this profile carries, BLS first.
    pub fn legs(&self) -> &'static [LegKind] {
        match self {
            Profile::Quasar | Profile::Hybrid { .. } => {
                &[LegKind::Bls, LegKind::Corona, LegKind::Groth16]
            }
            Profile::Aurora => &[LegKind::Bls, LegKind::Pulsar, LegKind::Corona],
            Profile::Polaris => &[
                LegKind::Bls,
                LegKind::Pulsar,
                LegKind::Corona,
                LegKind::Magnetar,
            ],
            Profile::Fast => &[LegKind::Bls],
        }
    }

    /// The deadline for post-quantum legs of a `hybrid-<deadline>` profile; `None` otherwise.
    pub fn deadline(&self) -> Option<Duration> {
        match self {
            Profile::Hybrid { deadline_ms } => Some(Duration::from_millis(*deadline_ms)),
            _ => None,
        }
    }
}

impl std::fmt::Display for Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

impl std::str::FromStr for Profile {
    type Err = ProfileParseError;

    /// Parses a canonical name, or `hybrid-<N>s` / `hybrid-<N>ms` with 1 ≤ deadline ≤ 1 day.
    /// Errors: [`ProfileParseError`] for anything else.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ProfileParseError(s.to_string());
        Ok(match s {
            "quasar" => Profile::Quasar,
            "aurora" => Profile::Aurora,
            "polaris" => Profile::Polaris,
            "fast" => Profile::Fast,
            _ => {
                let deadline = s.strip_prefix("hybrid-").ok_or_else(err)?;
                let (digits, scale) = if let Some(ms) = deadline.strip_suffix("ms") {
                    (ms, 1)
                } else if let Some(secs) = deadline.strip_suffix('s') {
                    (secs, 1000)
                } else {
                    return Err(err());
                };
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(err());
                }
                let deadline_ms = digits
                    .parse::<u64>()
                    .ok()
                    .and_then(|n| n.checked_mul(scale))
                    .filter(|&ms| (1..=86_400_000).contains(&ms))
                    .ok_or_else(err)?;
                Profile::Hybrid { deadline_ms }
            }
        })
    }
}

/// The bundle digest (32 bytes) over round digests, oldest first: TupleHash256, customization
/// [`BUNDLE_DIGEST_CUSTOMIZATION`], one tuple element per digest. Never fails.
pub fn bundle_digest<'a>(round_digests: impl IntoIterator<Item = &'a Hash>) -> Hash {
    let mut h = TupleHash256::new(BUNDLE_DIGEST_CUSTOMIZATION);
    for mu in round_digests {
        h.part(mu);
    }
    h.finalize()
}

/// The epoch's Groth16 rollup key: the verifying key and the commitment h_x to the epoch's
/// validator ML-DSA keys and stakes (`quasar_crypto::rollup::circuit`).
#[derive(Clone, Debug)]
pub struct RollupKey {
    /// The verifying key (3 public inputs: μ_hi, μ_lo, h_x).
    pub verifying_key: VerifyingKey,
    /// The validator-set commitment.
    pub h_x: Fr,
}

/// The keys an epoch's certificates verify against. Only the keys of the profile's legs are
/// needed ([`CertPolicy::new`] checks that they are present).
#[derive(Clone, Debug)]
pub struct EpochKeys {
    /// The validator set: BLS keys and stakes (the BLS leg and the quorum rule).
    pub validators: ValidatorSet,
    /// The Corona group key.
    pub corona: Option<CoronaGroupKey>,
    /// The Groth16 rollup key.
    pub rollup: Option<RollupKey>,
    /// The Pulsar group key (an ML-DSA-65 public key).
    pub pulsar: Option<PublicKey<MlDsa65>>,
    /// The validators' SLH-DSA keys.
    pub magnetar: Option<MagnetarKeys>,
}

/// The policy certificates of one epoch are checked against; stored with the epoch, never read
/// from a certificate.
#[derive(Clone, Debug)]
pub struct CertPolicy {
    chain_id: u64,
    epoch: u64,
    profile: Profile,
    domain: EpochDomain,
    bundle_size: usize,
    /// Shared by the policies one policy is carried into ([`CertPolicy::with_epoch`]): a
    /// Corona group key alone takes over a megabyte in memory.
    keys: Arc<EpochKeys>,
}

impl CertPolicy {
    /// The policy of `epoch` on `chain_id`: `profile`, the epoch's `validator_set_root`, the
    /// largest bundle a certificate may cover (`bundle_size`, 1 ≤ k ≤
    /// [`quasar_wire::MAX_BUNDLE`]), and the keys.
    ///
    /// Errors: [`CertError::MissingKey`] naming a leg of the profile whose key is absent;
    /// [`CertError::BundleSize`] for a bundle size outside 1..=MAX_BUNDLE.
    pub fn new(
        chain_id: u64,
        epoch: u64,
        profile: Profile,
        validator_set_root: Hash,
        bundle_size: usize,
        keys: EpochKeys,
    ) -> Result<CertPolicy, CertError> {
        if !(1..=quasar_wire::MAX_BUNDLE).contains(&bundle_size) {
            return Err(CertError::BundleSize {
                got: bundle_size,
                max: quasar_wire::MAX_BUNDLE,
            });
        }
        for &leg in profile.legs() {
            let present = match leg {
                LegKind::Bls => true,
                LegKind::Corona => keys.corona.is_some(),
                LegKind::Groth16 => keys.rollup.is_some(),
                LegKind::Pulsar => keys.pulsar.is_some(),
                LegKind::Magnetar => keys.magnetar.is_some(),
            };
            if !present {
                return Err(CertError::MissingKey { leg });
            }
        }
        Ok(CertPolicy {
            chain_id,
            epoch,
            profile,
            domain: EpochDomain {
                validator_set_root,
                profile_id: profile.name(),
            },
            bundle_size,
            keys: Arc::new(keys),
        })
    }

    /// This policy carried into `epoch`: the same profile, validator set, bundle size and keys
    /// (a chain whose validator set and keys did not change at the epoch boundary). The keys
    /// are shared, not copied.
    pub fn with_epoch(&self, epoch: u64) -> CertPolicy {
        CertPolicy {
            epoch,
            ..self.clone()
        }
    }

    /// The chain.
    pub fn chain_id(&self) -> u64 {
        self.chain_id
    }
    /// The epoch.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }
    /// The profile.
    pub fn profile(&self) -> Profile {
        self.profile
    }
    /// The validator-set root and profile id every vote and certificate of the epoch binds.
    pub fn domain(&self) -> &EpochDomain {
        &self.domain
    }
    /// The largest bundle a certificate may cover.
    pub fn bundle_size(&self) -> usize {
        self.bundle_size
    }
    /// The keys.
    pub fn keys(&self) -> &EpochKeys {
        &self.keys
    }

    /// μ of the block `block_hash` at `height`, finalized in `view`, under this policy.
    pub fn round_digest(&self, height: u64, view: u64, block_hash: &Hash) -> Hash {
        round_digest(
            self.chain_id,
            self.epoch,
            height,
            view,
            block_hash,
            &self.domain,
        )
    }
}

/// Why a certificate was rejected. Every variant means: drop the certificate (and, if a peer
/// relayed it as valid, penalize the peer); none is fatal to the node.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CertError {
    /// The bytes are not a QuasarCert message.
    #[error("malformed certificate: {0}")]
    Decode(#[from] WireError),
    /// The certificate is for another chain.
    #[error("certificate is for chain {got}, expected {expected}")]
    WrongChain {
        /// This policy's chain.
        expected: u64,
        /// The certificate's.
        got: u64,
    },
    /// The certificate is for another epoch than the policy's.
    #[error("certificate is for epoch {got}, the policy is epoch {expected}'s")]
    WrongEpoch {
        /// This policy's epoch.
        expected: u64,
        /// The certificate's.
        got: u64,
    },
    /// The bundle's last digest is not the μ of the certified block under this policy.
    #[error("the bundle does not end with the block's round digest")]
    BundleMismatch,
    /// The bundle covers more blocks than the policy allows (`fast` allows exactly one).
    #[error("bundle of {got} digests; this policy allows at most {max}")]
    BundleTooLong {
        /// Digests in the certificate.
        got: usize,
        /// The policy's limit.
        max: usize,
    },
    /// A policy's bundle size outside 1..=MAX_BUNDLE.
    #[error("bundle size {got} outside 1..={max}")]
    BundleSize {
        /// The size asked for.
        got: usize,
        /// [`quasar_wire::MAX_BUNDLE`].
        max: usize,
    },
    /// A leg the profile requires is absent.
    #[error("{leg} leg missing")]
    MissingLeg {
        /// The missing leg.
        leg: LegKind,
    },
    /// A leg the profile does not have is present.
    #[error("{leg} leg is not part of this epoch's profile")]
    ExtraLeg {
        /// The extra leg.
        leg: LegKind,
    },
    /// A leg is listed twice.
    #[error("{leg} leg appears twice")]
    DuplicateLeg {
        /// The repeated leg.
        leg: LegKind,
    },
    /// A leg failed to decode or to verify.
    #[error("{leg} leg rejected: {error}")]
    Leg {
        /// The failed leg.
        leg: LegKind,
        /// Why.
        error: LaneError,
    },
    /// Building a policy: the profile needs a key the epoch does not have.
    #[error("the profile needs the epoch's {leg} key, which is missing")]
    MissingKey {
        /// The leg without a key.
        leg: LegKind,
    },
}

/// One leg's verification time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LegTiming {
    /// The leg.
    pub leg: LegKind,
    /// Wall time of its verification (decode included).
    pub elapsed: Duration,
}

/// A verified certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertReport {
    /// Height of the certified block.
    pub height: u64,
    /// The certified block.
    pub block: Hash,
    /// Its round digest μ (the BLS leg's message).
    pub round_digest: Hash,
    /// The round digests the post-quantum legs cover, oldest first (the last is `round_digest`).
    pub bundle: Vec<Hash>,
    /// The bundle digest the post-quantum legs signed.
    pub bundle_digest: Hash,
    /// Each leg's verification time, in the profile's order.
    pub legs: Vec<LegTiming>,
    /// Wall time of the whole verification.
    pub elapsed: Duration,
}

/// The parallel-max certificate verifier: legs run as tasks of one shared rayon pool, the
/// Corona leg's NTTs on an arithmetic backend (the QuasarGPU adapter, or the CPU reference).
pub struct CertVerifier {
    pool: rayon::ThreadPool,
    backend: Arc<dyn BatchArithmetic>,
}

impl std::fmt::Debug for CertVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertVerifier")
            .field("threads", &self.pool.current_num_threads())
            .field("backend", &self.backend.name())
            .finish()
    }
}

/// Why the verifier's pool could not start.
#[derive(Debug, thiserror::Error)]
#[error("certificate verifier pool: {0}")]
pub struct PoolError(#[from] rayon::ThreadPoolBuildError);

impl CertVerifier {
    /// A verifier with a pool of `threads` threads (0 = one per available core) and the CPU
    /// reference as its arithmetic backend. Errors: [`PoolError`] when the OS refuses the
    /// threads.
    pub fn new(threads: usize) -> Result<CertVerifier, PoolError> {
        CertVerifier::with_backend(threads, Arc::new(CpuBackend))
    }

    /// [`CertVerifier::new`] with `backend` for the Corona leg's NTTs.
    pub fn with_backend(
        threads: usize,
        backend: Arc<dyn BatchArithmetic>,
    ) -> Result<CertVerifier, PoolError> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("cert-verify-{i}"))
            .build()?;
        Ok(CertVerifier { pool, backend })
    }

    /// Verifies an encoded QuasarCert against `policy` (module docs): header (chain, epoch),
    /// bundle (length, last digest = μ), the exact leg set of the profile, then every leg in
    /// parallel.
    ///
    /// Errors, in the order checked: [`CertError::Decode`]; [`CertError::WrongChain`],
    /// [`CertError::WrongEpoch`]; [`CertError::BundleTooLong`], [`CertError::BundleMismatch`];
    /// [`CertError::DuplicateLeg`], [`CertError::ExtraLeg`], [`CertError::MissingLeg`]; then
    /// [`CertError::Leg`] naming the first leg found to fail.
    pub fn verify(&self, policy: &CertPolicy, bytes: &[u8]) -> Result<CertReport, CertError> {
        let start = Instant::now();
        let cert = QuasarCertRef::parse(bytes)?;
        if cert.chain_id() != policy.chain_id {
            return Err(CertError::WrongChain {
                expected: policy.chain_id,
                got: cert.chain_id(),
            });
        }
        if cert.epoch() != policy.epoch {
            return Err(CertError::WrongEpoch {
                expected: policy.epoch,
                got: cert.epoch(),
            });
        }
        let max = if policy.profile == Profile::Fast {
            1
        } else {
            policy.bundle_size
        };
        if cert.bundle_len() > max {
            return Err(CertError::BundleTooLong {
                got: cert.bundle_len(),
                max,
            });
        }
        let block = *cert.block();
        let mu = policy.round_digest(cert.height(), cert.view(), &block);
        let bundle: Vec<Hash> = cert.bundle().copied().collect();
        if bundle.last() != Some(&mu) {
            return Err(CertError::BundleMismatch);
        }
        let bodies = leg_bodies(policy.profile, &cert)?;
        let digest = bundle_digest(&bundle);
        let legs = self.verify_legs(policy, &mu, &digest, &bodies)?;
        Ok(CertReport {
            height: cert.height(),
            block,
            round_digest: mu,
            bundle,
            bundle_digest: digest,
            legs,
            elapsed: start.elapsed(),
        })
    }

    /// Runs every leg on the pool, slowest kinds first; the first failure cancels the rest.
    fn verify_legs(
        &self,
        policy: &CertPolicy,
        mu: &Hash,
        digest: &Hash,
        bodies: &[(LegKind, &[u8])],
    ) -> Result<Vec<LegTiming>, CertError> {
        let cancel = AtomicBool::new(false);
        let failure: Mutex<Option<CertError>> = Mutex::new(None);
        let timings: Mutex<Vec<LegTiming>> = Mutex::new(Vec::with_capacity(bodies.len()));
        let mut order: Vec<&(LegKind, &[u8])> = bodies.iter().collect();
        order.sort_by_key(|(leg, _)| expected_cost_rank(*leg));
        self.pool.scope(|scope| {
            for &&(leg, body) in &order {
                let (cancel, failure, timings) = (&cancel, &failure, &timings);
                let backend = self.backend.as_ref();
                scope.spawn(move |_| {
                    if cancel.load(Ordering::Acquire) {
                        return;
                    }
                    let started = Instant::now();
                    let verdict =
                        verify_leg_until(policy, leg, (mu, digest), body, backend, cancel);
                    let elapsed = started.elapsed();
                    match verdict {
                        Ok(()) => lock(timings).push(LegTiming { leg, elapsed }),
                        Err(LaneError::Cancelled) => {}
                        Err(error) => {
                            cancel.store(true, Ordering::Release);
                            lock(failure).get_or_insert(CertError::Leg { leg, error });
                        }
                    }
                });
            }
        });
        if let Some(error) = lock(&failure).take() {
            return Err(error);
        }
        let mut timings = std::mem::take(&mut *lock(&timings));
        let rank = |leg: LegKind| policy.profile.legs().iter().position(|&l| l == leg);
        timings.sort_by_key(|t| rank(t.leg));
        Ok(timings)
    }
}

/// Locks `m`, recovering the data if another task panicked while holding it (a leg verifier
/// never panics; if one did, its result is simply absent).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Start order: the kinds that usually take longest first, so the slowest leg is never queued
/// behind a fast one.
fn expected_cost_rank(leg: LegKind) -> u8 {
    match leg {
        LegKind::Magnetar => 0,
        LegKind::Groth16 => 1,
        LegKind::Corona => 2,
        LegKind::Bls => 3,
        LegKind::Pulsar => 4,
    }
}

/// The certificate's legs in the profile's order, after checking that it lists each leg of
/// the profile exactly once and nothing else.
fn leg_bodies<'a>(
    profile: Profile,
    cert: &QuasarCertRef<'a>,
) -> Result<Vec<(LegKind, &'a [u8])>, CertError> {
    let required = profile.legs();
    let mut found: Vec<Option<&'a [u8]>> = vec![None; required.len()];
    for (leg, body) in cert.legs() {
        let Some(slot) = required
            .iter()
            .position(|&r| r == leg)
            .and_then(|i| found.get_mut(i))
        else {
            return Err(CertError::ExtraLeg { leg });
        };
        if slot.replace(body).is_some() {
            return Err(CertError::DuplicateLeg { leg });
        }
    }
    required
        .iter()
        .zip(found)
        .map(|(&leg, body)| body.map(|b| (leg, b)).ok_or(CertError::MissingLeg { leg }))
        .collect()
}

/// Verifies one leg of a certificate on its own (a leg that arrives before the rest of its
/// certificate, or a benchmark's single-leg baseline): the BLS leg against `round_digest`, the
/// others against `bundle_digest` ([`bundle_digest`]), with the policy's keys, on the CPU
/// reference backend.
///
/// Errors: the leg's [`LaneError`] (decoding, quorum, signature or proof); [`LaneError::KeyAbsent`]
/// when `leg` is not in the policy's profile and the epoch has no key for it.
pub fn verify_leg(
    policy: &CertPolicy,
    leg: LegKind,
    round_digest: &Hash,
    bundle_digest: &Hash,
    body: &[u8],
) -> Result<(), LaneError> {
    let never = AtomicBool::new(false);
    let digests = (round_digest, bundle_digest);
    verify_leg_until(policy, leg, digests, body, &CpuBackend, &never)
}

/// [`verify_leg`] on `backend` (the round digest μ and the bundle digest), giving up with
/// [`LaneError::Cancelled`] once `cancel` is set.
fn verify_leg_until(
    policy: &CertPolicy,
    leg: LegKind,
    (mu, digest): (&Hash, &Hash),
    body: &[u8],
    backend: &dyn BatchArithmetic,
    cancel: &AtomicBool,
) -> Result<(), LaneError> {
    let keys = &policy.keys;
    match leg {
        LegKind::Bls => verify_bls(&keys.validators, mu, body),
        LegKind::Corona => {
            let key = keys.corona.as_ref().ok_or(LaneError::KeyAbsent)?;
            corona::verify_leg(key, digest, body, backend)
        }
        LegKind::Groth16 => {
            let key = keys.rollup.as_ref().ok_or(LaneError::KeyAbsent)?;
            verify_groth16(key, digest, body)
        }
        LegKind::Pulsar => {
            let key = keys.pulsar.as_ref().ok_or(LaneError::KeyAbsent)?;
            pulsar::verify_leg(key, digest, body)
        }
        LegKind::Magnetar => {
            let key = keys.magnetar.as_ref().ok_or(LaneError::KeyAbsent)?;
            let leg = MagnetarLeg::decode(body, key.parameter_set())?;
            magnetar::verify_leg_cancellable(key, digest, &leg, cancel).map(|_| ())
        }
    }
}

/// Encodes a BLS leg body: the 96-byte aggregate, then the signer bitmap.
pub fn encode_bls_leg(aggregate: &[u8; BLS_SIGNATURE_LEN], bitmap: &[u8]) -> Vec<u8> {
    let mut body = Vec::with_capacity(BLS_SIGNATURE_LEN + bitmap.len());
    body.extend_from_slice(aggregate);
    body.extend_from_slice(bitmap);
    body
}

/// The BLS leg: aggregate ‖ bitmap, a quorum of the set signing μ.
fn verify_bls(set: &ValidatorSet, mu: &Hash, body: &[u8]) -> Result<(), LaneError> {
    if body.len() < BLS_SIGNATURE_LEN {
        return Err(LaneError::LegLength {
            expected: BLS_SIGNATURE_LEN,
            got: body.len(),
        });
    }
    let (aggregate, bitmap) = body.split_at(BLS_SIGNATURE_LEN);
    bls::verify_aggregate(set, bitmap, mu, aggregate).map(|_| ())
}

/// Encodes a Groth16 leg body: proof ‖ the proven digest ‖ h_x (little-endian field element).
pub fn encode_groth16_leg(proof: &Proof, digest: &Hash, h_x: &Fr) -> Vec<u8> {
    let mut body = Vec::with_capacity(GROTH16_LEG_LEN);
    body.extend_from_slice(&proof.to_bytes());
    body.extend_from_slice(digest);
    body.extend_from_slice(&field_element_to_bytes(h_x));
    body
}

/// The Groth16 leg: its public inputs must be exactly (bundle digest, the epoch's h_x), then the
/// proof must verify for them.
fn verify_groth16(key: &RollupKey, digest: &Hash, body: &[u8]) -> Result<(), LaneError> {
    if body.len() != GROTH16_LEG_LEN {
        return Err(LaneError::LegLength {
            expected: GROTH16_LEG_LEN,
            got: body.len(),
        });
    }
    let (proof, inputs) = body.split_at(PROOF_LEN);
    let (proven_digest, h_x) = inputs.split_at(32);
    let h_x: &[u8; FIELD_ELEMENT_LEN] = h_x
        .try_into()
        .map_err(|_| LaneError::Groth16(Groth16Error::Encoding("h_x")))?;
    let h_x = field_element_from_bytes(h_x).map_err(LaneError::Groth16)?;
    if proven_digest != digest.as_slice() || h_x != key.h_x {
        return Err(LaneError::Groth16Statement);
    }
    let proof = Proof::from_bytes(proof).map_err(LaneError::Groth16)?;
    let statement = Statement {
        digest: *digest,
        h_x,
    };
    key.verifying_key
        .verify(&statement.public_inputs(), &proof)
        .map_err(LaneError::Groth16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_names_round_trip() {
        for p in [
            Profile::Quasar,
            Profile::Aurora,
            Profile::Polaris,
            Profile::Fast,
            Profile::Hybrid { deadline_ms: 1000 },
            Profile::Hybrid { deadline_ms: 250 },
        ] {
            assert_eq!(p.name().parse::<Profile>(), Ok(p), "{p}");
        }
        assert_eq!(
            "hybrid-1s".parse::<Profile>(),
            Ok(Profile::Hybrid { deadline_ms: 1000 })
        );
        assert_eq!(
            "hybrid-1000ms".parse::<Profile>().map(|p| p.name()),
            Ok("hybrid-1s".to_string())
        );
        for bad in [
            "",
            "Quasar",
            "hybrid",
            "hybrid-",
            "hybrid-s",
            "hybrid-0s",
            "hybrid-1",
            "hybrid-+1s",
            "hybrid-1h",
            "hybrid-99999999999999999999s",
            "hybrid-86401s",
        ] {
            assert!(bad.parse::<Profile>().is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn every_profile_starts_with_bls_and_lists_each_leg_once() {
        for p in [
            Profile::Quasar,
            Profile::Aurora,
            Profile::Polaris,
            Profile::Fast,
            Profile::Hybrid { deadline_ms: 5 },
        ] {
            let legs = p.legs();
            assert_eq!(legs.first(), Some(&LegKind::Bls));
            let mut sorted = legs.to_vec();
            sorted.sort_by_key(|l| *l as u8);
            sorted.dedup();
            assert_eq!(sorted.len(), legs.len());
        }
        assert_eq!(Profile::default(), Profile::Quasar);
    }

    #[test]
    fn the_bundle_digest_is_not_a_round_digest_and_binds_the_list() {
        let mu = [3u8; 32];
        assert_ne!(bundle_digest([&mu]), mu);
        assert_ne!(bundle_digest([&mu, &mu]), bundle_digest([&mu]));
        assert_ne!(
            bundle_digest([&mu, &[4; 32]]),
            bundle_digest([&[4; 32], &mu])
        );
    }
}
