//! The Quasar validator node (DESIGN.md §1, §2).
//!
//! - [`consensus`]: the pure consensus state machine and message verification;
//! - [`signer`]: votes and proposals signed behind the durable signing guard;
//!   [`guard_history`]: the guard's history as a JSON document (export, import, inspect);
//! - [`engine`]: one validator's core, signer and store, and the order in which consensus
//!   actions touch them (shared by the runtime and the simulator);
//! - [`runtime`]: the tokio process around the core (QUIC via [`p2p`], sled storage, timers);
//! - [`relay`]: recent signed messages relayed to peers on request, so a validator sees
//!   another process signing with its key;
//! - [`mempool`], [`sync`], [`api`] (HTTP admin API), [`metrics`], [`config`] (keys, genesis,
//!   `node.toml`), [`init`] (a commented starting `node.toml`); [`build_info`]: version, commit and process metrics of both binaries;
//!   [`http_serve`]: the HTTP/1.1 transport of both, with its bounds on slow clients;
//! - [`sim`]: a seeded simulation of a validator network around the same core;
//! - [`testnet`]: the multi-process local network behind `quasar-node testnet`.
//! - [`thresholdd`]: the signing daemon behind the `thresholdd` binary; [`process`]: logging,
//!   runtime and shutdown signal of both binaries.
//! - [`rollup`], [`rollup_job`]: the Groth16 rollup commands, and the signature collection and
//!   asynchronous proving the node runs per window.
//! - [`quasar`], [`quasar_service`]: Quasar finality: bundles of finalized blocks, their legs,
//!   and the QuasarCerts that complete them.
#![forbid(unsafe_code)]

pub mod api;
pub mod build_info;
pub mod ceremony;
pub mod config;
pub mod consensus;
pub mod engine;
pub mod fuzzing;
pub mod guard_history;
pub mod http_serve;
pub mod init;
pub mod key_file;
pub mod mempool;
pub mod metrics;
pub mod p2p;
pub mod process;
pub mod quasar;
pub mod quasar_service;
pub mod relay;
pub mod remote_signer;
pub mod rollup;
pub mod rollup_job;
pub mod runtime;
pub mod sealing;
pub mod signer;
pub mod sim;
pub mod sync;
pub mod testnet;
pub mod thresholdd;
