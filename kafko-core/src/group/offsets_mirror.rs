//! `__consumer_offsets` follows the group files: after every write or removal of a
//! group's files ([`ChangedGroups`]) and for every group at open, one task reads the
//! group's files and appends, to the group's partition, the records whose latest value
//! in the log differs from what the files say (a commit, a stable generation, an empty
//! group) and tombstones for keys the files no longer hold (deleted or expired offsets,
//! a deleted group). The log is only appended to, so offsets only grow, across restarts
//! too; its latest value per key equals the files once the task caught up.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use super::offsets::{OffsetStore, StoredGroup};
use super::offsets_records as rec;
use crate::error::Result;
use crate::handle::TopicHandle;
use crate::naming::{group_id_for_name, group_name_for_id};
use crate::record::ProducerRecord;
use crate::topic::Topic;

/// Records read at once while loading the log at open.
const LOAD_BATCH: usize = 4096;
/// How long a failed load or append waits before it is tried again.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// Groups whose files changed since the mirror last read them.
#[derive(Default)]
pub(crate) struct ChangedGroups {
    names: Mutex<BTreeSet<String>>,
    wake: Notify,
}

/// Marks its group changed when dropped: after the file operation it guards.
pub(crate) struct MarkOnDrop<'a> {
    changed: &'a ChangedGroups,
    group: &'a str,
}

impl Drop for MarkOnDrop<'_> {
    fn drop(&mut self) {
        self.changed.mark(self.group);
    }
}

impl ChangedGroups {
    /// Records that `group`'s files changed, and wakes the mirror.
    pub(crate) fn mark(&self, group: &str) {
        self.names
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(group.to_owned());
        self.wake.notify_one();
    }

    /// A guard that marks `group` once the file operation it spans is over.
    pub(crate) fn mark_on_drop<'a>(&'a self, group: &'a str) -> MarkOnDrop<'a> {
        MarkOnDrop {
            changed: self,
            group,
        }
    }

    fn take(&self) -> BTreeSet<String> {
        std::mem::take(&mut *self.names.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// The mirror's view of the log: the latest non-null value of each key, by group name.
type Latest = HashMap<String, BTreeMap<Bytes, Bytes>>;

/// Starts the task that keeps `topic` (`__consumer_offsets`) following the groups of
/// `store`; it ends when `stop` changes.
pub(crate) fn spawn(
    store: Arc<OffsetStore>,
    topic: Arc<Topic>,
    mut stop: watch::Receiver<bool>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let handle = TopicHandle::new(topic.clone());
        let mut latest = loop {
            let loaded = {
                let (handle, store) = (handle.clone(), store.clone());
                crate::storage::blocking("loading __consumer_offsets", move || {
                    Ok((load(&handle)?, store.group_names()?))
                })
                .await
            };
            match loaded {
                Ok((latest, names)) => {
                    for name in names.iter().chain(latest.keys()) {
                        store.changed().mark(name);
                    }
                    break latest;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "__consumer_offsets could not be loaded; retrying");
                }
            }
            tokio::select! {
                () = tokio::time::sleep(RETRY_AFTER) => {}
                _ = stop.changed() => return,
            }
        };
        loop {
            let mut failed = false;
            for name in store.changed().take() {
                if *stop.borrow() {
                    return;
                }
                if let Err(e) = follow(&store, &topic, &mut latest, &name).await {
                    tracing::warn!(group = %name, error = %e, "__consumer_offsets not updated yet; retrying");
                    store.changed().mark(&name);
                    failed = true;
                }
            }
            let wait = async {
                if failed {
                    tokio::time::sleep(RETRY_AFTER).await;
                } else {
                    store.changed().wake.notified().await;
                }
            };
            tokio::select! {
                () = wait => {}
                _ = stop.changed() => return,
            }
        }
    })
}

/// Reads every record of the log: the latest non-null value of each key it holds.
fn load(topic: &TopicHandle) -> Result<Latest> {
    let mut latest = Latest::new();
    for p in 0..topic.partitions() {
        let reader = topic.partition(p)?;
        let mut at = reader.offsets()?.log_start;
        loop {
            let read = reader.read(at, LOAD_BATCH, 16 * 1024 * 1024)?;
            for r in &read.records {
                let Some(key) = &r.key else { continue };
                let Some(name) = rec::key_group(key).and_then(group_name_for_id) else {
                    continue;
                };
                let keys = latest.entry(name).or_default();
                match &r.value {
                    Some(v) => keys.insert(key.clone(), v.clone()),
                    None => keys.remove(key),
                };
            }
            if read.next_offset >= read.high_watermark || read.next_offset == at {
                break;
            }
            at = read.next_offset;
        }
    }
    latest.retain(|_, keys| !keys.is_empty());
    Ok(latest)
}

/// What the log's latest values for group `name` must be, given its files and the
/// log's latest values (an emptied group keeps its protocol type and generation).
fn expected(
    name: &str,
    stored: Option<&StoredGroup>,
    latest: Option<&BTreeMap<Bytes, Bytes>>,
) -> BTreeMap<Bytes, Bytes> {
    let id = group_id_for_name(name);
    let mut out = BTreeMap::new();
    let Some(stored) = stored else {
        return out;
    };
    for (topic, offsets) in &stored.topics {
        out.extend(rec::offset_records(&id, topic, offsets));
    }
    let key = rec::group_key(&id);
    match &stored.members {
        Some(members) => {
            out.insert(key, rec::group_value(members));
        }
        None => {
            let last = latest.and_then(|l| l.get(&key));
            if let Some((protocol_type, generation, has_members)) =
                last.and_then(|v| rec::group_value_head(v))
            {
                let value = if has_members {
                    rec::empty_group_value(protocol_type, generation)
                } else {
                    last.cloned().unwrap_or_default()
                };
                out.insert(key, value);
            }
        }
    }
    out
}

/// Appends what group `name`'s files changed since the log last followed them.
async fn follow(
    store: &Arc<OffsetStore>,
    topic: &Arc<Topic>,
    latest: &mut Latest,
    name: &str,
) -> Result<()> {
    let stored = {
        let (store, name) = (store.clone(), name.to_owned());
        crate::storage::blocking("reading a group for __consumer_offsets", move || {
            store.load_group(&name)
        })
        .await?
    };
    let current = latest.get(name);
    let want = expected(name, stored.as_ref(), current);
    let partition = rec::partition_for(
        &group_id_for_name(name),
        u32::try_from(topic.partitions.len()).unwrap_or(u32::MAX),
    );
    let mut records = Vec::new();
    for (key, value) in &want {
        if current.and_then(|c| c.get(key)) != Some(value) {
            records.push(ProducerRecord {
                key: Some(key.clone()),
                value: Some(value.clone()),
                partition: Some(partition),
                ..Default::default()
            });
        }
    }
    for key in current.into_iter().flat_map(|c| c.keys()) {
        if !want.contains_key(key) {
            records.push(ProducerRecord {
                key: Some(key.clone()),
                partition: Some(partition),
                ..Default::default()
            });
        }
    }
    if records.is_empty() {
        return Ok(());
    }
    topic
        .send(records, crate::send::SendOptions::default())
        .await?;
    if want.is_empty() {
        latest.remove(name);
    } else {
        latest.insert(name.to_owned(), want);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_emptied_group_keeps_its_type_and_generation() {
        let key = rec::group_key("g");
        let full = BTreeMap::from([(key.clone(), rec::empty_group_value("consumer", 3))]);
        let stored = StoredGroup::default();
        let want = expected("g", Some(&stored), Some(&full));
        assert_eq!(want[&key], rec::empty_group_value("consumer", 3));
        assert!(expected("g", None, Some(&full)).is_empty());
    }
}
