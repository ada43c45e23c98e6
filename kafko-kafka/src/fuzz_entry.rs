//! The entries the fuzz target and the mutation tests drive: a request frame decoded as
//! the listener decodes it (`decode_request`), and handled whole by a broker on a small
//! log (`RequestTarget`).

use bytes::Bytes;
use kafka_protocol::messages::ApiKey;

use crate::ListenerState;
use crate::apis::{self, Request};
use crate::dispatch::{Outcome, Session, handle, parse_header};
use crate::guard;

/// Decodes one request frame body (after its size prefix) as the listener does, without
/// serving it: the header, the version check against every range this broker can
/// advertise, the array guard, the codec, and a produce's record batches. For the fuzz
/// target and the mutation test: whatever the bytes, an `Err` or `Ok`, never a panic
/// or an allocation the bytes do not justify.
///
/// # Errors
/// Why the listener would close the connection (or refuse the batches).
pub fn decode_request(frame: &[u8]) -> Result<(), String> {
    let mut body = Bytes::copy_from_slice(frame);
    let header = parse_header(&mut body)?;
    let key = ApiKey::try_from(header.api_key)
        .map_err(|()| format!("unknown API key {}", header.api_key))?;
    let version = header.version;
    let api = apis::find(key)
        .filter(|api| api.versions().contains(&version))
        .ok_or_else(|| format!("{key:?} v{version} is not supported"))?;
    guard::check(
        api,
        version,
        &body,
        kafko_service::config::DEFAULT_MAX_TAGGED_FIELDS,
    )?;
    if let Request::Produce(request) = apis::decode(key, version, &mut body)? {
        let mut budget = kafko_core::BatchBudget {
            inflate: 16 << 20,
            records: 1_000_000,
            max_record_bytes: 1 << 20,
        };
        for topic in request.topic_data {
            for partition in topic.partition_data {
                if let Some(records) = partition.records {
                    kafko_core::ProducedBatch::check(records, &mut budget)
                        .map_err(|e| e.to_string())?;
                }
            }
        }
    }
    Ok(())
}

/// A broker on a small log in a directory of the caller's, which handles request
/// frames whole, as a connection does (decoded, then served, the answer encoded): for
/// the fuzz target and the mutation test. Its limits are small (1 MiB bodies, 4 topics,
/// 8 partitions, 8 groups, 64 KiB fetches, a 16 MiB answer budget; auto-created
/// topics keep 1 MiB a partition, checked every second), and a request not answered
/// within 200 ms (a JoinGroup waiting for members) is dropped, so what one request may
/// hold is bounded whatever its bytes.
pub struct RequestTarget {
    broker: ListenerState,
    runtime: tokio::runtime::Runtime,
}

impl RequestTarget {
    /// Opens (or creates) the log in `dir`.
    ///
    /// # Errors
    /// The runtime or the log could not start.
    pub fn open(dir: &std::path::Path) -> Result<Self, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let kafko = runtime
            .block_on(
                kafko_core::Kafko::builder(dir)
                    .max_topics(Some(4))
                    .max_partitions(Some(8))
                    .max_groups(Some(8))
                    .retention_check_interval(std::time::Duration::from_secs(1))
                    .open(),
            )
            .map_err(|e| e.to_string())?;
        let topics = kafko_core::TopicConfig {
            partitions: 2,
            retention_bytes: Some(1 << 20),
            segment_bytes: 256 << 10,
            ..kafko_core::TopicConfig::default()
        };
        let config = kafko_service::ServerConfig {
            max_body_bytes: 1 << 20,
            max_records_per_request: 10_000,
            max_records_per_fetch: 1_000,
            max_fetch_bytes: 64 << 10,
            max_wait: std::time::Duration::from_millis(10),
            max_answer_buffer_bytes: 16 << 20,
            auto_create: kafko_service::AutoCreate::Enabled(topics),
            ..kafko_service::ServerConfig::default()
        };
        let broker = ListenerState::new(
            kafko_service::Service::new(kafko, config),
            crate::Advertised {
                host: "localhost".into(),
                port: 9092,
            },
        );
        Ok(RequestTarget { broker, runtime })
    }

    /// Handles one request frame body (after its size prefix): the answer's size (0 for
    /// none, or none in time), or why the connection would close.
    ///
    /// # Errors
    /// Why a connection sending these bytes would be closed.
    pub fn handle(&self, frame: &[u8]) -> Result<usize, String> {
        let mut session = Session::new(false, "fuzz:1".into());
        let body = Bytes::copy_from_slice(frame);
        let outcome = self.runtime.block_on(async {
            tokio::time::timeout(
                std::time::Duration::from_millis(200),
                handle(&self.broker, &mut session, body),
            )
            .await
        });
        match outcome {
            Err(_) | Ok(Outcome::Silent) => Ok(0),
            Ok(Outcome::Answer(frame) | Outcome::AnswerAndClose(frame)) => Ok(frame.len()),
            Ok(Outcome::Held(frame, _)) => Ok(frame.len()),
            Ok(Outcome::Close(why)) => Err(why),
        }
    }
}

impl Drop for RequestTarget {
    fn drop(&mut self) {
        let _ = self.runtime.block_on(self.broker.service.kafko.shutdown());
    }
}

#[cfg(test)]
#[path = "fuzz_entry_tests.rs"]
mod tests;
