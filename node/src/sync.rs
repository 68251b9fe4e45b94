//! Block sync: how a node that fell behind fetches finalized blocks and missing ancestors.
//!
//! A [`SyncRequest`] asks for finalized blocks from a height (at most [`MAX_SYNC_BLOCKS`]) and,
//! when `block` is nonzero, for that one block by hash (finalized or still pending). The reply is a
//! [`SyncResponse`] whose items are complete encoded messages: the proposals in height order, then
//! the finalization certificate of the last finalized block returned, so the requester can verify
//! the whole range through hash links from one certificate.

use quasar_crypto::hash::Hash;
use quasar_storage::Store;
use quasar_wire::{SyncRequest, SyncResponse};

/// Most finalized blocks one reply carries.
pub const MAX_SYNC_BLOCKS: u32 = 128;

/// Most bytes of blocks one reply carries (the frame limit is 16 MiB; one block is at most
/// 8 MiB of transactions plus its header, so a reply always has room for at least one block).
pub const MAX_SYNC_BYTES: usize = 10 * 1024 * 1024;

/// Where a node looks up what it serves.
pub trait SyncSource {
    /// The encoded proposal and encoded finalizing certificate of the finalized block at `height`.
    fn finalized_at(&self, height: u64) -> Option<(Vec<u8>, Vec<u8>)>;
    /// An encoded proposal by hash, finalized or pending.
    fn block_by_hash(&self, hash: &Hash) -> Option<Vec<u8>>;
}

/// Every block store serves sync: finalized blocks by height, any kept block by hash. A store
/// error reads as "not here" (the requester asks another peer).
impl<S: Store + ?Sized> SyncSource for S {
    fn finalized_at(&self, height: u64) -> Option<(Vec<u8>, Vec<u8>)> {
        let stored = self.block_by_height(height).ok()??;
        Some((stored.block, stored.certificate))
    }
    fn block_by_hash(&self, hash: &Hash) -> Option<Vec<u8>> {
        Store::block_by_hash(self, hash).ok()?
    }
}

/// Builds the reply to `request` from `source`: never more than [`MAX_SYNC_BLOCKS`] blocks, and
/// no more than [`MAX_SYNC_BYTES`] of them beyond the first, so the encoded reply fits a frame.
pub fn serve(request: &SyncRequest, source: &impl SyncSource) -> SyncResponse {
    let mut items = Vec::new();
    let mut bytes = 0usize;
    if request.block != [0u8; 32] {
        if let Some(block) = source.block_by_hash(&request.block) {
            bytes += block.len();
            items.push(block);
        }
    }
    let count = request.max_blocks.min(MAX_SYNC_BLOCKS);
    let first = request.from_height.max(1);
    let mut last_certificate = None;
    for height in first..first.saturating_add(u64::from(count)) {
        let Some((block, certificate)) = source.finalized_at(height) else {
            break;
        };
        let size = block.len() + certificate.len();
        if !items.is_empty() && bytes.saturating_add(size) > MAX_SYNC_BYTES {
            break;
        }
        bytes += size;
        items.push(block);
        last_certificate = Some(certificate);
    }
    if let Some(certificate) = last_certificate {
        items.push(certificate);
    }
    SyncResponse { items }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Finalized blocks of a fixed size at heights 1..=100.
    struct Blocks(usize);

    impl SyncSource for Blocks {
        fn finalized_at(&self, height: u64) -> Option<(Vec<u8>, Vec<u8>)> {
            (1..=100)
                .contains(&height)
                .then(|| (vec![height as u8; self.0], vec![0xce; 10]))
        }
        fn block_by_hash(&self, _: &Hash) -> Option<Vec<u8>> {
            None
        }
    }

    // Regression: a node with an empty store never caught up because a reply of 128 large blocks
    // exceeded the 16 MiB frame limit and was never sent. Replies are now bounded in bytes.
    #[test]
    fn replies_stay_within_the_byte_budget_but_carry_at_least_one_block() {
        let request = SyncRequest {
            from_height: 1,
            max_blocks: 128,
            block: [0; 32],
        };
        let big = serve(&request, &Blocks(4 * 1024 * 1024));
        let blocks = big.items.len() - 1;
        assert_eq!(
            blocks, 2,
            "two 4 MiB blocks fit the 10 MiB budget, a third does not"
        );
        assert_eq!(
            big.items.last(),
            Some(&vec![0xce; 10]),
            "ends with the last block's certificate"
        );
        let huge = serve(&request, &Blocks(12 * 1024 * 1024));
        assert_eq!(
            huge.items.len(),
            2,
            "one oversized block still goes out alone"
        );
        let small = serve(&request, &Blocks(100));
        assert_eq!(
            small.items.len(),
            101,
            "100 small blocks and one certificate"
        );
    }
}
