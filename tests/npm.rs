//! Real npm packages for the tests of the operator's module folder: `tests/npm/package.json`
//! and its lock, installed with `npm ci` once per machine into a folder named for the lock's
//! digest (so a changed lock installs afresh), under a file lock (test processes and threads
//! share it).

use std::path::PathBuf;
use std::process::Command;

use sha2::{Digest, Sha256};

/// The folder (with its `node_modules/`) to give as `TOKENVAULT_CODE_MODULES`.
///
/// # Panics
/// When npm is missing or the install fails: the tests that need it cannot run without it.
#[must_use]
pub fn installed() -> PathBuf {
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("npm");
    let manifest = std::fs::read(source.join("package.json")).expect("tests/npm/package.json");
    let lock =
        std::fs::read(source.join("package-lock.json")).expect("tests/npm/package-lock.json");
    let digest = Sha256::new()
        .chain_update(&manifest)
        .chain_update(&lock)
        .finalize();
    let name = digest.iter().take(8).fold(String::new(), |mut out, b| {
        use std::fmt::Write;
        let _ = write!(out, "{b:02x}");
        out
    });
    let folder = std::env::temp_dir().join(format!("tokenvault-npm-{name}"));
    let lock_file =
        std::fs::File::create(std::env::temp_dir().join(format!("tokenvault-npm-{name}.lock")))
            .expect("the install's lock file");
    lock_file.lock().expect("the install's lock");
    let done = folder.join("node_modules").join(".tokenvault-installed");
    if !done.exists() {
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(&folder).expect("the install folder");
        std::fs::write(folder.join("package.json"), &manifest).expect("package.json");
        std::fs::write(folder.join("package-lock.json"), &lock).expect("package-lock.json");
        let status = Command::new("npm")
            .args([
                "ci",
                "--no-audit",
                "--no-fund",
                "--ignore-scripts",
                "--prefix",
            ])
            .arg(&folder)
            .status()
            .expect("npm, to install the test packages (Node.js's package manager)");
        assert!(status.success(), "npm ci of tests/npm failed: {status}");
        std::fs::write(&done, b"").expect("the install's mark");
    }
    drop(lock_file);
    folder
}
