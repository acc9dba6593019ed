//! A destination for the tests: a TCP listener on 127.0.0.1 that counts the connections it
//! accepts, records the requests it reads and answers each with a fixed HTTP/1.1 response (or
//! never answers). Connections are kept open for more requests until the client closes them.

// Shared by several test binaries, each using part of it.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// What the destination does with a request.
#[derive(Clone)]
pub enum Reply {
    /// Writes these bytes (a whole HTTP/1.1 response).
    Raw(Vec<u8>),
    /// Reads the request and never answers.
    Never,
}

impl Reply {
    /// A response with a status line, headers and a body (Content-Length added).
    pub fn with(status_line: &str, headers: &[(&str, &str)], body: &[u8]) -> Self {
        let mut raw = format!("HTTP/1.1 {status_line}\r\n");
        for (name, value) in headers {
            raw.push_str(name);
            raw.push_str(": ");
            raw.push_str(value);
            raw.push_str("\r\n");
        }
        raw.push_str("Content-Length: ");
        raw.push_str(&body.len().to_string());
        raw.push_str("\r\n\r\n");
        let mut raw = raw.into_bytes();
        raw.extend_from_slice(body);
        Reply::Raw(raw)
    }
}

/// The running destination; stops when dropped.
pub struct Destination {
    /// Where it listens (127.0.0.1, a free port).
    pub addr: SocketAddr,
    connections: Arc<AtomicUsize>,
    requests: Arc<Mutex<Vec<Vec<u8>>>>,
    task: JoinHandle<()>,
}

impl Destination {
    /// Starts listening on 127.0.0.1.
    pub async fn start(reply: Reply) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local address");
        let connections = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let task = tokio::spawn({
            let connections = Arc::clone(&connections);
            let requests = Arc::clone(&requests);
            async move {
                while let Ok((stream, _)) = listener.accept().await {
                    connections.fetch_add(1, Ordering::SeqCst);
                    tokio::spawn(serve(stream, reply.clone(), Arc::clone(&requests)));
                }
            }
        });
        Destination {
            addr,
            connections,
            requests,
            task,
        }
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// The raw requests read so far.
    pub fn requests(&self) -> Vec<Vec<u8>> {
        self.requests.lock().expect("lock").clone()
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

async fn serve(mut stream: TcpStream, reply: Reply, requests: Arc<Mutex<Vec<Vec<u8>>>>) {
    while let Some(request) = read_request(&mut stream).await {
        requests.lock().expect("lock").push(request);
        match &reply {
            Reply::Raw(bytes) => {
                if stream.write_all(bytes).await.is_err() {
                    return;
                }
            }
            Reply::Never => {
                tokio::time::sleep(Duration::from_mins(1)).await;
                return;
            }
        }
    }
}

/// Reads one request: the head, then a body of its Content-Length. None at end of stream.
async fn read_request(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    let mut chunk = [0_u8; 4096];
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
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .map_or(0, |value| value.trim().parse::<usize>().expect("a length"));
    while buf.len() < head_end + length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some(buf)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
