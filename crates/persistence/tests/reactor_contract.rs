//! Formula and reactor repository contract: storing, reading, confinement: the same stories on SQLite and PostgreSQL,
//! fresh database each.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use serde_json::json;
use time::Duration;
use tokenvault_domain::formula::{ParamType, RequestParameter};
use tokenvault_domain::ports::{FormulaDelete, FormulaRepository, ReactorRepository};
use uuid::Uuid;

mod common;
mod reactor_support;

use common::{now, tenant};
use reactor_support::*;

#[tokio::test]
async fn formula_insert_get_update_delete() {
    each_backend(|r| async move {
        let f = formula(r.tenant, "Charge", now());
        r.formulas.insert(&f).await.unwrap();
        assert_eq!(r.formulas.get(r.tenant, f.id).await.unwrap().unwrap(), f);
        // The same id again is a conflict.
        assert!(matches!(
            r.formulas.insert(&f).await,
            Err(tokenvault_domain::RepoError::Conflict(_))
        ));

        let mut changed = f.clone();
        changed.name = "Refund".into();
        changed.description = None;
        changed.code = "module.exports = () => 2;".into();
        changed.configuration = vec![];
        changed.request_parameters = vec![RequestParameter {
            name: "amount".into(),
            description: Some("cents".into()),
            param_type: ParamType::Number,
            optional: true,
        }];
        changed.modified_by = Some(Uuid::now_v7());
        changed.modified_at = Some(now());
        // Fields the update does not own stay as they were.
        let mut sent = changed.clone();
        sent.created_at = now() + Duration::days(1);
        sent.created_by = None;
        assert!(r.formulas.update(&sent, false).await.unwrap());
        assert_eq!(
            r.formulas.get(r.tenant, f.id).await.unwrap().unwrap(),
            changed
        );
        assert!(
            !r.formulas
                .update(&formula(r.tenant, "ghost", now()), false)
                .await
                .unwrap()
        );

        assert_eq!(
            r.formulas.delete(r.tenant, f.id).await.unwrap(),
            FormulaDelete::Deleted
        );
        assert!(r.formulas.get(r.tenant, f.id).await.unwrap().is_none());
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
async fn reactor_insert_get_update_delete() {
    each_backend(|r| async move {
        let f = formula(r.tenant, "Charge", now());
        let g = formula(r.tenant, "Other", now());
        r.formulas.insert(&f).await.unwrap();
        r.formulas.insert(&g).await.unwrap();
        let x = reactor(r.tenant, f.id, "Stripe", now());
        r.reactors.insert(&x).await.unwrap();
        assert_eq!(r.reactors.get(r.tenant, x.id).await.unwrap().unwrap(), x);
        assert!(matches!(
            r.reactors.insert(&x).await,
            Err(tokenvault_domain::RepoError::Conflict(_))
        ));

        let mut changed = x.clone();
        changed.name = "Adyen".into();
        changed.configuration = config(&json!({"API_KEY": "k-2", "retries": 1.5}));
        changed.application_id = None;
        changed.modified_by = Some(Uuid::now_v7());
        changed.modified_at = Some(now());
        // The formula, creator and creation time are fixed.
        let mut sent = changed.clone();
        sent.formula_id = g.id;
        sent.created_by = None;
        sent.created_at = now() + Duration::days(1);
        assert!(r.reactors.update(&sent).await.unwrap());
        assert_eq!(
            r.reactors.get(r.tenant, x.id).await.unwrap().unwrap(),
            changed
        );
        assert!(
            !r.reactors
                .update(&reactor(r.tenant, f.id, "ghost", now()))
                .await
                .unwrap()
        );

        assert!(r.reactors.delete(r.tenant, x.id).await.unwrap());
        assert!(r.reactors.get(r.tenant, x.id).await.unwrap().is_none());
        assert!(!r.reactors.delete(r.tenant, x.id).await.unwrap());
    })
    .await;
}

#[tokio::test]
async fn a_reactor_needs_a_formula_of_its_own_tenant() {
    each_backend(|r| async move {
        let other = tenant(&r.tenants).await;
        let theirs = formula(other, "Theirs", now());
        r.formulas.insert(&theirs).await.unwrap();
        assert!(
            r.reactors
                .insert(&reactor(r.tenant, theirs.id, "x", now()))
                .await
                .is_err()
        );
        assert!(
            r.reactors
                .insert(&reactor(r.tenant, Uuid::now_v7(), "x", now()))
                .await
                .is_err()
        );
    })
    .await;
}

#[tokio::test]
async fn formulas_and_reactors_are_confined_to_their_tenant() {
    each_backend(|r| async move {
        let other = tenant(&r.tenants).await;
        let f = formula(r.tenant, "Mine", now());
        r.formulas.insert(&f).await.unwrap();
        let x = reactor(r.tenant, f.id, "Mine", now());
        r.reactors.insert(&x).await.unwrap();

        assert!(r.formulas.get(other, f.id).await.unwrap().is_none());
        assert!(r.reactors.get(other, x.id).await.unwrap().is_none());
        assert!(
            r.formulas
                .get_many(other, &[f.id])
                .await
                .unwrap()
                .is_empty()
        );
        let listed = r
            .formulas
            .list(other, &[], None, page(1, 20))
            .await
            .unwrap();
        assert_eq!((listed.items.len(), listed.total_items), (0, 0));
        let listed = r
            .formulas
            .list(other, &[f.id], Some("Mine"), page(1, 20))
            .await
            .unwrap();
        assert_eq!((listed.items.len(), listed.total_items), (0, 0));
        let listed = r
            .reactors
            .list(other, &[], None, page(1, 20))
            .await
            .unwrap();
        assert_eq!((listed.items.len(), listed.total_items), (0, 0));
        let listed = r
            .reactors
            .list(other, &[x.id], Some("Mine"), page(1, 20))
            .await
            .unwrap();
        assert_eq!((listed.items.len(), listed.total_items), (0, 0));

        // Writes under another tenant touch nothing.
        let mut foreign = f.clone();
        foreign.tenant_id = other;
        foreign.name = "Hijacked".into();
        assert!(!r.formulas.update(&foreign, false).await.unwrap());
        let mut foreign = x.clone();
        foreign.tenant_id = other;
        foreign.name = "Hijacked".into();
        assert!(!r.reactors.update(&foreign).await.unwrap());
        assert!(!r.reactors.delete(other, x.id).await.unwrap());
        assert_eq!(
            r.formulas.delete(other, f.id).await.unwrap(),
            FormulaDelete::Missing
        );
        assert_eq!(r.formulas.get(r.tenant, f.id).await.unwrap().unwrap(), f);
        assert_eq!(r.reactors.get(r.tenant, x.id).await.unwrap().unwrap(), x);

        // A formula with the same id elsewhere does not count as in use here.
        let mut twin = f.clone();
        twin.tenant_id = other;
        r.formulas.insert(&twin).await.unwrap();
        assert_eq!(
            r.formulas.delete(other, f.id).await.unwrap(),
            FormulaDelete::Deleted
        );
        assert_eq!(
            r.formulas.delete(r.tenant, f.id).await.unwrap(),
            FormulaDelete::InUse
        );
    })
    .await;
}

#[tokio::test]
async fn get_many_returns_the_tenants_formulas_with_those_ids() {
    each_backend(|r| async move {
        let other = tenant(&r.tenants).await;
        let a = formula(r.tenant, "a", now());
        let b = formula(r.tenant, "b", now());
        let c = formula(r.tenant, "c", now());
        let theirs = formula(other, "theirs", now());
        for f in [&a, &b, &c, &theirs] {
            r.formulas.insert(f).await.unwrap();
        }
        let mut got = r
            .formulas
            .get_many(r.tenant, &[a.id, c.id, theirs.id, Uuid::now_v7()])
            .await
            .unwrap();
        got.sort_by_key(|f| f.id);
        assert_eq!(got, vec![a, c]);
        assert!(r.formulas.get_many(r.tenant, &[]).await.unwrap().is_empty());
    })
    .await;
}
