//! An independent safety checker for simulation runs.
//!
//! It shares no code with the consensus core, the verifier or the BLS lane: it reads what the
//! simulated nodes committed and every vote and certificate that crossed the simulated network,
//! and re-derives the safety properties from first principles, with its own bitmap parsing, its
//! own stake arithmetic and direct calls to the BLS primitive. A bug in the production checks
//! therefore cannot hide a violation here. Planted-violation tests (`node/tests/checker.rs`)
//! prove that each check fires.
//!
//! Properties (docs/architecture.md §2, §10):
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
//!    view, and no honest leader sent two different proposals in one view.
//! 6. **No evidence against the honest** — no honest node holds equivocation evidence against an
//!    honest validator (it would be a false accusation, or proof that property 5 failed).
//!
//! Votes, proposals and evidence name their signer by its index in their epoch's validator set,
//! which differs from the validator's number once the set changes. The checker maps each index
//! to the public key the epoch's set gives it and judges honesty by that key
//! ([`Observation::keys`]); a message sent by an honest validator's node counts as that
//! validator's only when its index names that validator's key (a Byzantine node may claim any
//! index, so a claim alone proves nothing).

use quasar_crypto::bls::{fast_aggregate_verify, PublicKey, Signature};
use quasar_crypto::hash::Hash;
use quasar_wire::{
    BlockHeader, Certificate, CertificateKind, EpochDomain, Vote, VoteKind, SIGNATURE_LEN,
};
use std::collections::{HashMap, HashSet};

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
    /// Each validator's BLS public key, by number (as `honest`): what a signer index of an
    /// epoch's set is mapped back to.
    pub keys: Vec<PublicKey>,
    /// The genesis hash.
    pub genesis: Hash,
    /// Committed chains of honest nodes: (node label, chain in commit order).
    pub chains: Vec<(String, Vec<ChainEntry>)>,
    /// Every certificate an honest node accepted.
    pub certificates: Vec<Certificate>,
    /// Every vote sent, with the validator whose node sent it.
    pub votes: Vec<(u32, Vote)>,
    /// The header of every proposal sent, with the validator whose node sent it.
    pub proposals: Vec<(u32, BlockHeader)>,
    /// Equivocation evidence the honest nodes hold.
    pub evidence: Vec<HeldEvidence>,
}

/// Equivocation evidence an honest node holds, as the checker needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldEvidence {
    /// The node that holds it.
    pub holder: String,
    /// The epoch of the conflicting messages (its set names the signer).
    pub epoch: u64,
    /// The accused signer's index in that epoch's set.
    pub signer: u32,
    /// The view of the conflicting messages.
    pub view: u64,
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
    /// An honest leader signed two different proposals in one view.
    HonestConflictingProposals { validator: u32, view: u64 },
    /// An honest node holds equivocation evidence against an honest validator.
    EvidenceAgainstHonest {
        holder: String,
        validator: u32,
        view: u64,
    },
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

/// The position in `obs.sets` of the set that signs `epoch`: the last one starting at or before
/// it.
fn set_index(obs: &Observation, epoch: u64) -> Option<usize> {
    obs.sets.iter().rposition(|s| s.first_epoch <= epoch)
}

/// The set that signs `epoch`.
fn set_of(obs: &Observation, epoch: u64) -> Option<&ObservedSet> {
    obs.sets.get(set_index(obs, epoch)?)
}

/// Maps a signer index of an epoch's set to the validator (by number) whose key it names.
struct Identities<'a> {
    obs: &'a Observation,
    /// For each of `obs.sets`, the validator number of each index (`None`: a key no validator
    /// has).
    numbers: Vec<Vec<Option<u32>>>,
}

impl<'a> Identities<'a> {
    fn new(obs: &'a Observation) -> Self {
        let by_key: HashMap<&PublicKey, u32> = obs.keys.iter().zip(0..).collect();
        let numbers = obs
            .sets
            .iter()
            .map(|set| {
                set.validators
                    .iter()
                    .map(|(key, _)| by_key.get(key).copied())
                    .collect()
            })
            .collect();
        Identities { obs, numbers }
    }

    /// The validator whose key signs as `index` in `epoch`'s set.
    fn validator(&self, epoch: u64, index: u32) -> Option<u32> {
        *self.numbers[set_index(self.obs, epoch)?].get(index as usize)?
    }

    /// Whether validator `number` is honest.
    fn honest(&self, number: u32) -> bool {
        self.obs
            .honest
            .get(number as usize)
            .copied()
            .unwrap_or(false)
    }

    /// The honest validator `sender` when the message it sent signs as `index` in `epoch`, i.e.
    /// is its own; `None` for a Byzantine sender or a message under another validator's index.
    fn honest_own(&self, sender: u32, epoch: u64, index: u32) -> Option<u32> {
        (self.honest(sender) && self.validator(epoch, index) == Some(sender)).then_some(sender)
    }
}

/// The signers of a certificate whose bitmap is canonical and whose aggregate verifies for them.
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
    let identities = Identities::new(obs);
    check_votes(&identities, &mut violations);
    check_proposals(&identities, &mut violations);
    check_evidence(&identities, &mut violations);
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

/// A certificate's whole content, to check each distinct certificate once.
type CertificateKey<'a> = (
    u8,
    u64,
    u64,
    u64,
    u64,
    &'a Hash,
    &'a [u8],
    &'a [u8; SIGNATURE_LEN],
);

/// Each distinct certificate is checked once: every honest node accepts the same ones, and the
/// aggregate verification is most of the checker's cost.
fn check_certificates(obs: &Observation, out: &mut Vec<Violation>) {
    let mut seen: HashMap<(u64, u8), Hash> = HashMap::new();
    let mut reported: Vec<(u64, u8)> = Vec::new();
    let mut checked: HashSet<CertificateKey> = HashSet::new();
    for c in &obs.certificates {
        let key = (
            c.kind as u8,
            c.chain_id,
            c.epoch,
            c.view,
            c.height,
            &c.block,
            c.signers.as_slice(),
            &c.signature,
        );
        if !checked.insert(key) {
            continue;
        }
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

fn check_votes(ids: &Identities, out: &mut Vec<Violation>) {
    let mut record: HashMap<(u32, u64), Signed> = HashMap::new();
    let mut reported: Vec<(u32, u64)> = Vec::new();
    for (sender, vote) in &ids.obs.votes {
        let Some(validator) = ids.honest_own(*sender, vote.epoch, vote.signer) else {
            continue;
        };
        let entry = record.entry((validator, vote.view)).or_default();
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
        if conflict && !reported.contains(&(validator, vote.view)) {
            reported.push((validator, vote.view));
            out.push(Violation::HonestEquivocation {
                validator,
                view: vote.view,
            });
        }
    }
}

fn check_proposals(ids: &Identities, out: &mut Vec<Violation>) {
    let mut proposed: HashMap<(u32, u64), Hash> = HashMap::new();
    let mut reported: Vec<(u32, u64)> = Vec::new();
    for (sender, header) in &ids.obs.proposals {
        let Some(validator) = ids.honest_own(*sender, header.epoch, header.proposer) else {
            continue;
        };
        let hash = header.hash();
        let first = *proposed.entry((validator, header.view)).or_insert(hash);
        if first != hash && !reported.contains(&(validator, header.view)) {
            reported.push((validator, header.view));
            out.push(Violation::HonestConflictingProposals {
                validator,
                view: header.view,
            });
        }
    }
}

/// Reported once per holder, accused validator and view (one equivocation often yields several
/// pieces of evidence).
fn check_evidence(ids: &Identities, out: &mut Vec<Violation>) {
    for held in &ids.obs.evidence {
        let accused = ids.validator(held.epoch, held.signer);
        if let Some(validator) = accused.filter(|&v| ids.honest(v)) {
            let violation = Violation::EvidenceAgainstHonest {
                holder: held.holder.clone(),
                validator,
                view: held.view,
            };
            if !out.contains(&violation) {
                out.push(violation);
            }
        }
    }
}
