//! The catalog: every failure the log knows, each written once — its message, its
//! fields, its kind, and how it crosses into and out of the union [`KafkoError`]. The
//! error enums (`error_enum!`) are lists of its entries.
//!
//! [`KafkoError`]: crate::KafkoError

/// Defines `failure!`, the catalog's lookup: `failure! { Entry Variant [state] }` calls
/// `error_enum!` back with the record of `Variant`, declared as the entry says (see
/// `error_enum!`). Each row of the table gets an arm: a failure with named fields, the
/// union's variant of the same name with the same fields. The arms after the `;` are
/// written out: failures that wrap a value, have no field, or cross differently. `$d`
/// is a `$`, for the metavariables of the arms this writes.
macro_rules! catalog {
    ($d:tt
        $(
            $(#[doc = $doc:literal])*
            #[kind($kind:ident)]
            #[error($($message:tt)*)]
            $entry:ident {
                $($(#[doc = $field_doc:literal])* $f:ident: $t:ty,)*
            }
        )*
        ;
        $($written:tt)*
    ) => {
        macro_rules! failure {
            $(
                ($entry $d v:ident $d then:tt) => {
                    failure! { @record $d then
                        [
                            $(#[doc = $doc])*
                            #[error($($message)*)]
                            $d v { $($(#[doc = $field_doc])* $f: $t,)* }
                        ]
                        [Self::$d v { .. } => crate::error::ErrorKind::$kind,]
                        [Self::$d v { $($f),* } => crate::error::KafkoError::$entry { $($f),* },]
                        [crate::error::KafkoError::$entry { $($f),* } => Self::$d v { $($f),* },]
                        [Self::$d v { $($f),* } => Self::$d v { $($f: Clone::clone($f)),* },]
                    }
                };
            )*
            (@record [$d head:tt [$d ($d done:tt)*] $d ($d rest:tt)*] $d ($d record:tt)*) => {
                error_enum! { @next $d head [$d ($d done)* { $d ($d record)* }] $d ($d rest)* }
            };
            $($written)*
        }
    };
}

catalog! { $
    // The data directory.
    /// Another process (or another `Kafko` in this one) holds the data directory.
    #[kind(Unavailable)]
    #[error("data directory {path} is already open by another kafko instance")]
    AlreadyOpen {
        /// The locked data directory.
        path: std::path::PathBuf,
    }

    // Topics and their configuration.
    /// The topic does not exist.
    #[kind(NotFound)]
    #[error("topic '{topic}' does not exist")]
    TopicNotFound {
        /// Requested topic.
        topic: String,
    }
    /// The topic a handle (or a cursor) was bound to has been deleted; a topic
    /// created again under the same name is a different topic.
    #[kind(NotFound)]
    #[error("topic '{topic}' was deleted")]
    TopicDeleted {
        /// Topic name.
        topic: String,
    }
    /// The topic exists with a different configuration.
    #[kind(AlreadyExists)]
    #[error("topic '{topic}' already exists with a different configuration")]
    TopicAlreadyExists {
        /// Requested topic.
        topic: String,
    }
    /// A topic or group name (or a member id) breaks Kafka's naming rule.
    #[kind(InvalidInput)]
    #[error("invalid name '{name}': {reason}")]
    InvalidName {
        /// The rejected name (possibly truncated for display).
        name: String,
        /// Why it was rejected.
        reason: &'static str,
    }
    /// A configuration value is out of range or inconsistent.
    #[kind(InvalidInput)]
    #[error("invalid configuration: {reason}")]
    InvalidConfig {
        /// What is wrong.
        reason: String,
    }
    /// Creating a topic or a consumer group would pass a limit the log was opened with
    /// (its topics, the partitions of all its topics together, or its groups): nothing
    /// was created. Delete one, or raise the limit.
    #[kind(Conflict)]
    #[error("the limit of {limit} {resource} is reached")]
    LimitReached {
        /// What is limited: `topics`, `partitions` or `groups`.
        resource: &'static str,
        /// The limit.
        limit: u64,
    }
    /// A compaction was asked of a topic whose cleanup policy does not compact.
    #[kind(InvalidInput)]
    #[error("topic '{topic}' is not compacted (cleanup_policy = delete)")]
    NotCompacted {
        /// Topic name.
        topic: String,
    }

    // Records: where they go and what they must be.
    /// The partition number (of a read, a record, a commit or a seek) is not below
    /// the topic's partition count.
    #[kind(NotFound)]
    #[error(
        "topic '{topic}' has {partitions} partitions; partition {partition} does not exist"
    )]
    PartitionNotFound {
        /// Topic name.
        topic: String,
        /// Requested partition.
        partition: u32,
        /// Partition count of the topic.
        partitions: u32,
    }
    /// The requested offset (of a read, a commit or a seek) is outside
    /// `[log_start_offset, high_watermark]`.
    #[kind(OutOfRange)]
    #[error(
        "offset {requested} is out of range; valid offsets are {log_start_offset}..={high_watermark}"
    )]
    OffsetOutOfRange {
        /// Requested offset.
        requested: u64,
        /// First offset still in the log.
        log_start_offset: u64,
        /// One past the last offset in the log.
        high_watermark: u64,
    }
    /// A record (or a batch) exceeds the topic's `max_record_bytes`.
    #[kind(TooLarge)]
    #[error("record of {size} bytes exceeds the limit of {max} bytes")]
    RecordTooLarge {
        /// Encoded size of the offending record.
        size: usize,
        /// The topic's limit.
        max: usize,
    }
    /// A compacted topic received a record without a key (Kafka rejects these too).
    #[kind(InvalidInput)]
    #[error("topic '{topic}' is compacted: every record needs a key")]
    KeyRequired {
        /// Topic name.
        topic: String,
    }
    /// The request itself is malformed: a send with no record or past the batch
    /// format's cap, or a bad argument.
    #[kind(InvalidInput)]
    #[error("invalid request: {reason}")]
    InvalidRequest {
        /// What is wrong.
        reason: String,
    }
    /// An idempotent producer's batch breaks the partition's producer state: an older
    /// epoch, a sequence that does not follow, or a producer the caller may not start
    /// here. Nothing was appended.
    #[kind(Conflict)]
    #[error("producer {producer_id} refused on {topic}-{partition}: {rejection}")]
    ProducerRejected {
        /// Topic name.
        topic: String,
        /// Partition.
        partition: u32,
        /// The batch's producer id.
        producer_id: i64,
        /// What the state says.
        rejection: crate::producer_state::ProducerRejection,
    }

    // A partition's write path.
    /// A partition's inbox is full (a send with `no_wait`): nothing was appended;
    /// retry later.
    #[kind(Unavailable)]
    #[error("partition {topic}-{partition} is busy; retry later")]
    Backpressure {
        /// Topic name.
        topic: String,
        /// Partition.
        partition: u32,
    }
    /// The partition refuses writes after an fsync or unrecoverable write failure.
    #[kind(Unavailable)]
    #[error("partition {topic}-{partition} is read-only after a storage failure: {reason}")]
    PartitionReadOnly {
        /// Topic name.
        topic: String,
        /// Partition.
        partition: u32,
        /// The failure that poisoned the write path.
        reason: String,
    }
    /// A write of the partition panicked (its storage layer, or a write group's
    /// leader); the partition is unavailable.
    #[kind(Unavailable)]
    #[error("a write of partition {topic}-{partition} panicked")]
    PartitionPanicked {
        /// Topic name.
        topic: String,
        /// Partition.
        partition: u32,
    }

    // Storage: flattened in the union, a `StorageError` in the operation errors.
    /// The storage device is full: retry once space is freed.
    #[kind(StorageFull)]
    #[error("no space left on device while {op} {path}")]
    StorageFull {
        /// The operation that failed.
        op: &'static str,
        /// The file involved.
        path: std::path::PathBuf,
    }
    /// The process (or the system) has no file descriptor left for this operation:
    /// retry once descriptors are free, or raise the limit (`ulimit -n`).
    #[kind(Unavailable)]
    #[error("out of file descriptors while {op} {path}")]
    TooManyOpenFiles {
        /// The operation that failed.
        op: &'static str,
        /// The file involved.
        path: std::path::PathBuf,
    }
    /// Data on disk failed verification.
    #[kind(Corruption)]
    #[error("corruption in {file} at byte {position}: {reason}")]
    Corruption {
        /// The damaged file.
        file: std::path::PathBuf,
        /// Byte position of the damage.
        position: u64,
        /// What failed.
        reason: String,
    }

    // Consumer groups.
    /// The consumer group does not exist.
    #[kind(NotFound)]
    #[error("consumer group '{group}' does not exist")]
    GroupNotFound {
        /// Group name.
        group: String,
    }
    /// The member is not (or no longer) part of the group: rejoin.
    #[kind(Conflict)]
    #[error("member '{member}' is not part of group '{group}'")]
    UnknownMember {
        /// Group name.
        group: String,
        /// Member id.
        member: String,
    }
    /// A call carried an old generation: the group rebalanced since; rejoin.
    #[kind(Conflict)]
    #[error("group '{group}' is at generation {current}; request used generation {given}")]
    StaleGeneration {
        /// Group name.
        group: String,
        /// The group's current generation.
        current: u64,
        /// The generation the caller sent.
        given: u64,
    }
    /// The member tried to commit or seek a partition it does not own.
    #[kind(Conflict)]
    #[error("partition {partition} of topic '{topic}' is not assigned to member '{member}'")]
    NotAssigned {
        /// Topic name.
        topic: String,
        /// Partition.
        partition: u32,
        /// Member id.
        member: String,
    }
    /// A call without a member (the implicit single member) reached a group that has
    /// members on this topic, or a group with members was asked to be deleted.
    #[kind(Conflict)]
    #[error(
        "group '{group}' has {members} active member(s) on topic '{topic}'; join it or wait for them to leave"
    )]
    GroupHasMembers {
        /// Group name.
        group: String,
        /// Topic name.
        topic: String,
        /// Live members.
        members: usize,
    }
    /// A static member's call carried a member id its instance id no longer has: a newer
    /// instance with the same `group.instance.id` joined since (Kafka's
    /// FENCED_INSTANCE_ID). The old instance must stop.
    #[kind(Conflict)]
    #[error("member '{member}' of group '{group}' was replaced by a newer instance '{instance}'")]
    FencedInstanceId {
        /// Group name.
        group: String,
        /// The static membership id.
        instance: String,
        /// The member id the call carried.
        member: String,
    }
    /// The group is rebalancing: rejoin (Kafka's REBALANCE_IN_PROGRESS).
    #[kind(Conflict)]
    #[error("group '{group}' is rebalancing; rejoin")]
    RebalanceInProgress {
        /// Group name.
        group: String,
    }
    /// The call's member kind or protocol does not fit the group's: Kafka members and
    /// members of kafko's own APIs cannot share a group, and Kafka members must share a
    /// protocol type and one assignor.
    #[kind(Conflict)]
    #[error("group '{group}' has members of another protocol: {reason}")]
    InconsistentGroupProtocol {
        /// Group name.
        group: String,
        /// What does not fit.
        reason: String,
    }
    /// The group has no valid position and its reset policy is `error`: seek.
    #[kind(OutOfRange)]
    #[error(
        "group '{group}' has no valid offset for {topic}-{partition} and offset_reset=error"
    )]
    NoValidOffset {
        /// Group name.
        group: String,
        /// Topic name.
        topic: String,
        /// Partition.
        partition: u32,
    }
    ;

    // Written out.
    (PartiallyAppended $v:ident $then:tt) => { failure! { @record $then
        [
            /// Some partitions appended their records and others did not: retry only
            /// [`PartialSend::failed_records`](crate::PartialSend::failed_records). Its
            /// kind is what the first failed partition met.
            #[error("{0}")]
            $v(Box<crate::send::PartialSend>)
        ]
        [
            Self::$v(p) => p
                .failed
                .first()
                .map_or(crate::error::ErrorKind::Internal, |f| f.error.kind()),
        ]
        [Self::$v(p) => crate::error::KafkoError::PartiallyAppended(p),]
        [crate::error::KafkoError::PartiallyAppended(p) => Self::$v(p),]
        [
            Self::$v(p) => Self::Internal(crate::error::InternalError::Unexpected {
                operation: "copying a write failure",
                error: p.to_string(),
            }),
        ]
    } };

    (ShuttingDown $v:ident $then:tt) => { failure! { @record $then
        [
            /// The log is shutting down (or was shut down) and takes no more work.
            #[error("kafko is shutting down")]
            $v
        ]
        [Self::$v => crate::error::ErrorKind::Unavailable,]
        [Self::$v => crate::error::KafkoError::ShuttingDown,]
        [crate::error::KafkoError::ShuttingDown => Self::$v,]
        [Self::$v => Self::$v,]
    } };

    (Io $v:ident $then:tt) => { failure! { @record $then
        [
            /// Another I/O call failed.
            #[error("I/O error while {op} {path}: {source}")]
            $v {
                /// The operation that failed.
                op: &'static str,
                /// The file involved.
                path: std::path::PathBuf,
                /// The OS error.
                #[source]
                source: std::io::Error,
            }
        ]
        [Self::$v { .. } => crate::error::ErrorKind::Internal,]
        [Self::$v { op, path, source } => crate::error::KafkoError::Io { op, path, source },]
        [crate::error::KafkoError::Io { op, path, source } => Self::$v { op, path, source },]
        [
            Self::$v { op, path, source } => Self::$v {
                op,
                path: path.clone(),
                source: std::io::Error::new(source.kind(), source.to_string()),
            },
        ]
    } };
    (Storage $v:ident [[$mode:ident $transparent:ident $($head:tt)*] $($rest:tt)*]) => { failure! {
        @record [[$mode $transparent $($head)*] $($rest)*]
        [
            /// The storage layer failed: see [`StorageError`](crate::StorageError).
            #[error($transparent)]
            $v(#[from] crate::error::StorageError)
        ]
        [Self::$v(e) => e.kind(),]
        [Self::$v(e) => e.into(),]
        [
            crate::error::KafkoError::StorageFull { op, path } => {
                Self::$v(crate::error::StorageError::Full { op, path })
            }
            crate::error::KafkoError::TooManyOpenFiles { op, path } => {
                Self::$v(crate::error::StorageError::TooManyOpenFiles { op, path })
            }
            crate::error::KafkoError::Corruption { file, position, reason } => {
                Self::$v(crate::error::StorageError::Corruption { file, position, reason })
            }
            crate::error::KafkoError::Io { op, path, source } => {
                Self::$v(crate::error::StorageError::Io { op, path, source })
            }
        ]
        []
    } };

    (Internal $v:ident [[$mode:ident $transparent:ident $($head:tt)*] $($rest:tt)*]) => { failure! {
        @record [[$mode $transparent $($head)*] $($rest)*]
        [
            /// A bug or a panic: nothing the caller did or can fix by retrying.
            #[error($transparent)]
            $v(#[from] crate::error::InternalError)
        ]
        [Self::$v(e) => e.kind(),]
        [Self::$v(e) => crate::error::KafkoError::Internal(e),]
        [crate::error::KafkoError::Internal(e) => Self::$v(e),]
        [Self::$v(e) => Self::$v(e.clone()),]
    } };

    (InvalidSessionTimeout $v:ident $then:tt) => { failure! { @record $then
        [
            /// A join's session timeout is outside the bounds the group accepts.
            #[error(
                "session timeout must be between {} ms and {} ms, got {} ms",
                .min.as_millis(),
                .max.as_millis(),
                .timeout.as_millis()
            )]
            $v {
                /// The refused timeout.
                timeout: std::time::Duration,
                /// The shortest accepted.
                min: std::time::Duration,
                /// The longest accepted.
                max: std::time::Duration,
            }
        ]
        [Self::$v { .. } => crate::error::ErrorKind::InvalidInput,]
        // The union has no variant of its own for it: it is an invalid request there.
        [
            e @ Self::$v { .. } => crate::error::KafkoError::InvalidRequest {
                reason: e.to_string(),
            },
        ]
        []
        []
    } };
}
