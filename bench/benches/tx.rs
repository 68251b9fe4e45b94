//! A transaction's checks: decoding, ML-DSA-65 verification (FIPS 204), and the
//! verification-result cache that spares a node the second verification (issue 32's target: a
//! cached check costs at most 1 µs).
//!
//! Run: `cargo bench -p quasar-bench --bench tx` (about a minute).
//!
//! Criterion measures each on its own (`decode`, `verify`, `prepare_key`, `verify_prepared`,
//! `cache_hit`). Then, because the machine is shared and noisy, they are timed again in
//! interleaved rounds (each round: a batch of each, in turn) and the table gives their medians
//! and each one's ratio to `verify` (libcrux through `quasar_crypto::mldsa`) measured in the same
//! rounds:
//! - `prepare key`: `PreparedKey::new` (ExpandA, NTT(t1·2^d), tr), what a sender's first
//!   transaction costs a node on top of `verify prepared`;
//! - `verify prepared`: a cache miss whose sender's key is prepared, the NTTs on the reference
//!   backend and on the SIMD CPU backend (the node's);
//! - `cache hit`: the cache holds one verdict per transaction of the batch; a hit is the lock
//!   and the map lookup (the transaction's hash was computed when it was decoded).

use std::hint::black_box;
use std::time::Instant;

use criterion::Criterion;
use quasar_app::{address_of, Action, SignedTransaction, Transaction, VerificationCache};
use quasar_crypto::accel::{BatchArithmetic, CpuBackend};
use quasar_crypto::mldsa::{MlDsa65, PreparedKey, SecretKey};
use quasar_gpu::SimdCpuBackend;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

const CHAIN: u64 = 7;
/// Transactions per batch (distinct, so cache hits are not all on one entry).
const BATCH: usize = 64;
/// Interleaved rounds for the table.
const ROUNDS: usize = 30;

fn transactions(key: &SecretKey<MlDsa65>) -> Vec<SignedTransaction> {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    (0..BATCH as u64)
        .map(|nonce| {
            Transaction {
                chain_id: CHAIN,
                nonce,
                fee: 1,
                sender: address_of(key.public_key()),
                public_key: None,
                action: Action::Transfer {
                    to: [7; 32],
                    amount: 1 + nonce,
                },
            }
            .sign(key, &mut rng)
            .expect("sign")
        })
        .collect()
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    let key = SecretKey::<MlDsa65>::from_seed(&[3; 32]);
    let txs = transactions(&key);
    let bytes: Vec<Vec<u8>> = txs.iter().map(|t| t.as_bytes().to_vec()).collect();
    let cache = VerificationCache::new(CHAIN, 4 * BATCH);
    for tx in &txs {
        cache.verify(tx, key.public_key()).expect("valid");
    }

    let simd = SimdCpuBackend::new();
    let prepared = PreparedKey::new(key.public_key(), &simd);
    let context = quasar_app::tx::signing_context(CHAIN);
    let verify_prepared = |i: usize, arithmetic: &dyn BatchArithmetic| {
        let tx = &txs[i];
        prepared
            .verify(tx.body_bytes(), &context, tx.signature(), arithmetic)
            .expect("valid");
    };
    verify_prepared(0, &simd);

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("tx");
    group.bench_function("decode", |b| {
        b.iter(|| SignedTransaction::decode(black_box(&bytes[0])).expect("decode"))
    });
    group.bench_function("verify", |b| {
        b.iter(|| txs[0].verify(CHAIN, key.public_key()).expect("valid"))
    });
    group.bench_function("prepare_key", |b| {
        b.iter(|| PreparedKey::new(black_box(key.public_key()), &simd))
    });
    group.bench_function("verify_prepared", |b| b.iter(|| verify_prepared(0, &simd)));
    group.bench_function("cache_hit", |b| {
        b.iter(|| cache.verify(black_box(&txs[0]), key.public_key()))
    });
    group.finish();
    c.final_summary();

    // Interleaved rounds: µs per transaction of each step, medians over the rounds.
    let time = |f: &mut dyn FnMut(usize)| {
        let start = Instant::now();
        for i in 0..BATCH {
            f(i);
        }
        start.elapsed().as_secs_f64() * 1e6 / BATCH as f64
    };
    let (mut decode, mut verify, mut hit) = (Vec::new(), Vec::new(), Vec::new());
    let (mut prepare, mut reference, mut vector) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        prepare.push(time(&mut |_| {
            black_box(PreparedKey::new(key.public_key(), &simd));
        }));
        reference.push(time(&mut |i| verify_prepared(i, &CpuBackend)));
        vector.push(time(&mut |i| verify_prepared(i, &simd)));
        decode.push(time(&mut |i| {
            black_box(SignedTransaction::decode(&bytes[i]).expect("decode"));
        }));
        verify.push(time(&mut |i| {
            txs[i].verify(CHAIN, key.public_key()).expect("valid");
        }));
        hit.push(time(&mut |i| {
            cache.verify(&txs[i], key.public_key()).expect("valid");
        }));
    }
    let (decode, verify, hit) = (median(decode), median(verify), median(hit));
    let (prepare, reference, vector) = (median(prepare), median(reference), median(vector));
    let simd_row = format!("verify prepared, {} backend", simd.name());
    println!("\n| step | µs per transaction (median of {ROUNDS} rounds) | / verify |");
    println!("|---|---|---|");
    for (name, us) in [
        ("decode", decode),
        ("verify (ML-DSA-65)", verify),
        ("prepare key", prepare),
        ("verify prepared, reference NTT", reference),
        (simd_row.as_str(), vector),
        ("cache hit", hit),
    ] {
        println!("| {name} | {us:.3} | {:.4} |", us / verify);
    }
    let (hits, misses) = cache.counts();
    println!("cache: {hits} hits, {misses} misses (the {BATCH} warm-up checks)");
}
