//! TLS identities and pinned mutual authentication for validator links.
//!
//! Every validator owns a self-signed X.509 certificate with an Ed25519 key ([`TlsIdentity`]); the
//! genesis file pins each validator's certificate by its exact DER bytes. Authentication is
//! therefore by byte equality against the pinned set, not by chain building:
//!
//! - the server ([`PinnedClientVerifier`]) requires a client certificate and accepts it only if
//!   its DER equals one of the pinned certificates ([`PinnedClients`], a set the network updates
//!   while it runs when validators join or leave; the next handshake sees the change);
//! - the client ([`PinnedServerVerifier`]) accepts the server only if its DER equals the one
//!   certificate pinned for the validator it dialed; the TLS server name is ignored.
//!
//! Both verifiers also check the TLS 1.3 `CertificateVerify` signature (RFC 8446 §4.4.3) with the
//! ring provider's signature algorithms, so presenting a pinned certificate without its key fails.
//! Only TLS 1.3 is offered, and ALPN is [`ALPN`] on both sides (a QUIC server closes the handshake
//! with `no_application_protocol` when there is no overlap, RFC 9001 §8.1). The server issues no
//! session tickets: a resumed handshake (RFC 8446 §2.2) would skip the client-certificate check,
//! so a certificate unpinned since the last connection must not be able to resume.
//!
//! Deviation from WebPKI: validity periods, key usage and name constraints are not checked. The
//! pinned set is the trust anchor itself; rotating a key means changing the genesis/epoch config,
//! not waiting for an expiry.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn::{IdleTimeout, TransportConfig, VarInt};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::NoServerSessionStorage;
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, SignatureScheme};

use super::P2pError;
pub use quasar_crypto::tls_identity::TlsIdentity;

/// ALPN protocol id of validator links (docs/architecture.md §5). Connections negotiating anything else are
/// rejected.
pub const ALPN: &[u8] = b"zap/3";

/// The TLS server name clients send. Pinning ignores it; it only has to be a valid DNS name.
pub const SERVER_NAME: &str = "quasar-validator";

/// QUIC keep-alive interval: an idle link still carries a packet this often.
pub const KEEP_ALIVE: Duration = Duration::from_secs(1);

/// QUIC idle timeout: a peer silent this long (killed, partitioned) is declared gone.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(5);

/// Most concurrent request (bidirectional) streams a peer may open on one connection.
pub const MAX_CONCURRENT_REQUESTS: u32 = 64;

/// Most concurrent gossip (unidirectional) streams a peer may open on one connection. A
/// well-behaved peer uses one.
pub const MAX_CONCURRENT_GOSSIP_STREAMS: u32 = 8;

/// The identity's certificate chain for rustls: the one self-signed certificate.
fn cert_chain(identity: &TlsIdentity) -> Vec<CertificateDer<'static>> {
    vec![CertificateDer::from(identity.cert_der.clone())]
}

/// The identity's private key for rustls (PKCS#8).
fn private_key(identity: &TlsIdentity) -> PrivateKeyDer<'static> {
    PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(identity.key_der().to_vec()))
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The client certificates (DER) a validator's server accepts, each with the validator index it
/// is pinned for. Clones share one set: [`crate::Network::set_peers`] pins and unpins
/// certificates while the server runs, and its [`PinnedClientVerifier`] checks every handshake
/// against the set as it is at that moment.
#[derive(Clone, Debug, Default)]
pub struct PinnedClients(Arc<RwLock<HashMap<Vec<u8>, u32>>>);

impl PinnedClients {
    /// The validator index `cert_der` is pinned for, if it is pinned.
    pub fn index_of(&self, cert_der: &[u8]) -> Option<u32> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(cert_der)
            .copied()
    }

    /// Pins `cert_der` for validator `index` (replacing the index it had, if any).
    pub fn pin(&self, cert_der: Vec<u8>, index: u32) {
        self.0
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(cert_der, index);
    }

    /// Unpins `cert_der`: later handshakes presenting it fail.
    pub fn unpin(&self, cert_der: &[u8]) {
        self.0
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(cert_der);
    }
}

/// Server side: accepts a client only when its certificate is pinned now.
#[derive(Debug)]
pub struct PinnedClientVerifier {
    pinned: PinnedClients,
    algorithms: WebPkiSupportedAlgorithms,
}

impl PinnedClientVerifier {
    /// A verifier accepting exactly the certificates pinned in `pinned` at each handshake, with
    /// signatures checked by the ring provider's algorithms.
    pub fn new(pinned: PinnedClients) -> Self {
        PinnedClientVerifier {
            pinned,
            algorithms: provider().signature_verification_algorithms,
        }
    }
}

impl ClientCertVerifier for PinnedClientVerifier {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        true
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        if intermediates.is_empty() && self.pinned.index_of(end_entity.as_ref()).is_some() {
            Ok(ClientCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// Client side: accepts the server only when it presents exactly the pinned certificate of the
/// validator that was dialed.
#[derive(Debug)]
pub struct PinnedServerVerifier {
    expected: Vec<u8>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl PinnedServerVerifier {
    /// A verifier accepting only `expected` (DER), with signatures checked by the ring
    /// provider's algorithms.
    pub fn new(expected: Vec<u8>) -> Self {
        PinnedServerVerifier {
            expected,
            algorithms: provider().signature_verification_algorithms,
        }
    }
}

impl ServerCertVerifier for PinnedServerVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if intermediates.is_empty() && end_entity.as_ref() == self.expected.as_slice() {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// The rustls client config for dialing the validator whose pinned certificate is
/// `server_cert_der`, authenticating as `identity`: TLS 1.3 only, ALPN [`ALPN`].
///
/// Exposed so tools and tests can adjust it (e.g. ALPN) before wrapping it for QUIC.
/// Errors: [`P2pError::Tls`] when the identity's key does not parse or match.
pub fn client_crypto(
    identity: &TlsIdentity,
    server_cert_der: &[u8],
) -> Result<rustls::ClientConfig, P2pError> {
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(PinnedServerVerifier::new(
            server_cert_der.to_vec(),
        )))
        .with_client_auth_cert(cert_chain(identity), private_key(identity))?;
    config.alpn_protocols = vec![ALPN.to_vec()];
    Ok(config)
}

/// A quinn client config wrapping `crypto` with the validator-link transport settings
/// (keep-alive [`KEEP_ALIVE`], idle timeout [`IDLE_TIMEOUT`], no streams accepted from the server).
///
/// Errors: [`P2pError::QuicConfig`] when the TLS config lacks the QUIC initial cipher suite.
pub fn quic_client_config(crypto: rustls::ClientConfig) -> Result<quinn::ClientConfig, P2pError> {
    let quic =
        QuicClientConfig::try_from(crypto).map_err(|e| P2pError::QuicConfig(e.to_string()))?;
    let mut config = quinn::ClientConfig::new(Arc::new(quic));
    config.transport_config(Arc::new(transport_config(0, 0)?));
    Ok(config)
}

/// The quinn client config for dialing the validator pinned as `server_cert_der`, as
/// `identity`: [`client_crypto`] wrapped by [`quic_client_config`].
///
/// Errors: [`P2pError::Tls`], [`P2pError::QuicConfig`].
pub fn client_config(
    identity: &TlsIdentity,
    server_cert_der: &[u8],
) -> Result<quinn::ClientConfig, P2pError> {
    quic_client_config(client_crypto(identity, server_cert_der)?)
}

/// The quinn server config of a validator: presents `identity`, requires a client certificate
/// pinned in `pinned` at the time of the handshake (the set may change later), TLS 1.3 only,
/// no session resumption (every handshake checks the client certificate), ALPN [`ALPN`], at
/// most [`MAX_CONCURRENT_REQUESTS`] request streams and [`MAX_CONCURRENT_GOSSIP_STREAMS`] gossip
/// streams per connection.
///
/// Errors: [`P2pError::Tls`] when the identity's key does not parse or match,
/// [`P2pError::QuicConfig`].
pub fn server_config(
    identity: &TlsIdentity,
    pinned: PinnedClients,
) -> Result<quinn::ServerConfig, P2pError> {
    let mut crypto = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_client_cert_verifier(Arc::new(PinnedClientVerifier::new(pinned)))
        .with_single_cert(cert_chain(identity), private_key(identity))?;
    crypto.alpn_protocols = vec![ALPN.to_vec()];
    // No session resumption: a resumed handshake skips the client-certificate check, so a
    // validator unpinned since its last connection could come back on an old ticket.
    crypto.send_tls13_tickets = 0;
    crypto.session_storage = Arc::new(NoServerSessionStorage {});
    let quic =
        QuicServerConfig::try_from(crypto).map_err(|e| P2pError::QuicConfig(e.to_string()))?;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(quic));
    config.transport_config(Arc::new(transport_config(
        MAX_CONCURRENT_REQUESTS,
        MAX_CONCURRENT_GOSSIP_STREAMS,
    )?));
    Ok(config)
}

fn transport_config(bidi: u32, uni: u32) -> Result<TransportConfig, P2pError> {
    let mut transport = TransportConfig::default();
    transport
        .keep_alive_interval(Some(KEEP_ALIVE))
        .max_idle_timeout(Some(
            IdleTimeout::try_from(IDLE_TIMEOUT).map_err(|e| P2pError::QuicConfig(e.to_string()))?,
        ))
        .max_concurrent_bidi_streams(VarInt::from_u32(bidi))
        .max_concurrent_uni_streams(VarInt::from_u32(uni));
    Ok(transport)
}

/// The pinned certificate the peer of `connection` authenticated with, if any.
pub(crate) fn peer_certificate(connection: &quinn::Connection) -> Option<Vec<u8>> {
    let identity = connection.peer_identity()?;
    let chain = identity.downcast::<Vec<CertificateDer<'static>>>().ok()?;
    chain.first().map(|c| c.as_ref().to_vec())
}

/// Whether `connection` negotiated [`ALPN`].
pub(crate) fn negotiated_alpn(connection: &quinn::Connection) -> bool {
    connection
        .handshake_data()
        .and_then(|d| d.downcast::<quinn::crypto::rustls::HandshakeData>().ok())
        .and_then(|d| d.protocol)
        .is_some_and(|p| p == ALPN)
}
