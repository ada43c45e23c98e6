//! [`GroupError`]: consumer group calls (join, leave, poll, commit, seek, describe,
//! configure, delete).

error_enum! {
    /// Why a consumer group call failed. After a `Storage` failure (reading records or
    /// writing the group's state), the group is where it was.
    pub enum GroupError: operation "a group call" {
        InvalidName, InvalidSessionTimeout, GroupNotFound, UnknownMember, StaleGeneration,
        NotAssigned, GroupHasMembers, RebalanceInProgress, FencedInstanceId, InconsistentGroupProtocol, NoValidOffset, OffsetOutOfRange, TopicDeleted,
        PartitionNotFound, LimitReached, ShuttingDown, Storage, Internal,
    }
    never: ProducerRejected, AlreadyOpen, TopicNotFound, TopicAlreadyExists, InvalidConfig, RecordTooLarge,
        KeyRequired, InvalidRequest, NotCompacted, PartiallyAppended, Backpressure,
        PartitionReadOnly, PartitionPanicked,
}
