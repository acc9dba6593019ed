//! [`ApplicationRepository`] on SeaORM: the writes and lists, the same on both databases;
//! the reads by key and by id are each database's own ([`ApplicationReads`]:
//! `sqlite/applications.rs`, `postgres/applications.rs`).

use std::sync::Arc;

use async_trait::async_trait;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::application::{Application, KeyHash};
use tokenvault_domain::page::{Page, PageRequest};
use tokenvault_domain::permission::ApplicationType;
use tokenvault_domain::ports::{AlsoRead, ApplicationRepository, Beside, KeyRead};
use tokenvault_domain::tenant::TenantSettings;
use tokenvault_domain::token::StoredToken;
use uuid::Uuid;

use crate::backend::{ApplicationReads, Backend};
use crate::engine::Database;
use crate::entity::application::{Column, Entity};
use crate::grants;
use crate::one_of_tenant::one_of_tenant;
use crate::paging::newest_first;
use crate::repo_error::repo_err;
use crate::rows::application::{hash_hex, to_active, to_domain};
use crate::stamp::stamp;

/// The application `id` of `tenant_id` through SeaORM on `db`.
pub async fn by_id(
    db: &impl ConnectionTrait,
    tenant_id: Uuid,
    id: Uuid,
) -> Result<Option<Application>, RepoError> {
    one_of_tenant::<Entity, _>(db, (Column::TenantId, Column::Id), tenant_id, id, to_domain).await
}

/// What a database read beside a key, kept only where it is the key's own: for a private
/// application's key (the only type that may read, use or search tokens, decisions §4), of its
/// tenant, live at `now`, and the row `also` asked for (the token or reactor of that id, matches
/// of a search in the key's tenant). Each database's statements say so themselves; this says it once more
/// for every database, so that a part that joined wrongly reads nothing ahead (the use case
/// then reads through its checked path) rather than hand over another tenant's rows (attack
/// review of the per-database parts).
fn confined(read: KeyRead, also: &AlsoRead, now: OffsetDateTime) -> KeyRead {
    let KeyRead {
        application,
        settings,
        token,
        reactor,
        matches,
    } = read;
    if application.app_type != ApplicationType::Private {
        return KeyRead::alone(application, settings);
    }
    let tenant = application.tenant_id;
    let own = |t: &StoredToken| t.tenant_id == tenant && t.expires_at.is_none_or(|at| at > now);
    let token = match token {
        Beside::Read(Some(t)) if !own(&t) || also.token.as_deref() != Some(t.id.as_str()) => {
            Beside::NotRead
        }
        token => token,
    };
    let reactor = match reactor {
        Beside::Read(Some((r, f)))
            if r.tenant_id != tenant
                || also.reactor != Some(r.id)
                || f.as_ref()
                    .is_some_and(|f| f.tenant_id != tenant || f.id != r.formula_id) =>
        {
            Beside::NotRead
        }
        reactor => reactor,
    };
    let matches = match matches {
        Beside::Read(rows)
            if !rows.iter().all(own)
                || also.search.as_ref().is_none_or(|s| s.tenant_id != tenant) =>
        {
            Beside::NotRead
        }
        matches => matches,
    };
    KeyRead {
        application,
        settings,
        token,
        reactor,
        matches,
    }
}

/// Applications in the `applications` table.
#[derive(Clone, Debug)]
pub struct SeaOrmApplicationRepository {
    db: DatabaseConnection,
    /// The database's own reads.
    reads: Arc<dyn ApplicationReads>,
    /// Told of every change (`Backend::keys_changed`).
    backend: Arc<dyn Backend>,
}

impl SeaOrmApplicationRepository {
    /// A repository over `db` (migrated).
    pub fn new(db: Database) -> Self {
        let reads = db.backend().applications(db.connection());
        Self {
            reads,
            backend: db.backend().clone(),
            db: db.connection().clone(),
        }
    }
}

impl SeaOrmApplicationRepository {
    /// How many rows a write changed, once the backend has been told that a key changed: when
    /// one did, or on an error (which may come after the commit). A write that changed nothing
    /// (the expiry sweep, most of the time) leaves the memory be.
    fn changed(&self, result: Result<u64, sea_orm::DbErr>) -> Result<u64, RepoError> {
        if result.as_ref().map_or(true, |rows| *rows > 0) {
            self.backend.keys_changed();
        }
        result.map_err(repo_err)
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
        self.reads.by_key(hash_hex(hash)).await
    }

    async fn find_by_key_hash_also(
        &self,
        hash: &KeyHash,
        also: &AlsoRead,
        now: OffsetDateTime,
    ) -> Result<Option<KeyRead>, RepoError> {
        let found = match self.reads.by_key_also(hash_hex(hash), also, now).await {
            Some(found) => found?,
            None => self
                .find_by_key_hash(hash)
                .await?
                .map(|(application, settings)| KeyRead::alone(application, settings)),
        };
        Ok(found.map(|read| confined(read, also, now)))
    }

    async fn get(&self, tenant_id: Uuid, id: Uuid) -> Result<Option<Application>, RepoError> {
        self.reads.by_id(tenant_id, id).await
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
        newest_first(
            &self.db,
            query,
            (Column::CreatedAt, Column::Id),
            page,
            to_domain,
        )
        .await
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
            .map(|r| r.rows_affected);
        let rows = self.changed(result)?;
        Ok(rows > 0)
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
            .map(|r| r.rows_affected);
        let rows = self.changed(result)?;
        Ok(rows > 0)
    }

    async fn delete(&self, tenant_id: Uuid, id: Uuid) -> Result<bool, RepoError> {
        let result = Entity::delete_many()
            .filter(Column::TenantId.eq(tenant_id))
            .filter(Column::Id.eq(id))
            .exec(&self.db)
            .await
            .map(|r| r.rows_affected);
        let rows = self.changed(result)?;
        Ok(rows > 0)
    }

    async fn delete_expired(&self, now: OffsetDateTime) -> Result<u64, RepoError> {
        let result = Entity::delete_many()
            .filter(Column::ExpiresAt.lte(stamp(now)))
            .exec(&self.db)
            .await
            .map(|r| r.rows_affected);
        let rows = self.changed(result)?;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use time::Duration;
    use tokenvault_domain::application::Application;
    use tokenvault_domain::permission::ApplicationType;
    use tokenvault_domain::ports::{AlsoRead, Beside, KeyRead, SearchAhead, SearchCondition};
    use tokenvault_domain::tenant::TenantSettings;
    use uuid::Uuid;

    use super::confined;
    use crate::rows::token::sample;

    fn app(app_type: ApplicationType) -> Application {
        Application {
            id: Uuid::from_u128(7),
            tenant_id: Uuid::from_u128(1),
            name: "reader".into(),
            app_type,
            permissions: vec![],
            rules: vec![],
            created_by: None,
            created_at: time::OffsetDateTime::UNIX_EPOCH,
            modified_by: None,
            modified_at: None,
            expires_at: None,
        }
    }

    #[test]
    fn only_the_keys_own_live_rows_are_kept() {
        let now = time::OffsetDateTime::UNIX_EPOCH + Duration::days(1);
        let with = |app_type, token| KeyRead {
            token: Beside::Read(Some(token)),
            ..KeyRead::alone(app(app_type), TenantSettings::default())
        };
        let asked = |id: &str| AlsoRead {
            token: Some(id.into()),
            ..AlsoRead::default()
        };
        let own = sample("t");
        let kept = confined(
            with(ApplicationType::Private, own.clone()),
            &asked("t"),
            now,
        );
        assert_eq!(kept.token, Beside::Read(Some(own.clone())));

        let read = confined(
            with(ApplicationType::Private, own.clone()),
            &asked("u"),
            now,
        );
        assert_eq!(
            read.token,
            Beside::NotRead,
            "another token than the one asked for"
        );

        let mut theirs = own.clone();
        theirs.tenant_id = Uuid::from_u128(2);
        let read = confined(
            with(ApplicationType::Private, theirs.clone()),
            &asked("t"),
            now,
        );
        assert_eq!(read.token, Beside::NotRead, "another tenant's token");

        let mut expired = own.clone();
        expired.expires_at = Some(now);
        let read = confined(with(ApplicationType::Private, expired), &asked("t"), now);
        assert_eq!(read.token, Beside::NotRead, "an expired token");

        let read = confined(with(ApplicationType::Public, own.clone()), &asked("t"), now);
        assert_eq!(read.token, Beside::NotRead, "a public key's read");

        let search = |tenant_id| AlsoRead {
            search: Some(SearchAhead {
                tenant_id,
                condition: SearchCondition::Term("x".into()),
                limit: 10,
            }),
            ..AlsoRead::default()
        };
        let matches = |rows| KeyRead {
            matches: Beside::Read(rows),
            ..KeyRead::alone(app(ApplicationType::Private), TenantSettings::default())
        };
        let tenant = own.tenant_id;
        assert_eq!(
            confined(matches(vec![own.clone()]), &search(tenant), now).matches,
            Beside::Read(vec![own.clone()])
        );
        assert_eq!(
            confined(matches(vec![own.clone()]), &search(Uuid::from_u128(2)), now).matches,
            Beside::NotRead,
            "a search hashed for another tenant"
        );
        assert_eq!(
            confined(matches(vec![own, theirs]), &search(tenant), now).matches,
            Beside::NotRead
        );
    }

    #[test]
    fn a_reactor_is_kept_only_when_it_is_the_one_asked_for() {
        let now = time::OffsetDateTime::UNIX_EPOCH + Duration::days(1);
        let tenant = Uuid::from_u128(1);
        let reactor = tokenvault_domain::reactor::Reactor {
            id: Uuid::from_u128(5),
            tenant_id: tenant,
            name: "r".into(),
            formula_id: Uuid::from_u128(6),
            configuration: serde_json::Map::new(),
            application_id: None,
            created_by: None,
            created_at: time::OffsetDateTime::UNIX_EPOCH,
            modified_by: None,
            modified_at: None,
        };
        let read = || KeyRead {
            reactor: Beside::Read(Some((reactor.clone(), None))),
            ..KeyRead::alone(app(ApplicationType::Private), TenantSettings::default())
        };
        let asked = |id| AlsoRead {
            reactor: Some(id),
            ..AlsoRead::default()
        };
        assert!(matches!(
            confined(read(), &asked(reactor.id), now).reactor,
            Beside::Read(Some((ref r, None))) if r.id == reactor.id
        ));
        assert!(matches!(
            confined(read(), &asked(Uuid::from_u128(99)), now).reactor,
            Beside::NotRead
        ));
    }
}
