//! A token after its create: merge-patch updates and moves, parent and child links, and expiry.

use reqwest::Method;
use serde_json::{Value, json};
use tokenvault_tests::{assert_invalid, assert_problem, on_each_backend, rule};

use super::{CARD, full, with};

#[tokio::test]
async fn patch_merges_and_moves_with_permission() {
    on_each_backend(async |app| {
        let owner = full(app).await;
        let t = owner.create(&json!({"type": "token", "data": {"a": 1}, "metadata": {"keep": "1", "drop": "2"}})).await;
        let path = format!("/tokens/{}", t["id"].as_str().unwrap());
        let wrong_type = app.request_as(Some(&owner.key), Method::PATCH, &path).json(&json!({"metadata": {}})).send().await.unwrap();
        assert_problem(wrong_type, 415).await;
        let res = owner.patch(&path, &json!({"metadata": {"drop": null, "add": "3"}, "data": {"b": 2}, "containers": ["/general/low/"]})).await;
        assert_eq!(res.status(), 200);
        let after = owner.read(t["id"].as_str().unwrap()).await;
        assert_eq!(after["metadata"], json!({"keep": "1", "add": "3"}));
        assert_eq!(after["data"], json!({"a": 1, "b": 2}), "objects merge (RFC 7386)");
        assert_eq!(after["containers"], json!(["/general/low/"]));
        assert!(after["modified_at"].is_string());
        for (body, field) in [
            (json!({"data": null}), "data"),
            (json!({"metadata": {"x": 1}}), "metadata.x"),
            (json!({"containers": ["/a/", "/b/"]}), "containers"),
            (json!({"mask": "{{ oops"}), "mask"),
            (json!({"expires_at": "2001-01-01T00:00:00Z"}), "expires_at"),
        ] {
            assert_invalid(owner.patch(&path, &body).await, &[field]).await;
        }
        assert_problem(owner.patch("/tokens/nope-nope", &json!({})).await, 404).await;
        let bad_json = app
            .request_as(Some(&owner.key), Method::PATCH, &path)
            .header("content-type", "application/merge-patch+json")
            .body("{")
            .send()
            .await
            .unwrap();
        assert_problem(bad_json, 400).await;
        // Moving needs token:update on the destination too.
        let mover = with(app, &[], json!([rule(1, "/general/", "reveal", &["token:update", "token:read"])])).await;
        assert_problem(mover.patch(&path, &json!({"containers": ["/pci/"]})).await, 403).await;
        assert_eq!(mover.patch(&path, &json!({"containers": ["/general/high/"]})).await.status(), 200);
    })
    .await;
}

#[tokio::test]
async fn associations_and_children() {
    on_each_backend(async |app| {
        let c = full(app).await;
        let parent = c.create(&json!({"type": "token", "data": "p"})).await["id"]
            .as_str()
            .unwrap()
            .to_string();
        let child = c.create(&json!({"type": "token", "data": "c"})).await["id"]
            .as_str()
            .unwrap()
            .to_string();
        let link = format!("/tokens/{parent}/children/{child}");
        assert_eq!(c.post(&link, &json!(null)).await.status(), 204);
        let again = assert_problem(c.post(&link, &json!(null)).await, 409).await;
        assert_eq!(again["detail"], "The tokens are already associated.");
        assert_problem(
            c.post(&format!("/tokens/{parent}/children/nope-1"), &json!(null))
                .await,
            404,
        )
        .await;
        let made = c
            .post(
                &format!("/tokens/{parent}/children"),
                &json!({"type": "card_number", "data": CARD}),
            )
            .await;
        assert_eq!(made.status(), 201);
        let made: Value = made.json().await.unwrap();
        assert!(made.get("data").is_none());
        let kids: Value = c
            .get(&format!("/tokens/{parent}/children"))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(kids["pagination"]["total_items"], 2);
        assert!(
            kids["data"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t.get("data").is_some()),
            "list-children carries data"
        );
        let cards: Value = c
            .get(&format!("/tokens/{parent}/children?type=card_number"))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(cards["data"][0]["id"], made["id"]);
        assert_eq!(c.delete(&link).await.status(), 204);
        assert_problem(c.delete(&link).await, 404).await;
        assert_eq!(
            c.delete(&format!("/tokens/{}", made["id"].as_str().unwrap()))
                .await
                .status(),
            204
        );
        let kids: Value = c
            .get(&format!("/tokens/{parent}/children"))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(
            kids["pagination"]["total_items"], 0,
            "deleting a token removes its links"
        );
        assert_problem(c.get("/tokens/nope-2/children").await, 404).await;
    })
    .await;
}

#[tokio::test]
async fn expired_tokens_vanish_at_once() {
    on_each_backend(async |app| {
        let c = full(app).await;
        let at = time::OffsetDateTime::now_utc() + time::Duration::seconds(2);
        let at = at
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap();
        let t = c
            .create(&json!({"type": "token", "data": "short-lived", "expires_at": at}))
            .await;
        let id = t["id"].as_str().unwrap();
        assert_eq!(c.read(id).await["data"], "short-lived");
        tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
        assert_problem(c.get(&format!("/tokens/{id}")).await, 404).await;
        let listed: Value = c.get("/tokens").await.json().await.unwrap();
        assert_eq!(listed["pagination"]["total_items"], 0);
    })
    .await;
}
