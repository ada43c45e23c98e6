//! `kafko-bench-noop`: the HTTP ceiling of the kafko benchmarks (`bench/run-http.sh`).
//!
//! It does what `kafko` does around a produce, and nothing else: the same tokio
//! runtime (`#[tokio::main]`, one worker per core), kafko-http's own accept loop and
//! connection serving (`kafko_http::server::serve_router`: auto HTTP/1+2, `TCP_NODELAY`,
//! the connection cap, header-read and idle timeouts, the backoff when out of
//! descriptors) with the server's default settings, the same body limit; the handler
//! reads the whole body and answers `201` with a small JSON body the size of a
//! one-record produce answer. The gap between this server and `kafko` under the
//! same load is what the log, routing, validation and middleware cost.
//!
//! Usage: `kafko-bench-noop [--bind ADDR]` (default `127.0.0.1:0`); prints
//! `listening on http://ADDR` once bound. Stops on SIGTERM/SIGINT (default action).

use axum::Router;
use axum::body::Bytes;
use axum::extract::DefaultBodyLimit;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
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

fn bind_arg() -> Result<String, String> {
    let mut args = std::env::args().skip(1);
    let mut bind = "127.0.0.1:0".to_owned();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--bind" => bind = args.next().ok_or("--bind needs an address")?,
            "-h" | "--help" => {
                return Err("usage: kafko-bench-noop [--bind ADDR]".to_owned());
            }
            other => return Err(format!("unknown argument '{other}'")),
        }
    }
    Ok(bind)
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let bind = match bind_arg() {
        Ok(b) => b,
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
    // Never set: the signals' default action ends the process, as before.
    let (_never_stop, shutdown) = tokio::sync::watch::channel(false);
    serve_router(listener, router, ServeOptions::from(&config), shutdown).await;
    std::process::ExitCode::SUCCESS
}
