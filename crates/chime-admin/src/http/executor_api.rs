//! The XXL-JOB admin API executors call: `/api/registry`, `/api/registryRemove`,
//! `/api/callback`.
//!
//! Access: a request must carry the access token of the group it acts for — the group's own
//! (XXL-JOB 3.5 keeps one per group), else the admin's `--access-token`; no token is needed
//! where neither is set. A registration acts for the group of its app name, a callback for the
//! groups of the runs it reports on.
//!
//! Every reply is HTTP 200 with `Content-Type: application/json` and XXL-JOB's envelope
//! `{"code":200,"msg":null,"content":null}`; failures are `code: 500` with the reason — XXL-JOB
//! clients throw away the body of a non-200 reply, which would hide it. Callbacks are answered
//! after they are committed, so an executor that spools results (Java, Chime) re-sends them if
//! the admin died first.

use super::auth::token_matches;
use crate::center::Admin;
use crate::model::Group;
use crate::store::HandleOutcome;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use chime_protocol::messages::{self, ACCESS_TOKEN_HEADER};
use chime_protocol::{CallbackBatch, RegistryParam, ReturnT};
use std::sync::Arc;

/// Largest request body the executor API reads. An executor sends every result it has pending
/// in one callback (xxl-job-core drains its whole queue into one request, and re-sends a spooled
/// backlog after an admin outage), so a busy executor's callback can be far larger than axum's
/// default limit of 2 MB; 16 MB holds about 200,000 results.
const EXECUTOR_API_BODY_LIMIT: usize = 16 * 1024 * 1024;

/// Routes of the executor API (to be mounted at `/` and at the context path).
pub fn routes() -> Router<Arc<Admin>> {
    Router::new()
        .route("/api/{uri}", any(api))
        .route("/api", any(empty_uri))
        .route("/api/", any(empty_uri))
        .layer(axum::extract::DefaultBodyLimit::max(EXECUTOR_API_BODY_LIMIT))
}

fn reply(r: ReturnT<String>) -> Response {
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
    body: Bytes,
) -> Response {
    if method != Method::POST {
        return reply(ReturnT::fail(messages::METHOD_NOT_SUPPORTED));
    }
    let given = headers
        .get(ACCESS_TOKEN_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    // A token that no group and not the admin accepts is refused before anything is read.
    if !allowed(&admin, None, given) && !admin.directory.any_group_token(|t| token_matches(given, t)) {
        return reply(ReturnT::fail(messages::ACCESS_TOKEN_WRONG));
    }
    match uri.as_str() {
        "registry" | "registryRemove" => {
            let param: RegistryParam = match serde_json::from_slice(&body) {
                Ok(p) => p,
                Err(_) => return reply(ReturnT::fail(messages::ILLEGAL_ARGUMENT)),
            };
            if param.has_blank_field() {
                return reply(ReturnT::fail(messages::ILLEGAL_ARGUMENT));
            }
            let address = match crate::model::validate_address(&param.registry_value) {
                Ok(a) => a,
                Err(e) => return reply(ReturnT::fail(format!("{} {e}", messages::ILLEGAL_ARGUMENT))),
            };
            let app = param.registry_key.trim();
            if !allowed(&admin, admin.directory.group_by_app(app).as_ref(), given) {
                return reply(ReturnT::fail(messages::ACCESS_TOKEN_WRONG));
            }
            let done = if uri == "registry" {
                admin.directory.heartbeat(app, &address).await
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
        "callback" => {
            let batch: CallbackBatch = match serde_json::from_slice(&body) {
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
                })
                .collect();
            if outcomes.is_empty() {
                return reply(ReturnT::success());
            }
            if let Err(r) = check_run_groups(&admin, &outcomes, given).await {
                return r;
            }
            match admin.record_results(outcomes).await {
                Ok(()) => reply(ReturnT::success()),
                Err(e) => reply(ReturnT::fail(format!("callback not recorded, send it again: {e}"))),
            }
        }
        other => reply(ReturnT::fail(messages::uri_not_found(other))),
    }
}

/// May a request carrying `given` act for `group` (`None`: no group, or not known)? The token
/// expected is the group's own, else the admin's; with neither, any request may.
fn allowed(admin: &Admin, group: Option<&Group>, given: &str) -> bool {
    let global = admin.config.access_token.as_deref().filter(|t| !t.trim().is_empty());
    let expected = match group {
        Some(g) => g.effective_token(global),
        None => global,
    };
    expected.is_none_or(|e| token_matches(given, e))
}

/// Refuses a callback that reports on a run of a group whose token the caller does not hold.
/// Only looked up when some group has its own token: otherwise the check at the door (the
/// admin's token) covers every group.
async fn check_run_groups(admin: &Admin, outcomes: &[HandleOutcome], given: &str) -> Result<(), Response> {
    if !admin.directory.any_group_token(|_| true) {
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
            return Err(reply(ReturnT::fail(messages::ACCESS_TOKEN_WRONG)));
        }
    }
    Ok(())
}
