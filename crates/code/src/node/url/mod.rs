//! The host function under `URL` (`url.js`): WHATWG URL parsing and setting by the `url`
//! crate (Servo's), so that URLs read in tenant code as they do in Node.js.

use crate::worker::host_function::host_function;
use rquickjs::{Ctx, Exception, Object};
use url::Url;

/// The longest URL (characters) the host parses.
const MAX_URL: usize = 64 * 1024;

/// Installs `__url(input, base, field, value)`: `input` parsed (against `base` when given),
/// then `field` set to `value` when given; the parts of the result, or a `TypeError`.
pub(crate) fn install<'js>(ctx: &Ctx<'js>, host: &Object<'js>) -> rquickjs::Result<()> {
    host.set("url", host_function(ctx, parse)?)
}

fn parse(
    ctx: Ctx<'_>,
    input: String,
    base: Option<String>,
    field: Option<String>,
    value: Option<String>,
) -> rquickjs::Result<Vec<String>> {
    if input.len() > MAX_URL || base.as_ref().is_some_and(|b| b.len() > MAX_URL) {
        return Err(Exception::throw_type(&ctx, "Invalid URL: too long"));
    }
    let invalid = || {
        Exception::throw_type(
            &ctx,
            &format!(
                "Invalid URL: {}",
                input.chars().take(200).collect::<String>()
            ),
        )
    };
    let mut url = match base.filter(|b| !b.is_empty()) {
        None => Url::parse(&input).map_err(|_| invalid())?,
        Some(base) => Url::parse(&base)
            .and_then(|b| b.join(&input))
            .map_err(|_| invalid())?,
    };
    if let (Some(field), Some(value)) = (field, value) {
        // As the WHATWG setters: a value that does not fit leaves the URL as it was.
        let _ = match field.as_str() {
            "protocol" => url.set_scheme(value.trim_end_matches(':')),
            "username" => url.set_username(&value),
            "password" => {
                url.set_password(Some(&value).filter(|v| !v.is_empty()).map(String::as_str))
            }
            "host" => {
                let before = url.clone();
                let (host, port) = split_port(&value);
                if url.set_host(Some(host)).is_ok()
                    && let Some(port) = port
                    && url.set_port(port.parse().ok()).is_err()
                {
                    url = before;
                }
                Ok(())
            }
            "hostname" => url.set_host(Some(&value)).map_err(|_| ()),
            "port" => url.set_port(if value.is_empty() {
                None
            } else {
                value.parse().ok()
            }),
            "pathname" => {
                url.set_path(&value);
                Ok(())
            }
            "search" => {
                let q = value.strip_prefix('?').unwrap_or(&value);
                url.set_query(Some(q).filter(|q| !q.is_empty()));
                Ok(())
            }
            "hash" => {
                let h = value.strip_prefix('#').unwrap_or(&value);
                url.set_fragment(Some(h).filter(|h| !h.is_empty()));
                Ok(())
            }
            _ => Err(()),
        };
    }
    let search = url.query().map(|q| format!("?{q}")).filter(|q| q.len() > 1);
    let hash = url
        .fragment()
        .map(|f| format!("#{f}"))
        .filter(|f| f.len() > 1);
    Ok(vec![
        url.as_str().to_string(),
        format!("{}:", url.scheme()),
        url.username().to_string(),
        url.password().unwrap_or_default().to_string(),
        match (url.host_str(), url.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_string(),
            _ => String::new(),
        },
        url.host_str().unwrap_or_default().to_string(),
        url.port().map(|p| p.to_string()).unwrap_or_default(),
        url.path().to_string(),
        search.unwrap_or_default(),
        hash.unwrap_or_default(),
        url.origin().ascii_serialization(),
    ])
}

/// `host:port` into its parts (an IPv6 literal keeps its colons).
fn split_port(value: &str) -> (&str, Option<&str>) {
    match value.rfind(':') {
        Some(at) if !value[at..].contains(']') && value[..at].matches(':').count() == 0 => {
            (&value[..at], Some(&value[at + 1..]))
        }
        Some(at) if value.starts_with('[') && value[..at].ends_with(']') => {
            (&value[..at], Some(&value[at + 1..]))
        }
        _ => (value, None),
    }
}

#[cfg(test)]
mod tests;
