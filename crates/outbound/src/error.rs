//! From the client's errors to the port's [`ForwardError`], without the URL (its query may carry
//! detokenized data).

use std::error::Error as _;

use tokenvault_domain::ports::forward::ForwardError;

use crate::resolve::RefusedDestination;

/// The port's error for a failed exchange: `Refused` when the resolver hook refused every
/// address (found in the source chain), `Timeout` when a timeout elapsed, else `Unreachable`.
pub(crate) fn from_reqwest(err: &reqwest::Error) -> ForwardError {
    let mut source = err.source();
    while let Some(cause) = source {
        if let Some(refused) = cause.downcast_ref::<RefusedDestination>() {
            return ForwardError::Refused(refused.0.clone());
        }
        source = cause.source();
    }
    if err.is_timeout() {
        return ForwardError::Timeout;
    }
    ForwardError::Unreachable(describe(err))
}

/// The error and its causes, one after the other, the URL left out.
fn describe(err: &reqwest::Error) -> String {
    let mut text = if err.is_connect() {
        "could not connect".to_owned()
    } else if err.is_body() || err.is_decode() {
        "the response could not be read".to_owned()
    } else if err.is_builder() {
        "the request could not be built".to_owned()
    } else {
        "the exchange failed".to_owned()
    };
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
