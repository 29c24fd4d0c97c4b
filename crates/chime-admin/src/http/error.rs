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
        OpError::from(i).into()
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        OpError::from(e).into()
    }
}

/// The one mapping from an operation's failure to the REST API's answer: the status is
/// [`OpError::status`]'s, the words [`OpError::public_message`]'s, and a refused field is named.
impl From<OpError> for ApiError {
    fn from(e: OpError) -> ApiError {
        ApiError {
            status: e.status(),
            error: e.public_message(),
            field: e.invalid().map(|i| i.field.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlx::{AnyConnection, Connection, Executor};

    /// A real lock conflict: a second SQLite connection writes while the first holds the write
    /// lock. The client must be told to try again, not that something is broken.
    #[tokio::test]
    async fn a_busy_database_answers_503_with_retry_after() {
        sqlx::any::install_default_drivers();
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("busy.db").display());
        let mut holder = AnyConnection::connect(&url).await.unwrap();
        holder.execute("CREATE TABLE t (x INTEGER)").await.unwrap();
        holder.execute("BEGIN IMMEDIATE").await.unwrap();
        let mut other = AnyConnection::connect(&url).await.unwrap();
        other.execute("PRAGMA busy_timeout = 0").await.unwrap();
        let busy = StoreError::Db(other.execute("INSERT INTO t VALUES (1)").await.unwrap_err());
        assert!(busy.is_transient(), "{busy:?}");

        let resp = ApiError::from(busy).into_response();
        assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(resp.headers()["Retry-After"], "1");
    }

    /// Any other database failure stays a 500: trying again would not help.
    #[tokio::test]
    async fn other_database_errors_are_not_transient() {
        sqlx::any::install_default_drivers();
        let mut conn = AnyConnection::connect("sqlite::memory:").await.unwrap();
        let broken = StoreError::Db(conn.execute("SELECT * FROM no_such_table").await.unwrap_err());
        assert!(!broken.is_transient());
        let resp = ApiError::from(broken).into_response();
        assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(resp.headers().get("Retry-After").is_none());
    }
}
