//! The socket under an executor link, and what it may hold of the executor's messages.
//!
//! The WebSocket layer buffers a message until it is whole, up to
//! [`chime_protocol::link::MAX_FRAME_BYTES`] (17 MiB, for answers to `/log`). Twenty links that
//! each sent most of such a message and stalled made the admin hold over 300 MiB, and the
//! allocator kept it after they closed. So the bytes read from each link are counted below the
//! WebSocket layer ([`CountedIo`]), from one whole message to the next:
//! - a message may be at most [`MAX_MESSAGE_BYTES`] (1 MiB), unless the link owes an answer to a
//!   `/log` call (the only large message an executor sends); a link over its cap is closed;
//! - the bytes of every link's unfinished message beyond [`FREE_BYTES`] count against one
//!   budget for all links, [`LARGE_MESSAGE_BUDGET`]; a link whose message does not fit in what is
//!   left is closed. So N stalled links hold at most N × 64 KiB plus the budget, whatever N.
//!
//! The bytes counted are shown as the gauge `chime_link_message_bytes`. The upgrade is done
//! here ([`LinkUpgrade`]) rather than by axum's WebSocket extractor, which hides the socket.

use crate::link::Link;
use axum::body::Body;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use chime_protocol::link::{MAX_FRAME_BYTES, MAX_MESSAGE_BYTES};
use hyper::upgrade::{OnUpgrade, Upgraded};
use hyper_util::rt::TokioIo;
use prometheus_client::metrics::gauge::Gauge;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use tokio_tungstenite::WebSocketStream;

/// Bytes of one link's unfinished message that cost nothing against the shared budget: every
/// ordinary message (a trigger's answer, a registration, a few results) is smaller.
pub const FREE_BYTES: usize = 64 * 1024;

/// Bytes of unfinished messages beyond [`FREE_BYTES`] that all links together may hold: room
/// for a few answers to `/log` of the largest kind at once.
pub const LARGE_MESSAGE_BUDGET: usize = 64 * 1024 * 1024;

/// What is counted besides a message's own bytes: frame headers, the start of the next message
/// read with the end of one, control frames. A message is refused past its cap plus this.
const SLACK_BYTES: usize = 64 * 1024;

/// The WebSocket link over an upgraded connection, counted.
pub type LinkSocket = WebSocketStream<CountedIo<TokioIo<Upgraded>>>;

/// A request to upgrade to an executor link: the WebSocket handshake's headers, checked, and
/// the connection to take over.
pub struct LinkUpgrade {
    key: HeaderValue,
    on_upgrade: OnUpgrade,
}

/// Why a request is no WebSocket upgrade.
#[derive(Debug)]
pub struct NotAnUpgrade(&'static str);

impl std::fmt::Display for NotAnUpgrade {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl IntoResponse for NotAnUpgrade {
    fn into_response(self) -> Response {
        (StatusCode::BAD_REQUEST, self.0).into_response()
    }
}

fn header_has(parts: &Parts, name: header::HeaderName, token: &str) -> bool {
    parts
        .headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|v| v.trim().eq_ignore_ascii_case(token))
}

impl<S: Send + Sync> FromRequestParts<S> for LinkUpgrade {
    type Rejection = NotAnUpgrade;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<LinkUpgrade, NotAnUpgrade> {
        if parts.method != Method::GET {
            return Err(NotAnUpgrade("the upgrade must be a GET"));
        }
        if !header_has(parts, header::CONNECTION, "upgrade") || !header_has(parts, header::UPGRADE, "websocket") {
            return Err(NotAnUpgrade("Connection: upgrade and Upgrade: websocket are required"));
        }
        if parts
            .headers
            .get(header::SEC_WEBSOCKET_VERSION)
            .map(HeaderValue::as_bytes)
            != Some(b"13")
        {
            return Err(NotAnUpgrade("Sec-WebSocket-Version must be 13"));
        }
        let key = parts
            .headers
            .get(header::SEC_WEBSOCKET_KEY)
            .cloned()
            .ok_or(NotAnUpgrade("Sec-WebSocket-Key is missing"))?;
        let on_upgrade = parts
            .extensions
            .remove::<OnUpgrade>()
            .ok_or(NotAnUpgrade("this connection cannot be upgraded"))?;
        Ok(LinkUpgrade { key, on_upgrade })
    }
}

impl LinkUpgrade {
    /// Answers the upgrade (101) and hands the connection, once taken over, to `serve`.
    pub fn on_upgrade<F, Fut>(self, serve: F) -> Response
    where
        F: FnOnce(Upgraded) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let on_upgrade = self.on_upgrade;
        tokio::spawn(async move {
            match on_upgrade.await {
                Ok(upgraded) => serve(upgraded).await,
                Err(e) => tracing::debug!(error = %e, "a link upgrade did not complete"),
            }
        });
        let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(self.key.as_bytes());
        Response::builder()
            .status(StatusCode::SWITCHING_PROTOCOLS)
            .header(header::CONNECTION, "upgrade")
            .header(header::UPGRADE, "websocket")
            .header(header::SEC_WEBSOCKET_ACCEPT, accept)
            .body(Body::empty())
            .expect("a 101 response builds")
    }
}

/// The WebSocket over `upgraded`, its reads counted by `inbound`; messages up to
/// [`MAX_FRAME_BYTES`] reach the WebSocket layer, which the counting bounds further.
pub async fn socket(upgraded: Upgraded, inbound: Arc<Inbound>, buffer_bytes: usize) -> LinkSocket {
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_FRAME_BYTES))
        .max_frame_size(Some(MAX_FRAME_BYTES))
        .read_buffer_size(buffer_bytes)
        .write_buffer_size(buffer_bytes);
    WebSocketStream::from_raw_socket(
        CountedIo {
            inner: TokioIo::new(upgraded),
            inbound,
        },
        Role::Server,
        Some(config),
    )
    .await
}

/// What one link has sent of the message being read, and its share of the budget.
pub struct Inbound {
    /// All links' bytes beyond [`FREE_BYTES`]: the budget's use, shown as a metric.
    budget: Gauge,
    link: Arc<Link>,
    /// Bytes read since the last whole message.
    partial: AtomicUsize,
    /// This link's share of `budget`.
    charged: AtomicUsize,
    refusal: Mutex<Option<String>>,
    /// Set with `refusal`: from then on what the link sends is read and dropped, so the close
    /// frame that says why reaches the executor (closing a socket with unread bytes would reset
    /// it, and the executor would lose the frame); the WebSocket layer sees nothing more.
    draining: AtomicBool,
    refused: Notify,
}

impl Inbound {
    /// Counting for `link`, against `budget` (the gauge all links share).
    pub fn new(budget: Gauge, link: Arc<Link>) -> Inbound {
        Inbound {
            budget,
            link,
            partial: AtomicUsize::new(0),
            charged: AtomicUsize::new(0),
            refusal: Mutex::new(None),
            draining: AtomicBool::new(false),
            refused: Notify::new(),
        }
    }

    /// Resolves once the link is refused further reading ([`Inbound::refusal`] says why).
    pub async fn refused(&self) {
        self.refused.notified().await;
    }

    /// Why the link was refused further reading, if it was.
    pub fn refusal(&self) -> Option<String> {
        self.refusal.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// A whole message was read: what it held is the WebSocket layer's no more.
    pub fn message_taken(&self) {
        self.partial.store(0, Ordering::Relaxed);
        self.release();
    }

    /// A control frame (ping, pong) with `payload` bytes was read: only its own bytes leave the
    /// count, as a message may be unfinished around it.
    pub fn control_taken(&self, payload: usize) {
        let frame = payload + 6;
        let _ = self
            .partial
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |p| Some(p.saturating_sub(frame)));
    }

    fn release(&self) {
        let charged = self.charged.swap(0, Ordering::Relaxed);
        if charged > 0 {
            self.budget.dec_by(i64::try_from(charged).unwrap_or(i64::MAX));
        }
    }

    /// `n` more bytes were read; `Err` (and the link refused) if they take its message over its
    /// cap or the budget.
    fn received(&self, n: usize) -> Result<(), String> {
        let partial = self.partial.fetch_add(n, Ordering::Relaxed) + n;
        let (cap, what) = if self.link.awaits_log() {
            (MAX_FRAME_BYTES, "while it owes an answer to /log")
        } else {
            (MAX_MESSAGE_BYTES, "(only an answer to /log may be larger)")
        };
        if partial > cap + SLACK_BYTES {
            return self.refuse(format!("a message over {cap} bytes {what}"));
        }
        let want = partial.saturating_sub(FREE_BYTES);
        let charged = self.charged.load(Ordering::Relaxed);
        if want > charged {
            let more = i64::try_from(want - charged).unwrap_or(i64::MAX);
            let before = self.budget.inc_by(more);
            if usize::try_from(before.saturating_add(more)).unwrap_or(usize::MAX) > LARGE_MESSAGE_BUDGET {
                self.budget.dec_by(more);
                return self.refuse(format!(
                    "the admin holds {LARGE_MESSAGE_BUDGET} bytes of unfinished large link messages already"
                ));
            }
            self.charged.store(want, Ordering::Relaxed);
        }
        Ok(())
    }

    fn refuse(&self, reason: String) -> Result<(), String> {
        *self.refusal.lock().unwrap_or_else(|p| p.into_inner()) = Some(reason.clone());
        self.draining.store(true, Ordering::Release);
        self.release();
        self.refused.notify_one();
        Err(reason)
    }
}

impl Drop for Inbound {
    fn drop(&mut self) {
        self.release();
    }
}

/// A link's connection, its reads counted by its [`Inbound`].
pub struct CountedIo<T> {
    inner: T,
    inbound: Arc<Inbound>,
}

/// Reads a refused link drains at most per poll before it yields.
const DRAIN_READS_PER_POLL: usize = 16;

impl<T: AsyncRead + Unpin> CountedIo<T> {
    /// Reads and drops what the peer sends; `Ready` only at its end of stream (or an error).
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut scratch = [0u8; 8192];
        for _ in 0..DRAIN_READS_PER_POLL {
            let mut buf = ReadBuf::new(&mut scratch);
            ready!(Pin::new(&mut self.inner).poll_read(cx, &mut buf))?;
            if buf.filled().is_empty() {
                return Poll::Ready(Ok(()));
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for CountedIo<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if self.inbound.draining.load(Ordering::Acquire) {
            return self.poll_drain(cx);
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut self.inner).poll_read(cx, buf))?;
        let n = buf.filled().len() - before;
        if n > 0 && self.inbound.received(n).is_err() {
            // Not handed on: the WebSocket layer keeps no more of this link's message.
            buf.set_filled(before);
            return self.poll_drain(cx);
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for CountedIo<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inbound(budget: &Gauge) -> Inbound {
        let (tx, _rx) = tokio::sync::mpsc::channel(1);
        Inbound::new(budget.clone(), Arc::new(Link::new("app".into(), "id".into(), tx)))
    }

    #[test]
    fn a_message_over_its_cap_is_refused_and_taken_messages_free_the_budget() {
        let budget = Gauge::default();
        let one = inbound(&budget);
        one.received(FREE_BYTES).unwrap();
        assert_eq!(budget.get(), 0, "an ordinary message costs nothing");
        one.received(1000).unwrap();
        assert_eq!(budget.get(), 1000);
        one.control_taken(4);
        one.message_taken();
        assert_eq!(budget.get(), 0);
        let err = one.received(MAX_MESSAGE_BYTES + SLACK_BYTES + 1).unwrap_err();
        assert!(err.contains("only an answer to /log"), "{err}");
        assert_eq!(one.refusal(), Some(err));
        drop(one);
        assert_eq!(budget.get(), 0, "a closed link gives its share back");
    }

    #[test]
    fn links_together_stay_within_the_budget() {
        let budget = Gauge::default();
        let per_link = MAX_MESSAGE_BYTES;
        let links: Vec<Inbound> = (0..LARGE_MESSAGE_BUDGET / (per_link - FREE_BYTES) + 1)
            .map(|_| inbound(&budget))
            .collect();
        let refused = links.iter().filter(|l| l.received(per_link).is_err()).count();
        assert_eq!(refused, 1, "the link that no longer fits is refused");
        assert!(usize::try_from(budget.get()).unwrap() <= LARGE_MESSAGE_BUDGET);
        assert!(links
            .iter()
            .any(|l| l.refusal().is_some_and(|r| r.contains("unfinished large"))));
        drop(links);
        assert_eq!(budget.get(), 0);
    }
}
