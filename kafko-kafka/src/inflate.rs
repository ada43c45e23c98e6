//! Inflating a producer's compressed record area (gzip, snappy with or without
//! snappy-java's framing, lz4 frames, zstd) within a byte cap: every codec is read
//! incrementally and stops at the first byte past the cap, so a small compressed batch
//! that would inflate to gigabytes costs at most the cap in memory and the CPU to
//! produce it. The output buffer grows with what was inflated, never to a size a
//! header claims.

use std::io::Read;

use bytes::{Buf, Bytes};

use crate::records::BatchError;

/// Bytes read from a decoder at a time.
const CHUNK: usize = 64 * 1024;

/// Inflates a compressed record area of `codec` (1 gzip, 2 snappy, 3 lz4, 4 zstd),
/// refusing one past `max` bytes.
///
/// # Errors
/// [`BatchError::TooLarge`] past `max`, [`BatchError::Corrupt`] for bytes the codec
/// refuses, [`BatchError::Codec`] for an unknown codec.
pub(crate) fn inflate(codec: i16, data: &[u8], max: usize) -> Result<Bytes, BatchError> {
    let bad = |e: &dyn std::fmt::Display| BatchError::Corrupt(format!("codec {codec}: {e}"));
    let out = match codec {
        1 => read_capped(flate2::read::GzDecoder::new(data), max, codec)?,
        2 => snappy_xerial(data, max)?,
        3 => read_capped(lz4_flex::frame::FrameDecoder::new(data), max, codec)?,
        4 => read_capped(
            zstd::stream::read::Decoder::new(data).map_err(|e| bad(&e))?,
            max,
            codec,
        )?,
        other => return Err(BatchError::Codec(other)),
    };
    Ok(Bytes::from(out))
}

fn too_large(max: usize) -> BatchError {
    BatchError::TooLarge(format!("a compressed batch inflates past {max} bytes"))
}

/// Everything `reader` yields, refused once past `max` bytes. The buffer doubles as it
/// fills, up to `max`: what it holds is what was inflated, at most twice over.
fn read_capped(mut reader: impl Read, max: usize, codec: i16) -> Result<Vec<u8>, BatchError> {
    let mut out = Vec::new();
    let mut chunk = vec![0u8; CHUNK];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => return Ok(out),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(BatchError::Corrupt(format!("codec {codec}: {e}"))),
        };
        let len = out.len() + n;
        if len > max {
            return Err(too_large(max));
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
fn snappy_xerial(data: &[u8], max: usize) -> Result<Vec<u8>, BatchError> {
    const MAGIC: &[u8; 8] = b"\x82SNAPPY\x00";
    let bad = |e: &dyn std::fmt::Display| BatchError::Corrupt(format!("snappy: {e}"));
    let mut out = Vec::new();
    let block = |raw: &[u8], out: &mut Vec<u8>| -> Result<(), BatchError> {
        let len = snap::raw::decompress_len(raw).map_err(|e| bad(&e))?;
        if out.len().saturating_add(len) > max {
            return Err(too_large(max));
        }
        let start = out.len();
        out.resize(start + len, 0);
        snap::raw::Decoder::new()
            .decompress(raw, &mut out[start..])
            .map_err(|e| bad(&e))?;
        Ok(())
    };
    if data.len() >= 16 && &data[..8] == MAGIC {
        let mut rest = &data[16..];
        while !rest.is_empty() {
            if rest.len() < 4 {
                return Err(bad(&"truncated block length"));
            }
            let n = usize::try_from(rest.get_u32()).unwrap_or(usize::MAX);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gzip_bomb_is_refused_past_the_bound() {
        use flate2::write::GzEncoder;
        use std::io::Write;
        let mut enc = GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(&vec![0u8; 1 << 20]).unwrap();
        let compressed = enc.finish().unwrap();
        assert!(matches!(
            inflate(1, &compressed, 1024),
            Err(BatchError::TooLarge(_))
        ));
        assert_eq!(inflate(1, &compressed, 1 << 20).unwrap().len(), 1 << 20);
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
        let mut lz4 = lz4_flex::frame::FrameEncoder::new(Vec::new());
        std::io::Write::write_all(&mut lz4, &raw).unwrap();
        let lz4 = lz4.finish().unwrap();
        let zstd = zstd::encode_all(&raw[..], 3).unwrap();
        for (codec, data) in [(2, &xerial), (2, &plain_snappy), (3, &lz4), (4, &zstd)] {
            assert_eq!(
                inflate(codec, data, raw.len()).unwrap(),
                raw,
                "codec {codec}"
            );
            assert!(
                matches!(
                    inflate(codec, data, raw.len() - 1),
                    Err(BatchError::TooLarge(_))
                ),
                "codec {codec} past the bound"
            );
        }
        assert!(matches!(
            inflate(3, b"not lz4", 1 << 20),
            Err(BatchError::Corrupt(_))
        ));
        assert!(matches!(
            inflate(5, b"", 1 << 20),
            Err(BatchError::Codec(5))
        ));
    }

    #[test]
    fn the_buffer_never_holds_more_than_the_bound() {
        let zeros = zstd::encode_all(&vec![0u8; 8 << 20][..], 3).unwrap();
        let max = 3 << 20;
        let mut reader = zstd::stream::read::Decoder::new(&zeros[..]).unwrap();
        let mut exact = Vec::new();
        std::io::Read::read_to_end(&mut (&mut reader).take(max as u64), &mut exact).unwrap();
        let out = read_capped(&exact[..], max, 4).unwrap();
        assert_eq!(out.len(), max);
        assert!(out.capacity() <= max, "capacity {}", out.capacity());
    }
}
