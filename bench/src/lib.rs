//! Benchmarks for Quasar (DESIGN.md §1, §9).
//!
//! This crate will hold the criterion micro-benchmarks and the `quasar-bench` binary (lanes, cert,
//! bls-batch, zap and finality subcommands), each printing a Markdown table and writing JSON
//! records with ratios against a baseline measured in the same run.
//!
//! Built so far: [`summary`], the ratio summary the criterion benches (`bls`, `groth16`) print
//! after their groups. The end-to-end number that exists today is the one printed by
//! `quasar-node testnet` (blocks per second, finality p50/p99, finalized transactions).
#![forbid(unsafe_code)]

pub mod summary;
