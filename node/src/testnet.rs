//! A local multi-process testnet: N `quasar-node run` processes on loopback, driven and measured
//! through their HTTP admin API ([`crate::api`]). It backs the `quasar-node testnet` subcommand and
//! the process-level tests (`node/tests/testnet_process.rs`).
//!
//! # Layout on disk
//!
//! ```text
//! DIR/genesis.json            chain id 1, genesis time = creation time, stake 100 per validator
//! DIR/v{i}/validator.key.json secret keys of validator i, encrypted under its passphrase (mode
//!                             0600, `quasar_chainspec::keygen_with_set`, `quasar_chainspec::key_file`)
//! DIR/v{i}/validator.passphrase  that passphrase (mode 0600, random; node.toml's
//!                             key_passphrase_file)
//! DIR/v{i}/validator.pub.json its public keys
//! DIR/v{i}/node.toml          data_dir "data", key_dir ".", genesis "../genesis.json", loopback
//!                             ports, every other validator as a peer (relative paths, so DIR can
//!                             be moved)
//! DIR/v{i}/node.log           stdout and stderr of every process started for validator i
//! DIR/v{i}/data/              the node's store and signing guard (kept across restarts)
//! ```
//!
//! With remote signers ([`Testnet::use_remote_signers`], `testnet --remote-signers`) each
//! validator also has a thresholdd that signs its votes (`signer = "remote"` in its
//! `node.toml`):
//!
//! ```text
//! DIR/v{i}/thresholdd/            the daemon's keystore (the validator's BLS key, imported with
//!                                 `thresholdd keys import-validator`) and its signing guard
//! DIR/v{i}/thresholdd.token       its bearer token (mode 0600, random; node.toml's token_file)
//! DIR/v{i}/thresholdd.passphrase  its keystore passphrase (mode 0600, random)
//! DIR/v{i}/thresholdd.log         its stdout and stderr
//! ```
//!
//! # What [`run`] measures
//!
//! 1. Create the network, start every validator, wait until each answers `GET /status` (30 s).
//! 2. Submit signed transfers at `tx_rate` per second until the first validator reaches height
//!    `blocks`: each sending account goes to one validator, in batches (`POST /txs`, at most
//!    512 transactions), one batch in flight per validator so that an account's nonces arrive
//!    in order; a transaction pushed back (`503`, `429`) is sent again before newer ones, after
//!    the `Retry-After` the node asked for. The
//!    report counts separately what the rate offered (`txs_offered`), what was sent
//!    (`txs_sent`: fewer when the transfers signed before the validators started ran out, or
//!    the one-batch-in-flight rule held the client back), what a node accepted (`200`), pushed back without a later acceptance
//!    (`txs_pushed_back`), rejected (another answer) or never answered (`txs_failed`).
//! 3. Wait (60 s + 3 × `blocks` × block time) until every validator's finalized height is at least
//!    `blocks` and every accepted transaction is finalized (`GET /tx/{hash}` on validator 0,
//!    pending ones re-checked every 200 ms). If only transactions are missing when the time is up,
//!    the report says so (`txs_finalized < txs_accepted`); missing heights are an error.
//! 4. Unless the profile is `hybrid-…` (whose late bundles expire anyway), wait until every
//!    validator reports Quasar finality unavailable or a Quasar-finalized height at the last
//!    bundle boundary at or below `blocks` (the genesis `bundle_size` times
//!    ⌊`blocks` / `bundle_size`⌋, or above 0 when no bundle closes by `blocks`): at most
//!    [`QUASAR_WAIT`]. With a rollup prover ([`TestnetOptions::rollup_setup`],
//!    [`Testnet::add_rollup`]), whose proofs take minutes each, the first certified bundle is
//!    enough, within [`ROLLUP_QUASAR_WAIT`]. Running out of time is not an error; the report
//!    shows the heights reached.
//! 5. Read `GET /block/h` for `h = 1..=blocks` from every validator:
//!    - `agreement`: every validator returns the same block hash at every height it still
//!      holds (a height it pruned, `410 Gone`, is left out for it);
//!    - finality samples: `finalized_at_us − timestamp_us` for each (validator, block), in ms,
//!      i.e. from the proposer stamping the block to that validator seeing its finalize quorum.
//!      All processes share the host clock, so the difference is meaningful; p50/p99 use the
//!      nearest-rank definition ([`nearest_rank`]);
//!    - `blocks_per_sec = blocks / (latest finalized_at_us of block `blocks` − timestamp_us of
//!      block 1)`, and `tps_finalized` the transactions of blocks `1..=blocks` over the same
//!      span (the blocks finalized after it, as the run drains, are left out of the rate);
//!    - `cpu_us_per_tx`: validator 0's process CPU time while the load ran (read before the
//!      first batch and when a validator reached `blocks`) over the transactions of blocks
//!      `1..=blocks`.
//!
//! Progress goes to stderr; the report is returned to the caller (the CLI prints it as one JSON
//! line on stdout). A temporary directory is removed after a passing run and kept (its path
//! printed) after a failing one.
//!
//! Processes are stopped with SIGKILL ([`std::process::Child::kill`]), never gracefully: a killed
//! validator must come back from its durable state alone (docs/architecture.md §2, signing guard).

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::fs::OpenOptions;
use std::io::Write;
use std::net::{IpAddr, SocketAddr, TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::task::JoinSet;
use tokio::time::{sleep, Instant};

use crate::config::{ApiConfig, NodeConfig, PeerConfig, RemoteSignerConfig, SignerMode};
use crate::rollup::{self, RollupCommandError, PROVING_KEY_FILE, VERIFYING_KEY_FILE};
use quasar_chainspec::{ConfigError, GenesisFile};
pub use quasar_client::{
    BatchSubmitted, BlockInfo, CertificateInfo, Client, ClientError, FinalityInfo, Readiness,
    Status, Submitted, TxInfo, TxStatus,
};
use quasar_crypto::magnetar::ParameterSet;
use quasar_lanes::cert::Profile;
use quasar_process::now_us;
use quasar_wire::LegKind;

/// Stake of each testnet validator.
pub const STAKE: u64 = 100;
/// Most validators a local testnet starts (every validator is a process on this machine, and the
/// protocol gossips all-to-all up to 128 validators).
pub const MAX_VALIDATORS: usize = 128;

/// The testnet as its own trusted dealer: deals the threshold keys `profile` needs (none for a
/// profile without threshold legs) to the validators numbered `roster` (in the genesis's roster
/// order) under `dir`. Errors: [`quasar_chainspec::deal`]'s.
fn deal_keys(
    dir: &Path,
    roster: &[usize],
    genesis: &mut GenesisFile,
    profile: Profile,
    existing: quasar_chainspec::Existing,
) -> Result<(), TestnetError> {
    let which = quasar_chainspec::DealtLegs::for_profile(profile);
    if !which.corona && !which.pulsar {
        return Ok(());
    }
    let dirs: Vec<PathBuf> = roster.iter().map(|&v| node_dir(dir, v)).collect();
    let accesses = dirs
        .iter()
        .map(|d| key_access(d))
        .collect::<Result<Vec<_>, _>>()?;
    quasar_chainspec::deal(
        &dirs,
        genesis,
        which,
        existing,
        &accesses,
        &mut rand::rngs::OsRng,
    )?;
    Ok(())
}

/// Checks validator sets for [`Testnet::set_validator_sets`] among `validators` validators
/// before anything is made: the first set is epoch 0's, epochs increase, every set is non-empty
/// with members in range and none twice, and every validator is in some set (a validator in
/// none would have no identity on the network). Errors: [`TestnetError::Options`] naming the
/// set and what is wrong.
fn check_validator_sets(sets: &[(u64, Vec<usize>)], validators: usize) -> Result<(), TestnetError> {
    let refuse = |why: String| Err(TestnetError::Options(format!("validator sets: {why}")));
    match sets.first() {
        Some((0, _)) => {}
        Some((epoch, _)) => {
            return refuse(format!("the first set is epoch {epoch}'s, not epoch 0's"))
        }
        None => return refuse("none given".into()),
    }
    let mut seen = vec![false; validators];
    for (k, (epoch, members)) in sets.iter().enumerate() {
        if k > 0 && *epoch <= sets[k - 1].0 {
            return refuse(format!(
                "epoch {epoch} follows epoch {}: sets go by increasing epoch",
                sets[k - 1].0
            ));
        }
        if members.is_empty() {
            return refuse(format!("the set of epoch {epoch} is empty"));
        }
        for (i, &v) in members.iter().enumerate() {
            if v >= validators {
                return refuse(format!(
                    "the set of epoch {epoch} names validator {v}; validators are 0 to {}",
                    validators - 1
                ));
            }
            if members[..i].contains(&v) {
                return refuse(format!(
                    "the set of epoch {epoch} names validator {v} twice"
                ));
            }
            seen[v] = true;
        }
    }
    if let Some(missing) = seen.iter().position(|&s| !s) {
        return refuse(format!(
            "validator {missing} is in no set (every validator must be in at least one)"
        ));
    }
    Ok(())
}

fn check_shape(validators: usize, block_time_ms: u64) -> Result<(), TestnetError> {
    if !(1..=MAX_VALIDATORS).contains(&validators) {
        return Err(TestnetError::Options(format!(
            "validators must be in 1..={MAX_VALIDATORS}, got {validators}"
        )));
    }
    // A node's default view timeout, twice the block time and a second, must stay within the
    // node's own bound on times (crate::config).
    let max = (crate::config::MAX_TIME_MS - 1000) / 2;
    if !(1..=max).contains(&block_time_ms) {
        return Err(TestnetError::Options(format!(
            "block_time_ms must be in 1..={max}, got {block_time_ms}"
        )));
    }
    Ok(())
}
/// How far after creation the testnet's genesis time lies (µs): no block is proposed before
/// genesis time + block time, so process start-up is not counted as finality latency.
pub const GENESIS_DELAY_US: u64 = 2_000_000;
/// Default number of validators of the `testnet` subcommand.
pub const DEFAULT_VALIDATORS: usize = 4;
/// Default target height of the `testnet` subcommand.
pub const DEFAULT_BLOCKS: u64 = 20;
/// Default minimum time between blocks, milliseconds.
pub const DEFAULT_BLOCK_TIME_MS: u64 = 500;
/// Default transaction rate, transactions per second.
pub const DEFAULT_TX_RATE: f64 = 100.0;
/// Default genesis cert profile of the `testnet` subcommand: `aurora` (BLS + Pulsar + Corona),
/// the post-quantum profile that reaches Quasar finality with no setup step. The chain's
/// default, `quasar`, also needs Groth16 rollup keys, whose single-party setup takes minutes
/// and gigabytes (`--rollup-setup`), so a first run under it would show Nova finality only.
pub const DEFAULT_PROFILE: Profile = Profile::Aurora;
/// Genesis file name inside the testnet directory.
pub const GENESIS_FILE: &str = "genesis.json";
/// Node config file name inside a validator's directory.
pub const NODE_CONFIG_FILE: &str = "node.toml";
/// Log file name inside a validator's directory.
pub const NODE_LOG_FILE: &str = "node.log";

/// How long [`run`] waits for every validator's API to answer after starting them.
pub const API_READY_TIMEOUT: Duration = Duration::from_secs(30);
/// Mempool bound written into each `node.toml` (the config default).
const MEMPOOL_MAX_TXS: usize = 100_000;
/// Block size bound written into each `node.toml` (the config default).
const MAX_BLOCK_TXS: usize = 10_000;
/// Interval between `/status` polls.
const STATUS_POLL: Duration = Duration::from_millis(100);
/// Interval between checks of still-pending transactions.
const TX_POLL: Duration = Duration::from_millis(200);
/// Pacing tick of the transaction submitter.
const SUBMIT_TICK: Duration = Duration::from_millis(10);
/// Timeout of one HTTP request to a node.
const HTTP_TIMEOUT: Duration = Duration::from_secs(5);
/// The testnet's nodes' API limits: the load generator is one client IP address, and the
/// per-address admission limit that protects a public API (50 `POST /tx` a second by default)
/// would cap the load it offers, so here it is far above any rate the client can send.
fn testnet_api() -> ApiConfig {
    ApiConfig {
        tx_per_second: 1_000_000,
        tx_burst: 1_000_000,
        ..ApiConfig::default()
    }
}
/// Most HTTP requests in flight at once while submitting or checking transactions.
const MAX_IN_FLIGHT: usize = 128;
/// The signing daemon's binary name, looked up next to the node's.
const THRESHOLDD_BINARY: &str = "thresholdd";
/// A validator's thresholdd keystore directory, inside its node directory.
const SIGNER_DIR: &str = "thresholdd";
/// Its bearer token file.
const SIGNER_TOKEN_FILE: &str = "thresholdd.token";
/// Its keystore passphrase file.
const SIGNER_PASSPHRASE_FILE: &str = "thresholdd.passphrase";
/// A validator's key file passphrase, inside its node directory. Testnet keys are encrypted
/// like an operator's: the cost is one Argon2id derivation (a few hundred milliseconds) per
/// node start and per key file written, small beside a node's start.
const KEY_PASSPHRASE_FILE: &str = "validator.passphrase";
/// Its log.
pub const SIGNER_LOG_FILE: &str = "thresholdd.log";
/// How long a starting thresholdd may take to listen (opening the keystore runs Argon2id).
const SIGNER_READY_TIMEOUT: Duration = Duration::from_secs(30);
/// A testnet node's limit on one remote signing call, ms: every process shares this machine's
/// cores, so the node's default (2 s) leaves too little room under load.
const REMOTE_SIGNER_TIMEOUT_MS: u64 = 5_000;

/// Failures creating, running or querying a testnet. Every variant stops [`run`]; a failing
/// report (disagreement, unfinalized transactions) is not an error but a report that says so.
#[derive(Debug, thiserror::Error)]
pub enum TestnetError {
    /// The options cannot describe a network (no validators, zero blocks, negative rate, ...);
    /// nothing was created.
    #[error("invalid testnet options: {0}")]
    Options(String),
    /// The rollup keys cannot be read or made.
    #[error("rollup keys: {0}")]
    Rollup(#[from] RollupCommandError),
    /// A directory or log file of the testnet could not be created or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Writing keys, genesis or a node config failed.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// No free loopback port could be reserved.
    #[error("reserving a loopback {protocol} port: {source}")]
    Port {
        /// `"udp"` (p2p) or `"tcp"` (API).
        protocol: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// The validator index is outside the network.
    #[error("no validator {index} (the testnet has {count})")]
    NoSuchValidator {
        /// The index asked for.
        index: usize,
        /// Number of validators.
        count: usize,
    },
    /// [`Testnet::spawn`] was asked to start a validator whose process is still running.
    #[error("validator {0} is already running")]
    AlreadyRunning(usize),
    /// Starting a node process failed (binary missing or not executable).
    #[error("spawning validator {validator} with {binary}: {source}")]
    Spawn {
        /// The validator.
        validator: usize,
        /// The binary that was started.
        binary: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The thresholdd binary is not where [`Testnet::use_remote_signers`] looks: it is built by
    /// its own package, `cargo build --release -p quasar-thresholdd` (beside `quasar-node`).
    #[error(
        "{0} does not exist: --remote-signers runs thresholdd from beside quasar-node; build it \
         with `cargo build --release -p quasar-thresholdd` (without --release beside a debug \
         quasar-node)"
    )]
    NoThresholdd(PathBuf),
    /// A validator's thresholdd could not be set up or started ([`Testnet::use_remote_signers`]).
    #[error("validator {validator}'s thresholdd: {message}")]
    Signer {
        /// The validator.
        validator: usize,
        /// What failed (its log's last lines when the daemon exited).
        message: String,
    },
    /// A node process exited while the testnet expected it to run; its log says why.
    #[error("validator {validator} exited unexpectedly ({status}); see {log}")]
    Exited {
        /// The validator.
        validator: usize,
        /// Its exit status.
        status: ExitStatus,
        /// Its log file.
        log: PathBuf,
    },
    /// A request to a node's API (or a thresholdd's metrics) failed or answered otherwise
    /// than expected.
    #[error(transparent)]
    Api(#[from] ClientError),
    /// A node contradicted itself, e.g. a height at or below its finalized height has no block.
    #[error("validator {validator}: {message}")]
    Inconsistent {
        /// The validator.
        validator: usize,
        /// What it contradicted.
        message: String,
    },
    /// A condition was not reached in time.
    #[error("timed out after {after:?} waiting for {what}")]
    Timeout {
        /// The condition, with the last observed state.
        what: String,
        /// How long was waited.
        after: Duration,
    },
}

/// What [`run`] does; the fields are the `testnet` subcommand's flags.
#[derive(Debug, Clone)]
pub struct TestnetOptions {
    /// Number of validators (at least 1; BFT tolerance needs 4).
    pub validators: usize,
    /// Target height: submission stops when the first validator reaches it, and every validator
    /// must finalize it.
    pub blocks: u64,
    /// Directory for keys, genesis, configs, data and logs; `None`: a fresh temporary directory.
    pub dir: Option<PathBuf>,
    /// Minimum time between blocks, milliseconds (default [`DEFAULT_BLOCK_TIME_MS`]).
    pub block_time_ms: u64,
    /// Transactions submitted per second (default [`DEFAULT_TX_RATE`]); 0 submits none.
    pub tx_rate: f64,
    /// Path of the `quasar-node` binary to start for each validator.
    pub binary: PathBuf,
    /// The cert profile written into the genesis (default `quasar`).
    pub profile: Profile,
    /// A `rollup-setup` directory for this validator count (made there first when it holds no
    /// keys): its verifying key goes into the genesis and its proving key to the first
    /// `rollup_provers` validators, so profiles with a Groth16 leg reach Quasar finality.
    pub rollup_setup: Option<PathBuf>,
    /// How many validators prove the rollup leg (default 1; each proof takes minutes of every
    /// core and gigabytes of memory).
    pub rollup_provers: usize,
    /// Blocks per epoch written into the genesis (`None`: the genesis default,
    /// [`quasar_chainspec::DEFAULT_EPOCH_LENGTH`]).
    pub epoch_length: Option<u64>,
    /// The SLH-DSA parameter set of the validators' Magnetar keys (default SHAKE-192f).
    pub magnetar_set: ParameterSet,
    /// Validator sets by epoch ([`Testnet::set_validator_sets`]; each `(first epoch,
    /// validator numbers)`, the first for epoch 0); empty: every validator in every epoch.
    pub validator_sets: Vec<(u64, Vec<usize>)>,
    /// Take the validator sets from the registry in the chain's state
    /// ([`Testnet::take_sets_from_registry`]); needs profile `fast` and an epoch length.
    pub sets_from_registry: bool,
    /// Validators that join by transaction, numbered after the genesis's
    /// ([`Testnet::make_joiners`]): each registers (staking [`STAKE`]) and announces its
    /// address once the validators answer, and the report counts those in the set at the end
    /// ([`TestnetReport::joined`]). Needs [`TestnetOptions::sets_from_registry`].
    pub join: usize,
    /// Genesis validators that leave by transaction (the last ones): each sends `Leave` once
    /// the validators answer, and the report counts those out of the set at the end
    /// ([`TestnetReport::left`]). Needs [`TestnetOptions::sets_from_registry`].
    pub leave: usize,
    /// Run one thresholdd per validator and sign every vote through it
    /// ([`Testnet::use_remote_signers`]); the `thresholdd` binary is the one next to
    /// [`TestnetOptions::binary`].
    pub remote_signers: bool,
    /// Where each validator runs ([`Testnet::place`]); empty: all on this host's loopback.
    pub placements: Vec<Placement>,
    /// Accounts funded in the genesis besides the load generator's (`--account`), for a user
    /// to try the account commands with ([`Testnet::add_accounts`]).
    pub accounts: Vec<quasar_chainspec::GenesisAccount>,
}

impl TestnetOptions {
    /// The defaults ([`DEFAULT_VALIDATORS`], [`DEFAULT_BLOCKS`], temporary directory,
    /// [`DEFAULT_BLOCK_TIME_MS`], [`DEFAULT_TX_RATE`]) with `binary` as the node binary.
    pub fn new(binary: impl Into<PathBuf>) -> TestnetOptions {
        TestnetOptions {
            validators: DEFAULT_VALIDATORS,
            blocks: DEFAULT_BLOCKS,
            dir: None,
            block_time_ms: DEFAULT_BLOCK_TIME_MS,
            tx_rate: DEFAULT_TX_RATE,
            binary: binary.into(),
            profile: DEFAULT_PROFILE,
            rollup_setup: None,
            rollup_provers: 1,
            epoch_length: None,
            magnetar_set: ParameterSet::Shake192f,
            validator_sets: Vec::new(),
            sets_from_registry: false,
            join: 0,
            leave: 0,
            remote_signers: false,
            placements: Vec::new(),
            accounts: Vec::new(),
        }
    }

    fn check(&self) -> Result<(), TestnetError> {
        check_shape(self.validators, self.block_time_ms)?;
        if self.blocks == 0 {
            return Err(TestnetError::Options("blocks must be at least 1".into()));
        }
        if self.validators < 2 && self.profile.legs().contains(&LegKind::Pulsar) {
            return Err(TestnetError::Options(format!(
                "profile {}'s Pulsar leg is a threshold signature of at least 2 validators: \
                 run --validators 2 or more, or --profile fast for a single validator",
                self.profile.name()
            )));
        }
        if self.rollup_setup.is_some() && !(1..=self.validators).contains(&self.rollup_provers) {
            return Err(TestnetError::Options(format!(
                "rollup provers must be between 1 and {}, got {}",
                self.validators, self.rollup_provers
            )));
        }
        if self.sets_from_registry {
            let refuse = |why: &str| -> Result<(), TestnetError> {
                Err(TestnetError::Options(format!("--sets-from-registry {why}")))
            };
            if self.profile != Profile::Fast {
                return refuse(
                    "needs --profile fast: a set under another profile would need threshold or \
                     rollup keys that only a dealer can make today",
                );
            }
            if self.epoch_length == Some(0) {
                return refuse("needs epochs: an --epoch-length above 0");
            }
            if !self.validator_sets.is_empty() {
                return refuse(
                    "and --validator-set exclude each other: the genesis would fix the sets",
                );
            }
        }
        if self.leave >= self.validators {
            return Err(TestnetError::Options(format!(
                "--leave {} would leave no genesis validator of {}",
                self.leave, self.validators
            )));
        }
        for (flag, count) in [("--join", self.join), ("--leave", self.leave)] {
            if count == 0 {
                continue;
            }
            if !self.sets_from_registry {
                return Err(TestnetError::Options(format!(
                    "{flag} needs --sets-from-registry: only the registry changes the set by \
                     transaction"
                )));
            }
            let epoch = self
                .epoch_length
                .unwrap_or(quasar_chainspec::DEFAULT_EPOCH_LENGTH);
            if self.blocks < epoch.saturating_mul(4) {
                return Err(TestnetError::Options(format!(
                    "{flag} needs --blocks {} or more (4 epochs of {epoch}): a transaction final \
                     in epoch 0 or 1 changes the set of epoch 2 or 3",
                    epoch.saturating_mul(4)
                )));
            }
        }
        if let Some(blocks) = self.epoch_length {
            quasar_chainspec::check_epoch_length(
                blocks,
                quasar_chainspec::DEFAULT_BUNDLE_SIZE,
                self.profile,
            )
            .map_err(TestnetError::Options)?;
        }
        if !self.validator_sets.is_empty() {
            if self.epoch_length.is_none_or(|l| l == 0) {
                return Err(TestnetError::Options(
                    "validator sets change at epoch boundaries: give an epoch length above 0 too"
                        .into(),
                ));
            }
            check_validator_sets(&self.validator_sets, self.validators)?;
        }
        if !self.placements.is_empty() && self.placements.len() != self.validators {
            return Err(TestnetError::Options(format!(
                "{} placements for {} validators: give one per validator, or none",
                self.placements.len(),
                self.validators
            )));
        }
        if !self.tx_rate.is_finite() || self.tx_rate < 0.0 {
            return Err(TestnetError::Options(format!(
                "tx_rate must be a finite number >= 0, got {}",
                self.tx_rate
            )));
        }
        Ok(())
    }
}

/// The outcome of [`run`]; serialized as one JSON object with exactly these keys, in this order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestnetReport {
    /// Number of validators.
    pub validators: usize,
    /// The lowest finalized height over all validators at the end of the run.
    pub finalized_height: u64,
    /// Whether every validator has the same block hash at every height `1..=blocks`.
    pub agreement: bool,
    /// `blocks` divided by the seconds from block 1's proposal to the last validator finalizing
    /// block `blocks` (0 when that span is not positive).
    pub blocks_per_sec: f64,
    /// Median finality latency (proposal timestamp → finalize quorum seen), milliseconds,
    /// nearest rank over every (validator, block); 0 without samples.
    pub finality_p50_ms: f64,
    /// 95th percentile of the same samples, milliseconds.
    pub finality_p95_ms: f64,
    /// 99th percentile of the same samples, milliseconds.
    pub finality_p99_ms: f64,
    /// Transactions the load generator was due to send at `tx_rate` over the run.
    pub txs_offered: u64,
    /// Of those, the ones it sent (in `POST /txs` batches started); fewer than offered when
    /// the client's limit of requests in flight held it back, or the transfers signed before
    /// the run ran out.
    pub txs_sent: u64,
    /// Of those, the ones a node accepted (answered 200).
    pub txs_accepted: u64,
    /// Of those sent, the ones a node pushed back (`503`: mempool full, or the sender's key not
    /// known there yet; `429`: over the client's rate; the chain's back-pressure) and that were
    /// still not accepted when the run stopped sending (the generator sends a pushed-back
    /// transaction again, in order).
    pub txs_pushed_back: u64,
    /// Of those sent, the ones a node refused for another reason (invalid, duplicate).
    pub txs_rejected: u64,
    /// Of those sent, the requests that failed (connection, timeout).
    pub txs_failed: u64,
    /// Of those accepted, the ones found finalized.
    pub txs_finalized: u64,
    /// The transactions of blocks `1..=blocks` over the span of `blocks_per_sec` (block 1's
    /// proposal to the last validator finalizing block `blocks`), per second; 0 when that span
    /// is not positive. (`txs_finalized` also counts the blocks after `blocks`, finalized as the
    /// run drains.)
    pub tps_finalized: f64,
    /// Validator 0's process CPU time (`process_cpu_seconds_total`, consensus included) while
    /// the load ran (from its start until a validator reached `blocks`) divided by the
    /// transactions of blocks `1..=blocks`, µs; `null` when those hold none. (The CPU of the
    /// start and of the drain after the load, spent on empty blocks, is left out.)
    pub cpu_us_per_tx: Option<f64>,
    /// The genesis cert profile.
    pub profile: String,
    /// The lowest height covered by a verified QuasarCert over all validators at the end of
    /// the run (Quasar finality; 0 when none).
    pub quasar_finalized_height: u64,
    /// Why Quasar finality is unavailable (validator 0's answer), or `null`.
    pub quasar_unavailable: Option<String>,
    /// Per certificate leg, the median over the validators reporting it of their median
    /// verification times, ms (empty when no certificate completed).
    pub leg_verify_p50_ms: BTreeMap<String, f64>,
    /// Per post-quantum leg, the median over the validators reporting it of their median
    /// production times (bundle closed → leg attached: the signing rounds, or the quorum of
    /// Magnetar signatures), ms. A validator outside a leg's signers (a Pulsar committee)
    /// reports none for it.
    pub leg_sign_p50_ms: BTreeMap<String, f64>,
    /// Validators that joined by transaction ([`TestnetOptions::join`]).
    pub joiners: usize,
    /// Of those, how many are in the validator set at the end of the run.
    pub joined: usize,
    /// Genesis validators that left by transaction ([`TestnetOptions::leave`]).
    pub leavers: usize,
    /// Of those, how many are out of the validator set at the end of the run.
    pub left: usize,
}

impl TestnetReport {
    /// Whether the run passed: the validators agree and every accepted transaction finalized.
    pub fn passed(&self) -> bool {
        self.agreement
            && self.txs_finalized == self.txs_accepted
            && self.joined == self.joiners
            && self.left == self.leavers
    }

    /// The run in words, for an operator's terminal: the profile, the finality each tier
    /// reached, and why Quasar finality did not come when it did not.
    pub fn describe(&self) -> String {
        let legs = self
            .profile
            .parse::<Profile>()
            .map(|p| {
                let names: Vec<&str> = p
                    .legs()
                    .iter()
                    .map(|leg| match leg {
                        LegKind::Bls => "BLS",
                        LegKind::Corona => "Corona",
                        LegKind::Groth16 => "Groth16",
                        LegKind::Pulsar => "Pulsar",
                        LegKind::Magnetar => "Magnetar",
                    })
                    .collect();
                format!(" ({})", names.join(" + "))
            })
            .unwrap_or_default();
        let quasar = match (&self.quasar_unavailable, self.quasar_finalized_height) {
            (Some(why), _) => format!(
                "Quasar finality UNAVAILABLE: {why}; blocks reached Nova finality (BLS) only"
            ),
            (None, 0) => "no bundle reached Quasar finality".to_string(),
            (None, height) => {
                format!("Quasar finality up to height {height} on every validator")
            }
        };
        let unsent = self.txs_offered.saturating_sub(self.txs_sent);
        let mut load = if unsent > 0 {
            format!(
                "; {unsent} of {} offered transactions were NOT SENT (the presigned transfers ran out, or held \
                 back by one batch in flight per validator)",
                self.txs_offered
            )
        } else {
            String::new()
        };
        if self.txs_pushed_back > 0 {
            load.push_str(&format!(
                "; {} sent transactions were PUSHED BACK (503/429) and not accepted by the end",
                self.txs_pushed_back
            ));
        }
        if self.joiners > 0 {
            load.push_str(&format!(
                "; {} of {} validators that joined by transaction are in the set at the end",
                self.joined, self.joiners
            ));
        }
        if self.leavers > 0 {
            load.push_str(&format!(
                "; {} of {} validators that left by transaction are out of the set at the end",
                self.left, self.leavers
            ));
        }
        format!(
            "profile {}{legs}: {quasar}; Nova finality up to height {} on every validator; \
             {} of {} accepted transactions finalized{load}; {}",
            self.profile,
            self.finalized_height,
            self.txs_finalized,
            self.txs_accepted,
            if self.agreement {
                "all validators agree on every block"
            } else {
                "VALIDATORS DISAGREE"
            }
        )
    }
}

#[derive(Debug, Clone, Copy)]
struct NodeAddrs {
    p2p: SocketAddr,
    api: SocketAddr,
}

/// Where a validator's processes run ([`Testnet::place`]): on another "host" of the same
/// machine, e.g. a Linux network namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// Command prefix its node and thresholdd start under, e.g. `["ip", "netns", "exec",
    /// "host0"]`; empty: started directly.
    pub launcher: Vec<String>,
    /// The address its node (QUIC and HTTP API) and thresholdd bind to, on the same ports as
    /// before; this process and the other validators must reach it.
    pub ip: IpAddr,
}

/// `program` started under `launcher` (a command prefix; empty: none).
fn launch(launcher: &[String], program: &Path) -> Command {
    match launcher.split_first() {
        Some((first, rest)) => {
            let mut command = Command::new(first);
            command.args(rest).arg(program);
            command
        }
        None => Command::new(program),
    }
}

/// A validator's thresholdd ([`Testnet::use_remote_signers`]).
struct SignerDaemon {
    binary: PathBuf,
    listen: SocketAddr,
    /// The running daemon, if any.
    child: Option<Child>,
}

/// A testnet on disk plus its running node processes. Dropping it kills every process.
pub struct Testnet {
    dir: PathBuf,
    nodes: Vec<NodeAddrs>,
    block_time_ms: u64,
    /// One slot per validator: the running process, if any. Behind a mutex so that `&self`
    /// waits can notice a process that died.
    children: Mutex<Vec<Option<Child>>>,
    /// One slot per validator: its thresholdd, with remote signers.
    signers: Vec<Option<SignerDaemon>>,
    /// One per validator: the command prefix its processes start under ([`Testnet::place`]).
    launchers: Vec<Vec<String>>,
    http: reqwest::Client,
}

impl Testnet {
    /// Creates a network of `validators` under `dir` (see the module docs for the layout): keys for
    /// `v0..v{validators-1}`, `genesis.json` (a random chain id, so that two networks never
    /// accept each other's transactions, now as genesis time, stake
    /// [`STAKE`] each), and a `node.toml` per validator with free loopback ports (UDP for p2p, TCP
    /// for the API, picked by binding port 0) and every other validator as a peer. Starts nothing.
    ///
    /// Errors: [`TestnetError::Options`] for zero validators or block time,
    /// [`TestnetError::Config`] when `dir` already holds validator keys or a file cannot be
    /// written, [`TestnetError::Port`], [`TestnetError::Io`].
    pub fn create(
        dir: &Path,
        validators: usize,
        block_time_ms: u64,
    ) -> Result<Testnet, TestnetError> {
        Testnet::create_with_profile(dir, validators, block_time_ms, Profile::default())
    }

    /// [`Testnet::create`] with the genesis cert profile `profile`. The testnet deals the
    /// Corona and Pulsar keys the profile needs (shares into the key files, group keys into the
    /// genesis); a Groth16 leg needs rollup keys too ([`Testnet::add_rollup`]), without which
    /// the validators report Quasar finality unavailable. Above 4 validators the Pulsar key is
    /// a committee's (see [`quasar_chainspec::deal`]). Errors as [`Testnet::create`].
    pub fn create_with_profile(
        dir: &Path,
        validators: usize,
        block_time_ms: u64,
        profile: Profile,
    ) -> Result<Testnet, TestnetError> {
        Testnet::create_with_magnetar_set(
            dir,
            validators,
            block_time_ms,
            profile,
            ParameterSet::Shake192f,
        )
    }

    /// [`Testnet::create_with_profile`] with validators' Magnetar keys of the SLH-DSA parameter
    /// set `magnetar_set` (the genesis's `magnetar_parameter_set`). Errors as
    /// [`Testnet::create`].
    pub fn create_with_magnetar_set(
        dir: &Path,
        validators: usize,
        block_time_ms: u64,
        profile: Profile,
        magnetar_set: ParameterSet,
    ) -> Result<Testnet, TestnetError> {
        check_shape(validators, block_time_ms)?;
        std::fs::create_dir_all(dir).map_err(|source| TestnetError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let mut keys = Vec::with_capacity(validators);
        for i in 0..validators {
            let key_dir = node_dir(dir, i);
            std::fs::create_dir_all(&key_dir).map_err(|source| TestnetError::Io {
                path: key_dir.clone(),
                source,
            })?;
            // An existing one is kept: keygen then refuses an existing key as before.
            let path = key_dir.join(KEY_PASSPHRASE_FILE);
            if !path.exists() {
                let passphrase = hex::encode(rand::random::<[u8; 32]>());
                quasar_chainspec::write_private_new(&path, passphrase.as_bytes())
                    .map_err(|source| TestnetError::Io { path, source })?;
            }
            keys.push(quasar_chainspec::keygen_with_set(
                &key_dir,
                &format!("validator-{i}"),
                magnetar_set,
                &key_access(&key_dir)?,
            )?);
        }
        // The chain starts shortly after creation, so every process is up before block 1 is due.
        let start = now_us().saturating_add(GENESIS_DELAY_US);
        let base = GenesisFile::from_public_keys(rand::random(), start, &keys, STAKE);
        let mut genesis = GenesisFile {
            profile: profile.name(),
            // `fast` bundles are one block; say so in the file too.
            bundle_size: if profile == Profile::Fast {
                1
            } else {
                base.bundle_size
            },
            ..base
        };
        let everyone: Vec<usize> = (0..validators).collect();
        deal_keys(
            dir,
            &everyone,
            &mut genesis,
            profile,
            quasar_chainspec::Existing::Refuse,
        )?;
        genesis.save(&dir.join(GENESIS_FILE))?;

        let nodes = reserve_ports(validators)?;
        for (i, me) in nodes.iter().enumerate() {
            let peers = nodes
                .iter()
                .zip(&keys)
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, (addrs, key))| PeerConfig {
                    bls_public_key: key.bls_public_key.clone(),
                    address: addrs.p2p.into(),
                })
                .collect();
            let cfg = NodeConfig {
                data_dir: PathBuf::from("data"),
                key_dir: PathBuf::from("."),
                key_passphrase_file: Some(PathBuf::from(KEY_PASSPHRASE_FILE)),
                plaintext_keys: false,
                genesis: PathBuf::from("..").join(GENESIS_FILE),
                p2p_listen: me.p2p,
                api_listen: me.api,
                metrics_listen: None,
                api: testnet_api(),
                block_time_ms,
                view_timeout_ms: None,
                mempool_max_txs: MEMPOOL_MAX_TXS,
                mempool_tx_lifetime_secs: 600,
                max_block_txs: MAX_BLOCK_TXS,
                peers,
                rollup_proving_key: None,
                archive: false,
                signer: SignerMode::Local,
                remote_signer: None,
            };
            cfg.save(&node_dir(dir, i).join(NODE_CONFIG_FILE))?;
        }

        let http = quasar_client::http_client(HTTP_TIMEOUT)?;
        Ok(Testnet {
            dir: dir.to_path_buf(),
            nodes,
            block_time_ms,
            children: Mutex::new((0..validators).map(|_| None).collect()),
            signers: (0..validators).map(|_| None).collect(),
            launchers: vec![Vec::new(); validators],
            http,
        })
    }

    /// Allocates `balance` to each of `addresses` in the genesis, beside the accounts it funds
    /// already (before the validators start).
    /// Errors: [`TestnetError::Config`]; files.
    pub fn fund_accounts(
        &self,
        addresses: &[quasar_app::Address],
        balance: u64,
    ) -> Result<(), TestnetError> {
        let accounts: Vec<_> = addresses
            .iter()
            .map(|a| quasar_chainspec::GenesisAccount {
                address: hex::encode(a),
                balance,
            })
            .collect();
        self.add_accounts(&accounts)
    }

    /// Adds `accounts` to the genesis allocation (before the validators start). Errors: an
    /// allocation the genesis refuses (an address listed twice or not 32 bytes of hex, a total
    /// past `u64::MAX`), files.
    pub fn add_accounts(
        &self,
        accounts: &[quasar_chainspec::GenesisAccount],
    ) -> Result<(), TestnetError> {
        let path = self.dir.join(GENESIS_FILE);
        let mut genesis = GenesisFile::load(&path)?;
        genesis.accounts.extend_from_slice(accounts);
        genesis.clone().check()?;
        genesis.save(&path)?;
        Ok(())
    }

    /// Sets the genesis epoch length to `blocks` (before the validators start). Errors: a
    /// length the genesis refuses (not a multiple of the bundle size), files.
    pub fn set_epoch_length(&self, blocks: u64) -> Result<(), TestnetError> {
        let path = self.dir.join(GENESIS_FILE);
        let genesis = GenesisFile {
            epoch_length: blocks,
            ..GenesisFile::load(&path)?
        };
        genesis.clone().check()?;
        genesis.save(&path)?;
        Ok(())
    }

    /// Makes the chain take its validator sets from the registry in its state (the genesis
    /// `validator_set_source`, before the validators start): staking transactions final in
    /// epoch e change the set of epoch e + 2. Errors: a genesis that refuses it (not profile
    /// `fast`, no epochs, or scheduled changes), files.
    pub fn take_sets_from_registry(&self) -> Result<(), TestnetError> {
        let path = self.dir.join(GENESIS_FILE);
        let genesis = GenesisFile {
            validator_set_source: quasar_chainspec::SetSource::Registry,
            ..GenesisFile::load(&path)?
        };
        genesis.clone().check()?;
        genesis.save(&path)?;
        Ok(())
    }

    /// Takes validators `joiners` out of the genesis before the validators start, on a chain
    /// whose sets come from the registry ([`Testnet::take_sets_from_registry`]): their keys
    /// stay, their accounts get `balance` in the genesis, and every `node.toml` names the
    /// genesis validators only as peers. A joiner's node follows the chain until it registers
    /// (`register-validator`, then `set-network-address`), and signs from the set that the
    /// registry then gives it. Errors: [`TestnetError::Options`] for a joiner out of range or
    /// no validator left; [`TestnetError::Config`] for a genesis that refuses it; files.
    pub fn make_joiners(&self, joiners: &[usize], balance: u64) -> Result<(), TestnetError> {
        let path = self.dir.join(GENESIS_FILE);
        let genesis = GenesisFile::load(&path)?;
        if let Some(&v) = joiners.iter().find(|&&v| v >= genesis.validators.len()) {
            return Err(TestnetError::Options(format!(
                "validator {v} is not one of the {} validators",
                genesis.validators.len()
            )));
        }
        let (left, stay): (Vec<_>, Vec<_>) = genesis
            .validators
            .iter()
            .cloned()
            .enumerate()
            .partition(|(i, _)| joiners.contains(i));
        if stay.is_empty() {
            return Err(TestnetError::Options(
                "every validator would join: the genesis needs one".into(),
            ));
        }
        let mut accounts = genesis.accounts.clone();
        for (_, validator) in &left {
            let address = crate::wallet::identity_address(&validator.mldsa_public_key)
                .map_err(TestnetError::Options)?;
            accounts.push(quasar_chainspec::GenesisAccount {
                address: hex::encode(address),
                balance,
            });
        }
        let genesis_keys: Vec<String> = stay
            .iter()
            .map(|(_, v)| v.bls_public_key.to_ascii_lowercase())
            .collect();
        let genesis = GenesisFile {
            validators: stay.into_iter().map(|(_, v)| v).collect(),
            accounts,
            ..genesis
        };
        genesis.clone().check()?;
        genesis.save(&path)?;
        for i in 0..self.validators() {
            self.update_node_config(i, |cfg| NodeConfig {
                peers: cfg
                    .peers
                    .into_iter()
                    .filter(|p| genesis_keys.contains(&p.bls_public_key.to_ascii_lowercase()))
                    .collect(),
                ..cfg
            })?;
        }
        Ok(())
    }

    /// Schedules validator-set changes before the validators start: epoch 0's set becomes
    /// `sets[0].1` and, from each later `(epoch, members)` on, `members` (this testnet's
    /// validator numbers, in index order; `sets[0]` must be epoch 0's). Every validator process
    /// still runs, and one outside an epoch's set follows the chain without signing until a set
    /// names it. Under a profile with threshold legs the keys are dealt again, for every set
    /// (each change gets its own Corona and Pulsar keys); a rollup verifying key already given
    /// ([`Testnet::add_rollup`]) is used for every set of epoch 0's set's size. Errors:
    /// [`TestnetError::Options`] for sets that name no network (the first not epoch 0's, epochs
    /// not increasing, an empty set, a member out of range or twice, a validator in no set);
    /// [`TestnetError::Config`] for changes the genesis refuses (epochs out of order, a chain
    /// without epochs); files.
    pub fn set_validator_sets(&self, sets: &[(u64, Vec<usize>)]) -> Result<(), TestnetError> {
        let path = self.dir.join(GENESIS_FILE);
        let genesis = GenesisFile::load(&path)?;
        check_validator_sets(sets, self.validators())?;
        // Created with every validator in genesis, in number order.
        let everyone = genesis.validators.clone();
        let pick = |members: &[usize]| {
            members
                .iter()
                .map(|&v| {
                    everyone.get(v).cloned().ok_or_else(|| {
                        TestnetError::Options(format!(
                            "validator {v} is not one of the {} validators",
                            everyone.len()
                        ))
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        };
        let Some(((0, first), later)) = sets.split_first() else {
            return Err(TestnetError::Options(
                "validator sets must start with epoch 0's".into(),
            ));
        };
        let validator_changes = later
            .iter()
            .map(|(epoch, members)| {
                Ok(quasar_chainspec::ValidatorChange {
                    epoch: *epoch,
                    validators: pick(members)?,
                    // One rollup setup serves the sets of its size.
                    rollup_verifying_key: genesis
                        .rollup_verifying_key
                        .clone()
                        .filter(|_| members.len() == first.len()),
                    ..quasar_chainspec::ValidatorChange::default()
                })
            })
            .collect::<Result<Vec<_>, TestnetError>>()?;
        let mut genesis = GenesisFile {
            validators: pick(first)?,
            validator_changes,
            corona_group_key: None,
            pulsar_group_key: None,
            pulsar_committee: None,
            ..genesis
        };
        let profile: Profile = genesis
            .profile
            .parse()
            .map_err(|e| TestnetError::Options(format!("genesis profile: {e}")))?;
        // Roster order: each validator at its first set.
        let mut roster: Vec<usize> = Vec::new();
        for (_, members) in sets {
            for &v in members {
                if !roster.contains(&v) {
                    roster.push(v);
                }
            }
        }
        deal_keys(
            &self.dir,
            &roster,
            &mut genesis,
            profile,
            quasar_chainspec::Existing::Replace,
        )?;
        genesis.clone().check()?;
        genesis.save(&path)?;
        Ok(())
    }

    /// Gives the network a Groth16 rollup before it starts: the verifying key of `setup` (a
    /// `rollup-setup` directory for the n validators of epoch 0's set) goes into the genesis and
    /// into every validator change of n validators (a set of another size gets none: its epochs
    /// stay at Nova finality), and its proving key into the `node.toml` of validators
    /// `0..provers`. A `setup` without keys is made first with a quorum of ⌊2n/3⌋ + 1 equal
    /// stakes and fresh randomness (minutes and gigabytes; `rollup-setup` prints its estimate).
    /// Errors: keys for another validator count, unreadable keys, `provers` not in `1..=` the
    /// testnet's validators, files.
    pub fn add_rollup(&self, setup: &Path, provers: usize) -> Result<(), TestnetError> {
        let validators = self.validators();
        if !(1..=validators).contains(&provers) {
            return Err(TestnetError::Options(format!(
                "rollup provers must be between 1 and {validators}, got {provers}"
            )));
        }
        let genesis_path = self.dir.join(GENESIS_FILE);
        let mut genesis = GenesisFile::load(&genesis_path)?;
        // The setup is for epoch 0's set (every validator unless the sets were changed).
        let n = genesis.validators.len();
        if !setup.join(VERIFYING_KEY_FILE).exists() && !setup.join(PROVING_KEY_FILE).exists() {
            eprintln!(
                "testnet: no rollup keys in {}: running the setup for {n} validators",
                setup.display()
            );
            rollup::setup(setup, n, 2 * n / 3 + 1, None)?;
        }
        let (vk_file, _) = rollup::read_verifying_key(setup)?;
        if vk_file.validators != n {
            return Err(TestnetError::Options(format!(
                "the rollup keys in {} are for {} validators, the testnet's epoch-0 validator set \
                 has {n}",
                setup.display(),
                vk_file.validators
            )));
        }
        // One setup serves the sets of its size; the others stay at Nova finality.
        for change in &mut genesis.validator_changes {
            change.rollup_verifying_key =
                (change.validators.len() == n).then(|| vk_file.verifying_key.clone());
        }
        genesis.rollup_verifying_key = Some(vk_file.verifying_key);
        genesis.clone().check()?;
        genesis.save(&genesis_path)?;
        let proving_key = std::path::absolute(setup.join(PROVING_KEY_FILE)).map_err(|source| {
            TestnetError::Io {
                path: setup.to_path_buf(),
                source,
            }
        })?;
        for i in 0..provers {
            self.update_node_config(i, |cfg| NodeConfig {
                rollup_proving_key: Some(proving_key.clone()),
                ..cfg
            })?;
        }
        Ok(())
    }

    /// Makes every validator an archive node (`archive = true` in its `node.toml`, before it
    /// starts): it keeps every block, so the whole run can be read back. Errors: files.
    pub fn keep_history(&self) -> Result<(), TestnetError> {
        for i in 0..self.validators() {
            self.update_node_config(i, |cfg| NodeConfig {
                archive: true,
                ..cfg
            })?;
        }
        Ok(())
    }

    /// Gives every validator its own thresholdd (before they start; layout in the module
    /// docs): a keystore holding the validator's BLS key (`thresholdd keys import-validator`),
    /// random token and passphrase files, a free loopback port, and `signer = "remote"` in its
    /// `node.toml`. [`Testnet::spawn`] then starts a validator's daemon before its node when the
    /// daemon is not running; the daemon outlives node restarts. Errors:
    /// [`TestnetError::Signer`] when `thresholdd` fails to import the key,
    /// [`TestnetError::Port`], [`TestnetError::Io`], [`TestnetError::Config`].
    pub fn use_remote_signers(&mut self, thresholdd: &Path) -> Result<(), TestnetError> {
        if !thresholdd.is_file() {
            return Err(TestnetError::NoThresholdd(thresholdd.to_path_buf()));
        }
        // Held until every port is chosen, so that no two daemons get the same one.
        let listeners = (0..self.validators())
            .map(|_| bind_below_ephemeral(|port| TcpListener::bind(("127.0.0.1", port))))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|source| TestnetError::Port {
                protocol: "tcp",
                source,
            })?;
        for (i, listener) in listeners.iter().enumerate() {
            let dir = self.node_dir(i);
            let listen = listener.local_addr().map_err(|source| TestnetError::Port {
                protocol: "tcp",
                source,
            })?;
            for (file, bytes) in [
                (SIGNER_TOKEN_FILE, rand::random::<[u8; 32]>()),
                (SIGNER_PASSPHRASE_FILE, rand::random::<[u8; 32]>()),
            ] {
                let path = dir.join(file);
                quasar_chainspec::write_private_new(&path, hex::encode(bytes).as_bytes())
                    .map_err(|source| TestnetError::Io { path, source })?;
            }
            let output = Command::new(thresholdd)
                .arg("--data-dir")
                .arg(dir.join(SIGNER_DIR))
                .arg("--passphrase-file")
                .arg(dir.join(SIGNER_PASSPHRASE_FILE))
                .args(["keys", "import-validator", "--key-dir"])
                .arg(&dir)
                .arg("--key-passphrase-file")
                .arg(dir.join(KEY_PASSPHRASE_FILE))
                .stdin(Stdio::null())
                .output()
                .map_err(|e| TestnetError::Signer {
                    validator: i,
                    message: format!("running {}: {e}", thresholdd.display()),
                })?;
            if !output.status.success() {
                return Err(TestnetError::Signer {
                    validator: i,
                    message: format!(
                        "keys import-validator failed ({}): {}",
                        output.status,
                        String::from_utf8_lossy(&output.stderr).trim()
                    ),
                });
            }
            self.update_node_config(i, |cfg| NodeConfig {
                signer: SignerMode::Remote,
                remote_signer: Some(RemoteSignerConfig {
                    url: format!("http://{listen}"),
                    token_file: PathBuf::from(SIGNER_TOKEN_FILE),
                    timeout_ms: REMOTE_SIGNER_TIMEOUT_MS,
                }),
                ..cfg
            })?;
            self.signers[i] = Some(SignerDaemon {
                binary: thresholdd.to_path_buf(),
                listen,
                child: None,
            });
        }
        Ok(())
    }

    /// Starts every validator's thresholdd ([`Testnet::use_remote_signers`]) before the
    /// validators, then moves the genesis time to [`GENESIS_DELAY_US`] from now: opening each
    /// keystore runs Argon2id, and validators that start after the genesis time listen for a
    /// view timeout before they sign. Errors: as [`Testnet::spawn`]'s for the daemons;
    /// [`TestnetError::Config`] for the genesis file.
    pub fn start_signers(&mut self) -> Result<(), TestnetError> {
        for i in 0..self.validators() {
            self.start_signer(i)?;
        }
        self.move_genesis_time()
    }

    /// Moves the genesis time to [`GENESIS_DELAY_US`] from now, before any validator has
    /// started (one that starts after the genesis time listens for a view timeout before it
    /// signs). Errors: [`TestnetError::Config`] for the genesis file.
    pub fn move_genesis_time(&self) -> Result<(), TestnetError> {
        let path = self.dir.join(GENESIS_FILE);
        GenesisFile {
            genesis_time_us: now_us().saturating_add(GENESIS_DELAY_US),
            ..GenesisFile::load(&path)?
        }
        .save(&path)?;
        Ok(())
    }

    /// Starts validator `i`'s thresholdd unless it has none or it is running, and waits until it
    /// accepts connections. Errors: [`TestnetError::Signer`] (it did not start, exited, or did
    /// not listen within [`SIGNER_READY_TIMEOUT`]), [`TestnetError::Io`] (its log).
    fn start_signer(&mut self, i: usize) -> Result<(), TestnetError> {
        let dir = self.node_dir(i);
        let Some(daemon) = self.signers.get_mut(i).and_then(Option::as_mut) else {
            return Ok(());
        };
        if let Some(child) = &mut daemon.child {
            if matches!(child.try_wait(), Ok(None)) {
                return Ok(());
            }
        }
        let signer_err = |message: String| TestnetError::Signer {
            validator: i,
            message,
        };
        let log_path = dir.join(SIGNER_LOG_FILE);
        let io_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| TestnetError::Io { path, source }
        };
        let token_path = dir.join(SIGNER_TOKEN_FILE);
        let token = std::fs::read_to_string(&token_path).map_err(io_err(&token_path))?;
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(io_err(&log_path))?;
        let stderr = log.try_clone().map_err(io_err(&log_path))?;
        let mut command = launch(&self.launchers[i], &daemon.binary);
        command.arg("--listen").arg(daemon.listen.to_string());
        if !daemon.listen.ip().is_loopback() {
            // A placed validator's daemon listens on its host's address (Testnet::place).
            command.arg("--allow-remote");
        }
        let child = command
            .arg("--data-dir")
            .arg(dir.join(SIGNER_DIR))
            .arg("--passphrase-file")
            .arg(dir.join(SIGNER_PASSPHRASE_FILE))
            .env("THRESHOLDD_TOKEN", token.trim())
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(stderr))
            .spawn()
            .map_err(|e| signer_err(format!("spawning {}: {e}", daemon.binary.display())))?;
        let child = daemon.child.insert(child);
        let deadline = std::time::Instant::now() + SIGNER_READY_TIMEOUT;
        loop {
            if std::net::TcpStream::connect_timeout(&daemon.listen, STATUS_POLL).is_ok() {
                return Ok(());
            }
            if let Ok(Some(status)) = child.try_wait() {
                return Err(signer_err(format!(
                    "exited ({status}); see {}",
                    log_path.display()
                )));
            }
            if std::time::Instant::now() >= deadline {
                return Err(signer_err(format!(
                    "not listening on {} after {SIGNER_READY_TIMEOUT:?}; see {}",
                    daemon.listen,
                    log_path.display()
                )));
            }
            std::thread::sleep(STATUS_POLL);
        }
    }

    /// Rewrites validator `i`'s `node.toml` through `change`.
    /// Moves validator `i` to another host before it starts: its node and thresholdd bind to
    /// `placement.ip` (same ports), start under `placement.launcher`, and every other
    /// validator's peer entry for it points there. Call after [`Testnet::use_remote_signers`]
    /// (which gives the daemon its port) and before [`Testnet::start_signers`] and
    /// [`Testnet::spawn`].
    ///
    /// Errors: [`TestnetError::NoSuchValidator`], [`TestnetError::AlreadyRunning`], files.
    pub fn place(&mut self, i: usize, placement: Placement) -> Result<(), TestnetError> {
        self.check_index(i)?;
        if self.is_running(i) {
            return Err(TestnetError::AlreadyRunning(i));
        }
        let old_p2p = self.nodes[i].p2p;
        let moved = |addr: SocketAddr| SocketAddr::new(placement.ip, addr.port());
        let (p2p, api) = (moved(old_p2p), moved(self.nodes[i].api));
        let signer = self.signers[i].as_mut().map(|daemon| {
            daemon.listen = moved(daemon.listen);
            daemon.listen
        });
        self.update_node_config(i, |cfg| NodeConfig {
            p2p_listen: p2p,
            api_listen: api,
            remote_signer: match (cfg.remote_signer, signer) {
                (Some(remote), Some(listen)) => Some(RemoteSignerConfig {
                    url: format!("http://{listen}"),
                    ..remote
                }),
                (remote, _) => remote,
            },
            ..cfg
        })?;
        for j in (0..self.validators()).filter(|&j| j != i) {
            self.update_node_config(j, |cfg| NodeConfig {
                peers: cfg
                    .peers
                    .into_iter()
                    .map(|peer| PeerConfig {
                        address: if peer.address == quasar_p2p::PeerAddress::from(old_p2p) {
                            p2p.into()
                        } else {
                            peer.address
                        },
                        ..peer
                    })
                    .collect(),
                ..cfg
            })?;
        }
        self.nodes[i] = NodeAddrs { p2p, api };
        self.launchers[i] = placement.launcher;
        Ok(())
    }

    fn update_node_config(
        &self,
        i: usize,
        change: impl FnOnce(NodeConfig) -> NodeConfig,
    ) -> Result<(), TestnetError> {
        let path = self.node_dir(i).join(NODE_CONFIG_FILE);
        let text = std::fs::read_to_string(&path).map_err(|source| TestnetError::Io {
            path: path.clone(),
            source,
        })?;
        // Parsed against an empty base, so the relative paths stay relative.
        change(NodeConfig::from_toml(&text, Path::new(""))?).save(&path)?;
        Ok(())
    }

    /// The testnet directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Number of validators.
    pub fn validators(&self) -> usize {
        self.nodes.len()
    }

    /// The block time the network was created with, milliseconds.
    pub fn block_time_ms(&self) -> u64 {
        self.block_time_ms
    }

    /// How validator `i`'s secret key file opens (its passphrase file), for
    /// [`quasar_chainspec::load_keys`]. Errors: the passphrase file cannot be read.
    pub fn key_access(&self, i: usize) -> Result<quasar_chainspec::KeyAccess, TestnetError> {
        key_access(&self.node_dir(i))
    }

    /// Validator `i`'s directory (keys, `node.toml`, `node.log`, `data/`).
    pub fn node_dir(&self, i: usize) -> PathBuf {
        node_dir(&self.dir, i)
    }

    /// Validator `i`'s log file.
    pub fn log_path(&self, i: usize) -> PathBuf {
        self.node_dir(i).join(NODE_LOG_FILE)
    }

    /// Validator `i`'s HTTP API address. Panics if `i >= validators()` (a caller bug).
    pub fn api(&self, i: usize) -> SocketAddr {
        self.nodes[i].api
    }

    /// Validator `i`'s QUIC (UDP) address. Panics if `i >= validators()` (a caller bug).
    pub fn p2p(&self, i: usize) -> SocketAddr {
        self.nodes[i].p2p
    }

    fn check_index(&self, i: usize) -> Result<(), TestnetError> {
        if i < self.nodes.len() {
            Ok(())
        } else {
            Err(TestnetError::NoSuchValidator {
                index: i,
                count: self.nodes.len(),
            })
        }
    }

    fn children(&self) -> MutexGuard<'_, Vec<Option<Child>>> {
        // A panic while holding the lock leaves the slots consistent (each is a whole Option).
        self.children
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Starts validator `i`: `binary run --config DIR/v{i}/node.toml`, stdout and stderr appended
    /// to `DIR/v{i}/node.log` (after a marker line), the environment (including `RUST_LOG`)
    /// inherited. A restarted validator reuses its data directory. With remote signers, the
    /// validator's thresholdd is started first when it is not running.
    ///
    /// Errors: [`TestnetError::NoSuchValidator`], [`TestnetError::AlreadyRunning`],
    /// [`TestnetError::Signer`],
    /// [`TestnetError::Io`] (log file), [`TestnetError::Spawn`].
    pub fn spawn(&mut self, i: usize, binary: &Path) -> Result<(), TestnetError> {
        self.spawn_with_env(i, binary, &[])
    }

    /// [`Testnet::spawn`] with `env` added to the inherited environment of this one process,
    /// e.g. the signer's test-only fault injection
    /// ([`crate::signer::CRASH_AFTER_GUARD_ENV`]). Later restarts via [`Testnet::spawn`] do not
    /// inherit it. Errors: as [`Testnet::spawn`].
    pub fn spawn_with_env(
        &mut self,
        i: usize,
        binary: &Path,
        env: &[(&str, &str)],
    ) -> Result<(), TestnetError> {
        self.check_index(i)?;
        self.start_signer(i)?;
        let config_path = self.node_dir(i).join(NODE_CONFIG_FILE);
        let log_path = self.log_path(i);
        let mut children = self.children();
        let slot = &mut children[i];
        if let Some(child) = slot {
            match child.try_wait() {
                Ok(None) => return Err(TestnetError::AlreadyRunning(i)),
                Ok(Some(_)) | Err(_) => *slot = None,
            }
        }
        let io_err = |source| TestnetError::Io {
            path: log_path.clone(),
            source,
        };
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(io_err)?;
        writeln!(
            log,
            "=== testnet: starting validator {i} at {} µs ===",
            now_us()
        )
        .map_err(io_err)?;
        let stderr = log.try_clone().map_err(io_err)?;
        let child = launch(&self.launchers[i], binary)
            .arg("run")
            .arg("--config")
            .arg(&config_path)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(stderr))
            .envs(env.iter().copied())
            .spawn()
            .map_err(|source| TestnetError::Spawn {
                validator: i,
                binary: binary.to_path_buf(),
                source,
            })?;
        *slot = Some(child);
        Ok(())
    }

    /// Kills validator `i` with SIGKILL and reaps it; nothing happens if it is not running or
    /// `i` is out of range.
    pub fn kill(&mut self, i: usize) {
        let child = self.children().get_mut(i).and_then(Option::take);
        if let Some(mut child) = child {
            // Fails only if the process already exited, which is what we want anyway.
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills every running validator, then every thresholdd.
    pub fn kill_all(&mut self) {
        for i in 0..self.nodes.len() {
            self.kill(i);
        }
        for i in 0..self.signers.len() {
            self.kill_signer(i);
        }
    }

    /// Whether validator `i` has a process that was started by [`Testnet::spawn`] and has not
    /// exited (`try_wait`) or been killed. Does not reap: an exited process stays for
    /// [`Testnet::check_running`] or [`Testnet::reap`] to report. False for an out-of-range `i`.
    pub fn is_running(&self, i: usize) -> bool {
        match self.children().get_mut(i) {
            Some(Some(child)) => matches!(child.try_wait(), Ok(None)),
            _ => false,
        }
    }

    /// If validator `i`'s process has exited on its own, clears its slot (so
    /// [`Testnet::check_running`] no longer reports it and [`Testnet::spawn`] may restart it) and
    /// returns its exit status; `None` while it runs, when none was started, or for an
    /// out-of-range `i`.
    pub fn reap(&self, i: usize) -> Option<ExitStatus> {
        let mut children = self.children();
        let slot = children.get_mut(i)?;
        let status = slot.as_mut()?.try_wait().ok().flatten()?;
        *slot = None;
        Some(status)
    }

    /// Errors with [`TestnetError::Exited`] if a process started by [`Testnet::spawn`] (and not
    /// killed by [`Testnet::kill`]) has exited. The exited process's slot is cleared, so each
    /// exit is reported once.
    pub fn check_running(&self) -> Result<(), TestnetError> {
        let mut children = self.children();
        for (i, slot) in children.iter_mut().enumerate() {
            let exited = match slot {
                Some(child) => child.try_wait().ok().flatten(),
                None => None,
            };
            if let Some(status) = exited {
                *slot = None;
                return Err(TestnetError::Exited {
                    validator: i,
                    status,
                    log: self.log_path(i),
                });
            }
        }
        Ok(())
    }

    /// The last `lines` lines of validator `i`'s log (empty if it cannot be read).
    pub fn log_tail(&self, i: usize, lines: usize) -> String {
        let text = std::fs::read(self.log_path(i)).unwrap_or_default();
        let text = String::from_utf8_lossy(&text);
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// A client of validator `i`'s API.
    fn client(&self, i: usize) -> Result<Client, TestnetError> {
        self.check_index(i)?;
        Ok(Client::with_http(
            self.http.clone(),
            format!("http://{}", self.nodes[i].api),
        ))
    }

    /// Validator `i`'s `GET /status` ([`Client::status`]).
    pub async fn status(&self, i: usize) -> Result<Status, TestnetError> {
        Ok(self.client(i)?.status().await?)
    }

    /// Validator `i`'s `GET /ready`, ready or not ([`Client::ready`]).
    pub async fn ready(&self, i: usize) -> Result<Readiness, TestnetError> {
        Ok(self.client(i)?.ready().await?)
    }

    /// Validator `i`'s finalized block at `height` (`GET /block/{height}`); `None` when it has not
    /// finalized that height ([`Client::block`]).
    pub async fn block(&self, i: usize, height: u64) -> Result<Option<BlockInfo>, TestnetError> {
        Ok(self.client(i)?.block(height).await?)
    }

    /// Whether every validator holds the same block hash at every height `1..=up_to` (heights
    /// a validator pruned, or skipped through a checkpoint, are compared among the others).
    /// Errors: [`TestnetError::Inconsistent`] when a validator has no block at one of those
    /// heights; HTTP errors as [`Testnet::block`].
    pub async fn same_chain(&self, up_to: u64) -> Result<bool, TestnetError> {
        for h in 1..=up_to {
            let mut reference: Option<String> = None;
            for i in 0..self.validators() {
                let Some(block) = held(self.block(i, h).await)? else {
                    continue;
                };
                let Some(block) = block else {
                    return Err(TestnetError::Inconsistent {
                        validator: i,
                        message: format!("has no finalized block at height {h}"),
                    });
                };
                match &reference {
                    None => reference = Some(block.hash),
                    Some(hash) if *hash != block.hash => return Ok(false),
                    Some(_) => {}
                }
            }
        }
        Ok(true)
    }

    /// Validator `i`'s view of transaction `hash_hex` (`GET /tx/{hash}`); `None` when it does not
    /// know it (not yet gossiped, or dropped).
    pub async fn tx(&self, i: usize, hash_hex: &str) -> Result<Option<TxInfo>, TestnetError> {
        Ok(self.client(i)?.tx(hash_hex).await?)
    }

    /// Submits `tx` to validator `i` (`POST /tx`, [`Client::submit_tx`]): a 4xx/5xx answer of
    /// the mempool is [`Submitted::Rejected`], not an error.
    pub async fn submit_tx(&self, i: usize, tx: Vec<u8>) -> Result<Submitted, TestnetError> {
        Ok(self.client(i)?.submit_tx(tx).await?)
    }

    /// Validator `i`'s `GET /metrics` (Prometheus text).
    pub async fn metrics(&self, i: usize) -> Result<String, TestnetError> {
        Ok(self.client(i)?.metrics().await?)
    }

    /// The value of metric `name` in validator `i`'s thresholdd's `GET /metrics` (with its
    /// token; [`metric_value`]). Errors: [`TestnetError::Signer`] when the validator has no
    /// thresholdd, [`TestnetError::Io`] (its token file), [`TestnetError::Api`].
    pub async fn signer_metric(&self, i: usize, name: &str) -> Result<Option<f64>, TestnetError> {
        self.check_index(i)?;
        let Some(daemon) = self.signers[i].as_ref() else {
            return Err(TestnetError::Signer {
                validator: i,
                message: "this testnet has no remote signers".into(),
            });
        };
        let token_path = self.node_dir(i).join(SIGNER_TOKEN_FILE);
        let token = std::fs::read_to_string(&token_path).map_err(|source| TestnetError::Io {
            path: token_path,
            source,
        })?;
        let text = Client::with_http(self.http.clone(), format!("http://{}", daemon.listen))
            .with_token(token.trim())
            .metrics()
            .await?;
        Ok(metric_value(&text, name))
    }

    /// Stops validator `i`'s thresholdd (SIGKILL) and reaps it, leaving its node running:
    /// the node's votes then fail until the daemon is back ([`Testnet::spawn`] restarts it with
    /// the node). Nothing happens without a running daemon.
    pub fn kill_signer(&mut self, i: usize) {
        let daemon = self.signers.get_mut(i).and_then(Option::as_mut);
        if let Some(mut child) = daemon.and_then(|d| d.child.take()) {
            // Fails only if the process already exited.
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The value of metric `name` in validator `i`'s `/metrics` ([`metric_value`]).
    pub async fn metric(&self, i: usize, name: &str) -> Result<Option<f64>, TestnetError> {
        Ok(metric_value(&self.metrics(i).await?, name))
    }

    /// Polls `GET /status` of `nodes` every 100 ms until `done` holds for their statuses (given in
    /// the order of `nodes`, and only once every one of them answered), and returns those
    /// statuses.
    ///
    /// Errors: [`TestnetError::Timeout`] after `timeout` (naming `what` and the last heights
    /// seen), [`TestnetError::Exited`] as soon as a running validator dies,
    /// [`TestnetError::NoSuchValidator`].
    pub async fn wait_for_status(
        &self,
        what: &str,
        nodes: &[usize],
        timeout: Duration,
        mut done: impl FnMut(&[Status]) -> bool,
    ) -> Result<Vec<Status>, TestnetError> {
        for &i in nodes {
            self.check_index(i)?;
        }
        let start = Instant::now();
        loop {
            self.check_running()?;
            let mut statuses = Vec::with_capacity(nodes.len());
            let mut seen = Vec::with_capacity(nodes.len());
            for &i in nodes {
                match self.status(i).await {
                    Ok(s) => {
                        seen.push(format!(
                            "v{i}: height {} finalized {}",
                            s.height, s.finalized_height
                        ));
                        statuses.push(s);
                    }
                    Err(e) => seen.push(format!("v{i}: {e}")),
                }
            }
            if statuses.len() == nodes.len() && done(&statuses) {
                return Ok(statuses);
            }
            if start.elapsed() >= timeout {
                return Err(TestnetError::Timeout {
                    what: format!("{what} (last seen: {})", seen.join("; ")),
                    after: timeout,
                });
            }
            sleep(STATUS_POLL).await;
        }
    }

    /// Waits until every validator answers `GET /status`.
    pub async fn wait_ready(&self, timeout: Duration) -> Result<Vec<Status>, TestnetError> {
        let all: Vec<usize> = (0..self.validators()).collect();
        self.wait_for_status("every validator's API", &all, timeout, |_| true)
            .await
    }

    /// Waits until each of `nodes` has finalized `height`.
    pub async fn wait_finalized(
        &self,
        nodes: &[usize],
        height: u64,
        timeout: Duration,
    ) -> Result<Vec<Status>, TestnetError> {
        let what = format!("validators {nodes:?} to finalize height {height}");
        self.wait_for_status(&what, nodes, timeout, |s| {
            s.iter().all(|s| s.finalized_height >= height)
        })
        .await
    }

    /// Whether every validator answers `/status` with a finalized height of at least `height`.
    async fn all_finalized(&self, height: u64) -> bool {
        for i in 0..self.validators() {
            if !self
                .status(i)
                .await
                .is_ok_and(|s| s.finalized_height >= height)
            {
                return false;
            }
        }
        true
    }

    /// Looks up `hashes` on validator `i`, at most [`MAX_IN_FLIGHT`] requests at a time, and
    /// returns the ones it reports finalized. Lookups that fail count as not finalized yet.
    async fn finalized_among(
        &self,
        i: usize,
        hashes: &[String],
    ) -> Result<HashSet<String>, TestnetError> {
        let client = self.client(i)?;
        let mut finalized = HashSet::new();
        let mut tasks = JoinSet::new();
        let mut queue = hashes.iter();
        loop {
            while tasks.len() < MAX_IN_FLIGHT {
                let Some(hash) = queue.next() else { break };
                let (client, hash) = (client.clone(), hash.clone());
                tasks.spawn(async move {
                    let finalized = client.tx(&hash).await;
                    let ok = matches!(finalized, Ok(Some(t)) if t.status == TxStatus::Finalized);
                    (hash, ok)
                });
            }
            match tasks.join_next().await {
                Some(Ok((hash, true))) => {
                    finalized.insert(hash);
                }
                Some(_) => {}
                None => return Ok(finalized),
            }
        }
    }
}

impl Drop for Testnet {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// Runs a testnet as described in the module docs and returns its report.
///
/// Errors: invalid options, setup failures, a validator that dies, an API that stops answering,
/// a validator that does not reach `blocks` in time ([`TestnetError`]). A run that completes
/// but disagrees or leaves transactions unfinalized returns a report with
/// [`TestnetReport::passed`] false.
pub async fn run(opts: TestnetOptions) -> Result<TestnetReport, TestnetError> {
    opts.check()?;
    let (dir, temp) = match &opts.dir {
        Some(dir) => (dir.clone(), None),
        None => {
            let temp = tempfile::Builder::new()
                .prefix("quasar-testnet-")
                .tempdir()
                .map_err(|source| TestnetError::Io {
                    path: std::env::temp_dir(),
                    source,
                })?;
            (temp.path().to_path_buf(), Some(temp))
        }
    };
    eprintln!(
        "testnet: {} validators (+{} joining, {} leaving), {} blocks, block time {} ms, {} tx/s, \
         in {}",
        opts.validators,
        opts.join,
        opts.leave,
        opts.blocks,
        opts.block_time_ms,
        opts.tx_rate,
        dir.display()
    );
    let result = run_in(&dir, &opts).await;
    let passed = result.as_ref().is_ok_and(TestnetReport::passed);
    match temp {
        Some(temp) if passed => {
            if let Err(e) = temp.close() {
                eprintln!("testnet: could not remove {}: {e}", dir.display());
            }
        }
        Some(temp) => {
            let kept = temp.keep();
            eprintln!(
                "testnet: run failed; keeping {} (logs in v*/{NODE_LOG_FILE})",
                kept.display()
            );
        }
        // A run refused before any validator started has no logs to point at.
        None if !passed && node_dir(&dir, 0).join(NODE_LOG_FILE).exists() => eprintln!(
            "testnet: run failed; logs in {}/v*/{NODE_LOG_FILE}",
            dir.display()
        ),
        None => {}
    }
    result
}

/// What [`run`]'s load generator offered, sent, and got accepted.
#[derive(Default)]
struct Submissions {
    /// Transactions due at the rate over the time it ran.
    offered: u64,
    /// Distinct transactions sent (a resend after a push-back is not counted again).
    sent: u64,
    /// Hashes (hex) of accepted transactions.
    accepted: Vec<String>,
    /// Answers 503 or 429 (a transaction pushed back twice counts twice); each was queued to be
    /// sent again.
    pushbacks: u64,
    /// Refused for another reason.
    rejected: u64,
    /// In requests that failed (connection, timeout).
    failed: u64,
    /// Sent, pushed back, and not accepted when the run stopped sending.
    unresolved: u64,
}

/// A transfer waiting in the load generator's backlog: its bytes, and whether it was sent
/// before and pushed back.
type Queued = (Vec<u8>, bool);

impl Submissions {
    /// Counts the outcome of one batch (`txs`, in order) and returns the transactions a node
    /// pushed back (503, 429), in order, to be sent again, and how long the node asked the
    /// client to wait first (`Retry-After`).
    fn record(
        &mut self,
        txs: Vec<Vec<u8>>,
        outcome: Result<BatchSubmitted, TestnetError>,
    ) -> (Vec<Vec<u8>>, Option<Duration>) {
        let (outcomes, retry_after): (Vec<(u16, Option<String>, String)>, _) = match outcome {
            Ok(BatchSubmitted::Answered {
                answer,
                retry_after_secs,
            }) => (
                answer
                    .results
                    .into_iter()
                    .map(|r| (r.status, r.hash, r.error.unwrap_or_default()))
                    .collect(),
                retry_after_secs,
            ),
            Ok(BatchSubmitted::Rejected {
                status,
                body,
                retry_after_secs,
            }) => (
                txs.iter().map(|_| (status, None, body.clone())).collect(),
                retry_after_secs,
            ),
            Err(e) => {
                if self.failed == 0 {
                    eprintln!("testnet: submitting a batch of transactions failed: {e}");
                }
                self.failed = self.failed.saturating_add(txs.len() as u64);
                return (Vec::new(), None);
            }
        };
        let mut again = Vec::new();
        for (tx, (status, hash, error)) in txs.into_iter().zip(outcomes) {
            match (status, hash) {
                (200, Some(hash)) => self.accepted.push(hash),
                (429 | 503, _) => {
                    self.pushbacks = self.pushbacks.saturating_add(1);
                    again.push(tx);
                }
                _ => {
                    if self.rejected == 0 {
                        eprintln!("testnet: a node rejected a transaction: HTTP {status}: {error}");
                    }
                    self.rejected = self.rejected.saturating_add(1);
                }
            }
        }
        (again, retry_after.map(Duration::from_secs))
    }
}

/// Accounts the load generator spends from (each funded in the genesis with [`LOAD_BALANCE`]).
const LOAD_ACCOUNTS: usize = 256;

/// Each load account's genesis balance.
const LOAD_BALANCE: u64 = 1 << 50;

/// Seconds of load signed beyond the run's expected length (its blocks at their block time).
const LOAD_MARGIN_SECONDS: f64 = 10.0;

/// Most transfers the load generator signs before the run (about 3.4 KB each: 2 GB).
const MAX_PRESIGNED: usize = 600_000;

/// The load generator's client side: [`LOAD_ACCOUNTS`] accounts with fresh ML-DSA-65 keys,
/// each sending transfers of 1 unit (fee 1) to the next, nonces in order. Signing is the
/// client's work, not the chain's, and on a machine that runs the validators too it would
/// take their cores: so the transfers of the whole run (at most [`MAX_PRESIGNED`]) are signed
/// on every core before the validators start ([`Load::start`]), and none after that (signing
/// threads that kept the queue full took about a third of a core from the validators): a run
/// that outlasts them reports the rest of its offered transactions as not sent.
struct Load {
    keys: Vec<quasar_crypto::mldsa::SecretKey<quasar_crypto::mldsa::MlDsa65>>,
    rate: f64,
}

impl Load {
    fn new(rate: f64) -> Load {
        Load {
            keys: (0..LOAD_ACCOUNTS)
                .map(|_| quasar_crypto::mldsa::SecretKey::from_seed(&rand::random::<[u8; 32]>()))
                .collect(),
            rate,
        }
    }

    fn addresses(&self) -> Vec<quasar_app::Address> {
        self.keys
            .iter()
            .map(|k| quasar_app::address_of(k.public_key()))
            .collect()
    }

    /// How many transfers to sign before the run: the rate over the run's expected length
    /// (`blocks` at 3 × `block_time_ms`: under load, or on a busy machine, blocks come slower
    /// than the block time, and a run that runs out of transfers reports them as not sent)
    /// and [`LOAD_MARGIN_SECONDS`], at least 1,024 and at most [`MAX_PRESIGNED`].
    fn ahead(&self, blocks: u64, block_time_ms: u64) -> usize {
        let seconds = blocks as f64 * block_time_ms as f64 * 3.0 / 1e3 + LOAD_MARGIN_SECONDS;
        (self.rate * seconds).clamp(1024.0, MAX_PRESIGNED as f64) as usize
    }

    /// Starts signing `ahead` transfers for chain `chain_id` on one thread per core, each
    /// thread for its share of the accounts, nonce after nonce: each item is (account, signed
    /// transfer), an account's in nonce order. All of them fit in the queue; the counter says
    /// how many were signed so far, and the threads stop at `ahead`. Nothing is signed at
    /// rate 0.
    fn start(
        self,
        chain_id: u64,
        ahead: usize,
    ) -> (
        std::sync::mpsc::Receiver<(usize, Vec<u8>)>,
        Arc<std::sync::atomic::AtomicUsize>,
    ) {
        let (sender, receiver) = std::sync::mpsc::sync_channel(ahead);
        let signed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        if self.rate <= 0.0 {
            return (receiver, signed);
        }
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let addresses = Arc::new(self.addresses());
        let keys = Arc::new(self.keys);
        for first in 0..threads.min(LOAD_ACCOUNTS) {
            let (sender, signed) = (sender.clone(), signed.clone());
            let (addresses, keys) = (addresses.clone(), keys.clone());
            std::thread::spawn(move || {
                let mut rng = rand::thread_rng();
                for nonce in 0u64.. {
                    for account in (first..LOAD_ACCOUNTS).step_by(threads) {
                        if signed.load(std::sync::atomic::Ordering::Relaxed) >= ahead {
                            return;
                        }
                        let key = &keys[account];
                        let transfer = quasar_app::Transaction {
                            chain_id,
                            nonce,
                            fee: 1,
                            sender: addresses[account],
                            public_key: (nonce == 0).then(|| key.public_key().clone()),
                            action: quasar_app::Action::Transfer {
                                to: addresses[(account + 1) % LOAD_ACCOUNTS],
                                amount: 1,
                            },
                        };
                        let Ok(tx) = transfer.sign(key, &mut rng) else {
                            return;
                        };
                        if sender.send((account, tx.as_bytes().to_vec())).is_err() {
                            return;
                        }
                        signed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
        }
        (receiver, signed)
    }
}

async fn run_in(dir: &Path, opts: &TestnetOptions) -> Result<TestnetReport, TestnetError> {
    let thresholdd = opts.binary.with_file_name(THRESHOLDD_BINARY);
    // Refused before anything is written, so a missing daemon leaves no half-made network.
    if opts.remote_signers && !thresholdd.is_file() {
        return Err(TestnetError::NoThresholdd(thresholdd));
    }
    let mut net = Testnet::create_with_magnetar_set(
        dir,
        opts.validators.saturating_add(opts.join),
        opts.block_time_ms,
        opts.profile,
        opts.magnetar_set,
    )?;
    // The report reads every block of the run, and transactions by their index.
    net.keep_history()?;
    if let Some(blocks) = opts.epoch_length {
        net.set_epoch_length(blocks)?;
    }
    if !opts.validator_sets.is_empty() {
        net.set_validator_sets(&opts.validator_sets)?;
    }
    if opts.sets_from_registry {
        net.take_sets_from_registry()?;
    }
    if opts.join > 0 {
        let joiners: Vec<usize> = (opts.validators..opts.validators + opts.join).collect();
        net.make_joiners(&joiners, JOIN_BALANCE)?;
    }
    if let Some(setup) = &opts.rollup_setup {
        net.add_rollup(setup, opts.rollup_provers)?;
    }
    if opts.remote_signers {
        net.use_remote_signers(&thresholdd)?;
    }
    for (i, placement) in opts.placements.iter().enumerate() {
        net.place(i, placement.clone())?;
    }
    let load = Load::new(opts.tx_rate);
    net.fund_accounts(&load.addresses(), LOAD_BALANCE)?;
    net.add_accounts(&opts.accounts)?;
    if opts.remote_signers {
        net.start_signers()?;
    }
    let result = drive(&mut net, opts, load).await;
    if result.is_err() {
        for i in 0..net.validators() {
            eprintln!(
                "testnet: last lines of {}:\n{}",
                net.log_path(i).display(),
                net.log_tail(i, 15)
            );
        }
    }
    net.kill_all();
    result
}

async fn drive(
    net: &mut Testnet,
    opts: &TestnetOptions,
    load: Load,
) -> Result<TestnetReport, TestnetError> {
    let n = net.validators();
    let chain_id = GenesisFile::load(&net.dir.join(GENESIS_FILE))?.chain_id;
    let ahead = load.ahead(opts.blocks, opts.block_time_ms);
    let rate = load.rate;
    let (transfers, signed) = load.start(chain_id, ahead);
    if rate > 0.0 {
        let started = Instant::now();
        eprintln!("testnet: signing {ahead} transfers before the validators start");
        while signed.load(std::sync::atomic::Ordering::Relaxed) < ahead {
            sleep(Duration::from_millis(100)).await;
        }
        eprintln!(
            "testnet: signed {ahead} transfers in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        // The genesis time passed meanwhile: validators that start after it listen first.
        net.move_genesis_time()?;
    }
    for i in 0..n {
        net.spawn(i, &opts.binary)?;
    }
    net.wait_ready(API_READY_TIMEOUT).await?;
    eprintln!("testnet: all {n} validators answer; submitting transactions");
    let changing = change_by_transaction(net, opts);

    let budget = Duration::from_secs(60).saturating_add(Duration::from_millis(
        opts.block_time_ms
            .saturating_mul(opts.blocks)
            .saturating_mul(3),
    ));
    let cpu_before = net.metric(0, "process_cpu_seconds_total").await?;
    let (subs, changed_at) =
        tokio::join!(submit_until_height(net, opts, budget, transfers), changing);
    let (subs, changed_at) = (subs?, changed_at?);
    let cpu_after = net.metric(0, "process_cpu_seconds_total").await?;
    let load_cpu_s = cpu_before.zip(cpu_after).map(|(a, b)| b - a);
    eprintln!(
        "testnet: height {} reached; {} transactions offered, {} sent, {} accepted, {} pushed back \
         ({} push-back answers, each sent again), {} rejected, {} failed; waiting for finality",
        opts.blocks,
        subs.offered,
        subs.sent,
        subs.accepted.len(),
        subs.unresolved,
        subs.pushbacks,
        subs.rejected,
        subs.failed
    );

    let txs_finalized = wait_for_finality(net, opts.blocks, &subs.accepted, budget).await?;
    let bundle_size = GenesisFile::load(&net.dir.join(GENESIS_FILE))?.bundle_size;
    let last_bundle = (opts.blocks / bundle_size.max(1)).saturating_mul(bundle_size);
    let quasar_wait = match (opts.profile, &opts.rollup_setup) {
        // Hybrid bundles expire when their legs are late: waiting longer changes nothing.
        (Profile::Hybrid { .. }, _) => None,
        (_, Some(_)) => Some((1, ROLLUP_QUASAR_WAIT)),
        (_, None) => Some((last_bundle.max(1), QUASAR_WAIT)),
    };
    if let Some((target, budget)) = quasar_wait {
        wait_for_quasar(net, target, budget).await?;
    }
    let mut report = measure(
        net,
        opts.blocks,
        opts.validators,
        &subs,
        (txs_finalized, load_cpu_s),
    )
    .await?;
    (report.joiners, report.leavers) = (opts.join, opts.leave);
    let leavers = opts.validators - opts.leave..opts.validators;
    for (i, at) in (opts.validators..n).chain(leavers).zip(changed_at) {
        let in_set = net.status(i).await?.validator_index.is_some();
        match (i < opts.validators, in_set) {
            (false, true) => report.joined += 1,
            (true, false) => report.left += 1,
            (false, false) => eprintln!(
                "testnet: validator {i} (announced at height {at}) is NOT in the set at the end"
            ),
            (true, true) => eprintln!(
                "testnet: validator {i} (left at height {at}) is STILL in the set at the end"
            ),
        }
    }
    eprintln!(
        "testnet: agreement {}, {:.2} blocks/s, finality p50 {:.1} ms p99 {:.1} ms, {}/{} accepted transactions finalized ({:.0}/s)",
        report.agreement,
        report.blocks_per_sec,
        report.finality_p50_ms,
        report.finality_p99_ms,
        report.txs_finalized,
        report.txs_accepted,
        report.tps_finalized
    );
    Ok(report)
}

/// Each joiner's balance in the genesis: its stake and fees.
const JOIN_BALANCE: u64 = 10_000;

/// Registers each joiner of `opts` (validators `opts.validators..`) with a stake of [`STAKE`]
/// and announces its p2p address, then sends `Leave` for each leaver (the last
/// `opts.leave` genesis validators), through validator 0's API as a client would
/// (`register-validator`, `set-network-address`, `leave`); returns the heights at which each
/// joiner's announcement and each leaver's departure were final.
///
/// Errors: a transaction refused or not final within a minute ([`TestnetError::Inconsistent`]),
/// keys or genesis that cannot be read.
async fn change_by_transaction(
    net: &Testnet,
    opts: &TestnetOptions,
) -> Result<Vec<u64>, TestnetError> {
    if opts.join == 0 && opts.leave == 0 {
        return Ok(Vec::new());
    }
    // A client reads the sender's final account first: the chain must have executed a block.
    net.wait_finalized(&[0], 1, API_READY_TIMEOUT).await?;
    let genesis = net.dir.join(GENESIS_FILE);
    let chain = crate::wallet::Chain::open(&format!("http://{}", net.api(0)), &genesis)
        .map_err(|e| TestnetError::Options(e.to_string()))?;
    let chain_id = GenesisFile::load(&genesis)?.chain_id;
    let mut heights = Vec::new();
    let leavers = opts.validators - opts.leave..opts.validators;
    for i in (opts.validators..opts.validators + opts.join).chain(leavers) {
        let keys = quasar_chainspec::load_keys(&net.node_dir(i), &net.key_access(i)?)?;
        let refused = |message: String| TestnetError::Inconsistent {
            validator: i,
            message,
        };
        let actions = if i < opts.validators {
            vec![quasar_app::Action::Leave]
        } else {
            vec![
                quasar_app::Action::RegisterValidator {
                    amount: STAKE,
                    registration: Box::new(crate::wallet::registration_of(&keys, chain_id)),
                },
                quasar_app::Action::SetNetworkAddress {
                    address: net.p2p(i).to_string(),
                },
            ]
        };
        let mut height = 0;
        for action in actions {
            let hash = chain
                .send(&keys.mldsa, action, 0)
                .await
                .map_err(|e| refused(e.to_string()))?;
            let info = chain
                .wait_final(
                    &hash,
                    &quasar_app::address_of(keys.mldsa.public_key()),
                    Duration::from_secs(60),
                )
                .await
                .map_err(|e| refused(e.to_string()))?;
            height = info.height.unwrap_or(0);
        }
        if i < opts.validators {
            eprintln!("testnet: validator {i} left (final at height {height})");
        } else {
            eprintln!(
                "testnet: validator {i} registered and announced {} (final at height {height})",
                net.p2p(i)
            );
        }
        heights.push(height);
    }
    Ok(heights)
}

/// Submits transactions at `opts.tx_rate`, round-robin over the validators, until the first
/// validator reports height `opts.blocks`.
async fn submit_until_height(
    net: &Testnet,
    opts: &TestnetOptions,
    budget: Duration,
    transfers: std::sync::mpsc::Receiver<(usize, Vec<u8>)>,
) -> Result<Submissions, TestnetError> {
    // The genesis validators: a joiner's node follows the chain from behind until it is in.
    let n = opts.validators;
    let mut subs = Submissions::default();
    // (validator, transactions, answer) of each batch in flight: one per validator at a time,
    // so that a validator admits one account's transfers in nonce order.
    type Answer = (usize, Vec<Vec<u8>>, Result<BatchSubmitted, TestnetError>);
    let mut tasks: JoinSet<Answer> = JoinSet::new();
    let mut busy = vec![false; n];
    // When each validator may be sent to again (after a `Retry-After`).
    let mut resume = vec![Instant::now(); n];
    // Transfers due but not accepted yet, by validator (each account goes to one validator):
    // signed ones not sent yet, and pushed-back ones in front of them, in nonce order.
    let mut backlog: Vec<VecDeque<Queued>> = vec![VecDeque::new(); n];
    let mut taken = 0u64;
    let settle = |subs: &mut Submissions,
                  backlog: &mut [VecDeque<Queued>],
                  resume: &mut [Instant],
                  answer: Answer| {
        let (node, txs, outcome) = answer;
        let (again, retry_after) = subs.record(txs, outcome);
        for tx in again.into_iter().rev() {
            backlog[node].push_front((tx, true));
        }
        if let Some(wait) = retry_after {
            resume[node] = Instant::now() + wait;
        }
        node
    };
    let start = Instant::now();
    let mut next_poll = start;
    let mut tick = tokio::time::interval(SUBMIT_TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tick.tick().await;
        while let Some(joined) = tasks.try_join_next() {
            if let Ok(answer) = joined {
                let node = settle(&mut subs, &mut backlog, &mut resume, answer);
                busy[node] = false;
            }
        }
        // Pace by elapsed time, so slow answers delay transactions but do not lower the rate.
        subs.offered = (start.elapsed().as_secs_f64() * opts.tx_rate) as u64;
        while taken < subs.offered {
            // A transfer not signed yet is offered and not sent: the report shows it.
            let Ok((account, tx)) = transfers.try_recv() else {
                break;
            };
            backlog[account % n].push_back((tx, false));
            taken += 1;
        }
        for node in 0..n {
            if busy[node] || backlog[node].is_empty() || Instant::now() < resume[node] {
                continue;
            }
            let take = backlog[node].len().min(crate::api::MAX_BATCH_TXS);
            let mut txs = Vec::with_capacity(take);
            for (tx, resent) in backlog[node].drain(..take) {
                subs.sent += u64::from(!resent);
                txs.push(tx);
            }
            let client = net.client(node)?;
            busy[node] = true;
            tasks.spawn(async move {
                // A batch is far below ZAP's 4 GiB message limit, the encoder's only refusal.
                let batch = quasar_wire::TxBatch { txs };
                let answer = match batch.encode() {
                    Ok(body) => client.submit_txs(body).await.map_err(TestnetError::from),
                    Err(e) => Err(TestnetError::Options(format!("encoding a batch: {e}"))),
                };
                (node, batch.txs, answer)
            });
        }
        if Instant::now() >= next_poll {
            next_poll = Instant::now() + STATUS_POLL;
            net.check_running()?;
            let mut reached = false;
            for i in 0..n {
                if net.status(i).await.is_ok_and(|s| s.height >= opts.blocks) {
                    reached = true;
                    break;
                }
            }
            if reached {
                break;
            }
            if start.elapsed() >= budget {
                // The load so far goes with the error: a run that timed out prints no summary.
                return Err(TestnetError::Timeout {
                    what: format!(
                        "a validator to reach height {} (load so far: {} transactions offered, \
                         {} sent, {} accepted, {} push-back answers, {} rejected, {} failed)",
                        opts.blocks,
                        subs.offered,
                        subs.sent,
                        subs.accepted.len(),
                        subs.pushbacks,
                        subs.rejected,
                        subs.failed
                    ),
                    after: budget,
                });
            }
        }
    }
    while let Some(joined) = tasks.join_next().await {
        if let Ok(answer) = joined {
            settle(&mut subs, &mut backlog, &mut resume, answer);
        }
    }
    // Pushed back and not accepted by the end: sent, and left unresolved.
    subs.unresolved = backlog
        .iter()
        .flatten()
        .filter(|(_, resent)| *resent)
        .count() as u64;
    Ok(subs)
}

/// Waits until every validator has finalized `blocks` and every accepted transaction is
/// finalized on validator 0; returns how many accepted transactions were found finalized. When
/// `budget` runs out with the heights reached but transactions missing, returns the count so the
/// report shows it; with heights missing, errors.
async fn wait_for_finality(
    net: &Testnet,
    blocks: u64,
    accepted: &[String],
    budget: Duration,
) -> Result<u64, TestnetError> {
    let start = Instant::now();
    let all: Vec<usize> = (0..net.validators()).collect();
    let mut pending: Vec<String> = accepted.to_vec();
    let mut next_tx_check = start;
    let mut heights_reached = false;
    loop {
        net.check_running()?;
        if !heights_reached {
            heights_reached = net.all_finalized(blocks).await;
        }
        if !pending.is_empty() && Instant::now() >= next_tx_check {
            let finalized = net.finalized_among(0, &pending).await?;
            pending.retain(|h| !finalized.contains(h));
            next_tx_check = Instant::now() + TX_POLL;
        }
        if heights_reached && pending.is_empty() {
            break;
        }
        if start.elapsed() >= budget {
            if !heights_reached {
                // Report which validator is behind.
                net.wait_finalized(&all, blocks, Duration::ZERO).await?;
            }
            eprintln!(
                "testnet: {} of {} transactions still not finalized after {budget:?}",
                pending.len(),
                accepted.len()
            );
            break;
        }
        sleep(STATUS_POLL).await;
    }
    Ok(accepted.len().saturating_sub(pending.len()) as u64)
}

/// How long [`run`] waits for every validator to reach Quasar finality once the blocks are
/// final, without a rollup prover.
pub const QUASAR_WAIT: Duration = Duration::from_secs(60);
/// The same with a rollup prover: the first Groth16 proof takes minutes.
pub const ROLLUP_QUASAR_WAIT: Duration = Duration::from_secs(30 * 60);

/// Waits (at most `budget`) until every validator reports a Quasar-finalized height of at least
/// `target`, or one reports Quasar finality unavailable. Running out of time is not an error:
/// the report shows the heights reached.
async fn wait_for_quasar(net: &Testnet, target: u64, budget: Duration) -> Result<(), TestnetError> {
    let start = Instant::now();
    let mut next_note = start + Duration::from_secs(30);
    loop {
        net.check_running()?;
        let mut heights = Vec::with_capacity(net.validators());
        for i in 0..net.validators() {
            let status = net.status(i).await?;
            if status.quasar_unavailable.is_some() {
                return Ok(());
            }
            heights.push(status.quasar_finalized_height);
        }
        if heights.iter().all(|&h| h >= target) {
            return Ok(());
        }
        if start.elapsed() >= budget {
            eprintln!(
                "testnet: Quasar-finalized heights {heights:?} after {budget:?}, short of {target}"
            );
            return Ok(());
        }
        if Instant::now() >= next_note {
            next_note = Instant::now() + Duration::from_secs(30);
            eprintln!(
                "testnet: waiting for Quasar finality at height {target} ({:.0} s; Quasar-finalized heights {heights:?})",
                start.elapsed().as_secs_f64()
            );
        }
        sleep(STATUS_POLL).await;
    }
}

/// A lookup's result, with `None` for what the validator pruned.
fn held<T>(result: Result<T, TestnetError>) -> Result<Option<T>, TestnetError> {
    match result {
        Ok(found) => Ok(Some(found)),
        Err(TestnetError::Api(ClientError::Pruned { .. })) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Reads blocks `1..=blocks` from every validator (but the ones it pruned) and computes the
/// report; finality times come from validators `0..timed` (the genesis's: a joiner's are its
/// catch-up).
async fn measure(
    net: &Testnet,
    blocks: u64,
    timed: usize,
    subs: &Submissions,
    (txs_finalized, load_cpu_s): (u64, Option<f64>),
) -> Result<TestnetReport, TestnetError> {
    let n = net.validators();
    let mut agreement = true;
    let mut samples_ms = Vec::new();
    let mut first_timestamp_us = None;
    let mut last_finalized_us: Option<u64> = None;
    // Transactions in blocks 1..=blocks: what was finalized over the span measured (later
    // blocks, finalized while the run drains, are counted in `txs_finalized` only).
    let mut txs_in_span = 0u64;
    for h in 1..=blocks {
        let mut reference: Option<String> = None;
        for i in 0..n {
            let Some(block) = held(net.block(i, h).await)? else {
                continue;
            };
            let Some(block) = block else {
                return Err(TestnetError::Inconsistent {
                    validator: i,
                    message: format!(
                        "reports finalized height >= {blocks} but has no block at height {h}"
                    ),
                });
            };
            match &reference {
                None => {
                    reference = Some(block.hash.clone());
                    txs_in_span += block.tx_count;
                }
                Some(hash) if *hash != block.hash => {
                    eprintln!("testnet: DISAGREEMENT at height {h}: validator 0 has {hash}, validator {i} has {}", block.hash);
                    agreement = false;
                }
                Some(_) => {}
            }
            // A joiner learns the blocks before its registration late, as it catches up.
            if let Some(at) = block.finalized_at_us.filter(|_| i < timed) {
                samples_ms.push((i128::from(at) - i128::from(block.timestamp_us)) as f64 / 1000.0);
                if h == blocks {
                    last_finalized_us = Some(last_finalized_us.map_or(at, |m| m.max(at)));
                }
            }
            if h == 1 && first_timestamp_us.is_none() {
                first_timestamp_us = Some(block.timestamp_us);
            }
        }
    }
    samples_ms.sort_by(f64::total_cmp);
    let (blocks_per_sec, tps_finalized) = match (first_timestamp_us, last_finalized_us) {
        (Some(first), Some(last)) if last > first => {
            let span_s = (last - first) as f64 / 1e6;
            (blocks as f64 / span_s, txs_in_span as f64 / span_s)
        }
        _ => (0.0, 0.0),
    };
    let cpu_us_per_tx = load_cpu_s
        .filter(|_| txs_in_span > 0)
        .map(|s| s * 1e6 / txs_in_span as f64);
    let mut finalized_height = u64::MAX;
    let mut quasar_finalized_height = u64::MAX;
    let mut first = None;
    let (mut verify_ms, mut sign_ms) = (Vec::new(), Vec::new());
    for i in 0..n {
        let status = net.status(i).await?;
        finalized_height = finalized_height.min(status.finalized_height);
        quasar_finalized_height = quasar_finalized_height.min(status.quasar_finalized_height);
        verify_ms.push(status.leg_verify_p50_ms.clone());
        sign_ms.push(status.leg_sign_p50_ms.clone());
        first.get_or_insert(status);
    }
    let first = first.ok_or_else(|| TestnetError::Options("no validators".into()))?;
    Ok(TestnetReport {
        validators: n,
        finalized_height,
        agreement,
        blocks_per_sec,
        finality_p50_ms: nearest_rank(&samples_ms, 50.0),
        finality_p95_ms: nearest_rank(&samples_ms, 95.0),
        finality_p99_ms: nearest_rank(&samples_ms, 99.0),
        txs_offered: subs.offered,
        txs_sent: subs.sent,
        txs_accepted: subs.accepted.len() as u64,
        txs_pushed_back: subs.unresolved,
        txs_rejected: subs.rejected,
        txs_failed: subs.failed,
        txs_finalized,
        tps_finalized,
        cpu_us_per_tx,
        profile: first.profile,
        quasar_finalized_height,
        quasar_unavailable: first.quasar_unavailable,
        leg_verify_p50_ms: median_per_leg(&verify_ms),
        leg_sign_p50_ms: median_per_leg(&sign_ms),
        joiners: 0,
        joined: 0,
        leavers: 0,
        left: 0,
    })
}

/// Per leg, the median of the values the validators' maps give for it.
fn median_per_leg(per_validator: &[BTreeMap<String, f64>]) -> BTreeMap<String, f64> {
    let mut by_leg: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for times in per_validator {
        for (leg, &ms) in times {
            by_leg.entry(leg.clone()).or_default().push(ms);
        }
    }
    by_leg
        .into_iter()
        .map(|(leg, mut values)| {
            values.sort_by(f64::total_cmp);
            (leg, nearest_rank(&values, 50.0))
        })
        .collect()
}

/// The `p`-th percentile (0 < p ≤ 100) of ascending `sorted` by the nearest-rank method: the
/// value at rank ⌈p/100 · n⌉ (1-based). Returns 0 for an empty slice.
pub fn nearest_rank(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    let rank = (p / 100.0 * n as f64).ceil() as usize;
    sorted
        .get(rank.clamp(1, n.max(1)) - 1)
        .copied()
        .unwrap_or(0.0)
}

/// The value of metric `name` in Prometheus/OpenMetrics text: the sum of its samples over all
/// label sets; `None` when absent. Lines are `name[{labels}] value [timestamp]`.
pub fn metric_value(text: &str, name: &str) -> Option<f64> {
    let mut found = None;
    for line in text.lines() {
        if line.starts_with('#') {
            continue;
        }
        let Some(rest) = line.strip_prefix(name) else {
            continue;
        };
        let rest = if let Some(labelled) = rest.strip_prefix('{') {
            match labelled.split_once('}') {
                Some((_, after)) => after,
                None => continue,
            }
        } else if rest.starts_with(' ') {
            rest
        } else {
            continue; // a longer name with this prefix
        };
        if let Some(value) = rest
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<f64>().ok())
        {
            found = Some(found.unwrap_or(0.0) + value);
        }
    }
    found
}

/// How the key directory `key_dir` of a testnet validator is opened: under the passphrase in
/// its `validator.passphrase`. Errors: that file cannot be read.
fn key_access(key_dir: &Path) -> Result<quasar_chainspec::KeyAccess, TestnetError> {
    let path = key_dir.join(KEY_PASSPHRASE_FILE);
    Ok(
        quasar_chainspec::KeyAccess::from_sources(Some(&path), false)
            .map_err(quasar_chainspec::ConfigError::from)?,
    )
}

fn node_dir(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("v{i}"))
}

/// Binds `bind(port)` on a free loopback port below the kernel's ephemeral range
/// (`/proc/sys/net/ipv4/ip_local_port_range`, 32768 and up by default), chosen at random from
/// 10000 up: ports there are never handed to outgoing connections, so one stays free between
/// this reservation and the node binding it, however many connections other processes open
/// meanwhile (a port from `bind(0)` did not: a test saw its API port taken by a client in that
/// window). Falls back to port 0 when the range below is too small or 64 tries find nothing.
fn bind_below_ephemeral<T>(bind: impl Fn(u16) -> std::io::Result<T>) -> std::io::Result<T> {
    const LOWEST: u16 = 10_000;
    let ephemeral_start = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32_768);
    if ephemeral_start > LOWEST + 1_000 {
        for _ in 0..64 {
            let port = rand::Rng::gen_range(&mut rand::thread_rng(), LOWEST..ephemeral_start);
            if let Ok(bound) = bind(port) {
                return Ok(bound);
            }
        }
    }
    bind(0)
}

/// Picks `count` distinct free loopback (UDP p2p, TCP API) address pairs
/// ([`bind_below_ephemeral`]). All sockets are held until every port is chosen, so the pairs do
/// not collide with each other.
fn reserve_ports(count: usize) -> Result<Vec<NodeAddrs>, TestnetError> {
    let mut held = Vec::with_capacity(count);
    let mut addrs = Vec::with_capacity(count);
    for _ in 0..count {
        let udp = bind_below_ephemeral(|port| UdpSocket::bind(("127.0.0.1", port))).map_err(
            |source| TestnetError::Port {
                protocol: "udp",
                source,
            },
        )?;
        let tcp = bind_below_ephemeral(|port| TcpListener::bind(("127.0.0.1", port))).map_err(
            |source| TestnetError::Port {
                protocol: "tcp",
                source,
            },
        )?;
        let p2p = udp.local_addr().map_err(|source| TestnetError::Port {
            protocol: "udp",
            source,
        })?;
        let api = tcp.local_addr().map_err(|source| TestnetError::Port {
            protocol: "tcp",
            source,
        })?;
        addrs.push(NodeAddrs { p2p, api });
        held.push((udp, tcp));
    }
    Ok(addrs)
}
