//! BLS benchmarks (issue 4): certificate verification and batch verification, with the ratios the
//! issue sets as targets measured in the same run.
//!
//! Run: `cargo bench -p quasar-bench --bench bls`. Criterion groups (reports under
//! `target/criterion/`):
//!
//! - `bls_single_verify/from_bytes`: one vote as it arrives, a 96-byte signature decoded
//!   (subgroup check) and verified against a key from the validator table. `…/decoded`: the
//!   pairing check alone, on an already decoded signature.
//! - `bls_cert_cached/{21,100,1024}`: `quasar_lanes::bls::verify_aggregate` on a certificate
//!   signed by all `n` validators of an `n`-validator set (keys from the set's table).
//!   `bls_cert_cached_quorum/1024`: the same with 683 of 1024 signers (the smallest quorum of equal
//!   stakes), so the 341 non-signers' keys are summed and subtracted from the set's total.
//! - `bls_cert_cold/{21,100,1024}`: `verify_aggregate_compressed` with an empty pubkey cache, so
//!   every one of the `n` keys is decompressed and subgroup-checked.
//! - `bls_cert_flat/{21,100,1024}`: the baseline without aggregation, every signer's own
//!   signature decoded and verified one at a time.
//! - `bls_batch128/{batch,one_by_one,one_by_one_all_cores}`: 128 signatures on 128 distinct
//!   messages by 128 signers, through `batch_verify` (which spreads its Miller loops over the
//!   cores), one `verify` after another, and one `verify` after another split over the same cores.
//!
//! Then a summary step times the workloads behind the ratios again, each ratio from its
//! two workloads timed back to back in one round (so that load from other processes falls on both
//! alike), and prints the medians over the rounds as a table and as JSON in
//! `target/criterion/bls-summary.json`. To run only the summary, pass a filter that matches no
//! group: `cargo bench -p quasar-bench --bench bls -- summary-only`.

use criterion::{BatchSize, BenchmarkId, Criterion, SamplingMode};
use quasar_bench::summary::{report, run_with_summary, time, Samples, Target};
use quasar_crypto::bls::{batch_verify, PublicKey, SecretKey, Signature};
use quasar_crypto::bls_cache::PublicKeyCache;
use quasar_lanes::bls::{bitmap_from_signers, verify_aggregate, verify_aggregate_compressed};
use quasar_lanes::{Validator, ValidatorSet};

/// Signer counts of the certificate benchmarks.
const SIZES: [usize; 3] = [21, 100, 1024];
/// The largest size, where the targets are set.
const N: usize = 1024;
/// Signatures in the batch-verification benchmark.
const BATCH: usize = 128;
/// The round digest every certificate signs.
const DIGEST: &[u8] = b"quasar bench round digest, 32 B!";

/// Validator `i`'s secret key, from a seed that only this benchmark uses.
fn secret_key(i: usize) -> SecretKey {
    let mut seed = [0x5au8; 32];
    seed[..8].copy_from_slice(&(i as u64).to_le_bytes());
    SecretKey::from_seed(&seed)
}

/// Everything the benchmarks verify, built once.
struct Fixture {
    public_keys: Vec<PublicKey>,
    compressed: Vec<[u8; 48]>,
    /// Each validator's own signature on [`DIGEST`], compressed.
    signatures: Vec<[u8; 96]>,
    decoded: Vec<Signature>,
    /// Validator `i < BATCH`'s message `vote i` and its signature on it.
    vote_messages: Vec<Vec<u8>>,
    votes: Vec<Signature>,
}

/// A certificate over [`DIGEST`] with its validator set.
struct Cert {
    set: ValidatorSet,
    bitmap: Vec<u8>,
    aggregate: [u8; 96],
}

impl Fixture {
    fn new() -> Fixture {
        let secret_keys: Vec<SecretKey> = (0..N).map(secret_key).collect();
        let decoded: Vec<Signature> = secret_keys.iter().map(|sk| sk.sign(DIGEST)).collect();
        let vote_messages: Vec<Vec<u8>> = (0..BATCH)
            .map(|i| format!("vote {i}").into_bytes())
            .collect();
        let votes = secret_keys
            .iter()
            .zip(&vote_messages)
            .map(|(sk, m)| sk.sign(m))
            .collect();
        let public_keys: Vec<PublicKey> = secret_keys.iter().map(SecretKey::public_key).collect();
        Fixture {
            compressed: public_keys.iter().map(PublicKey::to_bytes).collect(),
            signatures: decoded.iter().map(Signature::to_bytes).collect(),
            public_keys,
            decoded,
            vote_messages,
            votes,
        }
    }

    /// The aggregate of the first `signers` validators' signatures on [`DIGEST`], compressed.
    fn aggregate(&self, signers: usize) -> [u8; 96] {
        Signature::aggregate(&self.decoded[..signers])
            .expect("non-empty")
            .to_bytes()
    }

    /// A certificate by the first `signers` of a set of the first `n` validators, stake 1 each.
    fn cert(&self, n: usize, signers: usize) -> Cert {
        let validators = self.public_keys[..n]
            .iter()
            .map(|&public_key| Validator {
                public_key,
                stake: 1,
            })
            .collect();
        Cert {
            set: ValidatorSet::new(validators).expect("valid set"),
            bitmap: bitmap_from_signers(0..signers, n),
            aggregate: self.aggregate(signers),
        }
    }

    /// The batch items: `(key, message, signature)` of the first [`BATCH`] validators' votes.
    fn votes(&self) -> Vec<(&PublicKey, &[u8], &Signature)> {
        self.public_keys
            .iter()
            .zip(&self.vote_messages)
            .zip(&self.votes)
            .map(|((pk, m), s)| (pk, m.as_slice(), s))
            .collect()
    }

    fn single_from_bytes(&self) {
        let sig = Signature::from_bytes(&self.signatures[0]).expect("valid");
        self.public_keys[0].verify(DIGEST, &sig).expect("verifies");
    }

    fn single_decoded(&self) {
        self.public_keys[0]
            .verify(DIGEST, &self.decoded[0])
            .expect("verifies");
    }

    /// The cold-key path on the first `n` keys, through `cache` (empty for a cold run).
    fn cert_cold(&self, cache: &PublicKeyCache, n: usize, aggregate: &[u8; 96]) {
        verify_aggregate_compressed(cache, &self.compressed[..n], DIGEST, aggregate)
            .expect("verifies");
    }

    /// The flat baseline: the first `n` signatures, each decoded and verified on its own.
    fn cert_flat(&self, n: usize) {
        for (pk, bytes) in self.public_keys[..n].iter().zip(&self.signatures) {
            let sig = Signature::from_bytes(bytes).expect("valid");
            pk.verify(DIGEST, &sig).expect("verifies");
        }
    }
}

fn cert_cached(cert: &Cert) {
    verify_aggregate(&cert.set, &cert.bitmap, DIGEST, &cert.aggregate).expect("verifies");
}

fn one_by_one(items: &[(&PublicKey, &[u8], &Signature)]) {
    for (pk, m, s) in items {
        pk.verify(m, s).expect("verifies");
    }
}

/// One `verify` after another, the items split evenly over all cores.
fn one_by_one_all_cores(items: &[(&PublicKey, &[u8], &Signature)]) {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|scope| {
        for part in items.chunks(items.len().div_ceil(threads)) {
            scope.spawn(move || one_by_one(part));
        }
    })
}

fn bench_bls(c: &mut Criterion, f: &Fixture) {
    let mut g = c.benchmark_group("bls_single_verify");
    g.bench_function("from_bytes", |b| b.iter(|| f.single_from_bytes()));
    g.bench_function("decoded", |b| b.iter(|| f.single_decoded()));
    g.finish();

    let mut g = c.benchmark_group("bls_cert_cached");
    for n in SIZES {
        let cert = f.cert(n, n);
        g.bench_with_input(BenchmarkId::from_parameter(n), &cert, |b, cert| {
            b.iter(|| cert_cached(cert))
        });
    }
    g.finish();

    let mut g = c.benchmark_group("bls_cert_cached_quorum");
    let cert = f.cert(N, N * 2 / 3 + 1);
    g.bench_with_input(BenchmarkId::from_parameter(N), &cert, |b, cert| {
        b.iter(|| cert_cached(cert))
    });
    g.finish();

    let mut g = c.benchmark_group("bls_cert_cold");
    for n in SIZES {
        let aggregate = f.aggregate(n);
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            b.iter_batched_ref(
                PublicKeyCache::new,
                |cache| f.cert_cold(cache, n, &aggregate),
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();

    // About a second per iteration at n = 1024: flat sampling (one iteration per sample).
    let mut g = c.benchmark_group("bls_cert_flat");
    g.sampling_mode(SamplingMode::Flat);
    for n in SIZES {
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            b.iter(|| f.cert_flat(n))
        });
    }
    g.finish();

    let items = f.votes();
    let mut g = c.benchmark_group("bls_batch128");
    g.sampling_mode(SamplingMode::Flat);
    g.bench_function("batch", |b| {
        b.iter(|| batch_verify(&items).expect("all valid"))
    });
    g.bench_function("one_by_one", |b| b.iter(|| one_by_one(&items)));
    g.bench_function("one_by_one_all_cores", |b| {
        b.iter(|| one_by_one_all_cores(&items))
    });
    g.finish();
}

/// The reported ratios with the targets: (ratio, target, true when the ratio must be at
/// most the target). The last row has no target: it compares the batch with one-by-one
/// verification given the same cores, the algorithmic gain alone.
const TARGETS: [Target; 7] = [
    (
        "cert cached n=1024 / single verify (from bytes)",
        Some(1.3),
        true,
    ),
    (
        "cert cached n=1024 / single verify (decoded)",
        Some(1.3),
        true,
    ),
    (
        "cert cached 683 of 1024 / single verify (from bytes)",
        Some(1.3),
        true,
    ),
    ("flat / cached, n=1024", Some(500.0), false),
    ("cold / cached, n=1024", Some(20.0), false),
    ("one by one / batch, 128 messages", Some(3.0), false),
    ("one by one on all cores / batch, 128 messages", None, false),
];

/// Times the workloads behind the ratios, each ratio from its two workloads timed back to
/// back in one round (so that load from other processes falls on both alike), and prints and
/// writes the medians over the rounds.
fn summary(f: &Fixture) {
    let full = f.cert(N, N);
    let quorum = f.cert(N, N * 2 / 3 + 1);
    let items = f.votes();
    let (mut ms, mut ratios) = (Samples::default(), Samples::default());
    for _ in 0..40 {
        let single = time(5, || f.single_from_bytes());
        let decoded = time(5, || f.single_decoded());
        let cached = time(5, || cert_cached(&full));
        let quorum = time(5, || cert_cached(&quorum));
        ms.push("single verify (from bytes)", single * 1e3);
        ms.push("single verify (decoded)", decoded * 1e3);
        ms.push("cert cached n=1024", cached * 1e3);
        ms.push("cert cached 683 of 1024", quorum * 1e3);
        ratios.push(TARGETS[0].0, cached / single);
        ratios.push(TARGETS[1].0, cached / decoded);
        ratios.push(TARGETS[2].0, quorum / single);
    }
    for _ in 0..5 {
        let before = time(10, || cert_cached(&full));
        // A fresh cache per call; building it (zeroed memory) is part of the cold cost here.
        let cold = time(1, || {
            f.cert_cold(&PublicKeyCache::new(), N, &full.aggregate)
        });
        let flat = time(1, || f.cert_flat(N));
        let cached = (before + time(10, || cert_cached(&full))) / 2.0;
        ms.push("cert cold n=1024", cold * 1e3);
        ms.push("cert flat n=1024", flat * 1e3);
        ratios.push(TARGETS[3].0, flat / cached);
        ratios.push(TARGETS[4].0, cold / cached);
    }
    for _ in 0..9 {
        let batch = time(1, || batch_verify(&items).expect("all valid"));
        let serial = time(1, || one_by_one(&items));
        let all_cores = time(1, || one_by_one_all_cores(&items));
        ms.push("batch verify, 128 messages", batch * 1e3);
        ms.push("one by one, 128 messages", serial * 1e3);
        ms.push("one by one on all cores, 128 messages", all_cores * 1e3);
        ratios.push(TARGETS[5].0, serial / batch);
        ratios.push(TARGETS[6].0, all_cores / batch);
    }

    report(
        "BLS",
        ("ms", "ms", 3),
        &ms,
        &ratios,
        &TARGETS,
        "bls-summary.json",
    );
}

fn main() {
    let f = Fixture::new();
    run_with_summary(|c| bench_bls(c, &f), || summary(&f));
}
