//! SASL/PLAIN, required when the server runs with `--auth-token`: the client's
//! SaslHandshake (v1) picks PLAIN, its SaslAuthenticate carries
//! `authzid NUL username NUL password`, and the password must be the token (the
//! username is not checked). Until then no other request is served; a wrong password is
//! answered and the connection closed.

use kafka_protocol::messages::{
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;

use crate::dispatch::Session;
use crate::{ListenerState, errors};
use kafko_service::auth::token_matches;

const PLAIN: &str = "PLAIN";

/// Answers a SaslHandshake: PLAIN only.
pub(crate) fn handshake(
    session: &mut Session,
    request: &SaslHandshakeRequest,
) -> SaslHandshakeResponse {
    let mut response = SaslHandshakeResponse::default();
    response.mechanisms = vec![StrBytes::from_static_str(PLAIN)];
    if request.mechanism.as_str() == PLAIN {
        session.handshake = true;
    } else {
        response.error_code = errors::UNSUPPORTED_SASL_MECHANISM;
    }
    response
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
    let mut parts = request.auth_bytes.split(|b| *b == 0);
    let (_authzid, _user, password) = (parts.next(), parts.next(), parts.next());
    let expected = broker
        .service
        .config
        .auth_token
        .as_deref()
        .unwrap_or_default();
    let ok = parts.next().is_none() && password.is_some_and(|p| token_matches(expected, p));
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
