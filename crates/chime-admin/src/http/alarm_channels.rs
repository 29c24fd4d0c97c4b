//! `/v1/alarm-channels`: named alarm channels (administrators only), their test send, the
//! deliveries of a run's alarm, and the alarms no run raised (`/v1/alarm-events`).

use super::error::ApiError;
use super::rest::{int_param, limit_param, parse_body, path_id};
use crate::api::alarm_events::AlarmEventEntry;
use crate::center::Admin;
use crate::model::{AlarmChannel, AlarmChannelSpec, AlarmDelivery, AlarmEvent};
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// Most alarm events one page lists.
pub(crate) const MAX_EVENTS: i64 = 500;
/// Most alarm events a workflow instance lists (it raises one).
const INSTANCE_EVENTS: i64 = 10;

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

/// The alarms no run raised, newest first, each with its deliveries: `?event=` one kind,
/// `?subject=` one instance or group, `?before_id=` the next page.
pub(super) async fn alarm_events(
    State(admin): State<Arc<Admin>>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<Vec<AlarmEventEntry>>> {
    let event = match q.get("event").map(String::as_str) {
        None => None,
        Some(s @ ("workflow_failed" | "no_executor" | "executor_back")) => Some(AlarmEvent::parse(s)),
        Some(other) => {
            return Err(ApiError::bad_request(
                Some("event"),
                format!("'{other}' is not an alarm event (workflow_failed, no_executor, executor_back)"),
            ))
        }
    };
    let limit = limit_param(&q, 50, MAX_EVENTS)?;
    let subject = int_param(&q, "subject")?;
    let before_id = int_param(&q, "before_id")?;
    Ok(Json(admin.store.alarm_events(event, subject, before_id, limit).await?))
}

/// The alarm of a workflow instance (none unless it failed and its workflow names channels),
/// with its deliveries.
pub(super) async fn instance_alarms(
    State(admin): State<Arc<Admin>>,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<AlarmEventEntry>>> {
    let id = path_id(&id, "instance")?;
    // 404 for an instance that does not exist, rather than an empty list.
    admin.store.instance(id).await?;
    let found = admin
        .store
        .alarm_events(Some(AlarmEvent::WorkflowFailed), Some(id), None, INSTANCE_EVENTS)
        .await?;
    Ok(Json(found))
}
