//! DescribeConfigs, AlterConfigs and IncrementalAlterConfigs, for topics and this
//! broker. A topic lists every standard Kafka topic config with its value, its source
//! (set on the topic, the server's flags, kafko's default) and, when asked, its
//! synonyms (`service::topic_config::describe`); a change goes through the service's
//! one config-change path, the one `/v1` uses. The broker lists `broker_configs`, all
//! read-only.
//!
//! Each resource is answered once: a resource named again in the same request is
//! answered INVALID_REQUEST (changes) or left out (descriptions), so an answer holds at
//! most one full description per existing topic.

use std::collections::{HashMap, HashSet};

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::{
    AlterConfigsRequest, AlterConfigsResponse, DescribeConfigsRequest, DescribeConfigsResponse,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, alter_configs_response,
    incremental_alter_configs_response,
};
use kafka_protocol::protocol::StrBytes;

use crate::broker_configs::broker_configs;
use crate::{ListenerState, errors};
use kafko_service::failure::Failure;
use kafko_service::topic_config::{self, AlterOp, Source};
use kafko_service::topic_config_catalog::ConfigType;
use kafko_service::topics::{self, AlterError};

/// Kafka's resource types.
const TOPIC: i8 = 2;
const BROKER: i8 = 4;
/// Kafka's config sources.
const DYNAMIC_TOPIC_CONFIG: i8 = 1;
const STATIC_BROKER_CONFIG: i8 = 4;
const DEFAULT_CONFIG: i8 = 5;

/// Kafka's config source of a described value.
pub(crate) fn source(s: Source) -> i8 {
    match s {
        Source::Topic => DYNAMIC_TOPIC_CONFIG,
        Source::Server => STATIC_BROKER_CONFIG,
        Source::Default => DEFAULT_CONFIG,
    }
}

/// Kafka's `ConfigDef` type codes.
fn config_type(ty: ConfigType) -> i8 {
    match ty {
        ConfigType::Boolean => 1,
        ConfigType::String => 2,
        ConfigType::Int => 3,
        ConfigType::Long => 5,
        ConfigType::Double => 6,
        ConfigType::List => 7,
    }
}

fn text(s: impl Into<String>) -> StrBytes {
    StrBytes::from_string(s.into())
}

/// A config entry of a description.
fn entry(
    name: &str,
    value: String,
    read_only: bool,
    source: i8,
    ty: ConfigType,
) -> DescribeConfigsResourceResult {
    let mut e = DescribeConfigsResourceResult::default();
    e.name = text(name);
    e.value = Some(text(value));
    e.read_only = read_only;
    e.config_source = source;
    e.is_sensitive = false;
    e.config_type = config_type(ty);
    e
}

fn synonym(name: &str, value: String, source: i8) -> DescribeConfigsSynonym {
    let mut s = DescribeConfigsSynonym::default();
    s.name = text(name);
    s.value = Some(text(value));
    s.source = source;
    s
}

/// The broker's id as a resource names it: `Ok(true)` for this node, `Ok(false)` for
/// the cluster-wide default (an empty name), else Kafka's refusal.
fn broker_resource(name: &str) -> Result<bool, String> {
    if name.is_empty() {
        return Ok(false);
    }
    match name.parse::<i32>() {
        Ok(id) if id == crate::NODE_ID => Ok(true),
        _ => Err(format!(
            "Unexpected broker id, expected {} or empty string, but received {name}",
            crate::NODE_ID
        )),
    }
}

/// Answers DescribeConfigs.
pub(crate) fn describe_configs(
    broker: &ListenerState,
    request: DescribeConfigsRequest,
) -> DescribeConfigsResponse {
    let mut response = DescribeConfigsResponse::default();
    let mut seen = HashSet::new();
    for resource in request.resources {
        let name = resource.resource_name.as_str().to_owned();
        if !seen.insert((resource.resource_type, name.clone())) {
            continue;
        }
        let keys: Option<HashSet<&str>> = resource
            .configuration_keys
            .as_ref()
            .map(|keys| keys.iter().map(StrBytes::as_str).collect());
        let wanted = |n: &str| keys.as_ref().is_none_or(|k| k.contains(n));
        let mut result = DescribeConfigsResult::default();
        result.resource_type = resource.resource_type;
        result.resource_name = resource.resource_name.clone();
        let answer = match resource.resource_type {
            TOPIC => describe_topic(broker, &name, &wanted, request.include_synonyms),
            BROKER => describe_broker(broker, &name, &wanted, request.include_synonyms),
            other => Err((
                errors::INVALID_REQUEST,
                format!(
                    "kafko describes topic (2) and broker (4) configs, not resource type {other}"
                ),
            )),
        };
        match answer {
            Ok(configs) => result.configs = configs,
            Err((code, message)) => {
                result.error_code = code;
                result.error_message = Some(text(message));
            }
        }
        response.results.push(result);
    }
    response
}

type Answer = Result<Vec<DescribeConfigsResourceResult>, (i16, String)>;

fn describe_topic(
    broker: &ListenerState,
    name: &str,
    wanted: &dyn Fn(&str) -> bool,
    synonyms: bool,
) -> Answer {
    let service = &broker.service;
    if let Err(e) = kafko_core::naming::validate_name(name) {
        return Err((errors::INVALID_TOPIC_EXCEPTION, e.to_string()));
    }
    let config = match service.kafko.describe_topic(name) {
        Ok(d) => d.config,
        Err(e) => {
            let failure = Failure::from(e);
            return Err((errors::code(&failure), failure.detail));
        }
    };
    let server_default = topics::base(&service.config.auto_create);
    Ok(topic_config::describe(&config, &server_default)
        .into_iter()
        .filter(|d| wanted(d.name))
        .map(|d| {
            let mut e = entry(d.name, d.value, false, source(d.source), d.ty);
            if synonyms {
                e.synonyms = d
                    .synonyms
                    .into_iter()
                    .map(|s| synonym(s.name, s.value, source(s.source)))
                    .collect();
            }
            e
        })
        .collect())
}

fn describe_broker(
    broker: &ListenerState,
    name: &str,
    wanted: &dyn Fn(&str) -> bool,
    synonyms: bool,
) -> Answer {
    // The cluster-wide default holds the dynamic defaults: kafko has none.
    if !broker_resource(name).map_err(|m| (errors::INVALID_REQUEST, m))? {
        return Ok(Vec::new());
    }
    Ok(broker_configs(broker)
        .into_iter()
        .filter(|c| wanted(c.name))
        .map(|c| {
            let from = if c.flagged {
                STATIC_BROKER_CONFIG
            } else {
                DEFAULT_CONFIG
            };
            let mut e = entry(c.name, c.value.clone(), true, from, c.ty);
            if synonyms {
                e.synonyms = vec![synonym(c.name, c.value, from)];
            }
            e
        })
        .collect())
}

/// One resource's changes: its type, name and (name, change) pairs, or why the
/// request refused them whole.
struct Change<'a> {
    resource_type: i8,
    name: &'a str,
    ops: Vec<(&'a str, AlterOp<'a>)>,
    refused: Option<(i16, String)>,
}

/// Applies each change, once per distinct resource: (code, message) per change, in
/// order.
async fn alter(
    broker: &ListenerState,
    changes: &[Change<'_>],
    replace: bool,
    validate_only: bool,
) -> Vec<(i16, Option<String>)> {
    let mut listed: HashMap<(i8, &str), u32> = HashMap::new();
    for c in changes {
        *listed.entry((c.resource_type, c.name)).or_insert(0) += 1;
    }
    let mut out = Vec::with_capacity(changes.len());
    for c in changes {
        let outcome = if listed.get(&(c.resource_type, c.name)).copied() > Some(1) {
            Err((errors::INVALID_REQUEST, "Duplicate resource.".to_owned()))
        } else if let Some(refused) = &c.refused {
            Err(refused.clone())
        } else {
            alter_one(broker, c, replace, validate_only).await
        };
        out.push(match outcome {
            Ok(()) => (errors::NONE, None),
            Err((code, message)) => (code, Some(message)),
        });
    }
    out
}

async fn alter_one(
    broker: &ListenerState,
    change: &Change<'_>,
    replace: bool,
    validate_only: bool,
) -> Result<(), (i16, String)> {
    let mut names = HashSet::new();
    if !change.ops.iter().all(|(name, _)| names.insert(*name)) {
        return Err((
            errors::INVALID_REQUEST,
            "Error due to duplicate config keys".into(),
        ));
    }
    match change.resource_type {
        TOPIC => {}
        BROKER => {
            broker_resource(change.name).map_err(|m| (errors::INVALID_REQUEST, m))?;
            if change.ops.is_empty() {
                return Ok(());
            }
            let names: Vec<&str> = change.ops.iter().map(|(n, _)| *n).collect();
            return Err((
                errors::INVALID_REQUEST,
                format!(
                    "Cannot update these configs dynamically: [{}] (kafko's broker configs are its flags)",
                    names.join(", ")
                ),
            ));
        }
        other => {
            return Err((
                errors::INVALID_REQUEST,
                format!("kafko changes topic (2) configs, not resource type {other}"),
            ));
        }
    }
    let service = &broker.service;
    let altered = topics::alter_configs(
        &service.kafko,
        &service.config.auto_create,
        change.name,
        replace,
        &change.ops,
        validate_only,
    )
    .await;
    match altered {
        Ok(_) => Ok(()),
        Err(AlterError::InvalidConfig(m)) => Err((errors::INVALID_CONFIG, m)),
        Err(AlterError::InvalidName(m)) => Err((errors::INVALID_TOPIC_EXCEPTION, m)),
        Err(AlterError::Failed(e)) => {
            let failure = Failure::from(e);
            Err((errors::code(&failure), failure.detail))
        }
    }
}

/// Answers AlterConfigs: each topic's whole set of configs replaced by the one named.
pub(crate) async fn alter_configs(
    broker: &ListenerState,
    request: AlterConfigsRequest,
) -> AlterConfigsResponse {
    let changes: Vec<Change<'_>> = request
        .resources
        .iter()
        .map(|r| Change {
            resource_type: r.resource_type,
            name: r.resource_name.as_str(),
            ops: r
                .configs
                .iter()
                .map(|c| (c.name.as_str(), AlterOp::Set(c.value.as_deref())))
                .collect(),
            refused: None,
        })
        .collect();
    let outcomes = alter(broker, &changes, true, request.validate_only).await;
    let mut response = AlterConfigsResponse::default();
    for (r, (code, message)) in request.resources.iter().zip(outcomes) {
        let mut result = alter_configs_response::AlterConfigsResourceResponse::default();
        result.resource_type = r.resource_type;
        result.resource_name = r.resource_name.clone();
        result.error_code = code;
        result.error_message = message.map(text);
        response.responses.push(result);
    }
    response
}

/// Answers IncrementalAlterConfigs: SET, DELETE, APPEND and SUBTRACT (0–3) per config.
pub(crate) async fn incremental_alter_configs(
    broker: &ListenerState,
    request: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let changes: Vec<Change<'_>> = request
        .resources
        .iter()
        .map(|r| {
            let mut refused = None;
            let ops = r
                .configs
                .iter()
                .filter_map(|c| {
                    let value = c.value.as_deref();
                    let op = match c.config_operation {
                        0 => AlterOp::Set(value),
                        1 => AlterOp::Delete,
                        2 => AlterOp::Append(value),
                        3 => AlterOp::Subtract(value),
                        other => {
                            // The resource's changes are refused whole.
                            refused = Some((
                                errors::INVALID_REQUEST,
                                format!("Unknown config operation {other}"),
                            ));
                            return None;
                        }
                    };
                    Some((c.name.as_str(), op))
                })
                .collect();
            Change {
                resource_type: r.resource_type,
                name: r.resource_name.as_str(),
                ops,
                refused,
            }
        })
        .collect();
    let outcomes = alter(broker, &changes, false, request.validate_only).await;
    let mut response = IncrementalAlterConfigsResponse::default();
    for (r, (code, message)) in request.resources.iter().zip(outcomes) {
        let mut result =
            incremental_alter_configs_response::AlterConfigsResourceResponse::default();
        result.resource_type = r.resource_type;
        result.resource_name = r.resource_name.clone();
        result.error_code = code;
        result.error_message = message.map(text);
        response.responses.push(result);
    }
    response
}
