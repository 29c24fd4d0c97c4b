//! What each kind of channel is sent: the body each receiver documents, its signature, and
//! how its answer says whether it took the message.
//!
//! - DingTalk custom robot: `msgtype: markdown`; with a secret, `timestamp` (ms) and `sign`
//!   in the query, sign = URL-encoded Base64 of HMAC-SHA256 keyed by the secret over
//!   `timestamp + "\n" + secret`. It answers HTTP 200 with `errcode` 0, or another `errcode`.
//! - Feishu/Lark custom bot: an interactive card; with a secret, `timestamp` (seconds, a
//!   string) and `sign` in the body, sign = Base64 of HMAC-SHA256 keyed by
//!   `timestamp + "\n" + secret` over nothing. It answers `code` 0 (older: `StatusCode` 0).
//! - WeCom group robot: `msgtype: markdown` (at most 4,096 bytes). Answers `errcode` 0.
//! - Slack incoming webhook: `text`, and the same as a `mrkdwn` section. Answers 2xx.
//! - Microsoft Teams workflow webhook: a message with one Adaptive Card attachment. Answers 2xx
//!   (202).
//! - Chime's generic webhook: the template's JSON (or the alarm's JSON); with a secret,
//!   `X-Chime-Timestamp` (ms) and `X-Chime-Signature: sha256=` + hex HMAC-SHA256 keyed by the
//!   secret over `timestamp + "." + body`, so a receiver can check both origin and freshness.

use super::message::AlarmText;
use crate::model::ChannelKind;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

/// WeCom refuses Markdown longer than this many bytes.
const WECOM_MARKDOWN_BYTES: usize = 4096;

/// A request ready to send: where, which extra headers, and the JSON body's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The URL, with any query parameters the signature adds. Holds the webhook's key.
    pub url: String,
    /// Headers besides `Content-Type: application/json`.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: Vec<u8>,
}

fn hmac_sha256(key: &[u8], message: &[u8]) -> Vec<u8> {
    // HMAC takes a key of any length; `new_from_slice` only fails for fixed-size-key MACs.
    let mut mac =
        <Hmac<Sha256> as Mac>::new_from_slice(key).unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
    mac.update(message);
    mac.finalize().into_bytes().to_vec()
}

fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// DingTalk's `sign` for `timestamp_ms` (before URL-encoding).
pub fn dingtalk_sign(secret: &str, timestamp_ms: i64) -> String {
    base64(&hmac_sha256(
        secret.as_bytes(),
        format!("{timestamp_ms}\n{secret}").as_bytes(),
    ))
}

/// Feishu's `sign` for `timestamp_s`.
pub fn feishu_sign(secret: &str, timestamp_s: i64) -> String {
    base64(&hmac_sha256(format!("{timestamp_s}\n{secret}").as_bytes(), b""))
}

/// The generic webhook's `X-Chime-Signature` value for `timestamp_ms` and `body`.
pub fn webhook_signature(secret: &str, timestamp_ms: i64, body: &[u8]) -> String {
    let mut message = format!("{timestamp_ms}.").into_bytes();
    message.extend_from_slice(body);
    format!("sha256={}", hex::encode(hmac_sha256(secret.as_bytes(), &message)))
}

/// The request that delivers `alarm` to a channel of `kind` at `url`, signed with `secret`
/// (empty: unsigned), its body from `template` for the generic webhook; `now_ms` stamps the
/// signature.
pub fn request(
    kind: ChannelKind,
    url: &str,
    secret: &str,
    template: &str,
    alarm: &dyn AlarmText,
    now_ms: i64,
) -> Result<Request, String> {
    let mut url = reqwest::Url::parse(url).map_err(|e| format!("the channel's URL is not a URL: {e}"))?;
    let mut headers = Vec::new();
    let body = match kind {
        ChannelKind::Dingtalk => {
            if !secret.is_empty() {
                url.query_pairs_mut()
                    .append_pair("timestamp", &now_ms.to_string())
                    .append_pair("sign", &dingtalk_sign(secret, now_ms));
            }
            json!({ "msgtype": "markdown", "markdown": { "title": alarm.subject(), "text": alarm.markdown() } })
        }
        ChannelKind::Feishu => feishu_body(alarm, secret, now_ms / 1000),
        ChannelKind::Wecom => {
            json!({ "msgtype": "markdown", "markdown": { "content": within_bytes(&alarm.markdown(), WECOM_MARKDOWN_BYTES) } })
        }
        ChannelKind::Slack => json!({
            "text": alarm.text(),
            "blocks": [{ "type": "section", "text": { "type": "mrkdwn", "text": slack_text(alarm) } }],
        }),
        ChannelKind::Teams => teams_body(alarm),
        ChannelKind::Webhook => {
            let body = if template.is_empty() {
                alarm.json()
            } else {
                render_template(template, alarm)?
            };
            let bytes = serde_json::to_vec(&body).map_err(|e| e.to_string())?;
            if !secret.is_empty() {
                headers.push(("X-Chime-Timestamp", now_ms.to_string()));
                headers.push(("X-Chime-Signature", webhook_signature(secret, now_ms, &bytes)));
            }
            return Ok(Request {
                url: url.into(),
                headers,
                body: bytes,
            });
        }
        ChannelKind::Email => return Err("an e-mail channel is not sent over HTTP".to_owned()),
    };
    Ok(Request {
        url: url.into(),
        headers,
        body: serde_json::to_vec(&body).map_err(|e| e.to_string())?,
    })
}

fn feishu_body(alarm: &dyn AlarmText, secret: &str, timestamp_s: i64) -> Value {
    let mut body = json!({
        "msg_type": "interactive",
        "card": {
            "header": { "template": "red", "title": { "tag": "plain_text", "content": alarm.subject() } },
            "elements": [{ "tag": "div", "text": { "tag": "lark_md", "content": alarm.markdown() } }],
        },
    });
    if !secret.is_empty() {
        body["timestamp"] = Value::String(timestamp_s.to_string());
        body["sign"] = Value::String(feishu_sign(secret, timestamp_s));
    }
    body
}

fn teams_body(alarm: &dyn AlarmText) -> Value {
    let facts: Vec<Value> = alarm
        .facts()
        .into_iter()
        .map(|(label, value)| json!({ "title": label, "value": value }))
        .collect();
    let title = alarm.link_text();
    let actions: Vec<Value> = alarm
        .link()
        .iter()
        .map(|link| json!({ "type": "Action.OpenUrl", "title": title, "url": link }))
        .collect();
    json!({
        "type": "message",
        "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive",
            "contentUrl": null,
            "content": {
                "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                "type": "AdaptiveCard",
                "version": "1.4",
                "body": [
                    { "type": "TextBlock", "text": alarm.subject(), "weight": "Bolder", "size": "Medium", "color": "Attention", "wrap": true },
                    { "type": "FactSet", "facts": facts },
                ],
                "actions": actions,
            },
        }],
    })
}

/// Slack's `mrkdwn`: `*bold*` labels and `<url|text>` links; `&`, `<` and `>` escaped as Slack
/// asks, so a handler message cannot forge a link or a mention.
fn slack_text(alarm: &dyn AlarmText) -> String {
    let escape = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let mut out = format!("*{}*\n", escape(&alarm.subject()));
    for (label, value) in alarm.facts() {
        out.push_str(&format!("*{label}:* {}\n", escape(&value)));
    }
    if let Some(link) = alarm.link() {
        out.push_str(&format!("<{link}|{}>\n", escape(&alarm.link_text())));
    }
    out
}

/// `text` cut to at most `max` bytes on a character boundary.
fn within_bytes(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// `template` with every `${name}` in its strings replaced by the alarm's value (JSON-safe:
/// values are put into strings, never into the document's structure).
fn render_template(template: &str, alarm: &dyn AlarmText) -> Result<Value, String> {
    let mut value: Value =
        serde_json::from_str(template).map_err(|e| format!("the channel's template is not JSON: {e}"))?;
    let vars = alarm.variables();
    substitute(&mut value, &vars);
    Ok(value)
}

fn substitute(value: &mut Value, vars: &[(&'static str, String)]) {
    match value {
        Value::String(s) => *s = fill(s, vars),
        Value::Array(items) => items.iter_mut().for_each(|v| substitute(v, vars)),
        Value::Object(map) => map.values_mut().for_each(|v| substitute(v, vars)),
        _ => {}
    }
}

fn fill(s: &str, vars: &[(&'static str, String)]) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find("${") {
        if rest[..at].ends_with('$') {
            // `$${` is a literal `${`.
            out.push_str(&rest[..at - 1]);
            out.push_str("${");
            rest = &rest[at + 2..];
            continue;
        }
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[at..]);
            return out;
        };
        let name = &after[..end];
        match vars.iter().find(|(n, _)| *n == name) {
            Some((_, v)) => out.push_str(v),
            None => out.push_str(&rest[at..at + 3 + end]),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// Whether the receiver took the message, from its status and body: the chat robots answer
/// HTTP 200 with an error code in the body when they refuse (a wrong signature, a bad key).
pub fn accepted(kind: ChannelKind, status: u16, body: &str) -> Result<(), String> {
    if !(200..300).contains(&status) {
        let detail: String = body.chars().filter(|c| !c.is_control()).take(200).collect();
        return Err(if detail.is_empty() {
            format!("answered HTTP {status}")
        } else {
            format!("answered HTTP {status}: {detail}")
        });
    }
    let code_fields: &[&str] = match kind {
        ChannelKind::Dingtalk | ChannelKind::Wecom => &["errcode"],
        ChannelKind::Feishu => &["code", "StatusCode"],
        _ => return Ok(()),
    };
    let answer: Value =
        serde_json::from_str(body).map_err(|_| "answered with something that is not JSON".to_owned())?;
    let code = code_fields.iter().find_map(|f| answer.get(*f).and_then(Value::as_i64));
    match code {
        Some(0) => Ok(()),
        Some(code) => {
            let msg = ["errmsg", "msg", "StatusMessage"]
                .iter()
                .find_map(|f| answer.get(*f).and_then(Value::as_str))
                .unwrap_or("");
            let msg: String = msg.chars().filter(|c| !c.is_control()).take(200).collect();
            Err(format!("refused: code {code} {msg}").trim_end().to_owned())
        }
        None => Err("answered without a result code".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::message::Alarm;
    use super::*;

    #[test]
    fn dingtalk_sign_matches_the_documented_example() {
        // Computed independently: printf '1700000000000\nSECabc' | openssl dgst -sha256 -hmac SECabc -binary | base64
        assert_eq!(
            dingtalk_sign("SECabc", 1_700_000_000_000),
            "jcUpW0QmtKduN03n4JqQ0PBosVjqnM8gU7fIIvsDmCM="
        );
    }

    #[test]
    fn feishu_sign_is_keyed_by_the_string_to_sign() {
        // printf '' | openssl dgst -sha256 -hmac "$(printf '1700000000\nsecret')" -binary | base64
        assert_eq!(
            feishu_sign("secret", 1_700_000_000),
            "fiWS2+gh28DOydAv7hzONH/mDn9+b1Y4Y5ivXWXy8vA="
        );
    }

    #[test]
    fn templates_fill_strings_only() {
        let alarm = Alarm::sample(Some("https://chime.example.com"));
        let out = render_template(r#"{"t":"job ${job_id} $${x} ${nope}","n":[1,"${run_id}"]}"#, &alarm).unwrap();
        assert_eq!(out["t"], "job 0 ${x} ${nope}");
        assert_eq!(out["n"][1], "0");
        assert!(crate::api::alarm_channels::check_template(r#"{"a":"${job_id}"}"#).is_ok());
        assert!(crate::api::alarm_channels::check_template(r#"{"a":"${nope}"}"#)
            .unwrap_err()
            .contains("nope"));
        assert!(crate::api::alarm_channels::check_template(r#"{"a":"$${nope}"}"#).is_ok());
    }

    #[test]
    fn robots_answering_200_with_an_error_code_are_refusals() {
        assert!(accepted(ChannelKind::Dingtalk, 200, r#"{"errcode":0,"errmsg":"ok"}"#).is_ok());
        let e = accepted(
            ChannelKind::Dingtalk,
            200,
            r#"{"errcode":310000,"errmsg":"sign not match"}"#,
        )
        .unwrap_err();
        assert!(e.contains("310000"), "{e}");
        assert!(accepted(ChannelKind::Feishu, 200, r#"{"StatusCode":0}"#).is_ok());
        assert!(accepted(ChannelKind::Feishu, 200, r#"{"code":19021,"msg":"sign match fail"}"#).is_err());
        assert!(accepted(ChannelKind::Slack, 200, "ok").is_ok());
        assert!(accepted(ChannelKind::Teams, 500, "").unwrap_err().contains("500"));
        assert_eq!(within_bytes("ééé", 4), "…");
    }
}
