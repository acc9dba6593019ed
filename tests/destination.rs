//! The one destination of the tests (the proxy's and `fetch`'s third party, and the outbound
//! client's): a bare HTTP/1.1 server on a loopback port that keeps every request exactly as
//! its bytes arrived, counts the connections it accepts, and answers as the test told it.
//!
//! Raw TCP rather than a mock server library: the vault's tests assert what reached the third
//! party byte for byte (a request target that a URL parser would normalise, `/a/../b`, must be
//! seen as sent), and that a refused destination was never connected to at all.
//!
//! Used by `tokenvault-tests` (`tokenvault_tests::destination`) and by the outbound adapter's
//! own tests, which include this file (`crates/outbound/tests/forward.rs`).

// Each user uses part of it.
#![allow(dead_code)]

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// A request as the destination received it.
#[derive(Clone, Debug)]
pub struct Received {
    /// Method.
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    /// Header names (lower case) and values, in order.
    pub headers: Vec<(String, String)>,
    /// Body.
    pub body: Vec<u8>,
    /// The whole request, head and body, as its bytes arrived.
    pub raw: Vec<u8>,
}

impl Received {
    /// The first value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// A response built from its parts, the connection closed after it.
#[derive(Clone, Debug)]
pub struct Answer {
    /// Status.
    pub status: u16,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// Body.
    pub body: Vec<u8>,
    /// Wait this long before answering.
    pub delay: Duration,
}

impl Default for Answer {
    fn default() -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: br#"{"ok":true}"#.to_vec(),
            delay: Duration::ZERO,
        }
    }
}

/// What the destination does with each request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// Answers with this and closes the connection.
    Answer(Answer),
    /// Writes these bytes (a whole HTTP/1.1 response, any bytes at all) and keeps the
    /// connection open for the next request.
    Raw(Vec<u8>),
    /// Reads the request and never answers.
    Never,
}

impl Reply {
    /// A response with a status line, headers and a body (Content-Length added), on a
    /// connection kept open.
    pub fn with(status_line: &str, headers: &[(&str, &str)], body: &[u8]) -> Self {
        let mut raw = format!("HTTP/1.1 {status_line}\r\n");
        for (name, value) in headers {
            let _ = write!(raw, "{name}: {value}\r\n");
        }
        let _ = write!(raw, "Content-Length: {}\r\n\r\n", body.len());
        let mut raw = raw.into_bytes();
        raw.extend_from_slice(body);
        Reply::Raw(raw)
    }
}

/// The running destination; stops when dropped.
pub struct Destination {
    /// `http://<ip>:<port>`.
    pub url: String,
    /// Where it listens.
    pub addr: SocketAddr,
    connections: Arc<AtomicUsize>,
    received: Arc<Mutex<Vec<Received>>>,
    reply: Arc<Mutex<Reply>>,
    task: JoinHandle<()>,
}

impl Destination {
    /// Starts one on `ip` (a loopback address), port chosen by the system, answering
    /// [`Answer::default`].
    pub async fn start(ip: &str) -> Self {
        Self::listen(ip, Reply::Answer(Answer::default())).await
    }

    /// Starts one on 127.0.0.1 that does `reply` with every request.
    pub async fn replying(reply: Reply) -> Self {
        Self::listen("127.0.0.1", reply).await
    }

    async fn listen(ip: &str, reply: Reply) -> Self {
        let listener = TcpListener::bind((ip, 0)).await.expect("bind destination");
        let addr = listener.local_addr().expect("local address");
        let connections = Arc::new(AtomicUsize::new(0));
        let received = Arc::new(Mutex::new(Vec::new()));
        let reply = Arc::new(Mutex::new(reply));
        let task = tokio::spawn({
            let connections = Arc::clone(&connections);
            let received = Arc::clone(&received);
            let reply = Arc::clone(&reply);
            async move {
                while let Ok((stream, _)) = listener.accept().await {
                    connections.fetch_add(1, Ordering::SeqCst);
                    tokio::spawn(serve(stream, Arc::clone(&reply), Arc::clone(&received)));
                }
            }
        });
        Self {
            url: format!("http://{addr}"),
            addr,
            connections,
            received,
            reply,
            task,
        }
    }

    /// Answers every following request with `answer`.
    pub fn answer(&self, answer: Answer) {
        *self.reply.lock().expect("lock") = Reply::Answer(answer);
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Every request received so far.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().expect("lock").clone()
    }

    /// The last request received.
    pub fn last(&self) -> Received {
        self.received()
            .pop()
            .expect("the destination received a request")
    }

    /// The requests received so far, as their bytes arrived.
    pub fn requests(&self) -> Vec<Vec<u8>> {
        self.received().into_iter().map(|r| r.raw).collect()
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// Asserts that no connection was ever made. Connections are accepted in order, so once a
    /// probe connection made now has been counted, any earlier one has been counted too.
    pub async fn assert_no_connection(&self, what: &str) {
        let before = self.connections();
        let probe = TcpStream::connect(self.addr).await.expect("probe");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while self.connections() == before && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        drop(probe);
        assert_eq!(
            self.connections(),
            1,
            "{what}: the destination saw a connection"
        );
        // The probe counted: leave the count as it was for later checks.
        self.connections.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Drop for Destination {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(
    mut stream: TcpStream,
    reply: Arc<Mutex<Reply>>,
    received: Arc<Mutex<Vec<Received>>>,
) {
    while let Some(request) = read_request(&mut stream).await {
        received.lock().expect("lock").push(request);
        let reply = reply.lock().expect("lock").clone();
        match reply {
            Reply::Raw(bytes) => {
                if stream.write_all(&bytes).await.is_err() {
                    return;
                }
            }
            Reply::Never => {
                tokio::time::sleep(Duration::from_mins(1)).await;
                return;
            }
            Reply::Answer(answer) => {
                tokio::time::sleep(answer.delay).await;
                let mut out = format!("HTTP/1.1 {} X\r\n", answer.status);
                for (n, v) in &answer.headers {
                    let _ = write!(out, "{n}: {v}\r\n");
                }
                let _ = write!(
                    out,
                    "content-length: {}\r\nconnection: close\r\n\r\n",
                    answer.body.len()
                );
                let _ = stream.write_all(out.as_bytes()).await;
                let _ = stream.write_all(&answer.body).await;
                let _ = stream.shutdown().await;
                return;
            }
        }
    }
}

/// Reads one request: the head, then a body of its Content-Length. `None` at the end of the
/// stream before a whole head. A request cut short, or whose length cannot be read, is kept
/// as far as it came (a test that nothing was sent must see it too).
async fn read_request(stream: &mut TcpStream) -> Option<Received> {
    let mut buf = Vec::new();
    let mut chunk = [0_u8; 8192];
    let head_end = loop {
        if let Some(at) = find(&buf, b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end - 4]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or_default().split(' ');
    let method = first.next().unwrap_or_default().to_string();
    let target = first.next().unwrap_or_default().to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map_or(0, |(_, v)| v.parse().unwrap_or(0));
    while buf.len() < head_end + length {
        match stream.read(&mut chunk).await {
            Ok(n) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            _ => break,
        }
    }
    let end = buf.len().min(head_end + length);
    Some(Received {
        method,
        target,
        headers,
        body: buf[head_end..end].to_vec(),
        raw: buf,
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
