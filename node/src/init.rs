//! `quasar-node init`: a starting `node.toml` for one validator, written from its key directory
//! and the chain's genesis, with every setting explained in a comment. The file parses as it
//! is written ([`NodeConfig::from_toml`] is run on it before it is returned), so an operator
//! edits a working configuration instead of writing one from the README.

use crate::config::NodeConfig;
use quasar_chainspec::{load_public, ConfigError, GenesisFile};
use quasar_p2p::PeerAddress;
use std::fmt::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// What `quasar-node init` is told.
#[derive(Debug, Clone)]
pub struct InitOptions {
    /// The validator's key directory (written by `keygen`); only its public file is read.
    pub key_dir: PathBuf,
    /// The chain's `genesis.json`.
    pub genesis: PathBuf,
    /// Where the node keeps its block store and signing guard.
    pub data_dir: PathBuf,
    /// QUIC listen address.
    pub p2p_listen: SocketAddr,
    /// Admin API listen address.
    pub api_listen: SocketAddr,
    /// The passphrase file of the sealed key file, written as `key_passphrase_file`; `None`
    /// writes that setting commented out (the passphrase then comes from
    /// `QUASAR_KEY_PASSPHRASE`).
    pub key_passphrase_file: Option<PathBuf>,
    /// Every validator's QUIC address in the genesis roster's order (this validator's own
    /// entry is skipped), or empty to write the `[[peers]]` entries commented out, with their
    /// keys, for the operator to fill in (the node then dials nobody and waits to be dialled).
    pub peers: Vec<PeerAddress>,
}

/// Renders the commented `node.toml` for `opts`. Paths are written absolute, so the file works
/// wherever it is moved.
///
/// Errors: [`ConfigError`] when the genesis or the key directory's public file cannot be read,
/// when this key is not among the genesis's validators, or when `peers` is not empty and does
/// not name one address per roster validator.
pub fn render_node_toml(opts: &InitOptions) -> Result<String, ConfigError> {
    let genesis = GenesisFile::load(&opts.genesis)?.check()?;
    let public = load_public(&opts.key_dir)?;
    let roster = genesis.roster();
    // A validator outside the genesis joins a chain whose sets come from the registry: its
    // peers are every genesis validator (docs/architecture.md §11, "Validators that join").
    let me = roster.iter().position(|v| {
        v.bls_public_key
            .eq_ignore_ascii_case(&public.bls_public_key)
    });
    if me.is_none() && !genesis.sets_from_registry() {
        return Err(ConfigError::Arguments(format!(
            "{}: this validator's BLS key is not among the validators of {}, and that chain's \
             genesis fixes its validator sets (a validator joins by transaction only where \
             validator_set_source is \"registry\")",
            opts.key_dir.display(),
            opts.genesis.display()
        )));
    }
    if !opts.peers.is_empty() && opts.peers.len() != roster.len() {
        return Err(ConfigError::Arguments(format!(
            "--peers names {} addresses; the genesis has {} validators (give one per validator, \
             in genesis order, this one's included)",
            opts.peers.len(),
            roster.len()
        )));
    }
    let absolute = |path: &Path| {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        toml_string(&path.display().to_string())
    };
    let mut out = String::new();
    let w = &mut out;
    // Writing to a String cannot fail.
    let who = match me {
        Some(me) => format!(
            "validator {me} ({})",
            roster.get(me).map_or("", |v| v.name.as_str())
        ),
        None => "a validator that joins by registering (not in the genesis)".to_string(),
    };
    let _ = writeln!(
        w,
        "# node.toml of {who} on chain {chain} (genesis {hash}).\n\
         # Written by `quasar-node init`; README.md \"Running a validator by hand\" explains each setting.\n",
        chain = genesis.file.chain_id,
        hash = hex::encode(genesis.hash),
    );
    let _ = writeln!(
        w,
        "# Block store, signing guard and lock file. Never delete or restore the guard: to move\n\
         # hosts, use `quasar-node guard export` / `guard import`.\n\
         data_dir = {}\n\
         # Key directory written by `keygen` (validator.key.json stays mode 0600).\n\
         key_dir = {}\n\
         # The passphrase of the sealed validator.key.json (else QUASAR_KEY_PASSPHRASE):\n\
         {}\n\
         # A plaintext key file (keygen --plaintext) is refused unless this is set (tests):\n\
         # plaintext_keys = true\n\
         genesis = {}\n",
        absolute(&opts.data_dir),
        absolute(&opts.key_dir),
        opts.key_passphrase_file.as_deref().map_or_else(
            || "# key_passphrase_file = \"/etc/quasar/key.passphrase\"".to_string(),
            |file| format!("key_passphrase_file = {}", absolute(file)),
        ),
        absolute(&opts.genesis),
    );
    let _ = writeln!(
        w,
        "# QUIC (UDP) for validator traffic: reachable by every other validator.\n\
         p2p_listen = \"{}\"\n\
         # HTTP admin API (no authentication): keep it on loopback or behind a proxy.\n\
         api_listen = \"{}\"\n\
         # Serve GET /metrics on a port of its own (and no longer on api_listen):\n\
         # metrics_listen = \"127.0.0.1:8100\"\n",
        opts.p2p_listen, opts.api_listen,
    );
    let _ = writeln!(
        w,
        "# Minimum time between blocks, ms; every validator of a chain uses the same.\n\
         block_time_ms = 500\n\
         # View timeout, ms (default 2 x block_time_ms + 1000):\n\
         # view_timeout_ms = 2000\n\
         # Bounds of the mempool and of one block, in transactions:\n\
         # mempool_max_txs = 100000\n\
         # max_block_txs = 10000\n\
         # Seconds a transaction may wait for a block before the mempool drops it:\n\
         # mempool_tx_lifetime_secs = 600\n\
         # Keep the whole history instead of pruning past 6 epochs (explorers):\n\
         # archive = true\n\
         # Prove the Groth16 rollup leg (minutes of every core and gigabytes per proof):\n\
         # rollup_proving_key = \"/path/to/rollup.pk\"\n"
    );
    let _ = writeln!(
        w,
        "# Sign votes and run threshold rounds in thresholdd instead of this process:\n\
         # signer = \"remote\"\n\
         # [remote_signer]\n\
         # url = \"http://127.0.0.1:7300\"\n\
         # token_file = \"/etc/quasar/thresholdd.token\"\n\
         # timeout_ms = 2000\n"
    );
    let _ = writeln!(
        w,
        "# The admin API's bounds on slow clients and POST /tx's per-client rate limit:\n\
         # [api]\n\
         # header_read_timeout_ms = 10000\n\
         # body_read_timeout_ms = 30000\n\
         # tx_per_second = 50\n\
         # tx_burst = 100\n"
    );
    let _ = writeln!(
        w,
        "# The other validators: `ip:port`, `[ipv6]:port` or `host:port` (a DNS name, resolved at\n\
         # every dial). Each is authenticated by the TLS identity the genesis pins for its key."
    );
    let comment = if opts.peers.is_empty() { "# " } else { "" };
    for (index, validator) in roster.iter().enumerate() {
        if Some(index) == me {
            continue;
        }
        let address = opts.peers.get(index).map_or_else(
            || "\"HOST:9000\" # fill in its p2p_listen, then remove the # marks".to_string(),
            |a| toml_string(&a.to_string()),
        );
        let _ = writeln!(
            w,
            "\n# validator {index} ({name})\n{comment}[[peers]]\n{comment}bls_public_key = \"{key}\"\n\
             {comment}address = {address}",
            name = validator.name,
            key = validator.bls_public_key,
        );
    }
    NodeConfig::from_toml(&out, Path::new("."))?;
    Ok(out)
}

/// A TOML basic string holding `value`.
fn toml_string(value: &str) -> String {
    toml::Value::String(value.to_string()).to_string()
}
