//! Avro schemas: parsed by `apache-avro` (with the schemas of references as named
//! types it may use), their identity form, their normalized form, and compatibility by
//! `apache-avro`'s schema resolution checker.
//!
//! - **Identity**: two texts are the same schema when their JSON is equal once
//!   whitespace is dropped and object keys are sorted (field order, defaults, docs and
//!   custom attributes all count).
//! - **Normalized** (`normalize=true`): the schema as `apache-avro` writes it back after
//!   parsing: full names resolved, attributes in one order.
//! - **Compatibility**: can the reader schema read every datum of the writer schema,
//!   by Avro's resolution rules (field added without default, type changes outside the
//!   promotions, enum symbols removed without a default, names changed, …). Named types
//!   that come from references are inlined first.

use apache_avro::Schema;
use std::collections::HashMap;

use apache_avro::schema::Name;
use apache_avro::schema_compatibility::SchemaCompatibility;

use super::identity_json;
use crate::error::RegistryError;

/// A parsed Avro schema with the named types of its references.
pub(crate) struct AvroSchema {
    schema: Schema,
    references: Vec<Schema>,
}

/// Parses `text` with `references` (the texts of every referenced schema, dependencies
/// first) as named types it may use.
pub(crate) fn parse(text: &str, references: &[&str]) -> Result<AvroSchema, RegistryError> {
    let invalid = |e: apache_avro::Error| RegistryError::InvalidSchema(e.to_string());
    if references.is_empty() {
        let schema = Schema::parse_str(text).map_err(invalid)?;
        return Ok(AvroSchema {
            schema,
            references: Vec::new(),
        });
    }
    let (schema, references) = Schema::parse_str_with_list(text, references).map_err(invalid)?;
    Ok(AvroSchema { schema, references })
}

/// The identity form of a valid Avro text.
pub(crate) fn identity(text: &str) -> Result<String, RegistryError> {
    identity_json(text)
}

/// The normalized text of a parsed schema.
pub(crate) fn normalized(parsed: &AvroSchema) -> Result<String, RegistryError> {
    serde_json::to_string(&parsed.schema).map_err(|e| RegistryError::InvalidSchema(e.to_string()))
}

/// Most items (and bytes) one Avro collection or value may claim while a record is
/// decoded: the decoder allocates what a length says before it reads the items.
const MAX_DECODE_ALLOCATION: usize = 1 << 20;

/// Decodes one Avro datum (the payload of a record in Confluent's wire format) into
/// JSON, as `apache-avro` converts its values (bytes and fixed as arrays of numbers,
/// logical types as their underlying numbers). Every byte must belong to the datum,
/// and the datum must fit the schema.
/// A schema with an array of items that take no bytes (`null`, empty records) is not
/// decoded: its item count alone would bound the work.
pub(crate) fn decode(parsed: &AvroSchema, bytes: &[u8]) -> Result<serde_json::Value, String> {
    apache_avro::util::max_allocation_bytes(MAX_DECODE_ALLOCATION);
    let mut names = HashMap::new();
    for s in parsed
        .references
        .iter()
        .chain(std::iter::once(&parsed.schema))
    {
        collect_names(s, &mut names);
    }
    if has_zero_width_array(&parsed.schema, &names, &mut Vec::new()) {
        return Err("the schema has an array of items that take no bytes".to_owned());
    }
    let mut rest = bytes;
    let value = apache_avro::from_avro_datum_schemata(
        &parsed.schema,
        parsed.references.iter().collect(),
        &mut rest,
        None,
    )
    .map_err(|e| e.to_string())?;
    if !rest.is_empty() {
        return Err(format!("{} bytes follow the datum", rest.len()));
    }
    // `apache-avro` reads a string, bytes or union cut short by the end of the input as
    // null: such a value does not fit its schema.
    let schemata: Vec<&Schema> = std::iter::once(&parsed.schema)
        .chain(&parsed.references)
        .collect();
    if !value.validate_schemata(schemata) {
        return Err("the record ends inside the datum".to_owned());
    }
    serde_json::Value::try_from(value).map_err(|e| e.to_string())
}

/// Every named type in `schema`, by full name.
fn collect_names<'a>(schema: &'a Schema, names: &mut HashMap<Name, &'a Schema>) {
    match schema {
        Schema::Record(r) => {
            names.insert(r.name.clone(), schema);
            for f in &r.fields {
                collect_names(&f.schema, names);
            }
        }
        Schema::Fixed(f) => {
            names.insert(f.name.clone(), schema);
        }
        Schema::Array(a) => collect_names(&a.items, names),
        Schema::Map(m) => collect_names(&m.types, names),
        Schema::Union(u) => u.variants().iter().for_each(|v| collect_names(v, names)),
        _ => {}
    }
}

/// Whether a value of `schema` may take no bytes at all.
fn zero_width(schema: &Schema, names: &HashMap<Name, &Schema>, seen: &mut Vec<Name>) -> bool {
    match schema {
        Schema::Null => true,
        Schema::Fixed(f) => f.size == 0,
        Schema::Record(r) => {
            if seen.contains(&r.name) {
                return false;
            }
            seen.push(r.name.clone());
            let all = r.fields.iter().all(|f| zero_width(&f.schema, names, seen));
            seen.pop();
            all
        }
        Schema::Ref { name } => names
            .get(name)
            .is_some_and(|s| !seen.contains(name) && zero_width(s, names, seen)),
        _ => false,
    }
}

/// Whether `schema` holds, at any depth, an array whose items may take no bytes.
fn has_zero_width_array(
    schema: &Schema,
    names: &HashMap<Name, &Schema>,
    seen: &mut Vec<Name>,
) -> bool {
    match schema {
        Schema::Array(a) => {
            zero_width(&a.items, names, &mut Vec::new())
                || has_zero_width_array(&a.items, names, seen)
        }
        Schema::Map(m) => has_zero_width_array(&m.types, names, seen),
        Schema::Union(u) => u
            .variants()
            .iter()
            .any(|v| has_zero_width_array(v, names, seen)),
        Schema::Record(r) => {
            if seen.contains(&r.name) {
                return false;
            }
            seen.push(r.name.clone());
            let any = r
                .fields
                .iter()
                .any(|f| has_zero_width_array(&f.schema, names, seen));
            seen.pop();
            any
        }
        Schema::Ref { name } => names
            .get(name)
            .is_some_and(|s| !seen.contains(name) && has_zero_width_array(s, names, seen)),
        _ => false,
    }
}

/// Why `reader` cannot read data written with `writer` (empty when it can).
pub(crate) fn incompatibilities(writer: &AvroSchema, reader: &AvroSchema) -> Vec<String> {
    let writer = inline(writer);
    let reader = inline(reader);
    match SchemaCompatibility::can_read(&writer, &reader) {
        Ok(()) => Vec::new(),
        Err(e) => vec![e.to_string()],
    }
}

/// The schema with each named type of its references written in place at its first
/// use (later uses stay references to it, as in a self-contained Avro schema).
fn inline(parsed: &AvroSchema) -> Schema {
    let mut schema = parsed.schema.clone();
    if parsed.references.is_empty() {
        return schema;
    }
    let mut by_name: HashMap<Name, Schema> = HashMap::new();
    for r in &parsed.references {
        if let Some(name) = r.name() {
            by_name.insert(name.clone(), r.clone());
        }
    }
    let mut placed = std::collections::HashSet::new();
    inline_in(&mut schema, &by_name, &mut placed);
    schema
}

fn inline_in(
    schema: &mut Schema,
    by_name: &HashMap<Name, Schema>,
    placed: &mut std::collections::HashSet<Name>,
) {
    match schema {
        Schema::Ref { name } => {
            if placed.contains(name) {
                return;
            }
            if let Some(found) = by_name.get(name) {
                placed.insert(name.clone());
                let mut found = found.clone();
                inline_in(&mut found, by_name, placed);
                *schema = found;
            }
        }
        Schema::Record(record) => {
            placed.insert(record.name.clone());
            for field in &mut record.fields {
                inline_in(&mut field.schema, by_name, placed);
            }
        }
        Schema::Array(array) => inline_in(&mut array.items, by_name, placed),
        Schema::Map(map) => inline_in(&mut map.types, by_name, placed),
        Schema::Union(union) => {
            let mut variants = union.variants().to_vec();
            for v in &mut variants {
                inline_in(v, by_name, placed);
            }
            if let Ok(u) = apache_avro::schema::UnionSchema::new(variants) {
                *union = u;
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1: &str =
        r#"{"type":"record","name":"User","fields":[{"name":"name","type":"string"}]}"#;
    const V2_DEFAULT: &str = r#"{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"age","type":"int","default":0}]}"#;
    const V2_NO_DEFAULT: &str = r#"{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"age","type":"int"}]}"#;

    #[test]
    fn added_field_needs_a_default_to_read_old_data() {
        let v1 = parse(V1, &[]).unwrap();
        let ok = parse(V2_DEFAULT, &[]).unwrap();
        let bad = parse(V2_NO_DEFAULT, &[]).unwrap();
        assert!(incompatibilities(&v1, &ok).is_empty());
        assert!(!incompatibilities(&v1, &bad).is_empty());
        // Forward: old readers ignore the new field.
        assert!(incompatibilities(&bad, &v1).is_empty());
    }

    #[test]
    fn references_are_named_types() {
        let address = r#"{"type":"record","name":"Address","namespace":"acme","fields":[{"name":"city","type":"string"}]}"#;
        let user = r#"{"type":"record","name":"User","namespace":"acme","fields":[{"name":"home","type":"acme.Address"}]}"#;
        assert!(parse(user, &[]).is_err());
        let a = parse(user, &[address]).unwrap();
        let b = parse(user, &[address]).unwrap();
        assert!(incompatibilities(&a, &b).is_empty());
    }

    #[test]
    fn invalid_schemas_are_refused() {
        for text in ["{", r#"{"type":"record"}"#, r#""nosuchtype""#, "[]x"] {
            assert!(parse(text, &[]).is_err(), "{text}");
        }
    }
}

#[cfg(test)]
mod decode_tests {
    use super::{decode, parse};

    #[test]
    fn a_datum_decodes_whole_or_not_at_all() {
        let schema = parse(
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"n","type":["null","string"]}]}"#,
            &[],
        )
        .unwrap();
        assert_eq!(
            decode(&schema, &[4, 0]).unwrap(),
            serde_json::json!({"a": 2, "n": null})
        );
        assert!(
            decode(&schema, &[4, 0, 7]).is_err(),
            "a byte past the datum"
        );
        let plain = parse(
            r#"{"type":"record","name":"S","fields":[{"name":"s","type":"string"}]}"#,
            &[],
        )
        .unwrap();
        assert_eq!(
            decode(&plain, &[2, b'x']).unwrap(),
            serde_json::json!({"s": "x"})
        );
        let cut = decode(&plain, &[4, b'x']);
        assert!(cut.is_err(), "a datum cut short: {cut:?}");
    }
}
