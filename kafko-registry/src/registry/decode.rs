//! Decoding a record by the schema id it carries (Confluent's wire format: magic byte
//! 0, the id as 4 big-endian bytes, then the payload; a Protobuf payload starts with
//! its message indexes).

use serde_json::Value;

use super::Registry;
use crate::error::RegistryError;
use crate::schema::{self, SchemaType};

/// Largest record [`Registry::decode`] reads, bytes.
pub const MAX_DECODE_BYTES: usize = 1 << 20;

/// A record decoded with its schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    /// The schema id the record carries.
    pub id: u32,
    /// The schema's type.
    pub schema_type: SchemaType,
    /// For Protobuf: the full name of the message the record's indexes name.
    pub message: Option<String>,
    /// The record's value as JSON.
    pub value: Value,
}

impl Registry {
    /// Decodes `record` (a key or value in Confluent's wire format) with the schema
    /// its id names, soft-deleted or not.
    ///
    /// # Errors
    /// [`RegistryError::NotDecodable`] for a record not in the wire format, past
    /// [`MAX_DECODE_BYTES`], or that the schema does not read;
    /// [`RegistryError::SchemaNotFound`] for an unknown id.
    pub fn decode(&self, record: &[u8]) -> Result<Decoded, RegistryError> {
        if record.len() > MAX_DECODE_BYTES {
            return Err(RegistryError::NotDecodable(format!(
                "a record of {} bytes is past the {MAX_DECODE_BYTES} bytes decoded",
                record.len()
            )));
        }
        let (id, payload) = match record {
            [0, a, b, c, d, payload @ ..] => (u32::from_be_bytes([*a, *b, *c, *d]), payload),
            _ => {
                return Err(RegistryError::NotDecodable(
                    "not Confluent's wire format: a magic byte 0 then a 4-byte schema id"
                        .to_owned(),
                ));
            }
        };
        let stored = self.schema_by_id(id)?;
        let parsed = self.parse_stored(&stored)?;
        let (value, message) = schema::decode(&parsed, payload).map_err(|e| {
            RegistryError::NotDecodable(format!("the record does not decode with schema {id}: {e}"))
        })?;
        Ok(Decoded {
            id,
            schema_type: stored.schema_type,
            message,
            value,
        })
    }
}
