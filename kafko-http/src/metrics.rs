//! Prometheus metrics, hand-written: per-topic record and byte counters, a request
//! latency histogram per route, response counts per status, requests in flight and
//! requests abandoned by their client, connections open and closed by the server (by
//! reason), and gauges (partition inbox depth, high
//! watermark, consumer group lag) read from the log at scrape time.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use kafko_core::Kafko;

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

#[derive(Default, Clone, Copy)]
struct TopicCounters {
    records_in: u64,
    bytes_in: u64,
    records_out: u64,
    bytes_out: u64,
}

#[derive(Default, Clone)]
struct Histogram {
    buckets: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// The entry under `key`, created on first use; looks up by `&str`, so the key is
/// allocated once per distinct key rather than once per request.
/// (Always `Some`; an `Option` because the borrow checker cannot yet express
/// "get, else insert" on one borrow without a second lookup.)
fn slot<'m, V: Default>(map: &'m mut BTreeMap<String, V>, key: &str) -> Option<&'m mut V> {
    if !map.contains_key(key) {
        map.insert(key.to_owned(), V::default());
    }
    map.get_mut(key)
}

/// All counters of one server.
#[derive(Default)]
pub(crate) struct Metrics {
    topics: Mutex<BTreeMap<String, TopicCounters>>,
    /// Keyed by route template, then method (nested so a lookup borrows, never allocates).
    latency: Mutex<BTreeMap<String, BTreeMap<String, Histogram>>>,
    /// Keyed by status code.
    responses: Mutex<BTreeMap<u16, u64>>,
    in_flight: AtomicU64,
    /// Requests whose client went away before the response (their future was dropped).
    abandoned: AtomicU64,
    connections_open: AtomicU64,
    /// Indexed by [`ClosedBy`].
    connections_closed: [AtomicU64; ClosedBy::ALL.len()],
}

/// Why the server (not the client) closed a connection.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ClosedBy {
    /// No complete request head within the header timeout of accept.
    NoRequestHead,
    /// Nothing in flight for the idle timeout.
    Idle,
    /// Closed to make room for a new connection at the cap.
    Evicted,
    /// Answered 503 at the cap, every open connection busy.
    Refused,
}

impl ClosedBy {
    const ALL: [ClosedBy; 4] = [
        ClosedBy::NoRequestHead,
        ClosedBy::Idle,
        ClosedBy::Evicted,
        ClosedBy::Refused,
    ];

    fn label(self) -> &'static str {
        match self {
            ClosedBy::NoRequestHead => "no_request_head",
            ClosedBy::Idle => "idle",
            ClosedBy::Evicted => "evicted",
            ClosedBy::Refused => "refused",
        }
    }
}

impl Metrics {
    pub(crate) fn produced(&self, topic: &str, records: usize, bytes: usize) {
        self.with_topic(topic, |c| {
            c.records_in += records as u64;
            c.bytes_in += bytes as u64;
        });
    }

    pub(crate) fn consumed(&self, topic: &str, records: usize, bytes: usize) {
        self.with_topic(topic, |c| {
            c.records_out += records as u64;
            c.bytes_out += bytes as u64;
        });
    }

    /// Updates a topic's counters; allocates the key only the first time (hot path).
    fn with_topic(&self, topic: &str, f: impl FnOnce(&mut TopicCounters)) {
        let mut t = self.topics.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = slot(&mut t, topic) {
            f(c);
        }
    }

    pub(crate) fn forget_topic(&self, topic: &str) {
        self.topics
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(topic);
    }

    pub(crate) fn connection_opened(&self) {
        self.connections_open.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn connection_ended(&self) {
        self.connections_open.fetch_sub(1, Ordering::Relaxed);
    }

    pub(crate) fn connection_closed_by(&self, why: ClosedBy) {
        self.connections_closed[why as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn request_started(&self) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
    }

    /// A request dropped before its response: the client closed the connection.
    pub(crate) fn request_abandoned(&self) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.abandoned.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn request_finished(&self, method: &str, route: &str, status: u16, took: Duration) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
        let secs = took.as_secs_f64();
        {
            let mut l = self.latency.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(h) = slot(&mut l, route).and_then(|m| slot(m, method)) {
                for (i, bound) in BUCKETS.iter().enumerate() {
                    if secs <= *bound {
                        h.buckets[i] += 1;
                    }
                }
                h.count += 1;
                h.sum += secs;
            }
        }
        *self
            .responses
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(status)
            .or_default() += 1;
    }

    /// The Prometheus text exposition (format 0.0.4).
    pub(crate) fn render(&self, kafko: &Kafko) -> String {
        let mut out = String::new();
        let hw = self.render_log(&mut out, kafko);
        self.render_http(&mut out, &hw);
        out
    }

    /// The log's families: per-topic counters, partition gauges and counters, group
    /// lag. Returns the high watermark lines, which the exposition lists later.
    fn render_log(&self, out: &mut String, kafko: &Kafko) -> String {
        self.render_topic_counters(out);
        let hw = render_partitions(out, kafko);
        render_group_lag(out, kafko);
        hw
    }

    /// Records and bytes in and out, per topic.
    fn render_topic_counters(&self, out: &mut String) {
        let topics = self
            .topics
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        for (name, help, pick) in [
            ("kafko_records_in_total", "Records appended.", 0),
            (
                "kafko_bytes_in_total",
                "Key, value and header bytes appended.",
                1,
            ),
            ("kafko_records_out_total", "Records returned to readers.", 2),
            (
                "kafko_bytes_out_total",
                "Key, value and header bytes returned.",
                3,
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            for (topic, c) in &topics {
                let v = [c.records_in, c.bytes_in, c.records_out, c.bytes_out][pick];
                let _ = writeln!(out, "{name}{{topic=\"{topic}\"}} {v}");
            }
        }
    }
}

/// Queue depth and write groups per partition; returns the high watermark lines.
fn render_partitions(out: &mut String, kafko: &Kafko) -> String {
    let _ = writeln!(
        out,
        "# HELP kafko_partition_queue_depth Appends waiting in the partition's write queue.\n# TYPE kafko_partition_queue_depth gauge"
    );
    let mut hw = String::new();
    let mut groups = String::new();
    for topic in kafko.list_topics() {
        let Ok(d) = kafko.describe_topic(&topic) else {
            continue;
        };
        for p in d.partitions {
            let labels = format!("topic=\"{topic}\",partition=\"{}\"", p.partition);
            let _ = writeln!(
                out,
                "kafko_partition_queue_depth{{{labels}}} {}",
                p.queue_depth
            );
            let _ = writeln!(
                hw,
                "kafko_partition_high_watermark{{{labels}}} {}",
                p.high_watermark
            );
            let _ = writeln!(
                groups,
                "kafko_partition_write_groups_total{{{labels}}} {}\nkafko_partition_appends_written_total{{{labels}}} {}",
                p.write_groups, p.appends_written
            );
        }
    }
    let _ = write!(
        out,
        "# HELP kafko_partition_write_groups_total Writes of a write group: each holds the appends queued while the previous one was written.\n# TYPE kafko_partition_write_groups_total counter\n# HELP kafko_partition_appends_written_total Appends written; divided by the write groups, the mean group size.\n# TYPE kafko_partition_appends_written_total counter\n{groups}"
    );
    hw
}

/// Each group's lag per partition.
fn render_group_lag(out: &mut String, kafko: &Kafko) {
    let _ = writeln!(
        out,
        "# HELP kafko_group_lag Records between a group's committed offset and the high watermark.\n# TYPE kafko_group_lag gauge"
    );
    for listing in kafko.list_groups() {
        let Ok(d) = kafko.group(&listing.group).and_then(|g| g.describe()) else {
            continue;
        };
        for t in &d.topics {
            for p in &t.partitions {
                if let Some(lag) = p.lag {
                    let _ = writeln!(
                        out,
                        "kafko_group_lag{{group=\"{}\",topic=\"{}\",partition=\"{}\"}} {lag}",
                        d.group, t.topic, p.partition
                    );
                }
            }
        }
    }
}

impl Metrics {
    /// The HTTP server's families, after the partitions' high watermarks (`hw`).
    fn render_http(&self, out: &mut String, hw: &str) {
        let _ = writeln!(
            out,
            "# HELP kafko_partition_high_watermark One past the last offset.\n# TYPE kafko_partition_high_watermark gauge\n{hw}# HELP kafko_http_requests_in_flight Requests being handled.\n# TYPE kafko_http_requests_in_flight gauge\nkafko_http_requests_in_flight {}\n# HELP kafko_http_requests_abandoned_total Requests whose client closed the connection before the response.\n# TYPE kafko_http_requests_abandoned_total counter\nkafko_http_requests_abandoned_total {}",
            self.in_flight.load(Ordering::Relaxed),
            self.abandoned.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP kafko_http_connections_open Connections open.\n# TYPE kafko_http_connections_open gauge\nkafko_http_connections_open {}\n# HELP kafko_http_connections_closed_total Connections the server closed, by reason.\n# TYPE kafko_http_connections_closed_total counter",
            self.connections_open.load(Ordering::Relaxed)
        );
        for why in ClosedBy::ALL {
            let _ = writeln!(
                out,
                "kafko_http_connections_closed_total{{reason=\"{}\"}} {}",
                why.label(),
                self.connections_closed[why as usize].load(Ordering::Relaxed)
            );
        }
        let _ = writeln!(
            out,
            "# HELP kafko_http_responses_total Responses by status code.\n# TYPE kafko_http_responses_total counter"
        );
        for (status, n) in self
            .responses
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            let _ = writeln!(out, "kafko_http_responses_total{{status=\"{status}\"}} {n}");
        }
        let name = "kafko_http_request_duration_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} Time to produce the response head.\n# TYPE {name} histogram"
        );
        let latency = self
            .latency
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let latency: BTreeMap<(&str, &str), &Histogram> = latency
            .iter()
            .flat_map(|(route, by_method)| {
                by_method
                    .iter()
                    .map(move |(method, h)| ((method.as_str(), route.as_str()), h))
            })
            .collect();
        for ((method, route), h) in latency {
            let labels = format!("method=\"{method}\",route=\"{route}\"");
            for (bound, n) in BUCKETS.iter().zip(h.buckets) {
                let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{bound}\"}} {n}");
            }
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {}", h.count);
            let _ = writeln!(out, "{name}_sum{{{labels}}} {}", h.sum);
            let _ = writeln!(out, "{name}_count{{{labels}}} {}", h.count);
        }
    }
}
