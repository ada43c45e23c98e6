//! Start-up of the real binary: a taken port (a local Kafka, another server) stops it at
//! once with a message naming the address and the flag that moves it, before the data
//! directory is touched; `--kafka-bind off` serves no Kafka.

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
