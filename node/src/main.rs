//! `quasar-node`: the Quasar validator node command line.

use clap::{Parser, Subcommand};
use quasar_chainspec::{keygen_with_set, parse_magnetar_set, GenesisFile, KeyAccess};
use quasar_crypto::magnetar::ParameterSet;
use quasar_crypto::mldsa::{self, MlDsa65};
use quasar_lanes::cert::Profile;
use quasar_node::config::NodeConfig;
use quasar_node::rollup;
#[cfg(feature = "testnet")]
use quasar_node::testnet::{self, TestnetOptions};
use quasar_node::wallet;
#[cfg(feature = "testnet")]
use quasar_process::interrupted;
use quasar_process::{init_tracing, now_us, runtime, LogFormat};
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "quasar-node",
    version = quasar_process::build_info::LONG_VERSION,
    about = "Quasar validator node"
)]
struct Cli {
    /// Log line format on stderr: text, or json (one object per line, for log collectors).
    /// The level comes from RUST_LOG (default info).
    #[arg(
        long,
        global = true,
        value_enum,
        default_value_t,
        env = "QUASAR_LOG_FORMAT"
    )]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

/// How a command opens the validator secret key file (`quasar_chainspec::key_file`).
#[derive(clap::Args)]
struct KeyFileArgs {
    /// File holding the key file's passphrase (a trailing newline is dropped); otherwise the
    /// QUASAR_KEY_PASSPHRASE environment variable.
    #[arg(long)]
    passphrase_file: Option<PathBuf>,
    /// Accept a plaintext (unencrypted) key file; with `keygen`, write one.
    #[arg(long)]
    plaintext: bool,
}

impl KeyFileArgs {
    fn access(&self) -> Result<KeyAccess, String> {
        KeyAccess::from_sources(self.passphrase_file.as_deref(), self.plaintext)
            .map_err(|e| e.to_string())
    }
}

/// The node an account command asks, and the genesis it checks every answer against.
#[derive(clap::Args)]
struct ChainArgs {
    /// The node's API (its `api_listen`).
    #[arg(long, default_value = "http://127.0.0.1:8000")]
    api: String,
    /// The chain's genesis.json: answers are checked against its validator sets (Merkle proof
    /// to the state root, header to the finalized block, certificate to a quorum).
    #[arg(long)]
    genesis: PathBuf,
}

/// An account's key: an account key file (`account new`), or a validator's key directory
/// (`keygen`: a validator's account is the one of its ML-DSA-65 identity key), and the
/// passphrase.
#[derive(clap::Args)]
#[command(group = clap::ArgGroup::new("account_key").required(true).args(["key", "key_dir"]))]
struct AccountKeyArgs {
    /// The account key file.
    #[arg(long)]
    key: Option<PathBuf>,
    /// A validator's key directory (`keygen --out`), for its account.
    #[arg(long)]
    key_dir: Option<PathBuf>,
    /// File holding its passphrase (a trailing newline is dropped); otherwise the
    /// QUASAR_KEY_PASSPHRASE environment variable.
    #[arg(long)]
    passphrase_file: Option<PathBuf>,
    /// With --key-dir: accept a plaintext (unencrypted) validator key file.
    #[arg(long, requires = "key_dir")]
    plaintext: bool,
}

impl AccountKeyArgs {
    fn open(&self) -> Result<mldsa::SecretKey<MlDsa65>, String> {
        match (&self.key, &self.key_dir) {
            (Some(key), _) => {
                let passphrase = account_passphrase(self.passphrase_file.as_deref())?;
                wallet::open_account_file(key, &passphrase).map_err(|e| e.to_string())
            }
            (None, Some(dir)) => {
                let access = if self.plaintext {
                    KeyAccess::plaintext()
                } else {
                    KeyAccess::from_sources(self.passphrase_file.as_deref(), false)
                        .map_err(|e| e.to_string())?
                };
                let keys = quasar_chainspec::load_keys(dir, &access).map_err(|e| e.to_string())?;
                Ok(keys.mldsa)
            }
            (None, None) => Err("give --key (an account key file) or --key-dir".into()),
        }
    }
}

/// What an account sends: its key, and how.
#[derive(clap::Args)]
struct SendArgs {
    #[command(flatten)]
    key: AccountKeyArgs,
    #[command(flatten)]
    how: HowToSend,
}

/// What a validator's account sends: the validator's key directory (its ML-DSA-65 identity key
/// is its account's key), and how.
#[derive(clap::Args)]
struct ValidatorSendArgs {
    /// The validator's key directory (`keygen --out`).
    #[arg(long)]
    key_dir: PathBuf,
    #[command(flatten)]
    key_file: KeyFileArgs,
    #[command(flatten)]
    how: HowToSend,
}

impl ValidatorSendArgs {
    fn keys(&self) -> Result<quasar_chainspec::keys::ValidatorKeys, String> {
        quasar_chainspec::load_keys(&self.key_dir, &self.key_file.access()?)
            .map_err(|e| e.to_string())
    }
}

/// The fee, whether to wait for finality, and the node and genesis.
#[derive(clap::Args)]
struct HowToSend {
    /// Fee, in the chain's smallest unit.
    #[arg(long, default_value_t = 1)]
    fee: u64,
    /// Wait (up to 60 s) until the transaction is final, and print its height.
    #[arg(long)]
    wait: bool,
    #[command(flatten)]
    chain: ChainArgs,
}

fn account_passphrase(
    file: Option<&std::path::Path>,
) -> Result<zeroize::Zeroizing<Vec<u8>>, String> {
    quasar_chainspec::sealing::read_passphrase(
        file,
        quasar_chainspec::key_file::PASSPHRASE_ENV,
        "--passphrase-file",
    )
    .map_err(|e| format!("account key passphrase: {e}"))
}

#[derive(Subcommand)]
enum AccountAction {
    /// Generate an account key (ML-DSA-65, FIPS 204) into a new encrypted file (mode 0600;
    /// Argon2id + XChaCha20-Poly1305 under the passphrase) and print its address.
    New {
        /// The file to write (never replaced).
        #[arg(long)]
        out: PathBuf,
        /// File holding the passphrase; otherwise QUASAR_KEY_PASSPHRASE.
        #[arg(long)]
        passphrase_file: Option<PathBuf>,
    },
    /// Print the address of an account key file, or of a validator's account (`--key-dir`).
    Address {
        #[command(flatten)]
        key: AccountKeyArgs,
    },
}

#[derive(Subcommand)]
enum KeysAction {
    /// Encrypt the plaintext secret key file of a key directory in place, under the passphrase
    /// of `--passphrase-file` (else QUASAR_KEY_PASSPHRASE). A file already encrypted under it
    /// is left as it is.
    Seal {
        /// Key directory written by `keygen`.
        #[arg(long)]
        dir: PathBuf,
        /// File holding the passphrase (a trailing newline is dropped).
        #[arg(long)]
        passphrase_file: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum Command {
    /// Generate validator keys (BLS with proof of possession, ML-DSA-65 identity, SLH-DSA Magnetar
    /// key, TLS identity) into DIR.
    Keygen {
        /// Key directory to create; the secret file is written with mode 0600.
        #[arg(long)]
        out: PathBuf,
        /// Validator name (default: the directory's name).
        #[arg(long)]
        name: Option<String>,
        /// SLH-DSA parameter set of the Magnetar key (FIPS 205 Table 2): 192f (signatures of
        /// 35,664 bytes, about 0.3 s to sign) or 192s (16,224 bytes, about 5 s to sign). Every
        /// validator of a network uses the same set; the genesis takes it from the key files.
        #[arg(long, default_value = "192f", value_parser = parse_magnetar_set)]
        slhdsa_set: ParameterSet,
        /// The secret file is encrypted under this passphrase (Argon2id + XChaCha20-Poly1305);
        /// `--plaintext` writes it unencrypted instead.
        #[command(flatten)]
        key_file: KeyFileArgs,
    },
    /// Build genesis.json from validator key directories (whose Magnetar keys must all be of one
    /// parameter set, which the genesis records).
    Genesis {
        /// Key directories written by `keygen`, in validator index order.
        #[arg(long, num_args = 1.., required = true)]
        validators: Vec<PathBuf>,
        /// Output file.
        #[arg(long)]
        out: PathBuf,
        /// Chain id (default: a random one, printed). Transactions are signed for it, so every
        /// chain needs its own: two chains with one id accept each other's transactions.
        #[arg(long)]
        chain_id: Option<u64>,
        /// Stake of each validator.
        #[arg(long, default_value_t = 100)]
        stake: u64,
        /// Genesis time = now + this many seconds (at most 604800, one week); block 1 is proposed
        /// one block time later.
        #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=604_800))]
        start_delay_secs: u64,
        /// A validator-set change, EPOCH:DIR,DIR,… (key directories of the set from that epoch
        /// on, in index order; repeat the flag for each change, by increasing epoch). Under a
        /// profile with threshold legs, `deal` then gives every set its keys.
        #[arg(long = "change", value_parser = quasar_chainspec::parse_epoch_list::<PathBuf>)]
        changes: Vec<(u64, Vec<PathBuf>)>,
        /// A genesis allocation, ADDRESS=BALANCE (an address as `account new` prints it, the
        /// balance in the chain's smallest unit); repeat the flag for each account.
        #[arg(long = "account", value_parser = parse_allocation)]
        accounts: Vec<quasar_chainspec::GenesisAccount>,
        /// The cert profile: quasar (the default), aurora, polaris, fast or hybrid-<deadline>.
        #[arg(long)]
        profile: Option<Profile>,
        /// Blocks per epoch (default 7200; a multiple of the bundle size, 16, except under
        /// `fast`; 0 runs one endless epoch).
        #[arg(long)]
        epoch_length: Option<u64>,
        /// Take the validator sets after epoch 1 from the registry in the chain's state
        /// (`validator_set_source` "registry"; needs `--profile fast`, an epoch length above 0,
        /// and no `--change`).
        #[arg(long)]
        sets_from_registry: bool,
    },
    /// Trusted-dealer setup of the threshold keys the genesis profile needs (a Corona key for
    /// quasar, aurora, polaris and hybrid; a Pulsar key for aurora and polaris, among a
    /// committee of 4 drawn by stake above 4 validators), t = n − ⌊(n − 1)/3⌋ of the key's
    /// parties: writes each share into its validator's secret key file and the group keys (and
    /// any Pulsar committee) into the genesis file. For development and test networks: the dealer
    /// sees every share. Run before the chain starts (the group keys change the genesis hash).
    Deal {
        /// The genesis file to complete (rewritten in place).
        #[arg(long)]
        genesis: PathBuf,
        /// Key directories of every validator of the genesis, in roster order: the genesis
        /// validators in index order, then each validator change's newcomers in theirs.
        #[arg(long, num_args = 1.., required = true)]
        validators: Vec<PathBuf>,
        /// Opens every secret key file (one passphrase for all); each is rewritten in the form
        /// it was read, encrypted or (with `--plaintext`) plaintext.
        #[command(flatten)]
        key_file: KeyFileArgs,
    },
    /// Validator key directory maintenance.
    Keys {
        #[command(subcommand)]
        action: KeysAction,
    },
    /// Write a commented starting node.toml for the validator of a key directory on the chain
    /// of a genesis file (refuses to overwrite a file).
    Init {
        /// Key directory written by `keygen` (only its public file is read).
        #[arg(long)]
        keys: PathBuf,
        /// The chain's genesis.json.
        #[arg(long)]
        genesis: PathBuf,
        /// The file to write.
        #[arg(long, default_value = "node.toml")]
        out: PathBuf,
        /// Data directory (block store, signing guard).
        #[arg(long, default_value = "data")]
        data_dir: PathBuf,
        /// QUIC listen address for validator traffic.
        #[arg(long, default_value = "0.0.0.0:9000")]
        p2p_listen: std::net::SocketAddr,
        /// Admin API listen address.
        #[arg(long, default_value = "127.0.0.1:8000")]
        api_listen: std::net::SocketAddr,
        /// The key file's passphrase file (as `keygen --passphrase-file`), written as
        /// `key_passphrase_file`; without it that line is commented out and the node reads
        /// QUASAR_KEY_PASSPHRASE.
        #[arg(long)]
        key_passphrase_file: Option<PathBuf>,
        /// Every validator's p2p address (ip:port, [ipv6]:port or host:port), comma-separated
        /// in genesis order, this validator's own included (a validator outside the genesis
        /// that joins by registering lists the genesis validators); without it the [[peers]] entries
        /// are written commented out, to fill in.
        #[arg(long, value_delimiter = ',')]
        peers: Vec<quasar_p2p::PeerAddress>,
    },
    /// Run a validator.
    Run {
        /// Path of node.toml.
        #[arg(long)]
        config: PathBuf,
    },
    /// Account keys of the chain's built-in application (`address --key-dir` also prints a
    /// validator's account).
    Account {
        #[command(subcommand)]
        action: AccountAction,
    },
    /// An account's balance, stake and nonce as of the node's latest finalized state, checked
    /// against the genesis (no trust in the node); JSON on stdout.
    Balance {
        /// The account's address (hex, 32 bytes; `account new` prints it).
        address: String,
        #[command(flatten)]
        chain: ChainArgs,
    },
    /// Send an amount from an account to another; prints the transaction hash (JSON).
    Transfer {
        /// The recipient's address (hex, 32 bytes).
        #[arg(long)]
        to: String,
        /// Amount, in the chain's smallest unit.
        #[arg(long)]
        amount: u64,
        #[command(flatten)]
        send: SendArgs,
    },
    /// Move an amount of an account's balance to its stake.
    Stake {
        /// Amount.
        #[arg(long)]
        amount: u64,
        #[command(flatten)]
        send: SendArgs,
    },
    /// Move an amount of an account's stake back to its balance (a registered validator's
    /// stake is bonded until three epochs after it leaves).
    Unstake {
        /// Amount.
        #[arg(long)]
        amount: u64,
        #[command(flatten)]
        send: SendArgs,
    },
    /// Register a validator: its account (the address of its ML-DSA-65 identity key, which
    /// signs) registers its BLS key (with its proof of possession), SLH-DSA key and TLS
    /// certificate, and stakes an amount of its balance. The account must hold the amount and
    /// the fee: while it does not exist, this command says so and prints its address.
    RegisterValidator {
        /// Amount of the account's balance to add to its stake (0 when it has staked already).
        #[arg(long)]
        amount: u64,
        #[command(flatten)]
        send: ValidatorSendArgs,
    },
    /// Announce where a registered validator listens for validator traffic (QUIC, UDP): every
    /// node dials it there and accepts its TLS certificate, and from then on the registry may
    /// select it into a set (a validator registered after the genesis is not selected before).
    /// Send it after `register-validator --wait`, and again when the validator moves hosts.
    SetNetworkAddress {
        /// `host:port` or `ip:port` that every validator can reach (its `p2p_listen`, as seen
        /// from the others).
        #[arg(long)]
        address: quasar_p2p::PeerAddress,
        #[command(flatten)]
        send: ValidatorSendArgs,
    },
    /// End a validator's registration: sets derived from the registry omit it from the set
    /// two epochs later (on a chain whose genesis says `validator_set_source` "registry"); its
    /// stake stays bonded for three epochs and while a set it is in is in force, then
    /// `unstake --key-dir` returns it.
    Leave {
        #[command(flatten)]
        send: ValidatorSendArgs,
    },
    /// Report a validator's conflicting votes or proposals (evidence a node recorded: `GET
    /// /evidence`; proposals are sent as the notarize votes they carry) in a transaction: once
    /// final it burns the offender's stake and ends its registration. Any account may send it.
    ReportEquivocation {
        /// The view of the conflicting votes.
        #[arg(long)]
        view: u64,
        /// The offender's index in the epoch's validator set (as `GET /evidence` names it).
        #[arg(long)]
        signer: u32,
        #[command(flatten)]
        send: SendArgs,
    },
    /// The validator registry as a node says it is (not checked): every registered validator
    /// with its status, stake and BLS key, as of the node's latest executed block; JSON.
    Validators {
        /// The node's API.
        #[arg(long, default_value = "http://127.0.0.1:8000")]
        api: String,
    },
    /// Where a transaction stands on a node: pending, finalized (with its height), or unknown.
    TxStatus {
        /// The transaction hash (hex, as `transfer` prints it).
        hash: String,
        /// The node's API.
        #[arg(long, default_value = "http://127.0.0.1:8000")]
        api: String,
    },
    /// The signing guard's history as a JSON document (docs/operations.md "Moving a validator
    /// to another host"): export it, import one, or print it.
    Guard {
        #[command(subcommand)]
        action: GuardAction,
    },
    /// Run seeded simulations of the consensus core with random faults and Byzantine validators,
    /// check each with the independent safety checker, and print one JSON summary line. Shows a
    /// progress bar on a terminal; the simulated validators log nothing unless RUST_LOG is set.
    Simulate {
        /// Number of seeded runs.
        #[arg(long, default_value_t = 100)]
        seeds: u64,
        /// Seed of the first run (replay a failing run with `--first-seed S --seeds 1`).
        #[arg(long, default_value_t = 1)]
        first_seed: u64,
        /// Validators per run.
        #[arg(long, default_value_t = 4)]
        validators: usize,
        /// Byzantine validators per run (at most (validators - 1) / 3).
        #[arg(long, default_value_t = 1)]
        byzantine: usize,
        /// Heights every honest validator must finalize in each run.
        #[arg(long, default_value_t = 20)]
        heights: u64,
    },
    /// Start a local network of N validator processes, drive transactions, check agreement, and
    /// print one JSON summary line.
    #[cfg(feature = "testnet")]
    Testnet {
        /// Number of validators.
        #[arg(long, default_value_t = 4)]
        validators: usize,
        /// Stop once every node has finalized this height.
        #[arg(long, default_value_t = 50)]
        blocks: u64,
        /// Directory for keys, genesis, configs and data (default: a new temporary directory).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Minimum time between blocks, milliseconds.
        #[arg(long, default_value_t = 500)]
        block_time_ms: u64,
        /// Client transactions per second (0 sends none).
        #[arg(long, default_value_t = 100.0, allow_negative_numbers = true)]
        tx_rate: f64,
        /// Cert profile of the genesis: quasar, aurora, polaris, fast or hybrid-<deadline>
        /// (e.g. hybrid-1s). The default, aurora, reaches Quasar finality with no setup; quasar
        /// and hybrid also need `--rollup-setup`.
        #[arg(long, default_value_t = testnet::DEFAULT_PROFILE)]
        profile: Profile,
        /// A `rollup-setup` directory for this many validators, for profiles with a Groth16 leg
        /// (quasar, hybrid-<deadline>): its verifying key goes into the genesis and its proving
        /// key to the provers. Made there first when it holds no keys (minutes, gigabytes).
        #[arg(long)]
        rollup_setup: Option<PathBuf>,
        /// How many validators prove the rollup leg (each proof takes minutes of every core
        /// and gigabytes of memory).
        #[arg(long, default_value_t = 1)]
        rollup_provers: usize,
        /// Blocks per epoch (default 7200; a multiple of the bundle size, 16, except under
        /// `fast`; 0 runs one endless epoch).
        #[arg(long)]
        epoch_length: Option<u64>,
        /// SLH-DSA parameter set of the validators' Magnetar keys: 192f (default) or 192s
        /// (smaller signatures, about 5 s of one core to sign).
        #[arg(long, default_value = "192f", value_parser = parse_magnetar_set)]
        slhdsa_set: ParameterSet,
        /// A validator set from an epoch on, EPOCH:V,V,… with validators numbered 0 to N − 1
        /// (repeat the flag: the first for epoch 0, then each change by increasing epoch,
        /// e.g. `--validator-set 0:0,1,2,3 --validator-set 2:1,2,3,4`); needs
        /// `--epoch-length`. Each set gets its own threshold keys. Default: every validator in
        /// every epoch.
        #[arg(long = "validator-set", value_parser = quasar_chainspec::parse_epoch_list::<usize>)]
        validator_sets: Vec<(u64, Vec<usize>)>,
        /// Take the validator sets from the registry in the chain's state (the genesis
        /// `validator_set_source` "registry"): staking transactions final in epoch e change
        /// the set of epoch e + 2. Needs `--profile fast` and `--epoch-length`.
        #[arg(long)]
        sets_from_registry: bool,
        /// Validators that join by transaction, beside the `--validators` of the genesis: each
        /// runs from the start, registers and announces its address once the chain runs, and
        /// must be in the set from two epochs later. Needs `--sets-from-registry` and at least
        /// 4 epochs of blocks.
        #[arg(long, default_value_t = 0)]
        join: usize,
        /// Genesis validators that leave by transaction (the last ones): each sends `leave`
        /// once the chain runs, and must be out of the set from two epochs later. Needs
        /// `--sets-from-registry` and at least 4 epochs of blocks.
        #[arg(long, default_value_t = 0)]
        leave: usize,
        /// Run one thresholdd per validator (the `thresholdd` binary next to this one) holding
        /// its BLS vote key, and sign every vote through it (`signer = "remote"`).
        #[arg(long)]
        remote_signers: bool,
        /// Fund an account of your own in the genesis (repeatable; ADDRESS is `account new`'s
        /// or `account address`'s hex), to try the account commands (`transfer`, `balance`,
        /// `tx-status`) against the running network: give it `--dir` and enough `--blocks`.
        #[arg(long = "account", value_name = "ADDRESS=BALANCE", value_parser = parse_allocation)]
        accounts: Vec<quasar_chainspec::GenesisAccount>,
    },
    /// Not in this build: it was built without the `testnet` feature (a production build).
    #[cfg(not(feature = "testnet"))]
    #[command(hide = true)]
    Testnet {
        /// Whatever was given: refused as a whole.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        _args: Vec<String>,
    },
    /// Generate Groth16 keys of the ML-DSA-65 rollup for N validators and T signatures per
    /// proof into DIR (rollup.pk, rollup.vk.json). A single-party setup: fine for testnets, not
    /// for production, which needs a multi-party ceremony.
    RollupSetup {
        /// Number of validators n in the genesis the keys will serve.
        #[arg(long)]
        validators: usize,
        /// Signatures per proof τ (their stake must exceed 2/3 of the total).
        #[arg(long)]
        quorum: usize,
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
        /// 32-byte hex seed for a reproducible (testnet) setup; default: OS randomness.
        #[arg(long)]
        seed: Option<String>,
    },
    /// Sign a 32-byte round digest with this validator's ML-DSA-65 identity key for the rollup;
    /// prints one JSON signature entry.
    RollupSign {
        /// Key directory written by `keygen`.
        #[arg(long)]
        keys: PathBuf,
        /// The digest, 64 hex digits.
        #[arg(long)]
        digest: String,
        #[command(flatten)]
        key_file: KeyFileArgs,
    },
    /// Prove that a quorum of the genesis validators signed a digest, from a JSON array of
    /// `rollup-sign` entries; writes a proof file.
    RollupProve {
        /// Directory written by `rollup-setup`.
        #[arg(long)]
        setup: PathBuf,
        /// genesis.json of the validator set.
        #[arg(long)]
        genesis: PathBuf,
        /// The digest, 64 hex digits.
        #[arg(long)]
        digest: String,
        /// JSON array of signature entries.
        #[arg(long)]
        signatures: PathBuf,
        /// Proof file to write.
        #[arg(long)]
        out: PathBuf,
    },
    /// Verify a rollup proof against a genesis; prints {"valid": ...} and exits 0 only if valid.
    RollupVerify {
        /// Directory written by `rollup-setup` (only rollup.vk.json is read).
        #[arg(long)]
        setup: PathBuf,
        /// genesis.json of the validator set.
        #[arg(long)]
        genesis: PathBuf,
        /// Proof file written by `rollup-prove`.
        #[arg(long)]
        proof: PathBuf,
    },
}

#[derive(Subcommand)]
enum GuardAction {
    /// Write this validator's signing history (every view its guard holds) as JSON.
    Export {
        /// The validator's node.toml (its data directory, keys and genesis).
        #[arg(long)]
        config: PathBuf,
        /// File to write (default: standard output).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Merge a signing history (from `guard export` on the old host) into this validator's
    /// guard, creating it in an empty data directory; never lowers what the guard holds, and
    /// refuses another validator's or chain's history and conflicting votes. Stop the node
    /// first.
    Import {
        /// The validator's node.toml.
        #[arg(long)]
        config: PathBuf,
        /// The document to import.
        #[arg(long)]
        file: PathBuf,
    },
    /// Print what this validator's signing guard holds, one line per view.
    Inspect {
        /// The validator's node.toml.
        #[arg(long)]
        config: PathBuf,
    },
}

/// `--account ADDRESS=BALANCE` of `genesis` (the genesis check reads the address).
fn parse_allocation(text: &str) -> Result<quasar_chainspec::GenesisAccount, String> {
    let (address, balance) = text
        .split_once('=')
        .ok_or_else(|| format!("expected ADDRESS=BALANCE, got '{text}'"))?;
    parse_address("the address", address)?;
    let balance = balance.parse().map_err(|e| {
        format!(
            "balance '{balance}': {e} (a whole number, at most {})",
            u64::MAX
        )
    })?;
    Ok(quasar_chainspec::GenesisAccount {
        address: address.to_string(),
        balance,
    })
}

/// A 32-byte value given as hex on the command line (`what` names it in the error).
fn parse_address(what: &str, text: &str) -> Result<[u8; 32], String> {
    quasar_chainspec::sealing::decode_hex_bounded(text, 32, 32)
        .ok()
        .and_then(|bytes| bytes.try_into().ok())
        .ok_or_else(|| format!("{what} must be 32 bytes of hex (64 hex digits), got '{text}'"))
}

/// Signs and submits the account's next transaction doing `action`; prints its hash, and with
/// `--wait` its height once final.
fn send_action(
    key: &mldsa::SecretKey<MlDsa65>,
    how: HowToSend,
    action: quasar_app::Action,
) -> Result<ExitCode, String> {
    let chain =
        wallet::Chain::open(&how.chain.api, &how.chain.genesis).map_err(|e| e.to_string())?;
    runtime()?.block_on(async {
        let hash = chain
            .send(key, action, how.fee)
            .await
            .map_err(|e| e.to_string())?;
        if how.wait {
            let info = chain
                .wait_final(
                    &hash,
                    &quasar_app::address_of(key.public_key()),
                    std::time::Duration::from_secs(60),
                )
                .await
                .map_err(|e| e.to_string())?;
            println!(
                "{}",
                serde_json::to_string(&info).map_err(|e| e.to_string())?
            );
        } else {
            println!(
                "{}",
                serde_json::json!({ "hash": hash, "status": "pending" })
            );
        }
        Ok(ExitCode::SUCCESS)
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // A simulation runs many validators in one process: their lines would drown its progress,
    // so it logs nothing unless RUST_LOG asks.
    let default_level = match cli.command {
        Command::Simulate { .. } => "off",
        _ => "info",
    };
    init_tracing(cli.log_format, default_level);
    match run(cli) {
        Ok(code) => code,
        Err(message) => {
            // A closed stderr (`2>&1 | head`) must not turn the failure into a panic.
            let _ = writeln!(std::io::stderr(), "error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode, String> {
    match cli.command {
        Command::Keygen {
            out,
            name,
            slhdsa_set,
            key_file,
        } => {
            let access = if key_file.plaintext {
                KeyAccess::plaintext()
            } else {
                key_file.access()?
            };
            let name = name.unwrap_or_else(|| {
                out.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "validator".into())
            });
            let public =
                keygen_with_set(&out, &name, slhdsa_set, &access).map_err(|e| e.to_string())?;
            println!(
                "{}",
                serde_json::to_string(&public).map_err(|e| e.to_string())?
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Genesis {
            validators,
            out,
            chain_id,
            stake,
            start_delay_secs,
            changes,
            accounts,
            profile,
            epoch_length,
            sets_from_registry,
        } => {
            if out.exists() {
                return Err(format!(
                    "{} already exists; refusing to replace a genesis (it would start another chain)",
                    out.display()
                ));
            }
            let start = now_us().saturating_add(start_delay_secs.saturating_mul(1_000_000));
            let chain_id = chain_id.unwrap_or_else(rand::random);
            let mut genesis = GenesisFile::from_key_dirs(&validators, chain_id, start, stake)
                .map_err(|e| e.to_string())?;
            for (epoch, dirs) in &changes {
                genesis
                    .add_change_from_key_dirs(*epoch, dirs, stake)
                    .map_err(|e| e.to_string())?;
            }
            genesis.accounts = accounts;
            if let Some(profile) = profile {
                genesis.profile = profile.name();
            }
            if let Some(blocks) = epoch_length {
                genesis.epoch_length = blocks;
            }
            if sets_from_registry {
                genesis.validator_set_source = quasar_chainspec::SetSource::Registry;
            }
            let checked = genesis.clone().check().map_err(|e| e.to_string())?;
            genesis.save(&out).map_err(|e| e.to_string())?;
            eprintln!(
                "genesis {} of chain {chain_id} with {} validators ({} Magnetar keys) written to {}",
                hex::encode(checked.hash),
                validators.len(),
                checked.magnetar_set(),
                out.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Deal {
            genesis: path,
            validators,
            key_file,
        } => {
            let access = key_file.access()?;
            let mut genesis = GenesisFile::load(&path).map_err(|e| e.to_string())?;
            // The genesis is checked before any share is written: a refusal changes nothing.
            genesis.clone().check().map_err(|e| e.to_string())?;
            let profile: quasar_lanes::cert::Profile = genesis
                .profile
                .parse()
                .map_err(|e| format!("genesis profile: {e}"))?;
            let which = quasar_chainspec::DealtLegs::for_profile(profile);
            if !which.corona && !which.pulsar {
                return Err(format!(
                    "profile {} has no threshold leg: nothing to deal",
                    genesis.profile
                ));
            }
            quasar_chainspec::deal(
                &validators,
                &mut genesis,
                which,
                quasar_chainspec::Existing::Refuse,
                &vec![access; validators.len()],
                &mut rand::rngs::OsRng,
            )
            .map_err(|e| e.to_string())?;
            let checked = genesis.clone().check().map_err(|e| e.to_string())?;
            genesis.save(&path).map_err(|e| e.to_string())?;
            eprintln!(
                "dealt {}{}{} keys to {} validators, one key each for {} validator set(s); \
                 genesis {} written to {}",
                if which.corona { "Corona" } else { "" },
                if which.corona && which.pulsar {
                    " and "
                } else {
                    ""
                },
                if which.pulsar { "Pulsar" } else { "" },
                validators.len(),
                checked.sets().len(),
                hex::encode(checked.hash),
                path.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Keys {
            action:
                KeysAction::Seal {
                    dir,
                    passphrase_file,
                },
        } => {
            let access = KeyAccess::from_sources(passphrase_file.as_deref(), false)
                .map_err(|e| e.to_string())?;
            let path = dir.join(quasar_chainspec::SECRET_KEY_FILE);
            if quasar_chainspec::seal_key_dir(&dir, &access).map_err(|e| e.to_string())? {
                eprintln!("encrypted {}", path.display());
            } else {
                eprintln!(
                    "{} is already encrypted under this passphrase",
                    path.display()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Account { action } => match action {
            AccountAction::New {
                out,
                passphrase_file,
            } => {
                let passphrase = account_passphrase(passphrase_file.as_deref())?;
                let mut seed = zeroize::Zeroizing::new([0u8; 32]);
                rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, seed.as_mut());
                let address = wallet::write_account_file(
                    &out,
                    &passphrase,
                    quasar_chainspec::sealing::KdfParams::PRODUCTION,
                    &seed,
                )
                .map_err(|e| e.to_string())?;
                println!("{}", serde_json::json!({ "address": hex::encode(address) }));
                Ok(ExitCode::SUCCESS)
            }
            AccountAction::Address { key } => {
                let address = match &key.key_dir {
                    // A validator's public key file names its identity key: no passphrase.
                    Some(dir) => {
                        let public =
                            quasar_chainspec::load_public(dir).map_err(|e| e.to_string())?;
                        wallet::identity_address(&public.mldsa_public_key)
                            .map_err(|e| format!("{}: {e}", dir.display()))?
                    }
                    None => quasar_app::address_of(key.open()?.public_key()),
                };
                println!("{}", serde_json::json!({ "address": hex::encode(address) }));
                Ok(ExitCode::SUCCESS)
            }
        },
        Command::Balance { address, chain } => {
            let address = parse_address("address", &address)?;
            let chain =
                wallet::Chain::open(&chain.api, &chain.genesis).map_err(|e| e.to_string())?;
            let checked = runtime()?
                .block_on(chain.account(&address))
                .map_err(|e| e.to_string())?;
            let account = checked.account.unwrap_or_default();
            println!(
                "{}",
                serde_json::json!({
                    "address": hex::encode(address),
                    "exists": checked.account.is_some(),
                    "balance": account.balance,
                    "stake": account.stake,
                    "nonce": account.nonce,
                    "height": checked.height,
                    "block": hex::encode(checked.block),
                    "verified": true,
                })
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Transfer { to, amount, send } => {
            let to = parse_address("--to", &to)?;
            let action = quasar_app::Action::Transfer { to, amount };
            send_action(&send.key.open()?, send.how, action)
        }
        Command::Stake { amount, send } => {
            let action = quasar_app::Action::AddStake { amount };
            send_action(&send.key.open()?, send.how, action)
        }
        Command::Unstake { amount, send } => {
            let action = quasar_app::Action::WithdrawStake { amount };
            send_action(&send.key.open()?, send.how, action)
        }
        Command::RegisterValidator { amount, send } => {
            let keys = send.keys()?;
            let chain_id = GenesisFile::load(&send.how.chain.genesis)
                .map_err(|e| format!("--genesis: {e}"))?
                .chain_id;
            let action = quasar_app::Action::RegisterValidator {
                amount,
                registration: Box::new(wallet::registration_of(&keys, chain_id)),
            };
            send_action(&keys.mldsa, send.how, action)
        }
        Command::ReportEquivocation { view, signer, send } => {
            let key = send.key.open()?;
            let chain = wallet::Chain::open(&send.how.chain.api, &send.how.chain.genesis)
                .map_err(|e| e.to_string())?;
            let action = runtime()?
                .block_on(chain.equivocation_report(view, signer))
                .map_err(|e| e.to_string())?;
            send_action(&key, send.how, action)
        }
        Command::Leave { send } => {
            let keys = send.keys()?;
            send_action(&keys.mldsa, send.how, quasar_app::Action::Leave)
        }
        Command::SetNetworkAddress { address, send } => {
            let keys = send.keys()?;
            let action = quasar_app::Action::SetNetworkAddress {
                address: address.to_string(),
            };
            send_action(&keys.mldsa, send.how, action)
        }
        Command::Validators { api } => {
            let client = wallet::api_client(&api).map_err(|e| e.to_string())?;
            let list = runtime()?
                .block_on(client.validators())
                .map_err(|e| e.to_string())?
                .ok_or_else(|| {
                    format!("{api} has executed no block yet: the registry is the genesis set")
                })?;
            println!(
                "{}",
                serde_json::to_string(&list).map_err(|e| e.to_string())?
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::TxStatus { hash, api } => {
            parse_address("hash", &hash)?;
            let client = wallet::api_client(&api).map_err(|e| e.to_string())?;
            let info = runtime()?
                .block_on(client.tx(&hash))
                .map_err(|e| e.to_string())?;
            match info {
                Some(info) => {
                    println!(
                        "{}",
                        serde_json::to_string(&info).map_err(|e| e.to_string())?
                    );
                    Ok(ExitCode::SUCCESS)
                }
                None => Err(format!(
                    "transaction {hash} is unknown to {api}: not submitted there, dropped, or in a \
                     pruned block"
                )),
            }
        }
        Command::Guard { action } => {
            use quasar_chainspec::guard_history;
            let location = |path: &PathBuf| {
                let cfg = NodeConfig::load(path).map_err(|e| e.to_string())?;
                quasar_node::runtime::guard_location(&cfg).map_err(|e| e.to_string())
            };
            match action {
                GuardAction::Export { config, out } => {
                    guard_history::write_export(&location(&config)?, out.as_deref())
                        .map_err(|e| e.to_string())?
                }
                GuardAction::Import { config, file } => {
                    let report = guard_history::import(&location(&config)?, &file)
                        .map_err(|e| e.to_string())?;
                    eprintln!("{}", guard_history::describe_import(&file, &report));
                }
                GuardAction::Inspect { config } => print!(
                    "{}",
                    guard_history::inspect(&location(&config)?).map_err(|e| e.to_string())?
                ),
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Init {
            keys,
            genesis,
            out,
            data_dir,
            p2p_listen,
            api_listen,
            key_passphrase_file,
            peers,
        } => {
            let peers_commented_out = peers.is_empty();
            let text = quasar_node::init::render_node_toml(&quasar_node::init::InitOptions {
                key_dir: keys,
                genesis,
                data_dir,
                p2p_listen,
                api_listen,
                key_passphrase_file,
                peers,
            })
            .map_err(|e| e.to_string())?;
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&out)
                .and_then(|mut file| std::io::Write::write_all(&mut file, text.as_bytes()))
                .map_err(|e| match e.kind() {
                    std::io::ErrorKind::AlreadyExists => format!(
                        "{} exists and is left as it is (give another --out)",
                        out.display()
                    ),
                    _ => format!("{}: {e}", out.display()),
                })?;
            eprintln!(
                "wrote {}{}",
                out.display(),
                if peers_commented_out {
                    "; its [[peers]] are commented out: fill in their addresses (or run init \
                     with --peers)"
                } else {
                    ""
                }
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Run { config } => {
            let cfg = NodeConfig::load(&config).map_err(|e| e.to_string())?;
            let rt = runtime()?;
            let result = rt.block_on(quasar_node::runtime::run(cfg));
            // Do not wait for background tasks (API connections, verification jobs) on the way out.
            rt.shutdown_timeout(std::time::Duration::from_secs(2));
            result.map_err(|e| match e.damaged_store() {
                true => format!(
                    "{e}\nthe data directory is damaged: move it aside and start the node on an \
                     empty one; it fetches the chain from its peers and fences its signing guard \
                     first (docs/operations.md, \"Node data directory lost or damaged\")"
                ),
                false => e.to_string(),
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Simulate {
            seeds,
            first_seed,
            validators,
            byzantine,
            heights,
        } => {
            use quasar_node::sim::campaign::{self, CampaignConfig};
            let cfg = CampaignConfig {
                seeds,
                first_seed,
                validators,
                byzantine,
                heights,
                mutation: None,
            };
            campaign::validate(&cfg)?;
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
            let started = std::time::Instant::now();
            // A progress bar on a terminal (indicatif draws nothing when stderr is not one).
            let progress = indicatif::ProgressBar::new(seeds).with_style(
                indicatif::ProgressStyle::with_template(
                    "{elapsed_precise} [{bar:40}] {pos}/{len} seeds, {msg} (eta {eta})",
                )
                .map_err(|e| e.to_string())?,
            );
            let failed = std::sync::atomic::AtomicU64::new(0);
            progress.set_message("0 failed");
            let report = campaign::run(&cfg, threads, &|passed| {
                if !passed {
                    failed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                let failed = failed.load(std::sync::atomic::Ordering::Relaxed);
                progress.set_message(format!("{failed} failed"));
                progress.inc(1);
            });
            progress.finish_and_clear();
            eprintln!(
                "{} runs in {:.1} s",
                report.runs,
                started.elapsed().as_secs_f64()
            );
            let mut line = serde_json::to_value(&report).map_err(|e| e.to_string())?;
            if let Some(map) = line.as_object_mut() {
                map.remove("failing_seeds");
            }
            println!("{line}");
            let ok = report.safety_violations == 0 && report.liveness_failures == 0;
            if !ok {
                eprintln!("failing seeds: {:?}", report.failing_seeds);
            }
            Ok(if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        #[cfg(not(feature = "testnet"))]
        Command::Testnet { .. } => Err("this quasar-node was built without the testnet harness \
            (--no-default-features, a production build); build it with the default features \
            to run `testnet`"
            .to_string()),
        #[cfg(feature = "testnet")]
        Command::Testnet {
            validators,
            blocks,
            dir,
            block_time_ms,
            tx_rate,
            profile,
            rollup_setup,
            rollup_provers,
            epoch_length,
            slhdsa_set,
            validator_sets,
            sets_from_registry,
            join,
            leave,
            remote_signers,
            accounts,
        } => {
            let binary = std::env::current_exe().map_err(|e| format!("own executable: {e}"))?;
            let opts = TestnetOptions {
                validators,
                blocks,
                dir,
                block_time_ms,
                tx_rate,
                binary,
                profile,
                rollup_setup,
                rollup_provers,
                epoch_length,
                magnetar_set: slhdsa_set,
                validator_sets,
                sets_from_registry,
                join,
                leave,
                remote_signers,
                placements: Vec::new(),
                accounts,
            };
            let report = runtime()?.block_on(async {
                tokio::select! {
                    report = testnet::run(opts) => report.map_err(|e| e.to_string()),
                    // Dropping the run stops every validator process it started.
                    () = interrupted() => Err("interrupted: validators stopped".to_string()),
                }
            })?;
            eprintln!("testnet: {}", report.describe());
            println!(
                "{}",
                serde_json::to_string(&report).map_err(|e| e.to_string())?
            );
            let ok = report.passed();
            Ok(if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Command::RollupSetup {
            validators,
            quorum,
            out,
            seed,
        } => {
            let seed = seed
                .map(|s| rollup::parse_digest("--seed", &s))
                .transpose()
                .map_err(|e| e.to_string())?;
            let summary =
                rollup::setup(&out, validators, quorum, seed).map_err(|e| e.to_string())?;
            print_json(&summary)
        }
        Command::RollupSign {
            keys,
            digest,
            key_file,
        } => {
            let digest = rollup::parse_digest("--digest", &digest).map_err(|e| e.to_string())?;
            let entry =
                rollup::sign(&keys, &key_file.access()?, digest).map_err(|e| e.to_string())?;
            print_json(&entry)
        }
        Command::RollupProve {
            setup,
            genesis,
            digest,
            signatures,
            out,
        } => {
            let digest = rollup::parse_digest("--digest", &digest).map_err(|e| e.to_string())?;
            let proof = rollup::prove(&setup, &genesis, digest, &signatures, &out)
                .map_err(|e| e.to_string())?;
            eprintln!("proof written to {}", out.display());
            print_json(&proof)
        }
        Command::RollupVerify {
            setup,
            genesis,
            proof,
        } => {
            let valid = rollup::verify(&setup, &genesis, &proof).map_err(|e| e.to_string())?;
            println!("{}", serde_json::json!({ "valid": valid }));
            Ok(if valid {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
    }
}

/// Prints `value` as one JSON line; success.
fn print_json<T: serde::Serialize>(value: &T) -> Result<ExitCode, String> {
    println!(
        "{}",
        serde_json::to_string(value).map_err(|e| e.to_string())?
    );
    Ok(ExitCode::SUCCESS)
}
