//! Who may do what: authentication (bearer API token or console session cookie), CSRF checks,
//! per-route authorisation, and the audit log — all in one middleware driven by one table.
//!
//! Every route of `/v1` and `/console/api` is declared with its [`Rule`] in
//! [`super::routes::ROUTES`]; the router puts the rule on each request of the route, and the
//! middleware refuses a request that carries none, so a route given the middleware without a
//! rule fails closed (403) instead of being open.
//!
//! Targets (`/jobs/{id}`, `/runs/{id}`, `/groups/{key}`, the `child_job_ids` of a job body) are
//! resolved to their group before the handler runs. The group a job body names is resolved and
//! authorised by the job handlers themselves, from the one value they then store. The job and run lists are
//! limited to the caller's groups in SQL by their handlers (so `limit` and paging count only
//! rows the caller may see); every list response is filtered here again by group, as a second
//! wall. Refused (403) and successful changes are written to the audit log.

use super::auth::token_matches;
use super::error::ApiError;
pub use super::principal::{forbidden, Principal};
use crate::api::{GroupRole, KeyState, TOKEN_PREFIX};
use crate::center::Admin;
use crate::model::now_ms;
use crate::store::NewAuditEntry;
pub use crate::token::sha256_hex;
use axum::body::{to_bytes, Body, Bytes};
use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::sync::Arc;

/// Name of the console session cookie.
pub const SESSION_COOKIE: &str = "chime_session";
/// Header carrying the CSRF token on cookie-authenticated state changes.
pub const CSRF_HEADER: &str = "x-csrf-token";
/// Largest request body the middleware reads (to resolve groups and write the audit log), and
/// so the largest any `/v1` handler is given.
pub const MAX_BODY: usize = 4 << 20;

/// How a route's target group is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// `{key}` is a group id or app name.
    GroupKey,
    /// `{id}` is a job id.
    Job,
    /// `{id}` is a run id.
    Run,
}

/// What a caller needs to use a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Nobody needs to be logged in (the login itself).
    Public,
    /// Any logged-in caller; the handler limits what it shows or does.
    Authenticated,
    /// Any logged-in caller that may write; the handler checks the groups it touches.
    Writer,
    /// Admins (and the API token) only.
    Admin,
    /// Callers holding this role in some group; the handler checks the object, whose groups
    /// are not in the path (a workflow: the groups of its nodes' jobs).
    Needs(GroupRole),
    /// A list; entries outside the caller's groups are removed (`field` holds the group id).
    List {
        /// JSON key of the group id in each entry.
        field: &'static str,
    },
    /// Read one target in a permitted group.
    Read(Target),
    /// Run one target in a permitted group (trigger, kill, start, stop): operators and above.
    Operate(Target),
    /// Change one target in a permitted group: editors and above.
    Write(Target),
    /// Manage who holds which role in one group: its group admins (and administrators).
    ManageGroup(Target),
    /// Create a job: its child jobs' groups must be permitted and writable, and only admins
    /// edit GLUE source. The body's group is checked by the handler, which resolves it.
    CreateJob,
    /// Change a job: its group and the groups of child jobs it adds must be permitted and
    /// writable. The body's new group is checked by the handler, which resolves it.
    UpdateJob,
}

/// A cookie's value from the request headers.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}

/// The caller of a request: bearer token first, then the session cookie.
async fn authenticate(admin: &Admin, headers: &HeaderMap) -> Result<Option<Principal>, ApiError> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim);
    if let Some(key) = bearer.filter(|t| t.starts_with(TOKEN_PREFIX)) {
        return key_principal(admin, key).await.map(Some);
    }
    if let Some(given) = bearer {
        let Some(expected) = admin.config.api_token.as_deref().filter(|t| !t.is_empty()) else {
            return Err(ApiError::unauthorized(
                "the API token is disabled: use an API key (console, page API keys) or start the admin with --api-token",
            ));
        };
        if token_matches(given, expected) {
            return Ok(Some(Principal::api_token()));
        }
        return Err(ApiError::unauthorized("wrong API token"));
    }
    let Some(token) = cookie(headers, SESSION_COOKIE).filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    let hash = sha256_hex(&token);
    match admin.store.session_user(&hash, now_ms()).await? {
        None => Err(ApiError::unauthorized("your session has ended; log in again")),
        Some(s) => Ok(Some(Principal::of_user(&s.user, Some(hash), Some(s.csrf_token)))),
    }
}

/// How often a key's last use is written: once a minute at most, so a key polled every second
/// costs one write a minute, not one a request.
const KEY_USE_RESOLUTION_MS: i64 = 60_000;

/// The caller of a request made with API key `token` ([`Principal::of_key`]); a revoked or
/// expired key, or one whose maker was deleted, is refused.
async fn key_principal(admin: &Admin, token: &str) -> Result<Principal, ApiError> {
    let now = now_ms();
    let found = admin.store.api_key_by_token(&sha256_hex(token)).await?;
    let Some(found) = found else {
        return Err(ApiError::unauthorized("unknown API key"));
    };
    let key = &found.key;
    match key.state(now) {
        KeyState::Active => {}
        KeyState::Revoked => return Err(ApiError::unauthorized("this API key was revoked")),
        KeyState::Expired => return Err(ApiError::unauthorized("this API key has expired")),
    }
    if found.owner_gone() {
        return Err(ApiError::unauthorized(
            "the user who made this API key no longer exists",
        ));
    }
    if key.last_used_at < now - KEY_USE_RESOLUTION_MS {
        admin.store.touch_api_key(key.id, now, KEY_USE_RESOLUTION_MS).await?;
    }
    Ok(Principal::of_key(&found))
}

/// The middleware on `/v1` and `/console/api`: authenticate, check CSRF, authorise by
/// the route's [`Rule`], filter lists, and audit changes and refused (403) attempts to change.
pub async fn guard(State(admin): State<Arc<Admin>>, req: Request, next: Next) -> Response {
    match guard_inner(admin, req, next).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn guard_inner(admin: Arc<Admin>, req: Request, next: Next) -> Result<Response, ApiError> {
    let method = req.method().clone();
    let pattern = req
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_owned())
        .unwrap_or_default();
    let Some(rule) = req.extensions().get::<Rule>().copied() else {
        tracing::error!(%method, %pattern, "route without an access rule refused");
        return Err(forbidden("this route has no access rule"));
    };
    if rule == Rule::Public {
        return Ok(next.run(req).await);
    }
    let principal = match authenticate(&admin, req.headers()).await? {
        Some(p) => p,
        None => {
            return Err(ApiError::unauthorized(
                "log in to the console, or send 'Authorization: Bearer <api token>'",
            ))
        }
    };
    let attempt = Attempt::of(&req, &method, pattern);
    if attempt.writes {
        if let Err(e) = check_csrf(req.headers(), &principal) {
            return Err(attempt.refused(&admin, &principal, &[], e).await);
        }
    }
    let param = path_param(&attempt.pattern, &attempt.path);
    let (parts, body) = req.into_parts();
    let body = if attempt.writes {
        read_body(body).await?
    } else {
        Bytes::new()
    };
    if let Err(e) = authorise(&admin, &principal, rule, param.as_deref(), &parts.uri, &body).await {
        return Err(attempt.refused(&admin, &principal, &body, e).await);
    }
    // The object an edit acts on, before it: the audit entry names the fields that changed.
    let before = if attempt.writes {
        crate::audit_diff::snapshot(&admin, &attempt.action, param.as_deref()).await
    } else {
        None
    };
    let mut req = Request::from_parts(parts, Body::from(body.clone()));
    req.extensions_mut().insert(principal.clone());
    if attempt.writes {
        req.extensions_mut().insert(AuditContext {
            username: principal.username.clone(),
            action: attempt.action.clone(),
            target: attempt.path.clone(),
        });
    }
    let resp = next.run(req).await;
    if resp.extensions().get::<Audited>().is_some() {
        return Ok(resp);
    }
    let resp = match rule {
        Rule::List { field } if !principal.admin && resp.status().is_success() => {
            filter_list(resp, field, &principal).await?
        }
        _ => resp,
    };
    attempt
        .audit_outcome(&admin, &principal, param.as_deref(), &body, before, resp.status())
        .await;
    Ok(resp)
}

/// Who changes what, given to the handler of a change: a handler that writes the change's
/// audit entry in the change's own transaction builds it from this and answers with
/// [`Audited`], and the middleware then writes none.
#[derive(Debug, Clone)]
pub struct AuditContext {
    username: String,
    action: String,
    target: String,
}

impl AuditContext {
    /// The entry of the change answered with `status`, whose request body was `body`.
    pub fn entry(&self, status: StatusCode, body: &[u8]) -> NewAuditEntry {
        let detail = audit_detail(status, None, body).to_string();
        NewAuditEntry::new(now_ms(), &self.username, &self.action, &self.target, &detail)
    }
}

/// Put on a response by a handler that wrote its change's audit entry itself
/// ([`AuditContext`]).
#[derive(Debug, Clone, Copy)]
pub struct Audited;

/// What a request to a guarded route attempts, as the audit records it.
struct Attempt {
    /// `METHOD /pattern`.
    action: String,
    /// The route's pattern.
    pattern: String,
    /// The path the caller asked for.
    path: String,
    /// Not a GET, HEAD or OPTIONS: a change, checked for CSRF and audited.
    writes: bool,
}

impl Attempt {
    fn of(req: &Request, method: &Method, pattern: String) -> Attempt {
        // Path parameters, read from the concrete path by the pattern's position.
        // Inside `nest` the URI has lost its prefix; the original is what the caller asked for.
        let path = req
            .extensions()
            .get::<axum::extract::OriginalUri>()
            .map(|u| u.path().to_owned())
            .unwrap_or_else(|| req.uri().path().to_owned());
        Attempt {
            action: format!("{method} {pattern}"),
            pattern,
            path,
            writes: !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS),
        }
    }

    /// Who tried to change what and was refused: an account probing beyond its rights shows up.
    async fn refused(&self, admin: &Admin, principal: &Principal, body: &[u8], e: ApiError) -> ApiError {
        if self.writes && e.status == StatusCode::FORBIDDEN {
            audit(
                admin,
                &principal.username,
                &self.action,
                &self.path,
                e.status,
                Some(&e.error),
                body,
            )
            .await;
        }
        e
    }

    /// Audits a change the handler answered with `status`, with the fields it changed when
    /// `before` was taken. A handler's own refusal (e.g. clearing runs of a group the caller
    /// may not write) is audited like the middleware's.
    async fn audit_outcome(
        &self,
        admin: &Admin,
        principal: &Principal,
        param: Option<&str>,
        body: &[u8],
        before: Option<Value>,
        status: StatusCode,
    ) {
        if !self.writes
            || !(status.is_success() || status == StatusCode::FORBIDDEN)
            || self.pattern == "/console/api/logout"
        {
            return;
        }
        let changes = match before {
            Some(before) if status.is_success() => crate::audit_diff::snapshot(admin, &self.action, param)
                .await
                .map(|after| crate::audit_diff::changes(&before, &after)),
            _ => None,
        };
        let entry = AuditEntry {
            username: &principal.username,
            action: &self.action,
            target: &self.path,
            status,
        };
        audit_changes(admin, entry, body, changes).await;
    }
}

/// A change from a console session must carry the session's CSRF token (an API token has none).
fn check_csrf(headers: &HeaderMap, principal: &Principal) -> Result<(), ApiError> {
    let Some(expected) = &principal.csrf_token else {
        return Ok(());
    };
    let given = headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok()).unwrap_or("");
    if token_matches(given, expected) {
        Ok(())
    } else {
        Err(forbidden("missing or wrong X-CSRF-Token header"))
    }
}

/// The body of a change, read whole (it is audited and, for some routes, authorised by).
async fn read_body(body: Body) -> Result<Bytes, ApiError> {
    to_bytes(body, MAX_BODY).await.map_err(|_| ApiError {
        status: StatusCode::PAYLOAD_TOO_LARGE,
        error: format!("request body too large (at most {} MiB)", MAX_BODY >> 20),
        field: None,
    })
}

/// The answer to a method a route does not have: 405 with the JSON error body every other
/// refusal has (the router adds the `Allow` header). A caller's mistake (a browser's preflight,
/// a scanner, a typo), not the admin's: logged at debug, before authentication, since which
/// methods a route has is no secret.
pub async fn method_not_allowed(method: Method, pattern: Option<MatchedPath>) -> ApiError {
    let pattern = pattern.as_ref().map(MatchedPath::as_str).unwrap_or("this path");
    tracing::debug!(%method, %pattern, "method not allowed");
    ApiError {
        status: StatusCode::METHOD_NOT_ALLOWED,
        error: format!("{method} is not allowed on {pattern}; the Allow header lists the methods it has"),
        field: None,
    }
}

/// The value of the first `{…}` parameter of `pattern` in `path`: the object the route's rule
/// names (`/v1/jobs/{id}/backfills/{backfill}`: the job). A later one names something of that
/// object, which its handler checks belongs to it. Matched from the end, as `path` may carry
/// the context path in front.
fn path_param(pattern: &str, path: &str) -> Option<String> {
    pattern
        .rsplit('/')
        .zip(path.rsplit('/'))
        .filter(|(p, _)| p.starts_with('{'))
        .last()
        .map(|(_, v)| percent_decode(v))
}

fn percent_decode(s: &str) -> String {
    let s = s.replace('+', " ");
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Some(v) = std::str::from_utf8(&b[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

async fn target_group(admin: &Admin, target: Target, param: Option<&str>) -> Result<Option<i64>, ApiError> {
    let Some(p) = param else { return Ok(None) };
    let found = match target {
        Target::GroupKey => match p.parse::<i64>() {
            Ok(id) => admin.store.group(id).await.ok().map(|g| g.id),
            Err(_) => admin.store.group_by_app_name(p).await?.map(|g| g.id),
        },
        Target::Job => match p.parse::<i64>() {
            Ok(id) => admin.store.job(id).await.ok().map(|j| j.group_id),
            Err(_) => None,
        },
        Target::Run => match p.parse::<i64>() {
            Ok(id) => admin.store.run(id).await.ok().map(|r| r.group_id),
            Err(_) => None,
        },
    };
    Ok(found)
}

/// Refuses GLUE source changes by non-admins: any `glue_source`, or a `glue_type` other than
/// `current` (the job's, or `BEAN` for a new job).
fn check_glue(principal: &Principal, body: &Value, current: &str) -> Result<(), ApiError> {
    if principal.admin {
        return Ok(());
    }
    let source = body.get("glue_source").is_some_and(|v| !v.is_null());
    let kind = body
        .get("glue_type")
        .and_then(Value::as_str)
        .is_some_and(|t| t != current);
    if source || kind {
        return Err(forbidden("only admins may edit GLUE script source"));
    }
    Ok(())
}

/// Refuses child jobs outside the groups a non-admin may operate: a child runs as `PARENT` in
/// its own group whenever the parent succeeds, so linking one is operating its group. Children
/// the job already has (linked by someone allowed to) may stay, so a user can still save a job
/// an admin linked across groups. A missing job is refused with the same words as another
/// group's, so the answer does not tell which job ids exist elsewhere.
async fn check_children(admin: &Admin, p: &Principal, body: &Value, current: &[i64]) -> Result<(), ApiError> {
    if p.admin {
        return Ok(());
    }
    let Some(ids) = body.get("child_job_ids").and_then(Value::as_array) else {
        return Ok(());
    };
    let added: Vec<i64> = ids
        .iter()
        .filter_map(Value::as_i64)
        .filter(|id| !current.contains(id))
        .collect();
    if added.is_empty() {
        return Ok(());
    }
    let found = admin.store.jobs_by_ids(&added).await?;
    for id in added {
        let allowed = found
            .iter()
            .find(|j| j.id == id)
            .is_some_and(|j| p.check_write(j.group_id).is_ok());
        if !allowed {
            return Err(forbidden(&format!(
                "child job {id} is not a job you may operate: child jobs must be in your executor groups"
            )));
        }
    }
    Ok(())
}

async fn authorise(
    admin: &Admin,
    p: &Principal,
    rule: Rule,
    param: Option<&str>,
    uri: &axum::http::Uri,
    body: &Bytes,
) -> Result<(), ApiError> {
    let json_body = || serde_json::from_slice::<Value>(body).unwrap_or(Value::Null);
    match rule {
        Rule::Public | Rule::Authenticated => Ok(()),
        Rule::Writer => {
            if p.can_write {
                Ok(())
            } else {
                Err(forbidden("your account is read-only"))
            }
        }
        Rule::Needs(role) => {
            if p.admin || p.roles.iter().any(|g| g.role >= role) {
                Ok(())
            } else if role > GroupRole::Viewer && !p.can_write {
                Err(forbidden("your account is read-only"))
            } else {
                Err(forbidden(&format!("this needs the role {role} in an executor group")))
            }
        }
        Rule::Admin => {
            if p.admin {
                Ok(())
            } else {
                Err(forbidden("only admins may do this"))
            }
        }
        Rule::List { .. } => {
            if p.admin {
                return Ok(());
            }
            // An explicit group filter outside the caller's groups is refused, not emptied.
            let q: Vec<(String, String)> = uri
                .query()
                .map(|q| {
                    q.split('&')
                        .filter_map(|kv| kv.split_once('='))
                        .map(|(k, v)| (k.to_owned(), percent_decode(v)))
                        .collect()
                })
                .unwrap_or_default();
            for (k, v) in &q {
                let target = match k.as_str() {
                    "group_id" | "group" => target_group(admin, Target::GroupKey, Some(v)).await?,
                    "job_id" => target_group(admin, Target::Job, Some(v)).await?,
                    _ => continue,
                };
                if let Some(g) = target {
                    if !p.sees_group(g) {
                        return Err(forbidden("you have no access to this executor group"));
                    }
                }
            }
            Ok(())
        }
        Rule::Read(t) => match target_group(admin, t, param).await? {
            Some(g) if !p.sees_group(g) => Err(forbidden("you have no access to this executor group")),
            _ => Ok(()),
        },
        Rule::Operate(t) => needs_role(admin, p, t, param, GroupRole::Operator).await,
        Rule::Write(t) => needs_role(admin, p, t, param, GroupRole::Editor).await,
        Rule::ManageGroup(t) => match target_group(admin, t, param).await? {
            Some(g) => p.check_role(g, GroupRole::GroupAdmin),
            None => Ok(()),
        },
        Rule::CreateJob => {
            if !p.can_write {
                return Err(forbidden("your account is read-only"));
            }
            // The body's group is resolved and authorised once, by the handler, which then
            // stores that same group (`rest::job_group`): resolving it here too could disagree.
            let b = json_body();
            check_glue(p, &b, "BEAN")?;
            check_children(admin, p, &b, &[]).await
        }
        Rule::UpdateJob => {
            if !p.can_write {
                return Err(forbidden("your account is read-only"));
            }
            let job = match param.and_then(|v| v.parse::<i64>().ok()) {
                Some(id) => admin.store.job(id).await.ok(),
                None => None,
            };
            let b = json_body();
            if let Some(job) = &job {
                p.check_write(job.group_id)?;
                check_glue(p, &b, job.glue_type.as_str())?;
            }
            let current = job.as_ref().map_or(&[][..], |j| j.child_job_ids.as_slice());
            check_children(admin, p, &b, current).await
        }
    }
}

/// 403 unless the caller holds `needed` in the target's group; a caller who is read-only
/// everywhere is told so before the target is looked up.
async fn needs_role(
    admin: &Admin,
    p: &Principal,
    t: Target,
    param: Option<&str>,
    needed: GroupRole,
) -> Result<(), ApiError> {
    if !p.can_write {
        return Err(forbidden("your account is read-only"));
    }
    match target_group(admin, t, param).await? {
        Some(g) => p.check_role(g, needed),
        None => Ok(()),
    }
}

/// Removes entries of other groups from a JSON array response.
async fn filter_list(resp: Response, field: &str, p: &Principal) -> Result<Response, ApiError> {
    let (mut parts, body) = resp.into_parts();
    let bytes = to_bytes(body, usize::MAX)
        .await
        .map_err(|_| ApiError::bad_request(None, "response unreadable"))?;
    let Ok(Value::Array(items)) = serde_json::from_slice::<Value>(&bytes) else {
        // Not a list: refuse rather than leak.
        return Err(forbidden("this list cannot be filtered for your account"));
    };
    let kept: Vec<Value> = items
        .into_iter()
        .filter(|v| v.get(field).and_then(Value::as_i64).is_some_and(|g| p.sees_group(g)))
        .collect();
    let out = serde_json::to_vec(&kept).unwrap_or_default();
    parts.headers.remove(header::CONTENT_LENGTH);
    Ok(Response::from_parts(parts, Body::from(out)))
}

/// Removes secrets and shortens long strings before a body goes to the audit log. URLs are
/// kept up to their host: a chat webhook's URL carries its key in the path or query.
fn redact(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| {
                    if k.contains("password") || k.contains("token") || k.contains("secret") {
                        (k, Value::String("***".into()))
                    } else if k == "url" || k.ends_with("_url") || k.contains("webhook") {
                        let shown = match &v {
                            Value::String(s) => Value::String(crate::api::alarm_channels::shown_url(s)),
                            other => other.clone(),
                        };
                        (k, shown)
                    } else {
                        (k, redact(v))
                    }
                })
                .collect(),
        ),
        Value::String(s) if s.len() > 4000 => {
            let cut: String = s.chars().take(4000).collect();
            Value::String(format!("{cut}… ({} bytes)", s.len()))
        }
        other => other,
    }
}

/// Writes a console login attempt to the audit log, with the client's address.
pub(super) async fn audit_login(admin: &Admin, username: &str, action: &str, status: StatusCode, ip: std::net::IpAddr) {
    let detail = serde_json::to_vec(&json!({ "ip": ip.to_string() })).unwrap_or_default();
    audit(admin, username, action, "/console/api/login", status, None, &detail).await;
}

/// Writes one audit entry: the response status, the refusal's reason when there is one, and the
/// request body with secrets removed. A failure is logged, not returned: the change already
/// happened, or the refusal stands either way.
pub async fn audit(
    admin: &Admin,
    username: &str,
    action: &str,
    target: &str,
    status: StatusCode,
    error: Option<&str>,
    body: &[u8],
) {
    let detail = audit_detail(status, error, body);
    write_audit(admin, username, action, target, detail).await;
}

/// Who did what to which object, and how it ended: an audit entry's head.
struct AuditEntry<'a> {
    username: &'a str,
    action: &'a str,
    target: &'a str,
    status: StatusCode,
}

/// Writes the audit entry of a successful edit with the fields it changed (before and after,
/// from [`crate::audit_diff`]) next to the request body.
async fn audit_changes(admin: &Admin, e: AuditEntry<'_>, body: &[u8], changes: Option<Value>) {
    let mut detail = audit_detail(e.status, None, body);
    if let Some(changes) = changes {
        detail["changes"] = changes;
    }
    write_audit(admin, e.username, e.action, e.target, detail).await;
}

/// An audit entry's detail: the response status, the refusal's reason, the request body with
/// secrets removed.
fn audit_detail(status: StatusCode, error: Option<&str>, body: &[u8]) -> Value {
    let request = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice::<Value>(body)
            .map(redact)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body[..body.len().min(4000)]).into_owned()))
    };
    let mut detail = json!({ "status": status.as_u16(), "request": request });
    if let Some(e) = error {
        detail["error"] = json!(e);
    }
    detail
}

/// Appends one entry to the audit log; a failure is logged, not returned.
async fn write_audit(admin: &Admin, username: &str, action: &str, target: &str, detail: Value) {
    let detail = detail.to_string();
    if let Err(e) = admin
        .store
        .insert_audit(now_ms(), username, action, target, &detail)
        .await
    {
        tracing::error!(error = %e, %action, "audit log write failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_and_cookies() {
        assert_eq!(
            path_param("/v1/jobs/{id}/kill", "/v1/jobs/7/kill").as_deref(),
            Some("7")
        );
        assert_eq!(
            path_param("/v1/groups/{key}", "/v1/groups/a%20b").as_deref(),
            Some("a b")
        );
        assert_eq!(path_param("/v1/jobs", "/v1/jobs"), None);
        // The object the rule names is the first parameter, not the one of it named after.
        assert_eq!(
            path_param("/v1/jobs/{id}/backfills/{backfill}", "/ctx/v1/jobs/7/backfills/9").as_deref(),
            Some("7")
        );
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, "a=1; chime_session=xyz; b=2".parse().unwrap());
        assert_eq!(cookie(&h, SESSION_COOKIE).as_deref(), Some("xyz"));
        assert_eq!(sha256_hex("abc").len(), 64);
        let r = redact(json!({"password": "x", "nested": {"api_token": "y"}, "a": 1}));
        assert_eq!(r, json!({"password": "***", "nested": {"api_token": "***"}, "a": 1}));
        let r =
            redact(json!({"secret": "s", "url": "https://oapi.dingtalk.com/robot/send?access_token=K", "name": "x"}));
        assert_eq!(
            r,
            json!({"secret": "***", "url": "https://oapi.dingtalk.com/…", "name": "x"})
        );
    }
}
