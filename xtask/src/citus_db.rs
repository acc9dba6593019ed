//! `cargo xtask bench --db citus`: the bench's fresh databases made Citus databases of the
//! cluster whose coordinator `TOKENVAULT_TEST_CITUS_URL` names. Each is created on every node
//! with the extension, and the workers are added to it; the server distributes its schema
//! when it starts (`tokenvault migrate`'s Citus step).

use anyhow::Context as _;
use sea_orm_migration::sea_orm::{ConnectionTrait, Database, Statement};

/// The coordinator's URL (any database of it).
pub(crate) fn coordinator() -> anyhow::Result<String> {
    std::env::var("TOKENVAULT_TEST_CITUS_URL")
        .ok()
        .filter(|v| !v.is_empty())
        .context("--db citus reads the coordinator's URL from TOKENVAULT_TEST_CITUS_URL")
}

/// Makes `name`, already created on the coordinator, a Citus database of its cluster.
pub(crate) async fn distribute(base: &str, name: &str) -> anyhow::Result<()> {
    let workers = workers(base).await?;
    anyhow::ensure!(!workers.is_empty(), "{base}: no active Citus worker");
    for (host, port) in &workers {
        let admin = Database::connect(&with_node(base, host, *port, None)).await?;
        admin
            .execute_unprepared(&format!("CREATE DATABASE {name}"))
            .await
            .with_context(|| format!("create {name} on {host}:{port}"))?;
        admin.close().await?;
        let db = Database::connect(&with_node(base, host, *port, Some(name))).await?;
        db.execute_unprepared("CREATE EXTENSION citus").await?;
        db.close().await?;
    }
    let (host, port) = host_port(base)?;
    let db = Database::connect(&with_node(base, &host, port, Some(name))).await?;
    db.execute_unprepared("CREATE EXTENSION citus").await?;
    db.execute_unprepared(&format!(
        "SELECT citus_set_coordinator_host('{}', {port})",
        host.replace('\'', "''")
    ))
    .await?;
    for (host, port) in &workers {
        let host = host.replace('\'', "''");
        db.execute_unprepared(&format!("SELECT citus_add_node('{host}', {port})"))
            .await?;
    }
    db.close().await?;
    Ok(())
}

/// Drops `name` on every worker (the coordinator's copy is the caller's).
pub(crate) async fn drop_on_workers(base: &str, name: &str) -> anyhow::Result<()> {
    for (host, port) in workers(base).await? {
        let admin = Database::connect(&with_node(base, &host, port, None)).await?;
        admin
            .execute_unprepared(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .await?;
        admin.close().await?;
    }
    Ok(())
}

/// The active workers of the cluster (host, port), as the coordinator's database `base`
/// lists them.
async fn workers(base: &str) -> anyhow::Result<Vec<(String, u16)>> {
    let db = Database::connect(base).await?;
    let rows = db
        .query_all_raw(Statement::from_string(
            db.get_database_backend(),
            "SELECT nodename, nodeport FROM pg_dist_node \
             WHERE groupid <> 0 AND noderole = 'primary' AND isactive ORDER BY nodeport",
        ))
        .await
        .context("list the Citus workers (is the citus extension in this database?)")?;
    db.close().await?;
    rows.iter()
        .map(|r| {
            let port: i32 = r.try_get("", "nodeport")?;
            Ok((r.try_get("", "nodename")?, u16::try_from(port)?))
        })
        .collect()
}

/// `url`'s host and port.
fn host_port(url: &str) -> anyhow::Result<(String, u16)> {
    let (_, rest) = url.split_once("://").context("a database URL")?;
    let authority = rest.split('/').next().unwrap_or(rest);
    let host_port = authority.rsplit('@').next().unwrap_or(authority);
    match host_port.rsplit_once(':') {
        Some((host, port)) => Ok((host.to_owned(), port.parse()?)),
        None => Ok((host_port.to_owned(), 5432)),
    }
}

/// `url` pointed at `host:port` and, when given, at database `name` (keeping the user and the
/// query).
fn with_node(url: &str, host: &str, port: u16, name: Option<&str>) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", url));
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let user = authority
        .rsplit_once('@')
        .map_or(String::new(), |(u, _)| format!("{u}@"));
    let (db, query) = path
        .split_once('?')
        .map_or((path, None), |(d, q)| (d, Some(q)));
    let db = name.unwrap_or(db);
    let query = query.map_or(String::new(), |q| format!("?{q}"));
    format!("{scheme}://{user}{host}:{port}/{db}{query}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_urls_keep_the_user_and_the_query() {
        let base = "postgres://postgres@127.0.0.1:5440/postgres?sslmode=disable";
        assert_eq!(host_port(base).unwrap(), ("127.0.0.1".to_owned(), 5440));
        assert_eq!(
            with_node(base, "10.0.0.2", 5441, Some("bench_x")),
            "postgres://postgres@10.0.0.2:5441/bench_x?sslmode=disable"
        );
        assert_eq!(
            with_node("postgres://h/db", "w", 5432, None),
            "postgres://w:5432/db"
        );
    }
}
