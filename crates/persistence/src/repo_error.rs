//! The one translation of SQL errors into the ports' error contract, below every module that
//! runs a statement.

use sea_orm::{DbErr, SqlErr};
use tokenvault_domain::RepoError;

/// The one translation of SQL errors into the ports' error contract.
pub(crate) fn repo_err(err: DbErr) -> RepoError {
    match err.sql_err() {
        Some(SqlErr::UniqueConstraintViolation(what)) => RepoError::Conflict(what),
        Some(SqlErr::ForeignKeyConstraintViolation(what)) => RepoError::Gone(what),
        _ => RepoError::Backend(Box::new(err)),
    }
}
