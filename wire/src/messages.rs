//! Message schemas: owned values, their one encoder each, and validated zero-copy readers.
//!
//! Every schema has exactly one encode path (`Xxx::encode`, which [`Message::encode`] calls) and one
//! reader (`XxxRef::parse`, which [`decode`] calls). A reader is fully validated when it is created,
//! so its accessors cannot fail; byte strings, hashes and signatures are borrowed from the buffer.
//! Field offsets are listed in the crate docs ([`crate`]) and in the `layout` constants below.
//!
//! Decoding only checks the *shape* of a message. Whether a signature verifies, a signer is in the
//! validator set, or `payload_root` matches the transactions is for the verifier above this crate.

use quasar_crypto::corona::hash::TupleHash256;
use quasar_crypto::hash::tagged_hash;

use crate::zap::{Builder, BytesIter, BytesList, Object, Reader, Slot};
use crate::WireError;

pub use quasar_crypto::hash::Hash;

/// Length of a BLS12-381 G2 signature (compressed), in bytes (docs/architecture.md §4).
pub const SIGNATURE_LEN: usize = 96;

/// Domain tag of [`BlockHeader::hash`].
pub const BLOCK_HASH_TAG: &str = "QUASAR-BLOCK-v2";
/// Domain tag of [`tx_hash`].
pub const TX_HASH_TAG: &str = "QUASAR-TX-v1";
/// Domain tag of the inner nodes (and the empty root) of [`payload_root`].
pub const MERKLE_TAG: &str = "QUASAR-MERKLE-v1";
/// Domain tag that starts every [`vote_signing_message`].
pub const VOTE_TAG: &[u8] = b"QUASAR-VOTE-v1";
/// Length of every [`vote_signing_message`]: 14-byte tag + kind (1) + 4 × u64 (32) + block (32).
pub const VOTE_SIGNING_MESSAGE_LEN: usize = VOTE_TAG.len() + 1 + 4 * 8 + 32;

/// Length of a hash or round digest, in bytes (one element of a [`QuasarCert`] bundle).
pub const HASH_LEN: usize = 32;
/// Most round digests one [`QuasarCert`] bundle may cover (so at most 32 KiB of bundle).
pub const MAX_BUNDLE: usize = 1024;
/// Most legs one [`QuasarCert`] may list. Larger than the five [`LegKind`]s on purpose: a
/// duplicated or extra leg still decodes, so the lane verifier (`quasar-lanes`), not this decoder,
/// reports it precisely; the bound only caps the work a hostile list can cause.
pub const MAX_LEGS: usize = 8;
/// Largest [`LaneMessage`] payload, in bytes (8 MiB). The largest payload is a finished Magnetar
/// leg: 200 SLH-DSA-SHAKE-192f signatures (FIPS 205, 35 664 B each) are 7.1 MB. Half the 16 MiB
/// frame bound ([`crate::frame::MAX_FRAME_LEN`]), so a lane message always fits one frame.
pub const MAX_LANE_PAYLOAD: usize = 8 * 1024 * 1024;

/// The message type, carried in the high byte of the header's flags.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MessageType {
    /// A leader's block proposal ([`Proposal`]).
    Proposal = 1,
    /// A validator's notarize, finalize or nullify vote ([`Vote`]).
    Vote = 2,
    /// A quorum certificate ([`Certificate`]).
    Certificate = 3,
    /// Client transactions gossiped between mempools ([`TxBatch`]).
    TxBatch = 4,
    /// A request for blocks ([`SyncRequest`]).
    SyncRequest = 5,
    /// Blocks and certificates answering a request ([`SyncResponse`]).
    SyncResponse = 6,
    /// The post-quantum certificate of a finalized block ([`QuasarCert`]).
    QuasarCert = 7,
    /// One validator's contribution to the post-quantum legs of a bundle ([`LaneMessage`]).
    Lane = 8,
    /// A request for the recent proposals and votes of one signer ([`RelayRequest`]).
    RelayRequest = 9,
    /// A request for part of a state snapshot ([`StateRequest`]).
    StateRequest = 10,
    /// Part of a state snapshot answering a request ([`StateChunk`]).
    StateChunk = 11,
    /// An epoch's validator set with its proof against a boundary block's state root
    /// ([`EpochSetProof`]).
    EpochSetProof = 12,
}

impl TryFrom<u8> for MessageType {
    type Error = WireError;

    /// Errors: [`WireError::UnknownMessageType`] for any byte outside 1..=12.
    fn try_from(found: u8) -> Result<Self, WireError> {
        Ok(match found {
            1 => Self::Proposal,
            2 => Self::Vote,
            3 => Self::Certificate,
            4 => Self::TxBatch,
            5 => Self::SyncRequest,
            6 => Self::SyncResponse,
            7 => Self::QuasarCert,
            8 => Self::Lane,
            9 => Self::RelayRequest,
            10 => Self::StateRequest,
            11 => Self::StateChunk,
            12 => Self::EpochSetProof,
            _ => return Err(WireError::UnknownMessageType { found }),
        })
    }
}

/// What a vote endorses (docs/architecture.md §2: Wave = notarize, Focus = finalize, nullify on timeout).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VoteKind {
    /// The block is a valid proposal for the view.
    Notarize = 1,
    /// The notarized block is final for this validator (no timeout in the view).
    Finalize = 2,
    /// The view timed out; move to the next view. `block` is all-zero by convention.
    Nullify = 3,
}

impl TryFrom<u8> for VoteKind {
    type Error = WireError;

    /// Errors: [`WireError::UnknownVoteKind`] for any byte outside 1..=3.
    fn try_from(found: u8) -> Result<Self, WireError> {
        Ok(match found {
            1 => Self::Notarize,
            2 => Self::Finalize,
            3 => Self::Nullify,
            _ => return Err(WireError::UnknownVoteKind { found }),
        })
    }
}

/// What a certificate proves: a quorum of votes of the matching [`VoteKind`].
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CertificateKind {
    /// A quorum of notarize votes.
    Notarization = 1,
    /// A quorum of finalize votes (Nova finality).
    Finalization = 2,
    /// A quorum of nullify votes.
    Nullification = 3,
}

impl CertificateKind {
    /// The kind of the votes this certificate aggregates.
    pub fn vote_kind(self) -> VoteKind {
        match self {
            Self::Notarization => VoteKind::Notarize,
            Self::Finalization => VoteKind::Finalize,
            Self::Nullification => VoteKind::Nullify,
        }
    }
}

impl TryFrom<u8> for CertificateKind {
    type Error = WireError;

    /// Errors: [`WireError::UnknownCertificateKind`] for any byte outside 1..=3.
    fn try_from(found: u8) -> Result<Self, WireError> {
        Ok(match found {
            1 => Self::Notarization,
            2 => Self::Finalization,
            3 => Self::Nullification,
            _ => return Err(WireError::UnknownCertificateKind { found }),
        })
    }
}

/// The kind of one leg of a [`QuasarCert`] (docs/architecture.md §3): which lane decodes and verifies its
/// body. The discriminant is the leg's kind byte on the wire.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LegKind {
    /// BLS12-381 aggregate signature and signer bitmap over the block's round digest μ.
    Bls = 1,
    /// Corona (lattice threshold, Ringtail) signature over the bundle digest.
    Corona = 2,
    /// Groth16 proof that a quorum of ML-DSA-65 signatures on the bundle digest exists.
    Groth16 = 3,
    /// Pulsar threshold ML-DSA-65 (FIPS 204) signature over the bundle digest.
    Pulsar = 4,
    /// Magnetar per-validator SLH-DSA (FIPS 205) signatures and bitmap over the bundle digest.
    Magnetar = 5,
}

impl LegKind {
    /// Every leg kind, in kind-byte order.
    pub const ALL: [LegKind; 5] = [
        Self::Bls,
        Self::Corona,
        Self::Groth16,
        Self::Pulsar,
        Self::Magnetar,
    ];

    /// Lowercase name: `"bls"`, `"corona"`, `"groth16"`, `"pulsar"` or `"magnetar"` (also the
    /// [`std::fmt::Display`] form; usable as a metrics label).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Bls => "bls",
            Self::Corona => "corona",
            Self::Groth16 => "groth16",
            Self::Pulsar => "pulsar",
            Self::Magnetar => "magnetar",
        }
    }
}

impl std::fmt::Display for LegKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl TryFrom<u8> for LegKind {
    type Error = WireError;

    /// Errors: [`WireError::UnknownLegKind`] for any byte outside 1..=5.
    fn try_from(found: u8) -> Result<Self, WireError> {
        Ok(match found {
            1 => Self::Bls,
            2 => Self::Corona,
            3 => Self::Groth16,
            4 => Self::Pulsar,
            5 => Self::Magnetar,
            _ => return Err(WireError::UnknownLegKind { found }),
        })
    }
}

/// What a [`LaneMessage`] carries (docs/architecture.md §3): a finished leg body, or one validator's share of
/// the work an aggregator combines into a leg. The discriminant is the kind byte on the wire.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LaneKind {
    /// A finished leg body (its [`LegKind`] is the message's `leg` byte), for others to verify
    /// and attach to the bundle's [`QuasarCert`].
    Leg = 1,
    /// One validator's SLH-DSA (FIPS 205) signature over the bundle digest, to be combined into a
    /// Magnetar leg.
    MagnetarSignature = 2,
    /// One validator's ML-DSA-65 (FIPS 204) signature over the bundle digest, to be proven in the
    /// Groth16 rollup leg.
    RollupSignature = 3,
    /// A Corona (Ringtail, IACR ePrint 2024/1113) round-1 message of threshold session `session`.
    CoronaRound1 = 4,
    /// A Corona round-2 message (signature share) of threshold session `session`.
    CoronaRound2 = 5,
    /// A Pulsar (threshold ML-DSA-65) round-1 message of threshold session `session`.
    PulsarRound1 = 6,
    /// A Pulsar round-2 message of threshold session `session`.
    PulsarRound2 = 7,
    /// A Pulsar round-3 message of threshold session `session`.
    PulsarRound3 = 8,
}

impl LaneKind {
    /// Every lane kind, in kind-byte order.
    pub const ALL: [LaneKind; 8] = [
        Self::Leg,
        Self::MagnetarSignature,
        Self::RollupSignature,
        Self::CoronaRound1,
        Self::CoronaRound2,
        Self::PulsarRound1,
        Self::PulsarRound2,
        Self::PulsarRound3,
    ];

    /// Lowercase snake-case name: `"leg"`, `"magnetar_signature"`, `"rollup_signature"`,
    /// `"corona_round1"`, `"corona_round2"`, `"pulsar_round1"`, `"pulsar_round2"` or
    /// `"pulsar_round3"` (also the [`std::fmt::Display`] form; usable as a metrics label).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Leg => "leg",
            Self::MagnetarSignature => "magnetar_signature",
            Self::RollupSignature => "rollup_signature",
            Self::CoronaRound1 => "corona_round1",
            Self::CoronaRound2 => "corona_round2",
            Self::PulsarRound1 => "pulsar_round1",
            Self::PulsarRound2 => "pulsar_round2",
            Self::PulsarRound3 => "pulsar_round3",
        }
    }

    /// Whether this kind is a message of a threshold session (a Corona or Pulsar round), whose
    /// [`LaneMessage::session`] names the session. For every other kind the session is all-zero.
    pub const fn is_threshold_round(self) -> bool {
        matches!(
            self,
            Self::CoronaRound1
                | Self::CoronaRound2
                | Self::PulsarRound1
                | Self::PulsarRound2
                | Self::PulsarRound3
        )
    }
}

impl std::fmt::Display for LaneKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl TryFrom<u8> for LaneKind {
    type Error = WireError;

    /// Errors: [`WireError::UnknownLaneKind`] for any byte outside 1..=8.
    fn try_from(found: u8) -> Result<Self, WireError> {
        Ok(match found {
            1 => Self::Leg,
            2 => Self::MagnetarSignature,
            3 => Self::RollupSignature,
            4 => Self::CoronaRound1,
            5 => Self::CoronaRound2,
            6 => Self::PulsarRound1,
            7 => Self::PulsarRound2,
            8 => Self::PulsarRound3,
            _ => return Err(WireError::UnknownLaneKind { found }),
        })
    }
}

/// Field offsets (bytes from the object start) and fixed sizes of every schema object.
/// Integers are little-endian; `ptr` = `(u32 rel offset, u32 len)`, `obj` = `i32 rel offset`.
pub mod layout {
    /// `BlockHeader` object, 148 bytes.
    pub mod block_header {
        /// `chain_id: u64`.
        pub const CHAIN_ID: usize = 0;
        /// `epoch: u64`.
        pub const EPOCH: usize = 8;
        /// `view: u64`.
        pub const VIEW: usize = 16;
        /// `height: u64`.
        pub const HEIGHT: usize = 24;
        /// `parent_view: u64`.
        pub const PARENT_VIEW: usize = 32;
        /// `timestamp_us: u64`, microseconds since the Unix epoch.
        pub const TIMESTAMP_US: usize = 40;
        /// `parent: [u8; 32]`.
        pub const PARENT: usize = 48;
        /// `payload_root: [u8; 32]`.
        pub const PAYLOAD_ROOT: usize = 80;
        /// `proposer: u32`, validator index.
        pub const PROPOSER: usize = 112;
        /// `state_root: [u8; 32]`.
        pub const STATE_ROOT: usize = 116;
        /// Fixed size.
        pub const SIZE: usize = 148;
    }
    /// `Proposal` root object, 108 bytes.
    pub mod proposal {
        /// `header: obj → BlockHeader`.
        pub const HEADER: usize = 0;
        /// `txs: ptr → list of bytes`.
        pub const TXS: usize = 4;
        /// `signature: [u8; 96]`.
        pub const SIGNATURE: usize = 12;
        /// Fixed size.
        pub const SIZE: usize = 108;
    }
    /// `Vote` root object, 165 bytes.
    pub mod vote {
        /// `chain_id: u64`.
        pub const CHAIN_ID: usize = 0;
        /// `epoch: u64`.
        pub const EPOCH: usize = 8;
        /// `view: u64`.
        pub const VIEW: usize = 16;
        /// `height: u64`.
        pub const HEIGHT: usize = 24;
        /// `block: [u8; 32]`.
        pub const BLOCK: usize = 32;
        /// `signature: [u8; 96]`.
        pub const SIGNATURE: usize = 64;
        /// `signer: u32`, validator index.
        pub const SIGNER: usize = 160;
        /// `kind: u8` (`VoteKind`).
        pub const KIND: usize = 164;
        /// Fixed size.
        pub const SIZE: usize = 165;
    }
    /// `Certificate` root object, 169 bytes.
    pub mod certificate {
        /// `chain_id: u64`.
        pub const CHAIN_ID: usize = 0;
        /// `epoch: u64`.
        pub const EPOCH: usize = 8;
        /// `view: u64`.
        pub const VIEW: usize = 16;
        /// `height: u64`.
        pub const HEIGHT: usize = 24;
        /// `block: [u8; 32]`.
        pub const BLOCK: usize = 32;
        /// `signature: [u8; 96]`, BLS aggregate.
        pub const SIGNATURE: usize = 64;
        /// `signers: ptr → bytes` (bitmap).
        pub const SIGNERS: usize = 160;
        /// `kind: u8` (`CertificateKind`).
        pub const KIND: usize = 168;
        /// Fixed size.
        pub const SIZE: usize = 169;
    }
    /// `TxBatch` root object, 8 bytes.
    pub mod tx_batch {
        /// `txs: ptr → list of bytes`.
        pub const TXS: usize = 0;
        /// Fixed size.
        pub const SIZE: usize = 8;
    }
    /// `SyncRequest` root object, 44 bytes.
    pub mod sync_request {
        /// `from_height: u64`.
        pub const FROM_HEIGHT: usize = 0;
        /// `block: [u8; 32]`.
        pub const BLOCK: usize = 8;
        /// `max_blocks: u32`.
        pub const MAX_BLOCKS: usize = 40;
        /// Fixed size.
        pub const SIZE: usize = 44;
    }
    /// `RelayRequest` root object, 20 bytes.
    pub mod relay_request {
        /// `epoch: u64`.
        pub const EPOCH: usize = 0;
        /// `from_view: u64`.
        pub const FROM_VIEW: usize = 8;
        /// `signer: u32`.
        pub const SIGNER: usize = 16;
        /// Fixed size.
        pub const SIZE: usize = 20;
    }
    /// `StateRequest` root object, 44 bytes.
    pub mod state_request {
        /// `version: u64`.
        pub const VERSION: usize = 0;
        /// `start: [u8; 32]`.
        pub const START: usize = 8;
        /// `max_bytes: u32`.
        pub const MAX_BYTES: usize = 40;
        /// Fixed size.
        pub const SIZE: usize = 44;
    }
    /// `StateChunk` root object, 32 bytes.
    pub mod state_chunk {
        /// `version: u64`.
        pub const VERSION: usize = 0;
        /// `entries: ptr → list of bytes` (each key \[32\] ‖ value, the value not empty).
        pub const ENTRIES: usize = 8;
        /// `proof: ptr → bytes`.
        pub const PROOF: usize = 16;
        /// `status: u8` ([`crate::ChunkStatus`]).
        pub const STATUS: usize = 24;
        /// Seven reserved bytes, must be zero.
        pub const RESERVED: usize = 25;
        /// Width of the reserved field, in bytes.
        pub const RESERVED_LEN: usize = 7;
        /// Fixed size.
        pub const SIZE: usize = 32;
    }
    /// `EpochSetProof` root object, 24 bytes.
    pub mod epoch_set_proof {
        /// `epoch: u64`.
        pub const EPOCH: usize = 0;
        /// `set: ptr → bytes`.
        pub const SET: usize = 8;
        /// `proof: ptr → bytes`.
        pub const PROOF: usize = 16;
        /// Fixed size.
        pub const SIZE: usize = 24;
    }
    /// `SyncResponse` root object, 8 bytes.
    pub mod sync_response {
        /// `items: ptr → list of bytes` (each a complete ZAP Proposal, Vote, Certificate,
        /// QuasarCert or EpochSetProof).
        pub const ITEMS: usize = 0;
        /// Fixed size.
        pub const SIZE: usize = 8;
    }
    /// `QuasarCert` root object, 80 bytes.
    pub mod quasar_cert {
        /// `chain_id: u64`.
        pub const CHAIN_ID: usize = 0;
        /// `epoch: u64`.
        pub const EPOCH: usize = 8;
        /// `height: u64`.
        pub const HEIGHT: usize = 16;
        /// `view: u64`.
        pub const VIEW: usize = 24;
        /// `block: [u8; 32]`.
        pub const BLOCK: usize = 32;
        /// `bundle: ptr → bytes`, k × 32 bytes: the k round digests concatenated, oldest first.
        pub const BUNDLE: usize = 64;
        /// `legs: ptr → list of bytes`, each entry `kind u8 ‖ body` (`LegKind`, opaque body).
        pub const LEGS: usize = 72;
        /// Fixed size.
        pub const SIZE: usize = 80;
    }
    /// `LaneMessage` root object, 72 bytes.
    pub mod lane_message {
        /// `chain_id: u64`.
        pub const CHAIN_ID: usize = 0;
        /// `epoch: u64`.
        pub const EPOCH: usize = 8;
        /// `height: u64`, the bundle's closing height.
        pub const HEIGHT: usize = 16;
        /// `sender: u32`, validator index.
        pub const SENDER: usize = 24;
        /// `kind: u8` (`LaneKind`).
        pub const KIND: usize = 28;
        /// `leg: u8`: the `LegKind` byte for kind `Leg`, 0 for every other kind.
        pub const LEG: usize = 29;
        /// Two reserved bytes, must be zero.
        pub const RESERVED: usize = 30;
        /// Width of the reserved field, in bytes.
        pub const RESERVED_LEN: usize = 2;
        /// `session: [u8; 32]`, threshold session id (all-zero for kinds that are not rounds).
        pub const SESSION: usize = 32;
        /// `payload: ptr → bytes`, at most `MAX_LANE_PAYLOAD` bytes, opaque.
        pub const PAYLOAD: usize = 64;
        /// Fixed size.
        pub const SIZE: usize = 72;
    }
}

use layout::relay_request as rq;
use layout::vote as vo;
use layout::{block_header as bh, certificate as ce, proposal as pr, sync_request as sq};
use layout::{epoch_set_proof as ep, state_chunk as sc, state_request as sr};
use layout::{lane_message as lm, quasar_cert as qc, sync_response as ss, tx_batch as tb};

/// Checks the header of `buf`, that its type is `expected`, and opens its root of `root_size` bytes.
fn open(buf: &[u8], expected: MessageType, root_size: usize) -> Result<Object<'_>, WireError> {
    let reader = Reader::new(buf)?;
    let found = MessageType::try_from(reader.message_type())?;
    if found != expected {
        return Err(WireError::WrongMessageType {
            expected: expected as u8,
            found: found as u8,
        });
    }
    reader.root(root_size)
}

// ---------------------------------------------------------------------------------------------
// Hashes and signing messages
// ---------------------------------------------------------------------------------------------

/// Hash of one transaction: `tagged_hash("QUASAR-TX-v1", [tx])`, 32 bytes.
pub fn tx_hash(tx: &[u8]) -> Hash {
    tagged_hash(TX_HASH_TAG, &[tx])
}

/// Merkle root of a block's transactions, committed in [`BlockHeader::payload_root`].
///
/// * Leaves are [`tx_hash`] of each transaction, in order.
/// * Each level pairs nodes left to right; a pair becomes `tagged_hash("QUASAR-MERKLE-v1", [left,
///   right])`. When a level has an odd number of nodes, the last one is promoted to the next level
///   unchanged (it is *not* duplicated, so `[a, b, c]` and `[a, b, c, c]` have different roots).
/// * One transaction: the root is its leaf. No transactions: `tagged_hash("QUASAR-MERKLE-v1", [])`.
///
/// Leaves and inner nodes use different domain tags, so a leaf can never be confused with an inner
/// node (no second-preimage by reinterpreting a subtree as a transaction). Cost: n − 1 inner
/// hashes; memory: one 32-byte hash per transaction.
pub fn payload_root<'a>(txs: impl IntoIterator<Item = &'a [u8]>) -> Hash {
    let leaves: Vec<Hash> = txs.into_iter().map(tx_hash).collect();
    payload_root_of_hashes(&leaves)
}

/// [`payload_root`] from the leaves: `tx_hashes`, the [`tx_hash`] of each transaction in order
/// (for a caller that hashed the transactions already and keeps the hashes).
pub fn payload_root_of_hashes(tx_hashes: &[Hash]) -> Hash {
    let mut level = tx_hashes.to_vec();
    if level.is_empty() {
        return tagged_hash(MERKLE_TAG, &[]);
    }
    while level.len() > 1 {
        level = level
            .chunks(2)
            .map(|pair| match pair {
                [left, right] => tagged_hash(MERKLE_TAG, &[left, right]),
                [single] => *single,
                _ => unreachable_node(),
            })
            .collect();
    }
    level.first().copied().unwrap_or_else(unreachable_node)
}

/// `chunks(2)` yields one or two elements and the loop keeps `level` non-empty; this is never
/// called. It returns the empty root rather than panicking.
fn unreachable_node() -> Hash {
    tagged_hash(MERKLE_TAG, &[])
}

/// Customization string of the round digest μ (docs/architecture.md §3).
pub const ROUND_DIGEST_CUSTOMIZATION: &[u8] = b"QUASAR-ROUND-DIGEST-v1";

/// What every vote and certificate of an epoch binds besides its own fields: the epoch's
/// validator-set root and its cert profile id (the profile's canonical name, e.g. `quasar`).
/// Both enter the round digest μ that finalize votes sign.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct EpochDomain {
    /// The epoch's validator-set root.
    pub validator_set_root: Hash,
    /// The epoch's cert profile id.
    pub profile_id: String,
}

/// One validator's part of a validator-set root ([`validator_set_root`]).
#[derive(Clone, Copy, Debug)]
pub struct SetRootEntry<'a> {
    /// Its BLS public key, compressed G1 (48 bytes).
    pub bls_public_key: &'a [u8],
    /// Its ML-DSA-65 identity public key (1952 bytes).
    pub identity_key: &'a [u8],
    /// Its SLH-DSA public key (48 bytes).
    pub slhdsa_public_key: &'a [u8],
    /// Its stake.
    pub stake: u64,
}

/// A validator set's root, which the finalize votes of its epochs bind inside μ
/// ([`EpochDomain::validator_set_root`]): `tagged_hash("QUASAR-VALIDATOR-SET-v1", [per
/// validator, in index order: BLS public key, ML-DSA-65 public key, SLH-DSA public key, stake
/// (8 bytes LE)])`. The genesis file's sets and the sets the validator registry gives
/// (`quasar_app::EpochSet`) use this one definition. 32 bytes; never fails.
pub fn validator_set_root<'a>(members: impl IntoIterator<Item = SetRootEntry<'a>>) -> Hash {
    let mut parts: Vec<Vec<u8>> = Vec::new();
    for m in members {
        parts.push(m.bls_public_key.to_vec());
        parts.push(m.identity_key.to_vec());
        parts.push(m.slhdsa_public_key.to_vec());
        parts.push(m.stake.to_le_bytes().to_vec());
    }
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    tagged_hash("QUASAR-VALIDATOR-SET-v1", &refs)
}

/// The round digest μ of block `block` at `height`, finalized in `view` of `epoch` on
/// `chain_id` (docs/architecture.md §3): TupleHash256 (NIST SP 800-185 §5.2), customization
/// [`ROUND_DIGEST_CUSTOMIZATION`], over the tuple (chain_id, epoch, height, view as 8-byte
/// little-endian strings; the validator-set root; the block hash; the profile id bytes).
/// 32 bytes; never fails.
pub fn round_digest(
    chain_id: u64,
    epoch: u64,
    height: u64,
    view: u64,
    block: &Hash,
    domain: &EpochDomain,
) -> Hash {
    let mut h = TupleHash256::new(ROUND_DIGEST_CUSTOMIZATION);
    for value in [chain_id, epoch, height, view] {
        h.part(&value.to_le_bytes());
    }
    h.part(&domain.validator_set_root);
    h.part(block);
    h.part(domain.profile_id.as_bytes());
    h.finalize()
}

/// The exact bytes a validator signs for a vote (BLS, docs/architecture.md §4).
///
/// - Finalize: the round digest μ ([`round_digest`], 32 bytes), so a finalization is the BLS leg
///   of the block's QuasarCert.
/// - Notarize and nullify: [`VOTE_SIGNING_MESSAGE_LEN`] = 79 bytes,
///   `"QUASAR-VOTE-v1" (14 ASCII bytes) ‖ kind (u8) ‖ chain_id ‖ epoch ‖ view ‖ height (u64 LE
///   each) ‖ block (32)`.
///
/// Each form is fixed-length and the two lengths differ, so no message of one kind is a
/// message of another. The signer index is not signed (it is implied by the key).
pub fn vote_signing_message(
    kind: VoteKind,
    chain_id: u64,
    epoch: u64,
    view: u64,
    height: u64,
    block: &Hash,
    domain: &EpochDomain,
) -> Vec<u8> {
    if kind == VoteKind::Finalize {
        return round_digest(chain_id, epoch, height, view, block, domain).to_vec();
    }
    let mut out = Vec::with_capacity(VOTE_SIGNING_MESSAGE_LEN);
    out.extend_from_slice(VOTE_TAG);
    out.push(kind as u8);
    for value in [chain_id, epoch, view, height] {
        out.extend_from_slice(&value.to_le_bytes());
    }
    out.extend_from_slice(block);
    out
}

// ---------------------------------------------------------------------------------------------
// BlockHeader and Proposal
// ---------------------------------------------------------------------------------------------

/// The header of a block; [`BlockHeader::hash`] is the block's identity.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BlockHeader {
    /// Chain identifier.
    pub chain_id: u64,
    /// Epoch of the validator set that decides this block.
    pub epoch: u64,
    /// View in which the block is proposed.
    pub view: u64,
    /// Height (genesis = 0).
    pub height: u64,
    /// View of the parent block.
    pub parent_view: u64,
    /// Hash of the parent block.
    pub parent: Hash,
    /// Validator index of the proposer in the epoch's set.
    pub proposer: u32,
    /// Proposer's wall clock, microseconds since the Unix epoch.
    pub timestamp_us: u64,
    /// [`payload_root`] of the block's transactions.
    pub payload_root: Hash,
    /// The application's state root after executing this block on its parent's state (the
    /// node's `Application`; docs/architecture.md §11). Consensus only carries it: a validator
    /// notarizes a block only when its own execution gives this root.
    pub state_root: Hash,
}

impl BlockHeader {
    /// The block hash: `tagged_hash("QUASAR-BLOCK-v2", parts)` where `parts` are, in declaration
    /// order, `chain_id, epoch, view, height, parent_view` (u64 LE, 8 bytes each), `parent` (32),
    /// `proposer` (u32 LE, 4), `timestamp_us` (u64 LE, 8), `payload_root` (32), `state_root` (32).
    pub fn hash(&self) -> Hash {
        tagged_hash(
            BLOCK_HASH_TAG,
            &[
                &self.chain_id.to_le_bytes(),
                &self.epoch.to_le_bytes(),
                &self.view.to_le_bytes(),
                &self.height.to_le_bytes(),
                &self.parent_view.to_le_bytes(),
                &self.parent,
                &self.proposer.to_le_bytes(),
                &self.timestamp_us.to_le_bytes(),
                &self.payload_root,
                &self.state_root,
            ],
        )
    }

    fn write(&self, b: &mut Builder, at: Slot) -> Result<(), WireError> {
        b.put_u64(at, bh::CHAIN_ID, self.chain_id)?;
        b.put_u64(at, bh::EPOCH, self.epoch)?;
        b.put_u64(at, bh::VIEW, self.view)?;
        b.put_u64(at, bh::HEIGHT, self.height)?;
        b.put_u64(at, bh::PARENT_VIEW, self.parent_view)?;
        b.put_u64(at, bh::TIMESTAMP_US, self.timestamp_us)?;
        b.put(at, bh::PARENT, &self.parent)?;
        b.put(at, bh::PAYLOAD_ROOT, &self.payload_root)?;
        b.put(at, bh::STATE_ROOT, &self.state_root)?;
        b.put_u32(at, bh::PROPOSER, self.proposer)
    }

    fn read(o: &Object<'_>) -> Result<Self, WireError> {
        Ok(Self {
            chain_id: o.u64(bh::CHAIN_ID)?,
            epoch: o.u64(bh::EPOCH)?,
            view: o.u64(bh::VIEW)?,
            height: o.u64(bh::HEIGHT)?,
            parent_view: o.u64(bh::PARENT_VIEW)?,
            parent: *o.array(bh::PARENT)?,
            proposer: o.u32(bh::PROPOSER)?,
            timestamp_us: o.u64(bh::TIMESTAMP_US)?,
            payload_root: *o.array(bh::PAYLOAD_ROOT)?,
            state_root: *o.array(bh::STATE_ROOT)?,
        })
    }
}

/// A leader's block proposal (Photon, docs/architecture.md §2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proposal {
    /// The block header.
    pub header: BlockHeader,
    /// The block's transactions, opaque bytes, in order.
    pub txs: Vec<Vec<u8>>,
    /// The proposer's notarize vote signature on the block (96-byte BLS G2), i.e. over
    /// `vote_signing_message(Notarize, chain_id, epoch, view, height, header.hash())`.
    pub signature: [u8; SIGNATURE_LEN],
}

impl Proposal {
    /// Encodes as a ZAP message of type [`MessageType::Proposal`].
    ///
    /// Errors: [`WireError::MessageTooLarge`] when the message would exceed `u32::MAX` bytes.
    pub fn encode(&self) -> Result<Vec<u8>, WireError> {
        let (mut b, root) = Builder::new(MessageType::Proposal as u8, pr::SIZE)?;
        let header = b.put_object(root, pr::HEADER, bh::SIZE)?;
        self.header.write(&mut b, header)?;
        b.put(root, pr::SIGNATURE, &self.signature)?;
        b.put_bytes_list(root, pr::TXS, &self.txs)?;
        b.finish()
    }
}

/// A validated, zero-copy view of an encoded [`Proposal`].
#[derive(Clone, Debug)]
pub struct ProposalRef<'a> {
    header: BlockHeader,
    txs: BytesList<'a>,
    signature: &'a [u8; SIGNATURE_LEN],
}

impl<'a> ProposalRef<'a> {
    /// Validates `buf` as a Proposal message.
    ///
    /// Errors: any header error (see [`crate::zap::read_header`]),
    /// [`WireError::UnknownMessageType`], [`WireError::WrongMessageType`],
    /// [`WireError::RootOutOfBounds`], [`WireError::PointerOutOfBounds`] (header object, tx list or
    /// a transaction outside the message), [`WireError::LengthOverflow`].
    pub fn parse(buf: &'a [u8]) -> Result<Self, WireError> {
        Self::from_root(&open(buf, MessageType::Proposal, pr::SIZE)?)
    }

    fn from_root(root: &Object<'a>) -> Result<Self, WireError> {
        Ok(Self {
            header: BlockHeader::read(&root.object(pr::HEADER, bh::SIZE)?)?,
            txs: root.bytes_list(pr::TXS)?,
            signature: root.array(pr::SIGNATURE)?,
        })
    }

    /// The block header (copied; 148 bytes of fixed fields).
    pub fn header(&self) -> BlockHeader {
        self.header.clone()
    }

    /// The transactions in order, borrowed from the buffer.
    pub fn txs(&self) -> BytesIter<'a> {
        self.txs.iter()
    }

    /// Number of transactions.
    pub fn tx_count(&self) -> usize {
        self.txs.len()
    }

    /// The proposer's notarize signature (96 bytes), borrowed.
    pub fn signature(&self) -> &'a [u8; SIGNATURE_LEN] {
        self.signature
    }

    /// Copies into an owned [`Proposal`].
    pub fn to_owned(&self) -> Proposal {
        Proposal {
            header: self.header(),
            txs: self.txs().map(<[u8]>::to_vec).collect(),
            signature: *self.signature,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Vote
// ---------------------------------------------------------------------------------------------

/// One validator's vote (Wave: notarize; Focus: finalize; nullify on timeout).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vote {
    /// What the vote endorses.
    pub kind: VoteKind,
    /// Chain identifier.
    pub chain_id: u64,
    /// Epoch of the signer's validator set.
    pub epoch: u64,
    /// View voted on.
    pub view: u64,
    /// Height of the block voted on.
    pub height: u64,
    /// Hash of the block voted on ([`BlockHeader::hash`]); all-zero for nullify.
    pub block: Hash,
    /// Signer's validator index in the epoch's set.
    pub signer: u32,
    /// BLS signature (96-byte G2) over [`Vote::signing_message`].
    pub signature: [u8; SIGNATURE_LEN],
}

impl Vote {
    /// The bytes the signer signs; see [`vote_signing_message`].
    pub fn signing_message(&self, domain: &EpochDomain) -> Vec<u8> {
        vote_signing_message(
            self.kind,
            self.chain_id,
            self.epoch,
            self.view,
            self.height,
            &self.block,
            domain,
        )
    }

    /// Encodes as a ZAP message of type [`MessageType::Vote`] (fixed 181 bytes).
    ///
    /// Errors: none in practice; the signature mirrors the other encoders.
    pub fn encode(&self) -> Result<Vec<u8>, WireError> {
        let (mut b, root) = Builder::new(MessageType::Vote as u8, vo::SIZE)?;
        b.put_u64(root, vo::CHAIN_ID, self.chain_id)?;
        b.put_u64(root, vo::EPOCH, self.epoch)?;
        b.put_u64(root, vo::VIEW, self.view)?;
        b.put_u64(root, vo::HEIGHT, self.height)?;
        b.put(root, vo::BLOCK, &self.block)?;
        b.put(root, vo::SIGNATURE, &self.signature)?;
        b.put_u32(root, vo::SIGNER, self.signer)?;
        b.put_u8(root, vo::KIND, self.kind as u8)?;
        b.finish()
    }
}

/// A validated, zero-copy view of an encoded [`Vote`].
#[derive(Clone, Debug)]
pub struct VoteRef<'a> {
    kind: VoteKind,
    chain_id: u64,
    epoch: u64,
    view: u64,
    height: u64,
    block: &'a Hash,
    signer: u32,
    signature: &'a [u8; SIGNATURE_LEN],
}

impl<'a> VoteRef<'a> {
    /// Validates `buf` as a Vote message.
    ///
    /// Errors: header errors, [`WireError::UnknownMessageType`], [`WireError::WrongMessageType`],
    /// [`WireError::RootOutOfBounds`], [`WireError::UnknownVoteKind`].
    pub fn parse(buf: &'a [u8]) -> Result<Self, WireError> {
        Self::from_root(&open(buf, MessageType::Vote, vo::SIZE)?)
    }

    fn from_root(root: &Object<'a>) -> Result<Self, WireError> {
        Ok(Self {
            kind: VoteKind::try_from(root.u8(vo::KIND)?)?,
            chain_id: root.u64(vo::CHAIN_ID)?,
            epoch: root.u64(vo::EPOCH)?,
            view: root.u64(vo::VIEW)?,
            height: root.u64(vo::HEIGHT)?,
            block: root.array(vo::BLOCK)?,
            signer: root.u32(vo::SIGNER)?,
            signature: root.array(vo::SIGNATURE)?,
        })
    }

    /// Vote kind.
    pub fn kind(&self) -> VoteKind {
        self.kind
    }
    /// Chain identifier.
    pub fn chain_id(&self) -> u64 {
        self.chain_id
    }
    /// Epoch.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }
    /// View.
    pub fn view(&self) -> u64 {
        self.view
    }
    /// Height.
    pub fn height(&self) -> u64 {
        self.height
    }
    /// Block hash (32 bytes), borrowed.
    pub fn block(&self) -> &'a Hash {
        self.block
    }
    /// Signer's validator index.
    pub fn signer(&self) -> u32 {
        self.signer
    }
    /// BLS signature (96 bytes), borrowed.
    pub fn signature(&self) -> &'a [u8; SIGNATURE_LEN] {
        self.signature
    }
    /// The bytes the signer signed; see [`vote_signing_message`].
    pub fn signing_message(&self, domain: &EpochDomain) -> Vec<u8> {
        vote_signing_message(
            self.kind,
            self.chain_id,
            self.epoch,
            self.view,
            self.height,
            self.block,
            domain,
        )
    }
    /// Copies into an owned [`Vote`].
    pub fn to_owned(&self) -> Vote {
        Vote {
            kind: self.kind,
            chain_id: self.chain_id,
            epoch: self.epoch,
            view: self.view,
            height: self.height,
            block: *self.block,
            signer: self.signer,
            signature: *self.signature,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Certificate
// ---------------------------------------------------------------------------------------------

/// A quorum certificate: a BLS aggregate of the votes of the validators in `signers`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Certificate {
    /// What the certificate proves.
    pub kind: CertificateKind,
    /// Chain identifier.
    pub chain_id: u64,
    /// Epoch of the signers' validator set.
    pub epoch: u64,
    /// View.
    pub view: u64,
    /// Height of the certified block.
    pub height: u64,
    /// Hash of the certified block; all-zero for a nullification.
    pub block: Hash,
    /// Signer bitmap: validator `i` signed iff bit `i % 8` (LSB first) of byte `i / 8` is set.
    /// Length is not constrained by decoding; the verifier checks it against the validator set.
    pub signers: Vec<u8>,
    /// BLS aggregate signature (96-byte G2) over [`Certificate::signing_message`].
    pub signature: [u8; SIGNATURE_LEN],
}

impl Certificate {
    /// The bytes each signer signed: [`vote_signing_message`] with `kind.vote_kind()`.
    pub fn signing_message(&self, domain: &EpochDomain) -> Vec<u8> {
        vote_signing_message(
            self.kind.vote_kind(),
            self.chain_id,
            self.epoch,
            self.view,
            self.height,
            &self.block,
            domain,
        )
    }

    /// Encodes as a ZAP message of type [`MessageType::Certificate`].
    ///
    /// Errors: [`WireError::MessageTooLarge`] when the bitmap does not fit in a message.
    pub fn encode(&self) -> Result<Vec<u8>, WireError> {
        let (mut b, root) = Builder::new(MessageType::Certificate as u8, ce::SIZE)?;
        b.put_u64(root, ce::CHAIN_ID, self.chain_id)?;
        b.put_u64(root, ce::EPOCH, self.epoch)?;
        b.put_u64(root, ce::VIEW, self.view)?;
        b.put_u64(root, ce::HEIGHT, self.height)?;
        b.put(root, ce::BLOCK, &self.block)?;
        b.put(root, ce::SIGNATURE, &self.signature)?;
        b.put_u8(root, ce::KIND, self.kind as u8)?;
        b.put_bytes(root, ce::SIGNERS, &self.signers)?;
        b.finish()
    }
}

/// A validated, zero-copy view of an encoded [`Certificate`].
#[derive(Clone, Debug)]
pub struct CertificateRef<'a> {
    kind: CertificateKind,
    chain_id: u64,
    epoch: u64,
    view: u64,
    height: u64,
    block: &'a Hash,
    signers: &'a [u8],
    signature: &'a [u8; SIGNATURE_LEN],
}

impl<'a> CertificateRef<'a> {
    /// Validates `buf` as a Certificate message.
    ///
    /// Errors: header errors, [`WireError::UnknownMessageType`], [`WireError::WrongMessageType`],
    /// [`WireError::RootOutOfBounds`], [`WireError::UnknownCertificateKind`],
    /// [`WireError::PointerOutOfBounds`] (bitmap outside the message).
    pub fn parse(buf: &'a [u8]) -> Result<Self, WireError> {
        Self::from_root(&open(buf, MessageType::Certificate, ce::SIZE)?)
    }

    fn from_root(root: &Object<'a>) -> Result<Self, WireError> {
        Ok(Self {
            kind: CertificateKind::try_from(root.u8(ce::KIND)?)?,
            chain_id: root.u64(ce::CHAIN_ID)?,
            epoch: root.u64(ce::EPOCH)?,
            view: root.u64(ce::VIEW)?,
            height: root.u64(ce::HEIGHT)?,
            block: root.array(ce::BLOCK)?,
            signers: root.bytes(ce::SIGNERS)?,
            signature: root.array(ce::SIGNATURE)?,
        })
    }

    /// Certificate kind.
    pub fn kind(&self) -> CertificateKind {
        self.kind
    }
    /// Chain identifier.
    pub fn chain_id(&self) -> u64 {
        self.chain_id
    }
    /// Epoch.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }
    /// View.
    pub fn view(&self) -> u64 {
        self.view
    }
    /// Height.
    pub fn height(&self) -> u64 {
        self.height
    }
    /// Certified block hash (32 bytes), borrowed.
    pub fn block(&self) -> &'a Hash {
        self.block
    }
    /// Signer bitmap (bit `i % 8` of byte `i / 8` = validator `i`), borrowed.
    pub fn signers(&self) -> &'a [u8] {
        self.signers
    }
    /// BLS aggregate signature (96 bytes), borrowed.
    pub fn signature(&self) -> &'a [u8; SIGNATURE_LEN] {
        self.signature
    }
    /// The bytes each signer signed: [`vote_signing_message`] with `kind().vote_kind()`.
    pub fn signing_message(&self, domain: &EpochDomain) -> Vec<u8> {
        vote_signing_message(
            self.kind.vote_kind(),
            self.chain_id,
            self.epoch,
            self.view,
            self.height,
            self.block,
            domain,
        )
    }
    /// Copies into an owned [`Certificate`].
    pub fn to_owned(&self) -> Certificate {
        Certificate {
            kind: self.kind,
            chain_id: self.chain_id,
            epoch: self.epoch,
            view: self.view,
            height: self.height,
            block: *self.block,
            signers: self.signers.to_vec(),
            signature: *self.signature,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// TxBatch
// ---------------------------------------------------------------------------------------------

/// Client transactions gossiped between mempools.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxBatch {
    /// Transactions, opaque bytes, in order.
    pub txs: Vec<Vec<u8>>,
}

impl TxBatch {
    /// Encodes as a ZAP message of type [`MessageType::TxBatch`].
    ///
    /// Errors: [`WireError::MessageTooLarge`].
    pub fn encode(&self) -> Result<Vec<u8>, WireError> {
        let (mut b, root) = Builder::new(MessageType::TxBatch as u8, tb::SIZE)?;
        b.put_bytes_list(root, tb::TXS, &self.txs)?;
        b.finish()
    }
}

/// A validated, zero-copy view of an encoded [`TxBatch`].
#[derive(Clone, Debug)]
pub struct TxBatchRef<'a> {
    txs: BytesList<'a>,
}

impl<'a> TxBatchRef<'a> {
    /// Validates `buf` as a TxBatch message.
    ///
    /// Errors: header errors, [`WireError::UnknownMessageType`], [`WireError::WrongMessageType`],
    /// [`WireError::RootOutOfBounds`], [`WireError::PointerOutOfBounds`],
    /// [`WireError::LengthOverflow`].
    pub fn parse(buf: &'a [u8]) -> Result<Self, WireError> {
        Self::from_root(&open(buf, MessageType::TxBatch, tb::SIZE)?)
    }

    fn from_root(root: &Object<'a>) -> Result<Self, WireError> {
        Ok(Self {
            txs: root.bytes_list(tb::TXS)?,
        })
    }

    /// The transactions in order, borrowed from the buffer.
    pub fn txs(&self) -> BytesIter<'a> {
        self.txs.iter()
    }
    /// Number of transactions.
    pub fn tx_count(&self) -> usize {
        self.txs.len()
    }
    /// Copies into an owned [`TxBatch`].
    pub fn to_owned(&self) -> TxBatch {
        TxBatch {
            txs: self.txs().map(<[u8]>::to_vec).collect(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// SyncRequest
// ---------------------------------------------------------------------------------------------

/// A request for finalized blocks, by height range or by hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncRequest {
    /// First height wanted (ignored when `block` is non-zero).
    pub from_height: u64,
    /// Most blocks wanted; the responder may send fewer.
    pub max_blocks: u32,
    /// All-zero: fetch by height from `from_height`; otherwise fetch this one block by hash.
    pub block: Hash,
}

impl SyncRequest {
    /// Whether this request asks for one block by hash (`block` is not all-zero).
    pub fn is_by_hash(&self) -> bool {
        self.block != [0; 32]
    }

    /// Encodes as a ZAP message of type [`MessageType::SyncRequest`] (fixed 60 bytes).
    ///
    /// Errors: none in practice; the signature mirrors the other encoders.
    pub fn encode(&self) -> Result<Vec<u8>, WireError> {
        let (mut b, root) = Builder::new(MessageType::SyncRequest as u8, sq::SIZE)?;
        b.put_u64(root, sq::FROM_HEIGHT, self.from_height)?;
        b.put(root, sq::BLOCK, &self.block)?;
        b.put_u32(root, sq::MAX_BLOCKS, self.max_blocks)?;
        b.finish()
    }
}

/// A validated, zero-copy view of an encoded [`SyncRequest`].
#[derive(Clone, Debug)]
pub struct SyncRequestRef<'a> {
    from_height: u64,
    max_blocks: u32,
    block: &'a Hash,
}

impl<'a> SyncRequestRef<'a> {
    /// Validates `buf` as a SyncRequest message.
    ///
    /// Errors: header errors, [`WireError::UnknownMessageType`], [`WireError::WrongMessageType`],
    /// [`WireError::RootOutOfBounds`].
    pub fn parse(buf: &'a [u8]) -> Result<Self, WireError> {
        Self::from_root(&open(buf, MessageType::SyncRequest, sq::SIZE)?)
    }

    fn from_root(root: &Object<'a>) -> Result<Self, WireError> {
        Ok(Self {
            from_height: root.u64(sq::FROM_HEIGHT)?,
            max_blocks: root.u32(sq::MAX_BLOCKS)?,
            block: root.array(sq::BLOCK)?,
        })
    }

    /// First height wanted.
    pub fn from_height(&self) -> u64 {
        self.from_height
    }
    /// Most blocks wanted.
    pub fn max_blocks(&self) -> u32 {
        self.max_blocks
    }
    /// Block hash wanted (all-zero = by height), borrowed.
    pub fn block(&self) -> &'a Hash {
        self.block
    }
    /// Copies into an owned [`SyncRequest`].
    pub fn to_owned(&self) -> SyncRequest {
        SyncRequest {
            from_height: self.from_height,
            max_blocks: self.max_blocks,
            block: *self.block,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// RelayRequest
// ---------------------------------------------------------------------------------------------

/// A request for the proposals and votes that the peer holds from one signer in recent views;
/// the reply is a [`SyncResponse`] of Proposal and Vote messages. A validator asks about its own
/// key: what peers relay back shows whether another process signs with it (docs/architecture.md §2's
/// signing guard; the doppelganger check of `docs/operations.md`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelayRequest {
    /// The epoch whose validator index `signer` is.
    pub epoch: u64,
    /// Lowest view wanted.
    pub from_view: u64,
    /// The signer's index in `epoch`'s validator set.
    pub signer: u32,
}

impl RelayRequest {
    /// Encodes as a ZAP message of type [`MessageType::RelayRequest`] (fixed 36 bytes).
    ///
    /// Errors: none in practice; the signature mirrors the other encoders.
    pub fn encode(&self) -> Result<Vec<u8>, WireError> {
        let (mut b, root) = Builder::new(MessageType::RelayRequest as u8, rq::SIZE)?;
        b.put_u64(root, rq::EPOCH, self.epoch)?;
        b.put_u64(root, rq::FROM_VIEW, self.from_view)?;
        b.put_u32(root, rq::SIGNER, self.signer)?;
        b.finish()
    }
}

/// A validated, zero-copy view of an encoded [`RelayRequest`].
#[derive(Clone, Debug)]
pub struct RelayRequestRef {
    request: RelayRequest,
}

impl RelayRequestRef {
    /// Validates `buf` as a RelayRequest message.
    ///
    /// Errors: header errors, [`WireError::UnknownMessageType`], [`WireError::WrongMessageType`],
    /// [`WireError::RootOutOfBounds`].
    pub fn parse(buf: &[u8]) -> Result<Self, WireError> {
        Self::from_root(&open(buf, MessageType::RelayRequest, rq::SIZE)?)
    }

    fn from_root(root: &Object<'_>) -> Result<Self, WireError> {
        Ok(Self {
            request: RelayRequest {
                epoch: root.u64(rq::EPOCH)?,
                from_view: root.u64(rq::FROM_VIEW)?,
                signer: root.u32(rq::SIGNER)?,
            },
        })
    }

    /// Copies into an owned [`RelayRequest`].
    pub fn to_owned(&self) -> RelayRequest {
        self.request.clone()
    }
}

// ---------------------------------------------------------------------------------------------
// SyncResponse
// ---------------------------------------------------------------------------------------------

/// Blocks and certificates answering a [`SyncRequest`], or proposals and votes answering a
/// [`RelayRequest`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncResponse {
    /// Each item is a complete encoded ZAP message of type Proposal, Vote, Certificate,
    /// QuasarCert or EpochSetProof.
    pub items: Vec<Vec<u8>>,
}

/// Checks that `item` is a valid encoded Proposal, Vote, Certificate, QuasarCert or EpochSetProof (no deeper
/// nesting is allowed).
fn check_sync_item(index: usize, item: &[u8]) -> Result<(), WireError> {
    let check = || -> Result<(), WireError> {
        let reader = Reader::new(item)?;
        match MessageType::try_from(reader.message_type())? {
            MessageType::Proposal => ProposalRef::parse(item).map(drop),
            MessageType::Vote => VoteRef::parse(item).map(drop),
            MessageType::Certificate => CertificateRef::parse(item).map(drop),
            MessageType::QuasarCert => QuasarCertRef::parse(item).map(drop),
            MessageType::EpochSetProof => EpochSetProofRef::parse(item).map(drop),
            other => Err(WireError::WrongMessageType {
                expected: MessageType::Proposal as u8,
                found: other as u8,
            }),
        }
    };
    check().map_err(|reason| WireError::BadSyncItem {
        index,
        reason: Box::new(reason),
    })
}

impl SyncResponse {
    /// Encodes as a ZAP message of type [`MessageType::SyncResponse`].
    ///
    /// Errors: [`WireError::BadSyncItem`] when an item is not a valid encoded Proposal, Vote,
    /// Certificate or QuasarCert (the receiver would reject it); [`WireError::MessageTooLarge`].
    pub fn encode(&self) -> Result<Vec<u8>, WireError> {
        for (index, item) in self.items.iter().enumerate() {
            check_sync_item(index, item)?;
        }
        let (mut b, root) = Builder::new(MessageType::SyncResponse as u8, ss::SIZE)?;
        b.put_bytes_list(root, ss::ITEMS, &self.items)?;
        b.finish()
    }
}

/// A validated, zero-copy view of an encoded [`SyncResponse`]; every item has been checked to be a
/// valid Proposal, Vote, Certificate, QuasarCert or EpochSetProof message.
#[derive(Clone, Debug)]
pub struct SyncResponseRef<'a> {
    items: BytesList<'a>,
}

impl<'a> SyncResponseRef<'a> {
    /// Validates `buf` as a SyncResponse message, including every item.
    ///
    /// Errors: header errors, [`WireError::UnknownMessageType`], [`WireError::WrongMessageType`],
    /// [`WireError::RootOutOfBounds`], [`WireError::PointerOutOfBounds`],
    /// [`WireError::LengthOverflow`], [`WireError::BadSyncItem`] (an item that is not a valid
    /// Proposal, Vote, Certificate, QuasarCert or EpochSetProof; its `reason` is `WrongMessageType { expected: 1, .. }`
    /// for a valid message of another type).
    pub fn parse(buf: &'a [u8]) -> Result<Self, WireError> {
        Self::from_root(&open(buf, MessageType::SyncResponse, ss::SIZE)?)
    }

    fn from_root(root: &Object<'a>) -> Result<Self, WireError> {
        let items = root.bytes_list(ss::ITEMS)?;
        for (index, item) in items.iter().enumerate() {
            check_sync_item(index, item)?;
        }
        Ok(Self { items })
    }

    /// The encoded items in order, borrowed; decode each with [`decode`] (it succeeds).
    pub fn items(&self) -> BytesIter<'a> {
        self.items.iter()
    }
    /// Number of items.
    pub fn item_count(&self) -> usize {
        self.items.len()
    }
    /// Copies into an owned [`SyncResponse`].
    pub fn to_owned(&self) -> SyncResponse {
        SyncResponse {
            items: self.items().map(<[u8]>::to_vec).collect(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// QuasarCert
// ---------------------------------------------------------------------------------------------

/// The post-quantum certificate of the finalized block `block` at `height`, finalized in `view`
/// of `epoch` on chain `chain_id` (docs/architecture.md §3).
///
/// `bundle` lists the round digests μ (docs/architecture.md §3) of the consecutive finalized blocks the
/// certificate covers, oldest first, the last one being this block's μ. The post-quantum legs
/// (Corona, Groth16, Pulsar, Magnetar) sign or prove the bundle digest over them; the BLS leg
/// signs this block's μ. The lane crate (`quasar-lanes`) defines both digests, the profiles
/// (which legs a certificate must carry) and the leg verifiers; this crate only frames bytes.
///
/// Each leg is `(kind, body)`; bodies are opaque here and decoded by the lane of that kind.
/// Decoding accepts duplicated kinds and kinds the epoch's profile does not use (at most
/// [`MAX_LEGS`] legs): the lane verifier rejects such a certificate as malformed and names the leg.
///
/// Encoding (root object, 80 bytes; offsets in [`layout::quasar_cert`]): `chain_id` u64 @0,
/// `epoch` @8, `height` @16, `view` @24, `block` \[32\] @32, `bundle` bytes @64 (k × 32 bytes),
/// `legs` list of bytes @72 (each entry one kind byte ‖ body).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuasarCert {
    /// Chain identifier.
    pub chain_id: u64,
    /// Epoch of the validator set that finalized the block.
    pub epoch: u64,
    /// Height of the certified block.
    pub height: u64,
    /// View in which the block was finalized.
    pub view: u64,
    /// Hash of the certified block ([`BlockHeader::hash`]).
    pub block: Hash,
    /// Round digests μ of the covered blocks, oldest first, this block's last; 1..=[`MAX_BUNDLE`].
    pub bundle: Vec<Hash>,
    /// The legs, `(kind, opaque body)`, in wire order; 1..=[`MAX_LEGS`].
    pub legs: Vec<(LegKind, Vec<u8>)>,
}

/// Checks a bundle's digest count against 1..=[`MAX_BUNDLE`].
fn check_bundle_count(count: usize) -> Result<(), WireError> {
    if count == 0 || count > MAX_BUNDLE {
        return Err(WireError::BundleLength { count });
    }
    Ok(())
}

/// Checks a leg count against 1..=[`MAX_LEGS`].
fn check_leg_count(count: usize) -> Result<(), WireError> {
    if count == 0 || count > MAX_LEGS {
        return Err(WireError::LegCount { count });
    }
    Ok(())
}

/// Splits leg entry `index` into its kind byte and body.
///
/// Errors: [`WireError::EmptyLeg`] (no kind byte), [`WireError::UnknownLegKind`].
fn split_leg(index: usize, entry: &[u8]) -> Result<(LegKind, &[u8]), WireError> {
    let Some((&kind, body)) = entry.split_first() else {
        return Err(WireError::EmptyLeg { index });
    };
    Ok((LegKind::try_from(kind)?, body))
}

impl QuasarCert {
    /// Encodes as a ZAP message of type [`MessageType::QuasarCert`].
    ///
    /// Errors: [`WireError::BundleLength`] when `bundle` is empty or longer than [`MAX_BUNDLE`];
    /// [`WireError::LegCount`] when `legs` is empty or longer than [`MAX_LEGS`] (the receiver
    /// would reject either); [`WireError::MessageTooLarge`].
    pub fn encode(&self) -> Result<Vec<u8>, WireError> {
        check_bundle_count(self.bundle.len())?;
        check_leg_count(self.legs.len())?;
        let entries: Vec<Vec<u8>> = self
            .legs
            .iter()
            .map(|(kind, body)| {
                let mut entry = Vec::with_capacity(body.len().saturating_add(1));
                entry.push(*kind as u8);
                entry.extend_from_slice(body);
                entry
            })
            .collect();
        let (mut b, root) = Builder::new(MessageType::QuasarCert as u8, qc::SIZE)?;
        b.put_u64(root, qc::CHAIN_ID, self.chain_id)?;
        b.put_u64(root, qc::EPOCH, self.epoch)?;
        b.put_u64(root, qc::HEIGHT, self.height)?;
        b.put_u64(root, qc::VIEW, self.view)?;
        b.put(root, qc::BLOCK, &self.block)?;
        b.put_bytes(root, qc::BUNDLE, self.bundle.as_flattened())?;
        b.put_bytes_list(root, qc::LEGS, &entries)?;
        b.finish()
    }
}

/// A validated, zero-copy view of an encoded [`QuasarCert`]: the bundle is 1..=[`MAX_BUNDLE`]
/// whole digests and there are 1..=[`MAX_LEGS`] legs, each with a known kind. Nothing is verified.
#[derive(Clone, Debug)]
pub struct QuasarCertRef<'a> {
    chain_id: u64,
    epoch: u64,
    height: u64,
    view: u64,
    block: &'a Hash,
    bundle: &'a [u8],
    legs: BytesList<'a>,
}

impl<'a> QuasarCertRef<'a> {
    /// Validates `buf` as a QuasarCert message. Allocates nothing; work is O(legs) ≤ O(8).
    ///
    /// Errors: header errors, [`WireError::UnknownMessageType`], [`WireError::WrongMessageType`],
    /// [`WireError::RootOutOfBounds`]; then, checked on the announced lengths before the pointers
    /// are resolved, [`WireError::BundlePartialDigest`] (bundle byte length not a multiple of 32),
    /// [`WireError::BundleLength`] (0 or more than [`MAX_BUNDLE`] digests),
    /// [`WireError::LegCount`] (0 or more than [`MAX_LEGS`] legs); then
    /// [`WireError::PointerOutOfBounds`] / [`WireError::LengthOverflow`] (bundle, leg list or a
    /// leg outside the message); then per leg in order [`WireError::EmptyLeg`],
    /// [`WireError::UnknownLegKind`].
    pub fn parse(buf: &'a [u8]) -> Result<Self, WireError> {
        Self::from_root(&open(buf, MessageType::QuasarCert, qc::SIZE)?)
    }

    fn from_root(root: &Object<'a>) -> Result<Self, WireError> {
        let bundle_len = root.announced_len(qc::BUNDLE)? as usize;
        if !bundle_len.is_multiple_of(HASH_LEN) {
            return Err(WireError::BundlePartialDigest { len: bundle_len });
        }
        check_bundle_count(bundle_len / HASH_LEN)?;
        check_leg_count(root.announced_len(qc::LEGS)? as usize)?;
        let bundle = root.bytes(qc::BUNDLE)?;
        let legs = root.bytes_list(qc::LEGS)?;
        for (index, entry) in legs.iter().enumerate() {
            split_leg(index, entry)?;
        }
        Ok(Self {
            chain_id: root.u64(qc::CHAIN_ID)?,
            epoch: root.u64(qc::EPOCH)?,
            height: root.u64(qc::HEIGHT)?,
            view: root.u64(qc::VIEW)?,
            block: root.array(qc::BLOCK)?,
            bundle,
            legs,
        })
    }

    /// Chain identifier.
    pub fn chain_id(&self) -> u64 {
        self.chain_id
    }
    /// Epoch.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }
    /// Height of the certified block.
    pub fn height(&self) -> u64 {
        self.height
    }
    /// View in which the block was finalized.
    pub fn view(&self) -> u64 {
        self.view
    }
    /// Certified block hash (32 bytes), borrowed.
    pub fn block(&self) -> &'a Hash {
        self.block
    }
    /// Number of round digests in the bundle, 1..=[`MAX_BUNDLE`].
    pub fn bundle_len(&self) -> usize {
        self.bundle.len() / HASH_LEN
    }
    /// The bundle's round digests, oldest first (the last is the certified block's μ), borrowed.
    pub fn bundle(&self) -> impl ExactSizeIterator<Item = &'a Hash> + DoubleEndedIterator + Clone {
        // `chunks_exact` yields only whole 32-byte chunks, so the conversion never fails; the
        // all-zero fallback keeps the iterator exact without a panic path.
        static NO_DIGEST: Hash = [0; HASH_LEN];
        self.bundle
            .chunks_exact(HASH_LEN)
            .map(|chunk| <&Hash>::try_from(chunk).unwrap_or(&NO_DIGEST))
    }
    /// Round digest `index` of the bundle (0 = oldest), borrowed; `None` when out of range.
    pub fn bundle_get(&self, index: usize) -> Option<&'a Hash> {
        let start = index.checked_mul(HASH_LEN)?;
        let end = start.checked_add(HASH_LEN)?;
        self.bundle.get(start..end)?.try_into().ok()
    }
    /// The bundle as stored: the digests concatenated (`bundle_len() × 32` bytes), borrowed.
    pub fn bundle_bytes(&self) -> &'a [u8] {
        self.bundle
    }
    /// Number of legs, 1..=[`MAX_LEGS`].
    pub fn leg_count(&self) -> usize {
        self.legs.len()
    }
    /// The legs in wire order, `(kind, body)` with the body borrowed.
    pub fn legs(&self) -> LegIter<'a> {
        LegIter {
            entries: self.legs.iter(),
        }
    }
    /// Copies into an owned [`QuasarCert`].
    pub fn to_owned(&self) -> QuasarCert {
        QuasarCert {
            chain_id: self.chain_id,
            epoch: self.epoch,
            height: self.height,
            view: self.view,
            block: *self.block,
            bundle: self.bundle().copied().collect(),
            legs: self
                .legs()
                .map(|(kind, body)| (kind, body.to_vec()))
                .collect(),
        }
    }
}

/// Iterator over the legs of a [`QuasarCertRef`]: exactly `leg_count()` `(kind, body)` pairs in
/// wire order, bodies borrowed from the message.
#[derive(Clone, Debug)]
pub struct LegIter<'a> {
    entries: BytesIter<'a>,
}

impl<'a> Iterator for LegIter<'a> {
    type Item = (LegKind, &'a [u8]);

    fn next(&mut self) -> Option<(LegKind, &'a [u8])> {
        let entry = self.entries.next()?;
        // Every entry was split successfully when the certificate was parsed, so this succeeds.
        // The fallback keeps the length exact without a panic path, and fails closed: an empty
        // BLS body is never a valid leg.
        Some(split_leg(0, entry).unwrap_or((LegKind::Bls, &[])))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.entries.size_hint()
    }
}

impl ExactSizeIterator for LegIter<'_> {}

// ---------------------------------------------------------------------------------------------
// LaneMessage
// ---------------------------------------------------------------------------------------------

/// One validator's contribution to the post-quantum legs of the bundle of finalized blocks that
/// ends at `height` (docs/architecture.md §3; the bundle digest and the leg bodies are defined by the
/// `quasar-lanes` cert module): either a finished leg body for others to verify and attach to the
/// bundle's [`QuasarCert`] ([`LaneKind::Leg`]), or one validator's signature or threshold-round
/// message that an aggregator combines into a leg (every other [`LaneKind`]).
///
/// Lane messages travel as gossip over the authenticated transport. `sender` is the validator
/// index in `epoch`'s set; the receiver checks it against the connection's authenticated peer
/// before using the message. Decoding checks only the shape (kind, the `leg` byte rule, the
/// reserved bytes, the payload bound); the session, the payload and whether the sender may
/// contribute are the receiver's to check.
///
/// Encoding (root object, 72 bytes; offsets in [`layout::lane_message`]): `chain_id` u64 @0,
/// `epoch` @8, `height` @16, `sender` u32 @24, `kind` u8 @28, `leg` u8 @29, two reserved bytes
/// (zero) @30, `session` \[32\] @32, `payload` bytes @64 (at most [`MAX_LANE_PAYLOAD`] bytes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaneMessage {
    /// Chain identifier.
    pub chain_id: u64,
    /// Epoch of the validator set the sender belongs to.
    pub epoch: u64,
    /// The bundle's closing height: the height of the last finalized block the bundle covers
    /// (the block whose [`QuasarCert`] the legs attach to).
    pub height: u64,
    /// The sender's validator index in `epoch`'s set; the receiver checks it against the
    /// connection's authenticated peer.
    pub sender: u32,
    /// What the payload is.
    pub kind: LaneKind,
    /// For [`LaneKind::Leg`], the [`LegKind`] byte of the body (must decode as a [`LegKind`]);
    /// for every other kind 0. Any other value is refused by the encoder and the decoder
    /// ([`WireError::LaneLeg`]).
    pub leg: u8,
    /// The threshold session id for Corona and Pulsar rounds ([`LaneKind::is_threshold_round`]);
    /// all-zero for the other kinds. Not checked by the decoder: the receiver checks it against
    /// the session it runs (and that it is all-zero for other kinds).
    pub session: Hash,
    /// The leg body, signature or round message, opaque here; at most [`MAX_LANE_PAYLOAD`]
    /// bytes, possibly empty.
    pub payload: Vec<u8>,
}

/// Checks a lane message's `leg` byte against its kind and returns the leg kind it names: for
/// [`LaneKind::Leg`] the byte must be a [`LegKind`], for every other kind 0.
///
/// Errors: [`WireError::LaneLeg`].
fn check_lane_leg(kind: LaneKind, leg: u8) -> Result<Option<LegKind>, WireError> {
    match kind {
        LaneKind::Leg => LegKind::try_from(leg)
            .map(Some)
            .map_err(|_| WireError::LaneLeg { kind, leg }),
        _ if leg == 0 => Ok(None),
        _ => Err(WireError::LaneLeg { kind, leg }),
    }
}

/// Checks a lane payload length against [`MAX_LANE_PAYLOAD`].
fn check_lane_payload(len: usize) -> Result<(), WireError> {
    if len > MAX_LANE_PAYLOAD {
        return Err(WireError::PayloadTooLarge { len });
    }
    Ok(())
}

impl LaneMessage {
    /// The leg kind of a [`LaneKind::Leg`] message; `None` for every other kind (and for a `leg`
    /// byte that is not a [`LegKind`], which [`LaneMessage::encode`] refuses).
    pub fn leg_kind(&self) -> Option<LegKind> {
        check_lane_leg(self.kind, self.leg).ok().flatten()
    }

    /// Encodes as a ZAP message of type [`MessageType::Lane`] (72-byte root, then the payload).
    ///
    /// Errors: [`WireError::LaneLeg`] when `leg` does not match `kind` (not a [`LegKind`] byte for
    /// [`LaneKind::Leg`], non-zero otherwise); [`WireError::PayloadTooLarge`] when the payload
    /// exceeds [`MAX_LANE_PAYLOAD`] (the receiver would reject either; checked before anything
    /// is copied); [`WireError::MessageTooLarge`].
    pub fn encode(&self) -> Result<Vec<u8>, WireError> {
        check_lane_leg(self.kind, self.leg)?;
        check_lane_payload(self.payload.len())?;
        let (mut b, root) = Builder::new(MessageType::Lane as u8, lm::SIZE)?;
        b.put_u64(root, lm::CHAIN_ID, self.chain_id)?;
        b.put_u64(root, lm::EPOCH, self.epoch)?;
        b.put_u64(root, lm::HEIGHT, self.height)?;
        b.put_u32(root, lm::SENDER, self.sender)?;
        b.put_u8(root, lm::KIND, self.kind as u8)?;
        b.put_u8(root, lm::LEG, self.leg)?;
        b.put(root, lm::RESERVED, &[0; lm::RESERVED_LEN])?;
        b.put(root, lm::SESSION, &self.session)?;
        b.put_bytes(root, lm::PAYLOAD, &self.payload)?;
        b.finish()
    }
}

/// A validated, zero-copy view of an encoded [`LaneMessage`]: the kind is known, the `leg` byte
/// matches it, the reserved bytes are zero and the payload is at most [`MAX_LANE_PAYLOAD`] bytes
/// within the message. Nothing is verified (sender, session, payload).
#[derive(Clone, Debug)]
pub struct LaneMessageRef<'a> {
    chain_id: u64,
    epoch: u64,
    height: u64,
    sender: u32,
    kind: LaneKind,
    leg: u8,
    leg_kind: Option<LegKind>,
    session: &'a Hash,
    payload: &'a [u8],
}

impl<'a> LaneMessageRef<'a> {
    /// Validates `buf` as a lane message. Allocates nothing; work is O(1) (the payload is
    /// borrowed, not read).
    ///
    /// Errors, in the order checked: header errors, [`WireError::UnknownMessageType`],
    /// [`WireError::WrongMessageType`], [`WireError::RootOutOfBounds`];
    /// [`WireError::UnknownLaneKind`]; [`WireError::LaneLeg`] (for [`LaneKind::Leg`] a `leg` byte
    /// that is not a [`LegKind`], for any other kind a non-zero one);
    /// [`WireError::ReservedNonZero`] (bytes 30..32 of the root); [`WireError::PayloadTooLarge`]
    /// (checked on the announced length, before the pointer is followed); then
    /// [`WireError::PointerOutOfBounds`] / [`WireError::LengthOverflow`] (payload outside the
    /// message).
    pub fn parse(buf: &'a [u8]) -> Result<Self, WireError> {
        Self::from_root(&open(buf, MessageType::Lane, lm::SIZE)?)
    }

    fn from_root(root: &Object<'a>) -> Result<Self, WireError> {
        let kind = LaneKind::try_from(root.u8(lm::KIND)?)?;
        let leg = root.u8(lm::LEG)?;
        let leg_kind = check_lane_leg(kind, leg)?;
        let reserved: &[u8; lm::RESERVED_LEN] = root.array(lm::RESERVED)?;
        if reserved.iter().any(|&byte| byte != 0) {
            return Err(WireError::ReservedNonZero {
                field: lm::RESERVED,
                found: u64::from(u16::from_le_bytes(*reserved)),
            });
        }
        check_lane_payload(root.announced_len(lm::PAYLOAD)? as usize)?;
        Ok(Self {
            chain_id: root.u64(lm::CHAIN_ID)?,
            epoch: root.u64(lm::EPOCH)?,
            height: root.u64(lm::HEIGHT)?,
            sender: root.u32(lm::SENDER)?,
            kind,
            leg,
            leg_kind,
            session: root.array(lm::SESSION)?,
            payload: root.bytes(lm::PAYLOAD)?,
        })
    }

    /// Chain identifier.
    pub fn chain_id(&self) -> u64 {
        self.chain_id
    }
    /// Epoch of the sender's validator set.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }
    /// The bundle's closing height.
    pub fn height(&self) -> u64 {
        self.height
    }
    /// The sender's validator index (unverified; check it against the connection's peer).
    pub fn sender(&self) -> u32 {
        self.sender
    }
    /// What the payload is.
    pub fn kind(&self) -> LaneKind {
        self.kind
    }
    /// The raw `leg` byte: a [`LegKind`] byte for [`LaneKind::Leg`], 0 otherwise.
    pub fn leg(&self) -> u8 {
        self.leg
    }
    /// The leg kind of a [`LaneKind::Leg`] message (always `Some` for that kind); `None` for
    /// every other kind.
    pub fn leg_kind(&self) -> Option<LegKind> {
        self.leg_kind
    }
    /// The threshold session id (32 bytes), borrowed; unchecked, all-zero by convention for kinds
    /// that are not threshold rounds.
    pub fn session(&self) -> &'a Hash {
        self.session
    }
    /// The payload (leg body, signature or round message), at most [`MAX_LANE_PAYLOAD`] bytes,
    /// borrowed.
    pub fn payload(&self) -> &'a [u8] {
        self.payload
    }
    /// Copies into an owned [`LaneMessage`].
    pub fn to_owned(&self) -> LaneMessage {
        LaneMessage {
            chain_id: self.chain_id,
            epoch: self.epoch,
            height: self.height,
            sender: self.sender,
            kind: self.kind,
            leg: self.leg,
            session: *self.session,
            payload: self.payload.to_vec(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// StateRequest, StateChunk
// ---------------------------------------------------------------------------------------------

/// A request for the part of state version `version` (the state after the finalized block of
/// that height) that starts at the first tree key at or above `start`, at most about
/// `max_bytes` of entries; the reply is a [`StateChunk`]. A node restoring its state asks for
/// a version from its first key on, one chunk after the other (`quasar_app::snapshot`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateRequest {
    /// The state version (block height).
    pub version: u64,
    /// The lowest tree key wanted.
    pub start: Hash,
    /// Most bytes of entries wanted; the responder may send fewer, and sends at least one entry
    /// when one is there.
    pub max_bytes: u32,
}

impl StateRequest {
    /// Encodes as a ZAP message of type [`MessageType::StateRequest`] (fixed 60 bytes).
    ///
    /// Errors: none in practice; the signature mirrors the other encoders.
    pub fn encode(&self) -> Result<Vec<u8>, WireError> {
        let (mut b, root) = Builder::new(MessageType::StateRequest as u8, sr::SIZE)?;
        b.put_u64(root, sr::VERSION, self.version)?;
        b.put(root, sr::START, &self.start)?;
        b.put_u32(root, sr::MAX_BYTES, self.max_bytes)?;
        b.finish()
    }
}

/// A validated view of an encoded [`StateRequest`].
#[derive(Clone, Debug)]
pub struct StateRequestRef {
    request: StateRequest,
}

impl StateRequestRef {
    /// Validates `buf` as a StateRequest message.
    ///
    /// Errors: header errors, [`WireError::UnknownMessageType`], [`WireError::WrongMessageType`],
    /// [`WireError::RootOutOfBounds`].
    pub fn parse(buf: &[u8]) -> Result<Self, WireError> {
        Self::from_root(&open(buf, MessageType::StateRequest, sr::SIZE)?)
    }

    fn from_root(root: &Object<'_>) -> Result<Self, WireError> {
        Ok(Self {
            request: StateRequest {
                version: root.u64(sr::VERSION)?,
                start: *root.array(sr::START)?,
                max_bytes: root.u32(sr::MAX_BYTES)?,
            },
        })
    }

    /// Copies into an owned [`StateRequest`].
    pub fn to_owned(&self) -> StateRequest {
        self.request.clone()
    }
}

/// What a [`StateChunk`] answers.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChunkStatus {
    /// The responder does not hold the version (pruned, or not committed yet): no entries.
    NotHeld = 0,
    /// Entries of the version; more follow the last one.
    Partial = 1,
    /// Entries of the version, the last ones (possibly none, past the last key).
    Complete = 2,
}

impl TryFrom<u8> for ChunkStatus {
    type Error = WireError;

    /// Errors: [`WireError::UnknownChunkStatus`] for any byte outside 0..=2.
    fn try_from(found: u8) -> Result<Self, WireError> {
        Ok(match found {
            0 => Self::NotHeld,
            1 => Self::Partial,
            2 => Self::Complete,
            _ => return Err(WireError::UnknownChunkStatus { found }),
        })
    }
}

/// Part of a state snapshot answering a [`StateRequest`]: consecutive entries of version
/// `version` in key order and their range proof, both opaque here (`quasar_app::snapshot`
/// checks them against a certified state root).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateChunk {
    /// The state version.
    pub version: u64,
    /// Whether the responder holds the version, and whether the chunk ends it.
    pub status: ChunkStatus,
    /// Each entry: its 32-byte tree key, then its value (not empty).
    pub entries: Vec<Vec<u8>>,
    /// The range proof of the last entry (empty without entries).
    pub proof: Vec<u8>,
}

/// Checks that `entry` is a tree key followed by a non-empty value.
fn check_state_entry(index: usize, entry: &[u8]) -> Result<(), WireError> {
    if entry.len() <= HASH_LEN {
        return Err(WireError::StateEntry {
            index,
            len: entry.len(),
        });
    }
    Ok(())
}

impl StateChunk {
    /// Encodes as a ZAP message of type [`MessageType::StateChunk`] (32-byte root, then the
    /// entries and the proof).
    ///
    /// Errors: [`WireError::StateEntry`] for an entry of 32 bytes or fewer (the receiver would
    /// reject it); [`WireError::MessageTooLarge`].
    pub fn encode(&self) -> Result<Vec<u8>, WireError> {
        for (index, entry) in self.entries.iter().enumerate() {
            check_state_entry(index, entry)?;
        }
        let (mut b, root) = Builder::new(MessageType::StateChunk as u8, sc::SIZE)?;
        b.put_u64(root, sc::VERSION, self.version)?;
        b.put_bytes_list(root, sc::ENTRIES, &self.entries)?;
        b.put_bytes(root, sc::PROOF, &self.proof)?;
        b.put_u8(root, sc::STATUS, self.status as u8)?;
        b.put(root, sc::RESERVED, &[0; sc::RESERVED_LEN])?;
        b.finish()
    }
}

/// A validated, zero-copy view of an encoded [`StateChunk`]: the status is known, the
/// reserved bytes are zero and every entry is longer than a key.
#[derive(Clone, Debug)]
pub struct StateChunkRef<'a> {
    version: u64,
    status: ChunkStatus,
    entries: BytesList<'a>,
    proof: &'a [u8],
}

impl<'a> StateChunkRef<'a> {
    /// Validates `buf` as a StateChunk message, including every entry's length.
    ///
    /// Errors: header errors, [`WireError::UnknownMessageType`], [`WireError::WrongMessageType`],
    /// [`WireError::RootOutOfBounds`], [`WireError::UnknownChunkStatus`],
    /// [`WireError::ReservedNonZero`], [`WireError::PointerOutOfBounds`],
    /// [`WireError::LengthOverflow`], [`WireError::StateEntry`].
    pub fn parse(buf: &'a [u8]) -> Result<Self, WireError> {
        Self::from_root(&open(buf, MessageType::StateChunk, sc::SIZE)?)
    }

    fn from_root(root: &Object<'a>) -> Result<Self, WireError> {
        let status = ChunkStatus::try_from(root.u8(sc::STATUS)?)?;
        let reserved: &[u8; sc::RESERVED_LEN] = root.array(sc::RESERVED)?;
        if reserved.iter().any(|&byte| byte != 0) {
            let mut wide = [0u8; 8];
            wide[..sc::RESERVED_LEN].copy_from_slice(reserved);
            return Err(WireError::ReservedNonZero {
                field: sc::RESERVED,
                found: u64::from_le_bytes(wide),
            });
        }
        let entries = root.bytes_list(sc::ENTRIES)?;
        for (index, entry) in entries.iter().enumerate() {
            check_state_entry(index, entry)?;
        }
        Ok(Self {
            version: root.u64(sc::VERSION)?,
            status,
            entries,
            proof: root.bytes(sc::PROOF)?,
        })
    }

    /// The state version.
    pub fn version(&self) -> u64 {
        self.version
    }
    /// Whether the responder holds the version, and whether the chunk ends it.
    pub fn status(&self) -> ChunkStatus {
        self.status
    }
    /// The entries in order, borrowed: each a 32-byte key, then a non-empty value.
    pub fn entries(&self) -> impl Iterator<Item = (&'a Hash, &'a [u8])> {
        self.entries.iter().filter_map(|entry| {
            let (key, value) = entry.split_first_chunk::<HASH_LEN>()?;
            Some((key, value))
        })
    }
    /// Number of entries.
    pub fn entry_count(&self) -> usize {
        self.entries.len()
    }
    /// The range proof, borrowed.
    pub fn proof(&self) -> &'a [u8] {
        self.proof
    }
    /// Copies into an owned [`StateChunk`].
    pub fn to_owned(&self) -> StateChunk {
        StateChunk {
            version: self.version,
            status: self.status,
            entries: self.entries.iter().map(<[u8]>::to_vec).collect(),
            proof: self.proof.to_vec(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// EpochSetProof
// ---------------------------------------------------------------------------------------------

/// The validator set of `epoch` as a boundary block wrote it into the state, with the proof of
/// that entry against the block's state root; both opaque here (`quasar_app`'s `EpochSet` and
/// `AccountProof`). On a chain whose sets come from its registry, a checkpoint reply carries
/// the one its boundary block decides, so a node that takes the checkpoint without executing
/// the epoch still learns the set two epochs on (docs/architecture.md §11).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EpochSetProof {
    /// The epoch whose set this is.
    pub epoch: u64,
    /// The encoded set (the state entry's value).
    pub set: Vec<u8>,
    /// The encoded proof of the entry.
    pub proof: Vec<u8>,
}

impl EpochSetProof {
    /// Encodes as a ZAP message of type [`MessageType::EpochSetProof`] (24-byte root, then the
    /// set and the proof).
    ///
    /// Errors: [`WireError::MessageTooLarge`].
    pub fn encode(&self) -> Result<Vec<u8>, WireError> {
        let (mut b, root) = Builder::new(MessageType::EpochSetProof as u8, ep::SIZE)?;
        b.put_u64(root, ep::EPOCH, self.epoch)?;
        b.put_bytes(root, ep::SET, &self.set)?;
        b.put_bytes(root, ep::PROOF, &self.proof)?;
        b.finish()
    }
}

/// A validated, zero-copy view of an encoded [`EpochSetProof`].
#[derive(Clone, Debug)]
pub struct EpochSetProofRef<'a> {
    epoch: u64,
    set: &'a [u8],
    proof: &'a [u8],
}

impl<'a> EpochSetProofRef<'a> {
    /// Validates `buf` as an EpochSetProof message.
    ///
    /// Errors: header errors, [`WireError::UnknownMessageType`], [`WireError::WrongMessageType`],
    /// [`WireError::RootOutOfBounds`], [`WireError::PointerOutOfBounds`],
    /// [`WireError::LengthOverflow`].
    pub fn parse(buf: &'a [u8]) -> Result<Self, WireError> {
        Self::from_root(&open(buf, MessageType::EpochSetProof, ep::SIZE)?)
    }

    fn from_root(root: &Object<'a>) -> Result<Self, WireError> {
        Ok(Self {
            epoch: root.u64(ep::EPOCH)?,
            set: root.bytes(ep::SET)?,
            proof: root.bytes(ep::PROOF)?,
        })
    }

    /// The epoch whose set this is.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }
    /// The encoded set, borrowed.
    pub fn set(&self) -> &'a [u8] {
        self.set
    }
    /// The encoded proof, borrowed.
    pub fn proof(&self) -> &'a [u8] {
        self.proof
    }
    /// Copies into an owned [`EpochSetProof`].
    pub fn to_owned(&self) -> EpochSetProof {
        EpochSetProof {
            epoch: self.epoch,
            set: self.set.to_vec(),
            proof: self.proof.to_vec(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Any message
// ---------------------------------------------------------------------------------------------

/// Any owned message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// See [`Proposal`].
    Proposal(Proposal),
    /// See [`Vote`].
    Vote(Vote),
    /// See [`Certificate`].
    Certificate(Certificate),
    /// See [`TxBatch`].
    TxBatch(TxBatch),
    /// See [`SyncRequest`].
    SyncRequest(SyncRequest),
    /// See [`SyncResponse`].
    SyncResponse(SyncResponse),
    /// See [`QuasarCert`].
    QuasarCert(QuasarCert),
    /// See [`LaneMessage`].
    Lane(LaneMessage),
    /// See [`RelayRequest`].
    RelayRequest(RelayRequest),
    /// See [`StateRequest`].
    StateRequest(StateRequest),
    /// See [`StateChunk`].
    StateChunk(StateChunk),
    /// See [`EpochSetProof`].
    EpochSetProof(EpochSetProof),
}

impl Message {
    /// Encodes as one ZAP message (the schema's own `encode`).
    ///
    /// Errors: [`WireError::MessageTooLarge`]; [`WireError::BadSyncItem`] for a SyncResponse with
    /// an invalid item; [`WireError::BundleLength`] or [`WireError::LegCount`] for a QuasarCert
    /// whose bundle or leg list is empty or too long; [`WireError::LaneLeg`] or
    /// [`WireError::PayloadTooLarge`] for a lane message whose `leg` byte does not match its kind
    /// or whose payload exceeds [`MAX_LANE_PAYLOAD`].
    pub fn encode(&self) -> Result<Vec<u8>, WireError> {
        match self {
            Self::Proposal(m) => m.encode(),
            Self::Vote(m) => m.encode(),
            Self::Certificate(m) => m.encode(),
            Self::TxBatch(m) => m.encode(),
            Self::SyncRequest(m) => m.encode(),
            Self::SyncResponse(m) => m.encode(),
            Self::QuasarCert(m) => m.encode(),
            Self::Lane(m) => m.encode(),
            Self::RelayRequest(m) => m.encode(),
            Self::StateRequest(m) => m.encode(),
            Self::StateChunk(m) => m.encode(),
            Self::EpochSetProof(m) => m.encode(),
        }
    }

    /// The message's type byte value.
    pub fn message_type(&self) -> MessageType {
        match self {
            Self::Proposal(_) => MessageType::Proposal,
            Self::Vote(_) => MessageType::Vote,
            Self::Certificate(_) => MessageType::Certificate,
            Self::TxBatch(_) => MessageType::TxBatch,
            Self::SyncRequest(_) => MessageType::SyncRequest,
            Self::SyncResponse(_) => MessageType::SyncResponse,
            Self::QuasarCert(_) => MessageType::QuasarCert,
            Self::Lane(_) => MessageType::Lane,
            Self::RelayRequest(_) => MessageType::RelayRequest,
            Self::StateRequest(_) => MessageType::StateRequest,
            Self::StateChunk(_) => MessageType::StateChunk,
            Self::EpochSetProof(_) => MessageType::EpochSetProof,
        }
    }
}

/// Any validated message, borrowing the buffer it was decoded from.
#[derive(Clone, Debug)]
pub enum MessageRef<'a> {
    /// See [`ProposalRef`].
    Proposal(ProposalRef<'a>),
    /// See [`VoteRef`].
    Vote(VoteRef<'a>),
    /// See [`CertificateRef`].
    Certificate(CertificateRef<'a>),
    /// See [`TxBatchRef`].
    TxBatch(TxBatchRef<'a>),
    /// See [`SyncRequestRef`].
    SyncRequest(SyncRequestRef<'a>),
    /// See [`SyncResponseRef`].
    SyncResponse(SyncResponseRef<'a>),
    /// See [`QuasarCertRef`].
    QuasarCert(QuasarCertRef<'a>),
    /// See [`LaneMessageRef`].
    Lane(LaneMessageRef<'a>),
    /// See [`RelayRequestRef`].
    RelayRequest(RelayRequestRef),
    /// See [`StateRequestRef`].
    StateRequest(StateRequestRef),
    /// See [`StateChunkRef`].
    StateChunk(StateChunkRef<'a>),
    /// See [`EpochSetProofRef`].
    EpochSetProof(EpochSetProofRef<'a>),
}

impl MessageRef<'_> {
    /// The message's type.
    pub fn message_type(&self) -> MessageType {
        match self {
            Self::Proposal(_) => MessageType::Proposal,
            Self::Vote(_) => MessageType::Vote,
            Self::Certificate(_) => MessageType::Certificate,
            Self::TxBatch(_) => MessageType::TxBatch,
            Self::SyncRequest(_) => MessageType::SyncRequest,
            Self::SyncResponse(_) => MessageType::SyncResponse,
            Self::QuasarCert(_) => MessageType::QuasarCert,
            Self::Lane(_) => MessageType::Lane,
            Self::RelayRequest(_) => MessageType::RelayRequest,
            Self::StateRequest(_) => MessageType::StateRequest,
            Self::StateChunk(_) => MessageType::StateChunk,
            Self::EpochSetProof(_) => MessageType::EpochSetProof,
        }
    }

    /// Copies into an owned [`Message`].
    pub fn to_owned(&self) -> Message {
        match self {
            Self::Proposal(m) => Message::Proposal(m.to_owned()),
            Self::Vote(m) => Message::Vote(m.to_owned()),
            Self::Certificate(m) => Message::Certificate(m.to_owned()),
            Self::TxBatch(m) => Message::TxBatch(m.to_owned()),
            Self::SyncRequest(m) => Message::SyncRequest(m.to_owned()),
            Self::SyncResponse(m) => Message::SyncResponse(m.to_owned()),
            Self::QuasarCert(m) => Message::QuasarCert(m.to_owned()),
            Self::Lane(m) => Message::Lane(m.to_owned()),
            Self::RelayRequest(m) => Message::RelayRequest(m.to_owned()),
            Self::StateRequest(m) => Message::StateRequest(m.to_owned()),
            Self::StateChunk(m) => Message::StateChunk(m.to_owned()),
            Self::EpochSetProof(m) => Message::EpochSetProof(m.to_owned()),
        }
    }
}

/// Decodes and fully validates one ZAP message; never panics, on any input.
///
/// Errors, in the order checked: header errors ([`WireError::TooShort`], [`WireError::BadMagic`],
/// [`WireError::UnsupportedVersion`], [`WireError::ReservedFlags`], [`WireError::SizeMismatch`]),
/// [`WireError::UnknownMessageType`], [`WireError::RootOutOfBounds`], then the schema's own errors
/// (see each `XxxRef::parse`).
pub fn decode(buf: &[u8]) -> Result<MessageRef<'_>, WireError> {
    let reader = Reader::new(buf)?;
    let message_type = MessageType::try_from(reader.message_type())?;
    Ok(match message_type {
        MessageType::Proposal => {
            MessageRef::Proposal(ProposalRef::from_root(&reader.root(pr::SIZE)?)?)
        }
        MessageType::Vote => MessageRef::Vote(VoteRef::from_root(&reader.root(vo::SIZE)?)?),
        MessageType::Certificate => {
            MessageRef::Certificate(CertificateRef::from_root(&reader.root(ce::SIZE)?)?)
        }
        MessageType::TxBatch => {
            MessageRef::TxBatch(TxBatchRef::from_root(&reader.root(tb::SIZE)?)?)
        }
        MessageType::SyncRequest => {
            MessageRef::SyncRequest(SyncRequestRef::from_root(&reader.root(sq::SIZE)?)?)
        }
        MessageType::SyncResponse => {
            MessageRef::SyncResponse(SyncResponseRef::from_root(&reader.root(ss::SIZE)?)?)
        }
        MessageType::QuasarCert => {
            MessageRef::QuasarCert(QuasarCertRef::from_root(&reader.root(qc::SIZE)?)?)
        }
        MessageType::Lane => MessageRef::Lane(LaneMessageRef::from_root(&reader.root(lm::SIZE)?)?),
        MessageType::RelayRequest => {
            MessageRef::RelayRequest(RelayRequestRef::from_root(&reader.root(rq::SIZE)?)?)
        }
        MessageType::StateRequest => {
            MessageRef::StateRequest(StateRequestRef::from_root(&reader.root(sr::SIZE)?)?)
        }
        MessageType::StateChunk => {
            MessageRef::StateChunk(StateChunkRef::from_root(&reader.root(sc::SIZE)?)?)
        }
        MessageType::EpochSetProof => {
            MessageRef::EpochSetProof(EpochSetProofRef::from_root(&reader.root(ep::SIZE)?)?)
        }
    })
}
