//! The documents' curl sessions, run as written: README.md's and kafko-http/README.md's
//! "A curl session" code blocks, kafko-http/README.md's REST Proxy session and
//! docs/schema-registry.md's session are taken from the files, `B=…` (and the
//! registry's `R=…`) pointed at the real
//! binary on an ephemeral port with a fresh data directory, and every command run by `sh`
//! (curl for the requests; a `.curlrc` in `CURL_HOME` only adds `--silent --show-error`
//! and writes the status code after the body), in a scratch directory. Each step must do
//! what the document's text says; a changed or broken command fails this test.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::Server;
use serde_json::Value;
use tokio::process::Command;

/// The address both sessions are written against.
const DOC_BASE: &str = "B=http://127.0.0.1:8080";
/// The schema registry's address in its session.
const DOC_REGISTRY: &str = "R=http://127.0.0.1:8081";

/// The commands of the first ```sh block of a document's section `heading`: comment and
/// blank lines dropped, a line ending in `\` kept together with the next.
fn session_commands(doc: &str, heading: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(doc);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{doc}: {e}"));
    let after = text
        .split_once(heading)
        .unwrap_or_else(|| panic!("{doc} has a section \"{heading}\""))
        .1;
    let block = after
        .split_once("```sh\n")
        .and_then(|(_, rest)| rest.split_once("\n```"))
        .unwrap_or_else(|| panic!("{doc}'s curl session is a ```sh block"))
        .0;
    let mut commands = Vec::new();
    let mut current = String::new();
    for line in block.lines() {
        let trimmed = line.trim();
        if current.is_empty() && (trimmed.is_empty() || trimmed.starts_with('#')) {
            continue;
        }
        current.push_str(line);
        if line.ends_with('\\') {
            // Kept as written: `sh` reads the backslash-newline as a continuation.
            current.push('\n');
            continue;
        }
        commands.push(std::mem::take(&mut current));
    }
    assert!(
        current.is_empty(),
        "{doc}'s block ends in a continuation line"
    );
    commands
}

/// What one command printed: for curl (also at the end of a pipe), the status code it
/// wrote out and the body before it (other commands: status 0, all of stdout); and the
/// exit code.
#[derive(Debug)]
struct Outcome {
    status: u16,
    body: String,
    exit: i32,
}

impl Outcome {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {self:?}"))
    }
}

/// One document's session: its commands, the real server and the scratch directory the
/// commands run in.
struct Session {
    doc: &'static str,
    commands: Vec<String>,
    server: Server,
    dir: PathBuf,
    _tmp: tempfile::TempDir,
}

impl Session {
    /// Reads `doc`'s curl session, which must have `count` commands and start by naming
    /// its server, and starts a server on a fresh data directory.
    async fn start(doc: &'static str, count: usize) -> Session {
        Session::start_section(doc, "## A curl session", count).await
    }

    /// [`Session::start`] for the session under another `heading`.
    async fn start_section(doc: &'static str, heading: &str, count: usize) -> Session {
        Session::start_with(doc, heading, count, &[]).await
    }

    /// [`Session::start_section`] for a server started with `flags`.
    async fn start_with(doc: &'static str, heading: &str, count: usize, flags: &[&str]) -> Session {
        let commands = session_commands(doc, heading);
        assert_eq!(
            commands.len(),
            count,
            "{doc}'s curl session changed; update this check to what its text now says:\n{commands:#?}"
        );
        assert!(
            commands[0] == DOC_BASE || (commands[0] == DOC_REGISTRY && commands[1] == DOC_BASE),
            "{doc}'s session starts by naming its server"
        );
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("work");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(
            dir.join(".curlrc"),
            "silent\nshow-error\nwrite-out = \"\\n%{http_code}\"\n",
        )
        .unwrap();
        let server = Server::start(&tmp.path().join("data"), flags).await;
        Session {
            doc,
            commands,
            server,
            dir,
            _tmp: tmp,
        }
    }

    /// Command `i`, which must still contain `fragment`.
    fn step(&self, i: usize, fragment: &str) -> String {
        let c = &self.commands[i];
        assert!(
            c.contains(fragment),
            "{} step {i} is no longer `{fragment}…`: {c}",
            self.doc
        );
        c.clone()
    }

    /// Runs command `i` (see [`Session::step`]).
    async fn run_step(&self, i: usize, fragment: &str) -> Outcome {
        self.run(&self.step(i, fragment)).await
    }

    /// Runs one command with `sh`, `$B` the server's address, bounded in time.
    async fn run(&self, command: &str) -> Outcome {
        let child = Command::new("sh")
            .arg("-c")
            .arg(command)
            .env("B", &self.server.base)
            .env("R", self.server.registry.as_deref().unwrap_or_default())
            .env("CURL_HOME", &self.dir)
            .current_dir(&self.dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("sh (and curl) must be installed to run the documents' sessions");
        let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
            .await
            .unwrap_or_else(|_| panic!("{} command still running after 20 s: {command}", self.doc))
            .expect("wait for sh");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, status) = if command.starts_with("curl ") || command.contains("| curl ") {
            let (body, status) = stdout
                .rsplit_once('\n')
                .unwrap_or_else(|| panic!("no status written out by: {command}\n{stdout}"));
            (body.to_owned(), status.trim().parse().unwrap_or(0))
        } else {
            (stdout, 0)
        };
        let outcome = Outcome {
            status,
            body,
            exit: out.status.code().unwrap_or(-1),
        };
        eprintln!(
            "$ {command}\n  -> {} (exit {})",
            outcome.status, outcome.exit
        );
        assert!(
            outcome.exit == 0 || command.contains("--max-time"),
            "`{command}` failed (exit {}): {}",
            outcome.exit,
            String::from_utf8_lossy(&out.stderr)
        );
        outcome
    }

    /// Runs command `i` and checks its HTTP status.
    async fn expect(&self, i: usize, fragment: &str, status: u16) -> Outcome {
        let o = self.run_step(i, fragment).await;
        assert_eq!(o.status, status, "{} step {i}: {o:?}", self.doc);
        o
    }

    /// Runs the session's last command, the graceful shutdown: accepted, and the process
    /// exits 0.
    async fn shut_down(mut self) {
        let last = self.commands.len() - 1;
        self.expect(last, "-X POST $B/v1/admin/shutdown", 202).await;
        assert!(self.server.wait().await.success());
    }
}

/// The values of a list of record objects.
fn values(records: &Value) -> Vec<&str> {
    records
        .as_array()
        .unwrap_or_else(|| panic!("not a list of records: {records}"))
        .iter()
        .map(|r| r["value"].as_str().unwrap_or_default())
        .collect()
}

/// Runs the create step (which must be command 1): 201; the same again: 200; the same
/// with another partition count: 409.
async fn create_topic_step(s: &Session, partitions: u32) {
    let create = s.step(1, "-X PUT $B/v1/topics/orders");
    let o = s.run(&create).await;
    assert_eq!(o.status, 201, "{o:?}");
    assert_eq!(o.json()["config"]["partitions"], partitions);
    assert_eq!(s.run(&create).await.status, 200);
    let other = create.replace(
        &format!("\"partitions\":{partitions}"),
        &format!("\"partitions\":{}", partitions + 1),
    );
    assert_ne!(other, create);
    assert_eq!(s.run(&other).await.status, 409);
}

#[tokio::test]
async fn the_readme_curl_session_runs_verbatim_and_does_what_it_says() {
    let s = Session::start("README.md", 10).await;
    create_topic_step(&s, 3).await;

    // Produce: a raw body lands on partition 0, a JSON batch on partition 1 (by key).
    let o = s.expect(2, "records?key=", 201).await;
    assert_eq!(o.json()["offsets"][0]["partition"], 0, "{o:?}");
    let o = s.expect(3, "{\"records\":[", 201).await;
    assert_eq!(o.json()["offsets"][0]["partition"], 1, "{o:?}");

    // Consume partition 0: the raw record.
    let o = s.expect(4, "partition=0&offset=earliest", 200).await;
    let body = o.json();
    assert_eq!(values(&body["records"]), ["order-1"], "{body}");

    // Tail partition 0 as SSE for 3 s: the record as an event, then curl's time is up.
    let o = s.expect(5, "accept: text/event-stream", 200).await;
    assert_eq!(
        o.exit, 28,
        "the stream ends when --max-time runs out: {o:?}"
    );
    assert!(
        o.body.contains("event: record") && o.body.contains("id: 0:0"),
        "{o:?}"
    );
    assert!(o.body.contains("\"value\":\"order-1\""), "{o:?}");

    // A consumer group sees every record, and its cursor is kept by the server.
    let o = s
        .expect(6, "/v1/groups/billing/topics/orders/poll", 200)
        .await;
    let body = o.json();
    let mut seen = values(&body["records"]);
    seen.sort_unstable();
    assert_eq!(seen, ["order-1", "order-2"], "{body}");
    s.expect(7, "-X PUT $B/v1/groups/billing/topics/orders/offsets", 200)
        .await;
    let o = s.expect(8, "curl $B/v1/groups/billing", 200).await;
    let body = o.json();
    let partitions = &body["topics"][0]["partitions"];
    assert_eq!(partitions[0]["committed"], 1, "{body}");
    assert_eq!(partitions[0]["lag"], 0, "{body}");
    assert!(body["topics"][0]["total_lag"].is_u64(), "{body}");

    s.shut_down().await;
}

#[tokio::test]
async fn the_kafko_http_readme_curl_session_runs_verbatim_and_does_what_it_says() {
    let s = Session::start("kafko-http/README.md", 24).await;
    create_topic_step(&s, 3).await;

    // Produce to partition 0: a raw body, then a file's bytes as one record, fsynced.
    let first = s.expect(2, "partition=0\" -d 'hello'", 201).await.json();
    assert_eq!(first["offsets"][0]["offset"], 0, "{first}");
    assert_eq!(s.run_step(3, "> order.json").await.exit, 0);
    let o = s
        .expect(4, "sync=true\" --data-binary @order.json", 201)
        .await;
    assert_eq!(o.json()["offsets"][0]["offset"], 1, "{o:?}");
    // A JSON batch and an NDJSON batch, routed by key: u1 and u3 to 1, u2 to 0.
    let o = s.expect(5, "{\"records\":[", 201).await;
    assert_eq!(o.json()["offsets"][0]["partition"], 1, "{o:?}");
    assert_eq!(s.run_step(6, "> records.ndjson").await.exit, 0);
    let o = s.expect(7, "--data-binary @records.ndjson", 201).await;
    assert_eq!(
        o.json()["partitions"].as_array().map(Vec::len),
        Some(2),
        "{o:?}"
    );

    // Reads of partition 0: offsets 0, 1, 2; a long-poll at the end that times out empty.
    let o = s.expect(8, "offset=earliest&max_records=100", 200).await;
    let body = o.json();
    assert_eq!(
        values(&body["records"]),
        ["hello", r#"{"id":7,"total":9.5}"#, "a"],
        "{body}"
    );
    let started = std::time::Instant::now();
    let o = s.expect(9, "offset=latest&wait_ms=1000", 200).await;
    assert_eq!(values(&o.json()["records"]).len(), 0, "{o:?}");
    assert!(started.elapsed() >= Duration::from_millis(900), "{o:?}");

    // SSE until curl's 2 s are up; NDJSON to the end of the partition.
    let o = s.expect(10, "accept: text/event-stream", 200).await;
    assert_eq!(o.exit, 28, "{o:?}");
    assert!(
        o.body.contains("id: 0:2") && o.body.contains("\"value\":\"a\""),
        "{o:?}"
    );
    let o = s.expect(11, "accept: application/x-ndjson", 200).await;
    assert_eq!(o.body.lines().count(), 3, "{o:?}");

    // One record's raw value into a file, its metadata as headers; an offset by time.
    let o = s.expect(12, "--output value.bin -D -", 200).await;
    assert!(
        o.body.to_ascii_lowercase().contains("kafko-offset: 0"),
        "{o:?}"
    );
    assert_eq!(std::fs::read(s.dir.join("value.bin")).unwrap(), b"hello");
    let o = s.expect(13, "offsets?timestamp=", 200).await;
    assert_eq!(o.json()["offset"], 0, "{o:?}");

    // A group: the first poll gets all five records; commits; a seek; describe.
    let o = s.expect(14, "poll?max_records=100&wait_ms=5000", 200).await;
    assert_eq!(values(&o.json()["records"]).len(), 5, "{o:?}");
    s.expect(15, "poll?auto_commit=false", 200).await;
    s.expect(16, "-X PUT $B/v1/groups/billing/topics/orders/offsets", 200)
        .await;
    let o = s.expect(17, "{\"partition\":0,\"offset\":1}", 200).await;
    assert_eq!(o.json()["offsets"][0]["offset"], 1, "{o:?}");
    s.expect(18, "/seek", 200).await;
    let o = s.expect(19, "curl $B/v1/groups/billing ", 200).await;
    let body = o.json();
    assert_eq!(body["topics"][0]["partitions"][0]["committed"], 0, "{body}");
    assert_eq!(body["topics"][0]["total_lag"], 5, "{body}");

    // A joined member: generation 1 with every partition, polls from the seek, leaves.
    let o = s.expect(20, "\"member_id\":\"w1\"", 201).await;
    let body = o.json();
    assert_eq!(body["generation"], 1, "{body}");
    assert_eq!(body["assignment"], serde_json::json!([0, 1, 2]), "{body}");
    let o = s.expect(21, "member_id=w1&generation=1", 200).await;
    assert_eq!(values(&o.json()["records"]).len(), 5, "{o:?}");
    s.expect(22, "-X DELETE $B/v1/groups/billing", 204).await;

    s.shut_down().await;
}

#[tokio::test]
async fn the_kafko_http_readme_rest_proxy_session_runs_verbatim_and_does_what_it_says() {
    let s =
        Session::start_section("kafko-http/README.md", "## The Kafka REST Proxy routes", 10).await;
    let o = s.expect(1, "curl $B/v3/clusters", 200).await;
    assert_eq!(o.json()["data"][0]["cluster_id"], "kafko", "{o:?}");
    let o = s.expect(2, "\"topic_name\":\"clicks\"", 201).await;
    assert_eq!(o.json()["partitions_count"], 2, "{o:?}");
    let o = s.expect(3, "application/vnd.kafka.json.v2+json", 200).await;
    let produced = o.json();
    assert_eq!(produced["offsets"][0]["offset"], 0, "{produced}");
    assert!(produced["offsets"][0]["error_code"].is_null(), "{produced}");

    // A json consumer instance, assigned both partitions, reads the record.
    let o = s.expect(4, "curl $B/consumers/web ", 200).await;
    let created = o.json();
    assert_eq!(created["instance_id"], "c1", "{created}");
    let base = created["base_uri"].as_str().unwrap_or_default();
    assert!(base.ends_with("/consumers/web/instances/c1"), "{created}");
    s.expect(5, "/assignments", 204).await;
    let o = s.expect(6, "records?timeout=1000", 200).await;
    let records = o.json();
    assert_eq!(records.as_array().map(Vec::len), Some(1), "{records}");
    assert_eq!(records[0]["key"], "u1", "{records}");
    assert_eq!(records[0]["value"]["page"], "/", "{records}");
    assert_eq!(records[0]["partition"], produced["offsets"][0]["partition"]);

    // Committed into the group, which /v1 shows; then the instance goes.
    let o = s
        .expect(7, "-X POST $B/consumers/web/instances/c1/offsets", 200)
        .await;
    assert_eq!(o.json(), serde_json::json!([]), "{o:?}");
    let o = s.expect(8, "curl $B/v1/groups/web", 200).await;
    assert_eq!(o.json()["topics"][0]["total_lag"], 0, "{o:?}");
    s.expect(9, "-X DELETE $B/consumers/web/instances/c1", 204)
        .await;
}

#[tokio::test]
async fn the_schema_registry_session_runs_verbatim_and_does_what_it_says() {
    let flags = ["--schema-registry-bind", "127.0.0.1:0"];
    let s = Session::start_with("docs/schema-registry.md", "## A curl session", 17, &flags).await;
    let o = s
        .expect(2, "-X POST $R/subjects/orders-value/versions", 200)
        .await;
    assert_eq!(o.json(), serde_json::json!({"id": 1}));
    let o = s.expect(3, r#"\"type\": \"record\""#, 200).await;
    assert_eq!(
        o.json(),
        serde_json::json!({"id": 1}),
        "the same schema, the same id"
    );
    let o = s.expect(4, "curl $R/schemas/ids/1", 200).await;
    assert!(
        o.json()["schema"].as_str().unwrap().contains("Order"),
        "{o:?}"
    );
    let o = s.expect(5, r#"\"default\":0"#, 200).await;
    assert_eq!(o.json(), serde_json::json!({"id": 2}));
    let o = s.expect(6, r#"\"shop\""#, 409).await;
    assert_eq!(o.json()["error_code"], 409);
    let o = s.expect(7, "verbose=true", 200).await;
    assert_eq!(o.json()["is_compatible"], false);
    assert!(
        !o.json()["messages"].as_array().unwrap().is_empty(),
        "{o:?}"
    );
    let o = s
        .expect(8, "curl $R/subjects/orders-value/versions", 200)
        .await;
    assert_eq!(o.json(), serde_json::json!([1, 2]));
    let o = s.expect(9, "versions/latest", 200).await;
    assert_eq!(
        (o.json()["version"].clone(), o.json()["id"].clone()),
        (2.into(), 2.into())
    );
    let o = s.expect(10, "-X PUT $R/config/orders-value", 200).await;
    assert_eq!(o.json(), serde_json::json!({"compatibility": "FULL"}));
    let o = s.expect(11, "curl $R/config", 200).await;
    assert_eq!(
        o.json(),
        serde_json::json!({"compatibilityLevel": "BACKWARD"})
    );
    let o = s
        .expect(12, "-X DELETE $R/subjects/orders-value/versions/1", 200)
        .await;
    assert_eq!(o.json(), 1);
    let o = s.expect(13, "permanent=true", 200).await;
    assert_eq!(o.json(), 1);
    let o = s.expect(14, "$R/schemas/decode", 200).await;
    assert_eq!(
        o.json(),
        serde_json::json!({"id": 2, "schemaType": "AVRO",
                           "value": {"amount": 2.0, "id": "o-1"}})
    );
    let o = s.expect(15, "/v1/topics/_schemas/records", 200).await;
    let body = o.json();
    let keys: Vec<Value> = body["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| serde_json::from_str(r["key"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(
        keys.len(),
        5,
        "two versions, a config, a soft and a permanent delete: {body}"
    );
    assert_eq!(keys[0]["keytype"], "SCHEMA");
    assert_eq!(
        keys[2],
        serde_json::json!({"keytype":"CONFIG","subject":"orders-value","magic":0})
    );
    assert!(
        body["records"][4]["value"].is_null(),
        "the permanent delete is a tombstone"
    );
    s.expect(16, "-X POST $B/v1/admin/shutdown", 202).await;
}
