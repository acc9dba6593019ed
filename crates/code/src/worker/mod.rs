//! The code worker process: what `tokenvault code-worker` runs. It is started by the server
//! with an empty environment and nothing but its stdin and stdout (the channel) and stderr, so
//! no key is ever in its memory; it warms one QuickJS engine, locks itself down (resource
//! limits, then the seccomp filter of `sandbox.rs`), says it is ready, and then runs what the
//! server sends, one call at a time, until its stdin closes. `req.svc` and `console` become
//! frames to the server, which checks and answers them.

mod budget;
mod builtins;
mod code_cache;
pub(crate) mod engine;
mod failure;
pub(crate) mod host_calls;
pub(crate) mod host_function;
pub(crate) mod intrinsics;
mod lazy;
mod names;
mod sandbox;
pub(crate) mod script;
#[cfg(test)]
pub(crate) mod testing;

use std::cell::RefCell;
use std::io::{BufReader, BufWriter, Stdin, Stdout};
use std::rc::Rc;
use std::time::Duration;

use serde_json::{Value, json};
use tokenvault_domain::ports::code::CodeError;

use crate::packages::ModuleStore;
use crate::protocol::{
    FromWorker, MAX_FROM_WORKER, MAX_INIT_FRAME, Outcome, ToWorker, read_frame, read_frame_within,
    write_frame,
};
use engine::{Call, Engine, Host, Limits};

/// The channel to the server, shared by the loop and the engine's host functions.
struct Channel {
    input: BufReader<Stdin>,
    output: BufWriter<Stdout>,
}

impl Channel {
    fn send(&mut self, message: &FromWorker) -> std::io::Result<()> {
        write_frame(&mut self.output, message)
    }

    fn receive(&mut self) -> std::io::Result<Option<ToWorker>> {
        read_frame(&mut self.input)
    }

    /// The first frame, which may be larger (it carries the operator's packages).
    fn receive_first(&mut self) -> std::io::Result<Option<ToWorker>> {
        read_frame_within(&mut self.input, MAX_INIT_FRAME)
    }
}

struct ChannelHost(Rc<RefCell<Channel>>);

impl Host for ChannelHost {
    fn svc(&self, method: String, args: Vec<Value>, key: Option<String>) -> Value {
        let mut channel = self.0.borrow_mut();
        let failed = |why: &str| json!({"error": {"status": 500, "title": "Internal Server Error", "detail": why}});
        if channel
            .send(&FromWorker::Svc { method, args, key })
            .is_err()
        {
            return failed("the svc call could not be sent");
        }
        match channel.receive() {
            Ok(Some(ToWorker::SvcReply(reply))) => reply,
            // Anything else breaks the protocol: the server ends this process.
            _ => std::process::exit(3),
        }
    }

    fn fetch(&self, request: Value) -> Value {
        let mut channel = self.0.borrow_mut();
        if channel.send(&FromWorker::Fetch(request)).is_err() {
            return json!({"error": "the request could not be sent"});
        }
        match channel.receive() {
            Ok(Some(ToWorker::FetchReply(reply))) => reply,
            // Anything else breaks the protocol: the server ends this process.
            _ => std::process::exit(3),
        }
    }

    fn log(&self, level: &str, text: &str) {
        let _ = self.0.borrow_mut().send(&FromWorker::Log {
            level: level.to_string(),
            text: text.to_string(),
        });
    }
}

fn outcome(result: Result<Value, CodeError>) -> Outcome {
    match result {
        Ok(v) => Outcome::Ok(v),
        Err(CodeError::Thrown {
            status,
            message,
            errors,
            line,
        }) => Outcome::Thrown(status, message, errors, line),
        Err(CodeError::Custom {
            status,
            headers,
            body,
        }) => Outcome::Custom(status, headers, body),
        Err(CodeError::Limit(why)) => Outcome::Limit(why),
        Err(CodeError::Compile(why)) => Outcome::Compile(why),
        Err(CodeError::Internal(why)) => Outcome::Internal(why),
        Err(CodeError::Busy) => Outcome::Internal("busy".into()),
    }
}

/// The end of a call, within what the server reads from a worker: each part is bounded before
/// it is escaped as JSON, so what a frame cannot hold is answered as the limit it is.
fn done(result: Result<Value, CodeError>) -> FromWorker {
    let reply = FromWorker::Done(outcome(result));
    match serde_json::to_vec(&reply) {
        Ok(bytes) if bytes.len() <= MAX_FROM_WORKER => reply,
        _ => FromWorker::Done(Outcome::Limit(
            "the code's answer is larger than a worker may send (4 MiB as JSON)".into(),
        )),
    }
}

/// The worker's `main`: returns the process's exit code.
pub fn main() -> i32 {
    let channel = Rc::new(RefCell::new(Channel {
        input: BufReader::new(std::io::stdin()),
        output: BufWriter::new(std::io::stdout()),
    }));
    let Ok(Some(ToWorker::Init {
        timeout_ms,
        memory,
        max_output,
        sandbox: wanted,
        modules,
    })) = channel.borrow_mut().receive_first()
    else {
        eprintln!("tokenvault code-worker: run by the server only");
        return 2;
    };
    let limits = Limits {
        timeout: Duration::from_millis(timeout_ms),
        memory,
        max_output,
    };
    let host: Rc<dyn Host> = Rc::new(ChannelHost(channel.clone()));
    let modules = Rc::new(ModuleStore::new(modules));
    let mut engine = match Engine::new(limits, host.clone(), modules.clone()) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("tokenvault code-worker: cannot start QuickJS: {e}");
            return 1;
        }
    };
    if let Err(e) = engine.prepare() {
        eprintln!("tokenvault code-worker: cannot prepare a context: {e}");
        return 1;
    }
    // Everything the process needs is allocated or mapped; from here on it can only compute,
    // allocate memory and talk over its channel.
    // `--without-seccomp` stands for a kernel without seccomp, for the tests of the server's
    // refusal; the server itself never passes it.
    let unavailable = std::env::args().any(|a| a == "--without-seccomp");
    let locked = sandbox::limit_resources(memory).and_then(|()| {
        if !wanted {
            Err("the server did not ask for the sandbox".into())
        } else if unavailable {
            Err("started --without-seccomp".into())
        } else {
            sandbox::install_filter()
        }
    });
    let ready = FromWorker::Ready {
        sandboxed: locked.is_ok(),
        why: locked.err(),
    };
    if channel.borrow_mut().send(&ready).is_err() {
        return 1;
    }
    serve(&channel, &mut engine)
}

fn serve(channel: &Rc<RefCell<Channel>>, engine: &mut Engine) -> i32 {
    // The tenant whose code this process runs: the pool never sends another's (`pool/mod.rs`,
    // cordons); one that came anyway ends the process, so the mistake is a failed call and
    // never a second tenant's data in this memory.
    let mut cordon = None;
    loop {
        let message = channel.borrow_mut().receive();
        let (tenant, code, request, svc, check) = match message {
            Ok(None) => return 0,
            Ok(Some(ToWorker::Run {
                tenant,
                code,
                request,
                svc,
                check,
            })) => (tenant, code, request, svc, check),
            // Anything else breaks the protocol.
            Ok(Some(_)) | Err(_) => return 1,
        };
        if *cordon.get_or_insert(tenant) != tenant {
            return 1;
        }
        let (result, discard) = engine.run(&Call {
            tenant,
            code: &code,
            request: &request,
            svc,
            check,
        });
        if channel.borrow_mut().send(&done(result)).is_err() {
            return 1;
        }
        // The spent context is released, and the next call's made, after the answer.
        if discard || engine.finish() || engine.prepare().is_err() {
            match engine.renew().and_then(|mut e| {
                e.prepare()?;
                Ok(e)
            }) {
                Ok(fresh) => *engine = fresh,
                Err(e) => {
                    eprintln!("tokenvault code-worker: cannot replace QuickJS: {e}");
                    return 1;
                }
            }
        }
    }
}
