//! CreateTopics, DeleteTopics and CreatePartitions. A topic is created through the
//! service's one create path (the server's default topic configuration, the partitions,
//! and every standard Kafka topic config, read by `service::topic_config`); an unknown
//! config, or a value out of range, is INVALID_CONFIG. A replication factor other than
//! 1 (or -1, the default) is INVALID_REPLICATION_FACTOR: this is one node. From v5 the
//! answer lists the created topic's configs, as DescribeConfigs describes them.
//!
//! CreatePartitions raises a topic's partition count through the log's one path
//! (`Kafko::create_partitions`: durable before the new partitions are served, then in
//! Metadata at once). A count not above the current one is INVALID_PARTITIONS, as is one
//! past the topic's limit; an assignment must give each new partition to this node
//! (INVALID_REPLICA_ASSIGNMENT otherwise); the log's limit on partitions is
//! POLICY_VIOLATION; `validate_only` only checks. A topic named twice is answered once,
//! INVALID_REQUEST, as Kafka answers a duplicate.

use std::collections::HashMap;

use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{
    CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest, CreateTopicsResponse,
    DeleteTopicsRequest, DeleteTopicsResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafko_core::AdminError;

use crate::metadata::{topic_by_uuid, topic_uuid};
use crate::{ListenerState, errors};
use kafko_core::TopicConfig;
use kafko_service::failure::Failure;
use kafko_service::topic_config;
use kafko_service::topics::{self, CreateError, NewTopic};

/// Answers CreateTopics.
pub(crate) async fn create_topics(
    broker: &ListenerState,
    request: CreateTopicsRequest,
    version: i16,
) -> CreateTopicsResponse {
    let mut response = CreateTopicsResponse::default();
    for topic in request.topics {
        let mut result = CreatableTopicResult::default();
        result.name = topic.name.clone();
        let outcome = create(broker, &topic, request.validate_only).await;
        match outcome {
            Ok((config, id)) => {
                if version >= 5 {
                    result.num_partitions = i32::try_from(config.partitions).unwrap_or(i32::MAX);
                    result.replication_factor = 1;
                    result.configs = Some(created_configs(broker, &config));
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

/// A created topic's configs, as CreateTopics v5+ lists them.
fn created_configs(broker: &ListenerState, config: &TopicConfig) -> Vec<CreatableTopicConfigs> {
    let server_default = topics::base(&broker.service.config.auto_create);
    topic_config::describe(config, &server_default)
        .into_iter()
        .map(|d| {
            let mut c = CreatableTopicConfigs::default();
            c.name = StrBytes::from_static_str(d.name);
            c.value = Some(StrBytes::from_string(d.value));
            c.config_source = crate::configs::source(d.source);
            c
        })
        .collect()
}

/// Creates one topic: its configuration and id. The shape of the request (the
/// replication factor, replica assignments, a partition count of -1 for the default) is
/// checked here; the rest is the service's one create path.
async fn create(
    broker: &ListenerState,
    topic: &CreatableTopic,
    validate_only: bool,
) -> Result<(TopicConfig, Option<uuid::Uuid>), (i16, String)> {
    let state = &broker.service;
    if !matches!(topic.replication_factor, -1 | 1) {
        return Err((
            errors::INVALID_REPLICATION_FACTOR,
            "this is one node: the replication factor is 1".into(),
        ));
    }
    let partitions = if !topic.assignments.is_empty() {
        if topic.num_partitions != -1
            || topic
                .assignments
                .iter()
                .any(|a| a.broker_ids.iter().any(|b| b.0 != crate::NODE_ID))
        {
            return Err((
                errors::INVALID_REPLICA_ASSIGNMENT,
                "this is one node (id 0): assign every partition to it".into(),
            ));
        }
        Some(u32::try_from(topic.assignments.len()).unwrap_or(u32::MAX))
    } else if topic.num_partitions != -1 {
        Some(
            u32::try_from(topic.num_partitions)
                .ok()
                .filter(|p| *p > 0)
                .ok_or((
                    errors::INVALID_PARTITIONS,
                    format!("{} partitions: at least 1", topic.num_partitions),
                ))?,
        )
    } else {
        None
    };
    let new = NewTopic {
        name: topic.name.as_str(),
        partitions,
        configs: topic
            .configs
            .iter()
            .map(|c| (c.name.as_str(), c.value.as_ref().map(StrBytes::as_str))),
        validate_only,
    };
    match topics::create(&state.kafko, &state.config.auto_create, new).await {
        Ok(created) => {
            let id = created.topic.as_ref().map(topic_uuid);
            Ok((created.config, id))
        }
        Err(CreateError::InvalidConfig(m)) => Err((errors::INVALID_CONFIG, m)),
        Err(CreateError::InvalidPartitions(m)) => Err((errors::INVALID_PARTITIONS, m)),
        Err(CreateError::InvalidName(m)) => Err((errors::INVALID_TOPIC_EXCEPTION, m)),
        Err(CreateError::AlreadyExists) => Err((
            errors::TOPIC_ALREADY_EXISTS,
            format!("topic '{}' already exists", topic.name.as_str()),
        )),
        Err(CreateError::Failed(e)) => {
            let failure = Failure::from(e);
            Err((errors::code(&failure), failure.detail))
        }
    }
}

/// Answers DeleteTopics (by name; a topic id, v6, through the log's id map). As Kafka's
/// controller does, a name or an id listed more than once is answered once,
/// INVALID_REQUEST, and not deleted: the work and the answer follow the distinct entries.
pub(crate) async fn delete_topics(
    broker: &ListenerState,
    request: DeleteTopicsRequest,
    version: i16,
) -> DeleteTopicsResponse {
    let kafko = &broker.service.kafko;
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
            Some(name) if name == kafko_core::OFFSETS_TOPIC => {
                result.name = Some(TopicName(StrBytes::from_string(name)));
                result.error_code = errors::INVALID_TOPIC_EXCEPTION;
                if version >= 5 {
                    result.error_message = Some(StrBytes::from_string(
                        "__consumer_offsets is kept by the group coordinator".into(),
                    ));
                }
            }
            Some(name) => {
                result.name = Some(TopicName(StrBytes::from_string(name.clone())));
                let deleted = kafko.delete_topic(&name).await;
                if deleted.is_ok() {
                    broker.service.metrics.forget_topic(&name);
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

/// Answers CreatePartitions.
pub(crate) async fn create_partitions(
    broker: &ListenerState,
    request: CreatePartitionsRequest,
) -> CreatePartitionsResponse {
    let mut named: HashMap<TopicName, u32> = HashMap::new();
    for topic in &request.topics {
        *named.entry(topic.name.clone()).or_insert(0) += 1;
    }
    let mut response = CreatePartitionsResponse::default();
    for topic in request.topics {
        let mut result = CreatePartitionsTopicResult::default();
        let outcome = match named.get_mut(&topic.name) {
            // Answered already.
            Some(0) | None => continue,
            Some(n) if *n > 1 => {
                *n = 0;
                Err((
                    errors::INVALID_REQUEST,
                    "Duplicate topic in request.".to_owned(),
                ))
            }
            Some(n) => {
                *n = 0;
                add_partitions(broker, &topic, request.validate_only).await
            }
        };
        if let Err((code, message)) = outcome {
            result.error_code = code;
            result.error_message = Some(StrBytes::from_string(message));
        }
        result.name = topic.name;
        response.results.push(result);
    }
    response
}

/// Raises one topic's partition count, or the error code and message refusing it.
async fn add_partitions(
    broker: &ListenerState,
    topic: &CreatePartitionsTopic,
    validate_only: bool,
) -> Result<(), (i16, String)> {
    let kafko = &broker.service.kafko;
    let name = topic.name.as_str();
    let handle = match kafko.find_topic(name) {
        Ok(Some(h)) => h,
        Ok(None) => {
            return Err((
                errors::UNKNOWN_TOPIC_OR_PARTITION,
                format!("topic '{name}' does not exist"),
            ));
        }
        Err(e) => {
            let failure = Failure::from(e);
            return Err((errors::code(&failure), failure.detail));
        }
    };
    let count = u32::try_from(topic.count).map_err(|_| {
        (
            errors::INVALID_PARTITIONS,
            format!("{} partitions: at least 1", topic.count),
        )
    })?;
    // A count that adds nothing is refused first, as Kafka checks the count first.
    if let Some(assignments) = &topic.assignments
        && count > handle.partitions()
    {
        let adding = count - handle.partitions();
        if assignments.len() != adding as usize {
            return Err((
                errors::INVALID_REPLICA_ASSIGNMENT,
                format!(
                    "Attempted to add {adding} additional partition(s), but only {} assignment(s) were specified.",
                    assignments.len()
                ),
            ));
        }
        if let Some(other) = assignments
            .iter()
            .flat_map(|a| a.broker_ids.iter())
            .find(|b| b.0 != crate::NODE_ID)
        {
            return Err((
                errors::INVALID_REPLICA_ASSIGNMENT,
                format!(
                    "The manual partition assignment includes broker {}, but no such broker is registered.",
                    other.0
                ),
            ));
        }
        if assignments.iter().any(|a| a.broker_ids.len() != 1) {
            return Err((
                errors::INVALID_REPLICA_ASSIGNMENT,
                "The manual partition assignment includes a partition with another replication factor than the topic's 1.".to_owned(),
            ));
        }
    }
    match kafko.create_partitions(name, count, validate_only).await {
        Ok(_) => Ok(()),
        Err(AdminError::InvalidConfig { reason }) => Err((errors::INVALID_PARTITIONS, reason)),
        Err(AdminError::TopicNotFound { .. } | AdminError::TopicDeleted { .. }) => Err((
            errors::UNKNOWN_TOPIC_OR_PARTITION,
            format!("topic '{name}' does not exist"),
        )),
        Err(e) => {
            let failure = Failure::from(e);
            Err((errors::code(&failure), failure.detail))
        }
    }
}
