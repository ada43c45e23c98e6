//! Batch payload codecs with a hard cap on decoded size, so a crafted batch cannot make
//! a reader allocate without bound. Two generations (FORMAT.md):
//! - Kafka's codecs, what format 2 batches hold: gzip, snappy (snappy-java's framing,
//!   or a bare block), lz4 frames and zstd frames, by Kafka's codec id. [`inflate`]
//!   reads them incrementally and stops at the first byte past its cap;
//! - format 1's lz4 blocks and zstd frames with the decoded length in the header
//!   ([`decompress_v1`]), read from segments written before format 2.
//!
//! The codecs' working state (lz4's 8 KiB hash table, zstd's compression and
//! decompression contexts) is kept per thread and reused. Built afresh for every batch,
//! it was most of the cost of a small batch: for a 270 B record, lz4 compression took
//! ~255 ns instead of ~180 ns, zstd compression ~10.7 µs instead of ~2.8 µs and zstd
//! decompression ~8.6 µs instead of ~1.2 µs (release build, this machine). Producers
//! that send one record at a time, and consumers reading what they wrote, pay that per
//! record.

use std::cell::RefCell;
use std::thread::LocalKey;

use crate::config::Compression;

/// zstd level for every compressed batch: its fastest regular level, as Kafka's default.
const ZSTD_LEVEL: i32 = 1;

thread_local! {
    static LZ4_TABLE: RefCell<Option<lz4_flex::block::CompressTable>> = const { RefCell::new(None) };
    static ZSTD_COMPRESSOR: RefCell<Option<zstd::bulk::Compressor<'static>>> =
        const { RefCell::new(None) };
    static ZSTD_DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { RefCell::new(None) };
}

/// Runs `work` on this thread's codec state in `slot`, made by `make` on first use.
/// `None` when there is none to have (the thread is exiting, or `make` failed): the caller
/// then uses the codec's one-shot form.
fn with_reused<S: 'static, R>(
    slot: &'static LocalKey<RefCell<Option<S>>>,
    make: impl FnOnce() -> Option<S>,
    work: impl FnOnce(&mut S) -> R,
) -> Option<R> {
    slot.try_with(|slot| {
        // A codec never calls back into this module, so the slot is never borrowed twice.
        let mut slot = slot.try_borrow_mut().ok()?;
        let state = match slot.as_mut() {
            Some(state) => state,
            None => slot.insert(make()?),
        };
        Some(work(state))
    })
    .ok()
    .flatten()
}

/// Largest record area a batch may decode to (see FORMAT.md).
pub(crate) const MAX_UNCOMPRESSED: usize = 64 * 1024 * 1024;

impl Compression {
    /// The codec id of a format 1 batch's attributes (format 1 had no other codecs).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn v1_id(self) -> u8 {
        match self {
            Compression::Lz4 => 1,
            Compression::Zstd => 2,
            _ => 0,
        }
    }

    /// The codec of a format 1 attributes id.
    pub(crate) fn from_v1_id(id: u8) -> Option<Self> {
        match id {
            0 => Some(Compression::None),
            1 => Some(Compression::Lz4),
            2 => Some(Compression::Zstd),
            _ => None,
        }
    }

    /// Kafka's codec id (bits 0–2 of a record batch's attributes) of what kafko's own
    /// encoder writes (`Producer`: uncompressed).
    pub(crate) fn kafka_id(self) -> u16 {
        match self {
            Compression::Producer | Compression::None => KAFKA_NONE,
            Compression::Gzip => KAFKA_GZIP,
            Compression::Snappy => KAFKA_SNAPPY,
            Compression::Lz4 => KAFKA_LZ4,
            Compression::Zstd => KAFKA_ZSTD,
        }
    }

    /// The codec of Kafka's codec id.
    pub(crate) fn from_kafka_id(id: u16) -> Option<Self> {
        match id {
            KAFKA_NONE => Some(Compression::None),
            KAFKA_GZIP => Some(Compression::Gzip),
            KAFKA_SNAPPY => Some(Compression::Snappy),
            KAFKA_LZ4 => Some(Compression::Lz4),
            KAFKA_ZSTD => Some(Compression::Zstd),
            _ => None,
        }
    }
}

/// Kafka's codec ids: none, gzip, snappy, lz4, zstd.
pub(crate) const KAFKA_NONE: u16 = 0;
pub(crate) const KAFKA_GZIP: u16 = 1;
pub(crate) const KAFKA_SNAPPY: u16 = 2;
pub(crate) const KAFKA_LZ4: u16 = 3;
pub(crate) const KAFKA_ZSTD: u16 = 4;

/// Compresses a record area with `codec` as a format 2 batch holds it: an lz4 frame
/// (Kafka's lz4), a zstd frame. `None` copies.
pub(crate) fn compress(codec: Compression, raw: &[u8]) -> Result<Vec<u8>, String> {
    match codec {
        Compression::Producer | Compression::None => Ok(raw.to_vec()),
        Compression::Gzip => gzip_compress(raw).map_err(|e| e.to_string()),
        Compression::Snappy => snappy_java_compress(raw).map_err(|e| e.to_string()),
        Compression::Lz4 => lz4_frame_compress(raw).map_err(|e| e.to_string()),
        Compression::Zstd => zstd_compress(raw).map_err(|e| e.to_string()),
    }
}

fn gzip_compress(raw: &[u8]) -> std::io::Result<Vec<u8>> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(raw.len() / 2 + 64),
        flate2::Compression::default(),
    );
    encoder.write_all(raw)?;
    encoder.finish()
}

/// Block size of snappy-java's framing (its default).
const SNAPPY_BLOCK: usize = 32 * 1024;

/// snappy-java's framing, as Kafka's Java producer writes it: the magic header (magic,
/// version 1, compatible version 1), then each block of at most 32 KiB as a big-endian
/// length and a raw snappy block.
fn snappy_java_compress(raw: &[u8]) -> Result<Vec<u8>, snap::Error> {
    let mut out = Vec::with_capacity(raw.len() / 2 + 64);
    out.extend_from_slice(SNAPPY_JAVA_MAGIC);
    out.extend_from_slice(&1u32.to_be_bytes());
    out.extend_from_slice(&1u32.to_be_bytes());
    let mut encoder = snap::raw::Encoder::new();
    for block in raw.chunks(SNAPPY_BLOCK) {
        let packed = encoder.compress_vec(block)?;
        #[allow(clippy::cast_possible_truncation)] // a block of 32 KiB compresses below 4 GiB
        out.extend_from_slice(&(packed.len() as u32).to_be_bytes());
        out.extend_from_slice(&packed);
    }
    Ok(out)
}

/// Compresses as format 1 did (an lz4 block, a zstd frame): what its batches hold. Kept
/// to write format 1 segments in tests.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn compress_v1(codec: Compression, raw: &[u8]) -> Result<Vec<u8>, String> {
    match codec {
        Compression::Lz4 => Ok(lz4_compress(raw)),
        Compression::Zstd => zstd_compress(raw).map_err(|e| e.to_string()),
        _ => Ok(raw.to_vec()),
    }
}

fn lz4_frame_compress(raw: &[u8]) -> std::io::Result<Vec<u8>> {
    use std::io::Write;
    let mut encoder = lz4_flex::frame::FrameEncoder::new(Vec::with_capacity(raw.len() / 2 + 64));
    encoder.write_all(raw)?;
    encoder.finish().map_err(std::io::Error::other)
}

/// Why a compressed record area could not be inflated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InflateError {
    /// It inflates past the cap it was given.
    TooLarge(usize),
    /// The codec refuses the bytes.
    Corrupt(String),
    /// A codec id Kafka does not define.
    UnknownCodec(u16),
}

impl std::error::Error for InflateError {}

impl std::fmt::Display for InflateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InflateError::TooLarge(max) => {
                write!(f, "a compressed batch inflates past {max} bytes")
            }
            InflateError::Corrupt(why) => write!(f, "{why}"),
            InflateError::UnknownCodec(id) => write!(f, "unknown compression codec {id}"),
        }
    }
}

/// Bytes read from a streaming decoder at a time.
const CHUNK: usize = 64 * 1024;

/// Inflates a format 2 record area of Kafka codec `codec`, refusing one past `max` bytes.
/// Every codec is read incrementally: a small batch that would inflate to gigabytes costs
/// at most `max` in memory, and the output grows with what was inflated, never to a size
/// a header claims.
///
/// # Errors
/// [`InflateError::TooLarge`] past `max`, [`InflateError::Corrupt`] for bytes the codec
/// refuses, [`InflateError::UnknownCodec`] for an id Kafka does not define.
pub fn inflate(codec: u16, data: &[u8], max: usize) -> Result<Vec<u8>, InflateError> {
    let bad = |e: &dyn std::fmt::Display| InflateError::Corrupt(format!("codec {codec}: {e}"));
    match codec {
        KAFKA_NONE => {
            if data.len() > max {
                return Err(InflateError::TooLarge(max));
            }
            Ok(data.to_vec())
        }
        KAFKA_GZIP => read_capped(flate2::read::GzDecoder::new(data), max, codec),
        KAFKA_SNAPPY => snappy_xerial(data, max),
        KAFKA_LZ4 => read_capped(lz4_flex::frame::FrameDecoder::new(data), max, codec),
        KAFKA_ZSTD => {
            // A frame that states its size (ours do) is decoded in one call by this
            // thread's reused context; others stream.
            if let Ok(Some(size)) = zstd::zstd_safe::get_frame_content_size(data)
                && let Ok(size) = usize::try_from(size)
            {
                if size > max {
                    return Err(InflateError::TooLarge(max));
                }
                return zstd_decompress(data, size).map_err(|e| bad(&e));
            }
            read_capped(
                zstd::stream::read::Decoder::new(data).map_err(|e| bad(&e))?,
                max,
                codec,
            )
        }
        other => Err(InflateError::UnknownCodec(other)),
    }
}

/// Everything `reader` yields, refused once past `max` bytes. The buffer doubles as it
/// fills, up to `max`: what it holds is what was inflated, at most twice over.
fn read_capped(
    mut reader: impl std::io::Read,
    max: usize,
    codec: u16,
) -> Result<Vec<u8>, InflateError> {
    let mut out = Vec::new();
    let mut chunk = vec![0u8; CHUNK];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => return Ok(out),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(InflateError::Corrupt(format!("codec {codec}: {e}"))),
        };
        let len = out.len() + n;
        if len > max {
            return Err(InflateError::TooLarge(max));
        }
        if out.capacity() < len {
            let grown = out.capacity().saturating_mul(2).clamp(len, max);
            out.reserve_exact(grown - out.len());
        }
        out.extend_from_slice(&chunk[..n]);
    }
}

/// snappy-java's framing (a 16-byte magic header, then length-prefixed raw blocks), or
/// a raw snappy block without it, as Kafka's reader accepts both. Each block's inflated
/// length (its header's claim) is checked against what is left of `max` before the
/// block is inflated.
fn snappy_xerial(data: &[u8], max: usize) -> Result<Vec<u8>, InflateError> {
    let bad = |e: &dyn std::fmt::Display| InflateError::Corrupt(format!("snappy: {e}"));
    let mut out = Vec::new();
    let block = |raw: &[u8], out: &mut Vec<u8>| -> Result<(), InflateError> {
        let len = snap::raw::decompress_len(raw).map_err(|e| bad(&e))?;
        if out.len().saturating_add(len) > max {
            return Err(InflateError::TooLarge(max));
        }
        let start = out.len();
        out.resize(start + len, 0);
        snap::raw::Decoder::new()
            .decompress(raw, &mut out[start..])
            .map_err(|e| bad(&e))?;
        Ok(())
    };
    if data.len() >= 16 && &data[..8] == SNAPPY_JAVA_MAGIC {
        let mut rest = &data[16..];
        while !rest.is_empty() {
            if rest.len() < 4 {
                return Err(bad(&"truncated block length"));
            }
            let n = usize::try_from(u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]))
                .unwrap_or(usize::MAX);
            rest = &rest[4..];
            if n > rest.len() {
                return Err(bad(&"block past the data"));
            }
            block(&rest[..n], &mut out)?;
            rest = &rest[n..];
        }
    } else {
        block(data, &mut out)?;
    }
    Ok(out)
}

/// The magic that opens snappy-java's framing.
const SNAPPY_JAVA_MAGIC: &[u8; 8] = b"\x82SNAPPY\x00";

#[cfg(any(test, feature = "fuzzing"))]
fn lz4_compress(raw: &[u8]) -> Vec<u8> {
    let mut out = vec![0; lz4_flex::block::get_maximum_output_size(raw.len())];
    let written = with_reused(
        &LZ4_TABLE,
        || Some(lz4_flex::block::CompressTable::default()),
        |table| lz4_flex::block::compress_into_with_table(raw, &mut out, table),
    );
    match written {
        Some(Ok(len)) => {
            out.truncate(len);
            out
        }
        _ => lz4_flex::block::compress(raw),
    }
}

fn zstd_compress(raw: &[u8]) -> std::io::Result<Vec<u8>> {
    with_reused(
        &ZSTD_COMPRESSOR,
        || zstd::bulk::Compressor::new(ZSTD_LEVEL).ok(),
        |compressor| compressor.compress(raw),
    )
    .unwrap_or_else(|| zstd::bulk::compress(raw, ZSTD_LEVEL))
}

fn zstd_decompress(data: &[u8], expected_len: usize) -> std::io::Result<Vec<u8>> {
    with_reused(
        &ZSTD_DECOMPRESSOR,
        || zstd::bulk::Decompressor::new().ok(),
        |decompressor| decompressor.decompress(data, expected_len),
    )
    .unwrap_or_else(|| zstd::bulk::decompress(data, expected_len))
}

/// Decompresses a format 1 payload to exactly `expected_len` bytes, or explains why not.
pub(crate) fn decompress_v1(
    codec: Compression,
    data: &[u8],
    expected_len: usize,
) -> Result<Vec<u8>, String> {
    if expected_len > MAX_UNCOMPRESSED {
        return Err(format!(
            "declared decoded size {expected_len} exceeds the cap"
        ));
    }
    let out = match codec {
        Compression::Lz4 => {
            lz4_flex::block::decompress(data, expected_len).map_err(|e| e.to_string())?
        }
        Compression::Zstd => zstd_decompress(data, expected_len).map_err(|e| e.to_string())?,
        // Format 1 had no other codec: `from_v1_id` gives none of them.
        _ => data.to_vec(),
    };
    if out.len() != expected_len {
        return Err(format!(
            "decoded {} bytes, header says {expected_len}",
            out.len()
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn every_codec_round_trips(data in proptest::collection::vec(any::<u8>(), 0..4096)) {
            for codec in [Compression::None, Compression::Lz4, Compression::Zstd] {
                let packed = compress_v1(codec, &data).unwrap();
                prop_assert_eq!(decompress_v1(codec, &packed, data.len()).unwrap(), data.clone());
            }
        }
    }

    /// The per-thread codec state carries nothing from one batch into the next: every
    /// output is a self-contained frame that the one-shot decoders read, whatever came
    /// before it on the thread (an lz4 input past 64 KiB even swaps the table for a larger
    /// one), and a corrupt zstd frame leaves the reused decompressor usable.
    #[test]
    fn reused_codec_state_leaks_nothing_between_batches() {
        let small = b"{\"id\":1,\"event\":\"click\",\"payload\":\"abcabcabcabcabc\"}".to_vec();
        let large: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let other = b"something else entirely, 0123456789 0123456789".to_vec();
        for input in [&small, &large, &small, &other, &large, &other] {
            let lz4 = compress_v1(Compression::Lz4, input).unwrap();
            assert_eq!(
                &lz4_flex::block::decompress(&lz4, input.len()).unwrap(),
                input
            );
            assert_eq!(
                &decompress_v1(Compression::Lz4, &lz4, input.len()).unwrap(),
                input
            );
            let zstd = compress_v1(Compression::Zstd, input).unwrap();
            assert_eq!(&zstd::bulk::decompress(&zstd, input.len()).unwrap(), input);
            assert_eq!(
                &decompress_v1(Compression::Zstd, &zstd, input.len()).unwrap(),
                input
            );
            // The same input compresses to the same bytes however warm the state is.
            assert_eq!(lz4, lz4_flex::block::compress(input));
            assert_eq!(zstd, zstd::bulk::compress(input, ZSTD_LEVEL).unwrap());
        }
        let mut corrupt = compress_v1(Compression::Zstd, &large).unwrap();
        let mid = corrupt.len() / 2;
        corrupt[mid..].fill(0xA5);
        assert!(decompress_v1(Compression::Zstd, &corrupt, large.len()).is_err());
        let good = compress_v1(Compression::Zstd, &small).unwrap();
        assert_eq!(
            decompress_v1(Compression::Zstd, &good, small.len()).unwrap(),
            small
        );
    }

    /// The state is made once per thread and kept; when it cannot be made the caller is told
    /// (and falls back to the one-shot codec), and the next call tries again.
    #[test]
    fn reused_state_is_made_once_per_thread() {
        thread_local! {
            static SLOT: RefCell<Option<u32>> = const { RefCell::new(None) };
        }
        let made = std::cell::Cell::new(0);
        let make = |ok: bool| {
            made.set(made.get() + 1);
            ok.then_some(10)
        };
        assert_eq!(with_reused(&SLOT, || make(false), |s| *s), None);
        assert_eq!(with_reused(&SLOT, || make(true), |s| *s), Some(10));
        assert_eq!(
            with_reused(
                &SLOT,
                || make(true),
                |s| {
                    *s += 1;
                    *s
                }
            ),
            Some(11)
        );
        assert_eq!(
            made.get(),
            2,
            "made on the failed and the first good call only"
        );
        let other_thread = std::thread::spawn(|| with_reused(&SLOT, || Some(0), |s| *s));
        assert_eq!(
            other_thread.join().unwrap(),
            Some(0),
            "each thread has its own"
        );
    }

    #[test]
    fn bomb_declaring_huge_size_is_rejected_without_allocating() {
        assert!(decompress_v1(Compression::Lz4, &[0; 16], MAX_UNCOMPRESSED + 1).is_err());
        assert!(decompress_v1(Compression::Zstd, &[0; 16], 100).is_err());
    }

    proptest! {
        #[test]
        fn every_format_2_codec_round_trips(data in proptest::collection::vec(any::<u8>(), 0..4096)) {
            for codec in [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd] {
                let packed = compress(codec, &data).unwrap();
                prop_assert_eq!(inflate(codec.kafka_id(), &packed, data.len()).unwrap(), data.clone());
            }
        }
    }

    #[test]
    fn a_gzip_bomb_is_refused_past_the_bound() {
        use flate2::write::GzEncoder;
        use std::io::Write;
        let mut enc = GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(&vec![0u8; 1 << 20]).unwrap();
        let compressed = enc.finish().unwrap();
        assert!(matches!(
            inflate(KAFKA_GZIP, &compressed, 1024),
            Err(InflateError::TooLarge(_))
        ));
        assert_eq!(
            inflate(KAFKA_GZIP, &compressed, 1 << 20).unwrap().len(),
            1 << 20
        );
    }

    #[test]
    fn every_producer_codec_inflates_up_to_the_bound_and_no_further() {
        let raw: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        // snappy-java's framing: magic, two versions, then length-prefixed raw blocks.
        let mut xerial = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01".to_vec();
        for block in raw.chunks(32 * 1024) {
            let compressed = snap::raw::Encoder::new().compress_vec(block).unwrap();
            xerial.extend_from_slice(&u32::try_from(compressed.len()).unwrap().to_be_bytes());
            xerial.extend_from_slice(&compressed);
        }
        let plain_snappy = snap::raw::Encoder::new().compress_vec(&raw).unwrap();
        let lz4 = compress(Compression::Lz4, &raw).unwrap();
        let zstd_stream = zstd::encode_all(&raw[..], 3).unwrap();
        let zstd_sized = compress(Compression::Zstd, &raw).unwrap();
        for (codec, data) in [
            (KAFKA_SNAPPY, &xerial),
            (KAFKA_SNAPPY, &plain_snappy),
            (KAFKA_LZ4, &lz4),
            (KAFKA_ZSTD, &zstd_stream),
            (KAFKA_ZSTD, &zstd_sized),
        ] {
            assert_eq!(
                inflate(codec, data, raw.len()).unwrap(),
                raw,
                "codec {codec}"
            );
            assert!(
                matches!(
                    inflate(codec, data, raw.len() - 1),
                    Err(InflateError::TooLarge(_))
                ),
                "codec {codec} past the bound"
            );
        }
        assert!(matches!(
            inflate(KAFKA_LZ4, b"not lz4", 1 << 20),
            Err(InflateError::Corrupt(_))
        ));
        assert!(matches!(
            inflate(5, b"", 1 << 20),
            Err(InflateError::UnknownCodec(5))
        ));
    }

    #[test]
    fn the_buffer_never_holds_more_than_the_bound() {
        let zeros = zstd::encode_all(&vec![0u8; 8 << 20][..], 3).unwrap();
        let max = 3 << 20;
        let mut reader = zstd::stream::read::Decoder::new(&zeros[..]).unwrap();
        let mut exact = Vec::new();
        std::io::Read::read_to_end(
            &mut std::io::Read::take(&mut reader, max as u64),
            &mut exact,
        )
        .unwrap();
        let out = read_capped(&exact[..], max, KAFKA_NONE).unwrap();
        assert_eq!(out.len(), max);
        assert!(out.capacity() <= max, "capacity {}", out.capacity());
    }
}
