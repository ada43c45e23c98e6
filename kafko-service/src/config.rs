//! [`ServerConfig`]: every server setting, independent of how it was given (flags,
//! environment, tests).

use std::time::Duration;

use kafko_core::TopicConfig;

/// The cluster id of the REST Proxy API unless one is configured.
pub const DEFAULT_CLUSTER_ID: &str = "kafko";

/// The default of [`ServerConfig::max_tagged_fields`].
pub const DEFAULT_MAX_TAGGED_FIELDS: usize = 1024;

/// Whether producing to an unknown topic creates it, and with what configuration.
#[derive(Debug, Clone)]
pub enum AutoCreate {
    /// Unknown topics answer 404 `topic_not_found`.
    Disabled,
    /// Unknown topics are created with this configuration.
    Enabled(TopicConfig),
}

/// Settings of one server instance.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Largest request body accepted (413 beyond, chunked bodies included).
    pub max_body_bytes: usize,
    /// Largest single record accepted by the server (the topic's limit also applies).
    pub max_record_bytes: usize,
    /// Most records in one produce request (413 `too_many_records` beyond).
    pub max_records_per_request: usize,
    /// Most records one fetch returns (a larger `max_records` is clamped).
    pub max_records_per_fetch: usize,
    /// Most bytes one fetch returns (a larger `max_bytes` is clamped).
    pub max_fetch_bytes: usize,
    /// Longest `wait_ms` honoured by a long-poll.
    pub max_wait: Duration,
    /// Longest time a request may take before the server answers 503 (streams excluded
    /// once their headers are sent).
    pub request_timeout: Duration,
    /// Longest time from accept to the first complete request head (HTTP/1 and h2c
    /// alike); a connection that has not sent one by then is closed.
    pub header_read_timeout: Duration,
    /// Longest time a connection may sit with no request in flight after its first one
    /// (a keep-alive wait, an idle h2c connection, a later head that never completes)
    /// before it is closed.
    pub idle_timeout: Duration,
    /// Connections open at once. Past it, the oldest connection with no request in flight
    /// is closed to make room; when every one is busy, the newcomer is answered 503.
    pub max_connections: usize,
    /// Longest pause allowed between two pieces of a request body (answered 408). A
    /// stalled upload would otherwise hold one of `max_concurrent_requests` until
    /// `request_timeout`.
    pub body_read_timeout: Duration,
    /// How long shutdown waits for in-flight requests before closing them.
    pub shutdown_grace: Duration,
    /// Requests handled at once; beyond this the server answers 503 with `Retry-After`.
    /// Long-polls are counted under `max_waiting_requests` instead.
    pub max_concurrent_requests: usize,
    /// Long-polls (`wait_ms` > 0, and REST Proxy records reads) handled at once, a limit
    /// of their own so that waiting requests never take every permit of
    /// `max_concurrent_requests`; beyond, 503 (the REST Proxy's reads: 429).
    pub max_waiting_requests: usize,
    /// Bytes that record answers built in memory (fetches, group polls, REST Proxy
    /// reads) may hold together, from before the log is read until the body is sent or
    /// dropped; a read that finds no room within 0.5 s is answered 503 `overloaded`
    /// (the REST Proxy's: 429), so clients that do not read pin at most this much.
    pub max_answer_buffer_bytes: usize,
    /// Bearer token required on every route except the probes, if set.
    pub auth_token: Option<String>,
    /// Largest Kafka frame read before SASL authentication (Kafka's
    /// `sasl.server.max.receive.size`); a larger size prefix closes the connection.
    pub sasl_max_receive_bytes: usize,
    /// Bytes of Kafka request frames read and not yet handled, together (Kafka's
    /// `queued.max.request.bytes`); past it a connection waits before reading its next
    /// large frame.
    pub queued_max_request_bytes: usize,
    /// How long a failed SASL authentication waits before its answer and the close
    /// (Kafka's `connection.failed.authentication.delay.ms`).
    pub failed_auth_delay: Duration,
    /// Origins allowed by CORS; empty disables CORS.
    pub cors_origins: Vec<String>,
    /// Auto-creation of topics on produce.
    pub auto_create: AutoCreate,
    /// The cluster id the Kafka REST Proxy API (v3) reports and accepts.
    pub cluster_id: String,
    /// How long an unused REST Proxy consumer instance lives before it expires.
    pub consumer_instance_timeout: Duration,
    /// How long an idempotent producer's id is kept with no produce (Kafka's
    /// `producer.id.expiration.ms`).
    pub producer_id_expiration: Duration,
    /// Idempotent producer ids kept at most; past it the oldest never used, then the
    /// least recently producing if idle 5 minutes, is forgotten for a new one.
    pub max_producer_ids: usize,
    /// The base of the absolute URLs the REST Proxy API answers with (v2 `base_uri`, v3
    /// `metadata.self` and links), as [`public_url`] normalizes it: how clients reach
    /// the server (behind a proxy, a load balancer). Unset, the request's `Host` is
    /// used, once checked to be a plain `host[:port]`.
    pub public_url: Option<String>,
    /// Tagged fields one Kafka request body may hold in all (`--max-tagged-fields`); a
    /// request with more is malformed and its connection closed, as Kafka closes one it
    /// cannot parse. The decoder keeps each unknown one, ~70 bytes for 2 sent.
    pub max_tagged_fields: usize,
}

/// Checks and normalizes a public base URL: `http://` or `https://`, a host (a name, an
/// IPv4 address or a bracketed IPv6 one) with an optional port, an optional path, and
/// nothing else (no user info, query or fragment); a trailing `/` is dropped.
///
/// # Errors
///
/// What is wrong with `raw`, for the operator.
pub fn public_url(raw: &str) -> Result<String, String> {
    let bad = |why: &str| format!("--public-url '{raw}': {why}");
    let (scheme, rest) = raw
        .split_once("://")
        .ok_or_else(|| bad("expected http://host[:port][/path]"))?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return Err(bad("the scheme must be http or https"));
    }
    let (authority, path) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));
    if !is_host_and_port(authority) {
        return Err(bad("expected a host and an optional port after the scheme"));
    }
    if !path
        .bytes()
        .all(|b| b.is_ascii_graphic() && b != b'?' && b != b'#')
    {
        return Err(bad(
            "the path may hold no query, fragment, space or non-ASCII byte",
        ));
    }
    Ok(format!(
        "{scheme}://{authority}{}",
        path.trim_end_matches('/')
    ))
}

/// Whether `s` is a plain `host[:port]`: a name of letters, digits, `-`, `_` and `.`,
/// or a bracketed IPv6 address, then optionally `:` and a port (0-65535); nothing else.
pub fn is_host_and_port(s: &str) -> bool {
    let is_port = |p: &str| {
        (1..=5).contains(&p.len())
            && p.bytes().all(|b| b.is_ascii_digit())
            && p.parse::<u32>().is_ok_and(|n| n <= 65535)
    };
    let (host, port) = match s.strip_prefix('[') {
        Some(rest) => {
            return match rest.split_once(']') {
                Some((v6, after)) if v6.parse::<std::net::Ipv6Addr>().is_ok() => {
                    after.is_empty() || after.strip_prefix(':').is_some_and(is_port)
                }
                _ => false,
            };
        }
        None => s.rsplit_once(':').map_or((s, None), |(h, p)| (h, Some(p))),
    };
    (1..=253).contains(&host.len())
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && port.is_none_or(is_port)
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_body_bytes: 16 * 1024 * 1024,
            max_record_bytes: 1024 * 1024,
            max_records_per_request: 1_000_000,
            max_records_per_fetch: 10_000,
            max_fetch_bytes: 16 * 1024 * 1024,
            max_wait: Duration::from_secs(30),
            request_timeout: Duration::from_secs(60),
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_connections: crate::descriptors::default_max_connections(),
            body_read_timeout: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(10),
            max_concurrent_requests: 1024,
            max_waiting_requests: 1024,
            max_answer_buffer_bytes: 256 * 1024 * 1024,
            auth_token: None,
            sasl_max_receive_bytes: 512 * 1024,
            failed_auth_delay: Duration::from_millis(100),
            queued_max_request_bytes: 256 * 1024 * 1024,
            cors_origins: Vec::new(),
            auto_create: AutoCreate::Enabled(TopicConfig::default()),
            cluster_id: DEFAULT_CLUSTER_ID.to_owned(),
            consumer_instance_timeout: Duration::from_secs(300),
            producer_id_expiration: Duration::from_secs(24 * 3600),
            max_producer_ids: 100_000,
            public_url: None,
            max_tagged_fields: DEFAULT_MAX_TAGGED_FIELDS,
        }
    }
}

/// The limits of Kafka clients' consumer groups (`--group-*` flags), named after Kafka's
/// broker settings where Kafka has one; see [`kafko_core::GroupLimits`].
#[derive(Debug, Clone, clap::Args)]
pub struct GroupFlags {
    /// Shortest session timeout a JoinGroup may ask, ms (Kafka's
    /// `group.min.session.timeout.ms`); shorter is INVALID_SESSION_TIMEOUT. 1 ms by
    /// default, where Kafka's is 6 s: test suites use short sessions (kafka-python's 3 s),
    /// and a short session costs only its own group rebalances.
    #[arg(long, env = "KAFKO_GROUP_MIN_SESSION_TIMEOUT_MS", default_value_t = 1)]
    pub group_min_session_timeout_ms: u64,
    /// Longest session timeout a JoinGroup may ask, ms (Kafka's
    /// `group.max.session.timeout.ms`); longer is INVALID_SESSION_TIMEOUT, and a longer
    /// rebalance timeout is cut to it.
    #[arg(
        long,
        env = "KAFKO_GROUP_MAX_SESSION_TIMEOUT_MS",
        default_value_t = 1_800_000
    )]
    pub group_max_session_timeout_ms: u64,
    /// Members of one group (Kafka's `group.max.size`); past it GROUP_MAX_SIZE_REACHED.
    #[arg(long, env = "KAFKO_GROUP_MAX_SIZE", default_value_t = 1_000)]
    pub group_max_size: usize,
    /// Protocols (assignors) one JoinGroup may offer; more is INVALID_REQUEST.
    #[arg(long, env = "KAFKO_GROUP_MAX_PROTOCOLS", default_value_t = 32)]
    pub group_max_protocols: usize,
    /// Bytes of one member's join (protocol metadata, ids) and of its assignment; past
    /// it GROUP_MAX_SIZE_REACHED.
    #[arg(long, env = "KAFKO_GROUP_MAX_MEMBER_BYTES", default_value_t = 1024 * 1024)]
    pub group_max_member_bytes: usize,
    /// Bytes the members of one group hold together; past it GROUP_MAX_SIZE_REACHED.
    #[arg(long, env = "KAFKO_GROUP_MAX_BYTES", default_value_t = 16 * 1024 * 1024)]
    pub group_max_bytes: usize,
    /// Bytes the members of all groups hold together; past it GROUP_MAX_SIZE_REACHED.
    #[arg(long, env = "KAFKO_GROUPS_MAX_BYTES", default_value_t = 256 * 1024 * 1024)]
    pub groups_max_bytes: usize,
    /// Member ids handed out by JoinGroup's handshake and not joined yet, over all
    /// groups (each also expires with its join's session timeout); past it members join
    /// without the handshake.
    #[arg(
        long,
        env = "KAFKO_GROUPS_MAX_PENDING_MEMBERS",
        default_value_t = 100_000
    )]
    pub groups_max_pending_members: usize,
    /// Longest metadata string of a committed offset (Kafka's
    /// `offset.metadata.max.bytes`); longer is OFFSET_METADATA_TOO_LARGE.
    #[arg(long, env = "KAFKO_OFFSET_METADATA_MAX_BYTES", default_value_t = 4096)]
    pub offset_metadata_max_bytes: usize,
    /// Bytes that groups holding nothing on disk may take together; past it the least
    /// recently used are forgotten before --idle-group-timeout-ms.
    #[arg(long, env = "KAFKO_IDLE_GROUPS_MAX_BYTES", default_value_t = 64 * 1024 * 1024)]
    pub idle_groups_max_bytes: usize,
    /// How long a member of a consumer group of Kafka's consumer protocol (KIP-848)
    /// may be silent before it is removed (Kafka's
    /// `group.consumer.session.timeout.ms`).
    #[arg(
        long,
        env = "KAFKO_GROUP_CONSUMER_SESSION_TIMEOUT_MS",
        default_value_t = 45_000,
        value_parser = clap::value_parser!(u64).range(1..=1_800_000)
    )]
    pub group_consumer_session_timeout_ms: u64,
    /// How often members of such groups heartbeat (Kafka's
    /// `group.consumer.heartbeat.interval.ms`).
    #[arg(
        long,
        env = "KAFKO_GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS",
        default_value_t = 5_000,
        value_parser = clap::value_parser!(u64).range(1..=1_800_000)
    )]
    pub group_consumer_heartbeat_interval_ms: u64,
}

impl GroupFlags {
    /// The limits these flags set.
    pub fn limits(&self) -> kafko_core::GroupLimits {
        kafko_core::GroupLimits {
            min_session_timeout: Duration::from_millis(self.group_min_session_timeout_ms),
            max_session_timeout: Duration::from_millis(self.group_max_session_timeout_ms),
            max_size: self.group_max_size,
            max_protocols: self.group_max_protocols,
            max_member_bytes: self.group_max_member_bytes,
            max_group_bytes: self.group_max_bytes,
            max_total_bytes: self.groups_max_bytes,
            max_pending_member_ids: self.groups_max_pending_members,
            offset_metadata_max_bytes: self.offset_metadata_max_bytes,
            max_idle_group_bytes: self.idle_groups_max_bytes,
            consumer_session_timeout: Duration::from_millis(self.group_consumer_session_timeout_ms),
            consumer_heartbeat_interval: Duration::from_millis(
                self.group_consumer_heartbeat_interval_ms,
            ),
        }
    }
}
