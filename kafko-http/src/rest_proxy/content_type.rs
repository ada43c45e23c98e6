//! The REST Proxy's media types: `application/vnd.kafka[.{embedded}].v2+json`, where the
//! embedded format says how keys and values travel inside the JSON (binary = base64,
//! json = any JSON value; avro, protobuf and jsonschema need a schema registry, which
//! kafko does not have). Reads the embedded format of a produce's `Content-Type` and
//! negotiates a records read's `Accept`.

use axum::http::{HeaderMap, StatusCode, header};

use super::error::{CONSUMER_FORMAT_MISMATCH, INVALID_SCHEMA, ProxyError};

/// v2 answers (and requests without an embedded format).
pub(crate) const V2_JSON: &str = "application/vnd.kafka.v2+json";
/// v2 binary embedded format.
pub(crate) const V2_BINARY: &str = "application/vnd.kafka.binary.v2+json";
/// v2 JSON embedded format.
pub(crate) const V2_JSON_EMBEDDED: &str = "application/vnd.kafka.json.v2+json";
/// v3 answers.
pub(crate) const V3_JSON: &str = "application/json";

/// How keys and values are embedded in a v2 body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EmbeddedFormat {
    /// Base64 strings.
    Binary,
    /// Any JSON value, stored as its serialized text.
    Json,
    /// Avro, Protobuf or JSON Schema (named for the error message): not supported.
    Schema(&'static str),
}

impl EmbeddedFormat {
    /// From a consumer's `format` setting (case-insensitive), `None` if unknown.
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "binary" => Some(EmbeddedFormat::Binary),
            "json" => Some(EmbeddedFormat::Json),
            "avro" => Some(EmbeddedFormat::Schema("avro")),
            "protobuf" => Some(EmbeddedFormat::Schema("protobuf")),
            "jsonschema" => Some(EmbeddedFormat::Schema("jsonschema")),
            _ => None,
        }
    }

    /// The records media type of this format.
    pub(crate) fn media_type(self) -> &'static str {
        match self {
            EmbeddedFormat::Binary => V2_BINARY,
            EmbeddedFormat::Json => V2_JSON_EMBEDDED,
            EmbeddedFormat::Schema(_) => V2_JSON,
        }
    }
}

/// The error for any schema-based format.
pub(crate) fn no_schema_registry(format: &str) -> ProxyError {
    ProxyError::unprocessable(
        INVALID_SCHEMA,
        format!(
            "Invalid schema: the {format} format needs a schema registry, which kafko does not have; use binary or json"
        ),
    )
}

/// The embedded format named by a `application/vnd.kafka.{format}.v2+json` media type
/// (`None` for anything else, including the format-less `application/vnd.kafka.v2+json`).
fn embedded_of(media: &str) -> Option<EmbeddedFormat> {
    let inner = media
        .strip_prefix("application/vnd.kafka.")?
        .strip_suffix(".v2+json")?;
    EmbeddedFormat::from_name(inner)
}

fn essence(value: &str) -> String {
    value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// The embedded format of a v2 produce body: binary or json; a schema format is the
/// proxy's 42205, anything else 415 (the proxy accepts only its own types here).
pub(crate) fn produce_format(headers: &HeaderMap) -> Result<EmbeddedFormat, ProxyError> {
    let media = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(essence)
        .unwrap_or_default();
    match embedded_of(&media) {
        Some(EmbeddedFormat::Schema(name)) => Err(no_schema_registry(name)),
        Some(format) => Ok(format),
        None => Err(ProxyError::plain(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!(
                "HTTP 415 Unsupported Media Type: produce takes {V2_BINARY} or {V2_JSON_EMBEDDED}, not '{media}'"
            ),
        )),
    }
}

/// Checks a records read's `Accept` against the instance's format: the instance's own
/// type is accepted; `*/*`, `application/*`, `application/vnd.kafka.v2+json` and no
/// `Accept` at all mean binary, as on the proxy. Anything else is 406 / 40601.
pub(crate) fn check_accept(headers: &HeaderMap, format: EmbeddedFormat) -> Result<(), ProxyError> {
    let mut ranges = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(essence)
        .filter(|m| !m.is_empty())
        .peekable();
    let mut wants_binary = ranges.peek().is_none();
    for media in ranges {
        match embedded_of(&media) {
            Some(f) if f == format => return Ok(()),
            Some(_) => {}
            None => {
                if matches!(media.as_str(), "*/*" | "application/*" | V2_JSON) {
                    wants_binary = true;
                }
            }
        }
    }
    if wants_binary && format == EmbeddedFormat::Binary {
        return Ok(());
    }
    Err(ProxyError::new(
        StatusCode::NOT_ACCEPTABLE,
        CONSUMER_FORMAT_MISMATCH,
        "The requested embedded data format does not match the deserializer for this consumer instance",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn accept(v: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(v) = v {
            h.insert(header::ACCEPT, HeaderValue::from_str(v).expect("header"));
        }
        h
    }

    #[test]
    fn accept_negotiation_follows_the_proxy() {
        let (b, j) = (EmbeddedFormat::Binary, EmbeddedFormat::Json);
        assert!(check_accept(&accept(None), b).is_ok());
        assert!(check_accept(&accept(Some("*/*")), b).is_ok());
        assert!(check_accept(&accept(Some("*/*")), j).is_err());
        assert!(check_accept(&accept(None), j).is_err());
        assert!(check_accept(&accept(Some(V2_JSON_EMBEDDED)), j).is_ok());
        assert!(check_accept(&accept(Some(V2_BINARY)), j).is_err());
        assert!(
            check_accept(
                &accept(Some("text/html, application/vnd.kafka.binary.v2+json")),
                b
            )
            .is_ok()
        );
        assert!(check_accept(&accept(Some("application/vnd.kafka.avro.v2+json")), b).is_err());
    }
}
