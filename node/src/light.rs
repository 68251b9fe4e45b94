//! Accounts a client can check without trusting the node that answers (docs/architecture.md
//! §11): `GET /account/{address}` answers with [`account_info`], and a client checks the answer
//! with [`verify_account`] against the validator sets of a genesis it trusts.
//!
//! The chain of evidence, from the trusted genesis down to the account:
//!
//! 1. the certificate is a finalization certificate whose BLS aggregate verifies under a quorum
//!    of the epoch's validator set ([`Verifier::verify_certificate`]), so the block it names is
//!    final;
//! 2. the header's fields hash to that block ([`BlockHeader::hash`]), or to the parent of a
//!    chain of `links` (headers, each the parent of the next, heights one apart) whose last one
//!    is that block: a finalization finalizes its block's ancestors too, and a boundary block is
//!    finalized through the seals above it. So the header's state root is the one the validators
//!    executed and voted for (a validator notarizes a block only when its own execution gives
//!    the claimed root);
//! 3. the account's Merkle proof leads from the account leaf (or from its absence) to that
//!    root ([`AccountProof::verify_leaf`]).
//!
//! The sets come from the trusted genesis. A chain whose genesis file fixes its sets needs
//! nothing more. On a chain whose sets come from its registry (`Genesis::sets_from_registry`)
//! the genesis gives epochs 0 and 1, and an **epoch-change proof** carries a client further,
//! one step per epoch ([`epoch_set_info`] serves a step, [`verify_epoch_set`] checks it): the
//! set of epoch `e` is the entry that the boundary block of epoch `e − 2` wrote into the state,
//! so the step is that block's header, the certificate that finalized it (verified under epoch
//! `e − 2`'s set, known by then) and the entry's Merkle proof against the header's state root.
//! A client learns the sets in order, each from sets it has already checked; an answer from an
//! epoch it has not learned is refused with [`LightError::EpochChangeProof`]. The node keeps
//! each entry's proof when it commits the boundary (`quasar_app::prove_epoch_set`), so the
//! steps outlive state pruning, as the boundary blocks outlive block pruning.

use crate::api::Unavailable;
use quasar_app::state::MAX_ACCOUNT_PROOF_BYTES;
use quasar_app::ValidatorStatus;
use quasar_app::{prove_account, AccountLeaf, AccountProof, Address, ProofError, SetProofError};
use quasar_chainspec::sealing::decode_hex_bounded;
use quasar_chainspec::Genesis;
use quasar_client::{
    AccountInfo, AccountState, EpochSetInfo, HeaderInfo, RegisteredValidatorInfo, ValidatorList,
};
use quasar_consensus::{BlockLimits, EpochSchedule, EpochSets, Verifier, VerifyError};
use quasar_crypto::hash::Hash;
use quasar_storage::{StateStore, Store};
use quasar_wire::{decode, BlockHeader, CertificateKind, MessageRef};

/// The validator registry as of the latest executed state in `state`, as `GET /validators`
/// answers it (registrations that ended are not listed), with each validator's index in the
/// set of the next block's epoch from `sets` (split by `schedule`). Not proven: the client
/// trusts the node for it.
///
/// Errors: [`Unavailable::NotFound`] before the first block is executed; [`Unavailable::Failed`]
/// when the store fails or holds what does not decode.
pub fn validator_list(
    state: &StateStore,
    sets: &EpochSets,
    schedule: &EpochSchedule,
) -> Result<ValidatorList, Unavailable> {
    let failed = |e: &dyn std::fmt::Display| Unavailable::Failed(format!("state store: {e}"));
    let height = match state.latest() {
        Ok(Some((height, _))) if height > 0 => height,
        Ok(_) => {
            return Err(Unavailable::NotFound(
                "no block is executed here yet: the registry is the genesis set".into(),
            ))
        }
        Err(e) => return Err(failed(&e)),
    };
    let registry = quasar_app::read_registry(state, height).map_err(|e| failed(&e))?;
    let epoch = schedule.epoch_of(height.saturating_add(1));
    let members = sets.known(epoch).then(|| sets.at(epoch));
    let set_index = |key: &[u8; 48]| {
        let key = quasar_crypto::bls::PublicKey::from_bytes(key).ok()?;
        members.as_ref()?.index_of(&key)
    };
    let validators = registry
        .into_iter()
        .filter_map(|v| {
            let status = match v.record.status {
                ValidatorStatus::Active => "active",
                ValidatorStatus::Leaving { .. } => "leaving",
                ValidatorStatus::Slashed { .. } => "slashed",
                ValidatorStatus::Left => return None,
            };
            Some(RegisteredValidatorInfo {
                address: hex::encode(v.address),
                status: status.into(),
                since: v.record.status.ending_since(),
                registered_at: v.record.registered_at,
                stake: v.stake,
                bls_public_key: hex::encode(v.record.keys.bls_public_key),
                network_address: v.record.network_address.clone(),
                set_index: set_index(&v.record.keys.bls_public_key),
            })
        })
        .collect();
    Ok(ValidatorList {
        height,
        epoch,
        validators,
    })
}

/// Most `links` an answer carries or a client follows.
pub const MAX_LINKS: usize = 64;

/// Longest certificate a client decodes: a certificate's fixed fields, a signer bitmap for
/// 65,536 validators and the aggregate signature fit in 16 KiB.
pub const MAX_CERTIFICATE_BYTES: usize = 16 * 1024;

/// The account at `address` as of the latest block whose state `state` committed, with the
/// block's header and finalization certificate from `blocks` and the account's proof.
///
/// Errors: [`Unavailable::NotFound`] before the first block is executed; [`Unavailable::Pruned`]
/// when the block of the committed state is no longer stored (a node whose state stopped at a
/// checkpoint); [`Unavailable::Failed`] when either store fails or holds what does not decode.
pub fn account_info<S: Store>(
    blocks: &S,
    state: &StateStore,
    address: &Address,
) -> Result<AccountInfo, Unavailable> {
    let failed =
        |what: &str, e: &dyn std::fmt::Display| Unavailable::Failed(format!("{what}: {e}"));
    let (height, root) = match state.latest() {
        Ok(Some((height, root))) if height > 0 => (height, root),
        Ok(_) => {
            return Err(Unavailable::NotFound(
                "no block is executed here yet: the state is the genesis allocation".into(),
            ))
        }
        Err(e) => return Err(failed("state store", &e)),
    };
    let (header, links, certificate) = finalized_block(blocks, height)?;
    if header.state_root != root {
        return Err(Unavailable::Failed(format!(
            "block {height} claims state root {} but the state here has {}",
            hex::encode(header.state_root),
            hex::encode(root)
        )));
    }
    let (leaf, proof) = prove_account(state, height, address)
        .map_err(|e| failed(&format!("state at block {height}"), &e))?;
    Ok(AccountInfo {
        address: hex::encode(address),
        account: leaf.map(|leaf| AccountState {
            balance: leaf.balance,
            stake: leaf.stake,
            nonce: leaf.nonce,
            has_key: leaf.has_key,
        }),
        header: header_info(&header),
        links,
        certificate_hex: hex::encode(certificate),
        proof_hex: hex::encode(proof.to_bytes()),
    })
}

/// Finalized block `height` from `blocks`: its header, the `links` from its child up to the
/// block its stored certificate names, and that certificate's bytes.
///
/// Errors: [`Unavailable::Pruned`] when the block is no longer stored; [`Unavailable::Failed`]
/// when the store fails or holds what does not decode, or the certificate lies more than
/// [`MAX_LINKS`] blocks above it.
fn finalized_block<S: Store>(
    blocks: &S,
    height: u64,
) -> Result<(BlockHeader, Vec<HeaderInfo>, Vec<u8>), Unavailable> {
    let failed =
        |what: &str, e: &dyn std::fmt::Display| Unavailable::Failed(format!("{what}: {e}"));
    let stored = match blocks.block_by_height(height) {
        Ok(Some(stored)) => stored,
        Ok(None) => {
            return Err(Unavailable::Pruned(format!(
                "block {height} is no longer stored here"
            )))
        }
        Err(e) => return Err(failed("block store", &e)),
    };
    let Ok(MessageRef::Proposal(proposal)) = decode(&stored.block) else {
        return Err(Unavailable::Failed(format!(
            "stored block {height} does not decode"
        )));
    };
    let header = proposal.header();
    let failed_block = |what: String| Unavailable::Failed(format!("block {height}: {what}"));
    let Ok(MessageRef::Certificate(certificate)) = decode(&stored.certificate) else {
        return Err(failed_block(
            "its stored certificate does not decode".into(),
        ));
    };
    let mut links = Vec::new();
    let mut cursor = *certificate.block();
    while cursor != stored.hash {
        if links.len() == MAX_LINKS {
            return Err(failed_block(format!(
                "its certificate is more than {MAX_LINKS} blocks above it"
            )));
        }
        let bytes = match blocks.block_by_hash(&cursor) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => {
                return Err(failed_block(format!(
                    "block {} between it and its certificate is not stored",
                    hex::encode(cursor)
                )))
            }
            Err(e) => return Err(failed("block store", &e)),
        };
        let Ok(MessageRef::Proposal(link)) = decode(&bytes) else {
            return Err(failed_block("a stored descendant does not decode".into()));
        };
        let link = link.header();
        cursor = link.parent;
        links.push(header_info(&link));
    }
    links.reverse();
    Ok((header, links, stored.certificate))
}

/// The set of `epoch` on a chain whose sets come from its registry, as [`EpochSetInfo`]: the
/// boundary block of epoch `epoch − 2` from `blocks` (boundary blocks outlive retention, with
/// their certificates and seals) and the set's entry with its proof from `state`.
///
/// Errors: [`Unavailable::NotFound`] for epochs 0 and 1 (the genesis set) and for an epoch not
/// decided here yet; [`Unavailable::Pruned`], [`Unavailable::Failed`] as the stores answer.
pub fn epoch_set_info<S: Store>(
    blocks: &S,
    state: &StateStore,
    schedule: &EpochSchedule,
    epoch: u64,
) -> Result<EpochSetInfo, Unavailable> {
    if epoch < 2 || schedule.length().is_none() {
        return Err(Unavailable::NotFound(format!(
            "epoch {epoch} has the genesis set: the genesis file proves it"
        )));
    }
    if !schedule.contains(epoch) {
        return Err(Unavailable::NotFound(format!(
            "epoch {epoch} is not an epoch of this chain (at most {})",
            quasar_consensus::epoch::MAX_EPOCH
        )));
    }
    let boundary = schedule.last_height(epoch - 2);
    let failed = |e: &dyn std::fmt::Display| Unavailable::Failed(format!("state store: {e}"));
    match state.latest() {
        Ok(Some((version, _))) if version >= boundary => {}
        Ok(_) => {
            return Err(Unavailable::NotFound(format!(
                "the set of epoch {epoch} is not decided here yet: block {boundary}, which \
                 decides it, is not executed"
            )))
        }
        Err(e) => return Err(failed(&e)),
    }
    let (header, links, certificate) = finalized_block(blocks, boundary)?;
    let (set, proof) =
        quasar_app::prove_epoch_set(state, boundary, epoch).map_err(|e| failed(&e))?;
    let set = set.ok_or_else(|| {
        Unavailable::Failed(format!(
            "block {boundary} wrote no set of epoch {epoch} into the state here"
        ))
    })?;
    Ok(EpochSetInfo {
        epoch,
        header: header_info(&header),
        links,
        certificate_hex: hex::encode(certificate),
        set_hex: hex::encode(set.to_bytes()),
        proof_hex: hex::encode(proof.to_bytes()),
    })
}

/// A verifier of the certificates of the chain of `genesis`: its validator sets and schedule
/// (block limits play no part in checking a certificate; the node's defaults are set).
pub fn genesis_verifier(genesis: &Genesis) -> Verifier {
    Verifier::with_sets(
        genesis.epoch_sets(),
        genesis.hash,
        genesis.file.chain_id,
        genesis.schedule(),
        BlockLimits {
            max_txs: crate::config::DEFAULT_MAX_BLOCK_TXS,
            max_bytes: crate::runtime::MAX_BLOCK_BYTES,
        },
    )
}

/// A [`BlockHeader`] as JSON fields.
pub fn header_info(header: &BlockHeader) -> HeaderInfo {
    HeaderInfo {
        chain_id: header.chain_id,
        epoch: header.epoch,
        view: header.view,
        height: header.height,
        parent_view: header.parent_view,
        parent: hex::encode(header.parent),
        proposer: header.proposer,
        timestamp_us: header.timestamp_us,
        payload_root: hex::encode(header.payload_root),
        state_root: hex::encode(header.state_root),
    }
}

/// Why an [`AccountInfo`] is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LightError {
    /// A field that does not decode (hex of the wrong length, a certificate that is not one).
    #[error("the answer's {field} is malformed: {problem}")]
    Malformed {
        /// The field.
        field: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// The answer is about another address than the one asked for.
    #[error("asked for account {asked}, the answer is about {answered}")]
    OtherAddress {
        /// Asked.
        asked: String,
        /// Answered.
        answered: String,
    },
    /// The certificate is not a finalization of the block the header hashes to.
    #[error("the certificate does not finalize the header's block: {0}")]
    NotFinalized(String),
    /// The certificate is of an epoch whose set the client has not learned yet (a chain whose
    /// sets come from its registry): the epoch-change proof up to it is needed first
    /// ([`verify_epoch_set`]).
    #[error(
        "the answer is final in epoch {0}, whose validator set this client has not learned: \
         it needs the epoch-change proof up to that epoch first (GET /epochs/{{epoch}}/set)"
    )]
    EpochChangeProof(u64),
    /// An epoch-change step that does not prove the set it claims.
    #[error("epoch-change step for epoch {epoch}: {problem}")]
    EpochStep {
        /// The epoch whose set the step claims.
        epoch: u64,
        /// What is wrong.
        problem: String,
    },
    /// The certificate's signatures do not verify under the epoch's validator set.
    #[error("the finalization certificate does not verify: {0}")]
    Certificate(#[from] VerifyError),
    /// The account's proof does not lead to the header's state root.
    #[error(transparent)]
    Proof(#[from] ProofError),
}

/// An account a client has checked: final at `height`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifiedAccount {
    /// The account's leaf; `None`: no account exists at the address.
    pub account: Option<AccountLeaf>,
    /// Height of the finalized block whose state it is.
    pub height: u64,
    /// That block's hash.
    pub block: Hash,
    /// Its epoch.
    pub epoch: u64,
}

/// The header whose fields are `h`.
fn parse_header(field: &'static str, h: &HeaderInfo) -> Result<BlockHeader, LightError> {
    let hash = |text: &str| hash_field(field, text);
    Ok(BlockHeader {
        chain_id: h.chain_id,
        epoch: h.epoch,
        view: h.view,
        height: h.height,
        parent_view: h.parent_view,
        parent: hash(&h.parent)?,
        proposer: h.proposer,
        timestamp_us: h.timestamp_us,
        payload_root: hash(&h.payload_root)?,
        state_root: hash(&h.state_root)?,
    })
}

/// `text` as bytes: at most `max` of them, the length checked before decoding.
fn bounded_hex(field: &'static str, text: &str, max: usize) -> Result<Vec<u8>, LightError> {
    decode_hex_bounded(text, 0, max).map_err(|problem| LightError::Malformed { field, problem })
}

fn hash_field(field: &'static str, text: &str) -> Result<Hash, LightError> {
    let malformed = |problem| LightError::Malformed { field, problem };
    decode_hex_bounded(text, 32, 32)
        .map_err(malformed)?
        .try_into()
        .map_err(|_| malformed("not 32 bytes".into()))
}

/// Checks that `header` is final: its fields hash to the block that `certificate_hex` (a
/// finalization under a quorum of the epoch's set in `verifier`) names, or to the first of
/// `links` leading up to it (each the parent of the next, heights one apart). Returns the
/// header. Costs one BLS aggregate verification.
///
/// Errors: [`LightError::Malformed`], [`LightError::NotFinalized`],
/// [`LightError::EpochChangeProof`] (the epoch's set is not known to `verifier`),
/// [`LightError::Certificate`].
fn verify_final_header(
    verifier: &Verifier,
    header: &HeaderInfo,
    links: &[HeaderInfo],
    certificate_hex: &str,
) -> Result<BlockHeader, LightError> {
    let header = parse_header("header", header)?;
    let block = header.hash();
    if links.len() > MAX_LINKS {
        return Err(LightError::Malformed {
            field: "links",
            problem: format!("{} links, more than {MAX_LINKS}", links.len()),
        });
    }
    // The block the certificate must name: the header's, or the last link's when each link
    // is the child of the one before.
    let (mut certified, mut certified_height) = (block, header.height);
    for link in links {
        let link = parse_header("links", link)?;
        if link.parent != certified
            || Some(link.height) != certified_height.checked_add(1)
            || link.chain_id != header.chain_id
        {
            return Err(LightError::NotFinalized(format!(
                "link at height {} is not the child of block {} at height {certified_height}",
                link.height,
                hex::encode(certified)
            )));
        }
        (certified, certified_height) = (link.hash(), link.height);
    }
    let malformed_certificate = |problem: String| LightError::Malformed {
        field: "certificate_hex",
        problem,
    };
    let bytes = bounded_hex("certificate_hex", certificate_hex, MAX_CERTIFICATE_BYTES)?;
    let certificate = match decode(&bytes) {
        Ok(MessageRef::Certificate(c)) => c.to_owned(),
        Ok(_) => return Err(malformed_certificate("another message type".into())),
        Err(e) => return Err(malformed_certificate(e.to_string())),
    };
    if certificate.kind != CertificateKind::Finalization {
        return Err(LightError::NotFinalized(format!(
            "a {:?} certificate",
            certificate.kind
        )));
    }
    if certificate.block != certified
        || certificate.height != certified_height
        || certificate.epoch != header.epoch
        || certificate.chain_id != header.chain_id
    {
        return Err(LightError::NotFinalized(format!(
            "it names block {} at height {} (epoch {}, chain {}); the header and its links lead \
             to {} at height {} (epoch {}, chain {})",
            hex::encode(certificate.block),
            certificate.height,
            certificate.epoch,
            certificate.chain_id,
            hex::encode(certified),
            certified_height,
            header.epoch,
            header.chain_id
        )));
    }
    verifier
        .verify_certificate(certificate)
        .map_err(|e| match e {
            VerifyError::SetNotKnown(epoch) => LightError::EpochChangeProof(epoch),
            other => LightError::Certificate(other),
        })?;
    Ok(header)
}

/// Longest [`EpochSetInfo::set_hex`] a client decodes: an [`quasar_app::EpochSet`] of
/// [`quasar_app::registry::MAX_SET_VALIDATORS`] validators.
pub use quasar_app::state::MAX_EPOCH_SET_BYTES;

/// Checks `info`, one step of an epoch-change proof, and decides the set it proves into
/// `verifier`'s sets: the step must be for the first epoch `verifier` does not know, its header
/// the boundary block of the epoch two before (final under that epoch's known set), and its set
/// entry (or the entry's absence: the set before stays) proven against that header's state root.
/// The set's members, domain and root come from `genesis` ([`Genesis::registry_set`]). Returns
/// whether the set differs from the epoch before's. Costs one BLS aggregate verification, one
/// Merkle path and the set's key decompressions.
///
/// Errors: [`LightError::EpochStep`] for a step of another epoch, a header that is not that
/// boundary, a set that does not build; [`LightError::Malformed`], [`LightError::NotFinalized`],
/// [`LightError::Certificate`], [`LightError::Proof`] as for an account.
pub fn verify_epoch_set(
    verifier: &Verifier,
    genesis: &Genesis,
    info: &EpochSetInfo,
) -> Result<bool, LightError> {
    let epoch = info.epoch;
    let step = |problem: String| LightError::EpochStep { epoch, problem };
    let sets = verifier.sets();
    let next = sets.known_through().saturating_add(1);
    if epoch != next || epoch < 2 {
        return Err(step(format!(
            "the next set this client needs is epoch {next}'s"
        )));
    }
    let schedule = genesis.schedule();
    let boundary = schedule.last_height(epoch - 2);
    let header = verify_final_header(verifier, &info.header, &info.links, &info.certificate_hex)?;
    if header.height != boundary || header.epoch != epoch - 2 {
        return Err(step(format!(
            "its header is block {} of epoch {}, not the boundary block {boundary} of epoch {}",
            header.height,
            header.epoch,
            epoch - 2
        )));
    }
    let set = bounded_hex("set_hex", &info.set_hex, MAX_EPOCH_SET_BYTES)?;
    let proof = bounded_hex("proof_hex", &info.proof_hex, MAX_ACCOUNT_PROOF_BYTES)?;
    let set = quasar_app::proven_epoch_set(epoch, &set, &proof, &header.state_root).map_err(
        |e| match e {
            SetProofError::TooLong { field, max } => LightError::Malformed {
                field,
                problem: format!("longer than {max} bytes"),
            },
            SetProofError::Proof(e) => LightError::Proof(e),
            e @ (SetProofError::Set(_) | SetProofError::Missing(_)) => step(e.to_string()),
        },
    )?;
    let (members, _) = crate::application::stored_set(genesis, epoch, &set).map_err(step)?;
    sets.decide(&schedule, epoch, members)
        .map_err(|e| step(e.to_string()))
}

/// Checks `info`, a node's answer for the account at `address`, against the validator sets of
/// `verifier` (built from a genesis the client trusts): the three steps of the module docs.
/// Costs one BLS aggregate verification (two pairings) and one Merkle path.
///
/// Errors: [`LightError`] for the first step that fails.
pub fn verify_account(
    verifier: &Verifier,
    address: &Address,
    info: &AccountInfo,
) -> Result<VerifiedAccount, LightError> {
    if hash_field("address", &info.address)? != *address {
        return Err(LightError::OtherAddress {
            asked: hex::encode(address),
            answered: info.address.clone(),
        });
    }
    let header = verify_final_header(verifier, &info.header, &info.links, &info.certificate_hex)?;
    let block = header.hash();
    let proof_bytes = bounded_hex("proof_hex", &info.proof_hex, MAX_ACCOUNT_PROOF_BYTES)?;
    let proof = AccountProof::from_bytes(&proof_bytes)?;
    let account = info.account.as_ref().map(|a| AccountLeaf {
        balance: a.balance,
        stake: a.stake,
        nonce: a.nonce,
        has_key: a.has_key,
    });
    proof.verify_leaf(&header.state_root, address, account.as_ref())?;
    Ok(VerifiedAccount {
        account,
        height: header.height,
        block,
        epoch: header.epoch,
    })
}
