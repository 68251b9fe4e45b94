//! The node's client of its signing daemon: with `signer = "remote"` in `node.toml`, every vote
//! and proposal signature comes from thresholdd's `validator.sign_vote` (JSON-RPC 2.0 over HTTP,
//! bearer token; see [`quasar_thresholdd`]) instead of a key in this process.
//!
//! The node's own signing guard still records each vote durably first ([`crate::signer`]); the
//! daemon keeps a second guard of its own, so a node whose data directory was lost or copied
//! still cannot make the daemon sign a conflicting vote. Every signature that comes back is
//! verified against the validator's BLS public key before it is used: a daemon holding another
//! key, or a corrupted reply, is an error, never a bad vote on the wire.
//!
//! A daemon whose guard is new signs nothing until it is fenced (`validator.fence`,
//! [`quasar_thresholdd`]'s `validator` module): [`RemoteSigner::check`] reports whether it is, a
//! node with an unfenced daemon listens to the network before signing as if its own guard were
//! new, and the fence it then makes is sent to the daemon before its next vote
//! ([`RemoteSigner::fence_before_signing`]).
//!
//! The same daemon runs this validator's Corona and Pulsar ceremony rounds
//! ([`RemoteClient`], used by [`crate::ceremony`]): it holds the validator's shares and the
//! secret state between rounds, and records each session id durably before its first round
//! leaves, so a restarted node cannot make it reuse a session.
//!
//! Calls are blocking, like the guard's fsync that precedes a vote: the engine signs
//! synchronously. Each [`RemoteClient`] runs them on a dedicated thread with its own
//! single-threaded Tokio runtime, so the caller may be a Tokio task or a plain thread alike;
//! each call is bounded by the configured timeout.

use std::sync::{mpsc, Mutex};
use std::time::Duration;

use quasar_crypto::bls::{PublicKey, Signature};
use quasar_thresholdd::IDLE_TIMEOUT;
use quasar_wire::{EpochDomain, Vote, VoteKind};
use serde::Deserialize;

/// The JSON-RPC method that signs a vote.
const SIGN_VOTE_METHOD: &str = "validator.sign_vote";
/// The JSON-RPC method that fences the daemon's guard.
const FENCE_METHOD: &str = "validator.fence";
/// How long an idle connection to the daemon is kept: half of thresholdd's idle limit for a
/// connection that has sent the token, after which the daemon closes it. A node votes far more
/// often, so its votes go over one authenticated connection that the daemon's unauthenticated
/// connections cannot delay (`http_serve`, "Admission").
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(IDLE_TIMEOUT.as_secs() / 2);
/// The largest reply read from the daemon, bytes: a vote reply is about 250, a Corona round-1
/// reply about 1.3 MB (its 615 KB message in hex).
const MAX_REPLY_BYTES: usize = 8 * 1024 * 1024;

/// Where the remote signer is and how to reach it (`node.toml`'s `[remote_signer]`, with the
/// token already read from its file).
#[derive(Clone)]
pub struct RemoteSignerTarget {
    /// The daemon's base URL, `http://host:port` (the JSON-RPC endpoint is its root).
    pub url: reqwest::Url,
    /// The bearer token (`THRESHOLDD_TOKEN` of the daemon).
    pub token: String,
    /// The limit on one call, connection included.
    pub timeout: Duration,
}

impl std::fmt::Debug for RemoteSignerTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteSignerTarget")
            .field("url", &self.url.as_str())
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// A failed remote signature; nothing was signed for the caller.
#[derive(Debug, thiserror::Error)]
pub enum RemoteSignError {
    /// The daemon could not be reached.
    #[error("thresholdd at {url} is unreachable: {message}")]
    Unreachable {
        /// The daemon's URL.
        url: String,
        /// The transport error.
        message: String,
    },
    /// The daemon did not answer within the configured timeout.
    #[error("thresholdd at {url} did not answer within {timeout:?}")]
    TimedOut {
        /// The daemon's URL.
        url: String,
        /// The limit (`remote_signer.timeout_ms`).
        timeout: Duration,
    },
    /// The daemon refused the bearer token (HTTP 401).
    #[error("thresholdd at {0} refused the token (HTTP 401): check remote_signer.token_file")]
    Unauthorized(String),
    /// The daemon answered with a JSON-RPC error, e.g. −32000 when its signing guard refuses a
    /// conflicting vote or it holds no such key.
    #[error("thresholdd refused to sign (code {code}): {message}")]
    Refused {
        /// The JSON-RPC error code.
        code: i64,
        /// The daemon's message.
        message: String,
    },
    /// The reply was not a JSON-RPC answer of the expected shape (or an unexpected HTTP status).
    #[error("thresholdd sent a malformed reply: {0}")]
    BadReply(String),
    /// The returned signature does not verify under this validator's public key.
    #[error(
        "thresholdd returned a signature that does not verify under this validator's key \
         (does the daemon hold another key?)"
    )]
    WrongSignature,
    /// The signer's worker thread is gone (it failed to start its runtime).
    #[error("the remote signer's worker thread stopped: {0}")]
    Worker(String),
}

/// One call for the worker thread: a JSON-RPC method, its parameters, and where to answer.
struct Call {
    method: &'static str,
    params: serde_json::Value,
    reply: mpsc::SyncSender<Result<serde_json::Value, RemoteSignError>>,
}

/// A JSON-RPC client of one thresholdd, one call at a time on its own thread (module docs).
pub struct RemoteClient {
    calls: mpsc::SyncSender<Call>,
}

impl std::fmt::Debug for RemoteClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteClient").finish_non_exhaustive()
    }
}

/// A client of one thresholdd for one validator's vote key (module docs).
#[derive(Debug)]
pub struct RemoteSigner {
    public_key: PublicKey,
    client: RemoteClient,
    /// A fence the daemon's guard must receive before the next vote
    /// ([`RemoteSigner::fence_before_signing`]); cleared once the daemon took it.
    fence_due: Mutex<Option<u64>>,
}

/// The answer of a JSON-RPC call: `result` or `error`.
#[derive(Deserialize)]
struct RpcReply {
    result: Option<serde_json::Value>,
    error: Option<RpcError>,
}

#[derive(Deserialize)]
struct RpcError {
    code: i64,
    message: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SignVoteReply {
    signature_hex: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct KeyReply {
    fenced: bool,
}

impl RemoteClient {
    /// A client of the daemon at `target`, on a new worker thread. Makes no call yet. Errors:
    /// [`RemoteSignError::Worker`] when the thread or its HTTP client cannot be built.
    pub fn new(target: RemoteSignerTarget) -> Result<RemoteClient, RemoteSignError> {
        let worker_err = |e: &dyn std::fmt::Display| RemoteSignError::Worker(e.to_string());
        let client = reqwest::Client::builder()
            .no_proxy()
            // Dropping an idle connection before the daemon does keeps a call from being sent
            // on a connection it is closing.
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .timeout(target.timeout)
            .build()
            .map_err(|e| worker_err(&e))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| worker_err(&e))?;
        // One call at a time: the engine waits for each signature anyway.
        let (calls, queue) = mpsc::sync_channel::<Call>(1);
        std::thread::Builder::new()
            .name("remote-signer".into())
            .spawn(move || {
                let mut id = 0u64;
                while let Ok(call) = queue.recv() {
                    id = id.wrapping_add(1);
                    let answer =
                        runtime.block_on(rpc(&client, &target, id, call.method, call.params));
                    // The caller may have given up; nothing to do then.
                    let _ = call.reply.send(answer);
                }
            })
            .map_err(|e| worker_err(&e))?;
        Ok(RemoteClient { calls })
    }

    /// Runs JSON-RPC method `method` with `params` on the worker thread and waits for its
    /// `result`. Errors: [`RemoteSignError`] (a JSON-RPC error is [`RemoteSignError::Refused`]).
    pub fn call(
        &self,
        method: &'static str,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, RemoteSignError> {
        let (reply, answer) = mpsc::sync_channel(1);
        self.calls
            .send(Call {
                method,
                params,
                reply,
            })
            .map_err(|_| RemoteSignError::Worker("it no longer takes calls".into()))?;
        answer
            .recv()
            .map_err(|_| RemoteSignError::Worker("it dropped a call".into()))?
    }

    /// Runs a ceremony round method (e.g. `corona.round1`) and returns the bytes of the hex
    /// field `field` of its result (e.g. `round1Hex`). Errors: as [`RemoteClient::call`];
    /// [`RemoteSignError::BadReply`] without that hex field.
    pub fn round(
        &self,
        method: &'static str,
        params: serde_json::Value,
        field: &str,
    ) -> Result<Vec<u8>, RemoteSignError> {
        let result = self.call(method, params)?;
        let text = result
            .get(field)
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| RemoteSignError::BadReply(format!("{method}: no {field}")))?;
        hex::decode(text).map_err(|e| RemoteSignError::BadReply(format!("{method}: {field}: {e}")))
    }

    /// Calls `health` (which also needs the token): whether the daemon is reachable and takes
    /// this token. Errors: [`RemoteSignError`].
    pub fn check(&self) -> Result<(), RemoteSignError> {
        self.call("health", serde_json::json!({})).map(drop)
    }
}

impl RemoteSigner {
    /// A client signing with the daemon's key `public_key`, on a new worker thread. Makes no
    /// call yet ([`RemoteSigner::check`] does). Errors: [`RemoteSignError::Worker`] when the
    /// thread or its HTTP client cannot be built.
    pub fn new(
        target: RemoteSignerTarget,
        public_key: PublicKey,
    ) -> Result<RemoteSigner, RemoteSignError> {
        Ok(RemoteSigner {
            public_key,
            client: RemoteClient::new(target)?,
            fence_due: Mutex::new(None),
        })
    }

    /// The validator's BLS public key, which the daemon's key must be.
    pub fn public_key(&self) -> PublicKey {
        self.public_key
    }

    /// Checks that the daemon answers, takes the token (`health`) and holds this validator's
    /// vote key (`validator.key`), and returns whether the key's guard there is fenced (a new
    /// one signs nothing until [`RemoteSigner::fence_before_signing`]'s fence reaches it).
    /// Errors: [`RemoteSignError`]; a daemon without the key is [`RemoteSignError::Refused`].
    pub fn check(&self) -> Result<bool, RemoteSignError> {
        self.client.check()?;
        let params = serde_json::json!({ "pubKeyHex": hex::encode(self.public_key.to_bytes()) });
        let result = self.client.call("validator.key", params)?;
        let reply: KeyReply = serde_json::from_value(result)
            .map_err(|e| RemoteSignError::BadReply(format!("validator.key: {e}")))?;
        Ok(reply.fenced)
    }

    /// Sends `view` to the daemon's guard (`validator.fence`) before the next vote: the view
    /// this node fenced after listening to the network (0 at a genesis start), which lets a new
    /// daemon guard sign above it. Makes no call now; a failed fence is sent again at the next
    /// vote, and the vote waits for it.
    pub fn fence_before_signing(&self, view: u64) {
        let mut due = self.fence_due.lock().unwrap_or_else(|e| e.into_inner());
        *due = Some(due.map_or(view, |earlier| earlier.max(view)));
    }

    /// Sends the fence that is due, if any. Errors: [`RemoteSignError`] (it stays due).
    fn send_due_fence(&self) -> Result<(), RemoteSignError> {
        let mut due = self.fence_due.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(view) = *due {
            let params = serde_json::json!({
                "pubKeyHex": hex::encode(self.public_key.to_bytes()),
                "view": view,
            });
            self.client.call(FENCE_METHOD, params)?;
            tracing::info!(view, "thresholdd's signing guard fenced");
            *due = None;
        }
        Ok(())
    }

    /// Signs `vote`'s signing message under `domain` (the bytes
    /// [`quasar_wire::vote_signing_message`] gives) through `validator.sign_vote`, and verifies
    /// the signature under [`RemoteSigner::public_key`]. Blocks for one HTTP call (two when a
    /// fence is due first). Errors: [`RemoteSignError`]; a refusal by the daemon's signing
    /// guard (also an unfenced one) is [`RemoteSignError::Refused`].
    pub fn sign_vote(
        &self,
        vote: &Vote,
        domain: &EpochDomain,
    ) -> Result<Signature, RemoteSignError> {
        self.send_due_fence()?;
        let kind = match vote.kind {
            VoteKind::Notarize => "notarize",
            VoteKind::Finalize => "finalize",
            VoteKind::Nullify => "nullify",
        };
        let params = serde_json::json!({
            "pubKeyHex": hex::encode(self.public_key.to_bytes()),
            "kind": kind,
            "chainId": vote.chain_id,
            "epoch": vote.epoch,
            "view": vote.view,
            "height": vote.height,
            "blockHex": hex::encode(vote.block),
            "validatorSetRootHex": hex::encode(domain.validator_set_root),
            "profileId": domain.profile_id,
        });
        let result = self.client.call(SIGN_VOTE_METHOD, params)?;
        let reply: SignVoteReply = serde_json::from_value(result)
            .map_err(|e| RemoteSignError::BadReply(format!("{SIGN_VOTE_METHOD}: {e}")))?;
        let bytes = hex::decode(&reply.signature_hex)
            .map_err(|e| RemoteSignError::BadReply(format!("signatureHex: {e}")))?;
        let signature = Signature::from_bytes(&bytes)
            .map_err(|e| RemoteSignError::BadReply(format!("signatureHex: {e}")))?;
        self.public_key
            .verify(&vote.signing_message(domain), &signature)
            .map_err(|_| RemoteSignError::WrongSignature)?;
        Ok(signature)
    }
}

/// `error` and its sources, joined with ": ".
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// One JSON-RPC call over HTTP: posts, bounds the reply, and splits `result` from `error`.
async fn rpc(
    client: &reqwest::Client,
    target: &RemoteSignerTarget,
    id: u64,
    method: &str,
    params: serde_json::Value,
) -> Result<serde_json::Value, RemoteSignError> {
    let url = target.url.as_str();
    let unreachable = |e: reqwest::Error| {
        if e.is_timeout() {
            RemoteSignError::TimedOut {
                url: url.to_string(),
                timeout: target.timeout,
            }
        } else {
            RemoteSignError::Unreachable {
                url: url.to_string(),
                // The source chain names the cause ("connection refused"), the top only the URL.
                message: error_chain(&e),
            }
        }
    };
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut response = client
        .post(target.url.clone())
        .bearer_auth(&target.token)
        .json(&body)
        .send()
        .await
        .map_err(unreachable)?;
    let status = response.status();
    if status == reqwest::StatusCode::UNAUTHORIZED {
        return Err(RemoteSignError::Unauthorized(url.to_string()));
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(unreachable)? {
        if bytes.len() + chunk.len() > MAX_REPLY_BYTES {
            return Err(RemoteSignError::BadReply(format!(
                "{method}: reply over {MAX_REPLY_BYTES} bytes"
            )));
        }
        bytes.extend_from_slice(&chunk);
    }
    if !status.is_success() {
        return Err(RemoteSignError::BadReply(format!(
            "{method}: HTTP {status}: {}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
        )));
    }
    let reply: RpcReply = serde_json::from_slice(&bytes)
        .map_err(|e| RemoteSignError::BadReply(format!("{method}: {e}")))?;
    match (reply.result, reply.error) {
        (_, Some(error)) => Err(RemoteSignError::Refused {
            code: error.code,
            message: error.message,
        }),
        (Some(result), None) => Ok(result),
        (None, None) => Err(RemoteSignError::BadReply(format!(
            "{method}: neither result nor error"
        ))),
    }
}
