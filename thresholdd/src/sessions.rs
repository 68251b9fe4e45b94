//! What a host keeps for the parties of multi-host threshold ceremonies (Corona, Pulsar): each
//! imported share's signer, the session ids it has used (durably), and its secret states
//! between rounds.
//!
//! A share must never run round 1 twice for one session id (the schemes' own guards live in
//! memory only, [`quasar_crypto::corona::scheme::Signer`], [`quasar_crypto::pulsar::Signer`]):
//! [`UsedSessions`] appends each id to `<data-dir>/<scheme>-sessions/<keyId>` and fsyncs it
//! before round 1's message leaves, and refuses an id it holds, across restarts too.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use jsonrpsee::types::ErrorObjectOwned;
use serde::Serialize;

use super::rpc::{hex_field, invalid_params, scheme_error};

/// Secret states kept per party between rounds; a further session drops the oldest.
pub const MAX_PENDING: usize = 16;
/// The largest used-session file read back (2,097,152 sessions of 32 bytes).
const MAX_USED_SESSIONS_BYTES: u64 = 64 << 20;

/// The session ids one imported share has run round 1 for (module docs).
pub(super) struct UsedSessions {
    path: PathBuf,
    ids: HashSet<[u8; 32]>,
}

impl UsedSessions {
    /// Reads `dir/<key_id>` (absent: none used). Errors: a message naming the file when it
    /// cannot be read, is too large, or is not a whole number of ids.
    fn open(dir: &Path, key_id: &str) -> Result<UsedSessions, String> {
        let path = dir.join(key_id);
        let mut bytes = Vec::new();
        match File::open(&path) {
            Ok(file) => {
                file.take(MAX_USED_SESSIONS_BYTES + 1)
                    .read_to_end(&mut bytes)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
        let ids = parse_used_sessions(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(UsedSessions { path, ids })
    }

    /// Records `id` durably (append, fsync; the directory too when the file is new). Errors:
    /// −32000 when the id was used before or the record cannot be written.
    pub(super) fn record(&mut self, id: [u8; 32]) -> Result<(), ErrorObjectOwned> {
        if self.ids.contains(&id) {
            return Err(scheme_error(
                "this party has already run round 1 for this session id: start a new session",
            ));
        }
        let io = |what: &Path, e: std::io::Error| scheme_error(format!("{}: {e}", what.display()));
        let dir = self.path.parent().unwrap_or(Path::new("."));
        fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        let created = !self.path.exists();
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(|e| io(&self.path, e))?;
        file.write_all(&id)
            .and_then(|()| file.sync_data())
            .map_err(|e| io(&self.path, e))?;
        if created {
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| io(dir, e))?;
        }
        self.ids.insert(id);
        Ok(())
    }
}

/// The session ids of a used-session record (module docs): 32 bytes each, concatenated.
/// Errors: a message when the record is longer than 64 MiB or not a whole number of ids (a
/// torn append; the operator must look at it, since dropping an id could allow its reuse).
pub fn parse_used_sessions(bytes: &[u8]) -> Result<HashSet<[u8; 32]>, String> {
    if bytes.len() as u64 > MAX_USED_SESSIONS_BYTES || !bytes.len().is_multiple_of(32) {
        return Err(format!(
            "{} bytes is not a used-session record (a multiple of 32, at most {MAX_USED_SESSIONS_BYTES})",
            bytes.len()
        ));
    }
    Ok(bytes
        .chunks_exact(32)
        .filter_map(|id| <[u8; 32]>::try_from(id).ok())
        .collect())
}

/// One imported share on this host: its signer `S`, its used sessions, and its pending secret
/// states `P` by session id.
pub(super) struct Party<S, P> {
    /// The scheme's signer for the share.
    pub(super) signer: S,
    /// The sessions it has run round 1 for.
    pub(super) used: UsedSessions,
    /// Oldest first, at most [`MAX_PENDING`].
    pending: Vec<([u8; 32], P)>,
}

impl<S, P> Party<S, P> {
    /// Keeps `state` for `session`, dropping the oldest state beyond [`MAX_PENDING`].
    pub(super) fn keep(&mut self, session: [u8; 32], state: P) {
        if self.pending.len() >= MAX_PENDING {
            self.pending.remove(0);
        }
        self.pending.push((session, state));
    }

    /// Takes the state kept for `session` (it serves one later round only). Errors: −32000 when
    /// there is none.
    pub(super) fn take(&mut self, session: &[u8; 32]) -> Result<P, ErrorObjectOwned> {
        let position = self
            .pending
            .iter()
            .position(|(id, _)| id == session)
            .ok_or_else(|| {
                scheme_error(
                    "no state for this session at this round (never run here, already used, \
                     dropped as the oldest, or lost in a restart): start a new session",
                )
            })?;
        Ok(self.pending.remove(position).1)
    }
}

/// The parties this daemon runs for one scheme, opened on first use.
pub(super) struct Parties<S, P> {
    sessions_dir: PathBuf,
    open: Mutex<HashMap<String, Party<S, P>>>,
}

impl<S, P> Parties<S, P> {
    /// Parties whose used sessions live under `<data_dir>/<scheme>-sessions`.
    pub(super) fn new(data_dir: &Path, scheme: &str) -> Parties<S, P> {
        Parties {
            sessions_dir: data_dir.join(format!("{scheme}-sessions")),
            open: Mutex::new(HashMap::new()),
        }
    }

    /// Runs `work` on the party of keystore entry `key_id`, first building its signer with
    /// `load` if it is not open yet. Errors: `load`'s and `work`'s; −32000 when the session
    /// record cannot be read.
    pub(super) fn with_party<R>(
        &self,
        key_id: &str,
        load: impl FnOnce() -> Result<S, ErrorObjectOwned>,
        work: impl FnOnce(&mut Party<S, P>) -> Result<R, ErrorObjectOwned>,
    ) -> Result<R, ErrorObjectOwned> {
        let mut open = self.open.lock().map_err(|_| {
            scheme_error("the ceremony parties are unavailable after an internal failure: restart thresholdd")
        })?;
        if !open.contains_key(key_id) {
            let signer = load()?;
            let used = UsedSessions::open(&self.sessions_dir, key_id).map_err(scheme_error)?;
            open.insert(
                key_id.to_string(),
                Party {
                    signer,
                    used,
                    pending: Vec::new(),
                },
            );
        }
        let party = open
            .get_mut(key_id)
            .ok_or_else(|| scheme_error(format!("the party of {key_id} is not open")))?;
        work(party)
    }
}

/// `<scheme>.import_share`'s reply: the share's keystore id and what it is a share of.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ImportShareReply {
    /// `<keyId>-p<party>`.
    pub(super) key_id: String,
    /// The party whose share it is.
    pub(super) party: u16,
    /// The key's public key, hex.
    pub(super) public_key: String,
    /// t.
    pub(super) threshold: u16,
    /// n.
    pub(super) participants: u16,
}

/// A round method's reply: `{<field>: hex of message}`, e.g. `{"round1Hex": …}`.
pub(super) type RoundReply = BTreeMap<&'static str, String>;

/// The reply carrying `message` as `field`.
pub(super) fn round_reply(field: &'static str, message: &[u8]) -> RoundReply {
    BTreeMap::from([(field, hex::encode(message))])
}

/// Field `sessionHex`: 32 bytes. Errors: −32602.
pub(super) fn session_field(value: &str) -> Result<[u8; 32], ErrorObjectOwned> {
    let bytes = hex_field("sessionHex", value)?;
    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| {
        invalid_params(
            "sessionHex",
            format_args!("{} bytes, expected 32", bytes.len()),
        )
    })
}

/// Field `field`, a list of at most `max` hex-encoded messages decoded by `decode`. Errors:
/// −32602 naming the entry (`field[i]`).
pub(super) fn messages_field<T, E: std::fmt::Display>(
    field: &str,
    values: &[String],
    max: usize,
    decode: impl Fn(&[u8]) -> Result<T, E>,
) -> Result<Vec<T>, ErrorObjectOwned> {
    if values.len() > max {
        return Err(invalid_params(
            field,
            format_args!("more than {max} messages"),
        ));
    }
    values
        .iter()
        .enumerate()
        .map(|(i, value)| {
            let entry = format!("{field}[{i}]");
            decode(&hex_field(&entry, value)?).map_err(|e| invalid_params(&entry, e))
        })
        .collect()
}
