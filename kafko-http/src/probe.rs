//! `kafko --healthcheck`: a container health probe without curl. Connects to the
//! `--bind` address (an unspecified address such as `0.0.0.0` means loopback), sends
//! `GET /healthz` and succeeds only on a `200` status line. Blocking std I/O with
//! timeouts: it runs once and exits, so no runtime is needed.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Why a probe failed, in words for the container's health log.
pub type ProbeError = String;

/// Probes `GET /healthz` on `bind`; `Ok` when the server answers 200 within `timeout`
/// (per step: connect, write, read).
///
/// # Errors
/// The step that failed (resolving `bind`, connecting, writing, reading), or the
/// status when it was not 200, in words.
pub fn healthz(bind: &str, timeout: Duration) -> Result<(), ProbeError> {
    let addr = target(bind)?;
    let mut stream =
        TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("connect {addr}: {e}"))?;
    let io = |e: std::io::Error| format!("{addr}: {e}");
    stream.set_read_timeout(Some(timeout)).map_err(io)?;
    stream.set_write_timeout(Some(timeout)).map_err(io)?;
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .map_err(io)?;
    // The status line is all we need: "HTTP/1.1 200 OK".
    let mut head = Vec::with_capacity(64);
    let mut buf = [0u8; 64];
    while !head.contains(&b'\n') && head.len() < 1024 {
        let n = stream.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = String::from_utf8_lossy(&head);
    let line = line.lines().next().unwrap_or("");
    match line.split(' ').nth(1) {
        Some("200") => Ok(()),
        _ => Err(format!(
            "GET /healthz on {addr}: unexpected answer {line:?}"
        )),
    }
}

/// The address to probe for a listen address: the unspecified address means loopback.
fn target(bind: &str) -> Result<SocketAddr, ProbeError> {
    let mut addr = bind
        .to_socket_addrs()
        .map_err(|e| format!("bad --bind '{bind}': {e}"))?
        .next()
        .ok_or_else(|| format!("--bind '{bind}' resolves to no address"))?;
    if addr.ip().is_unspecified() {
        addr.set_ip(match addr.ip() {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
        });
    }
    if addr.port() == 0 {
        return Err(format!("--bind '{bind}' has port 0: nothing to probe"));
    }
    Ok(addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unspecified_bind_addresses_are_probed_on_loopback() {
        assert_eq!(
            target("0.0.0.0:8080").unwrap(),
            "127.0.0.1:8080".parse().unwrap()
        );
        assert_eq!(target("[::]:9000").unwrap(), "[::1]:9000".parse().unwrap());
        assert_eq!(
            target("10.1.2.3:80").unwrap(),
            "10.1.2.3:80".parse().unwrap()
        );
        assert!(target("127.0.0.1:0").is_err());
    }

    #[test]
    fn nothing_listening_is_unhealthy() {
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = free.local_addr().unwrap();
        drop(free);
        assert!(healthz(&addr.to_string(), Duration::from_secs(1)).is_err());
    }
}
