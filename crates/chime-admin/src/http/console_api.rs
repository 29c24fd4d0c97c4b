//! What the web console needs beyond the REST API: login sessions (`/console/api/…`), user
//! management, the audit log, the schedule preview, dashboard counts, GLUE history and
//! clearing old runs (`/v1/…`). Their routes and access rules are declared in [`super::routes::ROUTES`].

use super::access::{self, audit_login, forbidden, Principal, SESSION_COOKIE};
use super::auth::{hash_password, is_legacy_hash, verify_password};
use super::directory_login::directory_login;
use super::error::ApiError;
use super::rest::int_param;
use super::rest::{parse_optional_body, path_id};
use crate::center::{Admin, UserFields};
use crate::config::LocalLogin;
use crate::model::{now_ms, Invalid};
use crate::rate_limit::KeyedBuckets;
use crate::sso::OidcLogins;
use crate::store::{AuditEntry, AuditFilter, DayCounts, GlueVersion};
use axum::extract::{ConnectInfo, FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type ApiResult<T> = Result<T, ApiError>;

/// How long a console session lasts.
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);
/// Failed logins per user name and client address before that pair is refused.
pub const MAX_FAILURES: u32 = 5;
/// Failed logins per user name, from any address, before the name is refused: guessing one
/// user's password from many addresses is slowed down too. Nothing is counted per address
/// alone: behind one NAT or proxy, one person's typing must not lock out the others.
pub const MAX_USER_FAILURES: u32 = 20;
/// How long logins stay refused after the last counted failure.
pub const LOCKOUT: Duration = Duration::from_secs(5 * 60);
/// Entries kept before expired ones are dropped (bounds the memory an attacker can fill).
const LIMITER_PRUNE_AT: usize = 100_000;

/// Failures counted for one key, and when the last one was.
#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    last: Instant,
}

impl Failures {
    /// Seconds left to wait when `max` failures are reached within [`LOCKOUT`].
    fn wait(&self, max: u32, now: Instant) -> Option<u64> {
        let elapsed = now.saturating_duration_since(self.last);
        (self.count >= max && elapsed < LOCKOUT).then(|| (LOCKOUT - elapsed).as_secs().max(1))
    }

    fn add(&mut self, now: Instant) {
        if now.saturating_duration_since(self.last) >= LOCKOUT {
            self.count = 0;
        }
        self.count += 1;
        self.last = now;
    }
}

#[derive(Debug, Default)]
struct Counts {
    by_pair: HashMap<(String, IpAddr), Failures>,
    by_user: HashMap<String, Failures>,
}

/// Failed-login counts per user name and address and per user name, in memory: a restart
/// forgets them (and a second admin process keeps its own), which is acceptable for slowing
/// down password guessing.
///
/// An attempt is counted as a failure when it starts ([`LoginLimiter::begin`]) and taken back
/// when the password was right ([`LoginLimiter::succeeded`]). So once a budget is used up, no
/// further attempt reaches the password hash check, however many arrive at the same time.
#[derive(Debug, Default)]
pub struct LoginLimiter {
    counts: Mutex<Counts>,
}

impl LoginLimiter {
    /// Counts an attempt of `user` from `ip`, or refuses it with the seconds to wait when the
    /// pair or the user name has used its failure budget.
    pub fn begin(&self, user: &str, ip: IpAddr) -> Result<(), u64> {
        let mut c = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if c.by_pair.len() > LIMITER_PRUNE_AT || c.by_user.len() > LIMITER_PRUNE_AT {
            c.by_pair.retain(|_, f| now.saturating_duration_since(f.last) < LOCKOUT);
            c.by_user.retain(|_, f| now.saturating_duration_since(f.last) < LOCKOUT);
        }
        let key = (user.to_owned(), ip);
        let wait_pair = c.by_pair.get(&key).and_then(|f| f.wait(MAX_FAILURES, now));
        let wait_user = c.by_user.get(user).and_then(|f| f.wait(MAX_USER_FAILURES, now));
        if let Some(wait) = wait_pair.max(wait_user) {
            return Err(wait);
        }
        let fresh = Failures { count: 0, last: now };
        c.by_pair.entry(key).or_insert(fresh).add(now);
        c.by_user.entry(user.to_owned()).or_insert(fresh).add(now);
        Ok(())
    }

    /// Takes back the attempt [`LoginLimiter::begin`] counted: the password was right. The
    /// user's failures from this address are forgotten; the name's failures from elsewhere
    /// still count, less this attempt.
    pub fn succeeded(&self, user: &str, ip: IpAddr) {
        let mut c = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        c.by_pair.remove(&(user.to_owned(), ip));
        if let Some(f) = c.by_user.get_mut(user) {
            f.count = f.count.saturating_sub(1);
        }
    }

    /// Takes back the attempt [`LoginLimiter::begin`] counted, and only it: the password could
    /// not be checked at all (the directory was down), which is no failure of the caller's.
    pub fn withdraw(&self, user: &str, ip: IpAddr) {
        let mut c = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = c.by_pair.get_mut(&(user.to_owned(), ip)) {
            f.count = f.count.saturating_sub(1);
        }
        if let Some(f) = c.by_user.get_mut(user) {
            f.count = f.count.saturating_sub(1);
        }
    }
}

/// OpenID Connect logins one client address may start in [`OIDC_START_PERIOD`]: each keeps a
/// row for 10 minutes, so one address cannot fill the table of logins under way.
pub const OIDC_STARTS: u32 = 30;
/// The period of [`OIDC_STARTS`].
pub const OIDC_START_PERIOD: Duration = Duration::from_secs(600);

/// Console state shared by the login handlers.
#[derive(Debug, Clone)]
pub struct ConsoleState {
    /// Failed logins.
    pub limiter: Arc<LoginLimiter>,
    /// The OpenID Connect providers, with their discovery documents as last fetched.
    pub oidc: Arc<OidcLogins>,
    /// OpenID Connect logins started, per client address.
    pub oidc_starts: Arc<KeyedBuckets<IpAddr>>,
    /// What the directory (LDAP) is reached with: the system's roots and `--tls-ca`, read once
    /// at start rather than at each login.
    pub directory_tls: Option<Arc<rustls::ClientConfig>>,
}

impl Default for ConsoleState {
    fn default() -> ConsoleState {
        ConsoleState {
            limiter: Arc::default(),
            oidc: Arc::default(),
            oidc_starts: Arc::new(KeyedBuckets::new(OIDC_STARTS, OIDC_START_PERIOD, 100_000)),
            directory_tls: None,
        }
    }
}

impl ConsoleState {
    /// The state for `config`: its OpenID Connect providers, and the TLS its providers and its
    /// directory are reached with (read once, here).
    pub fn for_config(config: &crate::config::AdminConfig) -> Result<ConsoleState, String> {
        if config.ldap_url.is_none() && config.oidc.is_empty() {
            return Ok(ConsoleState::default());
        }
        let tls = config
            .client_tls()
            .map_err(|e| format!("TLS set-up for the directory and OpenID providers failed: {e}"))?;
        Ok(ConsoleState {
            oidc: Arc::new(OidcLogins::new(&config.oidc, &tls)?),
            directory_tls: config.ldap_url.is_some().then(|| Arc::new(tls)),
            ..ConsoleState::default()
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LoginBody {
    username: String,
    password: String,
}

pub(super) fn session_cookie(value: &str, max_age: u64, secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{SESSION_COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}"
    ))
    .unwrap_or_else(|_| HeaderValue::from_static("chime_session=; Path=/"))
}

/// `Secure` when configured, or when a TLS-terminating proxy says the client used https.
pub(super) fn secure_cookie(admin: &Admin, headers: &HeaderMap) -> bool {
    admin.config.cookie_secure
        || headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("https"))
}

fn me_json(p: &Principal, role: &str) -> Value {
    json!({
        "username": p.username,
        "role": role,
        "admin": p.admin,
        "can_write": p.can_write,
        "group_ids": p.groups,
        "group_roles": p.roles,
        "csrf_token": p.csrf_token,
    })
}

/// A hash to verify against when the user does not exist, so both cases cost one argon2 run.
fn dummy_hash() -> &'static str {
    static H: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    H.get_or_init(|| hash_password("not-a-password"))
}

/// `POST /console/api/login`: checks a user name and password (slowed down after failures, see
/// [`LoginLimiter`]) and opens a session, answered as a cookie and the caller's rights.
pub(super) async fn login(
    State(admin): State<Arc<Admin>>,
    Extension(console): Extension<ConsoleState>,
    CallerIp(ip): CallerIp,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> ApiResult<Response> {
    let body = read_login(&body)?;
    if let Err(wait) = console.limiter.begin(&body.username, ip) {
        return Ok(too_many_failures(wait));
    }
    let user = match verify_login(&admin, &console, &body, ip).await {
        Ok(user) => user,
        // The directory was down: not the caller's failure, so it is not counted against them.
        Err(e) if e.status == StatusCode::SERVICE_UNAVAILABLE => {
            console.limiter.withdraw(&body.username, ip);
            return Err(e);
        }
        Err(e) => return Err(e),
    };
    console.limiter.succeeded(&body.username, ip);
    upgrade_legacy_hash(&admin, &user, &body.password).await?;
    let (token, csrf) = open_session(&admin, &user).await?;
    audit_login(&admin, &user.username, "login", StatusCode::OK, ip).await;
    Ok(session_answer(&admin, &headers, &user, &token, csrf))
}

/// The login body. No user name is this long (they are at most 64 characters): it is refused
/// before it is counted, so the limiter never keeps large keys.
fn read_login(body: &[u8]) -> ApiResult<LoginBody> {
    let body: LoginBody = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(None, format!("expected {{\"username\", \"password\"}}: {e}")))?;
    if body.username.len() > 256 {
        return Err(Invalid::new("username", "is too long").into());
    }
    Ok(body)
}

/// The address of the client a login is counted and audited against: behind a trusted proxy,
/// the client as the proxy saw it (`X-Forwarded-For`); otherwise the peer itself (unspecified
/// when the server was started without connection info, as in tests).
pub(super) struct CallerIp(pub IpAddr);

impl FromRequestParts<Arc<Admin>> for CallerIp {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, admin: &Arc<Admin>) -> Result<CallerIp, Infallible> {
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |ConnectInfo(a)| a.ip());
        let forwarded = parts
            .headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok());
        Ok(CallerIp(admin.config.trusted_proxies.client(peer, forwarded)))
    }
}

/// 429 with the seconds to wait, when the attempt's failure budget is used up.
fn too_many_failures(wait: u64) -> Response {
    let mut r = ApiError {
        status: StatusCode::TOO_MANY_REQUESTS,
        error: format!("too many failed logins; try again in {wait} s"),
        field: None,
    }
    .into_response();
    r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(wait));
    r
}

/// The user whose password `body` gives, or 401 (audited). A local user is checked here (an
/// unknown user costs the same hash check as a wrong password, so the answer's time does not
/// tell which it was); anyone else is asked of the directory, when one is set.
async fn verify_login(
    admin: &Admin,
    console: &ConsoleState,
    body: &LoginBody,
    ip: IpAddr,
) -> ApiResult<crate::store::User> {
    let user = admin.store.user(&body.username).await?;
    if user.as_ref().is_none_or(|u| u.source != "local") {
        if let Some(ldap) = admin.config.ldap() {
            let tls = console.directory_tls.clone();
            return directory_login(admin, &ldap, tls, &body.username, &body.password, ip).await;
        }
    }
    let hash = user
        .as_ref()
        .map(|u| u.password_hash.clone())
        .unwrap_or_else(|| dummy_hash().to_owned());
    let password = body.password.clone();
    let ok = tokio::task::spawn_blocking(move || verify_password(&password, &hash))
        .await
        .unwrap_or(false);
    match user {
        Some(u) if ok && u.role != "admin" && admin.config.local_login == LocalLogin::Admins => {
            audit_login(admin, &body.username, "login refused", StatusCode::FORBIDDEN, ip).await;
            Err(forbidden(
                "local passwords are for administrators only here: log in with your directory account",
            ))
        }
        Some(u) if ok => Ok(u),
        _ => {
            audit_login(admin, &body.username, "login failed", StatusCode::UNAUTHORIZED, ip).await;
            Err(ApiError::unauthorized("wrong user name or password"))
        }
    }
}

/// A password kept as XXL-JOB hashed it is replaced by an Argon2 hash at its first use.
async fn upgrade_legacy_hash(admin: &Admin, user: &crate::store::User, password: &str) -> ApiResult<()> {
    if !is_legacy_hash(&user.password_hash) {
        return Ok(());
    }
    let password = password.to_owned();
    let rehashed = tokio::task::spawn_blocking(move || hash_password(&password))
        .await
        .unwrap_or_default();
    if !rehashed.is_empty() {
        admin.store.set_password_hash(user.id, &rehashed).await?;
    }
    Ok(())
}

/// Stores a new session of `user` (by its token's hash) and drops expired ones; returns the
/// session's token and its CSRF token.
pub(super) async fn open_session(admin: &Admin, user: &crate::store::User) -> ApiResult<(String, String)> {
    let token = crate::token::random_hex();
    let csrf = crate::token::random_hex();
    let now = now_ms();
    let expires = now + SESSION_TTL.as_millis() as i64;
    admin
        .store
        .insert_session(&access::sha256_hex(&token), user.id, &csrf, now, expires)
        .await?;
    if let Err(e) = admin.store.purge_sessions(now).await {
        tracing::warn!(error = %e, "purging expired sessions failed");
    }
    Ok((token, csrf))
}

/// The answer to a login: the caller's rights, and the session's cookie.
fn session_answer(
    admin: &Admin,
    headers: &HeaderMap,
    user: &crate::store::User,
    token: &str,
    csrf: String,
) -> Response {
    let p = Principal::of_user(user, None, Some(csrf));
    let mut resp = Json(me_json(&p, &user.role)).into_response();
    resp.headers_mut().insert(
        header::SET_COOKIE,
        session_cookie(token, SESSION_TTL.as_secs(), secure_cookie(admin, headers)),
    );
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

pub(super) async fn logout(
    State(admin): State<Arc<Admin>>,
    Extension(console): Extension<ConsoleState>,
    Extension(p): Extension<Principal>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    if let Some(h) = &p.session_hash {
        admin.store.delete_session(h).await?;
        access::audit(
            &admin,
            &p.username,
            "logout",
            "/console/api/logout",
            StatusCode::OK,
            None,
            b"",
        )
        .await;
    }
    // A user of an OpenID Connect provider is sent on to the provider's logout, so the next
    // login there asks for the password again instead of signing them straight back in.
    let mut resp = match provider_logout(&admin, &console, &p).await {
        Some(url) => Json(json!({ "redirect": url })).into_response(),
        None => StatusCode::NO_CONTENT.into_response(),
    };
    resp.headers_mut().insert(
        header::SET_COOKIE,
        session_cookie("", 0, secure_cookie(&admin, &headers)),
    );
    Ok(resp)
}

/// The logout address of the provider `p` logged in through, when it publishes one.
async fn provider_logout(admin: &Admin, console: &ConsoleState, p: &Principal) -> Option<String> {
    // Only a console session: an API key or the bootstrap token has no provider to leave.
    p.session_hash.as_ref()?;
    let user = admin.store.user(&p.username).await.ok()??;
    let login = console.oidc.get(user.source.strip_prefix("oidc:")?)?;
    let after = format!("{}/console/", admin.config.public_url.as_deref()?);
    login.logout_url(&after).await
}

pub(super) async fn me(Extension(p): Extension<Principal>) -> Json<Value> {
    let role = if p.admin { "admin" } else { "user" };
    Json(me_json(&p, role))
}

fn user_json(u: &crate::store::User) -> Value {
    json!({
        "id": u.id,
        "username": u.username,
        "role": u.role,
        "can_write": u.role == "admin" || u.can_write,
        "group_ids": u.group_ids,
        "group_roles": u.group_roles,
        "source": u.source,
    })
}

pub(super) async fn list_users(State(admin): State<Arc<Admin>>) -> ApiResult<Json<Vec<Value>>> {
    Ok(Json(admin.store.list_users().await?.iter().map(user_json).collect()))
}

fn user_id(raw: &str) -> ApiResult<i64> {
    path_id(raw, "user")
}

pub(super) async fn show_user(State(admin): State<Arc<Admin>>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    Ok(Json(user_json(&admin.store.user_by_id(user_id(&id)?).await?)))
}

fn parse_user_body(body: &[u8]) -> ApiResult<UserFields> {
    serde_json::from_slice(body).map_err(|e| ApiError::bad_request(None, format!("invalid JSON body: {e}")))
}

pub(super) async fn create_user(
    State(admin): State<Arc<Admin>>,
    body: axum::body::Bytes,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let fields = parse_user_body(&body)?;
    let user = admin.create_user(fields).await?;
    Ok((StatusCode::CREATED, Json(user_json(&user))))
}

pub(super) async fn update_user(
    State(admin): State<Arc<Admin>>,
    Extension(p): Extension<Principal>,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> ApiResult<Json<Value>> {
    let id = user_id(&id)?;
    let fields = parse_user_body(&body)?;
    Ok(Json(user_json(&admin.update_user(id, fields, p.user_id).await?)))
}

pub(super) async fn delete_user(
    State(admin): State<Arc<Admin>>,
    Extension(p): Extension<Principal>,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    admin.delete_user(user_id(&id)?, p.user_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PasswordBody {
    current_password: String,
    new_password: String,
}

pub(super) async fn change_password(
    State(admin): State<Arc<Admin>>,
    Extension(p): Extension<Principal>,
    body: axum::body::Bytes,
) -> ApiResult<StatusCode> {
    let Some(uid) = p.user_id else {
        return Err(forbidden("the API token has no password"));
    };
    let b: PasswordBody =
        serde_json::from_slice(&body).map_err(|e| ApiError::bad_request(None, format!("invalid JSON body: {e}")))?;
    admin
        .change_password(uid, b.current_password, b.new_password, p.session_hash.as_deref())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The audit log, newest first: `username` (exact), `action` (contains, any case), `from` /
/// `to` (epoch ms, `from` ≤ at < `to`), paged with `before_id` and `limit`.
pub(super) async fn list_audit(
    State(admin): State<Arc<Admin>>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<Vec<AuditEntry>>> {
    let limit = int_param(&q, "limit")?.unwrap_or(100);
    if !(1..=1000).contains(&limit) {
        return Err(ApiError::bad_request(Some("limit"), "must be between 1 and 1000"));
    }
    let text = |name: &str| q.get(name).map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
    let filter = AuditFilter {
        username: text("username"),
        action: text("action"),
        from: int_param(&q, "from")?,
        to: int_param(&q, "to")?,
        before_id: int_param(&q, "before_id")?,
        limit,
    };
    if let (Some(from), Some(to)) = (filter.from, filter.to) {
        if from >= to {
            return Err(ApiError::bad_request(Some("to"), "must be later than 'from'"));
        }
    }
    Ok(Json(admin.store.list_audit(&filter).await?))
}

/// The preview's `more`: a job's further schedules as the job body gives them (a JSON array),
/// checked as saving the job would check them.
fn more_schedules_param(
    more: Option<&String>,
    kind: chime_protocol::ScheduleType,
    zone: &str,
) -> Result<Vec<crate::api::MoreSchedule>, Invalid> {
    let Some(json) = more.filter(|m| !m.is_empty()) else {
        return Ok(Vec::new());
    };
    if json.len() > 8 * 1024 {
        return Err(Invalid::new("more_schedules", "must be at most 8 KiB"));
    }
    let list: Vec<crate::api::MoreSchedule> =
        serde_json::from_str(json).map_err(|e| Invalid::new("more_schedules", e.to_string()))?;
    crate::api::check_more_schedules(&list, kind, zone)
}

/// Next fire times of a schedule that is not saved yet (the job form's live preview).
/// Each time carries its UTC offset and `dst_shift` when that offset differs from the one
/// before it (now, for the first).
pub(super) async fn schedule_preview(
    State(admin): State<Arc<Admin>>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<Value>> {
    let kind: chime_protocol::ScheduleType = q
        .get("type")
        .map(String::as_str)
        .unwrap_or("CRON")
        .parse()
        .map_err(|e: chime_protocol::UnknownVariant| Invalid::new("schedule_type", e.to_string()))?;
    let expr = q.get("expr").cloned().unwrap_or_default();
    let tz = q
        .get("tz")
        .filter(|t| !t.is_empty())
        .cloned()
        .unwrap_or_else(|| admin.config.default_time_zone.clone());
    let zone: chrono_tz::Tz = tz
        .parse()
        .map_err(|_| Invalid::new("time_zone", format!("unknown time zone '{tz}'")))?;
    let count = int_param(&q, "count")?.unwrap_or(5);
    if !(1..=100).contains(&count) {
        return Err(ApiError::bad_request(Some("count"), "must be between 1 and 100"));
    }
    // A job parameter to show resolved at each fire time: checked as saving it would check it.
    let param = q.get("param").map(String::as_str).unwrap_or_default();
    if param.len() > 65_535 {
        return Err(Invalid::new("param", "must be at most 64 KiB").into());
    }
    chime_params::check(param).map_err(|e| Invalid::new("param", e.to_string()))?;
    let now = now_ms();
    let more = more_schedules_param(q.get("more"), kind, &tz)?;
    let cal =
        crate::api::calendar_with_more(kind, &expr, &tz, &more, now).map_err(|e| Invalid::new("schedule_expr", e))?;
    // A business calendar, by name: its days leave fires out, and the preview says which.
    let business = match q.get("calendar").map(|c| c.trim()).filter(|c| !c.is_empty()) {
        None => None,
        Some(name) => {
            crate::api::calendars::check_calendar_name(name).map_err(|e| Invalid::new("calendar", e.message))?;
            let c = admin.store.business_calendar(name).await.map_err(|e| match e {
                crate::store::StoreError::NotFound(_) => {
                    ApiError::from(Invalid::new("calendar", format!("'{name}' is not a business calendar")))
                }
                other => other.into(),
            })?;
            Some(Arc::new(c.days().business_days()?))
        }
    };
    let cal = cal
        .with_business_days(business.clone())
        .map_err(|e| Invalid::new("calendar", e))?;
    // A fixed delay's later fires depend on when each run ends: only the first is known.
    let count = if cal.fixed_delay_ms().is_some() { 1 } else { count };
    let offset_of = |ms: i64| {
        use chrono::Offset;
        chrono::DateTime::from_timestamp_millis(ms)
            .map(|d| d.with_timezone(&zone).offset().fix().local_minus_utc())
            .unwrap_or(0)
    };
    let mut prev = offset_of(now);
    let mut out = Vec::new();
    let mut t = now;
    while out.len() < count as usize {
        let Some(n) = cal.next_after(t) else { break };
        let off = offset_of(n);
        let local = chrono::DateTime::from_timestamp_millis(n)
            .map(|d| d.with_timezone(&zone).to_rfc3339())
            .unwrap_or_default();
        let param = crate::run::resolve_param(param, n, &tz, business.as_deref());
        out.push(json!({ "at": n, "local": local, "utc_offset_secs": off, "dst_shift": off != prev, "param": param }));
        prev = off;
        t = n;
    }
    // Days the calendar left out, up to the last fire listed (or a month on, when none is).
    let until = out
        .last()
        .and_then(|f| f["at"].as_i64())
        .unwrap_or(now + 31 * 86_400_000);
    let skipped = super::rest::skipped_days(&cal, now, until, zone);
    Ok(Json(json!({ "time_zone": tz, "next": out, "skipped": skipped })))
}

/// Dashboard numbers for the caller's groups: counts, runs per day, dispatch lateness.
pub(super) async fn stats(
    State(admin): State<Arc<Admin>>,
    Extension(p): Extension<Principal>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<Value>> {
    const DAY: i64 = 86_400_000;
    // Times are epoch ms from 1970 to the end of year 9999: the day arithmetic below and in the
    // store then cannot overflow, whatever a caller sends.
    const LATEST: i64 = 253_402_300_799_999;
    let in_range = |name: &'static str, t: i64| {
        if (0..=LATEST).contains(&t) {
            Ok(t)
        } else {
            Err(ApiError::bad_request(
                Some(name),
                format!("must be epoch milliseconds from 0 to {LATEST} (years 1970 to 9999)"),
            ))
        }
    };
    let now = now_ms();
    let to = match int_param(&q, "to")? {
        Some(t) => in_range("to", t)?,
        None => now - now.rem_euclid(DAY) + DAY,
    };
    let from = match int_param(&q, "from")? {
        Some(f) => in_range("from", f)?,
        None => (to - 7 * DAY).max(0),
    };
    if from >= to || to - from > 366 * DAY {
        return Err(ApiError::bad_request(Some("from"), "the range must be 1 to 366 days"));
    }
    let scope = p.group_scope();
    let (groups, jobs, running_jobs) = admin.store.console_counts(scope).await?;
    let days: Vec<DayCounts> = admin.store.runs_per_day(from, to, scope).await?;
    // Live executors: a manual address counts only when it answers (it has no heartbeat).
    let mut listing: Vec<_> = admin
        .directory
        .executors(None)
        .into_iter()
        .filter(|(g, _)| p.sees_group(g.id))
        .collect();
    super::rest::ask_manual_addresses(&admin, &mut listing).await;
    let executors: usize = listing
        .iter()
        .map(|(_, e)| e.iter().filter(|x| x.answers != Some(false)).count())
        .sum();
    // How late the most overdue started job is right now (0 when none is overdue).
    let current_lateness = admin
        .store
        .earliest_next_fire(scope)
        .await?
        .map_or(0.0, |t| now.saturating_sub(t).max(0) as f64 / 1000.0);
    let mut lateness = lateness(&admin.metrics.render());
    lateness["current_seconds"] = json!(current_lateness);
    Ok(Json(json!({
        "groups": groups,
        "jobs": jobs,
        "running_jobs": running_jobs,
        "executors": executors,
        "days": days,
        "lateness": lateness,
    })))
}

/// Dispatch lateness from the metrics histogram: count, mean and bucket counts.
fn lateness(metrics: &str) -> Value {
    let mut count = 0.0;
    let mut sum = 0.0;
    let mut buckets = Vec::new();
    for line in metrics.lines() {
        let Some(rest) = line.strip_prefix("chime_dispatch_lateness_seconds") else {
            continue;
        };
        let value = rest
            .rsplit(' ')
            .next()
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0);
        if rest.starts_with("_count") {
            count = value;
        } else if rest.starts_with("_sum") {
            sum = value;
        } else if let Some(le) = rest.strip_prefix("_bucket{le=\"").and_then(|r| r.split('"').next()) {
            buckets.push(json!({ "le": le, "count": value }));
        }
    }
    let mean = if count > 0.0 { sum / count } else { 0.0 };
    json!({ "count": count, "mean_seconds": mean, "buckets": buckets })
}

pub(super) async fn glue_history(
    State(admin): State<Arc<Admin>>,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<GlueVersion>>> {
    let id = path_id(&id, "job")?;
    admin.store.job(id).await?;
    Ok(Json(admin.store.glue_versions(id, 50).await?))
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ClearBody {
    /// Keep runs younger than this many days (0: clear all finished runs).
    older_than_days: Option<i64>,
    job_id: Option<i64>,
    group_id: Option<i64>,
}

/// Deletes finished runs (XXL-JOB's "clear log"). Non-admins must name a job or group they
/// may write.
pub(super) async fn clear_runs(
    State(admin): State<Arc<Admin>>,
    Extension(p): Extension<Principal>,
    body: axum::body::Bytes,
) -> ApiResult<Json<Value>> {
    let b: ClearBody = parse_optional_body(&body)?;
    let days = b.older_than_days.unwrap_or(30);
    if !(0..=36_500).contains(&days) {
        return Err(Invalid::new("older_than_days", "must be 0 to 36500").into());
    }
    let mut group = b.group_id;
    if let Some(j) = b.job_id {
        let job = admin.store.job(j).await?;
        if group.is_some_and(|g| g != job.group_id) {
            return Err(Invalid::new("group_id", "the job is not in this group").into());
        }
        group = Some(job.group_id);
    }
    match group {
        Some(g) => p.check_write(g)?,
        None if !p.admin => return Err(forbidden("name a job or group to clear")),
        None => {}
    }
    let before = now_ms() - days * 86_400_000;
    let n = admin
        .store
        .clear_finished_runs(before, b.job_id, if b.job_id.is_some() { None } else { group })
        .await?;
    Ok(Json(json!({ "deleted": n })))
}

/// One enum value as the console offers it: the wire value and its English title.
fn choices<T: Copy>(all: &[T], value: fn(T) -> &'static str, title: fn(T) -> &'static str) -> Value {
    Value::Array(
        all.iter()
            .map(|v| json!({ "value": value(*v), "title": title(*v) }))
            .collect(),
    )
}

/// The values every job and run enum accepts, in the order XXL-JOB's console lists them. The
/// console builds its selects from this answer, so it can never offer fewer (or other) values
/// than the admin accepts, and an edit never turns a value the console did not know into
/// another one. `alarm_email` says whether this admin can send alarm e-mails (an SMTP server
/// is configured), so the job form can warn before alarm contacts are saved in vain.
pub(super) async fn options(State(admin): State<Arc<Admin>>) -> Json<Value> {
    use chime_protocol::{BlockStrategy, GlueType, MisfireStrategy, RouteStrategy, ScheduleType, TriggerType};
    Json(json!({
        "schedule_types": choices(ScheduleType::ALL, ScheduleType::as_str, ScheduleType::title),
        "misfire_strategies": choices(MisfireStrategy::ALL, MisfireStrategy::as_str, MisfireStrategy::title),
        "route_strategies": choices(RouteStrategy::ALL, RouteStrategy::as_str, RouteStrategy::title),
        "block_strategies": choices(BlockStrategy::ALL, BlockStrategy::as_str, BlockStrategy::title),
        "glue_types": choices(GlueType::ALL, GlueType::as_str, GlueType::title),
        "trigger_types": choices(TriggerType::ALL, TriggerType::as_str, TriggerType::title),
        "run_statuses": crate::model::RunStatus::ALL,
        "alarm_email": admin.config.smtp_url.is_some(),
    }))
}
