//! What a proxy call leaves in the audit log: a token handed to a destination is recorded even
//! when the destination then fails (502/504), and a call without a key is `anonymous`, even
//! when the proxy's application detokenized for it.

use reqwest::Method;
use serde_json::{Value, json};
use tokenvault_tests::destination::Destination;
use tokenvault_tests::{TestApp, on_each_backend_with, rule, unique};

use super::proxies::{invoke, loopback, proxy, token};
use super::tokens::full;

/// The entries of `entity_type`/`id` in the tenant's log, once the buffer is flushed.
async fn entries(app: &TestApp, entity_type: &str, id: &str, operation: &str) -> Vec<Value> {
    for _ in 0..50 {
        let page: Value = app
            .get(&format!(
                "/logs?size=100&entity_type={entity_type}&entity_id={id}"
            ))
            .await
            .json()
            .await
            .unwrap();
        let found: Vec<Value> = page["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["operation"] == operation)
            .cloned()
            .collect();
        if !found.is_empty() {
            return found;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    Vec::new()
}

/// Before, a call whose destination was unreachable left no `use` of the token it carried.
#[tokio::test]
async fn a_token_sent_to_a_failing_destination_is_audited() {
    on_each_backend_with(loopback, async |app| {
        let owner = full(app).await;
        let secret = token(&owner, json!({"type": "token", "data": "to nowhere"})).await;
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let gone = proxy(
            app,
            json!({"name": unique("p"), "destination_url": format!("http://127.0.0.1:{closed}"),
                   "require_auth": true}),
        )
        .await;
        let body = json!({"card": format!("{{{{ {secret} }}}}")});
        let res = invoke(
            app,
            Some(&owner.key),
            gone["key"].as_str().unwrap(),
            Method::POST,
            "",
            Some(&body),
        )
        .await;
        assert_eq!(res.status(), 502);
        let used = entries(app, "token", &secret, "use").await;
        assert_eq!(used.len(), 1, "the token that went out is on record");
        assert_eq!(used[0]["actor_type"], "application");
        let invoked = entries(app, "proxy", gone["id"].as_str().unwrap(), "invoke").await;
        assert_eq!(invoked.len(), 1, "the call that went out is on record");
    })
    .await;
}

/// Before, an anonymous call of a `require_auth: false` proxy was logged as its application.
#[tokio::test]
async fn an_anonymous_call_is_logged_as_anonymous() {
    on_each_backend_with(loopback, async |app| {
        let dest = Destination::start("127.0.0.1").await;
        let owner = full(app).await;
        let secret = token(
            &owner,
            json!({"type": "token", "data": "for the destination"}),
        )
        .await;
        let lender = app
            .create_app(&json!({"name": unique("lender"), "type": "private",
                "rules": [rule(1, "/", "reveal", &["token:use"])]}))
            .await;
        let open = proxy(
            app,
            json!({"name": unique("p"), "destination_url": dest.url, "require_auth": false,
                   "application": {"id": lender["id"]}}),
        )
        .await;
        let body = json!({"card": format!("{{{{ {secret} }}}}")});
        let res = invoke(
            app,
            None,
            open["key"].as_str().unwrap(),
            Method::POST,
            "",
            Some(&body),
        )
        .await;
        assert_eq!(res.status(), 200);
        let invoked = entries(app, "proxy", open["id"].as_str().unwrap(), "invoke").await;
        assert_eq!(invoked.len(), 1);
        assert_eq!(invoked[0]["actor_type"], "anonymous", "{:?}", invoked[0]);
        let used = entries(app, "token", &secret, "use").await;
        assert_eq!(used.len(), 1);
        assert_eq!(used[0]["actor_type"], "anonymous", "{:?}", used[0]);
    })
    .await;
}

/// Before, proxy calls were never counted: a proxy's calls count against a rate limit of their
/// own, like an application's requests.
#[tokio::test]
async fn proxy_calls_are_rate_limited() {
    let limited = |config: &mut tokenvault_server::Config| {
        loopback(config);
        config.http.rate_limit_per_second = 2;
    };
    on_each_backend_with(limited, async |app| {
        let dest = Destination::start("127.0.0.1").await;
        let open = proxy(
            app,
            json!({"name": unique("p"), "destination_url": dest.url, "require_auth": false}),
        )
        .await;
        let mut statuses = Vec::new();
        for _ in 0..10 {
            let res = invoke(
                app,
                None,
                open["key"].as_str().unwrap(),
                Method::GET,
                "",
                None,
            )
            .await;
            let status = res.status().as_u16();
            if status == 429 {
                assert!(res.headers().get("retry-after").is_some());
                let body: Value = res.json().await.unwrap();
                assert_eq!(body["proxy_error"]["status"], 429, "{body}");
            }
            statuses.push(status);
        }
        assert!(
            statuses.iter().filter(|s| **s == 200).count() <= 5,
            "{statuses:?}"
        );
        assert!(statuses.contains(&429), "{statuses:?}");
    })
    .await;
}

/// Before, calls with a key that failed authentication spent the proxy's allowance, so anyone
/// holding only the proxy key could deny it to its real callers.
#[tokio::test]
async fn failed_callers_do_not_spend_a_real_callers_allowance() {
    let limited = |config: &mut tokenvault_server::Config| {
        loopback(config);
        config.http.rate_limit_per_second = 2;
    };
    on_each_backend_with(limited, async |app| {
        let dest = Destination::start("127.0.0.1").await;
        let owner = full(app).await;
        let guarded = proxy(
            app,
            json!({"name": unique("p"), "destination_url": dest.url, "require_auth": true}),
        )
        .await;
        let key = guarded["key"].as_str().unwrap();
        let bogus = "key_notarealkeynotarealkeynotareal1";
        for _ in 0..10 {
            let res = invoke(app, Some(bogus), key, Method::GET, "", None).await;
            assert!(matches!(res.status().as_u16(), 401 | 429));
        }
        let res = invoke(app, Some(&owner.key), key, Method::GET, "", None).await;
        assert_eq!(res.status(), 200, "the real caller keeps its allowance");
    })
    .await;
}

/// Before, a call to a proxy that requires no auth was counted under whatever `SVC-API-KEY` it
/// carried, and the key was never checked: each invented key bought a fresh allowance. A key
/// that is sent must now authenticate, whether the proxy requires one or not.
#[tokio::test]
async fn invented_keys_buy_no_allowance_on_an_anonymous_proxy() {
    let limited = |config: &mut tokenvault_server::Config| {
        loopback(config);
        config.http.rate_limit_per_second = 1;
    };
    on_each_backend_with(limited, async |app| {
        let dest = Destination::start("127.0.0.1").await;
        let open = proxy(
            app,
            json!({"name": unique("p"), "destination_url": dest.url, "require_auth": false}),
        )
        .await;
        let key = open["key"].as_str().unwrap();
        let mut forwarded = 0;
        for i in 0..10 {
            let invented = format!("key_invented{i:0>23}");
            let res = invoke(app, Some(&invented), key, Method::GET, "", None).await;
            let status = res.status().as_u16();
            assert!(matches!(status, 200 | 401 | 429), "{status}");
            forwarded += usize::from(status == 200);
        }
        assert_eq!(forwarded, 0, "an invented key is refused, never forwarded");
        // A real key of the tenant is counted under its own application.
        let owner = full(app).await;
        let res = invoke(app, Some(&owner.key), key, Method::GET, "", None).await;
        assert_eq!(res.status(), 200);
    })
    .await;
}
