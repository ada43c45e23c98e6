//! Idempotent producers: InitProducerId hands out producer ids and epochs, and every
//! produce from an idempotent producer is checked against the sequence numbers seen for
//! its (producer id, topic id, partition): the next expected sequence is written, a retry
//! of one of the last five batches is answered with its original offsets and not written
//! again, any other sequence is OUT_OF_ORDER_SEQUENCE_NUMBER, an older epoch
//! INVALID_PRODUCER_EPOCH. A partition's check and write run under one lock, so two
//! copies of a batch never both write.
//!
//! Only producer ids this server issued are accepted: a batch with any other id is
//! refused with UNKNOWN_PRODUCER_ID (nothing written, nothing remembered), on which a
//! producer asks for a new id and starts its sequences again; a batch of an epoch older
//! than the one InitProducerId last handed out for the id is INVALID_PRODUCER_EPOCH. A
//! newer epoch is accepted, as Kafka does: Kafka's Java producer bumps its epoch itself
//! after a batch failed with others in flight, and starts each partition's sequences
//! again at 0 in it. Epochs are ordered per partition, as in Kafka: once a partition took
//! a batch of the new epoch, the old one is INVALID_PRODUCER_EPOCH there, while a
//! partition the bump has not reached yet still takes (and deduplicates) the old epoch's
//! in-flight batches. The next InitProducerId for the id hands out an epoch past every
//! one it used.
//!
//! The table is bounded without a scan: an id unused for `--producer-id-expiration-ms`
//! (Kafka's `producer.id.expiration.ms`, 1 day) is forgotten, oldest first, as each call
//! passes; at `--max-producer-ids` a new id first evicts the oldest issued id that never
//! produced (so a flood of InitProducerId cannot push out producers that write), then
//! the least recently producing one if it has not produced for 5 minutes (it can no
//! longer be retrying); when every id may still retry, InitProducerId answers
//! COORDINATOR_LOAD_IN_PROGRESS, which clients retry. At 100,000 tracked partitions, a
//! producer's new partition evicts other producers, least recently producing first. A
//! batch of an evicted id is refused, never written twice.
//!
//! What survives a restart: the records; not the producer table, which is in memory.
//! Producer ids are drawn from the clock at start (milliseconds since the epoch, shifted
//! left), so a restarted server does not hand out an id in use before; a producer of an
//! earlier run gets UNKNOWN_PRODUCER_ID and a new id, so a batch it sent before the
//! restart and retries after it is written again (as Kafka does once a producer's state
//! expired).
//!
//! Transactional producers (a transactional id) are refused with
//! TRANSACTIONAL_ID_AUTHORIZATION_FAILED: transactions are not served.
//!
//! DescribeProducers shows, per partition, the producers tracked here that wrote to it:
//! id, the partition's epoch, last sequence and the last batch's largest timestamp.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use kafka_protocol::messages::{
    DescribeProducersRequest, DescribeProducersResponse, InitProducerIdRequest,
    InitProducerIdResponse, ProducerId, TopicName,
};
use kafko_core::TopicId;

use crate::{ListenerState, errors};

/// Batches remembered per partition for retries (Kafka's `max.in.flight` for
/// idempotence is at most 5).
const REMEMBERED: usize = 5;
/// Partitions tracked at most, all producers together.
const MAX_TRACKED: usize = 100_000;
/// How long after its last produce an id may still retry a batch, and is never evicted
/// for a new id: longer than a producer's `delivery.timeout.ms` (2 minutes by default).
const RETRY_WINDOW: Duration = Duration::from_secs(300);

/// A batch already written: its sequence range and first offset.
#[derive(Debug, Clone, Copy)]
struct Written {
    first: i32,
    last: i32,
    base_offset: i64,
}

/// The sequence state of one (producer id, topic, partition).
#[derive(Debug, Default)]
pub(crate) struct Sequences {
    known: Option<Known>,
}

#[derive(Debug)]
struct Known {
    epoch: i16,
    /// The sequence the next new batch must start with.
    next: i32,
    recent: VecDeque<Written>,
    /// The largest timestamp of the last batch written.
    last_timestamp: i64,
}

/// What to do with an idempotent batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    /// Write it, then [`Sequences::written`].
    Write,
    /// Already written at this base offset: answer that, write nothing.
    Duplicate(i64),
    /// Refuse it with this error code.
    Refuse(i16),
}

impl Sequences {
    /// Checks a batch of `epoch` with sequences `first..=last`.
    pub(crate) fn check(&self, epoch: i16, first: i32, last: i32) -> Check {
        let Some(known) = &self.known else {
            return Check::Write;
        };
        if epoch < known.epoch {
            return Check::Refuse(errors::INVALID_PRODUCER_EPOCH);
        }
        if epoch > known.epoch {
            return if first == 0 {
                Check::Write
            } else {
                Check::Refuse(errors::OUT_OF_ORDER_SEQUENCE_NUMBER)
            };
        }
        if let Some(w) = known
            .recent
            .iter()
            .find(|w| w.first == first && w.last == last)
        {
            return Check::Duplicate(w.base_offset);
        }
        if first == known.next {
            Check::Write
        } else {
            Check::Refuse(errors::OUT_OF_ORDER_SEQUENCE_NUMBER)
        }
    }

    /// The epoch, last sequence and last batch's timestamp, once a batch was written.
    fn state(&self) -> Option<(i16, i32, i64)> {
        let known = self.known.as_ref()?;
        let last = known.recent.back()?;
        Some((known.epoch, last.last, known.last_timestamp))
    }

    /// Records a written batch: its epoch, sequences `first..=last`, first offset and
    /// largest timestamp.
    pub(crate) fn written(
        &mut self,
        epoch: i16,
        (first, last): (i32, i32),
        base_offset: i64,
        timestamp: i64,
    ) {
        let known = match &mut self.known {
            Some(k) if k.epoch == epoch => k,
            _ => self.known.insert(Known {
                epoch,
                next: 0,
                recent: VecDeque::new(),
                last_timestamp: -1,
            }),
        };
        known.last_timestamp = timestamp;
        known.next = if last == i32::MAX { 0 } else { last + 1 };
        if known.recent.len() == REMEMBERED {
            known.recent.pop_front();
        }
        known.recent.push_back(Written {
            first,
            last,
            base_offset,
        });
    }
}

/// One partition's sequence state, behind the lock its check and write share.
type Shared = Arc<tokio::sync::Mutex<Sequences>>;

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
    /// Sequence state by topic (the incarnation, not the name: a topic deleted and
    /// created again starts afresh) and partition.
    partitions: HashMap<(TopicId, i32), Shared>,
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
    /// Partitions tracked, all producers together.
    tracked: usize,
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
            self.tracked -= p.partitions.len();
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

    /// Evicts the least recently producing id other than `keep` (the ids that never
    /// produced track no partition). False when there is none.
    fn evict_producing(&mut self, keep: i64) -> bool {
        let victim = self.used.values().find(|id| **id != keep).copied();
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

/// Every idempotent producer's state.
pub(crate) struct Producers {
    next_id: AtomicI64,
    table: Mutex<Table>,
}

impl Producers {
    pub(crate) fn new() -> Self {
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(0));
        Producers {
            // 2^12 ids per millisecond of uptime before they could meet the next
            // start's; far from i64::MAX for millennia.
            next_id: AtomicI64::new(now_ms << 12),
            table: Mutex::new(Table::default()),
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The lock of one partition's sequence state for a batch of `producer_id` at
    /// `epoch`.
    ///
    /// # Errors
    /// UNKNOWN_PRODUCER_ID for an id this server did not issue (or forgot),
    /// INVALID_PRODUCER_EPOCH for an epoch older than the id's (InitProducerId bumped
    /// it). A newer epoch passes: the partition's [`Sequences`] order epochs.
    pub(crate) fn partition(
        &self,
        limits: Limits,
        producer_id: i64,
        epoch: i16,
        topic: TopicId,
        partition: i32,
    ) -> Result<Shared, i16> {
        let mut table = self.table();
        // Taken under the lock, so the orders' stamps follow time.
        let now = Instant::now();
        table.expire(now, limits.expiration);
        match table.producers.get_mut(&producer_id) {
            None => return Err(errors::UNKNOWN_PRODUCER_ID),
            Some(p) if epoch < p.epoch => return Err(errors::INVALID_PRODUCER_EPOCH),
            Some(p) => p.newest = p.newest.max(epoch),
        }
        table.touch(producer_id, now, true);
        let key = (topic, partition);
        let known = table
            .producers
            .get(&producer_id)
            .is_some_and(|p| p.partitions.contains_key(&key));
        if !known {
            while table.tracked >= MAX_TRACKED && table.evict_producing(producer_id) {}
            table.tracked += 1;
        }
        let p = table
            .producers
            .get_mut(&producer_id)
            .ok_or(errors::UNKNOWN_PRODUCER_ID)?;
        Ok(Arc::clone(p.partitions.entry(key).or_default()))
    }

    /// A new producer id at epoch 0, or for `existing` (an id this server handed out, at
    /// its current epoch or one it bumped to itself) an epoch past every one it used.
    ///
    /// # Errors
    /// COORDINATOR_LOAD_IN_PROGRESS (retriable, as Kafka answers when it has no id to
    /// hand out) when `--max-producer-ids` ids are kept and each produced within
    /// [`RETRY_WINDOW`].
    fn init(&self, limits: Limits, existing: Option<(i64, i16)>) -> Result<(i64, i16), i16> {
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
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
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
                partitions: HashMap::new(),
            },
        );
        Ok((id, 0))
    }

    /// The sequence states of the partitions of `wanted`, by producer id: one pass
    /// over the partitions tracked (at most [`MAX_TRACKED`]), whatever was asked.
    fn on_partitions(
        &self,
        wanted: &HashSet<(TopicId, i32)>,
    ) -> HashMap<(TopicId, i32), Vec<(i64, Shared)>> {
        let mut out: HashMap<(TopicId, i32), Vec<(i64, Shared)>> = HashMap::new();
        if wanted.is_empty() {
            return out;
        }
        let table = self.table();
        for (&id, issued) in &table.producers {
            for (key, shared) in &issued.partitions {
                if wanted.contains(key) {
                    out.entry(*key).or_default().push((id, Arc::clone(shared)));
                }
            }
        }
        out
    }

    /// Ids kept now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.table().producers.len()
    }
}

/// Answers InitProducerId.
pub(crate) fn init_producer_id(
    broker: &ListenerState,
    request: InitProducerIdRequest,
    _version: i16,
) -> InitProducerIdResponse {
    let mut response = InitProducerIdResponse::default();
    if request.transactional_id.is_some() {
        response.error_code = errors::TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
        response.producer_id = ProducerId(-1);
        response.producer_epoch = -1;
        return response;
    }
    let existing =
        (request.producer_id.0 >= 0).then_some((request.producer_id.0, request.producer_epoch));
    let limits = Limits::of(&broker.service.config);
    match broker.producers.init(limits, existing) {
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

/// A topic DescribeProducers names: its partitions asked, and the live topic's id and
/// partition count.
type AskedTopic = (TopicName, Vec<i32>, Option<(TopicId, u32)>);

/// Answers DescribeProducers: each partition asked (once) with the idempotent
/// producers that wrote to it and are still tracked; UNKNOWN_TOPIC_OR_PARTITION for a
/// partition that does not exist. Transactions are not served: no producer has a
/// coordinator epoch or an open transaction.
pub(crate) async fn describe_producers(
    broker: &ListenerState,
    request: DescribeProducersRequest,
) -> DescribeProducersResponse {
    // Topics in the order first named, each partition once; each live topic's id and
    // partition count.
    let mut topics: Vec<AskedTopic> = Vec::new();
    let mut slot: HashMap<TopicName, usize> = HashMap::new();
    let mut seen: HashSet<(usize, i32)> = HashSet::new();
    let mut wanted: HashSet<(TopicId, i32)> = HashSet::new();
    for topic in request.topics {
        let t = match slot.get(&topic.name) {
            Some(&t) => t,
            None => {
                let live = match broker.service.kafko.find_topic(topic.name.as_str()) {
                    Ok(Some(h)) => Some((h.id(), h.partitions())),
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
                if let Some((id, count)) = topics[t].2
                    && u32::try_from(p).is_ok_and(|p| p < count)
                {
                    wanted.insert((id, p));
                }
            }
        }
    }
    let mut found = broker.producers.on_partitions(&wanted);
    let mut response = DescribeProducersResponse::default();
    for (name, partitions, id) in topics {
        let mut answer = TopicResponse::default();
        for p in partitions {
            let mut row = PartitionResponse::default();
            row.partition_index = p;
            match id.map(|(id, _)| id).filter(|id| wanted.contains(&(*id, p))) {
                None => row.error_code = errors::UNKNOWN_TOPIC_OR_PARTITION,
                Some(id) => {
                    let mut producers = found.remove(&(id, p)).unwrap_or_default();
                    producers.sort_by_key(|(producer, _)| *producer);
                    for (producer, shared) in producers {
                        let Some((epoch, last_sequence, last_timestamp)) =
                            shared.lock().await.state()
                        else {
                            continue;
                        };
                        let mut state = ProducerState::default();
                        state.producer_id = ProducerId(producer);
                        state.producer_epoch = i32::from(epoch);
                        state.last_sequence = last_sequence;
                        state.last_timestamp = last_timestamp;
                        state.coordinator_epoch = -1;
                        state.current_txn_start_offset = -1;
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

    fn topic() -> TopicId {
        "0000000000000000000000000000002a".parse().unwrap()
    }

    fn limits(max_ids: usize) -> Limits {
        Limits {
            expiration: Duration::from_secs(3600),
            max_ids,
        }
    }

    #[test]
    fn only_issued_ids_at_their_epoch_or_a_newer_one_are_accepted() {
        let p = Producers::new();
        let l = limits(10);
        assert_eq!(
            p.partition(l, 42, 0, topic(), 0).err(),
            Some(errors::UNKNOWN_PRODUCER_ID)
        );
        assert_eq!(p.len(), 0, "a made-up id is not remembered");
        let (id, epoch) = p.init(l, None).unwrap();
        assert!(p.partition(l, id, epoch, topic(), 0).is_ok());
        // A producer's own bump: the partition's sequences decide.
        assert!(p.partition(l, id, epoch + 1, topic(), 0).is_ok());
        // InitProducerId goes past it, from the issued epoch or the bumped one.
        assert_eq!(p.init(l, Some((id, epoch))), Ok((id, 2)));
        assert_eq!(p.init(l, Some((id, 2))), Ok((id, 3)));
        assert_eq!(
            p.partition(l, id, 0, topic(), 0).err(),
            Some(errors::INVALID_PRODUCER_EPOCH),
            "the old epoch is fenced"
        );
    }

    #[test]
    fn a_flood_of_new_ids_evicts_unused_ones_first() {
        let p = Producers::new();
        let l = limits(100);
        let (writer, epoch) = p.init(l, None).unwrap();
        let seq = p.partition(l, writer, epoch, topic(), 0).unwrap();
        seq.try_lock().unwrap().written(epoch, (0, 0), 7, 1);
        let (first_unused, _) = p.init(l, None).unwrap();
        for _ in 0..1000 {
            p.init(l, None).unwrap();
        }
        assert_eq!(p.len(), 100);
        assert_eq!(
            p.partition(l, first_unused, 0, topic(), 0).err(),
            Some(errors::UNKNOWN_PRODUCER_ID)
        );
        let again = p.partition(l, writer, epoch, topic(), 0).unwrap();
        assert_eq!(
            again.try_lock().unwrap().check(epoch, 0, 0),
            Check::Duplicate(7)
        );
    }

    #[test]
    fn ids_that_may_still_retry_are_never_evicted_for_a_new_one() {
        let p = Producers::new();
        let l = limits(3);
        let mut writers = Vec::new();
        for _ in 0..3 {
            let (id, epoch) = p.init(l, None).unwrap();
            p.partition(l, id, epoch, topic(), 0).unwrap();
            writers.push(id);
        }
        assert_eq!(p.init(l, None), Err(errors::COORDINATOR_LOAD_IN_PROGRESS));
        for id in writers {
            assert!(p.partition(l, id, 0, topic(), 0).is_ok());
        }
    }

    #[test]
    fn idle_ids_expire_and_busy_ones_stay() {
        let p = Producers::new();
        let l = Limits {
            expiration: Duration::from_millis(200),
            max_ids: 10,
        };
        let (idle, _) = p.init(l, None).unwrap();
        let (busy, _) = p.init(l, None).unwrap();
        for _ in 0..3 {
            std::thread::sleep(Duration::from_millis(100));
            assert!(p.partition(l, busy, 0, topic(), 0).is_ok());
        }
        assert_eq!(
            p.partition(l, idle, 0, topic(), 0).err(),
            Some(errors::UNKNOWN_PRODUCER_ID)
        );
        assert_eq!(p.len(), 1);
    }

    #[test]
    fn sequences_accept_the_next_dedupe_a_retry_and_refuse_a_gap() {
        let mut s = Sequences::default();
        assert_eq!(s.check(0, 0, 9), Check::Write);
        s.written(0, (0, 9), 100, 1);
        assert_eq!(s.check(0, 0, 9), Check::Duplicate(100));
        assert_eq!(s.check(0, 10, 14), Check::Write);
        s.written(0, (10, 14), 110, 1);
        assert_eq!(
            s.check(0, 20, 24),
            Check::Refuse(errors::OUT_OF_ORDER_SEQUENCE_NUMBER)
        );
        assert_eq!(s.check(0, 10, 14), Check::Duplicate(110));
        // A new epoch starts again at 0; the old one is fenced.
        assert_eq!(
            s.check(1, 3, 4),
            Check::Refuse(errors::OUT_OF_ORDER_SEQUENCE_NUMBER)
        );
        assert_eq!(s.check(1, 0, 4), Check::Write);
        s.written(1, (0, 4), 115, 1);
        assert_eq!(
            s.check(0, 15, 16),
            Check::Refuse(errors::INVALID_PRODUCER_EPOCH)
        );
    }
}
