//! Classification of IP addresses for the destination policy: which special-purpose range an
//! address falls in. Anything but [`Class::Public`] is refused unless an allow-list entry allows
//! it. IPv6 forms that embed an IPv4 address (IPv4-mapped, IPv4-compatible, NAT64 `64:ff9b::/96`,
//! 6to4 `2002::/16`) are judged by the embedded IPv4 address.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::{Ipv4Net, Ipv6Net};

/// The range an address belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    /// A globally routable address.
    Public,
    /// 127.0.0.0/8, ::1.
    Loopback,
    /// 10/8, 172.16/12, 192.168/16, and the deprecated IPv6 site-local fec0::/10.
    Private,
    /// 100.64.0.0/10 (carrier-grade NAT).
    SharedCgnat,
    /// 169.254.0.0/16, fe80::/10.
    LinkLocal,
    /// fc00::/7.
    UniqueLocal,
    /// 224.0.0.0/4, ff00::/8.
    Multicast,
    /// 255.255.255.255.
    Broadcast,
    /// 0.0.0.0/8, ::.
    Unspecified,
    /// 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32, 3fff::/20.
    Documentation,
    /// 198.18.0.0/15.
    Benchmarking,
    /// Any other special-purpose or unallocated range (240/4, 192.0.0/24, 192.88.99/24,
    /// 2001::/23, 100::/64, IPv6 outside 2000::/3, ...).
    Reserved,
}

impl Class {
    /// Whether the policy refuses it unless allowed.
    pub(crate) fn is_refused(self) -> bool {
        self != Class::Public
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Class::Public => "a public address",
            Class::Loopback => "a loopback address",
            Class::Private => "a private address",
            Class::SharedCgnat => "a shared (carrier-grade NAT) address",
            Class::LinkLocal => "a link-local address",
            Class::UniqueLocal => "a unique-local address",
            Class::Multicast => "a multicast address",
            Class::Broadcast => "the broadcast address",
            Class::Unspecified => "an unspecified address",
            Class::Documentation => "a documentation address",
            Class::Benchmarking => "a benchmarking address",
            Class::Reserved => "a reserved address",
        })
    }
}

/// The class of an address, IPv6 forms embedding an IPv4 address judged by that address.
pub(crate) fn classify(ip: IpAddr) -> Class {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => classify_v4(v4),
            None => classify_v6(v6),
        },
    }
}

/// The IPv4 address an IPv6 address stands for, if it is of a form that embeds one:
/// IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d` (other than `::` and `::1`), NAT64
/// `64:ff9b::a.b.c.d` and 6to4 `2002:aabb:ccdd::/48`.
pub(crate) fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    const NAT64: Ipv6Net = v6(Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96);
    const SIX_TO_FOUR: Ipv6Net = v6(Ipv6Addr::new(0x2002, 0, 0, 0, 0, 0, 0, 0), 16);
    let bits = ip.to_bits();
    let low32 = Ipv4Addr::from_bits(u32::try_from(bits & 0xffff_ffff).ok()?);
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    if bits >> 32 == 0 {
        // IPv4-compatible (deprecated); `::` and `::1` are their own IPv6 addresses.
        return (bits > 1).then_some(low32);
    }
    if NAT64.contains(&ip) {
        return Some(low32);
    }
    if SIX_TO_FOUR.contains(&ip) {
        return Some(Ipv4Addr::from_bits(
            u32::try_from((bits >> 80) & 0xffff_ffff).ok()?,
        ));
    }
    None
}

/// `a.b.c.d/prefix`, checked when the program is compiled.
const fn v4(a: u8, b: u8, c: u8, d: u8, prefix: u8) -> Ipv4Net {
    Ipv4Net::new_assert(Ipv4Addr::new(a, b, c, d), prefix)
}

/// `ip/prefix`, checked when the program is compiled.
const fn v6(ip: Ipv6Addr, prefix: u8) -> Ipv6Net {
    Ipv6Net::new_assert(ip, prefix)
}

/// IPv4's special-purpose ranges (IANA's registry), the first that holds an address decides.
const V4_RANGES: &[(Ipv4Net, Class)] = &[
    (v4(0, 0, 0, 0, 8), Class::Unspecified), // "this network"
    (v4(10, 0, 0, 0, 8), Class::Private),
    (v4(100, 64, 0, 0, 10), Class::SharedCgnat),
    (v4(127, 0, 0, 0, 8), Class::Loopback),
    (v4(169, 254, 0, 0, 16), Class::LinkLocal),
    (v4(172, 16, 0, 0, 12), Class::Private),
    (v4(192, 0, 0, 0, 24), Class::Reserved), // IETF protocol assignments
    (v4(192, 0, 2, 0, 24), Class::Documentation), // TEST-NET-1
    (v4(192, 88, 99, 0, 24), Class::Reserved), // 6to4 relay anycast
    (v4(192, 168, 0, 0, 16), Class::Private),
    (v4(198, 18, 0, 0, 15), Class::Benchmarking),
    (v4(198, 51, 100, 0, 24), Class::Documentation), // TEST-NET-2
    (v4(203, 0, 113, 0, 24), Class::Documentation),  // TEST-NET-3
    (v4(224, 0, 0, 0, 4), Class::Multicast),
    (v4(255, 255, 255, 255, 32), Class::Broadcast),
    (v4(240, 0, 0, 0, 4), Class::Reserved),
];

/// IPv6's special-purpose ranges, as [`V4_RANGES`]; outside them only 2000::/3 is public.
const V6_RANGES: &[(Ipv6Net, Class)] = &[
    (v6(Ipv6Addr::UNSPECIFIED, 128), Class::Unspecified),
    (v6(Ipv6Addr::LOCALHOST, 128), Class::Loopback),
    (
        v6(Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0), 64),
        Class::Reserved,
    ), // discard-only
    (
        v6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0), 32),
        Class::Documentation,
    ),
    (
        v6(Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0), 23),
        Class::Reserved,
    ), // incl. Teredo
    (
        v6(Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0), 20),
        Class::Documentation,
    ),
    (
        v6(Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0), 7),
        Class::UniqueLocal,
    ),
    (
        v6(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10),
        Class::LinkLocal,
    ),
    (
        v6(Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10),
        Class::Private,
    ), // site-local
    (
        v6(Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8),
        Class::Multicast,
    ),
];

/// Global unicast: the only IPv6 allocation outside [`V6_RANGES`] that is public.
const V6_GLOBAL: Ipv6Net = v6(Ipv6Addr::new(0x2000, 0, 0, 0, 0, 0, 0, 0), 3);

fn classify_v4(ip: Ipv4Addr) -> Class {
    V4_RANGES
        .iter()
        .find(|(net, _)| net.contains(&ip))
        .map_or(Class::Public, |&(_, class)| class)
}

fn classify_v6(ip: Ipv6Addr) -> Class {
    match V6_RANGES.iter().find(|(net, _)| net.contains(&ip)) {
        Some(&(_, class)) => class,
        None if V6_GLOBAL.contains(&ip) => Class::Public,
        None => Class::Reserved,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(s: &str) -> Class {
        classify(s.parse().expect("an address"))
    }

    #[test]
    fn ipv4_families() {
        for (ip, expected) in [
            ("127.0.0.1", Class::Loopback),
            ("127.255.255.254", Class::Loopback),
            ("10.0.0.1", Class::Private),
            ("10.255.255.255", Class::Private),
            ("172.16.0.1", Class::Private),
            ("172.31.255.255", Class::Private),
            ("192.168.1.1", Class::Private),
            ("100.64.0.1", Class::SharedCgnat),
            ("100.127.255.255", Class::SharedCgnat),
            ("169.254.169.254", Class::LinkLocal),
            ("224.0.0.1", Class::Multicast),
            ("239.255.255.255", Class::Multicast),
            ("255.255.255.255", Class::Broadcast),
            ("0.0.0.0", Class::Unspecified),
            ("0.1.2.3", Class::Unspecified),
            ("192.0.2.10", Class::Documentation),
            ("198.51.100.10", Class::Documentation),
            ("203.0.113.10", Class::Documentation),
            ("198.18.0.1", Class::Benchmarking),
            ("198.19.255.255", Class::Benchmarking),
            ("192.0.0.8", Class::Reserved),
            ("192.88.99.1", Class::Reserved),
            ("240.0.0.1", Class::Reserved),
            ("255.255.255.254", Class::Reserved),
        ] {
            assert_eq!(class(ip), expected, "{ip}");
        }
    }

    #[test]
    fn ipv4_public_neighbours_of_the_ranges() {
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "9.255.255.255",
            "11.0.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "126.255.255.255",
            "128.0.0.0",
            "169.253.255.255",
            "169.255.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.167.255.255",
            "192.169.0.0",
            "198.17.255.255",
            "198.20.0.0",
            "223.255.255.255",
        ] {
            assert_eq!(class(ip), Class::Public, "{ip}");
        }
    }

    #[test]
    fn ipv6_families() {
        for (ip, expected) in [
            ("::1", Class::Loopback),
            ("::", Class::Unspecified),
            ("fe80::1", Class::LinkLocal),
            ("febf:ffff::1", Class::LinkLocal),
            ("fc00::1", Class::UniqueLocal),
            ("fd12:3456::1", Class::UniqueLocal),
            ("fec0::1", Class::Private),
            ("ff02::1", Class::Multicast),
            ("ff0e::1", Class::Multicast),
            ("2001:db8::1", Class::Documentation),
            ("3fff::1", Class::Documentation),
            ("2001::1", Class::Reserved),
            ("2001:0:4136:e378::1", Class::Reserved),
            ("100::1", Class::Reserved),
            ("4000::1", Class::Reserved),
            ("::ffff:0:7f00:1", Class::Reserved),
            ("2606:4700:4700::1111", Class::Public),
            ("2a00:1450:4001::1", Class::Public),
        ] {
            assert_eq!(class(ip), expected, "{ip}");
        }
    }

    #[test]
    fn ipv6_forms_embedding_ipv4_are_judged_by_the_ipv4_address() {
        for (ip, expected) in [
            ("::ffff:127.0.0.1", Class::Loopback),
            ("::ffff:10.1.2.3", Class::Private),
            ("::ffff:169.254.169.254", Class::LinkLocal),
            ("::ffff:0.0.0.0", Class::Unspecified),
            ("::ffff:8.8.8.8", Class::Public),
            ("::127.0.0.1", Class::Loopback),
            ("::192.168.0.1", Class::Private),
            ("::8.8.8.8", Class::Public),
            ("::2", Class::Unspecified),
            ("64:ff9b::127.0.0.1", Class::Loopback),
            ("64:ff9b::a9fe:a9fe", Class::LinkLocal),
            ("64:ff9b::8.8.8.8", Class::Public),
            ("2002:7f00:1::", Class::Loopback),
            ("2002:0a00:0001:1234::1", Class::Private),
            ("2002:a9fe:a9fe::1", Class::LinkLocal),
            ("2002:0808:0808::1", Class::Public),
        ] {
            assert_eq!(class(ip), expected, "{ip}");
        }
    }

    #[test]
    fn embedded_v4_extraction() {
        let v6 = |s: &str| s.parse::<Ipv6Addr>().expect("an IPv6 address");
        assert_eq!(
            embedded_v4(v6("::ffff:1.2.3.4")),
            Some(Ipv4Addr::new(1, 2, 3, 4))
        );
        assert_eq!(
            embedded_v4(v6("::1.2.3.4")),
            Some(Ipv4Addr::new(1, 2, 3, 4))
        );
        assert_eq!(
            embedded_v4(v6("64:ff9b::1.2.3.4")),
            Some(Ipv4Addr::new(1, 2, 3, 4))
        );
        assert_eq!(
            embedded_v4(v6("2002:102:304:5::6")),
            Some(Ipv4Addr::new(1, 2, 3, 4))
        );
        assert_eq!(embedded_v4(v6("::1")), None);
        assert_eq!(embedded_v4(v6("::")), None);
        assert_eq!(embedded_v4(v6("64:ff9b:1::1.2.3.4")), None);
        assert_eq!(embedded_v4(v6("2606:4700::1")), None);
    }

    #[test]
    fn only_public_is_not_refused() {
        assert!(!Class::Public.is_refused());
        assert!(Class::Loopback.is_refused());
        assert!(Class::Reserved.is_refused());
    }
}
