//! The log administration APIs over the Kafka listener, black-box against the real
//! binary: DeleteRecords moves a partition's log start (durably: it survives SIGKILL,
//! and `/v1` and ListOffsets agree), deletes the segments below it and answers Kafka's
//! error codes; OffsetDelete deletes a group's committed offsets unless a live member
//! subscribes to the topic; DescribeLogDirs shows the data directory and the partitions'
//! sizes; DescribeProducers shows the idempotent producers that wrote to a partition;
//! CreatePartitions raises a topic's partition count (at once in Metadata, durably,
//! with keyed records routed over the new count). With a token, each needs
//! authentication.

mod common;

use bytes::Bytes;
use common::kafka::{
    Kafka, Rec, batch, create_topic, init_producer_id, join_group_request, list_offsets_request,
    name, produce_batch, s,
};
use common::{Server, client, get, get_json, post_json, problem, put_json};
use kafka_protocol::messages::create_partitions_request::{
    CreatePartitionsAssignment, CreatePartitionsTopic,
};
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::describe_log_dirs_request::DescribableLogDirTopic;
use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::{
    CreatePartitionsRequest, DeleteRecordsRequest, DescribeLogDirsRequest,
    DescribeProducersRequest, GroupId, MetadataRequest, OffsetCommitRequest, OffsetDeleteRequest,
    OffsetFetchRequest,
};
use serde_json::json;

const OFFSET_OUT_OF_RANGE: i16 = 1;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const POLICY_VIOLATION: i16 = 44;
const INVALID_PARTITIONS: i16 = 37;
const INVALID_REPLICA_ASSIGNMENT: i16 = 39;
const INVALID_REQUEST: i16 = 42;
const GROUP_ID_NOT_FOUND: i16 = 69;
const MEMBER_ID_REQUIRED: i16 = 79;
const GROUP_SUBSCRIBED_TO_TOPIC: i16 = 86;

async fn start(dir: &std::path::Path) -> Server {
    Server::start(dir, &["--kafka-bind", "127.0.0.1:0"]).await
}

/// DeleteRecords of `(topic, [(partition, offset)])` at `version`: per partition
/// `(error code, low watermark)`, in answer order.
async fn delete_records(
    k: &mut Kafka,
    topics: &[(&str, &[(i32, i64)])],
    version: i16,
) -> Vec<Vec<(i32, i16, i64)>> {
    let request = DeleteRecordsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(
            topics
                .iter()
                .map(|(t, ps)| {
                    DeleteRecordsTopic::default()
                        .with_name(name(t))
                        .with_partitions(
                            ps.iter()
                                .map(|(p, o)| {
                                    DeleteRecordsPartition::default()
                                        .with_partition_index(*p)
                                        .with_offset(*o)
                                })
                                .collect(),
                        )
                })
                .collect(),
        );
    k.call(&request, version)
        .await
        .topics
        .iter()
        .map(|t| {
            t.partitions
                .iter()
                .map(|p| (p.partition_index, p.error_code, p.low_watermark))
                .collect()
        })
        .collect()
}

/// ListOffsets (v7) of `timestamp` (−2 earliest, −1 latest) for partition `partition`.
async fn list_offset(k: &mut Kafka, topic: &str, partition: i32, timestamp: i64) -> i64 {
    let r = k
        .call(&list_offsets_request(topic, partition, timestamp), 7)
        .await;
    let p = &r.topics[0].partitions[0];
    assert_eq!(p.error_code, 0);
    p.offset
}

/// `/v1`'s log start offset of each partition of `topic`.
async fn log_starts(c: &reqwest::Client, srv: &Server, topic: &str) -> Vec<u64> {
    let d = get_json(c, srv, &format!("/v1/topics/{topic}")).await;
    d["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["log_start_offset"].as_u64().unwrap())
        .collect()
}

/// The segment files (`.log`) of one partition on disk.
fn segment_files(data: &std::path::Path, topic: &str, partition: u32) -> usize {
    std::fs::read_dir(data.join("topics").join(topic).join(partition.to_string()))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "log")
        })
        .count()
}

/// Produces `n` records of about 200 bytes to partition `partition` over `/v1`, ten
/// to an append (an append goes to one segment).
async fn fill(c: &reqwest::Client, srv: &Server, topic: &str, partition: u32, n: usize) {
    let value = "v".repeat(200);
    let path = format!("/v1/topics/{topic}/records");
    let mut left = n;
    while left > 0 {
        let records: Vec<_> = (0..left.min(10))
            .map(|_| json!({"partition": partition, "value": value}))
            .collect();
        left -= records.len();
        let r = post_json(c, srv, &path, &json!({ "records": records })).await;
        assert_eq!(r.status().as_u16(), 201);
    }
}

#[tokio::test]
async fn delete_records_moves_the_log_start_durably_and_deletes_the_segments_below_it() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("d");
    let mut srv = start(&data).await;
    let c = client();
    let r = put_json(
        &c,
        &srv,
        "/v1/topics/t",
        &json!({"partitions": 2, "segment_bytes": 4096}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 201);
    for p in 0..2 {
        fill(&c, &srv, "t", p, 100).await;
    }
    let segments_before = segment_files(&data, "t", 0);
    assert!(segments_before > 3, "{segments_before} segments");
    let mut k = Kafka::connect(&srv).await;

    let answer = delete_records(
        &mut k,
        &[("t", &[(0, 50), (1, -1), (7, 0)]), ("nope", &[(0, 0)])],
        2,
    )
    .await;
    assert_eq!(
        answer,
        vec![
            vec![(0, 0, 50), (1, 0, 100), (7, UNKNOWN_TOPIC_OR_PARTITION, -1)],
            vec![(0, UNKNOWN_TOPIC_OR_PARTITION, -1)],
        ]
    );
    // Past the high watermark, or a negative offset other than −1: nothing moves.
    let refused = delete_records(&mut k, &[("t", &[(0, 101), (1, -2)])], 0).await;
    assert_eq!(
        refused,
        vec![vec![
            (0, OFFSET_OUT_OF_RANGE, -1),
            (1, OFFSET_OUT_OF_RANGE, -1)
        ]]
    );
    // A start never moves back: the answer is the start as it is.
    assert_eq!(
        delete_records(&mut k, &[("t", &[(0, 10)])], 1).await,
        vec![vec![(0, 0, 50)]]
    );

    // `/v1`, ListOffsets and the files agree.
    assert_eq!(log_starts(&c, &srv, "t").await, vec![50, 100]);
    assert_eq!(list_offset(&mut k, "t", 0, -2).await, 50);
    assert_eq!(list_offset(&mut k, "t", 0, -1).await, 100);
    problem(
        get(&c, &srv, "/v1/topics/t/partitions/0/records/49").await,
        416,
        "offset_out_of_range",
    )
    .await;
    assert_eq!(
        get(&c, &srv, "/v1/topics/t/partitions/0/records/50")
            .await
            .status(),
        200
    );
    let segments_after = segment_files(&data, "t", 0);
    assert!(
        segments_after < segments_before,
        "{segments_after} of {segments_before} segments left"
    );
    assert_eq!(
        segment_files(&data, "t", 1),
        1,
        "only the active segment stays"
    );

    // Durable: a SIGKILL loses nothing of it.
    srv.sigkill().await;
    let srv = start(&data).await;
    let mut k = Kafka::connect(&srv).await;
    assert_eq!(log_starts(&c, &srv, "t").await, vec![50, 100]);
    assert_eq!(list_offset(&mut k, "t", 0, -2).await, 50);
    assert_eq!(list_offset(&mut k, "t", 1, -2).await, 100);
    assert_eq!(list_offset(&mut k, "t", 0, -1).await, 100);
    problem(
        get(&c, &srv, "/v1/topics/t/partitions/0/records/49").await,
        416,
        "offset_out_of_range",
    )
    .await;
    // The log goes on from where it was.
    fill(&c, &srv, "t", 1, 1).await;
    assert_eq!(list_offset(&mut k, "t", 1, -1).await, 101);
}

#[tokio::test]
async fn delete_records_is_a_policy_violation_on_a_compacted_topic() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = start(&tmp.path().join("d")).await;
    let mut k = Kafka::connect(&srv).await;
    assert_eq!(
        create_topic(&mut k, "c", 1, &[("cleanup.policy", Some("compact"))]).await,
        0
    );
    assert_eq!(
        delete_records(&mut k, &[("c", &[(0, 0)])], 2).await,
        vec![vec![(0, POLICY_VIOLATION, -1)]]
    );
    assert_eq!(
        create_topic(
            &mut k,
            "cd",
            1,
            &[("cleanup.policy", Some("compact,delete"))]
        )
        .await,
        0
    );
    assert_eq!(
        delete_records(&mut k, &[("cd", &[(0, -1)])], 2).await,
        vec![vec![(0, 0, 0)]]
    );
}

/// OffsetCommit (v8) of `offsets` of `topic` by a client that is no member.
async fn commit(k: &mut Kafka, group: &str, topic: &str, offsets: &[(i32, i64)]) {
    let request = OffsetCommitRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![
            OffsetCommitRequestTopic::default()
                .with_name(name(topic))
                .with_partitions(
                    offsets
                        .iter()
                        .map(|(p, o)| {
                            OffsetCommitRequestPartition::default()
                                .with_partition_index(*p)
                                .with_committed_offset(*o)
                        })
                        .collect(),
                ),
        ]);
    let r = k.call(&request, 8).await;
    for p in &r.topics[0].partitions {
        assert_eq!(p.error_code, 0);
    }
}

/// OffsetFetch (v7) of partitions 0 and 1 of `topic`: their committed offsets.
async fn committed(k: &mut Kafka, group: &str, topic: &str) -> Vec<i64> {
    let request = OffsetFetchRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_topics(Some(vec![
            OffsetFetchRequestTopic::default()
                .with_name(name(topic))
                .with_partition_indexes(vec![0, 1]),
        ]));
    let r = k.call(&request, 7).await;
    r.topics[0]
        .partitions
        .iter()
        .map(|p| p.committed_offset)
        .collect()
}

/// OffsetDelete of `topics`: the top-level error code and each partition's.
async fn offset_delete(
    k: &mut Kafka,
    group: &str,
    topics: &[(&str, &[i32])],
) -> (i16, Vec<(String, Vec<(i32, i16)>)>) {
    let request = OffsetDeleteRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_topics(
            topics
                .iter()
                .map(|(t, ps)| {
                    OffsetDeleteRequestTopic::default()
                        .with_name(name(t))
                        .with_partitions(
                            ps.iter()
                                .map(|p| {
                                    OffsetDeleteRequestPartition::default().with_partition_index(*p)
                                })
                                .collect(),
                        )
                })
                .collect(),
        );
    let r = k.call(&request, 0).await;
    let topics = r
        .topics
        .iter()
        .map(|t| {
            let rows = t
                .partitions
                .iter()
                .map(|p| (p.partition_index, p.error_code))
                .collect();
            (t.name.to_string(), rows)
        })
        .collect();
    (r.error_code, topics)
}

/// A consumer-protocol subscription (version 0) to `topics`.
fn subscription(topics: &[&str]) -> Bytes {
    let mut out = vec![0u8, 0];
    out.extend_from_slice(&(topics.len() as i32).to_be_bytes());
    for t in topics {
        out.extend_from_slice(&(t.len() as i16).to_be_bytes());
        out.extend_from_slice(t.as_bytes());
    }
    out.extend_from_slice(&(-1i32).to_be_bytes());
    Bytes::from(out)
}

#[tokio::test]
async fn offset_delete_deletes_committed_offsets_unless_a_live_member_subscribes() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("d");
    let mut srv = start(&data).await;
    let mut k = Kafka::connect(&srv).await;
    for t in ["a", "b"] {
        assert_eq!(create_topic(&mut k, t, 2, &[]).await, 0);
    }
    let c = client();
    fill(&c, &srv, "a", 0, 5).await;
    fill(&c, &srv, "a", 1, 5).await;
    commit(&mut k, "g", "a", &[(0, 3), (1, 4)]).await;
    assert_eq!(committed(&mut k, "g", "a").await, vec![3, 4]);

    // Partition 0 goes, partition 1 stays; one never committed, or named twice, is no
    // error; an unknown topic is.
    let (code, topics) = offset_delete(&mut k, "g", &[("a", &[0, 0, 9]), ("zz", &[0])]).await;
    assert_eq!(code, 0);
    assert_eq!(
        topics,
        vec![
            ("a".to_owned(), vec![(0, 0), (9, 0)]),
            ("zz".to_owned(), vec![(0, UNKNOWN_TOPIC_OR_PARTITION)]),
        ]
    );
    assert_eq!(committed(&mut k, "g", "a").await, vec![-1, 4]);
    let described = get_json(&c, &srv, "/v1/groups/g").await;
    assert!(
        !described.to_string().contains("\"committed_offset\":3"),
        "{described}"
    );

    // An unknown group.
    assert_eq!(
        offset_delete(&mut k, "nobody", &[("a", &[0])]).await,
        (GROUP_ID_NOT_FOUND, vec![])
    );

    // Durable: after a SIGKILL the deleted offset stays deleted.
    srv.sigkill().await;
    let srv = start(&data).await;
    let mut k = Kafka::connect(&srv).await;
    assert_eq!(committed(&mut k, "g", "a").await, vec![-1, 4]);

    // A live member subscribed to `a`: its offsets stay; `b`'s may go.
    commit(&mut k, "g", "b", &[(0, 0)]).await;
    let join =
        |member: &str| join_group_request("g", member, ("consumer", "range", subscription(&["a"])));
    let first = k.call(&join(""), 7).await;
    assert_eq!(first.error_code, MEMBER_ID_REQUIRED);
    let joined = k.call(&join(first.member_id.as_str()), 7).await;
    assert_eq!(joined.error_code, 0);
    let (code, topics) = offset_delete(&mut k, "g", &[("a", &[1]), ("b", &[0])]).await;
    assert_eq!(code, 0);
    assert_eq!(
        topics,
        vec![
            ("a".to_owned(), vec![(1, GROUP_SUBSCRIBED_TO_TOPIC)]),
            ("b".to_owned(), vec![(0, 0)]),
        ]
    );
    assert_eq!(committed(&mut k, "g", "a").await, vec![-1, 4]);
    assert_eq!(committed(&mut k, "g", "b").await, vec![-1, -1]);
    let _ = srv;
}

/// A partition in DescribeLogDirs: index, size, offset lag, future replica.
type LogDirRow = (i32, i64, i64, bool);

#[tokio::test]
async fn describe_log_dirs_shows_the_data_directory_and_partition_sizes() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("d");
    let srv = start(&data).await;
    let c = client();
    let mut k = Kafka::connect(&srv).await;
    assert_eq!(create_topic(&mut k, "t", 3, &[]).await, 0);
    assert_eq!(create_topic(&mut k, "u", 1, &[]).await, 0);
    fill(&c, &srv, "t", 1, 10).await;
    let sizes: Vec<u64> = get_json(&c, &srv, "/v1/topics/t").await["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["size_bytes"].as_u64().unwrap())
        .collect();
    assert!(sizes[1] > 2000, "{sizes:?}");
    let dir = std::fs::canonicalize(&data).unwrap();

    for version in 1..=4 {
        // Everything.
        let all = k
            .call(
                &DescribeLogDirsRequest::default().with_topics(None),
                version,
            )
            .await;
        assert_eq!(all.error_code, 0);
        assert_eq!(all.results.len(), 1);
        let result = &all.results[0];
        assert_eq!(result.error_code, 0);
        assert_eq!(
            std::fs::canonicalize(result.log_dir.as_str()).unwrap(),
            dir,
            "v{version}"
        );
        let mut topics: Vec<(String, Vec<LogDirRow>)> = result
            .topics
            .iter()
            .map(|t| {
                let rows = t
                    .partitions
                    .iter()
                    .map(|p| {
                        (
                            p.partition_index,
                            p.partition_size,
                            p.offset_lag,
                            p.is_future_key,
                        )
                    })
                    .collect();
                (t.name.to_string(), rows)
            })
            .collect();
        topics.sort();
        let t_rows: Vec<_> = (0..3)
            .map(|p| (p, sizes[p as usize] as i64, 0, false))
            .collect();
        assert_eq!(
            topics,
            vec![("t".into(), t_rows), ("u".into(), vec![(0, 0, 0, false)])]
        );
        if version >= 4 {
            assert!(
                result.total_bytes > 0 && result.usable_bytes > 0,
                "v{version}"
            );
            assert!(result.usable_bytes <= result.total_bytes);
        }

        // Partitions asked: those that exist, each once.
        let asked = DescribeLogDirsRequest::default().with_topics(Some(vec![
            DescribableLogDirTopic::default()
                .with_topic(name("t"))
                .with_partitions(vec![1, 1, 9]),
            DescribableLogDirTopic::default()
                .with_topic(name("nope"))
                .with_partitions(vec![0]),
        ]));
        let some = k.call(&asked, version).await;
        let topics = &some.results[0].topics;
        assert_eq!(topics.len(), 1, "v{version}");
        assert_eq!(topics[0].name.as_str(), "t");
        let rows: Vec<_> = topics[0]
            .partitions
            .iter()
            .map(|p| (p.partition_index, p.partition_size))
            .collect();
        assert_eq!(rows, vec![(1, sizes[1] as i64)], "v{version}");
    }
}

#[tokio::test]
async fn describe_producers_shows_the_idempotent_producers_of_a_partition() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = start(&tmp.path().join("d")).await;
    let mut k = Kafka::connect(&srv).await;
    assert_eq!(create_topic(&mut k, "t", 2, &[]).await, 0);
    let (id, epoch) = init_producer_id(&mut k).await;
    let rec = |ts| Rec {
        key: None,
        value: Some(b"v"),
        headers: vec![],
        timestamp: ts,
    };
    let first = batch(&[rec(1_000), rec(1_005)], 0, Some((id, epoch, 0)));
    assert_eq!(produce_batch(&mut k, "t", 0, first).await.0, 0);
    let second = batch(
        &[rec(2_000), rec(2_500), rec(2_100)],
        0,
        Some((id, epoch, 2)),
    );
    assert_eq!(produce_batch(&mut k, "t", 0, second).await.0, 0);

    let request = DescribeProducersRequest::default().with_topics(vec![
        TopicRequest::default()
            .with_name(name("t"))
            .with_partition_indexes(vec![0, 1, 5, 0]),
        TopicRequest::default()
            .with_name(name("nope"))
            .with_partition_indexes(vec![0]),
    ]);
    let r = k.call(&request, 0).await;
    assert_eq!(r.topics.len(), 2);
    let t = &r.topics[0];
    let rows: Vec<_> = t
        .partitions
        .iter()
        .map(|p| (p.partition_index, p.error_code, p.active_producers.len()))
        .collect();
    assert_eq!(
        rows,
        vec![(0, 0, 1), (1, 0, 0), (5, UNKNOWN_TOPIC_OR_PARTITION, 0)]
    );
    let producer = &t.partitions[0].active_producers[0];
    assert_eq!(producer.producer_id.0, id);
    assert_eq!(producer.producer_epoch, i32::from(epoch));
    assert_eq!(producer.last_sequence, 4);
    assert_eq!(producer.last_timestamp, 2_500);
    assert_eq!(producer.coordinator_epoch, -1);
    assert_eq!(producer.current_txn_start_offset, -1);
    assert_eq!(
        r.topics[1].partitions[0].error_code,
        UNKNOWN_TOPIC_OR_PARTITION
    );
}

/// A CreatePartitions entry: `topic` to `count`, with `assignments` (broker ids per new
/// partition) when given.
fn grow(topic: &str, count: i32, assignments: Option<&[&[i32]]>) -> CreatePartitionsTopic {
    CreatePartitionsTopic::default()
        .with_name(name(topic))
        .with_count(count)
        .with_assignments(assignments.map(|list| {
            list.iter()
                .map(|ids| {
                    CreatePartitionsAssignment::default()
                        .with_broker_ids(ids.iter().map(|&b| b.into()).collect())
                })
                .collect()
        }))
}

/// CreatePartitions at `version`: each answer's (name, error code).
async fn create_partitions(
    k: &mut Kafka,
    topics: Vec<CreatePartitionsTopic>,
    validate_only: bool,
    version: i16,
) -> Vec<(String, i16)> {
    let request = CreatePartitionsRequest::default()
        .with_timeout_ms(10_000)
        .with_validate_only(validate_only)
        .with_topics(topics);
    k.call(&request, version)
        .await
        .results
        .iter()
        .map(|r| (r.name.to_string(), r.error_code))
        .collect()
}

/// The partition count Metadata (v12) shows for `topic`.
async fn metadata_partitions(k: &mut Kafka, topic: &str) -> usize {
    let request = MetadataRequest::default().with_topics(Some(vec![
        MetadataRequestTopic::default().with_name(Some(name(topic))),
    ]));
    let r = k.call(&request, 12).await;
    assert_eq!(r.topics[0].error_code, 0);
    r.topics[0].partitions.len()
}

#[tokio::test]
async fn create_partitions_raises_the_count_durably_and_keys_route_over_it() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("d");
    let mut srv = start(&data).await;
    let c = client();
    let mut k = Kafka::connect(&srv).await;
    assert_eq!(create_topic(&mut k, "p", 2, &[]).await, 0);

    // Refusals, at every version; a topic named twice is answered once.
    for version in 0..=3 {
        let answer = create_partitions(
            &mut k,
            vec![
                grow("p", 2, None),
                grow("nope", 3, None),
                grow("d", 3, None),
                grow("d", 4, None),
            ],
            false,
            version,
        )
        .await;
        assert_eq!(
            answer,
            vec![
                ("p".into(), INVALID_PARTITIONS),
                ("nope".into(), UNKNOWN_TOPIC_OR_PARTITION),
                ("d".into(), INVALID_REQUEST),
            ],
            "v{version}"
        );
        for (wrong, code) in [
            (grow("p", 3, Some(&[&[1]])), INVALID_REPLICA_ASSIGNMENT),
            (grow("p", 4, Some(&[&[0]])), INVALID_REPLICA_ASSIGNMENT),
            (grow("p", 2000, None), INVALID_PARTITIONS),
        ] {
            let answer = create_partitions(&mut k, vec![wrong], false, version).await;
            assert_eq!(answer, vec![("p".into(), code)], "v{version}");
        }
    }
    // Fewer is refused too; validate_only checks without adding.
    assert_eq!(
        create_partitions(&mut k, vec![grow("p", 1, None)], false, 3).await,
        vec![("p".into(), INVALID_PARTITIONS)]
    );
    assert_eq!(
        create_partitions(&mut k, vec![grow("p", 4, None)], true, 3).await,
        vec![("p".into(), 0)]
    );
    assert_eq!(metadata_partitions(&mut k, "p").await, 2);

    // Raised: Metadata and `/v1` show the new partitions at once, and they take records.
    assert_eq!(
        create_partitions(&mut k, vec![grow("p", 4, Some(&[&[0], &[0]]))], false, 1).await,
        vec![("p".into(), 0)]
    );
    assert_eq!(metadata_partitions(&mut k, "p").await, 4);
    assert_eq!(
        get_json(&c, &srv, "/v1/topics/p").await["partitions"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    let rec = Rec {
        key: None,
        value: Some(b"three"),
        headers: vec![],
        timestamp: 1,
    };
    assert_eq!(
        produce_batch(&mut k, "p", 3, batch(&[rec], 0, None)).await,
        (0, 0)
    );

    // Keyed records route by murmur2 over the new count, as Kafka's partitioner does.
    let keys: Vec<String> = (0..40).map(|i| format!("key-{i}")).collect();
    let records: Vec<_> = keys
        .iter()
        .map(|k| json!({"key": k, "value": "v"}))
        .collect();
    let r = post_json(
        &c,
        &srv,
        "/v1/topics/p/records?answer=records",
        &json!({ "records": records }),
    )
    .await;
    assert_eq!(r.status().as_u16(), 201);
    let placed: Vec<u64> = common::json(r).await["offsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["partition"].as_u64().unwrap())
        .collect();
    let expected: Vec<u64> = keys
        .iter()
        .map(|k| u64::from(kafko_core::routing::partition_for_key(k.as_bytes(), 4)))
        .collect();
    assert_eq!(placed, expected);
    assert!(
        placed.iter().any(|&p| p >= 2),
        "some keys land on a new partition"
    );

    // Durable: a SIGKILL keeps the count and the new partitions' records.
    srv.sigkill().await;
    let srv = start(&data).await;
    let mut k = Kafka::connect(&srv).await;
    assert_eq!(metadata_partitions(&mut k, "p").await, 4);
    assert_eq!(
        get(&c, &srv, "/v1/topics/p/partitions/3/records/0")
            .await
            .status(),
        200
    );
    assert_eq!(
        list_offset(&mut k, "p", 3, -1).await,
        1 + placed.iter().filter(|&&p| p == 3).count() as i64
    );
}

#[tokio::test]
async fn create_partitions_respects_the_servers_partition_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(
        &tmp.path().join("d"),
        &["--kafka-bind", "127.0.0.1:0", "--max-partitions", "5"],
    )
    .await;
    let mut k = Kafka::connect(&srv).await;
    assert_eq!(create_topic(&mut k, "p", 2, &[]).await, 0);
    assert_eq!(create_topic(&mut k, "q", 2, &[]).await, 0);
    assert_eq!(
        create_partitions(&mut k, vec![grow("p", 4, None)], false, 3).await,
        vec![("p".into(), POLICY_VIOLATION)]
    );
    assert_eq!(
        create_partitions(&mut k, vec![grow("p", 3, None)], false, 3).await,
        vec![("p".into(), 0)]
    );
    assert_eq!(metadata_partitions(&mut k, "p").await, 3);
}

#[tokio::test]
async fn create_partitions_takes_up_a_partition_directory_a_crash_left_before_its_commit_point() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("d");
    let mut srv = start(&data).await;
    let mut k = Kafka::connect(&srv).await;
    assert_eq!(create_topic(&mut k, "p", 2, &[]).await, 0);
    srv.sigkill().await;
    // What a raise to 3 leaves when it dies before `topic.json` names 3 partitions.
    std::fs::create_dir(data.join("topics").join("p").join("2")).unwrap();
    let srv = start(&data).await;
    let mut k = Kafka::connect(&srv).await;
    assert_eq!(metadata_partitions(&mut k, "p").await, 2);
    assert_eq!(
        create_partitions(&mut k, vec![grow("p", 3, None)], false, 3).await,
        vec![("p".into(), 0)]
    );
    let rec = Rec {
        key: None,
        value: Some(b"two"),
        headers: vec![],
        timestamp: 1,
    };
    assert_eq!(
        produce_batch(&mut k, "p", 2, batch(&[rec], 0, None)).await,
        (0, 0)
    );
    assert_eq!(list_offset(&mut k, "p", 2, -1).await, 1);
}

#[tokio::test]
async fn offset_delete_refuses_a_live_group_of_another_protocol_type() {
    const NON_EMPTY_GROUP: i16 = 68;
    let tmp = tempfile::tempdir().unwrap();
    let srv = start(&tmp.path().join("d")).await;
    let mut k = Kafka::connect(&srv).await;
    assert_eq!(create_topic(&mut k, "a", 1, &[]).await, 0);
    let join = |member: &str| {
        let opaque = Bytes::from_static(b"opaque");
        join_group_request("workers", member, ("connect", "sessioned", opaque))
    };
    let first = k.call(&join(""), 7).await;
    let joined = k.call(&join(first.member_id.as_str()), 7).await;
    assert_eq!(joined.error_code, 0);
    assert_eq!(
        offset_delete(&mut k, "workers", &[("a", &[0])]).await,
        (NON_EMPTY_GROUP, vec![])
    );
}

#[tokio::test]
async fn with_a_token_the_log_admin_apis_need_authentication() {
    use kafka_protocol::messages::{SaslAuthenticateRequest, SaslHandshakeRequest};
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start_env(
        &tmp.path().join("d"),
        &["--kafka-bind", "127.0.0.1:0"],
        &[("KAFKO_AUTH_TOKEN", "s3cret")],
    )
    .await;
    let login = async |k: &mut Kafka| {
        let handshake = SaslHandshakeRequest::default().with_mechanism(s("PLAIN"));
        assert_eq!(k.call(&handshake, 1).await.error_code, 0);
        let plain = SaslAuthenticateRequest::default()
            .with_auth_bytes(Bytes::from_static(b"\0user\0s3cret"));
        assert_eq!(k.call(&plain, 2).await.error_code, 0);
    };
    let mut k = Kafka::connect(&srv).await;
    login(&mut k).await;
    assert_eq!(create_topic(&mut k, "t", 1, &[]).await, 0);
    let rec = Rec {
        key: None,
        value: Some(b"v"),
        headers: vec![],
        timestamp: 1,
    };
    assert_eq!(
        produce_batch(&mut k, "t", 0, batch(&[rec], 0, None))
            .await
            .0,
        0
    );

    // Before authentication each of them closes the connection, and changes nothing.
    let deletes = DeleteRecordsRequest::default()
        .with_timeout_ms(1000)
        .with_topics(vec![
            DeleteRecordsTopic::default()
                .with_name(name("t"))
                .with_partitions(vec![
                    DeleteRecordsPartition::default()
                        .with_partition_index(0)
                        .with_offset(-1),
                ]),
        ]);
    let raises = CreatePartitionsRequest::default()
        .with_timeout_ms(1000)
        .with_topics(vec![grow("t", 2, None)]);
    let mut anonymous = Kafka::connect(&srv).await;
    anonymous.send(&deletes, 2, &[]).await;
    assert!(anonymous.closed_by_server().await);
    let mut anonymous = Kafka::connect(&srv).await;
    anonymous.send(&raises, 3, &[]).await;
    assert!(anonymous.closed_by_server().await);
    let mut anonymous = Kafka::connect(&srv).await;
    anonymous
        .send(&DescribeLogDirsRequest::default().with_topics(None), 4, &[])
        .await;
    assert!(anonymous.closed_by_server().await);
    assert_eq!(list_offset(&mut k, "t", 0, -2).await, 0);
    assert_eq!(metadata_partitions(&mut k, "t").await, 1);

    // Logged in, they are served.
    assert_eq!(
        delete_records(&mut k, &[("t", &[(0, -1)])], 2).await,
        vec![vec![(0, 0, 1)]]
    );
    assert_eq!(
        create_partitions(&mut k, vec![grow("t", 2, None)], false, 3).await,
        vec![("t".into(), 0)]
    );
}
