//! `tokenvault healthcheck`: asks the server of this configuration for `GET /ready` on
//! loopback, for a container's `HEALTHCHECK` (the runtime image has no curl, no shell).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::Config;

/// The address to ask: the listen address, with a wildcard host replaced by loopback.
fn target(listen: &str) -> anyhow::Result<SocketAddr> {
    let mut addr = listen
        .to_socket_addrs()
        .map_err(|e| anyhow::anyhow!("TOKENVAULT_LISTEN {listen:?}: {e}"))?
        .next()
        .ok_or_else(|| anyhow::anyhow!("TOKENVAULT_LISTEN {listen:?} names no address"))?;
    if addr.ip().is_unspecified() {
        addr.set_ip(if addr.is_ipv4() {
            std::net::Ipv4Addr::LOCALHOST.into()
        } else {
            std::net::Ipv6Addr::LOCALHOST.into()
        });
    }
    Ok(addr)
}

/// `Ok` when `/ready` answers 200. With TLS on, only that the port accepts connections (the
/// check does not carry a TLS client; the load balancer's own check reads `/ready`).
///
/// # Errors
/// No connection, or an answer other than 200.
pub fn check(config: &Config) -> anyhow::Result<String> {
    let addr = target(&config.http.listen)?;
    let timeout = Duration::from_secs(3);
    let mut stream = TcpStream::connect_timeout(&addr, timeout)
        .map_err(|e| anyhow::anyhow!("no connection to {addr}: {e}"))?;
    if config.http.tls.is_some() {
        return Ok(format!("{addr} accepts connections (TLS)"));
    }
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    write!(
        stream,
        "GET /ready HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut answer = String::new();
    stream.take(64 * 1024).read_to_string(&mut answer)?;
    let status = answer.split(' ').nth(1).unwrap_or_default();
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default().trim();
    anyhow::ensure!(status == "200", "{addr}/ready answered {status}: {body}");
    Ok(body.to_string())
}
