//! Records/s of N concurrent producers, each awaiting its own `send` in a loop, on the
//! 2-worker runtime the log bench uses: the scan behind bench/README.md's "group commit
//! against the producer count" (ninth pass). One line per count.
//!
//! `cargo run --release -p kafko-core --example producer_scaling -- [SECONDS] [N ...]`
//! (defaults: 1 second; 1 2 4 8 16 32 64 128 producers). `KAFKO_WORKERS` sets the
//! runtime's worker threads (default 2).

use std::error::Error;
use std::time::{Duration, Instant};

use kafko_core::{Bytes, Kafko, TopicConfig};

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let seconds: f64 = args.next().map_or(Ok(1.0), |s| s.parse())?;
    let mut counts: Vec<u64> = args.map(|s| s.parse()).collect::<Result<_, _>>()?;
    if counts.is_empty() {
        counts = vec![1, 2, 4, 8, 16, 32, 64, 128];
    }
    let workers: usize = std::env::var("KAFKO_WORKERS").map_or(Ok(2), |s| s.parse())?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()?;
    for producers in counts {
        let rate = rt.block_on(run(producers, Duration::from_secs_f64(seconds)))?;
        println!("{producers:>4} producers: {rate:>10.0} records/s");
    }
    Ok(())
}

/// One fresh log per count, sized like the log bench's: 64 MiB segments, 128 MiB kept
/// (retention every 250 ms), so dirty pages do not pile up across counts.
async fn run(producers: u64, length: Duration) -> Result<f64, Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    let kafko = Kafko::open(dir.path()).await?;
    let config = TopicConfig {
        segment_bytes: 64 << 20,
        retention_bytes: Some(128 << 20),
        retention_ms: None,
        ..Default::default()
    };
    kafko.create_topic_with_config("t", config).await?;
    let producer = kafko.producer_for("t")?;
    let trimmer = {
        let kafko = kafko.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(250)).await;
                if kafko.enforce_retention().await.is_err() {
                    return;
                }
            }
        })
    };
    let value = Bytes::from(vec![b'v'; 256]);
    let start = Instant::now();
    let end = start + length;
    let tasks: Vec<_> = (0..producers)
        .map(|_| {
            let (producer, value) = (producer.clone(), value.clone());
            tokio::spawn(async move {
                let mut sent = 0u64;
                while Instant::now() < end {
                    for _ in 0..64 {
                        producer.send(None, value.clone()).await?;
                    }
                    sent += 64;
                }
                Ok::<u64, kafko_core::KafkoError>(sent)
            })
        })
        .collect();
    let mut total = 0;
    for task in tasks {
        total += task.await??;
    }
    let rate = total as f64 / start.elapsed().as_secs_f64();
    trimmer.abort();
    kafko.shutdown().await?;
    Ok(rate)
}
