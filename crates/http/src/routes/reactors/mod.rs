//! `/reactor-formulas` and `/reactors`, with `POST /reactors/{id}/react`: the formulas
//! (`formulas.rs`), the reactors made of them (`manage.rs`) and their invocation (`react.rs`).

use actix_web::web;

use crate::idempotency::NeverReplayed;
use crate::problem::ApiError;

pub(crate) mod dry_run;
pub(crate) mod formulas;
pub(crate) mod manage;
pub(crate) mod react;

pub use dry_run::{ConsoleLineResponse, DryRunBody, DryRunError, DryRunResponse, dry_run};
pub use formulas::{
    Declaration, FormulaRequest, FormulaResponse, create_formula, delete_formula, get_formula,
    list_formulas, update_formula,
};
pub use manage::{IdRef, ReactorRequest, ReactorResponse, create, delete, get, list, update};
pub use react::{ReactResponse, react};

type Result<T> = std::result::Result<T, ApiError>;

/// Registers the routes, a scope per resource (the router tries the patterns of one only).
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/reactor-formulas")
            .service(
                resource!("/reactor-formulas", "")
                    .route(web::post().to(create_formula))
                    .route(web::get().to(list_formulas)),
            )
            .service(
                resource!("/reactor-formulas", "/dry-run")
                    .app_data(NeverReplayed)
                    .route(web::post().to(dry_run)),
            )
            .service(
                resource!("/reactor-formulas", "/{id}")
                    .route(web::get().to(get_formula))
                    .route(web::put().to(update_formula))
                    .route(web::delete().to(delete_formula)),
            ),
    )
    .service(
        web::scope("/reactors")
            .service(
                resource!("/reactors", "")
                    .route(web::post().to(create))
                    .route(web::get().to(list)),
            )
            .service(
                resource!("/reactors", "/{id}/react")
                    .app_data(NeverReplayed)
                    .route(web::post().to(react)),
            )
            .service(
                resource!("/reactors", "/{id}")
                    .route(web::get().to(get))
                    .route(web::put().to(update))
                    .route(web::delete().to(delete)),
            ),
    );
}
