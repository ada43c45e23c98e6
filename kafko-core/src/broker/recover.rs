//! Recovering a data directory at open, as blocking code (it scans segments and fsyncs):
//! create and lock the directory, recover every topic directory, load the consumer
//! groups, then sweep `trash/` and remove the clean-shutdown marker — last, so that an
//! open refused for damage leaves both as they were. A topic directory without `topic.json` is a creation that never
//! reached its commit point: it is removed only when it provably holds no record, and
//! refused otherwise (FORMAT.md, "Recovery rules").

use std::any::Any;
use std::path::Path;
use std::sync::Arc;

use crate::activity::Activity;

use crate::config::TopicConfig;
use crate::disk;
use crate::error::{KafkoError, Result};
use crate::group::Coordinator;
use crate::naming::validate_name;
use crate::partition::PartitionLog;
use crate::partition::handle::PartitionHandle;
use crate::partition::open::open_partition;
use crate::segment::Segment;
use crate::segment::files::FileCache;
use crate::state_file;
use crate::storage::Storage;
use crate::topic::Topic;
use crate::topic_id::TopicId;

use super::{CLEAN_MARKER, CLEAN_MARKER_SPARE, LOCK_FILE, TOPIC_CONFIG};

/// A data directory recovered from disk, its writers not started yet.
pub(crate) struct Recovered {
    /// Held for as long as the directory is open.
    pub(crate) lock: Box<dyn Any + Send + Sync>,
    /// Whether the previous shutdown left its marker.
    pub(crate) clean: bool,
    pub(crate) topics: Vec<RecoveredTopic>,
    /// `__consumer_offsets` (see `internal`).
    pub(crate) offsets_topic: RecoveredTopic,
    /// `__transaction_state`, the transaction log.
    pub(crate) transaction_topic: RecoveredTopic,
    pub(crate) groups: Coordinator,
}

/// A topic whose partitions are loaded and whose writers have not started.
pub(crate) struct RecoveredTopic {
    pub(crate) name: Arc<str>,
    dir: std::path::PathBuf,
    config: TopicConfig,
    id: TopicId,
    partitions: Vec<(Arc<PartitionLog>, Arc<Segment>)>,
    activity: Arc<Activity>,
}

impl RecoveredTopic {
    /// Starts the topic: each partition's write queue (write groups), on the current
    /// runtime.
    pub(crate) fn start(self) -> Topic {
        let shared_config = Arc::new(self.config.clone());
        let partitions = self
            .partitions
            .into_iter()
            .map(|(log, active)| PartitionHandle::new(log, shared_config.clone(), active))
            .collect();
        Topic::new(
            self.name,
            self.id,
            self.dir,
            self.config,
            partitions,
            self.activity,
        )
    }
}

/// Creates, locks and recovers the data directory `dir`.
pub(crate) fn recover_directory(
    storage: &Arc<dyn Storage>,
    files: &Arc<FileCache>,
    dir: &Path,
) -> Result<Recovered> {
    let s = &**storage;
    s.create_dir_all(&dir.join("topics"))
        .map_err(|e| KafkoError::io("creating", dir, e))?;
    // A topic's own fsyncs cover entries inside `topics/`, never the entry of `topics/`
    // itself: without this, a power cut can lose every topic of a fresh directory.
    s.sync_dir(dir)
        .map_err(|e| KafkoError::io("syncing directory", dir, e))?;
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        // Best effort: the data directory may itself be new (its parent may not be ours).
        let _ = s.sync_dir(parent);
    }
    let lock = lock_directory(s, dir)?;
    let marker = dir.join(CLEAN_MARKER);
    let clean = s.exists(&marker);
    if clean {
        tracing::info!(dir = %dir.display(), "clean shutdown marker found; skipping recovery scan");
    } else {
        tracing::info!(dir = %dir.display(), "no clean shutdown marker; scanning active segments");
    }
    let mut topics = Vec::new();
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
        let Some((config, id)) = read_topic_config(s, &path)? else {
            // Creation never reached its commit point (topic.json).
            remove_unfinished_topic(s, &path)?;
            tracing::warn!(topic = %name, "removed the empty directory of a topic whose creation did not finish");
            continue;
        };
        let id = id.unwrap_or_else(|| give_id(s, &path, &name, &config));
        topics.push(recover_topic(
            (storage, files),
            &path,
            &name,
            config,
            id,
            clean,
        )?);
    }
    let offsets_topic = super::internal::recover_offsets_topic((storage, files), dir, clean)?;
    let transaction_topic = crate::transaction::log::recover((storage, files), dir, clean)?;
    let groups = Coordinator::open(dir, storage.clone())?;
    // Only once nothing can refuse the open any more: a refused open leaves the marker
    // and the trash as they were.
    let trash = dir.join("trash");
    if s.exists(&trash) {
        s.remove_dir_all(&trash)
            .map_err(|e| KafkoError::io("emptying", &trash, e))?;
    }
    let spare = dir.join(CLEAN_MARKER_SPARE);
    if clean {
        // Gone before any write is accepted: a crash from now on must scan. Kept under
        // another name, so the next clean stop needs no new file (see `shutdown`).
        s.rename(&marker, &spare)
            .map_err(|e| KafkoError::io("renaming", &marker, e))?;
        s.sync_dir(dir)
            .map_err(|e| KafkoError::io("syncing directory", dir, e))?;
    } else if !s.exists(&spare)
        && let Err(e) = state_file::write(s, &spare, &0u64)
    {
        // The clean stop then writes a new file, which a full disk may refuse.
        tracing::warn!(path = %spare.display(), error = %e, "could not prepare the clean-shutdown marker");
    }
    Ok(Recovered {
        lock,
        clean,
        topics,
        offsets_topic,
        transaction_topic,
        groups,
    })
}

/// Locks the data directory itself — a lock file can be deleted from under its holder,
/// and the next process would lock a new file of the same name — and `kafko.lock` too,
/// which is what earlier versions lock.
fn lock_directory(s: &dyn Storage, dir: &Path) -> Result<Box<dyn Any + Send + Sync>> {
    let mut guards = Vec::with_capacity(2);
    for path in [dir.to_path_buf(), dir.join(LOCK_FILE)] {
        match s.try_lock(&path) {
            Ok(guard) => guards.push(guard),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                return Err(KafkoError::AlreadyOpen {
                    path: dir.to_path_buf(),
                });
            }
            Err(e) => return Err(KafkoError::io("locking", path, e)),
        }
    }
    Ok(Box::new(guards))
}

/// A topic's persisted config and id (absent in files written before topics had ids);
/// `None` when `topic.json` does not exist. One that does not decode or validate is
/// corruption naming the file.
pub(super) fn read_topic_config(
    s: &dyn Storage,
    topic_dir: &Path,
) -> Result<Option<(TopicConfig, Option<TopicId>)>> {
    let path = topic_dir.join(TOPIC_CONFIG);
    let Some((config, id)) = disk::read_topic_config(s, &path)? else {
        return Ok(None);
    };
    config
        .validate()
        .map_err(|e| KafkoError::corruption(&path, 0, format!("invalid topic config: {e}")))?;
    Ok(Some((config, id)))
}

/// Gives a topic stored without an id one, and stores it. If it cannot be stored (a
/// full disk, say) the topic keeps it for this run and gets another at the next open,
/// which only makes cursors of this run look like an older incarnation's.
fn give_id(s: &dyn Storage, topic_dir: &Path, name: &str, config: &TopicConfig) -> TopicId {
    let id = TopicId::generate();
    if let Err(e) = disk::write_topic_config(s, &topic_dir.join(TOPIC_CONFIG), config, id) {
        tracing::warn!(topic = name, error = %e, "could not store the topic's new id");
    }
    id
}

/// Removes a topic directory that has no `topic.json`, if it provably holds no record;
/// otherwise refuses, naming it. Data is never deleted because its config is missing.
pub(crate) fn remove_unfinished_topic(s: &dyn Storage, topic_dir: &Path) -> Result<()> {
    if let Some(file) = first_data_file(s, topic_dir)? {
        return Err(KafkoError::corruption(
            topic_dir.join(TOPIC_CONFIG),
            0,
            format!(
                "missing, but the topic directory holds data ({}); restore topic.json, or move the directory out of topics/ to drop the topic",
                file.display()
            ),
        ));
    }
    s.remove_dir_all(topic_dir)
        .map_err(|e| KafkoError::io("removing", topic_dir, e))?;
    let parent = crate::storage::parent_of(topic_dir);
    s.sync_dir(parent)
        .map_err(|e| KafkoError::io("syncing directory", parent, e))
}

/// The first non-empty file under `dir` other than the topic's config, if any. A topic
/// creation that stops before its commit point leaves only directories, empty segment
/// files and its config (`topic.json.tmp`, or `topic.json` when its directory fsync
/// failed).
fn first_data_file(s: &dyn Storage, dir: &Path) -> Result<Option<std::path::PathBuf>> {
    for path in s
        .list_dir(dir)
        .map_err(|e| KafkoError::io("listing", dir, e))?
    {
        if path
            .file_name()
            .is_some_and(|n| n == TOPIC_CONFIG || n == "topic.json.tmp")
        {
            continue;
        }
        if s.list_dir(&path).is_ok() {
            if let Some(found) = first_data_file(s, &path)? {
                return Ok(Some(found));
            }
            continue;
        }
        let len = s
            .open(&path)
            .and_then(|f| f.len())
            .map_err(|e| KafkoError::io("reading length of", &path, e))?;
        if len > 0 {
            return Ok(Some(path));
        }
    }
    Ok(None)
}

/// Loads every partition of the topic in `dir` (recovering them), then makes partition
/// directories this had to create durable.
pub(crate) fn recover_topic(
    (storage, files): (&Arc<dyn Storage>, &Arc<FileCache>),
    dir: &Path,
    name: &str,
    config: TopicConfig,
    id: TopicId,
    clean: bool,
) -> Result<RecoveredTopic> {
    let name: Arc<str> = Arc::from(name);
    let activity = Arc::new(Activity::new());
    let mut partitions = Vec::with_capacity(config.partitions as usize);
    for p in 0..config.partitions {
        partitions.push(open_partition(
            (storage, files),
            dir.join(p.to_string()),
            name.clone(),
            p,
            clean,
            activity.clone(),
        )?);
    }
    // A partition directory this open had to create (a power cut can keep topic.json but
    // drop a partition's directory entry) is durable only once the topic directory is.
    storage
        .sync_dir(dir)
        .map_err(|e| KafkoError::io("syncing directory", dir, e))?;
    Ok(RecoveredTopic {
        name,
        dir: dir.to_path_buf(),
        config,
        id,
        partitions,
        activity,
    })
}
