//! Block sync: how a node that fell behind fetches finalized blocks and missing ancestors.
//!
//! A [`SyncRequest`] asks for finalized blocks from a height (at most [`MAX_SYNC_BLOCKS`]) and,
//! when `block` is nonzero, for that one block by hash (finalized or still pending). The reply is a
//! [`SyncResponse`] whose items are complete encoded messages: the proposals in height order, then
//! the finalization certificate of the last finalized block returned, so the requester can verify
//! the whole range through hash links from one certificate, then the stored QuasarCerts of the
//! bundles that close within the range (oldest first, at most [`MAX_SYNC_QUASAR_BYTES`]), so a
//! node that fell behind also reaches Quasar finality for what it missed: it checks each leg
//! against its epoch's keys like a leg from gossip, and the whole certificate once its own
//! finalized blocks give the bundle.

use quasar_crypto::hash::Hash;
use quasar_storage::Store;
use quasar_wire::{SyncRequest, SyncResponse};

/// Most finalized blocks one reply carries.
pub const MAX_SYNC_BLOCKS: u32 = 128;

/// Most bytes of blocks one reply carries (the frame limit is 16 MiB; one block is at most
/// 8 MiB of transactions plus its header, so a reply always has room for at least one block).
pub const MAX_SYNC_BYTES: usize = 10 * 1024 * 1024;

/// Most bytes of QuasarCerts one reply carries beyond the blocks (a `polaris` certificate at
/// n = 100 holds 67 SLH-DSA signatures, about 2.4 MB), so blocks, their certificate and these
/// stay within the 16 MiB frame.
pub const MAX_SYNC_QUASAR_BYTES: usize = 4 * 1024 * 1024;

/// Where a node looks up what it serves.
pub trait SyncSource {
    /// The encoded proposal and encoded finalizing certificate of the finalized block at `height`.
    fn finalized_at(&self, height: u64) -> Option<(Vec<u8>, Vec<u8>)>;
    /// An encoded proposal by hash, finalized or pending.
    fn block_by_hash(&self, hash: &Hash) -> Option<Vec<u8>>;
    /// The first stored QuasarCert whose bundle closes at or above `height`: its closing height
    /// and encoding.
    fn quasar_cert_from(&self, height: u64) -> Option<(u64, Vec<u8>)>;
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
    fn quasar_cert_from(&self, height: u64) -> Option<(u64, Vec<u8>)> {
        Store::quasar_cert_from(self, height).ok()?
    }
}

/// Builds the reply to `request` from `source`: never more than [`MAX_SYNC_BLOCKS`] blocks, no
/// more than [`MAX_SYNC_BYTES`] of them beyond the first, and QuasarCerts of bundles closing in
/// the served range up to [`MAX_SYNC_QUASAR_BYTES`], so the encoded reply fits a frame.
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
    let mut last_height = None;
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
        last_height = Some(height);
    }
    if let Some(certificate) = last_certificate {
        items.push(certificate);
    }
    if let Some(last) = last_height {
        // Closing heights strictly increase and stay within the served range: at most one
        // certificate per served block.
        let mut quasar_bytes = 0usize;
        let mut next = first;
        while let Some((closing, cert)) = source.quasar_cert_from(next) {
            if closing < next
                || closing > last
                || quasar_bytes.saturating_add(cert.len()) > MAX_SYNC_QUASAR_BYTES
            {
                break;
            }
            quasar_bytes += cert.len();
            items.push(cert);
            match closing.checked_add(1) {
                Some(after) => next = after,
                None => break,
            }
        }
    }
    SyncResponse { items }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Finalized blocks of a fixed size at heights 1..=100, and QuasarCerts of `.1` bytes (none
    /// when 0) for the bundles of 16 closing at 16, 32, …, 96.
    struct Blocks(usize, usize);

    impl SyncSource for Blocks {
        fn finalized_at(&self, height: u64) -> Option<(Vec<u8>, Vec<u8>)> {
            (1..=100)
                .contains(&height)
                .then(|| (vec![height as u8; self.0], vec![0xce; 10]))
        }
        fn block_by_hash(&self, _: &Hash) -> Option<Vec<u8>> {
            None
        }
        fn quasar_cert_from(&self, height: u64) -> Option<(u64, Vec<u8>)> {
            let closing = height.max(1).div_ceil(16) * 16;
            (self.1 > 0 && closing <= 96).then(|| (closing, vec![closing as u8; self.1]))
        }
    }

    #[test]
    fn replies_carry_the_quasar_certs_of_bundles_closing_in_the_range_within_their_budget() {
        let request = |from_height, max_blocks| SyncRequest {
            from_height,
            max_blocks,
            block: [0; 32],
        };
        let closings = |reply: &SyncResponse, blocks: usize| -> Vec<u8> {
            reply.items[blocks + 1..].iter().map(|c| c[0]).collect()
        };
        // Heights 20..=39: one bundle closes inside (32).
        let reply = serve(&request(20, 20), &Blocks(100, 1000));
        assert_eq!(reply.items.len(), 20 + 1 + 1);
        assert_eq!(closings(&reply, 20), vec![32]);
        // Heights 1..=100: six bundles close inside; 1 MiB certificates stop at the 4 MiB budget.
        let reply = serve(&request(1, 128), &Blocks(100, 1 << 20));
        assert_eq!(closings(&reply, 100), vec![16, 32, 48, 64]);
        // Nothing served, nothing certified: no certificates either.
        assert!(serve(&request(101, 10), &Blocks(100, 1000))
            .items
            .is_empty());
        // Heights 1..=15: no bundle closes inside.
        assert_eq!(serve(&request(1, 15), &Blocks(100, 1000)).items.len(), 16);
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
        let big = serve(&request, &Blocks(4 * 1024 * 1024, 0));
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
        let huge = serve(&request, &Blocks(12 * 1024 * 1024, 0));
        assert_eq!(
            huge.items.len(),
            2,
            "one oversized block still goes out alone"
        );
        let small = serve(&request, &Blocks(100, 0));
        assert_eq!(
            small.items.len(),
            101,
            "100 small blocks and one certificate"
        );
    }
}
