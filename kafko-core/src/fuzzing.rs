//! Thin entry points into every on-disk decoder, for the cargo-fuzz targets in `fuzz/`
//! and the bounded mutation test below. Compiled only with the `fuzzing` cargo feature
//! (and in this crate's own unit tests): not part of the supported API.
//!
//! Each entry point takes arbitrary bytes and must return without panicking, without
//! allocating beyond the format's caps, and without accepting anything inconsistent.

// A fuzz harness: its own setup may panic, because a panic is what a fuzzer reports.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Mutex;

use bytes::Bytes;

use crate::compression::{self, MAX_UNCOMPRESSED};
use crate::config::Compression;
use crate::segment::batch::{self, BatchHeader, Format, HEADER_LEN, RecordFields};
use crate::segment::batch_v1;
use crate::segment::index::SparseIndex;
use crate::segment::reader::BatchIter;
use crate::segment::recovery::scan;
use crate::storage::StorageFile;

/// A file held in memory, for decoders that read through [`StorageFile`].
struct MemFile(Mutex<Vec<u8>>);

impl StorageFile for MemFile {
    fn append(&self, buf: &[u8]) -> std::io::Result<()> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(())
    }
    fn read_at(&self, buf: &mut [u8], pos: u64) -> std::io::Result<usize> {
        let data = self.0.lock().unwrap();
        let Ok(pos) = usize::try_from(pos) else {
            return Ok(0);
        };
        if pos >= data.len() {
            return Ok(0);
        }
        let n = buf.len().min(data.len() - pos);
        buf[..n].copy_from_slice(&data[pos..pos + n]);
        Ok(n)
    }
    fn sync_data(&self) -> std::io::Result<()> {
        Ok(())
    }
    fn len(&self) -> std::io::Result<u64> {
        Ok(self.0.lock().unwrap().len() as u64)
    }
    fn truncate(&self, len: u64) -> std::io::Result<()> {
        self.0.lock().unwrap().truncate(len as usize);
        Ok(())
    }
}

/// One framed batch of either format: parses the header, checks the CRC, and decodes the
/// records whether or not the CRC matched (the decoder must survive any bytes, not only
/// checksummed ones).
pub fn batch(data: &[u8]) {
    for format in [Format::V1, Format::V2] {
        let Ok(header) = BatchHeader::parse(data, format) else {
            continue;
        };
        if header.framed_len() > data.len() {
            continue;
        }
        let framed = &data[..header.framed_len()];
        let _ = batch::crc_matches(&header, framed);
        let mut out = Vec::new();
        if batch::decode_records(&header, Bytes::copy_from_slice(framed), 0, &mut out).is_ok()
            && !header.is_control()
        {
            assert_eq!(out.len(), header.record_count as usize);
            for r in &out {
                assert!(r.offset >= header.base_offset && r.offset <= header.last_offset());
            }
        }
    }
}

/// A record area, compressed with Kafka codec `data[0] % 5` (none, gzip, snappy, lz4,
/// zstd) or not compressed at all, framed into a format 2 batch with a correct length and
/// CRC-32C, then read back the way a fetch reads it. Lets the fuzzer reach the record
/// decoder and the decompressors without forging checksums.
pub fn record_area(data: &[u8]) {
    let Some((&first, payload)) = data.split_first() else {
        return;
    };
    let codec = u16::from(first % 5);
    let count = u32::from(first >> 3).max(1);
    let mut framed = vec![0u8; HEADER_LEN];
    framed.extend_from_slice(payload);
    let length = (framed.len() - 12) as i32;
    framed[0..8].copy_from_slice(&7i64.to_be_bytes());
    framed[8..12].copy_from_slice(&length.to_be_bytes());
    framed[16] = batch::MAGIC;
    framed[21..23].copy_from_slice(&codec.to_be_bytes());
    framed[23..27].copy_from_slice(&(count as i32 + 3).to_be_bytes());
    framed[27..35].copy_from_slice(&1_000i64.to_be_bytes());
    framed[35..43].copy_from_slice(&2_000i64.to_be_bytes());
    framed[43..57].fill(0xff);
    framed[57..61].copy_from_slice(&(count as i32).to_be_bytes());
    let crc = crate::segment::batch::crc32c(&framed[21..]);
    framed[17..21].copy_from_slice(&crc.to_be_bytes());
    read_back(framed, Format::V2);
}

/// A declared decoded size: with the selector's top bit set anywhere up to one past the
/// cap (decompression bombs), else below 64 KiB, where most inputs stay fast to run.
fn claim(selector: u8, n: usize) -> usize {
    if selector & 0x80 != 0 {
        n % (MAX_UNCOMPRESSED + 2)
    } else {
        n % (64 * 1024)
    }
}

/// Iterates every batch of `data` as a segment of `format` and decodes each one.
fn read_back(data: Vec<u8>, format: Format) {
    let len = data.len() as u64;
    let file = MemFile(Mutex::new(data));
    let mut iter = BatchIter::new(&file, 0, len, format);
    let mut out = Vec::new();
    while let Some(Ok(b)) = iter.next_batch() {
        out.clear();
        let _ = batch::decode_records(&b.header, b.bytes, 0, &mut out);
    }
}

/// A compressed payload. Format 1: `data[0] % 3` picks the codec, the next 4 bytes the
/// declared decoded size; decoding must never exceed the cap nor return a different
/// length. Format 2: `data[0] % 5` picks Kafka's codec, the declared size is the cap;
/// inflating must never return more.
pub fn decompress(data: &[u8]) {
    if data.len() < 5 {
        return;
    }
    let codec = Compression::from_v1_id(data[0] % 3).unwrap_or(Compression::Lz4);
    let expected = u32::from_le_bytes([data[1], data[2], data[3], data[4]]) as usize;
    let expected = claim(data[0], expected);
    if let Ok(out) = compression::decompress_v1(codec, &data[5..], expected) {
        assert_eq!(out.len(), expected);
        assert!(out.len() <= MAX_UNCOMPRESSED);
    }
    if let Ok(out) = compression::inflate(u16::from(data[0] % 5), &data[5..], expected) {
        assert!(out.len() <= expected);
    }
}

/// The two sparse index files of one segment, split at `data[0]`; the log length and
/// base offset come from the offset file's own header when it has one. Lookups on an
/// accepted index must stay inside the log.
pub fn sparse_index(data: &[u8]) {
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let split = (split as usize * rest.len() / 256).min(rest.len());
    let (offsets, times) = rest.split_at(split);
    let field = |i: usize| {
        offsets
            .get(i..i + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
            .unwrap_or(0)
    };
    let (base, log_length) = (field(8), field(16));
    if let Some((index, summary)) = SparseIndex::decode(offsets, times, base, log_length) {
        assert_eq!(summary.base_offset, base);
        assert_eq!(summary.log_length, log_length);
        for rel in [0, 1, u32::MAX / 2, u32::MAX] {
            let pos = index.position_for(rel);
            assert!(u64::from(pos) < log_length.max(1));
        }
        for ts in [i64::MIN, 0, i64::MAX] {
            let _ = index.offset_for_time(ts);
        }
    }
}

/// A state file (framing + JSON body) read as each type kafko stores in one.
pub fn state_file(data: &[u8]) {
    let Ok(body) = crate::state_file::decode(data) else {
        return;
    };
    json_bodies(body);
}

/// A state-file body, decoded as every JSON type kafko persists (topic config, log start
/// offset, group offsets, group config, the shutdown marker).
pub fn json_bodies(body: &[u8]) {
    if let Ok(c) = crate::disk::topic_config_body(body) {
        // An accepted config either validates or is refused with a typed error.
        let _ = c.validate();
    }
    let _ = serde_json::from_slice::<u64>(body);
    let _ = serde_json::from_slice::<i64>(body);
    let _ = crate::disk::offsets_body(body);
    let _ = crate::disk::group_config_body(body);
    let _ = crate::disk::members_body(body);
}

/// A whole segment file, scanned the way recovery scans the active segment, then read.
/// A scan that succeeds must describe a prefix of the file made of valid batches.
pub fn recovery_scan(data: &[u8]) {
    let len = data.len() as u64;
    let file = MemFile(Mutex::new(data.to_vec()));
    // The base offset a file name would give: what the first batch claims, in either format.
    let v2 = data.get(16) == Some(&batch::MAGIC);
    let base = if v2 {
        data.get(0..8)
            .map(|b| u64::from_be_bytes(b.try_into().unwrap()))
    } else {
        data.get(12..20)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
    }
    .unwrap_or(0)
    .min(u64::MAX / 2);
    if let Ok(s) = scan(&file, Path::new("fuzz.log"), base) {
        assert!(s.summary.log_length <= len);
        assert!(s.summary.next_offset >= base);
        let mut iter = BatchIter::new(&file, 0, s.summary.log_length, s.format);
        let mut out = Vec::new();
        while let Some(item) = iter.next_batch() {
            let b = item.expect("a scanned prefix holds only valid batches");
            out.clear();
            let _ = batch::decode_records(&b.header, b.bytes, 0, &mut out);
        }
        assert_eq!(iter.position(), s.summary.log_length);
    }
}

/// The records of the seed batches: `n` records with keys, tombstones and headers.
fn seed_values(n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("value-{i}-{}", "x".repeat(i * 7)).into_bytes())
        .collect()
}

/// Valid inputs for each entry point: real format 2 batches (every codec kafko writes),
/// a real index pair, a real state file. The seed corpus of the fuzz targets and of the
/// test below.
pub fn seed_batches() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut next = 40u64;
    for codec in [Compression::None, Compression::Lz4, Compression::Zstd] {
        for n in [1usize, 3, 17] {
            let values = seed_values(n);
            let headers = [crate::record::Header::new("h", "v")];
            let fields = values.iter().enumerate().map(|(i, v)| RecordFields {
                offset_delta: i as u32,
                timestamp: 1_000 + i as i64,
                key: (i % 2 == 0).then_some(&b"key"[..]),
                value: (i % 5 != 4).then_some(&v[..]),
                headers: if i % 3 == 0 { &headers[..] } else { &[] },
            });
            let b = batch::encode(codec, fields).expect("encode");
            let mut framed = Vec::new();
            // Contiguous offsets: the batches together are a valid segment from 40.
            batch::frame(&mut framed, next, &b);
            next += n as u64;
            out.push(framed);
        }
    }
    out
}

/// The format 1 batches of the seeds: what `fuzz/corpus/batch/` holds, written by an
/// earlier build. Base offset `40 + n`, as that build wrote them.
pub fn seed_batches_v1() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for codec in [Compression::None, Compression::Lz4, Compression::Zstd] {
        for n in [1usize, 3, 17] {
            let values = seed_values(n);
            let headers = [crate::record::Header::new("h", "v")];
            let records: Vec<batch_v1::write::V1Record<'_>> = values
                .iter()
                .enumerate()
                .map(|(i, v)| batch_v1::write::V1Record {
                    timestamp: 1_000 + i as i64,
                    key: (i % 2 == 0).then_some(&b"key"[..]),
                    value: (i % 5 != 4).then_some(&v[..]),
                    headers: if i % 3 == 0 { &headers[..] } else { &[] },
                })
                .collect();
            let mut framed = Vec::new();
            batch_v1::write::frame(&mut framed, 40 + n as u64, codec, &records, false);
            out.push(framed);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    //! A bounded, structure-aware mutation run over every entry point, so the default
    //! test suite exercises the decoders with hostile input even without cargo-fuzz.
    use super::*;
    use crate::segment::index::SegmentSummary;

    /// A `topic.json` body as written: versioned, every member present.
    const TOPIC_JSON: &[u8] = br#"{"version":1,"partitions":3,"compression":"zstd","retention_ms":null,"retention_bytes":1048576,"segment_bytes":67108864,"fsync":{"mode":"interval_ms","interval_ms":100},"max_record_bytes":1048576,"cleanup_policy":"compact","min_compaction_lag_ms":0,"delete_retention_ms":86400000}"#;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n.max(1) as u64) as usize
        }
    }

    fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
        let mut v = input.to_vec();
        for _ in 0..1 + rng.below(4) {
            match rng.below(7) {
                0 if !v.is_empty() => {
                    let i = rng.below(v.len());
                    v[i] ^= 1 << rng.below(8);
                }
                1 if !v.is_empty() => {
                    let i = rng.below(v.len());
                    v[i] = rng.next() as u8;
                }
                2 => v.truncate(rng.below(v.len() + 1)),
                3 => {
                    let i = rng.below(v.len() + 1);
                    let n = rng.below(16);
                    let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                    v.splice(i..i, bytes);
                }
                4 if v.len() >= 4 => {
                    // Interesting 32-bit values over a length-like field.
                    let i = rng.below(v.len() - 3);
                    let word =
                        [0u32, 1, 0x7fff_ffff, u32::MAX, 64 << 20, (64 << 20) + 41][rng.below(6)];
                    v[i..i + 4].copy_from_slice(&word.to_le_bytes());
                }
                5 if v.len() >= 8 => {
                    // Interesting 64-bit values over an offset- or timestamp-like field
                    // (`cargo fuzz` found an offset overflow this way).
                    let i = rng.below(v.len() - 7);
                    let word = [0u64, 1, i64::MAX as u64, 1 << 63, u64::MAX][rng.below(5)];
                    v[i..i + 8].copy_from_slice(&word.to_le_bytes());
                }
                _ => {
                    let i = rng.below(v.len() + 1);
                    v.splice(i..i, input[..rng.below(input.len() + 1)].iter().copied());
                }
            }
        }
        v
    }

    fn index_seed() -> Vec<u8> {
        let mut idx = SparseIndex::default();
        for i in 0..20u32 {
            idx.observe(i * 3, i * 5000, 5000, 100 + i64::from(i));
        }
        let s = SegmentSummary {
            base_offset: 9,
            log_length: 100_000,
            next_offset: 70,
            max_timestamp: 119,
        };
        let off = idx.encode_offsets(&s);
        let times = idx.encode_times(&s);
        let split = (off.len() * 256).div_ceil(off.len() + times.len()) as u8;
        let mut v = vec![split];
        v.extend(off);
        v.extend(times);
        v
    }

    #[test]
    fn decoders_survive_mutated_real_inputs() {
        let mut rng = Rng(0x006b_6166_6b6f);
        let batches = seed_batches();
        let segment: Vec<u8> = batches.concat();
        let state = crate::state_file::encode(TOPIC_JSON);
        let offsets = crate::state_file::encode(br#"{"offsets":{"0":12,"3":99}}"#);
        let index = index_seed();
        let segment_v1: Vec<u8> = seed_batches_v1().concat();
        let mut area = vec![4u8];
        area.extend_from_slice(&batches[7][HEADER_LEN..]);
        let rounds = if std::env::var("KAFKO_LONG").is_ok_and(|v| v == "1") {
            200_000
        } else {
            4_000
        };
        for _ in 0..rounds {
            let b = &batches[rng.below(batches.len())];
            batch(&mutate(&mut rng, b));
            recovery_scan(&mutate(&mut rng, &segment));
            recovery_scan(&mutate(&mut rng, &segment_v1));
            sparse_index(&mutate(&mut rng, &index));
            state_file(&mutate(&mut rng, &state));
            state_file(&mutate(&mut rng, &offsets));
            json_bodies(&mutate(&mut rng, &state[13..]));
            record_area(&mutate(&mut rng, &area));
            let mut packed = vec![1u8];
            packed.extend_from_slice(&(b.len() as u32).to_le_bytes());
            packed.extend(lz4_flex::block::compress(b));
            decompress(&mutate(&mut rng, &packed));
        }
        // The unmutated inputs decode fully.
        recovery_scan(&segment);
        recovery_scan(&segment_v1);
        for b in &batches {
            batch(b);
        }
    }

    /// The batch seeds committed under `fuzz/corpus/batch/` were written by an earlier
    /// build in format 1 (lz4_flex 0.11 among them). They must still verify and decode to
    /// the records today's format 2 encoder is given for them: neither a codec upgrade
    /// nor the new format strands data already on disk.
    #[test]
    fn batches_written_by_an_earlier_build_still_decode() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/batch");
        let decode = |framed: Vec<u8>, format: Format, base: u64| {
            let header = BatchHeader::parse(&framed, format).expect("header");
            assert!(batch::crc_matches(&header, &framed));
            let mut out = Vec::new();
            batch::decode_records(&header, Bytes::from(framed), 0, &mut out).expect("decode");
            for r in &mut out {
                r.offset -= base;
            }
            (header.codec, out)
        };
        for (i, (today, v1)) in seed_batches()
            .into_iter()
            .zip(seed_batches_v1())
            .enumerate()
        {
            let committed = std::fs::read(dir.join(format!("seed-{i}"))).expect("seed file");
            assert_eq!(
                committed, v1,
                "seed-{i}: the format 1 writer kept for tests"
            );
            let today_base = BatchHeader::parse(&today, Format::V2).unwrap().base_offset;
            let committed_base = BatchHeader::parse(&committed, Format::V1)
                .unwrap()
                .base_offset;
            assert_eq!(
                decode(committed, Format::V1, committed_base),
                decode(today, Format::V2, today_base),
                "seed-{i}"
            );
        }
    }

    /// Writes the seed corpus of each fuzz target under `$KAFKO_FUZZ_SEEDS/<target>/`
    /// (used by `scripts/fuzz.sh`); does nothing without the variable.
    #[test]
    fn write_seed_corpus() {
        let Some(root) = std::env::var_os("KAFKO_FUZZ_SEEDS") else {
            return;
        };
        let root = std::path::PathBuf::from(root);
        let batches = seed_batches();
        let mut area = vec![4u8];
        area.extend_from_slice(&batches[7][HEADER_LEN..]);
        let mut packed = vec![1u8];
        packed.extend_from_slice(&(batches[4].len() as u32).to_le_bytes());
        packed.extend(lz4_flex::block::compress(&batches[4]));
        let sets: Vec<(&str, Vec<Vec<u8>>)> = vec![
            ("batch", [batches.clone(), seed_batches_v1()].concat()),
            (
                "recovery_scan",
                vec![
                    batches.concat(),
                    batches[..3].concat(),
                    seed_batches_v1().concat(),
                ],
            ),
            ("sparse_index", vec![index_seed()]),
            (
                "state_file",
                vec![
                    crate::state_file::encode(TOPIC_JSON),
                    crate::state_file::encode(br#"{"offsets":{"0":12,"3":99}}"#),
                    crate::state_file::encode(br#"{"offset_reset":"earliest"}"#),
                    crate::state_file::encode(b"1234"),
                ],
            ),
            ("record_area", vec![area]),
            ("decompress", vec![packed]),
        ];
        for (target, inputs) in sets {
            let dir = root.join(target);
            std::fs::create_dir_all(&dir).expect("mkdir");
            for (i, input) in inputs.iter().enumerate() {
                std::fs::write(dir.join(format!("seed-{i}")), input).expect("write");
            }
        }
    }

    #[test]
    fn decompression_bombs_are_refused_within_the_cap() {
        // 64 MiB of zeros compresses to almost nothing; a header claiming one byte more
        // than the cap is refused before any allocation, and a lie about the size fails.
        let zeros = vec![0u8; 1 << 20];
        let packed = lz4_flex::block::compress(&zeros);
        assert!(
            compression::decompress_v1(Compression::Lz4, &packed, MAX_UNCOMPRESSED + 1).is_err()
        );
        assert!(compression::decompress_v1(Compression::Lz4, &packed, 10).is_err());
        let z = zstd::bulk::compress(&zeros, 1).unwrap();
        assert!(compression::decompress_v1(Compression::Zstd, &z, 1000).is_err());
        assert_eq!(
            compression::decompress_v1(Compression::Zstd, &z, zeros.len())
                .unwrap()
                .len(),
            zeros.len()
        );
    }
}
