//! `tokenvault`: parse the command line and configuration, then serve or run a command.

use std::net::TcpListener;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use tokenvault_server::{Config, rotate_master_key, run, tenant_commands, verify_audit};

/// jemalloc instead of glibc's malloc for Rust's allocations: under load about a tenth of the
/// server's own CPU went to glibc's allocator (docs/performance-journal.md). SQLite, aws-lc and QuickJS
/// keep glibc's malloc (the crate's symbols are prefixed).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's settings, read at its start (the `const char *` it declares weak; the form of
/// the crate's own tests): two arenas (its default, four per core, spread the server's many
/// threads over eight, and their freed pages with them), and freed pages given back to the
/// system within a second instead of ten. Peak RSS under the bench's PostgreSQL run: 104 MiB
/// with the defaults (docs/performance-journal.md). `_RJEM_MALLOC_CONF` in the environment overrides.
#[unsafe(export_name = "_rjem_malloc_conf")]
#[allow(unsafe_code, non_upper_case_globals)]
pub static malloc_conf: Option<&'static std::ffi::c_char> =
    // SAFETY: the pointer of a NUL-terminated literal, valid for the program's life, which
    // jemalloc only reads.
    Some(unsafe { &*c"narenas:2,dirty_decay_ms:1000".as_ptr() });

/// A self-hostable data-tokenization vault.
#[derive(Parser)]
#[command(name = "tokenvault", version)]
struct Cli {
    /// TOML configuration file (default: $TOKENVAULT_CONFIG, else ./tokenvault.toml if present).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP server (the default).
    Serve,
    /// Bring the configured database's schema up to this version (the server also does it at
    /// start); print the migrations that ran as JSON. No source tree is needed.
    Migrate,
    /// Ask the server of this configuration for GET /ready on loopback; exit 1 unless it is
    /// ready (a container's HEALTHCHECK).
    Healthcheck,
    /// Copy the configured SQLite vault into FILE (a new file) while servers keep serving: one
    /// consistent snapshot (SQLite's online backup API). The master key is not in it. On
    /// PostgreSQL use pg_dump.
    Backup {
        /// The new file.
        file: PathBuf,
    },
    /// Put the backup FILE in place as the configured SQLite vault, which must not exist yet;
    /// refused (nothing written) unless every tenant key in it unwraps under the configured
    /// master key.
    Restore {
        /// The backup.
        file: PathBuf,
    },
    /// Check the configuration.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Manage tenants.
    Tenants {
        #[command(subcommand)]
        command: TenantCommand,
    },
    /// Manage encryption keys.
    Keys {
        #[command(subcommand)]
        command: KeyCommand,
    },
    /// Check the audit log.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Load the configuration (file, then environment) and check every value as the server
    /// would at start; print what is in effect, secrets left out, as JSON. Exit 1 naming the
    /// first wrong key.
    Check,
}

#[derive(Subcommand)]
enum AuditCommand {
    /// Check each tenant's hash chain; print a JSON report naming the first broken entry of
    /// each broken chain, and exit 1 if any is broken.
    Verify {
        /// Only this tenant.
        #[arg(long)]
        tenant: Option<uuid::Uuid>,
    },
}

#[derive(Subcommand)]
enum KeyCommand {
    /// Re-wrap every tenant key under a new master key while servers keep serving. Then run
    /// the servers with the new key as TOKENVAULT_MASTER_KEY; in development mode (no master
    /// key configured) the data directory's master.key is replaced by the new key instead,
    /// the old one kept as master.key.previous. With the master key in Transit
    /// (TOKENVAULT_TRANSIT_ADDRESS): no key file; every tenant key is re-wrapped under the
    /// Transit key's newest version, and any still under a local master key moves to Transit.
    RotateMaster {
        /// File holding the new master key (base64 of 32 bytes); default $TOKENVAULT_NEW_MASTER_KEY.
        #[arg(long)]
        new_key_file: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum TenantCommand {
    /// Create a tenant and print it with its management key as JSON.
    Create {
        /// Tenant name (1..=200 characters).
        #[arg(long)]
        name: String,
        /// Owner UUID (default: a new one).
        #[arg(long)]
        owner: Option<uuid::Uuid>,
    },
    /// Print every tenant (id, name, owner, settings; no keys) as JSON, oldest first.
    List,
    /// Print one tenant and its live tokens per type as JSON.
    Show {
        /// The tenant.
        id: uuid::Uuid,
    },
    /// Delete a tenant and everything it owns (tokens, applications, reactors, proxies, audit
    /// log), for good; its keys stop working at once.
    Delete {
        /// The tenant.
        id: uuid::Uuid,
        /// Confirm: without it nothing is deleted.
        #[arg(long)]
        yes: bool,
    },
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

fn main() -> anyhow::Result<()> {
    tokenvault_server::enter(serve_or_run)
}

async fn serve_or_run() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let config = Config::load(cli.config.as_deref()).context("invalid configuration")?;
    tokenvault_server::init_logs(&config)?;
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => {
            config.check_files()?;
            let listener = TcpListener::bind(&config.http.listen)
                .with_context(|| format!("cannot listen on {}", config.http.listen))?;
            run(config, listener, shutdown_signal()).await
        }
        Command::Healthcheck => match tokenvault_server::healthcheck::check(&config) {
            Ok(body) => {
                println!("{body}");
                Ok(())
            }
            Err(e) => {
                eprintln!("not ready: {e:#}");
                std::process::exit(1);
            }
        },
        Command::Backup { file } => {
            let printed = tokenvault_server::backup::backup(&config, &file).await?;
            println!("{}", serde_json::to_string_pretty(&printed)?);
            Ok(())
        }
        Command::Restore { file } => {
            let printed = tokenvault_server::backup::restore(&config, &file).await?;
            println!("{}", serde_json::to_string_pretty(&printed)?);
            Ok(())
        }
        Command::Migrate => {
            let ran = tokenvault_server::migrate(&config).await?;
            println!("{}", serde_json::json!({ "applied": ran }));
            Ok(())
        }
        Command::Config {
            command: ConfigCommand::Check,
        } => {
            config.check_files()?;
            println!("{}", serde_json::to_string_pretty(&config.summary())?);
            Ok(())
        }
        Command::Keys {
            command: KeyCommand::RotateMaster { new_key_file },
        } if config.keys.transit.is_some() => {
            anyhow::ensure!(
                new_key_file.is_none(),
                "the master key is in Transit: rotate it there (bao write -f \
                 <mount>/keys/<key>/rotate), then run this command without a key file"
            );
            let printed = tokenvault_server::rotate_in_transit(&config).await?;
            println!("{}", serde_json::to_string_pretty(&printed)?);
            Ok(())
        }
        Command::Keys {
            command: KeyCommand::RotateMaster { new_key_file },
        } => {
            let new_key = match new_key_file {
                Some(path) => std::fs::read_to_string(&path)
                    .with_context(|| format!("cannot read {}", path.display()))?,
                None => std::env::var("TOKENVAULT_NEW_MASTER_KEY")
                    .context("give --new-key-file or TOKENVAULT_NEW_MASTER_KEY")?,
            };
            let printed = rotate_master_key(&config, &new_key).await?;
            println!("{}", serde_json::to_string_pretty(&printed)?);
            Ok(())
        }
        Command::Audit {
            command: AuditCommand::Verify { tenant },
        } => {
            let (report, ok) = verify_audit(&config, tenant).await?;
            println!("{}", serde_json::to_string_pretty(&report)?);
            if !ok {
                std::process::exit(1);
            }
            Ok(())
        }
        Command::Tenants { command } => {
            let printed = match command {
                TenantCommand::Create { name, owner } => {
                    tenant_commands::create(&config, &name, owner).await?
                }
                TenantCommand::List => tenant_commands::list(&config).await?,
                TenantCommand::Show { id } => tenant_commands::show(&config, id).await?,
                TenantCommand::Delete { id, yes } => {
                    tenant_commands::delete(&config, id, yes).await?
                }
            };
            println!("{}", serde_json::to_string_pretty(&printed)?);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::Cli;

    /// The measuring commands (`ceilings`, `fill`) add tenants and rows to the configured
    /// database: they are `tokenvault-bench`'s, which is not shipped, and `tokenvault` has
    /// none of them.
    #[test]
    fn the_shipped_binary_has_no_measuring_commands() {
        let help = Cli::command().render_help().to_string();
        for command in ["ceilings", "fill"] {
            assert!(!help.contains(command), "{command} listed:\n{help}");
            assert!(
                Cli::try_parse_from(["tokenvault", command]).is_err(),
                "{command}"
            );
        }
        assert!(Cli::try_parse_from(["tokenvault", "tenants", "list"]).is_ok());
    }
}
