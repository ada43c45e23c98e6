//! Prometheus metrics, kept in a `prometheus-client` [`Registry`] and encoded by it in
//! the text exposition format 0.0.4.
//!
//! What this module owns: the server's series and their bounds. Every label set is
//! bounded by construction, whatever the clients send:
//! - `method` is one of the nine standard methods or `other`;
//! - `route` is a route template of the router (or `unmatched`), at most
//!   [`ROUTE_SLOTS`] of them, then `other`;
//! - `status` is a status code (100–999);
//! - `topic` is an existing topic that was written or read; `group` a group with a
//!   committed offset;
//! - `reason` is one of [`ClosedBy`];
//! - `front_end` is one of [`FrontEnd`] ([`waiting`]).
//!
//! Recording is lock-free and shares no cache line between threads: a request's
//! latency and status are atomic additions to the calling thread's shard ([`cells`]) of
//! series found without a lock (a fixed table of route slots, each set once), and a
//! topic's counters are found in a map that is read through an atomic pointer and
//! copied only when a topic is first counted or deleted. The log's gauges are read at
//! scrape time: one pass over the partitions, and one figure per group and topic
//! ([`Kafko::group_lags_after`]), never one per group and partition, from at most
//! [`LAG_BUDGET`] committed offsets a scrape.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use arc_swap::ArcSwap;
use http::Method;
use kafko_core::Kafko;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

mod cells;
mod waiting;

use cells::Sharded;
use waiting::WaitingSeries;
pub use waiting::{FrontEnd, Waiting};

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

/// Route templates with series of their own; any more would share the `other` series
/// (the router has under a hundred).
pub const ROUTE_SLOTS: usize = 256;

/// The methods with a label of their own; every other method counts as `other`.
const METHODS: [Method; 9] = [
    Method::GET,
    Method::HEAD,
    Method::POST,
    Method::PUT,
    Method::DELETE,
    Method::PATCH,
    Method::OPTIONS,
    Method::CONNECT,
    Method::TRACE,
];

/// Labels of [`METHODS`], then `other`.
const METHOD_LABELS: [&str; METHODS.len() + 1] = [
    "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE", "other",
];

/// The index of a method's label in [`METHOD_LABELS`].
fn method_index(method: &Method) -> usize {
    METHODS
        .iter()
        .position(|m| m == method)
        .unwrap_or(METHODS.len())
}

/// Status codes counted, one counter each (`http` allows 100–999).
const STATUSES: std::ops::RangeInclusive<u16> = 100..=999;

/// A latency histogram of atomics.
#[derive(Default)]
struct Histogram {
    /// Observations per bucket (not cumulative), the last one past every bound.
    buckets: [AtomicU64; BUCKETS.len() + 1],
    count: AtomicU64,
    sum_nanos: AtomicU64,
}

impl Histogram {
    fn observe(&self, took: Duration) {
        let secs = took.as_secs_f64();
        let bucket = BUCKETS
            .iter()
            .position(|bound| secs <= *bound)
            .unwrap_or(BUCKETS.len());
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }
}

/// One route template's histograms, one per method label, in each shard.
struct RouteSeries {
    route: Box<str>,
    by_method: Sharded<[Histogram; METHOD_LABELS.len()]>,
}

impl RouteSeries {
    fn new(route: &str) -> Self {
        RouteSeries {
            route: route.into(),
            by_method: Sharded::default(),
        }
    }

    /// `method`'s histogram in the calling thread's shard.
    fn histogram(&self, method: usize) -> &Histogram {
        &self.by_method.local()[method]
    }

    /// `method`'s buckets, count and sum of nanoseconds over every shard.
    fn summed(&self, method: usize) -> ([u64; BUCKETS.len() + 1], u64, u64) {
        let mut buckets = [0u64; BUCKETS.len() + 1];
        let (mut count, mut sum_nanos) = (0u64, 0u64);
        for shard in self.by_method.all() {
            let h = &shard[method];
            for (total, n) in buckets.iter_mut().zip(&h.buckets) {
                *total += n.load(Ordering::Relaxed);
            }
            count += h.count.load(Ordering::Relaxed);
            sum_nanos = sum_nanos.saturating_add(h.sum_nanos.load(Ordering::Relaxed));
        }
        (buckets, count, sum_nanos)
    }
}

/// Route templates to their series: open addressing over slots that are each set once,
/// so a lookup is atomic loads and string compares, never a lock.
struct Routes {
    slots: Box<[OnceLock<Box<RouteSeries>>]>,
    /// Routes past [`ROUTE_SLOTS`].
    other: RouteSeries,
}

impl Routes {
    fn new() -> Self {
        Routes {
            slots: (0..ROUTE_SLOTS).map(|_| OnceLock::new()).collect(),
            other: RouteSeries::new("other"),
        }
    }

    /// The series of `route`, created on its first request.
    fn series(&self, route: &str) -> &RouteSeries {
        let start = usize::try_from(fnv1a(route.as_bytes()) % self.slots.len() as u64).unwrap_or(0);
        for i in 0..self.slots.len() {
            let slot = &self.slots[(start + i) % self.slots.len()];
            let series = slot.get_or_init(|| Box::new(RouteSeries::new(route)));
            if &*series.route == route {
                return series;
            }
        }
        &self.other
    }

    fn all(&self) -> impl Iterator<Item = &RouteSeries> {
        self.slots
            .iter()
            .filter_map(|s| s.get().map(|b| &**b))
            .chain([&self.other])
    }
}

/// FNV-1a: a route template is short, and hashing it must not allocate.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Why the server (not the client) closed a connection.
#[derive(Debug, Clone, Copy)]
pub enum ClosedBy {
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

/// Requests begun and ended (answered or abandoned) on one thread; a request may end on
/// another thread than the one it began on, so only the sums over every shard mean
/// anything (their difference is the requests in flight).
#[derive(Default)]
struct RequestCells {
    begun: AtomicU64,
    ended: AtomicU64,
}

/// The HTTP server's series.
struct HttpSeries {
    requests: Sharded<RequestCells>,
    /// Requests whose client went away before the response (their future was dropped).
    abandoned: AtomicU64,
    connections_open: AtomicU64,
    /// Indexed by [`ClosedBy`].
    connections_closed: [AtomicU64; ClosedBy::ALL.len()],
    /// Indexed by status code − 100.
    responses: Sharded<Box<[AtomicU64]>>,
    routes: Routes,
}

impl fmt::Debug for HttpSeries {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HttpSeries")
    }
}

/// Records and bytes in and out of one topic (one shard's).
#[derive(Default)]
struct TopicCounters {
    records_in: AtomicU64,
    bytes_in: AtomicU64,
    records_out: AtomicU64,
    bytes_out: AtomicU64,
}

/// Per-topic counters: read through an atomic pointer; a new topic or a deleted one
/// replaces the map (under `writing`, which readers never take).
struct TopicSeries {
    map: ArcSwap<HashMap<Box<str>, Arc<Sharded<TopicCounters>>>>,
    writing: Mutex<()>,
    /// To leave out counters of topics deleted meanwhile.
    kafko: Kafko,
}

impl fmt::Debug for TopicSeries {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TopicSeries")
    }
}

impl TopicSeries {
    /// Adds to `topic`'s counters in the calling thread's shard. The usual case, a topic
    /// already counted, borrows them from the map: no reference count is touched.
    fn add(&self, topic: &str, add: impl FnOnce(&TopicCounters)) {
        if let Some(c) = self.map.load().get(topic) {
            add(c.local());
            return;
        }
        add(self.counters(topic).local());
    }

    fn counters(&self, topic: &str) -> Arc<Sharded<TopicCounters>> {
        if let Some(c) = self.map.load().get(topic) {
            return c.clone();
        }
        let _writing = self.writing.lock().unwrap_or_else(|p| p.into_inner());
        let current = self.map.load_full();
        if let Some(c) = current.get(topic) {
            return c.clone();
        }
        let mut next = (*current).clone();
        let c = Arc::new(Sharded::<TopicCounters>::default());
        next.insert(topic.into(), c.clone());
        self.map.store(Arc::new(next));
        c
    }

    fn forget(&self, topic: &str) {
        let _writing = self.writing.lock().unwrap_or_else(|p| p.into_inner());
        let current = self.map.load_full();
        if current.contains_key(topic) {
            let mut next = (*current).clone();
            next.remove(topic);
            self.map.store(Arc::new(next));
        }
    }
}

/// Committed offsets a scrape reads for group lag. Past it, a scrape refreshes the
/// groups from where the previous one stopped, and the others keep the figure of the
/// scrape that last visited them: each is at most ⌈committed offsets / budget⌉ scrapes
/// old, and a scrape's cost stays bounded however many groups commit.
pub const LAG_BUDGET: usize = 1_000_000;

/// The group lag of the latest scrapes.
#[derive(Default)]
struct LagCache {
    /// The group after which the next scrape's page starts (`None`: the first).
    cursor: Option<String>,
    /// Group → (topic, lag), as of the scrape that last visited the group.
    lags: BTreeMap<String, Vec<(String, u64)>>,
}

impl LagCache {
    /// Reads the next page of groups, at most `budget` committed offsets past the first.
    fn refresh(&mut self, kafko: &Kafko, budget: usize) {
        let page = kafko.group_lags_after(self.cursor.as_deref(), budget);
        // The page saw every group in (cursor, next]: what was cached there goes
        // (groups deleted since, and topics they no longer commit on, with it).
        let (from, to) = (self.cursor.take(), page.next.as_ref());
        self.lags.retain(|g, _| {
            let visited = from.as_ref().is_none_or(|f| g > f) && to.is_none_or(|t| g <= t);
            !visited
        });
        for l in page.lags {
            self.lags.entry(l.group).or_default().push((l.topic, l.lag));
        }
        self.cursor = page.next;
    }
}

/// The log's gauges and counters, read at scrape time.
struct LogSeries {
    kafko: Kafko,
    /// Taken by scrapes only, never by requests.
    lags: Mutex<LagCache>,
}

impl fmt::Debug for LogSeries {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LogSeries")
    }
}

/// All series of one server.
pub struct Metrics {
    http: Arc<HttpSeries>,
    topics: Arc<TopicSeries>,
    waiting: Arc<WaitingSeries>,
    registry: Registry,
}

impl Metrics {
    /// The series of a server over `kafko`.
    pub fn new(kafko: Kafko) -> Self {
        let http = Arc::new(HttpSeries {
            requests: Sharded::default(),
            abandoned: AtomicU64::new(0),
            connections_open: AtomicU64::new(0),
            connections_closed: Default::default(),
            responses: Sharded::new_with(|| STATUSES.map(|_| AtomicU64::new(0)).collect()),
            routes: Routes::new(),
        });
        let topics = Arc::new(TopicSeries {
            map: ArcSwap::default(),
            writing: Mutex::new(()),
            kafko: kafko.clone(),
        });
        let mut registry = Registry::default();
        registry.register_collector(Box::new(topics.clone()));
        registry.register_collector(Box::new(LogSeries {
            kafko,
            lags: Mutex::default(),
        }));
        registry.register_collector(Box::new(http.clone()));
        let waiting = Arc::new(WaitingSeries::default());
        registry.register_collector(Box::new(waiting.clone()));
        Metrics {
            http,
            topics,
            waiting,
            registry,
        }
    }

    /// Counts records and bytes produced to `topic`.
    pub fn produced(&self, topic: &str, records: usize, bytes: usize) {
        self.topics.add(topic, |c| {
            c.records_in.fetch_add(records as u64, Ordering::Relaxed);
            c.bytes_in.fetch_add(bytes as u64, Ordering::Relaxed);
        });
    }

    /// Counts records and bytes read from `topic`.
    pub fn consumed(&self, topic: &str, records: usize, bytes: usize) {
        self.topics.add(topic, |c| {
            c.records_out.fetch_add(records as u64, Ordering::Relaxed);
            c.bytes_out.fetch_add(bytes as u64, Ordering::Relaxed);
        });
    }

    /// Drops `topic`'s counters (it was deleted).
    pub fn forget_topic(&self, topic: &str) {
        self.topics.forget(topic);
    }

    /// Counts an HTTP connection as open.
    pub fn connection_opened(&self) {
        self.http.connections_open.fetch_add(1, Ordering::Relaxed);
    }

    /// An HTTP connection closed.
    pub fn connection_ended(&self) {
        self.http.connections_open.fetch_sub(1, Ordering::Relaxed);
    }

    /// Counts a connection the server closed, by why.
    pub fn connection_closed_by(&self, why: ClosedBy) {
        self.http.connections_closed[why as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// An HTTP request began.
    pub fn request_started(&self) {
        self.http
            .requests
            .local()
            .begun
            .fetch_add(1, Ordering::Relaxed);
    }

    /// A request dropped before its response: the client closed the connection.
    pub fn request_abandoned(&self) {
        self.http
            .requests
            .local()
            .ended
            .fetch_add(1, Ordering::Relaxed);
        self.http.abandoned.fetch_add(1, Ordering::Relaxed);
    }

    /// A response: its latency under its method's label and route template, and its
    /// status. Lock-free.
    pub fn request_finished(&self, method: &Method, route: &str, status: u16, took: Duration) {
        let http = &*self.http;
        http.requests.local().ended.fetch_add(1, Ordering::Relaxed);
        http.routes
            .series(route)
            .histogram(method_index(method))
            .observe(took);
        if let Some(n) = status
            .checked_sub(*STATUSES.start())
            .and_then(|i| http.responses.local().get(usize::from(i)))
        {
            n.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts a read of `front_end` as waiting for records until the guard drops, on
    /// whichever path its wait ends.
    pub fn read_waiting(&self, front_end: FrontEnd) -> Waiting {
        self.waiting.begin(front_end)
    }

    /// The Prometheus text exposition (format 0.0.4).
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing to a `String` does not fail, and the collectors fail only with it.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry);
        out
    }
}

/// A counter or gauge sample without labels.
fn single<V>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    kind: MetricType,
    v: V,
) -> fmt::Result
where
    V: prometheus_client::encoding::EncodeGaugeValue
        + prometheus_client::encoding::EncodeCounterValue,
{
    let mut m = encoder.encode_descriptor(name, help, None, kind)?;
    match kind {
        MetricType::Counter => m.encode_counter::<NoLabelSet, V, u64>(&v, None),
        _ => m.encode_gauge(&v),
    }
}

impl Collector for HttpSeries {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        // Wrapping: each sum may have moved on between the two, never below zero in truth.
        let (begun, ended) = self.requests.all().fold((0u64, 0u64), |(b, e), c| {
            (
                b.wrapping_add(load(&c.begun)),
                e.wrapping_add(load(&c.ended)),
            )
        });
        let in_flight = match begun.wrapping_sub(ended) {
            // An end counted before its beginning was read: none in flight, not 2^64.
            n if n > u64::MAX / 2 => 0,
            n => n,
        };
        single(
            &mut encoder,
            "kafko_http_requests_in_flight",
            "Requests being handled.",
            MetricType::Gauge,
            in_flight,
        )?;
        single(
            &mut encoder,
            "kafko_http_requests_abandoned",
            "Requests whose client closed the connection before the response.",
            MetricType::Counter,
            load(&self.abandoned),
        )?;
        single(
            &mut encoder,
            "kafko_http_connections_open",
            "Connections open.",
            MetricType::Gauge,
            load(&self.connections_open),
        )?;
        let mut m = encoder.encode_descriptor(
            "kafko_http_connections_closed",
            "Connections the server closed, by reason.",
            None,
            MetricType::Counter,
        )?;
        for why in ClosedBy::ALL {
            let labels = [("reason", why.label())];
            m.encode_family(&labels)?
                .encode_counter::<NoLabelSet, u64, u64>(
                    &load(&self.connections_closed[why as usize]),
                    None,
                )?;
        }
        let mut m = encoder.encode_descriptor(
            "kafko_http_responses",
            "Responses by status code.",
            None,
            MetricType::Counter,
        )?;
        for (i, status) in STATUSES.enumerate() {
            let n: u64 = self
                .responses
                .all()
                .map(|shard| shard.get(i).map_or(0, load))
                .sum();
            if n > 0 {
                let labels = [("status", status)];
                m.encode_family(&labels)?
                    .encode_counter::<NoLabelSet, u64, u64>(&n, None)?;
            }
        }
        let mut m = encoder.encode_descriptor(
            "kafko_http_request_duration_seconds",
            "Time to produce the response head, by method (the standard ones, else other) and route template.",
            None,
            MetricType::Histogram,
        )?;
        let mut series: Vec<(&str, &str, [u64; BUCKETS.len() + 1], u64)> = self
            .routes
            .all()
            .flat_map(|r| {
                METHOD_LABELS
                    .iter()
                    .enumerate()
                    .filter_map(move |(i, method)| {
                        let (buckets, count, sum_nanos) = r.summed(i);
                        (count > 0).then_some((*method, &*r.route, buckets, sum_nanos))
                    })
            })
            .collect();
        series.sort_unstable_by_key(|(method, route, _, _)| (*method, *route));
        for (method, route, counts, sum_nanos) in series {
            let buckets: Vec<(f64, u64)> = BUCKETS
                .iter()
                .chain([&f64::INFINITY])
                .zip(counts)
                .map(|(bound, n)| (*bound, n))
                .collect();
            let count = buckets.iter().map(|(_, n)| n).sum();
            let sum = sum_nanos as f64 / 1e9;
            let labels = [("method", method), ("route", route)];
            m.encode_family(&labels)?
                .encode_histogram::<NoLabelSet>(sum, count, &buckets, None)?;
        }
        Ok(())
    }
}

/// One of a topic's counters.
type TopicPick = fn(&TopicCounters) -> &AtomicU64;

impl Collector for TopicSeries {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let map = self.map.load();
        let live: HashSet<String> = self.kafko.list_topics().into_iter().collect();
        let mut topics: Vec<(&str, &Sharded<TopicCounters>)> = map
            .iter()
            .filter(|(name, _)| live.contains(&***name))
            .map(|(name, c)| (&**name, &**c))
            .collect();
        topics.sort_unstable_by_key(|(name, _)| *name);
        let families: [(&str, &str, TopicPick); 4] = [
            ("kafko_records_in", "Records appended.", |c| &c.records_in),
            (
                "kafko_bytes_in",
                "Key, value and header bytes appended.",
                |c| &c.bytes_in,
            ),
            ("kafko_records_out", "Records returned to readers.", |c| {
                &c.records_out
            }),
            (
                "kafko_bytes_out",
                "Key, value and header bytes returned.",
                |c| &c.bytes_out,
            ),
        ];
        for (name, help, pick) in families {
            let mut m = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for (topic, c) in &topics {
                let labels = [("topic", *topic)];
                m.encode_family(&labels)?
                    .encode_counter::<NoLabelSet, u64, u64>(
                        &c.all().map(|c| pick(c).load(Ordering::Relaxed)).sum(),
                        None,
                    )?;
            }
        }
        Ok(())
    }
}

/// One partition's figures, read once per scrape.
struct PartitionFigures {
    topic: String,
    partition: String,
    queue_depth: u64,
    high_watermark: u64,
    write_groups: u64,
    appends_written: u64,
}

/// One of a partition's figures.
type PartitionPick = fn(&PartitionFigures) -> u64;

impl Collector for LogSeries {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let kafko = &self.kafko;
        let mut partitions = Vec::new();
        for topic in kafko.list_topics() {
            let Ok(d) = kafko.describe_topic(&topic) else {
                continue;
            };
            for p in d.partitions {
                partitions.push(PartitionFigures {
                    topic: topic.clone(),
                    partition: p.partition.to_string(),
                    queue_depth: p.queue_depth as u64,
                    high_watermark: p.high_watermark,
                    write_groups: p.write_groups,
                    appends_written: p.appends_written,
                });
            }
        }
        let families: [(&str, &str, MetricType, PartitionPick); 4] = [
            (
                "kafko_partition_queue_depth",
                "Appends waiting in the partition's write queue.",
                MetricType::Gauge,
                |p| p.queue_depth,
            ),
            (
                "kafko_partition_high_watermark",
                "One past the last offset.",
                MetricType::Gauge,
                |p| p.high_watermark,
            ),
            (
                "kafko_partition_write_groups",
                "Writes of a write group: each holds the appends queued while the previous one was written.",
                MetricType::Counter,
                |p| p.write_groups,
            ),
            (
                "kafko_partition_appends_written",
                "Appends written; divided by the write groups, the mean group size.",
                MetricType::Counter,
                |p| p.appends_written,
            ),
        ];
        for (name, help, kind, pick) in families {
            let mut m = encoder.encode_descriptor(name, help, None, kind)?;
            for p in &partitions {
                let labels = [("topic", p.topic.as_str()), ("partition", &p.partition)];
                let mut s = m.encode_family(&labels)?;
                match kind {
                    MetricType::Counter => {
                        s.encode_counter::<NoLabelSet, u64, u64>(&pick(p), None)?
                    }
                    _ => s.encode_gauge(&pick(p))?,
                }
            }
        }
        let mut m = encoder.encode_descriptor(
            "kafko_group_lag",
            "Records between a group's committed offsets and the high watermarks, summed over the partitions of the topic it committed on.",
            None,
            MetricType::Gauge,
        )?;
        let mut lags = self.lags.lock().unwrap_or_else(|p| p.into_inner());
        lags.refresh(kafko, LAG_BUDGET);
        for (group, topics) in &lags.lags {
            for (topic, lag) in topics {
                let labels = [("group", group.as_str()), ("topic", topic.as_str())];
                m.encode_family(&labels)?.encode_gauge(lag)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_past_the_slots_share_the_other_series() {
        let routes = Routes::new();
        for i in 0..1000 {
            routes
                .series(&format!("/r/{i}"))
                .histogram(0)
                .observe(Duration::from_millis(1));
        }
        assert_eq!(routes.all().count(), ROUTE_SLOTS + 1);
        let other = routes.other.summed(0).1;
        assert_eq!(other, 1000 - ROUTE_SLOTS as u64);
        assert!(std::ptr::eq(routes.series("/r/5"), routes.series("/r/5")));
        assert_eq!(&*routes.series("/r/5").route, "/r/5");
    }

    #[test]
    fn methods_outside_the_standard_set_count_as_other() {
        let odd = Method::from_bytes(b"M0X0000001QQQQ").unwrap();
        assert_eq!(METHOD_LABELS[method_index(&odd)], "other");
        assert_eq!(METHOD_LABELS[method_index(&Method::PATCH)], "PATCH");
        for (m, label) in METHODS.iter().zip(METHOD_LABELS) {
            assert_eq!(m.as_str(), label);
        }
    }
}
