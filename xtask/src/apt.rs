//! Debian packages the tasks need, installed when missing (with `sudo -n` when it is there):
//! `wrk` for the bench, `chromium` and `chromium-driver` for the console's browser tests.

use std::path::Path;
use std::process::Command;

use anyhow::{Context as _, bail};

/// `apt-get install -y <packages>`, refreshing the package lists once if the first try fails.
pub(crate) fn install(packages: &[&str]) -> anyhow::Result<()> {
    eprintln!("xtask: installing {}", packages.join(" "));
    let sudo = Command::new("sudo")
        .args(["-n", "true"])
        .status()
        .is_ok_and(|s| s.success());
    let apt = |args: &[&str]| -> anyhow::Result<bool> {
        let mut c = if sudo {
            let mut c = Command::new("sudo");
            c.args(["-n", "apt-get"]);
            c
        } else {
            Command::new("apt-get")
        };
        Ok(c.args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .context("apt-get")?
            .success())
    };
    let mut install = vec!["install", "-y", "--no-install-recommends"];
    install.extend_from_slice(packages);
    if apt(&install)? || (apt(&["update"])? && apt(&install)?) {
        return Ok(());
    }
    bail!(
        "cannot install {} (apt-get install -y {0})",
        packages.join(" ")
    )
}

/// Debian's Chromium and its WebDriver, for `tests/console` (never a downloaded browser).
pub(crate) fn ensure_browser() -> anyhow::Result<()> {
    if Path::new("/usr/bin/chromium").exists() && Path::new("/usr/bin/chromedriver").exists() {
        return Ok(());
    }
    install(&["chromium", "chromium-driver"])
}
