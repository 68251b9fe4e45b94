//! A complete epoch with real keys for every leg, and real certificates over it, for tests and
//! benchmarks (the lanes tests, the `cert` bench). Not part of any protocol and not secure: every
//! key comes from a seeded RNG.
//!
//! What is real and what is small:
//! - BLS: one key per validator; the leg aggregates the signatures of the smallest prefix of the
//!   set (index order) that holds a quorum, so the verifier does the work of a real quorum.
//! - Corona and Pulsar: one 2-of-3 committee each (dealer keys), signing in process. Their
//!   verification costs do not depend on the committee size.
//! - Groth16: the proof is of the small `SquaringChain` test circuit, which has the rollup's
//!   public-input shape (μ_hi, μ_lo, h_x): the lane's work (input checks, three-pair Miller loop,
//!   final exponentiation) is the same as for a rollup proof, proving takes milliseconds instead
//!   of minutes.
//! - Magnetar: one SLH-DSA key per validator of the chosen parameter set; the quorum prefix signs
//!   (≈ 0.3 s per 192f signature, so large sets take a while to build).

use ark_bls12_381::Fr;
use ark_ff::UniformRand;
use quasar_crypto::accel::CpuBackend;
use quasar_crypto::bls::{SecretKey as BlsSecretKey, Signature as BlsSignature};
use quasar_crypto::corona;
use quasar_crypto::hash::{tagged_hash, Hash};
use quasar_crypto::magnetar::{ParameterSet, SecretKey as SlhSecretKey};
use quasar_crypto::pulsar;
use quasar_crypto::rollup::circuit::Statement;
use quasar_crypto::rollup::prover::create_random_proof;
use quasar_crypto::rollup::test_circuit::SquaringChain;
use quasar_wire::{LegKind, QuasarCert};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use crate::bls::bitmap_from_signers;
use crate::cert::{
    bundle_digest, encode_bls_leg, encode_groth16_leg, CertPolicy, EpochKeys, Profile, RollupKey,
};
use crate::groth16::{Proof, VerifyingKey};
use crate::magnetar::{MagnetarKeys, MagnetarLeg};
use crate::{Validator, ValidatorSet, CERT_CONTEXT};

/// Squarings in the fixture's Groth16 test circuit.
const CHAIN: usize = 16;

/// The fixture's shape.
#[derive(Clone, Copy, Debug)]
pub struct FixtureConfig {
    /// Validators (≥ 1).
    pub validators: usize,
    /// The epoch's profile.
    pub profile: Profile,
    /// The Magnetar parameter set.
    pub magnetar: ParameterSet,
    /// The policy's bundle size.
    pub bundle_size: usize,
    /// Chain id.
    pub chain_id: u64,
    /// Epoch.
    pub epoch: u64,
    /// RNG seed of every key.
    pub seed: u64,
}

impl FixtureConfig {
    /// `validators` validators of equal stake under `profile`, SLH-DSA-SHAKE-192f, bundles of
    /// up to 8, chain 7, epoch 3.
    pub fn new(validators: usize, profile: Profile) -> FixtureConfig {
        FixtureConfig {
            validators,
            profile,
            magnetar: ParameterSet::Shake192f,
            bundle_size: 8,
            chain_id: 7,
            epoch: 3,
            seed: 1,
        }
    }
}

/// Why a fixture could not be built or sign (a bug in the fixture or a misuse; tests unwrap).
#[derive(Debug, thiserror::Error)]
#[error("certificate fixture: {0}")]
pub struct FixtureError(String);

fn fail(what: &str) -> impl FnOnce(String) -> FixtureError + '_ {
    move |e| FixtureError(format!("{what}: {e}"))
}

/// An epoch's secrets and policy (module docs).
pub struct Fixture {
    config: FixtureConfig,
    policy: CertPolicy,
    bls: Vec<BlsSecretKey>,
    quorum: Vec<usize>,
    corona_key: corona::scheme::GroupKey,
    corona_signers: Vec<corona::scheme::Signer>,
    pulsar_key: pulsar::GroupKey,
    pulsar_signers: Vec<pulsar::Signer>,
    slh: Vec<SlhSecretKey>,
    proving_key: ark_groth16::ProvingKey<ark_bls12_381::Bls12_381>,
    h_x: Fr,
    rng: ChaCha20Rng,
    sessions: u64,
}

impl Fixture {
    /// Builds every key of `config` and the epoch's policy (validator-set root: a hash of the
    /// BLS keys and stakes). Errors: [`FixtureError`] naming the step that failed.
    pub fn new(config: FixtureConfig) -> Result<Fixture, FixtureError> {
        let mut rng = ChaCha20Rng::seed_from_u64(config.seed);
        let n = config.validators;
        let bls: Vec<BlsSecretKey> = (0..n)
            .map(|i| BlsSecretKey::from_seed(&seed_for(config.seed, b"bls", i)))
            .collect();
        let validators = ValidatorSet::new(
            bls.iter()
                .map(|k| Validator {
                    public_key: k.public_key(),
                    stake: 10,
                })
                .collect(),
        )
        .map_err(|e| fail("validator set")(e.to_string()))?;
        let mut quorum = Vec::new();
        for i in 0..n {
            quorum.push(i);
            if validators
                .stake_of(quorum.iter().copied())
                .is_some_and(|s| validators.is_quorum(s))
            {
                break;
            }
        }
        let (corona_key, corona_shares) = corona::scheme::trusted_dealer_keygen(2, 3, &mut rng)
            .map_err(|e| fail("corona keygen")(e.to_string()))?;
        let (pulsar_key, pulsar_shares) = pulsar::trusted_dealer_keygen(2, 3, &mut rng)
            .map_err(|e| fail("pulsar keygen")(e.to_string()))?;
        let pulsar_signers = pulsar_shares
            .into_iter()
            .take(2)
            .map(pulsar::Signer::new)
            .collect();
        let slh: Vec<SlhSecretKey> = (0..n)
            .map(|i| SlhSecretKey::from_seed(config.magnetar, &seed_for(config.seed, b"slh", i)))
            .collect();
        let magnetar = MagnetarKeys::new(
            validators.clone(),
            config.magnetar,
            slh.iter().map(|k| k.public_key().clone()).collect(),
        )
        .map_err(|e| fail("magnetar keys")(e.to_string()))?;
        let (proving_key, vk) = SquaringChain::setup(CHAIN, &mut rng)
            .map_err(|e| fail("groth16 setup")(e.to_string()))?;
        let h_x = Fr::rand(&mut rng);
        let rollup = RollupKey {
            verifying_key: VerifyingKey::new(vk).map_err(|e| fail("groth16 key")(e.to_string()))?,
            h_x,
        };
        let root_parts: Vec<[u8; 48]> = bls.iter().map(|k| k.public_key().to_bytes()).collect();
        let root_refs: Vec<&[u8]> = root_parts.iter().map(|p| p.as_slice()).collect();
        let validator_set_root = tagged_hash("QUASAR-FIXTURE-VALIDATOR-SET-v1", &root_refs);
        let keys = EpochKeys {
            validators,
            corona: Some(corona_key.clone()),
            rollup: Some(rollup),
            pulsar: Some(pulsar_key.public_key().clone()),
            magnetar: Some(magnetar),
        };
        let policy = CertPolicy::new(
            config.chain_id,
            config.epoch,
            config.profile,
            validator_set_root,
            config.bundle_size,
            keys,
        )
        .map_err(|e| fail("policy")(e.to_string()))?;
        Ok(Fixture {
            config,
            policy,
            bls,
            quorum,
            corona_key,
            corona_signers: corona_shares
                .into_iter()
                .map(corona::scheme::Signer::new)
                .collect(),
            pulsar_key,
            pulsar_signers,
            slh,
            proving_key,
            h_x,
            rng,
            sessions: 0,
        })
    }

    /// The epoch's policy.
    pub fn policy(&self) -> &CertPolicy {
        &self.policy
    }

    /// The validators whose signatures the BLS and Magnetar legs carry.
    pub fn quorum(&self) -> &[usize] {
        &self.quorum
    }

    /// A certificate for `block` at `height` finalized in `view`, covering the earlier round
    /// digests `earlier` (oldest first) and this block's μ, with every leg of the profile.
    /// Errors: [`FixtureError`] when a signer fails.
    pub fn certificate(
        &mut self,
        height: u64,
        view: u64,
        block: Hash,
        earlier: &[Hash],
    ) -> Result<QuasarCert, FixtureError> {
        let mu = self.policy.round_digest(height, view, &block);
        let mut bundle = earlier.to_vec();
        bundle.push(mu);
        let digest = bundle_digest(&bundle);
        let mut legs = Vec::new();
        for &leg in self.config.profile.legs() {
            legs.push((leg, self.leg(leg, &mu, &digest)?));
        }
        Ok(QuasarCert {
            chain_id: self.config.chain_id,
            epoch: self.config.epoch,
            height,
            view,
            block,
            bundle,
            legs,
        })
    }

    /// One leg's body: the BLS leg signs `mu`, the others sign or prove `digest`.
    /// Errors: [`FixtureError`] when a signer fails.
    pub fn leg(&mut self, leg: LegKind, mu: &Hash, digest: &Hash) -> Result<Vec<u8>, FixtureError> {
        self.sessions += 1;
        let session = seed_for(self.config.seed, b"session", self.sessions as usize);
        Ok(match leg {
            LegKind::Bls => {
                let sigs: Vec<BlsSignature> = self
                    .quorum
                    .iter()
                    .filter_map(|&i| self.bls.get(i))
                    .map(|k| k.sign(mu))
                    .collect();
                let aggregate = BlsSignature::aggregate(&sigs)
                    .map_err(|e| fail("bls aggregate")(e.to_string()))?;
                let bitmap = bitmap_from_signers(self.quorum.iter().copied(), self.bls.len());
                encode_bls_leg(&aggregate.to_bytes(), &bitmap)
            }
            LegKind::Corona => corona::local::sign_in_process(
                &self.corona_key,
                &mut self.corona_signers,
                &[0, 2],
                corona::scheme::SessionId(session),
                digest,
                &mut self.rng,
            )
            .map_err(|e| fail("corona signing")(e.to_string()))?
            .to_bytes(),
            LegKind::Groth16 => {
                let statement = Statement {
                    digest: *digest,
                    h_x: self.h_x,
                };
                let circuit =
                    SquaringChain::for_inputs(statement.public_inputs(), CHAIN, &mut self.rng);
                let (proof, _) =
                    create_random_proof(&self.proving_key, circuit, &CpuBackend, &mut self.rng)
                        .map_err(|e| fail("groth16 proof")(e.to_string()))?;
                let proof =
                    Proof::from_ark(&proof).map_err(|e| fail("groth16 proof")(e.to_string()))?;
                encode_groth16_leg(&proof, digest, &self.h_x)
            }
            LegKind::Pulsar => {
                pulsar::sign_in_process(
                    &self.pulsar_key,
                    &mut self.pulsar_signers,
                    &session,
                    digest,
                    CERT_CONTEXT,
                    64,
                    &mut self.rng,
                )
                .map_err(|e| fail("pulsar signing")(e.to_string()))?
                .signature
            }
            LegKind::Magnetar => {
                let mut signatures = Vec::with_capacity(self.quorum.len());
                for &i in &self.quorum {
                    let key = self
                        .slh
                        .get(i)
                        .ok_or_else(|| FixtureError(format!("no SLH-DSA key {i}")))?;
                    let sig = key
                        .sign(digest, CERT_CONTEXT, &mut self.rng)
                        .map_err(|e| fail("slh-dsa signing")(e.to_string()))?;
                    signatures.push((i, sig));
                }
                MagnetarLeg::new(self.slh.len(), signatures)
                    .map_err(|e| fail("magnetar leg")(e.to_string()))?
                    .encode()
            }
        })
    }
}

/// A 32-byte seed for key `index` of kind `what`.
fn seed_for(seed: u64, what: &[u8], index: usize) -> [u8; 32] {
    tagged_hash(
        "QUASAR-FIXTURE-SEED-v1",
        &[&seed.to_le_bytes(), what, &(index as u64).to_le_bytes()],
    )
}
