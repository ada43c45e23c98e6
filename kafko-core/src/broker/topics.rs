//! Topic administration: create (idempotent), list, describe, reconfigure, delete.
//! Serialized by the admin mutex; never on the data path.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::config::{TopicConfig, TopicConfigUpdate};
use crate::error::{KafkoError, Result};
use crate::naming::validate_name;
use crate::record::now_ms;
use crate::state_file;
use crate::storage::create_dir_durably;
use crate::topic::TopicDescription;

use super::open::open_topic;

use super::{CreateOutcome, Kafko, TOPIC_CONFIG};

impl Kafko {
    /// Creates a topic with the default configuration (idempotent).
    pub async fn create_topic(&self, name: &str) -> Result<CreateOutcome> {
        self.create_topic_with_config(name, TopicConfig::default())
            .await
    }

    /// Creates a topic. Creating it again with the same config is a no-op;
    /// with a different one it is `TopicAlreadyExists`.
    pub async fn create_topic_with_config(
        &self,
        name: &str,
        config: TopicConfig,
    ) -> Result<CreateOutcome> {
        validate_name(name)?;
        config.validate()?;
        self.check_open()?;
        let _admin = self.inner.admin.lock().await;
        if let Ok(existing) = self.topic(name) {
            return if *existing.config() == config {
                Ok(CreateOutcome::AlreadyExisted)
            } else {
                Err(KafkoError::TopicAlreadyExists {
                    topic: name.to_owned(),
                })
            };
        }
        let s = &*self.inner.storage;
        let topics_dir = self.inner.dir.join("topics");
        let dir = topics_dir.join(name);
        if s.exists(&dir) {
            s.remove_dir_all(&dir)
                .map_err(|e| KafkoError::io("removing", &dir, e))?;
        }
        create_dir_durably(s, &dir).map_err(|e| KafkoError::io("creating", &dir, e))?;
        let topic = open_topic(&self.inner.storage, &dir, name, config.clone(), false)?;
        // topic.json is the commit point: a directory without it is discarded on open.
        state_file::write(s, &dir.join(TOPIC_CONFIG), &config)?;
        self.inner
            .topics
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.to_owned(), Arc::new(topic));
        tracing::info!(
            topic = name,
            partitions = config.partitions,
            "created topic"
        );
        Ok(CreateOutcome::Created)
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
    pub fn describe_topic(&self, name: &str) -> Result<TopicDescription> {
        Ok(self.topic(name)?.describe())
    }

    /// Changes a topic's mutable configuration; persisted before it takes effect.
    pub async fn update_topic_config(
        &self,
        name: &str,
        update: &TopicConfigUpdate,
    ) -> Result<TopicConfig> {
        let _admin = self.inner.admin.lock().await;
        let topic = self.topic(name)?;
        let next = topic.config().apply(update)?;
        state_file::write(&*self.inner.storage, &topic.dir.join(TOPIC_CONFIG), &next)?;
        let next = Arc::new(next);
        topic.set_config(next.clone());
        for p in &topic.partitions {
            p.update_config(next.clone()).await?;
        }
        Ok((*next).clone())
    }

    /// Deletes a topic and all its data.
    pub async fn delete_topic(&self, name: &str) -> Result<()> {
        validate_name(name)?;
        let _admin = self.inner.admin.lock().await;
        let topic = self.topic(name)?;
        topic.deleted.store(true, Ordering::Release);
        self.inner
            .topics
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(name);
        for p in &topic.partitions {
            let _ = p.shutdown().await;
        }
        let s = &*self.inner.storage;
        let trash = self.inner.dir.join("trash");
        // Durably: a lost `trash` entry would leave the renamed topic directory with no
        // name at all (space that the next open's trash sweep would never find).
        create_dir_durably(s, &trash).map_err(|e| KafkoError::io("creating", &trash, e))?;
        // A prefix of the name only: `{name}-{ms}` of a 249-character name is past the
        // 255-byte file-name limit, which failed the rename (ENAMETOOLONG) after the
        // topic had already left the in-memory map (found by schemathesis via HTTP).
        let prefix = &name[..name.len().min(64)]; // names are ASCII
        let target = trash.join(format!("{prefix}-{}", now_ms()));
        // Rename out of topics/ first (atomic), so a crash never leaves half a topic live.
        s.rename(&topic.dir, &target)
            .map_err(|e| KafkoError::io("renaming", &topic.dir, e))?;
        let topics_dir = self.inner.dir.join("topics");
        for changed in [&topics_dir, &trash] {
            s.sync_dir(changed)
                .map_err(|e| KafkoError::io("syncing directory", changed, e))?;
        }
        // After the topic's commit point: a crash before this leaves offsets that a
        // recreated topic's reset policy handles, never offsets of a live topic lost.
        self.inner.groups.drop_topic(name).await?;
        s.remove_dir_all(&target)
            .map_err(|e| KafkoError::io("removing", &target, e))?;
        tracing::info!(topic = name, "deleted topic");
        Ok(())
    }
}
