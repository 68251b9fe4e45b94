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
//! **Proving.** [`prove`] synthesizes the circuit for a checked [`RollupWitness`] and runs
//! [`create_proof`], our Groth16 prover, whose heavy work goes through the batched-arithmetic
//! trait of docs/architecture.md §1 ([`BatchArithmetic`]), so the GPU adapter can take it over:
//!
//! 1. **Synthesis** (CPU, `ark-relations`): the R1CS matrices A, B, C (m constraints) and the
//!    full assignment z = (1, public inputs, witness).
//! 2. **QAP witness map** (Groth 2016 §3.1, in libsnark's form): over the radix-2 domain H of
//!    size N ≥ m + ℓ (ℓ = number of instance variables) the rows (Az)_i, (Bz)_i, (Cz)_i, plus
//!    a_{m+i} = z_i for the instance variables (the constraints that make the input
//!    polynomials independent), are interpolated ([`ScalarTransform::Inverse`], one batch of
//!    three rows), evaluated on the coset gH ([`ScalarTransform::CosetForward`]), combined
//!    pointwise into h = (a·b − c)/Z_H(g) (Z_H(X) = X^N − 1 is constant on gH), and
//!    interpolated back ([`ScalarTransform::CosetInverse`]).
//! 3. **MSMs** (Groth 2016 §3.2): one batch of four G1 MSMs (h over the h-query, the witness
//!    over the L-query, z over the A- and B-queries) and one G2 MSM (z over the B-query), then
//!    A = α + Σ z_i·A_i + r·δ, B = β + Σ z_i·B_i + s·δ, C = s·A + r·B_G1 − r·s·δ + L + H.
//!
//! This is the algorithm of `ark-groth16`'s `create_proof_with_reduction` with
//! `LibsnarkReduction` step for step, so for the same r, s both return the same proof (a test
//! holds us to it) and our proofs verify under keys that `ark-groth16` generated. One
//! difference: the constraint system is dropped once the matrices and assignment are out, so
//! it does not sit in memory during the FFTs and MSMs.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use ark_bls12_381::{Bls12_381, Fr, G1Projective, G2Projective};
use ark_ec::{AffineRepr, CurveGroup};
use ark_ff::{FftField, Field, UniformRand, Zero};
use ark_groth16::r1cs_to_qap::evaluate_constraint;
use ark_groth16::Groth16;
use ark_relations::gr1cs::{
    ConstraintSynthesizer, ConstraintSystem, Matrix, OptimizationGoal, SynthesisError,
    SynthesisMode, R1CS_PREDICATE_LABEL,
};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_snark::SNARK;
use rand::{CryptoRng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use sha3::{Digest, Sha3_256};
use thiserror::Error;

use crate::accel::{AccelError, BatchArithmetic, MsmRequest, ScalarTransform};

use super::circuit::{RollupCircuit, RollupWitness, Shape, Statement};
use super::native::{Params, ML_DSA_44, ML_DSA_65};

/// A Groth16 proving key over BLS12-381.
pub type ProvingKey = ark_groth16::ProvingKey<Bls12_381>;
/// A Groth16 verifying key over BLS12-381.
pub type VerifyingKey = ark_groth16::VerifyingKey<Bls12_381>;
/// A Groth16 proof over BLS12-381 (A, C in G1, B in G2).
pub type Proof = ark_groth16::Proof<Bls12_381>;

/// Why keys or a proof could not be made, stored or loaded.
#[derive(Debug, Error)]
pub enum ProverError {
    /// Constraint synthesis or the Groth16 algorithm failed.
    #[error("groth16: {0}")]
    Groth16(#[from] ark_relations::gr1cs::SynthesisError),
    /// Reading or writing a key file failed.
    #[error("proving key file: {0}")]
    Io(#[from] std::io::Error),
    /// A proving key file is not one this code wrote, or is damaged.
    #[error("proving key file: {0}")]
    Format(String),
    /// The arithmetic backend refused or failed a batch (e.g. it has no kernel for it).
    #[error("arithmetic backend: {0}")]
    Accel(#[from] AccelError),
    /// The proving key does not fit the circuit (wrong shape or a damaged key).
    #[error("proving key does not match the circuit: {0}")]
    KeyMismatch(&'static str),
}

/// First bytes of a proving key file.
const PROVING_KEY_MAGIC: &[u8; 20] = b"QUASAR-ROLLUP-PK-v1\n";

/// Writes `pk` for `shape`: the 20-byte magic, the parameter set (1 byte: 44 or 65), n and τ
/// (u32 little-endian each), then the key in arkworks' uncompressed encoding, then SHA3-256 of
/// everything before it (32 bytes). Uncompressed because loading then needs no square roots
/// (a proving key has millions of points). Errors: [`ProverError::Io`],
/// [`ProverError::Format`] for a parameter set other than ML-DSA-44/65.
pub fn write_proving_key<W: Write>(
    shape: &Shape,
    pk: &ProvingKey,
    writer: W,
) -> Result<(), ProverError> {
    let mut out = HashingWriter {
        inner: writer,
        hash: Sha3_256::new(),
    };
    out.write_all(PROVING_KEY_MAGIC)?;
    out.write_all(&[parameter_set_id(&shape.params)?])?;
    for count in [shape.validators, shape.slots] {
        let count =
            u32::try_from(count).map_err(|_| ProverError::Format("shape too large".into()))?;
        out.write_all(&count.to_le_bytes())?;
    }
    pk.serialize_uncompressed(&mut out)
        .map_err(|e| ProverError::Format(e.to_string()))?;
    let digest = out.hash.finalize();
    out.inner.write_all(&digest)?;
    out.inner.flush()?;
    Ok(())
}

/// Reads a file written by [`write_proving_key`]: its shape and key. The points are not
/// subgroup-checked (the checksum covers the file, and a wrong key only yields proofs that do
/// not verify). Errors: [`ProverError::Io`]; [`ProverError::Format`] for a wrong magic, an
/// unknown parameter set, a body that does not decode, trailing bytes or a checksum mismatch.
pub fn read_proving_key<R: Read>(reader: R) -> Result<(Shape, ProvingKey), ProverError> {
    let mut input = HashingReader {
        inner: reader,
        hash: Sha3_256::new(),
    };
    let shape = read_header(&mut input)?;
    let pk = ProvingKey::deserialize_uncompressed_unchecked(&mut input)
        .map_err(|e| ProverError::Format(format!("key does not decode: {e}")))?;
    let expected = input.hash.finalize();
    let mut stored = [0u8; 32];
    input
        .inner
        .read_exact(&mut stored)
        .map_err(|_| ProverError::Format("checksum missing".into()))?;
    if stored[..] != expected[..] {
        return Err(ProverError::Format(
            "checksum mismatch (damaged file)".into(),
        ));
    }
    let mut extra = [0u8; 1];
    if input.inner.read(&mut extra)? != 0 {
        return Err(ProverError::Format("trailing bytes".into()));
    }
    Ok((shape, pk))
}

/// The shape in the header of a proving key file, without reading the key (which takes
/// seconds and gigabytes), so a caller can check its inputs first. Errors as
/// [`read_proving_key`] for the header.
pub fn read_proving_key_shape<R: Read>(mut reader: R) -> Result<Shape, ProverError> {
    read_header(&mut reader)
}

/// Reads and checks the 29-byte header: magic, parameter set, n, τ.
fn read_header<R: Read>(input: &mut R) -> Result<Shape, ProverError> {
    let mut header = [0u8; 29];
    input
        .read_exact(&mut header)
        .map_err(|_| ProverError::Format("shorter than its header".into()))?;
    let (magic, rest) = header.split_at(20);
    if magic != PROVING_KEY_MAGIC {
        return Err(ProverError::Format(
            "not a Quasar rollup proving key".into(),
        ));
    }
    let (set, counts) = rest.split_at(1);
    let params = match set {
        [44] => ML_DSA_44,
        [65] => ML_DSA_65,
        _ => return Err(ProverError::Format("unknown ML-DSA parameter set".into())),
    };
    let count = |bytes: &[u8]| -> Result<usize, ProverError> {
        let array: [u8; 4] = bytes
            .try_into()
            .map_err(|_| ProverError::Format("header".into()))?;
        Ok(u32::from_le_bytes(array) as usize)
    };
    let (n, t) = counts.split_at(4);
    Ok(Shape {
        params,
        validators: count(n)?,
        slots: count(t)?,
    })
}

/// The one-byte id of a supported parameter set.
fn parameter_set_id(params: &Params) -> Result<u8, ProverError> {
    if *params == ML_DSA_44 {
        Ok(44)
    } else if *params == ML_DSA_65 {
        Ok(65)
    } else {
        Err(ProverError::Format(format!(
            "unsupported parameter set {}",
            params.name
        )))
    }
}

/// A writer that hashes what passes through.
struct HashingWriter<W> {
    inner: W,
    hash: Sha3_256,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(buf.get(..n).unwrap_or_default());
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A reader that hashes what passes through.
struct HashingReader<R> {
    inner: R,
    hash: Sha3_256,
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(buf.get(..n).unwrap_or_default());
        Ok(n)
    }
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
/// shape), with the statement and the time each phase took. `rng` draws the zero-knowledge
/// randomizers r, s (use a CSPRNG); `backend` runs the FFTs and MSMs. Errors: see
/// [`create_proof`].
pub fn prove<R: RngCore + CryptoRng>(
    pk: &ProvingKey,
    witness: RollupWitness,
    backend: &dyn BatchArithmetic,
    rng: &mut R,
) -> Result<(Proof, Statement, ProveTimings), ProverError> {
    let statement = witness.statement();
    let (proof, timings) =
        create_random_proof(pk, RollupCircuit::for_proof(witness), backend, rng)?;
    Ok((proof, statement, timings))
}

/// [`create_proof`] with the zero-knowledge randomizers r, s drawn from `rng` (use a CSPRNG).
pub fn create_random_proof<C: ConstraintSynthesizer<Fr>, R: RngCore + CryptoRng>(
    pk: &ProvingKey,
    circuit: C,
    backend: &dyn BatchArithmetic,
    rng: &mut R,
) -> Result<(Proof, ProveTimings), ProverError> {
    let r = Fr::rand(rng);
    let s = Fr::rand(rng);
    create_proof(pk, circuit, r, s, backend)
}

/// Wall-clock time of each phase of [`create_proof`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProveTimings {
    /// Constraint synthesis and matrix construction.
    pub synthesis: Duration,
    /// The QAP witness map (row evaluation and the F_r NTTs).
    pub witness_map: Duration,
    /// The G1 and G2 MSMs and the final combination.
    pub msm: Duration,
}

/// The Groth16 proof of `circuit` under `pk` with randomizers `r`, `s` (module docs give the
/// steps; Groth 2016 §3.2). Every FFT and MSM goes through `backend`. r = s = 0 gives the
/// deterministic, not zero-knowledge proof (tests only). Errors:
/// [`ProverError::Groth16`] when synthesis fails (e.g. a witness value is missing);
/// [`ProverError::Accel`] when the backend refuses a batch; [`ProverError::KeyMismatch`] when
/// `pk`'s queries do not have the lengths the circuit needs.
pub fn create_proof<C: ConstraintSynthesizer<Fr>>(
    pk: &ProvingKey,
    circuit: C,
    r: Fr,
    s: Fr,
    backend: &dyn BatchArithmetic,
) -> Result<(Proof, ProveTimings), ProverError> {
    let started = Instant::now();
    let cs = ConstraintSystem::new_ref();
    cs.set_optimization_goal(OptimizationGoal::Constraints);
    cs.set_mode(SynthesisMode::Prove {
        construct_matrices: true,
        generate_lc_assignments: false,
    });
    circuit.generate_constraints(cs.clone())?;
    cs.finalize();
    let mut matrices = cs.to_matrices()?;
    let matrices = matrices
        .remove(R1CS_PREDICATE_LABEL)
        .ok_or(SynthesisError::MissingCS)?;
    let num_instance = cs.num_instance_variables();
    let num_constraints = cs.num_constraints();
    let full_assignment = [cs.instance_assignment()?, cs.witness_assignment()?].concat();
    drop(cs);
    let synthesis = started.elapsed();

    let started = Instant::now();
    let h = witness_map(
        &matrices,
        num_instance,
        num_constraints,
        &full_assignment,
        backend,
    )?;
    drop(matrices);
    let witness_map = started.elapsed();

    let started = Instant::now();
    let proof = combine(pk, r, s, &h, num_instance, &full_assignment, backend)?;
    Ok((
        proof,
        ProveTimings {
            synthesis,
            witness_map,
            msm: started.elapsed(),
        },
    ))
}

/// The coefficients of h(X) = (A(X)·B(X) − C(X))/Z_H(X) (module docs, step 2), N values.
fn witness_map(
    matrices: &[Matrix<Fr>],
    num_instance: usize,
    num_constraints: usize,
    z: &[Fr],
    backend: &dyn BatchArithmetic,
) -> Result<Vec<Fr>, ProverError> {
    let [a_matrix, b_matrix, c_matrix] = matrices else {
        return Err(ProverError::KeyMismatch("R1CS must have three matrices"));
    };
    let rows_needed = num_constraints
        .checked_add(num_instance)
        .ok_or(ProverError::KeyMismatch("too many constraints"))?;
    let size = rows_needed
        .checked_next_power_of_two()
        .ok_or(ProverError::KeyMismatch("too many constraints"))?;
    if [a_matrix, b_matrix, c_matrix]
        .iter()
        .any(|m| m.len() != num_constraints)
        || z.len() < num_instance
    {
        return Err(ProverError::KeyMismatch("R1CS matrices of unequal height"));
    }
    let mut rows = vec![vec![Fr::zero(); size]; 3];
    for (row, matrix) in rows.iter_mut().zip([a_matrix, b_matrix, c_matrix]) {
        row.par_iter_mut()
            .zip(matrix.par_iter())
            .for_each(|(value, terms)| *value = evaluate_constraint(terms, z));
    }
    // The input constraints: a_{m+i} = z_i for the instance variables.
    let inputs = z.get(..num_instance);
    let slots = rows
        .first_mut()
        .and_then(|a| a.get_mut(num_constraints..rows_needed));
    if let (Some(slots), Some(inputs)) = (slots, inputs) {
        slots.copy_from_slice(inputs);
    }
    backend.scalar_ntt(ScalarTransform::Inverse, &mut rows)?;
    backend.scalar_ntt(ScalarTransform::CosetForward, &mut rows)?;
    let [mut h, b, c]: [Vec<Fr>; 3] = rows
        .try_into()
        .map_err(|_| ProverError::KeyMismatch("three rows"))?;
    // Z_H(g) = g^N − 1 is nonzero: g = 7 generates F_r^*, so g^N = 1 would need (r − 1) | N.
    let vanishing_inverse = (Fr::GENERATOR.pow([size as u64]) - Fr::ONE)
        .inverse()
        .ok_or(ProverError::KeyMismatch("domain"))?;
    h.par_iter_mut()
        .zip(b.par_iter().zip(c.par_iter()))
        .for_each(|(a, (b, c))| *a = (*a * b - c) * vanishing_inverse);
    drop((b, c));
    let mut h = vec![h];
    backend.scalar_ntt(ScalarTransform::CosetInverse, &mut h)?;
    h.pop().ok_or(ProverError::KeyMismatch("one row"))
}

/// The proof points from h and z (module docs, step 3).
fn combine(
    pk: &ProvingKey,
    r: Fr,
    s: Fr,
    h: &[Fr],
    num_instance: usize,
    z: &[Fr],
    backend: &dyn BatchArithmetic,
) -> Result<Proof, ProverError> {
    let mismatch = ProverError::KeyMismatch;
    let witness = z.get(num_instance..).ok_or(mismatch("assignment"))?;
    let variables = z.get(1..).ok_or(mismatch("assignment"))?;
    // deg h ≤ N − 2, so the h-query has N − 1 points; the last coefficient is zero.
    let h = h
        .get(..pk.h_query.len())
        .ok_or(mismatch("h-query longer than the domain"))?;
    let (a_one, a_query) = pk.a_query.split_first().ok_or(mismatch("empty A-query"))?;
    let (b1_one, b1_query) = pk
        .b_g1_query
        .split_first()
        .ok_or(mismatch("empty B-query"))?;
    let (b2_one, b2_query) = pk
        .b_g2_query
        .split_first()
        .ok_or(mismatch("empty B-query"))?;

    let g1 = backend.msm_g1(&[
        MsmRequest {
            bases: &pk.h_query,
            scalars: h,
        },
        MsmRequest {
            bases: &pk.l_query,
            scalars: witness,
        },
        MsmRequest {
            bases: a_query,
            scalars: variables,
        },
        MsmRequest {
            bases: b1_query,
            scalars: variables,
        },
    ])?;
    let g2 = backend.msm_g2(&[MsmRequest {
        bases: b2_query,
        scalars: variables,
    }])?;
    let [h_sum, l_sum, a_sum, b1_sum]: [G1Projective; 4] = g1
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?
        .try_into()
        .map_err(|_| mismatch("backend returned a wrong number of G1 results"))?;
    let [b2_sum]: [G2Projective; 1] = g2
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?
        .try_into()
        .map_err(|_| mismatch("backend returned a wrong number of G2 results"))?;

    let delta_g1 = pk.delta_g1.into_group();
    let a = pk.vk.alpha_g1.into_group() + a_one + a_sum + delta_g1 * r;
    let b_g1 = pk.beta_g1.into_group() + b1_one + b1_sum + delta_g1 * s;
    let b_g2 = pk.vk.beta_g2.into_group() + b2_one + b2_sum + pk.vk.delta_g2 * s;
    let c = a * s + b_g1 * r - delta_g1 * (r * s) + l_sum + h_sum;
    Ok(Proof {
        a: a.into_affine(),
        b: b_g2.into_affine(),
        c: c.into_affine(),
    })
}
