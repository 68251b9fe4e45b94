//! Small R1CS gadgets over the BLS12-381 scalar field shared by the rollup circuit: explicit
//! linear combinations, bit decompositions (range checks), and the lazy reduction mod the
//! ML-DSA modulus q.
//!
//! Costs: [`to_bits`] of b bits is b + 1 constraints (b booleanity checks and one sum);
//! [`reduce_mod_q`] is [`to_bits`] of the remainder (23 bits) and of the quotient plus one
//! equation and the 3-constraint check that the remainder is below q.

use ark_bls12_381::Fr;
use ark_ff::{AdditiveGroup, Field, PrimeField, Zero};
use ark_r1cs_std::alloc::AllocVar;
use ark_r1cs_std::boolean::Boolean;
use ark_r1cs_std::eq::EqGadget;
use ark_r1cs_std::fields::fp::{AllocatedFp, FpVar};
use ark_r1cs_std::GR1CSVar;
use ark_relations::gr1cs::{ConstraintSystemRef, LinearCombination, SynthesisError, Variable};

use super::native::Q;

/// The linear combination of `v` (a constant becomes a multiple of the constant variable).
pub fn lc(v: &FpVar<Fr>) -> LinearCombination<Fr> {
    match v {
        FpVar::Constant(c) => LinearCombination::from((*c, Variable::One)),
        FpVar::Var(a) => LinearCombination::from(a.variable),
    }
}

/// A field variable standing for the linear combination `lc` (no constraint), with its value
/// computed by the caller (`None` while generating keys).
pub fn from_lc(
    cs: &ConstraintSystemRef<Fr>,
    lc: LinearCombination<Fr>,
    value: Option<Fr>,
) -> Result<FpVar<Fr>, SynthesisError> {
    let variable = cs.new_lc(|| lc)?;
    Ok(FpVar::Var(AllocatedFp::new(value, variable, cs.clone())))
}

/// Σ coefficient·input as one variable (no constraint): the linear maps of the circuit (NTT,
/// packing) cost nothing. `terms` pairs a coefficient with an input.
pub fn linear_combination<'a>(
    cs: &ConstraintSystemRef<Fr>,
    terms: impl IntoIterator<Item = (Fr, &'a FpVar<Fr>)>,
) -> Result<FpVar<Fr>, SynthesisError> {
    let mut out = LinearCombination::zero();
    let mut value = Some(Fr::ZERO);
    for (coefficient, input) in terms {
        if coefficient.is_zero() {
            continue;
        }
        out = out + (coefficient, &lc(input));
        value = value
            .zip(input.value().ok())
            .map(|(acc, x)| acc + coefficient * x);
    }
    out.compactify();
    from_lc(cs, out, value)
}

/// A signed integer as a field element (−x as r − x).
pub fn signed(x: i64) -> Fr {
    if x < 0 {
        -Fr::from(x.unsigned_abs())
    } else {
        Fr::from(x as u64)
    }
}

/// The low 128 bits of `v`'s value (its canonical integer in [0, r)); `None` only without a
/// value (key generation). For an honest witness the values this is used on are below 2^128;
/// for any other the low bits make the range checks fail, so the system is unsatisfied rather
/// than the synthesis failing.
pub fn value_u128(v: &FpVar<Fr>) -> Option<u128> {
    let limbs = v.value().ok()?.into_bigint().0;
    let low = limbs.first().copied().unwrap_or(0);
    let high = limbs.get(1).copied().unwrap_or(0);
    Some(u128::from(high) << 64 | u128::from(low))
}

/// Enforces 0 ≤ x < 2^`bits` (`bits` ≤ 128) and returns the bits of x, least significant
/// first. Costs `bits` + 1 constraints. For a value out of range (a dishonest or wrong
/// witness) the returned bits are those of the low part and the circuit is unsatisfied.
pub fn to_bits(
    cs: &ConstraintSystemRef<Fr>,
    x: &FpVar<Fr>,
    bits: usize,
) -> Result<Vec<Boolean<Fr>>, SynthesisError> {
    let value = value_u128(x);
    let mut out = Vec::with_capacity(bits);
    let mut sum = LinearCombination::zero();
    let mut weight = Fr::ONE;
    for i in 0..bits {
        let bit = Boolean::new_witness(cs.clone(), || {
            value
                .map(|v| i < 128 && (v >> i) & 1 == 1)
                .ok_or(SynthesisError::AssignmentMissing)
        })?;
        sum = sum + (weight, &bit.lc());
        weight.double_in_place();
        out.push(bit);
    }
    cs.enforce_r1cs_constraint(|| sum, || Variable::One.into(), || lc(x))?;
    Ok(out)
}

/// The integer of little-endian `bits` as a field variable (no constraint).
pub fn from_bits(
    cs: &ConstraintSystemRef<Fr>,
    bits: &[Boolean<Fr>],
) -> Result<FpVar<Fr>, SynthesisError> {
    let mut sum = LinearCombination::zero();
    let mut weight = Fr::ONE;
    let mut value = Some(Fr::ZERO);
    for bit in bits {
        sum = sum + (weight, &bit.lc());
        value = value
            .zip(bit.value().ok())
            .map(|(acc, b)| if b { acc + weight } else { acc });
        weight.double_in_place();
    }
    from_lc(cs, sum, value)
}

/// A field variable that is 0 or 1 as the given Boolean (no constraint).
pub fn from_boolean(b: &Boolean<Fr>) -> FpVar<Fr> {
    FpVar::from(b.clone())
}

/// x mod q for an integer x = `w` + `offset` with 0 ≤ x < q·2^`quotient_bits`, where `offset`
/// is a multiple of q chosen by the caller so that x ≥ 0 for every value `w` can take (`w` is
/// the field image of a signed integer of magnitude at most `offset`). Returns r = x mod q and
/// its 23 bits. Costs 23 + `quotient_bits` + 5 constraints. The caller is responsible for the
/// bound on `w`; with q·2^`quotient_bits` below half the field modulus it makes the
/// decomposition unique.
pub fn reduce_mod_q(
    cs: &ConstraintSystemRef<Fr>,
    w: &FpVar<Fr>,
    offset: u128,
    quotient_bits: usize,
) -> Result<(FpVar<Fr>, Vec<Boolean<Fr>>), SynthesisError> {
    let x = linear_combination(
        cs,
        [(Fr::ONE, w), (Fr::from(offset), &FpVar::Constant(Fr::ONE))],
    )?;
    let value = value_u128(&x);
    let r = FpVar::new_witness(cs.clone(), || {
        value
            .map(|v| Fr::from((v % u128::from(Q)) as u64))
            .ok_or(SynthesisError::AssignmentMissing)
    })?;
    let k = FpVar::new_witness(cs.clone(), || {
        value
            .map(|v| Fr::from(v / u128::from(Q)))
            .ok_or(SynthesisError::AssignmentMissing)
    })?;
    let r_bits = to_bits(cs, &r, 23)?;
    to_bits(cs, &k, quotient_bits)?;
    // x = k·q + r.
    cs.enforce_r1cs_constraint(
        || lc(&k) * Fr::from(Q) + &lc(&r),
        || Variable::One.into(),
        || lc(&x),
    )?;
    enforce_below_q(cs, &r_bits)?;
    Ok((r, r_bits))
}

/// Enforces that the 23-bit integer `bits` is below q = 2^23 − 2^13 + 1: a value of 23 bits is
/// ≥ q exactly when bits 13..22 are all one and bits 0..12 are not all zero. 3 constraints.
fn enforce_below_q(
    cs: &ConstraintSystemRef<Fr>,
    bits: &[Boolean<Fr>],
) -> Result<(), SynthesisError> {
    let (low, high) = bits.split_at(13.min(bits.len()));
    let count = |bits: &[Boolean<Fr>]| -> Result<FpVar<Fr>, SynthesisError> {
        let ones: Vec<FpVar<Fr>> = bits.iter().map(from_boolean).collect();
        linear_combination(cs, ones.iter().map(|b| (Fr::ONE, b)))
    };
    let high_count = count(high)?;
    let low_count = count(low)?;
    let all_high = high_count.is_eq(&FpVar::Constant(Fr::from(high.len() as u64)))?;
    // all_high · low_count = 0.
    cs.enforce_r1cs_constraint(|| all_high.lc(), || lc(&low_count), LinearCombination::zero)
}

/// Bits needed for the integers 0..=`max`.
pub fn bit_length(max: u64) -> usize {
    (u64::BITS - max.leading_zeros()) as usize
}
