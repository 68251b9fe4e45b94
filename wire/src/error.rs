//! Typed encoding and decoding errors. Every decoder in this crate returns one of these; none panics.
//!
//! Consequence for the caller: from a decoder, every variant except
//! [`WireError::FieldOutsideObject`] means "the peer sent bytes that are not a valid message":
//! drop the message (and, at the network layer, count it against the peer). A decoding error is
//! never fatal to the node. From an encoder ([`WireError::MessageTooLarge`],
//! [`WireError::BadSyncItem`], [`WireError::BundleLength`], [`WireError::LegCount`],
//! [`WireError::LaneLeg`], [`WireError::PayloadTooLarge`]) it means the local value cannot be
//! sent as it is.

/// Why a byte string is not a valid ZAP message or frame, or why a value cannot be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// A frame announced more than the 16 MiB bound; drop the stream.
    #[error("frame of {len} bytes exceeds the {max}-byte limit")]
    FrameTooLarge {
        /// Announced (or attempted) message length in bytes.
        len: usize,
        /// The bound, [`crate::frame::MAX_FRAME_LEN`].
        max: usize,
    },

    /// The buffer is shorter than the 16-byte ZAP header.
    #[error("message of {len} bytes is shorter than the 16-byte ZAP header")]
    TooShort {
        /// Buffer length in bytes.
        len: usize,
    },

    /// The first four bytes are not `ZAP\0`.
    #[error("bad magic {found:02x?}, expected \"ZAP\\0\"")]
    BadMagic {
        /// The four bytes found.
        found: [u8; 4],
    },

    /// The header's version is not [`crate::zap::VERSION`].
    #[error("unsupported ZAP version {found}")]
    UnsupportedVersion {
        /// Version found in the header.
        found: u16,
    },

    /// The reserved low byte of the header's flags is not zero.
    #[error("reserved flags byte is {found:#04x}, must be 0")]
    ReservedFlags {
        /// The reserved byte found.
        found: u8,
    },

    /// The header's message type (high byte of flags) is not a known [`crate::MessageType`].
    #[error("unknown message type {found}")]
    UnknownMessageType {
        /// Type byte found.
        found: u8,
    },

    /// A typed reader (e.g. `ProposalRef::parse`) was given a message of another type.
    #[error("expected message type {expected}, found {found}")]
    WrongMessageType {
        /// Type byte the reader accepts.
        expected: u8,
        /// Type byte in the header.
        found: u8,
    },

    /// The header's total size differs from the buffer length (a frame carries exactly one message).
    #[error("header says {header} bytes but the buffer holds {buffer}")]
    SizeMismatch {
        /// Size in the header.
        header: u32,
        /// Buffer length.
        buffer: usize,
    },

    /// The root object offset is inside the header, or the root object's fixed section does not
    /// fit in the message.
    #[error("root object at {offset} (+{object_size} bytes) outside message of {size} bytes")]
    RootOutOfBounds {
        /// Absolute root offset from the header.
        offset: u32,
        /// Fixed size of the root object for this message type, in bytes.
        object_size: usize,
        /// Message size in bytes.
        size: usize,
    },

    /// A pointer field targets a region that starts inside the header or ends past the message.
    #[error("pointer at byte {field} targets {start}..{start}+{len}, outside 16..{size}")]
    PointerOutOfBounds {
        /// Absolute position of the pointer field.
        field: usize,
        /// Absolute target position (may be negative for a hostile i32 object offset).
        start: i64,
        /// Extent of the target in bytes.
        len: u64,
        /// Message size in bytes.
        size: usize,
    },

    /// A length or count overflows when converted to a byte extent (count × element size, or
    /// position + length).
    #[error("length {count} × {stride} at byte {field} overflows")]
    LengthOverflow {
        /// Absolute position of the pointer field.
        field: usize,
        /// Announced length or element count.
        count: u64,
        /// Element size in bytes (1 for byte strings).
        stride: u64,
    },

    /// A vote's kind byte is not a known [`crate::VoteKind`].
    #[error("unknown vote kind {found}")]
    UnknownVoteKind {
        /// Kind byte found.
        found: u8,
    },

    /// A certificate's kind byte is not a known [`crate::CertificateKind`].
    #[error("unknown certificate kind {found}")]
    UnknownCertificateKind {
        /// Kind byte found.
        found: u8,
    },

    /// A QuasarCert leg's kind byte is not a known [`crate::LegKind`].
    #[error("unknown QuasarCert leg kind {found}")]
    UnknownLegKind {
        /// Kind byte found.
        found: u8,
    },

    /// A QuasarCert bundle holds no round digest or more than [`crate::MAX_BUNDLE`]. Returned by
    /// the decoder (announced length / 32) and by [`crate::QuasarCert::encode`].
    #[error("QuasarCert bundle of {count} digests, must be 1..={max}", max = crate::MAX_BUNDLE)]
    BundleLength {
        /// Number of 32-byte digests in the bundle.
        count: usize,
    },

    /// A QuasarCert bundle's byte length is not a multiple of 32: it ends in a partial digest.
    #[error("QuasarCert bundle of {len} bytes ends in a partial 32-byte digest")]
    BundlePartialDigest {
        /// Announced bundle length in bytes.
        len: usize,
    },

    /// A QuasarCert lists no leg or more than [`crate::MAX_LEGS`]. Returned by the decoder (before
    /// any entry is read) and by [`crate::QuasarCert::encode`].
    #[error("QuasarCert with {count} legs, must be 1..={max}", max = crate::MAX_LEGS)]
    LegCount {
        /// Number of legs listed.
        count: usize,
    },

    /// A QuasarCert leg entry is empty: it lacks even the kind byte.
    #[error("QuasarCert leg {index} is empty (no kind byte)")]
    EmptyLeg {
        /// Position of the leg in the list.
        index: usize,
    },

    /// A lane message's kind byte is not a known [`crate::LaneKind`].
    #[error("unknown lane message kind {found}")]
    UnknownLaneKind {
        /// Kind byte found.
        found: u8,
    },

    /// A lane message's `leg` byte does not match its kind: for [`crate::LaneKind::Leg`] it is
    /// not a [`crate::LegKind`] byte, for any other kind it is not 0. Returned by the decoder and
    /// by [`crate::LaneMessage::encode`].
    #[error(
        "lane message of kind {kind} has leg byte {leg}: a `leg` message needs a leg kind \
         1..=5, every other kind 0"
    )]
    LaneLeg {
        /// The message's kind.
        kind: crate::LaneKind,
        /// The `leg` byte found.
        leg: u8,
    },

    /// Reserved bytes of an object are not zero (they are kept for a future version, which will
    /// bump the ZAP version or the message type).
    #[error("reserved bytes at object offset {field} are {found:#x}, must be 0")]
    ReservedNonZero {
        /// Offset of the reserved bytes within their object (e.g.
        /// [`crate::layout::lane_message::RESERVED`]).
        field: usize,
        /// The reserved bytes read as a little-endian integer.
        found: u64,
    },

    /// A lane message's payload is longer than [`crate::MAX_LANE_PAYLOAD`]. Returned by the
    /// decoder (on the announced length, before the pointer is followed) and by
    /// [`crate::LaneMessage::encode`].
    #[error("lane payload of {len} bytes exceeds the {max}-byte limit", max = crate::MAX_LANE_PAYLOAD)]
    PayloadTooLarge {
        /// Payload length in bytes (announced, for the decoder).
        len: usize,
    },

    /// An item of a `SyncResponse` is not a valid encoded Proposal, Vote, Certificate, QuasarCert or EpochSetProof.
    #[error("sync response item {index} is invalid: {reason}")]
    BadSyncItem {
        /// Position of the item in the list.
        index: usize,
        /// Why it was rejected (`WrongMessageType` when it is a valid message of another type).
        reason: Box<WireError>,
    },

    /// A state chunk's status byte is not a known [`crate::ChunkStatus`].
    #[error("unknown state chunk status {found}")]
    UnknownChunkStatus {
        /// Status byte found.
        found: u8,
    },

    /// An entry of a state chunk is not a 32-byte tree key followed by a non-empty value.
    #[error("state chunk entry {index} has {len} bytes: an entry is a 32-byte key and a value")]
    StateEntry {
        /// Position of the entry in the list.
        index: usize,
        /// Its length in bytes.
        len: usize,
    },

    /// Encoding produced more than `u32::MAX` bytes; the value cannot be sent. Encoder side only.
    #[error("encoded message would exceed {max} bytes")]
    MessageTooLarge {
        /// The bound, `u32::MAX`.
        max: u64,
    },

    /// A schema read or wrote a field outside its object's fixed size. This is a bug in this
    /// crate's schema code, never caused by input; reported instead of panicking.
    #[error("field {field}+{width} outside object of {object_size} bytes (schema bug)")]
    FieldOutsideObject {
        /// Field offset within the object.
        field: usize,
        /// Field width in bytes.
        width: usize,
        /// Object fixed size in bytes.
        object_size: usize,
    },
}
