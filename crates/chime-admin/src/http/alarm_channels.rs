//! `/v1/alarm-channels`: named alarm channels (administrators only), their test send, and the
//! deliveries of a run's alarm.

use super::error::ApiError;
use super::rest::{parse_body, path_id};
use crate::center::Admin;
use crate::model::{AlarmChannel, AlarmChannelSpec, AlarmDelivery};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};
use std::sync::Arc;

type ApiResult<T> = Result<T, ApiError>;

pub(super) async fn list(State(admin): State<Arc<Admin>>) -> ApiResult<Json<Vec<AlarmChannel>>> {
    let all = admin.store.alarm_channels().await?;
    Ok(Json(all.iter().map(|c| c.shown()).collect()))
}

pub(super) async fn create(
    State(admin): State<Arc<Admin>>,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<AlarmChannel>)> {
    let spec: AlarmChannelSpec = parse_body(&body)?;
    let channel = admin.create_alarm_channel(&spec).await?;
    Ok((StatusCode::CREATED, Json(channel.shown())))
}

pub(super) async fn show(State(admin): State<Arc<Admin>>, Path(id): Path<String>) -> ApiResult<Json<AlarmChannel>> {
    let id = path_id(&id, "alarm channel")?;
    Ok(Json(admin.store.alarm_channel(id).await?.shown()))
}

pub(super) async fn update(
    State(admin): State<Arc<Admin>>,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<AlarmChannel>> {
    let id = path_id(&id, "alarm channel")?;
    let spec: AlarmChannelSpec = parse_body(&body)?;
    Ok(Json(admin.update_alarm_channel(id, &spec).await?.shown()))
}

pub(super) async fn delete(State(admin): State<Arc<Admin>>, Path(id): Path<String>) -> ApiResult<StatusCode> {
    admin.delete_alarm_channel(path_id(&id, "alarm channel")?).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub(super) async fn test(State(admin): State<Arc<Admin>>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    admin.test_alarm_channel(path_id(&id, "alarm channel")?).await?;
    Ok(Json(json!({ "delivered": true })))
}

pub(super) async fn run_alarms(
    State(admin): State<Arc<Admin>>,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<AlarmDelivery>>> {
    let id = path_id(&id, "run")?;
    // 404 for a run that does not exist, rather than an empty list.
    admin.store.run(id).await?;
    Ok(Json(admin.store.run_alarm_deliveries(id).await?))
}
