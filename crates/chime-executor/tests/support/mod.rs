//! Test support: a fake admin that records what executors send it, an HTTP client that speaks
//! to an executor like XXL-JOB's admin does, and polling helpers.
#![allow(dead_code)]

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use chime_executor::{Executor, ExecutorBuilder, ExecutorHandle};
use chime_protocol::{CallbackBatch, HandleCallbackParam, RegistryParam};
use serde_json::{json, Value};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Generous: tests poll for outcomes and never assert on speed.
pub const WAIT: Duration = Duration::from_secs(30);

/// Everything the fake admin received.
#[derive(Default)]
pub struct Recorded {
    /// Every callback item accepted, in arrival order (duplicates included).
    pub callbacks: Vec<HandleCallbackParam>,
    /// Callback requests refused while `accepting` was false.
    pub refused_callback_requests: usize,
    /// Callback requests left unanswered while `hanging` was true.
    pub hung_callback_requests: usize,
    /// Registry bodies, in order.
    pub registry: Vec<RegistryParam>,
    /// registryRemove bodies, in order.
    pub registry_remove: Vec<RegistryParam>,
    /// (path, token header) of every call.
    pub tokens: Vec<(String, Option<String>)>,
    /// Order of events: "registry", "callback:<logId>", "registryRemove".
    pub events: Vec<String>,
}

/// Which XXL-JOB admin a [`FakeAdmin`] plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdminStyle {
    /// XXL-JOB 2.4 (G2): under `/xxl-job-admin`, replies `{"code","msg","content"}` (Jackson,
    /// nulls written out).
    G2,
    /// XXL-JOB 3.4.1–3.4.2 (G3): at the root, replies `{"code","msg","data"}`.
    G3,
}

/// A fake XXL-JOB admin under `/xxl-job-admin` (G2) or at the root (G3).
#[derive(Clone)]
pub struct FakeAdmin {
    pub addr: SocketAddr,
    pub recorded: Arc<Mutex<Recorded>>,
    style: AdminStyle,
    accepting: Arc<AtomicBool>,
    hanging: Arc<AtomicBool>,
}

#[derive(Clone)]
struct AdminState {
    recorded: Arc<Mutex<Recorded>>,
    style: AdminStyle,
    accepting: Arc<AtomicBool>,
    hanging: Arc<AtomicBool>,
}

impl FakeAdmin {
    pub async fn start(accepting: bool) -> FakeAdmin {
        Self::start_on("127.0.0.1:0".parse().unwrap(), accepting).await
    }

    pub async fn start_on(addr: SocketAddr, accepting: bool) -> FakeAdmin {
        Self::start_styled(addr, AdminStyle::G2, accepting).await
    }

    /// A G3 admin (XXL-JOB 3.3–3.4) on a free port.
    pub async fn start_g3(accepting: bool) -> FakeAdmin {
        Self::start_styled("127.0.0.1:0".parse().unwrap(), AdminStyle::G3, accepting).await
    }

    async fn start_styled(addr: SocketAddr, style: AdminStyle, accepting: bool) -> FakeAdmin {
        let recorded = Arc::new(Mutex::new(Recorded::default()));
        let accepting = Arc::new(AtomicBool::new(accepting));
        let hanging = Arc::new(AtomicBool::new(false));
        let state = AdminState {
            recorded: recorded.clone(),
            style,
            accepting: accepting.clone(),
            hanging: hanging.clone(),
        };
        let prefix = match style {
            AdminStyle::G2 => "/xxl-job-admin",
            AdminStyle::G3 => "",
        };
        let app = axum::Router::new()
            .route(&format!("{prefix}/api/registry"), axum::routing::post(registry))
            .route(
                &format!("{prefix}/api/registryRemove"),
                axum::routing::post(registry_remove),
            )
            .route(&format!("{prefix}/api/callback"), axum::routing::post(callback))
            .with_state(state);
        let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        FakeAdmin {
            addr,
            recorded,
            style,
            accepting,
            hanging,
        }
    }

    /// The base address executors are configured with.
    pub fn base(&self) -> String {
        match self.style {
            AdminStyle::G2 => format!("http://{}/xxl-job-admin", self.addr),
            AdminStyle::G3 => format!("http://{}", self.addr),
        }
    }

    pub fn set_accepting(&self, accepting: bool) {
        self.accepting.store(accepting, Ordering::SeqCst);
    }

    /// While set, callback requests are received and never answered (a hung admin).
    pub fn set_hanging(&self, hanging: bool) {
        self.hanging.store(hanging, Ordering::SeqCst);
    }

    pub fn callbacks_for(&self, log_id: i64) -> Vec<HandleCallbackParam> {
        self.recorded
            .lock()
            .unwrap()
            .callbacks
            .iter()
            .filter(|c| c.log_id == log_id)
            .cloned()
            .collect()
    }

    /// Waits for the first callback of `log_id`; returns (code, msg).
    pub async fn result_of(&self, log_id: i64) -> (i32, String) {
        let found = wait_for(WAIT, || {
            let cbs = self.callbacks_for(log_id);
            cbs.first()
                .map(|c| (c.handle_code, c.handle_msg.clone().unwrap_or_default()))
        })
        .await;
        found.unwrap_or_else(|| panic!("no callback for logId {log_id} within {WAIT:?}"))
    }

    pub fn events(&self) -> Vec<String> {
        self.recorded.lock().unwrap().events.clone()
    }
}

fn token(headers: &HeaderMap) -> Option<String> {
    headers
        .get("XXL-JOB-ACCESS-TOKEN")
        .map(|v| v.to_str().unwrap().to_owned())
}

fn reply(style: AdminStyle, code: i32, msg: Option<&str>) -> ([(&'static str, &'static str); 1], String) {
    let body = match style {
        AdminStyle::G2 => json!({"code": code, "msg": msg, "content": null}),
        // xxl-tool's Response, written by Jackson: `success` from its isSuccess() accessor.
        AdminStyle::G3 => json!({"code": code, "msg": msg.unwrap_or("Success"), "data": null, "success": code == 200}),
    };
    ([("content-type", "application/json")], body.to_string())
}

async fn registry(State(s): State<AdminState>, headers: HeaderMap, body: Bytes) -> impl axum::response::IntoResponse {
    let param: RegistryParam = serde_json::from_slice(&body).unwrap();
    let mut r = s.recorded.lock().unwrap();
    r.tokens.push(("registry".into(), token(&headers)));
    r.registry.push(param);
    r.events.push("registry".into());
    reply(s.style, 200, None)
}

async fn registry_remove(
    State(s): State<AdminState>,
    headers: HeaderMap,
    body: Bytes,
) -> impl axum::response::IntoResponse {
    let param: RegistryParam = serde_json::from_slice(&body).unwrap();
    let mut r = s.recorded.lock().unwrap();
    r.tokens.push(("registryRemove".into(), token(&headers)));
    r.registry_remove.push(param);
    r.events.push("registryRemove".into());
    reply(s.style, 200, None)
}

async fn callback(State(s): State<AdminState>, headers: HeaderMap, body: Bytes) -> impl axum::response::IntoResponse {
    // The executor must send XXL-JOB 2.4's bare array with `logDateTim`.
    let raw: Value = serde_json::from_slice(&body).unwrap();
    assert!(raw.is_array(), "callback body must be a bare array: {raw}");
    for item in raw.as_array().unwrap() {
        assert!(item.get("logDateTim").is_some(), "G2 key logDateTim missing: {item}");
    }
    let batch: CallbackBatch = serde_json::from_slice(&body).unwrap();
    if s.hanging.load(Ordering::SeqCst) {
        s.recorded.lock().unwrap().hung_callback_requests += 1;
        std::future::pending::<()>().await;
    }
    let mut r = s.recorded.lock().unwrap();
    r.tokens.push(("callback".into(), token(&headers)));
    if !s.accepting.load(Ordering::SeqCst) {
        r.refused_callback_requests += 1;
        return reply(s.style, 500, Some("admin refuses callbacks (test)"));
    }
    for item in batch.0 {
        r.events.push(format!("callback:{}", item.log_id));
        r.callbacks.push(item);
    }
    reply(s.style, 200, None)
}

/// Polls `f` every 20 ms until it returns `Some` or `timeout` passes.
pub async fn wait_for<T>(timeout: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Like [`wait_for`] with an async probe.
pub async fn wait_for_async<T, F, Fut>(timeout: Duration, mut f: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(v) = f().await {
            return Some(v);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Calls an executor the way XXL-JOB's admin does.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    pub base: String,
    pub token: Option<String>,
}

/// A reply: HTTP status, content type and parsed JSON body.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub content_type: String,
    pub body: Value,
}

impl Reply {
    pub fn code(&self) -> i64 {
        self.body["code"].as_i64().unwrap_or(-1)
    }

    pub fn msg(&self) -> String {
        self.body["msg"].as_str().unwrap_or_default().to_owned()
    }
}

impl Client {
    pub fn new(addr: SocketAddr, token: Option<&str>) -> Client {
        Client {
            http: reqwest::Client::new(),
            base: format!("http://{addr}"),
            token: token.map(str::to_owned),
        }
    }

    pub async fn request(&self, method: reqwest::Method, path: &str, body: String) -> Reply {
        self.request_with(
            method,
            path,
            &[("Content-Type", "application/json;charset=UTF-8")],
            body,
        )
        .await
    }

    /// A POST with exactly these headers (plus the token, if the client has one): no
    /// Content-Type unless one is among them.
    pub async fn post_with(&self, path: &str, headers: &[(&str, &str)], body: impl Into<String>) -> Reply {
        self.request_with(reqwest::Method::POST, path, headers, body.into())
            .await
    }

    async fn request_with(&self, method: reqwest::Method, path: &str, headers: &[(&str, &str)], body: String) -> Reply {
        let mut req = self.http.request(method, format!("{}{}", self.base, path)).body(body);
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        if let Some(t) = &self.token {
            req = req.header("XXL-JOB-ACCESS-TOKEN", t);
        }
        let resp = req.send().await.expect("executor answers");
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        let bytes = resp.bytes().await.unwrap();
        let body = serde_json::from_slice(&bytes)
            .unwrap_or_else(|e| panic!("reply is not JSON ({e}): {}", String::from_utf8_lossy(&bytes)));
        Reply {
            status,
            content_type,
            body,
        }
    }

    pub async fn post(&self, path: &str, body: impl Into<String>) -> Reply {
        self.request(reqwest::Method::POST, path, body.into()).await
    }

    pub async fn run(&self, trigger: Value) -> Reply {
        self.post("/run", trigger.to_string()).await
    }

    /// A page of a run's log, as both generations of admins read it: G2 from `content`, G3
    /// from `data` (they must be the same page).
    pub async fn log(&self, log_id: i64, log_date_time: i64, from: i64) -> Value {
        let reply = self
            .post(
                "/log",
                json!({"logDateTim": log_date_time, "logId": log_id, "fromLineNum": from}).to_string(),
            )
            .await;
        assert_eq!(reply.code(), 200, "{:?}", reply.body);
        assert!(reply.body["content"].is_object(), "G2 payload: {:?}", reply.body);
        assert_eq!(reply.body["content"], reply.body["data"], "G3 payload");
        reply.body["content"].clone()
    }
}

/// A trigger as XXL-JOB's admin sends it.
pub fn trigger(job_id: i64, log_id: i64, handler: &str, param: &str) -> Value {
    json!({
        "jobId": job_id,
        "executorHandler": handler,
        "executorParams": param,
        "executorBlockStrategy": "SERIAL_EXECUTION",
        "executorTimeout": 0,
        "logId": log_id,
        "logDateTime": now_ms(),
        "glueType": "BEAN",
        "glueSource": "",
        "glueUpdatetime": 1_586_629_003_727i64,
        "broadcastIndex": 0,
        "broadcastTotal": 1
    })
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// A running in-process executor with its log directory.
pub struct TestExecutor {
    pub handle: ExecutorHandle,
    pub client: Client,
    pub logdir: tempfile::TempDir,
}

/// Starts an executor on an ephemeral loopback port with the demo handlers, talking to `admin`.
pub async fn start_executor(
    admin: &FakeAdmin,
    token: Option<&str>,
    configure: impl FnOnce(ExecutorBuilder) -> ExecutorBuilder,
) -> TestExecutor {
    let logdir = tempfile::tempdir().unwrap();
    let (handle, client) = start_executor_in(admin, token, logdir.path(), configure).await;
    TestExecutor { handle, client, logdir }
}

/// Like [`start_executor`], on a log directory the caller owns (to restart on it).
pub async fn start_executor_in(
    admin: &FakeAdmin,
    token: Option<&str>,
    logdir: &std::path::Path,
    configure: impl FnOnce(ExecutorBuilder) -> ExecutorBuilder,
) -> (ExecutorHandle, Client) {
    let mut builder = Executor::builder()
        .admin_addresses([admin.base()])
        .app_name("chime-test")
        .listen("127.0.0.1:0".parse().unwrap())
        .log_dir(logdir)
        .callback_retry_interval(Duration::from_millis(200))
        .shutdown_grace(Duration::from_secs(10));
    if let Some(t) = token {
        builder = builder.access_token(t);
    }
    builder = chime_executor::demo::register_demo_handlers(builder);
    let handle = configure(builder).build().unwrap().start().await.unwrap();
    let client = Client::new(handle.local_addr().expect("an executor in HTTP mode listens"), token);
    (handle, client)
}

/// Is a process (or process group leader) with this pid alive (not a zombie)?
pub fn process_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            // Field 3 is the state; Z = zombie (dead, not yet reaped).
            let after = stat
                .rsplit_once(')')
                .map(|(_, rest)| rest.trim().to_owned())
                .unwrap_or_default();
            !after.starts_with('Z')
        }
        Err(_) => false,
    }
}
