//! A small circuit with the rollup's public-input shape, for tests and benchmarks of the Groth16
//! machinery (prover, verifier lane, proving job) that do not need the minutes and gigabytes of
//! the real rollup circuit. Not part of any protocol.
//!
//! The statement: public x0, x1, x2 (three inputs, as the rollup's \[μ_hi, μ_lo, h_x\]), witnesses
//! t = x0·x1 and u = t + x2 (so every input is bound by a constraint: an input that appears in
//! none would verify with any value), then `chain` squarings of a free witness w, so the circuit
//! has `chain + 2` constraints and 4 instance variables, and every input triple has a proof.

use ark_bls12_381::{Bls12_381, Fr};
use ark_ff::{Field, UniformRand};
use ark_groth16::{Groth16, ProvingKey, VerifyingKey};
use ark_relations::gr1cs::{ConstraintSynthesizer, ConstraintSystemRef, SynthesisError, Variable};
use ark_relations::lc;
use ark_snark::SNARK;
use rand::{CryptoRng, RngCore};

/// The circuit of the module docs; `None` values for setup.
#[derive(Clone, Debug)]
pub struct SquaringChain {
    /// The public inputs (x0, x1, x2).
    pub inputs: Option<[Fr; 3]>,
    /// The witness w.
    pub w: Option<Fr>,
    /// Squarings after the main constraint.
    pub chain: usize,
}

impl SquaringChain {
    /// The unassigned circuit (for key generation).
    pub fn blank(chain: usize) -> SquaringChain {
        SquaringChain {
            inputs: None,
            w: None,
            chain,
        }
    }

    /// A true statement with random inputs and witness.
    pub fn random(chain: usize, rng: &mut impl RngCore) -> SquaringChain {
        let inputs = [Fr::rand(rng), Fr::rand(rng), Fr::rand(rng)];
        SquaringChain::for_inputs(inputs, chain, rng)
    }

    /// The statement with public inputs `inputs` (a random witness w).
    pub fn for_inputs(inputs: [Fr; 3], chain: usize, rng: &mut impl RngCore) -> SquaringChain {
        SquaringChain {
            inputs: Some(inputs),
            w: Some(Fr::rand(rng)),
            chain,
        }
    }

    /// A Groth16 key pair for the circuit with `chain` squarings, from `rng` (who knows the
    /// randomness can forge proofs: tests and benchmarks only).
    /// Errors: [`SynthesisError`] from ark-groth16's setup.
    pub fn setup<R: RngCore + CryptoRng>(
        chain: usize,
        rng: &mut R,
    ) -> Result<(ProvingKey<Bls12_381>, VerifyingKey<Bls12_381>), SynthesisError> {
        Groth16::<Bls12_381>::circuit_specific_setup(SquaringChain::blank(chain), rng)
    }
}

impl ConstraintSynthesizer<Fr> for SquaringChain {
    fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        let value = |v: Option<Fr>| move || v.ok_or(SynthesisError::AssignmentMissing);
        let xs = self.inputs;
        let x0 = cs.new_input_variable(value(xs.map(|x| x[0])))?;
        let x1 = cs.new_input_variable(value(xs.map(|x| x[1])))?;
        let x2 = cs.new_input_variable(value(xs.map(|x| x[2])))?;
        let w = cs.new_witness_variable(value(self.w))?;
        let t = cs.new_witness_variable(value(xs.map(|x| x[0] * x[1])))?;
        let u = cs.new_witness_variable(value(xs.map(|x| x[0] * x[1] + x[2])))?;
        cs.enforce_r1cs_constraint(|| lc!() + x0, || lc!() + x1, || lc!() + t)?;
        cs.enforce_r1cs_constraint(|| lc!() + t + x2, || lc!() + Variable::One, || lc!() + u)?;
        let (mut previous, mut current) = (w, self.w);
        for _ in 0..self.chain {
            current = current.map(|v| v.square());
            let next = cs.new_witness_variable(value(current))?;
            cs.enforce_r1cs_constraint(|| lc!() + previous, || lc!() + previous, || lc!() + next)?;
            previous = next;
        }
        Ok(())
    }
}
