//! The mapping of the areas' own errors to problems: a token write's conflicts, tenant code's
//! failures and a proxy's destination, each with its status (docs/decisions.md §7, §8).

use actix_web::http::StatusCode;
use tokenvault_domain::{CodeFailure, DestinationFailure, ProxyError, ReactorError, TokenError};

use crate::problem::ApiError;

impl From<TokenError> for ApiError {
    fn from(err: TokenError) -> Self {
        if !matches!(err, TokenError::Failed(_)) {
            // Its message names the conflict, never a value.
            tracing::info!(conflict = %err, "conflict");
        }
        let detail = match err {
            TokenError::Failed(e) => return e.into(),
            TokenError::IdTaken => "A token with this id already exists.",
            TokenError::IdRepeated => "The request gives the same token id more than once.",
            TokenError::IdenticalExists => "A token with the same data already exists.",
            TokenError::Changed => {
                "The token changed while it was being updated; send the update again."
            }
            TokenError::AssociationExists => "The tokens are already associated.",
        };
        Self::new(StatusCode::CONFLICT, detail)
    }
}

impl From<ReactorError> for ApiError {
    fn from(err: ReactorError) -> Self {
        match err {
            ReactorError::Failed(e) => e.into(),
            ReactorError::Code(failure) => code_problem(failure),
            ReactorError::Tokenize(e) => e.into(),
            ReactorError::FormulaInUse => Self::new(
                StatusCode::CONFLICT,
                "A reactor uses the formula; delete or change the reactor first.",
            ),
        }
    }
}

impl From<ProxyError> for ApiError {
    fn from(err: ProxyError) -> Self {
        match err {
            ProxyError::Failed(e) => e.into(),
            ProxyError::Code(failure) => code_problem(failure),
            ProxyError::Destination(failure) => destination_problem(failure),
        }
    }
}

/// Tenant code's failure (docs/decisions.md §7): a thrown class keeps its status when it is an
/// error status (400–599, else 500), its message as `detail` and its argument as `errors`; a
/// custom response keeps its status when it is one that carries a body (200–599 but 204 and
/// 304, else 500: a 1xx or body-less status with a body would split the HTTP stream); a limit
/// or an unusable transform result is a 500 saying which; every worker busy is a 503.
fn code_problem(failure: CodeFailure) -> ApiError {
    let plain = |status: StatusCode, detail: String| ApiError {
        status,
        detail,
        errors: None,
        custom: None,
        retry_after: None,
    };
    match failure {
        CodeFailure::Thrown {
            status,
            detail,
            errors,
        } => ApiError {
            errors,
            ..plain(
                StatusCode::from_u16(status)
                    .ok()
                    .filter(|s| s.is_client_error() || s.is_server_error())
                    .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                detail,
            )
        },
        CodeFailure::Custom {
            status,
            headers,
            body,
        } => {
            let status = StatusCode::from_u16(status)
                .ok()
                .filter(|s| {
                    (200..=599).contains(&s.as_u16())
                        && *s != StatusCode::NO_CONTENT
                        && *s != StatusCode::NOT_MODIFIED
                })
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            ApiError {
                custom: Some(Box::new((status, headers, body))),
                ..plain(status, String::new())
            }
        }
        CodeFailure::Limit(why) | CodeFailure::Unusable(why) => {
            plain(StatusCode::INTERNAL_SERVER_ERROR, why)
        }
        CodeFailure::Busy => plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "every code worker is busy; try again".into(),
        ),
    }
}

/// A destination that could not be used (docs/decisions.md §8): refused by the policy 403,
/// unreachable 502, too slow 504.
fn destination_problem(failure: DestinationFailure) -> ApiError {
    match failure {
        DestinationFailure::Refused => {
            ApiError::new(StatusCode::FORBIDDEN, "the destination is not allowed")
        }
        DestinationFailure::Unreachable(detail) => ApiError::new(StatusCode::BAD_GATEWAY, detail),
        DestinationFailure::TimedOut => ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            "the destination did not answer in time",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokenvault_domain::Error;

    #[test]
    fn each_token_conflict_is_a_409_saying_which_and_the_shared_failures_keep_theirs() {
        let conflicts = [
            TokenError::IdTaken,
            TokenError::IdRepeated,
            TokenError::IdenticalExists,
            TokenError::Changed,
            TokenError::AssociationExists,
        ];
        let mut details = std::collections::HashSet::new();
        for conflict in conflicts {
            let err = ApiError::from(conflict);
            assert_eq!(err.status(), StatusCode::CONFLICT);
            assert!(details.insert(err.detail), "each detail names its conflict");
        }
        let missing = ApiError::from(TokenError::Failed(Error::NotFound));
        assert_eq!(missing.status(), StatusCode::NOT_FOUND);
        let from_reactor = ApiError::from(ReactorError::from(TokenError::IdTaken));
        assert_eq!(from_reactor.status(), StatusCode::CONFLICT);
        assert_eq!(
            ApiError::from(ReactorError::FormulaInUse).status(),
            StatusCode::CONFLICT
        );
    }

    fn thrown(status: u16) -> ApiError {
        ReactorError::Code(CodeFailure::Thrown {
            status,
            detail: "nope".into(),
            errors: None,
        })
        .into()
    }

    #[test]
    fn a_thrown_class_keeps_an_error_status_and_nothing_else() {
        assert_eq!(thrown(418).status(), StatusCode::IM_A_TEAPOT);
        assert_eq!(thrown(503).status(), StatusCode::SERVICE_UNAVAILABLE);
        for not_an_error in [0, 99, 200, 302, 600, 1000] {
            assert_eq!(
                thrown(not_an_error).status(),
                StatusCode::INTERNAL_SERVER_ERROR,
                "{not_an_error}"
            );
        }
    }

    #[test]
    fn a_custom_response_keeps_only_a_status_that_carries_a_body() {
        let custom = |status| {
            ApiError::from(ProxyError::Code(CodeFailure::Custom {
                status,
                headers: serde_json::json!({}),
                body: serde_json::json!({"a": 1}),
            }))
            .status()
        };
        assert_eq!(custom(201), StatusCode::CREATED);
        assert_eq!(custom(599).as_u16(), 599);
        for split in [100, 101, 204, 304, 600] {
            assert_eq!(custom(split), StatusCode::INTERNAL_SERVER_ERROR, "{split}");
        }
    }

    #[test]
    fn destinations_and_busy_workers_have_their_statuses() {
        let refused = ApiError::from(ProxyError::Destination(DestinationFailure::Refused));
        assert_eq!(refused.status(), StatusCode::FORBIDDEN);
        assert_eq!(refused.detail, "the destination is not allowed");
        let slow = ApiError::from(ProxyError::Destination(DestinationFailure::TimedOut));
        assert_eq!(slow.status(), StatusCode::GATEWAY_TIMEOUT);
        let down = ProxyError::Destination(DestinationFailure::Unreachable("refused".into()));
        assert_eq!(ApiError::from(down).status(), StatusCode::BAD_GATEWAY);
        let busy = ApiError::from(ReactorError::Code(CodeFailure::Busy));
        assert_eq!(busy.status(), StatusCode::SERVICE_UNAVAILABLE);
        let failed = ApiError::from(ReactorError::Failed(Error::NotFound));
        assert_eq!(failed.status(), StatusCode::NOT_FOUND);
    }
}
