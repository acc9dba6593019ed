//! `/proxies`: a transform's code runs with the proxy's application's rights.

use std::sync::Mutex;

use super::*;
use crate::service::proxies::{RawProxy, RawTransform};

const TENANT: Uuid = Uuid::from_u128(100);
const LENT: Uuid = Uuid::from_u128(7);
const PROXY: Uuid = Uuid::from_u128(400);

/// One stored proxy (with an application), and what an update made of it.
struct OneProxy {
    stored: StoredProxy,
    updated: Mutex<Vec<StoredProxy>>,
}

#[async_trait]
impl ProxyRepository for OneProxy {
    async fn insert(&self, _: &StoredProxy) -> Result<(), RepoError> {
        Ok(())
    }
    async fn get(&self, tenant_id: Uuid, id: Uuid) -> Result<Option<StoredProxy>, RepoError> {
        Ok((tenant_id == TENANT && id == PROXY).then(|| self.stored.clone()))
    }
    async fn find_by_key_hash(&self, _: &KeyHash) -> Result<Option<StoredProxy>, RepoError> {
        Ok(None)
    }
    async fn list(
        &self,
        _: Uuid,
        _: &[Uuid],
        _: Option<&str>,
        page: PageRequest,
    ) -> Result<Page<StoredProxy>, RepoError> {
        Ok(Page {
            items: Vec::new(),
            total_items: 0,
            request: page,
        })
    }
    async fn update(&self, proxy: &StoredProxy) -> Result<bool, RepoError> {
        self.updated.lock().unwrap().push(proxy.clone());
        Ok(true)
    }
    async fn delete(&self, _: Uuid, _: Uuid) -> Result<bool, RepoError> {
        Ok(false)
    }
}

fn stored() -> StoredProxy {
    StoredProxy {
        proxy: crate::proxy::Proxy {
            id: PROXY,
            tenant_id: TENANT,
            name: "p".into(),
            destination_url: "https://d.example/api".into(),
            require_auth: true,
            request_transform: None,
            response_transform: None,
            application_id: Some(LENT),
            configuration: None,
            created_by: None,
            created_at: now(),
            modified_by: None,
            modified_at: None,
        },
        key_hash: KeyHash([1; 32]),
        key_ciphertext: Vec::new(),
    }
}

fn vault(proxies: Arc<OneProxy>) -> Vault {
    let mut apps = MockApplications::new();
    apps.expect_get()
        .returning(|tenant_id, _| Ok(Some(stored_app(tenant_id, None))));
    let code = MockCode::new();
    // The key of the proxy a change answers with.
    let mut cipher = MockCiph::new();
    cipher.expect_has_tenant_key().returning(|_| true);
    cipher
        .expect_decrypt()
        .returning(|_, _, _| Ok(b"AbCdEfGhIjKlMnOpQrStUvWxYz012345".to_vec()));
    Vault::new(Ports {
        proxies,
        code: Arc::new(code),
        cipher: Arc::new(cipher),
        ..ports(MockTenants::new(), apps)
    })
}

fn body(application: Option<Uuid>, request: Option<&str>, response: Option<&str>) -> RawProxy {
    let transform = |code: Option<&str>| {
        code.map(|c| RawTransform {
            code: Some(c.into()),
        })
    };
    RawProxy {
        name: Some("p".into()),
        destination_url: Some("https://d.example/api".into()),
        request_transform: transform(request),
        response_transform: transform(response),
        application_id: application.map(|id| id.to_string()),
        ..Default::default()
    }
}

const CODE: &str = "module.exports = async (req) => ({ body: req.args.body, headers: {} });";

#[tokio::test]
async fn transforms_with_an_application_need_the_right_to_lend() {
    let proxies = Arc::new(OneProxy {
        stored: stored(),
        updated: Mutex::default(),
    });
    let vault = vault(proxies.clone());
    let updater = principal(&[Permission::ProxyCreate, Permission::ProxyUpdate]);
    for (request, response) in [(Some(CODE), None), (None, Some(CODE))] {
        let res = vault
            .proxies
            .update_proxy(&updater, PROXY, body(Some(LENT), request, response))
            .await;
        assert!(matches!(res, Err(Error::Forbidden)), "{res:?}");
        let res = vault
            .proxies
            .create_proxy(&updater, body(Some(LENT), request, response))
            .await;
        assert!(matches!(res, Err(Error::Forbidden)), "{res:?}");
    }
    assert!(proxies.updated.lock().unwrap().is_empty());
    // Without the application (a PUT replaces every field), the code lends nothing.
    let view = vault
        .proxies
        .update_proxy(&updater, PROXY, body(None, Some(CODE), None))
        .await
        .unwrap();
    assert_eq!(view.proxy.application_id, None);
    assert_eq!(view.proxy.request_transform.as_deref(), Some(CODE));
    // Whoever may lend it may set both.
    let lender = principal(&[Permission::ProxyUpdate, Permission::ApplicationUpdate]);
    let view = vault
        .proxies
        .update_proxy(&lender, PROXY, body(Some(LENT), Some(CODE), Some(CODE)))
        .await
        .unwrap();
    assert_eq!(view.proxy.application_id, Some(LENT));
    assert_eq!(proxies.updated.lock().unwrap().len(), 2);
}
