//! Byzantine behaviours for simulated validators.
//!
//! A Byzantine validator runs the honest core (so it stays in step with the protocol) and then
//! misbehaves on the way out: every message its core wants to send passes through
//! [`outgoing`], which may drop it, split it between peers, or add conflicting, mis-addressed
//! or forged messages signed with the validator's real key outside its signing guard. The names
//! follow the literature and commonware's `simplex/mocks`.

use quasar_crypto::bls::{SecretKey, Signature};
use quasar_lanes::bls::bitmap_from_signers;
use quasar_wire::{Certificate, EpochDomain, Message, Proposal, Vote, VoteKind};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// How a simulated validator behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Behavior {
    /// Follows the protocol.
    Honest,
    /// As leader, proposes two different blocks in one view, each to half of the peers.
    Equivocator,
    /// Notarizes two blocks in each view it votes in (its own choice and a random one).
    DoubleVoter,
    /// Signs both finalize and nullify for the views it finalizes.
    VoteAndNullify,
    /// Also sends every vote re-signed for the wrong epoch and for the wrong chain id.
    WrongDomain,
    /// Also sends certificates with non-member signers, a minority of signers, or a signer
    /// counted twice in the aggregate.
    BadCertificates,
    /// Also sends votes with corrupted signatures and votes that claim another signer.
    InvalidSignatures,
    /// Proposes to a single peer, then stays silent (no votes, no certificates).
    Withholder,
    /// Runs twice: one key on two nodes, each connected to a different half of the network.
    Twins,
}

impl Behavior {
    /// Every Byzantine behaviour, for random campaigns.
    pub const BYZANTINE: [Behavior; 8] = [
        Behavior::Equivocator,
        Behavior::DoubleVoter,
        Behavior::VoteAndNullify,
        Behavior::WrongDomain,
        Behavior::BadCertificates,
        Behavior::InvalidSignatures,
        Behavior::Withholder,
        Behavior::Twins,
    ];
}

/// Who receives a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Every other node.
    All,
    /// These node slots.
    Slots(Vec<usize>),
}

/// What a misbehaving validator knows when it sends.
pub struct Context<'a> {
    /// Its validator index.
    pub validator: u32,
    /// Its key (used outside the signing guard).
    pub key: &'a SecretKey,
    /// Number of node slots in the network.
    pub slots: usize,
    /// Its own slot.
    pub me: usize,
    /// Number of validators.
    pub validators: usize,
    /// The simulation's random source.
    pub rng: &'a mut ChaCha8Rng,
    /// The epoch domain votes are signed under.
    pub domain: &'a EpochDomain,
}

fn sign(key: &SecretKey, vote: &mut Vote, domain: &EpochDomain) {
    vote.signature = key.sign(&vote.signing_message(domain)).to_bytes();
}

fn halves(ctx: &Context<'_>) -> (Vec<usize>, Vec<usize>) {
    let others: Vec<usize> = (0..ctx.slots).filter(|&s| s != ctx.me).collect();
    let mid = others.len() / 2;
    (others[..mid].to_vec(), others[mid..].to_vec())
}

/// The messages actually sent when the core of a validator with `behavior` sends `message`.
/// The second value counts the messages that deviate from the protocol.
pub fn outgoing(
    behavior: Behavior,
    ctx: &mut Context<'_>,
    message: Message,
) -> (Vec<(Target, Message)>, u64) {
    let honest = |m| (vec![(Target::All, m)], 0);
    match (behavior, message) {
        (Behavior::Honest | Behavior::Twins, m) => honest(m),
        (Behavior::Withholder, Message::Proposal(p)) => {
            let peer = (ctx.me + 1 + ctx.rng.gen_range(0..ctx.slots - 1)) % ctx.slots;
            (vec![(Target::Slots(vec![peer]), Message::Proposal(p))], 1)
        }
        (Behavior::Withholder, _) => (Vec::new(), 1),
        (Behavior::Equivocator, Message::Proposal(p)) => {
            let twin = conflicting_proposal(ctx, &p);
            let (a, b) = halves(ctx);
            (
                vec![
                    (Target::Slots(a), Message::Proposal(p)),
                    (Target::Slots(b), Message::Proposal(twin)),
                ],
                1,
            )
        }
        (Behavior::DoubleVoter, Message::Vote(v)) if v.kind == VoteKind::Notarize => {
            let mut other = v.clone();
            other.block = ctx.rng.gen();
            sign(ctx.key, &mut other, ctx.domain);
            (
                vec![
                    (Target::All, Message::Vote(v)),
                    (Target::All, Message::Vote(other)),
                ],
                1,
            )
        }
        (Behavior::VoteAndNullify, Message::Vote(v)) if v.kind == VoteKind::Finalize => {
            let mut nullify = Vote {
                kind: VoteKind::Nullify,
                height: 0,
                block: [0; 32],
                ..v.clone()
            };
            sign(ctx.key, &mut nullify, ctx.domain);
            (
                vec![
                    (Target::All, Message::Vote(v)),
                    (Target::All, Message::Vote(nullify)),
                ],
                1,
            )
        }
        (Behavior::WrongDomain, Message::Vote(v)) => {
            let mut epoch = Vote {
                epoch: v.epoch + 1,
                ..v.clone()
            };
            sign(ctx.key, &mut epoch, ctx.domain);
            let mut chain = Vote {
                chain_id: v.chain_id + 1,
                ..v.clone()
            };
            sign(ctx.key, &mut chain, ctx.domain);
            (
                vec![
                    (Target::All, Message::Vote(v)),
                    (Target::All, Message::Vote(epoch)),
                    (Target::All, Message::Vote(chain)),
                ],
                2,
            )
        }
        (Behavior::InvalidSignatures, Message::Vote(v)) => {
            let mut corrupt = v.clone();
            corrupt.signature[5] ^= 0x40;
            let mut impostor = v.clone();
            impostor.signer = (v.signer + 1) % ctx.validators as u32;
            (
                vec![
                    (Target::All, Message::Vote(v)),
                    (Target::All, Message::Vote(corrupt)),
                    (Target::All, Message::Vote(impostor)),
                ],
                2,
            )
        }
        (Behavior::BadCertificates, Message::Vote(v)) => {
            let forged = bad_certificates(ctx, &v);
            let count = forged.len() as u64;
            let mut out = vec![(Target::All, Message::Vote(v))];
            out.extend(
                forged
                    .into_iter()
                    .map(|c| (Target::All, Message::Certificate(c))),
            );
            (out, count)
        }
        (_, m) => honest(m),
    }
}

/// The same slot with an extra transaction: a different block, signed as a second notarize.
fn conflicting_proposal(ctx: &Context<'_>, p: &Proposal) -> Proposal {
    // The same transactions a microsecond later: a second block that executes as well as the
    // first (one with a bad transaction would only be refused by execution).
    let mut twin = p.clone();
    twin.header.timestamp_us += 1;
    let hash = twin.header.hash();
    let mut vote = Vote {
        kind: VoteKind::Notarize,
        chain_id: twin.header.chain_id,
        epoch: twin.header.epoch,
        view: twin.header.view,
        height: twin.header.height,
        block: hash,
        signer: ctx.validator,
        signature: [0; 96],
    };
    sign(ctx.key, &mut vote, ctx.domain);
    twin.signature = vote.signature;
    twin
}

/// Certificates built from the validator's own vote that no honest node may accept.
fn bad_certificates(ctx: &Context<'_>, v: &Vote) -> Vec<Certificate> {
    let kind = match v.kind {
        VoteKind::Notarize => quasar_wire::CertificateKind::Notarization,
        VoteKind::Finalize => quasar_wire::CertificateKind::Finalization,
        VoteKind::Nullify => quasar_wire::CertificateKind::Nullification,
    };
    let n = ctx.validators;
    let me = ctx.validator as usize;
    let Ok(own) = Signature::from_bytes(&v.signature) else {
        return Vec::new();
    };
    let base = Certificate {
        kind,
        chain_id: v.chain_id,
        epoch: v.epoch,
        view: v.view,
        height: v.height,
        block: v.block,
        signers: Vec::new(),
        signature: v.signature,
    };
    // A minority: only our own signature.
    let minority = Certificate {
        signers: bitmap_from_signers([me], n),
        ..base.clone()
    };
    // Non-member signers: every bit of an over-long bitmap set.
    let non_member = Certificate {
        signers: vec![0xff; n.div_ceil(8) + 1],
        ..base.clone()
    };
    // Our signature counted twice, claimed as every validator's.
    let doubled = Signature::aggregate(&[own, own])
        .map(|s| s.to_bytes())
        .unwrap_or(v.signature);
    let duplicated = Certificate {
        signers: bitmap_from_signers(0..n, n),
        signature: doubled,
        ..base
    };
    vec![minority, non_member, duplicated]
}
