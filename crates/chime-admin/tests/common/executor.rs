//! A small XXL-JOB 2.4 (G2) executor inside the test process: real HTTP both ways, behaviour
//! chosen by the handler name. The end-to-end tests run jobs on Chime's real demo executor
//! (`demo_executor.rs`); this one is for what a real executor cannot be made to do on cue —
//! answer `/run` only after its callback was accepted, so the result is committed before the
//! trigger result it answers — and for tests that count every delivery of every run (the
//! crash test), which a real executor does not expose.
//!
//! `/log` answers XXL-JOB's "logFile not exists" for a run it never received.
//!
//! Handlers: `ok` (success, message names the executor), `fail` (handleCode 500), `hang`
//! (no result until `/kill`), `callback_first` / `callback_first_fail` (success / failure,
//! reported and accepted before `/run` is answered), `slow` (success after 40 ms, counting how
//! many run at once), anything else succeeds.

use chime_protocol::messages::LOG_FILE_NOT_EXISTS;
use chime_protocol::{CallbackBatch, HandleCallbackParam, TriggerParam};
use serde_json::json;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// One `/run` request as it arrived.
#[derive(Debug, Clone, Copy)]
pub struct Delivery {
    /// The run (XXL-JOB's log id).
    pub log_id: i64,
    /// The address the request came from: which admin sent it, when the admins are reached
    /// through different interfaces.
    pub from: IpAddr,
    /// When it arrived, epoch ms.
    pub at: i64,
}

#[derive(Default)]
pub struct Seen {
    pub runs: Vec<TriggerParam>,
    /// Every `/run`, in arrival order (one entry per entry of `runs`).
    pub deliveries: Vec<Delivery>,
    pub hanging: HashMap<i64, TriggerParam>,
    pub bad_tokens: usize,
    pub beats: usize,
    /// `slow` runs under way now, and the most there ever were at once.
    pub slow_running: usize,
    pub slow_most: usize,
}

pub struct TestExecutor {
    pub address: String,
    pub seen: Arc<Mutex<Seen>>,
    stop_beats: CancellationToken,
    stop_server: CancellationToken,
}

impl TestExecutor {
    /// The parameters of `job`'s runs as this executor received them, in arrival order.
    pub fn params_of(&self, job: i64) -> Vec<String> {
        let seen = self.seen.lock().unwrap();
        seen.runs
            .iter()
            .filter(|t| t.job_id == job)
            .map(|t| t.executor_params.clone())
            .collect()
    }

    /// Starts listening and heart-beating to `admin_base` (e.g. `http://127.0.0.1:8080/xxl-job-admin`).
    pub async fn start(admin_base: &str, app_name: &str, token: &str) -> TestExecutor {
        let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
        TestExecutor::start_at(admin_base, app_name, token, SocketAddr::new(loopback, 0), loopback).await
    }

    /// Like [`TestExecutor::start`], listening on `bind` (port 0: any) and registering as
    /// `http://{advertised}:{port}/`: an executor bound to `0.0.0.0` that admins in another
    /// network namespace reach through a veth address.
    pub async fn start_at(
        admin_base: &str,
        app_name: &str,
        token: &str,
        bind: SocketAddr,
        advertised: IpAddr,
    ) -> TestExecutor {
        let listener = tokio::net::TcpListener::bind(bind).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let address = format!("http://{}", SocketAddr::new(advertised, port));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let stop_beats = CancellationToken::new();
        let stop_server = CancellationToken::new();
        // One client for every callback: a client per callback costs a TLS setup and a fresh
        // connection each, which under the crash test's 200 runs/s starves the machine.
        let state = (
            seen.clone(),
            admin_base.to_owned(),
            token.to_owned(),
            address.clone(),
            reqwest::Client::new(),
        );
        let app = axum::Router::new()
            .route("/{path}", axum::routing::post(handle))
            .with_state(Arc::new(state));
        let stop = stop_server.clone();
        tokio::spawn(async move {
            let app = app.into_make_service_with_connect_info::<SocketAddr>();
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move { stop.cancelled().await })
                .await;
        });
        // Register like the Java executor: with a trailing slash.
        let (base, app_name, tok, addr, stop) = (
            admin_base.to_owned(),
            app_name.to_owned(),
            token.to_owned(),
            format!("{address}/"),
            stop_beats.clone(),
        );
        tokio::spawn(async move {
            let http = reqwest::Client::new();
            loop {
                let _ = http
                    .post(format!("{base}/api/registry"))
                    .header("XXL-JOB-ACCESS-TOKEN", &tok)
                    .json(&json!({"registryGroup": "EXECUTOR", "registryKey": app_name, "registryValue": addr}))
                    .send()
                    .await;
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                }
            }
        });
        TestExecutor {
            address,
            seen,
            stop_beats,
            stop_server,
        }
    }

    /// Stops heart-beating and serving, without `registryRemove` (like `kill -9`).
    pub fn kill(&self) {
        self.stop_beats.cancel();
        self.stop_server.cancel();
    }

    /// Stops only the HTTP server (still registered, but unreachable).
    pub fn stop_serving(&self) {
        self.stop_server.cancel();
    }

    pub fn run_count(&self) -> usize {
        self.seen.lock().unwrap().runs.len()
    }

    pub fn log_ids(&self) -> Vec<i64> {
        self.seen.lock().unwrap().runs.iter().map(|r| r.log_id).collect()
    }

    /// Every `/run` received so far, in arrival order, with its sender's address.
    pub fn deliveries(&self) -> Vec<Delivery> {
        self.seen.lock().unwrap().deliveries.clone()
    }
}

type State = Arc<(Arc<Mutex<Seen>>, String, String, String, reqwest::Client)>;

/// Sends one result, again and again until the admin accepts it; true once accepted.
async fn callback(
    http: &reqwest::Client,
    admin_base: &str,
    token: &str,
    log_id: i64,
    log_date: i64,
    code: i32,
    msg: String,
) -> bool {
    let batch = CallbackBatch(vec![HandleCallbackParam {
        log_id,
        log_date_tim: log_date,
        handle_code: code,
        handle_msg: Some(msg),
    }]);
    // Re-sent until the admin accepts it, as the Java executor (its callback log) and Chime's
    // (its spool) do: a callback that reaches an admin killed a moment ago is not lost.
    for _ in 0..300 {
        let accepted = match http
            .post(format!("{admin_base}/api/callback"))
            .header("XXL-JOB-ACCESS-TOKEN", token)
            .json(&batch)
            .send()
            .await
        {
            Ok(resp) => resp.json::<serde_json::Value>().await.is_ok_and(|v| v["code"] == 200),
            Err(_) => false,
        };
        if accepted {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    false
}

async fn handle(
    axum::extract::State(state): axum::extract::State<State>,
    axum::extract::ConnectInfo(peer): axum::extract::ConnectInfo<SocketAddr>,
    axum::extract::Path(path): axum::extract::Path<String>,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> String {
    let (seen, admin_base, token, me, http) = (
        &state.0,
        state.1.clone(),
        state.2.clone(),
        state.3.clone(),
        state.4.clone(),
    );
    if headers.get("XXL-JOB-ACCESS-TOKEN").and_then(|v| v.to_str().ok()) != Some(token.as_str()) {
        seen.lock().unwrap().bad_tokens += 1;
        return r#"{"code":500,"msg":"The access token is wrong."}"#.to_owned();
    }
    match path.as_str() {
        "beat" => {
            seen.lock().unwrap().beats += 1;
            r#"{"code":200}"#.to_owned()
        }
        "idleBeat" => {
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let job = v["jobId"].as_i64().unwrap_or(0);
            if seen.lock().unwrap().hanging.values().any(|t| t.job_id == job) {
                r#"{"code":500,"msg":"job thread is running or has trigger queue."}"#.to_owned()
            } else {
                r#"{"code":200}"#.to_owned()
            }
        }
        "run" => {
            let Ok(t) = serde_json::from_slice::<TriggerParam>(&body) else {
                return r#"{"code":500,"msg":"bad trigger"}"#.to_owned();
            };
            {
                let mut seen = seen.lock().unwrap();
                seen.runs.push(t.clone());
                seen.deliveries.push(Delivery {
                    log_id: t.log_id,
                    from: peer.ip(),
                    at: chime_admin::model::now_ms(),
                });
            }
            match t.executor_handler.as_str() {
                "hang" => {
                    seen.lock().unwrap().hanging.insert(t.log_id, t);
                }
                "callback_first" | "callback_first_fail" => {
                    let code = if t.executor_handler == "callback_first" {
                        200
                    } else {
                        500
                    };
                    let msg = format!("{} on {me}, reported before the trigger reply", t.executor_handler);
                    if !callback(&http, &admin_base, &token, t.log_id, t.log_date_time, code, msg).await {
                        return r#"{"code":500,"msg":"the admin never accepted the callback"}"#.to_owned();
                    }
                }
                // `slow` runs 40 ms, `sleep` as many ms as its parameter says (1 s by default);
                // both count how many run at once.
                "slow" | "sleep" => {
                    {
                        let mut s = seen.lock().unwrap();
                        s.slow_running += 1;
                        s.slow_most = s.slow_most.max(s.slow_running);
                    }
                    let seen = seen.clone();
                    let ms = match t.executor_handler.as_str() {
                        "slow" => 40,
                        _ => t.executor_params.trim().parse().unwrap_or(1_000),
                    };
                    let handler = t.executor_handler.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                        // Counted as ended before its result is sent: the admin sees it end
                        // after the executor did, as with a real handler.
                        seen.lock().unwrap().slow_running -= 1;
                        callback(&http, &admin_base, &token, t.log_id, t.log_date_time, 200, handler).await
                    });
                }
                "fail" => {
                    tokio::spawn(async move {
                        callback(
                            &http,
                            &admin_base,
                            &token,
                            t.log_id,
                            t.log_date_time,
                            500,
                            format!("failed on {me}"),
                        )
                        .await
                    });
                }
                _ => {
                    let msg = format!(
                        "ok on {me} shard {}/{} param {}",
                        t.broadcast_index, t.broadcast_total, t.executor_params
                    );
                    tokio::spawn(async move {
                        callback(&http, &admin_base, &token, t.log_id, t.log_date_time, 200, msg).await
                    });
                }
            }
            r#"{"code":200}"#.to_owned()
        }
        "kill" => {
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let job = v["jobId"].as_i64().unwrap_or(0);
            let killed: Vec<TriggerParam> = {
                let mut s = seen.lock().unwrap();
                let ids: Vec<i64> = s
                    .hanging
                    .values()
                    .filter(|t| t.job_id == job)
                    .map(|t| t.log_id)
                    .collect();
                ids.iter().filter_map(|id| s.hanging.remove(id)).collect()
            };
            for t in killed {
                let (a, tok, http) = (admin_base.clone(), token.clone(), http.clone());
                tokio::spawn(async move {
                    callback(
                        &http,
                        &a,
                        &tok,
                        t.log_id,
                        t.log_date_time,
                        500,
                        "scheduling center kill job. [job running, killed]".into(),
                    )
                    .await
                });
            }
            r#"{"code":200}"#.to_owned()
        }
        "log" => {
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let id = v["logId"].as_i64().unwrap_or(0);
            let from = v["fromLineNum"].as_i64().unwrap_or(1);
            // As a real executor: a run it never received has no log file.
            if !seen.lock().unwrap().runs.iter().any(|t| t.log_id == id) {
                return json!({"code": 200, "content": {"fromLineNum": from, "toLineNum": 0, "logContent": LOG_FILE_NOT_EXISTS, "isEnd": true}}).to_string();
            }
            json!({"code": 200, "content": {"fromLineNum": from, "toLineNum": 2, "logContent": format!("log of run {id} line 1\nline 2\n"), "isEnd": false}}).to_string()
        }
        other => format!(r#"{{"code":500,"msg":"invalid request, uri-mapping(/{other}) not found."}}"#),
    }
}
