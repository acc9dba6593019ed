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
use super::write::{Put, SqliteValues, WriteError, put_row};
use crate::entity::token;
use crate::repo_error::{repo_err, sql_err};
use crate::stamp::{stamp, unstamp};

/// A unique violation, told apart by the index it hit; other errors are backend failures.
pub fn write_conflict(err: DbErr) -> Result<TokenWrite, RepoError> {
    match sql_err(&err) {
        Some(SqlErr::UniqueConstraintViolation(what)) if what.contains("dedup") => {
            Ok(TokenWrite::DuplicateFingerprint)
        }
        Some(SqlErr::UniqueConstraintViolation(_)) => Ok(TokenWrite::DuplicateId),
        Some(SqlErr::ForeignKeyConstraintViolation(_)) => Ok(TokenWrite::Missing),
        _ => Err(repo_err(err)),
    }
}

/// A token's metadata as stored: JSON text.
pub(crate) fn metadata_json(t: &StoredToken) -> String {
    serde_json::to_string(&t.metadata).unwrap_or_else(|_| "{}".into())
}

/// A list column's JSON text: NULL for an empty list (no trigger work, no index entry).
pub(crate) fn list_json(items: &[String]) -> Option<String> {
    (!items.is_empty()).then(|| serde_json::to_string(items).unwrap_or_else(|_| "[]".into()))
}

/// A list column read back (NULL: empty).
fn list_from(text: Option<&str>, what: &str) -> Result<Vec<String>, RepoError> {
    text.map_or(Ok(Vec::new()), |t| {
        serde_json::from_str(t)
            .map_err(|_| RepoError::Backend(format!("stored token {what} are unreadable").into()))
    })
}

/// The order rows are inserted in on PostgreSQL: the unique indexes' keys (tenant, container,
/// dedup key, then id). Writers that insert several rows take their index entries in it, so
/// two never wait on each other's uncommitted entries in opposite orders (a deadlock;
/// docs/persistence.md, "Lock order on PostgreSQL").
pub fn insert_order(a: &StoredToken, b: &StoredToken) -> Ordering {
    (a.tenant_id, &a.container, &a.dedup_key, &a.id).cmp(&(
        b.tenant_id,
        &b.container,
        &b.dedup_key,
        &b.id,
    ))
}

/// A token as a row to insert.
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
        search_indexes: Set(list_json(&t.search_indexes)),
        search_terms: Set(list_json(&t.search_terms)),
        version: Set(t.version),
    }
}

/// A stored row made a token; a row that does not decode is a backend error.
pub fn to_domain(m: token::Model) -> Result<StoredToken, RepoError> {
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
        search_indexes: list_from(m.search_indexes.as_deref(), "search indexes")?,
        search_terms: list_from(m.search_terms.as_deref(), "search terms")?,
        version: m.version,
    })
}

/// Not expired at `now`.
pub fn live(now: OffsetDateTime) -> Condition {
    Condition::any()
        .add(token::Column::ExpiresAt.is_null())
        .add(token::Column::ExpiresAt.gt(stamp(now)))
}

/// A `tokens` row read in the entity's column order ([`super::columns`]).
pub fn from_sqlite(f: &mut Fields<'_, '_>) -> rusqlite::Result<token::Model> {
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
            search_indexes: f.get(token::Column::SearchIndexes)?,
            search_terms: f.get(token::Column::SearchTerms)?,
            version: f.get(token::Column::Version)?,
        })
    })
}

/// The columns a new token is written with by the group writers (`sqlite/group_commit.rs`,
/// `postgres/group.rs`): all but `version`, which starts at the column's default, 0, as every create
/// sets it.
pub const NOT_INSERTED: &[token::Column] = &[token::Column::Version];

/// A new token's values, in the entity's order less [`NOT_INSERTED`] (its `metadata` as JSON
/// text, `metadata_json`): the one list of them every fast path binds, whatever the backend
/// (`sqlite/group_commit.rs` on SQLite, `postgres/group.rs` on PostgreSQL). Timestamps are stamped
/// (`stamp.rs`).
pub fn put_new<'a>(t: &'a StoredToken, lists: &'a NewLists, row: &mut Put<'_, 'a, token::Column>) {
    use token::Column as C;
    row.uuid(C::TenantId, t.tenant_id);
    row.text(C::Id, &t.id);
    row.text(C::TokenType, &t.token_type);
    row.text(C::Container, &t.container);
    row.text(C::Metadata, &lists.metadata);
    row.bytes(C::Data, &t.data);
    row.opt_bytes(C::Mask, t.mask.as_deref());
    row.opt_text(C::Fingerprint, t.fingerprint.as_deref());
    row.opt_text(C::DedupKey, t.dedup_key.as_deref());
    row.opt_text(
        C::FingerprintExpression,
        t.fingerprint_expression.as_deref(),
    );
    row.opt_uuid(C::CreatedBy, t.created_by);
    row.time(C::CreatedAt, stamp(t.created_at));
    row.opt_uuid(C::ModifiedBy, t.modified_by);
    row.opt_time(C::ModifiedAt, t.modified_at.map(stamp));
    row.opt_time(C::ExpiresAt, t.expires_at.map(stamp));
    row.opt_bool(C::Deduplicate, t.deduplicate);
    row.opt_text(C::SearchIndexes, lists.search_indexes.as_deref());
    row.opt_text(C::SearchTerms, lists.search_terms.as_deref());
}

/// A new token's JSON text columns, made once off the writer threads.
#[derive(Clone, Debug)]
pub struct NewLists {
    /// `metadata` (`metadata_json`).
    pub metadata: String,
    /// `search_indexes` (`list_json`).
    pub search_indexes: Option<String>,
    /// `search_terms` (`list_json`).
    pub search_terms: Option<String>,
}

impl NewLists {
    /// The JSON columns of `t`.
    pub fn of(t: &StoredToken) -> Self {
        Self {
            metadata: metadata_json(t),
            search_indexes: list_json(&t.search_indexes),
            search_terms: list_json(&t.search_terms),
        }
    }
}

/// A stamped timestamp as sqlx writes it on SQLite: RFC 3339 text (fixed width, `stamp.rs`).
fn sqlite_text(t: OffsetDateTime) -> Result<String, WriteError> {
    Ok(t.format(&Rfc3339)?)
}

/// A new token's values as the SQLite writer binds them ([`put_new`]). Made by the caller, off
/// the writer thread.
pub fn to_sqlite(t: &StoredToken) -> Result<Vec<SqlValue>, RepoError> {
    let lists = NewLists::of(t);
    let mut values = SqliteValues::new(sqlite_text);
    put_row(&mut values, NOT_INSERTED, |row| put_new(t, &lists, row))
        .map_err(RepoError::Backend)?;
    Ok(values.values)
}

/// A new token of tenant 1 with the least set (unit tests, here and in each database's crate).
#[cfg(any(test, feature = "test-support"))]
pub fn sample(id: &str) -> StoredToken {
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
        search_indexes: Vec::new(),
        search_terms: Vec::new(),
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
        let values = to_sqlite(&row).unwrap();
        assert_eq!(values.len(), column_count::<token::Column>(NOT_INSERTED));
        assert_eq!(values[15], SqlValue::Integer(1), "deduplicate, last");
    }
}
