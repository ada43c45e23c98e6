//! Schema types: parsing a schema text (with its references) into a checked form, its
//! identity form (what "the same schema" means), its normalized form, and the
//! compatibility of two schemas of one type.
//!
//! - `avro`: Avro, by `apache-avro` (parse, normalized form, compatibility).
//! - `json`: JSON Schema (validity, a stated subset of compatibility).
//! - `protobuf`: `.proto` text (syntax, imports, a stated subset of compatibility).
//!
//! `decode` reads a record's payload with a parsed schema (Confluent's wire format,
//! after the magic byte and the id).

mod avro;
mod json;
mod protobuf;

use serde_json::Value;

use crate::error::RegistryError;

/// The type of a schema, as named on the wire (`schemaType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SchemaType {
    /// Apache Avro (the default when `schemaType` is absent).
    Avro,
    /// JSON Schema.
    Json,
    /// Protocol Buffers (`.proto` text).
    Protobuf,
}

impl SchemaType {
    /// The type named by `schemaType` (`None`: Avro).
    ///
    /// # Errors
    /// [`RegistryError::InvalidSchema`] for an unknown name.
    pub fn parse(name: Option<&str>) -> Result<Self, RegistryError> {
        match name.map(str::to_ascii_uppercase).as_deref() {
            None | Some("AVRO") => Ok(SchemaType::Avro),
            Some("JSON") => Ok(SchemaType::Json),
            Some("PROTOBUF") => Ok(SchemaType::Protobuf),
            Some(other) => Err(RegistryError::InvalidSchema(format!(
                "unknown schemaType '{other}'"
            ))),
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            SchemaType::Avro => "AVRO",
            SchemaType::Json => "JSON",
            SchemaType::Protobuf => "PROTOBUF",
        }
    }

    /// The `schemaType` field as stored and answered: absent for Avro.
    pub fn wire(self) -> Option<String> {
        (self != SchemaType::Avro).then(|| self.as_str().to_owned())
    }
}

/// The types a new schema may have (`GET /schemas/types`).
pub const SERVED_TYPES: [&str; 3] = ["AVRO", "JSON", "PROTOBUF"];

/// A schema checked for its type, ready for compatibility checks.
pub(crate) enum Parsed {
    Avro(avro::AvroSchema),
    Json(Value),
    Protobuf(protobuf::ProtoFile),
}

/// A referenced schema: the name the referring schema uses for it, and its text.
pub(crate) type Resolved = (String, String);

/// Parses `text` as a schema of `ty`; `references` are every schema it references
/// (directly or not), dependencies first.
pub(crate) fn parse(
    ty: SchemaType,
    text: &str,
    references: &[Resolved],
) -> Result<Parsed, RegistryError> {
    match ty {
        SchemaType::Avro => {
            let texts: Vec<&str> = references.iter().map(|(_, t)| t.as_str()).collect();
            avro::parse(text, &texts).map(Parsed::Avro)
        }
        SchemaType::Json => json::parse(text).map(Parsed::Json),
        SchemaType::Protobuf => {
            let names: Vec<&str> = references.iter().map(|(n, _)| n.as_str()).collect();
            protobuf::parse(text, &names).map(Parsed::Protobuf)
        }
    }
}

/// The form two texts of one schema share: "the same schema" means equal identity
/// forms (with equal types and references).
pub(crate) fn identity(ty: SchemaType, text: &str) -> String {
    match ty {
        SchemaType::Avro => avro::identity(text).unwrap_or_else(|_| text.to_owned()),
        SchemaType::Json => identity_json(text).unwrap_or_else(|_| text.to_owned()),
        SchemaType::Protobuf => protobuf::identity(text),
    }
}

/// The text stored for a schema registered with `normalize=true`.
pub(crate) fn normalized(parsed: &Parsed, text: &str) -> Result<String, RegistryError> {
    match parsed {
        Parsed::Avro(a) => avro::normalized(a),
        Parsed::Json(_) => identity_json(text),
        Parsed::Protobuf(_) => Ok(protobuf::identity(text)),
    }
}

/// Why `reader` cannot read what `writer` wrote (empty: it can).
pub(crate) fn incompatibilities(writer: &Parsed, reader: &Parsed) -> Vec<String> {
    match (writer, reader) {
        (Parsed::Avro(w), Parsed::Avro(r)) => avro::incompatibilities(w, r),
        (Parsed::Json(w), Parsed::Json(r)) => json::incompatibilities(w, r),
        (Parsed::Protobuf(w), Parsed::Protobuf(r)) => protobuf::incompatibilities(w, r),
        _ => vec!["the schema type changed".to_owned()],
    }
}

/// A payload decoded with its schema: the value as JSON, and for Protobuf the full name
/// of the message its indexes named.
pub(crate) fn decode(parsed: &Parsed, payload: &[u8]) -> Result<(Value, Option<String>), String> {
    match parsed {
        Parsed::Avro(a) => avro::decode(a, payload).map(|v| (v, None)),
        Parsed::Json(_) => serde_json::from_slice(payload)
            .map(|v| (v, None))
            .map_err(|e| format!("the payload is not JSON: {e}")),
        Parsed::Protobuf(file) => {
            let (indexes, rest) = protobuf::decode::message_indexes(payload)?;
            let name = protobuf::decode::message_of(file, &indexes)?;
            let value = protobuf::decode::decode(file, name, rest)?;
            Ok((value, Some(name.to_owned())))
        }
    }
}

/// JSON text written compactly with every object's keys sorted.
pub(crate) fn identity_json(text: &str) -> Result<String, RegistryError> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| RegistryError::InvalidSchema(e.to_string()))?;
    Ok(sorted(value).to_string())
}

fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(String, Value)> = m.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_ignores_whitespace_and_key_order() {
        let a = identity(SchemaType::Avro, r#"{"type": "string", "doc": "x"}"#);
        let b = identity(SchemaType::Avro, r#"{"doc":"x","type":"string"}"#);
        assert_eq!(a, b);
        assert_ne!(
            a,
            identity(SchemaType::Avro, r#"{"doc":"y","type":"string"}"#)
        );
    }

    #[test]
    fn types_by_name() {
        assert_eq!(SchemaType::parse(None).unwrap(), SchemaType::Avro);
        assert_eq!(SchemaType::parse(Some("json")).unwrap(), SchemaType::Json);
        assert!(SchemaType::parse(Some("XML")).is_err());
        assert_eq!(SchemaType::Avro.wire(), None);
        assert!(parse(SchemaType::Protobuf, "syntax = \"proto3\";", &[]).is_err());
        assert!(
            parse(
                SchemaType::Protobuf,
                "message A { optional int32 x = 1; }",
                &[]
            )
            .is_ok()
        );
    }
}
