//! The descriptors of sealed segments are a bounded cache: with 20,000 segments on disk
//! the real server holds a few hundred descriptors, not one per segment, while it opens
//! the log and while every segment is read back.
mod common;

use std::path::Path;

use bytes::Bytes;
use common::{Server, client};
use kafko_core::{Kafko, ProducerRecord, TopicConfig};

const PARTITIONS: u32 = 4;
const SEGMENTS: usize = 20_000;
/// The server's `--max-open-segment-files` in this test.
const CACHE: usize = 256;
/// What the server may hold beyond the cache: one active segment per partition, the
/// listener, a few connections, the directory lock, the runtime's own descriptors.
const SLACK: usize = 100;

fn descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

fn log_files(dir: &Path) -> usize {
    (0..PARTITIONS)
        .map(|p| {
            std::fs::read_dir(dir.join(format!("topics/many/{p}")))
                .unwrap()
                .filter(|e| {
                    e.as_ref()
                        .unwrap()
                        .path()
                        .extension()
                        .is_some_and(|x| x == "log")
                })
                .count()
        })
        .sum()
}

/// Writes `SEGMENTS` records of more than half a segment each (every record rolls a
/// segment) with the library, on tmpfs where fsyncs cost nothing.
async fn many_segments(dir: &Path) {
    let k = Kafko::builder(dir).open().await.unwrap();
    let config = TopicConfig {
        partitions: PARTITIONS,
        segment_bytes: 4096,
        retention_ms: None,
        ..TopicConfig::default()
    };
    k.create_topic_with_config("many", config).await.unwrap();
    let mut tasks = Vec::new();
    for p in 0..PARTITIONS {
        let producer = k.producer_for("many").unwrap();
        tasks.push(tokio::spawn(async move {
            for i in 0..SEGMENTS / PARTITIONS as usize {
                let value = Bytes::from(format!("{p}:{i:>2100}"));
                let mut record = ProducerRecord::new(value);
                record.partition = Some(p);
                producer.send_record(record).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn descriptors_stay_bounded_with_20k_segments_on_disk() {
    let tmp = if Path::new("/dev/shm").is_dir() {
        tempfile::tempdir_in("/dev/shm").unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let started = std::time::Instant::now();
    many_segments(tmp.path()).await;
    let segments = log_files(tmp.path());
    assert!(segments >= SEGMENTS, "{segments} segments on disk");
    let built = started.elapsed();

    let cache = CACHE.to_string();
    let s = Server::start_env(tmp.path(), &[], &[("KAFKO_MAX_OPEN_SEGMENT_FILES", &cache)]).await;
    let after_open = descriptors(s.pid());
    let c = client();
    let mut read = 0usize;
    let mut peak = after_open;
    for p in 0..PARTITIONS {
        let mut offset = 0u64;
        loop {
            let url = s.url(&format!(
                "/v1/topics/many/records?partition={p}&offset={offset}&max_records=1000"
            ));
            let body: serde_json::Value = c.get(url).send().await.unwrap().json().await.unwrap();
            let n = body["records"].as_array().map_or(0, Vec::len);
            if n == 0 {
                break;
            }
            read += n;
            offset = body["next_offset"].as_u64().unwrap();
            peak = peak.max(descriptors(s.pid()));
        }
    }
    assert_eq!(read, SEGMENTS, "every record read back");
    let after_reads = descriptors(s.pid());
    println!(
        "{segments} segments on disk (built in {built:.1?}); server descriptors: {after_open} after the open, peak {peak} while reading all, {after_reads} after (cache {CACHE})"
    );
    assert!(
        peak <= CACHE + SLACK,
        "the server held {peak} descriptors with {segments} segments on disk"
    );
}
