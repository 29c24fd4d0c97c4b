//! Errors written out with their causes, for logs and messages: the function the executor SDK
//! uses too, kept in `chime-protocol` so both write a failure the same way.

pub use chime_protocol::error_text::with_causes;
