//! What an invocation may spend and what it leaves on record: `req.svc` calls count against the
//! lent application's rate limit (decisions §11), and a token handed to code is audited even
//! when the code then throws.

use serde_json::{Value, json};
use tokenvault_tests::{on_each_backend_with, rule, unique};

use super::reactors::{react, reactor};
use super::tokens::{full, with};

/// Before, 300 creates in one invocation all passed under a 1/s limit.
#[tokio::test]
async fn svc_calls_count_against_the_lent_applications_rate_limit() {
    on_each_backend_with(
        |config| config.http.rate_limit_per_second = 5,
        async |app| {
            let user = with(app, &["token:use"], json!([])).await;
            let acting = app
                .create_app(&json!({"name": unique("svc"), "type": "private",
                    "rules": [rule(1, "/general/", "reveal", &["token:create"])]}))
                .await;
            let code = r"module.exports = async (req) => {
                let made = 0, limited = 0, other = null;
                for (let i = 0; i < 60; i++) {
                    try { await req.svc.tokens.create({ type: 'token', data: 'n' + i }); made++; }
                    catch (e) { if (e.status === 429) limited++; else other = e.status; }
                }
                return { raw: { made, limited, other } };
            };";
            let r = reactor(
                app,
                code,
                json!([]),
                json!({"application": {"id": acting["id"]}}),
            )
            .await;
            let res = react(&user, &r["id"], json!({})).await;
            assert_eq!(res.status(), 200);
            let raw = res.json::<Value>().await.unwrap()["raw"].clone();
            // A burst of twice the rate (and what refills meanwhile), then 429s.
            assert!(raw["made"].as_u64().unwrap() <= 15, "{raw}");
            assert!(raw["limited"].as_u64().unwrap() >= 45, "{raw}");
            assert_eq!(raw["other"], Value::Null, "{raw}");
        },
    )
    .await;
}

/// Before, a token handed to code that then threw was used without a trace in the log.
#[tokio::test]
async fn a_token_handed_to_code_that_throws_is_audited() {
    on_each_backend_with(
        |_| {},
        async |app| {
            let owner = full(app).await;
            let token = owner
                .create(&json!({"type": "token", "data": "handed over"}))
                .await;
            let id = token["id"].as_str().unwrap().to_string();
            let code = "module.exports = async () => { throw new Error('no'); };";
            let r = reactor(
                app,
                code,
                json!([{"name": "t", "type": "string", "optional": false}]),
                json!({}),
            )
            .await;
            let res = react(&owner, &r["id"], json!({"t": format!("{{{{ {id} }}}}")})).await;
            assert_eq!(res.status(), 500);
            let mut used = false;
            for _ in 0..50 {
                let logs: Value = app
                    .get(&format!("/logs?entity_type=token&entity_id={id}"))
                    .await
                    .json()
                    .await
                    .unwrap();
                used = logs["data"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|e| e["operation"] == "use");
                if used {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            assert!(used, "no `use` entry for the token the code was given");
        },
    )
    .await;
}
