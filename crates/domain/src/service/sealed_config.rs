//! Reactor and proxy configuration encrypted at rest (docs/decisions.md §9): real code keeps
//! third-party API keys there. What is stored in place of a configuration is an object of one
//! member, `__tokenvault_sealed`, whose value is the configuration's JSON encrypted under the
//! tenant's data key (AES-GCM through the cipher port) and bound to the kind and id of what it
//! configures, so that it cannot be moved to another reactor or proxy. The stores keep their
//! column; a configuration written before this was built reads as it was written, and is
//! sealed the next time it is saved. One that has the sealed shape but does not open (moved
//! from another row, or an old clear configuration that happened to have that shape) reads as
//! stored, with a warning: its owner sees an opaque value, never another's data, and one such
//! row does not fail the tenant's lists.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::error::Error;
use crate::service::Shared;

/// The one member of a sealed configuration.
const SEALED: &str = "__tokenvault_sealed";

fn context(kind: &str, id: Uuid) -> Vec<u8> {
    format!("{kind}-configuration:{id}").into_bytes()
}

/// The ciphertext of a stored configuration, when it is sealed.
fn sealed_text<'a>(
    mut members: impl Iterator<Item = (&'a String, Option<&'a str>)>,
) -> Option<&'a str> {
    let (name, text) = members.next()?;
    if members.next().is_some() || name != SEALED {
        return None;
    }
    text
}

impl Shared {
    async fn seal(
        &self,
        tenant_id: Uuid,
        kind: &str,
        id: Uuid,
        json: &[u8],
    ) -> Result<String, Error> {
        self.ensure_key(tenant_id).await?;
        let sealed = self
            .cipher
            .encrypt(tenant_id, &context(kind, id), json)
            .map_err(|e| Error::internal_from("encrypting a configuration", e))?;
        Ok(base64::engine::general_purpose::STANDARD.encode(sealed))
    }

    async fn open(
        &self,
        tenant_id: Uuid,
        kind: &str,
        id: Uuid,
        text: &str,
    ) -> Result<Option<Vec<u8>>, Error> {
        self.ensure_key(tenant_id).await?;
        let opened = base64::engine::general_purpose::STANDARD
            .decode(text)
            .ok()
            .and_then(|sealed| {
                self.cipher
                    .decrypt(tenant_id, &context(kind, id), &sealed)
                    .ok()
            });
        if opened.is_none() {
            tracing::warn!(%tenant_id, %id, kind, "a configuration of the sealed shape does not open; read as stored");
        }
        Ok(opened)
    }

    /// A reactor's configuration as it is stored.
    pub(in crate::service) async fn seal_reactor_configuration(
        &self,
        tenant_id: Uuid,
        id: Uuid,
        configuration: &Map<String, Value>,
    ) -> Result<Map<String, Value>, Error> {
        let json = serde_json::to_vec(configuration)
            .map_err(|e| Error::internal_from("encoding a configuration", e))?;
        let text = self.seal(tenant_id, "reactor", id, &json).await?;
        Ok(Map::from_iter([(SEALED.to_string(), Value::String(text))]))
    }

    /// A reactor's configuration as it was given, from what is stored.
    pub(in crate::service) async fn open_reactor_configuration(
        &self,
        tenant_id: Uuid,
        id: Uuid,
        stored: Map<String, Value>,
    ) -> Result<Map<String, Value>, Error> {
        let Some(text) = sealed_text(stored.iter().map(|(k, v)| (k, v.as_str()))) else {
            return Ok(stored);
        };
        let Some(json) = self.open(tenant_id, "reactor", id, text).await? else {
            return Ok(stored);
        };
        serde_json::from_slice(&json)
            .map_err(|_| Error::internal("a stored configuration is not an object"))
    }

    /// A proxy's configuration as it is stored.
    pub(in crate::service) async fn seal_proxy_configuration(
        &self,
        tenant_id: Uuid,
        id: Uuid,
        configuration: Option<&BTreeMap<String, String>>,
    ) -> Result<Option<BTreeMap<String, String>>, Error> {
        let Some(configuration) = configuration else {
            return Ok(None);
        };
        let json = serde_json::to_vec(configuration)
            .map_err(|e| Error::internal_from("encoding a configuration", e))?;
        let text = self.seal(tenant_id, "proxy", id, &json).await?;
        Ok(Some(BTreeMap::from([(SEALED.to_string(), text)])))
    }

    /// A proxy's configuration as it was given, from what is stored.
    pub(in crate::service) async fn open_proxy_configuration(
        &self,
        tenant_id: Uuid,
        id: Uuid,
        stored: Option<BTreeMap<String, String>>,
    ) -> Result<Option<BTreeMap<String, String>>, Error> {
        let Some(stored) = stored else {
            return Ok(None);
        };
        let Some(text) = sealed_text(stored.iter().map(|(k, v)| (k, Some(v.as_str())))) else {
            return Ok(Some(stored));
        };
        let Some(json) = self.open(tenant_id, "proxy", id, text).await? else {
            return Ok(Some(stored));
        };
        serde_json::from_slice(&json)
            .map(Some)
            .map_err(|_| Error::internal("a stored configuration is not an object of strings"))
    }
}
