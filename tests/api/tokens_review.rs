//! Tokens over HTTP, the findings of the core's security review (docs/decisions.md §6): the
//! expression work budget, fingerprints that confirm nothing, atomic PATCHes, expired tokens in
//! deduplication and the token's own deduplication choice — on each database.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokenvault_tests::{TestApp, assert_invalid, assert_problem, on_each_backend, rule, unique};

use crate::tokens::{Client, full, with};

const SSN: &str = "123-45-6789";

async fn public<'a>(app: &'a TestApp, permissions: &[&str]) -> Client<'a> {
    let created = app
        .create_app(&json!({"name": unique("pub"), "type": "public", "permissions": permissions}))
        .await;
    Client {
        app,
        key: created["key"].as_str().unwrap().to_string(),
    }
}

async fn settings(app: &TestApp, fingerprint: bool, deduplicate: bool) {
    let body = json!({"name": "Default", "settings": {
        "fingerprint_tokens": fingerprint.to_string(),
        "deduplicate_tokens": deduplicate.to_string()}});
    assert_eq!(app.put("/tenants/self", &body).await.status(), 200);
}

fn in_seconds(s: i64) -> String {
    (time::OffsetDateTime::now_utc() + time::Duration::seconds(s))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

/// Finding 1: `{{ data | uniq | size }}` over 20,000 items took 3.4 s per render on the HTTP
/// worker. Quadratic work over a large array is refused at once: a 400 naming the field.
#[tokio::test]
async fn costly_expressions_are_refused_at_once_naming_the_field() {
    on_each_backend(async |app| {
        let items: Vec<String> = (0..20_000).map(|i| format!("v{i}")).collect();
        let collector = public(app, &["token:create"]).await;
        for field in ["mask", "fingerprint_expression"] {
            let started = Instant::now();
            let body = json!({"type": "token", "data": items, field: "{{ data | uniq | size }}"});
            assert_invalid(collector.post("/tokens", &body).await, &[field]).await;
            assert!(
                started.elapsed() < Duration::from_secs(2),
                "{field}: refused, not run ({:?})",
                started.elapsed()
            );
        }
        // A mask fine on small data is refused when a PATCH makes the data large.
        let owner = full(app).await;
        let t = owner
            .create(&json!({"type": "token", "data": [1, 2, 1], "mask": "{{ data | uniq | join: ',' }}"}))
            .await;
        let path = format!("/tokens/{}", t["id"].as_str().unwrap());
        let reader = with(app, &["token:read"], json!([])).await;
        assert_eq!(reader.read(t["id"].as_str().unwrap()).await["data"], "1,2");
        let started = Instant::now();
        assert_invalid(owner.patch(&path, &json!({"data": items})).await, &["mask"]).await;
        let res = owner
            .patch(&path, &json!({"data": [3], "mask": "{{ data | uniq | size }}"}))
            .await;
        assert_eq!(res.status(), 200);
        assert_invalid(owner.patch(&path, &json!({"data": items})).await, &["mask"]).await;
        assert!(started.elapsed() < Duration::from_secs(3));
        assert_eq!(reader.read(t["id"].as_str().unwrap()).await["data"], "1");
    })
    .await;
}

/// Finding 2: a mask-level reader matched a token's shown fingerprint against tokens it made
/// in another container with the default expression spelled by hand. A read shows a
/// fingerprint only under `reveal`, and a hand-made expression never matches the default.
#[tokio::test]
async fn fingerprints_confirm_no_guess() {
    on_each_backend(async |app| {
        settings(app, true, false).await;
        let owner = full(app).await;
        let victim = owner
            .create(&json!({"type": "social_security_number", "data": SSN}))
            .await;
        let id = victim["id"].as_str().unwrap();
        let fingerprint = victim["fingerprint"].as_str().unwrap().to_string();
        assert_eq!(owner.read(id).await["fingerprint"], fingerprint.as_str());
        let reader = with(
            app,
            &["token:read"],
            json!([rule(1, "/mine/", "reveal", &["token:create", "token:read"])]),
        )
        .await;
        let seen = reader.read(id).await;
        assert_eq!(seen["data"], "XXX-XX-6789", "masked");
        assert!(seen.get("fingerprint").is_none(), "masked: no fingerprint");
        let listed: Value = reader.get("/tokens").await.json().await.unwrap();
        let row = listed["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .unwrap();
        assert!(row.get("fingerprint").is_none(), "nor in a list");
        let redacting = with(
            app,
            &[],
            json!([rule(1, "/", "redact", &["token:read"])]),
        )
        .await;
        assert!(redacting.read(id).await.get("fingerprint").is_none());
        let revealed: Value = owner.get("/tokens").await.json().await.unwrap();
        assert!(revealed["data"].as_array().unwrap().iter().any(|t| t["fingerprint"] == fingerprint.as_str()));

        // 100 guesses with the default spelled by hand: none matches, the right one included.
        let guesses: Vec<Value> = (0..100)
            .map(|i| {
                json!({"type": "social_security_number", "data": format!("123-45-67{i:02}"),
                    "containers": ["/mine/"], "fingerprint_expression": "{{ data | remove: \"-\" }}"})
            })
            .collect();
        let res = reader.post("/tokenize", &json!(guesses)).await;
        assert_eq!(res.status(), 200);
        let made: Value = res.json().await.unwrap();
        let shown: Vec<&str> = made
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["fingerprint"].as_str().unwrap())
            .collect();
        assert_eq!(shown.len(), 100, "tokenize shows the fingerprints of what was sent");
        assert!(!shown.contains(&fingerprint.as_str()));
        // The same value fingerprinted with the default, by the same reader: equal (the
        // fingerprint of what the caller sent), so the difference is the expression's.
        let res = reader
            .post("/tokens", &json!({"type": "social_security_number", "data": SSN, "containers": ["/mine/"]}))
            .await;
        assert_eq!(res.status(), 201);
        assert_eq!(res.json::<Value>().await.unwrap()["fingerprint"], fingerprint.as_str());

        // A PATCH answered under a masked update shows none either.
        let updater = with(
            app,
            &["token:update"],
            json!([]),
        )
        .await;
        let res = updater
            .patch(&format!("/tokens/{id}"), &json!({"metadata": {"k": "v"}}))
            .await;
        assert_eq!(res.status(), 200);
        assert!(res.json::<Value>().await.unwrap().get("fingerprint").is_none());

        // Children lists follow the reader's transform.
        let parent = owner.create(&json!({"type": "token", "data": "parent", "containers": ["/mine/"]})).await;
        let parent = parent["id"].as_str().unwrap();
        let link = owner.post(&format!("/tokens/{parent}/children/{id}"), &json!(null)).await;
        assert_eq!(link.status(), 204);
        let children: Value = reader
            .get(&format!("/tokens/{parent}/children"))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(children["data"][0]["id"], id);
        assert!(children["data"][0].get("fingerprint").is_none());
    })
    .await;
}

/// Deduplication keeps working for tokens made the same way: the default with the default,
/// one hand-made expression with the same expression, never one with the other.
#[tokio::test]
async fn deduplication_matches_tokens_made_the_same_way() {
    on_each_backend(async |app| {
        let owner = full(app).await;
        let by_hand = json!({"type": "social_security_number", "data": SSN,
            "deduplicate_token": true, "fingerprint_expression": "{{ data | remove: \"-\" }}"});
        let default =
            json!({"type": "social_security_number", "data": SSN, "deduplicate_token": true});
        let first = owner.post("/tokens", &default).await;
        assert_eq!(first.status(), 201);
        let first: Value = first.json().await.unwrap();
        let hand = owner.post("/tokens", &by_hand).await;
        assert_eq!(
            hand.status(),
            201,
            "a hand-made expression never matches the default"
        );
        let hand: Value = hand.json().await.unwrap();
        assert_ne!(hand["fingerprint"], first["fingerprint"]);
        let again = owner.post("/tokens", &by_hand).await;
        assert_eq!(again.status(), 200);
        assert_eq!(again.json::<Value>().await.unwrap()["id"], hand["id"]);
        let again = owner.post("/tokens", &default).await;
        assert_eq!(again.status(), 200);
        assert_eq!(again.json::<Value>().await.unwrap()["id"], first["id"]);
    })
    .await;
}

/// Finding 3: two concurrent PATCHes both answered 200 while one was lost. Every PATCH that
/// answers 200 takes effect; a move is never undone by another caller's update.
#[tokio::test]
async fn concurrent_patches_are_never_lost() {
    on_each_backend(async |app| {
        let owner = full(app).await;
        let updater = with(
            app,
            &[],
            json!([rule(1, "/general/", "mask", &["token:update"])]),
        )
        .await;
        let client = reqwest::Client::new();
        for round in 0..5 {
            let t = owner
                .create(&json!({"type": "token", "data": format!("r{round}")}))
                .await;
            let url = format!("{}/tokens/{}", app.base, t["id"].as_str().unwrap());
            let mut tasks = Vec::new();
            for i in 0..8 {
                let (client, url) = (client.clone(), url.clone());
                let (key, body) = if i == 4 {
                    (owner.key.clone(), json!({"containers": ["/restricted/"]}))
                } else {
                    (
                        updater.key.clone(),
                        json!({"metadata": {format!("k{i}"): "v"}}),
                    )
                };
                tasks.push(tokio::spawn(async move {
                    let res = client
                        .patch(url)
                        .header("SVC-API-KEY", key)
                        .header("content-type", "application/merge-patch+json")
                        .body(body.to_string())
                        .send()
                        .await
                        .unwrap();
                    (i, res.status().as_u16())
                }));
            }
            let mut answers = Vec::new();
            for task in tasks {
                answers.push(task.await.unwrap());
            }
            let now = owner.read(t["id"].as_str().unwrap()).await;
            for (i, status) in answers {
                assert!(
                    [200, 403, 409].contains(&status),
                    "round {round}: PATCH {i} answered {status}"
                );
                if status != 200 {
                    continue;
                }
                if i == 4 {
                    assert_eq!(
                        now["containers"],
                        json!(["/restricted/"]),
                        "round {round}: the move was undone"
                    );
                } else {
                    assert_eq!(
                        now["metadata"][format!("k{i}")],
                        "v",
                        "round {round}: PATCH {i} was lost"
                    );
                }
            }
        }
    })
    .await;
}

/// Finding 4: an expired deduplicated token still answered 409 on tokenize and on update, and
/// won deduplication on create, until the sweep ran. Expired tokens are gone at once.
#[tokio::test]
async fn an_expired_token_neither_wins_nor_blocks_deduplication() {
    on_each_backend(async |app| {
        let owner = full(app).await;
        let dedup = |data: &str, expires: Option<&str>| {
            let mut body = json!({"type": "token", "data": data, "deduplicate_token": true});
            if let Some(at) = expires {
                body["expires_at"] = json!(at);
            }
            body
        };
        let at = in_seconds(2);
        let mut expired = Vec::new();
        for data in ["tokenized", "created", "updated"] {
            expired.push(owner.create(&dedup(data, Some(&at))).await);
        }
        let other = owner.create(&dedup("other", None)).await;
        tokio::time::sleep(Duration::from_millis(2100)).await;

        let res = owner
            .post("/tokenize", &json!([dedup("tokenized", None)]))
            .await;
        assert_eq!(
            res.status(),
            200,
            "tokenize: no conflict with an expired token"
        );
        let made: Value = res.json().await.unwrap();
        assert_ne!(made[0]["id"], expired[0]["id"]);

        let res = owner.post("/tokens", &dedup("created", None)).await;
        assert_eq!(
            res.status(),
            201,
            "create: a new token, not the expired one"
        );
        assert_ne!(res.json::<Value>().await.unwrap()["id"], expired[1]["id"]);

        let path = format!("/tokens/{}", other["id"].as_str().unwrap());
        let res = owner.patch(&path, &json!({"data": "updated"})).await;
        assert_eq!(
            res.status(),
            200,
            "update: no conflict with an expired token"
        );
        for t in &expired {
            assert_problem(
                owner
                    .get(&format!("/tokens/{}", t["id"].as_str().unwrap()))
                    .await,
                404,
            )
            .await;
        }
    })
    .await;
}

/// Finding 5: `deduplicate_token: false` was forgotten by the next PATCH (the tenant's setting
/// took over, and the second such token's metadata update was a 409).
#[tokio::test]
async fn a_tokens_own_deduplication_choice_survives_updates() {
    on_each_backend(async |app| {
        settings(app, false, true).await;
        let owner = full(app).await;
        let body = json!({"type": "token", "data": "twice", "deduplicate_token": false});
        let a = owner.create(&body).await;
        let b = owner.create(&body).await;
        assert_ne!(a["id"], b["id"]);
        for t in [&a, &b] {
            let path = format!("/tokens/{}", t["id"].as_str().unwrap());
            let res = owner.patch(&path, &json!({"metadata": {"k": "v"}})).await;
            assert_eq!(res.status(), 200, "not deduplicated, so no conflict");
            let res = owner.patch(&path, &json!({"data": "twice"})).await;
            assert_eq!(res.status(), 200);
        }
        // And `true` against a tenant that does not deduplicate survives them too.
        settings(app, false, false).await;
        let body = json!({"type": "token", "data": "once", "deduplicate_token": true});
        let c = owner.create(&body).await;
        let path = format!("/tokens/{}", c["id"].as_str().unwrap());
        assert_eq!(
            owner.patch(&path, &json!({"data": "moved"})).await.status(),
            200
        );
        assert_eq!(
            owner.patch(&path, &json!({"data": "once"})).await.status(),
            200
        );
        let res = owner.post("/tokens", &body).await;
        assert_eq!(res.status(), 200);
        assert_eq!(res.json::<Value>().await.unwrap()["id"], c["id"]);
    })
    .await;
}
