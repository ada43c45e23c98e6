//! One request: its header (API key, version, correlation id, client id, and tagged
//! fields from the flexible versions on), the version check against what this broker
//! advertises, the guard, SASL gating, the body decoded by the message codec (bytes after
//! the body are ignored: librdkafka's Metadata v12 carries some), the handler, and the
//! answer encoded with its header. The APIs, their versions, layouts and handlers are
//! the table's in `apis`.
//!
//! An unsupported ApiVersions version is answered with error 35 in the v0 layout,
//! listing the supported ranges, so the client retries with one of them. Produce v0–2
//! and Fetch v0–3 are answered UNSUPPORTED_VERSION in their own layout (`refusals`).
//! The frame after a SaslHandshake v0 is no request but the raw credentials (`sasl`).
//! Any other unsupported API or version, or bytes that are no request, close the
//! connection, as a Kafka broker does. A refused version is logged at `info`: it is a
//! client to upgrade or configure.

use bytes::{Buf, BufMut, Bytes};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse};
use kafka_protocol::protocol::{Encodable, HeaderVersion};

use crate::apis::{self, Api, Call, Gate};
use crate::frame::Frame;
use crate::{ListenerState, errors, frame, guard, refusals, sasl};
use kafko_service::answer_budget::Reservation;

/// A connection's state between requests.
#[derive(Debug)]
pub(crate) struct Session {
    /// Whether the server requires SASL/PLAIN before any other request.
    pub(crate) auth_required: bool,
    /// A SaslHandshake chose PLAIN.
    pub(crate) handshake: bool,
    /// A SaslHandshake v0 chose PLAIN: the next frame is the raw credentials.
    pub(crate) raw_credentials_next: bool,
    /// The client authenticated.
    pub(crate) authenticated: bool,
    /// The client's address, as group descriptions show it.
    pub(crate) peer: String,
}

impl Session {
    pub(crate) fn new(auth_required: bool, peer: String) -> Self {
        Session {
            auth_required,
            handshake: false,
            raw_credentials_next: false,
            authenticated: false,
            peer,
        }
    }
}

/// What the connection does after a request.
pub(crate) enum Outcome {
    /// Send this frame.
    Answer(Bytes),
    /// Send this frame of pieces, holding its room in the answer budget (if any) until
    /// it is written.
    Held(Frame, Option<Reservation>),
    /// Send nothing (a produce with acks=0).
    Silent,
    /// Send this frame, then close (a failed authentication).
    AnswerAndClose(Bytes),
    /// Close without an answer, for this reason.
    Close(String),
}

/// The request header.
#[derive(Debug)]
pub(crate) struct Header {
    pub(crate) api_key: i16,
    pub(crate) version: i16,
    pub(crate) correlation_id: i32,
    /// The client id the request names (empty when null).
    pub(crate) client_id: String,
}

pub(crate) fn parse_header(body: &mut Bytes) -> Result<Header, String> {
    if body.len() < 10 {
        return Err("a request shorter than its header".into());
    }
    let api_key = body.get_i16();
    let version = body.get_i16();
    let correlation_id = body.get_i32();
    let client_id_len = body.get_i16();
    let mut client_id = String::new();
    if client_id_len > 0 {
        let len = usize::try_from(client_id_len).unwrap_or(usize::MAX);
        if len > body.len() {
            return Err("client id past the request".into());
        }
        client_id = String::from_utf8_lossy(&body.split_to(len)).into_owned();
    } else if client_id_len < -1 {
        return Err("negative client id length".into());
    }
    let flexible = ApiKey::try_from(api_key)
        .map(|key| key.request_header_version(version) >= 2)
        .unwrap_or(false);
    if flexible {
        skip_tagged_fields(body)?;
    }
    Ok(Header {
        api_key,
        version,
        correlation_id,
        client_id,
    })
}

pub(crate) fn unsigned_varint(body: &mut Bytes) -> Result<u32, String> {
    let mut value: u32 = 0;
    for shift in (0..35).step_by(7) {
        if body.is_empty() {
            return Err("truncated varint in the request header".into());
        }
        let byte = body.get_u8();
        value |= u32::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err("varint too long in the request header".into())
}

fn skip_tagged_fields(body: &mut Bytes) -> Result<(), String> {
    let count = unsigned_varint(body)?;
    for _ in 0..count {
        let _tag = unsigned_varint(body)?;
        let size = usize::try_from(unsigned_varint(body)?).unwrap_or(usize::MAX);
        if size > body.len() {
            return Err("tagged field past the request header".into());
        }
        body.advance(size);
    }
    Ok(())
}

/// The served API of `key` at `version` on this connection, if any.
fn served(session: &Session, key: ApiKey, version: i16) -> Option<&'static Api> {
    apis::find(key).filter(|api| api.advertised(session) && api.versions().contains(&version))
}

/// A response framed with its header.
pub(super) fn encode<T: Encodable + HeaderVersion>(
    correlation_id: i32,
    version: i16,
    response: &T,
) -> Result<Bytes, String> {
    let mut buf = frame::start();
    buf.put_i32(correlation_id);
    if T::header_version(version) >= 1 {
        buf.put_u8(0); // no tagged fields
    }
    response
        .encode(&mut buf, version)
        .map_err(|e| format!("encoding the answer: {e}"))?;
    frame::seal(buf).map_err(|e| e.to_string())
}

/// Handles one request frame.
pub(crate) async fn handle(
    broker: &ListenerState,
    session: &mut Session,
    mut body: Bytes,
) -> Outcome {
    if session.raw_credentials_next {
        return sasl::raw_credentials(broker, session, &body);
    }
    let header = match parse_header(&mut body) {
        Ok(header) => header,
        Err(why) => return Outcome::Close(why),
    };
    match route(broker, session, &header, body).await {
        Ok(outcome) => outcome,
        Err(why) => Outcome::Close(why),
    }
}

/// Every advertised range, for ApiVersions.
pub(super) fn api_versions(session: &Session, error_code: i16) -> ApiVersionsResponse {
    let mut response = ApiVersionsResponse::default();
    response.error_code = error_code;
    response.api_keys = apis::APIS
        .iter()
        .filter(|api| api.advertised(session))
        .map(|api| {
            let mut v = ApiVersion::default();
            v.api_key = api.key as i16;
            v.min_version = api.oldest;
            v.max_version = api.max;
            v
        })
        .collect();
    response
}

async fn route(
    broker: &ListenerState,
    session: &mut Session,
    header: &Header,
    mut body: Bytes,
) -> Result<Outcome, String> {
    let Ok(key) = ApiKey::try_from(header.api_key) else {
        return Err(format!("unknown API key {}", header.api_key));
    };
    let version = header.version;
    let Some(api) = served(session, key, version) else {
        if key == ApiKey::ApiVersions {
            // KIP-511: the error answer is in the v0 layout whatever was asked.
            let response = api_versions(session, errors::UNSUPPORTED_VERSION);
            return Ok(Outcome::Answer(encode(
                header.correlation_id,
                0,
                &response,
            )?));
        }
        tracing::info!(
            api = ?key,
            version,
            client_id = %header.client_id,
            peer = %session.peer,
            "refused a Kafka request version this server does not serve"
        );
        if !session.auth_required || session.authenticated {
            let max_tagged = broker.service.config.max_tagged_fields;
            if let Some(answer) = refusals::answer(header, key, &body, max_tagged) {
                return answer;
            }
        }
        return Err(format!("{key:?} v{version} is not supported"));
    };
    // Before the codec reserves room for any array it declares.
    guard::check(api, version, &body, broker.service.config.max_tagged_fields)?;
    if session.auth_required && !session.authenticated && api.gate == Gate::Authenticated {
        return Err(format!("{key:?} before SASL authentication"));
    }
    let request = apis::decode(key, version, &mut body)?;
    let call = Call {
        broker,
        session,
        header,
    };
    apis::serve(call, request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flexible_header_skips_its_tagged_fields() {
        let mut raw = bytes::BytesMut::new();
        raw.put_i16(3); // Metadata
        raw.put_i16(12);
        raw.put_i32(77);
        raw.put_i16(3);
        raw.put_slice(b"cli");
        raw.put_u8(1); // one tagged field
        raw.put_u8(5);
        raw.put_u8(2);
        raw.put_slice(b"xy");
        raw.put_slice(b"BODY");
        let mut body = raw.freeze();
        let header = parse_header(&mut body).unwrap();
        assert_eq!(
            (header.api_key, header.version, header.correlation_id),
            (3, 12, 77)
        );
        assert_eq!(&body[..], b"BODY");
    }

    #[test]
    fn a_truncated_header_is_refused() {
        let mut body = Bytes::from_static(&[0, 3, 0, 12, 0, 0, 0, 1, 0, 9, b'a']);
        assert!(parse_header(&mut body).is_err());
    }
}
