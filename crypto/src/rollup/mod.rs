//! The Groth16 rollup of validator ML-DSA signatures (issue 6, docs/architecture.md §4): R1CS gadgets over
//! the BLS12-381 scalar field and, built on them, the circuit proving that a quorum of the
//! epoch's validators signed the round digest with their ML-DSA identity keys.
//!
//! - [`keccak`]: Keccak-f\[1600\] and SHAKE256 on bits (FIPS 202), the hash every ML-DSA
//!   verification computes in-circuit (μ' = H(tr ‖ M'), SampleInBall, c̃ = H(μ' ‖ w1Encode(w1)));
//! - [`poseidon`]: Poseidon (`poseidonperm_x5_255_3`) natively and in-circuit, the hash of the
//!   commitment h_x to the epoch's validator keys;
//! - [`gadgets`]: linear combinations, bit decompositions, lazy reduction mod q;
//! - [`native`]: FIPS 204 verification decomposed into the values the circuit recomputes
//!   (expanded key, decoded signature, μ, c, w'_Approx, w1', c̃'): its reference and witness
//!   generator;
//! - [`verify`]: the in-circuit FIPS 204 verification of one signature;
//! - [`circuit`]: the rollup statement (μ, h_x), its witness and circuit;
//! - [`prover`]: development setup, proving-key files, and our Groth16 prover on the
//!   batched-arithmetic trait ([`crate::accel`]);
//! - [`test_circuit`]: a small circuit with the same public-input shape for tests and
//!   benchmarks.
//!
//! The verifier is the Groth16 lane of `quasar-lanes`.

pub mod circuit;
pub mod gadgets;
pub mod keccak;
pub mod native;
pub mod poseidon;
pub mod prover;
pub mod test_circuit;
pub mod verify;
