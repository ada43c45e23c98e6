//! Opening a data directory: [`KafkoOptions`], recovery (`recover`, run on the blocking
//! pool), starting the writers, and the background tasks that run retention and
//! compaction, and forget idle in-memory groups.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use tokio::sync::watch;

use crate::error::OpenError;
use crate::segment::files::{DEFAULT_MAX_OPEN_SEGMENT_FILES, FileCache};
use crate::storage::{StdStorage, Storage, blocking};

use super::recover::recover_directory;
use super::{Inner, Kafko};

/// Kafka's default `producer.id.expiration.ms`: one day.
const DEFAULT_PRODUCER_ID_EXPIRATION: Duration = Duration::from_secs(24 * 3600);

/// How to open a data directory.
#[derive(Clone)]
pub struct KafkoOptions {
    dir: PathBuf,
    storage: Arc<dyn Storage>,
    retention_check_interval: Duration,
    idle_group_timeout: Duration,
    offsets_retention: Option<Duration>,
    max_open_segment_files: usize,
    limits: Limits,
    group_limits: crate::GroupLimits,
    producer_id_expiration: Duration,
    transactions: crate::transaction::TransactionLimits,
}

/// Limits on what a log may hold; `None` is unlimited.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Limits {
    /// Topics.
    pub(crate) topics: Option<u64>,
    /// Partitions of all topics together.
    pub(crate) partitions: Option<u64>,
    /// Consumer groups.
    pub(crate) groups: Option<u64>,
}

impl KafkoOptions {
    /// Options for `dir` with defaults: the real filesystem, retention checked every 30 s.
    pub fn new(dir: impl AsRef<Path>) -> Self {
        KafkoOptions {
            dir: dir.as_ref().to_path_buf(),
            storage: Arc::new(StdStorage),
            retention_check_interval: Duration::from_secs(30),
            idle_group_timeout: crate::group::DEFAULT_IDLE_GROUP_TIMEOUT,
            offsets_retention: Some(crate::group::DEFAULT_OFFSETS_RETENTION),
            max_open_segment_files: DEFAULT_MAX_OPEN_SEGMENT_FILES,
            limits: Limits::default(),
            group_limits: crate::GroupLimits::default(),
            producer_id_expiration: DEFAULT_PRODUCER_ID_EXPIRATION,
            transactions: crate::transaction::TransactionLimits::default(),
        }
    }

    /// How long a partition keeps an idempotent producer's state after its last batch's
    /// newest timestamp (Kafka's `producer.id.expiration.ms`; default 1 day). Checked
    /// every retention check interval; an expired producer's retry is written as new.
    pub fn producer_id_expiration(mut self, expiration: Duration) -> Self {
        self.producer_id_expiration = expiration;
        self
    }

    /// The transaction coordinator's limits: the longest transaction timeout, how long
    /// an idle transactional id is kept, how often timeouts are checked, how many ids
    /// and how many partitions per transaction (defaults: Kafka's where it has one).
    pub fn transactions(mut self, limits: crate::transaction::TransactionLimits) -> Self {
        self.transactions = limits;
        self
    }

    /// How long a group with no live member keeps a committed offset after its last
    /// commit and after the group last had a member (Kafka's `offsets.retention.minutes`;
    /// default 7 days); `None` keeps offsets until their group or topic is deleted.
    /// Checked every retention check interval.
    pub fn offsets_retention(mut self, retention: Option<Duration>) -> Self {
        self.offsets_retention = retention;
        self
    }

    /// How long a consumer group that holds nothing on disk (never configured, no
    /// committed offset) and has no live member is kept after its last join, poll,
    /// commit or seek (default 30 s, the default session of a member). Such a group is
    /// only in-memory positions: forgetting it is what a restart does to it.
    pub fn idle_group_timeout(mut self, timeout: Duration) -> Self {
        self.idle_group_timeout = timeout;
        self
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

    /// How many descriptors of sealed segments stay open (default 512, at least 1): the
    /// least recently read are closed beyond it and opened again when read. Each
    /// partition also holds its active segment's file open.
    pub fn max_open_segment_files(mut self, max: usize) -> Self {
        self.max_open_segment_files = max.max(1);
        self
    }

    /// The most topics the log holds (default unlimited): a create past it is refused
    /// with `LimitReached`. Topics already on disk at open all open.
    pub fn max_topics(mut self, max: Option<u64>) -> Self {
        self.limits.topics = max;
        self
    }

    /// The most partitions of all topics together (default unlimited): a create that
    /// would pass it is refused with `LimitReached`. Each partition keeps its active
    /// segment's file open, so this also bounds those descriptors.
    pub fn max_partitions(mut self, max: Option<u64>) -> Self {
        self.limits.partitions = max;
        self
    }

    /// The most consumer groups (default unlimited): a join, poll, commit, seek or
    /// configure that would create one more is refused with `LimitReached`. Groups
    /// already on disk at open all load.
    pub fn max_groups(mut self, max: Option<u64>) -> Self {
        self.limits.groups = max;
        self
    }

    /// The limits of Kafka clients' consumer groups: sessions, members, the bytes they
    /// hold, offset metadata, and the memory of groups that hold nothing on disk
    /// (default [`GroupLimits::default`](crate::GroupLimits)).
    pub fn group_limits(mut self, limits: crate::GroupLimits) -> Self {
        self.group_limits = limits;
        self
    }

    /// Opens the directory (creating it), recovering every topic.
    ///
    /// # Errors
    /// [`OpenError::AlreadyOpen`] when another instance holds the directory; a storage
    /// failure (or damage recovery cannot repair) while locking or recovering it.
    pub async fn open(self) -> Result<Kafko, OpenError> {
        Kafko::open_with(self).await
    }
}

impl Kafko {
    /// Opens (or creates) the data directory at `dir` with default options.
    ///
    /// # Errors
    /// As [`KafkoOptions::open`].
    pub async fn open(dir: impl AsRef<Path>) -> Result<Kafko, OpenError> {
        KafkoOptions::new(dir).open().await
    }

    /// Options to open `dir` with.
    pub fn builder(dir: impl AsRef<Path>) -> KafkoOptions {
        KafkoOptions::new(dir)
    }

    async fn open_with(options: KafkoOptions) -> Result<Kafko, OpenError> {
        let storage = options.storage.clone();
        let dir = options.dir.clone();
        let files = FileCache::new(storage.clone(), options.max_open_segment_files);
        let cache = files.clone();
        let recovered = blocking("recovering", move || {
            recover_directory(&storage, &cache, &dir)
        })
        .await?;
        let topics: std::collections::HashMap<String, Arc<crate::topic::Topic>> = recovered
            .topics
            .into_iter()
            .map(|t| (t.name.to_string(), Arc::new(t.start())))
            .collect();
        let topic_ids = topics.iter().map(|(n, t)| (t.id, n.clone())).collect();
        let offsets_topic = Arc::new(recovered.offsets_topic.start());
        let transaction_topic = Arc::new(recovered.transaction_topic.start());
        let loaded = {
            let handle = crate::handle::TopicHandle::new(transaction_topic.clone());
            let dir = transaction_topic.dir.clone();
            blocking("loading the transaction log", move || {
                crate::transaction::log::load(&handle, &dir)
            })
            .await?
        };
        let transactions =
            crate::transaction::Transactions::new(transaction_topic, loaded, options.transactions);
        let mut groups = recovered.groups;
        groups.set_idle_timeout(options.idle_group_timeout);
        groups.set_offsets_retention(options.offsets_retention);
        groups.set_limits(options.group_limits);
        let (stop, _) = watch::channel(false);
        let inner = Arc::new(Inner {
            dir: options.dir,
            storage: options.storage,
            files,
            limits: options.limits,
            producer_id_expiration: options.producer_id_expiration,
            topics: RwLock::new(topics),
            offsets_topic,
            topic_ids: RwLock::new(topic_ids),
            lock: Mutex::new(Some(recovered.lock)),
            closing: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            admin: tokio::sync::Mutex::new(()),
            unfinished: Mutex::new(Vec::new()),
            background: Mutex::new(Vec::new()),
            stop,
            recovered_clean: recovered.clean,
            groups: groups.with_max_groups(options.limits.groups),
            transactions,
            cleaner: crate::compaction::Cleaner::default(),
            topics_changed: Arc::new(crate::activity::Activity::new()),
        });
        let kafko = Kafko { inner };
        if let Err(e) = crate::transaction::open_sweep(&kafko).await {
            // Stops what started; the directory opens again once the disk takes writes.
            let _ = kafko.shutdown().await;
            return Err(e.into());
        }
        crate::transaction::spawn_timer(&kafko);
        kafko.spawn_maintenance(options.retention_check_interval);
        kafko.spawn_group_eviction(options.idle_group_timeout);
        let mirror = kafko.inner.groups.spawn_offsets_mirror(
            kafko.inner.offsets_topic.clone(),
            kafko.inner.stop.subscribe(),
        );
        kafko
            .inner
            .background
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(mirror);
        Ok(kafko)
    }

    /// Forgets idle groups that hold nothing on disk, checking twice per idle timeout
    /// (at most once a second, at least every 10 ms).
    fn spawn_group_eviction(&self, timeout: Duration) {
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        let mut stop = self.inner.stop.subscribe();
        let every = (timeout / 2).clamp(Duration::from_millis(10), Duration::from_secs(1));
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = stop.changed() => return,
                }
                let Some(inner) = weak.upgrade() else { return };
                let forgotten = inner.groups.evict_idle();
                if forgotten > 0 {
                    tracing::debug!(forgotten, "idle groups without offsets forgotten");
                }
            }
        });
        self.inner
            .background
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(task);
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
                if let Err(e) = kafko.expire_group_offsets().await {
                    tracing::warn!(error = %e, "offsets retention pass failed");
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
