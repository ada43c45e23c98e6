//! Iterates the framed batches of a segment between two byte positions with large
//! positional reads, verifying every batch's CRC before handing it out.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use super::batch::{BatchHeader, Format, HeaderError, crc_matches};
use crate::storage::StorageFile;

/// Bytes fetched per read when scanning.
const CHUNK: usize = 256 * 1024;

/// Why iteration stopped early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BatchFault {
    /// All-zero length: nothing was written here.
    Zeroes,
    /// The batch runs past `end`.
    Short,
    /// Header fields are implausible.
    BadHeader(String),
    /// The CRC does not match.
    BadCrc,
    /// The OS failed the read.
    Io(String),
}

/// A verified batch and where it starts.
pub(crate) struct FramedBatch {
    pub(crate) position: u64,
    pub(crate) header: BatchHeader,
    pub(crate) bytes: Bytes,
}

/// The file a [`BatchIter`] reads: borrowed, or shared with the segment that lent it.
enum FileRef<'a> {
    Borrowed(&'a dyn StorageFile),
    Owned(Arc<dyn StorageFile>),
}

impl FileRef<'_> {
    fn get(&self) -> &dyn StorageFile {
        match self {
            FileRef::Borrowed(f) => *f,
            FileRef::Owned(f) => &**f,
        }
    }
}

/// Reads batches from `pos` up to `end`.
pub(crate) struct BatchIter<'a> {
    file: FileRef<'a>,
    pos: u64,
    end: u64,
    format: Format,
    /// The base offset the next batch must have (format 2, when known).
    expected_base: Option<u64>,
    buf: Bytes,
    buf_start: u64,
}

impl<'a> BatchIter<'a> {
    pub(crate) fn new(file: &'a dyn StorageFile, pos: u64, end: u64, format: Format) -> Self {
        BatchIter {
            file: FileRef::Borrowed(file),
            pos,
            end,
            format,
            expected_base: None,
            buf: Bytes::new(),
            buf_start: pos,
        }
    }

    /// Reads `file`, keeping it open while the iterator lives.
    pub(crate) fn owned(
        file: Arc<dyn StorageFile>,
        pos: u64,
        end: u64,
        format: Format,
    ) -> BatchIter<'static> {
        BatchIter {
            file: FileRef::Owned(file),
            pos,
            end,
            format,
            expected_base: None,
            buf: Bytes::new(),
            buf_start: pos,
        }
    }

    /// Checks that the first batch starts at offset `base`, and each later one where the
    /// one before it ended (format 2 only: format 1's CRC covers its offsets, and its
    /// compaction left gaps).
    pub(crate) fn expecting(mut self, base: u64) -> Self {
        if self.format == Format::V2 {
            self.expected_base = Some(base);
        }
        self
    }

    /// Position of the next batch.
    pub(crate) fn position(&self) -> u64 {
        self.pos
    }

    /// Ensures `[pos, pos + n)` is buffered (or as much as exists before `end`).
    fn fill(&mut self, n: usize) -> Result<(), BatchFault> {
        let have_from = to_usize(self.pos.saturating_sub(self.buf_start));
        if self.pos >= self.buf_start && have_from + n <= self.buf.len() {
            return Ok(());
        }
        let want = n.max(CHUNK).min(to_usize(self.end - self.pos));
        let mut buf = BytesMut::zeroed(want);
        let got = read_full(self.file.get(), &mut buf, self.pos)
            .map_err(|e| BatchFault::Io(e.to_string()))?;
        buf.truncate(got);
        self.buf = buf.freeze();
        self.buf_start = self.pos;
        Ok(())
    }

    fn window(&self, n: usize) -> &[u8] {
        let from = to_usize(self.pos - self.buf_start);
        &self.buf[from..(from + n).min(self.buf.len())]
    }

    /// The next verified batch, `None` at `end`, or the fault at the current position.
    pub(crate) fn next_batch(&mut self) -> Option<Result<FramedBatch, BatchFault>> {
        if self.pos >= self.end {
            return None;
        }
        let remaining = to_usize(self.end - self.pos);
        let header_len = self.format.header_len();
        if let Err(f) = self.fill(header_len.min(remaining)) {
            return Some(Err(f));
        }
        let header = match BatchHeader::parse(self.window(header_len), self.format) {
            Ok(h) => h,
            Err(HeaderError::EndOfLog) => return Some(Err(BatchFault::Zeroes)),
            Err(HeaderError::Short) => return Some(Err(BatchFault::Short)),
            Err(HeaderError::Invalid(why)) => return Some(Err(BatchFault::BadHeader(why))),
        };
        let len = header.framed_len();
        if len > remaining {
            return Some(Err(BatchFault::Short));
        }
        if let Err(f) = self.fill(len) {
            return Some(Err(f));
        }
        let from = to_usize(self.pos - self.buf_start);
        if from + len > self.buf.len() {
            return Some(Err(BatchFault::Short));
        }
        let bytes = self.buf.slice(from..from + len);
        if !crc_matches(&header, &bytes) {
            return Some(Err(BatchFault::BadCrc));
        }
        if let Some(expected) = self.expected_base {
            if header.base_offset != expected {
                return Some(Err(BatchFault::BadHeader(format!(
                    "base offset {} where {expected} was expected",
                    header.base_offset
                ))));
            }
            self.expected_base = Some(header.next_offset());
        }
        let position = self.pos;
        self.pos += len as u64;
        Some(Ok(FramedBatch {
            position,
            header,
            bytes,
        }))
    }
}

/// Reads until `buf` is full or the file ends; returns the bytes read.
pub(crate) fn read_full(
    file: &dyn StorageFile,
    buf: &mut [u8],
    pos: u64,
) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], pos + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// A file distance as a buffer length, saturating: a distance past `usize::MAX` (on a
/// 32-bit target) is longer than any buffer, so it compares as such.
fn to_usize(distance: u64) -> usize {
    usize::try_from(distance).unwrap_or(usize::MAX)
}
