//! `/proxies`: create, read, list, update, delete. The key is generated at create and never
//! changes; it is stored as a hash (the lookup at invocation) and as ciphertext under the
//! tenant's data key (to show it again).

use std::collections::BTreeMap;

use serde_json::Value;
use uuid::Uuid;

use super::{RawProxy, RawTransform};
use crate::application::parse_name;
use crate::auth::Principal;
use crate::error::{Error, ValidationErrors};
use crate::page::{Page, PageRequest};
use crate::permission::{ApplicationType, Permission};
use crate::ports::StoredProxy;
use crate::ports::code::MAX_CODE_LEN;
use crate::proxy::{
    MAX_CONFIGURATION, MAX_CONFIGURATION_TEXT, Proxy, ProxyKey, ProxyView, check_url_shape,
};
use crate::service::Proxies;
use crate::service::tokens::MAX_ID_FILTERS;

/// The validated fields of a create or update.
struct Checked {
    name: String,
    destination_url: String,
    request_transform: Option<String>,
    response_transform: Option<String>,
    application_id: Option<Uuid>,
    configuration: Option<BTreeMap<String, String>>,
    require_auth: bool,
}

/// The AAD a proxy key is encrypted under: bound to its proxy.
fn key_context(id: Uuid) -> Vec<u8> {
    format!("proxy-key:{id}").into_bytes()
}

impl Proxies {
    async fn check_proxy(&self, caller: &Principal, raw: RawProxy) -> Result<Checked, Error> {
        let mut errors = ValidationErrors::new();
        let name = parse_name(raw.name, &mut errors);
        let destination_url = match raw.destination_url {
            None => {
                errors.add("destination_url", "is required");
                None
            }
            Some(url) => match check_url_shape(&url)
                .map_err(str::to_string)
                .and_then(|()| self.forwarder.check_destination(&url))
            {
                Ok(()) => Some(url),
                Err(why) => {
                    errors.add("destination_url", why);
                    None
                }
            },
        };
        let request_transform =
            Self::check_transform(raw.request_transform, "request_transform.code", &mut errors);
        let response_transform = Self::check_transform(
            raw.response_transform,
            "response_transform.code",
            &mut errors,
        );
        let configuration = match raw.configuration {
            None | Some(Value::Null) => None,
            Some(Value::Object(map)) => {
                if map.len() > MAX_CONFIGURATION {
                    errors.add("configuration", "at most 25 entries");
                }
                let mut out = BTreeMap::new();
                for (k, v) in map {
                    match v {
                        Value::String(text)
                            if k.chars().count() <= MAX_CONFIGURATION_TEXT
                                && text.chars().count() <= MAX_CONFIGURATION_TEXT =>
                        {
                            out.insert(k, text);
                        }
                        Value::String(_) => errors.add(
                            format!("configuration.{k}"),
                            "names and values are at most 4096 characters",
                        ),
                        _ => errors.add(format!("configuration.{k}"), "must be a string"),
                    }
                }
                Some(out)
            }
            Some(_) => {
                errors.add("configuration", "must be an object of strings");
                None
            }
        };
        let mut application_id = None;
        match raw.application_id.as_deref().map(Uuid::parse_str) {
            None => {}
            Some(Err(_)) => errors.add("application.id", "must be a UUID"),
            // Whoever attaches an application lends its token rights to every caller of the
            // proxy (without require_auth, to anyone holding the proxy key): only a caller who
            // may grant token permissions (application:create or application:update) may.
            // Transforms run with those rights too; a PUT replaces every field, so a proxy
            // keeps an application only when the body names it, and setting transforms on a
            // proxy with an application is always checked here (docs/decisions.md §9).
            Some(Ok(_)) if !caller.may_lend_applications() => return Err(Error::Forbidden),
            Some(Ok(id)) => match self.applications.get(caller.tenant_id, id).await? {
                Some(app) if app.app_type != ApplicationType::Management => {
                    application_id = Some(app.id);
                }
                Some(_) => errors.add("application.id", "must be a public or private application"),
                None => errors.add("application.id", "does not exist"),
            },
        }
        // Code is stored as given: one that does not compile fails its invocation (422).
        if !errors.is_empty() {
            return Err(Error::Validation(errors));
        }
        match (name, destination_url) {
            (Some(name), Some(destination_url)) => Ok(Checked {
                name,
                destination_url,
                request_transform,
                response_transform,
                application_id,
                configuration,
                require_auth: raw.require_auth.unwrap_or(true),
            }),
            _ => Err(Error::internal("proxy validation lost a field")),
        }
    }

    fn check_transform(
        raw: Option<RawTransform>,
        field: &str,
        errors: &mut ValidationErrors,
    ) -> Option<String> {
        match raw {
            None => None,
            Some(RawTransform { code: None }) => {
                errors.add(field, "is required");
                None
            }
            Some(RawTransform { code: Some(code) }) if code.chars().count() > MAX_CODE_LEN => {
                errors.add(field, "must be at most 50,000 characters");
                None
            }
            Some(RawTransform { code: Some(code) }) => Some(code),
        }
    }

    /// `POST /proxies`.
    pub async fn create_proxy(
        &self,
        caller: &Principal,
        raw: RawProxy,
    ) -> Result<ProxyView, Error> {
        caller.require(Permission::ProxyCreate)?;
        let checked = self.check_proxy(caller, raw).await?;
        let key = self.keys.generate_proxy_key();
        let id = self.clock.new_id();
        self.shared.ensure_key(caller.tenant_id).await?;
        let key_ciphertext = self
            .cipher
            .encrypt(caller.tenant_id, &key_context(id), key.expose().as_bytes())
            .map_err(|e| Error::internal_from("encrypting a proxy key", e))?;
        let proxy = Proxy {
            id,
            tenant_id: caller.tenant_id,
            name: checked.name,
            destination_url: checked.destination_url,
            require_auth: checked.require_auth,
            request_transform: checked.request_transform,
            response_transform: checked.response_transform,
            application_id: checked.application_id,
            configuration: checked.configuration,
            created_by: Some(caller.application_id),
            created_at: self.clock.now(),
            modified_by: None,
            modified_at: None,
        };
        let configuration = self
            .shared
            .seal_proxy_configuration(proxy.tenant_id, proxy.id, proxy.configuration.as_ref())
            .await?;
        let written = self
            .store
            .insert(&StoredProxy {
                proxy: Proxy {
                    configuration,
                    ..proxy.clone()
                },
                key_hash: self.keys.hash_proxy_key(&key),
                key_ciphertext,
            })
            .await;
        self.shared.tenant_write(proxy.tenant_id, written).await?;
        self.shared
            .audit(caller, "create", "proxy", [proxy.id.to_string()]);
        Ok(ProxyView { proxy, key })
    }

    /// `GET /proxies/{id}`.
    pub async fn get_proxy(&self, caller: &Principal, id: Uuid) -> Result<ProxyView, Error> {
        caller.require(Permission::ProxyRead)?;
        let stored = self.proxy_of(caller, id).await?;
        self.proxy_view(stored).await
    }

    /// `GET /proxies`: `id` and `name` (contains, any case) filters.
    pub async fn list_proxies(
        &self,
        caller: &Principal,
        ids: &[Uuid],
        name: Option<&str>,
        page: PageRequest,
    ) -> Result<Page<ProxyView>, Error> {
        caller.require(Permission::ProxyRead)?;
        if ids.len() > MAX_ID_FILTERS {
            return Err(Error::invalid("id", "at most 100 values"));
        }
        let found = self.store.list(caller.tenant_id, ids, name, page).await?;
        let mut items = Vec::with_capacity(found.items.len());
        for stored in found.items {
            items.push(self.proxy_view(stored).await?);
        }
        Ok(Page {
            items,
            total_items: found.total_items,
            request: found.request,
        })
    }

    /// `PUT /proxies/{id}`: every field as at create; the key stays.
    pub async fn update_proxy(
        &self,
        caller: &Principal,
        id: Uuid,
        raw: RawProxy,
    ) -> Result<ProxyView, Error> {
        caller.require(Permission::ProxyUpdate)?;
        let mut stored = self.proxy_of(caller, id).await?;
        let checked = self.check_proxy(caller, raw).await?;
        let p = &mut stored.proxy;
        p.name = checked.name;
        p.destination_url = checked.destination_url;
        p.require_auth = checked.require_auth;
        p.request_transform = checked.request_transform;
        p.response_transform = checked.response_transform;
        p.application_id = checked.application_id;
        p.modified_by = Some(caller.application_id);
        p.modified_at = Some(self.clock.now());
        p.configuration = self
            .shared
            .seal_proxy_configuration(p.tenant_id, p.id, checked.configuration.as_ref())
            .await?;
        if !self.store.update(&stored).await? {
            return Err(Error::NotFound);
        }
        self.shared
            .audit(caller, "update", "proxy", [id.to_string()]);
        self.proxy_view(stored).await
    }

    /// `DELETE /proxies/{id}`.
    pub async fn delete_proxy(&self, caller: &Principal, id: Uuid) -> Result<(), Error> {
        caller.require(Permission::ProxyDelete)?;
        if self.store.delete(caller.tenant_id, id).await? {
            self.shared
                .audit(caller, "delete", "proxy", [id.to_string()]);
            Ok(())
        } else {
            Err(Error::NotFound)
        }
    }

    async fn proxy_of(&self, caller: &Principal, id: Uuid) -> Result<StoredProxy, Error> {
        self.store
            .get(caller.tenant_id, id)
            .await?
            .ok_or(Error::NotFound)
    }

    async fn proxy_view(&self, mut stored: StoredProxy) -> Result<ProxyView, Error> {
        let tenant_id = stored.proxy.tenant_id;
        stored.proxy.configuration = self
            .shared
            .open_proxy_configuration(
                tenant_id,
                stored.proxy.id,
                stored.proxy.configuration.take(),
            )
            .await?;
        self.shared.ensure_key(tenant_id).await?;
        let plain = self
            .cipher
            .decrypt(
                tenant_id,
                &key_context(stored.proxy.id),
                &stored.key_ciphertext,
            )
            .map_err(|e| Error::internal_from("decrypting a proxy key", e))?;
        let key = std::str::from_utf8(&plain)
            .ok()
            .and_then(ProxyKey::parse)
            .ok_or_else(|| Error::internal("a stored proxy key is malformed"))?;
        Ok(ProxyView {
            proxy: stored.proxy,
            key,
        })
    }
}
