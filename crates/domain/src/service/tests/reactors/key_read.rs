//! The reactor read beside the caller's key: used without a second read, standing only for its
//! tenant and id, never before the caller is checked or past an expired key; read from the
//! store when the key read read none.

use super::*;
use crate::ReactorError;

/// A vault whose key read finds `app` with `read`, whose reactor and formula storage holds
/// nothing (a second read finds no reactor), and whose code runner expects `runs` calls.
fn vault_with(app: Application, read: Option<(Reactor, Option<Formula>)>, runs: usize) -> Vault {
    let mut apps = MockApplications::new();
    apps.expect_find_by_key_hash_also()
        .returning(move |_, _, _| {
            Ok(Some(KeyRead {
                reactor: Beside::Read(read.clone()),
                token: Beside::Read(None),
                ..KeyRead::alone(app.clone(), TenantSettings::default())
            }))
        });
    let mut code = MockCode::new();
    code.expect_run().times(runs).returning(|call| {
        assert_eq!(call.code, CODE);
        Ok(json!({"raw": call.request["configuration"].clone()}))
    });
    let mut sessions = MockSessions::new();
    sessions
        .expect_find_by_key_hash()
        .returning(|_, _| Ok(None));
    Vault::new(Ports {
        code: Arc::new(code),
        sessions: Arc::new(sessions),
        ..ports(MockTenants::new(), apps)
    })
}

#[tokio::test]
async fn a_reactor_read_with_the_key_runs_without_a_second_read() {
    let read = Some((reactor(TENANT, 200), Some(formula(TENANT))));
    // The reactor storage behind the vault holds nothing: had the call read again, 404.
    let vault = vault_with(user(vec![Permission::TokenUse]), read, 1);
    let id = Uuid::from_u128(200);
    let (who, prefetched) = vault
        .auth
        .authenticate_reacting(Some(KEY), id, None)
        .await
        .unwrap();
    let result = vault
        .reactors
        .react(&who, id, None, None, prefetched)
        .await
        .unwrap();
    assert_eq!(result.raw, Some(json!({"region": "eu"})));
}

/// A key read that read no reactor beside the key (`Beside::NotRead`) leaves it to the
/// reactor store: here it holds none, so the call is 404 and no code runs.
#[tokio::test]
async fn a_key_read_that_read_no_reactor_reads_the_store() {
    let mut apps = MockApplications::new();
    let app = user(vec![Permission::TokenUse]);
    apps.expect_find_by_key_hash_also()
        .returning(move |_, _, _| Ok(Some(KeyRead::alone(app.clone(), TenantSettings::default()))));
    let mut code = MockCode::new();
    code.expect_run().never();
    let mut sessions = MockSessions::new();
    sessions
        .expect_find_by_key_hash()
        .returning(|_, _| Ok(None));
    let vault = Vault::new(Ports {
        code: Arc::new(code),
        sessions: Arc::new(sessions),
        ..ports(MockTenants::new(), apps)
    });
    let id = Uuid::from_u128(200);
    let (who, prefetched) = vault
        .auth
        .authenticate_reacting(Some(KEY), id, None)
        .await
        .unwrap();
    assert!(prefetched.is_none(), "nothing was read beside the key");
    assert!(matches!(
        vault.reactors.react(&who, id, None, None, prefetched).await,
        Err(ReactorError::Failed(Error::NotFound))
    ));
}

#[tokio::test]
async fn a_prefetched_reactor_stands_only_for_its_tenant_and_id() {
    let read = Some((reactor(TENANT, 200), Some(formula(TENANT))));
    let vault = vault_with(user(vec![Permission::TokenUse]), read, 0);
    let id = Uuid::from_u128(200);
    // Read for reactor 200: another id reads again (and finds none here).
    let (who, prefetched) = vault
        .auth
        .authenticate_reacting(Some(KEY), id, None)
        .await
        .unwrap();
    assert!(matches!(
        vault
            .reactors
            .react(&who, Uuid::from_u128(201), None, None, prefetched)
            .await,
        Err(ReactorError::Failed(Error::NotFound))
    ));
    // Read for this tenant: a caller of another tenant reads again.
    let (mut who, prefetched) = vault
        .auth
        .authenticate_reacting(Some(KEY), id, None)
        .await
        .unwrap();
    who.tenant_id = Uuid::from_u128(999);
    assert!(matches!(
        vault.reactors.react(&who, id, None, None, prefetched).await,
        Err(ReactorError::Failed(Error::NotFound))
    ));
}

#[tokio::test]
async fn the_caller_is_checked_before_anything_read_is_used() {
    let read = Some((reactor(TENANT, 200), Some(formula(TENANT))));
    let vault = vault_with(user(vec![Permission::TokenRead]), read, 0);
    let id = Uuid::from_u128(200);
    let (who, prefetched) = vault
        .auth
        .authenticate_reacting(Some(KEY), id, None)
        .await
        .unwrap();
    assert!(matches!(
        vault.reactors.react(&who, id, None, None, prefetched).await,
        Err(ReactorError::Failed(Error::Forbidden))
    ));
}

#[tokio::test]
async fn no_reactor_read_is_a_404_and_a_reactor_without_its_formula_an_internal_error() {
    let id = Uuid::from_u128(200);
    let vault = vault_with(user(vec![Permission::TokenUse]), None, 0);
    let (who, prefetched) = vault
        .auth
        .authenticate_reacting(Some(KEY), id, None)
        .await
        .unwrap();
    assert!(matches!(
        vault.reactors.react(&who, id, None, None, prefetched).await,
        Err(ReactorError::Failed(Error::NotFound))
    ));
    let vault = vault_with(
        user(vec![Permission::TokenUse]),
        Some((reactor(TENANT, 200), None)),
        0,
    );
    let (who, prefetched) = vault
        .auth
        .authenticate_reacting(Some(KEY), id, None)
        .await
        .unwrap();
    let outcome = vault.reactors.react(&who, id, None, None, prefetched).await;
    assert!(
        matches!(outcome, Err(ReactorError::Failed(Error::Internal { .. }))),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn an_expired_key_is_refused_before_its_reactor_is_used() {
    let mut app = user(vec![Permission::TokenUse]);
    app.expires_at = Some(now() - Duration::seconds(1));
    let read = Some((reactor(TENANT, 200), Some(formula(TENANT))));
    let vault = vault_with(app, read, 0);
    assert!(matches!(
        vault
            .auth
            .authenticate_reacting(Some(KEY), Uuid::from_u128(200), None)
            .await,
        Err(Error::Unauthenticated)
    ));
}
