//! A produce that appends some partitions and not others answers 207 with the outcome
//! of each partition and the records that were not stored, never an error that invites
//! a retry of the whole request. The server runs in this process over the real
//! filesystem, with writes to partition 1 failing (the binary has no fault switch).

mod common;

use std::sync::atomic::Ordering;

use common::failing_appends::FailPartition;
use common::interposed::open_interposed;
use kafko_core::TopicConfig;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fault_on_the_second_of_three_partitions_is_a_207_naming_the_records_not_stored() {
    let tmp = tempfile::tempdir().unwrap();
    // Writes to partition 1 fail while `armed` is set.
    let hook = FailPartition::new(1);
    let armed = hook.on.clone();
    let kafko = open_interposed(tmp.path(), hook).await;
    let three_partitions = TopicConfig {
        partitions: 3,
        ..Default::default()
    };
    kafko
        .create_topic_with_config("t", three_partitions)
        .await
        .unwrap();
    let base = common::serve_in_process(kafko).await;
    let c = reqwest::Client::new();

    armed.store(true, Ordering::SeqCst);
    let records: Vec<_> = (0..6)
        .map(|i| json!({"value": format!("v{i}"), "partition": i % 3}))
        .collect();
    let r = c
        .post(format!("{base}/v1/topics/t/records?answer=records"))
        .json(&json!({ "records": records }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 207);
    assert!(r.headers().get("retry-after").is_none());
    let b: serde_json::Value = r.json().await.unwrap();
    assert_eq!(
        b["partitions"],
        json!([
            {"partition": 0, "record_count": 2, "base_offset": 0},
            {"partition": 1, "record_count": 2, "error": {
                "status": 500, "code": "internal", "detail": "internal error; see the server log"
            }},
            {"partition": 2, "record_count": 2, "base_offset": 0},
        ]),
        "{b}"
    );
    assert_eq!(b["failed_records"], json!([1, 4]));
    let offsets = b["offsets"].as_array().unwrap();
    assert_eq!(offsets.len(), 6);
    assert!(offsets[1].is_null() && offsets[4].is_null());
    assert_eq!(offsets[3]["offset"], 1);
    assert_eq!(offsets[3]["partition"], 0);

    // Only partitions 0 and 2 hold the request's records.
    let d: serde_json::Value = c
        .get(format!("{base}/v1/topics/t"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let hws: Vec<_> = (0..3)
        .map(|p| d["partitions"][p]["high_watermark"].as_u64().unwrap())
        .collect();
    assert_eq!(hws, [2, 0, 2]);

    // Every partition failing stores nothing: a plain error, not a 207.
    let r = c
        .post(format!("{base}/v1/topics/t/records"))
        .json(&json!({"records": [{"value": "x", "partition": 1}, {"value": "y", "partition": 1}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 500);
}
