//! Proxies (docs/decisions.md §8): `/proxies` CRUD (`manage`) and invocation (`invoke`).

mod invoke;
mod manage;

use serde_json::Value;

pub use invoke::{ProxyCall, ProxyReply};

/// A transform as a client sent it: `{"code": …}`.
#[derive(Clone, Debug, Default)]
pub struct RawTransform {
    /// `code`.
    pub code: Option<String>,
}

/// `POST`/`PUT /proxies` as a client sent it (a PUT replaces every field, as a create sets it).
#[derive(Clone, Debug, Default)]
pub struct RawProxy {
    /// `name`.
    pub name: Option<String>,
    /// `destination_url`.
    pub destination_url: Option<String>,
    /// `request_transform` (`None`: absent or null).
    pub request_transform: Option<RawTransform>,
    /// `response_transform` (`None`: absent or null).
    pub response_transform: Option<RawTransform>,
    /// `application.id`, as given (a UUID string); `None` when absent or null.
    pub application_id: Option<String>,
    /// `configuration` (an object of strings, or null).
    pub configuration: Option<Value>,
    /// `require_auth` (default true).
    pub require_auth: Option<bool>,
}
