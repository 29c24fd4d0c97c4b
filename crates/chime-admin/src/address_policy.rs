//! Which executor addresses the admin will call.
//!
//! The admin sends every executor the access token, so an address is a place the token goes.
//! A registration is only as trustworthy as the token that signed it, and a manual address is
//! typed by a person; either could point at a cloud metadata service (169.254.169.254) or at a
//! URL whose query or fragment swallows the `/run` path. So an address must be
//! `http(s)://host:port[/path-prefix]` — no user:password, no query, no fragment — and its host
//! must lie in the networks the operator allows (`--executor-networks`; by default everything
//! but link-local). Host names are checked where they are resolved, when the admin connects
//! (see `dispatch::client`), so a name that later resolves into a refused network is refused
//! too.

use ipnet::IpNet;
use serde::{Serialize, Serializer};
use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// Longest executor address stored (the column is `VARCHAR(255)`).
pub const MAX_ADDRESS_LEN: usize = 255;

/// The networks executors may be called in.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExecutorNetworks {
    /// `None`: everything but link-local. `Some`: exactly these networks.
    allowed: Option<Vec<IpNet>>,
}

impl ExecutorNetworks {
    /// May the admin call an executor at `ip`?
    pub fn allows(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        match &self.allowed {
            Some(nets) => nets.iter().any(|n| n.contains(&ip)),
            None => !is_link_local(ip),
        }
    }

    /// The networks as the operator wrote them (`None` for the default).
    pub fn listed(&self) -> Option<&[IpNet]> {
        self.allowed.as_deref()
    }
}

impl FromStr for ExecutorNetworks {
    type Err = String;

    /// Comma-separated CIDRs; a bare address means that one host. Empty text is the default
    /// (everything but link-local).
    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim().is_empty() {
            return Ok(ExecutorNetworks::default());
        }
        let nets = parse_networks(s, "10.0.0.0/8 or fd00::/8")?;
        if nets.is_empty() {
            return Err(format!("'{s}' names no network; give at least one, e.g. 10.0.0.0/8"));
        }
        Ok(ExecutorNetworks { allowed: Some(nets) })
    }
}

impl fmt::Display for ExecutorNetworks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.allowed {
            None => f.write_str("all but link-local"),
            Some(nets) => {
                let list: Vec<String> = nets.iter().map(ToString::to_string).collect();
                f.write_str(&list.join(","))
            }
        }
    }
}

/// In a settings file: the networks as a flag takes them, `""` for the default.
impl Serialize for ExecutorNetworks {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.allowed {
            None => s.serialize_str(""),
            Some(_) => s.serialize_str(&self.to_string()),
        }
    }
}

crate::setting_text::text_setting!(ExecutorNetworks);

/// The reverse proxies whose `X-Forwarded-For` the admin believes (`--trusted-proxies`; by
/// default none). A client can write any `X-Forwarded-For` it likes, so the header names the
/// client only when the connection comes from a proxy the operator put in front of the admin.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TrustedProxies {
    nets: Vec<IpNet>,
}

impl TrustedProxies {
    /// Whether a connection from `ip` comes from a trusted proxy.
    pub fn trusts(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.nets.iter().any(|n| n.contains(&ip))
    }

    /// The client of a request that came from `peer` with `X-Forwarded-For` values
    /// `forwarded` (each header's value, in order): `peer` itself unless it is a trusted
    /// proxy; then, walking the header's addresses from the right (the nearest hop first),
    /// the first that is not a trusted proxy. A value that is not an address ends the walk at
    /// the last trusted hop: what lies left of it was written by someone not trusted.
    pub fn client<'a>(&self, peer: IpAddr, forwarded: impl DoubleEndedIterator<Item = &'a str>) -> IpAddr {
        let mut client = canonical(peer);
        if !self.trusts(client) {
            return client;
        }
        for value in forwarded.rev() {
            for hop in value.rsplit(',').map(str::trim) {
                let Ok(ip) = hop.parse::<IpAddr>() else {
                    return client;
                };
                client = canonical(ip);
                if !self.trusts(client) {
                    return client;
                }
            }
        }
        client
    }
}

impl FromStr for TrustedProxies {
    type Err = String;

    /// Comma-separated CIDRs; a bare address means that one host. Empty text: none.
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(TrustedProxies {
            nets: parse_networks(s, "10.0.0.0/8 or 127.0.0.1")?,
        })
    }
}

/// Comma-separated CIDRs, a bare address meaning that one host; a part that is neither is
/// refused with `examples` of what would do.
fn parse_networks(s: &str, examples: &str) -> Result<Vec<IpNet>, String> {
    let mut nets = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let net = match part.parse::<IpNet>() {
            Ok(n) => n,
            Err(_) => match part.parse::<IpAddr>() {
                Ok(ip) => IpNet::from(ip),
                Err(_) => return Err(format!("'{part}' is not a network such as {examples}")),
            },
        };
        nets.push(net.trunc());
    }
    Ok(nets)
}

impl fmt::Display for TrustedProxies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list: Vec<String> = self.nets.iter().map(ToString::to_string).collect();
        f.write_str(&list.join(","))
    }
}

// In a settings file: the networks as the flag takes them, `""` for none.
crate::setting_text::text_setting!(TrustedProxies, display);

/// An IPv4 address written as IPv6 (`::ffff:169.254.169.254`) is checked as IPv4.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn is_link_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        // fe80::/10
        IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0) == 0xfe80,
    }
}

/// The host of an executor address, as a literal IP when it is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    /// A literal address (`10.0.0.5`, `[::1]`).
    Ip(IpAddr),
    /// A name, checked when it is resolved.
    Name(String),
}

/// Checks the shape of an executor address and, for a literal IP, its network. Returns the
/// address as given, trimmed (it is kept as the executor wrote it; see `ARCHITECTURE.md`).
pub fn check_address(address: &str, networks: &ExecutorNetworks) -> Result<String, String> {
    let trimmed = address.trim();
    if trimmed.len() > MAX_ADDRESS_LEN {
        return Err(format!("an executor address is at most {MAX_ADDRESS_LEN} characters"));
    }
    let shown = shorten(trimmed);
    if trimmed.chars().any(|c| c.is_whitespace() || c.is_control() || c == ',') {
        return Err(format!(
            "'{shown}' must not contain whitespace, control characters or commas"
        ));
    }
    let rest = trimmed
        .strip_prefix("http://")
        .or_else(|| trimmed.strip_prefix("https://"))
        .ok_or_else(|| format!("'{shown}' must start with http:// or https://"))?;
    if rest.contains('?') || rest.contains('#') {
        return Err(format!(
            "'{shown}' must not have a query or fragment: the admin appends /run, /kill … to the address"
        ));
    }
    let authority = rest.split('/').next().unwrap_or("");
    if authority.contains('@') {
        return Err(format!("'{shown}' must not carry a user name or password"));
    }
    let host = parse_authority(authority).ok_or_else(|| format!("'{shown}' is not http(s)://host:port[/path]"))?;
    if let Host::Ip(ip) = host {
        if !networks.allows(ip) {
            return Err(format!(
                "'{shown}' is outside the networks executors may be called in ({networks}); \
                 see --executor-networks"
            ));
        }
    }
    Ok(trimmed.to_owned())
}

/// `host[:port]` → the host. `None` when it is empty or malformed.
fn parse_authority(authority: &str) -> Option<Host> {
    if authority.is_empty() {
        return None;
    }
    let (host, port) = if let Some(inner) = authority.strip_prefix('[') {
        let (h, after) = inner.split_once(']')?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?),
        };
        (h, port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if let Some(p) = port {
        if p.is_empty() || p.parse::<u16>().is_err() {
            return None;
        }
    }
    if host.is_empty() {
        return None;
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Some(Host::Ip(ip));
    }
    if authority.starts_with('[') {
        return None;
    }
    let name_ok = host.split('.').all(|label| {
        !label.is_empty()
            && label.len() <= 63
            && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    });
    name_ok.then(|| Host::Name(host.to_ascii_lowercase()))
}

fn shorten(s: &str) -> String {
    if s.chars().count() <= 80 {
        s.to_owned()
    } else {
        let cut: String = s.chars().take(80).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(a: &str) -> bool {
        check_address(a, &ExecutorNetworks::default()).is_ok()
    }

    #[test]
    fn shapes() {
        assert!(ok("http://10.0.0.5:9999/"));
        assert!(ok("http://10.0.0.5:9999"));
        assert!(ok("https://exec.example.com/prefix/"));
        assert!(ok("http://[::1]:9999/"));
        assert!(ok("http://executor_1:9999"));
        assert!(!ok("http://user:pw@10.0.0.5:9999/"));
        assert!(!ok("http://10.0.0.5:9999/?x=1"));
        assert!(!ok("http://10.0.0.5:9999/#frag"));
        assert!(!ok("ftp://10.0.0.5/"));
        assert!(!ok("http://:9999/"));
        assert!(!ok("http://10.0.0.5:99999/"));
        assert!(!ok("http://10.0.0.5:/"));
        assert!(!ok("http://a b/"));
        assert!(!ok(&format!("http://{}.com/", "a".repeat(300))));
    }

    #[test]
    fn link_local_is_refused_by_default() {
        assert!(!ok("http://169.254.169.254/latest/"));
        assert!(!ok("http://[fe80::1]:9999/"));
        assert!(!ok("http://[::ffff:169.254.169.254]:80/"));
        assert!(ok("http://127.0.0.1:9999/"));
    }

    #[test]
    fn an_allow_list_tightens_and_can_name_link_local() {
        let nets: ExecutorNetworks = "10.0.0.0/8, 127.0.0.1".parse().unwrap();
        assert!(check_address("http://10.1.2.3:9999", &nets).is_ok());
        assert!(check_address("http://127.0.0.1:9999", &nets).is_ok());
        assert!(check_address("http://127.0.0.2:9999", &nets).is_err());
        assert!(check_address("http://192.168.1.1:9999", &nets).is_err());
        let meta: ExecutorNetworks = "169.254.0.0/16".parse().unwrap();
        assert!(check_address("http://169.254.169.254/", &meta).is_ok());
        assert_eq!("".parse::<ExecutorNetworks>().unwrap(), ExecutorNetworks::default());
        assert!(" , ".parse::<ExecutorNetworks>().is_err());
        assert!("10.0.0.0/33".parse::<ExecutorNetworks>().is_err());
        assert_eq!(nets.to_string(), "10.0.0.0/8,127.0.0.1/32");
    }

    #[test]
    fn forwarded_for_is_believed_from_trusted_proxies_only() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let none = TrustedProxies::default();
        let xff = ["203.0.113.7, 10.0.0.2"];
        assert_eq!(
            none.client(ip("10.0.0.1"), xff.into_iter()),
            ip("10.0.0.1"),
            "no proxy trusted"
        );
        let proxies: TrustedProxies = "10.0.0.0/24, 192.0.2.1".parse().unwrap();
        assert_eq!(
            proxies.client(ip("198.51.100.9"), xff.into_iter()),
            ip("198.51.100.9"),
            "not from a proxy"
        );
        // From the right: 10.0.0.2 is a proxy too, so the client is the address before it.
        assert_eq!(proxies.client(ip("10.0.0.1"), xff.into_iter()), ip("203.0.113.7"));
        // Whatever a client wrote before the first address not trusted is not believed.
        let spoofed = ["1.1.1.1", "203.0.113.7"];
        assert_eq!(proxies.client(ip("192.0.2.1"), spoofed.into_iter()), ip("203.0.113.7"));
        // Garbage ends the walk at the last trusted hop; no header leaves the proxy itself.
        assert_eq!(
            proxies.client(ip("10.0.0.1"), ["nonsense, 10.0.0.2"].into_iter()),
            ip("10.0.0.2")
        );
        assert_eq!(proxies.client(ip("10.0.0.1"), std::iter::empty()), ip("10.0.0.1"));
        assert_eq!(
            proxies.client(ip("::ffff:10.0.0.1"), xff.into_iter()),
            ip("203.0.113.7")
        );
        assert!("10.0.0.0/33".parse::<TrustedProxies>().is_err());
        assert_eq!("".parse::<TrustedProxies>().unwrap(), TrustedProxies::default());
    }
}
