//! The durable side of groups: `<data>/groups/<group>/<topic>.offsets` (committed
//! offsets; topics over 200 characters use a shortened file name and keep the full name
//! in the body), `<data>/groups/<group>/group.json` (options) and
//! `<data>/groups/<group>/members.json` (the Kafka members of its last stable
//! generation) and `<data>/groups/<group>/consumer.json` (its consumer-protocol members,
//! epochs and assignments), all CRC-framed state files replaced atomically (write temp, fsync,
//! rename, fsync directory), read back on open.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::GroupConfig;
use super::offsets_mirror::ChangedGroups;
use crate::disk;
use crate::error::{KafkoError, Result};
use crate::naming::{validate_group_name, validate_name};
use crate::storage::{self, Storage};

const CONFIG_FILE: &str = "group.json";
const MEMBERS_FILE: &str = "members.json";
const CONSUMER_FILE: &str = "consumer.json";
const OFFSETS_EXT: &str = ".offsets";

/// Longest topic name used verbatim in a file name: `<topic>.offsets.tmp` must fit the
/// 255-byte file-name limit, and a topic may be 249 characters long.
const VERBATIM_TOPIC_LEN: usize = 200;

/// File name of a topic's offsets. Long topics keep a 200-character prefix plus a CRC of
/// the whole name after a `~`, which no topic name contains, so names never collide with
/// a verbatim one; the full name is stored in the body.
fn offsets_file_name(topic: &str) -> String {
    if topic.len() <= VERBATIM_TOPIC_LEN {
        format!("{topic}{OFFSETS_EXT}")
    } else {
        let crc = crc32fast::hash(topic.as_bytes());
        format!("{}~{crc:08x}{OFFSETS_EXT}", &topic[..VERBATIM_TOPIC_LEN])
    }
}

/// A group as found on disk.
#[derive(Debug, Default)]
pub(crate) struct StoredGroup {
    pub(crate) config: GroupConfig,
    /// Topic → committed offsets and their metadata strings.
    pub(crate) topics: BTreeMap<String, disk::StoredOffsets>,
    /// Its Kafka members as of their last stable generation.
    pub(crate) members: Option<disk::StoredClassic>,
    /// Its members of Kafka's consumer protocol (KIP-848), epochs and assignments.
    pub(crate) consumer: Option<disk::StoredConsumer>,
}

/// Reads and writes group files under `<data>/groups`.
pub(crate) struct OffsetStore {
    root: PathBuf,
    storage: Arc<dyn Storage>,
    /// Told of every group whose files a write or removal touched (`__consumer_offsets`
    /// follows them).
    changed: Arc<ChangedGroups>,
}

impl OffsetStore {
    pub(crate) fn new(data_dir: &Path, storage: Arc<dyn Storage>) -> Self {
        OffsetStore {
            root: data_dir.join("groups"),
            storage,
            changed: Arc::new(ChangedGroups::default()),
        }
    }

    /// The groups whose files changed, for `__consumer_offsets` to follow.
    pub(crate) fn changed(&self) -> &Arc<ChangedGroups> {
        &self.changed
    }

    /// Names of the groups on disk (valid names only).
    pub(crate) fn group_names(&self) -> Result<Vec<String>> {
        let s = &*self.storage;
        if !s.exists(&self.root) {
            return Ok(Vec::new());
        }
        Ok(s.list_dir(&self.root)
            .map_err(|e| KafkoError::io("listing", &self.root, e))?
            .iter()
            .filter_map(|dir| file_name(dir))
            .filter(|g| validate_group_name(g).is_ok())
            .collect())
    }

    /// Loads one group; `None` when it has no directory.
    pub(crate) fn load_group(&self, group: &str) -> Result<Option<StoredGroup>> {
        let dir = self.group_dir(group);
        if !self.storage.exists(&dir) {
            return Ok(None);
        }
        self.load_dir(&dir, false).map(Some)
    }

    fn group_dir(&self, group: &str) -> PathBuf {
        self.root.join(group)
    }

    /// Loads every group. Names that fail validation are skipped (never our files);
    /// leftover `.tmp` files of an interrupted replace are removed.
    pub(crate) fn load_all(&self) -> Result<BTreeMap<String, StoredGroup>> {
        let s = &*self.storage;
        let mut out = BTreeMap::new();
        if !s.exists(&self.root) {
            return Ok(out);
        }
        let groups = s
            .list_dir(&self.root)
            .map_err(|e| KafkoError::io("listing", &self.root, e))?;
        for dir in groups {
            let Some(group) = file_name(&dir) else {
                continue;
            };
            if validate_group_name(&group).is_err() {
                continue;
            }
            out.insert(group, self.load_dir(&dir, true)?);
        }
        Ok(out)
    }

    /// Reads one group directory; `sweep` (at open, when no write runs) removes the
    /// leftover `.tmp` files of interrupted replaces, which are otherwise skipped.
    fn load_dir(&self, dir: &Path, sweep: bool) -> Result<StoredGroup> {
        let s = &*self.storage;
        let mut stored = StoredGroup {
            config: disk::read_group_config(s, &dir.join(CONFIG_FILE))?.unwrap_or_default(),
            members: disk::read_members(s, &dir.join(MEMBERS_FILE))?,
            consumer: disk::read_consumer(s, &dir.join(CONSUMER_FILE))?,
            ..Default::default()
        };
        for path in s
            .list_dir(dir)
            .map_err(|e| KafkoError::io("listing", dir, e))?
        {
            let Some(name) = file_name(&path) else {
                continue;
            };
            if name.ends_with(".tmp") {
                if !sweep {
                    continue;
                }
                match s.remove_file(&path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(KafkoError::io("removing", &path, e));
                    }
                    _ => {}
                }
                continue;
            }
            let Some(stem) = name.strip_suffix(OFFSETS_EXT) else {
                continue;
            };
            if let Some(offsets) = disk::read_offsets(s, &path)? {
                let topic = offsets.topic.clone().unwrap_or_else(|| stem.to_owned());
                if validate_name(&topic).is_err() || offsets_file_name(&topic) != name {
                    continue;
                }
                stored.topics.insert(topic, offsets);
            }
        }
        Ok(stored)
    }

    /// Creates the group's directory durably if it is missing.
    fn ensure_dir(&self, group: &str) -> Result<PathBuf> {
        let s = &*self.storage;
        let dir = self.group_dir(group);
        storage::create_dir_durably(s, &dir).map_err(|e| KafkoError::io("creating", &dir, e))?;
        Ok(dir)
    }

    /// Replaces the committed offsets of `group` on `topic` (with their commit times
    /// and metadata strings), or removes the file once none is left.
    pub(crate) fn write_offsets(
        &self,
        group: &str,
        topic: &str,
        offsets: &disk::StoredOffsets,
    ) -> Result<()> {
        if offsets.offsets.is_empty() {
            return self.remove_offsets(group, topic);
        }
        let _mark = self.changed.mark_on_drop(group);
        let dir = self.ensure_dir(group)?;
        let path = dir.join(offsets_file_name(topic));
        let stored = disk::StoredOffsets {
            topic: Some(topic.to_owned()),
            ..offsets.clone()
        };
        disk::write_offsets(&*self.storage, &path, &stored)
    }

    /// Replaces the group's options.
    pub(crate) fn write_config(&self, group: &str, config: &GroupConfig) -> Result<()> {
        let dir = self.ensure_dir(group)?;
        disk::write_group_config(&*self.storage, &dir.join(CONFIG_FILE), config)
    }

    /// Replaces the group's `members.json` with `members`, or removes it (`None`).
    pub(crate) fn write_members(
        &self,
        group: &str,
        members: Option<&disk::StoredClassic>,
    ) -> Result<()> {
        let _mark = self.changed.mark_on_drop(group);
        match members {
            Some(members) => {
                let dir = self.ensure_dir(group)?;
                disk::write_members(&*self.storage, &dir.join(MEMBERS_FILE), members)
            }
            None => self.remove_file(group, MEMBERS_FILE),
        }
    }

    /// Replaces the group's `consumer.json` with `consumer`, or removes it (`None`).
    pub(crate) fn write_consumer(
        &self,
        group: &str,
        consumer: Option<&disk::StoredConsumer>,
    ) -> Result<()> {
        match consumer {
            Some(consumer) => {
                let dir = self.ensure_dir(group)?;
                disk::write_consumer(&*self.storage, &dir.join(CONSUMER_FILE), consumer)
            }
            None => self.remove_file(group, CONSUMER_FILE),
        }
    }

    /// Removes the offsets of `group` on `topic` (absent is fine).
    pub(crate) fn remove_offsets(&self, group: &str, topic: &str) -> Result<()> {
        let _mark = self.changed.mark_on_drop(group);
        self.remove_file(group, &offsets_file_name(topic))
    }

    /// Removes one file of `group` durably (absent is fine).
    fn remove_file(&self, group: &str, name: &str) -> Result<()> {
        let dir = self.group_dir(group);
        let path = dir.join(name);
        match self.storage.remove_file(&path) {
            Ok(()) => self
                .storage
                .sync_dir(&dir)
                .map_err(|e| KafkoError::io("syncing directory", &dir, e)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(KafkoError::io("removing", &path, e)),
        }
    }

    /// Removes the whole group directory (absent is fine).
    pub(crate) fn remove_group(&self, group: &str) -> Result<()> {
        let _mark = self.changed.mark_on_drop(group);
        let s = &*self.storage;
        let dir = self.group_dir(group);
        if !s.exists(&dir) {
            return Ok(());
        }
        s.remove_dir_all(&dir)
            .map_err(|e| KafkoError::io("removing", &dir, e))?;
        s.sync_dir(&self.root)
            .map_err(|e| KafkoError::io("syncing directory", &self.root, e))
    }
}

fn file_name(path: &Path) -> Option<String> {
    path.file_name().and_then(|n| n.to_str()).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::StdStorage;

    #[test]
    fn offsets_and_config_round_trip_through_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = OffsetStore::new(dir.path(), Arc::new(StdStorage));
        let offsets: BTreeMap<u32, u64> = [(0, 5), (3, 17)].into();
        let stored = disk::StoredOffsets {
            topic: None,
            offsets: offsets.clone(),
            committed_at: [(0, 1)].into(),
            metadata: [(3, "m".to_owned())].into(),
            leader_epoch: [(0, 2)].into(),
        };
        store.write_offsets("g", "t", &stored).unwrap();
        let config = GroupConfig {
            offset_reset: super::super::OffsetReset::Latest,
        };
        store.write_config("g", &config).unwrap();
        let loaded = store.load_all().unwrap();
        assert_eq!(loaded["g"].topics["t"].offsets, offsets);
        assert_eq!(loaded["g"].topics["t"].metadata, [(3, "m".into())].into());
        assert_eq!(loaded["g"].topics["t"].leader_epoch, [(0, 2)].into());
        assert_eq!(loaded["g"].config, config);
        store.remove_offsets("g", "t").unwrap();
        assert!(store.load_all().unwrap()["g"].topics.is_empty());
        store.remove_group("g").unwrap();
        assert!(store.load_all().unwrap().is_empty());
    }

    #[test]
    fn longest_topic_names_get_durable_offsets_that_load_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = OffsetStore::new(dir.path(), Arc::new(StdStorage));
        let long_a = "a".repeat(249);
        let long_b = format!("{}b", "a".repeat(248));
        let just = |offsets: BTreeMap<u32, u64>| disk::StoredOffsets {
            offsets,
            ..Default::default()
        };
        store
            .write_offsets("g", &long_a, &just([(0, 1)].into()))
            .unwrap();
        store
            .write_offsets("g", &long_b, &just([(0, 2)].into()))
            .unwrap();
        store
            .write_offsets("g", "short", &just([(0, 3)].into()))
            .unwrap();
        let loaded = store.load_all().unwrap();
        assert_eq!(loaded["g"].topics[&long_a].offsets, [(0, 1)].into());
        assert_eq!(loaded["g"].topics[&long_b].offsets, [(0, 2)].into());
        assert_eq!(loaded["g"].topics["short"].offsets, [(0, 3)].into());
        store.remove_offsets("g", &long_a).unwrap();
        assert!(!store.load_all().unwrap()["g"].topics.contains_key(&long_a));
        assert!(offsets_file_name(&long_a).len() + ".tmp".len() <= 255);
    }
}
