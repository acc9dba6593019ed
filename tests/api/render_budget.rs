//! The work expressions may do (docs/decisions.md §6): a stored mask costs at most 100,000
//! steps on its data, and the expressions of one request share 10,000,000 — a tokenize batch
//! cannot multiply the cost of its masks. Over HTTP on each database.

use serde_json::{Value, json};
use tokenvault_tests::{assert_invalid, on_each_backend};

use super::tokens::full;

/// `uniq` over `n` numbers costs about n²/2 steps (plus the pass that reads them).
fn quadratic(n: usize) -> Value {
    json!({"type": "token", "data": (0..n).collect::<Vec<_>>(), "mask": "{{ data | uniq | size }}"})
}

#[tokio::test]
async fn a_mask_costs_at_most_its_cap_and_a_batch_shares_one_budget() {
    on_each_backend(async |app| {
        let owner = full(app).await;
        // ~45,000 steps: stored, and rendered on read.
        let cheap = owner.create(&quadratic(300)).await;
        let res = owner
            .get(&format!("/tokens/{}", cheap["id"].as_str().unwrap()))
            .await;
        assert_eq!(res.status(), 200);
        // ~180,000 steps: within one rendering's budget, over a stored mask's cap.
        assert_invalid(owner.post("/tokens", &quadratic(600)).await, &["mask"]).await;

        // 200 masks of ~45,000 steps fit one request's 10,000,000; 250 do not, and the request
        // is refused as a whole before anything is stored.
        let fits: Vec<Value> = (0..200).map(|_| quadratic(300)).collect();
        let res = owner.post("/tokenize", &json!(fits)).await;
        assert_eq!(
            res.status(),
            200,
            "{}",
            res.text().await.unwrap_or_default()
        );
        let before = owner
            .get("/tokens?size=1")
            .await
            .json::<Value>()
            .await
            .unwrap()["pagination"]["total_items"]
            .clone();
        let over: Vec<Value> = (0..250).map(|_| quadratic(300)).collect();
        let res = owner.post("/tokenize", &json!(over)).await;
        assert_eq!(
            res.status(),
            400,
            "{}",
            res.text().await.unwrap_or_default()
        );
        let after = owner
            .get("/tokens?size=1")
            .await
            .json::<Value>()
            .await
            .unwrap()["pagination"]["total_items"]
            .clone();
        assert_eq!(before, after, "nothing of the refused batch is stored");
    })
    .await;
}
