//! Bounds on a request body before the message codec decodes it. The codec reserves
//! room for an array's declared length before it reads the elements, so a request of a
//! few bytes declaring 2^31 elements would ask for hundreds of gigabytes and abort the
//! process. This walks the body's layout for its API and version (strings, bytes,
//! arrays, tagged fields, as the flexible versions encode them) and refuses any array
//! that declares more elements than the bytes left could hold, a body cut short, or
//! more tagged fields than the server's limit, before the codec sees it. The codec
//! keeps every tagged field it does not know in a map entry of about 70 bytes for 2
//! bytes sent; no client of the served versions sends any unknown one.

use kafka_protocol::messages::ApiKey;

/// What a field is on the wire.
#[derive(Debug, Clone, Copy)]
enum Ty {
    /// A fixed-size value (integers, booleans, UUIDs) of this many bytes.
    Fixed(usize),
    /// A (nullable) string.
    Str,
    /// (Nullable) bytes.
    Bytes,
    /// A (nullable) array of structures with these fields.
    Array(&'static [Field]),
    /// A (nullable) array of fixed-size values of this many bytes.
    Fixeds(usize),
    /// A (nullable) array of strings.
    Strs,
}

/// A field, present in versions `since..=until`.
#[derive(Debug, Clone, Copy)]
struct Field {
    ty: Ty,
    since: i16,
    until: i16,
}

const fn all(ty: Ty) -> Field {
    Field {
        ty,
        since: 0,
        until: i16::MAX,
    }
}

const fn since(version: i16, ty: Ty) -> Field {
    Field {
        ty,
        since: version,
        until: i16::MAX,
    }
}

const fn until(version: i16, ty: Ty) -> Field {
    Field {
        ty,
        since: 0,
        until: version,
    }
}

const fn between(from: i16, to: i16, ty: Ty) -> Field {
    Field {
        ty,
        since: from,
        until: to,
    }
}

const I8: Ty = Ty::Fixed(1);
const BOOL: Ty = Ty::Fixed(1);
const I16: Ty = Ty::Fixed(2);
const I32: Ty = Ty::Fixed(4);
const I64: Ty = Ty::Fixed(8);
const UUID: Ty = Ty::Fixed(16);

const PRODUCE_PARTITION: &[Field] = &[all(I32), all(Ty::Bytes)];
const PRODUCE_TOPIC: &[Field] = &[
    until(12, Ty::Str),
    since(13, UUID),
    all(Ty::Array(PRODUCE_PARTITION)),
];
const PRODUCE: &[Field] = &[
    all(Ty::Str),
    all(I16),
    all(I32),
    all(Ty::Array(PRODUCE_TOPIC)),
];

const FETCH_PARTITION: &[Field] = &[
    all(I32),
    since(9, I32),
    all(I64),
    since(12, I32),
    since(5, I64),
    all(I32),
];
const FETCH_TOPIC: &[Field] = &[
    until(12, Ty::Str),
    since(13, UUID),
    all(Ty::Array(FETCH_PARTITION)),
];
const FORGOTTEN_TOPIC: &[Field] = &[until(12, Ty::Str), since(13, UUID), all(Ty::Fixeds(4))];
const FETCH: &[Field] = &[
    until(14, I32),
    all(I32),
    all(I32),
    since(3, I32),
    since(4, I8),
    since(7, I32),
    since(7, I32),
    all(Ty::Array(FETCH_TOPIC)),
    since(7, Ty::Array(FORGOTTEN_TOPIC)),
    since(11, Ty::Str),
];

const LIST_OFFSETS_PARTITION: &[Field] = &[all(I32), since(4, I32), all(I64), until(0, I32)];
const LIST_OFFSETS_TOPIC: &[Field] = &[all(Ty::Str), all(Ty::Array(LIST_OFFSETS_PARTITION))];
const LIST_OFFSETS: &[Field] = &[
    all(I32),
    since(2, I8),
    all(Ty::Array(LIST_OFFSETS_TOPIC)),
    since(10, I32),
];

const METADATA_TOPIC: &[Field] = &[since(10, UUID), all(Ty::Str)];
const METADATA: &[Field] = &[
    all(Ty::Array(METADATA_TOPIC)),
    since(4, BOOL),
    between(8, 10, BOOL),
    since(8, BOOL),
];

const COMMIT_PARTITION: &[Field] = &[
    all(I32),
    all(I64),
    since(6, I32),
    between(1, 1, I64),
    all(Ty::Str),
];
const COMMIT_TOPIC: &[Field] = &[all(Ty::Str), all(Ty::Array(COMMIT_PARTITION))];
const OFFSET_COMMIT: &[Field] = &[
    all(Ty::Str),
    since(1, I32),
    since(1, Ty::Str),
    since(7, Ty::Str),
    between(2, 4, I64),
    all(Ty::Array(COMMIT_TOPIC)),
];

const OFFSET_FETCH_TOPIC: &[Field] = &[all(Ty::Str), all(Ty::Fixeds(4))];
const OFFSET_FETCH: &[Field] = &[
    until(7, Ty::Str),
    until(7, Ty::Array(OFFSET_FETCH_TOPIC)),
    since(7, BOOL),
];

const FIND_COORDINATOR: &[Field] = &[until(3, Ty::Str), since(1, I8), since(4, Ty::Strs)];

const JOIN_PROTOCOL: &[Field] = &[all(Ty::Str), all(Ty::Bytes)];
const JOIN_GROUP: &[Field] = &[
    all(Ty::Str),
    all(I32),
    since(1, I32),
    all(Ty::Str),
    since(5, Ty::Str),
    all(Ty::Str),
    all(Ty::Array(JOIN_PROTOCOL)),
    since(8, Ty::Str),
];

const SYNC_ASSIGNMENT: &[Field] = &[all(Ty::Str), all(Ty::Bytes)];
const SYNC_GROUP: &[Field] = &[
    all(Ty::Str),
    all(I32),
    all(Ty::Str),
    since(3, Ty::Str),
    since(5, Ty::Str),
    since(5, Ty::Str),
    all(Ty::Array(SYNC_ASSIGNMENT)),
];

const HEARTBEAT: &[Field] = &[all(Ty::Str), all(I32), all(Ty::Str), since(3, Ty::Str)];

const LEAVE_MEMBER: &[Field] = &[all(Ty::Str), all(Ty::Str), since(5, Ty::Str)];
const LEAVE_GROUP: &[Field] = &[
    all(Ty::Str),
    until(2, Ty::Str),
    since(3, Ty::Array(LEAVE_MEMBER)),
];

const DESCRIBE_GROUPS: &[Field] = &[all(Ty::Strs), since(3, BOOL)];
const LIST_GROUPS: &[Field] = &[since(4, Ty::Strs), since(5, Ty::Strs)];
const API_VERSIONS: &[Field] = &[since(3, Ty::Str), since(3, Ty::Str)];

const CREATE_ASSIGNMENT: &[Field] = &[all(I32), all(Ty::Fixeds(4))];
const CREATE_CONFIG: &[Field] = &[all(Ty::Str), all(Ty::Str)];
const CREATE_TOPIC: &[Field] = &[
    all(Ty::Str),
    all(I32),
    all(I16),
    all(Ty::Array(CREATE_ASSIGNMENT)),
    all(Ty::Array(CREATE_CONFIG)),
];
const CREATE_TOPICS: &[Field] = &[all(Ty::Array(CREATE_TOPIC)), all(I32), since(1, BOOL)];

const DELETE_TOPIC: &[Field] = &[all(Ty::Str), all(UUID)];
const DELETE_TOPICS: &[Field] = &[
    since(6, Ty::Array(DELETE_TOPIC)),
    until(5, Ty::Strs),
    all(I32),
];

const INIT_PRODUCER_ID: &[Field] = &[all(Ty::Str), all(I32), since(3, I64), since(3, I16)];
const SASL_HANDSHAKE: &[Field] = &[all(Ty::Str)];
const SASL_AUTHENTICATE: &[Field] = &[all(Ty::Bytes)];

/// The body layout of a request this broker decodes.
fn layout(key: ApiKey) -> Option<&'static [Field]> {
    Some(match key {
        ApiKey::Produce => PRODUCE,
        ApiKey::Fetch => FETCH,
        ApiKey::ListOffsets => LIST_OFFSETS,
        ApiKey::Metadata => METADATA,
        ApiKey::OffsetCommit => OFFSET_COMMIT,
        ApiKey::OffsetFetch => OFFSET_FETCH,
        ApiKey::FindCoordinator => FIND_COORDINATOR,
        ApiKey::JoinGroup => JOIN_GROUP,
        ApiKey::Heartbeat => HEARTBEAT,
        ApiKey::LeaveGroup => LEAVE_GROUP,
        ApiKey::SyncGroup => SYNC_GROUP,
        ApiKey::DescribeGroups => DESCRIBE_GROUPS,
        ApiKey::ListGroups => LIST_GROUPS,
        ApiKey::SaslHandshake => SASL_HANDSHAKE,
        ApiKey::ApiVersions => API_VERSIONS,
        ApiKey::CreateTopics => CREATE_TOPICS,
        ApiKey::DeleteTopics => DELETE_TOPICS,
        ApiKey::InitProducerId => INIT_PRODUCER_ID,
        ApiKey::SaslAuthenticate => SASL_AUTHENTICATE,
        _ => return None,
    })
}

/// Checks a request body of `key` at `version`, holding at most `max_tagged` tagged
/// fields in all; the bytes its layout covers.
///
/// # Errors
/// Why the body is refused: an array longer than the bytes left, a length past the end,
/// too many tagged fields, an API with no known layout.
pub(crate) fn check(
    key: ApiKey,
    version: i16,
    body: &[u8],
    max_tagged: usize,
) -> Result<usize, String> {
    let fields = layout(key).ok_or_else(|| format!("{key:?} has no known layout"))?;
    let mut walk = Walk {
        buf: body,
        at: 0,
        version,
        flexible: key.request_header_version(version) >= 2,
        tagged_left: max_tagged,
    };
    walk.structure(fields)?;
    Ok(walk.at)
}

struct Walk<'a> {
    buf: &'a [u8],
    at: usize,
    version: i16,
    flexible: bool,
    /// Tagged fields the rest of the body may still hold.
    tagged_left: usize,
}

impl Walk<'_> {
    fn left(&self) -> usize {
        self.buf.len() - self.at
    }

    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        if n > self.left() {
            return Err(format!(
                "a length of {n} at byte {} runs past the request",
                self.at
            ));
        }
        let start = self.at;
        self.at += n;
        Ok(&self.buf[start..self.at])
    }

    fn int(&mut self, n: usize) -> Result<i64, String> {
        let raw = self.take(n)?;
        Ok(raw
            .iter()
            .fold(0i64, |acc, b| (acc << 8) | i64::from(*b))
            // Sign-extend from n bytes.
            .wrapping_shl(u32::try_from(64 - 8 * n).unwrap_or(0))
            .wrapping_shr(u32::try_from(64 - 8 * n).unwrap_or(0)))
    }

    fn uvarint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for shift in (0..35).step_by(7) {
            let byte = self.take(1)?[0];
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("an unsigned varint longer than 5 bytes".into())
    }

    /// A length or count: `None` for null.
    fn length(&mut self, classic_bytes: usize) -> Result<Option<usize>, String> {
        if self.flexible {
            let raw = self.uvarint()?;
            return Ok(raw
                .checked_sub(1)
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX)));
        }
        let raw = self.int(classic_bytes)?;
        match raw {
            -1 => Ok(None),
            n if n < 0 => Err(format!("a negative length {n}")),
            n => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
        }
    }

    /// An element count no larger than the bytes left could hold, at `min` bytes each.
    fn count(&mut self, min: usize) -> Result<usize, String> {
        let n = self.length(4)?.unwrap_or(0);
        if n.saturating_mul(min.max(1)) > self.left() {
            return Err(format!(
                "an array of {n} elements with {} bytes left",
                self.left()
            ));
        }
        Ok(n)
    }

    fn field(&mut self, ty: Ty) -> Result<(), String> {
        match ty {
            Ty::Fixed(n) => {
                self.take(n)?;
            }
            Ty::Str => {
                let n = self.length(2)?.unwrap_or(0);
                self.take(n)?;
            }
            Ty::Bytes => {
                let n = self.length(4)?.unwrap_or(0);
                self.take(n)?;
            }
            Ty::Array(fields) => {
                for _ in 0..self.count(1)? {
                    self.structure(fields)?;
                }
            }
            Ty::Fixeds(size) => {
                let n = self.count(size)?;
                self.take(n * size)?;
            }
            Ty::Strs => {
                for _ in 0..self.count(1)? {
                    self.field(Ty::Str)?;
                }
            }
        }
        Ok(())
    }

    fn structure(&mut self, fields: &[Field]) -> Result<(), String> {
        for f in fields {
            if (f.since..=f.until).contains(&self.version) {
                self.field(f.ty)?;
            }
        }
        if self.flexible {
            // Tagged fields: a count, then (tag, size, bytes) each.
            let count = self.uvarint()?;
            self.tagged_left = usize::try_from(count)
                .ok()
                .and_then(|n| self.tagged_left.checked_sub(n))
                .ok_or_else(|| {
                    format!("{count} tagged fields past the limit at byte {}", self.at)
                })?;
            for _ in 0..count {
                self.uvarint()?;
                let size = usize::try_from(self.uvarint()?).unwrap_or(usize::MAX);
                self.take(size)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use bytes::{BufMut, Bytes, BytesMut};
    use kafka_protocol::messages::*;
    use kafka_protocol::protocol::{Encodable, StrBytes};

    use super::*;

    fn s(v: &str) -> StrBytes {
        StrBytes::from_string(v.to_owned())
    }

    fn t(v: &str) -> TopicName {
        TopicName(s(v))
    }

    /// The layout covers exactly what the codec encodes, at every served version.
    fn covers<T: Encodable>(
        key: ApiKey,
        versions: std::ops::RangeInclusive<i16>,
        make: impl Fn(i16) -> T,
    ) {
        for v in versions {
            let mut buf = BytesMut::new();
            make(v).encode(&mut buf, v).unwrap();
            assert_eq!(check(key, v, &buf, 0), Ok(buf.len()), "{key:?} v{v}");
            // Cut short anywhere, it is refused (or covers less than it was).
            for cut in [1, buf.len() / 2] {
                if cut > 0 && cut <= buf.len() {
                    assert!(
                        check(key, v, &buf[..buf.len() - cut], 0).is_err(),
                        "{key:?} v{v} cut {cut}"
                    );
                }
            }
        }
    }

    #[test]
    fn every_layout_matches_the_codec_at_every_served_version() {
        use create_topics_request::*;
        use fetch_request::*;
        use list_offsets_request::*;
        use produce_request::*;
        covers(ApiKey::Produce, 3..=9, |_| {
            ProduceRequest::default()
                .with_transactional_id(None)
                .with_acks(1)
                .with_topic_data(vec![
                    TopicProduceData::default()
                        .with_name(t("t"))
                        .with_partition_data(vec![
                            PartitionProduceData::default()
                                .with_index(0)
                                .with_records(Some(Bytes::from_static(b"abc"))),
                            PartitionProduceData::default()
                                .with_index(1)
                                .with_records(None),
                        ]),
                ])
        });
        covers(ApiKey::Fetch, 4..=12, |v| {
            let mut r = FetchRequest::default()
                .with_replica_id((-1).into())
                .with_topics(vec![
                    FetchTopic::default()
                        .with_topic(t("t"))
                        .with_partitions(vec![
                            FetchPartition::default()
                                .with_partition(0)
                                .with_fetch_offset(5),
                            FetchPartition::default().with_partition(1),
                        ]),
                ]);
            if v >= 7 {
                r = r.with_forgotten_topics_data(vec![
                    ForgottenTopic::default()
                        .with_topic(t("f"))
                        .with_partitions(vec![1, 2]),
                ]);
            }
            if v >= 11 {
                r = r.with_rack_id(s("rack"));
            }
            r
        });
        covers(ApiKey::ListOffsets, 1..=7, |_| {
            ListOffsetsRequest::default().with_topics(vec![
                ListOffsetsTopic::default()
                    .with_name(t("t"))
                    .with_partitions(vec![
                        ListOffsetsPartition::default()
                            .with_partition_index(2)
                            .with_timestamp(-1),
                    ]),
            ])
        });
        covers(ApiKey::Metadata, 1..=12, |_| {
            MetadataRequest::default().with_topics(Some(vec![
                metadata_request::MetadataRequestTopic::default().with_name(Some(t("a"))),
                metadata_request::MetadataRequestTopic::default().with_name(Some(t("bb"))),
            ]))
        });
        covers(ApiKey::Metadata, 1..=12, |_| {
            MetadataRequest::default().with_topics(None)
        });
        covers(ApiKey::OffsetCommit, 2..=8, |_| {
            OffsetCommitRequest::default()
                .with_member_id(s("m"))
                .with_topics(vec![
                    offset_commit_request::OffsetCommitRequestTopic::default()
                        .with_name(t("t"))
                        .with_partitions(vec![
                            offset_commit_request::OffsetCommitRequestPartition::default()
                                .with_committed_offset(7)
                                .with_committed_metadata(Some(s("meta"))),
                        ]),
                ])
        });
        covers(ApiKey::OffsetFetch, 1..=7, |_| {
            OffsetFetchRequest::default().with_topics(Some(vec![
                offset_fetch_request::OffsetFetchRequestTopic::default()
                    .with_name(t("t"))
                    .with_partition_indexes(vec![0, 1]),
            ]))
        });
        covers(ApiKey::FindCoordinator, 0..=3, |_| {
            FindCoordinatorRequest::default().with_key(s("g"))
        });
        covers(ApiKey::JoinGroup, 2..=7, |_| {
            JoinGroupRequest::default()
                .with_group_instance_id(None)
                .with_member_id(s("m"))
                .with_protocols(vec![
                    join_group_request::JoinGroupRequestProtocol::default()
                        .with_name(s("range"))
                        .with_metadata(Bytes::from_static(b"xyz")),
                ])
        });
        covers(ApiKey::SyncGroup, 0..=5, |v| {
            let mut r = SyncGroupRequest::default()
                .with_group_instance_id(None)
                .with_assignments(vec![
                    sync_group_request::SyncGroupRequestAssignment::default()
                        .with_member_id(s("m"))
                        .with_assignment(Bytes::from_static(b"a")),
                ]);
            if v >= 5 {
                r = r
                    .with_protocol_type(Some(s("consumer")))
                    .with_protocol_name(Some(s("range")));
            }
            r
        });
        covers(ApiKey::Heartbeat, 0..=4, |_| {
            HeartbeatRequest::default().with_group_instance_id(None)
        });
        covers(ApiKey::LeaveGroup, 0..=4, |v| {
            let r = LeaveGroupRequest::default().with_group_id(GroupId(s("g")));
            if v >= 3 {
                r.with_member_id(StrBytes::default()).with_members(vec![
                    leave_group_request::MemberIdentity::default()
                        .with_member_id(s("m"))
                        .with_group_instance_id(None),
                ])
            } else {
                r.with_member_id(s("m"))
            }
        });
        covers(ApiKey::DescribeGroups, 0..=5, |_| {
            DescribeGroupsRequest::default().with_groups(vec![GroupId(s("a")), GroupId(s("b"))])
        });
        covers(ApiKey::ListGroups, 0..=4, |_| ListGroupsRequest::default());
        covers(ApiKey::ApiVersions, 0..=3, |v| {
            if v >= 3 {
                ApiVersionsRequest::default()
                    .with_client_software_name(s("x"))
                    .with_client_software_version(s("1"))
            } else {
                ApiVersionsRequest::default()
            }
        });
        covers(ApiKey::CreateTopics, 2..=7, |_| {
            CreateTopicsRequest::default().with_topics(vec![
                CreatableTopic::default()
                    .with_name(t("t"))
                    .with_num_partitions(-1)
                    .with_assignments(vec![
                        CreatableReplicaAssignment::default().with_broker_ids(vec![0.into()]),
                    ])
                    .with_configs(vec![
                        CreatableTopicConfig::default()
                            .with_name(s("a"))
                            .with_value(Some(s("b"))),
                    ]),
            ])
        });
        covers(ApiKey::DeleteTopics, 1..=6, |v| {
            if v >= 6 {
                DeleteTopicsRequest::default().with_topics(vec![
                    delete_topics_request::DeleteTopicState::default().with_name(Some(t("a"))),
                ])
            } else {
                DeleteTopicsRequest::default().with_topic_names(vec![t("a"), t("b")])
            }
        });
        covers(ApiKey::InitProducerId, 0..=4, |_| {
            InitProducerIdRequest::default().with_transactional_id(None)
        });
        covers(ApiKey::SaslHandshake, 1..=1, |_| {
            SaslHandshakeRequest::default().with_mechanism(s("PLAIN"))
        });
        covers(ApiKey::SaslAuthenticate, 0..=2, |_| {
            SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from_static(b"\0u\0p"))
        });
    }

    #[test]
    fn a_huge_declared_array_is_refused_before_decoding() {
        // Metadata v1: a topics array declaring 2^31 - 1 entries, and nothing after it.
        let mut body = BytesMut::new();
        body.put_i32(i32::MAX);
        assert!(
            check(ApiKey::Metadata, 1, &body, 0)
                .unwrap_err()
                .contains("elements")
        );
        // Flexible (v12): the same as a varint.
        let body = [0xff, 0xff, 0xff, 0xff, 0x07];
        assert!(check(ApiKey::Metadata, 12, &body, 0).is_err());
        // An int32 array (OffsetFetch partition indexes) past the bytes left.
        let mut body = BytesMut::new();
        body.put_i16(1);
        body.put_slice(b"g");
        body.put_i32(1);
        body.put_i16(1);
        body.put_slice(b"t");
        body.put_i32(1_000_000);
        body.put_i32(0);
        assert!(check(ApiKey::OffsetFetch, 1, &body, 0).is_err());
    }

    #[test]
    fn tagged_fields_past_the_limit_are_refused() {
        // Metadata v12: one topic (an id, a name, one tagged field of its own), the two
        // flags, then `tags` tagged fields at the top level.
        let body = |tags: u8| {
            let mut body = BytesMut::new();
            body.put_u8(2); // one topic
            body.put_slice(&[0; 16]);
            body.put_u8(2);
            body.put_slice(b"t");
            body.put_u8(1); // the topic's tagged fields: one
            body.put_slice(&[7, 1, b'x']);
            body.put_u8(0); // allow auto-creation
            body.put_u8(0); // include topic authorized operations
            body.put_u8(tags);
            for tag in 0..tags {
                body.put_slice(&[10 + tag, 0]);
            }
            body
        };
        assert_eq!(check(ApiKey::Metadata, 12, &body(2), 3), Ok(body(2).len()));
        assert!(
            check(ApiKey::Metadata, 12, &body(3), 3)
                .unwrap_err()
                .contains("tagged fields")
        );
    }
}
