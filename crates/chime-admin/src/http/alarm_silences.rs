//! `/v1/alarm-silences`: silence windows of alarms (administrators only).

use super::access::Principal;
use super::error::ApiError;
use super::rest::{bool_param, parse_body, path_id};
use crate::center::Admin;
use crate::model::{now_ms, AlarmSilence, AlarmSilenceSpec};
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use std::collections::HashMap;
use std::sync::Arc;

type ApiResult<T> = Result<T, ApiError>;

/// Every silence, by id; `?active=true` keeps those in force now, `?active=false` the others.
pub(super) async fn list(
    State(admin): State<Arc<Admin>>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<Vec<AlarmSilence>>> {
    let active = bool_param(&q, "active")?;
    let now = now_ms();
    let all = admin.store.alarm_silences().await?;
    Ok(Json(
        all.iter()
            .map(|s| s.shown(now))
            .filter(|s| active.is_none_or(|a| s.active_now == a))
            .collect(),
    ))
}

pub(super) async fn create(
    State(admin): State<Arc<Admin>>,
    Extension(who): Extension<Principal>,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<AlarmSilence>)> {
    let spec: AlarmSilenceSpec = parse_body(&body)?;
    let silence = admin.create_alarm_silence(&spec, &who.username).await?;
    Ok((StatusCode::CREATED, Json(silence.shown(now_ms()))))
}

pub(super) async fn show(State(admin): State<Arc<Admin>>, Path(id): Path<String>) -> ApiResult<Json<AlarmSilence>> {
    let id = path_id(&id, "alarm silence")?;
    Ok(Json(admin.store.alarm_silence(id).await?.shown(now_ms())))
}

pub(super) async fn delete(State(admin): State<Arc<Admin>>, Path(id): Path<String>) -> ApiResult<StatusCode> {
    admin.delete_alarm_silence(path_id(&id, "alarm silence")?).await?;
    Ok(StatusCode::NO_CONTENT)
}
