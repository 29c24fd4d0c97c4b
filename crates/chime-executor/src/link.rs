//! Link mode: the executor dials each admin and keeps one WebSocket to it
//! ([`chime_protocol::link`]), on the admin's own HTTP port and context path, and opens no port
//! itself. Everything the admin does to the executor (`/run`, `/kill`, `/log`, `/beat`,
//! `/idleBeat`) comes down that socket as a call; everything the executor tells the admin
//! (registration, results, run logs) goes up it as a call. So an executor in a container or
//! behind NAT, which no admin can reach, still runs jobs.
//!
//! Both directions reuse what HTTP mode does, on purpose:
//! - a call from the admin is turned into the very HTTP request it stands for and served by the
//!   executor's own router ([`crate::server::router`]), so `/run` and the others answer exactly
//!   as over HTTP — checks, messages and all. The request carries the token the call presents
//!   ([`LinkFrame::token`]), never this executor's own: the link proves which admin the
//!   executor dialed, not who asked that admin to make the call;
//! - a call to the admin is made by [`crate::admin::AdminClient`], which hands it to
//!   [`LinkSet::call`] when the link to that admin is up and parses the answer like an HTTP
//!   reply. Results stay in the callback spool until an admin acknowledges them, whichever way
//!   they went.
//!
//! Each admin has one task ([`maintain`]) that dials, serves the link until it ends, and dials
//! again after an exponential backoff with full jitter (0.5 s doubling up to 30 s; a link that
//! stayed up 30 s starts the backoff over), so a restarted admin is not met by every executor
//! at the same instant. A link that died without a word — the admin silent, a ping unanswered
//! for [`PROBE_WAIT`] — is dialed again at once instead, and while the admin cannot be reached
//! at all the dial is tried every [`UNREACHABLE_RETRY`]: the network, not the admin, is down,
//! and the link is back about a second after the network. Anything malformed from the network — a message that is not a
//! [`LinkFrame`], a binary message, one larger than [`MAX_FRAME_BYTES`] — closes the link with
//! the reason logged, and the executor dials again: a confused peer gets a fresh start, never a
//! panic.

use crate::admin::AdminClient;
use axum::body::Body;
use bytes::Bytes;
use chime_protocol::link::{self, LinkFrame, MAX_FRAME_BYTES, MAX_MESSAGE_BYTES, PING_INTERVAL_SECS};
use chime_protocol::messages::{ACCESS_TOKEN_HEADER, APPNAME_HEADER};
use chime_protocol::{paths, ReturnT};
use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot, Notify, OwnedSemaphorePermit, Semaphore};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue, StatusCode};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// The endpoints an admin may call down a link: the executor's own HTTP endpoints. Anything
/// else is answered with a failure (the executor's admin-side endpoints, say, make no sense
/// coming from the admin).
const SERVED_PATHS: [&str; 6] = [
    paths::RUN,
    paths::TRIGGER,
    paths::KILL,
    paths::LOG,
    paths::BEAT,
    paths::IDLE_BEAT,
];

/// Calls from one admin served at once. Beyond that the link is not read until one finishes:
/// the admin's own outbox fills and it stops sending (backpressure), instead of the executor
/// queueing without bound.
const CALLS_IN_FLIGHT: usize = 64;

/// Frames waiting for the socket's writer (answers and calls of this executor).
const OUTBOX_FRAMES: usize = 256;

/// First ceiling of the reconnect backoff; it doubles per failed attempt up to [`BACKOFF_MAX`].
const BACKOFF_MIN: Duration = Duration::from_millis(500);

/// Longest wait between two dials; also the wait after an admin that has no link endpoint or
/// refuses this executor (a setup error that a retry every half second would not fix).
const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// A link that stayed up this long resets the backoff: the next drop is a new incident.
const STABLE_AFTER: Duration = Duration::from_secs(30);

/// How long the executor waits for any message after it pinged the admin (a call of its own
/// went unanswered, or it sent its idle ping). A live admin answers a ping at once; a link cut
/// without a word (a NAT box or firewall that drops packets) is dropped after this and dialed
/// again, instead of being kept until the idle timeout while TCP retransmits into the void. The
/// admin does the same on its side with the same wait.
const PROBE_WAIT: Duration = Duration::from_secs(5);

/// How long the admin may be silent before the executor pings it ([`PROBE_WAIT`] then applies).
/// The admin pings every [`PING_INTERVAL_SECS`], so on an idle link this adds one ping and its
/// answer per interval; in exchange a line cut without a word is noticed within this plus
/// [`PROBE_WAIT`], and the link is dialed again while the line is still down, ready the moment
/// it returns, instead of after the next TCP retransmission happens to reach the admin.
const SILENCE_BEFORE_PROBE: Duration = Duration::from_secs(PING_INTERVAL_SECS / 2);

/// How long one attempt to open the TCP connection to the admin may take. Short on purpose:
/// while the network drops packets every attempt times out, and the next one starts at once,
/// so the link is back within about a second of the network; the kernel sends a second SYN
/// 1 s into an attempt, so an attempt still survives one lost SYN. The WebSocket upgrade that
/// follows has the longer `LinkOptions::connect_timeout`.
const TCP_CONNECT_WAIT: Duration = Duration::from_secs(2);

/// Least time between two dials that failed because the admin could not be reached at all (no
/// route, no answer): the network, not the admin, is the trouble, so the executor keeps trying
/// at this pace instead of backing off — that loads no admin — and links again about a second
/// after the network returns.
const UNREACHABLE_RETRY: Duration = Duration::from_secs(1);

/// Least time between two warnings about the same admin that cannot be linked: the dialer
/// retries for as long as it takes, and a warning per try would bury every other line.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// Room kept in a frame for the envelope around an answer's body (`{"id":…,"body":…}`).
const FRAME_ENVELOPE_BYTES: usize = 64;

/// Longest piece of a path from the network quoted back in a failure.
const MAX_QUOTED_PATH: usize = 100;

/// Longest close reason the WebSocket protocol allows (a control frame carries at most 125
/// bytes, two of them the code).
const MAX_CLOSE_REASON: usize = 123;

/// What the admin knows this executor by while its link is up, and says in its registrations.
pub(crate) type Registration = Arc<dyn Fn() -> String + Send + Sync>;

type Socket = WebSocketStream<MaybeTlsStream<tokio::net::TcpStream>>;

/// The links of one executor, one slot per admin, shared by the tasks that keep them and by
/// [`AdminClient`], which sends the executor's calls through them. Cheap to clone.
#[derive(Clone)]
pub(crate) struct LinkSet {
    slots: Arc<[Slot]>,
    /// How long a call waits for room in the outbox and for its answer, together.
    timeout: Duration,
}

/// One admin's link, when it is up.
struct Slot {
    base: String,
    current: Mutex<Option<Arc<Connection>>>,
}

/// Why a call did not get an answer over a link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LinkCallError {
    /// Nothing was sent: the link is down. HTTP may still work for the calls that are allowed
    /// to take it.
    Down,
    /// Nothing was sent, for the reason given (the call does not fit in a frame, say).
    NotSent(String),
    /// The call may have reached the admin but no answer came back.
    NoAnswer(String),
}

/// The admin's base address as a key: a trailing `/` does not make another admin.
fn key(base: &str) -> &str {
    base.trim().trim_end_matches('/')
}

impl LinkSet {
    /// A set of (not yet connected) links to `bases`, each admin once.
    pub(crate) fn new(bases: &[String], timeout: Duration) -> LinkSet {
        let mut slots: Vec<Slot> = Vec::new();
        for base in bases {
            // Two links of one executor to one admin would replace each other there forever.
            if !slots.iter().any(|s| key(&s.base) == key(base)) {
                slots.push(Slot {
                    base: base.clone(),
                    current: Mutex::new(None),
                });
            }
        }
        LinkSet {
            slots: slots.into(),
            timeout,
        }
    }

    fn slot(&self, base: &str) -> Option<&Slot> {
        self.slots.iter().find(|s| key(&s.base) == key(base))
    }

    /// Calls `path` on the admin at `base` over its link with the JSON text `body`, and returns
    /// the answer's body (the JSON the HTTP endpoint would have answered).
    pub(crate) async fn call(&self, base: &str, path: &str, body: &str) -> Result<String, LinkCallError> {
        let connection = self
            .slot(base)
            .and_then(|s| s.current.lock().ok()?.clone())
            .ok_or(LinkCallError::Down)?;
        let id = connection.next_id.fetch_add(1, Ordering::Relaxed);
        let frame = LinkFrame::call(id, path, body)
            .map_err(|e| LinkCallError::NotSent(format!("the call's body is not JSON: {e}")))?;
        let text = serde_json::to_string(&frame).expect("a link frame serializes");
        if text.len() > MAX_MESSAGE_BYTES {
            // The admin would close the link; results and run logs take HTTP instead.
            return Err(LinkCallError::NotSent(format!(
                "a call of {} bytes is larger than a link carries ({MAX_MESSAGE_BYTES})",
                text.len()
            )));
        }
        let answer = connection.expect_answer(id).ok_or(LinkCallError::Down)?;
        let deadline = tokio::time::Instant::now() + self.timeout;
        match tokio::time::timeout_at(deadline, connection.outbox.send(Message::text(text))).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => {
                connection.forget(id);
                return Err(LinkCallError::Down);
            }
            Err(_) => {
                connection.forget(id);
                return Err(LinkCallError::NotSent(format!(
                    "the link's outbox stayed full for {:?}",
                    self.timeout
                )));
            }
        }
        match tokio::time::timeout_at(deadline, answer).await {
            Ok(Ok(body)) => Ok(body),
            Ok(Err(_)) => Err(LinkCallError::NoAnswer("link closed before the answer".to_owned())),
            Err(_) => {
                connection.forget(id);
                // The admin may be gone without a word: find out now (see `PROBE_WAIT`).
                connection.unanswered.notify_one();
                Err(LinkCallError::NoAnswer(format!("no answer within {:?}", self.timeout)))
            }
        }
    }
}

/// One live WebSocket: where frames go out, and the executor's calls waiting for an answer.
struct Connection {
    outbox: mpsc::Sender<Message>,
    calls: Mutex<Calls>,
    next_id: AtomicU64,
    /// Told when a call of the executor went unanswered: the reader pings the admin and drops
    /// the link unless something comes back within [`PROBE_WAIT`].
    unanswered: Notify,
    /// Told when the writer sent its idle ping: the reader expects something back within
    /// [`PROBE_WAIT`].
    pinged: Notify,
}

#[derive(Default)]
struct Calls {
    /// Set when the link ended: no call may wait on it any more.
    closed: bool,
    waiting: HashMap<u64, oneshot::Sender<String>>,
}

impl Connection {
    fn new(outbox: mpsc::Sender<Message>) -> Connection {
        Connection {
            outbox,
            calls: Mutex::new(Calls::default()),
            next_id: AtomicU64::new(1),
            unanswered: Notify::new(),
            pinged: Notify::new(),
        }
    }

    /// Where the answer to call `id` will arrive; `None` if the link already ended.
    fn expect_answer(&self, id: u64) -> Option<oneshot::Receiver<String>> {
        let mut calls = self.calls.lock().ok()?;
        if calls.closed {
            return None;
        }
        let (tx, rx) = oneshot::channel();
        calls.waiting.insert(id, tx);
        Some(rx)
    }

    fn forget(&self, id: u64) {
        if let Ok(mut calls) = self.calls.lock() {
            calls.waiting.remove(&id);
        }
    }

    /// Hands an answer to its call; `false` if no call waits for it (it timed out).
    fn answer(&self, id: u64, body: String) -> bool {
        let waiting = self.calls.lock().ok().and_then(|mut c| c.waiting.remove(&id));
        waiting.is_some_and(|tx| tx.send(body).is_ok())
    }

    /// Ends every wait: dropping the senders tells each waiting call the link closed.
    fn close(&self) {
        if let Ok(mut calls) = self.calls.lock() {
            calls.closed = true;
            calls.waiting.clear();
        }
    }
}

/// What every link of the executor needs.
pub(crate) struct LinkOptions {
    /// The app name, sent as [`APPNAME_HEADER`].
    pub(crate) app_name: String,
    /// This executor's id ([`link::validate_executor_id`]), sent as [`link::EXECUTOR_ID_HEADER`].
    pub(crate) executor_id: String,
    /// The access token, sent to the admin when dialing. Calls coming down the link are checked
    /// against it by the router, with the token each call presents.
    pub(crate) token: Option<String>,
    /// How long dialing and the upgrade may take.
    pub(crate) connect_timeout: Duration,
    /// What a `wss://` admin is verified against.
    pub(crate) tls: Arc<rustls::ClientConfig>,
}

struct Context {
    set: LinkSet,
    admin: AdminClient,
    router: axum::Router,
    options: LinkOptions,
    registration: Registration,
    stop: CancellationToken,
}

/// The running link tasks, one per admin.
pub(crate) struct Links {
    stop: CancellationToken,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Links {
    /// Closes every link (with a close frame) and waits for the tasks.
    pub(crate) async fn stop(self) {
        self.stop.cancel();
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

/// Starts one task per admin of `set`: dial, register, serve, dial again.
pub(crate) fn start(
    set: LinkSet,
    admin: AdminClient,
    router: axum::Router,
    options: LinkOptions,
    registration: Registration,
) -> Links {
    let stop = CancellationToken::new();
    let context = Arc::new(Context {
        set: set.clone(),
        admin,
        router,
        options,
        registration,
        stop: stop.clone(),
    });
    let tasks = (0..set.slots.len())
        .map(|index| tokio::spawn(maintain(context.clone(), index)))
        .collect();
    Links { stop, tasks }
}

/// `<base>/api/link` as a WebSocket URL: `http` becomes `ws`, `https` becomes `wss`.
pub(crate) fn link_url(base: &str) -> Option<String> {
    let url = paths::join(base, paths::API_LINK);
    if let Some(rest) = url.strip_prefix("http://") {
        Some(format!("ws://{rest}"))
    } else {
        url.strip_prefix("https://").map(|rest| format!("wss://{rest}"))
    }
}

/// How long to wait before dial number `attempt` (0 first): anything up to the ceiling, which
/// doubles per attempt from [`BACKOFF_MIN`] to [`BACKOFF_MAX`] ("full jitter": executors that
/// lost the same admin at the same moment spread out instead of dialing in waves).
fn backoff(attempt: u32, random: u64) -> Duration {
    let ceiling = BACKOFF_MIN.saturating_mul(1u32 << attempt.min(16)).min(BACKOFF_MAX);
    let millis = u64::try_from(ceiling.as_millis()).unwrap_or(u64::MAX).max(1);
    Duration::from_millis(random % (millis + 1))
}

/// The wait after an admin refused the link or has none: between half and all of
/// [`BACKOFF_MAX`], jittered too.
fn refused_backoff(random: u64) -> Duration {
    let half = BACKOFF_MAX / 2;
    half + Duration::from_millis(random % (u64::try_from(half.as_millis()).unwrap_or(1) + 1))
}

fn random() -> u64 {
    // Jitter only: a failing generator costs the spread, not the link.
    getrandom::u64().unwrap_or_else(|_| u64::from(std::process::id()))
}

/// Why a dial did not produce a link.
enum DialError {
    /// The admin answered and will answer the same until its setup changes (no link endpoint,
    /// this executor refused): wait the longest backoff.
    Refused(String),
    /// The admin answered badly or not at all at its port (connection refused, an upgrade
    /// that failed or took too long, a TLS error): usually passes; backed off with jitter, so an
    /// admin coming back is not met by every executor at once.
    Failed(String),
    /// The admin could not be reached (no route, no answer to the connection): the network is
    /// down, not the admin; tried again every [`UNREACHABLE_RETRY`].
    Unreachable(String),
}

/// Keeps the link to admin number `index` of the set up until the executor stops.
async fn maintain(context: Arc<Context>, index: usize) {
    let slot = &context.set.slots[index];
    let shown = crate::admin::without_credentials(&slot.base);
    // Dialed without any user name or password written into the address: tungstenite does not
    // send them, and its errors quote the address, which would put them in the log.
    let Some(url) = link_url(&shown) else {
        tracing::error!(admin = %shown, "the admin address is neither http:// nor https://; no link");
        return;
    };
    let mut attempt: u32 = 0;
    let mut last_warning: Option<Instant> = None;
    let mut failures: u64 = 0;
    loop {
        if context.stop.is_cancelled() {
            return;
        }
        let dial_started = Instant::now();
        let dialed = tokio::select! {
            dialed = dial(&context, &url) => dialed,
            _ = context.stop.cancelled() => return,
        };
        let delay = match dialed {
            Ok(socket) => {
                tracing::info!(
                    admin = %shown,
                    executor_id = %context.options.executor_id,
                    failed_dials_before = failures,
                    "linked to the admin"
                );
                last_warning = None;
                failures = 0;
                let since = Instant::now();
                let ending = serve(&context, slot, socket).await;
                if context.stop.is_cancelled() {
                    tracing::info!(admin = %shown, "link closed: the executor is stopping");
                    return;
                }
                tracing::warn!(admin = %shown, reason = %ending.reason, "link closed; dialing again");
                if since.elapsed() >= STABLE_AFTER {
                    attempt = 0;
                }
                if ending.silent {
                    Duration::ZERO
                } else {
                    let delay = backoff(attempt, random());
                    attempt = attempt.saturating_add(1);
                    delay
                }
            }
            Err(err) => {
                failures += 1;
                let (delay, reason) = match err {
                    DialError::Refused(reason) => (refused_backoff(random()), reason),
                    DialError::Unreachable(reason) => {
                        (UNREACHABLE_RETRY.saturating_sub(dial_started.elapsed()), reason)
                    }
                    DialError::Failed(reason) => {
                        let delay = backoff(attempt, random());
                        attempt = attempt.saturating_add(1);
                        (delay, reason)
                    }
                };
                if last_warning.is_none_or(|at| at.elapsed() >= WARN_EVERY) {
                    last_warning = Some(Instant::now());
                    tracing::warn!(admin = %shown, failed_dials = failures, "cannot link to the admin: {reason}");
                } else {
                    tracing::debug!(admin = %shown, "cannot link to the admin: {reason}");
                }
                delay
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = context.stop.cancelled() => return,
        }
    }
}

/// Opens the WebSocket to `url` with the executor's three headers.
async fn dial(context: &Context, url: &str) -> Result<Socket, DialError> {
    let options = &context.options;
    let mut request = url
        .into_client_request()
        .map_err(|e| DialError::Refused(format!("the link address is not usable: {e}")))?;
    let headers = request.headers_mut();
    let mut put = |name: &str, value: &str, what: &str| -> Result<(), DialError> {
        let name = HeaderName::from_bytes(name.as_bytes()).expect("header names are valid");
        let value = HeaderValue::from_str(value)
            .map_err(|_| DialError::Refused(format!("the {what} cannot be sent as an HTTP header")))?;
        headers.insert(name, value);
        Ok(())
    };
    if let Some(token) = &options.token {
        put(ACCESS_TOKEN_HEADER, token, "access token")?;
    }
    put(APPNAME_HEADER, &options.app_name, "app name")?;
    put(link::EXECUTOR_ID_HEADER, &options.executor_id, "executor id")?;
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_FRAME_BYTES))
        .max_frame_size(Some(MAX_FRAME_BYTES));
    let stream = connect_tcp(request.uri(), options.connect_timeout).await?;
    // No Nagle: calls and answers are small and each is waited for.
    let _ = stream.set_nodelay(true);
    let connector = tokio_tungstenite::Connector::Rustls(options.tls.clone());
    let connect = tokio_tungstenite::client_async_tls_with_config(request, stream, Some(config), Some(connector));
    match tokio::time::timeout(options.connect_timeout, connect).await {
        Err(_) => Err(DialError::Failed(format!(
            "no WebSocket upgrade within {:?}",
            options.connect_timeout
        ))),
        Ok(Ok((socket, _))) => Ok(socket),
        Ok(Err(tungstenite::Error::Http(response))) => Err(match response.status() {
            StatusCode::NOT_FOUND => DialError::Refused(
                "HTTP 404: this admin has no executor link (an XXL-JOB admin?): run this executor in HTTP mode"
                    .to_owned(),
            ),
            status @ (StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) => DialError::Refused(format!(
                "HTTP {status}: the admin refused this executor's link; check the access token and the app name{}",
                quoted_reply(response.body().as_deref())
            )),
            // Headers the admin cannot take (an app name too long for it, say): as lasting.
            status @ StatusCode::BAD_REQUEST => DialError::Refused(format!(
                "HTTP {status}: the admin refused this executor's link{}",
                quoted_reply(response.body().as_deref())
            )),
            status => DialError::Failed(format!("HTTP {status}{}", quoted_reply(response.body().as_deref()))),
        }),
        Ok(Err(err)) => Err(DialError::Failed(err.to_string())),
    }
}

/// Opens the TCP connection to the admin of `uri`: the name resolved within `resolve_timeout`,
/// then each of its addresses tried for [`TCP_CONNECT_WAIT`]. A timeout or a missing route is
/// [`DialError::Unreachable`], a refusal [`DialError::Failed`].
async fn connect_tcp(
    uri: &tokio_tungstenite::tungstenite::http::Uri,
    resolve_timeout: Duration,
) -> Result<tokio::net::TcpStream, DialError> {
    let host = uri.host().unwrap_or_default();
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    let port = uri
        .port_u16()
        .unwrap_or(if uri.scheme_str() == Some("wss") { 443 } else { 80 });
    let addresses = match tokio::time::timeout(resolve_timeout, tokio::net::lookup_host((host, port))).await {
        Ok(Ok(addresses)) => addresses.collect::<Vec<_>>(),
        Ok(Err(err)) => return Err(DialError::Failed(format!("cannot resolve {host}: {err}"))),
        Err(_) => {
            return Err(DialError::Unreachable(format!(
                "{host} not resolved within {resolve_timeout:?}"
            )))
        }
    };
    let mut last = DialError::Failed(format!("{host} resolves to no address"));
    for address in addresses {
        last = match tokio::time::timeout(TCP_CONNECT_WAIT, tokio::net::TcpStream::connect(address)).await {
            Ok(Ok(stream)) => return Ok(stream),
            Err(_) => DialError::Unreachable(format!("no answer from {address} within {TCP_CONNECT_WAIT:?}")),
            Ok(Err(err)) if unreachable(&err) => DialError::Unreachable(format!("{address}: {err}")),
            Ok(Err(err)) => DialError::Failed(format!("{address}: {err}")),
        };
    }
    Err(last)
}

/// Whether a connection failed for want of a network path rather than at the admin's host.
fn unreachable(err: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        err.kind(),
        ErrorKind::TimedOut | ErrorKind::HostUnreachable | ErrorKind::NetworkUnreachable | ErrorKind::NetworkDown
    )
}

/// Longest piece of a refusal's body quoted in a log line.
const MAX_QUOTED_REPLY: usize = 200;

fn quoted_reply(body: Option<&[u8]>) -> String {
    match body {
        Some(bytes) if !bytes.is_empty() => {
            let text = String::from_utf8_lossy(bytes);
            let quoted: String = text.chars().take(MAX_QUOTED_REPLY).collect();
            format!(": {quoted:?}")
        }
        _ => String::new(),
    }
}

/// How a link ended.
struct Ending {
    reason: String,
    /// The close frame to send, if the socket can still take one.
    close: Option<CloseFrame>,
    /// Nothing came back from the admin: the network, not the admin, failed, so the executor
    /// dials again at once (the dial paces itself while the network stays down) instead of
    /// backing off.
    silent: bool,
}

impl Ending {
    /// The link ended without this side having anything to tell the admin.
    fn quiet(reason: impl Into<String>) -> Ending {
        Ending {
            reason: reason.into(),
            close: None,
            silent: false,
        }
    }

    /// This side closes the link, telling the admin why in the close frame.
    fn closing(code: CloseCode, reason: impl Into<String>) -> Ending {
        let reason = reason.into();
        let mut cut = reason.len().min(MAX_CLOSE_REASON);
        while !reason.is_char_boundary(cut) {
            cut -= 1;
        }
        Ending {
            close: Some(CloseFrame {
                code,
                reason: reason[..cut].into(),
            }),
            reason,
            silent: false,
        }
    }
}

/// Serves one connected link until it ends; returns why it ended.
async fn serve(context: &Arc<Context>, slot: &Slot, socket: Socket) -> Ending {
    let (sink, mut stream) = socket.split();
    let (outbox, queued) = mpsc::channel(OUTBOX_FRAMES);
    let connection = Arc::new(Connection::new(outbox.clone()));
    if let Ok(mut current) = slot.current.lock() {
        *current = Some(connection.clone());
    }
    let closing = CancellationToken::new();
    let mut writer = tokio::spawn(write_loop(sink, queued, connection.clone(), closing.clone()));
    // Registered now, not at the next heartbeat: the admin lists the executor (and routes runs
    // to it) within a moment of the link coming up.
    tokio::spawn(register(context.clone(), slot.base.clone()));

    let ending = read_loop(context, &connection, &mut stream, &outbox).await;

    if let Ok(mut current) = slot.current.lock() {
        if current.as_ref().is_some_and(|c| Arc::ptr_eq(c, &connection)) {
            *current = None;
        }
    }
    connection.close();
    if let Some(frame) = ending.close.clone() {
        let _ = outbox.try_send(Message::Close(Some(frame)));
    } else if context.stop.is_cancelled() {
        let _ = outbox.try_send(Message::Close(Some(CloseFrame {
            code: CloseCode::Away,
            reason: "the executor is stopping".into(),
        })));
    }
    closing.cancel();
    // A socket that cannot even take the close frame (a peer gone silent) is simply dropped.
    if tokio::time::timeout(Duration::from_secs(2), &mut writer).await.is_err() {
        writer.abort();
    }
    ending
}

/// Sends one registration over the link that just came up.
async fn register(context: Arc<Context>, base: String) {
    let body = (context.registration)();
    match context.admin.post(&base, paths::API_REGISTRY, body).await {
        Ok(()) => tracing::debug!("registered over the new link"),
        Err(err) => tracing::warn!(error = %err, "registration over the new link failed"),
    }
}

/// Writes queued frames, and a ping whenever nothing was sent for [`PING_INTERVAL_SECS`], until
/// a close frame went out, the socket failed or `closing` is cancelled.
async fn write_loop(
    mut sink: SplitSink<Socket, Message>,
    mut queued: mpsc::Receiver<Message>,
    connection: Arc<Connection>,
    closing: CancellationToken,
) {
    let period = Duration::from_secs(PING_INTERVAL_SECS);
    let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let message = tokio::select! {
            biased;
            message = queued.recv() => match message {
                Some(message) => message,
                None => return,
            },
            _ = closing.cancelled() => return,
            _ = ping.tick() => Message::Ping(Bytes::new()),
        };
        let last = matches!(message, Message::Close(_));
        let is_ping = matches!(message, Message::Ping(_));
        if sink.send(message).await.is_err() || last {
            return;
        }
        if is_ping {
            connection.pinged.notify_one();
        }
        ping.reset();
    }
}

/// Reads the link until it ends: answers go to the calls waiting for them, calls are served
/// (at most [`CALLS_IN_FLIGHT`] at once).
async fn read_loop(
    context: &Arc<Context>,
    connection: &Connection,
    stream: &mut SplitStream<Socket>,
    outbox: &mpsc::Sender<Message>,
) -> Ending {
    let permits = Arc::new(Semaphore::new(CALLS_IN_FLIGHT));
    let mut heard = tokio::time::Instant::now();
    // Set when the admin was pinged to see whether it is still there: the link ends unless
    // something arrives by then.
    let mut probe: Option<tokio::time::Instant> = None;
    loop {
        let deadline = probe.unwrap_or(heard + SILENCE_BEFORE_PROBE);
        let next = tokio::select! {
            _ = context.stop.cancelled() => return Ending::quiet("the executor is stopping"),
            next = tokio::time::timeout_at(deadline, stream.next()) => next,
            _ = connection.unanswered.notified(), if probe.is_none() => {
                probe = Some(start_probe(outbox));
                continue;
            }
            _ = connection.pinged.notified(), if probe.is_none() => {
                probe = Some(tokio::time::Instant::now() + PROBE_WAIT);
                continue;
            }
        };
        let message = match next {
            Err(_) if probe.is_some() => {
                let mut ending = Ending::closing(
                    CloseCode::Away,
                    format!(
                        "nothing came back within {} s of a ping (the line cut, or the admin gone)",
                        PROBE_WAIT.as_secs()
                    ),
                );
                ending.silent = true;
                return ending;
            }
            Err(_) => {
                // The admin, which pings every `PING_INTERVAL_SECS`, has been silent for a while.
                probe = Some(start_probe(outbox));
                continue;
            }
            Ok(None) => return Ending::quiet("the admin closed the connection"),
            Ok(Some(Err(tungstenite::Error::Capacity(err)))) => {
                return Ending::closing(
                    CloseCode::Size,
                    format!("a message larger than a link carries ({MAX_FRAME_BYTES} bytes): {err}"),
                )
            }
            Ok(Some(Err(err))) => return Ending::quiet(format!("connection error: {err}")),
            Ok(Some(Ok(message))) => message,
        };
        // The admin is there.
        heard = tokio::time::Instant::now();
        probe = None;
        let text = match message {
            Message::Text(text) => text,
            Message::Binary(_) => {
                return Ending::closing(
                    CloseCode::Unsupported,
                    "a binary message: the link carries JSON text only",
                )
            }
            Message::Close(frame) => {
                return Ending::quiet(match frame {
                    Some(frame) => format!(
                        "the admin closed the link ({}: {:?})",
                        frame.code,
                        frame.reason.as_str()
                    ),
                    None => "the admin closed the link".to_owned(),
                })
            }
            // Pings are answered by the WebSocket layer; any message counts as a sign of life.
            Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => continue,
        };
        let frame: LinkFrame = match serde_json::from_str(text.as_str()) {
            Ok(frame) => frame,
            Err(err) => {
                return Ending::closing(CloseCode::Policy, format!("a message that is not a link frame: {err}"))
            }
        };
        drop(text);
        match frame.path {
            Some(path) => {
                let permit = tokio::select! {
                    permit = permits.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
                    _ = context.stop.cancelled() => return Ending::quiet("the executor is stopping"),
                };
                tokio::spawn(serve_call(
                    context.clone(),
                    Call {
                        id: frame.id,
                        path,
                        token: frame.token,
                        body: frame.body,
                    },
                    outbox.clone(),
                    permit,
                ));
            }
            None => {
                if !connection.answer(frame.id, frame.body.get().to_owned()) {
                    tracing::debug!(id = frame.id, "an answer from the admin that no call waits for (late?)");
                }
            }
        }
    }
}

/// Pings the admin now; returns until when an answer (any message) must arrive.
fn start_probe(outbox: &mpsc::Sender<Message>) -> tokio::time::Instant {
    // Queued behind what waits for the socket; if even that is full, the deadline alone decides.
    let _ = outbox.try_send(Message::Ping(Bytes::new()));
    tokio::time::Instant::now() + PROBE_WAIT
}

/// A call from the admin, as it came down the link.
struct Call {
    id: u64,
    path: String,
    /// The access token it presents.
    token: Option<String>,
    body: Box<RawValue>,
}

/// Serves one call from the admin through the executor's router and sends the answer.
async fn serve_call(context: Arc<Context>, call: Call, outbox: mpsc::Sender<Message>, _permit: OwnedSemaphorePermit) {
    let Call { id, path, token, body } = call;
    let answer = if SERVED_PATHS.contains(&path.as_str()) {
        through_router(&context, &path, token.as_deref(), String::from(Box::<str>::from(body))).await
    } else {
        let quoted: String = path.chars().take(MAX_QUOTED_PATH).collect();
        fail(format!("the executor link carries no calls of {quoted:?}"))
    };
    let frame = LinkFrame::reply(id, &answer)
        .or_else(|_| LinkFrame::reply(id, &fail("the executor's answer was not JSON")))
        .expect("a failure envelope is JSON");
    let text = serde_json::to_string(&frame).expect("a link frame serializes");
    // The link may be gone meanwhile: the admin then never learns the answer, as with an HTTP
    // connection that broke before the reply.
    let _ = outbox.send(Message::text(text)).await;
}

/// Sends `body` to `path` through the executor's own router, as the HTTP request it stands for,
/// with the token the call presented (`token`) in the header the router checks.
async fn through_router(context: &Context, path: &str, token: Option<&str>, body: String) -> String {
    let mut request = axum::http::Request::builder()
        .method(axum::http::Method::POST)
        .uri(path)
        .header(axum::http::header::CONTENT_TYPE, "application/json;charset=UTF-8");
    if let Some(token) = token {
        request = request.header(ACCESS_TOKEN_HEADER, token);
    }
    let request = match request.body(Body::from(body)) {
        Ok(request) => request,
        Err(err) => return fail(format!("cannot serve the call: {err}")),
    };
    let response = match context.router.clone().oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    let limit = MAX_FRAME_BYTES - FRAME_ENVELOPE_BYTES;
    match axum::body::to_bytes(response.into_body(), limit).await {
        Ok(bytes) => String::from_utf8(bytes.to_vec()).unwrap_or_else(|_| fail("the executor's answer was not UTF-8")),
        Err(_) => fail(format!("the answer is larger than a link carries ({limit} bytes)")),
    }
}

fn fail(msg: impl Into<String>) -> String {
    ReturnT::<()>::fail(msg).to_executor_json()
}

/// This executor's default link id: the host name, then 8 characters of the instance id, so
/// that two processes on one host (or two containers with the same name) never share an id.
pub(crate) fn default_executor_id(instance_id: &str) -> String {
    let suffix: String = instance_id.chars().take(8).collect();
    format!("{}-{suffix}", link::id_from_host(&hostname(), 9))
}

#[cfg(unix)]
fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its whole length; gethostname writes at most that much.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

#[cfg(not(unix))]
fn hostname() -> String {
    std::env::var("COMPUTERNAME").unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_urls_keep_the_context_path_and_switch_the_scheme() {
        assert_eq!(
            link_url("http://a:8080/xxl-job-admin/").as_deref(),
            Some("ws://a:8080/xxl-job-admin/api/link")
        );
        assert_eq!(link_url("https://a").as_deref(), Some("wss://a/api/link"));
        assert_eq!(link_url("ftp://a"), None);
    }

    #[test]
    fn the_backoff_grows_to_its_ceiling_with_full_jitter() {
        assert_eq!(backoff(0, 0), Duration::ZERO);
        assert_eq!(backoff(0, u64::MAX), Duration::from_millis(u64::MAX % 501));
        assert!(backoff(0, 500) <= BACKOFF_MIN);
        assert_eq!(backoff(1, 1000), Duration::from_secs(1));
        assert_eq!(backoff(6, 30_000), BACKOFF_MAX);
        assert_eq!(backoff(40, 30_000), BACKOFF_MAX, "no overflow on long outages");
        for r in [0, 1, 12_345, u64::MAX] {
            assert!(backoff(40, r) <= BACKOFF_MAX);
            let refused = refused_backoff(r);
            assert!(refused >= BACKOFF_MAX / 2 && refused <= BACKOFF_MAX, "{refused:?}");
        }
    }

    #[test]
    fn the_default_id_is_valid_and_names_the_host() {
        let id = default_executor_id("0123456789abcdef0123456789abcdef");
        assert!(link::validate_executor_id(&id).is_ok(), "{id}");
        assert!(id.ends_with("-01234567"), "{id}");
    }

    #[test]
    fn close_reasons_fit_a_control_frame() {
        let ending = Ending::closing(CloseCode::Policy, "é".repeat(100));
        let frame = ending.close.unwrap();
        assert!(frame.reason.len() <= MAX_CLOSE_REASON);
        assert_eq!(ending.reason.chars().count(), 100, "the log keeps the whole reason");
    }

    #[tokio::test]
    async fn a_call_without_a_link_is_not_sent_and_answers_find_their_call() {
        let set = LinkSet::new(
            &["http://a/".to_owned(), "http://a".to_owned(), "http://b".to_owned()],
            Duration::from_secs(1),
        );
        assert_eq!(set.slots.len(), 2, "one link per admin");
        assert_eq!(
            set.call("http://a", paths::API_REGISTRY, "{}").await,
            Err(LinkCallError::Down)
        );
        let (tx, mut rx) = mpsc::channel(4);
        let connection = Arc::new(Connection::new(tx));
        *set.slots[1].current.lock().unwrap() = Some(connection.clone());
        let call = tokio::spawn({
            let set = set.clone();
            async move { set.call("http://b/", paths::API_CALLBACK, "[]").await }
        });
        let Some(Message::Text(text)) = rx.recv().await else {
            panic!("a text frame")
        };
        let frame: LinkFrame = serde_json::from_str(text.as_str()).unwrap();
        assert_eq!(frame.path.as_deref(), Some(paths::API_CALLBACK));
        assert!(
            !connection.answer(frame.id + 1, "{}".into()),
            "no call waits for another id"
        );
        assert!(connection.answer(frame.id, r#"{"code":200}"#.into()));
        assert_eq!(call.await.unwrap(), Ok(r#"{"code":200}"#.to_owned()));
        connection.close();
        assert!(
            connection.expect_answer(99).is_none(),
            "a closed link takes no more calls"
        );
    }
}
