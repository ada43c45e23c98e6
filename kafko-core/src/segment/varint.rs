//! LEB128 varints and zig-zag signed varints used inside a batch's record area.

/// Appends `v` as an unsigned LEB128 varint.
///
/// Byte by byte: the encoder reserves each record's room first, so a push is a compare
/// and a store, where appending a scratch array called `memcpy` for one to three bytes
/// (~2.9 calls per record of a JSON batch, ~60 instructions each with the call).
#[inline]
// Each step keeps the low seven bits on purpose: that is the encoding.
#[allow(clippy::cast_possible_truncation)]
pub(crate) fn put_uvarint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends `v` zig-zag encoded.
#[inline]
pub(crate) fn put_varint(out: &mut Vec<u8>, v: i64) {
    put_uvarint(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// A cursor over a byte slice that fails instead of panicking on short input.
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }

    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    #[inline]
    pub(crate) fn uvarint(&mut self) -> Result<u64, String> {
        // One byte, the usual case for a record's lengths and deltas, without the loop.
        match self.buf.get(self.pos) {
            Some(&b) if b & 0x80 == 0 => {
                self.pos += 1;
                Ok(u64::from(b))
            }
            _ => self.long_uvarint(),
        }
    }

    fn long_uvarint(&mut self) -> Result<u64, String> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = *self.buf.get(self.pos).ok_or("truncated varint")?;
            self.pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("varint longer than 10 bytes".into())
    }

    /// A varint that sizes something in memory: a length, or a count.
    #[inline]
    pub(crate) fn length(&mut self) -> Result<usize, String> {
        let v = self.uvarint()?;
        usize::try_from(v).map_err(|_| format!("length {v} does not fit in memory"))
    }

    #[inline]
    pub(crate) fn varint(&mut self) -> Result<i64, String> {
        let u = self.uvarint()?;
        Ok(((u >> 1) as i64) ^ -((u & 1) as i64))
    }

    /// Takes `len` bytes, returning their range in the underlying buffer.
    #[inline]
    pub(crate) fn take(&mut self, len: usize) -> Result<std::ops::Range<usize>, String> {
        let end = self.pos.checked_add(len).ok_or("length overflow")?;
        if end > self.buf.len() {
            return Err(format!("field of {len} bytes runs past the end"));
        }
        let r = self.pos..end;
        self.pos = end;
        Ok(r)
    }

    /// A length-prefixed optional field (-1 = absent).
    #[inline]
    pub(crate) fn optional_bytes(&mut self) -> Result<Option<std::ops::Range<usize>>, String> {
        match self.varint()? {
            -1 => Ok(None),
            n if n < 0 => Err(format!("negative length {n}")),
            n => {
                let len =
                    usize::try_from(n).map_err(|_| format!("length {n} does not fit in memory"))?;
                self.take(len).map(Some)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn varints_round_trip(u in any::<u64>(), i in any::<i64>()) {
            let mut out = Vec::new();
            put_uvarint(&mut out, u);
            put_varint(&mut out, i);
            let mut c = Cursor::new(&out);
            prop_assert_eq!(c.uvarint().unwrap(), u);
            prop_assert_eq!(c.varint().unwrap(), i);
            prop_assert!(c.is_empty());
        }
    }

    #[test]
    fn truncated_varint_is_an_error() {
        assert!(Cursor::new(&[0x80, 0x80]).uvarint().is_err());
        assert!(Cursor::new(&[0xff; 11]).uvarint().is_err());
    }
}
