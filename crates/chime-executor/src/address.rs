//! The address the executor registers with the admin (the one the admin will call).
//!
//! A wrong advertised address is the most common XXL-JOB complaint: inside a container the
//! detected IP is the container's private one, unreachable from the admin. So an explicit
//! address always wins, detection is a fallback, and the result is logged at info level.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// Normalizes an explicit `--advertise` value: `host:port` becomes `http://host:port/`; a
/// full URL is kept as given (a trailing slash is optional for admins).
pub fn normalize_advertised(value: &str) -> String {
    let value = value.trim();
    if value.starts_with("http://") || value.starts_with("https://") {
        value.to_owned()
    } else {
        format!("http://{value}/")
    }
}

/// The address to register: the explicit one (`host:port` gets `https://` when the server
/// serves TLS), else the one [`advertised_for`] the bound address, in `https://` with TLS.
pub(crate) fn advertised(explicit: Option<&str>, bound: SocketAddr, tls: bool) -> String {
    let plain = match explicit {
        Some(explicit) => normalize_advertised(explicit),
        None => advertised_for(bound),
    };
    let given_scheme = explicit.is_some_and(|e| {
        let e = e.trim();
        e.starts_with("http://") || e.starts_with("https://")
    });
    match plain.strip_prefix("http://") {
        Some(rest) if tls && !given_scheme => format!("https://{rest}"),
        _ => plain,
    }
}

/// The first non-loopback IPv4 address of this host's interfaces, if any.
pub fn detect_ipv4() -> Option<Ipv4Addr> {
    let interfaces = if_addrs::get_if_addrs().ok()?;
    interfaces.into_iter().find_map(|iface| match iface.ip() {
        IpAddr::V4(ip) if !ip.is_loopback() && !ip.is_unspecified() && !ip.is_link_local() => Some(ip),
        _ => None,
    })
}

/// The address to register for a server bound at `bound`: the bound IP when it is a specific
/// one, otherwise (`0.0.0.0`) the first non-loopback IPv4 of the host, else loopback.
pub fn advertised_for(bound: SocketAddr) -> String {
    let ip = match bound.ip() {
        ip if !ip.is_unspecified() => ip,
        _ => match detect_ipv4() {
            Some(ip) => IpAddr::V4(ip),
            None => {
                tracing::warn!(
                    "no non-loopback IPv4 address found; advertising 127.0.0.1 (set the advertised address)"
                );
                IpAddr::V4(Ipv4Addr::LOCALHOST)
            }
        },
    };
    format!("http://{}/", SocketAddr::new(ip, bound.port()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_addresses_get_a_scheme_and_keep_their_form() {
        assert_eq!(normalize_advertised("10.0.0.5:9999"), "http://10.0.0.5:9999/");
        assert_eq!(
            normalize_advertised("https://exec.example.com"),
            "https://exec.example.com"
        );
        assert_eq!(normalize_advertised(" http://h:1/ "), "http://h:1/");
    }

    #[test]
    fn with_tls_the_address_is_https_unless_a_scheme_was_given() {
        let bound: SocketAddr = "127.0.0.1:9999".parse().unwrap();
        assert_eq!(advertised(None, bound, true), "https://127.0.0.1:9999/");
        assert_eq!(advertised(Some("exec.svc:9999"), bound, true), "https://exec.svc:9999/");
        assert_eq!(advertised(Some("http://proxy:80"), bound, true), "http://proxy:80");
        assert_eq!(advertised(Some("exec.svc:9999"), bound, false), "http://exec.svc:9999/");
        assert_eq!(advertised(None, bound, false), "http://127.0.0.1:9999/");
    }

    #[test]
    fn a_specific_bind_address_is_advertised_as_is() {
        assert_eq!(
            advertised_for("127.0.0.1:9999".parse().unwrap()),
            "http://127.0.0.1:9999/"
        );
        let detected = advertised_for("0.0.0.0:9999".parse().unwrap());
        assert!(
            detected.starts_with("http://") && detected.ends_with(":9999/"),
            "{detected}"
        );
        assert!(!detected.contains("0.0.0.0"), "{detected}");
    }
}
