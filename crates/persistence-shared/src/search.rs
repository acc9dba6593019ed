//! The filters shared by the tenant-confined lists (formulas, reactors, proxies): the tenant,
//! optionally only some ids, optionally a case-insensitive literal substring of the name.

use sea_orm::sea_query::{BinOper, Expr, ExprTrait, Func, IntoColumnRef};
use sea_orm::{ColumnTrait, Condition};
use uuid::Uuid;

/// `%<search>%` with the wildcards and the escape character of `search` escaped by `\`.
fn contains_pattern(search: &str) -> String {
    let mut out = String::with_capacity(search.len() + 2);
    out.push('%');
    for c in search.chars() {
        if matches!(c, '\\' | '%' | '_') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

/// `LOWER(column) LIKE LOWER(pattern) ESCAPE '\'`: a case-insensitive substring match that
/// folds both sides the same way on either database.
fn name_contains(column: impl IntoColumnRef, search: &str) -> Expr {
    Expr::expr(Func::lower(Expr::col(column))).binary(
        BinOper::Like,
        Expr::expr(Func::lower(Expr::val(contains_pattern(search))))
            .binary(BinOper::Escape, Expr::Constant('\\'.into())),
    )
}

/// The filters of a list: the tenant, optionally only `ids`, optionally only names containing
/// `name`.
pub(crate) fn list_condition<C: ColumnTrait>(
    (tenant_col, id_col, name_col): (C, C, C),
    tenant_id: Uuid,
    ids: &[Uuid],
    name: Option<&str>,
) -> Condition {
    let mut condition = Condition::all().add(tenant_col.eq(tenant_id));
    if !ids.is_empty() {
        condition = condition.add(id_col.is_in(ids.iter().copied()));
    }
    if let Some(name) = name {
        condition = condition.add(name_contains(name_col, name));
    }
    condition
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_in_a_search_are_literal() {
        assert_eq!(contains_pattern("a%b_c\\d"), "%a\\%b\\_c\\\\d%");
        assert_eq!(contains_pattern(""), "%%");
    }
}
