//! The production CPU backend: lane-parallel ring transforms, AVX2 chosen at run time.
//!
//! [`SimdCpuBackend`] computes the NTTs of ML-DSA (FIPS 204 Algorithms 41–42, q = 8380417,
//! ζ = 1753), Corona (q = 2^48 + 18945) and ML-KEM (q = 3329, both classes) on several
//! polynomials at once, one polynomial
//! per SIMD lane: the batch's rows are transposed so that coefficient j of a group of rows lies
//! in one vector, and every butterfly of every layer is then the same vector operation with a
//! broadcast twiddle, with no shuffles in the last layers (the per-row AVX2 code of the
//! pq-crystals reference spends its shuffles there). Pointwise products and the F_r/MSM
//! workloads are the CPU reference's ([`CpuBackend`]). Groups go across rayon's pool from
//! [`PARALLEL_ROWS`] rows on, as the reference's rows do.
//!
//! Builds, chosen once per backend (`is_x86_feature_detected!`):
//! - with AVX2 and FMA, `mldsa_avx2` ([`LANES`] = 8 rows in 32-bit lanes, Shoup products with
//!   the vector multiplier, three passes over the data) and `ring_fma` for Corona and ML-KEM
//!   (4 rows in `f64` lanes, exact products through FMA); their module docs give the bounds;
//! - elsewhere, for ML-DSA, the portable kernels below: plain Rust over
//!   `[[u64; LANES]; 256]`, which compilers vectorize for the target's baseline (SSE2 on
//!   x86-64, NEON on AArch64); the other classes go to the reference.
//!
//! Every build is checked against the reference in `tests/cpu.rs`. Before a transform, one scan of
//! the batch ([`all_canonical`], compiled for the same ISA) accepts the common case, where
//! every value is below q; only a batch that fails it is checked row by row. ML-DSA on AVX2
//! skips that scan: its kernel checks each group of [`LANES`] rows while transposing it, and
//! only a group that fails is checked row by row.
//!
//! # Arithmetic and bounds of the portable kernels
//!
//! Values are u64 lanes holding numbers below 2^32, so each product is one 32×32→64-bit
//! multiply. Twiddle products use Shoup's method (Harvey, "Faster arithmetic for
//! number-theoretic transforms", 2014): with w' = ⌊w·2^32/q⌋, `y·w − ⌊y·w'/2^32⌋·q` lies in
//! [0, 2q) for any y < 2^32.
//! - Forward (Cooley–Tukey): x + t and x + 2q − t grow by 2q per layer from inputs below q, so
//!   every value stays below 17q < 2^28 and is reduced once at the end.
//! - Inverse (Gentleman–Sande): sums double per layer, so entering layer l every value is below
//!   2^(l−1)·q and the offset difference below 2^l·q ≤ 2^31; the final scaling by 256^{-1} is a
//!   Shoup product of values below 2^8·q < 2^31.
//! - The final reduction of a value x < 2^31: q̂ = ⌊x/2^23⌋ under-estimates ⌊x/q⌋ by at most 1
//!   (q = 2^23 − 2^13 + 1), so x − q̂·q < 2q and one conditional subtraction ends in [0, q).

use ark_bls12_381::{Fr, G1Affine, G1Projective, G2Affine, G2Projective};
use quasar_crypto::accel::{
    all_canonical, check_call, check_row, pow_mod, reference_row, row_results, AccelError,
    BatchArithmetic, CpuBackend, MsmRequest, MsmResults, NttClass, RingOp, RowResults,
    ScalarTransform, PARALLEL_ROWS,
};
use rayon::prelude::*;

/// Polynomials transformed together, one per lane.
pub const LANES: usize = 8;

const N: usize = 256;
const Q: u64 = 8_380_417;
const TWO_Q: u64 = 2 * Q;

/// Coefficient j of `LANES` polynomials at index j.
type Lanes = [[u64; LANES]; N];

/// A twiddle w < q with its Shoup companion ⌊w·2^32/q⌋ (both below 2^32).
const fn shoup_pair(w: u64) -> [u32; 2] {
    [w as u32, ((w << 32) / Q) as u32]
}

/// Twiddles in the order the layers use them: `FORWARD[k]` = ζ^brv8(k) (FIPS 204 Appendix B),
/// `INVERSE[k]` = −ζ^brv8(k) mod q.
const fn twiddles(negate: bool) -> [[u32; 2]; N] {
    let mut t = [[0; 2]; N];
    let mut k = 0;
    while k < N {
        let z = pow_mod(1753, (k as u8).reverse_bits() as u64, Q);
        let w = if negate { (Q - z) % Q } else { z };
        // Compile-time loop over a constant array; k < 256 by the loop bound.
        #[allow(clippy::indexing_slicing)]
        {
            t[k] = shoup_pair(w);
        }
        k += 1;
    }
    t
}

static FORWARD: [[u32; 2]; N] = twiddles(false);
static INVERSE: [[u32; 2]; N] = twiddles(true);
/// 256^{-1} mod q (FIPS 204 Algorithm 42's f = 8347681) with its Shoup companion.
const N_INV: [u32; 2] = shoup_pair(8_347_681);

/// y·w mod q in [0, 2q) for y < 2^32 (Shoup). Every operand is a zero-extended u32, so each
/// product is one 32×32→64-bit multiply (`vpmuludq` on AVX2).
#[inline(always)]
fn shoup(y: u64, [w, w_shoup]: [u32; 2]) -> u64 {
    let y = u64::from(y as u32);
    let estimate = u64::from(((y * u64::from(w_shoup)) >> 32) as u32);
    (y * u64::from(w)).wrapping_sub(estimate * Q)
}

/// x mod q for x < 2^31 (see the module docs).
#[inline(always)]
fn reduce(x: u64) -> u64 {
    let r = x - u64::from((x >> 23) as u32) * Q;
    if r >= Q {
        r - Q
    } else {
        r
    }
}

/// FIPS 204 Algorithm 41 on every lane: coefficients in [0, q) in, image in [0, q) out.
#[inline(always)]
fn forward_lanes(a: &mut Lanes) {
    let mut k = 1;
    let mut len = N / 2;
    while len >= 1 {
        for block in a.chunks_exact_mut(2 * len) {
            let w = FORWARD.get(k).copied().unwrap_or_default();
            k += 1;
            let (lo, hi) = block.split_at_mut(len);
            for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                for (x, y) in x.iter_mut().zip(y.iter_mut()) {
                    let t = shoup(*y, w);
                    let u = *x;
                    *x = u + t;
                    *y = u + TWO_Q - t;
                }
            }
        }
        len /= 2;
    }
    for x in a.as_flattened_mut() {
        *x = reduce(*x);
    }
}

/// FIPS 204 Algorithm 42 on every lane: image in [0, q) in, coefficients in [0, q) out.
#[inline(always)]
fn inverse_lanes(a: &mut Lanes) {
    let mut k = N;
    let mut len = 1;
    // Entering a layer every value is below `bound` (2^(l−1)·q for layer l).
    let mut bound = Q;
    while len < N {
        for block in a.chunks_exact_mut(2 * len) {
            k -= 1;
            let w = INVERSE.get(k).copied().unwrap_or_default();
            let (lo, hi) = block.split_at_mut(len);
            for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                for (x, y) in x.iter_mut().zip(y.iter_mut()) {
                    let (u, v) = (*x, *y);
                    *x = u + v;
                    *y = shoup(u + bound - v, w);
                }
            }
        }
        len *= 2;
        bound *= 2;
    }
    for x in a.as_flattened_mut() {
        *x = reduce(shoup(*x, N_INV));
    }
}

/// Lane l of `lanes[j]` ← coefficient j of `rows[l]`.
#[allow(clippy::needless_range_loop)] // constant bounds on both axes: no bounds checks
fn transpose_in(rows: &[[u64; N]; LANES], lanes: &mut Lanes) {
    for j in 0..N {
        for l in 0..LANES {
            lanes[j][l] = rows[l][j];
        }
    }
}

/// The inverse of [`transpose_in`].
#[allow(clippy::needless_range_loop)] // as above
fn transpose_out(lanes: &Lanes, rows: &mut [[u64; N]; LANES]) {
    for j in 0..N {
        for l in 0..LANES {
            rows[l][j] = lanes[j][l];
        }
    }
}

/// The portable kernels on up to [`LANES`] rows: copied into fixed arrays (zeros for the
/// missing lanes of a last, partial group), so that the transposes index constant shapes
/// without bounds checks.
fn portable_group(op: RingOp, group: &mut [&mut [u64; N]]) {
    let mut rows = [[0u64; N]; LANES];
    for (copy, row) in rows.iter_mut().zip(group.iter()) {
        *copy = **row;
    }
    let mut lanes: Lanes = [[0; LANES]; N];
    transpose_in(&rows, &mut lanes);
    match op {
        RingOp::Forward => forward_lanes(&mut lanes),
        _ => inverse_lanes(&mut lanes),
    }
    transpose_out(&lanes, &mut rows);
    for (copy, row) in rows.iter().zip(group.iter_mut()) {
        **row = *copy;
    }
}

#[cfg(target_arch = "x86_64")]
mod mldsa_avx2;
#[cfg(target_arch = "x86_64")]
mod ring_fma;

/// [`all_canonical`] compiled with AVX2 (four values per instruction instead of two).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn all_canonical_avx2(class: NttClass, values: &[u64]) -> bool {
    all_canonical(class, values)
}

/// Which build of the kernels runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Isa {
    Portable,
    /// AVX2 and FMA, both reported by the CPU.
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Isa {
    fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            return Isa::Avx2;
        }
        Isa::Portable
    }

    /// How many rows of `class` one kernel call transforms, or `None` where this build has no
    /// kernel for the class (the reference runs).
    fn group_width(self, class: NttClass) -> Option<usize> {
        match (self, class) {
            (_, NttClass::MlDsa) => Some(LANES),
            #[cfg(target_arch = "x86_64")]
            (Isa::Avx2, class) if ring_fma::FmaRing::of(class).is_some() => Some(ring_fma::LANES),
            _ => None,
        }
    }

    /// [`row_results`] of a transform, with the scan of the common case (every value
    /// canonical) compiled for this ISA.
    fn row_results(self, class: NttClass, op: RingOp, rows: &[u64]) -> RowResults {
        let canonical = match self {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => {
                // SAFETY: as in `Isa::run`.
                #[allow(unsafe_code)]
                unsafe {
                    all_canonical_avx2(class, rows)
                }
            }
            Isa::Portable => all_canonical(class, rows),
        };
        if canonical {
            vec![Ok(()); rows.len() / N]
        } else {
            row_results(class, op, rows, &[])
        }
    }

    /// `op` (forward or inverse) on up to [`Isa::group_width`] rows of canonical residues of
    /// `class`, in place.
    fn run(self, class: NttClass, op: RingOp, group: &mut [&mut [u64; N]]) {
        match (self, class) {
            #[cfg(target_arch = "x86_64")]
            (Isa::Avx2, class) if let Some(ring) = ring_fma::FmaRing::of(class) => {
                // SAFETY: `Isa::Avx2` is only constructed after `is_x86_feature_detected!`
                // reported AVX2 and FMA on this CPU.
                #[allow(unsafe_code)]
                unsafe {
                    ring.transform(op, group)
                }
            }
            // (ML-DSA on AVX2 takes `mldsa_avx2_rows` instead, before any grouping.)
            (_, NttClass::MlDsa) => portable_group(op, group),
            _ => {
                for row in group.iter_mut() {
                    reference_row(class, op, &mut row[..], &[]);
                }
            }
        }
    }
}

/// ML-DSA on the AVX2 kernel: groups of [`LANES`] consecutive rows, each checked while it is
/// transposed (across rayon's pool from [`PARALLEL_ROWS`] rows on). A group that fails the
/// check, and a last partial group, are checked row by row and their valid rows transformed
/// in a zero-padded copy.
#[cfg(target_arch = "x86_64")]
fn mldsa_avx2_rows(op: RingOp, rows: &mut [u64]) -> RowResults {
    let mut results = vec![Ok(()); rows.len() / N];
    if results.len() < PARALLEL_ROWS {
        let groups = rows.chunks_mut(LANES * N).zip(results.chunks_mut(LANES));
        for (g, (rows, results)) in groups.enumerate() {
            mldsa_avx2_group(op, g * LANES, rows, results);
        }
    } else {
        let groups = rows
            .par_chunks_mut(LANES * N)
            .zip(results.par_chunks_mut(LANES));
        groups
            .enumerate()
            .for_each(|(g, (rows, results))| mldsa_avx2_group(op, g * LANES, rows, results));
    }
    results
}

/// One group of [`mldsa_avx2_rows`]: up to [`LANES`] rows, the first being row `first` of the
/// batch, and their results.
#[cfg(target_arch = "x86_64")]
fn mldsa_avx2_group(
    op: RingOp,
    first: usize,
    group: &mut [u64],
    results: &mut [Result<(), AccelError>],
) {
    let kernel = |rows: &mut [[u64; N]; LANES]| {
        mldsa_avx2::WORK.with_borrow_mut(|work| {
            // SAFETY: `mldsa_avx2_rows` runs on `Isa::Avx2` only, which is constructed after
            // `is_x86_feature_detected!` reported AVX2 and FMA on this CPU.
            #[allow(unsafe_code)]
            unsafe {
                mldsa_avx2::transform(op, rows, work)
            }
        })
    };
    let rows = group.as_chunks_mut::<N>().0;
    if let Ok(full) = <&mut [[u64; N]; LANES]>::try_from(&mut *rows) {
        if kernel(full) {
            return;
        }
    }
    let mut valid = Vec::with_capacity(LANES);
    for (r, (row, result)) in rows.iter_mut().zip(results.iter_mut()).enumerate() {
        *result = check_row(NttClass::MlDsa, first + r, row);
        if result.is_ok() {
            valid.push(row);
        }
    }
    let mut padded = [[0u64; N]; LANES];
    for (copy, row) in padded.iter_mut().zip(&valid) {
        *copy = **row;
    }
    // Every value of `padded` is now below q, so the kernel's own check passes.
    let transformed = kernel(&mut padded);
    for (copy, row) in padded.iter().zip(valid) {
        *row = *copy;
    }
    assert!(
        transformed,
        "rows checked by check_row pass the kernel's check"
    );
}

/// The production CPU backend (see the module docs): ring transforms on SIMD lanes, the rest
/// on the CPU reference. Results are bit-identical to [`CpuBackend`]'s.
#[derive(Debug, Clone, Copy)]
pub struct SimdCpuBackend {
    isa: Isa,
}

impl Default for SimdCpuBackend {
    fn default() -> SimdCpuBackend {
        SimdCpuBackend::new()
    }
}

impl SimdCpuBackend {
    /// The backend with the widest kernels this CPU runs.
    pub fn new() -> SimdCpuBackend {
        SimdCpuBackend { isa: Isa::detect() }
    }

    /// The backend with the portable kernels only (what runs on a CPU without AVX2; for tests
    /// and comparisons).
    pub fn portable() -> SimdCpuBackend {
        SimdCpuBackend { isa: Isa::Portable }
    }

    /// Whether the AVX2 kernels run (the CPU reported AVX2 and FMA; without them ML-DSA runs on
    /// the portable kernels and the other classes on the reference).
    pub fn uses_avx2(&self) -> bool {
        self.isa != Isa::Portable
    }

    /// A transform of every valid row: rows checked (a failing row is left unchanged), the
    /// valid ones transformed a group at a time, groups across rayon's pool from
    /// [`PARALLEL_ROWS`] rows on. Classes without a kernel in this build go to the reference.
    fn transform(
        &self,
        class: NttClass,
        op: RingOp,
        rows: &mut [u64],
    ) -> Result<RowResults, AccelError> {
        #[cfg(target_arch = "x86_64")]
        if self.isa == Isa::Avx2 && class == NttClass::MlDsa {
            check_call(class, op, rows, &[])?;
            return Ok(mldsa_avx2_rows(op, rows));
        }
        let Some(width) = self.isa.group_width(class) else {
            return CpuBackend.ring(class, op, rows, &[]);
        };
        check_call(class, op, rows, &[])?;
        let results = self.isa.row_results(class, op, rows);
        let mut valid: Vec<&mut [u64; N]> = rows
            .as_chunks_mut::<N>()
            .0
            .iter_mut()
            .zip(&results)
            .filter_map(|(row, result)| result.is_ok().then_some(row))
            .collect();
        let isa = self.isa;
        let one_group = |group: &mut [&mut [u64; N]]| isa.run(class, op, group);
        // A few groups are not worth a hand-off to the pool (the reference's threshold).
        if valid.len() < PARALLEL_ROWS {
            valid.chunks_mut(width).for_each(one_group);
        } else {
            valid.par_chunks_mut(width).for_each(one_group);
        }
        Ok(results)
    }
}

impl BatchArithmetic for SimdCpuBackend {
    fn name(&self) -> &'static str {
        "cpu-simd"
    }

    fn forward_ntt(&self, class: NttClass, rows: &mut [u64]) -> Result<RowResults, AccelError> {
        self.transform(class, RingOp::Forward, rows)
    }

    fn inverse_ntt(&self, class: NttClass, rows: &mut [u64]) -> Result<RowResults, AccelError> {
        self.transform(class, RingOp::Inverse, rows)
    }

    fn pointwise_mul(
        &self,
        class: NttClass,
        lhs: &mut [u64],
        rhs: &[u64],
    ) -> Result<RowResults, AccelError> {
        CpuBackend.pointwise_mul(class, lhs, rhs)
    }

    fn scalar_ntt(
        &self,
        transform: ScalarTransform,
        rows: &mut [Vec<Fr>],
    ) -> Result<(), AccelError> {
        CpuBackend.scalar_ntt(transform, rows)
    }

    fn msm_g1(
        &self,
        requests: &[MsmRequest<'_, G1Affine>],
    ) -> Result<MsmResults<G1Projective>, AccelError> {
        CpuBackend.msm_g1(requests)
    }

    fn msm_g2(
        &self,
        requests: &[MsmRequest<'_, G2Affine>],
    ) -> Result<MsmResults<G2Projective>, AccelError> {
        CpuBackend.msm_g2(requests)
    }
}
