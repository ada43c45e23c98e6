//! [`AdminError`]: resolving, creating, describing, reconfiguring and deleting topics,
//! and the log-wide maintenance calls (sync, retention, compaction, shutdown), and
//! deleting a partition's records below an offset.

error_enum! {
    /// Why a topic administration or maintenance call failed.
    pub enum AdminError: operation "a topic administration call" {
        TopicNotFound, TopicDeleted, TopicAlreadyExists, InvalidName, InvalidConfig,
        NotCompacted, LimitReached, PartitionReadOnly, PartitionPanicked, ShuttingDown, Storage, Internal,
        PartitionNotFound, OffsetOutOfRange, InvalidRequest,
    }
    never: ProducerRejected, AlreadyOpen, RecordTooLarge, KeyRequired, PartiallyAppended, Backpressure, GroupNotFound, UnknownMember,
        StaleGeneration, NotAssigned, GroupHasMembers, NoValidOffset, RebalanceInProgress, FencedInstanceId, InconsistentGroupProtocol,
}
