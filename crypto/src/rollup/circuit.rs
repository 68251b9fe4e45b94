//! The rollup circuit: a quorum of the epoch's validators signed the round digest μ with their
//! ML-DSA identity keys (docs/architecture.md §4).
//!
//! # Statement
//!
//! Public inputs, in this order ([`Statement::public_inputs`]): μ_hi and μ_lo, the two halves of
//! the 32-byte round digest μ as big-endian 128-bit integers, and h_x, the commitment to the
//! epoch's validator set ([`commitment`]).
//!
//! Witness: for each of the n validators its key digest L_i and stake S_i; for each of the τ
//! signature slots the index of its signer, the signer's expanded key (Â, NTT(t1·2^d), tr) and
//! its signature (c̃, z, h).
//!
//! The circuit enforces:
//! - h_x = Poseidon(L_0, S_0, …, L_{n−1}, S_{n−1}) ([`super::poseidon::hash`]), every S_i < 2^64;
//! - slot signers are distinct: their indices strictly increase;
//! - each slot's key opens its signer's L_i: L_i = Poseidon(packed key) ([`key_digest`]), with
//!   every coefficient of Â and NTT(t1·2^d) range-checked to 23 bits so that the packing (11
//!   coefficients per field element) is injective;
//! - each slot's signature is a valid FIPS 204 signature of μ with context [`ROLLUP_CONTEXT`]
//!   under the slot's key ([`super::verify::enforce_verify`]);
//! - the slots' stake is a quorum: 3·Σ_slots S > 2·Σ_all S.
//!
//! ExpandA is not computed in-circuit: a verifier expands the epoch's keys natively once per
//! epoch to compute h_x, so the committed Â is as good as ρ.
//!
//! # Shape and keys
//!
//! A circuit's constraints depend only on its [`Shape`] (parameter set, n, τ), never on the keys,
//! the stakes or μ, so one Groth16 setup serves every epoch of that shape. A shape needs
//! 1 ≤ τ ≤ n < 2^14 (synthesis fails with `Unsatisfiable` otherwise).

use ark_bls12_381::Fr;
use ark_ff::{AdditiveGroup, Field, PrimeField};
use ark_r1cs_std::alloc::AllocVar;
use ark_r1cs_std::boolean::Boolean;
use ark_r1cs_std::eq::EqGadget;
use ark_r1cs_std::fields::fp::FpVar;
use ark_relations::gr1cs::{ConstraintSynthesizer, ConstraintSystemRef, SynthesisError};
use thiserror::Error;

use super::gadgets::{bit_length, from_bits, from_boolean, linear_combination, to_bits};
use super::native::{trace, DecodedSignature, ExpandedKey, Params, N};
use super::poseidon::{hash, hash_gadget};
use super::verify::{enforce_verify, witness_bytes, KeyVars, SignatureVars};

/// The context string of the validators' rollup signatures on μ (FIPS 204 ctx).
pub const ROLLUP_CONTEXT: &[u8] = b"QUASAR-ROLLUP-v1";

/// Key coefficients packed per field element (11·23 = 253 bits < 255).
const COEFFICIENTS_PER_ELEMENT: usize = 11;
/// Bits of tr packed per field element.
const BITS_PER_ELEMENT: usize = 253;
/// Bits of a stake.
const STAKE_BITS: usize = 64;

/// What a proving key is for: the ML-DSA parameter set, n validators and τ signature slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// The validators' ML-DSA parameter set.
    pub params: Params,
    /// n, the size of the validator set.
    pub validators: usize,
    /// τ, the number of signatures the proof carries.
    pub slots: usize,
}

/// One validator of the epoch: its expanded ML-DSA key and its stake.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Validator {
    /// The expanded public key.
    pub key: ExpandedKey,
    /// Stake weight.
    pub stake: u64,
}

/// The public statement of a rollup proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Statement {
    /// The 32-byte round digest μ the validators signed.
    pub digest: [u8; 32],
    /// The commitment h_x to the validator set.
    pub h_x: Fr,
}

impl Statement {
    /// [μ_hi, μ_lo, h_x]: μ's bytes 0..16 and 16..32 as big-endian integers, then h_x.
    pub fn public_inputs(&self) -> [Fr; 3] {
        let (hi, lo) = self.digest.split_at(16);
        [
            Fr::from_be_bytes_mod_order(hi),
            Fr::from_be_bytes_mod_order(lo),
            self.h_x,
        ]
    }
}

/// Why a witness cannot make a proof.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum RollupError {
    /// The number of validators differs from the shape's n.
    #[error("{got} validators, the shape has {expected}")]
    ValidatorCount {
        /// Validators given.
        got: usize,
        /// The shape's n.
        expected: usize,
    },
    /// The number of signatures differs from the shape's τ.
    #[error("{got} signatures, the shape has {expected} slots")]
    SignatureCount {
        /// Signatures given.
        got: usize,
        /// The shape's τ.
        expected: usize,
    },
    /// Signer indices must be distinct, increasing and below n.
    #[error("signer indices must strictly increase and be below the validator count")]
    SignerOrder,
    /// A signature does not verify under its signer's key.
    #[error("the signature of validator {0} does not verify")]
    BadSignature(usize),
    /// The signers' stake is not more than 2/3 of the total.
    #[error("signers hold {signed} of {total} stake, not more than 2/3")]
    NoQuorum {
        /// Stake of the signers.
        signed: u128,
        /// Total stake.
        total: u128,
    },
    /// The SampleInBall stream of a signature needs more than the first SHAKE256 block (the
    /// circuit's bound; probability below 2^−100 for honest signatures).
    #[error("the challenge of validator {0} needs more than 136 bytes of SHAKE256")]
    ChallengeTooLong(usize),
}

/// Everything the prover knows: the validator set, the signatures (signer index, signature) in
/// increasing signer order, and μ.
#[derive(Clone, Debug)]
pub struct RollupWitness {
    shape: Shape,
    validators: Vec<Validator>,
    signatures: Vec<(usize, DecodedSignature)>,
    digest: [u8; 32],
}

impl RollupWitness {
    /// Checks the witness natively before any constraint is built (a Groth16 prover does not
    /// check satisfiability, so an unchecked witness would give an invalid proof): counts,
    /// signer order, every signature against FIPS 204, the quorum. Errors: [`RollupError`].
    pub fn new(
        shape: Shape,
        validators: Vec<Validator>,
        signatures: Vec<(usize, DecodedSignature)>,
        digest: [u8; 32],
    ) -> Result<Self, RollupError> {
        if validators.len() != shape.validators {
            return Err(RollupError::ValidatorCount {
                got: validators.len(),
                expected: shape.validators,
            });
        }
        if signatures.len() != shape.slots {
            return Err(RollupError::SignatureCount {
                got: signatures.len(),
                expected: shape.slots,
            });
        }
        let increasing = signatures.windows(2).all(|w| match w {
            [(a, _), (b, _)] => a < b,
            _ => true,
        });
        if !increasing || signatures.iter().any(|(i, _)| *i >= validators.len()) {
            return Err(RollupError::SignerOrder);
        }
        let mut signed = 0u128;
        for (index, sig) in &signatures {
            let validator = validators.get(*index).ok_or(RollupError::SignerOrder)?;
            check_signature(&shape.params, validator, *index, &digest, sig)?;
            signed += u128::from(validator.stake);
        }
        let total = total_stake(&validators);
        if !is_quorum(signed, total) {
            return Err(RollupError::NoQuorum { signed, total });
        }
        Ok(RollupWitness {
            shape,
            validators,
            signatures,
            digest,
        })
    }

    /// The same witness without the native checks of [`RollupWitness::new`]: only for testing
    /// that the circuit itself rejects a bad witness (a Groth16 proof made from an unsatisfied
    /// witness does not verify).
    pub fn new_unchecked(
        shape: Shape,
        validators: Vec<Validator>,
        signatures: Vec<(usize, DecodedSignature)>,
        digest: [u8; 32],
    ) -> Self {
        RollupWitness {
            shape,
            validators,
            signatures,
            digest,
        }
    }

    /// The public statement this witness proves.
    pub fn statement(&self) -> Statement {
        Statement {
            digest: self.digest,
            h_x: commitment(&self.validators),
        }
    }
}

/// Checks `sig` by validator number `index` on `digest` as the circuit will: FIPS 204
/// ML-DSA.Verify (§6.3, context [`ROLLUP_CONTEXT`], with the committed Â) and the circuit's
/// SampleInBall bound. Errors: [`RollupError::BadSignature`], [`RollupError::ChallengeTooLong`]
/// (both carry `index`).
pub fn check_signature(
    params: &Params,
    validator: &Validator,
    index: usize,
    digest: &[u8; 32],
    sig: &DecodedSignature,
) -> Result<(), RollupError> {
    let t = trace(params, &validator.key, digest, ROLLUP_CONTEXT, sig)
        .map_err(|_| RollupError::BadSignature(index))?;
    if !t.accepts(sig) {
        return Err(RollupError::BadSignature(index));
    }
    if !challenge_fits(params, &sig.c_tilde) {
        return Err(RollupError::ChallengeTooLong(index));
    }
    Ok(())
}

/// The signatures a witness for `shape` uses out of `signatures` (distinct signer indices
/// below `validators.len()`, any order; `T` is the signature or anything standing for it): the τ signers with the most stake (ties go to the
/// lower index), so a quorum is found whenever some τ of the signers hold one; returned in
/// increasing signer order, as [`RollupWitness::new`] wants. Fewer than τ are all returned.
pub fn choose_signers<T>(
    shape: &Shape,
    validators: &[Validator],
    mut signatures: Vec<(usize, T)>,
) -> Vec<(usize, T)> {
    let stake = |i: usize| validators.get(i).map_or(0, |v| v.stake);
    signatures.sort_by_key(|(i, _)| (std::cmp::Reverse(stake(*i)), *i));
    signatures.truncate(shape.slots);
    signatures.sort_by_key(|(i, _)| *i);
    signatures
}

/// The sum of the validators' stakes.
pub fn total_stake(validators: &[Validator]) -> u128 {
    validators.iter().map(|v| u128::from(v.stake)).sum()
}

/// The quorum rule of docs/architecture.md §2: `signed` is more than 2/3 of `total`.
pub fn is_quorum(signed: u128, total: u128) -> bool {
    signed.saturating_mul(3) > total.saturating_mul(2)
}

/// Whether SampleInBall(c̃) completes within the 128 candidate bytes the circuit reads.
fn challenge_fits(params: &Params, c_tilde: &[u8]) -> bool {
    use sha3::digest::{ExtendableOutput, Update, XofReader};
    let mut h = sha3::Shake256::default();
    h.update(c_tilde);
    let mut stream = [0u8; 136];
    h.finalize_xof().read(&mut stream);
    let mut i = N - params.tau;
    for &b in stream.iter().skip(8) {
        if i == N {
            break;
        }
        if usize::from(b) <= i {
            i += 1;
        }
    }
    i == N
}

/// The key's field elements: Â (row-major) then NTT(t1·2^d), 11 coefficients per element
/// (coefficient k of a group at bit 23k), then tr's 512 bits, 253 per element.
fn packed_key(key: &ExpandedKey) -> Vec<Fr> {
    let coefficients: Vec<u32> = key
        .a_hat
        .iter()
        .chain(&key.t1_hat)
        .flatten()
        .copied()
        .collect();
    let mut out: Vec<Fr> = coefficients
        .chunks(COEFFICIENTS_PER_ELEMENT)
        .map(|group| {
            group
                .iter()
                .rev()
                .fold(Fr::ZERO, |acc, &c| acc * Fr::from(1u64 << 23) + Fr::from(c))
        })
        .collect();
    let bits: Vec<bool> = key
        .tr
        .iter()
        .flat_map(|b| (0..8).map(move |j| (b >> j) & 1 == 1))
        .collect();
    out.extend(bits.chunks(BITS_PER_ELEMENT).map(|group| {
        group
            .iter()
            .rev()
            .fold(Fr::ZERO, |acc, &b| acc.double() + Fr::from(u64::from(b)))
    }));
    out
}

/// L = Poseidon(packed key): the digest of one validator's expanded key.
pub fn key_digest(key: &ExpandedKey) -> Fr {
    hash(&packed_key(key))
}

/// h_x = Poseidon(L_0, S_0, …, L_{n−1}, S_{n−1}) over the validators in order.
pub fn commitment(validators: &[Validator]) -> Fr {
    let elements: Vec<Fr> = validators
        .iter()
        .flat_map(|v| [key_digest(&v.key), Fr::from(v.stake)])
        .collect();
    hash(&elements)
}

/// The rollup circuit of one [`Shape`]; without a witness it serves the Groth16 setup.
#[derive(Clone, Debug)]
pub struct RollupCircuit {
    shape: Shape,
    witness: Option<RollupWitness>,
    statement: Option<Statement>,
}

impl RollupCircuit {
    /// The circuit for key generation: the shape only.
    pub fn for_setup(shape: Shape) -> Self {
        RollupCircuit {
            shape,
            witness: None,
            statement: None,
        }
    }

    /// The circuit for proving `witness`'s own statement.
    pub fn for_proof(witness: RollupWitness) -> Self {
        let statement = witness.statement();
        Self::for_statement(witness, statement)
    }

    /// The circuit for proving `statement` with `witness`: its constraints are satisfied only
    /// if `statement` is the one `witness` proves (same μ, same h_x).
    pub fn for_statement(witness: RollupWitness, statement: Statement) -> Self {
        RollupCircuit {
            shape: witness.shape,
            witness: Some(witness),
            statement: Some(statement),
        }
    }
}

impl ConstraintSynthesizer<Fr> for RollupCircuit {
    fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        let shape = self.shape;
        if shape.slots == 0 || shape.slots > shape.validators || shape.validators >= 1 << 14 {
            return Err(SynthesisError::Unsatisfiable);
        }
        let params = shape.params;
        let w = self.witness.as_ref();
        let inputs = self.statement.map(|s| s.public_inputs());
        let input = |k: usize| {
            FpVar::new_input(cs.clone(), || {
                inputs
                    .and_then(|i| i.get(k).copied())
                    .ok_or(SynthesisError::AssignmentMissing)
            })
        };
        let (mu_hi, mu_lo, h_x) = (input(0)?, input(1)?, input(2)?);

        // μ's bits, tied to the two public halves (big-endian bytes, LSB-first bits).
        let message = witness_bytes(&cs, 32, w.map(|w| w.digest.to_vec()))?;
        let (hi_bits, lo_bits) = message.split_at(128);
        for (half, public) in [(hi_bits, &mu_hi), (lo_bits, &mu_lo)] {
            let big_endian: Vec<Boolean<Fr>> = half.chunks(8).rev().flatten().cloned().collect();
            from_bits(&cs, &big_endian)?.enforce_equal(public)?;
        }

        // The validator set: digests and stakes, opened against h_x.
        let mut leaves = Vec::with_capacity(shape.validators);
        let mut stakes = Vec::with_capacity(shape.validators);
        for i in 0..shape.validators {
            let v = w.and_then(|w| w.validators.get(i));
            leaves.push(FpVar::new_witness(cs.clone(), || {
                v.map(|v| key_digest(&v.key))
                    .ok_or(SynthesisError::AssignmentMissing)
            })?);
            let stake = FpVar::new_witness(cs.clone(), || {
                v.map(|v| Fr::from(v.stake))
                    .ok_or(SynthesisError::AssignmentMissing)
            })?;
            to_bits(&cs, &stake, STAKE_BITS)?;
            stakes.push(stake);
        }
        let set: Vec<FpVar<Fr>> = leaves
            .iter()
            .zip(&stakes)
            .flat_map(|(l, s)| [l.clone(), s.clone()])
            .collect();
        hash_gadget(cs.clone(), &set)?.enforce_equal(&h_x)?;

        // The slots.
        let index_bits = bit_length(shape.validators as u64);
        let mut previous: Option<FpVar<Fr>> = None;
        let mut signed_stake = Vec::with_capacity(shape.slots);
        for t in 0..shape.slots {
            let slot = w.and_then(|w| w.signatures.get(t));
            let signer = slot.map(|(i, _)| *i);
            let onehot = (0..shape.validators)
                .map(|i| {
                    Boolean::new_witness(cs.clone(), || {
                        signer
                            .map(|s| s == i)
                            .ok_or(SynthesisError::AssignmentMissing)
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            let e: Vec<FpVar<Fr>> = onehot.iter().map(from_boolean).collect();
            linear_combination(&cs, e.iter().map(|x| (Fr::ONE, x)))?
                .enforce_equal(&FpVar::Constant(Fr::ONE))?;
            let index = linear_combination(
                &cs,
                e.iter()
                    .enumerate()
                    .map(|(i, x)| (Fr::from(i as u64), x))
                    .collect::<Vec<_>>(),
            )?;
            if let Some(prev) = previous {
                let gap = linear_combination(
                    &cs,
                    [
                        (Fr::ONE, &index),
                        (-Fr::ONE, &prev),
                        (-Fr::ONE, &FpVar::Constant(Fr::ONE)),
                    ],
                )?;
                to_bits(&cs, &gap, index_bits)?;
            }
            previous = Some(index);
            let mut leaf = FpVar::Constant(Fr::ZERO);
            let mut stake = FpVar::Constant(Fr::ZERO);
            for ((ei, li), si) in e.iter().zip(&leaves).zip(&stakes) {
                leaf += ei * li;
                stake += ei * si;
            }
            signed_stake.push(stake);

            let key_witness = w
                .zip(signer)
                .and_then(|(w, s)| w.validators.get(s))
                .map(|v| &v.key);
            let key = KeyVars::new_witness(&cs, &params, key_witness)?;
            key_digest_gadget(&cs, &key)?.enforce_equal(&leaf)?;
            let sig = SignatureVars::new_witness(&cs, &params, slot.map(|(_, s)| s))?;
            enforce_verify(&cs, &params, &key, &message, ROLLUP_CONTEXT, &sig)?;
        }

        // 3·signed − 2·total − 1 ≥ 0 (S_i < 2^64 and n < 2^14 keep both sides below 2^80).
        let mut terms: Vec<(Fr, &FpVar<Fr>)> =
            signed_stake.iter().map(|s| (Fr::from(3u64), s)).collect();
        terms.extend(stakes.iter().map(|s| (-Fr::from(2u64), s)));
        let minus_one = FpVar::Constant(-Fr::ONE);
        terms.push((Fr::ONE, &minus_one));
        let margin = linear_combination(&cs, terms)?;
        to_bits(&cs, &margin, 80)?;
        Ok(())
    }
}

/// In-circuit [`key_digest`], with every coefficient of the key range-checked to 23 bits.
fn key_digest_gadget(
    cs: &ConstraintSystemRef<Fr>,
    key: &KeyVars,
) -> Result<FpVar<Fr>, SynthesisError> {
    let coefficients: Vec<&FpVar<Fr>> = key.a_hat.iter().chain(&key.t1_hat).flatten().collect();
    let mut packed = Vec::new();
    for group in coefficients.chunks(COEFFICIENTS_PER_ELEMENT) {
        let mut terms = Vec::with_capacity(group.len());
        let mut weight = Fr::ONE;
        for &c in group {
            to_bits(cs, c, 23)?;
            terms.push((weight, c));
            weight *= Fr::from(1u64 << 23);
        }
        packed.push(linear_combination(cs, terms)?);
    }
    for group in key.tr.chunks(BITS_PER_ELEMENT) {
        packed.push(from_bits(cs, group)?);
    }
    hash_gadget(cs.clone(), &packed)
}
