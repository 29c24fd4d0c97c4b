//! One error type for the REST API: every failure becomes a status and a JSON body
//! `{"error": "...", "field": "..."}` (`field` names the input at fault when there is one).

use crate::center::OpError;
use crate::model::Invalid;
use crate::store::StoreError;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

/// A REST API failure.
#[derive(Debug)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// What went wrong.
    pub error: String,
    /// The input field at fault.
    pub field: Option<String>,
}

impl ApiError {
    /// 400 for a malformed request (bad JSON, bad query value).
    pub fn bad_request(field: Option<&str>, error: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            error: error.into(),
            field: field.map(str::to_owned),
        }
    }

    /// 404.
    pub fn not_found(what: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::NOT_FOUND,
            error: format!("{} not found", what.into()),
            field: None,
        }
    }

    /// 401.
    pub fn unauthorized(error: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::UNAUTHORIZED,
            error: error.into(),
            field: None,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = match &self.field {
            Some(f) => serde_json::json!({ "error": self.error, "field": f }),
            None => serde_json::json!({ "error": self.error }),
        };
        let mut resp = (self.status, Json(body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            resp.headers_mut()
                .insert("WWW-Authenticate", axum::http::HeaderValue::from_static("Bearer"));
        }
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            resp.headers_mut()
                .insert("Retry-After", axum::http::HeaderValue::from_static("1"));
        }
        resp
    }
}

impl From<Invalid> for ApiError {
    fn from(i: Invalid) -> ApiError {
        ApiError {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            error: i.message,
            field: Some(i.field),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        match e {
            StoreError::Invalid(i) => i.into(),
            StoreError::NotFound(what) => ApiError {
                status: StatusCode::NOT_FOUND,
                error: format!("{what} not found"),
                field: None,
            },
            StoreError::Conflict(msg) => ApiError {
                status: StatusCode::CONFLICT,
                error: msg,
                field: None,
            },
            transient if transient.is_transient() => {
                tracing::warn!(error = %transient, "database busy in REST API; the client is told to try again");
                ApiError {
                    status: StatusCode::SERVICE_UNAVAILABLE,
                    error: "the database is busy (a lock conflict with the scheduler); nothing was changed, try again"
                        .into(),
                    field: None,
                }
            }
            other => {
                tracing::error!(error = %other, "store failure in REST API");
                ApiError {
                    status: StatusCode::INTERNAL_SERVER_ERROR,
                    error: "internal database error (see the admin's log)".into(),
                    field: None,
                }
            }
        }
    }
}

impl From<OpError> for ApiError {
    fn from(e: OpError) -> ApiError {
        match e {
            OpError::Invalid(i) => i.into(),
            OpError::Store(s) => s.into(),
            OpError::Conflict(msg) => ApiError {
                status: StatusCode::CONFLICT,
                error: msg,
                field: None,
            },
            OpError::Executor(msg) => ApiError {
                status: StatusCode::BAD_GATEWAY,
                error: format!("executor: {msg}"),
                field: None,
            },
        }
    }
}
