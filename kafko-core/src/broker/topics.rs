//! Topic administration: create (idempotent), list, describe, reconfigure, delete.
//! Serialized by the admin mutex; never on the data path. Their file work runs on the
//! blocking pool.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::config::{TopicConfig, TopicConfigUpdate};
use crate::disk;
use crate::error::{AdminError, KafkoError, Result};
use crate::handle::TopicHandle;
use crate::naming::validate_name;
use crate::partition::handle::PartitionHandle;
use crate::partition::open::open_partition;
use crate::partition_list::CAPACITY;
use crate::record::now_ms;
use crate::segment::files::FileCache;
use crate::storage::{Storage, blocking, create_dir_durably};
use crate::topic::{Topic, TopicDescription};
use crate::topic_id::TopicId;

use super::recover::{RecoveredTopic, recover_topic, remove_unfinished_topic};
use super::{CreateOutcome, Kafko, TOPIC_CONFIG};

impl Kafko {
    /// Creates a topic with the default configuration (idempotent).
    ///
    /// # Errors
    /// As [`create_topic_with_config`](Self::create_topic_with_config).
    pub async fn create_topic(&self, name: &str) -> Result<CreateOutcome, AdminError> {
        self.create_topic_with_config(name, TopicConfig::default())
            .await
    }

    /// Creates a topic. Creating it again with the same config is a no-op;
    /// with a different one it is `TopicAlreadyExists`.
    ///
    /// # Errors
    /// [`AdminError::InvalidName`], [`AdminError::InvalidConfig`],
    /// [`AdminError::TopicAlreadyExists`], [`AdminError::LimitReached`] (the log's
    /// limit on topics or partitions), `ShuttingDown`, or a storage failure while
    /// making its directory (nothing of the topic is left behind).
    pub async fn create_topic_with_config(
        &self,
        name: &str,
        config: TopicConfig,
    ) -> Result<CreateOutcome, AdminError> {
        validate_name(name)?;
        config.validate()?;
        self.check_open()?;
        let _admin = self.inner.admin.lock().await;
        if let Some(existing) = self.lookup(name) {
            return if *existing.config() == config {
                Ok(CreateOutcome::AlreadyExisted)
            } else {
                Err(AdminError::TopicAlreadyExists {
                    topic: name.to_owned(),
                })
            };
        }
        self.create_locked(name, config).await?;
        Ok(CreateOutcome::Created)
    }

    /// The topic `name`, created with `config` first when it does not exist; an existing
    /// topic is returned whatever its configuration (another caller may have created it
    /// meanwhile, with its own). The step behind auto-creation: one check and one create
    /// under the admin lock, no error to match and swallow.
    ///
    /// # Errors
    /// As [`create_topic_with_config`](Self::create_topic_with_config), but never
    /// `TopicAlreadyExists`.
    pub async fn topic_or_create(
        &self,
        name: &str,
        config: TopicConfig,
    ) -> Result<TopicHandle, AdminError> {
        if let Some(existing) = self.find_topic(name)? {
            return Ok(existing);
        }
        validate_name(name)?;
        config.validate()?;
        let _admin = self.inner.admin.lock().await;
        self.check_open()?;
        if let Some(existing) = self.lookup(name) {
            return Ok(TopicHandle::new(existing));
        }
        Ok(TopicHandle::new(self.create_locked(name, config).await?))
    }

    /// Creates the topic `name`, which does not exist, under the admin lock.
    async fn create_locked(&self, name: &str, config: TopicConfig) -> Result<Arc<Topic>> {
        self.check_limits(config.partitions)?;
        // This creation handles a leftover of its own name itself.
        self.unfinished().retain(|(n, _)| n != name);
        self.remove_unfinished().await;
        let storage = self.inner.storage.clone();
        let files = self.inner.files.clone();
        let dir = self.inner.dir.join("topics").join(name);
        let owned = name.to_owned();
        let config_on_disk = config.clone();
        let made_dir = dir.clone();
        let made = blocking("creating topic", move || {
            make_topic_dir((&storage, &files), &made_dir, &owned, config_on_disk)
        })
        .await;
        if made.is_err() && self.inner.storage.exists(&dir) {
            self.unfinished().push((name.to_owned(), dir));
        }
        let recovered = made?;
        let topic = Arc::new(recovered.start());
        self.inner
            .topics
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.to_owned(), Arc::clone(&topic));
        self.inner
            .topic_ids
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(topic.id, name.to_owned());
        self.inner.topics_changed.signal();
        tracing::info!(
            topic = name,
            partitions = config.partitions,
            "created topic"
        );
        Ok(topic)
    }

    fn unfinished(&self) -> std::sync::MutexGuard<'_, Vec<(String, PathBuf)>> {
        self.inner
            .unfinished
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Removes the directories failed creations left (called under the admin lock, so
    /// none of them is being created meanwhile); stops at the first that still cannot be
    /// removed, which stays listed.
    async fn remove_unfinished(&self) {
        loop {
            let Some((name, dir)) = self.unfinished().last().cloned() else {
                return;
            };
            if self.lookup(&name).is_some() {
                // Created since: its directory is a live topic's.
                self.unfinished().pop();
                continue;
            }
            let storage = self.inner.storage.clone();
            let at = dir.clone();
            let removed = blocking("removing a failed topic creation", move || {
                if storage.exists(&at) {
                    remove_unfinished_topic(&*storage, &at)?;
                }
                Ok(())
            })
            .await;
            if let Err(e) = removed {
                tracing::debug!(topic = name, error = %e, "a failed creation's directory stays until the next try");
                return;
            }
            tracing::info!(
                topic = name,
                "removed the directory of a failed topic creation"
            );
            self.unfinished().pop();
        }
    }

    /// Names of all topics, sorted.
    pub fn list_topics(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .inner
            .topics
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .cloned()
            .collect();
        names.sort();
        names
    }

    /// Config and per-partition facts of a topic.
    ///
    /// # Errors
    /// [`AdminError::TopicNotFound`], `ShuttingDown`.
    pub fn describe_topic(&self, name: &str) -> Result<TopicDescription, AdminError> {
        Ok(self.resolve(name)?.describe())
    }

    /// Changes a topic's mutable configuration; persisted before it takes effect.
    ///
    /// # Errors
    /// [`AdminError::TopicNotFound`], [`AdminError::InvalidConfig`], `ShuttingDown`, or
    /// a storage failure writing the config (the old one stays in effect).
    pub async fn update_topic_config(
        &self,
        name: &str,
        update: &TopicConfigUpdate,
    ) -> Result<TopicConfig, AdminError> {
        self.alter_topic_config(name, |current| current.apply(update))
            .await
    }

    /// Replaces a topic's configuration with what `alter` makes of the current one, both
    /// under the admin lock (no other change lands in between); persisted before it
    /// takes effect. The partition count cannot change here (`create_partitions` raises
    /// it).
    ///
    /// # Errors
    /// [`AdminError::TopicNotFound`], `alter`'s refusal (as an
    /// [`AdminError::InvalidConfig`] when it is one), [`AdminError::InvalidConfig`] for a
    /// changed partition count or a value out of range, `ShuttingDown`, or a storage
    /// failure writing the config (the old one stays in effect).
    pub async fn alter_topic_config(
        &self,
        name: &str,
        alter: impl FnOnce(&TopicConfig) -> Result<TopicConfig>,
    ) -> Result<TopicConfig, AdminError> {
        let _admin = self.inner.admin.lock().await;
        let topic = self.resolve(name)?;
        let current = topic.config();
        let next = alter(&current)?;
        if next.partitions != current.partitions {
            return Err(AdminError::InvalidConfig {
                reason: "partitions cannot be changed after creation".into(),
            });
        }
        next.validate()?;
        let storage = self.inner.storage.clone();
        let path = topic.dir.join(TOPIC_CONFIG);
        let (on_disk, id) = (next.clone(), topic.id);
        blocking("updating topic config", move || {
            disk::write_topic_config(&*storage, &path, &on_disk, id)
        })
        .await?;
        let next = Arc::new(next);
        topic.set_config(next.clone());
        for p in &topic.partitions {
            p.update_config(next.clone()).await?;
        }
        Ok((*next).clone())
    }

    /// Raises the partition count of topic `name` to `count` (Kafka's
    /// CreatePartitions); with `validate_only`, only checks that it could. The new
    /// partitions' directories are made first, then `topic.json` is replaced with the
    /// new count (write, fsync, rename, directory fsync: the commit point), and only
    /// then are they served: keyed records route over the new count from the next
    /// send. Partitions a crash left before the commit point are empty and ignored, and
    /// taken up by the next raise. Returns the configuration with the new count.
    ///
    /// # Errors
    /// [`AdminError::TopicNotFound`]; [`AdminError::InvalidConfig`] for a count not
    /// above the current one or past 1,024; [`AdminError::LimitReached`] past the log's
    /// limit on partitions; `ShuttingDown`; or a storage failure (the count stays).
    pub async fn create_partitions(
        &self,
        name: &str,
        count: u32,
        validate_only: bool,
    ) -> Result<TopicConfig, AdminError> {
        self.check_open()?;
        let _admin = self.inner.admin.lock().await;
        let topic = self.resolve(name)?;
        let current = topic.config();
        let held = topic.partition_count();
        if count <= held {
            let reason = if count == held {
                format!("Topic already has {held} partition(s).")
            } else {
                format!(
                    "The topic {name} currently has {held} partition(s); {count} would not be an increase."
                )
            };
            return Err(AdminError::InvalidConfig { reason });
        }
        let mut next = (*current).clone();
        next.partitions = count;
        next.validate()?;
        if let Some(limit) = self.inner.limits.partitions {
            let total: u64 = self
                .all_topics()
                .iter()
                .map(|t| u64::from(t.partition_count()))
                .sum();
            if total + u64::from(count - held) > limit {
                return Err(AdminError::LimitReached {
                    resource: "partitions",
                    limit,
                });
            }
        }
        if validate_only {
            return Ok(next);
        }
        let storage = self.inner.storage.clone();
        let files = self.inner.files.clone();
        let (dir, topic_name, activity) = (
            topic.dir.clone(),
            topic.name.clone(),
            topic.activity.clone(),
        );
        let (on_disk, id) = (next.clone(), topic.id);
        let opened = blocking("adding partitions", move || {
            let mut opened = Vec::with_capacity((count - held) as usize);
            for p in held..count {
                opened.push(open_partition(
                    (&storage, &files),
                    dir.join(p.to_string()),
                    topic_name.clone(),
                    p,
                    false,
                    activity.clone(),
                )?);
            }
            // The new partitions' entries, then the count that makes them part of the
            // topic.
            storage
                .sync_dir(&dir)
                .map_err(|e| KafkoError::io("syncing directory", &dir, e))?;
            disk::write_topic_config(&*storage, &dir.join(TOPIC_CONFIG), &on_disk, id)?;
            Ok(opened)
        })
        .await?;
        let next = Arc::new(next);
        for (log, active) in opened {
            let handle = PartitionHandle::new(log, next.clone(), active);
            if let Err(handle) = topic.partitions.push(handle) {
                // Past the list's capacity, which the config's limit keeps far off.
                let _ = handle.shutdown().await;
                return Err(AdminError::from(KafkoError::InvalidConfig {
                    reason: format!("a topic holds at most {CAPACITY} partitions"),
                }));
            }
        }
        topic.set_config(next.clone());
        for p in &topic.partitions {
            p.update_config(next.clone()).await?;
        }
        self.inner.topics_changed.signal();
        tracing::info!(topic = name, from = held, to = count, "added partitions");
        Ok((*next).clone())
    }

    /// Refuses a new topic of `partitions` partitions that would pass a limit (called
    /// under the admin lock, so no other creation races it).
    fn check_limits(&self, partitions: u32) -> Result<(), AdminError> {
        let limits = self.inner.limits;
        let topics = self.all_topics();
        if let Some(limit) = limits.topics
            && topics.len() as u64 >= limit
        {
            return Err(AdminError::LimitReached {
                resource: "topics",
                limit,
            });
        }
        if let Some(limit) = limits.partitions {
            let held: u64 = topics
                .iter()
                .map(|t| u64::from(t.config().partitions))
                .sum();
            if held + u64::from(partitions) > limit {
                return Err(AdminError::LimitReached {
                    resource: "partitions",
                    limit,
                });
            }
        }
        Ok(())
    }

    /// Deletes a topic and all its data.
    ///
    /// # Errors
    /// [`AdminError::InvalidName`], [`AdminError::TopicNotFound`], `ShuttingDown`, or a
    /// storage failure moving its directory out (or removing it afterwards).
    pub async fn delete_topic(&self, name: &str) -> Result<(), AdminError> {
        validate_name(name)?;
        let _admin = self.inner.admin.lock().await;
        let topic = self.resolve(name)?;
        topic.deleted.store(true, Ordering::Release);
        self.inner
            .topic_ids
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&topic.id);
        self.inner
            .topics
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(name);
        self.inner.topics_changed.signal();
        for p in &topic.partitions {
            // Long-polls and streams on the topic end now, with `TopicDeleted`.
            p.log.wake_readers();
            let _ = p.shutdown().await;
            // Its directory is renamed away next, and a new topic may take the name.
            p.log.close_files();
        }
        let storage = self.inner.storage.clone();
        let data_dir = self.inner.dir.clone();
        let topic_dir = topic.dir.clone();
        let owned = name.to_owned();
        let target = blocking("deleting topic", move || {
            move_to_trash(&*storage, &data_dir, &topic_dir, &owned)
        })
        .await?;
        // After the topic's commit point: a crash before this leaves offsets that a
        // recreated topic's reset policy handles, never offsets of a live topic lost.
        self.inner.groups.drop_topic(name).await?;
        let storage = self.inner.storage.clone();
        blocking("deleting topic", move || {
            storage
                .remove_dir_all(&target)
                .map_err(|e| KafkoError::io("removing", &target, e))
        })
        .await?;
        tracing::info!(topic = name, "deleted topic");
        // The descriptors it held may be what a failed creation's cleanup lacked.
        self.remove_unfinished().await;
        Ok(())
    }
}

/// Creates the directory of a new topic and its partitions, then `topic.json`, its commit
/// point. On failure nothing is left half-made: the directory (which holds no record
/// yet) is removed again; if even that fails, the next open or create removes it.
pub(super) fn make_topic_dir(
    (storage, files): (&Arc<dyn Storage>, &Arc<FileCache>),
    dir: &Path,
    name: &str,
    config: TopicConfig,
) -> Result<RecoveredTopic> {
    let s = &**storage;
    let id = TopicId::generate();
    if s.exists(dir) {
        // A creation of this process that failed and could not clean up after itself.
        remove_unfinished_topic(s, dir)?;
    }
    let made = create_dir_durably(s, dir)
        .map_err(|e| KafkoError::io("creating", dir, e))
        .and_then(|()| recover_topic((storage, files), dir, name, config.clone(), id, false))
        .and_then(|topic| {
            disk::write_topic_config(s, &dir.join(TOPIC_CONFIG), &config, id)?;
            Ok(topic)
        });
    if made.is_err()
        && s.exists(dir)
        && let Err(e) = remove_unfinished_topic(s, dir)
    {
        tracing::warn!(topic = name, error = %e, "could not remove the directory of a failed topic creation");
    }
    made
}

/// Renames a deleted topic's directory into `trash/` (the delete's commit point) and
/// makes that durable; returns where it went.
fn move_to_trash(
    s: &dyn Storage,
    data_dir: &Path,
    topic_dir: &Path,
    name: &str,
) -> Result<PathBuf> {
    let trash = data_dir.join("trash");
    // Durably: a lost `trash` entry would leave the renamed topic directory with no
    // name at all (space that the next open's trash sweep would never find).
    create_dir_durably(s, &trash).map_err(|e| KafkoError::io("creating", &trash, e))?;
    // A prefix of the name only: `{name}-{ms}` of a 249-character name is past the
    // 255-byte file-name limit, which failed the rename (ENAMETOOLONG) after the
    // topic had already left the in-memory map (found by schemathesis via HTTP).
    let prefix = &name[..name.len().min(64)]; // names are ASCII
    let target = trash.join(format!("{prefix}-{}", now_ms()));
    // Rename out of topics/ first (atomic), so a crash never leaves half a topic live.
    s.rename(topic_dir, &target)
        .map_err(|e| KafkoError::io("renaming", topic_dir, e))?;
    let topics_dir = data_dir.join("topics");
    for changed in [&topics_dir, &trash] {
        s.sync_dir(changed)
            .map_err(|e| KafkoError::io("syncing directory", changed, e))?;
    }
    Ok(target)
}
