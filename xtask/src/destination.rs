//! The proxy's destination in `cargo xtask bench`: a small actix-web server on a thread of its
//! own that reads the whole request body and answers 200 with a short JSON body, on a
//! connection kept alive, as a real destination does.
//!
//! Why not the vault's own `/health`: it leaves a request body unread, and actix answers such
//! a request with `connection: close`, so every proxied call paid a new TCP connection (an
//! strace of the proxy load: one `connect`, `accept4` and two `shutdown`s per request) that no
//! real destination would make it pay.

use std::net::TcpListener;
use std::sync::mpsc;

use actix_web::dev::ServerHandle;
use actix_web::{App, HttpResponse, HttpServer, web};
use anyhow::Context as _;

/// A running destination; stopped when dropped.
pub(crate) struct Destination {
    /// `http://127.0.0.1:<port>`.
    pub(crate) base: String,
    handle: ServerHandle,
}

/// What the destination answers to any method on any path: the size of the body it read.
async fn answer(body: web::Bytes) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(format!("{{\"received\":{}}}", body.len()))
}

/// Starts the destination on a free loopback port, with one worker.
pub(crate) fn start() -> anyhow::Result<Destination> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("bench-destination".into())
        .spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                let server = HttpServer::new(|| App::new().default_service(web::to(answer)))
                    .workers(1)
                    // Ctrl-C stops the bench, not only its destination.
                    .disable_signals()
                    .listen(listener)?
                    .run();
                let _ = tx.send(server.handle());
                server.await
            })
        })?;
    let handle = rx.recv().context("the bench destination did not start")?;
    Ok(Destination {
        base: format!("http://127.0.0.1:{port}"),
        handle,
    })
}

impl Drop for Destination {
    fn drop(&mut self) {
        // The stop is sent at the call; the returned future only waits for it.
        drop(self.handle.stop(false));
    }
}
