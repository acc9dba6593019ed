//! What the server and a code worker process say to each other over the worker's stdin and
//! stdout: frames of a little-endian `u32` length and that many bytes of JSON. The worker only
//! answers what it is asked and asks only for `req.svc` calls and log lines; the server checks
//! both.

use std::io::{self, Read, Write};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The largest frame a worker accepts (a request carries at most a 1 MiB body detokenized into
/// at most 10 MiB of token data).
pub const MAX_FRAME: usize = 64 << 20;
/// The largest first frame ([`ToWorker::Init`]), which carries the operator's packages as
/// bytecode (at most 40 MiB of source; the server refuses to start beyond this).
pub const MAX_INIT_FRAME: usize = 192 << 20;
/// The largest frame the server accepts from a worker: the worker bounds what it sends (a
/// result or a thrown error at 1 MiB each, a custom response's headers and body at 1 MiB, a
/// `svc` call's arguments at 2 MiB, a log line at 4 KiB), so a bigger one is a broken worker,
/// refused before it is read into memory.
pub const MAX_FROM_WORKER: usize = 4 << 20;

/// The server to the worker.
#[derive(Debug, Serialize, Deserialize)]
pub enum ToWorker {
    /// The first frame: the limits, and whether the worker must sandbox itself.
    Init {
        /// Wall-clock milliseconds of a call.
        timeout_ms: u64,
        /// Bytes of the QuickJS heap.
        memory: usize,
        /// Bytes of a result's JSON.
        max_output: usize,
        /// Install the seccomp filter (refused only by the operator's explicit opt-out).
        sandbox: bool,
        /// The operator's npm packages, compiled (`packages.rs`).
        modules: Vec<crate::packages::ModuleFile>,
    },
    /// Run a module with a request.
    Run {
        /// The tenant whose code it is.
        tenant: uuid::Uuid,
        /// The module's source.
        code: String,
        /// The request object (`args`, `configuration`, …).
        request: Value,
        /// Whether `req.svc` is a client (else null).
        svc: bool,
        /// Only compile the module, run nothing of it: `Done(Ok(true))` when it compiles,
        /// `Done(Compile(…))` when not.
        #[serde(default)]
        check: bool,
    },
    /// The answer to [`FromWorker::Svc`]: `{"ok": …}` or `{"error": <problem>}`.
    SvcReply(Value),
    /// The answer to [`FromWorker::Fetch`]: `{"ok": {status, headers, body (base64)}}` or
    /// `{"error": <why>}`.
    FetchReply(Value),
}

/// The worker to the server.
#[derive(Debug, Serialize, Deserialize)]
pub enum FromWorker {
    /// Started: the engine is warm and, when asked, the sandbox is on.
    Ready {
        /// The seccomp filter is installed.
        sandboxed: bool,
        /// Why it is not, when it is not.
        why: Option<String>,
    },
    /// A `req.svc` call the code made; the worker waits for [`ToWorker::SvcReply`].
    Svc {
        /// `tokens.create`, …
        method: String,
        /// The arguments.
        args: Vec<Value>,
        /// The key a client package was built with (`req.applicationOptions.apiKey`); none for
        /// `req.bt` itself.
        #[serde(default)]
        key: Option<String>,
    },
    /// An outbound request the code made (`fetch`); the worker waits for
    /// [`ToWorker::FetchReply`]. `{method, url, headers: [[name, value]], body (base64)}`.
    Fetch(Value),
    /// A `console.*` line.
    Log {
        /// `info`, `debug`, …
        level: String,
        /// The line (already bounded by the worker; bounded again by the server).
        text: String,
    },
    /// The end of a `Run`.
    Done(Outcome),
}

/// How a run ended, as the domain's `CodeError` says it (which derives no `Serialize`).
#[derive(Debug, Serialize, Deserialize)]
pub enum Outcome {
    /// The JSON the code returned.
    Ok(Value),
    /// The code threw: status, message, `errors`, the line of the code it was made on.
    Thrown(u16, String, Option<Value>, Option<u64>),
    /// `CustomHttpResponseError`: status, headers, body.
    Custom(u16, Value, Value),
    /// The code does not compile: the error and its line.
    Compile(String),
    /// A limit was reached.
    Limit(String),
    /// The runtime failed.
    Internal(String),
}

fn too_large() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "frame too large")
}

/// Writes one frame (blocking side: the worker).
pub fn write_frame(out: &mut impl Write, message: &impl Serialize) -> io::Result<()> {
    let bytes = serde_json::to_vec(message).map_err(io::Error::other)?;
    let len = u32::try_from(bytes.len())
        .ok()
        .filter(|n| (*n as usize) <= MAX_FRAME)
        .ok_or_else(too_large)?;
    out.write_all(&len.to_le_bytes())?;
    out.write_all(&bytes)?;
    out.flush()
}

/// Reads one frame (blocking side); `None` at the end of the stream.
pub fn read_frame<T: DeserializeOwned>(input: &mut impl Read) -> io::Result<Option<T>> {
    read_frame_within(input, MAX_FRAME)
}

/// [`read_frame`] with another bound (the first frame's).
pub fn read_frame_within<T: DeserializeOwned>(
    input: &mut impl Read,
    limit: usize,
) -> io::Result<Option<T>> {
    let mut len = [0u8; 4];
    match input.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > limit {
        return Err(too_large());
    }
    let mut bytes = vec![0u8; len];
    input.read_exact(&mut bytes)?;
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// One frame's bytes: its length and its JSON.
pub fn encode(message: &impl Serialize) -> io::Result<Vec<u8>> {
    encode_within(message, MAX_FRAME)
}

/// [`encode`] with another bound (the first frame's).
pub fn encode_within(message: &impl Serialize, limit: usize) -> io::Result<Vec<u8>> {
    let bytes = serde_json::to_vec(message).map_err(io::Error::other)?;
    let len = u32::try_from(bytes.len())
        .ok()
        .filter(|n| (*n as usize) <= limit)
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "a frame of {} MiB is larger than {} MiB",
                    bytes.len() >> 20,
                    limit >> 20
                ),
            )
        })?;
    let mut frame = Vec::with_capacity(4 + bytes.len());
    frame.extend_from_slice(&len.to_le_bytes());
    frame.extend_from_slice(&bytes);
    Ok(frame)
}

/// Writes one frame (async side: the server).
pub async fn send(out: &mut (impl AsyncWrite + Unpin), message: &impl Serialize) -> io::Result<()> {
    send_encoded(out, &encode(message)?).await
}

/// Writes a frame [`encode`] made (the first frame, the same for every worker, is made once).
pub async fn send_encoded(out: &mut (impl AsyncWrite + Unpin), frame: &[u8]) -> io::Result<()> {
    out.write_all(frame).await?;
    out.flush().await
}

/// Reads one frame (async side) of at most [`MAX_FROM_WORKER`] bytes; an error at the end of
/// the stream (the worker died).
pub async fn receive<T: DeserializeOwned>(input: &mut (impl AsyncRead + Unpin)) -> io::Result<T> {
    let mut len = [0u8; 4];
    input.read_exact(&mut len).await?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_FROM_WORKER {
        return Err(too_large());
    }
    let mut bytes = vec![0u8; len];
    input.read_exact(&mut bytes).await?;
    serde_json::from_slice(&bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_reads_back_and_the_end_is_none() {
        let mut buf = Vec::new();
        write_frame(&mut buf, &FromWorker::Done(Outcome::Limit("x".into())))
            .unwrap_or_else(|e| panic!("{e}"));
        let mut input = &buf[..];
        let back: Option<FromWorker> = read_frame(&mut input).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(back, Some(FromWorker::Done(Outcome::Limit(m))) if m == "x"));
        let end: Option<FromWorker> = read_frame(&mut input).unwrap_or_else(|e| panic!("{e}"));
        assert!(end.is_none());
    }

    #[test]
    fn an_oversized_length_is_refused_before_allocating() {
        let mut input = &u32::MAX.to_le_bytes()[..];
        let back: io::Result<Option<FromWorker>> = read_frame(&mut input);
        assert!(back.is_err());
    }
}
