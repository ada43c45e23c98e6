//! CreateTopics and DeleteTopics. A created topic starts from the server's default topic
//! configuration (as auto-created ones, or kafko's defaults when auto-create is off)
//! with the partitions and the configs kafko has: `cleanup.policy`, `retention.ms`,
//! `retention.bytes`, `segment.bytes`, `compression.type` (`none`/`uncompressed`,
//! `lz4`, `zstd`, `producer` = the default codec) and `max.message.bytes`; any other
//! config, or a value out of range, is INVALID_CONFIG. A replication factor other than
//! 1 (or -1, the default) is INVALID_REPLICATION_FACTOR: this is one node.

use std::collections::HashMap;

use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{
    CreateTopicsRequest, CreateTopicsResponse, DeleteTopicsRequest, DeleteTopicsResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafko_core::{CleanupPolicy, Compression, CreateOutcome, TopicConfig};

use super::metadata::{is_internal, topic_by_uuid, topic_uuid};
use super::{Broker, errors};
use crate::config::AutoCreate;
use crate::service::failure::Failure;

/// Answers CreateTopics.
pub(crate) async fn create_topics(
    broker: &Broker,
    request: CreateTopicsRequest,
    version: i16,
) -> CreateTopicsResponse {
    let mut response = CreateTopicsResponse::default();
    for topic in request.topics {
        let mut result = CreatableTopicResult::default();
        result.name = topic.name.clone();
        let outcome = create(broker, &topic, request.validate_only).await;
        match outcome {
            Ok((partitions, id)) => {
                if version >= 5 {
                    result.num_partitions = i32::try_from(partitions).unwrap_or(i32::MAX);
                    result.replication_factor = 1;
                }
                if version >= 7
                    && let Some(id) = id
                {
                    result.topic_id = id;
                }
            }
            Err((code, message)) => {
                result.error_code = code;
                result.error_message = Some(StrBytes::from_string(message));
            }
        }
        response.topics.push(result);
    }
    response
}

/// Creates one topic: its partition count and id.
async fn create(
    broker: &Broker,
    topic: &CreatableTopic,
    validate_only: bool,
) -> Result<(u32, Option<uuid::Uuid>), (i16, String)> {
    let state = &broker.state;
    let mut config = match &state.config.auto_create {
        AutoCreate::Enabled(c) => c.clone(),
        AutoCreate::Disabled => TopicConfig::default(),
    };
    if !matches!(topic.replication_factor, -1 | 1) {
        return Err((
            errors::INVALID_REPLICATION_FACTOR,
            "this is one node: the replication factor is 1".into(),
        ));
    }
    if !topic.assignments.is_empty() {
        if topic.num_partitions != -1
            || topic
                .assignments
                .iter()
                .any(|a| a.broker_ids.iter().any(|b| b.0 != super::NODE_ID))
        {
            return Err((
                errors::INVALID_REPLICA_ASSIGNMENT,
                "this is one node (id 0): assign every partition to it".into(),
            ));
        }
        config.partitions = u32::try_from(topic.assignments.len()).unwrap_or(u32::MAX);
    } else if topic.num_partitions != -1 {
        config.partitions = u32::try_from(topic.num_partitions)
            .ok()
            .filter(|p| *p > 0)
            .ok_or((
                errors::INVALID_PARTITIONS,
                format!("{} partitions: at least 1", topic.num_partitions),
            ))?;
    }
    for c in &topic.configs {
        apply(
            &mut config,
            c.name.as_str(),
            c.value.as_ref().map(StrBytes::as_str),
        )
        .map_err(|m| (errors::INVALID_CONFIG, m))?;
    }
    if let Err(e) = config.validate() {
        let failure = Failure::from(e);
        // A partition count out of range is Kafka's INVALID_PARTITIONS.
        let code = if config.partitions == 0 || config.partitions > 1024 {
            errors::INVALID_PARTITIONS
        } else {
            errors::code(&failure)
        };
        return Err((code, failure.detail));
    }
    if let Err(e) = kafko_core::naming::validate_name(topic.name.as_str()) {
        return Err((errors::INVALID_TOPIC_EXCEPTION, e.to_string()));
    }
    if is_internal(topic.name.as_str()) {
        return Err((
            errors::INVALID_TOPIC_EXCEPTION,
            format!("'{}' is a Kafka internal topic", topic.name.as_str()),
        ));
    }
    let exists = || {
        (
            errors::TOPIC_ALREADY_EXISTS,
            format!("topic '{}' already exists", topic.name.as_str()),
        )
    };
    if validate_only {
        return match state.kafko.find_topic(topic.name.as_str()) {
            Ok(Some(_)) => Err(exists()),
            Ok(None) => Ok((config.partitions, None)),
            Err(e) => {
                let failure = Failure::from(e);
                Err((errors::code(&failure), failure.detail))
            }
        };
    }
    let partitions = config.partitions;
    match state
        .kafko
        .create_topic_with_config(topic.name.as_str(), config)
        .await
    {
        Ok(CreateOutcome::Created) => {
            let id = state
                .kafko
                .find_topic(topic.name.as_str())
                .ok()
                .flatten()
                .map(|t| topic_uuid(&t));
            Ok((partitions, id))
        }
        Ok(CreateOutcome::AlreadyExisted) => Err(exists()),
        Err(e) => {
            let failure = Failure::from(e);
            Err((errors::code(&failure), failure.detail))
        }
    }
}

fn number(name: &str, value: &str) -> Result<i64, String> {
    value
        .parse()
        .map_err(|_| format!("{name}: '{value}' is not a number"))
}

/// Applies one Kafka topic config to a kafko one.
fn apply(config: &mut TopicConfig, name: &str, value: Option<&str>) -> Result<(), String> {
    let Some(value) = value else {
        // A null value keeps the default.
        return Ok(());
    };
    let non_negative = |v: i64| -> Result<u64, String> {
        u64::try_from(v).map_err(|_| format!("{name}: '{value}' is negative"))
    };
    match name {
        "cleanup.policy" => {
            let mut parts: Vec<&str> = value.split(',').map(str::trim).collect();
            parts.sort_unstable();
            config.cleanup_policy = match parts.as_slice() {
                ["delete"] => CleanupPolicy::Delete,
                ["compact"] => CleanupPolicy::Compact,
                ["compact", "delete"] => CleanupPolicy::CompactDelete,
                _ => {
                    return Err(format!(
                        "cleanup.policy: '{value}' is not delete, compact or both"
                    ));
                }
            };
        }
        "retention.ms" => {
            let v = number(name, value)?;
            config.retention_ms = if v == -1 {
                None
            } else {
                Some(non_negative(v)?)
            };
        }
        "retention.bytes" => {
            let v = number(name, value)?;
            config.retention_bytes = if v == -1 {
                None
            } else {
                Some(non_negative(v)?)
            };
        }
        "segment.bytes" => config.segment_bytes = non_negative(number(name, value)?)?,
        "max.message.bytes" => config.max_record_bytes = non_negative(number(name, value)?)?,
        "compression.type" => {
            config.compression = match value {
                "none" | "uncompressed" | "producer" => Compression::None,
                "lz4" => Compression::Lz4,
                "zstd" => Compression::Zstd,
                other => {
                    return Err(format!(
                        "compression.type: '{other}' is not served; none, lz4, zstd or producer"
                    ));
                }
            };
        }
        other => return Err(format!("config '{other}' is not supported")),
    }
    Ok(())
}

/// Answers DeleteTopics (by name; a topic id, v6, through the log's id map). As Kafka's
/// controller does, a name or an id listed more than once is answered once,
/// INVALID_REQUEST, and not deleted: the work and the answer follow the distinct entries.
pub(crate) async fn delete_topics(
    broker: &Broker,
    request: DeleteTopicsRequest,
    version: i16,
) -> DeleteTopicsResponse {
    let kafko = &broker.state.kafko;
    let targets: Vec<(Option<String>, uuid::Uuid)> = if version >= 6 {
        request
            .topics
            .into_iter()
            .map(|t| (t.name.map(|n| n.as_str().to_owned()), t.topic_id))
            .collect()
    } else {
        request
            .topic_names
            .into_iter()
            .map(|n| (Some(n.as_str().to_owned()), uuid::Uuid::nil()))
            .collect()
    };
    let mut names = HashMap::new();
    let mut ids = HashMap::new();
    for (name, id) in &targets {
        match name {
            Some(name) => *names.entry(name.as_str()).or_insert(0u32) += 1,
            None => *ids.entry(*id).or_insert(0u32) += 1,
        }
    }
    let mut response = DeleteTopicsResponse::default();
    for (name, id) in &targets {
        let mut result = DeletableTopicResult::default();
        let listed = match name {
            Some(name) => names.get_mut(name.as_str()),
            None => ids.get_mut(id),
        };
        match listed {
            // Answered already.
            Some(0) | None => continue,
            Some(n) if *n > 1 => {
                *n = 0;
                result.name = name
                    .as_deref()
                    .map(|n| TopicName(StrBytes::from_string(n.into())));
                if version >= 6 {
                    result.topic_id = *id;
                }
                result.error_code = errors::INVALID_REQUEST;
                if version >= 5 {
                    let what = if name.is_some() { "name" } else { "id" };
                    result.error_message =
                        Some(StrBytes::from_string(format!("Duplicate topic {what}.")));
                }
                response.responses.push(result);
                continue;
            }
            Some(n) => *n = 0,
        }
        let name = name
            .clone()
            .or_else(|| topic_by_uuid(broker, *id).map(|t| t.name().to_owned()));
        if version >= 6 {
            result.topic_id = *id;
        }
        match name {
            None => result.error_code = errors::UNKNOWN_TOPIC_ID,
            Some(name) => {
                result.name = Some(TopicName(StrBytes::from_string(name.clone())));
                let deleted = kafko.delete_topic(&name).await;
                if deleted.is_ok() {
                    broker.state.metrics.forget_topic(&name);
                }
                if let Err(e) = deleted {
                    let failure = Failure::from(e);
                    result.error_code = match errors::code(&failure) {
                        errors::INVALID_TOPIC_EXCEPTION => errors::UNKNOWN_TOPIC_OR_PARTITION,
                        c => c,
                    };
                    if version >= 5 {
                        result.error_message = Some(StrBytes::from_string(failure.detail));
                    }
                }
            }
        }
        response.responses.push(result);
    }
    response
}
