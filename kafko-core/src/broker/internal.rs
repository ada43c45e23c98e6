//! The internal topics under `<data>/internal/`: recovered (or created) at open beside
//! the topics, never in the topic registry, so no front end lists, produces to,
//! reconfigures or deletes them as ordinary topics. `__consumer_offsets` is appended by
//! the group coordinator only (`group/offsets_mirror.rs`), and readers get it through
//! [`Kafko::offsets_topic`]; `__transaction_state` is the transaction coordinator's
//! (`transaction/log.rs`).

use std::path::Path;
use std::sync::Arc;

use crate::config::{CleanupPolicy, FsyncPolicy, TopicConfig};
use crate::error::{AdminError, KafkoError, Result};
use crate::handle::TopicHandle;
use crate::segment::files::FileCache;
use crate::storage::{Storage, create_dir_durably};

use super::Kafko;
use super::recover::{RecoveredTopic, read_topic_config, recover_topic};
use super::topics::make_topic_dir;

/// Kafka's name of the topic holding groups' offsets and metadata.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// Partitions of a new `__consumer_offsets` (Kafka's default is 50): one node on one
/// disk gains nothing from more, and each costs an open segment file.
pub const OFFSETS_TOPIC_PARTITIONS: u32 = 8;

/// The configuration `__consumer_offsets` is created with: compacted, fsynced on every
/// append (as durable as the group files it follows), 100 MiB segments as Kafka's
/// `offsets.topic.segment.bytes`, records up to a whole group's metadata.
fn offsets_topic_config() -> TopicConfig {
    TopicConfig {
        partitions: OFFSETS_TOPIC_PARTITIONS,
        cleanup_policy: CleanupPolicy::Compact,
        fsync: FsyncPolicy::Always,
        segment_bytes: 100 * 1024 * 1024,
        max_record_bytes: 16 * 1024 * 1024,
        retention_ms: None,
        ..TopicConfig::default()
    }
}

/// A recovered internal topic, not started yet.
pub(crate) type RecoveredInternal = RecoveredTopic;

/// Recovers `<data>/internal/__consumer_offsets`, creating it when missing.
pub(crate) fn recover_offsets_topic(
    (storage, files): (&Arc<dyn Storage>, &Arc<FileCache>),
    data_dir: &Path,
    clean: bool,
) -> Result<RecoveredTopic> {
    recover_internal_topic(
        (storage, files),
        data_dir,
        clean,
        OFFSETS_TOPIC,
        offsets_topic_config(),
    )
}

/// Recovers the internal topic `<data>/internal/<name>`, creating it with `config` when
/// missing.
pub(crate) fn recover_internal_topic(
    (storage, files): (&Arc<dyn Storage>, &Arc<FileCache>),
    data_dir: &Path,
    clean: bool,
    name: &str,
    config: TopicConfig,
) -> Result<RecoveredTopic> {
    let s = &**storage;
    let internal = data_dir.join("internal");
    create_dir_durably(s, &internal).map_err(|e| KafkoError::io("creating", &internal, e))?;
    let dir = internal.join(name);
    match read_topic_config(s, &dir)? {
        Some((config, Some(id))) => recover_topic((storage, files), &dir, name, config, id, clean),
        Some((_, None)) => Err(KafkoError::corruption(
            dir.join(super::TOPIC_CONFIG),
            0,
            "the internal topic's config has no id",
        )),
        None => make_topic_dir((storage, files), &dir, name, config),
    }
}

impl Kafko {
    /// `__consumer_offsets`, for reading: groups' committed offsets and stable
    /// generations as records in Kafka's formats, appended as the group files change.
    ///
    /// # Errors
    /// `ShuttingDown` once shutdown began.
    pub fn offsets_topic(&self) -> Result<TopicHandle, AdminError> {
        self.check_open()?;
        Ok(TopicHandle::new(self.inner.offsets_topic.clone()))
    }
}
