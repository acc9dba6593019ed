//! Node's `http`/`https` (`http.js`) and `fetch` (`fetch.js`). Neither has host functions of
//! its own: each request goes over the worker's channel (`worker/host_calls.rs`), and the
//! server sends it through the proxies' outbound client (`pool/fetch.rs`).

#[cfg(test)]
mod tests;
