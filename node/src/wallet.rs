//! The client side of an account (`quasar-node account`, `balance`, `transfer`, `stake`,
//! `unstake`, `register-validator`, `leave`, `tx-status`; docs/architecture.md §11): an encrypted account key file, reading an
//! account through `GET /account/{address}` checked by [`crate::light`], and signing
//! transactions with the nonce the checked account gives.
//!
//! # The account key file
//!
//! The plaintext is `{"mldsa65_seed_hex": <32 bytes>}`: the seed of an ML-DSA-65 key pair
//! (FIPS 204 ML-DSA.KeyGen_internal). It is always sealed, with the validator key file's format
//! and cryptography ([`quasar_chainspec::key_file`]: Argon2id, XChaCha20-Poly1305) under
//! [`Purpose::AccountKey`], so an account file never opens as a validator key file or the other
//! way round. Files are written once (never replaced) with mode 0600. The account's address is
//! the hash of its public key ([`address_of`]).

use crate::light::{verify_account, verify_epoch_set, VerifiedAccount};
use quasar_app::{
    address_of, Account, Action, Address, ChainRules, Ledger, Registration, Transaction,
    ValidatorKeys, VerificationCache,
};
use quasar_chainspec::key_file::{parse_sealed, Purpose, SealedKeyFile};
use quasar_chainspec::sealing::{decode_hex_bounded, KdfParams};
use quasar_client::{Client, TxInfo, TxStatus};
use quasar_consensus::Verifier;
use quasar_crypto::mldsa::{self, MlDsa65};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use zeroize::Zeroizing;

/// Why an account command failed; each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum WalletError {
    /// The key file cannot be read (the message names it).
    #[error("{0}")]
    Read(String),
    /// The key file cannot be written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
    /// The key file exists: it is never replaced.
    #[error("{0} already exists; refusing to replace an account key (choose another --out)")]
    Exists(PathBuf),
    /// The key file is not a sealed account key file.
    #[error("{path} is not an account key file: {problem}")]
    NotAKeyFile {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// The passphrase does not open the file (or the file was modified, or it is another kind
    /// of sealed file).
    #[error(
        "{0}: wrong passphrase, or the file was modified, or it is not an account key file \
         (give the passphrase it was written with: --passphrase-file or QUASAR_KEY_PASSPHRASE)"
    )]
    WrongPassphrase(PathBuf),
    /// The node's answer did not pass the check.
    #[error("the node's answer for account {address} does not verify against the genesis: {source} (ask another node, or check --genesis)")]
    Unverified {
        /// The account.
        address: String,
        /// Why.
        #[source]
        source: crate::light::LightError,
    },
    /// A step of the node's epoch-change proof did not pass the check.
    #[error("the node's proof of a later validator set does not verify against the genesis: {0} (ask another node, or check --genesis)")]
    UnverifiedSet(#[source] crate::light::LightError),
    /// The node could not be asked, or refused.
    #[error("{0}")]
    Node(String),
    /// The transaction cannot be built (an account that does not exist yet, a sum that
    /// overflows).
    #[error("{0}")]
    Transaction(String),
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AccountKeyJson {
    mldsa65_seed_hex: String,
}

/// Writes a new account key file at `path`, sealed under `passphrase` with `kdf`, from
/// `seed`: the ML-DSA-65 key seed (32 bytes). Returns the account's address.
///
/// Errors: [`WalletError::Exists`], [`WalletError::Io`], [`WalletError::NotAKeyFile`] when the
/// KDF parameters are refused.
pub fn write_account_file(
    path: &Path,
    passphrase: &[u8],
    kdf: KdfParams,
    seed: &[u8; 32],
) -> Result<Address, WalletError> {
    let key = mldsa::SecretKey::<MlDsa65>::from_seed(seed);
    let plaintext = Zeroizing::new(
        serde_json::to_vec(&AccountKeyJson {
            mldsa65_seed_hex: hex::encode(seed),
        })
        .map_err(|e| WalletError::Transaction(e.to_string()))?,
    );
    let sealed =
        SealedKeyFile::seal(Purpose::AccountKey, passphrase, kdf, &plaintext).map_err(|e| {
            WalletError::NotAKeyFile {
                path: path.to_path_buf(),
                problem: e.to_string(),
            }
        })?;
    quasar_chainspec::write_private_new(path, &sealed.to_bytes()).map_err(|source| {
        if source.kind() == std::io::ErrorKind::AlreadyExists {
            WalletError::Exists(path.to_path_buf())
        } else {
            WalletError::Io {
                path: path.to_path_buf(),
                source,
            }
        }
    })?;
    Ok(address_of(key.public_key()))
}

/// Opens the account key file at `path` with `passphrase`: the signing key.
///
/// Errors: [`WalletError::Read`] (missing, unreadable, over 64 MiB, not text);
/// [`WalletError::NotAKeyFile`] for one that does not parse; [`WalletError::WrongPassphrase`].
pub fn open_account_file(
    path: &Path,
    passphrase: &[u8],
) -> Result<mldsa::SecretKey<MlDsa65>, WalletError> {
    let not_a_key = |problem: String| WalletError::NotAKeyFile {
        path: path.to_path_buf(),
        problem,
    };
    let text = Zeroizing::new(
        quasar_chainspec::read_bounded(path).map_err(|e| WalletError::Read(e.to_string()))?,
    );
    let sealed = parse_sealed(text.as_bytes()).map_err(|e| not_a_key(e.to_string()))?;
    let plaintext = sealed
        .open(Purpose::AccountKey, passphrase)
        .map_err(|_| WalletError::WrongPassphrase(path.to_path_buf()))?;
    let json: AccountKeyJson =
        serde_json::from_slice(&plaintext).map_err(|e| not_a_key(e.to_string()))?;
    let seed = Zeroizing::new(
        decode_hex_bounded(&json.mldsa65_seed_hex, 32, 32)
            .map_err(|e| not_a_key(format!("mldsa65_seed_hex: {e}")))?,
    );
    let seed: [u8; 32] = seed
        .as_slice()
        .try_into()
        .map_err(|_| not_a_key("mldsa65_seed_hex: not 32 bytes".into()))?;
    Ok(mldsa::SecretKey::from_seed(&seed))
}

/// The account at `address` as node `client` answers for it, checked against `verifier` (the
/// sets of `genesis`, the one the client trusts). On a chain whose sets come from its registry,
/// the sets up to the answer's epoch are learned first, one epoch-change step per epoch
/// ([`learn_sets_through`]).
///
/// Errors: [`WalletError::Node`] when the node cannot be asked or has executed nothing yet,
/// [`WalletError::Unverified`] when its answer (or a step) does not check.
pub async fn checked_account(
    client: &Client,
    verifier: &Verifier,
    genesis: &quasar_chainspec::Genesis,
    address: &Address,
) -> Result<VerifiedAccount, WalletError> {
    let info = client
        .account(&hex::encode(address))
        .await
        .map_err(|e| WalletError::Node(e.to_string()))?
        .ok_or_else(|| {
            WalletError::Node(format!(
                "{} answered 404: the node has executed no block yet (try again once the chain \
                 runs), or it is not a quasar-node API (check --api)",
                client.url(&format!("/account/{}", hex::encode(address)))
            ))
        })?;
    learn_sets_through(client, verifier, genesis, info.header.epoch).await?;
    verify_account(verifier, address, &info).map_err(|source| WalletError::Unverified {
        address: hex::encode(address),
        source,
    })
}

/// Learns into `verifier` the validator sets of every epoch up to `epoch` that it does not know
/// yet, from node `client`'s epoch-change steps (`GET /epochs/{e}/set`, each checked by
/// [`verify_epoch_set`] under the sets learned before it). Nothing to do on a chain whose
/// genesis fixes its sets. One request and one BLS aggregate verification per epoch.
///
/// Errors: [`WalletError::Node`] when a step cannot be had, [`WalletError::UnverifiedSet`]
/// when one does not check (the sets learned before it stay).
pub async fn learn_sets_through(
    client: &Client,
    verifier: &Verifier,
    genesis: &quasar_chainspec::Genesis,
    epoch: u64,
) -> Result<(), WalletError> {
    while !verifier.sets().known(epoch) {
        let next = verifier.sets().known_through().saturating_add(1);
        let step = client
            .epoch_set(next)
            .await
            .map_err(|e| WalletError::Node(e.to_string()))?
            .ok_or_else(|| {
                WalletError::Node(format!(
                    "{} answered 404: the node has no proof of epoch {next}'s validator set, \
                     which the answer of epoch {epoch} needs (ask a node that executed the \
                     chain that far)",
                    client.url(&format!("/epochs/{next}/set"))
                ))
            })?;
        verify_epoch_set(verifier, genesis, &step).map_err(WalletError::UnverifiedSet)?;
    }
    Ok(())
}

/// The signed transaction `key`'s account sends next on the chain of `rules`, doing `action` with
/// `fee`, given the account as last seen final (`None`: it does not exist yet): it carries the
/// account's nonce, and its public key while the state does not hold it yet.
///
/// Errors: [`WalletError::Transaction`] for an account that does not exist (it cannot pay a
/// fee), a signing failure, or a transaction the ledger's rules refuse on that account
/// ([`Ledger::apply`]: an amount and fee above the balance, a withdrawal above the stake).
pub fn next_transaction(
    rules: ChainRules,
    key: &mldsa::SecretKey<MlDsa65>,
    account: Option<&quasar_app::AccountLeaf>,
    action: Action,
    fee: u64,
) -> Result<Vec<u8>, WalletError> {
    let address = address_of(key.public_key());
    let account = account.ok_or_else(|| {
        WalletError::Transaction(format!(
            "account {} does not exist on this chain yet: fund it first (a transfer to it, or a \
             genesis allocation)",
            hex::encode(address)
        ))
    })?;
    let chain_id = rules.chain_id;
    let reads_registry = matches!(
        action,
        Action::Leave | Action::ReportEquivocation { .. } | Action::SetNetworkAddress { .. }
    );
    let tx = Transaction {
        chain_id,
        nonce: account.nonce,
        fee,
        sender: address,
        public_key: (!account.has_key).then(|| key.public_key().clone()),
        action,
    };
    let signed = tx
        .sign(key, &mut rand::rngs::OsRng)
        .map_err(|e| WalletError::Transaction(format!("signing: {e}")))?;
    // The chain's own rules on the account as last seen final, so that what would be refused
    // in every block (an overdraft, a bad proof of possession) is refused here with the reason,
    // not dropped later. The validator registry is not read here (the node's admission checks
    // staking actions against it), so `Leave`, a report of equivocation and an announced
    // address, which need a validator's record, are left to it, but for their fee.
    if reads_registry {
        if account.balance < fee {
            return Err(WalletError::Transaction(format!(
                "the chain would refuse it: needs {fee} (the fee), the account has {}; fund \
                 the account, or send with a lower --fee (0 is accepted)",
                account.balance
            )));
        }
        return Ok(signed.as_bytes().to_vec());
    }
    let mut ledger = Ledger::empty(rules);
    ledger.load(
        address,
        Some(Account {
            balance: account.balance,
            stake: account.stake,
            nonce: account.nonce,
            public_key: account.has_key.then(|| key.public_key().clone()),
        }),
    );
    ledger
        .apply(
            &signed,
            0,
            &VerificationCache::new(chain_id, 1),
            &quasar_app::NoEvidence,
        )
        .map_err(|e| WalletError::Transaction(format!("the chain would refuse it: {e}")))?;
    Ok(signed.as_bytes().to_vec())
}

/// The account address of a validator whose ML-DSA-65 identity key is `hex_key` (hex, as a
/// public key file or a genesis entry holds it): [`address_of`] the key.
///
/// Errors: a message naming `mldsa_public_key` for bytes that are not hex or not a key.
pub fn identity_address(hex_key: &str) -> Result<quasar_app::Address, String> {
    let bytes = hex::decode(hex_key).map_err(|e| format!("mldsa_public_key: {e}"))?;
    let identity = mldsa::PublicKey::<MlDsa65>::from_bytes(&bytes)
        .map_err(|e| format!("mldsa_public_key: {e}"))?;
    Ok(address_of(&identity))
}

/// The registration on chain `chain_id` of the validator whose keys are `keys` (a key
/// directory from `keygen`), by its own account (the address of its identity key): its BLS
/// public key with a proof of possession bound to that account and chain, its SLH-DSA public
/// key and its TLS certificate.
pub fn registration_of(
    keys: &quasar_chainspec::keys::ValidatorKeys,
    chain_id: u64,
) -> Registration {
    Registration::new(
        ValidatorKeys {
            bls_public_key: keys.bls.public_key().to_bytes(),
            slhdsa_public_key: *keys.slhdsa.public_key().as_bytes(),
            tls_certificate: keys.tls.cert_der.clone(),
        },
        &keys.bls,
        chain_id,
        &address_of(keys.mldsa.public_key()),
    )
}

/// How long a client command waits for each answer of the node.
pub const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A client of the node API at `api` (`--api`: a URL such as `http://127.0.0.1:8000`).
///
/// Errors: [`WalletError::Node`] for an `api` that is not an http(s) URL, or when the HTTP
/// client cannot be built.
pub fn api_client(api: &str) -> Result<Client, WalletError> {
    if !(api.starts_with("http://") || api.starts_with("https://")) {
        return Err(WalletError::Node(format!(
            "--api must be a URL such as http://127.0.0.1:8000, got '{api}'"
        )));
    }
    let http = quasar_client::http_client(REQUEST_TIMEOUT)
        .map_err(|e| WalletError::Node(e.to_string()))?;
    Ok(Client::with_http(http, api.trim_end_matches('/')))
}

/// Where a client command reaches the chain: one node's API, and the genesis the client
/// trusts (its chain id and validator sets check every answer).
pub struct Chain {
    client: Client,
    verifier: Verifier,
    rules: ChainRules,
    genesis: quasar_chainspec::Genesis,
}

impl Chain {
    /// The node at `api` (e.g. `http://127.0.0.1:8000`) on the chain of the genesis file at
    /// `genesis` (checked as a node checks it).
    ///
    /// Errors: [`WalletError::Node`] naming the genesis file or the HTTP client's failure.
    pub fn open(api: &str, genesis: &Path) -> Result<Chain, WalletError> {
        let client = api_client(api)?;
        // A load error names the file already; a check error does not.
        let genesis = quasar_chainspec::GenesisFile::load(genesis)
            .map_err(|e| WalletError::Node(format!("--genesis: {e}")))?
            .check()
            .map_err(|e| WalletError::Node(format!("--genesis {}: {e}", genesis.display())))?;
        Ok(Chain {
            client,
            verifier: crate::light::genesis_verifier(&genesis),
            rules: crate::application::chain_rules(&genesis),
            genesis,
        })
    }

    /// The `ReportEquivocation` of validator `signer`'s conflicting votes (or, as the notarize
    /// votes they carry, conflicting proposals: [`crate::application::proposals_as_votes`]) in
    /// `view`, from the evidence the node recorded (`GET /evidence`). The offender is found by
    /// its BLS key in the set of the votes' epoch (learned from the genesis, and on a chain whose
    /// sets come from the registry through the epoch-change steps): its account is the address
    /// of its identity key in the genesis, else the registry's entry for that key (as the node
    /// lists it; the chain checks that the key is the offender's when the report executes).
    ///
    /// Errors: [`WalletError::Node`] when the node cannot be asked or holds no such evidence,
    /// or `signer` is not in the epoch's set or not found; [`WalletError::UnverifiedSet`].
    pub async fn equivocation_report(&self, view: u64, signer: u32) -> Result<Action, WalletError> {
        use quasar_storage::evidence::kind;
        let list = self
            .client
            .evidence(Some(64), Some(view))
            .await
            .map_err(|e| WalletError::Node(e.to_string()))?;
        let kinds = [
            kind::CONFLICTING_PROPOSAL,
            kind::CONFLICTING_NOTARIZE,
            kind::CONFLICTING_FINALIZE,
            kind::FINALIZE_AND_NULLIFY,
        ];
        let found = list.evidence.iter().find_map(|entry| {
            let kind = kinds
                .into_iter()
                .find(|k| kind::name(*k) == Some(entry.kind.as_str()))?;
            let hex_message = |text: &str| hex::decode(text).ok();
            (entry.view == view && entry.signer == signer).then_some(())?;
            Some(quasar_storage::EvidenceRecord {
                kind,
                signer,
                view,
                first: hex_message(&entry.first)?,
                second: hex_message(&entry.second)?,
            })
        });
        let record = found.ok_or_else(|| {
            WalletError::Node(format!(
                "the node holds no evidence of conflicting votes or proposals by validator \
                 {signer} in view {view} (see GET /evidence)"
            ))
        })?;
        let record = crate::application::proposals_as_votes(record)
            .map_err(|e| WalletError::Node(format!("the node's evidence: {e}")))?;
        let evidence = record
            .encode()
            .map_err(|e| WalletError::Node(format!("the node's evidence: {e}")))?;
        let Ok(quasar_wire::MessageRef::Vote(vote)) = quasar_wire::decode(&record.first) else {
            return Err(WalletError::Node(
                "the node's evidence does not hold a vote".into(),
            ));
        };
        let epoch = vote.to_owned().epoch;
        learn_sets_through(&self.client, &self.verifier, &self.genesis, epoch).await?;
        let members = self.verifier.members(epoch);
        let key = members
            .validators
            .get(signer as usize)
            .map(|v| v.public_key)
            .ok_or_else(|| {
                WalletError::Node(format!(
                    "validator {signer} is not in the set of epoch {epoch}"
                ))
            })?;
        let sets = self.genesis.sets();
        let in_genesis = sets.iter().find_map(|(_, set)| {
            let position = set
                .validators
                .validators()
                .iter()
                .position(|v| v.public_key == key)?;
            set.mldsa_public_keys.get(position).map(address_of)
        });
        let offender = match in_genesis {
            Some(address) => address,
            None => self.registered_address(&key.to_bytes()).await?,
        };
        Ok(Action::ReportEquivocation { offender, evidence })
    }

    /// The address of the registered validator whose BLS public key is `key`, as the node's
    /// registry listing says (`GET /validators`).
    ///
    /// Errors: [`WalletError::Node`] when the node cannot be asked or lists no such validator.
    async fn registered_address(&self, key: &[u8; 48]) -> Result<Address, WalletError> {
        let listing = self
            .client
            .validators()
            .await
            .map_err(|e| WalletError::Node(e.to_string()))?;
        let key_hex = hex::encode(key);
        listing
            .iter()
            .flat_map(|list| &list.validators)
            .find(|v| v.bls_public_key == key_hex)
            .and_then(|v| hex::decode(&v.address).ok()?.try_into().ok())
            .ok_or_else(|| {
                WalletError::Node(format!(
                    "the node's registry lists no validator with BLS key {key_hex}"
                ))
            })
    }

    /// The account at `address`, checked ([`checked_account`]).
    ///
    /// Errors: as [`checked_account`].
    pub async fn account(&self, address: &Address) -> Result<VerifiedAccount, WalletError> {
        checked_account(&self.client, &self.verifier, &self.genesis, address).await
    }

    /// Signs and submits `key`'s next transaction doing `action` with `fee`
    /// ([`next_transaction`] on the checked account): its hash, hex.
    ///
    /// Errors: as [`Chain::account`] and [`next_transaction`]; [`WalletError::Node`] when the
    /// node refuses the transaction (with its reason).
    pub async fn send(
        &self,
        key: &mldsa::SecretKey<MlDsa65>,
        action: Action,
        fee: u64,
    ) -> Result<String, WalletError> {
        let account = self.account(&address_of(key.public_key())).await?;
        let tx = next_transaction(self.rules, key, account.account.as_ref(), action, fee)?;
        match self
            .client
            .submit_tx(tx)
            .await
            .map_err(|e| WalletError::Node(e.to_string()))?
        {
            quasar_client::Submitted::Accepted(hash) => Ok(hash),
            quasar_client::Submitted::Rejected { status, body } => Err(WalletError::Node(format!(
                "the node refused the transaction ({status}): {body}"
            ))),
        }
    }

    /// Transaction `hash` (hex) as the node knows it; `None` when it does not.
    ///
    /// Errors: [`WalletError::Node`].
    pub async fn tx(&self, hash: &str) -> Result<Option<TxInfo>, WalletError> {
        self.client
            .tx(hash)
            .await
            .map_err(|e| WalletError::Node(e.to_string()))
    }

    /// Polls transaction `hash` of account `sender` until it is final and the node's state
    /// holds it (the checked account is of its block's height or later: a block is final
    /// before the node has executed it into the state it serves), for at most `timeout`; so
    /// the sender's next transaction takes the next nonce and sees what this one did.
    ///
    /// Errors: [`WalletError::Node`] when the node dropped it (it can no longer apply), or when
    /// it is not final and applied in time (saying where it stands); as [`Chain::account`].
    pub async fn wait_final(
        &self,
        hash: &str,
        sender: &Address,
        timeout: std::time::Duration,
    ) -> Result<TxInfo, WalletError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut seen = false;
        loop {
            let info = self.tx(hash).await?;
            match &info {
                Some(info) if info.status == TxStatus::Finalized => {
                    let height = info.height.unwrap_or(0);
                    if self.account(sender).await?.height >= height {
                        return Ok(info.clone());
                    }
                    if tokio::time::Instant::now() >= deadline {
                        return Err(WalletError::Node(format!(
                            "transaction {hash} is final at height {height}, but the node's \
                             state is not there after {} s; check later with `quasar-node \
                             balance`",
                            timeout.as_secs()
                        )));
                    }
                }
                Some(_) => seen = true,
                None if seen => {
                    return Err(WalletError::Node(format!(
                        "transaction {hash} was dropped: it can no longer apply (its nonce was \
                         used by another transaction, or the account cannot pay); check \
                         `quasar-node balance` and send again"
                    )))
                }
                None => {}
            }
            if tokio::time::Instant::now() >= deadline {
                let status = match info {
                    Some(_) => "still pending",
                    None => "unknown to the node (dropped, or not gossiped to it)",
                };
                return Err(WalletError::Node(format!(
                    "transaction {hash} is not final after {} s: {status}; check later with \
                     `quasar-node tx-status {hash}`",
                    timeout.as_secs()
                )));
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }
}
