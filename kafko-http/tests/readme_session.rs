//! The README's "A curl session", run as written: the code block is taken from README.md,
//! `B=…` pointed at the real binary on an ephemeral port with a fresh data directory,
//! and every command run by `sh` with curl (a `.curlrc` in `CURL_HOME` only adds
//! `--silent --show-error` and writes the status code after the body). Each step must do
//! what the README's comments say; a changed or broken command fails this test.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use common::Server;
use serde_json::Value;
use tokio::process::Command;

/// The address the README's session is written against.
const README_BASE: &str = "B=http://127.0.0.1:8080";

/// The commands of the README's curl session: comment and blank lines dropped, a line
/// ending in `\` kept together with the next.
fn session_commands() -> Vec<String> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README.md");
    let after = readme
        .split_once("## A curl session")
        .expect("README.md has a section \"A curl session\"")
        .1;
    let block = after
        .split_once("```sh\n")
        .and_then(|(_, rest)| rest.split_once("\n```"))
        .expect("the curl session is a ```sh block")
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
    assert!(current.is_empty(), "the block ends in a continuation line");
    commands
}

/// What one command printed: the status code curl wrote out, the body, curl's exit code.
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

/// Runs one command of the session with `sh`, `$B` the server's address, bounded in time.
async fn run(command: &str, base: &str, curl_home: &Path) -> Outcome {
    let child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .env("B", base)
        .env("CURL_HOME", curl_home)
        .current_dir(curl_home)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("sh (and curl) must be installed to run the README's session");
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("README command still running after 20 s: {command}"))
        .expect("wait for sh");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, status) = stdout
        .rsplit_once('\n')
        .unwrap_or_else(|| panic!("no status written out by: {command}\n{stdout}"));
    let outcome = Outcome {
        status: status.trim().parse().unwrap_or(0),
        body: body.to_owned(),
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

/// The values of a list of record objects.
fn values(records: &Value) -> Vec<&str> {
    records
        .as_array()
        .unwrap_or_else(|| panic!("not a list of records: {records}"))
        .iter()
        .map(|r| r["value"].as_str().unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn the_readme_curl_session_runs_verbatim_and_does_what_it_says() {
    let commands = session_commands();
    assert_eq!(
        commands.len(),
        10,
        "the README's curl session changed; update this check to what its text now says:\n{commands:#?}"
    );
    assert_eq!(
        commands[0], README_BASE,
        "the session starts by naming its server"
    );
    let tmp = tempfile::tempdir().unwrap();
    let curl_home = tmp.path().join("curl");
    std::fs::create_dir(&curl_home).unwrap();
    std::fs::write(
        curl_home.join(".curlrc"),
        "silent\nshow-error\nwrite-out = \"\\n%{http_code}\"\n",
    )
    .unwrap();
    let mut server = Server::start(&tmp.path().join("data"), &[]).await;
    let b = server.base.clone();
    let step = |i: usize, fragment: &str| {
        let c = &commands[i];
        assert!(
            c.contains(fragment),
            "README step {i} is no longer `{fragment}…`: {c}"
        );
        c.clone()
    };

    // Create a topic: 201; the same again: 200; a different config: 409.
    let create = step(1, "-X PUT $B/v1/topics/orders");
    let o = run(&create, &b, &curl_home).await;
    assert_eq!(o.status, 201, "{o:?}");
    assert_eq!(o.json()["config"]["partitions"], 3);
    assert_eq!(run(&create, &b, &curl_home).await.status, 200);
    let other = create.replace("\"partitions\":3", "\"partitions\":4");
    assert_ne!(other, create);
    assert_eq!(run(&other, &b, &curl_home).await.status, 409);

    // Produce: a raw body lands on partition 0, a JSON batch on partition 1 (by key).
    let o = run(&step(2, "records?key="), &b, &curl_home).await;
    assert_eq!(o.status, 201, "{o:?}");
    assert_eq!(o.json()["offsets"][0]["partition"], 0, "{o:?}");
    let o = run(&step(3, "{\"records\":["), &b, &curl_home).await;
    assert_eq!(o.status, 201, "{o:?}");
    assert_eq!(o.json()["offsets"][0]["partition"], 1, "{o:?}");

    // Consume partition 0: the raw record.
    let o = run(&step(4, "partition=0&offset=earliest"), &b, &curl_home).await;
    assert_eq!(o.status, 200, "{o:?}");
    let body = o.json();
    assert_eq!(values(&body["records"]), ["order-1"], "{body}");

    // Tail partition 0 as SSE for 3 s: the record as an event, then curl's time is up.
    let o = run(&step(5, "accept: text/event-stream"), &b, &curl_home).await;
    assert_eq!(o.status, 200, "{o:?}");
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
    let o = run(
        &step(6, "/v1/groups/billing/topics/orders/poll"),
        &b,
        &curl_home,
    )
    .await;
    assert_eq!(o.status, 200, "{o:?}");
    let body = o.json();
    let mut seen = values(&body["records"]);
    seen.sort_unstable();
    assert_eq!(seen, ["order-1", "order-2"], "{body}");
    let o = run(
        &step(7, "-X PUT $B/v1/groups/billing/topics/orders/offsets"),
        &b,
        &curl_home,
    )
    .await;
    assert_eq!(o.status, 200, "{o:?}");
    let o = run(&step(8, "curl $B/v1/groups/billing"), &b, &curl_home).await;
    assert_eq!(o.status, 200, "{o:?}");
    let body = o.json();
    let partitions = &body["topics"][0]["partitions"];
    assert_eq!(partitions[0]["committed"], 1, "{body}");
    assert_eq!(partitions[0]["lag"], 0, "{body}");
    assert!(body["topics"][0]["total_lag"].is_u64(), "{body}");

    // Graceful shutdown: accepted, and the process exits 0.
    let o = run(&step(9, "-X POST $B/v1/admin/shutdown"), &b, &curl_home).await;
    assert_eq!(o.status, 202, "{o:?}");
    assert!(server.wait().await.success());
}
