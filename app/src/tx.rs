//! Transactions of the built-in application: the body, its canonical ZAP encoding, and its
//! ML-DSA-65 signature (FIPS 204).
//!
//! # Encoding
//!
//! A signed transaction is a ZAP message (`quasar_wire::zap`) of type [`SIGNED_TX_TYPE`] whose
//! 16-byte root holds two bytes fields: the body (itself a ZAP message of type [`TX_BODY_TYPE`])
//! and the signature (3,309 bytes). The body's 120-byte root:
//!
//! | offset | field | type |
//! |---|---|---|
//! | 0 | chain id | u64 |
//! | 8 | nonce | u64 |
//! | 16 | fee | u64 |
//! | 24 | sender address | 32 bytes |
//! | 56 | action kind ([`Action`]) | u8, then 7 zero bytes |
//! | 64 | amount | u64 (0 when the action has none) |
//! | 72 | recipient address | 32 bytes (zero when the action has none) |
//! | 104 | the sender's ML-DSA-65 public key | bytes: 1,952 in an account's first transaction, else empty |
//! | 112 | the action's data | bytes: [`Registration::to_bytes`] for `RegisterValidator`, the evidence for `ReportEquivocation`, the address (ASCII) for `SetNetworkAddress`, else empty |
//!
//! Both messages are **canonical**: a decoder re-encodes what it read and refuses bytes that
//! differ (padding, pointer placement, a trailing byte), so one transaction has exactly one
//! encoding and one hash ([`SignedTransaction::hash`], `quasar_wire::tx_hash` of the bytes).
//!
//! # Signature
//!
//! The sender signs the body's bytes with ML-DSA-65 under the context string
//! `"QUASAR-TX-v1" ‖ chain id (u64 LE)` ([`signing_context`], FIPS 204 §5.2: a context of at most
//! 255 bytes), so a transaction signed for one chain never verifies on a chain with another id
//! (two chains given one id accept each other's transactions: ids must be distinct). An account's
//! address is `tagged_hash("QUASAR-ACCOUNT-v1", [public key])` ([`address_of`]); the key travels
//! in the account's first transaction and is kept in state, so later transactions carry only the
//! signature.

use crate::registry::Registration;
use quasar_crypto::accel::BatchArithmetic;
use quasar_crypto::hash::{tagged_hash, Hash};
use quasar_crypto::mldsa::{self, MlDsa65, MlDsaError};
use quasar_wire::zap::{Builder, Object, Reader};
use quasar_wire::WireError;

/// ZAP message type of a transaction body.
pub const TX_BODY_TYPE: u8 = 0x40;
/// ZAP message type of a signed transaction.
pub const SIGNED_TX_TYPE: u8 = 0x41;
/// Largest encoded signed transaction, bytes (the mempool's limit; a first transaction with its
/// public key is about 5.5 KB).
pub const MAX_TX_BYTES: usize = 64 * 1024;
/// ML-DSA-65 public key length (FIPS 204, Table 2).
pub const PUBLIC_KEY_LEN: usize = 1952;
/// ML-DSA-65 signature length (FIPS 204, Table 2).
pub const SIGNATURE_LEN: usize = 3309;
/// Longest evidence a `ReportEquivocation` carries, bytes: two signed votes and their record
/// fit in well under 1 KiB.
pub const MAX_EVIDENCE_BYTES: usize = 4096;

/// An account address: the hash of its ML-DSA-65 public key ([`address_of`]).
pub type Address = [u8; 32];

/// Hash tag of an account address.
const ADDRESS_TAG: &str = "QUASAR-ACCOUNT-v1";
/// Prefix of the signing context.
const CONTEXT_PREFIX: &[u8; 12] = b"QUASAR-TX-v1";

/// Body root layout (offsets in bytes).
mod body {
    pub const CHAIN_ID: usize = 0;
    pub const NONCE: usize = 8;
    pub const FEE: usize = 16;
    pub const SENDER: usize = 24;
    pub const KIND: usize = 56;
    pub const PADDING: usize = 57;
    pub const AMOUNT: usize = 64;
    pub const TO: usize = 72;
    pub const PUBLIC_KEY: usize = 104;
    pub const DATA: usize = 112;
    pub const SIZE: usize = 120;
}

/// Signed transaction root layout.
mod signed {
    pub const BODY: usize = 0;
    pub const SIGNATURE: usize = 8;
    pub const SIZE: usize = 16;
}

/// Why a transaction was refused. Every variant is the sender's or the peer's doing; none is
/// fatal to the node.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TxError {
    /// Not a well-formed ZAP message of the expected shape.
    #[error("malformed transaction: {0}")]
    Malformed(#[from] WireError),
    /// A ZAP message of another type.
    #[error("not a {expected}: ZAP message type {found:#04x}")]
    WrongType {
        /// What was expected.
        expected: &'static str,
        /// The type byte found.
        found: u8,
    },
    /// Longer than [`MAX_TX_BYTES`].
    #[error("transaction of {len} bytes exceeds the limit of {max}")]
    TooLarge {
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Bytes that decode but are not the canonical encoding of what they decode to.
    #[error("not the canonical encoding of the transaction it decodes to")]
    NonCanonical,
    /// An action kind this version does not know.
    #[error("unknown action kind {0}")]
    UnknownAction(u8),
    /// A field an action does not use is not zero.
    #[error("the {0} field must be zero for this action")]
    UnusedField(&'static str),
    /// A `RegisterValidator` registration field that does not decode.
    #[error("bad validator registration: {0}")]
    Registration(#[from] crate::registry::RegistryDecodeError),
    /// A data field on an action that carries none.
    #[error("the data field must be empty for this action")]
    UnexpectedData,
    /// A `SetNetworkAddress` address that is empty, too long or not printable ASCII.
    #[error("bad network address: {0}")]
    NetworkAddress(String),
    /// Evidence longer than [`MAX_EVIDENCE_BYTES`], or none.
    #[error("evidence of {0} bytes: 1 to {MAX_EVIDENCE_BYTES} are accepted")]
    EvidenceLength(usize),
    /// A public key or signature of the wrong length or encoding.
    #[error("bad {what}: {source}")]
    Key {
        /// "public key" or "signature".
        what: &'static str,
        /// The decoder's error.
        source: MlDsaError,
    },
    /// The public key does not hash to the sender address.
    #[error("the public key is not the sender's (address {address} expected)")]
    WrongKey {
        /// The sender address, hex.
        address: String,
    },
    /// Signed for another chain.
    #[error("transaction for chain {found}, this is chain {expected}")]
    WrongChain {
        /// This chain.
        expected: u64,
        /// The transaction's.
        found: u64,
    },
    /// The signature does not verify under the sender's key and this chain's context.
    #[error("the signature does not verify")]
    BadSignature,
}

/// What a transaction does. Staking actions change the validator set two epochs on
/// ([`crate::registry`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Move `amount` from the sender to `to`.
    Transfer {
        /// Recipient.
        to: Address,
        /// Amount, in the chain's smallest unit.
        amount: u64,
    },
    /// Add `amount` of the sender's balance to its stake.
    AddStake {
        /// Amount.
        amount: u64,
    },
    /// Move `amount` of the sender's stake back to its balance.
    WithdrawStake {
        /// Amount.
        amount: u64,
    },
    /// End the sender's validator registration: sets derived from then on omit it, and its
    /// stake stays bonded for the unbonding period ([`crate::registry`]).
    Leave,
    /// Register the sender as a validator with `registration`'s keys (its ML-DSA-65 identity
    /// key is its account's key), adding `amount` of its balance to its stake.
    RegisterValidator {
        /// Amount added to the stake (may be 0 when the account has staked already).
        amount: u64,
        /// The keys and the BLS proof of possession.
        registration: Box<Registration>,
    },
    /// Report that validator `offender` signed two conflicting messages: `evidence` is the
    /// record a node keeps of it (`GET /evidence`). Checked when it executes; it slashes the
    /// offender's whole stake and ends its registration ([`crate::registry`]). Anyone may send
    /// it.
    ReportEquivocation {
        /// The offender's address (its account).
        offender: Address,
        /// The evidence record (1 to [`MAX_EVIDENCE_BYTES`] bytes).
        evidence: Vec<u8>,
    },
    /// Announce where the sender, a registered validator, listens for validator traffic
    /// (QUIC): every node dials it there and accepts its TLS certificate
    /// ([`crate::registry`], "Reaching a validator").
    SetNetworkAddress {
        /// `host:port` ([`crate::registry::check_network_address`]).
        address: String,
    },
}

impl Action {
    /// The action's kind byte (body offset 56).
    pub fn kind(&self) -> u8 {
        match self {
            Action::Transfer { .. } => 1,
            Action::AddStake { .. } => 2,
            Action::WithdrawStake { .. } => 3,
            Action::Leave => 4,
            Action::RegisterValidator { .. } => 5,
            Action::ReportEquivocation { .. } => 6,
            Action::SetNetworkAddress { .. } => 7,
        }
    }

    /// (amount, recipient or offender, data) as encoded: zero or empty where the action has
    /// none.
    fn fields(&self) -> (u64, Address, Vec<u8>) {
        match self {
            Action::Transfer { to, amount } => (*amount, *to, Vec::new()),
            Action::AddStake { amount } | Action::WithdrawStake { amount } => {
                (*amount, [0; 32], Vec::new())
            }
            Action::Leave => (0, [0; 32], Vec::new()),
            Action::RegisterValidator {
                amount,
                registration,
            } => (*amount, [0; 32], registration.to_bytes()),
            Action::ReportEquivocation { offender, evidence } => (0, *offender, evidence.clone()),
            Action::SetNetworkAddress { address } => (0, [0; 32], address.as_bytes().to_vec()),
        }
    }

    fn from_fields(kind: u8, amount: u64, to: Address, data: &[u8]) -> Result<Action, TxError> {
        if kind == 5 {
            if to != [0; 32] {
                return Err(TxError::UnusedField("recipient"));
            }
            return Ok(Action::RegisterValidator {
                amount,
                registration: Box::new(Registration::from_bytes(data)?),
            });
        }
        if kind == 6 {
            if amount != 0 {
                return Err(TxError::UnusedField("amount"));
            }
            if data.is_empty() || data.len() > MAX_EVIDENCE_BYTES {
                return Err(TxError::EvidenceLength(data.len()));
            }
            return Ok(Action::ReportEquivocation {
                offender: to,
                evidence: data.to_vec(),
            });
        }
        if kind == 7 {
            if amount != 0 {
                return Err(TxError::UnusedField("amount"));
            }
            if to != [0; 32] {
                return Err(TxError::UnusedField("recipient"));
            }
            let address =
                crate::registry::check_network_address(data).map_err(TxError::NetworkAddress)?;
            return Ok(Action::SetNetworkAddress { address });
        }
        if !data.is_empty() {
            return Err(TxError::UnexpectedData);
        }
        let no_recipient = |action: Action| {
            if to == [0; 32] {
                Ok(action)
            } else {
                Err(TxError::UnusedField("recipient"))
            }
        };
        match kind {
            1 => Ok(Action::Transfer { to, amount }),
            2 => no_recipient(Action::AddStake { amount }),
            3 => no_recipient(Action::WithdrawStake { amount }),
            4 if amount != 0 => Err(TxError::UnusedField("amount")),
            4 => no_recipient(Action::Leave),
            other => Err(TxError::UnknownAction(other)),
        }
    }
}

/// A transaction body: what the sender signs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transaction {
    /// The chain it is for.
    pub chain_id: u64,
    /// The sender's next nonce (its first transaction has nonce 0).
    pub nonce: u64,
    /// Fee, in the chain's smallest unit.
    pub fee: u64,
    /// The sender's address.
    pub sender: Address,
    /// The sender's public key: present in its first transaction only.
    pub public_key: Option<mldsa::PublicKey<MlDsa65>>,
    /// What it does.
    pub action: Action,
}

/// The address of the account whose key is `key`: `tagged_hash("QUASAR-ACCOUNT-v1", [key])`.
pub fn address_of(key: &mldsa::PublicKey<MlDsa65>) -> Address {
    tagged_hash(ADDRESS_TAG, &[key.as_bytes()])
}

/// The ML-DSA-65 context string of chain `chain_id`: `"QUASAR-TX-v1" ‖ chain_id (u64 LE)`,
/// 20 bytes.
pub fn signing_context(chain_id: u64) -> [u8; 20] {
    let mut context = [0u8; 20];
    context[..12].copy_from_slice(CONTEXT_PREFIX);
    context[12..].copy_from_slice(&chain_id.to_le_bytes());
    context
}

/// Opens `bytes` as a ZAP message of type `expected`, root `root_size` bytes.
fn open<'a>(
    bytes: &'a [u8],
    expected: u8,
    name: &'static str,
    root_size: usize,
) -> Result<Object<'a>, TxError> {
    let reader = Reader::new(bytes)?;
    if reader.message_type() != expected {
        return Err(TxError::WrongType {
            expected: name,
            found: reader.message_type(),
        });
    }
    Ok(reader.root(root_size)?)
}

impl Transaction {
    /// The body's canonical encoding.
    ///
    /// Errors: [`TxError::Malformed`] only if the encoder's schema is broken (never for a
    /// value of this type).
    pub fn encode(&self) -> Result<Vec<u8>, TxError> {
        let (mut b, root) = Builder::new(TX_BODY_TYPE, body::SIZE)?;
        let (amount, to, data) = self.action.fields();
        b.put_u64(root, body::CHAIN_ID, self.chain_id)?;
        b.put_u64(root, body::NONCE, self.nonce)?;
        b.put_u64(root, body::FEE, self.fee)?;
        b.put(root, body::SENDER, &self.sender)?;
        b.put_u8(root, body::KIND, self.action.kind())?;
        b.put_u64(root, body::AMOUNT, amount)?;
        b.put(root, body::TO, &to)?;
        let key = self.public_key.as_ref().map_or(&[][..], |k| k.as_bytes());
        b.put_bytes(root, body::PUBLIC_KEY, key)?;
        b.put_bytes(root, body::DATA, &data)?;
        Ok(b.finish()?)
    }

    /// Decodes a body, refusing any encoding but the canonical one.
    ///
    /// Errors: [`TxError::Malformed`], [`TxError::WrongType`], [`TxError::UnknownAction`],
    /// [`TxError::UnusedField`], [`TxError::Key`] (a public key of the wrong length),
    /// [`TxError::NonCanonical`].
    pub fn decode(bytes: &[u8]) -> Result<Transaction, TxError> {
        let root = open(bytes, TX_BODY_TYPE, "transaction body", body::SIZE)?;
        if root.array::<7>(body::PADDING)? != &[0; 7] {
            return Err(TxError::NonCanonical);
        }
        let key = root.bytes(body::PUBLIC_KEY)?;
        let public_key = if key.is_empty() {
            None
        } else {
            Some(
                mldsa::PublicKey::from_bytes(key).map_err(|source| TxError::Key {
                    what: "public key",
                    source,
                })?,
            )
        };
        let tx = Transaction {
            chain_id: root.u64(body::CHAIN_ID)?,
            nonce: root.u64(body::NONCE)?,
            fee: root.u64(body::FEE)?,
            sender: *root.array::<32>(body::SENDER)?,
            public_key,
            action: Action::from_fields(
                root.u8(body::KIND)?,
                root.u64(body::AMOUNT)?,
                *root.array::<32>(body::TO)?,
                root.bytes(body::DATA)?,
            )?,
        };
        if tx.encode()? != bytes {
            return Err(TxError::NonCanonical);
        }
        Ok(tx)
    }

    /// Signs the body with `key` (hedged signing, FIPS 204 Algorithm 2) for its chain.
    ///
    /// Errors: [`TxError::Key`] if the signer fails (it does not for a valid key).
    pub fn sign(
        self,
        key: &mldsa::SecretKey<MlDsa65>,
        rng: &mut (impl rand::CryptoRng + rand::RngCore),
    ) -> Result<SignedTransaction, TxError> {
        let body = self.encode()?;
        let signature = key
            .sign(&body, &signing_context(self.chain_id), rng)
            .map_err(|source| TxError::Key {
                what: "signature",
                source,
            })?;
        SignedTransaction::assemble(self, body, signature, None)
    }
}

/// A decoded signed transaction with its canonical bytes. Decoding checks the shape only:
/// [`SignedTransaction::verify`] checks the signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedTransaction {
    tx: Transaction,
    signature: mldsa::Signature<MlDsa65>,
    /// The canonical encoding of the body (what was signed).
    body: Vec<u8>,
    /// The canonical encoding of the whole signed transaction.
    bytes: Vec<u8>,
    /// `quasar_wire::tx_hash(bytes)`, computed once (the mempool, the payload root and the
    /// verification cache all need it).
    hash: Hash,
}

impl SignedTransaction {
    /// The signed transaction of `tx` (encoded as `body`) and `signature`; `hash`, when given,
    /// is `quasar_wire::tx_hash` of the result's bytes, computed by the caller.
    fn assemble(
        tx: Transaction,
        body: Vec<u8>,
        signature: mldsa::Signature<MlDsa65>,
        hash: Option<Hash>,
    ) -> Result<SignedTransaction, TxError> {
        let (mut b, root) = Builder::new(SIGNED_TX_TYPE, signed::SIZE)?;
        b.put_bytes(root, signed::BODY, &body)?;
        b.put_bytes(root, signed::SIGNATURE, signature.as_bytes())?;
        let bytes = b.finish()?;
        if bytes.len() > MAX_TX_BYTES {
            return Err(TxError::TooLarge {
                len: bytes.len(),
                max: MAX_TX_BYTES,
            });
        }
        let hash = hash.unwrap_or_else(|| quasar_wire::tx_hash(&bytes));
        Ok(SignedTransaction {
            tx,
            signature,
            body,
            bytes,
            hash,
        })
    }

    /// Decodes a signed transaction, bounding its length first and refusing any encoding but
    /// the canonical one. The signature is not checked here.
    ///
    /// Errors: [`TxError::TooLarge`], and those of [`Transaction::decode`].
    pub fn decode(bytes: &[u8]) -> Result<SignedTransaction, TxError> {
        SignedTransaction::decode_with(bytes, None)
    }

    /// [`SignedTransaction::decode`] of `bytes` whose hash the caller computed already:
    /// `hash` must be `quasar_wire::tx_hash(bytes)` (the payload root's leaf of a verified
    /// proposal, which consensus keeps with the block). The hash keys the
    /// verification cache, so a caller must never pass another one; debug builds check it.
    ///
    /// Errors: as [`SignedTransaction::decode`].
    pub fn decode_hashed(bytes: &[u8], hash: &Hash) -> Result<SignedTransaction, TxError> {
        debug_assert_eq!(quasar_wire::tx_hash(bytes), *hash, "a hash of other bytes");
        SignedTransaction::decode_with(bytes, Some(*hash))
    }

    fn decode_with(bytes: &[u8], hash: Option<Hash>) -> Result<SignedTransaction, TxError> {
        if bytes.len() > MAX_TX_BYTES {
            return Err(TxError::TooLarge {
                len: bytes.len(),
                max: MAX_TX_BYTES,
            });
        }
        let root = open(bytes, SIGNED_TX_TYPE, "signed transaction", signed::SIZE)?;
        let body = root.bytes(signed::BODY)?;
        let signature =
            mldsa::Signature::from_bytes(root.bytes(signed::SIGNATURE)?).map_err(|source| {
                TxError::Key {
                    what: "signature",
                    source,
                }
            })?;
        let tx = Transaction::decode(body)?;
        let decoded = SignedTransaction::assemble(tx, body.to_vec(), signature, hash)?;
        if decoded.bytes != bytes {
            return Err(TxError::NonCanonical);
        }
        Ok(decoded)
    }

    /// The transaction body.
    pub fn transaction(&self) -> &Transaction {
        &self.tx
    }

    /// The encoded body: the message the signature signs (under [`signing_context`]).
    pub fn body_bytes(&self) -> &[u8] {
        &self.body
    }

    /// The sender's ML-DSA-65 signature over [`SignedTransaction::body_bytes`].
    pub fn signature(&self) -> &mldsa::Signature<MlDsa65> {
        &self.signature
    }

    /// The canonical bytes (what the mempool, blocks and `POST /tx` carry).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The transaction's hash: `quasar_wire::tx_hash` of its bytes, signature included
    /// (computed when it was decoded or signed).
    pub fn hash(&self) -> &Hash {
        &self.hash
    }

    /// Checks the signature for chain `chain_id` under `key`, the sender's key (the one it
    /// carries in its first transaction, or the one state holds for the sender).
    ///
    /// Errors: [`TxError::WrongChain`], [`TxError::WrongKey`] (`key`, or the key carried, does
    /// not hash to the sender), [`TxError::BadSignature`].
    pub fn verify(&self, chain_id: u64, key: &mldsa::PublicKey<MlDsa65>) -> Result<(), TxError> {
        self.check_chain_and_carried_key(chain_id, key)?;
        if address_of(key) != self.tx.sender {
            return Err(self.wrong_key());
        }
        self.check_signature(chain_id, key)
    }

    /// [`SignedTransaction::verify`] for a caller that has checked that `key` hashes to the
    /// sender, so the key is not hashed again. Errors: as [`SignedTransaction::verify`], except
    /// that a key of another address is not detected here.
    pub(crate) fn verify_known_key(
        &self,
        chain_id: u64,
        key: &mldsa::PublicKey<MlDsa65>,
    ) -> Result<(), TxError> {
        self.check_chain_and_carried_key(chain_id, key)?;
        self.check_signature(chain_id, key)
    }

    /// The signature alone, under `key`.
    fn check_signature(
        &self,
        chain_id: u64,
        key: &mldsa::PublicKey<MlDsa65>,
    ) -> Result<(), TxError> {
        key.verify(&self.body, &signing_context(chain_id), &self.signature)
            .map_err(|_| TxError::BadSignature)
    }

    /// [`SignedTransaction::verify`] under a prepared key, the NTTs on `arithmetic`, for a
    /// caller that has checked that `prepared`'s key hashes to the sender (the
    /// [`crate::VerificationCache`] does when it prepares a key), so the key is not hashed
    /// again. Errors: as [`SignedTransaction::verify`], except that a key of another address
    /// is not detected here.
    pub(crate) fn verify_prepared(
        &self,
        chain_id: u64,
        prepared: &mldsa::PreparedKey<MlDsa65>,
        arithmetic: &dyn BatchArithmetic,
    ) -> Result<(), TxError> {
        self.check_chain_and_carried_key(chain_id, prepared.public_key())?;
        prepared
            .verify(
                &self.body,
                &signing_context(chain_id),
                &self.signature,
                arithmetic,
            )
            .map_err(|_| TxError::BadSignature)
    }

    /// The checks before the signature, but the key's address: the chain, and that a key the
    /// transaction carries is `key`.
    fn check_chain_and_carried_key(
        &self,
        chain_id: u64,
        key: &mldsa::PublicKey<MlDsa65>,
    ) -> Result<(), TxError> {
        if self.tx.chain_id != chain_id {
            return Err(TxError::WrongChain {
                expected: chain_id,
                found: self.tx.chain_id,
            });
        }
        if self.tx.public_key.as_ref().is_some_and(|k| k != key) {
            return Err(self.wrong_key());
        }
        Ok(())
    }

    /// [`TxError::WrongKey`] for this transaction's sender.
    fn wrong_key(&self) -> TxError {
        TxError::WrongKey {
            address: hex::encode(self.tx.sender),
        }
    }
}
