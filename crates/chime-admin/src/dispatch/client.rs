//! The HTTP client the admin uses to call executors: `/run` (or G4 `/trigger`), `/beat`,
//! `/idleBeat`, `/kill`, `/log`.
//!
//! One keep-alive connection pool for all executors, connect and read timeouts from the
//! configuration (XXL-JOB hard-codes 3 s). The access token sent is the executor's group's own,
//! if it has one (XXL-JOB 3.5), else the admin's. Failures are turned into `ReturnT` failures with
//! XXL-JOB's message texts, so what a user reads in a run's trigger message is familiar.

use crate::model::Group;
use chime_protocol::messages::{ACCESS_TOKEN_HEADER, APPNAME_HEADER};
use chime_protocol::paths::{self, BEAT, IDLE_BEAT, KILL, LOG};
use chime_protocol::{IdleBeatParam, KillParam, LogParam, LogResult, ProtocolGeneration, ReturnT, TriggerParam};
use serde::de::DeserializeOwned;
use std::time::Duration;

/// How to reach one executor.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// Base address (`http://host:port`).
    pub address: &'a str,
    /// Protocol generation of its group.
    pub protocol: ProtocolGeneration,
    /// App name (sent as `XXL-JOB-APPNAME` to G4 executors).
    pub app_name: &'a str,
    /// Its group's own access token, sent instead of the admin's; `None` = the admin's.
    pub group_token: Option<&'a str>,
}

impl<'a> Target<'a> {
    /// An executor at `address` of `group`.
    pub fn of(group: &'a Group, address: &'a str) -> Target<'a> {
        Target {
            address,
            protocol: group.protocol,
            app_name: &group.app_name,
            group_token: group.access_token.as_deref(),
        }
    }
}

/// Calls executors.
#[derive(Debug, Clone)]
pub struct ExecutorClient {
    http: reqwest::Client,
    access_token: Option<String>,
}

impl ExecutorClient {
    /// A client with the given connect/read timeout and access token.
    pub fn new(timeout: Duration, access_token: Option<String>) -> ExecutorClient {
        let http = reqwest::Client::builder()
            .connect_timeout(timeout)
            .timeout(timeout)
            .pool_idle_timeout(Duration::from_secs(60))
            .pool_max_idle_per_host(64)
            .tcp_nodelay(true)
            .build()
            .expect("HTTP client configuration is valid");
        ExecutorClient {
            http,
            access_token: access_token.filter(|t| !t.trim().is_empty()),
        }
    }

    async fn call<T: DeserializeOwned>(&self, target: Target<'_>, path: &str, body: String) -> ReturnT<T> {
        let url = paths::join(target.address, path);
        let mut req = self
            .http
            .post(&url)
            .header("Content-Type", "application/json;charset=UTF-8")
            .header("Accept-Charset", "application/json;charset=UTF-8")
            .body(body);
        if let Some(token) = target.group_token.or(self.access_token.as_deref()) {
            req = req.header(ACCESS_TOKEN_HEADER, token);
        }
        if target.protocol == ProtocolGeneration::G4 {
            req = req.header(APPNAME_HEADER, target.app_name);
        }
        let resp = match req.send().await {
            Ok(r) => r,
            Err(e) => return ReturnT::fail(format!("xxl-job remoting error({}), for url : {url}", error_text(&e))),
        };
        let status = resp.status();
        if status != reqwest::StatusCode::OK {
            return ReturnT::fail(format!(
                "xxl-job remoting fail, StatusCode({}) invalid. for url : {url}",
                status.as_u16()
            ));
        }
        let bytes = match resp.bytes().await {
            Ok(b) => b,
            Err(e) => return ReturnT::fail(format!("xxl-job remoting error({}), for url : {url}", error_text(&e))),
        };
        // Java executors answer with Content-Type text/html: parse whatever the header says.
        match ReturnT::<T>::from_json(&bytes) {
            Ok(r) => r,
            Err(_) => {
                let shown: String = String::from_utf8_lossy(&bytes).chars().take(200).collect();
                ReturnT::fail(format!(
                    "xxl-job remoting (url={url}) response content invalid({shown})."
                ))
            }
        }
    }

    /// Sends a trigger (`/run`, or `/trigger` for G4).
    pub async fn run(&self, target: Target<'_>, param: &TriggerParam) -> ReturnT<serde_json::Value> {
        let body = serde_json::to_string(param).unwrap_or_default();
        self.call(target, target.protocol.trigger_path(), body).await
    }

    /// Liveness probe.
    pub async fn beat(&self, target: Target<'_>) -> ReturnT<serde_json::Value> {
        // XXL-JOB 2.4 sends the JSON string literal "" as the body.
        self.call(target, BEAT, "\"\"".to_owned()).await
    }

    /// Is the job busy on this executor?
    pub async fn idle_beat(&self, target: Target<'_>, job_id: i64) -> ReturnT<serde_json::Value> {
        let body = serde_json::to_string(&IdleBeatParam { job_id }).unwrap_or_default();
        self.call(target, IDLE_BEAT, body).await
    }

    /// Stops the job's runner on this executor.
    pub async fn kill(&self, target: Target<'_>, job_id: i64) -> ReturnT<serde_json::Value> {
        let body = serde_json::to_string(&KillParam { job_id }).unwrap_or_default();
        self.call(target, KILL, body).await
    }

    /// Reads a run's log from `from_line` on.
    pub async fn log(&self, target: Target<'_>, param: &LogParam) -> ReturnT<LogResult> {
        let body = param.to_json(target.protocol);
        self.call(target, LOG, body).await
    }
}

fn error_text(e: &reqwest::Error) -> String {
    use std::error::Error;
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
