//! Reading and writing `u32 LE length ‖ message` frames (quasar_wire::frame) on QUIC streams.
//!
//! The reader checks the prefix against `MAX_FRAME_LEN` before reading the body and grows the
//! body buffer only as bytes actually arrive, so a peer announcing 16 MiB and sending nothing
//! costs at most [`INITIAL_BODY_CAPACITY`] bytes.

use quasar_wire::frame::{frame_header, frame_len, FRAME_HEADER_LEN};
use quasar_wire::WireError;
use quinn::{ReadError, RecvStream, SendStream, WriteError};

/// Body capacity reserved up front; the rest is reserved as data arrives.
pub(crate) const INITIAL_BODY_CAPACITY: usize = 64 * 1024;

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FrameReadError {
    /// The prefix announced more than 16 MiB; the stream must be dropped unread (malformed).
    #[error(transparent)]
    TooLarge(WireError),
    /// The peer finished the stream inside a frame (malformed).
    #[error("stream ended after {received} of {expected} bytes")]
    Truncated {
        /// Bytes the header or body needed.
        expected: usize,
        /// Bytes that arrived.
        received: usize,
    },
    /// The stream or connection failed; `mid_frame` says whether part of a frame had arrived.
    #[error("stream read failed: {source}")]
    Stream {
        /// The quinn error.
        source: ReadError,
        /// Whether some bytes of the current frame had been read.
        mid_frame: bool,
    },
}

impl FrameReadError {
    /// Whether the peer violated framing (counted in `malformed_frames`): an oversized prefix, a
    /// truncated frame, or a stream the peer reset inside a frame. A lost connection is not the
    /// peer's fault and is not counted.
    pub(crate) fn is_malformed(&self) -> bool {
        match self {
            FrameReadError::TooLarge(_) | FrameReadError::Truncated { .. } => true,
            FrameReadError::Stream { source, mid_frame } => {
                *mid_frame && matches!(source, ReadError::Reset(_))
            }
        }
    }
}

/// Reads one frame. `Ok(None)`: the peer finished the stream cleanly at a frame boundary.
pub(crate) async fn read_frame(recv: &mut RecvStream) -> Result<Option<Vec<u8>>, FrameReadError> {
    let mut header = [0u8; FRAME_HEADER_LEN];
    let mut got = 0usize;
    while got < FRAME_HEADER_LEN {
        let Some(rest) = header.get_mut(got..) else {
            break;
        };
        match recv.read(rest).await {
            Ok(Some(n)) => got = got.saturating_add(n),
            Ok(None) if got == 0 => return Ok(None),
            Ok(None) => {
                return Err(FrameReadError::Truncated {
                    expected: FRAME_HEADER_LEN,
                    received: got,
                })
            }
            Err(source) => {
                return Err(FrameReadError::Stream {
                    source,
                    mid_frame: got > 0,
                })
            }
        }
    }
    let len = frame_len(header).map_err(FrameReadError::TooLarge)?;
    let mut body: Vec<u8> = Vec::with_capacity(len.min(INITIAL_BODY_CAPACITY));
    while body.len() < len {
        let remaining = len - body.len();
        match recv.read_chunk(remaining, true).await {
            Ok(Some(chunk)) => {
                let needed = body.len().saturating_add(chunk.bytes.len());
                if needed > body.capacity() {
                    // Double, but never beyond the announced length (<= 16 MiB).
                    let target = body.capacity().saturating_mul(2).max(needed).min(len);
                    body.reserve_exact(target.saturating_sub(body.len()));
                }
                body.extend_from_slice(&chunk.bytes);
            }
            Ok(None) => {
                return Err(FrameReadError::Truncated {
                    expected: len,
                    received: body.len(),
                })
            }
            Err(source) => {
                return Err(FrameReadError::Stream {
                    source,
                    mid_frame: true,
                })
            }
        }
    }
    Ok(Some(body))
}

/// Why a frame could not be written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FrameWriteError {
    /// The message is longer than 16 MiB; nothing was written.
    #[error(transparent)]
    TooLarge(#[from] WireError),
    /// The stream or connection failed.
    #[error(transparent)]
    Write(#[from] WriteError),
}

/// Writes `message` as one frame.
pub(crate) async fn write_frame(
    send: &mut SendStream,
    message: &[u8],
) -> Result<(), FrameWriteError> {
    let header = frame_header(message.len())?;
    send.write_all(&header).await?;
    send.write_all(message).await?;
    Ok(())
}
