//! Groth16 (Groth, "On the Size of Pairing-based Non-interactive Arguments", EUROCRYPT 2016)
//! over BLS12-381 for the rollup circuit, on `ark-groth16`: key generation and proving.
//!
//! **Setup.** [`dev_setup`] generates the proving and verifying keys of a [`Shape`] from a
//! 32-byte seed (ChaCha20): deterministic, so testnet operators can reproduce the keys, and
//! **insecure for production**: whoever knows the seed knows the toxic waste (α, β, γ, δ, x) and
//! can prove false statements. Production keys need a multi-party phase-2 ceremony (e.g. the
//! MMORPG protocol of Bowe, Gabizon, Miers, ePrint 2017/1050) over a universal phase-1
//! powers-of-tau; not built here.
//!
//! **Proving.** [`prove`] synthesizes the circuit for a checked [`RollupWitness`] and runs the
//! `ark-groth16` prover (its own MSMs and FFTs, rayon-parallel). Moving those MSMs and FFTs
//! behind the batched-arithmetic trait of DESIGN.md §1 (so the GPU adapter can take them) is not
//! done yet.

use ark_bls12_381::{Bls12_381, Fr};
use ark_groth16::Groth16;
use ark_snark::SNARK;
use rand::{CryptoRng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use thiserror::Error;

use super::circuit::{RollupCircuit, RollupWitness, Shape, Statement};

/// A Groth16 proving key over BLS12-381.
pub type ProvingKey = ark_groth16::ProvingKey<Bls12_381>;
/// A Groth16 verifying key over BLS12-381.
pub type VerifyingKey = ark_groth16::VerifyingKey<Bls12_381>;
/// A Groth16 proof over BLS12-381 (A, C in G1, B in G2).
pub type Proof = ark_groth16::Proof<Bls12_381>;

/// Why keys or a proof could not be made.
#[derive(Debug, Error)]
pub enum ProverError {
    /// Constraint synthesis or the Groth16 algorithm failed.
    #[error("groth16: {0}")]
    Groth16(#[from] ark_relations::gr1cs::SynthesisError),
}

/// The development setup of `shape` from `seed` (module docs: not for production).
pub fn dev_setup(shape: Shape, seed: [u8; 32]) -> Result<(ProvingKey, VerifyingKey), ProverError> {
    let mut rng = ChaCha20Rng::from_seed(seed);
    Ok(Groth16::<Bls12_381>::circuit_specific_setup(
        RollupCircuit::for_setup(shape),
        &mut rng,
    )?)
}

/// A proof of `witness`'s statement under `pk` (which must be the key of the witness's
/// shape), with the statement. `rng` randomizes the proof (zero knowledge): use a CSPRNG.
pub fn prove<R: RngCore + CryptoRng>(
    pk: &ProvingKey,
    witness: RollupWitness,
    rng: &mut R,
) -> Result<(Proof, Statement), ProverError> {
    let statement = witness.statement();
    let proof = Groth16::<Bls12_381>::prove(pk, RollupCircuit::for_proof(witness), rng)?;
    Ok((proof, statement))
}

/// The public inputs of `statement` in the order the verifying key expects.
pub fn public_inputs(statement: &Statement) -> [Fr; 3] {
    statement.public_inputs()
}
