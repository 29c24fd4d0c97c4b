//! Link mode against a real WebSocket server playing the admin's end of the link: the executor
//! dials it with its three headers, serves calls that come down the link exactly as over HTTP,
//! sends its registration and results up the link, dials again when the link drops or the
//! server sends something malformed, and delivers results by HTTP while the link is down.

mod support;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chime_executor::{Executor, ExecutorHandle};
use chime_protocol::link::MAX_FRAME_BYTES;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::{start_executor, trigger, wait_for, FakeAdmin, WAIT};
use tokio::sync::mpsc;

const TOKEN: &str = "s3cret-link";
const APP: &str = "chime-link-test";

/// The admin's end: `GET /api/link` upgrades to a WebSocket handed to the test, and the HTTP
/// endpoints `/api/callback` and `/api/registry` record what reaches them.
struct LinkAdmin {
    addr: SocketAddr,
    links: mpsc::UnboundedReceiver<Linked>,
    state: AdminState,
}

#[derive(Clone)]
struct AdminState {
    links: mpsc::UnboundedSender<Linked>,
    /// Upgrades accepted so far.
    connections: Arc<AtomicUsize>,
    /// While false, upgrades are refused (HTTP 503): the link stays down.
    open: Arc<AtomicBool>,
    http_callbacks: Arc<Mutex<Vec<Value>>>,
    http_registrations: Arc<AtomicUsize>,
}

impl LinkAdmin {
    async fn start() -> LinkAdmin {
        let (tx, links) = mpsc::unbounded_channel();
        let state = AdminState {
            links: tx,
            connections: Arc::new(AtomicUsize::new(0)),
            open: Arc::new(AtomicBool::new(true)),
            http_callbacks: Arc::new(Mutex::new(Vec::new())),
            http_registrations: Arc::new(AtomicUsize::new(0)),
        };
        let app = axum::Router::new()
            .route("/api/link", axum::routing::get(upgrade))
            .route("/api/callback", axum::routing::post(http_callback))
            .route("/api/registry", axum::routing::post(http_registry))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        LinkAdmin { addr, links, state }
    }

    fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The next link the executor opens.
    async fn next_link(&mut self) -> Linked {
        tokio::time::timeout(WAIT, self.links.recv())
            .await
            .expect("the executor links within the wait")
            .expect("the server runs")
    }

    fn connections(&self) -> usize {
        self.state.connections.load(Ordering::SeqCst)
    }
}

async fn upgrade(State(s): State<AdminState>, headers: HeaderMap, ws: WebSocketUpgrade) -> Response {
    if !s.open.load(Ordering::SeqCst) {
        return (StatusCode::SERVICE_UNAVAILABLE, "closed for the test").into_response();
    }
    s.connections.fetch_add(1, Ordering::SeqCst);
    // Room for the oversized message this side sends in one test.
    ws.max_message_size(64 << 20).on_upgrade(move |socket| async move {
        let _ = s.links.send(Linked {
            headers,
            socket,
            next_id: 1000,
            calls: Vec::new(),
            refuse_callbacks: 0,
        });
    })
}

async fn http_callback(State(s): State<AdminState>, body: String) -> impl IntoResponse {
    let items: Value = serde_json::from_str(&body).unwrap();
    s.http_callbacks
        .lock()
        .unwrap()
        .extend(items.as_array().unwrap().iter().cloned());
    json!({"code": 200}).to_string()
}

async fn http_registry(State(s): State<AdminState>) -> impl IntoResponse {
    s.http_registrations.fetch_add(1, Ordering::SeqCst);
    json!({"code": 200}).to_string()
}

/// One link as the admin holds it.
struct Linked {
    headers: HeaderMap,
    socket: WebSocket,
    next_id: u64,
    /// The executor's calls received so far: (path, body).
    calls: Vec<(String, Value)>,
    /// Callback calls still to be refused (code 500) before they are accepted.
    refuse_callbacks: usize,
}

/// What the executor sent that was not a text frame.
#[derive(Debug)]
enum Ended {
    Closed(Option<u16>),
    Gone,
}

impl Linked {
    fn header(&self, name: &str) -> Option<String> {
        self.headers.get(name).map(|v| v.to_str().unwrap().to_owned())
    }

    /// The next text frame, or how the link ended.
    async fn read(&mut self) -> Result<Value, Ended> {
        loop {
            let next = tokio::time::timeout(WAIT, self.socket.recv())
                .await
                .expect("the executor sends within the wait");
            match next {
                Some(Ok(Message::Text(text))) => return Ok(serde_json::from_str(text.as_str()).unwrap()),
                Some(Ok(Message::Close(frame))) => return Err(Ended::Closed(frame.map(|f| f.code))),
                Some(Ok(Message::Binary(_))) => panic!("the executor sends text frames only"),
                Some(Ok(_)) => continue,
                Some(Err(_)) | None => return Err(Ended::Gone),
            }
        }
    }

    async fn send(&mut self, frame: Value) {
        self.socket.send(Message::text(frame.to_string())).await.unwrap();
    }

    /// Records and answers a call from the executor, as the admin would.
    async fn answer(&mut self, frame: Value) {
        let path = frame["path"].as_str().unwrap().to_owned();
        let code = if path == "/api/callback" && self.refuse_callbacks > 0 {
            self.refuse_callbacks -= 1;
            500
        } else {
            200
        };
        self.calls.push((path, frame["body"].clone()));
        self.send(json!({"id": frame["id"], "body": {"code": code, "msg": null}}))
            .await;
    }

    /// Calls `path` on the executor with the executor's token, as an admin does, and returns
    /// the answer's body, answering the executor's own calls meanwhile.
    async fn call(&mut self, path: &str, body: Value) -> Value {
        self.call_presenting(path, body, Some(TOKEN)).await
    }

    /// [`Linked::call`] presenting `token` (none: the frame has no token).
    async fn call_presenting(&mut self, path: &str, body: Value, token: Option<&str>) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut frame = json!({"id": id, "path": path, "body": body});
        if let Some(token) = token {
            frame["token"] = token.into();
        }
        self.send(frame).await;
        loop {
            let frame = self.read().await.expect("the link stays up");
            if frame.get("path").is_some() {
                self.answer(frame).await;
            } else if frame["id"] == id {
                return frame["body"].clone();
            }
        }
    }

    /// Answers the executor's calls until `done` holds for those received.
    async fn serve_until(&mut self, done: impl Fn(&[(String, Value)]) -> bool) {
        while !done(&self.calls) {
            let frame = self.read().await.expect("the link stays up");
            assert!(frame.get("path").is_some(), "an answer to no call: {frame}");
            self.answer(frame).await;
        }
    }

    fn registrations(&self) -> Vec<&Value> {
        self.calls
            .iter()
            .filter(|(p, _)| p == "/api/registry")
            .map(|(_, b)| b)
            .collect()
    }
}

fn callback_of(calls: &[(String, Value)], log_id: i64) -> Vec<&Value> {
    calls
        .iter()
        .filter(|(p, _)| p == "/api/callback")
        .flat_map(|(_, body)| body.as_array().unwrap())
        .filter(|item| item["logId"] == log_id)
        .collect()
}

/// Starts a linked executor with the demo handlers.
async fn start_linked(admin: &LinkAdmin, id: Option<&str>, logdir: &Path) -> ExecutorHandle {
    let mut builder = Executor::builder()
        .admin_addresses([admin.base()])
        .app_name(APP)
        .access_token(TOKEN)
        .link(true)
        .log_dir(logdir)
        .callback_retry_interval(Duration::from_millis(200))
        .admin_timeout(Duration::from_secs(2))
        // Far beyond the wait: a registration seen in a test was sent as the link came up.
        .registry_interval(Duration::from_secs(600))
        .shutdown_grace(Duration::from_secs(5));
    if let Some(id) = id {
        builder = builder.link_id(id);
    }
    chime_executor::demo::register_demo_handlers(builder)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap()
}

/// Whether every result in the spool has been acknowledged: the cursor stands at the end of
/// the newest segment.
fn spool_drained(logdir: &Path) -> bool {
    let dir = logdir.join("callback-spool");
    let Ok(cursor) = std::fs::read_to_string(dir.join("cursor")) else {
        return false;
    };
    let mut parts = cursor.split_whitespace().map(|n| n.parse::<u64>().unwrap());
    let (seg, off) = (parts.next().unwrap(), parts.next().unwrap());
    let newest = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            e.unwrap()
                .file_name()
                .to_str()?
                .strip_suffix(".jsonl")?
                .parse::<u64>()
                .ok()
        })
        .max()
        .unwrap();
    let len = std::fs::metadata(dir.join(format!("{newest:020}.jsonl")))
        .unwrap()
        .len();
    seg == newest && off == len
}

#[tokio::test]
async fn the_executor_dials_with_its_three_headers_opens_no_port_and_registers_at_once() {
    let mut admin = LinkAdmin::start().await;
    let logdir = tempfile::tempdir().unwrap();
    let handle = start_linked(&admin, Some("pod-7"), logdir.path()).await;
    assert_eq!(handle.local_addr(), None, "link mode opens no port");
    assert_eq!(handle.advertised_address(), "link://pod-7");

    let mut link = admin.next_link().await;
    assert_eq!(link.header("XXL-JOB-ACCESS-TOKEN").as_deref(), Some(TOKEN));
    assert_eq!(link.header("XXL-JOB-APPNAME").as_deref(), Some(APP));
    assert_eq!(link.header("Chime-Executor-Id").as_deref(), Some("pod-7"));

    // Registered over the link at once, not at the first heartbeat 30 s later.
    link.serve_until(|calls| calls.iter().any(|(p, _)| p == "/api/registry"))
        .await;
    let registration = link.registrations()[0].clone();
    assert_eq!(registration["registryGroup"], "EXECUTOR");
    assert_eq!(registration["registryKey"], APP);
    assert_eq!(registration["registryValue"], "link://pod-7");
    assert!(registration["instance"]["id"].is_string(), "{registration}");
    assert_eq!(
        admin.state.http_registrations.load(Ordering::SeqCst),
        0,
        "never by HTTP"
    );

    drop(link);
    handle.shutdown().await;
}

#[tokio::test]
async fn the_default_id_names_the_host_and_differs_per_process() {
    let mut admin = LinkAdmin::start().await;
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let first = start_linked(&admin, None, one.path()).await;
    let second = start_linked(&admin, None, two.path()).await;
    let a = admin.next_link().await.header("Chime-Executor-Id").unwrap();
    let b = admin.next_link().await.header("Chime-Executor-Id").unwrap();
    assert_ne!(a, b);
    for id in [&a, &b] {
        assert!(chime_protocol::link::validate_executor_id(id).is_ok(), "{id}");
        assert!(
            [first.advertised_address(), second.advertised_address()].contains(&format!("link://{id}").as_str()),
            "{id}"
        );
    }
    first.shutdown().await;
    second.shutdown().await;
}

#[tokio::test]
async fn calls_down_the_link_answer_as_over_http_and_the_result_comes_up_until_acknowledged() {
    let mut admin = LinkAdmin::start().await;
    let logdir = tempfile::tempdir().unwrap();
    let handle = start_linked(&admin, Some("pod-b"), logdir.path()).await;
    let mut link = admin.next_link().await;
    // The same executor over HTTP, to compare answers with.
    let fake = FakeAdmin::start(true).await;
    let http = start_executor(&fake, Some(TOKEN), |b| b).await;

    for (path, body) in [
        ("/beat", json!({})),
        ("/idleBeat", json!({"jobId": 1})),
        ("/run", trigger(1, 1, "noSuchHandler", "")),
        ("/run", json!({"jobId": "not a number"})),
        ("/kill", json!({"jobId": 99})),
    ] {
        let over_link = link.call(path, body.clone()).await;
        let over_http = http.client.post(path, body.to_string()).await;
        assert_eq!(over_link, over_http.body, "{path} {body}");
    }

    // A run: accepted down the link, its result up the link. The first callback is refused,
    // so it stays spooled and comes again; the second is acknowledged and the spool empties.
    link.refuse_callbacks = 1;
    let answer = link
        .call("/run", trigger(7, 42, "demoJobHandler", "over the link"))
        .await;
    assert_eq!(answer, json!({"code": 200}));
    link.serve_until(|calls| callback_of(calls, 42).len() >= 2).await;
    let results = callback_of(&link.calls, 42);
    assert_eq!(results[0]["handleCode"], 200, "{}", results[0]);
    assert_eq!(results[0], results[1], "the refused result is sent again as it was");
    assert!(
        wait_for(WAIT, || spool_drained(logdir.path()).then_some(()))
            .await
            .is_some(),
        "the acknowledged result leaves the spool"
    );
    assert!(
        admin.state.http_callbacks.lock().unwrap().is_empty(),
        "all over the link"
    );

    // Its log, read down the link.
    let log_date = results[0]["logDateTim"].clone();
    let page = link
        .call("/log", json!({"logDateTim": log_date, "logId": 42, "fromLineNum": 1}))
        .await;
    assert_eq!(page["code"], 200, "{page}");
    assert!(
        page["content"]["logContent"]
            .as_str()
            .unwrap()
            .contains("param=over the link"),
        "{page}"
    );

    drop(link);
    handle.shutdown().await;
    http.handle.shutdown().await;
}

#[tokio::test]
async fn a_dropped_link_is_dialed_again_and_registers_again() {
    let mut admin = LinkAdmin::start().await;
    let logdir = tempfile::tempdir().unwrap();
    let handle = start_linked(&admin, Some("pod-c"), logdir.path()).await;
    let mut first = admin.next_link().await;
    first.serve_until(|calls| !calls.is_empty()).await;
    drop(first);

    let mut second = admin.next_link().await;
    assert!(admin.connections() >= 2);
    assert_eq!(second.header("Chime-Executor-Id").as_deref(), Some("pod-c"));
    second
        .serve_until(|calls| calls.iter().any(|(p, _)| p == "/api/registry"))
        .await;
    assert_eq!(second.registrations()[0]["registryValue"], "link://pod-c");
    assert_eq!(second.call("/beat", json!({})).await, json!({"code": 200}));

    drop(second);
    handle.shutdown().await;
}

#[tokio::test]
async fn malformed_or_oversized_messages_close_the_link_and_the_executor_dials_again() {
    let mut admin = LinkAdmin::start().await;
    let logdir = tempfile::tempdir().unwrap();
    let handle = start_linked(&admin, Some("pod-d"), logdir.path()).await;

    let garbage = [
        Message::text("this is not JSON"),
        Message::text(r#"{"id":-1,"body":{}}"#),
        Message::binary(vec![1u8, 2, 3]),
        Message::text(format!(
            r#"{{"id":1,"path":"/beat","body":"{}"}}"#,
            "x".repeat(MAX_FRAME_BYTES)
        )),
    ];
    let expected_codes = [1008, 1008, 1003, 1009];
    for (message, code) in garbage.into_iter().zip(expected_codes) {
        let mut link = admin.next_link().await;
        // The executor may drop the connection while the oversized message is still going out.
        let _ = link.socket.send(message).await;
        // The executor closes, saying why; its registration may come first.
        let ended = loop {
            match link.read().await {
                Ok(frame) if frame.get("path").is_some() => link.answer(frame).await,
                Ok(frame) => panic!("an answer to no call: {frame}"),
                Err(ended) => break ended,
            }
        };
        match ended {
            Ended::Closed(Some(got)) => assert_eq!(got, code),
            // An oversized message may end the connection before a close frame gets through.
            other => assert_eq!(code, 1009, "{other:?}"),
        }
    }
    // Still alive and serving after all that.
    let mut link = admin.next_link().await;
    assert_eq!(link.call("/beat", json!({})).await, json!({"code": 200}));
    assert!(admin.connections() >= 5);

    drop(link);
    handle.shutdown().await;
}

/// The link proves which admin the executor dialed, not who asked that admin for the call (a
/// relay from anywhere, once): a call down the link is checked against the executor's token as
/// an HTTP call is, and the executor never vouches for it with its own.
#[tokio::test]
async fn a_call_down_the_link_without_the_token_is_refused_and_runs_nothing() {
    let mut admin = LinkAdmin::start().await;
    let logdir = tempfile::tempdir().unwrap();
    let ran = Arc::new(Mutex::new(Vec::<i64>::new()));
    let seen = ran.clone();
    let handle = Executor::builder()
        .admin_addresses([admin.base()])
        .app_name(APP)
        .access_token(TOKEN)
        .link(true)
        .link_id("pod-t")
        .log_dir(logdir.path())
        .registry_interval(Duration::from_secs(600))
        .handler("record", move |ctx: chime_executor::JobContext| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(ctx.log_id());
                chime_executor::JobResult::success()
            }
        })
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let mut link = admin.next_link().await;
    for token in [None, Some("wrong"), Some("")] {
        let answer = link.call_presenting("/run", trigger(5, 55, "record", ""), token).await;
        assert_eq!(answer["code"], 500, "{token:?}: {answer}");
        assert_eq!(answer["msg"], "The access token is wrong.", "{token:?}: {answer}");
        let beat = link.call_presenting("/beat", json!({}), token).await;
        assert_eq!(beat["code"], 500, "{token:?}: {beat}");
    }
    // The same call with the token runs.
    let answer = link.call("/run", trigger(5, 56, "record", "")).await;
    assert_eq!(answer["code"], 200, "{answer}");
    wait_for(WAIT, || (!ran.lock().unwrap().is_empty()).then_some(()))
        .await
        .expect("the run presenting the token ran");
    // One job, run serially: a refused run let through would have run before this one.
    assert_eq!(*ran.lock().unwrap(), vec![56], "only the run presenting the token ran");
    drop(link);
    handle.shutdown().await;
}

#[tokio::test]
async fn calls_of_other_paths_get_a_failure_and_stray_answers_are_ignored() {
    let mut admin = LinkAdmin::start().await;
    let logdir = tempfile::tempdir().unwrap();
    let handle = start_linked(&admin, Some("pod-e"), logdir.path()).await;
    let mut link = admin.next_link().await;

    for path in ["/api/registry", "/shutdown", "", "/run/../x"] {
        let answer = link.call(path, json!({})).await;
        assert_eq!(answer["code"], 500, "{path}: {answer}");
        assert!(
            answer["msg"].as_str().unwrap().contains("carries no calls"),
            "{path}: {answer}"
        );
    }
    // An answer to a call the executor never made changes nothing.
    link.send(json!({"id": 987_654, "body": {"code": 200}})).await;
    assert_eq!(link.call("/beat", json!({})).await, json!({"code": 200}));
    assert_eq!(admin.connections(), 1, "the link stayed up");

    drop(link);
    handle.shutdown().await;
}

#[tokio::test]
async fn while_the_link_is_down_results_go_by_http() {
    let mut admin = LinkAdmin::start().await;
    let logdir = tempfile::tempdir().unwrap();
    let handle = start_linked(&admin, Some("pod-f"), logdir.path()).await;
    let mut link = admin.next_link().await;
    let answer = link.call("/run", trigger(3, 77, "sleepJobHandler", "1")).await;
    assert_eq!(answer, json!({"code": 200}));
    // The link goes down while the run sleeps, and stays down.
    admin.state.open.store(false, Ordering::SeqCst);
    drop(link);

    let delivered = wait_for(WAIT, || {
        let callbacks = admin.state.http_callbacks.lock().unwrap();
        callbacks.iter().find(|c| c["logId"] == 77).cloned()
    })
    .await
    .expect("the result arrives by HTTP");
    assert_eq!(delivered["handleCode"], 200, "{delivered}");
    assert!(wait_for(WAIT, || spool_drained(logdir.path()).then_some(()))
        .await
        .is_some());
    assert_eq!(
        admin.state.http_registrations.load(Ordering::SeqCst),
        0,
        "registration never falls back to HTTP"
    );

    handle.shutdown().await;
}

#[test]
fn link_mode_settings_are_checked_when_built() {
    let base = || {
        Executor::builder()
            .admin_addresses(["http://127.0.0.1:1"])
            .app_name(APP)
            .link(true)
    };
    assert!(base().link_id("pod-1.a_b").build().is_ok());
    for bad in ["a b", "a/b", &"x".repeat(65)] {
        let err = base().link_id(bad).build().err().expect("refused");
        assert!(err.to_string().contains("link id"), "{bad}: {err}");
    }
    let err = Executor::builder()
        .app_name(APP)
        .link(true)
        .build()
        .err()
        .expect("refused");
    assert!(err.to_string().contains("admin address"), "{err}");
    let err = base().app_name("line\nbreak").build().err().expect("refused");
    assert!(err.to_string().contains("app name"), "{err}");
}

/// An admin end that completes the upgrade and then never reads or writes again — a frozen
/// admin, or a NAT that dropped the connection silently. Its pings unanswered, the executor
/// must give the link up after `IDLE_TIMEOUT_SECS` and dial again. (This test waits that long.)
#[tokio::test]
async fn a_link_on_which_nothing_arrives_is_given_up_and_dialed_again() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let server = {
        let accepted = accepted.clone();
        tokio::spawn(async move {
            let mut held = Vec::new();
            loop {
                let (tcp, _) = listener.accept().await.unwrap();
                if let Ok(socket) = tokio_tungstenite::accept_async(tcp).await {
                    accepted.fetch_add(1, Ordering::SeqCst);
                    // Kept open, never read: no pong ever goes back.
                    held.push(socket);
                }
            }
        })
    };
    let logdir = tempfile::tempdir().unwrap();
    let handle = chime_executor::demo::register_demo_handlers(
        Executor::builder()
            .admin_addresses([format!("http://{addr}")])
            .app_name(APP)
            .access_token(TOKEN)
            .link(true)
            .log_dir(logdir.path()),
    )
    .build()
    .unwrap()
    .start()
    .await
    .unwrap();
    let limit = Duration::from_secs(chime_protocol::link::IDLE_TIMEOUT_SECS) + WAIT;
    let again = wait_for(limit, || (accepted.load(Ordering::SeqCst) >= 2).then_some(())).await;
    assert!(again.is_some(), "the silent link was given up and dialed again");
    server.abort();
    handle.shutdown().await;
}
