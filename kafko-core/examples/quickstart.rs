//! The quickstart, end to end: open, create, produce, read a partition, consume as a
//! group (at-least-once), per-topic compression, and a graceful shutdown.
//!
//! Run with `cargo run -p kafko-core --example quickstart [data-dir]`.

use kafko_core::{Bytes, Compression, GroupPollOptions, Kafko, LogConfig};

#[tokio::main]
async fn main() -> kafko_core::Result<()> {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "./data".into());
    let broker = Kafko::open(&dir).await?;
    broker.create_topic("orders").await?;
    let orders = broker.topic("orders")?; // resolved once; cheap to clone

    // Produce
    let meta = orders.producer().send(None, Bytes::from("order-1")).await?;
    println!(
        "appended at partition {} offset {}",
        meta.partition, meta.offset
    );

    // Read one partition from an offset you keep yourself
    let partition = orders.partition(meta.partition)?;
    let offsets = partition.offsets()?; // Offsets { log_start, high_watermark }
    let fetched = partition.read(offsets.log_start, 100, 1 << 20)?; // read_wait(.., wait) long-polls
    println!(
        "read {} record(s), next offset {}",
        fetched.records.len(),
        fetched.next_offset
    );

    // Consume as a group: the broker keeps the cursor
    let billing = broker.group("billing")?;
    let poll = billing
        .poll(&orders, None, &GroupPollOptions::default())
        .await?;
    for record in poll.records() {
        println!("billing got: {:?}", record.value());
    }
    poll.delivered(); // the group's next poll commits these; dropped instead, they come again

    // Per-topic compression
    broker
        .create_topic_with_config(
            "metrics",
            LogConfig {
                compression: Compression::Zstd,
                ..Default::default()
            },
        )
        .await?;
    broker
        .topic("metrics")?
        .producer()
        .send(Some(Bytes::from("cpu")), Bytes::from("0.42"))
        .await?;

    broker.shutdown().await?; // drain, fsync, clean marker
    Ok(())
}
