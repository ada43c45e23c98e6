//! The seed's quickstart, end to end: open, create, produce, consume from the beginning,
//! per-topic compression, and a graceful shutdown.
//!
//! Run with `cargo run -p kafko-core --example quickstart [data-dir]`.

use kafko_core::{Bytes, Compression, Kafko, LogConfig};

#[tokio::main]
async fn main() -> kafko_core::Result<()> {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "./data".into());
    let broker = Kafko::open(&dir).await?;
    broker.create_topic("orders").await?;

    // Produce
    let producer = broker.producer_for("orders").await?;
    let meta = producer.send(None, Bytes::from("order-1")).await?;
    println!("appended at offset {}", meta.offset);

    // Consume from the beginning
    let mut consumer = broker.consumer_for("orders").await?;
    consumer.seek(0);
    let record = consumer.next_record().await?;
    println!("read: {:?}", record.value());

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
    let metrics = broker.producer_for("metrics").await?;
    metrics
        .send(Some(Bytes::from("cpu")), Bytes::from("0.42"))
        .await?;

    broker.shutdown().await?;
    Ok(())
}
