//! The JSON shapes of a `fetch` on the channel: what the worker sends (`{method, url, headers:
//! [[name, value]], body}`, the body in base64) read into the domain's request, and the answer
//! written back the same way.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use tokenvault_domain::ports::forward::{OutboundRequest, OutboundResponse};

/// The most headers one request carries.
const MAX_HEADERS: usize = 100;

/// The request the worker described, or `None` when it is not one (wrong types, a body that is
/// not base64, too many headers).
pub fn request_of(value: &Value) -> Option<OutboundRequest> {
    let method = value.get("method")?.as_str()?.to_string();
    let url = value.get("url")?.as_str()?.to_string();
    let headers = value
        .get("headers")?
        .as_array()?
        .iter()
        .map(|pair| {
            let pair = pair.as_array()?;
            match pair.as_slice() {
                [name, value] => Some((name.as_str()?.to_string(), value.as_str()?.to_string())),
                _ => None,
            }
        })
        .collect::<Option<Vec<_>>>()?;
    if headers.len() > MAX_HEADERS {
        return None;
    }
    let body = STANDARD.decode(value.get("body")?.as_str()?).ok()?;
    Some(OutboundRequest {
        method,
        url,
        headers,
        body,
    })
}

/// The answer as the worker reads it.
pub fn answer_of(answer: &OutboundResponse) -> Value {
    json!({
        "status": answer.status,
        "headers": answer.headers.iter().map(|(n, v)| json!([n, v])).collect::<Vec<_>>(),
        "body": STANDARD.encode(&answer.body),
    })
}
