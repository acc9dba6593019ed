//! Seeding the server over HTTP: an application with a reveal rule, tokens, a parent with 20
//! children, a trivial reactor and a proxy to the bench's own destination; the load targets
//! made of them.

use serde_json::json;

use super::server::{Server, curl, text};
use super::{BOOTSTRAP_KEY, CHILDREN, DESTINATION, DETOKENIZE, HEALTH, PROXY, SEARCH, TOKENIZE};
use crate::wrk::Target;

/// What the load runs use: (name, method, path, key, body).
pub(super) fn seed(server: &Server, destination: &str) -> anyhow::Result<Vec<Target>> {
    let m = Some(BOOTSTRAP_KEY);
    let all = [
        "token:create",
        "token:read",
        "token:use",
        "token:update",
        "token:search",
    ];
    let app = curl(
        server,
        "POST",
        "/applications",
        m,
        Some(&json!({
        "name": "bench", "type": "private", "permissions": all,
        "rules": [{"priority": 1, "container": "/", "transform": "reveal", "permissions": all}]})),
    )?;
    let key = text(&app, "key")?;
    let app_id = text(&app, "id")?;
    let k = Some(key.as_str());
    let token = curl(
        server,
        "POST",
        "/tokens",
        k,
        Some(&json!({"type": "token", "data": "bench value"})),
    )?;
    let token_id = text(&token, "id")?;
    // A social security number: found by its default search indexes.
    curl(
        server,
        "POST",
        "/tokens",
        k,
        Some(&json!({"type": "social_security_number", "data": "123-45-6789"})),
    )?;
    let parent = text(
        &curl(
            server,
            "POST",
            "/tokens",
            k,
            Some(&json!({"type": "token", "data": "parent"})),
        )?,
        "id",
    )?;
    for i in 0..20 {
        let path = format!("/tokens/{parent}/children");
        curl(
            server,
            "POST",
            &path,
            k,
            Some(&json!({"type": "token", "data": format!("child {i}")})),
        )?;
    }
    let formula = curl(
        server,
        "POST",
        "/reactor-formulas",
        m,
        Some(&json!({
        "name": "bench", "type": "private",
        "code": "module.exports = async function (req) { return { raw: req.args }; };"})),
    )?;
    let reactor = curl(
        server,
        "POST",
        "/reactors",
        m,
        Some(&json!({
        "name": "bench", "configuration": {}, "formula": {"id": text(&formula, "id")?}})),
    )?;
    let proxy = curl(
        server,
        "POST",
        "/proxies",
        m,
        Some(&json!({
        "name": "bench", "destination_url": format!("{destination}/destination"),
        "application": {"id": app_id}, "require_auth": true})),
    )?;
    let json_body = json!({"card": format!("{{{{ {token_id} }}}}"), "note": "x".repeat(900)});
    Ok(vec![
        Target {
            name: HEALTH,
            base: None,
            method: "GET",
            path: "/health".into(),
            key: None,
            headers: vec![],
            body: None,
        },
        Target {
            name: TOKENIZE,
            base: None,
            method: "POST",
            path: "/tokens".into(),
            key: Some(key.clone()),
            headers: vec![],
            body: Some(json!({"type": "token", "data": "bench value"})),
        },
        Target {
            name: DETOKENIZE,
            base: None,
            method: "GET",
            path: format!("/tokens/{token_id}"),
            key: Some(key.clone()),
            headers: vec![],
            body: None,
        },
        Target {
            name: SEARCH,
            base: None,
            method: "POST",
            path: "/tokens/search".into(),
            key: Some(key.clone()),
            headers: vec![],
            body: Some(json!({"query": "data:123456789"})),
        },
        Target {
            name: CHILDREN,
            base: None,
            method: "GET",
            path: format!("/tokens/{parent}/children?size=20"),
            key: Some(key.clone()),
            headers: vec![],
            body: None,
        },
        Target {
            name: "POST /reactors/{id}/react (warm)",
            base: None,
            method: "POST",
            path: format!("/reactors/{}/react", text(&reactor, "id")?),
            key: Some(key.clone()),
            headers: vec![],
            body: Some(json!({"args": {"card": format!("{{{{ {token_id} }}}}")}})),
        },
        Target {
            name: PROXY,
            base: None,
            method: "POST",
            path: "/proxy".into(),
            key: Some(key.clone()),
            headers: vec![("SVC-PROXY-KEY", text(&proxy, "key")?)],
            body: Some(json_body.clone()),
        },
        Target {
            name: DESTINATION,
            base: Some(destination.to_owned()),
            method: "POST",
            path: "/destination".into(),
            key: None,
            headers: vec![],
            body: Some(json_body),
        },
    ])
}
