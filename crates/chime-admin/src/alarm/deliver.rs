//! One attempt to deliver an alarm: e-mail through SMTP (`lettre`, tokio + rustls), or a JSON
//! POST to a webhook or chat robot shaped by [`super::channels`]. Retries, with their pauses,
//! are the outbox's (`super::outbox`).
//!
//! `lettre` because it is the maintained SMTP client of the Rust ecosystem: async on tokio,
//! rustls for `smtps://` and STARTTLS, SMTP URLs with credentials, and a MIME builder that
//! encodes headers and bodies correctly (plain text + HTML alternatives).

use super::message::AlarmText;
use crate::api::alarm_channels::recipient_list;
pub use crate::api::alarm_channels::{check_mailbox, check_webhook_url};
use crate::model::{ChannelDraft, ChannelKind};
use crate::store::redact_url;
use lettre::message::{Mailbox, MultiPart};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use std::time::Duration;

/// Checks an SMTP URL (`smtps://user:pass@host:465`, `smtp://user:pass@host:587?tls=required`,
/// `smtp://host:25` for a relay without TLS). A password sent without TLS to another machine is
/// refused. Messages never contain the password.
pub fn check_smtp_url(url: &str) -> Result<(), String> {
    let shown = redact_url(url);
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("'{shown}' is not a URL: {e}"))?;
    let tls = parsed
        .query_pairs()
        .find(|(k, _)| k == "tls")
        .map(|(_, v)| v.into_owned());
    match parsed.scheme() {
        "smtps" => {}
        "smtp" => {
            let host = parsed.host_str().unwrap_or("");
            let loopback = host == "localhost"
                || host
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback());
            if parsed.password().is_some() && tls.as_deref() != Some("required") && !loopback {
                return Err(format!(
                    "'{shown}' would send the password unencrypted: use smtps://…:465 or add ?tls=required (STARTTLS)"
                ));
            }
        }
        other => return Err(format!("'{shown}': scheme '{other}' is not smtp or smtps")),
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!("'{shown}' names no host"));
    }
    AsyncSmtpTransport::<Tokio1Executor>::from_url(url).map_err(|e| format!("'{shown}': {e}"))?;
    Ok(())
}

/// Why one attempt failed, and whether trying again can help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    /// What happened, without the URL or a secret.
    pub message: String,
    /// Nothing will change by trying again (no SMTP server configured, nobody to mail).
    pub permanent: bool,
}

impl Failure {
    fn retry(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            permanent: false,
        }
    }

    fn permanent(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            permanent: true,
        }
    }
}

/// Where one delivery goes.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// The job's e-mail contacts (`alarm_contacts`).
    Contacts,
    /// The admin's `--alarm-webhook`.
    AdminWebhook,
    /// A named channel, secrets included.
    Channel(ChannelDraft),
}

/// Sends alarms: the SMTP transport, the sender's address, the admin's webhook and an HTTP
/// client, each call bounded by the alarm timeout.
pub(crate) struct Sender {
    smtp: Option<AsyncSmtpTransport<Tokio1Executor>>,
    from: Mailbox,
    webhook: Option<reqwest::Url>,
    http: reqwest::Client,
    timeout: Duration,
}

/// Where alarms go, as the settings name it (`--smtp-url`, `--alarm-from`, `--alarm-webhook`),
/// and how long one call may take (`--alarm-timeout`).
pub(crate) struct Channels<'a> {
    pub smtp_url: Option<&'a str>,
    pub from: &'a str,
    pub webhook: Option<&'a str>,
    pub timeout: Duration,
}

impl Sender {
    pub(crate) fn new(channels: Channels<'_>) -> Result<Sender, String> {
        let smtp = match channels.smtp_url {
            None => None,
            Some(url) => {
                check_smtp_url(url)?;
                let t = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
                    .map_err(|e| format!("smtp_url '{}': {e}", redact_url(url)))?
                    .timeout(Some(channels.timeout))
                    .build();
                Some(t)
            }
        };
        let from = channels
            .from
            .parse::<Mailbox>()
            .map_err(|e| format!("alarm_from '{}': {e}", channels.from))?;
        let webhook = match channels.webhook {
            None => None,
            Some(u) => Some(reqwest::Url::parse(u).map_err(|e| format!("alarm_webhook: {e}"))?),
        };
        let http = reqwest::Client::builder()
            .timeout(channels.timeout)
            // A receiver's redirect would carry the signed request elsewhere.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("HTTP client: {e}"))?;
        Ok(Sender {
            smtp,
            from,
            webhook,
            http,
            timeout: channels.timeout,
        })
    }

    /// Whether the admin has a webhook of its own (`--alarm-webhook`).
    pub(crate) fn has_admin_webhook(&self) -> bool {
        self.webhook.is_some()
    }

    /// One attempt to deliver `alarm` to `target`, bounded by the alarm timeout.
    pub(crate) async fn send_once(&self, target: &Target, alarm: &dyn AlarmText) -> Result<(), Failure> {
        let attempt = async {
            match target {
                Target::Contacts => {
                    let to = contacts(alarm);
                    self.email(alarm, &to, "contact(s)").await
                }
                Target::AdminWebhook => match &self.webhook {
                    Some(url) => self.post(ChannelKind::Webhook, url.as_str(), "", "", alarm).await,
                    None => Err(Failure::permanent(
                        "the admin has no alarm webhook (alarm_webhook) any more",
                    )),
                },
                Target::Channel(c) if c.kind == ChannelKind::Email => {
                    let to: Vec<Mailbox> = recipient_list(&c.recipients).filter_map(|a| a.parse().ok()).collect();
                    self.email(alarm, &to, "recipient(s)").await
                }
                Target::Channel(c) => self.post(c.kind, &c.url, &c.secret, &c.template, alarm).await,
            }
        };
        // The HTTP client and the SMTP transport have their own timeouts; this bounds the whole
        // attempt (DNS, connection, TLS, answer) all the same.
        match tokio::time::timeout(self.timeout + Duration::from_secs(1), attempt).await {
            Ok(done) => done,
            Err(_) => Err(Failure::retry(format!("timed out after {:?}", self.timeout))),
        }
    }

    async fn post(
        &self,
        kind: ChannelKind,
        url: &str,
        secret: &str,
        template: &str,
        alarm: &dyn AlarmText,
    ) -> Result<(), Failure> {
        let request = super::channels::request(kind, url, secret, template, alarm, crate::model::now_ms())
            .map_err(Failure::permanent)?;
        let mut call = self
            .http
            .post(&request.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(request.body);
        for (name, value) in request.headers {
            call = call.header(name, value);
        }
        let answer = call.send().await.map_err(|e| Failure::retry(describe(e)))?;
        let status = answer.status().as_u16();
        let body = answer.text().await.map_err(|e| Failure::retry(describe(e)))?;
        super::channels::accepted(kind, status, &body).map_err(Failure::retry)
    }

    /// Mails `alarm` to `to`, called `whom` in a failure (`contact(s)`, `recipient(s)`).
    async fn email(&self, alarm: &dyn AlarmText, to: &[Mailbox], whom: &str) -> Result<(), Failure> {
        if to.is_empty() {
            return Err(Failure::permanent("no e-mail address to send to"));
        }
        let Some(smtp) = &self.smtp else {
            // Contacts to tell but no way to mail them: a failed delivery, said on the run,
            // rather than an alarm silently recorded as not needed.
            return Err(Failure::permanent(format!(
                "not sent to {} {whom}: no SMTP server is configured (smtp_url)",
                to.len()
            )));
        };
        let mut builder = Message::builder().from(self.from.clone()).subject(alarm.subject());
        for m in to {
            builder = builder.to(m.clone());
        }
        let message = builder
            .multipart(MultiPart::alternative_plain_html(alarm.text(), alarm.html()))
            .map_err(|e| Failure::permanent(e.to_string()))?;
        smtp.send(message)
            .await
            .map(|_| ())
            .map_err(|e| Failure::retry(e.to_string()))
    }
}

/// A failed call in words, without its URL (chat webhook URLs carry their key).
fn describe(e: reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".to_owned()
    } else if e.is_connect() {
        "could not connect".to_owned()
    } else {
        e.without_url().to_string()
    }
}

/// The job's alarm contacts that are e-mail addresses (XXL-JOB: comma-separated).
pub(crate) fn contacts(alarm: &dyn AlarmText) -> Vec<Mailbox> {
    recipient_list(alarm.contacts())
        .filter_map(|s| match s.parse::<Mailbox>() {
            Ok(m) => Some(m),
            Err(_) => {
                tracing::warn!(contact = s, "alarm contact is not an e-mail address; skipped");
                None
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smtp_urls() {
        assert!(check_smtp_url("smtps://u:secret@mail.example.com:465").is_ok());
        assert!(check_smtp_url("smtp://u:secret@mail.example.com:587?tls=required").is_ok());
        assert!(check_smtp_url("smtp://127.0.0.1:2525").is_ok());
        let e = check_smtp_url("smtp://u:secret@mail.example.com:587").unwrap_err();
        assert!(e.contains("unencrypted") && !e.contains("secret"), "{e}");
        let e = check_smtp_url("http://u:secret@x").unwrap_err();
        assert!(!e.contains("secret"), "{e}");
        assert!(check_webhook_url("https://chat.example.com/hooks/abc").is_ok());
        assert!(check_webhook_url("ftp://x").is_err());
        assert!(check_mailbox("Chime <chime@example.com>").is_ok());
        assert!(check_mailbox("not an address").is_err());
    }
}
