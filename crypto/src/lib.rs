//! Cryptographic primitives of Quasar (docs/architecture.md §1, §4).
//!
//! - [`hash`]: SHA3-256 (FIPS 202) and the project's domain-separated [`hash::tagged_hash`].
//! - [`bls`]: BLS12-381 min-pk signatures on `blst`, proof-of-possession ciphersuite of
//!   draft-irtf-cfrg-bls-signature-05. A [`bls::PublicKey`] or [`bls::Signature`] that exists has
//!   passed its subgroup check and is not the identity point. Also aggregate keys, AggregateVerify
//!   and randomized batch verification of independent signatures with bisection.
//! - [`bls_threshold`]: t-of-n threshold BLS on the same min-pk scheme (Shamir shares from a
//!   trusted dealer, Lagrange combination in G2, Boldyreva 2003): the combined signature is a
//!   standard BLS signature under the group key.
//! - [`bls_cache`]: the pubkey decompression cache (2048 buckets × 2 ways, FNV-1a-64, round-robin
//!   eviction), shared across threads, with hit/miss/eviction counters.
//! - [`mldsa`]: ML-DSA-44/65/87 (FIPS 204) on `libcrux-ml-dsa`: key generation from a 32-byte
//!   seed, hedged and deterministic signing and verification with context strings. ML-DSA-65 is
//!   the validator identity key.
//! - [`magnetar`]: SLH-DSA-SHAKE-192f/192s (FIPS 205) on `fips205`: per-validator keys expanded
//!   from a 32-byte seed, hedged and deterministic signing and verification with context strings
//!   (the Magnetar certificate leg's primitive).
//! - [`pulsar`]: threshold ML-DSA-65 with standard FIPS 204 output ("Threshold Signatures
//!   Reloaded", ePrint 2025/1166): dealer keygen with replicated short shares, three signing
//!   rounds with hyperball rejection, combine with blame, stake-sampled committees.
//! - [`corona`]: the Corona (Ringtail) lattice threshold signature: ring and NTT, samplers, hash
//!   suite, dealer keygen, the two signing rounds, combine, verify, compact encodings.
//! - [`accel`]: the acceleration seam: batched Corona NTTs and pointwise products, BLS12-381
//!   scalar-field NTTs and G1/G2 MSMs behind the [`accel::BatchArithmetic`] trait (the `gpu`
//!   crate implements it), with [`accel::CpuBackend`].
//! - [`rollup`]: the Groth16 rollup of validator ML-DSA signatures: gadgets (Keccak/SHAKE256,
//!   Poseidon, mod-q arithmetic), the in-circuit FIPS 204 verification, the circuit, the
//!   development setup and our prover on the [`accel`] seam.
//! - [`tls_identity`]: a validator's QUIC/TLS identity (an Ed25519 key and its self-signed
//!   certificate), which the genesis pins.
//! - `fuzzing` (feature `fuzzing`, off in a production build): entry points of the `crypto/fuzz`
//!   targets (BLS, threshold BLS, ML-DSA, Corona, Pulsar and proving-key decoders).
//!
//! This crate depends on nothing else in the workspace; consensus, wire and storage depend on it.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

pub mod accel;
pub mod bls;
pub mod bls_cache;
pub mod bls_threshold;
pub mod corona;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod hash;
pub mod magnetar;
pub mod mldsa;
pub mod mlkem;
pub mod pulsar;
pub mod rollup;
pub mod tls_identity;
