//! [`ApplicationRepository`] on SeaORM.

use std::sync::Arc;

use async_trait::async_trait;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, DatabaseConnection, EntityTrait, PaginatorTrait, QueryFilter,
    QueryOrder, QuerySelect,
};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::application::{Application, KeyHash};
use tokenvault_domain::page::{Page, PageRequest};
use tokenvault_domain::permission::ApplicationType;
use tokenvault_domain::ports::{ApplicationRepository, KeyedReactor, KeyedToken};
use tokenvault_domain::tenant::TenantSettings;
use uuid::Uuid;

use crate::direct::DirectReads;
use crate::entity::application::{self, Column, Entity};
use crate::reads::Reads;
use crate::stamp::{stamp, unstamp};
use crate::{grants, keyed_reactor, keyed_read, repo_err};

/// Applications in the `applications` table.
#[derive(Clone, Debug)]
pub struct SeaOrmApplicationRepository {
    db: DatabaseConnection,
    /// SQLite's point reads on the calling thread (`direct.rs`); `None` on PostgreSQL.
    direct: Option<Arc<DirectReads>>,
    /// Point reads (`reads.rs`: on PostgreSQL the adapter's own connections).
    reads: Reads,
}

impl SeaOrmApplicationRepository {
    /// A repository over `db` (migrated).
    pub fn new(db: DatabaseConnection) -> Self {
        Self {
            direct: DirectReads::for_connection(&db),
            reads: Reads::of(&db),
            db,
        }
    }
}

pub(crate) fn hash_hex(hash: &KeyHash) -> String {
    // By table, not `write!`: this runs on every authenticated request, and the formatting
    // machinery showed up in its profile (docs/performance.md).
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(2 * hash.0.len());
    for b in hash.0 {
        hex.push(char::from(DIGITS[usize::from(b >> 4)]));
        hex.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    hex
}

/// The inverse of [`hash_hex`]: `None` unless `text` is 64 hex digits.
pub(crate) fn hash_from_hex(text: &str) -> Option<KeyHash> {
    let bytes = text.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let digit = |b: u8| {
        char::from(b)
            .to_digit(16)
            .and_then(|d| u8::try_from(d).ok())
    };
    let mut out = [0u8; 32];
    for (byte, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
        *byte = (digit(pair[0])? << 4) | digit(pair[1])?;
    }
    Some(KeyHash(out))
}

fn corrupt(what: &str, id: Uuid) -> RepoError {
    RepoError::Backend(format!("stored {what} of application {id} is unreadable").into())
}

pub(crate) fn to_domain(model: application::Model) -> Result<Application, RepoError> {
    let id = model.id;
    let bad = |what: &str| corrupt(what, id);
    let permissions = grants::parse_permissions(&model.permissions, &bad)?;
    let rules = grants::parse_rules(&model.rules, &bad)?;
    Ok(Application {
        id,
        tenant_id: model.tenant_id,
        name: model.name,
        app_type: ApplicationType::parse(&model.app_type).ok_or_else(|| corrupt("type", id))?,
        permissions,
        rules,
        created_by: model.created_by,
        created_at: unstamp(model.created_at),
        modified_by: model.modified_by,
        modified_at: model.modified_at.map(unstamp),
        expires_at: model.expires_at.map(unstamp),
    })
}

pub(crate) fn to_active(app: &Application, key_hash: &KeyHash) -> application::ActiveModel {
    application::ActiveModel {
        id: Set(app.id),
        tenant_id: Set(app.tenant_id),
        name: Set(app.name.clone()),
        app_type: Set(app.app_type.as_str().to_string()),
        permissions: Set(grants::permissions_json(&app.permissions)),
        rules: Set(grants::rules_json(&app.rules)),
        key_hash: Set(hash_hex(key_hash)),
        created_by: Set(app.created_by),
        created_at: Set(stamp(app.created_at)),
        modified_by: Set(app.modified_by),
        modified_at: Set(app.modified_at.map(stamp)),
        expires_at: Set(app.expires_at.map(stamp)),
    }
}

#[async_trait]
impl ApplicationRepository for SeaOrmApplicationRepository {
    async fn insert(&self, application: &Application, key_hash: &KeyHash) -> Result<(), RepoError> {
        Entity::insert(to_active(application, key_hash))
            .exec_without_returning(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(())
    }

    async fn find_by_key_hash(
        &self,
        hash: &KeyHash,
    ) -> Result<Option<(Application, TenantSettings)>, RepoError> {
        if let Some(found) = self
            .direct
            .as_ref()
            .and_then(|d| d.application_by_key(&hash_hex(hash)))
        {
            return found;
        }
        let query = Entity::find()
            .filter(Column::KeyHash.eq(hash_hex(hash)))
            .find_also_related(crate::entity::tenant::Entity);
        let found = query.one(&self.reads).await.map_err(repo_err)?;
        match found {
            Some((app, Some(tenant))) => Ok(Some((
                to_domain(app)?,
                crate::tenants::to_domain(tenant).settings,
            ))),
            _ => Ok(None),
        }
    }

    async fn find_by_key_hash_with_token(
        &self,
        hash: &KeyHash,
        token_id: &str,
        now: OffsetDateTime,
    ) -> Result<Option<KeyedToken>, RepoError> {
        if let Some(pg) = self.reads.pg() {
            return keyed_read::key_and_token_postgres(pg, hash_hex(hash), token_id, now).await;
        }
        // SQLite: one statement on the calling thread when the file allows (`direct.rs`).
        if let Some(found) = self
            .direct
            .as_ref()
            .and_then(|d| d.key_and_token(&hash_hex(hash), token_id, now))
        {
            return Ok(found?.map(|(application, settings, token)| KeyedToken {
                application,
                settings,
                token,
            }));
        }
        // Else two point reads through SeaORM.
        let Some((application, settings)) = self.find_by_key_hash(hash).await? else {
            return Ok(None);
        };
        // Only a private application may read tokens (decisions §4): no other key makes the
        // server read one.
        let token = if application.app_type != ApplicationType::Private {
            None
        } else if let Some(found) = self
            .direct
            .as_ref()
            .and_then(|d| d.live_token(application.tenant_id, token_id, now))
        {
            found?
        } else {
            crate::tokens::live_token(&self.reads, application.tenant_id, token_id, now).await?
        };
        Ok(Some(KeyedToken {
            application,
            settings,
            token,
        }))
    }

    async fn find_by_key_hash_with_reactor(
        &self,
        hash: &KeyHash,
        reactor_id: Uuid,
    ) -> Result<Option<KeyedReactor>, RepoError> {
        if let Some(pg) = self.reads.pg() {
            return keyed_reactor::key_and_reactor_postgres(pg, hash_hex(hash), reactor_id).await;
        }
        // SQLite: point reads, on the calling thread when the file allows (`direct.rs`).
        let Some((application, settings)) = self.find_by_key_hash(hash).await? else {
            return Ok(None);
        };
        // Only a private application may use tokens (decisions §4): no other key makes the
        // server read a reactor.
        let reactor = if application.app_type == ApplicationType::Private {
            keyed_reactor::reactor_and_formula(
                self.direct.as_deref(),
                &self.reads,
                application.tenant_id,
                reactor_id,
            )
            .await?
        } else {
            None
        };
        Ok(Some(KeyedReactor {
            application,
            settings,
            reactor,
        }))
    }

    async fn get(&self, tenant_id: Uuid, id: Uuid) -> Result<Option<Application>, RepoError> {
        if let Some(found) = self
            .direct
            .as_ref()
            .and_then(|d| d.application(tenant_id, id))
        {
            return found;
        }
        Entity::find()
            .filter(Column::TenantId.eq(tenant_id))
            .filter(Column::Id.eq(id))
            .one(&self.reads)
            .await
            .map_err(repo_err)?
            .map(to_domain)
            .transpose()
    }

    async fn list(
        &self,
        tenant_id: Uuid,
        ids: &[Uuid],
        page: PageRequest,
    ) -> Result<Page<Application>, RepoError> {
        let mut query = Entity::find().filter(Column::TenantId.eq(tenant_id));
        if !ids.is_empty() {
            query = query.filter(Column::Id.is_in(ids.iter().copied()));
        }
        let total_items = query.clone().count(&self.db).await.map_err(repo_err)?;
        let items = query
            .order_by_desc(Column::CreatedAt)
            .order_by_desc(Column::Id)
            .offset(page.offset())
            .limit(page.size)
            .all(&self.db)
            .await
            .map_err(repo_err)?
            .into_iter()
            .map(to_domain)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Page {
            items,
            total_items,
            request: page,
        })
    }

    async fn update(&self, application: &Application) -> Result<bool, RepoError> {
        let result = Entity::update_many()
            .col_expr(Column::Name, Expr::value(application.name.clone()))
            .col_expr(
                Column::Permissions,
                Expr::value(grants::permissions_json(&application.permissions)),
            )
            .col_expr(
                Column::Rules,
                Expr::value(grants::rules_json(&application.rules)),
            )
            .col_expr(Column::ModifiedBy, Expr::value(application.modified_by))
            .col_expr(
                Column::ModifiedAt,
                Expr::value(application.modified_at.map(stamp)),
            )
            .filter(Column::TenantId.eq(application.tenant_id))
            .filter(Column::Id.eq(application.id))
            .exec(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(result.rows_affected > 0)
    }

    async fn replace_key(
        &self,
        application: &Application,
        key_hash: &KeyHash,
    ) -> Result<bool, RepoError> {
        let result = Entity::update_many()
            .col_expr(Column::KeyHash, Expr::value(hash_hex(key_hash)))
            .col_expr(Column::ModifiedBy, Expr::value(application.modified_by))
            .col_expr(
                Column::ModifiedAt,
                Expr::value(application.modified_at.map(stamp)),
            )
            .filter(Column::TenantId.eq(application.tenant_id))
            .filter(Column::Id.eq(application.id))
            .exec(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(result.rows_affected > 0)
    }

    async fn delete(&self, tenant_id: Uuid, id: Uuid) -> Result<bool, RepoError> {
        let result = Entity::delete_many()
            .filter(Column::TenantId.eq(tenant_id))
            .filter(Column::Id.eq(id))
            .exec(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(result.rows_affected > 0)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_hashes_read_back_as_written() {
        let mut bytes = [0u8; 32];
        for (b, v) in bytes.iter_mut().zip(0u8..) {
            *b = v.wrapping_mul(37).wrapping_add(5);
        }
        let hex = hash_hex(&KeyHash(bytes));
        assert_eq!(hex.len(), 64);
        assert_eq!(hash_from_hex(&hex).map(|h| h.0), Some(bytes));
        assert_eq!(hash_from_hex(&hex.to_uppercase()).map(|h| h.0), Some(bytes));
        assert!(hash_from_hex(&hex[..62]).is_none());
        assert!(hash_from_hex(&format!("{}zz", &hex[..62])).is_none());
        assert!(hash_from_hex(&format!("{}+1", &hex[..62])).is_none());
    }

    /// Stored hashes are lowercase hex: a key created before must still be found.
    #[test]
    fn key_hashes_are_written_as_lowercase_hex() {
        let mut bytes = [0u8; 32];
        bytes[0] = 0x0a;
        bytes[1] = 0xf0;
        bytes[31] = 0xff;
        let hex = hash_hex(&KeyHash(bytes));
        assert_eq!(&hex[..4], "0af0");
        assert_eq!(&hex[4..62], "0".repeat(58));
        assert_eq!(&hex[62..], "ff");
    }
}
