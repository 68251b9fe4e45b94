//! Block sync: how a node that fell behind fetches finalized blocks and missing ancestors.
//!
//! A [`SyncRequest`] asks for finalized blocks from a height (at most [`MAX_SYNC_BLOCKS`]) and,
//! when `block` is nonzero, for that one block by hash (finalized or still pending). The reply is a
//! [`SyncResponse`] whose items are complete encoded messages: the proposals in height order, then
//! the finalization certificate of the last finalized block returned, so the requester can verify
//! the whole range through hash links from one certificate.

use quasar_crypto::hash::Hash;
use quasar_wire::{SyncRequest, SyncResponse};

/// Most finalized blocks one reply carries.
pub const MAX_SYNC_BLOCKS: u32 = 128;

/// Where a node looks up what it serves.
pub trait SyncSource {
    /// The encoded proposal and encoded finalizing certificate of the finalized block at `height`.
    fn finalized_at(&self, height: u64) -> Option<(Vec<u8>, Vec<u8>)>;
    /// An encoded proposal by hash, finalized or pending.
    fn block_by_hash(&self, hash: &Hash) -> Option<Vec<u8>>;
}

/// Builds the reply to `request` from `source`; never more than [`MAX_SYNC_BLOCKS`] blocks.
pub fn serve(request: &SyncRequest, source: &impl SyncSource) -> SyncResponse {
    let mut items = Vec::new();
    if request.block != [0u8; 32] {
        if let Some(block) = source.block_by_hash(&request.block) {
            items.push(block);
        }
    }
    let count = request.max_blocks.min(MAX_SYNC_BLOCKS);
    let mut last_certificate = None;
    for height in
        request.from_height.max(1)..request.from_height.max(1).saturating_add(u64::from(count))
    {
        let Some((block, certificate)) = source.finalized_at(height) else {
            break;
        };
        items.push(block);
        last_certificate = Some(certificate);
    }
    if let Some(certificate) = last_certificate {
        items.push(certificate);
    }
    SyncResponse { items }
}
