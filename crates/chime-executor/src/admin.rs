//! The client side of the admin's executor API: `POST <base>/api/registry`,
//! `/api/registryRemove`, `/api/callback`, `/api/runLog`.
//!
//! In link mode each call goes over the link to that admin when it is up ([`LinkSet`]), and
//! its answer is read exactly like the body of the HTTP reply. When the link is down,
//! registration fails (the admin only lists a linked executor from its link: an HTTP
//! registration of a `link://` address would be refused, and would name no link to call it
//! by), while results and run logs go by HTTP, which the executor can reach even behind NAT.

use crate::link::{LinkCallError, LinkSet};
use chime_protocol::error_text::with_causes;
use chime_protocol::messages::ACCESS_TOKEN_HEADER;
use chime_protocol::{paths, ReturnT};
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Talks to every configured admin. Cheap to clone; clones share which admin is preferred.
#[derive(Clone)]
pub(crate) struct AdminClient {
    http: reqwest::Client,
    bases: Arc<[String]>,
    token: Option<String>,
    /// Index in `bases` of the admin that last accepted a [`AdminClient::post_first`] call,
    /// tried first next time: an admin that hangs must not cost a timeout on every batch.
    preferred: Arc<AtomicUsize>,
    /// The links to the admins, in link mode.
    links: Option<LinkSet>,
}

/// Why one admin did not accept a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AdminError {
    /// No usable answer: connection refused, timeout, an HTTP error status, an unreadable
    /// reply. Usually passes (an admin restarting).
    Unreachable(String),
    /// The admin answered and said no (`code` other than 200): a wrong access token, say.
    /// Sending the same call again gets the same answer until someone changes the setup.
    Refused {
        /// The URL called (credentials removed).
        url: String,
        /// The reply's code.
        code: i32,
        /// The admin's message.
        msg: String,
    },
}

impl fmt::Display for AdminError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AdminError::Unreachable(reason) => f.write_str(reason),
            AdminError::Refused { url, code, msg } => write!(f, "{url}: refused with code {code}: {msg}"),
        }
    }
}

/// Why no admin accepted a call: each admin's reason, in the order they were tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NotAccepted(pub(crate) Vec<AdminError>);

impl NotAccepted {
    /// The admins that answered and refused.
    pub(crate) fn refusals(&self) -> impl Iterator<Item = &AdminError> {
        self.0.iter().filter(|e| matches!(e, AdminError::Refused { .. }))
    }
}

impl fmt::Display for NotAccepted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("no admin address configured");
        }
        for (i, err) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{err}")?;
        }
        Ok(())
    }
}

/// Longest piece of an unreadable reply quoted in an error (an HTML error page, say).
const MAX_QUOTED_REPLY: usize = 200;

impl AdminClient {
    /// A client of the admins at `bases`; in link mode (`links`), calls go over the links.
    /// `https://` admins are verified against `tls`.
    pub(crate) fn new(
        bases: Vec<String>,
        token: Option<String>,
        timeout: Duration,
        links: Option<LinkSet>,
        tls: rustls::ClientConfig,
    ) -> AdminClient {
        let http = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .connect_timeout(timeout)
            .timeout(timeout)
            .pool_idle_timeout(Duration::from_secs(60))
            .build()
            .expect("a reqwest client with rustls builds");
        AdminClient {
            http,
            bases: bases.into(),
            token: token.filter(|t| !t.trim().is_empty()),
            preferred: Arc::new(AtomicUsize::new(0)),
            links,
        }
    }

    pub(crate) fn has_admins(&self) -> bool {
        !self.bases.is_empty()
    }

    /// Posts `body` to `path` on one admin; `Ok` only for an envelope with `code == 200`.
    /// In link mode over the admin's link, see the module's documentation.
    pub(crate) async fn post(&self, base: &str, path: &str, body: String) -> Result<(), AdminError> {
        if let Some(links) = &self.links {
            let shown = || without_credentials(&paths::join(base, path));
            match links.call(base, path, &body).await {
                Ok(answer) => return read_reply(shown(), answer.as_bytes()),
                Err(LinkCallError::NoAnswer(reason)) => {
                    return Err(AdminError::Unreachable(format!(
                        "{} (over the link): {reason}",
                        shown()
                    )))
                }
                // Registration only over the link: the admin lists a linked executor from its
                // link alone.
                Err(err) if path == paths::API_REGISTRY || path == paths::API_REGISTRY_REMOVE => {
                    let base = without_credentials(base);
                    return Err(AdminError::Unreachable(match err {
                        LinkCallError::NotSent(reason) => format!("link to {base}: {reason}"),
                        _ => format!("link to {base} is down"),
                    }));
                }
                // Results and logs take HTTP meanwhile.
                Err(LinkCallError::Down | LinkCallError::NotSent(_)) => {}
            }
        }
        self.post_http(base, path, body).await
    }

    async fn post_http(&self, base: &str, path: &str, body: String) -> Result<(), AdminError> {
        let url = paths::join(base, path);
        // Messages name the URL, never credentials written into it, and the error's causes:
        // reqwest's own message alone does not say why.
        let shown = without_credentials(&url);
        let unreachable =
            |e: reqwest::Error| AdminError::Unreachable(format!("{shown}: {}", with_causes(&e.without_url())));
        let mut request = self
            .http
            .post(&url)
            .header(reqwest::header::CONTENT_TYPE, "application/json;charset=UTF-8")
            .body(body);
        if let Some(token) = &self.token {
            request = request.header(ACCESS_TOKEN_HEADER, token);
        }
        let response = request.send().await.map_err(unreachable)?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(unreachable)?;
        if !status.is_success() {
            return Err(AdminError::Unreachable(format!("{shown}: HTTP {status}")));
        }
        read_reply(shown, &bytes)
    }

    /// Tries the admins one after another until one answers `code == 200` (XXL-JOB's rule for
    /// callbacks: several admins share one database, so one acceptance is enough). The admin
    /// that accepted last time goes first, then the others in configured order.
    pub(crate) async fn post_first(&self, path: &str, body: String) -> Result<(), NotAccepted> {
        let preferred = self.preferred.load(Ordering::Relaxed);
        let order = std::iter::once(preferred)
            .filter(|&i| i < self.bases.len())
            .chain((0..self.bases.len()).filter(|&i| i != preferred));
        let mut errors = Vec::new();
        for index in order {
            match self.post(&self.bases[index], path, body.clone()).await {
                Ok(()) => {
                    self.preferred.store(index, Ordering::Relaxed);
                    return Ok(());
                }
                Err(err) => errors.push(err),
            }
        }
        Err(NotAccepted(errors))
    }

    /// Posts to every admin (registry: each admin may keep its own view); `Ok` if any accepted.
    pub(crate) async fn post_all(&self, path: &str, body: String) -> Result<(), NotAccepted> {
        let calls = self.bases.iter().map(|base| self.post(base, path, body.clone()));
        let results = futures::future::join_all(calls).await;
        let accepted = results.iter().any(Result::is_ok);
        let errors: Vec<AdminError> = results.into_iter().filter_map(Result::err).collect();
        if accepted {
            for err in &errors {
                tracing::warn!(error = %err, path, "admin refused");
            }
            Ok(())
        } else {
            Err(NotAccepted(errors))
        }
    }
}

/// Reads an admin's reply body: `Ok` only for an envelope with `code == 200`.
fn read_reply(shown: String, bytes: &[u8]) -> Result<(), AdminError> {
    match ReturnT::<serde_json::Value>::from_json(bytes) {
        Ok(reply) if reply.is_success() => Ok(()),
        Ok(reply) => Err(AdminError::Refused {
            url: shown,
            code: reply.code,
            msg: reply.msg.unwrap_or_default(),
        }),
        Err(err) => {
            let text = String::from_utf8_lossy(bytes);
            let quoted: String = text.chars().take(MAX_QUOTED_REPLY).collect();
            Err(AdminError::Unreachable(format!("{shown}: {err}: {quoted}")))
        }
    }
}

/// `url` without a user name or password in it, for messages.
pub(crate) fn without_credentials(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) if !parsed.username().is_empty() || parsed.password().is_some() => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.to_string()
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_in_an_admin_address_never_reach_a_message() {
        assert_eq!(
            without_credentials("http://ops:hunter2@admin:8080/api/callback"),
            "http://admin:8080/api/callback"
        );
        assert_eq!(
            without_credentials("http://admin:8080/xxl-job-admin/api/callback"),
            "http://admin:8080/xxl-job-admin/api/callback"
        );
    }

    #[tokio::test]
    async fn unreachable_and_refused_admins_are_told_apart() {
        // A closed port: unreachable.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let admin = AdminClient::new(
            vec![format!("http://127.0.0.1:{port}")],
            None,
            Duration::from_secs(3),
            None,
            chime_serve::tls::client_config(None).unwrap(),
        );
        let err = admin.post_first(paths::API_CALLBACK, "[]".into()).await.unwrap_err();
        assert!(matches!(err.0.as_slice(), [AdminError::Unreachable(_)]), "{err}");
        assert_eq!(err.refusals().count(), 0);
        let none = AdminClient::new(
            Vec::new(),
            None,
            Duration::from_secs(3),
            None,
            chime_serve::tls::client_config(None).unwrap(),
        );
        let err = none.post_first(paths::API_CALLBACK, "[]".into()).await.unwrap_err();
        assert_eq!(err.to_string(), "no admin address configured");
    }
}
