//! One row of a tenant by its id, through SeaORM: the point read every repository's pool path
//! shares (applications, proxies, formulas, reactors).

use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};
use tokenvault_domain::RepoError;
use uuid::Uuid;

use crate::repo_error::repo_err;

/// The row `id` of `tenant_id` in `E`, read by `read`; `None` when the tenant has none.
pub(crate) async fn one_of_tenant<E, T>(
    db: &impl ConnectionTrait,
    (tenant_column, id_column): (E::Column, E::Column),
    tenant_id: Uuid,
    id: Uuid,
    read: impl FnOnce(E::Model) -> Result<T, RepoError>,
) -> Result<Option<T>, RepoError>
where
    E: EntityTrait,
    E::Column: ColumnTrait,
{
    E::find()
        .filter(tenant_column.eq(tenant_id))
        .filter(id_column.eq(id))
        .one(db)
        .await
        .map_err(repo_err)?
        .map(read)
        .transpose()
}
