//! [`SessionRepository`] on SeaORM, in the `sessions` table. Authorization is one conditional
//! `UPDATE` that consumes the nonce: the row it matches can be changed once, so concurrent
//! callers with one nonce see one success without a transaction. A session is found by its key
//! in one query that brings its authorizer and its tenant along.

use async_trait::async_trait;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, QuerySelect,
};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::application::KeyHash;
use tokenvault_domain::ports::{AuthorizedSession, SessionRepository};
use tokenvault_domain::session::{Session, SessionGrant};
use uuid::Uuid;

use crate::engine::Database;
use crate::entity::session::{self, Column, Entity};
use crate::entity::{application, tenant};
use crate::grants;
use crate::repo_error::repo_err;
use crate::rows::application::hash_hex;
use crate::stamp::{stamp, unstamp};

/// Sessions in the `sessions` table.
#[derive(Clone, Debug)]
pub struct SeaOrmSessionRepository {
    db: DatabaseConnection,
}

impl SeaOrmSessionRepository {
    /// A repository over `db` (migrated).
    pub fn new(db: Database) -> Self {
        Self {
            db: db.connection().clone(),
        }
    }
}

fn corrupt(what: &str, id: Uuid) -> RepoError {
    RepoError::Backend(format!("stored {what} of session {id} is unreadable").into())
}

fn to_domain(model: session::Model) -> Result<Session, RepoError> {
    let id = model.id;
    let bad = |what: &str| corrupt(what, id);
    let permissions = grants::parse_permissions(&model.permissions, &bad)?;
    let rules = grants::parse_rules(&model.rules, &bad)?;
    Ok(Session {
        id,
        tenant_id: model.tenant_id,
        created_by: model.created_by,
        authorized_by: model.authorized_by,
        permissions,
        rules,
        created_at: unstamp(model.created_at),
        expires_at: unstamp(model.expires_at),
    })
}

#[async_trait]
impl SessionRepository for SeaOrmSessionRepository {
    async fn insert(
        &self,
        session: &Session,
        key_hash: &KeyHash,
        nonce_hash: &KeyHash,
    ) -> Result<(), RepoError> {
        let row = session::ActiveModel {
            id: Set(session.id),
            tenant_id: Set(session.tenant_id),
            created_by: Set(session.created_by),
            authorized_by: Set(session.authorized_by),
            key_hash: Set(hash_hex(key_hash)),
            nonce_hash: Set(Some(hash_hex(nonce_hash))),
            permissions: Set(grants::permissions_json(&session.permissions)),
            rules: Set(grants::rules_json(&session.rules)),
            created_at: Set(stamp(session.created_at)),
            expires_at: Set(stamp(session.expires_at)),
        };
        Entity::insert(row)
            .exec_without_returning(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(())
    }

    async fn authorize(
        &self,
        tenant_id: Uuid,
        nonce_hash: &KeyHash,
        authorized_by: Uuid,
        grant: &SessionGrant,
        now: OffsetDateTime,
    ) -> Result<Option<Uuid>, RepoError> {
        // The id first (to name the session in the audit log); the conditional update below
        // decides, so a concurrent authorization still sees one winner.
        let Some(id) = Entity::find()
            .select_only()
            .column(Column::Id)
            .filter(Column::TenantId.eq(tenant_id))
            .filter(Column::NonceHash.eq(hash_hex(nonce_hash)))
            .into_tuple::<Uuid>()
            .one(&self.db)
            .await
            .map_err(repo_err)?
        else {
            return Ok(None);
        };
        let mut update = Entity::update_many()
            .col_expr(Column::AuthorizedBy, Expr::value(Some(authorized_by)))
            .col_expr(Column::NonceHash, Expr::value(Option::<String>::None))
            .col_expr(
                Column::Permissions,
                Expr::value(grants::permissions_json(&grant.permissions)),
            )
            .col_expr(Column::Rules, Expr::value(grants::rules_json(&grant.rules)));
        if let Some(expires_at) = grant.expires_at {
            update = update.col_expr(Column::ExpiresAt, Expr::value(stamp(expires_at)));
        }
        let result = update
            .filter(Column::Id.eq(id))
            .filter(Column::TenantId.eq(tenant_id))
            .filter(Column::NonceHash.eq(hash_hex(nonce_hash)))
            .filter(Column::AuthorizedBy.is_null())
            .filter(Column::ExpiresAt.gt(stamp(now)))
            .exec(&self.db)
            .await
            .map_err(repo_err)?;
        Ok((result.rows_affected == 1).then_some(id))
    }

    async fn find_by_key_hash(
        &self,
        hash: &KeyHash,
        now: OffsetDateTime,
    ) -> Result<Option<AuthorizedSession>, RepoError> {
        let found = Entity::find()
            .find_also_related(application::Entity)
            .find_also_related(tenant::Entity)
            .filter(Column::KeyHash.eq(hash_hex(hash)))
            .filter(Column::AuthorizedBy.is_not_null())
            .filter(Column::ExpiresAt.gt(stamp(now)))
            .filter(tenant::Column::DeletedAt.is_null())
            .one(&self.db)
            .await
            .map_err(repo_err)?;
        match found {
            Some((session, Some(authorizer), Some(tenant))) => Ok(Some(AuthorizedSession {
                session: to_domain(session)?,
                authorizer: crate::rows::application::to_domain(authorizer)?,
                settings: crate::rows::tenant::to_domain(tenant).settings,
            })),
            _ => Ok(None),
        }
    }

    async fn delete_for_application(
        &self,
        tenant_id: Uuid,
        application_id: Uuid,
    ) -> Result<u64, RepoError> {
        let result = Entity::delete_many()
            .filter(Column::TenantId.eq(tenant_id))
            .filter(
                sea_orm::Condition::any()
                    .add(Column::CreatedBy.eq(application_id))
                    .add(Column::AuthorizedBy.eq(application_id)),
            )
            .exec(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(result.rows_affected)
    }

    async fn delete_expired(&self, now: OffsetDateTime) -> Result<u64, RepoError> {
        let result = Entity::delete_many()
            .filter(Column::ExpiresAt.lte(stamp(now)))
            .exec(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(result.rows_affected)
    }
}
