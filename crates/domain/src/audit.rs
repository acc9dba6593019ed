//! The audit log (docs/decisions.md §11): who did what to which resource, never the data.
//! Entries are chained per tenant: each entry's hash is a keyed MAC over the previous hash, its
//! sequence number and its fields, so an edited, inserted or deleted row breaks the chain.

use time::OffsetDateTime;
use uuid::Uuid;

/// The kinds of resource the log records, as `(value, display name)`: every `entity_type`
/// an event carries is one of these values (`GET /logs/entity-types`).
pub const ENTITY_TYPES: [(&str, &str); 7] = [
    ("application", "Application"),
    ("formula", "Reactor Formula"),
    ("proxy", "Proxy"),
    ("reactor", "Reactor"),
    ("session", "Session"),
    ("tenant", "Tenant"),
    ("token", "Token"),
];

/// Who acted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActorType {
    /// An application's key.
    Application,
    /// A session's key.
    Session,
    /// The server itself (command line, bootstrap, background jobs).
    System,
    /// A caller without a key (a proxy that requires no authentication).
    Anonymous,
}

impl ActorType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Application => "application",
            Self::Session => "session",
            Self::System => "system",
            Self::Anonymous => "anonymous",
        }
    }

    /// Parses the wire name.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "application" => Some(Self::Application),
            "session" => Some(Self::Session),
            "system" => Some(Self::System),
            "anonymous" => Some(Self::Anonymous),
            _ => None,
        }
    }
}

/// One recorded action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditEvent {
    /// Identifier.
    pub id: Uuid,
    /// The tenant it happened in.
    pub tenant_id: Uuid,
    /// Who acted.
    pub actor_type: ActorType,
    /// The acting application or session; `None` for the server itself.
    pub actor_id: Option<Uuid>,
    /// What was done: `create`, `update`, `delete`, `regenerate`, `read`, `use`, `invoke`,
    /// `authorize`, `associate`, `dissociate`, `search` (entity id `*`).
    pub operation: &'static str,
    /// To what kind of resource: `application`, `tenant`, `token`, `proxy`, `reactor`,
    /// `formula`, `session`.
    pub entity_type: &'static str,
    /// Which one.
    pub entity_id: String,
    /// The request's trace id.
    pub trace_id: Option<String>,
    /// When (microseconds, as stored).
    pub created_at: OffsetDateTime,
}

/// An event as stored: its place in the tenant's chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditEntry {
    /// The event; `operation` and `entity_type` read back from storage are owned strings.
    pub event: StoredEvent,
    /// 1, 2, 3, … per tenant.
    pub seq: i64,
    /// MAC over the previous hash, `seq` and the event.
    pub hash: String,
}

/// An event read back (names as stored).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredEvent {
    /// Identifier.
    pub id: Uuid,
    /// Tenant.
    pub tenant_id: Uuid,
    /// Who acted (as stored; an unknown name stays as it is and fails verification).
    pub actor_type: String,
    /// The acting application or session.
    pub actor_id: Option<Uuid>,
    /// What was done.
    pub operation: String,
    /// Kind of resource.
    pub entity_type: String,
    /// Which one.
    pub entity_id: String,
    /// Trace id.
    pub trace_id: Option<String>,
    /// When.
    pub created_at: OffsetDateTime,
}

impl From<&AuditEvent> for StoredEvent {
    fn from(e: &AuditEvent) -> Self {
        Self {
            id: e.id,
            tenant_id: e.tenant_id,
            actor_type: e.actor_type.as_str().to_string(),
            actor_id: e.actor_id,
            operation: e.operation.to_string(),
            entity_type: e.entity_type.to_string(),
            entity_id: e.entity_id.clone(),
            trace_id: e.trace_id.clone(),
            created_at: e.created_at,
        }
    }
}

/// The last entry of a tenant's chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditHead {
    /// Its sequence number.
    pub seq: i64,
    /// Its hash.
    pub hash: String,
}

/// What an append did (`AuditRepository::append`). Whatever it did not write, it wrote nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppendOutcome {
    /// The entries are in the chain and the head is the last of them.
    Appended,
    /// The head was not the expected one: another appender (another instance) moved it first.
    /// Build on the new head and try again.
    HeadMoved,
    /// The head was the expected one, yet a (tenant, sequence) place of the entries was taken
    /// already: a row lies beyond the head that no append wrote (planted, or left behind by a
    /// deleted head). The chain is broken, and no append can pass that row until it is removed;
    /// trying again changes nothing.
    SeqTaken,
}

/// Filters of `GET /logs`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// Only this kind of resource.
    pub entity_type: Option<String>,
    /// Only this resource.
    pub entity_id: Option<String>,
    /// Only entries at or after.
    pub start: Option<OffsetDateTime>,
    /// Only entries at or before.
    pub end: Option<OffsetDateTime>,
}

/// The bytes the MAC of entry `seq` covers: the previous hash, `seq` and every field, each
/// length-prefixed so that no two different entries share an input.
pub fn chain_input(previous: &str, seq: i64, e: &StoredEvent) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    let mut field = |bytes: &[u8]| {
        out.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
        out.extend_from_slice(bytes);
    };
    field(b"tokenvault audit v1");
    field(previous.as_bytes());
    field(&seq.to_be_bytes());
    field(e.id.as_bytes());
    field(e.tenant_id.as_bytes());
    field(e.actor_type.as_bytes());
    field(
        e.actor_id
            .map(|a| *a.as_bytes())
            .as_ref()
            .map_or(&[][..], |a| &a[..]),
    );
    field(e.operation.as_bytes());
    field(e.entity_type.as_bytes());
    field(e.entity_id.as_bytes());
    field(e.trace_id.as_deref().unwrap_or_default().as_bytes());
    let micros = e.created_at.unix_timestamp_nanos() / 1_000;
    field(&micros.to_be_bytes());
    out
}

/// Where a tenant's chain breaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditBreak {
    /// The tenant.
    pub tenant_id: Uuid,
    /// The first sequence number at which the chain does not hold.
    pub seq: i64,
    /// The entry found there, if any.
    pub entry_id: Option<Uuid>,
    /// What is wrong.
    pub reason: String,
}

/// The outcome of verifying one tenant's chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditVerification {
    /// The tenant.
    pub tenant_id: Uuid,
    /// Entries checked.
    pub entries: u64,
    /// The head the walk ended on, read again at the end (keep it outside the database: a later
    /// run must find at least this sequence with this hash, which rewinding the log cannot
    /// fake).
    pub head: Option<AuditHead>,
    /// The first break, if any.
    pub broken: Option<AuditBreak>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event() -> StoredEvent {
        StoredEvent {
            id: Uuid::from_u128(1),
            tenant_id: Uuid::from_u128(2),
            actor_type: "application".into(),
            actor_id: Some(Uuid::from_u128(3)),
            operation: "create".into(),
            entity_type: "token".into(),
            entity_id: "abc".into(),
            trace_id: Some("t".into()),
            created_at: OffsetDateTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn every_field_changes_the_input() {
        let base = chain_input("prev", 1, &event());
        let mut variants = vec![
            chain_input("prev2", 1, &event()),
            chain_input("prev", 2, &event()),
        ];
        let edits: [fn(&mut StoredEvent); 7] = [
            |e| e.actor_id = None,
            |e| e.operation = "delete".into(),
            |e| e.entity_type = "tokens".into(),
            |e| e.entity_id = "abd".into(),
            |e| e.trace_id = None,
            |e| e.created_at += time::Duration::microseconds(1),
            |e| e.actor_type = "session".into(),
        ];
        for edit in edits {
            let mut e = event();
            edit(&mut e);
            variants.push(chain_input("prev", 1, &e));
        }
        for v in variants {
            assert_ne!(v, base);
        }
        // Length prefixes: moving a byte between adjacent fields changes the input.
        let mut a = event();
        a.entity_type = "token".into();
        a.entity_id = "xabc".into();
        let mut b = event();
        b.entity_type = "tokenx".into();
        b.entity_id = "abc".into();
        assert_ne!(chain_input("p", 1, &a), chain_input("p", 1, &b));
    }
}
