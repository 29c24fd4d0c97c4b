//! The HTTP client the admin uses to call executors: `/run` (or G4 `/trigger`), `/beat`,
//! `/idleBeat`, `/kill`, `/log`.
//!
//! One keep-alive connection pool (hyper's) for all executors, connect and read timeouts from the
//! configuration (XXL-JOB hard-codes 3 s). The access token sent is the executor's group's own,
//! if it has one (XXL-JOB 3.5), else the admin's. Failures are turned into `ReturnT` failures with
//! XXL-JOB's message texts, so what a user reads in a run's trigger message is familiar.
//!
//! A reply is read only up to a limit ([`REPLY_LIMIT`], [`LOG_REPLY_LIMIT`] for `/log`): an
//! executor is a remote party, and one that answers with gigabytes must not grow the admin by
//! as much. A larger reply is refused and the call fails with "executor reply larger than …".

use super::network_guard::GuardedConnector;
use crate::address_policy::ExecutorNetworks;
use crate::error_text::with_causes;
use crate::link::{self as hub, LinkCallError, LinkHub};
use crate::model::Group;
use crate::run::truncate;
use bytes::Bytes;
use chime_protocol::link;
use chime_protocol::messages::{ACCESS_TOKEN_HEADER, APPNAME_HEADER};
use chime_protocol::paths::{self, BEAT, IDLE_BEAT, KILL, LOG};
use chime_protocol::{IdleBeatParam, KillParam, LogParam, LogResult, ProtocolGeneration, ReturnT, TriggerParam};
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::header::{ACCEPT_CHARSET, CONTENT_TYPE};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use serde::de::DeserializeOwned;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Largest reply body read from `/run` (`/trigger`), `/beat`, `/idleBeat` and `/kill`. Their
/// replies are an envelope with a short message (a few hundred bytes from every known executor);
/// 1 MiB leaves ample room and bounds what a misbehaving executor costs the admin per call.
pub const REPLY_LIMIT: usize = 1024 * 1024;

/// Largest reply body read from `/log`. The admin asks for a run's log from a line number to
/// the end (the protocol has no page size), so a page is as large as the part of the log not
/// read yet: the whole log on the first read, then what was written since the last poll. 16 MiB
/// of text (about 200,000 lines) shows any log a person reads in the console in one page; a
/// larger one is refused with a message saying so, and stays readable on the executor host.
pub const LOG_REPLY_LIMIT: usize = 16 * 1024 * 1024;

/// The failure text of a reply over `limit` bytes.
fn too_large(limit: usize, url: &str) -> String {
    format!(
        "xxl-job remoting error(executor reply larger than {} MiB), for url : {url}",
        limit / (1024 * 1024)
    )
}

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
    /// Its group works without tokens (`insecure_no_token`): none is sent, so the admin's token
    /// never reaches an executor that anyone could have registered.
    pub no_token: bool,
}

impl<'a> Target<'a> {
    /// An executor at `address` of `group`.
    pub fn of(group: &'a Group, address: &'a str) -> Target<'a> {
        Target {
            address,
            protocol: group.protocol,
            app_name: &group.app_name,
            group_token: group.access_token.as_deref(),
            no_token: group.insecure_no_token,
        }
    }
}

/// The pooled HTTP/1.1 client under [`ExecutorClient`]: plain HTTP, or HTTPS for executors
/// behind a TLS proxy.
type Pool = hyper_util::client::legacy::Client<HttpsConnector<GuardedConnector>, Full<Bytes>>;

/// Calls executors.
///
/// Built on hyper's pooled client rather than reqwest: every fire is one call, and at tens of
/// thousands of calls a second reqwest's per-request work (URL parsing with IDNA, redirect
/// policy, boxed futures) was a fifth of the admin's CPU. Nothing reqwest adds is needed here:
/// no redirects, cookies, proxies or compression in the executor protocol.
#[derive(Debug, Clone)]
pub struct ExecutorClient {
    http: Pool,
    timeout: Duration,
    access_token: Option<String>,
    /// Proves to the other admins that a relayed call comes from an admin of this database
    /// (see [`hub::CLUSTER_SECRET_HEADER`]).
    cluster_secret: Option<Arc<str>>,
    /// Executors linked to this admin, and the other admins to relay to (see [`crate::link`]).
    links: Arc<LinkHub>,
    /// Link address → the admin that passed the last relayed call to it, asked first next time.
    relay_hints: Arc<Mutex<HashMap<String, String>>>,
}

/// How much longer a relayed call waits than a direct one: the far admin's own timeout, and
/// the hop.
const RELAY_MARGIN: Duration = Duration::from_secs(1);

/// Link addresses whose relaying admin is remembered; the table is cleared when full (a hint
/// only saves asking the wrong admin first).
const MAX_RELAY_HINTS: usize = 10_000;

impl ExecutorClient {
    /// A client with the given connect/read timeout and access token, keeping up to
    /// `idle_per_executor` idle connections to each executor.
    ///
    /// `idle_per_executor` should be at least the number of calls allowed to one executor at
    /// once: with fewer, every burst closes the surplus connections and the next one opens them
    /// again (a TCP handshake and a TIME_WAIT socket per call beyond the pool).
    ///
    /// Connections go only to peers in `networks` (see [`GuardedConnector`]). Calls to a link
    /// address (`link://…`) go down the executor's link in `links`, or through another admin,
    /// which is shown `cluster_secret`. `https://` executors and admins are verified against
    /// `tls` (see `AdminConfig::client_tls`).
    pub fn new(
        timeout: Duration,
        access_token: Option<String>,
        idle_per_executor: usize,
        networks: ExecutorNetworks,
        links: Arc<LinkHub>,
        cluster_secret: Option<String>,
        tls: rustls::ClientConfig,
    ) -> ExecutorClient {
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(Some(timeout));
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(GuardedConnector::new(tcp, networks));
        let http = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(60))
            .pool_max_idle_per_host(idle_per_executor.max(1))
            .pool_timer(TokioTimer::new())
            .build(connector);
        ExecutorClient {
            http,
            timeout,
            access_token: access_token.filter(|t| !t.trim().is_empty()),
            cluster_secret: cluster_secret.filter(|s| !s.is_empty()).map(Arc::from),
            links,
            relay_hints: Arc::default(),
        }
    }

    /// Posts `body` to `path` and reads a reply of at most `limit` bytes.
    async fn call<T: DeserializeOwned>(
        &self,
        target: Target<'_>,
        path: &str,
        body: String,
        limit: usize,
    ) -> ReturnT<T> {
        let url = paths::join(target.address, path);
        if let Some(executor_id) = link::executor_id(target.address) {
            return match self.call_linked(target, executor_id, path, body, limit).await {
                Ok(bytes) => parse_reply(&bytes, &url),
                Err(e) => ReturnT::fail(e),
            };
        }
        let uri = match hyper::Uri::try_from(url.as_str()) {
            Ok(u) if u.scheme().is_some() && u.host().is_some() => u,
            _ => return ReturnT::fail(format!("xxl-job remoting error(invalid address), for url : {url}")),
        };
        let mut req = hyper::Request::post(uri)
            .header(CONTENT_TYPE, "application/json;charset=UTF-8")
            .header(ACCEPT_CHARSET, "application/json;charset=UTF-8");
        if let Some(token) = self.token_for(target) {
            req = req.header(ACCESS_TOKEN_HEADER, token);
        }
        if target.protocol == ProtocolGeneration::G4 {
            req = req.header(APPNAME_HEADER, target.app_name);
        }
        match self.exchange(req, body, limit, &url, self.timeout).await {
            Ok(Ok(bytes)) => parse_reply(&bytes, &url),
            Ok(Err(status)) => ReturnT::fail(format!(
                "xxl-job remoting fail, StatusCode({}) invalid. for url : {url}",
                status.as_u16()
            )),
            Err(e) => ReturnT::fail(e),
        }
    }

    /// The access token sent to `target`: its group's own, else the admin's; none to a group
    /// that works without tokens.
    fn token_for<'a>(&'a self, target: Target<'a>) -> Option<&'a str> {
        if target.no_token {
            return None;
        }
        target.group_token.or(self.access_token.as_deref())
    }

    /// One HTTP exchange under one deadline, as XXL-JOB's read timeout: connect, send, answer.
    /// `Ok(Err(status))` for an answer other than 200; the body of a 200 is read up to `limit`.
    async fn exchange(
        &self,
        req: hyper::http::request::Builder,
        body: String,
        limit: usize,
        url: &str,
        timeout: Duration,
    ) -> Result<Result<Bytes, hyper::StatusCode>, String> {
        let req = match req.body(Full::new(Bytes::from(body))) {
            Ok(r) => r,
            // A token or app name that is not a valid header value.
            Err(e) => return Err(format!("xxl-job remoting error({e}), for url : {url}")),
        };
        let exchange = async {
            let resp = self
                .http
                .request(req)
                .await
                .map_err(|e| format!("xxl-job remoting error({}), for url : {url}", with_causes(&e)))?;
            let status = resp.status();
            if status != hyper::StatusCode::OK {
                return Ok::<_, String>(Err(status));
            }
            // A declared length over the limit is refused before anything is read; otherwise
            // reading stops at the limit (a chunked reply declares none). Either way the
            // response is dropped unread, which closes its connection instead of pooling it.
            let declared = resp
                .headers()
                .get(hyper::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
            if declared.is_some_and(|n| n > limit as u64) {
                return Err(too_large(limit, url));
            }
            let bytes = match Limited::new(resp.into_body(), limit).collect().await {
                Ok(b) => b.to_bytes(),
                Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => return Err(too_large(limit, url)),
                Err(e) => return Err(format!("xxl-job remoting error({}), for url : {url}", with_causes(&*e))),
            };
            Ok(Ok(bytes))
        };
        match tokio::time::timeout(timeout, exchange).await {
            Err(_) => Err(format!("xxl-job remoting error(operation timed out), for url : {url}")),
            Ok(result) => result,
        }
    }

    /// A call to a linked executor: down its link if this admin holds it, else relayed through
    /// the other admins (see [`crate::link`]). Errors are the run's trigger message.
    async fn call_linked(
        &self,
        target: Target<'_>,
        executor_id: &str,
        path: &str,
        body: String,
        limit: usize,
    ) -> Result<Bytes, String> {
        let url = paths::join(target.address, path);
        let remoting = |e: &str| format!("xxl-job remoting error({e}), for url : {url}");
        let answer = match self
            .links
            .call(
                target.app_name,
                executor_id,
                path,
                &body,
                self.token_for(target),
                self.timeout,
            )
            .await
        {
            Ok(answer) => Bytes::from(answer),
            Err(LinkCallError::Failed(e)) => return Err(remoting(&e)),
            Err(LinkCallError::NotHere) => self.relay(target, path, body, limit, &url).await?,
        };
        if answer.len() > limit {
            return Err(too_large(limit, &url));
        }
        Ok(answer)
    }

    /// Asks the other live admins, one after another, to pass a call to an executor linked to
    /// them; the admin that held the link last time is asked first.
    async fn relay(
        &self,
        target: Target<'_>,
        path: &str,
        body: String,
        limit: usize,
        url: &str,
    ) -> Result<Bytes, String> {
        let address = paths::normalize_address(target.address);
        let mut peers = self.links.peers();
        let hint = self
            .relay_hints
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(address)
            .cloned();
        if let Some(hint) = hint {
            if let Some(i) = peers.iter().position(|p| *p == hint) {
                peers.swap(0, i);
            }
        }
        let mut reasons = Vec::new();
        for peer in peers {
            let relay_url = paths::join(&peer, hub::RELAY_PATH);
            let Ok(uri) = hyper::Uri::try_from(relay_url.as_str()) else {
                continue;
            };
            let mut req = hyper::Request::post(uri)
                .header(CONTENT_TYPE, "application/json;charset=UTF-8")
                .header(APPNAME_HEADER, target.app_name)
                .header(hub::RELAY_ADDRESS_HEADER, address)
                .header(hub::RELAY_PATH_HEADER, path);
            if let Some(token) = self.token_for(target) {
                req = req.header(ACCESS_TOKEN_HEADER, token);
            }
            if let Some(secret) = &self.cluster_secret {
                req = req.header(hub::CLUSTER_SECRET_HEADER, &**secret);
            }
            // The far admin waits up to the same timeout for its executor: a little longer here,
            // so its own answer (which says why) arrives before this side gives up.
            let wait = self.timeout + RELAY_MARGIN;
            match self.exchange(req, body.clone(), limit, &relay_url, wait).await {
                Ok(Ok(answer)) => {
                    let mut hints = self.relay_hints.lock().unwrap_or_else(|p| p.into_inner());
                    if hints.len() >= MAX_RELAY_HINTS {
                        hints.clear();
                    }
                    hints.insert(address.to_owned(), peer);
                    return Ok(answer);
                }
                Ok(Err(status)) if status == hyper::StatusCode::NOT_FOUND => {}
                Ok(Err(status)) => reasons.push(format!("{peer}: HTTP {}", status.as_u16())),
                Err(e) => reasons.push(e),
            }
        }
        let mut text = "no admin holds a link of this executor".to_owned();
        if !reasons.is_empty() {
            text.push_str(" (");
            text.push_str(&reasons.join("; "));
            text.push(')');
        }
        Err(format!("xxl-job remoting error({text}), for url : {url}"))
    }

    /// Sends a trigger (`/run`, or `/trigger` for G4).
    pub async fn run(&self, target: Target<'_>, param: &TriggerParam) -> ReturnT<serde_json::Value> {
        let body = serde_json::to_string(param).unwrap_or_default();
        self.call(target, target.protocol.trigger_path(), body, REPLY_LIMIT)
            .await
    }

    /// Liveness probe.
    pub async fn beat(&self, target: Target<'_>) -> ReturnT<serde_json::Value> {
        // XXL-JOB 2.4 sends the JSON string literal "" as the body.
        self.call(target, BEAT, "\"\"".to_owned(), REPLY_LIMIT).await
    }

    /// Is the job busy on this executor?
    pub async fn idle_beat(&self, target: Target<'_>, job_id: i64) -> ReturnT<serde_json::Value> {
        let body = serde_json::to_string(&IdleBeatParam { job_id }).unwrap_or_default();
        self.call(target, IDLE_BEAT, body, REPLY_LIMIT).await
    }

    /// Stops the job's runner on this executor.
    pub async fn kill(&self, target: Target<'_>, job_id: i64) -> ReturnT<serde_json::Value> {
        let body = serde_json::to_string(&KillParam { job_id }).unwrap_or_default();
        self.call(target, KILL, body, REPLY_LIMIT).await
    }

    /// Reads a run's log from `from_line` on.
    pub async fn log(&self, target: Target<'_>, param: &LogParam) -> ReturnT<LogResult> {
        let body = param.to_json(target.protocol);
        self.call(target, LOG, body, LOG_REPLY_LIMIT).await
    }
}

/// Parses an executor's reply. Java executors answer with Content-Type text/html: whatever the
/// header says, the body is parsed.
fn parse_reply<T: DeserializeOwned>(bytes: &[u8], url: &str) -> ReturnT<T> {
    match ReturnT::<T>::from_json(bytes) {
        Ok(mut r) => {
            // Cut as the store keeps it (XXL-JOB's limit), so a reply's message does not
            // occupy up to REPLY_LIMIT in memory while it waits for the results writer.
            r.msg = r.msg.map(truncate);
            r
        }
        Err(_) => {
            let shown: String = String::from_utf8_lossy(bytes).chars().take(200).collect();
            ReturnT::fail(format!(
                "xxl-job remoting (url={url}) response content invalid({shown})."
            ))
        }
    }
}
