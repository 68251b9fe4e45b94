//! ZAP primitives: the 16-byte header, a strict bounds-checked [`Reader`], and the [`Builder`].
//!
//! This module knows nothing about message schemas; [`crate::messages`] defines them on top of these
//! primitives. The format is described in the crate docs ([`crate`]); in short:
//!
//! * header (16 bytes, little-endian): `magic "ZAP\0" | version u16 = 2 | flags u16 | root u32 | size u32`,
//!   flags = `message_type << 8 | reserved (0)`;
//! * an object is a fixed-size byte region; fields are read at fixed offsets with unaligned LE loads;
//! * a bytes or list field is 8 bytes `(u32 offset, u32 length-or-count)`, the offset relative to the
//!   field's own absolute position (so targets always lie after the field);
//! * a nested object field is an `i32` offset relative to the field's own position;
//! * a list of byte strings is `count` entries of 8 bytes, each itself a bytes field;
//! * the [`Builder`] starts every object, list and byte string on an 8-byte boundary, zero padded.
//!
//! Strictness (every check is done before any slice is taken, with checked arithmetic):
//! size equals the buffer length; magic, version and the reserved flags byte are exact; the root
//! offset is at least 16 and the root object's fixed section ends within the message; every pointer
//! target starts at or after byte 16 and its extent (`len`, or `count × 8` for lists) ends within the
//! message; every list entry is checked when the list is opened. Alignment is produced by the
//! builder but not required by the reader, whose loads are all unaligned.

use crate::WireError;

/// The four magic bytes every ZAP message starts with.
pub const MAGIC: [u8; 4] = *b"ZAP\0";
/// The only ZAP version this crate reads and writes.
pub const VERSION: u16 = 2;
/// Size of the header in bytes; no pointer may target a position below it.
pub const HEADER_LEN: usize = 16;
/// Alignment, in bytes, of every object, list and byte string the [`Builder`] lays out.
pub const ALIGN: usize = 8;
/// Size of a bytes or list pointer field: `(u32 relative offset, u32 length or count)`.
pub const POINTER_LEN: usize = 8;
/// Size of a nested object pointer field: `i32` relative offset.
pub const OBJECT_POINTER_LEN: usize = 4;
/// Size of one entry of a list of byte strings (each entry is a bytes pointer).
pub const BYTES_LIST_STRIDE: usize = POINTER_LEN;
/// Largest encodable message, in bytes: the header's size field is a `u32`.
pub const MAX_MESSAGE_LEN: u64 = u32::MAX as u64;

/// The decoded 16-byte header of a message whose magic, version, reserved byte and size are valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Message type byte (high byte of flags); not yet checked against the known types.
    pub message_type: u8,
    /// Absolute offset of the root object, in bytes; not yet bounds-checked.
    pub root: u32,
    /// Total message size in bytes; equals the buffer length.
    pub size: u32,
}

/// Reads `N` bytes at `at` from `buf`, or `None` when they are not all there.
fn read_array<const N: usize>(buf: &[u8], at: usize) -> Option<[u8; N]> {
    let end = at.checked_add(N)?;
    buf.get(at..end)?.try_into().ok()
}

/// Parses and checks the header of `buf`.
///
/// Errors, in the order checked: [`WireError::TooShort`] (fewer than 16 bytes),
/// [`WireError::BadMagic`], [`WireError::UnsupportedVersion`], [`WireError::ReservedFlags`],
/// [`WireError::SizeMismatch`] (header size ≠ `buf.len()`). The message type and the root offset are
/// returned unchecked; [`Reader::root`] checks the root.
pub fn read_header(buf: &[u8]) -> Result<Header, WireError> {
    let too_short = WireError::TooShort { len: buf.len() };
    let magic: [u8; 4] = read_array(buf, 0).ok_or_else(|| too_short.clone())?;
    let version = read_array(buf, 4).map(u16::from_le_bytes);
    let flags = read_array(buf, 6).map(u16::from_le_bytes);
    let root = read_array(buf, 8).map(u32::from_le_bytes);
    let size = read_array(buf, 12).map(u32::from_le_bytes);
    let (Some(version), Some(flags), Some(root), Some(size)) = (version, flags, root, size) else {
        return Err(too_short);
    };
    if magic != MAGIC {
        return Err(WireError::BadMagic { found: magic });
    }
    if version != VERSION {
        return Err(WireError::UnsupportedVersion { found: version });
    }
    let [reserved, message_type] = flags.to_le_bytes();
    if reserved != 0 {
        return Err(WireError::ReservedFlags { found: reserved });
    }
    if u64::from(size) != buf.len() as u64 {
        return Err(WireError::SizeMismatch {
            header: size,
            buffer: buf.len(),
        });
    }
    Ok(Header {
        message_type,
        root,
        size,
    })
}

/// A message whose header has been checked; opens the root object.
#[derive(Clone, Copy, Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    header: Header,
}

impl<'a> Reader<'a> {
    /// Checks the header of `buf` (see [`read_header`] for the errors).
    pub fn new(buf: &'a [u8]) -> Result<Self, WireError> {
        let header = read_header(buf)?;
        Ok(Self { buf, header })
    }

    /// The checked header.
    pub fn header(&self) -> Header {
        self.header
    }

    /// The raw message type byte (not checked against the known types).
    pub fn message_type(&self) -> u8 {
        self.header.message_type
    }

    /// The root object, whose fixed section is `object_size` bytes.
    ///
    /// Errors: [`WireError::RootOutOfBounds`] when the root offset is below 16 or
    /// `root + object_size` exceeds the message size.
    pub fn root(&self, object_size: usize) -> Result<Object<'a>, WireError> {
        let out = || WireError::RootOutOfBounds {
            offset: self.header.root,
            object_size,
            size: self.buf.len(),
        };
        let start = usize::try_from(self.header.root).map_err(|_| out())?;
        let end = start.checked_add(object_size).ok_or_else(out)?;
        if start < HEADER_LEN || end > self.buf.len() {
            return Err(out());
        }
        Ok(Object {
            buf: self.buf,
            start,
            size: object_size,
        })
    }
}

/// Checks that `len` bytes starting at `field + rel` lie within `16..buf.len()` and returns the
/// absolute start.
fn resolve(buf: &[u8], field: usize, rel: i64, len: u64) -> Result<usize, WireError> {
    let size = buf.len();
    let overflow = || WireError::LengthOverflow {
        field,
        count: len,
        stride: 1,
    };
    let field_i = i64::try_from(field).map_err(|_| overflow())?;
    let start = field_i.checked_add(rel).ok_or_else(overflow)?;
    let oob = || WireError::PointerOutOfBounds {
        field,
        start,
        len,
        size,
    };
    let start_u = u64::try_from(start).map_err(|_| oob())?;
    let end = start_u.checked_add(len).ok_or_else(overflow)?;
    if start_u < HEADER_LEN as u64 || end > size as u64 {
        return Err(oob());
    }
    usize::try_from(start_u).map_err(|_| oob())
}

/// A validated object: its fixed section `start..start + size` lies within the message.
///
/// Field reads check the field against the object's size; a failure there is a schema bug
/// ([`WireError::FieldOutsideObject`]), never an input error, since the section itself is in bounds.
#[derive(Clone, Copy, Debug)]
pub struct Object<'a> {
    buf: &'a [u8],
    start: usize,
    size: usize,
}

impl<'a> Object<'a> {
    /// Absolute position of `field`, with the field's `width` checked against the object's size.
    fn locate(&self, field: usize, width: usize) -> Result<usize, WireError> {
        let bad = || WireError::FieldOutsideObject {
            field,
            width,
            object_size: self.size,
        };
        let end = field.checked_add(width).ok_or_else(bad)?;
        if end > self.size {
            return Err(bad());
        }
        self.start.checked_add(field).ok_or_else(bad)
    }

    /// The `N` bytes of the field at `field`, borrowed from the message.
    ///
    /// Errors: [`WireError::FieldOutsideObject`] (schema bug) when the field does not fit the object.
    pub fn array<const N: usize>(&self, field: usize) -> Result<&'a [u8; N], WireError> {
        let at = self.locate(field, N)?;
        let bad = || WireError::FieldOutsideObject {
            field,
            width: N,
            object_size: self.size,
        };
        let end = at.checked_add(N).ok_or_else(bad)?;
        self.buf
            .get(at..end)
            .and_then(|s| s.try_into().ok())
            .ok_or_else(bad)
    }

    /// The `u8` field at `field`. Errors as [`Object::array`].
    pub fn u8(&self, field: usize) -> Result<u8, WireError> {
        self.array::<1>(field).map(|b| b[0])
    }

    /// The little-endian `u32` field at `field`. Errors as [`Object::array`].
    pub fn u32(&self, field: usize) -> Result<u32, WireError> {
        self.array::<4>(field).map(|b| u32::from_le_bytes(*b))
    }

    /// The little-endian `u64` field at `field`. Errors as [`Object::array`].
    pub fn u64(&self, field: usize) -> Result<u64, WireError> {
        self.array::<8>(field).map(|b| u64::from_le_bytes(*b))
    }

    /// The little-endian `i32` field at `field`. Errors as [`Object::array`].
    pub fn i32(&self, field: usize) -> Result<i32, WireError> {
        self.array::<4>(field).map(|b| i32::from_le_bytes(*b))
    }

    /// Reads a `(u32 relative offset, u32 length)` pointer at `field`.
    fn pointer(&self, field: usize) -> Result<(usize, u32, u32), WireError> {
        let at = self.locate(field, POINTER_LEN)?;
        let rel = self.u32(field)?;
        let len = self.u32(field.saturating_add(4))?;
        Ok((at, rel, len))
    }

    /// The length (bytes field) or count (list field) that the pointer at `field` announces, *not*
    /// checked against the message. A schema reads it to refuse an out-of-range length or count
    /// before [`Object::bytes`] or [`Object::bytes_list`] resolves the pointer and walks entries.
    ///
    /// Errors: [`WireError::FieldOutsideObject`] (schema bug).
    pub fn announced_len(&self, field: usize) -> Result<u32, WireError> {
        self.pointer(field).map(|(_, _, len)| len)
    }

    /// The variable-length byte string the bytes field at `field` points to, borrowed.
    ///
    /// Errors: [`WireError::PointerOutOfBounds`] when the target starts below byte 16 or ends past
    /// the message; [`WireError::FieldOutsideObject`] (schema bug).
    pub fn bytes(&self, field: usize) -> Result<&'a [u8], WireError> {
        let (at, rel, len) = self.pointer(field)?;
        let start = resolve(self.buf, at, i64::from(rel), u64::from(len))?;
        slice(self.buf, at, start, u64::from(len))
    }

    /// The nested object of fixed size `object_size` the `i32` field at `field` points to.
    ///
    /// Errors: [`WireError::PointerOutOfBounds`] when the object starts below byte 16 or its fixed
    /// section ends past the message; [`WireError::FieldOutsideObject`] (schema bug).
    pub fn object(&self, field: usize, object_size: usize) -> Result<Object<'a>, WireError> {
        let at = self.locate(field, OBJECT_POINTER_LEN)?;
        let rel = self.i32(field)?;
        let start = resolve(self.buf, at, i64::from(rel), object_size as u64)?;
        Ok(Object {
            buf: self.buf,
            start,
            size: object_size,
        })
    }

    /// The list of byte strings the list field at `field` points to, with every entry checked.
    ///
    /// Errors: [`WireError::LengthOverflow`] when `count × 8` overflows;
    /// [`WireError::PointerOutOfBounds`] when the entry array or any entry's target is outside
    /// `16..size`; [`WireError::FieldOutsideObject`] (schema bug). Work is O(count) and count is
    /// bounded by the message size / 8, so a hostile count cannot cause unbounded work.
    pub fn bytes_list(&self, field: usize) -> Result<BytesList<'a>, WireError> {
        let (at, rel, count) = self.pointer(field)?;
        let stride = BYTES_LIST_STRIDE as u64;
        let extent = u64::from(count)
            .checked_mul(stride)
            .ok_or(WireError::LengthOverflow {
                field: at,
                count: u64::from(count),
                stride,
            })?;
        let start = resolve(self.buf, at, i64::from(rel), extent)?;
        let list = BytesList {
            buf: self.buf,
            start,
            count: count as usize,
        };
        for index in 0..list.count {
            list.entry(index)?;
        }
        Ok(list)
    }
}

/// `buf[start..start + len]`, reported as out of bounds for the pointer at `field` when missing.
fn slice(buf: &[u8], field: usize, start: usize, len: u64) -> Result<&[u8], WireError> {
    let oob = || WireError::PointerOutOfBounds {
        field,
        start: start as i64,
        len,
        size: buf.len(),
    };
    let len = usize::try_from(len).map_err(|_| oob())?;
    let end = start.checked_add(len).ok_or_else(oob)?;
    buf.get(start..end).ok_or_else(oob)
}

/// A validated list of byte strings: `count` 8-byte entries, each a bytes pointer relative to the
/// entry's own position, every target checked when the list was opened.
#[derive(Clone, Copy, Debug)]
pub struct BytesList<'a> {
    buf: &'a [u8],
    start: usize,
    count: usize,
}

impl<'a> BytesList<'a> {
    /// Resolves entry `index` (checked).
    fn entry(&self, index: usize) -> Result<&'a [u8], WireError> {
        let overflow = || WireError::LengthOverflow {
            field: self.start,
            count: index as u64,
            stride: BYTES_LIST_STRIDE as u64,
        };
        let at = index
            .checked_mul(BYTES_LIST_STRIDE)
            .and_then(|o| o.checked_add(self.start))
            .ok_or_else(overflow)?;
        let oob = || WireError::PointerOutOfBounds {
            field: at,
            start: at as i64,
            len: POINTER_LEN as u64,
            size: self.buf.len(),
        };
        let rel = read_array(self.buf, at)
            .map(u32::from_le_bytes)
            .ok_or_else(oob)?;
        let len_at = at.checked_add(4).ok_or_else(oob)?;
        let len = read_array(self.buf, len_at)
            .map(u32::from_le_bytes)
            .ok_or_else(oob)?;
        let start = resolve(self.buf, at, i64::from(rel), u64::from(len))?;
        slice(self.buf, at, start, u64::from(len))
    }

    /// Number of byte strings in the list.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Byte string `index`, borrowed from the message; `None` when `index >= len()`.
    pub fn get(&self, index: usize) -> Option<&'a [u8]> {
        if index >= self.count {
            return None;
        }
        self.entry(index).ok()
    }

    /// Iterates over the byte strings in order, borrowed from the message.
    pub fn iter(&self) -> BytesIter<'a> {
        BytesIter {
            list: *self,
            next: 0,
        }
    }
}

/// Iterator over a [`BytesList`]; yields exactly `len()` borrowed byte strings.
#[derive(Clone, Debug)]
pub struct BytesIter<'a> {
    list: BytesList<'a>,
    next: usize,
}

impl<'a> Iterator for BytesIter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.next >= self.list.count {
            return None;
        }
        let index = self.next;
        self.next = index.saturating_add(1);
        // Every entry was checked when the list was opened, so `get` succeeds; the empty-slice
        // fallback only keeps the iterator's length exact without a panic path.
        Some(self.list.get(index).unwrap_or_default())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.list.count.saturating_sub(self.next);
        (left, Some(left))
    }
}

impl ExactSizeIterator for BytesIter<'_> {}

/// A fixed-size object the [`Builder`] has laid out: absolute start and fixed size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    start: usize,
    size: usize,
}

/// Lays out one message: header, root object, then out-of-line data in the order it is added.
///
/// Every region starts 8-byte aligned and padding is zero. Growth is checked against
/// [`MAX_MESSAGE_LEN`] before memory is reserved, so building fails with
/// [`WireError::MessageTooLarge`] instead of allocating past it.
#[derive(Debug)]
pub struct Builder {
    buf: Vec<u8>,
    limit: u64,
}

impl Builder {
    /// Starts a message of type `message_type` whose root object is `root_size` bytes at offset 16.
    ///
    /// Errors: [`WireError::MessageTooLarge`] when the root does not fit.
    pub fn new(message_type: u8, root_size: usize) -> Result<(Self, Slot), WireError> {
        Self::with_limit(message_type, root_size, MAX_MESSAGE_LEN)
    }

    /// As [`Builder::new`] with a smaller size limit (tests of the limit use it).
    pub(crate) fn with_limit(
        message_type: u8,
        root_size: usize,
        limit: u64,
    ) -> Result<(Self, Slot), WireError> {
        let mut builder = Self {
            buf: Vec::with_capacity(HEADER_LEN + root_size),
            limit,
        };
        builder.buf.extend_from_slice(&MAGIC);
        builder.buf.extend_from_slice(&VERSION.to_le_bytes());
        builder
            .buf
            .extend_from_slice(&u16::from_le_bytes([0, message_type]).to_le_bytes());
        builder.buf.extend_from_slice(&[0; 8]); // root and size, written below and in finish
        let root = builder.alloc(root_size)?;
        let root_u32 = u32::try_from(root.start).map_err(|_| builder.too_large())?;
        builder.set_header_u32(8, root_u32);
        Ok((builder, root))
    }

    /// Writes `value` at header byte `at` (8 = root, 12 = size); the header is always present.
    fn set_header_u32(&mut self, at: usize, value: u32) {
        if let Some(dst) = self.buf.get_mut(at..at.saturating_add(4)) {
            dst.copy_from_slice(&value.to_le_bytes());
        }
    }

    fn too_large(&self) -> WireError {
        WireError::MessageTooLarge { max: self.limit }
    }

    /// Pads to [`ALIGN`] and appends `len` zero bytes; returns their slot.
    fn alloc(&mut self, len: usize) -> Result<Slot, WireError> {
        let start = self.buf.len().next_multiple_of(ALIGN);
        let end = start.checked_add(len).ok_or_else(|| self.too_large())?;
        if end as u64 > self.limit {
            return Err(self.too_large());
        }
        self.buf.resize(end, 0);
        Ok(Slot { start, size: len })
    }

    /// Absolute position of `field` in `slot`, with `width` checked against the slot size.
    fn locate(&self, slot: Slot, field: usize, width: usize) -> Result<usize, WireError> {
        let bad = WireError::FieldOutsideObject {
            field,
            width,
            object_size: slot.size,
        };
        match field.checked_add(width) {
            Some(end) if end <= slot.size => slot.start.checked_add(field).ok_or(bad),
            _ => Err(bad),
        }
    }

    /// Writes `bytes` inline at `field` of `slot` (fixed-size fields: integers, hashes, signatures).
    ///
    /// Errors: [`WireError::FieldOutsideObject`] (schema bug) when the field does not fit the slot.
    pub fn put(&mut self, slot: Slot, field: usize, bytes: &[u8]) -> Result<(), WireError> {
        let at = self.locate(slot, field, bytes.len())?;
        let bad = WireError::FieldOutsideObject {
            field,
            width: bytes.len(),
            object_size: slot.size,
        };
        let end = at.checked_add(bytes.len()).ok_or(bad.clone())?;
        self.buf.get_mut(at..end).ok_or(bad)?.copy_from_slice(bytes);
        Ok(())
    }

    /// Writes a `u8` at `field`. Errors as [`Builder::put`].
    pub fn put_u8(&mut self, slot: Slot, field: usize, value: u8) -> Result<(), WireError> {
        self.put(slot, field, &[value])
    }

    /// Writes a little-endian `u32` at `field`. Errors as [`Builder::put`].
    pub fn put_u32(&mut self, slot: Slot, field: usize, value: u32) -> Result<(), WireError> {
        self.put(slot, field, &value.to_le_bytes())
    }

    /// Writes a little-endian `u64` at `field`. Errors as [`Builder::put`].
    pub fn put_u64(&mut self, slot: Slot, field: usize, value: u64) -> Result<(), WireError> {
        self.put(slot, field, &value.to_le_bytes())
    }

    /// Writes the pointer `(target - field position, len)` at `field`.
    fn put_pointer(
        &mut self,
        slot: Slot,
        field: usize,
        target: usize,
        len: usize,
    ) -> Result<(), WireError> {
        let at = self.locate(slot, field, POINTER_LEN)?;
        let rel = target.checked_sub(at).and_then(|r| u32::try_from(r).ok());
        let len = u32::try_from(len).ok();
        let (Some(rel), Some(len)) = (rel, len) else {
            return Err(self.too_large());
        };
        self.put_u32(slot, field, rel)?;
        self.put_u32(
            slot,
            field.checked_add(4).ok_or_else(|| self.too_large())?,
            len,
        )
    }

    /// Appends `data` out of line and writes a bytes pointer to it at `field`.
    ///
    /// Errors: [`WireError::MessageTooLarge`]; [`WireError::FieldOutsideObject`] (schema bug).
    pub fn put_bytes(&mut self, slot: Slot, field: usize, data: &[u8]) -> Result<(), WireError> {
        let target = self.alloc(data.len())?;
        self.put(target, 0, data)?;
        self.put_pointer(slot, field, target.start, data.len())
    }

    /// Appends a list of byte strings out of line (entry array, then each string) and writes a list
    /// pointer `(offset, count)` to it at `field`.
    ///
    /// Errors: [`WireError::MessageTooLarge`]; [`WireError::FieldOutsideObject`] (schema bug).
    pub fn put_bytes_list<T: AsRef<[u8]>>(
        &mut self,
        slot: Slot,
        field: usize,
        items: &[T],
    ) -> Result<(), WireError> {
        let extent = items
            .len()
            .checked_mul(BYTES_LIST_STRIDE)
            .ok_or_else(|| self.too_large())?;
        let list = self.alloc(extent)?;
        self.put_pointer(slot, field, list.start, items.len())?;
        for (index, item) in items.iter().enumerate() {
            let item = item.as_ref();
            let target = self.alloc(item.len())?;
            self.put(target, 0, item)?;
            // index * 8 < extent, computed above without overflow.
            self.put_pointer(list, index * BYTES_LIST_STRIDE, target.start, item.len())?;
        }
        Ok(())
    }

    /// Appends a nested object of `size` bytes and writes an `i32` pointer to it at `field`;
    /// returns the new object's slot for its fields.
    ///
    /// Errors: [`WireError::MessageTooLarge`]; [`WireError::FieldOutsideObject`] (schema bug).
    pub fn put_object(&mut self, slot: Slot, field: usize, size: usize) -> Result<Slot, WireError> {
        let at = self.locate(slot, field, OBJECT_POINTER_LEN)?;
        let target = self.alloc(size)?;
        let rel = i64::try_from(target.start)
            .ok()
            .zip(i64::try_from(at).ok())
            .and_then(|(t, a)| t.checked_sub(a))
            .and_then(|r| i32::try_from(r).ok())
            .ok_or_else(|| self.too_large())?;
        self.put(slot, field, &rel.to_le_bytes())?;
        Ok(target)
    }

    /// Writes the total size into the header and returns the message.
    ///
    /// Errors: [`WireError::MessageTooLarge`] when the message exceeds `u32::MAX` bytes (already
    /// enforced while building).
    pub fn finish(mut self) -> Result<Vec<u8>, WireError> {
        let size = u32::try_from(self.buf.len()).map_err(|_| self.too_large())?;
        self.set_header_u32(12, size);
        Ok(self.buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let (mut b, root) = Builder::new(7, 24).unwrap();
        b.put_u64(root, 0, 0x0102_0304_0506_0708).unwrap();
        b.put_bytes(root, 8, b"abc").unwrap();
        b.put_bytes_list(root, 16, &[&b"x"[..], b"", b"yz"])
            .unwrap();
        b.finish().unwrap()
    }

    #[test]
    fn builder_layout_and_reader_agree() {
        let msg = sample();
        assert_eq!(msg.len() % ALIGN, 2, "last string 'yz' is not padded");
        let r = Reader::new(&msg).unwrap();
        assert_eq!(
            r.header(),
            Header {
                message_type: 7,
                root: 16,
                size: msg.len() as u32
            }
        );
        let root = r.root(24).unwrap();
        assert_eq!(root.u64(0).unwrap(), 0x0102_0304_0506_0708);
        assert_eq!(root.bytes(8).unwrap(), b"abc");
        let list = root.bytes_list(16).unwrap();
        let items: Vec<&[u8]> = list.iter().collect();
        assert_eq!(items, [&b"x"[..], b"", b"yz"]);
        assert_eq!(list.iter().len(), 3);
        assert_eq!(list.get(3), None);
    }

    #[test]
    fn schema_bugs_are_errors_not_panics() {
        let (mut b, root) = Builder::new(1, 8).unwrap();
        assert!(matches!(
            b.put_u64(root, 1, 0),
            Err(WireError::FieldOutsideObject { .. })
        ));
        assert!(matches!(
            b.put_bytes(root, usize::MAX, b""),
            Err(WireError::FieldOutsideObject { .. })
        ));
        let msg = b.finish().unwrap();
        let obj = Reader::new(&msg).unwrap().root(8).unwrap();
        assert!(matches!(
            obj.u32(6),
            Err(WireError::FieldOutsideObject { .. })
        ));
        assert!(matches!(
            obj.array::<8>(usize::MAX),
            Err(WireError::FieldOutsideObject { .. })
        ));
    }

    #[test]
    fn builder_stops_at_the_size_limit_before_allocating() {
        let (mut b, root) = Builder::with_limit(1, 8, 64).unwrap();
        assert_eq!(
            b.put_bytes(root, 0, &[0; 64]),
            Err(WireError::MessageTooLarge { max: 64 })
        );
        assert!(b.buf.len() <= 64);
        assert!(Builder::with_limit(1, 64, 64).is_err());
    }

    #[test]
    fn nested_object_pointer_may_point_backwards() {
        let (mut b, root) = Builder::new(1, 16).unwrap();
        let child = b.put_object(root, 0, 8).unwrap();
        b.put_u64(child, 0, 42).unwrap();
        // A second pointer at field 8 that points back at the root object itself (offset -8).
        b.put(root, 8, &(-8i32).to_le_bytes()).unwrap();
        let msg = b.finish().unwrap();
        let root = Reader::new(&msg).unwrap().root(16).unwrap();
        assert_eq!(root.object(0, 8).unwrap().u64(0).unwrap(), 42);
        assert_eq!(root.object(8, 8).unwrap().i32(0).unwrap(), 16);
        // Pointing into the header is rejected.
        let mut bad = msg.clone();
        bad[16..20].copy_from_slice(&(-4i32).to_le_bytes());
        let root = Reader::new(&bad).unwrap().root(16).unwrap();
        assert!(matches!(
            root.object(0, 8),
            Err(WireError::PointerOutOfBounds { start: 12, .. })
        ));
    }
}
