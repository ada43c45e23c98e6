//! What one REST Proxy client can make the real server do, bounded: a subscription of
//! 200,000 names is refused in linear time while `/healthz` keeps answering, and a
//! waiting read does not keep looking for topics that do not exist; a v3 record sent
//! in small chunks costs CPU linear in its size, a record past the limit is refused
//! before the rest of it arrives, and a stalled v3 stream ends with an error line;
//! answers' URLs come from `--public-url` or a valid `Host`; an instance whose read is
//! in flight does not expire.

mod common;

use std::time::{Duration, Instant};

use base64::Engine;
use common::{Server, client, create_topic, fresh_server, json, memory_mib, read_lines};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const V2: &str = "application/vnd.kafka.v2+json";
const BINARY: &str = "application/vnd.kafka.binary.v2+json";

/// CPU time (user + system) the process has used so far, from `/proc/PID/stat`.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("proc stat");
    // Fields after the command name (which may hold spaces): state is field 3, utime 14.
    let rest = &stat[stat.rfind(')').expect("comm") + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    let per_second: u64 = String::from_utf8(
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .expect("getconf")
            .stdout,
    )
    .unwrap()
    .trim()
    .parse()
    .unwrap();
    Duration::from_millis(ticks * 1000 / per_second)
}

/// Creates a consumer instance in `group`; returns its base URI.
async fn instance(c: &reqwest::Client, s: &Server, group: &str) -> String {
    instance_with(c, s, group, json!({})).await
}

/// Creates a consumer instance in `group` with `config`; returns its base URI.
async fn instance_with(c: &reqwest::Client, s: &Server, group: &str, config: Value) -> String {
    let r = c
        .post(s.url(&format!("/consumers/{group}")))
        .header("content-type", V2)
        .body(config.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    json(r).await["base_uri"].as_str().unwrap().to_owned()
}

/// `POST {base}/subscription` with `topics`; the response.
async fn subscribe(c: &reqwest::Client, base: &str, topics: &[String]) -> reqwest::Response {
    c.post(format!("{base}/subscription"))
        .header("content-type", V2)
        .body(json!({ "topics": topics }).to_string())
        .send()
        .await
        .unwrap()
}

/// Produces one binary record (`hi`) to `topic` through v2.
async fn produce_hi(c: &reqwest::Client, s: &Server, topic: &str) {
    let r = c
        .post(s.url(&format!("/topics/{topic}")))
        .header("content-type", BINARY)
        .body(json!({"records": [{"value": "aGk="}]}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

/// Starts a binary records read of instance `base` waiting up to `timeout_ms`; yields
/// its records (the answer must be 200) and when it answered.
fn spawn_read(
    c: &reqwest::Client,
    base: &str,
    timeout_ms: u64,
) -> tokio::task::JoinHandle<(Value, Instant)> {
    let (c, url) = (c.clone(), format!("{base}/records?timeout={timeout_ms}"));
    tokio::spawn(async move {
        let r = c.get(url).header("accept", BINARY).send().await.unwrap();
        assert_eq!(r.status(), 200);
        let got = json(r).await;
        (got, Instant::now())
    })
}

/// Asks `/healthz` every 50 ms until `done` is set; the slowest answer.
async fn healthz_worst(
    s_url: String,
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Duration {
    let c = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let mut worst = Duration::ZERO;
    while !done.load(std::sync::atomic::Ordering::Relaxed) {
        let t = Instant::now();
        let r = c.get(&s_url).send().await.unwrap();
        assert_eq!(r.status(), 200);
        worst = worst.max(t.elapsed());
        assert!(
            worst < Duration::from_secs(1),
            "/healthz took {worst:?} while subscriptions were handled"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    worst
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_subscription_of_200k_names_is_refused_in_linear_time_while_healthz_answers() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    let names: Vec<String> = (0..200_000).map(|i| format!("topic-{i:07}")).collect();
    let bases = [instance(&c, &s, "g1").await, instance(&c, &s, "g2").await];
    let (rss_before, _) = memory_mib(s.pid());
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let health = tokio::spawn(healthz_worst(s.url("/healthz"), done.clone()));
    let started = Instant::now();
    let mut sends = Vec::new();
    for base in &bases {
        let (c, base, names) = (c.clone(), base.clone(), names.clone());
        sends.push(tokio::spawn(async move {
            let r = subscribe(&c, &base, &names).await;
            let status = r.status().as_u16();
            (status, json(r).await)
        }));
    }
    for send in sends {
        let (status, body) = send.await.unwrap();
        assert_eq!(status, 422, "{body}");
        assert_eq!(body["error_code"], 42204, "{body}");
        assert!(
            body["message"].as_str().unwrap().contains("at most 1024"),
            "{body}"
        );
    }
    let answered = started.elapsed();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let worst = health.await.unwrap();
    let (rss, hwm) = memory_mib(s.pid());
    println!(
        "two subscriptions of 200,000 names refused in {answered:?}; /healthz worst {worst:?}; \
         RSS {rss_before} -> {rss} MiB, VmHWM {hwm} MiB"
    );
    assert!(answered < Duration::from_secs(5), "{answered:?}");
    assert!(hwm < 96, "VmHWM {hwm} MiB");

    // 1,024 distinct names, each listed twice, are accepted once each, in order.
    let mut topics: Vec<String> = names[..1024].to_vec();
    topics.extend_from_slice(&names[..1024]);
    let r = subscribe(&c, &bases[0], &topics).await;
    assert_eq!(r.status(), 204);
    let got = json(
        c.get(format!("{}/subscription", bases[0]))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(got["topics"], json!(names[..1024]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_read_does_not_look_for_missing_topics_every_50_ms() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    let missing: Vec<String> = (0..1000).map(|i| format!("absent-{i:04}")).collect();
    let mut bases = Vec::new();
    for g in 0..8 {
        let base = instance(&c, &s, &format!("waiting-{g}")).await;
        assert_eq!(subscribe(&c, &base, &missing).await.status(), 204);
        bases.push(base);
    }
    let cpu_before = cpu_time(s.pid());
    let started = Instant::now();
    let reads: Vec<_> = bases
        .iter()
        .map(|base| spawn_read(&c, base, 3000))
        .collect();
    for read in reads {
        assert_eq!(read.await.unwrap().0, json!([]));
    }
    let waited = started.elapsed();
    let cpu = cpu_time(s.pid()) - cpu_before;
    println!("8 reads waiting {waited:?} on 1,000 missing topics each: server CPU {cpu:?}");
    // Looking every 50 ms cost 230 ms here; a read now looks again only when a topic
    // is created or deleted.
    assert!(cpu < Duration::from_millis(150), "server CPU {cpu:?}");

    // A subscribed topic created while a read waits is still read by that read.
    let base = instance_with(&c, &s, "later", json!({"auto.offset.reset": "earliest"})).await;
    let later = vec!["created-later".to_owned()];
    assert_eq!(subscribe(&c, &base, &later).await.status(), 204);
    let read = spawn_read(&c, &base, 10000);
    common::until_requests_waiting(&c, &s, 1).await;
    create_topic(&c, &s, "created-later", json!({})).await;
    produce_hi(&c, &s, "created-later").await;
    let (got, _) = read.await.unwrap();
    assert_eq!(got[0]["value"], "aGk=", "{got}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_produced_during_a_waiting_read_arrives_at_once() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    create_topic(&c, &s, "now", json!({})).await;
    let base = instance(&c, &s, "prompt").await;
    assert_eq!(
        subscribe(&c, &base, &["now".to_owned()]).await.status(),
        204
    );
    let read = spawn_read(&c, &base, 5000);
    common::until_requests_waiting(&c, &s, 1).await;
    let produced = Instant::now();
    produce_hi(&c, &s, "now").await;
    let (got, answered) = read.await.unwrap();
    assert_eq!(got[0]["value"], "aGk=", "{got}");
    let took = answered.saturating_duration_since(produced);
    println!("a record produced during a 5 s read arrived {took:?} after its produce was sent");
    // Woken by the produce, not by a timer: milliseconds (a debug build on a shared box).
    assert!(took < Duration::from_millis(500), "took {took:?}");
}

/// The head of a chunked v3 produce to `topic`.
fn v3_stream_head(s: &Server, topic: &str) -> String {
    format!(
        "POST /v3/clusters/kafko/topics/{topic}/records HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
        s.addr
    )
}

/// `data` as one chunk of a chunked body.
fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

#[tokio::test]
async fn a_large_v3_record_in_1_kib_chunks_costs_cpu_linear_in_its_size() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    create_topic(&c, &s, "big", json!({})).await;
    // A record of 1,000,000 bytes: about 1.4 MB of JSON, sent 1 KiB at a time.
    let value = base64::engine::general_purpose::STANDARD.encode(vec![7u8; 1_000_000]);
    let record = json!({"value": {"type": "BINARY", "data": value}}).to_string();
    let mut tcp = tokio::net::TcpStream::connect(&s.addr).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let cpu_before = cpu_time(s.pid());
    let started = Instant::now();
    tcp.write_all(v3_stream_head(&s, "big").as_bytes())
        .await
        .unwrap();
    for piece in record.as_bytes().chunks(1024) {
        tcp.write_all(&chunk(piece)).await.unwrap();
    }
    tcp.write_all(b"0\r\n\r\n").await.unwrap();
    let mut buf = Vec::new();
    let (lines, _) = read_lines(&mut tcp, &mut buf, 1, Duration::from_secs(120)).await;
    let took = started.elapsed();
    let cpu = cpu_time(s.pid()) - cpu_before;
    println!(
        "{} bytes of JSON in {} chunks: receipt in {took:?}, server CPU {cpu:?}",
        record.len(),
        record.len().div_ceil(1024)
    );
    assert_eq!(lines[0]["error_code"], 200, "{lines:?}");
    assert_eq!(lines[0]["value"]["size"], 1_000_000, "{lines:?}");
    assert!(cpu < Duration::from_secs(2), "server CPU {cpu:?}");
}

#[tokio::test]
async fn a_v3_record_past_the_limit_is_refused_before_the_rest_arrives() {
    let (_tmp, s, c) = fresh_server(&["--max-record-bytes", "65536"]).await;
    create_topic(&c, &s, "capped", json!({})).await;
    let tcp = tokio::net::TcpStream::connect(&s.addr).await.unwrap();
    let (mut rd, mut wr) = tcp.into_split();
    wr.write_all(v3_stream_head(&s, "capped").as_bytes())
        .await
        .unwrap();
    wr.write_all(&chunk(br#"{"value":{"type":"STRING","data":""#))
        .await
        .unwrap();
    // 512 KiB of a string that has not ended, and the body kept open: the limit is
    // 2 x 64 KiB + 64 KiB of JSON, so the answer must come without the rest.
    for _ in 0..32 {
        wr.write_all(&chunk(&[b'x'; 16 * 1024])).await.unwrap();
    }
    let mut head = Vec::new();
    let got = tokio::time::timeout(Duration::from_secs(5), async {
        let mut more = [0u8; 4096];
        while !String::from_utf8_lossy(&head).contains("\r\n\r\n{") {
            let n = rd.read(&mut more).await.unwrap();
            assert!(n > 0, "closed without an answer");
            head.extend_from_slice(&more[..n]);
        }
    })
    .await;
    let text = String::from_utf8_lossy(&head).into_owned();
    assert!(
        got.is_ok(),
        "no answer to 512 KiB of an open record: {text:?}"
    );
    println!("{text}");
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(text.contains("\"error_code\":413"), "{text}");
    drop(wr);
}

#[tokio::test]
async fn a_stalled_v3_stream_ends_with_an_error_line_after_the_body_read_timeout() {
    let (_tmp, s, c) = fresh_server(&[
        "--body-read-timeout-ms",
        "500",
        "--request-timeout-ms",
        "60000",
    ])
    .await;
    create_topic(&c, &s, "stalled", json!({})).await;
    let mut tcp = tokio::net::TcpStream::connect(&s.addr).await.unwrap();
    tcp.write_all(v3_stream_head(&s, "stalled").as_bytes())
        .await
        .unwrap();
    tcp.write_all(&chunk(br#"{"value":{"type":"JSON","data":1}}"#))
        .await
        .unwrap();
    let mut buf = Vec::new();
    let (first, _) = read_lines(&mut tcp, &mut buf, 1, Duration::from_secs(10)).await;
    assert_eq!(first[0]["error_code"], 200, "{first:?}");
    // Then nothing more is sent: the stream ends with an error line, not in silence.
    let stalled = Instant::now();
    let (lines, ended) = read_lines(&mut tcp, &mut buf, 2, Duration::from_secs(10)).await;
    let took = stalled.elapsed();
    println!("stalled stream: {lines:?} after {took:?}");
    assert_eq!(lines.len(), 2, "the stream ended with no error line");
    assert_eq!(lines[1]["error_code"], 408, "{lines:?}");
    assert!(took < Duration::from_secs(3), "{took:?}");
    if !ended {
        let (_, ended) = read_lines(&mut tcp, &mut buf, 3, Duration::from_secs(5)).await;
        assert!(ended, "the stream goes on after its error line");
    }
}

#[tokio::test]
async fn an_instance_whose_read_is_in_flight_does_not_expire() {
    let (_tmp, s, c) = fresh_server(&["--consumer-instance-timeout-ms", "500"]).await;
    create_topic(&c, &s, "busy", json!({})).await;
    let base = instance_with(&c, &s, "readers", json!({"auto.offset.reset": "earliest"})).await;
    assert_eq!(
        subscribe(&c, &base, &["busy".to_owned()]).await.status(),
        204
    );
    let read = spawn_read(&c, &base, 3000);
    // Once the read waits, let the instance timeout pass (time itself is the property
    // here): creating another instance then sweeps the idle ones, and a record arrives.
    common::until_requests_waiting(&c, &s, 1).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    instance(&c, &s, "other").await;
    produce_hi(&c, &s, "busy").await;
    let (got, _) = read.await.unwrap();
    assert_eq!(got.as_array().map(Vec::len), Some(1), "{got}");
    assert_eq!(got[0]["value"], "aGk=", "{got}");
    // The read just ended, so the instance is alive.
    let r = c.get(format!("{base}/subscription")).send().await.unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
}

/// A raw `method path` with `host` as the Host header and `body`; (status, body).
async fn with_host(s: &Server, method: &str, path: &str, host: &str, body: &str) -> (u16, String) {
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: {V2}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    common::raw_request(&s.addr, req.as_bytes()).await
}

#[tokio::test]
async fn answer_urls_come_from_the_public_url_or_a_valid_host_only() {
    let evil = "evil.example:1/x?y#";
    let (_tmp, s, _c) = fresh_server(&[]).await;
    // A Host that is not host[:port] is refused, never copied into an answer.
    for (method, path) in [("GET", "/v3/clusters"), ("POST", "/consumers/g")] {
        let (status, body) = with_host(&s, method, path, evil, "{}").await;
        assert!(!body.contains("evil"), "{method} {path}: {status} {body}");
        assert_eq!(status, 400, "{method} {path}: {body}");
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["error_code"], 400, "{body}");
    }
    // A valid one is used.
    let (status, body) = with_host(&s, "POST", "/consumers/g", "kafko.local:9", "{}").await;
    assert_eq!(status, 200, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    let base_uri = body["base_uri"].as_str().unwrap();
    assert!(
        base_uri.starts_with("http://kafko.local:9/consumers/g/instances/"),
        "{base_uri}"
    );

    // --public-url (here through its environment twin) wins over any Host.
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start_env(
        &tmp.path().join("data"),
        &[],
        &[("KAFKO_PUBLIC_URL", "https://kafko.example.com/proxy/")],
    )
    .await;
    let (status, body) = with_host(&s, "GET", "/v3/clusters", evil, "").await;
    assert_eq!(status, 200, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        body["metadata"]["self"],
        "https://kafko.example.com/proxy/v3/clusters"
    );
    assert_eq!(
        body["data"][0]["metadata"]["self"],
        "https://kafko.example.com/proxy/v3/clusters/kafko"
    );
    let (status, body) = with_host(&s, "POST", "/consumers/g", evil, "{\"name\":\"c\"}").await;
    assert_eq!(status, 200, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        body["base_uri"],
        "https://kafko.example.com/proxy/consumers/g/instances/c"
    );

    // A public URL that is not one does not start the server.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kafko"))
        .args(["--bind", "127.0.0.1:0", "--kafka-bind", "off"])
        .args(["--schema-registry-bind", "off", "--data-dir"])
        .arg(tmp.path().join("other"))
        .args(["--public-url", "http://h/x?y"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--public-url"), "{stderr}");
}

#[tokio::test]
async fn v2_and_v3_produce_apply_the_servers_record_limits_as_v1_does() {
    let (_tmp, s, c) = fresh_server(&["--max-records-per-request", "3"]).await;
    create_topic(&c, &s, "capped", json!({})).await;
    let records = |n: usize| json!({"records": vec![json!({"value": "eA=="}); n]}).to_string();
    let v2 = |topic: &str, body: String| {
        c.post(s.url(&format!("/topics/{topic}")))
            .header("content-type", BINARY)
            .body(body)
            .send()
    };

    // v2: one record past the limit is refused whole, to an existing topic and to an
    // unknown one (which is not created).
    for topic in ["capped", "unknown"] {
        let r = v2(topic, records(4)).await.unwrap();
        let status = r.status().as_u16();
        let b = json(r).await;
        println!("v2 to {topic}: {status} {b}");
        assert_eq!(status, 413, "{b}");
        assert_eq!(b["error_code"], 41301, "{b}");
    }
    let r = v2("capped", records(3)).await.unwrap();
    assert_eq!(r.status(), 200);
    let topics = json(c.get(s.url("/v1/topics")).send().await.unwrap()).await;
    assert!(!topics.to_string().contains("unknown"), "{topics}");

    // v3: a stream past the limit ends with that error line after three receipts.
    let r = c
        .post(s.url("/v3/clusters/kafko/topics/capped/records"))
        .header("content-type", "application/json")
        .header("transfer-encoding", "chunked")
        .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
            (0..5).map(|i| {
                Ok::<_, std::io::Error>(format!(r#"{{"value":{{"data":{i}}}}}"#).into_bytes())
            }),
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    println!("v3 stream: {text}");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[..3].iter().all(|l| l["error_code"] == 200), "{text}");
    assert_eq!(lines[3]["error_code"], 41301, "{text}");

    // /v1 and v2 store the same: 3 records each. (A fresh connection: the server closes
    // the one whose request body it stopped reading, and a pooled reuse could race it.)
    let d = json(
        client()
            .get(s.url("/v1/topics/capped"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(d["partitions"][0]["high_watermark"], 6, "{d}");
}
