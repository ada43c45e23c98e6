//! Wire types: query parameters, request and response bodies. Each is what travels (it
//! carries both the serde shape and the OpenAPI schema); the core's types convert to and
//! from them with `From`. Topics' and groups' descriptions and options live in
//! [`topic`] and [`group`].

mod group;
mod problem;
mod topic;

pub(crate) use group::{GroupConfig, GroupDescription, GroupList, Membership};
pub(crate) use problem::Problem;
pub(crate) use topic::{TopicConfigRequest, TopicDescription, TopicList};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::{IntoParams, ToSchema};

use crate::body_format::{Format, Wire};

/// Encodings of keys, values and header values in JSON bodies.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct FormatQuery {
    /// Encoding of values (default `string`).
    pub(crate) format: Option<Format>,
    /// Encoding of keys and header values (default: `base64` when `format=base64`,
    /// else `string`).
    pub(crate) key_format: Option<Format>,
}

impl FormatQuery {
    /// `(value format, key/header format)`.
    pub(crate) fn resolve(&self) -> (Format, Format) {
        let value = self.format.unwrap_or_default();
        let key = self.key_format.unwrap_or(if value == Format::Base64 {
            Format::Base64
        } else {
            Format::String
        });
        (value, key)
    }
}

/// Query of `POST /v1/topics/{topic}/records`, with the formats of [`FormatQuery`]: the
/// whole query in one parse.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ProduceQuery {
    /// Raw body only: the record key as UTF-8 text.
    pub(crate) key: Option<String>,
    /// Raw body only: the record key as base64 (for binary keys).
    pub(crate) key_base64: Option<String>,
    /// Raw body only: explicit partition.
    pub(crate) partition: Option<u32>,
    /// Raw body only: producer timestamp, ms since the epoch.
    pub(crate) timestamp: Option<i64>,
    /// Wait for fsync before answering, whatever the topic's policy.
    pub(crate) sync: Option<bool>,
    /// `partitions`: the answer holds per partition the base offset and record count
    /// (its size does not grow with the records); `records`: `offsets` lists every
    /// record's position besides. Default: `records` for a request of one record, else
    /// `partitions`.
    #[param(inline)]
    pub(crate) answer: Option<ProduceAnswer>,
    /// [`FormatQuery::format`] (documented there).
    #[param(ignore)]
    pub(crate) format: Option<Format>,
    /// [`FormatQuery::key_format`] (documented there).
    #[param(ignore)]
    pub(crate) key_format: Option<Format>,
}

impl ProduceQuery {
    /// The formats the query gives.
    pub(crate) fn formats(&self) -> FormatQuery {
        FormatQuery {
            format: self.format,
            key_format: self.key_format,
        }
    }
}

/// The form of a produce answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ProduceAnswer {
    /// Per partition: base offset and record count.
    Partitions,
    /// Per partition, and every record's position.
    Records,
}

/// One record header.
// Borrows from the request body (as do `RecordIn` and `ProduceRequest`): values are not
// copied out of the body while it is parsed. (A `//` comment: doc comments become the
// public schema's description.)
#[derive(Debug, Deserialize, ToSchema)]
pub(crate) struct HeaderIn<'a> {
    /// Header name (UTF-8; may repeat).
    pub(crate) name: String,
    /// Header value, encoded per `key_format`.
    #[schema(value_type = Value)]
    #[serde(borrow)]
    pub(crate) value: &'a RawValue,
}

/// One record to produce.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RecordIn<'a> {
    /// Key, encoded per `key_format`; absent = no key (keyless records spread over partitions).
    #[schema(value_type = Option<Value>)]
    #[serde(borrow)]
    pub(crate) key: Option<&'a RawValue>,
    /// Value, encoded per `format`; absent or null = tombstone.
    #[schema(value_type = Option<Value>)]
    #[serde(borrow)]
    pub(crate) value: Option<&'a RawValue>,
    /// Ordered headers (`[{"name","value"}]`).
    #[serde(default, borrow)]
    pub(crate) headers: Vec<HeaderIn<'a>>,
    /// Explicit partition (wins over key routing).
    pub(crate) partition: Option<u32>,
    /// Producer timestamp in ms since the epoch; absent = append time.
    pub(crate) timestamp: Option<i64>,
}

/// `application/json` produce body: a batch, atomic per partition.
// The handler parses this shape record by record (`produce.rs`, `parse_batch`); the
// derived parse is the reference its tests compare with.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProduceRequest<'a> {
    /// The records, in order.
    #[serde(borrow)]
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) records: Vec<RecordIn<'a>>,
}

/// Where one record landed.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RecordPosition {
    pub(crate) partition: u32,
    pub(crate) offset: u64,
    /// Stored timestamp, ms since the epoch.
    pub(crate) timestamp: i64,
}

/// Where one partition's records of a request were appended: at consecutive offsets
/// `base_offset .. base_offset + record_count`, in request order.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct PartitionAppended {
    pub(crate) partition: u32,
    pub(crate) base_offset: u64,
    pub(crate) record_count: u64,
}

/// Produce response: per partition (ascending) where its records were appended; with
/// `answer=records` (the default for a one-record request), every record's position too.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ProduceResponse {
    pub(crate) partitions: Vec<PartitionAppended>,
    /// One entry per record, in request order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) offsets: Option<Vec<RecordPosition>>,
}

/// One partition of a request that was appended in part (207): either appended
/// (`base_offset` set) or not (`error` set; none of its records is stored).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct PartitionOutcome {
    pub(crate) partition: u32,
    pub(crate) record_count: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) base_offset: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<PartitionError>,
}

/// Why a partition appended none of its records.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct PartitionError {
    /// The status a request to this partition alone would have had.
    pub(crate) status: u16,
    /// Stable error code (as in problem+json).
    pub(crate) code: String,
    pub(crate) detail: String,
}

/// 207 answer to a produce that appended some partitions and not others. Never retry
/// the whole request: resend only the records listed in `failed_records`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct PartialProduceResponse {
    /// Every partition the request wrote to, ascending.
    pub(crate) partitions: Vec<PartitionOutcome>,
    /// Indices (0-based, request order) of the records that were not stored.
    pub(crate) failed_records: Vec<usize>,
    /// With `answer=records`: one entry per record, `null` for a record not stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) offsets: Option<Vec<Option<RecordPosition>>>,
}

/// Query of `GET /v1/topics/{topic}/records`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct FetchQuery {
    /// Partition to read (default 0).
    pub(crate) partition: Option<u32>,
    /// Start: a number, `earliest` (default) or `latest`.
    pub(crate) offset: Option<String>,
    /// Start at the first record at or after this time (ms); overrides `offset`.
    pub(crate) timestamp: Option<i64>,
    /// Most records to return (clamped to the server limit; default 500).
    pub(crate) max_records: Option<usize>,
    /// Most bytes of keys, values and headers (at least one record is returned).
    pub(crate) max_bytes: Option<usize>,
    /// Long-poll: wait up to this long for a first record (clamped to the server limit).
    pub(crate) wait_ms: Option<u64>,
    /// SSE only: keep the stream open and send records as they arrive.
    pub(crate) follow: Option<bool>,
    /// The topic incarnation the cursor belongs to (`topic_id` of a describe or an
    /// earlier fetch): if the topic was deleted and created again since, the read is
    /// refused with 404 `topic_deleted` instead of reading the new topic.
    pub(crate) topic_id: Option<String>,
    /// Which records of transactions are read (default `read_committed`: up to the last
    /// stable offset, without aborted transactions' records; `latest` is then the last
    /// stable offset).
    #[param(inline)]
    pub(crate) isolation: Option<IsolationParam>,
}

/// Which records a read sees of Kafka transactions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum IsolationParam {
    /// Records below the last stable offset, without those of aborted transactions.
    #[default]
    ReadCommitted,
    /// Every record below the high watermark, open and aborted transactions' too.
    ReadUncommitted,
}

impl IsolationParam {
    /// The core's isolation for an optional parameter (absent: read committed).
    pub(crate) fn resolve(p: Option<IsolationParam>) -> kafko_core::Isolation {
        match p.unwrap_or_default() {
            IsolationParam::ReadCommitted => kafko_core::Isolation::ReadCommitted,
            IsolationParam::ReadUncommitted => kafko_core::Isolation::ReadUncommitted,
        }
    }
}

/// Query of `GET /v1/topics/{topic}/partitions/{partition}/records/{offset}`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct RecordQuery {
    /// Which records of transactions are read (default `read_committed`: a record at or
    /// past the last stable offset, or of an aborted transaction, is not found).
    #[param(inline)]
    pub(crate) isolation: Option<IsolationParam>,
}

/// One record header as returned.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct HeaderOut {
    pub(crate) name: String,
    /// Value encoded per `key_format`.
    #[schema(value_type = Value)]
    pub(crate) value: Wire,
}

/// A record as returned.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RecordOut {
    pub(crate) partition: u32,
    pub(crate) offset: u64,
    /// Timestamp, ms since the epoch.
    pub(crate) timestamp: i64,
    /// Key per `key_format`; null when the record has none.
    #[schema(value_type = Option<Value>)]
    pub(crate) key: Option<Wire>,
    /// Value per `format`; null for a tombstone.
    #[schema(value_type = Option<Value>)]
    pub(crate) value: Option<Wire>,
    pub(crate) headers: Vec<HeaderOut>,
}

/// A fetch result with the cursor to continue from.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct FetchResponse {
    pub(crate) records: Vec<RecordOut>,
    /// The topic incarnation read: pass it as `topic_id` with `next_offset`.
    pub(crate) topic_id: String,
    /// Offset to pass as `offset` next time.
    pub(crate) next_offset: u64,
    pub(crate) high_watermark: u64,
    /// Below it no transaction is open: a `read_committed` read stops there.
    pub(crate) last_stable_offset: u64,
    pub(crate) log_start_offset: u64,
}

/// Query of the offsets lookup.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct OffsetsQuery {
    /// Find the first offset whose timestamp is at or after this (ms).
    pub(crate) timestamp: Option<i64>,
}

/// A partition's offsets.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct OffsetsResponse {
    pub(crate) partition: u32,
    pub(crate) log_start_offset: u64,
    pub(crate) high_watermark: u64,
    /// Below it no transaction is open: a `read_committed` read stops there.
    pub(crate) last_stable_offset: u64,
    /// With `timestamp`: the first offset at or after it, or null when no record is that new.
    pub(crate) offset: Option<u64>,
}

/// Accepted asynchronous operation.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct StatusResponse {
    pub(crate) status: String,
}

/// Arbitrary bytes (a raw request or response body).
#[derive(Debug, ToSchema)]
#[schema(value_type = String, format = Binary)]
#[expect(dead_code, reason = "a schema only: raw bodies travel as Bytes")]
pub(crate) struct Binary(Vec<u8>);

// ---- Consumer groups ----

/// Query of `POST /v1/groups/{group}/topics/{topic}/poll`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct GroupPollQuery {
    /// Most records to return (clamped to the server limit; default 500).
    pub(crate) max_records: Option<usize>,
    /// Most bytes of keys, values and headers (at least one record is returned).
    pub(crate) max_bytes: Option<usize>,
    /// Long-poll: wait up to this long for a first record (clamped to the server limit).
    pub(crate) wait_ms: Option<u64>,
    /// Auto-commit (default `true`): before reading, commit durably what this caller's
    /// earlier answers returned, once it showed it received them — a joined member by
    /// polling again, anyone by passing their `cursor`. With `false`, only
    /// `PUT …/offsets` commits. Either way a record counts as consumed only once
    /// committed (at-least-once).
    pub(crate) auto_commit: Option<bool>,
    /// The `cursor` of the last poll answer this client received. It acknowledges that
    /// answer and those before it (auto-commit may then commit them); an answer that was
    /// asked for with the same cursor, and so never arrived, is read again.
    #[param(pattern = r"^[0-9]{1,19}$")]
    pub(crate) cursor: Option<String>,
    /// A joined member's id (with `generation`); absent = the group's implicit single
    /// member, which owns every partition while nobody has joined.
    pub(crate) member_id: Option<String>,
    /// The member's generation, as returned by the join.
    pub(crate) generation: Option<u64>,
}

/// A partition's offset: a commit, or a position (the next offset to read).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = PartitionOffset)]
pub(crate) struct PartitionOffsetDto {
    pub(crate) partition: u32,
    /// Next offset to read.
    pub(crate) offset: u64,
}

/// A group poll's records and the caller's positions after it.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct GroupPollResponse {
    /// Records of the caller's partitions, in offset order per partition (the record
    /// shape and `format` handling of `GET /v1/topics/{topic}/records`).
    pub(crate) records: Vec<RecordOut>,
    /// Generation the poll ran in (0 for the implicit member).
    pub(crate) generation: u64,
    /// The caller's positions after the poll, one per owned partition.
    pub(crate) positions: Vec<PartitionOffsetDto>,
    /// What this poll committed before reading (auto-commit): the positions after the
    /// caller's acknowledged answers. Empty when nothing was left to commit.
    pub(crate) committed: Vec<PartitionOffsetDto>,
    /// Pass this as `cursor` on the next poll to acknowledge this answer: its own cursor
    /// when it carries records, else the cursor the poll carried (`null` if none).
    pub(crate) cursor: Option<String>,
}

/// Body of `PUT /v1/groups/{group}/topics/{topic}/offsets`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CommitRequest {
    /// Offsets to commit (the next offset to read, per partition); absent or empty =
    /// the caller's current positions (`null` too, like every absent member).
    #[serde(default)]
    #[schema(nullable = true)]
    pub(crate) offsets: Vec<PartitionOffsetDto>,
    /// A joined member's id (with `generation`); absent = the implicit member.
    pub(crate) member_id: Option<String>,
    /// The member's generation.
    pub(crate) generation: Option<u64>,
}

/// Offsets committed by a commit or seek.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct CommitResponse {
    pub(crate) offsets: Vec<PartitionOffsetDto>,
}

/// Where a seek moves the group.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum SeekTarget {
    /// The log start offset.
    #[schema(title = "SeekEarliest")]
    Earliest,
    /// The high watermark (only records produced from now on).
    #[schema(title = "SeekLatest")]
    Latest,
    /// An exact offset (log start ..= high watermark): `{"offset": n}`.
    #[schema(title = "SeekOffset")]
    Offset(u64),
    /// The first record at or after this time (ms), else the high watermark:
    /// `{"timestamp": t}`.
    #[schema(title = "SeekTimestamp")]
    Timestamp(i64),
}

/// Body of `POST /v1/groups/{group}/topics/{topic}/seek`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SeekRequest {
    /// One partition; absent = every partition the caller owns.
    pub(crate) partition: Option<u32>,
    /// `"earliest"`, `"latest"`, `{"offset": n}` or `{"timestamp": t}`.
    pub(crate) to: SeekTarget,
    /// A joined member's id (with `generation`); absent = the implicit member.
    pub(crate) member_id: Option<String>,
    /// The member's generation.
    pub(crate) generation: Option<u64>,
}

/// Body of `POST /v1/groups/{group}/topics/{topic}/members`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct JoinRequest {
    /// Choose the id (`[a-zA-Z0-9._-]{1,249}`); joining again with a live id is a
    /// heartbeat that returns the current assignment. Absent = generated.
    pub(crate) member_id: Option<String>,
    /// Silence after which the member is removed and its partitions reassigned
    /// (1..=3600000; default 30000). Every poll and commit is a heartbeat.
    #[schema(minimum = 1, maximum = 3600000)]
    pub(crate) session_timeout_ms: Option<u64>,
}
