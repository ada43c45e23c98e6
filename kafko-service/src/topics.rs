//! Topic creation, one path for every front end: an explicit create (REST Proxy v3,
//! the Kafka listener's CreateTopics) and an auto-create (a produce to, or a Kafka
//! Metadata request for, a topic that does not exist). Both start from the server's
//! default topic configuration (`--auto-create`'s, or kafko's defaults when it is off),
//! both refuse Kafka's internal topic names, and both go through the log's limits on
//! topics and partitions.

use kafko_core::{AdminError, CreateOutcome, Kafko, KafkoError, TopicConfig, TopicHandle};

use super::topic_config::{self, AlterOp};
use crate::config::AutoCreate;

/// Kafka's internal topics (group offsets, transaction state). kafko keeps groups'
/// offsets in its own files and serves no transactions: no front end creates or
/// auto-creates an ordinary topic under these names, and a Kafka client may not write
/// to one (INVALID_TOPIC_EXCEPTION, as Kafka refuses a client's append to them).
pub fn is_internal(name: &str) -> bool {
    matches!(name, "__consumer_offsets" | "__transaction_state")
}

/// The configuration a new topic starts from: the auto-created topics' one, or kafko's
/// defaults when the server does not auto-create. A config deleted from a topic goes
/// back to its value here.
pub fn base(auto_create: &AutoCreate) -> TopicConfig {
    match auto_create {
        AutoCreate::Enabled(c) => c.clone(),
        AutoCreate::Disabled => TopicConfig::default(),
    }
}

/// A topic to create, as every front end asks for it.
pub struct NewTopic<'a, C> {
    /// Its name.
    pub name: &'a str,
    /// Its partition count; the default configuration's when `None`.
    pub partitions: Option<u32>,
    /// Kafka-named configs, in order (see [`topic_config::apply`]).
    pub configs: C,
    /// Check only: nothing is created.
    pub validate_only: bool,
}

/// A created (or, validating only, creatable) topic.
#[derive(Debug)]
pub struct Created {
    /// Its configuration.
    pub config: TopicConfig,
    /// The topic, when created (not when validating only).
    pub topic: Option<TopicHandle>,
}

/// Why a topic was not created; each front end answers in its own shape (Kafka's codes
/// in the comments).
#[derive(Debug)]
pub enum CreateError {
    /// A config name or value not served (INVALID_CONFIG).
    InvalidConfig(String),
    /// A partition count out of range (INVALID_PARTITIONS).
    InvalidPartitions(String),
    /// An invalid name, or an internal topic's (INVALID_TOPIC_EXCEPTION).
    InvalidName(String),
    /// The topic exists (TOPIC_ALREADY_EXISTS).
    AlreadyExists,
    /// The log's refusal: a limit, shutting down, storage.
    Failed(AdminError),
}

/// Creates a topic (or, `validate_only`, checks it could be).
///
/// # Errors
/// [`CreateError`], checked in this order: configs, partitions and ranges, name,
/// existence, the log.
pub async fn create<'a, C>(
    kafko: &Kafko,
    auto_create: &AutoCreate,
    topic: NewTopic<'a, C>,
) -> Result<Created, CreateError>
where
    C: IntoIterator<Item = (&'a str, Option<&'a str>)>,
{
    let mut config = base(auto_create);
    if let Some(n) = topic.partitions {
        config.partitions = n;
    }
    for (name, value) in topic.configs {
        topic_config::apply(&mut config, name, value).map_err(CreateError::InvalidConfig)?;
    }
    if let Err(e) = config.validate() {
        return Err(if (1..=1024).contains(&config.partitions) {
            CreateError::InvalidConfig(e.to_string())
        } else {
            CreateError::InvalidPartitions(e.to_string())
        });
    }
    kafko_core::naming::validate_name(topic.name)
        .map_err(|e| CreateError::InvalidName(e.to_string()))?;
    if is_internal(topic.name) {
        return Err(CreateError::InvalidName(format!(
            "'{}' is a Kafka internal topic",
            topic.name
        )));
    }
    if topic.validate_only {
        return match kafko.find_topic(topic.name) {
            Ok(Some(_)) => Err(CreateError::AlreadyExists),
            Ok(None) => Ok(Created {
                config,
                topic: None,
            }),
            Err(e) => Err(CreateError::Failed(e)),
        };
    }
    match kafko
        .create_topic_with_config(topic.name, config.clone())
        .await
    {
        Ok(CreateOutcome::Created) => Ok(Created {
            topic: kafko.find_topic(topic.name).ok().flatten(),
            config,
        }),
        Ok(CreateOutcome::AlreadyExisted) | Err(AdminError::TopicAlreadyExists { .. }) => {
            Err(CreateError::AlreadyExists)
        }
        Err(e) => Err(CreateError::Failed(e)),
    }
}

/// The topic `name`, which did not exist, created when the server auto-creates topics
/// (as Kafka's `auto.create.topics.enable`) with the auto-created topics'
/// configuration. A topic another request created meanwhile (with its own
/// configuration) is used as it is. An internal topic's name is never auto-created.
///
/// # Errors
/// `TopicNotFound` when auto-creation is off or the name is an internal topic's; the
/// creation's failure (`InvalidName`, `LimitReached`, storage…).
pub async fn auto_create(
    kafko: &Kafko,
    auto_create: &AutoCreate,
    name: &str,
) -> Result<TopicHandle, AdminError> {
    match auto_create {
        AutoCreate::Enabled(config) if !is_internal(name) => {
            kafko.topic_or_create(name, config.clone()).await
        }
        _ => Err(AdminError::TopicNotFound {
            topic: name.to_owned(),
        }),
    }
}

/// Why a topic's configs were not changed; each front end answers in its own shape
/// (Kafka's codes in the comments).
#[derive(Debug)]
pub enum AlterError {
    /// A config name, value or operation refused (INVALID_CONFIG).
    InvalidConfig(String),
    /// An invalid name, or an internal topic's (kafko has none: UNKNOWN_TOPIC_OR_PARTITION).
    InvalidName(String),
    /// The log's refusal: no such topic, shutting down, storage.
    Failed(AdminError),
}

/// Changes the configs of the topic `name` as [`topic_config::alter`] says (`replace`:
/// AlterConfigs' whole set; otherwise IncrementalAlterConfigs' changes), persisted before
/// they take effect, the same path as `/v1`'s config change; or, `validate_only`, checks
/// them. Returns the topic's configuration after the change.
///
/// # Errors
/// [`AlterError`].
pub async fn alter_configs(
    kafko: &Kafko,
    auto_create: &AutoCreate,
    name: &str,
    replace: bool,
    ops: &[(&str, AlterOp<'_>)],
    validate_only: bool,
) -> Result<TopicConfig, AlterError> {
    kafko_core::naming::validate_name(name).map_err(|e| AlterError::InvalidName(e.to_string()))?;
    let server_default = base(auto_create);
    let refused = |e: AdminError| match e {
        AdminError::InvalidConfig { reason } => AlterError::InvalidConfig(reason),
        other => AlterError::Failed(other),
    };
    if validate_only {
        let current = kafko
            .describe_topic(name)
            .map_err(AlterError::Failed)?
            .config;
        let next = topic_config::alter(&current, &server_default, replace, ops)
            .map_err(AlterError::InvalidConfig)?;
        next.validate()
            .map_err(|e| AlterError::InvalidConfig(e.to_string()))?;
        return Ok(next);
    }
    kafko
        .alter_topic_config(name, |current| {
            topic_config::alter(current, &server_default, replace, ops)
                .map_err(|reason| KafkoError::InvalidConfig { reason })
        })
        .await
        .map_err(refused)
}
