//! `kafko-bench-noop`: the HTTP ceilings of the kafko benchmarks (`bench/run-http.sh`).
//!
//! The handler reads the whole body and answers `201` with a small JSON body the size
//! of a one-record produce answer, on the same tokio runtime as `kafko`
//! (`#[tokio::main]`, one worker per core) and with the same body limit. Two transports
//! carry it:
//! - `--transport plain` (the default, "the ceiling"): `axum::serve` as a user writes
//!   it, with `TCP_NODELAY` as `kafko` sets it. What a bare handler costs; the figure
//!   load testers compare kafko with.
//! - `--transport kafko` ("transport only"): kafko-http's own accept loop and connection
//!   serving (`kafko_http::server::serve_router`: the connection cap, header-read and
//!   idle timeouts, the backoff when out of descriptors) with the server's default
//!   settings. Its gap to `plain` is what kafko's transport costs; its gap to `kafko`
//!   is what the log, routing, validation and middleware cost.
//!
//! Usage: `kafko-bench-noop [--bind ADDR] [--transport plain|kafko]` (default
//! `127.0.0.1:0`, `plain`); prints `listening on http://ADDR` once bound. Stops on
//! SIGTERM/SIGINT (default action).

use axum::Router;
use axum::body::Bytes;
use axum::extract::DefaultBodyLimit;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use kafko_http::server::{ServeOptions, serve_router};
use kafko_service::ServerConfig;

/// What `kafko` answers to a one-record produce, give or take the digits.
const ANSWER: &str = r#"{"offsets":[{"partition":0,"offset":1234567,"timestamp":1764400000000}]}"#;

async fn sink(body: Bytes) -> impl IntoResponse {
    // Touch the body so reading it cannot be optimised away.
    let _len = std::hint::black_box(body.len());
    (
        StatusCode::CREATED,
        [(header::CONTENT_TYPE, "application/json")],
        ANSWER,
    )
}

async fn healthz() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        r#"{"status":"ok"}"#,
    )
}

/// Which transport serves the handler.
#[derive(Clone, Copy)]
enum Transport {
    /// `axum::serve`.
    Plain,
    /// kafko-http's accept loop and connection serving.
    Kafko,
}

const USAGE: &str = "usage: kafko-bench-noop [--bind ADDR] [--transport plain|kafko]";

fn args() -> Result<(String, Transport), String> {
    let mut args = std::env::args().skip(1);
    let mut bind = "127.0.0.1:0".to_owned();
    let mut transport = Transport::Plain;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--bind" => bind = args.next().ok_or("--bind needs an address")?,
            "--transport" => {
                transport = match args.next().as_deref() {
                    Some("plain") => Transport::Plain,
                    Some("kafko") => Transport::Kafko,
                    _ => return Err("--transport takes plain or kafko".to_owned()),
                }
            }
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument '{other}'; {USAGE}")),
        }
    }
    Ok((bind, transport))
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let (bind, transport) = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("kafko-bench-noop: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let listener = match tokio::net::TcpListener::bind(&bind).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("kafko-bench-noop: cannot bind {bind}: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match listener.local_addr() {
        Ok(addr) => println!("listening on http://{addr}"),
        Err(e) => {
            eprintln!("kafko-bench-noop: {e}");
            return std::process::ExitCode::FAILURE;
        }
    }
    let config = ServerConfig::default();
    let router = Router::new()
        .route("/v1/topics/{topic}/records", post(sink))
        .route("/healthz", get(healthz))
        .layer(DefaultBodyLimit::max(config.max_body_bytes));
    match transport {
        Transport::Plain => {
            let listener = listener.tap_io(|stream| {
                if let Err(e) = stream.set_nodelay(true) {
                    eprintln!("kafko-bench-noop: TCP_NODELAY: {e}");
                }
            });
            if let Err(e) = axum::serve(listener, router).await {
                eprintln!("kafko-bench-noop: {e}");
                return std::process::ExitCode::FAILURE;
            }
        }
        Transport::Kafko => {
            // Never set: the signals' default action ends the process.
            let (_never_stop, shutdown) = tokio::sync::watch::channel(false);
            serve_router(listener, router, ServeOptions::from(&config), shutdown).await;
        }
    }
    std::process::ExitCode::SUCCESS
}
