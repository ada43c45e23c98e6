//! One request: its header (API key, version, correlation id, client id, and tagged
//! fields from the flexible versions on), the version check against what this broker
//! advertises, SASL gating, the body decoded by the message codec (bytes after the body
//! are ignored: librdkafka's Metadata v12 carries some), the API family's handler, and
//! the answer encoded with its header.
//!
//! An unsupported ApiVersions version is answered with error 35 in the v0 layout,
//! listing the supported ranges, so the client retries with one of them. Any other
//! unsupported API or version, or bytes that are no request, close the connection, as
//! a Kafka broker does.

use bytes::{Buf, BufMut, Bytes};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, CreateTopicsRequest, DeleteTopicsRequest,
    DescribeGroupsRequest, FetchRequest, FindCoordinatorRequest, HeartbeatRequest,
    InitProducerIdRequest, JoinGroupRequest, LeaveGroupRequest, ListGroupsRequest,
    ListOffsetsRequest, MetadataRequest, OffsetCommitRequest, OffsetFetchRequest, ProduceRequest,
    SaslAuthenticateRequest, SaslHandshakeRequest, SyncGroupRequest,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion};

use super::{
    Broker, admin, errors, fetch, frame, groups, guard, idempotence, metadata, offsets, produce,
    sasl,
};
use crate::answer_budget::Reservation;

/// The APIs and versions this broker serves, as ApiVersions advertises them.
const SUPPORTED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 9),
    (ApiKey::Fetch, 4, 12),
    (ApiKey::ListOffsets, 1, 7),
    (ApiKey::Metadata, 1, 12),
    (ApiKey::OffsetCommit, 2, 8),
    (ApiKey::OffsetFetch, 1, 7),
    (ApiKey::FindCoordinator, 0, 3),
    (ApiKey::JoinGroup, 2, 7),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 4),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::DescribeGroups, 0, 5),
    (ApiKey::ListGroups, 0, 4),
    (ApiKey::ApiVersions, 0, 3),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::InitProducerId, 0, 4),
];

/// Served, and advertised, only when the server requires authentication.
const SASL: &[(ApiKey, i16, i16)] = &[
    (ApiKey::SaslHandshake, 1, 1),
    (ApiKey::SaslAuthenticate, 0, 2),
];

/// A connection's state between requests.
#[derive(Debug)]
pub(crate) struct Session {
    /// Whether the server requires SASL/PLAIN before any other request.
    pub(crate) auth_required: bool,
    /// A SaslHandshake chose PLAIN.
    pub(crate) handshake: bool,
    /// A SaslAuthenticate succeeded.
    pub(crate) authenticated: bool,
    /// The client's address, as group descriptions show it.
    pub(crate) peer: String,
}

impl Session {
    pub(crate) fn new(auth_required: bool, peer: String) -> Self {
        Session {
            auth_required,
            handshake: false,
            authenticated: false,
            peer,
        }
    }
}

/// What the connection does after a request.
pub(crate) enum Outcome {
    /// Send this frame.
    Answer(Bytes),
    /// Send this frame, holding its room in the answer budget until it is written.
    Held(Bytes, Reservation),
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

fn supported(session: &Session) -> impl Iterator<Item = &'static (ApiKey, i16, i16)> {
    let sasl: &'static [(ApiKey, i16, i16)] = if session.auth_required { SASL } else { &[] };
    SUPPORTED.iter().chain(sasl.iter())
}

fn decode<T: Decodable>(body: &mut Bytes, version: i16) -> Result<T, String> {
    T::decode(body, version).map_err(|e| format!("undecodable request body: {e}"))
}

fn encode<T: Encodable + HeaderVersion>(
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
pub(crate) async fn handle(broker: &Broker, session: &mut Session, mut body: Bytes) -> Outcome {
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
fn api_versions(session: &Session, error_code: i16) -> ApiVersionsResponse {
    let mut response = ApiVersionsResponse::default();
    response.error_code = error_code;
    response.api_keys = supported(session)
        .map(|(key, min, max)| {
            let mut v = ApiVersion::default();
            v.api_key = *key as i16;
            v.min_version = *min;
            v.max_version = *max;
            v
        })
        .collect();
    response
}

async fn route(
    broker: &Broker,
    session: &mut Session,
    header: &Header,
    mut body: Bytes,
) -> Result<Outcome, String> {
    let Ok(key) = ApiKey::try_from(header.api_key) else {
        return Err(format!("unknown API key {}", header.api_key));
    };
    let version = header.version;
    let correlation = header.correlation_id;
    let in_range =
        supported(session).any(|(k, min, max)| *k == key && (*min..=*max).contains(&version));
    if key == ApiKey::ApiVersions && !in_range {
        // KIP-511: the error answer is in the v0 layout whatever was asked.
        let response = api_versions(session, errors::UNSUPPORTED_VERSION);
        return Ok(Outcome::Answer(encode(correlation, 0, &response)?));
    }
    if !in_range {
        return Err(format!("{key:?} v{version} is not supported"));
    }
    // Before the codec reserves room for any array it declares.
    guard::check(key, version, &body, broker.state.config.max_tagged_fields)?;
    if key == ApiKey::ApiVersions {
        let _request: ApiVersionsRequest = decode(&mut body, version)?;
        let response = api_versions(session, errors::NONE);
        return Ok(Outcome::Answer(encode(correlation, version, &response)?));
    }
    if session.auth_required && !session.authenticated {
        match key {
            ApiKey::SaslHandshake => {
                let request: SaslHandshakeRequest = decode(&mut body, version)?;
                let response = sasl::handshake(session, &request);
                return Ok(Outcome::Answer(encode(correlation, version, &response)?));
            }
            ApiKey::SaslAuthenticate => {
                let request: SaslAuthenticateRequest = decode(&mut body, version)?;
                let (response, ok) = sasl::authenticate(broker, session, &request);
                let frame = encode(correlation, version, &response)?;
                return Ok(if ok {
                    Outcome::Answer(frame)
                } else {
                    Outcome::AnswerAndClose(frame)
                });
            }
            _ => return Err(format!("{key:?} before SASL authentication")),
        }
    }
    macro_rules! call {
        ($request:ty, $handler:expr) => {{
            let request: $request = decode(&mut body, version)?;
            let response = $handler(broker, request, version).await;
            Outcome::Answer(encode(correlation, version, &response)?)
        }};
    }
    macro_rules! call_sync {
        ($request:ty, $handler:expr) => {{
            let request: $request = decode(&mut body, version)?;
            let response = $handler(broker, request, version);
            Outcome::Answer(encode(correlation, version, &response)?)
        }};
    }
    Ok(match key {
        ApiKey::Produce => {
            let request: ProduceRequest = decode(&mut body, version)?;
            match produce::handle(broker, request, version).await {
                produce::Produced::Answer(response) => {
                    Outcome::Answer(encode(correlation, version, &response)?)
                }
                produce::Produced::Silent => Outcome::Silent,
                produce::Produced::SilentFailure => {
                    Outcome::Close("an acks=0 produce was refused".into())
                }
            }
        }
        ApiKey::Fetch => {
            let request: FetchRequest = decode(&mut body, version)?;
            let (frame, room) = fetch::answer(broker, request, version, |response| {
                encode(correlation, version, response)
            })
            .await?;
            match room {
                Some(room) => Outcome::Held(frame, room),
                None => Outcome::Answer(frame),
            }
        }
        ApiKey::ListOffsets => call_sync!(ListOffsetsRequest, offsets::handle),
        ApiKey::Metadata => call!(MetadataRequest, metadata::handle),
        ApiKey::FindCoordinator => call_sync!(FindCoordinatorRequest, metadata::find_coordinator),
        ApiKey::CreateTopics => call!(CreateTopicsRequest, admin::create_topics),
        ApiKey::DeleteTopics => call!(DeleteTopicsRequest, admin::delete_topics),
        ApiKey::InitProducerId => call_sync!(InitProducerIdRequest, idempotence::init_producer_id),
        ApiKey::JoinGroup => {
            let request: JoinGroupRequest = decode(&mut body, version)?;
            let client = groups::Client {
                id: &header.client_id,
                host: &session.peer,
            };
            let response = groups::join_group(broker, &client, request, version).await;
            Outcome::Answer(encode(correlation, version, &response)?)
        }
        ApiKey::SyncGroup => call!(SyncGroupRequest, groups::sync_group),
        ApiKey::Heartbeat => call_sync!(HeartbeatRequest, groups::heartbeat),
        ApiKey::LeaveGroup => call_sync!(LeaveGroupRequest, groups::leave_group),
        ApiKey::OffsetCommit => call!(OffsetCommitRequest, groups::offset_commit),
        ApiKey::OffsetFetch => call_sync!(OffsetFetchRequest, groups::offset_fetch),
        ApiKey::DescribeGroups => call_sync!(DescribeGroupsRequest, groups::describe_groups),
        ApiKey::ListGroups => call_sync!(ListGroupsRequest, groups::list_groups),
        ApiKey::SaslHandshake => {
            let request: SaslHandshakeRequest = decode(&mut body, version)?;
            let mut response = sasl::handshake(session, &request);
            if session.authenticated {
                response.error_code = errors::ILLEGAL_SASL_STATE;
            }
            Outcome::Answer(encode(correlation, version, &response)?)
        }
        other => return Err(format!("{other:?} is not served")),
    })
}

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
    let known = SUPPORTED
        .iter()
        .chain(SASL)
        .any(|(k, min, max)| *k == key && (*min..=*max).contains(&version));
    if !known {
        return Err(format!("{key:?} v{version} is not supported"));
    }
    guard::check(
        key,
        version,
        &body,
        crate::config::DEFAULT_MAX_TAGGED_FIELDS,
    )?;
    macro_rules! just {
        ($request:ty) => {{
            let _: $request = decode(&mut body, version)?;
        }};
    }
    match key {
        ApiKey::Produce => {
            let request: ProduceRequest = decode(&mut body, version)?;
            let mut budget = super::records::Budget {
                inflate: 16 << 20,
                records: 1_000_000,
                max_record_bytes: 1 << 20,
            };
            for topic in request.topic_data {
                for partition in topic.partition_data {
                    if let Some(records) = partition.records {
                        let batches = super::records::decode_batches(records, &mut budget)
                            .map_err(|e| e.to_string())?;
                        for record in batches.iter().flat_map(|b| b.records()) {
                            record.map_err(|e| e.to_string())?;
                        }
                    }
                }
            }
        }
        ApiKey::Fetch => just!(FetchRequest),
        ApiKey::ListOffsets => just!(ListOffsetsRequest),
        ApiKey::Metadata => just!(MetadataRequest),
        ApiKey::FindCoordinator => just!(FindCoordinatorRequest),
        ApiKey::CreateTopics => just!(CreateTopicsRequest),
        ApiKey::DeleteTopics => just!(DeleteTopicsRequest),
        ApiKey::InitProducerId => just!(InitProducerIdRequest),
        ApiKey::JoinGroup => just!(JoinGroupRequest),
        ApiKey::SyncGroup => just!(SyncGroupRequest),
        ApiKey::Heartbeat => just!(HeartbeatRequest),
        ApiKey::LeaveGroup => just!(LeaveGroupRequest),
        ApiKey::OffsetCommit => just!(OffsetCommitRequest),
        ApiKey::OffsetFetch => just!(OffsetFetchRequest),
        ApiKey::DescribeGroups => just!(DescribeGroupsRequest),
        ApiKey::ListGroups => just!(ListGroupsRequest),
        ApiKey::ApiVersions => just!(ApiVersionsRequest),
        ApiKey::SaslHandshake => just!(SaslHandshakeRequest),
        ApiKey::SaslAuthenticate => just!(SaslAuthenticateRequest),
        other => return Err(format!("{other:?} is not served")),
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
    broker: Broker,
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
        let config = crate::ServerConfig {
            max_body_bytes: 1 << 20,
            max_records_per_request: 10_000,
            max_records_per_fetch: 1_000,
            max_fetch_bytes: 64 << 10,
            max_wait: std::time::Duration::from_millis(10),
            max_answer_buffer_bytes: 16 << 20,
            auto_create: crate::AutoCreate::Enabled(topics),
            ..crate::ServerConfig::default()
        };
        let broker = Broker::new(
            crate::AppState::new(kafko, config),
            super::Advertised {
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
            Ok(
                Outcome::Answer(frame) | Outcome::Held(frame, _) | Outcome::AnswerAndClose(frame),
            ) => Ok(frame.len()),
            Ok(Outcome::Close(why)) => Err(why),
        }
    }
}

impl Drop for RequestTarget {
    fn drop(&mut self) {
        let _ = self.runtime.block_on(self.broker.state.kafko.shutdown());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real frame body of every served API at every version (default field values,
    /// plus a produce carrying a real batch), for the mutation test.
    fn real_requests() -> Vec<Vec<u8>> {
        use kafka_protocol::messages::RequestHeader;
        use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
        use kafka_protocol::protocol::Request;
        fn frame<R: Request + Default>(request: R, version: i16) -> Vec<u8> {
            let mut out = bytes::BytesMut::new();
            let header = RequestHeader::default()
                .with_request_api_key(R::KEY)
                .with_request_api_version(version)
                .with_correlation_id(7);
            header
                .encode(&mut out, R::header_version(version))
                .expect("a header encodes");
            request
                .encode(&mut out, version)
                .expect("a request encodes");
            out.to_vec()
        }
        let record = kafko_core::Record {
            offset: 0,
            partition: 0,
            timestamp: 1_700_000_000_000,
            key: Some(Bytes::from_static(b"k")),
            value: Some(Bytes::from_static(b"value")),
            headers: vec![kafko_core::Header::new("h", Bytes::from_static(b"1"))],
        };
        let mut batch = bytes::BytesMut::new();
        super::super::records::encode_batch(&[record], &mut batch, None);
        let produce = ProduceRequest::default().with_acks(1).with_topic_data(vec![
            TopicProduceData::default().with_partition_data(vec![
                PartitionProduceData::default().with_records(Some(batch.freeze())),
            ]),
        ]);
        let mut out = Vec::new();
        for &(key, min, max) in SUPPORTED.iter().chain(SASL) {
            for v in min..=max {
                out.push(match key {
                    ApiKey::Produce => frame(produce.clone(), v),
                    ApiKey::Fetch => frame(FetchRequest::default(), v),
                    ApiKey::ListOffsets => frame(ListOffsetsRequest::default(), v),
                    ApiKey::Metadata => frame(MetadataRequest::default(), v),
                    ApiKey::FindCoordinator => frame(FindCoordinatorRequest::default(), v),
                    ApiKey::CreateTopics => frame(CreateTopicsRequest::default(), v),
                    ApiKey::DeleteTopics => frame(DeleteTopicsRequest::default(), v),
                    ApiKey::InitProducerId => frame(InitProducerIdRequest::default(), v),
                    ApiKey::JoinGroup => frame(JoinGroupRequest::default(), v),
                    ApiKey::SyncGroup => frame(SyncGroupRequest::default(), v),
                    ApiKey::Heartbeat => frame(HeartbeatRequest::default(), v),
                    ApiKey::LeaveGroup => frame(LeaveGroupRequest::default(), v),
                    ApiKey::OffsetCommit => frame(OffsetCommitRequest::default(), v),
                    ApiKey::OffsetFetch => frame(OffsetFetchRequest::default(), v),
                    ApiKey::DescribeGroups => frame(DescribeGroupsRequest::default(), v),
                    ApiKey::ListGroups => frame(ListGroupsRequest::default(), v),
                    ApiKey::ApiVersions => frame(ApiVersionsRequest::default(), v),
                    ApiKey::SaslHandshake => frame(SaslHandshakeRequest::default(), v),
                    _ => frame(SaslAuthenticateRequest::default(), v),
                });
            }
        }
        out
    }

    #[test]
    #[allow(clippy::cast_possible_truncation)] // random indexes and bytes
    fn the_request_decoder_survives_mutated_real_requests() {
        let seeds = real_requests();
        for seed in &seeds {
            assert_eq!(decode_request(seed), Ok(()), "a real request decodes");
        }
        // splitmix64: seeded, so a failure replays.
        let mut state: u64 = 0x6b61_666b_6f00_0001;
        let mut next = move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        let mut refused = 0;
        for _ in 0..20_000u32 {
            let mut bytes = seeds[(next() as usize) % seeds.len()].clone();
            for _ in 0..1 + next() % 4 {
                let at = (next() as usize) % bytes.len().max(1);
                match next() % 5 {
                    0 if !bytes.is_empty() => bytes[at] ^= 1 << (next() % 8),
                    1 if !bytes.is_empty() => bytes[at] = 0xff,
                    2 => bytes.truncate(at),
                    3 => bytes
                        .splice(at..at, [0x7f, 0xff, 0xff, 0xff])
                        .for_each(drop),
                    _ => bytes.extend((0..next() % 8).map(|_| next() as u8)),
                }
            }
            if decode_request(&bytes).is_err() {
                refused += 1;
            }
        }
        assert!(
            refused > 1000,
            "the mutations reach the error paths: {refused}"
        );
    }

    /// The same mutations, handled whole by a broker on a small log: decoded, served
    /// and answered, or the connection closed; never a panic.
    #[test]
    #[allow(clippy::cast_possible_truncation)] // random indexes and bytes
    fn the_broker_survives_mutated_real_requests_handled_whole() {
        use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
        // The fuzz target keeps one in a static.
        fn shared<T: Send + Sync>(_: &T) {}
        let dir = tempfile::tempdir().unwrap();
        let target = RequestTarget::open(dir.path()).unwrap();
        shared(&target);
        // A topic to work on, created by a Metadata v1 (auto-creation).
        let mut metadata = bytes::BytesMut::new();
        kafka_protocol::messages::RequestHeader::default()
            .with_request_api_key(ApiKey::Metadata as i16)
            .with_request_api_version(1)
            .encode(&mut metadata, 1)
            .unwrap();
        MetadataRequest::default()
            .with_topics(Some(vec![MetadataRequestTopic::default().with_name(Some(
                kafka_protocol::messages::TopicName(
                    kafka_protocol::protocol::StrBytes::from_static_str("t"),
                ),
            ))]))
            .encode(&mut metadata, 1)
            .unwrap();
        let mut seeds = real_requests();
        seeds.push(metadata.to_vec());
        // Every produce seed again, to the topic "t".
        let named: Vec<Vec<u8>> = seeds
            .iter()
            .filter(|f| f.starts_with(&[0, 0]))
            .filter_map(|f| {
                let mut body = Bytes::copy_from_slice(f);
                let header = parse_header(&mut body).ok()?;
                let mut request: ProduceRequest = decode(&mut body, header.version).ok()?;
                for topic in &mut request.topic_data {
                    topic.name = kafka_protocol::messages::TopicName(
                        kafka_protocol::protocol::StrBytes::from_static_str("t"),
                    );
                }
                let mut out = bytes::BytesMut::new();
                kafka_protocol::messages::RequestHeader::default()
                    .with_request_api_key(0)
                    .with_request_api_version(header.version)
                    .encode(
                        &mut out,
                        ApiKey::Produce.request_header_version(header.version),
                    )
                    .ok()?;
                request.encode(&mut out, header.version).ok()?;
                Some(out.to_vec())
            })
            .collect();
        assert_eq!(named.len(), 7, "Produce v3 to v9");
        seeds.extend(named);
        for seed in &seeds {
            let _ = target.handle(seed);
        }
        let mut state: u64 = 0x6b61_666b_6f00_0002;
        let mut next = move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        let (mut answered, mut closed) = (0, 0);
        for _ in 0..3_000u32 {
            let mut bytes = seeds[(next() as usize) % seeds.len()].clone();
            for _ in 0..next() % 3 {
                let at = (next() as usize) % bytes.len().max(1);
                match next() % 4 {
                    0 if !bytes.is_empty() => bytes[at] ^= 1 << (next() % 8),
                    1 if !bytes.is_empty() => bytes[at] = 0xff,
                    2 => bytes.truncate(at),
                    _ => bytes.extend((0..next() % 8).map(|_| next() as u8)),
                }
            }
            match target.handle(&bytes) {
                Ok(_) => answered += 1,
                Err(_) => closed += 1,
            }
        }
        let t = target.broker.state.kafko.topic("t").unwrap();
        let stored: u64 = (0..t.partitions())
            .map(|p| t.partition(p).unwrap().offsets().unwrap().high_watermark)
            .sum();
        eprintln!("{answered} answered, {closed} closed, {stored} records stored");
        assert!(stored > 0, "produces reached the log");
        assert!(
            answered > 600 && closed > 200,
            "{answered} answered, {closed} closed"
        );
    }

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
