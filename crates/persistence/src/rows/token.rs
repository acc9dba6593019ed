//! The `tokens` rows: the domain's [`StoredToken`], what a failed write means, and which rows
//! are live.

use std::collections::BTreeMap;

use sea_orm::ActiveValue::Set;
use sea_orm::{ColumnTrait, Condition, DbErr, SqlErr};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::ports::TokenWrite;
use tokenvault_domain::token::StoredToken;

use crate::entity::token;
use crate::repo_err;
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
