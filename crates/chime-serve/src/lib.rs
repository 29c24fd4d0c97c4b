//! Serves an axum `Router` on a `TcpListener` with a bounded number of connections and timeouts
//! for the peers that stall. Both the admin and the executor serve HTTP to peers they do not
//! control, and `axum::serve` has no timer and no cap: a thousand idle or half-sent connections
//! held every file descriptor of a process with the common limit of 1,024, and `/healthz` stopped
//! answering for as long as they stayed. This crate is that serving code, once, for both
//! processes (the executor SDK must not depend on the admin, and `chime-protocol` does no I/O).
//!
//! What it bounds ([`Limits`]):
//! - **a request's head**: a new connection must send a complete request head within
//!   `header_timeout`, and so must a kept-alive connection once the first byte of its next request
//!   came (a client that sends its headers a byte at a time, or never finishes them, is cut off);
//! - **idle keep-alive**: a connection waiting for its next request is closed after
//!   `idle_timeout`;
//! - **stalls inside a request**: a request body that sends nothing, or a response the client
//!   does not read, for `idle_timeout` closes the connection. Time the server itself takes (a
//!   slow handler, a long poll) never counts: only waiting for the peer does;
//! - **connections**: at most `max_connections` at once, upgraded ones included; at the cap the
//!   server stops accepting (new connections wait in the kernel's backlog) until one closes, so
//!   the process keeps file descriptors for its database, its logs and its outgoing calls.
//!
//! With TLS ([`serve_tls`]) the handshake happens in the connection's own task and counts
//! against `header_timeout`, so a peer that stalls it holds no slot for long and keeps no other
//! connection from being accepted.
//!
//! A connection upgraded to a WebSocket (an executor link) leaves the HTTP timers: it has its
//! own pings and idle limit. It still holds its place under the cap until it closes.
//!
//! Why not hyper's own `header_read_timeout`: hyper (1.x) starts that timer whenever a
//! connection is ready for a request, the wait for the next request on a kept-alive connection
//! included, so one duration would be both the header limit and the keep-alive limit: a short
//! one closes kept-alive connections clients were about to reuse, a long one lets a slow
//! sender hold a connection as long. The timers here are per connection, in its own task, and
//! tell the two apart.

#![deny(missing_docs)]

pub mod tls;
mod watch;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tls::ServerTls;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;
use watch::{InFlight, Watch, WatchedBody, WatchedIo};

/// Default of [`Limits::header_timeout`].
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Default of [`Limits::idle_timeout`]: longer than the clients' own keep-alive (60 s for the
/// executor's and the admin's clients, 5 s for Java's), so a client rarely sends on a connection
/// the server is closing at that instant.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// File descriptors kept free below the descriptor limit by the default connection cap (or
/// half the limit, when that is smaller): the process's own database connections, log files,
/// outgoing calls and child processes need them.
pub const RESERVED_DESCRIPTORS: u64 = 4096;

/// How one server treats its connections. [`Limits::default`] gives the defaults above.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// A new connection must send a complete request head within this; so must a kept-alive one
    /// from the first byte of its next request.
    pub header_timeout: Duration,
    /// A kept-alive connection waiting for its next request, a request body that stalls or a
    /// response the client does not read, for this long, closes the connection.
    pub idle_timeout: Duration,
    /// Most connections open at once; `0` takes [`default_max_connections`] of the descriptor
    /// limit.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: 0,
        }
    }
}

impl Limits {
    /// The connection cap in force: the configured one, or the default of the descriptor limit.
    pub fn connection_cap(&self) -> usize {
        if self.max_connections > 0 {
            self.max_connections
        } else {
            default_max_connections(descriptor_limit())
        }
    }
}

/// The default connection cap for a process allowed `descriptors` open files:
/// [`RESERVED_DESCRIPTORS`] (or half, if less) below it, and at least 1.
pub fn default_max_connections(descriptors: u64) -> usize {
    let reserve = RESERVED_DESCRIPTORS.min(descriptors / 2);
    usize::try_from(descriptors.saturating_sub(reserve))
        .unwrap_or(usize::MAX)
        .max(1)
}

/// The soft limit on open files of this process (`RLIMIT_NOFILE`); 1,024 where it cannot be read.
pub fn descriptor_limit() -> u64 {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes one rlimit into the struct it is given.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
            return limit.rlim_cur;
        }
    }
    1024
}

/// Raises the soft limit on open files to the hard limit, where the system allows: many
/// systems start services with a soft limit of 1,024 and a far higher hard limit, and every
/// connection, log file and database connection takes a descriptor. Returns the soft limit in
/// force afterwards.
pub fn raise_descriptor_limit() -> u64 {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes one rlimit into the struct it is given; setrlimit reads one.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max {
                let raised = libc::rlimit {
                    rlim_cur: limit.rlim_max,
                    rlim_max: limit.rlim_max,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) != 0 {
                    tracing::debug!(
                        soft = limit.rlim_cur,
                        hard = limit.rlim_max,
                        "the limit on open files could not be raised"
                    );
                }
            }
        }
    }
    descriptor_limit()
}

/// Serves `router` on `listener` under `limits` until `shutdown` resolves; then stops
/// accepting, lets every connection finish the request it is serving (idle ones close at once),
/// and returns when all have closed. Upgraded connections (WebSockets) are not waited for:
/// their own code ends them.
///
/// Handlers see the peer's address as `ConnectInfo<SocketAddr>`, as with
/// `into_make_service_with_connect_info`.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    serve_with(listener, router, limits, None, shutdown).await;
}

/// [`serve`] over TLS: each connection's handshake, with the certificate `tls` holds at that
/// moment, must end within `limits.header_timeout` (with the first request's head: the one
/// timer runs from the accept). While it serves, the certificate is kept current
/// ([`ServerTls::keep_current`]: SIGHUP, or a change of its files).
pub async fn serve_tls(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    tls: ServerTls,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    serve_with(listener, router, limits, Some(tls), shutdown).await;
}

/// [`serve_tls`] when `tls` is given, else [`serve`]: for servers whose TLS is a setting.
pub async fn serve_with(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    tls: Option<ServerTls>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let reloader = CancellationToken::new();
    if let Some(tls) = &tls {
        let stop = reloader.clone();
        tokio::spawn(tls.clone().keep_current(async move { stop.cancelled().await }));
    }
    let _stop_reloader = reloader.drop_guard();
    let cap = limits.connection_cap();
    let permits = Arc::new(Semaphore::new(cap));
    let stopping = CancellationToken::new();
    let connections = TaskTracker::new();
    tokio::pin!(shutdown);
    tracing::debug!(
        max_connections = cap,
        header_timeout = ?limits.header_timeout,
        idle_timeout = ?limits.idle_timeout,
        "serving HTTP"
    );
    loop {
        // The permit first: at the cap, connections wait in the kernel's backlog, not in this
        // process, and take no descriptor here.
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    accept_failed(&err).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let watch = Arc::new(Watch::new());
        let io = WatchedIo::new(stream, watch.clone(), permit);
        let connection = Connection {
            peer,
            router: router.clone(),
            watch,
            limits,
            stopping: stopping.clone(),
        };
        match &tls {
            None => connections.spawn(connection.serve(TokioIo::new(io))),
            Some(tls) => connections.spawn(connection.serve_tls(io, tls.clone())),
        };
    }
    drop(listener);
    stopping.cancel();
    connections.close();
    connections.wait().await;
}

/// An accept that failed: a connection reset before it was taken is nothing; anything else (out
/// of descriptors, despite the cap) is logged and waited out briefly instead of spinning.
async fn accept_failed(err: &std::io::Error) {
    use std::io::ErrorKind;
    if matches!(
        err.kind(),
        ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset | ErrorKind::ConnectionRefused
    ) {
        return;
    }
    tracing::error!(error = %err, "cannot accept a connection");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// One accepted connection and what serving it needs.
struct Connection {
    peer: SocketAddr,
    router: Router,
    watch: Arc<Watch>,
    limits: Limits,
    stopping: CancellationToken,
}

impl Connection {
    /// Shakes hands (within the header timeout, counted from the accept), then serves the
    /// connection. A failed or stalled handshake only closes this connection.
    async fn serve_tls(self, io: WatchedIo, tls: ServerTls) {
        let handshake = tokio::time::timeout(self.limits.header_timeout, tls.acceptor().accept(io));
        let stream = tokio::select! {
            shaken = handshake => match shaken {
                Ok(Ok(stream)) => stream,
                Ok(Err(err)) => {
                    tracing::debug!(peer = %self.peer, error = %err, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(peer = %self.peer, "TLS handshake not done within the header timeout");
                    return;
                }
            },
            () = self.stopping.cancelled() => return,
        };
        self.serve(TokioIo::new(stream)).await;
    }

    /// Serves the connection until it ends, it is upgraded, a timer of [`Limits`] runs out, or
    /// the server stops (then it finishes the request in hand first).
    async fn serve<I>(self, io: TokioIo<I>)
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let Connection {
            peer,
            router,
            watch,
            limits,
            stopping,
        } = self;
        let service = {
            let watch = watch.clone();
            hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
                let in_flight = InFlight::start(watch.clone());
                let mut request = request.map(|body| axum::body::Body::new(WatchedBody::request(body, watch.clone())));
                request.extensions_mut().insert(ConnectInfo(peer));
                let router = router.clone();
                async move {
                    let response = match router.oneshot(request).await {
                        Ok(response) => response,
                        Err(never) => match never {},
                    };
                    // The request is in flight until its response is sent whole (or dropped).
                    Ok::<_, Infallible>(response.map(|body| WatchedBody::response(body, in_flight)))
                }
            })
        };
        let connection = hyper::server::conn::http1::Builder::new()
            .serve_connection(io, service)
            .with_upgrades();
        tokio::pin!(connection);
        let mut graceful = false;
        loop {
            let deadline = watch.deadline(&limits);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(err) = result {
                        tracing::debug!(%peer, error = %err, "connection ended with an error");
                    }
                    return;
                }
                () = sleep_until(deadline) => {
                    if watch.deadline(&limits).is_some_and(|d| d <= tokio::time::Instant::now()) {
                        tracing::debug!(%peer, "connection closed: the peer stalled past its limit");
                        return;
                    }
                }
                () = watch.changed() => {}
                () = stopping.cancelled(), if !graceful => {
                    graceful = true;
                    connection.as_mut().graceful_shutdown();
                }
            }
        }
    }
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_cap_keeps_descriptors_for_the_process() {
        assert_eq!(default_max_connections(1024), 512);
        assert_eq!(default_max_connections(20_000), 20_000 - 4096);
        assert_eq!(default_max_connections(1_048_576), 1_048_576 - 4096);
        assert_eq!(default_max_connections(1), 1);
        assert_eq!(default_max_connections(0), 1);
        let limits = Limits {
            max_connections: 7,
            ..Limits::default()
        };
        assert_eq!(limits.connection_cap(), 7);
    }
}
