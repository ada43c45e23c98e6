//! `__transaction_state`, the transaction log: an internal topic under
//! `<data>/internal/` (one partition, compacted, fsynced on every append) whose record
//! per transactional id holds that id's state (TRANSACTIONS.md, "The transaction log").
//! A state is answered only once its record is durable; the latest record per key is
//! the state, a null value removes the id.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use serde::Serialize;

use super::state::TxnMeta;
use crate::broker::internal::{RecoveredInternal, recover_internal_topic};
use crate::config::{CleanupPolicy, FsyncPolicy, TopicConfig};
use crate::error::{KafkoError, Result};
use crate::handle::TopicHandle;
use crate::record::ProducerRecord;
use crate::segment::files::FileCache;
use crate::storage::Storage;
use crate::topic::Topic;

/// The transaction log's name (Kafka's).
pub const TRANSACTION_TOPIC: &str = "__transaction_state";

/// The version of the record values written now.
const VERSION: u32 = 1;
/// Records read at once while loading the log at open.
const LOAD_BATCH: usize = 4096;

/// The transaction log's configuration: one partition (one node needs no spreading),
/// compacted, fsynced on every append, 100 MiB segments as Kafka's
/// `transaction.state.log.segment.bytes`, records up to 16 MiB (a transaction at its
/// bound on partitions and offsets fits).
fn config() -> TopicConfig {
    TopicConfig {
        partitions: 1,
        cleanup_policy: CleanupPolicy::Compact,
        fsync: FsyncPolicy::Always,
        segment_bytes: 100 * 1024 * 1024,
        max_record_bytes: 16 * 1024 * 1024,
        retention_ms: None,
        ..TopicConfig::default()
    }
}

/// Recovers `<data>/internal/__transaction_state`, creating it when missing.
pub(crate) fn recover(
    (storage, files): (&Arc<dyn Storage>, &Arc<FileCache>),
    data_dir: &Path,
    clean: bool,
) -> Result<RecoveredInternal> {
    recover_internal_topic(
        (storage, files),
        data_dir,
        clean,
        TRANSACTION_TOPIC,
        config(),
    )
}

#[derive(Serialize)]
struct ValueOut<'a> {
    version: u32,
    #[serde(flatten)]
    meta: &'a TxnMeta,
}

/// The record value of `meta`.
fn encode(meta: &TxnMeta) -> Result<Bytes> {
    serde_json::to_vec(&ValueOut {
        version: VERSION,
        meta,
    })
    .map(Bytes::from)
    .map_err(|e| KafkoError::InvalidRequest {
        reason: format!("encoding a transaction state: {e}"),
    })
}

/// The state a record value holds, or why it cannot be read.
fn decode(value: &[u8]) -> std::result::Result<TxnMeta, String> {
    // Read in two steps: `flatten` would lose the integer keys of the offsets.
    let mut v: serde_json::Value = serde_json::from_slice(value).map_err(|e| e.to_string())?;
    let version = v
        .as_object_mut()
        .and_then(|o| o.remove("version"))
        .and_then(|v| v.as_u64());
    if version != Some(u64::from(VERSION)) {
        return Err(format!("unknown version {version:?}"));
    }
    serde_json::from_value(v).map_err(|e| e.to_string())
}

/// Appends `id`'s state (`None`: the id is removed); durable when it returns.
pub(crate) async fn append(log: &Arc<Topic>, id: &str, meta: Option<&TxnMeta>) -> Result<()> {
    let record = ProducerRecord {
        key: Some(Bytes::copy_from_slice(id.as_bytes())),
        value: meta.map(encode).transpose()?,
        partition: Some(0),
        ..Default::default()
    };
    log.send(vec![record], crate::send::SendOptions::default())
        .await?;
    Ok(())
}

/// Every transactional id's latest state in the log. A record that cannot be read is
/// corruption of the log, named with its offset.
pub(crate) fn load(log: &TopicHandle, dir: &Path) -> Result<HashMap<String, TxnMeta>> {
    let mut out = HashMap::new();
    let reader = log.partition(0)?;
    let mut at = reader.offsets()?.log_start;
    loop {
        let read = reader.read(at, LOAD_BATCH, 16 * 1024 * 1024)?;
        for r in &read.records {
            let Some(key) = &r.key else { continue };
            let Ok(id) = std::str::from_utf8(key) else {
                continue;
            };
            match &r.value {
                Some(v) => {
                    let meta = decode(v).map_err(|why| {
                        KafkoError::corruption(
                            dir.to_path_buf(),
                            r.offset,
                            format!("transaction state of {id:?} at offset {}: {why}", r.offset),
                        )
                    })?;
                    out.insert(id.to_owned(), meta);
                }
                None => {
                    out.remove(id);
                }
            }
        }
        if read.next_offset >= read.high_watermark || read.next_offset == at {
            break;
        }
        at = read.next_offset;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_round_trips_and_an_unknown_version_is_refused() {
        let meta = TxnMeta::new(5, 1000, 7);
        let bytes = encode(&meta).unwrap();
        assert!(bytes.starts_with(b"{\"version\":1,"));
        assert_eq!(decode(&bytes).unwrap(), meta);
        let other = String::from_utf8(bytes.to_vec()).unwrap().replacen(
            "\"version\":1",
            "\"version\":9",
            1,
        );
        assert!(
            decode(other.as_bytes())
                .unwrap_err()
                .contains("version Some(9)")
        );
        assert!(decode(b"{").is_err());
    }
}
