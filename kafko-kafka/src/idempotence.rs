//! Idempotent producers: InitProducerId hands out producer ids and epochs, and a batch
//! of an idempotent producer is admitted here before the log checks its sequences
//! against the partition's producer state (kept in the log: it survives restarts).
//!
//! Ids this server issued are admitted; an epoch older than the one InitProducerId last
//! handed out for the id is INVALID_PRODUCER_EPOCH. A newer epoch passes, as in Kafka:
//! Kafka's Java producer bumps its epoch itself after a failed batch and starts each
//! partition's sequences again at 0; the partition orders epochs. An id this run did
//! not issue is admitted only where the partition's state knows it (a producer of an
//! earlier run, whose retries must still be answered as duplicates); elsewhere it is
//! UNKNOWN_PRODUCER_ID, on which a producer asks for a new id. An id the partition knew
//! is then adopted, so the producer may start on other partitions too.
//!
//! The table of issued ids is bounded without a scan: an id unused for
//! `--producer-id-expiration-ms` (Kafka's `producer.id.expiration.ms`, 1 day) is
//! forgotten, oldest first, as each call passes; at `--max-producer-ids` a new id first
//! evicts the oldest issued id that never produced (so a flood of InitProducerId cannot
//! push out producers that write), then the least recently producing one if it has not
//! produced for 5 minutes (it can no longer be retrying); when every id may still retry,
//! InitProducerId answers COORDINATOR_LOAD_IN_PROGRESS, which clients retry.
//!
//! Producer ids come from the log's one allocator (`Kafko::allocate_producer_id`), which
//! transactional producers share and which never hands out an id of an earlier run.
//!
//! A transactional producer (a transactional id) gets its id and epoch from the
//! transaction coordinator (`transactions`); its batches are checked there, not here.
//!
//! DescribeProducers shows, per partition, the producers its state holds: id, epoch,
//! last sequence and the last batch's newest timestamp.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use kafka_protocol::messages::{
    DescribeProducersRequest, DescribeProducersResponse, InitProducerIdRequest,
    InitProducerIdResponse, ProducerId, TopicName,
};

use crate::{ListenerState, errors};

/// How long after its last produce an id may still retry a batch, and is never evicted
/// for a new id: longer than a producer's `delivery.timeout.ms` (2 minutes by default).
const RETRY_WINDOW: Duration = Duration::from_secs(300);

/// The server's limits on idempotent producers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// How long an id with no produce is kept (`--producer-id-expiration-ms`).
    pub(crate) expiration: Duration,
    /// Ids kept at most (`--max-producer-ids`).
    pub(crate) max_ids: usize,
}

impl Limits {
    /// The server's configured limits.
    pub(crate) fn of(config: &kafko_service::config::ServerConfig) -> Self {
        Limits {
            expiration: config.producer_id_expiration,
            max_ids: config.max_producer_ids.max(1),
        }
    }
}

/// A producer id this server issued.
struct Issued {
    /// The epoch InitProducerId handed out last: older ones are fenced.
    epoch: i16,
    /// The newest epoch handed out or produced with (a producer's own bump), which the
    /// next InitProducerId goes past, so that its epoch meets no partition's sequences.
    newest: i16,
    /// When it was issued, bumped or last produced with.
    last_used: Instant,
    /// Its key in `Table::unused` (never produced) or `Table::used`.
    stamp: u64,
    produced: bool,
}

/// Every issued id, and the two orders evictions take them in.
#[derive(Default)]
struct Table {
    producers: HashMap<i64, Issued>,
    /// Ids that never produced, oldest first.
    unused: BTreeMap<u64, i64>,
    /// Ids that produced, least recently used first.
    used: BTreeMap<u64, i64>,
    next_stamp: u64,
}

impl Table {
    fn stamp(&mut self) -> u64 {
        self.next_stamp += 1;
        self.next_stamp
    }

    fn remove(&mut self, id: i64) {
        if let Some(p) = self.producers.remove(&id) {
            let order = if p.produced {
                &mut self.used
            } else {
                &mut self.unused
            };
            order.remove(&p.stamp);
        }
    }

    /// Forgets the ids idle for `expiration`: the front of each order, no scan.
    fn expire(&mut self, now: Instant, expiration: Duration) {
        for produced in [false, true] {
            loop {
                let order = if produced { &self.used } else { &self.unused };
                let Some(&id) = order.values().next() else {
                    break;
                };
                let idle = self
                    .producers
                    .get(&id)
                    .is_none_or(|p| now.saturating_duration_since(p.last_used) >= expiration);
                if !idle {
                    break;
                }
                self.remove(id);
            }
        }
    }

    /// Makes room for a new id: evicts the oldest id that never produced, else the least
    /// recently producing one if it has not produced within [`RETRY_WINDOW`]. False when
    /// every id kept may still retry.
    fn evict_for_new(&mut self, now: Instant) -> bool {
        let victim = self.unused.values().next().copied().or_else(|| {
            let id = *self.used.values().next()?;
            let last = self.producers.get(&id)?.last_used;
            (now.saturating_duration_since(last) >= RETRY_WINDOW).then_some(id)
        });
        victim.inspect(|id| self.remove(*id)).is_some()
    }

    /// Marks `id` used now (and, once it produced, moved to `used`).
    fn touch(&mut self, id: i64, now: Instant, produced: bool) {
        let stamp = self.stamp();
        let Some(p) = self.producers.get_mut(&id) else {
            return;
        };
        let old = if p.produced {
            &mut self.used
        } else {
            &mut self.unused
        };
        old.remove(&p.stamp);
        p.produced |= produced;
        p.stamp = stamp;
        p.last_used = now;
        let new = if p.produced {
            &mut self.used
        } else {
            &mut self.unused
        };
        new.insert(stamp, id);
    }
}

/// Whether this run issued a producer id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Issued (or adopted): the partitions may start it.
    Issued,
    /// Not issued: only a partition whose state knows it takes its batches.
    NotIssued,
}

/// The producer ids this run issued.
pub(crate) struct Producers {
    table: Mutex<Table>,
}

impl Producers {
    pub(crate) fn new() -> Self {
        Producers {
            table: Mutex::new(Table::default()),
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Admits a batch of `producer_id` at `epoch`: whether this run issued the id.
    ///
    /// # Errors
    /// INVALID_PRODUCER_EPOCH for an epoch older than the issued id's (InitProducerId
    /// bumped it). A newer epoch passes: the partition's producer state orders epochs.
    pub(crate) fn admit(
        &self,
        limits: Limits,
        producer_id: i64,
        epoch: i16,
    ) -> Result<Admission, i16> {
        let mut table = self.table();
        // Taken under the lock, so the orders' stamps follow time.
        let now = Instant::now();
        table.expire(now, limits.expiration);
        match table.producers.get_mut(&producer_id) {
            None => return Ok(Admission::NotIssued),
            Some(p) if epoch < p.epoch => return Err(errors::INVALID_PRODUCER_EPOCH),
            Some(p) => p.newest = p.newest.max(epoch),
        }
        table.touch(producer_id, now, true);
        Ok(Admission::Issued)
    }

    /// Takes in an id of an earlier run that a partition's state knew, at `epoch`, so
    /// that it is admitted everywhere. Nothing when the table has no room for it.
    pub(crate) fn adopt(&self, limits: Limits, producer_id: i64, epoch: i16) {
        let mut table = self.table();
        let now = Instant::now();
        if table.producers.contains_key(&producer_id) {
            return;
        }
        while table.producers.len() >= limits.max_ids {
            if !table.evict_for_new(now) {
                return;
            }
        }
        let stamp = table.stamp();
        table.used.insert(stamp, producer_id);
        table.producers.insert(
            producer_id,
            Issued {
                epoch,
                newest: epoch,
                last_used: now,
                stamp,
                produced: true,
            },
        );
    }

    /// A new producer id (from `fresh`) at epoch 0, or for `existing` (an id this server handed out, at
    /// its current epoch or one it bumped to itself) an epoch past every one it used.
    ///
    /// # Errors
    /// COORDINATOR_LOAD_IN_PROGRESS (retriable, as Kafka answers when it has no id to
    /// hand out) when `--max-producer-ids` ids are kept and each produced within
    /// [`RETRY_WINDOW`].
    fn init(
        &self,
        limits: Limits,
        existing: Option<(i64, i16)>,
        fresh: impl FnOnce() -> i64,
    ) -> Result<(i64, i16), i16> {
        let mut table = self.table();
        // Taken under the lock, so the orders' stamps follow time.
        let now = Instant::now();
        table.expire(now, limits.expiration);
        if let Some((id, epoch)) = existing
            && let Some(p) = table.producers.get_mut(&id)
            && (p.epoch..=p.newest).contains(&epoch)
            && p.newest < i16::MAX - 1
        {
            p.epoch = p.newest + 1;
            p.newest = p.epoch;
            let bumped = p.epoch;
            table.touch(id, now, false);
            return Ok((id, bumped));
        }
        while table.producers.len() >= limits.max_ids {
            if !table.evict_for_new(now) {
                return Err(errors::COORDINATOR_LOAD_IN_PROGRESS);
            }
        }
        let id = fresh();
        let stamp = table.stamp();
        table.unused.insert(stamp, id);
        table.producers.insert(
            id,
            Issued {
                epoch: 0,
                newest: 0,
                last_used: now,
                stamp,
                produced: false,
            },
        );
        Ok((id, 0))
    }

    /// Ids kept now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.table().producers.len()
    }
}

/// Answers InitProducerId: a transactional producer's with the transaction
/// coordinator, an idempotent producer's here.
pub(crate) async fn init_producer_id(
    broker: &ListenerState,
    request: InitProducerIdRequest,
    version: i16,
) -> InitProducerIdResponse {
    if let Some(id) = &request.transactional_id {
        return crate::transactions::init_producer_id(broker, id.as_str(), &request, version).await;
    }
    let mut response = InitProducerIdResponse::default();
    let existing =
        (request.producer_id.0 >= 0).then_some((request.producer_id.0, request.producer_epoch));
    let limits = Limits::of(&broker.service.config);
    let kafko = &broker.service.kafko;
    match broker
        .producers
        .init(limits, existing, || kafko.allocate_producer_id())
    {
        Ok((id, epoch)) => {
            response.producer_id = ProducerId(id);
            response.producer_epoch = epoch;
        }
        Err(code) => {
            response.error_code = code;
            response.producer_id = ProducerId(-1);
            response.producer_epoch = -1;
        }
    }
    response
}

/// Answers DescribeProducers: each partition asked (once) with the idempotent
/// producers its state holds; UNKNOWN_TOPIC_OR_PARTITION for a partition that does not
/// exist. A producer with a transaction open on the partition shows its first offset;
/// the coordinator epoch is −1 (one node: markers carry 0 and nothing fences by it).
pub(crate) fn describe_producers(
    broker: &ListenerState,
    request: DescribeProducersRequest,
) -> DescribeProducersResponse {
    // Topics in the order first named, each partition once.
    let mut topics: Vec<(TopicName, Vec<i32>, Option<kafko_core::Producer>)> = Vec::new();
    let mut slot: HashMap<TopicName, usize> = HashMap::new();
    let mut seen: HashSet<(usize, i32)> = HashSet::new();
    for topic in request.topics {
        let t = match slot.get(&topic.name) {
            Some(&t) => t,
            None => {
                let live = match broker.service.kafko.find_topic(topic.name.as_str()) {
                    Ok(Some(h)) => Some(h.producer()),
                    _ => None,
                };
                topics.push((topic.name.clone(), Vec::new(), live));
                slot.insert(topic.name, topics.len() - 1);
                topics.len() - 1
            }
        };
        for p in topic.partition_indexes {
            if seen.insert((t, p)) {
                topics[t].1.push(p);
            }
        }
    }
    let mut response = DescribeProducersResponse::default();
    for (name, partitions, producer) in topics {
        let mut answer = TopicResponse::default();
        for p in partitions {
            let mut row = PartitionResponse::default();
            row.partition_index = p;
            let states = producer
                .as_ref()
                .zip(u32::try_from(p).ok())
                .and_then(|(producer, p)| producer.producer_states(p));
            match states {
                None => row.error_code = errors::UNKNOWN_TOPIC_OR_PARTITION,
                Some(states) => {
                    for info in states {
                        let mut state = ProducerState::default();
                        state.producer_id = ProducerId(info.producer_id);
                        state.producer_epoch = i32::from(info.epoch);
                        state.last_sequence = info.last_sequence;
                        state.last_timestamp = info.last_timestamp;
                        state.coordinator_epoch = -1;
                        state.current_txn_start_offset = info
                            .current_txn_start_offset
                            .map_or(-1, |o| i64::try_from(o).unwrap_or(i64::MAX));
                        row.active_producers.push(state);
                    }
                }
            }
            answer.partitions.push(row);
        }
        answer.name = name;
        response.topics.push(answer);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicI64, Ordering};

    /// Ids as the log's allocator hands them out: new each time.
    fn fresh() -> i64 {
        static NEXT: AtomicI64 = AtomicI64::new(1_000);
        NEXT.fetch_add(1, Ordering::Relaxed)
    }

    fn limits(max_ids: usize) -> Limits {
        Limits {
            expiration: Duration::from_secs(3600),
            max_ids,
        }
    }

    #[test]
    fn issued_ids_are_admitted_at_their_epoch_or_a_newer_one() {
        let p = Producers::new();
        let l = limits(10);
        assert_eq!(p.admit(l, 42, 0), Ok(Admission::NotIssued));
        assert_eq!(p.len(), 0, "a made-up id is not remembered");
        let (id, epoch) = p.init(l, None, fresh).unwrap();
        assert_eq!(p.admit(l, id, epoch), Ok(Admission::Issued));
        // A producer's own bump: the partition's state decides.
        assert_eq!(p.admit(l, id, epoch + 1), Ok(Admission::Issued));
        // InitProducerId goes past it, from the issued epoch or the bumped one.
        assert_eq!(p.init(l, Some((id, epoch)), fresh), Ok((id, 2)));
        assert_eq!(p.init(l, Some((id, 2)), fresh), Ok((id, 3)));
        assert_eq!(
            p.admit(l, id, 0),
            Err(errors::INVALID_PRODUCER_EPOCH),
            "the old epoch is fenced"
        );
    }

    #[test]
    fn an_adopted_id_is_admitted_and_kept_like_an_issued_one() {
        let p = Producers::new();
        let l = limits(10);
        p.adopt(l, 42, 3);
        assert_eq!(p.admit(l, 42, 3), Ok(Admission::Issued));
        assert_eq!(p.admit(l, 42, 2), Err(errors::INVALID_PRODUCER_EPOCH));
        assert_eq!(p.init(l, Some((42, 3)), fresh), Ok((42, 4)));
    }

    #[test]
    fn a_flood_of_new_ids_evicts_unused_ones_first() {
        let p = Producers::new();
        let l = limits(100);
        let (writer, epoch) = p.init(l, None, fresh).unwrap();
        p.admit(l, writer, epoch).unwrap();
        let (first_unused, _) = p.init(l, None, fresh).unwrap();
        for _ in 0..1000 {
            p.init(l, None, fresh).unwrap();
        }
        assert_eq!(p.len(), 100);
        assert_eq!(p.admit(l, first_unused, 0), Ok(Admission::NotIssued));
        assert_eq!(p.admit(l, writer, epoch), Ok(Admission::Issued));
    }

    #[test]
    fn ids_that_may_still_retry_are_never_evicted_for_a_new_one() {
        let p = Producers::new();
        let l = limits(3);
        let mut writers = Vec::new();
        for _ in 0..3 {
            let (id, epoch) = p.init(l, None, fresh).unwrap();
            p.admit(l, id, epoch).unwrap();
            writers.push(id);
        }
        assert_eq!(
            p.init(l, None, fresh),
            Err(errors::COORDINATOR_LOAD_IN_PROGRESS)
        );
        for id in writers {
            assert_eq!(p.admit(l, id, 0), Ok(Admission::Issued));
        }
    }

    #[test]
    fn idle_ids_expire_and_busy_ones_stay() {
        let p = Producers::new();
        let l = Limits {
            expiration: Duration::from_millis(200),
            max_ids: 10,
        };
        let (idle, _) = p.init(l, None, fresh).unwrap();
        let (busy, _) = p.init(l, None, fresh).unwrap();
        for _ in 0..3 {
            std::thread::sleep(Duration::from_millis(100));
            assert_eq!(p.admit(l, busy, 0), Ok(Admission::Issued));
        }
        assert_eq!(p.admit(l, idle, 0), Ok(Admission::NotIssued));
        assert_eq!(p.len(), 1);
    }
}
