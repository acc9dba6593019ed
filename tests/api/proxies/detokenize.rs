//! Bodies detokenized on their way to the destination, with `token:use` on each token's
//! container, and nothing sent before the caller may use them.

use reqwest::Method;
use serde_json::{Value, json};
use tokenvault_tests::destination::Destination;
use tokenvault_tests::{on_each_backend_with, rule};

use super::{assert_proxy_error, invoke, loopback, proxy, simple, stranger, token};
use crate::tokens::{full, with};

#[tokio::test]
async fn bodies_are_detokenized_with_token_use_on_each_container() {
    on_each_backend_with(loopback, async |app| {
        let dest = Destination::start("127.0.0.1").await;
        let p = simple(app, &dest.url).await;
        let key = p["key"].as_str().unwrap();
        let owner = full(app).await;
        let secret = token(&owner, json!({"type": "token", "data": "s3cret", "containers": ["/open/"]})).await;
        let card = token(
            &owner,
            json!({"type": "card", "containers": ["/open/"],
                   "data": {"number": "4242424242424242", "expiration_month": 12, "expiration_year": 2030}}),
        )
        .await;
        let hidden = token(&owner, json!({"type": "token", "data": "vault-only", "containers": ["/hidden/"]})).await;
        // token:use on /open/ only, through a rule.
        let caller = with(app, &[], json!([rule(1, "/open/", "reveal", &["token:use"])])).await;
        let body = json!({"plain": "p", "value": format!("{{{{ {secret} }}}}"),
                          "number": format!("{{{{ {card} | json: '$.number' }}}}"),
                          "month": format!("{{{{ {card} | json: '$.expiration_month' }}}}"),
                          "text": format!("card {{{{{card}|json: '$.expiration_year'}}}}"),
                          "upper": format!("{{{{ {secret} | upcase }}}}")});
        let res = invoke(app, Some(&caller.key), key, Method::POST, "", Some(&body)).await;
        assert_eq!(res.status(), 200);
        assert_eq!(
            dest.last().json(),
            json!({"plain": "p", "value": "s3cret", "number": "4242424242424242", "month": 12,
                   "text": "card 2030", "upper": "S3CRET"})
        );
        // A body without expressions goes out byte for byte (key order, spacing, binary).
        for raw in [&b"{\"b\": 1,  \"a\": 2}"[..], &[0xff, 0x00, 0x7b, 0x7b][..]] {
            let res = app
                .request_as(Some(&caller.key), Method::POST, "/proxy")
                .header("SVC-PROXY-KEY", key)
                .header("Content-Type", "application/json")
                .body(raw.to_vec())
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 200);
            assert_eq!(dest.last().body, raw);
        }
        // A token in a container the caller may not use: nothing is sent.
        let before = dest.received().len();
        let body = json!({"v": format!("{{{{ {hidden} }}}}")});
        assert_proxy_error(invoke(app, Some(&caller.key), key, Method::POST, "", Some(&body)).await, 403).await;
        // An unknown token: 400 naming the body.
        let body = json!({"v": "{{ 0123456789abcdef }}"});
        let problem = assert_proxy_error(invoke(app, Some(&caller.key), key, Method::POST, "", Some(&body)).await, 400).await;
        assert!(problem["errors"]["body"].is_array(), "{problem}");
        assert_eq!(dest.received().len(), before);
        // Without require_auth: anyone with the key; detokenization acts as the proxy's
        // application, and without one expressions go as they are.
        let open = proxy(app, json!({"name": "open", "destination_url": dest.url, "require_auth": false})).await;
        let body = json!({"v": format!("{{{{ {secret} }}}}")});
        let res = invoke(app, None, open["key"].as_str().unwrap(), Method::POST, "", Some(&body)).await;
        assert_eq!(res.status(), 200);
        assert_eq!(dest.last().json(), body);
        let acting = app.app("private", &["token:use"]).await;
        let as_app = proxy(
            app,
            json!({"name": "as-app", "destination_url": dest.url, "require_auth": false, "application": {"id": acting["id"]}}),
        )
        .await;
        let res = invoke(app, None, as_app["key"].as_str().unwrap(), Method::POST, "", Some(&body)).await;
        assert_eq!(res.status(), 200);
        assert_eq!(dest.last().json(), json!({"v": "s3cret"}));
    })
    .await;
}

#[tokio::test]
async fn tokens_named_in_the_body_stay_unseen_until_the_caller_may_use_them() {
    // A proxy reads its caller's key beside the proxy, and the tokens a body names beside the
    // proxy's application: whatever the key, the answer is the one it got when each read
    // waited for the one before, and nothing goes out before it is allowed.
    on_each_backend_with(loopback, async |app| {
        let dest = Destination::start("127.0.0.1").await;
        let p = simple(app, &dest.url).await;
        let key = p["key"].as_str().unwrap();
        let owner = full(app).await;
        let mut open = Vec::new();
        for i in 0..12 {
            let id = token(
                &owner,
                json!({"type": "token", "data": format!("v{i}"), "containers": ["/open/"]}),
            )
            .await;
            open.push(id);
        }
        let body = json!({"v": format!("{{{{ {} }}}}", open[0])});
        assert_proxy_error(
            invoke(app, None, key, Method::POST, "", Some(&body)).await,
            401,
        )
        .await;
        let stranger = stranger(app).await;
        let res = invoke(app, Some(&stranger), key, Method::POST, "", Some(&body)).await;
        assert_proxy_error(res, 401).await;
        let reader = with(app, &["token:read"], json!([])).await;
        let res = invoke(app, Some(&reader.key), key, Method::POST, "", Some(&body)).await;
        assert_proxy_error(res, 403).await;
        let elsewhere = with(
            app,
            &[],
            json!([rule(1, "/hidden/", "reveal", &["token:use"])]),
        )
        .await;
        let res = invoke(
            app,
            Some(&elsewhere.key),
            key,
            Method::POST,
            "",
            Some(&body),
        )
        .await;
        assert_proxy_error(res, 403).await;
        assert!(dest.received().is_empty());
        dest.assert_no_connection("a refused call").await;

        // Allowed: a few tokens, and more than are read ahead, are replaced alike; an unknown
        // one among known ones is still named.
        let caller = with(
            app,
            &[],
            json!([rule(1, "/open/", "reveal", &["token:use"])]),
        )
        .await;
        for n in [2, 12] {
            let body: serde_json::Map<String, Value> = open[..n]
                .iter()
                .enumerate()
                .map(|(i, id)| (format!("k{i}"), json!(format!("{{{{ {id} }}}}"))))
                .collect();
            let res = invoke(
                app,
                Some(&caller.key),
                key,
                Method::POST,
                "",
                Some(&Value::Object(body)),
            )
            .await;
            assert_eq!(res.status(), 200);
            let sent = dest.last().json();
            for i in 0..n {
                assert_eq!(sent[format!("k{i}")], json!(format!("v{i}")), "{n} tokens");
            }
        }
        let body = json!({"a": format!("{{{{ {} }}}}", open[1]), "b": "{{ 0123456789abcdef }}"});
        let problem = assert_proxy_error(
            invoke(app, Some(&caller.key), key, Method::POST, "", Some(&body)).await,
            400,
        )
        .await;
        assert!(problem["errors"]["body"].is_array(), "{problem}");
        assert_eq!(dest.received().len(), 2);
    })
    .await;
}
