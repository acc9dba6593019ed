//! The checks behind `GET /ready`: the database answers, a code worker can run.

use tokenvault_code::QuickJsRunner;
use tokenvault_http::ready::ReadyCheck;
use tokenvault_persistence::DatabaseConnection;

/// The database answers a round trip (`SELECT 1` through the pool).
pub struct DatabaseReady(pub DatabaseConnection);

#[async_trait::async_trait]
impl ReadyCheck for DatabaseReady {
    fn name(&self) -> &'static str {
        "database"
    }

    async fn check(&self) -> Result<(), String> {
        self.0.ping().await.map_err(|e| e.to_string())
    }
}

/// A code worker is alive ([`QuickJsRunner::check_ready`], which starts one when none is).
pub struct WorkersReady(pub QuickJsRunner);

#[async_trait::async_trait]
impl ReadyCheck for WorkersReady {
    fn name(&self) -> &'static str {
        "code_workers"
    }

    async fn check(&self) -> Result<(), String> {
        self.0.check_ready()
    }
}
