//! Which hosts an `a2a` provider may reach: a public one, or (only with `allow_private: true`)
//! a loopback, private, link-local or internal one. The name is resolved here and the HTTP
//! client is pinned to the addresses checked, so a second lookup cannot swap them.

use std::net::{IpAddr, SocketAddr};

use reqwest::Url;

/// The addresses `url`'s host resolves to, all of them allowed; the error says why not.
pub async fn resolve_allowed(url: &Url, allow_private: bool) -> Result<Vec<SocketAddr>, String> {
    let Some(host) = url.host_str() else {
        return Err(format!("{url} has no host"));
    };
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    if !allow_private && internal_name(&host) {
        return Err(refusal(&host, "an internal name"));
    }
    let port = url.port_or_known_default().unwrap_or(443);
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), port))
        .await
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .collect();
    if addrs.is_empty() {
        return Err(format!("{host} resolves to no address"));
    }
    if !allow_private && let Some(a) = addrs.iter().find(|a| private(a.ip())) {
        return Err(refusal(&host, &format!("a private address ({})", a.ip())));
    }
    Ok(addrs)
}

fn refusal(host: &str, what: &str) -> String {
    format!(
        "{host} is {what}; a remote agent there is reached only with `allow_private: true` in the provider's a2a: block"
    )
}

/// `localhost`, `*.localhost`, `*.internal`, `*.local`, `*.home.arpa` and single-label names.
fn internal_name(host: &str) -> bool {
    if host.parse::<IpAddr>().is_ok() {
        return false;
    }
    let host = host.trim_end_matches('.');
    !host.contains('.')
        || [".localhost", ".internal", ".local", ".home.arpa", ".lan"]
            .iter()
            .any(|suffix| host.ends_with(suffix))
}

/// Loopback, private, link-local, shared (CGNAT), unspecified and broadcast addresses, and
/// IPv6 unique-local and link-local ones (an IPv4-mapped address as its IPv4 address).
pub fn private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return private(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_addresses_and_internal_names_are_known() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(private(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["8.8.8.8", "172.32.0.1", "2001:4860::8888", "100.128.0.1"] {
            assert!(!private(ip.parse().unwrap()), "{ip}");
        }
        for name in [
            "localhost",
            "api.localhost",
            "metadata.google.internal",
            "printer.local",
            "intranet",
        ] {
            assert!(internal_name(name), "{name}");
        }
        assert!(!internal_name("agent.example.com"));
    }

    #[tokio::test]
    async fn loopback_is_refused_unless_allowed() {
        let url = Url::parse("http://127.0.0.1:9/").unwrap();
        let err = resolve_allowed(&url, false).await.unwrap_err();
        assert!(err.contains("allow_private: true"), "{err}");
        assert_eq!(
            resolve_allowed(&url, true).await.unwrap(),
            vec!["127.0.0.1:9".parse().unwrap()]
        );
        let named = Url::parse("http://localhost:9/").unwrap();
        assert!(
            resolve_allowed(&named, false)
                .await
                .unwrap_err()
                .contains("internal name")
        );
    }
}
