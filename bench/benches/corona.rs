//! Corona benchmarks (issue 5), single thread unless a group says otherwise. Run:
//! `cargo bench -p quasar-bench --bench corona`.
//! One function per criterion group (reports under `target/criterion/`):
//!
//! - `corona_ntt/{forward,inverse}`: one degree-256 negacyclic NTT / inverse NTT.
//! - `corona_ntt/backend_forward_49`: 49 forward NTTs as one `CpuBackend` batch (the shape of a
//!   commitment row), spread over rayon's pool (49 ≥ `PARALLEL_ROWS`): what a batch costs
//!   through the seam, against 49 times the per-polynomial call.
//! - `corona_pointwise/product`: one coefficient-wise product of two NTT-form polynomials.
//! - `corona_matvec/a_times_z`: A·z for A ∈ R_q^{8×7} cached in NTT form and z ∈ R_q^7 in NTT
//!   form, including the 8 inverse NTTs of the result (the product in verification).
//! - `corona_matvec/a_times_r`: A·R for R ∈ R_q^{7×49} in NTT form (the product of round 1).
//! - `corona_sample/{gaussian_e,gaussian_u,gaussian_star}`: one polynomial of each discrete
//!   Gaussian, constant-time; `gaussian_u_public`: σ_U by the variable-time search (h_u);
//!   `uniform`: one uniform polynomial mod q.
//!
//! For each (t, n) ∈ {(2, 3), (5, 7), (14, 21)} (label `t_of_n`), with all n parties signing
//! (the heaviest round 2: n MAC checks and n commitments to sum), and the message sizes printed:
//! - `corona_scheme/keygen/t_of_n`: trusted-dealer key generation.
//! - `corona_scheme/round1/t_of_n`: one party's round 1 (a fresh session id per iteration).
//! - `corona_round2/t_of_n`: one party's round 2 (MAC checks, transcript, rank check, h_u, h,
//!   challenge, masks, z_i), round-1 messages already decoded; every iteration runs a fresh
//!   round 1 of all n parties outside the timing, so this group takes a fixed 10 samples.
//! - `corona_scheme/combine/t_of_n`: combining n z_i (including the final verification).
//! - `corona_scheme/verify/t_of_n`: one verification with the group key's expanded A cached.
//! - `corona_scheme/verify_simd/t_of_n`: the same on the node's CPU backend
//!   (`SimdCpuBackend`: its NTTs on AVX2 lanes where the CPU has them).
//! - `corona_scheme/group_key_from_bytes`: decoding a group key (expands A once).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode};
use quasar_crypto::accel::{BatchArithmetic, CpuBackend, NttClass};
use quasar_crypto::corona::hash::{prg, Role};
use quasar_crypto::corona::params::{DBAR, DEGREE, M, N, Q};
use quasar_crypto::corona::ring::{NttMatrix, NttPoly, NttVec, Poly};
use quasar_crypto::corona::sample::{gaussian, gaussian_public, uniform, Width};
use quasar_crypto::corona::scheme::{
    combine, trusted_dealer_keygen, GroupKey, Round1Message, Round1State, Round2Message, SessionId,
    SignContext, Signature, Signer, SigningSet,
};
use quasar_gpu::SimdCpuBackend;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn random_values(rng: &mut StdRng) -> Vec<u64> {
    (0..DEGREE).map(|_| rng.gen_range(0..Q)).collect()
}

fn random_poly(rng: &mut StdRng) -> Poly {
    Poly::from_coefficients(&random_values(rng)).expect("values below q")
}

fn random_ntt(rng: &mut StdRng) -> NttPoly {
    NttPoly::from_coefficients(&random_values(rng)).expect("values below q")
}

fn bench_ntt(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(1);
    let a = random_poly(&mut rng);
    let a_ntt = a.ntt();
    let mut group = c.benchmark_group("corona_ntt");
    group.bench_function("forward", |b| b.iter(|| black_box(&a).ntt()));
    group.bench_function("inverse", |b| b.iter(|| black_box(&a_ntt).intt()));
    let batch: Vec<u64> = (0..DBAR + 1)
        .flat_map(|_| random_values(&mut rng))
        .collect();
    group.bench_function("backend_forward_49", |b| {
        b.iter_batched_ref(
            || batch.clone(),
            |rows| CpuBackend.forward_ntt(NttClass::Corona, rows),
            criterion::BatchSize::SmallInput,
        )
    });
    group.finish();
}

fn bench_pointwise(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(2);
    let (x, y) = (random_ntt(&mut rng), random_ntt(&mut rng));
    let mut group = c.benchmark_group("corona_pointwise");
    group.bench_function("product", |b| b.iter(|| black_box(&x) * black_box(&y)));
    group.finish();
}

fn bench_matvec(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(3);
    let a: NttMatrix<M, N> = NttMatrix::from_fn(|_, _| random_ntt(&mut rng));
    let z: NttVec<N> = NttVec::from_fn(|_| random_ntt(&mut rng));
    let r: NttMatrix<N, { DBAR + 1 }> = NttMatrix::from_fn(|_, _| random_ntt(&mut rng));
    let mut group = c.benchmark_group("corona_matvec");
    group.bench_function("a_times_z", |b| {
        b.iter(|| black_box(&a).mul_vec(black_box(&z)).intt())
    });
    group.bench_function("a_times_r", |b| {
        b.iter(|| black_box(&a).mul_mat(black_box(&r)))
    });
    group.finish();
}

fn session(k: u64) -> SessionId {
    let mut s = [0u8; 32];
    s[..8].copy_from_slice(&k.to_le_bytes());
    SessionId(s)
}

/// The (t, n) shapes of the table; every party of the n signs (the heaviest round 2).
const SHAPES: [(usize, usize); 3] = [(2, 3), (5, 7), (14, 21)];

/// One (t, n) group key with all n parties as signers, and a fresh-session counter.
struct Shape {
    t: usize,
    n: usize,
    gk: GroupKey,
    signers: Vec<Signer>,
    set: SigningSet,
    next: u64,
}

impl Shape {
    fn new(t: usize, n: usize, rng: &mut StdRng) -> Shape {
        let (gk, shares) = trusted_dealer_keygen(t, n, rng).expect("valid shape");
        let signers: Vec<Signer> = shares.into_iter().map(Signer::new).collect();
        let all: Vec<u16> = (0..n as u16).collect();
        let set = signers[0].share().signing_set(&all).expect("valid set");
        Shape {
            t,
            n,
            gk,
            signers,
            set,
            next: 0,
        }
    }

    fn label(&self) -> String {
        format!("{}_of_{}", self.t, self.n)
    }

    /// Round 1 of every signer in a fresh session: signer 0's state and all n messages.
    fn round1_all(&mut self, rng: &mut StdRng) -> (Round1State, Vec<Round1Message>) {
        self.next += 1;
        let sid = session(self.next);
        let mut mine = None;
        let mut msgs = Vec::new();
        for (k, signer) in self.signers.iter_mut().enumerate() {
            let (st, m) = signer.round1(sid, &self.set, rng).expect("round 1");
            if k == 0 {
                mine = Some(st);
            }
            msgs.push(m);
        }
        (mine.expect("signer 0"), msgs)
    }

    /// One complete session: the context, every round-2 message and the signature.
    fn sign(
        &mut self,
        message: &[u8],
        rng: &mut StdRng,
    ) -> (SignContext, Vec<Round2Message>, Signature, usize) {
        self.next += 1;
        let sid = session(self.next);
        let mut states = Vec::new();
        let mut round1 = Vec::new();
        for signer in self.signers.iter_mut() {
            let (st, m) = signer.round1(sid, &self.set, rng).expect("round 1");
            states.push(st);
            round1.push(m);
        }
        let mut round2 = Vec::new();
        let mut context = None;
        for (signer, st) in self.signers.iter().zip(states) {
            let (m, ctx) = signer.round2(st, message, &round1).expect("round 2");
            round2.push(m);
            context = Some(ctx);
        }
        let context = context.expect("n signers");
        let signature = combine(&self.gk, &context, &round2).expect("valid signature");
        (context, round2, signature, round1[0].to_bytes().len())
    }
}

fn bench_scheme(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(4);
    let message = b"corona bench message";
    let mut shapes: Vec<Shape> = SHAPES
        .iter()
        .map(|&(t, n)| Shape::new(t, n, &mut rng))
        .collect();

    let mut group = c.benchmark_group("corona_scheme");
    group.sample_size(10);
    for shape in shapes.iter_mut() {
        let label = shape.label();
        let (t, n) = (shape.t, shape.n);
        group.bench_function(format!("keygen/{label}"), |b| {
            b.iter(|| trusted_dealer_keygen(t, n, &mut rng).expect("valid shape"))
        });
        group.bench_function(format!("round1/{label}"), |b| {
            b.iter(|| {
                shape.next += 1;
                let sid = session(shape.next);
                shape.signers[0]
                    .round1(sid, &shape.set, &mut rng)
                    .expect("fresh session")
            })
        });
        let (context, round2, signature, round1_bytes) = shape.sign(message, &mut rng);
        println!(
            "corona sizes ({label}, {n} signers): group key {} B, round-1 message {round1_bytes} B, \
             round-2 message {} B, signature {} B",
            shape.gk.to_bytes().len(),
            round2[0].to_bytes().len(),
            signature.to_bytes().len()
        );
        group.bench_function(format!("combine/{label}"), |b| {
            b.iter(|| combine(&shape.gk, black_box(&context), black_box(&round2)).expect("valid"))
        });
        group.bench_function(format!("verify/{label}"), |b| {
            b.iter(|| shape.gk.verify(black_box(message), black_box(&signature)))
        });
        let simd = SimdCpuBackend::new();
        group.bench_function(format!("verify_simd/{label}"), |b| {
            b.iter(|| {
                shape
                    .gk
                    .verify_on(&simd, black_box(message), black_box(&signature))
            })
        });
    }
    let gk_bytes = shapes[1].gk.to_bytes();
    group.bench_function("group_key_from_bytes", |b| {
        b.iter(|| GroupKey::from_bytes(black_box(&gk_bytes)).expect("valid key"))
    });
    group.finish();

    // Round 2 needs a fresh round 1 of all n parties per iteration (a session is used once), so
    // this group times a fixed small number of iterations instead of a time budget.
    let mut group = c.benchmark_group("corona_round2");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(1))
        .measurement_time(Duration::from_millis(1))
        .sampling_mode(SamplingMode::Flat);
    for shape in shapes.iter_mut() {
        let label = shape.label();
        group.bench_function(label, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let (st, msgs) = shape.round1_all(&mut rng);
                    let start = Instant::now();
                    black_box(
                        shape.signers[0]
                            .round2(st, message, &msgs)
                            .expect("round 2"),
                    );
                    total += start.elapsed();
                }
                total
            })
        });
    }
    group.finish();
}

/// The samplers, per polynomial of 256 coefficients: the secret Gaussians constant-time, h_u's
/// σ_U both ways (the public search is what round 2 uses), and uniform mod q.
fn bench_sample(c: &mut Criterion) {
    let mut group = c.benchmark_group("corona_sample");
    let mut stream = prg(Role::Hu, &[7u8; 32], 0);
    for (name, width) in [
        ("gaussian_e", Width::E),
        ("gaussian_u", Width::U),
        ("gaussian_star", Width::Star),
    ] {
        group.bench_function(name, |b| b.iter(|| gaussian(width, &mut stream)));
    }
    group.bench_function("gaussian_u_public", |b| {
        b.iter(|| gaussian_public(Width::U, &mut stream))
    });
    group.bench_function("uniform", |b| b.iter(|| uniform(&mut stream)));
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = bench_ntt, bench_pointwise, bench_matvec, bench_sample, bench_scheme
}
criterion_main!(benches);
