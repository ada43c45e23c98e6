//! [`FetchError`]: reading a partition (a reader, a consumer).

error_enum! {
    /// Why a read failed (`Storage`: damaged data, or an I/O error).
    pub enum FetchError: operation "a read" {
        TopicDeleted, PartitionNotFound, OffsetOutOfRange, Storage, Internal,
    }
    never: ProducerRejected, LimitReached, AlreadyOpen, TopicNotFound, TopicAlreadyExists, InvalidName, InvalidConfig,
        RecordTooLarge, KeyRequired, InvalidRequest, NotCompacted, PartiallyAppended,
        Backpressure, PartitionReadOnly, PartitionPanicked, ShuttingDown, GroupNotFound,
        UnknownMember, StaleGeneration, NotAssigned, GroupHasMembers, NoValidOffset, RebalanceInProgress, FencedInstanceId, InconsistentGroupProtocol,
}
