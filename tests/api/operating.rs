//! Operating the server: health, bootstrap across restarts, graceful shutdown, OpenAPI.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};
use tokenvault_persistence::testing::backends;
use tokenvault_tests::{TestApp, on_each_backend, on_each_backend_with};

#[tokio::test]
async fn bootstrap_is_idempotent_across_restarts() {
    for backend in backends() {
        let mut app = TestApp::spawn(backend).await;
        let first: Value = app.get("/tenants/self").await.json().await.unwrap();
        app.restart().await;
        let again: Value = app.get("/tenants/self").await.json().await.unwrap();
        assert_eq!(first["id"], again["id"]);
        let apps: Value = app.get("/applications").await.json().await.unwrap();
        assert_eq!(
            apps["pagination"]["total_items"], 1,
            "no second bootstrap application"
        );
        app.stop().await;
    }
}

#[tokio::test]
async fn in_flight_request_finishes_on_shutdown() {
    for backend in backends() {
        let mut app = TestApp::spawn(backend).await;
        let addr = app.base.trim_start_matches("http://").to_string();
        let key = app.key.clone();
        let body = br#"{"name":"late","type":"private","permissions":["token:read"]}"#;
        // Send the headers and half the body, so the request is in flight when shutdown begins.
        let mut stream = TcpStream::connect(&addr).unwrap();
        write!(
            stream,
            "POST /applications HTTP/1.1\r\nHost: {addr}\r\nSVC-API-KEY: {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .unwrap();
        stream.write_all(&body[..20]).unwrap();
        stream.flush().unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let finishing = tokio::task::spawn_blocking(move || {
            std::thread::sleep(Duration::from_millis(300));
            stream.write_all(&body[20..]).unwrap();
            let mut response = String::new();
            stream.read_to_string(&mut response).unwrap();
            response
        });
        app.shutdown()
            .await
            .expect("run returns Ok after a graceful stop");
        let response = finishing.await.unwrap();
        assert!(
            response.starts_with("HTTP/1.1 201"),
            "in-flight request was cut: {response}"
        );
        app.stop().await;
    }
}

#[tokio::test]
async fn openapi_document_is_served() {
    on_each_backend(async |app| {
        let doc: Value = app.get("/openapi.json").await.json().await.unwrap();
        assert!(doc["paths"]["/applications"]["post"].is_object());
        assert!(doc["paths"]["/tenants/self"]["put"].is_object());
        let committed =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/openapi.json"))
                .unwrap();
        assert_eq!(serde_json::from_str::<Value>(&committed).unwrap(), doc);
    })
    .await;
}

/// Runs the server with `config` and returns what `run` returned, stopping it at once if it
/// did start.
async fn run_once(config: tokenvault_server::Config) -> anyhow::Result<()> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    tokenvault_server::run(config, listener, async {
        tokio::time::sleep(Duration::from_millis(300)).await;
    })
    .await
}

#[tokio::test]
async fn a_server_without_the_tenants_master_key_refuses_to_start() {
    for backend in backends() {
        let mut app = TestApp::spawn(backend).await;
        app.shutdown().await.unwrap();
        // A lost development key: a fresh data directory makes a new one.
        let key_file = app.config.data_dir.join("master.key");
        let kept = std::fs::read(&key_file).unwrap();
        std::fs::remove_file(&key_file).unwrap();
        let refused = run_once(app.config.clone()).await;
        let message = refused.expect_err("must refuse to start").to_string();
        assert!(message.contains("master key"), "{message}");
        assert!(!message.contains(&String::from_utf8_lossy(&kept).to_string()));
        // With the right key back it serves again.
        std::fs::write(&key_file, &kept).unwrap();
        app.restart().await;
        assert_eq!(app.get("/tenants/self").await.status(), 200);
        app.stop().await;
    }
}

#[cfg(unix)]
#[tokio::test]
async fn files_the_server_creates_are_owner_only() {
    use std::os::unix::fs::PermissionsExt as _;
    // The embedded default: no DATABASE_URL, a SQLite file in the data directory.
    let mut app = TestApp::spawn_with(tokenvault_tests::DbBackend::Sqlite, |c| {
        c.database.url = None;
    })
    .await;
    let created: Value = app
        .post(
            "/applications",
            &serde_json::json!({"name": "w", "type": "private", "permissions": ["token:read"]}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert!(created["key"].is_string());
    let dir = app.config.data_dir.clone();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700, "data directory");
    for name in [
        "tokenvault.db",
        "tokenvault.db-wal",
        "tokenvault.db-shm",
        "master.key",
    ] {
        let path = dir.join(name);
        assert!(path.exists(), "{name} exists");
        assert_eq!(mode(&path), 0o600, "{name}");
    }
    app.shutdown().await.unwrap();
    // A stopped server has copied its log back into the database file (`Database::close`).
    let wal = std::fs::metadata(dir.join("tokenvault.db-wal")).map_or(0, |m| m.len());
    assert_eq!(wal, 0, "the log is empty once the server has stopped");
    // A database left world-readable (by an earlier version) is narrowed at start.
    std::fs::set_permissions(
        dir.join("tokenvault.db"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    app.restart().await;
    assert_eq!(mode(&dir.join("tokenvault.db")), 0o600);
    app.stop().await;
}

#[tokio::test]
async fn metrics_count_requests_by_route_template_never_by_path() {
    on_each_backend(async |app| {
        let key = app.key.clone();
        for _ in 0..3 {
            // A management key may not read tokens: 403, counted under the template.
            let res = app.get("/tokens/some-alias-that-shows-data").await;
            assert_eq!(res.status(), 403);
        }
        let res = app.get("/metrics").await;
        assert_eq!(res.status(), 200);
        assert!(
            res.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/plain")
        );
        assert!(
            res.headers()["content-type"]
                .to_str()
                .unwrap()
                .contains("charset=utf-8")
        );
        let text = res.text().await.unwrap();
        assert!(text.contains("# TYPE tokenvault_http_requests_total counter"), "{text}");
        assert!(
            text.contains(
                "tokenvault_http_requests_total{method=\"GET\",route=\"/tokens/{id}\",status=\"403\"} 3"
            ),
            "{text}"
        );
        assert!(text.contains("# TYPE tokenvault_http_request_duration_seconds histogram"));
        // The audit backlog, a gauge: a whole number of events.
        let waiting = text
            .lines()
            .find_map(|l| l.strip_prefix("tokenvault_audit_events_waiting "))
            .unwrap_or_else(|| panic!("no audit gauge in {text}"));
        assert!(waiting.parse::<u64>().is_ok(), "{waiting}");
        // Requests refused while their tenant's log was behind: none here.
        assert!(
            text.contains("tokenvault_audit_refusals_total 0\n"),
            "{text}"
        );
        assert!(!text.contains("some-alias-that-shows-data"));
        assert!(!text.contains(&key));
    })
    .await;
}

#[tokio::test]
async fn an_application_over_its_rate_gets_429_with_retry_after() {
    on_each_backend_with(
        |config| config.http.rate_limit_per_second = 2,
        async |app| {
            let other = app.app("management", &["application:read"]).await;
            tokio::time::sleep(Duration::from_secs(1)).await;
            // A burst of twice the rate passes, then 429 with Retry-After.
            let mut statuses = Vec::new();
            let mut retry_after = None;
            for _ in 0..8 {
                let res = app.get("/applications").await;
                if res.status() == 429 {
                    retry_after = res.headers().get("retry-after").cloned();
                    let body: Value = res.json().await.unwrap();
                    assert_eq!(body["status"], 429);
                    statuses.push(429);
                } else {
                    statuses.push(res.status().as_u16());
                }
            }
            assert_eq!(&statuses[..4], &[200, 200, 200, 200], "{statuses:?}");
            assert!(statuses.contains(&429), "{statuses:?}");
            let seconds: u64 = retry_after.unwrap().to_str().unwrap().parse().unwrap();
            assert!((1..=2).contains(&seconds));
            // Another application has its own allowance.
            let res = app
                .request_as(other["key"].as_str(), reqwest::Method::GET, "/applications")
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 200);
        },
    )
    .await;
}

/// With a high-water mark of 0 every tenant's log counts as behind: each admitted request waits
/// for room that never comes and gets 503 with `Retry-After`, on every way a caller is admitted
/// (a plain caller, a token read, a react, the idempotency middleware), while a request over
/// its rate gets its 429 and never waits.
#[tokio::test]
async fn a_tenant_whose_audit_log_stays_behind_gets_503_after_its_rate_limit() {
    on_each_backend_with(
        |config| {
            config.audit_high_water = 0;
            config.http.rate_limit_per_second = 2;
        },
        async |app| {
            let missing = uuid::Uuid::new_v4();
            let token = format!("/tokens/{missing}");
            let idempotent = app
                .request(reqwest::Method::POST, "/applications")
                .header("SVC-IDEMPOTENCY-KEY", "once")
                .json(&json!({"name": "x", "type": "private", "permissions": ["token:read"]}))
                .send();
            let react = app
                .request(reqwest::Method::POST, &format!("/reactors/{missing}/react"))
                .json(&json!({"args": {}}))
                .send();
            let (listed, read, reacted, created) =
                tokio::join!(app.get("/applications"), app.get(&token), react, idempotent,);
            for res in [listed, read, reacted.unwrap(), created.unwrap()] {
                let url = res.url().path().to_owned();
                assert_eq!(res.status(), 503, "{url}");
                assert_eq!(res.headers()["retry-after"], "1", "{url}");
                let body: Value = res.json().await.unwrap();
                assert_eq!(body["status"], 503, "{url}");
            }
            // Eight at once against a burst of four: those over the rate are refused by the
            // rate limit (had they waited first, they would have been 503s too).
            let eight = futures_util::future::join_all((0..8).map(|_| app.get("/applications")));
            let statuses: Vec<u16> = eight.await.iter().map(|r| r.status().as_u16()).collect();
            let count = |status| statuses.iter().filter(|&&s| s == status).count();
            assert!(count(429) >= 1 && count(503) >= 4, "{statuses:?}");
            assert_eq!(count(429) + count(503), 8, "{statuses:?}");
            let text = app.get("/metrics").await.text().await.unwrap();
            let refused = format!("tokenvault_audit_refusals_total {}\n", 4 + count(503));
            assert!(text.contains(&refused), "{refused} in {text}");
        },
    )
    .await;
}

#[tokio::test]
async fn browsers_of_configured_origins_may_call_the_api() {
    on_each_backend_with(
        |config| {
            config.http.cors_origins =
                tokenvault_server::config::CorsOrigins::parse("https://shop.example").unwrap();
        },
        async |app| {
            let preflight = app
                .request_as(None, reqwest::Method::OPTIONS, "/tokens")
                .header("Origin", "https://shop.example")
                .header("Access-Control-Request-Method", "POST")
                .header("Access-Control-Request-Headers", "svc-api-key,content-type")
                .send()
                .await
                .unwrap();
            assert!(preflight.status().is_success(), "{}", preflight.status());
            let h = preflight.headers();
            assert_eq!(h["access-control-allow-origin"], "https://shop.example");
            let allowed = h["access-control-allow-headers"]
                .to_str()
                .unwrap()
                .to_ascii_lowercase();
            assert!(allowed.contains("svc-api-key"), "{allowed}");
            // The request itself carries the header for the configured origin only.
            let public = app.app("public", &["token:create"]).await;
            let res = app
                .request_as(public["key"].as_str(), reqwest::Method::POST, "/tokens")
                .header("Origin", "https://shop.example")
                .json(&serde_json::json!({"type": "token", "data": "x"}))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 201);
            assert_eq!(
                res.headers()["access-control-allow-origin"],
                "https://shop.example"
            );
            let res = app
                .request_as(Some(&app.key), reqwest::Method::GET, "/applications")
                .header("Origin", "https://evil.example")
                .send()
                .await
                .unwrap();
            assert!(res.headers().get("access-control-allow-origin").is_none());
            // `/metrics` needs no key: no other origin may read it.
            let res = app
                .request_as(None, reqwest::Method::GET, "/metrics")
                .header("Origin", "https://shop.example")
                .send()
                .await
                .unwrap();
            assert!(res.headers().get("access-control-allow-origin").is_none());
        },
    )
    .await;
}

/// Only `POST /tokens`, `POST /tokenize` and `POST /sessions` (and their preflights) answer a
/// listed origin, decided by the route the router matched: another route gets no CORS header
/// however its path is spelled, and these three get theirs however theirs is.
#[tokio::test]
async fn cors_is_answered_by_the_browser_routes_only_however_spelled() {
    on_each_backend_with(
        |config| {
            config.http.cors_origins =
                tokenvault_server::config::CorsOrigins::parse("https://shop.example").unwrap();
        },
        async |app| {
            const ORIGIN: &str = "https://shop.example";
            let public = app.app("public", &["token:create"]).await;
            let pkey = public["key"].as_str().unwrap();
            let allowed = |res: &reqwest::Response| {
                res.headers()
                    .get("access-control-allow-origin")
                    .map(|v| v.to_str().unwrap().to_string())
            };
            // Preflights.
            for (path, answered) in [
                ("/tokens", true),
                ("/%74okens", true),
                ("/tokenize", true),
                ("/tokeniz%65", true),
                ("/sessions", true),
                ("/%73essions", true),
                ("/applications", false),
                ("/detokenize", false),
                ("/%64etokenize", false),
                ("/metrics", false),
                ("/%6Detrics", false),
                ("/proxy", false),
                ("/sessions/authorize", false),
            ] {
                let res = app
                    .request_as(None, reqwest::Method::OPTIONS, path)
                    .header("Origin", ORIGIN)
                    .header("Access-Control-Request-Method", "POST")
                    .header("Access-Control-Request-Headers", "svc-api-key,content-type")
                    .send()
                    .await
                    .unwrap();
                if answered {
                    assert!(res.status().is_success(), "{path}: {}", res.status());
                    assert_eq!(allowed(&res).as_deref(), Some(ORIGIN), "{path}");
                } else {
                    assert_eq!(allowed(&res), None, "{path}");
                }
            }
            // Requests.
            for (path, body) in [
                ("/tokens", json!({"type": "token", "data": "x"})),
                ("/%74okens", json!({"type": "token", "data": "x"})),
                ("/tokenize", json!({"a": {"type": "token", "data": "x"}})),
                ("/tokeni%7Ae", json!({"a": {"type": "token", "data": "x"}})),
                ("/sessions", json!({})),
                ("/%73essions", json!({})),
            ] {
                let res = app
                    .request_as(Some(pkey), reqwest::Method::POST, path)
                    .header("Origin", ORIGIN)
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                assert!(res.status().is_success(), "{path}: {}", res.status());
                assert_eq!(allowed(&res).as_deref(), Some(ORIGIN), "{path}");
            }
            for (method, path) in [
                (reqwest::Method::GET, "/metrics"),
                (reqwest::Method::GET, "/%6Detrics"),
                (reqwest::Method::GET, "/%6d%65trics"),
                (reqwest::Method::GET, "/applications"),
                (reqwest::Method::GET, "/%61pplications"),
                (reqwest::Method::GET, "/tokens"),
                (reqwest::Method::GET, "/%74okens"),
                (reqwest::Method::GET, "/health"),
                (reqwest::Method::GET, "/openapi.json"),
                (reqwest::Method::POST, "/detokenize"),
                (reqwest::Method::POST, "/%64etokenize"),
            ] {
                let res = app
                    .request(method.clone(), path)
                    .header("Origin", ORIGIN)
                    .json(&json!({}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(allowed(&res), None, "{method} {path}");
            }
        },
    )
    .await;
}

/// `tokenvault-bench ceilings` (what `cargo xtask bench` sets the endpoints beside) measures on both
/// databases.
#[tokio::test]
async fn ceilings_measure_the_adapter_and_the_cipher() {
    for backend in backends() {
        let db = tokenvault_persistence::testing::TestDatabase::create(backend).await;
        let data_dir = std::env::temp_dir().join(tokenvault_tests::unique("tokenvault-ceilings"));
        let mut config = tokenvault_server::Config::for_tests(db.url.clone(), data_dir.clone());
        config.code.worker = Some(tokenvault_tests::code_worker());
        let measured =
            tokenvault_server::ceilings::measure(&config, Duration::from_millis(200), 4, false)
                .await
                .unwrap();
        assert!(measured.insert_per_s > 0.0, "{measured:?}");
        assert!(measured.read_per_s > 0.0, "{measured:?}");
        assert!(measured.encrypt_decrypt_per_s > 0.0, "{measured:?}");
        let _ = std::fs::remove_dir_all(data_dir);
        db.destroy().await;
    }
}

/// `ceilings` adds a tenant and rows to whatever database is configured: it refuses one that
/// holds other tenants, unless told to measure there anyway.
#[tokio::test]
async fn ceilings_refuse_a_database_that_holds_other_tenants() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let ceilings = |allow| {
            tokenvault_server::ceilings::measure(&app.config, Duration::from_millis(50), 1, allow)
        };
        let added = async || {
            app.execute_sql("UPDATE tenants SET name = name WHERE name = 'ceilings'")
                .await
        };
        let message = ceilings(false)
            .await
            .expect_err("other tenants: refused")
            .to_string();
        assert!(message.contains("--allow-other-tenants"), "{message}");
        assert_eq!(added().await, 0, "no tenant added");
        ceilings(true).await.unwrap();
        assert_eq!(added().await, 1);
        app.stop().await;
    }
}
