//! Protobuf's binary encoding read into JSON with a [`ProtoFile`]: the message a
//! record's message indexes name, its fields by number with the names and types the
//! schema declares.
//!
//! - Scalars as proto3's JSON mapping writes them (64-bit integers as strings, `bytes`
//!   as base64), enums by value name (the number when the schema has none for it),
//!   messages as objects, `map<K,V>` as objects keyed by the key's text, repeated
//!   fields (packed or not) as arrays.
//! - Type names resolve as `protoc` resolves them: from the innermost scope outwards.
//!   A message type the schema does not define (a well-known import) is shown as its
//!   bytes in base64.
//! - Fields the schema does not declare, and groups, are skipped.

use base64::Engine;
use serde_json::{Map, Number, Value};

use super::{Label, Message, ProtoFile};

/// Messages nest at most this deep in a decoded record.
const MAX_DEPTH: usize = 64;

type Res<T> = Result<T, String>;

/// The message named by Confluent's message indexes (`[0]` the first top-level
/// message, `[1, 0]` the first message nested in the second, …).
pub(crate) fn message_of<'a>(file: &'a ProtoFile, indexes: &[usize]) -> Res<&'a str> {
    let mut names = &file.top_level;
    let mut found: Option<&str> = None;
    for (depth, &i) in indexes.iter().enumerate() {
        let name = names
            .get(i)
            .ok_or_else(|| format!("message index {i} at depth {depth} names no message"))?;
        found = Some(name);
        names = &file
            .messages
            .get(name)
            .ok_or_else(|| format!("message {name} is not in the schema"))?
            .nested;
    }
    found.ok_or_else(|| "no message index".to_owned())
}

/// Reads the message indexes at the start of a Protobuf payload: a zig-zag varint
/// count then that many zig-zag varints, a lone 0 standing for `[0]`. The indexes and
/// the bytes after them.
pub(crate) fn message_indexes(bytes: &[u8]) -> Res<(Vec<usize>, &[u8])> {
    let mut r = Reader { bytes, at: 0 };
    let count = zigzag(r.varint()?);
    if count == 0 {
        return Ok((vec![0], &bytes[r.at..]));
    }
    let count = usize::try_from(count)
        .ok()
        .filter(|c| *c <= MAX_DEPTH)
        .ok_or_else(|| format!("{count} message indexes"))?;
    let mut indexes = Vec::with_capacity(count);
    for _ in 0..count {
        let i = zigzag(r.varint()?);
        indexes.push(usize::try_from(i).map_err(|_| format!("message index {i}"))?);
    }
    Ok((indexes, &bytes[r.at..]))
}

/// Decodes `bytes` as the message `name` of `file`.
pub(crate) fn decode(file: &ProtoFile, name: &str, bytes: &[u8]) -> Res<Value> {
    let message = file
        .messages
        .get(name)
        .ok_or_else(|| format!("message {name} is not in the schema"))?;
    Decoder { file }.message(name, message, bytes, 0)
}

fn zigzag(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }

    fn varint(&mut self) -> Res<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self
                .bytes
                .get(self.at)
                .ok_or_else(|| "the record ends inside a varint".to_owned())?;
            self.at += 1;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("a varint longer than 10 bytes".to_owned())
    }

    fn take(&mut self, n: usize) -> Res<&'a [u8]> {
        let end = self
            .at
            .checked_add(n)
            .filter(|end| *end <= self.bytes.len())
            .ok_or_else(|| "the record ends inside a field".to_owned())?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn fixed<const N: usize>(&mut self) -> Res<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn delimited(&mut self) -> Res<&'a [u8]> {
        let n = self.varint()?;
        self.take(usize::try_from(n).map_err(|_| format!("a length of {n}"))?)
    }

    /// Skips a value of `wire` type (groups up to their end, counting nested ones).
    fn skip(&mut self, wire: u64) -> Res<()> {
        match wire {
            0 => self.varint().map(drop),
            1 => self.take(8).map(drop),
            2 => self.delimited().map(drop),
            5 => self.take(4).map(drop),
            3 => {
                let mut open = 1usize;
                while open > 0 {
                    let key = self.varint()?;
                    match key & 7 {
                        3 => open += 1,
                        4 => open -= 1,
                        w => self.skip(w)?,
                    }
                }
                Ok(())
            }
            w => Err(format!("wire type {w} is not Protobuf's")),
        }
    }
}

/// A field's type once resolved.
enum Kind<'a> {
    Scalar(&'a str),
    Message(&'a str, &'a Message),
    Enum(&'a [(String, i64)]),
    /// A message type the schema does not define.
    Foreign,
}

struct Decoder<'a> {
    file: &'a ProtoFile,
}

impl<'a> Decoder<'a> {
    fn message(&self, scope: &str, message: &'a Message, bytes: &[u8], depth: usize) -> Res<Value> {
        if depth > MAX_DEPTH {
            return Err(format!("messages nest deeper than {MAX_DEPTH} levels"));
        }
        let mut out = Map::new();
        let mut r = Reader { bytes, at: 0 };
        while !r.done() {
            let key = r.varint()?;
            let (number, wire) = (key >> 3, key & 7);
            let field = i64::try_from(number)
                .ok()
                .and_then(|n| message.fields.get(&n));
            let Some(field) = field.filter(|_| wire != 3) else {
                r.skip(wire)?;
                continue;
            };
            if let Some(map) = field
                .ty
                .strip_prefix("map<")
                .and_then(|t| t.strip_suffix('>'))
            {
                let (k, v) = map.split_once(',').unwrap_or((map, ""));
                let entry = r.delimited()?;
                let (key, value) = self.map_entry(scope, k, v, entry, depth)?;
                let slot = out
                    .entry(field.name.clone())
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(m) = slot {
                    m.insert(key, value);
                }
                continue;
            }
            let kind = self.resolve(scope, &field.ty);
            let packable = matches!(kind, Kind::Scalar(t) if !matches!(t, "string" | "bytes"))
                || matches!(kind, Kind::Enum(_));
            let values = if wire == 2 && packable {
                let mut packed = Reader {
                    bytes: r.delimited()?,
                    at: 0,
                };
                let inner = scalar_wire(&kind);
                let mut values = Vec::new();
                while !packed.done() {
                    values.push(self.value(&kind, inner, &mut packed, depth)?);
                }
                values
            } else {
                vec![self.value(&kind, wire, &mut r, depth)?]
            };
            if field.label == Label::Repeated {
                let slot = out
                    .entry(field.name.clone())
                    .or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(items) = slot {
                    items.extend(values);
                }
            } else if let Some(last) = values.into_iter().last() {
                out.insert(field.name.clone(), last);
            }
        }
        Ok(Value::Object(out))
    }

    fn map_entry(
        &self,
        scope: &str,
        key_ty: &str,
        value_ty: &str,
        bytes: &[u8],
        depth: usize,
    ) -> Res<(String, Value)> {
        let mut r = Reader { bytes, at: 0 };
        let (mut key, mut value) = (None, None);
        while !r.done() {
            let k = r.varint()?;
            let (number, wire) = (k >> 3, k & 7);
            match number {
                1 => key = Some(self.value(&self.resolve(scope, key_ty), wire, &mut r, depth)?),
                2 => {
                    value = Some(self.value(&self.resolve(scope, value_ty), wire, &mut r, depth)?)
                }
                _ => r.skip(wire)?,
            }
        }
        let key = match key {
            Some(Value::String(s)) => s,
            Some(other) => other.to_string(),
            None => String::new(),
        };
        Ok((key, value.unwrap_or(Value::Null)))
    }

    /// The type `name` names from within `scope` (a message's full name).
    fn resolve(&self, scope: &str, name: &'a str) -> Kind<'a> {
        if is_scalar(name) {
            return Kind::Scalar(name);
        }
        let lookup = |full: &str| {
            if let Some((k, m)) = self.file.messages.get_key_value(full) {
                Some(Kind::Message(k.as_str(), m))
            } else {
                self.file
                    .enums
                    .get(full)
                    .map(|values| Kind::Enum(values.as_slice()))
            }
        };
        if let Some(absolute) = name.strip_prefix('.') {
            return lookup(absolute).unwrap_or(Kind::Foreign);
        }
        let mut scope = scope;
        loop {
            let full = if scope.is_empty() {
                name.to_owned()
            } else {
                format!("{scope}.{name}")
            };
            if let Some(kind) = lookup(&full) {
                return kind;
            }
            if scope.is_empty() {
                return Kind::Foreign;
            }
            scope = scope.rsplit_once('.').map_or("", |(outer, _)| outer);
        }
    }

    fn value(&self, kind: &Kind<'a>, wire: u64, r: &mut Reader<'_>, depth: usize) -> Res<Value> {
        let expected = scalar_wire(kind);
        if wire != expected {
            return Err(format!(
                "a field of wire type {wire} where the schema's type has {expected}"
            ));
        }
        Ok(match kind {
            Kind::Message(name, m) => self.message(name, m, r.delimited()?, depth + 1)?,
            Kind::Foreign => Value::String(base64(r.delimited()?)),
            Kind::Enum(values) => {
                let n = r.varint()? as i32;
                values
                    .iter()
                    .find(|(_, v)| *v == i64::from(n))
                    .map_or(Value::from(n), |(name, _)| Value::String(name.clone()))
            }
            Kind::Scalar(t) => match *t {
                "string" => Value::String(
                    String::from_utf8(r.delimited()?.to_vec())
                        .map_err(|_| "a string field that is not UTF-8".to_owned())?,
                ),
                "bytes" => Value::String(base64(r.delimited()?)),
                "bool" => Value::Bool(r.varint()? != 0),
                "int32" => Value::from(r.varint()? as i32),
                "uint32" => Value::from(r.varint()? as u32),
                "sint32" => Value::from(zigzag(r.varint()?) as i32),
                "int64" => Value::String((r.varint()? as i64).to_string()),
                "uint64" => Value::String(r.varint()?.to_string()),
                "sint64" => Value::String(zigzag(r.varint()?).to_string()),
                "fixed32" => Value::from(u32::from_le_bytes(r.fixed()?)),
                "sfixed32" => Value::from(i32::from_le_bytes(r.fixed()?)),
                "fixed64" => Value::String(u64::from_le_bytes(r.fixed()?).to_string()),
                "sfixed64" => Value::String(i64::from_le_bytes(r.fixed()?).to_string()),
                "float" => float(f64::from(f32::from_le_bytes(r.fixed()?))),
                _ => float(f64::from_le_bytes(r.fixed()?)),
            },
        })
    }
}

/// A float as JSON: a number, or `"NaN"`, `"Infinity"`, `"-Infinity"` (proto3's JSON).
fn float(f: f64) -> Value {
    Number::from_f64(f).map_or_else(
        || {
            Value::String(
                if f.is_nan() {
                    "NaN"
                } else if f > 0.0 {
                    "Infinity"
                } else {
                    "-Infinity"
                }
                .to_owned(),
            )
        },
        Value::Number,
    )
}

fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn is_scalar(name: &str) -> bool {
    matches!(
        name,
        "double"
            | "float"
            | "int32"
            | "int64"
            | "uint32"
            | "uint64"
            | "sint32"
            | "sint64"
            | "fixed32"
            | "fixed64"
            | "sfixed32"
            | "sfixed64"
            | "bool"
            | "string"
            | "bytes"
    )
}

/// The wire type a value of `kind` is written with.
fn scalar_wire(kind: &Kind<'_>) -> u64 {
    match kind {
        Kind::Message(..) | Kind::Foreign => 2,
        Kind::Enum(_) => 0,
        Kind::Scalar(t) => match *t {
            "string" | "bytes" => 2,
            "double" | "fixed64" | "sfixed64" => 1,
            "float" | "fixed32" | "sfixed32" => 5,
            _ => 0,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::{decode, message_indexes, message_of};
    use crate::schema::protobuf::parse;

    const SCHEMA: &str = r#"syntax = "proto3";
package acme;
message Other { int32 x = 1; }
message Order {
  string id = 1;
  int64 total = 2;
  repeated int32 qty = 3;
  Status status = 4;
  Line line = 5;
  map<string, int32> tags = 6;
  sint32 delta = 7;
  double price = 8;
  bytes blob = 9;
  message Line { string sku = 1; }
  enum Status { NEW = 0; PAID = 1; }
}"#;

    fn varint(mut n: u64, out: &mut Vec<u8>) {
        while n >= 0x80 {
            out.push((n as u8) | 0x80);
            n >>= 7;
        }
        out.push(n as u8);
    }

    fn delimited(number: u64, bytes: &[u8], out: &mut Vec<u8>) {
        varint(number << 3 | 2, out);
        varint(bytes.len() as u64, out);
        out.extend_from_slice(bytes);
    }

    #[test]
    fn an_encoded_message_reads_as_json() {
        let file = parse(SCHEMA, &[]).unwrap();
        let mut b = Vec::new();
        delimited(1, b"o-1", &mut b);
        varint(2 << 3, &mut b);
        varint(1234, &mut b);
        delimited(3, &[1, 2, 3], &mut b); // packed
        varint(4 << 3, &mut b);
        varint(1, &mut b);
        let mut line = Vec::new();
        delimited(1, b"sku-9", &mut line);
        delimited(5, &line, &mut b);
        let mut entry = Vec::new();
        delimited(1, b"k", &mut entry);
        varint(2 << 3, &mut entry);
        varint(7, &mut entry);
        delimited(6, &entry, &mut b);
        varint(7 << 3, &mut b);
        varint(3, &mut b); // zig-zag -2
        varint(8 << 3 | 1, &mut b);
        b.extend_from_slice(&2.5f64.to_le_bytes());
        delimited(9, &[0xff, 0x00], &mut b);
        varint(99 << 3, &mut b); // not in the schema: skipped
        varint(5, &mut b);
        let value = decode(&file, "acme.Order", &b).unwrap();
        assert_eq!(
            value,
            serde_json::json!({
                "id": "o-1", "total": "1234", "qty": [1, 2, 3], "status": "PAID",
                "line": {"sku": "sku-9"}, "tags": {"k": 7}, "delta": -2, "price": 2.5,
                "blob": "/wA="
            })
        );
        // Cut short anywhere, it is refused rather than misread.
        for end in [1, 3, 4, b.len() - 1] {
            assert!(decode(&file, "acme.Order", &b[..end]).is_err(), "{end}");
        }
    }

    #[test]
    fn message_indexes_name_messages_in_declaration_order() {
        let file = parse(SCHEMA, &[]).unwrap();
        assert_eq!(message_indexes(&[0, 9]).unwrap(), (vec![0], &[9u8][..]));
        // [1, 0]: count 2, then 1 and 0, zig-zag encoded.
        let (indexes, rest) = message_indexes(&[4, 2, 0]).unwrap();
        assert_eq!((indexes.as_slice(), rest), (&[1, 0][..], &[][..]));
        assert_eq!(message_of(&file, &[0]).unwrap(), "acme.Other");
        assert_eq!(message_of(&file, &[1]).unwrap(), "acme.Order");
        assert_eq!(message_of(&file, &[1, 0]).unwrap(), "acme.Order.Line");
        assert!(message_of(&file, &[2]).is_err());
        assert!(message_indexes(&[0x80]).is_err());
    }
}
