//! State sync: how a node whose application state stopped at a checkpoint restores it from its
//! peers and executes again (docs/architecture.md §11).
//!
//! A node that walked checkpoints past blocks its peers pruned ([`crate::sync`]) follows the
//! finalized chain without state: it cannot execute, so it cannot notarize. Once it holds a
//! finalized block above the last checkpoint, [`restore`] takes the newest one, whose header's
//! state root is certified (its finalization certificate verified when the block was taken),
//! and asks one peer after another for that state version in chunks ([`serve`] answers them).
//! Every chunk is checked against the root as it arrives (`quasar_app::snapshot`); a peer
//! whose chunk is refused is left for the next, and the restore starts over. A peer that no
//! longer holds the version (it pruned it meanwhile) is left too, and once every peer has been
//! tried the node waits [`RETRY_INTERVAL`] and aims at its newer finalized tip.
//!
//! When the restore is complete, the engine reopens the application on the restored version
//! and executes the finalized blocks it stored above it (`Engine::state_restored`); from there
//! on the node executes and notarizes like any other.

use std::time::Duration;

use quasar_app::snapshot::{snapshot_chunk, Restore, RestoreError, SnapshotChunk, MAX_CHUNK_BYTES};
use quasar_app::StateError;
use quasar_crypto::hash::Hash;
use quasar_p2p::Network;
use quasar_storage::{SledStore, StateStore, Store};
use quasar_wire::{decode, ChunkStatus, MessageRef, StateChunk, StateRequest};

/// How long a node waits for one chunk.
pub const CHUNK_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a node waits before trying its peers again, once none could serve its version.
pub const RETRY_INTERVAL: Duration = Duration::from_secs(1);

/// How often a restore in progress logs how far it got (keys are hashes, so the next key's
/// first byte out of 256 shows the fraction done).
pub const PROGRESS_INTERVAL: Duration = Duration::from_secs(10);

/// The reply to `request` from `state`: at most [`MAX_CHUNK_BYTES`] (or the request's
/// `max_bytes`, if smaller) of entries, or [`ChunkStatus::NotHeld`] when this node does not hold
/// the version. A store error reads as "not held" (the requester asks another peer) and is
/// logged.
pub fn serve(request: &StateRequest, state: &StateStore) -> StateChunk {
    let max_bytes = (request.max_bytes as usize).min(MAX_CHUNK_BYTES);
    let not_held = StateChunk {
        version: request.version,
        status: ChunkStatus::NotHeld,
        entries: Vec::new(),
        proof: Vec::new(),
    };
    let chunk = match snapshot_chunk(state, request.version, &request.start, max_bytes) {
        Ok(Some(chunk)) => chunk,
        Ok(None) => return not_held,
        // Pruned while it was read: an ordinary race.
        Err(StateError::Tree(error)) => {
            tracing::debug!(version = request.version, %error, "serving a state chunk");
            return not_held;
        }
        Err(error) => {
            tracing::error!(version = request.version, %error,
                "serving a state chunk: reading the state store failed");
            return not_held;
        }
    };
    StateChunk {
        version: request.version,
        status: match chunk.complete {
            true => ChunkStatus::Complete,
            false => ChunkStatus::Partial,
        },
        entries: chunk
            .entries
            .into_iter()
            .map(|(key, value)| [key.as_slice(), &value].concat())
            .collect(),
        proof: chunk.proof,
    }
}

/// Why restoring from one peer stopped.
#[derive(Debug, thiserror::Error)]
enum Failure {
    /// The local store failed (fatal).
    #[error("state store: {0}")]
    Local(StateError),
    /// The peer does not hold the version.
    #[error("the peer does not hold state version {0}")]
    NotHeld(u64),
    /// The request failed or timed out, or the reply was not a state chunk.
    #[error("{0}")]
    Unreachable(String),
    /// The peer's chunk was refused.
    #[error(transparent)]
    Refused(RestoreError),
}

/// Restores the application state from `network`'s peers into `store`'s state tree: the
/// version of the newest finalized block `store` holds, retried (and re-aimed) until a peer
/// serves it whole. Blocks the calling thread (run it with `spawn_blocking`); `runtime` runs
/// the requests. Returns the restored version.
///
/// Errors: a message when the local store fails (fatal to the node, as every storage error).
pub fn restore(
    runtime: &tokio::runtime::Handle,
    network: &Network,
    store: &SledStore,
) -> Result<u64, String> {
    let state = store.state().map_err(|e| format!("state store: {e}"))?;
    loop {
        let (version, root) = target(store)?;
        let mut peers = network.peer_indices();
        let first = rand::random::<usize>() % peers.len().max(1);
        peers.rotate_left(first);
        for peer in peers {
            tracing::info!(peer, version, "restoring the application state from a peer");
            match restore_from(runtime, network, peer, &state, version, root) {
                Ok(entries) => {
                    tracing::info!(peer, version, entries, state_root = %hex::encode(root),
                        "restored the application state from a peer");
                    return Ok(version);
                }
                Err(fatal @ Failure::Local(_)) => return Err(fatal.to_string()),
                Err(Failure::NotHeld(_)) => {
                    tracing::debug!(peer, version, "this peer does not hold the state version")
                }
                Err(failure) => {
                    tracing::warn!(peer, version, %failure, "restoring state from this peer failed")
                }
            }
        }
        std::thread::sleep(RETRY_INTERVAL);
    }
}

/// The newest finalized block in `store`: its height and the state root its header claims.
fn target(store: &SledStore) -> Result<(u64, Hash), String> {
    let failed = |e: &dyn std::fmt::Display| format!("block store: {e}");
    let (height, _) = store
        .finalized_tip()
        .map_err(|e| failed(&e))?
        .ok_or_else(|| "no finalized block to restore the state of".to_string())?;
    let stored = store
        .block_by_height(height)
        .map_err(|e| failed(&e))?
        .ok_or_else(|| failed(&format!("finalized tip {height} missing")))?;
    match decode(&stored.block) {
        Ok(MessageRef::Proposal(p)) => Ok((height, p.header().state_root)),
        _ => Err(failed(&format!("finalized block {height} does not decode"))),
    }
}

/// Restores version `version` (root `root`) from `peer`: the number of entries restored.
fn restore_from(
    runtime: &tokio::runtime::Handle,
    network: &Network,
    peer: u32,
    state: &StateStore,
    version: u64,
    root: Hash,
) -> Result<u64, Failure> {
    let local = |e: RestoreError| match e {
        RestoreError::Refused(_) => Failure::Refused(e),
        RestoreError::State(e) => Failure::Local(e),
    };
    let mut restore = Restore::begin(state.clone(), version, root).map_err(local)?;
    let mut last_note = std::time::Instant::now();
    while let Some(start) = restore.next_start() {
        if last_note.elapsed() >= PROGRESS_INTERVAL {
            last_note = std::time::Instant::now();
            tracing::info!(peer, version, entries = restore.entries(),
                next_key = %hex::encode(start), "restoring the application state");
        }
        let request = StateRequest {
            version,
            start,
            max_bytes: MAX_CHUNK_BYTES as u32,
        };
        let bytes = request
            .encode()
            .map_err(|e| Failure::Unreachable(e.to_string()))?;
        let reply = runtime
            .block_on(network.request(peer, bytes, CHUNK_TIMEOUT))
            .map_err(|e| Failure::Unreachable(e.to_string()))?;
        let chunk = match decode(&reply) {
            Ok(MessageRef::StateChunk(chunk)) => chunk,
            Ok(other) => {
                return Err(Failure::Unreachable(format!(
                    "the reply is a {:?} message, not a state chunk",
                    other.message_type()
                )))
            }
            Err(e) => return Err(Failure::Unreachable(format!("reply: {e}"))),
        };
        if chunk.status() == ChunkStatus::NotHeld {
            return Err(Failure::NotHeld(version));
        }
        if chunk.version() != version {
            return Err(Failure::Unreachable(format!(
                "the reply is of state version {}, not {version}",
                chunk.version()
            )));
        }
        restore
            .add(SnapshotChunk {
                entries: chunk.entries().map(|(k, v)| (*k, v.to_vec())).collect(),
                proof: chunk.proof().to_vec(),
                complete: chunk.status() == ChunkStatus::Complete,
            })
            .map_err(local)?;
    }
    let entries = restore.entries();
    restore.finish().map_err(local)?;
    Ok(entries)
}
