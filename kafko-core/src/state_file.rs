//! Small state files (topic config, log start offset, group offsets, the clean-shutdown
//! marker): a CRC-framed JSON body, replaced atomically (FORMAT.md, "State files").

use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{InternalError, KafkoError, Result};
use crate::storage::{Storage, replace_file};

const MAGIC: &[u8; 4] = b"KSTF";
const VERSION: u8 = 1;
const HEADER: usize = 13;
/// Where the body starts (the position corruption in a body is reported at).
pub(crate) const BODY_OFFSET: u64 = HEADER as u64;

/// Frames a body.
// State files hold a topic's config or a group's offsets: kilobytes, never 4 GiB.
#[allow(clippy::cast_possible_truncation)]
pub(crate) fn encode(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + body.len());
    out.extend_from_slice(MAGIC);
    out.push(VERSION);
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(body).to_le_bytes());
    out.extend_from_slice(body);
    out
}

/// Unframes a body, checking magic, version, length and CRC.
pub(crate) fn decode(data: &[u8]) -> std::result::Result<&[u8], String> {
    if data.len() < HEADER || &data[..4] != MAGIC {
        return Err("not a kafko state file".into());
    }
    if data[4] != VERSION {
        return Err(format!("unsupported state file version {}", data[4]));
    }
    let len = u32::from_le_bytes([data[5], data[6], data[7], data[8]]) as usize;
    let crc = u32::from_le_bytes([data[9], data[10], data[11], data[12]]);
    let body = &data[HEADER..];
    if body.len() != len {
        return Err(format!("body is {} bytes, header says {len}", body.len()));
    }
    if crc32fast::hash(body) != crc {
        return Err("checksum mismatch".into());
    }
    Ok(body)
}

/// Atomically writes `value` as JSON into a framed state file.
pub(crate) fn write<T: Serialize>(storage: &dyn Storage, path: &Path, value: &T) -> Result<()> {
    let body = serde_json::to_vec(value).map_err(|e| InternalError::Serialize {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    replace_file(storage, path, &encode(&body)).map_err(|e| KafkoError::io("replacing", path, e))
}

/// Reads a framed state file; `Ok(None)` when it does not exist.
pub(crate) fn read<T: DeserializeOwned>(storage: &dyn Storage, path: &Path) -> Result<Option<T>> {
    let data = match storage.read(path) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(KafkoError::io("reading", path, e)),
    };
    let body = decode(&data).map_err(|reason| KafkoError::corruption(path, 0, reason))?;
    serde_json::from_slice(body)
        .map(Some)
        .map_err(|e| KafkoError::corruption(path, BODY_OFFSET, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn state_files_round_trip_and_reject_any_damage(body in proptest::collection::vec(any::<u8>(), 0..200), flip in any::<usize>()) {
            let framed = encode(&body);
            prop_assert_eq!(decode(&framed).unwrap(), &body[..]);
            let mut bad = framed.clone();
            let i = flip % bad.len();
            bad[i] ^= 0x40;
            prop_assert!(decode(&bad).is_err());
            prop_assert!(decode(&framed[..framed.len() - 1]).is_err() || body.is_empty());
        }
    }
}
