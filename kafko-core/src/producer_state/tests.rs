//! Producer state kept in the log, end to end on real files: retries answered as
//! duplicates, fenced epochs and gaps after a clean restart, after a stop with no
//! shutdown (the active segment folded again), across rolls (snapshots), and expiry.

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;

use crate::config::{Compression, FsyncPolicy, TopicConfig};
use crate::error::{KafkoError, ProduceError};
use crate::produced::{BatchBudget, ProducedBatch};
use crate::producer::Producer;
use crate::producer_state::{ProducerRejection, UnknownProducer};
use crate::segment::batch::{CRC_START, ProducerFields, RecordFields, encode, set_producer};
use crate::send::SendOptions;
use crate::{Kafko, KafkoOptions};

const ID: i64 = 4_000_000;

/// A producer's batch of `count` records with sequences from `first`, as sent.
fn batch(epoch: i16, first: i32, count: u32) -> ProducedBatch {
    let value = vec![7u8; 100];
    let records = (0..count).map(|i| RecordFields {
        offset_delta: i,
        timestamp: crate::record::now_ms(),
        key: Some(b"k"),
        value: Some(&value),
        headers: &[],
    });
    let mut encoded = encode(Compression::Lz4, records.collect::<Vec<_>>().into_iter()).unwrap();
    set_producer(
        &mut encoded,
        ProducerFields {
            id: ID,
            epoch,
            base_sequence: first,
        },
    );
    let mut bytes = encoded.bytes;
    bytes[12..16].copy_from_slice(&(-1i32).to_be_bytes());
    let crc = crc32c::crc32c(&bytes[CRC_START..]);
    bytes[17..21].copy_from_slice(&crc.to_be_bytes());
    let mut budget = BatchBudget {
        inflate: 1 << 24,
        records: 1 << 20,
        max_record_bytes: 1 << 20,
    };
    ProducedBatch::check(Bytes::from(bytes), &mut budget).unwrap()
}

async fn open(dir: &Path) -> Kafko {
    KafkoOptions::new(dir)
        .retention_check_interval(Duration::from_secs(3600))
        .open()
        .await
        .unwrap()
}

fn config(segment_bytes: u64) -> TopicConfig {
    TopicConfig {
        fsync: FsyncPolicy::Never,
        segment_bytes,
        ..Default::default()
    }
}

/// Appends; `Ok((base offset, duplicate))`.
async fn append(
    p: &Producer,
    batch: ProducedBatch,
    unknown: UnknownProducer,
) -> Result<(u64, bool), ProduceError> {
    let a = p
        .append_batch_with(0, batch, SendOptions::default(), unknown)
        .await?;
    Ok((a.append.base_offset, a.duplicate))
}

fn rejection(e: ProduceError) -> ProducerRejection {
    match KafkoError::from(e) {
        KafkoError::ProducerRejected { rejection, .. } => rejection,
        other => panic!("not a producer rejection: {other}"),
    }
}

/// Writes batches of 10 records, sequences 0.., at epoch 1: `batches` of them.
async fn write(p: &Producer, batches: i32) {
    for i in 0..batches {
        let (_, duplicate) = append(p, batch(1, i * 10, 10), UnknownProducer::Accept)
            .await
            .unwrap();
        assert!(!duplicate);
    }
}

/// What a restarted log must answer for the producer that wrote `batches` batches.
async fn check_after_restart(p: &Producer, batches: i32) {
    let last = batches - 1;
    let offset = u64::try_from(last * 10).unwrap();
    // The last batch's retry: answered where it landed, nothing written.
    let end = p.topic.partitions[0].log.high_watermark();
    assert_eq!(
        append(p, batch(1, last * 10, 10), UnknownProducer::Refuse)
            .await
            .unwrap(),
        (offset, true)
    );
    assert_eq!(p.topic.partitions[0].log.high_watermark(), end);
    // An older epoch is fenced, a gap is out of order.
    assert_eq!(
        rejection(
            append(p, batch(0, batches * 10, 10), UnknownProducer::Refuse)
                .await
                .unwrap_err()
        ),
        ProducerRejection::EpochFenced {
            epoch: 0,
            current: 1
        }
    );
    assert_eq!(
        rejection(
            append(p, batch(1, batches * 10 + 5, 10), UnknownProducer::Refuse)
                .await
                .unwrap_err()
        ),
        ProducerRejection::OutOfOrder {
            first: batches * 10 + 5,
            expected: batches * 10
        }
    );
    // The next batch is written.
    assert_eq!(
        append(p, batch(1, batches * 10, 10), UnknownProducer::Refuse)
            .await
            .unwrap(),
        (end, false)
    );
    let states = p.producer_states(0).unwrap();
    assert_eq!(states.len(), 1);
    assert_eq!(
        (
            states[0].producer_id,
            states[0].epoch,
            states[0].last_sequence
        ),
        (ID, 1, batches * 10 + 9)
    );
}

fn snapshots(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join("topics/t/0"))
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().into_string().ok())
        .filter(|n| n.ends_with(".producers"))
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_restart_keeps_duplicates_fences_and_gaps() {
    let dir = tempfile::tempdir().unwrap();
    let k = open(dir.path()).await;
    k.create_topic_with_config("t", config(64 << 20))
        .await
        .unwrap();
    write(&k.producer_for("t").unwrap(), 4).await;
    k.shutdown().await.unwrap();
    // The clean stop wrote the state at the log end: the open folds nothing.
    assert_eq!(snapshots(dir.path()), vec![format!("{:020}.producers", 40)]);
    let k = open(dir.path()).await;
    check_after_restart(&k.producer_for("t").unwrap(), 4).await;
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_without_shutdown_folds_the_batch_headers_again() {
    let dir = tempfile::tempdir().unwrap();
    let copy = tempfile::tempdir().unwrap();
    let k = open(dir.path()).await;
    // Small segments: rolls write snapshots, the newest below the log end.
    k.create_topic_with_config("t", config(4096)).await.unwrap();
    let p = k.producer_for("t").unwrap();
    write(&p, 12).await;
    // The seals of the rolled segments (each writes its snapshot) are over.
    p.sync().await.unwrap();
    // What a killed process leaves: the files as written, no clean-stop marker.
    copy_dir(dir.path(), copy.path());
    k.shutdown().await.unwrap();
    let kept = snapshots(copy.path());
    assert_eq!(kept.len(), 2, "the two newest snapshots stay: {kept:?}");
    let k = open(copy.path()).await;
    assert!(!k.recovered_clean());
    check_after_restart(&k.producer_for("t").unwrap(), 12).await;
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_any_snapshot_the_whole_log_is_folded() {
    let dir = tempfile::tempdir().unwrap();
    let k = open(dir.path()).await;
    k.create_topic_with_config("t", config(4096)).await.unwrap();
    write(&k.producer_for("t").unwrap(), 12).await;
    k.shutdown().await.unwrap();
    for name in snapshots(dir.path()) {
        std::fs::remove_file(dir.path().join("topics/t/0").join(name)).unwrap();
    }
    let k = open(dir.path()).await;
    check_after_restart(&k.producer_for("t").unwrap(), 12).await;
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_producer_expires_and_is_then_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let k = KafkoOptions::new(dir.path())
        .retention_check_interval(Duration::from_secs(3600))
        .producer_id_expiration(Duration::from_millis(1))
        .open()
        .await
        .unwrap();
    k.create_topic_with_config("t", config(64 << 20))
        .await
        .unwrap();
    let p = k.producer_for("t").unwrap();
    write(&p, 1).await;
    // The batch's timestamp is now; the check runs at least a millisecond later.
    let written = crate::record::now_ms();
    while crate::record::now_ms() <= written + 1 {
        tokio::task::yield_now().await;
    }
    k.enforce_retention().await.unwrap();
    assert!(p.producer_states(0).unwrap().is_empty());
    assert_eq!(
        rejection(
            append(&p, batch(1, 0, 10), UnknownProducer::Refuse)
                .await
                .unwrap_err()
        ),
        ProducerRejection::UnknownProducer
    );
    // Accepted as new where the caller allows it, as Kafka does after expiry.
    assert_eq!(
        append(&p, batch(1, 0, 10), UnknownProducer::Accept)
            .await
            .unwrap(),
        (10, false)
    );
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_producers_concurrent_copies_of_a_batch_are_written_once() {
    let dir = tempfile::tempdir().unwrap();
    let k = open(dir.path()).await;
    k.create_topic_with_config("t", config(64 << 20))
        .await
        .unwrap();
    let p = k.producer_for("t").unwrap();
    let copies: Vec<_> = (0..8)
        .map(|_| {
            let p = p.clone();
            tokio::spawn(async move {
                append(&p, batch(1, 0, 10), UnknownProducer::Accept)
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut written = 0;
    for c in copies {
        let (offset, duplicate) = c.await.unwrap();
        assert_eq!(offset, 0);
        written += usize::from(!duplicate);
    }
    assert_eq!(written, 1);
    assert_eq!(p.topic.partitions[0].log.high_watermark(), 10);
    k.shutdown().await.unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else {
            // A file the live log renamed away meanwhile (a state file's `.tmp`): what a
            // kill at that moment leaves too.
            match std::fs::copy(entry.path(), target) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                other => {
                    other.unwrap();
                }
            }
        }
    }
}
