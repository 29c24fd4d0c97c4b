//! Why an operation on the admin failed ([`OpError`]), and the one place that says which HTTP
//! status each reason is answered with: the REST API, the console and XXL-JOB's job API all
//! answer (or audit) an operation's failure with [`OpError::status`].

use crate::model::Invalid;
use crate::store::StoreError;
use axum::http::StatusCode;

/// Why an operation requested through the API failed.
#[derive(Debug, thiserror::Error)]
pub enum OpError {
    /// Bad input, naming the field.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// Store failure or missing row.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The object is not in a state that allows this.
    #[error("{0}")]
    Conflict(String),
    /// The caller may not act on this object.
    #[error("{0}")]
    Forbidden(String),
    /// The executor refused or could not be reached.
    #[error("executor: {0}")]
    Executor(String),
    /// The admin could not finish the operation now (its results writer did not record what
    /// the operation handed it); the same request may succeed when tried again.
    #[error("{0}")]
    Unavailable(String),
    /// A receiver outside (an alarm channel's) refused or could not be reached.
    #[error("{0}")]
    Unreachable(String),
    /// The admin itself failed (not the request, not the database).
    #[error("{0}")]
    Internal(String),
}

/// What a caller is told when the database failed for a moment.
const DATABASE_BUSY: &str = "the database is busy (a lock conflict with the scheduler); nothing was changed, try again";

/// What a caller is told when the database failed otherwise: the details are the admin's log's.
const DATABASE_FAILED: &str = "internal database error (see the admin's log)";

impl OpError {
    /// The HTTP status this failure is answered with.
    pub fn status(&self) -> StatusCode {
        match self {
            OpError::Invalid(_) | OpError::Store(StoreError::Invalid(_)) => StatusCode::UNPROCESSABLE_ENTITY,
            OpError::Store(StoreError::NotFound(_)) => StatusCode::NOT_FOUND,
            OpError::Store(StoreError::Conflict(_)) | OpError::Conflict(_) => StatusCode::CONFLICT,
            OpError::Store(e) if e.is_transient() => StatusCode::SERVICE_UNAVAILABLE,
            OpError::Store(_) | OpError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            OpError::Forbidden(_) => StatusCode::FORBIDDEN,
            OpError::Executor(_) | OpError::Unreachable(_) => StatusCode::BAD_GATEWAY,
            OpError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The input at fault, when the request was refused for one field.
    pub fn invalid(&self) -> Option<&Invalid> {
        match self {
            OpError::Invalid(i) | OpError::Store(StoreError::Invalid(i)) => Some(i),
            _ => None,
        }
    }

    /// What the caller is told. A database failure is logged here, once, with its details,
    /// and told without them (they are the admin's business, not the caller's).
    pub fn public_message(&self) -> String {
        match self {
            OpError::Invalid(i) | OpError::Store(StoreError::Invalid(i)) => i.message.clone(),
            OpError::Store(StoreError::NotFound(_) | StoreError::Conflict(_)) => self.to_string(),
            OpError::Store(busy) if busy.is_transient() => {
                tracing::warn!(error = %busy, "database busy in an API call; the caller is told to try again");
                DATABASE_BUSY.to_owned()
            }
            OpError::Store(failed) => {
                tracing::error!(error = %failed, "store failure in an API call");
                DATABASE_FAILED.to_owned()
            }
            _ => self.to_string(),
        }
    }
}
