//! The Fetch answer's frame, with each partition's record batches shared, not copied:
//! the batches are slices of the log's read, and the frame is a list of pieces (encoded
//! bytes between the batches) written with vectored writes. Byte for byte what the
//! message codec encodes: each partition's fields up to its records are the codec's, and
//! the arrays, strings and tagged-field counts around them are written here, in the
//! layout of Fetch v4 to v17. An answer with a field this layout does not carry (tagged
//! fields, node endpoints) is encoded whole by the codec instead.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::FetchResponse;
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::protocol::{Encodable, HeaderVersion};

use crate::dispatch;
use crate::frame::{self, Frame};

/// Batches at least this long are shared with the read; shorter ones are copied, as
/// a piece of the vectored write costs more than copying them.
const SHARE_FROM: usize = 1024;

/// The answer framed with its header (`correlation_id`), at `version`.
///
/// # Errors
/// The codec's, for a field the version cannot carry.
pub(crate) fn encode(
    correlation_id: i32,
    version: i16,
    mut response: FetchResponse,
) -> Result<Frame, String> {
    if !(4..=17).contains(&version) || !plain(&response, version) {
        return dispatch::encode(correlation_id, version, &response).map(Frame::from);
    }
    let flexible = version >= 12;
    let mut out = Pieces::new();
    let buf = &mut out.buf;
    buf.put_i32(correlation_id);
    if FetchResponse::header_version(version) >= 1 {
        buf.put_u8(0); // no tagged fields
    }
    buf.put_i32(response.throttle_time_ms);
    if version >= 7 {
        buf.put_i16(response.error_code);
        buf.put_i32(response.session_id);
    }
    put_len(buf, response.responses.len(), flexible)?;
    for topic in &mut response.responses {
        let buf = &mut out.buf;
        if version <= 12 {
            let name = topic.topic.as_bytes();
            if flexible {
                put_len(buf, name.len(), true)?;
            } else {
                buf.put_i16(i16::try_from(name.len()).map_err(|_| "topic name too long")?);
            }
            buf.put_slice(name);
        }
        if version >= 13 {
            buf.put_slice(topic.topic_id.as_bytes());
        }
        put_len(buf, topic.partitions.len(), flexible)?;
        for partition in &mut topic.partitions {
            out.partition(partition, version)?;
        }
        if flexible {
            out.buf.put_u8(0); // the topic's tagged fields
        }
    }
    if flexible {
        out.buf.put_u8(0); // the answer's tagged fields
    }
    out.seal()
}

/// Whether the answer carries only fields this module's layout writes.
fn plain(response: &FetchResponse, version: i16) -> bool {
    response.unknown_tagged_fields.is_empty()
        && response.node_endpoints.is_empty()
        && (version >= 7 || response.session_id == 0)
        && response.responses.iter().all(|t| {
            t.unknown_tagged_fields.is_empty()
                && t.partitions.iter().all(|p| {
                    p.unknown_tagged_fields.is_empty()
                        && p.diverging_epoch == Default::default()
                        && p.current_leader == Default::default()
                        && p.snapshot_id == Default::default()
                })
        })
}

/// An array's or a string's length: an `i32` before the flexible versions, an unsigned
/// varint of length + 1 in them.
fn put_len(buf: &mut BytesMut, len: usize, flexible: bool) -> Result<(), String> {
    if flexible {
        let mut v = u32::try_from(len)
            .ok()
            .and_then(|l| l.checked_add(1))
            .ok_or("length past the protocol's range")?;
        while v >= 0x80 {
            buf.put_u8(u8::try_from(v & 0x7f).unwrap_or(0) | 0x80);
            v >>= 7;
        }
        buf.put_u8(u8::try_from(v).unwrap_or(0));
    } else {
        buf.put_i32(i32::try_from(len).map_err(|_| "length past the protocol's range")?);
    }
    Ok(())
}

/// A frame being built: the pieces done, and the bytes being encoded after them.
struct Pieces {
    /// The frame's start (its size prefix still to fill), once a batch was shared.
    head: Option<BytesMut>,
    done: Vec<Bytes>,
    buf: BytesMut,
}

impl Pieces {
    fn new() -> Self {
        Pieces {
            head: None,
            done: Vec::new(),
            buf: frame::start(),
        }
    }

    /// Encodes one partition: its fields by the codec, with its records left out (as
    /// null), then its records in place of that null.
    fn partition(&mut self, partition: &mut PartitionData, version: i16) -> Result<(), String> {
        let records = partition.records.take();
        let encoded = partition.encode(&mut self.buf, version);
        partition.records = records;
        encoded.map_err(|e| format!("encoding the answer: {e}"))?;
        let Some(records) = partition.records.as_ref() else {
            return Ok(());
        };
        // The codec ended with a null records field and, when flexible, an empty tagged
        // field section (`plain` made sure of that).
        let flexible = version >= 12;
        let tail: &[u8] = if flexible { &[0, 0] } else { &[0xff; 4] };
        if !self.buf.ends_with(tail) {
            return Err("encoding the answer: unexpected partition layout".into());
        }
        self.buf.truncate(self.buf.len() - tail.len());
        put_len(&mut self.buf, records.len(), flexible)?;
        if records.len() >= SHARE_FROM {
            let before = self.buf.split();
            match self.head {
                None => self.head = Some(before),
                Some(_) => self.done.push(before.freeze()),
            }
            self.done.push(records.clone());
        } else {
            self.buf.put_slice(records);
        }
        if flexible {
            self.buf.put_u8(0);
        }
        Ok(())
    }

    /// The frame, its size prefix filled.
    fn seal(self) -> Result<Frame, String> {
        let Pieces { head, done, buf } = self;
        let Some(mut head) = head else {
            return frame::seal(buf).map(Frame::from).map_err(|e| e.to_string());
        };
        let size = done.iter().map(Bytes::len).sum::<usize>() + head.len() + buf.len() - 4;
        let size = i32::try_from(size).map_err(|_| "frame too large".to_string())?;
        head[..4].copy_from_slice(&size.to_be_bytes());
        let mut parts = Vec::with_capacity(done.len() + 2);
        parts.push(head.freeze());
        parts.extend(done);
        if !buf.is_empty() {
            parts.push(buf.freeze());
        }
        Ok(Frame::of(parts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::fetch_response::{
        AbortedTransaction, FetchableTopicResponse, LeaderIdAndEpoch,
    };
    use kafka_protocol::messages::{BrokerId, ProducerId, TopicName};
    use kafka_protocol::protocol::StrBytes;

    /// An answer of `topics` topics of 3 partitions, records of every size class: none,
    /// empty, short (copied) and long (shared); aborted transactions on some.
    fn answer(version: i16, topics: usize, seed: u64) -> FetchResponse {
        let mut response = FetchResponse::default();
        response.throttle_time_ms = i32::try_from(seed % 7).unwrap();
        if version >= 7 {
            response.error_code = 0;
            response.session_id = 0;
        }
        for t in 0..topics {
            let mut topic = FetchableTopicResponse::default();
            if version <= 12 {
                topic.topic = TopicName(StrBytes::from_string(format!("topic-{t}-{seed}")));
            } else {
                topic.topic_id = uuid::Uuid::from_u128(u128::from(seed) << 8 | t as u128);
            }
            for p in 0..3i32 {
                let mut data = PartitionData::default();
                data.partition_index = p;
                data.high_watermark = i64::from(p) * 1000 + i64::try_from(seed).unwrap();
                data.last_stable_offset = data.high_watermark - 1;
                data.log_start_offset = 3;
                if version >= 11 {
                    data.preferred_read_replica = BrokerId(-1);
                }
                let kind = (seed + t as u64 + u64::try_from(p).unwrap()) % 4;
                let size = match kind {
                    0 => None,
                    1 => Some(0),
                    2 => Some(100),
                    _ => Some(SHARE_FROM + 300 * t),
                };
                data.records = size.map(|n| {
                    Bytes::from(
                        (0..n)
                            .map(|i| u8::try_from(i % 253).unwrap())
                            .collect::<Vec<_>>(),
                    )
                });
                if p == 1 {
                    data.aborted_transactions = Some(vec![
                        AbortedTransaction::default()
                            .with_producer_id(ProducerId(9))
                            .with_first_offset(4),
                    ]);
                }
                topic.partitions.push(data);
            }
            response.responses.push(topic);
        }
        response
    }

    fn joined(frame: &Frame) -> Vec<u8> {
        frame
            .parts()
            .iter()
            .flat_map(|p| p.iter().copied())
            .collect()
    }

    #[test]
    fn every_version_encodes_as_the_codec_does_and_shares_long_batches() {
        for version in 4..=17 {
            for topics in [0, 1, 2, 5] {
                for seed in 0..4 {
                    let response = answer(version, topics, seed);
                    let whole = dispatch::encode(77, version, &response).unwrap();
                    let frame = encode(77, version, response.clone()).unwrap();
                    assert_eq!(joined(&frame), whole.to_vec(), "v{version} {topics} {seed}");
                    assert_eq!(frame.len(), whole.len());
                    let long: Vec<&Bytes> = response
                        .responses
                        .iter()
                        .flat_map(|t| &t.partitions)
                        .filter_map(|p| p.records.as_ref())
                        .filter(|r| r.len() >= SHARE_FROM)
                        .collect();
                    // Each long batch is a piece of its own, the very bytes of the read.
                    for records in long {
                        assert!(
                            frame
                                .parts()
                                .iter()
                                .any(|p| p.as_ptr() == records.as_ptr() && p.len() == records.len()),
                            "v{version}: a long batch was copied"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn an_answer_with_fields_this_layout_lacks_is_encoded_whole() {
        let mut response = answer(12, 2, 3);
        response.responses[0].partitions[0].current_leader =
            LeaderIdAndEpoch::default().with_leader_id(BrokerId(1));
        let whole = dispatch::encode(5, 12, &response).unwrap();
        let frame = encode(5, 12, response).unwrap();
        assert_eq!(frame.parts().len(), 1);
        assert_eq!(joined(&frame), whole.to_vec());
    }
}
