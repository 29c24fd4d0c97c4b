//! A server's certificate, swapped in place when its files change.

use super::{provider, read_certificates, read_private_key, TlsError};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime};
use tokio_rustls::TlsAcceptor;

/// How often [`ServerTls::keep_current`] looks at the files' modification times.
pub const RELOAD_POLL: Duration = Duration::from_secs(5);

/// The certificate handed to every new handshake. Connections already open keep the one they
/// were made with.
#[derive(Debug)]
struct CurrentCert(RwLock<Arc<CertifiedKey>>);

impl ResolvesServerCert for CurrentCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.read().unwrap_or_else(|poisoned| poisoned.into_inner()).clone())
    }
}

/// The files' modification times at the last attempt to read them.
type Stamps = (Option<SystemTime>, Option<SystemTime>);

/// A server's TLS: its certificate chain and key files, and the acceptor that serves what they
/// held at the last successful read. Cheap to clone; clones share the certificate.
#[derive(Clone)]
pub struct ServerTls {
    cert_path: Arc<Path>,
    key_path: Arc<Path>,
    current: Arc<CurrentCert>,
    /// Read before a file is read, so a change made while reading is seen at the next poll.
    stamps: Arc<Mutex<Stamps>>,
    acceptor: TlsAcceptor,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls")
            .field("cert_path", &self.cert_path)
            .field("key_path", &self.key_path)
            .finish_non_exhaustive()
    }
}

impl ServerTls {
    /// Reads a certificate chain (PEM, the server's certificate first, then intermediates) and
    /// its private key (PEM). Fails when either cannot be read or they do not belong together.
    pub fn from_files(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Result<ServerTls, TlsError> {
        let (cert_path, key_path): (Arc<Path>, Arc<Path>) = (cert.into().into(), key.into().into());
        let stamps = stamps(&cert_path, &key_path);
        let loaded = load(&cert_path, &key_path)?;
        let current = Arc::new(CurrentCert(RwLock::new(loaded)));
        let config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_cert_resolver(current.clone());
        Ok(ServerTls {
            cert_path,
            key_path,
            current,
            stamps: Arc::new(Mutex::new(stamps)),
            acceptor: TlsAcceptor::from(Arc::new(config)),
        })
    }

    /// Reads the files again; on success new connections get what they now hold. On failure
    /// the certificate in use stays.
    pub fn reload(&self) -> Result<(), TlsError> {
        *self.stamps.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = stamps(&self.cert_path, &self.key_path);
        let loaded = load(&self.cert_path, &self.key_path)?;
        *self.current.0.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = loaded;
        Ok(())
    }

    /// Reads the files again if either's modification time changed since the last read;
    /// `None` when neither did. A broken file is tried once, not at every poll: its next
    /// change (the key written after the certificate, say) tries again.
    pub fn reload_if_changed(&self) -> Option<Result<(), TlsError>> {
        let now = stamps(&self.cert_path, &self.key_path);
        if *self.stamps.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) == now {
            return None;
        }
        Some(self.reload())
    }

    /// Keeps the certificate current until `stop` resolves: reads the files again on SIGHUP,
    /// and when their modification time changes (looked at every [`RELOAD_POLL`]), so a
    /// renewal tool that only replaces the files works too. Outcomes are logged; a file that
    /// cannot be used is an error in the log and the certificate in use stays.
    pub async fn keep_current(self, stop: impl Future<Output = ()>) {
        tokio::pin!(stop);
        let mut hangups = hangup_signals();
        let mut poll = tokio::time::interval(RELOAD_POLL);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let outcome = tokio::select! {
                () = &mut stop => return,
                _ = poll.tick() => self.reload_if_changed(),
                () = next_hangup(&mut hangups) => Some(self.reload()),
            };
            match outcome {
                None => {}
                Some(Ok(())) => tracing::info!(cert = %self.cert_path.display(), "TLS certificate reloaded"),
                Some(Err(error)) => tracing::error!(
                    cert = %self.cert_path.display(),
                    %error,
                    "the TLS certificate could not be reloaded; new connections keep the previous one"
                ),
            }
        }
    }

    /// The acceptor of new connections.
    pub(crate) fn acceptor(&self) -> &TlsAcceptor {
        &self.acceptor
    }
}

fn load(cert: &Path, key: &Path) -> Result<Arc<CertifiedKey>, TlsError> {
    let chain = read_certificates(cert)?;
    let key = read_private_key(key)?;
    Ok(Arc::new(CertifiedKey::from_der(chain, key, &provider())?))
}

fn stamps(cert: &Path, key: &Path) -> Stamps {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    (modified(cert), modified(key))
}

#[cfg(unix)]
type Hangups = Option<tokio::signal::unix::Signal>;
#[cfg(not(unix))]
type Hangups = ();

#[cfg(unix)]
fn hangup_signals() -> Hangups {
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
        Ok(signal) => Some(signal),
        Err(error) => {
            tracing::warn!(%error, "cannot listen for SIGHUP; TLS files are still watched for changes");
            None
        }
    }
}

#[cfg(not(unix))]
fn hangup_signals() -> Hangups {}

/// The next SIGHUP, or never.
#[cfg(unix)]
async fn next_hangup(hangups: &mut Hangups) {
    if let Some(signal) = hangups {
        if signal.recv().await.is_some() {
            return;
        }
    }
    std::future::pending().await
}

#[cfg(not(unix))]
async fn next_hangup(_: &mut Hangups) {
    std::future::pending().await
}
