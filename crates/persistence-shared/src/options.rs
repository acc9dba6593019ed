//! How a database is opened (`DbOptions`) and why it could not be (`ConnectError`): shared by
//! each database's `open` and the adapter's `connect`.

/// Why the database could not be opened or migrated.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The URL names neither `sqlite:` nor `postgres:`.
    #[error("database URL must start with sqlite: or postgres:")]
    UnsupportedUrl,
    /// The driver failed to connect.
    #[error("cannot connect to the database: {0}")]
    Connect(String),
    /// A migration failed.
    #[error("cannot migrate the database: {0}")]
    Migrate(String),
}

/// How a pool is opened.
#[derive(Clone, Copy, Debug)]
pub struct DbOptions {
    /// Pool size.
    pub max_connections: u32,
    /// SQLite only: `synchronous=NORMAL` instead of `FULL` (faster; an acknowledged commit can
    /// be lost on power loss).
    pub sqlite_synchronous_normal: bool,
    /// PostgreSQL only: keep the keys seen in memory, with a thread and a connection that listen
    /// for their changes (a server; a CLI command reads each key it needs).
    pub keys_in_memory: bool,
}

impl DbOptions {
    /// `max_connections` connections, durable SQLite (`synchronous=FULL`), keys in memory.
    pub fn new(max_connections: u32) -> Self {
        Self {
            max_connections,
            sqlite_synchronous_normal: false,
            keys_in_memory: true,
        }
    }
}
