//! The broker configs DescribeConfigs reports for this node, under Kafka's names with
//! kafko's real values: the topic defaults (`log.retention.ms`, `num.partitions`,
//! `message.max.bytes`…, from the server's default topic configuration), the group,
//! producer and connection limits its flags set, and the facts of a one-node cluster
//! (replication factors of 1). All are read-only: they are the server's flags.

use kafko_service::topic_config::broker_defaults;
use kafko_service::topic_config_catalog::ConfigType;
use kafko_service::topics::base;

use crate::ListenerState;

/// One broker config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BrokerConfig {
    pub(crate) name: &'static str,
    pub(crate) value: String,
    pub(crate) ty: ConfigType,
    /// Set by the server's flags (STATIC_BROKER_CONFIG) rather than kafko's default.
    pub(crate) flagged: bool,
}

/// `offsets.retention.minutes` of a server that keeps offsets until their group or
/// topic is deleted: the longest Kafka's INT holds.
const OFFSETS_KEPT_MINUTES: i64 = 2_147_483_647;

/// `offsets.retention.minutes` as Kafka states it.
fn retention_minutes(retention: Option<std::time::Duration>) -> String {
    retention
        .map_or(OFFSETS_KEPT_MINUTES, |d| {
            i64::try_from(d.as_secs() / 60).unwrap_or(OFFSETS_KEPT_MINUTES)
        })
        .to_string()
}

/// Every broker config this node reports, sorted by name.
pub(crate) fn broker_configs(broker: &ListenerState) -> Vec<BrokerConfig> {
    let service = &broker.service;
    let config = &service.config;
    let defaults = kafko_service::ServerConfig::default();
    let limits = service.kafko.group_limits();
    let default_limits = kafko_core::GroupLimits::default();
    let server_default = base(&config.auto_create);
    let mut out: Vec<BrokerConfig> = broker_defaults(&server_default)
        .into_iter()
        .map(|(name, value, ty, flagged)| BrokerConfig {
            name,
            value,
            ty,
            flagged,
        })
        .collect();
    let mut add = |name, value: String, default: String, ty| {
        out.push(BrokerConfig {
            name,
            flagged: value != default,
            value,
            ty,
        });
    };
    let ms = |d: std::time::Duration| d.as_millis().to_string();
    let node = crate::NODE_ID.to_string();
    add("broker.id", node.clone(), node.clone(), ConfigType::Int);
    add("node.id", node.clone(), node, ConfigType::Int);
    let auto = |c: &kafko_service::ServerConfig| {
        matches!(c.auto_create, kafko_service::AutoCreate::Enabled(_)).to_string()
    };
    add(
        "auto.create.topics.enable",
        auto(config),
        auto(&defaults),
        ConfigType::Boolean,
    );
    add(
        "num.partitions",
        server_default.partitions.to_string(),
        kafko_core::TopicConfig::default().partitions.to_string(),
        ConfigType::Int,
    );
    for name in [
        "default.replication.factor",
        "offsets.topic.replication.factor",
        "transaction.state.log.replication.factor",
        "transaction.state.log.min.isr",
    ] {
        add(name, "1".into(), "1".into(), ConfigType::Int);
    }
    add(
        "delete.topic.enable",
        "true".into(),
        "true".into(),
        ConfigType::Boolean,
    );
    add(
        "offsets.retention.minutes",
        retention_minutes(service.kafko.offsets_retention()),
        retention_minutes(Some(kafko_core::DEFAULT_OFFSETS_RETENTION)),
        ConfigType::Int,
    );
    add(
        "group.min.session.timeout.ms",
        ms(limits.min_session_timeout),
        ms(default_limits.min_session_timeout),
        ConfigType::Int,
    );
    add(
        "group.max.session.timeout.ms",
        ms(limits.max_session_timeout),
        ms(default_limits.max_session_timeout),
        ConfigType::Int,
    );
    add(
        "group.max.size",
        limits.max_size.to_string(),
        default_limits.max_size.to_string(),
        ConfigType::Int,
    );
    add(
        "offset.metadata.max.bytes",
        limits.offset_metadata_max_bytes.to_string(),
        default_limits.offset_metadata_max_bytes.to_string(),
        ConfigType::Int,
    );
    add(
        "producer.id.expiration.ms",
        ms(config.producer_id_expiration),
        ms(defaults.producer_id_expiration),
        ConfigType::Int,
    );
    add(
        "connections.max.idle.ms",
        ms(config.idle_timeout),
        ms(defaults.idle_timeout),
        ConfigType::Long,
    );
    add(
        "max.connections",
        config.max_connections.to_string(),
        defaults.max_connections.to_string(),
        ConfigType::Int,
    );
    add(
        "queued.max.request.bytes",
        config.queued_max_request_bytes.to_string(),
        defaults.queued_max_request_bytes.to_string(),
        ConfigType::Long,
    );
    add(
        "socket.request.max.bytes",
        config.max_body_bytes.max(1 << 20).to_string(),
        defaults.max_body_bytes.max(1 << 20).to_string(),
        ConfigType::Int,
    );
    add(
        "sasl.server.max.receive.size",
        config.sasl_max_receive_bytes.to_string(),
        defaults.sasl_max_receive_bytes.to_string(),
        ConfigType::Int,
    );
    let mechanisms = |c: &kafko_service::ServerConfig| {
        if c.auth_token.is_some() { "PLAIN" } else { "" }.to_owned()
    };
    add(
        "sasl.enabled.mechanisms",
        mechanisms(config),
        mechanisms(&defaults),
        ConfigType::List,
    );
    let protocol = if config.auth_token.is_some() {
        "SASL_PLAINTEXT"
    } else {
        "PLAINTEXT"
    };
    let advertised = format!(
        "{protocol}://{}:{}",
        broker.advertised.host, broker.advertised.port
    );
    add(
        "advertised.listeners",
        advertised.clone(),
        String::new(),
        ConfigType::String,
    );
    let dir = service.kafko.data_dir().display().to_string();
    add("log.dirs", dir, String::new(), ConfigType::String);
    out.sort_by_key(|c| c.name);
    out.dedup_by_key(|c| c.name);
    out
}
