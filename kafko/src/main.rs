//! The `kafko` binary: flags (each with a `KAFKO_*` environment twin), logging, binding
//! the HTTP and Kafka listeners, opening the log, serving every front end until
//! SIGTERM/SIGINT/`POST /v1/admin/shutdown`, then shutting the log down;
//! the schema registry is served on its own listener and on the HTTP one;
//! `--healthcheck` probes a running server instead (for container HEALTHCHECKs).
//!
//! - `start`: [`StartError`], why the server could not start or stop cleanly;
//! - `signals`: SIGTERM and SIGINT begin the graceful shutdown.

// Bad input and I/O failures answer with a problem, never a panic (tests may unwrap:
// clippy.toml).
#![deny(clippy::unwrap_used, clippy::expect_used)]
// Curated pedantic lints: no silently truncating cast, every fallible public fn says
// how it fails, no `async` without an await.
#![deny(
    clippy::cast_possible_truncation,
    clippy::missing_errors_doc,
    clippy::unused_async
)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{ArgAction, Parser, ValueEnum};
use kafko_core::{Compression, FsyncPolicy, Kafko, TopicConfig};
use kafko_http::AppState;
use kafko_service::{AutoCreate, ServerConfig, Service};

mod signals;
mod start;

use start::StartError;

#[derive(Debug, Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum CompressionArg {
    Producer,
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

/// kafko: a durable single-node log with Kafka semantics, served over HTTP (`/v1`, the
/// Kafka REST Proxy, a web console) and the Kafka wire protocol.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, env = "KAFKO_BIND", default_value = "127.0.0.1:8080")]
    bind: String,
    /// Address of the Kafka wire protocol (port 0 picks a free port; `off` serves no
    /// Kafka): Kafka clients use this server as their broker.
    #[arg(long, env = "KAFKO_KAFKA_BIND", default_value = "127.0.0.1:9092")]
    kafka_bind: String,
    /// Address of the schema registry (Confluent Schema Registry's API, also served on
    /// --bind; port 0 picks a free port; `off` serves it on --bind only): the
    /// serializers' `schema.registry.url`.
    #[arg(
        long,
        env = "KAFKO_SCHEMA_REGISTRY_BIND",
        default_value = "127.0.0.1:8081"
    )]
    schema_registry_bind: String,
    /// Largest schema the registry accepts, bytes.
    #[arg(long, env = "KAFKO_SCHEMA_REGISTRY_MAX_SCHEMA_BYTES", default_value_t = 1024 * 1024)]
    schema_registry_max_schema_bytes: usize,
    /// Most subjects the registry holds.
    #[arg(
        long,
        env = "KAFKO_SCHEMA_REGISTRY_MAX_SUBJECTS",
        default_value_t = 10_000
    )]
    schema_registry_max_subjects: usize,
    /// Most versions of one subject.
    #[arg(
        long,
        env = "KAFKO_SCHEMA_REGISTRY_MAX_VERSIONS",
        default_value_t = 1_000
    )]
    schema_registry_max_versions: usize,
    /// Most schemas one schema references, directly or not.
    #[arg(
        long,
        env = "KAFKO_SCHEMA_REGISTRY_MAX_REFERENCES",
        default_value_t = 100
    )]
    schema_registry_max_references: usize,
    /// Most schema bytes one compatibility check compares (the new schema and each
    /// version it is checked against, summed).
    #[arg(
        long,
        env = "KAFKO_SCHEMA_REGISTRY_MAX_COMPATIBILITY_BYTES",
        default_value_t = 64 * 1024 * 1024
    )]
    schema_registry_max_compatibility_bytes: usize,
    /// The host:port Kafka clients are told to connect to (Metadata) [default: the
    /// --kafka-bind address as bound, 127.0.0.1 for an unspecified IP].
    #[arg(long, env = "KAFKO_KAFKA_ADVERTISED_ADDR")]
    kafka_advertised_addr: Option<String>,
    /// Data directory (created if missing).
    #[arg(long, env = "KAFKO_DATA_DIR", default_value = "./kafko-data")]
    data_dir: PathBuf,
    /// Largest request body in bytes (413 beyond, chunked bodies too).
    #[arg(long, env = "KAFKO_MAX_BODY_BYTES", default_value_t = 16 * 1024 * 1024)]
    max_body_bytes: usize,
    /// Largest record (key + value + headers) in bytes.
    #[arg(long, env = "KAFKO_MAX_RECORD_BYTES", default_value_t = 1024 * 1024)]
    max_record_bytes: usize,
    /// Most records in one produce request (413 beyond).
    #[arg(
        long,
        env = "KAFKO_MAX_RECORDS_PER_REQUEST",
        default_value_t = 1_000_000
    )]
    max_records_per_request: usize,
    /// Most records one fetch returns.
    #[arg(long, env = "KAFKO_MAX_RECORDS_PER_FETCH", default_value_t = 10_000)]
    max_records_per_fetch: usize,
    /// Most bytes one fetch returns.
    #[arg(long, env = "KAFKO_MAX_FETCH_BYTES", default_value_t = 16 * 1024 * 1024)]
    max_fetch_bytes: usize,
    /// Longest long-poll `wait_ms` honoured.
    #[arg(long, env = "KAFKO_MAX_WAIT_MS", default_value_t = 30_000)]
    max_wait_ms: u64,
    /// Time limit to the response head of a request, ms.
    #[arg(long, env = "KAFKO_REQUEST_TIMEOUT_MS", default_value_t = 60_000)]
    request_timeout_ms: u64,
    /// Time limit from accept to the first complete request head, ms.
    #[arg(long, env = "KAFKO_HEADER_READ_TIMEOUT_MS", default_value_t = 10_000)]
    header_read_timeout_ms: u64,
    /// Close a connection after this long with no request in flight, ms.
    #[arg(long, env = "KAFKO_IDLE_TIMEOUT_MS", default_value_t = 60_000)]
    idle_timeout_ms: u64,
    /// Connections open at once; past it the oldest idle one is closed, or, when all
    /// are busy, the newcomer is answered 503 [default: the open-files limit minus a
    /// quarter kept for the log].
    #[arg(long, env = "KAFKO_MAX_CONNECTIONS")]
    max_connections: Option<usize>,
    /// Longest pause between two pieces of a request body before a 408, ms.
    #[arg(long, env = "KAFKO_BODY_READ_TIMEOUT_MS", default_value_t = 10_000)]
    body_read_timeout_ms: u64,
    /// How long shutdown waits for in-flight requests, ms.
    #[arg(long, env = "KAFKO_SHUTDOWN_GRACE_MS", default_value_t = 10_000)]
    shutdown_grace_ms: u64,
    /// Requests handled at once; beyond, 503 with Retry-After.
    #[arg(long, env = "KAFKO_MAX_CONCURRENT_REQUESTS", default_value_t = 1024)]
    max_concurrent_requests: usize,
    /// Long-polls (`wait_ms` > 0, REST Proxy records reads) handled at once, apart from
    /// the limit above; beyond, 503 (REST Proxy: 429).
    #[arg(long, env = "KAFKO_MAX_WAITING_REQUESTS", default_value_t = 1024)]
    max_waiting_requests: usize,
    /// How long a consumer group with nothing on disk (never configured, nothing
    /// committed) and no live member is kept after its last join, poll, commit or seek, ms.
    #[arg(long, env = "KAFKO_IDLE_GROUP_TIMEOUT_MS", default_value_t = 30_000)]
    idle_group_timeout_ms: u64,
    /// How long a consumer group with no live member keeps a committed offset after its
    /// commit and after its last member, minutes (Kafka's `offsets.retention.minutes`);
    /// 0 keeps offsets until their group or topic is deleted.
    #[arg(
        long,
        env = "KAFKO_OFFSETS_RETENTION_MINUTES",
        default_value_t = 10_080
    )]
    offsets_retention_minutes: u64,
    /// How often retention and compaction run over every partition, ms (Kafka's
    /// `log.retention.check.interval.ms`).
    #[arg(
        long,
        env = "KAFKO_LOG_RETENTION_CHECK_INTERVAL_MS",
        default_value_t = 30_000,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    log_retention_check_interval_ms: u64,
    /// Descriptors of sealed segments kept open; beyond, the least recently read are
    /// closed and opened again when read (each partition also keeps its active segment
    /// open) [default: an eighth of the open-files limit, at most 512].
    #[arg(long, env = "KAFKO_MAX_OPEN_SEGMENT_FILES")]
    max_open_segment_files: Option<usize>,
    /// Most topics; a create (or an auto-create) past it is answered 409 `limit_reached`
    /// [default: as --max-partitions].
    #[arg(long, env = "KAFKO_MAX_TOPICS")]
    max_topics: Option<u64>,
    /// Most partitions of all topics together; a create that would pass it is answered
    /// 409 `limit_reached` [default: each keeps a descriptor open: the quarter of the
    /// open-files limit kept for the log, less --max-open-segment-files and 32].
    #[arg(long, env = "KAFKO_MAX_PARTITIONS")]
    max_partitions: Option<u64>,
    /// Most consumer groups; a call that would create one more (a join, poll, commit,
    /// seek; a REST Proxy consumer) is answered 409 `limit_reached` [default: unlimited].
    #[arg(long, env = "KAFKO_MAX_GROUPS")]
    max_groups: Option<u64>,
    #[command(flatten)]
    groups: kafko_service::config::GroupFlags,
    /// Bytes that record answers built in memory (fetches, group polls, REST Proxy
    /// reads) may hold together until sent; a read with no room within 0.5 s is
    /// answered 503 `overloaded` (REST Proxy: 429), with Retry-After.
    #[arg(long, env = "KAFKO_MAX_ANSWER_BUFFER_BYTES", default_value_t = 256 * 1024 * 1024)]
    max_answer_buffer_bytes: usize,
    /// Tagged fields one Kafka request may hold in all; past it the request is
    /// malformed and its connection closed (no client sends unknown ones).
    #[arg(long, env = "KAFKO_MAX_TAGGED_FIELDS", default_value_t = kafko_service::DEFAULT_MAX_TAGGED_FIELDS)]
    max_tagged_fields: usize,
    /// Require `Authorization: Bearer <token>` (probes and the web console's files excepted).
    #[arg(long, env = "KAFKO_AUTH_TOKEN", hide_env_values = true)]
    auth_token: Option<String>,
    /// Largest Kafka frame read before SASL authentication, bytes (Kafka's
    /// `sasl.server.max.receive.size`); a larger one closes its connection.
    #[arg(long, env = "KAFKO_SASL_SERVER_MAX_RECEIVE_SIZE", default_value_t = 512 * 1024)]
    sasl_server_max_receive_size: usize,
    /// Delay before the answer to a failed SASL authentication and the close, ms
    /// (Kafka's `connection.failed.authentication.delay.ms`).
    #[arg(
        long,
        env = "KAFKO_CONNECTION_FAILED_AUTHENTICATION_DELAY_MS",
        default_value_t = 100
    )]
    connection_failed_authentication_delay_ms: u64,
    /// Bytes of Kafka request frames read and not yet handled, together (Kafka's
    /// `queued.max.request.bytes`); past it a connection waits before reading its next
    /// frame larger than 64 KiB.
    #[arg(long, env = "KAFKO_QUEUED_MAX_REQUEST_BYTES", default_value_t = 256 * 1024 * 1024)]
    queued_max_request_bytes: usize,
    /// Origins allowed by CORS, comma-separated (CORS is off when empty).
    #[arg(long, env = "KAFKO_CORS_ORIGINS", value_delimiter = ',')]
    cors_origins: Vec<String>,
    /// Create unknown topics on produce.
    #[arg(long, env = "KAFKO_AUTO_CREATE", default_value_t = true, action = ArgAction::Set)]
    auto_create: bool,
    /// Partitions of auto-created topics.
    #[arg(long, env = "KAFKO_DEFAULT_PARTITIONS", default_value_t = 1)]
    default_partitions: u32,
    /// Compression of auto-created topics.
    #[arg(
        long,
        env = "KAFKO_DEFAULT_COMPRESSION",
        value_enum,
        default_value = "producer"
    )]
    default_compression: CompressionArg,
    /// fsync policy of auto-created topics: `never`, `always`, or an interval in ms.
    #[arg(long, env = "KAFKO_DEFAULT_FSYNC", default_value = "never")]
    default_fsync: String,
    /// Cluster id reported and accepted by the Kafka REST Proxy API (`/v3/clusters/{id}`).
    #[arg(long, env = "KAFKO_CLUSTER_ID", default_value = kafko_service::DEFAULT_CLUSTER_ID)]
    cluster_id: String,
    /// How long an unused REST Proxy consumer instance lives (its
    /// `consumer.instance.timeout.ms`), ms.
    #[arg(
        long,
        env = "KAFKO_CONSUMER_INSTANCE_TIMEOUT_MS",
        default_value_t = 300_000
    )]
    consumer_instance_timeout_ms: u64,
    /// How long a partition keeps an idempotent producer's state after its last batch's
    /// timestamp, and an issued id with no produce (Kafka's `producer.id.expiration.ms`),
    /// ms.
    #[arg(
        long,
        env = "KAFKO_PRODUCER_ID_EXPIRATION_MS",
        default_value_t = 86_400_000
    )]
    producer_id_expiration_ms: u64,
    /// Idempotent producer ids kept at most; a new one past it evicts the oldest never
    /// used, else the least recently producing if idle 5 minutes (else InitProducerId
    /// answers the retriable COORDINATOR_LOAD_IN_PROGRESS).
    #[arg(long, env = "KAFKO_MAX_PRODUCER_IDS", default_value_t = 100_000)]
    max_producer_ids: usize,
    /// The longest transaction timeout a transactional producer may ask for (Kafka's
    /// `transaction.max.timeout.ms`), ms.
    #[arg(
        long,
        env = "KAFKO_TRANSACTION_MAX_TIMEOUT_MS",
        default_value_t = 900_000
    )]
    transaction_max_timeout_ms: u64,
    /// How long a transactional id with no transaction and no request is kept (Kafka's
    /// `transactional.id.expiration.ms`), ms.
    #[arg(
        long,
        env = "KAFKO_TRANSACTIONAL_ID_EXPIRATION_MS",
        default_value_t = 604_800_000
    )]
    transactional_id_expiration_ms: u64,
    /// How often open transactions are checked against their timeout, and
    /// transactional ids for expiry (Kafka's
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms`), ms.
    #[arg(
        long,
        env = "KAFKO_TRANSACTION_ABORT_CHECK_INTERVAL_MS",
        default_value_t = 10_000
    )]
    transaction_abort_check_interval_ms: u64,
    /// Transactional ids kept at most; InitProducerId for a new one past it is refused.
    #[arg(long, env = "KAFKO_MAX_TRANSACTIONAL_IDS", default_value_t = 10_000)]
    max_transactional_ids: usize,
    /// Partitions, groups and offsets one transaction may hold at most.
    #[arg(
        long,
        env = "KAFKO_MAX_PARTITIONS_PER_TRANSACTION",
        default_value_t = 10_000
    )]
    max_partitions_per_transaction: usize,
    /// The base URL clients reach this server at, for the absolute URLs of REST Proxy
    /// answers (`base_uri`, v3 `metadata.self`), e.g. `https://kafko.example.com`;
    /// unset, the request's `Host` (a plain `host[:port]`, else 400).
    #[arg(long, env = "KAFKO_PUBLIC_URL")]
    public_url: Option<String>,
    /// Log filter (tracing-subscriber env-filter syntax), e.g. `info` or `kafko_core=debug`.
    #[arg(long, env = "KAFKO_LOG_LEVEL", default_value = "info")]
    log_level: String,
    /// Log format on stderr.
    #[arg(long, env = "KAFKO_LOG_FORMAT", value_enum, default_value = "text")]
    log_format: LogFormat,
    /// Print the OpenAPI document and exit.
    #[arg(long)]
    print_openapi: bool,
    /// Probe `GET /healthz` on the --bind address (0.0.0.0 means loopback) and exit 0 if
    /// it answers 200, 1 otherwise: a container HEALTHCHECK without curl.
    #[arg(long)]
    healthcheck: bool,
}

impl Args {
    fn transaction_limits(&self) -> kafko_core::TransactionLimits {
        let ms = |v: u64| Duration::from_millis(v.max(1));
        kafko_core::TransactionLimits {
            max_timeout: ms(self.transaction_max_timeout_ms),
            id_expiration: ms(self.transactional_id_expiration_ms),
            abort_check_interval: ms(self.transaction_abort_check_interval_ms),
            max_transactional_ids: self.max_transactional_ids.max(1),
            max_partitions_per_transaction: self.max_partitions_per_transaction.max(1),
        }
    }

    fn registry_limits(&self) -> kafko_registry::Limits {
        kafko_registry::Limits {
            max_schema_bytes: self.schema_registry_max_schema_bytes.max(1),
            max_subjects: self.schema_registry_max_subjects,
            max_versions_per_subject: self.schema_registry_max_versions,
            max_references: self.schema_registry_max_references,
            max_compatibility_bytes: self.schema_registry_max_compatibility_bytes,
            ..kafko_registry::Limits::default()
        }
    }

    fn server_config(&self) -> Result<ServerConfig, String> {
        let fsync = match self.default_fsync.as_str() {
            "never" => FsyncPolicy::Never,
            "always" => FsyncPolicy::Always,
            ms => FsyncPolicy::IntervalMs {
                interval_ms: ms.parse().map_err(|_| {
                    format!("--default-fsync: expected never, always or ms, got '{ms}'")
                })?,
            },
        };
        let topic = TopicConfig {
            partitions: self.default_partitions,
            compression: match self.default_compression {
                CompressionArg::Producer => Compression::Producer,
                CompressionArg::None => Compression::None,
                CompressionArg::Gzip => Compression::Gzip,
                CompressionArg::Snappy => Compression::Snappy,
                CompressionArg::Lz4 => Compression::Lz4,
                CompressionArg::Zstd => Compression::Zstd,
            },
            fsync,
            ..TopicConfig::default()
        };
        topic
            .validate()
            .map_err(|e| format!("default topic config: {e}"))?;
        let ms = Duration::from_millis;
        Ok(ServerConfig {
            max_body_bytes: self.max_body_bytes,
            max_record_bytes: self.max_record_bytes,
            max_records_per_request: self.max_records_per_request.max(1),
            max_records_per_fetch: self.max_records_per_fetch.max(1),
            max_fetch_bytes: self.max_fetch_bytes.max(1),
            max_wait: ms(self.max_wait_ms),
            request_timeout: ms(self.request_timeout_ms),
            header_read_timeout: ms(self.header_read_timeout_ms),
            idle_timeout: ms(self.idle_timeout_ms),
            max_connections: self
                .max_connections
                .unwrap_or_else(kafko_service::descriptors::default_max_connections),
            body_read_timeout: ms(self.body_read_timeout_ms),
            shutdown_grace: ms(self.shutdown_grace_ms),
            max_concurrent_requests: self.max_concurrent_requests,
            max_waiting_requests: self.max_waiting_requests,
            max_answer_buffer_bytes: self.max_answer_buffer_bytes,
            auth_token: self.auth_token.clone().filter(|t| !t.is_empty()),
            sasl_max_receive_bytes: self.sasl_server_max_receive_size,
            failed_auth_delay: ms(self.connection_failed_authentication_delay_ms),
            queued_max_request_bytes: self.queued_max_request_bytes,
            cors_origins: self
                .cors_origins
                .iter()
                .filter(|o| !o.is_empty())
                .cloned()
                .collect(),
            auto_create: if self.auto_create {
                AutoCreate::Enabled(topic)
            } else {
                AutoCreate::Disabled
            },
            cluster_id: self.cluster_id.clone(),
            consumer_instance_timeout: ms(self.consumer_instance_timeout_ms.max(1)),
            producer_id_expiration: ms(self.producer_id_expiration_ms.max(1)),
            max_producer_ids: self.max_producer_ids.max(1),
            public_url: self
                .public_url
                .as_deref()
                .filter(|u| !u.is_empty())
                .map(kafko_service::config::public_url)
                .transpose()?,
            max_tagged_fields: self.max_tagged_fields,
        })
    }
}

fn init_logging(args: &Args) {
    let filter = tracing_subscriber::EnvFilter::try_new(&args.log_level)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    match args.log_format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

async fn run(args: Args) -> Result<(), StartError> {
    let config = args.server_config().map_err(StartError::Config)?;
    // Both listeners before the log: a taken port fails at once, before the data
    // directory is opened (and locked) at all.
    let http = bind(&args.bind, "--bind").await?;
    let kafka = match args.kafka_bind.as_str() {
        "" | "off" => None,
        addr => Some(bind(addr, "--kafka-bind").await?),
    };
    let schema_registry = match args.schema_registry_bind.as_str() {
        "" | "off" => None,
        addr => Some(bind(addr, "--schema-registry-bind").await?),
    };
    let open_segment_files = args
        .max_open_segment_files
        .unwrap_or_else(kafko_service::descriptors::default_max_open_segment_files);
    let kafko = Kafko::builder(&args.data_dir)
        .idle_group_timeout(Duration::from_millis(args.idle_group_timeout_ms))
        .retention_check_interval(Duration::from_millis(args.log_retention_check_interval_ms))
        .offsets_retention(
            (args.offsets_retention_minutes > 0)
                .then(|| Duration::from_secs(args.offsets_retention_minutes.saturating_mul(60))),
        )
        .max_open_segment_files(open_segment_files)
        .max_topics(
            args.max_topics
                .or_else(|| kafko_service::descriptors::default_max_topics(open_segment_files)),
        )
        .max_partitions(
            args.max_partitions
                .or_else(|| kafko_service::descriptors::default_max_partitions(open_segment_files)),
        )
        .max_groups(args.max_groups)
        .group_limits(args.groups.limits())
        .producer_id_expiration(Duration::from_millis(args.producer_id_expiration_ms.max(1)))
        .transactions(args.transaction_limits())
        .open()
        .await
        .map_err(StartError::Open)?;
    let registry = kafko_registry::Registry::open(&kafko, args.registry_limits())
        .map_err(StartError::Registry)?;
    let service = Service::new(kafko, config);
    if let Some(listener) = kafka {
        let advertised = advertised(&listener, args.kafka_advertised_addr.as_deref())?;
        // Before the HTTP line, which tells scripts the server is up.
        println!("kafka listening on {}", listener.local_addr()?);
        tokio::spawn(kafko_kafka::serve(listener, advertised, service.clone()));
    }
    let data = std::fs::canonicalize(&args.data_dir).unwrap_or_else(|_| args.data_dir.clone());
    let state = AppState::new(service.clone());
    let registry_routes = kafko_registry::http::routes(registry);
    let mut registry_task = None;
    if let Some(listener) = schema_registry {
        // Before the HTTP line, which tells scripts the server is up.
        println!(
            "schema registry listening on http://{}",
            listener.local_addr()?
        );
        let router = kafko_http::envelope(
            &state,
            registry_routes
                .clone()
                .fallback(kafko_registry::http::not_found),
        );
        registry_task = Some(tokio::spawn(kafko_http::server::serve_app(
            listener,
            state.clone(),
            router,
        )));
    }
    println!("listening on http://{}", http.local_addr()?);
    println!("data directory {}", data.display());
    tokio::spawn(signals::shutdown_on_signals(service.clone()));
    let app = kafko_http::app_with(
        state.clone(),
        registry_routes,
        kafko_registry::http::openapi,
    );
    kafko_http::server::serve_app(http, state, app).await;
    if let Some(task) = registry_task {
        // Shutdown has begun: its connections finish within the same grace.
        let _ = task.await;
    }
    service
        .kafko
        .shutdown()
        .await
        .map_err(StartError::Shutdown)?;
    tracing::info!("log shut down cleanly");
    Ok(())
}

/// Binds `addr`, given by `flag`; a taken port names the flag that moves it.
async fn bind(addr: &str, flag: &'static str) -> Result<tokio::net::TcpListener, StartError> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| StartError::Bind {
            addr: addr.to_owned(),
            flag,
            source,
        })
}

/// The address Kafka clients are told to connect to: `--kafka-advertised-addr`, else
/// the bound one (loopback for an unspecified IP).
fn advertised(
    listener: &tokio::net::TcpListener,
    given: Option<&str>,
) -> Result<kafko_kafka::Advertised, StartError> {
    if let Some(a) = given.filter(|a| !a.is_empty()) {
        return kafko_kafka::Advertised::parse(a)
            .map_err(|e| StartError::Config(format!("--kafka-advertised-addr {e}")));
    }
    let local = listener.local_addr()?;
    Ok(kafko_kafka::Advertised {
        host: if local.ip().is_unspecified() {
            "127.0.0.1".to_owned()
        } else {
            local.ip().to_string()
        },
        port: local.port(),
    })
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    if args.print_openapi {
        print!(
            "{}",
            kafko_http::openapi::json_with(kafko_registry::http::openapi())
        );
        return ExitCode::SUCCESS;
    }
    if args.healthcheck {
        return match kafko_http::probe::healthz(&args.bind, Duration::from_secs(3)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("kafko --healthcheck: {e}");
                ExitCode::FAILURE
            }
        };
    }
    init_logging(&args);
    // Before any default is derived from the limit.
    match kafko_service::descriptors::raise_nofile_limit() {
        Ok(limit) => tracing::debug!(limit, "open-files limit"),
        Err(e) => tracing::warn!(error = %e, "the open-files limit could not be raised"),
    }
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "kafko failed");
            eprintln!("kafko: {e}");
            ExitCode::FAILURE
        }
    }
}
