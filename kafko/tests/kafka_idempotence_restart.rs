//! Idempotent producers across a SIGKILL of the real server: the partition's producer
//! state comes back from the log, so a retry is still answered as a duplicate, an older
//! epoch is still fenced, a gap is still out of order, and an id issued but never used
//! before the kill is unknown. DescribeProducers shows the state after the restart.
mod common;

use common::kafka::{Kafka, Rec, batch, create_topic, init_producer_id, produce_batch};
use common::{Server, client, high_watermarks};
use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::{DescribeProducersRequest, InitProducerIdRequest, ProducerId};

const NONE: i16 = 0;
const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;
const INVALID_PRODUCER_EPOCH: i16 = 47;
const UNKNOWN_PRODUCER_ID: i16 = 59;

/// A batch of `count` records of producer `(id, epoch)` with sequences from `first`.
fn records(count: usize, producer: (i64, i16, i32)) -> bytes::Bytes {
    let recs: Vec<Rec> = (0..count)
        .map(|_| Rec {
            key: Some(b"k"),
            value: Some(b"value"),
            headers: vec![],
            timestamp: 1_700_000_000_000,
        })
        .collect();
    batch(&recs, 0, Some(producer))
}

async fn bump(k: &mut Kafka, id: i64, epoch: i16) -> (i64, i16) {
    let request = InitProducerIdRequest::default()
        .with_transactional_id(None)
        .with_transaction_timeout_ms(60_000)
        .with_producer_id(ProducerId(id))
        .with_producer_epoch(epoch);
    let r = k.call(&request, 4).await;
    assert_eq!(r.error_code, NONE);
    (r.producer_id.0, r.producer_epoch)
}

/// The producer's last batch on each partition, sent (again): each answer.
async fn last_batches(k: &mut Kafka, id: i64, epoch: i16) -> [(i16, i64); 2] {
    [
        produce_batch(k, "idem", 0, records(5, (id, epoch, 0))).await,
        produce_batch(k, "idem", 1, records(3, (id, epoch, 0))).await,
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkill_keeps_duplicates_fences_gaps_and_unknown_ids() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let flags = ["--kafka-bind", "127.0.0.1:0"];
    let mut s = Server::start(&data, &flags).await;
    let mut k = Kafka::connect(&s).await;
    assert_eq!(create_topic(&mut k, "idem", 2, &[]).await, NONE);
    let (id, epoch0) = init_producer_id(&mut k).await;
    assert_eq!(
        produce_batch(&mut k, "idem", 0, records(5, (id, epoch0, 0))).await,
        (NONE, 0)
    );
    // The producer bumps its epoch (as after a failed batch) and starts again at 0.
    let (_, epoch) = bump(&mut k, id, epoch0).await;
    assert!(epoch > epoch0);
    assert_eq!(
        last_batches(&mut k, id, epoch).await,
        [(NONE, 5), (NONE, 0)]
    );
    let (unused, unused_epoch) = init_producer_id(&mut k).await;

    s.sigkill().await;
    let s = Server::start(&data, &flags).await;
    let c = client();
    let mut k = Kafka::connect(&s).await;
    // The last batch's retry on each partition: its first offset, nothing written.
    assert_eq!(
        last_batches(&mut k, id, epoch).await,
        [(NONE, 5), (NONE, 0)]
    );
    assert_eq!(high_watermarks(&c, &s, "idem").await, vec![10, 3]);
    // The epoch before the bump is fenced; a gap is out of order.
    assert_eq!(
        produce_batch(&mut k, "idem", 0, records(5, (id, epoch0, 5)))
            .await
            .0,
        INVALID_PRODUCER_EPOCH
    );
    assert_eq!(
        produce_batch(&mut k, "idem", 0, records(2, (id, epoch, 7)))
            .await
            .0,
        OUT_OF_ORDER_SEQUENCE_NUMBER
    );
    // An id handed out before the kill that never wrote: nothing in the log knows it.
    assert_eq!(
        produce_batch(&mut k, "idem", 0, records(1, (unused, unused_epoch, 0)))
            .await
            .0,
        UNKNOWN_PRODUCER_ID
    );
    // The producer goes on where it was.
    assert_eq!(
        produce_batch(&mut k, "idem", 0, records(5, (id, epoch, 5))).await,
        (NONE, 10)
    );
    assert_eq!(high_watermarks(&c, &s, "idem").await, vec![15, 3]);

    let request = DescribeProducersRequest::default().with_topics(vec![
        TopicRequest::default()
            .with_name(common::kafka::name("idem"))
            .with_partition_indexes(vec![0, 1]),
    ]);
    let described = k.call(&request, 0).await;
    let partitions = &described.topics[0].partitions;
    let seen: Vec<(i64, i32, i32)> = partitions
        .iter()
        .flat_map(|p| {
            p.active_producers
                .iter()
                .map(|a| (a.producer_id.0, a.producer_epoch, a.last_sequence))
        })
        .collect();
    let epoch = i32::from(epoch);
    assert_eq!(seen, vec![(id, epoch, 9), (id, epoch, 2)]);
}
