//! The mutation tests of the request decoder and of whole requests, seeded with a
//! real request of every served API at every version, from the table.

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, MetadataRequest, ProduceRequest};
use kafka_protocol::protocol::{Decodable, Encodable};

use crate::apis::{self, APIS};
use crate::dispatch::parse_header;
use crate::{RequestTarget, decode_request};

/// A real frame body of every served API at every version the table serves it
/// (default field values, and a produce carrying a real batch), for the mutation tests.
fn real_requests() -> Vec<Vec<u8>> {
    use kafka_protocol::messages::RequestHeader;
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    let record = kafko_core::Record {
        offset: 0,
        partition: 0,
        timestamp: 1_700_000_000_000,
        key: Some(Bytes::from_static(b"k")),
        value: Some(Bytes::from_static(b"value")),
        headers: vec![kafko_core::Header::new("h", Bytes::from_static(b"1"))],
    };
    let mut batch = bytes::BytesMut::new();
    crate::records::encode_batch(&[record], &mut batch, None);
    let produce = ProduceRequest::default().with_acks(1).with_topic_data(vec![
        TopicProduceData::default().with_partition_data(vec![
            PartitionProduceData::default().with_records(Some(batch.freeze())),
        ]),
    ]);
    let mut out = Vec::new();
    for api in APIS {
        for v in api.decoded() {
            let mut frame = bytes::BytesMut::new();
            RequestHeader::default()
                .with_request_api_key(api.key as i16)
                .with_request_api_version(v)
                .with_correlation_id(7)
                .encode(&mut frame, api.key.request_header_version(v))
                .expect("a header encodes");
            if api.key == ApiKey::Produce {
                produce.encode(&mut frame, v).expect("a produce encodes");
            } else {
                frame.extend_from_slice(&apis::default_body(api.key, v).expect("a body encodes"));
            }
            out.push(frame.to_vec());
        }
    }
    out
}

/// A seeded pseudo-random sequence (splitmix64), so that a failing mutation replays.
fn splitmix64(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed;
    move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[test]
#[allow(clippy::cast_possible_truncation)] // random indexes and bytes
fn the_request_decoder_survives_mutated_real_requests() {
    let seeds = real_requests();
    for seed in &seeds {
        assert_eq!(decode_request(seed), Ok(()), "a real request decodes");
    }
    let mut next = splitmix64(0x6b61_666b_6f00_0001);
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
            let mut request = ProduceRequest::decode(&mut body, header.version).ok()?;
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
    let produce = apis::find(ApiKey::Produce).expect("Produce is served");
    assert_eq!(
        named.len(),
        produce.versions().len(),
        "every Produce version"
    );
    seeds.extend(named);
    for seed in &seeds {
        let _ = target.handle(seed);
    }
    let mut next = splitmix64(0x6b61_666b_6f00_0002);
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
    let t = target.broker.service.kafko.topic("t").unwrap();
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
