//! The `tokens` rows: the domain's [`StoredToken`], what a failed write means, and which rows
//! are live.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use rusqlite::types::Value as SqlValue;
use sea_orm::ActiveValue::Set;
use sea_orm::{ColumnTrait, Condition, DbErr, SqlErr};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokenvault_domain::RepoError;
use tokenvault_domain::ports::TokenWrite;
use tokenvault_domain::token::StoredToken;

use super::Fields;
use crate::entity::token;
use crate::repo_error::repo_err;
use crate::stamp::{stamp, unstamp};

/// A unique violation, told apart by the index it hit; other errors are backend failures.
pub(crate) fn write_conflict(err: DbErr) -> Result<TokenWrite, RepoError> {
    match err.sql_err() {
        Some(SqlErr::UniqueConstraintViolation(what)) if what.contains("dedup") => {
            Ok(TokenWrite::DuplicateFingerprint)
        }
        Some(SqlErr::UniqueConstraintViolation(_)) => Ok(TokenWrite::DuplicateId),
        Some(SqlErr::ForeignKeyConstraintViolation(_)) => Ok(TokenWrite::Missing),
        _ => Err(repo_err(err)),
    }
}

pub(crate) fn metadata_json(t: &StoredToken) -> String {
    serde_json::to_string(&t.metadata).unwrap_or_else(|_| "{}".into())
}

/// The order rows are inserted in on PostgreSQL: the unique indexes' keys (tenant, container,
/// dedup key, then id). Writers that insert several rows take their index entries in it, so
/// two never wait on each other's uncommitted entries in opposite orders (a deadlock;
/// docs/persistence.md, "Lock order on PostgreSQL").
pub(crate) fn insert_order(a: &StoredToken, b: &StoredToken) -> Ordering {
    (a.tenant_id, &a.container, &a.dedup_key, &a.id).cmp(&(
        b.tenant_id,
        &b.container,
        &b.dedup_key,
        &b.id,
    ))
}

pub(crate) fn to_active(t: &StoredToken) -> token::ActiveModel {
    token::ActiveModel {
        tenant_id: Set(t.tenant_id),
        id: Set(t.id.clone()),
        token_type: Set(t.token_type.clone()),
        container: Set(t.container.clone()),
        metadata: Set(metadata_json(t)),
        data: Set(t.data.clone()),
        mask: Set(t.mask.clone()),
        fingerprint: Set(t.fingerprint.clone()),
        dedup_key: Set(t.dedup_key.clone()),
        fingerprint_expression: Set(t.fingerprint_expression.clone()),
        created_by: Set(t.created_by),
        created_at: Set(stamp(t.created_at)),
        modified_by: Set(t.modified_by),
        modified_at: Set(t.modified_at.map(stamp)),
        expires_at: Set(t.expires_at.map(stamp)),
        deduplicate: Set(t.deduplicate),
        version: Set(t.version),
    }
}

pub(crate) fn to_domain(m: token::Model) -> Result<StoredToken, RepoError> {
    let metadata: BTreeMap<String, String> = serde_json::from_str(&m.metadata)
        .map_err(|_| RepoError::Backend("stored token metadata is unreadable".into()))?;
    Ok(StoredToken {
        id: m.id,
        tenant_id: m.tenant_id,
        token_type: m.token_type,
        container: m.container,
        metadata,
        data: m.data,
        mask: m.mask,
        fingerprint: m.fingerprint,
        dedup_key: m.dedup_key,
        fingerprint_expression: m.fingerprint_expression,
        created_by: m.created_by,
        created_at: unstamp(m.created_at),
        modified_by: m.modified_by,
        modified_at: m.modified_at.map(unstamp),
        expires_at: m.expires_at.map(unstamp),
        deduplicate: m.deduplicate,
        version: m.version,
    })
}

/// Not expired at `now`.
pub(crate) fn live(now: OffsetDateTime) -> Condition {
    Condition::any()
        .add(token::Column::ExpiresAt.is_null())
        .add(token::Column::ExpiresAt.gt(stamp(now)))
}

/// A `tokens` row read in the entity's column order ([`super::columns`]).
pub(crate) fn from_sqlite(f: &mut Fields<'_, '_>) -> rusqlite::Result<token::Model> {
    f.table::<token::Column, _>(&[], |f| {
        Ok(token::Model {
            tenant_id: f.uuid(token::Column::TenantId)?,
            id: f.get(token::Column::Id)?,
            token_type: f.get(token::Column::TokenType)?,
            container: f.get(token::Column::Container)?,
            metadata: f.get(token::Column::Metadata)?,
            data: f.get(token::Column::Data)?,
            mask: f.get(token::Column::Mask)?,
            fingerprint: f.get(token::Column::Fingerprint)?,
            dedup_key: f.get(token::Column::DedupKey)?,
            fingerprint_expression: f.get(token::Column::FingerprintExpression)?,
            created_by: f.opt_uuid(token::Column::CreatedBy)?,
            created_at: f.time(token::Column::CreatedAt)?,
            modified_by: f.opt_uuid(token::Column::ModifiedBy)?,
            modified_at: f.opt_time(token::Column::ModifiedAt)?,
            expires_at: f.opt_time(token::Column::ExpiresAt)?,
            deduplicate: f.get(token::Column::Deduplicate)?,
            version: f.get(token::Column::Version)?,
        })
    })
}

/// The columns a new token is written with by the group writers (`group_commit.rs`,
/// `pg_group.rs`): all but `version`, which starts at the column's default, 0, as every create
/// sets it.
pub(crate) const NOT_INSERTED: &[token::Column] = &[token::Column::Version];

/// A new token's values as the SQLite writer binds them, in the order of
/// `columns::<token::Column>(None, NOT_INSERTED)`: UUIDs as 16 bytes and timestamps as
/// fixed-width RFC 3339 text, as sqlx binds them. Made by the caller, off the writer thread.
pub(crate) fn to_sqlite(t: StoredToken) -> Result<Vec<SqlValue>, RepoError> {
    let time = |t: OffsetDateTime| {
        stamp(t)
            .format(&Rfc3339)
            .map(SqlValue::Text)
            .map_err(|e| RepoError::Backend(Box::new(e)))
    };
    let opt_time = |t: Option<OffsetDateTime>| t.map_or(Ok(SqlValue::Null), time);
    let uuid = |u: uuid::Uuid| SqlValue::Blob(u.as_bytes().to_vec());
    let opt_uuid = |u: Option<uuid::Uuid>| u.map_or(SqlValue::Null, uuid);
    let opt_text = |s: Option<String>| s.map_or(SqlValue::Null, SqlValue::Text);
    let metadata = metadata_json(&t);
    Ok(vec![
        uuid(t.tenant_id),
        SqlValue::Text(t.id),
        SqlValue::Text(t.token_type),
        SqlValue::Text(t.container),
        SqlValue::Text(metadata),
        SqlValue::Blob(t.data),
        t.mask.map_or(SqlValue::Null, SqlValue::Blob),
        opt_text(t.fingerprint),
        opt_text(t.dedup_key),
        opt_text(t.fingerprint_expression),
        opt_uuid(t.created_by),
        time(t.created_at)?,
        opt_uuid(t.modified_by),
        opt_time(t.modified_at)?,
        opt_time(t.expires_at)?,
        t.deduplicate
            .map_or(SqlValue::Null, |d| SqlValue::Integer(i64::from(d))),
    ])
}

/// A new token of tenant 1 with the least set (unit tests).
#[cfg(test)]
pub(crate) fn sample(id: &str) -> StoredToken {
    StoredToken {
        id: id.into(),
        tenant_id: uuid::Uuid::from_u128(1),
        token_type: "token".into(),
        container: "/".into(),
        metadata: BTreeMap::new(),
        data: vec![1],
        mask: None,
        fingerprint: None,
        dedup_key: None,
        fingerprint_expression: None,
        created_by: None,
        created_at: OffsetDateTime::UNIX_EPOCH,
        modified_by: None,
        modified_at: None,
        expires_at: None,
        deduplicate: None,
        version: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rows::column_count;

    #[test]
    fn a_new_rows_values_are_one_per_inserted_column() {
        let mut row = sample("t");
        row.deduplicate = Some(true);
        let values = to_sqlite(row).unwrap();
        assert_eq!(values.len(), column_count::<token::Column>(NOT_INSERTED));
        assert_eq!(values[15], SqlValue::Integer(1), "deduplicate, last");
    }
}
