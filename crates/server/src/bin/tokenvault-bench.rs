//! `tokenvault-bench`: the measuring commands of `cargo xtask bench`, built beside `tokenvault`
//! from the same sources but not shipped with it (the image and the packages install
//! `tokenvault` only). Each adds a tenant and rows to the configured database.
//!
//! - `ceilings`: what the storage and the cipher reach on this machine without HTTP, as JSON;
//! - `fill --tenant T --count N`: N tokens added to a tenant through the storage layer.
//!
//! jemalloc is the allocator, as in `tokenvault`; the bench gives it the server's settings
//! through `_RJEM_MALLOC_CONF`.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use tokenvault_server::Config;

#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// TokenVault's measuring commands, for `cargo xtask bench`.
#[derive(Parser)]
#[command(version)]
struct Cli {
    /// TOML configuration file (default: $TOKENVAULT_CONFIG, else ./tokenvault.toml if present).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Measure what the storage and the cipher reach on this machine, without HTTP, and print
    /// it as JSON. It adds a tenant and rows to the configured database, so it refuses one
    /// that holds other tenants.
    Ceilings {
        /// Seconds each measurement runs.
        #[arg(long, default_value_t = 5)]
        duration: u64,
        /// Concurrent writers and readers.
        #[arg(long, default_value_t = 16)]
        concurrency: usize,
        /// Measure even though the database holds other tenants.
        #[arg(long)]
        allow_other_tenants: bool,
    },
    /// Add COUNT tokens to a tenant through the storage layer, for measuring at scale; prints
    /// how many were added.
    Fill {
        /// The tenant.
        #[arg(long)]
        tenant: uuid::Uuid,
        /// How many tokens.
        #[arg(long)]
        count: u64,
    },
}

fn main() -> anyhow::Result<()> {
    // The vault it opens starts code workers by running this same executable, as `tokenvault`.
    tokenvault_server::enter(run)
}

async fn run() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let config = Config::load(cli.config.as_deref()).context("invalid configuration")?;
    tokenvault_server::init_logs(&config)?;
    match cli.command {
        Command::Ceilings {
            duration,
            concurrency,
            allow_other_tenants,
        } => {
            let measured = tokenvault_server::ceilings::measure(
                &config,
                std::time::Duration::from_secs(duration),
                concurrency,
                allow_other_tenants,
            )
            .await?;
            println!("{}", serde_json::to_string_pretty(&measured)?);
        }
        Command::Fill { tenant, count } => {
            let added = tokenvault_server::ceilings::fill(&config, tenant, count).await?;
            println!("{added}");
        }
    }
    Ok(())
}
