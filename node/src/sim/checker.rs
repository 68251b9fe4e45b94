//! An independent safety checker for simulation runs.
//!
//! It shares no code with the consensus core, the verifier or the BLS lane: it reads what the
//! simulated nodes committed and every vote and certificate that crossed the simulated network,
//! and re-derives the safety properties from first principles, with its own bitmap parsing, its
//! own stake arithmetic and direct calls to the BLS primitive. A bug in the production checks
//! therefore cannot hide a violation here. Planted-violation tests (`node/tests/checker.rs`)
//! prove that each check fires.
//!
//! Properties (DESIGN.md §2, §9):
//! 1. **Agreement** — no two honest nodes committed different blocks at one height.
//! 2. **Ancestor consistency** — every honest node's committed chain starts at genesis, has
//!    consecutive heights, and each block names the previous one as parent.
//! 3. **Unique certificates** — for each view at most one block is notarized and at most one is
//!    finalized, a finalization names the notarized block, and no view is both finalized and
//!    nullified.
//! 4. **Quorum** — every certificate an honest node accepted names only members, carries an
//!    aggregate that verifies for them, and is signed by more than 2/3 of the stake.
//! 5. **Honest validators never equivocate** — no honest validator sent two notarize votes for
//!    different blocks in one view, two different finalize votes, or finalize and nullify in one
//!    view.

use quasar_crypto::bls::{fast_aggregate_verify, PublicKey, Signature};
use quasar_crypto::hash::Hash;
use quasar_wire::{Certificate, CertificateKind, EpochDomain, Vote, VoteKind};
use std::collections::HashMap;

/// A committed block as the checker needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainEntry {
    /// Height.
    pub height: u64,
    /// Block hash.
    pub hash: Hash,
    /// Parent hash.
    pub parent: Hash,
    /// Reached through a checkpoint (an epoch's boundary block taken without the pruned blocks
    /// below it): the heights between the previous entry and this one were skipped, so only
    /// agreement is checked for it, not the link to the previous entry.
    pub checkpoint: bool,
}

/// The validator set of the epochs from `first_epoch` until the next set's.
#[derive(Debug, Clone, Default)]
pub struct ObservedSet {
    /// The first epoch this set signs.
    pub first_epoch: u64,
    /// Validator public keys and stakes, by index in this set.
    pub validators: Vec<(PublicKey, u64)>,
    /// The epoch domain its votes and certificates are signed under.
    pub domain: EpochDomain,
}

/// Everything the checker looks at.
#[derive(Debug, Clone, Default)]
pub struct Observation {
    /// The validator sets, by increasing first epoch (the first is epoch 0's).
    pub sets: Vec<ObservedSet>,
    /// Whether each validator (the node's number, not its index in a set) is honest.
    pub honest: Vec<bool>,
    /// The genesis hash.
    pub genesis: Hash,
    /// Committed chains of honest nodes: (node label, chain in commit order).
    pub chains: Vec<(String, Vec<ChainEntry>)>,
    /// Every certificate an honest node accepted.
    pub certificates: Vec<Certificate>,
    /// Every vote sent, with the validator whose node sent it.
    pub votes: Vec<(u32, Vote)>,
}

/// A violated property.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// Two nodes committed different blocks at one height.
    Disagreement { height: u64, a: String, b: String },
    /// A committed chain is not linked from genesis.
    BrokenChain { node: String, height: u64 },
    /// Two certificates of one kind for different blocks in one view.
    ConflictingCertificates { view: u64, kind: CertificateKind },
    /// A view was both finalized and nullified.
    FinalizedAndNullified { view: u64 },
    /// An accepted certificate signed by too little stake.
    NotAQuorum {
        view: u64,
        kind: CertificateKind,
        stake: u128,
        total: u128,
    },
    /// An accepted certificate whose bitmap or aggregate signature does not check out.
    BadCertificate { view: u64, kind: CertificateKind },
    /// An honest validator signed conflicting votes.
    HonestEquivocation { validator: u32, view: u64 },
    /// A node lost (or changed) a block at `height` after reporting it final: its store did
    /// not keep what it had flushed. Reported by the simulation, which sees the crashes.
    LostFinalized { node: String, height: u64 },
    /// A node's store could not be reopened after a crash. Reported by the simulation.
    Unrecoverable { node: String, error: String },
}

/// Signers named by a bitmap (bit i % 8 of byte i / 8), or `None` if it names a non-member.
fn signers(bitmap: &[u8], n: usize) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for (byte_index, byte) in bitmap.iter().enumerate() {
        for bit in 0..8 {
            if byte >> bit & 1 == 1 {
                let index = byte_index * 8 + bit;
                if index >= n {
                    return None;
                }
                out.push(index);
            }
        }
    }
    Some(out)
}

/// The signers of a certificate whose bitmap is canonical and whose aggregate verifies for them.
/// The set that signs `epoch`: the last one starting at or before it.
fn set_of(obs: &Observation, epoch: u64) -> Option<&ObservedSet> {
    obs.sets.iter().rev().find(|s| s.first_epoch <= epoch)
}

fn aggregate_verifies(set: &ObservedSet, c: &Certificate) -> Option<Vec<usize>> {
    let who = signers(&c.signers, set.validators.len())?;
    if who.is_empty() || c.signers.len() != set.validators.len().div_ceil(8) {
        return None;
    }
    let keys: Vec<PublicKey> = who.iter().map(|&i| set.validators[i].0).collect();
    let signature = Signature::from_bytes(&c.signature).ok()?;
    fast_aggregate_verify(&keys, &c.signing_message(&set.domain), &signature).ok()?;
    Some(who)
}

/// Runs every check; an empty list means the run was safe.
pub fn check(obs: &Observation) -> Vec<Violation> {
    let mut violations = Vec::new();
    check_chains(obs, &mut violations);
    check_certificates(obs, &mut violations);
    check_votes(obs, &mut violations);
    violations
}

fn check_chains(obs: &Observation, out: &mut Vec<Violation>) {
    let mut at_height: HashMap<u64, (Hash, &str)> = HashMap::new();
    for (node, chain) in &obs.chains {
        let (mut parent, mut height) = (obs.genesis, 0);
        for entry in chain {
            let linked = entry.height == height + 1 && entry.parent == parent;
            let skipped = entry.checkpoint && entry.height > height;
            if !(linked || skipped) {
                out.push(Violation::BrokenChain {
                    node: node.clone(),
                    height: entry.height,
                });
                break;
            }
            (parent, height) = (entry.hash, entry.height);
            match at_height.get(&entry.height) {
                Some((hash, first)) if *hash != entry.hash => {
                    out.push(Violation::Disagreement {
                        height: entry.height,
                        a: first.to_string(),
                        b: node.clone(),
                    });
                }
                Some(_) => {}
                None => {
                    at_height.insert(entry.height, (entry.hash, node));
                }
            }
        }
    }
}

fn check_certificates(obs: &Observation, out: &mut Vec<Violation>) {
    let mut seen: HashMap<(u64, u8), Hash> = HashMap::new();
    let mut reported: Vec<(u64, u8)> = Vec::new();
    for c in &obs.certificates {
        let verified =
            set_of(obs, c.epoch).and_then(|set| Some((set, aggregate_verifies(set, c)?)));
        let Some((set, who)) = verified else {
            out.push(Violation::BadCertificate {
                view: c.view,
                kind: c.kind,
            });
            continue;
        };
        let total: u128 = set.validators.iter().map(|(_, s)| u128::from(*s)).sum();
        let stake: u128 = who.iter().map(|&i| u128::from(set.validators[i].1)).sum();
        if stake * 3 <= total * 2 {
            out.push(Violation::NotAQuorum {
                view: c.view,
                kind: c.kind,
                stake,
                total,
            });
            continue;
        }
        let key = (c.view, c.kind as u8);
        match seen.get(&key) {
            Some(block) if *block != c.block && !reported.contains(&key) => {
                reported.push(key);
                out.push(Violation::ConflictingCertificates {
                    view: c.view,
                    kind: c.kind,
                });
            }
            Some(_) => {}
            None => {
                seen.insert(key, c.block);
            }
        }
    }
    for (&(view, kind), block) in &seen {
        if kind == CertificateKind::Finalization as u8 {
            if seen.contains_key(&(view, CertificateKind::Nullification as u8)) {
                out.push(Violation::FinalizedAndNullified { view });
            }
            let notarized = seen.get(&(view, CertificateKind::Notarization as u8));
            if notarized.is_some_and(|n| n != block) {
                out.push(Violation::ConflictingCertificates {
                    view,
                    kind: CertificateKind::Finalization,
                });
            }
        }
    }
}

/// What one validator signed in one view: (notarized block, finalized block, nullified).
type Signed = (Option<Hash>, Option<Hash>, bool);

fn check_votes(obs: &Observation, out: &mut Vec<Violation>) {
    let mut record: HashMap<(u32, u64), Signed> = HashMap::new();
    let mut reported: Vec<(u32, u64)> = Vec::new();
    for (sender, vote) in &obs.votes {
        let honest = obs.honest.get(*sender as usize).copied().unwrap_or(false);
        if !honest || vote.signer != *sender {
            continue;
        }
        let entry = record.entry((*sender, vote.view)).or_default();
        let conflict = match vote.kind {
            VoteKind::Notarize => entry.0.replace(vote.block).is_some_and(|b| b != vote.block),
            VoteKind::Finalize => {
                entry.2 || entry.1.replace(vote.block).is_some_and(|b| b != vote.block)
            }
            VoteKind::Nullify => {
                entry.2 = true;
                entry.1.is_some()
            }
        };
        if conflict && !reported.contains(&(*sender, vote.view)) {
            reported.push((*sender, vote.view));
            out.push(Violation::HonestEquivocation {
                validator: *sender,
                view: vote.view,
            });
        }
    }
}
