//! The admin's HTTP server: the XXL-JOB executor API and the executor link (at `/` and at the
//! optional context path), the REST API under `/v1`, the web console under `/console` (see
//! `access` for who may do what), `/metrics` and `/healthz`.

pub mod access;
mod alarm_channels;
mod alarm_silences;
mod api_keys;
pub mod auth;
mod backfills;
mod calendars;
pub mod console_api;
pub mod console_assets;
mod directory_login;
pub mod error;
pub mod executor_api;
mod flow;
pub mod link;
pub mod link_socket;
mod members;
mod oidc_login;
pub mod openapi;
mod pause;
mod principal;
pub mod rest;
pub mod routes;
pub mod workflows;

use crate::center::Admin;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, StatusCode};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Json, Router};
use error::ApiError;
use std::sync::Arc;

/// Every route of the admin: the REST API and the console's session routes from
/// [`routes::ROUTES`], each behind the access middleware with its rule, then the executor API,
/// the console's files, the OpenAPI document, `/metrics` and `/healthz`.
pub fn router(admin: Arc<Admin>) -> Router {
    // The settings were checked at start; a provider's HTTP client that cannot be built leaves
    // OpenID Connect logins off, said in the log, rather than the whole console.
    let console_state = console_api::ConsoleState::for_config(&admin.config).unwrap_or_else(|e| {
        tracing::error!(error = %e, "OpenID Connect logins are off");
        console_api::ConsoleState::default()
    });
    let mut guarded = Router::new();
    for route in routes::ROUTES {
        // Layers added later wrap earlier ones: the rule is on the request before the guard
        // reads it.
        let endpoint = route
            .method_router()
            .route_layer(middleware::from_fn_with_state(admin.clone(), access::guard))
            .route_layer(Extension(route.rule));
        guarded = guarded.route(route.path, endpoint);
    }
    let guarded = guarded
        .method_not_allowed_fallback(access::method_not_allowed)
        // The guard reads bodies up to this size and answers 413 (JSON) beyond it; the
        // handlers' own limit (axum's default, 2 MB) would refuse some of those with a
        // plain-text 413 instead.
        .layer(DefaultBodyLimit::max(access::MAX_BODY));
    let mut app = Router::new()
        .merge(executor_api::routes())
        .merge(link::routes())
        .merge(
            guarded
                .merge(console_assets::routes())
                .layer(middleware::from_fn(console_assets::security_headers)),
        )
        .route("/v1/openapi.json", get(|| async { Json(routes::openapi_document()) }))
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz));
    if let Some(cp) = admin.config.context_path.clone() {
        app = app.nest(&cp, executor_api::routes().merge(link::routes()));
    }
    app.fallback(|| async { ApiError::not_found("route") })
        .layer(Extension(console_state))
        .with_state(admin)
}

async fn metrics(State(admin): State<Arc<Admin>>) -> Response {
    if let Ok((pending, running)) = admin.store.count_open_runs().await {
        admin.metrics.pending_runs.set(pending);
        admin.metrics.running_runs.set(running);
    }
    admin.metrics.results_backlog.set(admin.results_backlog() as i64);
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        admin.metrics.render(),
    )
        .into_response()
}

async fn healthz(State(admin): State<Arc<Admin>>) -> Response {
    match admin.store.ping().await {
        Ok(()) => (
            StatusCode::OK,
            Json(serde_json::json!({ "status": "ok", "partitions": admin.held_partitions().len() })),
        )
            .into_response(),
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(serde_json::json!({ "status": "database unavailable", "error": e.to_string() })),
        )
            .into_response(),
    }
}
