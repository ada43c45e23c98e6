//! The `format` encodings of keys, values and header values inside JSON bodies:
//! `string` (UTF-8 text), `json` (an embedded JSON document, stored as its compact text)
//! and `base64` (any bytes, standard alphabet with padding). Decoding never guesses and
//! encoding never loses bytes: what does not fit the chosen format is a 4xx naming
//! `format=base64`.

use axum::http::StatusCode;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::error::ApiError;

/// How bytes travel inside JSON.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Format {
    /// UTF-8 text as a JSON string (the default; round-trips what a curl user posts).
    #[default]
    String,
    /// An embedded JSON document, stored as its compact text.
    Json,
    /// Any bytes as a base64 string (standard alphabet, padded).
    Base64,
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Format::String => "string",
            Format::Json => "json",
            Format::Base64 => "base64",
        }
    }
}

/// Bytes rendered for a JSON response.
#[derive(Debug)]
pub(crate) enum Wire {
    /// A JSON string.
    Text(String),
    /// Verbatim JSON text.
    Json(Box<RawValue>),
}

impl Serialize for Wire {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Wire::Text(t) => s.serialize_str(t),
            Wire::Json(raw) => raw.serialize(s),
        }
    }
}

/// [`decode`] for a member borrowed from `body`: a plain string (no escapes) becomes a
/// slice of `body` itself, sharing its buffer, instead of a copy.
pub(crate) fn decode_from(
    body: &Bytes,
    raw: &RawValue,
    format: Format,
    what: &str,
) -> Result<Bytes, ApiError> {
    if format == Format::String
        && let Some(inner) = unescaped_string(raw.get())
        && let Some(shared) = subslice_of(body, inner.as_bytes())
    {
        return Ok(shared);
    }
    decode(raw, format, what)
}

/// `part` as a `Bytes` sharing `whole`'s buffer, when `part` lies inside `whole`.
fn subslice_of(whole: &Bytes, part: &[u8]) -> Option<Bytes> {
    let start = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    // `slice_ref` panics on a foreign slice; the range check makes that impossible.
    (start + part.len() <= whole.len()).then(|| whole.slice_ref(part))
}

/// Decodes a JSON member into bytes under `format`.
pub(crate) fn decode(raw: &RawValue, format: Format, what: &str) -> Result<Bytes, ApiError> {
    let text = raw.get();
    match format {
        Format::Json => minify(text).map(Bytes::from).ok_or_else(|| {
            ApiError::bad_request(
                "invalid_json",
                format!("{what} is nested deeper than {MAX_JSON_DEPTH} levels"),
            )
        }),
        Format::String | Format::Base64 => {
            // Fast path: a JSON string without escapes is its own content between the
            // quotes (`RawValue` already checked it is valid JSON), so skip the second
            // parse and the intermediate `String`.
            if let Some(inner) = unescaped_string(text) {
                if format == Format::String {
                    return Ok(Bytes::copy_from_slice(inner.as_bytes()));
                }
                return STANDARD
                    .decode(inner.as_bytes())
                    .map(Bytes::from)
                    .map_err(|e| {
                        ApiError::bad_request(
                            "invalid_base64",
                            format!("{what} is not valid base64: {e}"),
                        )
                    });
            }
            let s: String = serde_json::from_str(text).map_err(|_| {
                ApiError::bad_request(
                    "invalid_record",
                    format!(
                        "{what} must be a JSON string under format={}; use format=json to embed a JSON document",
                        format.name()
                    ),
                )
            })?;
            if format == Format::String {
                return Ok(Bytes::from(s));
            }
            STANDARD.decode(s.as_bytes()).map(Bytes::from).map_err(|e| {
                ApiError::bad_request("invalid_base64", format!("{what} is not valid base64: {e}"))
            })
        }
    }
}

/// The content of a JSON string literal that holds no escape sequence, if `text` is one.
/// `text` is valid JSON, so between its first and last quote a `"` can only appear
/// escaped: a backslash-free inside is the string itself (a byte search, memchr-fast).
fn unescaped_string(text: &str) -> Option<&str> {
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    (!inner.as_bytes().contains(&b'\\')).then_some(inner)
}

/// Encodes stored bytes for a JSON response under `format`.
pub(crate) fn encode(
    bytes: &[u8],
    format: Format,
    what: &str,
    offset: u64,
) -> Result<Wire, ApiError> {
    match format {
        Format::Base64 => Ok(Wire::Text(STANDARD.encode(bytes))),
        Format::String => match std::str::from_utf8(bytes) {
            Ok(s) => Ok(verbatim_string(s).unwrap_or_else(|| Wire::Text(s.to_owned()))),
            Err(_) => Err(unrepresentable(what, offset, "is not valid UTF-8")),
        },
        Format::Json => std::str::from_utf8(bytes)
            .ok()
            .and_then(|s| RawValue::from_string(s.to_owned()).ok())
            .map(Wire::Json)
            .ok_or_else(|| unrepresentable(what, offset, "is not a JSON document")),
    }
}

/// `s` as a ready-made JSON string literal, when it needs no escaping: serde_json then
/// copies it out verbatim instead of escaping it byte by byte (the bulk of a JSON read's
/// CPU time). The output bytes are the same: serde_json escapes only `"`, `\\` and
/// control characters, and a string holding none of them is its own literal (the
/// validation in `RawValue::from_string` rejects quotes and control characters; the
/// backslash is excluded first because it would be read as an escape).
fn verbatim_string(s: &str) -> Option<Wire> {
    if s.as_bytes().contains(&b'\\') {
        return None;
    }
    let mut quoted = String::with_capacity(s.len() + 2);
    quoted.push('"');
    quoted.push_str(s);
    quoted.push('"');
    RawValue::from_string(quoted).ok().map(Wire::Json)
}

fn unrepresentable(what: &str, offset: u64, why: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_ACCEPTABLE,
        "not_representable",
        format!("the {what} of the record at offset {offset} {why}; read it with format=base64"),
    )
    .with("offset", serde_json::json!(offset))
}

/// Deepest nesting of arrays and objects accepted in an embedded JSON document: the
/// limit of serde_json's own parser, so a stored value is one any reader of ours (and
/// common JSON libraries) can parse back. `RawValue` alone checks no depth, which let a
/// 100,000-deep value be stored (found by the hostile-input tests).
pub(crate) const MAX_JSON_DEPTH: usize = 128;

/// Removes insignificant whitespace from valid JSON text (strings untouched); `None` when
/// arrays and objects nest deeper than [`MAX_JSON_DEPTH`].
pub(crate) fn minify(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    let mut depth = 0usize;
    for &b in text.as_bytes() {
        if in_string {
            out.push(b);
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if !b.is_ascii_whitespace() {
            match b {
                b'"' => in_string = true,
                b'[' | b'{' => {
                    depth += 1;
                    if depth > MAX_JSON_DEPTH {
                        return None;
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
            out.push(b);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_strings_share_the_body_and_escaped_ones_are_decoded() {
        let body = Bytes::from_static(br#"{"a":"plain text","b":"tab\there","c":{"x":1}}"#);
        let doc: std::collections::BTreeMap<&str, &RawValue> =
            serde_json::from_slice(&body).unwrap();
        let plain = decode_from(&body, doc["a"], Format::String, "value").unwrap();
        assert_eq!(&plain[..], b"plain text");
        let start = plain.as_ptr() as usize - body.as_ptr() as usize;
        assert!(
            start < body.len(),
            "the plain string is a slice of the body"
        );
        let escaped = decode_from(&body, doc["b"], Format::String, "value").unwrap();
        assert_eq!(&escaped[..], b"tab\there");
        let json = decode_from(&body, doc["c"], Format::Json, "value").unwrap();
        assert_eq!(&json[..], br#"{"x":1}"#);
        // A member parsed from another buffer is copied, never sliced out of `body`.
        let other: &RawValue = serde_json::from_str(r#""elsewhere""#).unwrap();
        let copied = decode_from(&body, other, Format::String, "value").unwrap();
        assert_eq!(&copied[..], b"elsewhere");
        let err = decode_from(&body, doc["c"], Format::String, "value").unwrap_err();
        assert_eq!(
            (err.status, err.code),
            (StatusCode::BAD_REQUEST, "invalid_record")
        );
    }

    #[test]
    fn minify_keeps_strings_and_drops_layout() {
        let text = "{ \"a b\" : [1, 2,\n 3], \"q\": \"x \\\" y\" }";
        assert_eq!(
            minify(text).unwrap(),
            br#"{"a b":[1,2,3],"q":"x \" y"}"#.to_vec()
        );
    }

    #[test]
    fn json_values_nested_past_the_limit_are_refused() {
        let nest = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        let ok = RawValue::from_string(nest(MAX_JSON_DEPTH)).unwrap();
        assert!(decode(&ok, Format::Json, "value").is_ok());
        let deep = RawValue::from_string(nest(100_000)).unwrap();
        let err = decode(&deep, Format::Json, "value").unwrap_err();
        assert_eq!(
            (err.status, err.code),
            (StatusCode::BAD_REQUEST, "invalid_json")
        );
        // Brackets inside strings do not count.
        let text = format!("[\"{}\"]", "[".repeat(1000));
        assert!(minify(&text).is_some());
    }

    #[test]
    fn string_format_refuses_invalid_utf8_and_names_base64() {
        let err = encode(&[0xff, 0xfe], Format::String, "value", 7).unwrap_err();
        assert_eq!(err.status, StatusCode::NOT_ACCEPTABLE);
        assert!(err.detail.contains("format=base64"));
    }

    #[test]
    fn base64_round_trips_every_byte() {
        let all: Vec<u8> = (0..=255).collect();
        let Wire::Text(s) = encode(&all, Format::Base64, "value", 0).unwrap() else {
            panic!("base64 is text")
        };
        let raw = RawValue::from_string(serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(decode(&raw, Format::Base64, "value").unwrap().to_vec(), all);
    }

    #[test]
    fn string_values_decode_alike_with_and_without_escapes() {
        for (json, expected) in [
            (r#""plain text, no escapes""#, "plain text, no escapes"),
            ("\"\"", ""),
            (
                r#""quote \" and \\ and \u00e9""#,
                "quote \" and \\ and \u{e9}",
            ),
            (r#""caf\u00e9 ☕""#, "caf\u{e9} ☕"),
        ] {
            let raw = RawValue::from_string(json.to_owned()).unwrap();
            let bytes = decode(&raw, Format::String, "value").unwrap();
            assert_eq!(std::str::from_utf8(&bytes).unwrap(), expected, "{json}");
        }
        for not_a_string in ["42", "null", r#"{"a":"b"}"#, r#"["x"]"#] {
            let raw = RawValue::from_string(not_a_string.to_owned()).unwrap();
            let err = decode(&raw, Format::String, "value").unwrap_err();
            assert_eq!(err.code, "invalid_record", "{not_a_string}");
        }
    }

    #[test]
    fn string_values_encode_to_exactly_what_serde_json_writes() {
        let long = "x".repeat(5000);
        for s in [
            "",
            "plain",
            long.as_str(),
            "quote \" inside",
            "back\\slash",
            "literal \\n is not a newline",
            "new\nline\ttab\u{1}\u{1f}",
            "caf\u{e9} \u{2615} \u{1F600} \u{7f}",
            "</script> & 'single'",
        ] {
            let wire = encode(s.as_bytes(), Format::String, "value", 0).unwrap();
            assert_eq!(
                serde_json::to_string(&wire).unwrap(),
                serde_json::to_string(s).unwrap(),
                "{s:?}"
            );
        }
    }

    #[test]
    fn json_format_keeps_big_numbers_exact() {
        let raw = RawValue::from_string("{\"n\": 123456789012345678901234567890}".into()).unwrap();
        let bytes = decode(&raw, Format::Json, "value").unwrap();
        assert_eq!(&bytes[..], br#"{"n":123456789012345678901234567890}"#);
        let Wire::Json(back) = encode(&bytes, Format::Json, "value", 0).unwrap() else {
            panic!("json stays json")
        };
        assert_eq!(back.get(), r#"{"n":123456789012345678901234567890}"#);
    }
}
