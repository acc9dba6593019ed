//! `/tokenize` (all or nothing) and `/detokenize` (expressions, permissions, the 100-token bound).

use serde_json::{Value, json};
use tokenvault_tests::{assert_invalid, assert_problem, on_each_backend, rule};

use super::{CARD, full, with};

#[tokio::test]
async fn tokenize_and_detokenize() {
    on_each_backend(async |app| {
        let c = full(app).await;
        let res = c
            .post("/tokenize", &json!({"card": {"type": "card_number", "data": CARD}, "name": "Ada", "list": ["x", 7, true], "none": null}))
            .await;
        assert_eq!(res.status(), 200);
        let out: Value = res.json().await.unwrap();
        assert_eq!(out["card"]["type"], "card_number");
        // Under the create transform (a reveal rule here): the value sent (decisions §12).
        assert_eq!(out["card"]["data"], CARD);
        assert!(out["none"].is_null());
        let name_id = out["name"].as_str().unwrap();
        assert_eq!(c.read(name_id).await["data"], "Ada");
        let list: Vec<Value> = out["list"].as_array().unwrap().clone();
        let mut values = Vec::new();
        for id in &list {
            values.push(c.read(id.as_str().unwrap()).await["data"].clone());
        }
        assert_eq!(values, vec![json!("x"), json!(7), json!(true)]);

        let before: Value = c.get("/tokens").await.json().await.unwrap();
        let bad = c.post("/tokenize", &json!({"ok": "fine", "card": {"type": "card_number", "data": "123"}})).await;
        assert_invalid(bad, &["card.data"]).await;
        let after: Value = c.get("/tokens").await.json().await.unwrap();
        assert_eq!(before["pagination"]["total_items"], after["pagination"]["total_items"], "all or nothing");

        let card_id = out["card"]["id"].as_str().unwrap();
        let body = json!({"n": format!("{{{{ {name_id} }}}}"), "deep": [format!("card: {{{{{card_id}}}}}")], "k": 1});
        let res = c.post("/detokenize", &body).await;
        assert_eq!(res.status(), 200);
        assert_eq!(res.json::<Value>().await.unwrap(), json!({"n": "Ada", "deep": [format!("card: {CARD}")], "k": 1}));
        assert_invalid(c.post("/detokenize", &json!({"x": "{{ no-such-token }}"})).await, &["body"]).await;
        let pci_only = with(app, &[], json!([rule(1, "/pci/", "reveal", &["token:read"])])).await;
        assert_problem(pci_only.post("/detokenize", &json!({"x": format!("{{{{ {name_id} }}}}")})).await, 403).await;
        let many: Vec<Value> = (0..101).map(|i| json!(format!("{{{{ tok-{i:03} }}}}"))).collect();
        assert_invalid(c.post("/detokenize", &json!(many)).await, &["body"]).await;
    })
    .await;
}
