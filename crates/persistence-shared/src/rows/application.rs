//! The `applications` rows: the domain's [`Application`] and the stored key hash.

use sea_orm::ActiveValue::Set;
use tokenvault_domain::RepoError;
use tokenvault_domain::application::{Application, KeyHash};
use tokenvault_domain::permission::ApplicationType;
use uuid::Uuid;

use super::Fields;
use crate::entity::application;
use crate::grants;
use crate::stamp::{stamp, unstamp};

/// A key hash as stored: lowercase hex.
pub fn hash_hex(hash: &KeyHash) -> String {
    // By table, not `write!`: this runs on every authenticated request, and the formatting
    // machinery showed up in its profile (docs/performance-journal.md).
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(2 * hash.0.len());
    for b in hash.0 {
        hex.push(char::from(DIGITS[usize::from(b >> 4)]));
        hex.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    hex
}

/// The inverse of [`hash_hex`]: `None` unless `text` is 64 hex digits.
pub(crate) fn hash_from_hex(text: &str) -> Option<KeyHash> {
    let bytes = text.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let digit = |b: u8| {
        char::from(b)
            .to_digit(16)
            .and_then(|d| u8::try_from(d).ok())
    };
    let mut out = [0u8; 32];
    for (byte, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
        *byte = (digit(pair[0])? << 4) | digit(pair[1])?;
    }
    Some(KeyHash(out))
}

fn corrupt(what: &str, id: Uuid) -> RepoError {
    RepoError::Backend(format!("stored {what} of application {id} is unreadable").into())
}

/// A stored row made an application.
pub fn to_domain(model: application::Model) -> Result<Application, RepoError> {
    let id = model.id;
    let bad = |what: &str| corrupt(what, id);
    let permissions = grants::parse_permissions(&model.permissions, &bad)?;
    let rules = grants::parse_rules(&model.rules, &bad)?;
    Ok(Application {
        id,
        tenant_id: model.tenant_id,
        name: model.name,
        app_type: ApplicationType::parse(&model.app_type).ok_or_else(|| corrupt("type", id))?,
        permissions,
        rules,
        created_by: model.created_by,
        created_at: unstamp(model.created_at),
        modified_by: model.modified_by,
        modified_at: model.modified_at.map(unstamp),
        expires_at: model.expires_at.map(unstamp),
    })
}

/// An application and its key hash as a row to insert.
pub(crate) fn to_active(app: &Application, key_hash: &KeyHash) -> application::ActiveModel {
    application::ActiveModel {
        id: Set(app.id),
        tenant_id: Set(app.tenant_id),
        name: Set(app.name.clone()),
        app_type: Set(app.app_type.as_str().to_string()),
        permissions: Set(grants::permissions_json(&app.permissions)),
        rules: Set(grants::rules_json(&app.rules)),
        key_hash: Set(hash_hex(key_hash)),
        created_by: Set(app.created_by),
        created_at: Set(stamp(app.created_at)),
        modified_by: Set(app.modified_by),
        modified_at: Set(app.modified_at.map(stamp)),
        expires_at: Set(app.expires_at.map(stamp)),
    }
}

/// An `applications` row read in the entity's column order ([`super::columns`]).
pub fn from_sqlite(f: &mut Fields<'_, '_>) -> rusqlite::Result<application::Model> {
    f.table::<application::Column, _>(&[], |f| {
        Ok(application::Model {
            id: f.uuid(application::Column::Id)?,
            tenant_id: f.uuid(application::Column::TenantId)?,
            name: f.get(application::Column::Name)?,
            app_type: f.get(application::Column::AppType)?,
            permissions: f.get(application::Column::Permissions)?,
            rules: f.get(application::Column::Rules)?,
            key_hash: f.get(application::Column::KeyHash)?,
            created_by: f.opt_uuid(application::Column::CreatedBy)?,
            created_at: f.time(application::Column::CreatedAt)?,
            modified_by: f.opt_uuid(application::Column::ModifiedBy)?,
            modified_at: f.opt_time(application::Column::ModifiedAt)?,
            expires_at: f.opt_time(application::Column::ExpiresAt)?,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_hashes_read_back_as_written() {
        let mut bytes = [0u8; 32];
        for (b, v) in bytes.iter_mut().zip(0u8..) {
            *b = v.wrapping_mul(37).wrapping_add(5);
        }
        let hex = hash_hex(&KeyHash(bytes));
        assert_eq!(hex.len(), 64);
        assert_eq!(hash_from_hex(&hex).map(|h| h.0), Some(bytes));
        assert_eq!(hash_from_hex(&hex.to_uppercase()).map(|h| h.0), Some(bytes));
        assert!(hash_from_hex(&hex[..62]).is_none());
        assert!(hash_from_hex(&format!("{}zz", &hex[..62])).is_none());
        assert!(hash_from_hex(&format!("{}+1", &hex[..62])).is_none());
    }

    /// Stored hashes are lowercase hex: a key created before must still be found.
    #[test]
    fn key_hashes_are_written_as_lowercase_hex() {
        let mut bytes = [0u8; 32];
        bytes[0] = 0x0a;
        bytes[1] = 0xf0;
        bytes[31] = 0xff;
        let hex = hash_hex(&KeyHash(bytes));
        assert_eq!(&hex[..4], "0af0");
        assert_eq!(&hex[4..62], "0".repeat(58));
        assert_eq!(&hex[62..], "ff");
    }
}
