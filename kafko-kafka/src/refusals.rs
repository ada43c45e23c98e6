//! Refused versions answered in their own layout, so the client says why instead of
//! reconnecting in a loop:
//! - Produce v0–2 and Fetch v0–3 carry the message formats v0 and v1 (before record
//!   batches), which kafko neither reads nor writes, as Kafka 4.0 no longer does. Old
//!   clients (kafka-go, sarama set to an old version) send them; each asked partition
//!   is answered UNSUPPORTED_VERSION. The request is read as the oldest version the
//!   codec knows (the same fields, in the same order, once the missing ones are put
//!   in), after the guard bounded its arrays. A produce with acks=0 expects no answer:
//!   its connection is closed.

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::{ApiKey, FetchRequest, ProduceRequest};
use kafka_protocol::protocol::Decodable;

use crate::dispatch::{Header, Outcome};
use crate::{apis, errors, frame, guard};

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
}
