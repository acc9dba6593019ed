//! `/console`: the management console, a page and its scripts embedded in the binary at build
//! time (`crates/http/console/`; no toolchain builds them, no CDN serves them). It calls the
//! API with the key its user pastes, like any client; this module only serves the files, each
//! under a Content-Security-Policy that admits the console's own scripts and styles alone (no
//! inline script, no `eval`) and no framing (docs/console.md).

use actix_web::http::header;
use actix_web::{HttpResponse, web};

/// What every console response carries.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// One embedded file.
struct Asset {
    path: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

macro_rules! asset {
    ($path:literal, $type:expr) => {
        Asset {
            path: $path,
            content_type: $type,
            body: include_bytes!(concat!("../console/", $path)),
        }
    };
}

const HTML: &str = "text/html; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";

/// Every file the console has.
const ASSETS: &[Asset] = &[
    asset!("index.html", HTML),
    asset!("console.css", "text/css; charset=utf-8"),
    asset!("js/api.js", JS),
    asset!("js/app.js", JS),
    asset!("js/applications.js", JS),
    asset!("js/dom.js", JS),
    asset!("js/editor.js", JS),
    asset!("js/logs.js", JS),
    asset!("js/paging.js", JS),
    asset!("js/proxies.js", JS),
    asset!("js/reactors.js", JS),
    asset!("js/tenant.js", JS),
    asset!("js/tokens.js", JS),
    asset!("js/usage.js", JS),
];

fn secured(mut response: actix_web::HttpResponseBuilder) -> actix_web::HttpResponseBuilder {
    response
        .insert_header((header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header(("Cross-Origin-Opener-Policy", "same-origin"));
    response
}

fn serve(path: &str) -> HttpResponse {
    match ASSETS.iter().find(|a| a.path == path) {
        Some(asset) => secured(HttpResponse::Ok())
            .content_type(asset.content_type)
            .body(asset.body),
        None => secured(HttpResponse::NotFound())
            .content_type("text/plain; charset=utf-8")
            .body("not found"),
    }
}

async fn index() -> HttpResponse {
    serve("index.html")
}

async fn file(path: web::Path<String>) -> HttpResponse {
    serve(&path)
}

/// Registers `/console` and its files.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/console")
            .app_data(crate::metrics::RouteLabel("/console"))
            .route(web::get().to(index)),
    )
    .service(
        web::resource("/console/{path:.*}")
            .app_data(crate::metrics::RouteLabel("/console/{path}"))
            .route(web::get().to(file)),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_of_the_console_folder_is_served_and_nothing_else_is_named() {
        let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("console");
        let mut on_disk = Vec::new();
        let mut stack = vec![folder.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    let name = path.strip_prefix(&folder).unwrap().to_string_lossy();
                    on_disk.push(name.replace('\\', "/"));
                }
            }
        }
        on_disk.sort();
        let mut served: Vec<String> = ASSETS.iter().map(|a| a.path.to_string()).collect();
        served.sort();
        served.dedup();
        assert_eq!(served, on_disk, "ASSETS lists the console folder's files");
        for asset in ASSETS {
            let text = std::str::from_utf8(asset.body).unwrap();
            for sink in [
                "innerHTML",
                "outerHTML",
                "insertAdjacentHTML",
                "document.write",
                "eval(",
                "Function(",
                "javascript:",
                "localStorage",
                "document.cookie",
            ] {
                assert!(!text.contains(sink), "{} uses {sink}", asset.path);
            }
            let extension = std::path::Path::new(asset.path)
                .extension()
                .and_then(|e| e.to_str());
            let expected = match extension {
                Some("js") => JS,
                Some("html") => HTML,
                _ => "text/css; charset=utf-8",
            };
            assert_eq!(asset.content_type, expected, "{}", asset.path);
        }
    }
}
