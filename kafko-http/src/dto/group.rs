//! Wire types of consumer groups' descriptions, options and memberships, with the
//! conversions from (and, for options, to) the core's plain types.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Where a group starts on a partition without a valid offset (Kafka's `auto.offset.reset`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum OffsetReset {
    /// The log start offset.
    Earliest,
    /// The high watermark.
    Latest,
    /// Fail the poll with 416 `no_valid_offset`.
    Error,
}

/// A group's options.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GroupConfig {
    /// Default `earliest`; always present in responses.
    offset_reset: Option<OffsetReset>,
}

/// A member's place in its group.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Membership {
    group: String,
    topic: String,
    member_id: String,
    /// Pass it back with every poll, commit and seek.
    generation: u64,
    /// Partitions this member owns, ascending.
    assignment: Vec<u32>,
}

/// One member of a group on a topic.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct GroupMember {
    member_id: String,
    assignment: Vec<u32>,
    session_timeout_ms: u64,
    /// Milliseconds since its last join, poll or commit.
    idle_ms: u64,
}

/// One partition of a group on a topic.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct GroupPartition {
    partition: u32,
    /// Owning member, if any.
    owner: Option<String>,
    /// Committed offset (next to read), if any.
    committed: Option<u64>,
    /// In-memory position, when it differs from the committed offset.
    position: Option<u64>,
    log_start_offset: u64,
    high_watermark: u64,
    /// `high_watermark − committed`, when an offset is committed.
    lag: Option<u64>,
}

/// A group on one topic.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct GroupTopic {
    topic: String,
    /// Current generation (0 until the first member joins).
    generation: u64,
    members: Vec<GroupMember>,
    /// Every partition of the topic (empty when the topic no longer exists).
    partitions: Vec<GroupPartition>,
    /// Sum of the partitions' lag.
    total_lag: u64,
}

/// Partitions of one topic a Kafka member was assigned.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct KafkaAssignment {
    topic: String,
    partitions: Vec<u32>,
}

/// A member of a group of Kafka clients.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct KafkaMember {
    member_id: String,
    /// Static membership id (`group.instance.id`), if the client set one.
    group_instance_id: Option<String>,
    client_id: String,
    client_host: String,
    /// What the group leader's assignment gave it, when kafko could read it.
    assignment: Vec<KafkaAssignment>,
}

/// The Kafka-protocol side of a group whose members are Kafka clients.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct KafkaGroup {
    /// Kafka's group state: `Empty`, `PreparingRebalance`, `CompletingRebalance` or
    /// `Stable`.
    state: String,
    /// `consumer` for consumers.
    protocol_type: String,
    /// The assignor the members agreed on (`range`, `roundrobin`, …).
    protocol: String,
    members: Vec<KafkaMember>,
}

/// Everything about a group.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct GroupDescription {
    group: String,
    config: GroupConfig,
    /// The group's generation: one over all its topics (0 until a member joins).
    generation: u64,
    /// One entry per topic the group has used, by name.
    topics: Vec<GroupTopic>,
    /// Present when the group's members are Kafka clients.
    kafka: Option<KafkaGroup>,
}

/// One group in `GET /v1/groups`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct GroupListing {
    group: String,
    /// Topics it has offsets or members on.
    topics: Vec<String>,
    /// Live members.
    members: usize,
    /// `consumer` (a Kafka protocol type) for a group of Kafka clients, empty otherwise.
    protocol_type: String,
}

/// `GET /v1/groups` response.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct GroupList {
    /// Groups, by name.
    groups: Vec<GroupListing>,
}

impl From<kafko_core::OffsetReset> for OffsetReset {
    fn from(r: kafko_core::OffsetReset) -> Self {
        match r {
            kafko_core::OffsetReset::Earliest => OffsetReset::Earliest,
            kafko_core::OffsetReset::Latest => OffsetReset::Latest,
            kafko_core::OffsetReset::Error => OffsetReset::Error,
        }
    }
}

impl From<OffsetReset> for kafko_core::OffsetReset {
    fn from(r: OffsetReset) -> Self {
        match r {
            OffsetReset::Earliest => kafko_core::OffsetReset::Earliest,
            OffsetReset::Latest => kafko_core::OffsetReset::Latest,
            OffsetReset::Error => kafko_core::OffsetReset::Error,
        }
    }
}

impl From<GroupConfig> for kafko_core::GroupConfig {
    fn from(c: GroupConfig) -> Self {
        kafko_core::GroupConfig {
            offset_reset: c.offset_reset.map(Into::into).unwrap_or_default(),
        }
    }
}

impl From<kafko_core::GroupConfig> for GroupConfig {
    fn from(c: kafko_core::GroupConfig) -> Self {
        GroupConfig {
            offset_reset: Some(c.offset_reset.into()),
        }
    }
}

impl From<kafko_core::Membership> for Membership {
    fn from(m: kafko_core::Membership) -> Self {
        Membership {
            group: m.group,
            topic: m.topic,
            member_id: m.member_id,
            generation: m.generation,
            assignment: m.assignment,
        }
    }
}

impl From<kafko_core::GroupMemberDescription> for GroupMember {
    fn from(m: kafko_core::GroupMemberDescription) -> Self {
        GroupMember {
            member_id: m.member_id,
            assignment: m.assignment,
            session_timeout_ms: m.session_timeout_ms,
            idle_ms: m.idle_ms,
        }
    }
}

impl From<kafko_core::GroupPartitionDescription> for GroupPartition {
    fn from(p: kafko_core::GroupPartitionDescription) -> Self {
        GroupPartition {
            partition: p.partition,
            owner: p.owner,
            committed: p.committed,
            position: p.position,
            log_start_offset: p.log_start_offset,
            high_watermark: p.high_watermark,
            lag: p.lag,
        }
    }
}

impl From<kafko_core::GroupTopicDescription> for GroupTopic {
    fn from(t: kafko_core::GroupTopicDescription) -> Self {
        GroupTopic {
            topic: t.topic,
            generation: t.generation,
            members: t.members.into_iter().map(Into::into).collect(),
            partitions: t.partitions.into_iter().map(Into::into).collect(),
            total_lag: t.total_lag,
        }
    }
}

impl From<kafko_core::GroupDescription> for GroupDescription {
    fn from(d: kafko_core::GroupDescription) -> Self {
        GroupDescription {
            group: d.group,
            config: d.config.into(),
            generation: d.generation,
            topics: d.topics.into_iter().map(Into::into).collect(),
            kafka: d.classic.map(Into::into),
        }
    }
}

impl From<kafko_core::ClassicGroupDescription> for KafkaGroup {
    fn from(g: kafko_core::ClassicGroupDescription) -> Self {
        KafkaGroup {
            state: g.state.to_owned(),
            protocol_type: g.protocol_type,
            protocol: g.protocol,
            members: g
                .members
                .into_iter()
                .map(|m| KafkaMember {
                    member_id: m.member_id,
                    group_instance_id: m.group_instance_id,
                    client_id: m.client_id,
                    client_host: m.client_host,
                    assignment: m
                        .partitions
                        .into_iter()
                        .map(|(topic, partitions)| KafkaAssignment { topic, partitions })
                        .collect(),
                })
                .collect(),
        }
    }
}

impl From<kafko_core::GroupListing> for GroupListing {
    fn from(l: kafko_core::GroupListing) -> Self {
        GroupListing {
            group: l.group,
            topics: l.topics,
            members: l.members,
            protocol_type: l.protocol_type,
        }
    }
}

impl From<Vec<kafko_core::GroupListing>> for GroupList {
    fn from(groups: Vec<kafko_core::GroupListing>) -> Self {
        GroupList {
            groups: groups.into_iter().map(Into::into).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_default_to_earliest_and_are_returned_in_full() {
        let c: GroupConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(
            kafko_core::GroupConfig::from(c).offset_reset,
            kafko_core::OffsetReset::Earliest
        );
        let back = GroupConfig::from(kafko_core::GroupConfig {
            offset_reset: kafko_core::OffsetReset::Error,
        });
        assert_eq!(
            serde_json::to_string(&back).unwrap(),
            r#"{"offset_reset":"error"}"#
        );
    }
}
