//! `serve_tls` against real TLS clients, with a certificate authority made for the test.

use axum::routing::get;
use axum::Router;
use chime_serve::tls::{client_config, ServerTls};
use chime_serve::{serve_tls, Limits};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, SerialNumber};
use rustls::pki_types::{CertificateDer, ServerName};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_util::sync::CancellationToken;

/// A throwaway certificate authority.
struct TestCa {
    cert: rcgen::Certificate,
    key: KeyPair,
}

impl TestCa {
    fn new(name: &str) -> TestCa {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.self_signed(&key).unwrap();
        TestCa { cert, key }
    }

    /// Writes the CA's certificate to `dir/ca.pem`.
    fn write(&self, dir: &Path) -> PathBuf {
        let path = dir.join("ca.pem");
        std::fs::write(&path, self.cert.pem()).unwrap();
        path
    }

    /// A server certificate for `localhost` and 127.0.0.1 with `serial`, written to
    /// `dir/server.pem` and `dir/server.key`; returns its DER.
    fn issue(&self, dir: &Path, serial: u64) -> CertificateDer<'static> {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
        params.serial_number = Some(SerialNumber::from(serial));
        params
            .distinguished_name
            .push(DnType::CommonName, format!("server {serial}"));
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        std::fs::write(dir.join("server.pem"), cert.pem()).unwrap();
        std::fs::write(dir.join("server.key"), key.serialize_pem()).unwrap();
        cert.der().clone()
    }
}

struct Server {
    addr: SocketAddr,
    tls: ServerTls,
    stop: CancellationToken,
}

async fn start(dir: &Path, limits: Limits) -> Server {
    let tls = ServerTls::from_files(dir.join("server.pem"), dir.join("server.key")).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = Router::new().route("/hello", get(|| async { "hello over tls" }));
    let stop = CancellationToken::new();
    let until = stop.clone();
    tokio::spawn(serve_tls(listener, router, limits, tls.clone(), async move {
        until.cancelled().await
    }));
    Server { addr, tls, stop }
}

/// Connects with `config`, GETs /hello; returns the server's certificate and the reply.
async fn fetch(addr: SocketAddr, config: rustls::ClientConfig) -> std::io::Result<(CertificateDer<'static>, String)> {
    let tcp = TcpStream::connect(addr).await?;
    let connector = TlsConnector::from(Arc::new(config));
    let mut tls = connector
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await?;
    let cert = tls.get_ref().1.peer_certificates().unwrap()[0].clone();
    tls.write_all(b"GET /hello HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await?;
    let mut reply = String::new();
    tls.read_to_string(&mut reply).await?;
    Ok((cert, reply))
}

#[tokio::test]
async fn a_client_trusting_the_ca_is_served_and_others_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("chime test ca");
    let ca_file = ca.write(dir.path());
    let issued = ca.issue(dir.path(), 1);
    let server = start(dir.path(), Limits::default()).await;

    let (cert, reply) = fetch(server.addr, client_config(Some(&ca_file)).unwrap())
        .await
        .unwrap();
    assert_eq!(cert, issued);
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.ends_with("hello over tls"), "{reply}");

    let refused = fetch(server.addr, client_config(None).unwrap()).await.unwrap_err();
    assert!(
        refused.to_string().contains("UnknownIssuer") || refused.to_string().contains("unknown issuer"),
        "{refused}"
    );
    server.stop.cancel();
}

#[tokio::test]
async fn a_replaced_certificate_serves_new_connections_and_a_broken_one_is_not_taken() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("chime test ca");
    let ca_file = ca.write(dir.path());
    let first = ca.issue(dir.path(), 1);
    let server = start(dir.path(), Limits::default()).await;
    let trust = || client_config(Some(&ca_file)).unwrap();
    assert_eq!(fetch(server.addr, trust()).await.unwrap().0, first);
    assert!(server.tls.reload_if_changed().is_none(), "nothing changed");

    // Some file systems keep modification times to the second.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let second = ca.issue(dir.path(), 2);
    // `None` only if the server's own poll read the files first.
    assert!(!matches!(server.tls.reload_if_changed(), Some(Err(_))));
    assert_eq!(fetch(server.addr, trust()).await.unwrap().0, second);

    // A key that is not the certificate's: refused, the second certificate stays.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    std::fs::write(
        dir.path().join("server.key"),
        KeyPair::generate().unwrap().serialize_pem(),
    )
    .unwrap();
    let error = server.tls.reload().unwrap_err();
    assert!(error.to_string().contains("key"), "{error}");
    std::fs::write(dir.path().join("server.pem"), "not a certificate").unwrap();
    assert!(server.tls.reload().is_err());
    assert_eq!(fetch(server.addr, trust()).await.unwrap().0, second);
    server.stop.cancel();
}

#[tokio::test]
async fn the_reloader_follows_the_files_and_sighup() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("chime test ca");
    let ca_file = ca.write(dir.path());
    ca.issue(dir.path(), 1);
    // serve_tls keeps the certificate current itself.
    let server = start(dir.path(), Limits::default()).await;
    let trust = || client_config(Some(&ca_file)).unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let second = ca.issue(dir.path(), 2);
    // SIGHUP reads the files at once; the poll would take up to RELOAD_POLL.
    // SAFETY: raise sends a signal to this process, whose SIGHUP handler tokio installed.
    assert_eq!(unsafe { libc::raise(libc::SIGHUP) }, 0);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    loop {
        if fetch(server.addr, trust()).await.unwrap().0 == second {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "SIGHUP did not reload the certificate"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let third = ca.issue(dir.path(), 3);
    let deadline = tokio::time::Instant::now() + chime_serve::tls::RELOAD_POLL + Duration::from_secs(3);
    loop {
        if fetch(server.addr, trust()).await.unwrap().0 == third {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the poll did not reload the certificate"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    server.stop.cancel();
}

#[tokio::test]
async fn a_stalled_handshake_is_closed_at_the_header_timeout_and_holds_no_slot() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("chime test ca");
    let ca_file = ca.write(dir.path());
    ca.issue(dir.path(), 1);
    let limits = Limits {
        header_timeout: Duration::from_millis(300),
        max_connections: 1,
        ..Limits::default()
    };
    let server = start(dir.path(), limits).await;
    // Connects and sends nothing: the only slot is taken until the header timeout.
    let mut stalled = TcpStream::connect(server.addr).await.unwrap();
    let mut buf = [0u8; 16];
    let closed = tokio::time::timeout(Duration::from_secs(3), stalled.read(&mut buf)).await;
    assert!(matches!(closed, Ok(Ok(0)) | Ok(Err(_))), "{closed:?}");
    let (_, reply) = fetch(server.addr, client_config(Some(&ca_file)).unwrap())
        .await
        .unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    server.stop.cancel();
}
