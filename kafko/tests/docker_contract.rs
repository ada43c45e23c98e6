//! The container contract, tested without a Docker engine: every `KAFKO_*` variable and
//! flag that `docker/Dockerfile` and `docker/compose.yaml` hand to `kafko` exists in
//! `kafko --help` (catches drift when a flag is renamed); the ports agree; the
//! binary starts with exactly the image's and compose's environment; `--healthcheck`
//! (the image's HEALTHCHECK) reports healthy, then unhealthy after a SIGTERM stop that
//! exits 0 within Docker's 10 s grace; and as a real PID 1 (a fresh PID namespace, where
//! signals without a handler are ignored) SIGTERM still stops it cleanly.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Server, client};

const BIN: &str = env!("CARGO_BIN_EXE_kafko");

fn repo_file(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Flags (`--name`) and environment twins (`KAFKO_*`) listed by `kafko --help`.
fn help() -> (BTreeSet<String>, BTreeSet<String>) {
    let out = Command::new(BIN).arg("--help").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let words = |prefix: &str| -> BTreeSet<String> {
        text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .filter(|w| w.starts_with(prefix) && w.len() > prefix.len())
            .map(str::to_owned)
            .collect()
    };
    (words("--"), words("KAFKO_"))
}

/// The Dockerfile as instructions, continuation lines joined, comments dropped.
fn instructions(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('#') || (t.is_empty() && current.is_empty()) {
            continue;
        }
        if let Some(head) = t.strip_suffix('\\') {
            current.push_str(head);
            current.push(' ');
            continue;
        }
        current.push_str(t);
        let (word, rest) = current.split_once(' ').unwrap_or((&current, ""));
        out.push((word.to_ascii_uppercase(), rest.trim().to_owned()));
        current.clear();
    }
    out
}

/// `--flags` given to kafko in an exec-form array (`["kafko", "--x"]`).
fn exec_flags(rest: &str) -> Vec<String> {
    let Some(start) = rest.find('[') else {
        return Vec::new();
    };
    let argv: Vec<String> = serde_json::from_str(&rest[start..]).expect("exec form JSON array");
    if argv.first().map(String::as_str) != Some("kafko") {
        return Vec::new();
    }
    argv.into_iter()
        .filter(|a| a.starts_with("--"))
        .map(|a| a.split('=').next().unwrap_or_default().to_owned())
        .collect()
}

struct Dockerfile {
    env: BTreeMap<String, String>,
    flags: Vec<String>,
    expose: Vec<u16>,
    stopsignal: String,
    user: String,
    volumes: Vec<String>,
    healthcheck: bool,
}

fn dockerfile() -> Dockerfile {
    let mut d = Dockerfile {
        env: BTreeMap::new(),
        flags: Vec::new(),
        expose: Vec::new(),
        stopsignal: String::new(),
        user: String::new(),
        volumes: Vec::new(),
        healthcheck: false,
    };
    for (word, rest) in instructions(&repo_file("docker/Dockerfile")) {
        match word.as_str() {
            "ENV" => {
                for pair in rest.split_whitespace() {
                    let (k, v) = pair.split_once('=').expect("ENV in KEY=VALUE form");
                    d.env.insert(k.to_owned(), v.to_owned());
                }
            }
            "ENTRYPOINT" | "CMD" => d.flags.extend(exec_flags(&rest)),
            "HEALTHCHECK" => {
                d.healthcheck = true;
                let cmd = rest.split_once("CMD").expect("HEALTHCHECK ... CMD").1;
                let flags = exec_flags(cmd);
                assert!(
                    flags.contains(&"--healthcheck".to_owned()),
                    "the HEALTHCHECK should run kafko --healthcheck: {rest}"
                );
                d.flags.extend(flags);
            }
            "EXPOSE" => d
                .expose
                .extend(rest.split_whitespace().map(|p| p.parse::<u16>().unwrap())),
            "STOPSIGNAL" => d.stopsignal = rest,
            "USER" => d.user = rest,
            "VOLUME" => d.volumes = serde_json::from_str(&rest).unwrap(),
            _ => {}
        }
    }
    d
}

/// The parts of compose.yaml the contract is about (a YAML subset: block maps and
/// lists, two-space indentation), read by indentation.
#[derive(Default)]
struct Compose {
    kafko_env: BTreeMap<String, String>,
    kafko_flags: Vec<String>,
    kafko_container_ports: Vec<u16>,
    kafko_volumes: Vec<String>,
    load_url: String,
    load_waits_for_health: bool,
}

fn compose() -> Compose {
    let text = repo_file("docker/compose.yaml");
    let mut c = Compose::default();
    let (mut service, mut key) = (String::new(), String::new());
    for line in text.lines() {
        if line.trim_start().starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let t = line.trim();
        let unquote = |s: &str| s.trim().trim_matches('"').to_owned();
        match indent {
            0 => service.clear(),
            2 => service = t.trim_end_matches(':').to_owned(),
            4 => key = t.split(':').next().unwrap_or_default().to_owned(),
            _ => match (service.as_str(), key.as_str()) {
                ("kafko", "environment") => {
                    let (k, v) = t.split_once(':').expect("environment as a map");
                    c.kafko_env.insert(k.trim().to_owned(), unquote(v));
                }
                ("kafko", "command") => {
                    let a = unquote(t.trim_start_matches("- "));
                    if a.starts_with("--") {
                        c.kafko_flags
                            .push(a.split('=').next().unwrap_or_default().into());
                    }
                }
                ("kafko", "ports") => {
                    let p = unquote(t.trim_start_matches("- "));
                    c.kafko_container_ports
                        .push(p.rsplit(':').next().unwrap().parse().unwrap());
                }
                ("kafko", "volumes") => c.kafko_volumes.push(unquote(t.trim_start_matches("- "))),
                ("load", "command") if t.contains("http://") => {
                    c.load_url = unquote(t.trim_start_matches("- "));
                }
                ("load", "depends_on") if t.contains("service_healthy") => {
                    c.load_waits_for_health = true;
                }
                _ => {}
            },
        }
    }
    c
}

fn port_of(addr: &str) -> u16 {
    addr.rsplit(':').next().unwrap().parse().unwrap()
}

#[test]
fn every_flag_and_variable_of_the_image_and_compose_exists_in_help() {
    let (flags, vars) = help();
    let d = dockerfile();
    let c = compose();
    assert!(
        !d.env.is_empty() && !c.kafko_env.is_empty(),
        "parsers found nothing"
    );
    for var in d.env.keys().chain(c.kafko_env.keys()) {
        assert!(
            vars.contains(var),
            "{var} is set by docker/ but kafko --help has no such variable; known: {vars:?}"
        );
    }
    for flag in d.flags.iter().chain(&c.kafko_flags) {
        assert!(
            flags.contains(flag),
            "{flag} is used by docker/ but kafko --help has no such flag; known: {flags:?}"
        );
    }
    // The image binds every interface on the port it exposes; compose publishes that
    // port and the load test targets it by service name.
    let bind = d.env.get("KAFKO_BIND").expect("the image sets KAFKO_BIND");
    assert!(bind.starts_with("0.0.0.0:"), "KAFKO_BIND={bind}");
    let port = port_of(bind);
    let image_kafka = d
        .env
        .get("KAFKO_KAFKA_BIND")
        .expect("the image sets KAFKO_KAFKA_BIND");
    assert!(
        image_kafka.starts_with("0.0.0.0:"),
        "KAFKO_KAFKA_BIND={image_kafka}"
    );
    assert_eq!(
        d.expose,
        vec![port, port_of(image_kafka)],
        "EXPOSE vs KAFKO_BIND and KAFKO_KAFKA_BIND"
    );
    // Compose serves the Kafka listener on every interface too, and publishes it.
    let kafka = c
        .kafko_env
        .get("KAFKO_KAFKA_BIND")
        .expect("compose sets KAFKO_KAFKA_BIND");
    assert!(kafka.starts_with("0.0.0.0:"), "KAFKO_KAFKA_BIND={kafka}");
    assert_eq!(
        c.kafko_container_ports,
        vec![port, port_of(kafka)],
        "compose ports vs KAFKO_BIND and KAFKO_KAFKA_BIND"
    );
    let url = c
        .load_url
        .strip_prefix("http://kafko:")
        .expect("load targets the kafko service");
    assert_eq!(
        port_of(url.split('/').next().unwrap()),
        port,
        "load URL port"
    );
    assert!(url.contains("/v1/topics/"), "load produces: {url}");
    assert!(
        c.load_waits_for_health,
        "load must wait for service_healthy"
    );
    // The data directory is the volume, in the image and in compose.
    let data = d
        .env
        .get("KAFKO_DATA_DIR")
        .expect("the image sets KAFKO_DATA_DIR");
    assert_eq!(d.volumes, vec![data.clone()], "VOLUME vs KAFKO_DATA_DIR");
    assert!(
        c.kafko_volumes
            .iter()
            .any(|v| v.ends_with(&format!(":{data}"))),
        "compose mounts a volume at {data}: {:?}",
        c.kafko_volumes
    );
    assert_eq!(d.stopsignal, "SIGTERM");
    assert!(d.healthcheck);
    assert!(!d.user.is_empty() && !d.user.starts_with("root") && !d.user.starts_with('0'));
    // KAFKO_BIND=0.0.0.0 belongs inside the image only.
    assert!(!c.kafko_env.contains_key("KAFKO_BIND"));
}

#[tokio::test]
async fn the_image_environment_starts_healthy_and_stops_on_sigterm_within_the_grace() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    std::fs::create_dir_all(&dir).unwrap();
    // The image's env, then compose's on top (as Docker applies them); the test harness
    // replaces only the bind address and data directory, by flag.
    let mut env = dockerfile().env;
    env.extend(compose().kafko_env);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut s = Server::start_env(&dir, &[], &env).await;

    let probe = |addr: &str| {
        Command::new(BIN)
            .arg("--healthcheck")
            .env("KAFKO_BIND", addr)
            .output()
            .unwrap()
    };
    let healthy = probe(&s.addr);
    assert!(
        healthy.status.success(),
        "--healthcheck against a live server: {}",
        String::from_utf8_lossy(&healthy.stderr)
    );
    // What the compose load test does, once.
    let r = client()
        .post(s.url("/v1/topics/load/records"))
        .body("one record")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);

    let started = Instant::now();
    let status = s.sigterm().await;
    assert!(status.success(), "exit status {status:?}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "SIGTERM took {:?}",
        started.elapsed()
    );
    let after = probe(&s.addr);
    assert_eq!(after.status.code(), Some(1), "--healthcheck after the stop");
}

/// Children of `pid` (the first thread's list is enough for `unshare --fork`).
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

#[test]
fn as_pid_1_sigterm_stops_cleanly_and_keeps_acknowledged_records() {
    let probe = Command::new("unshare")
        .args(["--pid", "--fork", "--kill-child", "true"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("SKIP: cannot create a PID namespace here (unshare --pid needs root)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let addr = format!("127.0.0.1:{port}");
    let mut outer = Command::new("unshare")
        .args(["--pid", "--fork", "--kill-child", BIN])
        .args(["--bind", &addr, "--data-dir"])
        .arg(tmp.path().join("data"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while kafko_http::probe::healthz(&addr, Duration::from_secs(1)).is_err() {
        assert!(
            Instant::now() < deadline,
            "server as PID 1 did not become healthy"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let inner = children(outer.id());
    assert_eq!(inner.len(), 1, "one child of unshare: {inner:?}");
    let ns_pid = std::fs::read_to_string(format!("/proc/{}/status", inner[0]))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("NSpid:").map(str::to_owned))
        .unwrap();
    assert_eq!(
        ns_pid.split_whitespace().last(),
        Some("1"),
        "the server is PID 1 in its namespace"
    );

    // Acknowledged (fsync never: in the page cache), then SIGTERM to PID 1.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let base = format!("http://{addr}");
    let acked: Vec<u64> = rt.block_on(async {
        let c = client();
        let mut acked = Vec::new();
        for i in 0..50 {
            let r = c
                .post(format!("{base}/v1/topics/pid1/records"))
                .body(format!("record {i}"))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 201);
            let b: serde_json::Value = r.json().await.unwrap();
            acked.push(b["offsets"][0]["offset"].as_u64().unwrap());
        }
        acked
    });
    let started = Instant::now();
    let kill = Command::new("kill")
        .args(["-TERM", &inner[0].to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = loop {
        if let Some(s) = outer.try_wait().unwrap() {
            break s;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "PID 1 ignored SIGTERM for 10 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "PID 1 exit status {status:?}");

    // Every acknowledged record is there after a restart.
    let s = rt.block_on(Server::start(&tmp.path().join("data"), &[]));
    let body: serde_json::Value = rt.block_on(async {
        client()
            .get(s.url("/v1/topics/pid1/records?partition=0&max_records=1000"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    });
    let stored: Vec<u64> = body["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["offset"].as_u64().unwrap())
        .collect();
    assert_eq!(stored, acked);
    drop(s);
}
