//! Every standard Kafka topic config (Apache Kafka 4.0's, plus
//! `message.downconversion.enable`, which 3.x clients still send): its type, the broker
//! config that gives its default, and what kafko does with it. The log acts on some
//! ([`Handling::Honoured`], read and reported by `topic_config`); the others have no
//! meaning on one node or tune Kafka's own file layout, and are kept as set and
//! described back ([`Handling::Stored`]), each value checked as Kafka checks it. A name
//! not listed here is not a topic config.

/// A config's type, as Kafka's `ConfigDef` names it (DescribeConfigs' `config_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    /// `true` or `false`.
    Boolean,
    /// Any string.
    String,
    /// A signed 32-bit number.
    Int,
    /// A signed 64-bit number.
    Long,
    /// A floating-point number.
    Double,
    /// A comma-separated list.
    List,
}

/// How a stored config's value is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// `true` or `false`.
    Bool,
    /// A 32-bit number at least this.
    Int(i32),
    /// A 32-bit number in this range.
    IntIn(i32, i32),
    /// A 64-bit number at least this.
    Long(i64),
    /// A number from 0 to 1.
    Ratio,
    /// Exactly this value: kafko does what it says and nothing else.
    Only(&'static str),
    /// Kafka's throttled-replica list: `*`, or `partition:broker` pairs.
    ReplicaList,
}

/// What kafko does with a config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handling {
    /// The log acts on it.
    Honoured,
    /// Kept as set and described back, checked so.
    Stored(Check),
}

/// One Kafka topic config.
#[derive(Debug)]
pub struct KafkaTopicConfig {
    /// Its name.
    pub name: &'static str,
    /// Its type.
    pub ty: ConfigType,
    /// The broker config that gives its default, as Kafka lists it among the synonyms.
    pub broker_synonym: Option<&'static str>,
    /// What kafko does with it.
    pub handling: Handling,
    /// Its value when not set, for a stored config (kafko's value; an honoured config's
    /// comes from the server's default topic configuration).
    pub default: &'static str,
}

const fn honoured(name: &'static str, ty: ConfigType, broker: &'static str) -> KafkaTopicConfig {
    KafkaTopicConfig {
        name,
        ty,
        broker_synonym: Some(broker),
        handling: Handling::Honoured,
        default: "",
    }
}

const fn stored(
    name: &'static str,
    ty: ConfigType,
    broker: Option<&'static str>,
    check: Check,
    default: &'static str,
) -> KafkaTopicConfig {
    KafkaTopicConfig {
        name,
        ty,
        broker_synonym: broker,
        handling: Handling::Stored(check),
        default,
    }
}

/// `i64::MAX`, as Kafka writes an unbounded long.
pub const LONG_MAX: &str = "9223372036854775807";

use ConfigType::{Boolean, Double, Int, List, Long, String as Str};

/// Every standard topic config, by name.
pub const CATALOG: &[KafkaTopicConfig] = &[
    honoured("cleanup.policy", List, "log.cleanup.policy"),
    honoured("compression.type", Str, "compression.type"),
    stored(
        "compression.gzip.level",
        Int,
        Some("compression.gzip.level"),
        Check::IntIn(-1, 9),
        "-1",
    ),
    stored(
        "compression.lz4.level",
        Int,
        Some("compression.lz4.level"),
        Check::IntIn(1, 17),
        "9",
    ),
    stored(
        "compression.zstd.level",
        Int,
        Some("compression.zstd.level"),
        Check::IntIn(-131_072, 22),
        "3",
    ),
    honoured(
        "delete.retention.ms",
        Long,
        "log.cleaner.delete.retention.ms",
    ),
    stored(
        "file.delete.delay.ms",
        Long,
        Some("log.segment.delete.delay.ms"),
        Check::Long(0),
        "60000",
    ),
    honoured("flush.messages", Long, "log.flush.interval.messages"),
    honoured("flush.ms", Long, "log.flush.interval.ms"),
    stored(
        "follower.replication.throttled.replicas",
        List,
        None,
        Check::ReplicaList,
        "",
    ),
    stored(
        "index.interval.bytes",
        Int,
        Some("log.index.interval.bytes"),
        Check::Int(0),
        "4096",
    ),
    stored(
        "leader.replication.throttled.replicas",
        List,
        None,
        Check::ReplicaList,
        "",
    ),
    stored(
        "local.retention.bytes",
        Long,
        Some("log.local.retention.bytes"),
        Check::Long(-2),
        "-2",
    ),
    stored(
        "local.retention.ms",
        Long,
        Some("log.local.retention.ms"),
        Check::Long(-2),
        "-2",
    ),
    stored(
        "max.compaction.lag.ms",
        Long,
        Some("log.cleaner.max.compaction.lag.ms"),
        Check::Long(1),
        LONG_MAX,
    ),
    honoured("max.message.bytes", Int, "message.max.bytes"),
    stored(
        "message.downconversion.enable",
        Boolean,
        Some("log.message.downconversion.enable"),
        Check::Bool,
        "true",
    ),
    stored(
        "message.timestamp.after.max.ms",
        Long,
        Some("log.message.timestamp.after.max.ms"),
        Check::Long(0),
        LONG_MAX,
    ),
    stored(
        "message.timestamp.before.max.ms",
        Long,
        Some("log.message.timestamp.before.max.ms"),
        Check::Long(0),
        LONG_MAX,
    ),
    stored(
        "message.timestamp.type",
        Str,
        Some("log.message.timestamp.type"),
        Check::Only("CreateTime"),
        "CreateTime",
    ),
    stored(
        "min.cleanable.dirty.ratio",
        Double,
        Some("log.cleaner.min.cleanable.ratio"),
        Check::Ratio,
        "0.5",
    ),
    honoured(
        "min.compaction.lag.ms",
        Long,
        "log.cleaner.min.compaction.lag.ms",
    ),
    stored(
        "min.insync.replicas",
        Int,
        Some("min.insync.replicas"),
        Check::Int(1),
        "1",
    ),
    stored(
        "preallocate",
        Boolean,
        Some("log.preallocate"),
        Check::Bool,
        "false",
    ),
    stored(
        "remote.log.copy.disable",
        Boolean,
        None,
        Check::Bool,
        "false",
    ),
    stored(
        "remote.log.delete.on.disable",
        Boolean,
        None,
        Check::Bool,
        "false",
    ),
    stored(
        "remote.storage.enable",
        Boolean,
        None,
        Check::Only("false"),
        "false",
    ),
    honoured("retention.bytes", Long, "log.retention.bytes"),
    honoured("retention.ms", Long, "log.retention.ms"),
    honoured("segment.bytes", Int, "log.segment.bytes"),
    stored(
        "segment.index.bytes",
        Int,
        Some("log.index.size.max.bytes"),
        Check::Int(4),
        "10485760",
    ),
    stored(
        "segment.jitter.ms",
        Long,
        Some("log.roll.jitter.ms"),
        Check::Long(0),
        "0",
    ),
    honoured("segment.ms", Long, "log.roll.ms"),
    stored(
        "unclean.leader.election.enable",
        Boolean,
        Some("unclean.leader.election.enable"),
        Check::Bool,
        "false",
    ),
];

/// The config `name`, if it is a standard topic config.
pub fn find(name: &str) -> Option<&'static KafkaTopicConfig> {
    CATALOG.iter().find(|c| c.name == name)
}

impl Check {
    /// `value` (trimmed) in the form kafko keeps, or why it is refused (the reason
    /// after Kafka's `Invalid value V for configuration N: `).
    ///
    /// # Errors
    /// Why the value is refused.
    pub fn normalize(self, value: &str) -> Result<String, String> {
        let long = || {
            value
                .parse::<i64>()
                .map_err(|_| "Not a number of type LONG".to_owned())
        };
        let int = || {
            value
                .parse::<i32>()
                .map_err(|_| "Not a number of type INT".to_owned())
        };
        match self {
            Check::Bool => match value.to_ascii_lowercase().as_str() {
                v @ ("true" | "false") => Ok(v.to_owned()),
                _ => Err("Expected value to be either true or false".into()),
            },
            Check::Int(min) => {
                let n = int()?;
                if n < min {
                    return Err(format!("Value must be at least {min}"));
                }
                Ok(n.to_string())
            }
            Check::IntIn(min, max) => {
                let n = int()?;
                if !(min..=max).contains(&n) {
                    return Err(format!("Value must be between {min} and {max}"));
                }
                Ok(n.to_string())
            }
            Check::Long(min) => {
                let n = long()?;
                if n < min {
                    return Err(format!("Value must be at least {min}"));
                }
                Ok(n.to_string())
            }
            Check::Ratio => match value.parse::<f64>() {
                Ok(r) if (0.0..=1.0).contains(&r) => Ok(r.to_string()),
                Ok(_) => Err("Value must be between 0 and 1".into()),
                Err(_) => Err("Not a number of type DOUBLE".into()),
            },
            Check::Only(only) if value == only => Ok(only.to_owned()),
            Check::Only(only) => Err(format!("kafko serves only {only}")),
            Check::ReplicaList => replica_list(value),
        }
    }
}

/// Kafka's throttled-replica list: empty, `*`, or comma-separated `partition:broker`
/// pairs of non-negative numbers; items trimmed.
fn replica_list(value: &str) -> Result<String, String> {
    if value.is_empty() || value == "*" {
        return Ok(value.to_owned());
    }
    let items: Vec<&str> = value.split(',').map(str::trim).collect();
    let pair = |item: &str| {
        item.split_once(':')
            .is_some_and(|(p, b)| p.parse::<u32>().is_ok() && b.parse::<u32>().is_ok())
    };
    if items.iter().all(|item| pair(item)) {
        Ok(items.join(","))
    } else {
        Err("must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_listed_once_and_stored_defaults_pass_their_own_check() {
        for (i, c) in CATALOG.iter().enumerate() {
            assert!(CATALOG[..i].iter().all(|o| o.name != c.name), "{}", c.name);
            if let Handling::Stored(check) = c.handling {
                assert_eq!(
                    check.normalize(c.default).as_deref(),
                    Ok(c.default),
                    "{}",
                    c.name
                );
            }
        }
    }

    #[test]
    fn stored_values_are_checked_as_kafka_checks_them() {
        assert_eq!(Check::Int(1).normalize("2"), Ok("2".into()));
        assert!(Check::Int(1).normalize("0").is_err());
        assert!(Check::Int(1).normalize("x").is_err());
        assert_eq!(Check::Bool.normalize("TRUE"), Ok("true".into()));
        assert!(Check::Bool.normalize("yes").is_err());
        assert!(Check::Ratio.normalize("1.5").is_err());
        assert_eq!(Check::Ratio.normalize("0.25"), Ok("0.25".into()));
        assert!(
            Check::Only("CreateTime")
                .normalize("LogAppendTime")
                .is_err()
        );
        assert_eq!(
            Check::ReplicaList.normalize("0:0, 1:0"),
            Ok("0:0,1:0".into())
        );
        assert!(Check::ReplicaList.normalize("0:x").is_err());
        assert!(Check::IntIn(1, 17).normalize("18").is_err());
    }
}
