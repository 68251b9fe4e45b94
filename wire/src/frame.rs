//! Stream framing (docs/architecture.md §5): every message on a QUIC stream is `u32 LE length ‖ message`.
//!
//! The length counts the message bytes only (not the 4-byte prefix) and is at most
//! [`MAX_FRAME_LEN`] (16 MiB). A reader checks the prefix with [`frame_len`] before it allocates
//! anything, so a peer cannot make a node allocate more than the bound.

use crate::WireError;

/// Largest message a frame may carry: 16 MiB.
pub const MAX_FRAME_LEN: usize = 16 * 1024 * 1024;

/// Size of the length prefix in bytes.
pub const FRAME_HEADER_LEN: usize = 4;

/// The 4-byte prefix for a message of `len` bytes.
///
/// Errors: [`WireError::FrameTooLarge`] when `len > MAX_FRAME_LEN`.
pub fn frame_header(len: usize) -> Result<[u8; FRAME_HEADER_LEN], WireError> {
    if len > MAX_FRAME_LEN {
        return Err(WireError::FrameTooLarge {
            len,
            max: MAX_FRAME_LEN,
        });
    }
    // len <= 16 MiB always fits in u32.
    Ok((len as u32).to_le_bytes())
}

/// `message` with its length prefix, ready to write to a stream.
///
/// Errors: [`WireError::FrameTooLarge`] when the message is longer than [`MAX_FRAME_LEN`].
pub fn encode_frame(message: &[u8]) -> Result<Vec<u8>, WireError> {
    let header = frame_header(message.len())?;
    let mut out = Vec::with_capacity(FRAME_HEADER_LEN + message.len());
    out.extend_from_slice(&header);
    out.extend_from_slice(message);
    Ok(out)
}

/// The message length announced by a 4-byte prefix.
///
/// Errors: [`WireError::FrameTooLarge`] when the announced length exceeds [`MAX_FRAME_LEN`]; the
/// caller must then drop the stream without reading the body.
pub fn frame_len(header: [u8; FRAME_HEADER_LEN]) -> Result<usize, WireError> {
    let len = u32::from_le_bytes(header) as usize;
    if len > MAX_FRAME_LEN {
        return Err(WireError::FrameTooLarge {
            len,
            max: MAX_FRAME_LEN,
        });
    }
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_round_trip() {
        let framed = encode_frame(b"abc").unwrap();
        assert_eq!(framed, [3, 0, 0, 0, b'a', b'b', b'c']);
        let len = frame_len(framed[..4].try_into().unwrap()).unwrap();
        assert_eq!(&framed[4..4 + len], b"abc");
    }

    #[test]
    fn oversized_prefix_is_rejected_before_reading() {
        let header = ((MAX_FRAME_LEN + 1) as u32).to_le_bytes();
        assert!(matches!(
            frame_len(header),
            Err(WireError::FrameTooLarge { .. })
        ));
        assert_eq!(
            frame_len((MAX_FRAME_LEN as u32).to_le_bytes()).unwrap(),
            MAX_FRAME_LEN
        );
    }
}
