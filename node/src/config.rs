//! `node.toml`: where this node keeps its data, which key directory and genesis it uses, where it
//! listens, where its peers are, its signer, and the bounds of its HTTP API. The files the node
//! shares with every other tool (key files, genesis) are [`quasar_chainspec`]'s.

use quasar_chainspec::{io_err, read_bounded, read_token_file, ConfigError, KeyAccess};
use quasar_p2p::PeerAddress;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// A peer in `node.toml`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PeerConfig {
    /// The peer's BLS public key (hex), which names it in genesis.
    pub bls_public_key: String,
    /// Where its QUIC endpoint listens: `ip:port`, `[ipv6]:port` or `host:port` (a DNS name,
    /// e.g. a Kubernetes Service), checked for syntax when `node.toml` is read and resolved again
    /// at every dial ([`PeerAddress`]).
    pub address: PeerAddress,
}

/// Who signs a validator's votes and proposals (`signer` in `node.toml`).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SignerMode {
    /// The node, with its key directory's BLS key (the default).
    #[default]
    Local,
    /// The validator's thresholdd, through `validator.sign_vote` (`[remote_signer]`).
    Remote,
}

impl SignerMode {
    fn is_local(&self) -> bool {
        *self == SignerMode::Local
    }
}

/// `[remote_signer]` in `node.toml`: the thresholdd that signs with `signer = "remote"`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RemoteSignerConfig {
    /// The daemon's URL, `http://host:port` (a host name or IP address; port 80 when left out;
    /// no path; plain HTTP: keep it on loopback or a private network, as the daemon's README
    /// section says).
    pub url: String,
    /// A file holding the daemon's bearer token (surrounding whitespace is dropped; printable
    /// ASCII only); keep it mode 0600.
    pub token_file: PathBuf,
    /// The limit on one signing call, milliseconds (default 2000; at most an hour).
    #[serde(default = "default_remote_timeout_ms")]
    pub timeout_ms: u64,
}

fn default_remote_timeout_ms() -> u64 {
    2_000
}

impl RemoteSignerConfig {
    /// The daemon's address with the token read from `token_file` (bounded). Errors:
    /// [`ConfigError::NodeConfig`] for a URL that is not `http://host[:port]`, a token file that
    /// cannot be read, an empty token or one an HTTP header cannot carry.
    pub fn target(&self) -> Result<crate::remote_signer::RemoteSignerTarget, ConfigError> {
        let url = reqwest::Url::parse(&self.url)
            .map_err(|e| ConfigError::NodeConfig(format!("remote_signer.url: {e}")))?;
        if url.scheme() != "http" || url.host().is_none() {
            return Err(ConfigError::NodeConfig(format!(
                "remote_signer.url must be http://host:port (thresholdd serves plain HTTP), got \
                 {}",
                self.url
            )));
        }
        if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
            return Err(ConfigError::NodeConfig(format!(
                "remote_signer.url is the daemon's address only (http://host:port, no path or \
                 query), got {}",
                self.url
            )));
        }
        let token = read_token_file(&self.token_file)
            .map_err(|e| ConfigError::NodeConfig(format!("remote_signer.token_file: {e}")))?;
        Ok(crate::remote_signer::RemoteSignerTarget {
            url,
            token,
            timeout: std::time::Duration::from_millis(self.timeout_ms),
        })
    }
}

/// `node.toml`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    /// Directory for the block store and the signing guard.
    pub data_dir: PathBuf,
    /// Key directory written by `keygen`.
    pub key_dir: PathBuf,
    /// File holding the passphrase of the sealed secret key file (a trailing newline is
    /// dropped; at most 64 KiB). Unset: the `QUASAR_KEY_PASSPHRASE` environment variable, if
    /// set ([`quasar_chainspec::key_file`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_passphrase_file: Option<PathBuf>,
    /// Accept a plaintext secret key file (default false: a plaintext file is refused, with
    /// a message naming `quasar-node keys seal`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub plaintext_keys: bool,
    /// Path of `genesis.json`.
    pub genesis: PathBuf,
    /// QUIC listen address for validator traffic.
    pub p2p_listen: SocketAddr,
    /// HTTP admin API listen address.
    pub api_listen: SocketAddr,
    /// When set, `GET /metrics` is served here alone (nothing else) and no longer on
    /// `api_listen`, so that Prometheus's network need not reach the admin API. Must differ
    /// from `api_listen`. Default: unset, `/metrics` on `api_listen`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics_listen: Option<SocketAddr>,
    /// The admin API's bounds on slow clients and its `POST /tx` rate limit (`[api]`; every
    /// key optional, see [`ApiConfig`]).
    #[serde(default, skip_serializing_if = "ApiConfig::is_default")]
    pub api: ApiConfig,
    /// Minimum time between blocks, milliseconds.
    #[serde(default = "default_block_time_ms")]
    pub block_time_ms: u64,
    /// View timeout, milliseconds (default: 2 × block time + 1000).
    #[serde(default)]
    pub view_timeout_ms: Option<u64>,
    /// Most pending transactions in the mempool (and 1 KiB per transaction of their bytes).
    /// The mempool also never holds more than [`crate::runtime::MEMPOOL_BACKLOG_BLOCKS`] full
    /// blocks' worth, by count and by bytes: past either bound admission answers `503`.
    #[serde(default = "default_mempool_max_txs")]
    pub mempool_max_txs: usize,
    /// Seconds a transaction may wait in the mempool for a block before it is dropped (one
    /// behind a nonce gap, or from a sender whose first transaction never came). At least 1.
    #[serde(default = "default_mempool_tx_lifetime_secs")]
    pub mempool_tx_lifetime_secs: u64,
    /// Most transactions in one block.
    #[serde(default = "default_max_block_txs")]
    pub max_block_txs: usize,
    /// The other validators.
    #[serde(default)]
    pub peers: Vec<PeerConfig>,
    /// The Groth16 rollup proving key (`rollup.pk` of `quasar-node rollup-setup`, for the
    /// genesis's validator set), when this validator proves the rollup leg. Proving needs
    /// minutes of every core and gigabytes of memory per proof, so a few validators are
    /// enough: the first proof of a bundle serves every node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollup_proving_key: Option<PathBuf>,
    /// Keep the whole history: never prune blocks, certificates, QuasarCerts or evidence past
    /// the last 6 epochs (an archive node, e.g. for an explorer; `testnet` runs its validators
    /// so, as its report reads every block of the run). Default false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub archive: bool,
    /// Who signs votes and proposals: `"local"` (default) or `"remote"`, the thresholdd of
    /// `remote_signer`, which must hold this validator's BLS key (`thresholdd keys
    /// import-validator`).
    #[serde(default, skip_serializing_if = "SignerMode::is_local")]
    pub signer: SignerMode,
    /// The thresholdd for `signer = "remote"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_signer: Option<RemoteSignerConfig>,
}

/// `[api]` in `node.toml`: how long an admin API client may take to send a request, and how
/// many transactions one client IP address may submit. Every key is optional.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct ApiConfig {
    /// How long a connection may take to send a complete request head, milliseconds, counted
    /// from when it starts waiting for one (so also the longest an idle keep-alive connection
    /// stays open); past it the connection is closed. Default 10 000.
    pub header_read_timeout_ms: u64,
    /// How long a request may take to send its whole body, milliseconds from the end of its
    /// head; past it the answer is `408` and the connection is closed. Default 30 000.
    pub body_read_timeout_ms: u64,
    /// `POST /tx` requests one client IP address may make per second, sustained. Default 50.
    pub tx_per_second: u32,
    /// `POST /tx` requests one client IP address may make at once before the rate applies;
    /// beyond it the answer is `429` with `Retry-After`. Default 100.
    pub tx_burst: u32,
}

impl Default for ApiConfig {
    fn default() -> ApiConfig {
        ApiConfig {
            header_read_timeout_ms: 10_000,
            body_read_timeout_ms: 30_000,
            tx_per_second: 50,
            tx_burst: 100,
        }
    }
}

impl ApiConfig {
    /// Whether every key has its default (then `node.toml` leaves `[api]` out).
    pub fn is_default(&self) -> bool {
        *self == ApiConfig::default()
    }

    /// Errors: a timeout outside 1..=3 600 000 ms, or a zero rate or burst.
    fn check(&self) -> Result<(), ConfigError> {
        for (name, value) in [
            ("header_read_timeout_ms", self.header_read_timeout_ms),
            ("body_read_timeout_ms", self.body_read_timeout_ms),
        ] {
            if !(1..=MAX_TIME_MS).contains(&value) {
                return Err(ConfigError::NodeConfig(format!(
                    "api.{name} must be in 1..={MAX_TIME_MS}"
                )));
            }
        }
        if self.tx_per_second == 0 || self.tx_burst == 0 {
            return Err(ConfigError::NodeConfig(
                "api.tx_per_second and api.tx_burst must be positive".into(),
            ));
        }
        Ok(())
    }
}

/// Whether two TCP listen addresses would take the same socket: one port (not 0, which asks the
/// OS for a fresh one) and one address, or an unspecified address (`0.0.0.0`, `::`) that
/// covers the other.
fn same_socket(a: SocketAddr, b: SocketAddr) -> bool {
    a.port() == b.port()
        && a.port() != 0
        && (a.ip() == b.ip() || a.ip().is_unspecified() || b.ip().is_unspecified())
}

/// Upper bound for configured durations (one hour), so arithmetic in microseconds cannot overflow.
pub(crate) const MAX_TIME_MS: u64 = 3_600_000;

fn default_block_time_ms() -> u64 {
    500
}
fn default_mempool_max_txs() -> usize {
    100_000
}
fn default_mempool_tx_lifetime_secs() -> u64 {
    600
}
/// `max_block_txs` when node.toml does not set it.
pub const DEFAULT_MAX_BLOCK_TXS: usize = 10_000;

fn default_max_block_txs() -> usize {
    DEFAULT_MAX_BLOCK_TXS
}

impl NodeConfig {
    /// How to open this node's secret key file: the passphrase of `key_passphrase_file` (else
    /// `QUASAR_KEY_PASSPHRASE`, if set) and `plaintext_keys`. Errors: the passphrase file cannot
    /// be read or is empty.
    pub fn key_access(&self) -> Result<KeyAccess, ConfigError> {
        Ok(KeyAccess::from_sources(
            self.key_passphrase_file.as_deref(),
            self.plaintext_keys,
        )?)
    }

    /// Reads and parses `node.toml`; relative paths are resolved against the file's directory.
    pub fn load(path: &Path) -> Result<NodeConfig, ConfigError> {
        let text = read_bounded(path)?;
        let base = path.parent().unwrap_or(Path::new("."));
        NodeConfig::from_toml(&text, base).map_err(|e| match e {
            ConfigError::Parse { message, .. } => ConfigError::Parse {
                path: path.to_path_buf(),
                message,
            },
            other => other,
        })
    }

    /// Parses `node.toml` text; relative paths are resolved against `base`.
    pub fn from_toml(text: &str, base: &Path) -> Result<NodeConfig, ConfigError> {
        let mut cfg: NodeConfig = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: PathBuf::from("node.toml"),
            message: e.to_string(),
        })?;
        let paths = [&mut cfg.data_dir, &mut cfg.key_dir, &mut cfg.genesis]
            .into_iter()
            .chain(cfg.rollup_proving_key.as_mut())
            .chain(cfg.key_passphrase_file.as_mut())
            .chain(cfg.remote_signer.as_mut().map(|r| &mut r.token_file));
        for p in paths {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        }
        if !(1..=MAX_TIME_MS).contains(&cfg.block_time_ms) {
            return Err(ConfigError::NodeConfig(format!(
                "block_time_ms must be in 1..={MAX_TIME_MS}"
            )));
        }
        let timeout = cfg.view_timeout_ms();
        if timeout <= cfg.block_time_ms || timeout > MAX_TIME_MS {
            return Err(ConfigError::NodeConfig(format!(
                "view_timeout_ms must be above block_time_ms and at most {MAX_TIME_MS}"
            )));
        }
        if let Some(metrics) = cfg
            .metrics_listen
            .filter(|m| same_socket(*m, cfg.api_listen))
        {
            return Err(ConfigError::NodeConfig(format!(
                "metrics_listen ({metrics}) is api_listen ({}): give the metrics listener a port \
                 of its own, or remove metrics_listen to serve /metrics on api_listen",
                cfg.api_listen
            )));
        }
        cfg.api.check()?;
        if cfg.mempool_max_txs == 0 || cfg.max_block_txs == 0 {
            return Err(ConfigError::NodeConfig(
                "mempool_max_txs and max_block_txs must be positive".into(),
            ));
        }
        if !(1..=MAX_TIME_MS / 1000).contains(&cfg.mempool_tx_lifetime_secs) {
            return Err(ConfigError::NodeConfig(format!(
                "mempool_tx_lifetime_secs is {}: give 1 to {} seconds",
                cfg.mempool_tx_lifetime_secs,
                MAX_TIME_MS / 1000
            )));
        }
        match (cfg.signer, &cfg.remote_signer) {
            (SignerMode::Remote, None) => {
                return Err(ConfigError::NodeConfig(
                    "signer = \"remote\" needs a [remote_signer] table (url, token_file)".into(),
                ))
            }
            (SignerMode::Local, Some(_)) => {
                return Err(ConfigError::NodeConfig(
                    "[remote_signer] is set but signer is \"local\": set signer = \"remote\" \
                     (a top-level key: above the first [[peers]] or other table) or remove the \
                     table"
                        .into(),
                ))
            }
            (_, Some(remote)) if !(1..=MAX_TIME_MS).contains(&remote.timeout_ms) => {
                return Err(ConfigError::NodeConfig(format!(
                    "remote_signer.timeout_ms must be in 1..={MAX_TIME_MS}"
                )))
            }
            _ => {}
        }
        Ok(cfg)
    }

    /// Writes `node.toml`.
    pub fn save(&self, path: &Path) -> Result<(), ConfigError> {
        let text = toml::to_string_pretty(self).map_err(|e| ConfigError::Encode(e.to_string()))?;
        std::fs::write(path, text).map_err(io_err(path))
    }

    /// The view timeout in milliseconds.
    pub fn view_timeout_ms(&self) -> u64 {
        self.view_timeout_ms
            .unwrap_or(self.block_time_ms.saturating_mul(2).saturating_add(1000))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_toml_resolves_the_rollup_proving_key_against_its_directory() {
        let base = Path::new("/srv/quasar/v0");
        let text = "data_dir = \"data\"\nkey_dir = \".\"\ngenesis = \"/etc/genesis.json\"\n\
                    p2p_listen = \"127.0.0.1:9000\"\napi_listen = \"127.0.0.1:8000\"\n";
        let cfg = NodeConfig::from_toml(text, base).unwrap();
        assert_eq!(cfg.rollup_proving_key, None);
        assert_eq!(cfg.genesis, PathBuf::from("/etc/genesis.json"));
        let with_key = format!("{text}rollup_proving_key = \"rollup/rollup.pk\"\n");
        let cfg = NodeConfig::from_toml(&with_key, base).unwrap();
        assert_eq!(
            cfg.rollup_proving_key,
            Some(base.join("rollup").join("rollup.pk"))
        );
        assert_eq!(cfg.data_dir, base.join("data"));
        // Unset, the key is left out of a saved file; set, it survives the round trip.
        let saved = toml::to_string_pretty(&NodeConfig {
            rollup_proving_key: None,
            archive: false,
            ..cfg.clone()
        })
        .unwrap();
        assert!(!saved.contains("rollup_proving_key"), "{saved}");
        let again = NodeConfig::from_toml(&toml::to_string_pretty(&cfg).unwrap(), base).unwrap();
        assert_eq!(again, cfg);
    }

    /// Issue 29: `[[peers]] address` took only IP literals ("invalid socket address syntax" for
    /// a host name); it now takes `host:port` as well, checked for syntax at load.
    #[test]
    fn node_toml_peers_take_host_names_and_ip_literals() {
        let text = "data_dir = \"data\"\nkey_dir = \".\"\ngenesis = \"g.json\"\n\
                    p2p_listen = \"0.0.0.0:9000\"\napi_listen = \"127.0.0.1:8000\"\n";
        let with_peer = |address: &str| {
            NodeConfig::from_toml(
                &format!("{text}[[peers]]\nbls_public_key = \"ab\"\naddress = \"{address}\"\n"),
                Path::new("/srv"),
            )
        };
        for (address, expected) in [
            (
                "quasar-1.quasar.svc.cluster.local:9000",
                PeerAddress::Name {
                    host: "quasar-1.quasar.svc.cluster.local".into(),
                    port: 9000,
                },
            ),
            (
                "10.0.0.5:9000",
                PeerAddress::Ip("10.0.0.5:9000".parse().unwrap()),
            ),
            (
                "[fd00::5]:9000",
                PeerAddress::Ip("[fd00::5]:9000".parse().unwrap()),
            ),
        ] {
            let cfg = with_peer(address).unwrap();
            assert_eq!(cfg.peers[0].address, expected, "{address}");
            // The saved file spells the address as it was written.
            let saved = toml::to_string_pretty(&cfg).unwrap();
            assert!(
                saved.contains(&format!("address = \"{address}\"")),
                "{saved}"
            );
            assert_eq!(
                NodeConfig::from_toml(&saved, Path::new("/srv")).unwrap(),
                cfg
            );
        }
        for (address, why) in [
            ("quasar-1", "has no port"),
            ("quasar-1:99999", "the port must be a number in 1..=65535"),
            (":9000", "has no host"),
            ("http://quasar-1:9000", "without a scheme or path"),
            ("fd00::5:9000", "in brackets"),
            ("quasar 1:9000", "the host name may hold only"),
        ] {
            let err = with_peer(address).unwrap_err().to_string();
            assert!(
                err.contains(why) && err.contains(address),
                "{address}: {err}"
            );
        }
    }

    #[test]
    fn node_toml_metrics_listen_is_optional_and_must_differ_from_api_listen() {
        let text = "data_dir = \"data\"\nkey_dir = \".\"\ngenesis = \"g.json\"\n\
                    p2p_listen = \"127.0.0.1:9000\"\napi_listen = \"127.0.0.1:8000\"\n";
        let parse = |extra: &str| NodeConfig::from_toml(&format!("{text}{extra}"), Path::new("."));
        assert_eq!(parse("").unwrap().metrics_listen, None);
        let cfg = parse("metrics_listen = \"0.0.0.0:8001\"\n").unwrap();
        assert_eq!(cfg.metrics_listen, Some("0.0.0.0:8001".parse().unwrap()));
        for taken in ["127.0.0.1:8000", "0.0.0.0:8000"] {
            match parse(&format!("metrics_listen = \"{taken}\"\n")) {
                Err(ConfigError::NodeConfig(message)) => {
                    assert!(
                        message.contains("is api_listen (127.0.0.1:8000)"),
                        "{message}"
                    )
                }
                other => panic!("{taken}: {other:?}"),
            }
        }
        // The same port on another loopback address is another socket.
        assert!(parse("metrics_listen = \"127.0.0.2:8000\"\n").is_ok());
    }

    #[test]
    fn node_toml_api_limits_default_and_are_checked() {
        let text = "data_dir = \"data\"\nkey_dir = \".\"\ngenesis = \"g.json\"\n\
                    p2p_listen = \"127.0.0.1:9000\"\napi_listen = \"127.0.0.1:8000\"\n";
        let parse = |extra: &str| NodeConfig::from_toml(&format!("{text}{extra}"), Path::new("."));
        let cfg = parse("").unwrap();
        assert_eq!(cfg.api, ApiConfig::default());
        assert!(!toml::to_string_pretty(&cfg).unwrap().contains("[api]"));
        let cfg = parse("[api]\ntx_burst = 5\n").unwrap();
        assert_eq!(cfg.api.tx_burst, 5);
        assert_eq!(cfg.api.tx_per_second, ApiConfig::default().tx_per_second);
        assert_eq!(cfg.mempool_tx_lifetime_secs, 600);
        for (extra, needle) in [
            (
                "mempool_tx_lifetime_secs = 0\n",
                "mempool_tx_lifetime_secs is 0",
            ),
            ("[api]\ntx_per_second = 0\n", "must be positive"),
            (
                "[api]\nbody_read_timeout_ms = 0\n",
                "api.body_read_timeout_ms",
            ),
        ] {
            match parse(extra) {
                Err(ConfigError::NodeConfig(message)) => {
                    assert!(message.contains(needle), "{message}")
                }
                other => panic!("{extra}: {other:?}"),
            }
        }
        assert!(matches!(
            parse("[api]\ntx_rate = 5\n"),
            Err(ConfigError::Parse { .. })
        ));
    }

    #[test]
    fn node_toml_remote_signer_is_checked_and_reads_its_token_file() {
        let dir = tempfile::tempdir().unwrap();
        let text = "data_dir = \"data\"\nkey_dir = \".\"\ngenesis = \"g.json\"\n\
                    p2p_listen = \"127.0.0.1:9000\"\napi_listen = \"127.0.0.1:8000\"\n";
        let table = "[remote_signer]\nurl = \"http://127.0.0.1:7300\"\ntoken_file = \"token\"\n";
        let parse = |extra: &str| NodeConfig::from_toml(&format!("{text}{extra}"), dir.path());
        assert_eq!(parse("").unwrap().signer, SignerMode::Local);
        let invalid = |extra: &str, needle: &str| match parse(extra) {
            Err(ConfigError::NodeConfig(message)) => assert!(message.contains(needle), "{message}"),
            other => panic!("{extra}: {other:?}"),
        };
        invalid("signer = \"remote\"\n", "needs a [remote_signer] table");
        invalid(table, "signer is \"local\"");
        invalid(
            &format!("signer = \"remote\"\n{table}timeout_ms = 0\n"),
            "timeout_ms",
        );
        assert!(matches!(
            parse("signer = \"hsm\"\n"),
            Err(ConfigError::Parse { .. })
        ));

        let cfg = parse(&format!("signer = \"remote\"\n{table}")).unwrap();
        let remote = cfg.remote_signer.clone().unwrap();
        assert_eq!(remote.token_file, dir.path().join("token"));
        assert_eq!(remote.timeout_ms, 2_000);
        // The token file is read when the node starts: missing, empty, unfit for a header, then
        // good (surrounding whitespace dropped).
        let refused = |remote: &RemoteSignerConfig, needle: &str| match remote.target() {
            Err(ConfigError::NodeConfig(message)) => assert!(message.contains(needle), "{message}"),
            other => panic!("{needle}: {other:?}"),
        };
        refused(&remote, "remote_signer.token_file");
        std::fs::write(dir.path().join("token"), "\n").unwrap();
        refused(&remote, "no token (empty or only whitespace)");
        std::fs::write(dir.path().join("token"), "s3 cret\n").unwrap();
        refused(&remote, "printable ASCII");
        std::fs::write(dir.path().join("token"), "s3cret\n\n").unwrap();
        let target = remote.target().unwrap();
        assert_eq!(target.token, "s3cret");
        assert_eq!(target.url.as_str(), "http://127.0.0.1:7300/");
        for (url, needle) in [
            ("https://signer:7300", "http://"),
            ("http://:7300", "remote_signer.url"),
            ("http://127.0.0.1:7300/rpc", "no path"),
            ("http://127.0.0.1:7300/?a=1", "no path"),
        ] {
            let bad = RemoteSignerConfig {
                url: url.into(),
                ..remote.clone()
            };
            refused(&bad, needle);
        }
        // The saved file keeps the mode and the table.
        let again = NodeConfig::from_toml(&toml::to_string_pretty(&cfg).unwrap(), dir.path());
        assert_eq!(again.unwrap(), cfg);
    }
}
