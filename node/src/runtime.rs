//! The tokio runtime around the consensus core: QUIC transport, storage, signing, timers, mempool
//! and the HTTP API, for one validator process (`quasar-node run`).
//!
//! Task layout:
//! - the **core task** owns the [`Engine`] (core, signer, store); it takes verified inputs from
//!   one channel and lets the engine perform the core's actions in the engine's order (sign
//!   through the durable guard, then send; commit and flush finalized blocks before anything
//!   else sees them);
//! - the **inbound task** decodes every frame from peers (malformed ones are counted and dropped),
//!   admits gossiped transactions, serves sync requests, and hands consensus messages to a bounded
//!   pool of blocking verification jobs whose results feed the core channel;
//! - one short task per timer and per block fetch;
//! - the HTTP API ([`crate::api`]).
//!
//! A storage write failure is fatal (the process exits with an error); a bad peer message never is.

use crate::api;
use crate::application::ChainApplication;
use crate::ceremony::{Ceremony, CoronaParty, PulsarParty, RemoteParty};
use crate::config::{NodeConfig, SignerMode};
use crate::engine::{Engine, EngineError, Host, Published};
use crate::mempool::{Mempool, MempoolError, MempoolLimits, SenderKey, MAX_TX_BYTES};
use crate::metrics::{DispatcherMetrics, KeyCacheMetrics, NodeMetrics};
use crate::quasar::QuasarTracker;
use crate::quasar_service::{
    self, Contributor, Finalized, QuasarHandle, QuasarState, ServiceContext, SetContributor,
};
use crate::relay::{RelayCache, RELAY_INTERVAL, RELAY_LISTENING_INTERVAL, RELAY_VIEWS};
use crate::remote_signer::{RemoteClient, RemoteSignError, RemoteSigner, RemoteSignerTarget};
use crate::rollup_job::{RollupSet, WindowProver};
use crate::signer::{SignError, VoteKey, VoteSigner};
use crate::sync::{checkpoint_inputs, serve, unusable_checkpoint, MAX_SYNC_BLOCKS};
use prometheus_client::registry::Registry;
use quasar_app::{Address, ChainRules, Ledger, SignedTransaction, StateError, VerificationCache};
use quasar_chainspec::guard_history::{guard_owner, GuardLocation, HistoryError};
use quasar_chainspec::{
    load_keys, load_public, CheckedSet, ConfigError, DealtShares, Genesis, GenesisFile,
    GenesisValidator,
};
use quasar_consensus::epoch::ByEpoch;
use quasar_consensus::{
    BlockLimits, CoreConfig, EpochSchedule, Evidence, Input, ProposalSlot, Received, TimerKind,
    Verifier, VerifyError,
};
use quasar_crypto::accel::BatchArithmetic;
use quasar_crypto::bls_cache::PublicKeyCache;
use quasar_crypto::hash::Hash;
use quasar_lanes::cert::CertVerifier;
use quasar_p2p::{Inbound, Network, NetworkConfig, P2pMetrics, PeerInfo};
use quasar_process::now_us;
use quasar_storage::{GuardError, SigningGuard, SledStore, Store};
use quasar_wire::{
    decode, tx_hash, LegKind, Message, MessageRef, RelayRequest, SyncRequest, TxBatch,
};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, Semaphore};

/// Most transaction bytes in one block.
pub const MAX_BLOCK_BYTES: usize = 8 * 1024 * 1024;
/// Full blocks' worth of transactions (by bytes and by count) the mempool holds at most, below
/// `mempool_max_txs`: admission pushes back (`503`) at what the next few blocks can take, so a
/// transaction admitted under overload waits about this many block intervals, not the time to
/// drain `mempool_max_txs` transactions.
pub const MEMPOOL_BACKLOG_BLOCKS: usize = 4;
/// Most queued inbound messages taken at once; the votes among them are verified as one batch
/// (one randomized multi-pairing check, bisected only when some signature is bad).
const MAX_VOTE_BATCH: usize = 256;
/// Admitted transactions that may wait for the gossip batcher; beyond it, gossip is dropped
/// (the transaction stays in this node's mempool).
const GOSSIP_QUEUE: usize = 65_536;
/// Most transactions in one gossiped batch.
const GOSSIP_BATCH_TXS: usize = 512;
/// Most transaction bytes in one gossiped batch.
const GOSSIP_BATCH_BYTES: usize = 1 << 20;
/// How long the batcher waits after a batch's first transaction for more to join it.
const GOSSIP_LINGER: Duration = Duration::from_millis(5);
/// Most received transaction batches ingested by one blocking job.
const TX_INGEST_BURST: usize = 64;
/// Most recent heights whose finality time is kept for `GET /block` and `/ready` (older heights
/// report `null`): about 2.6 MB at most, whatever the epoch length.
const FINALITY_MEMORY: u64 = 1 << 16;

/// Fatal node errors.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// A configuration, key or genesis file is unusable.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The block store failed (fatal: the node must not continue without durable state).
    #[error("storage: {0}")]
    Storage(#[from] quasar_storage::StoreError),
    /// The signing guard could not be opened (refuse to run rather than risk double signing).
    #[error("signing guard: {0}")]
    Guard(#[from] quasar_storage::GuardError),
    /// The transport failed to start.
    #[error("network: {0}")]
    Network(#[from] quasar_p2p::P2pError),
    /// The consensus engine stopped on a storage failure or an inconsistent store.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// Another process holds this data directory ([`DATA_DIR_LOCK_FILE`], or sled's lock on
    /// the store). Fatal: two nodes on one signing guard could sign conflicting votes.
    #[error(
        "another quasar-node is using {} ({held}); stop it, or give this node its own data_dir: \
         two nodes on one data directory could sign conflicting votes",
        dir.display()
    )]
    DataDirInUse {
        /// The data directory.
        dir: PathBuf,
        /// Which lock is held, for the message.
        held: String,
    },
    /// This key directory's validator is in no validator set of the genesis: the key directory
    /// or the genesis is not the one meant.
    #[error(
        "the validator of {} is not in {} (neither its validator set nor a scheduled validator \
         change)",
        key_dir.display(),
        genesis.display()
    )]
    NotInGenesis {
        /// The key directory.
        key_dir: PathBuf,
        /// The genesis file.
        genesis: PathBuf,
    },
    /// This key directory's post-quantum keys are not its genesis entry's: the node would sign
    /// legs nobody can verify under the keys the chain knows.
    #[error(
        "this key directory's {field} differs from validator {validator} ({name})'s entry in \
         genesis ({detail}); use the key directory the genesis was made from"
    )]
    IdentityMismatch {
        /// The key file field that differs.
        field: &'static str,
        /// The validator's roster position.
        validator: usize,
        /// Its name in the genesis.
        name: String,
        /// How it differs.
        detail: String,
    },
    /// The signing guard file is missing but the store holds this validator's history: the
    /// guard was lost, and signing again could repeat a view.
    #[error(
        "{} is missing but {} holds this validator's history; restore the signing guard \
         (never delete it), or remove the whole data directory: the node then syncs again and \
         listens to the network before it signs",
        guard.display(),
        store.display()
    )]
    GuardMissing {
        /// The guard file.
        guard: PathBuf,
        /// The block store.
        store: PathBuf,
    },
    /// The signing guard file is damaged: what it recorded cannot be trusted, and nothing may
    /// be signed until the node has listened to the network again.
    #[error(
        "{}: signing guard file corrupt ({problem}). Never edit or reset it: move the whole \
         data directory aside and start again (the node then syncs and listens to the network \
         before it signs)",
        guard.display()
    )]
    GuardCorrupt {
        /// The guard file.
        guard: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// The signing guard is older than the store's record of this validator's signatures (a
    /// restored backup or a copy): signing with it risks equivocation.
    #[error(
        "{} is older than this validator's history: the store holds a certificate with its \
         signature at view {view}, but the guard's highest view is {guard_view}. It was \
         restored from a backup or copied; signing with it risks equivocation. Put the current \
         guard file back",
        guard.display()
    )]
    GuardBehindStore {
        /// The guard file.
        guard: PathBuf,
        /// The highest view of a stored certificate this validator signed.
        view: u64,
        /// The guard's highest view.
        guard_view: u64,
    },
    /// A `[[peers]]` entry of node.toml is not usable.
    #[error("peer {key}: {message}")]
    Peer {
        /// The peer's BLS public key as node.toml writes it.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// A file or directory the node needs could not be opened or made.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
    /// A listener could not bind (the address is taken or not this host's).
    #[error("{what} {addr}: {source}")]
    Listen {
        /// Which listener (`api_listen`, `metrics_listen`, `p2p_listen`).
        what: &'static str,
        /// The address.
        addr: std::net::SocketAddr,
        /// The failure.
        source: std::io::Error,
    },
    /// `signer = "remote"`: the daemon refused this node (its token, its keys) or could not be
    /// used.
    #[error("remote signer: {0}")]
    RemoteSigner(#[from] RemoteSignError),
    /// The rollup proving key cannot be used.
    #[error("rollup_proving_key {}: {message}", path.display())]
    RollupKey {
        /// The key file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The QUIC transport stopped on its own: the node exits so that its supervisor restarts
    /// it, rather than stay up deaf.
    #[error("p2p transport stopped: {0}")]
    TransportStopped(String),
    /// The process could not get a resource of its own (a thread, a signal handler, the
    /// certificate verification pool) or the genesis's sets do not chain; the text is for the
    /// log.
    #[error("{0}")]
    Internal(String),
}

impl NodeError {
    /// Whether the error says this node's block store is damaged (a value, a block file or an
    /// index that cannot be what the node wrote): the operator's way out is an empty data
    /// directory (docs/operations.md, "Node data directory lost or damaged").
    pub fn damaged_store(&self) -> bool {
        use quasar_storage::StoreError::Corrupt;
        matches!(
            self,
            NodeError::Storage(Corrupt(_))
                | NodeError::Engine(
                    EngineError::Storage(Corrupt(_)) | EngineError::Inconsistent(_)
                )
        )
    }
}

/// Views between the store's finalized tip and the signing guard's highest view above which
/// a start warns that the store may have lost blocks (a stall of the chain gives such a gap too).
const STORE_BEHIND_GUARD_VIEWS: u64 = 100;

/// The file in `data_dir` a running node holds an exclusive lock on, for as long as it runs
/// ([`quasar_process::lock_dir`]).
pub const DATA_DIR_LOCK_FILE: &str = "quasar-node.lock";

/// The block store's folder (sled) inside `data_dir`.
pub const STORE_DIR: &str = "db";

/// The signing guard of the validator `cfg` describes, for the `guard` commands (its genesis and
/// public key file are read; nothing is created): bound to the validator's BLS key and the
/// genesis, locked by a running node, lost if its block store exists without it. Errors:
/// [`HistoryError::Config`].
pub fn guard_location(cfg: &NodeConfig) -> Result<GuardLocation, HistoryError> {
    let genesis = GenesisFile::load(&cfg.genesis)?.check()?;
    // The public key file is enough: the guard commands never need the secret key (nor its
    // passphrase).
    let public = load_public(&cfg.key_dir)?;
    let public_key = hex::decode(&public.bls_public_key)
        .ok()
        .and_then(|bytes| quasar_crypto::bls::PublicKey::from_bytes(&bytes).ok())
        .ok_or_else(|| {
            ConfigError::Keys(format!(
                "{}: bls_public_key is not a BLS public key",
                cfg.key_dir.display()
            ))
        })?;
    Ok(GuardLocation {
        dir: cfg.data_dir.clone(),
        owner: guard_owner(&public_key, &genesis.hash),
        public_key: public_key.to_bytes().to_vec(),
        genesis_hash: Some(genesis.hash),
        lock: (cfg.data_dir.clone(), DATA_DIR_LOCK_FILE),
        store: Some(cfg.data_dir.join(STORE_DIR)),
    })
}

/// Creates `data_dir` if needed and takes its lock ([`DATA_DIR_LOCK_FILE`]), then opens the
/// block store in `data_dir/db`. Hold the returned file as long as the store is used. Errors:
/// [`NodeError::DataDirInUse`] when another process holds the lock file or sled's own lock on
/// the store; [`NodeError::Io`] naming the path when the directory or lock file cannot be
/// made; [`NodeError::Storage`] when the store does not open.
pub fn open_data_dir(data_dir: &Path) -> Result<(std::fs::File, SledStore), NodeError> {
    use quasar_process::{lock_dir, DirLockError};
    if std::fs::metadata(data_dir).is_ok_and(|meta| !meta.is_dir()) {
        return Err(NodeError::Io {
            path: data_dir.to_path_buf(),
            source: std::io::Error::other(
                "exists and is not a directory: point data_dir in node.toml at a directory",
            ),
        });
    }
    std::fs::create_dir_all(data_dir).map_err(|source| NodeError::Io {
        path: data_dir.to_path_buf(),
        source,
    })?;
    let lock = lock_dir(data_dir, DATA_DIR_LOCK_FILE).map_err(|e| match e {
        DirLockError::InUse { dir, lock_file } => NodeError::DataDirInUse {
            dir,
            held: format!("it holds {}", lock_file.display()),
        },
        DirLockError::Io { path, source } => NodeError::Io { path, source },
    })?;
    let db = data_dir.join(STORE_DIR);
    let store = SledStore::open(&db).map_err(|e| {
        if e.is_locked() {
            NodeError::DataDirInUse {
                dir: data_dir.to_path_buf(),
                held: format!("it holds the block store {}", db.display()),
            }
        } else {
            NodeError::Storage(e)
        }
    })?;
    Ok((lock, store))
}

/// State shared between the core task, the inbound task and the HTTP API.
pub struct Shared {
    /// This validator's index.
    pub validator: u32,
    /// Chain id.
    pub chain_id: u64,
    /// How the chain divides into epochs (the current one decides the height above the
    /// finalized tip).
    pub schedule: EpochSchedule,
    /// The chain's execution rules (admission checks staking actions under them).
    pub rules: ChainRules,
    /// Current view.
    pub view: AtomicU64,
    /// Finalized height.
    pub finalized_height: AtomicU64,
    /// Highest block height seen in a verified proposal.
    pub height: AtomicU64,
    /// Pending transactions.
    pub mempool: Arc<Mutex<Mempool>>,
    /// Admitted transactions waiting to be gossiped in a batch ([`gossip_transactions`]).
    pub gossip: mpsc::Sender<Vec<u8>>,
    /// The block store.
    pub store: SledStore,
    /// The transport.
    pub network: Network,
    /// Consensus metrics.
    pub metrics: NodeMetrics,
    /// Transport metrics.
    pub p2p_metrics: P2pMetrics,
    /// Everything, for `/metrics`.
    pub registry: Registry,
    /// When this node saw each recent height finalized (µs since the Unix epoch): the
    /// heights of the retained epochs, at most the last [`FINALITY_MEMORY`] of them.
    pub finalized_at: Mutex<BTreeMap<u64, u64>>,
    /// Finality times (proposal timestamp → finalize quorum seen) of the blocks finalized
    /// since the last INFO summary ([`log_summaries`]), ms; at most [`MAX_SUMMARY_SAMPLES`].
    pub recent_finality_ms: Mutex<Vec<f64>>,
    /// Quasar finality: the tracker, the Quasar tip, the legs' times and the service's input
    /// ([`crate::quasar_service`], which holds the same state).
    pub quasar: Arc<QuasarState>,
    /// Every epoch's validator set.
    pub sets: quasar_consensus::EpochSets,
    /// This validator's BLS public key (its index in an epoch's set is found by it).
    pub public_key: quasar_crypto::bls::PublicKey,
    /// The configured view timeout, milliseconds (`GET /ready` derives its limit from it).
    pub view_timeout_ms: u64,
    /// The genesis hash (the hash of block 0), for `GET /status`.
    pub genesis_hash: Hash,
    /// When the chain starts (µs since the Unix epoch; `GET /ready` says so until then).
    pub genesis_time_us: u64,
    /// Recent proposals and votes by signer, relayed to peers on request ([`crate::relay`]).
    pub relay: Mutex<RelayCache>,
    /// Signature verdicts of transactions, shared by admission and the application
    /// ([`VerificationCache`]): a transaction's signature is verified once per node.
    pub verification: Arc<VerificationCache>,
    /// How reports of equivocation are checked, as the application checks them
    /// ([`crate::application::VoteEvidence`]).
    pub evidence: Arc<dyn quasar_app::EvidenceCheck>,
    /// The application's committed state (read-only here: admission reads senders' keys and
    /// nonces, `GET /account` proves accounts).
    pub state: quasar_storage::StateStore,
}

impl Shared {
    /// Admits a client transaction ([`Shared::admit_batch`]) and hands it to the gossip batcher
    /// ([`gossip_transactions`]) so that every validator, and so any leader, gets it. A full
    /// batcher queue drops the gossip, not the transaction (counted in
    /// `quasar_consensus_tx_gossip_dropped_total`).
    pub fn submit_tx(&self, tx: Vec<u8>) -> Result<Hash, MempoolError> {
        let mut answers = self.admit_batch(vec![tx], Source::Client);
        answers.pop().unwrap_or(Err(MempoolError::Empty))
    }

    /// [`Shared::submit_tx`] for each of `txs` (`POST /txs`; [`Shared::admit_batch`]); the
    /// answers are in the order of `txs`.
    pub fn submit_txs(&self, txs: Vec<Vec<u8>>) -> Vec<Result<Hash, MempoolError>> {
        self.admit_batch(txs, Source::Client)
    }

    /// Admits `txs`, the one admission rule of client submissions and of transactions gossiped
    /// by peers: each passes [`Shared::inspect`], finds its sender's key ([`Shared::sender_key`],
    /// a key carried earlier in the batch included), has its signature verified against it
    /// ([`Shared::verify`]), and fits the mempool's limits. Inspection and verification run in
    /// parallel on the rayon pool; keys are found, and transactions enter the mempool, in the
    /// batch's order (so one sender's nonces keep theirs), as [`Shared::admit`] says for
    /// `source`.
    fn admit_batch(&self, txs: Vec<Vec<u8>>, source: Source) -> Vec<Result<Hash, MempoolError>> {
        use rayon::prelude::*;
        let inspected: Vec<_> = txs.par_iter().map(|tx| self.inspect(tx)).collect();
        let mut batch_keys = HashMap::new();
        let keyed: Vec<_> = inspected
            .into_iter()
            .map(|inspected| {
                let (signed, account) = inspected?;
                let key = self.sender_key(&signed, account, &mut batch_keys)?;
                Ok((signed, key))
            })
            .collect();
        let verified: Vec<_> = keyed
            .into_par_iter()
            .map(|keyed: Result<_, MempoolError>| {
                let (signed, (key, carried)) = keyed?;
                self.verify(&signed, &key)?;
                let sender = signed.transaction().sender;
                Ok((*signed.hash(), carried.then_some((sender, key))))
            })
            .collect();
        verified
            .into_iter()
            .zip(txs)
            .map(|(checked, tx)| self.admit(checked, tx, source))
            .collect()
    }

    /// Adds a transaction that passed admission's checks to the mempool, with the key it
    /// carries if any. A client's goes to the gossip batcher too (a full batcher queue drops
    /// the gossip, not the transaction). A refusal counts in `quasar_mempool_refused_total`, and
    /// a client's for a full mempool in `quasar_mempool_pushed_back_total` too.
    fn admit(
        &self,
        checked: Result<(Hash, Option<(Address, SenderKey)>), MempoolError>,
        tx: Vec<u8>,
        source: Source,
    ) -> Result<Hash, MempoolError> {
        let client = source == Source::Client;
        let gossip = (client && checked.is_ok()).then(|| tx.clone());
        let outcome = checked.and_then(|(hash, carried)| self.add(hash, tx, carried));
        if gossip.is_some_and(|g| outcome.is_ok() && self.gossip.try_send(g).is_err()) {
            self.metrics.tx_gossip_dropped.inc();
        }
        if let Err(e) = &outcome {
            let labels = crate::metrics::RefusalLabels {
                reason: e.reason(),
                source: if client { "client" } else { "peer" },
            };
            self.metrics.mempool_refused.get_or_create(&labels).inc();
            if client && *e == MempoolError::Full {
                self.metrics.mempool_pushed_back.inc();
            }
        }
        outcome
    }

    /// Admission's checks before the signature, all cheap: `tx` is within [`MAX_TX_BYTES`], the
    /// pool has room for it, it decodes, is for this chain, comes from an account of the
    /// finalized state whose balance covers its fee (a sender nobody funded cannot pay, so its
    /// transactions are refused before any signature is verified), and does not reuse a
    /// committed nonce (not finalized already). Returns the transaction and its sender's
    /// finalized account.
    fn inspect(&self, tx: &[u8]) -> Result<(SignedTransaction, quasar_app::Account), MempoolError> {
        let invalid = |e: quasar_app::TxError| MempoolError::Invalid(e.to_string());
        if tx.len() > MAX_TX_BYTES {
            return Err(MempoolError::TooLarge {
                len: tx.len(),
                max: MAX_TX_BYTES,
            });
        }
        // A full pool refuses before anything is decoded: pushing back costs little.
        let room = self.mempool.lock().map(|pool| pool.has_room(tx.len()));
        if !room.unwrap_or(false) {
            return Err(MempoolError::Full);
        }
        let signed = SignedTransaction::decode(tx).map_err(invalid)?;
        let body = signed.transaction();
        if body.chain_id != self.chain_id {
            return Err(invalid(quasar_app::TxError::WrongChain {
                expected: self.chain_id,
                found: body.chain_id,
            }));
        }
        // Execution only bounds an announced address; one the nodes could not dial is refused
        // here, with the rule it breaks.
        if let quasar_app::Action::SetNetworkAddress { address } = &body.action {
            address
                .parse::<quasar_p2p::PeerAddress>()
                .map_err(|e| MempoolError::Invalid(e.to_string()))?;
        }
        let account = quasar_app::committed_account(&self.state, &body.sender)
            .map_err(|e| unavailable("reading the sender's account", &e))?
            .ok_or_else(|| {
                MempoolError::Invalid(
                    "the sender has no account in the finalized state: it cannot pay a fee \
                     until a transfer to it is final"
                        .into(),
                )
            })?;
        if account.balance < body.fee {
            return Err(MempoolError::Invalid(format!(
                "the fee {} exceeds the sender's finalized balance {}",
                body.fee, account.balance
            )));
        }
        // A nonce the committed state has used is a replay: this very transaction, finalized
        // (the block index says where), or another with its nonce. A finalized transaction's
        // nonce is always used once its block's state is committed, so a fresh nonce needs no
        // look-up in the transaction index.
        if body.nonce < account.nonce {
            if let Ok(Some(height)) = self.store.tx_height(signed.hash()) {
                return Err(MempoolError::Finalized { height });
            }
            return Err(MempoolError::Invalid(format!(
                "nonce {} is used: the account's next is {}",
                body.nonce, account.nonce
            )));
        }
        Ok((signed, account))
    }

    /// The key that `signed`'s signature is verified against, and whether `signed` carries it:
    /// the key it carries (an account's first transaction; also kept in `batch_keys` for the
    /// rest of its batch when it hashes to the sender), the sender's finalized key, a key
    /// carried earlier in the batch, or one a pending transaction carries
    /// ([`Mempool::carried_key`]). Each is checked to hash to the sender when the signature is
    /// verified.
    ///
    /// Errors: [`MempoolError::UnknownKey`] when there is none: such a transaction could not
    /// be verified, so it is not admitted (made-up senders would fill the pool).
    fn sender_key(
        &self,
        signed: &SignedTransaction,
        account: quasar_app::Account,
        batch_keys: &mut HashMap<Address, SenderKey>,
    ) -> Result<(SenderKey, bool), MempoolError> {
        let body = signed.transaction();
        if let Some(key) = &body.public_key {
            let key = Arc::new(key.clone());
            // Only the sender's own key serves the rest of the batch: a forged carrier earlier
            // in it cannot get the sender's genuine transactions refused.
            if quasar_app::address_of(&key) == body.sender {
                batch_keys.entry(body.sender).or_insert_with(|| key.clone());
            }
            return Ok((key, true));
        }
        if let Some(key) = account.public_key {
            return Ok((Arc::new(key), false));
        }
        let pending = || {
            let pool = self.mempool.lock().ok()?;
            pool.carried_key(&body.sender)
        };
        let key = batch_keys.get(&body.sender).cloned().or_else(pending);
        key.map(|key| (key, false)).ok_or(MempoolError::UnknownKey)
    }

    /// Admission's checks from the signature on: `signed`'s signature verifies against `key`
    /// (through the cache the application uses), and a staking action is not refused by the
    /// committed validator registry.
    fn verify(&self, signed: &SignedTransaction, key: &SenderKey) -> Result<(), MempoolError> {
        self.verification
            .verify(signed, key)
            .map_err(|e| MempoolError::Invalid(e.to_string()))?;
        // Staking actions are refused by what the registry holds (a key another validator
        // registered, a bonded stake): check them against the committed state so the client
        // hears why, rather than see them dropped when a block is built.
        if Ledger::reads(signed).validator.is_some() {
            let checked = quasar_app::check_committed(
                &self.state,
                self.rules,
                signed,
                &self.verification,
                &*self.evidence,
            );
            match checked {
                Err(StateError::Transaction { source, .. }) if !source.may_apply_later() => {
                    return Err(MempoolError::Invalid(source.to_string()));
                }
                Err(StateError::Transaction { .. }) | Ok(()) => {}
                Err(e) => return Err(unavailable("reading the validator registry", &e)),
            }
        }
        Ok(())
    }

    /// Adds a checked transaction to the mempool, with the key it carries if any.
    fn add(
        &self,
        hash: Hash,
        tx: Vec<u8>,
        carried: Option<(Address, SenderKey)>,
    ) -> Result<Hash, MempoolError> {
        let mut pool = self.mempool.lock().map_err(|_| MempoolError::Full)?;
        pool.add_hashed(hash, tx, carried)?;
        self.metrics.mempool_size.set(pool.len() as i64);
        Ok(hash)
    }
}

/// Runs a validator until SIGINT/SIGTERM. Errors: [`NodeError`] (configuration problems at start,
/// storage failures at any time).
pub async fn run(cfg: NodeConfig) -> Result<(), NodeError> {
    // Decoded BLS keys for the life of the process (docs/architecture.md §4); the validator set built from
    // genesis is the first place the BLS lane looks, this cache the second.
    let key_cache = Arc::new(PublicKeyCache::new());
    let genesis = GenesisFile::load(&cfg.genesis)?.check_with(&key_cache)?;
    quasar_process::build_info::log_node_start(&genesis.hash, genesis.file.chain_id);
    // Connections, the store and the guard file all need descriptors: take the hard limit.
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => tracing::debug!(limit, "file descriptor limit"),
        Err(e) => tracing::warn!(error = %e, "could not raise the file descriptor limit"),
    }
    let keys = load_keys(&cfg.key_dir, &cfg.key_access()?)?;
    // Network identities are roster positions: every validator of the genesis set and of the
    // scheduled changes, once (the genesis set's members keep their genesis indices).
    let roster: Vec<GenesisValidator> = genesis.roster().into_iter().cloned().collect();
    let position = roster.iter().position(|v| {
        v.bls_public_key
            .eq_ignore_ascii_case(&keys.public.bls_public_key)
    });
    // A validator outside the genesis joins a chain whose sets come from its registry: it
    // follows the chain, and signs once the registry puts it into a set (crate::peers). Its
    // network identity is the first position above the roster.
    let me = match position {
        Some(me) => {
            check_identity(&roster, genesis.magnetar_set(), me, &keys.public)?;
            me as u32
        }
        None if genesis.sets_from_registry() => {
            tracing::info!(
                "this validator is not in the genesis: it follows the chain, and signs from the \
             first epoch whose set the registry gives it (register-validator, then \
             set-network-address)"
            );
            roster.len() as u32
        }
        None => {
            return Err(NodeError::NotInGenesis {
                key_dir: cfg.key_dir.clone(),
                genesis: cfg.genesis.clone(),
            })
        }
    };
    // Every other file the node reads, before anything is created on disk, so that a wrong
    // path leaves no half-made data directory behind: the token file of signer = "remote", and
    // the rollup proving key (read in the background later).
    let remote_target = match (cfg.signer, &cfg.remote_signer) {
        (SignerMode::Remote, Some(remote)) => Some(remote.target()?),
        _ => None,
    };
    if let Some(path) = &cfg.rollup_proving_key {
        std::fs::File::open(path).map_err(|e| NodeError::RollupKey {
            path: path.clone(),
            message: e.to_string(),
        })?;
    }
    // A data directory that exists is locked first, so that a second node on it is told so; a
    // new one is made only after the listeners are bound, so that a taken port leaves nothing
    // on disk. The QUIC socket is bound by the transport later; trying its address now (and
    // letting it go) catches a taken port the same way.
    let existing = if cfg.data_dir.exists() {
        Some(open_data_dir(&cfg.data_dir)?)
    } else {
        None
    };
    let api_listener = tokio::net::TcpListener::bind(cfg.api_listen)
        .await
        .map_err(|source| NodeError::Listen {
            what: "api_listen",
            addr: cfg.api_listen,
            source,
        })?;
    let metrics_listener = match cfg.metrics_listen {
        Some(addr) => Some(
            tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|source| NodeError::Listen {
                    what: "metrics_listen",
                    addr,
                    source,
                })?,
        ),
        None => None,
    };
    std::net::UdpSocket::bind(cfg.p2p_listen).map_err(|source| NodeError::Listen {
        what: "p2p_listen",
        addr: cfg.p2p_listen,
        source,
    })?;
    let (_data_dir_lock, store) = match existing {
        Some(opened) => opened,
        None => open_data_dir(&cfg.data_dir)?,
    };
    // The guard is what stops this validator from signing twice. A store with history but no
    // guard means the guard was lost: refuse to run rather than sign again in old views.
    let guard_path = cfg.data_dir.join(quasar_storage::GUARD_FILE);
    if !guard_path.exists() && !store.is_empty()? {
        return Err(NodeError::GuardMissing {
            guard: guard_path,
            store: cfg.data_dir.join(STORE_DIR),
        });
    }
    // The guard file is bound to this validator's key and this chain: another validator's or
    // another chain's guard is refused rather than adopted.
    let public_key = keys.bls.public_key();
    let owner = guard_owner(&public_key, &genesis.hash);
    // signer = "remote": votes and ceremony rounds go to thresholdd, whose own guard follows the
    // rule below: a new one signs nothing until this node fences it. A daemon whose guard is not
    // known to be fenced (new, or not reachable yet) makes this node listen too.
    let remote = match &remote_target {
        Some(target) => Some(connect_remote_signer(target, public_key)?),
        None => None,
    };
    let daemon_unfenced = remote
        .as_ref()
        .is_some_and(|(_, fenced)| *fenced != Some(true));
    // A new guard on a chain that is already running (a late first start, or a lost data
    // directory), or one whose earlier start had not fenced yet: nothing here tells which views
    // this key signed in before; the engine listens first and fences past the view the network
    // was in (`Engine::listen_before_signing`). The marker outlives a restart mid-listening.
    let unfenced_path = cfg.data_dir.join(quasar_storage::UNFENCED_FILE);
    let started_us = now_us();
    let must_listen = (!guard_path.exists() || unfenced_path.exists() || daemon_unfenced)
        && started_us > genesis.file.genesis_time_us;
    let to_genesis_us = genesis.file.genesis_time_us.saturating_sub(started_us);
    if to_genesis_us > 0 {
        tracing::info!(
            starts_in_s = to_genesis_us.div_ceil(1_000_000),
            genesis_time_us = genesis.file.genesis_time_us,
            "waiting for the genesis time: no block before it (GET /ready says so meanwhile)"
        );
    }
    if must_listen {
        quasar_storage::mark_unfenced(&cfg.data_dir).map_err(|source| NodeError::Io {
            path: unfenced_path.clone(),
            source,
        })?;
    }
    let guard = SigningGuard::open(&cfg.data_dir, &owner).map_err(|e| match e {
        GuardError::Corrupt(problem) => NodeError::GuardCorrupt {
            guard: guard_path.clone(),
            problem,
        },
        other => NodeError::Guard(other),
    })?;
    let guard_view = guard.highest_view();
    let chain_id = genesis.file.chain_id;
    let limits = BlockLimits {
        max_txs: cfg.max_block_txs,
        max_bytes: MAX_BLOCK_BYTES,
    };
    // The mempool hashed each transaction it holds: proposals take their leaves from it.
    let mempool = Arc::new(Mutex::new(Mempool::new(MempoolLimits {
        max_txs: cfg
            .mempool_max_txs
            .min(MEMPOOL_BACKLOG_BLOCKS.saturating_mul(cfg.max_block_txs)),
        max_bytes: cfg
            .mempool_max_txs
            .saturating_mul(1024)
            .clamp(MAX_TX_BYTES, MEMPOOL_BACKLOG_BLOCKS * MAX_BLOCK_BYTES),
        max_tx_bytes: MAX_TX_BYTES,
        lifetime: Duration::from_secs(cfg.mempool_tx_lifetime_secs),
    })));
    let verifier = Verifier::with_sets(
        genesis.epoch_sets(),
        genesis.hash,
        chain_id,
        genesis.schedule(),
        limits,
    )
    .with_known_txs(Arc::new(crate::mempool::PoolHashes(mempool.clone())));
    let core_cfg = CoreConfig {
        chain_id,
        epoch: 0,
        schedule: genesis.schedule(),
        genesis: genesis.hash,
        me: Some(me),
        block_time_us: cfg.block_time_ms * 1000,
        view_timeout_us: cfg.view_timeout_ms() * 1000,
        retry_us: (cfg.block_time_ms * 1000).clamp(100_000, 1_000_000),
        max_future_views: 1_000,
        max_clock_drift_us: 5_000_000,
    };
    let vote_key = match remote {
        Some((remote, _)) => {
            if daemon_unfenced && !must_listen {
                // Nothing to listen for (the chain starts now): the daemon's new guard is
                // fenced where this node's guard is.
                remote.fence_before_signing(guard.fenced_view());
            }
            VoteKey::Remote(remote)
        }
        None => VoteKey::Local(keys.bls),
    };
    let signer = VoteSigner::new(vote_key, me, chain_id, 0, genesis.domain(), guard);
    // Transaction signatures: the NTTs of a verification (six forward, six inverse) on the
    // SIMD CPU backend, directly: a batch that small is not worth a trip to a device.
    let cache = Arc::new(
        VerificationCache::new(chain_id, cfg.mempool_max_txs.saturating_mul(2).max(1024))
            .with_arithmetic(Arc::new(quasar_gpu::SimdCpuBackend::new())),
    );
    let evidence: Arc<dyn quasar_app::EvidenceCheck> =
        Arc::new(crate::application::VoteEvidence(verifier.clone()));
    let state = crate::application::open_state(store.state()?, &genesis, evidence.clone())
        .map_err(|e| NodeError::Internal(format!("application state: {e}")))?;
    let mut app = ChainApplication::new(state, cache.clone(), MAX_BLOCK_BYTES);
    if !cfg.archive {
        app = app.prune_with(genesis.schedule());
    }
    // Decided sets' certificate policies wait here until the Quasar tracker exists.
    let policy_sink = crate::application::PolicySink::default();
    if genesis.sets_from_registry() {
        let decider = crate::application::SetDecider::new(
            Arc::new(genesis.clone()),
            verifier.sets().clone(),
            policy_sink.clone(),
        );
        app = app
            .decide_sets_with(decider)
            .map_err(|e| NodeError::Internal(format!("validator sets: {e}")))?;
    }
    let (mut engine, recovery) = Engine::open(
        store.clone(),
        app,
        signer,
        core_cfg,
        &verifier,
        genesis.file.genesis_time_us,
    )?;
    if cfg.archive {
        engine.keep_history();
    }
    if must_listen {
        let listen_us = cfg.view_timeout_ms() * 1000;
        tracing::warn!(
            guard = %guard_path.display(),
            listen_ms = listen_us / 1000,
            daemon_guard_unfenced = daemon_unfenced,
            "new signing guard on a chain that is already running (a late first start, or a lost \
             data directory, here or in thresholdd): signing nothing while listening to the \
             network, then until the network moves past the view it is in, so that no view this \
             key may have signed in before is signed again"
        );
        engine.listen_before_signing(now_us(), listen_us);
    }
    let tip = recovery.tip;
    // A new guard fences past the store's certificates too; an older, non-empty one was restored.
    if let (Some(view), false) = (recovery.signed_above_guard, must_listen) {
        return Err(NodeError::GuardBehindStore {
            guard: guard_path,
            view,
            guard_view,
        });
    }
    tracing::info!(
        finalized_height = tip.height,
        epoch = recovery.epoch,
        "resuming from the finalized tip"
    );
    if guard_view > tip.view.saturating_add(STORE_BEHIND_GUARD_VIEWS) {
        tracing::warn!(
            finalized_height = tip.height,
            tip_view = tip.view,
            guard_view,
            "the store's finalized tip is far below the last view this validator signed in: \
             either the chain stalled since, or the store lost its newest blocks (a damaged \
             database, which sled's recovery cuts at the first bad record); the node syncs \
             what it lacks from its peers, and its signing guard keeps it from signing again \
             in those views"
        );
    }
    if recovery.restored > 0 || recovery.dropped > 0 {
        tracing::info!(
            restored = recovery.restored,
            dropped = recovery.dropped,
            "certificates above the finalized tip (dropped: no longer verify)"
        );
    }

    let mut peers = Vec::new();
    for p in &cfg.peers {
        let Some((index, entry)) = roster
            .iter()
            .enumerate()
            .find(|(_, v)| v.bls_public_key.eq_ignore_ascii_case(&p.bls_public_key))
        else {
            return Err(NodeError::Peer {
                key: p.bls_public_key.clone(),
                message: "not in genesis".into(),
            });
        };
        if index as u32 == me {
            continue;
        }
        // Checked by the genesis check: hex of a valid certificate.
        let cert_der = hex::decode(&entry.tls_certificate).map_err(|e| NodeError::Peer {
            key: p.bls_public_key.clone(),
            message: format!("tls_certificate: {e}"),
        })?;
        peers.push(PeerInfo {
            index: index as u32,
            cert_der,
            address: p.address.clone(),
        });
    }

    let mut registry = Registry::default();
    quasar_process::build_info::register(&mut registry, "quasar");
    let metrics = NodeMetrics::new(&mut registry);
    KeyCacheMetrics::register(key_cache, &mut registry);
    let p2p_metrics = P2pMetrics::new();
    p2p_metrics.register(registry.sub_registry_with_prefix("quasar"));
    let book = genesis.sets_from_registry().then(|| {
        crate::peers::PeerBook::new(
            peers.clone(),
            roster
                .iter()
                .filter_map(|v| hex::decode(&v.tls_certificate).ok())
                .collect(),
            keys.tls.cert_der.clone(),
            roster.len() as u32 + 1,
        )
    });
    let (network, inbound) = Network::start(
        NetworkConfig {
            listen: cfg.p2p_listen,
            identity: keys.tls,
            my_index: me,
            peers,
            outbound_queue: 8192,
            inbound_queue: 8192,
            transaction_queue: NetworkConfig::DEFAULT_TRANSACTION_QUEUE,
        },
        p2p_metrics.clone(),
    )
    .await?;

    let arithmetic = quasar_gpu::best_available();
    if let Some(dispatcher) = &arithmetic.dispatcher {
        DispatcherMetrics::register(dispatcher.clone(), &mut registry);
    }
    let arithmetic = arithmetic.backend;
    let rollup = rollup_prover(&cfg, &genesis, &arithmetic)?;
    let mut policies = genesis.cert_policies().into_iter().map(|(epoch, policy)| {
        crate::application::warn_if_unavailable(epoch, &policy);
        (epoch, policy.map(Arc::new))
    });
    let cert_verifier = Arc::new(
        CertVerifier::with_backend(0, arithmetic)
            .map_err(|e| NodeError::Internal(format!("certificate pool: {e}")))?,
    );
    let genesis_policy = policies.next().map_or_else(
        || Err("the genesis has no certificate policy".to_string()),
        |(_, policy)| policy,
    );
    let mut tracker = QuasarTracker::new(
        genesis_policy,
        genesis.schedule(),
        genesis.profile,
        genesis.file.bundle_size,
        cert_verifier,
    );
    for (epoch, policy) in policies {
        tracker
            .change_policy_at(epoch, policy)
            .map_err(|e| NodeError::Internal(format!("certificate policies: {e}")))?;
    }
    let quasar_height = store.quasar_tip()?.unwrap_or(0);
    let (quasar_input, quasar_rx) = QuasarHandle::channel();
    let quasar = Arc::new(QuasarState::new(tracker, quasar_height, quasar_input));
    policy_sink.attach(quasar.clone());
    let (gossip_tx, gossip_rx) = mpsc::channel(GOSSIP_QUEUE);
    let shared = Arc::new(Shared {
        validator: me,
        chain_id,
        schedule: genesis.schedule(),
        rules: crate::application::chain_rules(&genesis),
        view: AtomicU64::new(tip.view),
        finalized_height: AtomicU64::new(tip.height),
        height: AtomicU64::new(tip.height),
        mempool,
        gossip: gossip_tx,
        store: store.clone(),
        network: network.clone(),
        metrics: metrics.clone(),
        p2p_metrics,
        registry,
        finalized_at: Mutex::new(BTreeMap::new()),
        recent_finality_ms: Mutex::new(Vec::new()),
        quasar: quasar.clone(),
        sets: verifier.sets().clone(),
        public_key,
        view_timeout_ms: cfg.view_timeout_ms(),
        genesis_hash: genesis.hash,
        genesis_time_us: genesis.file.genesis_time_us,
        relay: Mutex::new(RelayCache::new()),
        verification: cache,
        evidence,
        state: store.state()?,
    });
    shared.metrics.finalized_height.set(tip.height as i64);
    shared
        .metrics
        .quasar_finalized_height
        .set(quasar_height as i64);
    quasar_service::spawn(
        ServiceContext {
            chain_id,
            schedule: genesis.schedule(),
            store,
            network: network.clone(),
            metrics,
            quasar,
        },
        Contributor {
            index: me,
            slhdsa: Some(keys.slhdsa),
            mldsa: keys.mldsa,
            sets: set_contributors(
                &genesis,
                &roster,
                me,
                keys.dealt,
                rollup.as_ref(),
                remote_target.as_ref(),
            )?,
            rollup,
        },
        quasar_rx,
    )
    .map_err(|e| NodeError::Internal(format!("quasar finality thread: {e}")))?;

    tracing::info!(validator = me, p2p = %cfg.p2p_listen, api = %cfg.api_listen, metrics = %cfg.metrics_listen.map_or_else(|| "on the API".to_string(), |a| a.to_string()), height = tip.height, "node started");
    tokio::spawn(api::serve(
        api_listener,
        shared.clone(),
        metrics_listener.is_none(),
        cfg.api,
    ));
    if let Some(listener) = metrics_listener {
        tokio::spawn(api::serve_metrics(listener, shared.clone(), cfg.api));
    }
    tokio::spawn(log_summaries(shared.clone()));
    if let Some(book) = book {
        tokio::spawn(crate::peers::follow_registry(
            network.clone(),
            shared.state.clone(),
            book,
        ));
    }

    let (input_tx, input_rx) = mpsc::channel::<Input>(16_384);
    tokio::spawn(inbound_loop(
        inbound.consensus,
        shared.clone(),
        verifier.clone(),
        input_tx.clone(),
    ));
    tokio::spawn(transaction_loop(inbound.transactions, shared.clone()));
    tokio::spawn(gossip_transactions(gossip_rx, network.clone()));

    let mut driver = Driver {
        engine,
        host: RuntimeHost {
            shared: shared.clone(),
            verifier,
            input_tx,
            max_block_txs: cfg.max_block_txs,
            span: tracing::Span::none(),
        },
        unfenced: must_listen.then(|| cfg.data_dir.clone()),
        restoring: None,
    };
    // Report the view consensus will resume at while it waits for peers.
    let resume = driver.engine.signer_mut().highest_view().max(tip.view + 1);
    shared.view.store(resume, Ordering::Relaxed);
    wait_for_quorum_of_peers(&shared, &genesis.validators, Duration::from_secs(10)).await;
    let result = driver.run(input_rx).await;
    shared.network.shutdown().await;
    let _ = shared.store.flush();
    result
}

/// Waits (at most `limit`) until this node is connected to enough peers that together with itself
/// they hold a quorum, so the first views are not spent on connection setup. Consensus is safe
/// either way; this only avoids needless timeouts at start.
async fn wait_for_quorum_of_peers(
    shared: &Shared,
    validators: &quasar_lanes::ValidatorSet,
    limit: Duration,
) {
    let deadline = tokio::time::Instant::now() + limit;
    let n = validators.len();
    let min_stake = validators
        .validators()
        .iter()
        .map(|v| v.stake)
        .min()
        .unwrap_or(0);
    loop {
        let peers = shared.network.connected_peers();
        // Conservative: assume the connected peers are the smallest stakes.
        let stake = (peers as u64 + 1).saturating_mul(min_stake);
        if peers + 1 >= n || validators.is_quorum(stake) || tokio::time::Instant::now() >= deadline
        {
            tracing::info!(peers, "starting consensus");
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn inbound_loop(
    mut inbound: mpsc::Receiver<Inbound>,
    shared: Arc<Shared>,
    verifier: Verifier,
    input_tx: mpsc::Sender<Input>,
) {
    let pool = VerificationPool {
        permits: Arc::new(Semaphore::new(
            4 * std::thread::available_parallelism().map_or(2, |n| n.get()),
        )),
        shared: shared.clone(),
        verifier,
        input_tx,
    };
    // Each burst is what is already queued: its votes are verified together.
    while let Some(burst) = next_burst(&mut inbound, MAX_VOTE_BATCH).await {
        let mut gossip = Vec::new();
        let mut senders = Vec::new();
        for event in burst {
            match event {
                Inbound::Gossip { message, from } => {
                    gossip.push(message);
                    senders.push(from);
                }
                Inbound::Request { message, reply, .. } => {
                    let shared = shared.clone();
                    tokio::task::spawn_blocking(move || {
                        let response = match decode(&message) {
                            Ok(MessageRef::SyncRequest(req)) => {
                                let state = shared.store.state().ok();
                                let set_proof = |boundary| {
                                    crate::sync::epoch_set_proof(
                                        state.as_ref()?,
                                        &shared.rules,
                                        boundary,
                                    )
                                };
                                Message::SyncResponse(serve(
                                    &req.to_owned(),
                                    &shared.store,
                                    &shared.schedule,
                                    &set_proof,
                                ))
                                .encode()
                            }
                            Ok(MessageRef::StateRequest(req)) => match shared.store.state() {
                                Ok(state) => Message::StateChunk(crate::state_sync::serve(
                                    &req.to_owned(),
                                    &state,
                                ))
                                .encode(),
                                Err(error) => {
                                    tracing::error!(%error, "serving a state chunk: opening the state store failed");
                                    return;
                                }
                            },
                            Ok(MessageRef::RelayRequest(req)) => {
                                let response = match shared.relay.lock() {
                                    Ok(relay) => relay.serve(&req.to_owned(), &shared.store),
                                    Err(_) => return,
                                };
                                Message::SyncResponse(response).encode()
                            }
                            _ => {
                                shared.p2p_metrics.record_malformed();
                                return;
                            }
                        };
                        if let Ok(bytes) = response {
                            let _ = reply.send(bytes);
                        }
                    });
                }
            }
        }
        if gossip.is_empty() {
            continue;
        }
        let job = move |shared: &Shared, verifier: &Verifier| {
            ingest_gossip(shared, verifier, &gossip, &senders)
        };
        if !pool.run(job).await {
            return;
        }
    }
}

/// Gossips admitted transactions in batches on the transaction path: waits for a first one,
/// lets [`GOSSIP_LINGER`] pass for more, and broadcasts up to [`GOSSIP_BATCH_TXS`] /
/// [`GOSSIP_BATCH_BYTES`] of them as one `TxBatch` (what is left starts the next batch).
async fn gossip_transactions(mut queue: mpsc::Receiver<Vec<u8>>, network: Network) {
    let mut carried: Option<Vec<u8>> = None;
    loop {
        let first = match carried.take() {
            Some(tx) => tx,
            None => match queue.recv().await {
                Some(tx) => tx,
                None => return,
            },
        };
        tokio::time::sleep(GOSSIP_LINGER).await;
        let mut bytes = first.len();
        let mut txs = vec![first];
        while txs.len() < GOSSIP_BATCH_TXS {
            let Ok(tx) = queue.try_recv() else { break };
            if bytes.saturating_add(tx.len()) > GOSSIP_BATCH_BYTES {
                carried = Some(tx);
                break;
            }
            bytes = bytes.saturating_add(tx.len());
            txs.push(tx);
        }
        if let Ok(message) = Message::TxBatch(TxBatch { txs }).encode() {
            network.broadcast_transactions(Arc::new(message));
        }
    }
}

/// Waits for the next inbound message and takes, with it, whatever is already queued behind
/// it, up to `max` in all; `None` once the channel is closed.
async fn next_burst(inbound: &mut mpsc::Receiver<Inbound>, max: usize) -> Option<Vec<Inbound>> {
    let mut burst = vec![inbound.recv().await?];
    while burst.len() < max {
        match inbound.try_recv() {
            Ok(event) => burst.push(event),
            Err(_) => break,
        }
    }
    Some(burst)
}

/// [`MempoolError::Unavailable`] for a storage failure met while `doing` admission's reads,
/// logged: the node's fault, not the sender's.
fn unavailable(doing: &str, e: &StateError) -> MempoolError {
    tracing::error!(error = %e, "admission failed {doing}");
    MempoolError::Unavailable(format!("{doing}: {e}"))
}

/// Where a transaction came from: a client of the API, or a peer's gossip.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    Client,
    Peer,
}

/// Takes transaction gossip off the transaction path into the mempool, one blocking job at a
/// time, apart from consensus traffic: when it falls behind, the transport drops transaction
/// batches (counted in `quasar_p2p_inbound_dropped_total`) and consensus is not slowed.
async fn transaction_loop(mut inbound: mpsc::Receiver<Inbound>, shared: Arc<Shared>) {
    while let Some(burst) = next_burst(&mut inbound, TX_INGEST_BURST).await {
        let shared = shared.clone();
        let job = tokio::task::spawn_blocking(move || {
            for event in burst {
                if let Inbound::Gossip { message, .. } = event {
                    ingest_transactions(&shared, &message);
                }
            }
        });
        if job.await.is_err() {
            return;
        }
    }
}

/// Adds the transactions of one gossiped `TxBatch` to the mempool (those not finalized
/// already); anything else on the transaction path is counted as malformed.
fn ingest_transactions(shared: &Shared, message: &[u8]) {
    let Ok(MessageRef::TxBatch(batch)) = decode(message) else {
        shared.p2p_metrics.record_malformed();
        return;
    };
    // A duplicate, finalized or over-the-limit transaction is simply not added.
    let _ = shared.admit_batch(batch.txs().map(<[u8]>::to_vec).collect(), Source::Peer);
}

/// The bounded pool of blocking verification jobs whose results feed the core.
struct VerificationPool {
    /// Bounds the jobs in flight; waiting for a permit applies backpressure to peers.
    permits: Arc<Semaphore>,
    shared: Arc<Shared>,
    verifier: Verifier,
    input_tx: mpsc::Sender<Input>,
}

impl VerificationPool {
    /// Runs `job` on the blocking pool once a permit is free and sends the inputs it returns to
    /// the core, in order. Returns `false` when the pool is closed (the node is stopping).
    async fn run(
        &self,
        job: impl FnOnce(&Shared, &Verifier) -> Vec<Input> + Send + 'static,
    ) -> bool {
        let Ok(permit) = self.permits.clone().acquire_owned().await else {
            return false;
        };
        let shared = self.shared.clone();
        let verifier = self.verifier.clone();
        let input_tx = self.input_tx.clone();
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            for input in job(&shared, &verifier) {
                if input_tx.blocking_send(input).is_err() {
                    return;
                }
            }
        });
        true
    }
}

/// Gossip from the peers `senders` (one per message) through ingress
/// ([`Verifier::ingress`]: decoded once, the votes verified as one batch): returns the core
/// inputs in order; lane messages go to the Quasar leg service; malformed and invalid messages
/// are counted and dropped, as is anything else (transactions belong on the transaction path,
/// sync and relay traffic on request streams).
fn ingest_gossip(
    shared: &Shared,
    verifier: &Verifier,
    messages: &[Vec<u8>],
    senders: &[u32],
) -> Vec<Input> {
    let mut inputs = Vec::new();
    for (received, &from) in verifier.ingress(messages).into_iter().zip(senders) {
        match received {
            Received::Other(MessageRef::Lane(lane)) => {
                shared.quasar.input.send(quasar_service::Input::Lane {
                    from,
                    message: lane.to_owned(),
                });
            }
            other => inputs.extend(core_input(shared, other)),
        }
    }
    inputs
}

/// The core input `received` carries, if any; a malformed or invalid message is counted.
fn core_input(shared: &Shared, received: Received<'_>) -> Option<Input> {
    match received {
        Received::Input(input) => Some(input),
        Received::Malformed(e) => {
            tracing::debug!(error = %e, "malformed message");
            shared.p2p_metrics.record_malformed();
            None
        }
        Received::Invalid(VerifyError::SetNotKnown(epoch)) => Some(Input::LaterEpoch(epoch)),
        Received::Invalid(e) => {
            tracing::debug!(error = %e, "invalid message");
            shared.metrics.invalid_messages.inc();
            None
        }
        Received::Other(_) => None,
    }
}

/// The core task: the engine and the tokio side of its host.
struct Driver {
    engine: Engine<SledStore, ChainApplication>,
    host: RuntimeHost,
    /// The data directory while its guard is unfenced ([`quasar_storage::UNFENCED_FILE`]):
    /// the marker goes once the engine has fenced and stopped listening.
    unfenced: Option<PathBuf>,
    /// Where a state restore in progress ([`crate::state_sync`]) reports its end.
    restoring: Option<mpsc::Receiver<Result<u64, String>>>,
}

impl Driver {
    async fn run(mut self, mut input_rx: mpsc::Receiver<Input>) -> Result<(), NodeError> {
        self.engine.start(&mut self.host)?;
        let mut terminate = signal(tokio::signal::unix::SignalKind::terminate())?;
        let mut next_relay = tokio::time::Instant::now();
        loop {
            if self.restoring.is_none() && self.engine.app().awaiting_state() {
                self.restoring = Some(self.restore_state());
            }
            tokio::select! {
                restored = recv_restored(&mut self.restoring) => {
                    // Without a result (the task died) the next turn starts another restore.
                    self.restoring = None;
                    if let Some(restored) = restored {
                        let height = restored.map_err(|e| NodeError::Internal(
                            format!("restoring the application state: {e}")))?;
                        self.engine.state_restored(height)?;
                    }
                }
                input = input_rx.recv() => {
                    let Some(input) = input else { return Ok(()) };
                    if let Input::Proposal(p) = &input {
                        self.host.shared.height.fetch_max(p.proposal().header.height, Ordering::Relaxed);
                    }
                    if let Ok(mut relay) = self.host.shared.relay.lock() {
                        relay.record(&input, self.engine.core().view());
                    }
                    let span = self.host.span.clone();
                    let _entered = span.enter();
                    self.engine.handle(&mut self.host, input)?;
                    if !self.engine.listening() {
                        if let Some(dir) = self.unfenced.take() {
                            // Left behind, it only makes the next start listen again.
                            if let Err(e) = quasar_storage::clear_unfenced(&dir) {
                                tracing::warn!(dir = %dir.display(), error = %e,
                                    "could not remove the unfenced-guard marker");
                            }
                        }
                    }
                }
                () = tokio::time::sleep_until(next_relay) => {
                    let listening = self.engine.listening();
                    next_relay = tokio::time::Instant::now()
                        + if listening { RELAY_LISTENING_INTERVAL } else { RELAY_INTERVAL };
                    if let Some(signer) = self.engine.signer_mut().index() {
                        let request = RelayRequest {
                            epoch: self.engine.signer_mut().epoch(),
                            from_view: self.engine.core().view().saturating_sub(RELAY_VIEWS),
                            signer,
                        };
                        ask_for_relays(&self.host, request, listening);
                    }
                }
                _ = tokio::signal::ctrl_c() => return Ok(()),
                _ = terminate.recv() => return Ok(()),
                cause = self.host.shared.network.stopped() => {
                    // The transport died on its own: exit so the supervisor restarts the node,
                    // rather than stay up looking healthy while deaf.
                    return Err(NodeError::TransportStopped(format!("{cause:?}")));
                }
            }
        }
    }
}

impl Driver {
    /// Starts restoring the application state from peers ([`crate::state_sync::restore`]) on
    /// the blocking pool; the receiver gets its result.
    fn restore_state(&self) -> mpsc::Receiver<Result<u64, String>> {
        let (tx, rx) = mpsc::channel(1);
        let network = self.host.shared.network.clone();
        let store = self.host.shared.store.clone();
        let runtime = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            let _ = tx.blocking_send(crate::state_sync::restore(&runtime, &network, &store));
        });
        rx
    }
}

/// The end of the state restore in progress, if any (never, without one).
async fn recv_restored(
    restoring: &mut Option<mpsc::Receiver<Result<u64, String>>>,
) -> Option<Result<u64, String>> {
    match restoring {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// The engine's [`Host`] in a validator process: QUIC broadcast, tokio timers, block sync, the
/// mempool, metrics and the state the HTTP API reads.
struct RuntimeHost {
    shared: Arc<Shared>,
    verifier: Verifier,
    input_tx: mpsc::Sender<Input>,
    max_block_txs: usize,
    /// The current view's span (every log line of the view carries it).
    span: tracing::Span,
}

impl Host for RuntimeHost {
    fn all_peers_connected(&self) -> bool {
        self.shared.network.all_peers_connected()
    }
    fn now_us(&self) -> u64 {
        now_us()
    }

    fn broadcast(&mut self, _message: Message, bytes: Vec<u8>) {
        self.shared.network.broadcast(Arc::new(bytes));
    }

    fn set_timer(&mut self, view: u64, kind: TimerKind, at_us: u64) {
        let tx = self.input_tx.clone();
        let delay = Duration::from_micros(at_us.saturating_sub(now_us()));
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = tx.send(Input::Timer { view, kind }).await;
        });
    }

    fn fetch(&mut self, block: Hash, from_height: u64) {
        tracing::debug!(block = %hex::encode(&block[..8]), from_height, "fetching");
        fetch(
            self.shared.clone(),
            self.verifier.clone(),
            self.input_tx.clone(),
            block,
            from_height,
        );
    }

    fn block_txs(&mut self, slot: &ProposalSlot) -> Vec<Vec<u8>> {
        let exclude: HashSet<Hash> = slot.exclude.iter().copied().collect();
        match self.shared.mempool.lock() {
            Ok(pool) => pool.select(&exclude, self.max_block_txs, MAX_BLOCK_BYTES),
            Err(_) => Vec::new(),
        }
    }

    fn discard(&mut self, txs: &[Vec<u8>]) {
        let hashes: Vec<Hash> = txs.iter().map(|tx| tx_hash(tx)).collect();
        if let Ok(mut pool) = self.shared.mempool.lock() {
            pool.remove_finalized(&hashes);
            self.shared.metrics.mempool_size.set(pool.len() as i64);
        }
    }

    fn finalized(&mut self, block: &Published) {
        let height = block.proposal.header.height;
        if let Ok(mut pool) = self.shared.mempool.lock() {
            pool.remove_finalized(&block.tx_hashes);
            let expired = pool.evict_expired(Instant::now());
            self.shared.metrics.mempool_expired.inc_by(expired as u64);
            self.shared.metrics.mempool_size.set(pool.len() as i64);
        }
        if let Ok(mut at) = self.shared.finalized_at.lock() {
            record_finality(&mut at, &self.shared.schedule, height, block.seen_us);
        }
        self.shared
            .finalized_height
            .store(height, Ordering::Relaxed);
        self.shared
            .quasar
            .input
            .send(quasar_service::Input::Finalized(Finalized {
                height,
                view: block.proposal.header.view,
                hash: block.hash,
                certificate: block.certificate.clone(),
                seen_us: block.seen_us,
            }));
        self.shared.height.fetch_max(height, Ordering::Relaxed);
        let m = &self.shared.metrics;
        m.blocks_finalized.inc();
        m.txs_finalized.inc_by(block.tx_hashes.len() as u64);
        m.finalized_height.set(height as i64);
        let finality_s = block
            .seen_us
            .saturating_sub(block.proposal.header.timestamp_us) as f64
            / 1e6;
        m.finality_seconds.observe(finality_s);
        if let Ok(mut recent) = self.shared.recent_finality_ms.lock() {
            if recent.len() < MAX_SUMMARY_SAMPLES {
                recent.push(finality_s * 1e3);
            }
        }
        tracing::debug!(height, hash = %hex::encode(&block.hash[..8]), txs = block.tx_hashes.len(), "finalized");
    }

    fn evidence(&mut self, e: &Evidence, stored: Result<bool, String>) {
        self.shared.metrics.equivocations.inc();
        tracing::warn!(kind = ?e.kind, signer = e.signer, view = e.view, "equivocation detected");
        if let Err(error) = stored {
            self.shared.metrics.evidence_store_failures.inc();
            tracing::error!(%error, kind = ?e.kind, signer = e.signer, view = e.view, "could not store equivocation evidence");
        }
    }

    fn entered_view(&mut self, view: u64, leader: u32) {
        self.span = tracing::info_span!(parent: None, "view", view, leader);
        self.shared.view.store(view, Ordering::Relaxed);
        self.shared.metrics.view.set(view as i64);
    }

    fn signed(&mut self) {
        self.shared.metrics.votes_signed.inc();
    }

    fn refused(&mut self, view: u64, error: &SignError) {
        match error {
            SignError::Remote(_) => {
                self.shared.metrics.remote_signer_errors.inc();
                tracing::warn!(view, %error, "not signed");
            }
            SignError::Guard(GuardError::Conflict {
                before_restart: true,
                ..
            }) => {
                self.shared.metrics.guard_restart_refusals.inc();
                tracing::info!(
                    view,
                    %error,
                    "not signed: this validator already voted otherwise in this view before it \
                     restarted (its own record, not a second signer)"
                );
            }
            _ => {
                self.shared.metrics.guard_refusals.inc();
                tracing::warn!(view, %error, "signing guard refused to sign");
            }
        }
    }
}

/// How often a validator logs its INFO summary line; per-block and per-vote lines are DEBUG.
pub const SUMMARY_INTERVAL: Duration = Duration::from_secs(10);
/// Most finality samples kept for one summary (blocks beyond it in one interval are counted,
/// not sampled).
pub const MAX_SUMMARY_SAMPLES: usize = 4096;

/// Logs one INFO line every [`SUMMARY_INTERVAL`]: the finalized height and the blocks
/// finalized since the last line, their median finality, the view, connected peers, the
/// mempool, and the Quasar-finalized height. A stalled chain still logs (with 0 blocks).
async fn log_summaries(shared: Arc<Shared>) {
    let mut ticker = tokio::time::interval(SUMMARY_INTERVAL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    let mut last_height = shared.finalized_height.load(Ordering::Relaxed);
    loop {
        ticker.tick().await;
        let height = shared.finalized_height.load(Ordering::Relaxed);
        let mut samples = shared
            .recent_finality_ms
            .lock()
            .map(|mut recent| std::mem::take(&mut *recent))
            .unwrap_or_default();
        samples.sort_by(f64::total_cmp);
        let finality_p50_ms = samples.get(samples.len() / 2).map(|ms| ms.round() as u64);
        tracing::info!(
            finalized_height = height,
            blocks = height.saturating_sub(last_height),
            finality_p50_ms,
            view = shared.view.load(Ordering::Relaxed),
            peers = shared.network.connected_peers(),
            mempool = shared.mempool.lock().map(|p| p.len()).unwrap_or(0),
            quasar_finalized_height = shared.quasar.height.load(Ordering::Relaxed),
            "summary"
        );
        last_height = height;
    }
}

/// Asks a random peer for a missing block and the finalized blocks after our tip; feeds what
/// comes back through verification into the core.
fn fetch(
    shared: Arc<Shared>,
    verifier: Verifier,
    input_tx: mpsc::Sender<Input>,
    block: Hash,
    from_height: u64,
) {
    let peers = shared.network.peer_indices();
    tokio::spawn(async move {
        let request = Message::SyncRequest(SyncRequest {
            from_height,
            max_blocks: MAX_SYNC_BLOCKS,
            block,
        });
        let Ok(bytes) = request.encode() else { return };
        let first = rand::random::<usize>() % peers.len().max(1);
        for k in 0..peers.len() {
            let peer = peers[(first + k) % peers.len()];
            let reply = match shared
                .network
                .request(peer, bytes.clone(), Duration::from_secs(3))
                .await
            {
                Ok(reply) => reply,
                Err(e) => {
                    tracing::debug!(peer, error = %e, "sync request failed");
                    continue;
                }
            };
            tracing::debug!(peer, from_height, bytes = reply.len(), "sync reply");
            let shared2 = shared.clone();
            let verifier2 = verifier.clone();
            let (inputs, quasar_certs) = tokio::task::spawn_blocking(move || {
                let Ok(MessageRef::SyncResponse(resp)) = decode(&reply) else {
                    shared2.p2p_metrics.record_malformed();
                    return (Vec::new(), Vec::new());
                };
                let mut quasar_certs = Vec::new();
                let mut inputs = Vec::new();
                let mut set_proof = None;
                let items: Vec<&[u8]> = resp.items().collect();
                for (item, received) in items.iter().zip(verifier2.ingress(&items)) {
                    match received {
                        Received::Other(MessageRef::QuasarCert(cert)) => {
                            quasar_certs.push(cert.to_owned())
                        }
                        Received::Other(MessageRef::EpochSetProof(_)) => {
                            set_proof = Some(item.to_vec());
                        }
                        other => inputs.extend(core_input(&shared2, other)),
                    }
                }
                let inputs = checkpoint_inputs(inputs, from_height, &shared2.schedule, set_proof);
                if unusable_checkpoint(&inputs, &shared2.rules, peer).is_some() {
                    // The core cannot use it; another peer may still hold the blocks.
                    return (Vec::new(), Vec::new());
                }
                (inputs, quasar_certs)
            })
            .await
            .unwrap_or_default();
            let useful = !inputs.is_empty();
            for input in inputs {
                if input_tx.send(input).await.is_err() {
                    return;
                }
            }
            // After the blocks: the service holds legs of bundles it has not closed yet.
            for certificate in quasar_certs {
                shared
                    .quasar
                    .input
                    .send(quasar_service::Input::Certificate {
                        from: peer,
                        certificate,
                    });
            }
            if useful {
                return;
            }
        }
    });
}

/// Asks peers for what they hold signed with this validator's key ([`crate::relay`]): every
/// peer while `listening` with a new signing guard, one random peer otherwise; what comes back
/// goes through verification to the engine, which judges it against the signing guard.
fn ask_for_relays(host: &RuntimeHost, request: RelayRequest, listening: bool) {
    let shared = host.shared.clone();
    let verifier = host.verifier.clone();
    let input_tx = host.input_tx.clone();
    let Ok(bytes) = Message::RelayRequest(request.clone()).encode() else {
        return;
    };
    let mut peers = shared.network.peer_indices();
    if !listening && !peers.is_empty() {
        let pick = peers[rand::random::<usize>() % peers.len()];
        peers = vec![pick];
    }
    for peer in peers {
        let (shared, verifier, input_tx, bytes, request) = (
            shared.clone(),
            verifier.clone(),
            input_tx.clone(),
            bytes.clone(),
            request.clone(),
        );
        tokio::spawn(async move {
            let reply = match shared
                .network
                .request(peer, bytes, Duration::from_secs(3))
                .await
            {
                Ok(reply) => reply,
                Err(e) => {
                    tracing::debug!(peer, error = %e, "relay request failed");
                    return;
                }
            };
            let inputs = tokio::task::spawn_blocking(move || {
                let Ok(MessageRef::SyncResponse(response)) = decode(&reply) else {
                    shared.p2p_metrics.record_malformed();
                    return Vec::new();
                };
                let items = RelayCache::relevant(&request, response.items());
                verifier
                    .ingress(&items)
                    .into_iter()
                    .filter_map(|received| core_input(&shared, received))
                    .collect::<Vec<_>>()
            })
            .await
            .unwrap_or_default();
            for input in inputs {
                if input_tx.send(input).await.is_err() {
                    return;
                }
            }
        });
    }
}

fn signal(kind: tokio::signal::unix::SignalKind) -> Result<tokio::signal::unix::Signal, NodeError> {
    tokio::signal::unix::signal(kind)
        .map_err(|e| NodeError::Internal(format!("signal handler: {e}")))
}

/// The remote signer of `signer = "remote"`, checked once ([`RemoteSigner::check`]), with
/// whether its guard is fenced (`None`: not known, the daemon is not reachable yet): a daemon
/// that refuses the token or holds no vote key for this validator stops the node (a
/// configuration error); one that is not reachable yet is logged, and each vote asks again.
/// Errors: [`NodeError::RemoteSigner`] for a refused token, a missing key, or a reply that is
/// not thresholdd's.
fn connect_remote_signer(
    target: &RemoteSignerTarget,
    public_key: quasar_crypto::bls::PublicKey,
) -> Result<(RemoteSigner, Option<bool>), NodeError> {
    let url = target.url.to_string();
    let signer = RemoteSigner::new(target.clone(), public_key)?;
    let fenced = match signer.check() {
        Ok(fenced) => {
            tracing::info!(%url, daemon_guard_fenced = fenced, "votes are signed by thresholdd");
            Some(fenced)
        }
        Err(error @ (RemoteSignError::Unreachable { .. } | RemoteSignError::TimedOut { .. })) => {
            tracing::warn!(
                %error,
                "thresholdd is not reachable yet: votes are not signed until it is"
            );
            None
        }
        Err(error) => return Err(NodeError::RemoteSigner(error)),
    };
    Ok((signer, fenced))
}

/// Refuses a key directory whose post-quantum identity keys differ from its genesis entry
/// (entry `me`, found by its BLS key), or whose Magnetar key is of another SLH-DSA parameter set
/// than the genesis's `magnetar_set` (both sets have 48-byte keys, so equal bytes are not
/// enough): the node would sign rollup and Magnetar legs that nobody can verify under the keys
/// the chain knows. Errors: [`NodeError::IdentityMismatch`] naming the field that differs.
fn check_identity(
    validators: &[quasar_chainspec::GenesisValidator],
    magnetar_set: quasar_crypto::magnetar::ParameterSet,
    me: usize,
    keys: &quasar_chainspec::PublicKeyFile,
) -> Result<(), NodeError> {
    let entry = validators
        .get(me)
        .ok_or_else(|| NodeError::Internal("genesis entry out of range".into()))?;
    for (field, ours, theirs) in [
        (
            "mldsa_public_key",
            &keys.mldsa_public_key,
            &entry.mldsa_public_key,
        ),
        (
            "slhdsa_public_key",
            &keys.slhdsa_public_key,
            &entry.slhdsa_public_key,
        ),
    ] {
        if !ours.eq_ignore_ascii_case(theirs) {
            return Err(NodeError::IdentityMismatch {
                field,
                validator: me,
                name: entry.name.clone(),
                detail: "another key".into(),
            });
        }
    }
    if keys.slhdsa_parameter_set != magnetar_set {
        return Err(NodeError::IdentityMismatch {
            field: "slhdsa_parameter_set",
            validator: me,
            name: entry.name.clone(),
            detail: format!(
                "{:?} where the genesis magnetar_parameter_set is {:?}: its Magnetar key is of \
                 another SLH-DSA parameter set than the chain's",
                quasar_chainspec::magnetar_set_name(keys.slhdsa_parameter_set),
                quasar_chainspec::magnetar_set_name(magnetar_set)
            ),
        });
    }
    Ok(())
}

/// This node's part in every validator set's legs ([`SetContributor`]): for each set of the
/// genesis, the members' roster positions, the set's Magnetar keys, its Corona and Pulsar
/// ceremonies ([`corona_ceremony`], [`pulsar_ceremony`], with this node's shares of that set
/// from `dealt`) and, when `rollup` serves the set, the set as the rollup proves for it. `me`
/// is this node's roster position and `roster` the roster; with `remote` (`signer = "remote"`)
/// this node's rounds run in that thresholdd. Errors: an ML-DSA-65 key the rollup cannot
/// expand.
fn set_contributors(
    genesis: &Genesis,
    roster: &[GenesisValidator],
    me: u32,
    mut dealt: BTreeMap<u64, DealtShares>,
    rollup: Option<&WindowProver>,
    remote: Option<&RemoteSignerTarget>,
) -> Result<ByEpoch<SetContributor>, NodeError> {
    let mut contributors: Option<ByEpoch<SetContributor>> = None;
    let sets = genesis.sets();
    let schedule = genesis.schedule();
    // Where each set's epochs end: before the next set's first epoch.
    let last_heights: Vec<u64> = sets
        .iter()
        .skip(1)
        .map(|(_, next)| schedule.last_height(next.first_epoch.saturating_sub(1)))
        .chain(std::iter::once(u64::MAX))
        .collect();
    for ((file, set), last_height) in sets.into_iter().zip(last_heights) {
        let members: Vec<u32> = file
            .iter()
            .filter_map(|v| {
                roster
                    .iter()
                    .position(|r| r.bls_public_key.eq_ignore_ascii_case(&v.bls_public_key))
            })
            .map(|p| p as u32)
            .collect();
        let index = members.iter().position(|&m| m == me);
        let shares = dealt.remove(&set.first_epoch).unwrap_or_default();
        if index.is_none() && (shares.corona.is_some() || shares.pulsar.is_some()) {
            tracing::warn!(
                first_epoch = set.first_epoch,
                "the key file holds shares of a validator set that does not include this \
                 validator: not used"
            );
        }
        let rollup_set = match (&set.keys.rollup, rollup) {
            (Some(key), Some(prover)) if genesis.profile.legs().contains(&LegKind::Groth16) => {
                let candidate = RollupSet {
                    validators: set.rollup_validators(file)?.into(),
                    key: key.clone(),
                };
                if prover.serves(&candidate) {
                    Some(candidate)
                } else {
                    tracing::warn!(
                        first_epoch = set.first_epoch,
                        "rollup_proving_key is of another setup or set size than this validator \
                         set's rollup_verifying_key: not proving its windows"
                    );
                    None
                }
            }
            _ => None,
        };
        let contributor = SetContributor {
            corona: corona_ceremony(genesis, &set, &members, index, shares.corona, remote)
                .map(|c| c.until(last_height)),
            pulsar: pulsar_ceremony(genesis, &set, &members, index, shares.pulsar, remote)
                .map(|c| c.until(last_height)),
            members,
            validators: Arc::new(set.validators.clone()),
            slhdsa_keys: set.slhdsa_public_keys.clone(),
            rollup: rollup_set,
        };
        match contributors.as_mut() {
            None => contributors = Some(ByEpoch::new(contributor)),
            Some(by_epoch) => by_epoch
                .change_at(set.first_epoch, contributor)
                .map_err(|e| NodeError::Internal(format!("validator sets: {e}")))?,
        }
    }
    for epoch in dealt.keys() {
        tracing::warn!(
            epoch,
            "the key file holds shares of a validator set that the genesis does not schedule at \
             this epoch: not used"
        );
    }
    contributors.ok_or_else(|| NodeError::Internal("the genesis has no validator set".into()))
}

/// The Corona ceremonies of the validator set `set` (its validators played by the roster
/// positions `members`), when the profile has a Corona leg and the set a Corona group key. This
/// node, validator `index` of the set (`None`: not a member), signs when `share` is its party's
/// share of the set's key with the dealt threshold; otherwise (or without a share) it does not
/// sign, says why, and still collects the rounds and combines the legs. With `remote`
/// (`signer = "remote"`) a member's rounds run in that thresholdd, which must hold its share
/// (`thresholdd keys import-validator`), and `share` is not used.
fn corona_ceremony(
    genesis: &Genesis,
    set: &CheckedSet,
    members: &[u32],
    index: Option<usize>,
    share: Option<quasar_crypto::corona::scheme::KeyShare>,
    remote: Option<&RemoteSignerTarget>,
) -> Option<Ceremony<CoronaParty>> {
    let group = set.keys.corona.clone()?;
    if !genesis.profile.legs().contains(&LegKind::Corona) {
        return None;
    }
    let first_epoch = set.first_epoch;
    let n = set.validators.len();
    let t = quasar_chainspec::dealt_threshold(n);
    let party = match (remote, index) {
        (Some(target), Some(me)) => {
            // The share lives in thresholdd; one in the key file is not used.
            match remote_party(target, me, &group.to_bytes(), "Corona", first_epoch) {
                Some(remote) => CoronaParty::remote(group, t, n, remote),
                None => CoronaParty::new(group, t, n, None),
            }
        }
        _ => {
            let share = match (share, index) {
                (_, None) => None,
                (None, Some(_)) => {
                    tracing::warn!(
                first_epoch,
                "no corona_share for this validator set in the key file: this node combines its \
                 Corona legs but does not sign"
            );
                    None
                }
                (Some(s), _) if s.group_key() != &group => {
                    tracing::error!(
                    first_epoch,
                    "corona_share is a share of another Corona key than this validator set's: not \
                 signing"
                );
                    None
                }
                (Some(s), _) if (s.threshold(), s.parties()) != (t, n) => {
                    tracing::error!(
                        first_epoch,
                        "corona_share is {}-of-{}, the validator set needs {t}-of-{n}: not signing",
                        s.threshold(),
                        s.parties()
                    );
                    None
                }
                (Some(s), Some(me)) if usize::from(s.index()) != me => {
                    tracing::error!(
                first_epoch,
                "corona_share is party {}'s share, this is validator {me} of the set: not signing",
                s.index()
            );
                    None
                }
                (Some(s), Some(me)) => {
                    tracing::info!(
                        first_epoch,
                        "Corona key share loaded: party {me}, {t}-of-{n}"
                    );
                    Some(s)
                }
            };
            CoronaParty::new(group, t, n, share)
        }
    };
    let ceremony = Ceremony::new(
        party,
        genesis.file.chain_id,
        first_epoch,
        genesis.file.bundle_size,
    )
    .with_members(members.to_vec());
    match ceremony {
        Ok(ceremony) => Some(ceremony),
        Err(reason) => {
            tracing::error!(first_epoch, %reason, "Corona key does not fit the set: not signing");
            None
        }
    }
}

/// Party `party`'s rounds of the `scheme` key `public_key` through the thresholdd at `target`
/// (`signer = "remote"`), or `None` (logged) when its client cannot start.
fn remote_party(
    target: &RemoteSignerTarget,
    party: usize,
    public_key: &[u8],
    scheme: &str,
    first_epoch: u64,
) -> Option<RemoteParty> {
    let Ok(index) = u16::try_from(party) else {
        tracing::error!(
            first_epoch,
            party,
            "{scheme} party index out of range: not signing"
        );
        return None;
    };
    match RemoteClient::new(target.clone()) {
        Ok(client) => {
            tracing::info!(
                first_epoch,
                party,
                "{scheme} rounds run in thresholdd, which holds this party's share"
            );
            Some(RemoteParty::new(client, index, public_key))
        }
        Err(error) => {
            tracing::error!(first_epoch, %error, "{scheme}: no thresholdd client: not signing");
            None
        }
    }
}

/// The Pulsar ceremonies of the validator set `set` (its validators played by the roster
/// positions `members`) this node runs: when the profile has a Pulsar leg, the set a Pulsar key,
/// this node (validator `index` of the set) is a member of the set's Pulsar committee, and
/// `keys` is the set's Pulsar key (the rounds need the full group key) with this node's party
/// share; otherwise the node does not take part (it takes the Pulsar legs the committee
/// gossips) and says why. With `remote` (`signer = "remote"`) its rounds run in that
/// thresholdd, which must hold its share (`thresholdd keys import-validator`); the key file's
/// group key is still needed (to check and combine the rounds), its share is not used.
fn pulsar_ceremony(
    genesis: &Genesis,
    set: &CheckedSet,
    members: &[u32],
    index: Option<usize>,
    keys: Option<(
        quasar_crypto::pulsar::GroupKey,
        quasar_crypto::pulsar::KeyShare,
    )>,
    remote: Option<&RemoteSignerTarget>,
) -> Option<Ceremony<PulsarParty>> {
    let expected = set.keys.pulsar.as_ref()?;
    if !genesis.profile.legs().contains(&LegKind::Pulsar) {
        return None;
    }
    let first_epoch = set.first_epoch;
    let committee = &set.keys.pulsar_committee;
    let Some(me) = index else {
        tracing::info!(
            first_epoch,
            "not a member of this validator set: its Pulsar legs come from its committee's gossip"
        );
        return None;
    };
    let Some(party) = committee.iter().position(|&v| v as usize == me) else {
        tracing::info!(
            first_epoch,
            "not a member of the validator set's Pulsar committee: Pulsar legs come from its \
             gossip"
        );
        return None;
    };
    let Some((group, share)) = keys else {
        tracing::warn!(
            first_epoch,
            "no pulsar_share and pulsar_group for this validator set in the key file: this node \
             does not take part in Pulsar signing"
        );
        return None;
    };
    let n = committee.len();
    let t = quasar_chainspec::dealt_threshold(n);
    let params = group.params();
    if group.public_key_bytes() != expected.as_bytes() {
        tracing::error!(
            first_epoch,
            "pulsar_group is not the validator set's Pulsar key: not signing"
        );
        return None;
    }
    if (params.threshold, params.parties) != (t, n) {
        tracing::error!(
            first_epoch,
            "pulsar_group is {}-of-{}, the set's Pulsar committee needs {t}-of-{n}: not signing",
            params.threshold,
            params.parties
        );
        return None;
    }
    if usize::from(share.party()) != party {
        tracing::error!(
            first_epoch,
            "pulsar_share is party {}'s share, this validator is party {party}: not signing",
            share.party()
        );
        return None;
    }
    tracing::info!(
        first_epoch,
        "Pulsar key share loaded: party {party}, {t}-of-{n}"
    );
    let players: Vec<u32> = committee
        .iter()
        .filter_map(|&v| members.get(v as usize).copied())
        .collect();
    let party = match remote {
        Some(target) => {
            match remote_party(
                target,
                party,
                group.public_key_bytes(),
                "Pulsar",
                first_epoch,
            ) {
                Some(remote) => PulsarParty::remote(group, remote),
                None => PulsarParty::new(group, None),
            }
        }
        None => PulsarParty::new(group, Some(share)),
    };
    let ceremony = Ceremony::new(
        party,
        genesis.file.chain_id,
        first_epoch,
        genesis.file.bundle_size,
    )
    .with_members(players);
    match ceremony {
        Ok(ceremony) => Some(ceremony),
        Err(reason) => {
            tracing::error!(first_epoch, %reason, "Pulsar committee does not fit the key: not signing");
            None
        }
    }
}

/// The rollup prover of a validator configured with `rollup_proving_key`, when the profile has
/// a Groth16 leg and a validator set of the genesis a rollup verifying key (otherwise the key is
/// not used, and the node says so). The key is checked against the first such set; it proves
/// the windows of every set it serves ([`set_contributors`]). Errors: a proving key that cannot
/// be read or is for another validator set shape (the key's own verifying key is compared with
/// the set's once it has loaded, in the background).
fn rollup_prover(
    cfg: &NodeConfig,
    genesis: &Genesis,
    arithmetic: &Arc<dyn BatchArithmetic>,
) -> Result<Option<WindowProver>, NodeError> {
    let Some(path) = &cfg.rollup_proving_key else {
        return Ok(None);
    };
    let sets = genesis.sets();
    let first = sets
        .iter()
        .find_map(|(file, set)| Some((*file, set, set.keys.rollup.as_ref()?)));
    let (file, set, key) = match first {
        Some(found) if genesis.profile.legs().contains(&LegKind::Groth16) => found,
        _ => {
            tracing::warn!(
                profile = %genesis.profile,
                "rollup_proving_key is set, but the genesis profile has no Groth16 leg or no \
                 rollup_verifying_key: not proving"
            );
            return Ok(None);
        }
    };
    let rollup_set = RollupSet {
        validators: set.rollup_validators(file)?.into(),
        key: key.clone(),
    };
    let prover = WindowProver::start(path, &rollup_set, Arc::clone(arithmetic)).map_err(|e| {
        NodeError::RollupKey {
            path: path.clone(),
            message: e.to_string(),
        }
    })?;
    tracing::info!(path = %path.display(), "loading the rollup proving key");
    Ok(Some(prover))
}

/// Records that `height` was seen final at `seen_us` and drops the heights below the retained
/// epochs and below the last [`FINALITY_MEMORY`] heights (from the lowest up, so heights below
/// a checkpoint sync's gap leave nothing behind).
pub fn record_finality(
    at: &mut BTreeMap<u64, u64>,
    schedule: &EpochSchedule,
    height: u64,
    seen_us: u64,
) {
    at.insert(height, seen_us);
    let floor = schedule
        .retained_from(schedule.epoch_of(height))
        .max(height.saturating_sub(FINALITY_MEMORY - 1));
    while at.first_key_value().is_some_and(|(h, _)| *h < floor) {
        at.pop_first();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quasar_chainspec::{GenesisValidator, PublicKeyFile};
    use quasar_crypto::magnetar::ParameterSet;

    fn public_key_file(slhdsa_parameter_set: ParameterSet) -> PublicKeyFile {
        PublicKeyFile {
            name: "v1".into(),
            bls_public_key: "aa".into(),
            proof_of_possession: "bb".into(),
            mldsa_public_key: "cc".into(),
            slhdsa_public_key: "dd".into(),
            slhdsa_parameter_set,
            tls_certificate: "ee".into(),
        }
    }

    fn genesis_entry(mldsa: &str, slhdsa: &str) -> GenesisValidator {
        GenesisValidator {
            name: "v1".into(),
            bls_public_key: "AA".into(),
            proof_of_possession: "bb".into(),
            mldsa_public_key: mldsa.into(),
            slhdsa_public_key: slhdsa.into(),
            tls_certificate: "ee".into(),
            stake: 1,
        }
    }

    #[test]
    fn a_key_directory_whose_pq_keys_differ_from_its_genesis_entry_is_refused() {
        let keys = public_key_file(ParameterSet::Shake192f);
        let f = ParameterSet::Shake192f;
        assert!(check_identity(&[genesis_entry("CC", "dd")], f, 0, &keys).is_ok());
        for (genesis, field) in [
            (genesis_entry("c0", "dd"), "mldsa_public_key"),
            (genesis_entry("cc", "d0"), "slhdsa_public_key"),
        ] {
            let error = check_identity(&[genesis], f, 0, &keys)
                .unwrap_err()
                .to_string();
            assert!(error.contains(field) && error.contains("v1"), "{error}");
        }
        assert!(check_identity(&[], f, 0, &keys).is_err());
    }

    /// SHAKE-192f and 192s keys are both 48 bytes: a key directory whose public key bytes match
    /// its genesis entry but whose set is the other one would sign Magnetar legs the chain
    /// decodes under its own set and never verifies. Refused, naming both fields, either way.
    #[test]
    fn a_magnetar_key_of_the_other_parameter_set_than_the_genesis_is_refused() {
        let entry = [genesis_entry("cc", "dd")];
        let (f, s) = (ParameterSet::Shake192f, ParameterSet::Shake192s);
        assert!(check_identity(&entry, s, 0, &public_key_file(s)).is_ok());
        for (genesis_set, key_set) in [(f, s), (s, f)] {
            let error = check_identity(&entry, genesis_set, 0, &public_key_file(key_set))
                .unwrap_err()
                .to_string();
            assert!(
                error.contains("slhdsa_parameter_set")
                    && error.contains("magnetar_parameter_set")
                    && error.contains(quasar_chainspec::magnetar_set_name(key_set)),
                "{error}"
            );
        }
    }

    #[test]
    fn only_a_damaged_store_is_called_one() {
        use quasar_storage::StoreError;
        let corrupt = || StoreError::Corrupt("block file … is missing".into());
        assert!(NodeError::Storage(corrupt()).damaged_store());
        assert!(NodeError::Engine(EngineError::Storage(corrupt())).damaged_store());
        assert!(
            NodeError::Engine(EngineError::Inconsistent("height 3 missing".into())).damaged_store()
        );
        assert!(!NodeError::Storage(StoreError::Files("disk full".into())).damaged_store());
        let out_of_order = StoreError::OutOfOrder {
            expected: 2,
            got: 3,
        };
        assert!(!NodeError::Engine(EngineError::Storage(out_of_order)).damaged_store());
    }

    #[test]
    fn finality_times_are_pruned_with_the_epochs_and_bounded_without_them() {
        let mut at = BTreeMap::new();
        for height in 1..=3 * FINALITY_MEMORY {
            record_finality(&mut at, &EpochSchedule::SINGLE, height, height);
        }
        assert_eq!(at.len() as u64, FINALITY_MEMORY);
        assert_eq!(
            at.first_key_value(),
            Some((&(2 * FINALITY_MEMORY + 1), &(2 * FINALITY_MEMORY + 1)))
        );
        // Epochs of 10 blocks: the heights of the last RETAINED_EPOCHS epochs stay.
        let epochs = EpochSchedule::new(10);
        let mut at = BTreeMap::new();
        for height in 1..=1_000 {
            record_finality(&mut at, &epochs, height, height);
        }
        let retained = quasar_consensus::epoch::RETAINED_EPOCHS * 10;
        assert_eq!(at.len() as u64, retained);
        assert_eq!(
            at.first_key_value().map(|(h, _)| *h),
            Some(1_000 - retained + 1)
        );
        // A checkpoint sync jumps far ahead: nothing below the new window is left.
        record_finality(&mut at, &epochs, 1_000_000, 7);
        assert_eq!(at.into_iter().collect::<Vec<_>>(), vec![(1_000_000, 7)]);
    }
}
