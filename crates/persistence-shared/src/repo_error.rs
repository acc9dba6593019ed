//! The one translation of SQL errors into the ports' error contract, below every module that
//! runs a statement.

use sea_orm::{DbErr, RuntimeErr, SqlErr};
use tokenvault_domain::RepoError;

/// The one translation of SQL errors into the ports' error contract.
pub fn repo_err(err: DbErr) -> RepoError {
    match sql_err(&err) {
        Some(SqlErr::UniqueConstraintViolation(what)) => RepoError::Conflict(what),
        Some(SqlErr::ForeignKeyConstraintViolation(what)) => RepoError::Gone(what),
        _ if node_unreachable(&err) => RepoError::Unavailable(Box::new(err)),
        _ => RepoError::Backend(Box::new(err)),
    }
}

/// Whether the database answered that a node it needs cannot be reached: a connection
/// failure (`08006`, `08001`) reported by the server itself (Citus: "connection to the remote
/// node … failed"), never a failure of this process's own connection, nor another code of
/// the class (a protocol violation, `08P01`, is this process's bug: a 500, not a retry).
fn node_unreachable(err: &DbErr) -> bool {
    let (DbErr::Exec(RuntimeErr::SqlxError(e)) | DbErr::Query(RuntimeErr::SqlxError(e))) = err
    else {
        return false;
    };
    sqlx_node_unreachable(e)
}

/// `node_unreachable` of a driver error (the writers' own statements).
pub fn sqlx_node_unreachable(err: &sea_orm::sqlx::Error) -> bool {
    match err {
        sea_orm::sqlx::Error::Database(db) => {
            matches!(db.code().as_deref(), Some("08006" | "08001"))
        }
        _ => false,
    }
}

/// A constraint violation, as SeaORM reads it from the SQLSTATE, or as Citus reports it from a
/// statement it pulls to the coordinator and copies out to the shards (`INSERT … SELECT` from
/// `UNNEST` or `VALUES`): SQLSTATE `XX000`, the worker's message, which names the shard's
/// index (`tokens_pkey_102017`, so a test of the name by substring still holds).
pub fn sql_err(err: &DbErr) -> Option<SqlErr> {
    err.sql_err().or_else(|| copied_out(err))
}

fn copied_out(err: &DbErr) -> Option<SqlErr> {
    let (DbErr::Exec(RuntimeErr::SqlxError(e)) | DbErr::Query(RuntimeErr::SqlxError(e))) = err
    else {
        return None;
    };
    let sea_orm::sqlx::Error::Database(db) = &**e else {
        return None;
    };
    if db.code().as_deref() != Some("XX000") {
        return None;
    }
    let message = db.message();
    if message.starts_with("duplicate key value violates unique constraint") {
        Some(SqlErr::UniqueConstraintViolation(message.to_string()))
    } else if (message.starts_with("insert or update on table ")
        || message.starts_with("update or delete on table "))
        && message.contains("violates foreign key constraint")
    {
        Some(SqlErr::ForeignKeyConstraintViolation(message.to_string()))
    } else {
        None
    }
}
