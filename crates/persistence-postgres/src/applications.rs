//! PostgreSQL's application reads (`applications.rs`): a key read alone from memory when it was
//! read before and nothing changed since (`key_cache.rs`); on the adapter's own connections, with
//! what the request reads next joined to the key — a token in the grouped reads of
//! `key_group.rs` (the token alone when the key is in memory), a reactor (`keyed_reactor.rs`), a search (`keyed_search.rs`) — except on
//! Citus, whose statements reach a tenant's rows only by naming the tenant.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::application::Application;
use tokenvault_domain::permission::ApplicationType;
use tokenvault_domain::ports::{AlsoRead, Beside, KeyRead};
use tokenvault_domain::tenant::TenantSettings;
use uuid::Uuid;

use crate::direct::PgDirect;
use crate::key_cache::KeyCache;
use crate::key_group::KeyGroup;
use crate::{keyed_reactor, keyed_read, keyed_search};
use tokenvault_persistence_shared::applications::by_id;
use tokenvault_persistence_shared::backend::ApplicationReads;

/// A PostgreSQL database's application reads.
#[derive(Debug)]
pub(crate) struct PgApplications {
    /// Point reads through SeaORM on its own connections.
    reads: tokenvault_persistence_shared::reads::Reads,
    /// Its own connections.
    pg: Arc<PgDirect>,
    /// Key-and-token reads answered together; `None` on Citus.
    key_group: Option<Arc<KeyGroup>>,
    /// The applications of the keys seen (`key_cache.rs`); `None` on Citus.
    keys: Option<Arc<KeyCache>>,
}

impl PgApplications {
    /// The reads through `reads` and on `pg`, the database's own connections, with its
    /// grouped key-and-token reads and its keys in memory (both `None` on Citus).
    pub(crate) fn new(
        reads: tokenvault_persistence_shared::reads::Reads,
        pg: Arc<PgDirect>,
        key_group: Option<Arc<KeyGroup>>,
        keys: Option<Arc<KeyCache>>,
    ) -> Self {
        Self {
            reads,
            pg,
            key_group,
            keys,
        }
    }
}

impl PgApplications {
    /// The key, the reactor `reactor_id` with its formula and the token `token_id`: with the
    /// reactor from memory (`key_cache.rs`), the key and token in the grouped reads of
    /// `key_group.rs` (the key alone from memory when no token is asked for); else in one
    /// five-table statement (`keyed_reactor.rs`), whose reactor is then kept. Whose reactor it
    /// is, is checked by `confined` in the shared `applications.rs`, as for any read ahead.
    async fn key_and_reactor(
        &self,
        key_hash: String,
        reactor_id: Uuid,
        token_id: Option<&str>,
        now: OffsetDateTime,
    ) -> Result<Option<KeyRead>, RepoError> {
        let (Some(keys), Some(group)) = (&self.keys, &self.key_group) else {
            return keyed_reactor::key_and_reactor(&self.pg, key_hash, reactor_id, token_id, now)
                .await;
        };
        let read_at = Instant::now();
        if keys.reactor(reactor_id, read_at).is_some() {
            let found = match token_id {
                Some(token_id) => {
                    self.key_and_token(group, key_hash.clone(), token_id, now)
                        .await?
                }
                None => self
                    .by_key(key_hash.clone())
                    .await?
                    .map(|(application, settings)| KeyRead::alone(application, settings)),
            };
            // Still kept once the key and token are read (a token read may wait in the queue):
            // a change heard meanwhile is not answered past; else the statement reads it.
            let still = keys.reactor(reactor_id, Instant::now());
            // As the statement joins it: a private application's reactor of its own tenant.
            match (found, still) {
                (None, _) => return Ok(None),
                (Some(read), _) if read.application.app_type != ApplicationType::Private => {
                    return Ok(Some(KeyRead {
                        reactor: Beside::Read(None),
                        ..read
                    }));
                }
                (Some(read), Some(kept)) if read.application.tenant_id == kept.0.tenant_id => {
                    return Ok(Some(KeyRead {
                        reactor: Beside::Read(Some(kept)),
                        ..read
                    }));
                }
                // Forgotten meanwhile, or another tenant's reactor by this id (only rows written
                // behind the server, whose ids are its own): the statement says what the key's
                // tenant has.
                (Some(_), _) => {}
            }
        }
        let seen = keys.generation();
        let found =
            keyed_reactor::key_and_reactor(&self.pg, key_hash, reactor_id, token_id, now).await?;
        if let (
            Some(seen),
            Some(KeyRead {
                reactor: Beside::Read(Some(reactor)),
                ..
            }),
        ) = (seen, &found)
        {
            keys.put_reactor(reactor_id, seen, read_at, reactor.clone());
        }
        Ok(found)
    }
}

impl PgApplications {
    /// The key and its tenant's live token `token_id`, in the grouped reads of `key_group.rs`:
    /// the token alone when the key's application is in memory (`key_cache.rs`) — none for a
    /// key that is not a private application's, as the statement joins none — else both, and
    /// the key is kept.
    async fn key_and_token(
        &self,
        group: &Arc<KeyGroup>,
        key_hash: String,
        token_id: &str,
        now: OffsetDateTime,
    ) -> Result<Option<KeyRead>, RepoError> {
        let Some(keys) = &self.keys else {
            return group.read(key_hash, token_id, now).await;
        };
        let read_at = Instant::now();
        if let Some((application, _)) = keys.get(&key_hash, read_at) {
            let token = if application.app_type == ApplicationType::Private {
                group.token(application.tenant_id, token_id, now).await?
            } else {
                None
            };
            // Still kept once the token is read (it may have waited in the queue): a change
            // heard meanwhile, this server's own included, is not answered past. Else the key
            // is read again with its token, as one not kept is.
            let still = keys
                .get(&key_hash, Instant::now())
                .filter(|(again, _)| again.tenant_id == application.tenant_id);
            if let Some((application, settings)) = still {
                return Ok(Some(KeyRead {
                    token: Beside::Read(token),
                    ..KeyRead::alone(application, settings)
                }));
            }
        }
        let seen = keys.generation();
        let found = group.read(key_hash.clone(), token_id, now).await?;
        if let (Some(seen), Some(read)) = (seen, &found) {
            let kept = (read.application.clone(), read.settings);
            keys.put(key_hash, seen, read_at, kept);
        }
        Ok(found)
    }
}

#[async_trait]
impl ApplicationReads for PgApplications {
    async fn by_key(
        &self,
        key_hash: String,
    ) -> Result<Option<(Application, TenantSettings)>, RepoError> {
        let Some(keys) = &self.keys else {
            return keyed_read::key_postgres(&self.pg, key_hash).await;
        };
        let now = Instant::now();
        if let Some(kept) = keys.get(&key_hash, now) {
            return Ok(Some(kept));
        }
        let seen = keys.generation();
        let found = keyed_read::key_postgres(&self.pg, key_hash.clone()).await?;
        if let (Some(seen), Some(found)) = (seen, &found) {
            keys.put(key_hash, seen, now, found.clone());
        }
        Ok(found)
    }

    async fn by_key_also(
        &self,
        key_hash: String,
        also: &AlsoRead,
        now: OffsetDateTime,
    ) -> Option<Result<Option<KeyRead>, RepoError>> {
        // Citus: a statement there reaches a tenant's rows only by naming the tenant.
        if self.reads.distributed() {
            return None;
        }
        if let Some(search) = &also.search {
            return keyed_search::key_and_search(&self.pg, key_hash, search, now).await;
        }
        let token_id = also.token.as_deref();
        if let Some(reactor_id) = also.reactor {
            return Some(
                self.key_and_reactor(key_hash, reactor_id, token_id, now)
                    .await,
            );
        }
        let group = self.key_group.as_ref()?;
        Some(self.key_and_token(group, key_hash, token_id?, now).await)
    }

    async fn by_id(&self, tenant_id: Uuid, id: Uuid) -> Result<Option<Application>, RepoError> {
        by_id(&self.reads, tenant_id, id).await
    }
}
