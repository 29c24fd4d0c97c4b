//! The admin's end of executor links (`chime_protocol::link`): `GET /api/link` upgrades to the
//! WebSocket an executor keeps open, and `POST /api/linkRelay` lets another admin pass a call to
//! an executor linked here. Both sit beside the executor API, so they are served at `/` and at
//! the context path, on the admin's one port.
//!
//! A link is authorised once, when it opens, exactly as a registration would be: the token must
//! be its group's (or the admin's); a group that works without tokens (`insecure_no_token`)
//! cannot link at all. Calls coming up the link are then served by the executor API's own code
//! with that token (`executor_api::serve`), so a linked executor can do what an HTTP executor
//! can and no more — except register an address: it is known by its link only. Calls going
//! down carry the token they present, which the executor checks.
//!
//! The relay is for the admins of this database only: a relayed call must show the cluster
//! secret ([`crate::link::CLUSTER_SECRET_HEADER`]), besides the executor's token, which goes
//! down the link with the call.
//!
//! What a link may cost the admin is bounded: a message over
//! [`chime_protocol::link::MAX_MESSAGE_BYTES`] (1 MiB; up to
//! [`chime_protocol::link::MAX_FRAME_BYTES`] for an answer to `/log`) closes the link before it
//! is buffered whole, and all links' unfinished large messages share one budget
//! (`link_socket.rs`), [`UP_CALLS_PER_LINK`] calls from one executor are served at once (the next is
//! not read until one ends, which slows that executor's socket, not the admin), and the frames
//! down are bounded by [`crate::link::OUTBOX_FRAMES`]. A message that is not a link frame, a
//! binary message, or silence beyond [`IDLE_TIMEOUT_SECS`] closes the link, with the reason
//! logged and sent in the close frame.

use super::auth::token_matches;
use super::executor_api::{self, allowed, body_limit, refuse, reply};
use super::link_socket::{self, Inbound, LinkSocket, LinkUpgrade, NotAnUpgrade};
use crate::center::Admin;
use crate::link::{Link, LinkCallError, CLUSTER_SECRET_HEADER, RELAY_ADDRESS_HEADER, RELAY_PATH, RELAY_PATH_HEADER};
use crate::model::Group;
use axum::body::{to_bytes, Body, Bytes};
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use chime_protocol::link::{self, LinkFrame, IDLE_TIMEOUT_SECS, PING_INTERVAL_SECS};
use chime_protocol::messages::{ACCESS_TOKEN_HEADER, APPNAME_HEADER};
use chime_protocol::paths::{self, API_LINK};
use chime_protocol::{ReturnT, MAX_APP_NAME_CHARS};
use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, Notify, Semaphore};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

/// Calls from one linked executor served at once (results, run logs, registrations).
pub const UP_CALLS_PER_LINK: usize = 16;

/// Most executors one admin holds links to; a link beyond is refused (503), so a flood of
/// upgrades cannot exhaust the admin.
pub const MAX_LINKS: usize = 100_000;

/// Read and write buffer of each link. The WebSocket layer's default, 128 KiB each way, made
/// an idle link cost the admin about 130 KiB: 125 MB for 1,000 executors. A trigger is a few
/// hundred bytes; larger messages still arrive, in more reads.
const LINK_BUFFER_BYTES: usize = 8 * 1024;

/// How long the admin waits for any message after it pinged a link on which a call went
/// unanswered. A live executor answers a ping at once, however busy its jobs are; a link cut
/// without a word (a NAT that dropped the mapping, a pulled cable) is dropped after this, so
/// calls fail at once and fail over, instead of each waiting `--executor-timeout` for the 30 s
/// of the idle timeout.
const PROBE_WAIT: Duration = Duration::from_secs(5);

/// Longest a refused link is read (and what it sends dropped) after its close frame went out.
const DRAIN_AFTER_REFUSAL: Duration = Duration::from_secs(2);

/// Largest body of a relayed call: a trigger with its GLUE source, a kill, a log read.
const RELAY_BODY_LIMIT: usize = 16 * 1024 * 1024;

/// WebSocket close code for a peer that broke the link protocol (RFC 6455: policy violation).
const CLOSE_POLICY: u16 = 1008;

/// The close code of a link the admin ends because the executor went quiet (RFC 6455 "going
/// away"): not the executor's fault as a violation is, but worth a reason in its log.
const CLOSE_GOING_AWAY: u16 = 1001;

/// Routes of the link, mounted beside the executor API (at `/` and at the context path).
pub fn routes() -> Router<Arc<Admin>> {
    Router::new().route(API_LINK, get(open)).route(RELAY_PATH, post(relay))
}

/// A plain-text refusal of an upgrade (the executor logs it).
fn refused(status: StatusCode, text: String) -> Response {
    (status, text).into_response()
}

/// The caller's text in a header, if it is valid UTF-8.
fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// `GET /api/link`: checks who is linking, then upgrades.
async fn open(
    State(admin): State<Arc<Admin>>,
    headers: HeaderMap,
    connect: Option<Extension<ConnectInfo<SocketAddr>>>,
    ws: Result<LinkUpgrade, NotAnUpgrade>,
) -> Response {
    let peer = connect.map(|Extension(ConnectInfo(a))| a);
    let ws = match ws {
        Ok(ws) => ws,
        Err(e) => {
            return refused(
                StatusCode::BAD_REQUEST,
                format!("the executor link is a WebSocket upgrade: {e}"),
            )
        }
    };
    let app = header(&headers, APPNAME_HEADER).unwrap_or("").trim();
    if app.is_empty() || app.chars().count() > MAX_APP_NAME_CHARS || app.chars().any(char::is_control) {
        return refused(
            StatusCode::BAD_REQUEST,
            format!("{APPNAME_HEADER} must be the executor's app name, 1 to {MAX_APP_NAME_CHARS} characters"),
        );
    }
    let id = header(&headers, link::EXECUTOR_ID_HEADER).unwrap_or("").trim();
    if let Err(e) = link::validate_executor_id(id) {
        return refused(StatusCode::BAD_REQUEST, format!("{}: {e}", link::EXECUTOR_ID_HEADER));
    }
    let token = header(&headers, ACCESS_TOKEN_HEADER).unwrap_or("").to_owned();
    let group = admin.directory.group_by_app(app);
    if let Some(refusal) = tokenless_group(group.as_ref()) {
        let _ = refuse(&admin, "link", &token, peer, || Some(app.to_owned()));
        return refusal;
    }
    if !allowed(&admin, group.as_ref(), &token) {
        // Counted and logged like any executor request with a wrong token; the HTTP status
        // tells the executor why it cannot link (the envelope would be read as an upgrade).
        let _ = refuse(&admin, "link", &token, peer, || Some(app.to_owned()));
        return refused(
            StatusCode::UNAUTHORIZED,
            "wrong access token for this app name".to_owned(),
        );
    }
    if admin.links.count() >= MAX_LINKS && admin.links.get(app, id).is_none() {
        return refused(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("this admin holds {MAX_LINKS} links; link to another admin"),
        );
    }
    let (app, id) = (app.to_owned(), id.to_owned());
    ws.on_upgrade(move |upgraded| serve_link(admin, upgraded, app, id, token, peer))
}

/// Why a link ended.
enum End {
    /// The executor closed it, or the connection dropped.
    Closed(String),
    /// The executor broke the protocol: logged as a warning, sent in the close frame.
    Violation(String),
    /// The executor went quiet (nothing read for the idle time, or no answer to a probe):
    /// logged, and sent in the close frame so the executor's log says why it was dropped.
    Quiet(String),
    /// A newer link of the same executor replaced it, or the admin is stopping.
    Replaced,
}

/// A dropped connection ends a link quietly; an oversized or malformed message is a violation,
/// and so is a message refused by the link's counting (`inbound`).
fn read_error(e: tokio_tungstenite::tungstenite::Error, inbound: &Inbound) -> End {
    use tokio_tungstenite::tungstenite::error::ProtocolError;
    use tokio_tungstenite::tungstenite::Error;
    if let Some(reason) = inbound.refusal() {
        return End::Violation(reason);
    }
    match e {
        Error::ConnectionClosed
        | Error::AlreadyClosed
        | Error::Io(_)
        | Error::Protocol(ProtocolError::ResetWithoutClosingHandshake) => End::Closed(e.to_string()),
        other => End::Violation(format!("unreadable message: {other}")),
    }
}

/// Runs one link until it ends: a writer task sends queued frames and pings; this task reads.
async fn serve_link(
    admin: Arc<Admin>,
    upgraded: hyper::upgrade::Upgraded,
    app: String,
    id: String,
    token: String,
    peer: Option<SocketAddr>,
) {
    let (outbox, frames) = mpsc::channel::<String>(crate::link::OUTBOX_FRAMES);
    let link = Arc::new(Link::new(app, id, outbox));
    let inbound = Arc::new(Inbound::new(admin.metrics.link_message_bytes.clone(), link.clone()));
    let socket: LinkSocket = link_socket::socket(upgraded, inbound.clone(), LINK_BUFFER_BYTES).await;
    let (sink, mut stream) = socket.split();
    admin.links.attach(link.clone());
    admin.metrics.linked_executors.set(admin.links.count() as i64);
    tracing::info!(app = %link.app_name, executor = %link.executor_id, peer = ?peer, "executor linked");

    let (close_tx, close_rx) = oneshot::channel::<Option<CloseFrame>>();
    let ping_now = Arc::new(Notify::new());
    let writer = tokio::spawn(write_link(
        sink,
        frames,
        close_rx,
        link.closed.clone(),
        ping_now.clone(),
    ));
    let up_calls = UpCalls {
        admin: admin.clone(),
        link: link.clone(),
        token,
        peer,
        permits: Arc::new(Semaphore::new(UP_CALLS_PER_LINK)),
    };
    let end = read_link(&admin, &link, &inbound, &mut stream, &ping_now, &up_calls).await;
    let reason = close_reason(&link, peer, end);
    let said_why = reason.is_some();
    // Before the link is detached (which cancels `closed`): the writer sends the reason.
    let _ = close_tx.send(reason);
    admin.links.detach(&link);
    admin.metrics.linked_executors.set(admin.links.count() as i64);
    stop_writer(writer).await;
    // A link told why it ends may still be sending (a refused message, the pongs of a quiet
    // executor that wakes): read (and drop) what comes until the executor, told why by the
    // close frame, closes too, so that the frame is not lost to the reset a socket closed with
    // unread bytes gets.
    if said_why {
        let _ = tokio::time::timeout(DRAIN_AFTER_REFUSAL, async { while stream.next().await.is_some() {} }).await;
    }
}

/// The link's writer: sends the queued frames and the pings until the link ends, then the
/// close frame (with the reason, when the link ended with one).
async fn write_link(
    mut sink: SplitSink<LinkSocket, Message>,
    mut frames: mpsc::Receiver<String>,
    mut close_rx: oneshot::Receiver<Option<CloseFrame>>,
    closed: CancellationToken,
    ping_now: Arc<Notify>,
) {
    let mut ping = tokio::time::interval(Duration::from_secs(PING_INTERVAL_SECS));
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            // The reason first: when the link ends with one, `closed` is cancelled too.
            biased;
            frame = &mut close_rx => {
                let _ = sink.send(Message::Close(frame.ok().flatten())).await;
                return;
            }
            frame = frames.recv() => match frame {
                Some(text) => if sink.send(Message::Text(text.into())).await.is_err() { return },
                None => return,
            },
            _ = ping.tick() => if sink.send(Message::Ping(Bytes::new())).await.is_err() { return },
            _ = ping_now.notified() => if sink.send(Message::Ping(Bytes::new())).await.is_err() { return },
            _ = closed.cancelled() => {
                let _ = sink.send(Message::Close(None)).await;
                return;
            }
        }
    }
}

/// What serving the calls that come up one link needs.
struct UpCalls {
    admin: Arc<Admin>,
    link: Arc<Link>,
    token: String,
    peer: Option<SocketAddr>,
    /// [`UP_CALLS_PER_LINK`] permits: one for each call being served.
    permits: Arc<Semaphore>,
}

/// Reads the link until it ends, and says why it ended.
async fn read_link(
    admin: &Admin,
    link: &Link,
    inbound: &Inbound,
    stream: &mut SplitStream<LinkSocket>,
    ping_now: &Notify,
    up_calls: &UpCalls,
) -> End {
    let idle = Duration::from_secs(IDLE_TIMEOUT_SECS);
    // Set when a call went unanswered and the executor was pinged: the link ends unless
    // something arrives by then.
    let mut probe: Option<tokio::time::Instant> = None;
    loop {
        let wait = probe.map_or(idle, |deadline| {
            deadline
                .saturating_duration_since(tokio::time::Instant::now())
                .min(idle)
        });
        let message = tokio::select! {
            m = tokio::time::timeout(wait, stream.next()) => m,
            _ = link.unanswered.notified(), if probe.is_none() => {
                probe = Some(tokio::time::Instant::now() + PROBE_WAIT);
                ping_now.notify_one();
                continue;
            }
            _ = link.closed.cancelled() => return End::Replaced,
            _ = admin.shutdown.cancelled() => return End::Replaced,
            () = inbound.refused() => return End::Violation(inbound.refusal().unwrap_or_default()),
        };
        let message = match message {
            Err(_) if probe.is_some() => {
                return End::Quiet(format!(
                    "a call went unanswered and nothing came back within {} s of a ping",
                    PROBE_WAIT.as_secs()
                ))
            }
            Err(_) => return End::Quiet(format!("nothing received for {IDLE_TIMEOUT_SECS} s")),
            Ok(None) => return End::Closed("connection closed".to_owned()),
            Ok(Some(Err(e))) => return read_error(e, inbound),
            Ok(Some(Ok(m))) => m,
        };
        // The executor is there.
        probe = None;
        let frame = match link_frame(message, inbound) {
            Ok(Some(frame)) => frame,
            Ok(None) => continue,
            Err(end) => return end,
        };
        if let Err(end) = take_frame(frame, up_calls).await {
            return end;
        }
    }
}

/// The link frame a message carries; `None` for a control message, which only shows the
/// executor is there.
fn link_frame(message: Message, inbound: &Inbound) -> Result<Option<LinkFrame>, End> {
    let text = match message {
        Message::Text(text) => text,
        Message::Binary(_) => return Err(End::Violation("binary message: link frames are JSON text".to_owned())),
        Message::Close(_) => return Err(End::Closed("closed by the executor".to_owned())),
        Message::Ping(payload) | Message::Pong(payload) => {
            inbound.control_taken(payload.len());
            return Ok(None);
        }
        Message::Frame(_) => return Ok(None),
    };
    // The message is out of the WebSocket layer's buffer (and into `text`).
    inbound.message_taken();
    serde_json::from_str(text.as_str())
        .map(Some)
        .map_err(|e| End::Violation(format!("not a link frame: {e}")))
}

/// Takes one frame from the executor: an answer goes to the call waiting for it, a call is
/// served on its own task.
async fn take_frame(frame: LinkFrame, up_calls: &UpCalls) -> Result<(), End> {
    let UpCalls {
        admin,
        link,
        token,
        peer,
        permits,
    } = up_calls;
    let Some(path) = frame.path else {
        // An answer nobody waits for (its call timed out) is dropped.
        link.answer(frame.id, String::from(Box::<str>::from(frame.body)));
        return Ok(());
    };
    // Waiting here, not queueing: an executor that calls faster than the admin
    // answers is slowed by its own socket.
    let Ok(permit) = permits.clone().acquire_owned().await else {
        return Err(End::Replaced);
    };
    let (admin, link, token, peer) = (admin.clone(), link.clone(), token.clone(), *peer);
    tokio::spawn(async move {
        let body = Bytes::from(String::from(Box::<str>::from(frame.body)));
        let answer = serve_up_call(&admin, &link, &path, body, &token, peer).await;
        if let Ok(frame) = LinkFrame::reply(frame.id, &answer).and_then(|f| serde_json::to_string(&f)) {
            link.send(frame).await;
        }
        drop(permit);
    });
    Ok(())
}

/// Logs why the link ended, and returns the close frame that tells the executor (for a
/// violation or a quiet executor; none when the executor itself closed or was replaced).
fn close_reason(link: &Link, peer: Option<SocketAddr>, end: End) -> Option<CloseFrame> {
    let (code, reason) = match end {
        End::Closed(reason) => {
            tracing::info!(app = %link.app_name, executor = %link.executor_id, %reason, "executor link closed");
            return None;
        }
        End::Replaced => return None,
        End::Quiet(reason) => {
            tracing::info!(app = %link.app_name, executor = %link.executor_id, %reason, "executor link closed");
            (CLOSE_GOING_AWAY, reason)
        }
        End::Violation(reason) => {
            tracing::warn!(app = %link.app_name, executor = %link.executor_id, peer = ?peer, %reason, "executor link closed: protocol violation");
            (CLOSE_POLICY, reason)
        }
    };
    // A close frame's reason is at most 123 bytes.
    Some(CloseFrame {
        code: CloseCode::from(code),
        reason: reason.chars().take(120).collect::<String>().into(),
    })
}

/// A writer stuck in a send on a dead connection (its peer gone, the send buffer full) would
/// hold the socket until TCP gives up, many minutes later: it gets a moment to say goodbye,
/// then it is stopped and the socket closed.
async fn stop_writer(mut writer: tokio::task::JoinHandle<()>) {
    if tokio::time::timeout(Duration::from_secs(5), &mut writer).await.is_err() {
        writer.abort();
    }
}

/// Serves one call from a linked executor with the executor API's own code, and returns the
/// body of its answer.
async fn serve_up_call(
    admin: &Arc<Admin>,
    link: &Link,
    path: &str,
    body: Bytes,
    token: &str,
    peer: Option<SocketAddr>,
) -> String {
    let uri = match path {
        paths::API_REGISTRY => "registry",
        paths::API_REGISTRY_REMOVE => "registryRemove",
        paths::API_CALLBACK => "callback",
        paths::API_RUN_LOG => "runLog",
        other => {
            let shown: String = other.chars().take(64).collect();
            return ReturnT::<String>::fail(chime_protocol::messages::uri_not_found(&shown)).to_admin_json();
        }
    };
    let response = if body.len() > body_limit(uri) {
        executor_api::too_large(uri)
    } else {
        executor_api::serve(admin, uri, token, peer, body, Some(link)).await
    };
    // The executor API answers with a short envelope; the bound only guards against a bug.
    match to_bytes(response.into_body(), 1024 * 1024).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(_) => ReturnT::<String>::fail("answer too large").to_admin_json(),
    }
}

/// The refusal of a link or a relay for a group that works without tokens: nothing would check
/// who is at either end.
fn tokenless_group(group: Option<&Group>) -> Option<Response> {
    let group = group.filter(|g| g.insecure_no_token)?;
    Some(refused(
        StatusCode::FORBIDDEN,
        format!(
            "group {:?} works without an executor access token (insecure_no_token); links and relays need one: \
             give its executors the admin's token and turn insecure_no_token off",
            group.app_name
        ),
    ))
}

/// The executor endpoints a relayed call may stand for.
fn is_executor_path(path: &str) -> bool {
    matches!(
        path,
        paths::RUN | paths::TRIGGER | paths::KILL | paths::LOG | paths::BEAT | paths::IDLE_BEAT
    )
}

/// `POST /api/linkRelay`: another admin's call for an executor linked here. Answers 200 with
/// the executor's answer (or a failure envelope saying why the link failed), 404 when the
/// executor is not linked here (the caller asks the next admin).
async fn relay(
    State(admin): State<Arc<Admin>>,
    headers: HeaderMap,
    connect: Option<Extension<ConnectInfo<SocketAddr>>>,
    body: Body,
) -> Response {
    let peer = connect.map(|Extension(ConnectInfo(a))| a);
    let app = header(&headers, APPNAME_HEADER).unwrap_or("").trim();
    // Before anything else: only another admin of this database may pass calls through here.
    let secret = header(&headers, CLUSTER_SECRET_HEADER).unwrap_or("");
    if !token_matches(secret, &admin.cluster_secret) {
        let _ = refuse(&admin, "linkRelay", secret, peer, || Some(app.to_owned()));
        return refused(
            StatusCode::UNAUTHORIZED,
            "relays are for the admins of this cluster: wrong or missing cluster secret".to_owned(),
        );
    }
    let address = header(&headers, RELAY_ADDRESS_HEADER).unwrap_or("");
    let path = header(&headers, RELAY_PATH_HEADER).unwrap_or("");
    let Some(id) = link::executor_id(address) else {
        return refused(
            StatusCode::BAD_REQUEST,
            format!("{RELAY_ADDRESS_HEADER} must be a link:// address"),
        );
    };
    if !is_executor_path(path) {
        return refused(
            StatusCode::BAD_REQUEST,
            format!("{RELAY_PATH_HEADER} must be an executor endpoint"),
        );
    }
    let token = header(&headers, ACCESS_TOKEN_HEADER).unwrap_or("");
    let group = admin.directory.group_by_app(app);
    if let Some(refusal) = tokenless_group(group.as_ref()) {
        return refusal;
    }
    if !allowed(&admin, group.as_ref(), token) {
        let _ = refuse(&admin, "linkRelay", token, peer, || Some(app.to_owned()));
        return refused(
            StatusCode::UNAUTHORIZED,
            "wrong access token for this app name".to_owned(),
        );
    }
    if admin.links.get(app, id).is_none() {
        return refused(StatusCode::NOT_FOUND, "executor not linked to this admin".to_owned());
    }
    let body = match to_bytes(body, RELAY_BODY_LIMIT).await {
        Ok(b) => b,
        Err(_) => {
            return refused(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("body over {RELAY_BODY_LIMIT} bytes"),
            )
        }
    };
    // Checked here, as the link frame carries the body as it is: a body that is not JSON would
    // make a broken frame, and the executor would drop its link.
    let Ok(body) = std::str::from_utf8(&body) else {
        return refused(StatusCode::BAD_REQUEST, "body is not UTF-8 JSON".to_owned());
    };
    if let Err(e) = serde_json::from_str::<&serde_json::value::RawValue>(body) {
        return refused(StatusCode::BAD_REQUEST, format!("body is not JSON: {e}"));
    }
    match admin
        .links
        .call(
            app,
            id,
            path,
            body,
            Some(token).filter(|t| !t.is_empty()),
            admin.config.executor_timeout,
        )
        .await
    {
        Ok(answer) => (
            StatusCode::OK,
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            answer,
        )
            .into_response(),
        Err(LinkCallError::NotHere) => refused(StatusCode::NOT_FOUND, "executor not linked to this admin".to_owned()),
        Err(LinkCallError::Failed(e)) => reply(ReturnT::fail(format!(
            "xxl-job remoting error({e}), for url : {}",
            paths::join(address, path)
        ))),
    }
}
