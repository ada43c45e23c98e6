//! [`Store`]: the registry's `_schemas` topic in the log — one partition, compacted,
//! kept forever — read in order into the [`State`] and appended to with an fsync
//! before any write is acknowledged. The topic is created by the first write (a
//! server whose registry is never written to shows no extra topic), or found once
//! another client creates it.

use std::sync::RwLock;

use kafko_core::{
    Bytes, CleanupPolicy, Kafko, PartitionReader, Producer, ProducerRecord, SendOptions,
    TopicConfig, TopicHandle, TopicId,
};

use crate::error::RegistryError;
use crate::record::Key;
use crate::state::State;

/// The topic the registry keeps its records in, as Confluent's registry names it.
pub const TOPIC: &str = "_schemas";

/// Records read from the topic per read while catching up.
const READ_RECORDS: usize = 1000;
/// Bytes read from the topic per read while catching up.
const READ_BYTES: usize = 8 * 1024 * 1024;

/// The `_schemas` topic, for reads and durable appends.
pub(crate) struct Store {
    kafko: Kafko,
    config: TopicConfig,
    topic: RwLock<Option<Handles>>,
}

#[derive(Clone)]
struct Handles {
    topic: TopicHandle,
    producer: Producer,
    reader: PartitionReader,
}

/// One record to append: a key and a value (`None`: a tombstone).
pub(crate) type Write = (Key, Option<Vec<u8>>);

impl Store {
    /// The store of `kafko`'s topic, created when first written with records of up to
    /// `max_record_bytes` (when it exists already, it must have one partition).
    pub(crate) fn open(kafko: &Kafko, max_record_bytes: u64) -> Result<Store, RegistryError> {
        let config = TopicConfig {
            partitions: 1,
            cleanup_policy: CleanupPolicy::Compact,
            retention_ms: None,
            max_record_bytes,
            ..TopicConfig::default()
        };
        let store = Store {
            kafko: kafko.clone(),
            config,
            topic: RwLock::new(None),
        };
        store.handles()?;
        Ok(store)
    }

    /// The topic's handles, once it exists.
    fn handles(&self) -> Result<Option<Handles>, RegistryError> {
        if let Some(h) = self.topic.read().map_err(poisoned)?.as_ref()
            && !h.topic.is_deleted()
        {
            return Ok(Some(h.clone()));
        }
        // Not known yet, or deleted (by a client): whatever holds the name now.
        *self.topic.write().map_err(poisoned)? = None;
        let found = self
            .kafko
            .find_topic(TOPIC)
            .map_err(|e| RegistryError::Store(format!("opening {TOPIC}: {e}")))?;
        match found {
            Some(topic) => self.adopt(&topic).map(Some),
            None => Ok(None),
        }
    }

    fn adopt(&self, topic: &TopicHandle) -> Result<Handles, RegistryError> {
        if topic.partitions() != 1 {
            return Err(RegistryError::Store(format!(
                "{TOPIC} has {} partitions; the registry needs exactly one",
                topic.partitions()
            )));
        }
        let reader = topic
            .partition(0)
            .map_err(|e| RegistryError::Store(format!("reading {TOPIC}: {e}")))?;
        let h = Handles {
            topic: topic.clone(),
            producer: topic.producer(),
            reader,
        };
        *self.topic.write().map_err(poisoned)? = Some(h.clone());
        Ok(h)
    }

    /// The topic's incarnation (`None` before it exists) and the offset one past its
    /// last record.
    pub(crate) fn end(&self) -> Result<(Option<TopicId>, u64), RegistryError> {
        let Some(h) = self.handles()? else {
            return Ok((None, 0));
        };
        let end = h
            .reader
            .offsets()
            .map(|o| o.high_watermark)
            .map_err(|e| RegistryError::Store(format!("reading {TOPIC}: {e}")))?;
        Ok((Some(h.topic.id()), end))
    }

    /// Applies every record from `from` to the end to `state`; returns the offset to
    /// read next. Records that are not the registry's are skipped (and logged).
    pub(crate) fn catch_up(&self, from: u64, state: &mut State) -> Result<u64, RegistryError> {
        let mut next = from;
        let Some(h) = self.handles()? else {
            return Ok(next);
        };
        let end = h
            .reader
            .offsets()
            .map(|o| o.high_watermark)
            .map_err(|e| RegistryError::Store(format!("reading {TOPIC}: {e}")))?;
        while next < end {
            let start = h
                .reader
                .offsets()
                .map(|o| o.log_start)
                .map_err(|e| RegistryError::Store(format!("reading {TOPIC}: {e}")))?;
            let fetched = h
                .reader
                .read(next.max(start), READ_RECORDS, READ_BYTES)
                .map_err(|e| RegistryError::Store(format!("reading {TOPIC}: {e}")))?;
            for r in &fetched.records {
                let Some(key) = r.key.as_deref() else {
                    tracing::warn!(offset = r.offset, "{TOPIC}: record without a key skipped");
                    continue;
                };
                if let Err(why) = state.apply(key, r.value.as_deref()) {
                    tracing::warn!(offset = r.offset, %why, "{TOPIC}: record skipped");
                }
            }
            if fetched.next_offset <= next {
                break;
            }
            next = fetched.next_offset;
        }
        Ok(next)
    }

    /// Appends `writes` as one batch (all or none) and returns once they are fsynced.
    pub(crate) async fn append(&self, writes: Vec<Write>) -> Result<(), RegistryError> {
        let records = writes
            .into_iter()
            .map(|(key, value)| ProducerRecord {
                key: Some(Bytes::from(key.encode())),
                value: value.map(Bytes::from),
                partition: Some(0),
                ..Default::default()
            })
            .collect();
        let options = SendOptions {
            sync: true,
            no_wait: false,
        };
        let h = match self.handles()? {
            Some(h) => h,
            None => {
                let topic = self
                    .kafko
                    .topic_or_create(TOPIC, self.config.clone())
                    .await
                    .map_err(|e| RegistryError::Store(format!("creating {TOPIC}: {e}")))?;
                self.adopt(&topic)?
            }
        };
        h.producer
            .send_batch_with(records, options)
            .await
            .map(|_| ())
            .map_err(|e| RegistryError::Store(format!("writing {TOPIC}: {e}")))
    }
}

fn poisoned<T>(_: T) -> RegistryError {
    RegistryError::Store("the registry's topic lock is poisoned".into())
}
