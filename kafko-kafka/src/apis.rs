//! The one table of the Kafka APIs this broker serves: per API its key, the versions
//! served, the body layout the guard walks, who may call it, the request type the codec
//! decodes and the handler. ApiVersions' answer, the dispatch, the decoder behind the
//! fuzz entry, the tests' lists and the APIs row of `docs/kafka.md` all come from it, so
//! serving another API or version is one line here. `from N` serves versions older than
//! the codec knows from N on, read and answered by `legacy`.

use bytes::Bytes;
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, AlterConfigsRequest, ApiKey,
    ApiVersionsRequest, ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest,
    CreatePartitionsRequest, CreateTopicsRequest, DeleteGroupsRequest, DeleteRecordsRequest,
    DeleteTopicsRequest, DescribeAclsRequest, DescribeClusterRequest, DescribeConfigsRequest,
    DescribeGroupsRequest, DescribeLogDirsRequest, DescribeProducersRequest,
    DescribeTransactionsRequest, EndTxnRequest, FetchRequest, FindCoordinatorRequest,
    HeartbeatRequest, IncrementalAlterConfigsRequest, InitProducerIdRequest, JoinGroupRequest,
    LeaveGroupRequest, ListGroupsRequest, ListOffsetsRequest, ListTransactionsRequest,
    MetadataRequest, OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest, ProduceRequest,
    SaslAuthenticateRequest, SaslHandshakeRequest, SyncGroupRequest, TxnOffsetCommitRequest,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion};

use crate::dispatch::{Header, Outcome, Session, api_versions, encode};
use crate::layouts::{self, Field};
use crate::{
    ListenerState, admin, cluster, configs, consumer_groups, errors, fetch, fetch_frame, groups,
    idempotence, legacy, log_admin, metadata, offsets, produce, sasl, transactions,
    transactions_describe,
};

/// Who may call an API on a connection of a server that requires SASL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gate {
    /// Anyone, before authentication too (ApiVersions).
    Open,
    /// Served, and advertised, only when the server requires authentication; callable
    /// before it.
    Sasl,
    /// Only an authenticated connection, when the server requires authentication.
    Authenticated,
}

/// One served API.
#[derive(Debug)]
pub(crate) struct Api {
    /// Its key.
    pub(crate) key: ApiKey,
    /// The oldest version served.
    pub(crate) oldest: i16,
    /// The oldest version the message codec decodes (older ones: `legacy`).
    pub(crate) min: i16,
    /// The newest version served.
    pub(crate) max: i16,
    /// The request body's layout, for the guard.
    pub(crate) layout: &'static [Field],
    /// Who may call it.
    pub(crate) gate: Gate,
}

impl Api {
    /// The versions served.
    pub(crate) fn versions(&self) -> std::ops::RangeInclusive<i16> {
        self.oldest..=self.max
    }

    /// The versions served that the message codec decodes.
    pub(crate) fn decoded(&self) -> std::ops::RangeInclusive<i16> {
        self.min..=self.max
    }

    /// Whether a connection with this session sees it advertised and may send it.
    pub(crate) fn advertised(&self, session: &Session) -> bool {
        self.gate != Gate::Sasl || session.auth_required
    }
}

/// One request being served: the broker, the connection's session and the header.
pub(crate) struct Call<'a> {
    pub(crate) broker: &'a ListenerState,
    pub(crate) session: &'a mut Session,
    pub(crate) header: &'a Header,
}

impl Call<'_> {
    /// The request's version.
    fn version(&self) -> i16 {
        self.header.version
    }

    /// `response` encoded as the answer.
    fn answer<T: Encodable + HeaderVersion>(&self, response: &T) -> Result<Outcome, String> {
        Ok(Outcome::Answer(encode(
            self.header.correlation_id,
            self.header.version,
            response,
        )?))
    }
}

fn decode_as<T: Decodable>(body: &mut Bytes, version: i16) -> Result<T, String> {
    T::decode(body, version).map_err(|e| format!("undecodable request body: {e}"))
}

/// Generates, from one list, the table (`APIS`), the decoded request of any served API
/// (`Request`), its decoder (`decode`) and the dispatch to the handlers (`serve`).
macro_rules! apis {
    (@oldest $min:literal) => { $min };
    (@oldest $min:literal, $old:literal) => { $old };
    ($(
        $key:ident $min:literal ..= $max:literal $(from $old:literal)?, $layout:ident,
            $gate:ident, $request:ident => |$cx:ident, $r:ident| $serve:expr;
    )*) => {
        /// Every API this broker can serve, in the order ApiVersions lists them.
        pub(crate) const APIS: &[Api] = &[$(
            Api {
                key: ApiKey::$key,
                oldest: apis!(@oldest $min $(, $old)?),
                min: $min,
                max: $max,
                layout: layouts::$layout,
                gate: Gate::$gate,
            },
        )*];

        /// A decoded request body of a served API.
        pub(crate) enum Request {
            $($key($request),)*
        }

        /// Decodes a body of `key` at `version` with the message codec.
        ///
        /// # Errors
        /// The body does not decode, or `key` is not served.
        pub(crate) fn decode(key: ApiKey, version: i16, body: &mut Bytes) -> Result<Request, String> {
            if find(key).is_some_and(|api| version < api.min) {
                return legacy::decode(key, version, body);
            }
            Ok(match key {
                $(ApiKey::$key => Request::$key(decode_as(body, version)?),)*
                other => return Err(format!("{other:?} is not served")),
            })
        }

        /// Serves a decoded request with its API's handler.
        pub(crate) async fn serve(call: Call<'_>, request: Request) -> Result<Outcome, String> {
            match request {
                $(Request::$key($r) => {
                    let $cx = call;
                    $serve
                })*
            }
        }

        /// A default-valued body of `key` at `version`, as the codec encodes it.
        #[cfg(test)]
        pub(crate) fn default_body(key: ApiKey, version: i16) -> Option<bytes::BytesMut> {
            let mut out = bytes::BytesMut::new();
            match key {
                $(ApiKey::$key => $request::default().encode(&mut out, version).ok()?,)*
                _ => return None,
            }
            Some(out)
        }
    };
}

apis! {
    Produce 3..=12, PRODUCE, Authenticated, ProduceRequest => |cx, r| {
        match produce::handle(cx.broker, r, cx.version()).await {
            produce::Produced::Answer(response) => cx.answer(&response),
            produce::Produced::Silent => Ok(Outcome::Silent),
            produce::Produced::SilentFailure => {
                Err("an acks=0 produce was refused".into())
            }
        }
    };
    Fetch 4..=17, FETCH, Authenticated, FetchRequest => |cx, r| {
        let (correlation, version) = (cx.header.correlation_id, cx.version());
        let (frame, room) = fetch::answer(cx.broker, r, version, |response| {
            fetch_frame::encode(correlation, version, response)
        })
        .await?;
        Ok(Outcome::Held(frame, room))
    };
    ListOffsets 1..=10 from 0, LIST_OFFSETS, Authenticated, ListOffsetsRequest => |cx, r| {
        let response = offsets::handle(cx.broker, r, cx.version().max(1));
        if cx.version() == 0 {
            return Ok(Outcome::Answer(legacy::list_offsets_v0_answer(
                cx.header.correlation_id,
                &response,
            )?));
        }
        cx.answer(&response)
    };
    Metadata 0..=13, METADATA, Authenticated, MetadataRequest => |cx, r| {
        cx.answer(&metadata::handle(cx.broker, r, cx.version()).await)
    };
    OffsetCommit 2..=9, OFFSET_COMMIT, Authenticated, OffsetCommitRequest => |cx, r| {
        cx.answer(&groups::offset_commit(cx.broker, r, cx.version()).await)
    };
    OffsetFetch 1..=9, OFFSET_FETCH, Authenticated, OffsetFetchRequest => |cx, r| {
        cx.answer(&groups::offset_fetch(cx.broker, r, cx.version()))
    };
    FindCoordinator 0..=6, FIND_COORDINATOR, Authenticated, FindCoordinatorRequest => |cx, r| {
        cx.answer(&metadata::find_coordinator(cx.broker, r, cx.version())?)
    };
    JoinGroup 0..=9, JOIN_GROUP, Authenticated, JoinGroupRequest => |cx, r| {
        let client = groups::Client {
            id: &cx.header.client_id,
            host: &cx.session.peer,
        };
        cx.answer(&groups::join_group(cx.broker, &client, r, cx.version()).await)
    };
    Heartbeat 0..=4, HEARTBEAT, Authenticated, HeartbeatRequest => |cx, r| {
        cx.answer(&groups::heartbeat(cx.broker, r, cx.version()))
    };
    LeaveGroup 0..=5, LEAVE_GROUP, Authenticated, LeaveGroupRequest => |cx, r| {
        cx.answer(&groups::leave_group(cx.broker, r, cx.version()).await)
    };
    SyncGroup 0..=5, SYNC_GROUP, Authenticated, SyncGroupRequest => |cx, r| {
        cx.answer(&groups::sync_group(cx.broker, r, cx.version()).await)
    };
    DescribeGroups 0..=6, DESCRIBE_GROUPS, Authenticated, DescribeGroupsRequest => |cx, r| {
        cx.answer(&groups::describe_groups(cx.broker, r, cx.version()))
    };
    ListGroups 0..=5, LIST_GROUPS, Authenticated, ListGroupsRequest => |cx, r| {
        cx.answer(&groups::list_groups(cx.broker, r, cx.version()))
    };
    ApiVersions 0..=4, API_VERSIONS, Open, ApiVersionsRequest => |cx, _r| {
        cx.answer(&api_versions(cx.session, errors::NONE))
    };
    CreateTopics 2..=7 from 0, CREATE_TOPICS, Authenticated, CreateTopicsRequest => |cx, r| {
        let response = admin::create_topics(cx.broker, r, cx.version().max(2)).await;
        if cx.version() < 2 {
            return Ok(Outcome::Answer(legacy::create_topics_answer(
                cx.header.correlation_id,
                cx.version(),
                &response,
            )?));
        }
        cx.answer(&response)
    };
    DeleteTopics 1..=6, DELETE_TOPICS, Authenticated, DeleteTopicsRequest => |cx, r| {
        cx.answer(&admin::delete_topics(cx.broker, r, cx.version()).await)
    };
    DeleteRecords 0..=2, DELETE_RECORDS, Authenticated, DeleteRecordsRequest => |cx, r| {
        cx.answer(&log_admin::delete_records(cx.broker, r).await)
    };
    InitProducerId 0..=5, INIT_PRODUCER_ID, Authenticated, InitProducerIdRequest => |cx, r| {
        cx.answer(&idempotence::init_producer_id(cx.broker, r, cx.version()).await)
    };
    AddPartitionsToTxn 0..=5, ADD_PARTITIONS_TO_TXN, Authenticated,
        AddPartitionsToTxnRequest => |cx, r| {
        cx.answer(&transactions::add_partitions_to_txn(cx.broker, r, cx.version()).await?)
    };
    AddOffsetsToTxn 0..=4, ADD_OFFSETS_TO_TXN, Authenticated,
        AddOffsetsToTxnRequest => |cx, r| {
        cx.answer(&transactions::add_offsets_to_txn(cx.broker, r, cx.version()).await)
    };
    EndTxn 0..=5, END_TXN, Authenticated, EndTxnRequest => |cx, r| {
        cx.answer(&transactions::end_txn(cx.broker, r, cx.version()).await)
    };
    TxnOffsetCommit 0..=5, TXN_OFFSET_COMMIT, Authenticated,
        TxnOffsetCommitRequest => |cx, r| {
        cx.answer(&transactions::txn_offset_commit(cx.broker, r, cx.version()).await?)
    };
    DescribeConfigs 1..=4, DESCRIBE_CONFIGS, Authenticated, DescribeConfigsRequest => |cx, r| {
        cx.answer(&configs::describe_configs(cx.broker, r))
    };
    AlterConfigs 0..=2, ALTER_CONFIGS, Authenticated, AlterConfigsRequest => |cx, r| {
        cx.answer(&configs::alter_configs(cx.broker, r).await)
    };
    IncrementalAlterConfigs 0..=1, INCREMENTAL_ALTER_CONFIGS, Authenticated,
        IncrementalAlterConfigsRequest => |cx, r| {
        cx.answer(&configs::incremental_alter_configs(cx.broker, r).await)
    };
    CreatePartitions 0..=3, CREATE_PARTITIONS, Authenticated,
        CreatePartitionsRequest => |cx, r| {
        cx.answer(&admin::create_partitions(cx.broker, r).await)
    };
    DeleteGroups 0..=2, DELETE_GROUPS, Authenticated, DeleteGroupsRequest => |cx, r| {
        cx.answer(&cluster::delete_groups(cx.broker, r).await)
    };
    OffsetDelete 0..=0, OFFSET_DELETE, Authenticated, OffsetDeleteRequest => |cx, r| {
        cx.answer(&cluster::offset_delete(cx.broker, r).await)
    };
    DescribeLogDirs 1..=4, DESCRIBE_LOG_DIRS, Authenticated, DescribeLogDirsRequest => |cx, r| {
        cx.answer(&log_admin::describe_log_dirs(cx.broker, r, cx.version()))
    };
    DescribeProducers 0..=0, DESCRIBE_PRODUCERS, Authenticated,
        DescribeProducersRequest => |cx, r| {
        cx.answer(&idempotence::describe_producers(cx.broker, r))
    };
    DescribeTransactions 0..=0, DESCRIBE_TRANSACTIONS, Authenticated,
        DescribeTransactionsRequest => |cx, r| {
        cx.answer(&transactions_describe::describe_transactions(cx.broker, r)?)
    };
    ListTransactions 0..=1, LIST_TRANSACTIONS, Authenticated,
        ListTransactionsRequest => |cx, r| {
        cx.answer(&transactions_describe::list_transactions(cx.broker, &r, cx.version()))
    };
    DescribeCluster 0..=2, DESCRIBE_CLUSTER, Authenticated, DescribeClusterRequest => |cx, r| {
        cx.answer(&cluster::describe_cluster(cx.broker, &r))
    };
    DescribeAcls 1..=3, DESCRIBE_ACLS, Authenticated, DescribeAclsRequest => |cx, _r| {
        cx.answer(&cluster::describe_acls(cx.broker))
    };
    ConsumerGroupHeartbeat 0..=1, CONSUMER_GROUP_HEARTBEAT, Authenticated,
        ConsumerGroupHeartbeatRequest => |cx, r| {
        let client = groups::Client {
            id: &cx.header.client_id,
            host: &cx.session.peer,
        };
        cx.answer(&consumer_groups::heartbeat(cx.broker, &client, r, cx.version()).await)
    };
    ConsumerGroupDescribe 0..=1, CONSUMER_GROUP_DESCRIBE, Authenticated,
        ConsumerGroupDescribeRequest => |cx, r| {
        cx.answer(&consumer_groups::describe(cx.broker, r))
    };
    SaslHandshake 0..=1, SASL_HANDSHAKE, Sasl, SaslHandshakeRequest => |cx, r| {
        let response = sasl::handshake(cx.session, &r, cx.version());
        cx.answer(&response)
    };
    SaslAuthenticate 0..=2, SASL_AUTHENTICATE, Sasl, SaslAuthenticateRequest => |cx, r| {
        // Once authenticated, a connection has nothing more to authenticate.
        if cx.session.authenticated {
            return Err("SaslAuthenticate is not served".into());
        }
        let (response, ok) = sasl::authenticate(cx.broker, cx.session, &r);
        let frame = encode(cx.header.correlation_id, cx.version(), &response)?;
        Ok(if ok {
            Outcome::Answer(frame)
        } else {
            Outcome::AnswerAndClose(frame)
        })
    };
}

/// The served API of `key`, if any.
pub(crate) fn find(key: ApiKey) -> Option<&'static Api> {
    APIS.iter().find(|api| api.key == key)
}

/// One API the broker can serve, for the black-box tests that drive every version.
#[doc(hidden)]
#[derive(Debug, Clone)]
pub struct ServedApi {
    /// The API key.
    pub key: i16,
    /// The versions served.
    pub versions: std::ops::RangeInclusive<i16>,
    /// The versions served that the `kafka-protocol` crate encodes (older ones are read
    /// and answered in their own layouts).
    pub codec_versions: std::ops::RangeInclusive<i16>,
    /// Served only when the server requires authentication (`--auth-token`).
    pub with_auth_token_only: bool,
}

/// Every API the broker can serve, from the table, in the order ApiVersions lists them.
#[doc(hidden)]
#[must_use]
pub fn served_apis() -> Vec<ServedApi> {
    APIS.iter()
        .map(|api| ServedApi {
            key: api.key as i16,
            versions: api.versions(),
            codec_versions: api.decoded(),
            with_auth_token_only: api.gate == Gate::Sasl,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The APIs row of `docs/kafka.md` as the table says it.
    fn docs_row() -> String {
        let list = |sasl: bool| {
            APIS.iter()
                .filter(|api| (api.gate == Gate::Sasl) == sasl)
                .map(|api| {
                    if api.oldest == api.max {
                        format!("{:?} {}", api.key, api.oldest)
                    } else {
                        format!("{:?} {}–{}", api.key, api.oldest, api.max)
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "| APIs | {}; with `--auth-token` also {} |",
            list(false),
            list(true)
        )
    }

    #[test]
    fn the_docs_list_the_served_apis_and_versions() {
        let docs = include_str!("../../docs/kafka.md");
        let row = docs
            .lines()
            .find(|line| line.starts_with("| APIs |"))
            .expect("docs/kafka.md has an APIs row");
        assert_eq!(row, docs_row(), "docs/kafka.md's APIs row and the table");
    }

    #[test]
    fn every_api_is_listed_once_with_a_version_range() {
        for (i, api) in APIS.iter().enumerate() {
            assert!(api.oldest <= api.min && api.min <= api.max, "{:?}", api.key);
            assert!(
                APIS[..i].iter().all(|other| other.key != api.key),
                "{:?} twice",
                api.key
            );
            assert_eq!(find(api.key).map(|a| a.key), Some(api.key));
        }
    }

    /// Apache Kafka 4.0's broker ranges of every API this table serves, from 4.0's
    /// message definitions (`clients/src/main/resources/common/message/*.json`,
    /// `validVersions`), as its ApiVersions advertises them.
    const KAFKA_4_0: &[(ApiKey, i16, i16)] = &[
        (ApiKey::Produce, 3, 12),
        (ApiKey::Fetch, 4, 17),
        (ApiKey::ListOffsets, 1, 10),
        (ApiKey::Metadata, 0, 13),
        (ApiKey::OffsetCommit, 2, 9),
        (ApiKey::OffsetFetch, 1, 9),
        (ApiKey::FindCoordinator, 0, 6),
        (ApiKey::JoinGroup, 2, 9),
        (ApiKey::Heartbeat, 0, 4),
        (ApiKey::LeaveGroup, 0, 5),
        (ApiKey::SyncGroup, 0, 5),
        (ApiKey::DescribeGroups, 0, 6),
        (ApiKey::ListGroups, 0, 5),
        (ApiKey::SaslHandshake, 0, 1),
        (ApiKey::ApiVersions, 0, 4),
        (ApiKey::CreateTopics, 2, 7),
        (ApiKey::DeleteTopics, 1, 6),
        (ApiKey::DeleteRecords, 0, 2),
        (ApiKey::InitProducerId, 0, 5),
        (ApiKey::AddPartitionsToTxn, 0, 5),
        (ApiKey::AddOffsetsToTxn, 0, 4),
        (ApiKey::EndTxn, 0, 5),
        (ApiKey::TxnOffsetCommit, 0, 5),
        (ApiKey::DescribeAcls, 1, 3),
        (ApiKey::DescribeConfigs, 1, 4),
        (ApiKey::AlterConfigs, 0, 2),
        (ApiKey::DescribeLogDirs, 1, 4),
        (ApiKey::SaslAuthenticate, 0, 2),
        (ApiKey::CreatePartitions, 0, 3),
        (ApiKey::DeleteGroups, 0, 2),
        (ApiKey::IncrementalAlterConfigs, 0, 1),
        (ApiKey::OffsetDelete, 0, 0),
        (ApiKey::DescribeCluster, 0, 2),
        (ApiKey::DescribeProducers, 0, 0),
        (ApiKey::DescribeTransactions, 0, 0),
        (ApiKey::ListTransactions, 0, 1),
        (ApiKey::ConsumerGroupHeartbeat, 0, 1),
        (ApiKey::ConsumerGroupDescribe, 0, 1),
    ];

    #[test]
    fn every_version_kafka_4_0_serves_is_served() {
        for &(key, min, max) in KAFKA_4_0 {
            let api = find(key).unwrap_or_else(|| panic!("{key:?} is not served"));
            assert!(api.oldest <= min, "{key:?}: Kafka 4.0 serves v{min}");
            assert!(api.max >= max, "{key:?}: Kafka 4.0 serves v{max}");
        }
        for api in APIS {
            assert!(
                KAFKA_4_0.iter().any(|&(key, _, _)| key == api.key),
                "{:?}: Kafka 4.0's range is listed",
                api.key
            );
        }
    }

    #[test]
    fn every_api_decodes_a_default_body_at_every_version() {
        for api in APIS {
            for v in api.decoded() {
                let body = default_body(api.key, v).expect("a default body encodes");
                let mut bytes = body.freeze();
                let request = decode(api.key, v, &mut bytes);
                assert!(request.is_ok(), "{:?} v{v}", api.key);
                assert!(bytes.is_empty(), "{:?} v{v} decoded whole", api.key);
            }
        }
        let mut nothing = Bytes::new();
        assert!(decode(ApiKey::ElectLeaders, 0, &mut nothing).is_err());
    }
}
