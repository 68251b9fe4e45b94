//! ML-DSA-65 side by side: key generation, signing and verification in each candidate crate
//! (libcrux-ml-dsa, aws-lc-rs, pqcrypto-mldsa, fips204) and in our wrapper
//! `quasar_crypto::mldsa`, which is how the crate behind the wrapper was chosen (docs/architecture.md §4).
//!
//! ```sh
//! cargo bench -p quasar-bench --bench mldsa --features compare-mldsa
//! # the same with the whole build targeting AVX2 (own target folder, so nothing else rebuilds):
//! RUSTFLAGS="-C target-cpu=x86-64-v3" CARGO_TARGET_DIR=$PWD/target/x86-64-v3 \
//!     cargo bench -p quasar-bench --bench mldsa --features compare-mldsa
//! ```
//!
//! libcrux-ml-dsa (behind `quasar-crypto`) reaches full speed only in the second form: built for
//! the x86-64 baseline, its AVX2 code calls its SIMD intrinsics out of line. The C candidates
//! (aws-lc-rs, pqcrypto-mldsa) compile their AVX2 files with their own flags and dispatch at run
//! time, so the first form favours them.
//!
//! After criterion's own report it prints a Markdown table of medians, each with its ratio to the
//! fastest candidate crate measured in this run (our wrapper is not a candidate, so its ratio is
//! the wrapper's cost over the best library), and writes the same numbers as JSON to
//! `<criterion dir>/mldsa-compare.json`. The target (issue 4) is our verify within 1.2× of the
//! fastest candidate.
//!
//! What is measured:
//! - keygen: KeyGen_internal from a 32-byte seed where the crate offers it; pqcrypto-mldsa only
//!   has `keypair()`, which also draws the seed from the OS.
//! - sign: hedged signing, empty context, a different 32-byte message on every call so that the
//!   number of rejection-loop iterations averages out (a fixed message can hit a lucky
//!   one-iteration case and make a crate look 2× faster than it is).
//! - verify: one fixed message, key and signature, empty context; keys are decoded/parsed
//!   beforehand in every crate, as the node keeps decoded validator keys.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use criterion::Criterion;
use rand::{RngCore, SeedableRng};

/// Number of distinct messages the sign benchmark cycles through.
const MESSAGES: usize = 256;
const SEED: [u8; 32] = [0x5a; 32];
const VERIFY_MSG: &[u8] = b"round digest mu: 32 bytes long!!";

/// One crate's ML-DSA-65, reduced to what the benchmark needs.
trait Candidate: Sized {
    /// Name in the table; a criterion benchmark id, so letters, digits and `-` only.
    const NAME: &'static str;
    /// Whether it is a library candidate (our wrapper is not).
    const CANDIDATE: bool = true;
    type Signature;
    fn keygen(seed: &[u8; 32]) -> Self;
    fn sign(&mut self, msg: &[u8]) -> Self::Signature;
    fn verify(&self, msg: &[u8], sig: &Self::Signature) -> bool;
}

/// `quasar_crypto::mldsa` (the wrapper over the chosen crate).
struct Quasar {
    sk: quasar_crypto::mldsa::SecretKey<quasar_crypto::mldsa::MlDsa65>,
    rng: rand::rngs::StdRng,
}

impl Candidate for Quasar {
    const NAME: &'static str = "quasar-crypto";
    const CANDIDATE: bool = false;
    type Signature = quasar_crypto::mldsa::Signature<quasar_crypto::mldsa::MlDsa65>;
    fn keygen(seed: &[u8; 32]) -> Self {
        Quasar {
            sk: quasar_crypto::mldsa::SecretKey::from_seed(seed),
            rng: rand::rngs::StdRng::seed_from_u64(1),
        }
    }
    fn sign(&mut self, msg: &[u8]) -> Self::Signature {
        self.sk.sign(msg, b"", &mut self.rng).expect("signs")
    }
    fn verify(&self, msg: &[u8], sig: &Self::Signature) -> bool {
        self.sk.public_key().verify(msg, b"", sig).is_ok()
    }
}

/// libcrux-ml-dsa called directly (AVX2 chosen at run time).
struct Libcrux {
    pair: libcrux_ml_dsa::ml_dsa_65::MLDSA65KeyPair,
    rng: rand::rngs::StdRng,
}

impl Candidate for Libcrux {
    const NAME: &'static str = "libcrux-ml-dsa";
    type Signature = libcrux_ml_dsa::ml_dsa_65::MLDSA65Signature;
    fn keygen(seed: &[u8; 32]) -> Self {
        Libcrux {
            pair: libcrux_ml_dsa::ml_dsa_65::generate_key_pair(*seed),
            rng: rand::rngs::StdRng::seed_from_u64(1),
        }
    }
    fn sign(&mut self, msg: &[u8]) -> Self::Signature {
        let mut rnd = [0u8; 32];
        self.rng.fill_bytes(&mut rnd);
        libcrux_ml_dsa::ml_dsa_65::sign(&self.pair.signing_key, msg, b"", rnd).expect("signs")
    }
    fn verify(&self, msg: &[u8], sig: &Self::Signature) -> bool {
        libcrux_ml_dsa::ml_dsa_65::verify(&self.pair.verification_key, msg, b"", sig).is_ok()
    }
}

/// aws-lc-rs (AWS-LC's ML-DSA, C).
struct AwsLc {
    pair: aws_lc_rs::signature::PqdsaKeyPair,
    public: aws_lc_rs::signature::ParsedPublicKey,
}

impl Candidate for AwsLc {
    const NAME: &'static str = "aws-lc-rs";
    type Signature = Vec<u8>;
    fn keygen(seed: &[u8; 32]) -> Self {
        use aws_lc_rs::signature::{KeyPair, ParsedPublicKey, PqdsaKeyPair, ML_DSA_65};
        let pair = PqdsaKeyPair::from_seed(&aws_lc_rs::signature::ML_DSA_65_SIGNING, seed)
            .expect("32-byte seed");
        let public = ParsedPublicKey::new(&ML_DSA_65, pair.public_key().as_ref()).expect("key");
        AwsLc { pair, public }
    }
    fn sign(&mut self, msg: &[u8]) -> Self::Signature {
        let mut sig = vec![0u8; aws_lc_rs::signature::ML_DSA_65_SIGNING.signature_len()];
        let len = self.pair.sign(msg, &mut sig).expect("signs");
        sig.truncate(len);
        sig
    }
    fn verify(&self, msg: &[u8], sig: &Self::Signature) -> bool {
        self.public.verify_sig(msg, sig).is_ok()
    }
}

/// pqcrypto-mldsa (PQClean's AVX2 code, C).
struct Pqclean {
    pk: pqcrypto_mldsa::mldsa65::PublicKey,
    sk: pqcrypto_mldsa::mldsa65::SecretKey,
}

impl Candidate for Pqclean {
    const NAME: &'static str = "pqcrypto-mldsa";
    type Signature = pqcrypto_mldsa::mldsa65::DetachedSignature;
    /// PQClean has no seeded key generation: `keypair()` draws its own seed.
    fn keygen(_seed: &[u8; 32]) -> Self {
        let (pk, sk) = pqcrypto_mldsa::mldsa65::keypair();
        Pqclean { pk, sk }
    }
    fn sign(&mut self, msg: &[u8]) -> Self::Signature {
        pqcrypto_mldsa::mldsa65::detached_sign(msg, &self.sk)
    }
    fn verify(&self, msg: &[u8], sig: &Self::Signature) -> bool {
        pqcrypto_mldsa::mldsa65::verify_detached_signature(sig, msg, &self.pk).is_ok()
    }
}

/// fips204 (pure Rust, no unsafe).
struct Fips204 {
    pk: fips204::ml_dsa_65::PublicKey,
    sk: fips204::ml_dsa_65::PrivateKey,
}

impl Candidate for Fips204 {
    const NAME: &'static str = "fips204";
    type Signature = [u8; fips204::ml_dsa_65::SIG_LEN];
    fn keygen(seed: &[u8; 32]) -> Self {
        use fips204::traits::KeyGen;
        let (pk, sk) = fips204::ml_dsa_65::KG::keygen_from_seed(seed);
        Fips204 { pk, sk }
    }
    fn sign(&mut self, msg: &[u8]) -> Self::Signature {
        use fips204::traits::Signer;
        self.sk.try_sign(msg, b"").expect("signs")
    }
    fn verify(&self, msg: &[u8], sig: &Self::Signature) -> bool {
        use fips204::traits::Verifier;
        self.pk.verify(msg, sig, b"")
    }
}

const OPERATIONS: [&str; 3] = ["keygen", "sign", "verify"];

fn group(op: &str) -> String {
    format!("mldsa65-{op}")
}

/// Registers keygen, sign and verify of one candidate with criterion.
fn bench<C: Candidate>(c: &mut Criterion, names: &mut Vec<(&'static str, bool)>) {
    names.push((C::NAME, C::CANDIDATE));
    let mut rng = rand::rngs::StdRng::seed_from_u64(2);
    let messages: Vec<[u8; 32]> = (0..MESSAGES)
        .map(|_| {
            let mut m = [0u8; 32];
            rng.fill_bytes(&mut m);
            m
        })
        .collect();

    c.benchmark_group(group("keygen"))
        .bench_function(C::NAME, |b| b.iter(|| C::keygen(black_box(&SEED))));

    let mut key = C::keygen(&SEED);
    let mut next = 0;
    c.benchmark_group(group("sign"))
        .bench_function(C::NAME, |b| {
            b.iter(|| {
                next = (next + 1) % MESSAGES;
                key.sign(black_box(&messages[next]))
            })
        });

    let sig = key.sign(VERIFY_MSG);
    assert!(
        key.verify(VERIFY_MSG, &sig),
        "{} rejects its own signature",
        C::NAME
    );
    assert!(
        !key.verify(b"another message", &sig),
        "{} accepts a wrong message",
        C::NAME
    );
    c.benchmark_group(group("verify"))
        .bench_function(C::NAME, |b| {
            b.iter(|| key.verify(black_box(VERIFY_MSG), black_box(&sig)))
        });
}

/// Where criterion writes its estimates: `$CRITERION_HOME`, else `$CARGO_TARGET_DIR/criterion`,
/// else the workspace's `target/criterion`. Set explicitly so the summary reads the same place.
fn criterion_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(home);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    // The target folder exists (cargo built this benchmark into it); tidy the `..` away.
    target.canonicalize().unwrap_or(target).join("criterion")
}

/// Median time in nanoseconds of one benchmark of this run, from criterion's `estimates.json`;
/// `None` when it was not run (filtered out) since `run_start`.
fn median_ns(run: &Run, op: &str, name: &str) -> Option<f64> {
    let path = run
        .dir
        .join(group(op))
        .join(name)
        .join("new/estimates.json");
    if std::fs::metadata(&path).ok()?.modified().ok()? < run.start {
        return None;
    }
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    json["median"]["point_estimate"].as_f64()
}

/// This run: where criterion writes, and when the run started.
struct Run {
    dir: PathBuf,
    start: SystemTime,
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

/// Prints the Markdown table and writes `mldsa-compare.json`.
fn summarize(run: &Run, names: &[(&'static str, bool)]) {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "\nML-DSA-65, median per operation ({}, {cores} cores); ratio = time / fastest candidate crate\n",
        cpu_model()
    );
    println!("| crate | keygen | sign | verify |");
    println!("|---|---|---|---|");
    let fastest: Vec<Option<f64>> = OPERATIONS
        .iter()
        .map(|op| {
            names
                .iter()
                .filter(|(_, candidate)| *candidate)
                .filter_map(|(name, _)| median_ns(run, op, name))
                .min_by(f64::total_cmp)
        })
        .collect();
    let mut rows = Vec::new();
    for &(name, candidate) in names {
        let mut cells = Vec::new();
        let mut record = serde_json::Map::new();
        record.insert("crate".into(), name.into());
        record.insert("candidate".into(), candidate.into());
        for (op, best) in OPERATIONS.iter().zip(&fastest) {
            match (median_ns(run, op, name), best) {
                (Some(ns), Some(best)) => {
                    cells.push(format!("{:.1} µs ({:.2}×)", ns / 1e3, ns / best));
                    record.insert(format!("{op}_median_ns"), ns.into());
                    record.insert(format!("{op}_ratio_to_fastest"), (ns / best).into());
                }
                _ => cells.push("–".into()),
            }
        }
        println!("| {name} | {} |", cells.join(" | "));
        rows.push(serde_json::Value::Object(record));
    }
    let summary = serde_json::json!({
        "benchmark": "mldsa65 keygen/sign/verify",
        "machine": { "cpu": cpu_model(), "cores": cores },
        "rows": rows,
    });
    let out = run.dir.join("mldsa-compare.json");
    match std::fs::write(
        &out,
        serde_json::to_string_pretty(&summary).unwrap_or_default(),
    ) {
        Ok(()) => println!("\nwritten to {}", out.display()),
        Err(e) => eprintln!("could not write {}: {e}", out.display()),
    }
}

fn main() {
    let run = Run {
        dir: criterion_dir(),
        start: SystemTime::now(),
    };
    let mut c = Criterion::default()
        .output_directory(&run.dir)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let mut names = Vec::new();
    bench::<Quasar>(&mut c, &mut names);
    bench::<Libcrux>(&mut c, &mut names);
    bench::<AwsLc>(&mut c, &mut names);
    bench::<Pqclean>(&mut c, &mut names);
    bench::<Fips204>(&mut c, &mut names);
    c.final_summary();
    summarize(&run, &names);
}
