//! The resolver hook: every connection to a host name resolves it here, and addresses the
//! policy refuses are dropped before any connection is attempted. A name that resolves (or
//! re-resolves later) only to refused addresses fails with [`RefusedDestination`].

use std::net::SocketAddr;
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::policy::Policy;

/// The destination policy refused every address a host name resolved to. Found again in the
/// source chain of the client's error, to answer `ForwardError::Refused`.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct RefusedDestination(pub(crate) String);

/// A [`Resolve`] that resolves with the system resolver and filters by the policy.
pub(crate) struct PolicyResolver {
    policy: Arc<Policy>,
}

impl PolicyResolver {
    pub(crate) fn new(policy: Arc<Policy>) -> Self {
        Self { policy }
    }
}

impl Resolve for PolicyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = Arc::clone(&self.policy);
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let resolved: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed = filter(&policy, &host, resolved)?;
            let addrs: Addrs = Box::new(allowed.into_iter());
            Ok(addrs)
        })
    }
}

/// The addresses that may be connected to: all of them for an allowed name entry, else those
/// the policy does not refuse.
fn filter(
    policy: &Policy,
    host: &str,
    resolved: Vec<SocketAddr>,
) -> Result<Vec<SocketAddr>, Box<dyn std::error::Error + Send + Sync>> {
    if resolved.is_empty() {
        return Err(format!("{host} resolved to no address").into());
    }
    if policy.name_allowed(host) {
        return Ok(resolved);
    }
    let mut first_refusal = None;
    let allowed: Vec<SocketAddr> = resolved
        .into_iter()
        .filter(|addr| match policy.check_address(addr.ip()) {
            Ok(()) => true,
            Err(why) => {
                first_refusal.get_or_insert(why);
                false
            }
        })
        .collect();
    match first_refusal {
        // Never which address, nor why it is refused: the caller is tenant code, which would
        // learn what the server's resolver maps a name to, ten names a call (attack review of
        // 3948bc8). The operator's log has it, at debug.
        Some(why) if allowed.is_empty() => {
            tracing::debug!(host, %why, "a destination resolves only to refused addresses");
            Err(Box::new(RefusedDestination(format!(
                "{host} is not an allowed destination"
            ))))
        }
        _ => Ok(allowed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(entries: &[&str]) -> Policy {
        let entries: Vec<String> = entries.iter().map(|e| (*e).to_owned()).collect();
        Policy::new(true, &entries).expect("valid entries")
    }

    fn addrs(list: &[&str]) -> Vec<SocketAddr> {
        list.iter()
            .map(|ip| SocketAddr::new(ip.parse().expect("an address"), 0))
            .collect()
    }

    #[test]
    fn refused_addresses_are_dropped() {
        let kept = filter(
            &policy(&[]),
            "mixed.example",
            addrs(&["10.0.0.1", "93.184.215.14", "::1", "2606:2800::1"]),
        )
        .expect("some remain");
        assert_eq!(kept, addrs(&["93.184.215.14", "2606:2800::1"]));
    }

    #[test]
    fn a_name_left_with_no_address_is_refused() {
        let err = filter(
            &policy(&[]),
            "internal.example",
            addrs(&["10.0.0.1", "::1"]),
        )
        .expect_err("refused");
        let refused = err
            .downcast_ref::<RefusedDestination>()
            .expect("a RefusedDestination");
        assert_eq!(refused.0, "internal.example is not an allowed destination");
    }

    #[test]
    fn an_allowed_name_keeps_every_address() {
        let kept = filter(
            &policy(&["internal.example"]),
            "internal.example",
            addrs(&["10.0.0.1", "::1"]),
        )
        .expect("allowed");
        assert_eq!(kept.len(), 2);
    }

    #[test]
    fn a_cidr_entry_keeps_the_addresses_within() {
        let kept = filter(
            &policy(&["10.0.0.0/8"]),
            "internal.example",
            addrs(&["10.0.0.1", "192.168.0.1"]),
        )
        .expect("allowed");
        assert_eq!(kept, addrs(&["10.0.0.1"]));
    }

    #[test]
    fn no_address_at_all_is_not_a_refusal() {
        let err = filter(&policy(&[]), "nothing.example", Vec::new()).expect_err("fails");
        assert!(err.downcast_ref::<RefusedDestination>().is_none());
    }
}
