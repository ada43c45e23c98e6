//! Accepting Kafka connections, each served by its own task that reads one request,
//! answers it, and only then reads the next, so answers leave in request order (as a
//! Kafka broker mutes a connection while a request is in flight).
//!
//! - Kafka connections count under the server's one connection cap (`--max-connections`)
//!   with its HTTP connections, in the same registry and under the same timeouts: one
//!   that sends no complete request within `--header-read-timeout-ms` of accept, or
//!   nothing for `--idle-timeout-ms` after its last answer, is closed; at the cap a
//!   newcomer closes the oldest idle connection (clients reconnect), never one that
//!   authenticated with SASL, and is closed itself when there is none.
//! - Frames: before SASL authentication one past `--sasl-server-max-receive-size` closes
//!   the connection from its size prefix; large ones wait for room in
//!   `--queued-max-request-bytes` before they are read. Bytes that are not a Kafka
//!   request close their connection only.
//! - A request being handled races its time limit, and a waiting one its client's close
//!   (`request_limit`): either drops the handling and frees the slot. An answer the
//!   client does not take within `--request-timeout-ms` closes the connection.
//! - A failed authentication is answered after
//!   `--connection-failed-authentication-delay-ms`, then the connection is closed.
//! - Shutdown stops accepting and closes every connection between requests (a waiting
//!   fetch answers at once), and the log shuts down once they closed.

use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};

use crate::dispatch::{self, Outcome, Session};
use crate::frame::{self, FrameError};
use crate::{ListenerState, request_limit};
use kafko_service::Service;
use kafko_service::connections::Admitted;

/// The host and port clients are told to connect to (Metadata, FindCoordinator).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advertised {
    /// Host name or IP address.
    pub host: String,
    /// Port.
    pub port: u16,
}

/// Why an advertised address was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdvertisedError {
    /// No `:port` part.
    #[error("'{0}': expected host:port")]
    NoPort(String),
    /// The port is not a number from 0 to 65535.
    #[error("'{0}': the port is not a number 0-65535")]
    BadPort(String),
    /// Nothing before the port.
    #[error("'{0}': no host")]
    NoHost(String),
}

impl Advertised {
    /// Parses `host:port` (an IPv6 address in brackets).
    ///
    /// # Errors
    /// [`AdvertisedError`]: what is wrong with `addr`.
    pub fn parse(addr: &str) -> Result<Self, AdvertisedError> {
        let (host, port) = addr
            .rsplit_once(':')
            .ok_or_else(|| AdvertisedError::NoPort(addr.to_owned()))?;
        let port = port
            .parse()
            .map_err(|_| AdvertisedError::BadPort(addr.to_owned()))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(AdvertisedError::NoHost(addr.to_owned()));
        }
        Ok(Advertised {
            host: host.to_owned(),
            port,
        })
    }
}

/// Serves Kafka clients on `listener` until the server shuts down.
pub async fn serve(listener: TcpListener, advertised: Advertised, state: Service) {
    let broker = Arc::new(ListenerState::new(state.clone(), advertised));
    let mut backoff = kafko_service::connections::AcceptBackoff::default();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            () = state.shutdown_requested() => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => {
                backoff.succeeded();
                stream
            }
            Err(e) => {
                // Out of descriptors, most likely: the HTTP listener's backoff.
                state.registry.accept_failed(&mut backoff, &e).await;
                continue;
            }
        };
        let Some(admitted) = state.registry.admit() else {
            tracing::debug!(
                "kafka listener: every connection is busy at the cap; closing a new one"
            );
            drop(stream);
            continue;
        };
        let broker = Arc::clone(&broker);
        tokio::spawn(async move { connection(stream, admitted, &broker).await });
    }
    tracing::info!("kafka listener stopped");
}

async fn connection(mut stream: TcpStream, mut admitted: Admitted, broker: &ListenerState) {
    let _ = stream.set_nodelay(true);
    let config = &broker.service.config;
    let limit = config.max_body_bytes.max(1024 * 1024);
    let peer = stream
        .peer_addr()
        .map_or_else(|_| String::new(), |a| format!("/{}", a.ip()));
    let mut session = Session::new(config.auth_token.is_some(), peer);
    loop {
        // Before authentication a frame is small (SaslHandshake, SaslAuthenticate):
        // an unauthenticated client cannot make the server buffer a large one.
        let limit = if session.auth_required && !session.authenticated {
            config.sasl_max_receive_bytes
        } else {
            limit
        };
        let read = tokio::select! {
            r = frame::read_frame(&mut stream, limit, &broker.requests) => r,
            // A timeout, room for a newcomer, or shutdown.
            () = admitted.close_requested() => return,
        };
        let (body, room) = match read {
            Ok(read) => read,
            Err(FrameError::Closed) => return,
            Err(e) => {
                tracing::debug!(error = %e, "kafka connection closed");
                return;
            }
        };
        let _busy = admitted.busy();
        let limits = request_limit::of(config, &body);
        let was_authenticated = session.authenticated;
        // Not cut short by shutdown: a produce is answered once appended (the log drains
        // appends handed to it), and a waiting fetch answers as shutdown begins. But a
        // waiting request whose client closed its socket, or any request past its time
        // limit, is dropped (the group forgets a join left waiting as it does a vanished
        // member) and frees the slot.
        let outcome = tokio::select! {
            outcome = dispatch::handle(broker, &mut session, body) => outcome,
            () = request_limit::peer_closed(&stream), if limits.waits => {
                tracing::debug!("kafka connection closed by the client during a request");
                return;
            }
            () = tokio::time::sleep(limits.time) => {
                tracing::debug!(limit = ?limits.time, "kafka request past its time limit; closing");
                return;
            }
        };
        // The request is handled: its frame's room goes back to the pool.
        drop(room);
        if session.authenticated && !was_authenticated {
            admitted.authenticated();
        }
        match outcome {
            Outcome::Answer(frame) => {
                if let Err(e) = frame::write_frame(
                    &mut stream,
                    std::slice::from_ref(&frame),
                    config.request_timeout,
                )
                .await
                {
                    tracing::debug!(error = %e, "kafka connection: write failed");
                    return;
                }
            }
            Outcome::Held(frame, room) => {
                let written =
                    frame::write_frame(&mut stream, frame.parts(), config.request_timeout).await;
                drop(room);
                if let Err(e) = written {
                    tracing::debug!(error = %e, "kafka connection: write failed");
                    return;
                }
            }
            Outcome::Silent => {}
            Outcome::AnswerAndClose(frame) => {
                // A failed authentication: answered late, as Kafka does, so that guessing
                // passwords is slow (one try per connection, and the connection cap).
                tokio::time::sleep(config.failed_auth_delay).await;
                let _ = frame::write_frame(
                    &mut stream,
                    std::slice::from_ref(&frame),
                    config.request_timeout,
                )
                .await;
                return;
            }
            Outcome::Close(why) => {
                tracing::debug!(reason = %why, "kafka connection closed");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advertised_addresses_parse_with_their_errors() {
        let ok = |host: &str, port| {
            Ok(Advertised {
                host: host.to_owned(),
                port,
            })
        };
        assert_eq!(
            Advertised::parse("kafko.example:9092"),
            ok("kafko.example", 9092)
        );
        assert_eq!(Advertised::parse("[::1]:9092"), ok("::1", 9092));
        assert!(matches!(
            Advertised::parse("kafko"),
            Err(AdvertisedError::NoPort(_))
        ));
        assert!(matches!(
            Advertised::parse("h:70000"),
            Err(AdvertisedError::BadPort(_))
        ));
        assert!(matches!(
            Advertised::parse(":9092"),
            Err(AdvertisedError::NoHost(_))
        ));
    }
}
