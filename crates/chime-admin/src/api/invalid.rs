//! The answer to input that cannot be accepted: which field, and why; and the plain-name form
//! that several inputs' names take ([`is_plain_name`]).

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

/// Whether `name` is 1 to `max` of `A-Z a-z 0-9 . _ -`: the form of job keys, alarm channel
/// names and API key names, which stand in file names, paths, comma-separated lists and the
/// audit log's `key:<name>` without quoting.
pub fn is_plain_name(name: &str, max: usize) -> bool {
    !name.is_empty()
        && name.len() <= max
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}
