//! The acceleration seam (docs/architecture.md §1, §7): batched polynomial arithmetic behind one trait.
//!
//! [`BatchArithmetic`] is what the `gpu` crate's dispatcher and accelerator backends implement;
//! [`CpuBackend`] is the always-present implementation and the reference for differential tests.
//! A batch is a dense row-major buffer of `u64` values: row r holds one polynomial (one caller's
//! request) at `rows[r·n .. (r+1)·n]`, n = [`NttClass::degree`]. Rows are independent: a row with
//! a value ≥ q fails alone (its own error, its values left as they were) while the other rows
//! are computed exactly as an isolated call would compute them.
//!
//! # Workload classes and extension
//!
//! A batch is homogeneous: one [`NttClass`] (modulus, degree, transform convention) per call;
//! moduli are never mixed in one call. The classes are Corona's ring, ML-DSA's ring and ML-KEM's
//! (q = 3329) in its negacyclic and cyclic forms. A new class is a new variant of the
//! `#[non_exhaustive]` enum, so callers outside this crate keep compiling. A backend without a kernel for a workload answers
//! [`AccelError::Unsupported`] and the dispatcher falls back to [`CpuBackend`].
//!
//! The Groth16 prover's workloads ([`crate::rollup::prover`]) are two more methods:
//! [`BatchArithmetic::scalar_ntt`] (radix-2 NTTs over the BLS12-381 scalar field F_r, the QAP
//! witness map) and [`BatchArithmetic::msm_g1`] / [`BatchArithmetic::msm_g2`] (multi-scalar
//! multiplications over the proving key's G1 and G2 queries). Their default bodies answer
//! `Unsupported`, so a backend that only has ring kernels keeps compiling; new operations will
//! follow the same rule.
//!
//! # Exactness
//!
//! Every backend must return bit-for-bit what [`CpuBackend`] returns: canonical residues in
//! [0, q), NTT images in the class's slot order (for [`NttClass::Corona`], the bit-reversed order
//! of [`crate::corona::ring`], ψ = [`crate::corona::ring::PSI`]; for [`NttClass::MlDsa`], the
//! order of FIPS 204 Algorithm 41, ŵ\[i\] = w(ζ^(2·brv8(i)+1)), ζ = 1753; for the ML-KEM
//! classes, the orders of [`crate::mlkem`]). For [`BatchArithmetic::scalar_ntt`]
//! the convention is stated on [`ScalarTransform`]; an MSM result is a group element, so every
//! correct algorithm returns the same point.
//!
//! # The CPU backend
//!
//! Corona's transforms are this crate's ([`crate::corona::ring`]), ML-DSA's are Pulsar's
//! ([`crate::pulsar::ring`], checked against FIPS 204's reference NTT), ML-KEM's are
//! [`crate::mlkem`]'s (FIPS 203 Algorithms 9–11, checked against schoolbook products). The F_r NTT and the MSMs are
//! arkworks' (`ark-poly`'s radix-2 domain, `ark-ec`'s Pippenger MSM, both rayon-parallel): the
//! fastest maintained CPU code for BLS12-381 we know of, and the baseline an accelerator backend
//! is measured against.

use ark_bls12_381::{Fr, G1Affine, G1Projective, G2Affine, G2Projective};
use ark_ec::{CurveGroup, VariableBaseMSM};
use ark_ff::FftField;
use ark_poly::{EvaluationDomain, Radix2EvaluationDomain};
use rayon::prelude::*;

use crate::corona::params;
use crate::corona::ring::{forward_in_place, inverse_in_place, pointwise_in_place};
use crate::mlkem;
use crate::pulsar::ring as mldsa_ring;

/// base^exp mod `modulus` (any modulus below 2^64), for twiddle tables at compile time or at
/// start; square-and-multiply through 128-bit products, not constant time (public values
/// only).
pub const fn pow_mod(base: u64, mut exp: u64, modulus: u64) -> u64 {
    let m = modulus as u128;
    let (mut acc, mut b) = (1 % m, base as u128 % m);
    while exp > 0 {
        if exp & 1 == 1 {
            acc = acc * b % m;
        }
        b = b * b % m;
        exp >>= 1;
    }
    acc as u64
}

/// A ring whose NTT a backend computes: modulus, degree and transform convention.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NttClass {
    /// Corona's R_q = Z_q\[X\]/(X^256 + 1), q = 2^48 + 18945: the negacyclic NTT of
    /// [`crate::corona::ring`] (bit-reversed output, scaling by 256^{-1} in the inverse).
    Corona,
    /// ML-DSA's R_q = Z_q\[X\]/(X^256 + 1), q = 8380417 = 2^23 − 2^13 + 1: the NTT of FIPS 204
    /// Algorithms 41–42 (ζ = 1753, bit-reversed slot order, 256^{-1} scaling in the inverse).
    MlDsa,
    /// ML-KEM's R_q = Z_q\[X\]/(X^256 + 1), q = 3329: FIPS 203's incomplete seven-layer NTT
    /// (Algorithms 9–10, ζ = 17, 128 degree-one slots); the NTT-domain product is
    /// `MultiplyNTTs` (Algorithm 11), not coefficient-wise ([`crate::mlkem`]).
    MlKem,
    /// The cyclic ring Z_q\[X\]/(X^256 − 1), q = 3329: the complete eight-layer NTT with
    /// ζ = 17 of [`crate::mlkem::cyclic_ntt`], coefficient-wise products, 256^{-1} scaling.
    MlKemCyclic,
}

impl NttClass {
    /// Every class, in a fixed order (for tests, benchmarks and metrics).
    pub const ALL: [NttClass; 4] = [
        NttClass::Corona,
        NttClass::MlDsa,
        NttClass::MlKem,
        NttClass::MlKemCyclic,
    ];

    /// The modulus q of the class.
    pub const fn modulus(self) -> u64 {
        match self {
            NttClass::Corona => params::Q,
            NttClass::MlDsa => mldsa_ring::Q as u64,
            NttClass::MlKem | NttClass::MlKemCyclic => mlkem::Q,
        }
    }

    /// The ring degree n: the length of one row.
    pub const fn degree(self) -> usize {
        match self {
            NttClass::Corona => params::DEGREE,
            NttClass::MlDsa => crate::rollup::native::N,
            NttClass::MlKem | NttClass::MlKemCyclic => mlkem::N,
        }
    }

    /// A short stable name for logs and metric labels (`"corona"`, `"mldsa"`, `"mlkem"`,
    /// `"mlkem-cyclic"`).
    pub const fn name(self) -> &'static str {
        match self {
            NttClass::Corona => "corona",
            NttClass::MlDsa => "mldsa",
            NttClass::MlKem => "mlkem",
            NttClass::MlKemCyclic => "mlkem-cyclic",
        }
    }
}

/// A kind of work a backend may have a kernel for (what [`AccelError::Unsupported`] names).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Workload {
    /// NTTs and pointwise products in a ring ([`BatchArithmetic::forward_ntt`] and friends).
    Ntt(NttClass),
    /// Radix-2 NTTs over the BLS12-381 scalar field ([`BatchArithmetic::scalar_ntt`]).
    ScalarNtt,
    /// Multi-scalar multiplication over BLS12-381 G1 ([`BatchArithmetic::msm_g1`]).
    MsmG1,
    /// Multi-scalar multiplication over BLS12-381 G2 ([`BatchArithmetic::msm_g2`]).
    MsmG2,
}

/// Which transform [`BatchArithmetic::scalar_ntt`] applies to each row of N values of F_r
/// (N a power of two, 1 ≤ N ≤ 2^32, the two-adicity of r − 1).
///
/// ω_N is the N-th root of unity `FftField::get_root_of_unity(N)` of `ark-ff` (the field's
/// 2^32-th root 0x16a2a19e…, raised to 2^(32 − log₂ N)); g is the coset shift
/// `FftField::GENERATOR` = 7. Inputs and outputs are in natural order. These are the
/// conventions of `ark-poly`'s `Radix2EvaluationDomain` and its coset `get_coset(g)`, which
/// the Groth16 proving keys of `ark-groth16` assume.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScalarTransform {
    /// Coefficients c → evaluations: out_i = Σ_j c_j·ω_N^{ij}.
    Forward,
    /// Evaluations → coefficients: the inverse of `Forward` (includes the N^{-1} scaling).
    Inverse,
    /// Coefficients → evaluations on the coset g·⟨ω_N⟩: out_i = Σ_j c_j·(g·ω_N^i)^j.
    CosetForward,
    /// Evaluations on the coset → coefficients: the inverse of `CosetForward`.
    CosetInverse,
}

/// One multi-scalar multiplication: Σ_i scalars_i · bases_i. The two slices must have equal
/// lengths; an empty request is the identity.
#[derive(Debug, Clone, Copy)]
pub struct MsmRequest<'a, A> {
    /// The points (affine; the identity is allowed).
    pub bases: &'a [A],
    /// One scalar per point.
    pub scalars: &'a [Fr],
}

/// One outcome per MSM request, in request order.
pub type MsmResults<G> = Vec<Result<G, AccelError>>;

/// Why a batched call, or one row of it, failed. Every variant is a property of the request;
/// none is fatal. A whole-call error means nothing was computed and no buffer was changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AccelError {
    /// Whole call: the backend has no kernel for this workload (the caller falls back to the
    /// CPU).
    #[error("backend {backend} does not support {workload:?}")]
    Unsupported {
        /// [`BatchArithmetic::name`] of the backend.
        backend: &'static str,
        /// The workload that was asked for.
        workload: Workload,
    },
    /// Whole call: a buffer's length is not a multiple of the degree, or two operand buffers
    /// differ in length.
    #[error(
        "batch shape: {len} values are not whole rows of {degree}, or differ from the second \
         operand's {other_len} (the buffer's own length when there is none)"
    )]
    Shape {
        /// Length of the (first) buffer, in `u64` values.
        len: usize,
        /// Required row length.
        degree: usize,
        /// Length of the second operand buffer (equal to `len` when there is only one).
        other_len: usize,
    },
    /// One row: a value is not a canonical residue (≥ q). That row is left unchanged.
    #[error("row {row}: value {index} is {value}, not below q = {modulus}")]
    CoefficientOutOfRange {
        /// Row index in the batch.
        row: usize,
        /// Position within the row.
        index: usize,
        /// The offending value.
        value: u64,
        /// The class's modulus.
        modulus: u64,
    },

    /// Whole call: a row of a [`BatchArithmetic::scalar_ntt`] batch has a length that is not a
    /// power of two in [1, 2^32], or not row 0's length.
    #[error(
        "scalar ntt row {row} has {len} values: rows must share one power-of-two length ≤ 2^32"
    )]
    ScalarShape {
        /// Row index in the batch.
        row: usize,
        /// Its length.
        len: usize,
    },
    /// Whole call: the device failed at `stage` (a driver, memory or launch error, logged by
    /// the backend with the driver's message). Nothing was written to the caller's buffers.
    #[error("backend {backend}: device error during {stage}")]
    Device {
        /// [`BatchArithmetic::name`] of the backend.
        backend: &'static str,
        /// What the backend was doing: `"upload"`, `"launch"`, `"download"`.
        stage: &'static str,
    },
    /// One MSM request: its bases and scalars differ in length. That request has no result.
    #[error("msm request {request}: {bases} bases but {scalars} scalars")]
    MsmLength {
        /// Request index in the batch.
        request: usize,
        /// Number of bases.
        bases: usize,
        /// Number of scalars.
        scalars: usize,
    },
}

/// One outcome per row of a batch, in row order.
pub type RowResults = Vec<Result<(), AccelError>>;

/// Batched ring arithmetic over dense row-major batches (module docs give the layout).
///
/// Every method returns `Err` for a malformed call (nothing computed), otherwise one
/// [`Result`] per row. Methods take `&self` and the trait is object safe, so a dispatcher can
/// hold `Arc<dyn BatchArithmetic>` and call it from many threads.
pub trait BatchArithmetic: Send + Sync {
    /// A short stable name for logs and metrics (`"cpu"`, `"cpu-simd"`, `"cuda"`).
    fn name(&self) -> &'static str;

    /// Forward NTT of every row in place: coefficients in [0, q) in, NTT image in [0, q) out.
    /// Errors: [`AccelError::Unsupported`], [`AccelError::Shape`] for the call;
    /// [`AccelError::CoefficientOutOfRange`] for a row.
    fn forward_ntt(&self, class: NttClass, rows: &mut [u64]) -> Result<RowResults, AccelError>;

    /// Inverse NTT of every row in place (scaled as the class's inverse is: by 256^{-1}, or
    /// 128^{-1} for [`NttClass::MlKem`]'s seven layers): NTT image in, coefficients out.
    /// Errors as for [`BatchArithmetic::forward_ntt`].
    fn inverse_ntt(&self, class: NttClass, rows: &mut [u64]) -> Result<RowResults, AccelError>;

    /// Pointwise product of NTT images in place: row r of `lhs` becomes `lhs_r ∘ rhs_r` mod q
    /// (the NTT image of the product in the ring; for [`NttClass::MlKem`], whose slots are
    /// degree-one polynomials, FIPS 203's `MultiplyNTTs`). `lhs` and `rhs` have equal lengths. Errors as
    /// for [`BatchArithmetic::forward_ntt`]; a value ≥ q in either operand fails that row.
    fn pointwise_mul(
        &self,
        class: NttClass,
        lhs: &mut [u64],
        rhs: &[u64],
    ) -> Result<RowResults, AccelError>;

    /// How many rows of `class` the backend's kernels process as one unit (none of today's
    /// backends has such a unit; a kernel whose block held several rows would): a dispatcher pads each stacked batch with zero rows to a multiple
    /// of it and discards their results. 1 (the default) means no padding.
    fn row_granularity(&self, class: NttClass) -> usize {
        let _ = class;
        1
    }

    /// `op` on a batch: [`BatchArithmetic::forward_ntt`], [`BatchArithmetic::inverse_ntt`], or
    /// [`BatchArithmetic::pointwise_mul`] with `rhs` (ignored by the transforms). Errors: the
    /// method's.
    fn ring(
        &self,
        class: NttClass,
        op: RingOp,
        rows: &mut [u64],
        rhs: &[u64],
    ) -> Result<RowResults, AccelError> {
        match op {
            RingOp::Forward => self.forward_ntt(class, rows),
            RingOp::Inverse => self.inverse_ntt(class, rows),
            RingOp::Pointwise => self.pointwise_mul(class, rows, rhs),
        }
    }

    /// The [`ScalarTransform`] of every row in place. All rows have one length N, a power of two
    /// in [1, 2^32]; F_r values are always canonical, so there are no per-row errors. Errors
    /// (whole call, nothing changed): [`AccelError::ScalarShape`] for the first row whose
    /// length is not a power of two in range or differs from row 0's;
    /// [`AccelError::Unsupported`] (the default).
    fn scalar_ntt(
        &self,
        transform: ScalarTransform,
        rows: &mut [Vec<Fr>],
    ) -> Result<(), AccelError> {
        let _ = (transform, rows);
        Err(AccelError::Unsupported {
            backend: self.name(),
            workload: Workload::ScalarNtt,
        })
    }

    /// Every request's Σ scalars_i · bases_i over G1, in request order; a request whose slices
    /// differ in length fails alone with [`AccelError::MsmLength`]. Whole-call error:
    /// [`AccelError::Unsupported`] (the default).
    fn msm_g1(
        &self,
        requests: &[MsmRequest<'_, G1Affine>],
    ) -> Result<MsmResults<G1Projective>, AccelError> {
        let _ = requests;
        Err(AccelError::Unsupported {
            backend: self.name(),
            workload: Workload::MsmG1,
        })
    }

    /// As [`BatchArithmetic::msm_g1`], over G2.
    fn msm_g2(
        &self,
        requests: &[MsmRequest<'_, G2Affine>],
    ) -> Result<MsmResults<G2Projective>, AccelError> {
        let _ = requests;
        Err(AccelError::Unsupported {
            backend: self.name(),
            workload: Workload::MsmG2,
        })
    }
}

/// The CPU backend: the ring modules' transforms, one row after another on the calling thread,
/// or across rayon's pool from [`PARALLEL_ROWS`] rows on.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuBackend;

/// Checks a batch's shape for `class`: `len` (and the second operand's `other_len`, equal to
/// `len` when there is none) a multiple of [`NttClass::degree`], the two equal. Errors:
/// [`AccelError::Shape`].
pub fn check_shape(class: NttClass, len: usize, other_len: usize) -> Result<(), AccelError> {
    let degree = class.degree();
    if !len.is_multiple_of(degree) || len != other_len {
        return Err(AccelError::Shape {
            len,
            degree,
            other_len,
        });
    }
    Ok(())
}

/// Whether every value is below the class's modulus q: a branch-free scan of adds and ors,
/// which compilers vectorize without 64-bit compares. With 2^k the least power of two ≥ q
/// (k < 64), v < q exactly when v and v + (2^k − q) are both below 2^k.
#[inline]
pub fn all_canonical(class: NttClass, values: &[u64]) -> bool {
    let modulus = class.modulus();
    let bits = u64::BITS - (modulus - 1).leading_zeros();
    let offset = (1u64 << bits) - modulus;
    let any_high_bit = values
        .iter()
        .fold(0, |acc, &v| acc | v | v.wrapping_add(offset));
    any_high_bit >> bits == 0
}

/// The row error for the first value ≥ q among `values` (row `row` of a `class` batch), if
/// any: [`AccelError::CoefficientOutOfRange`].
pub fn check_row(class: NttClass, row: usize, values: &[u64]) -> Result<(), AccelError> {
    // The common case first.
    if all_canonical(class, values) {
        return Ok(());
    }
    let modulus = class.modulus();
    match values
        .iter()
        .copied()
        .enumerate()
        .find(|&(_, value)| value >= modulus)
    {
        Some((index, value)) => Err(AccelError::CoefficientOutOfRange {
            row,
            index,
            value,
            modulus,
        }),
        None => Ok(()),
    }
}

/// The whole-call check of `op` on a `class` batch: [`check_shape`] of `rows` (and of `rhs`
/// for [`RingOp::Pointwise`], which is ignored otherwise). Errors: [`AccelError::Shape`].
pub fn check_call(
    class: NttClass,
    op: RingOp,
    rows: &[u64],
    rhs: &[u64],
) -> Result<(), AccelError> {
    let other = if op == RingOp::Pointwise { rhs } else { rows };
    check_shape(class, rows.len(), other.len())
}

/// The per-row checks of `op` on a `class` batch whose shape passed [`check_call`]: for each
/// row, [`check_row`] on it (and on its `rhs` row for [`RingOp::Pointwise`]).
pub fn row_results(class: NttClass, op: RingOp, rows: &[u64], rhs: &[u64]) -> RowResults {
    let degree = class.degree();
    rows.chunks_exact(degree)
        .enumerate()
        .map(|(r, row)| {
            check_row(class, r, row)?;
            match rhs.get(r * degree..(r + 1) * degree) {
                Some(other) if op == RingOp::Pointwise => check_row(class, r, other),
                _ => Ok(()),
            }
        })
        .collect()
}

/// A ring operation of [`BatchArithmetic`] on one row (or a pair of rows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RingOp {
    /// [`BatchArithmetic::forward_ntt`].
    Forward,
    /// [`BatchArithmetic::inverse_ntt`].
    Inverse,
    /// [`BatchArithmetic::pointwise_mul`].
    Pointwise,
}

impl RingOp {
    /// A short stable name for logs and metric labels.
    pub const fn name(self) -> &'static str {
        match self {
            RingOp::Forward => "ntt",
            RingOp::Inverse => "intt",
            RingOp::Pointwise => "pointwise",
        }
    }
}

/// ML-DSA's row transform on a `[i32; 256]` copy of a row of canonical residues.
fn mldsa_row(row: &mut [u64], transform: fn(&mut mldsa_ring::Poly)) {
    let mut poly = [0i32; crate::rollup::native::N];
    for (p, &v) in poly.iter_mut().zip(row.iter()) {
        // Canonical: v < q < 2^23 (checked by the caller).
        *p = v as i32;
    }
    transform(&mut poly);
    for (v, &p) in row.iter_mut().zip(poly.iter()) {
        *v = p as u64;
    }
}

/// One row of `op` with the scalar reference kernels: `row` (and `rhs` for
/// [`RingOp::Pointwise`]) are canonical rows of `class` (checked by the caller; a row of another
/// length is left unchanged).
pub fn reference_row(class: NttClass, op: RingOp, row: &mut [u64], rhs: &[u64]) {
    match class {
        NttClass::Corona => {
            let Ok(a) = <&mut [u64; params::DEGREE]>::try_from(row) else {
                return;
            };
            match op {
                RingOp::Forward => forward_in_place(a),
                RingOp::Inverse => inverse_in_place(a),
                RingOp::Pointwise => {
                    if let Ok(b) = <&[u64; params::DEGREE]>::try_from(rhs) {
                        pointwise_in_place(a, b);
                    }
                }
            }
        }
        NttClass::MlDsa => match op {
            RingOp::Forward => mldsa_row(row, mldsa_ring::ntt),
            RingOp::Inverse => mldsa_row(row, mldsa_ring::intt),
            RingOp::Pointwise => {
                let q = class.modulus();
                for (x, &y) in row.iter_mut().zip(rhs) {
                    *x = *x * y % q;
                }
            }
        },
        NttClass::MlKem | NttClass::MlKemCyclic => {
            let Ok(a) = <&mut [u64; mlkem::N]>::try_from(row) else {
                return;
            };
            let cyclic = class == NttClass::MlKemCyclic;
            match op {
                RingOp::Forward if cyclic => mlkem::cyclic_ntt(a),
                RingOp::Forward => mlkem::ntt(a),
                RingOp::Inverse if cyclic => mlkem::cyclic_intt(a),
                RingOp::Inverse => mlkem::intt(a),
                RingOp::Pointwise => {
                    if let Ok(b) = <&[u64; mlkem::N]>::try_from(rhs) {
                        if cyclic {
                            mlkem::pointwise(a, b);
                        } else {
                            mlkem::multiply_ntts(a, b);
                        }
                    }
                }
            }
        }
    }
}

/// Batches of at least this many rows are spread over rayon's pool, a row per task; smaller
/// ones run on the calling thread (a row costs 1–2 µs, about what handing it to a pool costs).
pub const PARALLEL_ROWS: usize = 32;

/// `op` on every row of a `class` batch with `kernel` (for [`RingOp::Pointwise`], `rhs` is the
/// second operand; otherwise it is ignored): the shape check for the call, the range check for
/// each row (a failing row is left unchanged), then `kernel(row, rhs_row)` on each valid row,
/// rows in parallel from [`PARALLEL_ROWS`] rows on. Errors: [`AccelError::Shape`].
pub fn apply_rows(
    class: NttClass,
    op: RingOp,
    rows: &mut [u64],
    rhs: &[u64],
    kernel: impl Fn(&mut [u64], &[u64]) + Sync,
) -> Result<RowResults, AccelError> {
    let degree = class.degree();
    check_call(class, op, rows, rhs)?;
    let results = row_results(class, op, rows, rhs);
    let one_row = |(r, row): (usize, &mut [u64])| {
        if results.get(r).is_some_and(Result::is_ok) {
            let other = match op {
                RingOp::Pointwise => rhs.get(r * degree..(r + 1) * degree).unwrap_or_default(),
                _ => &[],
            };
            kernel(row, other);
        }
    };
    if rows.len() >= PARALLEL_ROWS * degree {
        rows.par_chunks_exact_mut(degree)
            .enumerate()
            .for_each(one_row);
    } else {
        rows.chunks_exact_mut(degree).enumerate().for_each(one_row);
    }
    Ok(results)
}

impl BatchArithmetic for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn forward_ntt(&self, class: NttClass, rows: &mut [u64]) -> Result<RowResults, AccelError> {
        apply_rows(class, RingOp::Forward, rows, &[], |row, _| {
            reference_row(class, RingOp::Forward, row, &[])
        })
    }

    fn inverse_ntt(&self, class: NttClass, rows: &mut [u64]) -> Result<RowResults, AccelError> {
        apply_rows(class, RingOp::Inverse, rows, &[], |row, _| {
            reference_row(class, RingOp::Inverse, row, &[])
        })
    }

    fn pointwise_mul(
        &self,
        class: NttClass,
        lhs: &mut [u64],
        rhs: &[u64],
    ) -> Result<RowResults, AccelError> {
        apply_rows(class, RingOp::Pointwise, lhs, rhs, |row, other| {
            reference_row(class, RingOp::Pointwise, row, other)
        })
    }

    fn scalar_ntt(
        &self,
        transform: ScalarTransform,
        rows: &mut [Vec<Fr>],
    ) -> Result<(), AccelError> {
        let Some(row_len) = check_scalar_rows(rows)? else {
            return Ok(());
        };
        let mut domain =
            Radix2EvaluationDomain::<Fr>::new(row_len).ok_or(AccelError::ScalarShape {
                row: 0,
                len: row_len,
            })?;
        if matches!(
            transform,
            ScalarTransform::CosetForward | ScalarTransform::CosetInverse
        ) {
            domain = domain
                .get_coset(Fr::GENERATOR)
                .ok_or(AccelError::ScalarShape {
                    row: 0,
                    len: row_len,
                })?;
        }
        for row in rows {
            match transform {
                ScalarTransform::Forward | ScalarTransform::CosetForward => {
                    domain.fft_in_place(row)
                }
                ScalarTransform::Inverse | ScalarTransform::CosetInverse => {
                    domain.ifft_in_place(row)
                }
            }
        }
        Ok(())
    }

    fn msm_g1(
        &self,
        requests: &[MsmRequest<'_, G1Affine>],
    ) -> Result<MsmResults<G1Projective>, AccelError> {
        Ok(requests
            .iter()
            .enumerate()
            .map(|(i, r)| msm(i, r))
            .collect())
    }

    fn msm_g2(
        &self,
        requests: &[MsmRequest<'_, G2Affine>],
    ) -> Result<MsmResults<G2Projective>, AccelError> {
        Ok(requests
            .iter()
            .enumerate()
            .map(|(i, r)| msm(i, r))
            .collect())
    }
}

/// The common row length of a [`BatchArithmetic::scalar_ntt`] batch (`None` for no rows), or
/// the first row that breaks the shape rule.
pub fn check_scalar_rows(rows: &[Vec<Fr>]) -> Result<Option<usize>, AccelError> {
    let Some(first) = rows.first() else {
        return Ok(None);
    };
    let row_len = first.len();
    for (row, values) in rows.iter().enumerate() {
        let len = values.len();
        if len != row_len || !len.is_power_of_two() || len.trailing_zeros() > Fr::TWO_ADICITY {
            return Err(AccelError::ScalarShape { row, len });
        }
    }
    Ok(Some(row_len))
}

/// One request on arkworks' Pippenger MSM (rayon-parallel).
fn msm<G: CurveGroup<ScalarField = Fr> + VariableBaseMSM>(
    index: usize,
    request: &MsmRequest<'_, G::Affine>,
) -> Result<G, AccelError> {
    let length_error = AccelError::MsmLength {
        request: index,
        bases: request.bases.len(),
        scalars: request.scalars.len(),
    };
    if request.bases.len() != request.scalars.len() {
        return Err(length_error);
    }
    G::msm(request.bases, request.scalars).map_err(|_| length_error)
}
