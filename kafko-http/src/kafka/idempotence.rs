//! Idempotent producers: InitProducerId hands out producer ids and epochs, and every
//! produce from an idempotent producer is checked against the sequence numbers seen for
//! its (producer id, topic, partition): the next expected sequence is written, a retry
//! of one of the last five batches is answered with its original offsets and not written
//! again, any other sequence is OUT_OF_ORDER_SEQUENCE_NUMBER, an older epoch
//! INVALID_PRODUCER_EPOCH. A partition's check and write run under one lock, so two
//! copies of a batch never both write.
//!
//! What survives a restart: the records; not the sequence state, which is in memory.
//! Producer ids are drawn from the clock at start (milliseconds since the epoch, shifted
//! left), so a restarted server does not hand out an id in use before; a producer whose
//! id the server does not know is tracked from its next batch, whatever its sequence.
//! A batch sent before a restart and retried after it can thus be written twice.
//!
//! Transactional producers (a transactional id) are refused with
//! TRANSACTIONAL_ID_AUTHORIZATION_FAILED: transactions are not served.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};

use super::{Broker, errors};

/// Batches remembered per partition for retries (Kafka's `max.in.flight` for
/// idempotence is at most 5).
const REMEMBERED: usize = 5;
/// Partitions tracked at most; past it the least recently written are forgotten.
const MAX_TRACKED: usize = 100_000;

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

    /// Records a written batch.
    pub(crate) fn written(&mut self, epoch: i16, first: i32, last: i32, base_offset: i64) {
        let known = match &mut self.known {
            Some(k) if k.epoch == epoch => k,
            _ => self.known.insert(Known {
                epoch,
                next: 0,
                recent: VecDeque::new(),
            }),
        };
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

type Key = (i64, String, i32);

/// Every idempotent producer's state.
pub(crate) struct Producers {
    next_id: AtomicI64,
    epochs: Mutex<HashMap<i64, i16>>,
    partitions: Mutex<HashMap<Key, Arc<tokio::sync::Mutex<Sequences>>>>,
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
            epochs: Mutex::new(HashMap::new()),
            partitions: Mutex::new(HashMap::new()),
        }
    }

    /// The lock of one partition's sequence state for `producer_id`.
    pub(crate) fn partition(
        &self,
        producer_id: i64,
        topic: &str,
        partition: i32,
    ) -> Arc<tokio::sync::Mutex<Sequences>> {
        let mut map = self
            .partitions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let key = (producer_id, topic.to_owned(), partition);
        if !map.contains_key(&key) && map.len() >= MAX_TRACKED {
            // Forget entries no produce holds right now (whose retries are long over
            // in all likelihood) to stay bounded.
            map.retain(|_, s| Arc::strong_count(s) > 1);
        }
        Arc::clone(map.entry(key).or_default())
    }

    /// A new producer id at epoch 0, or the next epoch of `existing` when this server
    /// handed it out.
    fn init(&self, existing: Option<(i64, i16)>) -> (i64, i16) {
        let mut epochs = self.epochs.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((id, epoch)) = existing
            && let Some(current) = epochs.get_mut(&id)
            && *current == epoch
            && epoch < i16::MAX - 1
        {
            *current += 1;
            return (id, *current);
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if epochs.len() >= MAX_TRACKED {
            epochs.clear();
        }
        epochs.insert(id, 0);
        (id, 0)
    }
}

/// Answers InitProducerId.
pub(crate) fn init_producer_id(
    broker: &Broker,
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
    let (id, epoch) = broker.producers.init(existing);
    response.producer_id = ProducerId(id);
    response.producer_epoch = epoch;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_accept_the_next_dedupe_a_retry_and_refuse_a_gap() {
        let mut s = Sequences::default();
        assert_eq!(s.check(0, 0, 9), Check::Write);
        s.written(0, 0, 9, 100);
        assert_eq!(s.check(0, 0, 9), Check::Duplicate(100));
        assert_eq!(s.check(0, 10, 14), Check::Write);
        s.written(0, 10, 14, 110);
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
        s.written(1, 0, 4, 115);
        assert_eq!(
            s.check(0, 15, 16),
            Check::Refuse(errors::INVALID_PRODUCER_EPOCH)
        );
    }
}
