//! What one detokenization may cost: the tokens a request names hold at most 10 MiB of data
//! together, refused before any is decrypted; the filters of one proxy body read at most
//! 32 MiB of token data together.

use reqwest::Method;
use serde_json::{Value, json};
use tokenvault_tests::destination::Destination;
use tokenvault_tests::{assert_problem, on_each_backend_with, unique};

use super::proxies::{invoke, loopback, proxy};
use super::tokens::full;

/// Before, the request was refused only after every token was decrypted and copied (the
/// answer's size was checked last).
#[tokio::test]
async fn the_tokens_of_one_request_hold_at_most_10_mib_together() {
    on_each_backend_with(
        |_| {},
        async |app| {
            let owner = full(app).await;
            let big = "x".repeat(1_000_000);
            let mut body = serde_json::Map::new();
            for i in 0..11 {
                let t = owner.create(&json!({"type": "token", "data": big})).await;
                body.insert(
                    format!("f{i}"),
                    json!(format!("{{{{ {} }}}}", t["id"].as_str().unwrap())),
                );
            }
            let res = owner
                .post("/detokenize", &Value::Object(body.clone()))
                .await;
            let problem = assert_problem(res, 400).await;
            let said = problem["errors"]["body"][0]
                .as_str()
                .unwrap_or_default()
                .to_string();
            assert!(
                said.contains("at most 10 MiB of data together"),
                "{problem}"
            );
            // Ten of them pass.
            body.remove("f10");
            let res = owner.post("/detokenize", &Value::Object(body)).await;
            assert_eq!(res.status(), 200);
        },
    )
    .await;
}

/// Before, 40 filters over a 1 MB token read 40 MB of data per call, and 1,000 a gigabyte.
#[tokio::test]
async fn the_filters_of_one_proxy_body_read_at_most_32_mib() {
    on_each_backend_with(loopback, async |app| {
        let dest = Destination::start("127.0.0.1").await;
        let owner = full(app).await;
        let mut data = serde_json::Map::new();
        for i in 0..40 {
            data.insert(format!("a{i}"), json!("y".repeat(24_000)));
        }
        let t = owner.create(&json!({"type": "token", "data": data})).await;
        let id = t["id"].as_str().unwrap();
        let p = proxy(
            app,
            json!({"name": unique("p"), "destination_url": dest.url, "require_auth": true}),
        )
        .await;
        let filters = |n: usize| {
            let fields: serde_json::Map<String, Value> = (0..n)
                .map(|i| {
                    (
                        format!("f{i}"),
                        json!(format!("{{{{ {id} | json: '$.a{i}' }}}}")),
                    )
                })
                .collect();
            Value::Object(fields)
        };
        let key = p["key"].as_str().unwrap();
        let res = invoke(
            app,
            Some(&owner.key),
            key,
            Method::POST,
            "",
            Some(&filters(20)),
        )
        .await;
        assert_eq!(res.status(), 200, "twenty filters over ~1 MB read ~20 MB");
        let res = invoke(
            app,
            Some(&owner.key),
            key,
            Method::POST,
            "",
            Some(&filters(40)),
        )
        .await;
        assert_eq!(res.status(), 400);
        let body: Value = res.json().await.unwrap();
        let said = body["proxy_error"]["errors"]["body"][0]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(said.contains("32 MiB"), "{body}");
    })
    .await;
}
