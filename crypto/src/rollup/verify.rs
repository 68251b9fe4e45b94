//! The in-circuit FIPS 204 ML-DSA verification (Algorithm 3 with Algorithm 8) of one signature
//! under one expanded public key: the gadget the rollup circuit instantiates once per signature
//! slot.
//!
//! What the gadget enforces, for the witnessed key (Â, NTT(t1·2^d), tr), message M (bits),
//! constant context ctx and witnessed signature (c̃, z, h):
//! 1. μ = SHAKE256(tr ‖ 0 ‖ |ctx| ‖ ctx ‖ M, 64) — in-circuit Keccak;
//! 2. c = SampleInBall(c̃) — SHAKE256(c̃) in-circuit, the rejection sampling of positions and the
//!    τ swaps simulated exactly (see [`sample_in_ball`]);
//! 3. ‖z‖∞ < γ1 − β (two range checks per coefficient) and the hint has at most ω ones;
//! 4. w'_Approx = NTT⁻¹(Â ∘ NTT(z) − NTT(c) ∘ NTT(t1·2^d)) computed **lazily**: NTT and NTT⁻¹ are
//!    dense linear maps with twiddles reduced mod q (centered), so they cost no constraint; the
//!    k·l + k pointwise products per slot cost one constraint each; each output coefficient is
//!    reduced mod q once ([`super::gadgets::reduce_mod_q`]). The integer bound that makes that
//!    single reduction sound is derived in [`WBound`] from ‖z‖∞ < γ1, c ∈ {−1, 0, 1}^256 and
//!    Â, t̂ ∈ [0, 2^23) — the last is a **precondition** on the key variables (the rollup circuit
//!    range-checks them when it opens the commitment h_x);
//! 5. w1' = UseHint(h, w'_Approx) (Algorithms 36 and 40) per coefficient;
//! 6. c̃ = SHAKE256(μ ‖ w1Encode(w1'), λ/4).
//!
//! ExpandA is not computed in-circuit: Â is part of the key the circuit is given (committed in
//! h_x), because every verifier can expand the epoch's keys natively once per epoch.

use std::sync::OnceLock;

use ark_bls12_381::Fr;
use ark_ff::{Field, PrimeField};
use ark_r1cs_std::alloc::AllocVar;
use ark_r1cs_std::boolean::Boolean;
use ark_r1cs_std::eq::EqGadget;
use ark_r1cs_std::fields::fp::FpVar;
use ark_r1cs_std::fields::FieldVar;
use ark_r1cs_std::GR1CSVar;
use ark_relations::gr1cs::{ConstraintSystemRef, SynthesisError};

use super::gadgets::{
    bit_length, from_bits, from_boolean, linear_combination, reduce_mod_q, signed, to_bits,
};
use super::keccak::{shake256, SHAKE256_RATE_BYTES};
use super::native::{DecodedSignature, ExpandedKey, Params, N, Q, ZETA};

/// The witnessed public key of one signature slot.
#[derive(Clone, Debug)]
pub struct KeyVars {
    /// Â\[r·l + s\]\[i\], NTT domain (precondition: values below 2^23).
    pub a_hat: Vec<Vec<FpVar<Fr>>>,
    /// NTT(t1\[r\]·2^d)\[i\] (precondition: values below 2^23).
    pub t1_hat: Vec<Vec<FpVar<Fr>>>,
    /// The 512 bits of tr.
    pub tr: Vec<Boolean<Fr>>,
}

impl KeyVars {
    /// Allocates `key` as witnesses (`None` while generating the proving key), without range
    /// checks (see the module docs).
    pub fn new_witness(
        cs: &ConstraintSystemRef<Fr>,
        params: &Params,
        key: Option<&ExpandedKey>,
    ) -> Result<Self, SynthesisError> {
        let entry = |polys: &[[u32; N]], p: usize, i: usize| {
            polys
                .get(p)
                .and_then(|poly| poly.get(i))
                .map(|&v| Fr::from(v))
        };
        let a_hat = witness_polys(cs, params.k * params.l, |p, i| {
            key.and_then(|k| entry(&k.a_hat, p, i))
        })?;
        let t1_hat = witness_polys(cs, params.k, |p, i| {
            key.and_then(|k| entry(&k.t1_hat, p, i))
        })?;
        let tr = witness_bytes(cs, 64, key.map(|k| k.tr.to_vec()))?;
        Ok(KeyVars { a_hat, t1_hat, tr })
    }
}

/// The witnessed signature of one slot.
#[derive(Clone, Debug)]
pub struct SignatureVars {
    /// The bits of c̃ (8·λ/4).
    pub c_tilde: Vec<Boolean<Fr>>,
    /// z\[s\]\[i\] as field elements of signed integers.
    pub z: Vec<Vec<FpVar<Fr>>>,
    /// h\[r\]\[i\].
    pub h: Vec<Vec<Boolean<Fr>>>,
}

impl SignatureVars {
    /// Allocates `sig` as witnesses (`None` while generating the proving key). The hint bits
    /// are Booleans (one booleanity constraint each); z is range-checked by [`enforce_verify`].
    pub fn new_witness(
        cs: &ConstraintSystemRef<Fr>,
        params: &Params,
        sig: Option<&DecodedSignature>,
    ) -> Result<Self, SynthesisError> {
        let c_tilde = witness_bytes(cs, params.c_tilde_bytes, sig.map(|s| s.c_tilde.clone()))?;
        let z = witness_polys(cs, params.l, |p, i| {
            sig.and_then(|g| g.z.get(p).and_then(|poly| poly.get(i)))
                .map(|&v| signed(i64::from(v)))
        })?;
        let h = witness_polys(cs, params.k, |p, i| {
            sig.and_then(|g| g.h.get(p).and_then(|poly| poly.get(i)))
                .copied()
        })?;
        Ok(SignatureVars { c_tilde, z, h })
    }
}

/// `rows` polynomials of 256 witnesses, entry (p, i) from `value` (`None` without a witness:
/// key generation).
fn witness_polys<T, V: AllocVar<T, Fr>>(
    cs: &ConstraintSystemRef<Fr>,
    rows: usize,
    value: impl Fn(usize, usize) -> Option<T>,
) -> Result<Vec<Vec<V>>, SynthesisError> {
    (0..rows)
        .map(|p| {
            (0..N)
                .map(|i| {
                    V::new_witness(cs.clone(), || {
                        value(p, i).ok_or(SynthesisError::AssignmentMissing)
                    })
                })
                .collect()
        })
        .collect()
}

/// Allocates `len` bytes as 8·`len` witness bits (byte i bit j at 8i + j).
pub fn witness_bytes(
    cs: &ConstraintSystemRef<Fr>,
    len: usize,
    bytes: Option<Vec<u8>>,
) -> Result<Vec<Boolean<Fr>>, SynthesisError> {
    (0..8 * len)
        .map(|at| {
            Boolean::new_witness(cs.clone(), || {
                bytes
                    .as_ref()
                    .and_then(|b| b.get(at / 8))
                    .map(|byte| (byte >> (at % 8)) & 1 == 1)
                    .ok_or(SynthesisError::AssignmentMissing)
            })
        })
        .collect()
}

/// Constant bits of `bytes` (byte i bit j at 8i + j).
fn constant_bits(bytes: &[u8]) -> Vec<Boolean<Fr>> {
    bytes
        .iter()
        .flat_map(|b| (0..8).map(move |j| Boolean::constant((b >> j) & 1 == 1)))
        .collect()
}

/// Enforces that `sig` is a valid FIPS 204 signature of `message` (bits, a whole number of
/// bytes) with context `ctx` (a constant of at most 255 bytes) under `key` (module docs for
/// what is enforced and the precondition on `key`). Errors: [`SynthesisError::Unsatisfiable`]
/// for a context longer than 255 bytes or a message that is not whole bytes; otherwise only
/// the constraint system's errors. An invalid signature makes the system unsatisfied, not an
/// error. Returns the constraints each step added ([`VerifyCost`]).
pub fn enforce_verify(
    cs: &ConstraintSystemRef<Fr>,
    params: &Params,
    key: &KeyVars,
    message: &[Boolean<Fr>],
    ctx: &[u8],
    sig: &SignatureVars,
) -> Result<VerifyCost, SynthesisError> {
    let ctx_len = u8::try_from(ctx.len()).map_err(|_| SynthesisError::Unsatisfiable)?;
    let mut cost = VerifyCost::default();
    let mut last = cs.num_constraints();
    let since = |last: &mut usize| {
        let now = cs.num_constraints();
        let added = now - *last;
        *last = now;
        added
    };

    // 1. μ = H(tr ‖ M', 64), M' = 0 ‖ |ctx| ‖ ctx ‖ M.
    let mut input = key.tr.clone();
    input.extend(constant_bits(&[0, ctx_len]));
    input.extend(constant_bits(ctx));
    input.extend_from_slice(message);
    let mu = shake256(&input, 64)?;
    cost.hash_mu = since(&mut last);

    // 2. c = SampleInBall(c̃).
    let c = sample_in_ball(cs, params, &sig.c_tilde)?;
    cost.sample_in_ball = since(&mut last);

    // 3. ‖z‖∞ < γ1 − β and at most ω hint bits.
    let bound = i64::from(params.gamma1 - params.beta) - 1;
    let z_bits = params.z_bits();
    for zi in sig.z.iter().flatten() {
        // y = z + bound ∈ [0, 2·bound] ⇔ y and 2·bound − y are both non-negative (z_bits bits).
        let y = linear_combination(
            cs,
            [(Fr::ONE, zi), (signed(bound), &FpVar::Constant(Fr::ONE))],
        )?;
        to_bits(cs, &y, z_bits)?;
        let rest = linear_combination(
            cs,
            [
                (-Fr::ONE, &y),
                (signed(2 * bound), &FpVar::Constant(Fr::ONE)),
            ],
        )?;
        to_bits(cs, &rest, z_bits)?;
    }
    let ones: Vec<FpVar<Fr>> = sig.h.iter().flatten().map(from_boolean).collect();
    let slack = linear_combination(
        cs,
        ones.iter()
            .map(|b| (-Fr::ONE, b))
            .chain([(Fr::from(params.omega as u64), &FpVar::Constant(Fr::ONE))]),
    )?;
    to_bits(cs, &slack, 8)?;
    cost.bounds = since(&mut last);

    // 4. w'_Approx, lazily, then one reduction per coefficient.
    let ntt = dense_ntt();
    let z_hat: Vec<Vec<FpVar<Fr>>> = sig
        .z
        .iter()
        .map(|z| apply(cs, &ntt.forward, z))
        .collect::<Result<_, _>>()?;
    let c_hat = apply(cs, &ntt.forward, &c)?;
    let bound = WBound::new(params);
    let mut w1_bits = Vec::with_capacity(params.k * N * params.w1_bits());
    for (r, (t1_hat, hints)) in key.t1_hat.iter().zip(&sig.h).enumerate() {
        let mut v = Vec::with_capacity(N);
        for i in 0..N {
            let mut terms = Vec::with_capacity(params.l + 1);
            for (s, zh) in z_hat.iter().enumerate() {
                let a = key
                    .a_hat
                    .get(r * params.l + s)
                    .and_then(|p| p.get(i))
                    .ok_or(SynthesisError::Unsatisfiable)?;
                let zi = zh.get(i).ok_or(SynthesisError::Unsatisfiable)?;
                terms.push((Fr::ONE, a * zi));
            }
            let ci = c_hat.get(i).ok_or(SynthesisError::Unsatisfiable)?;
            let ti = t1_hat.get(i).ok_or(SynthesisError::Unsatisfiable)?;
            terms.push((-Fr::ONE, ci * ti));
            v.push(linear_combination(cs, terms.iter().map(|(c, x)| (*c, x)))?);
        }
        let w = apply(cs, &ntt.inverse, &v)?;
        cost.products += since(&mut last);
        for (wi, h) in w.iter().zip(hints) {
            let (value, _) = reduce_mod_q(cs, wi, bound.offset, bound.quotient_bits)?;
            cost.reductions += since(&mut last);
            w1_bits.extend(use_hint(cs, params, &value, h)?);
            cost.use_hint += since(&mut last);
        }
    }

    // 6. c̃ = H(μ ‖ w1Encode(w1'), λ/4).
    let mut input = mu;
    input.extend(w1_bits);
    let c_tilde_prime = shake256(&input, params.c_tilde_bytes)?;
    for (a, b) in c_tilde_prime.iter().zip(&sig.c_tilde) {
        a.enforce_equal(b)?;
    }
    cost.hash_c_tilde = since(&mut last);
    Ok(cost)
}

/// Constraints added by each step of [`enforce_verify`] (module docs, steps 1–6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VerifyCost {
    /// Step 1: μ = SHAKE256(tr ‖ M').
    pub hash_mu: usize,
    /// Step 2: SampleInBall, its SHAKE256 included.
    pub sample_in_ball: usize,
    /// Step 3: ‖z‖∞ and the hint weight.
    pub bounds: usize,
    /// Step 4: the pointwise products (the NTTs are free).
    pub products: usize,
    /// Step 4: one reduction mod q per coefficient of w'_Approx.
    pub reductions: usize,
    /// Step 5: UseHint.
    pub use_hint: usize,
    /// Step 6: c̃' = SHAKE256(μ ‖ w1Encode(w1')) and its comparison with c̃.
    pub hash_c_tilde: usize,
}

impl VerifyCost {
    /// All constraints of the verification.
    pub fn total(&self) -> usize {
        self.hash_mu
            + self.sample_in_ball
            + self.bounds
            + self.products
            + self.reductions
            + self.use_hint
            + self.hash_c_tilde
    }
}

/// The bound behind the single reduction of w'_Approx (module docs, step 4): with twiddles
/// centered in [−(q−1)/2, (q−1)/2], |NTT(z)ᵢ| ≤ 256·(q−1)/2·γ1, |NTT(c)ᵢ| ≤ τ·(q−1)/2, so every
/// NTT-domain value v = Σ Â∘NTT(z) − NTT(c)∘t̂ with Â, t̂ < 2^23 has
/// |v| ≤ l·(2^23 − 1)·256·(q−1)/2·γ1 + (2^23 − 1)·τ·(q−1)/2, and every coefficient of NTT⁻¹(v) has |w| ≤ 256·(q−1)/2·|v|max. The offset
/// is the least multiple of q above that bound, and w + offset < 2·offset < q·2^quotient_bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WBound {
    /// A multiple of q with |w| ≤ offset.
    pub offset: u128,
    /// Bits of the quotient (w + offset) div q.
    pub quotient_bits: usize,
}

impl WBound {
    /// The bound for `params` (2^104.3 for ML-DSA-65, 2^100.3 for ML-DSA-44).
    pub fn new(params: &Params) -> Self {
        let half_q = u128::from((Q - 1) / 2);
        let q = u128::from(Q);
        let z_hat = 256 * half_q * u128::from(params.gamma1);
        let c_hat = params.tau as u128 * half_q;
        // Â and t̂ are below 2^23 (the circuit range-checks them; honest values are below q).
        let key = (1u128 << 23) - 1;
        let v = params.l as u128 * key * z_hat + key * c_hat;
        let w = 256 * half_q * v;
        let multiples = w.div_ceil(q);
        let offset = multiples * q;
        let quotient_bits = (u128::BITS - (2 * multiples).leading_zeros()) as usize;
        WBound {
            offset,
            quotient_bits,
        }
    }
}

/// The dense NTT matrices of FIPS 204 with entries centered mod q: forward\[i\]\[j\] =
/// ζ^((2·brv8(i)+1)·j), inverse\[j\]\[i\] = 256⁻¹·ζ^(−(2·brv8(i)+1)·j).
struct DenseNtt {
    forward: Vec<Vec<Fr>>,
    inverse: Vec<Vec<Fr>>,
}

fn dense_ntt() -> &'static DenseNtt {
    static MATRICES: OnceLock<DenseNtt> = OnceLock::new();
    MATRICES.get_or_init(|| {
        let q = u64::from(Q);
        let pow = |mut base: u64, mut e: u64| {
            let mut acc = 1u64;
            base %= q;
            while e > 0 {
                if e & 1 == 1 {
                    acc = acc * base % q;
                }
                base = base * base % q;
                e >>= 1;
            }
            acc
        };
        let centered = |v: u64| {
            if v > q / 2 {
                signed(v as i64 - q as i64)
            } else {
                Fr::from(v)
            }
        };
        let n_inv = pow(N as u64, q - 2);
        let zeta_inv = pow(u64::from(ZETA), q - 2);
        let exponent = |i: usize| 2 * u64::from((i as u8).reverse_bits()) + 1;
        let forward = (0..N)
            .map(|i| {
                let root = pow(u64::from(ZETA), exponent(i));
                (0..N).map(|j| centered(pow(root, j as u64))).collect()
            })
            .collect();
        let inverse = (0..N)
            .map(|j| {
                (0..N)
                    .map(|i| {
                        let root = pow(zeta_inv, exponent(i));
                        centered(n_inv * pow(root, j as u64) % q)
                    })
                    .collect()
            })
            .collect();
        DenseNtt { forward, inverse }
    })
}

/// Matrix · vector as linear combinations (no constraint).
fn apply(
    cs: &ConstraintSystemRef<Fr>,
    matrix: &[Vec<Fr>],
    x: &[FpVar<Fr>],
) -> Result<Vec<FpVar<Fr>>, SynthesisError> {
    matrix
        .iter()
        .map(|row| linear_combination(cs, row.iter().copied().zip(x)))
        .collect()
}

/// In-circuit SampleInBall (FIPS 204 Algorithm 29) of the bits of c̃: c as 256 field elements
/// in {−1, 0, 1}.
///
/// The stream is the first 136 bytes of SHAKE256(c̃) (one permutation): 8 sign bytes and 128
/// candidate bytes. The rejection sampling consumes candidates in order: at candidate p with
/// target index i_p (starting at 256 − τ), the candidate is accepted iff b_p ≤ i_p and
/// i_p ≤ 255, and i_{p+1} = i_p + accepted. All τ steps must complete within the 128
/// candidates (i_128 = 256); a signature needing more bytes is not provable (probability below
/// 2^−100 for τ ≥ 39: each candidate is accepted with probability ≥ 217/256 … ≥ (256 − τ + 1)/256).
/// The t-th accepted candidate is selected by a one-hot witness e_t over the 128 positions whose
/// rows sum to the acceptance bits and whose positions increase, so j_t = Σ_p e_t\[p\]·b_p. Then
/// step t (i = 256 − τ + t) performs c_i ← c_j, c_j ← (−1)^s_t with a one-hot f over 0..=i of
/// j_t: about 3·(i + 1) constraints.
pub fn sample_in_ball(
    cs: &ConstraintSystemRef<Fr>,
    params: &Params,
    c_tilde: &[Boolean<Fr>],
) -> Result<Vec<FpVar<Fr>>, SynthesisError> {
    const CANDIDATES: usize = SHAKE256_RATE_BYTES - 8;
    let tau = params.tau;
    let stream = shake256(c_tilde, SHAKE256_RATE_BYTES)?;
    let (sign_bits, candidate_bits) = stream.split_at(64);
    let bytes: Vec<FpVar<Fr>> = candidate_bits
        .chunks(8)
        .map(|b| from_bits(cs, b))
        .collect::<Result<_, _>>()?;

    // Acceptance bits.
    let mut index = FpVar::Constant(Fr::from((N - tau) as u64));
    let mut accepted = Vec::with_capacity(CANDIDATES);
    for b in &bytes {
        // u = i − b + 256 ∈ [1, 512]; b ≤ i ⇔ u ≥ 256 ⇔ bit 8 or bit 9 of u is set.
        let u = linear_combination(
            cs,
            [
                (Fr::ONE, &index),
                (-Fr::ONE, b),
                (Fr::from(256u64), &FpVar::Constant(Fr::ONE)),
            ],
        )?;
        let u_bits = to_bits(cs, &u, 10)?;
        let at_least = linear_combination(
            cs,
            u_bits
                .iter()
                .skip(8)
                .map(from_boolean)
                .collect::<Vec<_>>()
                .iter()
                .map(|x| (Fr::ONE, x)),
        )?;
        let done = index.is_eq(&FpVar::Constant(Fr::from(N as u64)))?;
        let accept = at_least * from_boolean(&!done);
        index += &accept;
        accepted.push(accept);
    }
    index.enforce_equal(&FpVar::Constant(Fr::from(N as u64)))?;

    // One-hot selection of the t-th accepted candidate.
    let accepted_values: Vec<bool> = accepted
        .iter()
        .map(|a| a.value().map(|v| v == Fr::ONE))
        .collect::<Result<_, _>>()
        .unwrap_or_default();
    let mut selections: Vec<Vec<Boolean<Fr>>> = Vec::with_capacity(tau);
    for t in 0..tau {
        let position = accepted_values
            .iter()
            .enumerate()
            .filter(|(_, a)| **a)
            .nth(t)
            .map(|(p, _)| p);
        let row = (0..CANDIDATES)
            .map(|p| {
                Boolean::new_witness(cs.clone(), || {
                    if accepted_values.is_empty() {
                        Err(SynthesisError::AssignmentMissing)
                    } else {
                        Ok(position == Some(p))
                    }
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let ones: Vec<FpVar<Fr>> = row.iter().map(from_boolean).collect();
        linear_combination(cs, ones.iter().map(|x| (Fr::ONE, x)))?
            .enforce_equal(&FpVar::Constant(Fr::ONE))?;
        selections.push(row);
    }
    for (p, a) in accepted.iter().enumerate() {
        let column: Vec<FpVar<Fr>> = selections
            .iter()
            .filter_map(|row| row.get(p))
            .map(from_boolean)
            .collect();
        linear_combination(cs, column.iter().map(|x| (Fr::ONE, x)))?.enforce_equal(a)?;
    }
    let positions: Vec<FpVar<Fr>> = selections
        .iter()
        .map(|row| {
            let ones: Vec<FpVar<Fr>> = row.iter().map(from_boolean).collect();
            linear_combination(
                cs,
                ones.iter()
                    .enumerate()
                    .map(|(p, x)| (Fr::from(p as u64), x))
                    .collect::<Vec<_>>(),
            )
        })
        .collect::<Result<_, _>>()?;
    for pair in positions.windows(2) {
        if let [earlier, later] = pair {
            // later − earlier − 1 ∈ [0, 128).
            let gap = linear_combination(
                cs,
                [
                    (Fr::ONE, later),
                    (-Fr::ONE, earlier),
                    (-Fr::ONE, &FpVar::Constant(Fr::ONE)),
                ],
            )?;
            to_bits(cs, &gap, 7)?;
        }
    }

    // The swaps.
    let mut c: Vec<FpVar<Fr>> = vec![FpVar::zero(); N];
    for (t, row) in selections.iter().enumerate() {
        let i = N - tau + t;
        let mut j = FpVar::zero();
        for (e, b) in row.iter().zip(&bytes) {
            j += from_boolean(e) * b;
        }
        let j_value = j.value().ok().and_then(|v| {
            let bytes = v.into_bigint().0;
            bytes.first().map(|&low| low as usize)
        });
        let onehot = (0..=i)
            .map(|m| {
                Boolean::new_witness(cs.clone(), || {
                    j_value
                        .map(|j| j == m)
                        .ok_or(SynthesisError::AssignmentMissing)
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let f: Vec<FpVar<Fr>> = onehot.iter().map(from_boolean).collect();
        linear_combination(cs, f.iter().map(|x| (Fr::ONE, x)))?
            .enforce_equal(&FpVar::Constant(Fr::ONE))?;
        linear_combination(
            cs,
            f.iter()
                .enumerate()
                .map(|(m, x)| (Fr::from(m as u64), x))
                .collect::<Vec<_>>(),
        )?
        .enforce_equal(&j)?;
        let sign_bit = sign_bits.get(t).ok_or(SynthesisError::Unsatisfiable)?;
        // s = 1 − 2·bit.
        let sign = FpVar::one() - from_boolean(sign_bit).double()?;
        // c_i ← c_j.
        let mut moved = FpVar::zero();
        for (fm, cm) in f.iter().zip(&c) {
            if !cm.is_constant() {
                moved += fm * cm;
            }
        }
        if let Some(slot) = c.get_mut(i) {
            *slot = moved;
        }
        // c_j ← s.
        for (fm, cm) in f.iter().zip(c.iter_mut()) {
            let delta = &sign - &*cm;
            *cm = &*cm + fm * &delta;
        }
    }
    Ok(c)
}

/// UseHint (FIPS 204 Algorithms 36 and 40) of the reduced coefficient `r` ∈ [0, q) (with its
/// bits) and hint bit `h`: the w1Encode bits of w1' (4 for ML-DSA-65, 6 for ML-DSA-44).
///
/// r = r1·2γ2 + r' with r' ∈ [0, 2γ2); g = [r' > γ2] makes r0 = r' − 2γ2·g ∈ (−γ2, γ2] and
/// r1 + g the high bits, except r1 + g = m (only for r ≥ q − 1 − γ2), where Decompose gives 0
/// (and r0 − 1 ≤ 0). r0 > 0 exactly when g = 0 and r' ≠ 0. w1' = (base ± h) mod m with
/// base = (r1 + g) mod m.
pub fn use_hint(
    cs: &ConstraintSystemRef<Fr>,
    params: &Params,
    r: &FpVar<Fr>,
    h: &Boolean<Fr>,
) -> Result<Vec<Boolean<Fr>>, SynthesisError> {
    let two_gamma2 = u64::from(2 * params.gamma2);
    let gamma2 = u64::from(params.gamma2);
    let m = u64::from(params.w1_values());
    let r_value = r
        .value()
        .ok()
        .and_then(|v| v.into_bigint().0.first().copied());
    let one = FpVar::Constant(Fr::ONE);
    let r1 = FpVar::new_witness(cs.clone(), || {
        r_value
            .map(|v| Fr::from(v / two_gamma2))
            .ok_or(SynthesisError::AssignmentMissing)
    })?;
    let rem = FpVar::new_witness(cs.clone(), || {
        r_value
            .map(|v| Fr::from(v % two_gamma2))
            .ok_or(SynthesisError::AssignmentMissing)
    })?;
    let high_bits = bit_length(m);
    let rem_bits = bit_length(two_gamma2 - 1);
    to_bits(cs, &r1, high_bits)?;
    to_bits(cs, &rem, rem_bits)?;
    // rem < 2γ2.
    let rest = linear_combination(cs, [(-Fr::ONE, &rem), (Fr::from(two_gamma2 - 1), &one)])?;
    to_bits(cs, &rest, rem_bits)?;
    // r = r1·2γ2 + rem.
    linear_combination(cs, [(Fr::from(two_gamma2), &r1), (Fr::ONE, &rem)])?.enforce_equal(r)?;

    // g = [rem > γ2]: d = g·(rem − γ2 − 1) + (1 − g)·(γ2 − rem) ≥ 0.
    let g = Boolean::new_witness(cs.clone(), || {
        r_value
            .map(|v| v % two_gamma2 > gamma2)
            .ok_or(SynthesisError::AssignmentMissing)
    })?;
    let g_fp = from_boolean(&g);
    let slope = linear_combination(
        cs,
        [(Fr::from(2u64), &rem), (-Fr::from(2 * gamma2 + 1), &one)],
    )?;
    let d = linear_combination(
        cs,
        [
            (Fr::from(gamma2), &one),
            (-Fr::ONE, &rem),
            (Fr::ONE, &(&g_fp * &slope)),
        ],
    )?;
    to_bits(cs, &d, rem_bits)?;

    let high = &r1 + &g_fp;
    let wraps = high.is_eq(&FpVar::Constant(Fr::from(m)))?;
    let base = &high - from_boolean(&wraps) * Fr::from(m);
    let nonzero = rem.is_neq(&FpVar::zero())?;
    let positive = !&g & &nonzero;
    // t = base + h·(2·positive − 1) ∈ [−1, m].
    let h_and_positive = h & &positive;
    let t = &base + from_boolean(&h_and_positive).double()? - from_boolean(h);
    // w1 = t mod m: t = w1 + m·wrap with wrap ∈ {−1, 0, 1}, w1 ∈ [0, m).
    let w1_value = t.value().ok().map(|v| {
        if v == -Fr::ONE {
            m - 1
        } else {
            v.into_bigint().0.first().copied().unwrap_or(0) % m
        }
    });
    let w1_bit_count = params.w1_bits();
    let w1 = FpVar::new_witness(cs.clone(), || {
        w1_value
            .map(Fr::from)
            .ok_or(SynthesisError::AssignmentMissing)
    })?;
    let w1_bits = to_bits(cs, &w1, w1_bit_count)?;
    if m != 1 << w1_bit_count {
        let rest = linear_combination(cs, [(-Fr::ONE, &w1), (Fr::from(m - 1), &one)])?;
        to_bits(cs, &rest, w1_bit_count)?;
    }
    let m_inv = Fr::from(m).inverse().ok_or(SynthesisError::Unsatisfiable)?;
    let wrap = linear_combination(cs, [(m_inv, &t), (-m_inv, &w1)])?;
    let square = &wrap * &wrap;
    (&square * &wrap).enforce_equal(&wrap)?;
    Ok(w1_bits)
}
