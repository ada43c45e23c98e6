//! Refused versions answered in their own layout, so the client says why instead of
//! reconnecting in a loop:
//! - Produce v0–2 and Fetch v0–3 carry the message formats v0 and v1 (before record
//!   batches), which kafko neither reads nor writes, as Kafka 4.0 no longer does. Old
//!   clients (kafka-go, sarama set to an old version) send them; each asked partition
//!   is answered UNSUPPORTED_VERSION. The request is read as the oldest version the
//!   codec knows (the same fields, in the same order, once the missing ones are put
//!   in), after the guard bounded its arrays. A produce with acks=0 expects no answer:
//!   its connection is closed.
//! - EndTxn v5 and TxnOffsetCommit v5 are transactions v2 (KIP-890 part 2: the epoch
//!   bumped at each transaction's end, partitions and groups joining a transaction by
//!   the produce or the commit itself), which kafko's coordinator does not do. Clients
//!   send them only to a cluster whose ApiVersions finalizes the `transaction.version`
//!   feature at 2, which kafko never advertises; one sent anyway is answered
//!   UNSUPPORTED_VERSION (EndTxn as a whole, TxnOffsetCommit per partition).

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{
    ApiKey, EndTxnRequest, EndTxnResponse, FetchRequest, ProduceRequest, ProducerId,
    TxnOffsetCommitRequest, TxnOffsetCommitResponse,
};
use kafka_protocol::protocol::Decodable;

use crate::dispatch::{Header, Outcome, encode};
use crate::{apis, errors, frame, guard};

/// The version of EndTxn and TxnOffsetCommit that means transactions v2.
const TRANSACTIONS_V2: i16 = 5;

/// The answer to a refused version of `key`, when it has one here.
pub(crate) fn answer(
    header: &Header,
    key: ApiKey,
    body: &[u8],
    max_tagged: usize,
) -> Option<Result<Outcome, String>> {
    let version = header.version;
    match key {
        ApiKey::Produce if (0..=2).contains(&version) => Some(produce(header, body, max_tagged)),
        ApiKey::Fetch if (0..=3).contains(&version) => Some(fetch(header, body, max_tagged)),
        ApiKey::EndTxn if version == TRANSACTIONS_V2 => Some(end_txn(header, body, max_tagged)),
        ApiKey::TxnOffsetCommit if version == TRANSACTIONS_V2 => {
            Some(txn_offset_commit(header, body, max_tagged))
        }
        _ => None,
    }
}

/// Reads `body`, rewritten to `key` at `as_version`, with the guard and the codec.
fn read<T: Decodable>(
    key: ApiKey,
    as_version: i16,
    body: BytesMut,
    max_tagged: usize,
) -> Result<T, String> {
    let api = apis::find(key).ok_or_else(|| format!("{key:?} is not served"))?;
    guard::check(api, as_version, &body, max_tagged)?;
    T::decode(&mut body.freeze(), as_version).map_err(|e| format!("undecodable request body: {e}"))
}

fn put_str(out: &mut BytesMut, s: &str) {
    out.put_i16(i16::try_from(s.len()).unwrap_or(i16::MAX));
    out.put_slice(&s.as_bytes()[..s.len().min(i16::MAX as usize)]);
}

fn put_len(out: &mut BytesMut, n: usize) {
    out.put_i32(i32::try_from(n).unwrap_or(i32::MAX));
}

fn sealed(buf: BytesMut) -> Result<Outcome, String> {
    frame::seal(buf)
        .map(Outcome::Answer)
        .map_err(|e| e.to_string())
}

fn produce(header: &Header, body: &[u8], max_tagged: usize) -> Result<Outcome, String> {
    // v3 is v2 after a transactional id: a null one.
    let mut v3 = BytesMut::with_capacity(body.len() + 2);
    v3.put_i16(-1);
    v3.put_slice(body);
    let request: ProduceRequest = read(ApiKey::Produce, 3, v3, max_tagged)?;
    if request.acks == 0 {
        return Err(format!(
            "Produce v{} (message format v0/v1) with acks=0 is not served",
            header.version
        ));
    }
    let mut out = frame::start();
    out.put_i32(header.correlation_id);
    put_len(&mut out, request.topic_data.len());
    for topic in &request.topic_data {
        put_str(&mut out, topic.name.as_str());
        put_len(&mut out, topic.partition_data.len());
        for p in &topic.partition_data {
            out.put_i32(p.index);
            out.put_i16(errors::UNSUPPORTED_VERSION);
            out.put_i64(-1); // base offset
            if header.version >= 2 {
                out.put_i64(-1); // log append time
            }
        }
    }
    if header.version >= 1 {
        out.put_i32(0); // throttle time
    }
    sealed(out)
}

fn fetch(header: &Header, body: &[u8], max_tagged: usize) -> Result<Outcome, String> {
    // v4 is v3 with an isolation level after `max_bytes`, which v0–2 lack too.
    let fixed = if header.version >= 3 { 16 } else { 12 };
    if body.len() < fixed {
        return Err("a Fetch shorter than its fixed fields".into());
    }
    let mut v4 = BytesMut::with_capacity(body.len() + 5);
    v4.put_slice(&body[..fixed]);
    if header.version < 3 {
        v4.put_i32(i32::MAX);
    }
    v4.put_i8(0);
    v4.put_slice(&body[fixed..]);
    let request: FetchRequest = read(ApiKey::Fetch, 4, v4, max_tagged)?;
    let mut out = frame::start();
    out.put_i32(header.correlation_id);
    if header.version >= 1 {
        out.put_i32(0); // throttle time
    }
    put_len(&mut out, request.topics.len());
    for topic in &request.topics {
        put_str(&mut out, topic.topic.as_str());
        put_len(&mut out, topic.partitions.len());
        for p in &topic.partitions {
            out.put_i32(p.partition);
            out.put_i16(errors::UNSUPPORTED_VERSION);
            out.put_i64(-1); // high watermark
            out.put_i32(0); // no records
        }
    }
    sealed(out)
}

fn end_txn(header: &Header, body: &[u8], max_tagged: usize) -> Result<Outcome, String> {
    let version = header.version;
    let _request: EndTxnRequest = read(ApiKey::EndTxn, version, BytesMut::from(body), max_tagged)?;
    let mut response = EndTxnResponse::default();
    response.error_code = errors::UNSUPPORTED_VERSION;
    response.producer_id = ProducerId(-1);
    response.producer_epoch = -1;
    encode(header.correlation_id, version, &response).map(Outcome::Answer)
}

fn txn_offset_commit(header: &Header, body: &[u8], max_tagged: usize) -> Result<Outcome, String> {
    let version = header.version;
    let request: TxnOffsetCommitRequest = read(
        ApiKey::TxnOffsetCommit,
        version,
        BytesMut::from(body),
        max_tagged,
    )?;
    let mut response = TxnOffsetCommitResponse::default();
    response.topics = request
        .topics
        .into_iter()
        .map(|topic| {
            let mut answer = TxnOffsetCommitResponseTopic::default();
            answer.name = topic.name;
            answer.partitions = topic
                .partitions
                .iter()
                .map(|p| {
                    let mut row = TxnOffsetCommitResponsePartition::default();
                    row.partition_index = p.partition_index;
                    row.error_code = errors::UNSUPPORTED_VERSION;
                    row
                })
                .collect();
            answer
        })
        .collect();
    encode(header.correlation_id, version, &response).map(Outcome::Answer)
}

#[cfg(test)]
mod tests {
    use bytes::{Buf, Bytes};

    use super::*;

    /// The bytes of an answered frame after its size.
    fn frame_body(outcome: Outcome) -> Bytes {
        match outcome {
            Outcome::Answer(frame) => frame.slice(4..),
            _ => Bytes::new(),
        }
    }

    fn header(key: ApiKey, version: i16) -> Header {
        Header {
            api_key: key as i16,
            version,
            correlation_id: 9,
            client_id: String::new(),
        }
    }

    #[test]
    fn an_old_produce_is_answered_unsupported_version_per_partition_in_its_layout() {
        let mut body = BytesMut::new();
        body.put_i16(1); // acks
        body.put_i32(1000);
        body.put_i32(1);
        put_str(&mut body, "t");
        body.put_i32(2);
        for p in [0, 3] {
            body.put_i32(p);
            body.put_i32(2);
            body.put_slice(b"ms");
        }
        for version in 0..=2 {
            let out = answer(
                &header(ApiKey::Produce, version),
                ApiKey::Produce,
                &body,
                10,
            )
            .unwrap()
            .unwrap();
            let mut b = frame_body(out);
            assert_eq!(b.get_i32(), 9);
            assert_eq!(b.get_i32(), 1);
            assert_eq!(b.get_i16(), 1);
            assert_eq!(b.get_u8(), b't');
            assert_eq!(b.get_i32(), 2);
            for p in [0, 3] {
                assert_eq!(b.get_i32(), p);
                assert_eq!(b.get_i16(), errors::UNSUPPORTED_VERSION);
                assert_eq!(b.get_i64(), -1);
                if version >= 2 {
                    assert_eq!(b.get_i64(), -1);
                }
            }
            if version >= 1 {
                assert_eq!(b.get_i32(), 0);
            }
            assert!(b.is_empty(), "v{version}");
        }
        // Cut short, or acks=0: closed.
        let h = header(ApiKey::Produce, 2);
        assert!(
            answer(&h, ApiKey::Produce, &body[..body.len() - 1], 10)
                .unwrap()
                .is_err()
        );
        let mut silent = body.clone();
        silent[1] = 0;
        assert!(answer(&h, ApiKey::Produce, &silent, 10).unwrap().is_err());
    }

    #[test]
    fn an_old_fetch_is_answered_unsupported_version_per_partition_in_its_layout() {
        for version in 0..=3 {
            let mut body = BytesMut::new();
            body.put_i32(-1);
            body.put_i32(500);
            body.put_i32(1);
            if version >= 3 {
                body.put_i32(1 << 20);
            }
            body.put_i32(1);
            put_str(&mut body, "t");
            body.put_i32(1);
            body.put_i32(4);
            body.put_i64(0);
            body.put_i32(1 << 20);
            let out = answer(&header(ApiKey::Fetch, version), ApiKey::Fetch, &body, 10)
                .unwrap()
                .unwrap();
            let mut b = frame_body(out);
            assert_eq!(b.get_i32(), 9);
            if version >= 1 {
                assert_eq!(b.get_i32(), 0);
            }
            assert_eq!((b.get_i32(), b.get_i16(), b.get_u8()), (1, 1, b't'));
            assert_eq!(b.get_i32(), 1);
            assert_eq!(b.get_i32(), 4);
            assert_eq!(b.get_i16(), errors::UNSUPPORTED_VERSION);
            assert_eq!(b.get_i64(), -1);
            assert_eq!(b.get_i32(), 0);
            assert!(b.is_empty(), "v{version}");
        }
        assert!(answer(&header(ApiKey::Metadata, 0), ApiKey::OffsetCommit, &[], 10).is_none());
    }

    #[test]
    fn transactions_v2_versions_are_answered_unsupported_version_in_their_layout() {
        use kafka_protocol::messages::txn_offset_commit_request::{
            TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
        };
        use kafka_protocol::messages::{GroupId, TopicName, TransactionalId};
        use kafka_protocol::protocol::{Encodable, StrBytes};
        let s = |v: &str| StrBytes::from_string(v.to_owned());
        let decoded = |outcome: Outcome| {
            let mut b = frame_body(outcome);
            assert_eq!(b.get_i32(), 9, "the correlation id");
            assert_eq!(b.get_u8(), 0, "a flexible answer header: no tagged field");
            b
        };
        let mut body = BytesMut::new();
        EndTxnRequest::default()
            .with_transactional_id(TransactionalId(s("tx")))
            .with_producer_id(ProducerId(7))
            .with_committed(true)
            .encode(&mut body, TRANSACTIONS_V2)
            .unwrap();
        let out = answer(&header(ApiKey::EndTxn, 5), ApiKey::EndTxn, &body, 10)
            .unwrap()
            .unwrap();
        let got = EndTxnResponse::decode(&mut decoded(out), 5).unwrap();
        assert_eq!(
            (got.error_code, got.producer_id.0, got.producer_epoch),
            (errors::UNSUPPORTED_VERSION, -1, -1)
        );
        let mut body = BytesMut::new();
        TxnOffsetCommitRequest::default()
            .with_transactional_id(TransactionalId(s("tx")))
            .with_group_id(GroupId(s("g")))
            .with_topics(vec![
                TxnOffsetCommitRequestTopic::default()
                    .with_name(TopicName(s("t")))
                    .with_partitions(vec![
                        TxnOffsetCommitRequestPartition::default().with_partition_index(0),
                        TxnOffsetCommitRequestPartition::default().with_partition_index(3),
                    ]),
            ])
            .encode(&mut body, TRANSACTIONS_V2)
            .unwrap();
        let h = header(ApiKey::TxnOffsetCommit, 5);
        let out = answer(&h, ApiKey::TxnOffsetCommit, &body, 10)
            .unwrap()
            .unwrap();
        let got = TxnOffsetCommitResponse::decode(&mut decoded(out), 5).unwrap();
        assert_eq!(got.topics[0].name.as_str(), "t");
        let rows: Vec<_> = got.topics[0]
            .partitions
            .iter()
            .map(|p| (p.partition_index, p.error_code))
            .collect();
        assert_eq!(
            rows,
            [
                (0, errors::UNSUPPORTED_VERSION),
                (3, errors::UNSUPPORTED_VERSION)
            ]
        );
        // Cut short: closed. Other versions past the table are not answered here.
        assert!(
            answer(&h, ApiKey::TxnOffsetCommit, &body[..body.len() - 1], 10)
                .unwrap()
                .is_err()
        );
        assert!(answer(&header(ApiKey::EndTxn, 6), ApiKey::EndTxn, &body, 10).is_none());
    }
}
