//! SASL/PLAIN, required when the server runs with `--auth-token`: the client's
//! SaslHandshake picks PLAIN, then sends `authzid NUL username NUL password`, and the
//! password must be the token (the username is not checked). After a SaslHandshake v1
//! the credentials come in a SaslAuthenticate request; after a v0 (the flow before
//! KIP-152, which Kafka 4.0 still serves) they come as the next frame, raw, answered by
//! an empty frame. Until then no other request is served; a wrong password is answered
//! (v1) or not (v0) and the connection closed.

use bytes::Bytes;
use kafka_protocol::messages::{
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;

use crate::dispatch::{Outcome, Session};
use crate::{ListenerState, errors};
use kafko_service::auth::token_matches;

const PLAIN: &str = "PLAIN";

/// Answers a SaslHandshake at `version`: PLAIN only, and only before authentication.
/// After a v0 choosing PLAIN, the next frame is the raw credentials ([`raw_credentials`]).
pub(crate) fn handshake(
    session: &mut Session,
    request: &SaslHandshakeRequest,
    version: i16,
) -> SaslHandshakeResponse {
    let mut response = SaslHandshakeResponse::default();
    response.mechanisms = vec![StrBytes::from_static_str(PLAIN)];
    if session.authenticated {
        response.error_code = errors::ILLEGAL_SASL_STATE;
    } else if request.mechanism.as_str() == PLAIN {
        session.handshake = true;
        session.raw_credentials_next = version == 0;
    } else {
        response.error_code = errors::UNSUPPORTED_SASL_MECHANISM;
    }
    response
}

/// Reads the frame after a SaslHandshake v0: the PLAIN credentials themselves, with no
/// request header. The token as password is answered by an empty frame and logs the
/// connection in; anything else closes it, unanswered (v0 has no error to send), after
/// the failed-authentication delay.
pub(crate) fn raw_credentials(
    broker: &ListenerState,
    session: &mut Session,
    frame: &[u8],
) -> Outcome {
    session.raw_credentials_next = false;
    if plain_password_matches(broker, frame) {
        session.authenticated = true;
        Outcome::Answer(Bytes::from_static(&[0, 0, 0, 0]))
    } else {
        Outcome::AnswerAndClose(Bytes::new())
    }
}

/// Whether `auth_bytes` are PLAIN's `authzid NUL username NUL password` with the
/// server's token as the password.
fn plain_password_matches(broker: &ListenerState, auth_bytes: &[u8]) -> bool {
    let mut parts = auth_bytes.split(|b| *b == 0);
    let (_authzid, _user, password) = (parts.next(), parts.next(), parts.next());
    let expected = broker
        .service
        .config
        .auth_token
        .as_deref()
        .unwrap_or_default();
    parts.next().is_none() && password.is_some_and(|p| token_matches(expected, p))
}

/// Answers a SaslAuthenticate; `true` when the client is now authenticated.
pub(crate) fn authenticate(
    broker: &ListenerState,
    session: &mut Session,
    request: &SaslAuthenticateRequest,
) -> (SaslAuthenticateResponse, bool) {
    let mut response = SaslAuthenticateResponse::default();
    if !session.handshake {
        response.error_code = errors::ILLEGAL_SASL_STATE;
        response.error_message = Some(StrBytes::from_static_str(
            "SaslAuthenticate before a SaslHandshake choosing PLAIN",
        ));
        return (response, false);
    }
    let ok = plain_password_matches(broker, &request.auth_bytes);
    if ok {
        session.authenticated = true;
    } else {
        response.error_code = errors::SASL_AUTHENTICATION_FAILED;
        response.error_message = Some(StrBytes::from_static_str(
            "authentication failed: the password must be the server's token",
        ));
    }
    (response, ok)
}
