//! Kafka's topic config names, both ways, with one meaning for every front end: a
//! created topic's `configs` (REST Proxy v3, the Kafka listener's CreateTopics) are
//! read with [`apply`], changed with [`alter`] (the Kafka listener's AlterConfigs and
//! IncrementalAlterConfigs), and described with [`describe`] (every standard config,
//! its value and where the value comes from); REST Proxy v2 reports the configs the log
//! acts on with [`kafka_configs`]. Values are read as Kafka's config parser reads them:
//! trimmed, a number a signed 64-bit one, a list comma-separated. Which configs the
//! log acts on and which it only keeps is the catalogue's
//! ([`topic_config_catalog`](crate::topic_config_catalog)).

use std::collections::BTreeMap;

use kafko_core::{CleanupPolicy, Compression, FsyncPolicy, TopicConfig};

use crate::topic_config_catalog::{self as catalog, ConfigType, Handling, KafkaTopicConfig};

/// Kafka's name of a codec (`compression.type`).
pub fn compression_name(c: Compression) -> &'static str {
    match c {
        Compression::Producer => "producer",
        Compression::None => "uncompressed",
        Compression::Gzip => "gzip",
        Compression::Snappy => "snappy",
        Compression::Lz4 => "lz4",
        Compression::Zstd => "zstd",
    }
}

/// A topic's configuration under Kafka's names, values as strings (as Kafka reports
/// them): an unbounded retention is `-1`.
pub fn kafka_configs(c: &TopicConfig) -> BTreeMap<&'static str, String> {
    let or_unbounded = |v: Option<u64>| v.map_or_else(|| "-1".to_owned(), |v| v.to_string());
    BTreeMap::from([
        (
            "cleanup.policy",
            cleanup_policy_name(c.cleanup_policy).to_owned(),
        ),
        (
            "compression.type",
            compression_name(c.compression).to_owned(),
        ),
        ("delete.retention.ms", c.delete_retention_ms.to_string()),
        ("max.message.bytes", c.max_record_bytes.to_string()),
        ("min.compaction.lag.ms", c.min_compaction_lag_ms.to_string()),
        ("retention.bytes", or_unbounded(c.retention_bytes)),
        ("retention.ms", or_unbounded(c.retention_ms)),
        ("segment.bytes", c.segment_bytes.to_string()),
        ("segment.ms", c.segment_ms.to_string()),
    ])
}

fn cleanup_policy_name(p: CleanupPolicy) -> &'static str {
    match p {
        CleanupPolicy::Delete => "delete",
        CleanupPolicy::Compact => "compact",
        CleanupPolicy::CompactDelete => "compact,delete",
    }
}

/// Applies one Kafka topic config to a kafko one: a config the log acts on changes it
/// (and is marked as set), any other standard config is checked and kept as set. The
/// message of an error is Kafka's (an unknown name, or `Invalid value V for
/// configuration N: why`); every front end answers it as its invalid-config error
/// (Kafka's INVALID_CONFIG).
///
/// The meanings, Kafka's: `retention.ms` is -1 (unlimited) or more, as Kafka's
/// `atLeast(-1)` validator; `retention.bytes` is unlimited when negative, as Kafka's
/// size check reads it; `min.compaction.lag.ms`, `delete.retention.ms`,
/// `segment.bytes` and `max.message.bytes` are at least 0 (the core's own ranges
/// apply after); `cleanup.policy` is a list of `delete` and `compact`, each item
/// trimmed, one of them or both; `flush.messages` 1 fsyncs every write and `flush.ms`
/// fsyncs that often (0: every write), their default (`i64::MAX`) leaves it to the OS;
/// a null value is refused, as Kafka's controller does.
///
/// # Errors
/// The message to answer with.
pub fn apply(config: &mut TopicConfig, name: &str, value: Option<&str>) -> Result<(), String> {
    let Some(raw) = value else {
        return Err(format!(
            "Null value not supported for topic configs: {name}"
        ));
    };
    let entry = catalog::find(name).ok_or_else(|| format!("Unknown topic config name: {name}"))?;
    match entry.handling {
        Handling::Honoured => {
            apply_honoured(config, name, raw)?;
            config.client.overridden.insert(entry.name.to_owned());
        }
        Handling::Stored(check) => {
            let kept = check
                .normalize(raw.trim())
                .map_err(|why| format!("Invalid value {raw} for configuration {name}: {why}"))?;
            config.client.stored.insert(entry.name.to_owned(), kept);
        }
    }
    Ok(())
}

/// Applies a config the log acts on.
fn apply_honoured(config: &mut TopicConfig, name: &str, raw: &str) -> Result<(), String> {
    let value = raw.trim();
    let invalid = |why: &str| format!("Invalid value {raw} for configuration {name}: {why}");
    let long = || {
        value
            .parse::<i64>()
            .map_err(|_| invalid("Not a number of type LONG"))
    };
    let at_least_zero = |n: i64| u64::try_from(n).map_err(|_| invalid("Value must be at least 0"));
    match name {
        "cleanup.policy" => {
            config.cleanup_policy = cleanup_policy(value)
                .ok_or_else(|| invalid("one of delete and compact, or both (compact,delete)"))?
        }
        "compression.type" => {
            config.compression = match value {
                "producer" => Compression::Producer,
                "uncompressed" | "none" => Compression::None,
                "gzip" => Compression::Gzip,
                "snappy" => Compression::Snappy,
                "lz4" => Compression::Lz4,
                "zstd" => Compression::Zstd,
                _ => {
                    return Err(invalid(
                        "one of producer, uncompressed, gzip, snappy, lz4 and zstd",
                    ));
                }
            }
        }
        "retention.ms" => {
            config.retention_ms = match long()? {
                -1 => None,
                n => Some(u64::try_from(n).map_err(|_| invalid("Value must be at least -1"))?),
            }
        }
        "retention.bytes" => config.retention_bytes = u64::try_from(long()?).ok(),
        "segment.bytes" => config.segment_bytes = at_least_zero(long()?)?,
        "segment.ms" => {
            config.segment_ms = match long()? {
                n if n < 1 => return Err(invalid("Value must be at least 1")),
                n => u64::try_from(n).map_err(|_| invalid("Value must be at least 1"))?,
            }
        }
        "max.message.bytes" => config.max_record_bytes = at_least_zero(long()?)?,
        "min.compaction.lag.ms" => config.min_compaction_lag_ms = at_least_zero(long()?)?,
        "delete.retention.ms" => config.delete_retention_ms = at_least_zero(long()?)?,
        "flush.messages" => {
            config.fsync = match long()? {
                1 => FsyncPolicy::Always,
                i64::MAX if config.fsync == FsyncPolicy::Always => FsyncPolicy::Never,
                i64::MAX => config.fsync,
                n if n < 1 => return Err(invalid("Value must be at least 1")),
                _ => {
                    return Err(invalid(
                        "kafko fsyncs every write (1), by time (flush.ms) or as the OS does (9223372036854775807)",
                    ));
                }
            }
        }
        "flush.ms" => {
            config.fsync = match at_least_zero(long()?)? {
                0 => FsyncPolicy::Always,
                n if n == i64::MAX as u64 => match config.fsync {
                    FsyncPolicy::IntervalMs { .. } => FsyncPolicy::Never,
                    other => other,
                },
                interval_ms => FsyncPolicy::IntervalMs { interval_ms },
            }
        }
        other => return Err(format!("Unknown topic config name: {other}")),
    }
    Ok(())
}

/// The value of the standard config `entry` in `config`, as Kafka reports it.
fn value_of(config: &TopicConfig, entry: &KafkaTopicConfig) -> String {
    match entry.handling {
        Handling::Stored(_) => config
            .client
            .stored
            .get(entry.name)
            .map_or_else(|| entry.default.to_owned(), Clone::clone),
        Handling::Honoured => match entry.name {
            "flush.messages" => match config.fsync {
                FsyncPolicy::Always => "1".to_owned(),
                _ => catalog::LONG_MAX.to_owned(),
            },
            "flush.ms" => match config.fsync {
                FsyncPolicy::IntervalMs { interval_ms } => interval_ms.to_string(),
                _ => catalog::LONG_MAX.to_owned(),
            },
            name => kafka_configs(config).remove(name).unwrap_or_default(),
        },
    }
}

/// Where a described value comes from (Kafka's config sources).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Set on the topic (DYNAMIC_TOPIC_CONFIG).
    Topic,
    /// The server's default topic configuration, from its flags (STATIC_BROKER_CONFIG).
    Server,
    /// kafko's built-in default (DEFAULT_CONFIG).
    Default,
}

/// A value a config takes at one level, most specific first (Kafka's synonyms).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Synonym {
    /// The config's name at that level (the topic's, or the broker's synonym).
    pub name: &'static str,
    /// Its value there.
    pub value: String,
    /// The level.
    pub source: Source,
}

/// One standard config of a topic, described.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Described {
    /// Its name.
    pub name: &'static str,
    /// Its type.
    pub ty: ConfigType,
    /// The value in effect.
    pub value: String,
    /// Where the value comes from.
    pub source: Source,
    /// Every level that gives it a value, most specific first.
    pub synonyms: Vec<Synonym>,
}

/// Every standard topic config of a topic with `config`, created on a server whose
/// default topic configuration is `server_default`, in the catalogue's order. A config
/// is the topic's own when it was set by name, or when its value differs from the
/// server's default (changed through `/v1`).
pub fn describe(config: &TopicConfig, server_default: &TopicConfig) -> Vec<Described> {
    let builtin = TopicConfig::default();
    catalog::CATALOG
        .iter()
        .map(|entry| {
            let value = value_of(config, entry);
            let server = value_of(server_default, entry);
            let default = value_of(&builtin, entry);
            let own = config.client.is_set(entry.name) || value != server;
            let mut synonyms = Vec::new();
            if own {
                synonyms.push(Synonym {
                    name: entry.name,
                    value: value.clone(),
                    source: Source::Topic,
                });
            }
            if let Some(broker) = entry.broker_synonym {
                if server != default {
                    synonyms.push(Synonym {
                        name: broker,
                        value: server.clone(),
                        source: Source::Server,
                    });
                }
                synonyms.push(Synonym {
                    name: broker,
                    value: default.clone(),
                    source: Source::Default,
                });
            }
            let source = if own {
                Source::Topic
            } else if server != default {
                Source::Server
            } else {
                Source::Default
            };
            Described {
                name: entry.name,
                ty: entry.ty,
                value,
                source,
                synonyms,
            }
        })
        .collect()
}

/// The broker configs that give topics their defaults (Kafka's broker synonyms:
/// `log.retention.ms`, `message.max.bytes`…), with the values of a server whose default
/// topic configuration is `server_default`: (name, value, type, whether the server's
/// flags set it rather than kafko's built-in default).
pub fn broker_defaults(
    server_default: &TopicConfig,
) -> Vec<(&'static str, String, ConfigType, bool)> {
    let builtin = TopicConfig::default();
    catalog::CATALOG
        .iter()
        .filter_map(|entry| {
            let broker = entry.broker_synonym?;
            let value = value_of(server_default, entry);
            let flagged = value != value_of(&builtin, entry);
            Some((broker, value, entry.ty, flagged))
        })
        .collect()
}

/// One change of IncrementalAlterConfigs (AlterConfigs' are all [`AlterOp::Set`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlterOp<'a> {
    /// Set the value.
    Set(Option<&'a str>),
    /// Back to the server's default.
    Delete,
    /// Add these comma-separated items to a list config (each once).
    Append(Option<&'a str>),
    /// Remove these comma-separated items from a list config.
    Subtract(Option<&'a str>),
}

/// `config` changed by `ops`, in order; with `replace` (AlterConfigs), every config not
/// named goes back to the server's default first, as Kafka's AlterConfigs replaces a
/// topic's whole set of configs. The partition count stays.
///
/// # Errors
/// Kafka's message for the first change refused: an unknown name, a value out of
/// range, a list operation on a config that is no list.
pub fn alter(
    config: &TopicConfig,
    server_default: &TopicConfig,
    replace: bool,
    ops: &[(&str, AlterOp<'_>)],
) -> Result<TopicConfig, String> {
    let mut next = if replace {
        TopicConfig {
            partitions: config.partitions,
            client: kafko_core::ClientConfigs::default(),
            ..server_default.clone()
        }
    } else {
        config.clone()
    };
    for (name, op) in ops {
        let entry =
            catalog::find(name).ok_or_else(|| format!("Unknown topic config name: {name}"))?;
        match *op {
            AlterOp::Set(value) => apply(&mut next, name, value)?,
            AlterOp::Delete => reset(&mut next, entry, server_default)?,
            AlterOp::Append(items) | AlterOp::Subtract(items) => {
                if entry.ty != ConfigType::List {
                    return Err(format!(
                        "Config value append is not allowed for config key: {name}"
                    ));
                }
                let items = items
                    .ok_or_else(|| format!("Null value not supported for topic configs: {name}"))?;
                let mut list: Vec<String> = split_list(&value_of(&next, entry));
                let change = split_list(items);
                if matches!(op, AlterOp::Append(_)) {
                    for item in change {
                        if !list.contains(&item) {
                            list.push(item);
                        }
                    }
                } else {
                    list.retain(|item| !change.contains(item));
                }
                apply(&mut next, name, Some(&list.join(",")))?;
            }
        }
    }
    Ok(next)
}

/// A list value's items, trimmed, empty ones left out.
fn split_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The config `entry` back to the server's default: no longer set on the topic.
fn reset(
    config: &mut TopicConfig,
    entry: &KafkaTopicConfig,
    server_default: &TopicConfig,
) -> Result<(), String> {
    match entry.handling {
        Handling::Stored(_) => {
            config.client.stored.remove(entry.name);
        }
        Handling::Honoured => {
            if matches!(entry.name, "flush.messages" | "flush.ms") {
                config.fsync = server_default.fsync;
            } else {
                apply_honoured(config, entry.name, &value_of(server_default, entry))?;
            }
            config.client.overridden.remove(entry.name);
        }
    }
    Ok(())
}

/// `cleanup.policy`'s list: each item trimmed, `delete`, `compact` or both, each once.
fn cleanup_policy(value: &str) -> Option<CleanupPolicy> {
    let (mut delete, mut compact) = (false, false);
    for item in value.split(',').map(str::trim) {
        let seen = match item {
            "delete" => &mut delete,
            "compact" => &mut compact,
            _ => return None,
        };
        if std::mem::replace(seen, true) {
            return None;
        }
    }
    match (delete, compact) {
        (true, false) => Some(CleanupPolicy::Delete),
        (false, true) => Some(CleanupPolicy::Compact),
        (true, true) => Some(CleanupPolicy::CompactDelete),
        (false, false) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Kafka config names kafko serves, in [`kafka_configs`]'s order.
    const NAMES: [&str; 9] = [
        "cleanup.policy",
        "compression.type",
        "delete.retention.ms",
        "max.message.bytes",
        "min.compaction.lag.ms",
        "retention.bytes",
        "retention.ms",
        "segment.bytes",
        "segment.ms",
    ];

    fn applied(name: &str, value: Option<&str>) -> Result<TopicConfig, String> {
        let mut c = TopicConfig::default();
        apply(&mut c, name, value).map(|()| c)
    }

    #[test]
    fn every_name_reported_reads_back_to_the_same_config() {
        let configs = [
            TopicConfig::default(),
            TopicConfig {
                retention_ms: None,
                retention_bytes: Some(1 << 20),
                cleanup_policy: CleanupPolicy::CompactDelete,
                compression: Compression::Zstd,
                min_compaction_lag_ms: 5_000,
                delete_retention_ms: 7,
                segment_bytes: 1 << 16,
                segment_ms: 3_600_000,
                max_record_bytes: 1000,
                ..TopicConfig::default()
            },
            TopicConfig {
                retention_ms: Some(0),
                retention_bytes: None,
                cleanup_policy: CleanupPolicy::Compact,
                compression: Compression::Lz4,
                ..TopicConfig::default()
            },
        ];
        for c in configs {
            let reported = kafka_configs(&c);
            assert_eq!(reported.keys().copied().collect::<Vec<_>>(), NAMES);
            let mut read = TopicConfig {
                partitions: c.partitions,
                ..TopicConfig::default()
            };
            // Start from values every name changes, so a name that does not read back fails.
            read.retention_ms = Some(1);
            read.retention_bytes = Some(1);
            read.min_compaction_lag_ms = 1;
            read.delete_retention_ms = 1;
            read.segment_ms = 1;
            for (name, value) in &reported {
                apply(&mut read, name, Some(value)).unwrap();
            }
            assert_eq!(read.client.overridden.len(), NAMES.len());
            read.client = c.client.clone();
            assert_eq!(read, c);
        }
    }

    #[test]
    fn retention_ms_is_minus_one_or_more() {
        assert_eq!(
            applied("retention.ms", Some("-1")).unwrap().retention_ms,
            None
        );
        assert_eq!(
            applied("retention.ms", Some(" 60000 "))
                .unwrap()
                .retention_ms,
            Some(60_000)
        );
        let e = applied("retention.ms", Some("-2")).unwrap_err();
        assert_eq!(
            e,
            "Invalid value -2 for configuration retention.ms: Value must be at least -1"
        );
    }

    #[test]
    fn a_negative_retention_bytes_is_unlimited() {
        assert_eq!(
            applied("retention.bytes", Some("-7"))
                .unwrap()
                .retention_bytes,
            None
        );
        assert_eq!(
            applied("retention.bytes", Some("9"))
                .unwrap()
                .retention_bytes,
            Some(9)
        );
    }

    #[test]
    fn compaction_times_are_served_and_never_negative() {
        let c = applied("min.compaction.lag.ms", Some("5000")).unwrap();
        assert_eq!(c.min_compaction_lag_ms, 5000);
        let c = applied("delete.retention.ms", Some("0")).unwrap();
        assert_eq!(c.delete_retention_ms, 0);
        assert!(applied("delete.retention.ms", Some("-1")).is_err());
        assert!(applied("min.compaction.lag.ms", Some("soon")).is_err());
    }

    #[test]
    fn cleanup_policy_is_a_list_of_trimmed_items() {
        let policy = |v: &str| applied("cleanup.policy", Some(v)).map(|c| c.cleanup_policy);
        assert_eq!(policy("delete"), Ok(CleanupPolicy::Delete));
        assert_eq!(policy(" compact "), Ok(CleanupPolicy::Compact));
        assert_eq!(policy("compact,delete"), Ok(CleanupPolicy::CompactDelete));
        assert_eq!(policy("delete , compact"), Ok(CleanupPolicy::CompactDelete));
        for bad in ["com pact", "", "delete,", "delete,delete", "gzip"] {
            assert!(policy(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn null_values_and_unknown_names_are_refused() {
        assert!(applied("segment.bytes", None).is_err());
        assert_eq!(
            applied("log.retention.ms", Some("1")).unwrap_err(),
            "Unknown topic config name: log.retention.ms"
        );
    }

    #[test]
    fn a_server_flag_is_the_static_source_and_a_set_value_the_topics_own() {
        let server = TopicConfig {
            compression: Compression::Zstd,
            ..TopicConfig::default()
        };
        let mut topic = server.clone();
        apply(&mut topic, "retention.ms", Some("604800000")).unwrap();
        let described = describe(&topic, &server);
        let get = |n: &str| described.iter().find(|d| d.name == n).unwrap();
        assert_eq!(get("compression.type").source, Source::Server);
        assert_eq!(
            get("compression.type").synonyms,
            vec![
                Synonym {
                    name: "compression.type",
                    value: "zstd".into(),
                    source: Source::Server
                },
                Synonym {
                    name: "compression.type",
                    value: "uncompressed".into(),
                    source: Source::Default
                },
            ]
        );
        // Set to its default value: still the topic's own.
        assert_eq!(get("retention.ms").source, Source::Topic);
        assert_eq!(get("segment.ms").source, Source::Default);
    }

    #[test]
    fn incremental_changes_append_subtract_and_delete() {
        let server = TopicConfig::default();
        let next = alter(
            &server,
            &server,
            false,
            &[
                ("cleanup.policy", AlterOp::Append(Some("compact,delete"))),
                (
                    "leader.replication.throttled.replicas",
                    AlterOp::Append(Some("0:0,1:0")),
                ),
                (
                    "leader.replication.throttled.replicas",
                    AlterOp::Subtract(Some("0:0")),
                ),
                ("flush.ms", AlterOp::Set(Some("250"))),
            ],
        )
        .unwrap();
        assert_eq!(next.cleanup_policy, CleanupPolicy::CompactDelete);
        assert_eq!(next.fsync, FsyncPolicy::IntervalMs { interval_ms: 250 });
        assert_eq!(
            next.client.stored["leader.replication.throttled.replicas"],
            "1:0"
        );
        let back = alter(
            &next,
            &server,
            false,
            &[
                ("cleanup.policy", AlterOp::Delete),
                ("flush.ms", AlterOp::Delete),
                ("leader.replication.throttled.replicas", AlterOp::Delete),
            ],
        )
        .unwrap();
        assert_eq!(back, server);
        assert!(
            alter(
                &server,
                &server,
                false,
                &[("retention.ms", AlterOp::Append(Some("1")))]
            )
            .is_err()
        );
        assert!(
            alter(
                &server,
                &server,
                false,
                &[("cleanup.policy", AlterOp::Subtract(Some("delete")))]
            )
            .is_err(),
            "an empty cleanup.policy"
        );
    }

    #[test]
    fn flush_settings_are_the_fsync_policy() {
        let fsync = |n: &str, v: &str| applied(n, Some(v)).map(|c| c.fsync);
        assert_eq!(fsync("flush.messages", "1"), Ok(FsyncPolicy::Always));
        assert_eq!(fsync("flush.ms", "0"), Ok(FsyncPolicy::Always));
        assert_eq!(
            fsync("flush.ms", "100"),
            Ok(FsyncPolicy::IntervalMs { interval_ms: 100 })
        );
        assert_eq!(fsync("flush.ms", catalog::LONG_MAX), Ok(FsyncPolicy::Never));
        assert!(fsync("flush.messages", "1000").is_err());
        assert!(fsync("flush.messages", "0").is_err());
    }
}
