//! The Kubernetes IP, CIDR and URL libraries (`library/ip.go`, `library/cidr.go`,
//! `library/urls.go`).

use std::rc::Rc;

use super::{Func, R, invalid, overload};
use crate::selector::net;
use crate::selector::url;
use crate::selector::value::Value;

/// Applies an IP, CIDR or URL function (see [`super::call`]).
pub(super) fn call<'a>(f: Func, name: &'static str, args: &[Value<'a>]) -> R<'a> {
    use Value as V;
    let a0 = args.first();
    let a1 = args.get(1);
    let a2 = args.get(2);
    let no = || overload(name, args);
    Ok(match (f, a0, a1, a2) {
        (Func::Ip, Some(V::Str(s)), None, None) => V::Ip(net::parse_ip(s).map_err(|m| invalid("ip", m))?),
        (Func::Ip, Some(V::Cidr(ip, _)), None, None) => V::Ip(*ip),
        (Func::IsIp, Some(V::Str(s)), None, None) => V::Bool(net::parse_ip(s).is_ok()),
        (Func::IpIsCanonical, Some(V::Str(s)), None, None) => {
            let ip = net::parse_ip(s).map_err(|m| invalid("ip.isCanonical", m))?;
            V::Bool(net::ip_string(ip) == **s)
        }
        (Func::Family, Some(V::Ip(ip)), None, None) => V::Int(if ip.is_ipv4() { 4 } else { 6 }),
        (Func::IsUnspecified, Some(V::Ip(ip)), None, None) => V::Bool(net::is_unspecified(*ip)),
        (Func::IsLoopback, Some(V::Ip(ip)), None, None) => V::Bool(net::is_loopback(*ip)),
        (Func::IsLinkLocalMulticast, Some(V::Ip(ip)), None, None) => V::Bool(net::is_link_local_multicast(*ip)),
        (Func::IsLinkLocalUnicast, Some(V::Ip(ip)), None, None) => V::Bool(net::is_link_local_unicast(*ip)),
        (Func::IsGlobalUnicast, Some(V::Ip(ip)), None, None) => V::Bool(net::is_global_unicast(*ip)),
        (Func::Cidr, Some(V::Str(s)), None, None) => {
            let (ip, bits) = net::parse_cidr(s).map_err(|m| invalid("cidr", m))?;
            V::Cidr(ip, bits)
        }
        (Func::IsCidr, Some(V::Str(s)), None, None) => V::Bool(net::parse_cidr(s).is_ok()),
        (Func::ContainsIp, Some(V::Cidr(ip, bits)), Some(other), None) => {
            let other = match other {
                V::Ip(o) => *o,
                V::Str(s) => net::parse_ip(s).map_err(|m| invalid("containsIP", m))?,
                _ => return Err(no()),
            };
            V::Bool(net::contains_ip((*ip, *bits), other))
        }
        (Func::ContainsCidr, Some(V::Cidr(ip, bits)), Some(other), None) => {
            let other = match other {
                V::Cidr(o, b) => (*o, *b),
                V::Str(s) => net::parse_cidr(s).map_err(|m| invalid("containsCIDR", m))?,
                _ => return Err(no()),
            };
            V::Bool(net::contains_cidr((*ip, *bits), other))
        }
        (Func::Masked, Some(V::Cidr(ip, bits)), None, None) => V::Cidr(net::mask(*ip, *bits), *bits),
        (Func::PrefixLength, Some(V::Cidr(_, bits)), None, None) => V::Int(i64::from(*bits)),
        (Func::Url, Some(V::Str(s)), None, None) => V::Url(Rc::new(url::parse_url(s).map_err(|m| invalid("url", m))?)),
        (Func::IsUrl, Some(V::Str(s)), None, None) => V::Bool(url::is_url(s)),
        (Func::GetScheme, Some(V::Url(u)), None, None) => V::string(u.scheme().to_owned()),
        (Func::GetHost, Some(V::Url(u)), None, None) => V::string(u.host().to_owned()),
        (Func::GetHostname, Some(V::Url(u)), None, None) => V::string(u.hostname().to_owned()),
        (Func::GetPort, Some(V::Url(u)), None, None) => V::string(u.port().to_owned()),
        (Func::GetEscapedPath, Some(V::Url(u)), None, None) => V::string(u.escaped_path()),
        (Func::GetQuery, Some(V::Url(u)), None, None) => V::Map(Rc::new(
            u.query()
                .into_iter()
                .map(|(k, vs)| (V::string(k), V::List(Rc::new(vs.into_iter().map(V::string).collect()))))
                .collect(),
        )),
        _ => return Err(no()),
    })
}
