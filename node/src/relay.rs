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
//! Every reply ends with the highest certificate the peer verified: peers gossip to a
//! validator's registered address, so a copy elsewhere hears no certificate but this one, and
//! with it the view its earlier incarnation could have reached.
//!
//! Bounds: only messages within [`RELAY_VIEWS`] views of this node's own current view are kept
//! (a validly signed vote for a far-future view cannot push everyone else's out), at most
//! [`MAX_RELAY_ITEMS`] per signer, so the cache holds O(n) small entries; a proposal is kept by
//! hash and served from the block store (so it costs 32 bytes here), and a reply stops at
//! [`crate::sync::MAX_SYNC_BYTES`] of proposals. The asking side keeps at most
//! [`MAX_RELAY_ITEMS`] proposals and votes of the signer and epoch it asked about, and one
//! certificate, before it verifies anything ([`RelayCache::relevant`]).

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use crate::sync::{SyncSource, MAX_SYNC_BYTES};
use quasar_consensus::Input;
use quasar_crypto::hash::Hash;
use quasar_wire::{Message, MessageRef, RelayRequest, SyncResponse};

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

/// The proposals and votes this validator verified in recent views, per `(epoch, signer)`, and
/// the highest certificate.
#[derive(Debug, Default)]
pub struct RelayCache {
    by_signer: BTreeMap<(u64, u32), VecDeque<(u64, Relayed)>>,
    /// The view this node was in at the last record: the window's centre.
    current_view: u64,
    /// The highest certificate recorded: its view and encoding.
    certificate: Option<(u64, Vec<u8>)>,
}

impl RelayCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps `input` when it is a verified proposal, vote or certificate (other inputs are
    /// ignored) whose view is within [`RELAY_VIEWS`] of `current_view`, this node's view, and
    /// drops what fell more than [`RELAY_VIEWS`] below it.
    pub fn record(&mut self, input: &Input, current_view: u64) {
        if current_view > self.current_view {
            self.current_view = current_view;
            let floor = current_view.saturating_sub(RELAY_VIEWS);
            self.by_signer.retain(|_, entries| {
                entries.retain(|(v, _)| *v >= floor);
                !entries.is_empty()
            });
        }
        let in_window = |view: u64| {
            view.saturating_add(RELAY_VIEWS) >= self.current_view
                && view <= self.current_view.saturating_add(RELAY_VIEWS)
        };
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
            Input::Certificate(c) => {
                let view = c.certificate().view;
                let higher = self.certificate.as_ref().is_none_or(|(v, _)| view > *v);
                if higher && in_window(view) {
                    if let Ok(bytes) = Message::Certificate(c.certificate().clone()).encode() {
                        self.certificate = Some((view, bytes));
                    }
                }
                return;
            }
            _ => return,
        };
        if !in_window(view) {
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
    }

    /// The reply to `request`: the encoded proposals (looked up in `blocks`; one no longer held
    /// is skipped) and votes of `request.signer` in `request.epoch`, from `request.from_view` on,
    /// in the order they were recorded (proposals stop at [`MAX_SYNC_BYTES`]), then the highest
    /// certificate recorded.
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
        items.extend(self.certificate.as_ref().map(|(_, c)| c.clone()));
        SyncResponse { items }
    }

    /// What a validator that sent `request` takes from a reply's `items`, before verifying
    /// anything: proposals and votes of the asked signer and epoch (at most
    /// [`MAX_RELAY_ITEMS`]) and one certificate; anything else a peer put there is dropped.
    pub fn relevant<'a>(
        request: &RelayRequest,
        items: impl Iterator<Item = &'a [u8]>,
    ) -> Vec<&'a [u8]> {
        let mut signed = 0;
        let mut certificate = false;
        items
            .filter(|item| {
                let keep = match quasar_wire::decode(item) {
                    Ok(MessageRef::Proposal(p)) => {
                        let header = p.header();
                        header.epoch == request.epoch && header.proposer == request.signer
                    }
                    Ok(MessageRef::Vote(v)) => {
                        v.epoch() == request.epoch && v.signer() == request.signer
                    }
                    Ok(MessageRef::Certificate(_)) if !certificate => {
                        certificate = true;
                        return true;
                    }
                    _ => false,
                };
                if keep && signed < MAX_RELAY_ITEMS {
                    signed += 1;
                    return true;
                }
                false
            })
            .collect()
    }
}
