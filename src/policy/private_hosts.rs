//! Which addresses the web tools may reach. `web_fetch` (and a plain `GET`) run unasked, so
//! without this a chat member could have the agent read the machine's own services, the
//! private network, or the cloud's metadata endpoint (169.254.169.254, whose answers carry
//! credentials) and post the answer in the chat. Loopback, private, link-local and other
//! non-public addresses are refused in every sandbox unless the agent lists the host in
//! `private_hosts`: a name, an address, or a range (`10.0.0.0/8`).
//!
//! The gate judges an address written in the URL; a name is judged where it is resolved,
//! when the tool runs (the address checked is the one connected to, so a name that resolves
//! differently the second time gains nothing).

use ipnet::IpNet;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// One `private_hosts` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostPattern {
    /// A host name, lowercased, without a trailing dot: the name as the URL writes it.
    Name(String),
    /// An address (a `/32` or `/128`) or a range.
    Net(IpNet),
}

impl FromStr for HostPattern {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if let Ok(net) = s.parse::<IpNet>() {
            return Ok(HostPattern::Net(net));
        }
        if let Ok(ip) = s
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
        {
            return Ok(HostPattern::Net(IpNet::from(ip)));
        }
        let name = s.trim_end_matches('.').to_ascii_lowercase();
        // A URL whose last label is a number is an IPv4 address (`127.1`, `0x7f000001`):
        // such an entry would name a host no URL can have.
        let numeric = name.rsplit('.').next().is_some_and(|last| {
            !last.is_empty()
                && (last.chars().all(|c| c.is_ascii_digit())
                    || last.starts_with("0x") && last[2..].chars().all(|c| c.is_ascii_hexdigit()))
        });
        if numeric {
            return Err(format!(
                "`{s}` reads as a number, not a host name: write an IP address in full (`127.0.0.1`)"
            ));
        }
        let valid = !name.is_empty()
            && name.split('.').all(|label| {
                !label.is_empty()
                    && label
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            });
        if valid {
            Ok(HostPattern::Name(name))
        } else {
            Err(format!(
                "`{s}` is not a host name, an IP address or a range such as `10.0.0.0/8`"
            ))
        }
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostPattern::Name(name) => f.write_str(name),
            HostPattern::Net(net) if net.prefix_len() == net.max_prefix_len() => {
                write!(f, "{}", net.addr())
            }
            HostPattern::Net(net) => write!(f, "{net}"),
        }
    }
}

impl<'de> serde::Deserialize<'de> for HostPattern {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl serde::Serialize for HostPattern {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Why `ip` is not a public address, if it is not: what the refusal names.
#[must_use]
pub fn non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_kind(v4),
        IpAddr::V6(v6) => v6_kind(v6),
    }
}

fn v4_kind(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(if ip.is_loopback() {
        "a loopback address"
    } else if ip.is_link_local() {
        "a link-local address (where cloud metadata services answer)"
    } else if ip.is_private() {
        "a private address"
    } else if a == 0 {
        "an unspecified address"
    } else if a == 100 && (b & 0xc0) == 64 {
        "a shared (carrier-grade NAT) address"
    } else if a == 192 && b == 0 && c == 0 {
        "an IETF protocol address"
    } else if a == 198 && (b & 0xfe) == 18 {
        "a benchmarking network address"
    } else if (a, b, c) == (192, 0, 2) || (a, b, c) == (198, 51, 100) || (a, b, c) == (203, 0, 113)
    {
        "a documentation address"
    } else if ip.is_multicast() || a >= 240 {
        "a multicast, broadcast or reserved address"
    } else {
        return None;
    })
}

fn v6_kind(ip: Ipv6Addr) -> Option<&'static str> {
    let segments = ip.segments();
    if let Some(v4) = embedded_v4(ip) {
        // An IPv4 address in IPv6 dress reaches the IPv4 host.
        return v4_kind(v4);
    }
    Some(if ip.is_loopback() {
        "a loopback address"
    } else if ip.is_unspecified() {
        "an unspecified address"
    } else if segments[0] & 0xffc0 == 0xfe80 {
        "a link-local address (where cloud metadata services answer)"
    } else if segments[0] & 0xfe00 == 0xfc00 || segments[0] & 0xffc0 == 0xfec0 {
        "a private address"
    } else if segments[0] & 0xff00 == 0xff00 {
        "a multicast address"
    } else if segments[..3] == [0x64, 0xff9b, 1] {
        // A local-use NAT64 prefix: where the IPv4 address sits depends on the operator.
        "a local-use NAT64 address"
    } else if segments[0] == 0x2001 && segments[1] == 0 {
        "a Teredo tunnel address"
    } else if segments[0] == 0x2001 && segments[1] == 0xdb8 {
        "a documentation address"
    } else {
        return None;
    })
}

/// The IPv4 address an IPv6 address carries: mapped (`::ffff:a.b.c.d`), translated
/// (`::ffff:0:a.b.c.d`), compatible (`::a.b.c.d`), NAT64 (`64:ff9b::/96`) or 6to4
/// (`2002::/16`). A NAT64 prefix of the operator's own cannot be known here.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    if s[..6] == [0, 0, 0, 0, 0xffff, 0] {
        return Some(low(s[6], s[7]));
    }
    if s[..6] == [0; 6] && !(ip.is_loopback() || ip.is_unspecified()) {
        return Some(low(s[6], s[7]));
    }
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0; 4] {
        return Some(low(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return Some(low(s[1], s[2]));
    }
    None
}

/// Whether the agent listed `ip` (or a range holding it), in either dress: a listed IPv4
/// address covers its IPv6-mapped form.
fn lists_ip(allowed: &[HostPattern], ip: IpAddr) -> bool {
    let v4 = match ip {
        IpAddr::V6(v6) => embedded_v4(v6).map(IpAddr::V4),
        IpAddr::V4(_) => None,
    };
    allowed.iter().any(|p| {
        matches!(p, HostPattern::Net(net) if net.contains(&ip) || v4.is_some_and(|v4| net.contains(&v4)))
    })
}

/// Whether the agent listed the host name `name`.
fn lists_name(allowed: &[HostPattern], name: &str) -> bool {
    let name = name.trim_end_matches('.');
    allowed
        .iter()
        .any(|p| matches!(p, HostPattern::Name(n) if n.eq_ignore_ascii_case(name)))
}

/// Whether an address is one of this machine's own (asked of the system when a tool
/// connects; the gate, which never waits on the system, asks [`not_own`]).
pub type IsOwn<'a> = &'a dyn Fn(IpAddr) -> bool;

/// For the gate: no address counts as the machine's own.
#[must_use]
pub fn not_own(_: IpAddr) -> bool {
    false
}

/// What `ip` is, if the web tools may not reach it unlisted: non-public, or public but the
/// machine's own (a service bound to every interface answers there as on loopback).
fn refused_kind(ip: IpAddr, own: IsOwn<'_>) -> Option<&'static str> {
    non_public(ip).or_else(|| own(ip).then_some("an address of this machine"))
}

/// Why the web tools may not connect to `ip`, if they may not.
#[must_use]
pub fn address_refusal(
    allowed: &[HostPattern],
    ip: IpAddr,
    agent: &str,
    own: IsOwn<'_>,
) -> Option<String> {
    let kind = refused_kind(ip, own)?;
    (!lists_ip(allowed, ip)).then(|| {
        format!(
            "{ip} is {kind}; the web tools reach only public addresses unless the host is in `private_hosts` of [agents.{agent}]"
        )
    })
}

/// Why the web tools may not connect to the host name `name`, which resolved to
/// `addresses`, if they may not: a listed name may resolve anywhere; any other name must
/// resolve only to public or listed addresses.
#[must_use]
pub fn name_refusal(
    allowed: &[HostPattern],
    name: &str,
    addresses: &[IpAddr],
    agent: &str,
    own: IsOwn<'_>,
) -> Option<String> {
    if lists_name(allowed, name) {
        return None;
    }
    // The address itself is not said: the refusal reaches the chat, where it would map the
    // internal network's names to addresses.
    addresses.iter().find_map(|&ip| {
        let kind = refused_kind(ip, own)?;
        (!lists_ip(allowed, ip)).then(|| {
            format!(
                "`{name}` resolves to {kind}; the web tools reach only public addresses unless the host is in `private_hosts` of [agents.{agent}]"
            )
        })
    })
}

/// Why the web tools may not go to a URL's host, if it is an address (`[::1]` with or without
/// its brackets); a name is judged when it is resolved. The gate (step 3) asks with
/// [`not_own`], the tool as it connects with the system's answer.
#[must_use]
pub fn host_refusal(
    allowed: &[HostPattern],
    host: &str,
    agent: &str,
    own: IsOwn<'_>,
) -> Option<String> {
    let ip = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .ok()?;
    address_refusal(allowed, ip, agent, own)
}

#[cfg(test)]
mod tests {
    use super::{HostPattern, host_refusal, non_public, not_own};
    use std::net::IpAddr;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn address_refusal(allowed: &[HostPattern], ip: IpAddr, agent: &str) -> Option<String> {
        super::address_refusal(allowed, ip, agent, &not_own)
    }

    fn name_refusal(
        allowed: &[HostPattern],
        name: &str,
        addresses: &[IpAddr],
        agent: &str,
    ) -> Option<String> {
        super::name_refusal(allowed, name, addresses, agent, &not_own)
    }

    /// Every range a request could use to reach the machine, its network or the cloud's
    /// metadata service is non-public, in IPv4 and in every IPv6 form that carries IPv4.
    #[test]
    fn non_public_addresses_in_every_dress() {
        for private in [
            "127.0.0.1",
            "127.8.9.10",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.100.100.200",
            "0.0.0.0",
            "0.1.2.3",
            "192.0.0.192",
            "198.18.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fd00:ec2::254",
            "fc00::1",
            "fec0::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "::10.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::a00:1",
            "2002:7f00:1::",
            "2002:a9fe:a9fe::1",
            "2001:0:4136:e378::1",
            "2001:db8::1",
            "::ffff:0:a9fe:a9fe",
            "203.0.113.9",
            "198.51.100.1",
            "192.0.2.1",
        ] {
            assert!(non_public(ip(private)).is_some(), "{private}");
        }
        for public in [
            "93.184.216.34",
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert_eq!(non_public(ip(public)), None, "{public}");
        }
    }

    #[test]
    fn entries_parse_and_say_what_is_wrong() {
        let parse = |s: &str| s.parse::<HostPattern>();
        assert_eq!(
            parse("Intranet.Local.").unwrap().to_string(),
            "intranet.local"
        );
        assert_eq!(parse("127.0.0.1").unwrap().to_string(), "127.0.0.1");
        assert_eq!(parse("[::1]").unwrap().to_string(), "::1");
        assert_eq!(parse("10.0.0.0/8").unwrap().to_string(), "10.0.0.0/8");
        for bad in ["", "http://x", "a b", "10.0.0.0/33", "x..y"] {
            assert!(
                parse(bad).unwrap_err().contains("is not a host name"),
                "{bad}"
            );
        }
        for number in ["127.1", "2130706433", "0x7f000001", "10.0x1"] {
            assert!(
                parse(number).unwrap_err().contains("reads as a number"),
                "{number}"
            );
        }
        assert!(parse("host-1.example").is_ok());
    }

    #[test]
    fn listed_hosts_and_ranges_are_reachable_and_nothing_else() {
        let allowed: Vec<HostPattern> = ["intranet", "10.0.0.0/8", "127.0.0.1"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        assert_eq!(address_refusal(&allowed, ip("10.9.9.9"), "a"), None);
        assert_eq!(address_refusal(&allowed, ip("127.0.0.1"), "a"), None);
        assert_eq!(address_refusal(&allowed, ip("8.8.8.8"), "a"), None);
        let refused = address_refusal(&allowed, ip("127.0.0.2"), "a").unwrap();
        assert!(
            refused.contains("loopback") && refused.contains("`private_hosts` of [agents.a]"),
            "{refused}"
        );
        assert!(address_refusal(&allowed, ip("::ffff:169.254.169.254"), "a").is_some());
        // A listed IPv4 address is listed in its IPv6 dress too.
        assert_eq!(address_refusal(&allowed, ip("::ffff:127.0.0.1"), "a"), None);
        assert_eq!(address_refusal(&allowed, ip("::ffff:10.1.1.1"), "a"), None);
        // A listed name may resolve anywhere; another name only to public or listed addresses.
        assert_eq!(
            name_refusal(&allowed, "Intranet.", &[ip("192.168.0.5")], "a"),
            None
        );
        assert_eq!(
            name_refusal(&allowed, "db", &[ip("10.0.0.5"), ip("1.1.1.1")], "a"),
            None
        );
        let refused = name_refusal(&allowed, "localhost", &[ip("::1"), ip("127.0.0.1")], "a");
        assert!(
            refused
                .as_deref()
                .is_some_and(|r| r.contains("`localhost` resolves to a loopback address")
                    && !r.contains("127.0.0.1")),
            "{refused:?}"
        );
        // The gate judges an address in the URL, and leaves a name for the resolver.
        assert!(host_refusal(&[], "169.254.169.254", "a", &not_own).is_some());
        assert!(host_refusal(&[], "[fd00:ec2::254]", "a", &not_own).is_some());
        assert_eq!(
            host_refusal(&[], "metadata.google.internal", "a", &not_own),
            None
        );
        assert_eq!(host_refusal(&[], "93.184.216.34", "a", &not_own), None);
    }

    /// A public address of this machine is refused like loopback, unless listed.
    #[test]
    fn the_machines_own_public_addresses_are_refused() {
        let own = |ip: IpAddr| ip == "203.0.114.7".parse::<IpAddr>().unwrap();
        let refused = super::address_refusal(&[], ip("203.0.114.7"), "a", &own);
        assert!(
            refused
                .as_deref()
                .is_some_and(|r| r.contains("an address of this machine")),
            "{refused:?}"
        );
        assert!(super::name_refusal(&[], "me.example", &[ip("203.0.114.7")], "a", &own).is_some());
        assert_eq!(
            super::address_refusal(&[], ip("203.0.114.8"), "a", &own),
            None
        );
        let listed = ["203.0.114.7".parse::<HostPattern>().unwrap()];
        assert_eq!(
            super::address_refusal(&listed, ip("203.0.114.7"), "a", &own),
            None
        );
    }
}
