//! Console logins through OpenID Connect providers (`--oidc`): `GET /console/oidc/{name}/login`
//! sends the browser to the provider, `GET /console/oidc/{name}/callback` takes it back, checks
//! the answer and opens a session. The login under way is kept in the database
//! (`store::LoginState`): accepted once, within 10 minutes, and only from the browser that left
//! (a random value in a cookie of its own). Users are kept as `oidc:NAME` users whose roles
//! come from their groups claim through `sso_roles` at each login, like directory users.
//!
//! Both routes are pages a browser navigates to, so they answer with HTML, not JSON. The way
//! back ends on a page that sets the session cookie and moves on to the console by itself: the
//! session cookie is `SameSite=Strict`, which a browser does not send on a navigation that a
//! redirect chain from the provider's site started, but does on one this page starts.

use super::access::{audit_login, cookie};
use super::console_api::{open_session, secure_cookie, session_cookie, CallerIp, ConsoleState, SESSION_TTL};
use super::error::ApiError;
use crate::alarm::escape_html;
use crate::center::Admin;
use crate::model::now_ms;
use crate::sso::OidcFailure;
use crate::store::LoginState;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// The cookie that ties a login under way to the browser that started it.
const LOGIN_COOKIE: &str = "chime_oidc";
/// How long a login may stay at the provider.
const LOGIN_TTL: Duration = Duration::from_secs(600);
/// Longest `code`, `state` or error text accepted on the way back (providers' are far shorter).
const MAX_PARAM: usize = 4096;

/// `GET /console/api/login-options`: how one may log in here (the login page's buttons).
pub(super) async fn login_options(
    State(admin): State<Arc<Admin>>,
    Extension(console): Extension<ConsoleState>,
) -> Json<serde_json::Value> {
    Json(json!({
        "oidc": console.oidc.names(),
        "ldap": admin.config.ldap_url.is_some(),
    }))
}

/// `GET /console/oidc/{name}/login`: sends the browser to the provider with a new login's
/// state, nonce and PKCE challenge.
pub(super) async fn begin(
    State(admin): State<Arc<Admin>>,
    Extension(console): Extension<ConsoleState>,
    Path(name): Path<String>,
    CallerIp(ip): CallerIp,
    headers: HeaderMap,
) -> Response {
    if !console.oidc_starts.try_take(&ip, std::time::Instant::now()) {
        return refusal(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many logins were started from your address: try again in a few minutes.",
        );
    }
    let Some(login) = console.oidc.get(&name) else {
        return refusal(StatusCode::NOT_FOUND, "There is no such login provider here.");
    };
    let Some(redirect) = callback_url(&admin, &name) else {
        return refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            "The console's public address is not set.",
        );
    };
    let auth = match login.authorize(&redirect).await {
        Ok(auth) => auth,
        Err(e) => {
            tracing::warn!(provider = %name, error = %e, "an OpenID Connect login could not start");
            return refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                "The login provider cannot be reached: try again later. Local administrator accounts can still log in.",
            );
        }
    };
    let browser = crate::token::random_hex();
    let state = LoginState {
        state_hash: crate::token::sha256_hex(&auth.state),
        provider: name.clone(),
        browser_hash: crate::token::sha256_hex(&browser),
        nonce: auth.nonce,
        pkce_verifier: auth.pkce_verifier,
        expires_at: now_ms() + LOGIN_TTL.as_millis() as i64,
    };
    match admin.store.insert_login_state(&state, now_ms()).await {
        Ok(true) => {}
        Ok(false) => {
            return refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                "Too many logins are under way: try again in a few minutes.",
            )
        }
        Err(e) => {
            tracing::warn!(error = %e, "storing an OpenID Connect login failed");
            return refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                "The login could not be started: try again later.",
            );
        }
    }
    let Ok(location) = HeaderValue::from_str(&auth.url) else {
        return refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            "The provider's login address is not usable.",
        );
    };
    let mut resp = StatusCode::SEE_OTHER.into_response();
    let h = resp.headers_mut();
    h.insert(header::LOCATION, location);
    h.insert(
        header::SET_COOKIE,
        login_cookie(&browser, LOGIN_TTL.as_secs(), secure_cookie(&admin, &headers)),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// What the provider sends the browser back with.
#[derive(Debug, Deserialize)]
pub(super) struct Callback {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// `GET /console/oidc/{name}/callback`: checks the way back (its state, this browser, the ID
/// token), keeps the user and opens their session. Every outcome past the state is audited.
pub(super) async fn callback(
    State(admin): State<Arc<Admin>>,
    Extension(console): Extension<ConsoleState>,
    Path(name): Path<String>,
    CallerIp(ip): CallerIp,
    headers: HeaderMap,
    Query(back): Query<Callback>,
) -> Response {
    let (Some(login), Some(redirect)) = (console.oidc.get(&name), callback_url(&admin, &name)) else {
        return refusal(StatusCode::NOT_FOUND, "There is no such login provider here.");
    };
    let too_long = [&back.code, &back.state, &back.error, &back.error_description]
        .iter()
        .any(|v| v.as_ref().is_some_and(|v| v.len() > MAX_PARAM));
    if too_long {
        return refusal(StatusCode::BAD_REQUEST, "This answer from the provider is too long.");
    }
    let Some(state) = back.state.as_deref() else {
        return refusal(StatusCode::BAD_REQUEST, "This answer from the provider has no state.");
    };
    let taken = match admin
        .store
        .take_login_state(&crate::token::sha256_hex(state), now_ms())
        .await
    {
        Ok(taken) => taken,
        Err(e) => {
            tracing::warn!(error = %e, "reading an OpenID Connect login failed");
            return refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                "The login could not be checked: try again later.",
            );
        }
    };
    let Some(taken) = taken.filter(|t| t.provider == name) else {
        return refusal(StatusCode::BAD_REQUEST, "This login was used already or has expired.");
    };
    let browser = cookie(&headers, LOGIN_COOKIE)
        .filter(|v| !v.is_empty())
        .map(|v| crate::token::sha256_hex(&v));
    if browser.as_deref() != Some(taken.browser_hash.as_str()) {
        return refusal(StatusCode::BAD_REQUEST, "This login was started in another browser.");
    }
    let source = login.provider.source();
    if let Some(error) = &back.error {
        audit_login(&admin, &source, "login failed", StatusCode::UNAUTHORIZED, ip).await;
        let why = back.error_description.as_deref().unwrap_or(error);
        return refusal(
            StatusCode::UNAUTHORIZED,
            &format!("The provider did not let you in: {why}"),
        );
    }
    let Some(code) = back.code.as_deref() else {
        return refusal(StatusCode::BAD_REQUEST, "This answer from the provider has no code.");
    };
    let identity = match login.finish(&redirect, code, &taken.nonce, &taken.pkce_verifier).await {
        Ok(identity) => identity,
        Err(OidcFailure::Refused(why)) => {
            tracing::info!(provider = %name, reason = %why, "an OpenID Connect login was refused");
            audit_login(&admin, &source, "login failed", StatusCode::UNAUTHORIZED, ip).await;
            return refusal(
                StatusCode::UNAUTHORIZED,
                "The provider's answer did not pass its checks.",
            );
        }
        Err(OidcFailure::Unavailable(why)) => {
            tracing::warn!(provider = %name, reason = %why, "an OpenID Connect login could not be checked");
            audit_login(&admin, &source, "login failed", StatusCode::SERVICE_UNAVAILABLE, ip).await;
            return refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                "The login provider cannot be reached: try again later. Local administrator accounts can still log in.",
            );
        }
    };
    let mapped = admin.config.sso_roles.apply(&identity.groups);
    let user = match admin.sync_directory_user(&source, &identity.username, &mapped).await {
        Ok(user) => user,
        Err(e) => {
            // As the JSON API would answer it: 403 with the reason, 409 for a local user of the
            // same name, 500 without internals for a database failure.
            let answer = ApiError::from(e);
            let (status, why) = (answer.status, answer.error);
            tracing::info!(user = %identity.username, groups = ?identity.groups, reason = %why, "an OpenID Connect user was not let in");
            audit_login(&admin, &identity.username, "login refused", status, ip).await;
            return refusal(status, &why);
        }
    };
    let (token, _csrf) = match open_session(&admin, &user).await {
        Ok(session) => session,
        Err(e) => return refusal(StatusCode::SERVICE_UNAVAILABLE, &e.error),
    };
    audit_login(&admin, &user.username, "login", StatusCode::OK, ip).await;
    signed_in(&admin, &headers, &token)
}

/// Where the provider sends the browser back: the console's public address.
fn callback_url(admin: &Admin, name: &str) -> Option<String> {
    let base = admin.config.public_url.as_deref()?;
    Some(format!("{base}/console/oidc/{name}/callback"))
}

/// The page a login ends on: the session's cookie, the login cookie dropped, and on to the
/// console.
fn signed_in(admin: &Admin, headers: &HeaderMap, token: &str) -> Response {
    let secure = secure_cookie(admin, headers);
    let mut resp = html(
        StatusCode::OK,
        "<meta http-equiv=\"refresh\" content=\"0; url=/console/\"><p>Signed in. \
         <a href=\"/console/\">Continue to Chime</a></p>",
    );
    let h = resp.headers_mut();
    h.append(header::SET_COOKIE, session_cookie(token, SESSION_TTL.as_secs(), secure));
    h.append(header::SET_COOKIE, login_cookie("", 0, secure));
    resp
}

/// A refusal, with a link back to the login page.
fn refusal(status: StatusCode, message: &str) -> Response {
    html(
        status,
        &format!(
            "<p id=\"login-error\">{}</p><p><a href=\"/console/\">Back to the login page</a></p>",
            escape_html(message)
        ),
    )
}

fn html(status: StatusCode, body: &str) -> Response {
    let text = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Chime</title></head><body>{body}</body></html>"
    );
    let mut resp = (status, text).into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// The login cookie: sent back on the provider's redirect (a top-level navigation from
/// another site, which `SameSite=Lax` allows) and only to these routes.
fn login_cookie(value: &str, max_age: u64, secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{LOGIN_COOKIE}={value}; Path=/console/oidc; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}"
    ))
    .unwrap_or_else(|_| HeaderValue::from_static("chime_oidc=; Path=/console/oidc"))
}
