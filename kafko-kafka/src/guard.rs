//! Bounds on a request body before the message codec decodes it. The codec reserves
//! room for an array's declared length before it reads the elements, so a request of a
//! few bytes declaring 2^31 elements would ask for hundreds of gigabytes and abort the
//! process. This walks the body's layout for its API and version (strings, bytes,
//! arrays, tagged fields, as the flexible versions encode them) and refuses any array
//! that declares more elements than the bytes left could hold, a body cut short, or
//! more tagged fields than the server's limit, before the codec sees it. The codec
//! keeps every tagged field it does not know in a map entry of about 70 bytes for 2
//! bytes sent; no client of the served versions sends any unknown one.

use crate::apis::Api;
use crate::layouts::{Field, Ty};

/// Checks a request body of `api` at `version`, holding at most `max_tagged` tagged
/// fields in all; the bytes its layout covers.
///
/// # Errors
/// Why the body is refused: an array longer than the bytes left, a length past the end,
/// too many tagged fields.
pub(crate) fn check(
    api: &Api,
    version: i16,
    body: &[u8],
    max_tagged: usize,
) -> Result<usize, String> {
    let mut walk = Walk {
        buf: body,
        at: 0,
        version,
        flexible: api.key.request_header_version(version) >= 2,
        tagged_left: max_tagged,
    };
    walk.structure(api.layout)?;
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

    use crate::apis;

    /// Checks `body` with the layout the table registers for `key`.
    fn check(key: ApiKey, version: i16, body: &[u8], max: usize) -> Result<usize, String> {
        let api = apis::find(key).expect("a served API");
        super::check(api, version, body, max)
    }

    fn s(v: &str) -> StrBytes {
        StrBytes::from_string(v.to_owned())
    }

    fn t(v: &str) -> TopicName {
        TopicName(s(v))
    }

    /// The layout covers exactly what the codec encodes, at every version the table
    /// serves `key` at.
    fn covers<T: Encodable>(
        seen: &mut std::collections::BTreeSet<i16>,
        key: ApiKey,
        make: impl Fn(i16) -> T,
    ) {
        let api = apis::find(key).expect("a served API");
        seen.insert(key as i16);
        for v in api.decoded() {
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
    fn the_layouts_of_versions_older_than_the_codec_cover_their_bodies() {
        // ListOffsets v0: replica, one topic of one partition with a timestamp and a
        // count of offsets.
        let mut v0 = BytesMut::new();
        v0.put_i32(-1);
        v0.put_i32(1);
        v0.put_i16(1);
        v0.put_u8(b't');
        v0.put_i32(1);
        v0.put_i32(0);
        v0.put_i64(-1);
        v0.put_i32(1);
        assert_eq!(check(ApiKey::ListOffsets, 0, &v0, 0), Ok(v0.len()));
        assert!(check(ApiKey::ListOffsets, 0, &v0[..v0.len() - 1], 0).is_err());
        // CreateTopics v1 is v2's body; v0 is without its last byte.
        let mut v2 = BytesMut::new();
        CreateTopicsRequest::default()
            .with_topics(vec![
                create_topics_request::CreatableTopic::default().with_name(t("t")),
            ])
            .encode(&mut v2, 2)
            .unwrap();
        assert_eq!(check(ApiKey::CreateTopics, 1, &v2, 0), Ok(v2.len()));
        assert_eq!(check(ApiKey::CreateTopics, 0, &v2, 0), Ok(v2.len() - 1));
        for api in apis::APIS {
            assert!(api.oldest >= 0 && api.oldest <= api.min, "{:?}", api.key);
        }
    }

    #[test]
    fn every_layout_matches_the_codec_at_every_served_version() {
        use create_topics_request::*;
        use fetch_request::*;
        use list_offsets_request::*;
        use produce_request::*;
        let mut seen = std::collections::BTreeSet::new();
        covers(&mut seen, ApiKey::Produce, |_| {
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
        covers(&mut seen, ApiKey::Fetch, |v| {
            let mut r = FetchRequest::default()
                .with_replica_id((-1).into())
                .with_topics(vec![
                    if v >= 13 {
                        FetchTopic::default().with_topic_id(uuid::Uuid::from_u128(7))
                    } else {
                        FetchTopic::default().with_topic(t("t"))
                    }
                    .with_partitions(vec![
                        FetchPartition::default()
                            .with_partition(0)
                            .with_fetch_offset(5),
                        FetchPartition::default().with_partition(1),
                    ]),
                ]);
            if v >= 13 {
                r = r.with_forgotten_topics_data(vec![
                    ForgottenTopic::default()
                        .with_topic_id(uuid::Uuid::from_u128(8))
                        .with_partitions(vec![1, 2]),
                ]);
            } else if v >= 7 {
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
        covers(&mut seen, ApiKey::ListOffsets, |_| {
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
        covers(&mut seen, ApiKey::Metadata, |_| {
            MetadataRequest::default().with_topics(Some(vec![
                metadata_request::MetadataRequestTopic::default().with_name(Some(t("a"))),
                metadata_request::MetadataRequestTopic::default().with_name(Some(t("bb"))),
            ]))
        });
        covers(&mut seen, ApiKey::Metadata, |_| {
            MetadataRequest::default().with_topics(None)
        });
        covers(&mut seen, ApiKey::OffsetCommit, |_| {
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
        covers(&mut seen, ApiKey::OffsetFetch, |v| {
            if v >= 8 {
                return OffsetFetchRequest::default().with_groups(vec![
                    offset_fetch_request::OffsetFetchRequestGroup::default()
                        .with_group_id(GroupId(s("g")))
                        .with_topics(Some(vec![
                            offset_fetch_request::OffsetFetchRequestTopics::default()
                                .with_name(t("t"))
                                .with_partition_indexes(vec![0, 1]),
                        ])),
                    offset_fetch_request::OffsetFetchRequestGroup::default()
                        .with_group_id(GroupId(s("h")))
                        .with_topics(None),
                ]);
            }
            OffsetFetchRequest::default().with_topics(Some(vec![
                offset_fetch_request::OffsetFetchRequestTopic::default()
                    .with_name(t("t"))
                    .with_partition_indexes(vec![0, 1]),
            ]))
        });
        covers(&mut seen, ApiKey::FindCoordinator, |v| {
            if v >= 4 {
                FindCoordinatorRequest::default().with_coordinator_keys(vec![s("g"), s("h")])
            } else {
                FindCoordinatorRequest::default().with_key(s("g"))
            }
        });
        covers(&mut seen, ApiKey::JoinGroup, |_| {
            JoinGroupRequest::default()
                .with_group_instance_id(None)
                .with_member_id(s("m"))
                .with_protocols(vec![
                    join_group_request::JoinGroupRequestProtocol::default()
                        .with_name(s("range"))
                        .with_metadata(Bytes::from_static(b"xyz")),
                ])
        });
        covers(&mut seen, ApiKey::SyncGroup, |v| {
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
        covers(&mut seen, ApiKey::Heartbeat, |_| {
            HeartbeatRequest::default().with_group_instance_id(None)
        });
        covers(&mut seen, ApiKey::LeaveGroup, |v| {
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
        covers(&mut seen, ApiKey::DescribeGroups, |_| {
            DescribeGroupsRequest::default().with_groups(vec![GroupId(s("a")), GroupId(s("b"))])
        });
        covers(&mut seen, ApiKey::ListGroups, |_| {
            ListGroupsRequest::default()
        });
        covers(&mut seen, ApiKey::ApiVersions, |v| {
            if v >= 3 {
                ApiVersionsRequest::default()
                    .with_client_software_name(s("x"))
                    .with_client_software_version(s("1"))
            } else {
                ApiVersionsRequest::default()
            }
        });
        covers(&mut seen, ApiKey::CreateTopics, |_| {
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
        covers(&mut seen, ApiKey::DeleteTopics, |v| {
            if v >= 6 {
                DeleteTopicsRequest::default().with_topics(vec![
                    delete_topics_request::DeleteTopicState::default().with_name(Some(t("a"))),
                ])
            } else {
                DeleteTopicsRequest::default().with_topic_names(vec![t("a"), t("b")])
            }
        });
        covers(&mut seen, ApiKey::DescribeConfigs, |_| {
            DescribeConfigsRequest::default().with_resources(vec![
                describe_configs_request::DescribeConfigsResource::default()
                    .with_resource_type(2)
                    .with_resource_name(s("t"))
                    .with_configuration_keys(Some(vec![s("retention.ms")])),
                describe_configs_request::DescribeConfigsResource::default()
                    .with_resource_type(4)
                    .with_resource_name(s("0"))
                    .with_configuration_keys(None),
            ])
        });
        covers(&mut seen, ApiKey::AlterConfigs, |_| {
            AlterConfigsRequest::default().with_resources(vec![
                alter_configs_request::AlterConfigsResource::default()
                    .with_resource_type(2)
                    .with_resource_name(s("t"))
                    .with_configs(vec![
                        alter_configs_request::AlterableConfig::default()
                            .with_name(s("retention.ms"))
                            .with_value(Some(s("1"))),
                        alter_configs_request::AlterableConfig::default()
                            .with_name(s("x"))
                            .with_value(None),
                    ]),
            ])
        });
        covers(&mut seen, ApiKey::IncrementalAlterConfigs, |_| {
            IncrementalAlterConfigsRequest::default().with_resources(vec![
                incremental_alter_configs_request::AlterConfigsResource::default()
                    .with_resource_type(2)
                    .with_resource_name(s("t"))
                    .with_configs(vec![
                        incremental_alter_configs_request::AlterableConfig::default()
                            .with_name(s("retention.ms"))
                            .with_config_operation(1)
                            .with_value(None),
                    ]),
            ])
        });
        covers(&mut seen, ApiKey::DeleteGroups, |_| {
            DeleteGroupsRequest::default().with_groups_names(vec![GroupId(s("a")), GroupId(s("b"))])
        });
        covers(&mut seen, ApiKey::DescribeCluster, |v| {
            DescribeClusterRequest::default()
                .with_include_cluster_authorized_operations(true)
                .with_endpoint_type(1)
                .with_include_fenced_brokers(v >= 2)
        });
        covers(&mut seen, ApiKey::DescribeAcls, |_| {
            DescribeAclsRequest::default()
                .with_resource_type_filter(1)
                .with_resource_name_filter(Some(s("t")))
                .with_principal_filter(None)
                .with_host_filter(Some(s("h")))
                .with_operation(1)
                .with_permission_type(1)
        });
        covers(&mut seen, ApiKey::DeleteRecords, |_| {
            DeleteRecordsRequest::default()
                .with_topics(vec![
                    delete_records_request::DeleteRecordsTopic::default()
                        .with_name(t("t"))
                        .with_partitions(vec![
                            delete_records_request::DeleteRecordsPartition::default()
                                .with_partition_index(1)
                                .with_offset(-1),
                        ]),
                ])
                .with_timeout_ms(100)
        });
        covers(&mut seen, ApiKey::CreatePartitions, |_| {
            CreatePartitionsRequest::default()
                .with_topics(vec![
                    create_partitions_request::CreatePartitionsTopic::default()
                        .with_name(t("t"))
                        .with_count(3)
                        .with_assignments(Some(vec![
                            create_partitions_request::CreatePartitionsAssignment::default()
                                .with_broker_ids(vec![0.into()]),
                        ])),
                    create_partitions_request::CreatePartitionsTopic::default()
                        .with_name(t("u"))
                        .with_count(2)
                        .with_assignments(None),
                ])
                .with_validate_only(true)
        });
        covers(&mut seen, ApiKey::OffsetDelete, |_| {
            OffsetDeleteRequest::default()
                .with_group_id(GroupId(s("g")))
                .with_topics(vec![
                    offset_delete_request::OffsetDeleteRequestTopic::default()
                        .with_name(t("t"))
                        .with_partitions(vec![
                            offset_delete_request::OffsetDeleteRequestPartition::default()
                                .with_partition_index(3),
                        ]),
                ])
        });
        covers(&mut seen, ApiKey::DescribeLogDirs, |_| {
            DescribeLogDirsRequest::default().with_topics(Some(vec![
                describe_log_dirs_request::DescribableLogDirTopic::default()
                    .with_topic(t("t"))
                    .with_partitions(vec![0, 1]),
            ]))
        });
        covers(&mut seen, ApiKey::DescribeLogDirs, |_| {
            DescribeLogDirsRequest::default().with_topics(None)
        });
        covers(&mut seen, ApiKey::DescribeProducers, |_| {
            DescribeProducersRequest::default().with_topics(vec![
                describe_producers_request::TopicRequest::default()
                    .with_name(t("t"))
                    .with_partition_indexes(vec![0, 2]),
            ])
        });
        covers(&mut seen, ApiKey::InitProducerId, |_| {
            InitProducerIdRequest::default().with_transactional_id(None)
        });
        covers(&mut seen, ApiKey::InitProducerId, |_| {
            InitProducerIdRequest::default()
                .with_transactional_id(Some(TransactionalId(s("tx"))))
                .with_transaction_timeout_ms(60_000)
        });
        covers(&mut seen, ApiKey::AddPartitionsToTxn, |v| {
            use add_partitions_to_txn_request::*;
            let topics = vec![
                AddPartitionsToTxnTopic::default()
                    .with_name(t("t"))
                    .with_partitions(vec![0, 1]),
                AddPartitionsToTxnTopic::default()
                    .with_name(t("u"))
                    .with_partitions(vec![3]),
            ];
            if v >= 4 {
                AddPartitionsToTxnRequest::default().with_transactions(vec![
                    AddPartitionsToTxnTransaction::default()
                        .with_transactional_id(TransactionalId(s("tx")))
                        .with_producer_id(ProducerId(7))
                        .with_verify_only(true)
                        .with_topics(topics),
                ])
            } else {
                AddPartitionsToTxnRequest::default()
                    .with_v3_and_below_transactional_id(TransactionalId(s("tx")))
                    .with_v3_and_below_producer_id(ProducerId(7))
                    .with_v3_and_below_topics(topics)
            }
        });
        covers(&mut seen, ApiKey::AddOffsetsToTxn, |_| {
            AddOffsetsToTxnRequest::default()
                .with_transactional_id(TransactionalId(s("tx")))
                .with_group_id(GroupId(s("g")))
        });
        covers(&mut seen, ApiKey::TxnOffsetCommit, |v| {
            use txn_offset_commit_request::*;
            let r = TxnOffsetCommitRequest::default()
                .with_transactional_id(TransactionalId(s("tx")))
                .with_group_id(GroupId(s("g")))
                .with_topics(vec![
                    TxnOffsetCommitRequestTopic::default()
                        .with_name(t("t"))
                        .with_partitions(vec![
                            TxnOffsetCommitRequestPartition::default()
                                .with_partition_index(1)
                                .with_committed_offset(9)
                                .with_committed_metadata(Some(s("meta"))),
                            TxnOffsetCommitRequestPartition::default()
                                .with_committed_metadata(None),
                        ]),
                ]);
            if v >= 3 {
                r.with_member_id(s("m"))
                    .with_group_instance_id(Some(s("i")))
            } else {
                r
            }
        });
        covers(&mut seen, ApiKey::EndTxn, |_| {
            EndTxnRequest::default()
                .with_transactional_id(TransactionalId(s("tx")))
                .with_committed(true)
        });
        covers(&mut seen, ApiKey::DescribeTransactions, |_| {
            DescribeTransactionsRequest::default()
                .with_transactional_ids(vec![TransactionalId(s("a")), TransactionalId(s("bb"))])
        });
        covers(&mut seen, ApiKey::ListTransactions, |v| {
            ListTransactionsRequest::default()
                .with_state_filters(vec![s("Ongoing")])
                .with_producer_id_filters(vec![ProducerId(1), ProducerId(2)])
                .with_duration_filter(if v >= 1 { 5 } else { -1 })
        });
        covers(&mut seen, ApiKey::SaslHandshake, |_| {
            SaslHandshakeRequest::default().with_mechanism(s("PLAIN"))
        });
        covers(&mut seen, ApiKey::SaslAuthenticate, |_| {
            SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from_static(b"\0u\0p"))
        });
        covers(&mut seen, ApiKey::ConsumerGroupHeartbeat, |v| {
            ConsumerGroupHeartbeatRequest::default()
                .with_group_id(GroupId(s("g")))
                .with_member_id(s("m"))
                .with_instance_id(Some(s("i")))
                .with_subscribed_topic_names(Some(vec![t("a"), t("b")]))
                .with_subscribed_topic_regex((v >= 1).then(|| s("a.*")))
                .with_server_assignor(Some(s("uniform")))
                .with_topic_partitions(Some(vec![
                    consumer_group_heartbeat_request::TopicPartitions::default()
                        .with_partitions(vec![0, 1]),
                ]))
        });
        covers(&mut seen, ApiKey::ConsumerGroupDescribe, |_| {
            ConsumerGroupDescribeRequest::default()
                .with_group_ids(vec![GroupId(s("g")), GroupId(s("h"))])
                .with_include_authorized_operations(true)
        });
        let served: std::collections::BTreeSet<i16> =
            apis::APIS.iter().map(|api| api.key as i16).collect();
        assert_eq!(seen, served, "every served API's layout is checked");
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
