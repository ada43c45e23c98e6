//! How long the handling of one request may run before the connection is closed, and
//! whether its client is still there: a request being handled races this limit, and a
//! request that waits for others (Fetch, JoinGroup, SyncGroup) races the socket's close
//! too, so that no request holds a connection slot, a lock or its memory forever. A
//! request that changes the log (a produce, a commit) is not dropped at a close: as in
//! Kafka, it completes and its answer is discarded.
//!
//! The limit is `--request-timeout-ms` (at least `--max-wait-ms` and a few seconds, so a
//! waiting Fetch always ends on its own first), plus the wait the request itself names:
//! a JoinGroup's rebalance timeout, as a Kafka client waits for its join answer that
//! long (plus its request timeout) before it gives up.

use std::time::Duration;

use bytes::{Buf, Bytes};
use kafka_protocol::messages::ApiKey;
use tokio::net::TcpStream;

use crate::dispatch;
use kafko_service::config::ServerConfig;

/// What a waiting Fetch may take past its wait: reading, and waiting for room in the
/// answer budget.
const AFTER_WAIT: Duration = Duration::from_secs(5);

/// The limits of one request's handling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// How long it may be handled.
    pub(crate) time: Duration,
    /// Whether it waits for other clients or for records, and is dropped when its own
    /// client closes the socket.
    pub(crate) waits: bool,
}

/// The limits of the request in `body` (a frame without its size prefix).
pub(crate) fn of(config: &ServerConfig, body: &Bytes) -> Limits {
    let base = config
        .request_timeout
        .max(config.max_wait.saturating_add(AFTER_WAIT));
    let mut rest = body.clone();
    let Ok(header) = dispatch::parse_header(&mut rest) else {
        return Limits {
            time: base,
            waits: false,
        };
    };
    let key = ApiKey::try_from(header.api_key);
    let named = match key {
        Ok(ApiKey::JoinGroup) => rebalance_timeout(header.version, rest).unwrap_or_default(),
        _ => Duration::ZERO,
    };
    Limits {
        time: base.saturating_add(named),
        waits: matches!(
            key,
            Ok(ApiKey::Fetch | ApiKey::JoinGroup | ApiKey::SyncGroup)
        ),
    }
}

/// A JoinGroup's rebalance timeout, from its body after the header; `None` when the
/// bytes do not parse (the handler refuses those).
fn rebalance_timeout(version: i16, mut body: Bytes) -> Option<Duration> {
    // The group id: a compact string from v6 on, else an i16-sized one.
    let len = if version >= 6 {
        usize::try_from(dispatch::unsigned_varint(&mut body).ok()?.checked_sub(1)?).ok()?
    } else {
        if body.remaining() < 2 {
            return None;
        }
        usize::try_from(body.get_i16()).ok()?
    };
    // The session timeout, then the rebalance timeout (every supported version has one).
    if body.remaining() < len + 8 {
        return None;
    }
    body.advance(len + 4);
    let rebalance_ms = u64::try_from(body.get_i32()).ok()?;
    Some(Duration::from_millis(rebalance_ms))
}

/// Resolves once the client closed its side of the connection (or the socket failed).
/// When the client already sent its next request, the close cannot be seen before that
/// request is read: then this waits forever, and the time limit still holds.
pub(crate) async fn peer_closed(stream: &TcpStream) {
    let mut byte = [0u8; 1];
    match stream.peek(&mut byte).await {
        Ok(0) | Err(_) => {}
        Ok(_) => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::{
        FetchRequest, JoinGroupRequest, MetadataRequest, ProduceRequest, RequestHeader,
    };
    use kafka_protocol::protocol::{Encodable, Request, StrBytes};

    fn frame<R: Request>(request: &R, version: i16) -> Bytes {
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_client_id(Some(StrBytes::from_static_str("c")));
        let mut body = bytes::BytesMut::new();
        header
            .encode(&mut body, R::header_version(version))
            .unwrap();
        request.encode(&mut body, version).unwrap();
        body.freeze()
    }

    #[test]
    fn a_join_adds_its_rebalance_timeout_and_other_requests_nothing() {
        let config = ServerConfig::default();
        let base = config
            .request_timeout
            .max(config.max_wait.saturating_add(AFTER_WAIT));
        for version in [2, 5, 6, 7] {
            let join = JoinGroupRequest::default()
                .with_group_id(kafka_protocol::messages::GroupId(
                    StrBytes::from_static_str("g"),
                ))
                .with_session_timeout_ms(10_000)
                .with_rebalance_timeout_ms(300_000);
            assert_eq!(
                of(&config, &frame(&join, version)),
                Limits {
                    time: base + Duration::from_secs(300),
                    waits: true
                },
                "v{version}"
            );
        }
        let negative = JoinGroupRequest::default().with_rebalance_timeout_ms(-1);
        assert_eq!(of(&config, &frame(&negative, 7)).time, base);
        let metadata = of(&config, &frame(&MetadataRequest::default(), 9));
        assert_eq!(
            metadata,
            Limits {
                time: base,
                waits: false
            }
        );
        let produce = of(&config, &frame(&ProduceRequest::default(), 9));
        assert!(
            !produce.waits,
            "a produce completes whatever the client does"
        );
        assert!(of(&config, &frame(&FetchRequest::default(), 12)).waits);
        assert_eq!(of(&config, &Bytes::from_static(&[0, 11, 0])).time, base);
    }
}
