//! Alarm receivers on 127.0.0.1, one per chat vendor and one for Chime's own signed webhook:
//! real HTTP servers that check each request as the vendor's published rules say (URL token,
//! signature, payload shape) and answer as the vendor does, so a test learns whether a real
//! DingTalk, Feishu/Lark, WeCom, Slack or Teams endpoint would have shown the alarm.
//!
//! Each receiver records every request (headers, query, raw body, parsed JSON, whether its
//! signature verified, the answer given) and can be told to answer 500 a number of times, to
//! hang (read the request and never answer), or to be down: its port stays reserved (bound,
//! not listening, so a connection is refused) until [`Receiver::up`], and [`Receiver::down`]
//! takes it down again on the same port, dropping open connections too.
//!
//! The vendors' rules checked here:
//! - DingTalk custom robot, "security settings: signature" (加签): query `timestamp` (ms) and
//!   `sign` = urlEncode(Base64(HmacSHA256(key = secret, data = timestamp + "\n" + secret))),
//!   timestamp within one hour of now; `access_token` in the query; `msgtype` text, markdown,
//!   link, actionCard or feedCard with the fields that type requires. Answers HTTP 200 with
//!   `errcode` 0, or 310000 for a bad signature, 300005 for an unknown token, 40035 for a
//!   missing field, 40008 for an unknown message type.
//! - Feishu/Lark custom bot, "signature verification" (签名校验): body `timestamp` (seconds, a
//!   string) and `sign` = Base64(HmacSHA256(key = timestamp + "\n" + secret, data = empty)),
//!   timestamp within one hour; the token in the path `/open-apis/bot/v2/hook/{token}`;
//!   `msg_type` text, post, image, share_chat or interactive with its `content` / `card`.
//!   Answers HTTP 200 with `code` 0, or 19021 (signature or timestamp), 19001 (token),
//!   19002 (parameters).
//! - WeCom group robot: `key` in the query of `/cgi-bin/webhook/send`; `msgtype` text
//!   (`text.content` at most 2048 bytes), markdown (`markdown.content` at most 4096 bytes) and
//!   the other documented types. Answers `errcode` 0, or 93000 (bad key), 40008 (message
//!   type), 44004 (empty content), 40058 (content too long).
//! - Slack incoming webhook (`/services/T…/B…/{token}`): JSON with `text` and/or `blocks`;
//!   answers 200 `ok`, 400 `invalid_payload`, 400 `no_text`, 400 `invalid_blocks`, 404
//!   `no_service` for an unknown token.
//! - Microsoft Teams Workflows, trigger "When a Teams webhook request is received" (a Power
//!   Automate URL with `sig` in its query): body `{"type":"message","attachments":[{
//!   "contentType":"application/vnd.microsoft.card.adaptive","content":{AdaptiveCard}}]}`, the
//!   card with `"type":"AdaptiveCard"`, a `version` and a `body` array; answers 202 Accepted,
//!   400 for a malformed message or card, 401 for a wrong `sig`.
//! - Chime's webhook with a secret: headers `X-Chime-Timestamp` (unix ms) and
//!   `X-Chime-Signature: sha256=<lower-hex HMAC-SHA256(key = secret, timestamp + "." + raw
//!   body)>`, the timestamp within five minutes; answers 200, or 401 on a bad signature.

use base64::Engine as _;
use bytes::Bytes;
use hmac::{Hmac, Mac};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Request as HttpRequest, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use sha2::Sha256;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Which vendor a receiver plays, with the signing secret it expects (`None`: the robot has
/// no signature set up, as a vendor allows, and signature fields are ignored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Vendor {
    DingTalk { secret: Option<String> },
    Feishu { secret: Option<String> },
    WeCom,
    Slack,
    Teams,
    Webhook { secret: Option<String> },
}

impl Vendor {
    /// The channel kind of Chime's REST API for this vendor.
    pub fn kind(&self) -> &'static str {
        match self {
            Vendor::DingTalk { .. } => "dingtalk",
            Vendor::Feishu { .. } => "feishu",
            Vendor::WeCom => "wecom",
            Vendor::Slack => "slack",
            Vendor::Teams => "teams",
            Vendor::Webhook { .. } => "webhook",
        }
    }

    /// The secret the receiver checks signatures with.
    pub fn secret(&self) -> Option<&str> {
        match self {
            Vendor::DingTalk { secret } | Vendor::Feishu { secret } | Vendor::Webhook { secret } => secret.as_deref(),
            _ => None,
        }
    }
}

/// How a receiver treats requests, before the vendor's own checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// Checks and answers as the vendor does.
    Normal,
    /// Answers HTTP 500 to the first `n` requests (counted from the start), then as `Normal`.
    FailFirst(usize),
    /// Reads and records each request, then never answers (the connection stays open until
    /// the client gives up or the receiver goes down).
    Hang,
    /// Starts with its port reserved but not listening (connections are refused) until
    /// [`Receiver::up`]; then as `Normal`.
    Down,
}

/// One request as the receiver saw it, with the answer it gave.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// The raw query string (without `?`), as sent.
    pub raw_query: String,
    /// The query's parameters, decoded as a form (`%XX` and `+` as a space), as the vendors'
    /// servers decode them.
    pub query: Vec<(String, String)>,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The body parsed as JSON, when it is JSON.
    pub json: Option<Value>,
    /// `Some(true)` when the signature verified, `Some(false)` when it was missing or wrong,
    /// `None` when the receiver has no secret. Checked even for requests answered 500 or left
    /// hanging.
    pub verified: Option<bool>,
    /// The HTTP status answered; 0 for a request left hanging.
    pub status: u16,
    /// The body answered.
    pub answer: String,
    /// True when the answer is the vendor's success (2xx, and `errcode`/`code` 0 where the
    /// vendor has one).
    pub accepted: bool,
    /// Why the vendor refused it, when it did.
    pub refusal: Option<String>,
    /// When it arrived, epoch ms.
    pub at_ms: i64,
}

impl Recorded {
    /// A header's value (name in any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(k, _)| *k == name).map(|(_, v)| v.as_str())
    }

    /// A query parameter, decoded.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The body as text (lossy).
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Every string value of the JSON body, joined by newlines: the message's visible text,
    /// whatever the vendor's nesting (markdown, card elements, blocks).
    pub fn text(&self) -> String {
        let mut out = Vec::new();
        if let Some(v) = &self.json {
            collect_strings(v, &mut out);
        }
        out.join("\n")
    }
}

fn collect_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => {
            out.push(s.clone());
            // Feishu's `content` and `card` may themselves be JSON text.
            if let Ok(inner @ (Value::Object(_) | Value::Array(_))) = serde_json::from_str::<Value>(s) {
                collect_strings(&inner, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        Value::Object(m) => m.values().for_each(|x| collect_strings(x, out)),
        _ => {}
    }
}

struct Shared {
    vendor: Vendor,
    /// The URL's own secret part (token, key, `sig`).
    token: String,
    behaviour: Mutex<Behaviour>,
    /// Requests counted by [`Behaviour::FailFirst`].
    seen: Mutex<usize>,
    requests: Mutex<Vec<Recorded>>,
    /// A fixed "now" (epoch ms) for the signature windows, for tests with fixed timestamps.
    clock: Mutex<Option<i64>>,
}

/// The server's state: listening (its stop token and accept task) or down (the port held by
/// a bound socket that does not listen).
enum Serving {
    Up {
        stop: CancellationToken,
        task: tokio::task::JoinHandle<()>,
    },
    Down {
        reserved: tokio::net::TcpSocket,
    },
}

/// A vendor's endpoint on 127.0.0.1; stops with the test (drop).
pub struct Receiver {
    shared: Arc<Shared>,
    port: u16,
    serving: tokio::sync::Mutex<Option<Serving>>,
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn reserve(port: u16) -> tokio::net::TcpSocket {
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    // The same port again right after its listener closed, its connections in TIME_WAIT.
    socket.set_reuseaddr(true).expect("SO_REUSEADDR");
    socket
        .bind(SocketAddr::from(([127, 0, 0, 1], port)))
        .unwrap_or_else(|e| panic!("binding 127.0.0.1:{port}: {e}"));
    socket
}

impl Receiver {
    /// Starts a receiver playing `vendor`; listening unless `behaviour` is [`Behaviour::Down`].
    pub async fn start(vendor: Vendor, behaviour: Behaviour) -> Receiver {
        let token = format!("{:016x}{:016x}", rand::random::<u64>(), rand::random::<u64>());
        let socket = reserve(0);
        let port = socket.local_addr().expect("a bound address").port();
        let shared = Arc::new(Shared {
            vendor,
            token,
            behaviour: Mutex::new(behaviour),
            seen: Mutex::new(0),
            requests: Mutex::new(Vec::new()),
            clock: Mutex::new(None),
        });
        let receiver = Receiver {
            shared,
            port,
            serving: tokio::sync::Mutex::new(Some(Serving::Down { reserved: socket })),
        };
        if behaviour != Behaviour::Down {
            receiver.up().await;
        }
        receiver
    }

    /// Its port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The vendor it plays.
    pub fn vendor(&self) -> &Vendor {
        &self.shared.vendor
    }

    /// The secret part of its URL (DingTalk's `access_token`, Feishu's and Slack's path token,
    /// WeCom's `key`, Teams' `sig`, the webhook's path token): what a channel answer must never
    /// show.
    pub fn token(&self) -> &str {
        &self.shared.token
    }

    /// `http://127.0.0.1:{port}`: what a redacted URL may show.
    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The URL to configure, shaped like the vendor's own (token included).
    pub fn url(&self) -> String {
        let (origin, t) = (self.origin(), &self.shared.token);
        match self.shared.vendor {
            Vendor::DingTalk { .. } => format!("{origin}/robot/send?access_token={t}"),
            Vendor::Feishu { .. } => format!("{origin}/open-apis/bot/v2/hook/{t}"),
            Vendor::WeCom => format!("{origin}/cgi-bin/webhook/send?key={t}"),
            Vendor::Slack => format!("{origin}/services/T0CHIME01/B0CHIME02/{t}"),
            Vendor::Teams => format!(
                "{origin}/workflows/4f1c2d3e5a6b7c8d/triggers/manual/paths/invoke\
                 ?api-version=2016-06-01&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig={t}"
            ),
            Vendor::Webhook { .. } => format!("{origin}/hooks/{t}"),
        }
    }

    /// The same URL with a wrong token: a receiver that does not know it.
    pub fn url_with_wrong_token(&self) -> String {
        self.url()
            .replace(&self.shared.token, "0000000000000000ffffffffffffffff")
    }

    /// Changes how the next requests are treated.
    pub fn set_behaviour(&self, behaviour: Behaviour) {
        *self.shared.behaviour.lock().unwrap() = behaviour;
        *self.shared.seen.lock().unwrap() = 0;
    }

    /// Fixes "now" for the signature windows (`None`: the real clock).
    pub fn set_clock(&self, now_ms: Option<i64>) {
        *self.shared.clock.lock().unwrap() = now_ms;
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// The requests answered as the vendor's success.
    pub fn accepted(&self) -> Vec<Recorded> {
        self.requests().into_iter().filter(|r| r.accepted).collect()
    }

    /// How many requests carried a signature that verified.
    pub fn verified_count(&self) -> usize {
        self.requests().iter().filter(|r| r.verified == Some(true)).count()
    }

    /// How many requests were answered as the vendor's success.
    pub fn accepted_count(&self) -> usize {
        self.requests().iter().filter(|r| r.accepted).count()
    }

    /// Waits until at least `n` requests arrived; returns them all. Panics after `secs`.
    pub async fn wait_requests(&self, n: usize, secs: u64) -> Vec<Recorded> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let all = self.requests();
            if all.len() >= n {
                return all;
            }
            assert!(
                Instant::now() < deadline,
                "{} receiver: {} request(s) after {secs} s, expected {n}: {all:#?}",
                self.shared.vendor.kind(),
                all.len()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until at least `n` requests were accepted; returns the accepted ones.
    pub async fn wait_accepted(&self, n: usize, secs: u64) -> Vec<Recorded> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let ok = self.accepted();
            if ok.len() >= n {
                return ok;
            }
            assert!(
                Instant::now() < deadline,
                "{} receiver: {} accepted request(s) after {secs} s, expected {n}; all: {:#?}",
                self.shared.vendor.kind(),
                ok.len(),
                self.requests()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Starts listening on its port (no-op when it already listens).
    pub async fn up(&self) {
        let mut serving = self.serving.lock().await;
        if matches!(*serving, Some(Serving::Up { .. })) {
            return;
        }
        // The socket that held the port listens now: no moment where another can take it.
        let socket = match serving.take() {
            Some(Serving::Down { reserved }) => reserved,
            _ => reserve(self.port),
        };
        let listener = socket.listen(1024).expect("listen");
        let stop = CancellationToken::new();
        let task = tokio::spawn(accept_loop(listener, self.shared.clone(), stop.clone()));
        *serving = Some(Serving::Up { stop, task });
    }

    /// Stops listening and drops every open connection (a hanging request's too); the port
    /// stays reserved, refusing connections, until [`Receiver::up`].
    pub async fn down(&self) {
        let mut serving = self.serving.lock().await;
        if let Some(Serving::Up { stop, task }) = serving.take() {
            stop.cancel();
            // The listener must be closed before the port is bound again.
            let _ = task.await;
        }
        *serving = Some(Serving::Down {
            reserved: reserve(self.port),
        });
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Ok(mut serving) = self.serving.try_lock() {
            if let Some(Serving::Up { stop, .. }) = serving.take() {
                stop.cancel();
            }
        }
    }
}

async fn accept_loop(listener: tokio::net::TcpListener, shared: Arc<Shared>, stop: CancellationToken) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let stream = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => continue,
            },
        };
        let (shared, stop) = (shared.clone(), stop.clone());
        connections.spawn(async move {
            let for_requests = stop.clone();
            let service = hyper::service::service_fn(move |req| {
                let (shared, stop) = (shared.clone(), for_requests.clone());
                async move { handle(shared, stop, req).await }
            });
            let conn = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = conn => {}
            }
        });
    }
    drop(listener);
    // Every connection ends with the receiver: their tasks see `stop` and drop their streams.
    while connections.join_next().await.is_some() {}
}

/// What the vendor answers.
struct Answer {
    status: u16,
    body: String,
    content_type: &'static str,
    accepted: bool,
    refusal: Option<String>,
}

impl Answer {
    fn json(status: u16, body: Value, accepted: bool, refusal: Option<String>) -> Answer {
        Answer {
            status,
            body: body.to_string(),
            content_type: "application/json; charset=utf-8",
            accepted,
            refusal,
        }
    }

    fn text(status: u16, body: &str, accepted: bool) -> Answer {
        Answer {
            status,
            body: body.to_owned(),
            content_type: "text/html",
            accepted,
            refusal: (!accepted).then(|| body.to_owned()),
        }
    }
}

async fn handle(
    shared: Arc<Shared>,
    stop: CancellationToken,
    req: HttpRequest<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (parts, body) = req.into_parts();
    // Bounded: no test sends more than a few kB; a vendor refuses large bodies too.
    let body = match Limited::new(body, 1 << 20).collect().await {
        Ok(b) => b.to_bytes().to_vec(),
        Err(_) => Vec::new(),
    };
    let raw_query = parts.uri.query().unwrap_or("").to_owned();
    let query: Vec<(String, String)> = form_urlencoded::parse(raw_query.as_bytes()).into_owned().collect();
    let headers: Vec<(String, String)> = parts
        .headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let mut rec = Recorded {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        raw_query,
        query,
        headers,
        json: serde_json::from_slice(&body).ok(),
        body,
        verified: None,
        status: 0,
        answer: String::new(),
        accepted: false,
        refusal: None,
        at_ms: now_ms(),
    };
    let now = shared.clock.lock().unwrap().unwrap_or_else(now_ms);
    let (verified, vendor_answer) = judge(&shared.vendor, &shared.token, &rec, now);
    rec.verified = verified;
    let behaviour = *shared.behaviour.lock().unwrap();
    let nth = {
        let mut seen = shared.seen.lock().unwrap();
        *seen += 1;
        *seen
    };
    let answer = match behaviour {
        Behaviour::FailFirst(n) if nth <= n => Answer::text(500, "Internal Server Error", false),
        Behaviour::Hang => {
            rec.answer = "(no answer: hanging)".to_owned();
            shared.requests.lock().unwrap().push(rec);
            stop.cancelled().await;
            // Unreachable in practice: the connection task is dropped with the receiver.
            return Ok(Response::new(Full::new(Bytes::new())));
        }
        _ => vendor_answer,
    };
    rec.status = answer.status;
    rec.answer = answer.body.clone();
    rec.accepted = answer.accepted;
    rec.refusal = answer.refusal.clone();
    shared.requests.lock().unwrap().push(rec);
    let mut resp = Response::new(Full::new(Bytes::from(answer.body)));
    *resp.status_mut() = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(answer.content_type),
    );
    Ok(resp)
}

/// The vendor's verdict on a request: whether its signature verified, and the answer.
fn judge(vendor: &Vendor, token: &str, r: &Recorded, now: i64) -> (Option<bool>, Answer) {
    match vendor {
        Vendor::DingTalk { secret } => dingtalk(secret.as_deref(), token, r, now),
        Vendor::Feishu { secret } => feishu(secret.as_deref(), token, r, now),
        Vendor::WeCom => (None, wecom(token, r)),
        Vendor::Slack => (None, slack(token, r)),
        Vendor::Teams => (None, teams(token, r)),
        Vendor::Webhook { secret } => webhook(secret.as_deref(), token, r, now),
    }
}

fn is_json_content_type(r: &Recorded) -> bool {
    r.header("content-type")
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("application/json")
        })
        .unwrap_or(false)
}

fn nonempty_str(v: &Value, path: &[&str]) -> bool {
    let mut cur = v;
    for p in path {
        cur = &cur[*p];
    }
    cur.as_str().is_some_and(|s| !s.is_empty())
}

// ---- DingTalk custom robot -------------------------------------------------------------

fn ding_err(code: i64, msg: &str) -> Answer {
    Answer::json(
        200,
        json!({"errcode": code, "errmsg": msg}),
        false,
        Some(format!("{code} {msg}")),
    )
}

fn dingtalk(secret: Option<&str>, token: &str, r: &Recorded, now: i64) -> (Option<bool>, Answer) {
    if r.method != "POST" || r.path != "/robot/send" {
        return (None, ding_err(404, "请求的URI地址不存在"));
    }
    if r.param("access_token") != Some(token) {
        return (None, ding_err(300005, "token is not exist"));
    }
    // Security setting "signature": sign = urlEncode(Base64(HmacSHA256(secret,
    // timestamp + "\n" + secret))), timestamp in ms within one hour of the server's time.
    // The query is decoded as a form: a Base64 `+` sent without URL encoding arrives as a
    // space and no longer matches, as at DingTalk.
    let verified = secret.map(|secret| {
        let Some(ts) = r.param("timestamp").and_then(|t| t.parse::<i64>().ok()) else {
            return false;
        };
        let Some(sign) = r.param("sign") else { return false };
        (now - ts).abs() <= 3_600_000 && constant_eq(sign.as_bytes(), dingtalk_sign(secret, ts).as_bytes())
    });
    if verified == Some(false) {
        return (
            verified,
            ding_err(
                310000,
                "sign not match, more: [https://ding-doc.dingtalk.com/doc#/serverapi2/qf2nxq]",
            ),
        );
    }
    if !is_json_content_type(r) {
        return (verified, ding_err(43004, "无效的HTTP HEADER Content-Type"));
    }
    let Some(body) = r.json.as_ref().filter(|v| v.is_object()) else {
        return (verified, ding_err(40035, "缺少参数 json"));
    };
    let missing = match body["msgtype"].as_str() {
        None => Some("msgtype"),
        Some("text") => (!nonempty_str(body, &["text", "content"])).then_some("text.content"),
        Some("markdown") => {
            if !nonempty_str(body, &["markdown", "title"]) {
                Some("markdown.title")
            } else if !nonempty_str(body, &["markdown", "text"]) {
                Some("markdown.text")
            } else {
                None
            }
        }
        Some("link") => ["title", "text", "messageUrl"]
            .into_iter()
            .find(|f| !nonempty_str(body, &["link", f])),
        Some("actionCard") => {
            let card = &body["actionCard"];
            if !nonempty_str(card, &["title"]) {
                Some("actionCard.title")
            } else if !nonempty_str(card, &["text"]) {
                Some("actionCard.text")
            } else if !single_button(card) && !several_buttons(card) {
                Some("actionCard.singleTitle/singleURL or actionCard.btns")
            } else {
                None
            }
        }
        Some("feedCard") => {
            let ok = body["feedCard"]["links"].as_array().is_some_and(|links| {
                !links.is_empty()
                    && links.iter().all(|l| {
                        nonempty_str(l, &["title"]) && nonempty_str(l, &["messageURL"]) && nonempty_str(l, &["picURL"])
                    })
            });
            (!ok).then_some("feedCard.links")
        }
        Some(_) => return (verified, ding_err(40008, "不合法的消息类型")),
    };
    match missing {
        Some(field) => (verified, ding_err(40035, &format!("缺少参数 {field}"))),
        None => (
            verified,
            Answer::json(200, json!({"errcode": 0, "errmsg": "ok"}), true, None),
        ),
    }
}

/// An actionCard's one whole-card button.
fn single_button(card: &Value) -> bool {
    nonempty_str(card, &["singleTitle"]) && nonempty_str(card, &["singleURL"])
}

/// An actionCard's own buttons.
fn several_buttons(card: &Value) -> bool {
    card["btns"].as_array().map(|b| !b.is_empty()).unwrap_or(false)
}

// ---- Feishu / Lark custom bot ----------------------------------------------------------

fn feishu_err(code: i64, msg: &str) -> Answer {
    Answer::json(
        200,
        json!({"code": code, "msg": msg, "data": {}}),
        false,
        Some(format!("{code} {msg}")),
    )
}

fn feishu(secret: Option<&str>, token: &str, r: &Recorded, now: i64) -> (Option<bool>, Answer) {
    let Some(path_token) = r.path.strip_prefix("/open-apis/bot/v2/hook/") else {
        return (None, feishu_err(404, "page not found"));
    };
    if r.method != "POST" || path_token != token {
        return (
            None,
            feishu_err(19001, "param invalid: incoming webhook access token invalid"),
        );
    }
    let Some(body) = r.json.as_ref().filter(|v| v.is_object()) else {
        return (None, feishu_err(19002, "params error, body is not json"));
    };
    // Signature verification: sign = Base64(HmacSHA256(key = timestamp + "\n" + secret,
    // data = empty)); timestamp in seconds, a string in the body, within one hour.
    let verified = secret.map(|secret| {
        let Some(ts) = body["timestamp"].as_str().and_then(|t| t.parse::<i64>().ok()) else {
            return false;
        };
        let Some(sign) = body["sign"].as_str() else {
            return false;
        };
        (now / 1000 - ts).abs() <= 3600 && constant_eq(sign.as_bytes(), feishu_sign(secret, ts).as_bytes())
    });
    if verified == Some(false) {
        return (
            verified,
            feishu_err(
                19021,
                "sign match fail or timestamp is not within one hour from current time",
            ),
        );
    }
    // `content` is an object (or its JSON text); `card` likewise for interactive.
    let as_object = |v: &Value| -> Option<Value> {
        match v {
            Value::Object(_) => Some(v.clone()),
            Value::String(s) => serde_json::from_str::<Value>(s).ok().filter(Value::is_object),
            _ => None,
        }
    };
    let content = as_object(&body["content"]);
    let problem = match body["msg_type"].as_str() {
        None => Some("params error, msg_type need"),
        Some("text") => {
            (!content.as_ref().is_some_and(|c| nonempty_str(c, &["text"]))).then_some("params error, content.text need")
        }
        Some("post") => {
            (!content.as_ref().is_some_and(|c| c["post"].is_object())).then_some("params error, content.post need")
        }
        Some("image") => (!content.as_ref().is_some_and(|c| nonempty_str(c, &["image_key"])))
            .then_some("params error, content.image_key need"),
        Some("share_chat") => (!content.as_ref().is_some_and(|c| nonempty_str(c, &["share_chat_id"])))
            .then_some("params error, content.share_chat_id need"),
        Some("interactive") => {
            let card = as_object(&body["card"]).or_else(|| content.as_ref().and_then(|c| as_object(&c["card"])));
            let has_card = card.and_then(|c| c.as_object().map(|m| !m.is_empty())).unwrap_or(false);
            (!has_card).then_some("params error, card need")
        }
        Some(_) => Some("params error, unknown msg_type"),
    };
    match problem {
        Some(msg) => (verified, feishu_err(19002, msg)),
        None => (
            verified,
            Answer::json(200, json!({"code": 0, "msg": "success", "data": {}}), true, None),
        ),
    }
}

// ---- WeCom group robot -----------------------------------------------------------------

fn wecom_err(code: i64, msg: &str) -> Answer {
    Answer::json(
        200,
        json!({"errcode": code, "errmsg": msg}),
        false,
        Some(format!("{code} {msg}")),
    )
}

fn wecom(token: &str, r: &Recorded) -> Answer {
    if r.method != "POST" || r.path != "/cgi-bin/webhook/send" || r.param("key") != Some(token) {
        return wecom_err(93000, "invalid webhook url");
    }
    let Some(body) = r.json.as_ref().filter(|v| v.is_object()) else {
        return wecom_err(40008, "invalid message type");
    };
    // text.content at most 2048 bytes, markdown(.v2).content at most 4096 bytes (UTF-8).
    let content = |field: &str, max: usize| -> Option<Answer> {
        match body[field]["content"].as_str() {
            None | Some("") => Some(wecom_err(44004, "empty content")),
            Some(c) if c.len() > max => Some(wecom_err(40058, &format!("{field}.content exceed max length {max}"))),
            Some(_) => None,
        }
    };
    let refused = match body["msgtype"].as_str() {
        Some("text") => content("text", 2048),
        Some("markdown") | Some("markdown_v2") => content(body["msgtype"].as_str().unwrap_or(""), 4096),
        Some("image") => (!nonempty_str(body, &["image", "base64"]) || !nonempty_str(body, &["image", "md5"]))
            .then(|| wecom_err(44004, "empty content")),
        Some("news") => {
            let has_articles = body["news"]["articles"]
                .as_array()
                .map(|a| !a.is_empty())
                .unwrap_or(false);
            (!has_articles).then(|| wecom_err(44004, "empty content"))
        }
        Some("file") | Some("voice") => {
            let t = body["msgtype"].as_str().unwrap_or("");
            (!nonempty_str(body, &[t, "media_id"])).then(|| wecom_err(44004, "empty content"))
        }
        Some("template_card") => (!body["template_card"].is_object()).then(|| wecom_err(44004, "empty content")),
        _ => Some(wecom_err(40008, "invalid message type")),
    };
    refused.unwrap_or_else(|| Answer::json(200, json!({"errcode": 0, "errmsg": "ok"}), true, None))
}

// ---- Slack incoming webhook ------------------------------------------------------------

fn slack(token: &str, r: &Recorded) -> Answer {
    let expected = format!("/services/T0CHIME01/B0CHIME02/{token}");
    if r.path != expected {
        return Answer::text(404, "no_service", false);
    }
    if r.method != "POST" {
        return Answer::text(405, "invalid_method", false);
    }
    let Some(body) = r.json.as_ref().filter(|v| v.is_object()) else {
        return Answer::text(400, "invalid_payload", false);
    };
    let text = nonempty_str(body, &["text"]);
    let blocks = &body["blocks"];
    if !blocks.is_null() {
        let valid = blocks
            .as_array()
            .is_some_and(|b| b.len() <= 50 && b.iter().all(|block| nonempty_str(block, &["type"])));
        if !valid {
            return Answer::text(400, "invalid_blocks", false);
        }
    }
    let has_blocks = blocks.as_array().is_some_and(|b| !b.is_empty());
    if !text && !has_blocks {
        return Answer::text(400, "no_text", false);
    }
    Answer::text(200, "ok", true)
}

// ---- Microsoft Teams Workflows ---------------------------------------------------------

fn teams_err(status: u16, code: &str, msg: &str) -> Answer {
    Answer::json(
        status,
        json!({"error": {"code": code, "message": msg}}),
        false,
        Some(format!("{code}: {msg}")),
    )
}

fn teams(token: &str, r: &Recorded) -> Answer {
    if !r.path.starts_with("/workflows/") || !r.path.ends_with("/triggers/manual/paths/invoke") {
        return teams_err(404, "NotFound", "workflow not found");
    }
    if r.param("sig") != Some(token) {
        return teams_err(
            401,
            "DirectApiAuthorizationRequired",
            "The request must be authenticated only by Shared Access scheme.",
        );
    }
    if r.method != "POST" {
        return teams_err(405, "MethodNotAllowed", "POST only");
    }
    let Some(body) = r.json.as_ref().filter(|v| v.is_object()) else {
        return teams_err(400, "InvalidRequestContent", "The request content is not valid JSON.");
    };
    if body["type"] != "message" {
        return teams_err(400, "InvalidRequestContent", "type must be \"message\"");
    }
    let Some(attachments) = body["attachments"].as_array().filter(|a| !a.is_empty()) else {
        return teams_err(400, "InvalidRequestContent", "attachments missing");
    };
    for a in attachments {
        if a["contentType"] != "application/vnd.microsoft.card.adaptive" {
            return teams_err(
                400,
                "InvalidRequestContent",
                "contentType must be application/vnd.microsoft.card.adaptive",
            );
        }
        let card = &a["content"];
        if card["type"] != "AdaptiveCard" {
            return teams_err(400, "InvalidRequestContent", "content.type must be AdaptiveCard");
        }
        if !nonempty_str(card, &["version"]) {
            return teams_err(400, "InvalidRequestContent", "content.version missing");
        }
        let body_ok = card["body"]
            .as_array()
            .is_some_and(|b| !b.is_empty() && b.iter().all(|e| nonempty_str(e, &["type"])));
        if !body_ok {
            return teams_err(
                400,
                "InvalidRequestContent",
                "content.body must list elements with a type",
            );
        }
    }
    Answer {
        status: 202,
        body: String::new(),
        content_type: "text/plain",
        accepted: true,
        refusal: None,
    }
}

// ---- Chime's webhook ---------------------------------------------------------------------

fn webhook(secret: Option<&str>, token: &str, r: &Recorded, now: i64) -> (Option<bool>, Answer) {
    if r.path != format!("/hooks/{token}") {
        return (None, Answer::text(404, "not found", false));
    }
    if r.method != "POST" {
        return (None, Answer::text(405, "method not allowed", false));
    }
    // X-Chime-Signature: sha256=<lower hex HMAC-SHA256(secret, timestamp + "." + raw body)>,
    // X-Chime-Timestamp in unix ms; five minutes of clock difference allowed against replays.
    let verified = secret.map(|secret| {
        let Some(ts) = r.header("x-chime-timestamp").and_then(|t| t.parse::<i64>().ok()) else {
            return false;
        };
        let Some(sig) = r.header("x-chime-signature") else {
            return false;
        };
        (now - ts).abs() <= 300_000 && constant_eq(sig.as_bytes(), chime_signature(secret, ts, &r.body).as_bytes())
    });
    if verified == Some(false) {
        return (verified, Answer::text(401, "signature mismatch", false));
    }
    if r.json.is_none() {
        return (verified, Answer::text(400, "body is not JSON", false));
    }
    (verified, Answer::text(200, "ok", true))
}

// ---- The signatures, as the vendors document them ---------------------------------------

fn hmac_sha256(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// HMAC-SHA256 of `data` under `key`, as lower-case hex.
pub fn hmac_sha256_hex(key: &[u8], data: &[u8]) -> String {
    hmac_sha256(key, data).iter().map(|b| format!("{b:02x}")).collect()
}

/// DingTalk's `sign` before URL encoding: Base64(HmacSHA256(key = secret, data = timestamp +
/// "\n" + secret)), `timestamp_ms` in milliseconds.
pub fn dingtalk_sign(secret: &str, timestamp_ms: i64) -> String {
    let mac = hmac_sha256(secret.as_bytes(), format!("{timestamp_ms}\n{secret}").as_bytes());
    base64::engine::general_purpose::STANDARD.encode(mac)
}

/// The query DingTalk's documentation appends to the robot URL: `timestamp=…&sign=…` with the
/// sign URL-encoded.
pub fn dingtalk_query(secret: &str, timestamp_ms: i64) -> String {
    let sign: String = form_urlencoded::byte_serialize(dingtalk_sign(secret, timestamp_ms).as_bytes()).collect();
    format!("timestamp={timestamp_ms}&sign={sign}")
}

/// Feishu's `sign`: Base64(HmacSHA256(key = timestamp + "\n" + secret, data = empty)),
/// `timestamp_s` in seconds.
pub fn feishu_sign(secret: &str, timestamp_s: i64) -> String {
    let mac = hmac_sha256(format!("{timestamp_s}\n{secret}").as_bytes(), b"");
    base64::engine::general_purpose::STANDARD.encode(mac)
}

/// Chime's webhook signature header value: `sha256=` + lower-hex HMAC-SHA256(key = secret,
/// timestamp + "." + raw body).
pub fn chime_signature(secret: &str, timestamp_ms: i64, body: &[u8]) -> String {
    let mut message = format!("{timestamp_ms}.").into_bytes();
    message.extend_from_slice(body);
    format!("sha256={}", hmac_sha256_hex(secret.as_bytes(), &message))
}

fn constant_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
