//! The Quasar validator node (docs/architecture.md §1, §2).
//!
//! - the pure consensus state machine and message verification live in [`quasar_consensus`];
//! - [`signer`]: votes and proposals signed behind the durable signing guard (its history as
//!   a JSON document is `quasar_chainspec::guard_history`);
//! - [`engine`]: one validator's core, signer and store, and the order in which consensus
//!   actions touch them (shared by the runtime and the simulator);
//! - [`runtime`]: the tokio process around the core (QUIC via [`quasar_p2p`], sled storage, timers);
//! - [`relay`]: recent signed messages relayed to peers on request, so a validator sees
//!   another process signing with its key;
//! - [`mempool`], [`sync`], [`api`] (HTTP admin API, over the read-only [`api::NodeView`]
//!   that [`view`] implements for the runtime's state), [`metrics`], [`config`] (`node.toml`;
//!   key files, genesis and the dealer are [`quasar_chainspec`]'s), [`init`] (a commented
//!   starting `node.toml`); what both binaries share as processes (logging, signals, build
//!   identity, the bounded HTTP/1.1 listener) is in [`quasar_process`];
//! - [`sim`]: a seeded simulation of a validator network around the same core;
//! - `testnet` (feature `testnet`, on by default, off in a validator's production build): the
//!   multi-process local network behind `quasar-node testnet`; `fuzzing` (feature `fuzzing`):
//!   the `node/fuzz` targets' entry points.
//! - [`rollup`], [`rollup_job`]: the Groth16 rollup commands, and the signature collection and
//!   asynchronous proving the node runs per window.
//! - [`quasar`], [`quasar_service`]: Quasar finality: bundles of finalized blocks, their legs,
//!   and the QuasarCerts that complete them.
#![forbid(unsafe_code)]

pub mod api;
pub mod application;
pub mod ceremony;
pub mod config;
pub mod engine;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod init;
pub mod light;
pub mod mempool;
pub mod metrics;
pub mod peers;
pub mod quasar;
pub mod quasar_service;
pub mod relay;
pub mod remote_signer;
pub mod rollup;
pub mod rollup_job;
pub mod runtime;
pub mod signer;
pub mod sim;
pub mod state_sync;
pub mod sync;
#[cfg(feature = "testnet")]
pub mod testnet;
pub mod view;
pub mod wallet;
