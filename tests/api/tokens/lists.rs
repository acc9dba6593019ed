//! Listing and counting tokens: list filters and paging, and the usage report.

use serde_json::{Value, json};
use tokenvault_tests::{assert_invalid, assert_problem, on_each_backend, unique};

use super::{CARD, full, with};

#[tokio::test]
async fn list_filters_and_pages() {
    on_each_backend(async |app| {
        let c = full(app).await;
        let run = unique("run");
        let mut ids = Vec::new();
        for i in 0..3 {
            ids.push(
                c.create(&json!({"type": "token", "data": i, "metadata": {"run": run}}))
                    .await["id"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            );
        }
        let card = c
            .create(&json!({"type": "card_number", "data": CARD, "metadata": {"run": run}}))
            .await;
        let body: Value = c
            .get(&format!("/tokens?metadata.run={run}&type=token"))
            .await
            .json()
            .await
            .unwrap();
        let listed: Vec<&str> = body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap())
            .collect();
        assert_eq!(
            listed,
            ids.iter().rev().map(String::as_str).collect::<Vec<_>>()
        );
        let brackets: Value = c
            .get(&format!("/tokens?metadata[run]={run}&size=2&page=2"))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(
            brackets["pagination"],
            json!({"total_items": 4, "page_number": 2, "page_size": 2, "total_pages": 2})
        );
        let by_id: Value = c
            .get(&format!(
                "/tokens?id={}&id={}",
                ids[0],
                card["id"].as_str().unwrap()
            ))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(by_id["pagination"]["total_items"], 2);
        assert_invalid(c.get("/tokens?type=gold").await, &["type"]).await;
        assert_invalid(c.get("/tokens?size=0").await, &["size"]).await;
    })
    .await;
}

#[tokio::test]
async fn usage_report_counts_types_and_monthly_active_tokens() {
    on_each_backend(async |app| {
        let report = async || -> Value {
            let res = app.get("/tenants/self/reports/usage").await;
            assert_eq!(res.status(), 200);
            res.json::<Value>().await.unwrap()["token_report"].clone()
        };
        let empty = report().await;
        assert_eq!(empty["monthly_active_tokens"], 0);
        assert_eq!(empty["included_monthly_active_tokens"], 1000);
        let c = full(app).await;
        let a = c.create(&json!({"type": "token", "data": "a"})).await;
        c.create(&json!({"type": "card_number", "data": CARD}))
            .await;
        c.read(a["id"].as_str().unwrap()).await;
        c.read(a["id"].as_str().unwrap()).await;
        let r = report().await;
        assert_eq!(r["metrics_by_type"]["token"]["count"], 1);
        assert_eq!(r["metrics_by_type"]["card_number"]["count"], 1);
        assert!(
            r["metrics_by_type"]["token"]["last_created_at"]
                .as_str()
                .unwrap()
                .ends_with('Z')
        );
        assert_eq!(r["monthly_active_tokens"], 2);
        assert_eq!(
            c.delete(&format!("/tokens/{}", a["id"].as_str().unwrap()))
                .await
                .status(),
            204
        );
        let r = report().await;
        assert!(
            r["metrics_by_type"]
                .get("token")
                .is_none_or(|m| m["count"] == 0)
        );
        assert_eq!(
            r["monthly_active_tokens"], 2,
            "a deleted token keeps its count"
        );
        // A batch's new tokens count once each (`/tokenize` writes no activity row for them).
        let batch = c
            .post("/tokenize", &json!([{"type": "token", "data": "b"}, "c"]))
            .await;
        assert_eq!(batch.status(), 200);
        assert_eq!(report().await["monthly_active_tokens"], 4);
        let reader = with(app, &["token:read"], json!([])).await;
        assert_problem(reader.get("/tenants/self/reports/usage").await, 403).await;
    })
    .await;
}

/// `?months=N`: the monthly active tokens of the last N UTC months, oldest first, the last the
/// report's own month; N outside 1–24, or not a number, is a 400 naming `months`.
#[tokio::test]
async fn a_usage_history_lists_the_last_months_oldest_first() {
    on_each_backend(async |app| {
        let c = full(app).await;
        c.create(&json!({"type": "token", "data": "a"})).await;
        let res = app.get("/tenants/self/reports/usage?months=3").await;
        assert_eq!(res.status(), 200);
        let body: Value = res.json().await.unwrap();
        let months = body["monthly_active_tokens_by_month"].as_array().unwrap();
        assert_eq!(months.len(), 3, "{body}");
        let names: Vec<&str> = months
            .iter()
            .map(|m| m["month"].as_str().unwrap())
            .collect();
        // Consecutive calendar months, oldest first.
        let index = |m: &str| {
            let (y, mo) = m.split_once('-').unwrap();
            y.parse::<i64>().unwrap() * 12 + mo.parse::<i64>().unwrap()
        };
        assert!(
            names.windows(2).all(|w| index(w[1]) == index(w[0]) + 1),
            "{names:?}"
        );
        assert_eq!(
            months[2]["monthly_active_tokens"],
            body["token_report"]["monthly_active_tokens"]
        );
        assert_eq!(months[2]["monthly_active_tokens"], 1);
        assert_eq!(
            months[0]["monthly_active_tokens"], 0,
            "a fresh tenant's earlier months"
        );
        assert!(
            app.get("/tenants/self/reports/usage")
                .await
                .json::<Value>()
                .await
                .unwrap()
                .get("monthly_active_tokens_by_month")
                .is_none(),
            "absent unless asked for"
        );
        for bad in ["0", "25", "x"] {
            assert_invalid(
                app.get(&format!("/tenants/self/reports/usage?months={bad}"))
                    .await,
                &["months"],
            )
            .await;
        }
        let reader = with(app, &["token:read"], json!([])).await;
        assert_problem(
            reader.get("/tenants/self/reports/usage?months=2").await,
            403,
        )
        .await;
    })
    .await;
}
