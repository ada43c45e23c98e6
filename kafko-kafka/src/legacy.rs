//! Versions older than the message codec knows that clients in use still send, served
//! by reading them into the codec's request types and writing the old answer layout
//! here: ListOffsets v0 (Burrow, sarama), CreateTopics v0 and v1 (kafka-go). Each is
//! a non-flexible version whose fields are a subset of the oldest one the codec reads.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{
    ApiKey, CreateTopicsRequest, CreateTopicsResponse, ListOffsetsRequest, ListOffsetsResponse,
    TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::apis::Request;
use crate::frame;

/// Decodes a body of `key` at a version below the codec's.
///
/// # Errors
/// The body does not decode, or no old version of `key` is served.
pub(crate) fn decode(key: ApiKey, version: i16, body: &mut Bytes) -> Result<Request, String> {
    match (key, version) {
        (ApiKey::ListOffsets, 0) => list_offsets_v0(body).map(Request::ListOffsets),
        (ApiKey::CreateTopics, 0 | 1) => {
            // v1 is v2's layout (only the answer changed); v0 lacks `validate_only`.
            let mut owned;
            let body = if version == 0 {
                owned = BytesMut::from(&body[..]);
                owned.put_u8(0);
                &mut owned.freeze()
            } else {
                body
            };
            CreateTopicsRequest::decode(body, 2)
                .map(Request::CreateTopics)
                .map_err(|e| format!("undecodable request body: {e}"))
        }
        _ => Err(format!("{key:?} v{version} is not served")),
    }
}

fn short(what: &str) -> String {
    format!("a ListOffsets v0 body cut short in its {what}")
}

fn count(body: &mut Bytes, what: &str) -> Result<usize, String> {
    if body.remaining() < 4 {
        return Err(short(what));
    }
    // The guard checked each declared count against the bytes left.
    Ok(usize::try_from(body.get_i32()).unwrap_or(0))
}

fn string(body: &mut Bytes) -> Result<StrBytes, String> {
    if body.remaining() < 2 {
        return Err(short("topic name"));
    }
    let len = usize::try_from(body.get_i16()).map_err(|_| short("topic name"))?;
    if body.remaining() < len {
        return Err(short("topic name"));
    }
    StrBytes::try_from(body.split_to(len)).map_err(|e| format!("a topic name: {e}"))
}

/// ListOffsets v0: `replica_id`, then topics of partitions with a timestamp and the
/// most offsets wanted (each answered with one offset, as v1 answers).
fn list_offsets_v0(body: &mut Bytes) -> Result<ListOffsetsRequest, String> {
    if body.remaining() < 4 {
        return Err(short("replica id"));
    }
    let mut request = ListOffsetsRequest::default();
    request.replica_id = body.get_i32().into();
    for _ in 0..count(body, "topics")? {
        let mut topic = ListOffsetsTopic::default();
        topic.name = TopicName(string(body)?);
        for _ in 0..count(body, "partitions")? {
            if body.remaining() < 16 {
                return Err(short("partition"));
            }
            let mut p = ListOffsetsPartition::default();
            p.partition_index = body.get_i32();
            p.timestamp = body.get_i64();
            let _max_num_offsets = body.get_i32();
            topic.partitions.push(p);
        }
        request.topics.push(topic);
    }
    Ok(request)
}

fn put_str(out: &mut BytesMut, s: &str) -> Result<(), String> {
    out.put_i16(i16::try_from(s.len()).map_err(|_| "a name past 32 KiB".to_owned())?);
    out.put_slice(s.as_bytes());
    Ok(())
}

fn put_len(out: &mut BytesMut, n: usize) -> Result<(), String> {
    out.put_i32(i32::try_from(n).map_err(|_| "an answer past 2^31 entries".to_owned())?);
    Ok(())
}

/// A frame of `correlation_id` and the body `write` writes.
fn framed(
    correlation_id: i32,
    write: impl FnOnce(&mut BytesMut) -> Result<(), String>,
) -> Result<Bytes, String> {
    let mut buf = frame::start();
    buf.put_i32(correlation_id);
    write(&mut buf)?;
    frame::seal(buf).map_err(|e| e.to_string())
}

/// ListOffsets' answer in the v0 layout: each partition's offset as a list of one
/// (none when there is no such offset, -1).
///
/// # Errors
/// An answer too large to frame.
pub(crate) fn list_offsets_v0_answer(
    correlation_id: i32,
    response: &ListOffsetsResponse,
) -> Result<Bytes, String> {
    framed(correlation_id, |out| {
        put_len(out, response.topics.len())?;
        for t in &response.topics {
            put_str(out, t.name.as_str())?;
            put_len(out, t.partitions.len())?;
            for p in &t.partitions {
                out.put_i32(p.partition_index);
                out.put_i16(p.error_code);
                if p.error_code == 0 && p.offset >= 0 {
                    out.put_i32(1);
                    out.put_i64(p.offset);
                } else {
                    out.put_i32(0);
                }
            }
        }
        Ok(())
    })
}

/// CreateTopics' answer in the v0 (name, error) or v1 (and the message) layout.
///
/// # Errors
/// An answer too large to frame.
pub(crate) fn create_topics_answer(
    correlation_id: i32,
    version: i16,
    response: &CreateTopicsResponse,
) -> Result<Bytes, String> {
    framed(correlation_id, |out| {
        put_len(out, response.topics.len())?;
        for t in &response.topics {
            put_str(out, t.name.as_str())?;
            out.put_i16(t.error_code);
            if version >= 1 {
                match &t.error_message {
                    Some(m) if t.error_code != 0 => put_str(out, m.as_str())?,
                    _ => out.put_i16(-1),
                }
            }
        }
        Ok(())
    })
}
