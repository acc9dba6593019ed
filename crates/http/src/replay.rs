//! An idempotent request's response as the vault keeps it for replay (`idempotency.rs`): the
//! status, the `Content-Type` and the body, as bytes the domain seals and stores without
//! reading them.

/// A response kept for replay.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct StoredResponse {
    /// Status.
    pub(crate) status: u16,
    /// `Content-Type`, if any.
    pub(crate) content_type: Option<String>,
    /// Body.
    pub(crate) body: Vec<u8>,
}

impl std::fmt::Debug for StoredResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The body may hold token data or an API key.
        f.debug_struct("StoredResponse")
            .field("status", &self.status)
            .field("body_len", &self.body.len())
            .finish_non_exhaustive()
    }
}

impl StoredResponse {
    /// The status (2 bytes, big-endian), the length of the content type (2 bytes) and its
    /// text, then the body. Never the domain's mark of a response not kept
    /// (`UNREPLAYABLE`, a status of 0): a status is at least 100.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let content_type = self.content_type.as_deref().unwrap_or("").as_bytes();
        let length = u16::try_from(content_type.len()).unwrap_or(0);
        let mut out = Vec::with_capacity(4 + content_type.len() + self.body.len());
        out.extend_from_slice(&self.status.to_be_bytes());
        out.extend_from_slice(&length.to_be_bytes());
        out.extend_from_slice(&content_type[..usize::from(length)]);
        out.extend_from_slice(&self.body);
        out
    }

    /// What [`Self::encode`] made, or `None`.
    pub(crate) fn decode(bytes: &[u8]) -> Option<Self> {
        let status = u16::from_be_bytes([*bytes.first()?, *bytes.get(1)?]);
        let length = usize::from(u16::from_be_bytes([*bytes.get(2)?, *bytes.get(3)?]));
        let content_type = bytes.get(4..4 + length)?;
        let content_type = std::str::from_utf8(content_type).ok()?;
        Some(Self {
            status,
            content_type: (!content_type.is_empty()).then(|| content_type.to_string()),
            body: bytes.get(4 + length..)?.to_vec(),
        })
    }
}

/// The response `bytes` hold with its status, or `None` when they cannot be answered (a record
/// an older build stored as its mark of a success not kept reads as status 0).
pub(crate) fn replayable(bytes: &[u8]) -> Option<(actix_web::http::StatusCode, StoredResponse)> {
    let stored = StoredResponse::decode(bytes)?;
    Some((
        actix_web::http::StatusCode::from_u16(stored.status).ok()?,
        stored,
    ))
}

#[cfg(test)]
mod tests {
    use super::{StoredResponse, replayable};

    #[test]
    fn stored_responses_round_trip() {
        for response in [
            StoredResponse {
                status: 201,
                content_type: Some("application/json".into()),
                body: br#"{"id":"x"}"#.to_vec(),
            },
            StoredResponse {
                status: 204,
                content_type: None,
                body: Vec::new(),
            },
        ] {
            let bytes = response.encode();
            assert_ne!(bytes, tokenvault_domain::service::UNREPLAYABLE);
            assert_eq!(StoredResponse::decode(&bytes), Some(response));
        }
        assert_eq!(StoredResponse::decode(&[0, 200, 0]), None);
        // An older build's mark of a success not kept: not a response.
        assert!(replayable(&[0, 0, 0, 0]).is_none());
        assert!(replayable(&[]).is_none());
        let created = StoredResponse {
            status: 201,
            content_type: None,
            body: b"{}".to_vec(),
        };
        assert_eq!(
            replayable(&created.encode()).map(|(s, _)| s.as_u16()),
            Some(201)
        );
        let debug = format!(
            "{:?}",
            StoredResponse {
                status: 201,
                content_type: None,
                body: b"4242424242424242".to_vec(),
            }
        );
        assert!(!debug.contains("4242"), "{debug}");
    }
}
