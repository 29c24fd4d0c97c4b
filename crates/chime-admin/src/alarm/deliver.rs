//! Delivery of an alarm: e-mail through SMTP (`lettre`, tokio + rustls) and a JSON POST to a
//! webhook, each tried a few times with a growing pause.
//!
//! `lettre` because it is the maintained SMTP client of the Rust ecosystem: async on tokio,
//! rustls for `smtps://` and STARTTLS, SMTP URLs with credentials, and a MIME builder that
//! encodes headers and bodies correctly (plain text + HTML alternatives).

use super::message::Alarm;
use crate::store::redact_url;
use lettre::message::{Mailbox, MultiPart};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use std::time::Duration;

/// Delivery attempts per channel before the alarm is recorded as failed.
const ATTEMPTS: u32 = 4;
/// Pause before the second attempt; doubled for each further one.
const FIRST_PAUSE: Duration = Duration::from_millis(500);
/// Time limit of one SMTP conversation or webhook call.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

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

/// Checks an e-mail address such as `chime@example.com` or `Chime <chime@example.com>`.
pub fn check_mailbox(address: &str) -> Result<(), String> {
    address
        .parse::<Mailbox>()
        .map(|_| ())
        .map_err(|e| format!("'{address}' is not an e-mail address: {e}"))
}

/// Checks a webhook URL: `http://` or `https://` with a host.
pub fn check_webhook_url(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none_or(str::is_empty) {
        return Err("must be an http:// or https:// URL with a host".to_owned());
    }
    Ok(())
}

/// How the delivery of one alarm went.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Outcome {
    /// Channels that had something to send (e-mail with recipients, webhook).
    pub attempted: u32,
    /// Of those, channels where every attempt failed (or that cannot send: e-mail without an
    /// SMTP server).
    pub failed: u32,
    /// Why, one line per failed channel, for the run's `alarm_msg`. Errors of the SMTP client
    /// and of reqwest (`without_url`) name neither the URL nor the password; `alarm::run`
    /// still removes both before storing.
    pub problems: Vec<String>,
}

/// The configured channels.
pub(super) struct Sender {
    smtp: Option<AsyncSmtpTransport<Tokio1Executor>>,
    from: Mailbox,
    webhook: Option<reqwest::Url>,
    http: reqwest::Client,
}

/// Where alarms go, as the settings name it (`--smtp-url`, `--alarm-from`, `--alarm-webhook`).
pub(super) struct Channels<'a> {
    pub smtp_url: Option<&'a str>,
    pub from: &'a str,
    pub webhook: Option<&'a str>,
}

impl Sender {
    pub(super) fn new(channels: Channels<'_>) -> Result<Sender, String> {
        let smtp = match channels.smtp_url {
            None => None,
            Some(url) => {
                check_smtp_url(url)?;
                let t = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
                    .map_err(|e| format!("smtp_url '{}': {e}", redact_url(url)))?
                    .timeout(Some(CALL_TIMEOUT))
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
            .timeout(CALL_TIMEOUT)
            .build()
            .map_err(|e| format!("HTTP client: {e}"))?;
        Ok(Sender {
            smtp,
            from,
            webhook,
            http,
        })
    }

    /// Sends `alarm` on every channel that applies, with retries.
    pub(super) async fn send(&self, alarm: &Alarm) -> Outcome {
        let mut outcome = Outcome::default();
        let run_id = alarm.run.id;
        let recipients = self.recipients(alarm);
        match &self.smtp {
            _ if recipients.is_empty() => {}
            // Contacts to tell but no way to mail them: a failed delivery, said in the log and
            // on the run, rather than an alarm silently recorded as not needed.
            None => {
                outcome.attempted += 1;
                outcome.failed += 1;
                tracing::warn!(
                    run_id,
                    job_id = alarm.run.job_id,
                    contacts = recipients.len(),
                    "alarm e-mail not sent: no SMTP server is configured (smtp_url)"
                );
                outcome.problems.push(format!(
                    "e-mail to {} contact(s) not sent: no SMTP server is configured (smtp_url)",
                    recipients.len()
                ));
            }
            Some(smtp) => {
                outcome.attempted += 1;
                match self.email(alarm, &recipients) {
                    Ok(message) => {
                        let sent = retry("e-mail", run_id, || {
                            let m = message.clone();
                            async move { smtp.send(m).await.map(|_| ()).map_err(|e| e.to_string()) }
                        })
                        .await;
                        if let Err(e) = sent {
                            outcome.failed += 1;
                            outcome.problems.push(format!("e-mail: {e}"));
                        }
                    }
                    Err(e) => {
                        tracing::warn!(run_id, error = %e, "building the alarm e-mail failed");
                        outcome.failed += 1;
                        outcome.problems.push(format!("e-mail: {e}"));
                    }
                }
            }
        }
        if let Some(url) = &self.webhook {
            outcome.attempted += 1;
            let body = alarm.json();
            let sent = retry("webhook", run_id, || {
                let req = self.http.post(url.clone()).json(&body);
                async move {
                    match req.send().await {
                        Ok(r) if r.status().is_success() => Ok(()),
                        Ok(r) => Err(format!("answered HTTP {}", r.status().as_u16())),
                        // Without the URL: chat webhook URLs carry their secret in the path.
                        Err(e) => Err(e.without_url().to_string()),
                    }
                }
            })
            .await;
            if let Err(e) = sent {
                outcome.failed += 1;
                outcome.problems.push(format!("webhook: {e}"));
            }
        }
        outcome
    }

    /// The job's alarm contacts that are e-mail addresses (XXL-JOB: comma-separated).
    fn recipients(&self, alarm: &Alarm) -> Vec<Mailbox> {
        let Some(job) = &alarm.job else { return Vec::new() };
        job.info
            .alarm_contacts
            .split([',', ';'])
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .filter_map(|s| match s.parse::<Mailbox>() {
                Ok(m) => Some(m),
                Err(_) => {
                    tracing::warn!(
                        job_id = job.id,
                        contact = s,
                        "alarm contact is not an e-mail address; skipped"
                    );
                    None
                }
            })
            .collect()
    }

    fn email(&self, alarm: &Alarm, to: &[Mailbox]) -> Result<Message, String> {
        let mut builder = Message::builder().from(self.from.clone()).subject(alarm.subject());
        for m in to {
            builder = builder.to(m.clone());
        }
        builder
            .multipart(MultiPart::alternative_plain_html(alarm.text(), alarm.html()))
            .map_err(|e| e.to_string())
    }
}

/// Calls `attempt` up to [`ATTEMPTS`] times, pausing longer after each failure. The last
/// error when none succeeded.
async fn retry<F, Fut>(channel: &str, run_id: i64, mut attempt: F) -> Result<(), String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let mut pause = FIRST_PAUSE;
    for n in 1..=ATTEMPTS {
        match attempt().await {
            Ok(()) => return Ok(()),
            Err(e) if n < ATTEMPTS => {
                tracing::warn!(run_id, channel, attempt = n, error = %e, "alarm delivery failed; trying again");
                tokio::time::sleep(pause).await;
                pause *= 2;
            }
            Err(e) => {
                tracing::error!(run_id, channel, attempts = ATTEMPTS, error = %e, "alarm delivery failed; giving up");
                return Err(format!("{e} (after {ATTEMPTS} attempts)"));
            }
        }
    }
    Err("not attempted".to_owned())
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
