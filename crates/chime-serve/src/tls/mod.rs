//! TLS for Chime's two servers and its clients, with rustls and the `ring` provider (no C
//! toolchain needed to build it).
//!
//! - [`ServerTls`]: a certificate chain and key read from PEM files, served to every new
//!   connection by [`crate::serve_tls`], and read again on SIGHUP or when the files change
//!   ([`ServerTls::keep_current`]): a renewed certificate takes effect without a restart, and
//!   a broken new file leaves the one in use in place.
//! - [`client_config`]: what Chime's clients trust: the system's certificate store (which
//!   honours `SSL_CERT_FILE` and `SSL_CERT_DIR`) plus, optionally, one more CA file, so a
//!   private CA works without touching the system store. Verification is never turned off.

mod client;
mod server;

pub use client::client_config;
pub use server::{ServerTls, RELOAD_POLL};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What can go wrong reading certificates and keys.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A file holds no PEM section of the kind needed, or a broken one.
    #[error("{path} holds no usable {what} (PEM)")]
    Pem {
        /// The file.
        path: PathBuf,
        /// "certificate" or "private key".
        what: &'static str,
    },
    /// rustls refused the certificate or the key (a key that is not the certificate's, a key
    /// type it does not support).
    #[error("{0}")]
    Rustls(#[from] rustls::Error),
}

/// The ring provider, the one every Chime TLS configuration uses: naming it keeps rustls from
/// having to guess a process-wide default.
pub(crate) fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_owned(),
        source,
    })
}

/// Every certificate of a PEM file, in order (a chain: the server's first).
pub(crate) fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read(path)?;
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<_, _>>()
            .map_err(|_| TlsError::Pem {
                path: path.to_owned(),
                what: "certificate",
            })?;
    if certs.is_empty() {
        return Err(TlsError::Pem {
            path: path.to_owned(),
            what: "certificate",
        });
    }
    Ok(certs)
}

/// The first private key of a PEM file (PKCS#8, PKCS#1 or SEC1).
pub(crate) fn read_private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let pem = read(path)?;
    PrivateKeyDer::from_pem_slice(&pem).map_err(|_| TlsError::Pem {
        path: path.to_owned(),
        what: "private key",
    })
}
