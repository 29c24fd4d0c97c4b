//! Alarm channels on the wire: a channel as the API answers it ([`AlarmChannel`], its URL
//! shortened and its secret only said to be set), the body that creates or changes one
//! ([`AlarmChannelSpec`]), and one delivery of a run's alarm ([`AlarmDelivery`]).
//!
//! Checking a body ([`AlarmChannelSpec::validate`]) gives the [`ChannelDraft`] the store
//! writes: what each kind needs (a URL or recipients), what it refuses (a secret where the
//! receiver verifies none, a template outside the generic webhook), each value bounded.

use super::{is_plain_name, Invalid};
use lettre::message::Mailbox;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Longest channel name.
const NAME_CHARS: usize = 64;
/// Longest URL (the column's size).
const URL_CHARS: usize = 2048;
/// Longest secret.
const SECRET_CHARS: usize = 512;
/// Longest recipient list.
const RECIPIENTS_CHARS: usize = 1024;
/// Longest webhook template, in bytes.
const TEMPLATE_BYTES: usize = 16 * 1024;

/// Where an alarm goes: how the message is shaped and signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChannelKind {
    /// E-mail to the channel's recipients through the admin's SMTP server (`--smtp-url`).
    Email,
    /// A JSON POST to any URL, from a template, optionally signed with HMAC-SHA256.
    Webhook,
    /// A Slack incoming webhook.
    Slack,
    /// A Microsoft Teams workflow webhook (an Adaptive Card).
    Teams,
    /// A DingTalk custom robot, optionally with its signing secret (加签).
    Dingtalk,
    /// A Feishu/Lark custom bot, optionally with its signing secret (签名校验).
    Feishu,
    /// A WeCom (企业微信) group robot.
    Wecom,
}

impl std::str::FromStr for ChannelKind {
    type Err = String;

    /// From the wire and database name.
    fn from_str(name: &str) -> Result<ChannelKind, String> {
        ChannelKind::parse(name).ok_or_else(|| format!("unknown alarm channel kind '{name}'"))
    }
}

impl ChannelKind {
    /// Every kind, in the order the documentation lists them.
    pub const ALL: &'static [ChannelKind] = &[
        ChannelKind::Email,
        ChannelKind::Webhook,
        ChannelKind::Slack,
        ChannelKind::Teams,
        ChannelKind::Dingtalk,
        ChannelKind::Feishu,
        ChannelKind::Wecom,
    ];

    /// The wire and database name.
    pub fn as_str(self) -> &'static str {
        match self {
            ChannelKind::Email => "email",
            ChannelKind::Webhook => "webhook",
            ChannelKind::Slack => "slack",
            ChannelKind::Teams => "teams",
            ChannelKind::Dingtalk => "dingtalk",
            ChannelKind::Feishu => "feishu",
            ChannelKind::Wecom => "wecom",
        }
    }

    /// From the database name.
    pub fn parse(name: &str) -> Option<ChannelKind> {
        ChannelKind::ALL.iter().copied().find(|k| k.as_str() == name)
    }

    /// Whether the receiver verifies a signature made with a secret.
    pub fn takes_secret(self) -> bool {
        matches!(self, ChannelKind::Webhook | ChannelKind::Dingtalk | ChannelKind::Feishu)
    }
}

/// A named alarm channel. Its secret is never shown, and its URL only up to the host: chat
/// webhooks carry their key in the path or query.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[schemars(transform = super::schema::exact)]
pub struct AlarmChannel {
    /// Channel id.
    pub id: i64,
    /// Its name, which jobs and groups use in `alarm_channels`.
    pub name: String,
    /// What it sends to.
    pub kind: ChannelKind,
    /// The receiver's URL up to its host (`https://oapi.dingtalk.com/…`); empty for e-mail.
    pub url: String,
    /// Whether a signing secret is set.
    pub secret_set: bool,
    /// E-mail recipients, comma-separated (e-mail channels).
    pub recipients: String,
    /// The generic webhook's body template (empty: Chime's alarm JSON).
    pub template: String,
    /// Creation time, epoch ms.
    pub created_at: i64,
    /// Last change, epoch ms.
    pub updated_at: i64,
}

/// Input to create or change a channel. On change, `url` and `secret` left out (or `null`)
/// keep their stored values, so a channel exported without its secrets applies unchanged;
/// `""` removes a secret.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct AlarmChannelSpec {
    /// 1–64 letters, digits, `.`, `_` or `-`.
    #[schemars(regex(pattern = r"^[A-Za-z0-9._-]{1,64}$"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What it sends to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<ChannelKind>,
    /// The receiver's webhook URL (all kinds but e-mail).
    #[schemars(length(max = 2048))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Signing secret (webhook, DingTalk, Feishu).
    #[schemars(length(max = 512))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// E-mail recipients, comma-separated (e-mail only).
    #[schemars(length(max = 1024))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recipients: Option<String>,
    /// Generic webhook only: the JSON body, whose strings may hold `${var}` placeholders.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
}

/// A channel as the store writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelDraft {
    /// Name.
    pub name: String,
    /// Kind.
    pub kind: ChannelKind,
    /// Whole URL (a secret in chat webhooks).
    pub url: String,
    /// Signing secret, empty for none.
    pub secret: String,
    /// E-mail recipients.
    pub recipients: String,
    /// Webhook template.
    pub template: String,
}

impl AlarmChannelSpec {
    /// The channel this input makes of `base` (the stored channel on change), checked.
    pub fn validate(&self, base: Option<&ChannelDraft>) -> Result<ChannelDraft, Invalid> {
        let name = pick(&self.name, base.map(|b| &b.name)).ok_or_else(|| Invalid::new("name", "is required"))?;
        check_name(&name)?;
        let kind = self
            .kind
            .or(base.map(|b| b.kind))
            .ok_or_else(|| Invalid::new("kind", "is required"))?;
        // A kind change starts from nothing: another receiver's URL or secret does not carry over.
        let base = base.filter(|b| b.kind == kind);
        let url = pick(&self.url, base.map(|b| &b.url)).unwrap_or_default();
        let secret = pick(&self.secret, base.map(|b| &b.secret)).unwrap_or_default();
        let recipients = pick(&self.recipients, base.map(|b| &b.recipients)).unwrap_or_default();
        let template = pick(&self.template, base.map(|b| &b.template)).unwrap_or_default();
        let draft = ChannelDraft {
            name,
            kind,
            url: url.trim().to_owned(),
            secret,
            recipients: recipients.trim().to_owned(),
            template,
        };
        draft.check()?;
        Ok(draft)
    }
}

fn pick(given: &Option<String>, stored: Option<&String>) -> Option<String> {
    given.clone().or_else(|| stored.cloned())
}

/// Checks a channel name: 1–64 letters, digits, `.`, `_` or `-`.
pub fn check_name(name: &str) -> Result<(), Invalid> {
    if is_plain_name(name, NAME_CHARS) {
        Ok(())
    } else {
        Err(Invalid::new("name", "must be 1 to 64 letters, digits, '.', '_' or '-'"))
    }
}

impl ChannelDraft {
    fn check(&self) -> Result<(), Invalid> {
        if self.secret.chars().count() > SECRET_CHARS {
            return Err(Invalid::new(
                "secret",
                format!("must be at most {SECRET_CHARS} characters"),
            ));
        }
        if !self.secret.is_empty() && !self.kind.takes_secret() {
            return Err(Invalid::new(
                "secret",
                format!(
                    "a {} channel takes no secret (only webhook, dingtalk and feishu sign)",
                    self.kind.as_str()
                ),
            ));
        }
        if !self.template.is_empty() {
            if self.kind != ChannelKind::Webhook {
                return Err(Invalid::new("template", "only a webhook channel takes a template"));
            }
            if self.template.len() > TEMPLATE_BYTES {
                return Err(Invalid::new(
                    "template",
                    format!("must be at most {TEMPLATE_BYTES} bytes"),
                ));
            }
            check_template(&self.template).map_err(|e| Invalid::new("template", e))?;
        }
        if self.kind == ChannelKind::Email {
            if !self.url.is_empty() {
                return Err(Invalid::new("url", "an e-mail channel takes recipients, not a URL"));
            }
            if self.recipients.is_empty() {
                return Err(Invalid::new("recipients", "is required for an e-mail channel"));
            }
            if self.recipients.chars().count() > RECIPIENTS_CHARS {
                return Err(Invalid::new(
                    "recipients",
                    format!("must be at most {RECIPIENTS_CHARS} characters"),
                ));
            }
            for address in recipient_list(&self.recipients) {
                check_mailbox(address).map_err(|e| Invalid::new("recipients", e))?;
            }
            return Ok(());
        }
        if !self.recipients.is_empty() {
            return Err(Invalid::new("recipients", "only an e-mail channel takes recipients"));
        }
        if self.url.is_empty() {
            return Err(Invalid::new(
                "url",
                format!("is required for a {} channel", self.kind.as_str()),
            ));
        }
        if self.url.chars().count() > URL_CHARS {
            return Err(Invalid::new("url", format!("must be at most {URL_CHARS} characters")));
        }
        check_webhook_url(&self.url).map_err(|e| Invalid::new("url", e))
    }

    /// The answer for this channel: URL cut after its host, secret hidden.
    pub fn shown(&self, id: i64, created_at: i64, updated_at: i64) -> AlarmChannel {
        AlarmChannel {
            id,
            name: self.name.clone(),
            kind: self.kind,
            url: shown_url(&self.url),
            secret_set: !self.secret.is_empty(),
            recipients: self.recipients.clone(),
            template: self.template.clone(),
            created_at,
            updated_at,
        }
    }
}

/// A list of channel names as given (`a, b`), checked and written back as `a,b`; whether each
/// names a channel is the caller's check ([`crate::center::Admin`]'s operations).
pub fn channel_names(list: &str) -> Result<String, Invalid> {
    let mut names: Vec<&str> = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        check_name(name).map_err(|e| Invalid::new("alarm_channels", format!("'{name}': {}", e.message)))?;
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let joined = names.join(",");
    if joined.len() > 255 {
        return Err(Invalid::new("alarm_channels", "must be at most 255 characters"));
    }
    Ok(joined)
}

/// The names of a stored list of channel names.
pub fn names_of(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').map(str::trim).filter(|s| !s.is_empty())
}

/// The addresses of a comma- or semicolon-separated list.
pub fn recipient_list(list: &str) -> impl Iterator<Item = &str> {
    list.split([',', ';']).map(str::trim).filter(|s| !s.is_empty())
}

/// `url` up to its host and port, then `/…` when anything followed (the part that holds a
/// chat webhook's key); empty stays empty.
pub fn shown_url(url: &str) -> String {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return if url.is_empty() {
            String::new()
        } else {
            "(not a URL)".to_owned()
        };
    };
    let host = parsed.host_str().unwrap_or("");
    let port = parsed.port().map(|p| format!(":{p}")).unwrap_or_default();
    let rest = if parsed.path() == "/" && parsed.query().is_none() {
        ""
    } else {
        "/…"
    };
    format!("{}://{host}{port}{rest}", parsed.scheme())
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

/// The variables a template may use.
pub const TEMPLATE_VARIABLES: &[&str] = &[
    "job_id",
    "job",
    "group",
    "run_id",
    "handler",
    "param",
    "status",
    "result",
    "trigger_msg",
    "trigger_time",
    "scheduled_at",
    "executor",
    "log_tail",
    "link",
    "text",
    "event",
    "title",
];

/// Checks a webhook template: JSON whose `${…}` name known variables (`$${` writes a literal
/// `${`).
pub fn check_template(template: &str) -> Result<(), String> {
    let value: Value = serde_json::from_str(template).map_err(|e| format!("is not JSON: {e}"))?;
    let mut unknown = None;
    visit_strings(&value, &mut |s| {
        for name in placeholders(s) {
            if !TEMPLATE_VARIABLES.contains(&name) && unknown.is_none() {
                unknown = Some(name.to_owned());
            }
        }
    });
    match unknown {
        Some(name) => Err(format!(
            "'${{{name}}}' is not a variable; known: {}",
            TEMPLATE_VARIABLES.join(", ")
        )),
        None => Ok(()),
    }
}

fn visit_strings<'v>(value: &'v Value, f: &mut impl FnMut(&'v str)) {
    match value {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter().for_each(|v| visit_strings(v, f)),
        Value::Object(map) => map.values().for_each(|v| visit_strings(v, f)),
        _ => {}
    }
}

/// The names of the `${name}` placeholders of `s` (not those escaped as `$${`).
fn placeholders(s: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = s;
    while let Some(at) = rest.find("${") {
        if rest[..at].ends_with('$') {
            rest = &rest[at + 2..];
            continue;
        }
        let after = &rest[at + 2..];
        match after.find('}') {
            Some(end) => {
                names.push(&after[..end]);
                rest = &after[end + 1..];
            }
            None => break,
        }
    }
    names
}

/// The state of one delivery of an alarm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryState {
    /// Waiting for its first or next attempt.
    Pending,
    /// Accepted by the receiver.
    Sent,
    /// Every attempt failed.
    Failed,
}

impl DeliveryState {
    /// The database value.
    pub fn code(self) -> i64 {
        match self {
            DeliveryState::Pending => 0,
            DeliveryState::Sent => 1,
            DeliveryState::Failed => 2,
        }
    }

    /// From the database value (unknown values read as failed: nothing retries them).
    pub fn from_code(code: i64) -> DeliveryState {
        match code {
            0 => DeliveryState::Pending,
            1 => DeliveryState::Sent,
            _ => DeliveryState::Failed,
        }
    }
}

/// What an alarm tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AlarmEvent {
    /// The run failed for good.
    Failed,
    /// The run succeeded after the job's alarmed failure (`alarm_policy` `on_recovery`).
    Recovered,
    /// The run had not started, or started, later than the job allows (`late_after`).
    Late,
    /// The run was still running longer than the job expects (`longer_than`).
    Slow,
    /// A workflow instance ended failed (the workflow's `alarm_channels`); no run's alarm.
    #[serde(rename = "workflow_failed")]
    WorkflowFailed,
    /// A group with enabled jobs has had no live executor for the dead timeout.
    #[serde(rename = "no_executor")]
    NoExecutor,
    /// A group that had no live executor has one again.
    #[serde(rename = "executor_back")]
    ExecutorBack,
}

impl AlarmEvent {
    /// The database value.
    pub fn as_str(self) -> &'static str {
        match self {
            AlarmEvent::Failed => "failed",
            AlarmEvent::Recovered => "recovered",
            AlarmEvent::Late => "late",
            AlarmEvent::Slow => "slow",
            AlarmEvent::WorkflowFailed => "workflow_failed",
            AlarmEvent::NoExecutor => "no_executor",
            AlarmEvent::ExecutorBack => "executor_back",
        }
    }

    /// From the database value (anything else reads as a failure).
    pub fn parse(text: &str) -> AlarmEvent {
        match text {
            "recovered" => AlarmEvent::Recovered,
            "late" => AlarmEvent::Late,
            "slow" => AlarmEvent::Slow,
            "workflow_failed" => AlarmEvent::WorkflowFailed,
            "no_executor" => AlarmEvent::NoExecutor,
            "executor_back" => AlarmEvent::ExecutorBack,
            _ => AlarmEvent::Failed,
        }
    }
}

/// One delivery of a run's alarm to one channel.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[schemars(transform = super::schema::exact)]
pub struct AlarmDelivery {
    /// Delivery id.
    pub id: i64,
    /// The run whose alarm this is; 0 for an alarm no run raised (`/v1/alarm-events`).
    pub run_id: i64,
    /// The channel's name; `e-mail` for the job's e-mail contacts (`alarm_contacts`) and
    /// `webhook` for the admin's `--alarm-webhook`, which have no channel of their own.
    pub channel: String,
    /// The channel's kind.
    pub kind: ChannelKind,
    /// What it tells.
    pub event: AlarmEvent,
    /// Where it stands.
    pub state: DeliveryState,
    /// Attempts made so far.
    pub attempts: i64,
    /// Why the last attempt failed (empty when none did); never holds a URL or secret.
    pub error: String,
    /// When it was stored, epoch ms.
    pub created_at: i64,
    /// When the receiver accepted it, epoch ms; 0 until then.
    pub sent_at: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kind: ChannelKind, url: &str) -> AlarmChannelSpec {
        AlarmChannelSpec {
            name: Some("ops".into()),
            kind: Some(kind),
            url: Some(url.into()),
            ..AlarmChannelSpec::default()
        }
    }

    #[test]
    fn each_kind_takes_what_it_needs() {
        let ding = spec(
            ChannelKind::Dingtalk,
            "https://oapi.dingtalk.com/robot/send?access_token=abc",
        );
        let mail = AlarmChannelSpec {
            name: Some("mail".into()),
            kind: Some(ChannelKind::Email),
            recipients: Some("a@example.com, b@example.com".into()),
            ..AlarmChannelSpec::default()
        };
        let signed = AlarmChannelSpec {
            secret: Some("SEC1".into()),
            ..ding.clone()
        };
        for accepted in [&signed, &mail] {
            assert!(accepted.validate(None).is_ok(), "{accepted:?}");
        }
        let refused = [
            (
                AlarmChannelSpec {
                    secret: Some("x".into()),
                    ..spec(ChannelKind::Wecom, "https://qyapi.weixin.qq.com/x")
                },
                "secret",
            ),
            (
                AlarmChannelSpec {
                    url: Some("https://x".into()),
                    ..mail
                },
                "url",
            ),
            (spec(ChannelKind::Slack, "ftp://x"), "url"),
            (
                AlarmChannelSpec {
                    template: Some("{".into()),
                    ..spec(ChannelKind::Webhook, "http://x")
                },
                "template",
            ),
            (
                AlarmChannelSpec {
                    name: Some("a b".into()),
                    ..ding
                },
                "name",
            ),
        ];
        for (body, field) in refused {
            assert_eq!(body.validate(None).unwrap_err().field, field, "{body:?}");
        }
    }

    #[test]
    fn a_change_keeps_url_and_secret_left_out() {
        let stored = AlarmChannelSpec {
            secret: Some("SEC".into()),
            ..spec(ChannelKind::Feishu, "https://open.feishu.cn/hook/KEY")
        }
        .validate(None)
        .unwrap();
        let renamed = AlarmChannelSpec {
            name: Some("ops2".into()),
            ..AlarmChannelSpec::default()
        };
        let got = renamed.validate(Some(&stored)).unwrap();
        assert_eq!(
            (got.url.as_str(), got.secret.as_str(), got.name.as_str()),
            (stored.url.as_str(), "SEC", "ops2")
        );
        let shown = got.shown(1, 0, 0);
        assert_eq!(shown.url, "https://open.feishu.cn/…");
        assert!(shown.secret_set);
        assert!(!serde_json::to_string(&shown).unwrap().contains("KEY"));
    }
}
