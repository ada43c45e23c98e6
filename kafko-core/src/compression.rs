//! Batch payload codecs (none, lz4, zstd) with a hard cap on decoded size so a
//! crafted batch cannot make a reader allocate without bound.

use crate::config::Compression;

/// Largest record area a batch may decode to (see FORMAT.md).
pub(crate) const MAX_UNCOMPRESSED: usize = 64 * 1024 * 1024;

impl Compression {
    /// The codec id stored in a batch's attributes.
    pub(crate) fn id(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Lz4 => 1,
            Compression::Zstd => 2,
        }
    }

    /// The codec for an attributes id.
    pub(crate) fn from_id(id: u8) -> Option<Self> {
        match id {
            0 => Some(Compression::None),
            1 => Some(Compression::Lz4),
            2 => Some(Compression::Zstd),
            _ => None,
        }
    }
}

/// Compresses `raw` with `codec` (the caller keeps `raw` for `None`).
pub(crate) fn compress(codec: Compression, raw: &[u8]) -> Result<Vec<u8>, String> {
    match codec {
        Compression::None => Ok(raw.to_vec()),
        Compression::Lz4 => Ok(lz4_flex::block::compress(raw)),
        Compression::Zstd => zstd::bulk::compress(raw, 1).map_err(|e| e.to_string()),
    }
}

/// Decompresses to exactly `expected_len` bytes, or explains why not.
pub(crate) fn decompress(
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
        Compression::None => data.to_vec(),
        Compression::Lz4 => {
            lz4_flex::block::decompress(data, expected_len).map_err(|e| e.to_string())?
        }
        Compression::Zstd => {
            zstd::bulk::decompress(data, expected_len).map_err(|e| e.to_string())?
        }
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
                let packed = compress(codec, &data).unwrap();
                prop_assert_eq!(decompress(codec, &packed, data.len()).unwrap(), data.clone());
            }
        }
    }

    #[test]
    fn bomb_declaring_huge_size_is_rejected_without_allocating() {
        assert!(decompress(Compression::Lz4, &[0; 16], MAX_UNCOMPRESSED + 1).is_err());
        assert!(decompress(Compression::Zstd, &[0; 16], 100).is_err());
    }
}
