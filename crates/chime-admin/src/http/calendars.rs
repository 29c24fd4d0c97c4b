//! `/v1/calendars`: business calendars, read by anyone logged in (a job's form lists them),
//! written by administrators (an edit re-plans the jobs of every group that uses it); and their
//! iCalendar files.

use super::error::ApiError;
use super::principal::Principal;
use super::rest::{author, parse_body};
use crate::api::calendar_ics::MAX_ICS_BYTES;
use crate::api::calendars::check_calendar_name;
use crate::api::{BusinessCalendar, BusinessCalendarSpec};
use crate::center::Admin;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::{Extension, Json};
use std::collections::HashMap;
use std::sync::Arc;

type ApiResult<T> = Result<T, ApiError>;

/// The calendar name of a path, checked before it reaches a query.
fn path_name(raw: &str) -> ApiResult<&str> {
    check_calendar_name(raw).map_err(|e| ApiError::bad_request(Some("name"), e.message))?;
    Ok(raw)
}

pub(super) async fn list(State(admin): State<Arc<Admin>>) -> ApiResult<Json<Vec<BusinessCalendar>>> {
    Ok(Json(admin.store.business_calendars().await?))
}

pub(super) async fn create(
    State(admin): State<Arc<Admin>>,
    who: Option<Extension<Principal>>,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<BusinessCalendar>)> {
    let spec: BusinessCalendarSpec = parse_body(&body)?;
    let calendar = admin.create_business_calendar(&spec, &author(who.as_deref())).await?;
    Ok((StatusCode::CREATED, Json(calendar)))
}

pub(super) async fn show(
    State(admin): State<Arc<Admin>>,
    Path(name): Path<String>,
) -> ApiResult<Json<BusinessCalendar>> {
    Ok(Json(admin.store.business_calendar(path_name(&name)?).await?))
}

pub(super) async fn update(
    State(admin): State<Arc<Admin>>,
    who: Option<Extension<Principal>>,
    Path(name): Path<String>,
    body: Bytes,
) -> ApiResult<Json<BusinessCalendar>> {
    let name = path_name(&name)?;
    let spec: BusinessCalendarSpec = parse_body(&body)?;
    Ok(Json(
        admin
            .update_business_calendar(name, &spec, &author(who.as_deref()))
            .await?,
    ))
}

pub(super) async fn delete(State(admin): State<Arc<Admin>>, Path(name): Path<String>) -> ApiResult<StatusCode> {
    admin.delete_business_calendar(path_name(&name)?).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The calendar as an `.ics` file, named after it.
pub(super) async fn export_ics(
    State(admin): State<Arc<Admin>>,
    Path(name): Path<String>,
) -> ApiResult<impl IntoResponse> {
    let name = path_name(&name)?;
    let text = admin.export_business_calendar(name).await?;
    Ok((
        [
            (header::CONTENT_TYPE, "text/calendar; charset=utf-8".to_owned()),
            // The name is plain (A-Z a-z 0-9 . _ -): nothing to escape in the header.
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}.ics\""),
            ),
        ],
        text,
    ))
}

/// Creates (201) or replaces (200) the calendar from the `.ics` file in the body;
/// `?time_zone=` gives its zone when the file names none (or overrides the file's).
pub(super) async fn import_ics(
    State(admin): State<Arc<Admin>>,
    who: Option<Extension<Principal>>,
    Path(name): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<BusinessCalendar>)> {
    let name = path_name(&name)?;
    if body.len() > MAX_ICS_BYTES {
        return Err(ApiError {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            error: format!("an .ics file is at most {} KiB", MAX_ICS_BYTES / 1024),
            field: None,
        });
    }
    let text =
        std::str::from_utf8(&body).map_err(|_| ApiError::bad_request(None, "the .ics file is not UTF-8 text"))?;
    let zone = q.get("time_zone").map(|z| z.trim()).filter(|z| !z.is_empty());
    let (calendar, created) = admin
        .import_business_calendar(name, text, zone, &author(who.as_deref()))
        .await?;
    let status = if created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(calendar)))
}
