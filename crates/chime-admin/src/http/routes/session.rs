//! The routes of the web console's session: login (with a password or through an OpenID
//! Connect provider), logout, who am I (outside the REST API's document).

use super::{console_only, Route};
use crate::http::access::Rule;
use crate::http::console_api as console;
use crate::http::oidc_login;
use axum::routing::on;

/// The routes of the web console's session: login (with a password or through an OpenID Connect
/// provider), logout, who am I (outside the REST API's document).
pub(super) const ROUTES: &[Route] = &[
    console_only("POST", "/console/api/login", Rule::Public, |m| on(m, console::login)),
    console_only("POST", "/console/api/logout", Rule::Authenticated, |m| {
        on(m, console::logout)
    }),
    console_only("GET", "/console/api/me", Rule::Authenticated, |m| on(m, console::me)),
    console_only("GET", "/console/api/login-options", Rule::Public, |m| {
        on(m, oidc_login::login_options)
    }),
    console_only("GET", "/console/oidc/{name}/login", Rule::Public, |m| {
        on(m, oidc_login::begin)
    }),
    console_only("GET", "/console/oidc/{name}/callback", Rule::Public, |m| {
        on(m, oidc_login::callback)
    }),
];
