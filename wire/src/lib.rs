//! ZAP: the zero-copy wire format of every Quasar message (docs/architecture.md §5).
//!
//! Every consensus, sync, QuasarCert and lane message is one ZAP buffer; on a QUIC stream each
//! buffer travels in one [`frame`] (`u32 LE length ‖ message`, at most 16 MiB). [`decode`] turns
//! bytes into a validated [`MessageRef`] that borrows the buffer; owned values ([`Message`] and
//! the per-schema structs) encode with their `encode` method. Nothing here verifies signatures or
//! checks consensus rules: a decoded message is *well-formed*, not *valid*.
//!
//! # Format (ZAP version 2)
//!
//! All integers are little-endian and read with unaligned loads.
//!
//! | bytes  | field   | meaning                                                              |
//! |--------|---------|----------------------------------------------------------------------|
//! | 0..4   | magic   | `ZAP\0`                                                              |
//! | 4..6   | version | `2`                                                                  |
//! | 6..8   | flags   | high byte = [`MessageType`], low byte reserved = 0                    |
//! | 8..12  | root    | absolute offset of the root object (the builder puts it at 16)       |
//! | 12..16 | size    | total message size in bytes = the buffer length                      |
//!
//! * An **object** is a fixed-size byte region; fixed-size fields (integers, 32-byte hashes,
//!   96-byte signatures) are inline at fixed offsets.
//! * A **bytes** or **list** field is 8 bytes: `u32` offset *relative to the field's own absolute
//!   position*, then `u32` length (bytes) or count (elements).
//! * A **nested object** field is an `i32` offset relative to the field's own position.
//! * A **list of byte strings** is `count` entries of 8 bytes, each entry a bytes field relative to
//!   the entry's own position.
//! * The encoder lays out header, root object, then out-of-line data in field order, every region
//!   starting 8-byte aligned with zero padding.
//!
//! # Decoding is strict
//!
//! [`decode`] rejects, with a typed [`WireError`] and never a panic: a buffer shorter than the
//! header; wrong magic, version or non-zero reserved flags byte; an unknown message type; a size
//! field different from the buffer length (a frame carries exactly one message); a root offset
//! below 16 or a root object that does not fit; any pointer whose target starts below 16 or whose
//! extent (`len`, or `count × 8` computed with checked arithmetic) ends past the message; unknown
//! enum bytes (vote, certificate, QuasarCert leg and lane message kinds); a sync response item
//! that is not itself a valid Proposal or Certificate; a QuasarCert whose bundle is not
//! 1..=[`MAX_BUNDLE`] whole 32-byte digests, whose leg list is not 1..=[`MAX_LEGS`] entries (both
//! checked on the announced length before the pointer is followed), or with an empty leg entry; a
//! lane message whose `leg` byte does not match its kind (a [`LegKind`] byte for
//! [`LaneKind::Leg`], 0 for every other kind), whose reserved bytes are not zero, or whose payload
//! exceeds [`MAX_LANE_PAYLOAD`] (checked on the announced length before the pointer is
//! followed). Every length is checked against the message before it is used, and decoding
//! allocates nothing (readers borrow).
//! Alignment is produced but not required, and unreferenced bytes are not rejected, so one value
//! has several valid encodings: never hash or sign the encoded bytes; hash the fields
//! ([`BlockHeader::hash`], [`vote_signing_message`]).
//!
//! # Schemas
//!
//! Offsets are bytes from the start of the object (constants in [`messages::layout`]).
//!
//! | schema (type)         | size | fields                                                                   |
//! |-----------------------|------|--------------------------------------------------------------------------|
//! | BlockHeader (nested)  | 148  | chain_id u64 @0, epoch @8, view @16, height @24, parent_view @32, timestamp_us @40, parent \[32\] @48, payload_root \[32\] @80, proposer u32 @112, state_root \[32\] @116 |
//! | Proposal (1)          | 108  | header obj @0, txs list of bytes @4, signature \[96\] @12                     |
//! | Vote (2)              | 165  | chain_id u64 @0, epoch @8, view @16, height @24, block \[32\] @32, signature \[96\] @64, signer u32 @160, kind u8 @164 |
//! | Certificate (3)       | 169  | chain_id u64 @0, epoch @8, view @16, height @24, block \[32\] @32, signature \[96\] @64, signers bytes @160, kind u8 @168 |
//! | TxBatch (4)           | 8    | txs list of bytes @0                                                       |
//! | SyncRequest (5)       | 44   | from_height u64 @0, block \[32\] @8, max_blocks u32 @40                     |
//! | SyncResponse (6)      | 8    | items list of bytes @0 (each a complete Proposal, Vote, Certificate, QuasarCert or EpochSetProof message) |
//! | QuasarCert (7)        | 80   | chain_id u64 @0, epoch @8, height @16, view @24, block \[32\] @32, bundle bytes @64 (k × 32-byte round digests, 1 ≤ k ≤ 1024), legs list of bytes @72 (each kind u8 ‖ body, 1..=8 entries) |
//! | LaneMessage (8)       | 72   | chain_id u64 @0, epoch @8, height @16, sender u32 @24, kind u8 @28, leg u8 @29, reserved \[2\] = 0 @30, session \[32\] @32, payload bytes @64 (≤ 8 MiB) |
//! | RelayRequest (9)      | 20   | epoch u64 @0, from_view @8, signer u32 @16                                 |
//! | StateRequest (10)     | 44   | version u64 @0, start \[32\] @8, max_bytes u32 @40                          |
//! | StateChunk (11)       | 32   | version u64 @0, entries list of bytes @8 (each key \[32\] ‖ value), proof bytes @16, status u8 @24, reserved \[7\] = 0 @25 |
//! | EpochSetProof (12)    | 24   | epoch u64 @0, set bytes @8, proof bytes @16                                |
//!
//! Fixed fields are ordered so that no object has internal padding (LaneMessage's two bytes at
//! @30 and StateChunk's seven at @25 are reserved fields the decoder requires to be zero, not
//! padding).
//!
//! A [`QuasarCert`] is the post-quantum certificate of one finalized block (docs/architecture.md §3): its
//! bundle lists the round digests μ of the consecutive finalized blocks it covers, oldest first
//! (this block's last), and each leg is a [`LegKind`] byte followed by an opaque body that the lane
//! of that kind (`quasar-lanes`) decodes and verifies. Duplicated or unexpected leg kinds decode;
//! the lane verifier rejects them.
//!
//! A [`LaneMessage`] is one validator's contribution to the post-quantum legs of the bundle that
//! ends at its `height`: a finished leg body ([`LaneKind::Leg`], with the [`LegKind`] in its `leg`
//! byte) or a signature or threshold-round message an aggregator combines into a leg. It travels
//! as gossip over the authenticated transport; receivers check `sender` against the connection's
//! peer, and the `session` id (threshold rounds) against their own session.
//!
//! # Hashes and signed bytes
//!
//! [`BlockHeader::hash`], [`tx_hash`], [`payload_root`] and [`vote_signing_message`] define what is
//! hashed and signed; all hashing is `quasar_crypto::hash::tagged_hash` (SHA3-256) under
//! `QUASAR-…-v1` tags. See each item for the exact bytes.
//!
//! # Modules
//!
//! * [`frame`]: stream framing.
//! * [`zap`]: the header, the bounds-checked reader and the builder (schema-agnostic).
//! * [`messages`]: the schemas, re-exported at the crate root.
//! * `fuzzing` (feature `fuzzing`, off in a production build): the `wire/fuzz` targets' entry points.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod frame;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod messages;
pub mod zap;

mod error;
pub use error::WireError;
pub use messages::*;
