//! A Kafka fetch answers with the batches the log stores, whole and compressed as
//! stored: a fetch from inside a batch gets the whole batch (the client skips the
//! records before its offset, as with Kafka), and the limits cut between batches.
mod common;

use common::Server;
use common::kafka::{
    Kafka, Rec, batch, create_topic, fetch_request, fetched_batches, produce_batch,
};
use kafka_protocol::messages::FetchRequest;

/// A Fetch of partition 0 from `offset`, with the partition's and the answer's limits.
fn fetch_at(topic: &str, offset: i64, partition_max: i32, max: i32) -> FetchRequest {
    let mut request = fetch_request(topic, 0, offset, 0).with_max_bytes(max);
    request.topics[0].partitions[0].partition_max_bytes = partition_max;
    request
}

fn five() -> Vec<Rec> {
    const VALUES: [&[u8]; 5] = [b"v0", b"v1", b"v2", b"v3", b"v4"];
    VALUES
        .iter()
        .enumerate()
        .map(|(i, v)| Rec {
            key: Some(b"k"),
            value: Some(v),
            headers: vec![],
            timestamp: 1_000 + i as i64,
        })
        .collect()
}

#[tokio::test]
async fn a_fetch_inside_a_batch_gets_the_whole_batch_compressed_as_the_topic_stores_it() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(&tmp.path().join("d"), &["--kafka-bind", "127.0.0.1:0"]).await;
    let mut k = Kafka::connect(&s).await;
    for (topic, codec) in [
        ("plain", "uncompressed"),
        ("packed", "zstd"),
        ("quick", "lz4"),
    ] {
        let config = [("compression.type", Some(codec))];
        assert_eq!(create_topic(&mut k, topic, 1, &config).await, 0);
        assert_eq!(
            produce_batch(&mut k, topic, 0, batch(&five(), 0, None)).await,
            (0, 0)
        );
        assert_eq!(
            produce_batch(&mut k, topic, 0, batch(&five(), 0, None)).await,
            (0, 5)
        );
        let stored_codec = match codec {
            "zstd" => 4,
            "lz4" => 3,
            _ => 0,
        };
        for offset in 0..5 {
            let r = k.call(&fetch_at(topic, offset, 1 << 20, 1 << 20), 12).await;
            let p = &r.responses[0].partitions[0];
            assert_eq!(p.error_code, 0);
            let batches = fetched_batches(p.records.clone().unwrap());
            assert_eq!(batches.len(), 2, "{topic} at {offset}: both batches");
            assert_eq!(
                batches[0].base_offset, 0,
                "{topic} at {offset}: the whole first batch"
            );
            assert_eq!(batches[0].codec, stored_codec, "{topic}");
            let offsets: Vec<i64> = batches
                .iter()
                .flat_map(|b| b.records.iter().map(|r| r.offset))
                .collect();
            assert_eq!(offsets, (0..10).collect::<Vec<_>>(), "{topic} at {offset}");
            assert_eq!(batches[1].records[4].value.as_deref(), Some(&b"v4"[..]));
        }
        // The limits cut between batches; the first batch of an answer comes whole.
        let first_len = {
            let r = k.call(&fetch_at(topic, 0, 1 << 20, 1 << 20), 12).await;
            let bytes = r.responses[0].partitions[0].records.clone().unwrap();
            12 + i32::from_be_bytes(bytes[8..12].try_into().unwrap()) as usize
        };
        for (partition_max, max) in [(first_len as i32, 1 << 20), (1, 1 << 20), (1 << 20, 10)] {
            let r = k.call(&fetch_at(topic, 3, partition_max, max), 12).await;
            let batches = fetched_batches(r.responses[0].partitions[0].records.clone().unwrap());
            assert_eq!(batches.len(), 1, "{topic}: limits {partition_max}/{max}");
            assert_eq!(batches[0].records.len(), 5);
        }
        let r = k.call(&fetch_at(topic, 7, 1 << 20, 1 << 20), 12).await;
        let batches = fetched_batches(r.responses[0].partitions[0].records.clone().unwrap());
        assert_eq!((batches.len(), batches[0].base_offset), (1, 5));
    }
}
