//! The web console's files (`web/` in the repository), embedded into the binary at build time
//! so `cargo build` alone builds everything, and the security headers every console response
//! carries.

use super::error::ApiError;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Request};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use rust_embed::RustEmbed;
use std::borrow::Cow;

/// Every page, script and style sheet under `web/`, in nested folders too (`lib/dom.js`), by
/// its path there.
///
/// Embedded with `rust-embed` rather than listed file by file, so a new console module needs
/// no change here. Only `.html`, `.js` and `.css` files are embedded: the type checker's
/// `jsconfig.json`, and whatever a developer's `npm install` or editor leaves in the folder,
/// never reach the binary. `debug-embed` (Cargo.toml) makes debug builds embed them too:
/// without it, a debug build reads the folder at run time, relative to the directory it is
/// started in, and serves nothing anywhere else. Each file is embedded with `include_bytes!`,
/// so cargo rebuilds the crate when one changes; a new module is picked up by that rebuild,
/// which changing the module that imports it causes.
#[derive(RustEmbed)]
#[folder = "../../web/"]
#[include = "*.html"]
#[include = "*.js"]
#[include = "*.css"]
#[exclude = "node_modules/*"]
#[exclude = "*/node_modules/*"]
struct WebFiles;

/// The Content-Security-Policy of the console: only its own scripts and styles, no plugins,
/// no framing. With this, text that slipped into HTML unescaped still could not run script.
pub const CSP: &str =
    "default-src 'self'; script-src 'self'; style-src 'self'; object-src 'none'; frame-ancestors 'none'";

/// `/`, `/console/` and `/console/{path}` (`/console/lib/dom.js`, `/console/pages/jobs.js`).
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(|| async { Redirect::to("/console/") }))
        .route("/console", get(|| async { Redirect::to("/console/") }))
        .route("/console/", get(|| async { asset("index.html") }))
        .route(
            "/console/{*path}",
            get(|Path(path): Path<String>| async move { asset(&path) }),
        )
}

/// The content type of a console file by its extension; None for any other kind of file,
/// which is not served.
fn content_type(path: &str) -> Option<&'static str> {
    match path.rsplit_once('.')?.1 {
        "html" => Some("text/html; charset=utf-8"),
        "js" => Some("text/javascript; charset=utf-8"),
        "css" => Some("text/css; charset=utf-8"),
        _ => None,
    }
}

/// Whether `path` names a file below `web/` plainly: segments that are neither empty, `.` nor
/// `..`, without backslashes. The lookup is in the embedded list only, so no path reaches the
/// disk; this refuses a path that tries to anyway, before it is looked up.
fn is_plain_path(path: &str) -> bool {
    path.split('/')
        .all(|seg| !seg.is_empty() && seg != "." && seg != ".." && !seg.contains('\\'))
}

/// The console file at `path` (relative to `web/`, percent-decoded), with its content type.
fn asset(path: &str) -> Response {
    // The console's session routes are `/console/api/…`: a path there that is no route
    // answers as every unknown API route does, in JSON.
    if path == "api" || path.starts_with("api/") {
        return ApiError::not_found("route").into_response();
    }
    if !is_plain_path(path) {
        return (StatusCode::BAD_REQUEST, "bad path").into_response();
    }
    match (content_type(path), WebFiles::get(path)) {
        (Some(ty), Some(file)) => {
            let body = match file.data {
                Cow::Borrowed(b) => Bytes::from_static(b),
                Cow::Owned(v) => Bytes::from(v),
            };
            (
                [(header::CONTENT_TYPE, ty), (header::CACHE_CONTROL, "no-cache")],
                Body::from(body),
            )
                .into_response()
        }
        _ => (StatusCode::NOT_FOUND, "not found").into_response(),
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

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(path: &str) -> (StatusCode, String, String) {
        let resp = asset(path);
        let status = resp.status();
        let ty = resp
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        let body = axum::body::to_bytes(resp.into_body(), usize::MAX).await.unwrap();
        (status, ty, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn nested_modules_are_served_with_their_types() {
        let (s, ty, body) = get("lib/dom.js").await;
        assert_eq!((s, ty.as_str()), (StatusCode::OK, "text/javascript; charset=utf-8"));
        assert!(body.contains("export function h("), "{body}");
        let (s, ty, _) = get("pages/jobs.js").await;
        assert_eq!((s, ty.as_str()), (StatusCode::OK, "text/javascript; charset=utf-8"));
        let (s, ty, _) = get("style.css").await;
        assert_eq!((s, ty.as_str()), (StatusCode::OK, "text/css; charset=utf-8"));
        let (s, ty, body) = get("index.html").await;
        assert_eq!((s, ty.as_str()), (StatusCode::OK, "text/html; charset=utf-8"));
        assert!(body.contains("/console/app.js"));
    }

    #[tokio::test]
    async fn every_module_the_console_imports_is_embedded() {
        // What the browser loads: every .js file of web/, by the path it imports it under.
        let embedded: Vec<String> = WebFiles::iter().map(|p| p.into_owned()).collect();
        for module in ["app.js", "i18n.js", "lib/api.js", "pages/workflow-form.js"] {
            assert!(embedded.iter().any(|p| p == module), "{module} in {embedded:?}");
        }
        assert!(
            embedded.iter().all(|p| content_type(p).is_some()),
            "only pages, scripts and styles are embedded: {embedded:?}"
        );
    }

    #[tokio::test]
    async fn other_files_and_unknown_paths_are_not_found() {
        for path in ["jsconfig.json", "nothing.js", "lib/nothing.js", "lib"] {
            assert_eq!(get(path).await.0, StatusCode::NOT_FOUND, "{path}");
        }
        let (s, ty, _) = get("api/nothing").await;
        assert_eq!((s, ty.as_str()), (StatusCode::NOT_FOUND, "application/json"));
    }

    #[tokio::test]
    async fn paths_climbing_out_of_the_folder_are_refused() {
        for path in [
            "../Cargo.toml",
            "lib/../app.js",
            "./app.js",
            "lib//dom.js",
            "pages/",
            "..\\Cargo.toml",
            "..",
        ] {
            assert_eq!(get(path).await.0, StatusCode::BAD_REQUEST, "{path}");
        }
    }
}
