//! A proxy destination for the tests: a bare HTTP/1.1 server on a loopback port that records
//! every request it receives and answers each with what the test told it (one request per
//! connection, `Connection: close`).

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

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

/// What the destination answers.
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

/// The running destination.
#[derive(Clone)]
pub struct Destination {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    received: Arc<Mutex<Vec<Received>>>,
    answer: Arc<Mutex<Answer>>,
}

impl Destination {
    /// Starts one on `ip` (a loopback address), port chosen by the system.
    pub async fn start(ip: &str) -> Self {
        let listener = TcpListener::bind((ip, 0)).await.expect("bind destination");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let me = Self {
            url,
            received: Arc::default(),
            answer: Arc::default(),
        };
        let served = me.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let served = served.clone();
                tokio::spawn(async move { served.serve(stream).await });
            }
        });
        me
    }

    /// Answers every following request with `answer`.
    pub fn answer(&self, answer: Answer) {
        *self.answer.lock().expect("lock") = answer;
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

    async fn serve(&self, mut stream: TcpStream) {
        let mut buffer = Vec::new();
        let mut chunk = [0_u8; 8192];
        let head_end = loop {
            if let Some(at) = find(&buffer, b"\r\n\r\n") {
                break at;
            }
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
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
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        let mut body = buffer[head_end + 4..].to_vec();
        while body.len() < length {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => body.extend_from_slice(&chunk[..n]),
            }
        }
        self.received.lock().expect("lock").push(Received {
            method,
            target,
            headers,
            body,
        });
        let answer = self.answer.lock().expect("lock").clone();
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
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
