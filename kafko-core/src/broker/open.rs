//! Opening a data directory: [`KafkoOptions`], the directory lock, recovery of every
//! topic, and the background task that runs retention and compaction.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use tokio::sync::{Notify, watch};

use crate::config::TopicConfig;
use crate::error::{KafkoError, Result};
use crate::naming::validate_name;
use crate::partition::handle::PartitionHandle;
use crate::partition::open::open_partition;
use crate::state_file;
use crate::storage::{StdStorage, Storage};
use crate::topic::Topic;

use super::{CLEAN_MARKER, Inner, Kafko, LOCK_FILE, TOPIC_CONFIG};

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
