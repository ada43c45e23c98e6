//! Protobuf schemas (`.proto` text, proto2 and proto3): syntax, imports, and a stated
//! subset of compatibility.
//!
//! A schema is `.proto` text, or a base64 `FileDescriptorProto` (`descriptor`), which is
//! stored and served as sent.
//!
//! **Validity**: the text reads as a `.proto` file (`syntax`, `package`, `import`,
//! `option`, `message` with fields, maps, oneofs, groups, nested types, `reserved`
//! and `extensions`; `enum`; `service`; `extend`); field numbers are in
//! 1..=536870911 outside 19000..=19999 and unique within a message, as are field
//! names; proto3 has no `required` fields and each enum's first value is 0. Every
//! `import` is either a reference of the schema (by its `name`) or one of Confluent's
//! well-known imports (`google/protobuf/*.proto`, `google/type/*.proto`,
//! `confluent/meta.proto`, `confluent/type/decimal.proto`). The types fields name are
//! not resolved.
//!
//! **Identity**: the tokens of the text, comments and whitespace dropped.
//!
//! **Compatibility** (can a reader decode what a writer encoded), by message full name
//! and field number:
//! - a message of the writer missing from the reader;
//! - a field whose type changes outside one wire-compatible group: {int32, uint32,
//!   int64, uint64, bool}, {sint32, sint64}, {fixed32, sfixed32}, {fixed64, sfixed64},
//!   {string, bytes}; `float`, `double`, maps and named types (messages, enums, compared
//!   by their last name segment) only with themselves;
//! - a field turning repeated or no longer repeated;
//! - a field moving into, out of or between oneofs;
//! - a `required` field the writer does not have.
//!
//! Removed and added optional fields, renamed fields, enum values, options and
//! services are not checked.

pub(crate) mod decode;
mod descriptor;
mod lexer;
mod parser;

use std::collections::BTreeMap;

use crate::error::RegistryError;

/// `syntax = …`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Syntax {
    /// The default when `syntax` is absent.
    #[default]
    Proto2,
    Proto3,
}

/// A field's cardinality as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Label {
    Singular,
    Optional,
    Required,
    Repeated,
}

/// One field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Field {
    pub(crate) name: String,
    pub(crate) label: Label,
    /// The type as written (`int32`, `.acme.Address`, `map<string,int64>`).
    pub(crate) ty: String,
    pub(crate) oneof: Option<String>,
}

/// One message's fields, by number.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Message {
    pub(crate) fields: BTreeMap<i64, Field>,
    /// The full names of the messages declared inside it, in declaration order (the
    /// message indexes of Confluent's wire format count them).
    pub(crate) nested: Vec<String>,
}

/// What a `.proto` file defines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ProtoFile {
    pub(crate) syntax: Syntax,
    pub(crate) package: String,
    pub(crate) imports: Vec<String>,
    /// Messages by full name (package and enclosing messages).
    pub(crate) messages: BTreeMap<String, Message>,
    /// The full names of the top-level messages, in declaration order.
    pub(crate) top_level: Vec<String>,
    /// Enums by full name, with their values.
    pub(crate) enums: BTreeMap<String, Vec<(String, i64)>>,
}

const GOOGLE_PROTOBUF: [&str; 11] = [
    "any",
    "api",
    "descriptor",
    "duration",
    "empty",
    "field_mask",
    "source_context",
    "struct",
    "timestamp",
    "type",
    "wrappers",
];

const GOOGLE_TYPE: [&str; 17] = [
    "calendar_period",
    "color",
    "date",
    "datetime",
    "dayofweek",
    "decimal",
    "expr",
    "fraction",
    "interval",
    "latlng",
    "money",
    "month",
    "phone_number",
    "postal_address",
    "quaternion",
    "timeofday",
    "localized_text",
];

/// Whether `path` is one of the imports every Confluent registry provides.
fn well_known(path: &str) -> bool {
    let within = |prefix: &str, names: &[&str]| {
        path.strip_prefix(prefix)
            .and_then(|p| p.strip_suffix(".proto"))
            .is_some_and(|n| names.contains(&n))
    };
    within("google/protobuf/", &GOOGLE_PROTOBUF)
        || within("google/type/", &GOOGLE_TYPE)
        || path == "confluent/meta.proto"
        || path == "confluent/type/decimal.proto"
}

/// Whether `text` looks like a base64 descriptor rather than `.proto` text.
fn is_base64(text: &str) -> bool {
    let t = text.trim();
    !t.is_empty()
        && t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
}

/// Reads `text` (`.proto` text, or a base64 `FileDescriptorProto`); `references` are
/// the names its imports may use besides the well-known ones.
pub(crate) fn parse(text: &str, references: &[&str]) -> Result<ProtoFile, RegistryError> {
    let invalid = RegistryError::InvalidSchema;
    let file = if is_base64(text) {
        descriptor::parse(text).map_err(invalid)?
    } else {
        parser::parse(lexer::tokens(text).map_err(invalid)?).map_err(invalid)?
    };
    if file.messages.is_empty() && file.enums.is_empty() {
        return Err(RegistryError::InvalidSchema(
            "the schema defines no message or enum".into(),
        ));
    }
    for import in &file.imports {
        if !well_known(import) && !references.contains(&import.as_str()) {
            return Err(RegistryError::InvalidSchema(format!(
                "import \"{import}\" is neither a reference of the schema nor a well-known import"
            )));
        }
    }
    Ok(file)
}

/// The identity form: tokens separated by single spaces (a base64 descriptor, or a
/// text that does not read, as is).
pub(crate) fn identity(text: &str) -> String {
    if is_base64(text) {
        return text.trim().to_owned();
    }
    match lexer::tokens(text) {
        Ok(tokens) => tokens
            .iter()
            .map(lexer::Token::text)
            .collect::<Vec<_>>()
            .join(" "),
        Err(_) => text.to_owned(),
    }
}

/// The wire-compatible group of a scalar type, or `None` for a type that is only
/// compatible with itself.
fn group(ty: &str) -> Option<u8> {
    Some(match ty {
        "int32" | "uint32" | "int64" | "uint64" | "bool" => 0,
        "sint32" | "sint64" => 1,
        "fixed32" | "sfixed32" => 2,
        "fixed64" | "sfixed64" => 3,
        "string" | "bytes" => 4,
        _ => return None,
    })
}

fn same_type(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    match (group(a), group(b)) {
        (Some(x), Some(y)) => x == y,
        (None, None) if !a.starts_with("map<") && !b.starts_with("map<") => {
            let last = |t: &str| t.rsplit('.').next().unwrap_or(t).to_owned();
            last(a) == last(b)
        }
        _ => false,
    }
}

/// Why `reader` cannot decode what `writer` encoded (empty: it can, as far as the
/// rules above tell).
pub(crate) fn incompatibilities(writer: &ProtoFile, reader: &ProtoFile) -> Vec<String> {
    let mut out = Vec::new();
    for (name, w) in &writer.messages {
        let Some(r) = reader.messages.get(name) else {
            out.push(format!("message {name} was removed"));
            continue;
        };
        for (number, wf) in &w.fields {
            let Some(rf) = r.fields.get(number) else {
                continue;
            };
            let at = format!("{name} field {number} ({})", rf.name);
            if !same_type(&wf.ty, &rf.ty) {
                out.push(format!("{at}: type {} became {}", wf.ty, rf.ty));
            }
            if (wf.label == Label::Repeated) != (rf.label == Label::Repeated) {
                out.push(format!("{at}: repeated changed"));
            }
            if wf.oneof != rf.oneof {
                out.push(format!("{at}: moved between oneofs"));
            }
        }
        for (number, rf) in &r.fields {
            if rf.label == Label::Required && !w.fields.contains_key(number) {
                out.push(format!(
                    "{name} field {number} ({}): a new required field",
                    rf.name
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1: &str = r#"
        syntax = "proto3";
        package shop;
        import "google/protobuf/timestamp.proto";
        option java_package = "com.shop";
        message Order {
            string id = 1;
            int32 quantity = 2 [deprecated = true];
            google.protobuf.Timestamp at = 3;
            map<string, int64> tags = 4;
            oneof payment { string card = 5; string iban = 6; }
            enum Status { UNKNOWN = 0; PAID = 1; }
            Status status = 7;
            message Line { string sku = 1; repeated double prices = 2; }
            repeated Line lines = 8;
            reserved 9, 15 to 20;
        }
        service Orders { rpc Get (Order) returns (Order) {} }
    "#;

    #[test]
    fn reads_a_proto3_file() {
        let f = parse(V1, &[]).unwrap();
        assert_eq!(f.syntax, Syntax::Proto3);
        assert!(f.messages.contains_key("shop.Order"));
        assert!(f.messages.contains_key("shop.Order.Line"));
        assert!(f.enums.contains_key("shop.Order.Status"));
        let order = &f.messages["shop.Order"];
        assert_eq!(order.fields[&4].ty, "map<string,int64>");
        assert_eq!(order.fields[&5].oneof.as_deref(), Some("payment"));
        assert_eq!(identity(V1), identity(&V1.replace("    ", " ")));
    }

    #[test]
    fn refuses_what_is_not_a_valid_schema() {
        for bad in [
            "syntax = \"proto3\"; message A { int32 x = 1; int32 y = 1; }",
            "syntax = \"proto3\"; message A { required int32 x = 1; }",
            "syntax = \"proto3\"; message A { int32 x = 19500; }",
            "syntax = \"proto3\"; enum E { A = 1; }",
            "syntax = \"proto3\"; import \"other.proto\"; message A { int32 x = 1; }",
            "syntax = \"proto3\"; message A { int32 x = 1 }",
            "syntax = \"proto4\"; message A {}",
            "message A {",
            "",
        ] {
            assert!(parse(bad, &[]).is_err(), "{bad}");
        }
        let with_ref = "syntax = \"proto3\"; import \"other.proto\"; message A { Other x = 1; }";
        assert!(parse(with_ref, &["other.proto"]).is_ok());
        let deep = format!("{}{}", "message A { ".repeat(100), "}".repeat(100));
        assert!(parse(&deep, &[]).is_err());
    }

    #[test]
    fn compatibility_rules() {
        let old = parse(V1, &[]).unwrap();
        let added = parse(
            &V1.replace("reserved 9,", "string note = 10; reserved 9,"),
            &[],
        )
        .unwrap();
        assert!(incompatibilities(&old, &added).is_empty());
        assert!(incompatibilities(&added, &old).is_empty());
        let widened = parse(&V1.replace("int32 quantity", "int64 quantity"), &[]).unwrap();
        assert!(incompatibilities(&old, &widened).is_empty());
        let retyped = parse(&V1.replace("int32 quantity", "string quantity"), &[]).unwrap();
        assert!(!incompatibilities(&old, &retyped).is_empty());
        let repeated = parse(&V1.replace("string id = 1", "repeated string id = 1"), &[]).unwrap();
        assert!(!incompatibilities(&old, &repeated).is_empty());
        let no_line = parse(
            &V1.replace(
                "message Line { string sku = 1; repeated double prices = 2; }",
                "",
            )
            .replace("repeated Line lines = 8;", ""),
            &[],
        )
        .unwrap();
        assert!(!incompatibilities(&old, &no_line).is_empty());
    }

    #[test]
    fn a_field_keeps_its_oneof() {
        let proto = |body: &str| {
            parse(&format!("syntax = \"proto3\"; message M {{ {body} }}"), &[]).unwrap()
        };
        let loose = proto("string a = 1; string b = 2;");
        let pay = proto("oneof pay { string a = 1; string b = 2; }");
        let pay_a = proto("oneof pay { string a = 1; } string b = 2;");
        let pay_renamed = proto("oneof pay { string card = 1; string iban = 2; }");
        let other = proto("oneof method { string a = 1; string b = 2; }");
        let split = proto("oneof pay { string a = 1; } oneof alt { string b = 2; }");
        let moved = |w: &ProtoFile, r: &ProtoFile| {
            let found = incompatibilities(w, r);
            assert!(
                found.iter().all(|m| m.contains("moved between oneofs")),
                "{found:?}"
            );
            found.len()
        };
        // Into a oneof and out of one, both ways; one message per field that moved.
        assert_eq!(moved(&loose, &pay), 2);
        assert_eq!(moved(&pay, &loose), 2);
        assert_eq!(moved(&loose, &pay_a), 1);
        assert_eq!(moved(&pay_a, &pay), 1, "b joined the oneof");
        // From one oneof to another (by name), or a field split off into its own.
        assert_eq!(moved(&pay, &other), 2);
        assert_eq!(moved(&pay, &split), 1);
        // The same oneof with its fields renamed, or a new field added to it: compatible.
        assert_eq!(moved(&pay, &pay_renamed), 0);
        let grown = proto("oneof pay { string a = 1; string b = 2; string c = 3; }");
        assert_eq!(moved(&pay, &grown), 0);
        assert_eq!(moved(&grown, &pay), 0);
    }
}
