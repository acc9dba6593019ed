//! The container image's root filesystem (`deploy/rootfs.sh`, the tree `deploy/Containerfile.rootfs`
//! builds on `scratch`) started with `chroot` as the image's non-root user: it serves, answers
//! `/ready` with its code workers sandboxed inside, `tokenvault healthcheck` (the image's
//! HEALTHCHECK) passes, and the operator's CLI works inside it. Needs root (chroot, mounts): CI
//! runs as root; elsewhere the test says so and returns.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Mounts made for the chroot, undone (and the server killed) however the test ends.
struct Chroot {
    root: PathBuf,
    mounts: Vec<PathBuf>,
    server: Option<Child>,
}

impl Chroot {
    fn mount(&mut self, args: &[&str], target: &str) {
        let at = self.root.join(target);
        if !at.exists() {
            std::fs::write(&at, b"").expect("a mount point");
        }
        let status = Command::new("mount")
            .args(args)
            .arg(&at)
            .status()
            .expect("mount runs");
        assert!(status.success(), "mount {args:?} {target}");
        self.mounts.push(at);
    }

    fn command(&self, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut command = Command::new("chroot");
        command
            .arg("--userspec=65532:65532")
            .arg(&self.root)
            .arg("/usr/local/bin/tokenvault")
            .args(args)
            .env_clear()
            // Where `chroot` itself is found; inside, the binary is named by its path.
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .envs(env.iter().copied());
        command
    }
}

impl Drop for Chroot {
    fn drop(&mut self) {
        if let Some(mut server) = self.server.take() {
            let _ = server.kill();
            let _ = server.wait();
        }
        for at in self.mounts.iter().rev() {
            let _ = Command::new("umount").arg("-l").arg(at).status();
        }
        let _ = std::fs::remove_dir_all(&self.root);
        let _ = std::fs::remove_file(self.root.with_extension("tar"));
    }
}

fn get(port: u16, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let status = answer.split(' ').nth(1)?.parse().ok()?;
    Some((status, answer.split("\r\n\r\n").nth(1)?.to_string()))
}

#[test]
fn rootfs_serves_and_answers_ready_in_a_chroot() {
    if !is_root() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run this test as root (chroot and mounts)"
        );
        eprintln!("rootfs test needs root (chroot, mounts): not run");
        return;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let root = std::env::temp_dir().join(format!(
        "tokenvault-rootfs-{}",
        uuid::Uuid::new_v4().simple()
    ));
    let built = Command::new("sh")
        .arg(repo.join("deploy/rootfs.sh"))
        .arg(env!("CARGO_BIN_EXE_tokenvault"))
        .arg(&root)
        .output()
        .expect("rootfs.sh runs");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    assert!(
        root.with_extension("tar").is_file(),
        "the tar the Containerfile ADDs"
    );
    let mut chroot = Chroot {
        root,
        mounts: Vec::new(),
        server: None,
    };
    // What a container runtime provides: /proc (the code workers re-execute /proc/self/exe),
    // /dev/null and /dev/urandom.
    chroot.mount(&["-t", "proc", "proc"], "proc");
    chroot.mount(&["--bind", "/dev/null"], "dev/null");
    chroot.mount(&["--bind", "/dev/urandom"], "dev/urandom");

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let listen = format!("127.0.0.1:{port}");
    let env = [
        ("TOKENVAULT_LISTEN", listen.as_str()),
        ("TOKENVAULT_DATA_DIR", "/data"),
        ("TOKENVAULT_CODE_WORKERS", "1"),
    ];
    chroot.server = Some(
        chroot
            .command(&["serve"], &env)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the server starts in the chroot"),
    );
    let mut ready = None;
    for _ in 0..300 {
        ready = get(port, "/ready");
        if ready.as_ref().is_some_and(|(s, _)| *s == 200) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let (status, body) = ready.expect("/ready answers");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"code_workers\":\"ok\""), "{body}");

    let health = chroot
        .command(&["healthcheck"], &env)
        .output()
        .expect("healthcheck runs");
    assert!(
        health.status.success(),
        "{}",
        String::from_utf8_lossy(&health.stderr)
    );
    let made = chroot
        .command(&["tenants", "create", "--name", "in-chroot"], &env)
        .output()
        .expect("tenants create runs");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let printed: serde_json::Value = serde_json::from_slice(&made.stdout).unwrap();
    assert!(
        printed["management_key"]
            .as_str()
            .is_some_and(|k| k.starts_with("key_"))
    );
    // The data stays in the image's /data, owned by its user.
    let data = chroot.root.join("data");
    assert!(data.join("tokenvault.db").is_file());
    let owner = Command::new("stat")
        .args(["-c", "%u"])
        .arg(data.join("tokenvault.db"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&owner.stdout).trim(), "65532");
}
