//! Topic and broker configs over the Kafka listener, black-box: DescribeConfigs lists
//! every standard topic config with its source and synonyms, CreateTopics accepts
//! them, AlterConfigs and IncrementalAlterConfigs change what `/v1` shows, and the
//! configs kept for Kafka clients survive a restart.

mod common;

use common::kafka::{Kafka, codes, create_topic, s};
use common::{Server, client, get_json, patch_json};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::describe_configs_response::DescribeConfigsResult;
use kafka_protocol::messages::{
    AlterConfigsRequest, DescribeConfigsRequest, IncrementalAlterConfigsRequest,
    alter_configs_request, incremental_alter_configs_request,
};
use kafko_service::topic_config_catalog::{CATALOG, Handling};
use serde_json::json;

const TOPIC: i8 = 2;
const BROKER: i8 = 4;
const DYNAMIC_TOPIC_CONFIG: i8 = 1;
const STATIC_BROKER_CONFIG: i8 = 4;
const DEFAULT_CONFIG: i8 = 5;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;

async fn start(dir: &std::path::Path, extra: &[&str]) -> Server {
    let mut args = vec!["--kafka-bind", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    Server::start(dir, &args).await
}

fn resource(ty: i8, name: &str, keys: Option<&[&str]>) -> DescribeConfigsResource {
    DescribeConfigsResource::default()
        .with_resource_type(ty)
        .with_resource_name(s(name))
        .with_configuration_keys(keys.map(|k| k.iter().map(|n| s(n)).collect()))
}

async fn describe(
    k: &mut Kafka,
    resources: Vec<DescribeConfigsResource>,
    version: i16,
) -> Vec<DescribeConfigsResult> {
    let request = DescribeConfigsRequest::default()
        .with_resources(resources)
        .with_include_synonyms(true);
    k.call(&request, version).await.results
}

/// The topic's configs: name → (value, source).
async fn topic_configs(
    k: &mut Kafka,
    topic: &str,
) -> std::collections::BTreeMap<String, (String, i8)> {
    let results = describe(k, vec![resource(TOPIC, topic, None)], 4).await;
    assert_eq!(results[0].error_code, 0, "{:?}", results[0].error_message);
    results[0]
        .configs
        .iter()
        .map(|c| {
            (
                c.name.to_string(),
                (
                    c.value
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_default(),
                    c.config_source,
                ),
            )
        })
        .collect()
}

async fn incremental(
    k: &mut Kafka,
    topic: &str,
    ops: &[(&str, i8, Option<&str>)],
    validate_only: bool,
) -> (i16, Option<String>) {
    let configs = ops
        .iter()
        .map(|(n, op, v)| {
            incremental_alter_configs_request::AlterableConfig::default()
                .with_name(s(n))
                .with_config_operation(*op)
                .with_value(v.map(s))
        })
        .collect();
    let request = IncrementalAlterConfigsRequest::default()
        .with_validate_only(validate_only)
        .with_resources(vec![
            incremental_alter_configs_request::AlterConfigsResource::default()
                .with_resource_type(TOPIC)
                .with_resource_name(s(topic))
                .with_configs(configs),
        ]);
    let r = k.call(&request, 1).await;
    let r = &r.responses[0];
    (
        r.error_code,
        r.error_message.as_ref().map(ToString::to_string),
    )
}

#[tokio::test]
async fn describe_configs_lists_every_topic_config_with_its_source_and_synonyms() {
    let tmp = tempfile::tempdir().unwrap();
    let s_ = start(&tmp.path().join("d"), &[]).await;
    let mut k = Kafka::connect(&s_).await;
    assert_eq!(
        create_topic(
            &mut k,
            "described",
            2,
            &[
                ("retention.ms", Some("60000")),
                ("min.insync.replicas", Some("2")),
                // Set to its default: still the topic's own, as in Kafka.
                ("segment.jitter.ms", Some("0")),
            ],
        )
        .await,
        0
    );
    for v in 1..=4 {
        let results = describe(&mut k, vec![resource(TOPIC, "described", None)], v).await;
        let configs = &results[0].configs;
        let names: Vec<&str> = configs.iter().map(|c| c.name.as_str()).collect();
        let catalog: Vec<&str> = CATALOG.iter().map(|c| c.name).collect();
        assert_eq!(names, catalog, "v{v}: every standard topic config");
        let get = |n: &str| configs.iter().find(|c| c.name.as_str() == n).unwrap();
        let retention = get("retention.ms");
        assert_eq!(retention.value.as_deref(), Some("60000"));
        assert_eq!(retention.config_source, DYNAMIC_TOPIC_CONFIG);
        assert!(!retention.read_only && !retention.is_sensitive);
        let synonyms: Vec<(&str, Option<&str>, i8)> = retention
            .synonyms
            .iter()
            .map(|s| (s.name.as_str(), s.value.as_deref(), s.source))
            .collect();
        assert_eq!(
            synonyms,
            vec![
                ("retention.ms", Some("60000"), DYNAMIC_TOPIC_CONFIG),
                ("log.retention.ms", Some("604800000"), DEFAULT_CONFIG),
            ],
            "v{v}"
        );
        let isr = get("min.insync.replicas");
        assert_eq!(
            (isr.value.as_deref(), isr.config_source),
            (Some("2"), DYNAMIC_TOPIC_CONFIG)
        );
        let jitter = get("segment.jitter.ms");
        assert_eq!(
            (jitter.value.as_deref(), jitter.config_source),
            (Some("0"), DYNAMIC_TOPIC_CONFIG)
        );
        let segment_ms = get("segment.ms");
        assert_eq!(
            (segment_ms.value.as_deref(), segment_ms.config_source),
            (Some("604800000"), DEFAULT_CONFIG)
        );
        if v >= 3 {
            assert_eq!(retention.config_type, 5, "LONG");
            assert_eq!(get("cleanup.policy").config_type, 7, "LIST");
        }
    }
    // A filter, a duplicate resource answered once, an unknown topic, an invalid name.
    let results = describe(
        &mut k,
        vec![
            resource(TOPIC, "described", Some(&["cleanup.policy", "no.such"])),
            resource(TOPIC, "described", Some(&["cleanup.policy"])),
            resource(TOPIC, "absent", None),
            resource(TOPIC, "bad/name", None),
        ],
        4,
    )
    .await;
    assert_eq!(results.len(), 3);
    let names: Vec<&str> = results[0].configs.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["cleanup.policy"]);
    assert_eq!(results[0].configs[0].value.as_deref(), Some("delete"));
    assert_eq!(results[1].error_code, UNKNOWN_TOPIC_OR_PARTITION);
    assert_eq!(results[2].error_code, codes::INVALID_TOPIC_EXCEPTION);
}

#[tokio::test]
async fn the_broker_reports_the_configs_clients_ask_with_kafkos_values() {
    let tmp = tempfile::tempdir().unwrap();
    let s_ = start(
        &tmp.path().join("d"),
        &["--default-partitions", "3", "--group-max-size", "50"],
    )
    .await;
    let mut k = Kafka::connect(&s_).await;
    let results = describe(&mut k, vec![resource(BROKER, "0", None)], 4).await;
    assert_eq!(results[0].error_code, 0);
    let get = |n: &str| {
        let c = results[0]
            .configs
            .iter()
            .find(|c| c.name.as_str() == n)
            .unwrap_or_else(|| panic!("{n} described"));
        assert!(c.read_only, "{n}");
        (c.value.as_deref().map(str::to_owned), c.config_source)
    };
    assert_eq!(
        get("num.partitions"),
        (Some("3".into()), STATIC_BROKER_CONFIG)
    );
    assert_eq!(
        get("group.max.size"),
        (Some("50".into()), STATIC_BROKER_CONFIG)
    );
    assert_eq!(
        get("log.retention.ms"),
        (Some("604800000".into()), DEFAULT_CONFIG)
    );
    assert_eq!(
        get("auto.create.topics.enable"),
        (Some("true".into()), DEFAULT_CONFIG)
    );
    assert_eq!(
        get("message.max.bytes"),
        (Some("1048576".into()), DEFAULT_CONFIG)
    );
    assert_eq!(get("default.replication.factor").0.as_deref(), Some("1"));
    assert_eq!(
        get("offsets.retention.minutes"),
        (Some("10080".into()), DEFAULT_CONFIG)
    );
    assert_eq!(
        get("log.dirs").0,
        Some(tmp.path().join("d").display().to_string())
    );
    // A filter; the cluster-wide default (no dynamic defaults); another broker id.
    let results = describe(
        &mut k,
        vec![
            resource(BROKER, "0", Some(&["log.segment.bytes"])),
            resource(BROKER, "", None),
            resource(BROKER, "7", None),
        ],
        1,
    )
    .await;
    assert_eq!(results[0].configs.len(), 1);
    assert_eq!(results[0].configs[0].value.as_deref(), Some("67108864"));
    assert_eq!((results[1].error_code, results[1].configs.len()), (0, 0));
    assert_eq!(results[2].error_code, codes::INVALID_REQUEST);
}

#[tokio::test]
async fn create_topics_takes_every_standard_config_and_refuses_unknown_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let s_ = start(&tmp.path().join("d"), &[]).await;
    let mut k = Kafka::connect(&s_).await;
    // Each standard config on its own topic, at a value other than its default where
    // one is accepted.
    for (i, c) in CATALOG.iter().enumerate() {
        let value = match c.name {
            "cleanup.policy" => "compact",
            "compression.type" => "zstd",
            "flush.messages" => "1",
            "max.message.bytes" => "2000",
            "segment.bytes" => "1048576",
            "min.cleanable.dirty.ratio" => "0.25",
            "message.timestamp.type" => "CreateTime",
            "remote.storage.enable" => "false",
            "follower.replication.throttled.replicas" | "leader.replication.throttled.replicas" => {
                "0:0"
            }
            _ => match (c.handling, c.default) {
                (Handling::Stored(_), "false") => "true",
                (Handling::Stored(_), "true") => "false",
                _ => "7",
            },
        };
        let topic = format!("c{i}");
        assert_eq!(
            create_topic(&mut k, &topic, 1, &[(c.name, Some(value))]).await,
            0,
            "{}={value}",
            c.name
        );
        let configs = topic_configs(&mut k, &topic).await;
        assert_eq!(
            configs[c.name],
            (value.to_owned(), DYNAMIC_TOPIC_CONFIG),
            "{}",
            c.name
        );
    }
    for (name, value) in [
        ("no.such.config", "1"),
        ("log.retention.ms", "1"),
        ("message.timestamp.type", "LogAppendTime"),
        ("remote.storage.enable", "true"),
        ("min.insync.replicas", "0"),
        ("unclean.leader.election.enable", "maybe"),
    ] {
        assert_eq!(
            create_topic(&mut k, "refused", 1, &[(name, Some(value))]).await,
            codes::INVALID_CONFIG,
            "{name}={value}"
        );
    }
}

#[tokio::test]
async fn alter_configs_take_effect_show_in_v1_and_survive_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let mut s_ = start(&dir, &[]).await;
    let c = client();
    let mut k = Kafka::connect(&s_).await;
    assert_eq!(create_topic(&mut k, "t", 1, &[]).await, 0);
    let v1 = async |s_: &Server| get_json(&c, s_, "/v1/topics/t").await["config"].clone();

    // SET takes effect, through the path /v1 uses.
    let set = [
        ("retention.ms", 0, Some("120000")),
        ("min.insync.replicas", 0, Some("2")),
    ];
    assert_eq!(incremental(&mut k, "t", &set, false).await.0, 0);
    assert_eq!(v1(&s_).await["retention_ms"], json!(120_000));
    // validate_only changes nothing; a bad value changes nothing either.
    let check = [("retention.ms", 0, Some("5"))];
    assert_eq!(incremental(&mut k, "t", &check, true).await.0, 0);
    let bad = [
        ("retention.ms", 0, Some("5")),
        ("segment.bytes", 0, Some("x")),
    ];
    assert_eq!(
        incremental(&mut k, "t", &bad, false).await.0,
        codes::INVALID_CONFIG
    );
    assert_eq!(v1(&s_).await["retention_ms"], json!(120_000));
    // APPEND and SUBTRACT on a list; a list operation on a number is refused.
    let append = [("cleanup.policy", 2, Some("compact"))];
    assert_eq!(incremental(&mut k, "t", &append, false).await.0, 0);
    assert_eq!(v1(&s_).await["cleanup_policy"], json!("compact_delete"));
    let subtract = [("cleanup.policy", 3, Some("delete"))];
    assert_eq!(incremental(&mut k, "t", &subtract, false).await.0, 0);
    assert_eq!(v1(&s_).await["cleanup_policy"], json!("compact"));
    let wrong = [("retention.ms", 2, Some("1"))];
    assert_eq!(
        incremental(&mut k, "t", &wrong, false).await.0,
        codes::INVALID_CONFIG
    );
    let unknown_op = [("retention.ms", 9, Some("1"))];
    assert_eq!(
        incremental(&mut k, "t", &unknown_op, false).await.0,
        codes::INVALID_REQUEST
    );
    let twice = [("retention.ms", 0, Some("1")), ("retention.ms", 1, None)];
    assert_eq!(
        incremental(&mut k, "t", &twice, false).await.0,
        codes::INVALID_REQUEST
    );
    assert_eq!(
        incremental(&mut k, "absent", &set, false).await.0,
        UNKNOWN_TOPIC_OR_PARTITION
    );

    // A change through /v1 shows as the topic's own config.
    let patched = patch_json(&c, &s_, "/v1/topics/t", &json!({"segment_bytes": 1 << 20})).await;
    assert!(patched.status().is_success());
    let configs = topic_configs(&mut k, "t").await;
    assert_eq!(
        configs["segment.bytes"],
        ("1048576".into(), DYNAMIC_TOPIC_CONFIG)
    );
    assert_eq!(
        configs["retention.ms"],
        ("120000".into(), DYNAMIC_TOPIC_CONFIG)
    );
    assert_eq!(
        configs["cleanup.policy"],
        ("compact".into(), DYNAMIC_TOPIC_CONFIG)
    );
    assert_eq!(
        configs["min.insync.replicas"],
        ("2".into(), DYNAMIC_TOPIC_CONFIG)
    );

    // Kept across a restart.
    assert!(s_.sigterm().await.success());
    s_ = start(&dir, &[]).await;
    let mut k = Kafka::connect(&s_).await;
    let after = topic_configs(&mut k, "t").await;
    assert_eq!(after, configs);

    // DELETE goes back to the default.
    let delete = [("retention.ms", 1, None), ("min.insync.replicas", 1, None)];
    assert_eq!(incremental(&mut k, "t", &delete, false).await.0, 0);
    let configs = topic_configs(&mut k, "t").await;
    assert_eq!(
        configs["retention.ms"],
        ("604800000".into(), DEFAULT_CONFIG)
    );
    assert_eq!(configs["min.insync.replicas"], ("1".into(), DEFAULT_CONFIG));
    assert_eq!(v1(&s_).await["retention_ms"], json!(604_800_000));

    // AlterConfigs replaces the whole set: what it does not name is back to default.
    let alter = AlterConfigsRequest::default().with_resources(vec![
        alter_configs_request::AlterConfigsResource::default()
            .with_resource_type(TOPIC)
            .with_resource_name(s("t"))
            .with_configs(vec![
                alter_configs_request::AlterableConfig::default()
                    .with_name(s("segment.ms"))
                    .with_value(Some(s("3600000"))),
            ]),
        alter_configs_request::AlterConfigsResource::default()
            .with_resource_type(BROKER)
            .with_resource_name(s("0"))
            .with_configs(vec![
                alter_configs_request::AlterableConfig::default()
                    .with_name(s("log.retention.ms"))
                    .with_value(Some(s("1"))),
            ]),
    ]);
    for v in 0..=2 {
        let r = k.call(&alter, v).await;
        assert_eq!(r.responses[0].error_code, 0, "AlterConfigs v{v}");
        assert_eq!(r.responses[1].error_code, codes::INVALID_REQUEST, "v{v}");
    }
    let configs = topic_configs(&mut k, "t").await;
    assert_eq!(
        configs["segment.ms"],
        ("3600000".into(), DYNAMIC_TOPIC_CONFIG)
    );
    assert_eq!(configs["cleanup.policy"], ("delete".into(), DEFAULT_CONFIG));
    assert_eq!(
        configs["segment.bytes"],
        ("67108864".into(), DEFAULT_CONFIG)
    );
    assert_eq!(v1(&s_).await["cleanup_policy"], json!("delete"));
}
