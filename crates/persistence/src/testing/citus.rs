//! Test databases on a Citus coordinator (`cargo xtask citus`): when the server of
//! `TOKENVAULT_TEST_DATABASE_URL` has the `citus` extension in its admin database, each fresh
//! test database becomes a Citus database of the same cluster, so that migrating it distributes
//! the schema as on a real deployment. Citus keeps its nodes per database: the database is made
//! on every worker too, the extension created in each, and the workers added.

use sea_orm::sqlx::{self, Connection, Executor, PgConnection};

/// The admin URLs of the cluster's workers (their `postgres` database), or none when the admin
/// database has no Citus.
pub(super) async fn workers(admin: &mut PgConnection, admin_url: &str) -> Vec<String> {
    let citus: Option<String> =
        sqlx::query_scalar("SELECT extname::text FROM pg_extension WHERE extname = 'citus'")
            .fetch_optional(&mut *admin)
            .await
            .expect("look for the citus extension");
    if citus.is_none() {
        return Vec::new();
    }
    let nodes: Vec<(String, i32)> = sqlx::query_as(
        "SELECT nodename::text, nodeport FROM pg_dist_node WHERE groupid <> 0 ORDER BY nodeport",
    )
    .fetch_all(&mut *admin)
    .await
    .expect("read the Citus workers");
    nodes
        .iter()
        .map(|(host, port)| with_node(admin_url, host, *port))
        .collect()
}

/// Makes database `name` (already made on the coordinator at `url`) a Citus database: the same
/// database with the extension on each worker, the extension on the coordinator, the workers
/// added.
///
/// Adding nodes in two databases at once fails on a worker ("tuple concurrently updated": the
/// roles it syncs are global), so preparations take turns on an advisory lock of the admin
/// database, across test processes too.
pub(super) async fn prepare(admin: &mut PgConnection, url: &str, name: &str, workers: &[String]) {
    sqlx::query("SELECT pg_advisory_lock($1)")
        .bind(PREPARING)
        .execute(&mut *admin)
        .await
        .expect("take the Citus preparation lock");
    prepare_alone(admin, url, name, workers).await;
    sqlx::query("SELECT pg_advisory_unlock($1)")
        .bind(PREPARING)
        .execute(&mut *admin)
        .await
        .expect("release the Citus preparation lock");
}

/// The advisory lock key of [`prepare`].
const PREPARING: i64 = 0x0074_5643_6974_7573;

async fn prepare_alone(admin: &mut PgConnection, url: &str, name: &str, workers: &[String]) {
    let coordinator: (String, i32) =
        sqlx::query_as("SELECT nodename::text, nodeport FROM pg_dist_node WHERE groupid = 0")
            .fetch_one(&mut *admin)
            .await
            .expect("the coordinator's own address (citus_set_coordinator_host)");
    for worker in workers {
        let mut conn = PgConnection::connect(worker)
            .await
            .expect("reach a Citus worker");
        conn.execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
            .await
            .expect("CREATE DATABASE on a worker");
        let _ = conn.close().await;
        let mut db = PgConnection::connect(&super::with_database(worker, name))
            .await
            .expect("reach the worker's new database");
        db.execute("CREATE EXTENSION citus")
            .await
            .expect("citus on a worker");
        let _ = db.close().await;
    }
    let mut db = PgConnection::connect(url)
        .await
        .expect("reach the new database");
    db.execute("CREATE EXTENSION citus")
        .await
        .expect("citus on the coordinator");
    sqlx::query("SELECT citus_set_coordinator_host($1, $2)")
        .bind(&coordinator.0)
        .bind(coordinator.1)
        .execute(&mut db)
        .await
        .expect("citus_set_coordinator_host");
    for worker in workers {
        let (host, port) = host_port(worker);
        sqlx::query("SELECT citus_add_node($1, $2)")
            .bind(host)
            .bind(port)
            .execute(&mut db)
            .await
            .expect("citus_add_node");
    }
    let _ = db.close().await;
}

/// Drops database `name` on each worker.
pub(super) async fn drop_on_workers(name: &str, workers: &[String]) {
    for worker in workers {
        if let Ok(mut conn) = PgConnection::connect(worker).await {
            let _ = conn
                .execute(sqlx::AssertSqlSafe(format!(
                    "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
                )))
                .await;
            let _ = conn.close().await;
        }
    }
}

/// `url` with its connections refusing statements Citus runs over many shards
/// (`citus.multi_task_query_log_level = 'error'`).
pub(super) fn refusing_fan_out(url: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}options=-c%20citus.multi_task_query_log_level%3Derror")
}

/// `url` with its host and port replaced, on database `postgres`.
fn with_node(url: &str, host: &str, port: i32) -> String {
    let scheme_end = url.find("://").map_or(0, |i| i + 3);
    let rest = &url[scheme_end..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let user = rest[..authority_end]
        .rfind('@')
        .map_or("", |at| &rest[..=at]);
    let query = rest.find('?').map_or("", |q| &rest[q..]);
    format!("{}{user}{host}:{port}/postgres{query}", &url[..scheme_end])
}

/// The host and port of a URL [`with_node`] made.
fn host_port(url: &str) -> (String, i32) {
    let scheme_end = url.find("://").map_or(0, |i| i + 3);
    let rest = &url[scheme_end..];
    let authority = &rest[..rest.find(['/', '?']).unwrap_or(rest.len())];
    let host_port = authority
        .rfind('@')
        .map_or(authority, |at| &authority[at + 1..]);
    let (host, port) = host_port.rsplit_once(':').expect("a worker URL has a port");
    (host.to_string(), port.parse().expect("a worker URL's port"))
}

#[cfg(test)]
mod tests {
    use super::{host_port, refusing_fan_out, with_node};

    #[test]
    fn worker_urls_keep_the_user_and_query() {
        let url = with_node("postgres://pg:pw@h:5440/db?sslmode=disable", "w", 5441);
        assert_eq!(url, "postgres://pg:pw@w:5441/postgres?sslmode=disable");
        assert_eq!(host_port(&url), ("w".to_string(), 5441));
        assert_eq!(
            with_node("postgres://h/db", "w", 1),
            "postgres://w:1/postgres"
        );
        assert_eq!(
            refusing_fan_out("postgres://h/db"),
            "postgres://h/db?options=-c%20citus.multi_task_query_log_level%3Derror"
        );
    }
}
