//! The Kafka produce path under attack, against the real binary: compressed batches that
//! inflate to far more than they weigh (every codec), an append that meets an I/O
//! error, and floods of made-up and freshly issued producer ids aimed at an idempotent
//! producer's deduplication. After each attack the server must still serve others, and
//! its memory and CPU must stay within a bound; the figures are printed
//! (`-- --nocapture`).

mod common;

use std::io::Write;
use std::time::Instant;

use bytes::{BufMut, Bytes, BytesMut};
use common::kafka::{Kafka, assert_bystanders_served, init_producer_id, produce_batch};
use common::{Server, client, cpu_seconds, create_topic, high_watermarks, memory_mib};

const RECORD_LIST_TOO_LARGE: i16 = 18;
const MESSAGE_TOO_LARGE: i16 = 10;

/// The smallest record a batch can hold: 7 bytes (length 6, attributes, timestamp and
/// offset deltas 0, null key, null value, no headers).
const MINIMAL_RECORD: [u8; 7] = [0x0c, 0, 0, 0, 1, 1, 0];

/// `count` minimal records, back to back, at offset deltas 0, 1, 2… as Kafka requires:
/// a record area (7 bytes a record while the delta fits one varint byte, 8 after).
fn minimal_records(count: usize) -> Vec<u8> {
    let mut area = Vec::with_capacity(count * 8);
    for i in 0..count {
        let mut delta = Vec::new();
        let mut z = (i as u64) << 1;
        while z >= 0x80 {
            delta.push((z as u8 & 0x7f) | 0x80);
            z >>= 7;
        }
        delta.push(z as u8);
        let length = (5 + delta.len()) as u8;
        area.extend_from_slice(&[length << 1, 0, 0]);
        area.extend_from_slice(&delta);
        area.extend_from_slice(&MINIMAL_RECORD[4..]);
    }
    area
}

/// `area` compressed the way producers do for Kafka codec `codec`: gzip (1), snappy in
/// snappy-java's framing (2), an lz4 frame (3), zstd (4).
fn compress(codec: i16, area: &[u8]) -> Vec<u8> {
    match codec {
        1 => {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            enc.write_all(area).unwrap();
            enc.finish().unwrap()
        }
        2 => {
            let mut out = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01".to_vec();
            let mut encoder = snap::raw::Encoder::new();
            for block in area.chunks(32 * 1024) {
                let compressed = encoder.compress_vec(block).unwrap();
                out.extend_from_slice(&(compressed.len() as u32).to_be_bytes());
                out.extend_from_slice(&compressed);
            }
            out
        }
        3 => {
            let mut enc = lz4_flex::frame::FrameEncoder::new(Vec::new());
            enc.write_all(area).unwrap();
            enc.finish().unwrap()
        }
        4 => zstd::encode_all(area, 3).unwrap(),
        other => panic!("codec {other}"),
    }
}

/// A magic-2 batch whose header declares `count` records, with `body` as its record area
/// (compressed with `codec`), from `producer` = (id, epoch, base sequence) or none.
fn raw_batch(codec: i16, count: i32, body: &[u8], producer: Option<(i64, i16, i32)>) -> Bytes {
    let (pid, epoch, seq) = producer.unwrap_or((-1, -1, -1));
    let mut b = BytesMut::with_capacity(61 + body.len());
    b.put_i64(0); // base offset
    b.put_i32(0); // length, set below
    b.put_i32(-1); // partition leader epoch
    b.put_i8(2); // magic
    b.put_u32(0); // crc, set below
    b.put_i16(codec);
    b.put_i32(count - 1); // last offset delta
    b.put_i64(1_700_000_000_000);
    b.put_i64(1_700_000_000_000);
    b.put_i64(pid);
    b.put_i16(epoch);
    b.put_i32(seq);
    b.put_i32(count);
    b.put_slice(body);
    let len = (b.len() - 12) as i32;
    b[8..12].copy_from_slice(&len.to_be_bytes());
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b.freeze()
}

/// A server with a Kafka listener and topic `topic` (one partition), and its client.
async fn kafka_server(topic: &str, flags: &[&str]) -> (tempfile::TempDir, Server, reqwest::Client) {
    let tmp = tempfile::tempdir().unwrap();
    let mut all = vec!["--kafka-bind", "127.0.0.1:0"];
    all.extend_from_slice(flags);
    let s = Server::start(&tmp.path().join("data"), &all).await;
    let c = client();
    create_topic(&c, &s, topic, serde_json::json!({ "partitions": 1 })).await;
    (tmp, s, c)
}

/// Compressed batches whose records would fill 24 MiB (3.6 M minimal records), in each
/// codec: declared honestly, the count is refused before anything is inflated
/// (RECORD_LIST_TOO_LARGE, past `--max-records-per-request`); declared as 1,000 records,
/// inflating stops at the request's bound (MESSAGE_TOO_LARGE). The server's peak memory
/// stays within 100 MiB of its idle size and its CPU within 3 s for all eight; nothing
/// is written; a small batch in every codec is still taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_bombs_are_refused_before_they_inflate() {
    let (_tmp, s, c) = kafka_server("bombs", &[]).await;
    let mut k = Kafka::connect(&s).await;
    // A first produce warms the path up before the idle size is taken.
    let warm = raw_batch(0, 1, &MINIMAL_RECORD, None);
    assert_eq!(produce_batch(&mut k, "bombs", 0, warm).await, (0, 0));
    let pid = s.pid();
    let (idle, _) = memory_mib(pid);
    let cpu_before = cpu_seconds(pid);

    let records = 24 * 1024 * 1024 / MINIMAL_RECORD.len();
    let area = minimal_records(records);
    for codec in 1..=4i16 {
        let body = compress(codec, &area);
        let honest = raw_batch(codec, records as i32, &body, None);
        let sent = honest.len();
        let (code, _) = produce_batch(&mut k, "bombs", 0, honest).await;
        assert_eq!(code, RECORD_LIST_TOO_LARGE, "codec {codec}, honest count");
        let lying = raw_batch(codec, 1000, &body, None);
        let (code, _) = produce_batch(&mut k, "bombs", 0, lying).await;
        assert_eq!(code, MESSAGE_TOO_LARGE, "codec {codec}, lying count");
        eprintln!(
            "codec {codec}: {sent} B inflating to {} B refused (count, then size)",
            area.len()
        );
    }
    assert_bystanders_served(&s).await;
    let cpu = cpu_seconds(pid) - cpu_before;
    let (rss, peak) = memory_mib(pid);
    eprintln!(
        "compressed bombs: idle {idle} MiB, peak {peak} MiB (+{} MiB), now {rss} MiB, CPU {cpu:.2} s",
        peak.saturating_sub(idle)
    );
    assert!(
        peak < idle + 100,
        "peak {peak} MiB, idle {idle} MiB: the bombs were inflated"
    );
    assert!(cpu < 3.0, "{cpu:.2} s of CPU for eight refused batches");
    assert_eq!(
        high_watermarks(&c, &s, "bombs").await,
        vec![1],
        "nothing of a refused batch is written"
    );

    // Every codec still carries ordinary batches.
    for codec in 1..=4i16 {
        let body = compress(codec, &minimal_records(100));
        let (code, _) = produce_batch(&mut k, "bombs", 0, raw_batch(codec, 100, &body, None)).await;
        assert_eq!(code, 0, "codec {codec}, 100 records");
    }
    assert_eq!(high_watermarks(&c, &s, "bombs").await, vec![401]);
}

const KAFKA_STORAGE_ERROR: i16 = 56;

/// A record area of one record with `value`.
fn one_value(value: &[u8]) -> Vec<u8> {
    let mut record = BytesMut::new();
    record.put_slice(&[0, 0, 0]); // attributes, timestamp and offset deltas
    common::kafka::put_bytes(&mut record, None);
    common::kafka::put_bytes(&mut record, Some(value));
    record.put_u8(0); // no headers
    let mut area = BytesMut::new();
    common::kafka::varlong(&mut area, record.len() as i64);
    area.put_slice(&record);
    area.to_vec()
}

/// An append that meets an I/O error: the server runs under a file-size limit
/// (`ulimit -f`, SIGXFSZ ignored), so the `write` that would take the segment past it
/// fails (EFBIG), as a failing disk's EIO does. Each produce of 100 KiB is answered 0
/// until then, and the failed one and the next KAFKA_STORAGE_ERROR (56), which clients
/// retry, never UNKNOWN_SERVER_ERROR (-1), which they treat as final. The server keeps
/// serving, and every acknowledged record reads back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_append_is_a_storage_error_clients_retry() {
    let tmp = tempfile::tempdir().unwrap();
    let flags = ["--kafka-bind", "127.0.0.1:0"];
    // dash counts 512-byte blocks: 1 MiB (bash: 2 MiB).
    let s = Server::start_under(
        &tmp.path().join("data"),
        &flags,
        "trap '' XFSZ; ulimit -f 2048",
    )
    .await;
    let c = client();
    create_topic(&c, &s, "eio", serde_json::json!({ "partitions": 1 })).await;
    let mut k = Kafka::connect(&s).await;
    let value = vec![b'v'; 100 * 1024];
    let batch = raw_batch(0, 1, &one_value(&value), None);
    let mut acked = 0u64;
    let mut codes = Vec::new();
    for _ in 0..64 {
        let (code, base) = produce_batch(&mut k, "eio", 0, batch.clone()).await;
        if code == 0 {
            assert!(codes.is_empty(), "an ack after a failure");
            assert_eq!(base as u64, acked);
            acked += 1;
            continue;
        }
        codes.push(code);
        if codes.len() == 3 {
            break;
        }
    }
    eprintln!("failed append: {acked} acks of 100 KiB, then codes {codes:?}");
    assert!(acked >= 5, "the limit came too early: {acked} acks");
    assert_eq!(
        codes,
        vec![KAFKA_STORAGE_ERROR; 3],
        "a failed append and the writes after it are storage errors"
    );
    assert_bystanders_served(&s).await;
    assert_eq!(high_watermarks(&c, &s, "eio").await, vec![acked]);
    let last = c
        .get(s.url(&format!(
            "/v1/topics/eio/partitions/0/records/{}",
            acked - 1
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(last.status(), 200);
    assert_eq!(last.bytes().await.unwrap().len(), value.len());
}

const UNKNOWN_PRODUCER_ID: i16 = 59;

/// `n` InitProducerIds on `k`, pipelined `window` at a time.
async fn init_flood(mut k: Kafka, n: usize, window: usize) {
    use kafka_protocol::messages::InitProducerIdRequest;
    let request = InitProducerIdRequest::default()
        .with_transactional_id(None)
        .with_transaction_timeout_ms(60_000);
    let mut left = n;
    while left > 0 {
        let now = left.min(window);
        for _ in 0..now {
            k.send(&request, 4, &[]).await;
        }
        for _ in 0..now {
            let (_, r) = k.recv::<InitProducerIdRequest>(4).await;
            assert_eq!(r.error_code, 0);
        }
        left -= now;
    }
}

/// The idempotence table against floods: a victim idempotent producer writes 5 records;
/// then one produce names 120,000 made-up producer ids (each refused
/// UNKNOWN_PRODUCER_ID: only ids this server issued are taken, and nothing is written or
/// remembered), then 24,000 InitProducerIds (past `--max-producer-ids 20000`: the
/// oldest ids that never produced go first). The victim's retried batch is still
/// answered as a duplicate (same base offset, written once), and its next batch follows.
/// The floods' CPU is bounded (before: 103 s for the first one alone, and the retry
/// written twice).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producer_id_floods_do_not_flush_a_producers_deduplication() {
    use kafka_protocol::messages::ProduceRequest;
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};

    // The reported attack's flood is 120,000 ids past a cap of 100,000; the InitProducerId flood
    // here is scaled to 24,000 past 20,000 to keep the test quick.
    let (_tmp, s, c) = kafka_server("idem", &["--max-producer-ids", "20000"]).await;
    let pid = s.pid();
    let mut k = Kafka::connect(&s).await;
    let (victim, epoch) = init_producer_id(&mut k).await;
    let five = minimal_records(5);
    let victim_batch = raw_batch(0, 5, &five, Some((victim, epoch, 0)));
    assert_eq!(
        produce_batch(&mut k, "idem", 0, victim_batch.clone()).await,
        (0, 0)
    );
    let (idle, _) = memory_mib(pid);

    // 120,000 made-up producer ids in one produce.
    let cpu_before = cpu_seconds(pid);
    let started = Instant::now();
    let forged: Vec<PartitionProduceData> = (0..120_000i64)
        .map(|i| {
            PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(raw_batch(
                    0,
                    1,
                    &MINIMAL_RECORD,
                    Some((1_000 + i, 0, 0)),
                )))
        })
        .collect();
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(30_000)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(common::kafka::name("idem"))
                .with_partition_data(forged),
        ]);
    let answer = k.call(&request, 9).await;
    let codes = &answer.responses[0].partition_responses;
    assert_eq!(codes.len(), 120_000);
    assert!(codes.iter().all(|p| p.error_code == UNKNOWN_PRODUCER_ID));
    let forged_cpu = cpu_seconds(pid) - cpu_before;
    // Before v5 (no UNKNOWN_PRODUCER_ID yet), the sequence error clients of then know.
    let forged = raw_batch(0, 1, &MINIMAL_RECORD, Some((7, 0, 0)));
    let old = k
        .call(&common::kafka::produce_request("idem", 0, forged, -1), 4)
        .await;
    assert_eq!(old.responses[0].partition_responses[0].error_code, 45);
    eprintln!(
        "120,000 made-up producer ids: all UNKNOWN_PRODUCER_ID in {:.2} s, CPU {forged_cpu:.2} s",
        started.elapsed().as_secs_f64()
    );
    assert_bystanders_served(&s).await;

    // 24,000 InitProducerIds, on 4 connections.
    let cpu_before = cpu_seconds(pid);
    let started = Instant::now();
    let mut floods = Vec::new();
    for _ in 0..4 {
        let k = Kafka::connect(&s).await;
        floods.push(tokio::spawn(init_flood(k, 6_000, 500)));
    }
    for f in floods {
        f.await.unwrap();
    }
    let init_cpu = cpu_seconds(pid) - cpu_before;
    eprintln!(
        "24,000 InitProducerIds in {:.2} s, CPU {init_cpu:.2} s",
        started.elapsed().as_secs_f64()
    );
    assert_bystanders_served(&s).await;

    // The victim's retry is a duplicate; its next batch follows.
    assert_eq!(produce_batch(&mut k, "idem", 0, victim_batch).await, (0, 0));
    assert_eq!(
        high_watermarks(&c, &s, "idem").await,
        vec![5],
        "written once"
    );
    let next = raw_batch(0, 5, &five, Some((victim, epoch, 5)));
    assert_eq!(produce_batch(&mut k, "idem", 0, next).await, (0, 5));
    let (rss, peak) = memory_mib(pid);
    eprintln!("producer id floods: idle {idle} MiB, RSS {rss} MiB, peak {peak} MiB");
    assert!(
        forged_cpu < 5.0,
        "{forged_cpu:.2} s of CPU for the made-up ids"
    );
    assert!(
        init_cpu < 5.0,
        "{init_cpu:.2} s of CPU for 24,000 InitProducerIds"
    );
    assert!(peak < idle + 100, "peak {peak} MiB, idle {idle} MiB");
}
