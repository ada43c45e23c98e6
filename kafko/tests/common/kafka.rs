//! A small Kafka-protocol client for the black-box tests of the Kafka listener: requests
//! encoded by the `kafka-protocol` crate over one connection, record batches (v2, CRC-32C,
//! optional gzip when built, lz4 or zstd when read) built and read here.

use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    CreateTopicsRequest, FetchRequest, ProduceRequest, RequestHeader, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::Server;

pub struct Kafka {
    pub stream: TcpStream,
    pub next: i32,
}

impl Kafka {
    pub async fn connect(server: &Server) -> Kafka {
        let addr = server.kafka.as_deref().expect("started with --kafka-bind");
        Kafka {
            stream: TcpStream::connect(addr).await.unwrap(),
            next: 1,
        }
    }

    /// Sends a request; returns its correlation id.
    pub async fn send<R: Request>(&mut self, request: &R, version: i16, trailing: &[u8]) -> i32 {
        let correlation = self.next;
        self.next += 1;
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(correlation)
            .with_client_id(Some(StrBytes::from_static_str("kafko-test")));
        let mut body = BytesMut::new();
        header
            .encode(&mut body, R::header_version(version))
            .unwrap();
        request.encode(&mut body, version).unwrap();
        body.put_slice(trailing);
        self.write_frame(&body).await;
        correlation
    }

    pub async fn write_frame(&mut self, body: &[u8]) {
        let mut frame = Vec::with_capacity(body.len() + 4);
        frame.extend_from_slice(&i32::try_from(body.len()).unwrap().to_be_bytes());
        frame.extend_from_slice(body);
        self.stream.write_all(&frame).await.unwrap();
    }

    pub async fn read_frame(&mut self) -> Bytes {
        let mut size = [0u8; 4];
        tokio::time::timeout(Duration::from_secs(30), self.stream.read_exact(&mut size))
            .await
            .expect("an answer in time")
            .expect("an answer, not a close");
        let mut body = vec![0u8; usize::try_from(i32::from_be_bytes(size)).unwrap()];
        self.stream.read_exact(&mut body).await.unwrap();
        Bytes::from(body)
    }

    /// Reads the next answer, which must be to a request of type `R` at `version`.
    pub async fn recv<R: Request>(&mut self, version: i16) -> (i32, R::Response) {
        let mut body = self.read_frame().await;
        let header =
            ResponseHeader::decode(&mut body, R::Response::header_version(version)).unwrap();
        let response = R::Response::decode(&mut body, version).unwrap();
        assert!(body.is_empty(), "{} bytes after the answer", body.len());
        (header.correlation_id, response)
    }

    pub async fn call<R: Request>(&mut self, request: &R, version: i16) -> R::Response {
        let sent = self.send(request, version, &[]).await;
        let (correlation, response) = self.recv::<R>(version).await;
        assert_eq!(correlation, sent);
        response
    }

    /// Like [`call`](Self::call), but `None` when the connection fails on the way (the
    /// server was killed): for clients that go on until the server goes away.
    pub async fn try_call<R: Request>(&mut self, request: &R, version: i16) -> Option<R::Response> {
        let correlation = self.next;
        self.next += 1;
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(correlation);
        let mut body = BytesMut::new();
        header.encode(&mut body, R::header_version(version)).ok()?;
        request.encode(&mut body, version).ok()?;
        let mut frame = Vec::with_capacity(body.len() + 4);
        frame.extend_from_slice(&i32::try_from(body.len()).ok()?.to_be_bytes());
        frame.extend_from_slice(&body);
        self.stream.write_all(&frame).await.ok()?;
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size).await.ok()?;
        let mut answer = vec![0u8; usize::try_from(i32::from_be_bytes(size)).ok()?];
        self.stream.read_exact(&mut answer).await.ok()?;
        let mut answer = Bytes::from(answer);
        let header =
            ResponseHeader::decode(&mut answer, R::Response::header_version(version)).ok()?;
        assert_eq!(header.correlation_id, correlation);
        R::Response::decode(&mut answer, version).ok()
    }

    /// Whether the server closed the connection (EOF) within the time limit.
    pub async fn closed_by_server(&mut self) -> bool {
        let mut buf = [0u8; 64];
        loop {
            match tokio::time::timeout(Duration::from_secs(20), self.stream.read(&mut buf)).await {
                Err(_) => return false,
                Ok(Ok(0) | Err(_)) => return true,
                Ok(Ok(_)) => {}
            }
        }
    }
}

/// Kafka error codes the tests expect, by Kafka's names.
pub mod codes {
    pub const OFFSET_METADATA_TOO_LARGE: i16 = 12;
    pub const INVALID_TOPIC_EXCEPTION: i16 = 17;
    pub const ILLEGAL_GENERATION: i16 = 22;
    pub const UNKNOWN_MEMBER_ID: i16 = 25;
    pub const INVALID_SESSION_TIMEOUT: i16 = 26;
    pub const REBALANCE_IN_PROGRESS: i16 = 27;
    pub const FENCED_INSTANCE_ID: i16 = 82;
    pub const INVALID_CONFIG: i16 = 40;
    pub const INVALID_REQUEST: i16 = 42;
    pub const MEMBER_ID_REQUIRED: i16 = 79;
    pub const GROUP_MAX_SIZE_REACHED: i16 = 81;
}

/// The members of the Kafka (classic) group `group` as `/v1/groups` shows them: a join is
/// among them once the server handled it, while it waits in the rebalance.
pub async fn members(c: &reqwest::Client, s: &Server, group: &str) -> usize {
    let described = super::get_json(c, s, &format!("/v1/groups/{group}")).await;
    described["kafka"]["members"].as_array().map_or(0, Vec::len)
}

/// A protocol string.
pub fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_owned())
}

/// CreateTopics (v7) of one topic with `partitions` partitions and `configs` (a `None`
/// value as a client sends one): its error code.
pub async fn create_topic(
    k: &mut Kafka,
    topic: &str,
    partitions: i32,
    configs: &[(&str, Option<&str>)],
) -> i16 {
    let configs = configs
        .iter()
        .map(|(n, v)| {
            CreatableTopicConfig::default()
                .with_name(s(n))
                .with_value(v.map(s))
        })
        .collect();
    let request = CreateTopicsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![
            CreatableTopic::default()
                .with_name(name(topic))
                .with_num_partitions(partitions)
                .with_replication_factor(-1)
                .with_configs(configs),
        ]);
    k.call(&request, 7).await.topics[0].error_code
}

pub fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_owned()))
}

#[derive(Clone, Default)]
pub struct Rec {
    pub key: Option<&'static [u8]>,
    pub value: Option<&'static [u8]>,
    pub headers: Vec<(&'static str, Option<&'static [u8]>)>,
    pub timestamp: i64,
}

pub fn varlong(out: &mut BytesMut, v: i64) {
    let mut raw = ((v << 1) ^ (v >> 63)) as u64;
    while raw >= 0x80 {
        out.put_u8((raw as u8 & 0x7f) | 0x80);
        raw >>= 7;
    }
    out.put_u8(raw as u8);
}

pub fn put_bytes(out: &mut BytesMut, b: Option<&[u8]>) {
    match b {
        None => varlong(out, -1),
        Some(b) => {
            varlong(out, b.len() as i64);
            out.put_slice(b);
        }
    }
}

/// A producer's batch: `codec` 0 (none) or 1 (gzip); `producer` = (id, epoch, base
/// sequence), or none.
pub fn batch(records: &[Rec], codec: i16, producer: Option<(i64, i16, i32)>) -> Bytes {
    let base_ts = records[0].timestamp;
    let mut area = BytesMut::new();
    for (i, r) in records.iter().enumerate() {
        let mut rec = BytesMut::new();
        rec.put_i8(0);
        varlong(&mut rec, r.timestamp - base_ts);
        varlong(&mut rec, i as i64);
        put_bytes(&mut rec, r.key);
        put_bytes(&mut rec, r.value);
        varlong(&mut rec, r.headers.len() as i64);
        for (k, v) in &r.headers {
            put_bytes(&mut rec, Some(k.as_bytes()));
            put_bytes(&mut rec, *v);
        }
        varlong(&mut area, rec.len() as i64);
        area.put_slice(&rec);
    }
    let area = if codec == 1 {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(&area).unwrap();
        Bytes::from(enc.finish().unwrap())
    } else {
        area.freeze()
    };
    let (pid, epoch, seq) = producer.unwrap_or((-1, -1, -1));
    let mut b = BytesMut::new();
    b.put_i64(0);
    b.put_i32(0);
    b.put_i32(-1);
    b.put_i8(2);
    b.put_u32(0);
    b.put_i16(codec);
    b.put_i32(records.len() as i32 - 1);
    b.put_i64(base_ts);
    b.put_i64(records.iter().map(|r| r.timestamp).max().unwrap());
    b.put_i64(pid);
    b.put_i16(epoch);
    b.put_i32(seq);
    b.put_i32(records.len() as i32);
    b.put_slice(&area);
    let len = (b.len() - 12) as i32;
    b[8..12].copy_from_slice(&len.to_be_bytes());
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b.freeze()
}

/// A record as read back from a fetch.
#[derive(Debug, PartialEq)]
pub struct Got {
    pub offset: i64,
    pub timestamp: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(String, Vec<u8>)>,
}

pub fn get_varlong(b: &mut Bytes) -> i64 {
    let mut raw = 0u64;
    let mut shift = 0;
    loop {
        let byte = b.get_u8();
        raw |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return (raw >> 1) as i64 ^ -((raw & 1) as i64);
        }
        shift += 7;
    }
}

pub fn get_bytes(b: &mut Bytes) -> Option<Vec<u8>> {
    let len = get_varlong(b);
    (len >= 0).then(|| b.split_to(len as usize).to_vec())
}

/// One fetched record batch: its base offset, codec, and records.
pub struct FetchedBatch {
    pub base_offset: i64,
    pub codec: i16,
    pub records: Vec<Got>,
}

/// Decodes fetched batches (as the log stores them, with any of Kafka's codecs),
/// checking each CRC.
pub fn fetched_batches(mut data: Bytes) -> Vec<FetchedBatch> {
    let mut out = Vec::new();
    while !data.is_empty() {
        let base = data.get_i64();
        let len = data.get_i32() as usize;
        let mut batch = data.split_to(len);
        let crc_covered = batch.slice(9..);
        batch.advance(5);
        assert_eq!(batch.get_u32(), crc32c::crc32c(&crc_covered), "batch CRC");
        let codec = batch.get_i16() & 7;
        batch.advance(4);
        let base_ts = batch.get_i64();
        batch.advance(8 + 8 + 2 + 4);
        let count = batch.get_i32();
        let mut area = match codec {
            0 => batch,
            1 => {
                let mut raw = Vec::new();
                std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&batch[..]), &mut raw)
                    .unwrap();
                Bytes::from(raw)
            }
            2 => Bytes::from(snappy_java(&batch)),
            3 => {
                let mut raw = Vec::new();
                std::io::Read::read_to_end(
                    &mut lz4_flex::frame::FrameDecoder::new(&batch[..]),
                    &mut raw,
                )
                .unwrap();
                Bytes::from(raw)
            }
            4 => Bytes::from(zstd::decode_all(&batch[..]).unwrap()),
            other => panic!("codec {other} is not Kafka's"),
        };
        let mut records = Vec::new();
        for _ in 0..count {
            let _len = get_varlong(&mut area);
            area.advance(1);
            let ts = base_ts + get_varlong(&mut area);
            let delta = get_varlong(&mut area);
            let key = get_bytes(&mut area);
            let value = get_bytes(&mut area);
            let n = get_varlong(&mut area);
            let headers = (0..n)
                .map(|_| {
                    let k = String::from_utf8(get_bytes(&mut area).unwrap()).unwrap();
                    (k, get_bytes(&mut area).unwrap_or_default())
                })
                .collect();
            records.push(Got {
                offset: base + delta,
                timestamp: ts,
                key,
                value,
                headers,
            });
        }
        out.push(FetchedBatch {
            base_offset: base,
            codec,
            records,
        });
    }
    out
}

/// A snappy-java framed area (magic, versions, then length-prefixed raw blocks), or a
/// bare snappy block.
fn snappy_java(data: &[u8]) -> Vec<u8> {
    let mut decoder = snap::raw::Decoder::new();
    if !data.starts_with(b"\x82SNAPPY\x00") {
        return decoder.decompress_vec(data).unwrap();
    }
    let mut rest = &data[16..];
    let mut out = Vec::new();
    while !rest.is_empty() {
        let n = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
        out.extend(decoder.decompress_vec(&rest[4..4 + n]).unwrap());
        rest = &rest[4 + n..];
    }
    out
}

/// The records of fetched batches, every one of each batch (a fetch from inside a batch
/// returns the whole batch: see [`from_offset`]).
pub fn read_batches(data: Bytes) -> Vec<Got> {
    fetched_batches(data)
        .into_iter()
        .flat_map(|b| b.records)
        .collect()
}

/// What a client keeps of fetched records: those at or after the offset it fetched.
pub fn from_offset(records: Vec<Got>, offset: i64) -> Vec<Got> {
    records.into_iter().filter(|r| r.offset >= offset).collect()
}

// ---------------------------------------------------------------- requests

/// A Fetch of one partition from `offset`: 50 MiB for the answer, 1 MiB for the partition.
pub fn fetch_request(topic: &str, partition: i32, offset: i64, max_wait_ms: i32) -> FetchRequest {
    FetchRequest::default()
        .with_replica_id((-1).into())
        .with_max_wait_ms(max_wait_ms)
        .with_min_bytes(1)
        .with_max_bytes(50 * 1024 * 1024)
        .with_session_epoch(-1)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(name(topic))
                .with_partitions(vec![
                    FetchPartition::default()
                        .with_partition(partition)
                        .with_fetch_offset(offset)
                        .with_partition_max_bytes(1024 * 1024),
                ]),
        ])
}

pub fn produce_request(topic: &str, partition: i32, records: Bytes, acks: i16) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(name(topic))
                .with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(partition)
                        .with_records(Some(records)),
                ]),
        ])
}

/// Produces one batch at v9; returns (error code, base offset).
pub async fn produce_batch(
    k: &mut Kafka,
    topic: &str,
    partition: i32,
    records: Bytes,
) -> (i16, i64) {
    let r = k
        .call(&produce_request(topic, partition, records, -1), 9)
        .await;
    let p = &r.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

// ---------------------------------------------------------------- attacks

/// The bystander check that follows every attack on the Kafka listener: the process is
/// still alive, and `/healthz` over HTTP and a Kafka Metadata request on a fresh
/// connection are each answered within 2 s.
pub async fn assert_bystanders_served(server: &Server) {
    use kafka_protocol::messages::MetadataRequest;
    let pid = server.pid();
    assert!(
        std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the server process died"
    );
    let health = tokio::time::timeout(
        Duration::from_secs(2),
        super::client().get(server.url("/healthz")).send(),
    )
    .await
    .expect("/healthz answered within 2 s")
    .expect("/healthz answered");
    assert_eq!(health.status(), 200, "/healthz while the attack is over");
    let addr = server.kafka.as_deref().expect("started with --kafka-bind");
    let metadata = tokio::time::timeout(Duration::from_secs(2), async {
        let mut k = Kafka {
            stream: TcpStream::connect(addr).await.expect("a Kafka connection"),
            next: 1,
        };
        k.try_call(&MetadataRequest::default().with_topics(Some(vec![])), 9)
            .await
    })
    .await
    .expect("a Kafka Metadata request answered within 2 s");
    assert!(metadata.is_some(), "a Kafka Metadata request answered");
}

/// A ListOffsets request for one partition at `timestamp` (−2 earliest, −1 latest).
pub fn list_offsets_request(
    topic: &str,
    partition: i32,
    timestamp: i64,
) -> kafka_protocol::messages::ListOffsetsRequest {
    use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    kafka_protocol::messages::ListOffsetsRequest::default()
        .with_replica_id((-1).into())
        .with_topics(vec![
            ListOffsetsTopic::default()
                .with_name(name(topic))
                .with_partitions(vec![
                    ListOffsetsPartition::default()
                        .with_partition_index(partition)
                        .with_timestamp(timestamp),
                ]),
        ])
}

/// A JoinGroup of `member` in `group` offering one protocol (`protocol_type`,
/// `protocol`, `metadata`), with 30 s session and rebalance timeouts.
pub fn join_group_request(
    group: &str,
    member: &str,
    (protocol_type, protocol, metadata): (&str, &str, Bytes),
) -> kafka_protocol::messages::JoinGroupRequest {
    use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
    kafka_protocol::messages::JoinGroupRequest::default()
        .with_group_id(kafka_protocol::messages::GroupId(s(group)))
        .with_session_timeout_ms(30_000)
        .with_rebalance_timeout_ms(30_000)
        .with_member_id(s(member))
        .with_protocol_type(s(protocol_type))
        .with_protocols(vec![
            JoinGroupRequestProtocol::default()
                .with_name(s(protocol))
                .with_metadata(metadata),
        ])
}

/// A new idempotent producer id and epoch from InitProducerId (v4).
pub async fn init_producer_id(k: &mut Kafka) -> (i64, i16) {
    let request = kafka_protocol::messages::InitProducerIdRequest::default()
        .with_transactional_id(None)
        .with_transaction_timeout_ms(60_000);
    let r = k.call(&request, 4).await;
    assert_eq!(r.error_code, 0);
    (r.producer_id.0, r.producer_epoch)
}
