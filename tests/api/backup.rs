//! `tokenvault backup` / `restore`: a SQLite vault copied while it takes token creations, put in
//! place in a fresh data directory, serves every token acknowledged before the copy began;
//! a restore under another master key, into an existing vault, or without a key to check with
//! is refused and writes nothing. On PostgreSQL the command points at pg_dump.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use reqwest::Method;
use serde_json::{Value, json};
use tokenvault_persistence::testing::{Backend, backends};
use tokenvault_server::Config;
use tokenvault_server::backup::{backup, restore};
use tokenvault_tests::{TestApp, full_private, unique};

fn new_master_key() -> String {
    let bytes: [u8; 32] = std::array::from_fn(|_| rand_byte());
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn rand_byte() -> u8 {
    uuid::Uuid::new_v4().as_bytes()[0]
}

fn fresh_config(master_key: Option<&str>) -> (Config, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(unique("tokenvault-restore"));
    let mut config = Config::for_tests(String::new(), dir.clone());
    config.database.url = None; // the default: <data dir>/tokenvault.db
    config.keys.master = master_key.map(|k| k.to_string().into());
    (config, dir)
}

#[tokio::test]
async fn a_backup_under_load_restores_every_acknowledged_token() {
    let master = new_master_key();
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.keys.master = Some(master.clone().into());
    })
    .await;
    let key = full_private(&app).await;
    let acknowledged: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (request, acknowledged, stop) = (
                app.request_as(Some(&key), Method::POST, "/tokens"),
                acknowledged.clone(),
                stop.clone(),
            );
            tokio::spawn(async move {
                let mut n = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    n += 1;
                    let data = format!("writer {w} value {n}");
                    let res = request
                        .try_clone()
                        .unwrap()
                        .json(&json!({"type": "token", "data": data}))
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(res.status(), 201);
                    let id = res.json::<Value>().await.unwrap()["id"]
                        .as_str()
                        .unwrap()
                        .to_string();
                    acknowledged.lock().unwrap().push((id, data));
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(700)).await;
    let before: Vec<(String, String)> = acknowledged.lock().unwrap().clone();
    let file = std::env::temp_dir().join(format!("{}.db", unique("tokenvault-backup")));
    let made = backup(&app.config, &file).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }
    assert!(before.len() > 20, "the load ran: {}", before.len());
    assert_eq!(made["tenants"], 1, "{made}");
    assert!(!made.to_string().contains(&master), "no key in the answer");
    // The master key is not in the backup file.
    let bytes = std::fs::read(&file).unwrap();
    let raw = base64::engine::general_purpose::STANDARD
        .decode(&master)
        .unwrap();
    assert!(!bytes.windows(raw.len()).any(|w| w == raw.as_slice()));
    assert!(!bytes.windows(master.len()).any(|w| w == master.as_bytes()));
    // Nor a token's data in clear.
    assert!(
        !bytes
            .windows(before[0].1.len())
            .any(|w| w == before[0].1.as_bytes())
    );
    app.stop().await;

    // Another master key: refused, nothing written.
    let (other, other_dir) = fresh_config(Some(&new_master_key()));
    let err = restore(&other, &file).await.unwrap_err().to_string();
    assert!(err.contains("another master key"), "{err}");
    assert!(!other_dir.join("tokenvault.db").exists());
    // Development mode with no master.key to check with: refused.
    let (bare, bare_dir) = fresh_config(None);
    let err = restore(&bare, &file).await.unwrap_err().to_string();
    assert!(err.contains("master.key"), "{err}");
    assert!(!bare_dir.join("tokenvault.db").exists());

    // A journal of an earlier vault beside the target: refused (it would be replayed).
    let (stale, stale_dir) = fresh_config(Some(&master));
    std::fs::create_dir_all(&stale_dir).unwrap();
    std::fs::write(stale_dir.join("tokenvault.db-wal"), b"old frames").unwrap();
    let err = restore(&stale, &file).await.unwrap_err().to_string();
    assert!(err.contains("earlier vault"), "{err}");
    assert!(!stale_dir.join("tokenvault.db").exists());
    let _ = std::fs::remove_dir_all(stale_dir);

    // The right key, a fresh data dir: every token acknowledged before the copy reads back.
    let (config, dir) = fresh_config(Some(&master));
    let restored = restore(&config, &file).await.unwrap();
    assert_eq!(restored["tenants"], 1);
    let err = restore(&config, &file).await.unwrap_err().to_string();
    assert!(err.contains("already"), "never over a vault: {err}");
    let url = config.effective_database_url();
    let served = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.keys.master = Some(master.clone().into());
        c.database.url = Some(url.clone());
    })
    .await;
    for (id, data) in &before {
        let res = served
            .request_as(Some(&key), Method::GET, &format!("/tokens/{id}"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "token {id} lost");
        assert_eq!(res.json::<Value>().await.unwrap()["data"], data.as_str());
    }
    served.stop().await;
    for dir in [dir, other_dir, bare_dir] {
        let _ = std::fs::remove_dir_all(dir);
    }
    let _ = std::fs::remove_file(file);
}

#[tokio::test]
async fn on_postgres_backup_points_at_pg_dump() {
    if !backends().contains(&Backend::Postgres) {
        return;
    }
    let app = TestApp::spawn(Backend::Postgres).await;
    let file = std::env::temp_dir().join(format!("{}.db", unique("tokenvault-backup")));
    let err = backup(&app.config, &file).await.unwrap_err().to_string();
    assert!(err.contains("pg_dump"), "{err}");
    let err = restore(&app.config, &file).await.unwrap_err().to_string();
    assert!(err.contains("pg_restore"), "{err}");
    assert!(!file.exists());
    app.stop().await;
}
