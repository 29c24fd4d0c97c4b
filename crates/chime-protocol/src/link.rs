//! Chime's executor link: one long-lived WebSocket an executor opens to an admin, on the admin's
//! own HTTP port and context path, so the admin can reach an executor that opens no port (in a
//! container, behind NAT). XXL-JOB has no such thing; XXL-JOB executors keep HTTP.
//!
//! The executor dials `GET <admin base>/api/link` ([`crate::paths::API_LINK`]) as a WebSocket
//! upgrade, with three headers: the access token ([`crate::messages::ACCESS_TOKEN_HEADER`], the
//! group's own or the admin's), its app name ([`crate::messages::APPNAME_HEADER`]) and an id of
//! its choosing ([`EXECUTOR_ID_HEADER`], see [`validate_executor_id`]). The admin knows it from
//! then on by the address [`address`]`(id)`, `link://<id>`, which routes like any registered
//! address but names no host: nothing a linked executor sends can make the admin dial out.
//!
//! Over the socket both sides make calls and answer them, each a JSON text message
//! ([`LinkFrame`]): a call names the endpoint it stands for (`/run`, `/kill`, `/log`, `/beat`,
//! `/idleBeat` from the admin; `/api/registry`, `/api/registryRemove`, `/api/callback`,
//! `/api/runLog` from the executor) and carries the very body the HTTP endpoint takes; the
//! answer carries the body the endpoint answers (a [`crate::ReturnT`]). So both sides serve a
//! call from the link exactly as they serve it over HTTP. A call from the admin also carries
//! the access token it presents ([`LinkFrame::token`]), which the executor checks as it would
//! the header of an HTTP call: the link proves which admin the executor dialed, not who asked
//! that admin to make the call (another admin's relay, say), so the executor never vouches for
//! a call with its own token.
//!
//! ```
//! use chime_protocol::link::{self, LinkFrame};
//! let call = LinkFrame::call(7, "/beat", "{}").unwrap();
//! let text = serde_json::to_string(&call).unwrap();
//! assert_eq!(text, r#"{"id":7,"path":"/beat","body":{}}"#);
//! let back: LinkFrame = serde_json::from_str(&text).unwrap();
//! assert_eq!(back.path.as_deref(), Some("/beat"));
//! assert_eq!(link::address("pod-7"), "link://pod-7");
//! assert_eq!(link::executor_id("link://pod-7"), Some("pod-7"));
//! ```

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// Header naming the linking executor (see [`validate_executor_id`]).
pub const EXECUTOR_ID_HEADER: &str = "Chime-Executor-Id";

/// Scheme of the address a linked executor is known by: `link://<executor id>`.
pub const ADDRESS_SCHEME: &str = "link://";

/// Longest executor id accepted.
pub const MAX_EXECUTOR_ID_CHARS: usize = 64;

/// Largest message either side reads from a link; a larger one closes the link. The largest
/// legitimate message is an answer to `/log` (the admin reads at most 16 MiB of log per call)
/// or a call from the admin with a large GLUE source; this leaves room for their JSON escapes.
pub const MAX_FRAME_BYTES: usize = 17 * 1024 * 1024;

/// Largest message an executor sends up a link other than an answer to `/log`: its calls
/// (registrations, a callback batch, a run log) and its answers to the other calls. An admin
/// closes a link that sends a larger one, so that links which stall halfway through large
/// messages cannot make it hold [`MAX_FRAME_BYTES`] each. An executor splits a longer callback
/// backlog into several calls, and sends by HTTP a call that does not fit (a long run log).
pub const MAX_MESSAGE_BYTES: usize = 1024 * 1024;

/// How often each side sends a WebSocket ping when nothing else was sent. A link on which
/// nothing at all arrived for [`IDLE_TIMEOUT_SECS`] is taken as dead (a NAT that dropped the
/// mapping, a peer frozen or gone) and closed, and the executor dials again.
pub const PING_INTERVAL_SECS: u64 = 10;

/// See [`PING_INTERVAL_SECS`].
pub const IDLE_TIMEOUT_SECS: u64 = 30;

/// One message on a link: a call (with [`LinkFrame::path`]) or the answer to one (without).
#[derive(Debug, Serialize, Deserialize)]
pub struct LinkFrame {
    /// Chosen by the caller, unique among its calls not yet answered; an answer repeats it.
    pub id: u64,
    /// The endpoint a call stands for; absent in an answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The access token a call from the admin presents, as the `XXL-JOB-ACCESS-TOKEN` header of
    /// the HTTP call it stands for would carry it; absent when the call presents none (and in
    /// answers, and in the executor's own calls, which its link's token covers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// The JSON body of the call, or of the answer; carried as is, never re-parsed on the way.
    pub body: Box<RawValue>,
}

impl LinkFrame {
    /// A call of `path` with the JSON text `body`; `Err` if `body` is not JSON.
    pub fn call(id: u64, path: &str, body: &str) -> Result<LinkFrame, serde_json::Error> {
        Ok(LinkFrame {
            id,
            path: Some(path.to_owned()),
            token: None,
            body: RawValue::from_string(body.to_owned())?,
        })
    }

    /// The answer to call `id`, with the JSON text `body`; `Err` if `body` is not JSON.
    pub fn reply(id: u64, body: &str) -> Result<LinkFrame, serde_json::Error> {
        Ok(LinkFrame {
            id,
            path: None,
            token: None,
            body: RawValue::from_string(body.to_owned())?,
        })
    }

    /// Whether this is a call (else an answer).
    pub fn is_call(&self) -> bool {
        self.path.is_some()
    }
}

/// The address of the executor linked with `id`.
pub fn address(id: &str) -> String {
    format!("{ADDRESS_SCHEME}{id}")
}

/// The executor id of a link address (any trailing `/` ignored), or `None` for any other address.
pub fn executor_id(address: &str) -> Option<&str> {
    let id = address.trim().strip_prefix(ADDRESS_SCHEME)?.trim_end_matches('/');
    validate_executor_id(id).ok().map(|()| id)
}

/// Whether `address` is a link address.
pub fn is_link_address(address: &str) -> bool {
    address.trim_start().starts_with(ADDRESS_SCHEME)
}

/// Checks an executor id: 1 to [`MAX_EXECUTOR_ID_CHARS`] ASCII letters, digits, `.`, `_` or
/// `-` — safe in an address, a log line and a metrics label alike.
pub fn validate_executor_id(id: &str) -> Result<(), String> {
    if id.is_empty() || id.len() > MAX_EXECUTOR_ID_CHARS {
        return Err(format!(
            "an executor id is 1 to {MAX_EXECUTOR_ID_CHARS} characters, got {}",
            id.len()
        ));
    }
    if let Some(c) = id
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(format!(
            "an executor id holds only ASCII letters, digits, '.', '_' and '-', not {c:?}"
        ));
    }
    Ok(())
}

/// Turns a host name into an executor id prefix: characters outside the id's alphabet become
/// `-`, cut so that `suffix_len` more characters (and a `-`) still fit.
pub fn id_from_host(host: &str, suffix_len: usize) -> String {
    let keep = MAX_EXECUTOR_ID_CHARS.saturating_sub(suffix_len + 1);
    let id: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .take(keep)
        .collect();
    if id.is_empty() {
        "executor".to_owned()
    } else {
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_keep_the_body_as_sent() {
        let call = LinkFrame::call(1, "/run", r#"{"jobId":3, "executorParams":"a\"b"}"#).unwrap();
        let text = serde_json::to_string(&call).unwrap();
        let back: LinkFrame = serde_json::from_str(&text).unwrap();
        assert!(back.is_call());
        assert_eq!(back.body.get(), r#"{"jobId":3, "executorParams":"a\"b"}"#);
        let answer: LinkFrame = serde_json::from_str(r#"{"id":1,"body":{"code":200}}"#).unwrap();
        assert!(!answer.is_call());
        assert!(LinkFrame::reply(2, "not json").is_err());
        assert!(serde_json::from_str::<LinkFrame>(r#"{"id":-1,"body":{}}"#).is_err());
        assert!(serde_json::from_str::<LinkFrame>(r#"{"id":1}"#).is_err());
        let with_token: LinkFrame = serde_json::from_str(r#"{"id":3,"path":"/run","token":"t","body":{}}"#).unwrap();
        assert_eq!(with_token.token.as_deref(), Some("t"));
        assert!(
            !serde_json::to_string(&call).unwrap().contains("token"),
            "no token, no key"
        );
    }

    #[test]
    fn executor_ids_are_bounded_and_plain() {
        assert!(validate_executor_id("pod-7_a.b").is_ok());
        assert!(validate_executor_id("").is_err());
        assert!(validate_executor_id(&"a".repeat(65)).is_err());
        assert!(validate_executor_id("a/b").is_err());
        assert!(validate_executor_id("a b").is_err());
        assert_eq!(executor_id("link://x/"), Some("x"));
        assert_eq!(executor_id("link://x/y"), None);
        assert_eq!(executor_id("http://x"), None);
        assert!(is_link_address(" link://x"));
        assert_eq!(id_from_host("my host/1", 8), "my-host-1");
        assert_eq!(id_from_host("", 8), "executor");
        assert_eq!(id_from_host(&"h".repeat(100), 8).len(), 55);
    }
}
