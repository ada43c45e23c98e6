//! The produce bodies clients send most, read without serde: records whose members are
//! `key` and `value` as plain JSON strings (no escape sequence) or `null`, `partition`
//! and `timestamp` as plain integers or `null`, and `headers` as `[]`, in a batch object
//! or on NDJSON lines, with `format=string` keys and values (the default). A record's
//! strings are handed on as slices of the body.
//!
//! Why: serde reads such a record three times (the string scan for escapes, a UTF-8
//! check of the raw member, the search for a backslash before sharing the body's bytes),
//! ~1.7 k instructions of a 256-byte record's 3.5 k (callgrind, JSON batches of 1,000);
//! here a vector search finds the closing quote (or a backslash), and a minimum and a
//! maximum over the string rule out control characters and show whether UTF-8 needs a
//! check.
//!
//! Anything else — an escape, another member, a number with a fraction, a syntax
//! error — is left to the serde parse, which reads the whole body again and skips the
//! records already handed on (they parsed the same either way), so answers and errors
//! stay exactly serde's. The tests hold the two paths equal.

use kafko_core::RecordRef;

/// Where the plain read of a batch stopped.
pub(super) enum Stop<E> {
    /// The body leaves the plain form after this many records, handed on already.
    Fallback(usize),
    /// A record was refused by the callback.
    Refused(E),
}

/// Reads a JSON batch (`{"records":[...]}`) in the plain form, handing each record to
/// `each` as it is read.
///
/// # Errors
/// [`Stop::Fallback`] where the body leaves the plain form, [`Stop::Refused`] with the
/// callback's error.
pub(super) fn batch<'b, E>(
    body: &'b [u8],
    mut each: impl FnMut(RecordRef<'b>) -> Result<(), E>,
) -> Result<(), Stop<E>> {
    let mut s = Scan { b: body, at: 0 };
    let mut handed = 0;
    let fallback = |handed| Err(Stop::Fallback(handed));
    s.ws();
    if !(s.eat(b'{')
        && {
            s.ws();
            s.eat_all(b"\"records\"")
        }
        && {
            s.ws();
            s.eat(b':')
        }
        && {
            s.ws();
            s.eat(b'[')
        })
    {
        return fallback(0);
    }
    s.ws();
    if !s.eat(b']') {
        loop {
            let Some(record) = s.record() else {
                return fallback(handed);
            };
            each(record).map_err(Stop::Refused)?;
            handed += 1;
            s.ws();
            if s.eat(b',') {
                s.ws();
                continue;
            }
            if s.eat(b']') {
                break;
            }
            return fallback(handed);
        }
    }
    s.ws();
    if !s.eat(b'}') {
        return fallback(handed);
    }
    s.ws();
    if s.at != body.len() {
        return fallback(handed);
    }
    Ok(())
}

/// One NDJSON line as a record in the plain form; `None` when it is not in that form.
pub(super) fn line(line: &[u8]) -> Option<RecordRef<'_>> {
    let mut s = Scan { b: line, at: 0 };
    s.ws();
    let record = s.record()?;
    s.ws();
    (s.at == line.len()).then_some(record)
}

/// A position in JSON text.
struct Scan<'b> {
    b: &'b [u8],
    at: usize,
}

impl<'b> Scan<'b> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.at).copied()
    }

    /// Skips JSON whitespace.
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.peek() == Some(c);
        self.at += usize::from(hit);
        hit
    }

    fn eat_all(&mut self, text: &[u8]) -> bool {
        let hit = self.b[self.at..].starts_with(text);
        if hit {
            self.at += text.len();
        }
        hit
    }

    /// A record object of plain members.
    fn record(&mut self) -> Option<RecordRef<'b>> {
        if !self.eat(b'{') {
            return None;
        }
        let mut r = RecordRef::default();
        self.ws();
        if self.eat(b'}') {
            return Some(r);
        }
        let mut seen = 0u8;
        loop {
            let name = self.string()?;
            let bit = match name {
                b"key" => 1,
                b"value" => 2,
                b"partition" => 4,
                b"timestamp" => 8,
                b"headers" => 16,
                _ => return None,
            };
            // A repeated member is serde's to refuse.
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            self.ws();
            if !self.eat(b':') {
                return None;
            }
            self.ws();
            match bit {
                1 => r.key = self.string_or_null()?,
                2 => r.value = self.string_or_null()?,
                4 => {
                    r.partition =
                        self.or_null(|s| s.digits(9, false).and_then(|n| u32::try_from(n).ok()))?;
                }
                8 => r.timestamp = self.or_null(|s| s.digits(18, true))?,
                _ => {
                    if !(self.eat(b'[') && {
                        self.ws();
                        self.eat(b']')
                    }) {
                        return None;
                    }
                }
            }
            self.ws();
            if self.eat(b',') {
                self.ws();
                continue;
            }
            return self.eat(b'}').then_some(r);
        }
    }

    /// `null` (`Some(None)`) or what `read` reads.
    fn or_null<T>(&mut self, read: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        if self.eat_all(b"null") {
            Some(None)
        } else {
            read(self).map(Some)
        }
    }

    fn string_or_null(&mut self) -> Option<Option<&'b [u8]>> {
        self.or_null(Self::string)
    }

    /// An integer of 1 to `max_digits` digits without a leading zero (`-` first when
    /// `signed`, not `-0`), not followed by a fraction or an exponent.
    fn digits(&mut self, max_digits: usize, signed: bool) -> Option<i64> {
        let negative = signed && self.eat(b'-');
        let start = self.at;
        let mut n: i64 = 0;
        while let Some(d @ b'0'..=b'9') = self.peek() {
            // Too long for the plain form before it could overflow (`max_digits` ≤ 18).
            if self.at - start == max_digits {
                return None;
            }
            n = n * 10 + i64::from(d - b'0');
            self.at += 1;
        }
        let len = self.at - start;
        let leading_zero = len > 1 && self.b[start] == b'0';
        if len == 0 || leading_zero || (negative && n == 0) {
            return None;
        }
        if let Some(b'.' | b'e' | b'E') = self.peek() {
            return None;
        }
        Some(if negative { -n } else { n })
    }

    /// A JSON string holding no escape sequence and no control character, as the bytes
    /// between its quotes (valid UTF-8).
    fn string(&mut self) -> Option<&'b [u8]> {
        if !self.eat(b'"') {
            return None;
        }
        let start = self.at;
        let rest = &self.b[start..];
        // The closing quote, unless a backslash comes first (vector search).
        let end = memchr::memchr2(b'"', b'\\', rest)?;
        if rest[end] != b'"' {
            return None;
        }
        let content = &rest[..end];
        // Control characters and non-ASCII bytes, found by a minimum and a maximum (both
        // loops compile to vector instructions).
        let lowest = content.iter().fold(u8::MAX, |m, &c| m.min(c));
        let highest = content.iter().fold(0, |m, &c| m.max(c));
        if lowest < 0x20 || (highest >= 0x80 && std::str::from_utf8(content).is_err()) {
            return None;
        }
        self.at = start + end + 1;
        Some(content)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(body: &str) -> Result<Vec<String>, usize> {
        let mut seen = Vec::new();
        match batch(body.as_bytes(), |r| {
            seen.push(format!("{r:?}"));
            Ok::<(), ()>(())
        }) {
            Ok(()) => Ok(seen),
            Err(Stop::Fallback(n)) => {
                assert_eq!(n, seen.len());
                Err(n)
            }
            Err(Stop::Refused(())) => unreachable!(),
        }
    }

    #[test]
    fn the_plain_form_is_read_and_the_rest_left_to_serde() {
        let long = format!(r#"{{"records":[{{"value":"{}"}}]}}"#, "é".repeat(40));
        assert_eq!(plain(&long).map(|r| r.len()), Ok(1));
        for (body, read) in [
            (r#"{"records":[]}"#, Ok(0)),
            (
                r#" { "records" : [ {} , {"key":null,"value":"v","partition":0,"timestamp":-5,"headers":[ ]} ] } "#,
                Ok(2),
            ),
            (
                r#"{"records":[{"value":"a"},{"value":"tab\there"}]}"#,
                Err(1),
            ),
            (r#"{"records":[{"value":"a"},{"value":1}]}"#, Err(1)),
            (r#"{"records":[{"value":"a","value":"b"}]}"#, Err(0)),
            (r#"{"records":[{"partition":1.0}]}"#, Err(0)),
            (r#"{"records":[{"partition":01}]}"#, Err(0)),
            (r#"{"records":[{"timestamp":-0}]}"#, Err(0)),
            (r#"{"records":[{"partition":4294967295}]}"#, Err(0)),
            (r#"{"records":[{"partition":999999999}]}"#, Ok(1)),
            (r#"{"records":[{"timestamp":-999999999999999999}]}"#, Ok(1)),
            (r#"{"records":[{"timestamp":9999999999999999999}]}"#, Err(0)),
            (r#"{"records":[{"value":"a"}],"records":[]}"#, Err(1)),
            (r#"{"records":[{"value":"a"}]} x"#, Err(1)),
            (r#"{"rec\u006frds":[]}"#, Err(0)),
            (r#"{"records":[{"other":1}]}"#, Err(0)),
            (
                r#"{"records":[{"headers":[{"name":"h","value":"x"}]}]}"#,
                Err(0),
            ),
            ("{\"records\":[{\"value\":\"a\u{1}\"}]}", Err(0)),
        ] {
            assert_eq!(plain(body).map(|r| r.len()), read, "{body}");
        }
        let bad_utf8 = b"{\"records\":[{\"value\":\"\xff\"}]}";
        assert!(matches!(
            batch(bad_utf8, |_| Ok::<(), ()>(())),
            Err(Stop::Fallback(0))
        ));
    }

    #[test]
    fn lines_in_the_plain_form() {
        assert!(line(br#" {"value":"v","key":"k"} "#).is_some());
        assert!(line(br#"{"value":"v"} {}"#).is_none());
        assert!(line(br#"{"value":"\u0041"}"#).is_none());
    }
}
