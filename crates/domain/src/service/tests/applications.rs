//! Authentication, application and tenant use cases.

use super::*;

#[tokio::test]
async fn malformed_or_missing_key_never_reaches_storage() {
    let mut apps = MockApplications::new();
    apps.expect_find_by_key_hash().never();
    let vault = vault(MockTenants::new(), apps);
    assert!(matches!(
        vault.auth.authenticate(None).await,
        Err(Error::Unauthenticated)
    ));
    assert!(matches!(
        vault.auth.authenticate(Some("not-a-key")).await,
        Err(Error::Unauthenticated)
    ));
}

#[tokio::test]
async fn expired_application_is_unauthenticated_at_once() {
    let mut apps = MockApplications::new();
    apps.expect_find_by_key_hash().returning(|_| {
        Ok(Some((
            stored_app(Uuid::from_u128(100), Some(now())),
            TenantSettings::default(),
        )))
    });
    let vault = vault(MockTenants::new(), apps);
    assert!(matches!(
        vault.auth.authenticate(Some(KEY)).await,
        Err(Error::Unauthenticated)
    ));
}

#[tokio::test]
async fn valid_key_yields_its_application() {
    let mut apps = MockApplications::new();
    apps.expect_find_by_key_hash().returning(|_| {
        Ok(Some((
            stored_app(Uuid::from_u128(100), Some(now() + Duration::seconds(1))),
            TenantSettings {
                fingerprint_tokens: true,
                deduplicate_tokens: false,
            },
        )))
    });
    let vault = vault(MockTenants::new(), apps);
    let p = vault.auth.authenticate(Some(KEY)).await.unwrap();
    assert_eq!(p.application_id, Uuid::from_u128(7));
    assert_eq!(p.permissions, vec![Permission::TokenRead]);
    assert!(p.settings.fingerprint_tokens, "settings come with the key");
}

#[tokio::test]
async fn create_without_permission_is_forbidden_and_stores_nothing() {
    let mut apps = MockApplications::new();
    apps.expect_insert().never();
    let vault = vault(MockTenants::new(), apps);
    let err = vault
        .applications
        .create_application(&principal(&[Permission::ApplicationRead]), new_private())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Forbidden));
}

#[tokio::test]
async fn invalid_create_stores_nothing() {
    let mut apps = MockApplications::new();
    apps.expect_insert().never();
    let vault = vault(MockTenants::new(), apps);
    let mut raw = new_private();
    raw.permissions = vec!["tenant:delete".into()];
    let err = vault
        .applications
        .create_application(&principal(&[Permission::ApplicationCreate]), raw)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Validation(v) if v.contains("permissions.0")));
}

#[tokio::test]
async fn create_stores_hash_in_callers_tenant() {
    let mut apps = MockApplications::new();
    apps.expect_insert()
        .withf(|app, hash| {
            app.tenant_id == Uuid::from_u128(100)
                && app.created_by == Some(Uuid::from_u128(1))
                && *hash == KeyHash([KEY.as_bytes()[5]; 32])
        })
        .times(1)
        .returning(|_, _| Ok(()));
    let vault = vault(MockTenants::new(), apps);
    let (app, key) = vault
        .applications
        .create_application(&principal(&[Permission::ApplicationCreate]), new_private())
        .await
        .unwrap();
    assert_eq!(key.expose(), KEY);
    assert_eq!(app.created_at, now());
}

#[tokio::test]
async fn reads_are_confined_to_the_callers_tenant() {
    let mut apps = MockApplications::new();
    apps.expect_get()
        .with(eq(Uuid::from_u128(100)), eq(Uuid::from_u128(7)))
        .returning(|_, _| Ok(None));
    let vault = vault(MockTenants::new(), apps);
    let err = vault
        .applications
        .get_application(
            &principal(&[Permission::ApplicationRead]),
            Uuid::from_u128(7),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound));
}

#[tokio::test]
async fn update_checks_type_of_stored_application() {
    let mut apps = MockApplications::new();
    apps.expect_get()
        .returning(|t, _| Ok(Some(stored_app(t, None))));
    apps.expect_update().never();
    let vault = vault(MockTenants::new(), apps);
    let raw = RawApplicationUpdate {
        name: Some("x".into()),
        permissions: vec!["application:read".into()],
        rules: vec![],
    };
    let err = vault
        .applications
        .update_application(
            &principal(&[Permission::ApplicationUpdate]),
            Uuid::from_u128(7),
            raw,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Validation(v) if v.contains("permissions.0")));
}

#[tokio::test]
async fn regenerate_replaces_the_key_hash() {
    let mut apps = MockApplications::new();
    apps.expect_get()
        .returning(|t, _| Ok(Some(stored_app(t, None))));
    apps.expect_replace_key()
        .withf(|app, _| app.modified_by == Some(Uuid::from_u128(1)))
        .times(1)
        .returning(|_, _| Ok(true));
    // The old key's sessions end with it.
    let mut sessions = MockSessions::new();
    sessions
        .expect_delete_for_application()
        .withf(|tenant, app| *tenant == Uuid::from_u128(100) && *app == Uuid::from_u128(7))
        .times(1)
        .returning(|_, _| Ok(1));
    let mut p = ports(MockTenants::new(), apps);
    p.sessions = Arc::new(sessions);
    let vault = Vault::new(p);
    let (_, key) = vault
        .applications
        .regenerate_key(
            &principal(&[Permission::ApplicationUpdate]),
            Uuid::from_u128(7),
        )
        .await
        .unwrap();
    assert_eq!(key.expose(), KEY);
}

#[tokio::test]
async fn delete_of_unknown_is_not_found() {
    let mut apps = MockApplications::new();
    apps.expect_get().returning(|_, _| Ok(None));
    apps.expect_delete().never();
    let vault = vault(MockTenants::new(), apps);
    let err = vault
        .applications
        .delete_application(
            &principal(&[Permission::ApplicationDelete]),
            Uuid::from_u128(9),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound));
}

#[tokio::test]
async fn tenant_update_validates_before_loading() {
    let mut tenants = MockTenants::new();
    tenants.expect_get().never();
    tenants.expect_update().never();
    let vault = vault(tenants, MockApplications::new());
    let err = vault
        .tenants
        .update_tenant(
            &principal(&[Permission::TenantUpdate]),
            RawTenantUpdate::default(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Validation(v) if v.contains("name")));
}

#[tokio::test]
async fn bootstrap_only_on_an_empty_database() {
    let mut tenants = MockTenants::new();
    tenants.expect_any().returning(|| Ok(true));
    tenants.expect_create_with_application().never();
    let first = vault(tenants, MockApplications::new());
    assert!(first.tenants.bootstrap(None).await.unwrap().is_none());

    let mut tenants = MockTenants::new();
    tenants.expect_any().returning(|| Ok(false));
    tenants
        .expect_create_with_application()
        .withf(|t, k, a, _| {
            t.name == "Default" && k == [1, 2, 3] && a.permissions == Permission::management()
        })
        .times(1)
        .returning(|_, _, _, _| Ok(()));
    let vault = vault(tenants, MockApplications::new());
    let made = vault
        .tenants
        .bootstrap(Some(ApiKey::parse(KEY).unwrap()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(made.key.expose(), KEY);
}

#[tokio::test]
async fn purge_uses_the_clock() {
    let mut apps = MockApplications::new();
    apps.expect_delete_expired()
        .with(eq(now()))
        .returning(|_| Ok(3));
    let vault = vault(MockTenants::new(), apps);
    assert_eq!(
        vault
            .applications
            .purge_expired_applications()
            .await
            .unwrap(),
        3
    );
}

/// A generated key or id that is already taken is no conflict of the caller's: an internal
/// error, the backend's words kept for the log only.
#[tokio::test]
async fn a_generated_value_taken_in_storage_is_an_internal_error() {
    let mut apps = MockApplications::new();
    apps.expect_insert()
        .returning(|_, _| Err(RepoError::Conflict("key".into())));
    let vault = vault(MockTenants::new(), apps);
    let err = vault
        .applications
        .create_application(&principal(&[Permission::ApplicationCreate]), new_private())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Internal { .. }), "{err:?}");
    assert!(err.chain().contains("conflict: key"), "{}", err.chain());
}

// ---- token use cases ------------------------------------------------------------------------
