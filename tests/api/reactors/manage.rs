//! Managing formulas and reactors per tenant: validation, configuration casts, lists, updates,
//! and deletes.

use reqwest::Method;
use serde_json::{Value, json};
use tokenvault_tests::{assert_invalid, assert_problem, on_each_backend};

use super::{ECHO, formula, p, react};
use crate::tokens::with;

#[tokio::test]
async fn formulas_and_reactors_are_managed_per_tenant() {
    on_each_backend(async |app| {
        // Code is stored as given; code that does not compile is a 422 naming `code` and the
        // line at its invocation.
        let bad_code = "// a reactor\nmodule.exports = async () => { return {raw: ; }; };";
        let res = app
            .post(
                "/reactor-formulas",
                &json!({"name": "bad", "code": bad_code}),
            )
            .await;
        assert_eq!(res.status(), 201);
        let bad: Value = res.json().await.unwrap();
        assert_eq!(bad["code"], bad_code);
        let res = app
            .post("/reactors", &json!({"name": "bad", "configuration": {}, "formula": {"id": bad["id"]}}))
            .await;
        assert_eq!(res.status(), 201);
        let bad_reactor: Value = res.json().await.unwrap();
        let user = with(app, &["token:use"], json!([])).await;
        let res = react(&user, &bad_reactor["id"], json!({})).await;
        let body = assert_problem(res, 422).await;
        let said = body["errors"]["code"][0].as_str().unwrap_or_default().to_string();
        assert!(said.contains("SyntaxError") && said.contains("line 2"), "{body}");
        let res = app
            .post(
                "/reactor-formulas",
                &json!({"code": "x", "request_parameters": [{"name": "a", "type": "date"}]}),
            )
            .await;
        assert_invalid(res, &["name", "request_parameters.0.type"]).await;
        let f = formula(
            app,
            ECHO,
            json!([p("x", "string", false)]),
            json!([{"name": "limit", "type": "number"}]),
        )
        .await;
        let fid = f["id"].as_str().unwrap();
        assert_eq!(f["request_parameters"][0]["name"], "x");
        let res = app
            .put(
                &format!("/reactor-formulas/{fid}"),
                &json!({"name": "f2", "code": "module.exports = ("}),
            )
            .await;
        assert_eq!(res.status(), 200, "stored as given");
        let res = app
            .put(
                &format!("/reactor-formulas/{fid}"),
                &json!({"name": "f2", "code": ECHO, "request_parameters": [p("x", "string", false)],
                        "configuration": [{"name": "limit", "type": "number"}]}),
            )
            .await;
        assert_eq!(res.status(), 200);
        // Configuration must give every declared name, castable to its type.
        for (config, field) in [
            (json!({}), "configuration.limit"),
            (json!({"limit": "many"}), "configuration.limit"),
        ] {
            let res = app
                .post(
                    "/reactors",
                    &json!({"name": "r", "configuration": config, "formula": {"id": fid}}),
                )
                .await;
            assert_invalid(res, &[field]).await;
        }
        let mgmt = app.app("management", &["reactor:read"]).await;
        let res = app
            .post(
                "/reactors",
                &json!({"name": "r", "configuration": {"limit": "5"}, "formula": {"id": fid},
                                      "application": {"id": mgmt["id"]}}),
            )
            .await;
        assert_invalid(res, &["application.id"]).await;
        let res = app
            .post(
                "/reactors",
                &json!({"name": "r", "configuration": {"limit": "5"},
                                      "formula": {"id": uuid::Uuid::new_v4()}}),
            )
            .await;
        assert_invalid(res, &["formula.id"]).await;
        let res = app
            .post(
                "/reactors",
                &json!({"name": "reactor-abcdef", "configuration": {"limit": "5"}, "formula": {"id": fid}}),
            )
            .await;
        assert_eq!(res.status(), 201);
        let r: Value = res.json().await.unwrap();
        assert_eq!(
            r["configuration"],
            json!({"limit": 5}),
            "cast to the declared type"
        );
        assert_eq!(r["formula"]["code"], ECHO);
        let rid = r["id"].as_str().unwrap();
        // A formula in use cannot be deleted.
        let in_use = assert_problem(app.delete(&format!("/reactor-formulas/{fid}")).await, 409).await;
        assert!(in_use["detail"].as_str().unwrap().starts_with("A reactor uses the formula"), "{in_use}");
        // Lists filter by id and by name (contains, any case).
        let listed: Value = app
            .get(&format!(
                "/reactors?name={}",
                &r["name"].as_str().unwrap()[..6].to_uppercase()
            ))
            .await
            .json()
            .await
            .unwrap();
        assert!(
            listed["data"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x["id"] == r["id"])
        );
        let listed: Value = app
            .get(&format!("/reactor-formulas?id={fid}"))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(listed["pagination"]["total_items"], 1);
        // Update keeps the formula.
        let res = app
            .put(
                &format!("/reactors/{rid}"),
                &json!({"name": "renamed", "configuration": {"limit": 1}}),
            )
            .await;
        assert_eq!(res.status(), 200);
        assert_eq!(res.json::<Value>().await.unwrap()["formula"]["id"], f["id"]);
        // Another tenant sees neither.
        let (_, other) = app.new_tenant("other").await;
        for path in [
            format!("/reactors/{rid}"),
            format!("/reactor-formulas/{fid}"),
        ] {
            let res = app
                .request_as(Some(&other), Method::GET, &path)
                .send()
                .await
                .unwrap();
            assert_problem(res, 404).await;
        }
        assert_eq!(app.delete(&format!("/reactors/{rid}")).await.status(), 204);
        assert_eq!(
            app.delete(&format!("/reactor-formulas/{fid}"))
                .await
                .status(),
            204
        );
        assert_problem(app.get(&format!("/reactors/{rid}")).await, 404).await;
    })
    .await;
}
