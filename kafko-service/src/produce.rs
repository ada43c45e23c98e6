//! Produce, one policy for every front end: the topic (an explicit auto-create step),
//! the server's limits on each request (`--max-record-bytes`,
//! `--max-records-per-request`) and a full write queue refused at once. A front
//! end hands records over one at a time as it parses them ([`Produce::push`]), so no
//! per-record value is held, and gets a [`Receipt`] or a [`ProduceFailure`].

use kafko_core::{
    AdminError, Kafko, KafkoError, PartialSend, ProduceError, Producer, RecordRef, SendBatch,
    SendOptions, SendReceipt,
};

use super::failure::{Failure, Kind};
use super::topics;
use crate::config::{AutoCreate, ServerConfig};

/// The server's limits on one produce request.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The most bytes one record may take (`--max-record-bytes`).
    pub max_record_bytes: usize,
    /// The most records one request may hold (`--max-records-per-request`).
    pub max_records_per_request: usize,
}

impl Limits {
    /// Checks that a request may hold an `nth` record (1-based).
    ///
    /// # Errors
    /// [`ProduceFailure::TooManyRecords`] past the record count.
    pub fn check_count(&self, nth: usize) -> Result<(), ProduceFailure> {
        if nth > self.max_records_per_request {
            return Err(ProduceFailure::TooManyRecords {
                max: self.max_records_per_request,
            });
        }
        Ok(())
    }

    /// Checks the `nth` record (1-based) of a request against the limits: its place
    /// and its size, which it returns.
    ///
    /// # Errors
    /// [`ProduceFailure::TooManyRecords`] past the record count, `RecordTooLarge` past
    /// the record size.
    pub fn check(&self, nth: usize, record: &RecordRef<'_>) -> Result<usize, ProduceFailure> {
        self.check_count(nth)?;
        let size = record.size();
        if size > self.max_record_bytes {
            return Err(ProduceFailure::Log(KafkoError::RecordTooLarge {
                size,
                max: self.max_record_bytes,
            }));
        }
        Ok(size)
    }
}

/// How a produce is carried out: the same for every front end.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    /// fsync before acknowledging, whatever the topic's policy.
    pub sync: bool,
    /// The limits on the request.
    pub limits: Limits,
}

impl Policy {
    /// The server's policy: its limits, no forced fsync. A full write queue is always
    /// refused at once (`Backpressure`, nothing stored): an HTTP client retries on its
    /// 503, where waiting would hold its connection and a permit without bound.
    pub fn of(config: &ServerConfig) -> Self {
        Policy {
            sync: false,
            limits: Limits {
                max_record_bytes: config.max_record_bytes,
                max_records_per_request: config.max_records_per_request,
            },
        }
    }

    /// The same policy with `sync` set.
    pub fn with_sync(mut self, sync: bool) -> Self {
        self.sync = sync;
        self
    }
}

/// Why a produce stored nothing, or only part.
#[derive(Debug)]
pub enum ProduceFailure {
    /// The request holds more than `max` records: nothing stored.
    TooManyRecords {
        /// `--max-records-per-request`.
        max: usize,
    },
    /// Some partitions appended their records and others did not.
    Partial(Box<PartialSend>),
    /// The log refused the request (or the topic): nothing stored.
    Log(KafkoError),
}

impl From<ProduceError> for ProduceFailure {
    fn from(e: ProduceError) -> Self {
        match e {
            ProduceError::PartiallyAppended(partial) => ProduceFailure::Partial(partial),
            other => ProduceFailure::Log(other.into()),
        }
    }
}

impl From<AdminError> for ProduceFailure {
    fn from(e: AdminError) -> Self {
        ProduceFailure::Log(e.into())
    }
}

impl From<KafkoError> for ProduceFailure {
    fn from(e: KafkoError) -> Self {
        ProduceFailure::Log(e)
    }
}

impl From<ProduceFailure> for Failure {
    fn from(e: ProduceFailure) -> Self {
        match e {
            ProduceFailure::TooManyRecords { max } => Failure::new(
                Kind::TooManyRecords { max },
                format!("the request holds more than {max} records; split it"),
            ),
            ProduceFailure::Partial(partial) => KafkoError::PartiallyAppended(partial).into(),
            ProduceFailure::Log(e) => e.into(),
        }
    }
}

/// The topic's producer if the topic exists: the existence check, with no error to act
/// on when it does not.
///
/// # Errors
/// `ShuttingDown`.
pub fn existing(kafko: &Kafko, topic: &str) -> Result<Option<Producer>, AdminError> {
    Ok(kafko.find_topic(topic)?.map(|t| t.producer()))
}

/// The producer of `topic`, which did not exist: auto-created first, through
/// [`topics::auto_create`] (the one path every front end's auto-create takes).
///
/// # Errors
/// As [`topics::auto_create`]: `TopicNotFound` when auto-creation is off (or the name
/// is a Kafka internal topic's); the creation's failure (`InvalidName`,
/// `LimitReached`, storage…).
pub async fn create(
    kafko: &Kafko,
    auto_create: &AutoCreate,
    topic: &str,
) -> Result<Producer, AdminError> {
    Ok(topics::auto_create(kafko, auto_create, topic)
        .await?
        .producer())
}

/// The producer of `topic`: [`existing`], else [`create`].
///
/// # Errors
/// As [`create`].
pub async fn producer(
    kafko: &Kafko,
    auto_create: &AutoCreate,
    topic: &str,
) -> Result<Producer, AdminError> {
    match existing(kafko, topic)? {
        Some(producer) => Ok(producer),
        None => create(kafko, auto_create, topic).await,
    }
}

/// A produce being built: each record is checked against the policy's limits and the
/// topic's rules, routed and encoded as it is pushed; [`send`](Self::send) appends them
/// all (each partition's records together, or not at all).
pub struct Produce<'p> {
    batch: SendBatch<'p>,
    policy: Policy,
    /// Records pushed or skipped.
    seen: usize,
    /// Records pushed.
    records: usize,
    bytes: usize,
}

/// A produce that stored every record.
#[derive(Debug)]
pub struct Receipt {
    /// Where each record went.
    pub sent: SendReceipt,
    /// Records stored.
    pub records: usize,
    /// Their bytes (as [`RecordRef::size`] counts them).
    pub bytes: usize,
}

impl<'p> Produce<'p> {
    /// An empty produce to `producer`'s topic under `policy`.
    pub fn new(producer: &'p Producer, policy: Policy) -> Self {
        Produce {
            batch: producer.batch(),
            policy,
            seen: 0,
            records: 0,
            bytes: 0,
        }
    }

    /// Makes room for about `bytes` of records up front (the request body's size): see
    /// [`SendBatch::reserve`].
    pub fn reserve(&mut self, bytes: usize) {
        self.batch.reserve(bytes);
    }

    /// Adds one record.
    ///
    /// # Errors
    /// The request's limits ([`Limits::check`]) or the topic's (`RecordTooLarge`,
    /// `KeyRequired`, `PartitionNotFound`…): the record is refused, and the request
    /// with it.
    pub fn push(&mut self, record: RecordRef<'_>) -> Result<(), ProduceFailure> {
        let size = self.policy.limits.check(self.seen + 1, &record)?;
        self.batch.push(record)?;
        self.seen += 1;
        self.records += 1;
        self.bytes += size;
        Ok(())
    }

    /// The same produce, continuing a request whose `earlier` records were sent already
    /// (a v3 stream sends each record as it arrives): they count against its limits.
    pub fn after(mut self, earlier: usize) -> Self {
        self.seen = earlier;
        self
    }

    /// Counts a record the front end answers for itself, unsent (a v2 record for a
    /// partition that does not exist), against the request's limits.
    ///
    /// # Errors
    /// As [`Limits::check`].
    pub fn skip(&mut self, record: &RecordRef<'_>) -> Result<(), ProduceFailure> {
        self.policy.limits.check(self.seen + 1, record)?;
        self.seen += 1;
        Ok(())
    }

    /// Records pushed so far.
    pub fn len(&self) -> usize {
        self.records
    }

    /// Whether no record was pushed yet.
    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// Appends every record pushed.
    ///
    /// # Errors
    /// `Backpressure` (a full write queue: nothing stored),
    /// [`ProduceFailure::Partial`], or the log's failure (nothing stored).
    pub async fn send(self) -> Result<Receipt, ProduceFailure> {
        let options = SendOptions {
            sync: self.policy.sync,
            no_wait: true,
        };
        let sent = self.batch.send(options).await?;
        Ok(Receipt {
            sent,
            records: self.records,
            bytes: self.bytes,
        })
    }
}
