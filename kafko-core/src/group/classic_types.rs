//! The types of Kafka's classic group protocol as the coordinator takes and gives them:
//! a JoinGroup and its answer, the leader's assignments, and a group's description.

use std::time::Duration;

use bytes::Bytes;

/// One protocol a member offers in its JoinGroup: an assignor name and its metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupProtocol {
    /// Assignor name (for the "consumer" type: range, roundrobin, cooperative-sticky…).
    pub name: String,
    /// The member's subscription metadata for this assignor, opaque to the broker.
    pub metadata: Bytes,
}

/// A JoinGroup, as the Kafka front end decoded it.
#[derive(Debug, Clone)]
pub struct JoinGroupRequest {
    /// The member's id; empty on a first join.
    pub member_id: String,
    /// Static membership id, if the client sent one.
    pub group_instance_id: Option<String>,
    /// A member silent for longer is removed.
    pub session_timeout: Duration,
    /// How long a rebalance waits for members to rejoin.
    pub rebalance_timeout: Duration,
    /// "consumer" for consumers; every member must use the same.
    pub protocol_type: String,
    /// Assignors the member supports, in its order of preference.
    pub protocols: Vec<GroupProtocol>,
    /// The client's id and host, for DescribeGroups.
    pub client_id: String,
    /// The client's address.
    pub client_host: String,
    /// Whether an unknown member must first learn its id (JoinGroup v4+): the join is
    /// then answered at once with [`JoinGroupOutcome::MemberIdRequired`].
    pub require_known_member_id: bool,
}

/// One member as the leader sees it in a JoinGroup answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinedMember {
    /// Member id.
    pub member_id: String,
    /// Static membership id.
    pub group_instance_id: Option<String>,
    /// Its metadata for the chosen protocol.
    pub metadata: Bytes,
}

/// A completed JoinGroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinGroupAnswer {
    /// The new generation.
    pub generation: u64,
    /// The group's protocol type.
    pub protocol_type: String,
    /// The chosen assignor.
    pub protocol: String,
    /// The leader's member id.
    pub leader: String,
    /// This member's id.
    pub member_id: String,
    /// Every member with its metadata: for the leader only, empty for the others.
    pub members: Vec<JoinedMember>,
    /// The leader must not compute an assignment: a static leader rejoined a stable
    /// group, which keeps every member's assignment (JoinGroup v9's `skip_assignment`).
    pub skip_assignment: bool,
}

/// A classic member as its calls name it: the member id and, for a static member
/// (KIP-345), its `group.instance.id`. A call whose instance id now belongs to another
/// member id is fenced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassicMemberId<'a> {
    /// Member id.
    pub member_id: &'a str,
    /// Static membership id, if the call carried one.
    pub group_instance_id: Option<&'a str>,
}

impl<'a> From<&'a str> for ClassicMemberId<'a> {
    fn from(member_id: &'a str) -> Self {
        ClassicMemberId {
            member_id,
            group_instance_id: None,
        }
    }
}

impl<'a> From<&'a String> for ClassicMemberId<'a> {
    fn from(member_id: &'a String) -> Self {
        member_id.as_str().into()
    }
}

/// What became of one member a LeaveGroup named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaveOutcome {
    /// It left; the others rejoin.
    Left,
    /// No such member (or no such static member).
    UnknownMember,
    /// Its instance id belongs to a newer member id.
    FencedInstanceId,
}

/// What a JoinGroup got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JoinGroupOutcome {
    /// The member-id handshake: rejoin with this id (Kafka's MEMBER_ID_REQUIRED).
    MemberIdRequired(String),
    /// The member is in the new generation.
    Joined(JoinGroupAnswer),
}

/// The leader's assignment for one member, in a SyncGroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberAssignment {
    /// Member id.
    pub member_id: String,
    /// The assignment as the leader encoded it, handed to the member unchanged.
    pub assignment: Bytes,
    /// The topic partitions it names, when the front end could read them (for
    /// descriptions and lag only).
    pub partitions: Vec<(String, Vec<u32>)>,
}

/// A member of a classic group, for DescribeGroups and the console.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassicMemberDescription {
    /// Member id.
    pub member_id: String,
    /// Static membership id.
    pub group_instance_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client address.
    pub client_host: String,
    /// Its metadata for the chosen protocol (empty before one is chosen).
    pub metadata: Bytes,
    /// Its assignment, as the leader encoded it.
    pub assignment: Bytes,
    /// The topic partitions the assignment names, when readable.
    pub partitions: Vec<(String, Vec<u32>)>,
}

/// A classic group as DescribeGroups shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassicGroupDescription {
    /// Kafka's state name: Empty, PreparingRebalance, CompletingRebalance, Stable.
    pub state: &'static str,
    /// Protocol type ("" while empty).
    pub protocol_type: String,
    /// Chosen assignor ("" until chosen).
    pub protocol: String,
    /// Members.
    pub members: Vec<ClassicMemberDescription>,
}
