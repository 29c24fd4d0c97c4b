//! The XXL-JOB admin API executors call: `/api/registry`, `/api/registryRemove`,
//! `/api/callback`, and Chime's `/api/runLog` (a finished run's log, kept by the admin); and
//! XXL-JOB 3.5's job API on the same endpoint (`/api/addJob`, `updateJob`, `removeJob`,
//! `startJob`, `stopJob`, `triggerJob`: see `executor_api/job_api.rs`).
//!
//! Access: a request must carry the access token of the group it acts for — the group's own
//! (XXL-JOB 3.5 keeps one per group), else the admin's (`--access-token`, or the one made at
//! the first start: there always is one). Only a group an operator marked `insecure_no_token`
//! takes requests without a token. A registration acts for the group of its app name, a
//! callback for the groups of the runs it reports on. A refusal is counted and logged (rate-limited, without the
//! token): see `refuse`.
//!
//! Every reply is HTTP 200 with `Content-Type: application/json` and XXL-JOB's envelope
//! `{"code":200,"msg":null,"content":null}`; failures are `code: 500` with the reason — XXL-JOB
//! clients throw away the body of a non-200 reply, which would hide it. Callbacks are answered
//! after they are committed, so an executor that spools results (Java, Chime) re-sends them if
//! the admin died first.

use super::auth::token_matches;
use crate::center::{Admin, OpError};
use crate::link::Link;
use crate::model::Group;
use crate::store::HandleOutcome;
use axum::body::{to_bytes, Body, Bytes};
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::{Extension, Router};
use chime_protocol::messages::{self, ACCESS_TOKEN_HEADER, APPNAME_HEADER};
use chime_protocol::paths::normalize_address;
use chime_protocol::{CallbackBatch, RegistryParam, ReturnT, RunLogParam};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

mod job_api;

use job_api::job_api;

/// Largest request body the executor API reads. An executor sends every result it has pending
/// in one callback (xxl-job-core drains its whole queue into one request, and re-sends a spooled
/// backlog after an admin outage), so a busy executor's callback can be far larger than axum's
/// default limit of 2 MB; 16 MB holds about 200,000 results.
const EXECUTOR_API_BODY_LIMIT: usize = 16 * 1024 * 1024;

/// Largest registration body accepted. A registration is a few hundred bytes (three fields of
/// at most 255 characters, and Chime's instance); anything bigger is refused before it is
/// parsed, so no part of it is copied into strings.
const REGISTRY_BODY_LIMIT: usize = 64 * 1024;

/// Largest run log body accepted: a log of at most [`chime_protocol::MAX_RUN_LOG_BYTES`] is
/// larger as JSON by its escapes (a tab or quote doubles, a control character takes six bytes);
/// the admin keeps at most the cap of the text itself.
const RUN_LOG_BODY_LIMIT: usize = 8 * chime_protocol::MAX_RUN_LOG_BYTES;

/// Largest body of a job API call (`addJob`, …): a job with its GLUE source. XXL-JOB keeps a
/// script in a MEDIUMTEXT; a megabyte is far more than any script a job should carry.
const JOB_API_BODY_LIMIT: usize = 1024 * 1024;

/// Routes of the executor API (to be mounted at `/` and at the context path).
pub fn routes() -> Router<Arc<Admin>> {
    Router::new()
        .route("/api/{uri}", any(api))
        .route("/api", any(empty_uri))
        .route("/api/", any(empty_uri))
}

pub(crate) fn reply(r: ReturnT<String>) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        r.to_admin_json(),
    )
        .into_response()
}

async fn empty_uri() -> Response {
    reply(ReturnT::fail(messages::URI_MAPPING_EMPTY))
}

async fn api(
    State(admin): State<Arc<Admin>>,
    method: Method,
    Path(uri): Path<String>,
    headers: HeaderMap,
    connect: Option<Extension<ConnectInfo<SocketAddr>>>,
    body: Body,
) -> Response {
    let peer = connect.map(|Extension(ConnectInfo(a))| a);
    if method != Method::POST {
        return reply(ReturnT::fail(messages::METHOD_NOT_SUPPORTED));
    }
    // The body is read only up to what its endpoint can need, and only once the caller is
    // known: a registration is a few hundred bytes, a callback may carry a large backlog. A
    // bigger body is refused while it streams in, so it is never held whole.
    let registration = matches!(uri.as_str(), "registry" | "registryRemove");
    let limit = body_limit(&uri);
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if chime_protocol::is_job_api_uri(&uri) {
        return job_api(&admin, &uri, &headers, declared, peer, body).await;
    }
    let too_large = || too_large(&uri);
    if limit > 0 && declared.is_some_and(|n| n > limit as u64) {
        return too_large();
    }
    let given = headers
        .get(ACCESS_TOKEN_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    // A token that no group and not the admin accepts is refused before anything is read,
    // unless some group takes requests without one (its own checks follow).
    if !allowed(&admin, None, given)
        && !admin.directory.any_group_token(|t| token_matches(given, t))
        && !admin.directory.any_tokenless_group()
    {
        // A registration's app name is read (within its small limit) for the warning only.
        let body = if registration {
            to_bytes(body, REGISTRY_BODY_LIMIT).await.unwrap_or_default()
        } else {
            Bytes::new()
        };
        return refuse(&admin, &uri, given, peer, || {
            #[derive(serde::Deserialize)]
            struct Key {
                #[serde(rename = "registryKey")]
                registry_key: String,
            }
            serde_json::from_slice::<Key>(&body).ok().map(|k| k.registry_key)
        });
    }
    let body = if limit == 0 {
        Bytes::new()
    } else {
        match to_bytes(body, limit).await {
            Ok(b) => b,
            Err(_) => return too_large(),
        }
    };
    serve(&admin, &uri, given, peer, body, None).await
}

/// Largest body read for endpoint `uri` (0: none is read).
pub(crate) fn body_limit(uri: &str) -> usize {
    match uri {
        "callback" => EXECUTOR_API_BODY_LIMIT,
        "runLog" => RUN_LOG_BODY_LIMIT,
        "registry" | "registryRemove" => REGISTRY_BODY_LIMIT,
        uri if chime_protocol::is_job_api_uri(uri) => JOB_API_BODY_LIMIT,
        _ => 0,
    }
}

/// The refusal of a body over [`body_limit`].
pub(crate) fn too_large(uri: &str) -> Response {
    reply(ReturnT::fail(format!(
        "{} {} body is larger than {} KiB",
        messages::ILLEGAL_ARGUMENT,
        match uri {
            "runLog" => "run log",
            "registry" | "registryRemove" => "registration",
            uri if chime_protocol::is_job_api_uri(uri) => "job API",
            _ => "callback",
        },
        body_limit(uri) / 1024
    )))
}

/// Serves one call of the executor API whose caller holds the token `given`, with its body
/// read: from HTTP, or from an executor's link (`link`), which may register only as itself.
pub(crate) async fn serve(
    admin: &Arc<Admin>,
    uri: &str,
    given: &str,
    peer: Option<SocketAddr>,
    body: Bytes,
    link: Option<&Link>,
) -> Response {
    match uri {
        "registry" | "registryRemove" => serve_registry(admin, uri, given, peer, &body, link).await,
        "callback" => serve_callback(admin, given, peer, &body).await,
        "runLog" => serve_run_log(admin, given, peer, body).await,
        other => reply(ReturnT::fail(messages::uri_not_found(other))),
    }
}

/// `registry` and `registryRemove`: an executor's heartbeat, or its goodbye.
async fn serve_registry(
    admin: &Arc<Admin>,
    uri: &str,
    given: &str,
    peer: Option<SocketAddr>,
    body: &[u8],
    link: Option<&Link>,
) -> Response {
    let param: RegistryParam = match serde_json::from_slice(body) {
        Ok(p) => p,
        Err(_) => return reply(ReturnT::fail(messages::ILLEGAL_ARGUMENT)),
    };
    if param.has_blank_field() {
        return reply(ReturnT::fail(messages::ILLEGAL_ARGUMENT));
    }
    // Before anything of it is stored or kept: see `RegistryParam::validate`.
    if let Err(e) = param.validate() {
        return reply(ReturnT::fail(format!("{} {e}", messages::ILLEGAL_ARGUMENT)));
    }
    let app = param.registry_key.trim();
    let address = match registered_address(admin, &param, link) {
        Ok(address) => address,
        Err(why) => return reply(ReturnT::fail(why)),
    };
    if !allowed(admin, admin.directory.group_by_app(app).as_ref(), given) {
        return refuse(admin, uri, given, peer, || Some(app.to_owned()));
    }
    let done = if uri == "registry" {
        admin.directory.heartbeat(app, &address, param.instance.as_ref()).await
    } else {
        admin.directory.remove(app, &address).await
    };
    match done {
        Ok(()) => reply(ReturnT::success()),
        Err(e) => {
            tracing::warn!(error = %e, "registry write failed");
            reply(ReturnT::fail("registry write failed, try again"))
        }
    }
}

/// The address a registration stands for, or why it is refused.
fn registered_address(admin: &Admin, param: &RegistryParam, link: Option<&Link>) -> Result<String, String> {
    match link {
        // A linked executor is known only by its link: it cannot enter an address the
        // admin would dial, nor speak for another group or another link.
        Some(link) => {
            let own = link.address();
            if normalize_address(&param.registry_value) != own || param.registry_key.trim() != link.app_name {
                return Err(format!(
                    "{} a linked executor registers as {own} in {:?} only",
                    messages::ILLEGAL_ARGUMENT,
                    link.app_name
                ));
            }
            Ok(own)
        }
        None => crate::model::validate_address(&param.registry_value, &admin.config.executor_networks)
            .map_err(|e| format!("{} {e}", messages::ILLEGAL_ARGUMENT)),
    }
}

/// `callback`: a batch of results, for the results writer.
async fn serve_callback(admin: &Arc<Admin>, given: &str, peer: Option<SocketAddr>, body: &[u8]) -> Response {
    let batch: CallbackBatch = match serde_json::from_slice(body) {
        Ok(b) => b,
        Err(e) => return reply(ReturnT::fail(format!("invalid callback body: {e}"))),
    };
    admin.metrics.callbacks.inc_by(batch.0.len() as u64);
    let outcomes: Vec<HandleOutcome> = batch
        .0
        .into_iter()
        .filter(|c| c.log_id > 0)
        .map(|c| HandleOutcome {
            run_id: c.log_id,
            code: i64::from(c.handle_code),
            msg: c.handle_msg,
            retry: true,
            lost: false,
        })
        .collect();
    if outcomes.is_empty() {
        return reply(ReturnT::success());
    }
    if let Err(r) = check_run_groups(admin, &outcomes, given, peer).await {
        return r;
    }
    match admin.record_results(outcomes).await {
        Ok(()) => reply(ReturnT::success()),
        Err(e) => reply(ReturnT::fail(format!("callback not recorded, send it again: {e}"))),
    }
}

/// `runLog`: the log of a finished run, kept by the admin.
async fn serve_run_log(admin: &Arc<Admin>, given: &str, peer: Option<SocketAddr>, body: Bytes) -> Response {
    let param: RunLogParam = match serde_json::from_slice(&body) {
        Ok(p) => p,
        Err(e) => {
            return reply(ReturnT::fail(format!(
                "{} invalid run log body: {e}",
                messages::ILLEGAL_ARGUMENT
            )))
        }
    };
    drop(body);
    if param.log_id <= 0 || param.app_name.trim().is_empty() {
        return reply(ReturnT::fail(format!(
            "{} logId must be a run id and appName the executor's app name",
            messages::ILLEGAL_ARGUMENT
        )));
    }
    match admin.store_run_log(&param, |g| allowed(admin, Some(g), given)).await {
        Ok(_) => reply(ReturnT::success()),
        Err(OpError::Forbidden(msg)) => {
            // Counted like a wrong token; the warning is rate-limited the same way.
            let ip = peer.map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |p| p.ip());
            if let Some(w) = admin.metrics.executor_refused("runLog", ip) {
                tracing::warn!(
                    peer = %ip,
                    run_id = param.log_id,
                    suppressed = w.suppressed,
                    "run log refused: the run is not of the sender's group"
                );
            }
            reply(ReturnT::fail(msg))
        }
        Err(OpError::Invalid(e)) => reply(ReturnT::fail(format!("{} {e}", messages::ILLEGAL_ARGUMENT))),
        Err(e) => {
            tracing::warn!(error = %e, run_id = param.log_id, "storing a run log failed");
            reply(ReturnT::fail("run log not stored, try again"))
        }
    }
}

/// May a request carrying `given` act for `group` (`None`: no group, or not known)? The token
/// expected is the group's own, else the admin's; a group marked `insecure_no_token` expects
/// none. An admin always has a token once started: were it somehow without one, nothing but
/// such a group would be open.
pub(crate) fn allowed(admin: &Admin, group: Option<&Group>, given: &str) -> bool {
    if group.is_some_and(|g| g.insecure_no_token) {
        return true;
    }
    let global = admin.config.access_token.as_deref().filter(|t| !t.trim().is_empty());
    let expected = match group {
        Some(g) => g.effective_token(global),
        None => global,
    };
    expected.is_some_and(|e| token_matches(given, e))
}

/// Refuses a callback that reports on a run of a group whose token the caller does not hold.
/// Looked up unless the caller holds the admin's token and no group has one of its own: then
/// the check at the door covers every group.
async fn check_run_groups(
    admin: &Admin,
    outcomes: &[HandleOutcome],
    given: &str,
    peer: Option<SocketAddr>,
) -> Result<(), Response> {
    if allowed(admin, None, given) && !admin.directory.any_group_token(|_| true) {
        return Ok(());
    }
    let ids: Vec<i64> = outcomes.iter().map(|o| o.run_id).collect();
    let groups = admin.store.groups_of_runs(&ids).await.map_err(|e| {
        tracing::warn!(error = %e, "reading the groups of reported runs failed");
        reply(ReturnT::fail(format!("callback not recorded, send it again: {e}")))
    })?;
    let mut checked = std::collections::HashSet::new();
    for group_id in groups.into_values() {
        if checked.insert(group_id) && !allowed(admin, admin.directory.group(group_id).as_ref(), given) {
            return Err(refuse(admin, "callback", given, peer, || None));
        }
    }
    Ok(())
}

/// Characters of a refused registration's app name shown in the warning (XXL-JOB's app names
/// are at most 64 characters).
const SHOWN_APP_CHARS: usize = 64;

/// Refuses a request whose access token does not fit, visibly (XXL-JOB refuses silently, which
/// leaves a misconfigured executor and a token-guessing caller alike unnoticed): the refusal is
/// counted in `/metrics` (`chime_executor_requests_refused_total`, by endpoint), and a warning
/// names the endpoint, the caller's address and a registration's app name (`app`, asked for
/// only when a warning is written) — never the token. Warnings are limited to one per endpoint
/// and caller address a minute, carrying the number left out (see
/// [`crate::metrics::Metrics::executor_refused`]).
pub(crate) fn refuse(
    admin: &Admin,
    uri: &str,
    given: &str,
    peer: Option<SocketAddr>,
    app: impl FnOnce() -> Option<String>,
) -> Response {
    let why = if given.is_empty() {
        // Most likely an executor set up for an admin without a token, met after an upgrade.
        "no access token: give the executor the admin's token (`chime admin show-token`), or mark its group \
         insecure_no_token"
    } else {
        "wrong access token"
    };
    count_refusal(admin, uri, peer, app, why);
    reply(ReturnT::fail(messages::ACCESS_TOKEN_WRONG))
}

/// Counts a refused request and warns of it (see [`refuse`]), saying `why`.
fn count_refusal(admin: &Admin, uri: &str, peer: Option<SocketAddr>, app: impl FnOnce() -> Option<String>, why: &str) {
    // A fixed set of names: the path is the caller's choice and becomes a label value.
    let endpoint = match uri {
        "registry" => "registry",
        "registryRemove" => "registryRemove",
        "callback" => "callback",
        "runLog" => "runLog",
        "link" => "link",
        "linkRelay" => "linkRelay",
        "addJob" => "addJob",
        "updateJob" => "updateJob",
        "removeJob" => "removeJob",
        "startJob" => "startJob",
        "stopJob" => "stopJob",
        "triggerJob" => "triggerJob",
        _ => "other",
    };
    let ip = peer.map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |p| p.ip());
    if let Some(w) = admin.metrics.executor_refused(endpoint, ip) {
        // The app name is the caller's text: cut, and quoted with control characters escaped,
        // so it can neither flood the log nor forge lines in it.
        let app = app().map_or_else(
            || "-".to_owned(),
            |a| {
                let cut: String = a.chars().take(SHOWN_APP_CHARS).collect();
                let more = if cut.len() < a.len() { "…" } else { "" };
                format!("{cut:?}{more}")
            },
        );
        let peer = peer.map_or_else(|| "unknown".to_owned(), |p| p.to_string());
        let message = if w.per_peer {
            "executor request refused"
        } else {
            "executor request refused (callers from too many addresses: the addresses not \
             tracked share one warning a minute)"
        };
        tracing::warn!(endpoint, peer = %peer, app = %app, suppressed = w.suppressed, why, "{message}");
    }
}
