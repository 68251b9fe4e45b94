//! The consensus core: a pure state machine for Quasar's Simplex-style view protocol
//! (docs/architecture.md §2).
//!
//! # What it implements
//!
//! A partially synchronous BFT protocol in the style of Simplex (Chan and Pass, "Simplex
//! Consensus", TCC 2023), with stake-weighted quorums and the stage names of the Quasar design:
//!
//! - **Photon** — the leader of view `v` is drawn by stake from
//!   `tagged_hash("QUASAR-LEADER-v1", genesis, chain_id, epoch, v)` ([`leader()`]). It proposes a block
//!   extending the highest certified block it knows: a block with a notarization, or the finalized
//!   tip, such that every view between that block's view and `v` has a nullification. The leader
//!   waits until `block_time` has passed since the parent's timestamp, so block production is
//!   paced, and then proposes at once. All validators receive every message (n ≤ 128).
//! - **Wave** — a validator in view `v` that has not timed out checks the proposal (right leader,
//!   valid signature and payload root, parent certified, views in between nullified, height and
//!   timestamp consistent), has the application execute it and compare the state root its
//!   header claims ([`Action::Verify`], [`application`]), and only then signs a *notarize* vote. The proposal's own signature is the
//!   leader's notarize vote. More than 2/3 of the stake on one block is a *notarization*.
//! - **Focus** — on a notarization for view `v`, a validator that has not nullified `v` signs a
//!   *finalize* vote and enters `v + 1`. More than 2/3 of the stake of finalize votes is a
//!   *finalization*: the block and all its ancestors are final (**Nova finality**). A validator
//!   whose view times out signs *nullify*; a quorum of nullifies is a *nullification* and moves
//!   everyone to `v + 1`.
//! - **Ray** — finalized blocks are committed strictly in height order ([`Action::Finalized`]);
//!   missing ancestors are fetched first.
//!
//! Any node that gathers a quorum of votes aggregates them into a certificate (BLS aggregate and
//! signer bitmap) and broadcasts it, so lagging nodes advance on one message. A node that has timed
//! out rebroadcasts its nullify vote and its latest certificate every `retry` interval, which
//! restores liveness after message loss or a healed partition.
//!
//! # Safety argument
//!
//! Quorums intersect in more than 1/3 of the stake, so with Byzantine stake below 1/3 any two
//! quorums share an honest validator. An honest validator notarizes at most one block per view
//! and never signs both finalize and nullify for one view (enforced twice: by this core, and by the
//! durable signing guard the runtime consults before any signature leaves). Hence (1) a view has at
//! most one notarized block; (2) if block `B` of view `v` is finalized, view `v` can never be
//! nullified; (3) a block of a later view must name a certified parent with every view in between
//! nullified, so it descends from `B`. Two finalized blocks therefore never conflict.
//!
//! # Epochs
//!
//! A core runs one epoch ([`epoch`]): it accepts only that epoch's messages and views, decides
//! heights up to the epoch's boundary block, proposes only transaction-free seals above it, and
//! reports [`Action::EpochEnded`] once the boundary is final. The next epoch's core starts from
//! the boundary block as its finalized tip, with the next epoch's validator set
//! ([`EpochSets`]), which may differ: sets change only at boundaries. Views of different epochs never overlap and every
//! vote signs its epoch, so the argument above holds within each epoch, and the boundary block,
//! final in its own epoch, is the one tip every next-epoch core starts from.
//!
//! # Purity
//!
//! [`Core`] performs no I/O and reads no clock: inputs are verified messages and timer expiries,
//! each stamped with the caller's time in microseconds; outputs are [`Action`]s. Signatures are
//! checked before messages reach the core ([`verify`], through the one [`ingress`] path from
//! received bytes) and created outside it, after the signing guard has made the vote durable.
//! The same core and the same ingress run under tokio and under the seeded simulator.
//!
//! # Deviations
//!
//! Views are a single counter; a block records both its view and its height (the Quasar
//! papers' "view (height, round)" is this pair). The leader schedule is stake-weighted pseudo-random rather
//! than round-robin, so no validator can predict or bias more than its stake share.

pub mod application;
mod core;
pub mod epoch;
pub mod ingress;
pub mod leader;
pub mod verify;

pub use self::core::{
    Action, Checkpoint, Core, CoreConfig, Evidence, EvidenceKind, FinalizedBlock, Input,
    ProposalSlot, TimerKind, Tip,
};
pub use application::{AppError, Application, Payload};
pub use epoch::{ByEpoch, DecideError, EpochMembers, EpochSchedule, EpochSets, SetChangeError};
pub use ingress::Received;
pub use leader::leader;
pub use verify::{
    proposer_vote, BlockLimits, KnownTxs, VerifiedCertificate, VerifiedProposal, VerifiedVote,
    Verifier, VerifyError,
};
