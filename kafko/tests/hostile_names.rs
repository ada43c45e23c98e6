//! Hostile topic names (`..`, `a/b`, `%2e%2e%2f`, NUL, 250 characters, …) are 400
//! `invalid_topic_name` on every topic route, and nothing appears outside the data
//! directory (nor inside it). Raw TCP, because URL libraries normalize `..`.

mod common;

use common::{Server, assert_rejected, hostile_names, raw_request};

#[tokio::test]
async fn hostile_names_are_rejected_and_touch_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(&tmp.path().join("data"), &[]).await;
    for name in hostile_names() {
        for (method, path, body) in [
            ("PUT", format!("/v1/topics/{name}"), ""),
            ("GET", format!("/v1/topics/{name}"), ""),
            ("PATCH", format!("/v1/topics/{name}"), "{}"),
            ("DELETE", format!("/v1/topics/{name}"), ""),
            ("POST", format!("/v1/topics/{name}/records"), "x"),
            ("GET", format!("/v1/topics/{name}/records"), ""),
            (
                "GET",
                format!("/v1/topics/{name}/partitions/0/records/0"),
                "",
            ),
            ("GET", format!("/v1/topics/{name}/partitions/0/offsets"), ""),
        ] {
            assert_rejected(&s.addr, method, &path, body, "invalid_topic_name").await;
        }
    }
    // A literal slash is a different (unknown) route, never a topic.
    for path in ["/v1/topics/a/b", "/v1/topics/../../records"] {
        let req = format!("PUT {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let (status, _) = raw_request(&s.addr, req.as_bytes()).await;
        assert!(status == 404 || status == 400, "{path}: {status}");
    }
    let mut outside: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    outside.sort();
    assert_eq!(outside, ["data", "data.log"]);
    let topics: Vec<_> = std::fs::read_dir(tmp.path().join("data/topics"))
        .unwrap()
        .collect();
    assert!(topics.is_empty(), "topics created: {topics:?}");
}
