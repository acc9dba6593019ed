//! [`FormulaRepository`] and [`ReactorRepository`] on SeaORM. Declarations and configuration
//! are stored as JSON text; every query is confined to one tenant.

use std::sync::{Arc, LazyLock};

use async_trait::async_trait;
use sea_orm::sea_query::{Expr, Query};
use sea_orm::{
    ColumnTrait, Condition, DatabaseConnection, EntityTrait, QueryFilter, SelectExt, SqlErr,
};
use tokenvault_domain::RepoError;
use tokenvault_domain::formula::Formula;
use tokenvault_domain::page::{Page, PageRequest};
use tokenvault_domain::ports::{FormulaDelete, FormulaRepository, ReactorRepository};
use tokenvault_domain::reactor::Reactor;
use uuid::Uuid;

use crate::engine::Database;
use crate::entity::{application, formula, reactor};
use crate::paging::newest_first;
use crate::reads::Reads;
use crate::repo_error::{repo_err, sql_err};
use crate::rows::reactor::{
    configuration_json, formula_to_active, formula_to_domain, parameters_json, reactor_to_active,
    reactor_to_domain, values_json,
};
use crate::rows::{self, columns};
use crate::search::list_condition;
use crate::sqlite::direct::DirectReads;
use crate::stamp::stamp;

/// Reactor formulas in the `reactor_formulas` table.
#[derive(Clone, Debug)]
pub struct SeaOrmFormulaRepository {
    db: DatabaseConnection,
    /// SQLite's point reads on the calling thread (`sqlite/direct.rs`); `None` on PostgreSQL.
    direct: Option<Arc<DirectReads>>,
    /// Point reads (`reads.rs`: on PostgreSQL the adapter's own connections).
    reads: Reads,
}

impl SeaOrmFormulaRepository {
    /// A repository over `db` (migrated).
    pub fn new(db: Database) -> Self {
        Self {
            direct: db.sqlite(),
            reads: db.reads(),
            db: db.connection().clone(),
        }
    }
}

/// Reactors in the `reactors` table.
#[derive(Clone, Debug)]
pub struct SeaOrmReactorRepository {
    db: DatabaseConnection,
    /// SQLite's point reads on the calling thread (`sqlite/direct.rs`); `None` on PostgreSQL.
    direct: Option<Arc<DirectReads>>,
    /// Point reads (`reads.rs`: on PostgreSQL the adapter's own connections).
    reads: Reads,
}

impl SeaOrmReactorRepository {
    /// A repository over `db` (migrated).
    pub fn new(db: Database) -> Self {
        Self {
            direct: db.sqlite(),
            reads: db.reads(),
            db: db.connection().clone(),
        }
    }
}

/// The primary key `(tenant_id, id)` as sqlx stores it on SQLite (16-byte blobs).
fn key_params(tenant_id: Uuid, id: Uuid) -> [Vec<u8>; 2] {
    [tenant_id.as_bytes().to_vec(), id.as_bytes().to_vec()]
}

static FORMULA_BY_ID: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {} FROM reactor_formulas WHERE tenant_id = ?1 AND id = ?2",
        columns::<formula::Column>(None, &[])
    )
});

static REACTOR_BY_ID: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {} FROM reactors WHERE tenant_id = ?1 AND id = ?2",
        columns::<reactor::Column>(None, &[])
    )
});

/// The formula `id` of `tenant_id`: on the calling thread where SQLite's file allows.
pub(crate) async fn formula_by_id(
    direct: Option<&DirectReads>,
    reads: &Reads,
    tenant_id: Uuid,
    id: Uuid,
) -> Result<Option<Formula>, RepoError> {
    if let Some(found) = direct.and_then(|d| {
        d.one(FORMULA_BY_ID.as_str(), key_params(tenant_id, id), |row| {
            rows::whole(row, rows::reactor::formula_from_sqlite)
        })
    }) {
        return found?.map(formula_to_domain).transpose();
    }
    formula::Entity::find()
        .filter(formula::Column::TenantId.eq(tenant_id))
        .filter(formula::Column::Id.eq(id))
        .one(reads)
        .await
        .map_err(repo_err)?
        .map(formula_to_domain)
        .transpose()
}

/// The reactor `id` of `tenant_id`: on the calling thread where SQLite's file allows.
pub(crate) async fn reactor_by_id(
    direct: Option<&DirectReads>,
    reads: &Reads,
    tenant_id: Uuid,
    id: Uuid,
) -> Result<Option<Reactor>, RepoError> {
    if let Some(found) = direct.and_then(|d| {
        d.one(REACTOR_BY_ID.as_str(), key_params(tenant_id, id), |row| {
            rows::whole(row, rows::reactor::reactor_from_sqlite)
        })
    }) {
        return found?.map(reactor_to_domain).transpose();
    }
    reactor::Entity::find()
        .filter(reactor::Column::TenantId.eq(tenant_id))
        .filter(reactor::Column::Id.eq(id))
        .one(reads)
        .await
        .map_err(repo_err)?
        .map(reactor_to_domain)
        .transpose()
}

#[async_trait]
impl FormulaRepository for SeaOrmFormulaRepository {
    async fn insert(&self, formula: &Formula) -> Result<(), RepoError> {
        formula::Entity::insert(formula_to_active(formula))
            .exec_without_returning(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(())
    }

    async fn get(&self, tenant_id: Uuid, id: Uuid) -> Result<Option<Formula>, RepoError> {
        formula_by_id(self.direct.as_deref(), &self.reads, tenant_id, id).await
    }

    async fn get_many(&self, tenant_id: Uuid, ids: &[Uuid]) -> Result<Vec<Formula>, RepoError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        formula::Entity::find()
            .filter(formula::Column::TenantId.eq(tenant_id))
            .filter(formula::Column::Id.is_in(ids.iter().copied()))
            .all(&self.db)
            .await
            .map_err(repo_err)?
            .into_iter()
            .map(formula_to_domain)
            .collect()
    }

    async fn list(
        &self,
        tenant_id: Uuid,
        ids: &[Uuid],
        name: Option<&str>,
        page: PageRequest,
    ) -> Result<Page<Formula>, RepoError> {
        let query = formula::Entity::find().filter(list_condition(
            (
                formula::Column::TenantId,
                formula::Column::Id,
                formula::Column::Name,
            ),
            tenant_id,
            ids,
            name,
        ));
        newest_first(
            &self.db,
            query,
            (formula::Column::CreatedAt, formula::Column::Id),
            page,
            formula_to_domain,
        )
        .await
    }

    async fn update(&self, formula: &Formula, unless_lent: bool) -> Result<bool, RepoError> {
        let mut update = formula::Entity::update_many()
            .col_expr(formula::Column::Name, Expr::value(formula.name.clone()))
            .col_expr(
                formula::Column::Description,
                Expr::value(formula.description.clone()),
            )
            .col_expr(
                formula::Column::FormulaType,
                Expr::value(formula.formula_type.clone()),
            )
            .col_expr(formula::Column::Code, Expr::value(formula.code.clone()))
            .col_expr(
                formula::Column::Configuration,
                Expr::value(configuration_json(&formula.configuration)),
            )
            .col_expr(
                formula::Column::RequestParameters,
                Expr::value(parameters_json(&formula.request_parameters)),
            )
            .col_expr(
                formula::Column::ModifiedBy,
                Expr::value(formula.modified_by),
            )
            .col_expr(
                formula::Column::ModifiedAt,
                Expr::value(formula.modified_at.map(stamp)),
            )
            .col_expr(
                formula::Column::Status,
                Expr::value(formula.status.map(|s| s.as_str().to_string())),
            )
            .filter(formula::Column::TenantId.eq(formula.tenant_id))
            .filter(formula::Column::Id.eq(formula.id));
        if unless_lent {
            // In the same statement as the write: an application attached to a reactor of this
            // formula, or code changed by someone else, after the caller's read still stops
            // code the caller may not lend.
            let lent = Query::select()
                .expr(Expr::val(1))
                .from(reactor::Entity)
                .and_where(reactor::Column::TenantId.eq(formula.tenant_id))
                .and_where(reactor::Column::FormulaId.eq(formula.id))
                .and_where(
                    reactor::Column::ApplicationId.in_subquery(applications_of(formula.tenant_id)),
                )
                .to_owned();
            // The stored code may be the new code (a rename): that lends nothing new.
            update = update.filter(
                Condition::any()
                    .add(formula::Column::Code.eq(formula.code.clone()))
                    .add(sea_orm::sea_query::ExprTrait::not(Expr::exists(lent))),
            );
        }
        let result = update.exec(&self.db).await.map_err(repo_err)?;
        Ok(result.rows_affected > 0)
    }

    async fn lent(&self, tenant_id: Uuid, id: Uuid) -> Result<bool, RepoError> {
        reactor::Entity::find()
            .filter(reactor::Column::TenantId.eq(tenant_id))
            .filter(reactor::Column::FormulaId.eq(id))
            .filter(reactor::Column::ApplicationId.in_subquery(applications_of(tenant_id)))
            .exists(&self.db)
            .await
            .map_err(repo_err)
    }

    async fn delete(&self, tenant_id: Uuid, id: Uuid) -> Result<FormulaDelete, RepoError> {
        let in_use = reactor::Entity::find()
            .filter(reactor::Column::TenantId.eq(tenant_id))
            .filter(reactor::Column::FormulaId.eq(id))
            .exists(&self.db)
            .await
            .map_err(repo_err)?;
        if in_use {
            return Ok(FormulaDelete::InUse);
        }
        // A reactor created since the check still keeps the formula: the foreign key refuses.
        let result = formula::Entity::delete_many()
            .filter(formula::Column::TenantId.eq(tenant_id))
            .filter(formula::Column::Id.eq(id))
            .exec(&self.db)
            .await;
        match result {
            Ok(r) if r.rows_affected > 0 => Ok(FormulaDelete::Deleted),
            Ok(_) => Ok(FormulaDelete::Missing),
            Err(e) if matches!(sql_err(&e), Some(SqlErr::ForeignKeyConstraintViolation(_))) => {
                Ok(FormulaDelete::InUse)
            }
            Err(e) => Err(repo_err(e)),
        }
    }
}

#[async_trait]
impl ReactorRepository for SeaOrmReactorRepository {
    async fn insert(&self, reactor: &Reactor) -> Result<(), RepoError> {
        reactor::Entity::insert(reactor_to_active(reactor))
            .exec_without_returning(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(())
    }

    async fn get(&self, tenant_id: Uuid, id: Uuid) -> Result<Option<Reactor>, RepoError> {
        reactor_by_id(self.direct.as_deref(), &self.reads, tenant_id, id).await
    }

    async fn list(
        &self,
        tenant_id: Uuid,
        ids: &[Uuid],
        name: Option<&str>,
        page: PageRequest,
    ) -> Result<Page<Reactor>, RepoError> {
        let query = reactor::Entity::find().filter(list_condition(
            (
                reactor::Column::TenantId,
                reactor::Column::Id,
                reactor::Column::Name,
            ),
            tenant_id,
            ids,
            name,
        ));
        newest_first(
            &self.db,
            query,
            (reactor::Column::CreatedAt, reactor::Column::Id),
            page,
            reactor_to_domain,
        )
        .await
    }

    async fn update(&self, reactor: &Reactor) -> Result<bool, RepoError> {
        let result = reactor::Entity::update_many()
            .col_expr(reactor::Column::Name, Expr::value(reactor.name.clone()))
            .col_expr(
                reactor::Column::Configuration,
                Expr::value(values_json(&reactor.configuration)),
            )
            .col_expr(
                reactor::Column::ApplicationId,
                Expr::value(reactor.application_id),
            )
            .col_expr(
                reactor::Column::ModifiedBy,
                Expr::value(reactor.modified_by),
            )
            .col_expr(
                reactor::Column::ModifiedAt,
                Expr::value(reactor.modified_at.map(stamp)),
            )
            .filter(reactor::Column::TenantId.eq(reactor.tenant_id))
            .filter(reactor::Column::Id.eq(reactor.id))
            .exec(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(result.rows_affected > 0)
    }

    async fn delete(&self, tenant_id: Uuid, id: Uuid) -> Result<bool, RepoError> {
        let result = reactor::Entity::delete_many()
            .filter(reactor::Column::TenantId.eq(tenant_id))
            .filter(reactor::Column::Id.eq(id))
            .exec(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(result.rows_affected > 0)
    }
}

/// The ids of the tenant's applications: a reactor whose application was deleted since lends
/// nothing (it reads as none).
fn applications_of(tenant_id: Uuid) -> sea_orm::sea_query::SelectStatement {
    Query::select()
        .column(application::Column::Id)
        .from(application::Entity)
        .and_where(application::Column::TenantId.eq(tenant_id))
        .to_owned()
}
