//! The binary form of a `.proto` file that some clients register instead of its text:
//! a base64 `FileDescriptorProto` (confluent-kafka for Python does). Only the fields a
//! [`ProtoFile`] keeps are read: package, dependencies, syntax, messages (fields,
//! nested messages and enums, oneofs) and enums.

use base64::Engine as _;

use super::parser::add_field;
use super::{Label, Message, ProtoFile, Syntax};

/// Deepest nesting of messages read.
const MAX_DEPTH: usize = 64;

type Res<T> = Result<T, String>;

/// One field of a protobuf message on the wire.
enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf, at: 0 }
    }

    fn varint(&mut self) -> Res<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.buf.get(self.at).ok_or("a truncated varint")?;
            self.at += 1;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("a varint longer than 10 bytes".into())
    }

    fn take(&mut self, n: usize) -> Res<&'a [u8]> {
        let end = self
            .at
            .checked_add(n)
            .filter(|e| *e <= self.buf.len())
            .ok_or("a truncated field")?;
        let out = &self.buf[self.at..end];
        self.at = end;
        Ok(out)
    }

    /// The next field number and value, `None` at the end.
    fn field(&mut self) -> Res<Option<(u64, Value<'a>)>> {
        if self.at >= self.buf.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let value = match key & 7 {
            0 => Value::Varint(self.varint()?),
            1 => {
                self.take(8)?;
                Value::Fixed
            }
            2 => {
                let len = usize::try_from(self.varint()?).map_err(|_| "a length past memory")?;
                Value::Bytes(self.take(len)?)
            }
            5 => {
                self.take(4)?;
                Value::Fixed
            }
            w => return Err(format!("wire type {w} is not read")),
        };
        Ok(Some((key >> 3, value)))
    }
}

fn text(bytes: &[u8]) -> Res<String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| "a name that is not UTF-8".to_owned())
}

/// Reads a base64 `FileDescriptorProto`.
pub(crate) fn parse(encoded: &str) -> Res<ProtoFile> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|e| format!("neither .proto text nor a base64 descriptor: {e}"))?;
    let mut file = ProtoFile::default();
    let mut messages = Vec::new();
    let mut enums = Vec::new();
    let mut r = Reader::new(&bytes);
    while let Some((n, v)) = r.field()? {
        match (n, v) {
            (2, Value::Bytes(b)) => file.package = text(b)?,
            (3, Value::Bytes(b)) => file.imports.push(text(b)?),
            (4, Value::Bytes(b)) => messages.push(b),
            (5, Value::Bytes(b)) => enums.push(b),
            (12, Value::Bytes(b)) => {
                file.syntax = match text(b)?.as_str() {
                    "proto3" => Syntax::Proto3,
                    "proto2" | "" => Syntax::Proto2,
                    other => return Err(format!("syntax \"{other}\" is not read")),
                }
            }
            _ => {}
        }
    }
    let prefix = file.package.clone();
    for m in messages {
        let full = message(&mut file, &prefix, m, 1)?;
        file.top_level.push(full);
    }
    for e in enums {
        enumeration(&mut file, &prefix, e)?;
    }
    Ok(file)
}

fn qualified(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}.{name}")
    }
}

struct RawField {
    name: String,
    number: i64,
    label: u64,
    ty: u64,
    type_name: String,
    oneof: Option<usize>,
    proto3_optional: bool,
}

/// Reads a `DescriptorProto` into `file`; its full name.
fn message(file: &mut ProtoFile, prefix: &str, bytes: &[u8], depth: usize) -> Res<String> {
    if depth > MAX_DEPTH {
        return Err(format!("messages nest deeper than {MAX_DEPTH} levels"));
    }
    let (mut name, mut fields, mut nested, mut enums, mut oneofs) = (
        String::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
    );
    let mut r = Reader::new(bytes);
    while let Some((n, v)) = r.field()? {
        match (n, v) {
            (1, Value::Bytes(b)) => name = text(b)?,
            (2, Value::Bytes(b)) => fields.push(field(b)?),
            (3, Value::Bytes(b)) => nested.push(b),
            (4, Value::Bytes(b)) => enums.push(b),
            (8, Value::Bytes(b)) => {
                let mut o = Reader::new(b);
                let mut oneof = String::new();
                while let Some((n, v)) = o.field()? {
                    if let (1, Value::Bytes(b)) = (n, v) {
                        oneof = text(b)?;
                    }
                }
                oneofs.push(oneof);
            }
            _ => {}
        }
    }
    let full = qualified(prefix, &name);
    let mut m = Message::default();
    for f in fields {
        let label = match f.label {
            2 => Label::Required,
            3 => Label::Repeated,
            _ if f.proto3_optional => Label::Optional,
            _ => Label::Singular,
        };
        let ty = scalar(f.ty).map_or_else(|| f.type_name.clone(), str::to_owned);
        let oneof = if f.proto3_optional {
            None
        } else {
            f.oneof.and_then(|i| oneofs.get(i)).map(String::as_str)
        };
        add_field(&mut m, &full, f.name, f.number, label, ty, oneof)?;
    }
    for b in nested {
        let name = message(file, &full, b, depth + 1)?;
        m.nested.push(name);
    }
    for b in enums {
        enumeration(file, &full, b)?;
    }
    if file.messages.insert(full.clone(), m).is_some() {
        return Err(format!("message {full} is defined twice"));
    }
    Ok(full)
}

fn field(bytes: &[u8]) -> Res<RawField> {
    let mut f = RawField {
        name: String::new(),
        number: 0,
        label: 1,
        ty: 0,
        type_name: String::new(),
        oneof: None,
        proto3_optional: false,
    };
    let mut r = Reader::new(bytes);
    while let Some((n, v)) = r.field()? {
        match (n, v) {
            (1, Value::Bytes(b)) => f.name = text(b)?,
            (3, Value::Varint(x)) => f.number = i64::try_from(x).unwrap_or(i64::MAX),
            (4, Value::Varint(x)) => f.label = x,
            (5, Value::Varint(x)) => f.ty = x,
            (6, Value::Bytes(b)) => f.type_name = text(b)?,
            (9, Value::Varint(x)) => f.oneof = usize::try_from(x).ok(),
            (17, Value::Varint(x)) => f.proto3_optional = x != 0,
            _ => {}
        }
    }
    Ok(f)
}

fn scalar(ty: u64) -> Option<&'static str> {
    Some(match ty {
        1 => "double",
        2 => "float",
        3 => "int64",
        4 => "uint64",
        5 => "int32",
        6 => "fixed64",
        7 => "fixed32",
        8 => "bool",
        9 => "string",
        12 => "bytes",
        13 => "uint32",
        15 => "sfixed32",
        16 => "sfixed64",
        17 => "sint32",
        18 => "sint64",
        _ => return None,
    })
}

fn enumeration(file: &mut ProtoFile, prefix: &str, bytes: &[u8]) -> Res<()> {
    let (mut name, mut values) = (String::new(), Vec::new());
    let mut r = Reader::new(bytes);
    while let Some((n, v)) = r.field()? {
        match (n, v) {
            (1, Value::Bytes(b)) => name = text(b)?,
            (2, Value::Bytes(b)) => {
                let (mut vn, mut number) = (String::new(), 0i64);
                let mut e = Reader::new(b);
                while let Some((n, v)) = e.field()? {
                    match (n, v) {
                        (1, Value::Bytes(b)) => vn = text(b)?,
                        // int32 on the wire: a negative number is its 64-bit two's complement.
                        (2, Value::Varint(x)) => number = i64::from_ne_bytes(x.to_ne_bytes()),
                        _ => {}
                    }
                }
                values.push((vn, number));
            }
            _ => {}
        }
    }
    let full = qualified(prefix, &name);
    if file.enums.insert(full.clone(), values).is_some() {
        return Err(format!("enum {full} is defined twice"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u64, wire: u64) -> u8 {
        u8::try_from((n << 3) | wire).unwrap()
    }

    fn bytes_field(n: u64, b: &[u8]) -> Vec<u8> {
        let mut out = vec![key(n, 2), u8::try_from(b.len()).unwrap()];
        out.extend_from_slice(b);
        out
    }

    #[test]
    fn reads_a_file_descriptor() {
        // message Order { string id = 1; repeated int64 qty = 2; } in package shop, proto3
        let mut f1 = bytes_field(1, b"id");
        f1.extend([key(3, 0), 1, key(4, 0), 1, key(5, 0), 9]);
        let mut f2 = bytes_field(1, b"qty");
        f2.extend([key(3, 0), 2, key(4, 0), 3, key(5, 0), 3]);
        let mut msg = bytes_field(1, b"Order");
        msg.extend(bytes_field(2, &f1));
        msg.extend(bytes_field(2, &f2));
        let mut file = bytes_field(2, b"shop");
        file.extend(bytes_field(3, b"google/protobuf/timestamp.proto"));
        file.extend(bytes_field(4, &msg));
        file.extend(bytes_field(12, b"proto3"));
        let encoded = base64::engine::general_purpose::STANDARD.encode(&file);
        let parsed = parse(&encoded).unwrap();
        assert_eq!(parsed.syntax, Syntax::Proto3);
        let order = &parsed.messages["shop.Order"];
        assert_eq!(order.fields[&1].ty, "string");
        assert_eq!(order.fields[&2].label, Label::Repeated);
        assert_eq!(parsed.imports, ["google/protobuf/timestamp.proto"]);
        assert!(parse("not base64!").is_err());
        let truncated = base64::engine::general_purpose::STANDARD.encode(&file[..file.len() - 3]);
        assert!(parse(&truncated).is_err());
    }
}
