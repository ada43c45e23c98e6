//! Sparse offset and time indexes of one segment: kept in memory, written whole as
//! files (FORMAT.md, "Sparse indexes") when the segment is sealed and at clean shutdown,
//! and rebuilt from the log whenever a file is missing or does not match.

/// Log bytes between two offset-index entries.
pub(crate) const INDEX_INTERVAL_BYTES: u64 = 4096;

const OFFSET_MAGIC: &[u8; 4] = b"KIDX";
const TIME_MAGIC: &[u8; 4] = b"KTIX";
const VERSION: u8 = 1;
const FILE_HEADER: usize = 44;

/// Facts about a segment that both index files repeat, so either can be checked alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SegmentSummary {
    pub(crate) base_offset: u64,
    /// Length of the `.log` file the index describes.
    pub(crate) log_length: u64,
    /// One past the last offset in the segment (= base offset when empty).
    pub(crate) next_offset: u64,
    /// Largest record timestamp (`i64::MIN` when empty).
    pub(crate) max_timestamp: i64,
}

/// The in-memory sparse indexes of one segment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SparseIndex {
    /// `(relative offset, byte position)` of selected batches, increasing in both.
    pub(crate) offsets: Vec<(u32, u32)>,
    /// `(max timestamp of all earlier batches, relative offset)`, strictly increasing ts.
    pub(crate) times: Vec<(i64, u32)>,
    /// Bytes appended since the last offset entry.
    bytes_since_entry: u64,
    /// Largest timestamp seen so far.
    max_timestamp: Option<i64>,
}

impl SparseIndex {
    /// Records a batch appended at `position` (relative offset `rel`).
    pub(crate) fn observe(&mut self, rel: u32, position: u32, framed_len: u64, batch_max_ts: i64) {
        if self.offsets.is_empty() || self.bytes_since_entry >= INDEX_INTERVAL_BYTES {
            self.offsets.push((rel, position));
            self.bytes_since_entry = 0;
            if let Some(before) = self.max_timestamp
                && self.times.last().is_none_or(|&(ts, _)| before > ts)
            {
                self.times.push((before, rel));
            }
        }
        self.bytes_since_entry += framed_len;
        self.max_timestamp = Some(
            self.max_timestamp
                .map_or(batch_max_ts, |m| m.max(batch_max_ts)),
        );
    }

    /// Byte position from which a scan finds relative offset `rel` (0 if before the first entry).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn position_for(&self, rel: u32) -> u32 {
        self.entry_for(rel).1
    }

    /// The entry a scan for relative offset `rel` starts at: `(relative offset of the
    /// batch there, its byte position)`; `(0, 0)` before the first entry.
    pub(crate) fn entry_for(&self, rel: u32) -> (u32, u32) {
        let i = self.offsets.partition_point(|&(r, _)| r <= rel);
        if i == 0 { (0, 0) } else { self.offsets[i - 1] }
    }

    /// Relative offset from which a scan finds the first record with timestamp ≥ `ts`:
    /// every batch before it has only older records.
    pub(crate) fn offset_for_time(&self, ts: i64) -> u32 {
        let i = self.times.partition_point(|&(t, _)| t < ts);
        if i == 0 { 0 } else { self.times[i - 1].1 }
    }

    /// Encodes the offset index file.
    pub(crate) fn encode_offsets(&self, s: &SegmentSummary) -> Vec<u8> {
        let mut out = file_header(OFFSET_MAGIC, s, self.offsets.len());
        for &(rel, pos) in &self.offsets {
            out.extend_from_slice(&rel.to_le_bytes());
            out.extend_from_slice(&pos.to_le_bytes());
        }
        seal(out)
    }

    /// Encodes the time index file.
    pub(crate) fn encode_times(&self, s: &SegmentSummary) -> Vec<u8> {
        let mut out = file_header(TIME_MAGIC, s, self.times.len());
        for &(ts, rel) in &self.times {
            out.extend_from_slice(&ts.to_le_bytes());
            out.extend_from_slice(&rel.to_le_bytes());
        }
        seal(out)
    }

    /// Decodes both index files; `None` when either is damaged, inconsistent, or
    /// describes a different log than `expected_base`/`log_length`.
    /// What an offset index file says its segment held when it was written (log length,
    /// next offset), whether or not the log still has that length. A sealed segment's
    /// index is written after its log was fsynced, so the log was durable up to there.
    pub(crate) fn covered(offsets: &[u8], expected_base: u64) -> Option<SegmentSummary> {
        let (summary, _) = open_file(offsets, OFFSET_MAGIC, 8)?;
        (summary.base_offset == expected_base).then_some(summary)
    }

    pub(crate) fn decode(
        offsets: &[u8],
        times: &[u8],
        expected_base: u64,
        log_length: u64,
    ) -> Option<(SparseIndex, SegmentSummary)> {
        let (s1, off_entries) = open_file(offsets, OFFSET_MAGIC, 8)?;
        let (s2, time_entries) = open_file(times, TIME_MAGIC, 12)?;
        if s1 != s2
            || s1.base_offset != expected_base
            || s1.log_length != log_length
            || s1.next_offset < s1.base_offset
        {
            return None;
        }
        let mut index = SparseIndex {
            max_timestamp: (s1.max_timestamp != i64::MIN).then_some(s1.max_timestamp),
            ..Default::default()
        };
        for e in off_entries.chunks_exact(8) {
            let rel = u32::from_le_bytes([e[0], e[1], e[2], e[3]]);
            let pos = u32::from_le_bytes([e[4], e[5], e[6], e[7]]);
            if let Some(&(r, p)) = index.offsets.last()
                && (rel <= r || pos <= p)
            {
                return None;
            }
            if u64::from(pos) >= log_length.max(1) {
                return None;
            }
            index.offsets.push((rel, pos));
        }
        for e in time_entries.chunks_exact(12) {
            let mut tsb = [0u8; 8];
            tsb.copy_from_slice(&e[..8]);
            let ts = i64::from_le_bytes(tsb);
            let rel = u32::from_le_bytes([e[8], e[9], e[10], e[11]]);
            if index.times.last().is_some_and(|&(t, _)| ts <= t) {
                return None;
            }
            index.times.push((ts, rel));
        }
        if log_length > 0 && index.offsets.first() != Some(&(index.offsets.first()?.0, 0)) {
            return None;
        }
        // New appends after a clean open must index as if they had been observed live.
        index.bytes_since_entry = INDEX_INTERVAL_BYTES;
        Some((index, s1))
    }
}

/// Narrows a segment-relative offset or byte position to the index's `u32`.
///
/// Writers keep both below 2^32: a segment rolls before its offset span reaches
/// `u32::MAX`, and `segment_bytes` is at most 4 GiB, so a batch starts below it.
#[allow(clippy::cast_possible_truncation)]
pub(crate) fn narrow(v: u64) -> u32 {
    debug_assert!(
        v <= u64::from(u32::MAX),
        "segment-relative value {v} exceeds u32"
    );
    v as u32
}

// At most one entry per batch of a segment, whose positions are u32: the count fits.
#[allow(clippy::cast_possible_truncation)]
fn file_header(magic: &[u8; 4], s: &SegmentSummary, entries: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(FILE_HEADER + entries * 12 + 4);
    out.extend_from_slice(magic);
    out.extend_from_slice(&[VERSION, 0, 0, 0]);
    out.extend_from_slice(&s.base_offset.to_le_bytes());
    out.extend_from_slice(&s.log_length.to_le_bytes());
    out.extend_from_slice(&s.next_offset.to_le_bytes());
    out.extend_from_slice(&s.max_timestamp.to_le_bytes());
    out.extend_from_slice(&(entries as u32).to_le_bytes());
    out
}

fn seal(mut out: Vec<u8>) -> Vec<u8> {
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

fn open_file<'a>(
    data: &'a [u8],
    magic: &[u8; 4],
    entry_len: usize,
) -> Option<(SegmentSummary, &'a [u8])> {
    if data.len() < FILE_HEADER + 4 || &data[..4] != magic || data[4] != VERSION {
        return None;
    }
    let (body, crc) = data.split_at(data.len() - 4);
    if crc32fast::hash(body).to_le_bytes() != crc {
        return None;
    }
    let u64_at = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&body[i..i + 8]);
        u64::from_le_bytes(b)
    };
    let count = u32::from_le_bytes([body[40], body[41], body[42], body[43]]) as usize;
    let entries = &body[FILE_HEADER..];
    if entries.len() != count.checked_mul(entry_len)? {
        return None;
    }
    let summary = SegmentSummary {
        base_offset: u64_at(8),
        log_length: u64_at(16),
        next_offset: u64_at(24),
        max_timestamp: u64_at(32) as i64,
    };
    Some((summary, entries))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> (SparseIndex, SegmentSummary) {
        let mut idx = SparseIndex::default();
        let mut pos = 0u32;
        for i in 0..100u32 {
            idx.observe(i, pos, 1000, i64::from(i) * 10);
            pos += 1000;
        }
        let s = SegmentSummary {
            base_offset: 500,
            log_length: u64::from(pos),
            next_offset: 600,
            max_timestamp: 990,
        };
        (idx, s)
    }

    #[test]
    fn index_files_round_trip() {
        let (idx, s) = sample();
        let (back, s2) = SparseIndex::decode(
            &idx.encode_offsets(&s),
            &idx.encode_times(&s),
            500,
            s.log_length,
        )
        .unwrap();
        assert_eq!(s2, s);
        assert_eq!(back.offsets, idx.offsets);
        assert_eq!(back.times, idx.times);
    }

    #[test]
    fn lookups_never_skip_the_target() {
        let (idx, _) = sample();
        for rel in 0..100u32 {
            assert!(idx.position_for(rel) <= rel * 1000);
        }
        for ts in 0..1000i64 {
            // The batch holding the first ts >= target has relative offset ceil(ts/10).
            let first = ((ts + 9) / 10) as u32;
            assert!(idx.offset_for_time(ts) <= first, "ts {ts}");
        }
    }

    #[test]
    fn index_for_another_log_length_is_rejected() {
        let (idx, s) = sample();
        assert!(
            SparseIndex::decode(
                &idx.encode_offsets(&s),
                &idx.encode_times(&s),
                500,
                s.log_length + 1
            )
            .is_none()
        );
        assert!(
            SparseIndex::decode(
                &idx.encode_offsets(&s),
                &idx.encode_times(&s),
                501,
                s.log_length
            )
            .is_none()
        );
    }

    proptest! {
        #[test]
        fn scrambled_index_files_are_rejected_or_harmless(flip in any::<usize>(), cut in any::<usize>()) {
            let (idx, s) = sample();
            let mut off = idx.encode_offsets(&s);
            let times = idx.encode_times(&s);
            let i = flip % off.len();
            off[i] ^= 0x10;
            prop_assert!(SparseIndex::decode(&off, &times, 500, s.log_length).is_none());
            let short = &times[..cut % times.len()];
            prop_assert!(SparseIndex::decode(&idx.encode_offsets(&s), short, 500, s.log_length).is_none());
        }
    }
}
