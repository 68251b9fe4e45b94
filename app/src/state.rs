//! Authenticated state: the accounts in a Jellyfish Merkle tree, one version per block, and
//! the execution of a block on top of it.
//!
//! # The tree
//!
//! The accounts live in a Jellyfish Merkle tree (the `jmt` crate: a sparse Merkle tree over
//! 256-bit keys with 16-ary internal nodes, from Diem's storage design; Gao et al., "Jellyfish
//! Merkle Tree", 2021) hashed with SHA3-256 (FIPS 202). An account is two entries: its leaf,
//! at `tagged_hash("QUASAR-STATE-ACCOUNT-v1", [address])`, holds [`AccountLeaf::to_bytes`]
//! (26 bytes, rewritten by every transaction that touches it), and its ML-DSA-65 public key,
//! at `tagged_hash("QUASAR-STATE-KEY-v1", [address])` (1,952 bytes, written once, by the
//! account's first transaction). Each block's changes go into the tree as one batch, so every
//! node on the paths it touches is hashed once per block, not once per changed key. Version
//! `h` of the tree is the state after block `h`; version 0 is the genesis allocation. Its root,
//! the **state root**, is what a block header will carry and what [`AccountProof`] proves against.
//! The validator registry's entries ([`crate::registry`]) live in the same tree.
//! The tree's nodes and values are stored by [`quasar_storage::StateStore`] in the node's sled
//! database.
//!
//! # Executing blocks that are not final yet
//!
//! Consensus votes on blocks before they are final, and a vote on block `h` will check the state
//! root it claims, so a block is executed when it is proposed or verified, on top of its
//! not-yet-final ancestors. [`State::execute`] takes those ancestors (each an [`Executed`] block,
//! oldest first, the first one directly above the committed version) and returns the block's
//! own [`Executed`]: its root, the accounts it changed and the tree nodes it adds, all in memory.
//! Nothing is written until the block is final: [`State::commit`] then writes exactly those
//! bytes, so a block is executed once. Two blocks proposed at one height are two `Executed`
//! values; the one that is not finalized is dropped.
//!
//! A transaction in a block that does not apply (bad signature, wrong nonce, overdraft, …)
//! makes the whole block invalid ([`StateError::Transaction`]); a proposer only includes what
//! applies ([`State::propose`]).
//!
//! # Pruning
//!
//! [`State::prune`] deletes the nodes that no version from a given one on uses; the node calls
//! it as the epochs pass, keeping the versions of the blocks it still stores.
//!
//! # Snapshots
//!
//! A node without the state of the finalized chain (it took a checkpoint past blocks its peers
//! pruned) restores one version from its peers: [`crate::snapshot`].
//!
//! # Not built yet
//!
//! Pruning of superseded values.

use std::collections::BTreeMap;

use jmt::storage::{LeafNode, Node, NodeBatch, NodeKey, TreeReader};
use jmt::{JellyfishMerkleTree, KeyHash, OwnedValue, RootHash, Version};
use quasar_crypto::hash::{tagged_hash, Hash};
use quasar_crypto::mldsa;
use quasar_storage::{StateBatch, StateStore, StoreError};

use crate::ledger::{
    Account, AccountDecodeError, AccountLeaf, ExecError, GenesisValidator, Ledger,
};
use crate::registry::{
    directory_key, epoch_set_key, select_validators, validator_key, ChainRules, Directory,
    EpochSet, EvidenceCheck, NetworkRoster, NoEvidence, RegisteredValidator, RegistryDecodeError,
    ValidatorRecord, MAX_SET_VALIDATORS,
};
use crate::tx::{Address, SignedTransaction, TxError};
use crate::verify_cache::VerificationCache;

/// The tree's hash function: SHA3-256 (FIPS 202).
pub(crate) type TreeHasher = sha3::Sha3_256;
/// Hash tag of an account leaf's place in the tree.
const ACCOUNT_KEY_TAG: &str = "QUASAR-STATE-ACCOUNT-v1";
/// Hash tag of the place of an account's public key in the tree.
const PUBLIC_KEY_TAG: &str = "QUASAR-STATE-KEY-v1";

/// The tree key of the account leaf at `address`.
pub fn account_key(address: &Address) -> Hash {
    tagged_hash(ACCOUNT_KEY_TAG, &[address])
}

/// The tree key of the public key of the account at `address`.
pub fn public_key_key(address: &Address) -> Hash {
    tagged_hash(PUBLIC_KEY_TAG, &[address])
}

/// Why a block could not be executed or state could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The store failed (fatal to a node, as every storage error).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The tree could not be read or updated: a node it needs is missing or damaged (fatal).
    #[error("state tree (fatal): {0}")]
    Tree(String),
    /// An account in the store does not decode (fatal).
    #[error("account {address} in the state store is damaged (fatal): {source}")]
    Corrupt {
        /// The account's address, hex.
        address: String,
        /// Why its bytes do not decode.
        source: AccountDecodeError,
    },
    /// A transaction of the block does not decode.
    #[error("transaction {index} of block {height} does not decode: {source}")]
    Decode {
        /// The block's height.
        height: u64,
        /// The transaction's position in the block.
        index: usize,
        /// Why.
        source: TxError,
    },
    /// A transaction of the block does not apply: the block is invalid.
    #[error("transaction {index} of block {height} does not apply: {source}")]
    Transaction {
        /// The block's height.
        height: u64,
        /// The transaction's position in the block.
        index: usize,
        /// Why.
        source: ExecError,
    },
    /// A block at another height than the one after its ancestors (or after the committed
    /// version), or a commit of a block whose parent is not the committed version.
    #[error("block {got} does not follow state version {expected}")]
    OutOfOrder {
        /// The height that follows.
        expected: u64,
        /// The height offered.
        got: u64,
    },
    /// A validator registry entry in the store does not decode (fatal).
    #[error("validator registry entry {what} in the state store is damaged (fatal): {source}")]
    CorruptRegistry {
        /// The entry: a record's address, a claim's key or the directory, hex.
        what: String,
        /// Why its bytes do not decode.
        source: RegistryDecodeError,
    },
    /// The genesis allocation does not fit in `u64` balances, or its validators repeat a key.
    #[error("the genesis state is refused: {0}")]
    Genesis(ExecError),
}

pub(crate) fn tree_error(error: anyhow::Error) -> StateError {
    StateError::Tree(format!("{error:#}"))
}

/// A block executed on top of its ancestors but not committed: its state root and its writes.
#[derive(Clone, Debug)]
pub struct Executed {
    height: u64,
    root: Hash,
    changed: BTreeMap<Address, Account>,
    nodes: NodeBatch,
    /// Nodes of earlier versions this block replaces: (version from which they are unused,
    /// node key).
    stale: Vec<(u64, NodeKey)>,
}

impl Executed {
    /// The block's height (the tree version it creates).
    pub fn height(&self) -> u64 {
        self.height
    }

    /// The state root after the block.
    pub fn root(&self) -> Hash {
        self.root
    }

    /// The accounts the block changed, with their values after it.
    pub fn changed(&self) -> &BTreeMap<Address, Account> {
        &self.changed
    }

    /// How many tree nodes of earlier versions the block replaces: what committing it adds to
    /// what [`State::prune`] will delete once its version leaves the retained window.
    pub fn stale_nodes(&self) -> usize {
        self.stale.len()
    }
}

/// The store's form of a tree update: `nodes` (their nodes and values) and the `stale` nodes
/// of earlier versions, each (version from which it is unused, node key).
pub(crate) fn state_batch(
    nodes: &NodeBatch,
    stale: &[(u64, NodeKey)],
) -> Result<StateBatch, StateError> {
    let mut batch = StateBatch::default();
    for (key, node) in nodes.nodes() {
        batch.nodes.push((
            borsh::to_vec(key).map_err(|e| tree_error(e.into()))?,
            borsh::to_vec(node).map_err(|e| tree_error(e.into()))?,
        ));
    }
    for ((_, key_hash), value) in nodes.values() {
        batch.values.push((key_hash.0, value.clone()));
    }
    for (since, key) in stale {
        batch.stale.push((
            *since,
            borsh::to_vec(key).map_err(|e| tree_error(e.into()))?,
        ));
    }
    Ok(batch)
}

/// The tree's view of the store, with not-yet-committed blocks on top.
pub(crate) struct Reader<'a> {
    pub(crate) store: &'a StateStore,
    pub(crate) pending: &'a [&'a Executed],
}

impl TreeReader for Reader<'_> {
    fn get_node_option(&self, node_key: &NodeKey) -> anyhow::Result<Option<Node>> {
        for block in self.pending.iter().rev() {
            if let Some(node) = block.nodes.get_node(node_key) {
                return Ok(Some(node.clone()));
            }
        }
        let Some(bytes) = self.store.node(&borsh::to_vec(node_key)?)? else {
            return Ok(None);
        };
        Ok(Some(borsh::from_slice(&bytes)?))
    }

    fn get_value_option(
        &self,
        max_version: Version,
        key_hash: KeyHash,
    ) -> anyhow::Result<Option<OwnedValue>> {
        for block in self.pending.iter().rev() {
            if block.height <= max_version {
                if let Some(value) = block.nodes.values().get(&(block.height, key_hash)) {
                    return Ok(value.clone());
                }
            }
        }
        Ok(self.store.value(&key_hash.0, max_version)?)
    }

    fn get_rightmost_leaf(&self) -> anyhow::Result<Option<(NodeKey, LeafNode)>> {
        // Only the tree's resuming restore asks for it; ours starts over instead
        // (crate::snapshot).
        anyhow::bail!("a snapshot restore is not resumed: it starts over")
    }
}

/// What [`State::propose`] chose, as indices into its candidates.
#[derive(Debug)]
pub struct Proposed {
    /// The block's transactions, in order.
    pub chosen: Vec<usize>,
    /// The `quasar_wire::tx_hash` of each chosen transaction, in the same order.
    pub chosen_hashes: Vec<Hash>,
    /// Candidates that will never apply: they do not decode, or their refusal is final
    /// ([`ExecError::may_apply_later`]). A mempool drops them.
    pub refused: Vec<usize>,
    /// The block, executed.
    pub executed: Executed,
}

/// The application's authenticated state: the committed tree and its latest version.
pub struct State {
    store: StateStore,
    rules: ChainRules,
    /// How reports of equivocation are checked ([`State::with_evidence_check`]).
    evidence: std::sync::Arc<dyn EvidenceCheck>,
    /// Whom the validator network reaches ([`State::with_network_roster`]; `None`: anyone).
    roster: Option<std::sync::Arc<NetworkRoster>>,
    version: u64,
    root: Hash,
}

impl State {
    /// Opens the state in `store` for a chain with `rules`. A store never committed gets
    /// version 0: the accounts of `balances` (address and balance; an address listed twice
    /// gets the sum) and the registered genesis `validators` ([`Ledger::genesis`]).
    ///
    /// Errors: [`StateError::Genesis`] for an allocation past `u64::MAX` or validators that
    /// repeat a key; [`StateError::Store`], [`StateError::Tree`].
    pub fn open(
        store: StateStore,
        rules: ChainRules,
        balances: impl IntoIterator<Item = (Address, u64)>,
        validators: impl IntoIterator<Item = GenesisValidator>,
    ) -> Result<State, StateError> {
        if let Some((version, root)) = store.latest()? {
            return Ok(State {
                store,
                rules,
                evidence: std::sync::Arc::new(NoEvidence),
                roster: None,
                version,
                root,
            });
        }
        // A restore from a snapshot that a crash interrupted leaves entries without a latest
        // version: they are not a state, and must not shadow the genesis allocation's values.
        store.clear()?;
        let validators: Vec<GenesisValidator> = validators.into_iter().collect();
        let genesis_set = rules
            .sets_from_registry
            .then(|| EpochSet::of(&genesis_members(&validators)))
            .flatten();
        let ledger = Ledger::genesis(rules, balances, validators).map_err(StateError::Genesis)?;
        let changed: BTreeMap<_, _> = ledger.accounts().map(|(a, b)| (*a, b.clone())).collect();
        let new_keys: Vec<Address> = changed
            .iter()
            .filter(|(_, account)| account.public_key.is_some())
            .map(|(address, _)| *address)
            .collect();
        let mut registry: Vec<(Hash, Vec<u8>)> = registry_entries(&ledger).collect();
        if !ledger.directory().0.is_empty() {
            registry.push((directory_key(), ledger.directory().to_bytes()));
        }
        // Epochs 0 and 1 have the genesis set, in the genesis order.
        for epoch in [0, 1] {
            if let Some(set) = &genesis_set {
                registry.push((epoch_set_key(epoch), set.to_bytes()));
            }
        }
        let genesis = write_version(&store, &[], 0, changed, &new_keys, registry)?;
        let mut state = State {
            store,
            rules,
            evidence: std::sync::Arc::new(NoEvidence),
            roster: None,
            version: 0,
            root: genesis.root,
        };
        state.write(genesis)?;
        Ok(state)
    }

    /// The state, checking reports of equivocation with `evidence` (without it, [`NoEvidence`]
    /// refuses every report). Every node of a chain must use the same check.
    pub fn with_evidence_check(mut self, evidence: std::sync::Arc<dyn EvidenceCheck>) -> State {
        self.evidence = evidence;
        self
    }

    /// The state, selecting into the sets its boundary blocks write ([`EpochSet`]) only the
    /// validators `roster` reaches (without it, any registered validator). Every node of a
    /// chain must use the same roster: the genesis file's.
    pub fn with_network_roster(mut self, roster: std::sync::Arc<NetworkRoster>) -> State {
        self.roster = Some(roster);
        self
    }

    /// The set of `epoch` as committed version `version` holds it ([`read_epoch_set`]).
    ///
    /// Errors: as [`read_epoch_set`].
    pub fn epoch_set(&self, version: u64, epoch: u64) -> Result<Option<EpochSet>, StateError> {
        read_epoch_set(&self.store, version, epoch)
    }

    /// The latest committed version (the height of the last committed block; 0 at genesis).
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The state root of the latest committed version.
    pub fn root(&self) -> Hash {
        self.root
    }

    /// The state root of committed version `version`, if it is stored.
    ///
    /// Errors: [`StateError::Store`].
    pub fn root_at(&self, version: u64) -> Result<Option<Hash>, StateError> {
        Ok(self.store.root(version)?)
    }

    /// The account at `address` in the latest committed version.
    ///
    /// Errors: [`StateError::Store`], [`StateError::Corrupt`].
    pub fn account(&self, address: &Address) -> Result<Option<Account>, StateError> {
        read_account(&self.store, &[], self.version, address)
    }

    /// The account at `address` in the latest committed version, with its proof against
    /// [`State::root`] (of inclusion, or of absence for an account that does not exist).
    ///
    /// Errors: [`StateError::Tree`], [`StateError::Corrupt`].
    pub fn account_with_proof(
        &self,
        address: &Address,
    ) -> Result<(Option<Account>, AccountProof), StateError> {
        let (leaf, proof) = prove_account(&self.store, self.version, address)?;
        let account = match leaf {
            Some(leaf) => Some(with_key(&self.store, self.version, address, leaf)?),
            None => None,
        };
        Ok((account, proof))
    }

    /// Every registered validator (active or leaving) in committed version `version`, in
    /// address order, with its account's key and stake: the input of
    /// [`crate::registry::select_validators`].
    ///
    /// Errors: [`StateError::Tree`] (a version pruned or never committed reads as empty only if
    /// its values are gone: ask for retained versions), [`StateError::Store`],
    /// [`StateError::Corrupt`], [`StateError::CorruptRegistry`].
    pub fn registry(&self, version: u64) -> Result<Vec<RegisteredValidator>, StateError> {
        read_registry(&self.store, version)
    }

    /// Executes block `height` (its encoded transactions `txs`, in order) on top of `pending`,
    /// the executed, not yet committed blocks between the committed version and this block
    /// (oldest first). Signatures are checked through `cache`. Writes nothing.
    ///
    /// Errors: [`StateError::OutOfOrder`] unless `pending` and `height` continue the committed
    /// version one height at a time; [`StateError::Decode`], [`StateError::Transaction`] for
    /// the first transaction that does not decode or apply; [`StateError::Store`],
    /// [`StateError::Tree`], [`StateError::Corrupt`].
    pub fn execute(
        &self,
        pending: &[&Executed],
        height: u64,
        txs: &[&[u8]],
        cache: &VerificationCache,
    ) -> Result<Executed, StateError> {
        let hashes: Vec<Hash> = txs.iter().map(|tx| quasar_wire::tx_hash(tx)).collect();
        let hashed: Vec<(&[u8], &Hash)> = txs.iter().copied().zip(&hashes).collect();
        self.execute_hashed(pending, height, &hashed, cache)
    }

    /// [`State::execute`] of transactions whose hashes the caller holds: each pair is a
    /// transaction's bytes and its `quasar_wire::tx_hash` (the leaves of the block's verified
    /// payload root; see [`SignedTransaction::decode_hashed`]), so no transaction is hashed again.
    ///
    /// Errors: as [`State::execute`].
    pub fn execute_hashed(
        &self,
        pending: &[&Executed],
        height: u64,
        txs: &[(&[u8], &Hash)],
        cache: &VerificationCache,
    ) -> Result<Executed, StateError> {
        self.check_order(pending, height)?;
        let mut work = self.working_set(pending);
        for (index, (bytes, hash)) in txs.iter().enumerate() {
            let tx = SignedTransaction::decode_hashed(bytes, hash).map_err(|source| {
                StateError::Decode {
                    height,
                    index,
                    source,
                }
            })?;
            work.load(&tx, height)?;
            work.ledger
                .apply(&tx, height, cache, &*self.evidence)
                .map_err(|source| StateError::Transaction {
                    height,
                    index,
                    source,
                })?;
        }
        work.finish(height)
    }

    /// Chooses the transactions of a new block `height` on top of `pending` (as in
    /// [`State::execute`]): `candidates`, in order, skipping each one that does not decode or
    /// apply after those chosen before it, until the next would take the block's transactions
    /// past `max_bytes`. Returns the chosen and the refused transactions (those that do not
    /// decode, or whose refusal is final: [`ExecError::may_apply_later`]) and the executed
    /// block.
    ///
    /// Errors: [`StateError::OutOfOrder`], [`StateError::Store`], [`StateError::Tree`],
    /// [`StateError::Corrupt`].
    pub fn propose(
        &self,
        pending: &[&Executed],
        height: u64,
        candidates: &[&[u8]],
        max_bytes: usize,
        cache: &VerificationCache,
    ) -> Result<Proposed, StateError> {
        self.check_order(pending, height)?;
        let mut work = self.working_set(pending);
        let (mut chosen, mut chosen_hashes) = (Vec::new(), Vec::new());
        let (mut refused, mut bytes) = (Vec::new(), 0usize);
        for (index, candidate) in candidates.iter().enumerate() {
            let Some(total) = bytes
                .checked_add(candidate.len())
                .filter(|t| *t <= max_bytes)
            else {
                break;
            };
            let Ok(tx) = SignedTransaction::decode(candidate) else {
                refused.push(index);
                continue;
            };
            work.load(&tx, height)?;
            match work.ledger.apply(&tx, height, cache, &*self.evidence) {
                Ok(()) => {
                    chosen.push(index);
                    chosen_hashes.push(*tx.hash());
                    bytes = total;
                }
                Err(e) if !e.may_apply_later() => refused.push(index),
                Err(_) => {}
            }
        }
        Ok(Proposed {
            chosen,
            chosen_hashes,
            refused,
            executed: work.finish(height)?,
        })
    }

    /// Writes `executed`, a block executed directly on top of the committed version, and makes
    /// its version the latest.
    ///
    /// Errors: [`StateError::OutOfOrder`] for any other block (nothing is written);
    /// [`StateError::Store`].
    pub fn commit(&mut self, executed: Executed) -> Result<(), StateError> {
        let expected = self.version.saturating_add(1);
        if executed.height != expected {
            return Err(StateError::OutOfOrder {
                expected,
                got: executed.height,
            });
        }
        self.write(executed)
    }

    /// Reads the latest committed version again from the store: after a restore from a
    /// snapshot ([`crate::snapshot::Restore`]) wrote another one under this state.
    ///
    /// Errors: [`StateError::Store`]; [`StateError::Tree`] for a store without a committed
    /// version.
    pub fn reload(&mut self) -> Result<(), StateError> {
        let (version, root) = self
            .store
            .latest()?
            .ok_or_else(|| StateError::Tree("the state store holds no committed version".into()))?;
        (self.version, self.root) = (version, root);
        Ok(())
    }

    fn write(&mut self, executed: Executed) -> Result<(), StateError> {
        let batch = state_batch(&executed.nodes, &executed.stale)?;
        self.store.commit(executed.height, &executed.root, &batch)?;
        self.version = executed.height;
        self.root = executed.root;
        if let Some(epoch) = self.rules.decides_set(executed.height) {
            let key = epoch_set_key(epoch);
            let (_, proof) = prove_key(&self.store, executed.height, &key)?;
            self.store
                .keep_proof(&key, executed.height, &proof.to_bytes())?;
        }
        Ok(())
    }

    /// Deletes at most `limit` of the tree nodes that no version from `keep` on uses, and the
    /// roots below `keep` ([`quasar_storage::StateStore::prune`]), in one atomic batch: versions
    /// from `keep` on stay readable and provable. Returns how many nodes it deleted; fewer
    /// than `limit` means none is left below `keep`.
    ///
    /// Errors: [`StateError::Store`].
    pub fn prune(&self, keep: u64, limit: usize) -> Result<usize, StateError> {
        Ok(self.store.prune(keep, limit)?)
    }

    fn check_order(&self, pending: &[&Executed], height: u64) -> Result<(), StateError> {
        let mut expected = self.version.saturating_add(1);
        for block in pending.iter().map(|b| b.height).chain([height]) {
            if block != expected {
                return Err(StateError::OutOfOrder {
                    expected,
                    got: block,
                });
            }
            expected = expected.saturating_add(1);
        }
        Ok(())
    }

    fn working_set<'a>(&'a self, pending: &'a [&'a Executed]) -> WorkingSet<'a> {
        let mut work = WorkingSet::new(&self.store, pending, self.version, self.rules);
        work.roster = self.roster.as_deref();
        work
    }
}

/// One block's execution in progress: the accounts its transactions touched, as they are now,
/// and their leaves as they were before the block (what the tree held; a leaf is 26 bytes, so
/// remembering it copies no public key).
struct WorkingSet<'a> {
    store: &'a StateStore,
    pending: &'a [&'a Executed],
    version: u64,
    ledger: Ledger,
    before: BTreeMap<Address, Option<AccountLeaf>>,
    /// Registry entries as they were before the block (tree key → value), for each record and
    /// claim loaded.
    registry_before: BTreeMap<Hash, Option<Vec<u8>>>,
    /// The directory as it was before the block, once loaded.
    directory_before: Option<Directory>,
    /// Whom the validator network reaches (`None`: anyone).
    roster: Option<&'a NetworkRoster>,
    /// Whether the sets of the block's epoch and the next are loaded.
    sets_loaded: bool,
}

impl<'a> WorkingSet<'a> {
    /// An empty working set on top of `pending` above committed `version`.
    fn new(
        store: &'a StateStore,
        pending: &'a [&'a Executed],
        version: u64,
        rules: ChainRules,
    ) -> WorkingSet<'a> {
        WorkingSet {
            store,
            pending,
            version,
            ledger: Ledger::empty(rules),
            before: BTreeMap::new(),
            registry_before: BTreeMap::new(),
            directory_before: None,
            roster: None,
            sets_loaded: false,
        }
    }

    /// Loads what `tx`, in block `height`, reads ([`Ledger::reads`]) that the working set does
    /// not hold yet, as of the newest pending block (or the committed version).
    fn load(&mut self, tx: &SignedTransaction, height: u64) -> Result<(), StateError> {
        let reads = Ledger::reads(tx);
        let rules = self.ledger.rules();
        if reads.epoch_sets && rules.sets_from_registry && !self.sets_loaded {
            let epoch = rules.epoch_of(height);
            for epoch in [epoch, epoch.saturating_add(1)] {
                let set = read_value(
                    self.store,
                    self.pending,
                    self.version,
                    &epoch_set_key(epoch),
                )?
                .map(|bytes| decode_epoch_set(epoch, &bytes))
                .transpose()?;
                self.ledger.load_epoch_set(epoch, set);
            }
            self.sets_loaded = true;
        }
        for address in std::iter::once(reads.sender).chain(reads.recipient) {
            if !self.before.contains_key(&address) {
                let account = read_account(self.store, self.pending, self.version, &address)?;
                self.before
                    .insert(address, account.as_ref().map(AccountLeaf::from));
                self.ledger.load(address, account);
            }
        }
        if let Some(address) = reads.validator {
            let key = validator_key(&address);
            if !self.registry_before.contains_key(&key) {
                let record = read_record(self.store, self.pending, self.version, &address)?;
                self.registry_before
                    .insert(key, record.as_ref().map(ValidatorRecord::to_bytes));
                self.ledger.load_validator(address, record);
            }
        }
        for claim in reads.claims {
            if !self.registry_before.contains_key(&claim) {
                let owner = read_claim(self.store, self.pending, self.version, &claim)?;
                self.registry_before
                    .insert(claim, owner.map(|o| o.to_vec()));
                self.ledger.load_claim(claim, owner);
            }
        }
        if reads.directory && self.directory_before.is_none() {
            let directory = read_directory(self.store, self.pending, self.version)?;
            self.ledger.load_directory(directory.clone());
            self.directory_before = Some(directory);
        }
        Ok(())
    }

    /// The executed block `height`: only accounts whose leaf differs from what it was before
    /// the block go into the tree (a key enters state only with a leaf that now says so).
    fn finish(self, height: u64) -> Result<Executed, StateError> {
        let mut changed = BTreeMap::new();
        let mut new_keys = Vec::new();
        for (address, account) in self.ledger.accounts() {
            let before = self.before.get(address).copied().flatten();
            let leaf = AccountLeaf::from(account);
            if before == Some(leaf) {
                continue;
            }
            if leaf.has_key && !before.is_some_and(|b| b.has_key) {
                new_keys.push(*address);
            }
            changed.insert(*address, account.clone());
        }
        // Registry entries go in only where they differ from what the tree held.
        let mut registry: Vec<(Hash, Vec<u8>)> = registry_entries(&self.ledger)
            .filter(|(key, value)| {
                self.registry_before.get(key).and_then(Option::as_ref) != Some(value)
            })
            .collect();
        if let Some(before) = &self.directory_before {
            if before != self.ledger.directory() {
                registry.push((directory_key(), self.ledger.directory().to_bytes()));
            }
        }
        if let Some(epoch) = self.ledger.rules().decides_set(height) {
            // Without an eligible validator the set before stays, and is written again: every
            // epoch of such a chain has its entry, whose members stay bonded.
            let set = match self.decided_set()? {
                Some(set) => Some(set.to_bytes()),
                None => read_value(
                    self.store,
                    self.pending,
                    self.version,
                    &epoch_set_key(epoch.saturating_sub(1)),
                )?,
            };
            if let Some(bytes) = set {
                registry.push((epoch_set_key(epoch), bytes));
            }
        }
        write_version(
            self.store,
            self.pending,
            height,
            changed,
            &new_keys,
            registry,
        )
    }
}

impl WorkingSet<'_> {
    /// The set this block decides (its state, after its transactions, is a boundary's):
    /// [`select_validators`] among the registered validators the roster reaches; `None` when
    /// none is left.
    fn decided_set(&self) -> Result<Option<EpochSet>, StateError> {
        let directory = match self.directory_before {
            Some(_) => self.ledger.directory().clone(),
            None => read_directory(self.store, self.pending, self.version)?,
        };
        let registry = collect_registry(
            directory,
            |address| match self.registry_before.contains_key(&validator_key(address)) {
                true => Ok(self.ledger.validator(address).cloned()),
                false => read_record(self.store, self.pending, self.version, address),
            },
            |address| match self.before.contains_key(address) {
                true => Ok(self.ledger.account(address).cloned()),
                false => read_account(self.store, self.pending, self.version, address),
            },
        )?;
        let reachable = registry
            .into_iter()
            .filter(|v| self.roster.is_none_or(|roster| roster.reaches(v)))
            .collect();
        Ok(EpochSet::of(&select_validators(
            reachable,
            MAX_SET_VALIDATORS,
        )))
    }
}

/// The genesis `validators` as registered validators, in their order.
fn genesis_members(validators: &[GenesisValidator]) -> Vec<RegisteredValidator> {
    validators
        .iter()
        .map(|v| RegisteredValidator {
            address: crate::tx::address_of(&v.identity_key),
            identity_key: v.identity_key.clone(),
            stake: v.stake,
            record: ValidatorRecord {
                status: crate::registry::ValidatorStatus::Active,
                registered_at: 0,
                network_address: None,
                keys: v.keys.clone(),
            },
        })
        .collect()
}

/// The tree entries of the validator records and identity claims `ledger` holds (tree key,
/// value), in key order within each kind.
fn registry_entries(ledger: &Ledger) -> impl Iterator<Item = (Hash, Vec<u8>)> + '_ {
    let validators = ledger
        .validators()
        .map(|(address, record)| (validator_key(address), record.to_bytes()));
    let claims = ledger
        .claims()
        .map(|(claim, owner)| (*claim, owner.to_vec()));
    validators.chain(claims)
}

/// Computes tree version `height` on top of `pending` and the store: the leaves of the
/// `changed` accounts, the public keys of `new_keys` (accounts whose key enters state), and the
/// `registry` entries (tree key, value).
fn write_version(
    store: &StateStore,
    pending: &[&Executed],
    height: u64,
    changed: BTreeMap<Address, Account>,
    new_keys: &[Address],
    registry: Vec<(Hash, Vec<u8>)>,
) -> Result<Executed, StateError> {
    let reader = Reader { store, pending };
    let tree = JellyfishMerkleTree::<_, TreeHasher>::new(&reader);
    let mut values: Vec<(KeyHash, OwnedValue)> = changed
        .iter()
        .map(|(address, account)| {
            let leaf = AccountLeaf::from(account).to_bytes().to_vec();
            (KeyHash(account_key(address)), leaf)
        })
        .collect();
    for address in new_keys {
        if let Some(key) = changed.get(address).and_then(|a| a.public_key.as_ref()) {
            values.push((KeyHash(public_key_key(address)), key.as_bytes().to_vec()));
        }
    }
    values.extend(
        registry
            .into_iter()
            .map(|(key, value)| (KeyHash(key), value)),
    );
    // The batch insertion hashes each touched node once; it needs a non-empty set, and an
    // empty block only copies the root to the new version.
    let (roots, update) = if values.is_empty() {
        let (root, update) = tree.put_value_set([], height).map_err(tree_error)?;
        (vec![root], update)
    } else {
        tree.batch_put_value_sets(vec![values], None, height)
            .map_err(tree_error)?
    };
    let Some(RootHash(root)) = roots.first().copied() else {
        return Err(StateError::Tree("the tree returned no root".into()));
    };
    Ok(Executed {
        height,
        root,
        changed,
        nodes: update.node_batch,
        stale: update
            .stale_node_index_batch
            .into_iter()
            .map(|index| (index.stale_since_version, index.node_key))
            .collect(),
    })
}

/// The value at tree key `key` as of the newest of `pending` that wrote it, else of committed
/// `version`.
fn read_value(
    store: &StateStore,
    pending: &[&Executed],
    version: u64,
    key: &Hash,
) -> Result<Option<Vec<u8>>, StateError> {
    for block in pending.iter().rev() {
        if let Some(value) = block.nodes.values().get(&(block.height, KeyHash(*key))) {
            return Ok(value.clone());
        }
    }
    Ok(store.value(key, version)?)
}

/// The validator record of `address`, as [`read_value`] finds it.
fn read_record(
    store: &StateStore,
    pending: &[&Executed],
    version: u64,
    address: &Address,
) -> Result<Option<ValidatorRecord>, StateError> {
    read_value(store, pending, version, &validator_key(address))?
        .map(|bytes| {
            ValidatorRecord::from_bytes(&bytes).map_err(|source| StateError::CorruptRegistry {
                what: hex::encode(address),
                source,
            })
        })
        .transpose()
}

/// The owner of the identity claim at tree key `claim`, as [`read_value`] finds it.
fn read_claim(
    store: &StateStore,
    pending: &[&Executed],
    version: u64,
    claim: &Hash,
) -> Result<Option<Address>, StateError> {
    read_value(store, pending, version, claim)?
        .map(|bytes| {
            Address::try_from(bytes.as_slice()).map_err(|_| StateError::CorruptRegistry {
                what: hex::encode(claim),
                source: RegistryDecodeError::Length {
                    what: "identity claim",
                    len: bytes.len(),
                    expected: "32 bytes",
                },
            })
        })
        .transpose()
}

/// The directory, as [`read_value`] finds it (empty where the tree holds none).
fn read_directory(
    store: &StateStore,
    pending: &[&Executed],
    version: u64,
) -> Result<Directory, StateError> {
    match read_value(store, pending, version, &directory_key())? {
        Some(bytes) => {
            Directory::from_bytes(&bytes).map_err(|source| StateError::CorruptRegistry {
                what: "directory".into(),
                source,
            })
        }
        None => Ok(Directory::default()),
    }
}

/// The account at `address` as of the newest of `pending`, else of committed `version`.
fn read_account(
    store: &StateStore,
    pending: &[&Executed],
    version: u64,
    address: &Address,
) -> Result<Option<Account>, StateError> {
    if let Some(account) = pending.iter().rev().find_map(|b| b.changed.get(address)) {
        return Ok(Some(account.clone()));
    }
    match store.value(&account_key(address), version)? {
        Some(bytes) => Ok(Some(with_key(
            store,
            version,
            address,
            decode_leaf(address, &bytes)?,
        )?)),
        None => Ok(None),
    }
}

/// Decodes the leaf stored for `address`.
fn decode_leaf(address: &Address, bytes: &[u8]) -> Result<AccountLeaf, StateError> {
    AccountLeaf::from_bytes(bytes).map_err(|source| corrupt_account(address, source))
}

fn corrupt_account(address: &Address, source: AccountDecodeError) -> StateError {
    StateError::Corrupt {
        address: hex::encode(address),
        source,
    }
}

/// The account whose leaf at committed `version` is `leaf`, with its public key read from
/// state when the leaf says it is there.
fn with_key(
    store: &StateStore,
    version: u64,
    address: &Address,
    leaf: AccountLeaf,
) -> Result<Account, StateError> {
    let corrupt = || corrupt_account(address, AccountDecodeError::Key);
    let public_key = if leaf.has_key {
        let bytes = store
            .value(&public_key_key(address), version)?
            .ok_or_else(corrupt)?;
        Some(mldsa::PublicKey::from_bytes(&bytes).map_err(|_| corrupt())?)
    } else {
        None
    };
    Ok(Account {
        balance: leaf.balance,
        stake: leaf.stake,
        nonce: leaf.nonce,
        public_key,
    })
}

/// The account at `address` in the latest committed version of `store` (`None` before the
/// first commit or for an account that does not exist). Reads only committed bytes, so it can
/// run beside the [`State`] that writes them (the node's admission does).
///
/// Errors: [`StateError::Store`], [`StateError::Corrupt`].
pub fn committed_account(
    store: &StateStore,
    address: &Address,
) -> Result<Option<Account>, StateError> {
    match store.latest()? {
        Some((version, _)) => read_account(store, &[], version, address),
        None => Ok(None),
    }
}

/// Every registered validator (active, leaving or slashed) in committed version `version` of
/// `store`, in address order, with its account's key and stake ([`State::registry`]). Reads
/// only committed bytes, so it can run beside the [`State`] that writes them (the node's
/// `GET /validators` does).
///
/// Errors: [`StateError::Store`], [`StateError::Corrupt`], [`StateError::CorruptRegistry`].
pub fn read_registry(
    store: &StateStore,
    version: u64,
) -> Result<Vec<RegisteredValidator>, StateError> {
    collect_registry(
        read_directory(store, &[], version)?,
        |address| read_record(store, &[], version, address),
        |address| read_account(store, &[], version, address),
    )
}

/// The registered validators of `directory`, in address order, each with its record and its
/// account's key and stake as `record` and `account` read them.
///
/// Errors: those of the readers; [`StateError::CorruptRegistry`] for an address without a
/// record or without an account key.
fn collect_registry(
    directory: Directory,
    mut record: impl FnMut(&Address) -> Result<Option<ValidatorRecord>, StateError>,
    mut account: impl FnMut(&Address) -> Result<Option<Account>, StateError>,
) -> Result<Vec<RegisteredValidator>, StateError> {
    let mut out = Vec::with_capacity(directory.0.len());
    for address in directory.0 {
        let what = || hex::encode(address);
        let record = record(&address)?.ok_or_else(|| StateError::CorruptRegistry {
            what: what(),
            source: RegistryDecodeError::Invalid("a directory entry without a record"),
        })?;
        let Some((identity_key, stake)) =
            account(&address)?.and_then(|a| a.public_key.map(|key| (key, a.stake)))
        else {
            return Err(StateError::CorruptRegistry {
                what: what(),
                source: RegistryDecodeError::Invalid("a validator without an account key"),
            });
        };
        out.push(RegisteredValidator {
            address,
            identity_key,
            stake,
            record,
        });
    }
    Ok(out)
}

/// The validator set of `epoch` that a boundary block wrote ([`EpochSet`]), as committed
/// version `version` of `store` holds it: `None` when no boundary up to `version` decided that
/// epoch (a chain whose genesis fixes its sets, an epoch not decided yet, or a boundary that
/// found no eligible validator). Reads only committed bytes.
///
/// Errors: [`StateError::Store`]; [`StateError::CorruptRegistry`] for bytes that do not decode.
pub fn read_epoch_set(
    store: &StateStore,
    version: u64,
    epoch: u64,
) -> Result<Option<EpochSet>, StateError> {
    read_value(store, &[], version, &epoch_set_key(epoch))?
        .map(|bytes| decode_epoch_set(epoch, &bytes))
        .transpose()
}

/// The stored set of `epoch`, decoded.
fn decode_epoch_set(epoch: u64, bytes: &[u8]) -> Result<EpochSet, StateError> {
    EpochSet::from_bytes(bytes).map_err(|source| StateError::CorruptRegistry {
        what: format!("the set of epoch {epoch}"),
        source,
    })
}

/// Applies `tx` on top of the latest committed version of `store` (as the first transaction of
/// the next block) in a working set that is then dropped: whether the chain's rules accept it
/// there. Reads only committed bytes, so it can run beside the [`State`] that writes them (the
/// node's admission checks staking actions with it, whose refusals depend on the registry).
///
/// Signatures are checked through `cache` and evidence through `evidence`, as the [`State`]
/// does.
///
/// Errors: [`StateError::Transaction`] (index 0) with the refusal; [`StateError::Store`],
/// [`StateError::Tree`], [`StateError::Corrupt`], [`StateError::CorruptRegistry`].
pub fn check_committed(
    store: &StateStore,
    rules: ChainRules,
    tx: &SignedTransaction,
    cache: &VerificationCache,
    evidence: &dyn EvidenceCheck,
) -> Result<(), StateError> {
    let version = store.latest()?.map_or(0, |(version, _)| version);
    let height = version.saturating_add(1);
    let mut work = WorkingSet::new(store, &[], version, rules);
    work.load(tx, height)?;
    work.ledger
        .apply(tx, height, cache, evidence)
        .map_err(|source| StateError::Transaction {
            height,
            index: 0,
            source,
        })
}

/// The account leaf at `address` in committed version `version` of `store`, with its proof
/// against that version's root (of inclusion, or of absence). Reads only committed bytes, so
/// it can run beside the [`State`] that writes them (the node's API does).
///
/// Errors: [`StateError::Tree`] (also for a version pruned or never committed),
/// [`StateError::Corrupt`].
pub fn prove_account(
    store: &StateStore,
    version: u64,
    address: &Address,
) -> Result<(Option<AccountLeaf>, AccountProof), StateError> {
    let (value, proof) = prove_key(store, version, &account_key(address))?;
    let leaf = value
        .map(|bytes| decode_leaf(address, &bytes))
        .transpose()?;
    Ok((leaf, proof))
}

/// The value at tree key `key` in committed version `version`, with its proof.
fn prove_key(
    store: &StateStore,
    version: u64,
    key: &Hash,
) -> Result<(Option<Vec<u8>>, AccountProof), StateError> {
    let reader = Reader {
        store,
        pending: &[],
    };
    let tree = JellyfishMerkleTree::<_, TreeHasher>::new(&reader);
    let (value, proof) = tree
        .get_with_proof(KeyHash(*key), version)
        .map_err(tree_error)?;
    Ok((value, AccountProof(proof)))
}

/// The set of `epoch` as boundary block `boundary` (epoch `epoch − 2`'s) wrote it, or its
/// absence (that boundary found no eligible validator), with the proof against that block's
/// state root: the proof [`State::commit`] kept when it committed the boundary (so it outlives
/// the pruning of that version), else one made now (while the version is retained).
///
/// Errors: [`StateError::Tree`] (a pruned version without a kept proof, or a version never
/// committed), [`StateError::Store`], [`StateError::CorruptRegistry`].
pub fn prove_epoch_set(
    store: &StateStore,
    boundary: u64,
    epoch: u64,
) -> Result<(Option<EpochSet>, AccountProof), StateError> {
    let key = epoch_set_key(epoch);
    let proof = match store.kept_proof(&key, boundary)? {
        Some(bytes) => AccountProof::from_bytes(&bytes)
            .map_err(|e| StateError::Tree(format!("the kept proof of epoch {epoch}'s set: {e}")))?,
        None => prove_key(store, boundary, &key)?.1,
    };
    Ok((read_epoch_set(store, boundary, epoch)?, proof))
}

/// Largest encoded [`EpochSet`]: its header (33 bytes) and 136 bytes per member, for
/// [`MAX_SET_VALIDATORS`] members.
pub const MAX_EPOCH_SET_BYTES: usize = 33 + 136 * MAX_SET_VALIDATORS;

/// Why [`proven_epoch_set`] refuses a set and its proof.
#[derive(Debug, thiserror::Error)]
pub enum SetProofError {
    /// The set or the proof is longer than its bound.
    #[error("the {field} is longer than {max} bytes")]
    TooLong {
        /// `"set"` or `"proof"`.
        field: &'static str,
        /// Its bound ([`MAX_EPOCH_SET_BYTES`], [`MAX_ACCOUNT_PROOF_BYTES`]).
        max: usize,
    },
    /// The proof does not decode, or does not lead from the set's entry to the root.
    #[error(transparent)]
    Proof(#[from] ProofError),
    /// The proven bytes are not a set.
    #[error("the proven set does not decode: {0}")]
    Set(RegistryDecodeError),
    /// What should carry the proof ([`proven_epoch_set_message`]) is not an `EpochSetProof`
    /// of the epoch asked for.
    #[error("no proof of epoch {0}'s set")]
    Missing(u64),
}

/// The set of `epoch` that `set` (an encoded [`EpochSet`]) is, proven by `proof` (an encoded
/// [`AccountProof`] of the set's state entry) against `state_root`, a boundary block's: what an
/// epoch-change step and, on a chain whose sets come from its registry, a checkpoint carry.
/// Lengths are bounded before anything is decoded.
///
/// Errors: [`SetProofError`].
pub fn proven_epoch_set(
    epoch: u64,
    set: &[u8],
    proof: &[u8],
    state_root: &Hash,
) -> Result<EpochSet, SetProofError> {
    if set.len() > MAX_EPOCH_SET_BYTES {
        return Err(SetProofError::TooLong {
            field: "set",
            max: MAX_EPOCH_SET_BYTES,
        });
    }
    if proof.len() > MAX_ACCOUNT_PROOF_BYTES {
        return Err(SetProofError::TooLong {
            field: "proof",
            max: MAX_ACCOUNT_PROOF_BYTES,
        });
    }
    AccountProof::from_bytes(proof)?.verify_entry(state_root, &epoch_set_key(epoch), Some(set))?;
    EpochSet::from_bytes(set).map_err(SetProofError::Set)
}

/// [`proven_epoch_set`] for `message`, an encoded `quasar_wire::EpochSetProof` of `epoch` (what
/// a checkpoint carries on a chain whose sets come from its registry).
///
/// Errors: [`SetProofError::Missing`] when `message` is not an `EpochSetProof` of `epoch`;
/// then as [`proven_epoch_set`].
pub fn proven_epoch_set_message(
    epoch: u64,
    message: &[u8],
    state_root: &Hash,
) -> Result<EpochSet, SetProofError> {
    match quasar_wire::decode(message) {
        Ok(quasar_wire::MessageRef::EpochSetProof(p)) if p.epoch() == epoch => {
            proven_epoch_set(epoch, p.set(), p.proof(), state_root)
        }
        _ => Err(SetProofError::Missing(epoch)),
    }
}

/// Largest encoded [`AccountProof`]: a leaf (1 + 64 bytes), the sibling count (4) and at most
/// 256 siblings of at most 65 bytes.
pub const MAX_ACCOUNT_PROOF_BYTES: usize = 1 + 64 + 4 + 256 * 65;

/// A Merkle proof that a tree entry has a value (or is absent) under a state root: an
/// account's leaf ([`AccountProof::verify`]) or any other entry, such as an epoch's set
/// ([`AccountProof::verify_entry`]).
#[derive(Clone, Debug, PartialEq)]
pub struct AccountProof(jmt::proof::SparseMerkleProof<TreeHasher>);

/// Why an [`AccountProof`] is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProofError {
    /// Longer than [`MAX_ACCOUNT_PROOF_BYTES`].
    #[error("an account proof of {0} bytes exceeds the limit of {MAX_ACCOUNT_PROOF_BYTES}")]
    TooLarge(usize),
    /// Bytes that are not a canonical encoded proof.
    #[error("malformed account proof: {0}")]
    Malformed(String),
    /// The proof does not lead from the account to the root.
    #[error("the account proof does not verify against the state root: {0}")]
    Mismatch(String),
}

impl AccountProof {
    /// The proof's encoding (Borsh, the tree library's own: the optional leaf, then the
    /// siblings from the leaf up).
    pub fn to_bytes(&self) -> Vec<u8> {
        // Encoding into a Vec cannot fail.
        borsh::to_vec(&self.0).unwrap_or_default()
    }

    /// Decodes [`AccountProof::to_bytes`], bounding the length first and refusing trailing or
    /// non-canonical bytes.
    ///
    /// Errors: [`ProofError::TooLarge`], [`ProofError::Malformed`].
    pub fn from_bytes(bytes: &[u8]) -> Result<AccountProof, ProofError> {
        if bytes.len() > MAX_ACCOUNT_PROOF_BYTES {
            return Err(ProofError::TooLarge(bytes.len()));
        }
        let proof = borsh::from_slice(bytes).map_err(|e| ProofError::Malformed(e.to_string()))?;
        let proof = AccountProof(proof);
        if proof.to_bytes() != bytes {
            return Err(ProofError::Malformed("not the canonical encoding".into()));
        }
        Ok(proof)
    }

    /// Checks that under `root` the account at `address` is `account` (`None`: that no
    /// account exists there).
    ///
    /// Errors: [`ProofError::Mismatch`].
    pub fn verify(
        &self,
        root: &Hash,
        address: &Address,
        account: Option<&Account>,
    ) -> Result<(), ProofError> {
        self.verify_leaf(root, address, account.map(AccountLeaf::from).as_ref())
    }

    /// Checks that under `root` the tree entry at `key` is `value` (`None`: that no entry is
    /// there).
    ///
    /// Errors: [`ProofError::Mismatch`].
    pub fn verify_entry(
        &self,
        root: &Hash,
        key: &Hash,
        value: Option<&[u8]>,
    ) -> Result<(), ProofError> {
        self.0
            .verify(RootHash(*root), KeyHash(*key), value)
            .map_err(|e| ProofError::Mismatch(format!("{e:#}")))
    }

    /// [`AccountProof::verify`] for what the tree holds of the account: its leaf (numbers and
    /// whether its key is in state), as a client that never saw the key checks it.
    ///
    /// Errors: [`ProofError::Mismatch`].
    pub fn verify_leaf(
        &self,
        root: &Hash,
        address: &Address,
        leaf: Option<&AccountLeaf>,
    ) -> Result<(), ProofError> {
        let bytes = leaf.map(AccountLeaf::to_bytes);
        self.verify_entry(
            root,
            &account_key(address),
            bytes.as_ref().map(|b| b.as_slice()),
        )
    }
}
