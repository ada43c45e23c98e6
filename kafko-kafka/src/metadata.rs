//! Metadata and FindCoordinator: this listener's advertised address is the one broker
//! (node 0), the controller, the leader and only replica of every partition, and the
//! coordinator of every group. A Metadata request for unknown topics creates them when
//! both the client allows it and the server auto-creates topics (`--auto-create`, with
//! the server's default topic configuration), as Kafka's `auto.create.topics.enable`;
//! Kafka's internal topic names never are. `__consumer_offsets` is listed, as internal,
//! when all topics or it by name are asked for (kafko keeps it; see
//! `kafko_core::OFFSETS_TOPIC`). A topic named (or identified) more than once
//! is answered once, as Kafka answers the set of names, so the answer is bounded by the
//! distinct names and the server's topics. Metadata v0 has no null list: an empty one
//! asks for every topic. FindCoordinator from v4 answers a batch of keys, each distinct
//! key once, at most [`MAX_COORDINATOR_KEYS`] of them.

use std::collections::HashSet;

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{
    BrokerId, FindCoordinatorRequest, FindCoordinatorResponse, MetadataRequest, MetadataResponse,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafko_core::{TopicHandle, TopicId};

use crate::{ListenerState, NODE_ID, errors};
use kafko_service::failure::Failure;
use kafko_service::topics;

/// Kafka's topic id for a kafko topic incarnation (both are 128 bits).
pub(crate) fn topic_uuid(topic: &TopicHandle) -> uuid::Uuid {
    u128::from_str_radix(&topic.id().to_string(), 16)
        .map_or(uuid::Uuid::nil(), uuid::Uuid::from_u128)
}

/// The live topic whose Kafka topic id is `id`, found through the log's id map.
pub(crate) fn topic_by_uuid(broker: &ListenerState, id: uuid::Uuid) -> Option<TopicHandle> {
    let id: TopicId = format!("{:032x}", id.as_u128()).parse().ok()?;
    let kafko = &broker.service.kafko;
    match kafko.offsets_topic() {
        Ok(internal) if internal.id() == id => Some(internal),
        _ => kafko.topic_by_id(id).ok().flatten(),
    }
}

/// The topic a Kafka client may read under `name`: an ordinary topic, or
/// `__consumer_offsets`.
///
/// # Errors
/// `ShuttingDown` once shutdown began.
pub(crate) fn readable_topic(
    kafko: &kafko_core::Kafko,
    name: &str,
) -> Result<Option<TopicHandle>, kafko_core::AdminError> {
    if name == kafko_core::OFFSETS_TOPIC {
        return kafko.offsets_topic().map(Some);
    }
    kafko.find_topic(name)
}

pub(crate) fn str(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

/// Answers Metadata.
pub(crate) async fn handle(
    broker: &ListenerState,
    request: MetadataRequest,
    version: i16,
) -> MetadataResponse {
    let kafko = &broker.service.kafko;
    // v4 added the client's say; before it, Kafka auto-created on every Metadata.
    let client_allows = version < 4 || request.allow_auto_topic_creation;
    // Kafka answers the set of topics a request names: each once, however often it is
    // named, so the answer is bounded by the distinct names and the server's topics.
    let mut seen_names = HashSet::new();
    let mut seen_ids = HashSet::new();
    let all = match &request.topics {
        None => true,
        Some(topics) => version == 0 && topics.is_empty(),
    };
    let names: Vec<Result<String, uuid::Uuid>> = match &request.topics {
        _ if all => kafko
            .list_topics()
            .into_iter()
            .chain([kafko_core::OFFSETS_TOPIC.to_owned()])
            .map(Ok)
            .collect(),
        None => Vec::new(),
        Some(topics) => topics
            .iter()
            .filter_map(|t| match &t.name {
                Some(name) => seen_names
                    .insert(name.as_str())
                    .then(|| Ok(name.as_str().to_owned())),
                None => seen_ids.insert(t.topic_id).then_some(Err(t.topic_id)),
            })
            .collect(),
    };
    let mut topics = Vec::with_capacity(names.len());
    for name in names {
        let name = match name {
            Ok(name) => name,
            // A lookup by topic id (v10+).
            Err(id) => match topic_by_uuid(broker, id) {
                Some(handle) => handle.name().to_owned(),
                None => {
                    let mut t = MetadataResponseTopic::default();
                    t.error_code = errors::UNKNOWN_TOPIC_ID;
                    t.topic_id = id;
                    topics.push(t);
                    continue;
                }
            },
        };
        topics.push(describe(broker, &name, client_allows && !all, version).await);
    }
    let mut response = MetadataResponse::default();
    let mut node = MetadataResponseBroker::default();
    node.node_id = BrokerId(NODE_ID);
    node.host = str(&broker.advertised.host);
    node.port = i32::from(broker.advertised.port);
    response.brokers = vec![node];
    if version >= 2 {
        response.cluster_id = Some(str(&broker.service.config.cluster_id));
    }
    response.controller_id = BrokerId(NODE_ID);
    response.topics = topics;
    response
}

async fn describe(
    broker: &ListenerState,
    name: &str,
    may_create: bool,
    version: i16,
) -> MetadataResponseTopic {
    let kafko = &broker.service.kafko;
    let mut topic = MetadataResponseTopic::default();
    topic.name = Some(TopicName(str(name)));
    topic.is_internal = name == kafko_core::OFFSETS_TOPIC;
    let found = match readable_topic(kafko, name) {
        Ok(Some(handle)) => Ok(handle),
        Ok(None) if may_create => {
            topics::auto_create(kafko, &broker.service.config.auto_create, name)
                .await
                .map_err(|e| errors::code(&Failure::from(e)))
        }
        Ok(None) => Err(errors::UNKNOWN_TOPIC_OR_PARTITION),
        Err(e) => Err(errors::code(&Failure::from(e))),
    };
    let handle = match found {
        Ok(handle) => handle,
        Err(code) => {
            topic.error_code = code;
            return topic;
        }
    };
    if version >= 10 {
        topic.topic_id = topic_uuid(&handle);
    }
    topic.partitions = (0..handle.partitions())
        .map(|p| {
            let mut partition = MetadataResponsePartition::default();
            partition.partition_index = i32::try_from(p).unwrap_or(i32::MAX);
            partition.leader_id = BrokerId(NODE_ID);
            partition.leader_epoch = 0;
            partition.replica_nodes = vec![BrokerId(NODE_ID)];
            partition.isr_nodes = vec![BrokerId(NODE_ID)];
            partition
        })
        .collect();
    topic
}

/// The most distinct keys one FindCoordinator (v4+) may ask about; more closes the
/// connection, as a request past a limit does. Admin clients batch the groups of one
/// call.
pub(crate) const MAX_COORDINATOR_KEYS: usize = 10_000;

/// Kafka's coordinator key types.
const GROUP_KEY: i8 = 0;
const TRANSACTION_KEY: i8 = 1;

/// Answers FindCoordinator: this node coordinates every group. (A transactional id
/// finds it too; InitProducerId then refuses transactions.) Share groups are not
/// served: a share key is INVALID_REQUEST.
///
/// # Errors
/// A batch of more than [`MAX_COORDINATOR_KEYS`] distinct keys.
pub(crate) fn find_coordinator(
    broker: &ListenerState,
    request: FindCoordinatorRequest,
    version: i16,
) -> Result<FindCoordinatorResponse, String> {
    let mut response = FindCoordinatorResponse::default();
    let (host, port) = (
        str(&broker.advertised.host),
        i32::from(broker.advertised.port),
    );
    let served = matches!(request.key_type, GROUP_KEY | TRANSACTION_KEY);
    if version < 4 {
        response.node_id = BrokerId(NODE_ID);
        response.host = host;
        response.port = port;
        return Ok(response);
    }
    let mut seen = HashSet::new();
    for key in request.coordinator_keys {
        if !seen.insert(key.clone()) {
            continue;
        }
        if seen.len() > MAX_COORDINATOR_KEYS {
            return Err(format!(
                "a FindCoordinator of more than {MAX_COORDINATOR_KEYS} keys"
            ));
        }
        let mut c = Coordinator::default();
        c.key = key;
        if served {
            c.node_id = BrokerId(NODE_ID);
            c.host = host.clone();
            c.port = port;
        } else {
            c.node_id = BrokerId(-1);
            c.port = -1;
            c.error_code = errors::INVALID_REQUEST;
            c.error_message = Some(str(&format!(
                "kafko coordinates groups and transactional ids, not key type {}",
                request.key_type
            )));
        }
        response.coordinators.push(c);
    }
    Ok(response)
}
