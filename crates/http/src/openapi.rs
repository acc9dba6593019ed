//! The OpenAPI document, generated from the handlers and DTOs (utoipa). Committed at
//! `docs/openapi.json`; a test fails when that copy is stale (`cargo xtask openapi` rewrites it).

use actix_web::HttpResponse;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::dto;
use crate::metrics;
use crate::problem::Problem;
use crate::routes::{
    applications, logs, meta, permissions, proxies, reactors, sessions, tenants, token_search,
    tokens,
};

struct ApiKeyHeader;

impl Modify for ApiKeyHeader {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("SVC-API-KEY"))),
        );
    }
}

/// The API description.
#[derive(OpenApi)]
#[openapi(
    info(title = "TokenVault", description = "Self-hostable data-tokenization vault."),
    paths(
        applications::create, applications::list, applications::get, applications::by_key,
        applications::update, applications::regenerate, applications::delete,
        tenants::get, tenants::update, tenants::delete, tenants::usage,
        tokens::create, tokens::list, tokens::get, tokens::update, tokens::delete,
        tokens::tokenize, tokens::detokenize, tokens::associate, tokens::dissociate,
        tokens::create_child, tokens::children, token_search::search,
        reactors::formulas::create_formula, reactors::formulas::list_formulas,
        reactors::formulas::get_formula, reactors::formulas::update_formula,
        reactors::formulas::delete_formula,
        reactors::manage::create, reactors::manage::list, reactors::manage::get,
        reactors::manage::update, reactors::manage::delete,
        reactors::react::react, reactors::dry_run::dry_run,
        proxies::create, proxies::list, proxies::get, proxies::update, proxies::delete,
        proxies::invoke,
        sessions::create, sessions::authorize,
        logs::list, logs::entity_types, logs::verify, permissions::list,
        meta::health, openapi, metrics::metrics, crate::ready::ready,
    ),
    components(schemas(Problem, dto::Pagination, dto::RuleRequest, dto::RuleResponse)),
    modifiers(&ApiKeyHeader),
)]
pub struct ApiDoc;

/// The document as pretty JSON with a trailing newline (the committed form).
pub fn document() -> String {
    let mut json = ApiDoc::openapi()
        .to_pretty_json()
        .unwrap_or_else(|_| "{}".into());
    json.push('\n');
    json
}

/// This API's OpenAPI document.
#[utoipa::path(get, path = "/openapi.json", tag = "meta", responses((status = 200, description = "OpenAPI 3.1 document")))]
pub async fn openapi() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(document())
}

#[cfg(test)]
mod tests {
    #[test]
    fn committed_document_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/openapi.json");
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            committed == super::document(),
            "docs/openapi.json is stale: run `cargo xtask openapi`"
        );
    }
}
