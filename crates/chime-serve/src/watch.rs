//! What one connection is waiting for, as its socket, its requests' bodies and its responses
//! see it, and when that wait must end ([`Watch::deadline`]).
//!
//! Each wait is the moment it began, or none: the head of a request (from the connection's
//! start, or from the first byte of the next request on a kept-alive connection), the next
//! request (kept alive, nothing in flight), a request body that has nothing to give, a write the
//! client does not take. The connection's task sleeps until the earliest limit and checks again;
//! a wait that begins wakes it ([`Watch::changed`]), since it may end sooner than the one it was
//! sleeping for.

use crate::Limits;
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{Notify, OwnedSemaphorePermit};
use tokio::time::Instant;

/// The waits of one connection. Times are milliseconds since `epoch`, plus one; 0 is "not
/// waiting".
pub(crate) struct Watch {
    epoch: Instant,
    /// For a request's head.
    head: AtomicU64,
    /// For the next request of a kept-alive connection.
    idle: AtomicU64,
    /// For a request body's next bytes.
    body: AtomicU64,
    /// For the client to take what the server writes.
    write: AtomicU64,
    /// Requests whose response is not yet sent whole.
    in_flight: AtomicUsize,
    changed: Notify,
}

impl Watch {
    /// A new connection: waiting for its first request's head from now.
    pub(crate) fn new() -> Watch {
        Watch {
            epoch: Instant::now(),
            head: AtomicU64::new(1),
            idle: AtomicU64::new(0),
            body: AtomicU64::new(0),
            write: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            changed: Notify::new(),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis())
            .unwrap_or(u64::MAX - 1)
            .saturating_add(1)
    }

    /// Starts the wait in `slot` unless one is running; wakes the connection's task if it
    /// started.
    fn begin(&self, slot: &AtomicU64) {
        if slot
            .compare_exchange(0, self.now(), Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            self.changed.notify_one();
        }
    }

    fn end(slot: &AtomicU64) {
        slot.store(0, Ordering::Release);
    }

    /// When the earliest running wait is over its limit, if any wait runs.
    pub(crate) fn deadline(&self, limits: &Limits) -> Option<Instant> {
        [
            (&self.head, limits.header_timeout),
            (&self.idle, limits.idle_timeout),
            (&self.body, limits.idle_timeout),
            (&self.write, limits.idle_timeout),
        ]
        .into_iter()
        .filter_map(|(slot, limit)| {
            let since = slot.load(Ordering::Acquire);
            (since != 0).then(|| self.epoch + std::time::Duration::from_millis(since - 1) + limit)
        })
        .min()
    }

    /// Resolves when a wait began since the last call.
    pub(crate) async fn changed(&self) {
        self.changed.notified().await;
    }

    /// Bytes came in. With no request in flight they are the start of the next one: a kept-alive
    /// connection now waits for that request's head, on the shorter limit.
    fn read_some(&self) {
        if self.in_flight.load(Ordering::Acquire) == 0 && self.idle.swap(0, Ordering::AcqRel) != 0 {
            self.begin(&self.head);
        }
    }
}

/// One request from its head until its response is sent whole or dropped.
pub(crate) struct InFlight(Arc<Watch>);

impl InFlight {
    /// A request's head was read: no wait for a head or for a request runs any more.
    pub(crate) fn start(watch: Arc<Watch>) -> InFlight {
        watch.in_flight.fetch_add(1, Ordering::AcqRel);
        Watch::end(&watch.head);
        Watch::end(&watch.idle);
        InFlight(watch)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.begin(&self.0.idle);
        }
    }
}

/// A request body (timing the waits for its bytes) or a response body (holding its request in
/// flight until it is sent whole).
pub(crate) struct WatchedBody<B> {
    inner: B,
    /// A request body's connection.
    watch: Option<Arc<Watch>>,
    /// A response's request.
    in_flight: Option<InFlight>,
}

impl<B> WatchedBody<B> {
    pub(crate) fn request(inner: B, watch: Arc<Watch>) -> WatchedBody<B> {
        WatchedBody {
            inner,
            watch: Some(watch),
            in_flight: None,
        }
    }

    pub(crate) fn response(inner: B, in_flight: InFlight) -> WatchedBody<B> {
        WatchedBody {
            inner,
            watch: None,
            in_flight: Some(in_flight),
        }
    }
}

impl<B> Drop for WatchedBody<B> {
    fn drop(&mut self) {
        if let Some(watch) = &self.watch {
            Watch::end(&watch.body);
        }
    }
}

impl<B> Body for WatchedBody<B>
where
    B: Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Some(watch) = &self.watch {
            match polled {
                Poll::Pending => watch.begin(&watch.body),
                Poll::Ready(_) => Watch::end(&watch.body),
            }
        }
        if matches!(polled, Poll::Ready(None)) {
            self.in_flight = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A connection's socket: tells its [`Watch`] what moves, and holds the connection's place
/// under the cap for as long as the socket lives (after an upgrade too).
pub(crate) struct WatchedIo {
    stream: TcpStream,
    watch: Arc<Watch>,
    _permit: OwnedSemaphorePermit,
}

impl WatchedIo {
    pub(crate) fn new(stream: TcpStream, watch: Arc<Watch>, permit: OwnedSemaphorePermit) -> WatchedIo {
        WatchedIo {
            stream,
            watch,
            _permit: permit,
        }
    }

    fn wrote<T>(&self, polled: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        match polled {
            Poll::Pending => self.watch.begin(&self.watch.write),
            Poll::Ready(_) => Watch::end(&self.watch.write),
        }
        polled
    }
}

impl AsyncRead for WatchedIo {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.watch.read_some();
        }
        polled
    }
}

impl AsyncWrite for WatchedIo {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.wrote(polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.wrote(polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn limits() -> Limits {
        Limits {
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_connections: 1,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn each_wait_has_its_limit_and_the_server_own_time_none() {
        let watch = Arc::new(Watch::new());
        let start = watch.epoch;
        assert_eq!(
            watch.deadline(&limits()),
            Some(start + Duration::from_secs(10)),
            "a new connection waits for a head"
        );
        let request = InFlight::start(watch.clone());
        assert_eq!(watch.deadline(&limits()), None, "a handler's own time is not limited");
        tokio::time::advance(Duration::from_secs(100)).await;
        drop(request);
        let idle_from = Instant::now();
        assert_eq!(
            watch.deadline(&limits()),
            Some(idle_from + Duration::from_secs(60)),
            "kept alive"
        );
        tokio::time::advance(Duration::from_secs(5)).await;
        watch.read_some();
        assert_eq!(
            watch.deadline(&limits()),
            Some(Instant::now() + Duration::from_secs(10)),
            "the next request's first byte starts the head's limit"
        );
        let _request = InFlight::start(watch.clone());
        watch.begin(&watch.body);
        assert_eq!(
            watch.deadline(&limits()),
            Some(Instant::now() + Duration::from_secs(60)),
            "a stalled body"
        );
        Watch::end(&watch.body);
        assert_eq!(watch.deadline(&limits()), None);
    }
}
