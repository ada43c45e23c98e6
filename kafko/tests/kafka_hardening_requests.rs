//! Hostile requests to the Kafka listener's request decoding and its metadata, admin and
//! offsets APIs, against the real binary: each attack is answered within bounds of CPU
//! and memory (printed, and asserted), and bystanders are served afterwards.

mod common;

use std::time::Instant;

use bytes::{BufMut, BytesMut};
use common::kafka::{Kafka, Rec, assert_bystanders_served, batch, name, produce_batch};
use common::{Server, cpu_seconds, memory_mib};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    CreateTopicsRequest, DeleteTopicsRequest, ListOffsetsRequest, MetadataRequest,
};

async fn start(dir: &std::path::Path, extra: &[&str]) -> Server {
    let mut args = vec!["--kafka-bind", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    Server::start(dir, &args).await
}

/// Creates topics of `partitions` partitions each over Kafka, in one request.
async fn create_topics(k: &mut Kafka, names: &[String], partitions: i32) {
    let request = CreateTopicsRequest::default()
        .with_timeout_ms(60_000)
        .with_topics(
            names
                .iter()
                .map(|n| {
                    CreatableTopic::default()
                        .with_name(name(n))
                        .with_num_partitions(partitions)
                        .with_replication_factor(-1)
                })
                .collect(),
        );
    let response = k.call(&request, 7).await;
    for t in &response.topics {
        assert_eq!(
            t.error_code, 0,
            "creating {:?}: {:?}",
            t.name, t.error_message
        );
    }
}

/// CPU seconds and wall time the server spent on `attack`, printed under `label`.
async fn measured<T>(s: &Server, label: &str, attack: impl Future<Output = T>) -> (T, f64) {
    let cpu = cpu_seconds(s.pid());
    let wall = Instant::now();
    let out = attack.await;
    let spent = cpu_seconds(s.pid()) - cpu;
    let (rss, peak) = memory_mib(s.pid());
    eprintln!(
        "{label}: {spent:.2} s of CPU, {:.2} s wall, RSS {rss} MiB (peak {peak} MiB)",
        wall.elapsed().as_secs_f64()
    );
    (out, spent)
}

// ---------------------------------------------------------------- Metadata

/// Metadata v1 naming one 1,024-partition topic 50,000 times (a 300 KB request) is
/// answered with that topic once, as Kafka answers the set of names: the answer and the
/// work follow the distinct names, not the listing.
#[tokio::test]
async fn metadata_naming_one_large_topic_50000_times_answers_it_once() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("d"), &[]).await;
    let mut k = Kafka::connect(&s).await;
    create_topics(&mut k, &["wide".to_owned()], 1024).await;
    let request = MetadataRequest::default().with_topics(Some(
        (0..50_000)
            .map(|_| MetadataRequestTopic::default().with_name(Some(name("wide"))))
            .chain([MetadataRequestTopic::default().with_name(Some(name("absent")))])
            .collect(),
    ));
    let (response, cpu) = measured(&s, "metadata x50000", k.call(&request, 1)).await;
    assert_eq!(response.topics.len(), 2, "each distinct name once");
    let wide = &response.topics[0];
    assert_eq!((wide.error_code, wide.partitions.len()), (0, 1024));
    // Metadata v1 auto-creates, as Kafka before v4 did: the unknown name is created.
    assert_eq!(
        response.topics[1].name.as_deref().map(|n| n.as_str()),
        Some("absent")
    );
    let (_, peak) = memory_mib(s.pid());
    assert!(cpu < 2.0, "{cpu} s of CPU");
    assert!(peak < 300, "peak RSS {peak} MiB");
    assert_bystanders_served(&s).await;
}

/// Metadata v12 by topic id and DeleteTopics v6 by topic id cost one map probe per
/// distinct id: 4,000 ids (a 72 KB request) against 500 topics.
#[tokio::test]
async fn lookups_by_topic_id_cost_one_probe_per_distinct_id() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("d"), &[]).await;
    let mut k = Kafka::connect(&s).await;
    let names: Vec<String> = (0..500).map(|i| format!("t{i:04}")).collect();
    for chunk in names.chunks(100) {
        create_topics(&mut k, chunk, 1).await;
    }
    let all = k
        .call(&MetadataRequest::default().with_topics(None), 12)
        .await;
    // Every topic, and the internal `__consumer_offsets` after them.
    assert_eq!(all.topics.len(), 501);
    assert!(all.topics[500].is_internal);
    let known = all.topics[7].topic_id;
    let known_name = all.topics[7].name.clone();
    let unknown = |i: u128| uuid::Uuid::from_u128(0x5eed_0000_0000 + i);
    // 4,000 distinct unknown ids, and one known id listed twice.
    let mut topics: Vec<MetadataRequestTopic> = (0..4_000)
        .map(|i| {
            MetadataRequestTopic::default()
                .with_name(None)
                .with_topic_id(unknown(i))
        })
        .collect();
    topics.push(
        MetadataRequestTopic::default()
            .with_name(None)
            .with_topic_id(known),
    );
    topics.push(
        MetadataRequestTopic::default()
            .with_name(None)
            .with_topic_id(known),
    );
    let request = MetadataRequest::default().with_topics(Some(topics));
    let (response, metadata_cpu) = measured(&s, "metadata v12 by 4,002 ids", async {
        k.call(&request, 12).await
    })
    .await;
    assert_eq!(response.topics.len(), 4_001, "each distinct id once");
    assert!(response.topics[..4_000].iter().all(|t| t.error_code == 100));
    let found = &response.topics[4_000];
    assert_eq!((found.error_code, &found.name), (0, &known_name));
    assert_eq!(found.topic_id, known);
    // DeleteTopics v6: the same unknown ids, and the known one listed twice (Kafka:
    // INVALID_REQUEST, "Duplicate topic id.", not deleted).
    let mut targets: Vec<DeleteTopicState> = (0..4_000)
        .map(|i| DeleteTopicState::default().with_topic_id(unknown(i)))
        .collect();
    targets.push(DeleteTopicState::default().with_topic_id(known));
    targets.push(DeleteTopicState::default().with_topic_id(known));
    let request = DeleteTopicsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(targets);
    let (response, delete_cpu) = measured(&s, "delete-topics v6 by 4,002 ids", async {
        k.call(&request, 6).await
    })
    .await;
    assert_eq!(response.responses.len(), 4_001);
    assert!(
        response.responses[..4_000]
            .iter()
            .all(|t| t.error_code == 100)
    );
    assert_eq!(response.responses[4_000].error_code, 42);
    // Listed once, the known id deletes its topic.
    let request = DeleteTopicsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![DeleteTopicState::default().with_topic_id(known)]);
    let response = k.call(&request, 6).await;
    assert_eq!(response.responses[0].error_code, 0);
    assert_eq!(response.responses[0].name, known_name);
    let all = k
        .call(&MetadataRequest::default().with_topics(None), 12)
        .await;
    assert_eq!(all.topics.len(), 499 + 1);
    assert!(metadata_cpu < 0.5, "{metadata_cpu} s of CPU");
    assert!(delete_cpu < 0.5, "{delete_cpu} s of CPU");
    assert_bystanders_served(&s).await;
}

// ---------------------------------------------------------------- tagged fields

/// A Metadata v12 frame body (all topics) whose top level carries `tags` tagged
/// fields, each of tag `first + i` and no bytes.
fn metadata_with_tagged_fields(first: u32, tags: u32) -> BytesMut {
    fn uvarint(out: &mut BytesMut, mut v: u32) {
        while v >= 0x80 {
            out.put_u8((v as u8 & 0x7f) | 0x80);
            v >>= 7;
        }
        out.put_u8(v as u8);
    }
    let mut body = BytesMut::new();
    body.put_i16(3); // Metadata
    body.put_i16(12);
    body.put_i32(1);
    body.put_i16(-1); // no client id
    body.put_u8(0); // the header's tagged fields
    body.put_u8(0); // topics: null, all of them
    body.put_u8(0); // allow auto-creation
    body.put_u8(0); // include topic authorized operations
    uvarint(&mut body, tags);
    for i in 0..tags {
        uvarint(&mut body, first + i);
        body.put_u8(0);
    }
    body
}

/// 3 M unknown tagged fields in one request (12 MB) once took 222 MiB to decode: past
/// `--max-tagged-fields` the request is malformed and its connection closed, before the
/// decoder keeps any; a few unknown ones are still ignored, as Kafka ignores them.
#[tokio::test]
async fn a_flood_of_unknown_tagged_fields_is_refused_before_decoding() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("d"), &[]).await;
    let mut k = Kafka::connect(&s).await;
    k.write_frame(&metadata_with_tagged_fields(1000, 8)).await;
    let answer = k.read_frame().await;
    assert_eq!(
        &answer[..4],
        &1i32.to_be_bytes(),
        "a few unknown tags are ignored"
    );
    let (before, _) = memory_mib(s.pid());
    let attack = metadata_with_tagged_fields(1000, 3_000_000);
    eprintln!("attack frame: {} bytes", attack.len());
    let (closed, cpu) = measured(&s, "3 M tagged fields", async {
        let mut k = Kafka::connect(&s).await;
        k.write_frame(&attack).await;
        k.closed_by_server().await
    })
    .await;
    assert!(closed, "a malformed request closes its connection");
    let (_, peak) = memory_mib(s.pid());
    eprintln!("RSS before the attack {before} MiB, peak {peak} MiB");
    assert!(peak < before + 64, "peak RSS {peak} MiB from {before} MiB");
    assert!(cpu < 1.0, "{cpu} s of CPU");
    assert_bystanders_served(&s).await;
}

// ---------------------------------------------------------------- ListOffsets

fn list_offsets(topic: &str, entries: impl IntoIterator<Item = (i32, i64)>) -> ListOffsetsRequest {
    ListOffsetsRequest::default()
        .with_replica_id((-1).into())
        .with_topics(vec![
            ListOffsetsTopic::default()
                .with_name(name(topic))
                .with_partitions(
                    entries
                        .into_iter()
                        .map(|(p, ts)| {
                            ListOffsetsPartition::default()
                                .with_partition_index(p)
                                .with_timestamp(ts)
                        })
                        .collect(),
                ),
        ])
}

/// ListOffsets for the max timestamp (-3) listing one 10,000-record partition 1,000
/// times (12 KB) once re-read the partition per entry. As Kafka does, a partition listed
/// twice is answered INVALID_REQUEST and not looked up; and the lookup itself reads
/// about one batch (the segments' largest timestamps, then the time index), so one -3
/// for each of 16 such partitions is cheap too.
#[tokio::test]
async fn max_timestamp_lookups_cost_one_lookup_per_distinct_partition() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("d"), &[]).await;
    let mut k = Kafka::connect(&s).await;
    create_topics(&mut k, &["ts".to_owned()], 16).await;
    // 10,000 records per partition in 10 batches; the largest timestamp is at 4,321.
    let value: &'static [u8] = &[b'v'; 100];
    for partition in 0..16 {
        for b in 0..10 {
            let records: Vec<Rec> = (0..1000)
                .map(|i| {
                    let offset = b * 1000 + i;
                    Rec {
                        value: Some(value),
                        timestamp: if offset == 4321 {
                            9_000_000
                        } else {
                            1_000_000 + offset
                        },
                        ..Rec::default()
                    }
                })
                .collect();
            let (code, _) = produce_batch(&mut k, "ts", partition, batch(&records, 0, None)).await;
            assert_eq!(code, 0);
        }
    }
    let answer = k.call(&list_offsets("ts", [(3, -3)]), 7).await;
    let p = &answer.topics[0].partitions[0];
    assert_eq!((p.error_code, p.offset, p.timestamp), (0, 4321, 9_000_000));
    // One partition, 1,000 times.
    let request = list_offsets("ts", (0..1000).map(|_| (5, -3)));
    let (answer, duplicates_cpu) = measured(&s, "list-offsets -3 x1000", k.call(&request, 1)).await;
    let partitions = &answer.topics[0].partitions;
    assert_eq!(partitions.len(), 1000);
    assert!(
        partitions.iter().all(|p| p.error_code == 42),
        "INVALID_REQUEST"
    );
    // Every partition once.
    let request = list_offsets("ts", (0..16).map(|p| (p, -3)));
    let (answer, distinct_cpu) = measured(&s, "list-offsets -3 x16 partitions", async {
        k.call(&request, 7).await
    })
    .await;
    for p in &answer.topics[0].partitions {
        assert_eq!((p.error_code, p.offset, p.timestamp), (0, 4321, 9_000_000));
    }
    assert!(duplicates_cpu < 0.3, "{duplicates_cpu} s of CPU");
    assert!(distinct_cpu < 0.5, "{distinct_cpu} s of CPU");
    assert_bystanders_served(&s).await;
}

// ---------------------------------------------------------------- auto-creation

/// Metadata v1 auto-creating `n` new topics named `{prefix}{i}`: each name's error code.
async fn auto_create(k: &mut Kafka, prefix: &str, n: usize) -> Vec<i16> {
    let request = MetadataRequest::default().with_topics(Some(
        (0..n)
            .map(|i| MetadataRequestTopic::default().with_name(Some(name(&format!("{prefix}{i}")))))
            .collect(),
    ));
    let response = k.call(&request, 1).await;
    response.topics.iter().map(|t| t.error_code).collect()
}

/// The topic directories on disk.
fn topic_dirs(s: &Server) -> usize {
    std::fs::read_dir(s.dir.join("topics")).unwrap().count()
}

/// Topics the server lists.
/// The ordinary topics Metadata lists (not the internal `__consumer_offsets`).
async fn listed_topics(k: &mut Kafka) -> Vec<String> {
    let all = k
        .call(&MetadataRequest::default().with_topics(None), 1)
        .await;
    all.topics
        .iter()
        .filter(|t| !t.is_internal)
        .filter_map(|t| t.name.as_ref().map(|n| n.to_string()))
        .collect()
}

async fn delete_topics(k: &mut Kafka, names: &[String]) {
    let request = DeleteTopicsRequest::default()
        .with_timeout_ms(10_000)
        .with_topic_names(names.iter().map(|n| name(n)).collect());
    let response = k.call(&request, 4).await;
    assert!(response.responses.iter().all(|r| r.error_code == 0));
}

/// Metadata v1 auto-creating topics until the descriptors ran out once refused every
/// new topic server-wide. `--max-topics` and `--max-partitions` now default to the
/// descriptors kept for the log (at 512: 128, less 64 cached segments and 32), so the
/// flood stops at the limit (POLICY_VIOLATION, Kafka's policy refusal) with descriptors
/// to spare; a delete makes room again. `__consumer_offsets` is the internal topic, never
/// an ordinary one: a create of or a produce to it is INVALID_TOPIC_EXCEPTION.
#[tokio::test]
async fn auto_creation_stops_at_limits_derived_from_the_descriptors() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start_with_nofile(&tmp.path().join("d"), &["--kafka-bind", "127.0.0.1:0"], 512)
        .await;
    let mut k = Kafka::connect(&s).await;
    let (codes, cpu) = measured(&s, "metadata v1 naming 200 new topics", async {
        auto_create(&mut k, "flood", 200).await
    })
    .await;
    let created = codes.iter().filter(|&&c| c == 0).count();
    let refused = codes.iter().filter(|&&c| c == 44).count();
    eprintln!("created {created}, refused {refused} (POLICY_VIOLATION)");
    assert_eq!((created, refused), (32, 168), "{codes:?}");
    assert_eq!(topic_dirs(&s), 32, "one directory per topic, nothing else");
    assert!(cpu < 5.0, "{cpu} s of CPU");
    // The existing topics work; a delete makes room for a new one.
    let records = [Rec {
        value: Some(b"v"),
        timestamp: 1,
        ..Rec::default()
    }];
    assert_eq!(
        produce_batch(&mut k, "flood0", 0, batch(&records, 0, None))
            .await
            .0,
        0
    );
    delete_topics(&mut k, &["flood1".to_owned()]).await;
    assert_eq!(auto_create(&mut k, "later", 1).await, vec![0]);
    // Kafka's internal topic, with room for one more topic: not auto-created, refused
    // to create and to produce to.
    delete_topics(&mut k, &["flood2".to_owned()]).await;
    let request = MetadataRequest::default().with_topics(Some(vec![
        MetadataRequestTopic::default().with_name(Some(name("__consumer_offsets"))),
    ]));
    let internal = &k.call(&request, 1).await.topics[0];
    assert_eq!((internal.error_code, internal.is_internal), (0, true));
    assert!(!s.dir.join("topics/__consumer_offsets").exists());
    let request = CreateTopicsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![
            CreatableTopic::default()
                .with_name(name("__consumer_offsets"))
                .with_num_partitions(1)
                .with_replication_factor(-1),
        ]);
    assert_eq!(k.call(&request, 7).await.topics[0].error_code, 17);
    let produced = produce_batch(&mut k, "__consumer_offsets", 0, batch(&records, 0, None)).await;
    assert_eq!(produced.0, 17);
    assert!(!s.dir.join("topics/__consumer_offsets").exists());
    // The room was there.
    assert_eq!(auto_create(&mut k, "room", 1).await, vec![0]);
    assert_eq!(listed_topics(&mut k).await.len(), 32);
    assert_eq!(topic_dirs(&s), 32);
    assert_bystanders_served(&s).await;
}

/// Past the descriptors (limits raised by hand over a limit of 256), auto-created
/// topics fail with KAFKA_STORAGE_ERROR, and a failed creation leaves no directory
/// behind: the directories on disk are the topics served.
#[tokio::test]
async fn a_creation_failed_for_descriptors_leaves_no_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start_with_nofile(
        &tmp.path().join("d"),
        &[
            "--kafka-bind",
            "127.0.0.1:0",
            "--max-topics",
            "100000",
            "--max-partitions",
            "100000",
        ],
        256,
    )
    .await;
    let mut k = Kafka::connect(&s).await;
    let codes = auto_create(&mut k, "flood", 300).await;
    let created = codes.iter().filter(|&&c| c == 0).count();
    let failed = codes.iter().filter(|&&c| c == 56).count();
    eprintln!("created {created}, failed {failed} (KAFKA_STORAGE_ERROR)");
    assert!(failed > 0, "the descriptors ran out: {codes:?}");
    assert_eq!(created + failed, 300, "{codes:?}");
    // Room for the bystanders' connections.
    let listed = listed_topics(&mut k).await;
    assert_eq!(listed.len(), created);
    delete_topics(&mut k, &listed[..40]).await;
    assert_eq!(
        topic_dirs(&s),
        created - 40,
        "a failed creation left its directory"
    );
    assert_bystanders_served(&s).await;
}
