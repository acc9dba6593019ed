//! `POST /tokens/search` and search indexes (docs/decisions.md §12) over HTTP, on each
//! database: what a query finds, what it never tells, and the 400s that name the problem.

use serde_json::{Value, json};
use tokenvault_tests::{TestApp, assert_invalid, assert_problem, on_each_backend, rule, unique};

use super::tokens::{Client, full, with};

async fn search(c: &Client<'_>, query: &str) -> Value {
    let res = c.post("/tokens/search", &json!({ "query": query })).await;
    assert_eq!(res.status(), 200, "search {query}");
    res.json().await.unwrap()
}

fn ids(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_string())
        .collect()
}

fn id(token: &Value) -> String {
    token["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_token_is_found_by_a_value_its_indexes_hold() {
    on_each_backend(async |app| {
        let c = full(app).await;
        // The defaults of a social security number: as given, digits only, the last four.
        let ssn = c
            .create(
                &json!({"type": "social_security_number", "data": "123-45-6789",
                            "metadata": {"customer": "Cust-42"}}),
            )
            .await;
        assert_eq!(ssn["search_indexes"].as_array().unwrap().len(), 3);
        let other = c
            .create(&json!({"type": "social_security_number", "data": "987-65-4321"}))
            .await;
        for q in [
            "data:123-45-6789",
            "data:123456789",
            "data:6789",
            "data:\"123-45-6789\"",
        ] {
            assert_eq!(ids(&search(&c, q).await), [id(&ssn)], "{q}");
        }
        assert!(ids(&search(&c, "data:1234").await).is_empty());
        // Metadata: the key exactly, the value in any case.
        assert_eq!(
            ids(&search(&c, "metadata.customer:cust-42").await),
            [id(&ssn)]
        );
        assert!(ids(&search(&c, "metadata.Customer:cust-42").await).is_empty());
        // Own indexes; data matches in any case. A type without defaults has none.
        let named = c
            .create(&json!({"type": "token", "data": {"name": "Ada Lovelace"},
                            "search_indexes": ["{{ data.name }}"]}))
            .await;
        assert_eq!(named["search_indexes"], json!(["{{ data.name }}"]));
        assert_eq!(
            ids(&search(&c, "data:\"ada lovelace\"").await),
            [id(&named)]
        );
        let plain = c.create(&json!({"type": "token", "data": "6789"})).await;
        assert!(plain.get("search_indexes").is_none());
        // Boolean queries, newest first.
        let both = ids(&search(&c, "data:6789 OR data:4321").await);
        assert_eq!(both, [id(&other), id(&ssn)]);
        assert_eq!(
            ids(&search(&c, "type:social_security_number AND NOT data:6789").await),
            [id(&other)]
        );
        assert_eq!(
            ids(&search(&c, "type:social_security_number -data:6789").await),
            [id(&other)]
        );
        assert_eq!(
            ids(&search(&c, "(data:6789 OR data:4321) AND container:/pii/*").await).len(),
            2
        );
        assert!(ids(&search(&c, "data:6789 AND container:/pci/*").await).is_empty());
        assert_eq!(
            ids(&search(&c, &format!("id:{}", id(&ssn))).await),
            [id(&ssn)]
        );
        let today = &ssn["created_at"].as_str().unwrap()[..10];
        assert_eq!(
            search(
                &c,
                &format!("created_at:{today} AND type:social_security_number")
            )
            .await["pagination"]["total_items"],
            2
        );
        assert_eq!(
            search(&c, "created_at:[* TO 2000-01-01]").await["pagination"]["total_items"],
            0
        );
        // The empty query: every token the caller may search.
        assert_eq!(search(&c, "").await["pagination"]["total_items"], 4);
        // A page: size and page, newest first.
        let page = c
            .post(
                "/tokens/search",
                &json!({"query": "", "size": 1, "page": 2}),
            )
            .await;
        let page: Value = page.json().await.unwrap();
        assert_eq!(ids(&page), [id(&named)]);
        assert_eq!(page["pagination"]["total_pages"], 4);
        // The token whose id is "search" is still read at its path.
        c.create(&json!({"type": "token", "id": "search", "data": "x"}))
            .await;
        assert_eq!(c.read("search").await["data"], "x");
    })
    .await;
}

#[tokio::test]
async fn an_update_replaces_the_terms_and_a_delete_takes_them() {
    on_each_backend(async |app| {
        let c = full(app).await;
        let t = c
            .create(&json!({"type": "social_security_number", "data": "123-45-6789"}))
            .await;
        let path = format!("/tokens/{}", id(&t));
        let res = c.patch(&path, &json!({"data": "111-22-3333"})).await;
        assert_eq!(res.status(), 200);
        assert!(
            ids(&search(&c, "data:6789").await).is_empty(),
            "the old value is gone"
        );
        assert_eq!(ids(&search(&c, "data:3333").await), [id(&t)]);
        // New indexes replace the old; null removes them.
        let res = c
            .patch(
                &path,
                &json!({"search_indexes": ["{{ data | slice: 0, 3 }}"]}),
            )
            .await;
        assert_eq!(res.status(), 200);
        assert!(ids(&search(&c, "data:3333").await).is_empty());
        assert_eq!(ids(&search(&c, "data:111").await), [id(&t)]);
        assert_eq!(
            c.patch(&path, &json!({"search_indexes": null}))
                .await
                .status(),
            200
        );
        assert!(ids(&search(&c, "data:111").await).is_empty());
        // Metadata terms follow the metadata.
        c.patch(&path, &json!({"metadata": {"k": "v1"}})).await;
        assert_eq!(ids(&search(&c, "metadata.k:v1").await), [id(&t)]);
        c.patch(&path, &json!({"metadata": {"k": "v2"}})).await;
        assert!(ids(&search(&c, "metadata.k:v1").await).is_empty());
        assert_eq!(c.delete(&path).await.status(), 204);
        assert!(ids(&search(&c, "metadata.k:v2").await).is_empty());
    })
    .await;
}

/// A search shows only what the caller may search, under its transform, and counts only that:
/// a token in a container it may not search is never told of, by page or by total.
#[tokio::test]
async fn a_search_never_tells_of_tokens_the_caller_may_not_search() {
    on_each_backend(async |app| {
        let owner = full(app).await;
        let mine = owner
            .create(&json!({"type": "social_security_number", "data": "123-45-6789"}))
            .await;
        owner
            .create(
                &json!({"type": "social_security_number", "data": "123-45-6789",
                            "containers": ["/secret/"]}),
            )
            .await;
        let masked = with(
            app,
            &[],
            json!([rule(1, "/pii/", "mask", &["token:search"])]),
        )
        .await;
        // A miss is logged too: who searched, never what for.
        let guess = unique("guess");
        let missed = search(&masked, &format!("data:{guess}")).await;
        assert_eq!(missed["pagination"]["total_items"], 0);
        let log: Value = app
            .get("/logs?entity_type=token&entity_id=*")
            .await
            .json()
            .await
            .unwrap();
        let searches: Vec<&Value> = log["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["operation"] == "search")
            .collect();
        assert_eq!(searches.len(), 1, "{log}");
        assert!(
            !log.to_string().contains(&guess),
            "the query is never logged"
        );
        let page = search(&masked, "data:6789").await;
        assert_eq!(ids(&page), [id(&mine)]);
        assert_eq!(page["pagination"]["total_items"], 1);
        assert_eq!(
            page["data"][0]["data"], "XXX-XX-6789",
            "the search transform: mask"
        );
        assert!(page["data"][0].get("fingerprint").is_none());
        assert_eq!(search(&masked, "").await["pagination"]["total_items"], 1);
        // Searching by fingerprint needs every searchable token revealed: compared with the
        // fingerprint a create answers for a guess, a match would confirm the guess.
        let fp = "fingerprint:abc";
        assert_problem(
            masked.post("/tokens/search", &json!({"query": fp})).await,
            403,
        )
        .await;
        let nested = "data:1 OR NOT (type:token AND fingerprint:abc)";
        assert_problem(
            masked
                .post("/tokens/search", &json!({"query": nested}))
                .await,
            403,
        )
        .await;
        assert_eq!(search(&owner, fp).await["pagination"]["total_items"], 0);
        // token:read alone does not admit a search; nor does a management key.
        let reader = with(app, &["token:read"], json!([])).await;
        assert_problem(
            reader.post("/tokens/search", &json!({"query": ""})).await,
            403,
        )
        .await;
        // Changing a token's indexes needs a reveal read: an index chosen by a caller who sees
        // only the mask would tell it the value piece by piece.
        let updater = with(
            app,
            &[],
            json!([rule(
                1,
                "/pii/",
                "mask",
                &["token:update", "token:read", "token:search"]
            )]),
        )
        .await;
        let res = updater
            .patch(
                &format!("/tokens/{}", id(&mine)),
                &json!({"search_indexes": ["{{ data | slice: 0, 1 }}"]}),
            )
            .await;
        assert_problem(res, 403).await;
    })
    .await;
}

#[tokio::test]
async fn bad_queries_and_indexes_are_named() {
    on_each_backend(async |app: &TestApp| {
        let c = full(app).await;
        for q in [
            "data:",
            "(data:1",
            "unknown:1",
            "created_at:yesterday",
            "type:gold",
            "created_by:not-a-uuid",
            "data:1 and data:2",
            "a:1 a:2",
        ] {
            let body = assert_invalid(
                c.post("/tokens/search", &json!({"query": q})).await,
                &["query"],
            )
            .await;
            let message = body["errors"]["query"][0].as_str().unwrap();
            assert!(message.starts_with("at position "), "{q}: {message}");
        }
        let eleven = ["data:x"; 11].join(" OR ");
        let body = assert_invalid(
            c.post("/tokens/search", &json!({"query": eleven})).await,
            &["query"],
        )
        .await;
        assert!(body.to_string().contains("10 terms"), "{body}");
        // A value is never echoed in an error.
        let secret = unique("secret");
        let body = assert_invalid(
            c.post(
                "/tokens/search",
                &json!({"query": format!("data:\"{secret}")}),
            )
            .await,
            &["query"],
        )
        .await;
        assert!(!body.to_string().contains(&secret));
        assert_invalid(
            c.post("/tokens/search", &json!({"query": "", "size": 0}))
                .await,
            &["size"],
        )
        .await;
        assert_invalid(
            c.post("/tokens/search", &json!({"query": 7})).await,
            &["query"],
        )
        .await;
        // Indexes: at most 10, each one non-empty value of at most 1024 characters.
        let token =
            |indexes: Value| json!({"type": "token", "data": "abc", "search_indexes": indexes});
        assert_invalid(
            c.post("/tokens", &token(json!(vec!["{{ data }}"; 11])))
                .await,
            &["search_indexes"],
        )
        .await;
        assert_invalid(
            c.post("/tokens", &token(json!(["{{ data.missing }}"])))
                .await,
            &["search_indexes.0"],
        )
        .await;
        assert_invalid(
            c.post(
                "/tokens",
                &token(json!(["{{ data }}", "{{ data | pad_left: 2000, 'x' }}"])),
            )
            .await,
            &["search_indexes.1"],
        )
        .await;
        assert_invalid(
            c.post("/tokens", &token(json!(["{{ data"]))).await,
            &["search_indexes.0"],
        )
        .await;
        assert_invalid(
            c.post("/tokens", &token(json!("{{ data }}"))).await,
            &["search_indexes"],
        )
        .await;
        // Nothing of a refused create was stored.
        assert_eq!(search(&c, "").await["pagination"]["total_items"], 0);
    })
    .await;
}

/// Index values are stored as keyed hashes only: the database holds no index value in clear.
#[tokio::test]
async fn index_values_never_reach_storage_in_clear() {
    on_each_backend(async |app| {
        let c = full(app).await;
        let value = unique("needle");
        c.create(&json!({"type": "token", "data": {"v": value},
                         "search_indexes": ["{{ data.v }}", "{{ data.v | upcase }}"]}))
            .await;
        assert_eq!(
            search(&c, &format!("data:{value}")).await["pagination"]["total_items"],
            1
        );
        let dump = app.dump_database().await;
        let lower = String::from_utf8_lossy(&dump).to_lowercase();
        assert!(
            !lower.contains(&value.to_lowercase()),
            "an index value in clear"
        );
    })
    .await;
}

/// A page of `query`'s matches, `size` at a time.
async fn search_page(c: &Client<'_>, query: &str, page: u64, size: u64) -> Value {
    let body = json!({ "query": query, "page": page, "size": size });
    let res = c.post("/tokens/search", &body).await;
    assert_eq!(res.status(), 200, "search {query}");
    res.json().await.unwrap()
}

/// From a key's second search on, PostgreSQL reads the matches with the key (one statement)
/// and the caller's visibility is applied to them in the use case; beyond 100 matches the
/// store searches again. Every page must answer as the first search did, on both databases.
#[tokio::test]
async fn a_search_read_with_its_key_answers_as_any_search() {
    on_each_backend(async |app| {
        let owner = full(app).await;
        let batch = unique("batch");
        let mut visible = Vec::new();
        for (i, container) in ["/pii/", "/secret/", "/pii/", "/secret/", "/pii/"]
            .into_iter()
            .enumerate()
        {
            let t = owner
                .create(&json!({"type": "token", "data": format!("v{i}"),
                                "containers": [container], "metadata": {"batch": batch}}))
                .await;
            if container == "/pii/" {
                visible.insert(0, id(&t));
            }
        }
        let reader = with(
            app,
            &[],
            json!([rule(1, "/pii/", "reveal", &["token:search"])]),
        )
        .await;
        let q = format!("metadata.batch:{batch}");
        for round in 0..3 {
            let first = search_page(&reader, &q, 1, 2).await;
            assert_eq!(first["pagination"]["total_items"], 3, "round {round}");
            assert_eq!(ids(&first), visible[..2], "round {round}");
            let second = search_page(&reader, &q, 2, 2).await;
            assert_eq!(ids(&second), visible[2..], "round {round}");
            let past = search_page(&reader, &q, 3, 2).await;
            assert!(ids(&past).is_empty(), "round {round}");
            assert_eq!(past["pagination"]["total_items"], 3, "round {round}");
        }
        // Another tenant's key searching the same value finds nothing of this one.
        let (_, management) = app.new_tenant(&unique("stranger")).await;
        let created: Value = app
            .request_as(Some(&management), reqwest::Method::POST, "/applications")
            .json(
                &json!({"name": "s", "type": "private", "permissions": ["token:search"],
                          "rules": [rule(1, "/", "reveal", &["token:search"])]}),
            )
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let theirs = Client {
            app,
            key: created["key"].as_str().unwrap().to_string(),
        };
        for _ in 0..2 {
            assert!(ids(&search(&theirs, &q).await).is_empty());
        }
        // More matches than are read with a key: the same answer, from the store.
        let many = unique("many");
        for i in 0..101 {
            owner
                .create(&json!({"type": "token", "data": format!("m{i}"),
                                "containers": ["/pii/"], "metadata": {"batch": many}}))
                .await;
        }
        let q = format!("metadata.batch:{many}");
        for _ in 0..2 {
            let page = search_page(&reader, &q, 6, 20).await;
            assert_eq!(page["pagination"]["total_items"], 101);
            assert_eq!(ids(&page).len(), 1);
        }
    })
    .await;
}
