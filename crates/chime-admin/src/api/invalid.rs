//! The answer to input that cannot be accepted: which field, and why.

/// A value the user gave that cannot be accepted, with the field it came from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct Invalid {
    /// The input field (JSON key of the REST API).
    pub field: String,
    /// Why it was rejected, in words a user can act on.
    pub message: String,
}

impl Invalid {
    /// A rejection of `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Invalid {
        Invalid {
            field: field.into(),
            message: message.into(),
        }
    }
}
