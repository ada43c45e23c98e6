//! [`ProduceError`]: appending records to a topic.

error_enum! {
    /// Why a send (or a producer's sync) failed. After a `Storage` failure, nothing of
    /// that partition was appended.
    pub enum ProduceError: operation "a send" {
        TopicDeleted, PartitionNotFound, RecordTooLarge, KeyRequired,
        InvalidBatch = InvalidRequest, ProducerRejected, Backpressure, PartiallyAppended, PartitionReadOnly,
        PartitionPanicked, ShuttingDown, Storage, Internal,
    }
    never: LimitReached, AlreadyOpen, TopicNotFound, TopicAlreadyExists, InvalidName, InvalidConfig,
        OffsetOutOfRange, NotCompacted, GroupNotFound, UnknownMember, StaleGeneration,
        NotAssigned, GroupHasMembers, NoValidOffset, RebalanceInProgress, FencedInstanceId, InconsistentGroupProtocol,
}
