//! Test harness: starts the real `kafko` binary on an ephemeral loopback port with
//! a temporary data directory, and small HTTP helpers (reqwest, plus raw TCP for paths
//! a URL library would normalize).

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use reqwest::{Client, Response};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

// The test storage layers and on-disk readers the library's tests use too: the
// in-process server's tests inject faults and read the files the same way.
#[allow(unused_imports)] // each test binary uses some of them
pub use kafko_test_support::{failing_appends, gate, interposed, on_disk};

pub mod kafka;
pub mod small_disk;

/// A running server process.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT`
    pub base: String,
    /// `127.0.0.1:PORT`
    pub addr: String,
    /// The Kafka listener's `127.0.0.1:PORT`, when started with `--kafka-bind`.
    pub kafka: Option<String>,
    /// The schema registry's own listener, `http://127.0.0.1:PORT`, when started with
    /// `--schema-registry-bind`.
    pub registry: Option<String>,
    pub dir: PathBuf,
}

impl Server {
    /// Starts the binary on `dir` with extra flags and waits until it listens.
    pub async fn start(dir: &Path, extra: &[&str]) -> Server {
        Self::start_env(dir, extra, &[]).await
    }

    /// [`start`](Self::start) with extra environment variables.
    pub async fn start_env(dir: &Path, extra: &[&str], envs: &[(&str, &str)]) -> Server {
        Self::launch(Command::new(env!("CARGO_BIN_EXE_kafko")), dir, extra, envs).await
    }

    /// [`start`](Self::start) under an open-files limit of `nofile`, set by the shell
    /// that then becomes the server (so `pid` is the server's).
    pub async fn start_with_nofile(dir: &Path, extra: &[&str], nofile: u32) -> Server {
        let mut sh = Command::new("sh");
        sh.arg("-c")
            .arg(r#"ulimit -n "$0" && exec "$@""#)
            .arg(nofile.to_string())
            .arg(env!("CARGO_BIN_EXE_kafko"));
        Self::launch(sh, dir, extra, &[]).await
    }

    /// [`start`](Self::start) after the shell commands `setup` (limits, signal
    /// dispositions), run by the shell that then becomes the server (so `pid` is the
    /// server's).
    pub async fn start_under(dir: &Path, extra: &[&str], setup: &str) -> Server {
        let mut sh = Command::new("sh");
        sh.arg("-c")
            .arg(format!(r#"{setup} && exec "$@""#))
            .arg("sh")
            .arg(env!("CARGO_BIN_EXE_kafko"));
        Self::launch(sh, dir, extra, &[]).await
    }

    async fn launch(
        mut command: Command,
        dir: &Path,
        extra: &[&str],
        envs: &[(&str, &str)],
    ) -> Server {
        let log = std::fs::File::create(dir.with_extension("log")).expect("log file");
        // Tests run side by side: none may take Kafka's default port. A test that wants
        // the Kafka listener asks for one (`--kafka-bind 127.0.0.1:0`).
        if !extra.iter().any(|a| a.starts_with("--kafka-bind")) {
            command.args(["--kafka-bind", "off"]);
        }
        // Nor the schema registry's.
        if !extra
            .iter()
            .any(|a| a.starts_with("--schema-registry-bind"))
        {
            command.args(["--schema-registry-bind", "off"]);
        }
        let mut child = command
            .arg("--bind")
            .arg("127.0.0.1:0")
            .arg("--data-dir")
            .arg(dir)
            .args(extra)
            .env_remove("KAFKO_AUTH_TOKEN")
            .env("KAFKO_LOG_LEVEL", "info")
            .envs(envs.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .kill_on_drop(true)
            .spawn()
            .expect("spawn kafko");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let (addr, kafka, registry) = tokio::time::timeout(Duration::from_secs(30), async {
            let (mut kafka, mut registry) = (None, None);
            while let Some(line) = lines.next_line().await.expect("read stdout") {
                if let Some(addr) = line.strip_prefix("kafka listening on ") {
                    kafka = Some(addr.to_owned());
                }
                if let Some(url) = line.strip_prefix("schema registry listening on ") {
                    registry = Some(url.to_owned());
                }
                if let Some(url) = line.strip_prefix("listening on http://") {
                    return (url.to_owned(), kafka, registry);
                }
            }
            panic!(
                "server exited before listening; see {}",
                dir.with_extension("log").display()
            );
        })
        .await
        .expect("server did not start in time");
        // Keep draining stdout so the child never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Server {
            child,
            base: format!("http://{addr}"),
            addr,
            kafka,
            registry,
            dir: dir.to_path_buf(),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub fn pid(&self) -> u32 {
        self.child.id().expect("running")
    }

    /// Sends SIGTERM and waits for the exit.
    pub async fn sigterm(&mut self) -> ExitStatus {
        self.signal("-TERM");
        self.wait().await
    }

    /// Sends SIGKILL and waits for the exit, which must not look clean.
    pub async fn sigkill(&mut self) {
        self.signal("-KILL");
        let exit = self.wait().await;
        assert!(!exit.success(), "SIGKILL must not look like a clean exit");
    }

    fn signal(&self, signal: &str) {
        let status = std::process::Command::new("kill")
            .arg(signal)
            .arg(self.pid().to_string())
            .status()
            .expect("kill");
        assert!(status.success(), "kill {signal}");
    }

    /// Waits (bounded) for the process to exit.
    pub async fn wait(&mut self) -> ExitStatus {
        tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .expect("server did not exit in time")
            .expect("wait")
    }
}

/// A client with no connection reuse surprises and a generous timeout.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

/// Parses a response body as JSON.
pub async fn json(resp: reqwest::Response) -> serde_json::Value {
    let text = resp.text().await.expect("body");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Asserts a problem+json response with `status` and `code`; returns the body.
pub async fn problem(resp: reqwest::Response, status: u16, code: &str) -> serde_json::Value {
    assert_eq!(resp.status().as_u16(), status, "status");
    let ct = resp.headers()["content-type"].to_str().unwrap().to_owned();
    assert_eq!(ct, "application/problem+json");
    let body = json(resp).await;
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["status"], status);
    assert!(body["type"].is_string() && body["title"].is_string() && body["detail"].is_string());
    body
}

/// Sends raw bytes as one HTTP/1.1 request and returns (status, body).
pub async fn raw_request(addr: &str, request: &[u8]) -> (u16, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    s.write_all(request).await.expect("write");
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut buf))
        .await
        .expect("response in time")
        .expect("read");
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {text:?}"));
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
    (status, body)
}

/// Reads one HTTP/1.1 response (head and `Content-Length` body) off a kept-alive socket;
/// returns (status, body).
pub async fn read_response(sock: &mut tokio::net::TcpStream) -> (u16, String) {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(10), sock.read(&mut byte))
            .await
            .expect("response head in time")
            .expect("read");
        let so_far = String::from_utf8_lossy(&buf);
        assert_eq!(
            n, 1,
            "connection closed before the response head: {so_far:?}"
        );
        buf.push(byte[0]);
    }
    let head = String::from_utf8(buf).expect("ASCII head");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse().unwrap())
        })
        .unwrap_or_else(|| panic!("no content-length: {head}"));
    let mut body = vec![0u8; length];
    sock.read_exact(&mut body).await.expect("body");
    (status, String::from_utf8(body).unwrap())
}

/// Serves `kafko` in this process (the real accept loop, default config) on an ephemeral
/// loopback port, for the tests that give the log a storage with faults; its base URL.
/// The server lives until the test's runtime ends.
pub async fn serve_in_process(kafko: kafko_core::Kafko) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let service = kafko_service::Service::new(kafko, kafko_service::ServerConfig::default());
    tokio::spawn(kafko_http::server::serve(
        listener,
        kafko_http::AppState::new(service),
    ));
    base
}

/// Creates a topic with a JSON config.
pub async fn create_topic(c: &reqwest::Client, s: &Server, name: &str, config: serde_json::Value) {
    let r = put_json(c, s, &format!("/v1/topics/{name}"), &config).await;
    assert_eq!(r.status().as_u16(), 201, "{}", r.text().await.unwrap());
}

/// A fresh server started with `flags` on its own temporary data directory (`data` in
/// it), and a client. Keep the `TempDir` alive as long as the server.
pub async fn fresh_server(flags: &[&str]) -> (tempfile::TempDir, Server, reqwest::Client) {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(&tmp.path().join("data"), flags).await;
    (tmp, s, client())
}

/// [`fresh_server`] with one topic of the default config: how most tests begin.
pub async fn fresh_server_with_topic(
    topic: &str,
    flags: &[&str],
) -> (tempfile::TempDir, Server, reqwest::Client) {
    let (tmp, s, c) = fresh_server(flags).await;
    create_topic(&c, &s, topic, serde_json::json!({})).await;
    (tmp, s, c)
}

/// [`fresh_server_with_topic`] with no flags.
pub async fn server_with_topic(topic: &str) -> (tempfile::TempDir, Server, reqwest::Client) {
    fresh_server_with_topic(topic, &[]).await
}

/// `GET path`, the response unchecked.
pub async fn get(c: &reqwest::Client, s: &Server, path: &str) -> reqwest::Response {
    c.get(s.url(path)).send().await.unwrap()
}

/// `GET path` asking for an event stream (`Accept: text/event-stream`), to send as it is
/// or with more headers.
pub fn event_stream(c: &reqwest::Client, s: &Server, path: &str) -> reqwest::RequestBuilder {
    c.get(s.url(path)).header("accept", "text/event-stream")
}

/// `GET path` answered with JSON (of any status), parsed.
pub async fn get_json(c: &reqwest::Client, s: &Server, path: &str) -> serde_json::Value {
    json(get(c, s, path).await).await
}

/// `POST path` with no body, the response unchecked.
pub async fn post(c: &reqwest::Client, s: &Server, path: &str) -> reqwest::Response {
    c.post(s.url(path)).send().await.unwrap()
}

/// `PUT path` with no body, the response unchecked.
pub async fn put(c: &reqwest::Client, s: &Server, path: &str) -> reqwest::Response {
    c.put(s.url(path)).send().await.unwrap()
}

/// `DELETE path`, the response unchecked.
pub async fn delete(c: &reqwest::Client, s: &Server, path: &str) -> reqwest::Response {
    c.delete(s.url(path)).send().await.unwrap()
}

/// `POST path` with `body` as JSON, the response unchecked.
pub async fn post_json(c: &Client, s: &Server, path: &str, body: &Value) -> Response {
    c.post(s.url(path)).json(body).send().await.unwrap()
}

/// `PUT path` with `body` as JSON, the response unchecked.
pub async fn put_json(c: &Client, s: &Server, path: &str, body: &Value) -> Response {
    c.put(s.url(path)).json(body).send().await.unwrap()
}

/// `PATCH path` with `body` as JSON, the response unchecked.
pub async fn patch_json(c: &Client, s: &Server, path: &str, body: &Value) -> Response {
    c.patch(s.url(path)).json(body).send().await.unwrap()
}

/// The high watermark of every partition of `topic`, from its description.
pub async fn high_watermarks(c: &reqwest::Client, s: &Server, topic: &str) -> Vec<u64> {
    let d = get_json(c, s, &format!("/v1/topics/{topic}")).await;
    d["partitions"]
        .as_array()
        .unwrap_or_else(|| panic!("no partitions: {d}"))
        .iter()
        .map(|p| p["high_watermark"].as_u64().unwrap())
        .collect()
}

/// `(partition, offset)` of every object in a JSON array (records, offsets).
pub fn partition_offsets(items: &serde_json::Value) -> Vec<(u64, u64)> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["partition"].as_u64().unwrap(),
                o["offset"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Produces a JSON batch and returns the `offsets` array.
pub async fn produce(
    c: &reqwest::Client,
    s: &Server,
    topic: &str,
    query: &str,
    records: serde_json::Value,
) -> Vec<serde_json::Value> {
    // Every record's position: the default answer of a batch is per partition.
    let query = match query {
        "" => "?answer=records".to_owned(),
        q => format!("{q}&answer=records"),
    };
    let path = format!("/v1/topics/{topic}/records{query}");
    let r = post_json(c, s, &path, &serde_json::json!({ "records": records })).await;
    assert_eq!(r.status().as_u16(), 201);
    json(r).await["offsets"].as_array().unwrap().clone()
}

/// The text values of the `records` of a fetch or poll answer.
pub fn record_values(body: &Value) -> Vec<String> {
    body["records"]
        .as_array()
        .unwrap_or_else(|| panic!("no records: {body}"))
        .iter()
        .map(|r| r["value"].as_str().unwrap().to_owned())
        .collect()
}

/// POSTs `body` as `content_type`, the response unchecked.
pub async fn post_typed(
    c: &Client,
    s: &Server,
    path: &str,
    content_type: &str,
    body: impl Into<reqwest::Body>,
) -> Response {
    let request = c.post(s.url(path)).header("content-type", content_type);
    request.body(body).send().await.unwrap()
}

/// POSTs `body` as it is (no content type of its own) and returns the response unchecked.
pub async fn post_body(
    c: &reqwest::Client,
    s: &Server,
    path: &str,
    body: impl Into<reqwest::Body>,
) -> reqwest::Response {
    c.post(s.url(path)).body(body).send().await.unwrap()
}

/// `(VmRSS, VmHWM)` of a process in MiB, from `/proc/PID/status`.
pub fn memory_mib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|kb| kb.parse::<u64>().ok())
            .map(|kb| kb / 1024)
            .unwrap_or_else(|| panic!("{name} missing"))
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Names that must never reach a path: traversal, encoded separators, NUL, 250
/// characters, non-ASCII. Percent-encoded as they would appear in a URL path.
pub fn hostile_names() -> Vec<String> {
    let mut names: Vec<String> = [
        "..",
        ".",
        "%2e%2e",
        "%2e%2e%2f",
        "%2E%2E%2Fetc",
        "a%2Fb",
        "..%2F..%2Ftmp",
        "%00",
        "a%00b",
        "a%20b",
        "%C3%BC",
        "a%5Cb",
        "%2Fabs",
    ]
    .iter()
    .map(|n| n.to_string())
    .collect();
    names.push("x".repeat(250));
    names
}

/// Sends a raw request (URL libraries would normalize `..`) and asserts a 400 whose
/// problem body carries `code`.
pub async fn assert_rejected(addr: &str, method: &str, path: &str, body: &str, code: &str) {
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let (status, resp) = raw_request(addr, req.as_bytes()).await;
    assert_eq!(status, 400, "{method} {path}: {resp}");
    assert!(
        resp.contains(&format!("\"code\":\"{code}\"")),
        "{method} {path}: {resp}"
    );
}

/// The value of one series of `/metrics`, e.g. `kafko_http_connections_open` or
/// `name{label="x"}`; panics if it is missing.
pub async fn metric(c: &reqwest::Client, s: &Server, series: &str) -> u64 {
    let text = get(c, s, "/metrics").await.text().await.unwrap();
    series_value(&text, series)
}

/// The value of one series in a `/metrics` text; panics if it is missing.
pub fn series_value(metrics: &str, series: &str) -> u64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {series} in /metrics:\n{metrics}"))
}

/// Waits (at most 10 s) until at least `n` reads of `front_end` (`v1`, `rest_proxy`,
/// `kafka`) wait for records, by `kafko_reads_waiting`: a test that writes only then
/// sees its read answered by a wake-up, not by its first look.
pub async fn until_reads_waiting(c: &reqwest::Client, s: &Server, front_end: &str, n: u64) {
    let series = format!("kafko_reads_waiting{{front_end=\"{front_end}\"}}");
    let what = format!("{n} {front_end} reads waiting");
    until(&what, async || metric(c, s, &series).await >= n).await;
}

/// Waits (at most 10 s) until `holds`, looking again every 5 ms: a test acts only once
/// the server shows what it waits for. Panics naming `what` otherwise.
pub async fn until(what: &str, mut holds: impl AsyncFnMut() -> bool) {
    let started = std::time::Instant::now();
    while !holds().await {
        assert!(started.elapsed() < Duration::from_secs(10), "never: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits (at most 10 s) until the server handles at least `n` requests besides the
/// `/metrics` scrape that asks: the signal that a long-poll or a waiting read has
/// registered, for a test to act only once it waits.
pub async fn until_requests_waiting(c: &reqwest::Client, s: &Server, n: u64) {
    let series = "kafko_http_requests_in_flight";
    let what = format!("{n} requests waiting");
    until(&what, async || metric(c, s, series).await > n).await;
}

/// The JSON objects among the lines of a chunked body (chunk-size lines parse as
/// numbers: only objects are lines).
fn json_lines(body: &str) -> Vec<Value> {
    body.split("\r\n")
        .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
        .filter(Value::is_object)
        .collect()
}

/// Reads a chunked answer until `lines` JSON objects arrived in its body, or it ended
/// (the terminating chunk or a close); the objects and whether it ended.
pub async fn read_lines(
    stream: &mut (impl tokio::io::AsyncRead + Unpin),
    buf: &mut Vec<u8>,
    lines: usize,
    within: Duration,
) -> (Vec<Value>, bool) {
    tokio::time::timeout(within, async {
        loop {
            let text = String::from_utf8_lossy(buf).into_owned();
            if let Some((_, body)) = text.split_once("\r\n\r\n") {
                let found = json_lines(body);
                let ended = body.ends_with("\r\n0\r\n\r\n") || body.starts_with("0\r\n\r\n");
                if found.len() >= lines || ended {
                    return (found, ended);
                }
            }
            let mut more = [0u8; 4096];
            let n = tokio::io::AsyncReadExt::read(stream, &mut more)
                .await
                .expect("read");
            if n == 0 {
                let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
                return (json_lines(body), true);
            }
            buf.extend_from_slice(&more[..n]);
        }
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "no {lines} lines within {within:?}: {}",
            String::from_utf8_lossy(buf)
        )
    })
}

/// The CPU time (user + system) a process has used so far, in seconds, from
/// `/proc/PID/stat` (clock ticks of 1/100 s, as on every Linux this runs on).
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("proc stat");
    // The fields after the command name, which is in parentheses and may hold spaces.
    let after = &stat[stat.rfind(')').expect("a command name") + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 after the name.
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    ticks as f64 / 100.0
}
