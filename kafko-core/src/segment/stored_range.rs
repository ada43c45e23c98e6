//! Serving stored batches as one slice of one read: a fetch of a format 2 segment reads
//! the byte range its answer needs (from the index entry before the offset asked, to
//! `max_bytes` past it), checks every batch in place — header, CRC-32C, and that each
//! starts at the offset where the one before ended (FORMAT.md) — and answers a slice of
//! that buffer. No batch is copied in user space; the buffer is read once.

use bytes::{Bytes, BytesMut};

use super::Segment;
use super::batch::{BatchHeader, Format, HEADER_LEN, HeaderError, crc_matches};
use super::index::INDEX_INTERVAL_BYTES;
use super::reader::read_full;
use crate::error::{KafkoError, Result};

/// Whole stored batches of one segment, back to back.
pub(crate) struct StoredRange {
    /// The batches as stored (empty when none qualifies).
    pub(crate) bytes: Bytes,
    /// Records in them.
    pub(crate) records: u64,
    /// The offset after the last batch (the offset asked when none).
    pub(crate) next_offset: u64,
}

/// What a window of the file holds at a position.
enum Step {
    /// A checked batch.
    Batch(BatchHeader),
    /// The batch there reaches past the window: read again, at least this many bytes.
    Beyond(usize),
}

fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

impl StoredRange {
    fn with(mut self, bytes: Option<Bytes>) -> Self {
        self.bytes = bytes.unwrap_or_default();
        self
    }
}

impl Segment {
    /// The whole batches from the one holding `offset`, below `hw`, at most `max_bytes`
    /// of them (the first even past it when `at_least_one`). Format 2 only.
    ///
    /// # Errors
    /// `Corruption` naming this file and the position of a batch that fails its checks;
    /// the read's I/O error.
    pub(crate) fn stored_range(
        &self,
        offset: u64,
        hw: u64,
        max_bytes: usize,
        at_least_one: bool,
    ) -> Result<StoredRange> {
        debug_assert_eq!(self.format, Format::V2);
        let (rel, entry) = self.index_entry(offset);
        let end = self.len();
        let file = self.file()?;
        let mut out = StoredRange {
            bytes: Bytes::new(),
            records: 0,
            next_offset: offset,
        };
        // The window's place in the file, and where the answer starts in it.
        let mut at = u64::from(entry);
        let mut expected = self.base_offset + u64::from(rel);
        let mut want = max_bytes.saturating_add(to_usize(INDEX_INTERVAL_BYTES));
        loop {
            let len = want.min(to_usize(end - at));
            if len == 0 {
                return Ok(out);
            }
            let mut buf = BytesMut::zeroed(len);
            let got = read_full(file.as_ref(), &mut buf, at)
                .map_err(|e| KafkoError::io("reading", &self.log_path, e))?;
            buf.truncate(got);
            let window = buf.freeze();
            let mut p = 0;
            let mut start = None;
            while p < window.len() {
                let step = self.check(&window, p, at, expected)?;
                let header = match step {
                    Step::Batch(h) => h,
                    Step::Beyond(need) if start.is_none() => {
                        // Nothing kept from this window yet: read again from this batch.
                        at += p as u64;
                        want = want.max(need);
                        break;
                    }
                    Step::Beyond(_) => break,
                };
                let framed = header.framed_len();
                expected = header.next_offset();
                if header.next_offset() <= offset {
                    p += framed;
                    continue;
                }
                if header.base_offset >= hw {
                    // Written, not yet readable: the answer ends before it.
                    return Ok(out.with(start.map(|from| window.slice(from..p))));
                }
                let from = *start.get_or_insert(p);
                let taken = p + framed - from;
                if taken > max_bytes && !(from == p && at_least_one) {
                    break;
                }
                out.records += u64::from(header.record_count);
                out.next_offset = header.next_offset();
                p += framed;
                if taken >= max_bytes {
                    break;
                }
            }
            if let Some(from) = start {
                out.bytes = window.slice(from..p);
                return Ok(out);
            }
            if p >= window.len() {
                // Every batch of the window lies before the offset asked: read on.
                at += p as u64;
            }
            if at >= end {
                return Ok(out);
            }
        }
    }

    /// Checks the batch at `p` of `window` (read at file position `at`), which must
    /// hold offset `expected` first.
    fn check(&self, window: &Bytes, p: usize, at: u64, expected: u64) -> Result<Step> {
        let position = at + p as u64;
        let bad = |why: String| KafkoError::corruption(&self.log_path, position, why);
        if window.len() - p < HEADER_LEN {
            return Ok(Step::Beyond(HEADER_LEN));
        }
        let header = match BatchHeader::parse(&window[p..], Format::V2) {
            Ok(h) => h,
            Err(HeaderError::EndOfLog) => return Err(bad("zeroes inside the log".into())),
            Err(HeaderError::Short) => return Ok(Step::Beyond(HEADER_LEN)),
            Err(HeaderError::Invalid(why)) => return Err(bad(why)),
        };
        let framed = header.framed_len();
        if window.len() - p < framed {
            return Ok(Step::Beyond(framed));
        }
        if header.base_offset != expected {
            return Err(bad(format!(
                "base offset {} where {expected} was expected",
                header.base_offset
            )));
        }
        if !crc_matches(&header, &window[p..p + framed]) {
            return Err(bad("CRC mismatch".into()));
        }
        Ok(Step::Batch(header))
    }
}
