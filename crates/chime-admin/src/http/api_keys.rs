//! `/v1/api-keys`: API keys, made by a user for themselves or a service, or by an administrator
//! (or the bootstrap API token) for anyone. A key cannot manage keys.

use super::access::Principal;
use super::error::ApiError;
use super::rest::{parse_body, path_id};
use crate::api::{ApiKey, ApiKeySpec, NewApiKey};
use crate::center::Admin;
use crate::model::now_ms;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use std::sync::Arc;

type ApiResult<T> = Result<T, ApiError>;

/// The caller's keys (every key for an administrator), by id.
pub(super) async fn list(
    State(admin): State<Arc<Admin>>,
    Extension(who): Extension<Principal>,
) -> ApiResult<Json<Vec<ApiKey>>> {
    let now = now_ms();
    let keys = admin.api_keys(who.key_manager()?).await?;
    Ok(Json(keys.iter().map(|k| k.shown(now)).collect()))
}

/// Makes a key; the answer holds its token, shown this once.
pub(super) async fn create(
    State(admin): State<Arc<Admin>>,
    Extension(who): Extension<Principal>,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<NewApiKey>)> {
    let spec: ApiKeySpec = parse_body(&body)?;
    let made = admin.create_api_key(&spec, who.key_manager()?).await?;
    Ok((StatusCode::CREATED, Json(made)))
}

pub(super) async fn show(
    State(admin): State<Arc<Admin>>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
) -> ApiResult<Json<ApiKey>> {
    let id = path_id(&id, "API key")?;
    Ok(Json(admin.api_key(id, who.key_manager()?).await?.shown(now_ms())))
}

/// Revokes a key: it stops working at once, and stays listed as revoked.
pub(super) async fn revoke(
    State(admin): State<Arc<Admin>>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
) -> ApiResult<Json<ApiKey>> {
    let id = path_id(&id, "API key")?;
    Ok(Json(
        admin.revoke_api_key(id, who.key_manager()?).await?.shown(now_ms()),
    ))
}
