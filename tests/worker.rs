//! The code worker process of the test servers: the same `main` the server runs as
//! `tokenvault code-worker`.

fn main() {
    std::process::exit(tokenvault_code::worker::main());
}
