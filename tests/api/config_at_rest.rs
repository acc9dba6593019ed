//! Reactor and proxy configuration encrypted at rest (docs/decisions.md §9): the secrets real
//! code keeps there are in no byte of the database, yet every read and the code see them; a
//! configuration written before sealing existed still reads; a sealed one moved to another
//! reactor does not open there. On each database.

use serde_json::{Value, json};
use tokenvault_tests::{on_each_backend_with, unique};

use super::proxies::{loopback, proxy};
use super::reactors::{formula, p, react};
use super::tokens::with;

#[tokio::test]
async fn configuration_is_sealed_at_rest_and_open_to_reads_and_code() {
    on_each_backend_with(loopback, async |app| {
        let user = with(app, &["token:use"], json!([])).await;
        let f = formula(
            app,
            "module.exports = (req) => ({ raw: req.configuration });",
            json!([p("x", "string", true)]),
            json!([{"name": "API_KEY", "type": "string"}]),
        )
        .await;
        let make = async |secret: &str| -> Value {
            let res = app
                .post(
                    "/reactors",
                    &json!({"name": unique("r"), "formula": {"id": f["id"]},
                            "configuration": {"API_KEY": secret}}),
                )
                .await;
            assert_eq!(res.status(), 201);
            let made: Value = res.json().await.unwrap();
            assert_eq!(made["configuration"], json!({"API_KEY": secret}));
            made
        };
        let r = make("sk_live_reactor_secret_7f3a").await;
        let other = make("sk_live_other_secret_91bc").await;
        let px = proxy(
            app,
            json!({"name": "p", "destination_url": "http://127.0.0.1:9/",
                   "configuration": {"SECRET": "proxy_secret_c0ffee"}}),
        )
        .await;
        assert_eq!(px["configuration"], json!({"SECRET": "proxy_secret_c0ffee"}));
        let updated = app
            .put(
                &format!("/proxies/{}", px["id"].as_str().unwrap()),
                &json!({"name": "p", "destination_url": "http://127.0.0.1:9/",
                        "configuration": {"SECRET": "proxy_secret_updated_d00d"}}),
            )
            .await;
        assert_eq!(updated.status(), 200);

        let dump = String::from_utf8_lossy(&app.dump_database().await).into_owned();
        assert!(dump.len() > 1000, "the dump has content");
        for secret in [
            "sk_live_reactor_secret_7f3a",
            "sk_live_other_secret_91bc",
            "proxy_secret_c0ffee",
            "proxy_secret_updated_d00d",
        ] {
            assert!(!dump.contains(secret), "{secret} is stored in clear");
        }

        let rid = r["id"].as_str().unwrap();
        let got: Value = app.get(&format!("/reactors/{rid}")).await.json().await.unwrap();
        assert_eq!(got["configuration"], json!({"API_KEY": "sk_live_reactor_secret_7f3a"}));
        let listed: Value = app.get("/reactors").await.json().await.unwrap();
        assert!(
            listed["data"].as_array().unwrap().iter().any(|x| x["configuration"]["API_KEY"] == "sk_live_other_secret_91bc"),
            "{listed}"
        );
        let proxied: Value = app
            .get(&format!("/proxies/{}", px["id"].as_str().unwrap()))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(proxied["configuration"], json!({"SECRET": "proxy_secret_updated_d00d"}));
        let res = react(&user, &r["id"], json!({})).await;
        assert_eq!(
            res.json::<Value>().await.unwrap()["raw"],
            json!({"API_KEY": "sk_live_reactor_secret_7f3a"})
        );

        // A row written before configurations were sealed reads as written.
        // Rows are found by name: ids are stored as the database's own uuid type.
        let (rname, oname) = (r["name"].as_str().unwrap(), other["name"].as_str().unwrap());
        let oid = other["id"].as_str().unwrap();
        let changed = app
            .execute_sql(&format!(
                "UPDATE reactors SET configuration = '{{\"API_KEY\":\"legacy\"}}' WHERE name = '{oname}'"
            ))
            .await;
        assert_eq!(changed, 1);
        let res = react(&user, &other["id"], json!({})).await;
        assert_eq!(res.json::<Value>().await.unwrap()["raw"], json!({"API_KEY": "legacy"}));
        // A sealed configuration moved to another reactor does not open there: it reads as the
        // opaque value it is, and the tenant's list still answers. (The copy is read within
        // the row's tenant, a statement Citus runs shard by shard.)
        let copied = app
            .execute_sql(&format!(
                "UPDATE reactors SET configuration = (SELECT r.configuration FROM reactors r \
                 WHERE r.tenant_id = reactors.tenant_id AND r.name = '{rname}') \
                 WHERE name = '{oname}'"
            ))
            .await;
        assert_eq!(copied, 1);
        let res = app.get(&format!("/reactors/{oid}")).await;
        assert_eq!(res.status(), 200);
        let moved: Value = res.json().await.unwrap();
        let members: Vec<&String> = moved["configuration"].as_object().unwrap().keys().collect();
        assert_eq!(members, ["__tokenvault_sealed"], "{moved}");
        assert!(!moved.to_string().contains("sk_live"), "{moved}");
        assert_eq!(app.get("/reactors").await.status(), 200);
    })
    .await;
}
