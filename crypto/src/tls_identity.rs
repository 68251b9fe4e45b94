//! A validator's TLS identity: an Ed25519 key (RFC 8032) and a self-signed X.509 certificate
//! for it (rcgen), which the genesis file pins by its exact DER bytes. `quasar-node keygen`
//! creates one and keeps it in the validator's key files; the transport (`quasar_p2p`) builds its
//! mutually authenticated TLS 1.3 configuration from it. The private key is never logged.

use std::fmt;

/// Why a TLS identity could not be generated (a subject that is not a DNS name, a key
/// generation or self-signing failure), with rcgen's reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("TLS identity: {0}")]
pub struct TlsIdentityError(pub String);

/// A validator's TLS identity: a self-signed certificate and its PKCS#8 private key.
#[derive(Clone)]
pub struct TlsIdentity {
    /// The certificate in DER, exactly as pinned in the genesis file.
    pub cert_der: Vec<u8>,
    /// PKCS#8 DER of the private key. Never logged (see the `Debug` impl).
    key_der: Vec<u8>,
}

impl fmt::Debug for TlsIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsIdentity")
            .field("cert_der_len", &self.cert_der.len())
            .field("key_der", &"<redacted>")
            .finish()
    }
}

impl TlsIdentity {
    /// A fresh Ed25519 key and a self-signed certificate for it, with `subject` as common name
    /// and DNS subject-alternative name (e.g. `"validator-3"`).
    ///
    /// Errors: [`TlsIdentityError`] when `subject` is not a valid DNS name or key generation
    /// fails.
    pub fn generate(subject: &str) -> Result<TlsIdentity, TlsIdentityError> {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519)
            .map_err(|e| TlsIdentityError(format!("key generation: {e}")))?;
        let mut params = rcgen::CertificateParams::new(vec![subject.to_string()])
            .map_err(|e| TlsIdentityError(format!("subject {subject:?}: {e}")))?;
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, subject);
        let cert = params
            .self_signed(&key)
            .map_err(|e| TlsIdentityError(format!("self-signing: {e}")))?;
        Ok(TlsIdentity {
            cert_der: cert.der().to_vec(),
            key_der: key.serialize_der(),
        })
    }

    /// An identity from stored DER bytes: the certificate and its PKCS#8 private key. Nothing is
    /// checked here; a mismatched or malformed pair fails when a TLS configuration is built
    /// from it (`quasar_p2p`).
    pub fn from_der(cert_der: Vec<u8>, key_pkcs8_der: Vec<u8>) -> TlsIdentity {
        TlsIdentity {
            cert_der,
            key_der: key_pkcs8_der,
        }
    }

    /// The PKCS#8 DER of the private key (for persisting it; handle as a secret).
    pub fn key_der(&self) -> &[u8] {
        &self.key_der
    }
}
