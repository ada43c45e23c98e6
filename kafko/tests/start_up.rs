//! Start-up of the real binary: a taken port (a local Kafka, another server) stops it at
//! once with a message naming the address and the flag that moves it, before the data
//! directory is touched; `--kafka-bind off` serves no Kafka, and
//! `--schema-registry-bind off` opens no listener of the registry's own.

mod common;

use std::net::TcpListener;
use std::process::{Command, Output};

use common::Server;

/// Runs the binary to its exit with `flags`, on a data directory that does not exist yet.
fn run_to_exit(data: &std::path::Path, flags: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kafko"))
        .arg("--data-dir")
        .arg(data)
        .args(flags)
        .env_remove("KAFKO_AUTH_TOKEN")
        .output()
        .expect("run kafko")
}

#[test]
fn a_taken_kafka_port_stops_the_server_naming_the_port_and_the_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = run_to_exit(&data, &["--bind", "127.0.0.1:0", "--kafka-bind", &addr]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&addr), "{stderr}");
    assert!(stderr.contains("--kafka-bind"), "{stderr}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("listening on"));
    assert!(
        !data.exists(),
        "the data directory was created before the bind failed"
    );
}

#[test]
fn a_taken_http_port_stops_the_server_naming_the_port_and_the_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = run_to_exit(&data, &["--bind", &addr, "--kafka-bind", "off"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&addr), "{stderr}");
    assert!(stderr.contains("--bind"), "{stderr}");
    assert!(!stderr.contains("--kafka-bind"), "{stderr}");
    assert!(
        !data.exists(),
        "the data directory was created before the bind failed"
    );
}

#[tokio::test]
async fn kafka_bind_off_serves_no_kafka_and_a_port_serves_it() {
    let tmp = tempfile::tempdir().unwrap();
    let off = Server::start(&tmp.path().join("off"), &["--kafka-bind", "off"]).await;
    assert!(off.kafka.is_none());
    let on = Server::start(&tmp.path().join("on"), &["--kafka-bind", "127.0.0.1:0"]).await;
    let kafka = on.kafka.as_deref().expect("a Kafka listener");
    std::net::TcpStream::connect(kafka).expect("the Kafka listener accepts");
}

/// The TCP ports process `pid` listens on, from its socket descriptors and the
/// kernel's socket tables, ascending.
fn listening_ports(pid: u32) -> Vec<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
        })
        .collect();
    let mut ports = Vec::new();
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // local_address (hex address:port), st (0A: LISTEN), inode.
            if f[3] == "0A" && inodes.iter().any(|i| i == f[9]) {
                let port = f[1].rsplit(':').next().unwrap();
                ports.push(u16::from_str_radix(port, 16).unwrap());
            }
        }
    }
    ports.sort_unstable();
    ports
}

fn port(addr: &str) -> u16 {
    addr.rsplit(':').next().unwrap().parse().unwrap()
}

#[tokio::test]
async fn schema_registry_bind_off_opens_no_listener_and_the_http_port_serves_it() {
    let tmp = tempfile::tempdir().unwrap();
    let off = Server::start(&tmp.path().join("off"), &["--schema-registry-bind", "off"]).await;
    assert!(
        off.registry.is_none(),
        "no 'schema registry listening on' line"
    );
    assert_eq!(listening_ports(off.pid()), [port(&off.addr)]);
    let subjects = reqwest::get(off.url("/subjects")).await.unwrap();
    assert_eq!(subjects.status(), 200, "the registry on the HTTP port");

    let flags = ["--schema-registry-bind", "127.0.0.1:0"];
    let on = Server::start(&tmp.path().join("on"), &flags).await;
    let registry = on.registry.as_deref().expect("a registry listener");
    let mut want = vec![port(&on.addr), port(registry)];
    want.sort_unstable();
    assert_eq!(listening_ports(on.pid()), want);
}
