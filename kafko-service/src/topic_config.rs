//! Kafka's topic config names, both ways, with one meaning for every front end: a
//! created topic's `configs` (REST Proxy v3, the Kafka listener's CreateTopics) are
//! read with [`apply`], and a topic's configuration is reported under Kafka's names
//! (REST Proxy v2 and v3) by [`kafka_configs`]. Values are read as Kafka's config
//! parser reads them: trimmed, a number a signed 64-bit one, `cleanup.policy` a
//! comma-separated list.

use std::collections::BTreeMap;

use kafko_core::{CleanupPolicy, Compression, TopicConfig};

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
            match c.compression {
                Compression::None => "uncompressed",
                Compression::Lz4 => "lz4",
                Compression::Zstd => "zstd",
            }
            .to_owned(),
        ),
        ("delete.retention.ms", c.delete_retention_ms.to_string()),
        ("max.message.bytes", c.max_record_bytes.to_string()),
        ("min.compaction.lag.ms", c.min_compaction_lag_ms.to_string()),
        ("retention.bytes", or_unbounded(c.retention_bytes)),
        ("retention.ms", or_unbounded(c.retention_ms)),
        ("segment.bytes", c.segment_bytes.to_string()),
    ])
}

fn cleanup_policy_name(p: CleanupPolicy) -> &'static str {
    match p {
        CleanupPolicy::Delete => "delete",
        CleanupPolicy::Compact => "compact",
        CleanupPolicy::CompactDelete => "compact,delete",
    }
}

/// Applies one Kafka topic config to a kafko one. The message of an error is Kafka's
/// (an unknown name, or `Invalid value V for configuration N: why`); every front end
/// answers it as its invalid-config error (Kafka's INVALID_CONFIG).
///
/// The meanings, Kafka's: `retention.ms` is -1 (unlimited) or more, as Kafka's
/// `atLeast(-1)` validator; `retention.bytes` is unlimited when negative, as Kafka's
/// size check reads it; `min.compaction.lag.ms`, `delete.retention.ms`,
/// `segment.bytes` and `max.message.bytes` are at least 0 (the core's own ranges
/// apply after); `cleanup.policy` is a list of `delete` and `compact`, each item
/// trimmed, one of them or both; a null value is refused, as Kafka's controller does.
///
/// # Errors
/// The message to answer with.
pub fn apply(config: &mut TopicConfig, name: &str, value: Option<&str>) -> Result<(), String> {
    let Some(raw) = value else {
        return Err(format!(
            "Null value not supported for topic configs: {name}"
        ));
    };
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
                "uncompressed" | "producer" | "none" => Compression::None,
                "lz4" => Compression::Lz4,
                "zstd" => Compression::Zstd,
                _ => {
                    return Err(invalid(
                        "kafko stores uncompressed (none, producer), lz4 or zstd",
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
        "max.message.bytes" => config.max_record_bytes = at_least_zero(long()?)?,
        "min.compaction.lag.ms" => config.min_compaction_lag_ms = at_least_zero(long()?)?,
        "delete.retention.ms" => config.delete_retention_ms = at_least_zero(long()?)?,
        other => return Err(format!("Unknown topic config name: {other}")),
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
    const NAMES: [&str; 8] = [
        "cleanup.policy",
        "compression.type",
        "delete.retention.ms",
        "max.message.bytes",
        "min.compaction.lag.ms",
        "retention.bytes",
        "retention.ms",
        "segment.bytes",
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
            for (name, value) in &reported {
                apply(&mut read, name, Some(value)).unwrap();
            }
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
            applied("flush.ms", Some("1")).unwrap_err(),
            "Unknown topic config name: flush.ms"
        );
    }
}
