//! The executor's HTTP endpoints, `POST /run`, `/beat`, `/idleBeat`, `/kill`, `/log`, with the
//! Java executor's dispatch order and messages.
//!
//! Everything goes through one fallback handler rather than axum routes: XXL-JOB answers a
//! wrong method, a wrong token and an unknown path with specific messages in a specific order
//! (method, then token, then path), always with HTTP 200 — its clients discard the body of any
//! other status, which would hide the reason from the user.
//!
//! Only scheduling centers are served, never browsers. A web page can make the browser it is
//! open in send a "simple" cross-origin POST — `text/plain` body, no preflight — to any
//! address the browser reaches, loopback included; to an executor without a token, such a
//! request would look like any trigger. Every admin (XXL-JOB's, Chime's) sends
//! `Content-Type: application/json;charset=UTF-8` and never `Origin` or `Sec-Fetch-Site`,
//! which browsers add and pages cannot remove, so after the method check any request with
//! those headers, or with a body that is not declared JSON, is refused (HTTP 200, code 500,
//! as every refusal here) before its body is read.

use crate::handler::Handler;
use crate::runner::{JobKind, Runners};
use crate::script;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;
use chime_protocol::messages::{self, ACCESS_TOKEN_HEADER};
use chime_protocol::{
    paths, GlueType, IdleBeatParam, KillParam, LogParam, LogResult, ReturnT, TriggerParam, SUCCESS_CODE,
};
use serde::de::DeserializeOwned;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// Largest request body accepted (XXL-JOB's limit; a trigger carries the whole script).
const MAX_BODY_BYTES: usize = 5 * 1024 * 1024;

pub(crate) struct ServerState {
    pub(crate) runners: Arc<Runners>,
    pub(crate) handlers: Arc<HashMap<String, Handler>>,
    /// The configured token; `None` (blank) disables the check, as in XXL-JOB.
    pub(crate) token: Option<String>,
    pub(crate) scripts_enabled: bool,
    pub(crate) glue_dir: PathBuf,
}

pub(crate) fn router(state: Arc<ServerState>) -> axum::Router {
    axum::Router::new().fallback(dispatch).with_state(state)
}

async fn dispatch(State(state): State<Arc<ServerState>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let json = if parts.method != Method::POST {
        fail(messages::METHOD_NOT_SUPPORTED)
    } else if let Some(msg) = from_a_browser(&parts.headers) {
        fail(msg)
    } else if !token_ok(&state, parts.headers.get(ACCESS_TOKEN_HEADER)) {
        fail(messages::ACCESS_TOKEN_WRONG)
    } else if let Err(msg) = json_content_type(parts.headers.get(header::CONTENT_TYPE)) {
        fail(msg)
    } else {
        match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
            Ok(bytes) => route(&state, parts.uri.path(), &bytes).await,
            Err(err) => fail(format!(
                "request error: cannot read the body (limit {MAX_BODY_BYTES} bytes): {err}"
            )),
        }
    };
    let mut response = Response::new(Body::from(json));
    *response.status_mut() = StatusCode::OK;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// Why a request looks sent by a web browser (`None`: it does not). `Origin` is added by
/// browsers to every cross-origin request and to every POST; `Sec-Fetch-Site` by current
/// browsers to every request. Neither can be removed by a page, and no admin sends them.
fn from_a_browser(headers: &HeaderMap) -> Option<&'static str> {
    if headers.contains_key(header::ORIGIN) {
        Some(
            "request refused: it carries an Origin header, so a web browser sent it; \
             only a scheduling center may call this executor",
        )
    } else if headers.contains_key(SEC_FETCH_SITE) {
        Some(
            "request refused: it carries a Sec-Fetch-Site header, so a web browser sent it; \
             only a scheduling center may call this executor",
        )
    } else {
        None
    }
}

/// `Sec-Fetch-Site` (not among the `http` crate's constants).
const SEC_FETCH_SITE: &str = "sec-fetch-site";

/// Longest piece of a wrong `Content-Type` quoted back in the refusal.
const MAX_QUOTED_CONTENT_TYPE: usize = 100;

/// Accepts `application/json` with any parameters (`;charset=UTF-8`, as XXL-JOB's and Chime's
/// admins send it), compared without regard to case as media types are. A missing header is
/// refused too: a browser sends a `Blob` body without one, and no admin omits it.
fn json_content_type(value: Option<&HeaderValue>) -> Result<(), String> {
    let Some(value) = value else {
        return Err("request refused: no Content-Type; the body must be sent as application/json".to_owned());
    };
    let text = String::from_utf8_lossy(value.as_bytes());
    let essence = text.split(';').next().unwrap_or_default().trim();
    if essence.eq_ignore_ascii_case("application/json") {
        Ok(())
    } else {
        let quoted: String = text.chars().take(MAX_QUOTED_CONTENT_TYPE).collect();
        Err(format!(
            "request refused: Content-Type is '{quoted}'; the body must be sent as application/json"
        ))
    }
}

fn token_ok(state: &ServerState, header: Option<&HeaderValue>) -> bool {
    match &state.token {
        None => true,
        // Constant time: the token guards remote code execution (script jobs), so it must
        // not leak through response timing byte by byte.
        Some(expected) => header.is_some_and(|got| bool::from(got.as_bytes().ct_eq(expected.as_bytes()))),
    }
}

async fn route(state: &Arc<ServerState>, path: &str, body: &[u8]) -> String {
    match path {
        paths::BEAT => ReturnT::<String>::success().to_executor_json(),
        paths::IDLE_BEAT => match parse::<IdleBeatParam>(body) {
            Ok(p) if state.runners.is_busy(p.job_id) => fail(messages::JOB_THREAD_BUSY),
            Ok(_) => ReturnT::<String>::success().to_executor_json(),
            Err(msg) => fail(msg),
        },
        paths::RUN => match run(state, body).await {
            Ok(()) => ReturnT::<String>::success().to_executor_json(),
            Err(msg) => fail(msg),
        },
        paths::KILL => match parse::<KillParam>(body) {
            Ok(p) if state.runners.kill(p.job_id) => ReturnT::<String>::success().to_executor_json(),
            Ok(_) => ReturnT::<String>::success_msg(messages::JOB_THREAD_ALREADY_KILLED).to_executor_json(),
            Err(msg) => fail(msg),
        },
        paths::LOG => match parse::<LogParam>(body) {
            Ok(p) => log_reply(&state.runners.read_log(p.log_date_tim, p.log_id, p.from_line_num).await),
            Err(msg) => fail(msg),
        },
        "" => fail(messages::URI_MAPPING_EMPTY),
        other => fail(messages::uri_not_found(other)),
    }
}

async fn run(state: &Arc<ServerState>, body: &[u8]) -> Result<(), String> {
    // Well-formed triggers parse directly; only a failure pays for a closer look.
    let trigger = match serde_json::from_slice::<TriggerParam>(body) {
        Ok(trigger) => trigger,
        Err(err) => return Err(explain_bad_trigger(body, err)),
    };
    // When run logs cannot be written as fast as triggers come, accept at the disk's pace.
    state.runners.logs().room().await;
    submit(state, trigger)
}

/// Why a `/run` body did not parse, in XXL-JOB's words where it has some.
fn explain_bad_trigger(body: &[u8], err: serde_json::Error) -> String {
    let value: serde_json::Value = match serde_json::from_slice(body) {
        Ok(value) => value,
        Err(e) => return format!("request error: the body is not valid JSON: {e}"),
    };
    if !value.is_object() {
        return "request error: the body must be a JSON object (a TriggerParam)".to_owned();
    }
    // XXL-JOB's own message for an unknown glue type, before the generic parse error.
    match value.get("glueType") {
        None | Some(serde_json::Value::Null) => {}
        Some(serde_json::Value::String(s)) if s.trim().is_empty() || s.parse::<GlueType>().is_ok() => {}
        Some(serde_json::Value::String(s)) => return messages::glue_type_not_valid(s),
        Some(other) => return messages::glue_type_not_valid(&other.to_string()),
    }
    format!("request error: {err}")
}

fn submit(state: &Arc<ServerState>, trigger: TriggerParam) -> Result<(), String> {
    match trigger.glue_type {
        GlueType::Bean => {
            let name = trigger.executor_handler.trim().to_owned();
            let handler =
                state.handlers.get(&name).cloned().ok_or_else(|| messages::handler_not_found(&name))?;
            state.runners.submit(trigger, JobKind::Bean(Arc::from(name)), || handler).map_err(|r| r.0)
        }
        GlueType::GlueGroovy => Err(format!(
            "glueType[GLUE_GROOVY] is not supported: Chime's executor cannot run {} (Groovy) code; use a BEAN handler or a script type.",
            GlueType::GlueGroovy.title()
        )),
        glue if !state.scripts_enabled => Err(format!(
            "fail, current glue type [{}] not supported. (script jobs are disabled on this executor: start it with --enable-scripts)",
            glue.title()
        )),
        glue => {
            let kind = JobKind::Script(glue, trigger.glue_updatetime);
            let (dir, job_id, version, source) =
                (state.glue_dir.clone(), trigger.job_id, trigger.glue_updatetime, trigger.glue_source.clone());
            state
                .runners
                .submit(trigger, kind, move || script::script_handler(dir, job_id, glue, version, source))
                .map_err(|r| r.0)
        }
    }
}

fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, String> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err("request error: the request body is empty".to_owned());
    }
    serde_json::from_slice(body).map_err(|e| format!("request error: {e}"))
}

/// The `/log` reply: the Java executor's `{"code":200,"content":{…}}` with the same page under
/// `data` too. XXL-JOB 2.4 admins read `content`, 3.3–3.4 admins read `data`, and both parse
/// with libraries that ignore keys they do not know, so one reply serves both generations.
/// (Every other reply is exactly the Java 2.4 executor's: their payloads are never read.)
fn log_reply(page: &LogResult) -> String {
    #[derive(serde::Serialize)]
    struct LogReply<'a> {
        code: i32,
        content: &'a LogResult,
        data: &'a LogResult,
    }
    serde_json::to_string(&LogReply {
        code: SUCCESS_CODE,
        content: page,
        data: page,
    })
    .expect("a log page serializes")
}

fn fail(msg: impl Into<String>) -> String {
    ReturnT::<()>::fail(msg).to_executor_json()
}
