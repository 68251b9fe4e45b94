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
//!
//! # Pruned history: checkpoints
//!
//! Validators keep the last [`quasar_consensus::epoch::RETAINED_EPOCHS`] epochs and, of older
//! ones, only each epoch's boundary block with its closing certificate (and seals). Asked for
//! a height below what it still holds, a node serves the **checkpoint** of that height's epoch
//! instead: the boundary block, its seals and its certificate, then the certificate of its own
//! finalized tip (proof that the chain is far enough ahead for that epoch to be pruned).
//! [`checkpoint_inputs`] recognizes such a reply (it skips the height asked for), and the core
//! takes the boundary as its tip ([`Checkpoint`]) and asks for the next epoch: a late joiner
//! walks the chain of epoch transitions, one reply per epoch, until it reaches blocks its peers
//! kept. A node that took a checkpoint has no state for the chain until it restores one from
//! its peers ([`crate::state_sync`]).
//!
//! On a chain whose sets come from its registry, the set of epoch `e + 2` is what the boundary
//! block of epoch `e` wrote into the state, which a node that takes the checkpoint never
//! executes. So the checkpoint reply also carries that set with its Merkle proof against the
//! boundary's state root (an [`EpochSetProof`], from the proof the serving node kept when it
//! committed the boundary: [`epoch_set_proof`]). The requester checks the proof against the
//! root the boundary claims before the core sees the checkpoint ([`unusable_checkpoint`]: a
//! reply without a proof that holds is dropped and another peer asked), the core checks that
//! the boundary is certified, and the application then decides the set: the walk learns each
//! set from sets it already knows, as a light client does (`crate::light`, [`quasar_app::proven_epoch_set`]).

use quasar_app::{ChainRules, SetProofError};
use quasar_consensus::{Checkpoint, EpochSchedule, Input};
use quasar_crypto::hash::Hash;
use quasar_storage::StateStore;
use quasar_storage::Store;
use quasar_wire::{
    decode, BlockHeader, CertificateKind, EpochSetProof, MessageRef, SyncRequest, SyncResponse,
};
use std::sync::atomic::{AtomicU64, Ordering};

/// Most finalized blocks one reply carries.
pub const MAX_SYNC_BLOCKS: u32 = 128;

/// Most bytes of blocks one reply carries (the frame limit is 16 MiB; one block is at most
/// 8 MiB of transactions plus its header, so a reply always has room for at least one block).
pub const MAX_SYNC_BYTES: usize = 10 * 1024 * 1024;

/// Most seals one reply carries after an epoch's boundary block (a boundary block finalized
/// through more seals than this is served without them, and the requester asks again).
pub const MAX_SYNC_SEALS: usize = 64;

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
    /// The lowest height from which every finalized block up to the tip is held (below it,
    /// only epoch boundary blocks).
    fn history_floor(&self) -> u64;
    /// The encoded certificate that finalized the tip.
    fn tip_certificate(&self) -> Option<Vec<u8>>;
}

/// Every block store serves sync: finalized blocks by height, any kept block by hash. A store
/// error reads as "not here" (the requester asks another peer), and is logged as an error: a
/// damaged store must not go unnoticed because a peer was the one who asked.
impl<S: Store + ?Sized> SyncSource for S {
    fn finalized_at(&self, height: u64) -> Option<(Vec<u8>, Vec<u8>)> {
        let stored = held(self.block_by_height(height), "a finalized block")?;
        Some((stored.block, stored.certificate))
    }
    fn block_by_hash(&self, hash: &Hash) -> Option<Vec<u8>> {
        held(Store::block_by_hash(self, hash), "a block by hash")
    }
    fn quasar_cert_from(&self, height: u64) -> Option<(u64, Vec<u8>)> {
        held(Store::quasar_cert_from(self, height), "a QuasarCert")
    }
    fn history_floor(&self) -> u64 {
        held(Store::history_floor(self).map(Some), "the history floor").unwrap_or(1)
    }
    fn tip_certificate(&self) -> Option<Vec<u8>> {
        let (height, _) = held(self.finalized_tip(), "the finalized tip")?;
        Some(held(self.block_by_height(height), "the tip's block")?.certificate)
    }
}

/// What a store read gave, with an error logged (naming `what` was read) and read as `None`.
fn held<T>(read: Result<Option<T>, quasar_storage::StoreError>, what: &str) -> Option<T> {
    read.unwrap_or_else(|error| {
        tracing::error!(%error, "serving sync: reading {what} from the block store failed");
        None
    })
}

/// Builds the reply to `request` from `source`: never more than [`MAX_SYNC_BLOCKS`] blocks, no
/// more than [`MAX_SYNC_BYTES`] of them beyond the first, and QuasarCerts of bundles closing in
/// the served range up to [`MAX_SYNC_QUASAR_BYTES`], so the encoded reply fits a frame. Below
/// the source's history floor the reply is the checkpoint of the asked height's epoch under
/// `schedule` (see the module docs), or empty when that is not held either; `set_proof` gives
/// the proof a checkpoint carries on a chain whose sets come from its registry
/// ([`epoch_set_proof`]; `None` on other chains).
pub fn serve(
    request: &SyncRequest,
    source: &impl SyncSource,
    schedule: &EpochSchedule,
    set_proof: &dyn Fn(u64) -> Option<Vec<u8>>,
) -> SyncResponse {
    let first = request.from_height.max(1);
    if first < source.history_floor() {
        return SyncResponse {
            items: checkpoint_reply(source, schedule, first, set_proof),
        };
    }
    let mut items = Vec::new();
    let mut bytes = 0usize;
    if request.block != [0u8; 32] {
        if let Some(block) = source.block_by_hash(&request.block) {
            bytes += block.len();
            items.push(block);
        }
    }
    let count = request.max_blocks.min(MAX_SYNC_BLOCKS);
    let mut last_certificate = None;
    let mut last_height = None;
    let mut first_epoch = None;
    let mut last_header = None;
    for height in first..first.saturating_add(u64::from(count)) {
        let Some((block, certificate)) = source.finalized_at(height) else {
            break;
        };
        let header = header_of(&block);
        let epoch = header.as_ref().map(|h| h.epoch);
        if first_epoch.is_some() && epoch != first_epoch {
            break; // One epoch per reply: the requester verifies it under that epoch's set.
        }
        let size = block.len() + certificate.len();
        if !items.is_empty() && bytes.saturating_add(size) > MAX_SYNC_BYTES {
            break;
        }
        first_epoch = first_epoch.or(epoch);
        bytes += size;
        items.push(block);
        last_certificate = Some(certificate);
        last_height = Some(height);
        last_header = header;
    }
    if let Some(certificate) = last_certificate {
        if let Some(header) = &last_header {
            items.extend(seals_above(source, header, &certificate));
        }
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

/// The checkpoint of the epoch deciding `height`: its boundary block, the seals above it, its
/// closing certificate, the tip's certificate, and what `set_proof` gives for the boundary;
/// empty without epochs or when the boundary is not held.
fn checkpoint_reply(
    source: &impl SyncSource,
    schedule: &EpochSchedule,
    height: u64,
    set_proof: &dyn Fn(u64) -> Option<Vec<u8>>,
) -> Vec<Vec<u8>> {
    if schedule.length().is_none() {
        return Vec::new();
    }
    let boundary = schedule.last_height(schedule.epoch_of(height));
    let Some((block, certificate)) = source.finalized_at(boundary) else {
        return Vec::new();
    };
    let seals = header_of(&block)
        .map(|header| seals_above(source, &header, &certificate))
        .unwrap_or_default();
    let mut items = vec![block];
    items.extend(seals);
    items.push(certificate);
    items.extend(source.tip_certificate());
    items.extend(set_proof(boundary));
    items
}

/// On a chain whose sets come from its registry (`rules`), the encoded [`EpochSetProof`] of the
/// set that boundary block `boundary` decides, from `state` (the proof kept when the boundary
/// was committed, so it outlives the version): what a checkpoint of that epoch carries.
/// `None` on other chains, for a height that is not a boundary, or when `state` does not hold
/// it (a node whose own state was restored from peers past that boundary); a store failure is
/// logged.
pub fn epoch_set_proof(state: &StateStore, rules: &ChainRules, boundary: u64) -> Option<Vec<u8>> {
    let epoch = rules.decides_set(boundary)?;
    let (set, proof) = match quasar_app::prove_epoch_set(state, boundary, epoch) {
        Ok((Some(set), proof)) => (set, proof),
        Ok((None, _)) => return None,
        Err(error) => {
            tracing::debug!(%error, boundary, epoch, "no epoch set proof to serve");
            return None;
        }
    };
    EpochSetProof {
        epoch,
        set: set.to_bytes(),
        proof: proof.to_bytes(),
    }
    .encode()
    .ok()
}

/// The verified items of a sync reply as the core takes them. A reply that holds no block at
/// `from_height` (the height asked for) but an epoch's boundary block above it and a
/// finalization of that epoch is a checkpoint reply (see the module docs): it becomes the
/// finalizations of later epochs and the later epochs it names without this node knowing their
/// sets ([`Input::LaterEpoch`]), then one [`Input::Checkpoint`] with the lowest block as the
/// boundary, the others as its seals (the core checks the links) and `set_proof` (the reply's
/// [`EpochSetProof`], encoded) as its state proof. Any other reply stays as it is.
pub fn checkpoint_inputs(
    inputs: Vec<Input>,
    from_height: u64,
    schedule: &EpochSchedule,
    set_proof: Option<Vec<u8>>,
) -> Vec<Input> {
    let mut proposals = Vec::new();
    let mut finalizations = Vec::new();
    for input in &inputs {
        match input {
            Input::Proposal(p) => proposals.push(p.as_ref().clone()),
            Input::Certificate(c) if c.certificate().kind == CertificateKind::Finalization => {
                finalizations.push(c.clone());
            }
            _ => {}
        }
    }
    proposals.sort_by_key(|p| p.proposal().header.height);
    let Some(epoch) = proposals
        .first()
        .map(|p| &p.proposal().header)
        .and_then(|h| {
            let boundary = schedule.length().is_some()
                && h.height > from_height
                && schedule.last_height(schedule.epoch_of(h.height)) == h.height;
            boundary.then_some(h.epoch)
        })
    else {
        return inputs;
    };
    let (own, later): (Vec<_>, Vec<_>) = finalizations
        .into_iter()
        .partition(|c| c.certificate().epoch == epoch);
    let Some(certificate) = own.into_iter().next() else {
        return inputs;
    };
    let boundary = proposals.remove(0);
    let mut out: Vec<Input> = later
        .into_iter()
        .filter(|c| c.certificate().epoch > epoch)
        .map(Input::Certificate)
        .collect();
    out.extend(
        inputs
            .into_iter()
            .filter(|input| matches!(input, Input::LaterEpoch(later) if *later > epoch)),
    );
    out.push(Input::Checkpoint(Box::new(Checkpoint {
        boundary,
        seals: proposals,
        certificate,
        state_proof: set_proof.unwrap_or_default(),
    })));
    out
}

/// Seconds between two [`unusable_checkpoint`] errors.
const UNUSABLE_CHECKPOINT_LOG_SECS: u64 = 30;

/// On a chain whose sets come from its registry (`rules`), why a checkpoint among `inputs` (as
/// [`checkpoint_inputs`] gave them) cannot be used: a node that takes a checkpoint learns the
/// set its boundary decides from the proof the checkpoint carries (its state proof, an
/// [`EpochSetProof`]), since it does not execute the epoch; a checkpoint without one that
/// holds against its boundary's state root would leave it unable to verify anything two
/// epochs on. The proof is checked against the root the boundary block claims; the core then
/// checks that the block is certified, and the application decides the set. Logged as an error
/// at most every [`UNUSABLE_CHECKPOINT_LOG_SECS`] (naming `peer`): the caller drops the reply
/// and asks another peer. `None` on other chains and for replies without a checkpoint.
pub fn unusable_checkpoint(inputs: &[Input], rules: &ChainRules, peer: u32) -> Option<String> {
    static LAST_LOGGED_SECS: AtomicU64 = AtomicU64::new(0);
    if !rules.sets_from_registry {
        return None;
    }
    let checkpoint = inputs.iter().find_map(|input| match input {
        Input::Checkpoint(c) => Some(c),
        _ => None,
    })?;
    let header = &checkpoint.boundary.proposal().header;
    let problem = match rules.decides_set(header.height) {
        None => format!("block {} decides no set", header.height),
        Some(epoch) => {
            match quasar_app::proven_epoch_set_message(
                epoch,
                &checkpoint.state_proof,
                &header.state_root,
            )
            .err()?
            {
                e @ SetProofError::Missing(_) => format!(
                    "it carries {e} (a peer of an older version, or one whose own state was \
                     restored past that boundary)"
                ),
                e => e.to_string(),
            }
        }
    };
    let now = quasar_process::now_us() / 1_000_000;
    let last = LAST_LOGGED_SECS.load(Ordering::Relaxed);
    if now.saturating_sub(last) >= UNUSABLE_CHECKPOINT_LOG_SECS
        && LAST_LOGGED_SECS
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    {
        tracing::error!(
            peer,
            boundary = header.height,
            %problem,
            "this peer's epoch checkpoint cannot be used on a chain whose sets come from its \
             registry; asking another peer (a node whose peers all serve such checkpoints \
             cannot catch up: add a node that keeps the whole history, archive = true, to its \
             peers)"
        );
    }
    Some(problem)
}

/// The header of an encoded proposal (`None` when it does not decode).
fn header_of(block: &[u8]) -> Option<BlockHeader> {
    match decode(block) {
        Ok(MessageRef::Proposal(p)) => Some(p.header()),
        _ => None,
    }
}

/// When `certificate` finalized the block of `header` through seals (the block is its epoch's
/// boundary, see [`quasar_consensus::epoch`]), the seals from just above the block up to the
/// certified one, lowest first; empty otherwise, or when a seal is missing or they are more
/// than [`MAX_SYNC_SEALS`].
fn seals_above(source: &impl SyncSource, header: &BlockHeader, certificate: &[u8]) -> Vec<Vec<u8>> {
    let Ok(MessageRef::Certificate(certificate)) = decode(certificate) else {
        return Vec::new();
    };
    let below = header.hash();
    let mut cursor = *certificate.block();
    let mut seals = Vec::new();
    while cursor != below {
        if seals.len() == MAX_SYNC_SEALS {
            return Vec::new();
        }
        let Some(seal) = source.block_by_hash(&cursor) else {
            return Vec::new();
        };
        let Some(seal_header) = header_of(&seal) else {
            return Vec::new();
        };
        cursor = seal_header.parent;
        seals.push(seal);
    }
    seals.reverse();
    seals
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Finalized blocks of a fixed size at heights 1..=100, and QuasarCerts of `.1` bytes (none
    /// when 0) for the bundles of 16 closing at 16, 32, …, 96. Below height `.2`, only the
    /// multiples of 10 are held (pruned history, epochs of 10 blocks).
    struct Blocks(usize, usize, u64);

    fn serve_all(request: &SyncRequest, source: &Blocks) -> SyncResponse {
        serve(request, source, &EpochSchedule::SINGLE, &|_| None)
    }

    impl SyncSource for Blocks {
        fn finalized_at(&self, height: u64) -> Option<(Vec<u8>, Vec<u8>)> {
            let held =
                (1..=100).contains(&height) && (height >= self.2 || height.is_multiple_of(10));
            held.then(|| (vec![height as u8; self.0], vec![0xce; 10]))
        }
        fn block_by_hash(&self, _: &Hash) -> Option<Vec<u8>> {
            None
        }
        fn history_floor(&self) -> u64 {
            self.2
        }
        fn tip_certificate(&self) -> Option<Vec<u8>> {
            Some(vec![0xcf; 10])
        }
        fn quasar_cert_from(&self, height: u64) -> Option<(u64, Vec<u8>)> {
            let closing = height.max(1).div_ceil(16) * 16;
            (self.1 > 0 && closing <= 96).then(|| (closing, vec![closing as u8; self.1]))
        }
    }

    /// A verified proposal at `height` of epoch `epoch` on `parent` (signed by a test key:
    /// the checks below never verify it).
    fn block(epoch: u64, height: u64, parent: Hash) -> quasar_consensus::VerifiedProposal {
        let header = BlockHeader {
            chain_id: 1,
            epoch,
            view: height,
            height,
            parent_view: height.saturating_sub(1),
            parent,
            proposer: 0,
            timestamp_us: height,
            payload_root: [0; 32],
            state_root: [0; 32],
        };
        let signature = quasar_crypto::bls::SecretKey::from_seed(&[7; 32]).sign(b"test");
        let proposal = quasar_wire::Proposal {
            header,
            txs: Vec::new(),
            signature: signature.to_bytes(),
        };
        quasar_consensus::VerifiedProposal::signed_locally(proposal, Vec::new(), signature)
    }

    #[test]
    fn a_checkpoint_without_a_proof_of_its_set_is_unusable_only_on_a_chain_whose_sets_come_from_its_registry(
    ) {
        let schedule = EpochSchedule::new(10);
        let boundary = block(0, 10, [1; 32]);
        let certificate = quasar_consensus::VerifiedCertificate::aggregated_locally(
            quasar_wire::Certificate {
                kind: CertificateKind::Finalization,
                chain_id: 1,
                epoch: 0,
                view: 10,
                height: 10,
                block: *boundary.hash(),
                signers: vec![0b1111],
                signature: [0; 96],
            },
            vec![0, 1, 2, 3],
        );
        // Asked from height 1, the peer answered with epoch 0's boundary block: a checkpoint,
        // and epoch 7, which the reply names but this node cannot verify, goes before it.
        let reply = vec![
            Input::Proposal(Box::new(boundary.clone())),
            Input::Certificate(certificate.clone()),
            Input::LaterEpoch(7),
        ];
        let registry = ChainRules {
            chain_id: 1,
            epoch_length: 10,
            sets_from_registry: true,
        };
        let genesis_sets = ChainRules {
            sets_from_registry: false,
            ..registry
        };
        let with_proof = |proof: Option<EpochSetProof>| {
            let proof = proof.map(|p| p.encode().expect("encodes"));
            checkpoint_inputs(reply.clone(), 1, &schedule, proof)
        };
        let inputs = with_proof(None);
        assert!(matches!(
            inputs.as_slice(),
            [Input::LaterEpoch(7), Input::Checkpoint(_)]
        ));
        assert_eq!(unusable_checkpoint(&inputs, &genesis_sets, 2), None);
        let problem = unusable_checkpoint(&inputs, &registry, 2).expect("unusable");
        assert!(problem.contains("no proof of epoch 2's set"), "{problem}");
        // A proof of another epoch's set, or one that does not hold against the root.
        let other = EpochSetProof {
            epoch: 3,
            set: vec![1],
            proof: vec![2],
        };
        let problem =
            unusable_checkpoint(&with_proof(Some(other.clone())), &registry, 2).expect("other");
        assert!(problem.contains("no proof of epoch 2's set"), "{problem}");
        let forged = EpochSetProof { epoch: 2, ..other };
        let problem = unusable_checkpoint(&with_proof(Some(forged)), &registry, 2).expect("forged");
        assert!(problem.contains("proof"), "{problem}");
        // Asked from height 10, the same reply holds the block asked for: ordinary sync.
        let inputs = checkpoint_inputs(reply, 10, &schedule, None);
        assert_eq!(inputs.len(), 3);
        assert_eq!(unusable_checkpoint(&inputs, &registry, 2), None);
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
        let reply = serve_all(&request(20, 20), &Blocks(100, 1000, 1));
        assert_eq!(reply.items.len(), 20 + 1 + 1);
        assert_eq!(closings(&reply, 20), vec![32]);
        // Heights 1..=100: six bundles close inside; 1 MiB certificates stop at the 4 MiB budget.
        let reply = serve_all(&request(1, 128), &Blocks(100, 1 << 20, 1));
        assert_eq!(closings(&reply, 100), vec![16, 32, 48, 64]);
        // Nothing served, nothing certified: no certificates either.
        assert!(serve_all(&request(101, 10), &Blocks(100, 1000, 1))
            .items
            .is_empty());
        // Heights 1..=15: no bundle closes inside.
        assert_eq!(
            serve_all(&request(1, 15), &Blocks(100, 1000, 1))
                .items
                .len(),
            16
        );
    }

    #[test]
    fn below_the_history_floor_the_reply_is_the_checkpoint_of_the_heights_epoch() {
        let pruned = Blocks(100, 1000, 50);
        let epochs = EpochSchedule::new(10);
        let request = |from_height| SyncRequest {
            from_height,
            max_blocks: 128,
            block: [7; 32],
        };
        // Heights 21..=30 are epoch 2: its boundary block 30 and its certificate, nothing else.
        let reply = serve(&request(23), &pruned, &epochs, &|_| None);
        assert_eq!(
            reply.items,
            vec![vec![30; 100], vec![0xce; 10], vec![0xcf; 10]],
            "the tip's certificate last"
        );
        // On a chain whose sets come from its registry, the boundary's set proof after it.
        let reply = serve(&request(23), &pruned, &epochs, &|b| Some(vec![b as u8; 3]));
        assert_eq!(reply.items[3], vec![30; 3]);
        let reply = serve(&request(40), &pruned, &epochs, &|_| None);
        assert_eq!(
            reply.items[0],
            vec![40; 100],
            "a boundary asked for is its own epoch's"
        );
        // From the floor up, blocks as usual: 50..=100, their certificate, and the QuasarCerts
        // of the bundles closing at 64, 80 and 96.
        let reply = serve(&request(50), &pruned, &epochs, &|_| None);
        assert_eq!(reply.items.len(), 51 + 1 + 3);
        // Without epochs there is no checkpoint to serve.
        assert!(
            serve(&request(23), &pruned, &EpochSchedule::SINGLE, &|_| None)
                .items
                .is_empty()
        );
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
        let big = serve_all(&request, &Blocks(4 * 1024 * 1024, 0, 1));
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
        let huge = serve_all(&request, &Blocks(12 * 1024 * 1024, 0, 1));
        assert_eq!(
            huge.items.len(),
            2,
            "one oversized block still goes out alone"
        );
        let small = serve_all(&request, &Blocks(100, 0, 1));
        assert_eq!(
            small.items.len(),
            101,
            "100 small blocks and one certificate"
        );
    }
}
