//! Formula and reactor repository contract: lists, filters, deletes and lending: the same stories on SQLite and PostgreSQL,
//! fresh database each.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use time::Duration;
use tokenvault_domain::ports::{FormulaDelete, FormulaRepository, ReactorRepository};
use tokenvault_persistence::testing::{TestDatabase, backends};
use tokenvault_persistence::{
    SeaOrmFormulaRepository, SeaOrmReactorRepository, SeaOrmTenantRepository,
};
use uuid::Uuid;

mod common;
mod reactor_support;

use common::{now, tenant, tenant_with};
use reactor_support::*;

#[tokio::test]
async fn lists_are_paged_newest_first() {
    each_backend(|r| async move {
        let base = now() - Duration::hours(1);
        let mut formulas = Vec::new();
        for i in 0..5i64 {
            let f = formula(r.tenant, &format!("f{i}"), base + Duration::seconds(i));
            r.formulas.insert(&f).await.unwrap();
            formulas.push(f);
        }
        // Same creation time: the larger id comes first.
        let mut tie = formula(r.tenant, "tie", base + Duration::seconds(4));
        tie.id = Uuid::max();
        r.formulas.insert(&tie).await.unwrap();
        let mut reactors = Vec::new();
        for i in 0..5i64 {
            let x = reactor(
                r.tenant,
                formulas[0].id,
                &format!("r{i}"),
                base + Duration::seconds(i),
            );
            r.reactors.insert(&x).await.unwrap();
            reactors.push(x);
        }

        let first = r
            .formulas
            .list(r.tenant, &[], None, page(1, 2))
            .await
            .unwrap();
        assert_eq!(first.total_items, 6);
        assert_eq!(names(&first, |f| &f.name), ["tie", "f4"]);
        let second = r
            .formulas
            .list(r.tenant, &[], None, page(2, 2))
            .await
            .unwrap();
        assert_eq!(names(&second, |f| &f.name), ["f3", "f2"]);
        let last = r
            .formulas
            .list(r.tenant, &[], None, page(4, 2))
            .await
            .unwrap();
        assert!(last.items.is_empty());
        assert_eq!(last.total_items, 6);
        assert_eq!(second.items[0], formulas[3]);

        let first = r
            .reactors
            .list(r.tenant, &[], None, page(1, 3))
            .await
            .unwrap();
        assert_eq!(first.total_items, 5);
        assert_eq!(names(&first, |x| &x.name), ["r4", "r3", "r2"]);
        let second = r
            .reactors
            .list(r.tenant, &[], None, page(2, 3))
            .await
            .unwrap();
        assert_eq!(names(&second, |x| &x.name), ["r1", "r0"]);
        assert_eq!(second.items[1], reactors[0]);

        // Only the given ids (unknown ones are ignored), still newest first.
        let ids = [formulas[1].id, formulas[3].id, Uuid::now_v7()];
        let only = r
            .formulas
            .list(r.tenant, &ids, None, page(1, 20))
            .await
            .unwrap();
        assert_eq!(only.total_items, 2);
        assert_eq!(names(&only, |f| &f.name), ["f3", "f1"]);
        let ids = [reactors[0].id, reactors[2].id];
        let only = r
            .reactors
            .list(r.tenant, &ids, None, page(1, 1))
            .await
            .unwrap();
        assert_eq!(only.total_items, 2);
        assert_eq!(names(&only, |x| &x.name), ["r2"]);
    })
    .await;
}

#[tokio::test]
async fn name_filter_is_a_case_insensitive_literal_substring() {
    each_backend(|r| async move {
        let base = now() - Duration::hours(1);
        let all = [
            "Stripe Payments",
            "stripe refunds",
            "STRIPE",
            "Adyen",
            "100% off",
            "1000 off",
            "snake_case",
            "snakeXcase",
            "back\\slash",
        ];
        let mut formula_id = None;
        for (i, name) in (0i64..).zip(all) {
            let f = formula(r.tenant, name, base + Duration::seconds(i));
            r.formulas.insert(&f).await.unwrap();
            let id = *formula_id.get_or_insert(f.id);
            r.reactors
                .insert(&reactor(r.tenant, id, name, base + Duration::seconds(i)))
                .await
                .unwrap();
        }
        for (search, expected) in [
            (
                "stripe",
                &["STRIPE", "stripe refunds", "Stripe Payments"][..],
            ),
            ("PAY", &["Stripe Payments"][..]),
            ("%", &["100% off"][..]),
            ("0% o", &["100% off"][..]),
            ("_", &["snake_case"][..]),
            ("e_c", &["snake_case"][..]),
            ("\\", &["back\\slash"][..]),
            ("k\\s", &["back\\slash"][..]),
            ("nothing", &[][..]),
        ] {
            let formulas = r
                .formulas
                .list(r.tenant, &[], Some(search), page(1, 20))
                .await
                .unwrap();
            assert_eq!(
                names(&formulas, |f| &f.name),
                expected,
                "formulas {search:?}"
            );
            assert_eq!(formulas.total_items, expected.len() as u64);
            let reactors = r
                .reactors
                .list(r.tenant, &[], Some(search), page(1, 20))
                .await
                .unwrap();
            assert_eq!(
                names(&reactors, |x| &x.name),
                expected,
                "reactors {search:?}"
            );
            assert_eq!(reactors.total_items, expected.len() as u64);
        }
        // An empty search matches everything.
        let every = r
            .formulas
            .list(r.tenant, &[], Some(""), page(1, 20))
            .await
            .unwrap();
        assert_eq!(every.total_items, all.len() as u64);

        // The name filter combines with the ids filter.
        let listed = r
            .reactors
            .list(r.tenant, &[], None, page(1, 20))
            .await
            .unwrap();
        let stripe_ids: Vec<Uuid> = listed
            .items
            .iter()
            .filter(|x| x.name == "STRIPE" || x.name == "Adyen")
            .map(|x| x.id)
            .collect();
        let both = r
            .reactors
            .list(r.tenant, &stripe_ids, Some("stripe"), page(1, 20))
            .await
            .unwrap();
        assert_eq!(names(&both, |x| &x.name), ["STRIPE"]);
    })
    .await;
}

#[tokio::test]
async fn a_formula_in_use_cannot_be_deleted() {
    each_backend(|r| async move {
        let f = formula(r.tenant, "Charge", now());
        r.formulas.insert(&f).await.unwrap();
        let x = reactor(r.tenant, f.id, "one", now());
        let y = reactor(r.tenant, f.id, "two", now());
        r.reactors.insert(&x).await.unwrap();
        r.reactors.insert(&y).await.unwrap();

        assert_eq!(
            r.formulas.delete(r.tenant, f.id).await.unwrap(),
            FormulaDelete::InUse
        );
        assert_eq!(r.formulas.get(r.tenant, f.id).await.unwrap().unwrap(), f);
        assert!(r.reactors.delete(r.tenant, x.id).await.unwrap());
        assert_eq!(
            r.formulas.delete(r.tenant, f.id).await.unwrap(),
            FormulaDelete::InUse
        );
        assert!(r.reactors.delete(r.tenant, y.id).await.unwrap());
        assert_eq!(
            r.formulas.delete(r.tenant, f.id).await.unwrap(),
            FormulaDelete::Deleted
        );
        assert_eq!(
            r.formulas.delete(r.tenant, f.id).await.unwrap(),
            FormulaDelete::Missing
        );
        assert_eq!(
            r.formulas.delete(r.tenant, Uuid::now_v7()).await.unwrap(),
            FormulaDelete::Missing
        );
    })
    .await;
}

#[tokio::test]
async fn the_database_refuses_to_delete_a_formula_in_use() {
    use sea_orm::{ConnectionTrait, DbErr, SqlErr, Statement};
    // The repository checks first; the foreign key is what holds against a reactor created
    // after that check. It is exercised here directly.
    for backend in backends() {
        let db = TestDatabase::create(backend).await;
        let tenants = SeaOrmTenantRepository::new(db.db.clone());
        let t = tenant(&tenants).await;
        let formulas = SeaOrmFormulaRepository::new(db.db.clone());
        let reactors = SeaOrmReactorRepository::new(db.db.clone());
        let f = formula(t, "Charge", now());
        formulas.insert(&f).await.unwrap();
        reactors
            .insert(&reactor(t, f.id, "x", now()))
            .await
            .unwrap();
        let b = db.db.get_database_backend();
        let delete = Statement::from_sql_and_values(
            b,
            if b == sea_orm::DatabaseBackend::Postgres {
                "DELETE FROM reactor_formulas WHERE tenant_id = $1 AND id = $2"
            } else {
                "DELETE FROM reactor_formulas WHERE tenant_id = ? AND id = ?"
            },
            [t.into(), f.id.into()],
        );
        let err: DbErr = db.db.execute_raw(delete).await.unwrap_err();
        assert!(
            matches!(
                err.sql_err(),
                Some(SqlErr::ForeignKeyConstraintViolation(_))
            ),
            "{err:?}"
        );
        assert!(formulas.get(t, f.id).await.unwrap().is_some());
        db.destroy().await;
    }
}

#[tokio::test]
async fn deleting_a_tenant_removes_its_formulas_and_reactors() {
    each_backend(|r| async move {
        let other = tenant(&r.tenants).await;
        let mut mine = Vec::new();
        for i in 0..3 {
            let f = formula(r.tenant, &format!("f{i}"), now());
            r.formulas.insert(&f).await.unwrap();
            for j in 0..2 {
                let x = reactor(r.tenant, f.id, &format!("r{i}{j}"), now());
                r.reactors.insert(&x).await.unwrap();
                mine.push(x);
            }
        }
        // A formula nobody uses goes too.
        let unused = formula(r.tenant, "unused", now());
        r.formulas.insert(&unused).await.unwrap();
        let theirs = formula(other, "theirs", now());
        r.formulas.insert(&theirs).await.unwrap();
        let their_reactor = reactor(other, theirs.id, "theirs", now());
        r.reactors.insert(&their_reactor).await.unwrap();

        assert!(common::delete_tenant(&r.tenants, r.tenant).await);
        let listed = r
            .formulas
            .list(r.tenant, &[], None, page(1, 20))
            .await
            .unwrap();
        assert_eq!(listed.total_items, 0);
        let listed = r
            .reactors
            .list(r.tenant, &[], None, page(1, 20))
            .await
            .unwrap();
        assert_eq!(listed.total_items, 0);
        assert!(r.formulas.get(r.tenant, unused.id).await.unwrap().is_none());
        assert!(
            r.reactors
                .get(r.tenant, mine[0].id)
                .await
                .unwrap()
                .is_none()
        );
        // The other tenant keeps everything.
        assert_eq!(
            r.formulas.get(other, theirs.id).await.unwrap().unwrap(),
            theirs
        );
        assert_eq!(
            r.reactors
                .get(other, their_reactor.id)
                .await
                .unwrap()
                .unwrap(),
            their_reactor
        );
        assert!(common::delete_tenant(&r.tenants, other).await);
        assert!(r.formulas.get(other, theirs.id).await.unwrap().is_none());
        assert!(
            r.reactors
                .get(other, their_reactor.id)
                .await
                .unwrap()
                .is_none()
        );
    })
    .await;
}

/// The write of new code for a formula that must not be lent checks, in the same statement,
/// that no reactor with an existing application uses it: an application attached after the
/// caller's own check still stops it (docs/decisions.md §9).
#[tokio::test]
async fn an_update_unless_lent_is_refused_once_the_formula_is_lent() {
    use tokenvault_domain::application::KeyHash;
    use tokenvault_domain::permission::{ApplicationType, Permission};
    use tokenvault_domain::tenant::TenantSettings;
    each_backend(|r| async move {
        let private = (ApplicationType::Private, vec![Permission::TokenUse]);
        let (t, app) = tenant_with(
            &r.tenants,
            TenantSettings::default(),
            private,
            &KeyHash([7; 32]),
        )
        .await;
        let f = formula(t, "Charge", now());
        r.formulas.insert(&f).await.unwrap();
        let mut x = reactor(t, f.id, "one", now());
        // An application id that names no application lends nothing.
        r.reactors.insert(&x).await.unwrap();
        let mut changed = f.clone();
        changed.code = "module.exports = () => 'new';".into();
        assert!(r.formulas.update(&changed, true).await.unwrap());
        assert!(!r.formulas.lent(t, f.id).await.unwrap());

        // Attached meanwhile: the guarded write changes nothing.
        x.application_id = Some(app.id);
        assert!(r.reactors.update(&x).await.unwrap());
        let mut again = changed.clone();
        again.code = "module.exports = () => 'lent';".into();
        assert!(!r.formulas.update(&again, true).await.unwrap());
        assert_eq!(
            r.formulas.get(t, f.id).await.unwrap().unwrap().code,
            changed.code
        );
        assert!(r.formulas.lent(t, f.id).await.unwrap());
        // Guarded, the stored code itself may still be written (a rename lends nothing new).
        let mut renamed = changed.clone();
        renamed.name = "Renamed".into();
        assert!(r.formulas.update(&renamed, true).await.unwrap());
        // Unguarded (a caller who may lend), it goes through.
        assert!(r.formulas.update(&again, false).await.unwrap());
        assert_eq!(
            r.formulas.get(t, f.id).await.unwrap().unwrap().code,
            again.code
        );
        // Another tenant's lent formula is not this one's business: same id, other tenant.
        let mut foreign = again.clone();
        foreign.tenant_id = r.tenant;
        assert!(!r.formulas.update(&foreign, true).await.unwrap());
    })
    .await;
}
