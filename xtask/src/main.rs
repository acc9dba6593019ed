//! Project automation, run as `cargo xtask <task>`:
//!
//! - `migrate up|down|status|fresh` — the schema migrations on `DATABASE_URL` (default: the
//!   server's SQLite file `./data/tokenvault.db`).
//! - `openapi [--check]` — write `docs/openapi.json` from the code (or fail when it is stale).
//! - `bench [--db sqlite|postgres|both] [--duration S] [--connections N]` — HTTP load on the
//!   release binary beside the `/health` ceiling of the same run (see `bench.rs`).
//! - `citus [-- FILTER…]` — the PostgreSQL contract tests and the HTTP tests against the Citus
//!   coordinator of `TOKENVAULT_TEST_CITUS_URL`, each test on a fresh distributed database (not
//!   part of `ci`: CI does not build Citus; docs/operations.md says how to start a cluster).
//! - `module-cycles` — no import circle between the files of any crate (`module_cycles.rs`).
//! - `ci` — everything CI runs: rustfmt, the import circles, clippy, the whole test suite on
//!   SQLite and PostgreSQL, and the docs. `.ci/run` runs exactly this.

use anyhow::{Context as _, bail};
use sea_orm_migration::MigratorTrait;
use sea_orm_migration::sea_orm::Database;
use tokenvault_migrations::Migrator;

mod apt;
mod bench;
mod bench_db;
mod citus_db;
mod destination;
mod module_cycles;
mod module_graph;
mod workspace;
mod wrk;

use workspace::{DEFAULT_TEST_POSTGRES, cargo, root};

fn ci() -> anyhow::Result<()> {
    let pg = std::env::var("TOKENVAULT_TEST_DATABASE_URL")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| DEFAULT_TEST_POSTGRES.to_string());
    eprintln!("xtask: PostgreSQL tests use {pg}");
    cargo(&["fmt", "--all", "--", "--check"], &[])?;
    module_cycles::check()?;
    cargo(
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--locked",
            "--",
            "-D",
            "warnings",
        ],
        &[],
    )?;
    apt::ensure_browser()?;
    cargo(
        &["test", "--workspace", "--locked", "--no-fail-fast"],
        &[("TOKENVAULT_TEST_DATABASE_URL", pg.as_str())],
    )?;
    cargo(
        &["doc", "--workspace", "--no-deps", "--locked"],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )?;
    eprintln!("xtask: ci passed");
    Ok(())
}

/// The suites that run against a database, on a Citus coordinator. The harness
/// (`tokenvault_persistence::testing`) makes each test's database a Citus database of the
/// coordinator's cluster, so migrating it distributes the schema.
fn citus(filters: &[&str]) -> anyhow::Result<()> {
    let url = std::env::var("TOKENVAULT_TEST_CITUS_URL")
        .ok()
        .filter(|v| !v.is_empty())
        .context(
            "set TOKENVAULT_TEST_CITUS_URL to a Citus coordinator with its workers added \
             (docs/operations.md, \"Distributed PostgreSQL (Citus)\")",
        )?;
    eprintln!("xtask: Citus tests use {url}");
    let mut args = vec![
        "test",
        "--locked",
        "--no-fail-fast",
        "-p",
        "tokenvault-persistence",
        "-p",
        "tokenvault-tests",
        "--",
    ];
    args.extend_from_slice(filters);
    cargo(&args, &[("TOKENVAULT_TEST_DATABASE_URL", url.as_str())])?;
    eprintln!("xtask: citus passed");
    Ok(())
}

fn openapi(check: bool) -> anyhow::Result<()> {
    let path = root().join("docs/openapi.json");
    let current = tokenvault_http::openapi::document();
    if check {
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != current {
            bail!("docs/openapi.json is stale: run `cargo xtask openapi`");
        }
        eprintln!("xtask: docs/openapi.json is current");
    } else {
        std::fs::write(&path, current).context("cannot write docs/openapi.json")?;
        eprintln!("xtask: wrote {}", path.display());
    }
    Ok(())
}

async fn migrate(action: &str) -> anyhow::Result<()> {
    let url = match std::env::var("DATABASE_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => {
            std::fs::create_dir_all("data").context("cannot create ./data")?;
            "sqlite://data/tokenvault.db?mode=rwc".to_string()
        }
    };
    let db = Database::connect(&url).await.context("cannot connect")?;
    match action {
        "up" => {
            Migrator::up(&db, None).await?;
            let distributed = tokenvault_migrations::citus::distribute(&db).await?;
            eprintln!("xtask: Citus: {distributed:?}");
        }
        "down" => Migrator::down(&db, Some(1)).await?,
        "status" => Migrator::status(&db).await?,
        "fresh" => Migrator::fresh(&db).await?,
        other => bail!("unknown migrate action {other:?} (up, down, status, fresh)"),
    }
    for m in Migrator::get_migration_with_status(&db).await? {
        println!("{:?}\t{}", m.status(), m.name());
    }
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["ci"] => ci(),
        ["module-cycles"] => module_cycles::check(),
        ["citus", rest @ ..] => citus(rest),
        ["openapi"] => openapi(false),
        ["openapi", "--check"] => openapi(true),
        ["migrate", action] => migrate(action).await,
        ["bench", rest @ ..] => bench::bench(rest).await,
        _ => {
            eprintln!(
                "usage: cargo xtask <ci | citus [FILTER…] | openapi [--check] | migrate up|down|status|fresh | \
                 bench [--db sqlite|postgres|both] [--duration S] [--connections N]>"
            );
            std::process::exit(2);
        }
    }
}
