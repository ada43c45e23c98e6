//! The JSON bodies of the state files (`topic.json`, `group.json`, `<topic>.offsets`,
//! `members.json`, `consumer.json`):
//! private to this crate, versioned, and converted to and from the library's types here
//! and nowhere else. Renaming a library field or a REST member therefore never changes
//! what a data directory holds, nor whether an existing one opens.
//!
//! Every body is a JSON object with a `version` member. Bodies written before that
//! member existed have none and are version 1, the shape they still have.

mod consumer;
mod group;
mod members;
mod topic;

use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{KafkoError, Result};
use crate::state_file;
use crate::storage::Storage;

pub(crate) use consumer::{
    StoredAssignment, StoredConsumer, StoredConsumerMember, read_consumer, write_consumer,
};
pub(crate) use group::{
    StoredOffsets, read_group_config, read_offsets, write_group_config, write_offsets,
};
pub(crate) use members::{StoredClassic, StoredClassicMember, read_members, write_members};
pub(crate) use topic::{read_topic_config, write_topic_config};

#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use group::{group_config_body, offsets_body};
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use members::members_body;
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use topic::topic_config_body;

/// A body with its version in front, as written.
#[derive(Serialize)]
struct Versioned<'a, T> {
    version: u32,
    #[serde(flatten)]
    body: &'a T,
}

/// Writes `body` as version `version` of its file.
fn write_versioned<T: Serialize>(
    storage: &dyn Storage,
    path: &Path,
    version: u32,
    body: &T,
) -> Result<()> {
    state_file::write(storage, path, &Versioned { version, body })
}

/// Reads a state file's JSON object and its version (absent: 1); `Ok(None)` when the
/// file does not exist.
fn read_versioned(storage: &dyn Storage, path: &Path) -> Result<Option<(u32, Value)>> {
    let Some(value) = state_file::read::<Value>(storage, path)? else {
        return Ok(None);
    };
    split_version(value)
        .map(Some)
        .map_err(|reason| KafkoError::corruption(path, state_file::BODY_OFFSET, reason))
}

/// Splits the `version` member off a body.
fn split_version(value: Value) -> std::result::Result<(u32, Value), String> {
    let Value::Object(mut members) = value else {
        return Err("the body is not a JSON object".into());
    };
    let version = match members.remove("version") {
        None => 1,
        Some(v) => v
            .as_u64()
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| format!("version must be a small unsigned integer, got {v}"))?,
    };
    Ok((version, Value::Object(members)))
}

/// Decodes version `version` of a body whose only known version is 1.
fn decode_v1<T: DeserializeOwned>(
    file: &str,
    version: u32,
    body: Value,
) -> std::result::Result<T, String> {
    if version != 1 {
        return Err(format!(
            "{file} version {version} is not one this build reads (1); was it written by a newer kafko?"
        ));
    }
    serde_json::from_value(body).map_err(|e| format!("{file}: {e}"))
}

/// Parses raw body bytes (the fuzz targets' entry point into the decoders).
#[cfg(any(test, feature = "fuzzing"))]
fn parse_body(body: &[u8]) -> std::result::Result<(u32, Value), String> {
    let value: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    split_version(value)
}
