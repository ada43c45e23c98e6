//! Cluster and group administration over the Kafka listener, black-box: DeleteGroups
//! refuses a group with live members as Kafka does and deletes an empty one (as `/v1`
//! then shows), and DescribeAcls tells a server without authentication from one with.

mod common;

use bytes::Bytes;
use common::kafka::{Kafka, join_group_request, s};
use common::{Server, client, get};
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::{
    DeleteGroupsRequest, DescribeAclsRequest, GroupId, JoinGroupRequest, LeaveGroupRequest,
    SaslAuthenticateRequest, SaslHandshakeRequest,
};

const NON_EMPTY_GROUP: i16 = 68;
const GROUP_ID_NOT_FOUND: i16 = 69;
const MEMBER_ID_REQUIRED: i16 = 79;
const SECURITY_DISABLED: i16 = 54;

fn join(member: &str) -> JoinGroupRequest {
    let metadata = Bytes::from_static(&[0, 0, 0, 0, 0, 0, 0, 0]);
    join_group_request("live", member, ("consumer", "range", metadata))
}

async fn delete(k: &mut Kafka, group: &str) -> i16 {
    let r = k
        .call(
            &DeleteGroupsRequest::default().with_groups_names(vec![GroupId(s(group))]),
            2,
        )
        .await;
    r.results[0].error_code
}

#[tokio::test]
async fn delete_groups_refuses_a_live_group_and_deletes_an_empty_one() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(&tmp.path().join("d"), &["--kafka-bind", "127.0.0.1:0"]).await;
    let c = client();
    let mut k = Kafka::connect(&srv).await;
    let first = k.call(&join(""), 7).await;
    assert_eq!(first.error_code, MEMBER_ID_REQUIRED);
    let joined = k.call(&join(first.member_id.as_str()), 7).await;
    assert_eq!(joined.error_code, 0);
    assert_eq!(delete(&mut k, "live").await, NON_EMPTY_GROUP);
    assert_eq!(get(&c, &srv, "/v1/groups/live").await.status(), 200);
    let left = k
        .call(
            &LeaveGroupRequest::default()
                .with_group_id(GroupId(s("live")))
                .with_members(vec![
                    MemberIdentity::default().with_member_id(first.member_id.clone()),
                ]),
            5,
        )
        .await;
    assert_eq!(left.error_code, 0);
    assert_eq!(delete(&mut k, "live").await, 0);
    assert_eq!(get(&c, &srv, "/v1/groups/live").await.status(), 404);
    assert_eq!(delete(&mut k, "live").await, GROUP_ID_NOT_FOUND);
}

#[tokio::test]
async fn describe_acls_is_security_disabled_without_a_token_and_empty_with_one() {
    let acls = DescribeAclsRequest::default()
        .with_resource_type_filter(1)
        .with_operation(1)
        .with_permission_type(1);
    let tmp = tempfile::tempdir().unwrap();
    let open = Server::start(&tmp.path().join("a"), &["--kafka-bind", "127.0.0.1:0"]).await;
    let mut k = Kafka::connect(&open).await;
    assert_eq!(k.call(&acls, 3).await.error_code, SECURITY_DISABLED);

    let guarded = Server::start_env(
        &tmp.path().join("b"),
        &["--kafka-bind", "127.0.0.1:0"],
        &[("KAFKO_AUTH_TOKEN", "s3cret")],
    )
    .await;
    let mut k = Kafka::connect(&guarded).await;
    let handshake = SaslHandshakeRequest::default().with_mechanism(s("PLAIN"));
    assert_eq!(k.call(&handshake, 1).await.error_code, 0);
    let plain =
        SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from_static(b"\0user\0s3cret"));
    assert_eq!(k.call(&plain, 2).await.error_code, 0);
    let r = k.call(&acls, 3).await;
    assert_eq!((r.error_code, r.resources.len()), (0, 0));
}
