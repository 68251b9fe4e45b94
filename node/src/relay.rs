//! Relaying recent signed messages on request: how a validator learns whether its key signs
//! somewhere else.
//!
//! A validator never receives its own key's votes from the network: peers send votes to every
//! other validator, and a second process running with the same key (a copy on another machine,
//! a standby started by mistake) sends to the same peers and never to this one. So every
//! validator keeps, per signer, the proposals and votes it verified in the last
//! [`RELAY_VIEWS`] views ([`RelayCache`]), and answers a [`RelayRequest`] with the asked signer's
//! messages from the asked view on. A validator asks its peers about its own key
//! ([`RELAY_LISTENING_INTERVAL`] while it listens with a new signing guard, every peer; one
//! random peer every [`RELAY_INTERVAL`] afterwards) and hands what comes back, verified, to the
//! engine: while listening a view its key signed in joins the fence, and afterwards a message
//! the signing guard never recorded stops the validator with "another instance is signing with
//! this key" ([`crate::engine::Engine::handle`]). Lighthouse's doppelganger protection is the
//! model: it asks beacon nodes whether its validators were seen live before it signs.
//!
//! Bounds: at most [`MAX_RELAY_ITEMS`] messages per signer and only views within
//! [`RELAY_VIEWS`] of the highest view recorded, so the cache holds O(n) small entries; a
//! proposal is kept by hash and served from the block store (so it costs 32 bytes here), and a
//! reply stops at [`crate::sync::MAX_SYNC_BYTES`] of proposals.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use crate::consensus::Input;
use crate::sync::{SyncSource, MAX_SYNC_BYTES};
use quasar_crypto::hash::Hash;
use quasar_wire::{Message, RelayRequest, SyncResponse};

/// How many views below the highest recorded view the cache keeps (the view the network is in,
/// and the few before it that a restarted validator's earlier incarnation may have signed in).
pub const RELAY_VIEWS: u64 = 4;

/// Most messages kept (and relayed) per signer: a notarize, a finalize and a nullify per view
/// plus the leader's proposal, for [`RELAY_VIEWS`] views.
pub const MAX_RELAY_ITEMS: usize = 16;

/// How often a validator listening with a new signing guard asks every peer about its key.
pub const RELAY_LISTENING_INTERVAL: Duration = Duration::from_secs(1);

/// How often a signing validator asks one random peer about its key.
pub const RELAY_INTERVAL: Duration = Duration::from_secs(10);

/// One relayed message: an encoded vote, or a proposal by hash (served from the block store).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Relayed {
    Vote(Vec<u8>),
    Proposal(Hash),
}

/// The proposals and votes this validator verified in recent views, per `(epoch, signer)`.
#[derive(Debug, Default)]
pub struct RelayCache {
    by_signer: BTreeMap<(u64, u32), VecDeque<(u64, Relayed)>>,
    highest_view: u64,
}

impl RelayCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps `input` when it is a verified proposal or vote (other inputs are ignored), and drops
    /// what fell more than [`RELAY_VIEWS`] below the highest view recorded. A message older than
    /// that window is not kept.
    pub fn record(&mut self, input: &Input) {
        let (key, view, relayed) = match input {
            Input::Proposal(p) => {
                let header = &p.proposal().header;
                (
                    (header.epoch, header.proposer),
                    header.view,
                    Relayed::Proposal(*p.hash()),
                )
            }
            Input::Vote(v) => {
                let vote = v.vote();
                let Ok(bytes) = Message::Vote(vote.clone()).encode() else {
                    return;
                };
                ((vote.epoch, vote.signer), vote.view, Relayed::Vote(bytes))
            }
            _ => return,
        };
        if view.saturating_add(RELAY_VIEWS) < self.highest_view {
            return;
        }
        let entries = self.by_signer.entry(key).or_default();
        if entries.iter().any(|(v, r)| *v == view && *r == relayed) {
            return;
        }
        entries.push_back((view, relayed));
        if entries.len() > MAX_RELAY_ITEMS {
            entries.pop_front();
        }
        if view > self.highest_view {
            self.highest_view = view;
            let floor = view.saturating_sub(RELAY_VIEWS);
            self.by_signer.retain(|_, entries| {
                entries.retain(|(v, _)| *v >= floor);
                !entries.is_empty()
            });
        }
    }

    /// The reply to `request`: the encoded proposals (looked up in `blocks`; one no longer held
    /// is skipped) and votes of `request.signer` in `request.epoch`, from `request.from_view` on,
    /// in the order they were recorded; proposals stop at [`MAX_SYNC_BYTES`].
    pub fn serve(&self, request: &RelayRequest, blocks: &impl SyncSource) -> SyncResponse {
        let mut items = Vec::new();
        let mut bytes = 0usize;
        let entries = self.by_signer.get(&(request.epoch, request.signer));
        for (view, relayed) in entries.into_iter().flatten() {
            if *view < request.from_view {
                continue;
            }
            match relayed {
                Relayed::Vote(vote) => items.push(vote.clone()),
                Relayed::Proposal(hash) => {
                    let Some(block) = blocks.block_by_hash(hash) else {
                        continue;
                    };
                    if bytes.saturating_add(block.len()) > MAX_SYNC_BYTES {
                        continue;
                    }
                    bytes += block.len();
                    items.push(block);
                }
            }
        }
        SyncResponse { items }
    }
}
