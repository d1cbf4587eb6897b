//! The Kubernetes IP and CIDR libraries (`k8s.io/apiserver/pkg/cel/library/ip.go` and
//! `cidr.go`, in the base environment since 1.30): parsing as Go's `net/netip` does,
//! minus what Kubernetes refuses (zones, IPv4-mapped IPv6 addresses), and the
//! address-class predicates of `netip.Addr`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// `ip(s)` / `isIP(s)`: an IPv4 (dotted decimal, no leading zeros) or IPv6 address,
/// without a zone and not IPv4-mapped. The error is upstream's message.
pub(crate) fn parse_ip(s: &str) -> Result<IpAddr, String> {
    if let Some((addr, zone)) = s.split_once('%') {
        // netip accepts a non-empty zone on an IPv6 address; Kubernetes then refuses it.
        if !zone.is_empty() && addr.parse::<Ipv6Addr>().is_ok() {
            return Err(format!("IP address {s:?} with zone value is not allowed"));
        }
        return Err(format!(
            "IP Address {s:?} parse error during conversion from string: ParseAddr({s:?}): invalid IP address"
        ));
    }
    let ip = parse_plain(s).ok_or_else(|| {
        format!("IP Address {s:?} parse error during conversion from string: ParseAddr({s:?}): invalid IP address")
    })?;
    if is_4in6(ip) {
        return Err(format!("IPv4-mapped IPv6 address {s:?} is not allowed"));
    }
    Ok(ip)
}

fn parse_plain(s: &str) -> Option<IpAddr> {
    if s.contains(':') {
        s.parse::<Ipv6Addr>().ok().map(IpAddr::V6)
    } else {
        s.parse::<Ipv4Addr>().ok().map(IpAddr::V4)
    }
}

fn is_4in6(ip: IpAddr) -> bool {
    matches!(ip, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some())
}

/// `cidr(s)` / `isCIDR(s)`: `address/bits` as `netip.ParsePrefix` reads it (the host
/// bits may be set), with Kubernetes' refusal of IPv4-mapped addresses.
pub(crate) fn parse_cidr(s: &str) -> Result<(IpAddr, u8), String> {
    let wrap = |m: String| {
        format!(
            "network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix({s:?}): {m}"
        )
    };
    let Some(slash) = s.rfind('/') else {
        return Err(wrap("no '/'".to_owned()));
    };
    let (addr, bits) = (&s[..slash], &s[slash + 1..]);
    if let Some((a, zone)) = addr.split_once('%')
        && !zone.is_empty()
        && a.parse::<Ipv6Addr>().is_ok()
    {
        return Err(wrap("IPv6 zones cannot be present in a prefix".to_owned()));
    }
    let Some(ip) = parse_plain(addr) else {
        return Err(wrap(format!("ParseAddr({addr:?}): invalid IP address")));
    };
    let bad_bits = || wrap(format!("bad bits after slash: {bits:?}"));
    if bits.is_empty() || !bits.bytes().all(|b| b.is_ascii_digit()) || (bits.len() > 1 && bits.starts_with('0')) {
        return Err(bad_bits());
    }
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let n: u32 = bits.parse().map_err(|_| bad_bits())?;
    if n > max {
        return Err(wrap("prefix length out of range".to_owned()));
    }
    if is_4in6(ip) {
        return Err(format!(
            "network address parse error during conversion from string: IPv4-mapped IPv6 address {s:?} is not allowed"
        ));
    }
    Ok((ip, n as u8))
}

/// The address with the bits after `bits` cleared (`netip.Prefix.Masked`).
pub(crate) fn mask(ip: IpAddr, bits: u8) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let m = if bits == 0 { 0 } else { u32::MAX << (32 - u32::from(bits.min(32))) };
            IpAddr::V4(Ipv4Addr::from(u32::from(v4) & m))
        }
        IpAddr::V6(v6) => {
            let m = if bits == 0 { 0 } else { u128::MAX << (128 - u32::from(bits.min(128))) };
            IpAddr::V6(Ipv6Addr::from(u128::from(v6) & m))
        }
    }
}

/// `cidr.containsIP(ip)` (`netip.Prefix.Contains`): same family and same network.
pub(crate) fn contains_ip(net: (IpAddr, u8), ip: IpAddr) -> bool {
    net.0.is_ipv4() == ip.is_ipv4() && mask(net.0, net.1) == mask(ip, net.1)
}

/// `cidr.containsCIDR(other)`, exactly as upstream computes it: the masked network must
/// equal `other`'s address (unmasked) at this prefix length, and `other` must be at
/// least as long. So `cidr('10.0.0.0/8').containsCIDR('10.0.0.0/16')` is true but
/// `cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')` is false, although the doc comment
/// upstream promises true for such a case.
pub(crate) fn contains_cidr(net: (IpAddr, u8), other: (IpAddr, u8)) -> bool {
    mask(net.0, net.1) == other.0 && net.1 <= other.1
}

/// `netip.Addr.String()`: dotted IPv4, RFC 5952 IPv6 (Rust's `Display` agrees for
/// every address `parse_ip` accepts).
pub(crate) fn ip_string(ip: IpAddr) -> String {
    ip.to_string()
}

/// `netip.Prefix.String()`.
pub(crate) fn cidr_string(net: (IpAddr, u8)) -> String {
    format!("{}/{}", net.0, net.1)
}

pub(crate) fn is_unspecified(ip: IpAddr) -> bool {
    ip.is_unspecified()
}

pub(crate) fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.octets()[0] == 127,
        IpAddr::V6(v6) => v6 == Ipv6Addr::LOCALHOST,
    }
}

fn is_multicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.octets()[0] & 0xf0 == 0xe0,
        IpAddr::V6(v6) => v6.octets()[0] == 0xff,
    }
}

/// `224.0.0.0/24`, or an IPv6 multicast address of link-local scope (`ffx2::/16`).
pub(crate) fn is_link_local_multicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => matches!(v4.octets(), [224, 0, 0, _]),
        IpAddr::V6(v6) => v6.segments()[0] & 0xff0f == 0xff02,
    }
}

/// `169.254.0.0/16` or `fe80::/10`.
pub(crate) fn is_link_local_unicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => matches!(v4.octets(), [169, 254, _, _]),
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    }
}

/// Go's definition: not unspecified, not the IPv4 broadcast address, not loopback,
/// multicast or link-local unicast (private and ULA addresses count as global).
pub(crate) fn is_global_unicast(ip: IpAddr) -> bool {
    if ip == IpAddr::V4(Ipv4Addr::BROADCAST) || ip.is_unspecified() {
        return false;
    }
    !is_loopback(ip) && !is_multicast(ip) && !is_link_local_unicast(ip)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsing_follows_netip_and_kubernetes() {
        assert!(parse_ip("127.0.0.1").is_ok());
        assert!(parse_ip("::1").is_ok());
        assert!(parse_ip("127.0.0.256").is_err());
        assert!(parse_ip(":::1").is_err());
        assert!(parse_ip("01.1.1.1").is_err());
        assert!(parse_ip("::ffff:1.2.3.4").unwrap_err().contains("IPv4-mapped"));
        assert!(parse_ip("fe80::1%eth0").unwrap_err().contains("zone value is not allowed"));
        assert_eq!(parse_cidr("192.168.0.1/24"), Ok(("192.168.0.1".parse().unwrap(), 24)));
        assert!(
            parse_cidr("192.168.0.0/")
                .unwrap_err()
                .ends_with(r#"netip.ParsePrefix("192.168.0.0/"): bad bits after slash: """#)
        );
        assert!(parse_cidr("192.168.0.0/024").is_err());
        assert!(parse_cidr("192.168.0.0/33").unwrap_err().contains("prefix length out of range"));
        assert_eq!(ip_string(parse_ip("2001:db8::0:0:0:abcd").unwrap()), "2001:db8::abcd");
    }
}
