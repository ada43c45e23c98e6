//! The records of `__consumer_offsets` in Kafka's own formats (its
//! `OffsetCommitKey`/`OffsetCommitValue` and `GroupMetadataKey`/`GroupMetadataValue`
//! messages: big-endian, non-flexible versions), and which partition holds a group's
//! records (Kafka's rule: `abs(hashCode(group id)) % partitions`).

use bytes::{BufMut, Bytes, BytesMut};

use crate::disk::{StoredClassic, StoredOffsets};

/// Key version of an offset commit (`OffsetCommitKey` v1).
const OFFSET_KEY_VERSION: i16 = 1;
/// Key version of a group's metadata (`GroupMetadataKey` v2).
const GROUP_KEY_VERSION: i16 = 2;
/// `OffsetCommitValue` version written: 3 (leader epoch, no expire timestamp).
const OFFSET_VALUE_VERSION: i16 = 3;
/// `GroupMetadataValue` version written: 3 (state timestamp, group instance ids).
const GROUP_VALUE_VERSION: i16 = 3;

/// The partition of `__consumer_offsets` that holds group `id`'s records: Java's
/// `String.hashCode` over its UTF-16 code units, made non-negative as Kafka's
/// `Utils.abs` does (`i32::MIN` is 0), modulo the partition count.
pub(crate) fn partition_for(id: &str, partitions: u32) -> u32 {
    let hash = id.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    });
    let abs = if hash == i32::MIN { 0 } else { hash.abs() };
    abs.unsigned_abs() % partitions.max(1)
}

fn put_str(out: &mut BytesMut, s: &str) {
    // Kafka's strings are at most i16::MAX bytes; group ids, topics and members are far
    // shorter (names ≤ 249, member strings bounded by the group limits), metadata ≤ 4 KiB.
    let len = i16::try_from(s.len()).unwrap_or(i16::MAX);
    out.put_i16(len);
    out.put_slice(&s.as_bytes()[..usize::from(len.unsigned_abs())]);
}

fn put_nullable_str(out: &mut BytesMut, s: Option<&str>) {
    match s {
        Some(s) => put_str(out, s),
        None => out.put_i16(-1),
    }
}

fn put_bytes(out: &mut BytesMut, b: &[u8]) {
    out.put_i32(i32::try_from(b.len()).unwrap_or(i32::MAX));
    out.put_slice(b);
}

/// `OffsetCommitKey` v1 of group `id`, `topic`, `partition`.
pub(crate) fn offset_key(id: &str, topic: &str, partition: u32) -> Bytes {
    let mut out = BytesMut::with_capacity(10 + id.len() + topic.len());
    out.put_i16(OFFSET_KEY_VERSION);
    put_str(&mut out, id);
    put_str(&mut out, topic);
    out.put_i32(partition as i32);
    out.freeze()
}

/// `GroupMetadataKey` v2 of group `id`.
pub(crate) fn group_key(id: &str) -> Bytes {
    let mut out = BytesMut::with_capacity(4 + id.len());
    out.put_i16(GROUP_KEY_VERSION);
    put_str(&mut out, id);
    out.freeze()
}

/// `OffsetCommitValue` v3 of one committed partition: the commit's leader epoch (−1
/// when it gave none), metadata string and time.
pub(crate) fn offset_value(
    offset: u64,
    leader_epoch: Option<i32>,
    metadata: &str,
    committed_at: i64,
) -> Bytes {
    let mut out = BytesMut::with_capacity(24 + metadata.len());
    out.put_i16(OFFSET_VALUE_VERSION);
    out.put_i64(offset as i64);
    out.put_i32(leader_epoch.unwrap_or(-1));
    put_str(&mut out, metadata);
    out.put_i64(committed_at);
    out.freeze()
}

/// Every `OffsetCommitValue` of one stored topic, keyed.
pub(crate) fn offset_records(id: &str, topic: &str, stored: &StoredOffsets) -> Vec<(Bytes, Bytes)> {
    stored
        .offsets
        .iter()
        .map(|(&p, &offset)| {
            let metadata = stored.metadata.get(&p).map_or("", String::as_str);
            let at = stored.committed_at.get(&p).copied().unwrap_or(0);
            let epoch = stored.leader_epoch.get(&p).copied();
            let value = offset_value(offset, epoch, metadata, at);
            (offset_key(id, topic, p), value)
        })
        .collect()
}

/// `GroupMetadataValue` v3 of a stable generation: each member's subscription is its
/// metadata for the chosen protocol. The state timestamp is −1 (unknown), so the value
/// depends on the stored generation only.
pub(crate) fn group_value(g: &StoredClassic) -> Bytes {
    let mut out = BytesMut::with_capacity(256);
    out.put_i16(GROUP_VALUE_VERSION);
    put_str(&mut out, &g.protocol_type);
    out.put_i32(i32::try_from(g.generation).unwrap_or(i32::MAX));
    put_nullable_str(&mut out, Some(&g.protocol));
    put_nullable_str(&mut out, Some(&g.leader));
    out.put_i64(-1);
    out.put_i32(i32::try_from(g.members.len()).unwrap_or(i32::MAX));
    for m in &g.members {
        put_str(&mut out, &m.member_id);
        put_nullable_str(&mut out, m.group_instance_id.as_deref());
        put_str(&mut out, &m.client_id);
        put_str(&mut out, &m.client_host);
        out.put_i32(millis(m.rebalance_timeout));
        out.put_i32(millis(m.session_timeout));
        let subscription = m
            .protocols
            .iter()
            .find(|(name, _)| *name == g.protocol)
            .map_or(&[][..], |(_, meta)| &meta[..]);
        put_bytes(&mut out, subscription);
        put_bytes(&mut out, &m.assignment);
    }
    out.freeze()
}

/// `GroupMetadataValue` v3 of an empty group, as Kafka writes one: the protocol type and
/// generation it had, no protocol, leader or member.
pub(crate) fn empty_group_value(protocol_type: &str, generation: i32) -> Bytes {
    let mut out = BytesMut::with_capacity(16 + protocol_type.len());
    out.put_i16(GROUP_VALUE_VERSION);
    put_str(&mut out, protocol_type);
    out.put_i32(generation);
    put_nullable_str(&mut out, None);
    put_nullable_str(&mut out, None);
    out.put_i64(-1);
    out.put_i32(0);
    out.freeze()
}

fn millis(d: std::time::Duration) -> i32 {
    i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
}

/// Reads a Kafka string at `*at`.
fn read_str<'a>(b: &'a [u8], at: &mut usize) -> Option<&'a str> {
    let len = usize::try_from(i16::from_be_bytes(b.get(*at..*at + 2)?.try_into().ok()?)).ok()?;
    let s = std::str::from_utf8(b.get(*at + 2..*at + 2 + len)?).ok()?;
    *at += 2 + len;
    Some(s)
}

/// The group id a key of either kind belongs to; `None` for any other bytes.
pub(crate) fn key_group(key: &[u8]) -> Option<&str> {
    let version = i16::from_be_bytes(key.get(..2)?.try_into().ok()?);
    if version != OFFSET_KEY_VERSION && version != GROUP_KEY_VERSION && version != 0 {
        return None;
    }
    read_str(key, &mut 2)
}

/// The protocol type, generation and whether it has members, of a `GroupMetadataValue`
/// of version 2 or 3 (what this module writes).
pub(crate) fn group_value_head(value: &[u8]) -> Option<(&str, i32, bool)> {
    let mut at = 2;
    let protocol_type = read_str(value, &mut at)?;
    let generation = i32::from_be_bytes(value.get(at..at + 4)?.try_into().ok()?);
    at += 4;
    for _ in 0..2 {
        // Protocol and leader: nullable strings.
        if value.get(at..at + 2)? == [0xff, 0xff] {
            at += 2;
        } else {
            read_str(value, &mut at)?;
        }
    }
    at += 8;
    let members = i32::from_be_bytes(value.get(at..at + 4)?.try_into().ok()?);
    Some((protocol_type, generation, members > 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_follow_java_hash_code() {
        // "group".hashCode() == 98629247 in Java; "".hashCode() == 0.
        assert_eq!(partition_for("group", 50), 98_629_247 % 50);
        assert_eq!(partition_for("", 50), 0);
        // "polygenelubricants".hashCode() == Integer.MIN_VALUE: Kafka's abs makes it 0.
        assert_eq!(partition_for("polygenelubricants", 50), 0);
        // A negative hash: "Aa~~~~~~~".hashCode() < 0 is made positive.
        let h = "zzzzzzzzzz"
            .encode_utf16()
            .fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u)));
        assert!(h < 0);
        assert_eq!(partition_for("zzzzzzzzzz", 7), h.unsigned_abs() % 7);
    }

    #[test]
    fn keys_encode_as_kafka_does() {
        assert_eq!(
            &offset_key("g", "t", 3)[..],
            &[0, 1, 0, 1, b'g', 0, 1, b't', 0, 0, 0, 3]
        );
        assert_eq!(&group_key("g")[..], &[0, 2, 0, 1, b'g']);
        assert_eq!(key_group(&offset_key("grp", "t", 0)), Some("grp"));
        let v = offset_value(7, None, "m", 5);
        assert_eq!(
            &v[..],
            &[
                0, 3, 0, 0, 0, 0, 0, 0, 0, 7, 255, 255, 255, 255, 0, 1, b'm', 0, 0, 0, 0, 0, 0, 0,
                5
            ]
        );
        let v = offset_value(7, Some(2), "", 5);
        assert_eq!(
            &v[..],
            &[
                0, 3, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5
            ]
        );
        let empty = empty_group_value("consumer", 4);
        assert_eq!(group_value_head(&empty), Some(("consumer", 4, false)));
    }
}
