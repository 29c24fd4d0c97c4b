//! The web console's files (`web/` in the repository), embedded into the binary at build time
//! so `cargo build` alone builds everything, and the security headers every console response
//! carries.

use axum::extract::{Path, Request};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;

/// `(file name, content type, content)` of every console file.
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "index.html",
        "text/html; charset=utf-8",
        include_str!("../../../../web/index.html"),
    ),
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../../web/app.js"),
    ),
    (
        "i18n.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../../web/i18n.js"),
    ),
    (
        "pages.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../../web/pages.js"),
    ),
    (
        "workflows.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../../web/workflows.js"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_str!("../../../../web/style.css"),
    ),
];

/// The Content-Security-Policy of the console: only its own scripts and styles, no plugins,
/// no framing. With this, text that slipped into HTML unescaped still could not run script.
pub const CSP: &str =
    "default-src 'self'; script-src 'self'; style-src 'self'; object-src 'none'; frame-ancestors 'none'";

/// `/`, `/console/` and `/console/{file}`.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(|| async { Redirect::to("/console/") }))
        .route("/console", get(|| async { Redirect::to("/console/") }))
        .route("/console/", get(|| async { asset("index.html") }))
        .route(
            "/console/{file}",
            get(|Path(file): Path<String>| async move { asset(&file) }),
        )
}

fn asset(name: &str) -> Response {
    match ASSETS.iter().find(|(n, _, _)| *n == name) {
        Some((_, ty, body)) => (
            [(header::CONTENT_TYPE, *ty), (header::CACHE_CONTROL, "no-cache")],
            *body,
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "not found").into_response(),
    }
}

/// Adds CSP, `nosniff`, `no-referrer` and frame denial to a response.
pub async fn security_headers(req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    resp
}
