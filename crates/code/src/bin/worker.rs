//! A code worker process for this crate's tests and benches: the same `main` the server runs
//! as `tokenvault code-worker`.

fn main() {
    std::process::exit(tokenvault_code::worker::main());
}
