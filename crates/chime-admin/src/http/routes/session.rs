//! The routes of the web console's session: login, logout, who am I (outside the REST API's document).

use super::{console_only, Route};
use crate::http::access::Rule;
use crate::http::console_api as console;
use axum::routing::on;

/// The routes of the web console's session: login, logout, who am I (outside the REST API's document).
pub(super) const ROUTES: &[Route] = &[
    console_only("POST", "/console/api/login", Rule::Public, |m| on(m, console::login)),
    console_only("POST", "/console/api/logout", Rule::Authenticated, |m| {
        on(m, console::logout)
    }),
    console_only("GET", "/console/api/me", Rule::Authenticated, |m| on(m, console::me)),
];
