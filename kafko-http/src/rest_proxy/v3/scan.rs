//! The incremental reader of a v3 produce body: JSON values one after another
//! (`{…}{…}`, one per line, or one), split into chunks anywhere. It scans each byte once,
//! resuming where the last chunk stopped, to find where a value ends (strings, escapes
//! and nesting followed; bytes that cannot be JSON refused at once), and parses a value
//! only once it is whole: the cost is linear in the bytes received. The bytes of the
//! value being read are all it keeps.

use bytes::{Buf, BytesMut};
use serde_json::Value;

/// Deepest nesting of objects and arrays accepted (serde_json's own limit): deeper is
/// refused as soon as it is seen.
const MAX_DEPTH: usize = 128;

/// What the next bytes of a body hold.
#[derive(Debug)]
pub(crate) enum Next {
    /// A whole JSON value.
    Value(Value),
    /// Only whitespace, or the start of a value: read more.
    More,
    /// Not JSON.
    Invalid(String),
}

/// Where the scanner is inside the value it reads.
#[derive(Default)]
struct Scan {
    /// Bytes of the buffer already looked at.
    pos: usize,
    /// Where the value starts, once a byte other than whitespace came.
    start: Option<usize>,
    /// The closers (`}` or `]`) of the open objects and arrays, innermost last.
    open: Vec<u8>,
    in_string: bool,
    escaped: bool,
    /// A number or `true`/`false`/`null` at the top level, which ends at the first byte
    /// that cannot continue it (or at the body's end).
    scalar: bool,
}

/// The body's unread bytes and how far they were scanned.
#[derive(Default)]
pub(crate) struct Values {
    buf: BytesMut,
    scan: Scan,
}

/// Whether `b` may appear outside a string in JSON (structure, numbers, literals).
fn structural(b: u8) -> bool {
    b.is_ascii_whitespace()
        || b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'{' | b'}' | b'[' | b']' | b':' | b',' | b'"' | b'-' | b'+' | b'.'
        )
}

/// Whether `b` may continue a number or a literal.
fn scalar_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.')
}

impl Values {
    /// Adds received bytes.
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// Bytes held: the value being read and whatever followed it.
    pub(crate) fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Whether the unread bytes are whitespace only (without scanning them as values).
    pub(crate) fn only_whitespace_left(&self) -> bool {
        self.buf.iter().all(u8::is_ascii_whitespace)
    }

    /// The next whole value, scanning only bytes not looked at before; `ended` says the
    /// body has no more bytes (a top-level number or literal then ends with it).
    pub(crate) fn next(&mut self, ended: bool) -> Next {
        let s = &mut self.scan;
        let buf = &self.buf;
        while s.pos < buf.len() {
            let b = buf[s.pos];
            let Some(_) = s.start else {
                if b.is_ascii_whitespace() {
                    s.pos += 1;
                    continue;
                }
                s.start = Some(s.pos);
                match b {
                    b'{' => s.open.push(b'}'),
                    b'[' => s.open.push(b']'),
                    b'"' => s.in_string = true,
                    b if scalar_byte(b) => s.scalar = true,
                    _ => return Next::Invalid(unexpected(b)),
                }
                s.pos += 1;
                continue;
            };
            if s.in_string {
                if s.escaped {
                    s.escaped = false;
                } else if b == b'\\' {
                    s.escaped = true;
                } else if b == b'"' {
                    s.in_string = false;
                    if s.open.is_empty() {
                        s.pos += 1;
                        return self.take();
                    }
                }
            } else if s.scalar {
                if !scalar_byte(b) {
                    return self.take();
                }
            } else {
                match b {
                    b'{' | b'[' if s.open.len() == MAX_DEPTH => {
                        return Next::Invalid(format!("nested deeper than {MAX_DEPTH} levels"));
                    }
                    b'{' => s.open.push(b'}'),
                    b'[' => s.open.push(b']'),
                    b'}' | b']' => {
                        if s.open.pop() != Some(b) {
                            return Next::Invalid(unexpected(b));
                        }
                        if s.open.is_empty() {
                            s.pos += 1;
                            return self.take();
                        }
                    }
                    b'"' => s.in_string = true,
                    b if structural(b) => {}
                    _ => return Next::Invalid(unexpected(b)),
                }
            }
            s.pos += 1;
        }
        if s.start.is_none() {
            // Whitespace only: nothing to keep.
            self.buf.clear();
            s.pos = 0;
            return Next::More;
        }
        if ended && s.scalar {
            return self.take();
        }
        Next::More
    }

    /// Parses the value that ends where the scan stopped and drops its bytes.
    fn take(&mut self) -> Next {
        let s = std::mem::take(&mut self.scan);
        let start = s.start.unwrap_or(0);
        let parsed = serde_json::from_slice::<Value>(&self.buf[start..s.pos]);
        self.buf.advance(s.pos);
        match parsed {
            Ok(v) => Next::Value(v),
            Err(e) => Next::Invalid(e.to_string()),
        }
    }
}

fn unexpected(b: u8) -> String {
    if b.is_ascii_graphic() {
        format!("unexpected character '{}'", b as char)
    } else {
        format!("unexpected byte 0x{b:02x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every value of `body` fed in chunks of `size`, then the end.
    fn values(body: &str, size: usize) -> Vec<Result<Value, String>> {
        let mut v = Values::default();
        let mut out = Vec::new();
        let drain = |v: &mut Values, ended: bool, out: &mut Vec<_>| {
            loop {
                match v.next(ended) {
                    Next::Value(x) => out.push(Ok(x)),
                    Next::Invalid(e) => {
                        out.push(Err(e));
                        return false;
                    }
                    Next::More => return true,
                }
            }
        };
        for chunk in body.as_bytes().chunks(size.max(1)) {
            v.push(chunk);
            if !drain(&mut v, false, &mut out) {
                return out;
            }
        }
        drain(&mut v, true, &mut out);
        out
    }

    #[test]
    fn values_split_anywhere_come_out_whole() {
        let body = r#" {"a":"x}\"{","b":[1,{"c":[]}]}
{"d":-1.5e3} [true,null] "s\\" 12 true {"e":"ü"}"#;
        let want = vec![
            json!({"a":"x}\"{","b":[1,{"c":[]}]}),
            json!({"d":-1.5e3}),
            json!([true, null]),
            json!("s\\"),
            json!(12),
            json!(true),
            json!({"e":"ü"}),
        ];
        for size in [1, 2, 3, 7, 1000] {
            let got: Vec<Value> = values(body, size).into_iter().map(Result::unwrap).collect();
            assert_eq!(got, want, "chunks of {size}");
        }
    }

    #[test]
    fn bytes_that_are_not_json_are_refused_where_they_appear() {
        for body in ["{\"a\":1}}", "{\"a\":1]", "{\"a\" @", "#", "{\"a\":1,}"] {
            let got = values(body, 1);
            assert!(got.last().unwrap().is_err(), "{body}: {got:?}");
        }
        // The refusal comes before the value ends.
        let mut v = Values::default();
        v.push(b"{\"a\": ;");
        assert!(matches!(v.next(false), Next::Invalid(_)));
        let mut v = Values::default();
        v.push(&[b'['; MAX_DEPTH]);
        assert!(matches!(v.next(false), Next::More));
        v.push(b"[");
        assert!(matches!(v.next(false), Next::Invalid(e) if e.contains("128")));
    }

    #[test]
    fn only_the_unfinished_value_is_kept() {
        let mut v = Values::default();
        v.push(b"   \n ");
        assert!(matches!(v.next(false), Next::More));
        assert_eq!(v.buffered(), 0);
        v.push(b"{\"a\":1} {\"b\"");
        assert!(matches!(v.next(false), Next::Value(_)));
        assert_eq!(v.buffered(), " {\"b\"".len());
        assert!(matches!(v.next(false), Next::More));
        v.push(b":2}");
        assert!(matches!(v.next(false), Next::Value(x) if x == json!({"b":2})));
    }
}
