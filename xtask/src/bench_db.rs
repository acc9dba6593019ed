//! The bench's fresh PostgreSQL databases (`--db postgres`, or `--db citus`: made Citus
//! databases of the cluster, `citus_db.rs`), one per purpose, dropped after the run.

use anyhow::Context as _;

use crate::workspace::DEFAULT_TEST_POSTGRES;

/// The server beside which `db`'s fresh databases are made: `TOKENVAULT_TEST_DATABASE_URL`'s,
/// or for `citus` the coordinator's (`citus_db.rs`).
fn postgres_base(db: &str) -> anyhow::Result<String> {
    if db == "citus" {
        return crate::citus_db::coordinator();
    }
    Ok(std::env::var("TOKENVAULT_TEST_DATABASE_URL")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| DEFAULT_TEST_POSTGRES.to_string()))
}

/// A fresh database for `purpose` on `db_kind`'s server (made a Citus database for `citus`); its
/// URL.
pub(crate) async fn fresh_postgres(db_kind: &str, purpose: &str) -> anyhow::Result<String> {
    use sea_orm_migration::sea_orm::{ConnectionTrait, Database};
    let base = postgres_base(db_kind)?;
    let name = format!("bench_{purpose}_{}", std::process::id());
    let db = Database::connect(&base)
        .await
        .context("connect to PostgreSQL")?;
    db.execute_unprepared(&format!("DROP DATABASE IF EXISTS {name}"))
        .await?;
    db.execute_unprepared(&format!("CREATE DATABASE {name}"))
        .await?;
    if db_kind == "citus" {
        crate::citus_db::distribute(&base, &name).await?;
    }
    let (prefix, _) = base.rsplit_once('/').context("database URL")?;
    Ok(format!("{prefix}/{name}"))
}

/// Drops the databases [`fresh_postgres`] made for `purposes` (their servers have stopped).
pub(crate) async fn drop_postgres(db_kind: &str, purposes: &[&str]) -> anyhow::Result<()> {
    use sea_orm_migration::sea_orm::{ConnectionTrait, Database};
    let base = postgres_base(db_kind)?;
    let db = Database::connect(&base)
        .await
        .context("connect to PostgreSQL")?;
    for purpose in purposes {
        let name = format!("bench_{purpose}_{}", std::process::id());
        db.execute_unprepared(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .await?;
        if db_kind == "citus" {
            crate::citus_db::drop_on_workers(&base, &name).await?;
        }
    }
    Ok(())
}
