//! `fetch` for one call of tenant code (docs/decisions.md §7): the proxies' outbound client and
//! destination policy (§8: https only, no loopback, private or link-local address unless the
//! operator allows it), at most [`MAX_REQUESTS`] requests per call; the client bounds each
//! answer (10 MiB) and its time; the code runner bounds the whole by the call's deadline.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;

use crate::ports::code::CodeFetch;
use crate::ports::forward::{
    ForwardError, Forwarder, OutboundRequest, OutboundResponse, is_hop_by_hop,
};

/// The most outbound requests one call makes.
pub const MAX_REQUESTS: usize = 10;

/// The `fetch` of one call.
pub struct GuardedFetch {
    forwarder: Arc<dyn Forwarder>,
    used: AtomicUsize,
}

impl GuardedFetch {
    /// A fresh allowance of [`MAX_REQUESTS`] over `forwarder`.
    pub fn new(forwarder: Arc<dyn Forwarder>) -> Self {
        Self {
            forwarder,
            used: AtomicUsize::new(0),
        }
    }
}

#[async_trait]
impl CodeFetch for GuardedFetch {
    async fn fetch(&self, mut request: OutboundRequest) -> Result<OutboundResponse, String> {
        if self.used.fetch_add(1, Ordering::SeqCst) >= MAX_REQUESTS {
            return Err(format!("at most {MAX_REQUESTS} outbound requests per call"));
        }
        let method = request.method.to_ascii_uppercase();
        if method.is_empty()
            || method.len() > 16
            || !method.bytes().all(|b| b.is_ascii_alphabetic())
        {
            return Err("the method is not a valid HTTP method".into());
        }
        request.method = method;
        self.forwarder
            .check_destination(&request.url)
            .map_err(|why| format!("the destination is not allowed: {why}"))?;
        request.headers.retain(|(name, value)| {
            // The client sets these itself, or they concern one connection only.
            !is_hop_by_hop(name)
                && !name.eq_ignore_ascii_case("host")
                && !name.is_empty()
                && !name
                    .bytes()
                    .any(|b| b.is_ascii_control() || b == b':' || b == b' ')
                && !value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0)
                // Answers reach code as the destination sends them and the runtime has no
                // zlib: the destination is asked for no compression, whatever code asked.
                && !name.eq_ignore_ascii_case("accept-encoding")
        });
        request
            .headers
            .push(("accept-encoding".into(), "identity".into()));
        self.forwarder.forward(request).await.map_err(|e| match e {
            ForwardError::Refused(why) => format!("the destination is not allowed: {why}"),
            other => other.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Answers every request with 200 and records what it was sent; refuses `http:`.
    #[derive(Default)]
    struct Recording(Mutex<Vec<OutboundRequest>>);

    #[async_trait]
    impl Forwarder for Recording {
        fn check_destination(&self, url: &str) -> Result<(), String> {
            if url.starts_with("https://") {
                Ok(())
            } else {
                Err("only https".into())
            }
        }
        async fn forward(
            &self,
            request: OutboundRequest,
        ) -> Result<OutboundResponse, ForwardError> {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(request);
            Ok(OutboundResponse {
                status: 200,
                headers: vec![],
                body: b"ok".to_vec(),
            })
        }
    }

    fn get(url: &str) -> OutboundRequest {
        OutboundRequest {
            method: "get".into(),
            url: url.into(),
            headers: vec![
                ("Host".into(), "evil.example".into()),
                ("X-Ok".into(), "yes".into()),
                ("X-Split".into(), "a\r\nInjected: 1".into()),
                ("Accept-Encoding".into(), "gzip".into()),
            ],
            body: vec![],
        }
    }

    #[tokio::test]
    async fn ten_requests_a_call_the_policy_first_and_headers_the_client_owns_dropped() {
        let recording = Arc::new(Recording::default());
        let fetch = GuardedFetch::new(recording.clone());
        let refused = fetch.fetch(get("http://127.0.0.1/")).await;
        assert_eq!(
            refused.err().as_deref(),
            Some("the destination is not allowed: only https")
        );
        for _ in 1..MAX_REQUESTS {
            assert_eq!(
                fetch
                    .fetch(get("https://api.example/"))
                    .await
                    .map(|r| r.status),
                Ok(200)
            );
        }
        assert!(
            fetch.fetch(get("https://api.example/")).await.is_err(),
            "the eleventh"
        );
        let sent = recording
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        assert_eq!(
            sent.len(),
            MAX_REQUESTS - 1,
            "the refused one was never sent"
        );
        assert_eq!(sent[0].method, "GET");
        assert_eq!(
            sent[0].headers,
            vec![
                ("X-Ok".to_string(), "yes".to_string()),
                ("accept-encoding".to_string(), "identity".to_string())
            ]
        );
    }
}
