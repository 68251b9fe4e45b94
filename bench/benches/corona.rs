//! Corona benchmarks (issue 5), single thread. Run: `cargo bench -p quasar-bench --bench corona`.
//! One function per criterion group (reports under `target/criterion/`):
//!
//! - `corona_ntt/{forward,inverse}`: one degree-256 negacyclic NTT / inverse NTT.
//! - `corona_ntt/backend_forward_49`: 49 forward NTTs as one `CpuBackend` batch (the shape of a
//!   commitment row), to show the seam's overhead over the per-polynomial call.
//! - `corona_pointwise/product`: one coefficient-wise product of two NTT-form polynomials.
//! - `corona_matvec/a_times_z`: A·z for A ∈ R_q^{8×7} cached in NTT form and z ∈ R_q^7 in NTT
//!   form, including the 8 inverse NTTs of the result (the product in verification).
//! - `corona_matvec/a_times_r`: A·R for R ∈ R_q^{7×49} in NTT form (the product of round 1).
//! - `corona_scheme/keygen_5_of_7`: trusted-dealer key generation for (5, 7).
//! - `corona_scheme/round1`: one party's round 1 (a fresh session id per iteration).
//! - `corona_scheme/round2_n7`: one party's round 2 in a 7-of-7 session (MAC checks, transcript,
//!   rank check, h_u, h, challenge, masks, z_i), round-1 messages already decoded.
//! - `corona_scheme/combine_n7`: combining seven z_i (including the final verification).
//! - `corona_scheme/verify`: one verification with the group key's expanded A cached.
//! - `corona_scheme/group_key_from_bytes`: decoding a group key (expands A once).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use quasar_crypto::accel::{BatchArithmetic, CpuBackend, NttClass};
use quasar_crypto::corona::params::{DBAR, DEGREE, M, N, Q};
use quasar_crypto::corona::ring::{NttMatrix, NttPoly, NttVec, Poly};
use quasar_crypto::corona::scheme::{combine, trusted_dealer_keygen, GroupKey, SessionId, Signer};
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

fn bench_scheme(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(4);
    let mut group = c.benchmark_group("corona_scheme");
    group.sample_size(10);
    group.bench_function("keygen_5_of_7", |b| {
        b.iter(|| trusted_dealer_keygen(5, 7, &mut rng).expect("valid shape"))
    });

    let (gk, shares) = trusted_dealer_keygen(7, 7, &mut rng).expect("valid shape");
    let mut signers: Vec<Signer> = shares.into_iter().map(Signer::new).collect();
    let set = signers[0]
        .share()
        .signing_set(&[0, 1, 2, 3, 4, 5, 6])
        .expect("valid set");
    let mut next = 0u64;
    group.bench_function("round1", |b| {
        b.iter(|| {
            next += 1;
            signers[0]
                .round1(session(next), &set, &mut rng)
                .expect("fresh session")
        })
    });

    // One complete 7-of-7 session for round 2, combine and verify.
    let message = b"corona bench message";
    let mut round1 = Vec::new();
    let mut states = Vec::new();
    for signer in signers.iter_mut() {
        let (st, m) = signer.round1(session(0), &set, &mut rng).expect("round 1");
        states.push(st);
        round1.push(m);
    }
    let mut round2 = Vec::new();
    let mut context = None;
    for (signer, st) in signers.iter().zip(states) {
        let (m, ctx) = signer.round2(st, message, &round1).expect("round 2");
        round2.push(m);
        context = Some(ctx);
    }
    let context = context.expect("seven signers");
    let signature = combine(&gk, &context, &round2).expect("valid signature");
    println!(
        "corona sizes (7 signers): group key {} B, round-1 message {} B, round-2 message {} B, signature {} B",
        gk.to_bytes().len(),
        round1[0].to_bytes().len(),
        round2[0].to_bytes().len(),
        signature.to_bytes().len()
    );

    // Setup (round 1 of all seven) needs the signers mutably, the routine reads signer 0.
    let signers = std::cell::RefCell::new(signers);
    group.bench_function("round2_n7", |b| {
        b.iter_batched(
            || {
                next += 1;
                let sid = session(next);
                let mut all = signers.borrow_mut();
                let mut msgs = Vec::new();
                let mut mine = None;
                for (k, signer) in all.iter_mut().enumerate() {
                    let (st, m) = signer.round1(sid, &set, &mut rng).expect("round 1");
                    if k == 0 {
                        mine = Some(st);
                    }
                    msgs.push(m);
                }
                (mine.expect("signer 0"), msgs)
            },
            |(st, msgs)| {
                signers.borrow()[0]
                    .round2(st, message, &msgs)
                    .expect("round 2")
            },
            criterion::BatchSize::PerIteration,
        )
    });
    group.bench_function("combine_n7", |b| {
        b.iter(|| combine(&gk, black_box(&context), black_box(&round2)).expect("valid"))
    });
    group.bench_function("verify", |b| {
        b.iter(|| gk.verify(black_box(message), black_box(&signature)))
    });
    let gk_bytes = gk.to_bytes();
    group.bench_function("group_key_from_bytes", |b| {
        b.iter(|| GroupKey::from_bytes(black_box(&gk_bytes)).expect("valid key"))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = bench_ntt, bench_pointwise, bench_matvec, bench_scheme
}
criterion_main!(benches);
