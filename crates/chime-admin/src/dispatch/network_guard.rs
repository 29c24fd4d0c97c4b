//! The last check before the admin talks to an executor: the connection's peer must lie in the
//! networks executors may be called in (`--executor-networks`, see [`crate::address_policy`]).
//!
//! Addresses are checked when they are registered or configured, but a host name is only an
//! address once it is resolved, and it may resolve elsewhere later (DNS rebinding): a name that
//! pointed at an executor could point at 169.254.169.254 tomorrow. So the connector refuses a
//! literal IP outside the networks before dialling, and checks the peer of every new connection
//! before the first byte — the request carrying the access token — is written.

use crate::address_policy::ExecutorNetworks;
use hyper::Uri;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioIo;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::net::TcpStream;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// An [`HttpConnector`] that only connects to peers in the allowed networks.
#[derive(Debug, Clone)]
pub struct GuardedConnector {
    inner: HttpConnector,
    networks: Arc<ExecutorNetworks>,
}

impl GuardedConnector {
    /// Wraps `inner`; every connection it makes is checked against `networks`.
    pub fn new(inner: HttpConnector, networks: ExecutorNetworks) -> GuardedConnector {
        GuardedConnector {
            inner,
            networks: Arc::new(networks),
        }
    }
}

fn refused(ip: IpAddr, networks: &ExecutorNetworks) -> BoxError {
    format!("executor address {ip} is outside the networks executors may be called in ({networks}); see --executor-networks")
        .into()
}

impl tower_service::Service<Uri> for GuardedConnector {
    type Response = TokioIo<TcpStream>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let networks = self.networks.clone();
        let literal = uri
            .host()
            .map(|h| h.trim_start_matches('[').trim_end_matches(']'))
            .and_then(|h| h.parse::<IpAddr>().ok());
        if let Some(ip) = literal.filter(|ip| !networks.allows(*ip)) {
            return Box::pin(async move { Err(refused(ip, &networks)) });
        }
        let connecting = self.inner.call(uri);
        Box::pin(async move {
            let io = connecting.await?;
            let peer = io.inner().peer_addr()?.ip();
            if !networks.allows(peer) {
                return Err(refused(peer, &networks));
            }
            Ok(io)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower_service::Service;

    #[tokio::test]
    async fn refuses_peers_outside_the_networks() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let only_ten: ExecutorNetworks = "10.0.0.0/8".parse().unwrap();
        let mut guarded = GuardedConnector::new(HttpConnector::new(), only_ten);
        let uri: Uri = format!("http://127.0.0.1:{port}/").parse().unwrap();
        let e = guarded.call(uri).await.unwrap_err();
        assert!(e.to_string().contains("outside the networks"), "{e}");
        // A name is checked once resolved: `localhost` is 127.0.0.1 (or ::1), outside 10/8.
        let uri: Uri = format!("http://localhost:{port}/").parse().unwrap();
        let e = guarded.call(uri).await.unwrap_err();
        assert!(e.to_string().contains("outside the networks"), "{e}");
        let mut open = GuardedConnector::new(HttpConnector::new(), ExecutorNetworks::default());
        let uri: Uri = format!("http://127.0.0.1:{port}/").parse().unwrap();
        assert!(open.call(uri).await.is_ok());
        let metadata: Uri = "http://169.254.169.254/latest/".parse().unwrap();
        assert!(open.call(metadata).await.is_err());
    }
}
