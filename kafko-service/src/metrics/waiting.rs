//! The gauge of reads waiting for records, per front end: a `/v1` long-poll, group
//! poll or followed stream, a REST Proxy records read, a Kafka fetch below its
//! `min_bytes`. A read counts from its first wait (interest registered, too little
//! found) until the wait ends, by a guard, so every exit path uncounts it.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

/// A front end whose waiting reads are counted apart.
#[derive(Clone, Copy, Debug)]
pub enum FrontEnd {
    /// The `/v1` API (and the console over it).
    V1,
    /// The Kafka REST Proxy.
    RestProxy,
    /// The Kafka wire protocol.
    Kafka,
}

impl FrontEnd {
    const ALL: [FrontEnd; 3] = [FrontEnd::V1, FrontEnd::RestProxy, FrontEnd::Kafka];

    fn label(self) -> &'static str {
        match self {
            FrontEnd::V1 => "v1",
            FrontEnd::RestProxy => "rest_proxy",
            FrontEnd::Kafka => "kafka",
        }
    }
}

/// Waiting reads, indexed by [`FrontEnd`].
#[derive(Debug, Default)]
pub(super) struct WaitingSeries([AtomicU64; FrontEnd::ALL.len()]);

impl WaitingSeries {
    /// Counts a read of `front_end` as waiting until the guard drops.
    pub(super) fn begin(self: &Arc<Self>, front_end: FrontEnd) -> Waiting {
        self.0[front_end as usize].fetch_add(1, Ordering::Relaxed);
        Waiting {
            series: self.clone(),
            front_end,
        }
    }
}

/// One waiting read, counted until dropped.
pub struct Waiting {
    series: Arc<WaitingSeries>,
    front_end: FrontEnd,
}

impl fmt::Debug for Waiting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Waiting").field(&self.front_end).finish()
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.series.0[self.front_end as usize].fetch_sub(1, Ordering::Relaxed);
    }
}

impl Collector for WaitingSeries {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let mut m = encoder.encode_descriptor(
            "kafko_reads_waiting",
            "Reads waiting for records, by front end.",
            None,
            MetricType::Gauge,
        )?;
        for front_end in FrontEnd::ALL {
            let labels = [("front_end", front_end.label())];
            m.encode_family(&labels)?
                .encode_gauge(&self.0[front_end as usize].load(Ordering::Relaxed))?;
        }
        Ok(())
    }
}
