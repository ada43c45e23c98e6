//! The public types of Kafka's consumer group protocol (KIP-848) calls: a
//! ConsumerGroupHeartbeat as the coordinator reads it, its answer, its refusals, and a
//! consumer group's description.

use std::collections::BTreeSet;
use std::time::Duration;

/// A member's subscription as its heartbeat sends it; each part `None` when unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsumerSubscription {
    /// Topic names, as given.
    pub topic_names: Option<Vec<String>>,
    /// A regular expression (v1) whose matching topics are subscribed too (empty: no
    /// more regex); the caller resolves it (see
    /// [`GroupHandle::consumer_heartbeat`](super::GroupHandle::consumer_heartbeat)).
    pub regex: Option<String>,
}

/// A ConsumerGroupHeartbeat request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsumerHeartbeat {
    /// The member id (empty on a first join of v0: the coordinator makes one).
    pub member_id: String,
    /// 0 to join, −1 to leave, −2 for a static member leaving for a while, else the
    /// member's current epoch.
    pub member_epoch: i32,
    /// The static member's `group.instance.id`.
    pub instance_id: Option<String>,
    /// The member's rack (kept and described; the assignors ignore it).
    pub rack_id: Option<String>,
    /// How long the member may take to release revoked partitions (`None`: unchanged).
    pub rebalance_timeout: Option<Duration>,
    /// The subscription (`None`: unchanged).
    pub subscription: Option<ConsumerSubscription>,
    /// The server assignor the member asks for (`None`: unchanged).
    pub server_assignor: Option<String>,
    /// The partitions the member owns, by topic name (`None`: unchanged since its last
    /// heartbeat). Partitions of topics that no longer exist are left out.
    pub owned: Option<Vec<(String, Vec<u32>)>>,
    /// The client id of the request header.
    pub client_id: String,
    /// The client's address.
    pub client_host: String,
}

/// The answer to a ConsumerGroupHeartbeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerHeartbeatAnswer {
    /// The member's id.
    pub member_id: String,
    /// Its epoch now (−1 after leaving, −2 after a static member's temporary leave).
    pub member_epoch: i32,
    /// How often to heartbeat.
    pub heartbeat_interval: Duration,
    /// The member's assignment, by topic name, when the member must learn it (it
    /// changed, or the request was a full one); `None` otherwise.
    pub assignment: Option<Vec<(String, Vec<u32>)>>,
}

/// Why a consumer group call is refused, each a Kafka error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumerRefusal {
    /// `UNKNOWN_MEMBER_ID`.
    UnknownMember,
    /// `FENCED_MEMBER_EPOCH`: the member must drop its partitions and join again.
    FencedMemberEpoch,
    /// `STALE_MEMBER_EPOCH` (an OffsetCommit or OffsetFetch from an older epoch).
    StaleMemberEpoch,
    /// `UNRELEASED_INSTANCE_ID`: another live member holds the instance id.
    UnreleasedInstanceId,
    /// `FENCED_INSTANCE_ID`: the instance id belongs to another member id.
    FencedInstanceId,
    /// `UNSUPPORTED_ASSIGNOR`.
    UnsupportedAssignor,
    /// `GROUP_ID_NOT_FOUND`: the group is of another type with live members.
    NotConsumerGroup,
    /// `GROUP_MAX_SIZE_REACHED`.
    GroupMaxSize,
    /// `INVALID_REQUEST`.
    InvalidRequest,
    /// `UNSUPPORTED_VERSION`: an OffsetCommit older than v9 from a member of a consumer
    /// group.
    UnsupportedVersion,
    /// The server is shutting down (`COORDINATOR_NOT_AVAILABLE`: clients look again).
    ShuttingDown,
}

/// A refused consumer group call: the refusal and its reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerError {
    /// The refusal.
    pub refusal: ConsumerRefusal,
    /// Why, for the answer's error message.
    pub message: String,
}

impl ConsumerError {
    pub(crate) fn new(refusal: ConsumerRefusal, message: impl Into<String>) -> Self {
        ConsumerError {
            refusal,
            message: message.into(),
        }
    }
}

/// One member in a [`ConsumerGroupDescription`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerMemberDescription {
    /// Member id.
    pub member_id: String,
    /// Static member's instance id.
    pub instance_id: Option<String>,
    /// Rack id.
    pub rack_id: Option<String>,
    /// Member epoch.
    pub member_epoch: i32,
    /// Client id.
    pub client_id: String,
    /// Client address.
    pub client_host: String,
    /// Subscribed topic names as given.
    pub subscribed_topic_names: Vec<String>,
    /// Subscribed regular expression.
    pub subscribed_topic_regex: Option<String>,
    /// Partitions the member owns now, by topic.
    pub assignment: Vec<(String, Vec<u32>)>,
    /// Partitions the member is to own once reconciled, by topic.
    pub target_assignment: Vec<(String, Vec<u32>)>,
}

/// A consumer group, as ConsumerGroupDescribe tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupDescription {
    /// `Empty`, `Assigning`, `Reconciling` or `Stable`.
    pub state: &'static str,
    /// The group epoch.
    pub group_epoch: i32,
    /// The target assignment's epoch.
    pub assignment_epoch: i32,
    /// The assignor in use.
    pub assignor: &'static str,
    /// Members, by id.
    pub members: Vec<ConsumerMemberDescription>,
}

/// A topic set resolved for a subscription: names given and regex matches.
pub(crate) type Topics = BTreeSet<String>;
