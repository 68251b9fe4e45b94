//! Where a peer's QUIC endpoint listens, as `node.toml` spells it: an IP literal
//! (`10.0.0.5:9000`, `[fd00::5]:9000`) or a host name and port (`validator-1.quasar:9000`, a
//! Kubernetes Service, a cloud host).
//!
//! A [`PeerAddress`] is checked for syntax when `node.toml` is loaded ([`PeerAddress::from_str`]:
//! a port in 1..=65535, a non-empty host name of DNS characters, at most
//! [`MAX_HOST_NAME_LEN`] bytes, no scheme or path) and a host name is resolved again at every
//! dial ([`PeerAddress::resolve`]), so a peer whose name moves to a new IP address is reached
//! there at the next reconnect. A name never weakens authentication: the TLS handshake still
//! requires exactly the certificate pinned for that validator in genesis (see [`super::tls`]),
//! so whoever answers at the resolved address must hold the validator's key.

use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Longest host name accepted, in bytes (RFC 1035 §2.3.4: 255 octets on the wire, 253 as text).
pub const MAX_HOST_NAME_LEN: usize = 253;

/// Longest label (the part between dots) of a host name, in bytes (RFC 1035 §2.3.4).
const MAX_LABEL_LEN: usize = 63;

/// How long one resolution of a host name may take before the dial counts as failed.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// A peer's dial address: an IP socket address or a host name with a port.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum PeerAddress {
    /// An IP literal: dialed as is.
    Ip(SocketAddr),
    /// A host name (checked syntax, no trailing dot removed) and a port: resolved at each dial.
    Name {
        /// The host name, e.g. `validator-1.quasar.svc.cluster.local`.
        host: String,
        /// The UDP port, 1..=65535.
        port: u16,
    },
}

/// Why a peer address is refused; the message names the address and the rule it breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PeerAddressError {
    /// Longer than a host name and a port can be.
    #[error("peer address {0:?} is too long (a host name has at most {MAX_HOST_NAME_LEN} bytes)")]
    TooLong(String),
    /// A URL rather than `host:port`.
    #[error("peer address {0:?} must be host:port, without a scheme or path (e.g. validator-1.example:9000)")]
    SchemeOrPath(String),
    /// No `:port` at the end.
    #[error("peer address {0:?} has no port: write host:port (e.g. validator-1.example:9000)")]
    NoPort(String),
    /// The port is not a number in 1..=65535.
    #[error("peer address {0:?}: the port must be a number in 1..=65535")]
    BadPort(String),
    /// Nothing before the `:port`.
    #[error("peer address {0:?} has no host before the port")]
    EmptyHost(String),
    /// Bracketed, but not an IPv6 address, or an IPv6 address without brackets.
    #[error("peer address {0:?}: an IPv6 address is written in brackets, [addr]:port (e.g. [fd00::5]:9000)")]
    BadIpv6(String),
    /// A host name with a character or label DNS does not allow.
    #[error("peer address {0:?}: the host name may hold only letters, digits, '-', '_' and '.', in labels of 1 to 63 characters")]
    BadHostName(String),
}

/// Why a [`PeerAddress`] could not be turned into a socket address at a dial.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The resolver answered with an error (no such name, no network, ...).
    #[error("resolving {name}: {source}")]
    Lookup {
        /// The `host:port` that was looked up.
        name: String,
        /// The resolver's error.
        source: std::io::Error,
    },
    /// The resolver knows the name but gave no address.
    #[error("resolving {0}: no address")]
    NoAddress(String),
    /// The resolver did not answer within [`RESOLVE_TIMEOUT`].
    #[error("resolving {0}: no answer within {RESOLVE_TIMEOUT:?}")]
    Timeout(String),
}

impl PeerAddress {
    /// The host name when this address is one (`None` for an IP literal).
    pub fn host_name(&self) -> Option<&str> {
        match self {
            PeerAddress::Ip(_) => None,
            PeerAddress::Name { host, .. } => Some(host),
        }
    }

    /// The socket address to dial now: the IP literal itself, or the first address the system
    /// resolver (`getaddrinfo`, through `tokio::net::lookup_host`) gives for the host name whose
    /// family is IPv6 exactly when `prefer_ipv6` is (the family of the local endpoint), or else
    /// its first address. Errors: [`ResolveError`] naming the host; a failure is a failed dial,
    /// retried by the caller.
    pub async fn resolve(&self, prefer_ipv6: bool) -> Result<SocketAddr, ResolveError> {
        let (host, port) = match self {
            PeerAddress::Ip(addr) => return Ok(*addr),
            PeerAddress::Name { host, port } => (host.as_str(), *port),
        };
        let lookup = tokio::net::lookup_host((host, port));
        let found: Vec<SocketAddr> = match tokio::time::timeout(RESOLVE_TIMEOUT, lookup).await {
            Err(_) => return Err(ResolveError::Timeout(self.to_string())),
            Ok(Err(source)) => {
                return Err(ResolveError::Lookup {
                    name: self.to_string(),
                    source,
                })
            }
            Ok(Ok(found)) => found.collect(),
        };
        found
            .iter()
            .find(|a| a.is_ipv6() == prefer_ipv6)
            .or(found.first())
            .copied()
            .ok_or_else(|| ResolveError::NoAddress(self.to_string()))
    }
}

impl From<SocketAddr> for PeerAddress {
    fn from(addr: SocketAddr) -> PeerAddress {
        PeerAddress::Ip(addr)
    }
}

impl fmt::Display for PeerAddress {
    /// `ip:port`, `[ipv6]:port` or `host:port`: the spelling [`PeerAddress::from_str`] reads.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PeerAddress::Ip(addr) => write!(f, "{addr}"),
            PeerAddress::Name { host, port } => write!(f, "{host}:{port}"),
        }
    }
}

impl FromStr for PeerAddress {
    type Err = PeerAddressError;

    /// Reads `ip:port`, `[ipv6]:port` or `host:port`. Errors: a [`PeerAddressError`] variant
    /// for each rule broken (see the module docs).
    fn from_str(text: &str) -> Result<PeerAddress, PeerAddressError> {
        let refuse = |make: fn(String) -> PeerAddressError| Err(make(text.to_string()));
        // `[` `]` `:` and five port digits around the longest name.
        if text.len() > MAX_HOST_NAME_LEN + 8 {
            let shown: String = text.chars().take(40).collect();
            return Err(PeerAddressError::TooLong(format!("{shown}…")));
        }
        if let Ok(addr) = text.parse::<SocketAddr>() {
            if addr.port() == 0 {
                return refuse(PeerAddressError::BadPort);
            }
            return Ok(PeerAddress::Ip(addr));
        }
        if text.contains("://") || text.contains('/') {
            return refuse(PeerAddressError::SchemeOrPath);
        }
        if text.starts_with('[') {
            return refuse(PeerAddressError::BadIpv6);
        }
        let Some((host, port)) = text.rsplit_once(':') else {
            return refuse(PeerAddressError::NoPort);
        };
        if host.contains(':') {
            return refuse(PeerAddressError::BadIpv6);
        }
        if host.is_empty() {
            return refuse(PeerAddressError::EmptyHost);
        }
        let port = match port.parse::<u16>() {
            Ok(number) if number != 0 && port.bytes().all(|b| b.is_ascii_digit()) => number,
            _ => return refuse(PeerAddressError::BadPort),
        };
        if host.len() > MAX_HOST_NAME_LEN {
            return refuse(PeerAddressError::TooLong);
        }
        // One trailing dot (a fully qualified name) is allowed; empty labels elsewhere are not.
        let labels = host.strip_suffix('.').unwrap_or(host);
        let label_ok = |label: &str| {
            (1..=MAX_LABEL_LEN).contains(&label.len())
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        };
        if !labels.split('.').all(label_ok) {
            return refuse(PeerAddressError::BadHostName);
        }
        Ok(PeerAddress::Name {
            host: host.to_string(),
            port,
        })
    }
}

impl TryFrom<String> for PeerAddress {
    type Error = PeerAddressError;

    fn try_from(text: String) -> Result<PeerAddress, PeerAddressError> {
        text.parse()
    }
}

impl From<PeerAddress> for String {
    fn from(address: PeerAddress) -> String {
        address.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ip_literals_and_host_names() {
        let v4: PeerAddress = "10.0.0.5:9000".parse().unwrap();
        assert_eq!(v4, PeerAddress::Ip("10.0.0.5:9000".parse().unwrap()));
        let v6: PeerAddress = "[fd00::5]:9000".parse().unwrap();
        assert_eq!(v6, PeerAddress::Ip("[fd00::5]:9000".parse().unwrap()));
        let name: PeerAddress = "quasar-1.quasar.svc.cluster.local:9000".parse().unwrap();
        assert_eq!(
            name,
            PeerAddress::Name {
                host: "quasar-1.quasar.svc.cluster.local".into(),
                port: 9000
            }
        );
        assert_eq!(name.host_name(), Some("quasar-1.quasar.svc.cluster.local"));
        let fqdn: PeerAddress = "localhost.:1".parse().unwrap();
        assert_eq!(fqdn.to_string(), "localhost.:1");
        for text in ["10.0.0.5:9000", "[fd00::5]:9000", "localhost:9000"] {
            assert_eq!(text.parse::<PeerAddress>().unwrap().to_string(), text);
        }
    }

    #[test]
    fn refuses_what_is_not_host_port_saying_why() {
        let long = format!("{}:9000", "a.".repeat(127));
        type Variant = fn(String) -> PeerAddressError;
        let cases: &[(&str, Variant)] = &[
            ("validator-1", PeerAddressError::NoPort),
            ("validator-1:", PeerAddressError::BadPort),
            ("validator-1:0", PeerAddressError::BadPort),
            ("validator-1:65536", PeerAddressError::BadPort),
            ("validator-1:+90", PeerAddressError::BadPort),
            ("10.0.0.5:0", PeerAddressError::BadPort),
            (":9000", PeerAddressError::EmptyHost),
            ("quic://validator-1:9000", PeerAddressError::SchemeOrPath),
            ("validator-1:9000/p2p", PeerAddressError::SchemeOrPath),
            ("fd00::5:9000", PeerAddressError::BadIpv6),
            ("[fd00::5]", PeerAddressError::BadIpv6),
            ("[validator-1]:9000", PeerAddressError::BadIpv6),
            ("validator 1:9000", PeerAddressError::BadHostName),
            ("validator..1:9000", PeerAddressError::BadHostName),
            (".validator:9000", PeerAddressError::BadHostName),
            ("välidator:9000", PeerAddressError::BadHostName),
            (long.as_str(), PeerAddressError::TooLong),
        ];
        for (text, variant) in cases {
            let err = text.parse::<PeerAddress>().unwrap_err();
            assert_eq!(err, variant(text.to_string()), "{text}");
            assert!(err.to_string().contains(text), "{err}");
        }
        let label = format!("{}.example:9000", "a".repeat(64));
        assert!(matches!(
            label.parse::<PeerAddress>(),
            Err(PeerAddressError::BadHostName(_))
        ));
        // A megabyte of text is refused without echoing it whole.
        let huge = "a".repeat(1 << 20);
        let err = huge.parse::<PeerAddress>().unwrap_err();
        assert!(matches!(err, PeerAddressError::TooLong(_)));
        assert!(err.to_string().len() < 200, "{err}");
    }

    #[tokio::test]
    async fn resolves_localhost_in_the_endpoint_family_and_reports_unknown_names() {
        let localhost: PeerAddress = "localhost:9000".parse().unwrap();
        let addr = localhost.resolve(false).await.unwrap();
        assert!(addr.ip().is_loopback() && addr.is_ipv4(), "{addr}");
        assert_eq!(addr.port(), 9000);
        let ip: PeerAddress = "[::1]:9000".parse().unwrap();
        assert_eq!(
            ip.resolve(false).await.unwrap(),
            "[::1]:9000".parse().unwrap()
        );
        // `.invalid` never resolves (RFC 2606 §2).
        let unknown: PeerAddress = "no-such-validator.invalid:9000".parse().unwrap();
        let err = unknown.resolve(false).await.unwrap_err();
        assert!(
            err.to_string().contains("no-such-validator.invalid:9000"),
            "{err}"
        );
    }
}
