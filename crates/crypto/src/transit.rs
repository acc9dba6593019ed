//! HashiCorp Vault / OpenBao Transit as the master key ([`KeyWrapping`]): tenant data keys are
//! sent to Transit to be encrypted and decrypted under a named key it holds, so the master key
//! never enters this process nor its disk. Each wrapped key is Transit's ciphertext
//! (`vault:v<version>:…`), bound to its tenant by `associated_data`; rotation is Transit's
//! (`bao write -f transit/keys/<key>/rotate`), then `tokenvault keys rotate-master` re-wraps
//! every tenant key under the newest version (decrypt and encrypt: Transit's own rewrap drops
//! `associated_data`).
//!
//! Its own HTTP client, not the proxies' one: the key manager's address is the operator's and
//! usually private, which the proxies' destination policy refuses.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use tokenvault_domain::ports::{CipherError, KeyWrapping};
use zeroize::Zeroizing;

/// The prefix of every Transit ciphertext.
const PREFIX: &[u8] = b"vault:v";

/// The largest answer read from Transit.
const MAX_ANSWER: usize = 64 * 1024;

/// Where the key lives and how to reach it.
pub struct TransitSettings {
    /// `https://vault.internal:8200` (or `http://` on loopback for development).
    pub address: String,
    /// The Transit engine's mount path (`transit`).
    pub mount: String,
    /// The key's name.
    pub key: String,
    /// A token allowed `encrypt`, `decrypt` on the key and `read` on its configuration.
    pub token: Zeroizing<String>,
    /// The file the token was read from: read again when Transit refuses the token (a token
    /// renewed into the file by Vault Agent, say, is taken without a restart).
    pub token_file: Option<std::path::PathBuf>,
    /// How long one call may take.
    pub timeout: Duration,
}

/// A Transit key as the [`KeyWrapping`] port.
#[derive(Clone)]
pub struct TransitKeys {
    client: reqwest::Client,
    /// `<address>/v1/<mount>`.
    base: String,
    key: String,
    token: Arc<std::sync::RwLock<Arc<Zeroizing<String>>>>,
    token_file: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for TransitKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransitKeys")
            .field("base", &self.base)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/'))
        && !s.split('/').any(|part| part.is_empty() || part == "..")
}

impl TransitKeys {
    /// A client for the key of `settings`; nothing is sent yet ([`Self::check`] does).
    ///
    /// # Errors
    /// An address that is not `http(s)://…`, a mount or key name with other characters than
    /// letters, digits, `-`, `_`, `.`, an empty token, or a client that cannot be built.
    pub fn new(settings: TransitSettings) -> Result<Self, String> {
        let address = settings.address.trim_end_matches('/');
        let url = url::Url::parse(address)
            .map_err(|e| format!("TOKENVAULT_TRANSIT_ADDRESS {address:?}: {e}"))?;
        if !matches!(url.scheme(), "http" | "https")
            || url.host().is_none()
            || !url.username().is_empty()
            || url.password().is_some()
        {
            return Err(
                "TOKENVAULT_TRANSIT_ADDRESS is not http(s)://host[:port] (without credentials)"
                    .into(),
            );
        }
        let loopback = match url.host() {
            Some(url::Host::Domain(d)) => d == "localhost",
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        };
        if url.scheme() == "http" && !loopback {
            return Err(format!(
                "TOKENVAULT_TRANSIT_ADDRESS {address:?}: plain http carries the token in clear; \
                 use https (http only on loopback)"
            ));
        }
        if !is_name(&settings.mount) {
            return Err(format!(
                "TOKENVAULT_TRANSIT_MOUNT {:?} is not a path",
                settings.mount
            ));
        }
        if !is_name(&settings.key) || settings.key.contains('/') {
            return Err(format!(
                "TOKENVAULT_TRANSIT_KEY {:?} is not a key name",
                settings.key
            ));
        }
        if settings.token.trim().is_empty() {
            return Err("the Transit token is empty (TOKENVAULT_TRANSIT_TOKEN_FILE)".into());
        }
        let client = reqwest::Client::builder()
            .timeout(settings.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .build()
            .map_err(|e| format!("the Transit client cannot be built: {e}"))?;
        Ok(Self {
            client,
            base: format!("{address}/v1/{}", settings.mount),
            key: settings.key,
            token: Arc::new(std::sync::RwLock::new(Arc::new(Zeroizing::new(
                settings.token.trim().to_string(),
            )))),
            token_file: settings.token_file,
        })
    }

    /// Reads the key's configuration: fails unless the address answers, the token is accepted
    /// and the key exists and encrypts (a server checks it at start). Answers its newest version.
    ///
    /// # Errors
    /// Why the key cannot be used.
    pub async fn check(&self) -> Result<u64, String> {
        let data = self
            .call(reqwest::Method::GET, &format!("keys/{}", self.key), None)
            .await
            .map_err(|e| match e {
                CipherError::KeyManager(why) if why.starts_with("404") => format!(
                    "Transit has no key {:?} under {} (create it: bao write -f {}/keys/{})",
                    self.key,
                    self.base,
                    self.base.rsplit("/v1/").next().unwrap_or("transit"),
                    self.key
                ),
                e => e.to_string(),
            })?;
        // The tenant binding is `associated_data`, which Transit honours for AEAD keys only.
        if !matches!(
            data["type"].as_str(),
            Some("aes256-gcm96" | "aes128-gcm96" | "chacha20-poly1305")
        ) {
            return Err(format!(
                "the Transit key {:?} is of type {}; it must be aes256-gcm96",
                self.key, data["type"]
            ));
        }
        data["latest_version"]
            .as_u64()
            .ok_or_else(|| "Transit's key answer has no latest_version".to_string())
    }

    fn token(&self) -> Arc<Zeroizing<String>> {
        self.token
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Reads the token file again; whether it held another token.
    fn reload_token(&self) -> bool {
        let Some(file) = &self.token_file else {
            return false;
        };
        let Ok(text) = std::fs::read_to_string(file) else {
            return false;
        };
        let fresh = Zeroizing::new(text.trim().to_string());
        let mut token = self
            .token
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if fresh.is_empty() || fresh.as_str() == token.as_str() {
            return false;
        }
        *token = Arc::new(fresh);
        tracing::info!("the Transit token was read again from its file");
        true
    }

    /// One call; the answer's `data`. A refused token is read again from its file once.
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, CipherError> {
        match self.call_once(method.clone(), path, body.as_ref()).await {
            Err(CipherError::KeyManager(why)) if why.starts_with("403") && self.reload_token() => {
                self.call_once(method, path, body.as_ref()).await
            }
            done => done,
        }
    }

    async fn call_once(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, CipherError> {
        let mut token =
            reqwest::header::HeaderValue::from_str(self.token().as_str()).map_err(|_| {
                CipherError::KeyManager("the Transit token is not a header value".into())
            })?;
        token.set_sensitive(true);
        let mut request = self
            .client
            .request(method, format!("{}/{path}", self.base))
            .header("X-Vault-Token", token);
        if let Some(body) = body {
            request = request.json(body);
        }
        let mut response = request
            .send()
            .await
            .map_err(|e| CipherError::KeyManager(format!("no answer from {}: {e}", self.base)))?;
        let status = response.status();
        // Transit's answers are small; a larger one is not read to its end.
        let mut bytes = Zeroizing::new(Vec::new());
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| CipherError::KeyManager(format!("a cut answer: {e}")))?
        {
            if bytes.len() + chunk.len() > MAX_ANSWER {
                return Err(CipherError::KeyManager("an answer over 64 KiB".into()));
            }
            bytes.extend_from_slice(&chunk);
        }
        let answer: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if status.is_success() {
            return Ok(answer.get("data").cloned().unwrap_or(Value::Null));
        }
        let why = answer["errors"]
            .as_array()
            .and_then(|e| e.first())
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if status == reqwest::StatusCode::BAD_REQUEST
            && (why.contains("message authentication failed") || why.contains("invalid ciphertext"))
        {
            return Err(CipherError::Corrupt);
        }
        Err(CipherError::KeyManager(format!(
            "{} {why}",
            status.as_u16()
        )))
    }

    /// The version of a Transit ciphertext; `None` when it is not one.
    fn version(wrapped: &[u8]) -> Option<u64> {
        let rest = wrapped.strip_prefix(PREFIX)?;
        let end = rest.iter().position(|b| *b == b':')?;
        std::str::from_utf8(&rest[..end]).ok()?.parse().ok()
    }
}

#[async_trait]
impl KeyWrapping for TransitKeys {
    async fn wrap(&self, context: &[u8], key: &[u8]) -> Result<Vec<u8>, CipherError> {
        let plaintext = Zeroizing::new(STANDARD.encode(key));
        let data = self
            .call(
                reqwest::Method::POST,
                &format!("encrypt/{}", self.key),
                Some(json!({
                    "plaintext": plaintext.as_str(),
                    "associated_data": STANDARD.encode(context),
                })),
            )
            .await?;
        let ciphertext = data["ciphertext"]
            .as_str()
            .filter(|c| c.as_bytes().starts_with(PREFIX))
            .ok_or_else(|| CipherError::KeyManager("Transit answered no ciphertext".into()))?;
        Ok(ciphertext.as_bytes().to_vec())
    }

    async fn unwrap(&self, context: &[u8], wrapped: &[u8]) -> Result<Vec<u8>, CipherError> {
        let Some(ciphertext) =
            Self::version(wrapped).and_then(|_| std::str::from_utf8(wrapped).ok())
        else {
            return Err(CipherError::UnknownMasterKey);
        };
        let data = self
            .call(
                reqwest::Method::POST,
                &format!("decrypt/{}", self.key),
                Some(json!({
                    "ciphertext": ciphertext,
                    "associated_data": STANDARD.encode(context),
                })),
            )
            .await?;
        let plaintext = Zeroizing::new(data["plaintext"].as_str().unwrap_or_default().to_string());
        STANDARD
            .decode(plaintext.as_bytes())
            .map_err(|_| CipherError::Corrupt)
    }

    async fn is_current(&self, wrapped: &[u8]) -> Result<bool, CipherError> {
        let Some(version) = Self::version(wrapped) else {
            return Ok(false);
        };
        let latest = self.check().await.map_err(CipherError::KeyManager)?;
        Ok(version == latest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(address: &str, key: &str) -> TransitSettings {
        TransitSettings {
            address: address.into(),
            mount: "transit".into(),
            key: key.into(),
            token: Zeroizing::new("s.token".into()),
            token_file: None,
            timeout: Duration::from_secs(1),
        }
    }

    #[test]
    fn settings_are_checked_and_the_token_hidden() {
        let keys = TransitKeys::new(settings("http://127.0.0.1:8200/", "tokenvault")).unwrap();
        assert!(TransitKeys::new(settings("https://vault.internal:8200", "k")).is_ok());
        assert_eq!(keys.base, "http://127.0.0.1:8200/v1/transit");
        assert!(!format!("{keys:?}").contains("s.token"));
        for bad in [
            "ftp://x",
            "not a url",
            "http://",
            "http://vault.internal:8200",
            "https://user:pw@vault.internal",
        ] {
            assert!(TransitKeys::new(settings(bad, "k")).is_err(), "{bad}");
        }
        for bad in ["", "a/b", "..", "k?x=1", "k#", "k y"] {
            assert!(
                TransitKeys::new(settings("http://h", bad)).is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn versions_are_read_from_transit_ciphertexts_only() {
        assert_eq!(TransitKeys::version(b"vault:v1:abc"), Some(1));
        assert_eq!(TransitKeys::version(b"vault:v12:abc"), Some(12));
        assert_eq!(TransitKeys::version(b"vault:vx:abc"), None);
        assert_eq!(TransitKeys::version(&[1, 2, 3]), None);
    }
}
