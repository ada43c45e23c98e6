//! Running out of file descriptors while creating a topic: the real server, its
//! descriptor limit lowered with `prlimit`, answers 503 `too_many_open_files` naming the
//! cause (not a 500 `internal`), leaves no half-made topic behind, and keeps serving.
mod common;

use common::{create_topic, fresh_server, get, get_json, problem, put_json};
use serde_json::json;

/// Sets the open-files limit (soft and hard) of a running process.
fn limit_descriptors(pid: u32, n: u32) {
    let status = std::process::Command::new("prlimit")
        .arg("--pid")
        .arg(pid.to_string())
        .arg(format!("--nofile={n}:{n}"))
        .status()
        .expect("prlimit (util-linux)");
    assert!(status.success(), "prlimit failed");
}

#[tokio::test]
async fn a_create_out_of_descriptors_is_503_and_leaves_nothing() {
    let (_tmp, mut s, c) = fresh_server(&[]).await;
    // Every partition keeps its active segment open: 200 partitions need 200 descriptors.
    limit_descriptors(s.pid(), 64);
    let r = put_json(&c, &s, "/v1/topics/wide", &json!({ "partitions": 200 })).await;
    let body = problem(r, 503, "too_many_open_files").await;
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("file descriptors"),
        "{body}"
    );
    assert_eq!(get(&c, &s, "/v1/topics/wide").await.status().as_u16(), 404);
    assert!(
        !s.dir.join("topics/wide").exists(),
        "a half-made topic was left"
    );
    let topics = get_json(&c, &s, "/v1/topics").await;
    assert!(!topics.to_string().contains("wide"), "{topics}");

    // The server keeps working within its limit: a small topic is created and used.
    create_topic(&c, &s, "narrow", json!({ "partitions": 2 })).await;
    assert!(get(&c, &s, "/healthz").await.status().is_success());
    assert!(s.sigterm().await.success());
}

/// The soft and hard open-files limits of a running process, from `/proc/PID/limits`.
fn nofile_limits(pid: u32) -> (String, String) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).expect("proc limits");
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .expect("an open-files line");
    let mut fields = line["Max open files".len()..].split_whitespace();
    let soft = fields.next().expect("soft").to_owned();
    let hard = fields.next().expect("hard").to_owned();
    (soft, hard)
}

#[tokio::test]
async fn a_low_soft_limit_is_raised_to_the_hard_one_before_the_defaults_are_derived() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    // A shell's default soft limit, far under the hard one.
    let s = common::Server::start_under(&dir, &[], "ulimit -S -n 256").await;
    let (soft, hard) = nofile_limits(s.pid());
    assert_eq!(soft, hard, "the soft limit is raised to the hard one");
    assert_ne!(soft, "256");
    // Sized from the raised limit: 200 partitions fit (a cap derived from 256 descriptors
    // would be 16 partitions).
    let c = common::client();
    let r = put_json(&c, &s, "/v1/topics/wide", &json!({ "partitions": 200 })).await;
    assert_eq!(r.status().as_u16(), 201, "{}", r.text().await.unwrap());
}
