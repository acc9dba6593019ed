//! The destination policy: the scheme, and which hosts and addresses may be reached.
//!
//! `allowed_hosts` entries are host names or literal addresses, which match the URL's host
//! exactly (a name entry also allows whatever that name resolves to), or CIDRs, which match the
//! address a host is or resolves to. Every other address of a special-purpose range
//! ([`crate::address`]) is refused.

use std::collections::HashSet;
use std::net::IpAddr;

use ipnet::IpNet;
use url::{Host, Url};

use crate::address::{self, Class};

/// What may be reached. Built once from the settings.
#[derive(Debug)]
pub(crate) struct Policy {
    allow_http: bool,
    /// Host name entries, lower case, without a trailing dot.
    names: HashSet<String>,
    /// Literal address entries.
    addresses: Vec<IpAddr>,
    /// CIDR entries.
    networks: Vec<IpNet>,
}

impl Policy {
    /// Parses the allow-list entries (blank ones are skipped).
    ///
    /// # Errors
    /// An entry that is neither a CIDR, an address nor a valid host name, named.
    pub(crate) fn new(allow_http: bool, allowed_hosts: &[String]) -> Result<Self, String> {
        let mut policy = Policy {
            allow_http,
            names: HashSet::new(),
            addresses: Vec::new(),
            networks: Vec::new(),
        };
        for raw in allowed_hosts {
            let entry = raw.trim();
            if entry.is_empty() {
                continue;
            }
            if entry.contains('/') {
                let network: IpNet = entry
                    .parse()
                    .map_err(|_| format!("the allowed host {entry:?} is not a valid CIDR"))?;
                policy.networks.push(network.trunc());
                continue;
            }
            let bare = entry
                .strip_prefix('[')
                .and_then(|rest| rest.strip_suffix(']'))
                .unwrap_or(entry);
            if let Ok(ip) = bare.parse::<IpAddr>() {
                policy.addresses.push(ip);
                continue;
            }
            // The URL host parser: names are lower-cased and IDNA-mapped, and the other IPv4
            // spellings (`0x7f000001`, `127.1`, ...) become addresses, as in URLs.
            match Host::parse(entry) {
                Ok(Host::Domain(name)) => {
                    policy.names.insert(normalize_name(&name));
                }
                Ok(Host::Ipv4(ip)) => policy.addresses.push(IpAddr::V4(ip)),
                Ok(Host::Ipv6(ip)) => policy.addresses.push(IpAddr::V6(ip)),
                Err(_) => {
                    return Err(format!(
                        "the allowed host {entry:?} is not a host name, an address or a CIDR"
                    ));
                }
            }
        }
        Ok(policy)
    }

    /// What can be decided from the URL alone: the scheme, and a host that is a literal
    /// address. Host names pass: they are checked when resolved ([`Policy::resolved`]).
    ///
    /// # Errors
    /// Why the URL is refused.
    pub(crate) fn check_url(&self, url: &Url) -> Result<(), String> {
        match url.scheme() {
            "https" => {}
            "http" if self.allow_http => {}
            "http" => return Err("http is not allowed: the destination must be https".into()),
            other => return Err(format!("the scheme {other:?} is not allowed")),
        }
        let ip = match url.host() {
            Some(Host::Domain(_)) => return Ok(()),
            Some(Host::Ipv4(ip)) => IpAddr::V4(ip),
            Some(Host::Ipv6(ip)) => IpAddr::V6(ip),
            None => return Err("the URL has no host".into()),
        };
        if self.addresses.iter().any(|&entry| same_address(entry, ip)) {
            return Ok(());
        }
        self.check_address(ip)
    }

    /// Whether a host name is an allowed name entry (then whatever it resolves to is allowed).
    pub(crate) fn name_allowed(&self, name: &str) -> bool {
        self.names.contains(&normalize_name(name))
    }

    /// Whether an address a host name resolved to may be connected to: not of a refused
    /// class, or within an allowed CIDR.
    ///
    /// # Errors
    /// Why it is refused.
    pub(crate) fn check_address(&self, ip: IpAddr) -> Result<(), String> {
        let class = address::classify(ip);
        if !class.is_refused() || self.in_allowed_network(ip) {
            return Ok(());
        }
        Err(refusal(ip, class))
    }

    fn in_allowed_network(&self, ip: IpAddr) -> bool {
        let embedded = match ip {
            IpAddr::V6(v6) => address::embedded_v4(v6).map(IpAddr::V4),
            IpAddr::V4(_) => None,
        };
        self.networks.iter().any(|network| {
            network.contains(&ip) || embedded.is_some_and(|v4| network.contains(&v4))
        })
    }
}

/// Two spellings of one destination: equal, or one embeds the other (`::ffff:127.0.0.1`).
fn same_address(entry: IpAddr, ip: IpAddr) -> bool {
    canonical(entry) == canonical(ip)
}

fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => address::embedded_v4(v6).map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    }
}

fn normalize_name(name: &str) -> String {
    name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase()
}

fn refusal(ip: IpAddr, class: Class) -> String {
    match ip {
        IpAddr::V6(v6) => match address::embedded_v4(v6) {
            Some(v4) => format!("{ip} embeds {v4}, {class}"),
            None => format!("{ip} is {class}"),
        },
        IpAddr::V4(_) => format!("{ip} is {class}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(allow_http: bool, entries: &[&str]) -> Policy {
        let entries: Vec<String> = entries.iter().map(|e| (*e).to_owned()).collect();
        Policy::new(allow_http, &entries).expect("valid entries")
    }

    fn check(policy: &Policy, url: &str) -> Result<(), String> {
        policy.check_url(&Url::parse(url).expect("a URL"))
    }

    #[test]
    fn entries_are_parsed_and_bad_ones_named() {
        let p = policy(
            false,
            &[
                " api.Example.COM. ",
                "",
                "10.1.2.3",
                "[::1]",
                "0x7f000002",
                "192.168.0.0/16",
                "fd00::/8",
            ],
        );
        assert!(p.names.contains("api.example.com"));
        assert_eq!(p.addresses.len(), 3);
        assert_eq!(p.networks.len(), 2);
        for bad in [
            "exa mple.com",
            "example.com:443",
            "https://example.com",
            "10.0.0.0/33",
            "nonsense/8",
        ] {
            let err = Policy::new(false, &[bad.to_owned()]).expect_err(bad);
            assert!(err.contains(bad), "{err}");
        }
    }

    #[test]
    fn the_scheme_must_be_https_unless_http_is_allowed() {
        assert!(check(&policy(false, &[]), "https://example.com/").is_ok());
        assert!(check(&policy(false, &[]), "http://example.com/").is_err());
        assert!(check(&policy(true, &[]), "http://example.com/").is_ok());
        assert!(check(&policy(true, &[]), "ftp://example.com/").is_err());
        assert!(check(&policy(true, &[]), "file:///etc/passwd").is_err());
    }

    #[test]
    fn literal_addresses_are_refused_in_every_spelling() {
        let p = policy(true, &[]);
        for url in [
            "http://127.0.0.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0177.0.0.1/",
            "http://127.1/",
            "http://127.0.0.1./",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:7f00:1]/",
            "http://[::127.0.0.1]/",
            "http://[64:ff9b::7f00:1]/",
            "http://[2002:7f00:1::1]/",
            "http://10.0.0.1/",
            "http://169.254.169.254/",
            "http://0.0.0.0/",
            "http://0/",
            "http://[::]/",
            "http://[fe80::1]/",
            "http://[fd00::1]/",
            "http://100.64.0.1/",
            "http://224.0.0.1/",
            "http://255.255.255.255/",
        ] {
            let err = check(&p, url).expect_err(url);
            assert!(
                err.contains(" is ") || err.contains(" embeds "),
                "{url}: {err}"
            );
        }
        assert!(check(&p, "http://8.8.8.8/").is_ok());
        assert!(check(&p, "http://[2606:4700:4700::1111]/").is_ok());
        assert!(
            check(&p, "http://localhost/").is_ok(),
            "names are checked when resolved"
        );
    }

    #[test]
    fn an_address_entry_allows_that_address_only() {
        let p = policy(true, &["127.0.0.1"]);
        assert!(check(&p, "http://127.0.0.1:8080/").is_ok());
        assert!(check(&p, "http://2130706433/").is_ok(), "the same address");
        assert!(
            check(&p, "http://[::ffff:127.0.0.1]/").is_ok(),
            "the same address"
        );
        assert!(check(&p, "http://127.0.0.2/").is_err());
        assert!(check(&p, "http://[::1]/").is_err());
        let resolved = "127.0.0.1".parse().expect("an address");
        assert!(
            p.check_address(resolved).is_err(),
            "not for what a name resolves to"
        );
    }

    #[test]
    fn a_cidr_entry_allows_literal_and_resolved_addresses() {
        let p = policy(true, &["127.0.0.0/8", "fd00::/16"]);
        assert!(check(&p, "http://127.0.0.1/").is_ok());
        assert!(check(&p, "http://127.9.9.9/").is_ok());
        assert!(check(&p, "http://[::ffff:127.0.0.1]/").is_ok());
        assert!(check(&p, "http://[fd00::5]/").is_ok());
        assert!(check(&p, "http://[fd01::5]/").is_err());
        assert!(check(&p, "http://[::1]/").is_err());
        assert!(check(&p, "http://10.0.0.1/").is_err());
        assert!(p.check_address("127.0.0.1".parse().expect("ip")).is_ok());
        assert!(p.check_address("::1".parse().expect("ip")).is_err());
    }

    #[test]
    fn name_entries_match_case_insensitively() {
        let p = policy(true, &["LocalHost"]);
        assert!(p.name_allowed("localhost"));
        assert!(p.name_allowed("LOCALHOST."));
        assert!(!p.name_allowed("localhost.localdomain"));
        assert!(!p.name_allowed("evil-localhost"));
    }

    #[test]
    fn refusals_say_why() {
        let p = policy(true, &[]);
        let err = check(&p, "http://[::ffff:169.254.169.254]/").expect_err("refused");
        assert_eq!(
            err,
            "::ffff:169.254.169.254 embeds 169.254.169.254, a link-local address"
        );
        let err = check(&p, "http://10.0.0.1/").expect_err("refused");
        assert_eq!(err, "10.0.0.1 is a private address");
    }
}
