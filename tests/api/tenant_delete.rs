//! Deleting a tenant while others work: its keys stop at once, its rows go in the background,
//! and no other tenant's request fails on it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};
use tokenvault_tests::{TestApp, full_private, on_each_backend, unique};

/// Rows in the database matching `what` (`UPDATE … SET x = x` changes nothing and counts).
async fn rows(app: &TestApp, sql: &str) -> u64 {
    app.execute_sql(sql).await
}

/// Creates tokens with `key` until `stop`, then answers each response's status and the slowest
/// request; stops early on a 401 when `until_refused`.
async fn create_tokens(
    app: &TestApp,
    key: String,
    stop: Arc<AtomicBool>,
    until_refused: bool,
) -> (Vec<u16>, Duration) {
    let mut statuses = Vec::new();
    let mut slowest = Duration::ZERO;
    let mut i = 0u32;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        let started = Instant::now();
        let res = app
            .request_as(Some(&key), Method::POST, "/tokens")
            .json(&json!({"type": "token", "data": format!("v-{i}")}))
            .send()
            .await
            .unwrap();
        slowest = slowest.max(started.elapsed());
        let status = res.status().as_u16();
        statuses.push(status);
        if until_refused && status == 401 {
            break;
        }
    }
    (statuses, slowest)
}

#[tokio::test]
async fn a_tenant_deleted_under_load_goes_without_failing_the_others() {
    on_each_backend(async |app| {
        let (_, doomed_key) = app.new_tenant(&unique("doomed")).await;
        let writer = app
            .create_app_as(
                &doomed_key,
                &json!({"name": "w", "type": "private", "permissions": ["token:create"]}),
            )
            .await;
        let writer_key = writer["key"].as_str().unwrap().to_string();
        // A tenant with more rows than one purge statement takes.
        for round in 0..3 {
            let batch: Vec<Value> = (0..1000)
                .map(|i| json!({"type": "token", "data": format!("d-{round}-{i}")}))
                .collect();
            let res = app
                .request_as(Some(&writer_key), Method::POST, "/tokenize")
                .json(&batch)
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 200);
        }
        let survivor_key = full_private(app).await;

        let stop = Arc::new(AtomicBool::new(false));
        let (survivors, doomed, deleted) = tokio::join!(
            async {
                let mut all = Vec::new();
                let mut slowest = Duration::ZERO;
                let runs =
                    (0..4).map(|_| create_tokens(app, survivor_key.clone(), stop.clone(), false));
                for (statuses, slow) in futures_util::future::join_all(runs).await {
                    all.extend(statuses);
                    slowest = slowest.max(slow);
                }
                (all, slowest)
            },
            create_tokens(app, writer_key.clone(), stop.clone(), true),
            async {
                tokio::time::sleep(Duration::from_millis(300)).await;
                let res = app
                    .request_as(Some(&doomed_key), Method::DELETE, "/tenants/self")
                    .send()
                    .await
                    .unwrap();
                let status = res.status().as_u16();
                // Its keys stop at once, before its rows are gone.
                let after = app
                    .request_as(Some(&doomed_key), Method::GET, "/tenants/self")
                    .send()
                    .await
                    .unwrap()
                    .status()
                    .as_u16();
                // Let the others run on while its rows are purged, until none is left.
                let purged_by = Instant::now() + Duration::from_mins(1);
                while rows(
                    app,
                    "UPDATE tenants SET name = name WHERE deleted_at IS NOT NULL",
                )
                .await
                    > 0
                {
                    assert!(
                        Instant::now() < purged_by,
                        "the deleted tenant is never purged"
                    );
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                stop.store(true, Ordering::Relaxed);
                (status, after)
            },
        );
        assert_eq!(deleted, (204, 401));
        let (statuses, slowest) = survivors;
        eprintln!(
            "{:?}: {} creates of the other tenant during the delete, slowest {slowest:?}",
            app.backend,
            statuses.len()
        );
        assert!(!statuses.is_empty());
        assert!(
            statuses.iter().all(|s| *s == 201),
            "the other tenant's creates all succeed: {statuses:?}"
        );
        let (doomed_statuses, _) = doomed;
        assert!(
            doomed_statuses.iter().all(|s| [201, 401].contains(s)),
            "a create of the tenant being deleted is done or refused, never a failure: \
             {doomed_statuses:?}"
        );
        assert_eq!(doomed_statuses.last(), Some(&401));
        // Nothing of it is left: the only tokens are the other tenant's.
        let created = u64::try_from(statuses.len()).unwrap();
        assert_eq!(
            rows(app, "UPDATE tokens SET version = version").await,
            created
        );
        assert_eq!(rows(app, "UPDATE tenants SET name = name").await, 1);
        let listed: Value = app
            .request_as(Some(&survivor_key), Method::GET, "/tokens?size=1")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(listed["pagination"]["total_items"], json!(created));
    })
    .await;
}
