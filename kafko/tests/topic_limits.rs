//! Limits on topics, partitions and groups: a create (explicit, auto-created by a
//! produce, through the REST Proxy, or a group created by a poll, commit or join) past
//! `--max-topics`, `--max-partitions` or `--max-groups` is refused with 409
//! `limit_reached` naming the limit, creates nothing, and succeeds again once one is
//! deleted.
mod common;

use common::{Server, client, delete, get, post_json, problem, put_json};
use serde_json::json;

#[tokio::test]
async fn topic_and_partition_limits_refuse_with_409_limit_reached() {
    let tmp = tempfile::tempdir().unwrap();
    // Set through the environment, as a deployment would.
    let s = Server::start_env(
        &tmp.path().join("data"),
        &[],
        &[("KAFKO_MAX_TOPICS", "2"), ("KAFKO_MAX_PARTITIONS", "5")],
    )
    .await;
    let c = client();
    let create = |name: &'static str, partitions: u32| {
        let (c, s) = (c.clone(), &s);
        async move {
            put_json(
                &c,
                s,
                &format!("/v1/topics/{name}"),
                &json!({ "partitions": partitions }),
            )
            .await
        }
    };
    assert_eq!(create("a", 2).await.status().as_u16(), 201);
    assert_eq!(create("b", 2).await.status().as_u16(), 201);

    let body = problem(create("c", 1).await, 409, "limit_reached").await;
    assert_eq!(
        (body["resource"].as_str(), body["limit"].as_u64()),
        (Some("topics"), Some(2)),
        "{body}"
    );
    assert_eq!(get(&c, &s, "/v1/topics/c").await.status().as_u16(), 404);
    assert!(
        !s.dir.join("topics/c").exists(),
        "a refused create left a directory"
    );
    // A produce to an unknown topic would auto-create it: refused the same way.
    let r = post_json(
        &c,
        &s,
        "/v1/topics/auto/records",
        &json!({ "records": [{ "value": "x" }] }),
    )
    .await;
    problem(r, 409, "limit_reached").await;

    assert_eq!(delete(&c, &s, "/v1/topics/b").await.status().as_u16(), 204);
    // 2 + 4 partitions would pass the limit of 5.
    let body = problem(create("c", 4).await, 409, "limit_reached").await;
    assert_eq!(
        (body["resource"].as_str(), body["limit"].as_u64()),
        (Some("partitions"), Some(5)),
        "{body}"
    );
    assert_eq!(create("c", 3).await.status().as_u16(), 201);

    // The REST Proxy's v3 create answers in its own error shape.
    let r = post_json(
        &c,
        &s,
        &format!("/v3/clusters/{}/topics", kafko_service::DEFAULT_CLUSTER_ID),
        &json!({ "topic_name": "d", "partitions_count": 1 }),
    )
    .await;
    assert_eq!(r.status().as_u16(), 409);
    let body: serde_json::Value = r.json().await.unwrap();
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("limit of 2 topics"),
        "{body}"
    );
}

#[tokio::test]
async fn group_limit_refuses_new_groups_with_409_limit_reached() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start_env(&tmp.path().join("data"), &[], &[("KAFKO_MAX_GROUPS", "2")]).await;
    let c = client();
    common::create_topic(&c, &s, "t", json!({})).await;
    let poll = |group: &'static str| {
        let (c, s) = (c.clone(), &s);
        async move { common::post(&c, s, &format!("/v1/groups/{group}/topics/t/poll")).await }
    };
    assert_eq!(poll("g1").await.status().as_u16(), 200);
    assert_eq!(poll("g2").await.status().as_u16(), 200);
    // Existing groups keep working; a third name is refused, by a poll or a join.
    assert_eq!(poll("g1").await.status().as_u16(), 200);
    let body = problem(poll("g3").await, 409, "limit_reached").await;
    assert_eq!(
        (body["resource"].as_str(), body["limit"].as_u64()),
        (Some("groups"), Some(2)),
        "{body}"
    );
    let r = common::post(&c, &s, "/v1/groups/g4/topics/t/members").await;
    problem(r, 409, "limit_reached").await;
    assert_eq!(get(&c, &s, "/v1/groups/g3").await.status().as_u16(), 404);

    assert_eq!(delete(&c, &s, "/v1/groups/g2").await.status().as_u16(), 204);
    assert_eq!(poll("g3").await.status().as_u16(), 200);
}
