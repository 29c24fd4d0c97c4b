//! What Chime's clients trust: the executor calling its admins (HTTP and the link's WebSocket),
//! the admin calling executors and the other admins.

use super::{provider, read_certificates, TlsError};
use rustls::RootCertStore;
use std::path::Path;
use std::sync::OnceLock;

/// The system's store, read once per process: it is hundreds of files on some systems, and
/// every client of the process trusts the same ones.
fn system_roots() -> &'static RootCertStore {
    static ROOTS: OnceLock<RootCertStore> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let found = rustls_native_certs::load_native_certs();
        for error in &found.errors {
            tracing::debug!(%error, "a certificate of the system store could not be read");
        }
        let mut roots = RootCertStore::empty();
        let (added, _) = roots.add_parsable_certificates(found.certs);
        if added == 0 {
            // A minimal container image often has no CA bundle; the compiled-in Mozilla roots
            // keep public HTTPS addresses working there, as they did before the system store
            // was read.
            tracing::debug!("no certificates in the system store; trusting the Mozilla roots built in");
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        }
        roots
    })
}

/// A client configuration that trusts the system's store and, when given, every certificate
/// in `extra_ca` (a PEM file: a private CA). Fails when that file cannot be read or holds no
/// certificate, so a typo in a path is an error at start and not a handshake failure later.
pub fn client_config(extra_ca: Option<&Path>) -> Result<rustls::ClientConfig, TlsError> {
    let mut roots = system_roots().clone();
    if let Some(path) = extra_ca {
        for cert in read_certificates(path)? {
            roots.add(cert)?;
        }
    }
    Ok(rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth())
}
