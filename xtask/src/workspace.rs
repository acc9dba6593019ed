//! The workspace the tasks run in: its root folder and its cargo.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};

/// The PostgreSQL the tests use unless `TOKENVAULT_TEST_DATABASE_URL` names another.
pub(crate) const DEFAULT_TEST_POSTGRES: &str = "postgres://postgres@127.0.0.1:5432/test";

/// The workspace's root folder.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace")
        .to_path_buf()
}

/// Runs `cargo args` in the workspace with `envs`; an error when it fails.
pub(crate) fn cargo(args: &[&str], envs: &[(&str, &str)]) -> anyhow::Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    eprintln!("xtask: cargo {}", args.join(" "));
    let status = Command::new(cargo)
        .args(args)
        .envs(envs.iter().copied())
        .current_dir(root())
        .status()
        .context("cannot run cargo")?;
    if !status.success() {
        bail!("`cargo {}` failed ({status})", args.join(" "));
    }
    Ok(())
}
