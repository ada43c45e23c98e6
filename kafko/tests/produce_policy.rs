//! Every front end (`/v1`, REST Proxy v2 and v3) produces under one policy: a partition
//! whose write queue is full refuses the request at once, with each front end's busy
//! answer (503; `/v1` `backpressure`, the proxy's error_code 50003), and stores
//! nothing, where waiting would pin the request without bound. The server runs in this
//! process over the real filesystem, with partition 0's appends held inside their
//! write (the binary has no such switch).

mod common;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use common::gate::Gate;
use common::interposed::open_interposed;
use kafko_core::{Bytes, ProduceError, ProducerRecord, RecordMetadata, SendOptions};
use serde_json::{Value, json};

type Send<'a> = Pin<Box<dyn Future<Output = Result<Vec<RecordMetadata>, ProduceError>> + 'a>>;

/// Opens the gate when dropped, so that a failed test ends.
struct Release(std::sync::Arc<Gate>);

impl Drop for Release {
    fn drop(&mut self) {
        self.0.open();
    }
}

fn record(i: usize) -> ProducerRecord {
    ProducerRecord {
        value: Some(Bytes::from(format!("queued {i}"))),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_front_end_refuses_a_full_write_queue_at_once_and_stores_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let gate = Gate::new(0);
    let kafko = open_interposed(tmp.path(), gate.clone()).await;
    kafko.create_topic("t").await.unwrap();
    let p = kafko.producer_for("t").unwrap();
    let base = common::serve_in_process(kafko.clone()).await;

    // Partition 0's leader is held inside its write; no-wait sends fill the queue
    // behind it until one is refused. A failed assertion lets it go.
    let _release = Release(gate.clone());
    gate.hold(1);
    let leader = tokio::spawn({
        let p = p.clone();
        async move { p.send_batch(vec![record(0)]).await }
    });
    tokio::task::spawn_blocking({
        let gate = gate.clone();
        move || gate.wait_held()
    })
    .await
    .unwrap();
    let no_wait = SendOptions {
        no_wait: true,
        ..Default::default()
    };
    let mut cx = Context::from_waker(Waker::noop());
    let mut queued: Vec<Send> = Vec::new();
    loop {
        assert!(queued.len() < 100_000, "the queue never filled");
        let mut send: Send = Box::pin(p.send_batch_with(vec![record(queued.len())], no_wait));
        match send.as_mut().poll(&mut cx) {
            Poll::Pending => queued.push(send),
            Poll::Ready(Err(ProduceError::Backpressure { .. })) => break,
            Poll::Ready(other) => panic!("a send finished while the leader was held: {other:?}"),
        }
    }

    // A client that gives up after 5 s: waiting for room would never answer.
    let c = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let answers = [
        (
            "/v1",
            c.post(format!("{base}/v1/topics/t/records"))
                .header("content-type", "text/plain")
                .body("v1"),
        ),
        (
            "v2",
            c.post(format!("{base}/topics/t"))
                .header("content-type", "application/vnd.kafka.binary.v2+json")
                .body(json!({"records": [{"value": "djI="}]}).to_string()),
        ),
        (
            "v3",
            c.post(format!(
                "{base}/v3/clusters/{}/topics/t/records",
                kafko_service::DEFAULT_CLUSTER_ID
            ))
            .header("content-type", "application/json")
            .body(json!({"value": {"type": "STRING", "data": "v3"}}).to_string()),
        ),
    ];
    let mut wrong = Vec::new();
    for (front_end, request) in answers {
        let started = Instant::now();
        let (status, body) = match request.send().await {
            Ok(r) => (r.status().as_u16(), r.json::<Value>().await.unwrap()),
            Err(e) => {
                let e = format!("no answer to a produce to a full write queue: {e}");
                println!("{front_end}: {e}");
                wrong.push(format!("{front_end}: {e}"));
                continue;
            }
        };
        println!("{front_end}: {status} {body} in {:?}", started.elapsed());
        let busy = match front_end {
            "/v1" => body["code"] == "backpressure",
            _ => body["error_code"] == 50003,
        };
        if status != 503 || !busy {
            wrong.push(format!("{front_end}: {status} {body}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");

    gate.open();
    leader.await.unwrap().unwrap();
    let queued_count = queued.len() as u64;
    for send in queued {
        send.await.unwrap();
    }
    // Only the leader's record and the queued ones were stored.
    let d: Value = c
        .get(format!("{base}/v1/topics/t"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        d["partitions"][0]["high_watermark"],
        queued_count + 1,
        "{d}"
    );
}
