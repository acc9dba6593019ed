//! Reading the destination's answer: headers without the hop-by-hop ones, and the body read in
//! chunks up to a bound.

use reqwest::header::{CONNECTION, HeaderMap};
use tokenvault_domain::ports::forward::{ForwardError, OutboundResponse};

use crate::error;

pub(crate) use tokenvault_domain::ports::forward::is_hop_by_hop;

/// Reads the whole answer.
///
/// # Errors
/// `Unreachable` when the body is larger than `max_bytes` or the exchange fails, `Timeout` when
/// it does not finish in time.
pub(crate) async fn read(
    mut answer: reqwest::Response,
    max_bytes: usize,
) -> Result<OutboundResponse, ForwardError> {
    let too_large =
        || ForwardError::Unreachable(format!("the response is larger than {max_bytes} bytes"));
    let announced = answer.content_length();
    if announced.is_some_and(|len| usize::try_from(len).map_or(true, |len| len > max_bytes)) {
        return Err(too_large());
    }
    let status = answer.status().as_u16();
    let headers = filter_headers(answer.headers());
    let capacity = announced
        .and_then(|len| usize::try_from(len).ok())
        .unwrap_or(0)
        .min(max_bytes);
    let mut body = Vec::with_capacity(capacity);
    while let Some(chunk) = answer
        .chunk()
        .await
        .map_err(|err| error::from_reqwest(&err))?
    {
        if chunk.len() > max_bytes - body.len() {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(OutboundResponse {
        status,
        headers,
        body,
    })
}

/// The headers in order, names lower case, without hop-by-hop headers nor those the
/// `Connection` header names.
fn filter_headers(headers: &HeaderMap) -> Vec<(String, String)> {
    let named_by_connection: Vec<String> = headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|token| token.trim().to_ascii_lowercase())
        .filter(|token| !token.is_empty())
        .collect();
    headers
        .iter()
        .filter(|(name, _)| {
            !is_hop_by_hop(name.as_str()) && !named_by_connection.iter().any(|n| n == name.as_str())
        })
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use reqwest::header::{HeaderName, HeaderValue};

    use super::*;

    #[test]
    fn hop_by_hop_headers_are_removed() {
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("Content-Type", "application/json"),
            ("Connection", "keep-alive, X-Secret-Hop"),
            ("Keep-Alive", "timeout=5"),
            ("Transfer-Encoding", "chunked"),
            ("Content-Length", "12"),
            ("TE", "trailers"),
            ("Trailer", "x-checksum"),
            ("Upgrade", "h2c"),
            ("Proxy-Authenticate", "Basic"),
            ("Proxy-Authorization", "Basic x"),
            ("X-Secret-Hop", "1"),
            ("Set-Cookie", "a=1"),
            ("set-cookie", "b=2"),
            ("X-Request-Id", "r1"),
        ] {
            headers.append(
                HeaderName::from_bytes(name.as_bytes()).expect("a name"),
                HeaderValue::from_static(value),
            );
        }
        assert_eq!(
            filter_headers(&headers),
            vec![
                ("content-type".to_owned(), "application/json".to_owned()),
                ("set-cookie".to_owned(), "a=1".to_owned()),
                ("set-cookie".to_owned(), "b=2".to_owned()),
                ("x-request-id".to_owned(), "r1".to_owned()),
            ]
        );
    }

    #[test]
    fn opaque_header_bytes_are_kept_lossily() {
        let mut headers = HeaderMap::new();
        headers.insert(
            HeaderName::from_static("x-bin"),
            HeaderValue::from_bytes(b"caf\xe9").expect("a value"),
        );
        assert_eq!(filter_headers(&headers)[0].1, "caf\u{fffd}");
    }

    #[test]
    fn request_side_hop_by_hop_check_ignores_case() {
        assert!(is_hop_by_hop("Connection"));
        assert!(is_hop_by_hop("TRANSFER-ENCODING"));
        assert!(!is_hop_by_hop("content-type"));
    }
}
