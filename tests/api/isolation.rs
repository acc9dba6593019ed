//! Tenant code runs where no key lives (decisions §7): the code workers are child processes
//! with an empty environment, under a seccomp filter, whose memory holds neither the master key,
//! nor an API key, nor a token the call was not given, while the server's own memory does (the
//! scan is not blind).

use std::collections::BTreeSet;

use base64::Engine as _;
use reqwest::Method;
use serde_json::json;
use tokenvault_persistence::testing::backends;
use tokenvault_tests::{TestApp, full_private, unique};

/// The children of this process (every test server of this binary runs in it) that are code
/// workers.
fn code_workers() -> Vec<u32> {
    let me = std::process::id();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let parent = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
        if parent == Some(me) && exe.to_string_lossy().contains("tokenvault-test-worker") {
            found.push(pid);
        }
    }
    found
}

/// Whether `pid` runs under a seccomp filter, or is gone. A worker of another test of this
/// binary may be starting: it installs its filter before its first call, within moments.
async fn sandboxed(pid: u32) -> bool {
    for _ in 0..50 {
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            return true;
        };
        if status
            .lines()
            .any(|l| l.split_whitespace().eq(["Seccomp:", "2"]))
        {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    false
}

/// Which of `needles` occur in the readable memory of `pid`.
fn memory_holds(pid: u32, needles: &[(&str, Vec<u8>)]) -> BTreeSet<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut found = BTreeSet::new();
    // Other tests' workers come and go meanwhile: one that is gone holds nothing.
    let (Ok(maps), Ok(mut mem)) = (
        std::fs::read_to_string(format!("/proc/{pid}/maps")),
        std::fs::File::open(format!("/proc/{pid}/mem")),
    ) else {
        return found;
    };
    for line in maps.lines() {
        let mut parts = line.split_whitespace();
        let (Some(range), Some(perms)) = (parts.next(), parts.next()) else {
            continue;
        };
        if !perms.starts_with('r') {
            continue;
        }
        let Some((lo, hi)) = range.split_once('-') else {
            continue;
        };
        let (lo, hi) = (
            u64::from_str_radix(lo, 16).unwrap(),
            u64::from_str_radix(hi, 16).unwrap(),
        );
        if hi - lo > 1 << 30 {
            continue;
        }
        let mut chunk = vec![0u8; usize::try_from(hi - lo).unwrap()];
        if mem.seek(SeekFrom::Start(lo)).is_err() || mem.read_exact(&mut chunk).is_err() {
            continue;
        }
        for (label, needle) in needles {
            if chunk.windows(needle.len()).any(|w| w == needle.as_slice()) {
                found.insert((*label).to_string());
            }
        }
    }
    found
}

#[tokio::test]
async fn tenant_code_runs_in_workers_that_hold_no_key() {
    for backend in backends() {
        let master = tokenvault_crypto::MasterKey::generate_base64().to_string();
        let raw = base64::engine::general_purpose::STANDARD
            .decode(&master)
            .unwrap();
        let app =
            TestApp::spawn_with(backend, |c| c.keys.master = Some(master.clone().into())).await;
        let reader = full_private(&app).await;
        let secret = unique("isolation-secret");
        let res = app
            .request_as(Some(&reader), Method::POST, "/tokens")
            .json(&json!({"type": "token", "data": secret}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 201);
        let formula = app
            .post(
                "/reactor-formulas",
                &json!({"name": "iso", "type": "private", "configuration": [], "request_parameters": [],
                        "code": "module.exports = async () => ({ raw: { x: [1, 2, 3].map((n) => n * 2) } });"}),
            )
            .await;
        assert_eq!(formula.status(), 201);
        let formula: serde_json::Value = formula.json().await.unwrap();
        let reactor = app
            .post(
                "/reactors",
                &json!({"name": "iso", "configuration": {}, "formula": {"id": formula["id"]}}),
            )
            .await;
        assert_eq!(reactor.status(), 201);
        let reactor: serde_json::Value = reactor.json().await.unwrap();
        for _ in 0..4 {
            let res = app
                .request_as(
                    Some(&reader),
                    Method::POST,
                    &format!("/reactors/{}/react", reactor["id"].as_str().unwrap()),
                )
                .json(&json!({"args": {}}))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 200);
        }
        // The plaintext passes through the server's memory.
        let res = app
            .request_as(Some(&reader), Method::GET, "/tokens?size=5")
            .send()
            .await
            .unwrap();
        assert!(res.text().await.unwrap().contains(&secret));

        let needles = [
            ("master key", raw.clone()),
            ("master key (base64)", master.as_bytes().to_vec()),
            ("bootstrap key", app.key.as_bytes().to_vec()),
            ("application key", reader.as_bytes().to_vec()),
            ("token plaintext", secret.as_bytes().to_vec()),
        ];
        let control = memory_holds(std::process::id(), &needles[..1]);
        assert!(
            control.contains("master key"),
            "the scan is blind: it does not find the master key in the server's own memory"
        );
        let workers = code_workers();
        assert!(!workers.is_empty(), "no code worker process");
        // What a worker was handed is found in its memory: the scan of workers is not blind.
        let handed = [("formula code", b"(n) => n * 2".to_vec())];
        assert!(
            workers
                .iter()
                .any(|pid| !memory_holds(*pid, &handed).is_empty()),
            "the scan does not find the formula's code in any worker"
        );
        for pid in workers {
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            assert!(environ.is_empty(), "worker {pid} has an environment");
            assert!(sandboxed(pid).await, "worker {pid} runs without seccomp");
            let found = memory_holds(pid, &needles);
            assert!(found.is_empty(), "worker {pid} holds {found:?}");
        }
        app.stop().await;
    }
}
