//! Storage of reactor formulas and reactors. Every read and write is confined to one tenant.

use async_trait::async_trait;
use uuid::Uuid;

use crate::error::RepoError;
use crate::formula::Formula;
use crate::page::{Page, PageRequest};
use crate::reactor::Reactor;

/// The outcome of deleting a formula.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormulaDelete {
    /// Deleted.
    Deleted,
    /// No such formula in the tenant.
    Missing,
    /// A reactor still uses it (nothing was deleted).
    InUse,
}

/// Storage of reactor formulas.
///
/// # Errors
/// `RepoError::Conflict` on a duplicate id; `RepoError::Backend` for any storage failure.
#[async_trait]
pub trait FormulaRepository: Send + Sync {
    /// Stores a new formula.
    async fn insert(&self, formula: &Formula) -> Result<(), RepoError>;
    /// The formula, if the tenant has it.
    async fn get(&self, tenant_id: Uuid, id: Uuid) -> Result<Option<Formula>, RepoError>;
    /// The tenant's formulas with these ids (any order; missing ones are left out).
    async fn get_many(&self, tenant_id: Uuid, ids: &[Uuid]) -> Result<Vec<Formula>, RepoError>;
    /// A page of the tenant's formulas, newest first, optionally only these ids and only names
    /// containing `name` (case-insensitive).
    async fn list(
        &self,
        tenant_id: Uuid,
        ids: &[Uuid],
        name: Option<&str>,
        page: PageRequest,
    ) -> Result<Page<Formula>, RepoError>;
    /// Replaces every mutable field; `false` when the formula is gone or, with `unless_lent`,
    /// when it is [`Self::lent`] as the update runs and its stored code is not the new code (the
    /// check and the write are one statement).
    async fn update(&self, formula: &Formula, unless_lent: bool) -> Result<bool, RepoError>;
    /// Whether a reactor with an application (one that still exists) uses the formula: its
    /// code then runs with that application's rights.
    async fn lent(&self, tenant_id: Uuid, id: Uuid) -> Result<bool, RepoError>;
    /// Deletes the formula unless a reactor uses it.
    async fn delete(&self, tenant_id: Uuid, id: Uuid) -> Result<FormulaDelete, RepoError>;
}

/// Storage of reactors.
///
/// # Errors
/// `RepoError::Conflict` on a duplicate id; `RepoError::Backend` for any storage failure.
#[async_trait]
pub trait ReactorRepository: Send + Sync {
    /// Stores a new reactor (its formula exists in the same tenant).
    async fn insert(&self, reactor: &Reactor) -> Result<(), RepoError>;
    /// The reactor, if the tenant has it.
    async fn get(&self, tenant_id: Uuid, id: Uuid) -> Result<Option<Reactor>, RepoError>;
    /// A page of the tenant's reactors, newest first, optionally only these ids and only names
    /// containing `name` (case-insensitive).
    async fn list(
        &self,
        tenant_id: Uuid,
        ids: &[Uuid],
        name: Option<&str>,
        page: PageRequest,
    ) -> Result<Page<Reactor>, RepoError>;
    /// Replaces name, configuration, application and modification fields; `false` when gone.
    async fn update(&self, reactor: &Reactor) -> Result<bool, RepoError>;
    /// Deletes the reactor; `false` when it did not exist.
    async fn delete(&self, tenant_id: Uuid, id: Uuid) -> Result<bool, RepoError>;
}
