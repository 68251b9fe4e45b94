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
//! What is not covered yet: the epoch-change proofs that would carry a client from the genesis
//! to a later set. A chain whose genesis file fixes its sets is checked in every epoch; on a
//! chain whose sets come from its registry (`Genesis::sets_from_registry`) the client knows
//! only epochs 0 and 1 (the genesis set), and an answer from a later epoch is refused with
//! [`LightError::EpochChangeProof`].

use crate::api::Unavailable;
use quasar_app::state::MAX_ACCOUNT_PROOF_BYTES;
use quasar_app::ValidatorStatus;
use quasar_app::{prove_account, AccountLeaf, AccountProof, Address, ProofError};
use quasar_chainspec::sealing::decode_hex_bounded;
use quasar_chainspec::Genesis;
use quasar_client::{
    AccountInfo, AccountState, HeaderInfo, RegisteredValidatorInfo, ValidatorList,
};
use quasar_consensus::{BlockLimits, Verifier, VerifyError};
use quasar_crypto::hash::Hash;
use quasar_storage::{StateStore, Store};
use quasar_wire::{decode, BlockHeader, CertificateKind, MessageRef};

/// The validator registry as of the latest executed state in `state`, as `GET /validators`
/// answers it (registrations that ended are not listed). Not proven: the client trusts the
/// node for it.
///
/// Errors: [`Unavailable::NotFound`] before the first block is executed; [`Unavailable::Failed`]
/// when the store fails or holds what does not decode.
pub fn validator_list(state: &StateStore) -> Result<ValidatorList, Unavailable> {
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
            })
        })
        .collect();
    Ok(ValidatorList { height, validators })
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
    let stored = match blocks.block_by_height(height) {
        Ok(Some(stored)) => stored,
        Ok(None) => {
            return Err(Unavailable::Pruned(format!(
                "the state here is as of block {height}, which is no longer stored"
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
    if header.state_root != root {
        return Err(Unavailable::Failed(format!(
            "block {height} claims state root {} but the state here has {}",
            hex::encode(header.state_root),
            hex::encode(root)
        )));
    }
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
        certificate_hex: hex::encode(&stored.certificate),
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
    /// The certificate is of an epoch whose set came from the chain's registry: checking it
    /// needs an epoch-change proof, which is not built yet.
    #[error(
        "the answer is final in epoch {0}, whose validator set this chain took from its \
         registry: checking it needs an epoch-change proof from the genesis, which is not \
         built yet (a client checks epochs 0 and 1 of such a chain)"
    )]
    EpochChangeProof(u64),
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
    let header = parse_header("header", &info.header)?;
    let block = header.hash();
    if info.links.len() > MAX_LINKS {
        return Err(LightError::Malformed {
            field: "links",
            problem: format!("{} links, more than {MAX_LINKS}", info.links.len()),
        });
    }
    // The block the certificate must name: the header's, or the last link's when each link
    // is the child of the one before.
    let (mut certified, mut certified_height) = (block, header.height);
    for link in &info.links {
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
    let bytes = bounded_hex(
        "certificate_hex",
        &info.certificate_hex,
        MAX_CERTIFICATE_BYTES,
    )?;
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
