//! Refusing a connection past the cap: it is answered 503 and closed without being
//! read. (A failing `accept` backs off in `kafko_service::connections::backoff`.)

use tokio::net::TcpStream;

/// The answer to a connection past the cap: a complete HTTP/1.1 503 sent before reading
/// anything, so the client learns why rather than seeing a bare close.
const REFUSAL: &str = concat!(
    "HTTP/1.1 503 Service Unavailable\r\n",
    "content-type: application/problem+json\r\n",
    "retry-after: 1\r\n",
    "connection: close\r\n",
    "content-length: 152\r\n",
    "\r\n",
    r#"{"type":"urn:kafko:problem:overloaded","title":"Service Unavailable","status":503,"detail":"too many open connections; retry later","code":"overloaded"}"#,
);

/// Answers 503 and closes, without waiting: a fresh socket's send buffer takes it whole.
pub(super) fn refuse(stream: TcpStream) {
    if let Err(e) = stream.try_write(REFUSAL.as_bytes()) {
        tracing::debug!(error = %e, "could not answer a refused connection");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_declares_its_body_length() {
        let (head, body) = REFUSAL.split_once("\r\n\r\n").unwrap();
        let declared = format!("content-length: {}", body.len());
        assert!(head.split("\r\n").any(|l| l == declared), "{head}");
        let problem: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(problem["status"], 503);
        assert_eq!(problem["code"], "overloaded");
    }
}
