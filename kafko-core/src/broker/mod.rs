//! [`Kafko`]: one open data directory — the topic registry, the directory lock, the
//! background maintenance task and the clean-shutdown marker. Its methods are grouped by
//! concern in the submodules:
//! - `open`: [`KafkoOptions`], starting an opened directory, maintenance;
//! - `recover`: locking and recovering a directory (blocking code);
//! - `topics`: creating, describing, reconfiguring and deleting topics;
//! - `data`: topic handles (produce, read, wait), explicit sync and retention;
//! - `state_files`: small state files the layers above the log keep beside it;
//! - `shutdown`: the graceful stop and its `Drop` fallback.

mod data;
pub(crate) mod internal;
mod open;
mod recover;
mod shutdown;
mod state_files;
mod topics;

use std::any::Any;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::error::{KafkoError, Result};
use crate::storage::Storage;
use crate::topic::Topic;
use crate::topic_id::TopicId;

pub use internal::{OFFSETS_TOPIC, OFFSETS_TOPIC_PARTITIONS};
pub use open::KafkoOptions;

const LOCK_FILE: &str = "kafko.lock";
const CLEAN_MARKER: &str = "clean-shutdown";
/// The marker while the directory is open: a clean stop renames it back, which needs no
/// free space, where writing a new file does.
const CLEAN_MARKER_SPARE: &str = "clean-shutdown.spare";
const TOPIC_CONFIG: &str = "topic.json";

/// Whether `create_topic*` made the topic or found it already there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateOutcome {
    /// The topic was created.
    Created,
    /// It already existed with the same configuration.
    AlreadyExisted,
}

pub(crate) struct Inner {
    pub(crate) dir: PathBuf,
    pub(crate) storage: Arc<dyn Storage>,
    /// The descriptors of sealed segments (bounded), shared by every partition.
    pub(crate) files: Arc<crate::segment::files::FileCache>,
    /// Limits on topics and partitions, checked by topic creation.
    pub(crate) limits: open::Limits,
    /// How long an idle idempotent producer's state is kept.
    pub(crate) producer_id_expiration: std::time::Duration,
    topics: RwLock<HashMap<String, Arc<Topic>>>,
    /// `__consumer_offsets`, outside the registry (see `internal`).
    pub(crate) offsets_topic: Arc<Topic>,
    /// The name of each live topic by its id: a lookup by id costs one probe, not a
    /// scan of every topic. Written under the admin lock, after `topics` on a create
    /// and before it on a delete.
    topic_ids: RwLock<HashMap<TopicId, String>>,
    lock: Mutex<Option<Box<dyn Any + Send + Sync>>>,
    closing: AtomicBool,
    closed: AtomicBool,
    /// Serializes topic creation and deletion (never held on the data path).
    admin: tokio::sync::Mutex<()>,
    /// Directories of failed creations that could not be removed at once (out of
    /// descriptors, say), by topic name: removed again before the next creation and
    /// after each delete (under the admin lock), else by the next open.
    unfinished: Mutex<Vec<(String, PathBuf)>>,
    pub(crate) background: Mutex<Vec<JoinHandle<()>>>,
    pub(crate) stop: watch::Sender<bool>,
    /// Whether this open found a clean-shutdown marker.
    recovered_clean: bool,
    /// Consumer groups (offsets, members); see `group`.
    pub(crate) groups: crate::group::Coordinator,
    /// The transaction coordinator and its log; see `transaction`.
    pub(crate) transactions: crate::transaction::Transactions,
    /// Compaction state (one pass at a time); see `compaction`.
    pub(crate) cleaner: crate::compaction::Cleaner,
    /// Woken whenever a topic is created or deleted (see [`Kafko::topics_changed`]).
    pub(crate) topics_changed: Arc<crate::activity::Activity>,
}

/// An open kafko data directory. Cheap to clone; every clone is the same log.
#[derive(Clone)]
pub struct Kafko {
    pub(crate) inner: Arc<Inner>,
}

impl Kafko {
    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        &self.inner.dir
    }

    /// Whether this open found the previous shutdown clean (no recovery scan was needed).
    pub fn recovered_clean(&self) -> bool {
        self.inner.recovered_clean
    }

    pub(crate) fn check_open(&self) -> Result<()> {
        if self.inner.closing.load(Ordering::Acquire) {
            return Err(KafkoError::ShuttingDown);
        }
        Ok(())
    }

    pub(crate) fn resolve(&self, name: &str) -> Result<Arc<Topic>> {
        self.check_open()?;
        self.lookup(name).ok_or_else(|| KafkoError::TopicNotFound {
            topic: name.to_owned(),
        })
    }

    /// The live topic `name`, if any.
    pub(crate) fn lookup(&self, name: &str) -> Option<Arc<Topic>> {
        self.inner
            .topics
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .cloned()
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
}
