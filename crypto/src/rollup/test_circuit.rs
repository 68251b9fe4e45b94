//! A small circuit with the rollup's public-input shape, for tests and benchmarks of the Groth16
//! machinery (prover, verifier lane, proving job) that do not need the minutes and gigabytes of
//! the real rollup circuit. Not part of any protocol.
//!
//! The statement: public x0, x1, x2 (three inputs, as the rollup's \[μ_hi, μ_lo, h_x\]), witness
//! w with x0·x1 + x2 = w², then `chain` squarings of w, so the circuit has `chain + 2`
//! constraints and 4 instance variables.

use ark_bls12_381::Fr;
use ark_ff::{Field, UniformRand};
use ark_relations::gr1cs::{ConstraintSynthesizer, ConstraintSystemRef, SynthesisError};
use ark_relations::lc;
use rand::RngCore;

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

    /// A true statement: random x0, x1, w and x2 = w² − x0·x1.
    pub fn random(chain: usize, rng: &mut impl RngCore) -> SquaringChain {
        let (x0, x1, w) = (Fr::rand(rng), Fr::rand(rng), Fr::rand(rng));
        SquaringChain {
            inputs: Some([x0, x1, w.square() - x0 * x1]),
            w: Some(w),
            chain,
        }
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
        cs.enforce_r1cs_constraint(|| lc!() + x0, || lc!() + x1, || lc!() + t)?;
        cs.enforce_r1cs_constraint(|| lc!() + w, || lc!() + w, || lc!() + t + x2)?;
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
