//! [`FormulaRepository`] and [`ReactorRepository`] on SeaORM. Declarations and configuration
//! are stored as JSON text; every query is confined to one tenant.

use std::sync::Arc;

use async_trait::async_trait;
use sea_orm::sea_query::{Expr, Query};
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter,
    SelectExt, SqlErr,
};
use tokenvault_domain::RepoError;
use tokenvault_domain::formula::Formula;
use tokenvault_domain::page::{Page, PageRequest};
use tokenvault_domain::ports::{FormulaDelete, FormulaRepository, ReactorRepository};
use tokenvault_domain::reactor::Reactor;
use uuid::Uuid;

use crate::backend::{Backend, ReactorReads};
use crate::engine::Database;
use crate::entity::{application, formula, reactor};
use crate::one_of_tenant::one_of_tenant;
use crate::paging::newest_first;
use crate::repo_error::{repo_err, sql_err};
use crate::rows::reactor::{
    configuration_json, formula_to_active, formula_to_domain, parameters_json, reactor_to_active,
    reactor_to_domain, values_json,
};
use crate::search::list_condition;
use crate::stamp::stamp;

/// The reads of `db`'s engine.
fn reads_of(db: &Database) -> Arc<dyn ReactorReads> {
    db.backend().reactors(db.connection())
}

/// Reactor formulas in the `reactor_formulas` table.
#[derive(Clone, Debug)]
pub struct SeaOrmFormulaRepository {
    db: DatabaseConnection,
    /// The database's own reads.
    reads: Arc<dyn ReactorReads>,
    /// Told of every change (`Backend::keys_changed`: a database may keep what a react reads).
    backend: Arc<dyn Backend>,
}

impl SeaOrmFormulaRepository {
    /// A repository over `db` (migrated).
    pub fn new(db: Database) -> Self {
        Self {
            reads: reads_of(&db),
            backend: db.backend().clone(),
            db: db.connection().clone(),
        }
    }
}

/// Reactors in the `reactors` table.
#[derive(Clone, Debug)]
pub struct SeaOrmReactorRepository {
    db: DatabaseConnection,
    /// The database's own reads.
    reads: Arc<dyn ReactorReads>,
    /// Told of every change (`Backend::keys_changed`: a database may keep what a react reads).
    backend: Arc<dyn Backend>,
}

impl SeaOrmReactorRepository {
    /// A repository over `db` (migrated).
    pub fn new(db: Database) -> Self {
        Self {
            reads: reads_of(&db),
            backend: db.backend().clone(),
            db: db.connection().clone(),
        }
    }
}

/// The formula `id` of `tenant_id` through SeaORM on `db`.
pub async fn formula_by_id(
    db: &impl ConnectionTrait,
    tenant_id: Uuid,
    id: Uuid,
) -> Result<Option<Formula>, RepoError> {
    let columns = (formula::Column::TenantId, formula::Column::Id);
    one_of_tenant::<formula::Entity, _>(db, columns, tenant_id, id, formula_to_domain).await
}

/// The reactor `id` of `tenant_id` through SeaORM on `db`.
pub async fn reactor_by_id(
    db: &impl ConnectionTrait,
    tenant_id: Uuid,
    id: Uuid,
) -> Result<Option<Reactor>, RepoError> {
    let columns = (reactor::Column::TenantId, reactor::Column::Id);
    one_of_tenant::<reactor::Entity, _>(db, columns, tenant_id, id, reactor_to_domain).await
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
        self.reads.formula(tenant_id, id).await
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
        let result = update.exec(&self.db).await;
        // Committed or not (an error may come after the commit), it may have changed.
        self.backend.keys_changed();
        Ok(result.map_err(repo_err)?.rows_affected > 0)
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
        self.backend.keys_changed();
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
        self.reads.reactor(tenant_id, id).await
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
            .await;
        self.backend.keys_changed();
        Ok(result.map_err(repo_err)?.rows_affected > 0)
    }

    async fn delete(&self, tenant_id: Uuid, id: Uuid) -> Result<bool, RepoError> {
        let result = reactor::Entity::delete_many()
            .filter(reactor::Column::TenantId.eq(tenant_id))
            .filter(reactor::Column::Id.eq(id))
            .exec(&self.db)
            .await;
        self.backend.keys_changed();
        Ok(result.map_err(repo_err)?.rows_affected > 0)
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
