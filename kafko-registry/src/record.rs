//! The records of the `_schemas` topic, in Confluent Schema Registry's JSON format, so
//! that a topic written by kafko reads in Confluent's registry or Karapace and back.
//!
//! Keys (field order as Confluent writes them; readers match on content):
//! - `{"keytype":"SCHEMA","subject":S,"version":V,"magic":1}`: value
//!   `{"subject","version","id","schemaType"?,"references"?,"schema","deleted"}`
//!   (`schemaType` absent for Avro, `references` absent when empty); a tombstone is a
//!   permanent delete of that version.
//! - `{"keytype":"CONFIG","subject":S|null,"magic":0}`: value
//!   `{"compatibilityLevel":L}`; a tombstone removes the subject's level.
//! - `{"keytype":"MODE","subject":S|null,"magic":0}`: value `{"mode":M}`.
//! - `{"keytype":"DELETE_SUBJECT","subject":S,"magic":0}`: value
//!   `{"subject":S,"version":V}`, soft-deletes every version up to `V`.
//! - `{"keytype":"NOOP","magic":0}`: carries nothing.
//!
//! An empty value reads as a tombstone: Karapace writes its deletes so.

use serde::{Deserialize, Serialize};

/// A schema's reference to another subject's version, named as its schema imports it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = SchemaReference)]
pub struct Reference {
    /// The name the referring schema uses (an Avro full name, a `.proto` path, a URL).
    pub name: String,
    /// The referenced subject.
    pub subject: String,
    /// The referenced version.
    #[serde(deserialize_with = "whole_number")]
    pub version: i64,
}

/// An integer, also when written with a zero fraction (`3.0`), as JSON Schema reads it.
fn whole_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    let n = serde_json::Number::deserialize(d)?;
    n.as_i64()
        .or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                .map(|f| f as i64)
        })
        .ok_or_else(|| serde::de::Error::custom(format!("{n} is not an integer")))
}

/// The key of a `_schemas` record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    /// A subject's version.
    Schema {
        /// The subject.
        subject: String,
        /// The version.
        version: u32,
    },
    /// A compatibility level: the subject's, or the global one (`None`).
    Config {
        /// The subject, or `None` for the global level.
        subject: Option<String>,
    },
    /// A mode: the subject's, or the global one (`None`).
    Mode {
        /// The subject, or `None` for the global mode.
        subject: Option<String>,
    },
    /// A soft delete of a whole subject.
    DeleteSubject {
        /// The subject.
        subject: String,
    },
    /// A record with no effect.
    Noop,
}

/// The value of a `SCHEMA` record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaValue {
    /// The subject.
    pub subject: String,
    /// The version under the subject.
    pub version: u32,
    /// The global schema id.
    pub id: u32,
    /// `JSON` or `PROTOBUF`; absent for Avro.
    #[serde(
        rename = "schemaType",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub schema_type: Option<String>,
    /// The schema's references; absent when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub references: Vec<Reference>,
    /// The schema text.
    pub schema: String,
    /// Soft-deleted.
    #[serde(default)]
    pub deleted: bool,
}

/// The value of a `CONFIG` record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigValue {
    /// The compatibility level's wire name.
    #[serde(rename = "compatibilityLevel")]
    pub compatibility_level: String,
}

/// The value of a `MODE` record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModeValue {
    /// The mode's wire name.
    pub mode: String,
}

/// The value of a `DELETE_SUBJECT` record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeleteSubjectValue {
    /// The subject.
    pub subject: String,
    /// Every version up to this one is soft-deleted.
    pub version: u32,
}

/// The key as stored, in Confluent's field order.
#[derive(Serialize, Deserialize)]
struct WireKey {
    keytype: String,
    #[serde(default, skip_serializing_if = "Absent::is_absent")]
    subject: Absent<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    version: Option<u32>,
    magic: u32,
}

/// A field that may be absent, `null`, or set: keys of global configs carry
/// `"subject":null`, NOOP keys carry no subject at all.
#[derive(Default)]
enum Absent<T> {
    #[default]
    Missing,
    Null,
    Value(T),
}

impl<T> Absent<T> {
    fn is_absent(&self) -> bool {
        matches!(self, Absent::Missing)
    }
}

impl<T: Serialize> Serialize for Absent<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Absent::Value(v) => v.serialize(s),
            Absent::Missing | Absent::Null => s.serialize_none(),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Absent<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Option::<T>::deserialize(d)? {
            Some(v) => Absent::Value(v),
            None => Absent::Null,
        })
    }
}

impl Key {
    /// The key's bytes, as Confluent's registry writes them.
    pub fn encode(&self) -> Vec<u8> {
        let wire = match self {
            Key::Schema { subject, version } => WireKey {
                keytype: "SCHEMA".into(),
                subject: Absent::Value(subject.clone()),
                version: Some(*version),
                magic: 1,
            },
            Key::Config { subject } => WireKey {
                keytype: "CONFIG".into(),
                subject: subject.clone().map_or(Absent::Null, Absent::Value),
                version: None,
                magic: 0,
            },
            Key::Mode { subject } => WireKey {
                keytype: "MODE".into(),
                subject: subject.clone().map_or(Absent::Null, Absent::Value),
                version: None,
                magic: 0,
            },
            Key::DeleteSubject { subject } => WireKey {
                keytype: "DELETE_SUBJECT".into(),
                subject: Absent::Value(subject.clone()),
                version: None,
                magic: 0,
            },
            Key::Noop => WireKey {
                keytype: "NOOP".into(),
                subject: Absent::Missing,
                version: None,
                magic: 0,
            },
        };
        // A struct of strings and numbers always serializes.
        serde_json::to_vec(&wire).unwrap_or_default()
    }

    /// Reads a key; `None` for bytes that are not a key of a known type.
    pub fn decode(bytes: &[u8]) -> Option<Key> {
        let wire: WireKey = serde_json::from_slice(bytes).ok()?;
        let subject = match wire.subject {
            Absent::Value(s) => Some(s),
            Absent::Missing | Absent::Null => None,
        };
        Some(match wire.keytype.as_str() {
            "SCHEMA" => Key::Schema {
                subject: subject?,
                version: wire.version?,
            },
            "CONFIG" => Key::Config { subject },
            "MODE" => Key::Mode { subject },
            "DELETE_SUBJECT" => Key::DeleteSubject { subject: subject? },
            "NOOP" => Key::Noop,
            _ => return None,
        })
    }
}

/// Serializes a record value (always succeeds for these plain structs).
pub fn encode_value<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_written_as_confluent_writes_them() {
        let cases = [
            (
                Key::Schema {
                    subject: "orders-value".into(),
                    version: 3,
                },
                r#"{"keytype":"SCHEMA","subject":"orders-value","version":3,"magic":1}"#,
            ),
            (
                Key::Config { subject: None },
                r#"{"keytype":"CONFIG","subject":null,"magic":0}"#,
            ),
            (
                Key::Config {
                    subject: Some("s".into()),
                },
                r#"{"keytype":"CONFIG","subject":"s","magic":0}"#,
            ),
            (
                Key::Mode { subject: None },
                r#"{"keytype":"MODE","subject":null,"magic":0}"#,
            ),
            (
                Key::DeleteSubject {
                    subject: "s".into(),
                },
                r#"{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}"#,
            ),
            (Key::Noop, r#"{"keytype":"NOOP","magic":0}"#),
        ];
        for (key, json) in cases {
            assert_eq!(String::from_utf8(key.encode()).unwrap(), json);
            assert_eq!(Key::decode(json.as_bytes()), Some(key));
        }
        // Field order does not matter to a reader (Karapace's older keys differ).
        assert_eq!(
            Key::decode(br#"{"magic":1,"version":1,"subject":"s","keytype":"SCHEMA"}"#),
            Some(Key::Schema {
                subject: "s".into(),
                version: 1
            })
        );
        assert_eq!(Key::decode(br#"{"keytype":"OTHER","magic":0}"#), None);
        assert_eq!(Key::decode(b"not json"), None);
    }

    #[test]
    fn schema_values_omit_avro_type_and_empty_references() {
        let v = SchemaValue {
            subject: "s".into(),
            version: 1,
            id: 7,
            schema_type: None,
            references: vec![],
            schema: "\"string\"".into(),
            deleted: false,
        };
        assert_eq!(
            String::from_utf8(encode_value(&v)).unwrap(),
            r#"{"subject":"s","version":1,"id":7,"schema":"\"string\"","deleted":false}"#
        );
        let read: SchemaValue =
            serde_json::from_str(r#"{"subject":"s","version":1,"id":7,"schema":"x"}"#).unwrap();
        assert!(!read.deleted);
    }
}
