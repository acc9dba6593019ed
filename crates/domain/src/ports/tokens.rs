//! Storage of tokens and their associations, and the filters of a token list.

use async_trait::async_trait;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::error::RepoError;
use crate::page::{Page, PageRequest};
use crate::token::StoredToken;

/// What inserting a token found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenWrite {
    /// Stored.
    Done,
    /// Another token of the tenant has this id.
    DuplicateId,
    /// Another token of the tenant has this dedup key.
    DuplicateFingerprint,
    /// No such token (updates).
    Missing,
}

/// Which tokens a list may return.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Visibility {
    /// Every container.
    All,
    /// Only containers under one of these prefixes (none: no token).
    Prefixes(Vec<String>),
    /// Only tokens for which every condition of at least one clause holds (none: no token).
    Conditions(Vec<Vec<crate::access::RuleCondition>>),
    /// Tokens visible under both.
    Both(Box<Visibility>, Box<Visibility>),
    /// Tokens visible under either.
    Either(Box<Visibility>, Box<Visibility>),
}

impl Visibility {
    /// Tokens visible under both `a` and `b` (`All` drops out).
    pub fn both(a: Self, b: Self) -> Self {
        match (a, b) {
            (Self::All, other) | (other, Self::All) => other,
            (a, b) => Self::Both(Box::new(a), Box::new(b)),
        }
    }

    /// Whether the container alone decides, for every container (no session conditions).
    pub fn decided_by_container(&self) -> bool {
        match self {
            Self::All | Self::Prefixes(_) => true,
            Self::Conditions(_) => false,
            Self::Both(a, b) | Self::Either(a, b) => {
                a.decided_by_container() && b.decided_by_container()
            }
        }
    }

    /// Whether every token in `container` is visible; `None` when that depends on more than
    /// the container (session conditions). A prefix covers the containers that start with it,
    /// as the query's `LIKE 'prefix%'` does (containers and prefixes are stored lower-case).
    pub fn admits_container(&self, container: &str) -> Option<bool> {
        match self {
            Self::All => Some(true),
            Self::Prefixes(prefixes) => Some(prefixes.iter().any(|p| container.starts_with(p))),
            Self::Conditions(_) => None,
            Self::Both(a, b) => {
                Some(a.admits_container(container)? && b.admits_container(container)?)
            }
            Self::Either(a, b) => {
                Some(a.admits_container(container)? || b.admits_container(container)?)
            }
        }
    }
}

/// Filters of a token list; every filter is applied in the query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenFilter {
    /// Only these ids (none: all).
    pub ids: Vec<String>,
    /// Only these type names (none: all).
    pub types: Vec<String>,
    /// Exact metadata matches, all required.
    pub metadata: Vec<(String, String)>,
    /// Containers the caller may read.
    pub visibility: Visibility,
    /// Only children of this token.
    pub parent: Option<String>,
}

/// One condition of a token search (`POST /tokens/search`) as the store evaluates it: the
/// query's `data` and `metadata` values already blind index terms (`search_index.rs`), so no
/// value reaches storage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SearchCondition {
    /// Every one holds.
    All(Vec<SearchCondition>),
    /// At least one holds.
    Any(Vec<SearchCondition>),
    /// It does not hold.
    Not(Box<SearchCondition>),
    /// The token's id.
    Id(String),
    /// Its type name.
    Type(String),
    /// One of its blind index terms (a search index's value, or a metadata entry).
    Term(String),
    /// Its fingerprint.
    Fingerprint(String),
    /// Exactly this container.
    Container(String),
    /// This container or one below it.
    ContainerUnder(String),
    /// Its creating application.
    CreatedBy(Uuid),
    /// Its last modifying application.
    ModifiedBy(Uuid),
    /// Created within the range.
    CreatedAt(crate::search_query::TimeRange),
    /// Last modified within the range (never modified: no match).
    ModifiedAt(crate::search_query::TimeRange),
}

impl SearchCondition {
    /// Whether every token it matches holds one of a few index entries it names (a term, an
    /// id): then its matches are best found through those, whatever the tenant's size. Any
    /// other condition (a type, a container, a date, a negation) may match most of the tenant.
    pub fn found_through_terms(&self) -> bool {
        match self {
            Self::Term(_) | Self::Id(_) => true,
            Self::All(items) => items.iter().any(Self::found_through_terms),
            Self::Any(items) => items.iter().all(Self::found_through_terms),
            _ => false,
        }
    }
}

/// Storage of tokens and their associations. Expired tokens
/// (`expires_at` at or before `now`) are never returned.
///
/// # Errors
/// `RepoError::Backend` for any storage failure; conflicts are reported in [`TokenWrite`].
#[async_trait]
pub trait TokenRepository: Send + Sync {
    /// Stores a new token.
    async fn insert(&self, token: &StoredToken) -> Result<TokenWrite, RepoError>;

    /// Stores several tokens atomically: all or none (`Done` or a conflict one of them hit; an
    /// adapter may write them in an order of its own, so not necessarily the first given).
    async fn insert_all(&self, tokens: &[StoredToken]) -> Result<TokenWrite, RepoError>;

    /// The live token `id` of the tenant.
    async fn get(
        &self,
        tenant_id: Uuid,
        id: &str,
        now: OffsetDateTime,
    ) -> Result<Option<StoredToken>, RepoError>;

    /// The live tokens among `ids` (one query).
    async fn get_many(
        &self,
        tenant_id: Uuid,
        ids: &[String],
        now: OffsetDateTime,
    ) -> Result<Vec<StoredToken>, RepoError>;

    /// The live token of this type in this container with this fingerprint, made with the
    /// same fingerprint expression (`None`: the type's default), oldest first. Deduplication
    /// never looks into another container (docs/decisions.md §6).
    async fn find_by_fingerprint(
        &self,
        tenant_id: Uuid,
        token_type: &str,
        container: &str,
        fingerprint: &str,
        expression: Option<String>,
        now: OffsetDateTime,
    ) -> Result<Option<StoredToken>, RepoError>;

    /// Replaces every mutable field of the token if its row is still at `token.version` (the
    /// version read), and moves the version on: `Missing` when the token is gone or another
    /// write came first (the caller reads again to tell which).
    async fn update(&self, token: &StoredToken) -> Result<TokenWrite, RepoError>;

    /// Deletes the tenant's expired tokens that hold one of these `(container, dedup key)`
    /// pairs, so that no expired token blocks a write (they are gone at once, decisions §6,
    /// whether the sweep has run or not); returns how many.
    async fn delete_expired_holders(
        &self,
        tenant_id: Uuid,
        keys: &[(String, String)],
        now: OffsetDateTime,
    ) -> Result<u64, RepoError>;

    /// Deletes the token and its associations; `false` when it did not exist.
    async fn delete(&self, tenant_id: Uuid, id: &str) -> Result<bool, RepoError>;

    /// A page of live tokens, newest first.
    async fn list(
        &self,
        tenant_id: Uuid,
        filter: &TokenFilter,
        page: PageRequest,
        now: OffsetDateTime,
    ) -> Result<Page<StoredToken>, RepoError>;

    /// A page of the live tokens that satisfy `condition` (`None`: every token) and that
    /// `visibility` admits, newest first; the total counts only those.
    async fn search(
        &self,
        tenant_id: Uuid,
        condition: Option<SearchCondition>,
        visibility: &Visibility,
        page: PageRequest,
        now: OffsetDateTime,
    ) -> Result<Page<StoredToken>, RepoError>;

    /// Deletes expired tokens; returns how many.
    async fn delete_expired(&self, now: OffsetDateTime) -> Result<u64, RepoError>;

    /// Links parent → child: `Done`, `DuplicateId` when the link exists, `Missing` when either
    /// token is gone.
    async fn associate(
        &self,
        tenant_id: Uuid,
        parent: &str,
        child: &str,
    ) -> Result<TokenWrite, RepoError>;

    /// Removes a link; `false` when there was none.
    async fn dissociate(
        &self,
        tenant_id: Uuid,
        parent: &str,
        child: &str,
    ) -> Result<bool, RepoError>;
}
#[cfg(test)]
mod tests {
    use super::Visibility;
    use crate::access::{ConditionAttribute, ConditionOperator, RuleCondition};

    fn prefixes(p: &[&str]) -> Visibility {
        Visibility::Prefixes(p.iter().map(|s| (*s).to_string()).collect())
    }

    #[test]
    fn a_container_is_admitted_by_prefix_and_undecided_under_conditions() {
        assert_eq!(Visibility::All.admits_container("/x/"), Some(true));
        let pci = prefixes(&["/pci/", "/bank/"]);
        assert_eq!(pci.admits_container("/pci/high/"), Some(true));
        assert_eq!(pci.admits_container("/pcix/"), Some(false));
        assert_eq!(prefixes(&[]).admits_container("/"), Some(false));
        let conditions = Visibility::Conditions(vec![vec![RuleCondition {
            attribute: ConditionAttribute::Container,
            operator: ConditionOperator::Equals,
            value: "/pci/".into(),
        }]]);
        assert_eq!(conditions.admits_container("/pci/"), None);
        assert!(!conditions.decided_by_container());
        assert!(
            Visibility::Either(Box::new(pci.clone()), Box::new(Visibility::All))
                .decided_by_container()
        );
        let both = Visibility::both(prefixes(&["/pci/"]), conditions.clone());
        assert_eq!(
            both.admits_container("/bank/"),
            Some(false),
            "false either way"
        );
        assert_eq!(both.admits_container("/pci/"), None);
        let either = Visibility::Either(Box::new(prefixes(&["/a/"])), Box::new(prefixes(&["/b/"])));
        assert_eq!(either.admits_container("/b/c/"), Some(true));
        assert_eq!(either.admits_container("/c/"), Some(false));
    }
}
