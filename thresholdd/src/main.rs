//! `thresholdd`: the validator's signing daemon (JSON-RPC 2.0 over HTTP; see
//! `quasar_thresholdd`).

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use quasar_chainspec::ThresholdScheme;
use quasar_process::{init_tracing, interrupted, runtime, LogFormat};
use quasar_thresholdd::keystore::{KdfParams, Keystore, KeystoreError, Scheme, HEADER_FILE};
use quasar_thresholdd::{self as thresholdd, DaemonConfig};
use zeroize::Zeroizing;

/// A bearer token shorter than this many characters is logged as weak at start (32 characters
/// of `openssl rand -hex 16` carry 128 bits).
const MIN_TOKEN_CHARS: usize = 32;
/// A keystore passphrase shorter than this many bytes is logged as weak at start.
const MIN_PASSPHRASE_BYTES: usize = 12;

#[derive(Parser)]
#[command(
    name = "thresholdd",
    version = quasar_process::build_info::LONG_VERSION,
    about = "Quasar signing daemon (JSON-RPC 2.0 over HTTP)"
)]
struct Cli {
    /// Log line format on stderr: text, or json (one object per line, for log collectors).
    /// The level comes from RUST_LOG (default info).
    #[arg(
        long,
        global = true,
        value_enum,
        default_value_t,
        env = "THRESHOLDD_LOG_FORMAT"
    )]
    log_format: LogFormat,
    /// Keystore directory (created with mode 0700 if missing).
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
    /// File holding the keystore passphrase (a trailing newline is dropped); otherwise
    /// THRESHOLDD_PASSPHRASE.
    #[arg(long, global = true)]
    passphrase_file: Option<PathBuf>,
    /// Listen address.
    #[arg(long, default_value = thresholdd::DEFAULT_LISTEN)]
    listen: SocketAddr,
    /// Allow a non-loopback listen address (put TLS in front of it: the daemon speaks plain
    /// HTTP).
    #[arg(long)]
    allow_remote: bool,
    /// Bearer token every request must present (whitespace around it dropped). Prefer
    /// --token-file or the environment variable: a command line is visible to other users of
    /// the machine.
    #[arg(long, env = "THRESHOLDD_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// File holding the bearer token instead (surrounding whitespace is dropped; printable
    /// ASCII only): the same file a node's `remote_signer.token_file` names.
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Also serve `GET /metrics` here, without a token and nothing else, for Prometheus (e.g.
    /// 127.0.0.1:7301, or 0.0.0.0:7301 for a scraper on another host: nothing there signs).
    #[arg(long)]
    metrics_listen: Option<SocketAddr>,
    /// The limit on one call's time, in seconds.
    #[arg(long, default_value_t = thresholdd::DEFAULT_REQUEST_TIMEOUT.as_secs())]
    request_timeout_secs: u64,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Manage the keystore: list its keys (public data only), import a validator's keys.
    Keys {
        #[command(subcommand)]
        action: KeysAction,
    },
    /// A vote key's signing guard as a JSON document (docs/operations.md "Moving a validator
    /// to another host"): export it, import one (stop the daemon first), or print it.
    Guard {
        #[command(subcommand)]
        action: GuardAction,
    },
    /// Deal a Corona or Pulsar key as a trusted dealer: one share file per party (mode 0600)
    /// for `<scheme>.import_share` on that party's host. The dealer sees every share: for
    /// development, or on an offline machine.
    Deal {
        /// `corona` or `pulsar`.
        #[arg(long)]
        scheme: Scheme,
        /// Shares needed to sign, t.
        #[arg(long)]
        threshold: u16,
        /// Shares dealt, n.
        #[arg(long)]
        participants: u16,
        /// Where to write `<scheme>-party-<i>.json` (created if missing).
        #[arg(long)]
        out_dir: PathBuf,
    },
}

#[derive(Subcommand)]
enum GuardAction {
    /// Write the signing history of vote key KEY_ID (`keys list` shows `vote-…` ids) as JSON.
    Export {
        /// The vote key's id.
        key_id: String,
        /// File to write (default: standard output).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Merge a signing history (from `guard export` on the old host) into vote key KEY_ID's
    /// guard; never lowers it, refuses another key's history and conflicting votes, and refuses
    /// while a daemon runs on the data directory.
    Import {
        /// The vote key's id.
        key_id: String,
        /// The document to import.
        #[arg(long)]
        file: PathBuf,
    },
    /// Print what vote key KEY_ID's guard holds, one line per view.
    Inspect {
        /// The vote key's id.
        key_id: String,
    },
}

#[derive(Subcommand)]
enum KeysAction {
    /// One line per key: id, scheme, threshold of participants, public key (keys longer than
    /// 48 bytes, such as Corona and Pulsar group keys, shortened to their first 16 bytes and
    /// their length: `keys export-public ID` gives the whole key).
    List,
    /// One key's public data as JSON.
    ExportPublic {
        /// The key id (`keys list` shows them).
        key_id: String,
    },
    /// Imports a validator's keys from its key directory (`quasar-node keygen`'s): its BLS vote
    /// key as a 1-of-1 BLS key, for `validator.sign_vote`, and each Corona and Pulsar share
    /// dealt to it, for the ceremony rounds. Prints one line per key: its id, then its public
    /// key (the vote key) or the share it is. A key already in the keystore is left as it is
    /// and said so, so the import can be run again after new shares are dealt.
    ImportValidator {
        /// The validator's key directory.
        #[arg(long)]
        key_dir: PathBuf,
        /// File holding the passphrase of the validator's encrypted key file (not the
        /// keystore's); otherwise QUASAR_KEY_PASSPHRASE.
        #[arg(long)]
        key_passphrase_file: Option<PathBuf>,
        /// Accept a plaintext (unencrypted) validator key file.
        #[arg(long)]
        plaintext_keys: bool,
    },
}

/// Logs a `warn` for each secret shorter than its minimum, naming only its length (the daemon
/// starts anyway: tests use short ones).
fn warn_if_weak(token: &str, passphrase: &[u8]) {
    let token_chars = token.chars().count();
    if token_chars < MIN_TOKEN_CHARS {
        tracing::warn!(
            length = token_chars,
            minimum = MIN_TOKEN_CHARS,
            "the bearer token is short and may be guessed; use at least {MIN_TOKEN_CHARS} \
             random characters (e.g. `openssl rand -hex 16`)"
        );
    }
    if passphrase.len() < MIN_PASSPHRASE_BYTES {
        tracing::warn!(
            length = passphrase.len(),
            minimum = MIN_PASSPHRASE_BYTES,
            "the keystore passphrase is short; a stolen keystore falls to guessing sooner: use \
             at least {MIN_PASSPHRASE_BYTES} bytes"
        );
    }
}

/// The passphrase from `--passphrase-file` or THRESHOLDD_PASSPHRASE
/// ([`quasar_chainspec::sealing::read_passphrase`]).
fn passphrase(file: Option<&Path>) -> Result<Zeroizing<Vec<u8>>, String> {
    quasar_chainspec::sealing::read_passphrase(file, "THRESHOLDD_PASSPHRASE", "--passphrase-file")
        .map_err(|e| format!("keystore passphrase: {e}"))
}

fn run(mut cli: Cli) -> Result<(), String> {
    match cli.command.take() {
        Some(Command::Deal {
            scheme,
            threshold,
            participants,
            out_dir,
        }) => {
            let scheme = match scheme {
                Scheme::Corona if participants > thresholdd::MAX_CORONA_PARTICIPANTS => {
                    return Err(format!(
                        "at most {} corona participants",
                        thresholdd::MAX_CORONA_PARTICIPANTS
                    ))
                }
                Scheme::Corona => ThresholdScheme::Corona,
                Scheme::Pulsar => ThresholdScheme::Pulsar,
                other => {
                    return Err(format!(
                        "{other} has no multi-host ceremony: deal corona or pulsar"
                    ))
                }
            };
            let (public_key, files) = quasar_chainspec::write_party_files(
                scheme,
                threshold,
                participants,
                &out_dir,
                &mut rand::rngs::OsRng,
            )
            .map_err(|e| e.to_string())?;
            println!("{public_key}");
            for file in files {
                eprintln!("wrote {}", file.display());
            }
            Ok(())
        }
        Some(Command::Keys { action }) => keys(&cli, action),
        Some(Command::Guard { action }) => guard(&cli, action),
        None => serve(cli),
    }
}

/// The keystore directory and passphrase the other commands need.
fn keystore_args(cli: &Cli) -> Result<(PathBuf, Zeroizing<Vec<u8>>), String> {
    let data_dir = cli
        .data_dir
        .clone()
        .ok_or("--data-dir is required (the keystore directory)")?;
    Ok((data_dir, passphrase(cli.passphrase_file.as_deref())?))
}

/// `thresholdd keys …`.
fn keys(cli: &Cli, action: KeysAction) -> Result<(), String> {
    let (data_dir, passphrase) = keystore_args(cli)?;
    // Inspecting must not create a keystore where a path was mistyped; importing may.
    let imports = matches!(action, KeysAction::ImportValidator { .. });
    if !imports && !data_dir.join(HEADER_FILE).is_file() {
        return Err(format!(
            "no keystore at {} (no {HEADER_FILE})",
            data_dir.display()
        ));
    }
    let keystore = Keystore::open(&data_dir, &passphrase).map_err(|e| e.to_string())?;
    match action {
        KeysAction::List => {
            let listing = keystore.list().map_err(|e| e.to_string())?;
            for unreadable in &listing.unreadable {
                eprintln!("thresholdd: {unreadable}");
            }
            let mut out = std::io::stdout().lock();
            for key in listing.keys {
                let line = writeln!(
                    out,
                    "{}\t{}\t{}-of-{}\t{}",
                    key.key_id,
                    key.scheme,
                    key.threshold,
                    key.participants,
                    listed_public_key(&key.public_key)
                );
                match line {
                    Ok(()) => {}
                    // A reader that stopped early (`| head`) is not an error.
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
                    Err(e) => return Err(format!("writing the listing: {e}")),
                }
            }
            if !listing.unreadable.is_empty() {
                return Err(format!(
                    "{} key files could not be read (listed on stderr)",
                    listing.unreadable.len()
                ));
            }
        }
        KeysAction::ExportPublic { key_id } => {
            let key = keystore.public(&key_id).map_err(|e| e.to_string())?;
            let json = serde_json::json!({
                "keyId": key.key_id.as_str(),
                "scheme": key.scheme.as_str(),
                "threshold": key.threshold,
                "participants": key.participants,
                "publicKeyHex": hex::encode(&key.public_key),
            });
            println!("{json:#}");
        }
        KeysAction::ImportValidator {
            key_dir,
            key_passphrase_file,
            plaintext_keys,
        } => {
            let access = quasar_chainspec::KeyAccess::from_sources(
                key_passphrase_file.as_deref(),
                plaintext_keys,
            )
            .map_err(|e| e.to_string())?;
            let keys = quasar_chainspec::load_keys(&key_dir, &access).map_err(|e| e.to_string())?;
            let report = |what: String, stored: Result<String, KeystoreError>| match stored {
                Ok(id) => {
                    println!("{id}\t{what}");
                    Ok(())
                }
                Err(KeystoreError::DuplicateKey { key_id, .. }) => {
                    println!("{}\t{what} (already in the keystore)", key_id.as_str());
                    Ok(())
                }
                Err(e) => Err(e.to_string()),
            };
            report(
                hex::encode(keys.bls.public_key().to_bytes()),
                thresholdd::import_vote_key(&keystore, &keys.bls),
            )?;
            for (first_epoch, dealt) in &keys.dealt {
                if let Some(share) = &dealt.corona {
                    report(
                        format!(
                            "corona share of party {} (validator set from epoch {first_epoch})",
                            share.index()
                        ),
                        thresholdd::import_corona_share(&keystore, share),
                    )?;
                }
                if let Some((group, share)) = &dealt.pulsar {
                    report(
                        format!(
                            "pulsar share of party {} (validator set from epoch {first_epoch})",
                            share.party()
                        ),
                        thresholdd::import_pulsar_share(&keystore, group, share),
                    )?;
                }
            }
        }
    }
    Ok(())
}

/// `thresholdd guard …`: the vote key's public key comes from the keystore.
fn guard(cli: &Cli, action: GuardAction) -> Result<(), String> {
    use quasar_chainspec::guard_history;
    let (data_dir, passphrase) = keystore_args(cli)?;
    if !data_dir.join(HEADER_FILE).is_file() {
        return Err(format!(
            "no keystore at {} (no {HEADER_FILE})",
            data_dir.display()
        ));
    }
    let keystore = Keystore::open(&data_dir, &passphrase).map_err(|e| e.to_string())?;
    let key_id = match &action {
        GuardAction::Export { key_id, .. }
        | GuardAction::Import { key_id, .. }
        | GuardAction::Inspect { key_id } => key_id,
    };
    let key = keystore.public(key_id).map_err(|e| e.to_string())?;
    let location = thresholdd::guard_location(&data_dir, key.key_id.as_str(), &key.public_key);
    match action {
        GuardAction::Export { out, .. } => {
            guard_history::write_export(&location, out.as_deref()).map_err(|e| e.to_string())?
        }
        GuardAction::Import { file, .. } => {
            let report = guard_history::import(&location, &file).map_err(|e| e.to_string())?;
            eprintln!("{}", guard_history::describe_import(&file, &report));
        }
        GuardAction::Inspect { .. } => print!(
            "{}",
            guard_history::inspect(&location).map_err(|e| e.to_string())?
        ),
    }
    Ok(())
}

/// `thresholdd` without a command: serves until interrupted.
fn serve(cli: Cli) -> Result<(), String> {
    let (data_dir, passphrase) = keystore_args(&cli)?;
    // An empty THRESHOLDD_TOKEN counts as unset.
    let given = cli.token.filter(|token| !token.is_empty());
    let token = match (given, &cli.token_file) {
        (Some(_), Some(_)) => {
            return Err(
                "two bearer tokens: give --token-file or --token (THRESHOLDD_TOKEN), not both"
                    .into(),
            )
        }
        (Some(token), None) => quasar_chainspec::parse_token(&token, "--token/THRESHOLDD_TOKEN")
            .map_err(|e| e.to_string())?,
        (None, Some(path)) => {
            quasar_chainspec::read_token_file(path).map_err(|e| format!("--token-file: {e}"))?
        }
        (None, None) => {
            return Err(
                "no bearer token: pass --token-file or --token, or set THRESHOLDD_TOKEN".into(),
            )
        }
    };
    warn_if_weak(&token, &passphrase);
    let config = DaemonConfig {
        listen: cli.listen,
        allow_remote: cli.allow_remote,
        data_dir,
        token: Zeroizing::new(token),
        passphrase,
        kdf: KdfParams::default(),
        request_timeout: Duration::from_secs(cli.request_timeout_secs.max(1)),
        metrics_listen: cli.metrics_listen,
    };
    runtime()?.block_on(async {
        let daemon = thresholdd::start(config).await.map_err(|e| e.to_string())?;
        interrupted().await;
        tracing::info!("thresholdd stopping");
        daemon.handle.stop().ok();
        daemon.handle.stopped().await;
        Ok(())
    })
}

/// Public keys longer than this many bytes are shortened in `keys list`: a BLS key (48 bytes)
/// is shown whole, a Corona group key (thousands of bytes) is not.
const LISTED_KEY_BYTES: usize = 48;

/// A public key as `keys list` shows it: whole up to [`LISTED_KEY_BYTES`], else its first 16
/// bytes in hex, an ellipsis and its length.
fn listed_public_key(key: &[u8]) -> String {
    match key.get(..16) {
        Some(head) if key.len() > LISTED_KEY_BYTES => {
            format!("{}… ({} bytes)", hex::encode(head), key.len())
        }
        _ => hex::encode(key),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.log_format, "info");
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("thresholdd: {message}");
            ExitCode::FAILURE
        }
    }
}
