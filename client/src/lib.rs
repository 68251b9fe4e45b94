//! The HTTP API of `quasar-node`: the JSON every route answers, as types, and a small typed
//! [`Client`]. The node's API (`quasar_node::api`) builds its answers from these types and the
//! testnet harness, the benchmarks and tools read them back with the same types, so the shapes
//! exist once (docs/architecture.md §1).
//!
//! | route | answer |
//! |---|---|
//! | `GET /health` | [`Health`] |
//! | `GET /status` | [`Status`] |
//! | `GET /ready` | [`Readiness`], with 200 when ready and 503 when not |
//! | `GET /block/{height}`, `GET /block/latest` | [`BlockInfo`]; 404 when not finalized here, 410 when pruned |
//! | `POST /tx` (body: the transaction's bytes) | [`TxAccepted`]; 400 invalid or empty, 413 too large, 409 duplicate or finalized, 503 mempool full or sender's key unknown, 429 rate-limited, 500 the node's storage failed |
//! | `GET /tx/{hash}` | [`TxInfo`]; 404 when unknown |
//! | `GET /account/{address}` | [`AccountInfo`]; 400 not 32 bytes of hex, 404 nothing finalized here yet, 410 its block pruned |
//! | `GET /evidence?limit=L&from_view=V` | [`EvidenceList`] |
//! | `GET /validators` | [`ValidatorList`]; 404 nothing executed here yet |
//! | `GET /metrics` | Prometheus text exposition |
//!
//! Every error answer is an [`ApiError`] (`{"error": "…"}`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// `GET /health`: `{"status": "ok"}` while the process serves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    /// Always `"ok"`.
    pub status: String,
}

/// The body of every error answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiError {
    /// What went wrong, one sentence.
    pub error: String,
}

/// `GET /status` of a node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// The node's network identity: its position among every validator the genesis names (a
    /// validator outside the genesis, on a chain whose sets come from the registry: the number
    /// of those; `validator_index` says where it signs).
    pub validator: u32,
    /// Its index in the current epoch's validator set; `None` while it is not a member (it
    /// follows the chain without signing).
    #[serde(default)]
    pub validator_index: Option<u32>,
    /// Highest height the node knows a block for.
    pub height: u64,
    /// Highest finalized height.
    pub finalized_height: u64,
    /// Current view.
    pub view: u64,
    /// Current epoch.
    pub epoch: u64,
    /// Every block from this height to the tip is stored (older epochs are pruned to their
    /// boundary blocks).
    #[serde(default)]
    pub history_floor: u64,
    /// Connected peers.
    pub peers: usize,
    /// Pending transactions.
    pub mempool: usize,
    /// Chain id.
    pub chain_id: u64,
    /// Equivocations the node detected in votes it received.
    pub evidence: u64,
    /// Votes this process signed.
    pub votes_signed: u64,
    /// Votes the signing guard refused against a record this process made (a second signer),
    /// or could not record.
    pub guard_refusals: u64,
    /// Votes the signing guard refused because this validator voted otherwise in the same
    /// view before it restarted.
    #[serde(default)]
    pub guard_restart_refusals: u64,
    /// The cert profile.
    #[serde(default)]
    pub profile: String,
    /// Highest height covered by a verified QuasarCert.
    #[serde(default)]
    pub quasar_finalized_height: u64,
    /// Why Quasar finality is unavailable, if it is.
    #[serde(default)]
    pub quasar_unavailable: Option<String>,
    /// Median verification time per leg, ms.
    #[serde(default)]
    pub leg_verify_p50_ms: BTreeMap<String, f64>,
    /// Median production time per post-quantum leg, ms.
    #[serde(default)]
    pub leg_sign_p50_ms: BTreeMap<String, f64>,
    /// The node's version (`quasar-node --version`).
    #[serde(default)]
    pub version: String,
    /// The git commit it was built from (`unknown` outside a checkout).
    #[serde(default)]
    pub commit: String,
    /// The hash of the genesis it runs, hex (32 bytes).
    #[serde(default)]
    pub genesis_hash: String,
}

/// `GET /ready` of a node (answered with 200 when `ready`, 503 otherwise).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Readiness {
    /// Whether the node finalizes with its peers.
    pub ready: bool,
    /// Why not, one sentence each; empty when ready.
    pub reasons: Vec<String>,
    /// Its finalized height.
    pub finalized_height: u64,
    /// The highest height of a verified proposal it has seen.
    pub height: u64,
    /// How long ago it saw its finalized height finalized, ms (`None`: nothing since it
    /// started).
    pub last_finalized_ms_ago: Option<u64>,
    /// The longest time without a finalized block a ready node allows, ms.
    pub stale_after_ms: u64,
    /// Connected peers.
    pub peers: usize,
}

/// The certificate part of [`BlockInfo`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CertificateInfo {
    /// `"finalization"`, `"notarization"` or `"nullification"`.
    pub kind: String,
    /// The certified view.
    pub view: u64,
    /// The certified block's hash, hex (32 bytes).
    pub block: String,
    /// Validator indices whose signatures are aggregated.
    pub signers: Vec<u32>,
    /// The BLS aggregate signature, hex.
    pub aggregate_signature: String,
}

/// `GET /block/{height}` of a node: a finalized block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockInfo {
    /// Height.
    pub height: u64,
    /// Block hash, hex (32 bytes).
    pub hash: String,
    /// Parent hash, hex.
    pub parent: String,
    /// View it was proposed in.
    pub view: u64,
    /// Proposer's validator index.
    pub proposer: u32,
    /// Proposal time on the proposer's clock, µs since the Unix epoch.
    pub timestamp_us: u64,
    /// Number of transactions.
    pub tx_count: u64,
    /// Transaction hashes, hex.
    pub tx_hashes: Vec<String>,
    /// When this node saw the finalize quorum (its clock, µs since the Unix epoch); `None` when
    /// it learned the block otherwise (e.g. by sync after a restart).
    pub finalized_at_us: Option<u64>,
    /// Its finality tier and the state of its bundle.
    #[serde(default)]
    pub finality: FinalityInfo,
    /// The certificate that finalized it.
    pub certificate: CertificateInfo,
}

/// The `finality` object of [`BlockInfo`]: where the block's Quasar bundle stands
/// (docs/architecture.md §3).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FinalityInfo {
    /// `nova` (BFT finality) or `quasar` (a verified QuasarCert covers the block).
    pub tier: String,
    /// Where its bundle stands: `certified`, `open`, `waiting`, `expired`, `dropped`,
    /// `unavailable` or `unknown`.
    #[serde(default)]
    pub state: String,
    /// The certificate profile.
    #[serde(default)]
    pub profile: String,
    /// The height that closes the block's bundle.
    #[serde(default)]
    pub bundle_end: u64,
    /// Each leg's state by leg name: `verified` or `missing`.
    #[serde(default)]
    pub legs: BTreeMap<String, String>,
    /// Why Quasar finality is unavailable for this bundle, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

/// The answer of `POST /tx` that accepted a transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxAccepted {
    /// The transaction hash, hex (32 bytes).
    pub hash: String,
}

/// One transaction's answer inside `POST /txs` ([`TxBatchAnswer`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxOutcome {
    /// What `POST /tx` would have answered for it alone: 200 accepted, 400 invalid, 409
    /// duplicate or finalized, 503 to send again later (mempool full, or the sender's key not
    /// known to the node yet).
    pub status: u16,
    /// The transaction hash, hex, when accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// Why it was not accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The answer of `POST /txs`: how many of the batch were accepted, and each transaction's
/// outcome in the batch's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxBatchAnswer {
    /// Transactions accepted.
    pub accepted: u64,
    /// One outcome per transaction, in order.
    pub results: Vec<TxOutcome>,
}

/// Where a transaction stands (`GET /tx/{hash}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TxStatus {
    /// In the mempool.
    Pending,
    /// In a finalized block.
    Finalized,
}

/// `GET /account/{address}` of a node: an account as of a finalized block, with what a client
/// needs to check it without trusting the node (docs/architecture.md §11): the block's header,
/// which carries the state root, the certificate that finalized the block, and the account's
/// Merkle proof against the root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountInfo {
    /// The account's address, hex (32 bytes).
    pub address: String,
    /// The account, `None` when no account exists at the address (the proof then proves
    /// absence).
    pub account: Option<AccountState>,
    /// The finalized block whose state the answer is: the node's latest executed one.
    pub header: HeaderInfo,
    /// When the certificate finalizes a descendant of the block (as a boundary block is
    /// finalized through its seals): the headers from the block's child up to the certified
    /// block, each the parent of the next; empty when the certificate names the block itself.
    #[serde(default)]
    pub links: Vec<HeaderInfo>,
    /// The certificate that finalized the block, in its ZAP encoding, hex.
    pub certificate_hex: String,
    /// The account's proof against `header.state_root` (`quasar_app::AccountProof`), hex.
    pub proof_hex: String,
}

/// `GET /epochs/{epoch}/set`: one step of an epoch-change proof on a chain whose validator
/// sets come from its registry. The set of epoch `epoch` (from 2 on) is what the boundary block
/// of epoch `epoch − 2` wrote into the state: the answer carries that block's header, the
/// certificate that finalized it (with `links` up to the certified seal), and the set's entry
/// with its Merkle proof against the header's state root. A client that knows epoch
/// `epoch − 2`'s set checks the certificate, then learns epoch `epoch`'s set from the proof.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpochSetInfo {
    /// The epoch whose set this is.
    pub epoch: u64,
    /// The boundary block of epoch `epoch − 2`.
    pub header: HeaderInfo,
    /// The headers from the boundary block's child up to the certified block (seals), each the
    /// parent of the next; empty when the certificate names the boundary block itself.
    #[serde(default)]
    pub links: Vec<HeaderInfo>,
    /// The certificate that finalized the boundary block, in its ZAP encoding, hex.
    pub certificate_hex: String,
    /// The set's entry (`quasar_app::EpochSet` bytes), hex.
    pub set_hex: String,
    /// The entry's proof against `header.state_root` (`quasar_app::AccountProof`), hex.
    pub proof_hex: String,
}

/// What the state holds for an account (the leaf its proof covers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountState {
    /// Spendable balance, in the chain's smallest unit.
    pub balance: u64,
    /// Staked amount.
    pub stake: u64,
    /// The nonce the account's next transaction must carry.
    pub nonce: u64,
    /// Whether its ML-DSA-65 public key is in state: when it is not, the account's next
    /// transaction carries it.
    pub has_key: bool,
}

/// Every field of a block header (hashes hex, 32 bytes), from which a client recomputes the
/// block hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeaderInfo {
    /// Chain identifier.
    pub chain_id: u64,
    /// Epoch of the validator set that decided the block.
    pub epoch: u64,
    /// View it was proposed in.
    pub view: u64,
    /// Height.
    pub height: u64,
    /// View of its parent.
    pub parent_view: u64,
    /// Parent hash.
    pub parent: String,
    /// Proposer's validator index.
    pub proposer: u32,
    /// Proposal time on the proposer's clock, µs since the Unix epoch.
    pub timestamp_us: u64,
    /// Root of the block's transactions.
    pub payload_root: String,
    /// The state root after the block.
    pub state_root: String,
}

/// `GET /tx/{hash}` of a node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxInfo {
    /// Transaction hash, hex.
    pub hash: String,
    /// Pending or finalized.
    pub status: TxStatus,
    /// Height of the finalized block containing it.
    pub height: Option<u64>,
}

/// One equivocation in [`EvidenceList`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidenceEntry {
    /// `conflicting_proposal`, `conflicting_notarize`, `conflicting_finalize` or
    /// `finalize_and_nullify`.
    pub kind: String,
    /// The equivocating validator's index.
    pub signer: u32,
    /// The view both messages are for.
    pub view: u64,
    /// The first signed message, the complete encoded ZAP message, hex: decode it with
    /// `quasar_wire::decode` and verify its signature with the signer's public key.
    pub first: String,
    /// The second, conflicting message, as `first`.
    pub second: String,
}

/// One registered validator of [`ValidatorList`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegisteredValidatorInfo {
    /// Its account's address (the hash of its ML-DSA-65 identity key), hex.
    pub address: String,
    /// `active`, `leaving`, `slashed` (`left` registrations are not listed).
    pub status: String,
    /// For `leaving` and `slashed`: the height from which its registration is ending.
    #[serde(default)]
    pub since: Option<u64>,
    /// The height of the block that registered it (0: the genesis).
    pub registered_at: u64,
    /// Its account's stake.
    pub stake: u64,
    /// Its BLS public key (compressed G1), hex.
    pub bls_public_key: String,
    /// Where it said it listens (`set-network-address`), `None` until it does (a genesis
    /// validator is reached at the address its peers' `node.toml` names).
    #[serde(default)]
    pub network_address: Option<String>,
    /// Its index in the validator set of [`ValidatorList::epoch`] (its signer bitmap position),
    /// `None` when it is not a member (or that set is not decided on this node). A `leaving`
    /// validator may still be in the set: sets change two epochs after staking transactions.
    #[serde(default)]
    pub set_index: Option<u32>,
}

/// `GET /validators`: the validator registry as of the node's latest executed (final) block,
/// as the node says (not proven: `GET /account/{address}` proves an account's stake).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidatorList {
    /// The height of the state it was read from.
    pub height: u64,
    /// The epoch of the block after `height`, whose set `set_index` refers to.
    #[serde(default)]
    pub epoch: u64,
    /// Every registered validator, by address.
    pub validators: Vec<RegisteredValidatorInfo>,
}

/// `GET /evidence`: equivocations the node recorded, by view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidenceList {
    /// Records stored in total.
    pub count: u64,
    /// The records asked for.
    pub evidence: Vec<EvidenceEntry>,
}

/// The answer to `POST /tx`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Submitted {
    /// 200: accepted, with the transaction hash (hex).
    Accepted(String),
    /// 400/409/413/429/500/503 (invalid, duplicate, too large, rate-limited, the node's
    /// storage failed, send again later): not accepted.
    Rejected {
        /// The HTTP status.
        status: u16,
        /// The start of the response body.
        body: String,
    },
}

/// The answer to `POST /txs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchSubmitted {
    /// 200: the batch was read; each transaction has its own outcome.
    Answered {
        /// The outcomes.
        answer: TxBatchAnswer,
        /// `Retry-After`, seconds: present when the node pushed some back (503).
        retry_after_secs: Option<u64>,
    },
    /// 400/413/429 (malformed or too large a batch, rate-limited): nothing was admitted.
    Rejected {
        /// The HTTP status.
        status: u16,
        /// The start of the response body.
        body: String,
        /// `Retry-After`, seconds (with 429).
        retry_after_secs: Option<u64>,
    },
}

/// Response bodies quoted in errors are cut to this many bytes.
pub const MAX_QUOTED_BODY: usize = 200;

/// A request that did not give the answer asked for.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The request failed: connection refused, timeout, or a body that is not the expected
    /// JSON. Its message names the cause (the HTTP client's chain of errors) and, for a
    /// connection that failed or timed out, what to check.
    #[error("{url}: {}", describe_http(source))]
    Http {
        /// The request URL.
        url: String,
        /// The HTTP client's error.
        source: reqwest::Error,
    },
    /// The server answered with an unexpected HTTP status.
    #[error("{url}: HTTP {status}: {body}")]
    Status {
        /// The request URL.
        url: String,
        /// The HTTP status code.
        status: u16,
        /// The start of the response body ([`MAX_QUOTED_BODY`]).
        body: String,
    },
    /// The node pruned what was asked for (`410 Gone`: a block of an epoch past retention).
    #[error("{url}: pruned")]
    Pruned {
        /// The URL.
        url: String,
    },
    /// The answer contradicts itself (`GET /ready` answered 200 with `ready: false`).
    #[error("{url}: {message}")]
    Inconsistent {
        /// The URL.
        url: String,
        /// What it contradicted.
        message: String,
    },
}

/// The causes of an HTTP client error, outermost first (reqwest's own message repeats the
/// URL and hides why), with a hint for a connection that failed or timed out.
fn describe_http(error: &reqwest::Error) -> String {
    let mut causes = Vec::new();
    let mut next = std::error::Error::source(error);
    while let Some(cause) = next {
        causes.push(cause.to_string());
        next = cause.source();
    }
    let what = if causes.is_empty() {
        error.to_string()
    } else {
        causes.join(": ")
    };
    let hint = if error.is_connect() {
        " (is the node running, and is this its API address? see --api)"
    } else if error.is_timeout() {
        " (no answer in time: is the node overloaded, or is the address right?)"
    } else {
        ""
    };
    format!("{what}{hint}")
}

/// An HTTP client for [`Client::with_http`]: no proxy (the API is on the operator's network),
/// `timeout` per request. Errors: [`ClientError::Http`] when the TLS-less client cannot be
/// built (the system refuses its resources).
pub fn http_client(timeout: Duration) -> Result<reqwest::Client, ClientError> {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(timeout)
        .build()
        .map_err(|source| ClientError::Http {
            url: "(building the HTTP client)".into(),
            source,
        })
}

/// A client of one node's API (or of thresholdd's `GET /metrics`, with its bearer token).
/// Cloning is cheap and shares the connection pool.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    base_url: String,
    token: Option<String>,
}

impl Client {
    /// A client of the API at `base_url` (e.g. `http://127.0.0.1:8080`, no trailing slash)
    /// through `http` ([`http_client`]).
    pub fn with_http(http: reqwest::Client, base_url: impl Into<String>) -> Client {
        Client {
            http,
            base_url: base_url.into(),
            token: None,
        }
    }

    /// The same client, sending `Authorization: Bearer <token>` (thresholdd's routes).
    pub fn with_token(self, token: impl Into<String>) -> Client {
        Client {
            token: Some(token.into()),
            ..self
        }
    }

    /// The URL of `path` (which starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// Sends `GET path`; the URL and the response, whatever its status.
    async fn get(&self, path: &str) -> Result<(String, reqwest::Response), ClientError> {
        let url = self.url(path);
        let mut request = self.http.get(&url);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        match request.send().await {
            Ok(response) => Ok((url, response)),
            Err(source) => Err(ClientError::Http { url, source }),
        }
    }

    /// GETs JSON: `Ok(None)` on 404, [`ClientError::Pruned`] on 410.
    async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
    ) -> Result<Option<T>, ClientError> {
        let (url, response) = self.get(path).await?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if status == reqwest::StatusCode::GONE {
            return Err(ClientError::Pruned { url });
        }
        if !status.is_success() {
            return Err(status_error(url, response).await);
        }
        json(url, response).await.map(Some)
    }

    /// `GET /status`. Errors: [`ClientError::Http`] (not reachable, bad JSON),
    /// [`ClientError::Status`] for any answer but 200.
    pub async fn status(&self) -> Result<Status, ClientError> {
        match self.get_json("/status").await? {
            Some(status) => Ok(status),
            None => Err(ClientError::Status {
                url: self.url("/status"),
                status: 404,
                body: String::new(),
            }),
        }
    }

    /// `GET /ready`, ready or not. Errors: [`ClientError::Http`] (not reachable, bad JSON),
    /// [`ClientError::Status`] for an answer other than 200 and 503,
    /// [`ClientError::Inconsistent`] when the status code and `ready` disagree.
    pub async fn ready(&self) -> Result<Readiness, ClientError> {
        let (url, response) = self.get("/ready").await?;
        let code = response.status();
        if code != reqwest::StatusCode::OK && code != reqwest::StatusCode::SERVICE_UNAVAILABLE {
            return Err(status_error(url, response).await);
        }
        let readiness: Readiness = json(url.clone(), response).await?;
        if readiness.ready != (code == reqwest::StatusCode::OK) {
            return Err(ClientError::Inconsistent {
                url,
                message: format!("GET /ready answered {code} with {readiness:?}"),
            });
        }
        Ok(readiness)
    }

    /// `GET /block/{height}`: the finalized block at `height`, `None` when the node has not
    /// finalized it. Errors: [`ClientError::Pruned`], [`ClientError::Http`],
    /// [`ClientError::Status`].
    pub async fn block(&self, height: u64) -> Result<Option<BlockInfo>, ClientError> {
        self.get_json(&format!("/block/{height}")).await
    }

    /// `GET /account/{address}`: account `address_hex` with its proof, `None` when the node
    /// has finalized nothing yet. Errors: [`ClientError::Pruned`], [`ClientError::Http`],
    /// [`ClientError::Status`] (an address that is not 32 bytes of hex answers 400).
    pub async fn account(&self, address_hex: &str) -> Result<Option<AccountInfo>, ClientError> {
        self.get_json(&format!("/account/{address_hex}")).await
    }

    /// `GET /epochs/{epoch}/set`: one step of an epoch-change proof ([`EpochSetInfo`]); `None`
    /// when the node has none (the chain's genesis fixes its sets, or the epoch is not decided
    /// yet). Errors: [`ClientError::Http`], [`ClientError::Status`].
    pub async fn epoch_set(&self, epoch: u64) -> Result<Option<EpochSetInfo>, ClientError> {
        self.get_json(&format!("/epochs/{epoch}/set")).await
    }

    /// `GET /validators`: the registry as the node says; `None` before it executed a block.
    /// Errors: [`ClientError::Http`], [`ClientError::Status`].
    pub async fn validators(&self) -> Result<Option<ValidatorList>, ClientError> {
        self.get_json("/validators").await
    }

    /// `GET /tx/{hash}`: transaction `hash_hex`, `None` when the node does not know it (not yet
    /// gossiped, dropped, or in a pruned block). Errors: [`ClientError::Http`],
    /// [`ClientError::Status`] (a hash that is not 32 bytes of hex answers 400).
    pub async fn tx(&self, hash_hex: &str) -> Result<Option<TxInfo>, ClientError> {
        self.get_json(&format!("/tx/{hash_hex}")).await
    }

    /// `POST /tx` with `tx`. A 4xx/5xx answer of the mempool is [`Submitted::Rejected`], not an
    /// error. Errors: [`ClientError::Http`].
    pub async fn submit_tx(&self, tx: Vec<u8>) -> Result<Submitted, ClientError> {
        let (url, response) = self.post("/tx", tx).await?;
        let status = response.status();
        if status.is_success() {
            Ok(Submitted::Accepted(
                json::<TxAccepted>(url, response).await?.hash,
            ))
        } else {
            let body = truncate(response.text().await.unwrap_or_default());
            Ok(Submitted::Rejected {
                status: status.as_u16(),
                body,
            })
        }
    }

    /// Submits a batch of signed transactions (`POST /txs`): `batch` is their ZAP `TxBatch`
    /// encoding (`quasar_wire::TxBatch`). Errors: [`ClientError::Http`] (no answer, or a 200
    /// whose body is not a [`TxBatchAnswer`]).
    pub async fn submit_txs(&self, batch: Vec<u8>) -> Result<BatchSubmitted, ClientError> {
        let (url, response) = self.post("/txs", batch).await?;
        let status = response.status();
        let retry_after_secs = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok());
        if status.is_success() {
            Ok(BatchSubmitted::Answered {
                answer: json(url, response).await?,
                retry_after_secs,
            })
        } else {
            let body = truncate(response.text().await.unwrap_or_default());
            Ok(BatchSubmitted::Rejected {
                status: status.as_u16(),
                body,
                retry_after_secs,
            })
        }
    }

    /// POSTs `body` to `path`: the URL and the response, whatever its status. Errors:
    /// [`ClientError::Http`].
    async fn post(
        &self,
        path: &str,
        body: Vec<u8>,
    ) -> Result<(String, reqwest::Response), ClientError> {
        let url = self.url(path);
        let response = self
            .http
            .post(&url)
            .body(body)
            .send()
            .await
            .map_err(|source| ClientError::Http {
                url: url.clone(),
                source,
            })?;
        Ok((url, response))
    }

    /// `GET /evidence`, at most `limit` records from view `from_view` on (the node's defaults
    /// when `None`). Errors: [`ClientError::Http`], [`ClientError::Status`].
    pub async fn evidence(
        &self,
        limit: Option<usize>,
        from_view: Option<u64>,
    ) -> Result<EvidenceList, ClientError> {
        let mut query = Vec::new();
        query.extend(limit.map(|l| format!("limit={l}")));
        query.extend(from_view.map(|v| format!("from_view={v}")));
        let path = if query.is_empty() {
            "/evidence".to_string()
        } else {
            format!("/evidence?{}", query.join("&"))
        };
        let (url, response) = self.get(&path).await?;
        if !response.status().is_success() {
            return Err(status_error(url, response).await);
        }
        json(url, response).await
    }

    /// `GET /metrics`: the Prometheus text exposition. Errors: [`ClientError::Http`],
    /// [`ClientError::Status`].
    pub async fn metrics(&self) -> Result<String, ClientError> {
        let (url, response) = self.get("/metrics").await?;
        if !response.status().is_success() {
            return Err(status_error(url, response).await);
        }
        response
            .text()
            .await
            .map_err(|source| ClientError::Http { url, source })
    }
}

/// The body of `response` as `T`. Errors: [`ClientError::Http`] for a body that is not `T`.
async fn json<T: serde::de::DeserializeOwned>(
    url: String,
    response: reqwest::Response,
) -> Result<T, ClientError> {
    response
        .json()
        .await
        .map_err(|source| ClientError::Http { url, source })
}

async fn status_error(url: String, response: reqwest::Response) -> ClientError {
    let status = response.status().as_u16();
    let body = truncate(response.text().await.unwrap_or_default());
    ClientError::Status { url, status, body }
}

/// `text` cut to [`MAX_QUOTED_BODY`] bytes (at a character boundary), with `…` when cut.
fn truncate(mut text: String) -> String {
    if text.len() > MAX_QUOTED_BODY {
        let mut end = MAX_QUOTED_BODY;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}
