//! The audit log over HTTP on each database: who did what to which resource with its trace id,
//! never data or keys; filters; `log:read`; tenants apart; and `tokenvault audit verify`
//! finding an edited row, a deleted middle row and a deleted last row.

use reqwest::Method;
use serde_json::{Value, json};
use tokenvault_persistence::testing::backends;
use tokenvault_tests::{TestApp, assert_invalid, assert_problem, full_private, on_each_backend};

async fn logs(app: &TestApp, key: &str, query: &str) -> Value {
    let res = app
        .request_as(Some(key), Method::GET, &format!("/logs?size=100{query}"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    res.json().await.unwrap()
}

fn entries(page: &Value) -> &Vec<Value> {
    page["data"].as_array().unwrap()
}

async fn verify(app: &TestApp) -> (Value, bool) {
    tokenvault_server::verify_audit(&app.config, None)
        .await
        .unwrap()
}

/// Makes a few entries (an application, a token made, read and used) and returns the
/// application's id and key, the token's id and its secret.
async fn activity(app: &TestApp) -> (String, String, String, String) {
    let created = app
        .create_app(&json!({"name": "audited", "type": "private",
            "permissions": ["token:create", "token:read", "token:use"],
            "rules": [{"priority": 1, "container": "/", "transform": "reveal",
                       "permissions": ["token:read", "token:use"]}]}))
        .await;
    let id = created["id"].as_str().unwrap().to_string();
    let key = created["key"].as_str().unwrap().to_string();
    let secret = format!("audit-secret-{}", uuid::Uuid::new_v4().simple());
    let res = app
        .request_as(Some(&key), Method::POST, "/tokens")
        .header("SVC-TRACE-ID", "trace-audit-1")
        .json(&json!({"type": "token", "data": secret}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let token: Value = res.json().await.unwrap();
    let token_id = token["id"].as_str().unwrap().to_string();
    let read = app
        .request_as(Some(&key), Method::GET, &format!("/tokens/{token_id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), 200);
    let used = app
        .request_as(Some(&key), Method::POST, "/detokenize")
        .json(&json!({"v": format!("{{{{ {token_id} }}}}")}))
        .send()
        .await
        .unwrap();
    assert_eq!(used.status(), 200);
    (id, key, token_id, secret)
}

#[tokio::test]
async fn the_log_names_who_did_what_and_never_data_or_keys() {
    on_each_backend(async |app| {
        let (app_id, key, token_id, secret) = activity(app).await;
        let page = logs(app, &app.key, "").await;
        let text = page.to_string();
        for needle in [secret.as_str(), key.as_str(), app.key.as_str()] {
            assert!(!text.contains(needle), "the log holds a secret or key");
        }
        let find = |op: &str, ty: &str, id: &str| {
            entries(&page)
                .iter()
                .find(|e| e["operation"] == op && e["entity_type"] == ty && e["entity_id"] == id)
                .cloned()
        };
        let made = find("create", "application", &app_id).expect("application created");
        assert_eq!(made["actor_type"], "application");
        let created = find("create", "token", &token_id).expect("token created");
        assert_eq!(created["actor_id"], app_id.as_str());
        assert_eq!(created["trace_id"], "trace-audit-1");
        assert!(find("read", "token", &token_id).is_some());
        assert!(find("use", "token", &token_id).is_some());
        // Newest first, and the sequence counts up.
        let seqs: Vec<i64> = entries(&page)
            .iter()
            .map(|e| e["sequence"].as_i64().unwrap())
            .collect();
        assert!(seqs.windows(2).all(|w| w[0] > w[1]), "{seqs:?}");

        // Filters.
        let by_id = logs(app, &app.key, &format!("&entity_id={token_id}")).await;
        assert_eq!(by_id["pagination"]["total_items"], 3);
        assert!(
            entries(&by_id)
                .iter()
                .all(|e| e["entity_id"] == token_id.as_str())
        );
        let by_type = logs(app, &app.key, "&entity_type=application").await;
        assert!(
            entries(&by_type)
                .iter()
                .all(|e| e["entity_type"] == "application")
        );
        let future = logs(app, &app.key, "&start_date=2999-01-01T00:00:00Z").await;
        assert_eq!(future["pagination"]["total_items"], 0);
        let past = logs(app, &app.key, "&end_date=2000-01-01T00:00:00Z").await;
        assert_eq!(past["pagination"]["total_items"], 0);
        let bad = app.get("/logs?start_date=yesterday").await;
        assert_invalid(bad, &["start_date"]).await;

        // log:read is needed; another tenant sees only its own log.
        let res = app
            .request_as(Some(&key), Method::GET, "/logs")
            .send()
            .await
            .unwrap();
        assert_problem(res, 403).await;
        let (_, other) = app.new_tenant("elsewhere").await;
        let theirs = logs(app, &other, "").await;
        assert!(!theirs.to_string().contains(&token_id));
        assert!(!theirs.to_string().contains(&app_id));

        let (report, ok) = verify(app).await;
        assert!(ok, "{report}");
    })
    .await;
}

#[tokio::test]
async fn verify_names_an_edited_entry() {
    on_each_backend(async |app| {
        activity(app).await;
        let before = logs(app, &app.key, "").await;
        assert!(verify(app).await.1);
        let changed = app
            .execute_sql("UPDATE audit_log SET entity_id = 'forged' WHERE seq = 2")
            .await;
        assert_eq!(changed, 1);
        let (report, ok) = verify(app).await;
        assert!(!ok);
        let broken = report["tenants"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| !t["ok"].as_bool().unwrap())
            .unwrap();
        assert_eq!(broken["first_broken"]["sequence"], 2, "{report}");
        let edited = entries(&before)
            .iter()
            .find(|e| e["sequence"] == 2)
            .unwrap();
        assert_eq!(broken["first_broken"]["entry_id"], edited["id"], "{report}");
    })
    .await;
}

#[tokio::test]
async fn verify_finds_a_deleted_middle_entry_and_a_deleted_end() {
    on_each_backend(async |app| {
        activity(app).await;
        logs(app, &app.key, "").await;
        assert_eq!(
            app.execute_sql("DELETE FROM audit_log WHERE seq = 3").await,
            1
        );
        let (report, ok) = verify(app).await;
        assert!(!ok);
        assert_eq!(
            report["tenants"][0]["first_broken"]["sequence"], 3,
            "{report}"
        );
    })
    .await;
    on_each_backend(async |app| {
        activity(app).await;
        let page = logs(app, &app.key, "").await;
        let last = entries(&page)[0]["sequence"].as_i64().unwrap();
        let sql = format!("DELETE FROM audit_log WHERE seq = {last}");
        assert_eq!(app.execute_sql(&sql).await, 1);
        let (report, ok) = verify(app).await;
        assert!(!ok);
        assert_eq!(
            report["tenants"][0]["first_broken"]["sequence"], last,
            "{report}"
        );
    })
    .await;
}

/// Attack review of 3948bc8: with every entry and the head of a tenant's log deleted, `audit
/// verify` listed tenants from the log alone and passed; the chain then restarted at 1. Every
/// live tenant's log begins with its creation, so a live tenant without one is reported.
#[tokio::test]
async fn verify_finds_a_whole_deleted_log() {
    on_each_backend(async |app| {
        activity(app).await;
        logs(app, &app.key, "").await;
        assert!(verify(app).await.1);
        assert!(app.execute_sql("DELETE FROM audit_log").await > 0);
        assert!(app.execute_sql("DELETE FROM audit_heads").await > 0);
        let (report, ok) = verify(app).await;
        assert!(!ok, "{report}");
        let tenant = &report["tenants"][0];
        assert_eq!(tenant["ok"], false, "{report}");
        assert_eq!(tenant["entries"], 0, "{report}");
        assert!(
            tenant["first_broken"]["reason"]
                .as_str()
                .is_some_and(|r| r.contains("no audit log")),
            "{report}"
        );
    })
    .await;
}

/// Two server instances on one database append to one tenant's chain at the same time: the
/// head's compare-and-swap keeps one chain, every entry is kept, and it verifies.
#[tokio::test]
async fn two_instances_on_one_database_keep_one_chain() {
    for backend in backends() {
        let master = tokenvault_crypto::MasterKey::generate_base64().to_string();
        let first =
            TestApp::spawn_with(backend, |c| c.keys.master = Some(master.clone().into())).await;
        let url = first.config.database.url.clone();
        let key = first.key.clone();
        let second = TestApp::spawn_with(backend, |c| {
            c.keys.master = Some(master.clone().into());
            c.database.url.clone_from(&url);
            c.keys.bootstrap = Some(key.clone().into());
        })
        .await;
        let create = |app: &TestApp, i: usize| {
            app.request_as(Some(&key), Method::POST, "/applications")
                .json(&json!({"name": format!("app-{i}"), "type": "private",
                              "permissions": ["token:read"]}))
                .send()
        };
        let mut calls = Vec::new();
        for i in 0..20 {
            calls.push(create(if i % 2 == 0 { &first } else { &second }, i));
        }
        for res in futures_util::future::join_all(calls).await {
            assert_eq!(res.unwrap().status(), 201);
        }
        // Reading on each instance writes what it buffered.
        logs(&first, &key, "").await;
        logs(&second, &key, "").await;
        let page = logs(&first, &key, "&entity_type=application").await;
        let made = entries(&page)
            .iter()
            .filter(|e| e["operation"] == "create" && e["actor_type"] == "application")
            .count();
        assert_eq!(made, 20, "every create of both instances is in the log");
        let (report, ok) = verify(&first).await;
        assert!(ok, "{report}");
        second.stop().await;
        first.stop().await;
    }
}

/// Sends `POST /tokens` for `id` on a raw connection and resets the connection `after` later,
/// before the answer can arrive.
async fn create_and_leave(app: &TestApp, key: &str, id: &str, after: std::time::Duration) {
    use tokio::io::AsyncWriteExt;
    let addr = app.base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let body = json!({"id": id, "type": "token", "data": format!("left-{id}")}).to_string();
    let request = format!(
        "POST /tokens HTTP/1.1\r\nhost: {addr}\r\nsvc-api-key: {key}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    tokio::time::sleep(after).await;
    // Linger zero: the close is a reset, which actix sees as the client gone.
    stream.set_zero_linger().unwrap();
    drop(stream);
}

/// A client that leaves while its token is being made never leaves half a change: every token
/// that exists has its audit entry.
#[tokio::test]
async fn a_client_that_leaves_never_leaves_half_a_change() {
    on_each_backend(async |app| {
        let key = full_private(app).await;
        let mut ids = Vec::new();
        for i in 0..40u32 {
            let id = format!("leave-{i}-{}", uuid::Uuid::new_v4().simple());
            let after = std::time::Duration::from_micros(u64::from(i % 8) * 250);
            create_and_leave(app, &key, &id, after).await;
            ids.push(id);
        }
        // Give the server time to finish what it started.
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let mut stored = 0;
        for id in &ids {
            let res = app
                .request_as(Some(&key), Method::GET, &format!("/tokens/{id}"))
                .send()
                .await
                .unwrap();
            if res.status() == 404 {
                continue;
            }
            assert_eq!(res.status(), 200);
            stored += 1;
            let page = logs(app, &app.key, &format!("&entity_id={id}&operation=create")).await;
            assert!(
                entries(&page).iter().any(|e| e["operation"] == "create"),
                "token {id} is stored without its audit entry"
            );
        }
        eprintln!("{stored} of {} tokens stored", ids.len());
    })
    .await;
}

/// The SQL that plants a copy of each tenant's last entry just past its head (sequence head +
/// 1, entity id `planted`), which the head does not reach: as someone with the database's
/// credentials could, on either backend.
fn plant_past_the_head(app: &TestApp) -> String {
    let id = match app.backend {
        tokenvault_tests::DbBackend::Postgres => "gen_random_uuid()",
        tokenvault_tests::DbBackend::Sqlite => "randomblob(16)",
    };
    format!(
        "INSERT INTO audit_log (id, tenant_id, seq, actor_type, actor_id, operation, \
         entity_type, entity_id, trace_id, created_at, hash) \
         SELECT {id}, l.tenant_id, l.seq + 1, l.actor_type, l.actor_id, l.operation, \
         l.entity_type, 'planted', l.trace_id, l.created_at, l.hash \
         FROM audit_log l JOIN audit_heads h ON h.tenant_id = l.tenant_id AND h.seq = l.seq"
    )
}

/// A row planted just past the chain head takes the place of the next entry, so the tenant's
/// log stops recording: `audit verify` must not answer ok, and must name that row. Once it is
/// removed, the events that waited are written and the chain verifies again.
#[tokio::test]
async fn verify_names_a_row_beyond_the_head_that_stops_the_log() {
    on_each_backend(async |app| {
        activity(app).await;
        logs(app, &app.key, "").await;
        assert!(verify(app).await.1);
        assert_eq!(app.execute_sql(&plant_past_the_head(app)).await, 1);
        let planted = logs(app, &app.key, "&entity_id=planted").await;
        let planted = entries(&planted)[0].clone();

        // The log has stopped: what happens now is not recorded.
        let made = app
            .create_app(&json!({"name": "unrecorded", "type": "private",
                "permissions": ["token:read"]}))
            .await;
        let made_id = made["id"].as_str().unwrap();
        let recorded = logs(app, &app.key, &format!("&entity_id={made_id}")).await;
        assert_eq!(recorded["pagination"]["total_items"], 0);

        let (report, ok) = verify(app).await;
        assert!(!ok, "a log that stopped recording is not ok: {report}");
        let broken = &report["tenants"][0]["first_broken"];
        assert_eq!(broken["sequence"], planted["sequence"], "{report}");
        assert_eq!(broken["entry_id"], planted["id"], "{report}");

        // The operator removes the row: the log goes on, with what waited.
        assert_eq!(
            app.execute_sql("DELETE FROM audit_log WHERE entity_id = 'planted'")
                .await,
            1
        );
        let recorded = logs(app, &app.key, &format!("&entity_id={made_id}")).await;
        assert_eq!(recorded["pagination"]["total_items"], 1);
        let (report, ok) = verify(app).await;
        assert!(ok, "{report}");
    })
    .await;
}

/// `GET /logs/verify`: the caller's tenant's chain, walked as the command line walks it; an
/// edited entry named; another tenant's walk sees its own chain only; `log:read` needed.
#[tokio::test]
async fn the_tenants_own_chain_is_verified_over_http() {
    on_each_backend(async |app| {
        activity(app).await;
        let walk = async |key: &str| {
            app.request_as(Some(key), Method::GET, "/logs/verify")
                .send()
                .await
                .unwrap()
        };
        let res = walk(&app.key).await;
        assert_eq!(res.status(), 200);
        let report: Value = res.json().await.unwrap();
        assert_eq!(report["ok"], true, "{report}");
        assert!(report["entries"].as_u64().unwrap() >= 4, "{report}");
        assert_eq!(
            report["head_sequence"].as_u64(),
            report["entries"].as_u64(),
            "{report}"
        );
        assert!(report.get("hash").is_none() && report["first_broken"].is_null());
        let changed = app
            .execute_sql("UPDATE audit_log SET entity_id = 'forged' WHERE seq = 2")
            .await;
        assert_eq!(changed, 1);
        let report: Value = walk(&app.key).await.json().await.unwrap();
        assert_eq!(report["ok"], false, "{report}");
        assert_eq!(report["first_broken"]["sequence"], 2, "{report}");
        let (tenant, other) = app.new_tenant("verified apart").await;
        let res = walk(&other).await;
        assert_eq!(res.status(), 200);
        let theirs: Value = res.json().await.unwrap();
        assert_eq!(theirs["tenant_id"], tenant["id"], "{theirs}");
        assert_eq!(
            theirs["ok"], true,
            "another tenant's broken chain is not theirs"
        );
        let reader = full_private(app).await;
        assert_problem(walk(&reader).await, 403).await;
        assert_problem(walk("key_00000000000000000000000000000000").await, 401).await;
    })
    .await;
}
