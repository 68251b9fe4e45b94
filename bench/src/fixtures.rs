//! Keys and signers the `quasar-bench` subcommands share (seeded: benchmarks only, never keys
//! of a network).

use quasar_crypto::bls::{PublicKey, SecretKey, Signature};
use quasar_crypto::pulsar;
use quasar_lanes::{Validator, ValidatorSet};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use crate::cmd::BenchError;

/// The next session id from `counter`: the counter, little-endian, in 32 bytes.
pub fn session_id(counter: &mut u64) -> [u8; 32] {
    *counter += 1;
    let mut id = [0u8; 32];
    id[..8].copy_from_slice(&counter.to_le_bytes());
    id
}

/// n BLS validators of stake 1, each with its signature on one message.
pub struct BlsSigners {
    /// Public keys, validator order.
    pub keys: Vec<PublicKey>,
    /// Each validator's signature on the message.
    pub signatures: Vec<Signature>,
    /// The validator set of these keys.
    pub set: ValidatorSet,
}

impl BlsSigners {
    /// `n` validators with keys from seeds `[seed; 32]` with the index in the first 8 bytes,
    /// signing `message`. Errors: [`BenchError::Setup`] when the set is refused.
    pub fn new(n: usize, seed: u8, message: &[u8]) -> Result<BlsSigners, BenchError> {
        let secrets: Vec<SecretKey> = (0..n)
            .map(|i| {
                let mut bytes = [seed; 32];
                bytes[..8].copy_from_slice(&(i as u64).to_le_bytes());
                SecretKey::from_seed(&bytes)
            })
            .collect();
        let keys: Vec<PublicKey> = secrets.iter().map(SecretKey::public_key).collect();
        let validators = keys
            .iter()
            .map(|&public_key| Validator {
                public_key,
                stake: 1,
            })
            .collect();
        Ok(BlsSigners {
            signatures: secrets.iter().map(|sk| sk.sign(message)).collect(),
            set: ValidatorSet::new(validators).map_err(BenchError::setup("validator set"))?,
            keys,
        })
    }

    /// The aggregate of every signature, compressed. Errors: none for n ≥ 1.
    pub fn aggregate(&self) -> Result<[u8; 96], BenchError> {
        Ok(Signature::aggregate(&self.signatures)
            .map_err(BenchError::setup("BLS aggregate"))?
            .to_bytes())
    }
}

/// A dealt t-of-n Pulsar key with t of its signers, signing whole sessions in process.
pub struct PulsarCommittee {
    group: pulsar::GroupKey,
    signers: Vec<pulsar::Signer>,
    signatures: u64,
    sessions: u64,
    rng: ChaCha20Rng,
}

impl PulsarCommittee {
    /// Deals a t-of-n key from `rng`; signing draws from a generator seeded with `seed`.
    /// Errors: [`BenchError::Setup`] for a shape Pulsar has no parameters for.
    pub fn deal(
        t: usize,
        n: usize,
        rng: &mut ChaCha20Rng,
        seed: u64,
    ) -> Result<PulsarCommittee, BenchError> {
        let (group, shares) =
            pulsar::trusted_dealer_keygen(t, n, rng).map_err(BenchError::setup("Pulsar keygen"))?;
        Ok(PulsarCommittee {
            group,
            signers: shares
                .into_iter()
                .take(t)
                .map(pulsar::Signer::new)
                .collect(),
            signatures: 0,
            sessions: 0,
            rng: ChaCha20Rng::seed_from_u64(seed),
        })
    }

    /// One signature on `message` with `context` (up to 256 sessions).
    pub fn sign(&mut self, message: &[u8], context: &[u8]) {
        let base = session_id(&mut self.signatures);
        let signed = pulsar::sign_in_process(
            &self.group,
            &mut self.signers,
            &base,
            message,
            context,
            256,
            &mut self.rng,
        )
        .expect("Pulsar signs");
        self.sessions += u64::from(signed.sessions);
    }

    /// Sessions per signature so far (a session restarts when a response is rejected).
    pub fn sessions_per_signature(&self) -> f64 {
        self.sessions as f64 / self.signatures.max(1) as f64
    }
}
