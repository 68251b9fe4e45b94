//! Bit packing for Corona's compact encodings, and the error every Corona decoder returns.
//!
//! Fields are packed least-significant bit first into a little-endian bit stream: value k of
//! width w occupies bits k·w .. (k+1)·w of the stream, bit b of the stream being bit b mod 8 of
//! byte ⌊b/8⌋. The last byte is padded with zero bits, and decoders reject a non-zero pad, so
//! every value has exactly one encoding. Signed values are w-bit two's complement.
//!
//! Decoders take the exact length first (computed from public counts and widths, never from
//! the input), so nothing is allocated from an attacker-chosen length.

/// Why bytes are not a valid Corona encoding (group key, signature, round message, key share).
/// The input is malformed: drop it (and, for a peer's message, penalize the peer); never fatal
/// here (a node that cannot load its own key share decides what that means for it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodingError {
    /// The input has the wrong length for its header.
    #[error("{what}: expected {expected} bytes, got {got}")]
    Length {
        /// The object being decoded.
        what: &'static str,
        /// The length its header (or format) requires.
        expected: usize,
        /// The length given.
        got: usize,
    },
    /// The input ends before its header is complete.
    #[error("{what}: truncated header")]
    Truncated {
        /// The object being decoded.
        what: &'static str,
    },
    /// A field holds a value outside its range (a coefficient ≥ q, a width above its maximum,
    /// a party index above the maximum).
    #[error("{what}: value out of range")]
    OutOfRange {
        /// The field.
        what: &'static str,
    },
    /// A field is in range but not in its one canonical form (non-zero padding, unsorted
    /// positions or recipients, a width that is not the minimal one).
    #[error("{what}: non-canonical encoding")]
    NonCanonical {
        /// The field.
        what: &'static str,
    },
}

/// Bytes needed for `count` values of `width` bits.
pub(crate) const fn packed_len(count: usize, width: u32) -> usize {
    (count * width as usize).div_ceil(8)
}

/// Packs each value's low `width` bits (`width` ≤ 64); appends to `out`. Whole 64-bit words are
/// written at once (the stream is little-endian, so a word is its 8 bytes in order).
pub(crate) fn pack(values: impl IntoIterator<Item = u64>, width: u32, out: &mut Vec<u8>) {
    let mask = low_mask(width);
    let mut acc: u128 = 0;
    // Fewer than 64 bits wait in `acc` between values, so a value of ≤ 64 bits always fits.
    let mut bits: u32 = 0;
    for v in values {
        acc |= u128::from(v & mask) << bits;
        bits += width;
        if bits >= 64 {
            out.extend_from_slice(&(acc as u64).to_le_bytes());
            acc >>= 64;
            bits -= 64;
        }
    }
    while bits > 0 {
        out.push(acc as u8);
        acc >>= 8;
        bits = bits.saturating_sub(8);
    }
}

/// Unpacks exactly `count` values of `width` bits (≤ 64) from `bytes`, which must be exactly
/// [`packed_len`]`(count, width)` long with zero padding bits; each value is passed to `sink`.
///
/// The stream is read a 64-bit word at a time while whole words remain (then byte by byte), so a
/// 615 KB round-1 commitment costs one refill per value rather than one step per byte.
pub(crate) fn unpack(
    bytes: &[u8],
    count: usize,
    width: u32,
    what: &'static str,
    mut sink: impl FnMut(u64) -> Result<(), EncodingError>,
) -> Result<(), EncodingError> {
    let expected = packed_len(count, width);
    if bytes.len() != expected {
        return Err(EncodingError::Length {
            what,
            expected,
            got: bytes.len(),
        });
    }
    let mask = low_mask(width);
    let mut acc: u128 = 0;
    // Bits read but not yet consumed: fewer than `width` ≤ 64 before a refill, so a refilled
    // word always fits in `acc` and one refill always suffices.
    let mut bits: u32 = 0;
    let mut input = bytes;
    for _ in 0..count {
        if bits < width {
            if let Some((word, rest)) = input.split_first_chunk::<8>() {
                acc |= u128::from(u64::from_le_bytes(*word)) << bits;
                bits += 64;
                input = rest;
            } else {
                while bits < width {
                    let (byte, rest) = input
                        .split_first()
                        .ok_or(EncodingError::Truncated { what })?;
                    acc |= u128::from(*byte) << bits;
                    bits += 8;
                    input = rest;
                }
            }
        }
        sink((acc as u64) & mask)?;
        acc >>= width;
        bits -= width;
    }
    // With the exact length, what is left in `acc` is the padding (fewer than 8 bits) and no
    // byte stays unread.
    if acc != 0 || !input.is_empty() {
        return Err(EncodingError::NonCanonical { what });
    }
    Ok(())
}

/// The `width`-bit two's complement bit pattern of v (valid when v fits, see [`signed_width`]).
pub(crate) const fn to_twos(v: i64, width: u32) -> u64 {
    (v as u64) & low_mask(width)
}

/// The signed value of a `width`-bit two's complement pattern (1 ≤ `width` ≤ 64).
pub(crate) const fn from_twos(bits: u64, width: u32) -> i64 {
    let shift = 64 - width;
    ((bits << shift) as i64) >> shift
}

/// The fewest bits w ≥ 1 whose two's complement range [−2^(w−1), 2^(w−1)) holds v.
pub(crate) const fn signed_width(v: i64) -> u32 {
    65 - (v ^ (v >> 63)).leading_zeros()
}

/// 2^width − 1 for width ≤ 64.
const fn low_mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_round_trips_and_rejects_padding() {
        let values: Vec<u64> = (0..13u64)
            .map(|i| (i * 0x1234_5678_9abc) & 0x1ffff)
            .collect();
        let mut out = Vec::new();
        pack(values.iter().copied(), 17, &mut out);
        assert_eq!(out.len(), packed_len(13, 17));
        let mut back = Vec::new();
        unpack(&out, 13, 17, "t", |v| {
            back.push(v);
            Ok(())
        })
        .unwrap();
        assert_eq!(back, values);
        let last = out.len() - 1;
        out[last] |= 0x80;
        assert!(matches!(
            unpack(&out, 13, 17, "t", |_| Ok(())),
            Err(EncodingError::NonCanonical { .. })
        ));
    }

    /// The stream layout of the module docs, one bit at a time: value k of width w is bits
    /// k·w .. (k+1)·w, bit b being bit b mod 8 of byte ⌊b/8⌋.
    fn pack_bitwise(values: &[u64], width: u32) -> Vec<u8> {
        let mut out = vec![0u8; packed_len(values.len(), width)];
        for (k, v) in values.iter().enumerate() {
            for i in 0..width as usize {
                let b = k * width as usize + i;
                out[b / 8] |= (((v >> i) & 1) as u8) << (b % 8);
            }
        }
        out
    }

    /// The word-at-a-time pack and unpack agree with the bit-by-bit layout for every width and
    /// for counts that end on, before and after a word boundary; a set padding bit, a wrong
    /// length and a sink error are all refused.
    #[test]
    fn word_packing_matches_the_bitwise_layout() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for width in 1..=64u32 {
            for count in [0usize, 1, 2, 7, 8, 9, 63, 64, 65, 200] {
                let values: Vec<u64> = (0..count)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x & low_mask(width)
                    })
                    .collect();
                let mut packed = Vec::new();
                pack(values.iter().copied(), width, &mut packed);
                assert_eq!(packed, pack_bitwise(&values, width), "w={width} n={count}");
                let mut back = Vec::new();
                unpack(&packed, count, width, "t", |v| {
                    back.push(v);
                    Ok(())
                })
                .unwrap();
                assert_eq!(back, values, "w={width} n={count}");
                let total = count * width as usize;
                if !total.is_multiple_of(8) {
                    let mut padded = packed.clone();
                    *padded.last_mut().unwrap() |= 0x80;
                    assert_eq!(
                        unpack(&padded, count, width, "t", |_| Ok(())),
                        Err(EncodingError::NonCanonical { what: "t" })
                    );
                }
                let mut longer = packed.clone();
                longer.push(0);
                assert!(matches!(
                    unpack(&longer, count, width, "t", |_| Ok(())),
                    Err(EncodingError::Length { .. })
                ));
                if count > 0 {
                    let refused = EncodingError::OutOfRange { what: "sink" };
                    assert_eq!(
                        unpack(&packed, count, width, "t", |_| Err(refused.clone())),
                        Err(refused)
                    );
                }
            }
        }
    }

    #[test]
    fn signed_widths() {
        assert_eq!(signed_width(0), 1);
        assert_eq!(signed_width(-1), 1);
        assert_eq!(signed_width(1), 2);
        assert_eq!(signed_width(-2), 2);
        assert_eq!(signed_width(i64::MIN), 64);
        for v in [-5i64, 0, 7, -1 << 40, (1 << 40) - 1] {
            let w = signed_width(v);
            assert_eq!(from_twos(to_twos(v, w), w), v);
        }
    }
}
