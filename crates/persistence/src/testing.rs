//! Fresh, migrated databases for tests: a SQLite file in its own directory, or a uniquely named
//! PostgreSQL database made on the server of `TOKENVAULT_TEST_DATABASE_URL` and dropped after.

use std::path::PathBuf;

use crate::Database;
use sea_orm::sqlx::{Connection, Executor, PgConnection};
use uuid::Uuid;

mod citus;

/// The environment variable naming the PostgreSQL server for tests.
pub const POSTGRES_ENV: &str = "TOKENVAULT_TEST_DATABASE_URL";

/// Which database a test runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// A SQLite file.
    Sqlite,
    /// A database on the PostgreSQL server of [`POSTGRES_ENV`].
    Postgres,
}

/// Each backend of [`backends`], and SQLite once more with its reads on the calling thread
/// refused (`Database::refuse_direct_reads`): a test that loops over these runs every read
/// through the pool that stands in for a direct read when the file is locked.
pub fn read_paths() -> Vec<(Backend, bool)> {
    let mut out = vec![(Backend::Sqlite, false), (Backend::Sqlite, true)];
    out.extend(
        backends()
            .into_iter()
            .filter(|b| *b == Backend::Postgres)
            .map(|b| (b, false)),
    );
    out
}

/// SQLite always; PostgreSQL too when [`POSTGRES_ENV`] is set (an unreachable server then
/// fails the test, it is never skipped).
pub fn backends() -> Vec<Backend> {
    let mut out = vec![Backend::Sqlite];
    if std::env::var(POSTGRES_ENV).is_ok_and(|v| !v.is_empty()) {
        out.push(Backend::Postgres);
    }
    out
}

/// A fresh database with the real migrations applied.
pub struct TestDatabase {
    /// Its URL (for a server under test; on Citus its connections refuse statements over many
    /// shards).
    pub url: String,
    /// A migrated pool on it.
    pub db: Database,
    /// The backend.
    pub backend: Backend,
    cleanup: Cleanup,
}

enum Cleanup {
    Dir(PathBuf),
    /// `workers`: the admin URLs of the Citus workers holding the same database, if any.
    Postgres {
        admin_url: String,
        name: String,
        workers: Vec<String>,
    },
}

fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let prefix = match base[scheme_end..].find('/') {
        Some(i) => &base[..scheme_end + i],
        None => base,
    };
    match query {
        Some(q) => format!("{prefix}/{name}?{q}"),
        None => format!("{prefix}/{name}"),
    }
}

impl TestDatabase {
    /// Creates and migrates a fresh database on `backend` (distributed, where the PostgreSQL
    /// server is a Citus coordinator).
    pub async fn create(backend: Backend) -> Self {
        Self::create_with(backend, true).await
    }

    /// A fresh migrated PostgreSQL database that is not a Citus database even on a Citus
    /// coordinator (until [`TestDatabase::add_citus`]): a single-node database as it was
    /// before its server gained Citus.
    pub async fn create_undistributed() -> Self {
        Self::create_with(Backend::Postgres, false).await
    }

    /// The Citus workers of this database's server (their admin URLs); none off Citus.
    pub fn citus_workers(&self) -> &[String] {
        match &self.cleanup {
            Cleanup::Postgres { workers, .. } => workers,
            Cleanup::Dir(_) => &[],
        }
    }

    /// Makes this database a Citus database of its server's cluster: the database and the
    /// extension on every worker, the extension on the coordinator, the workers added. The
    /// schema is distributed by the next migration.
    ///
    /// # Panics
    /// Off Citus, or when the cluster refuses.
    pub async fn add_citus(&self) {
        let Cleanup::Postgres {
            admin_url,
            name,
            workers,
        } = &self.cleanup
        else {
            panic!("add_citus needs PostgreSQL");
        };
        assert!(!workers.is_empty(), "add_citus needs a Citus coordinator");
        let mut admin = PgConnection::connect(admin_url)
            .await
            .expect("reach the Citus coordinator");
        citus::prepare(&mut admin, &self.url, name, workers).await;
        let _ = admin.close().await;
    }

    async fn create_with(backend: Backend, distributed: bool) -> Self {
        let (url, cleanup) = match backend {
            Backend::Sqlite => {
                let dir = std::env::temp_dir()
                    .join(format!("tokenvault-test-{}", Uuid::new_v4().simple()));
                std::fs::create_dir_all(&dir).expect("temp dir");
                (
                    format!("sqlite://{}/vault.db?mode=rwc", dir.display()),
                    Cleanup::Dir(dir),
                )
            }
            Backend::Postgres => {
                let admin_url = std::env::var(POSTGRES_ENV).expect("TOKENVAULT_TEST_DATABASE_URL");
                let name = format!("tv_test_{}", Uuid::new_v4().simple());
                let mut admin = PgConnection::connect(&admin_url).await.unwrap_or_else(|e| {
                    panic!("{POSTGRES_ENV} is set but PostgreSQL is unreachable: {e}")
                });
                admin
                    .execute(sea_orm::sqlx::AssertSqlSafe(format!(
                        "CREATE DATABASE \"{name}\""
                    )))
                    .await
                    .expect("CREATE DATABASE");
                let url = with_database(&admin_url, &name);
                let workers = citus::workers(&mut admin, &admin_url).await;
                if distributed && !workers.is_empty() {
                    citus::prepare(&mut admin, &url, &name, &workers).await;
                }
                let _ = admin.close().await;
                (
                    url,
                    Cleanup::Postgres {
                        admin_url,
                        name,
                        workers,
                    },
                )
            }
        };
        let db = crate::connect(&url, crate::DbOptions::new(4))
            .await
            .expect("connect to the test database");
        crate::migrate(&db)
            .await
            .expect("migrate the test database");
        // A server under test on Citus refuses statements over many shards: no request path
        // may fan out to every node (jobs that span tenants allow it themselves). The
        // harness's own pool may: tests count across tenants.
        let url = match &cleanup {
            Cleanup::Postgres { workers, .. } if !workers.is_empty() && distributed => {
                citus::refusing_fan_out(&url)
            }
            _ => url,
        };
        Self {
            url,
            db,
            backend,
            cleanup,
        }
    }

    /// Everything the database holds, as bytes: the SQLite files (main, WAL) as they are on
    /// disk, or every row of every PostgreSQL table cast to text. For tests that look for
    /// secrets at rest.
    pub async fn dump(&self) -> Vec<u8> {
        match &self.cleanup {
            Cleanup::Dir(dir) => {
                let mut out = Vec::new();
                for name in ["vault.db", "vault.db-wal", "vault.db-shm"] {
                    if let Ok(bytes) = std::fs::read(dir.join(name)) {
                        out.extend(bytes);
                    }
                }
                out
            }
            Cleanup::Postgres { .. } => {
                use sea_orm::{ConnectionTrait, Statement};
                let backend = self.db.get_database_backend();
                let tables = self
                    .db
                    .query_all_raw(Statement::from_string(
                        backend,
                        "SELECT table_name::text AS name FROM information_schema.tables \
                         WHERE table_schema = 'public' AND table_type = 'BASE TABLE'",
                    ))
                    .await
                    .expect("list tables");
                let mut out = Vec::new();
                for row in tables {
                    let table: String = row.try_get("", "name").expect("table name");
                    let rows = self
                        .db
                        .query_all_raw(Statement::from_string(
                            backend,
                            format!("SELECT CAST(t AS text) AS row FROM \"{table}\" t"),
                        ))
                        .await
                        .expect("dump table");
                    for r in rows {
                        let text: String = r.try_get("", "row").expect("row text");
                        out.extend(text.into_bytes());
                        out.push(b'\n');
                    }
                }
                out
            }
        }
    }

    /// Runs one SQL statement on the database behind the server's back (tests that tamper
    /// with stored rows); how many rows it changed.
    pub async fn execute(&self, sql: &str) -> u64 {
        use sea_orm::{ConnectionTrait, Statement};
        let backend = self.db.get_database_backend();
        self.db
            .execute_raw(Statement::from_string(backend, sql))
            .await
            .expect("execute")
            .rows_affected()
    }

    /// Closes the harness's own pool and engine on the database (on SQLite its checkpoint
    /// thread too, whose passes would otherwise race a test's own checkpoint), for a test that
    /// needs the database to itself. `dump` of a SQLite file still works; `execute` fails.
    pub async fn close_pool(&self) {
        self.db
            .clone()
            .close()
            .await
            .expect("close the harness's pool");
    }

    /// Closes the pool and removes the database.
    pub async fn destroy(self) {
        let _ = self.db.close().await;
        match self.cleanup {
            Cleanup::Dir(dir) => {
                let _ = std::fs::remove_dir_all(dir);
            }
            Cleanup::Postgres {
                admin_url,
                name,
                workers,
            } => {
                if let Ok(mut admin) = PgConnection::connect(&admin_url).await {
                    let _ = admin
                        .execute(sea_orm::sqlx::AssertSqlSafe(format!(
                            "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
                        )))
                        .await;
                    let _ = admin.close().await;
                }
                citus::drop_on_workers(&name, &workers).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn database_name_is_replaced() {
        assert_eq!(
            with_database("postgres://u@h:5432/test", "x"),
            "postgres://u@h:5432/x"
        );
        assert_eq!(
            with_database("postgres://u@h/test?sslmode=disable", "x"),
            "postgres://u@h/x?sslmode=disable"
        );
        assert_eq!(with_database("postgres://u@h", "x"), "postgres://u@h/x");
    }
}
