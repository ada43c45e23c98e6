//! [`OpenError`]: opening (locking and recovering) a data directory.

error_enum! {
    /// Why a data directory could not be opened: it is locked, recovery could not read
    /// or repair it (`Storage`), or a bug or a panic stopped recovery (`Internal`).
    pub enum OpenError: operation "opening the data directory" {
        AlreadyOpen, Storage, Internal,
    }
    never: ProducerRejected, LimitReached, TopicNotFound, TopicDeleted, TopicAlreadyExists, InvalidName, InvalidConfig,
        PartitionNotFound, OffsetOutOfRange, RecordTooLarge, KeyRequired, InvalidRequest,
        NotCompacted, PartiallyAppended, Backpressure, PartitionReadOnly, PartitionPanicked,
        ShuttingDown, GroupNotFound, UnknownMember, StaleGeneration, NotAssigned,
        GroupHasMembers, NoValidOffset, RebalanceInProgress, FencedInstanceId, InconsistentGroupProtocol,
}
