//! The acceleration seam (DESIGN.md §1, §7): batched polynomial arithmetic behind one trait.
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
//! A batch is homogeneous: one [`NttClass`] (modulus, degree, transform convention) per call.
//! Only Corona's ring exists today; ML-DSA (q = 8380417) and ML-KEM (q = 3329) will be new
//! variants of the `#[non_exhaustive]` enum, so callers outside this crate keep compiling. A
//! backend without a kernel for a class answers [`AccelError::Unsupported`] and the dispatcher
//! falls back to [`CpuBackend`]. New operations (MSM over BLS12-381 G1/G2, the scalar-field NTT)
//! will be new trait methods with default bodies returning `Unsupported`, so existing
//! implementations keep compiling too.
//!
//! # Exactness
//!
//! Every backend must return bit-for-bit what [`CpuBackend`] returns: canonical residues in
//! [0, q), NTT images in the class's slot order (for [`NttClass::Corona`], the bit-reversed order
//! of [`crate::corona::ring`], ψ = [`crate::corona::ring::PSI`]).

use crate::corona::params;
use crate::corona::ring::{
    first_out_of_range, forward_in_place, inverse_in_place, pointwise_in_place,
};

/// A ring whose NTT a backend computes: modulus, degree and transform convention.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NttClass {
    /// Corona's R_q = Z_q\[X\]/(X^256 + 1), q = 2^48 + 18945: the negacyclic NTT of
    /// [`crate::corona::ring`] (bit-reversed output, scaling by 256^{-1} in the inverse).
    Corona,
}

impl NttClass {
    /// The modulus q of the class.
    pub const fn modulus(self) -> u64 {
        match self {
            NttClass::Corona => params::Q,
        }
    }

    /// The ring degree n: the length of one row.
    pub const fn degree(self) -> usize {
        match self {
            NttClass::Corona => params::DEGREE,
        }
    }
}

/// Why a batched call, or one row of it, failed. Every variant is a property of the request;
/// none is fatal. A whole-call error means nothing was computed and no buffer was changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccelError {
    /// Whole call: the backend has no kernel for this class (the caller falls back to the CPU).
    #[error("backend {backend} does not support {class:?}")]
    Unsupported {
        /// [`BatchArithmetic::name`] of the backend.
        backend: &'static str,
        /// The class that was asked for.
        class: NttClass,
    },
    /// Whole call: a buffer's length is not a multiple of the degree, or two operand buffers
    /// differ in length.
    #[error(
        "batch shape: buffer of {len} values for rows of {degree} (other operand {other_len})"
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
}

/// One outcome per row of a batch, in row order.
pub type RowResults = Vec<Result<(), AccelError>>;

/// Batched ring arithmetic over dense row-major batches (module docs give the layout).
///
/// Every method returns `Err` for a malformed call (nothing computed), otherwise one
/// [`Result`] per row. Methods take `&self` and the trait is object safe, so a dispatcher can
/// hold `Arc<dyn BatchArithmetic>` and call it from many threads.
pub trait BatchArithmetic: Send + Sync {
    /// A short stable name for logs and metrics (`"cpu"`, `"cuda"`).
    fn name(&self) -> &'static str;

    /// Forward NTT of every row in place: coefficients in [0, q) in, NTT image in [0, q) out.
    /// Errors: [`AccelError::Unsupported`], [`AccelError::Shape`] for the call;
    /// [`AccelError::CoefficientOutOfRange`] for a row.
    fn forward_ntt(&self, class: NttClass, rows: &mut [u64]) -> Result<RowResults, AccelError>;

    /// Inverse NTT (scaled by n^{-1}) of every row in place: NTT image in, coefficients out.
    /// Errors as for [`BatchArithmetic::forward_ntt`].
    fn inverse_ntt(&self, class: NttClass, rows: &mut [u64]) -> Result<RowResults, AccelError>;

    /// Pointwise product of NTT images in place: row r of `lhs` becomes `lhs_r ∘ rhs_r` mod q
    /// (the NTT image of the product in the ring). `lhs` and `rhs` have equal lengths. Errors as
    /// for [`BatchArithmetic::forward_ntt`]; a value ≥ q in either operand fails that row.
    fn pointwise_mul(
        &self,
        class: NttClass,
        lhs: &mut [u64],
        rhs: &[u64],
    ) -> Result<RowResults, AccelError>;
}

/// The CPU backend: the ring module's transforms, one row after another on the calling thread.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuBackend;

/// Checks a buffer's shape for `class`.
fn check_shape(class: NttClass, len: usize, other_len: usize) -> Result<(), AccelError> {
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

/// The row error for the first value ≥ q among `values`, if any.
fn check_row(class: NttClass, row: usize, values: &[u64]) -> Result<(), AccelError> {
    match first_out_of_range(values) {
        Some((index, value)) => Err(AccelError::CoefficientOutOfRange {
            row,
            index,
            value,
            modulus: class.modulus(),
        }),
        None => Ok(()),
    }
}

/// Applies an in-place Corona transform to every valid row.
fn transform_rows(
    class: NttClass,
    rows: &mut [u64],
    transform: fn(&mut [u64; params::DEGREE]),
) -> Result<RowResults, AccelError> {
    check_shape(class, rows.len(), rows.len())?;
    Ok(rows
        .chunks_exact_mut(params::DEGREE)
        .enumerate()
        .map(|(r, row)| {
            check_row(class, r, row)?;
            if let Ok(array) = <&mut [u64; params::DEGREE]>::try_from(row) {
                transform(array);
            }
            Ok(())
        })
        .collect())
}

impl BatchArithmetic for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn forward_ntt(&self, class: NttClass, rows: &mut [u64]) -> Result<RowResults, AccelError> {
        match class {
            NttClass::Corona => transform_rows(class, rows, forward_in_place),
        }
    }

    fn inverse_ntt(&self, class: NttClass, rows: &mut [u64]) -> Result<RowResults, AccelError> {
        match class {
            NttClass::Corona => transform_rows(class, rows, inverse_in_place),
        }
    }

    fn pointwise_mul(
        &self,
        class: NttClass,
        lhs: &mut [u64],
        rhs: &[u64],
    ) -> Result<RowResults, AccelError> {
        match class {
            NttClass::Corona => {
                check_shape(class, lhs.len(), rhs.len())?;
                Ok(lhs
                    .chunks_exact_mut(params::DEGREE)
                    .zip(rhs.chunks_exact(params::DEGREE))
                    .enumerate()
                    .map(|(r, (a, b))| {
                        check_row(class, r, a)?;
                        check_row(class, r, b)?;
                        if let (Ok(a), Ok(b)) = (
                            <&mut [u64; params::DEGREE]>::try_from(a),
                            <&[u64; params::DEGREE]>::try_from(b),
                        ) {
                            pointwise_in_place(a, b);
                        }
                        Ok(())
                    })
                    .collect())
            }
        }
    }
}
