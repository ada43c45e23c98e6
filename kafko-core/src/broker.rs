//! [`Kafko`]: the open data directory — topic registry, directory lock, background
//! maintenance, clean-shutdown marker — and [`KafkoOptions`] to open one.

use std::any::Any;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use crate::config::{TopicConfig, TopicConfigUpdate};
use crate::consumer::Consumer;
use crate::error::{KafkoError, Result};
use crate::naming::validate_name;
use crate::partition::FetchedRecords;
use crate::partition::command::RetentionOutcome;
use crate::partition::handle::PartitionHandle;
use crate::partition::open::open_partition;
use crate::producer::Producer;
use crate::record::{ProducerRecord, RecordMetadata, now_ms};
use crate::state_file;
use crate::storage::{StdStorage, Storage, create_dir_durably};
use crate::topic::{SendOptions, Topic, TopicDescription};

const LOCK_FILE: &str = "kafko.lock";
const CLEAN_MARKER: &str = "clean-shutdown";
const TOPIC_CONFIG: &str = "topic.json";

/// Whether `create_topic*` made the topic or found it already there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateOutcome {
    /// The topic was created.
    Created,
    /// It already existed with the same configuration.
    AlreadyExisted,
}

/// How to open a data directory.
#[derive(Clone)]
pub struct KafkoOptions {
    dir: PathBuf,
    storage: Arc<dyn Storage>,
    retention_check_interval: Duration,
}

impl KafkoOptions {
    /// Options for `dir` with defaults: the real filesystem, retention checked every 30 s.
    pub fn new(dir: impl AsRef<Path>) -> Self {
        KafkoOptions {
            dir: dir.as_ref().to_path_buf(),
            storage: Arc::new(StdStorage),
            retention_check_interval: Duration::from_secs(30),
        }
    }

    /// Uses another storage layer (fault injection, simulation).
    pub fn storage(mut self, storage: Arc<dyn Storage>) -> Self {
        self.storage = storage;
        self
    }

    /// How often background retention and compaction run.
    pub fn retention_check_interval(mut self, every: Duration) -> Self {
        self.retention_check_interval = every;
        self
    }

    /// Opens the directory (creating it), recovering every topic.
    pub async fn open(self) -> Result<Kafko> {
        Kafko::open_with(self).await
    }
}

pub(crate) struct Inner {
    pub(crate) dir: PathBuf,
    pub(crate) storage: Arc<dyn Storage>,
    topics: RwLock<HashMap<String, Arc<Topic>>>,
    lock: Mutex<Option<Box<dyn Any + Send + Sync>>>,
    closing: AtomicBool,
    closed: AtomicBool,
    /// Serializes topic creation and deletion (never held on the data path).
    admin: tokio::sync::Mutex<()>,
    background: Mutex<Vec<JoinHandle<()>>>,
    stop: watch::Sender<bool>,
    /// Whether this open found a clean-shutdown marker.
    recovered_clean: bool,
    /// Consumer groups (offsets, members); see `group`.
    pub(crate) groups: crate::group::Coordinator,
    /// Compaction state (one pass at a time); see `compaction`.
    pub(crate) cleaner: crate::compaction::Cleaner,
}

/// An open kafko data directory. Cheap to clone; every clone is the same log.
#[derive(Clone)]
pub struct Kafko {
    pub(crate) inner: Arc<Inner>,
}

impl Kafko {
    /// Opens (or creates) the data directory at `dir` with default options.
    pub async fn open(dir: impl AsRef<Path>) -> Result<Kafko> {
        KafkoOptions::new(dir).open().await
    }

    /// Options to open `dir` with.
    pub fn builder(dir: impl AsRef<Path>) -> KafkoOptions {
        KafkoOptions::new(dir)
    }

    async fn open_with(options: KafkoOptions) -> Result<Kafko> {
        let storage = options.storage.clone();
        let dir = options.dir.clone();
        let s = &*storage;
        s.create_dir_all(&dir.join("topics"))
            .map_err(|e| KafkoError::io("creating", &dir, e))?;
        // A topic's own fsyncs cover entries inside `topics/`, never the entry of `topics/`
        // itself: without this, a power cut can lose every topic of a fresh directory.
        s.sync_dir(&dir)
            .map_err(|e| KafkoError::io("syncing directory", &dir, e))?;
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            // Best effort: the data directory may itself be new (its parent may not be ours).
            let _ = s.sync_dir(parent);
        }
        let lock = match s.try_lock(&dir.join(LOCK_FILE)) {
            Ok(l) => l,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                return Err(KafkoError::AlreadyOpen { path: dir });
            }
            Err(e) => return Err(KafkoError::io("locking", dir.join(LOCK_FILE), e)),
        };
        let marker = dir.join(CLEAN_MARKER);
        let clean = s.exists(&marker);
        if clean {
            tracing::info!(dir = %dir.display(), "clean shutdown marker found; skipping recovery scan");
        } else {
            tracing::info!(dir = %dir.display(), "no clean shutdown marker; scanning active segments");
        }
        let trash = dir.join("trash");
        if s.exists(&trash) {
            s.remove_dir_all(&trash)
                .map_err(|e| KafkoError::io("emptying", &trash, e))?;
        }
        let mut topics = HashMap::new();
        let topics_dir = dir.join("topics");
        for path in s
            .list_dir(&topics_dir)
            .map_err(|e| KafkoError::io("listing", &topics_dir, e))?
        {
            let Some(name) = path.file_name().and_then(|n| n.to_str()).map(str::to_owned) else {
                continue;
            };
            if validate_name(&name).is_err() {
                continue;
            }
            let Some(config) = state_file::read::<TopicConfig>(s, &path.join(TOPIC_CONFIG))? else {
                // Creation never reached its commit point (topic.json): discard it.
                tracing::warn!(topic = %name, "removing a topic whose creation did not finish");
                s.remove_dir_all(&path)
                    .map_err(|e| KafkoError::io("removing", &path, e))?;
                continue;
            };
            let topic = open_topic(&storage, &path, &name, config, clean)?;
            topics.insert(name, Arc::new(topic));
        }
        if clean {
            // Removed before any write is accepted: a crash from now on must scan.
            s.remove_file(&marker)
                .map_err(|e| KafkoError::io("removing", &marker, e))?;
            s.sync_dir(&dir)
                .map_err(|e| KafkoError::io("syncing directory", &dir, e))?;
        }
        let groups = crate::group::Coordinator::open(&dir, storage.clone())?;
        let (stop, _) = watch::channel(false);
        let inner = Arc::new(Inner {
            dir,
            storage,
            topics: RwLock::new(topics),
            lock: Mutex::new(Some(lock)),
            closing: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            admin: tokio::sync::Mutex::new(()),
            background: Mutex::new(Vec::new()),
            stop,
            recovered_clean: clean,
            groups,
            cleaner: crate::compaction::Cleaner::default(),
        });
        let kafko = Kafko { inner };
        kafko.spawn_maintenance(options.retention_check_interval);
        Ok(kafko)
    }

    fn spawn_maintenance(&self, every: Duration) {
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        let mut stop = self.inner.stop.subscribe();
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = stop.changed() => return,
                }
                let Some(inner) = weak.upgrade() else { return };
                let kafko = Kafko { inner };
                if let Err(e) = kafko.enforce_retention().await {
                    tracing::warn!(error = %e, "retention pass failed");
                }
                if let Err(e) = crate::compaction::compact_all(&kafko).await {
                    tracing::warn!(error = %e, "compaction pass failed");
                }
            }
        });
        self.inner
            .background
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(task);
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        &self.inner.dir
    }

    /// Whether this open found the previous shutdown clean (no recovery scan was needed).
    pub fn recovered_clean(&self) -> bool {
        self.inner.recovered_clean
    }

    fn check_open(&self) -> Result<()> {
        if self.inner.closing.load(Ordering::Acquire) {
            return Err(KafkoError::ShuttingDown);
        }
        Ok(())
    }

    pub(crate) fn topic(&self, name: &str) -> Result<Arc<Topic>> {
        self.check_open()?;
        self.inner
            .topics
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .cloned()
            .ok_or_else(|| KafkoError::TopicNotFound {
                topic: name.to_owned(),
            })
    }

    pub(crate) fn all_topics(&self) -> Vec<Arc<Topic>> {
        self.inner
            .topics
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect()
    }

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

    /// A producer for an existing topic.
    pub async fn producer_for(&self, name: &str) -> Result<Producer> {
        Ok(Producer {
            topic: self.topic(name)?,
        })
    }

    /// A consumer over every partition of an existing topic, starting at the log start.
    pub async fn consumer_for(&self, name: &str) -> Result<Consumer> {
        Ok(Consumer::new(self.topic(name)?))
    }

    /// Appends records to a topic (the HTTP layer's entry point).
    pub async fn produce(
        &self,
        topic: &str,
        records: Vec<ProducerRecord>,
        options: SendOptions,
    ) -> Result<Vec<RecordMetadata>> {
        let topic = self.topic(topic)?;
        match <[ProducerRecord; 1]>::try_from(records) {
            // One record (the common REST call) skips the batch grouping.
            Ok([record]) => Ok(vec![topic.send_one(record, options).await?]),
            Err(records) => topic.send(records, options).await,
        }
    }

    /// Reads one partition from `offset`.
    pub fn fetch(
        &self,
        topic: &str,
        partition: u32,
        offset: u64,
        max_records: usize,
        max_bytes: usize,
    ) -> Result<FetchedRecords> {
        self.topic(topic)?
            .partition(partition)?
            .log
            .read(offset, max_records, max_bytes)
    }

    /// `(log_start_offset, high_watermark)` of a partition.
    pub fn offsets(&self, topic: &str, partition: u32) -> Result<(u64, u64)> {
        let t = self.topic(topic)?;
        let log = &t.partition(partition)?.log;
        Ok((log.log_start(), log.high_watermark()))
    }

    /// Number of partitions of a topic.
    pub fn partition_count(&self, topic: &str) -> Result<u32> {
        Ok(self.topic(topic)?.partitions.len() as u32)
    }

    /// The first offset at or after `timestamp` in a partition, if any record is that new.
    pub fn offset_for_timestamp(
        &self,
        topic: &str,
        partition: u32,
        timestamp: i64,
    ) -> Result<Option<u64>> {
        self.topic(topic)?
            .partition(partition)?
            .log
            .offset_for_timestamp(timestamp)
    }

    /// Waits until the partition holds a record at `offset` or `timeout` passes.
    pub async fn wait_for(
        &self,
        topic: &str,
        partition: u32,
        offset: u64,
        timeout: Duration,
    ) -> Result<bool> {
        let t = self.topic(topic)?;
        let log = t.partition(partition)?.log.clone();
        Ok(log.wait_for(offset, timeout).await)
    }

    /// A receiver of the partition's high watermark, for streaming readers.
    pub fn watch_high_watermark(
        &self,
        topic: &str,
        partition: u32,
    ) -> Result<watch::Receiver<u64>> {
        Ok(self.topic(topic)?.partition(partition)?.log.subscribe())
    }

    /// A notifier woken whenever any partition of the topic grows.
    pub fn topic_activity(&self, topic: &str) -> Result<Arc<Notify>> {
        Ok(self.topic(topic)?.activity.clone())
    }

    /// fsyncs every partition of every topic.
    pub async fn sync(&self) -> Result<()> {
        for t in self.all_topics() {
            for p in &t.partitions {
                p.sync().await?;
            }
        }
        Ok(())
    }

    /// Runs retention on every partition now.
    pub async fn enforce_retention(&self) -> Result<RetentionOutcome> {
        let mut total = RetentionOutcome::default();
        let now = now_ms();
        for t in self.all_topics() {
            for p in &t.partitions {
                let o = p.retention(now).await?;
                total.segments_deleted += o.segments_deleted;
                total.bytes_deleted += o.bytes_deleted;
            }
        }
        Ok(total)
    }

    /// Stops intake, drains and fsyncs every partition, writes the clean-shutdown
    /// marker and releases the directory lock. Idempotent.
    pub async fn shutdown(&self) -> Result<()> {
        shutdown_inner(&self.inner).await
    }

    /// Whether `shutdown` has begun.
    pub fn is_shutting_down(&self) -> bool {
        self.inner.closing.load(Ordering::Acquire)
    }
}

pub(crate) fn open_topic(
    storage: &Arc<dyn Storage>,
    dir: &Path,
    name: &str,
    config: TopicConfig,
    clean: bool,
) -> Result<Topic> {
    config.validate()?;
    let name: Arc<str> = Arc::from(name);
    let activity = Arc::new(Notify::new());
    let shared_config = Arc::new(config.clone());
    let mut partitions = Vec::with_capacity(config.partitions as usize);
    for p in 0..config.partitions {
        let (log, active) = open_partition(
            storage,
            dir.join(p.to_string()),
            name.clone(),
            p,
            clean,
            activity.clone(),
        )?;
        partitions.push(PartitionHandle::spawn(log, shared_config.clone(), active));
    }
    // A partition directory this open had to create (a power cut can keep topic.json but
    // drop a partition's directory entry) is durable only once the topic directory is.
    storage
        .sync_dir(dir)
        .map_err(|e| KafkoError::io("syncing directory", dir, e))?;
    Ok(Topic::new(
        name,
        dir.to_path_buf(),
        config,
        partitions,
        activity,
    ))
}

async fn shutdown_inner(inner: &Inner) -> Result<()> {
    if inner.closing.swap(true, Ordering::AcqRel) {
        return Ok(());
    }
    inner.stop.send_replace(true);
    let tasks: Vec<_> = inner
        .background
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .drain(..)
        .collect();
    for t in tasks {
        let _ = t.await;
    }
    let topics: Vec<_> = inner
        .topics
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .values()
        .cloned()
        .collect();
    let mut first_error = None;
    for t in &topics {
        for p in &t.partitions {
            if let Err(e) = p.shutdown().await {
                tracing::error!(topic = %t.name, partition = p.log.partition, error = %e, "partition shutdown failed");
                first_error.get_or_insert(e);
            }
        }
    }
    if let Err(e) = inner.groups.flush().await {
        tracing::error!(error = %e, "flushing group offsets failed");
        first_error.get_or_insert(e);
    }
    if first_error.is_none() {
        // Written last, and only when every partition is durable.
        let marker = inner.dir.join(CLEAN_MARKER);
        state_file::write(&*inner.storage, &marker, &now_ms())?;
    }
    inner.lock.lock().unwrap_or_else(|p| p.into_inner()).take();
    inner.closed.store(true, Ordering::Release);
    tracing::info!(dir = %inner.dir.display(), "kafko shut down");
    first_error.map_or(Ok(()), Err)
}

impl Drop for Inner {
    fn drop(&mut self) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        // Best-effort fallback: a multi-thread runtime can block this thread to finish the
        // graceful path. Elsewhere the writers still fsync when their inboxes close.
        if let Ok(handle) = tokio::runtime::Handle::try_current()
            && handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
        {
            let result = tokio::task::block_in_place(|| handle.block_on(shutdown_inner(self)));
            if let Err(e) = result {
                tracing::error!(error = %e, "shutdown on drop failed");
            }
        }
    }
}
