//! Damaged data directories against the real server: damage to records that were
//! acknowledged and fsynced makes the server refuse to start, naming the file and byte,
//! rather than drop records and hand their offsets out again.
mod common;

use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

use common::on_disk::segments;
use common::{Server, client, high_watermarks};
use serde_json::json;

/// Runs the binary on `data`, which must refuse to start; returns its stderr.
async fn refuses_to_start(data: &Path) -> String {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_kafko"))
        .args(["--bind", "127.0.0.1:0", "--kafka-bind", "off"])
        .args(["--schema-registry-bind", "off", "--data-dir"])
        .arg(data)
        .env_remove("KAFKO_AUTH_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("run kafko");
    let mut stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let outcome = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.expect("read stdout") {
            assert!(
                !line.starts_with("listening on"),
                "the server started on a damaged directory"
            );
        }
        let mut text = String::new();
        stderr.read_to_string(&mut text).await.expect("read stderr");
        (child.wait().await.expect("wait"), text)
    })
    .await;
    let (status, text) = outcome.expect("the server neither started nor refused");
    assert!(!status.success(), "{text}");
    text
}

/// 120 records acknowledged one by one on an `fsync: always` topic in 4 KiB segments,
/// then SIGKILL.
async fn acked_then_killed(data: &Path) {
    let mut s = Server::start(data, &[]).await;
    let c = client();
    common::create_topic(
        &c,
        &s,
        "t",
        json!({"partitions": 1, "segment_bytes": 4096, "fsync": {"mode": "always"}}),
    )
    .await;
    for i in 0..120u64 {
        let offsets = common::produce(
            &c,
            &s,
            "t",
            "",
            json!([{ "value": format!("record-{i:04}-{}", "x".repeat(80)) }]),
        )
        .await;
        assert_eq!(offsets[0]["offset"], i);
    }
    s.sigkill().await;
}

#[tokio::test]
async fn zeros_on_a_sealed_segment_after_sigkill_are_refused_and_nothing_is_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    acked_then_killed(&data).await;
    let logs = segments(&data, "t", 0);
    assert!(logs.len() >= 3, "{} segments", logs.len());
    let sealed = &logs[1];
    let end = std::fs::metadata(sealed).unwrap().len();
    std::fs::OpenOptions::new()
        .append(true)
        .open(sealed)
        .unwrap()
        .write_all(&[0u8; 512])
        .unwrap();
    for with_index in [true, false] {
        if !with_index {
            // The double fault: the segment's index files are gone as well.
            std::fs::remove_file(sealed.with_extension("index")).unwrap();
            std::fs::remove_file(sealed.with_extension("timeindex")).unwrap();
        }
        let stderr = refuses_to_start(&data).await;
        let name = sealed.file_name().unwrap().to_str().unwrap();
        assert!(
            stderr.contains(name) && stderr.contains(&format!("at byte {end}")),
            "the refusal names {name} and byte {end}:\n{stderr}"
        );
        assert_eq!(segments(&data, "t", 0), logs, "no segment deleted");
    }

    // Cut the zeros off: every acknowledged record is there, and offsets go on at 120.
    std::fs::OpenOptions::new()
        .write(true)
        .open(sealed)
        .unwrap()
        .set_len(end)
        .unwrap();
    let mut s = Server::start(&data, &[]).await;
    let c = client();
    assert_eq!(high_watermarks(&c, &s, "t").await, [120]);
    let offsets = common::produce(&c, &s, "t", "", json!([{ "value": "next" }])).await;
    assert_eq!(offsets[0]["offset"], 120, "no offset handed out twice");
    assert!(s.sigterm().await.success());
}

#[tokio::test]
async fn a_topic_without_its_config_is_refused_naming_it_and_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    acked_then_killed(&data).await;
    let config = data.join("topics/t/topic.json");
    let saved = std::fs::read(&config).unwrap();
    std::fs::remove_file(&config).unwrap();
    let stderr = refuses_to_start(&data).await;
    assert!(stderr.contains("topics/t/topic.json"), "{stderr}");
    std::fs::write(&config, saved).unwrap();
    let mut s = Server::start(&data, &[]).await;
    assert_eq!(high_watermarks(&client(), &s, "t").await, [120]);
    assert!(s.sigterm().await.success());
}
